"""`import quilt DIR --update`: a quilt series exported from the project, worked on with quilt
(`quilt refresh`, `quilt new`, `quilt delete`, the series file reordered), taken back.

quilt writes its own diffs (`Index:` lines, `a.orig/` prefixes, timestamps, `-p` function
context) and keeps whatever header the patch had. Taken back, each patch quilt changed keeps
its header (every field, the description) and gets its diff made again, as `refresh` makes it,
on its base in the new order: the diff quilt wrote is applied there without fuzz (quilt made it
on that very tree) and the result diffed by git, so `lint`'s byte-stability holds. Where the
series has patches for some profiles only, quilt's one stack may hold patches outside a patch's
base (a fix for every profile above a gfx942 fix): its change is then carried from quilt's tree
back onto its base as apply.chains carries a patch between profiles' series. Nothing is
written until every patch of the new series has been checked, each profile's series included
(a patch that no longer goes into one is refused, as the overlays would refuse it); a patch
quilt no longer lists is never dropped unless `--delete` says so, and then it is kept under
deleted/. The order, like a patch's change, is taken from the side that changed it since the
export (the record keeps DIR/series as written): a `move` in the series is never undone by a
DIR/series quilt left as it was (see _order_of_both).
"""
from __future__ import annotations

import re
import shlex
from functools import cache, partial
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Sequence

from patchforge.apply.chains import (apply_on_chains, carry_file, carry_files, carry_into,
                                     met_in_chain, patch_paths, profiles_note)
from patchforge.apply.gnupatch import for_gnu_patch, with_p1_names
from patchforge.apply.hunks import repeated_places
from patchforge.apply.series import (SeriesState, applies_to_profile, apply_series, counts_for,
                                     profile_bases_differ, profile_set)
from patchforge.errors import InputError, PatchforgeError, StoreError, UsageError
from patchforge.formats.patchfile import parse_patch_file
from patchforge.formats.series import parse_series
from patchforge.overlay import refuse_series_removals
from patchforge.fsutil import (RepoLock, atomic_delete, atomic_write,
                               put_back_on_failure, writing_project)
from patchforge.ops.exchange import (EXPORT_RECORD, _empty_at_the_pin, _from_stgit_export,
                                     _quilt_patch,
                                     _where_now,
                                     _record_bytes, read_export_record,
                                     _refuse_collisions, _refuse_taken,
                                     _refuse_unknown_profiles, _sha256, export_record_profile,
                                     kept_header, kept_header_digest, quilt_file_bytes,
                                     read_header_record, read_taken_record, renamed_since_export,
                                     series_holdings,
                                     taken_entry, taken_undone)
from patchforge.ops.series import (checked_new_patch_name, checked_patch_name, default_author,
                                   failing_patches, refuse_case_twin,
                                   refuse_name_of_another_series, today)
from patchforge.project import patch_file_name, read_no_link
from patchforge.stack import aside_name, series_changed
from patchforge.store.diff import FileChange, make_diff
from patchforge.worktree import close_worktree, editing, require_state, require_state_still

if TYPE_CHECKING:
    from patchforge.formats.patchfile import PatchFile
    from patchforge.project import Project
    from patchforge.store.gitstore import UpstreamStore

# What happened to each patch of the new series.
KEPT, CHANGED, ADDED = "kept", "changed", "added"


def quilt_series_path(directory: Path, upstream: str) -> Path:
    """The quilt series file of `directory`: DIR/series, DIR/patches/series (a source tree
    with quilt's default patches/), or DIR/<upstream>/series (an export of several upstreams,
    one directory each)."""
    for candidate in (directory / "series", directory / "patches" / "series",
                      directory / upstream / "series"):
        if candidate.is_file():
            return candidate
    raise UsageError(f"no quilt series file in {directory} (looked for series, patches/series "
                     f"and {upstream}/series)")


