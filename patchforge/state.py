"""The state of a project, per upstream, and what each command may do in each state.

Per upstream, a project is:
- `idle`: nothing open;
- `editing NAME`: an `edit` (or `new`) worktree is open on NAME under `.patchforge/work/<upstream>`;
- `stopped at NAME`: a rebase stopped on NAME (a conflict, a file gone upstream, a broken
  invariant, an unsure judgement) and waits in `.patchforge/work/<upstream>` for the user;
- `rebasing`: a rebase of this upstream is in progress but not stopped on a patch (it was
  interrupted or killed while it ran, or is stopped on another upstream of the same run);
- `bringing back NAME`: `bring-back NAME` stopped on a conflict (or another stop) and waits in
  `.patchforge/work/<upstream>` for the user; the fix stays in skipped/ until
  `bring-back --continue` puts the resolution at the end of the series (`--abort` gives up).

The rebase journal (`.patchforge/rebase/journal.json`) and the editing state files
(`.patchforge/work/<upstream>.json`) are the only sources; this module reads them and never
writes. `COMMANDS` is the one table of what each command may do in each state; `require()`
refuses the rest (exit 2, with the next step to take) and `state_report()` is what read-only
commands say about a stop or an open edit.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from patchforge.errors import InProgressError, PatchforgeError
from patchforge.fsutil import parse_json
from patchforge.model.record import record
from patchforge.model.words import counted

if TYPE_CHECKING:
    from patchforge.project import Project

IDLE, EDITING, STOPPED, REBASING, BRINGING = \
    "idle", "editing", "stopped", "rebasing", "bringing-back"

# What a command may do in each state: "yes"; "refreshed" (only when the open edit has nothing
# that is not refreshed: the edit is then derived state, and the command may close it); absent:
# refused. Read-only commands (status, list, show, lint, overlays --check, verify, check, pr
# without --push/--open, export) are allowed everywhere and announce a stop or an open edit.
COMMANDS: dict[str, dict[str, str]] = {
    "new": {IDLE: "yes", EDITING: "refreshed"},
    "edit": {IDLE: "yes", EDITING: "refreshed"},
    "refresh": {EDITING: "yes"},
    "edit --close": {EDITING: "refreshed"},
    "edit --close --discard": {EDITING: "yes"},
    "delete": {IDLE: "yes", EDITING: "refreshed"},
    # A fix kept under upstreamed/ given a served base: no edit reads it; a stopped rebase or
    # bring-back may be moving it.
    "refresh --base": {IDLE: "yes", EDITING: "yes"},
    "rename": {IDLE: "yes", EDITING: "yes"},
    "move": {IDLE: "yes", EDITING: "refreshed"},
    "import": {IDLE: "yes", EDITING: "yes"},
    # It rewrites and reorders patches as `move` does, so an open edit must be refreshed first.
    "import quilt --update": {IDLE: "yes", EDITING: "refreshed"},
    "bring-back": {IDLE: "yes", EDITING: "refreshed"},
    "bring-back --continue": {BRINGING: "yes"},
    "bring-back --abort": {BRINGING: "yes"},
    "upstream pin": {IDLE: "yes"},
    "overlays": {IDLE: "yes", EDITING: "yes", BRINGING: "yes"},
    # The ledger of the series a stopped rebase is leaving would be committed as if the move
    # were done, and the rebase writes the new series' at its end: as `overlays`.
    "ledger": {IDLE: "yes", EDITING: "yes", BRINGING: "yes"},
    "pr --push": {IDLE: "yes", EDITING: "yes", BRINGING: "yes"},
    "rebase --to": {IDLE: "yes", EDITING: "refreshed"},
    "rebase --continue": {STOPPED: "yes", REBASING: "yes"},
    "rebase --skip": {STOPPED: "yes"},
    "rebase --abort": {STOPPED: "yes", REBASING: "yes"},
}


@record(frozen=True)
class UpstreamState:
    upstream: str
    kind: str  # idle | editing | stopped | rebasing | bringing-back
    patch: str | None = None  # the edited patch, or the one the rebase stopped at
    worktree: Path | None = None
    detail: str = ""  # for a stop: its message; for a rebase in progress: its phase
    progress: str = ""  # for a stop: how far the rebase got, and from which pin to which
    # For an edit of a patch that did not apply: its files that still hold a block `edit`
    # marked (refresh refuses while one is left, so "refresh" is no next step then).
    marked: tuple[str, ...] = ()
    # Another upstream has an edit (or a stopped bring-back) open too: `refresh` and `edit
    # --close` without NAME cannot tell which is meant and refuse, so the next steps name it.
    several: bool = False
    # The edited patch is no longer in its series (a `git pull` of the stack deleted or renamed
    # it, or a rename was cut short): `refresh` refuses, so it is no next step then.
    unlisted: bool = False
    # The lock pins another commit than the edit was opened on (a `git pull` of a teammate's
    # rebase or re-pin): `refresh` refuses its change, so it is no next step then; this says
    # why and the way on (edit_pin_moved).
    pin_moved: tuple[str, ...] = ()

    def command(self, words: str) -> str:
        """`patchforge WORDS` for this edit: with NAME when several edits are open."""
        return edit_command(words, self.upstream, self.patch or "", self.several)

    def describe(self) -> str:
        where = f" (worktree {self.worktree})" if self.worktree is not None else ""
        if self.kind == EDITING and self.patch is None:
            return f"{self.upstream}: a patch is being edited, but {self.detail}{where}"
        if self.kind == EDITING and self.unlisted:
            return (f"{self.upstream}: {self.patch} is being edited{where}, but it is no longer "
                    "in the series (renamed or deleted since the edit opened)")
        if self.kind == EDITING and self.pin_moved:
            return f"{self.upstream}: {self.patch} is being edited{where}, but {self.pin_moved[0]}"
        if self.kind == EDITING:
            return f"{self.upstream}: {self.patch} is being edited{where}"
        if self.kind == STOPPED:
            why = f": {self.detail}" if self.detail else ""
            progress = f" ({self.progress})" if self.progress else ""
            return f"{self.upstream}: a rebase is stopped at {self.patch}{progress}{why}{where}"
        if self.kind == REBASING:
            return f"{self.upstream}: a rebase is in progress ({self.detail or 'interrupted'})"
        if self.kind == BRINGING:
            why = f": {self.detail}" if self.detail else ""
            return (f"{self.upstream}: bringing back {self.patch} is stopped{why} (the fix "
                    f"stays in skipped/ until it is finished){where}")
        return f"{self.upstream}: idle"

    def next_step(self) -> str:
        if self.kind == EDITING and self.patch is None:
            return UNREADABLE_EDIT_HINT
        if self.kind == EDITING and self.unlisted:
            return unlisted_edit_way_on(self.upstream, self.patch or "", self.worktree,
                                        self.several)
        if self.kind == EDITING and self.pin_moved:
            return (f"`{self.command('refresh')}` refuses its change, made on the old pin: "
                    f"{self.pin_moved[1]}")
        if self.kind == EDITING and self.marked:
            return (f"resolve the blocks `edit` marked in {', '.join(self.marked)} (<<<<<<< ... "
                    f">>>>>>>: {self.patch}'s hunks that did not apply), then "
                    f"`{self.command('refresh')}` writes the change into {self.patch} and ends "
                    "the edit (it refuses while a marker is left); "
                    f"`{self.command('edit --close --discard')}` ends it without the change")
        if self.kind == EDITING:
            # refresh closes the edit itself: a `edit --close` after it was refused.
            return (f"`{self.command('refresh')}` writes the change into {self.patch} and ends "
                    f"the edit; `{self.command('edit --close --discard')}` ends it without the "
                    "change")
        if self.kind == STOPPED:
            return ("fix the files in the worktree, then `patchforge rebase --continue`; or "
                    "`patchforge rebase --skip` (the patch is kept in skipped/) or "
                    "`patchforge rebase --abort`")
        if self.kind == REBASING:
            return "`patchforge rebase --continue` finishes it, `patchforge rebase --abort` undoes it"
        if self.kind == BRINGING:
            return ("fix the files in the worktree, then `patchforge bring-back --continue`; "
                    "or `patchforge bring-back --abort` (the fix stays in skipped/)")
        return ""


def regenerate_overlays_advice(project: Project) -> str:
    """What a check finding overlays/ out of step says to do: `patchforge overlays` and a
    commit; while a rebase is stopped or in progress, which refuses `overlays`, to run it
    once the rebase ends (the advice alone led to that refusal)."""
    for state in read_states(project).values():
        if COMMANDS["overlays"].get(state.kind) == "yes":
            continue
        ends = rebase_ways_on(state.kind)
        return (f"`patchforge overlays` is refused while the rebase of {state.upstream} is "
                f"{'stopped' if state.kind == STOPPED else 'in progress'}: once it ends "
                f"({ends}), run `patchforge overlays` and commit the result")
    return "run `patchforge overlays` and commit the result"


def rebase_ways_on(kind: str) -> str:
    """The commands that go on from a rebase in progress: `--skip` only where it is stopped on
    a patch (cut short in its walk, `--skip` is refused: "nothing to skip")."""
    return ("`patchforge rebase --continue`, `--skip` or `--abort`" if kind == STOPPED
            else "`patchforge rebase --continue` or `--abort`")


def rebase_in_progress_ways_on(project: Project) -> str:
    """rebase_ways_on for the project's rebase journal: stopped on a patch of any upstream, or
    cut short (interrupted, or in its write-out)."""
    states = read_states(project).values()
    return rebase_ways_on(STOPPED if any(s.kind == STOPPED for s in states) else REBASING)


def edit_command(words: str, upstream: str, patch: str, several: bool) -> str:
    """`patchforge refresh` (WORDS) for the edit of UPSTREAM's PATCH, or, when `several` edits
    are open (in other upstreams), `patchforge refresh UPSTREAM/NAME`: without NAME the
    command refuses them all as ambiguous."""
    if not several:
        return f"patchforge {words}"
    stem = patch[:-len(".patch")] if patch.endswith(".patch") else patch
    return f"patchforge {words} {upstream}/{stem}"


def unlisted_edit_way_on(upstream: str, patch: str, worktree: Path | None,
                         several: bool) -> str:
    """The ways on from an edit whose patch left the series while it was open (a `git pull` of
    the stack deleted or renamed it): `refresh` has no patch to write into, and `edit --close`
    refuses a change that is not refreshed, so naming either left `--discard` as the only way
    out, which throws the change away. A rename is followed by running it here (the edit goes
    to the new name with its change); a deleted fix's change is copied out first."""
    stem = patch[:-len(".patch")] if patch.endswith(".patch") else patch
    where = f" of {worktree}" if worktree is not None else ""
    return (f"if it was renamed, `patchforge rename {upstream}/{stem} NEW` (NEW its name now) "
            f"takes this edit to NEW with its change, then "
            f"`{edit_command('refresh', upstream, 'NEW', several)}`; "
            f"if it was deleted, copy what you changed out{where}, then "
            f"`{edit_command('edit --close --discard', upstream, patch, several)}` "
            "(`edit --close` alone refuses while a change is not refreshed)")


