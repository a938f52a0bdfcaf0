"""Bringing fixes in (`import overlay|git|quilt|mbox`) and handing them out (`export`).

Imports turn what a team already has into patch files against the locked base; git does the
heavy lifting (mailsplit/mailinfo for mboxes, the commit graph for ranges). Exports write files
that quilt and `git am` take as they are.
"""
from __future__ import annotations

import datetime as _dt
import email.utils
import errno
import hashlib
import json
import os
import re
import shlex
import stat
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, Callable, Iterable, Sequence

from patchforge.apply.diffparse import parse_diff_full, validate_path
from patchforge.apply.gnupatch import as_git_writes, for_gnu_patch, with_p1_names
from patchforge.apply.series import (SeriesState, applies_to_profile, apply_series,
                                     profile_bases_differ, profile_set)
from patchforge.errors import InputError, PatchforgeError, UsageError
from patchforge.formats.patchfile import (CANONICAL_ORDER, SIGNATURE, control_character,
                                          description_with_control_character,
                                          field_with_control_character, parse_patch_file,
                                          last_update_day, quote_diff_like,
                                          refuse_control_characters,
                                          render_patch_file)
from patchforge.formats.series import parse_series
from patchforge.fsutil import (RepoLock, atomic_write, parse_json, put_back_on_failure,
                               write_destination, writing_project)
from patchforge.stack import (require_readable_history, series_changed,
                              series_state)
from patchforge.store.diff import FileChange, blob_oid, make_diff, merge_file
from patchforge.store.git import run_git
from patchforge.names import branch_safe_name, windows_safe_name
from patchforge.ops.series import (check_profiles, checked_new_patch_name, default_author,
                                   refuse_case_twin, refuse_name_of_another_series,
                                   refuse_skipped_name, today)
from patchforge.pr.message import first_person
from patchforge.project import patch_file_name

if TYPE_CHECKING:
    from patchforge.formats.patchfile import PatchFile
    from patchforge.project import Project
    from patchforge.store.gitstore import UpstreamStore

_SLUG = re.compile(r"[^A-Za-z0-9._-]+")
# Header fields that mark the start of a commit message as a patch header (DEP-3's, ours, and
# the git-am spellings DEP-3 allows).
KNOWN_FIELDS = frozenset(n.lower() for n in CANONICAL_ORDER) | {"subject", "from"}


def slugify(text: str, limit: int = 52) -> str:
    """A patch name made from a subject. A subject that comes to a device name Windows
    reserves (`CON`, `nul.x`) gets a `_` after it, and one a branch cannot carry (`Pin torch
    in uv.lock`, `Fix ../x`) is made one it can (`pin-torch-in-uv-lock`): the import is taken,
    under a name every checkout of the stack can write and `pr` can push."""
    return windows_safe_name(branch_safe_name(
        _SLUG.sub("-", text).strip("-.").lower()[:limit].rstrip("-.") or "patch"))


def _check_import_allowed(project: Project, upstream: str, file_name: str) -> None:
    """A patch name a series can hold, in a state that allows imports, in a readable history."""
    from patchforge.state import require

    checked_new_patch_name(file_name)

    # Never while a rebase of this upstream is stopped or in progress: its write-out replaces
    # the series file, and a patch added now would be left unlisted.
    require(project, "import", [upstream])
    require_readable_history(project)


def _check_new_name(project: Project, upstream: str, file_name: str,
                    data: bytes | None = None) -> None:
    """Refuse a name the import cannot take: not a patch name, a state that forbids imports,
    or a patch of that name already there, unless it is byte for byte `data` (what this
    import writes: the rest of an import a kill cut short, which running it again finishes)."""
    _check_import_allowed(project, upstream, file_name)
    refuse_case_twin(project, upstream, file_name)
    refuse_name_of_another_series(project, upstream, file_name)
    refuse_skipped_name(project, file_name)
    if not _name_taken(project, upstream, file_name, data):
        return
    if file_name in project.patch_names(upstream):
        raise UsageError(f"a patch named {file_name} already exists in the {upstream} series",
                         hint="nothing was imported: `patchforge rename` or `patchforge delete` "
                              "frees the name (a deleted fix is kept under deleted/), or leave "
                              "that patch out of what you import")
    raise UsageError(f"a patch file named {file_name} is already there, not listed in the series: "
                     f"{project.patch_path(upstream, file_name)}",
                     hint="list it in the series or remove it, then import again")


def _name_taken(project: Project, upstream: str, file_name: str, data: bytes | None) -> bool:
    """True when the series has `file_name`, or its directory a file of that name, other than
    exactly `data`."""
    path = project.patch_path(upstream, file_name)
    if file_name not in project.patch_names(upstream) and not path.exists():
        return False
    try:
        return data is None or path.read_bytes() != data
    except OSError:
        return True


def _refuse_repeat(project: Project, upstream: str, pending: list[tuple[str, bytes]]) -> None:
    """An import whose every patch is already listed, byte for byte, was done before: refused
    as it always was. One that finds only some of them there finishes what a kill cut short."""
    listed = project.patch_names(upstream)
    if pending and all(name in listed for name, _ in pending):
        raise UsageError(f"a patch named {pending[0][0]} already exists in the {upstream} series",
                         hint="this import was done before; nothing to do")


def _write_imported(project: Project, store: UpstreamStore, upstream: str,
                    pending: list[tuple[str, bytes]],
                    sources: dict[str, tuple[str, bytes | None]] | None = None, *,
                    pin: str, remake: str | None = None) -> None:
    """Write and list an import's patches, each checked before the first is written (a
    repeated import is refused, and so is one that creates a path already there or, where
    overlays are made, deletes an upstream file). One that an earlier run cut short already
    wrote (the same bytes: _check_new_name made sure) is only listed, if it is not yet. `sources` names where each patch came from (a quilt patch file,
    an mbox message, a commit) and, for a file, its bytes as they were read there. `pin` is
    the commit the import read the upstream at; `remake`, how to make a patch made on another
    version on the pin instead (import_git's commands), for the refusals that say so."""
    _refuse_repeat(project, upstream, pending)
    parsed = {file_name: parse_patch_file(data, file_name) for file_name, data in pending}
    _refuse_unknown_profiles(project, parsed, sources or {})
    _refuse_zero_context(parsed, sources or {})
    _refuse_collisions(project, store, upstream, parsed, sources or {}, pin)
    _refuse_removals(project, store, upstream, parsed, sources or {}, pin)
    _refuse_outside_install_root(project, store, upstream, parsed, sources or {}, pin)
    _refuse_ambiguous(project, store, upstream, parsed, sources or {}, pin, remake)
    from patchforge.state import require

    with RepoLock(project.state_dir):
        # Asked again under the lock: a rebase run meanwhile (stopped, or its series and pin
        # written) would have the import's patches left unlisted, or made on the old pin.
        require(project, "import", [upstream])
        if project.lock.pin(upstream).commit != pin:
            raise UsageError(f"the {upstream} pin moved while the import ran (a rebase beside "
                             "it); nothing was imported", hint="run the import again")
        # The names were found free before the lock: a `new` of the same name beside this
        # command would otherwise keep its file and take the import for done ("imported").
        for file_name, data in pending:
            if _name_taken(project, upstream, file_name, data):
                raise UsageError(f"a patch named {file_name} appeared in the {upstream} series "
                                 "while the import ran (another patchforge command); nothing "
                                 "was imported", hint="rename one of them, then import again")
        with writing_project(project.root):  # readers see none of the import or all of it
            _list_imported(project, upstream, [(file_name, data) for file_name, data in pending
                                               if file_name not in project.patch_names(upstream)])
            series_changed(project)


def _list_imported(project: Project, upstream: str, new: list[tuple[str, bytes]]) -> None:
    """Write the import's patch files, then list them all in one write of the series file:
    the import is in the series whole or not at all. Cut short (Ctrl-C, a failed write, the
    series' directory sync after its rename included), every file goes back as it was
    (fsutil.put_back_on_failure), and nothing of the import is left; one patch at a time, a
    Ctrl-C left part of it listed while the message said nothing was. (A kill leaves the
    files unlisted: the same import run again lists them.)"""
    paths = [project.patch_path(upstream, file_name) for file_name, _ in new]
    with put_back_on_failure([*paths, project.series_path(upstream)],
                             finish="run the import again: it lists the patches it wrote"):
        for path, (_, data) in zip(paths, new):
            atomic_write(path, data)
        series = project.read_series(upstream)
        for file_name, _ in new:
            series = series.inserted(file_name)
        atomic_write(project.series_path(upstream), series.to_bytes())


def _refuse_ambiguous(project: Project, store: UpstreamStore, upstream: str,
                      parsed: dict[str, PatchFile], sources: dict[str, tuple[str, bytes | None]],
                      pin: str, remake: str | Callable[[str, str], str] | None = None) -> None:
    """Refuse an import whose patch, at the end of the series, does not apply
    (_refuse_not_applying), or applies where nearness to its header's line chose among
    several places, in a file it was not made on (its `index` line
    names another version: a branch made on an older upstream, whose line numbers are that
    version's) or not shown to be (no `index` line: a quilt or `diff -u` patch): put where GNU
    patch would put it, the fix may go into a twin of the code it was made for, which
    `status` calls unsure and the overlays would deploy. Nothing is written; made again on
    the pin's files, or with context enough to be at one place, it imports with the right
    place."""
    from patchforge.apply.series import outcomes_on_bases

    names = project.patch_names(upstream)
    new = [name for name in parsed if name not in names]
    if not new:
        return
    configured = list(project.config.profiles)
    patches = [(n, project.read_patch(upstream, n)) for n in names] + \
        [(n, parsed[n]) for n in new]
    own = [profile_set(patch, configured) for _, patch in patches]
    if remake is None and project.config.upstream(upstream).kind != "git":
        # The pin of a wheel or directory upstream is a commit of patchforge's own store: no
        # repository can rebase a branch onto it. The change is made on the pin's files.
        several = len(project.config.upstreams) > 1
        remake = lambda name, path: (  # noqa: E731
            f"`patchforge new {shlex.quote(name.removesuffix('.patch'))}"
            + (f" --upstream {shlex.quote(upstream)}" if several else "")
            + f" --file {shlex.quote(path)}`, its change made in the worktree that opens, "
              "then `patchforge refresh`")
    outcomes = outcomes_on_bases(lambda paths: store.read_blobs(pin, paths), patches, own,
                                 strict=False, allow_zero_context=True, placement=True)
    installed = project.config.upstream(upstream).kind != "git"
    for at, outcome in enumerate(outcomes):
        if outcome is None or outcome.name not in new:
            continue
        if not outcome.ok:
            _refuse_not_applying(outcome, patches, own, at, sources, pin, remake,
                                 at_pin=lambda path: store.entry(pin, path) is not None,
                                 installed=installed,
                                 upstream_option=f" --upstream {shlex.quote(upstream)}"
                                 if len(project.config.upstreams) > 1 else "")
        if not outcome.ambiguous:
            continue
        source = sources.get(outcome.name, (outcome.name, None))[0]
        places = "; ".join(place.describe() for place in outcome.ambiguous)
        first = outcome.ambiguous[0]
        if first.no_index:
            # quilt's and diff's patches name no file: more context can make the place one.
            raise UsageError(f"{outcome.name} (from {source}): the place of its change is "
                             f"ambiguous on the pin: {places}, and {first.why()}; nothing was "
                             "imported",
                             hint="make its diff again with more context lines, so that its "
                                  "context is at one place (`quilt refresh -U 8` in the tree "
                                  "it was made on), or as a `git diff` on the pin's files "
                                  f"({pin[:12]}), and import it again")
        raise UsageError(f"{outcome.name} (from {source}): the place of its change is "
                         f"ambiguous on the pin: {places}, and its line numbers were made on "
                         "another version of the file than the pin's; nothing was imported",
                         hint=f"make it on the pin ({pin[:12]}): "
                              + _remake_said(remake, outcome.name, first.path) if remake else
                         f"make it on the pin ({pin[:12]}: `git rebase --onto {pin[:12]} "
                         "OLD-BASE BRANCH` in its repository) and import it again")
    _refuse_leaving_chains(patches, own, configured, new, sources, pin, store)


def _remake_said(remake, name: str, path: str) -> str:
    """The way to make patch `name` on the pin (_refuse_ambiguous's `remake`): the commands
    as said, or said for the patch and its file `path`."""
    return remake(name, path) if callable(remake) else remake


def _refuse_leaving_chains(patches: list, own: list, configured: list, new: list[str],
                           sources: dict[str, tuple[str, bytes | None]], pin: str,
                           store: UpstreamStore) -> None:
    """Refuse an import of which a patch applies on its own base but does not go into the
    series of a profile that holds it (apply.chains: a fix for every profile of lines a
    gfx942 fix of the series changed): that profile's overlays would refuse the series, as
    for a patch that does not apply (_refuse_not_applying). Named at the file's section."""
    if not profile_bases_differ(patches, configured):
        return
    from patchforge.apply.chains import apply_on_chains
    from patchforge.overlay import section_line

    problems = apply_on_chains(lambda paths: store.read_blobs(pin, paths), patches,
                               configured, own=own, strict=False,
                               allow_zero_context=True).problems
    for problem in problems:
        if problem.name not in new:
            continue
        where, original = sources.get(problem.name, (problem.name, None))
        raise InputError(f"patch {problem.name} {problem.describe()}; nothing was imported",
                         path=where, line=section_line(original, where, new_path=problem.path,
                                                       old_path=problem.path),
                         hint=f"{problem.remedy}, or leave it out of the import")



def _without_prefixes(original: bytes | None) -> bool:
    """Whether every `diff --git` line of a patch names its files without git's `a/` and `b/`
    (`git format-patch --no-prefix`): read with them, each path loses its first directory."""
    heads = re.findall(rb"^diff --git (\S+) (\S+)$", original or b"", re.M)
    return bool(heads) and not any(old.startswith(b"a/") or new.startswith(b"b/")
                                   for old, new in heads)

def _refuse_not_applying(outcome, patches: list, own: list, at: int,
                         sources: dict[str, tuple[str, bytes | None]], pin: str,
                         remake: str | Callable[[str, str], str] | None = None, *,
                         at_pin: Callable[[str], bool] = lambda path: True,
                         installed: bool = False, upstream_option: str = "") -> None:
    """Refuse an import of which a patch does not apply at the end of the series on the pin
    (a colleague's fix of lines the series has its own fix of; a branch made on an older
    upstream whose lines changed since): imported, it was "imported", exit 0, and `overlays`
    then refused the series (exit 2) and `status` called it a conflict. Refused as the
    imports refuse a patch that would break what comes after (exit 2, nothing written), never
    written with a warning as `refresh` writes a change: the commit, the message or the quilt
    file keeps the change, so nothing is lost. Named at its first hunk that fails, with the
    patches of its base that change that file before it; a file the pin does not have at all
    (`at_pin`: a fix branch's test, which a wheel or an installed directory, `installed`,
    never ships) is said as such, with the files of the patch the pin has."""
    from patchforge.apply.chains import patch_paths
    from patchforge.apply.series import counts_for, describe_failure
    from patchforge.overlay import section_line

    name, patch = patches[at]
    fp, application = next((fp, application) for fp, application
                           in zip(patch.file_patches, outcome.files) if not application.ok)
    path = fp.new_path or fp.old_path
    failed = next((h.index for h in application.hunks if h.status == "failed"), None)
    where, original = sources.get(name, (name, None))
    earlier = [n for (n, other), theirs in zip(patches[:at], own[:at])
               if counts_for(theirs, own[at]) and path in patch_paths(other)]
    gone = _taken_away(path, patches[:at], earlier)
    if gone is not None:
        # Not "does not apply": no line of it can, the file is not there.
        message = f"patch {name}: {path} is {gone}, earlier in the series"
        hint = ("the file is not there for it: make the change where that code is now "
                "(`patchforge new NAME`, the change made in its worktree, `patchforge "
                "refresh`), or leave it out of the import")
    elif earlier:
        message = f"{describe_failure(name, application)} on the series ({', '.join(earlier)} " \
                  f"change{'s' * (len(earlier) == 1)} {path} before it)"
        hint = ("the series changes those lines already (the same fix, or another of the same "
                "lines?): make this change on the series as it is (`patchforge new NAME`, the "
                "change made in its worktree, `patchforge refresh`), or leave it out of the "
                "import")
    elif not fp.is_new and not at_pin(fp.old_path or path):
        # Not "does not apply on the pin's PATH": the pin has no such file, and the way on
        # that names it (`new --file PATH`) is refused in turn.
        source = fp.old_path or path
        have = [p for p in dict.fromkeys(f.old_path or f.new_path for f in patch.file_patches
                                         if not f.is_new)
                if p and p != source and at_pin(p)]
        files = " ".join(f"--file {shlex.quote(p)}" for p in have)
        message = (f"patch {name}: {source} is not among the upstream's files at the pin "
                   f"({pin[:12]}), and the patch changes it")
        why = ("the pin holds the files the package installs, not its repository's (tests/, "
               "docs/, build files)" if installed else
               "it was made on a revision that has it (renamed or removed since?)")
        hint = (f"{why}: make the fix with the files the pin has "
                + (f"(`patchforge new {shlex.quote(name.removesuffix('.patch'))}"
                   f"{upstream_option} {files}`, "
                   "its change made in the worktree that opens, then `patchforge refresh`)"
                   if have else "(`patchforge new NAME --file PATH`)")
                + ", or leave it out of the import")
        if _without_prefixes(patch.diff):
            # `--no-prefix`: each path lost its first directory (`pkg/a.py` read as `a.py`).
            hint = ("its paths have no `a/` and `b/` before them (`git format-patch "
                    "--no-prefix`, `git diff --no-prefix`), so their first directory was read "
                    "as that prefix: make it again without `--no-prefix`, or leave it out of "
                    "the import")
    else:
        message = f"{describe_failure(name, application)} on the pin's {path} ({pin[:12]})"
        hint = (f"make it on the pin ({pin[:12]}): {_remake_said(remake, name, path)}; or leave it out "
                "of the import" if remake else
                f"make it on the pin ({pin[:12]}: `git rebase --onto {pin[:12]} OLD-BASE "
                "BRANCH` in its repository, or a diff of the pin's files), or leave it out of "
                "the import")
    raise InputError(f"{message}; nothing was imported",
                     path=where, line=section_line(original, where, new_path=fp.new_path,
                                                   old_path=fp.old_path, hunk=failed),
                     hint=hint)


def _taken_away(path: str, patches: list, earlier: list[str]) -> str | None:
    """How the last of `earlier` (names of `patches` that change `path`) leaves `path`:
    "deleted by NAME" or "renamed to NEW by NAME"; None when it leaves the file there."""
    if not earlier:
        return None
    last = dict(patches)[earlier[-1]]
    if any(fp.new_path == path for fp in last.file_patches):
        return None
    for fp in last.file_patches:
        if fp.old_path == path and fp.is_delete:
            return f"deleted by {earlier[-1]}"
        if fp.old_path == path and fp.is_rename:
            return f"renamed to {fp.new_path} by {earlier[-1]}"
    return None