def update_from_quilt(project: Project, store: UpstreamStore, directory: Path, *,
                      upstream: str, delete: bool = False) -> dict:
    """Take the quilt series of `directory` back into `upstream`'s series (see the module's
    text). Returns what was done: {"changed": [...], "moved": [...], "added": [...],
    "deleted": [(name, kept path)], "kept_ours": [...], "kept_renamed": [(name, the exported
    name)], "renamed_and_changed": [those of kept_renamed changed too], "left_out": [...],
    "left_renamed":
    [(quilt's name, the exported name)], "where_now": {exported name: where that fix is now},
    "kept_newer":
    [(name, quilt file)], "reordered": bool, "left_ambiguous": {name: [RepeatedPlace]},
    "directory": the quilt directory}. "left_ambiguous": each patch quilt did not change whose
    lines moved (a patch before it changed, or the order) to a place nearness chose among
    several: left as it is, its diff not made again there.

    A quilt file an earlier run took back counts as taken only while the series holds what
    that run wrote, or a version changed since (kept: "kept_newer"); where the series went
    back to the patch that run replaced (the import undone in the stack), it is taken again.

    A run a kill cut short is finished by running it again: a patch it already wrote is
    found to be what taking quilt's back gives (not a change made in the series since the
    export), a new patch's file already there with those bytes is listed, and a patch it
    already unlisted, kept under deleted/, is removed."""
    project.config.upstream(upstream)
    # As `move` and `delete`: an open edit with changes not refreshed is never reset.
    allowed = require_state(project, "import quilt --update", [upstream], store=store)
    pin = project.lock.pin(upstream)
    series_path = quilt_series_path(Path(directory), upstream)
    folder = series_path.parent
    series_bytes = quilt_file_bytes(series_path)
    if series_bytes is None:  # gone since it was found: never read as a series listing nothing
        raise UsageError(f"{series_path}: gone while it was read; nothing was taken back")
    quilt = parse_series(series_bytes, str(series_path), quilt=True)
    # The export record, read once: what was checked is what every step below uses.
    document = read_export_record(folder)
    record = None if document is None else document["patches"]
    took = read_taken_record(document)
    recorded_order = _recorded_order(folder, document)
    # The record's files DIR/series listed: one an earlier export wrote and a later one no
    # longer listed (its fix deleted or renamed) stays recorded as written by patchforge
    # (export_quilt), but quilt never had it as the series' patch of that name, so a fix the
    # series has under that name now (renamed onto it) was not exported, nor deleted in quilt.
    exported_listed = record if record is None or recorded_order is None else \
        {name: hashes for name, hashes in record.items() if name in recorded_order}
    profile = export_record_profile(document)  # an export of one profile's series
    series = project.read_series(upstream)
    ours = series.names
    ours_bytes = {name: project.read_patch_bytes(upstream, name) for name in ours}

    entries: list[tuple[str, Path, int, bytes]] = []  # (file name, quilt file, line, bytes)
    strip_levels: dict[str, int] = {}  # `fix.patch -p0`: its diff's names are read at -p0
    for entry, line in quilt.as_written():
        source = folder / entry
        data = quilt_file_bytes(source, entry=entry, series=series_path, line=line)
        if data is None:
            raise InputError(f"{entry} is listed but missing; nothing was taken back",
                             path=str(series_path), line=line)
        file_name = patch_file_name(Path(entry).name.removesuffix(".patch").removesuffix(".diff"))
        try:
            # A name the series holds already is read as the series reads it (a stack made
            # before names Windows cannot write were refused goes round the trip as before);
            # a name quilt made is held to what a new patch's name must be.
            if file_name in ours:
                checked_patch_name(file_name)
            else:
                checked_new_patch_name(file_name)
                refuse_name_of_another_series(project, upstream, file_name)
        except UsageError as exc:
            raise InputError(f"{exc.message}; nothing was taken back", path=str(series_path),
                             line=line) from None
        _refuse_taken(file_name, {e[0] for e in entries}, str(series_path), line)
        entries.append((file_name, source, line, data))
        strip_levels[file_name] = quilt.strip_level(entry)

    empty = _empty_at_the_pin(store, pin.commit, entries, strip_levels, ours_bytes)
    taken: dict[str, PatchFile] = {}  # name -> the patch with quilt's diff, to be made again
    # name -> the fields of taken[name] quilt's file lacks (the series' header, or what a new
    # fix needs): recorded, so that a later change of quilt's header never drops them.
    filled: dict[str, list[str]] = {}
    quilts: dict[str, PatchFile] = {}  # name -> quilt's file of taken[name], parsed
    # A fix the rebase since the export wrote again, its change the same, that quilt changed:
    # name -> quilt's change judged onto the new pin and made there (_rebased_only).
    rebased: dict[str, bytes] = {}
    made_on: dict[str, str] = {}  # name -> the Base: of quilt's file (the pin at the export)
    how: dict[str, str] = {}
    # Changed in quilt and, it seems, in the series since the export: refused below unless
    # the series' patch is what taking quilt's back gives (a run a kill cut short wrote it).
    both: dict[str, tuple[Path, int]] = {}
    # Taken back before, then the import undone and the patch changed since without quilt's
    # change: refused alike, neither side's change may be lost.
    diverged: dict[str, tuple[Path, int]] = {}
    taken_again: list[str] = []  # taken back before, the import undone since: taken again
    unlisted: dict[str, bytes] = {}  # a new patch's file already there (the same, or refused)
    left_out: list[str] = []
    left_renamed: list[tuple[str, str]] = []  # (quilt's name, the name the export wrote)
    renamed: list[tuple[str, str, int]] = []  # (the series' name, quilt's, its line)
    changed_renamed: set[str] = set()  # quilt's names of those quilt changed too
    kept_newer: list[tuple[str, str]] = []
    # Quilt's file the series' patch of its name is, byte for byte, where the export wrote
    # another (the series' patch copied into DIR by hand, as a refusal's way on says): the
    # two sides agree on it, so the record takes it as the export's (_record_taken), and a
    # later `quilt refresh` of it is quilt's change alone, not a change on both sides.
    agreed: dict[str, bytes] = {}
    # Quilt's file that holds the series' patch as it is, written quilt's way (a diffstat
    # added): recorded beside what the export wrote (_record_taken).
    rewritten: dict[str, bytes] = {}
    # Not changed in quilt, changed in the series since (edit + refresh, a rebase): quilt's
    # tree holds the older version, on which quilt made the diffs of the patches above it.
    older_in_quilt: set[str] = set()
    quilt_listed = {e[0] for e in entries}
    # Exported names neither side lists now: a fix renamed in the series since the export.
    gone_from_both = [n for n in {**(record or {}), **took}
                      if n not in ours and n not in quilt_listed]
    all_recorded = [h for hashes in (record or {}).values() for h in hashes]
    all_into = {t["into"] for files in took.values() for t in files.values()}
    # A fix `rename` gave a new name since the export, its bytes still those the export wrote
    # under the old name (the name it had): it did not join the series after the export.
    renamed_in_series = {} if exported_listed is None else {
        n: was for n in ours if n not in exported_listed and n not in quilt_listed
        for was in [_renamed_from(project, upstream, n, ours_bytes[n], exported_listed, ours,
                                  took)] if was is not None}
    export_pin = cache(partial(_export_pin, entries, record, strip_levels, empty))
    for file_name, source, line, data in entries:
        recorded = (record or {}).get(file_name, [])
        if file_name in ours:
            mine = ours_bytes[file_name]
            mine_patch = project.read_patch(upstream, file_name)
            exported = mine[:len(mine) - len(mine_patch.diff)] + for_gnu_patch(mine_patch.diff)
            if data in (mine, exported) or _sha256(data) in recorded or \
                    _exported_as(record, data, gone_from_both) is not None or \
                    any(taken_undone(took, n, data, mine) is False for n in gone_from_both):
                # Not changed in quilt (the series' may have been since); or renamed on both
                # sides (`rename`, `quilt rename`), quilt's file as the export wrote it or as
                # an import took it back into the fix the series holds.
                how[file_name] = KEPT
                if data in (mine, exported) and _sha256(data) not in recorded and \
                        record is not None:
                    agreed[file_name] = data
                elif data not in (mine, exported) and _sha256(mine) not in {
                        t["into"] for t in took.get(file_name, {}).values()}:
                    older_in_quilt.add(file_name)
                continue
            undone = taken_undone(took, file_name, data, mine)
            if undone is False:  # taken back before; the series holds it, or changed since
                how[file_name] = KEPT
                if _sha256(mine) != took[file_name][_sha256(data)]["into"]:
                    kept_newer.append((file_name, str(source)))
                    older_in_quilt.add(file_name)
                continue
            if undone is None and _same_change(
                    mine_patch, _quilt_patch(data, source, strip_levels[file_name], empty)):
                # quilt's file holds the series' patch as it is, rewritten only where quilt
                # writes it its own way: `quilt refresh --diffstat` (or QUILT_REFRESH_ARGS
                # with it) adds a diffstat under its own `---`, with the diff, fields and
                # description the same. Taken as a change, it was "updated", and the series'
                # patch got quilt's diffstat and a second `---`. The record learns quilt's
                # file beside what the export wrote: the next export replaces it, and a later
                # change in quilt reads as quilt's alone. (Asked after the record of what an
                # import took back: quilt's file an import took, the series holding it, is
                # known as taken, and recorded as the export's it would read as unchanged in
                # quilt once the import is undone in the stack, its change then lost.)
                how[file_name] = KEPT
                if record is not None and _sha256(data) not in recorded:
                    rewritten[file_name] = data
                continue
            if undone:
                if _sha256(mine) != took[file_name][_sha256(data)].get("over"):
                    # The import undone, then the patch changed (edit, refresh) without
                    # quilt's change: taking quilt's back would lose the series' change.
                    diverged[file_name] = (source, line)
                else:
                    taken_again.append(file_name)
            elif exported_listed is not None and file_name in exported_listed and \
                    _sha256(exported) not in recorded and _sha256(mine) not in recorded and \
                    _sha256(mine) not in {t["into"] for t in took.get(file_name, {}).values()} \
                    and not _base_moved_only(mine_patch, recorded, {
                        (_quilt_patch(data, source, strip_levels[file_name], empty).get("Base")
                         or "").strip(), export_pin()}, store,
                        _quilt_patch(data, source, strip_levels[file_name], empty).paths):
                # (The series' patch is what an earlier import wrote: not changed in the
                # series since; quilt's file is a later change of quilt's, taken back. Nor
                # is a fix a rebase only moved, its `Base` the one change: quilt's diff
                # is made again on the new pin, or refused as made on another.)
                on_pin = _rebased_only(
                    project, store, upstream, pin, file_name, mine_patch,
                    _quilt_patch(data, source, strip_levels[file_name], empty),
                    [*recorded, *(t["into"] for t in took.get(file_name, {}).values())],
                    export_pin(), lambda: [
                        (e[0], _quilt_patch(e[3], e[1], strip_levels[e[0]], empty))
                        for e in entries[:[e[0] for e in entries].index(file_name)]])
                if on_pin is None:
                    both[file_name] = (source, line)
                else:
                    # The rebase wrote the diff again, the change the same: quilt's change
                    # as the rebase judges it onto the new pin, made there.
                    rebased[file_name] = on_pin
            elif record is not None and file_name not in (exported_listed or {}) and \
                    _changed_since_export(project, upstream, file_name, mine, all_recorded,
                                          all_into):
                # The export wrote no patch of this name, and the series' patch holds none of
                # its files either: quilt's file (a fix renamed alike on both sides, or
                # made on both) never had the series' change, which taking it back would lose.
                both[file_name] = (source, line)
            theirs = quilts[file_name] = _quilt_patch(data, source, strip_levels[file_name],
                                                      empty)
            made_on[file_name] = (theirs.get("Base") or "").strip()
            taken[file_name] = _changed_patch(mine_patch, theirs, upstream, pin.commit,
                                              _filled_before(took, file_name, mine))
            if file_name in rebased:
                made_on[file_name] = pin.commit
                taken[file_name] = taken[file_name].with_diff(rebased[file_name])
            filled[file_name] = _filled(taken[file_name], theirs)
            how[file_name] = CHANGED
        else:
            # A patch `quilt new` made that an import took back, and that the series no longer
            # lists nor holds anywhere (the import undone in the stack; a run cut short before
            # listing it): quilt's new fix, taken again.
            again = bool(taken_undone(took, file_name, data, None,
                                      lambda: series_holdings(project, upstream)))
            was = None if again or record is None or file_name in record else \
                _quilt_renamed(project, upstream, data, ours, ours_bytes,
                               {e[0] for e in entries}, took)
            if was is None and not again and record is not None and file_name not in record:
                was = _quilt_renamed_and_changed(
                    project, upstream, partial(_quilt_patch, data, source,
                                               strip_levels[file_name], empty),
                    [n for n in ours if n not in quilt_listed and (
                        n in renamed_in_series or n in (exported_listed or {})
                        and not _changed_since_export(
                            project, upstream, n, ours_bytes[n], record.get(n, []),
                            {t["into"] for t in took.get(n, {}).values()}))])
                if was is not None:
                    renamed.append((was, file_name, line))
                    if not _same_change(project.read_patch(upstream, was), _quilt_patch(
                            data, source, strip_levels[file_name], empty)):
                        changed_renamed.add(file_name)
                    continue
            if was is not None:
                renamed.append((was, file_name, line))
                continue
            older = None if again or record is None or file_name in record else \
                _exported_as(record, data, [n for n in ours if n not in quilt_listed])
            if older is not None:
                _refuse_renamed_older(project, upstream, older, file_name, series_path, line,
                                      profile)
            if not again and (_sha256(data) in recorded
                              or _sha256(data) in took.get(file_name, {})):
                # Exported (or taken back), then taken out of the series (delete, rename,
                # landed upstream), and not changed in quilt: the series' own decision stands.
                left_out.append(file_name)
                continue
            gone_was = None if again or record is None else (
                _exported_as(record, data, gone_from_both) or next(
                    (n for n in gone_from_both if taken_undone(took, n, data, None) is False),
                    None))
            if gone_was is not None:
                # The same, renamed in quilt (`quilt rename`): taken as a new fix, the fix the
                # series let go would come back under quilt's name.
                left_out.append(file_name)
                left_renamed.append((file_name, gone_was))
                continue
            if not again and record is not None and file_name not in record:
                # Renamed in quilt and changed there, the fix a rebase set aside (or found
                # landed) since: taken as a new fix, quilt's change was refused on the new pin
                # with the advice to make it a new fix, a second copy of the one bring-back
                # puts back.
                was_aside = _renamed_aside(
                    project, upstream,
                    partial(_quilt_patch, data, source, strip_levels[file_name], empty),
                    [n for n in gone_from_both if n not in quilt_listed],
                    read_header_record(document))
                if was_aside is not None:
                    _refuse_set_aside(project, upstream, was_aside, source, series_path, line,
                                      (_quilt_patch(data, source, strip_levels[file_name],
                                                    empty).get("Base") or "").strip(),
                                      pin.commit, pin.label, renamed_to=file_name)
            if not again and record is not None and file_name in record:
                _refuse_renamed(project, upstream, file_name, recorded,
                                {e[0] for e in entries}, series_path, source, line)
                _refuse_renamed_and_changed(
                    project, upstream, file_name,
                    partial(_quilt_patch, data, source, strip_levels[file_name], empty),
                    [n for n in ours if n not in quilt_listed
                     and n not in (exported_listed or record)],
                    series_path, source, line)
                _refuse_set_aside(project, upstream, file_name, source, series_path, line,
                                  (_quilt_patch(data, source, strip_levels[file_name],
                                                empty).get("Base") or "").strip(),
                                  pin.commit, pin.label)
                raise InputError(
                    f"{file_name} left the {upstream} series after `export --quilt` wrote it "
                    "(deleted, renamed, or landed upstream) and was changed in quilt since; "
                    "nothing was taken back", path=str(series_path), line=line,
                    hint=f"to keep quilt's version as a new fix, give it a new name in "
                         f"{series_path} and rename {source} alike; to drop it, take its line "
                         f"out of {series_path}")
            refuse_case_twin(project, upstream, file_name)
            try:  # the project's own file: never read through a link, nor from a FIFO
                unlisted[file_name] = read_no_link(project.patch_path(upstream, file_name))
            except FileNotFoundError:
                pass
            theirs = quilts[file_name] = _quilt_patch(data, source, strip_levels[file_name],
                                                      empty)
            # Made in quilt's tree, which is the export's: on the pin its `Base:` names (a
            # fix of the series given a new name there), else the one the export's files say.
            made_on[file_name] = (theirs.get("Base") or "").strip() or export_pin()
            taken[file_name] = _new_patch(theirs, file_name, upstream, pin.commit, profile)
            filled[file_name] = _filled(taken[file_name], theirs)
            how[file_name] = ADDED
            if again:
                taken_again.append(file_name)

    if renamed:
        # Taken back as it stands, the fix would leave the series (under deleted/ with
        # --delete) and come back as a new one, its history cut in two.
        renames = "; ".join(f"{new} is {was} renamed (`quilt rename`)"
                            + (" and changed in quilt" if new in changed_renamed else "")
                            for was, new, _ in renamed)
        raise InputError(
            f"{renames}: nothing was taken back, since that would make a new fix of "
            f"{'it' if len(renamed) == 1 else 'each'} and drop the "
            f"{upstream} series' one", path=str(series_path), line=renamed[0][2],
            hint="rename it alike in the series, which keeps its history: " + ", ".join(
                f"`patchforge rename {project.patch_word(upstream, was)} "
                f"{new.removesuffix('.patch')}`" for was, new, _ in renamed)
                 + ", then run this again" + (
                     ", which takes quilt's change back into it" if changed_renamed else ""))
    # The series' patches quilt does not list: taken out with `quilt delete` (the export
    # wrote them), or added to the series after the export (it did not).
    quilt_names = [e[0] for e in entries]
    # A fix the series renamed since the export (renamed_in_series), or renamed and changed
    # (its bytes no longer the export's: the history's `renamed` events tell): where quilt's
    # series lists neither name, it was deleted in quilt as any exported fix is.
    renamed_and_changed = {} if exported_listed is None else _renamed_and_changed_since(
        project, upstream, [n for n in ours if n not in how and n not in exported_listed
                            and n not in renamed_in_series], exported_listed, ours, folder,
        read_header_record(document))
    exported_name = {n: was for n, was in {**renamed_in_series, **renamed_and_changed}.items()
                     if n not in how}
    gone = [n for n in ours if n not in how
            and (exported_listed is None or n in exported_listed
                 or (n in exported_name and exported_name[n] not in quilt_listed))]
    newer = [n for n in ours if n not in how and n not in gone]
    # A patch of another profile, which an export of one profile's series left out, stays.
    others = [n for n in newer if profile is not None
              and not applies_to_profile(project.read_patch(upstream, n), profile)]
    # Deleted in quilt, changed in the series since the export (a change quilt never had):
    # --delete would put the series' change under deleted/ unseen, as a change on both sides.
    changed_since = [n for n in gone if record is not None and _changed_since_export(
        project, upstream, n, ours_bytes[n], record.get(exported_name.get(n, n), []),
        {t["into"] for t in took.get(exported_name.get(n, n), {}).values()})
        and not _base_moved_only(project.read_patch(upstream, n),
                                 record.get(exported_name.get(n, n), []), {export_pin()},
                                 store, project.read_patch(upstream, n).paths)]
    if changed_since:
        listed = ", ".join(n + (f" ({exported_name[n]} when `export --quilt` wrote it, "
                                "renamed in the series since)" if n in exported_name else "")
                           for n in changed_since)
        one = len(changed_since) == 1
        words = " ".join(project.patch_word(upstream, n) for n in changed_since)
        raise UsageError(
            f"{listed} changed in the {upstream} series since `export --quilt` wrote "
            f"{'it' if one else 'them'}, and {series_path} no longer lists "
            f"{'it' if one else 'them'} (quilt delete? quilt rename?): nothing was taken back, "
            "with or without --delete, since that would drop the series' change, which quilt "
            "never had",
            hint=f"to drop {'it' if one else 'them'}, change and all: `patchforge delete "
                 f"{words}`, then run this again; to keep "
                 f"{'it' if one else 'them'}: copy "
                 + ", ".join(str(project.patch_path(upstream, n)) for n in changed_since)
                 + f" into {folder} and list {'it' if one else 'them'} in {series_path}"
                 + ("" if any(n in exported_name for n in changed_since) else " again")
                 + ", then run this again")
    # A fix quilt no longer lists whose whole change quilt's changes put into another fix
    # (`quilt fold` of it into that one, then `quilt delete`): --delete takes it out with its
    # checks carried into that fix, never dropped with it unsaid.
    folded = _folded_into(project, upstream, gone, taken, how)
    # (Into a patch new in quilt, it may as well be the fix renamed there, `quilt rename`,
    # its header edited: asked as such below, and that patch's header is quilt's user's.)
    folded_into_ours = {n: into for n, into in folded.items() if how.get(into) == CHANGED}
    _refuse_folded_across_profiles(project, upstream, folded_into_ours, taken, series_path)
    if gone and not delete:
        listed = ", ".join(n + (f" ({exported_name[n]} as `export --quilt` wrote it, renamed "
                                "in the series since)" if n in exported_name else "")
                           + (f" (its change is in {folded[n]} now: quilt fold?)"
                              if n in folded_into_ours else "")
                           for n in gone)
        # (quilt's file under the old name, listed again, is the fix the series let go under
        # that name: the series' own patch is the one to list.)
        copies = [n for n in gone if n in exported_name]
        # A patch quilt added that changes a file of one it no longer lists may be that one
        # renamed (`quilt rename`) with its header and diff both changed since, which nothing
        # tells byte for byte: asked, with the rename that keeps the fix's history.
        added = [n for n in quilt_names if how.get(n) == ADDED and n not in taken_again]
        touching = {n: [a for a in added if patch_paths(taken[a]) & patch_paths(
            project.read_patch(upstream, n))] for n in gone}
        maybe = {n: found[0] for n, found in touching.items() if len(found) == 1}
        asked = "" if not maybe else " or " + ", ".join(
            f"`quilt rename` of {n} to {new}, new in quilt and changing the same files"
            for n, new in maybe.items()) + "?"
        raise UsageError(f"{listed} {'is' if len(gone) == 1 else 'are'} in the {upstream} "
                         f"series but not in {series_path} (quilt delete?{asked}): nothing was "
                         "taken back, since that would drop "
                         f"{'it' if len(gone) == 1 else 'them'} without a word",
                         hint=("" if not maybe else "where quilt renamed it, rename it alike in "
                               "the series, which keeps its history: " + ", ".join(
                                   f"`patchforge rename {project.patch_word(upstream, n)} "
                                   f"{new.removesuffix('.patch')}`" for n, new in maybe.items())
                               + ", then run this again, which takes quilt's change back into "
                                 "it; where quilt deleted it: ")
                              + "`--delete` takes them out too (kept under "
                              f"series/{upstream}/deleted/, as `patchforge delete` keeps a fix"
                              + ("; a fix folded into another gives it its Keeps and Bug "
                                 "lines" if folded else "") + "); "
                              + (f"or list them in {series_path} again" if not copies else
                                 "or copy " + ", ".join(str(project.patch_path(upstream, n))
                                                        for n in copies)
                                 + f" into {folder} and list "
                                 + ("it" if len(gone) == 1 else "them")
                                 + f" in {series_path}, then run this again"))
    order = [n for n in quilt_names if n not in left_out]
    for name in newer:  # after the patch it follows in the series, or first
        earlier = [n for n in ours[:ours.index(name)] if n in order]
        order.insert(order.index(earlier[-1]) + 1 if earlier else 0, name)
    if recorded_order is not None:
        order = _order_of_both(upstream, ours, quilt_names, recorded_order, order, series_path)

    patches = [(n, taken[n] if n in taken else project.read_patch(upstream, n)) for n in order]
    # A patch after one quilt changed or added, or after the order changed, may have had its
    # lines moved.
    kept_order = [n for n in order if n in ours]
    moved = {n for k, n in enumerate(order) if n not in taken and (
        any(m in taken for m in order[:k])
        or kept_order[:kept_order.index(n)] != [m for m in ours if m in order][
            :kept_order.index(n)])}
    ambiguous: dict[str, list] = {}
    made = _made_again(project, store, upstream, pin.commit, patches, taken, moved,
                       {e[0]: (e[1], e[2], strip_levels[e[0]]) for e in entries},
                       series_path, ambiguous, made_on, pin.label, older_in_quilt)
    for name in taken:
        made.setdefault(name, taken[name])  # quilt's diff was already git's (copied in)
        if how[name] == CHANGED and \
                made[name].diff != project.read_patch(upstream, name).diff:
            made[name] = made[name].with_field("Last-Update", today())  # as refresh does
    carried: list[tuple[str, str, list[str], list[str]]] = []
    for name, into in folded.items() if delete else ():
        made[into], given, unsaid = _with_folded(made[into],
                                                 project.read_patch(upstream, name))
        filled[into] = _filled(made[into], quilts[into])
        carried.append((name, into, given, unsaid))
    for name, (source, line) in both.items():
        if not _same_but_date(made[name], ours_bytes[name]):
            raise InputError(
                f"{name} changed in quilt and in the {upstream} series since `export --quilt` "
                "wrote it; taking quilt's back would lose the series' change, so nothing was "
                "taken back", path=str(series_path), line=line,
                hint=_both_changed_way(project, upstream, name, source))
        made[name] = project.read_patch(upstream, name)  # taken back before, as it is
    for name, (source, line) in diverged.items():
        raise InputError(
            f"{name}: quilt's change, which an earlier `import quilt --update` took back, is "
            f"not in the {upstream} series' patch, which changed since without it (the import "
            "undone in the stack, then edit + refresh?); taking quilt's back would lose the "
            "series' change, so nothing was taken back", path=str(series_path), line=line,
            hint=_both_changed_way(project, upstream, name, source))
    for name, there in unlisted.items():
        if not _same_but_date(made[name], there):
            path = project.patch_path(upstream, name)
            raise UsageError(f"a patch file named {name} is already there, not listed in the "
                             f"{upstream} series: {path}; nothing was taken back",
                             hint="list it in the series or move it away, then run this again")
        made[name] = parse_patch_file(there, str(project.patch_path(upstream, name)))
    # (quilt's file as read, at -p1: the line of a file's section in it)
    sources: dict[str, tuple[str, bytes | None]] = {
        e[0]: (str(e[1]), with_p1_names(e[3], strip_levels[e[0]], str(e[1])))
        for e in entries if e[0] in taken}
    lines = {e[0]: e[2] for e in entries}
    new_patches = [(n, made.get(n) or patch) for n, patch in patches]
    _refuse_unknown_profiles(project, {n: made[n] for n in made}, sources)
    # A new patch creating a path already filled is named as such first; then any patch the
    # new series no longer applies.
    _refuse_collisions(project, store, upstream, {n: made[n] for n in made if how.get(n) == ADDED},
                       sources, pin.commit)
    _refuse_breaking(project, store, upstream, ours, new_patches, series_path, lines,
                     set(taken))
    _refuse_leaving_profiles(project, store, upstream, ours, new_patches, series_path, profile,
                             lines, set(taken))
    refuse_series_removals(project, store, upstream, pin.commit,
                           [(n, project.read_patch(upstream, n)) for n in ours], new_patches,
                           sources=sources, outcome="nothing was taken back",
                           # Taken out of quilt's series, a fix of ours reads as deleted in
                           # quilt on the next run: the change is what is undone there.
                           way_out="or undo that change in quilt (`quilt remove` the file, "
                                   "`quilt refresh`; a patch new in quilt can instead be taken "
                                   f"out of {series_path})",
                           listed={n: f"{series_path}:{line}" for n, line in lines.items()})

    writes = {n: made[n].to_bytes() for n in made if made[n].to_bytes() != ours_bytes.get(n)}
    new_series = series.replaced_names(order)
    removed = [n for n in ours if n not in order]
    deleted_dir = project.series_dir(upstream) / "deleted"
    leftovers = [n for n in record or () if n not in ours and n not in order
                 and _kept_aside(project.patch_path(upstream, n), deleted_dir)]
    result = {"changed": [n for n in order if how.get(n) == CHANGED and n in writes],
              "moved": [n for n in order if how.get(n) != CHANGED and n in writes
                        and n not in taken],
              "added": [n for n in order if how.get(n) == ADDED],
              "deleted": [], "kept_ours": [n for n in newer if n not in others
                                           and n not in exported_name],
              "kept_renamed": [(n, exported_name[n]) for n in newer if n not in others
                               and n in exported_name],
              "renamed_and_changed": [n for n in newer if n in renamed_and_changed],
              "kept_other_profile": others, "profile": profile,
              "left_out": [n for n in left_out if n not in dict(left_renamed)],
              "left_renamed": left_renamed, "kept_newer": kept_newer, "taken_again": taken_again,
              "where_now": {was: _where_now(project, upstream, was) for _, was in left_renamed},
              "reordered": [n for n in ours if n in order] != [n for n in order if n in ours],
              "left_ambiguous": ambiguous, "directory": str(folder), "folded": carried}
    if not writes and not removed and not leftovers and \
            new_series.to_bytes() == series.to_bytes():
        # (The ledger of a run a kill cut short before it was written is written now.)
        with RepoLock(project.state_dir), writing_project(project.root):
            series_changed(project)
        _record_taken(folder, record, profile, entries, took, ours_bytes,
                      {n: made[n].to_bytes() for n in taken}, recorded_order, agreed, filled,
                      read_header_record(document), rewritten)
        if recorded_order is not None and recorded_order != quilt_names:
            _record_order(folder, profile, quilt_names)
        return result
    with RepoLock(project.state_dir):
        require_state_still(project, "import quilt --update", [upstream], allowed, store=store)
        if project.lock.pin(upstream).commit != pin.commit or \
                project.read_series(upstream).to_bytes() != series.to_bytes() or \
                any(project.read_patch_bytes(upstream, n) != data
                    for n, data in ours_bytes.items()):
            raise UsageError(f"the {upstream} series or its pin changed while the quilt series "
                             "was being checked (another patchforge command); nothing was "
                             "taken back", hint="run it again")
        from patchforge.ledger import history_path, ledger_path

        # The names are chosen before anything is written (for the put-back below), so each
        # is kept from the ones chosen before it: two removed patches `a.patch` and
        # `a.2.patch` beside an older deleted/a.patch were both kept as deleted/a.2.patch.
        chosen: set[str] = set()

        def kept_as(name: str, data: bytes) -> Path:
            free = aside_name(deleted_dir, name, data, taken=chosen)
            chosen.add(free)
            return deleted_dir / free

        kept = [(name, kept_as(name, ours_bytes[name])) for name in removed]
        aside = kept + [(n, kept_as(n, project.patch_path(upstream, n).read_bytes()))
                        for n in leftovers]
        # Cut short (Ctrl-C, a failed write), every file goes back as it was: a quilt
        # series is taken back whole or not at all (one patch taken and the next not, the
        # CLI said "nothing was left half-written", and the run again told of the other as
        # "taken back again"). Only the edit closed is not put back (its change was
        # refreshed into its patch: require_state saw to it).
        touched = [folder / EXPORT_RECORD, *(where for _, where in kept),
                   *(project.patch_path(upstream, n) for n in writes),
                   project.series_path(upstream), history_path(project), ledger_path(project),
                   *(project.patch_path(upstream, n) for n in removed + leftovers)]
        with writing_project(project.root), put_back_on_failure(
                touched, finish=f"run `patchforge import quilt {folder} --update` again: it "
                                "finishes what was taken back"):
            # The export record first (which patch takes quilt's change, over what; which new
            # patch the series takes), then the kept, then the new files, then the series,
            # then what the history says, then the removals: a kill at any point loses no
            # fix, and running this again finishes what it left (a patch still as it was
            # before is quilt's change not yet taken, and a new patch the series does not
            # list yet is one not yet added: each taken again).
            _record_taken(folder, record, profile, entries, took, ours_bytes,
                          {n: made[n].to_bytes() for n in taken}, recorded_order, agreed, filled,
                          read_header_record(document), rewritten)
            for name, where in kept:
                atomic_write(where, ours_bytes[name])
            for name, data in writes.items():
                atomic_write(project.patch_path(upstream, name), data)
            atomic_write(project.series_path(upstream), new_series.to_bytes())
            said = _deletions_said(project)
            for name, where in aside:
                event = {"event": "deleted", "upstream": upstream, "patch": name,
                         "destination": "deleted",
                         "detail": f"kept as {where.relative_to(project.root).as_posix()}"}
                if (upstream, name, event["detail"]) not in said or (name, where) in kept:
                    series_changed(project, event)
            for name in removed + leftovers:
                atomic_delete(project.patch_path(upstream, name))
            _close_edit(project, upstream, ours, order, set(writes))
            series_changed(project)
            # Last: a run cut short before it compares with the order it started from again.
            if recorded_order is not None and recorded_order != quilt_names:
                _record_order(folder, profile, quilt_names)
    result["deleted"] = [(n, str(w.relative_to(project.root))) for n, w in kept]
    return result