def edit_pin_moved(project: Project, upstream: str, edit: dict,
                   several: bool) -> tuple[str, ...]:
    """For an open edit (`edit`, its state) made on another commit than upstream.lock pins now
    (a `git pull` of a teammate's rebase or re-pin moved the pin under it): why `refresh`
    refuses its change (worktree.refuse_changed_since_edit) and the way on, which `refresh`'s
    own hint gives too: the change copied out, the edit ended and opened again on the new pin,
    the change made again. () otherwise, and for an edit that did not record its pin or a lock
    that cannot be read (the command reading it says why)."""
    opened = edit.get("pin")
    if not isinstance(opened, str) or edit.get("diff_sha256") is None:
        return ()
    try:
        now = project.lock.pin(upstream).commit
    except PatchforgeError:
        return ()
    if now == opened:
        return ()
    patch = str(edit.get("patch"))
    why = (f"the edit was opened on {opened[:12]}, and upstream.lock pins {now[:12]} now "
           "(moved since: a `git pull` of the stack?)")
    way = (f"copy what you changed out of {project.work_dir(upstream)}, then "
           f"`{edit_command('edit --close --discard', upstream, patch, several)}`, "
           f"`patchforge edit {project.patch_word(upstream, patch)}` (made on the pin now), "
           f"make the change again and `{edit_command('refresh', upstream, patch, several)}`")
    return why, way


