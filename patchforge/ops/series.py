"""The quilt-like loop: list, show, new, edit, refresh, delete, rename, move, bring-back.

`edit NAME` makes the editing worktree (patchforge/worktree.py) for NAME: its files, and those
the user adds (`edit --file`, `add`); `refresh` turns the difference between its HEAD and its
working files back into NAME's diff, keeping its header, then removes it.
"""
from __future__ import annotations

import datetime as _dt
import json
import os
import re
import shlex
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from patchforge.apply.chains import apply_on_chains, base_state
from patchforge.apply.series import (applies_to_profile, outcomes_on_bases,
                                     profile_bases_differ, profile_label, profile_set,
                                     unknown_profiles)
from patchforge.model.record import record
from patchforge.model.words import counted
from patchforge.names import KEPT_LANDINGS, check_new_patch_name, check_patch_name, file_name_key
from patchforge.stack import (aside_name, refuse_converted_line_ends, refuse_symlinked_paths,
                              series_changed, series_state)
from patchforge.errors import (AmbiguousNameError, ConflictStop, InputError, KeptAsideError,
                               PatchforgeError, UsageError)
from patchforge.formats.patchfile import (control_character, parse_patch_file, profile_names,
                                          render_patch_file)
from patchforge.fsutil import (RepoLock, atomic_delete, atomic_write, fsync_dir,
                               put_back_on_failure, writing_project)
from patchforge.project import patch_file_name, read_no_link, said_name
from patchforge.store.diff import added_lines, conflict_markers_left, make_diffs
from patchforge.store.git import run_git
from patchforge.worktree import (add_to_worktree, close_edit, close_edit_if_moved, close_worktree,
                                 holds_patch, keep_resolution, keep_unadded,
                                 refuse_changed_since_edit, refuse_gone_files_left_out,
                                 refuse_removed_by_hand, refuse_resolution_not_applying,
                                 refuse_resolution_outside_series, refuse_undoing, editing,
                                 require_state, require_state_still,
                                 resolution_keeps_patch_over, resolution_undoes,
                                 series_on_paths, state_file, worktree_diff)

if TYPE_CHECKING:
    from patchforge.formats.patchfile import PatchFile
    from patchforge.formats.series import SeriesFile
    from patchforge.project import Project
    from patchforge.store.gitstore import UpstreamStore


def today() -> str:
    """The Last-Update date: `$PATCHFORGE_DATE` (reproducible output in tests and golden
    files), checked, since it is written into patch headers as it is; else today."""
    fixed = os.environ.get("PATCHFORGE_DATE")
    if not fixed:
        return _dt.date.today().isoformat()
    try:
        if len(fixed) == 10 and _dt.date.fromisoformat(fixed).isoformat() == fixed:
            return fixed
    except ValueError:
        pass
    raise UsageError(f"PATCHFORGE_DATE={fixed!r} is not a date (YYYY-MM-DD)",
                     hint="unset it to use today's date")


UNKNOWN_AUTHOR = ("Unknown", "unknown@localhost")


def default_author() -> str:
    """`Name <email>` for a patch's Author: GIT_AUTHOR_NAME/EMAIL, else git's user.name and
    user.email, else UNKNOWN_AUTHOR's part (said by unknown_author_note)."""
    parts = []  # (where the part came from, the part): the name, then the email
    for variable, key, unknown in (("GIT_AUTHOR_NAME", "user.name", UNKNOWN_AUTHOR[0]),
                                   ("GIT_AUTHOR_EMAIL", "user.email", UNKNOWN_AUTHOR[1])):
        value = os.environ.get(variable)
        if value:
            parts.append((variable, value))
        else:
            out = run_git("config", "--get", key, user_config=True, ok=None)
            parts.append((f"git's {key}",
                          out.stdout.decode("utf-8", "replace").strip() or unknown))
    for source, value in parts:
        # Written into the patch as it is, as `-m` would be: a terminal showing the patch
        # (`cat`, `git log -p`, the mail `export` makes) would act on a control character.
        char = control_character(value)
        if char is not None:
            raise UsageError(f"the author's {source} holds a control character ({char}), "
                             "which a terminal showing the patch would act on",
                             hint=f"set {source} without it")
    (_, name), (_, email) = parts
    return f"{name} <{email}>"


def unknown_author_note(author: str) -> str | None:
    """What to tell a user whose patch got UNKNOWN_AUTHOR's name or email (no identity given to
    git on a fresh machine): the Author line goes with the fix upstream (`pr`, `export`)."""
    name, _, email = author.partition(" <")
    if name != UNKNOWN_AUTHOR[0] and email.rstrip(">") != UNKNOWN_AUTHOR[1]:
        return None
    return (f"note: the patch's Author is {author}: git has no user.name/user.email here; "
            "`git config --global user.name \"Your Name\"` and `git config --global user.email "
            "you@example.com` set them for the next patches (edit this one's Author line)")


@record(frozen=True)
class PatchSummary:
    upstream: str
    name: str
    subject: str
    status: str | None
    profiles: str | None
    files: tuple[str, ...]
    added: int
    removed: int


def list_series(project: Project) -> list[PatchSummary]:
    from patchforge.apply.stats import diffstat

    out = []
    for upstream, name in project.all_patches():
        patch = project.read_patch(upstream, name)
        stats = diffstat(patch.diff)
        out.append(PatchSummary(
            upstream=upstream, name=name, subject=patch.subject or "",
            status=patch.standing, profiles=patch.get("Profiles"),
            files=tuple(path for path, _, _ in stats),
            added=sum(a for _, a, _ in stats), removed=sum(r for _, _, r in stats)))
    return out


def show_patch(project: Project, name: str) -> dict:
    import hashlib

    from patchforge.apply.stats import diffstat

    upstream, file_name = project.find_patch(name)
    patch = project.read_patch(upstream, file_name)
    raw = project.read_patch_bytes(upstream, file_name)
    return {
        "upstream": upstream, "name": file_name,
        "path": str(project.patch_path(upstream, file_name).relative_to(project.root)),
        "subject": patch.subject or "",
        "header": [{"name": f.name, "value": f.value} for f in patch.fields],
        "description": patch.description.decode("utf-8", "replace"),
        "files": [{"path": p, "added": a, "removed": r} for p, a, r in diffstat(patch.diff)],
        "sha256": hashlib.sha256(raw).hexdigest(),
        "raw": raw,
        "diff": patch.diff,
    }


def add_to_open_worktree(project: Project, store: UpstreamStore, paths, *,
                         upstream: str | None = None):
    """`patchforge add PATH...` into the open worktree (an edit's or a stopped rebase's):
    (the worktree, the paths newly tracked)."""
    from patchforge.rebase.journal import Journal

    journal = Journal(project.state_dir)
    stop = journal.load().stopped if journal.exists() else None
    return add_to_worktree(project, store, paths, upstream=upstream,
                           stopped_at=(stop.upstream, stop.base) if stop is not None else None)


@record(frozen=True)
class OpenWork:
    """What the worktree of `upstream` is open for, as `add` and `rm` say it: the patch, the
    command that takes the worktree's change (`refresh`, `rebase --continue`, `bring-back
    --continue`), the commit the worktree's files start from (the upstream a path is looked up
    in), and, at a stop on files gone upstream, those files."""
    upstream: str
    patch: str
    go_on: str
    base: str
    gone: tuple[str, ...] = ()
    # At a conflict stop: the files the patch deletes that the target still has (changed:
    # git's modify/delete), which the worktree holds as the target has them.
    deleted: tuple[str, ...] = ()


def _deleted_by(patch, files) -> tuple[str, ...]:
    """The files of `files` that `patch` (a PatchFile, or None) deletes."""
    if patch is None:
        return ()
    return tuple(fp.old_path for fp in patch.file_patches
                 if fp.is_delete and fp.old_path in files)


def open_work(project: Project, upstream: str) -> OpenWork | None:
    """The open worktree of `upstream`: a rebase's stop, a stopped bring-back, or an edit."""
    from patchforge.rebase.journal import Journal

    journal = Journal(project.state_dir)
    stop = journal.load().stopped if journal.exists() else None
    if stop is not None and stop.upstream == upstream:
        from patchforge.worktree import series_patch

        return OpenWork(upstream, stop.name, "patchforge rebase --continue", stop.base,
                        tuple(stop.files) if stop.kind == "obsolete" else (),
                        _deleted_by(series_patch(project, upstream, stop.name), stop.files)
                        if stop.kind == "conflict" else ())
    state = editing(project, upstream)
    if state is None:
        return None
    if state.get("bring_back"):
        gone = tuple(state.get("conflicts") or ()) if state.get("kind") == "obsolete" else ()
        deleted: tuple[str, ...] = ()
        fix = project.root / str(state["bring_back"])
        if state.get("kind") == "conflict" and fix.is_file():
            deleted = _deleted_by(parse_patch_file(fix.read_bytes(), str(fix)),
                                  state.get("conflicts") or ())
        return OpenWork(upstream, state["patch"], "patchforge bring-back --continue",
                        state["base"], gone, deleted)
    return OpenWork(upstream, state["patch"], "patchforge refresh", state["base"])


def drop_gone_files(project: Project, store: UpstreamStore, paths, *,
                    upstream: str | None = None) -> tuple[OpenWork, list[str]]:
    """`patchforge rm PATH...` at a stop on files one side deleted and the other changed (a
    rebase's or a bring-back's), as `git rm` resolves git's modify/delete: the file ends
    deleted. A file gone upstream: the patch's change to it is dropped, and a copy re-created
    in the worktree goes (it is no longer part of the patch). A file the patch deletes and
    the upstream changed: it is removed from the worktree, and the patch keeps its deletion
    (refused where the project makes overlays, which cannot delete a file in the image). The
    rest of the fix goes on with `--continue`. Returns what the worktree is open for and the
    paths taken."""
    from patchforge.worktree import _worktree_relative

    candidates = [u for u in project.upstream_names() if upstream in (None, u)]
    stops = [w for u in candidates
             if (w := open_work(project, u)) is not None and (w.gone or w.deleted)]
    if not stops:
        opened = [w for u in candidates if (w := open_work(project, u)) is not None]
        why = (f"{opened[0].upstream}'s worktree is open for {opened[0].patch}, at no stop on "
               "a file gone upstream" if opened else "no worktree is open")
        at_stop = opened and opened[0].go_on != "patchforge refresh"
        raise UsageError(f"`patchforge rm` drops a file gone upstream from a stopped rebase's "
                         f"or bring-back's patch: {why}",
                         hint=(f"a file of the patch that is there stays part of it: put it back "
                               f"as at the stop's base (`git checkout -- PATH` in the worktree) "
                               f"to drop the patch's change to it, then `{opened[0].go_on}`"
                               if at_stop else
                               "to take a file out of a patch being edited, put it back as it "
                               "is in the worktree's base (`git checkout -- PATH` there), then "
                               "`patchforge refresh`"))
    if len(stops) > 1:
        raise UsageError("stops on files gone upstream in several series: "
                         + ", ".join(w.upstream for w in stops), hint="say which with --upstream")
    work_path = project.work_dir(stops[0].upstream)
    rels = [_worktree_relative(work_path, p) for p in paths]
    with RepoLock(project.state_dir, wait=10):
        now = open_work(project, stops[0].upstream)
        if now is None or now.gone != stops[0].gone or now.deleted != stops[0].deleted:
            raise UsageError("the stop changed while `patchforge rm` ran; nothing was dropped",
                             hint="run it again")
        other = [p for p in rels if p not in now.gone and p not in now.deleted]
        if other:
            raise UsageError(
                f"{', '.join(other)} is not a file gone upstream at this stop of {now.patch} "
                f"(those are: {', '.join(now.gone) or 'none'}"
                + (f"; the files it deletes that upstream changed: {', '.join(now.deleted)}"
                   if now.deleted else "") + "); nothing was dropped",
                hint="`patchforge rm` drops only those; a file of the patch that is there "
                     "stays part of it (put it back as at the base to drop its change)")
        deleting = [p for p in rels if p in now.deleted]
        if deleting and project.makes_overlays:
            listed = ", ".join(deleting)
            raise UsageError(
                f"{listed}: keeping {now.patch}'s deletion would make the series delete a file "
                "the upstream has, and this project writes overlays, which cannot delete a file "
                "in the image; nothing was removed",
                hint=f"`{now.go_on}` with {listed} as the worktree has it keeps the upstream's "
                     "file (change it as the image needs first); or set the fix aside (`--skip`, "
                     "or `--abort` of a bring-back)")
        for rel in deleting:
            target = work_path / rel
            if target.is_file() or target.is_symlink():
                target.unlink()  # tracked at the stop's base: --continue reads a deletion
        dropping = [p for p in rels if p in now.gone]
        if dropping:
            _drop_gone(project, store, now, dropping, work_path)
    return now, rels


def _drop_gone(project: Project, store: UpstreamStore, now: OpenWork, rels: list[str],
               work_path: Path) -> None:
    """The patch's change to `rels`, files gone upstream at the stop `now`, dropped: a copy
    re-created in the worktree goes, and the stop no longer names them."""
    from patchforge.rebase.journal import Journal
    from patchforge.worktree import Worktree

    entries = store.entries(now.base, rels)
    there = [p for p in rels if entries.get(p) is not None]
    if there:  # never: the stop names files its base lacks; a damaged state is refused
        raise UsageError(f"{', '.join(there)} is there at the stop's base; nothing was "
                         "dropped")
    work = Worktree(work_path)
    for rel in rels:
        target = work_path / rel
        if target.is_file() or target.is_symlink():
            target.unlink()
    if work.exists():
        # An `add` of the re-created file tracked it (intent to add): it goes with it.
        work._git("rm", "--cached", "-q", "--ignore-unmatch", "--", *rels)
        record = work._read_record()
        work._record(record["base"], sorted(set(record["files"]) - set(rels)))
    left = [p for p in now.gone if p not in rels]
    note = f"; {', '.join(rels)} dropped from the patch (`patchforge rm`)"
    journal = Journal(project.state_dir)
    if now.go_on == "patchforge rebase --continue":
        run = journal.load()
        assert run.stopped is not None
        run.stopped.files[:] = left
        run.stopped.message += note
        journal.save()
    else:
        state = editing(project, now.upstream)
        assert state is not None
        state = {**state, "conflicts": left, "message": str(state.get("message") or "") + note}
        atomic_write(state_file(project, now.upstream),
                     (json.dumps(state, indent=2) + "\n").encode())


def refresh(project: Project, store: UpstreamStore, name: str | None = None, *,
            allow_undo: bool = False) -> dict:
    """Write the worktree's change back into the patch, keeping its header; the worktree is
    then removed (everything in it is in the patch; `edit` makes it again in a moment).

    An edit that marked hunks that did not apply is refused when its resolution undoes a
    change made under the patch since it was made (worktree.resolution_undoes), unless
    `allow_undo`: then it is written, and the result's `undoes` says what it undoes."""
    upstream, file_name, state = _edited_patch(project, name)
    require_state(project, "refresh", [upstream])
    _require_listed(project, upstream, state)
    work = project.work_dir(upstream)
    if not work.is_dir():
        # Removed by hand (or by a clean-up): refresh said "No such file or directory" and
        # pointed back at refresh.
        raise UsageError(f"the worktree of the edit of {upstream}/{file_name} is gone "
                         f"({work}): there is no change to write",
                         hint=f"`patchforge edit --close` ends the edit ({file_name} stays as it "
                              f"is); `patchforge edit {project.patch_word(upstream, file_name)}` "
                              "opens a new one")
    if not (work / ".git").is_dir():
        raise UsageError(f"the worktree {work} has lost its .git, where patchforge records the "
                         "base: its change cannot be told apart from the base",
                         hint="copy the changed files elsewhere, `patchforge edit --close "
                              f"--discard`, `patchforge edit "
                              f"{project.patch_word(upstream, file_name)}`, then copy them back")
    diff, changes = worktree_diff(project, store, upstream, state, with_changes=True)
    path = project.patch_path(upstream, file_name)
    read = project.read_patch_bytes(upstream, file_name)
    patch = project.parse_patch(read, str(path))
    refuse_changed_since_edit(project, upstream, file_name, state, diff, patch.diff)
    undoes: list[str] = []
    if state.get("conflicts"):
        _refuse_unresolved_marks(state["conflicts"], changes, patch, file_name,
                                 project.work_dir(upstream))
        undoes = _undone_by(project, upstream, file_name, changes)
        if not allow_undo:
            refuse_undoing(undoes, file_name, "patchforge refresh",
                           "`patchforge edit --close --discard` leaves the patch as it is",
                           project.work_dir(upstream))
    if not changes and patch.file_patches:
        # The worktree put back as at the base (`git checkout -- .`, an editor's revert):
        # writing that emptied the fix, exit 0, and status said it applies. quilt refuses
        # too ("Nothing in patch").
        stem = project.patch_word(upstream, file_name)
        raise UsageError(f"the worktree ({work}) holds no change: refresh would empty "
                         f"{upstream}/{file_name}, and the fix would be gone",
                         hint=f"`patchforge edit --close --discard` keeps {file_name} as it is; "
                              f"`patchforge delete {stem}` drops the fix (kept under "
                              "deleted/)")
    removes = _removals_checked(project, store, upstream, file_name, changes, work,
                                "`patchforge refresh`")
    if holds_patch(store, state["base"], patch, changes, exact=True):
        # The worktree holds exactly what the patch already does: keep its bytes (it may have
        # been written by another tool, with abbreviated index lines or other context).
        diff = patch.diff
    # Words between the old diff's file sections (a plain .diff's note on a file) have no
    # place in the diff made again: they go to the end of the description, and are said.
    # A plain diff's words whose first line only looks like a field (`Note: ...`) stay words:
    # the header written above them must not split them.
    text = patch.header_read_as_text()
    new_patch = text.with_remade_diff(diff)
    notes: list[tuple[int, bytes]] = []
    if new_patch.diff != patch.diff:
        notes = patch.notes_in_diff()
        new_patch = new_patch.with_field("Last-Update", today())
    # The worktree's change is made on the pin the edit opened on (with the series before
    # it), whether or not its diff's bytes changed: a `Base` naming another revision (a branch
    # imported from an older upstream, a pin moved with `upstream pin --force`) would go on
    # saying it was made there, which bring-back's judgement, the ledger and `lint` read.
    pin = state.get("pin")
    base = (patch.get("Base") or "").strip()
    if pin and base and base != pin:
        new_patch = new_patch.with_field("Base", pin)
    # A plain diff (no header, perhaps words above it) gets a header now: said, with what
    # became of the words (the description).
    header_written = [f.name for f in new_patch.fields] if not text.fields else []
    data = new_patch.to_bytes()
    written = parse_patch_file(data, str(path))  # never write what we could not read back
    # A file pip installs outside the install root, which `add` and `new --file` refuse: the
    # fix could never be deployed (`overlays` refuses it). Put back, the rest is written.
    from patchforge.stack import OUTSIDE_INSTALL_ROOT, outside_install_root

    outside = outside_install_root(store, project.lock.pin(upstream).kind, state["base"],
                                   written.paths)
    if outside is not None:
        raise UsageError(f"{upstream}/{file_name} would change {outside[0]}: {outside[1]}, "
                         f"{OUTSIDE_INSTALL_ROOT}; nothing was written",
                         hint=f"put it back as the upstream has it (`git -C {work} checkout "
                              f"-- {shlex.quote(outside[0])}`) and refresh again; fix it in "
                              "the image (a Dockerfile step)")
    deletes, drops = _missing_from_worktree(patch, written, work)
    changed = data != read
    # The files the patch touched before or touches now: only those changed for the patches
    # after it. Asked before anything is written, of the series as the write leaves it: a
    # later patch that cannot be read fails the refresh here, with nothing changed.
    ambiguous: dict = {}
    in_profiles: list = []
    # The change is written as the worktree has it, made on the series before the patch as
    # `edit` found it: when that series changed since (an earlier patch pulled in), the patch
    # may no longer apply on it. It is written all the same and said (exit 1), as a later
    # patch that no longer applies is: nothing is lost, and `edit` opens it again on the
    # series as it is now, what does not apply marked.
    itself: list = []
    later = check_later_patches(project, store, upstream, file_name,
                                {*patch.paths, *new_patch.paths},
                                moves_files=any(_moves_a_file(fp) for fp in
                                                (*patch.file_patches, *new_patch.file_patches)),
                                edited=(data, written), ambiguous=ambiguous,
                                in_profiles=in_profiles, itself=itself)
    with RepoLock(project.state_dir):
        # Asked again under the lock: the edit is still this one (a `rename` beside this
        # command renamed its patch, an `edit --close` ended it), and nothing changed the patch
        # since it was read.
        now = editing(project, upstream)
        if not now or now.get("patch") != state.get("patch") or \
                now.get("base") != state.get("base"):
            what = f"renamed to {now['patch']}" if now and now.get("patch") != file_name \
                else "closed or opened again"
            raise UsageError(f"the edit of {upstream}/{file_name} was {what} while refresh "
                             "waited (another patchforge command); nothing was written",
                             hint="run `patchforge refresh` again" if now else
                             "`patchforge edit` opens a new one")
        if project.read_patch_bytes(upstream, file_name) != read:
            raise UsageError(f"{path.relative_to(project.root)} changed while refresh ran",
                             hint="run `patchforge refresh` again")
        with writing_project(project.root):  # the patch and the end of its edit, together
            if changed:
                atomic_write(path, data)
            series_changed(project)
            close_worktree(project, upstream)
    return {"upstream": upstream, "name": file_name, "changed": changed,
            "files": [c[0] for c in changes], "no_longer_applies": bool(itself),
            "header_written": header_written,
            "description_kept": bool(text.description.strip()),
            "notes_moved": [{"line": line, "text": text.decode("utf-8", "replace")}
                            for line, text in notes],
            "later_failing": later, "undoes": undoes,
            "removes_upstream_files": removes, "deletes_missing_files": deletes,
            "drops_missing_files": drops,
            "later_ambiguous": {name: [r.describe() for r in found]
                                for name, found in ambiguous.items()},
            "profile_failing": [{"name": p.name, "profiles": sorted(p.chain or ()),
                                 "path": p.path, "meets": p.met, "message": p.describe(),
                                 "remedy": p.remedy}
                                for p in in_profiles]}