# What a fix folded into another (`quilt fold`) says that the other says nothing of, one
# value each (where the fix stands upstream, when it goes): said, never carried, since one
# value there would be the other fix's own change's too.
_SAID_OF_FOLDED = ("Drop-When", "Forwarded", "Applied-Upstream", "Upstream-Status")


def _carried_with_fold(name: str) -> bool:
    """Whether a folded fix's field of `name` goes with its change into the fix that holds
    it now: its `Keeps` lines (the checks of its change) and its `Bug` links, which hold of
    the fix holding both changes as of the one."""
    low = name.lower()
    return low in ("keeps", "bug") or low.startswith("bug-")


def _folded_into(project: Project, upstream: str, gone: list[str],
                 taken: dict[str, PatchFile], how: dict[str, str]) -> dict[str, str]:
    """Each fix of `gone` (the series' fixes quilt's series no longer lists) whose whole change,
    every line it adds and takes out (_changed_lines), is in the change quilt's file gives one
    fix of `taken` (changed in quilt, or new there) and not in that fix's as the series has
    it: `quilt fold` of it into that one, then `quilt delete` of it. -> that fix. A change
    found in none of them, or in several, is no fold."""
    from collections import Counter

    if not gone or not taken:
        return {}
    gained: dict[str, Counter] = {}
    for name, patch in taken.items():
        lines = Counter(_changed_lines(patch))
        if how.get(name) == CHANGED:
            lines -= Counter(_changed_lines(project.read_patch(upstream, name)))
        gained[name] = lines
    found: dict[str, str] = {}
    for name in gone:
        change = _changed_lines(project.read_patch(upstream, name))
        holders = [n for n, lines in gained.items()
                   if change and all(lines[k] >= count for k, count in change.items())]
        if len(holders) == 1:
            found[name] = holders[0]
    return found


def _refuse_folded_across_profiles(project: Project, upstream: str, folded: dict[str, str],
                                   taken: dict[str, PatchFile], series_path: Path) -> None:
    """A fix folded into one for other profiles (a gfx942 fix into an every-profile fix, or
    the other way round): taken back, its change would reach profiles it was never for, or
    leave those it was for, with every check green. Refused, nothing written."""
    configured = list(project.config.profiles)

    def said(chosen) -> str:
        return "every profile" if chosen is None else ", ".join(sorted(chosen)) + " only"

    for name, into in folded.items():
        was = profile_set(project.read_patch(upstream, name), configured)
        now = profile_set(taken[into], configured)
        if was == now:
            continue
        every = frozenset(configured)
        leaves = (was or every) - (now or every)
        reaches = (now or every) - (was or every)
        raise UsageError(
            f"{name}'s change is in {into} now (quilt fold?), but {name} is for "
            f"{said(was)} and {into} for {said(now)}: taken back, that change would "
            + " and ".join(([f"leave {', '.join(sorted(leaves))}"] if leaves else [])
                           + ([f"reach {', '.join(sorted(reaches))}"] if reaches else []))
            + "; nothing was taken back",
            hint=f"to keep the two fixes apart: in quilt's tree take {name}'s change out of "
                 f"{into} again (`quilt refresh`) and list {name} in {series_path} again; "
                 f"to give that change {into}'s profiles on purpose: `patchforge delete "
                 f"{project.patch_word(upstream, name)}`, then run this again")


def _with_folded(patch: PatchFile, folded: PatchFile) -> tuple[PatchFile, list[str], list[str]]:
    """`patch` (the fix a fix was folded into) given the folded fix's `Keeps` and `Bug` lines
    it lacks (_carried_with_fold): (the patch, the lines carried, the folded fix's fields of
    _SAID_OF_FOLDED that `patch` has with another value or not at all, as `Name: value`)."""
    carried = []
    for f in folded.fields:
        if not _carried_with_fold(f.name):
            continue
        have = {" ".join(v.split()) for v in patch.get_all(f.name)}
        if " ".join(f.value.split()) not in have:
            patch = patch.with_field_added(f.name, f.value)
            carried.append(f"{f.name}: {f.value}")
    said = [f"{name}: {value}" for name in _SAID_OF_FOLDED for value in folded.get_all(name)
            if " ".join(value.split()) not in {" ".join(v.split()) for v in patch.get_all(name)}]
    return patch, carried, said


def _refuse_renamed(project: Project, upstream: str, file_name: str, recorded: list[str],
                    quilt_names: set[str], series_path: Path, source: Path, line: int) -> None:
    """`file_name` left the series after the export and quilt changed it: when
    `patchforge rename` gave the fix another name (renamed_since_export), taken back as a new
    fix, quilt's copy met the renamed one's own lines, in the series and not in quilt's tree;
    renamed alike in quilt, it is taken back as that fix's change."""
    name = renamed_since_export(project, upstream, recorded, quilt_names)
    if name is not None:
        new_source = source.with_name(name)
        raise InputError(
            f"{file_name} is {name} now (renamed in the {upstream} series after "
            "`export --quilt` wrote it) and was changed in quilt since; nothing was "
            "taken back", path=str(series_path), line=line,
            hint=f"rename it alike in quilt: {file_name} to {name} in {series_path} "
                 f"(line {line}) and {source} to {new_source}, then run this again")


def _export_pin(entries: list[tuple[str, Path, int, bytes]], record: dict | None,
                strip_levels: dict[str, int], empty) -> str:
    """The pin `export --quilt` wrote DIR at: the one `Base:` of the files in DIR that are as
    it wrote them (the record vouches for their bytes); "" where they name none or several,
    or there is no record."""
    if record is None:
        return ""
    bases = {(_quilt_patch(data, source, strip_levels[name], empty).get("Base") or "").strip()
             for name, source, _, data in entries if _sha256(data) in record.get(name, [])}
    return bases.pop() if len(bases) == 1 else ""