def several_edits_open(project: Project) -> bool:
    """Whether more than one upstream has an edit (or a stopped bring-back) open: its state
    file is there. Cheap (a stat per upstream), for the messages that name a next step."""
    work = project.state_dir / "work"
    if not work.is_dir():
        return False
    return sum(1 for u in project.upstream_names() if editing_path(project, u).exists()) > 1


# The way out of an edit whose state file cannot be read.
UNREADABLE_EDIT_HINT = ("`patchforge edit --close --discard` ends the edit (`... --discard NAME`, "
                        "NAME a patch of its upstream, when several are open; copy anything you "
                        "still need out of its worktree first)")


def readable_edit(state: object) -> bool:
    """Whether an open edit's state (.patchforge/work/<upstream>.json, parsed) can be acted
    on: an object naming a patch a series can hold and the commit its worktree started from.
    One rule for the state table and for the commands (worktree.editing): a state the
    commands refuse must count as unreadable here, or `edit --close --discard`, its way out,
    would refuse it too."""
    from patchforge.names import check_patch_name

    if not (isinstance(state, dict) and isinstance(state.get("base"), str)):
        return False
    try:
        check_patch_name(state.get("patch"))
    except ValueError:
        return False
    return True


def journal_path(project: Project) -> Path:
    return project.state_dir / "rebase" / "journal.json"