def _missing_from_worktree(patch: PatchFile, written: PatchFile,
                           work: Path) -> tuple[list[str], list[str]]:
    """The files of the patch missing from the edit's worktree (moved aside, an editor's
    save-as, or removed on purpose: the way a patch is made to delete a file, or to stop making
    one) whose absence changes what the patch does, `patch` as it was and `written` as refresh
    writes it: (the files it now deletes and did not take away before, the files it made and
    no longer makes). Written, as quilt and git write them; said plainly, naming each, since
    the patch's change to such a file is gone from it."""
    taken_before = {fp.old_path for fp in patch.file_patches if fp.old_path is not None and (
        fp.is_delete or (fp.is_rename and fp.new_path != fp.old_path))}
    deletes = [fp.old_path for fp in written.file_patches
               if fp.is_delete and fp.old_path is not None and fp.old_path not in taken_before]
    made_now = {fp.new_path for fp in written.file_patches if fp.new_path is not None}
    drops = [fp.new_path for fp in patch.file_patches
             if fp.new_path is not None and fp.new_path not in made_now
             and (fp.is_new or ((fp.is_rename or fp.is_copy) and fp.new_path != fp.old_path))
             and not os.path.lexists(work / fp.new_path)]
    return deletes, drops


def _removals_checked(project: Project, store: UpstreamStore, upstream: str,
                      file_name: str, changes, work: Path, go_on: str) -> list[str]:
    """The upstream files the worktree's change takes away for good (removed, or renamed away,
    and made again by no later patch): refused (UsageError, the worktree kept) where the
    project writes overlays, which cannot delete a file in the image, so that the patch is
    never written for `overlays` or a rebase's write-out to refuse later; returned otherwise,
    for the warning. A changed file whose name is not UTF-8 is refused first
    (_names_checked). `file_name`: the patch, whose later patches are looked at (one the
    series does not list yet, a fix brought back, goes at its end)."""
    from patchforge.overlay import removals_overlays_refuse, removed_upstream_files

    _names_checked(project, upstream, file_name, changes, work, go_on)
    if not any(new is None for _, _, new, *_ in changes):
        return []
    names = project.patch_names(upstream)
    later = [project.read_patch(upstream, n) for n in names[names.index(file_name) + 1:]] \
        if file_name in names else []
    pin = project.lock.pin(upstream).commit
    refused = removals_overlays_refuse(project, store, pin, changes, later)
    if refused:
        listed = ", ".join(refused)
        raise UsageError(
            f"{listed} removed in {work}: {upstream}/{file_name} would delete "
            f"{'them' if len(refused) > 1 else 'it'} from the upstream's files, and this "
            "project writes overlays, which cannot delete a file in the image (`patchforge "
            "overlays` refuses a series that deletes one); nothing was written",
            hint=f"put {listed} back (`git checkout -- PATH` in {work} gives the file as at "
                 f"the base; change it as the image needs, e.g. empty it), then {go_on}")
    return removed_upstream_files(store, pin, changes, later)


def _names_checked(project: Project, upstream: str, file_name: str, changes, work: Path,
                   go_on: str) -> None:
    """Refused (UsageError, the worktree kept) where the project writes overlays: a change of
    a file whose name is not UTF-8, which `overlays` cannot mount or copy; refresh wrote it
    and lint and status passed it until `overlays` refused the series."""
    from patchforge.overlay import NAME_REFUSED, shown_name

    if not project.makes_overlays:
        return
    unnamed = [shown_name(path) for path, _, new, *_ in changes
               if new is not None and shown_name(path) != path]
    if unnamed:
        raise UsageError(f"{', '.join(unnamed)} changed in {work}: {upstream}/{file_name} would "
                         f"write {'them' if len(unnamed) > 1 else 'it'}, and this project "
                         f"writes overlays: {NAME_REFUSED}; nothing was written",
                         hint=f"put {'them' if len(unnamed) > 1 else 'it'} back as at the base "
                              f"(`git checkout -- PATH` in {work}), then {go_on}")


def close_open_edit(project: Project, store: UpstreamStore, name: str | None = None, *,
                    discard: bool = False) -> dict:
    """`edit --close [--discard]`: end the open edit (of NAME's upstream, or the only one).
    Discarding also ends an edit whose state file cannot be read, without reading it."""
    try:
        upstream, file_name, _ = _edited_patch(
            project, name, "edit --close --discard" if discard else "edit --close")
    except InputError:
        from patchforge.state import EDITING, read_states

        unreadable = [s.upstream for s in read_states(project).values()
                      if s.kind == EDITING and s.patch is None]
        if name and discard:
            # NAME says which upstream's edit to end, when several cannot be read.
            named = project.find_patch(name)[0]
            unreadable = [upstream for upstream in unreadable if upstream == named]
        if not discard or len(unreadable) != 1:
            raise
        upstream, file_name = unreadable[0], "(its state file could not be read)"
    close_edit(project, store, upstream, discard=discard)
    return {"upstream": upstream, "name": file_name, "discarded": discard}


def _edited_patch(project: Project, name: str | None,
                  command: str = "refresh") -> tuple[str, str, dict]:
    """(upstream, patch file name, editing state) of the patch being edited (NAME, or the only
    one). `command` (its words, as the user runs it) is named in the refusal of several."""
    from patchforge.state import REBASING, STOPPED, read_states

    if name:
        upstream, file_name = project.find_patch(name)
        require_state(project, "refresh", [upstream])
        state = editing(project, upstream)
        if not state or state["patch"] != file_name:
            # Another patch of the upstream open: `edit NAME` is refused until that edit ends,
            # so the hint names the open one first.
            hint = (f"{upstream}/{state['patch']} is being edited: `patchforge refresh` writes "
                    f"it (or `patchforge edit --close`), then `patchforge edit {name}`"
                    if state else f"run `patchforge edit {name}`")
            raise UsageError(f"{file_name} is not being edited", hint=hint)
        return upstream, file_name, state
    active = [(u, s) for u in project.upstream_names() if (s := editing(project, u))]
    if not active:
        busy = [s for s in read_states(project).values() if s.kind in (STOPPED, REBASING)]
        if busy:
            raise UsageError(f"no patch is being edited: {busy[0].describe()}",
                             hint=busy[0].next_step())
        raise UsageError("no patch is being edited", hint="run `patchforge edit NAME` first")
    if len(active) > 1:
        from patchforge.state import edit_command

        # The hint names the form that works for each: the bare command is what was refused.
        raise UsageError("several patches are being edited: " +
                         ", ".join(f"{u}/{s['patch']}" for u, s in active) + "; name one",
                         hint=" or ".join(f"`{edit_command(command, u, s['patch'], True)}`"
                                          for u, s in active))
    return active[0][0], active[0][1]["patch"], active[0][1]


def _require_listed(project: Project, upstream: str, state: dict) -> None:
    """An edit whose patch left the series (deleted or renamed by a `git pull` of the stack, or
    a rename cut short before it updated the edit) can no longer be refreshed into it: say so,
    rather than fail reading the patch, with the ways on that keep the change."""
    if state.get("bring_back") or state["patch"] in project.patch_names(upstream):
        return
    from patchforge.state import several_edits_open, unlisted_edit_way_on

    raise UsageError(f"{upstream}/{state['patch']} is no longer in the series (renamed or "
                     "deleted since the edit opened: another command, or a `git pull` of the "
                     "stack); its worktree keeps the change",
                     hint=unlisted_edit_way_on(upstream, str(state["patch"]),
                                               project.work_dir(upstream),
                                               several_edits_open(project))
                     + "; a `patchforge rename` cut short is finished by running it again")


def check_later_patches(project: Project, store: UpstreamStore, upstream: str,
                        file_name: str, paths, *, moves_files: bool = False,
                        edited: tuple[bytes, PatchFile] | None = None,
                        ambiguous: dict | None = None,
                        in_profiles: list | None = None,
                        itself: list | None = None) -> list[str]:
    """Names of the patches after `file_name` that do not apply on the series before them to
    `paths` (the files a change of `file_name` touched, before or after it) or to a file they
    are renamed or copied to or from. Only those files are taken through the series: a later
    patch's other files are as the change found them, and `status`/`lint` judge those.

    `moves_files`: the change (before or after it) creates, deletes, renames or copies a file.
    A later patch can then also meet a path it creates already filled (the change now creates
    the same file, or no longer deletes the upstream's), or a file where it needs a directory
    (or the reverse: `d` against `d/x`), which no file of `paths` names: the whole series is
    walked for creations that collide at, above or below `paths`, profile by profile.
    `edited` (bytes, PatchFile) stands for `file_name`'s file: the series as a refresh leaves
    it, asked before the refresh writes. `ambiguous` (a dict) is given, per later patch that
    applies, the hunks whose place among several matches the change made a guess of
    (apply_series' `placement`): their line numbers were made on the series before it.
    `in_profiles` (a list) is given, in a series with patches for some profiles only, the
    apply.chains.ChainProblem of `file_name` itself and of each later patch that applies on its
    base but does not go into a profile's series holding it (what that profile's overlays
    would refuse). `itself` (a list) is given `file_name` when its own change does not apply
    on the series before it as that is now: the series it was made on (an edit's base) is no
    longer the one before it (an earlier patch changed, a `git pull` of the stack)."""
    names = project.patch_names(upstream)
    if file_name not in names:
        return []
    pin = project.lock.pin(upstream)
    picked = series_on_paths(project, upstream, paths,
                             edited=(file_name, *edited) if edited else None)
    # Each later patch on its own base (the earlier patches in all of its profiles' series).
    configured = list(project.config.profiles)
    own = [profile_set(edited[1] if edited and name == file_name else
                       project.read_patch(upstream, name), configured) if configured else None
           for name, _ in picked]

    def read_base(wanted):
        return store.read_blobs(pin.commit, wanted)

    later = set(names[names.index(file_name) + 1:])
    if configured and any(chosen is not None for chosen in own):
        # Each patch on its base, carried into each profile's series that holds it as the
        # overlays carry it (apply.chains): the change itself may not go there either.
        chains = apply_on_chains(read_base, picked, configured, own=own, strict=False,
                                 placement=True)
        outcomes = chains.outcomes
        if in_profiles is not None:
            in_profiles.extend(problem for problem in chains.problems
                               if problem.name in later or problem.name == file_name)
    else:
        outcomes = outcomes_on_bases(read_base, picked, own, strict=False, placement=True)
    failing = {o.name for o in outcomes if o.name in later and not o.ok}
    if itself is not None:
        itself.extend(o.name for o in outcomes if o.name == file_name and not o.ok)
    if ambiguous is not None:
        ambiguous.update({o.name: o.ambiguous for o in outcomes
                          if o.name in later and o.ok and o.ambiguous})
    if moves_files:
        failing |= _later_collisions(project, store, upstream, pin.commit, file_name, later,
                                     set(paths), {file_name: edited[1]} if edited else {},
                                     in_profiles if configured else None)
    return [name for name in names if name in failing]


def _moves_a_file(fp) -> bool:
    """True when a file patch creates, deletes, renames or copies a file."""
    return fp.is_new or fp.is_delete or ((fp.is_rename or fp.is_copy)
                                         and fp.old_path != fp.new_path)


def _later_collisions(project: Project, store: UpstreamStore, upstream: str, commit: str,
                      file_name: str, later: set[str], paths: set[str], edited: dict,
                      in_profiles: list | None = None) -> set[str]:
    """The patches of `later` whose creation collides (stack.creation_collisions), in some
    profile's series, at a path of `paths`, under one, or above one. With `in_profiles` (a
    list, in a stack with profiles), a collision that is in some of a patch's profiles'
    series only is an apply.chains.CollisionProblem there instead, naming those profiles: a
    later patch's, or `file_name`'s own, a path it makes meeting one an earlier patch of
    another profile makes (the edit's worktree, its own base, never held that patch, so
    nothing else finds it before the overlays fail)."""
    from patchforge.apply.chains import CollisionProblem
    from patchforge.stack import collisions_by_profile, creates_path

    def related(path: str, to=paths) -> bool:
        return any(path == p or path.startswith(p + "/") or p.startswith(path + "/")
                   for p in to)

    patches = [(n, edited.get(n) or project.read_patch(upstream, n))
               for n in project.patch_names(upstream)]
    by_name = dict(patches)
    configured = list(project.config.profiles)
    grouped: dict[tuple[str, str, str], list] = {}  # (patch, path, how) -> the profiles
    for profile, (name, _, fp, message, _) in collisions_by_profile(project, store, commit,
                                                                     patches):
        if name == file_name and in_profiles is not None and profile is not None or \
                name in later and related(fp.new_path):
            grouped.setdefault((name, fp.new_path, message), []).append(profile)
    failing = set()
    for (name, path, message), profiles in grouped.items():
        holding = [q for q in configured if applies_to_profile(by_name[name], q)]
        if name != file_name and (in_profiles is None or None in profiles
                                  or set(profiles) >= set(holding)):
            failing.add(name)  # in every series that holds it: it no longer applies
            continue
        assert in_profiles is not None
        met = [f"{n} ({profile_label(profile_set(p, configured))})" for n, p in patches
               if n != name and any(applies_to_profile(p, q) for q in profiles)
               and any(f.new_path is not None and creates_path(f)
                       and related(f.new_path, [path]) for f in p.file_patches)]
        in_profiles.append(CollisionProblem(name, frozenset(profiles), path, message, met))
    return failing


# --- series edits -----------------------------------------------------------------------------

def checked_patch_name(name: str) -> str:
    """`name` when a series file and a directory can hold it; UsageError otherwise."""
    try:
        return check_patch_name(name)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def checked_new_patch_name(name: str) -> str:
    """`name` for a patch being made (new, rename, import): one every checkout of the stack,
    Windows' too, can write (names.check_new_patch_name); UsageError otherwise."""
    try:
        return check_new_patch_name(name)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def refuse_case_twin(project: Project, upstream: str, file_name: str,
                     also: set[str] | frozenset[str] = frozenset(),
                     same: str | None = None) -> None:
    """UsageError when `file_name` differs only in case (or Unicode form) from a patch file of
    the upstream's series directory (or from a name of `also`, an import's earlier patches),
    other than `same` (the patch being renamed): a checkout on a case-insensitive file system
    (macOS, Windows) has one file for the two names, and one fix overwrites the other."""
    folded = file_name_key(file_name)
    directory = project.series_dir(upstream)
    names = set(also) | set(project.patch_names(upstream))
    try:
        names |= {entry.name for entry in os.scandir(directory) if entry.name.endswith(".patch")}
    except OSError:
        pass
    for other in sorted(names):
        if other != file_name and other != same and file_name_key(other) == folded:
            how = "in case" if other.casefold() == file_name.casefold() else \
                "in case or in how its letters are encoded (Unicode composed or decomposed)"
            raise UsageError(f"{file_name} differs only {how} from {other} (series/{upstream}/"
                             f"): a checkout on macOS or Windows has one file for the two, and "
                             "one fix would overwrite the other", hint="choose another name")


def refuse_skipped_name(project: Project, file_name: str) -> None:
    """UsageError when a fix a rebase set aside (series/<any upstream>/skipped/) holds
    `file_name`: `delete NAME` and `bring-back NAME` name a fix by its name alone, and with a
    live fix of the same name `status` would advise, of the skipped one, a `delete` that
    could not tell the two apart."""
    from patchforge.state import skipped_fixes

    for fix in skipped_fixes(project):
        if fix.name == file_name:
            stem = project.skipped_word(fix.upstream, file_name)
            raise UsageError(
                f"{file_name} is the name of a fix a rebase set aside "
                f"({fix.path.relative_to(project.root).as_posix()})",
                hint=f"`patchforge bring-back {stem}` puts it back onto the current base, "
                     f"`patchforge delete {stem}` drops it (kept under deleted/); or choose "
                     "another name")


def refuse_name_of_another_series(project: Project, upstream: str, file_name: str) -> None:
    """UsageError when another upstream's series lists `file_name`. A patch's name is one fix
    in the whole project, as it is for a fix set aside (`refuse_skipped_name`): `edit NAME`,
    `delete NAME`, `bring-back NAME` and every hint take the name alone, and with a patch of
    that name in two series each of them is refused as in several series (`new`, `rename`
    and the imports alike; a stack made so by a merge or by an older version is read as it
    is, its patches named UPSTREAM/NAME)."""
    for other in project.upstream_names():
        if other != upstream and file_name in project.patch_names(other):
            stem = file_name[:-len(".patch")]
            raise UsageError(
                f"{file_name} is the name of a patch of the {other} series ({other}/{stem}): a "
                "patch's name names one fix in the whole project, as `edit NAME` and "
                "`delete NAME` take it", hint=f"choose another name, or `patchforge rename "
                                             f"{other}/{stem} NEW` first")


def check_profiles(project: Project, profiles: str) -> None:
    """`--profiles` of `new` and `import overlay`: every name a declared profile, and one at
    least (a `Profiles:` field listing none is refused when read: `--profiles "$UNSET"`
    would have made a fix for every profile)."""
    if not profile_names(profiles):
        raise UsageError(f"--profiles {profiles!r} names no profile",
                         hint="name the profiles the fix is for, or leave --profiles out: a fix "
                              "is then for every profile")
    if not project.config.profiles:
        raise UsageError(f"--profiles {profiles!r}: the configuration declares no profiles, "
                         "so a fix cannot be limited to some",
                         hint="declare them under [profiles] first, or leave --profiles out")
    unknown = unknown_profiles(profile_names(profiles), list(project.config.profiles))
    if unknown:
        raise UsageError(f"unknown profile {unknown[0]!r} (configured: "
                         f"{', '.join(project.config.profiles)})")


def in_series_of(project: Project, name: str, upstream: str | None,
                 what: str) -> tuple[str | None, str]:
    """A patch name as `list` prints it (`UPSTREAM/NAME`) or bare: (the upstream it names, else
    `upstream`; the bare name). A prefix that is no configured upstream, or another than
    `upstream`, is refused naming both: the name with its prefix was refused as a patch name
    that cannot hold '/', though it was the one `list` showed."""
    prefix, slash, bare = name.partition("/")
    if not slash:
        return upstream, name
    configured = project.upstream_names()
    if prefix not in configured:
        raise UsageError(f"{what} {name!r}: {prefix!r} is no configured upstream "
                         f"({', '.join(configured) or 'none'}), and a patch name holds no '/'")
    if upstream is not None and prefix != upstream:
        raise UsageError(f"{what} {name!r} names the {prefix} series, but this is the "
                         f"{upstream} series: a patch stays in its upstream's series")
    return prefix, bare


def only_upstream(project: Project) -> str:
    """The one configured upstream, for a command given no --upstream; else a UsageError that
    says what there is."""
    upstreams = project.upstream_names()
    if not upstreams:
        raise UsageError("no upstream is configured",
                         hint="run `patchforge upstream add NAME ... --at SPEC` first")
    if len(upstreams) != 1:
        raise UsageError(f"several upstreams are configured ({', '.join(upstreams)}); say which "
                         "with --upstream")
    return upstreams[0]


def new_patch(project: Project, name: str, *, upstream: str | None = None, after: str | None = None,
              description: str | None = None, profiles: str | None = None,
              store: UpstreamStore | None = None) -> tuple[str, str]:
    upstream, name = in_series_of(project, name, upstream, "new")
    char = control_character(description or "")
    if char is not None:
        # The fix's Description: every terminal showing the patch would act on it.
        raise UsageError(f"-m holds a control character ({char}), which a terminal showing "
                         "the patch would act on", hint="give the description without it")
    if upstream is None:
        upstream = only_upstream(project)
    project.config.upstream(upstream)
    file_name = patch_file_name(checked_new_patch_name(name))
    allowed = require_state(project, "new", [upstream], store=store)
    pin = project.lock.pin(upstream)
    fields = [("Description", description or name), ("Author", default_author()),
              ("Upstream-Status", "Pending"), ("Upstream", upstream), ("Base", pin.commit)]
    if profiles is not None:
        check_profiles(project, profiles)
        fields.append(("Profiles", profiles))
    fields.append(("Last-Update", today()))
    data = render_patch_file(fields, b"", b"")
    if _made_by_this_new(project, upstream, file_name, data):
        # The same `new` cut short once its patch was listed (Ctrl-C said to run it again):
        # what is left is the ledger and the worktree.
        with RepoLock(project.state_dir, wait=10):
            series_changed(project)
        return upstream, file_name
    if file_name in project.patch_names(upstream):
        raise UsageError(f"a patch named {file_name} already exists")
    refuse_name_of_another_series(project, upstream, file_name)
    refuse_skipped_name(project, file_name)
    _refuse_unlisted_fix(project, upstream, file_name)
    refuse_case_twin(project, upstream, file_name)
    with RepoLock(project.state_dir, wait=10):
        require_state_still(project, "new", [upstream], allowed, store=store)
        if project.lock.pin(upstream).commit != pin.commit:
            raise UsageError(f"the {upstream} pin moved while `new` ran (a rebase beside it); "
                             "nothing was written", hint="run `patchforge new` again")
        # Read the series under the lock: two `new` at once must not lose an entry.
        series = project.read_series(upstream)
        if after is not None:
            after = _listed_after(project, upstream, series, after)
        if file_name in series.names:
            raise UsageError(f"a patch named {file_name} already exists")
        refuse_name_of_another_series(project, upstream, file_name)
        refuse_skipped_name(project, file_name)
        _refuse_unlisted_fix(project, upstream, file_name)
        new_series = series.inserted(file_name, after=after)
        with writing_project(project.root):  # never a patch file its series does not list
            atomic_write(project.patch_path(upstream, file_name), data)
            atomic_write(project.series_path(upstream), new_series.to_bytes())
            close_edit_if_moved(project, upstream, series.names, new_series.names)
            series_changed(project)
    return upstream, file_name