def _refuse_renamed_and_changed(project: Project, upstream: str, file_name: str, theirs,
                                names: list[str], series_path: Path, source: Path,
                                line: int) -> None:
    """`file_name` left the series after the export and quilt changed it: when `rename` gave
    the fix another name and the series changed it since too (edit + refresh: its bytes no
    longer the export's, so _refuse_renamed does not know it), it was said to have "left the
    series", and the advice, keep quilt's version as a new fix, was refused in turn as meeting
    the renamed fix's lines. Said as it is: renamed, and changed on both sides. Told by the
    history's `renamed` events in a stack that keeps one; else by the header, which `quilt
    refresh` and `edit` + `refresh` both keep: the one patch of `names` (the series' patches
    neither quilt's series nor the export lists) whose header, every field but `Base` and
    `Last-Update` and the description, is quilt's file's (`theirs()`, parsed when asked),
    unless deleted/ keeps a fix of `file_name` with that header or the history says
    `file_name` left the series or was renamed to another."""
    from patchforge.ledger import (DEPARTURE_EVENTS, RENAMED, RENAMED_FROM, follow_fixes,
                                   read_history)

    if not names:
        return
    history = read_history(project)
    fixes, last = follow_fixes(history)
    found = [last[fix].removeprefix(f"{upstream}/") for fix, event in zip(fixes, history)
             if fix is not None and event.get("event") == RENAMED
             and event.get("upstream") == upstream and event.get(RENAMED_FROM) == file_name]
    found = [name for name in dict.fromkeys(found) if name in names]
    said_gone = any(event.get("upstream") == upstream and (
        event.get("event") in DEPARTURE_EVENTS and event.get("patch") == file_name
        or event.get("event") == RENAMED and event.get(RENAMED_FROM) == file_name)
        for event in history)
    if not found and not said_gone:
        try:
            header = kept_header_digest(theirs())
        except PatchforgeError:
            return
        if _deleted_with(project.series_dir(upstream) / "deleted", file_name, {header}):
            return
        found = [name for name in names
                 if kept_header_digest(project.read_patch(upstream, name)) == header]
    if len(found) != 1:
        return  # none, or two a header cannot tell apart: said as a fix that left
    name = found[0]
    word = project.patch_word(upstream, name)
    raise InputError(
        f"{file_name} is {name} now (renamed in the {upstream} series after `export --quilt` "
        f"wrote it), and both sides changed it since: the series ({name}) and quilt "
        f"({source}); nothing was taken back", path=str(series_path), line=line,
        hint=f"keep a copy of {source}; make {name} hold quilt's change too (`patchforge edit "
             f"{word}`, make the copy's change, `patchforge refresh`); then in quilt's tree "
             f"`quilt pop -a`, rename {file_name} to {name} in {series_path} (line {line}), "
             f"copy series/{upstream}/{name} to {source.with_name(name)}, remove {source}, "
             "and run this again, which has nothing to take back")


def _refuse_set_aside(project: Project, upstream: str, file_name: str, source: Path,
                      series_path: Path, line: int, made_on: str, pin: str,
                      label: str, renamed_to: str | None = None) -> None:
    """`file_name` left the series after the export and quilt changed it: where a rebase
    set the fix aside (skipped/) or found it landed upstream (upstreamed/), the refusal
    says which and gives the way on from the new pin. "Give it a new name" made a second
    copy of a set-aside fix (bring-back is its way back), and quilt's diff, made on the
    export's pin, did not apply on the new one, whose refusal sent quilt's user back to
    the tree it was made in: a loop. `renamed_to`: quilt's name for it (`quilt rename`,
    then `quilt refresh`), which the series takes too once the fix is back."""
    folder = project.series_dir(upstream)
    word = project.patch_word(upstream, file_name)
    moved = (f"quilt made its change on {upstream} at {made_on[:12]} (its Base:), and the "
             f"series moved to {label} ({pin[:12]}) since" if made_on and made_on != pin
             else f"the series is at {label} ({pin[:12]})")
    said = file_name if renamed_to is None else \
        f"{renamed_to} is {file_name} renamed in quilt (`quilt rename`), which"
    named = "" if renamed_to is None else " under its new name"
    if (folder / "skipped" / file_name).is_file():
        new_word = word if renamed_to is None else renamed_to.removesuffix(".patch")
        rename = "" if renamed_to is None else \
            f"`patchforge rename {project.skipped_word(upstream, file_name)} {new_word}`; "
        raise InputError(
            f"{said} was set aside by a rebase (series/{upstream}/skipped/{file_name}) "
            f"after `export --quilt` wrote it, and was changed in quilt{named} since: {moved}; "
            "nothing was taken back", path=str(series_path), line=line,
            hint=f"keep a copy of {source}; `patchforge bring-back "
                 f"{project.skipped_word(upstream, file_name)}` (it puts the fix back on "
                 f"{label}); {rename}then `patchforge edit {new_word}`, change the files as the "
                 f"copy does, `patchforge refresh`; copy "
                 f"{project.patch_path(upstream, new_word + '.patch')} over {source} and run "
                 "this again")
    if (folder / "upstreamed" / file_name).is_file():
        raise InputError(
            f"{said} landed upstream (series/{upstream}/upstreamed/{file_name}) after "
            f"`export --quilt` wrote it, and was changed in quilt{named} since: {moved}; "
            "nothing was taken back", path=str(series_path), line=line,
            hint=f"keep a copy of {source}; take its line out of {series_path} (line {line}) "
                 "and run this again; then make quilt's change a new fix on "
                 f"{label}: `patchforge new NAME --file PATH`, change the files as the copy "
                 "does (upstream holds the fix now), `patchforge refresh`")


def _renamed_aside(project: Project, upstream: str, read_quilt: Callable[[], PatchFile],
                   names: list[str], recorded_headers: dict[str, list[str]]) -> str | None:
    """The fix of `names` (exported names neither side lists now) that a rebase set aside
    (skipped/) or found landed (upstreamed/) since the export, and that quilt's file is,
    renamed and changed in quilt: the one whose header (every field but `Base` and
    `Last-Update`, the description), as the export recorded it or as skipped/ keeps it,
    quilt's file holds byte for byte, as `quilt rename` and `quilt refresh` keep it; else the
    one whose diff quilt's holds (its header changed, `quilt header -e`). None when there is
    not exactly one."""
    folder = project.series_dir(upstream)
    kept: dict[str, PatchFile | None] = {}
    for name in names:
        for place in ("skipped", "upstreamed"):
            path = folder / place / name
            if path.is_file():
                try:
                    kept[name] = parse_patch_file(read_no_link(path), str(path))
                except (OSError, PatchforgeError):
                    kept[name] = None
                break
    if not kept:
        return None
    try:
        quilt = read_quilt()
    except PatchforgeError:
        return None
    header = kept_header_digest(quilt)
    found = [name for name, patch in kept.items()
             if quilt.fields and (header in recorded_headers.get(name, []) or patch is not None
                                  and kept_header_digest(patch) == header)]
    if len(found) != 1 and quilt.file_patches:
        found = [name for name, patch in kept.items() if patch is not None
                 and quilt.diff in (patch.diff, for_gnu_patch(patch.diff))]
    return found[0] if len(found) == 1 else None


def _quilt_renamed(project: Project, upstream: str, data: bytes, ours: list[str],
                   ours_bytes: dict[str, bytes], quilt_names: set[str],
                   took: dict[str, dict[str, dict]]) -> str | None:
    """The series' patch a `quilt rename` gave quilt's new name to: one quilt's series no
    longer lists, whose file quilt's holds byte for byte (quilt moves the file; its content
    is the series' patch, as written or with its diff written for GNU patch, or quilt's file
    an import took back into the series' patch as it is: taken_undone). Only the
    series' patch as it is now: an older export of it (changed in the series since) is
    _refuse_renamed_older's. None when quilt's file is none of them (a patch `quilt new`
    made)."""
    for name in ours:
        if name in quilt_names:
            continue
        mine = ours_bytes[name]
        patch = project.read_patch(upstream, name)
        exported = mine[:len(mine) - len(patch.diff)] + for_gnu_patch(patch.diff)
        if data in (mine, exported) or taken_undone(took, name, data, mine) is False:
            return name  # (or quilt's file an import took back, which the series holds)
    return None


def _quilt_renamed_and_changed(project: Project, upstream: str,
                               read_quilt: Callable[[], PatchFile],
                               unchanged: list[str]) -> str | None:
    """The series' patch a `quilt rename` gave quilt's new name to, then changed there (`quilt
    refresh`): of the patches quilt's series no longer lists that the series did not change
    since the export (`unchanged`), the one whose header (every field but `Base` and
    `Last-Update`, the description) quilt's file holds byte for byte, as quilt keeps the header
    of the patch it renames and refreshes; else the one whose diff quilt's file holds byte
    for byte (as the series has it, or as the export wrote it for GNU patch), its header
    changed (`quilt header -e` after `quilt rename`).
    None when there is not exactly one (a patch `quilt new` made has a header and a change of
    its own)."""
    # (but Base and Last-Update, which an import of quilt's earlier refresh set anew)
    header = kept_header
    if not unchanged:
        return None
    try:  # (a file that does not parse is refused as such where it is taken as a new fix)
        quilt = read_quilt()
    except PatchforgeError:
        return None
    patches = {name: project.read_patch(upstream, name) for name in unchanged}
    found = [name for name, patch in patches.items()
             if quilt.fields and header(patch) == header(quilt)]
    if len(found) != 1 and quilt.file_patches:
        found = [name for name, patch in patches.items()
                 if quilt.diff in (patch.diff, for_gnu_patch(patch.diff))]
    return found[0] if len(found) == 1 else None


def _same_change(mine: PatchFile, quilt: PatchFile) -> bool:
    """Whether quilt's file `quilt` (parsed as _quilt_patch reads it) holds the series' patch
    `mine` as `quilt refresh` writes it again, nothing changed: the same header (every field
    but `Base` and `Last-Update`, and the description) and, file by file, the same hunks, as
    quilt's diff writes them (`Index:` lines, `.orig` prefixes, no `index` line, its own
    function names after `@@`, a diffstat under `---`). A hunk is compared by the lines it
    takes out and puts in and where, its context trimmed (quilt's `-U` may differ from
    git's). Anything else (a mode, a rename, binary data, a line) is a change."""
    if kept_header(mine) != kept_header(quilt):
        return False

    def sections(patch: PatchFile) -> dict | None:
        found: dict = {}
        for fp in patch.file_patches:
            key = (fp.old_path, fp.new_path)
            if key in found:
                return None
            # (A mode only where it is one: quilt writes none for a file kept as it was,
            # created as a plain file, or deleted.)
            mode = None if fp.is_delete or fp.old_mode == fp.new_mode or (
                fp.is_new and fp.new_mode == "100644") else (fp.old_mode, fp.new_mode)
            found[key] = (mode, fp.is_rename, fp.is_copy, fp.is_binary, fp.binary,
                          tuple(_trimmed(h) for h in fp.hunks))
        return found

    ours, theirs = sections(mine), sections(quilt)
    return ours is not None and ours == theirs and not mine.parsed_diff.trailing.strip() \
        and not quilt.parsed_diff.trailing.strip()


def _trimmed(hunk) -> tuple:
    """A hunk without its leading and trailing context: where its change starts on each
    side, and the lines it takes out and puts in (no-newline markers applied)."""
    old, new = hunk.old_lines(), hunk.new_lines()
    lead = hunk.leading_context
    trail = hunk.trailing_context
    return (hunk.old_start + lead if old else None, hunk.new_start + lead if new else None,
            tuple(old[lead:len(old) - trail]), tuple(new[lead:len(new) - trail]))


def _renamed_from(project: Project, upstream: str, name: str, mine: bytes,
                  exported: dict[str, list[str]], ours: list[str],
                  took: dict[str, dict[str, dict]]) -> str | None:
    """The name the export wrote the series' patch `name` (its bytes `mine`) under, when
    `rename` gave it `name` since: the exported patch the series no longer lists whose
    recorded bytes are `mine` (as written, or with its diff written for GNU patch), or whose
    file an import took back into `mine`. None when there is none (a fix added since)."""
    patch = project.read_patch(upstream, name)
    held = {_sha256(mine), _sha256(mine[:len(mine) - len(patch.diff)]
                                   + for_gnu_patch(patch.diff))}
    for was, hashes in exported.items():
        if was not in ours and (held & set(hashes) or _sha256(mine) in {
                t["into"] for t in took.get(was, {}).values()}):
            return was
    return None


def _renamed_and_changed_since(project: Project, upstream: str, names: list[str],
                               exported: dict[str, list[str]], ours: list[str],
                               folder: Path, recorded_headers: dict[str, list[str]]
                               ) -> dict[str, str]:
    """Of the series' patches `names` (not exported under their name, nor byte for byte
    under another), each that is a fix the export wrote under an earlier name (`exported`)
    the series no longer holds, renamed and changed since (edit + refresh): name -> that
    earlier name. A fix renamed and changed since the export is no fix that joined the series
    after it. Told by the history's `renamed` events (ledger.follow_fixes), in a stack that
    keeps one; else by the header the export wrote under the earlier name, every field but
    `Base` and `Last-Update` and the description, which the series' patch holds byte for
    byte, as `edit` + `refresh` keeps it: the record keeps it (`recorded_headers`, an
    export's since they are recorded: `quilt delete -r` takes the file out of DIR), and the
    export's file still in `folder` as written holds it (`quilt delete` leaves it there, as
    a series line quilt left as it was does). An earlier name two patches
    could be tells neither. A header is no rename where the earlier name's fix is kept under
    deleted/ with that header (`delete fix-a`, then `new fix-z` with fix-a's description: fix-z
    never was fix-a), nor where the history says the earlier name left the series (deleted,
    landed, skipped) or was renamed to another: a history tells what its commands did, not a
    rename done by hand in git nor one made before the history was switched on, so its lack of
    a `renamed` event is no word against the header."""
    if not names:
        return {}
    from patchforge.ledger import (DEPARTURE_EVENTS, RENAMED, RENAMED_FROM, follow_fixes,
                                   read_history)

    left = [was for was in exported if was not in ours]
    history = read_history(project)
    fixes, last = follow_fixes(history)
    found: dict[str, list[str]] = {}
    for fix, event in zip(fixes, history):
        old = event.get(RENAMED_FROM)
        if fix is None or event.get("event") != RENAMED or event.get("upstream") != upstream \
                or old not in left:
            continue
        name = last[fix].removeprefix(f"{upstream}/")
        if name in names and last[fix] == f"{upstream}/{name}" and \
                old not in found.get(name, []):
            found.setdefault(name, []).append(old)
    said_gone = {event.get(RENAMED_FROM) if event.get("event") == RENAMED else
                 event.get("patch") for event in history if event.get("upstream") == upstream
                 and event.get("event") in (RENAMED, *DEPARTURE_EVENTS)}
    headers: dict[str, set[str]] = {}
    deleted_dir = project.series_dir(upstream) / "deleted"
    for was in [w for w in left if w not in said_gone]:
        # The headers the record keeps (an export's own, `quilt delete -r` having taken its
        # file out of DIR), and the file's in DIR where it is as the export wrote it.
        digests = set(recorded_headers.get(was, []))
        try:
            data = quilt_file_bytes(folder / was)
            if data is not None and _sha256(data) in exported[was]:
                digests.add(kept_header_digest(parse_patch_file(data, str(folder / was))))
        except (OSError, PatchforgeError):
            pass  # (not the export's file: nothing it tells)
        if digests and not _deleted_with(deleted_dir, was, digests):
            headers[was] = digests
    for name in names:
        if name not in found and headers:
            mine = kept_header_digest(project.read_patch(upstream, name))
            found[name] = [was for was, digests in headers.items() if mine in digests]
    claimed = [old for olds in found.values() for old in olds]
    return {name: olds[0] for name, olds in found.items()
            if len(olds) == 1 and claimed.count(olds[0]) == 1}