def editing_path(project: Project, upstream: str) -> Path:
    return project.state_dir / "work" / f"{upstream}.json"


def _read_journal(project: Project) -> dict | None:
    path = journal_path(project)
    try:
        data = parse_json(path.read_bytes())
    except (FileNotFoundError, NotADirectoryError):
        # (NotADirectoryError: .patchforge/ or its rebase/ is a file, where no journal can be:
        # it was "a rebase in progress (journal unreadable)".)
        return None
    except (OSError, ValueError):
        return {"unreadable": True}
    return data if isinstance(data, dict) else {"unreadable": True}


def _progress(entry: object) -> str:
    """"patch 3 of 7, 0.32.0 -> 0.33.0" from a journal's entry for the stopped upstream, as
    `git status` says how far a rebase got; "" where the entry does not say (the journal's
    own reader refuses a malformed one where it matters)."""
    if not isinstance(entry, dict):
        return ""
    names, position = entry.get("names"), entry.get("position")
    old_pin, new_pin = entry.get("from"), entry.get("to")
    if not (isinstance(old_pin, dict) and isinstance(new_pin, dict)):
        return ""
    old, new = old_pin.get("label"), new_pin.get("label")
    if not (isinstance(names, list) and isinstance(position, int)
            and 0 <= position < len(names) and isinstance(old, str) and isinstance(new, str)):
        return ""
    return f"patch {position + 1} of {len(names)}, {old} -> {new}"


def _left_the_series(project: Project, upstream: str, patch) -> bool:
    """Whether the edited `patch` is no longer listed in `upstream`'s series; False when the
    series cannot be read (the command reading it says why)."""
    try:
        return str(patch) not in project.patch_names(upstream)
    except PatchforgeError:
        return False


def read_states(project: Project) -> dict[str, UpstreamState]:
    """The state of every configured upstream (and of any upstream a rebase journal names)."""
    states: dict[str, UpstreamState] = {}
    edits: dict[str, dict] = {}  # the open edits' states, by upstream
    journal = _read_journal(project)
    if journal is not None:
        stopped = journal.get("stopped") or {}
        phase = "journal unreadable" if journal.get("unreadable") else \
            ("writing out its result" if journal.get("phase") == "committing"
             else ("stopped on another upstream" if stopped else "interrupted"))
        names = journal.get("order") or list(journal.get("upstreams") or {})
        if journal.get("unreadable"):
            names = project.upstream_names()
        for upstream in names:
            if stopped.get("upstream") == upstream:
                states[upstream] = UpstreamState(
                    upstream, STOPPED, stopped.get("name"), project.work_dir(upstream),
                    stopped.get("message") or stopped.get("kind") or "",
                    _progress((journal.get("upstreams") or {}).get(upstream)))
            else:
                states[upstream] = UpstreamState(upstream, REBASING, detail=phase)
    for upstream in project.upstream_names():
        if upstream in states:
            continue
        path = editing_path(project, upstream)
        try:
            edit = parse_json(path.read_bytes())
        except FileNotFoundError:
            edit = None
        except (OSError, ValueError):
            edit = {}
        if edit is not None and not readable_edit(edit):
            # An edit is open, but its state file cannot be read: never taken for idle (a
            # rebase or a new edit would take its worktree); `edit --close --discard` ends it.
            states[upstream] = UpstreamState(upstream, EDITING, None, project.work_dir(upstream),
                                             f"its state file {path} cannot be read")
        elif isinstance(edit, dict) and edit.get("bring_back"):
            states[upstream] = UpstreamState(upstream, BRINGING, edit["patch"],
                                             project.work_dir(upstream),
                                             str(edit.get("message") or ""))
        elif isinstance(edit, dict) and edit.get("patch"):
            edits[upstream] = edit
            states[upstream] = UpstreamState(upstream, EDITING, edit["patch"],
                                             project.work_dir(upstream),
                                             marked=marked_left(project.work_dir(upstream),
                                                                 edit),
                                             unlisted=_left_the_series(project, upstream,
                                                                       edit["patch"]))
        else:
            states[upstream] = UpstreamState(upstream, IDLE)
    open_ = [u for u, s in states.items() if s.kind in (EDITING, BRINGING) and s.patch]
    if len(open_) > 1:
        from patchforge.model.record import replace

        for upstream in open_:
            states[upstream] = replace(states[upstream], several=True)
    for upstream, state in states.items():
        if state.kind == EDITING and state.patch and not state.unlisted:
            moved = edit_pin_moved(project, upstream, edits[upstream], state.several)
            if moved:
                from patchforge.model.record import replace

                states[upstream] = replace(state, pin_moved=moved)
    return states