def _refuse_unresolved_marks(marked_files: list[str], changes, patch, file_name: str,
                             work: Path) -> None:
    """UsageError while a file `edit` marked (a patch that did not apply) is not resolved: a
    marker left, or the file put back as at the base (`git checkout -- FILE` to start over) or
    removed, which leave no marker and made refresh write the patch without that file's hunks
    (or deleting the file): a fix emptied, exit 0, every check green."""
    own = added_lines(patch)
    left = [p for p, old, new, _, _ in changes
            if p in marked_files and new is not None and conflict_markers_left(old, new, own)]
    if left:
        raise UsageError(f"conflict markers left in {', '.join(left)} (in {work})",
                         hint="resolve them, then `patchforge refresh`")
    in_worktree = {p: new for p, _, new, _, _ in changes}
    deletes = {fp.old_path for fp in patch.file_patches if fp.new_path is None}
    emptied = [p for p in marked_files
               if p not in in_worktree or (in_worktree[p] is None and p not in deletes)]
    if emptied:
        raise UsageError(
            f"{', '.join(emptied)} holds none of {file_name}'s change where `edit` marked it "
            f"(the file is as at the base, or gone, in {work}): written now, {file_name} "
            "would lose that file's hunks",
            hint=f"make the patch's change there, then `patchforge refresh`; or "
                 f"`patchforge edit --close --discard` ({file_name} stays as it is)")


def _undone_by(project: Project, upstream: str, file_name: str, changes) -> list[str]:
    """What the marked edit of `file_name` undoes of the changes made under it (the earlier
    patches of its series, or the pinned upstream)."""
    def earlier() -> list:
        names = project.patch_names(upstream)
        return [(n, project.read_patch(upstream, n))
                for n in names[:names.index(file_name) if file_name in names else 0]]

    return resolution_undoes(project, upstream, changes, earlier,
                             f"the upstream ({project.lock.pin(upstream).label})")


def patches_before_new(project: Project, upstream: str, after: str | None) -> list[str]:
    """The patches of the `upstream` series a new patch inserted `--after` AFTER (None: at the
    end) comes after: those its base has the changes of. AFTER not listed is refused."""
    series = project.read_series(upstream)
    if after is None:
        return list(series.names)
    after = _listed_after(project, upstream, series, after)
    return list(series.names[:series.names.index(after) + 1])


def withdraw_new_patch(project: Project, upstream: str, file_name: str) -> None:
    """Take back the empty patch new_patch() listed, when the rest of `new` (its worktree)
    failed: `new` writes nothing unless it all succeeds, and a failure left an empty fix
    listed that the next `new` of the name refused as already there. Only the patch `new`
    wrote (still empty, no edit open on it) is taken back."""
    from patchforge.state import editing_path

    with RepoLock(project.state_dir, wait=10):
        path = project.patch_path(upstream, file_name)
        series = project.read_series(upstream)
        if file_name not in series.names or editing_path(project, upstream).exists():
            return
        try:
            empty = not parse_patch_file(path.read_bytes(), str(path)).file_patches
        except (InputError, OSError):
            return
        if not empty:
            return
        with writing_project(project.root):
            atomic_write(project.series_path(upstream), series.removed(file_name).to_bytes())
            path.unlink(missing_ok=True)
            series_changed(project)


def _made_by_this_new(project: Project, upstream: str, file_name: str, data: bytes) -> bool:
    """True when the series lists `file_name` with exactly the empty patch `new` writes now."""
    if file_name not in project.patch_names(upstream):
        return False
    try:
        return project.patch_path(upstream, file_name).read_bytes() == data
    except OSError:
        return False


def _refuse_unlisted_fix(project: Project, upstream: str, file_name: str) -> None:
    """`new` of a name whose patch file is there but not listed: a file without any change (a
    `new` cut short between writing its patch and listing it, whose Ctrl-C said to run it
    again) is taken over; one that holds a change is a fix, refused by name (it said "already
    exists", of a patch the series did not have)."""
    path = project.patch_path(upstream, file_name)
    if not path.exists():
        return
    try:
        empty = not parse_patch_file(path.read_bytes(), str(path)).file_patches
    except (InputError, OSError):
        empty = False
    if not empty:
        raise UsageError(f"a patch file named {file_name} is already there, not listed in the "
                         f"{upstream} series: {path}",
                         hint=f"list it in {project.series_path(upstream)} (it is a fix), or move "
                              "it away, then run `new` again")


@record(frozen=True)
class Deleted:
    """What `delete` did. `source`: the directory the fix was taken from, as said to the user
    (`the series`, `skipped/`, `upstreamed/`); `kept`: where it is kept under deleted/;
    `failing` and `removals`: what the series without it does (delete_patch), for a fix taken
    out of the series only."""

    source: str
    kept: Path
    failing: list[str]
    removals: list[tuple[str, str, str | None]]
    upstream: str | None = None  # the series `failing` and `removals` are of
    # The patches that applied exactly (or at an offset) with it and need fuzz without it
    fuzzy: tuple[str, ...] = ()


def delete_patch(project: Project, name: str, *, store: UpstreamStore | None = None) -> Deleted:
    """Take a patch out of the series (or a fix out of skipped/); the file is kept under
    series/<upstream>/deleted/. Returns where the fix was and where it is kept, the patches of
    the series that applied with it and no longer apply without it (a later fix built on its
    lines), as `move` says of a new order, and the upstream files the series now takes away
    that it did not (overlay.new_series_removals: the patch made again a file an earlier one
    deletes, and `overlays` refuses the series without it). Both are said, not refused: the
    user asked for the patch to go, and a patch's consequences are never a reason to keep it.

    `UPSTREAM/upstreamed/NAME` names a fix kept under upstreamed/ whose landing the pin no
    longer has, whatever the series lists: the name may be a live fix's again."""
    try:
        named = _kept_landing_named(project, name)
    except AmbiguousNameError:
        raise
    except UsageError:
        finished = _finish_cut_aside_delete(project, name, store)
        if finished is not None:
            return finished
        raise
    if named is not None:
        from patchforge.reverts import unparsed_kept

        # One that does not parse is judged by nothing: taken out (kept under deleted/), as
        # lint's finding on it says.
        unparsed = named[1] in dict(unparsed_kept(project, named[0]))
        if not unparsed and (store is None or not _landing_taken_back(project, store, *named)):
            raise UsageError(f"{named[0]}/upstreamed/{named[1]}: the pin still has its change "
                             "(or upstream changed that code otherwise): nothing to delete")
        return _delete_kept_landing(project, *named, store)
    try:
        upstream, file_name = project.find_patch(name)
    except AmbiguousNameError:
        raise  # listed in several series: not "no patch named NAME"
    except UsageError as not_listed:
        finished = _finish_cut_delete(project, name, store)
        if finished is not None:
            return finished
        try:
            fix = find_skipped(project, name)
        except UsageError:
            landed = _kept_upstreamed(project, name)
            if len(landed) == 1 and store is not None and \
                    _landing_taken_back(project, store, *landed[0]):
                return _delete_kept_landing(project, *landed[0], store)
            finished = _finish_cut_aside_delete(project, name, store)
            if finished is not None:
                return finished
            if isinstance(not_listed, KeptAsideError):
                raise not_listed from None  # says where it is kept
            raise UsageError(f"no patch named {said_name(name)} in the series or under skipped/",
                             hint="`patchforge list` shows the series") from None
        allowed = require_state(project, "delete", [fix.upstream], store=store)
        return Deleted("skipped/", _delete_aside(project, fix.upstream, fix.name, fix.path,
                                                 allowed, store), [], [])
    _refuse_listed_and_skipped(project, name, upstream, file_name)
    allowed = require_state(project, "delete", [upstream], store=store)
    source = project.patch_path(upstream, file_name)
    with RepoLock(project.state_dir):
        require_state_still(project, "delete", [upstream], allowed, store=store)
        _refuse_gone(project, upstream, file_name)
        data = source.read_bytes()  # under the lock: a refresh may have written it meanwhile
        series = project.read_series(upstream)
        before = _readable_patches(project, upstream, series.names)
        kept = project.series_dir(upstream) / "deleted" / aside_name(
            project.series_dir(upstream) / "deleted", file_name, data)
        # Copy first, then the history's event, then unlist, then the ledger, then remove: a
        # kill at any point loses nothing, and once the series no longer lists the fix the
        # history says where it is kept (the event written after the unlisting was lost to a
        # kill in between, and the same delete run again was refused). A kill after the
        # unlisting leaves the file beside the series, unlisted: the same delete run again
        # finishes (_finish_cut_delete). Readers see none of it or all of it (never the patch
        # file its series no longer lists).
        remaining = series.removed(file_name)
        from patchforge.ledger import record_deletion, update_ledger

        with writing_project(project.root):
            atomic_write(kept, data)
            record_deletion(project, _deleted_event(project, upstream, file_name, kept))
            atomic_write(project.series_path(upstream), remaining.to_bytes())
            close_edit_if_moved(project, upstream, series.names, remaining.names)
            update_ledger(project)
            atomic_delete(source)
    fuzzy: list[str] = []
    return Deleted("the series", kept,
                   _broken_by_removal(project, store, upstream, before, file_name, fuzzy),
                   _removals_left_by(project, store, upstream, before, file_name), upstream,
                   tuple(fuzzy))


def _finish_cut_delete(project: Project, name: str,
                       store: UpstreamStore | None) -> Deleted | None:
    """`delete NAME` run again after a kill cut it short once the series no longer listed the
    fix: its file is still beside the series, unlisted, and deleted/ keeps the same bytes.
    The rest is done (the history's event once, the ledger, the file removed) and said as
    the delete it finishes; None when NAME is no such file (the refusals say where it is)."""
    wanted, _, stem = name.rpartition("/")
    file_name = patch_file_name(stem)
    found = []
    for upstream in project.upstream_names():
        if wanted not in ("", upstream):
            continue
        kept = cut_delete_kept(project, upstream, file_name)
        if kept is not None:
            found.append((upstream, project.series_dir(upstream) / file_name, kept))
    if len(found) != 1:
        return None
    upstream, source, kept = found[0]
    allowed = require_state(project, "delete", [upstream], store=store)
    from patchforge.ledger import record_deletion, update_ledger

    with RepoLock(project.state_dir):
        require_state_still(project, "delete", [upstream], allowed, store=store)
        # Under the lock, as found: another command may have listed it again meanwhile.
        if not source.is_file() or file_name in project.patch_names(upstream) or \
                not kept.is_file() or kept.read_bytes() != read_no_link(source):
            return None
        with writing_project(project.root):
            record_deletion(project, _deleted_event(project, upstream, file_name, kept))
            update_ledger(project)
            atomic_delete(source)
    return Deleted("the series", kept, [], [])


def cut_delete_kept(project: Project, upstream: str, file_name: str) -> Path | None:
    """deleted/'s copy of `file_name` when that patch file, beside `upstream`'s series and not
    listed in it, is what a delete cut short left once the series no longer listed the fix
    (a kill, or a Ctrl-C, between the series' write and the file's removal): deleted/ keeps
    the same bytes. What `delete NAME` run again finishes (_finish_cut_delete); None for any
    other file."""
    source = project.series_dir(upstream) / file_name
    try:
        if source.is_symlink() or not source.is_file() or \
                file_name in project.patch_names(upstream):
            return None
        data = read_no_link(source)
        directory = project.series_dir(upstream) / "deleted"
        kept = directory / aside_name(directory, file_name, data)
    except PatchforgeError:
        return None  # a series that does not read, deleted/ a link: their refusals say so
    return kept if kept.is_file() else None


def _finish_cut_aside_delete(project: Project, name: str,
                             store: UpstreamStore | None) -> Deleted | None:
    """`delete NAME` (or `delete UPSTREAM/upstreamed/NAME`) run again after a kill cut short
    the delete of a fix out of skipped/ or upstreamed/ once the fix had left there, before the
    ledger was written (_delete_aside): NAME is nowhere but deleted/, the history's latest
    event of it is that delete's (naming the copy deleted/ keeps), and the ledger still lists
    it where it was. The ledger is written and the delete said as finished; None otherwise
    (the refusals say where the fix is, and a delete that finished has nothing left to do)."""
    from patchforge.ledger import (file_link_destination, latest_events, ledger_path,
                                   update_ledger)

    head, _, stem = name.rpartition("/")
    if head == KEPT_LANDINGS or head.endswith("/" + KEPT_LANDINGS):
        head = head[:-len(KEPT_LANDINGS)].removesuffix("/")
    wanted = head or None
    file_name = patch_file_name(stem)

    def read_ledger() -> bytes:
        try:
            return ledger_path(project).read_bytes()
        except FileNotFoundError:
            return b""  # no ledger: the delete's last write was the removal, and it is done

    ledger = read_ledger()

    def cut_short(upstream: str) -> tuple[Path, str] | None:
        series_dir = project.series_dir(upstream)
        if file_name in project.patch_names(upstream) or any(
                (series_dir / place / file_name).exists() for place in _LISTED):
            return None
        events = latest_events(project, upstream, file_name)
        if not events or events[0].get("event") != "deleted":
            return None
        kept = project.root / events[0].get("detail", "").removeprefix("kept as ")
        if kept.parent != series_dir / "deleted" or not kept.is_file():
            return None
        # Where the ledger, written before the fix left, still has it (its row's link).
        for place in _LISTED:
            row = f"]{file_link_destination(f'{upstream}/{place}/{file_name}')} | {place} |"
            if row.encode("utf-8", "surrogateescape") in ledger:
                return kept, f"{place}/"
        return None

    try:
        found = [(u, cut) for u in project.upstream_names() if wanted in (None, u)
                 and (cut := cut_short(u)) is not None]
    except PatchforgeError:
        return None  # a series or history that does not read: the refusals say so
    if len(found) != 1:
        return None
    upstream, (kept, source) = found[0]
    allowed = require_state(project, "delete", [upstream], store=store)
    with RepoLock(project.state_dir):
        require_state_still(project, "delete", [upstream], allowed, store=store)
        ledger = read_ledger()  # under the lock, as it is now
        if cut_short(upstream) is None:
            return None  # another command listed or set it aside again meanwhile
        with writing_project(project.root):
            update_ledger(project)
    return Deleted(source, kept, [], [])


def _refuse_listed_and_skipped(project: Project, name: str, upstream: str,
                               file_name: str) -> None:
    """`delete NAME` when NAME is both a patch of the series and a fix in skipped/ (made so by
    hand or by an older version; `new` and `rename` refuse it now): refused naming both,
    never a guess: `status` advises `delete NAME` for the skipped one, and taking the live
    fix out instead would drop it from the overlays."""
    from patchforge.state import skipped_fixes

    wanted = name.partition("/")[0] if "/" in name else None
    skipped = [f for f in skipped_fixes(project)
               if f.name == file_name and wanted in (None, f.upstream)]
    if not skipped:
        return
    stem = project.skipped_word(skipped[0].upstream, file_name)
    raise UsageError(
        f"{name!r} names two fixes: {upstream}/{file_name} in the series and "
        f"{skipped[0].path.relative_to(project.root).as_posix()}, which a rebase set aside; "
        "nothing was deleted",
        hint=f"give the one in the series another name first (`patchforge rename "
             f"{project.patch_word(upstream, file_name)} NEW`); "
             f"then `patchforge delete {stem}` drops the set-aside one, `patchforge delete NEW` "
             f"the one in the series (each kept under deleted/); `patchforge bring-back {stem}` "
             "puts the set-aside one back")


def _readable_patches(project: Project, upstream: str, names: list[str]):
    """The series' patches parsed, or None when one cannot be read (see _broken_by_removal)."""
    try:
        return [(n, project.read_patch(upstream, n)) for n in names]
    except PatchforgeError:
        return None


def _broken_by_removal(project: Project, store: UpstreamStore | None, upstream: str,
                       before, removed: str, fuzzy: list[str] | None = None) -> list[str]:
    """The patches that applied in the series `before` and no longer apply without `removed`;
    `fuzzy` gets those that applied without fuzz before and need it now (a later fix whose
    context is a line `removed` made: GNU patch still takes it, at a place its context no
    longer proves, and `status`, `lint` and `overlays` all say so). Asked once the removal is
    written: a series that cannot be read or applied (a broken patch, the delete's very
    reason maybe) is what `status` reports, never a reason to keep a patch the user removed."""
    after = [(n, patch) for n, patch in before or () if n != removed]
    if store is None or not after:
        return []
    try:
        now_fuzzy: list[str] = []
        failing = failing_patches(project, store, upstream, after, fuzzy=now_fuzzy)
        if failing or now_fuzzy:
            was_fuzzy: list[str] = []
            already = set(failing_patches(project, store, upstream, before, fuzzy=was_fuzzy))
            failing = [name for name in failing if name not in already]
            if fuzzy is not None:
                fuzzy.extend(name for name in now_fuzzy
                             if name not in already and name not in was_fuzzy)
    except PatchforgeError:
        return []
    return failing


def _removals_left_by(project: Project, store: UpstreamStore | None, upstream: str,
                      before, removed: str) -> list[tuple[str, str, str | None]]:
    """The upstream files the series `before` without `removed` takes away and `before` did
    not (overlay.new_series_removals), where the project writes overlays. Like
    _broken_by_removal, asked once the removal is written, and a series that cannot be read
    is `status`'s to report."""
    if store is None or not before:
        return []
    from patchforge.overlay import new_series_removals

    try:
        return new_series_removals(project, store, project.lock.pin(upstream).commit, before,
                                   [(n, patch) for n, patch in before if n != removed])
    except PatchforgeError:
        return []


def _deleted_event(project: Project, upstream: str, name: str, kept: Path) -> dict:
    return {"event": "deleted", "upstream": upstream, "patch": name, "destination": "deleted",
            "detail": f"kept as {kept.relative_to(project.root).as_posix()}"}


def _still_aside(upstream: str, file_name: str, path: Path) -> bytes:
    """Under the lock: a fix set aside (in skipped/ or upstreamed/, at `path`) found before
    it was taken, as it is now. A `delete` or `bring-back` beside this command may have taken
    it: said so, instead of the OS error (or, for a bring-back, listing again a fix that was
    just deleted)."""
    try:
        return read_no_link(path)
    except FileNotFoundError:
        where = path.parent.name
        raise UsageError(f"{upstream}/{file_name} left {where}/ while this command waited "
                         "(another patchforge command: a delete or bring-back)",
                         hint=f"`patchforge status` lists the {_LISTED[where]}; the deleted "
                              f"ones are under series/{upstream}/deleted/") from None


# What `status` lists of each directory a fix is set aside in, as _still_aside's hint says it.
_LISTED = {"skipped": "skipped fixes", "upstreamed": "landings taken back"}


def _delete_aside(project: Project, upstream: str, file_name: str, source: Path,
                  allowed: dict, store: UpstreamStore | None) -> Path:
    """A fix set aside (in skipped/ or upstreamed/, at `source`) dropped for good: kept under
    deleted/, copied first, then its history event recorded, then removed, so a kill in
    between loses nothing and the history knows where the fix is once it left; the same
    delete run again finishes one a kill cut short (the copy of those bytes is taken as its
    own, the event recorded once)."""
    directory = project.series_dir(upstream) / "deleted"
    with RepoLock(project.state_dir):
        require_state_still(project, "delete", [upstream], allowed, store=store)
        data = _still_aside(upstream, file_name, source)
        kept = directory / aside_name(directory, file_name, data)
        from patchforge.ledger import record_deletion, update_ledger

        with writing_project(project.root):
            atomic_write(kept, data)
            record_deletion(project, _deleted_event(project, upstream, file_name, kept))
            atomic_delete(source)
            update_ledger(project)
    return kept


def _delete_kept_landing(project: Project, upstream: str, file_name: str,
                         store: UpstreamStore | None) -> Deleted:
    """A fix kept under upstreamed/ dropped for good (kept under deleted/): the way to say
    that upstream's taking its change out was right (`status` says a landing taken back
    needs attention until the fix is brought back or deleted)."""
    allowed = require_state(project, "delete", [upstream], store=store)
    source = project.series_dir(upstream) / "upstreamed" / file_name
    return Deleted("upstreamed/", _delete_aside(project, upstream, file_name, source, allowed,
                                                store), [], [])


# What a rename is writing (upstream, OLD, NEW, the sha256 of NEW's bytes), kept under the
# state directory from before NEW's file is written until the rename is whole: a kill before
# the series names NEW leaves NEW's file unlisted, and a `refresh` of OLD meanwhile (an edit
# may be open) makes it differ from OLD, so that by its bytes alone it was "already there".
RENAME_JOURNAL = "rename.json"