def _deleted_with(deleted_dir: Path, name: str, digests: set[str]) -> bool:
    """True when deleted/ keeps a fix of `name` (as `delete` names it there: `name`, or
    `name` with a number) whose header is one of `digests` (kept_header_digest): the fix the
    export wrote as `name` was deleted in the series, not renamed."""
    stem = name.removesuffix(".patch")
    for path in sorted(deleted_dir.iterdir()) if deleted_dir.is_dir() else []:
        if path.name != name and not (path.name.startswith(f"{stem}.") and path.name.endswith(
                ".patch") and path.name[len(stem) + 1:-len(".patch")].isdigit()):
            continue
        try:
            data = read_no_link(path)
            if kept_header_digest(parse_patch_file(data, str(path))) in digests:
                return True
        except (OSError, PatchforgeError):
            continue  # (a link or a file that does not parse: nothing it tells)
    return False


def _changed_since_export(project: Project, upstream: str, name: str, mine: bytes,
                          recorded: list[str], into: set[str]) -> bool:
    """Whether the series' patch `name` (its bytes `mine`) is neither what the export wrote
    (`recorded`: as written, or with its diff written for GNU patch) nor what an import took
    back into it (`into`): changed in the series since (edit + refresh, a git pull, a
    rebase)."""
    patch = project.read_patch(upstream, name)
    exported = mine[:len(mine) - len(patch.diff)] + for_gnu_patch(patch.diff)
    return _sha256(mine) not in recorded and _sha256(exported) not in recorded and \
        _sha256(mine) not in into


def _base_moved_only(patch: PatchFile, recorded: list[str], bases: set[str],
                     store: UpstreamStore, paths: tuple[str, ...]) -> bool:
    """Whether the series' `patch` is what the export wrote (`recorded`: as written, or with
    its diff written for GNU patch) but for its `Base`, which was one of `bases` then (a
    rebase to a release that changed none of its files moves the pin alone), and upstream
    changed none of `paths` (quilt's patch's files) between that pin and the new `Base`: no
    change of the fix that quilt's could lose, nor one of upstream's quilt's diff, made on
    the older tree, would be carried onto unjudged (upstream's own copy of quilt's line
    merged in a second time)."""
    new_base = (patch.get("Base") or "").strip()
    for base in bases - {""}:
        moved = patch.with_field("Base", base)
        data = moved.to_bytes()
        exported = data[:len(data) - len(moved.diff)] + for_gnu_patch(moved.diff)
        if _sha256(data) in recorded or _sha256(exported) in recorded:
            if base == new_base or not paths:
                return True
            try:
                return store.read_blobs(base, list(paths)) == \
                    store.read_blobs(new_base, list(paths))
            except StoreError:
                return False  # a pin the store cannot read: not known unchanged, refused
    return False


def _rebased_only(project: Project, store: UpstreamStore, upstream: str, pin, name: str,
                  mine: PatchFile, quilts: PatchFile, recorded: list[str], export_pin: str,
                  quilts_below: Callable[[], list[tuple[str, PatchFile]]]) -> bytes | None:
    """The diff on the pin of quilt's version of `name` (`quilts`, made on the export's pin),
    where the one change of the series' patch (`mine`) since the export is a rebase's: its
    header but `Base`, and its change, what the export wrote or an import took back
    (`recorded`: their sha256), the diff written
    again on the new pin because upstream changed its files (an `index` line, line numbers,
    context). Told by the export's file made again: the series' patch judged back from the
    pin onto quilt's tree below it (`quilts_below()`: quilt's patches before it, as its
    series lists them, on the export's pin), as a rebase judges a fix, and git's diff of it,
    which must be the file the export wrote, byte for byte; and that file judged onto the pin
    again must give the series' patch. Then quilt's version is judged from the export's pin
    onto the new one as a rebase judges a fix (the one judge: a line upstream added there
    itself is a stop, not a second copy). None where anything of this is not so (a fix that
    creates, deletes or renames a file; fixes for some profiles only before it; a change the
    judge does not move): refused as changed on both sides."""
    from patchforge.judge import SeriesJudge, Target
    from patchforge.store.diff import make_diffs

    base = (quilts.get("Base") or "").strip()
    names = project.patch_names(upstream)
    if not base or base != export_pin or base == pin.commit or \
            (mine.get("Base") or "").strip() != pin.commit or name not in names:
        return None
    for patch in (mine, quilts):
        if not patch.file_patches or any(
                fp.is_new or fp.is_delete or fp.is_copy or fp.is_binary
                or fp.old_path != fp.new_path for fp in patch.file_patches):
            return None
    prefix = [(n, project.read_patch(upstream, n)) for n in names[:names.index(name)]]
    if profile_bases_differ([*prefix, (name, mine)], list(project.config.profiles)):
        return None
    paths = sorted({fp.path for patch in (mine, quilts) for fp in patch.file_patches})

    def judge(patch: PatchFile, start: SeriesState, old: list, source: str, target: str):
        judging = SeriesJudge(store, Target(upstream, source, target, pin.label, None),
                              labels=("series", "export", f"quilt {name}"))
        judging.pass_old(old)
        judging.start_after(start)
        return judging.decide(name, patch)

    try:
        below = quilts_below()  # (parsed here: one quilt's file that does not parse tells no)
        tree = apply_series(lambda wanted: store.read_blobs(base, wanted), below, strict=False)
        on_pin = apply_series(lambda wanted: store.read_blobs(pin.commit, wanted), prefix,
                              strict=False)
        if not all(o.ok for o in tree.outcomes) or not all(o.ok for o in on_pin.outcomes):
            return None
        back = judge(mine, tree, prefix, pin.commit, base)
        if back.outcome != "applies":
            return None
        exported = mine.with_field("Base", base).with_remade_diff(make_diffs([back.changes])[0])
        data = exported.to_bytes()
        as_exported = data[:len(data) - len(exported.diff)] + for_gnu_patch(exported.diff)
        if _sha256(data) not in recorded and _sha256(as_exported) not in recorded:
            return None
        series = _copied(on_pin)
        apply_series(lambda wanted: store.read_blobs(pin.commit, wanted), [(name, mine)],
                     strict=False, state=series, max_fuzz=0)
        moved = judge(exported, on_pin, below, base, pin.commit)
        theirs = judge(quilts.with_field("Base", base), on_pin, below, base, pin.commit)
    except (StoreError, PatchforgeError):
        return None
    if not series.outcomes[-1].ok or moved.outcome != "applies" or \
            theirs.outcome != "applies":
        return None
    if any(moved.after.get(path, series.current.get(path)) != series.current.get(path)
           for path in paths):
        return None  # the series' patch is not where the rebase moves the export's
    return make_diffs([theirs.changes])[0]


def _exported_as(record: dict[str, list[str]] | None, data: bytes,
                 names: list[str]) -> str | None:
    """The one of `names` whose file the export wrote as `data`, byte for byte (a recorded
    export of it), or None."""
    for name in names:
        if _sha256(data) in (record or {}).get(name, []):
            return name
    return None


def _refuse_renamed_older(project: Project, upstream: str, was: str, file_name: str,
                          series_path: Path, line: int, profile: str | None) -> None:
    """Quilt's new `file_name` is the series' `was` as the export wrote it, which quilt no
    longer lists, and the series changed `was` since: a `quilt rename` of the older patch.
    Taken as a new fix, `was` (with --delete) would go under deleted/ with the series' change
    and quilt's older copy would stand in its place; refused either way, as a patch changed
    on both sides is, with the way on that keeps the change."""
    old, new = project.patch_word(upstream, was), file_name.removesuffix(".patch")
    # The export that writes this very series file again (DIR/series, as the record says).
    export = f"patchforge export --quilt {shlex.quote(str(series_path.parent))}" + (
        f" --upstream {shlex.quote(upstream)}" if len(project.upstream_names()) > 1 else "") + (
        f" --profile {shlex.quote(profile)}" if profile is not None else "")
    raise InputError(
        f"{file_name} is {was} as `export --quilt` wrote it, before the {upstream} series "
        f"changed it (`quilt rename`?): nothing was taken back, with or without --delete, "
        f"since quilt's older copy would become a new fix and {was}, with the series' "
        f"change, would leave the series (kept only under series/{upstream}/deleted/)",
        path=str(series_path), line=line,
        hint=f"rename it alike in the series, which keeps the change: `patchforge rename {old} "
             f"{new}`, then `{export}` gives quilt the series' version")


def _deletions_said(project: Project) -> set[tuple]:
    """(upstream, patch, detail) of each deletion the history records."""
    from patchforge.ledger import history_path, read_history

    if not history_path(project).exists():
        return set()
    return {(e.get("upstream"), e.get("patch"), e.get("detail")) for e in read_history(project)
            if e.get("event") == "deleted"}


def _both_changed_way(project: Project, upstream: str, name: str, source: Path) -> str:
    """The way on for a patch changed both in quilt and in the series since the export. The
    import takes quilt's patch only where the series' is the export's, or quilt's is the
    series' byte for byte, so "make one of them hold both" led back to the same refusal
    unless the two ended the same: the series' patch is made to hold both, then copied over
    quilt's."""
    ours = project.patch_path(upstream, name)
    return (f"compare {source} with {ours}; make the series' patch hold both changes "
            f"(`patchforge edit {shlex.quote(name.removesuffix('.patch'))}`, change the files as "
            "quilt's patch does, `patchforge refresh`), then in quilt's tree (keep a copy of quilt's "
            "file first: the copy replaces it): `quilt pop -a`, "
            f"`cp {shlex.quote(str(ours))} {shlex.quote(str(source))}`, and run this again")


def _same_but_date(patch: PatchFile, data: bytes) -> bool:
    """True when `data` is `patch`'s bytes but for its Last-Update (written on another day)."""
    try:
        there = parse_patch_file(data, "<patch>")
    except PatchforgeError:
        return False
    date = there.get("Last-Update")
    return (patch.with_field("Last-Update", date) if date is not None and
            patch.get("Last-Update") is not None else patch).to_bytes() == data


def _kept_aside(path: Path, deleted_dir: Path) -> bool:
    """True when the unlisted patch file `path` is kept, byte for byte, under deleted/ (a run
    of --delete a kill cut short after it unlisted the patch, before it removed the file).
    Read as the stack's own file (read_no_link): a link, a FIFO or a directory there is no
    file a --delete leaves, and is never read (through a link, whatever it names outside the
    project was taken for the leftover and the link removed; a FIFO blocked the import)."""
    try:
        data = read_no_link(path)
    except (OSError, PatchforgeError):
        return False
    return (deleted_dir / aside_name(deleted_dir, path.name, data)).is_file()


def _changed_patch(mine: PatchFile, quilt: PatchFile, upstream: str, pin: str,
                   kept: Sequence[str] = ()) -> PatchFile:
    """The series' patch as quilt changed it: quilt's header (quilt keeps the header it was
    given; `quilt header -e` edits it), or the series' when quilt's has none at all (a tool
    that wrote the diff alone), or, quilt's a header of words alone, the series' fields with
    those words as its description; with quilt's diff, made again later on the new base.
    `kept` are fields quilt's file never had (_filled_before): where quilt's header lacks
    one, the series' value stays (`quilt header -r` replacing a header the import completed
    deletes nothing quilt's user saw, so it deletes nothing)."""
    quilt = _stgit_round_trip(quilt, mine) or quilt
    words = quilt.header_read_as_text()
    stgit = _from_stgit_export(quilt)  # (quilt itself, unless its header is StGit's)
    if stgit is not quilt:
        # The header `stg export` writes (its subject, a `From:` line, the rest of the
        # message: a DIR `import quilt` took from StGit, then quilt refreshed there), read as
        # `import quilt` read it: the subject the Description, the person the Author, the
        # rest the description. Read as words alone, the subject and the `From:` line were
        # the description's first lines, the subject said twice. The series' fields stay as
        # written where they say the same (a Description folded over lines under the same
        # subject, an Author naming that person among others).
        subject, person = stgit.get("Description") or "", stgit.get("Author") or ""
        head = mine
        if ((mine.get("Description") or "").strip().splitlines() or [""])[0].strip() \
                != subject:
            head = head.with_field("Description", subject)
        if not any(person in value for value in mine.get_all("Author")):
            head = head.with_field("Author", person)
        head = head.with_description(stgit.description).with_diff(quilt.diff)
    elif not quilt.preamble and not words.fields and words.description.strip():
        # Words alone (`quilt header -r` as quilt's users write a header: a subject, a
        # paragraph): they are the fix's description now, in place of the series' words, and
        # their first line its Description (as _new_patch gives a new fix one). The fields
        # they never speak of (Author, Upstream-Status, Profiles) stay: read as deleted, every
        # such edit made a fix lint refuses, and taken as no header at all (a diff alone),
        # the words quilt's user wrote were dropped unsaid.
        subject = words.description.decode("utf-8", "replace").strip().splitlines()[0]
        head = mine.with_field("Description", subject.strip()).with_description(
            words.description).with_diff(quilt.diff)
    else:
        head = quilt if quilt.fields else mine.with_diff(quilt.diff)
    if quilt.fields and head is quilt:
        for name in kept:
            field_name, _, line = name.partition(": ")
            if line:
                # One line of a repeatable field an import added (a folded fix's `Keeps`):
                # quilt's file, written before, lacks it though it has others of its name.
                if line in mine.get_all(field_name) and line not in head.get_all(field_name):
                    head = head.with_field_added(field_name, line)
                continue
            value = mine.get(name)
            if quilt.get(name) is None and value is not None:
                head = head.with_field(name, value)
    if (head.get("Upstream") or "").strip() != upstream:
        head = head.with_field("Upstream", upstream)
    return head.with_field("Base", pin)