def _refuse_unknown_profiles(project: Project, parsed: dict[str, PatchFile],
                             sources: dict[str, tuple[str, bytes | None]]) -> None:
    """Refuse an import of which a patch lists a profile the configuration does not declare
    (a typo): the fix would be in no profile's overlays. Named in the file it came from (its
    Profiles line in a quilt patch file), nothing written."""
    from patchforge.apply.series import refuse_unknown_profiles

    configured = list(project.config.profiles)
    for name, patch in parsed.items():
        where, original = sources.get(name, (name, None))
        try:
            # (The file as it was read, when there is one: its line numbers.)
            refuse_unknown_profiles(parse_patch_file(original, where) if original is not None
                                    else patch, configured)
        except InputError as exc:
            raise InputError(f"patch {name}: {exc.message}; nothing was imported", path=where,
                             line=exc.line if original is not None else None,
                             hint=exc.hint) from None


def _refuse_collisions(project: Project, store: UpstreamStore, upstream: str,
                       parsed: dict[str, PatchFile],
                       sources: dict[str, tuple[str, bytes | None]], pin: str) -> None:
    """Refuse an import of which a patch creates (renames or copies to) a path already filled
    at `pin` (the commit the import read the upstream at): a file the upstream has with other
    content, a file an earlier patch makes, a path under a file (stack.creation_collisions, in
    every profile's series). `git apply`, `quilt push` and `overlays` refuse such a patch;
    imported, it was listed and only `status` and `lint` said so afterwards. Nothing is
    written."""
    from patchforge.overlay import section_line
    from patchforge.stack import profile_collisions

    listed = project.patch_names(upstream)
    patches = [(n, parsed.get(n) or project.read_patch(upstream, n)) for n in listed]
    patches += [(n, patch) for n, patch in parsed.items() if n not in listed]
    for name, _, fp, message, hint in profile_collisions(project, store, pin, patches):
        if name not in parsed:
            continue  # an earlier patch of the series: lint's to report, not this import's
        where, original = sources.get(name, (name, None))
        raise InputError(f"patch {name}: {message}; nothing was imported",
                         path=where,
                         line=section_line(original, where, new_path=fp.new_path),
                         hint=(hint + ", or leave this patch out of the import") if hint else
                         "leave this patch out of the import, or change what it creates")


def _refuse_removals(project: Project, store: UpstreamStore, upstream: str,
                     parsed: dict[str, PatchFile],
                     sources: dict[str, tuple[str, bytes | None]], pin: str) -> None:
    """Refuse an import of which a patch deletes (or renames away) an upstream file, where the
    project writes overlays (overlay.refuse_series_removals): listed, only `overlays` refused
    it, and `status` and `lint` passed it. The series with the import's patches at its end
    (those already listed, a rerun's, where they are)."""
    from patchforge.overlay import refuse_series_removals

    listed = project.patch_names(upstream)
    series = [(n, parsed.get(n) or project.read_patch(upstream, n)) for n in listed]
    refuse_series_removals(project, store, upstream, pin,
                           [(n, patch) for n, patch in series if n not in parsed],
                           series + [(n, patch) for n, patch in parsed.items() if n not in listed],
                           sources=sources)


def _refuse_zero_context(parsed: dict[str, PatchFile],
                         sources: dict[str, tuple[str, bytes | None]]) -> None:
    """Refuse a patch with a hunk without context lines (`git diff -U0`, `git format-patch
    -U0`): listed, every later command refused it (`status`, `overlays`, and `edit`, which
    lint named as the remedy), so no patchforge command could make it right. Named where it
    came from, at its file's section."""
    from patchforge.overlay import section_line

    for name, patch in parsed.items():
        for fp in patch.file_patches:
            if not fp.has_zero_context:
                continue
            where, original = sources.get(name, (name, None))
            raise InputError(f"patch {name}: a hunk of {fp.path} has no context lines (a diff "
                             "made with -U0): it would apply by line number alone, which "
                             "git apply and patchforge refuse; nothing was imported",
                             path=where, line=section_line(original, where, new_path=fp.new_path,
                                                           old_path=fp.old_path),
                             hint="make the diff again with context (`git diff`, `git "
                                  "format-patch` without -U0, `diff -u`) and import that")


def _refuse_outside_install_root(project: Project, store: UpstreamStore, upstream: str,
                                 parsed: dict[str, PatchFile],
                                 sources: dict[str, tuple[str, bytes | None]], pin: str) -> None:
    """Refuse an import of which a patch changes a wheel's file that pip installs outside the
    install root (stack.outside_install_root), as `new --file`, `add` and `refresh` refuse it:
    imported, only `overlays` said so. Named in the file it came from, at its file's section."""
    from patchforge.overlay import section_line
    from patchforge.stack import OUTSIDE_INSTALL_ROOT, outside_install_root

    kind = project.lock.pin(upstream).kind
    for name, patch in parsed.items():
        found = outside_install_root(store, kind, pin, patch.paths)
        if found is None:
            continue
        where, original = sources.get(name, (name, None))
        raise InputError(f"patch {name}: {found[0]}: {found[1]}, {OUTSIDE_INSTALL_ROOT}; "
                         "nothing was imported", path=where,
                         line=section_line(original, where, new_path=found[0],
                                           old_path=found[0]),
                         hint="fix it in the image (a Dockerfile step), or leave this patch "
                              "out of the import")


def _free_name(project: Project, upstream: str, stem: str, taken: set[str],
               data: bytes) -> str:
    """A file name for a patch named after its subject: `stem`.patch, or `stem`-2.patch, -3...
    when an earlier patch of the same import (or of the series) already has it. Two commits or
    messages with one subject are two fixes; the second must never overwrite the first."""
    file_name = patch_file_name(stem)
    number = 1
    others = {n for u, n in project.all_patches() if u != upstream}  # (one fix, one name)
    while file_name in taken or file_name in others or \
            _name_taken(project, upstream, file_name, data):
        number += 1
        file_name = patch_file_name(f"{stem}-{number}")
    return file_name


def _refuse_taken(file_name: str, taken: set[str], source: str, line: int | None = None) -> None:
    """A name the import already gives to an earlier patch (quilt's `fix.patch` and `fix.diff`,
    two exported series' patches of one name): refused, since writing both would keep one."""
    from patchforge.names import file_name_key

    twin = next((name for name in taken if file_name_key(name) == file_name_key(file_name)),
                None)
    if twin is not None:
        raise InputError(f"would be imported as {file_name}, the name of an earlier patch of "
                         "this import" + (f" but for case or Unicode form ({twin}: one file "
                                          "on macOS or Windows)" if twin != file_name else ""),
                         path=source, line=line, hint="rename one of them before importing")


def import_overlay(project: Project, store: UpstreamStore, overlay: Path, *, upstream: str,
                   path: str, name: str, description: str | None = None,
                   profiles: str | None = None, create: bool = False,
                   made_on: str | None = None) -> tuple[str, str | None]:
    """A full-file overlay becomes a patch: the diff from the file as the series leaves it at the
    locked revision (the upstream base file when no patch touches it) to the overlay's bytes.
    Returns the patch file's name and a note when the overlay was taken onto the series'
    file (below).

    A `path` the upstream does not have (a typo, a directory left out) is refused unless
    `create` says the overlay is a new file: patching a file that is not there would never
    patch the real one.

    An overlay made from the upstream's file, where patches of the series already change it,
    lacks their changes: its diff from the series' file undid them, and every later overlay
    and deployment went without those fixes while each patch still "applied". Such an overlay
    is merged onto the series' file (git's 3-way merge, with the upstream's file as the base),
    so the new patch holds only its own change; one whose change overlaps theirs is refused.

    An overlay that keeps the series' changes is the series' file with a change made in it (a
    generated overlay edited by hand), and imports as exactly that change, unless the change
    takes out a line the series put there or brings back, edited, lines the series removes:
    that would undo a fix, and is refused naming the lines. With `profiles` the series' file is
    the one those profiles' overlays hold (a profile's overlay lacks the other profiles'
    fixes), and an overlay of theirs moved aside during a rebase (`overlay.keep_moved_aside`)
    has its change taken from the file it was made from onto the rebased one. Without them,
    where the series has fixes for some profiles only, the new patch is for every profile
    and made on its own base, the fixes every profile's series holds (as `new` and `refresh`
    make it): an overlay made from a profile's overlay has that profile's fixes left to them
    (`_without_profile_fixes`), and one whose change would not go into a profile's series is
    refused (`_refuse_leaving_profiles`).

    The upstream's file itself, where the series changes it, is refused as what it is: a patch
    of it would undo the series' fixes.

    An overlay made on another version of the upstream (the file of an older release with a
    fix in it) differs from the pinned file also where the upstream changed between the two:
    imported as it is, the patch would take those changes back. `made_on` (a SPEC) names the
    version it was made on: its change against that file is carried onto the pinned one
    (git's 3-way merge). Without it, an overlay nearer to an earlier version of the file in
    the upstream's history than to the pinned one, that holds upstream's later changes as
    they were before them, is refused naming those lines (`_refuse_made_on_earlier`)."""
    char = control_character(description or "")
    if char is not None:
        # The fix's Description, as `new -m` refuses it: a terminal showing the patch acts on it.
        raise UsageError(f"-m holds a control character ({char}), which a terminal showing "
                         "the patch would act on", hint="give the description without it")
    root = project.config.upstream(upstream).install_root
    pin = project.lock.pin(upstream)
    if root and path.startswith(root.rstrip("/") + "/"):
        # The overlay's place in the image, as a hand-kept mount list names it: refused as an
        # "absolute path" a patch may not touch, with no word of the path meant.
        inside = path[len(root.rstrip("/")) + 1:].lstrip("/")
        raise UsageError(f"--path {path!r} is where the file is in the image ({upstream}'s "
                         f"install-root {root} and its path): --path is the path inside the "
                         f"upstream, {inside!r}", hint=f"--path {shlex.quote(inside)}")
    validate_path(path, source=str(overlay))
    # A directory of the upstream, or a path under one of its files, is no file an overlay
    # can be (`--create` wrote a patch creating it, which every overlay then refused).
    from patchforge.worktree import near_paths, refuse_non_files

    refuse_non_files(store, pin.commit, [path])
    from patchforge.stack import refuse_outside_install_root

    refuse_outside_install_root(store, pin.kind, pin.commit, [path])
    file_name = patch_file_name(name)
    _check_import_allowed(project, upstream, file_name)
    if profiles is not None:
        check_profiles(project, profiles)
    state, touching = _series_file(project, store, upstream, path, profiles)
    old = state.current[path] if path in state.current else store.read_blob(pin.commit, path)
    if old is None and not create:
        raise UsageError(f"{path} does not exist in {upstream} at {pin.label}"
                         + near_paths(store, pin.commit, path),
                         hint="check --path; `--create` makes the overlay a new file instead")
    new = _read_input(overlay, "an overlay")
    notes = []
    moved = _made_before_rebase(project, upstream, path, profiles, old, new, str(overlay)) \
        if old is not None else None
    if moved is not None and old is not None:
        rel, before, as_before = moved
        clean, merged = merge_file(before, old, new,
                                   labels=("before the rebase", "rebased", "overlay"))
        if not clean:
            raise UsageError(
                f"{overlay} was made from overlays/{rel} as it was before the last rebase, and "
                "changes lines the rebase changed there; nothing was written",
                hint=f"make the change in the rebased overlays/{rel} (`patchforge overlays` "
                     "writes it), then import that")
        # Said with the lines the rebase changed, which stay as rebased: a file made after
        # the rebase that put them back reads the same, and would lose that change here.
        from patchforge.overlay import BEFORE_REBASE_DIR

        kept = f".patchforge/{BEFORE_REBASE_DIR}/{rel}"
        notes.append(f"{overlay} was made from overlays/{rel} as it was before the last rebase "
                     f"(kept as {kept}): its change is taken onto the rebased file, where "
                     f"{_lines_said(as_before, 'as the rebase changed them')} stay so (if it "
                     f"was made after the rebase, putting them back: `rm {kept}`, then import "
                     "it again)")
        new = merged
    base = store.read_blob(pin.commit, path) if path in state.current else old
    # An overlay file patchforge wrote, edited in place, or one moved aside by a rebase's way
    # on (the file as written kept, the series' file still where the rebase left it alone):
    # made from the series' file, whatever it does to the lines the series put there.
    in_place = moved is None and _under(Path(overlay), project.overlays_dir)
    from_series = in_place or moved is not None or old is not None and \
        _kept_before_rebase(project, upstream, path, profiles)[1] == old
    if made_on is not None and old is not None:
        new = _carried_from(project, store, upstream, pin, path, made_on, old, new, overlay,
                            notes)
    elif moved is None and base is not None and old is not None and new != old and \
            not in_place:
        # (An overlay file patchforge wrote, edited in place, was made on the pin.)
        _refuse_made_on_earlier(store, pin, upstream, _imports_namespace(project, upstream),
                                path, base, new, overlay, notes,
                                held=_versions_held(project, store, upstream, pin.commit),
                                shared=_wheel_versions_shared(project, store, upstream),
                                before=_wheel_pin_version(project, upstream, pin))
    others = _profile_files(project, store, upstream, path, old) if profiles is None else []
    new = _without_profile_fixes(others, path, old, new, overlay, notes)
    if base is not None and old is not None and old != base:
        earlier = ", ".join(touching)
        met = _SeriesChangesMet(base, old, new)
        if met.undoes_all and new == base:
            # The upstream's file itself: merged onto the series' file below it would be that
            # file, and "identical to the series' file" said of a file that lacks its fixes.
            which = "that fix" if len(touching) == 1 else "those fixes"
            fix = touching[0] if len(touching) == 1 else "NAME"
            raise UsageError(
                f"{overlay} is {path} as {upstream} has it at {pin.label}, without the changes "
                f"that {earlier} make{'s' if len(touching) == 1 else ''} to it: imported as a "
                f"patch, it would undo {which}; nothing was written (the series keeps "
                f"{which})", hint=f"to take a fix's change out of the series, `patchforge edit "
                                  f"{fix}` and `patchforge refresh`, or `patchforge delete "
                                  f"{fix}` (kept under deleted/)" + (
                                      f"; NAME: one of {earlier}" if len(touching) > 1 else ""))
        if met.undoes_all and not from_series:
            # Made from the upstream's file: merged onto the series' file. (One edited in
            # place under overlays/ that changes every line the series put there, a one-line
            # fix's line, is a change of that fix: below.)
            clean, merged = merge_file(base, old, new, labels=("upstream", "series", "overlay"))
            if merged != new:
                if not clean:
                    raise UsageError(
                        f"{overlay} lacks the changes that {earlier} make to {path}, and changes "
                        f"the same lines{_series_side(merged)}: imported as it is, it would "
                        "undo them; nothing was written",
                        hint=f"make the change on the series' {path} (`patchforge overlays` "
                             f"writes it under overlays/), or open it with `patchforge new "
                             f"{name} --file {path}`")
                new = merged
                notes.append(f"{overlay} lacked the changes that {earlier} make to {path} (it "
                             "was made from the upstream's file): they are kept, and the new "
                             "patch holds only the overlay's own change")
        elif met.taken_out or met.put_back:
            fix = touching[0].removesuffix(".patch") if len(touching) == 1 else "NAME"
            raise UsageError(
                f"{overlay} " + " and ".join(met.clauses(earlier, path))
                + ": imported as it is, it would undo that fix; nothing was written",
                hint=f"to change a fix itself, `patchforge edit {fix}`, make the change in its "
                     f"{path} there, then `patchforge refresh`" + (
                         f" (NAME: the patch of those lines, one of {earlier})"
                         if len(touching) > 1 else "")
                     + (" and `patchforge overlays`" if from_series else "")
                     + "; else keep them in the overlay as the series has them")
        elif met.beside_removed:
            notes.append(met.beside_note(overlay, earlier, path))
    if old == new:
        if path in state.current:  # the series changes the file: its patches already do this
            earlier = ", ".join(touching)
            raise UsageError(f"{overlay} is identical to {path} at {pin.label} with the series "
                             f"applied: nothing to import (the change is in the series already: {earlier})")
        raise UsageError(f"{overlay} is identical to {path} at {pin.label}: nothing to import "
                         "(the fix may have landed upstream)")
    _refuse_leaving_profiles(others, path, old, new, overlay)
    if old is not None:
        ends = _line_ends_changed(old, new)
        if ends is not None:
            notes.append(f"{overlay} ends its lines with {ends[1]} where {path} at {pin.label} "
                         f"ends them with {ends[0]} (a Windows checkout, an editor): the patch "
                         f"changes every such line, and conflicts with any upstream change to "
                         f"the file; to import the change alone, `patchforge delete {name}`, "
                         f"give the overlay {ends[0]} line ends "
                         + ("(`sed -i 's/\\r$//' " if ends[0] == "LF" else "(`sed -i 's/$/\\r/' ")
                         + f"{shlex.quote(str(overlay))}`) and import it again")
    entry = store.entry(pin.commit, path)
    mode = entry[0] if entry else "100644"
    diff = make_diff([FileChange.at(path, old, new, mode, mode)])
    fields = [("Description", description or f"Overlay {Path(overlay).name} for {path}"),
              ("Author", default_author()), ("Origin", f"vendor, overlay {Path(overlay).name}"),
              ("Upstream-Status", "Pending"), ("Upstream", upstream), ("Base", pin.commit)]
    if profiles is not None:
        fields.append(("Profiles", profiles))
    fields.append(("Last-Update", today()))
    data = _as_written_before(project, upstream, file_name, render_patch_file(fields, b"", diff))
    _check_new_name(project, upstream, file_name, data)
    # A refusal names the overlay given, the input: the patch file it would be is never written.
    _write_imported(project, store, upstream, [(file_name, data)],
                    {file_name: (str(overlay), None)}, pin=pin.commit)
    if moved is not None:
        # Its change is a patch now: the file it was made from is of no further use, and a
        # later overlay of that path is made from the rebased one.
        from patchforge.overlay import forget_before_rebase

        forget_before_rebase(project, moved[0])
    return file_name, "; ".join(notes) or None


def _line_ends_changed(old: bytes, new: bytes) -> tuple[str, str] | None:
    """("LF", "CRLF") or the reverse when most of the lines of `new` end otherwise than every
    line of `old` does: an overlay whose line ends a Windows checkout or an editor converted,
    whose patch rewrites the whole file for a change of a line or two. None otherwise (a
    file of mixed ends, one line changed to CRLF: the change itself)."""
    def shares(data: bytes) -> tuple[int, int]:
        return data.count(b"\r\n"), data.count(b"\n")

    (old_crlf, old_lines), (new_crlf, new_lines) = shares(old), shares(new)
    if not old_lines or not new_lines:
        return None
    if old_crlf == 0 and new_crlf * 2 > new_lines:
        return "LF", "CRLF"
    if old_crlf == old_lines and new_crlf * 2 < new_lines:
        return "CRLF", "LF"
    return None