def rename_patch(project: Project, old: str, new: str) -> tuple[str, str]:
    """Write NEW, list it in OLD's place, remove OLD. A write that fails before the series
    names NEW takes NEW away again (the project is as it was); a kill leaves NEW unlisted
    beside OLD, or OLD unlisted beside NEW, both the same bytes, and running the same rename
    again finishes it. The next rename takes away the unlisted NEW a kill left, which the
    journal (RENAME_JOURNAL) says is its copy, even after OLD was refreshed since."""
    new_upstream, new = in_series_of(project, new, None, "NEW")
    new_file = patch_file_name(checked_new_patch_name(new))
    try:
        upstream, old_file = project.find_patch(old)
    except UsageError:
        finished = _finish_cut_rename(project, old, new_file, new_upstream)
        if finished is None:
            raise
        return finished
    if new_upstream not in (None, upstream):
        raise UsageError(f"NEW {new_upstream}/{new} names the {new_upstream} series, but "
                         f"{old_file} is in the {upstream} series: a patch stays in its "
                         "upstream's series")
    allowed = require_state(project, "rename", [upstream])
    new_path = project.patch_path(upstream, new_file)
    with RepoLock(project.state_dir):
        require_state_still(project, "rename", [upstream], allowed)
        _settle_cut_rename(project)
        _refuse_gone(project, upstream, old_file)
        # Read under the lock: a refresh (an edit may be open) may have written it meanwhile.
        data = project.read_patch_bytes(upstream, old_file)
        # NEW may be there only as the unlisted copy an earlier run of this rename wrote.
        if new_file == old_file or new_file in project.patch_names(upstream):
            raise UsageError(f"{new_file} already exists")
        if new_path.exists() and _file_bytes(new_path) != data:
            where = f"series/{upstream}/"
            raise UsageError(
                f"{new_file} already exists in {where}, though the {upstream} series does not "
                "list it", hint=f"it may be a copy a `patchforge rename` cut short left, from "
                f"before {old_file} was changed (`diff {shlex.quote(where + old_file)} "
                f"{shlex.quote(where + new_file)}`): then remove it (`rm "
                f"{shlex.quote(where + new_file)}`) and rename again; else choose another name")
        refuse_name_of_another_series(project, upstream, new_file)
        refuse_skipped_name(project, new_file)
        refuse_case_twin(project, upstream, new_file, same=old_file)
        _history_reads(project)
        with writing_project(project.root):  # never NEW or OLD unlisted beside the other
            import hashlib  # here: only the rename journal is named by it

            series_path = project.series_path(upstream)
            listed = series_path.read_bytes()
            journal = project.state_dir / RENAME_JOURNAL
            atomic_write(journal, (json.dumps({
                "upstream": upstream, "old": old_file, "new": new_file,
                "sha256": hashlib.sha256(data).hexdigest()}) + "\n").encode())
            atomic_write(new_path, data)
            try:
                atomic_write(series_path,
                             project.read_series(upstream).renamed(old_file, new_file).to_bytes())
            except BaseException:
                # The series still lists OLD, which is whole: NEW goes. Unless the series in
                # place is the new one (a Ctrl-C during its rename takes effect after it).
                if _file_bytes(series_path) == listed:
                    new_path.unlink(missing_ok=True)
                raise
            _record_or_undo(project, upstream, old_file, new_file, listed)
            _end_rename(project, upstream, old_file, new_file)
            atomic_delete(journal)
    return upstream, new_file


def _settle_cut_rename(project: Project) -> None:
    """Under the lock, before a rename writes: the rename the journal (RENAME_JOURNAL) says a
    kill cut short. Before its series named NEW, it left NEW's file unlisted beside OLD, the
    journal's bytes (OLD's then; a refresh of OLD since may have changed OLD): that copy goes,
    the rename undone. After, the series names NEW, and the same rename run again finishes it
    (_finish_cut_rename): nothing of it is undone. Either way the journal goes. A NEW file
    with other bytes than the journal's, or listed anywhere, is never touched."""
    path = project.state_dir / RENAME_JOURNAL
    if not path.exists():
        return
    left = cut_rename_copy(project)
    with writing_project(project.root):
        if left is not None:
            atomic_delete(project.patch_path(left[0], left[2]))
        atomic_delete(path)


def _rename_journal(project: Project) -> tuple[dict, list[str]] | None:
    """The rename journal's record (RENAME_JOURNAL) and the names its upstream's series lists,
    when the journal is one a rename writes: a file (read without following a link or blocking
    on a FIFO), a JSON object of strings naming a configured upstream and two patch files of
    its series directory, OLD and NEW, that differ. None otherwise (no journal, a journal that
    does not read, or one a rename could not have written): nothing of it is acted on or said.
    One check for both readers (cut_rename_copy, cut_rename_old), so that a journal one of
    them refuses the other refuses too."""
    from patchforge.fsutil import parse_json

    try:
        record = parse_json(read_no_link(project.state_dir / RENAME_JOURNAL))
    except (OSError, ValueError, InputError):
        return None
    fields = ("upstream", "old", "new", "sha256")
    if not (isinstance(record, dict) and all(isinstance(record.get(k), str) for k in fields)
            and record["upstream"] in project.upstream_names()
            and all(re.fullmatch(r"[^/\x00]+\.patch", record[k]) for k in ("old", "new"))
            and record["new"] != record["old"]):
        return None
    try:
        names = project.patch_names(record["upstream"])
    except InputError:
        return None
    return record, names


def cut_rename_copy(project: Project) -> tuple[str, str, str] | None:
    """(upstream, OLD, NEW) when the rename journal (RENAME_JOURNAL) says NEW's file, beside
    a series that lists OLD and not NEW, is the copy a rename of OLD to NEW cut short left:
    its bytes are those the rename wrote. None otherwise (no journal, or it does not read)."""
    import hashlib

    journal = _rename_journal(project)
    if journal is None:
        return None
    record, names = journal
    upstream, old_file, new_file = record["upstream"], record["old"], record["new"]
    new_path = project.patch_path(upstream, new_file)
    data = _file_bytes(new_path) if new_path.is_file() and not new_path.is_symlink() else None
    if data is None or new_file in names or old_file not in names or \
            hashlib.sha256(data).hexdigest() != record["sha256"]:
        return None
    return upstream, old_file, new_file


def cut_short_words(project: Project, upstream: str, file_name: str) -> str | None:
    """What to say of `file_name`, a patch file `upstream`'s series does not list, when it is
    the copy a rename cut short left (cut_rename_copy), the old name it left (cut_rename_old)
    or the file a delete cut short left (cut_delete_kept), or the file a rebase's write-out
    cut short takes away (write_out_removes): never "list it", which would apply the fix
    twice, put back a fix the user deleted or make `rebase --continue` refuse its series, and
    never "move it to deleted/", which keeps it there twice. None for any other file."""
    left = cut_rename_copy(project)
    if left is not None and left[0] == upstream and left[2] == file_name:
        old, new = (name.removesuffix(".patch") for name in left[1:])
        return (f"the copy of {left[1]} a `patchforge rename {old} {new}` cut short left (the "
                f"fix is {left[1]}, in the series): `patchforge rename {old} {new}` takes the "
                f"copy away and renames the fix as it is now")
    left = cut_rename_old(project)
    if left is not None and left[0] == upstream and left[1] == file_name:
        old, new = (name.removesuffix(".patch") for name in left[1:])
        return (f"the old name of {left[2]}, which a `patchforge rename {old} {new}` cut short "
                f"after the series named {left[2]} left (the fix is {left[2]}, in the series; "
                f"listed too, it would be applied twice): `patchforge rename {old} {new}` "
                f"finishes the rename")
    from patchforge.state import write_out_removes

    removed = write_out_removes(project)
    rel = project.patch_rel(upstream, file_name) if removed else None
    if rel in removed:
        # Listed again, `rebase --continue` refuses the series it no longer wrote; moved to
        # deleted/, a landed fix is kept twice (deleted/ and upstreamed/).
        went = f" (the fix goes to {removed[rel]})" if removed[rel] else ""
        return (f"the file a rebase cut short while writing out its result takes out of the "
                f"series{went}: `patchforge rebase --continue` finishes it, `patchforge "
                f"rebase --abort` undoes it")
    aside = cut_bring_back_source(project, upstream, file_name)
    if aside is not None:
        word = project.skipped_word(upstream, aside)
        return (f"the fix a `patchforge bring-back {word}` cut short wrote before the series "
                f"listed it (the fix is still in series/{upstream}/skipped/{aside}): "
                f"`patchforge bring-back {word}` finishes it")
    kept = cut_delete_kept(project, upstream, file_name)
    if kept is not None:
        stem = file_name.removesuffix(".patch")
        return (f"the file a `patchforge delete {stem}` cut short left once the series no longer "
                f"listed it (the fix is kept as {kept.relative_to(project.root).as_posix()}): "
                f"`patchforge delete {upstream}/{stem}` finishes the delete")
    return None


def cut_bring_back_source(project: Project, upstream: str, file_name: str) -> str | None:
    """The name under series/<upstream>/skipped/ of the fix whose `bring-back` a kill cut short
    after it wrote `file_name` (a patch file the series does not list) and before the series
    listed it, or None. bring-back writes the fix moved onto the pin under its own name (or
    that name numbered, NAME.2.patch, where the series has one) while skipped/ still holds it:
    the same header but for `Base` (the pin's commit), and no line added or taken out that the
    fix in skipped/ does not add or take out (a part that landed meanwhile is left out of it,
    a function that moved into another file is changed there). Run again, the same
    `bring-back` finishes that run (_cut_short_here); listed by hand, it is put back twice or
    found doubled."""
    from collections import Counter

    pinned = project.lock.upstreams.get(upstream)
    if pinned is None:
        return None
    pin = pinned.commit
    stem = file_name.removesuffix(".patch")
    head, _, tail = stem.rpartition(".")
    directory = project.series_dir(upstream)
    written = directory / file_name
    for source in dict.fromkeys([file_name] + ([f"{head}.patch"] if head and tail.isdigit()
                                               else [])):
        aside = directory / "skipped" / source
        if not aside.is_file() or aside.is_symlink() or not written.is_file() or \
                written.is_symlink():
            continue
        try:
            new, old = (parse_patch_file(read_no_link(path), str(path))
                        for path in (written, aside))
            # By its lines alone: where the fix's function moved into another file, the
            # moved fix's hunks name that file.
            lines = [Counter(line.rstrip(b"\r\n") for fp in patch.file_patches
                             for hunk in getattr(fp, "hunks", ()) for line in hunk.lines
                             if line[:1] in (b"+", b"-")) for patch in (new, old)]
        except (OSError, InputError):
            continue
        fields = [[(f.name.lower(), f.value) for f in patch.fields if f.name.lower() != "base"]
                  for patch in (new, old)]
        # On the pin, as bring-back writes it: a copy of skipped/'s file made by hand on an
        # older base is no run of it (bring-back, run again, writes the fix beside it under a
        # numbered name).
        if fields[0] == fields[1] and new.description == old.description and lines[0] and \
                not lines[0] - lines[1] and new.get("Base") == pin:
            return source
    return None


def refuse_unlisted_fixes(project: Project, upstreams: list[str] | None = None) -> None:
    """InputError naming a patch file in series/<upstream>/ (of `upstreams`, or of every
    configured upstream) that its series does not list: a series edited by hand that lost its
    line, or `quilt delete` run on it (which takes the line and leaves the file). `overlays`,
    `export` and `verify` made a release without that fix, exit 0, where `status` and `lint`
    named it. quilt ignores such a file in patches/; a release made from the series must not,
    so the commands that make something to ship ask this before writing anything. A lost
    series file is refused first, as such (Project.refuse_lost_series); a file a rename or a
    delete cut short left is named with the command that finishes it (cut_short_words), as is
    one a rebase's write-out cut short takes away, never "list it", which would apply the fix
    twice."""
    wanted = project.upstream_names() if upstreams is None else upstreams
    for upstream in wanted:
        project.refuse_lost_series(upstream)
    said = _unlisted_said(project, wanted)
    if said is None:
        return
    path, what, why, hint = said
    raise InputError(f"{what}: {why}, so nothing was written", path=str(path), hint=hint)


def unlisted_fixes_note(project: Project, upstreams: list[str]) -> str | None:
    """A `note:` naming a patch file in series/<upstream>/ (of `upstreams`) that its series
    does not list, with refuse_unlisted_fixes' way on, for a command that builds on the
    series as it is listed without making anything to ship (`edit`, `new`, `refresh`): its
    worktree held the series without that fix, exit 0, and nothing was said. None without
    one, or where the file is one a command cut short left (`status` names it with the
    command that finishes it)."""
    said = _unlisted_said(project, upstreams, forgotten_only=True)
    if said is None:
        return None
    path, what, _, hint = said
    return (f"note: {path}: {what}: the series is read without it here, and nothing made "
            f"from the series carries the fix until it is listed; {hint}")


def _unlisted_said(project: Project, wanted: list[str], *,
                   forgotten_only: bool = False) -> tuple[Path, str, str, str] | None:
    """(path, what, why, hint) of the first patch file of `wanted` upstreams' series
    directories that their series does not list (refuse_unlisted_fixes), None without one.
    `forgotten_only`: not a file a command cut short left (a rename's copy, a delete's or a
    rebase's write-out's), whose fix the series holds or is letting go."""
    from patchforge.state import unlisted_fixes, write_out_removes

    # A series directory no configured upstream names is refused by `overlays` on its own.
    found = [(u, name, path) for u, name, path in unlisted_fixes(project)
             if u in wanted and u in project.config.upstreams]
    if forgotten_only and found:
        removes = write_out_removes(project)
        found = [(u, name, path) for u, name, path in found
                 if cut_short_words(project, u, name) is None and
                 project.patch_rel(u, name) not in removes]
    if not found:
        return None
    upstream, name, path = found[0]
    left = cut_short_words(project, upstream, name)
    if left is None and ("/" in name or not name.endswith(".patch")):
        hint = (f"a series line names only NAME.patch in series/{upstream}/: rename it so and "
                f"list it in series/{upstream}/series, or move it to series/{upstream}/deleted/ "
                "(or remove it) to leave the fix out on purpose")
    else:
        hint = left or (f"list it again in series/{upstream}/series (a line `{name}`, where it "
                        f"applies in the order), or move it to series/{upstream}/deleted/ (or "
                        "remove it) to leave the fix out on purpose")
    more = f" (and {counted(len(found) - 1, 'other patch file')} no series lists)" \
        if len(found) > 1 else ""
    why = "a rebase cut short while writing out its result takes it out of the series" \
        if project.patch_rel(upstream, name) in write_out_removes(project) else \
        "nothing made from the series would carry this fix"
    return path, f"not listed in series/{upstream}/series{more}", why, hint


def cut_rename_old(project: Project) -> tuple[str, str, str] | None:
    """(upstream, OLD, NEW) when the rename journal (RENAME_JOURNAL) names a rename of OLD to
    NEW that a kill cut short after the series named NEW: OLD's file is still there, unlisted,
    with NEW's bytes (what `rename OLD NEW` run again finishes: _finish_cut_rename). None
    otherwise."""
    journal = _rename_journal(project)
    if journal is None:
        return None
    record, names = journal
    upstream, old_file, new_file = record["upstream"], record["old"], record["new"]
    old_path, new_path = (project.patch_path(upstream, name) for name in (old_file, new_file))
    if old_file in names or new_file not in names or not old_path.is_file() or \
            old_path.is_symlink() or _file_bytes(old_path) != _file_bytes(new_path):
        return None
    return upstream, old_file, new_file


def _refuse_gone(project: Project, upstream: str, file_name: str) -> None:
    """Under the lock: the patch found before it was taken must still be listed (a `delete` or
    `rename` beside this command may have taken it); otherwise the read below said it was
    "listed in the series but the file is missing", or the OS error alone."""
    if file_name not in project.patch_names(upstream):
        raise UsageError(f"{file_name} left the {upstream} series while this command waited "
                         "(another patchforge command)", hint="`patchforge list` shows the series")