# The author line `stg export` writes under the subject: `From: Name <email>`, a blank line.
_STGIT_FROM = re.compile(rb"From: (?P<author>[^\n<>]*<[^\s<>@]+@[^\s<>]+>)[ \t]*\n\n")


def _stgit_round_trip(quilt: PatchFile, mine: PatchFile) -> PatchFile | None:
    """quilt's file as `stg export` writes a patch of `export --quilt` that `stg import -s`
    took in (StGit on DIR: `stg import -s DIR/series`, work, `stg export -d DIR`), with the
    series' header it carries put back; None for any other file. StGit made the header's
    first line (`Description: X`) the commit's subject, took an `Author:` line out as the
    commit's author, and kept the other fields as the message's next paragraph, so `stg
    export` writes `Description: X`, a blank line, `From: P`, a blank line, the fields, a
    blank line, the words. Read as it stands, the fix kept its Description alone, the other
    fields and `From:` went into its words, and its `Author` was lost.

    Only that shape: one field, the subject; the `From:` paragraph; a paragraph of fields
    holding the `Upstream` and `Base` every patch of a series has. The Author is P, or the
    series' own `Author` lines where one of them names P (StGit keeps one author of
    several)."""
    if quilt.preamble or len(quilt.fields) != 1 or \
            quilt.fields[0].name.lower() not in ("description", "subject"):
        return None
    found = _STGIT_FROM.match(quilt.description)
    if found is None:
        return None
    person = found["author"].decode("utf-8", "replace").strip()
    fields, _, words = quilt.description[found.end():].partition(b"\n\n")
    authors = [f.raw for f in mine.fields if f.name.lower() in ("author", "from")]
    if not any(person in f.value for f in mine.fields if f.name.lower() in ("author", "from")):
        authors = []
    head = quilt.fields[0].raw + (b"".join(authors) or found["author"].join(
        (b"Author: ", b"\n"))) + fields + b"\n" + (b"\n" + words if words else b"")
    try:
        back = parse_patch_file(head + quilt.separator + quilt.diff, quilt.source)
    except PatchforgeError:
        return None
    # (The paragraph read whole as fields: its words, had it any, would be the description.)
    if back.description != words or back.get("Upstream") is None or back.get("Base") is None:
        return None
    return back


# Fields every take sets anew (the pin, the upstream, the day): never carried over.
_SET_ON_EACH_TAKE = ("base", "upstream", "last-update")
# The fields _new_patch may add, read as quilt never had them where an earlier version's
# record of a new patch does not say which it added.
_NEW_PATCH_FIELDS = ["Description", "Author", "Upstream-Status", "Profiles"]


def _filled(made: PatchFile, quilt: PatchFile) -> list[str]:
    """The fields of `made` (a patch taken back from quilt's file) that quilt's header
    (`quilt`) lacks, but those every take sets again; a repeatable field's (`Keeps`, `Bug`:
    a folded fix's carried in, _with_folded) as `Name: value`, each line quilt's header
    lacks, which a name alone would not bring back whole."""
    return list(dict.fromkeys(
        f"{f.name}: {f.value}" if _carried_with_fold(f.name) else f.name for f in made.fields
        if f.name.lower() not in _SET_ON_EACH_TAKE and (
            f.value not in quilt.get_all(f.name) if _carried_with_fold(f.name)
            else quilt.get(f.name) is None)))


def _filled_before(took: dict[str, dict[str, dict]], name: str, mine: bytes) -> list[str]:
    """The fields the import that wrote the series' patch `name` (its bytes `mine`) gave it
    that quilt's file did not have (the record's "filled"): quilt's user never saw them, so
    quilt's header lacking them now is no deletion. Empty when no import wrote `mine`."""
    for entry in took.get(name, {}).values():
        if entry.get("into") == _sha256(mine):
            listed = entry.get("filled")
            if isinstance(listed, list) and all(isinstance(n, str) for n in listed):
                return listed
            return _NEW_PATCH_FIELDS if entry.get("new") else []
    return []


def _new_patch(quilt: PatchFile, file_name: str, upstream: str, pin: str,
               profile: str | None) -> PatchFile:
    """A patch `quilt new` made: its header (often none) with the fields a fix of the series
    needs and lint asks for. A Description quilt's header lacks is the first line of its free
    text (`quilt header -e`), else the patch's name; one `stg export` wrote has its subject and
    `From:` person as Description and Author, as `import quilt` reads it. Made in the tree of
    one profile's series (`export --quilt --profile P`), it is for that profile (`Profiles: P`)
    unless its header says otherwise: it was made and tried there only."""
    # `enum: keep in step with C++`: its subject
    patch = _from_stgit_export(quilt).header_read_as_text()
    if profile is not None and patch.get("Profiles") is None:
        patch = patch.with_field("Profiles", profile)
    if not (patch.get("Description") or "").strip():
        text = patch.description.decode("utf-8", "replace").strip().splitlines()
        patch = patch.with_field("Description",
                                 text[0].strip() if text else file_name.removesuffix(".patch"))
    if not ((patch.get("Author") or "").strip() or (patch.get("Origin") or "").strip()):
        patch = patch.with_field("Author", default_author())
    if patch.get("Upstream-Status") is None and not patch.standing:
        patch = patch.with_field("Upstream-Status", "Pending")
    patch = patch.with_field("Upstream", upstream).with_field("Base", pin)
    return patch.with_field("Last-Update", today())


def _placed_among_several(patch: PatchFile, state: SeriesState, outcome) -> list:
    """The hunks of `patch` placed at an offset (outcome: its trial application on `state`'s
    files) that had other places their lines match, where nearness chose among them
    (apply.hunks.RepeatedPlace each); empty when there are none."""
    found = []
    for fp, application in zip(patch.file_patches, outcome.files):
        source = fp.old_path if fp.old_path is not None else fp.new_path
        old = state.current.get(source) if source is not None else None
        if old is not None and application.ok:
            found += repeated_places(old, fp, application)
    return found


def _made_again(project: Project, store: UpstreamStore, upstream: str, pin: str,
                patches: list[tuple[str, PatchFile]], taken: dict[str, PatchFile],
                moved: set[str], where: dict[str, tuple[Path, int, int]],
                series_path: Path, ambiguous: dict[str, list], made_on: dict[str, str],
                label: str, older_in_quilt: set[str]) -> dict[str, PatchFile]:
    """Each patch of `taken` with its diff made again on its base in `patches` (the new
    series): quilt's diff applied there without fuzz, then git's diff of the result, modes
    carried from the series' own patch. A diff that does not apply there is refused, naming
    the quilt file and the hunk: quilt made it on another tree (a profile's patch that quilt's
    one stack put on top of another profile's).

    quilt made the diff on its one stack (`where`: the patches quilt lists, in its order),
    which holds patches outside the patch's base where the series has patches for some
    profiles only: a fix for every profile above a gfx942 fix in the tree of `export --quilt
    --profile gfx942`. Where that tree's files differ from the base's, quilt's diff is applied
    on that tree and its change carried back onto the base as apply.chains carries a patch
    between chains (git's 3-way merge of the tree's file before it, the base's, and the tree's
    file with it); a change that does not carry back, or that carried into the tree again is
    not what quilt's tree holds, is refused naming the quilt file.

    A patch quilt did not change, in `moved` (a patch before it changed or the order did),
    whose lines only moved (it applies without fuzz, at an offset) is made again too, as a
    rebase would: quilt said "Hunk #1 succeeded at 24 (offset 2 lines)" and kept it, which
    `status` calls an offset and `lint` a diff that is not byte-stable. One that needs fuzz is
    left as it is, for `status` to say; so is one whose lines match at several places, put
    in `ambiguous` ({name: [RepeatedPlace]}) for the command to say.

    `older_in_quilt`: the patches quilt did not change whose file in quilt's directory is an
    older version than the series' (changed in the series since the export): a refusal of a
    patch above one of them names it, as the tree quilt made the diff on."""
    configured = list(project.config.profiles)

    def read_base(paths):
        return store.read_blobs(pin, paths)

    def base_mode(path: str) -> str | None:
        entry = store.entry(pin, path)
        return entry[0] if entry else None

    def fill(state: SeriesState, paths) -> None:
        wanted = [p for p in paths if p not in state.current]
        for path, data in (read_base(wanted) if wanted else {}).items():
            state.base[path] = data
            state.current[path] = data

    own = [profile_set(patch, configured) for _, patch in patches]
    # The base of each profile set's patches (apply.chains.base_state, walked as one).
    states = {chosen: SeriesState() for chosen in dict.fromkeys(own)}
    # The files of quilt's one stack: each patch quilt lists as its file has it (quilt's diff,
    # or the series' as exported), in quilt's order, applied as quilt pushes (with fuzz).
    tree = SeriesState()
    in_tree: set[int] = set()
    made: dict[str, PatchFile] = {}
    for position, ((name, patch), mine) in enumerate(zip(patches, own)):
        state = states[mine]
        paths = sorted(patch_paths(patch))
        fill(state, paths)
        before = dict(state.current)
        if name in taken or name in moved:
            state = states[mine] = _one_made_again(
                project, upstream, pin, name, patch, state, tree, taken, where, series_path,
                made, ambiguous, read_base, base_mode, fill, made_on.get(name, ""), label,
                [n for i, (n, below) in enumerate(patches[:position]) if n in older_in_quilt
                 and counts_for(own[i], mine) and patch_paths(below) & set(paths)],
                lambda path: (profiles_note(mine),
                              met_in_chain(patches, own, in_tree, position, path),
                              _not_in_tree(patches, own, where, position, path),
                              bool(configured)))
        else:
            apply_series(read_base, [(name, patch)], strict=False, state=state,
                         allow_zero_context=True)
        if state.outcomes[-1].ok:
            # Into the base of each later set it counts for, as the overlays carry it.
            paths = sorted({*paths, *patch_paths(made.get(name, patch))})
            fill(state, paths)
            for path in paths:  # a path read only now was the base's before it
                before.setdefault(path, state.base.get(path))
            for chosen, chain in states.items():
                if chosen != mine and counts_for(mine, chosen):
                    fill(chain, paths)
                    carry_into(chain, name, paths, before, state)
        if name in where:
            in_tree.add(position)
            apply_series(read_base, [(name, patch)], strict=False, state=tree,
                         allow_zero_context=True)
    return made