# How many earlier versions of a file an import looks at for the one an overlay was made on.
EARLIER_VERSIONS = 20


def _carried_from(project: Project, store: UpstreamStore, upstream: str, pin, path: str,
                  made_on: str, old: bytes, new: bytes, overlay: Path, notes: list) -> bytes:
    """`new`, an overlay made on the file of SPEC `made_on`, with its change against that file
    carried onto `old` (the series' file at the pin): git's 3-way merge, that file as the base.
    A change that meets the upstream's between the two versions is refused (UsageError)."""
    commit, label = _made_on_commit(project, store, upstream, made_on, pin)
    if commit == pin.commit:
        return new  # made on the pin: its difference from the file is its change
    start = store.read_blob(commit, path)
    if start is None:
        raise UsageError(f"--made-on {made_on}: {path} does not exist in {upstream} at "
                         f"{label}", hint="name the version whose file the overlay was "
                                          "made from")
    if new == start:
        # Made on that version, it changes nothing; said of the pin ("identical to the
        # pin's file ... may have landed"), it read as if the pin held a fix it may lack.
        raise UsageError(f"{overlay} is identical to {path} as {upstream} has it at {label}: "
                         f"made on {label}, it holds no change to carry onto {pin.label}'s "
                         "file; nothing was written",
                         hint=f"if it is {pin.label}'s file with a change {label} also has "
                              "(a backport), import it without `--made-on`")
    clean, merged = merge_file(start, old, new, labels=(label, pin.label, "overlay"))
    if not clean:
        pinned = f"{pin.label}'s"
        raise UsageError(
            f"{overlay}: its change to {path} as {label} has it meets the upstream's "
            f"change between {label} and {pin.label}"
            f"{_series_side(merged, pinned)}; nothing was "
            "written", hint=f"make the change on {pin.label}'s file (`patchforge new NAME "
                            f"--file {path}`), with the upstream's change kept")
    notes.append(f"{overlay} was made on {path} as {label} has it: its change is carried "
                 f"onto {pin.label}'s file, the upstream's changes in between kept")
    return merged


def _older(label: str, before) -> bool:
    """Whether version `label` may be one an overlay was made on before the pinned release
    `before` (a packaging Version; None: any, a directory upstream's labels being unordered):
    a release older than it. A label that is no version cannot be placed: left out."""
    if before is None:
        return True
    release = _release(label)
    return release is not None and release < before


def _under(path: Path, directory: Path) -> bool:
    try:
        return path.resolve().is_relative_to(directory.resolve())
    except OSError:
        return False


def _imports_namespace(project: Project, upstream: str) -> str | None:
    """The namespace of this project's imports of a wheel or directory `upstream` in the shared
    store (pins.import_namespace); None for a git upstream."""
    from patchforge.pins import import_namespace

    config = project.config.upstream(upstream)
    return import_namespace(project, config) if config.kind in ("wheel", "dir") else None


def _made_on_commit(project: Project, store: UpstreamStore, upstream: str,
                    made_on: str, pin) -> tuple[str, str]:
    """(commit, label) of the version `--made-on` names. A wheel or directory upstream's
    version is the lock's for the pinned label, else the one this project imported under that
    label, taken from the store as it was imported (a directory imported again would be the
    directory as it is now, not the version the label named). Another project sharing the
    cache, with an upstream of the same name, never answers for this one."""
    from patchforge.pins import pin_for_spec

    config = project.config.upstream(upstream)
    if re.fullmatch(r"[0-9a-f]{40}", made_on) and store.has_object(made_on):
        return made_on, made_on[:12]  # a commit of the store (a pin, as the refusal names it)
    if config.kind in ("wheel", "dir"):
        from patchforge.errors import PatchforgeError

        if made_on == pin.label:
            return pin.commit, made_on  # upstream.lock says which import the label is
        namespace = _imports_namespace(project, upstream)
        assert namespace is not None  # a wheel or directory upstream
        try:
            found = store.import_ref(namespace, made_on)
            shared = store.shared_import_ref(upstream, made_on) if found is None else None
        except (ValueError, PatchforgeError):  # no label an import could have
            found = shared = None
        if found is not None:
            return found, made_on
        if config.kind == "dir":
            labels = ", ".join(label for label, _ in store.imports_of(namespace)) or "none"
            if shared is not None:
                raise UsageError(
                    f"--made-on {made_on}: this project has no import of {upstream} labelled "
                    f"{made_on} (imported: {labels}); the shared cache has one under that "
                    "name and label, but made by another project or by an earlier "
                    "patchforge, and which project made it cannot be told",
                    hint="name the commit of the version the overlay was made on: `--made-on "
                         "COMMIT` (40 hex digits; if upstream.lock once pinned "
                         f"{made_on}, its history names it: `git log -p -- upstream.lock`)")
            raise UsageError(f"--made-on {made_on}: {upstream} has no import labelled "
                             f"{made_on} (imported: {labels})",
                             hint="name the label the directory was imported under when the "
                                  "overlay was made")
    made = pin_for_spec(project, store, config, made_on)
    return made.commit, made.label


# How many of the commits a git upstream's store holds by id (no tag), before the pin, an
# import also compares an overlay with; every tag before the pin is compared with.
HELD_COMMITS = 20


def _versions_held(project: Project, store: UpstreamStore, upstream: str,
                   pin: str) -> list[tuple[str, str]]:
    """A git upstream's revisions before `pin` that the store holds by name (its tags: the
    releases pinned, judged or rebased onto; then up to HELD_COMMITS commits), as
    (commit, name); [] for a wheel or directory upstream."""
    config = project.config.upstream(upstream)
    if config.kind in ("wheel", "dir") or config.url is None:
        return []
    from patchforge.errors import StoreError
    from patchforge.store.giturl import store_namespace

    try:
        held = store.versions_held(store_namespace(upstream, config.url), pin)
    except StoreError:
        return []
    tags = [(commit, name) for commit, name in held if name != commit]
    return tags + [(commit, name) for commit, name in held if name == commit][:HELD_COMMITS]


def _wheel_versions_shared(project: Project, store: UpstreamStore,
                           upstream: str) -> list[tuple[str, str]]:
    """A wheel upstream's versions other projects of the cache imported, from the very wheel
    files this project would import (sources.shared_wheel_imports), as (label, commit); []
    for a git or directory upstream (a directory's versions are its own project's)."""
    config = project.config.upstream(upstream)
    if config.kind != "wheel" or not config.package:
        return []
    from patchforge.errors import StoreError
    from patchforge.store.sources import shared_wheel_imports

    try:
        return shared_wheel_imports(store, upstream, config.package)
    except StoreError:
        return []


def _wheel_pin_version(project: Project, upstream: str, pin):
    """The pinned release of a wheel upstream as a packaging Version, the one an overlay's
    earlier versions are older than; None for a git or directory upstream (a directory's
    labels are names, not ordered releases) or a label that is no version."""
    if project.config.upstream(upstream).kind != "wheel":
        return None
    return _release(pin.label)


def _release(label: str):
    """`label` as a packaging Version, None when it is none."""
    from packaging.version import InvalidVersion, Version

    try:
        return Version(label)
    except InvalidVersion:
        return None


def _refuse_made_on_earlier(store: UpstreamStore, pin, upstream: str, namespace: str | None,
                            path: str, base: bytes, new: bytes, overlay: Path,
                            notes: list, held: list[tuple[str, str]] | None = None,
                            shared: list[tuple[str, str]] | None = None,
                            before=None) -> None:
    """UsageError, nothing written, when the overlay `new` looks made on another version of
    `path` than the pin's `base`: of the file's other versions the store has (for a git
    upstream, the versions at the revisions before the pin the store holds by name, `held`:
    a release pinned or rebased from however far back, and the last EARLIER_VERSIONS in its
    first-parent history; for a wheel or directory
    upstream, the versions this project imported (`namespace`): pins, targets judged or rebased
    onto; for a wheel also those of its files other projects of the cache imported, `shared`,
    and of a wheel's only the releases older than the pinned one, `before`, as for a git
    upstream: a later release's file holds the fixes upstream made since, and an overlay made
    on the pin that backports one is nearer to it than to the pin's), the one that differs least from it differs less than `base` does, and where `base`
    differs from that version the overlay holds some of that version's lines and none of
    `base`'s. Imported against `base`, its patch would carry those differences of the
    upstream's (for an earlier version: take the upstream's changes back).

    Where the overlay also changed lines the two versions differ in (neither as the one nor
    as the other: a fix on those lines, or a resolution of the series made after the
    upstream's change), the two cannot be told apart: a note names the lines, and the import
    goes on."""
    from collections import Counter

    from patchforge.errors import StoreError

    # (how the version is said, the SPEC `--made-on` takes for it, revision, taken back?)
    candidates: list[tuple[str, str, str, bool]]
    try:
        versions = store.earlier_versions(pin.commit, path, EARLIER_VERSIONS)
        if versions:
            # The releases first: an overlay made on one differs least from it, where the
            # window of recent commits may hold only versions after it (a file changed in
            # more commits since), whose nearest would name the wrong version or none. (Of
            # one file's versions, the first is said: a tag, else the commit that changed it.)
            tags = [(commit, name) for commit, name in held or [] if name != commit]
            candidates = [(f"the file as {upstream} {name} has it", name, commit, True)
                          for commit, name in tags]
            candidates += [(f"the file as it was before {upstream} commit {commit[:12]} "
                            f"({subject})", parent, parent, True)
                           for commit, parent, subject in versions]
            candidates += [(f"the file as {upstream} commit {commit[:12]} has it", commit,
                            commit, True) for commit, name in held or [] if name == commit]
        elif namespace is not None:  # no history: a wheel or a directory, whose versions
            # are this project's imports (another project's of the same name are not its),
            # and a wheel's that another project imported from the same file (`shared`: a
            # new project's overlay made on a release it never pinned took that release's
            # changes back unseen), a label this project imported itself taken as its own
            own = store.imports_of(namespace)
            labels = {label for label, _ in own}
            candidates = [(f"the file as {label} has it", label, commit, False)
                          for label, commit in own + [(label, commit) for label, commit
                                                      in shared or [] if label not in labels]
                          if commit != pin.commit and _older(label, before)]
        else:
            candidates = []
        if not candidates:
            return
        store.prefetch([(rev, [path]) for _, _, rev, _ in candidates])
        contents = [(said, spec, earlier, store.read_blob(rev, path))
                    for said, spec, rev, earlier in candidates]
    except StoreError:
        return  # offline without those files, or no history: nothing to compare with
    wanted = Counter(new.splitlines(keepends=True))

    def distance(data: bytes) -> int:
        have = Counter(data.splitlines(keepends=True))
        return sum(((have - wanted) + (wanted - have)).values())

    nearest, nearest_distance = None, distance(base)
    seen = {base}
    for said, spec, earlier, data in contents:
        if data is None or data in seen:
            continue
        seen.add(data)
        if (found := distance(data)) < nearest_distance:
            nearest, nearest_distance = (said, spec, earlier, data), found
    if nearest is None:
        return
    said, spec, earlier, other = nearest
    as_other, as_pinned, neither = _rebase_changes_kept(other, base, new)
    if not as_other or as_pinned:
        return
    lines = base.splitlines(keepends=True)
    shown = "; ".join(f"{no}: {lines[no - 1].decode('utf-8', 'replace').rstrip()!r}"
                      if no <= len(lines) else str(no) for no in as_other[:3]) \
        + ("; ..." if len(as_other) > 3 else "")
    which = "line" if len(as_other) == 1 else "lines"
    does = "take back the upstream's changes made since" if earlier else \
        f"carry the upstream's differences between it and {pin.label}"
    if neither:
        notes.append(
            f"{overlay} may be made on {said}: imported against {pin.label}, its patch would "
            f"{does} at the pinned file's {which} {shown}; if so, `patchforge delete` this "
            f"patch and import it again with `--made-on {spec}`")
        return
    raise UsageError(
        f"{overlay} looks made on another {path} than {pin.label}'s: {said} differs less from "
        f"it, and it holds that file's lines where {pin.label}'s differ, so imported against "
        f"{pin.label} the patch would {does} (the pinned file's {which} {shown}); nothing "
        "was written",
        hint=f"made on that version: `--made-on {spec}` carries its change onto "
             f"{pin.label}'s file; if those lines as they are in the overlay are part of the "
             f"fix: `--made-on {pin.commit}`")


def _series_file(project: Project, store: UpstreamStore, upstream: str, path: str,
                 profiles: str | None):
    """The series' state of `upstream` an overlay of `path` is imported against, and the names
    of its patches that touch `path`. Without `profiles`, the whole series; where some of its
    patches are for some profiles only, the patches for every profile (the new patch's base:
    see `_without_profile_fixes` for an overlay made from a profile's file). With them, the
    patches of those profiles, as their overlays were built: a profile's overlay lacks the
    other profiles' fixes, and the difference from the whole series' file would undo them in
    the new patch, which then applied to none of its profiles. Profiles whose series leave
    `path` differently have no one file to import against: refused."""
    from patchforge.apply.chains import profile_state
    from patchforge.apply.series import applies_to_profile
    from patchforge.formats.patchfile import profile_names

    pin = project.lock.pin(upstream)
    patches = [(n, project.read_patch(upstream, n)) for n in project.patch_names(upstream)]
    configured = list(project.config.profiles)
    if profiles is None and not profile_bases_differ(patches, configured):
        state = series_state(project, store, upstream)
        return state, [n for n, patch in patches if path in patch.paths]
    if profiles is None:
        # A fix for every profile is made on what every profile's series shares: the fixes
        # for every profile, without those for some profiles only (apply.chains), as `new`
        # and `refresh` make it. Made on the whole series, its context held a gfx942 fix's
        # lines, and it applied to every profile with fuzz only.
        from patchforge.apply.chains import base_state

        state = base_state(lambda paths: store.read_blobs(pin.commit, paths), patches,
                           configured, None)
        return state, [n for n, patch in patches
                       if path in patch.paths and profile_set(patch, configured) is None]
    states = []
    for profile in profile_names(profiles):
        selected = [(n, p) for n, p in patches if applies_to_profile(p, profile)]
        # The file as that profile's overlay holds it (a fix for more profiles carried there
        # from its base: apply.chains).
        state = profile_state(lambda paths: store.read_blobs(pin.commit, paths), patches,
                              list(project.config.profiles), profile)
        states.append((profile, state, [n for n, p in selected if path in p.paths]))
    first = states[0]
    for profile, state, _ in states[1:]:
        if state.current.get(path) != first[1].current.get(path):
            raise UsageError(f"the series leaves {path} differently in profiles {first[0]} and "
                             f"{profile}: an overlay is one profile's file",
                             hint=f"import it for the profile it was made in (`--profiles "
                                  f"{first[0]}`)")
    return first[1], first[2]


def _profile_files(project: Project, store: UpstreamStore, upstream: str, path: str,
                   old: bytes | None) -> list[tuple[str, bytes | None, list[str]]]:
    """For a fix for every profile made on `old` (`path` on the patches every profile's
    series holds): each profile whose series leaves `path` otherwise, with that file and its
    patches for some profiles only that touch `path`. [] in a series of one chain."""
    from patchforge.apply.chains import profile_state
    from patchforge.errors import ApplyError

    configured = list(project.config.profiles)
    patches = [(n, project.read_patch(upstream, n)) for n in project.patch_names(upstream)]
    if not profile_bases_differ(patches, configured):
        return []
    pin = project.lock.pin(upstream)
    found = []
    for profile in configured:
        try:
            state = profile_state(lambda paths: store.read_blobs(pin.commit, paths), patches,
                                  configured, profile)
        except ApplyError:
            continue  # a profile's series that does not apply: lint's and overlays' to say
        there = state.current[path] if path in state.current else old
        if there != old:
            found.append((profile, there, [
                n for n, patch in patches if path in patch.paths
                and profile in (profile_set(patch, configured) or ())]))
    return found


def _without_profile_fixes(others: list[tuple[str, bytes | None, list[str]]], path: str,
                           old: bytes | None, new: bytes, overlay: Path,
                           notes: list[str]) -> bytes:
    """`new`, an overlay for every profile, without the changes of fixes for some profiles
    only (`others`: _profile_files). One made from a profile's overlay holds that profile's
    fixes: its difference from `old` would bring them into every profile's series. Where it
    keeps every change those fixes make, it was made from that profile's file: its own change
    is taken onto `old` (git's 3-way merge, that file as the base), the fixes left to their
    profiles. A change that meets theirs, or an overlay that is that file as it is, is
    refused (UsageError), nothing written."""
    for profile, there, names in others:
        if there is None or old is None or new == old:
            continue
        met = _SeriesChangesMet(old, there, new)
        if met.taken_out or met.put_back:
            continue  # not made from that profile's file
        fixes = ", ".join(names) or f"the fixes for {profile}"
        if new == there:
            raise UsageError(
                f"{overlay} is {path} as {profile}'s series leaves it: it holds only the changes "
                f"of {fixes} (for some profiles only), and no change of its own for every "
                "profile; nothing was written",
                hint=f"a fix for {profile} is imported with `--profiles {profile}`; a fix for "
                     "every profile is made on the file without the other profiles' fixes "
                     "(the upstream's, or the overlay of a profile without them)")
        clean, merged = merge_file(there, old, new,
                                   labels=(f"{profile}'s series", "every profile's", "overlay"))
        if not clean:
            raise UsageError(
                f"{overlay} was made from {path} as {profile}'s series leaves it, with the "
                f"changes of {fixes} (for some profiles only), and changes lines they change"
                f"{_series_side(merged, 'every profile' + chr(39) + 's')}: as a fix for every "
                "profile it would carry them into every profile's series; nothing was written",
                hint=f"import it for {profile} alone (`--profiles {profile}`), or make the "
                     "change on the file without the other profiles' fixes")
        make = "makes" if len(names) == 1 else "make"
        notes.append(f"{overlay} holds the changes that {fixes} {make} to {path} for {profile} "
                     f"(it was made from {profile}'s file): they stay {profile}'s, and the new "
                     "patch, for every profile, holds only the overlay's own change, made on "
                     "the series every profile shares")
        return merged
    return new


def _refuse_leaving_profiles(others: list[tuple[str, bytes | None, list[str]]], path: str,
                             old: bytes | None, new: bytes, overlay: Path) -> None:
    """Refuse (UsageError) a fix for every profile, `old` to `new`, whose change does not go
    into the series of a profile whose fixes for it alone change the same lines
    (apply.chains.carry_file): imported, that profile's overlays would fail on it."""
    from patchforge.apply.chains import REMEDY, carry_file

    for profile, there, names in others:
        ok, _ = carry_file(old, new, there)
        if not ok:
            fixes = ", ".join(names) or f"the fixes for {profile}"
            raise UsageError(
                f"{overlay}: its change to {path}, as a fix for every profile, meets lines that "
                f"{fixes} change{'s' if len(names) == 1 else ''} for {profile}, so it would not "
                f"go into {profile}'s series; nothing was written",
                hint=f"{REMEDY}; or import it for the profiles it is for (`--profiles`)")