def marked_left(work: Path, edit: dict) -> tuple[str, ...]:
    """The files of an open edit (`edit`, its state) that still hold a block `edit` marked
    there for a hunk that did not apply: its marker line names the patch
    (`>>>>>>> NAME hunk #N`, `>>>>>>> NAME`)."""
    conflicts = edit.get("conflicts")
    if not isinstance(conflicts, list):
        return ()
    marker = f">>>>>>> {edit['patch']}".encode()
    left = []
    for rel in conflicts:
        try:
            data = (work / str(rel)).read_bytes()
        except OSError:
            continue
        if any(line == marker or line.startswith(marker + b" hunk #")
               for line in data.splitlines()):
            left.append(str(rel))
    return tuple(left)


def require(project: Project, command: str, upstreams, *,
            unrefreshed=None) -> dict[str, UpstreamState]:
    """Refuse `command` (InProgressError, exit 2, with the next step) unless every upstream it
    works on is in a state the command may act in. `unrefreshed(upstream, state)` says whether
    an open edit holds changes not refreshed (needed where the table says "refreshed").
    Returns the states, for the command to act on (e.g. close a refreshed edit)."""
    from patchforge.fsutil import refuse_linked_state

    refuse_linked_state(project.state_dir)  # every command that writes asks here first
    allowed = COMMANDS[command]
    states = read_states(project)
    for upstream in upstreams:
        state = states.get(upstream) or UpstreamState(upstream, IDLE)
        verdict = allowed.get(state.kind)
        if verdict == "yes":
            continue
        if verdict == "refreshed":
            if unrefreshed is None or not unrefreshed(upstream, state):
                continue
            ways = (f"`{state.command('refresh')}` first (or "
                    f"`{state.command('edit --close --discard')}` to throw the changes away)")
            if state.pin_moved:
                # refresh refuses a change made on the old pin: "refresh first" sent the user
                # to that refusal.
                hint = state.next_step()
            elif state.marked:
                # refresh refuses while a marker is left: saying "refresh first" sent the user
                # to a second refusal.
                hint = (f"resolve the blocks `edit` marked in {', '.join(state.marked)} "
                        f"(<<<<<<< ... >>>>>>>), then {ways}")
            else:
                hint = ways
            raise InProgressError(
                f"`{command}` refused: {state.describe()} and has changes that are not refreshed",
                hint=hint)
        if state.kind == IDLE:
            hint = {"refresh": "`patchforge edit NAME` opens a patch for editing",
                    "edit --close": "nothing is being edited"}.get(
                command, "no rebase is in progress")
            raise InProgressError(f"`{command}` refused: {state.describe()}", hint=hint)
        raise InProgressError(f"`{command}` refused: {state.describe()}", hint=state.next_step())
    if command not in ("rebase --continue", "rebase --abort"):
        refuse_beside_cut_short_write_out(project, command)
    return states


def cut_short_write_out(project: Project) -> tuple[Path, list[str]] | None:
    """The journal of a rebase cut short while writing out its result (phase "committing")
    and the upstreams it moves; None when there is none (no rebase, or one stopped or
    interrupted before its write-out, which has touched no project file yet)."""
    journal = _read_journal(project)
    if journal is None or journal.get("unreadable") or journal.get("phase") != "committing":
        return None
    names = journal.get("order") or list(journal.get("upstreams") or {})
    return journal_path(project), [str(name) for name in names]


def write_out_removes(project: Project) -> dict[str, str | None]:
    """The project files (paths from the root) that the plan of a rebase cut short while
    writing out its result (phase "committing") removes, each with the path the plan writes
    the same file name to in the same series directory (a landed fix's upstreamed/ copy, a
    fix set aside in skipped/), or None. Empty when no such write-out stands or its journal
    does not read: `rebase --continue` takes each of these files away, `--abort` lists it
    again, so neither "list it" nor "move it to deleted/" is the way on for them."""
    journal = _read_journal(project)
    if journal is None or journal.get("unreadable") or journal.get("phase") != "committing" \
            or not isinstance(journal.get("plan"), list):
        return {}
    steps = [step for step in journal["plan"]
             if isinstance(step, dict) and isinstance(step.get("path"), str)]
    written = [step["path"] for step in steps
               if any(step.get(key) is not None for key in ("staged", "inline", "temp"))]
    removed: dict[str, str | None] = {}
    for step in steps:
        path = step["path"]
        if path in written:
            continue
        folder, _, name = path.rpartition("/")
        removed[path] = next((other for other in written if other.rpartition("/")[2] == name
                              and other.rpartition("/")[0].startswith(folder + "/")), None)
    return removed