def _one_made_again(project: Project, upstream: str, pin: str, name: str, patch: PatchFile,
                    state: SeriesState, tree: SeriesState, taken: dict[str, PatchFile],
                    where: dict[str, tuple[Path, int, int]], series_path: Path,
                    made: dict[str, PatchFile], ambiguous: dict[str, list], read_base,
                    base_mode, fill, made_on: str, label: str, older_below: list[str],
                    met) -> SeriesState:
    """_made_again of the one patch `name` on its base `state` (`tree`: quilt's stack below
    it): the base's state with it, its new version put in `made` when its diff changes.
    `older_below`: the patches below it touching its files that quilt's directory holds in
    an older version than the series (_made_again's `older_in_quilt`)."""
    paths = sorted(patch_paths(patch))
    before = dict(state.current)
    modes_before = {fp.old_path: state.mode(fp.old_path, base_mode)
                    for fp in patch.file_patches if fp.old_path}
    fill(tree, paths)
    trial = None
    if name in taken and any(tree.current.get(p) != state.current.get(p) for p in paths):
        trial = _carried_back(read_base, name, patch, state, tree, paths, where, met,
                              series_path)
    if trial is None:
        trial = _copied(state)
        apply_series(read_base, [(name, patch)], strict=False, state=trial, max_fuzz=0,
                     allow_zero_context=True)
    outcome = trial.outcomes[-1]
    several = _placed_among_several(patch, state, outcome) \
        if name not in taken and outcome.ok and outcome.worst != "exact" else []
    if several:
        ambiguous[name] = several
    if name not in taken and (not outcome.ok or outcome.worst == "exact" or several):
        # Needs fuzz, or fails (refused later, by name), or is where it was; or its lines
        # are at several places (a twin function) and the offset only took the nearest, as
        # quilt did: made again there, the fix moved into the twin with every check quiet.
        # Left as it is and said (`ambiguous`); `status` and `lint` say it too, as after
        # `refresh`.
        apply_series(read_base, [(name, patch)], strict=False, state=state,
                     allow_zero_context=True)
        return state
    if not outcome.ok:
        from patchforge.ops.lint import _failed_hunks

        source, line, _ = where[name]
        failed = f"{name}: quilt's diff does not apply on its base in the new series " \
                 f"({_failed_hunks(outcome)})"
        if made_on and made_on != pin and name not in project.read_series(upstream).names:
            # A patch new in quilt, made in the export's tree: as below, its context is the
            # old pin's, and there is no fix of the series to make the change in; it is made
            # a new fix on the series as it is now. quilt's file goes out of DIR first, so
            # that the export that follows (for quilt to go on from the new pin) writes the
            # new fix's file where it was.
            directory = series_path.parent
            profiles = (patch.get("Profiles") or "").strip()  # `--profile P`'s export: P's
            raise InputError(
                f"{name}: quilt made it on {upstream} at {made_on[:12]} (the pin "
                f"`export --quilt` wrote {directory} at), and the series moved to {label} "
                f"({pin[:12]}) since: quilt's diff does not apply there "
                f"({_failed_hunks(outcome)}), and `quilt refresh` in that tree gives it "
                "again; nothing was taken back", path=str(source),
                hint=f"move {source} out of {directory} (keep it) and take its line out of "
                     f"{series_path} (line {line}); run this again (quilt's other changes "
                     f"are taken back); then make quilt's change a new fix on {label}: "
                     f"`patchforge new {shlex.quote(name.removesuffix('.patch'))} "
                     + " ".join(f"--file {shlex.quote(path)}" for path in paths)
                     + (" --create" if any(fp.is_new for fp in patch.file_patches) else "")
                     + (f" --profiles {shlex.quote(profiles)}" if profiles else "")
                     + "`, change the files as the kept copy does, `patchforge refresh`, "
                       f"and `patchforge export --quilt {shlex.quote(str(directory))}` for "
                       f"quilt to go on from {label}")
        if made_on and made_on != pin:
            # quilt's tree is the export's: its context is the old pin's, so `quilt push` and
            # `quilt refresh` there give the same diff again. The change is to be made on the
            # series as it is now.
            patch_word = project.patch_word(upstream, name)
            raise InputError(
                f"{failed}: quilt made it on {upstream} at {made_on[:12]} (its Base:, the pin "
                f"when `export --quilt` wrote it), and the series moved to {label} "
                f"({pin[:12]}) since; nothing was taken back", path=str(source),
                hint=f"keep a copy of {source}; copy {project.patch_path(upstream, name)} "
                     "over it and run this again (quilt's other changes are taken back); "
                     f"then `patchforge edit {patch_word}`, change the files as the copy "
                     f"does, `patchforge refresh`, and `patchforge export --quilt "
                     f"{source.parent}` again for quilt to go on from {label}")
        if older_below:
            # quilt's tree holds the older version of a patch below it, on which quilt made
            # the diff: `quilt push` + `quilt refresh` there give the same diff again. The
            # series' version, copied into quilt's directory, is the tree to make it on.
            one = len(older_below) == 1
            files = [(project.patch_path(upstream, n), where[n][0]) for n in older_below]
            raise InputError(
                f"{failed}: {', '.join(older_below)}, below it, changed in the {upstream} "
                f"series since `export --quilt` wrote {'it' if one else 'them'}, and quilt "
                f"made this diff on the older version{'' if one else 's'}, which "
                f"{series_path.parent} still holds; nothing was taken back", path=str(source),
                hint="in quilt's tree: `quilt pop -a`, "
                     + ", ".join(f"`cp {shlex.quote(str(mine))} {shlex.quote(str(theirs))}`"
                                 for mine, theirs in files)
                     + " (the series' version), `quilt push "
                     + shlex.quote(source.relative_to(series_path.parent).as_posix())
                     + "` (where it does not apply: push it with -f, resolve the rejects), "
                       "`quilt refresh`, then run this again")
        raise InputError(f"{failed}; nothing was taken back",
                         path=str(source),
                         hint=f"`quilt push` it in the tree it was made for and `quilt "
                              f"refresh` it, or check its place in {series_path}:{line}")
    if name in taken:
        _refuse_moved_only(project, upstream, name, patch, state, trial, paths, read_base,
                           where)
    state = trial
    old_modes, renames = _kept_from_series(project, upstream, name)
    # quilt writes a rename the series' patch made as a deletion and a creation: one
    # file again, as the patch had it (git's similarity score kept).
    pairs = {fp.old_path: fp.new_path for fp in patch.file_patches if fp.is_delete}
    created = {fp.new_path for fp in patch.file_patches if fp.is_new}
    joined = {old: new for old, new in renames.items()
              if pairs.get(old) is None and old in pairs and new in created}
    changes = []
    for fp in patch.file_patches:
        if fp.is_new and fp.new_path in joined.values():
            continue
        old_path, new_path = fp.old_path, fp.new_path
        if fp.is_delete and old_path in joined:
            new_path = joined[old_path]
        old = before.get(old_path, state.base.get(old_path)) if old_path else None
        new = state.current.get(new_path) if new_path else None
        mode_old = fp.old_mode or (modes_before.get(old_path) if old_path else None) \
            or old_modes.get(new_path or "") or "100644"
        mode_new = fp.new_mode or old_modes.get(new_path or "") or mode_old
        changes.append(FileChange(old_path, new_path, old, new, mode_old, mode_new,
                                  copy=fp.is_copy))
    if not changes and _has_change(project, upstream, name):
        source, line, _ = where[name]
        raise InputError(f"{name}: quilt's patch holds no change, and taken back the fix "
                         "would be gone; nothing was taken back", path=str(source),
                         hint=_drop_emptied_hint(name))
    diff = make_diff(changes)
    if diff != patch.diff:
        made[name] = patch.with_remade_diff(diff) if name in taken else \
            patch.with_remade_diff(diff).with_field("Base", pin)
    return state


def _drop_emptied_hint(name: str) -> str:
    """The way to drop a fix quilt emptied, in quilt's own tree first: its series line taken
    out by hand leaves the patch applied there and unlisted ("The series file no longer
    matches the applied patches"), and `quilt delete` takes an applied patch only from the
    top."""
    quoted = shlex.quote(name)
    return (f"to drop the fix, in quilt's tree: `quilt pop {quoted}`, `quilt delete {quoted}`, "
            f"`quilt push -a` (just `quilt delete {quoted}` where it is not applied), then run "
            "this again with --delete (it is kept under deleted/)")


def _changed_lines(patch: PatchFile) -> dict[tuple[str, bytes], int]:
    """Each line `patch`'s diff adds or takes out, with its file's path, counted: what its
    change is, whatever its context and line numbers."""
    counted: dict[tuple[str, bytes], int] = {}
    for fp in patch.file_patches:
        for hunk in fp.hunks:
            for line in hunk.lines:
                if line[:1] in (b"+", b"-"):
                    key = (fp.path, line.rstrip(b"\r\n"))
                    counted[key] = counted.get(key, 0) + 1
    return counted


def _refuse_moved_only(project: Project, upstream: str, name: str, patch: PatchFile,
                       state: SeriesState, trial: SeriesState, paths: list[str], read_base,
                       where: dict[str, tuple[Path, int, int]]) -> None:
    """Refuse quilt's version of the series' patch `name` when it makes the very change the
    series' patch makes (the same lines added and taken out) somewhere else on its base: a
    change quilt's tree holds in another place than the overlays (GNU patch put a hunk whose
    context repeats in the repeated block nearest its line numbers, in a stack exported
    before the export wrote the overlays' line numbers, or a hand-moved hunk), taken back, it
    would move the fix into that place in every profile with every check green.
    `state` is the base without it, `trial` the base with quilt's change. The series' place
    there is its place in the series carried onto that base (`_series_place`), never the one
    nearness finds: where quilt's earlier changes moved its lines, that is the copy `quilt
    push` took too, and quilt's change there counted as not moved."""
    if name not in project.patch_names(upstream):
        return
    mine = project.read_patch(upstream, name)
    same_change = _changed_lines(mine) == _changed_lines(patch)
    ours = _copied(state)
    apply_series(read_base, [(name, mine)], strict=False, state=ours, allow_zero_context=True)
    if not ours.outcomes[-1].ok:
        return
    doubted = _series_place(project, upstream, name, mine, state, ours, read_base, where)
    if not same_change:
        _refuse_changed_elsewhere(name, doubted, state, ours, trial, where)
        return
    moved = [p for p in paths if trial.current.get(p) != ours.current.get(p)]
    if moved:
        source, line = _section_of(where[name], moved[0])
        raise InputError(
            f"{name}: quilt's patch makes the series' change to {moved[0]} in another place "
            "than the series' patch has it (the same lines, added and taken out elsewhere: "
            "quilt's tree has it where another block repeats its context); nothing was taken "
            "back", path=source, line=line,
            hint="in quilt's tree, put the change back where the series has it and `quilt "
                 "refresh` it (or export the series again, `patchforge export --quilt DIR` "
                 "with `--profile` as before, and push it in quilt); to move the fix on "
                 f"purpose, `patchforge edit {project.patch_word(upstream, name)}` and "
                 "refresh it in the series")


def _refuse_changed_elsewhere(name: str, doubted: list[str], state: SeriesState,
                              ours: SeriesState, trial: SeriesState,
                              where: dict[str, tuple[Path, int, int]]) -> None:
    """Refuse quilt's version of `name`, a change of its own (other lines than the series'),
    when in a file where the series' place is one of several (`doubted`) it changes none of
    the lines the series' patch changes there: `quilt push` put the patch into another copy
    of its context and the fix was edited there (`y + 70` made `y + 71` in the twin); taken
    back, the fix would leave its function with every check green."""
    from patchforge.apply.hunks import file_changes

    for path in doubted:
        old, ours_new, quilts = (state.current.get(path), ours.current.get(path),
                                 trial.current.get(path))
        if old is None or ours_new is None or quilts is None:
            continue
        series_places = [(start, end) for start, end, _ in file_changes(old, ours_new)]
        quilt_places = [(start, end) for start, end, _ in file_changes(old, quilts)]
        if not quilt_places or any(start <= s_end and s_start <= end
                                   for start, end in quilt_places
                                   for s_start, s_end in series_places):
            continue
        source, line = _section_of(where[name], path)
        said = ", ".join(str(start + 1) for start, _ in quilt_places)
        ours_said = ", ".join(str(start + 1) for start, _ in series_places)
        raise InputError(
            f"{name}: quilt's patch changes {path} at line{'s' if len(quilt_places) > 1 else ''} "
            f"{said} of its base, none of the lines the series' patch changes (line"
            f"{'s' if len(series_places) > 1 else ''} {ours_said}), and the series' place "
            "there is one of several matching its context: `quilt push` may have put it into "
            "another copy, where it was edited; nothing was taken back", path=source,
            line=line,
            hint="in quilt's tree, make the change where the series has it and `quilt "
                 "refresh` it; to move the fix on purpose, `patchforge edit "
                 f"{name.removesuffix('.patch')}` and refresh it in the series")


def _series_place(project: Project, upstream: str, name: str, mine: PatchFile,
                  state: SeriesState, ours: SeriesState, read_base,
                  where: dict[str, tuple[Path, int, int]]) -> list[str]:
    """Put the series' patch `name` (`mine`, applied by nearness to `state`, quilt's new base
    for it, in `ours`) where it is in the series, not where nearness put it: where quilt's
    earlier changes moved its lines and its context is at several places (a twin function),
    nearness took the copy nearest its old line numbers, which `quilt push` took too. Its
    place in the series' own base is carried there by the line map, else git's merge
    (judge.carried_place); one neither decides is refused, naming the places, nothing taken
    back: whether quilt's change is at the series' place cannot be told. Returns the paths
    whose place was so carried."""
    from patchforge.apply.chains import base_state
    from patchforge.apply.hunks import apply_file_patch, unproven
    from patchforge.judge import carried_place
    from patchforge.store.diff import DEFAULT_LABELS

    old_base = None
    carried: list[str] = []
    for fp, application in zip(mine.file_patches, ours.outcomes[-1].files):
        source = fp.old_path if fp.old_path is not None else fp.new_path
        new = state.current.get(source) if source is not None else None
        if source is None or new is None or not application.ok or \
                application.content is None:
            continue
        repeated = unproven(repeated_places(new, fp, application), fp, new)
        if not repeated:
            continue
        if old_base is None:
            configured = list(project.config.profiles)
            names = project.patch_names(upstream)
            earlier = [(n, project.read_patch(upstream, n)) for n in names[:names.index(name)]]
            old_base = base_state(read_base, earlier, configured,
                                  profile_set(mine, configured), strict=False)
        if source not in old_base.current:  # no earlier patch changes it: the pin's
            old_base.current.update(read_base([source]))
        old = old_base.current.get(source)
        placed = None
        if old is not None:
            theirs = apply_file_patch(old, fp)
            if theirs.ok and theirs.content is not None:
                placed, undecided = carried_place(old, new, fp, fp, theirs, application,
                                                  repeated, DEFAULT_LABELS)
                repeated = undecided or repeated
        if placed is None:
            quilt_file, line = _section_of(where[name], source)
            raise InputError(
                f"{name}: where its change goes on the base quilt's earlier patches leave is "
                "ambiguous (" + "; ".join(r.describe() for r in repeated) + "), and no line "
                "map of the series' file to that one decides it: whether quilt's change is "
                "at the series' place cannot be told; nothing was taken back",
                path=quilt_file, line=line,
                hint=f"take quilt's other changes back first (leave {name} as exported), "
                     f"then `patchforge edit {project.patch_word(upstream, name)}` and refresh it "
                     "in the series")
        target = fp.new_path if fp.new_path is not None else source
        ours.current[target] = placed
        carried.append(target)
    return carried


def _carried_back(read_base, name: str, patch: PatchFile, state: SeriesState,
                  tree: SeriesState, paths: list[str], where: dict[str, tuple[Path, int, int]],
                  met, series_path: Path) -> SeriesState | None:
    """The base's state (`state`) with the change quilt's diff of `name` makes in quilt's
    tree (`tree`, whose files `paths` differ from the base's), carried back by git's 3-way
    merge (apply.chains.carry_files from the tree to the base). None when quilt's diff does
    not apply on the tree as it is rebuilt here (quilt's tree was another: the caller tries
    the base itself). Refused (InputError naming the quilt file) when the change does not go
    onto the base, or when the result carried into quilt's tree again (as the overlays of
    its profile carry it) is not what quilt's tree holds: the fix would not be the one made."""
    in_tree = _copied(tree)
    apply_series(read_base, [(name, patch)], strict=False, state=in_tree, max_fuzz=0,
                 allow_zero_context=True)
    outcome = in_tree.outcomes[-1]
    if not outcome.ok:
        return None
    files, stuck = carry_files(paths, tree.current.get, in_tree.current.get, state.current.get)
    why = "does not carry back onto the fix's own base"
    for path in paths if stuck is None else ():
        # Carried into quilt's tree again (as the overlays of its profile will carry it), the
        # result must be the file quilt's tree holds, or the fix taken back is another one.
        ok, again = carry_file(state.current.get(path), files[path], tree.current.get(path))
        if not ok or again != in_tree.current.get(path):
            stuck = path
            why = ("taken back onto the fix's own base, would not give quilt's tree again "
                   "where the overlays carry it there")
            break
    if stuck is not None:
        note, below, missing, profiles = met(stuck)
        source, line = _section_of(where[name], stuck)
        if below or (profiles and not missing):
            who = ", ".join(below) or "patches of another profile"
            raise InputError(
                f"{name} ({note}): quilt's change to {stuck} {why}: it meets lines that "
                f"{who} changed below it in quilt's tree, which its base does not hold; "
                "nothing was taken back", path=source, line=line,
                hint=f"in quilt, make {name} leave those lines alone and `quilt refresh` it; "
                     "or, if the change is for that tree's profile alone, make it a fix of "
                     "its own (`quilt new`) there")
        # Patches of its base that quilt's series does not list (added to the series after
        # the export, or the fix itself under the name a rename gave it): the lines they
        # changed are in the base and not in the tree quilt made the diff on.
        who = ", ".join(missing) or "earlier patches of the series"
        raise InputError(
            f"{name}: quilt's change to {stuck} {why}: it meets lines that {who} changed "
            f"in its base, and {'it is' if len(missing) == 1 else 'they are'} in the series "
            f"but not in quilt's tree ({series_path}); nothing was taken back",
            path=source, line=line,
            hint=f"if {name} is {who} under another name, give it that name in quilt (its "
                 f"line in {series_path} and its file); else list {who} in {series_path} "
                 f"before it (`quilt import`), push, and `quilt refresh` {name}")
    trial = _copied(state)
    for path in paths:
        trial.base.setdefault(path, None)
        trial.current[path] = files[path]
        trial.touched_by.setdefault(path, []).append(name)
    trial.outcomes.append(outcome)
    return trial