def _kept_before_rebase(project: Project, upstream: str, path: str,
                        profiles: str | None) -> tuple[str | None, bytes | None]:
    """(overlays/ path, the bytes kept of it as it was before the last rebase) of the overlay
    of `path` for `profiles` (`overlay.keep_moved_aside`); (None, None) when no one overlay
    is named (profiles configured, not one given), (rel, None) when none is kept."""
    from patchforge.formats.patchfile import profile_names
    from patchforge.overlay import before_rebase

    names = profile_names(profiles) if profiles is not None else ()
    if project.config.profiles:
        if len(names) != 1:
            return None, None
        rel = f"{names[0]}/{upstream}/{path}"
    else:
        rel = f"{upstream}/{path}"
    return rel, before_rebase(project, rel)


def _made_before_rebase(project: Project, upstream: str, path: str, profiles: str | None,
                        old: bytes, new: bytes, overlay: str
                        ) -> tuple[str, bytes, list[int]] | None:
    """(overlays/ path, its bytes before the last rebase, the lines of `old` the rebase
    changed that `new` holds as before it) when `new` was made from the overlay
    of `path` as it was before the last rebase (kept by `overlay.keep_moved_aside`), None when
    it was made from the rebased one (`old`).

    Told by the lines the rebase changed (the kept file's differences from `old`): a file made
    from the kept one holds, at those it leaves alone, the kept file's lines, and one made
    from the rebased file holds the rebased lines. The kept file stays until its moved file is
    imported, so a later file (made from the rebased overlay, or from one written since) can
    meet it: one that puts back some of the lines the rebase changed and keeps others would
    have those lines dropped if its change were taken from the kept file, and the lines the
    rebase changed if taken from the rebased one. Such a file, or one that changes every line
    the rebase changed, is refused naming both files (UsageError), nothing written."""
    from patchforge.overlay import BEFORE_REBASE_DIR

    rel, before = _kept_before_rebase(project, upstream, path, profiles)
    if rel is None or before is None or before == old or new == old:
        return None
    try:
        in_place = Path(overlay).resolve() == (project.overlays_dir / rel).resolve()
    except OSError:
        in_place = False
    if in_place:
        # overlays/<rel> itself is what the write-out wrote there (the rebased file), edited
        # since: the kept file was not its start.
        return None
    as_before, as_rebased, neither = _rebase_changes_kept(before, old, new)
    if as_before and not as_rebased:
        # With lines the rebase changed changed too (`neither`), the merge refuses it, naming
        # the file it was made from.
        return rel, before, as_before
    if as_rebased and not as_before:
        return None
    kept = f".patchforge/{BEFORE_REBASE_DIR}/{rel}"
    raise UsageError(
        f"{overlay} may be made from overlays/{rel} as it was before the last rebase (kept as "
        f"{kept}) or from the rebased overlays/{rel}: of the lines the rebase changed there, "
        "it holds " + " and ".join(_lines_said(lines, how) for lines, how in (
            (as_before, "as before"), (as_rebased, "as rebased"), (neither, "changed"))
            if lines)
        + ", so taken from either file, part of its change would be lost; nothing was written",
        hint=f"made from the rebased overlay (after the rebase): `rm {kept}`, then import again; "
             f"made from the one before: `git merge-file {overlay} {kept} overlays/{rel}` "
             f"(after `patchforge overlays`) takes the rebase into it, then `rm {kept}` and "
             "import again")


def _lines_said(lines: list[int], how: str) -> str:
    shown = ", ".join(str(no) for no in lines[:4]) + (", ..." if len(lines) > 4 else "")
    return f"line{'s' if len(lines) > 1 else ''} {shown} {how}"


def _rebase_changes_kept(before: bytes, old: bytes, new: bytes
                         ) -> tuple[list[int], list[int], list[int]]:
    """The changes a rebase made from `before` to `old`, by the one `new` holds: (as in
    `before`, as in `old`, neither), each the line numbers in `old` where a change is."""
    from patchforge.apply.undone import changes_kept

    found: dict[str, list[int]] = {"before": [], "old": [], "neither": []}
    for kept in changes_kept(before, old, new):
        found[kept.how].append(kept.j1 + 1)
    return found["before"], found["old"], found["neither"]


class _SeriesChangesMet:
    """What an overlay does to the changes the series makes to a file (`base`, the upstream's
    file, to `made`, the series' file): the lines the series put there that the overlay takes
    out or changes (`taken_out`: (line in `made`, text)), runs of lines the series removes
    that the overlay brings back, edited or not, or puts back as they were beside the lines
    the series put in their place (`put_back`: (removed, added)), and lines it adds where the
    series removed others, resembling none of them, or beside lines the series put in place of
    others, resembling those (`beside_removed`).
    `undoes_all`: the overlay undoes every change of the series (it was made from the
    upstream's file)."""

    def __init__(self, base: bytes, made: bytes, new: bytes) -> None:
        from difflib import SequenceMatcher

        base_lines, made_lines, new_lines = (data.splitlines(keepends=True)
                                             for data in (base, made, new))
        added: set[int] = set()  # lines of `made` the series put there
        # Where the series removes lines: position in `made` (where they were, or any place
        # among the lines put in their place) -> (where the change begins, the lines removed)
        removed: dict[int, tuple[int, list[bytes]]] = {}
        only_removed = set()  # the changes that remove lines and add none, by where they begin
        for tag, i1, i2, j1, j2 in SequenceMatcher(None, base_lines, made_lines,
                                                   autojunk=False).get_opcodes():
            if tag in ("replace", "insert"):
                added.update(range(j1, j2))
            if tag in ("replace", "delete"):
                removed.update((at, (j1, base_lines[i1:i2])) for at in range(j1, j2 + 1))
            if tag == "delete":
                only_removed.add(j1)
        self.taken_out: list[tuple[int, bytes]] = []
        self.put_back: list[tuple[list[bytes], list[bytes]]] = []
        self.beside_removed: list[tuple[list[bytes], list[bytes]]] = []
        back = set()  # positions of `removed` where the overlay has lines again
        for tag, i1, i2, j1, j2 in SequenceMatcher(None, made_lines, new_lines,
                                                   autojunk=False).get_opcodes():
            if tag in ("replace", "delete"):
                self.taken_out.extend((i + 1, made_lines[i]) for i in range(i1, i2)
                                      if i in added)
            if tag in ("replace", "insert"):
                inserted = new_lines[j1:j2]
                met = {removed[at][0]: removed[at][1] for at in range(i1, i2 + 1)
                       if at in removed}
                for begins, gone in sorted(met.items()):
                    exact = any(inserted[k:k + len(gone)] == gone
                                for k in range(len(inserted)))
                    alike = any(_resembles(a, b) for a in gone for b in inserted)
                    if exact or (alike and begins in only_removed):
                        self.put_back.append((gone, inserted))
                        back.add(begins)
                    elif alike or begins in only_removed:
                        # Beside lines the series put in place of others, a line like those
                        # is said; an unrelated one is a change like any other.
                        self.beside_removed.append((gone, inserted))
        # None of the series' lines is left and what it only removes is back: the overlay was
        # made from the upstream's file, whatever it changes there itself.
        self.undoes_all = len(self.taken_out) == len(added) and only_removed <= back

    def clauses(self, patches: str, path: str) -> list[str]:
        out = []
        if self.taken_out:
            out.append(f"takes out or changes lines that {patches} put in {path} ("
                       + ", ".join(f"line {no}: {_said(text)}" for no, text in self.taken_out[:3])
                       + (", ..." if len(self.taken_out) > 3 else "") + ")")
        for gone, inserted in self.put_back[:3]:
            out.append(f"brings back lines that {patches} remove from {path} ("
                       + " / ".join(_said(line) for line in gone) + ") as "
                       + " / ".join(_said(line) for line in inserted))
        return out

    def beside_note(self, overlay: Path, patches: str, path: str) -> str:
        gone, inserted = self.beside_removed[0]
        return (f"{overlay} adds " + " / ".join(_said(line) for line in inserted)
                + f" where {patches} remove " + " / ".join(_said(line) for line in gone)
                + f" from {path}: imported as added lines, those stay removed")


def _series_side(merged: bytes, whose: str = "the series'") -> str:
    """` (the series': ...)`: the series' side (`whose`) of the first conflicts in a merge
    whose second side it is, to name them; "" when it has none."""
    lines, inside = [], False
    for line in merged.splitlines():
        if line.startswith(b"<<<<<<< "):
            inside = True
        elif line.startswith((b"=======", b"||||||| ")):
            inside = False
        elif inside and line.strip():
            lines.append(_said(line))
    if not lines:
        return ""
    return (f" ({whose}: " + " / ".join(lines[:3]) + (" / ..." if len(lines) > 3 else "")
            + ")")


def _resembles(a: bytes, b: bytes) -> bool:
    """Whether line `b` looks like line `a` edited: one holds the other (six characters at
    least), or difflib finds them 60% alike."""
    from difflib import SequenceMatcher

    a, b = a.strip(), b.strip()
    if not a or not b:
        return False
    short, long_ = sorted((a, b), key=len)
    if len(short) >= 6 and short in long_:
        return True
    return SequenceMatcher(None, a, b, autojunk=False).ratio() >= 0.6


def _said(line: bytes) -> str:
    return line.rstrip(b"\r\n").decode("utf-8", "replace")


def _as_written_before(project: Project, upstream: str, file_name: str, data: bytes) -> bytes:
    """The bytes an earlier run of this import wrote, when a kill left them unlisted and they
    differ from `data` only by their Last-Update (the import run again on a later day, which
    was refused as "a patch file is already there"); otherwise `data`."""
    path = project.patch_path(upstream, file_name)
    if file_name in project.patch_names(upstream) or not path.is_file():
        return data
    try:
        earlier = path.read_bytes()
        date = parse_patch_file(earlier, str(path)).get("Last-Update")
        if date and parse_patch_file(data, str(path)).with_field(
                "Last-Update", date).to_bytes() == earlier:
            return earlier
    except (OSError, InputError):
        pass  # not that import's file: _check_new_name refuses it
    return data


def _git(*args: str, cwd=None, input: bytes | None = None) -> bytes:
    cmd = ["git", *args]
    proc = run_git(*args, cwd=cwd, input=input, ok=None)
    if proc.returncode != 0:
        raise UsageError(f"{' '.join(cmd[:3])} failed: "
                         f"{proc.stderr.decode('utf-8', 'replace').strip()}")
    return proc.stdout


def _refuse_root_with_upstream_files(store: UpstreamStore, pin: str, commit, repo: Path,
                                     rev_range: str) -> None:
    """Refuse a root commit that adds files the upstream has at the pin (a fixes repository
    started from a copy of the upstream's tree): its patch would create them all again, a
    patch no tree of the upstream takes. Its fixes are in the commits after it."""
    from patchforge.store.userrepo import commit_named

    added = {d.path: d.new for d in commit.deltas if d.new is not None}
    there = store.entries(pin, list(added))
    present = {path: entry[1] for path, entry in there.items() if entry is not None}
    if not present:
        return
    # (A blob's id is git's hash of its content: the same id is the same file.)
    same = [path for path, oid in present.items() if oid == blob_oid(added[path])]
    shown = ", ".join(list(present)[:3]) + (f" and {len(present) - 3} more"
                                            if len(present) > 3 else "")
    # The range's tip (`BASE..TIP`, or a single revision); `A...B`, `^A B`: left to the user.
    tip = "TIP" if "..." in rev_range or "^" in rev_range or " " in rev_range else \
        rev_range.rsplit("..", 1)[-1]
    raise UsageError(f"{rev_range} in {repo}: {commit_named(commit.sha, commit.subject)} is a "
                     f"root commit adding files the upstream has at the pin ({shown}"
                     + (", as the pin has them" if len(same) == len(present) else "")
                     + "): its patch would create them again",
                     hint=f"leave it out of the range: `{commit.sha[:12]}..{tip or 'HEAD'}` "
                          "imports the commits after it")


def import_git(project: Project, store: UpstreamStore, rev_range: str, *, repo: Path,
               upstream: str) -> tuple[list[str], list[tuple[str, str]]]:
    """One patch per commit of RANGE in REPO (oldest first), header from the commit. RANGE is
    what `git log RANGE` lists: a single revision is that commit and every one before it,
    down to the root (whose patch adds the files it holds). Returns the patches' names and
    the commits left out as changing no file ((id, subject) each): an empty commit (`git
    commit --allow-empty`) makes no patch, as `git format-patch` writes no message of it and
    `git am` stops on one without a diff (an empty fix in the series was only `lint`'s
    warning, and `export` handed it to quilt and `git am` all the same)."""
    project.config.upstream(upstream)
    pin = project.lock.pin(upstream)
    from patchforge.store.userrepo import read_commits

    pending: list[tuple[str, bytes]] = []
    sources: dict[str, tuple[str, bytes | None]] = {}
    commits = read_commits(Path(repo), rev_range)
    for commit in commits:
        if commit.root:
            _refuse_root_with_upstream_files(store, pin.commit, commit, Path(repo), rev_range)
    # (A rename keeps its two paths: the patch `git format-patch -M` writes of the commit.)
    diffs = [make_diff(FileChange(d.old_path, d.new_path, d.old, d.new, d.old_mode, d.new_mode)
                       for d in commit.deltas) for commit in commits]
    # The range's commits are made on its first commit's parent, not on the pin: a commit
    # whose diff meets other files on the pin than the ones it was made on (its `index` lines
    # say which) records that commit as its Base, never a claim that it was made on the pin.
    elsewhere = _made_elsewhere(project, store, upstream, pin.commit,
                                [(f"{repo}: commit {c.sha}", d) for c, d in zip(commits, diffs)])
    range_base = commits[0].parent if commits else None
    skipped: list[tuple[str, str]] = []
    for commit, diff, moved in zip(commits, diffs, elsewhere):
        sha, subject, body = commit.sha, commit.subject, commit.body
        if not commit.deltas:
            skipped.append((sha, subject))
            continue
        name, mail, date = commit.author_name, commit.author_email, commit.date
        for what, value in (("subject", subject), ("author", f"{name} <{mail}>")):
            char = control_character(value)
            if char is not None:
                # As `import mbox` refuses it: the subject becomes the fix's Description,
                # which every terminal showing the patch would act on.
                raise InputError(f"{rev_range} in {repo}: commit {sha[:12]}'s {what} holds a "
                                 f"control character ({char}): nothing was imported",
                                 hint="reword the commit (`git rebase -i`, `reword`), or leave "
                                      "it out of the range")
        made_on = range_base if moved and range_base is not None else pin.commit
        # A message that begins with a patch header (`git am` of `export --mbox`) gives its
        # fields back; the commit fills only what it lacks.
        carried = _carried_header(body, diff, f"{repo}: commit {sha}")
        if carried is not None:
            data = _adopted(carried, upstream, made_on, (
                ("Description", subject), ("Author", f"{name} <{mail}>"),
                ("Origin", f"vendor, commit {sha}"))).to_bytes()
        else:
            # A Markdown `---` (vLLM's pull-request template) or a quoted diff in a real
            # commit message is quoted, never a reason to refuse the commit.
            quoted = quote_diff_like(subject.encode("utf-8", "surrogateescape")).decode(
                "utf-8", "surrogateescape")
            fields = [("Description", quoted), ("Author", f"{name} <{mail}>"),
                      ("Origin", f"vendor, commit {sha}"), ("Upstream-Status", "Pending"),
                      ("Upstream", upstream), ("Base", made_on), ("Last-Update", date)]
            description = quote_diff_like(body.strip().encode("utf-8", "surrogateescape"))
            data = render_patch_file(fields, description + b"\n" if description else b"", diff)
        _refuse_control_characters(data, f"{repo}: commit {sha}",
                                   f"{rev_range} in {repo}: commit {sha[:12]}'s message",
                                   "reword the commit (`git rebase -i`, `reword`), or leave it "
                                   "out of the range")
        file_name = patch_file_name(slugify(subject))
        if any(file_name == p[0] for p in pending):
            file_name = _free_name(project, upstream, slugify(subject) + "-" + sha[:8],
                                   {p[0] for p in pending}, data)
        else:
            _check_new_name(project, upstream, file_name, data)
        pending.append((file_name, data))
        sources[file_name] = (f"{repo}: commit {sha}", None)
    _write_imported(project, store, upstream, pending, sources, pin=pin.commit,
                    remake=_remake_on_pin(project, upstream, Path(repo), rev_range, commits,
                                          pin.commit))
    return [n for n, _ in pending], skipped


# What an import reads whole into memory (an overlay, an mbox): far more than any upstream
# file or series of mails, far less than a machine's memory.
INPUT_LIMIT = 256 << 20


def _read_input(path, what: str) -> bytes:
    """The bytes of the file `path` names (a pipe too: `import mbox <(git format-patch
    --stdout ...)`), read whole, up to INPUT_LIMIT: a larger one (a model's weights named by
    mistake, /dev/zero) is refused naming it. Read whole, it exhausted the machine's memory,
    or was an internal error (MemoryError) under a limit."""
    with open(path, "rb") as handle:
        data = handle.read(INPUT_LIMIT + 1)
    if len(data) > INPUT_LIMIT:
        raise InputError(f"larger than {INPUT_LIMIT >> 20} MiB: more than patchforge reads as "
                         f"{what}", path=str(path), hint="name the file meant")
    return data


def _refuse_control_characters(data: bytes, name: str, what: str, hint: str) -> None:
    """Parse the patch file an import made (`name` in errors) and refuse one whose header or
    free-text description holds a control character, as `import quilt` refuses it: kept, every
    terminal showing the patch, the commit `pr` makes, its pull request or the mail `export
    --mbox` writes would act on it. `what` names what carried it."""
    patch = parse_patch_file(data, name)
    field = field_with_control_character(patch)
    held = (field[0], field[2]) if field is not None else None
    text = description_with_control_character(patch)
    held = held or (("description", text[1]) if text is not None else None)
    if held is not None:
        raise InputError(f"{what} holds a control character ({held[1]}) in its {held[0]}: "
                         "nothing was imported", hint=hint)