def refuse_beside_cut_short_write_out(project: Project, command: str) -> None:
    """Refuse `command` (InProgressError, exit 2, before anything is written), whichever
    upstream it works on, while a rebase's write-out is cut short: upstream.lock, the history
    and the ledger are every upstream's, the write-out rewrites them whole, and `rebase
    --abort` puts back the copies it kept of them before it began, which would take this
    command's change (a pin, a rename's or a delete's event) away with the rebase's, and
    `--continue` would rename its new upstream.lock over this command's."""
    found = cut_short_write_out(project)
    if found is None:
        return
    path, upstreams = found
    raise InProgressError(
        f"`{command}` refused: the rebase of {', '.join(upstreams)} was cut short while "
        f"writing out its result ({path}), and finishing or undoing it rewrites "
        "upstream.lock, series/history.jsonl and series/PATCHES.md whole, which would take "
        "this command's change away; nothing was written",
        hint="`patchforge rebase --continue` finishes the write-out, `patchforge rebase "
             f"--abort` puts everything back as it was before the rebase; then run "
             f"`patchforge {command}` again")


def refuse_half_written(project: Project, command: str) -> None:
    """Refuse `command` (InProgressError, exit 2) while a rebase's write-out is half done: its
    plan is in the journal (phase "committing") and the project's files, each whole, are part
    the old series and part the new one, which a command handing out the whole series
    (`export`) would hand out as one. Before the write-out (a stop, an interrupted run) the
    files are the old series, untouched; a journal that cannot be read may be either."""
    journal = _read_journal(project)
    if journal is None:
        return
    path = journal_path(project)
    if journal.get("unreadable"):
        why = f"the rebase journal {path} cannot be read, so the series files may be half written"
    elif journal.get("phase") == "committing":
        why = (f"a rebase was cut short while writing out its result ({path}): the series "
               "files are part the old series, part the new one")
    else:
        return
    raise InProgressError(f"`{command}` refused: {why}, and this would hand out that mixture; "
                          "nothing was written",
                          hint="`patchforge rebase --continue` finishes the write-out, "
                               "`patchforge rebase --abort` puts the old series back; then "
                               f"run `patchforge {command}` again")


@record(frozen=True)
class SkippedFix:
    """A fix a rebase set aside (`--skip`, or a resolution to no change): kept under
    series/<upstream>/skipped/ with its last good diff (and the Base it applies to) until it is
    brought back (`patchforge bring-back`) or deleted; needs attention until then."""

    upstream: str
    name: str
    path: Path

    def describe(self, project: Project) -> str:
        rel = self.path.relative_to(project.root).as_posix()
        word = project.skipped_word(self.upstream, self.name)
        try:
            listed = self.name in project.patch_names(self.upstream)
        except PatchforgeError:
            listed = False  # a series that cannot be read is reported by what reads it
        if listed:
            # `delete NAME` cannot tell the two apart (it refuses): the live one is renamed
            # first. A project gets so by hand or by an older version; `new` and `rename`
            # refuse a skipped fix's name. (One in another upstream's series is told apart by
            # UPSTREAM/NAME: `word`.)
            return (f"{self.upstream}/{self.name} was set aside by a rebase ({rel}), and "
                    f"{self.upstream}/{self.name} in the series has the same name; "
                    f"`patchforge bring-back {word}` puts the set-aside one back onto the "
                    f"current base; to drop it, give the one in the series another name first "
                    f"(`patchforge rename {project.patch_word(self.upstream, self.name)} NEW`), "
                    f"then `patchforge delete {word}` drops the set-aside one (kept under "
                    "deleted/)")
        return (f"{self.upstream}/{self.name} was set aside by a rebase ({rel}); "
                f"`patchforge bring-back {word}` puts it back onto the current base, "
                f"`patchforge delete {word}` drops it (kept under deleted/)")


def skipped_notes(project: Project, fixes: list[SkippedFix]) -> list[tuple[SkippedFix, str]]:
    """Each skipped fix with what to say of it: `describe`, or, for the fix whose bring-back is
    stopped, that stop's way on (`bring-back NAME` is refused until it is finished)."""
    try:
        bringing = {(s.upstream, s.patch): s for s in read_states(project).values()
                    if s.kind == BRINGING}
    except PatchforgeError:
        bringing = {}
    notes = []
    for fix in fixes:
        state = bringing.get((fix.upstream, fix.name))
        if state is None:
            notes.append((fix, fix.describe(project)))
        else:
            rel = fix.path.relative_to(project.root).as_posix()
            notes.append((fix, f"{fix.upstream}/{fix.name} was set aside by a rebase ({rel}) "
                               f"and bringing it back is stopped: {state.next_step()}"))
    return notes