def _section_of(entry: tuple[Path, int, int], path: str) -> tuple[str, int | None]:
    """The quilt file of `entry` (quilt's file, its line in DIR/series, its strip level: `-p0`
    or `quilt import -p2` there) and the line its diff of `path` starts at, for a refusal
    about quilt's change to that file: as the other refusals name a line, this one names
    where the change is. Read at the entry's own level, as quilt reads it: another level
    finds no section (-p2), or another file's (a -p1 reading of a -p0 `pkg/a.py` is
    `a.py`)."""
    source, _, strip = entry
    try:
        parsed = _quilt_patch(source.read_bytes(), source, strip)
    except (OSError, PatchforgeError):
        return str(source), None
    return str(source), next((fp.line_no for fp in parsed.file_patches
                              if path in (fp.old_path, fp.new_path)), None)


def _not_in_tree(patches, own, where, at: int, path: str) -> list[str]:
    """The patches of the base of the patch at `at` (earlier, counting for its profiles)
    touching `path` that quilt's series does not list (`where`): their lines are in the base
    and not in quilt's tree."""
    return [n for i, (n, patch) in enumerate(patches)
            if i < at and n not in where and counts_for(own[i], own[at])
            and path in patch_paths(patch)]


def _copied(state: SeriesState) -> SeriesState:
    """A copy of `state` to try a patch on: a patch that fails some hunks still changes its
    other files in the state it is applied to."""
    return SeriesState(base=state.base, current=dict(state.current),
                       touched_by={k: list(v) for k, v in state.touched_by.items()},
                       outcomes=list(state.outcomes), modes=dict(state.modes),
                       origins=dict(state.origins))


def _kept_from_series(project: Project, upstream: str,
                      name: str) -> tuple[dict[str, str], dict[str, str]]:
    """What the series' own patch `name` says and quilt's diff does not carry: path -> the
    mode it gives (`new file mode 100755`), and old path -> new path of its renames."""
    if name not in project.patch_names(upstream):
        return {}, {}
    try:
        patch = project.read_patch(upstream, name)
    except PatchforgeError:
        return {}, {}
    return ({fp.new_path: fp.new_mode for fp in patch.file_patches
             if fp.new_path and fp.new_mode},
            {fp.old_path: fp.new_path for fp in patch.file_patches
             if fp.is_rename and not fp.is_copy and fp.old_path and fp.new_path})


def _has_change(project: Project, upstream: str, name: str) -> bool:
    """True when the series' patch `name` changes something (a fix, not `new`'s empty one)."""
    try:
        return name in project.patch_names(upstream) and \
            bool(project.read_patch(upstream, name).file_patches)
    except PatchforgeError:
        return True


def _changed_below(name: str, new_patches: list[tuple[str, PatchFile]],
                   lines: dict[str, int], changed: set[str]) -> tuple[str, int | None]:
    """For a patch quilt's series does not list (another profile's, or one that joined the
    series after the export), refused for what the changes made in quilt do to it: the
    first patch before it that quilt changed or added and that touches one of its files, and
    the line of quilt's series listing it (' after quilt's change to NAME', line), so that the
    refusal names a line of the file the user edits; ('', None) when there is none."""
    order = [n for n, _ in new_patches]
    patches = dict(new_patches)
    paths = patch_paths(patches[name])
    for other in order[:order.index(name)]:
        if other in changed and other in lines and patch_paths(patches[other]) & paths:
            return f" (quilt's change to {other}, listed on this line)", lines[other]
    return "", None


def _refuse_breaking(project: Project, store: UpstreamStore, upstream: str, ours: list[str],
                     new_patches: list[tuple[str, PatchFile]], series_path: Path,
                     lines: dict[str, int], changed: set[str]) -> None:
    """Refuse a new series of which a patch no longer applies (on its base, or creating a path
    already filled) that applied in the series as it was: quilt's order or an earlier patch's
    change would leave it out of every overlay."""
    failing = failing_patches(project, store, upstream, new_patches)
    if not failing:
        return
    before = set(failing_patches(project, store, upstream,
                                 [(n, project.read_patch(upstream, n)) for n in ours]))
    new = [n for n in failing if n not in before]
    if new:
        name = new[0]
        line = lines.get(name)
        if line is None:
            # A patch quilt's tree lacks: another profile's (the export was one profile's
            # series), or one that joined the series after the export.
            patch = dict(new_patches)[name]
            said, line = _changed_below(name, new_patches, lines, changed)
            raise InputError(
                f"{name} ({profiles_note(profile_set(patch, list(project.config.profiles)))}, "
                f"not in quilt's tree) would no longer apply on its base after the changes "
                f"made in quilt{said}; nothing was taken back", path=str(series_path),
                line=line,
                hint=f"in quilt, make the change leave the lines of {name} alone, `quilt "
                     "refresh`, then run this again")
        raise InputError(f"{name} would no longer apply in the series as {series_path} orders "
                         "it, after the changes made in quilt; nothing was taken back",
                         path=str(series_path), line=line,
                         hint="`quilt push` up to it in the tree, resolve, `quilt refresh` "
                              "it, then run this again (or put it back in its place)")


def _refuse_leaving_profiles(project: Project, store: UpstreamStore, upstream: str,
                             ours: list[str], new_patches: list[tuple[str, PatchFile]],
                             series_path: Path, profile: str | None,
                             lines: dict[str, int], changed: set[str]) -> None:
    """Refuse a new series of which a patch no longer goes into the series of a profile that
    holds it (apply.chains: a fix for more profiles carried there from its base meets lines a
    fix for that profile alone changed), where it went before: that profile's overlays would
    fail. `refresh` writes such a change and warns (`profile_failing`), as it does for a later
    patch that no longer applies (`later_failing`); this command refuses the latter
    (_refuse_breaking), since quilt's directory keeps the change and nothing is lost, and
    refuses this alike."""
    configured = list(project.config.profiles)
    if not profile_bases_differ(new_patches, configured):
        return
    pin = project.lock.pin(upstream).commit

    def read_base(paths):
        return store.read_blobs(pin, paths)

    found = apply_on_chains(read_base, new_patches, configured, strict=False).problems
    if not found:
        return
    old = [(n, project.read_patch(upstream, n)) for n in ours]
    before = {(p.name, p.chain) for p in apply_on_chains(read_base, old, configured,
                                                         strict=False).problems} \
        if profile_bases_differ(old, configured) else set()
    new = [p for p in found if (p.name, p.chain) not in before]
    if not new:
        return
    problem = new[0]
    line, said = lines.get(problem.name), ""
    if line is None:  # not in quilt's tree: the line of the change that meets it
        said, line = _changed_below(problem.name, new_patches, lines, changed)
    unseen = profile is not None and profile not in (problem.chain or ())
    raise InputError(
        f"{problem.name} {problem.describe()}, after the changes made in quilt{said}; nothing "
        "was taken back", path=str(series_path), line=line,
        hint=(f"quilt's tree, {profile}'s series, does not hold {', '.join(problem.met)}; "
              if unseen and problem.met else "")
        + "in quilt, make the change leave those lines alone, `quilt refresh`, then run this "
          "again (two fixes that change neighbouring lines differently for some profiles are "
          "one fix per profile)")


def _close_edit(project: Project, upstream: str, before: list[str], after: list[str],
                written: set[str]) -> None:
    """An open edit (refreshed: require_state saw to it) whose patch, or one before it,
    changed or moved is closed: its worktree was made on the series as it was."""
    current = editing(project, upstream)
    if current is None or current.get("bring_back"):
        return
    name = current["patch"]
    if name in after and name in before and \
            before[:before.index(name) + 1] == after[:after.index(name) + 1] and \
            not written & set(after[:after.index(name) + 1]):
        return
    close_worktree(project, upstream)


def _record_taken(folder: Path, record: dict[str, list[str]] | None, profile: str | None,
                  entries: list[tuple[str, Path, int, bytes]],
                  took: dict[str, dict[str, dict]], before: dict[str, bytes],
                  written: dict[str, bytes], order: list[str] | None,
                  agreed: dict[str, bytes] | None = None,
                  filled: dict[str, list[str]] | None = None,
                  headers: dict[str, list[str]] | None = None,
                  rewritten: dict[str, bytes] | None = None) -> None:
    """The export record of `folder` learns the quilt files taken back (`written`: the series'
    patch file each became), so that the next `export --quilt` there replaces them instead of
    refusing them as changes it would lose, and the next `import quilt --update` knows them.
    Each is recorded with the file it replaced (`before`; none for a patch `quilt new` made)
    and quilt's change itself (exchange.taken_entry): should the series go back to that file,
    or drop the new patch again, or change the patch without quilt's change (the import
    undone in the stack), quilt's file is quilt's change again, the series' no longer. A
    folder without a record is left as it is; the order it records (`order`) is kept.

    `agreed` (name -> quilt's file) are quilt's files the series' patch of that name is byte
    for byte, which the export did not write (the series' patch copied into DIR): recorded
    as an export of that file records it, in place of what the export wrote, so that a later
    change on one side reads as that side's alone.

    `headers` (the record's, exchange.read_header_record) learn the header of each patch
    file written, so that the fix is known by it as the export's once renamed and changed in
    the series and deleted in quilt (_renamed_and_changed_since)."""
    if record is None:
        return
    headers = headers or {}
    grown_headers = {name: list(digests) for name, digests in headers.items()}
    for name, data in written.items():
        digest = kept_header_digest(parse_patch_file(data, name))
        if digest not in grown_headers.get(name, []):
            grown_headers.setdefault(name, []).append(digest)
    grown = {name: list(hashes) for name, hashes in record.items()}
    for name, data in (agreed or {}).items():
        grown[name] = [_sha256(data)]
    for name, data in (rewritten or {}).items():
        # (`rewritten`: quilt's file holding the series' patch as it is, written quilt's
        # way: recorded beside what the export wrote.)
        if _sha256(data) not in grown.get(name, []):
            grown.setdefault(name, []).append(_sha256(data))
    grown_took = {name: dict(files) for name, files in took.items()}
    for file_name, _, _, data in entries:
        if file_name not in written:
            continue
        earlier = took.get(file_name, {}).get(_sha256(data))
        if before.get(file_name) == written[file_name]:
            # The series holds it already: a run a kill cut short wrote it (what it replaced
            # is recorded then), or the series has it as quilt's import makes it.
            if earlier is None and _sha256(data) not in grown.get(file_name, []):
                grown.setdefault(file_name, []).append(_sha256(data))
            continue
        grown_took.setdefault(file_name, {})[_sha256(data)] = \
            taken_entry(before.get(file_name), written[file_name],
                        (filled or {}).get(file_name, []))
    if grown != record or grown_took != took or grown_headers != headers:
        atomic_write(folder / EXPORT_RECORD,
                     _record_bytes(grown, profile, grown_took, order=order,
                                   headers=grown_headers))


def _recorded_order(folder: Path, record: dict | None) -> list[str] | None:
    """DIR/series as the export wrote it (or an import left it since), from the export
    record of `folder` (read_export_record's); None for no record, or one an earlier version
    wrote, which has no order."""
    path = folder / EXPORT_RECORD
    order = None if record is None else record.get("order")
    if order is None:
        return None
    if not isinstance(order, list) or not all(isinstance(n, str) for n in order):
        raise UsageError(f"{path}: not the record `patchforge export --quilt` writes of what it "
                         "exported there (its order is not a list of names); nothing was "
                         "taken back", hint=f"move {path} away, or export again")
    return order


def _record_order(folder: Path, profile: str | None, order: list[str]) -> None:
    """The export record of `folder` records `order` (DIR/series as it is now) as the order
    the next `import quilt --update` compares quilt's with."""
    record = read_export_record(folder)  # (as written just before: read once, checked)
    atomic_write(folder / EXPORT_RECORD, _record_bytes(
        {} if record is None else record["patches"], profile, read_taken_record(record),
        order=order, headers=read_header_record(record)))


def _order_of_both(upstream: str, ours: list[str], quilt: list[str], recorded: list[str],
                   quilts_order: list[str], series_path: Path) -> list[str]:
    """The new series' order, from the series' (`ours`), DIR/series' (`quilt`) and the one
    the export wrote (`recorded`), as a patch's content is taken: from the side that changed
    it. `quilts_order` is the new series in DIR/series' order (the patches the series gained
    since the export placed in it), what is taken when quilt reordered, or neither side did.
    Each side's order is its patches' that the export wrote, relative to one another (a patch
    added or taken out is no reordering). When only the series reordered, its order is kept:
    a patch quilt added goes after the patch DIR/series lists before it (first when none). Both
    sides reordered, not alike: refused, neither side's order is lost."""
    def relative(names: list[str], among: list[str]) -> list[str]:
        return [n for n in names if n in among]

    quilt_moved = relative(quilt, recorded) != relative(recorded, quilt)
    ours_moved = relative(ours, recorded) != relative(recorded, ours)
    if not ours_moved:
        return quilts_order
    if quilt_moved:
        if relative(quilt, ours) == relative(ours, quilt):
            return quilts_order  # the same move made on both sides
        raise InputError(
            f"both sides reordered the {upstream} series since `export --quilt` wrote it "
            f"(the series: {' '.join(relative(ours, quilt))}; quilt's: "
            f"{' '.join(relative(quilt, ours))}); nothing was taken back",
            path=str(series_path),
            hint=f"give {series_path} the series' order (`patchforge list` prints it), or "
                 "`move` the patches in the series as quilt orders them, then run this again")
    order = relative(ours, quilts_order)
    for k, name in enumerate(quilt):
        if name in quilts_order and name not in order:  # quilt's new patch
            earlier = [n for n in quilt[:k] if n in order]
            order.insert(order.index(earlier[-1]) + 1 if earlier else 0, name)
    return order