def _file_bytes(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:
        return None


def _finish_cut_rename(project: Project, old: str, new_file: str,
                       new_upstream: str | None) -> tuple[str, str] | None:
    """A rename a kill cut short after the series named NEW: OLD's file is still there, the
    same bytes as NEW's. Its removal (and the open edit's state) finishes it. Or OLD's file is
    gone with an open edit still on OLD (an earlier patchforge removed the file first): the
    edit goes to NEW."""
    wanted, _, name = old.rpartition("/")
    old_file = patch_file_name(name)
    for upstream in project.upstream_names():
        if wanted not in ("", upstream) or new_upstream not in (None, upstream) or \
                old_file == new_file or \
                new_file not in project.patch_names(upstream):
            continue
        old_path = project.patch_path(upstream, old_file)
        stranded = not old_path.exists() and old_file not in project.patch_names(upstream) \
            and _patch_of_open_edit(project, upstream) == old_file
        if stranded or old_path.is_file() and _file_bytes(old_path) == \
                _file_bytes(project.patch_path(upstream, new_file)):
            require_state(project, "rename", [upstream])
            with RepoLock(project.state_dir):
                _history_reads(project)
                with writing_project(project.root):
                    _end_rename(project, upstream, old_file, new_file)
                    atomic_delete(project.state_dir / RENAME_JOURNAL)
            return upstream, new_file
    return None


def _patch_of_open_edit(project: Project, upstream: str) -> str | None:
    """The patch the open edit of `upstream` is of (None: none, or a state that cannot be
    read, which the commands that act on the edit say)."""
    try:
        state = editing(project, upstream)
    except InputError:
        return None
    return state["patch"] if state else None


def _history_reads(project: Project) -> None:
    """Before a rename writes anything: the history it appends to must read (a malformed line
    is an InputError naming it). require_state asks it where the stack keeps a ledger; a
    history kept without one is appended to as well (ledger.record_rename)."""
    from patchforge.ledger import history_path, read_history

    if history_path(project).exists():
        read_history(project)


def _record_or_undo(project: Project, upstream: str, old_file: str, new_file: str,
                    listed: bytes) -> None:
    """The rename recorded in the history once the series names NEW (ledger.record_rename). A
    write of the history that fails (a full disk) takes the rename back, the series as it was
    (`listed`) and NEW's file removed, as a failed write of the series does; unless the
    history holds the event all the same (the failure came after its file was in place): then
    the rename stands, NEW listed beside OLD's file, and running it again finishes it."""
    from patchforge.ledger import record_rename, rename_recorded

    try:
        record_rename(project, upstream, old_file, new_file)
    except BaseException:
        try:
            recorded = rename_recorded(project, upstream, old_file, new_file)
        except Exception:  # noqa: BLE001 - unreadable now: the event may be there
            recorded = True
        if not recorded:
            atomic_write(project.series_path(upstream), listed)
            project.patch_path(upstream, new_file).unlink(missing_ok=True)
        raise


def _end_rename(project: Project, upstream: str, old_file: str, new_file: str) -> None:
    """NEW listed in OLD's place: the rename recorded in the history (already, by a whole run:
    not twice) and the ledger regenerated, then OLD's file removed and an edit of OLD made
    NEW's. Recorded before OLD goes: a kill after the removal would leave a finished rename the
    history never hears of (the fix's past left under OLD, as another fix's), while a kill
    before it leaves OLD's file beside NEW, and the same rename run again finishes it."""
    from patchforge.ledger import record_rename, update_ledger

    old_path, new_path = project.patch_path(upstream, old_file), project.patch_path(upstream,
                                                                                    new_file)
    record_rename(project, upstream, old_file, new_file)
    update_ledger(project)
    # The edit and the drafts go to NEW while OLD's file is still there: cut short (Ctrl-C, a
    # kill) at any point, OLD's file is beside NEW (the same rename run again finishes it),
    # never gone with the edit still on it, which nothing could then refresh.
    _carry_pr_drafts(project, upstream, old_file, new_file)
    _carry_edit(project, upstream, old_file, new_file)
    try:
        one_file = os.path.samefile(old_path, new_path)
    except OSError:
        one_file = False
    if one_file:
        # A rename in case only, on a case-insensitive file system: NEW is OLD's file, and
        # deleting OLD deleted the fix. The entry takes the new spelling instead.
        os.rename(old_path, new_path)
        fsync_dir(old_path.parent)
    else:
        atomic_delete(old_path)


def _carry_edit(project: Project, upstream: str, old_file: str, new_file: str) -> None:
    """An open edit of OLD made NEW's."""
    state = editing(project, upstream)
    if state and state["patch"] == old_file:
        state["patch"] = new_file
        atomic_write(state_file(project, upstream),
                     (json.dumps(state, indent=2) + "\n").encode())


def _carry_pr_drafts(project: Project, upstream: str, old_file: str, new_file: str) -> None:
    """`pr`'s directory of the fix (PR.md as the user filled it in, pr.json with the pull
    request it opened) goes with it to NEW: left under OLD, a later fix named OLD took it for
    its own, and NEW's draft started over. A directory NEW already has is left as it is."""
    old_dir, new_dir = project.pr_dir(upstream, old_file), project.pr_dir(upstream, new_file)
    if old_dir == new_dir or not old_dir.is_dir() or new_dir.exists():
        return
    os.rename(old_dir, new_dir)
    fsync_dir(new_dir.parent)


def _listed_after(project: Project, upstream: str, series: SeriesFile, after: str) -> str:
    """The file name of the patch `--after` names, which `series` (the `upstream` one) lists;
    refused (UsageError) otherwise."""
    after = patch_file_name(in_series_of(project, after, upstream, "--after")[1])
    if after not in series.names:
        raise UsageError(f"no patch named {after} in the {upstream} series"
                         + _in_another_series(project, upstream, after))
    return after


def _in_another_series(project: Project, upstream: str, file_name: str) -> str:
    """` (it is in the aiter series: ...)` when another upstream's series holds `file_name`:
    an order holds within one series, and --after named a patch of another one."""
    others = [u for u in project.upstream_names()
              if u != upstream and file_name in project.patch_names(u)]
    if not others:
        return ""
    return (f" (it is in the {others[0]} series: each upstream's series has its own order, "
            f"so --after names a patch of the {upstream} series)")


def move_patch(project: Project, store: UpstreamStore, name: str, *, after: str | None = None,
               first: bool = False, ambiguous: dict | None = None,
               fuzzy: list[str] | None = None,
               still_failing: list[str] | None = None) -> list[str] | None:
    """Move NAME after X (or first). Returns patches that no longer apply after the move (the
    move's doing: they applied in the order as it was; None when NAME is there already: nothing
    is written); `still_failing` gets those that do not
    apply in the new order and did not in the old either (the move changed nothing of theirs,
    but leaves them failing); `ambiguous` gets the patches that apply in the new order at a
    place nearness to their header's line chose among several, in a file they were not made
    on ({name: [RepeatedPlace]}: a patch moved below or above one that moves lines, whose
    change may go into a twin); `fuzzy` the ones that apply in the new order only with fuzz
    (moved above the patch whose lines are its context) and without it in the order as it
    was."""
    upstream, file_name = project.find_patch(name)
    allowed = require_state(project, "move", [upstream], store=store)
    series = project.read_series(upstream)
    if after is not None:
        after = _listed_after(project, upstream, series, after)
        if after == file_name:
            raise UsageError("cannot move a patch after itself")
    elif not first:
        raise UsageError("say where: --after X or --first")
    moved = series.removed(file_name).inserted(file_name, after=after, first=first)
    if moved.names == series.names:
        return None  # already there: nothing is written, and nothing changes
    # Which patches the new order breaks, asked before anything is written: a patch file that
    # cannot be read fails the move with the series as it was.
    now_fuzzy: list[str] = []
    failing = _not_applying(project, store, upstream, moved.names, ambiguous, now_fuzzy) \
        if store is not None else []
    if failing or (now_fuzzy and fuzzy is not None):
        # Named as the move's doing only where the order as it is takes it (without fuzz): a
        # patch that did not apply before the move was named as one the move broke.
        was_fuzzy: list[str] = []
        already = set(_not_applying(project, store, upstream, series.names, fuzzy=was_fuzzy))
        if fuzzy is not None:
            fuzzy.extend(n for n in now_fuzzy if n not in already and n not in was_fuzzy)
        if still_failing is not None:
            still_failing.extend(n for n in failing if n in already)
        failing = [n for n in failing if n not in already]
    with RepoLock(project.state_dir):
        require_state_still(project, "move", [upstream], allowed, store=store)
        # The order was judged on the series as read above: one changed since (a `new` beside
        # this command) would lose its change if the old one were written.
        if project.read_series(upstream).names != series.names:
            raise UsageError(f"the {upstream} series changed while the move was being checked "
                             "(another patchforge command)", hint="run the move again")
        with writing_project(project.root):  # the series and the edit it ends, together
            atomic_write(project.series_path(upstream), moved.to_bytes())
            close_edit_if_moved(project, upstream, series.names, moved.names)
            series_changed(project)
    return failing


def _not_applying(project: Project, store: UpstreamStore, upstream: str,
                  names: list[str], ambiguous: dict | None = None,
                  fuzzy: list[str] | None = None) -> list[str]:
    """The patches of the series `names` (in that order) that do not apply on the pin: a hunk
    fails, a file it changes is not there, or (in some profile's series) it creates a path
    already filled (stack.creation_collisions)."""
    return failing_patches(project, store, upstream,
                           [(n, project.read_patch(upstream, n)) for n in names], ambiguous,
                           fuzzy=fuzzy)


def failing_patches(project: Project, store: UpstreamStore, upstream: str, patches,
                    ambiguous: dict | None = None, *,
                    fuzzy: list[str] | None = None) -> list[str]:
    """The names of `patches` ([(name, PatchFile)], a series in that order) that do not apply
    on the pin, each on its base, or create a path already filled. `ambiguous` (when given)
    gets those that apply at an ambiguous place (apply_series' `placement`), `fuzzy` those
    that apply only with fuzz (which `status` says needs attention)."""
    from patchforge.stack import profile_collisions

    names = [name for name, _ in patches]
    pin = project.lock.pin(upstream)
    configured = list(project.config.profiles)
    outcomes = outcomes_on_bases(lambda paths: store.read_blobs(pin.commit, paths), patches,
                                 [profile_set(patch, configured) for _, patch in patches],
                                 strict=False, placement=ambiguous is not None)
    failing = {o.name for o in outcomes if not o.ok}
    if fuzzy is not None:
        fuzzy.extend(o.name for o in outcomes if o.ok and o.worst == "fuzz")
    if ambiguous is not None:
        ambiguous.update({o.name: o.ambiguous for o in outcomes if o.ok and o.ambiguous})
    failing |= {name for name, *_ in profile_collisions(project, store, pin.commit, patches)}
    return [name for name in names if name in failing]


# --- skipped fixes ----------------------------------------------------------------------------

def find_skipped(project: Project, name: str):
    """The skipped fix NAME (`fix`, `fix.patch` or `upstream/fix`): a state.SkippedFix."""
    from patchforge.state import skipped_fixes

    wanted_upstream = None
    if "/" in name:
        wanted_upstream, name = name.split("/", 1)
    file_name = patch_file_name(name)
    matches = [f for f in skipped_fixes(project)
               if f.name == file_name and wanted_upstream in (None, f.upstream)]
    if not matches:
        elsewhere = _where_else(project, wanted_upstream, file_name)
        raise UsageError(f"no skipped fix named {said_name(name)}"
                         + (f": {elsewhere}" if elsewhere else ""),
                         hint=_deleted_way_back(project, wanted_upstream, file_name) or
                         "bring-back takes the fixes a rebase set aside in skipped/; "
                         "`patchforge status` lists them")
    if len(matches) > 1:
        raise UsageError(f"{said_name(name)} is skipped in several series "
                         f"({', '.join(f.upstream for f in matches)}); say UPSTREAM/{name}")
    return matches[0]


def _deleted_way_back(project: Project, upstream: str | None, file_name: str) -> str:
    """The way back for a fix `delete` took out (kept under deleted/, in no series): said,
    since bring-back takes skipped fixes only and its refusal was a dead end. Through
    skipped/, as a kept landing goes: bring-back then moves it onto the current base by the
    rebase's judge and records its return. Empty where the fix is elsewhere too."""
    if any(upstream in (None, u) and file_name in project.patch_names(u)
           for u in project.upstream_names()):
        return ""
    deleted = [(u, kept) for u, place, kept in project.kept_aside(upstream, file_name)
               if place == "deleted"]
    if not deleted or len({u for u, _ in deleted}) > 1:
        return ""
    u = deleted[0][0]
    copy = deleted[-1][1] if len(deleted) == 1 else "COPY"
    move = (f"mv {shlex.quote(f'series/{u}/deleted/{copy}')} "
            f"{shlex.quote(f'series/{u}/skipped/{file_name}')}")
    return (f"a fix `patchforge delete` took out comes back through skipped/: `mkdir -p "
            f"series/{u}/skipped && {move}`"
            + (f" (COPY: the one of {', '.join(k for _, k in deleted)} to bring back)"
               if len(deleted) > 1 else "")
            + f", then `patchforge bring-back {u}/{file_name.removesuffix('.patch')}`")


def _where_else(project: Project, upstream: str | None, file_name: str) -> str:
    """Where a fix of that name is when it is not skipped: in a series, or kept aside (every
    kept copy, the numbered ones a later fix of the same name was kept as included)."""
    kept = project.kept_aside(upstream, file_name)
    for name in project.upstream_names():
        if upstream in (None, name) and file_name in project.patch_names(name):
            # A part of it may be kept aside too (a landed part, or its own version of a file
            # a resolution took upstream's for): named, since it is what a bring-back is after.
            parts = [f"series/{u}/{place}/{n}" for u, place, n in kept if u == name]
            return f"{name}/{file_name} is in the series" + \
                (f"; copies kept aside: {', '.join(parts)}" if parts else "")
    if len(kept) == 1:
        name, place, kept_name = kept[0]
        return f"{name}/{file_name} is kept in series/{name}/{place}/" + \
            (f" (as {kept_name})" if kept_name != file_name else "")
    if kept:
        return "copies are kept aside: " + ", ".join(f"series/{u}/{place}/{n}"
                                                     for u, place, n in kept)
    return ""


def _kept_upstreamed(project: Project, name: str) -> list[tuple[str, str]]:
    """(upstream, file name) of the fix NAME kept under upstreamed/ (itself, not a numbered
    copy) when no skipped fix has that name: bring-back takes it from there."""
    upstream = None
    if "/" in name:
        upstream, name = name.split("/", 1)
    file_name = patch_file_name(name)
    from patchforge.state import skipped_fixes

    skipped = [f for f in skipped_fixes(project)
               if f.name == file_name and upstream in (None, f.upstream)]
    found = [(u, kept) for u, place, kept in project.kept_aside(upstream, file_name)
             if place == "upstreamed" and kept == file_name]
    # With a skipped fix of that name, only a landing a bring-back's move into skipped/ was
    # cut off from (the copy there its very bytes without the landing): the move finishes.
    return found if not skipped else [
        (u, kept) for u, kept in found if any(
            f.upstream == u and _move_cut_off(project.series_dir(u) / "upstreamed" / kept,
                                              f.path) for f in skipped)]


def _move_cut_off(aside: Path, skipped: Path) -> bool:
    """Whether `skipped` holds exactly what moving the landing kept at `aside` into skipped/
    writes (_kept_to_skipped): a kill cut that move off before the landing left."""
    try:
        return read_no_link(skipped) == _without_landing(read_no_link(aside), aside)
    except (PatchforgeError, OSError):
        return False


def _kept_landing_named(project: Project, name: str) -> tuple[str, str] | None:
    """(upstream, file name) of the fix `UPSTREAM/upstreamed/NAME` (or `upstreamed/NAME`,
    kept so in one upstream) names; None for any other NAME. Refused when there is none."""
    head, sep, tail = name.rpartition("upstreamed/")
    if not sep or (head and not head.endswith("/")) or "/" in tail or not tail:
        return None
    upstream = head[:-1] or None
    if upstream is None and KEPT_LANDINGS in project.config.upstreams:
        raise AmbiguousNameError(
            f"{name!r} names upstream {KEPT_LANDINGS}'s patch {tail!r} and a fix kept under "
            f"{KEPT_LANDINGS}/ alike", hint=f"`patchforge delete {tail}` for the patch, "
            f"`patchforge delete UPSTREAM/{KEPT_LANDINGS}/{tail}` for a kept fix")
    file_name = patch_file_name(tail)
    found = [(u, kept) for u, place, kept in project.kept_aside(upstream, file_name)
             if place == "upstreamed" and kept == file_name]
    if len(found) != 1:
        raise UsageError(f"{name!r} names no one fix kept under upstreamed/" if not found else
                         f"{name!r} is kept under upstreamed/ in several series "
                         f"({', '.join(u for u, _ in found)}); say UPSTREAM/upstreamed/NAME",
                         hint=_moved_to_skipped(project, upstream, file_name) if not found
                         else None)
    return found[0]


def rebase_kept_base(project: Project, store: UpstreamStore, name: str, rev: str) -> dict:
    """`refresh UPSTREAM/upstreamed/NAME --base REV`: give a fix kept as landed the base REV,
    a commit its upstream serves, where its `Base` is one upstream no longer serves (a pull
    request's branch deleted after a squash). Judged without its base, such a fix whose files
    upstream worked on since is said `base-unserved` (exit 1) at every pin; `delete` was the
    one way to clear it, and the fix was then judged by nothing: a later revert of its
    landing went unsaid. Its change must apply at REV as it was made (every hunk, no fuzz:
    REV holds the files it was made on), REV must not hold the change already (a file it
    creates there; a hunk applied there at code upstream leaves as it was up to the landing:
    _applied_where_nothing_changed), and REV must come strictly before its recorded landing
    (the history from its base holds the landing, as the judge reads it: a fix that records
    no landing upstream serves is refused, nothing telling REV's order); only its `Base`
    line changes, the rest of the file byte for byte. REV is a SPEC of the upstream (a commit, tag
    or branch), or one followed by `^` (its first parent: `LANDING^`, the commit before the
    landing, which the `base-unserved` message names). Returns {upstream, name, from, to}."""
    from patchforge.apply.hunks import apply_file_patch
    from patchforge.pins import pin_for_spec
    from patchforge.reverts import kept_base

    found = _kept_landing_named(project, name)
    if found is None:
        raise UsageError(f"--base takes a fix kept under upstreamed/ "
                         f"(UPSTREAM/upstreamed/NAME), not {name!r}",
                         hint="a patch of the series moves onto another revision with "
                              "`patchforge rebase --to`, which writes each one's Base")
    upstream, file_name = found
    config = project.config.upstream(upstream)
    if config.kind != "git":
        raise UsageError(f"{upstream} is a {config.kind} upstream: a kept fix's base is a "
                         "commit of a git upstream's history")
    allowed = require_state(project, "refresh --base", [upstream], store=store)
    path = project.series_dir(upstream) / KEPT_LANDINGS / file_name
    rel = path.relative_to(project.root).as_posix()
    data = read_no_link(path)
    patch = parse_patch_file(data, rel)
    old = kept_base(data)
    parent = rev.endswith("^") and len(rev) > 1
    spec = rev[:-1] if parent else rev
    commit = pin_for_spec(project, store, config, spec).commit
    if parent:
        first = store.parents_of([commit]).get(commit)
        if first is None:
            raise UsageError(f"{spec} ({commit[:12]}) of {upstream} has no parent: {rev!r} "
                             "names no commit")
        commit = first
    said = rev if not parent and commit.startswith(rev.lower()) else f"{rev} ({commit[:12]})"
    landing = _RECORDED_LANDING.search(patch.get("Applied-Upstream") or "")
    # Without its landing, nothing tells REV before the landing from REV after it: a hunk
    # whose code is in the file twice applies at the landing at the other copy, and where
    # upstream worked on that copy since, no fact of the pin tells it either; judged from
    # the landing, a later revert of it went unsaid. The landing recorded, the order is asked.
    if landing is None or not store.has_object(landing[1].lower()):
        raise InputError(
            f"{rel} records no landing {upstream} serves (its Applied-Upstream names no "
            "commit: of it): REV cannot be told to come before the landing, and a base "
            "after it would leave a later revert of the landing unsaid; nothing was written",
            path=rel, line=_header_line(data, b"Applied-Upstream"),
            hint="add the commit that landed it to its Applied-Upstream "
                 "(`Applied-Upstream: LABEL, commit:ID`), then `--base ID^`")
    # Strictly before: the landing itself is its own ancestor, and a hunk whose context is in
    # the file twice applies there at the other copy, so the landing was taken, and a later
    # revert of it went unsaid (judged from the landing, the revert is the change undone).
    landed = landing[1].lower()
    if commit == landed or not store.is_ancestor(commit, landed):
        raise UsageError(f"{upstream} {said} does not come before the landing of {rel} "
                         f"({landing[1][:12]}, its Applied-Upstream): a base is a commit the "
                         "fix was made on, and the history from it holds the landing; "
                         "nothing was written",
                         hint=f"`--base {landing[1][:12]}^` names the commit before the landing")
    paths = sorted({p for fp in patch.file_patches for p in (fp.old_path, fp.new_path) if p})
    contents = store.read_blobs(commit, paths) if paths else {}
    created = next((fp for fp in patch.file_patches
                    if fp.new_path and fp.is_new and contents.get(fp.new_path) is not None),
                   None)
    if created is not None:
        raise InputError(
            f"{upstream} {said} holds its change already ({created.path}: the file it creates "
            "is there): a base is a commit the fix was made on, before its landing; nothing "
            "was written", path=rel,
            hint=f"name a commit of {upstream} before the landing")
    placed = []
    for fp in patch.file_patches:
        application = apply_file_patch(contents.get(fp.old_path) if fp.old_path else None, fp,
                                       max_fuzz=0)
        failed = [k for k, outcome in enumerate(application.hunks)
                  if outcome.status == "failed"]
        if application.error is not None or failed:
            where = f"hunk {failed[0] + 1}" if failed and application.error is None else \
                (application.error or "")
            raise InputError(
                f"its change does not apply at {upstream} {said} as it was made ({fp.path}: "
                f"{where}): {upstream} {said} does not hold the files the fix was made on, "
                "nothing was written", path=rel,
                line=fp.hunks[failed[0]].line_no if failed and application.error is None
                else None,
                hint="name a commit of " + upstream + " before the landing whose files the fix "
                     "applies to as it is (upstream may have moved or changed them before the "
                     "landing: a commit before that)")
        placed.append((fp, application))
    # Judged from REV, the landing must make the change where the fix applies at REV: applied
    # at code upstream left as it was up to the landing, it met another copy of that code
    # (REV holding the change at its own place already: the landing itself, or an earlier
    # landing of a fix landed, reverted and landed again), and a revert of the landing would
    # read as no change of the fix's.
    elsewhere = _applied_where_nothing_changed(store, placed, contents, landed)
    if elsewhere is not None:
        fp, k, at = elsewhere
        before = store.parents_of([landed]).get(landed) != commit
        raise InputError(
            f"{upstream} {said} holds its change already ({fp.path}: hunk {k + 1} applies "
            f"there only at line {at}, code its landing {landed[:12]} leaves as it was: "
            "another copy of the code it changes): a base is a commit the fix was made on, before its landing (judged from one that holds it, a later "
            "revert of the landing would go unsaid); nothing was written", path=rel,
            line=fp.hunks[k].line_no,
            hint=f"`--base {landed[:12]}^` names the commit before the landing"
            if before else f"name a commit of {upstream} before the landing whose files the "
            "fix applies to as it is")
    if old == commit:
        return {"upstream": upstream, "name": file_name, "from": old, "to": commit,
                "changed": False}
    written = patch.with_field("Base", commit).to_bytes()
    with RepoLock(project.state_dir), writing_project(project.root):
        require_state_still(project, "refresh --base", [upstream], allowed, store=store)
        if read_no_link(path) != data:
            raise UsageError(f"{rel} changed while `refresh --base` read it: nothing was "
                             "written", hint="run the command again")
        atomic_write(path, written)
    return {"upstream": upstream, "name": file_name, "from": old, "to": commit, "changed": True}


def _applied_where_nothing_changed(store: UpstreamStore, placed: list, contents: dict,
                                  since: str) -> tuple | None:
    """The first (file patch, hunk index, 1-based line) of a fix applied at a revision
    (`placed`: each file patch with its FileApplication there, no fuzz; `contents`: that
    revision's files by path) whose hunk was placed where upstream changes nothing from that
    revision up to `since` (its landing, or a pin after it): not a line of the code the hunk
    meets there (its context with it) is changed, and no line is added within or beside it.
    None where each hunk meets code upstream changed, or a file cannot be compared (no such
    path at `since`, a binary file)."""
    from patchforge.store.diff import changed_blocks

    modified = [(fp, application) for fp, application in placed
                if not fp.is_new and not fp.is_delete and fp.binary is None]
    if not modified:
        return None
    later = store.read_blobs(since, sorted({fp.new_path for fp, _ in modified}))
    compared: list[tuple] = [
        (fp, application, contents[fp.old_path], new) for fp, application in modified
        if (new := later.get(fp.new_path)) is not None]
    if not compared:
        return None
    blocks = changed_blocks([(old, new) for _, _, old, new in compared])
    for (fp, application, _, _), changed in zip(compared, blocks):
        if changed is None:
            continue
        for k, (hunk, outcome) in enumerate(zip(fp.hunks, application.hunks)):
            if outcome.at_line is None:
                continue
            start = outcome.at_line - 1
            end = start + len(hunk.old_lines())
            if not any(old_start < end and old_end > start or
                       old_start == old_end and start <= old_start <= end
                       for old_start, old_end, _, _ in changed):
                return fp, k, outcome.at_line
    return None


_RECORDED_LANDING = re.compile(r"\bcommit:([0-9a-fA-F]{40})\b")


def _header_line(data: bytes, field: bytes) -> int | None:
    """The 1-based line of a patch file's header field `field` (`Applied-Upstream`), for a
    message to name; None where the header has no such field."""
    for number, line in enumerate(data.split(b"\n"), 1):
        if line.startswith(b"diff --git ") or line.startswith(b"--- "):
            return None
        if line.split(b":", 1)[0] == field and b":" in line:
            return number
    return None


def _landing_moved_to_skipped(project: Project, name: str):
    """The skipped fix `bring-back UPSTREAM/upstreamed/NAME` run again takes: that run moved
    the landing from upstreamed/ into skipped/ first, and a kill (or a refusal after it) left
    it there, no landing of that name kept any more. Taken only where the history's latest
    event of the fix says it was kept under upstreamed/ (its drop as landed), or left it in
    the series that lists it still (a landed part kept, the fix staying): a skipped fix of
    that name is then this move's. Not a set-aside (a rebase's or `rebase --skip`'s), and not
    where the history has no event of it (cut, or never kept): the refusal names the `bring-
    back NAME` that takes the skipped fix instead. None for any other NAME."""
    from patchforge.ledger import DEPARTURE_EVENTS, latest_events
    from patchforge.state import skipped_fixes

    head, sep, tail = name.rpartition("upstreamed/")
    if not sep or (head and not head.endswith("/")) or "/" in tail or not tail:
        return None
    upstream = head[:-1] or None
    if upstream is None and KEPT_LANDINGS in project.config.upstreams:
        return None  # ambiguous: _kept_landing_named says so
    file_name = patch_file_name(tail)
    skipped = [f for f in skipped_fixes(project)
               if f.name == file_name and upstream in (None, f.upstream)]
    if len(skipped) != 1:
        return None
    # A landing of that name kept there is the one NAME names, unless it is the part of this
    # fix the killed run kept as landed (the hunks upstream has: _kept_landed_part,
    # _moved_upstream_split), written before the fix went back into the series: a part of
    # the skipped fix's own hunks, while the history still says the fix was kept as landed.
    if any(place == "upstreamed" and kept == file_name and not _part_kept_of(
               project.series_dir(u) / "upstreamed" / kept, skipped[0].path)
           for u, place, kept in project.kept_aside(upstream, file_name)):
        return None
    # Taken on what the history says last of the fix, never on its silence: a history cut
    # short or never kept (an old project) took a fix a rebase set aside for the landing, and
    # brought it back by a name that says it is none. Without an event of it the refusal
    # names `bring-back NAME`, which takes the skipped fix for what it is.
    latest = latest_events(project, skipped[0].upstream, file_name)[:1]
    if not latest or latest[0].get("event") == "skipped" or \
            latest[0].get("destination") == "skipped":
        return None
    if latest[0].get("destination") == KEPT_LANDINGS:
        return skipped[0]  # it landed, and was kept under upstreamed/ since
    # Its last event leaves it in the series (a landed part kept under upstreamed/, the fix
    # staying; or this bring-back's own return, recorded before the fix left skipped/): only
    # while the series lists it, which a fix set aside since (its event cut) it does not.
    try:
        listed = file_name in project.patch_names(skipped[0].upstream)
    except PatchforgeError:
        return None
    return skipped[0] if listed and latest[0].get("event") not in DEPARTURE_EVENTS else None


def _part_kept_of(kept: Path, skipped: Path) -> bool:
    """Whether the landing kept at `kept` holds some of the hunks of the fix at `skipped`,
    as they are there, and not all of them: the part of it a bring-back keeps as landed while
    it puts back the rest. (A landed part kept by a rebase, the rest set aside later, holds
    hunks the fix in skipped/ no longer has.)"""
    try:
        part = parse_patch_file(read_no_link(kept), str(kept))
        whole = parse_patch_file(read_no_link(skipped), str(skipped))
        hunks = {fp.path: [hunk.lines for hunk in fp.hunks] for fp in whole.file_patches}
        found = [(fp.path, hunk.lines) for fp in part.file_patches for hunk in fp.hunks]
    except (PatchforgeError, OSError):
        return False
    return bool(found) and len(found) < sum(map(len, hunks.values())) and \
        all(lines in hunks.get(path, ()) for path, lines in found)


def _moved_to_skipped(project: Project, upstream: str | None, file_name: str) -> str | None:
    """Where a landing NAME named may be now: a bring-back that refused it after moving it
    from upstreamed/ into skipped/ (a patch it could not read, a path it could not write)
    left it there, and bring-back takes it by its skipped name."""
    from patchforge.state import skipped_fixes

    skipped = [f for f in skipped_fixes(project)
               if f.name == file_name and upstream in (None, f.upstream)]
    if len(skipped) != 1:
        return None
    fix = skipped[0]
    return (f"series/{fix.upstream}/skipped/{file_name} has that name (a bring-back moves a "
            f"landing there first): `patchforge bring-back "
            f"{project.skipped_word(fix.upstream, file_name)}` takes it")


def _landing_taken_back(project: Project, store: UpstreamStore, upstream: str,
                        file_name: str, *, carried: list | None = None,
                        doing: str = "delete", kinds: list | None = None) -> bool:
    """Whether the fix kept as upstreamed/FILE_NAME is one whose change the pin's files no
    longer have (reverts.gone_upstream): the fixes `bring-back` and `delete` take from there.
    `carried`, where given, gets it when the series itself carries its change at the pin
    (reverts.carried_by_series: a leftover, nothing to bring back). One that cannot be judged
    there (its files, or the revision it landed in, not readable: offline, a cache without
    them) is refused for `doing` (`bring-back` or `delete`), naming why: it was said to be
    one the pin has ("nothing to bring back"), which nothing had checked. `kinds`, where
    given, gets what it is said as (LandingGone.kind: `reverted`, `base-unserved`...)."""
    from patchforge.reverts import carried_by_series, gone_upstream

    pin = project.lock.pin(upstream)
    unread: list[tuple[str, str]] = []
    gone = [g for g in gone_upstream(project, store, upstream, pin.commit, unread=unread)
            if g.name == file_name]
    why = next((why for name, why in unread if name == file_name), None)
    if why is not None:
        aside = "skipped" if doing == "bring-back" else "deleted"
        anyway = (f"to put it back anyway, move it into series/{upstream}/skipped/ and run "
                  f"`patchforge bring-back {upstream}/{file_name}`") if doing == "bring-back" \
            else f"to take it out anyway, move it into series/{upstream}/{aside}/"
        raise UsageError(f"{upstream}/upstreamed/{file_name}: NOT CHECKED whether {upstream} "
                         f"{pin.label} still holds its change: {' '.join(why.split())}; "
                         "nothing was moved",
                         hint=("without --offline the cache brings its files; " if
                               project.offline else "") + anyway)
    if gone and carried is not None:
        carried += carried_by_series(project, store, upstream, gone)
    if kinds is not None:
        kinds += [g.kind for g in gone]
    return bool(gone)


def _kept_to_skipped(project: Project, store: UpstreamStore, name: str,
                     kept: list[tuple[str, str]] | None = None):
    """A fix kept under upstreamed/ whose change the pin's files no longer have (upstream
    reverted it, or took it out otherwise: reverts.gone_upstream, judged at the pin) moved
    into skipped/, from where bring-back puts it back as it puts back any skipped fix. One
    upstream still has is refused: nothing is moved. `kept`: the fix, when NAME named it as
    `UPSTREAM/upstreamed/NAME` (_kept_landing_named)."""
    kept = kept if kept is not None else _kept_upstreamed(project, name)
    if len(kept) > 1:
        raise UsageError(f"{name!r} is kept under upstreamed/ in several series "
                         f"({', '.join(u for u, _ in kept)}); say UPSTREAM/{name}")
    upstream, file_name = kept[0]
    # Refused as bring-back is refused (a rebase stopped, an edit open) before anything moves.
    require_state(project, "bring-back", [upstream], store=store)
    pin = project.lock.pin(upstream)
    aside = project.series_dir(upstream) / "upstreamed" / file_name
    # One that does not parse is judged by nothing: said as what it is, never as "upstream
    # has its change".
    list(parse_patch_file(read_no_link(aside), str(aside)).file_patches)
    carried: list = []
    kinds: list = []
    taken_back = _landing_taken_back(project, store, upstream, file_name, carried=carried,
                                     doing="bring-back", kinds=kinds)
    if carried:
        raise UsageError(f"{upstream}/{file_name} is kept in series/{upstream}/upstreamed/ and "
                         f"the series carries its change at the pin ({pin.label}), so the "
                         "overlays have it: nothing to bring back (a leftover, such as a "
                         "rebase undone with git leaves)",
                         hint=f"`patchforge delete {upstream}/upstreamed/{file_name}` takes the "
                              "leftover out (kept under deleted/)")
    if kinds == ["base-unserved"]:
        from patchforge.reverts import held_at_its_place, kept_base

        if held_at_its_place(store, upstream, file_name,
                             aside.relative_to(project.root).as_posix(), read_no_link(aside),
                             pin.commit):
            # Judged without its base, it is not known to be upstream's; but the pin's files
            # hold it whole at its own paths, where a bring-back has nothing to make: moved
            # into skipped/, it stopped on a conflict, and `--continue` refused a worktree
            # with no change, the fix left in skipped/ (needs attention).
            base = kept_base(read_no_link(aside)) or ""
            raise UsageError(f"{upstream}/{file_name} is kept in series/{upstream}/upstreamed/ "
                             f"and the pin's files ({pin.label}) hold its change at its own "
                             f"place (judged without its base commit {base[:12]}, which "
                             f"{upstream} does not serve): nothing to bring back, nothing was "
                             "moved",
                             hint=f"`patchforge delete {upstream}/upstreamed/{file_name}` keeps "
                                  "it under deleted/ where upstream has it; to put it back "
                                  f"anyway, move it into series/{upstream}/skipped/ and run "
                                  f"`patchforge bring-back {upstream}/{file_name}`")
    if not taken_back:
        raise UsageError(f"{upstream}/{file_name} is kept in series/{upstream}/upstreamed/ and "
                         f"upstream has its change at the pin ({pin.label}), or changed that "
                         "code otherwise: nothing to bring back",
                         hint=f"to put it back anyway, move it into series/{upstream}/skipped/ "
                              f"and run `patchforge bring-back {upstream}/{file_name}`")
    skipped = project.series_dir(upstream) / "skipped" / file_name
    # A copy there holding exactly what this move writes is its own, left by a kill before
    # the landing left upstreamed/: the move is finished, not refused as another fix's name.
    if skipped.exists() and not (skipped.is_file() and not skipped.is_symlink() and
                                 read_no_link(skipped) ==
                                 _without_landing(read_no_link(aside), aside)):
        raise UsageError(f"series/{upstream}/skipped/{file_name} exists already: a skipped fix "
                         f"has the name of {upstream}/upstreamed/{file_name}",
                         hint=f"bring that one back (`patchforge bring-back "
                              f"{upstream}/{file_name}`) or delete it (`patchforge delete "
                              f"{upstream}/{file_name}`, kept under deleted/) first")
    with RepoLock(project.state_dir), writing_project(project.root):
        data = _without_landing(read_no_link(aside), aside)
        skipped.parent.mkdir(exist_ok=True)
        # Written there before it leaves upstreamed/: a kill between leaves two copies, never
        # none.
        atomic_write(skipped, data)
        atomic_delete(aside)
    return find_skipped(project, f"{upstream}/{file_name}")


def _without_landing(data: bytes, path: Path) -> bytes:
    """A kept fix's bytes without its `Applied-Upstream:` field: upstream no longer has the
    change, and the fix going back into the series would say it landed (the history keeps
    where it had). A file that does not parse is moved as it is (bring-back then says why)."""
    try:
        patch = parse_patch_file(data, str(path))
    except PatchforgeError:
        return data
    if patch.get("Applied-Upstream") is None:
        return data
    return patch.without_field("Applied-Upstream").to_bytes()


def _moved_upstream_split(project: Project, store: UpstreamStore, fix, patch,
                          pin) -> tuple[tuple[PatchFile, dict[str, list[int]], str | None]
                                        | None, dict[str, list[tuple[int, str, bool]]]]:
    """A fix bring-back takes from upstreamed/ that the pin has taken back in part beside
    hunks upstream only moved elsewhere in the file (reverts.moved_in_part): (the fix without
    those hunks, the moved hunks by path (numbers from 0), its landing commit as recorded).
    None where no hunk is so moved, or where the fix cannot be split by hunks (a file it
    creates, deletes, renames or copies; a binary or mode change: rebase.engine.landed_part).
    Second, the hunks it puts back though the file has their lines elsewhere (moved_in_part's
    third: the history does not show them moved)."""
    from patchforge.rebase.engine import landed_part
    from patchforge.reverts import moved_in_part

    rel = fix.path.relative_to(project.root).as_posix()
    try:
        moved, landing, doubtful = moved_in_part(project, store, fix.upstream, fix.name, rel,
                                                 patch.to_bytes(), pin.commit)
    except PatchforgeError:
        return None, {}
    if not moved:
        return None, doubtful
    rest = {fp.path: [k for k in range(len(fp.hunks)) if k not in moved.get(fp.path, ())]
            for fp in patch.file_patches}
    rest = {path: hunks for path, hunks in rest.items() if hunks}
    if not rest or landed_part(patch, None, hunks=moved) is None:
        return None, doubtful
    kept = landed_part(patch, None, hunks=rest)
    return (None if kept is None else (kept, moved, landing)), doubtful


def _moved_function_files(project: Project, store: UpstreamStore, fix, patch,
                          pin) -> PatchFile | None:
    """A fix bring-back takes from upstreamed/ whose function upstream moved whole into another
    file since, the old file staying (reverts.moved_files): the fix made on the pin in that
    file instead (its file sections' paths changed, the hunks found there by their lines); None
    where no file of it so moved. At its own path the judge finds the function gone and stops
    on a conflict there."""
    from patchforge.reverts import moved_files

    rel = fix.path.relative_to(project.root).as_posix()
    try:
        into = moved_files(project, store, fix.upstream, fix.name, rel, patch.to_bytes(),
                           pin.commit)
    except PatchforgeError:
        return None
    if not into:
        return None
    out = []
    for line in patch.diff.splitlines(keepends=True):
        for old, new in into.items():
            a, b = old.encode("utf-8", "surrogateescape"), new.encode("utf-8", "surrogateescape")
            if line.rstrip(b"\r\n") == b"diff --git a/%s b/%s" % (a, a):
                line = b"diff --git a/%s b/%s" % (b, b) + line[len(line.rstrip(b"\r\n")):]
            elif line.rstrip(b"\r\n") in (b"--- a/" + a, b"+++ b/" + a):
                line = line[:6] + b + line[len(line.rstrip(b"\r\n")):]
        out.append(line)
    # (The index line names the old file's blobs: not this file's.)
    diff = b"".join(line for line in out if not line.startswith(b"index "))
    return patch.with_diff(diff).with_field("Base", pin.commit)


def _whole_index(whole, moved: dict[str, list[int]], path: str, k: int) -> int:
    """The number in the whole fix `whole` of hunk `k` of `path` in the fix without its
    `moved` hunks (a split bring-back's rest)."""
    fp = next(fp for fp in whole.file_patches if fp.path == path)
    return [n for n in range(len(fp.hunks)) if n not in moved.get(path, ())][k]


def _hunk_count(patch) -> int:
    """The hunks of `patch`, every file's."""
    return sum(len(fp.hunks) for fp in patch.file_patches)


def _with_moved_part(whole, split, judgement, landed, pin) -> tuple[PatchFile, str]:
    """The part of a fix kept under upstreamed/ as landed when bring-back puts back the rest
    (_moved_upstream_split): the hunks upstream moved, with those the rest's judgement found
    landed (`landed`: _kept_landed_part's, or None), as one patch on the fix's own base; and
    what is said of them."""
    from patchforge.rebase.engine import landed_part

    _, moved, landing = split
    hunks = {path: list(found) for path, found in moved.items()}
    parts: dict = {}
    if landed is not None:
        for fv in judgement.verdict.files:
            for hv in fv.hunks:
                if hv.landed:
                    hunks.setdefault(fv.path, []).append(
                        _whole_index(whole, moved, fv.path, hv.index))
        for path, within in (judgement.parts or {}).items():
            parts[path] = {_whole_index(whole, moved, path, k): changes
                           for k, changes in within.items()}
    part = landed_part(whole, None, hunks={p: sorted(set(h)) for p, h in hunks.items()},
                       parts=parts or None)
    said = ", ".join(f"{path} hunk {k + 1}" for path, found in sorted(moved.items())
                     for k in found)
    words = f"{said} still upstream, moved elsewhere in the file"
    if landed is None:
        applied = pin.label + (f", commit:{landing}" if landing else "")
    else:
        words, applied = f"{landed[1]}; {words}", landed[0].get("Applied-Upstream")
    return part.with_field("Applied-Upstream", applied), words


def bring_back(project: Project, store: UpstreamStore, name: str, *,
               resume: bool = True, allow_doubled: bool = False) -> dict:
    """Put a skipped fix back at the end of its series, moved onto the current base by the one
    judge (the same 3-way path a rebase takes). Landed meanwhile: it goes to upstreamed/. When it
    cannot be moved cleanly, it stops the way a rebase does: a worktree with the files as far as
    the merge got (conflict markers), the fix staying in skipped/ until `bring-back --continue`
    takes the resolution (`bring_back_continue`) or `--abort` gives up (exit 3, ConflictStop).

    The fix is written into the series before it leaves skipped/, so a kill never loses it;
    run again after a kill between the two, it finishes that run (`resume`: the series' last
    patch may be that run's own, _cut_short_here). One whose added lines upstream has at the
    pin already is refused (_refuse_doubling) unless `allow_doubled`: a person has seen that
    upstream's lines there are other code, and the fix goes back beside them."""
    from patchforge.judge import (HistoryIndex, LazyHistory, SeriesJudge, Target, doubled_stop,
                                  moved_away, read_history)

    finished = _ledger_left_behind(project, name)
    if finished is not None:
        return finished
    moved = _landing_moved_to_skipped(project, name)
    if moved is None and "upstreamed/" not in name:
        # `bring-back NAME` (as status advises it) run again after a kill that left the
        # landing in skipped/: the same fix, judged as one taken from upstreamed/ (judged on
        # the history, a landing taken back in part was "landed upstream meanwhile" again).
        # Only a landing's: the history's latest event of it before any return is its drop
        # as landed (a fix a rebase set aside is judged as it always was).
        from patchforge.ledger import BROUGHT_BACK, latest_events

        head, _, tail = name.rpartition("/")
        moved = _landing_moved_to_skipped(project, f"{head}/upstreamed/{tail}" if head
                                          else f"upstreamed/{tail}")
        if moved is not None and next(
                (event.get("destination") for event in latest_events(
                    project, moved.upstream, moved.name)
                 if event.get("event") != BROUGHT_BACK), None) != KEPT_LANDINGS:
            moved = None
    landing = None if moved else _kept_landing_named(project, name)  # as delete takes it
    # A fix taken from upstreamed/ is one reverts.gone_upstream found gone at the pin by its
    # files, whole or in part, after its landing: judged by the pin's files alone. The
    # history since its base holds that landing, and a commit that only took out lines the
    # fix added, or one hunk of it, is no undoing of the whole change there: judged with it,
    # a landing taken back in part was "landed upstream meanwhile" and kept under
    # upstreamed/ again, status saying it needs attention after every bring-back.
    from_kept = moved is not None or landing is not None or \
        bool(_kept_upstreamed(project, name))
    if moved is not None:
        fix = moved  # `UPSTREAM/upstreamed/NAME` run again: the landing left for skipped/
    elif landing is not None:
        fix = _kept_to_skipped(project, store, name, [landing])
    else:
        fix = find_skipped(project, name) if not from_kept else \
            _kept_to_skipped(project, store, name)
    upstream = fix.upstream
    allowed = require_state(project, "bring-back", [upstream], store=store)
    raw = read_no_link(fix.path)
    patch = parse_patch_file(raw, str(fix.path))
    pin = project.lock.pin(upstream)
    whole = patch
    # A landing taken back in part beside a hunk upstream only moved: that hunk is upstream
    # (its lines elsewhere in the file), and stays kept under upstreamed/ as landed; only the
    # rest is judged and put back. Judged whole, the moved hunk's old place has its old code,
    # so the fix went back whole and the overlay had the moved lines twice.
    # A hunk whose lines are elsewhere in the file, but which the history does not show
    # moved (a revert took it out, a copy of a common line came later): put back, said
    # possibly doubled, never kept as landed on a count (it would be in no overlay).
    from patchforge.reverts import taken_out_runs

    into = _moved_function_files(project, store, fix, patch, pin) if from_kept else None
    if into is not None:
        patch = whole = into
    moved_split, doubtful = _moved_upstream_split(project, store, fix, patch, pin) \
        if from_kept else (None, {})
    taken_out = taken_out_runs(whole, doubtful)
    if moved_split is not None:
        patch = moved_split[0]
    base = (patch.get("Base") or "").strip()
    if base and re.fullmatch(r"[0-9a-fA-F]{40}", base) and not store.has_object(base):
        from patchforge.pins import bring_named_commits

        bring_named_commits(project, store, upstream, [base])  # (a fresh clone's cache)
    if not base or not store.has_object(base):
        base = pin.commit  # its own base is unknown here: judge it as made on the pin
    judged_names = project.patch_names(upstream)
    # A run a kill cut short after the series listed the fix, before it left skipped/: its
    # patch is the series' last. Judged on the series with it, the fix would be "landed
    # upstream meanwhile" (the series has its change) and a copy kept under upstreamed/ as
    # landed; judged without it, the same move writes the same bytes, and the run finishes.
    own = _cut_short_here(project, upstream, fix.name, judged_names) if resume else None
    if own is not None:
        judged_names = judged_names[:-1]
    prefix = [(n, project.read_patch(upstream, n)) for n in judged_names]
    refuse_symlinked_paths(store, pin.commit, prefix + [(fix.name, patch)])
    refuse_converted_line_ends(store, base,
                               [(fix.path.relative_to(project.root).as_posix(), patch)],
                               then=f"`patchforge bring-back {name}` again")
    judged_on = Target(upstream, base, pin.commit, pin.label, pin.version)
    index: list = []

    def history():
        """The history from the fix's base to the pin (judge.HistoryIndex of its files), read
        once when a question needs it: as a rebase judges it (a removal of code upstream
        moved to another file is no landing; a landing a later commit undid is none)."""
        if not index:
            changes = None if from_kept else read_history(store, judged_on)
            index.append(None if changes is None else
                         HistoryIndex(store, judged_on, sorted(patch.paths), changes=changes))
        return index[0]

    # Judged, and stopped, on its base: the series' patches in every one of its profiles'
    # series (apply.series.counts_for), never another profile's fix.
    configured = list(project.config.profiles)
    if profile_bases_differ([*prefix, (fix.name, patch)], configured):
        before = base_state(lambda paths: store.read_blobs(pin.commit, paths), prefix,
                            configured, profile_set(patch, configured), strict=False)
    else:
        before = series_state(project, store, upstream, strict=False, upto=len(prefix))
    renamed = series_renames(prefix, patch, before.current)
    judge = SeriesJudge(store, judged_on, labels=("series", "base", f"skipped {fix.name}"),
                        history=LazyHistory(history),
                        renames=_renames_asked(store, judged_on, patch, renamed,
                                               _series_gone_recorded(project, upstream,
                                                                     fix.name)),
                        doubled_stops=not allow_doubled, taken_out=taken_out)
    judge.start_after(before)
    judgement = judge.decide(fix.name, patch)
    if judgement.outcome == "applies":
        # Written as it moves: where overlays are made, one that deletes an upstream file is
        # refused here, as an import is, not by `overlays` later.
        from patchforge.overlay import refuse_series_removals

        refuse_series_removals(project, store, upstream, pin.commit, prefix,
                               [*prefix, (fix.name, patch)],
                               sources={fix.name: (str(fix.path), raw)},
                               outcome="it stays in skipped/",
                               way_out=f"in {fix.path}, or leave it in skipped/")

    def moved_fix():
        """The fix as it joins the series (outcome "applies"). Made again on the pin where
        its function moved into another file: the hunks name that file, but their numbers,
        context and index line were still the old file's (lint: not byte-stable)."""
        return patch if judgement.unchanged and base == pin.commit and into is None else \
            patch.with_remade_diff(make_diffs([judgement.changes])[0]).with_field(
                "Base", pin.commit)

    beside = _refuse_doubling(project, store, fix, patch, moved_fix(), pin,
                              moved_split[2] if moved_split is not None else
                              _recorded_landing(project, fix, whole) if from_kept else None,
                              allow_doubled, doubled_stop(judgement), taken_out) \
        if judgement.outcome == "applies" or doubled_stop(judgement) else ""
    if own is not None and (judgement.outcome != "applies" or moved_fix().to_bytes() !=
                            read_no_link(project.patch_path(upstream, own))):
        # Not what this fix moves to: another fix of its name, judged as any other. Asked by
        # the name it has in skipped/ now: a fix NAME took from upstreamed/ is no longer there.
        return bring_back(project, store, f"{upstream}/{fix.name}", resume=False,
                          allow_doubled=allow_doubled)
    series = project.read_series(upstream)
    result = {"upstream": upstream, "name": fix.name, "outcome": judgement.outcome,
              "state": judgement.state, "detail": judgement.message + beside,
              "files": judgement.files}
    if doubtful and judgement.outcome == "applies":
        result["detail"] += "; " + ", ".join(f"{path} hunk {n + 1}" for path, found in
                                             sorted(doubtful.items()) for n, _, _ in found) + \
            " put back though the file has its lines elsewhere (possibly doubled: look at " + \
            ", ".join(where for found in doubtful.values() for _, where, _ in found) + ")"
    with RepoLock(project.state_dir):
        require_state_still(project, "bring-back", [upstream], allowed, store=store)
        # Judged on the series and pin as read above: a series changed since (a `new` beside
        # this command) would lose its entry if the old one were written with the fix added.
        series = project.read_series(upstream)
        if own is not None and series.names[-1:] == [own]:
            series = series.removed(own)  # listed again at the end, where it is
        if series.names != judged_names or project.lock.pin(upstream).commit != pin.commit:
            raise UsageError(f"the {upstream} series changed while {fix.name} was being "
                             "judged (another patchforge command); it stays in skipped/",
                             hint=f"run `patchforge bring-back {project.skipped_word(upstream, fix.name)}` again")
        if _still_aside(fix.upstream, fix.name, fix.path) != raw:
            # Changed by hand meanwhile: the version judged is not the one there now.
            raise UsageError(f"{fix.path} changed while it was being judged; it stays in "
                             "skipped/", hint=f"run `patchforge bring-back {project.skipped_word(upstream, fix.name)}` again")
        if judgement.outcome == "landed":
            # (The part put back landed too: the whole fix is upstream, kept as one.)
            kept, result["landed_in"] = _kept_as_landed(
                store, whole, judgement, Target(upstream, base, pin.commit, pin.label,
                                                pin.version))
            directory = project.series_dir(upstream) / "upstreamed"
            aside = aside_name(directory, fix.name, kept.to_bytes())
            # Left half-way after the move (history or ledger not put back), the fix is in
            # upstreamed/ already, where a second bring-back refuses it: the ledger finishes.
            with _all_or_nothing(project, upstream, [directory / aside, fix.path],
                                 finish=f"run `patchforge bring-back {project.skipped_word(upstream, fix.name)}` again, or, "
                                        f"where {fix.name} is in upstreamed/ already, "
                                        "`patchforge ledger`"):
                atomic_write(directory / aside, kept.to_bytes())
                atomic_delete(fix.path)
                # Its history says it landed (status's "left the series" line said it was
                # skipped): the event a rebase's drop records.
                series_changed(project, {
                    "event": "dropped", "action": "dropped", "upstream": upstream,
                    "patch": aside, "to": {"label": pin.label, "commit": pin.commit},
                    "detail": "landed upstream meanwhile (bring-back)",
                    "landed_in": result["landed_in"], "destination": "upstreamed"})
            result["path"] = (directory / aside).relative_to(project.root).as_posix()
            return result
        new = landed = None
        if judgement.outcome == "applies":
            new = moved_fix()
            landed = _kept_landed_part(store, patch, judgement, judged_on, history,
                                       None if moved_split is None else (whole, moved_split[1]))
            if moved_split is not None:
                landed = _with_moved_part(whole, moved_split, judgement, landed, pin)
        # Its own name, or a numbered one when a fix of the series (or a file there) has it. A
        # file of such a name the series does not list, holding exactly what this would write,
        # is this command's own, cut off by a kill before the series listed it: run again, it
        # is finished under that name, not brought back a second time beside it.
        file_name = aside_name(project.series_dir(upstream), fix.name,
                               None if new is None else new.to_bytes(), series.names)
        result["name"] = file_name
        result["path"] = project.patch_path(upstream, file_name).relative_to(
            project.root).as_posix()
        if new is not None:
            # The fix joins the series before it leaves skipped/: a kill in between leaves it
            # in both places, never in neither; a failure leaves it where it was.
            target = project.patch_path(upstream, file_name)
            kept_at = None
            if landed is not None:
                # Its hunks upstream landed meanwhile are no longer in the moved patch: kept
                # under upstreamed/ as a rebase keeps them, so a revert of that landing is
                # said. Written first (skipped/ still holds the whole fix): run again after
                # a kill, the same bytes there are this run's, not written twice.
                directory = project.series_dir(upstream) / KEPT_LANDINGS
                kept_at = directory / aside_name(directory, file_name, landed[0].to_bytes())
                result["detail"] += f"; {landed[1]}: kept as " + \
                    kept_at.relative_to(project.root).as_posix()
                result["landed_part"] = kept_at.relative_to(project.root).as_posix()
            from patchforge.ledger import (history_path, ledger_path, record_brought_back,
                                           update_ledger)

            with _all_or_nothing(project, upstream,
                                 [*([kept_at] if kept_at else []), target,
                                  project.series_path(upstream), history_path(project),
                                  ledger_path(project), fix.path],
                                 finish=f"run `patchforge bring-back "
                                        f"{project.skipped_word(upstream, fix.name)}` again"):
                if kept_at is not None and landed is not None:
                    kept_at.parent.mkdir(exist_ok=True)
                    atomic_write(kept_at, landed[0].to_bytes())
                atomic_write(target, new.to_bytes())
                atomic_write(project.series_path(upstream),
                             series.inserted(file_name).to_bytes())
                # Its history goes on (the ledger's said it was skipped, and nothing after),
                # recorded while the fix is still in skipped/: killed after the fix left
                # skipped/ and before its return was recorded, the run again found no skipped
                # fix of that name and was refused, the history saying it set aside. Killed
                # anywhere before the fix leaves skipped/, the run again finishes the move
                # (_cut_short_here) and records the event once (record_brought_back); killed
                # after, before the ledger (which lists what skipped/ holds) is written, the
                # history's event says so and the run again writes it (_ledger_left_behind).
                record_brought_back(project, _brought_back(
                    upstream, file_name, fix.name, pin, result["detail"]), ledger=False)
                atomic_delete(fix.path)
                update_ledger(project)
            return result
        work, stray = _open_bring_back_stop(project, store, upstream, fix, file_name,
                                            judgement, before, pin.commit,
                                            _landed_at_stop(store, patch, judgement,
                                                            judged_on, history),
                                            moved=None if moved_split is None else
                                            moved_split[1:])
    files = ", ".join(judgement.files) or "the fix's files"
    ways = ""
    moved = moved_away(judgement.evidence) if judgement.stop_kind == "unsure" else None
    if moved is not None:
        # The code the fix takes out went to another file: the fix's change belongs there.
        ways = f": the code the fix takes out is in {moved[1]} now; if the fix is still " \
            f"needed, take it out there (`patchforge add {moved[1]}` brings it into the " \
            "worktree) and `patchforge bring-back --continue`; `patchforge bring-back " \
            "--abort` leaves it in skipped/ if it is not"
    if judgement.deleted_here:
        from patchforge.worktree import modify_delete_ways

        ways = modify_delete_ways(project, judgement.deleted_here,
                                  "patchforge bring-back --continue",
                                  "`patchforge bring-back --abort` (the fix stays in skipped/)",
                                  "with no change left, `--continue` is refused")
    if judgement.stop_kind == "obsolete":
        ways += _made_in_skipped(project, upstream, fix.name, judgement.files)
    raise ConflictStop(
        f"{upstream}/{fix.name} does not move onto {pin.label} cleanly: {judgement.message}"
        f"{ways}; "
        f"it stays in skipped/ until the bring-back is finished",
        hint=f"make the fix in {files} in {work} (`patchforge add PATH` brings more), then "
             "`patchforge bring-back --continue`; `patchforge bring-back --abort` gives up "
             "(the fix stays in skipped/)"
             + (f"; {counted(len(stray[1]), 'file')} written there after the last edit ended "
                f"{'is' if len(stray[1]) == 1 else 'are'} kept "
                f"in {stray[0].relative_to(project.root)}" if stray else ""))


def _made_in_skipped(project: Project, upstream: str, name: str, files: list[str]) -> str:
    """The words for a fix brought back onto files the pin does not have (`files`: "not in
    the base either (nor made by an earlier patch)") that another fix in skipped/ makes (a
    new file, a rename's or copy's destination): that fix goes back first, then this one.
    "" when none makes them."""
    from patchforge.state import skipped_fixes

    makers = []
    for other in skipped_fixes(project):
        if other.upstream != upstream or other.name == name:
            continue
        try:
            patch = parse_patch_file(other.path.read_bytes(), str(other.path))
        except (OSError, PatchforgeError):
            continue  # said by `lint` and `status`; no way on to name from it
        made = [fp.new_path for fp in patch.file_patches
                if fp.new_path in files and fp.new_path != fp.old_path]
        if made:
            makers.append((other.name, made))
    if not makers:
        return ""
    said = "; ".join(f"{', '.join(made)} made by {maker}, in skipped/ too"
                     for maker, made in makers)
    first = " then ".join(f"`patchforge bring-back {project.skipped_word(upstream, maker)}`"
                          for maker, _ in makers)
    return (f" ({said}: `patchforge bring-back --abort`, then {first} first, then this one "
            "again)")


def _recorded_landing(project: Project, fix, patch) -> str | None:
    """The landing commit recorded for a fix bring-back takes from upstreamed/."""
    from patchforge.reverts import recorded_landing

    try:
        return recorded_landing(project, fix.upstream, fix.name,
                                fix.path.relative_to(project.root).as_posix(), patch.to_bytes())
    except PatchforgeError:
        return None


def _refuse_doubling(project: Project, store: UpstreamStore, fix, patch, made, pin,
                     landing: str | None, allow_doubled: bool, judged: list[str],
                     taken_out: frozenset[bytes] | set[bytes] = frozenset()) -> str:
    """Refuse a bring-back whose lines upstream has at the pin already, moved and perhaps
    re-wrapped or re-spelled (reverts.near_doubled, counted for a kept fix upstream took
    back against the file as the commit that took it out after `landing` left it, with the
    fix put back): the overlay would have them twice, and nothing after
    would say so; or, where that finds none, where the judge found them near the fix's place
    (`judged`: judge.doubled_stop, a stop that is no move). Nothing is written; the fix stays
    in skipped/. What is said names where
    upstream has the lines: whether they are the fix's (then taking the hunk out loses
    nothing) or other code that only reads the same (then the fix goes back beside it,
    `allow_doubled`, and what is returned says where) is for a person to see. Not for a
    hunk whose runs of added lines are all `taken_out` (reverts.taken_out_runs: the history
    shows them taken out, not moved, and not put in the fix's function again since; said
    possibly doubled)."""
    from patchforge.apply.neartext import near_runs
    from patchforge.reverts import near_doubled

    doubled = near_doubled(store, patch, made, pin.commit, landing)
    if taken_out:
        hunks = {fp.path: fp.hunks for fp in made.file_patches}

        def shown_taken_out(said: str) -> bool:
            path, _, n = said.rpartition(" hunk ")
            runs = near_runs(hunks[path][int(n) - 1])
            return bool(runs) and all(run in taken_out for run in runs)

        doubled = [(hunk, lines) for hunk, lines in doubled if not shown_taken_out(hunk)]
    if not doubled and not judged:
        return ""
    where = "; ".join(
        f"{hunk} (upstream has its lines at {hunk.rsplit(' hunk ', 1)[0]} "
        f"{'line' if len(lines) == 1 else 'lines'} {', '.join(map(str, lines))})"
        for hunk, lines in doubled) or "; ".join(judged)
    if allow_doubled:
        return f"; beside upstream's lines that read the same, as asked (--allow-doubled): " \
            f"{where}"
    word = project.skipped_word(fix.upstream, fix.name)
    one = len(doubled or judged) == 1
    raise UsageError(
        f"{fix.upstream}/{fix.name} adds lines upstream has at the pin ({pin.label}) "
        f"already, elsewhere in the file or spelled otherwise: {where}; brought back, the "
        "overlay would have them twice. It stays in skipped/",
        hint=f"look at {'that place' if one else 'those places'} at the pin: if "
             f"{'it is' if one else 'they are'} the fix's change made upstream's way, take "
             f"{'that hunk' if one else 'those hunks'} out of "
             f"{fix.path.relative_to(project.root).as_posix()} and run `patchforge "
             f"bring-back {word}` again (or `patchforge delete {word}`, kept under deleted/, "
             "where that was all the fix did); if it is other code that only reads the "
             f"same, `patchforge bring-back {word} --allow-doubled` puts the fix back "
             "beside it")


def _ledger_left_behind(project: Project, name: str) -> dict | None:
    """A bring-back of NAME (`NAME`, `UPSTREAM/NAME` or `UPSTREAM/upstreamed/NAME`) that a
    kill cut short after the fix left skipped/, its return in the history, before the ledger
    was written: with no fix of that name in skipped/ or under upstreamed/, the series listing
    it and the history's latest event of it its return at the pin, the ledger is written (the
    run's last step) and the result said as the run's. None where there is nothing to finish
    (the ledger in step too): the command goes on, and says what it says of the name."""
    from patchforge.ledger import brought_back_recorded, update_ledger
    from patchforge.state import skipped_fixes

    head, sep, tail = name.rpartition("upstreamed/")
    if sep and (not head or head.endswith("/")) and tail and "/" not in tail:
        upstream, stem = head[:-1] or None, tail
    else:
        upstream, stem = name.split("/", 1) if "/" in name else (None, name)
    try:
        file_name = patch_file_name(stem)
        upstreams = [upstream] if upstream else project.upstream_names()
        if upstream is not None and upstream not in project.config.upstreams:
            return None
        skipped = [f for f in skipped_fixes(project) if f.name == file_name]
    except PatchforgeError:
        return None  # (the command goes on, and says what is wrong)
    found = []
    for each in upstreams:
        # (A landing of that name kept under upstreamed/ does not stop it: the history's
        # latest event of the fix is its return at the pin, after any landing kept before it,
        # and the part of it a split bring-back keeps as landed is written before that return.)
        if any(f.upstream == each for f in skipped):
            return None
        try:
            listed = file_name in project.patch_names(each)
        except PatchforgeError:
            continue
        if not listed or each not in project.lock.upstreams:
            # (An upstream configured and not pinned yet, `upstream pin` to come, has no
            # return to finish: the command goes on for the name asked.)
            continue
        pin = project.lock.pin(each)
        if brought_back_recorded(project, {
                "upstream": each, "patch": file_name,
                "to": {"label": pin.label, "commit": pin.commit}}):
            found.append(each)
    if len(found) != 1:
        return None
    upstream = found[0]
    with RepoLock(project.state_dir), writing_project(project.root):
        if not update_ledger(project):
            return None
    path = project.patch_path(upstream, file_name)
    return {"upstream": upstream, "name": file_name, "outcome": "applies", "state": "applies",
            "detail": "its return was recorded by a run cut short before the ledger; the "
                      "ledger is written now", "files": [],
            "path": path.relative_to(project.root).as_posix()}


def _cut_short_here(project: Project, upstream: str, file_name: str,
                    listed: list[str]) -> str | None:
    """The series' last patch when it may be the one a `bring-back` of skipped/FILE_NAME wrote
    before a kill stopped it short of taking the fix out of skipped/: named as bring-back names
    it (FILE_NAME, or FILE_NAME numbered: NAME.2.patch), with its file there. The caller
    judges the fix without it and takes it for that run's only where it holds the very bytes
    the move makes."""
    if not listed:
        return None
    last, stem = listed[-1], file_name.removesuffix(".patch")
    numbered = last.startswith(stem + ".") and last.endswith(".patch") and \
        last[len(stem) + 1:-len(".patch")].isdigit()
    if last != file_name and not numbered:
        return None
    return last if project.patch_path(upstream, last).is_file() else None


def _series_gone_recorded(project: Project, upstream: str, file_name: str) -> list[str] | None:
    """The series' files the target no longer had, as the rebase that set the fix kept as
    skipped/`file_name` recorded them with its `skipped` event (ledger.SERIES_GONE): the
    sources of the whole series' rename question. None where the history's latest event of
    that file is no such event (a fix set aside before they were recorded, one put into
    skipped/ by hand or from upstreamed/, a history without it)."""
    from patchforge.ledger import KEPT_AS, RENAMED_FROM, SERIES_GONE, read_history

    for event in reversed(read_history(project)):
        if event.get("upstream") != upstream or file_name not in (
                event.get(KEPT_AS) or event.get("patch"), event.get(RENAMED_FROM)):
            continue
        gone = event.get(SERIES_GONE)
        if event.get("event") == "skipped" and event.get("destination") == "skipped" \
                and isinstance(gone, list) and all(isinstance(p, str) for p in gone):
            return gone
        return None
    return None


def _renames_asked(store: UpstreamStore, target, patch, renamed: dict[str, str],
                   gone: list[str] | None):
    """SeriesJudge's `renames` for a fix brought back: the series' own renames (`renamed`,
    series_renames below) over where upstream moved its files. That is asked, with `gone`
    recorded, for the series' gone files and the fix's together, the question `status
    --against` and the rebase that set the fix aside asked (judge.series_renames), so that
    where another series file is nearer the same new file, bring-back settles it as they
    did; without (a fix set aside before it was recorded), for the fix's files alone."""
    if gone is None or target.base_commit == target.commit:
        return (set(renamed), lambda: renamed) if renamed else None
    asked = sorted(set(gone) | {fp.source_path for fp in patch.file_patches if not fp.is_new})
    found: list[dict[str, str]] = []

    def moves() -> dict[str, str]:
        if not found:
            found.append({**store.renames(target.base_commit, target.commit, asked), **renamed})
        return found[0]

    return set(asked) | set(renamed), moves


def series_renames(prefix, patch, current: dict) -> dict[str, str]:
    """The files `patch` changes that a patch of the series before it (`prefix`) renames away
    (`current`: the series' files so far, a file renamed away None there) -> where the series
    has them now: the judge follows them there as it follows upstream's renames. A fix's
    landed hunks are kept under upstreamed/ at the path upstream landed them, while the fix's
    moved rest renames the file: brought back, they belong in the renamed file (the series
    has no file at the old path, which the judge took for one deleted upstream)."""
    moved: dict[str, str] = {}
    for _, earlier in prefix:
        for fp in earlier.file_patches:
            if fp.is_rename and fp.old_path and fp.new_path:
                for old, new in list(moved.items()):
                    if new == fp.old_path:
                        moved[old] = fp.new_path
                moved.setdefault(fp.old_path, fp.new_path)
    return {fp.old_path: moved[fp.old_path] for fp in patch.file_patches
            if not fp.is_new and fp.old_path in moved and current.get(fp.old_path, b"") is None
            and current.get(moved[fp.old_path]) is not None}


def _kept_landed_part(store: UpstreamStore, patch, judgement, target, history,
                      split: tuple[PatchFile, dict[str, list[int]]] | None = None
                      ) -> tuple[PatchFile, str] | None:
    """A fix some of whose hunks upstream landed (a `partial` verdict), or some changes
    inside a hunk (Judgement.parts), and which moves with the rest: those as a rebase keeps
    them under upstreamed/ (rebase.engine.landed_part, with `Applied-Upstream: LABEL,
    commit:ID` naming the commit that landed them: the first after which those hunks, judged
    alone, are upstream, or none where that cannot be told), and what to say of them; None when none landed or they cannot be kept so. `history()`: the
    HistoryIndex from the fix's base to the pin, or None. `split`: (the whole fix, its hunks
    upstream moved) where `patch` is the rest a split bring-back judged: what is said counts
    and numbers the hunks in the whole fix (a 3-hunk fix's one landed hunk was "1 of its 2")."""
    from patchforge.rebase.engine import landed_part, landed_words, part_landed_in, part_words

    verdict, parts = judgement.verdict, judgement.parts
    if verdict.state != "partial" and not parts:
        return None
    part = landed_part(patch, verdict, parts=parts)
    if part is None:
        return None
    # The commit that landed the part kept, judged on that part alone: the whole fix's
    # first commit holding as many hunks as the pin has may have landed another hunk, one
    # since taken back (why the fix came back), and a later revert of the part kept is
    # found only from the commit that landed it.
    where = part_landed_in(store, target, judgement.name, part, history())
    kept = part.with_field("Applied-Upstream",
                           target.label + (f", commit:{where}" if where else ""))
    if split is None:
        return kept, landed_words(patch, verdict, parts, where)
    whole, moved = split
    return kept, part_words(whole, verdict.hunks_landed, _hunk_count(whole),
                            {path: {_whole_index(whole, moved, path, k): changes
                                    for k, changes in within.items()}
                             for path, within in (parts or {}).items()} or None, where)


def _kept_as_landed(store: UpstreamStore, patch, judgement,
                    target) -> tuple[PatchFile, str | None]:
    """A skipped fix the pin has, as a rebase keeps a landed fix under upstreamed/: with
    `Applied-Upstream: LABEL, commit ID` naming the commit that landed it (found as the rebase
    finds it: the first commit after the fix's base whose files have its change), and its
    diff made from that commit (landings.landed_diff: the landing's hunks that carry the fix's
    lines, Base its parent) where that can be made. Its own diff's pre-image is the one its
    base had, which upstream had changed before landing it (why it was set aside): in that
    form a later revert of the landing, which brings back upstream's lines, would never be
    found. No landing commit found: its own diff and the label. (kept, landing commit)"""
    from patchforge.judge import where_landed
    from patchforge.landings import landed_diff

    try:
        landing, _ = where_landed(store, target, patch, judgement.verdict, None)
    except PatchforgeError:
        landing = None
    if landing is None:
        return patch.with_field("Applied-Upstream", target.label), None
    remade = landed_diff(store, patch, landing)
    kept = patch if remade is None else \
        patch.with_remade_diff(remade[0]).with_field("Base", remade[1])
    return kept.with_field("Applied-Upstream", f"{target.label}, commit:{landing}"), landing


def _landed_at_stop(store: UpstreamStore, patch, judgement, target, history):
    """The hunks of a fix whose bring-back stops that landed upstream meanwhile
    (rebase.journal.LandedHunks, with the commit that landed them), kept at --continue where
    the resolution leaves them to upstream; None when none did."""
    from patchforge.judge import where_landed
    from patchforge.rebase.engine import landed_hunks, landed_part, part_landed_in

    verdict, parts = judgement.verdict, judgement.parts
    if not verdict.hunks_landed and not parts:
        return None
    try:
        where = where_landed(store, target, patch, verdict, history())[0] \
            if verdict.hunks_landed else \
            part_landed_in(store, target, judgement.name,
                           landed_part(patch, verdict, parts=parts), history())
    except PatchforgeError:
        where = None
    return landed_hunks(verdict, where, parts)


def _open_bring_back_stop(project, store, upstream: str, fix, file_name: str, judgement,
                          before, pin: str, landed=None, *,
                          moved=None) -> tuple[Path, tuple | None]:
    """The worktree of a bring-back that stopped: HEAD holds the fix's files as the series
    leaves them on the pin, the working files the merge's result (conflict markers where git
    could not merge). The state file says which skipped fix it brings back, as what, and
    which of its hunks had landed upstream (`landed`: numbered as in the part judged), and
    which upstream only moved (`moved`: _moved_upstream_split's hunks by path, numbered as
    in the whole fix, and its landing commit), judged without them: --continue keeps those
    under upstreamed/ as landed, as a bring-back that does not stop does. Returns it, and
    where files found in its place were kept (worktree.keep_stray), if any."""
    from patchforge.worktree import Worktree, files_at, keep_stray

    def base_mode(path: str) -> str | None:
        found = store.entry(pin, path)
        return found[0] if found else None

    made: list[tuple[bytes, bytes]] = []
    series_commit = store.commit_files(pin, dict(before.current),
                                       modes=before.given_modes(base_mode),
                                       message=f"{upstream}: the series before {file_name}",
                                       made=made)
    paths = sorted(set(judgement.before) | set(judgement.after) | set(fix_paths(judgement)))
    work = project.work_dir(upstream)
    kept = keep_stray(project, upstream)  # what an editor saved there after an edit ended
    # An open edit here was refreshed (require_state said so): derived state, closed.
    close_worktree(project, upstream)
    Worktree.create(work, files_at(store, series_commit, paths),
                    {p: c for p, c in judgement.after.items() if c != judgement.before.get(p)},
                    modes=dict(judgement.modes), bases=dict(judgement.bases))
    store.keep_made(made, project.made_objects_path(upstream))
    state = {"patch": file_name, "base": series_commit, "pin": pin,
             "bring_back": fix.path.relative_to(project.root).as_posix(),
             "conflicts": list(judgement.files), "kind": judgement.stop_kind,
             "message": judgement.message}
    if landed is not None:
        state["landed"] = landed.to_json()
    if moved is not None:
        state["moved"] = {"hunks": moved[0], "landing": moved[1]}
    atomic_write(state_file(project, upstream), (json.dumps(state, indent=2) + "\n").encode())
    return work, kept


def fix_paths(judgement) -> list[str]:
    """The paths of the target a stopped judgement's patch touches (its files, renamed ones
    where upstream renamed them); a file gone upstream has none."""
    return [f.target_path for f in judgement.verdict.files if f.target_path]


def _bringing_back(project: Project, upstream: str | None) -> tuple[str, dict]:
    """The upstream whose bring-back is stopped (the one named, or the only one) and its state."""
    found = [(u, state) for u in project.upstream_names() if upstream in (None, u)
             if (state := editing(project, u)) and state.get("bring_back")]
    if not found:
        from patchforge.state import read_states

        busy = [s for s in read_states(project).values() if s.kind != "idle"
                and upstream in (None, s.upstream)]
        raise UsageError("no bring-back is stopped" + (f": {busy[0].describe()}" if busy else ""),
                         hint=busy[0].next_step() if busy else
                         "`patchforge status` lists the skipped fixes")
    if len(found) > 1:
        raise UsageError("bring-backs are stopped in several series: "
                         + ", ".join(u for u, _ in found), hint="say which with --upstream")
    return found[0]


def _skipped_path(project, upstream: str, state: dict) -> Path:
    """The skipped fix a bring-back state names: only ever a file of series/<upstream>/skipped/
    (the state file is read back, and never leads elsewhere)."""
    rel = str(state.get("bring_back") or "")
    directory = project.series_dir(upstream) / "skipped"
    path = project.root / rel
    if path.parent != directory or not path.name.endswith(".patch") or "/" in path.name:
        raise UsageError(f"{state_file(project, upstream)}: a bring-back of {rel!r}, which is "
                         f"not a fix under {directory.relative_to(project.root)}",
                         hint="`patchforge bring-back --abort`")
    return path


def bring_back_continue(project, store, upstream: str | None = None, *,
                        allow_undo: bool = False) -> dict:
    """`bring-back --continue`: the stopped bring-back's resolution (the worktree's tracked
    files; a file nobody added is refused, conflict markers are refused, and so is a
    resolution that undoes a change made under the fix since it was set aside, unless
    `allow_undo`: the result's `undoes` then says what it undoes) becomes the fix's diff
    on the current base; the fix joins the end of the series, then leaves skipped/, then the
    worktree goes. Run again after a kill, it finishes what is left."""
    from patchforge.ledger import history_path, ledger_path, record_brought_back

    upstream, state = _bringing_back(project, upstream)
    require_state(project, "bring-back --continue", [upstream])
    skipped = _skipped_path(project, upstream, state)
    file_name = patch_file_name(checked_patch_name(str(state["patch"])))
    work = project.work_dir(upstream)
    series = project.read_series(upstream)
    if not skipped.exists():
        if file_name in series.names:  # a kill after the fix left skipped/: only the end is left
            with RepoLock(project.state_dir), writing_project(project.root):
                record_brought_back(project, _brought_back(
                    upstream, file_name, skipped.name, project.lock.pin(upstream),
                    "conflict resolved by hand"))
                close_worktree(project, upstream)
            return {"upstream": upstream, "name": file_name, "files": []}
        raise UsageError(f"{skipped.relative_to(project.root)} is gone, and the series does "
                         f"not list {file_name}", hint="`patchforge bring-back --abort`")
    if not work.is_dir():
        raise UsageError(f"the bring-back's worktree {work} is gone",
                         hint="`patchforge bring-back --abort` (the fix stays in skipped/), "
                              "then `patchforge bring-back` again")
    if not (work / ".git").is_dir():
        raise UsageError(f"the bring-back's worktree {work} has lost its .git, where patchforge "
                         "records the base: the resolution cannot be read",
                         hint="copy the resolved files elsewhere, `patchforge bring-back "
                              "--abort` (the fix stays in skipped/), `patchforge bring-back` "
                              "again, then copy them back")
    diff, changes = worktree_diff(project, store, upstream, state, with_changes=True)
    patch = parse_patch_file(skipped.read_bytes(), str(skipped))
    own = added_lines(patch)
    marked = [p for p, old, new, _, _ in changes
              if new is not None and conflict_markers_left(old, new, own)]
    if marked:
        raise UsageError(f"conflict markers left in {', '.join(marked)} (in {work})",
                         hint="resolve them, then `patchforge bring-back --continue`; or "
                              "`patchforge bring-back --abort` (the fix stays in skipped/)")
    refuse_gone_files_left_out(store, state["base"], state.get("kind"),
                               state.get("conflicts", []), changes, work,
                               "`patchforge bring-back --abort` (the fix stays in skipped/)")
    refuse_removed_by_hand(work, changes, patch, file_name,
                           skipped.relative_to(project.root).as_posix(),
                           "patchforge bring-back --continue",
                           "`patchforge bring-back --abort` (the fix stays in skipped/)")
    undoes = resolution_undoes(project, upstream, changes,
                               lambda: [(n, project.read_patch(upstream, n))
                                        for n in series.names if n != file_name],
                               f"the upstream ({project.lock.pin(upstream).label})")
    if not allow_undo:
        refuse_undoing(undoes, file_name, "patchforge bring-back --continue",
                       "`patchforge bring-back --abort` (the fix stays in skipped/)", work)
    # As `rebase --continue`: the patch's side kept whole where upstream changed the same
    # lines is taken (often meant), and said, since it takes upstream's change back there.
    kept_over = resolution_keeps_patch_over(
        project, upstream, changes, patch,
        lambda: [(n, project.read_patch(upstream, n)) for n in series.names if n != file_name],
        f"the upstream ({project.lock.pin(upstream).label})")
    if not changes:
        raise UsageError(f"the worktree {work} holds no change: nothing to bring back",
                         hint=f"make the fix there; or `patchforge bring-back --abort` (it stays "
                              f"in skipped/), `patchforge delete {file_name[:-len('.patch')]}` "
                              "drops it")
    _removals_checked(project, store, upstream, file_name, changes, work,
                      "`patchforge bring-back --continue`; or `patchforge bring-back --abort` "
                      "(the fix stays in skipped/)")
    new_patch = patch.with_remade_diff(diff).with_field("Base", state["pin"])
    label = project.lock.pin(upstream).label
    refuse_resolution_not_applying(store, state["base"], label, file_name, new_patch, work,
                                   "patchforge bring-back --continue",
                                   "`patchforge bring-back --abort` (the fix stays in skipped/)")
    # Its base is its own profiles' chain; every other series that holds it is asked too.
    configured = list(project.config.profiles)
    earlier = cache(lambda: [(n, project.read_patch(upstream, n))
                             for n in series.names if n != file_name])
    refuse_resolution_outside_series(
        store, state["pin"], label, file_name, new_patch, patch, earlier, lambda: [],
        configured, lambda: profile_bases_differ([*earlier(), (file_name, new_patch)],
                                                 configured), work,
        "patchforge bring-back --continue",
        "`patchforge bring-back --abort` (the fix stays in skipped/)")
    if patch.get_all("Keeps"):
        from patchforge.invariants import check_patch_invariants

        files = {p: new for p, _, new, _, _ in changes}
        broken = check_patch_invariants(new_patch, lambda path: files[path] if path in files
                                        else store.read_blob(state["base"], path))
        if broken:
            raise UsageError("; ".join(broken),
                             hint="the resolution breaks the fix's Keeps: invariant")
    parts, kept_said = _created_files_left(store, project, upstream, file_name, patch, changes,
                                           state["pin"])
    data = new_patch.to_bytes()
    target = project.patch_path(upstream, file_name)
    parse_patch_file(data, str(target))
    landed = _landed_left(store, patch, state, changes, label)
    if landed is not None:
        # Its hunks that had landed, left so by the resolution, and those upstream only moved
        # (a split bring-back judged the rest): with a file it creates that upstream made the
        # same, one landed part (as `rebase --continue` keeps them).
        kept, said = landed
        for k, (where, part) in enumerate(parts):
            if where == KEPT_LANDINGS:
                created = parse_patch_file(part)
                parts[k] = (where, created.with_remade_diff(created.diff + kept.diff).to_bytes())
                break
        else:
            parts.append((KEPT_LANDINGS, kept.to_bytes()))
        kept_said += f"; {said}: kept under upstreamed/"
    with RepoLock(project.state_dir):
        # The parts of it the resolution leaves to upstream's files, each under a name of its
        # own there (one this run wrote, cut short by a kill, reused): kept before the fix
        # joins the series and leaves skipped/.
        asides = [(project.series_dir(upstream) / where, part) for where, part in parts]
        asides = [(directory / aside_name(directory, file_name, part), part)
                  for directory, part in asides]
        series = project.read_series(upstream)
        if file_name in series.names and target.is_file() and target.read_bytes() != data:
            # Listed by a --continue cut short, then the resolution changed: never overwrite.
            raise UsageError(f"{upstream}/{file_name} is in the series already, with another "
                             f"diff than the worktree's; the fix is still in "
                             f"{skipped.relative_to(project.root)}",
                             hint=f"`patchforge bring-back --abort`, then compare the two "
                                  f"(`patchforge delete {file_name[:-len('.patch')]}` sets one "
                                  "aside)")
        # In the series first, out of skipped/ next: a kill in between leaves it in both. A
        # failure (a full disk, EIO) puts every file back, the stop included: the project is
        # as it was, and the next --continue does the whole job.
        with _all_or_nothing(project, upstream,
                             [*(path for path, _ in asides),
                              target, project.series_path(upstream), skipped,
                              history_path(project), ledger_path(project),
                              state_file(project, upstream)],
                             finish="run `patchforge bring-back --continue` again"):
            for path, part in asides:
                if not path.exists():
                    path.parent.mkdir(exist_ok=True)
                    atomic_write(path, part)
            atomic_write(target, data)
            if file_name not in series.names:
                atomic_write(project.series_path(upstream),
                             series.inserted(file_name).to_bytes())
            atomic_delete(skipped)
            record_brought_back(project, _brought_back(
                upstream, file_name, skipped.name, project.lock.pin(upstream),
                "conflict resolved by hand" + kept_said + (
                    "; look that it is meant: " + "; ".join(kept_over) if kept_over else "")))
            # Last, and the end of the stop: until then, --continue again finishes it.
            atomic_delete(state_file(project, upstream))
        close_worktree(project, upstream)
    return {"upstream": upstream, "name": file_name, "files": [c[0] for c in changes],
            "undoes": undoes, "kept": kept_said.removeprefix("; "), "kept_over": kept_over}


def _created_files_left(store: UpstreamStore, project: Project, upstream: str, file_name: str,
                        patch, changes, pin_commit: str) -> tuple[list[tuple[str, bytes]], str]:
    """`bring-back --continue`'s keeping of the files the fix creates that the resolution left
    as the pin has them, as `rebase --continue` keeps them (Rebase._keep_created_files_left):
    one upstream made the same landed, kept under upstreamed/ (its landing commit named), one
    upstream made otherwise left for upstream's by the user, the fix's version kept under
    deleted/. Returns ((directory, patch bytes) of each, the words the result adds)."""
    from patchforge.judge import SeriesJudge, Target, where_landed
    from patchforge.reverts import created_files_left

    landed, dropped = created_files_left(
        patch, changes, lambda paths: store.read_blobs(pin_commit, paths))
    pin = project.lock.pin(upstream)
    parts: list[tuple[str, bytes]] = []
    said = ""
    if landed:
        part = patch.with_remade_diff(b"".join(fp.raw for fp in landed))
        base = (patch.get("Base") or "").strip()
        target = Target(upstream, base if base and store.has_object(base) else pin_commit,
                        pin_commit, pin.label, pin.version)
        where = None
        try:
            verdict = SeriesJudge(store, target).assess(file_name, part)
            if verdict.state == "upstreamed":
                where, _ = where_landed(store, target, part, verdict, None)
        except PatchforgeError:
            where = None  # (kept with the label alone, as a landing whose commit is unknown)
        parts.append(("upstreamed", part.with_field(
            "Applied-Upstream", pin.label + (f", commit:{where}" if where else "")).to_bytes()))
        said += (f"; {', '.join(fp.path for fp in landed)}, which it creates, landed upstream"
                 + (f" in {where[:12]}" if where else "")
                 + " as the fix made it: kept under upstreamed/")
    if dropped:
        parts.append(("deleted", patch.with_remade_diff(
            b"".join(fp.raw for fp in dropped)).to_bytes()))
        said += (f"; the fix's own {', '.join(fp.path for fp in dropped)} left for "
                 f"{pin.label}'s, as the resolution took it: the fix's version kept under "
                 "deleted/")
    return parts, said


def _landed_left(store: UpstreamStore, patch, state: dict, changes,
                 label: str) -> tuple[PatchFile, str] | None:
    """The hunks of the fix a bring-back stopped on that had landed upstream (the state's
    `landed`) and that its resolution leaves as upstream made them, with those upstream only
    moved (the state's `moved`: a split bring-back judged the fix without them), as kept
    under upstreamed/ (with `Applied-Upstream` naming the pin and the landing commit), and
    what to say of them; None when none are left so. The resolved patch, the worktree's
    difference from a base that has them, no longer holds them."""
    from patchforge.rebase.engine import landed_part_left, part_words
    from patchforge.rebase.journal import LandedHunks

    moved = _moved_at_stop(state)
    landed = None
    if "landed" in state:
        try:
            landed = LandedHunks.from_json(state["landed"])
        except (KeyError, TypeError, ValueError):
            landed = None  # a state file changed by hand: nothing is kept, as before
    if landed is None and moved is None:
        return None
    if moved is not None and landed is not None:
        landed = _numbered_in_whole(patch, landed, moved[0])
    files = {path: new for path, _, new, _, _ in changes}

    def base(path: str) -> bytes | None:
        return store.read_blob(state["base"], path)

    left = landed_part_left(patch, landed or LandedHunks({}, {}, 0),
                            lambda path: files[path] if path in files else base(path), base,
                            keeping=None if moved is None else moved[0])
    if left is None:
        return None
    part, count, parts = left
    where = landed.landing if landed is not None and (count or parts) else \
        (moved[1] if moved is not None else None)
    kept = part.with_field("Applied-Upstream", label + (f", commit:{where}" if where else ""))
    said = [part_words(patch, count, landed.total, parts, where) +
            ", left so by the resolution"] if landed is not None and (count or parts) else []
    if moved is not None:
        said.append(", ".join(f"{path} hunk {k + 1}" for path, found in sorted(moved[0].items())
                              for k in found) + " still upstream, moved elsewhere in the file")
    return kept, "; ".join(said)


def _moved_at_stop(state: dict) -> tuple[dict[str, list[int]], str | None] | None:
    """The hunks of the fix a stopped bring-back judged without, upstream having only moved
    them (`_open_bring_back_stop`'s `moved`), and their landing commit; None when there are
    none, or the state file was changed by hand into something else (nothing is kept)."""
    moved = state.get("moved")
    if not isinstance(moved, dict):
        return None
    hunks, landing = moved.get("hunks"), moved.get("landing")
    if not isinstance(hunks, dict) or not hunks or not all(
            isinstance(path, str) and isinstance(found, list) and found and
            all(type(k) is int and k >= 0 for k in found) for path, found in hunks.items()) \
            or not (landing is None or isinstance(landing, str)):
        return None
    return {path: list(found) for path, found in hunks.items()}, landing


def _numbered_in_whole(patch, landed, moved: dict[str, list[int]]):
    """`landed` (rebase.journal.LandedHunks of the part a split bring-back judged: the fix
    without its `moved` hunks) with its hunks numbered as in the whole fix `patch`."""
    from patchforge.model.record import replace

    def whole(path: str, k: int) -> int:
        if path not in moved:
            return k  # (a file with no hunk moved is numbered alike in both)
        fp = next((fp for fp in patch.file_patches if fp.path == path), None)
        rest = [] if fp is None else \
            [n for n in range(len(fp.hunks)) if n not in moved[path]]
        return rest[k] if k < len(rest) else len(fp.hunks) if fp is not None else k

    return replace(landed, total=_hunk_count(patch),  # (counted in the whole fix too)
                   hunks={path: [whole(path, k) for k in found]
                          for path, found in landed.hunks.items()},
                   parts={path: {whole(path, k): changes for k, changes in found.items()}
                          for path, found in landed.parts.items()})


def _brought_back(upstream: str, file_name: str, aside: str, pin, how: str) -> dict:
    """The history event of a fix `bring-back` put back into the series as `file_name` (from
    skipped/`aside`), moved onto `pin` as `how` says."""
    from patchforge.ledger import BROUGHT_BACK

    detail = how + (f"; set aside as {aside}" if aside != file_name else "")
    return {"event": BROUGHT_BACK, "upstream": upstream, "patch": file_name,
            "to": {"label": pin.label, "commit": pin.commit}, "detail": detail,
            "destination": "series"}


@contextmanager
def _all_or_nothing(project: Project, upstream: str, paths: list[Path], *, finish: str):
    """Run the block's writes of `paths` (in the order it writes them; the series' history
    and ledger, which `series_changed` writes, come last, after `paths`, unless `paths` places
    them), with the project held for writing (`fsutil.writing_project`), all or not at all
    when it fails: each file it changed is put back (fsutil.put_back_on_failure, whose
    PartlyWritten names a file that cannot go back, with `finish` as the way on). A kill
    cannot be undone; a command's order of writes is chosen so that a kill loses nothing,
    and running it again (`finish`) finishes it."""
    from patchforge.ledger import history_path, ledger_path

    with writing_project(project.root), put_back_on_failure(
            [*paths, history_path(project), ledger_path(project)], finish=finish):
        yield


def bring_back_abort(project, upstream: str | None = None) -> dict:
    """`bring-back --abort`: the worktree goes, the fix stays in skipped/ as it was."""
    upstream, state = _bringing_back(project, upstream)
    skipped = _skipped_path(project, upstream, state)
    with RepoLock(project.state_dir):
        kept = keep_unadded(project, upstream)  # files made there that nobody added
        resolution = keep_resolution(project, upstream)  # the hand resolution so far
        close_worktree(project, upstream)
    return {"upstream": upstream, "name": skipped.name,
            "path": skipped.relative_to(project.root).as_posix(), "left_behind": kept,
            "resolution_kept": resolution}