def _remake_on_pin(project: Project, upstream: str, repo: Path, rev_range: str, commits,
                   pin: str) -> str | None:
    """The commands that make RANGE's commits again on the pin in `repo` and import them
    from there, for the refusal of a commit made on another version (the pin's lines changed
    since, or its place there is in doubt): `git rebase --onto PIN OLD-BASE TIP`, then
    `import git PIN..TIP`. Importing RANGE again after the rebase, as the words "import it
    again" said, took the upstream's own commits between the old base and the pin into the
    range, each refused in turn with the same words. A repository without the pin's commit
    fetches it first; an upstream that is no git repository (a wheel) has no commit to
    rebase onto: None, the words as they were."""
    from patchforge.store.giturl import is_plain_path

    config = project.config.upstream(upstream)
    if config.kind != "git" or not commits or commits[0].parent is None:
        return None
    # `BASE..TIP` as written (either side may be left out: HEAD); another form of range (a
    # single revision, `A...B`, `^A B`) names no base and tip to say the commands with.
    plain = re.fullmatch(r"([^.^~:\s]\S*?)?\.\.([^.\s]\S*)?", rev_range)
    if plain is None:
        return None
    base, tip = plain.group(1) or "HEAD", plain.group(2) or "HEAD"
    branch = run_git("show-ref", "--verify", "--quiet", f"refs/heads/{tip}", cwd=repo,
                     ok=None).returncode == 0
    q = shlex.quote
    here = q(str(repo.resolve()))  # the commands run as they are from anywhere
    steps = []
    has_pin = run_git("cat-file", "-e", f"{pin}^{{commit}}", cwd=repo, ok=None).returncode == 0
    if not has_pin:
        url = config.url or ""
        if is_plain_path(url) and not Path(url).is_absolute():
            url = str((project.root / url).resolve())
        steps.append(f"`git -C {here} fetch {q(url)} {pin}`")
    steps.append(f"`git -C {here} rebase --onto {pin[:12]} {q(base)} {q(tip)}` (resolving what "
                 "it stops on)")
    several = len(project.config.upstreams) > 1
    steps.append(f"`patchforge import git {q(pin[:12] + '..' + (tip if branch else 'HEAD'))} "
                 f"--repo {here}" + (f" --upstream {q(upstream)}" if several else "")
                 + "` imports the rebased commits")
    return ", then ".join(steps)


def _made_elsewhere(project: Project, store: UpstreamStore, upstream: str, pin: str,
                    diffs: list[tuple[str, bytes]]) -> list[bool]:
    """For each diff of an import ((where it came from, the diff), in order, after the series
    at `pin`), whether its `index` lines name other files than the ones it meets there: it was
    made on another version of the upstream (a branch made on an older one). A diff without
    index lines, or that creates its files, names none: False."""
    from patchforge.apply.diffparse import parse_diff
    from patchforge.apply.hunks import apply_file_patch, made_on
    from patchforge.apply.series import PatchPart, outcomes_on_bases

    parts = [PatchPart(list(parse_diff(diff, source=source)), source)
             for source, diff in diffs]
    owner = {id(fp): k for k, part in enumerate(parts) for fp in part.file_patches}
    found = [False] * len(parts)

    def apply(old, fp, **options):
        k = owner.get(id(fp))
        if k is not None and old is not None and made_on(fp, old) is False:
            found[k] = True
        return apply_file_patch(old, fp, **options)

    configured = list(project.config.profiles)
    patches: list[tuple[str, PatchFile | PatchPart]] = [
        (n, project.read_patch(upstream, n)) for n in project.patch_names(upstream)]
    patches += [(f"import-{k}", part) for k, part in enumerate(parts)]
    outcomes_on_bases(lambda paths: store.read_blobs(pin, paths), patches,
                      [profile_set(patch, configured) for _, patch in patches], strict=False,
                      allow_zero_context=True, apply=apply)
    return found


def _quilt_patch(data: bytes, source: Path, strip: int = 1,
                 empty: frozenset[str] = frozenset()) -> PatchFile:
    """A quilt patch file parsed, the names `export --quilt` quoted for GNU patch as git
    writes them; one quilt's series lists at another strip level (`fix.patch -p0`) with -p1
    names. quilt writes the old side of a file that is empty in its tree as `/dev/null`
    (`quilt diff`: an empty old file is no file), which GNU patch applies to the empty file:
    a section that so "creates" one of `empty` (files empty at the pin that no patch
    changes) is read as the change of that file it is."""
    data = with_p1_names(data, strip, str(source))
    parsed = parse_patch_file(data, str(source))
    head = data[:len(data) - len(parsed.diff)]
    diff = as_git_writes(parsed.diff)
    if empty:
        sections = parse_patch_file(head + diff, str(source)).parsed_diff
        if any(fp.is_new and fp.new_path in empty for fp in sections.files):
            diff = b"".join(_as_change_of_empty(fp) if fp.is_new and fp.new_path in empty
                            else fp.raw for fp in sections.files) + sections.trailing
    if diff != parsed.diff:
        parsed = parse_patch_file(head + diff, str(source))
    held = field_with_control_character(parsed)
    if held is not None:
        # As `import mbox` refuses a Subject's terminal escape sequence: kept in the fix's
        # header, every terminal showing the patch (`cat`, `git log -p`) would act on it.
        name, line, char = held
        raise InputError(f"its {name} holds a control character ({char}): nothing was "
                         "imported", path=str(source), line=line,
                         hint="remove it from the file and import it again")
    held_text = description_with_control_character(parsed)
    if held_text is not None:
        # The free text is the commit body and the pull request's `pr` makes, the mail's
        # `export --mbox` writes: refused as a header's is.
        line, char = held_text
        raise InputError(f"its description holds a control character ({char}): nothing was "
                         "imported", path=str(source), line=line,
                         hint="remove it from the file and import it again")
    return parsed


def _as_change_of_empty(fp) -> bytes:
    """A file section that creates `fp.new_path` written as the change of that file, empty
    before it: `--- a/PATH` for `--- /dev/null`, without a `new file mode` line."""
    header, at, hunks = fp.raw.partition(b"\n@@")
    null = b"--- /dev/null"
    lines = [b"--- a/" + fp.new_path.encode("utf-8", "surrogateescape") + line[len(null):]
             if line.startswith(null) and line[len(null):len(null) + 1] in (b"", b"\t", b"\r")
             else line
             for line in header.split(b"\n") if not line.startswith(b"new file mode ")]
    return b"\n".join(lines) + at + hunks


def _empty_at_the_pin(store, pin: str, entries, strip_levels: dict[str, int],
                      ours_bytes: dict[str, bytes]) -> frozenset[str]:
    """The paths quilt's patches write as created (`--- /dev/null`) that the pin has as an
    empty file no patch of the series changes: quilt's tree had that empty file under them
    (see _quilt_patch)."""
    created: set[str] = set()
    for file_name, source, _, data in entries:
        try:
            sections = _quilt_patch(data, source, strip_levels[file_name]).file_patches
        except PatchforgeError:
            continue  # refused where it is read for its change
        created.update(fp.new_path for fp in sections if fp.is_new and fp.new_path)
    if not created:
        return frozenset()
    for name, data in ours_bytes.items():
        try:
            created -= {p for fp in parse_patch_file(data, name).file_patches
                        for p in (fp.old_path, fp.new_path) if p}
        except PatchforgeError:
            continue
    return frozenset(path for path, blob in store.read_blobs(pin, sorted(created)).items()
                     if blob == b"")


def import_quilt(project: Project, store: UpstreamStore, directory: Path, *,
                 upstream: str) -> list[str]:
    """A quilt patches directory (its `series` file and patches) joins the series, bytes kept;
    patches without a DEP-3 header get the fields patchforge needs (`_adopted`)."""
    project.config.upstream(upstream)
    pin = project.lock.pin(upstream)
    directory = Path(directory)
    series_path = directory / "series"
    if not series_path.exists() and (directory / "patches" / "series").exists():
        directory = directory / "patches"
        series_path = directory / "series"
    listed = quilt_file_bytes(series_path) if series_path.exists() else None
    if listed is None:
        raise UsageError(f"no quilt series file in {directory}")
    series = parse_series(listed, str(series_path), quilt=True)
    entries: list[tuple[str, Path, int, bytes]] = []  # (entry, quilt file, line, bytes)
    for entry, line in series.as_written():
        source = directory / entry
        data = quilt_file_bytes(source, entry=entry, series=series_path, line=line)
        if data is None:
            raise InputError(f"{entry} is listed but missing", path=str(series_path),
                             line=line)
        entries.append((entry, source, line, data))
    # quilt writes a change to a file empty in its tree as creating it (`--- /dev/null`),
    # which GNU patch applies to the empty file: where the pin has that file empty and no
    # patch of the series changes it, it is read as the change of that file it is.
    ours = {name: project.read_patch_bytes(upstream, name)
            for name in project.read_series(upstream).names}
    empty = _empty_at_the_pin(store, pin.commit, entries,
                              {e[0]: series.strip_level(e[0]) for e in entries}, ours)
    pending: list[tuple[str, bytes]] = []
    sources: dict[str, tuple[str, bytes | None]] = {}
    for entry, source, line, raw in entries:
        # An entry listed at another strip level (`fix.patch -p0`) is read as -p1, the names
        # `export --quilt` quoted as git writes them.
        as_p1 = with_p1_names(raw, series.strip_level(entry), str(source))
        parsed = _from_stgit_export(_quilt_patch(raw, source, series.strip_level(entry), empty))
        patch = _adopted(parsed, upstream, pin.commit)
        file_name = patch_file_name(Path(entry).name.removesuffix(".patch").removesuffix(".diff"))
        data = patch.to_bytes()
        _check_new_name(project, upstream, file_name, data)
        _refuse_taken(file_name, {n for n, _ in pending}, str(series_path), line)
        pending.append((file_name, data))
        sources[file_name] = (str(source), as_p1)  # its lines are the file's, line for line
    _write_imported(project, store, upstream, pending, sources, pin=pin.commit)
    return [n for n, _ in pending]


def _names_a_file(mbox: Path) -> bool:
    """Whether `mbox` is a file whose name says where the fixes came from: a pipe's path
    (`import mbox <(git format-patch --stdout A..B)`, /dev/fd/63) names nothing."""
    try:
        return stat.S_ISREG(os.stat(mbox).st_mode)
    except OSError:
        return False


# The line `git format-patch` begins each message with: the commit, and a date that is always
# this one (the mbox's `From ` line, which mailsplit keeps).
_FORMAT_PATCH_FROM = re.compile(rb"From ([0-9a-f]{40}) Mon Sep 17 00:00:00 2001\r?\n")


def _piped_origin(message: Path) -> str:
    """The Origin of a message read from a pipe: the commit format-patch made it of, as
    `import git` says it; else only that it came in a mail."""
    with open(message, "rb") as handle:
        found = _FORMAT_PATCH_FROM.match(handle.readline())
    return f"vendor, commit {found.group(1).decode()}" if found else "vendor, mbox"


def import_mbox(project: Project, store: UpstreamStore, mbox: Path, *, upstream: str) -> list[str]:
    """Each message of an mbox (git format-patch / send-email output) becomes a patch; git's own
    mailsplit and mailinfo take it apart. A message `export --mbox` wrote comes back as the
    patch file it was, every field and its name kept (`_exported_patch`)."""
    project.config.upstream(upstream)
    pin = project.lock.pin(upstream)
    pending: list[tuple[str, bytes]] = []
    sources: dict[str, tuple[str, bytes | None]] = {}
    full_index = _FullIndex(project, store, upstream, pin.commit)
    with tempfile.TemporaryDirectory(prefix="patchforge-mbox-") as tmp:
        tmp_path = Path(tmp)
        # Read once, here, and given to mailsplit on its standard input: an mbox that is a
        # pipe (`import mbox <(git format-patch --stdout ...)`) can be read only once, and its
        # /dev/fd/N path names nothing in git's process ("cannot stat /dev/fd/63").
        try:
            data = _read_input(mbox, "an mbox")
        except OSError as exc:
            raise InputError(f"cannot read the mbox: {exc.strerror or exc}",
                             path=str(mbox)) from None
        # A CR of a file's own CRLF lines is kept (--keep-cr), unless the mbox's own first
        # line (`From <commit> <date>`) ends in CRLF: then a mail client or a Windows editor
        # converted every line, and the CRs are the transport's, dropped as `git am` drops them.
        converted = data.split(b"\n", 1)[0].endswith(b"\r") and b"\n" in data
        split = run_git("mailsplit", "-o" + str(tmp_path),
                        *([] if converted else ["--keep-cr"]), input=data, ok=None)
        if split.returncode != 0:
            reason = split.stderr.decode("utf-8", "replace").strip() or "unreadable"
            raise InputError(f"not an mbox git can split: {reason}", path=str(mbox),
                             hint="`git format-patch` output is an mbox")
        named = _names_a_file(mbox)
        for message in sorted(p for p in tmp_path.iterdir() if p.name.isdigit()):
            source = f"{mbox} (message {int(message.name)})"
            origin = f"vendor, {Path(mbox).name}" if named else _piped_origin(message)
            exported = _exported_patch(message, source, upstream, pin.commit)
            if exported is not None:
                file_name, data = exported
                full_index.of(parse_patch_file(data, source).diff)  # (the walk goes on)
                _check_new_name(project, upstream, file_name, data)
                _refuse_taken(file_name, {n for n, _ in pending}, source)
                pending.append((file_name, data))
                sources[file_name] = (source, None)
                continue
            msg_file, patch_file = tmp_path / f"{message.name}.msg", tmp_path / f"{message.name}.diff"
            # -b: only the `[PATCH ...]` groups leave the Subject, as `git am --keep-non-patch`
            # takes it; plain mailinfo also took the author's `[ROCm][Bugfix]` tags, which
            # `import git` of the same commits keeps (and the pull request's title needs).
            info = _git("mailinfo", "-b", "--scissors", str(msg_file), str(patch_file),
                        input=message.read_bytes()).decode("utf-8", "surrogateescape")
            headers = dict(line.split(": ", 1) for line in info.splitlines() if ": " in line)
            diff = _strip_separator(patch_file.read_bytes())
            if not diff.strip():
                continue
            subject = headers.get("Subject", message.name)
            date = headers.get("Date")
            when = today()
            if date:
                try:
                    parsed = email.utils.parsedate_to_datetime(date)
                except (ValueError, TypeError, IndexError):
                    # As `git am` refuses it; it was an internal error (exit 70).
                    raise InputError(f"its Date header {date!r} is no date", path=source,
                                     hint="an RFC 2822 date, as `git format-patch` writes: "
                                          "Date: Mon, 17 Sep 2001 00:00:00 +0000") from None
                when = parsed.date().isoformat() if parsed else when
            author = f"{headers.get('Author', 'Unknown')} <{headers.get('Email', '')}>"
            for name, value in (("Subject", subject), ("From", author)):
                control = control_character(value)
                if control:
                    # (An RFC 2047 word decoding to a terminal escape sequence, say: kept in
                    # the fix's header, a terminal showing the patch would act on it.)
                    raise InputError(f"its {name} holds a control character "
                                     f"({control}): nothing was imported",
                                     path=source, hint="remove it from the mail and import it "
                                                       "again")
            fields = [("Description", subject), ("Author", author),
                      ("Origin", origin), ("Upstream-Status", "Pending"),
                      ("Upstream", upstream), ("Base", pin.commit), ("Last-Update", when)]
            # Parse the diff first, under the mbox's name, so that an error points into it.
            # A binary change must carry its data (`GIT binary patch`, as format-patch
            # --binary writes); parse_diff refuses `Binary files ... differ` with its line.
            parsed_diff = parse_diff_full(diff, source=source)
            if SIGNATURE.fullmatch(parsed_diff.trailing):
                # format-patch's signature (`-- ` and git's version) after the last hunk: the
                # mail's, not the fix's (`git am` drops it too). Kept, it was part of the
                # patch file, whose diff then was not the one patchforge regenerates (lint:
                # not byte-stable) and changed with the git version that wrote the mbox.
                diff = diff[:len(diff) - len(parsed_diff.trailing)]
            # format-patch abbreviates the blob ids of its `index` lines (7 hex digits): written
            # in full, as `refresh` writes them, where the file the diff was made on is known.
            diff = full_index.of(diff)
            # A message that begins with a patch header (`git format-patch` of the commits
            # `git am` made from `export --mbox`) gives its fields back, as `import git` does:
            # read as free text, a `Profiles: gfx942` fix went into every profile. Its whole
            # body, as the commit holds it: a `-- >8 --` line in its free text is text there,
            # not where the message starts, and a `From:` line a field of the patch file.
            whole = tmp_path / f"{message.name}.whole"
            _git("mailinfo", "--no-scissors", "--no-inbody-headers", str(whole),
                 str(whole.with_suffix(".diff2")), input=message.read_bytes())
            text = whole.read_bytes().rstrip(b"\n")  # (as a commit's body: no final \n)
            # An in-body `From:` or `Subject:` (format-patch --from, send-email) is the mail's
            # own, for git am and mailinfo: not a patch header's Author or Description. (A
            # `Date:` is no patch field: _carried_header takes no message that begins so.)
            inbody = re.match(rb"(?i)(from|subject):", text)
            carried = None if inbody else _carried_header(
                text.decode("utf-8", "surrogateescape"), diff, source)
            if carried is not None:
                data = _adopted(carried, upstream, pin.commit, (
                    ("Description", subject), ("Author", author),
                    ("Origin", origin))).to_bytes()
            else:
                body = quote_diff_like(msg_file.read_bytes().strip())
                data = render_patch_file(fields, body + b"\n" if body else b"", diff)
            file_name = patch_file_name(slugify(subject))
            if any(file_name == n for n, _ in pending):
                file_name = _free_name(project, upstream, slugify(subject),
                                       {n for n, _ in pending}, data)
            else:
                _check_new_name(project, upstream, file_name, data)
            _refuse_control_characters(data, f"{mbox} message {message.name}",
                                       f"{source}: its message", "remove it from the mail and "
                                       "import it again")
            pending.append((file_name, data))
            sources[file_name] = (source, None)
    _write_imported(project, store, upstream, pending, sources, pin=pin.commit)
    return [n for n, _ in pending]