def skipped_fixes(project: Project) -> list[SkippedFix]:
    out = []
    for upstream in project.upstream_names():
        directory = project.series_dir(upstream) / "skipped"
        if directory.is_dir():
            out += [SkippedFix(upstream, path.name, path)
                    for path in sorted(directory.glob("*.patch")) if path.is_file()]
    return out


def unlisted_fixes(project: Project) -> list[tuple[str, str, Path]]:
    """(upstream, file name, path) of each patch file in a series directory that its series
    file does not list (a series merged by hand that lost an entry, a file added but never
    listed), or of a series directory that no configured upstream names
    (`unconfigured_series`): the fix is in no overlay and no rebase, though it looks kept. A
    series file that cannot be read is reported by the commands that read it, not here."""
    from patchforge.errors import PatchforgeError

    out = []
    for upstream in project.upstream_names():
        directory = project.series_dir(upstream)
        if not directory.is_dir():
            continue
        try:
            # A series line may name a patch without `.patch`: compare the files they name.
            listed = {project.patch_path(upstream, name).name
                      for name in project.patch_names(upstream)}
        except PatchforgeError:
            continue
        out += [(upstream, path.relative_to(directory).as_posix(), path)
                for path in unlisted_patch_files(directory, listed)]
    for upstream, files in unconfigured_series(project):
        out += [(upstream, path.name, path) for path in files]
    return out


# Where a series directory keeps fixes that are out of its series on purpose (reported as
# such: skipped/ needs attention, upstreamed/ and deleted/ are done with).
ASIDE_DIRECTORIES = ("upstreamed", "skipped", "deleted")


def unlisted_patch_files(directory: Path, listed: set[str]) -> list[Path]:
    """The patch files under a series directory that its series does not list (`listed`: the
    file names it names): NAME.patch beside the series file, and, since a series line names
    only such a file, every other patch-like file there (`extra.diff`, `X.PATCH`, a patch in a
    subdirectory other than the three kept aside): a fix dropped in by hand under such a name
    was never applied, and nothing said so."""
    out = []
    for top, dirs, files in os.walk(directory):
        here = Path(top)
        if here == directory:
            dirs[:] = [d for d in dirs if d not in ASIDE_DIRECTORIES]
        dirs.sort()
        for name in sorted(files):
            path = here / name
            if not name.lower().endswith((".patch", ".diff")) or name.startswith("."):
                continue
            if here == directory and name in listed:
                continue
            if path.is_file():
                out.append(path)
    return out


def unconfigured_series(project: Project) -> list[tuple[str, list[Path]]]:
    """(name, patch files) of each `series/<name>/` holding patch files whose name is no
    configured upstream: an upstream renamed or removed in the configuration by hand (or a
    merge of the stack that lost its table) takes its whole series out of every overlay, status
    and rebase, which would otherwise say "all 0 patches apply" over it."""
    configured = set(project.upstream_names())
    root = project.series_root
    try:
        directories = sorted(root.iterdir()) if root.is_dir() else []
    except OSError:
        return []
    out = []
    for directory in directories:
        if directory.name in configured or directory.is_symlink() or not directory.is_dir():
            continue
        files = sorted(path for path in directory.glob("*.patch") if path.is_file())
        if files:
            out.append((directory.name, files))
    return out


def unconfigured_message(project: Project, name: str, files: list[Path]) -> str:
    names = ", ".join(path.name for path in files[:3]) + (", ..." if len(files) > 3 else "")
    return (f"series/{name}/ holds {counted(len(files), 'patch file')} ({names}) of upstream "
            f"{name!r}, "
            f"which {Path(project.config_path).name} does not configure (renamed or removed?): "
            "they are in no overlay, status or rebase")


def unconfigured_pins(project: Project) -> list[tuple[str, int | None]]:
    """(name, line in upstream.lock) of each pin whose upstream the configuration does not
    name (renamed or removed there by hand, or a lock edited by hand): no command reads it, and
    every write of the lock keeps it as it is. A lock that cannot be read is reported by the
    commands that read it, not here."""
    from patchforge.errors import PatchforgeError
    from patchforge.formats.lockfile import lock_line_of

    try:
        pinned = project.lock.upstreams
        configured = set(project.upstream_names())
    except PatchforgeError:
        return []
    return [(name, lock_line_of(project.lock_path, f"upstreams.{name}"))
            for name in sorted(set(pinned) - configured)]


def unconfigured_pin_message(project: Project, name: str, line: int | None) -> str:
    where = project.lock_path.name + (f":{line}" if line else "")
    return (f"{where}: pins upstream {name!r}, which {Path(project.config_path).name} does not "
            "configure (renamed or removed?): no command uses the pin, and every write of the "
            "lock keeps it; remove its entry if the upstream is gone")


def refuse_unconfigured_series(project: Project) -> None:
    """Refuse (UsageError, exit 2, nothing written) a command whose answer would silently
    leave out the fixes of a series no configured upstream names (`overlays`)."""
    from patchforge.errors import UsageError

    for name, files in unconfigured_series(project):
        raise UsageError(unconfigured_message(project, name, files),
                         hint=f"configure upstream {name!r} again (its table under upstreams), "
                              f"or move series/{name}/ out of series/ if those fixes are dropped")


def stray_files(project: Project, upstream: str) -> list[str]:
    """The files (and links) under `upstream`'s worktree place while no worktree is there
    (none of patchforge's repositories in it): written after the edit ended and its worktree
    was removed, by an editor still open on a file that saved late. They are in no patch;
    the next worktree made there keeps them under .patchforge/left-behind/ before it clears
    the place (worktree.keep_stray)."""
    work = project.work_dir(upstream)
    if not work.is_dir() or work.is_symlink() or (work / ".git" / "info" / "exclude").is_file():
        return []
    return sorted(path.relative_to(work).as_posix() for path in work.rglob("*")
                  if path.is_symlink() or path.is_file())


def state_report(project: Project) -> tuple[list[str], bool, list[SkippedFix]]:
    """One reading of the project's state, for a read-only command's answer: its notes (every
    stop, rebase in progress and open edit, each with the next step, and every skipped fix),
    whether that needs attention (a rebase stopped or in progress, a fix set aside under
    skipped/: exit 1), and the skipped fixes. Read once: a fix set aside between two readings
    (a `rebase --skip` in another terminal) gave an exit status no note explained."""
    lines = []
    states = read_states(project).values()
    skipped = skipped_fixes(project)
    for state in states:
        if state.kind != IDLE:
            lines.append(f"{state.describe()}; next: {state.next_step()}")
            continue
        stray = stray_files(project, state.upstream)
        if stray:
            shown = ", ".join(stray[:3]) + (f" and {len(stray) - 3} more" if len(stray) > 3
                                            else "")
            lines.append(f"{state.upstream}: {project.work_dir(state.upstream)} holds "
                         f"{counted(len(stray), 'file')} written after its edit ended ({shown}), in "
                         "no patch: the next `patchforge edit` or `new` keeps them under "
                         ".patchforge/left-behind/")
    # A fix whose bring-back is stopped is said by that stop: its own note would tell to
    # run the bring-back being finished again.
    bringing = {(s.upstream, s.patch) for s in states if s.kind == BRINGING}
    lines += [fix.describe(project) for fix in skipped
              if (fix.upstream, fix.name) not in bringing]
    busy = any(s.kind in (STOPPED, REBASING, BRINGING) for s in states) or bool(skipped)
    lines += [unconfigured_pin_message(project, name, line)
              for name, line in unconfigured_pins(project)]
    if project.overlays_swap_cut_short:
        lines.append(OVERLAYS_SWAP_CUT_SHORT)
        busy = True
    return lines, busy, skipped


OVERLAYS_SWAP_CUT_SHORT = ("overlays/ is missing: a command replacing it (`overlays`, a rebase's "
                           "write-out) was cut short, and the set before it is in .overlays.old; "
                           "`patchforge overlays` puts it back and makes it again")


def interrupted_report(project: Project, *, only_open: bool = False) -> list[str]:
    """What an interrupted command (Ctrl-C) left behind, and how to go on from it; with
    `only_open`, nothing when nothing is open."""
    try:
        states = read_states(project)
    except Exception:  # noqa: BLE001 - the report must never hide the interruption itself
        return []
    lines = []
    journal = journal_path(project)
    if any(s.kind in (STOPPED, REBASING) for s in states.values()):
        lines.append(f"the rebase journal {journal} records where the rebase stands: "
                     "`patchforge rebase --continue` goes on, `patchforge rebase --abort` "
                     "puts everything back")
    for state in states.values():
        if state.kind in (EDITING, BRINGING):
            lines.append(f"{state.describe()}: {state.next_step()}")
    if not lines and not only_open:
        lines.append("nothing was left half-written (every write is atomic); run the command "
                     "again")
    return lines