class _FullIndex:
    """The `index` lines of an mbox's diffs with full blob ids. `git format-patch` writes them
    abbreviated (`index 3f2a1b4..9c0d7e2 100644`), `refresh` and lint's byte-stability check
    in full: imported as they were, each new patch drew a lint warning at once ("only index
    lines differ"). Each diff is applied, without fuzz, on its base (the series, then the
    mbox's earlier patches) and made again as `refresh` makes it; its index lines are taken
    from that when nothing else differs and each full id is the one the abbreviation names
    (the file the diff was made on is the one here). Otherwise the diff is kept as it is."""

    def __init__(self, project: Project, store: UpstreamStore, upstream: str, pin: str) -> None:
        self.project, self.store, self.upstream, self.pin = project, store, upstream, pin
        self.state: SeriesState | None = None
        self.listed: list[bytes] = []  # the diffs of the series' patches

    def _read_base(self, paths):
        return self.store.read_blobs(self.pin, paths)

    def _walked(self) -> SeriesState:
        """The walk's state, the series applied first."""
        if self.state is None:
            self.state = SeriesState()
            for name in self.project.patch_names(self.upstream):
                try:
                    patch = self.project.read_patch(self.upstream, name)
                except PatchforgeError:
                    continue
                self.listed.append(patch.diff)
                self._step(name, patch)
        return self.state

    def _step(self, name: str, patch: PatchFile) -> tuple[dict, dict] | None:
        """`patch` applied on the walk's state: (its files before, after), None when it does
        not apply exactly."""
        state = self._walked()
        paths = sorted({p for fp in patch.file_patches for p in (fp.old_path, fp.new_path)
                        if p})
        wanted = [p for p in paths if p not in state.current]
        for path, data in (self._read_base(wanted) if wanted else {}).items():
            state.base[path] = state.current[path] = data
        before = {p: state.current.get(p) for p in paths}
        apply_series(self._read_base, [(name, patch)], strict=False, state=state,
                     max_fuzz=0, allow_zero_context=True)
        outcome = state.outcomes[-1]
        if not outcome.ok or outcome.worst != "exact":
            return None
        return before, {p: state.current.get(p) for p in paths}

    def of(self, diff: bytes) -> bytes:
        """`diff` with full index lines where they can be known (and the walk one patch on)."""
        try:
            self._walked()
            # Already listed (an import a kill cut short wrote it): as it was written, its
            # change already in the walk.
            listed = next((d for d in self.listed
                           if d == diff or _index_lines_expanded(diff, d)), None)
            if listed is not None:
                self.listed.remove(listed)
                return listed
            applied = self._step("<mbox>", parse_patch_file(
                render_patch_file([("Description", "mbox")], b"", diff), "<mbox>"))
            if applied is None:
                return diff
            before, after = applied
            changes = []
            for fp in parse_diff_full(diff, source="<mbox>").files:
                entry = self.store.entry(self.pin, fp.old_path) if fp.old_path else None
                mode_old = fp.old_mode or (entry[0] if entry else "100644")
                changes.append(FileChange(fp.old_path, fp.new_path,
                                          before.get(fp.old_path) if fp.old_path else None,
                                          after.get(fp.new_path) if fp.new_path else None,
                                          mode_old, fp.new_mode or mode_old, copy=fp.is_copy))
            made = make_diff(changes)
        except PatchforgeError:
            return diff
        return made if _index_lines_expanded(diff, made) else diff


_INDEX = re.compile(rb"index ([0-9a-f]+)\.\.([0-9a-f]+)((?: [0-7]+)?)\r?")


def _index_lines_expanded(short: bytes, full: bytes) -> bool:
    """True when `full` is the diff `short` with its `index` lines' blob ids written in full:
    every other line the same, and each full id one the abbreviation names."""
    a, b = short.split(b"\n"), full.split(b"\n")
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if x == y:
            continue
        mx, my = _INDEX.fullmatch(x), _INDEX.fullmatch(y)
        if not (mx and my and mx.group(3) == my.group(3) and my.group(1).startswith(mx.group(1))
                and my.group(2).startswith(mx.group(2))):
            return False
    return True


def _strip_separator(patch_part: bytes) -> bytes:
    """The diff of what mailinfo puts after a message: without the `---` line and diffstat
    before it (render_patch_file writes its own `---`)."""
    from patchforge.apply.diffparse import split_lines
    from patchforge.formats.patchfile import diff_start

    lines = split_lines(patch_part)
    start = diff_start(lines)
    return b"".join(lines[start:]) if start else patch_part


def _exported_patch(message: Path, source: str, upstream: str,
                    base: str) -> tuple[str, bytes] | None:
    """(file name, patch file bytes) of a message `export --mbox` wrote, or None for any other.

    Its body is the patch file up to its diff, so the file is the body (mboxrd quoting undone)
    followed by what mailinfo gives as the patch, less the blank line that ends the message.
    mailinfo still decodes what a mail system may have done to the message (quoted-printable,
    base64), and `--no-inbody-headers` keeps a `From:` or `Subject:` field where it stands."""
    raw = message.read_bytes()
    name = _patch_mark(raw)
    if name is None:
        return None
    name = patch_file_name(" ".join(name.split()))
    try:
        checked_new_patch_name(name)
    except UsageError as exc:
        raise InputError(f"{PATCH_MARK}: {exc}", path=source) from None
    msg_file, patch_file = message.with_suffix(".msg"), message.with_suffix(".diff")
    _git("mailinfo", "--no-inbody-headers", str(msg_file), str(patch_file), input=raw)
    head = _MBOXRD_UNQUOTE.sub(rb"\1", msg_file.read_bytes())
    rest = patch_file.read_bytes()
    if rest.endswith(b"\n\n"):
        rest = rest[:-1]  # the blank line export writes between messages
    return name, _adopted(parse_patch_file(head + rest, source), upstream, base).to_bytes()


def _patch_mark(raw: bytes) -> str | None:
    """The value of the message's PATCH_MARK header (the patch's name), None without one.

    Read from the bytes: export writes a name as it is (UTF-8), and email's parser gives
    8-bit header bytes back as U+FFFD, which changed `fix-é` into another name on the way
    back. A value a mail system encoded (`=?utf-8?q?...?=`) is decoded."""
    end = re.search(rb"\r?\n\r?\n", raw)
    head = re.sub(rb"\r?\n[ \t]+", b" ", raw[:end.start()] if end else raw)  # unfolded
    found = re.search(rb"(?im)^" + re.escape(PATCH_MARK.encode()) + rb":[ \t]*(.*?)\r?$", head)
    if found is None:
        return None
    value = found.group(1).decode("utf-8", "surrogateescape").strip()
    if "=?" in value:
        from email.header import decode_header, make_header

        value = str(make_header(decode_header(value)))
    return value


# The header `stg export` writes (StGit's patchexport template): the patch's subject, a blank
# line, `From: Name <email>`, then a blank line and the rest of its message (or nothing).
_STGIT_HEADER = re.compile(rb"(?P<subject>[^\n]*[^\s][^\n]*)\n\nFrom: (?P<author>[^\n<>]*"
                           rb"<[^\s<>@]+@[^\s<>]+>)[ \t]*\n(?:\n|\Z)")


def _from_stgit_export(patch: PatchFile) -> PatchFile:
    """A patch `stg export` wrote with its subject as the Description and its `From:` person as
    the Author, the rest of its message its free text; any other patch as it is. Kept as free
    text, the fix had neither (`list` showed no subject, lint said so), and `export --mbox`
    gave `git am` a commit by `Unknown <unknown@localhost>` titled `patchforge patch`.

    Only that exact shape is read so: a header without one field of a patch header, whose first
    paragraph is the one subject line and whose second is the one `From:` line naming an
    address. Words that only resemble it (a paragraph of several lines, a `From:` in prose)
    stay the patch's words, byte for byte."""
    words = patch.header_read_as_text()
    if words.fields or words.preamble:
        return patch
    match = _STGIT_HEADER.match(words.description)
    if match is None:
        return patch
    try:
        subject = match["subject"].decode("utf-8").strip()
        author = match["author"].decode("utf-8").strip()
    except UnicodeDecodeError:
        return patch  # refused where the header is read (`pr`, `export --mbox`), named there
    rest = words.description[match.end():].lstrip(b"\n")
    return (words.with_description(rest).with_field("Description", subject)
            .with_field("Author", author))


def _adopted(patch: PatchFile, upstream: str, base: str,
             missing: tuple[tuple[str, str], ...] = ()) -> PatchFile:
    """A fix brought in with its own header, as the series it joins needs it: its Upstream
    field names that series; Base, Upstream-Status and `missing` fill only what it lacks.
    Every other field stays as it was, in its place, byte for byte.

    A header that says where the fix stands by DEP-3's own Forwarded or Applied-Upstream (a
    Debian patch) gets no Upstream-Status: `Pending` beside `Forwarded: not-needed` or a pull
    request's URL contradicted it, and `list` and PATCHES.md showed the fix as pending."""
    if (patch.get("Upstream") or "").strip() != upstream:
        patch = patch.with_field("Upstream", upstream)
    status = () if patch.standing else (("Upstream-Status", "Pending"),)
    for name, value in [("Base", base), *status, *missing]:
        if patch.get(name) is None:
            patch = patch.with_field(name, value)
    return patch


def _carried_header(body: str, diff: bytes, source: str) -> PatchFile | None:
    """The patch a commit message carries as a DEP-3 header (what `git am` of `export --mbox`
    makes: the subject, then the patch's fields, a blank line and its free text), with `diff`;
    None when the message is not one.

    It is one only in that shape: its whole first paragraph is header fields, the first a
    field patchforge knows, with the `Upstream` (a series name) and `Base` (a 40-hex commit)
    every patch of a series has. A free-text body that happens to start `Note: ...`,
    `Upstream: https://github.com/.../pull/12345` or `Base: the old path is kept` stays free
    text: read as fields, its words were replaced by the series' name or the pin, silently."""
    from patchforge.targets import UPSTREAM_NAME_RE

    data = body.encode("utf-8", "surrogateescape")
    # A patch file in format-patch's shape begins with its mbox line.
    fields_start = data.split(b"\n", 1)[-1] if data.startswith(b"From ") else data
    first = fields_start.split(b":", 1)[0].strip().lower().decode("ascii", "replace")
    if not data or first not in KNOWN_FIELDS:
        return None
    try:
        head = parse_patch_file(data + b"\n", source)
    except InputError:
        return None
    if not head.fields or head.diff or head.separator:
        return None
    if head.description and not head.gap:
        return None  # free text right under a field line: a paragraph of the message's own
    upstream, base = (head.get("Upstream") or "").strip(), (head.get("Base") or "").strip()
    if not UPSTREAM_NAME_RE.match(upstream) or not re.fullmatch(r"[0-9a-fA-F]{40}", base):
        return None
    if not head.gap and not head.description:
        head = parse_patch_file(data + b"\n\n", source)  # the blank line that ends a header
    return head.with_diff(diff)


def stack_profile(project: Project, upstream: str, names: list[str],
                   profile: str | None) -> tuple[bool, str | None]:
    """(whether an overlay's series is the stack `names` make, that profile or None): the
    profile asked for; else, with profiles configured, the first one whose series is every
    patch of `names` (with patches for some profiles only, the one stack quilt or `git am`
    applies may be no profile's series: then (False, None))."""
    configured = list(project.config.profiles)
    if profile is not None or not configured:
        return True, profile
    patches = [project.read_patch(upstream, n) for n in names]
    for candidate in configured:
        if all(applies_to_profile(patch, candidate) for patch in patches):
            return True, candidate
    return False, None


def as_the_stack_has_them(project: Project, store: UpstreamStore, upstream: str,
                          names: list[str], profile: str | None
                          ) -> tuple[dict[str, bytes], list[str]]:
    """The diffs to export for `names` (one stack, in order, as quilt or `git am` applies it):
    {name: diff} for each patch whose change the exported line numbers would put elsewhere.

    A patch's diff has the line numbers of its own base. In a profile's series the file it
    meets may differ from that base (a gfx942 fix adds lines above a fix for every profile,
    which the overlays carry over it by git's 3-way merge, apply.chains), and GNU patch and
    git apply place a hunk whose context is in several places at the match nearest to its
    header's line: in a twin function, not where the overlay has the change. Each text change
    of a file that does not apply exactly (no offset, no fuzz) on the stack's file before it,
    giving the file the overlay's series has after it, is written as git's diff of those two
    files: its lines are then where the overlay has them, and quilt and git put it there.
    Also returned: the patches whose change in some file is neither (a rename, a binary or a
    mode change, or a patch that does not go into the stack), kept as they are and named for a
    warning."""
    from patchforge.apply.chains import apply_on_chains, patch_paths
    from patchforge.apply.hunks import apply_file_patch
    from patchforge.store.diff import make_diffs

    known, chosen = stack_profile(project, upstream, names, profile)
    configured = list(project.config.profiles)
    series = [(n, project.read_patch(upstream, n)) for n in project.patch_names(upstream)]
    wanted = set(names)
    if not known or not series:
        return {}, []
    commit = project.lock.pin(upstream).commit
    cache: dict[str, bytes | None] = {}

    def read(paths):
        missing = [p for p in paths if p not in cache]
        if missing:
            cache.update(store.read_blobs(commit, missing))
        return {p: cache.get(p) for p in paths}

    def base_mode(path: str) -> str | None:
        entry = store.entry(commit, path)
        return entry[0] if entry else None

    # name -> ({path: file before}, {path: file after}, {path: mode}, went in)
    seen: dict[str, tuple[dict, dict, dict, bool]] = {}

    def files_of(state: SeriesState, paths) -> dict:
        return {p: state.current[p] if p in state.current else read([p])[p] for p in paths}

    if chosen is None or not profile_bases_differ(series, configured):
        state = SeriesState()
        for name, patch in series:
            if chosen is not None and not applies_to_profile(patch, chosen):
                continue
            paths = sorted(patch_paths(patch))
            before = files_of(state, paths)
            apply_series(read, [(name, patch)], strict=False, state=state,
                         allow_zero_context=True)
            seen[name] = (before, files_of(state, paths),
                          {p: state.mode(p, base_mode) for p in paths},
                          state.outcomes[-1].ok)
    else:
        key = frozenset([chosen])
        snapshot: dict[str, bytes | None] = {}

        def after_patch(position: int, found) -> None:
            nonlocal snapshot
            name, patch = series[position]
            state = found.states[key]
            if position in found.held[key]:
                paths = sorted(patch_paths(patch))
                before = {p: snapshot[p] if p in snapshot else read([p])[p] for p in paths}
                went = found.outcomes[position].ok and not any(
                    problem.name == name and chosen in (problem.chain or ())
                    for problem in found.problems)
                seen[name] = (before, files_of(state, paths),
                              {p: state.mode(p, base_mode) for p in paths}, went)
            snapshot = dict(state.current)

        apply_on_chains(read, series, configured, strict=False, allow_zero_context=True,
                        after_patch=after_patch)
    remade: list[tuple[str, bytes, FileChange]] = []
    kept: list[str] = []
    for name in names:
        if name not in seen or name not in wanted:
            continue
        before, after, modes, went = seen[name]
        patch = project.read_patch(upstream, name)
        sections = [fp.source_path for fp in patch.file_patches]
        if not went:
            continue  # not in the stack: the overlays refuse it, by name
        for fp in patch.file_patches:
            old, new = before.get(fp.source_path), after.get(fp.path)
            if fp.is_binary or not fp.hunks or fp.is_new or fp.is_delete:
                continue  # nothing of it placed by its context
            application = apply_file_patch(old, fp, max_fuzz=0) if old is not None else None
            if application is not None and application.ok \
                    and application.worst == "exact" and application.content == new:
                continue
            plain = not (fp.is_rename or fp.is_copy or fp.old_mode or fp.new_mode)
            if plain and old is not None and new is not None and old != new \
                    and sections.count(fp.path) == 1:
                mode = modes.get(fp.path) or "100644"
                remade.append((name, fp.raw, FileChange(fp.path, fp.path, old, new, mode, mode)))
            elif name not in kept:
                kept.append(name)
    sections_made = make_diffs([[change] for _, _, change in remade]) if remade else []
    diffs: dict[str, bytes] = {}
    for (name, raw, _), section in zip(remade, sections_made):
        diff = diffs.get(name) or project.read_patch(upstream, name).diff
        diffs[name] = diff.replace(raw, section, 1)
    return diffs, kept


def _where_now(project: Project, upstream: str, name: str) -> str:
    """Where a fix an earlier export listed is, now that the series does not list it: set
    aside by a rebase (skipped/, which `bring-back` takes), landed upstream (upstreamed/),
    deleted (deleted/); else renamed or removed by hand. Said, so that an export never names
    a fix waiting to be brought back as one that is gone."""
    if (project.series_dir(upstream) / "skipped" / name).is_file():
        return (f"set aside in series/{upstream}/skipped/ by a rebase: `patchforge bring-back "
                f"{project.skipped_word(upstream, name)}` puts it back")
    places = [place for _, place, kept in project.kept_aside(upstream, name) if kept == name]
    if "upstreamed" in places:
        return f"landed upstream since, kept in series/{upstream}/upstreamed/"
    if "deleted" in places:
        return f"deleted since, kept in series/{upstream}/deleted/"
    return "renamed or removed since"


def export_quilt(project: Project, directory: Path, upstream: str | None = None,
                 profile: str | None = None, store: UpstreamStore | None = None,
                 placed: dict[str, tuple[list[str], list[str]]] | None = None,
                 left: list[tuple[str, str, Path, str, bool]] | None = None,
                 force: bool = False
                 ) -> tuple[list[Path], list[str], list[str], list[tuple[str, str]]]:
    """quilt's layout: DIR/series and the patch files (DIR/<upstream>/ when there are several;
    `upstream` names the one series to export, as DIR/series). With `profile`, the patches of
    that profile's series only: what its overlays are made from.

    Returns the files written; for each binary section the series carries, a line naming
    the patch and the file: quilt and GNU patch cannot apply `GIT binary patch` data, so the
    exported series is complete for `git apply`/`git am` but not for `quilt push`; and the
    upstreams whose series hold patches for some profiles only, exported without `profile`:
    quilt applies every patch in one stack, where two profiles' fixes of one line conflict;
    and the patches without a diff (`new`, nothing refreshed into them), on which `quilt push`
    stops ("Only garbage was found in the patch input"), each with the word `edit` takes for
    it (Project.patch_word).

    With `store`, each patch is written as the exported stack has it (as_the_stack_has_them:
    with `profile`, that profile's series; without, the one stack quilt applies): its text
    changes at the lines where the overlays have them, so that quilt puts each where they
    do; `placed` gets, per upstream, the patches written so and those kept as they are
    though quilt may place them elsewhere.

    `left` gets each patch the new DIR/series does not list that the series has (another
    profile's, with `profile`) or that DIR/series listed before (an earlier export's, its
    file left in DIR): (upstream, name, DIR/series, why, listed before), so that none is left
    out without a word.

    Beside them goes `EXPORT_RECORD`, what this export wrote (each patch's name and sha256), so
    that the next export into DIR knows its own files from anyone else's (see
    `_refuse_losing_others`; `force` replaces a same-named file no export wrote)."""
    files: list[tuple[Path, bytes]] = []
    records: list[tuple[Path, dict[str, list[str]], dict[str, list[str]],
                        dict[str, dict[str, dict]], list[str], dict[str, list[str]]]] = []
    binary_sections = []
    empty = []
    upstreams = [u for u in project.upstream_names() if project.patch_names(u)]
    if upstream is not None:
        project.config.upstream(upstream)  # a UsageError naming the configured ones
        upstreams = [upstream]  # exported even when empty, as the one series below
    elif not upstreams and len(project.upstream_names()) == 1:
        # The one series is empty (every fix deleted): exported as such, or an earlier export
        # into DIR would stay there, its series listing fixes the project no longer carries.
        upstreams = project.upstream_names()
    # Every patch is read (and parsed) before the first file is written: a patch that does
    # not parse fails the export with nothing of it half-written.
    refuse_unknown_profile(project, profile)
    per_profile = []
    for upstream in upstreams:
        target = Path(directory) / upstream if len(upstreams) > 1 else Path(directory)
        names = every = project.patch_names(upstream)
        if profile is not None:
            names = [n for n in names
                     if applies_to_profile(project.read_patch(upstream, n), profile)]
        if left is not None:
            listed_before = _listed_names(target / "series")
            for name in dict.fromkeys([*listed_before, *every]):
                if name in names:
                    continue
                why = f"not in {profile}'s series" if name in every else \
                    f"no longer in the {upstream} series ({_where_now(project, upstream, name)})"
                left.append((upstream, name, target / "series", why, name in listed_before))
        if profile is None and profile_bases_differ(
                [(n, project.read_patch(upstream, n)) for n in names],
                list(project.config.profiles)):
            per_profile.append(upstream)
        remade: dict[str, bytes] = {}
        if store is not None:
            remade, kept = as_the_stack_has_them(project, store, upstream, names, profile)
            if placed is not None and (remade or kept):
                placed[upstream] = (list(remade), kept)
        patches = []
        for name in names:
            patch = project.read_patch(upstream, name)
            binary_sections += [f"{patch.source}:{file.line_no}: {file.path}"
                                for file in patch.file_patches if file.is_binary]
            if not patch.file_patches:
                empty.append((name, project.patch_word(upstream, name)))
            data = project.read_patch_bytes(upstream, name)
            # GNU patch cuts a name with a space in a section of headers only: quoted here.
            patches.append((target / name, data[:len(data) - len(patch.diff)]
                            + for_gnu_patch(remade.get(name, patch.diff))))
        # A directory of the project itself (another upstream's series/X, a slip) is refused
        # as such before its own series file is read as another quilt stack's: that refusal
        # called it "a patch of no series here" and said to move the series file away.
        project.refuse_own_destination(target, new_directory=True)
        record = read_export_record(target)  # read once: what is checked is what is used
        earlier = None if record is None else record["patches"]
        taken = read_taken_record(record)
        _refuse_losing_others(project, upstream, target, patches, earlier, taken, profile,
                              force)
        files += patches
        files.append((target / "series", "".join(f"{n}\n" for n in names).encode()))
        now = {path.name: [_sha256(data)] for path, data in patches}
        earlier_headers = read_header_record(record)
        headers = {name: [kept_header_digest(project.read_patch(upstream, name))]
                   for name in names}
        for name, hashes in (earlier or {}).items():
            # A file an earlier export wrote that this one no longer lists (its fix deleted
            # or renamed) stays in DIR as written: still recorded as this project's, or the
            # next export of a fix of that name (a rename onto it) took it for a quilt
            # change and refused.
            if name not in now and _sha256_of_regular(target, name) in hashes:
                now[name] = list(hashes)
                if name in earlier_headers:
                    headers[name] = earlier_headers[name]
        for name in remade:
            # Written with the stack's line numbers: the series' own file is this export's
            # too, so that the way back knows the series did not change since.
            now[name] = sorted({*now[name], _sha256(project.read_patch_bytes(upstream, name))})
        # Until every file is written, the record names both versions of a patch it replaces:
        # an export cut short is still recognised as this project's by the next one.
        during = {name: sorted(set(hashes) | set((earlier or {}).get(name, [])))
                  for name, hashes in now.items()}
        records.append((target / EXPORT_RECORD, during, now, taken, names, headers))
    for path, _ in files:
        project.refuse_own_destination(path, new_directory=True)
    for path, during, _, taken, _, headers in records:
        project.refuse_own_destination(path, new_directory=True)
        # (No order yet: DIR/series may still be the earlier export's.)
        atomic_write(path, _record_bytes(during, profile, taken, headers=headers))
    for path, data in files:
        atomic_write(path, data)
    for path, _, now, _, names, headers in records:
        atomic_write(path, _record_bytes(now, profile, order=names, headers=headers))
    return [path for path, _ in files], binary_sections, per_profile, empty


# What `export --quilt` wrote into a directory: {"version": 1, "patches": {name: [sha256]}},
# "profile": P when it wrote that profile's series only (`--profile P`), and "taken": {name:
# {quilt file's sha256: {"into": sha256, "over": sha256, "new": true, "change": {"+": {line
# key: n}, "-": {line key: n}}}}}, what `import quilt --update` took back since: the series'
# patch file it wrote ("into") over the one it replaced ("over"; "new" for a patch `quilt new`
# made, which the series did not have), and quilt's change itself ("change": the diff and
# header lines it added and took out, see _change_lines), so that quilt's file counts as the
# series' own only while the series holds that change: not when the series went back to
# "over" or took the new patch out again (the import undone: `git checkout -- series`), nor
# when the patch changed since without it (the import undone, then `edit` + `refresh`);
# "filled": the fields the written patch has that quilt's file had not (a new fix's Author,
# Upstream-Status...), which a later `quilt header -r` lacking them never drops.
# "headers": {name: [kept_header_digest]}, the header of each patch as exported (and as an
# import took it back since): a fix the series renamed and changed after the export is known
# by it once quilt deleted its file (`quilt delete -r`), in a stack with no history to say so.
# "order" is DIR/series as the export wrote it (as an import left it since), so that
# `import quilt --update` takes quilt's order only where quilt changed it (a record without
# it, an earlier version's, takes DIR/series' order as it stands).
# quilt reads only `series` and the files it lists, so the record travels with the directory
# without being in anyone's way.
EXPORT_RECORD = ".patchforge-export"


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _record_bytes(patches: dict[str, list[str]], profile: str | None = None,
                  taken: dict[str, dict[str, dict]] | None = None,
                  order: list[str] | None = None,
                  headers: dict[str, list[str]] | None = None) -> bytes:
    record: dict = {"version": 1, "patches": patches}
    if order is not None:
        record["order"] = order  # DIR/series' names as written (see EXPORT_RECORD)
    if headers:
        record["headers"] = headers  # kept_header_digest of each (see EXPORT_RECORD)
    if profile is not None:
        record["profile"] = profile  # the series exported was that profile's only
    if taken:
        record["taken"] = taken
    return (json.dumps(record, indent=2, sort_keys=True) + "\n").encode()


def kept_header(patch: PatchFile) -> tuple:
    """What of `patch`'s header `edit` + `refresh` (or quilt's `refresh`) keeps as it was:
    every field but Base and Last-Update, and the description."""
    return patch.preamble, tuple(f.raw for f in patch.fields if f.name.lower() not in (
        "base", "last-update")), patch.gap, patch.description


def kept_header_digest(patch: PatchFile) -> str:
    """The SHA-256 of kept_header(patch), each part with its length: what an export record
    keeps of an exported patch's header, so that the fix is known by it after its file left
    DIR (`quilt delete -r`) and the series renamed and changed it."""
    preamble, fields, gap, description = kept_header(patch)
    digest = hashlib.sha256()
    for part in (preamble, gap, description, *fields):
        digest.update(len(part).to_bytes(8, "big"))
        digest.update(part)
    return digest.hexdigest()


def read_header_record(record: dict | None) -> dict[str, list[str]]:
    """The "headers" part of an export record (read_export_record; see EXPORT_RECORD): {}
    when there is none (an export by an earlier version) or it is not as written."""
    headers = None if record is None else record.get("headers")
    if not isinstance(headers, dict) or not all(
            isinstance(h, list) and all(isinstance(x, str) for x in h)
            for h in headers.values()):
        return {}
    return headers


def export_record_profile(record: dict | None) -> str | None:
    """The profile whose series the export a record (read_export_record) tells of wrote
    (`export --quilt DIR --profile P`), None for the whole series or no record."""
    value = None if record is None else record.get("profile")
    return value if isinstance(value, str) else None


def read_taken_record(record: dict | None) -> dict[str, dict[str, dict]]:
    """The "taken" part of an export record (read_export_record; see EXPORT_RECORD): {} when
    there is none or it is not as written (then no quilt file is vouched for: refused rather
    than lost)."""
    try:
        taken = {} if record is None else record.get("taken", {})
        if isinstance(taken, dict) and all(
                isinstance(files, dict) and all(
                    isinstance(t, dict) and isinstance(t.get("into"), str)
                    and isinstance(t.get("over", ""), str) for t in files.values())
                for files in taken.values()):
            return taken
    except (OSError, ValueError, AttributeError):
        pass
    return {}


def taken_undone(taken: dict[str, dict[str, dict]], name: str, quilt_bytes: bytes,
                 series_bytes: bytes | None,
                 elsewhere: Callable[[], Iterable[bytes]] | None = None) -> bool | None:
    """Whether quilt's `quilt_bytes` for patch `name`, which an `import quilt --update` took
    back, are missing from the series again: True when the series' patch file is the one that
    import replaced (the import undone), or has changed since without quilt's change (the
    import undone, then `edit` + `refresh`), or, for a patch `quilt new` made, when the series
    lists it no more and holds its change nowhere (`elsewhere`: the bytes of the series'
    listed patches and of those kept under deleted/, skipped/, upstreamed/); False when the
    series holds what the import wrote, or a version changed since that holds quilt's change,
    or let the patch go itself (`delete`, `rename`, landed upstream); None when no import took
    these bytes back."""
    took = taken.get(name, {}).get(_sha256(quilt_bytes))
    if took is None:
        return None
    if series_bytes is None:
        # The patch left the series since: the series' own decision, unless it is one the
        # import added and the series holds its change nowhere (the import undone).
        if not took.get("new") or elsewhere is None:
            return False
        return not any(holds_change(took, data) for data in elsewhere())
    held = _sha256(series_bytes)
    if held == took["into"]:
        return False
    if held == took.get("over"):
        return True
    # Changed since: newer than the import only when it still holds quilt's change (a record
    # of an earlier version, without "change", counts it newer as before).
    return "change" in took and not holds_change(took, series_bytes)


def series_holdings(project: Project, upstream: str) -> Iterable[bytes]:
    """The bytes of every patch `upstream`'s series holds: listed, or kept by the series
    under deleted/, skipped/ and upstreamed/ (a fix the series let go itself). A file of
    series/<upstream>/ the series does not list (the one a `git checkout -- series` leaves
    behind) is none of them."""
    for name in project.patch_names(upstream):
        try:
            yield project.read_patch_bytes(upstream, name)
        except PatchforgeError:
            continue
    for kind in ("deleted", "skipped", "upstreamed"):
        folder = project.series_dir(upstream) / kind
        if folder.is_dir() and not folder.is_symlink():
            for path in sorted(folder.iterdir()):
                if path.is_file() and not path.is_symlink():
                    yield path.read_bytes()


def taken_entry(before: bytes | None, written: bytes,
                filled: Sequence[str] = ()) -> dict:
    """The "taken" entry of a quilt file an `import quilt --update` took back (see
    EXPORT_RECORD): `written` the series' patch file it became, over `before` (None: a patch
    the series did not have); `filled`, the fields `written` has that quilt's file had not."""
    old = _change_lines(before) if before is not None else {}
    new = _change_lines(written)
    entry: dict = {"into": _sha256(written),
                   "change": {"+": {k: n for k, n in new.items() if n > old.get(k, 0)},
                              "-": {k: new.get(k, 0) for k, n in old.items()
                                    if n > new.get(k, 0)}}}
    if filled:
        entry["filled"] = list(filled)
    if before is None:
        entry["new"] = True
    else:
        entry["over"] = _sha256(before)
    return entry


def holds_change(took: dict, data: bytes) -> bool:
    """True when the patch file `data` holds the change quilt made (`took`'s "change"): every
    line quilt's version added, as often, and none of those it took out more often than
    quilt's version keeps them. A patch changed since on other lines still holds it."""
    change = took.get("change")
    if not isinstance(change, dict):
        return False
    lines = _change_lines(data)
    return all(lines.get(k, 0) >= n for k, n in change.get("+", {}).items()) and \
        all(lines.get(k, 0) <= n for k, n in change.get("-", {}).items())


def _change_lines(data: bytes) -> dict[str, int]:
    """The lines a patch file says, counted by a short key: each added and removed line of its
    diff with its file's path, and each header line but `Base` and `Last-Update` (which the
    import and `refresh` set anew), so that a change quilt made (a line of the diff, a field
    `quilt header -e` changed) is found again in a later version of the patch, whose context
    and line numbers may differ."""
    try:
        patch = parse_patch_file(data, "<patch>")
    except PatchforgeError:
        return {"unreadable:" + _sha256(data)[:16]: 1}
    keys: list[bytes] = []
    for line in data[:len(data) - len(patch.diff)].splitlines():
        if not line.lower().startswith((b"base:", b"last-update:")):
            keys.append(b"h\0" + line)
    for file in patch.file_patches:
        path = file.path.encode("utf-8", "surrogateescape")
        if file.is_binary:
            keys.append(b"b\0" + path + b"\0" + file.raw)
        for hunk in file.hunks:
            keys += [b"d\0" + path + b"\0" + line.rstrip(b"\r\n") for line in hunk.lines
                     if line[:1] in (b"+", b"-")]
    counted: dict[str, int] = {}
    for key in keys:
        short = _sha256(key)[:16]
        counted[short] = counted.get(short, 0) + 1
    return counted


def read_export_record(target: Path) -> dict | None:
    """The record of the last export into `target` (see EXPORT_RECORD), its "patches" checked,
    None when there is none (no export wrote there, or one made before exports kept a
    record). Read once, through the descriptor whose file was checked: what the callers use
    (its patches, profile, order, what was taken) is what was checked, never a file swapped
    in since (a FIFO, which would block the command and the project's lock for ever)."""
    path = target / EXPORT_RECORD
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0)
                     | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno != errno.ELOOP:
            raise UsageError(f"{path}: cannot read it ({exc.strerror or exc})") from None
        fd = None
    data = b""
    if fd is not None:
        with os.fdopen(fd, "rb") as handle:
            info = os.fstat(handle.fileno())
            # A record is a small file the export wrote: a link, a device or a FIFO there (a
            # directory not one's own) is never read, nor a file that could not be one.
            if stat.S_ISREG(info.st_mode) and info.st_size <= 16 << 20:
                try:
                    data = handle.read(16 << 20)
                except OSError as exc:
                    raise UsageError(f"{path}: cannot read it ({exc.strerror or exc})") \
                        from None
    try:
        record = parse_json(data)
        patches = record["patches"]
        if record.get("version") != 1 or not isinstance(patches, dict) or not all(
                isinstance(h, list) and all(isinstance(x, str) for x in h)
                for h in patches.values()):
            raise ValueError
    except (ValueError, TypeError, KeyError, AttributeError):
        raise UsageError(f"{path}: not the record `patchforge export --quilt` writes of what it "
                         "exported there; nothing was written",
                         hint=f"move {path} away, or export into a directory of its own") \
            from None
    return record


def _file_in_dir(path: Path) -> tuple[bytes | None, str | None]:
    """DIR's file `path` as `export --quilt DIR` reads it: (its bytes, None) for a regular
    file, (None, None) where there is none, (None, what it is) for anything else: "a symlink"
    (never read through: a link out of DIR is no file of DIR, one to /dev/zero would be read
    until memory runs out), "a directory" or "not a regular file" (a FIFO is opened without
    blocking, then looked at: a read would block the export, and the project's lock, for
    ever). An OSError other than these is raised."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0)
                     | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        return None, None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return None, "a symlink"
        raise
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        return None, "a directory" if stat.S_ISDIR(mode) else "not a regular file"
    with os.fdopen(fd, "rb") as handle:
        return handle.read(), None


def quilt_file_bytes(path: Path, *, entry: str | None = None, series: Path | None = None,
                     line: int | None = None) -> bytes | None:
    """A file of the quilt directory an import reads (its series file, or the patch `entry`
    its `series` lists on `line`): the bytes of a regular file, None where there is none.
    Never read through a link (a patch linked to a file outside the directory, a key, was
    taken in as a fix; one to /dev/zero read until memory ran out) nor from a FIFO (a series
    file that is one blocked the import, and the project's lock, for ever): either, or a
    directory, is refused (InputError naming it, and the series line)."""
    # quilt keeps patches in subdirectories too (`sub/fix.patch`): a link there reads from
    # outside DIR as a link of the file itself does.
    linked = next((folder for folder in list(path.parents)[:len(Path(entry).parts) - 1]
                   if folder.is_symlink()), None) if entry is not None else None
    data: bytes | None = None
    kind: str | None = "a symlink"
    if linked is not None:
        path = linked
    else:
        try:
            data, kind = _file_in_dir(path)
        except OSError as exc:
            raise InputError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    if kind is None:
        return data
    what = f"{entry} is {kind} ({path})" if entry is not None else f"{path} is {kind}"
    raise InputError(f"{what}: an import reads the quilt directory's own files only, never "
                     "through a link or from a pipe",
                     path=str(series) if series is not None else None, line=line,
                     hint="replace it with the file it names (`cp --remove-destination "
                          "TARGET LINK` for a link)" if kind == "a symlink" else
                          "put the patch file there, or take its line out of the series")


def _sha256_of_regular(target: Path, name: str) -> str | None:
    """The sha256 of DIR's file `name` (`target`: DIR), a name an export's record holds; None
    when it is not a regular file directly in DIR (_file_in_dir): a link, a FIFO or a directory
    there is not the file an export wrote, nor is a name that is a path (the record is DIR's
    own file: `../x` or `/x` would name a file outside it)."""
    if not name or name in (".", "..") or "/" in name or "\x00" in name:
        return None
    try:
        data, _ = _file_in_dir(target / name)
    except OSError:
        return None
    return None if data is None else _sha256(data)


def _replaced_file_bytes(path: Path, what: str = "a patch file") -> bytes | None:
    """The bytes of DIR's file `path` that `export --quilt DIR` would replace (`what`: the file
    it writes there); None where there is none. Read only as a regular file (_file_in_dir): a
    link, a FIFO or a directory there is refused (UsageError naming it)."""
    try:
        data, kind = _file_in_dir(path)
    except OSError as exc:
        raise UsageError(f"{path}: cannot read it to replace it ({exc.strerror or exc})") \
            from None
    if kind is None:
        return data
    raise UsageError(f"{path} is {kind}, where the export writes {what}; nothing was "
                     "written",
                     hint=f"move {path} out of {path.parent} (or export to another directory)")


def _refuse_losing_others(project: Project, upstream: str, target: Path,
                          patches: list[tuple[Path, bytes]],
                          earlier: dict[str, list[str]] | None,
                          taken: dict[str, dict[str, dict]],
                          profile: str | None = None, force: bool = False) -> None:
    """`export --quilt DIR` replaces DIR/series and the patch files of its names. Refused
    (UsageError naming the file, and the series line) when that would lose a patch that is not
    this project's, or not as the last export wrote it:

    - a patch file it would replace whose bytes changed since the last export wrote it (a
      `quilt refresh` in DIR: the change would be overwritten), unless `import quilt --update`
      took them back and the series has not gone back to the patch that import replaced
      (`taken`; see EXPORT_RECORD);
    - a patch DIR/series lists that the new series would leave unlisted (DIR held another quilt
      stack), unless it is this project's: as the last export recorded it (a patch since renamed,
      refreshed or deleted), or the bytes of a patch this export writes. One the record names
      whose bytes changed in DIR (a `quilt refresh` of this project's patch, left out of an
      export of another `profile`'s series) is said to be that, with the way to take the change
      back (`import quilt DIR --update`).

    - a patch file of a name this export writes that no export wrote (no record names it, or
      DIR has no record: another quilt stack's, one written by hand, an old export's) and that
      holds neither what this export writes nor the series' own patch; `force` replaces it.
      One holding, byte for byte, what the last export wrote under another name, or what an
      import took back into the series' patch of this name (a `quilt rename`, not refreshed
      since), is the export's own and replaced.

    Without a record (DIR was never exported to, or by an earlier version), a listed patch is
    this project's when its name is one the upstream's series directory has anywhere (listed,
    deleted/, upstreamed/, skipped/) or its bytes are written now."""
    def recorded(name: str, data: bytes) -> bool:
        if earlier is None:
            return False
        if _sha256(data) in earlier.get(name, []):
            return True
        held = project.read_patch_bytes(upstream, name) \
            if name in project.patch_names(upstream) else None
        return taken_undone(taken, name, data, held,
                            lambda: series_holdings(project, upstream)) is False

    exported_bytes = {h for hashes in (earlier or {}).values() for h in hashes}
    for path, data in patches:
        there = _replaced_file_bytes(path)
        if there is None or there == data:
            continue
        if path.name not in (earlier or {}) and path.name not in taken and (
                _sha256(there) in exported_bytes or any(
                    taken_undone(taken, name, there, project.read_patch_bytes(
                        upstream, path.name)) is False
                    for name in taken if path.name in project.patch_names(upstream))):
            # A file an export wrote under another name (or one an import took back into the
            # fix the series holds under this name), moved here by `quilt rename` and not
            # changed since: replacing it loses nothing of quilt's (the series' fix renamed
            # alike, which the import asks for).
            continue
        if (earlier is None or path.name not in earlier and path.name not in taken) \
                and there != project.read_patch_bytes(upstream, path.name):
            # A file of that name no export wrote (another quilt stack's patch, one written
            # by hand, an export by a version that kept no record) that holds neither what
            # this export writes nor the series' own patch: replaced, it was lost unsaid.
            if force:
                continue
            raise UsageError(
                f"{path}: a patch file no export of this project wrote ("
                + (f"{target} holds no export record" if earlier is None else
                   f"{target / EXPORT_RECORD} does not name it")
                + f"), and it differs from {project.patch_path(upstream, path.name)}; the "
                "export would overwrite it, so nothing was written",
                hint=f"to keep it, move it out of {target} (or export to another directory); "
                     "to replace it, export again with --force")
        if earlier is None:
            continue
        # Quilt's file an import took back is the series' own, unless the series went back
        # to the patch that import replaced: then the change is in DIR alone.
        undone = taken_undone(taken, path.name, there,
                              project.read_patch_bytes(upstream, path.name))
        if undone or (undone is None and not recorded(path.name, there)):
            why = (f"holds quilt's change that `import quilt --update` took back, which "
                   f"{project.patch_path(upstream, path.name)} no longer holds (the import "
                   "undone in the stack?)" if undone else
                   "changed since patchforge exported it (by quilt refresh, an editor?)")
            raise UsageError(f"{path}: {why}; the export would overwrite that change, so "
                             "nothing was written",
                             hint=f"to keep the change, {_take_back(project, upstream, target)}"
                                  " takes it back into "
                                  f"{project.patch_path(upstream, path.name)}; to drop it, "
                                  f"remove {path}; then export again")
    series = target / "series"
    if series.is_dir() and not series.is_symlink():
        own = target.resolve() == project.root.resolve()
        raise UsageError(f"{series} is a directory" + (" (the project's own series/)" if own
                                                       else "")
                         + ": `export --quilt DIR` writes DIR/series, quilt's series file, "
                         "beside the patches; nothing was written",
                         hint="name a new directory, or one an earlier export wrote")
    listed = _replaced_file_bytes(series, "quilt's series file")
    if listed is None:
        return
    lines = listed.splitlines()
    written = {data for _, data in patches}
    exported = {path.name for path, _ in patches}
    ours = set() if earlier is not None else \
        {path.name for path in project.series_dir(upstream).rglob("*") if path.is_file()}
    for line_no, line in enumerate(lines, 1):
        words = line.split(b"#", 1)[0].split()
        if not words:
            continue
        name = words[0].decode("utf-8", "surrogateescape")
        kept = target / name
        if name in exported or name in ours or name.startswith("/") \
                or ".." in name.split("/"):
            continue
        try:
            there, kind = _file_in_dir(kept)
        except OSError as exc:
            raise UsageError(f"{kept}: cannot read it ({exc.strerror or exc})") from None
        if kind == "a symlink":
            # Never read through: what it names is no file of DIR (it may be outside it).
            raise UsageError(
                f"{series}:{line_no}: lists {name}, a symlink in {target}; the export reads "
                "no patch through a link and would leave it unlisted there, so nothing was "
                "written",
                hint=f"replace {kept} with the file it names, or remove it; then export again")
        if there is None:  # none there, a directory or a FIFO: no patch file to keep
            continue
        if there in written or recorded(name, there) or _sha256(there) in exported_bytes:
            continue  # (or a file an export wrote, renamed in quilt since: `quilt rename`)
        if taken_undone(taken, name, there, None, lambda: series_holdings(project, upstream)):
            # A patch `quilt new` made that an import took back, which the series no longer
            # lists nor holds anywhere (the import undone in the stack, or a run cut short
            # before it listed it): left unlisted, quilt's new fix would be lost to both.
            raise UsageError(
                f"{series}:{line_no}: lists {name}, which quilt made (`quilt new`) and "
                f"`import quilt --update` took back into the {upstream} series, which no "
                "longer holds it (the import undone in the stack?); the export would leave it "
                "unlisted there, so nothing was written",
                hint=f"to keep it, {_take_back(project, upstream, target)} takes it back into "
                     f"{project.patch_path(upstream, name)}; to drop it, remove {kept}; then "
                     "export again")
        if earlier is not None and name in earlier:
            # This project's patch as the last export wrote it (the record says so), changed
            # in DIR since (a `quilt refresh`): an export that leaves it out (another
            # profile's series, or a fix deleted since) would leave that change unlisted.
            export = f"the export of {profile}'s series, which does not hold it," \
                if profile is not None else "the export"
            if name in project.patch_names(upstream):
                raise UsageError(
                    f"{series}:{line_no}: lists {name}, this project's patch "
                    f"({project.patch_path(upstream, name)}), changed in {target} since "
                    f"patchforge exported it (by quilt refresh, an editor?); {export} would "
                    "leave it unlisted there, its change not in the series; nothing was "
                    "written",
                    hint=f"to keep the change, {_take_back(project, upstream, target)} takes "
                         f"it back into {project.patch_path(upstream, name)}; to drop it, "
                         f"remove {kept}; then export again")
            renamed = renamed_since_export(project, upstream, earlier[name],
                                           set(_listed_names(series)))
            if renamed is not None:
                # `patchforge rename` since the export: the advice `import quilt --update`
                # gives, which takes quilt's change back into the renamed fix.
                raise UsageError(
                    f"{series}:{line_no}: lists {name}, which is {renamed} now (renamed in the "
                    f"{upstream} series after `export --quilt` wrote it), changed in {target} "
                    "since the export (by quilt refresh, an editor?); the export would leave "
                    "it unlisted there, so nothing was written",
                    hint=f"to keep the change, rename it alike in quilt: {name} to {renamed} in "
                         f"{series} (line {line_no}) and {kept} to {kept.with_name(renamed)}, "
                         f"then {_take_back(project, upstream, target)} takes it back into "
                         f"{project.patch_path(upstream, renamed)}; to drop it, remove {kept}; "
                         "then export again")
            raise UsageError(
                f"{series}:{line_no}: lists {name}, which patchforge exported there and which "
                f"has left the {upstream} series since (deleted, renamed, or landed upstream), "
                f"changed in {target} since the export (by quilt refresh, an editor?); the "
                "export would leave it unlisted there, so nothing was written",
                hint=f"to keep it as a new fix, give it a new name in {series} and rename "
                     f"{kept} alike, then {_take_back(project, upstream, target)}; to drop "
                     f"it, remove {kept}; then export again")
        if earlier is not None:
            # DIR is this project's export (its record says so): a patch none of its
            # exports wrote was made there since, by quilt (`quilt new`; `quilt rename` of a
            # patch `quilt refresh` changed), and taking it back is the way on, never moving
            # DIR/series away, which the words for another stack's directory advised.
            raise UsageError(
                f"{series}:{line_no}: lists {name}, which no export of this project wrote and "
                f"the {upstream} series does not hold: made in {target} since the export "
                "(`quilt new`, `quilt rename`?); the export would leave it unlisted there, so "
                "nothing was written",
                hint=f"to keep it, {_take_back(project, upstream, target)} takes it back into "
                     "the series (after a `quilt rename`, it names the `patchforge rename` "
                     f"that keeps the fix's history); to drop it, remove {kept} and line "
                     f"{line_no} of {series}; then export again")
        raise UsageError(f"{series}:{line_no}: lists {name}, a patch of no series here, which "
                         f"the exported series would leave unlisted in {target} (a directory "
                         "of another quilt stack?); nothing was written",
                         hint="export into a directory of its own, or move "
                              f"{series} away if {name} is not needed")


def renamed_since_export(project: Project, upstream: str, recorded: list[str],
                         listed: set[str]) -> str | None:
    """The name `patchforge rename` gave, since `export --quilt` wrote it, to the fix whose
    exported bytes' hashes are `recorded`: a patch of the series that quilt's series does not
    list (`listed`) holding exactly those bytes (as written, or as the export wrote its diff
    for GNU patch). None when no patch of the series does."""
    for name in project.patch_names(upstream):
        if name in listed:
            continue
        mine = project.read_patch_bytes(upstream, name)
        patch = project.read_patch(upstream, name)
        exported = mine[:len(mine) - len(patch.diff)] + for_gnu_patch(patch.diff)
        if _sha256(mine) in recorded or _sha256(exported) in recorded:
            return name
    return None


def _listed_names(series: Path) -> list[str]:
    """The patch names a quilt series file lists (none where it cannot be read, or is no
    regular file: _file_in_dir)."""
    try:
        data, _ = _file_in_dir(series)
    except OSError:
        return []
    lines = (data or b"").splitlines()
    return [words[0].decode("utf-8", "surrogateescape") for words in
            (line.split(b"#", 1)[0].split() for line in lines) if words]


def _take_back(project: Project, upstream: str, target: Path) -> str:
    """The command that takes a quilt change in `target` back into the series."""
    return (f"`patchforge import quilt {shlex.quote(str(target))} --update"
            + (f" --upstream {upstream}" if len(project.upstream_names()) > 1 else "") + "`")


def _header_value(value: str) -> str:
    """One line of a mail header: a folded or hostile value (`A <a@x>\\n Bcc: y`) can never
    start a header of its own, and control characters become spaces."""
    return " ".join(re.sub(r"[\x00-\x1f\x7f]", " ", value).split())


# The mail header that marks a message `export --mbox` wrote: its value is the patch's file name,
# and the message body is the patch file's own header and description, verbatim (mboxrd-quoted),
# so that `import mbox` gives back every field byte for byte while `git am` takes the message as
# any other (the fields stay in the commit message, the diff is the commit).
PATCH_MARK = "X-Patchforge-Patch"

# A body line that reads as an mbox separator would start a message of its own: mboxrd quoting
# (one more `>` before `From `, every depth) can be undone exactly on the way back.
_MBOXRD_QUOTE = re.compile(rb"(?m)^(>*From )")
_MBOXRD_UNQUOTE = re.compile(rb"(?m)^>(>*From )")


def _mail_author(value: str) -> str:
    """The mail's From for a patch's Author: the first person it names, as `pr`'s commit has
    its author. The whole field (`A <a@x>, B <b@x>`, or folded one person per line) was the
    From, and `git am` made the commit by `a@x <a@x>`, the author's name lost. A name with a
    comma or quotes is quoted as a mail header needs it; a field naming no address first is
    written as it is."""
    person = first_person(value)
    if person is None:
        return value
    if person.name.isascii():
        return email.utils.formataddr((person.name, person.email))
    return str(person)  # git's mail reader takes a UTF-8 name as it is


def mbox_message(patch: PatchFile, raw_diff: bytes, index: int, total: int, base: str,
                 name: str | None = None) -> bytes:
    """One `git am`-ready message for a patch (deterministic: the date comes from Last-Update).

    The body is the patch file as it stands before its diff (any mbox line, every header
    field, the blank line, the free-text description, the `---` line and diffstat), so no field
    is lost on the way through a mailbox; From, Date and Subject repeat Author, Last-Update and
    Description for `git am`."""
    author = _header_value(_mail_author(patch.get("Author") or "")) or \
        "Unknown <unknown@localhost>"
    subject = _header_value(patch.subject or "") or "patchforge patch"
    try:
        # The day at midnight UTC, as `pr` makes its commit (refuse_undated_mail refused any
        # other value before anything was written).
        day = last_update_day(patch.get("Last-Update") or "1970-01-01")
        date = email.utils.format_datetime(_dt.datetime(day.year, day.month, day.day,
                                                        tzinfo=_dt.timezone.utc))
    except ValueError:
        date = "Thu, 01 Jan 1970 00:00:00 +0000"
    number = f"[PATCH {index}/{total}] " if total > 1 else "[PATCH] "
    mark = f"{PATCH_MARK}: {name}\n" if name else ""
    head = patch.preamble + b"".join(f.raw for f in patch.fields) + patch.gap + patch.description
    body = _MBOXRD_QUOTE.sub(rb">\1", head)
    return (f"From {base} Mon Sep 17 00:00:00 2001\nFrom: {author}\nDate: {date}\n"
            f"Subject: {number}{subject}\n{mark}\n").encode("utf-8", "surrogateescape") + \
        body + patch.separator + raw_diff + (b"" if raw_diff.endswith(b"\n") else b"\n") + b"\n"


def refuse_unknown_profile(project: Project, profile: str | None) -> None:
    """UsageError for an export's `--profile` the configuration does not declare, naming the
    configured ones: a typo would export no profile's series."""
    if profile is not None and profile not in project.config.profiles:
        raise UsageError(f"no profile named {profile!r}" + (
            f" (configured: {', '.join(project.config.profiles)})" if project.config.profiles
            else ": the configuration declares no profiles"))


def mbox_entries(project: Project, upstream: str | None = None,
                 profile: str | None = None) -> list[tuple[str, str]]:
    """(upstream, patch) of what `export --mbox` writes: one upstream's series, since `git am`
    applies an mbox to one tree. Without `upstream`, the series of the one upstream that has
    patches; patches of several upstreams are refused (the first patch of the second one would
    stop `git am`, and `import mbox` would put it into the first one's series). With
    `profile`, the patches of that profile's series only, as `export --quilt --profile`."""
    refuse_unknown_profile(project, profile)
    if upstream is not None:
        project.config.upstream(upstream)  # a UsageError naming the configured ones
        entries = [(upstream, name) for name in project.patch_names(upstream)]
    else:
        entries = project.all_patches()
        having = list(dict.fromkeys(u for u, _ in entries))
        if len(having) > 1:
            raise UsageError(f"the series has patches for {len(having)} upstreams "
                             f"({', '.join(having)}), and an mbox is applied by `git am` to "
                             "one upstream's tree",
                             hint="export one mbox per upstream: " + ", ".join(
                                 f"`patchforge export --upstream {u} --mbox FILE`"
                                 for u in having))
    return [(u, n) for u, n in entries
            if profile is None or applies_to_profile(project.read_patch(u, n), profile)]


def refuse_control_characters_in_mail(project: Project, entries: list[tuple[str, str]]) -> None:
    """InputError naming the patch file and line when a header field or the description of
    one of `entries` holds a control character: its mail would carry it to every terminal and
    mail reader showing it (and `import mbox` refuses such a mail). Asked before anything of
    the export is written."""
    for upstream, name in entries:
        refuse_control_characters(project.read_patch(upstream, name),
                                  str(project.series_dir(upstream) / name),
                                  ", which the mail would carry; nothing was written",
                                  text_as_bytes=True)


def refuse_undated_mail(project: Project, entries: list[tuple[str, str]]) -> None:
    """InputError naming the patch file and line when the `Last-Update` of one of `entries`
    is no date: its mail's Date, and the commit `git am` makes of it, would say 1970-01-01 as
    if the field were not there. Asked before anything of the export is written, as `pr`
    refuses such a field."""
    for upstream, name in entries:
        patch = project.read_patch(upstream, name)
        value = (patch.get("Last-Update") or "").strip()
        try:
            if value:
                last_update_day(value)
        except ValueError:
            raise InputError(f"Last-Update: {value!r} is not a date as DEP-3 writes it "
                             "(YYYY-MM-DD), which the mail's Date is made from, as `pr` makes "
                             "its commit's; nothing was written",
                             path=str(project.series_dir(upstream) / name),
                             line=patch.field_line("Last-Update"),
                             hint="write it as YYYY-MM-DD") from None


def export_mbox(project: Project, out: Path | BinaryIO, entries: list[tuple[str, str]],
                store: UpstreamStore | None = None,
                placed: dict[str, tuple[list[str], list[str]]] | None = None,
                profile: str | None = None) -> tuple[list[str], list[tuple[str, str]]]:
    """Write the mbox of `entries` (`mbox_entries`, asked with `project.refuse_own_destination`
    before anything of the export is written) to `out` (a path, or a stream: standard output
    for `--mbox -`). Returns the patches whose diff has
    lines ending in CRLF (a file with CRLF lines): plain `git am` drops every line's CR
    (mailsplit, as for any mail), so such a patch no longer applies, or its CRs are lost;
    `git am --keep-cr` takes them, and the command says so; and the patches without a diff
    (`new`, nothing refreshed into them), on which `git am` stops ("No valid patches"),
    each with the word `edit` takes for it. With `store`, each diff as the one stack `git am`
    applies has it (see export_quilt):
    `profile`'s series when given (`entries` are then that series' patches)."""
    remade: dict[str, dict[str, bytes]] = {}
    for upstream in dict.fromkeys(u for u, _ in entries) if store is not None else ():
        assert store is not None
        names = [n for u, n in entries if u == upstream]
        remade[upstream], kept = as_the_stack_has_them(project, store, upstream, names,
                                                      profile)
        if placed is not None and (remade[upstream] or kept):
            placed[upstream] = (list(remade[upstream]), kept)
    chunks = []
    crlf = []
    empty = []
    for index, (upstream, name) in enumerate(entries, 1):
        patch = project.read_patch(upstream, name)
        diff = remade.get(upstream, {}).get(name, patch.diff)
        chunks.append(mbox_message(patch, diff, index, len(entries),
                                   patch.get("Base") or "0" * 40, name))
        if b"\r\n" in patch.diff:
            crlf.append(name)
        if not patch.file_patches:
            empty.append((name, project.patch_word(upstream, name)))
    if isinstance(out, Path):
        write_destination(out, b"".join(chunks))
    else:
        out.write(b"".join(chunks))
        out.flush()
    return crlf, empty
