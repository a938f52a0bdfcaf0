"""The rebase transaction: move each upstream's series onto a new revision, patch by patch.

Per patch, in series order, the one judge (`judge.SeriesJudge.judge`, which `status` asks too)
decides: landed (dropped to upstreamed/), applies (re-emitted against the new base: exactly, with
an offset, or through git's 3-way merge, merge base = the old series state before the patch, as
`git rebase` does, upstream renames followed) or stop. A conflict, a file gone upstream, a broken
`Keeps:` invariant or a judgement the checks cannot make (unsure, and the merge changes nothing)
stops the run with a worktree and a journal; `--continue`, `--skip` and `--abort` go on from
there. This module only turns judgements into results, stops and files.

Nothing under the project is written while patches are being moved: results are staged in the
journal. The write-out is the last phase. It first stages every new project file and saves every
file it will replace (and overlays/) in the journal, records its plan, and only then writes; a kill
during the write-out is finished by `--continue` (the plan is replayed) or undone by `--abort`
(the saved files are put back byte for byte).
"""
from __future__ import annotations

import contextlib
import os
import json
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from patchforge.apply.series import SeriesState, apply_series, profile_bases_differ
from patchforge.errors import (ConflictStop, InProgressError, InputError, PatchforgeError,
                               StoreError, UsageError)
from patchforge.background import Background
from patchforge.fsutil import TEMPORARY_NAME, atomic_write_many, fault_point
from patchforge.judge import (AMBIGUOUS_PLACE, BESIDE_OTHERS, DOUBLED, EACH_ROUND,
                              FEWER_PATHS, IN_PLACE_OF, KEY_BESIDE, KEY_TWICE, LAST_IN_JSON,
                              SAME_VALUE, MAYBE_ITS_VALUE, OTHER_FUNCTION,
                              OTHER_VALUE, READ_BETWEEN, READ_IN_A_BRANCH, READ_IN_A_SWITCH,
                              UNDECLARED_CALL,
                              YOURS_EACH_ROUND,
                              HistoryIndex, LazyHistory, SeriesJudge, Target, _patch_paths,
                              carry_moved, carry_old, moved_away, read_history, series_gone,
                              series_renames, where_landed)
from patchforge.model.lock import Lock, UpstreamPin
from patchforge.model.record import field, record
from patchforge.names import shell_quoted_bytes
from patchforge.rebase.journal import (ACTIONS, Blocked, CorruptJournal, Journal, LandedHunks,
                                       PatchResult, PlanStep, RebaseRun, Stop, UpstreamRun,
                                       confined_all)
from patchforge.store.diff import FileChange, StartedDiffs, added_lines, conflict_markers_left

if TYPE_CHECKING:
    from patchforge.formats.patchfile import PatchFile
    from patchforge.project import Project
    from patchforge.store.gitstore import HistoryDiffs, UpstreamStore
    from patchforge.store.rangediff import RangeDiffImport

# The moved patches' new diffs and the landed files' history diffs of each 1/_EARLY_PARTS of
# the series are made by git processes started when the walk has judged it: they run on the
# other core while the walk goes on (its reads ahead are done by then), not all of them after
# the walk, beside the range-diff's objects (three processes on two cores). Fewer than
# _EARLY_MIN patches (files) wait for the end of the walk: a process more is not worth it.
_EARLY_PARTS = 2
_EARLY_MIN = 8
# How long a write-out waits for the commands reading the project (a `status` asking a forge
# is bounded by the network's limits) before it stops, resumable by --continue.
WRITE_OUT_WAIT = 600.0


# The ways on offered by a stop for lines upstream has already (a DOUBLED item of its
# evidence), by what the evidence says of the two copies: the first way that fits is the
# stop's; with none, the edit first (--skip sets the whole fix aside, its changes upstream
# does not have with it).
_DOUBLED_WAYS: tuple[tuple[Callable[[str], bool], str], ...] = (
    # The copies run a different number of times: neither is the other made
    # twice but where the loop runs one round, and taking upstream's out of the
    # loop would lose its rounds: both kept first.
    (lambda item: item.endswith(EACH_ROUND),
     ": keep both (--continue with the worktree as it is: they are the "
     "same work only where the loop runs one round); delete your copy in the "
     "worktree and `patchforge rebase --continue` only if upstream's rounds do "
     "the fix's work; or `patchforge rebase --skip` (sets the WHOLE fix aside "
     "in skipped/, its other changes too)"),
    # The mirror: deleting the fix's copy would lose its rounds.
    (lambda item: item.endswith(YOURS_EACH_ROUND),
     ": keep both (--continue with the worktree as it is: they are the "
     "same work only where the loop runs one round); take upstream's copy out "
     "in the worktree and `patchforge rebase --continue` only if your rounds "
     "do upstream's work; or `patchforge rebase --skip` (sets the WHOLE fix "
     "aside in skipped/, its other changes too)"),
    # The loop between reads what the fix's copy gives it where it is above, not
    # what it gives it below: the way that keeps the fix's first.
    (lambda item: item.endswith(READ_BETWEEN),
     ": keep yours and take upstream's copy out in the worktree (the "
     "loop between reads it as the fix has it), then `patchforge rebase "
     "--continue`; delete your copy only if the loop is to read it as "
     "upstream has it; keep both (--continue with the worktree as it is: it is "
     "then done twice); or `patchforge rebase --skip` (sets the WHOLE fix aside "
     "in skipped/, its other changes too)"),
    # So does a `switch` between (its cases are branches, no rounds).
    (lambda item: item.endswith(READ_IN_A_SWITCH),
     ": keep yours and take upstream's copy out in the worktree (the "
     "switch between reads it as the fix has it), then `patchforge rebase "
     "--continue`; delete your copy only if the switch is to read it as "
     "upstream has it; keep both (--continue with the worktree as it is: it is "
     "then done twice); or `patchforge rebase --skip` (sets the WHOLE fix aside "
     "in skipped/, its other changes too)"),
    # An `if` between reads what the fix's copy gives it where it is above, on the
    # paths through its body; on the others the step is made twice: the way that
    # keeps the fix's first.
    (lambda item: item.endswith(READ_IN_A_BRANCH),
     ": keep yours and take upstream's copy out in the worktree (the if "
     "between reads it as the fix has it), then `patchforge rebase --continue`; "
     "delete your copy only if the if is to read it as upstream has it; keep "
     "both (--continue with the worktree as it is: it is then done twice on "
     "every path); or `patchforge rebase --skip` (sets the WHOLE fix aside in "
     "skipped/, its other changes too)"),
    # A call the file does not declare may step the index between the copies:
    # each then updates another item, and deleting the fix's copy loses its
    # update. Nothing tells it from a read: the way that loses nothing first.
    (lambda item: item.endswith(UNDECLARED_CALL),
     ": keep yours (--continue with the worktree as it is: right where "
     "the call changes the index, each copy updating another item); delete "
     "your copy in the worktree and `patchforge rebase --continue` only if the "
     "call only reads the index (the same item is then updated twice); or "
     "`patchforge rebase --skip` (sets the WHOLE fix aside in skipped/, its "
     "other changes too)"),
    # Deleting the fix's copy loses its line on the paths upstream's does not
    # run: the way that keeps it first.
    (lambda item: item.endswith(FEWER_PATHS),
     ": keep yours and take upstream's copy out in the worktree (on "
     "the paths through both the line is done twice), then `patchforge "
     "rebase --continue`; keep both (--continue with the worktree as it is); "
     "delete your copy only if the fix's line is not wanted where upstream's "
     "does not run; or `patchforge rebase --skip` (sets the WHOLE fix aside in "
     "skipped/, its other changes too)"),
    # Upstream's copy of a list item follows an option it added of no known kind:
    # where that option takes a value, upstream's copy is its value and the fix's an
    # item of its own, which deleting it would lose; where it takes none, the item is
    # made twice. Nothing in the list tells which: the way that loses nothing first.
    (lambda item: f" {MAYBE_ITS_VALUE} (" in item,
     ": keep yours (--continue with the worktree as it is: where that option "
     "takes a value, upstream's copy is its value and yours an item of its own); "
     "delete your copy in the worktree and `patchforge rebase --continue` only "
     "if the option takes no value (the same item is then there twice); or "
     "`patchforge rebase --skip` (sets the WHOLE fix aside in skipped/, its "
     "other changes too)"),
    # A key the fix gives a JSON object as its last entry, a comma added to the entry
    # above it: deleting the fix's entry alone leaves that comma, which JSON does not
    # take. Taking upstream's entry out (a comma follows it) leaves valid JSON.
    (lambda item: f" {KEY_TWICE}, {SAME_VALUE} (" in item and
     item.endswith(f", {LAST_IN_JSON}"),
     ": take upstream's entry out in the worktree (yours is its object's last "
     "entry: deleting yours alone would leave the comma before it, which JSON "
     "does not take), or delete yours together with the comma the line before "
     "it ends with, and `patchforge rebase --continue`; keep yours (--continue "
     "with the worktree as it is: the object has the key twice); or `patchforge "
     "rebase --skip` (sets the WHOLE fix aside in skipped/, its other changes "
     "too)"),
    (lambda item: f" {KEY_TWICE}, {OTHER_VALUE} (" in item and
     item.endswith(f", {LAST_IN_JSON}"),
     ": the dict keeps one value per key: take upstream's entry out in the "
     "worktree to keep yours, or your entry together with the comma the line "
     "before it ends with (JSON takes none after an object's last entry) to "
     "take upstream's value, and `patchforge rebase --continue`; or `patchforge "
     "rebase --skip` (sets the WHOLE fix aside in skipped/, its other changes "
     "too)"),
    # The same key and value where the fix's line holds other entries: deleting the
    # line would lose them; taking that entry alone out loses nothing.
    (lambda item: f" {KEY_TWICE}, {SAME_VALUE} (" in item and f", {KEY_BESIDE} (" in item,
     ": take only that entry out of your line in the worktree, keeping the "
     "entries beside it, and `patchforge rebase --continue`; keep yours "
     "(--continue with the worktree as it is: the dict has the key twice); or "
     "`patchforge rebase --skip` (sets the WHOLE fix aside in skipped/, its "
     "other changes too)"),
    # A key the fix gives a dict that upstream gave it with another value: the dict
    # keeps one, the later line's, and the worktree as it is loses the other silently.
    # Each way keeps one value, the one the user picks; the stop has said both.
    (lambda item: f" {KEY_TWICE}, {OTHER_VALUE} (" in item,
     ": the dict keeps one value per key: take your entry out in the worktree "
     "to take upstream's value, or upstream's entry to keep yours, and "
     "`patchforge rebase --continue`; or `patchforge rebase --skip` (sets the "
     "WHOLE fix aside in skipped/, its other changes too)"),
    # A list item made twice whose copy upstream wrote in place of a base item it
    # took out, beside a new item of the fix's: a list of pairs (upstream gave a base
    # key the fix's value) wants both values, and deleting the fix's copy or taking
    # it out of its line loses its pair's; a list of names (a base name renamed to
    # the fix's) holds the name twice. The list does not tell which: the way that
    # loses nothing first, each way saying its case.
    (lambda item: f" {IN_PLACE_OF} " in item,
     ": keep yours (--continue with the worktree as it is: the item stays twice, "
     "each beside its own items) where the list holds pairs, each value its key's, "
     "both wanted; take only that item out of your line(s) in the worktree, "
     "keeping the items beside it, and `patchforge rebase --continue` only where "
     "the list holds names (upstream renamed the base's item to yours: the same "
     "name made twice); or `patchforge rebase --skip` (sets the WHOLE fix aside "
     "in skipped/, its other changes too)"),
    # A list item made twice whose copy stands beside other items than
    # upstream's: deleting the fix's line(s) would lose them (another name on its
    # line, a pair's key). Taking the item alone out loses nothing of a list of
    # names (an arch table extended on both sides, the likelier), where keeping
    # yours leaves the name twice; a list of pairs wants both values, and the
    # list does not tell which: the way for names first, each way saying its case.
    (lambda item: f" {BESIDE_OTHERS} (" in item,
     ": take only that item out of your line(s) in the worktree, "
     "keeping the items beside it, and `patchforge rebase --continue` (a list "
     "of names: the same name made twice); keep yours (--continue with the "
     "worktree as it is: the item stays twice, each beside its own items) "
     "where the list holds pairs, each value its key's, both wanted; or "
     "`patchforge rebase --skip` (sets the WHOLE fix aside in skipped/, its "
     "other changes too)"),
)
_DOUBLED_EDIT_FIRST = (
    ": delete your copy of these lines in the worktree and `patchforge "
    "rebase --continue` (the fix's other changes are kept), keep yours "
    "(--continue with the worktree as it is: the file has them twice), or "
    "`patchforge rebase --skip` (sets the WHOLE fix aside in skipped/, its "
    "other changes too)"
)


def _ways_for_a_doubling(evidence: list[str]) -> str | None:
    """The ways on for a stop whose evidence holds a DOUBLED item (_DOUBLED_WAYS), or None."""
    doubled = [item for item in evidence if item.startswith(DOUBLED)]
    if not doubled:
        return None
    return next((ways for fits, ways in _DOUBLED_WAYS if any(fits(item) for item in doubled)),
                _DOUBLED_EDIT_FIRST)


@record
class _Resumed:
    """Where a resumed stop left an upstream: the stop's two states as store commits (`base`:
    the new base with the series so far; `old_base`: the old series through the stopped
    patch) and the files the resolution changed."""
    base: str
    old_base: str
    changes: dict[str, bytes | None]
    modes: dict[str, str] = field(default_factory=dict)  # the modes the resolution gave


def _shown(path: str) -> str:
    """overlay.shown_name, whose module (it loads shutil) an ASCII name does not need."""
    if path.isascii():
        return path
    from patchforge.overlay import shown_name

    return shown_name(path)


def _said_path(path: str) -> str:
    """A path in a hint, as a shell takes it back: quoted where it holds a space or another
    character the shell reads (shlex.quote: `'pkg/a b.py'`); a name that is not UTF-8 in the
    $'...' quotes bash, zsh and ksh read back byte for byte (names.shell_quoted_bytes), as
    the stop's error line says it."""
    quoted = shell_quoted_bytes(path)
    if quoted is not None:
        return quoted
    import shlex  # (only a stop says a path: a clean rebase does not load it)

    return shlex.quote(path)


def _reads(store: UpstreamStore, commit: str):
    return lambda paths: store.read_blobs(commit, paths)


class Rebase:
    """One rebase run over the journal; the CLI drives start / resume / abort."""

    def __init__(self, project: Project, store: UpstreamStore, *, on_patch=None,
                 on_wait_for_readers=None) -> None:
        self.project = project
        self.store = store
        self.journal = Journal(project.state_dir, project.root)
        self._deferred: list = []  # (staged rel, patch, changes) whose diff is not made yet
        # The git processes making the deferred patches' diffs, in order: (how many of them
        # each makes, the process); the deferred patches after the last have none yet.
        self._diff_batches: list[tuple[int, StartedDiffs]] = []
        self._batched = 0
        # (result, patch, verdict, target, a commit the verdict holds at) of landed patches
        # whose landing commit is not looked up yet (`_find_landings`)
        self._landings: list = []
        self._histories: dict = {}  # upstream -> judge.HistoryIndex, read once
        # upstream -> the own-place diffs its walk made (PlaceDiffs.pairs_made), which the
        # landing lookup's probes take rather than diffing a pair again
        self._pairs_made: dict[str, dict] = {}
        # The landed patches' files whose history diffs no git process reads yet (upstream ->
        # paths), those asked for (upstream -> paths), and the processes reading them, started
        # while the walk went on: [(HistoryIndex, paths, HistoryDiffs)]
        self._landed_unasked: dict[str, set[str]] = {}
        self._landed_asked: dict[str, set[str]] = {}
        self._landing_reads: list[tuple[HistoryIndex, list[str], HistoryDiffs]] = []
        self._read_patches: dict = {}  # (upstream, name) -> PatchFile of the old series
        # (upstream, name) -> the bytes a dropped patch is kept under upstreamed/ with, when
        # no journal holds them (a dry run stages nothing)
        self._aside_bytes: dict[tuple[str, str], bytes] = {}
        # (upstream, destination, name, bytes) -> the free name _free_name gave them
        self._free_names: dict[tuple[str, str, str, bytes], str] = {}
        self._gone_asked: dict[str, list[str]] = {}
        # upstream -> _Chains of this run, None when it was resumed
        self._chains: dict[str, _Chains | None] = {}
        # The range-diff's pairs git's diffs can show exact (RangeDiffImport.start): per
        # upstream the patches moved with their hunks as they were, and the hunks of every
        # pair of contents the new diffs made ((old blob id, new blob id) -> hunks)
        self._moved_exactly: dict[str, set[str]] = {}
        self._made_hunks: dict[tuple[str, str], bytes] = {}
        self._asked: list[tuple[str, bytes, bytes]] = []  # pairs the next batch diffs too
        self._resumed: dict[str, _Resumed] = {}  # upstream -> where a resumed stop left it
        self._worktree_opened = False  # a stop's worktree was (re)made by this process
        # (directory, files) of what --skip or --abort copied from a worktree before it went:
        # files made there that nobody added (`_keep_unadded`); the CLI says where they are.
        self.left_behind: list[tuple[Path, list[str]]] = []
        # (directory, files) of a hand resolution --abort copied from a stop's worktree before
        # it went (`_forget`); the CLI says where.
        self.resolutions_kept: list[tuple[Path, list[str]]] = []
        # What --continue's resolution keeps of the patch's side over upstream's change of the
        # same lines (`resolution_keeps_patch_over`): the CLI says it at once, the next patch
        # may stop before the summary says it.
        self.kept_over: list[str] = []
        # Called with (upstream, patch name) before each patch: the CLI's progress indicator.
        self.on_patch = on_patch or (lambda upstream, name: None)
        # Called once when the write-out (or --abort's restore) waits for commands reading the
        # project: the CLI says so, as the readers say they wait for it.
        self.on_wait_for_readers = on_wait_for_readers or (lambda: None)

    # --- entry points -------------------------------------------------------------------------
    def start(self, specs: dict[str, str], *, dry_run: bool = False,
              pins: dict[str, UpstreamPin] | None = None) -> dict:
        """Move each upstream in `specs` to what its SPEC names; `pins` may give the resolved
        pin of an upstream instead (a caller that resolved the SPEC itself, as `bump` does
        through the registry), so it is not resolved twice."""
        from patchforge.pins import ensure_pinned, pin_for_spec
        from patchforge.stack import (refuse_converted_line_ends, refuse_linked_overlays,
                                      refuse_symlinked_paths, require_readable_history)

        if self.journal.exists():
            from patchforge.state import rebase_in_progress_ways_on

            raise InProgressError("a rebase is in progress",
                                  hint=f"run {rebase_in_progress_ways_on(self.project)}")
        unknown = set(specs) - set(self.project.upstream_names())
        if unknown:
            raise UsageError(f"unknown upstream{'s' if len(unknown) > 1 else ''}: "
                             f"{', '.join(sorted(unknown))}")
        if not dry_run:
            from patchforge.state import require

            # A stopped bring-back waits on the series as it is (an open edit is looked at
            # below: a refreshed one is closed, one with unrefreshed changes refused).
            require(self.project, "rebase --to", list(specs), unrefreshed=lambda *_: False)
        if not dry_run:
            refuse_linked_overlays(self.project)  # before the journal, not at its write-out
            # The write-out records the run in the ledger's history: a damaged line found
            # there would leave the series and lock rewritten and a rebase half-written.
            require_readable_history(self.project)
            if self.project.makes_overlays:
                from patchforge.overlay import refuse_changed_by_hand

                # An overlay file edited by hand is refused now, while the `import overlay`
                # the message names works: found only at the write-out, after a stop was
                # resolved, the import was refused (the series is being rebased). The
                # write-out still looks, for a file edited while the rebase runs or stops.
                refuse_changed_by_hand(self.project, None)
        lock = self.project.lock
        plan = {}
        for upstream in self.project.upstream_names():
            if upstream not in specs:
                continue
            # The editing state lives under .patchforge/work/: without that directory nothing
            # is being edited, and the series module need not be loaded.
            state = None
            if (self.project.state_dir / "work").is_dir():
                from patchforge.worktree import close_worktree, editing, unrefreshed

                state = editing(self.project, upstream)
            if not dry_run and state:
                # The worktree's base commit was made on the pin (a new cache gets it back,
                # open_store), and may name the pin's own trees and files: with the cache
                # emptied since, they come in first, or the base read as an unknown revision.
                from patchforge.pins import bring_missing_pins

                bring_missing_pins(self.project, self.store, [upstream])
                if unrefreshed(self.project, self.store, upstream, state):
                    from patchforge.state import edit_command, marked_left, several_edits_open

                    # refresh refuses while a block `edit` marked is left: resolved first.
                    marked = marked_left(self.project.work_dir(upstream), state)
                    several = several_edits_open(self.project)
                    raise InProgressError(
                        f"{upstream}/{state['patch']} is being edited in "
                        f"{self.project.work_dir(upstream)} and has changes not refreshed",
                        hint=(f"resolve the blocks `edit` marked in {', '.join(marked)} "
                              "(<<<<<<< ... >>>>>>>), then " if marked else "")
                        + f"`{edit_command('refresh', upstream, state['patch'], several)}` "
                          "before rebasing, or throw the change away with `"
                        + edit_command("edit --close --discard", upstream, state["patch"],
                                       several) + "`")
                # Everything in the worktree is in the patch already: it is derived state,
                # and the rebase needs the place for its own stops.
                close_worktree(self.project, upstream)
            old = lock.pin(upstream)
            ensure_pinned(self.project, self.store, upstream, old)
            config = self.project.config.upstream(upstream)
            given = (pins or {}).get(upstream)
            # A git upstream's target is resolved on a second thread while the series is
            # parsed: a tag is checked against the remote (`git ls-remote`: 5-10 ms on a local
            # mirror, a round trip to a server), a wait the parse can fill. Not a wheel's: its
            # resolution may download and import for minutes, its progress on the terminal.
            resolving = None
            if given is None and config.kind == "git":
                resolving = Background(pin_for_spec, self.project, self.store, config,
                                       specs[upstream])
            elif given is None:
                given = pin_for_spec(self.project, self.store, config, specs[upstream])
            with resolving or contextlib.nullcontext():
                names = self.project.patch_names(upstream)
                series = []
                try:
                    for name in names:
                        patch = self._old_patch(upstream, name)
                        series.append((name, patch))
                        # The trees of its files, which the refusal below and the presence
                        # check read, are read by git while the rest are parsed: the two
                        # rounds of requests waited 2-3 ms for git at 30 patches.
                        self.store.read_trees_ahead([old.commit], patch.paths)
                except BaseException:
                    if resolving is not None:
                        resolving.result()  # its error first, as when it came before the parse
                    raise
                new = given if resolving is None else resolving.result()
                assert new is not None  # given, or resolved (result() raises otherwise)
            refuse_converted_line_ends(
                self.store, old.commit,
                [(self.project.patch_rel(upstream, name), patch) for name, patch in series],
                then="rebase")
            self.store.read_trees_ahead([new.commit], [path for _, patch in series
                                                       for path in patch.paths])
            refuse_symlinked_paths(self.store, new.commit, series,
                                   target=new.label if new.commit != old.commit else None)
            if not dry_run and self.project.makes_overlays:
                self._refuse_deletions_kept(upstream, series, old, new)
            # Which of the series' files a partial store lacks is asked of git now, while the
            # journal is written; the walk's prefetch takes the answer (and fetches).
            paths = list(dict.fromkeys(p for _, patch in series for p in patch.paths))
            self.store.start_presence_check([(old.commit, paths), (new.commit, paths)])
            plan[upstream] = UpstreamRun(old, new, names, digests={} if dry_run else
                                         self._series_digests(upstream, names, read=True))
        self.journal.run = RebaseRun(plan, list(plan), dry_run=dry_run)
        if not dry_run:
            self.journal.begin()
            self.journal.save(first=True)
        return self._run()

    def _refuse_deletions_kept(self, upstream: str, series: list, old: UpstreamPin,
                               new: UpstreamPin) -> None:
        """UsageError, before anything starts, when a patch deletes (or renames away) a file
        the target has exactly as the pin had it and no later patch makes again, in a project
        that writes overlays: the patch would move as it is and the write-out, as `overlays`,
        refuse the series (an overlay cannot delete a file in the image), the rebase then in
        progress with nothing that could fix it but --abort. A file the target changed stops
        the patch (modify/delete), where the user decides; one the target lacks has landed."""
        removed = [(i, name, fp.old_path) for i, (name, patch) in enumerate(series)
                   for fp in patch.file_patches
                   if fp.old_path is not None and not fp.is_copy and fp.new_path != fp.old_path]
        if not removed:
            return
        paths = sorted({path for _, _, path in removed})
        before, after = self.store.entries(old.commit, paths), self.store.entries(new.commit, paths)
        kept = []
        for i, name, path in removed:
            again = any(fp.new_path == path and (fp.is_new or fp.old_path != path)
                        for _, later in series[i + 1:] for fp in later.file_patches)
            if not again and after.get(path) is not None and after.get(path) == before.get(path):
                kept.append((name, path))
        if kept:
            name, path = kept[0]
            word = self.project.patch_word(upstream, name)
            raise UsageError(
                f"{upstream}/{name} deletes {path}, which {new.label} has as {old.label} had it: "
                f"the rebase would move the deletion as it is, and its write-out, as `patchforge "
                f"overlays`, refuses a series that deletes a file (an overlay cannot delete a "
                f"file in the image); nothing was started",
                hint=f"`patchforge edit {word}`, put {path} back (changed as the image needs, "
                     f"e.g. emptied), `patchforge refresh`, then rebase; or "
                     f"`patchforge delete {word}`")

    def resume(self, *, skip: bool = False, allow_undo: bool = False) -> dict:
        if not self.journal.exists():
            self._no_rebase()
        run = self.journal.load()
        if not run.dry_run:
            from patchforge.stack import require_readable_history

            # A line damaged while the rebase was stopped: said before the resolution is taken.
            require_readable_history(self.project)
        checkpoint = self.journal.checkpoint()
        if skip and run.stopped:
            # The skipped patch's worktree is cleared for the next stop or removed at the end.
            self._keep_unadded(run.stopped.upstream)
        try:
            self._bring_run_pins(run)
            result = self._resume(run, skip=skip, allow_undo=allow_undo)
        except ConflictStop:  # the next stop: the skip or resolution is part of it
            raise
        except Exception:
            # A command that fails leaves the rebase where it found it: stopped on the same
            # patch, so that the same --skip or --continue, once the cause is fixed (a broken
            # configuration, a declared artifact gone), does what it was asked. The skip or the
            # resolution was saved before going on (the next stop clears the worktree that
            # holds a resolution); it is taken back while nothing else depends on it: no
            # worktree was touched since, and the write-out has not begun.
            if run.phase != "committing" and not self._worktree_opened:
                self.journal.rollback(checkpoint)
            raise
        # The run went through: no stop is left to resolve. The worktree stayed from stop to
        # stop (the next stop reuses its repository); it goes now.
        for upstream in run.upstreams:
            self._remove_worktree(upstream)
        return result

    def _bring_run_pins(self, run: RebaseRun) -> None:
        """The revisions the run moves from and to, brought into the store where it lacks them
        (the cache emptied, or another PATCHFORGE_CACHE, while the rebase was stopped): read
        as trees without files, a resolution was written as a patch creating its files."""
        from patchforge.pins import bring_pins

        bring_pins(self.project, self.store, [(upstream, pin)
                                              for upstream, entry in run.upstreams.items()
                                              for pin in (entry.old, entry.new)])

    def _resume(self, run: RebaseRun, *, skip: bool, allow_undo: bool = False) -> dict:
        if run.phase == "committing":
            if skip:
                raise UsageError("the rebase is writing out its result; --continue or --abort")
            return self._write_out()
        self._refuse_changed_series(run)
        stopped = run.stopped
        if skip and not stopped:
            raise UsageError("the rebase is not stopped on a patch; nothing to skip",
                             hint="`patchforge rebase --continue` finishes it")
        if stopped:
            changes: dict[str, bytes | None] = {}
            modes: dict[str, str] = {}
            if skip:
                self._skip_stopped(stopped)
            else:
                changes, modes = self._take_resolution(stopped, allow_undo=allow_undo)
            if stopped.old_base:
                self._resumed[stopped.upstream] = _Resumed(stopped.base, stopped.old_base,
                                                           changes, modes)
            run.stopped = None
            self.journal.save()
            # The worktree stays until the run goes through (resume() removes it then): the
            # next stop reuses its repository (worktree.Worktree.create).
        return self._run()

    def _series_digests(self, upstream: str, names: list[str], *,
                        read: bool = False) -> dict[str, str]:
        """sha256 of the series file and of each patch file of `names`, by file name in the
        series directory ("" for a file that is not there). `read`: the patches this run has
        read already (`_old_patch`) are hashed from what was read (a parse gives its bytes back
        exactly), not read from the disk a second time."""
        import hashlib

        digests = {}
        for name in [None, *names]:
            path = self.project.series_path(upstream) if name is None else \
                self.project.patch_path(upstream, name)
            known = self._read_patches.get((upstream, name)) if read else None
            try:
                data = known.to_bytes() if known is not None else path.read_bytes()
            except FileNotFoundError:
                digests[path.name] = ""
                continue
            digests[path.name] = hashlib.sha256(data).hexdigest()
        return digests

    def _refuse_changed_series(self, run: RebaseRun) -> None:
        """Refuse to go on when the series file or a patch file of the old series changed since
        the run began: the write-out replaces them with what the run made of the old bytes,
        and the change (a fix edited by hand while the rebase was stopped) would be lost."""
        for upstream, entry in run.upstreams.items():
            if not entry.digests:
                continue
            now = self._series_digests(upstream, entry.names)
            for file, digest in entry.digests.items():
                if now.get(file) == digest:
                    continue
                if self._only_keeps_changed(run.stopped, upstream, file):
                    # The way on from a stop on the patch's Keeps lines when the upstream
                    # rightly changed what they name: taken with the resolution, and the
                    # write-out checks the file as it is now.
                    entry.digests[file] = now[file]
                    continue
                rel = (self.project.series_dir(upstream) / file).relative_to(
                    self.project.root).as_posix()
                raise UsageError(
                    f"{rel} changed while the rebase was stopped; the rebase writes the "
                    "series from the files as they were when it began, and would lose "
                    "that change",
                    hint=f"put {rel} back as it was and make the change after the rebase, "
                         "or `patchforge rebase --abort` and start it again")

    def _only_keeps_changed(self, stopped, upstream: str, file: str) -> bool:
        """Whether `file` is the patch a stop on its Keeps lines stopped on, changed in those
        lines alone (Stop.keeps_free)."""
        return stopped is not None and stopped.keeps_free is not None and \
            (stopped.upstream, stopped.name) == (upstream, file) and \
            _keeps_free_digest(self.project.read_patch(upstream, file)) == stopped.keeps_free

    def abort(self) -> list[str]:
        """Put the project back as it was before the rebase; returns the files restored."""
        if not self.journal.exists():
            self._no_rebase()
        try:
            run = self.journal.load()
        except CorruptJournal:
            return self._abort_damaged()
        self._clean_temp_files()  # a write-out's new files, named by its journal or not yet
        cut_short = run.phase == "committing"
        with self._undoing(cut_short):
            restored = self._put_back_cut_short_write_out() if cut_short else []
            self._forget(run.upstreams)
        return restored

    def _undoing(self, cut_short: bool):
        """The project held for writing while --abort puts back a cut-short write-out and
        forgets the run: a reader sees the write-out's files and journal, or the project as it
        was before the rebase, never the files put back beside a journal that still says they
        are part old, part new. A run that wrote nothing changed no project file: nothing to
        hold."""
        if not cut_short:
            return contextlib.nullcontext()
        from patchforge.fsutil import WriteOutLock

        return WriteOutLock(self.project.root, exclusive=True, wait=WRITE_OUT_WAIT,
                            on_wait=self.on_wait_for_readers,
                            undone="the cut-short write-out is not undone yet",
                            hint="run `patchforge rebase --abort` again once they end")

    def _put_back_cut_short_write_out(self) -> list[str]:
        """Put back what a cut-short write-out replaced (the files the journal saved, then
        overlays/), under `_undoing`; returns what was put back."""
        from patchforge.overlay import recover_overlays

        restored = self.journal.restore_originals(self.project.root)
        recover_overlays(self.project)
        if self.journal.restore_tree("overlays", self.project.overlays_dir):
            restored.append("overlays/")
        return restored

    def _forget(self, upstreams) -> None:
        """The run's worktrees (their files nobody added kept aside first), then its journal."""
        for upstream in upstreams:
            self._keep_unadded(upstream)
            if self._existing_worktree(upstream) is not None:
                from patchforge.worktree import keep_resolution

                kept = keep_resolution(self.project, upstream)
                if kept is not None:
                    self.resolutions_kept.append(kept)
            self._remove_worktree(upstream)
        self.journal.remove()

    def _abort_damaged(self) -> list[str]:
        """--abort with a journal that cannot be read (truncated by a full disk, damaged): put
        back whatever it saved that can still be read, then remove it, so there is always a way
        out. The project files are only ever changed after originals.json is whole."""
        try:
            originals = self.journal.originals()
        except CorruptJournal:
            originals = {}
        self._clean_temp_files()
        with self._undoing(bool(originals)):
            restored = self._put_back_cut_short_write_out() if originals else []
            self._forget(self.project.upstream_names())
        return restored

    def _no_rebase(self) -> None:
        """Refuse --continue/--skip/--abort without a rebase, naming what is open instead (a
        stopped bring-back is continued by `bring-back --continue`)."""
        from patchforge.state import BRINGING, read_states

        open_ = [s for s in read_states(self.project).values() if s.kind == BRINGING]
        if open_:
            raise UsageError(f"no rebase in progress; {open_[0].describe()}",
                             hint=open_[0].next_step())
        raise UsageError("no rebase in progress",
                         hint="`patchforge status` says where the series stands; "
                              "`patchforge rebase --to UPSTREAM=SPEC` starts a rebase")

    # --- moving patches -----------------------------------------------------------------------
    @property
    def _run_record(self) -> RebaseRun:
        assert self.journal.run is not None, "started or resumed"
        return self.journal.run

    def _run(self) -> dict:
        run = self._run_record
        try:
            for upstream in run.order:
                entry = run.upstreams[upstream]
                # A resolution of the last patch of a series with profile bases is still
                # carried into the other profiles' chains (refused when it does not go there).
                if entry.position < len(entry.names) or upstream in self._resumed and \
                        self._profile_bases(upstream, entry):
                    # The history is walked on a second thread while this one
                    # reads the files and judges the first patches; the block joins it.
                    with self._history_reading(upstream, entry):
                        if self._profile_bases(upstream, entry):
                            self._run_upstream_on_profile_bases(upstream, entry)
                        else:
                            self._run_upstream(upstream, entry)
        except BaseException:  # a stop (ConflictStop) or an error: no range-diff is made
            self._close_chains()
            self._close_early()
            raise
        if run.dry_run:
            self._find_landings()
            return self._summary(written=False)
        # With the chains this run recorded, the range-diff needs nothing more (not even where
        # the dropped patches landed): its objects are written and `git range-diff` started
        # now, and it runs (on the other core) while this process finds the landing commits,
        # makes the new diffs and writes the files.
        inputs = self._range_diff_inputs(recorded_only=True)
        if inputs is None:
            self._find_landings()
            self._flush_deferred()
            return self._write_out()
        # Three git processes run from here beside this process's own work: the history diffs
        # the landing lookup reads, the moved patches' new diffs, and the range-diff (whose
        # objects are made here first). Left by an error too, the block ends them and removes
        # their scratch files before the error goes on.
        with contextlib.ExitStack() as started:
            landings = self._start_landing_reads(started)
            # The range-diff's chains first: the old contents of the pairs it would have git
            # show exact go into the new diffs' process (`_ask_diffs`), no process of their own.
            early = started.enter_context(self._start_range_diffs(inputs, ask=True))
            diffs = self._start_diffs(started)
            self._find_landings(landings)
            self._stage_diffs(diffs)
            # The new diffs show the range-diff's moved pairs exact or not: git's range-diff,
            # when it is needed, starts now, beside the write-out.
            early.settle()
            return self._write_out(early)

    def _defer_diff(self, rel: str, patch, changes) -> str | None:
        """Stage `patch` with a new diff made from `changes`, later: the diffs of the moved
        patches are made by git processes started during the walk (`_start_early`) and after
        it (`_flush_deferred` stages them); a dry run, which writes nothing, never makes them.
        Returns the staged name."""
        if self._run_record.dry_run:
            return None
        self._deferred.append((rel, patch, changes))
        return f"staged/{rel}"

    def _start_diff_batch(self) -> None:
        """Start git on the new diffs of the deferred patches that have no process yet. A
        diff depends on its own file's two contents only (no renames are looked for), so
        made in batches it is the same bytes as made all at once."""
        todo = self._deferred[self._batched:]
        asked, self._asked = self._asked, []
        if todo or asked:
            self._diff_batches.append((len(todo), StartedDiffs(
                [list(changes) for _, _, changes in todo]
                + [[FileChange(path, path, old, new)] for path, old, new in asked])))
            self._batched = len(self._deferred)

    def _ask_diffs(self, pairs: list[tuple[str, bytes, bytes]]) -> None:
        """Have the next batch of new diffs diff `pairs` ((path, old, new)) too: their hunks
        go to `_made_hunks` with the others' (the range-diff's proofs, RangeDiffImport.start)."""
        self._asked.extend(pairs)

    def _flush_deferred(self) -> None:
        """Stage the deferred patches with their new diffs."""
        with contextlib.ExitStack() as started:
            self._stage_diffs(self._start_diffs(started))

    def _start_diffs(self, started: contextlib.ExitStack) -> list[tuple[int, StartedDiffs]]:
        """The git processes making the deferred patches' new diffs, the last one started now
        (all of them ended with `started`)."""
        self._start_diff_batch()
        batches, self._diff_batches = self._diff_batches, []
        for _, diffs in batches:
            started.callback(diffs.close)
        return batches

    def _stage_diffs(self, batches: list[tuple[int, StartedDiffs]]) -> None:
        """Stage the deferred patches with their new diffs (`_start_diffs`)."""
        if not batches:
            return
        made = [diff for count, diffs in batches for diff in diffs.result()[:count]]
        for _, diffs in batches:
            self._made_hunks.update(diffs.hunks_by_ids)
        for (rel, patch, _), diff in zip(self._deferred, made, strict=True):
            self.journal.stage(rel, self._remembered(rel, patch.with_remade_diff(diff)))
        self._deferred.clear()
        self._batched = 0

    def _close_early(self) -> None:
        """End the git processes the walk started for later (a stop or an error ended it)."""
        batches, self._diff_batches = self._diff_batches, []
        for _, diffs in batches:
            diffs.close()
        reads, self._landing_reads = self._landing_reads, []
        for _, _, git in reads:
            git.close()

    def _target(self, upstream: str, entry: UpstreamRun) -> Target:
        new = entry.new
        return Target(upstream, entry.old.commit, new.commit, new.label, new.version)

    def _judge(self, upstream: str, entry: UpstreamRun) -> SeriesJudge:
        """A judge on the new base with the patches moved so far applied (they were made against
        exactly that state, so they replay without fuzz)."""
        target = self._target(upstream, entry)
        old_series = self._old_series(upstream, entry.names)
        judge = SeriesJudge(self.store, target, history=LazyHistory(
            lambda: self._history_index(upstream, target), old_series,
            lambda paths: self.store.read_blobs(target.base_commit, paths)),
            past_keeps_stops=self._run_record.dry_run,
            renames=series_renames(self.store, target, old_series))
        moved = [(r.name, self._staged_patch(upstream, r))
                 for r in entry.results if r.destination == "series" and r.staged]
        if moved:
            state = apply_series(_reads(self.store, target.commit), moved, max_fuzz=0)
            judge.start_after(state)
        return judge

    def _run_upstream(self, upstream: str, entry: UpstreamRun) -> None:
        dry = self._run_record.dry_run
        names = entry.names
        target = self._target(upstream, entry)
        start = entry.position
        resumed = self._resumed.pop(upstream, None)
        # What each patch changes, old series and new, for the range-diff's commit chains, the
        # contents handed to the range-diff's import as they are made; only for a run that goes
        # through the whole series in this process (a resumed one rebuilds the chains from the
        # files).
        chains = self._chains[upstream] = _Chains(self.store) \
            if entry.position == 0 and not dry else None
        if resumed is not None:
            # Going on after a stop: the stop recorded both states as commits in the store, so
            # nothing before it is read, parsed or applied again (a long series with many
            # stops was quadratic). Each later patch is read when its turn comes (the next stop
            # may be near), and nothing is fetched: the run that started the rebase brought
            # every file of the series into the store, so the judge reads a patch's files
            # together without asking git which are missing first (`fetched`).
            # Where upstream moved the series' files is the whole series' question, as the
            # run's first judge and `status --against` ask it (kept: read back, no git): a
            # patch after a stop is judged as it would be without one. So is the history's
            # word, read when a later patch first needs it: without it a fix upstream landed
            # and then rewrote (only the history says it landed) stopped as a conflict after
            # an earlier stop, where the dry run and an uninterrupted rebase drop it.
            old_series = self._old_series(upstream, names)
            judge = SeriesJudge(self.store, target, read_commit=resumed.base,
                                old_commit=resumed.old_base, fetched=True,
                                history=LazyHistory(
                                    lambda: self._history_index(upstream, target), old_series,
                                    lambda paths: self.store.read_blobs(target.base_commit,
                                                                        paths)),
                                renames=series_renames(self.store, target, old_series))
            judge.current.update(resumed.changes)
            judge.current_modes.update(resumed.modes)
            patches = None
        else:
            judge = self._judge(upstream, entry)
            if chains is not None:
                # A content the walk made by placing hunks goes into the range-diff's pack as
                # the delta of the content it was made from.
                chains.made_from = judge.applications.made_from
            patches = self._old_series(upstream, names)
            # Every file of the series, in one cat-file exchange per commit.
            judge.prefetch(patches)
            # The old series before the first patch to judge: the merge base of its 3-way
            # merge.
            judge.pass_old(patches[:start])
        self._pairs_made[upstream] = judge.places.pairs_made
        for position in range(entry.position, len(names)):
            if patches is not None:
                name, patch = patches[position]
            else:
                name, patch = names[position], self._old_patch(upstream, names[position])
                # Its files where the judge reads them, in one exchange per commit, not one
                # (or two) per file.
                judge.prefetch([(name, patch)])
            self.on_patch(upstream, name)
            before = _contents(judge.old.current, patch.paths) if chains is not None else {}
            result, stop = self._rebase_one(upstream, name, patch, judge, target)
            if chains is not None:
                chains.add_old(name, _changed(before, judge.old.current), patch.paths)
                if result is not None and result.destination == "series" and result.changed:
                    chains.add_new(name, result.changed, result.changed_paths)
            if stop is not None:
                result = self._stop_here(upstream, name, stop, judge, target)
            assert result is not None, "a patch moves, is dropped, or stops"
            entry.results.append(result)
            entry.position = position + 1
            if entry.position < len(names) and \
                    entry.position * _EARLY_PARTS // len(names) > \
                    position * _EARLY_PARTS // len(names):
                self._start_early(upstream, target)  # another part of the series judged
            # No journal write per patch: until the write-out nothing in the project changes,
            # so a kill here only loses work a resumed run recomputes. Saving the whole journal
            # after every patch made a long series quadratic.

    # --- a series with patches for some profiles only ------------------------------------------
    def _profile_bases(self, upstream: str, entry: UpstreamRun) -> bool:
        """Whether some patch of the series is for some profiles only: then each patch is
        judged and moved on its own base (apply.series.counts_for), not on the whole series
        before it. Otherwise (the common case) the one walk of `_run_upstream`."""
        configured = list(self.project.config.profiles)
        return bool(configured) and profile_bases_differ(
            self._old_series(upstream, entry.names), configured)

    def _run_upstream_on_profile_bases(self, upstream: str, entry: UpstreamRun) -> None:
        """`_run_upstream` for a series whose patches have different bases. One judge per
        chain (apply.series.profile_chains: each profile set of the series, and each profile's
        own series, the one its overlays apply): a patch is judged, moved or stopped on its own
        set's chain, where its worktree opens and its new diff is made; its move is then
        carried into every other chain that holds it (the patches for more profiles it comes
        after there stay). One that does not go into such a chain (it changes lines another
        patch of that profile's series changed before it) stops there, the profile named: the
        series would otherwise be written with overlays that fail.

        A resumed run rebuilds every chain from the patches staged so far (the stop's commits
        hold one chain only)."""
        from patchforge.apply.series import profile_chains, profile_set

        names = entry.names
        target = self._target(upstream, entry)
        self._resumed.pop(upstream, None)
        # The range-diff's chains are made from the files at the end (_chain_steps).
        self._chains[upstream] = None
        configured = list(self.project.config.profiles)
        patches = self._old_series(upstream, names)
        own = [profile_set(patch, configured) for _, patch in patches]
        chains = profile_chains(patches, configured)
        start = entry.position
        judges: dict = {}
        renames = series_renames(self.store, target, patches)  # status's question, whole
        for chosen, positions in chains:
            chain = [patches[i] for i in positions]
            judge = SeriesJudge(self.store, target, history=LazyHistory(
                lambda: self._history_index(upstream, target), chain,
                lambda paths: self.store.read_blobs(target.base_commit, paths)),
                past_keeps_stops=self._run_record.dry_run, renames=renames)
            judge.prefetch(chain)
            judges[chosen] = (judge, set(positions))
        # The old series before the first patch to judge, each chain's as the walk leaves it:
        # a patch on its own chain, carried into the others.
        for position in range(start):
            name, patch = patches[position]
            judge = judges[own[position]][0]
            old_before = {p: judge.old_file(p) for p in patch.paths}
            judge.pass_old([(name, patch)])
            carry_old(patches, own, position, judges, old_before)
        if start:
            self._rebuild_chains(upstream, entry, patches, own, judges)
        for position in range(start, len(names)):
            name, patch = patches[position]
            self.on_patch(upstream, name)
            judge = judges[own[position]][0]
            before = dict(judge.current)
            old_before = {p: judge.old_file(p) for p in patch.paths}
            result, stop = self._rebase_one(upstream, name, patch, judge, target)
            if result is not None and result.destination == "series" and result.changed:
                changed = dict(result.changed)
                # Into every other chain that holds it, as overlays, lint and status carry
                # it (apply.chains).
                problem = carry_moved(patches, own, position, judges,
                                      self._before(judge, before, changed), changed)
                if problem is not None:
                    path, message = problem
                    stop = Blocked("conflict", [path], [message], message, changed,
                                   {p: m for p, m in judge.current_modes.items()
                                    if p in changed})
                    self._drop_staged(upstream, name, result)
                    result = None
                    judge.current.clear()
                    judge.current.update(before)
            elif stop is not None and stop.kind == "invariant" and judge.past_keeps_stops:
                # A dry run goes on past a patch stopped only by its Keeps: lines with its
                # result on its own chain (SeriesJudge.goes_past), and so on the others that
                # hold it. It is a stop already: a place it does not go into is not said again.
                carry_moved(patches, own, position, judges,
                            self._before(judge, before, stop.contents), dict(stop.contents))
            elif stop is not None and judge.past_keeps_stops:
                # A dry run gives the patches after any other stop the files it makes
                # (SeriesJudge._made_past_a_stop: the only files its own chain takes of it),
                # and so do the other chains that hold it, where they go.
                made = {path: content for path, content in judge.current.items()
                        if content is not None and before.get(path) is None}
                if made:
                    carry_moved(patches, own, position, judges, dict.fromkeys(made), made)
            # The old series of the other chains takes it as the old pin's overlays did: the
            # base of their 3-way merges.
            carry_old(patches, own, position, judges, old_before)
            if stop is not None:
                result = self._stop_here(upstream, name, stop, judge, target)
            assert result is not None, "a patch moves, is dropped, or stops"
            entry.results.append(result)
            entry.position = position + 1

    def _before(self, judge, before: dict, changed: dict) -> dict:
        """The files `changed` names as `judge`'s chain had them before the patch (`before`:
        its current files then; the others are read where it reads)."""
        return {path: before[path] if path in before else
                self.store.read_blob(judge.read_commit, path) for path in changed}

    def _rebuild_chains(self, upstream, entry, patches, own, judges) -> None:
        """A resumed run's chains: each patch moved so far (its staged new diff) applied on its
        own chain, where it was made, and carried into the others as the walk carried it. A
        resolution that does not go into another profile's series is refused, naming it: the
        rebase stays stopped on it."""
        from patchforge.apply.series import profile_label

        staged = {r.name: r for r in entry.results if r.destination == "series" and r.staged}
        for position in range(entry.position):
            name = patches[position][0]
            if name not in staged:
                continue
            patch = self._staged_patch(upstream, staged[name])
            judge = judges[own[position]][0]
            state = SeriesState()
            for path in patch.paths:
                state.base[path] = state.current[path] = judge.read_current(path)
            before = dict(state.current)
            apply_series(_reads(self.store, judge.read_commit), [(name, patch)], max_fuzz=0,
                         strict=False, state=state)
            changed = {path: content for path, content in state.current.items()
                       if content != before.get(path)}
            problem = carry_moved(patches, own, position, judges, before, changed) \
                if state.outcomes[-1].ok else \
                (None, f"does not apply on its own base ({profile_label(own[position])})")
            if problem is not None:
                raise UsageError(
                    f"{upstream}/{name} as resolved {problem[1]}",
                    hint="make the resolution leave those lines alone (two fixes that change "
                         "neighbouring lines differently for some profiles are one fix per "
                         "profile), or `patchforge rebase --skip` (the patch is kept in "
                         "skipped/), `--abort` to go back")
            judge.start_after(state)

    def _drop_staged(self, upstream: str, name: str, result: PatchResult) -> None:
        """Forget the new diff `_rebase_one` deferred for a patch that stops after all."""
        rel = f"{upstream}/{name}"
        if self._deferred[self._batched:] and self._deferred[-1][0] == rel:
            self._deferred.pop()

    def _stop_here(self, upstream: str, name: str, stop: Blocked, judge, target) -> PatchResult:
        """A patch the walk cannot move: in a dry run, its `conflict` result; otherwise the
        stop (`_stop` raises ConflictStop), with the old series through this patch (the judge
        moved past it), for going on."""
        if self._run_record.dry_run:
            return PatchResult(upstream, name, "conflict", stop.message, stop.evidence)
        made: list[tuple[bytes, bytes]] = []
        self._stop(upstream, name, stop, judge, target,
                   old_base=self.store.commit_files(
                       judge.old_commit, dict(judge.old.current),
                       message="patchforge rebase: old series so far\n", made=made)
                   if judge.old.current else judge.old_commit, made=made)
        raise AssertionError("_stop raises")

    def _stop(self, upstream: str, name: str, stop: Blocked, judge, target, *,
              old_base: str, made: list[tuple[bytes, bytes]]) -> None:
        """Record the stop (with `old_base`, the old series through this patch, for going
        on, whose objects are `made`), give the user a worktree, raise ConflictStop (exit 3).
        The objects of both bases are kept in the worktree: a new cache gets them back."""
        self._find_landings()
        self._flush_deferred()
        base = judge.read_commit
        if judge.current:
            # With the modes the series gave: the worktree and a resumed run read them there.
            base = self.store.commit_files(judge.read_commit, dict(judge.current),
                                           modes=dict(judge.current_modes),
                                           message="patchforge rebase: series so far\n",
                                           made=made)
        work = self.project.work_dir(upstream)
        self.journal.settle()
        self._open_worktree(upstream, base, stop.contents, stop.modes, stop.bases)
        self.store.keep_made(made, self.project.made_objects_path(upstream))
        self._run_record.stopped = Stop(
            upstream, name, stop.kind, stop.files, stop.evidence, stop.message, base, old_base,
            str(work), keeps_free=_keeps_free_digest(self._old_patch(upstream, name))
            if stop.kind == "invariant" else None, landed=stop.landed)
        self.journal.save()
        raise ConflictStop(
            f"{upstream}/{name}: {stop.message}",
            hint=f"edit {', '.join(map(_said_path, stop.files)) or 'the files'} in "
                 f"{_said_path(str(work))} (`patchforge add PATH` makes another file part of "
                 "the fix)"
                 + (f", or, where the upstream rightly changed what the Keeps: line names, "
                    f"change that line in series/{upstream}/{name}" if stop.kind == "invariant"
                    else "")
                 + ", then `patchforge rebase --continue`; or `--skip` to set the patch aside "
                 f"(kept in series/{upstream}/skipped/), `--abort` to go back")

    def _commits_touching(self, upstream: str, target, verdict) -> list[str] | None:
        """The upstream commits touching a verdict's files, from one history read per upstream
        (a git process per dropped patch was most of a long rebase); None without history."""
        index = self._history_index(upstream, target)
        if index is None:
            return None
        paths = _patch_paths(verdict)
        if not set(paths) <= set(index.paths):  # a renamed file: outside the series' paths
            return self.store.commits_touching(target.base_commit, target.commit, paths)
        return index.commits_touching(paths)

    def _history_index(self, upstream: str, target):
        """The history between the upstream's old base and the target, for the series' files
        (judge.HistoryIndex, read once per upstream); None without history."""
        if upstream not in self._histories:
            self._histories[upstream] = _history_index(self.store, target,
                                                       self._series_paths(upstream))
        found = self._histories[upstream]
        return found.result() if isinstance(found, Background) else found

    def _series_paths(self, upstream: str) -> list[str]:
        names = self._run_record.upstreams[upstream].names
        return sorted({p for n in names for p in self._old_patch(upstream, n).paths})

    def _history_reading(self, upstream: str, entry: UpstreamRun):
        """A run that starts from the first patch reads the history on a second thread (a
        Background, to be entered by the caller's block); otherwise it is read when a patch
        first needs it (a resumed run may need none). Whether there is a history at all (the
        history's walk tells) is learnt on that thread too: the walk of the series does not
        wait for a git process before its first patch."""
        target = self._target(upstream, entry)
        if entry.position != 0 or upstream in self._histories or \
                upstream in self._resumed or target.base_commit == target.commit:
            return contextlib.nullcontext()
        reading = Background(_history_index, self.store, target, self._series_paths(upstream))
        self._histories[upstream] = reading
        return reading

    def _rebase_one(self, upstream, name, patch, judge: SeriesJudge,
                    target) -> tuple[PatchResult, None] | tuple[None, Blocked]:
        """(result, None) when the patch moved or was dropped; (None, stop) when it cannot.
        The one judge decides (`SeriesJudge.judge`, as `status` does for the same target):
        this only turns its judgement into a result or a stop."""
        judgement = judge.judge(name, patch)
        verdict = judgement.verdict
        if judgement.outcome == "landed":
            result = PatchResult(upstream, name, "dropped", judgement.message,
                                 list(judgement.evidence), None, "upstreamed")
            if verdict.state == "upstreamed":
                # Which commit landed it is looked up after the walk, for every landed patch
                # at once (`_find_landings`); nothing later in the walk depends on it. Judged
                # by content on the target's own files (no earlier patch changed them), the
                # verdict is what landed_in's probe at the target would find.
                alone = verdict.decided_by == "content" and \
                    judge.read_commit == target.commit and \
                    not any(path in judge.current for path in _patch_paths(verdict))
                self._landings.append((result, patch, verdict, target,
                                       target.commit if alone else None))
                self._landed_files(upstream, [*patch.paths, *_patch_paths(verdict)])
            else:
                self._set_aside(result, patch, target)
            return result, None
        if judgement.outcome == "stop":
            kind = judgement.stop_kind or "conflict"
            message = judgement.message
            if kind == "obsolete":
                message = self._made_by_set_aside(upstream, name, judgement.files) or (
                    message + ": re-create the fix in the worktree (`patchforge add PATH`), "
                    "drop the patch's change to the file and keep the rest "
                    "(`patchforge rm PATH`), or --skip it")
            elif judgement.deleted_here:
                from patchforge.worktree import modify_delete_ways

                message += modify_delete_ways(
                    self.project, judgement.deleted_here, "patchforge rebase --continue",
                    "`patchforge rebase --skip` (the whole fix is kept in skipped/)",
                    "a patch left with no change is set aside in skipped/")
            elif kind == "conflict" and (ways := _ways_for_a_doubling(judgement.evidence)):
                message += ways
            elif kind == "unsure" and any(item.startswith(AMBIGUOUS_PLACE)
                                          for item in judgement.evidence):
                message += ": the worktree has the change at the nearest of them; move it " \
                    "where it belongs (or leave it) and --continue"
            elif kind == "unsure" and any(item.startswith(OTHER_FUNCTION)
                                          for item in judgement.evidence):
                message += ": the worktree has the change where it was found; move it into " \
                    "the fix's function (or --skip the patch if upstream has the fix there) " \
                    "and --continue"
            elif kind == "unsure" and (moved := moved_away(judgement.evidence)) is not None:
                other = moved[1]
                message += f": the code the fix takes out is in {other} now; if the fix is " \
                    f"still needed, take it out there (`patchforge add {other}` brings it " \
                    "into the worktree) and --continue; `--skip` sets the patch aside only " \
                    "if it is not"
            elif kind == "unsure":
                message += ": if the target has the fix, `--skip` sets the patch aside; " \
                    "if not, make its change in the worktree and --continue"
            landed = None
            if (verdict.hunks_landed or judgement.parts) and not self._run_record.dry_run:
                # Its hunks that landed (and changes inside hunks: Judgement.parts) are in the
                # stop's base: a resolution that leaves them so leaves them out of the
                # resolved patch, and --continue keeps them.
                try:
                    where = where_landed(self.store, target, patch, verdict,
                                         self._history_index(upstream, target),
                                         self._commits_touching(upstream, target, verdict),
                                         pairs_made=self._pairs_made.get(upstream))[0] \
                        if verdict.hunks_landed else \
                        part_landed_in(self.store, target, name,
                                       landed_part(patch, verdict, parts=judgement.parts),
                                       self._history_index(upstream, target))
                except PatchforgeError:
                    where = None
                landed = landed_hunks(verdict, where, judgement.parts)
            return None, Blocked(kind, judgement.files, judgement.evidence, message,
                                 dict(judgement.after), dict(judgement.modes),
                                 dict(judgement.bases), landed)
        changes = judgement.changes
        new_patch = patch.with_field("Base", target.commit)
        if judgement.keeps_moved:
            # Its Keeps lines follow the upstream's moves as its diff does (the judge checked
            # them there).
            from patchforge.invariants import with_keeps_moved

            new_patch = with_keeps_moved(new_patch, judgement.keeps_moved)
        action = judgement.how or "clean"
        detail = judgement.message
        if verdict.state == "unsure":
            detail += "; landed detection unsure: review"
        if verdict.renames:
            detail += "; follows " + ", ".join(f"{_shown(a)} -> {_shown(b)}"
                                               for a, b in verdict.renames.items())
        if not judgement.unchanged:
            notes = patch.notes_in_diff()
            if notes:
                # Its diff is made again, which has no place for them (with_remade_diff).
                detail += "; the words between its diff's file sections (line " + \
                    ", ".join(str(line) for line, _ in notes) + ") go to its description"
        rel = f"{upstream}/{name}"
        refused = self._unmountable_after_move(upstream, name, patch, changes)
        if refused:
            # The write-out would refuse it (_refuse_unmountable_names): the dry run says so
            # here, the real run stops before the walk does work it must throw away.
            return PatchResult(upstream, name, "conflict", f"{detail}; {refused}",
                               verdict.evidence if verdict.state != "applies" else []), None
        # Its hunks applied without fuzz (at the place the merge's line map gave, for one
        # "merged" by an ambiguous context): the range-diff's pair may be exact, or one git
        # shows changed on its own (a function line renamed above a hunk: rangediff._Changed).
        # (One whose pre-images are unchanged is exact: the same contents on both sides.)
        if verdict.state in ("applies", "offset") and action in ("clean", "offset", "merged") \
                and not judgement.unchanged:
            self._moved_exactly.setdefault(upstream, set()).add(name)
        # Unchanged pre-images: the old diff is still exact, byte for byte (its index lines too).
        staged = self._stage(rel, self._remembered(rel, new_patch)) if judgement.unchanged \
            else self._defer_diff(rel, new_patch, changes)
        changed: dict[str, bytes | None] = {}
        for change in changes:
            if change.old_path is not None and change.old_path != change.new_path \
                    and not change.copy:
                changed[change.old_path] = None  # renamed away, or deleted
            if change.new_path is not None:
                changed[change.new_path] = change.new
        result = PatchResult(upstream, name, action, detail,
                             verdict.evidence if verdict.state != "applies" else [],
                             staged=staged, changed=changed, changed_paths=tuple(changed))
        if verdict.state == "partial" or judgement.parts:
            self._keep_landed_part(result, patch, verdict, target, judgement.parts)
        return result, None

    def _keep_landed_part(self, result: PatchResult, patch, verdict, target,
                          parts: dict) -> None:
        """A patch moved with some of its hunks landed upstream, or some changes inside a hunk
        (`parts`, Judgement.parts): the moved patch no longer holds them, so they are kept
        under upstreamed/ as a fix landed whole is (its Applied-Upstream naming the landing
        commit), and a later revert of that landing is said (needs attention, `bring-back`)
        instead of the change going without a word."""
        part = landed_part(patch, verdict, parts=parts)
        if part is None:
            return
        if parts:
            where = part_landed_in(self.store, target, result.name, part,
                                   self._history_index(result.upstream, target))
        else:
            where, _ = where_landed(self.store, target, patch, verdict,
                                    self._history_index(result.upstream, target),
                                    self._commits_touching(result.upstream, target, verdict),
                                    pairs_made=self._pairs_made.get(result.upstream))
        kept = part.with_field("Applied-Upstream",
                               target.label + (f", commit:{where}" if where else ""))
        result.detail += f"; {landed_words(patch, verdict, parts, where)}: " + \
            ("to be kept" if self._run_record.dry_run else "kept") + " under upstreamed/" + \
            rest_words(verdict.hunks_landed, verdict.hunks_total, parts)
        result.landed_part = self._stage(f"{result.upstream}/upstreamed/{result.name}",
                                         kept.to_bytes())

    def _set_aside(self, result: PatchResult, patch, target,
                   parents: dict[str, str | None] | None = None) -> None:
        """Stage a dropped patch for upstreamed/, with `Applied-Upstream:` naming the target
        (and, in DEP-3's `commit:ID` form, the commit that landed it, when `result` has one).
        A patch whose pre-image is not the one its landing changed (upstream changed its lines
        first, then landed the fix: one rebase past both) is kept as the landing made it
        (landings.landed_diff, Base the landing's parent): with its own diff, a revert of that
        landing would never be found. `parents`: the landing commits' first parents, when the
        caller asked for them together (store.parents_of)."""
        where = result.landed_in
        if where:
            from patchforge.landings import landed_diff

            try:
                remade = landed_diff(self.store, patch, where, parents=parents)
            except PatchforgeError:
                remade = None  # (kept as it is: what the rebase did before)
            if remade is not None:
                patch = patch.with_remade_diff(remade[0]).with_field("Base", remade[1])
        kept = patch.with_field("Applied-Upstream",
                                target.label + (f", commit:{where}" if where else ""))
        rel = f"{result.upstream}/upstreamed/{result.name}"
        data = self._remembered(rel, kept)
        result.staged = self._stage(rel, data)
        if result.staged is None:
            self._aside_bytes[(result.upstream, result.name)] = data

    def _landed_files(self, upstream: str, paths: list[str]) -> None:
        """Note a landed patch's files, whose history diffs `_find_landings` reads (a git
        process started by `_start_early` or `_start_landing_reads`)."""
        asked = self._landed_asked.get(upstream, set())
        self._landed_unasked.setdefault(upstream, set()).update(
            path for path in paths if path not in asked)

    def _start_early(self, upstream: str, target) -> None:
        """Start git on the new diffs of the patches moved so far and on the history diffs
        of the files landed so far (once the history has been walked): they run while the
        walk goes on."""
        if len(self._deferred) - self._batched >= _EARLY_MIN:
            self._start_diff_batch()
        reading = self._histories.get(upstream)
        if len(self._landed_unasked.get(upstream, ())) >= _EARLY_MIN and reading is not None \
                and (not isinstance(reading, Background) or reading.done()):
            self._ask_landed_files(upstream, target)

    def _ask_landed_files(self, upstream: str, target) -> None:
        """Start the `git diff-tree` of the landed files of `upstream` not asked for yet (a
        file's diffs do not depend on the files read with it)."""
        paths = sorted(self._landed_unasked.pop(upstream, set()))
        index = self._history_index(upstream, target)
        if index is None or not paths:
            return
        self._landed_asked.setdefault(upstream, set()).update(paths)
        # The index reads only its own paths, each once.
        missing, commits = index.unread(paths)
        if commits:
            self._landing_reads.append(
                (index, missing, self.store.start_commit_patches(commits, missing)))
        elif missing:
            index.add_read(missing, b"")

    def _start_landing_reads(self, started: contextlib.ExitStack) -> list:
        """The history's diffs of the landed patches' files, which `_find_landings` reads:
        the `git diff-tree` processes started during the walk and one per upstream for the
        files not asked for yet, started now (all of them ended with `started`).
        [(HistoryIndex, paths, HistoryDiffs)]"""
        targets = {result.upstream: target for result, _, _, target, _ in self._landings}
        for upstream in list(self._landed_unasked):
            if upstream in targets:
                self._ask_landed_files(upstream, targets[upstream])
        reads, self._landing_reads = self._landing_reads, []
        for _, _, git in reads:
            started.callback(git.close)
        return reads

    def _find_landings(self, reads: list | None = None) -> None:
        """The upstream commit each landed patch of the walk so far came from
        (judge.where_landed), its history evidence, and its staged file: after the walk (every
        upstream's) or before a stop saves the journal. The history's diffs
        of all their files are read first, by one git process (`reads`, when the caller
        started it): looked up patch by patch, each landed patch cost a `git diff-tree` of its
        own (most of a long clean rebase's git processes)."""
        if reads is None:
            with contextlib.ExitStack() as started:
                self._find_landings(self._start_landing_reads(started))
            return
        for index, paths, git in reads:
            index.add_read(paths, git.result())
        pending, self._landings = self._landings, []
        for result, patch, verdict, target, holds_at in pending:
            result.landed_in, more = where_landed(
                self.store, target, patch, verdict, self._history_index(result.upstream, target),
                self._commits_touching(result.upstream, target, verdict), holds_at=holds_at,
                pairs_made=self._pairs_made.get(result.upstream))
            result.evidence.extend(more)
        # The landing commits' parents, which each landed patch's own form is made on, asked of
        # cat-file in one round: a round each waited 0.8 ms at 300 patches (81 of them), while
        # git range-diff and the new diffs had the other core. An error here leaves each patch
        # to ask for its own, as before.
        parents: dict[str, str | None] | None = None
        landings = [result.landed_in for result, *_ in pending if result.landed_in]
        if landings:
            try:
                parents = self.store.parents_of(landings)
            except PatchforgeError:
                parents = None
        for result, patch, _, target, _ in pending:
            self._set_aside(result, patch, target, parents)

    def _check_keeps(self, patch: PatchFile, files: dict, judge) -> tuple[PatchFile, list[str]]:
        """A resolved patch's Keeps lines checked on its result: (the patch, its Keeps lines
        following the upstream's moves as the judge's do; the violations)."""
        if not patch.get_all("Keeps"):
            return patch, []  # most patches promise nothing: no need to load the invariants module
        from patchforge.invariants import check_patch_invariants, keeps_moved, with_keeps_moved

        def read(path: str) -> bytes | None:
            return files[path] if path in files else judge.read_current(path)

        patch = with_keeps_moved(patch, keeps_moved(patch, read, judge.find_rename))
        return patch, check_patch_invariants(patch, read)

    def _remembered(self, rel: str, patch) -> bytes:
        """The bytes of a patch this run made, to be written at series/<rel>; the parse is kept
        for whoever reads that file back in this process (the ledger)."""
        return self.project.remember_patch(patch, self.project.series_file(rel))

    def _stage(self, rel: str, data: bytes) -> str | None:
        if self._run_record.dry_run:
            return None
        return self.journal.stage(rel, data)

    # --- stops --------------------------------------------------------------------------------
    def _open_worktree(self, upstream: str, commit: str, contents: dict[str, bytes | None],
                       modes: dict[str, str] | None = None,
                       bases: dict[str, bytes] | None = None) -> None:
        """`.patchforge/work/<upstream>` (patchforge.worktree) with the stopped patch's files:
        as they are at `commit` (the new base with the series so far) in its HEAD, and as far
        as the patch got in the working files (conflict markers where git could not merge),
        with the modes the patch gives them."""
        from patchforge.worktree import Worktree, files_at, keep_stray

        self._worktree_opened = True
        kept = keep_stray(self.project, upstream)  # an editor's late save after an edit ended
        if kept is not None:
            self.left_behind.append(kept)
        # The run brought the series' files into the store: no check for missing ones.
        Worktree.create(self.project.work_dir(upstream),
                        files_at(self.store, commit, sorted(contents), fetch_together=False),
                        contents, modes=modes, bases=bases)

    def _existing_worktree(self, upstream: str) -> Path | None:
        """`upstream`'s worktree directory when there is one; None for a name from the journal
        that is not a plain upstream name (never `../x`) and for a run that never stopped (it
        made none, and the worktree module need not load)."""
        from patchforge.names import check_simple_name

        try:
            check_simple_name(upstream, "upstream")
        except ValueError:
            return None
        work = self.project.work_dir(upstream)
        return work if work.exists() else None

    def _keep_unadded(self, upstream: str) -> None:
        """Before a stop's worktree goes: the files made there that nobody added are copied
        under .patchforge/left-behind/ (worktree.keep_unadded), and `left_behind` says where."""
        if self._existing_worktree(upstream) is not None:
            from patchforge.worktree import keep_unadded

            kept = keep_unadded(self.project, upstream)
            if kept is not None:
                self.left_behind.append(kept)

    def _remove_worktree(self, upstream: str) -> None:
        work = self._existing_worktree(upstream)
        if work is not None:
            from patchforge.worktree import Worktree

            Worktree(work).remove()

    def _take_resolution(self, stopped: Stop, *, allow_undo: bool = False
                         ) -> tuple[dict[str, bytes | None], dict[str, str]]:
        """--continue: the worktree's difference from the stop's base becomes the patch.
        Returns the files it changes (path -> content, None when deleted) and their modes.
        A resolution that undoes a change made under the patch (the new upstream's, or an
        earlier patch's as moved) is refused unless `allow_undo`, which takes it and says so
        in the patch's result."""
        from patchforge.dirrenames import suggested_paths
        from patchforge.worktree import (refuse_gone_files_left_out, refuse_removed_by_hand,
                                         refuse_resolution_not_applying,
                                         refuse_resolution_outside_series, refuse_undoing,
                                         renames_and_copies, resolution_keeps_patch_over,
                                         resolution_undoes, series_patch,
                                         worktree_diff)

        upstream, name = stopped.upstream, stopped.name
        entry = self._run_record.upstreams[upstream]
        work = self.project.work_dir(upstream)
        if not work.is_dir():
            raise UsageError(f"the conflict worktree {work} is gone",
                             hint="`patchforge rebase --skip` or `--abort`")
        if not (work / ".git").is_dir():
            # Removed by hand: --continue failed with git's "not a git repository".
            raise UsageError(f"the conflict worktree {work} has lost its .git, where patchforge "
                             "records the stop's base: the resolution cannot be read",
                             hint="copy the resolved files elsewhere, then `patchforge rebase "
                                  "--skip` (the fix is kept in skipped/; `patchforge bring-back "
                                  f"{self.project.skipped_word(upstream, name)}` stops on it "
                                  "again) or `--abort`")
        # The patch's renames and copies stay so, from where upstream moved their sources.
        target = self._target(upstream, entry)
        patch = old_patch = series_patch(self.project, upstream, name)
        pairs = renames_and_copies(patch)
        for new_path, (old_path, copy) in list(pairs.items()):
            if self.store.entry(stopped.base, old_path) is None and \
                    target.base_commit != target.commit:
                moved = self.store.renames(target.base_commit, target.commit, [old_path])
                if moved.get(old_path):
                    pairs[new_path] = (moved[old_path], copy)
        # A destination inside a directory upstream moved: the stop put it where git suggests
        # (judge.SeriesJudge._relocated), and it stays a rename (a copy) there too.
        pairs.update({moved: pairs[path] for path, moved in suggested_paths(
            self.store, target.base_commit, target.commit, stopped.base, list(pairs)).items()})
        diff, changes = worktree_diff(self.project, self.store, upstream,
                                       {"base": stopped.base}, with_changes=True,
                                       pairs=pairs,
                                       patch_paths=set(patch.paths) if patch else set())
        own = added_lines(patch) if patch else None
        marked = [path for path, old, new, _, _ in changes
                  if new is not None and conflict_markers_left(old, new, own)]
        if marked:
            raise UsageError(f"conflict markers left in {', '.join(marked)} (in {work})",
                             hint="resolve them, then run `patchforge rebase --continue`; or "
                                  "`--skip` (the patch is kept in skipped/), `--abort`")
        refuse_gone_files_left_out(self.store, stopped.base, stopped.kind, stopped.files,
                                   changes, work, "`--skip` (the whole patch is kept in skipped/)")
        refuse_removed_by_hand(work, changes, patch, name,
                               self.project.patch_path(upstream, name).relative_to(
                                   self.project.root).as_posix(),
                               "patchforge rebase --continue",
                               "`patchforge rebase --skip` (the whole patch is kept in "
                               "skipped/), `--abort`")
        self._refuse_removals(stopped, changes, target, work)
        # The patches before it as this run moved them: the base's lines are theirs.
        undoes = resolution_undoes(
            self.project, upstream, changes,
            lambda: [(r.name, self._staged_patch(upstream, r)) for r in entry.results
                     if r.destination == "series" and r.staged],
            f"the upstream ({target.label})")
        if not allow_undo:
            refuse_undoing(undoes, name, "patchforge rebase --continue",
                           "`patchforge rebase --skip` keeps the patch in skipped/, `--abort` "
                           "goes back", work)
        kept_over = resolution_keeps_patch_over(
            self.project, upstream, changes, old_patch,
            lambda: [(r.name, self._staged_patch(upstream, r)) for r in entry.results
                     if r.destination == "series" and r.staged],
            f"the upstream ({target.label})")
        patch = self.project.read_patch(upstream, name)
        files = {p: n for p, _, n, _, _ in changes}
        modes = {p: mode for p, _, n, _, mode in changes if n is not None}
        if not changes:
            result = PatchResult(upstream, name, "skipped", "resolved to no change; set aside",
                                 stopped.evidence, destination="skipped",
                                 staged=self._stage(f"{upstream}/skipped/{name}",
                                                    self.project.read_patch_bytes(upstream, name)))
        else:
            target = self._target(upstream, entry)
            new_patch = patch.with_remade_diff(diff).with_field("Base", target.commit)
            refuse_resolution_not_applying(
                self.store, stopped.base, target.label, name, new_patch, work,
                "patchforge rebase --continue",
                f"`patchforge rebase --skip` keeps the whole patch in series/{upstream}/skipped/ "
                "(`--abort` goes back)")
            # The stop's base is its own profiles' chain: each other series holding it (a
            # profile's patches not in its base, before it or after it) is asked too.
            refuse_resolution_outside_series(
                self.store, target.commit, target.label, name, new_patch, old_patch,
                lambda: [(r.name, self._staged_patch(upstream, r)) for r in entry.results
                         if r.destination == "series" and r.staged],
                lambda: [(n, self._old_patch(upstream, n))
                         for n in entry.names[entry.position + 1:]],
                list(self.project.config.profiles),
                lambda: self._profile_bases(upstream, entry), work,
                "patchforge rebase --continue",
                f"`patchforge rebase --skip` keeps the whole patch in series/{upstream}/skipped/ "
                "(`--abort` goes back)")
            new_patch, violations = self._check_keeps(
                new_patch, files, SeriesJudge(self.store, target, read_commit=stopped.base))
            if violations:
                rel = self.project.patch_path(upstream, name).relative_to(
                    self.project.root).as_posix()
                raise UsageError("; ".join(violations),
                                 hint="the resolution breaks the patch's Keeps: invariant: make "
                                      "it keep what the line names, or, where the upstream "
                                      f"rightly changed that, change the Keeps: line in {rel} "
                                      "(the one change of the patch file a stop takes), then "
                                      "`patchforge rebase --continue`")
            detail = f"{stopped.kind} resolved by hand"
            if undoes:
                detail += "; undoes, as asked (--allow-undo): " + "; ".join(undoes)
            result = PatchResult(upstream, name, "resolved", detail,
                                 staged=self._stage(f"{upstream}/{name}", new_patch.to_bytes()))
            self._keep_created_files_left(result, patch, changes, target)
            if stopped.landed is not None:
                self._keep_hunks_left(result, self._old_patch(upstream, name), stopped,
                                      files, target)
            if kept_over:
                result.detail += "; look that it is meant: " + "; ".join(kept_over)
                self.kept_over += [f"{upstream}/{name}: {said}; look that it is meant"
                                   for said in kept_over]
        entry.results.append(result)
        entry.position += 1
        return files, modes

    def _keep_created_files_left(self, result: PatchResult, patch, changes, target) -> None:
        """--continue: a file the patch creates that the resolution leaves as the target has it
        (upstream's file taken at a `CONFLICT (add/add)`, or one upstream made the same, left
        alone at a stop on another file) is no longer in the resolved patch, and nothing else
        would keep the fix's version of it. Upstream's file the same as the fix's: that part
        landed, and is kept under upstreamed/ as a landed part of a moved patch is (a later
        revert of it is said). Another file: the user chose upstream's over the fix's, whose
        version is kept under deleted/ (`delete` keeps a fix there too, and `bring-back`
        names the way back), the result's detail saying so either way."""
        from patchforge.reverts import created_files_left

        landed, dropped = created_files_left(
            patch, changes, lambda paths: self.store.read_blobs(target.commit, paths))
        upstream, name = result.upstream, result.name
        if landed:
            part = patch.with_remade_diff(b"".join(fp.raw for fp in landed))
            verdict = SeriesJudge(self.store, target).assess(name, part)
            where = None
            if verdict.state == "upstreamed":
                where, _ = where_landed(self.store, target, part, verdict,
                                        self._history_index(upstream, target))
            kept = part.with_field("Applied-Upstream",
                                   target.label + (f", commit:{where}" if where else ""))
            shown = f" in {where[:12]}" if where else ""
            result.detail += (f"; {', '.join(fp.path for fp in landed)}, which it creates, "
                              f"landed upstream{shown} as the fix made it: kept under "
                              "upstreamed/")
            result.landed_part = self._stage(f"{upstream}/upstreamed/{name}", kept.to_bytes())
        if dropped:
            part = patch.with_remade_diff(b"".join(fp.raw for fp in dropped))
            result.detail += (f"; the fix's own {', '.join(fp.path for fp in dropped)} left "
                              f"for {target.label}'s, as the resolution took it: the fix's "
                              "version kept under deleted/")
            result.dropped_part = self._stage(f"{upstream}/deleted/{name}", part.to_bytes())

    def _keep_hunks_left(self, result: PatchResult, patch, stopped: Stop, files: dict,
                         target) -> None:
        """--continue on a patch some of whose hunks had landed upstream (the others stopped
        it): those the resolution leaves as upstream made them are in the stop's base, so no
        longer in the resolved patch, and are kept under upstreamed/ as the landed part of a
        patch that moved by itself is (the result's detail says so; a later revert of that
        landing is said). One the resolution changed or took out is the patch's own again."""
        landed = stopped.landed
        assert landed is not None

        def base(path: str) -> bytes | None:
            return self.store.read_blob(stopped.base, path)

        left = landed_part_left(patch, landed,
                                lambda path: files[path] if path in files else base(path), base)
        if left is None:
            return
        part, count, parts = left
        where = landed.landing
        kept = part.with_field("Applied-Upstream",
                               target.label + (f", commit:{where}" if where else ""))
        if result.landed_part is not None:
            # A file it creates that upstream made the same is kept too: one landed part.
            from patchforge.formats.patchfile import parse_patch_file

            created = parse_patch_file(self.journal.staged_bytes(result.landed_part))
            kept = created.with_remade_diff(created.diff + part.diff)
        result.detail += (f"; {part_words(patch, count, landed.total, parts, where)}, "
                          "left so by the resolution: kept under upstreamed/"
                          + rest_words(count, landed.total, parts))
        result.landed_part = self._stage(f"{result.upstream}/upstreamed/{result.name}",
                                         kept.to_bytes())

    def _refuse_removals(self, stopped: Stop, changes, target, work: Path) -> None:
        """UsageError (the rebase still stopped, nothing written) when the resolution takes
        away a file the target has and no later patch makes again, in a project that writes
        overlays: the write-out's overlays would refuse the series (an overlay cannot delete a
        file in the image), after the resolution was taken and maybe other stops resolved."""
        if not any(new is None for _, _, new, *_ in changes):
            return
        from patchforge.overlay import removals_overlays_refuse

        entry = self._run_record.upstreams[stopped.upstream]
        names = entry.names
        later = [self._old_patch(stopped.upstream, n)
                 for n in names[names.index(stopped.name) + 1:]] \
            if stopped.name in names else []
        refused = removals_overlays_refuse(self.project, self.store, target.commit, changes,
                                           later)
        if refused:
            listed = ", ".join(refused)
            raise UsageError(
                f"{listed} removed in {work}: {stopped.upstream}/{stopped.name} would delete "
                f"{listed} of {target.label}, and this project writes overlays, which cannot "
                "delete a file in the image (the write-out, like `patchforge overlays`, "
                "refuses a series that deletes one); the rebase is still stopped",
                hint=f"put {listed} back (`git checkout -- PATH` in {work} gives it as "
                     f"{target.label} has it: the patch then no longer deletes it; change it "
                     "as the image needs, e.g. empty it), then `patchforge rebase --continue`; "
                     f"or `patchforge rebase --skip` (the fix is kept in "
                     f"series/{stopped.upstream}/skipped/)")

    def _skip_stopped(self, stopped: Stop) -> None:
        from patchforge.ledger import skipped_detail

        upstream, name = stopped.upstream, stopped.name
        entry = self._run_record.upstreams[upstream]
        result = PatchResult(upstream, name, "skipped", skipped_detail(stopped.kind),
                             stopped.evidence, destination="skipped",
                             staged=self._stage(f"{upstream}/skipped/{name}",
                                                self.project.read_patch_bytes(upstream, name)))
        entry.results.append(result)
        entry.position += 1

    # --- the write-out ------------------------------------------------------------------------
    def _plan(self) -> tuple[list[tuple[str, bytes | None, str | None]], Lock]:
        """Every project file the rebase changes, in write order: (path from the root, new bytes
        or None to delete, the staged name of those bytes); and the lock the write-out leaves.
        Set-aside copies come before the series stops listing a patch and the old files go
        last, so no prefix of the plan ever loses a patch."""
        from patchforge.formats.lockfile import lock_to_json  # the write-out only

        project = self.project
        try:
            lock_raw: bytes | None = project.lock_path.read_bytes()
        except FileNotFoundError:
            lock_raw = None

        writes: list[tuple[str, bytes | None, str | None]] = []
        removals: list[tuple[str, None, None]] = []
        series_writes: list[tuple[str, bytes, None]] = []
        for upstream, entry in self._run_record.upstreams.items():
            kept = []
            for result in entry.results:
                name, staged = result.name, result.staged
                assert staged is not None, "a run that writes stages every result"
                data = self.journal.staged_bytes(staged)
                if result.destination == "series":
                    kept.append(name)
                    rel = project.patch_rel(upstream, name)
                    if data != self._old_bytes(upstream, name):
                        writes.append((rel, data, staged))
                    for where, staged_part in (("upstreamed", result.landed_part),
                                               ("deleted", result.dropped_part)):
                        if staged_part is None:
                            continue
                        part = self.journal.staged_bytes(staged_part)
                        aside = self._free_name(upstream, where,
                                                project.patch_path(upstream, name).name, part)
                        aside_rel = f"series/{upstream}/{where}/{aside}"
                        if not (project.root / aside_rel).exists():
                            writes.append((aside_rel, part, staged_part))
                    continue
                aside = self._free_name(upstream, result.destination,
                                        project.patch_path(upstream, name).name, data)
                aside_rel = f"series/{upstream}/{result.destination}/{aside}"
                # aside_name gives a name that is free or already holds these bytes.
                if not (project.root / aside_rel).exists():
                    writes.append((aside_rel, data, staged))
                removals.append((project.patch_rel(upstream, name), None, None))
            listed = project.read_series(upstream)
            series = listed.replaced_names(kept).to_bytes()
            if series != listed.to_bytes():
                series_writes.append((f"series/{upstream}/series", series, None))
        lock = self._lock_after()
        # No step writes the bytes a file already holds: a resumed write-out tells a step
        # renamed into place from one whose new file went missing by the target's bytes,
        # which such a step leaves as they were (a rebase to the pinned commit rewrote the
        # same lock, and a kill after that rename made --continue refuse for good).
        lock_bytes = lock_to_json(lock)
        lock_writes = [] if lock_bytes == lock_raw else [("upstream.lock", lock_bytes, None)]
        return writes + series_writes + lock_writes + removals, lock

    def _free_name(self, upstream: str, destination: str, name: str, data: bytes) -> str:
        """`name`, or `name` with a number when an earlier, different fix of that name is already
        set aside there (it must not be overwritten)."""
        from patchforge.stack import aside_name

        # Asked once per fix set aside: the write-out's plan, then the summary's kept name
        # (the file the write-out put there holds these bytes: the same name again).
        key = (upstream, destination, name, data)
        found = self._free_names.get(key)
        if found is None:
            found = self._free_names[key] = aside_name(
                self.project.series_dir(upstream) / destination, name, data)
        return found

    def _write_out(self, range_diff: _RangeDiffs | None = None) -> dict:
        """The run's result written into the project, with every command reading its files
        kept out until it is whole (`fsutil.WriteOutLock`): they wait, never read a mixture."""
        from patchforge.fsutil import WriteOutLock

        with WriteOutLock(self.project.root, exclusive=True, wait=WRITE_OUT_WAIT,
                          on_wait=self.on_wait_for_readers):
            return self._write_out_now(range_diff)

    def _write_out_now(self, range_diff: _RangeDiffs | None) -> dict:
        project, journal = self.project, self.journal
        run = self._run_record
        overlays = None
        resumed = run.phase == "committing"
        if not resumed:
            writes, lock = self._plan()
            if project.makes_overlays:
                from patchforge.overlay import (build_overlays, keep_moved_aside,
                                                refuse_changed_by_hand)

                # Built now, in memory, so that a series the overlays cannot take stops the run
                # before any project file is touched; so does an overlay file edited by hand
                # (while the run went on or was stopped: `start` refused one edited before),
                # which the write-out would replace.
                sources = self._new_sources()
                self._refuse_unmountable_names(sources)
                overlays = build_overlays(project, self.store, lock=lock,
                                          patch_sources=sources,
                                          kept_sources=self._new_kept_sources())
                refuse_changed_by_hand(project, overlays, rebasing=True)
                # A file moved aside as that refusal says: what it was made from is kept, for
                # the `import overlay` that follows (the project still holds the old series).
                keep_moved_aside(project, self.store)
            summary = self._summary(written=True)
            # Each new file's bytes go to a temporary file beside it, which the plan names.
            plan = [PlanStep(rel, staged, None) for rel, _, staged in writes]
            run.overlays_saved = journal.save_tree("overlays", project.overlays_dir)
            run.phase, run.plan, run.summary = "committing", plan, summary
            # What a killed attempt of this run left beside the files goes first.
            self._clean_temp_files()
            # The files the plan changes kept (linked), the new ones written beside them, then
            # the journal naming both.
            journal.save_write_out(
                [rel for rel, _, _ in writes] +
                [path.relative_to(project.root).as_posix() for path in _ledger_paths(project)],
                {rel: content for rel, content, _ in writes if content is not None})
        # git range-diff (a good part of a long run) runs while this process writes the
        # files; the old series is read here, before any write (on a resumed write-out, from
        # the journal's originals).
        if range_diff is None:
            inputs = self._range_diff_inputs()
            assert inputs is not None, "None only for recorded_only"
            range_diff = self._start_range_diffs(inputs)
        with range_diff as made:
            self._commit_files(made, overlays, resumed=resumed)
        journal.remove()
        return run.summary

    def _commit_files(self, range_diff: _RangeDiffs, overlays, *, resumed: bool) -> None:
        """The write-out proper: the plan's files, the overlays (`overlays` when built before
        the journal was saved), the ledger, last-rebase.json. `resumed`: the write-out was
        begun by a run killed since, whose temporary files are removed first (but those its
        plan renames)."""
        project, journal = self.project, self.journal
        run = self._run_record
        if resumed:
            self._clean_temp_files(keep_planned=True)
        # The plan puts every removal after every write (a fix moved to upstreamed/ exists
        # there before it leaves the series); the writes sync their directories, the renames' and
        # removals' are synced with the last batch, below. The new
        # files are renamed into place (a journal of version 1 names their bytes instead).
        writes, renames, removals = [], [], []
        for step, target in zip(run.plan, confined_all(project.root,
                                                       [step.path for step in run.plan])):
            if step.temp:
                renames.append((os.path.join(os.path.dirname(target), step.temp), target,
                                step.path))
            elif step.staged:  # a journal of version 1: the new bytes are in the journal
                writes.append((target, journal.staged_bytes(step.staged)))
            elif step.inline is not None:
                import base64  # here: inline bytes are a journal of version 1's

                writes.append((target, base64.b64decode(step.inline)))
            else:
                removals.append(target)
        self._rename_planned(renames)
        atomic_write_many(writes)  # a journal of version 1
        for target in removals:
            try:
                os.unlink(target)
            except FileNotFoundError:
                pass
        # Each directory of the renames and removals is synced once, with the last files'
        # batch below (one wait for the disk fewer): until the journal goes, whatever part of
        # them, of the overlays and of the last files the disk kept after a crash is finished
        # or undone from it.
        moved = [*(os.path.dirname(target) for _, target, _ in renames),
                 *(os.path.dirname(target) for target in removals)]
        if run.overlays_saved:
            from patchforge.overlay import build_overlays, write_overlays

            if overlays is None:  # resumed after a kill: the new state is on disk now
                overlays = build_overlays(project, self.store)
            write_overlays(project, overlays, check_hand_edits=False)  # checked before
        # The history records the run; a resumed write-out records it once (run ids). Its
        # files are made while git range-diff may still run, and written with
        # last-rebase.json, which needs the range-diff's text: one wait for the disk, not two.
        from patchforge import ledger  # the write-out only: not loaded at each stop

        _, records = ledger.rebase_writes(project, run.summary)
        for upstream in run.upstreams:
            self._remove_worktree(upstream)
        try:
            run.summary["range_diff"] = range_diff.result()
        except StoreError as exc:
            # The range-diff reports on the run; git failing to make it (a full /tmp, say)
            # must not fail a rebase whose files are written.
            run.summary["range_diff"] = f"(no range-diff: {exc})\n"
        # last-rebase.json is kept for `status --html` (the last rebase and its range-diff);
        # written while the journal still stands, so a kill here is finished by --continue
        # like any other step.
        atomic_write_many([*records, (project.state_dir / "last-rebase.json",
                                      (json.dumps(run.summary, sort_keys=True) + "\n").encode())],
                          also_sync=moved)

    def _rename_planned(self, renames: list[tuple[str, str, str]]) -> None:
        """Each new file's temporary file renamed over its target (synced before the journal
        named it: the rename is the whole commit; the caller syncs the directories). Resumed
        after a kill, a temporary file already renamed is not there: its target must then hold
        other bytes than the original's, or the new file is gone (removed by hand) and the
        run cannot finish it."""
        originals = None
        for temporary, target, rel in renames:
            fault_point("rename")
            try:
                os.replace(temporary, target)
                fault_point("renamed")
            except FileNotFoundError:
                if originals is None:
                    originals = self.journal.originals()
                if not os.path.exists(target) or Path(target).read_bytes() == originals.get(rel):
                    raise CorruptJournal(
                        f"{temporary}: the new {rel} that the rebase journal names is gone, "
                        f"and {rel} is as it was") from None

    def _made_by_set_aside(self, upstream: str, name: str, files: list[str]) -> str:
        """The stop's words for a fix whose files the target does not have (`files`) where an
        earlier fix of this run makes them that the run set aside (a stop `--skip`ped): the
        files are not gone ("not in the base either (nor made by an earlier patch)", its ways
        on dropping the change), that fix is in skipped/, and the way that keeps both is to
        set this one aside too and bring them back in order. "" when no such fix makes them."""
        makers: list[tuple[str, list[str]]] = []
        for result in self._run_record.upstreams[upstream].results:
            if result.destination != "skipped":
                continue
            made = [fp.new_path for fp in self._old_patch(upstream, result.name).file_patches
                    if fp.new_path in files and fp.new_path != fp.old_path]
            if made:
                makers.append((result.name, made))
        if not makers:
            return ""
        said = "; ".join(f"{', '.join(made)} made by {maker}" for maker, made in makers)
        back = " then ".join(f"`patchforge bring-back {self.project.patch_word(upstream, n)}`"
                             for n in [*(maker for maker, _ in makers), name])
        return (f"{said}, which this rebase set aside in skipped/: to keep both, --skip this "
                f"one too, then {back}")

    def _old_patch(self, upstream: str, name: str):
        """A patch of the series being moved, read once: its file does not change before the
        write-out, and the run looks at every patch several times (refusals, the judge, the
        history index, the range-diff)."""
        key = (upstream, name)
        if key not in self._read_patches:
            self._read_patches[key] = self.project.read_patch(upstream, name)
        return self._read_patches[key]

    def _old_bytes(self, upstream: str, name: str) -> bytes:
        """A patch file of the series as the run read it (its parse gives the bytes back
        exactly), else as it is on disk: the plan tells the files it changes by them."""
        known = self._read_patches.get((upstream, name))
        return known.to_bytes() if known is not None else \
            self.project.read_patch_bytes(upstream, name)

    def _old_series(self, upstream: str, names: list[str]) -> list:
        return [(name, self._old_patch(upstream, name)) for name in names]

    def _source(self, upstream: str, name: str) -> str:
        """The name a patch is parsed under: its path in the series, as Project.read_patch
        does, so that one parse serves the judge, the range-diff and the ledger."""
        return str(self.project.patch_path(upstream, name))

    def _staged_patch(self, upstream: str, result: PatchResult):
        assert result.staged is not None, "a run that writes stages every result"
        return self.project.parse_patch(self.journal.staged_bytes(result.staged),
                                        self._source(upstream, result.name))

    def _unmountable_after_move(self, upstream: str, name: str, patch, changes) -> str | None:
        """Where the project writes overlays, a fix whose move (`changes`) follows upstream to
        a file name that is not UTF-8 (overlay.followed_to_unnamed):
        the real run refuses it here (InputError, with --abort as the way out); a dry run gets
        what the real run would say, for its result. None for any other move."""
        # (ASCII names, nearly all, need neither the overlay module, which loads shutil, nor
        # a look at the project.)
        if all(change.new_path is None or change.new_path.isascii() for change in changes) \
                or not self.project.makes_overlays:
            return None
        from patchforge.overlay import (UNNAMED_MOVE_WAY_OUT, followed_to_unnamed,
                                        move_to_unnamed_said)

        found = followed_to_unnamed(patch, [change.new_path for change in changes])
        if not found:
            return None
        said = move_to_unnamed_said(f"{upstream}/{name}", found[0])
        if self._run_record.dry_run:
            return f"{said}: `rebase --to` is refused here ({UNNAMED_MOVE_WAY_OUT})"
        raise InputError(f"{said}; nothing was written",
                         path=str(self.project.patch_path(upstream, name)),
                         hint=f"`patchforge rebase --abort` puts everything back; then "
                              f"{UNNAMED_MOVE_WAY_OUT}")

    def _refuse_unmountable_names(self, new_sources: dict) -> None:
        """A fix that follows its file to a name that is not UTF-8 (upstream renamed it so, or
        a file `add`ed at a stop has one): the overlays cannot mount it, and no `--continue`
        changes that. Said of the fix, the name as git quotes it, with the way out: --abort.
        `new_sources`: _new_sources()."""
        from patchforge.overlay import (UNNAMED_MOVE_WAY_OUT, move_to_unnamed_said,
                                        series_unnamed_files)

        for upstream, sources in new_sources.items():
            found = series_unnamed_files([(n, p) for n, p, _ in sources])
            had = set(series_unnamed_files(
                [(n, self.project.parse_patch(self.project.read_patch_bytes(upstream, n),
                                              self._source(upstream, n)))
                 for n in self.project.patch_names(upstream)])) if found else set()
            for name, path in found:
                if (name, path) not in had:
                    raise InputError(
                        f"{move_to_unnamed_said(f'{upstream}/{name}', path)}; nothing was "
                        "written", path=str(self.project.patch_path(upstream, name)),
                        hint=f"`patchforge rebase --abort` puts everything back; then "
                             f"{UNNAMED_MOVE_WAY_OUT}")

    def _new_sources(self) -> dict:
        """{upstream: [(name, PatchFile, bytes)]} of the new series, for build_overlays."""
        sources = {}
        for upstream in self.project.upstream_names():
            entry = self._run_record.upstreams.get(upstream)
            if entry is not None:
                raw = [(r.name, self.journal.staged_bytes(r.staged))
                       for r in entry.results if r.destination == "series" and r.staged]
            else:
                raw = [(n, self.project.read_patch_bytes(upstream, n))
                       for n in self.project.patch_names(upstream)]
            sources[upstream] = [(n, self.project.parse_patch(b, self._source(upstream, n)), b)
                                 for n, b in raw]
        return sources

    def _new_kept_sources(self) -> dict:
        """{upstream: [(file name, bytes)]} of the fixes under upstreamed/ after the write-out
        (those kept already and this run's drops), for build_overlays: the Dockerfile checks
        their files, and must be what `overlays` makes after the run."""
        from patchforge.names import KEPT_LANDINGS
        from patchforge.reverts import kept_fixes

        sources = {}
        for upstream in self.project.upstream_names():
            entry = self._run_record.upstreams.get(upstream)
            kept = dict(kept_fixes(self.project, upstream))
            for result in (entry.results if entry else []):
                # A fix dropped as landed, and the landed part of one that moves on: each is
                # written under upstreamed/ (_plan), under the name the write-out gives it
                # there (a number where an earlier, different fix holds the name).
                staged = result.staged if result.destination == KEPT_LANDINGS else \
                    result.landed_part if result.destination == "series" else None
                if not staged:
                    continue
                data = self.journal.staged_bytes(staged)
                kept[self._free_name(upstream, KEPT_LANDINGS,
                                     self.project.patch_path(upstream, result.name).name,
                                     data)] = data
            # By name, as kept_fixes lists those on disk: the Dockerfile names them in this
            # order, and the run's results come in the series' order.
            sources[upstream] = sorted(kept.items())
        return sources

    def _clean_temp_files(self, *, keep_planned: bool = False) -> None:
        """Remove the temporary files of atomic writes (`.NAME.XXXXXXXXXX.tmp`) a killed run
        left where the write-out writes (the series directories, their set-aside directories,
        the ledger's, upstream.lock's); with `keep_planned`, not those the journal's plan names
        (the write-out's new files, which it renames). One listing per directory."""
        from patchforge import ledger  # (loaded for _ledger_paths too)

        project = self.project
        keep = set(self.journal.planned_temporaries()) if keep_planned else set()
        places: dict[Path, tuple[str, ...] | None] = {
            project.root: ("upstream.lock",),
            project.series_root: tuple(path.name for path in _ledger_paths(project))}
        for upstream in project.upstream_names():
            series = project.series_dir(upstream)
            places[series] = None  # any name: the patches and the series file
            for aside, _ in ledger.SET_ASIDE:
                places[series / aside] = None
        for place, names in places.items():
            try:
                listing = os.listdir(place)
            except (FileNotFoundError, NotADirectoryError):
                continue
            for entry in listing:
                found = TEMPORARY_NAME.fullmatch(entry)
                if found and (names is None or found.group(1) in names) and \
                        place / entry not in keep:
                    (place / entry).unlink(missing_ok=True)

    # --- reporting ----------------------------------------------------------------------------
    def _lock_after(self) -> Lock:
        """The lock the run leaves: each upstream at its new pin, those resolved through an
        image last, so that the image one of them brings stays whatever order they were named
        in (another's move off the image drops the pin: Lock.with_pin)."""
        lock = self.project.lock
        moves = sorted(self._run_record.upstreams.items(),
                       key=lambda item: item[1].new.image is not None)
        for upstream, entry in moves:
            lock = lock.with_pin(upstream, entry.new)
        return lock

    def _summary(self, *, written: bool, kept: bool = True) -> dict:
        """The run's summary; with `kept`, also the fixes under upstreamed/ whose change the
        new target no longer has (`reverted`, `gone_upstream`) and those that could not be
        judged there (`not_checked`), each only when not empty."""
        run = self._run_record
        results = [r for entry in run.upstreams.values() for r in entry.results]
        counts = {action: 0 for action in ACTIONS}
        for r in results:
            counts[r.action] += 1
        summary = {
            "dry_run": run.dry_run,
            "written": written,
            "upstreams": {u: {"from": e.old.label, "from_commit": e.old.commit,
                              "to": e.new.label, "to_commit": e.new.commit}
                          for u, e in run.upstreams.items()},
            "patches": [self._patch_json(r) for r in results],
            "counts": counts,
            "range_diff": "",
            "stopped": None,
        }
        if kept:
            summary.update(self._kept_gone(results))
        unpinned = self._lock_after().dropped_image(self.project.lock)
        if unpinned is not None:
            # The deployment must not go on naming an image that lacks the new revision.
            summary["image_unpinned"] = {"reference": unpinned.reference,
                                         "digest": unpinned.digest}
        return summary

    def _patch_json(self, result: PatchResult) -> dict:
        """A patch's entry in the summary; one set aside under a numbered name (an earlier,
        different fix of its name is kept there) says which (`kept_as`): its history event
        then names the file the fix is kept in, not the other fix's."""
        entry = {k: v for k, v in result.to_json().items() if k not in ("staged", "landed_part", "dropped_part")}
        if result.destination != "series":
            kept = self._kept_as(result)
            if kept != self.project.patch_path(result.upstream, result.name).name:
                entry["kept_as"] = kept
        if result.destination == "skipped":
            # The series' question of where upstream moved its files, recorded with the fix
            # (its history event): `bring-back` asks it for the whole series again, never for
            # the fix's files alone, where another series file nearer the same new file
            # would lose its pairing to the fix's.
            entry["series_gone"] = self._series_gone(result.upstream)
        return entry

    def _series_gone(self, upstream: str) -> list[str]:
        """judge.series_gone of `upstream`'s series over the run's target, asked once."""
        if upstream not in self._gone_asked:
            entry = self._run_record.upstreams[upstream]
            self._gone_asked[upstream] = series_gone(
                self.store, self._target(upstream, entry), self._old_series(upstream, entry.names))
        return self._gone_asked[upstream]

    def _kept_gone(self, results) -> dict:
        """The fixes kept under upstreamed/ (not those this run drops: landed at the target by
        its own judgement) whose change the new target's files no longer have, judged at the
        target (reverts.gone_upstream): a landing upstream reverted is said by the rebase that
        reaches the revert, never left to sit in upstreamed/ without a word."""
        upstreams = {upstream: entry for upstream, entry in self._run_record.upstreams.items()
                     if (self.project.series_dir(upstream) / "upstreamed").is_dir()}
        if not upstreams:
            return {}  # nothing kept: the check's module is not even loaded
        from patchforge.reverts import gone_upstream, unread_said

        found = []
        not_checked = []
        for upstream, entry in upstreams.items():
            dropped = frozenset(self._kept_as(r) for r in results
                                if r.upstream == upstream and r.destination == "upstreamed")
            unread: list[tuple[str, str]] = []
            found += gone_upstream(self.project, self.store, upstream, entry.new.commit,
                                   skip=dropped, unread=unread)
            # One whose files (or the revision it landed in) could not be read was passed
            # over without a word: the move read as one leaving every kept fix at the target,
            # while `status` after it said NOT CHECKED. Said as status says it.
            not_checked += [unread_said(self.project, upstream, entry.new.label, name, why)
                            for name, why in unread]
        return {key: value for key, value in (
            ("reverted", [g.to_json() for g in found if g.reverted]),
            ("gone_upstream", [g.to_json() for g in found if not g.reverted]),
            ("not_checked", not_checked)) if value}

    def _kept_as(self, result: PatchResult) -> str:
        """The file name under upstreamed/ (or skipped/) a patch this run sets aside is (or, in
        a dry run, would be) kept as: its own name, or a numbered one when an earlier, different
        fix of that name is kept there (which is judged like any other kept fix: a landing of
        the old fix that the target reverted is said even when the new fix of that name
        landed)."""
        name = self.project.patch_path(result.upstream, result.name).name
        data: bytes | None
        if result.staged is not None:
            data = self.journal.staged_bytes(result.staged)
        else:
            data = self._aside_bytes.get((result.upstream, result.name))
        if data is None:
            return name
        return self._free_name(result.upstream, result.destination, name, data)

    def stop_document(self, message: str) -> dict:
        """The `--json` document of a run that stopped: the summary so far and the stop."""
        summary = self._summary(written=False, kept=False)
        stop = self._run_record.stopped
        stopped = stop.to_json() if stop is not None else {}
        # The journal's own, for --continue (as `staged` is): no part of the stop users read.
        stopped.pop("landed", None)
        stopped.pop("keeps_free", None)
        stopped["message"] = message
        summary["stopped"] = stopped
        return summary

    def _close_chains(self) -> None:
        """End the range-diff imports this run started (a stop, an error, or done)."""
        for chains in self._chains.values():
            if chains is not None and chains.importer is not None:
                chains.importer.close()

    def _range_diff_inputs(self, *, recorded_only: bool = False) -> list[_RangeDiffInput] | None:
        """Per upstream, the old and the new chain: the steps this run recorded, else the
        patch files to apply. The old patch files come from the journal's originals when the
        write-out has begun (they may be replaced on disk already). With recorded_only, None
        unless every chain was recorded."""
        inputs = []
        for upstream, entry in self._run_record.upstreams.items():
            old_names = list(entry.names)
            new_results = [r for r in entry.results if r.destination == "series"]
            new_names = [r.name for r in new_results]
            chains = self._chains.get(upstream)
            recorded = chains is not None and not chains.broken and \
                len(chains.old) == len(old_names) and [n for n, _ in chains.new] == new_names
            if chains is not None and recorded:
                old = _Chain(entry.old.commit, steps=(sorted(chains.old_paths), chains.old))
                new = _Chain(entry.new.commit, steps=(sorted(chains.new_paths), chains.new))
            elif recorded_only:
                return None
            else:
                originals = self.journal.originals()
                old_patches = []
                for name in old_names:
                    saved = originals.get(self.project.patch_rel(upstream, name))
                    old_patches.append((name, self.project.parse_patch(saved,
                                                                       self._source(upstream, name))
                                        if saved is not None else self._old_patch(upstream, name)))
                old = _Chain(entry.old.commit, patches=old_patches)
                new = _Chain(entry.new.commit, patches=[(r.name, self._staged_patch(upstream, r))
                                                        for r in new_results])
            inputs.append(_RangeDiffInput(upstream, old_names, new_names, old, new))
        return inputs

    def _start_range_diffs(self, inputs: list[_RangeDiffInput], *,
                           ask: bool = False) -> _RangeDiffs:
        """`git range-diff` of the old series (on the old base) against the new one (on the new
        base), per upstream, started: each series becomes a chain of commits over a tree
        holding only the files the series touch, written as one pack (store.RangeDiffImport),
        and git runs while the caller goes on. A context manager: leaving it ends them."""
        return _RangeDiffs([self._start_range_diff(one, ask) for one in inputs],
                           self._close_chains)

    def _start_range_diff(self, one: _RangeDiffInput, ask: bool = False):
        """The range-diff of one upstream: its text (prefixed by the upstream's name), a
        RangeDiffRun under way, or the StoreError that kept it from starting."""
        upstream, old_names, new_names = one.upstream, one.old_names, one.new_names
        if not old_names or not new_names:
            # git refuses an empty range, and its lines for one would hold dashes where the
            # commit ids go: nothing for two empty series (no header is printed then), a
            # sentence for one.
            if not old_names and not new_names:
                return ""
            which, names = ("new", old_names) if old_names else ("old", new_names)
            return (f"{upstream}: the {which} series is empty, nothing to compare "
                    f"{', '.join(names)} with\n")
        try:
            return upstream, self._range_diff_run(one, ask)
        except StoreError as exc:
            return exc

    def _range_diff_run(self, one: _RangeDiffInput, ask: bool = False):
        upstream = one.upstream
        recorded = self._chains.get(upstream)
        if one.old.steps is not None and one.new.steps is not None and recorded is not None \
                and recorded.importer is not None:
            importer = recorded.importer
            chains = [(chain.base, *chain.steps) for chain in (one.old, one.new)
                      if chain.steps is not None]
            return importer.start(chains, made_hunks=self._made_hunks, moved_exactly=frozenset(
                self._moved_exactly.get(upstream, ())), ask=self._ask_diffs if ask else None)
        else:  # a resumed run: the chains come from applying the patch files
            chains = [(chain.base, *_chain_steps(self.store, chain.base, chain.patches or []))
                      for chain in (one.old, one.new)]
            importer = self.store.range_diff_import()
        return importer.start(chains)


class _RangeDiffs:
    """The range-diffs of a run, per upstream, as `Rebase._start_range_diffs` started them;
    result() waits for their text. A context manager: leaving it ends those still running and
    the run's range-diff imports (`end`)."""

    def __init__(self, parts: list, end) -> None:
        self._parts = parts  # text, (upstream, RangeDiffRun), or the StoreError of a start
        self._end = end

    def __enter__(self) -> _RangeDiffs:
        return self

    def __exit__(self, *exc) -> None:
        for part in self._parts:
            if isinstance(part, tuple):
                part[1].close()
        self._end()

    def settle(self) -> None:
        """Each range-diff's RangeDiffRun.settle (a StoreError kept for result())."""
        for k, part in enumerate(self._parts):
            if isinstance(part, tuple):
                try:
                    part[1].settle()
                except StoreError as exc:
                    part[1].close()
                    self._parts[k] = exc

    def result(self) -> str:
        """The whole text; the first StoreError met when git could not make one."""
        texts = []
        for part in self._parts:
            if isinstance(part, StoreError):
                raise part
            if isinstance(part, tuple):
                upstream, run = part
                part = f"{upstream}:\n" + run.result().decode("utf-8", "replace")
            texts.append(part)
        return "".join(texts)


@record
class _Chain:
    """One side of a range-diff: a series over its base, as the run recorded it (the paths it
    touches and per patch the files it changes, marked in the run's import), or as the patch
    files, to be applied."""
    base: str
    steps: tuple[list[str], list] | None = None
    patches: list | None = None


@record
class _RangeDiffInput:
    upstream: str
    old_names: list[str]
    new_names: list[str]
    old: _Chain
    new: _Chain


def _history_index(store: UpstreamStore, target: Target, paths: list[str]) -> HistoryIndex | None:
    """The history between the target's base and the target, for `paths` (judge.HistoryIndex);
    None without one (a wheel or directory upstream's imports are unrelated root commits). The
    walk comes first and also says whether there is one (judge.read_history), as for `status`:
    a `git merge-base` before it was a process more."""
    changes = read_history(store, target)
    return HistoryIndex(store, target, paths, changes=changes) if changes is not None else None


def _ledger_paths(project: Project) -> list[Path]:
    """series/PATCHES.md and series/history.jsonl, which the write-out changes too."""
    from patchforge import ledger

    return [ledger.ledger_path(project), ledger.history_path(project)]


def _chain_steps(store: UpstreamStore, base: str, patches) -> tuple[list[str], list]:
    """The paths a series touches and, per patch, the files it changes ({path: bytes, None when
    deleted}), by applying it over `base`: the range-diff chain of a series the run did not
    walk itself (a resumed rebase)."""
    paths = sorted({p for _, patch in patches for p in patch.paths})
    state = SeriesState()
    state.current.update(store.read_blobs(base, paths) if paths else {})
    state.base.update(state.current)
    steps = []
    for name, patch in patches:
        before = _contents(state.current, patch.paths)
        apply_series(_reads(store, base), [(name, patch)], strict=False, state=state)
        steps.append((name, _changed(before, state.current)))
    return paths, steps


# A path the old series had not read yet when a patch came to it (its content the base's):
# told apart from one it holds as deleted (None).
_UNREAD = object()


def _contents(files: dict, paths) -> dict:
    """`files`' contents at `paths` (None where it has none, _UNREAD where it has not read
    it): what a patch may change of them, kept before it is applied. Applying a patch changes
    only the paths it names, so the whole series' files are not copied for each patch
    (quadratic in a long series)."""
    return {path: files.get(path, _UNREAD) for path in paths}


def _changed(before: dict, after: dict) -> dict:
    """The files of `before` (see _contents) whose content in `after` differs (None: deleted).
    A file read only when the patch came to it counts as changed: a rename's old path, never
    read before, is deleted by it (its None equalled the None of "not read" and the deletion
    was lost: the range-diff's chain showed the rename as a new file, unpaired with the new
    series' rename, git's rename detection having nothing to pair)."""
    return {path: after[path] for path, content in before.items()
            if path in after and (content is _UNREAD or after[path] != content)}


class _Chains:
    """The range-diff chains as a run makes them: per patch, the files it changes, in the old
    series over the old base and in the new series over the new base. Contents go to the
    store's RangeDiffImport at once; the chains keep their marks."""

    def __init__(self, store: UpstreamStore) -> None:
        self.broken = False  # the import failed: the range-diff is made from the files instead
        self.importer: RangeDiffImport | None
        try:
            self.importer = store.range_diff_import()
        except StoreError:
            self.importer, self.broken = None, True
        self.old: list[tuple[str, dict]] = []
        self.new: list[tuple[str, dict]] = []
        self.old_paths: set[str] = set()
        self.new_paths: set[str] = set()
        # content -> (the content it was made from, the edits), or None: the walk's
        # (apply.hunks.PatchApplications.made_from)
        self.made_from: Callable[[bytes], tuple | None] = lambda content: None

    def _marked(self, files: dict) -> dict | None:
        if self.broken or self.importer is None:
            return None
        try:
            return {path: None if content is None
                    else self.importer.blob(content, self.made_from(content))
                    for path, content in files.items()}
        except StoreError:
            # A report must not stop the rebase: the end of the run makes it another way.
            self.broken = True
            self.importer.close()
            return None

    def add_old(self, name: str, files: dict, paths) -> None:
        marked = self._marked(files)
        if marked is not None:
            self.old.append((name, marked))
            self.old_paths.update(paths)

    def add_new(self, name: str, files: dict, paths) -> None:
        marked = self._marked(files)
        if marked is not None:
            self.new.append((name, marked))
            self.new_paths.update(paths)


def _keeps_free_digest(patch: PatchFile) -> str:
    """The sha256 of a patch file without its Keeps: lines (Stop.keeps_free)."""
    import hashlib

    return hashlib.sha256(patch.without_field("Keeps").to_bytes()).hexdigest()


def landed_part(patch, verdict, *, hunks: dict[str, list[int]] | None = None,
                parts: dict[str, dict[int, tuple[int, ...]]] | None = None):
    """The patch with only its hunks that landed upstream (a `partial` verdict's), or None
    when they cannot be kept so (a file it copies, part of a file it creates or deletes, a
    mode change): the form a landed fix is kept in under upstreamed/, on the patch's own base.
    A file it creates (deletes) whole that upstream made the same is kept whole, and so is a
    binary file upstream made the patch's post-image (one change, told by blob id: its `index`
    line stays). Elsewhere the `index` lines go (their post-image is the whole patch's), and
    each kept hunk's new line numbers follow the hunks left out before it. The landed hunks of
    a file it renames are kept as a change of the file at its old path: upstream landed them
    there, without the rename (which stays the moved patch's). `parts`: the changes inside
    hunks not landed whole that landed (Judgement.parts), each such hunk kept with those
    changes alone (apply.parts.with_changes: on the patch's own base)."""
    from patchforge.apply.diffparse import format_file_patch, format_hunk
    from patchforge.apply.parts import with_changes
    from patchforge.model.record import replace

    # (A verdict names each file by its path before the patch: a renamed file by its old one.)
    # `hunks`, where given, names them instead (those a stop's resolution left to upstream).
    landed = {fv.path: {hv.index for hv in fv.hunks if hv.landed} for fv in verdict.files} \
        if hunks is None else {path: set(found) for path, found in hunks.items()}
    sections = []
    for fp in patch.file_patches:
        wanted = landed.get(fp.source_path if fp.is_rename else fp.path) or set()
        within = (parts or {}).get(fp.source_path if fp.is_rename else fp.path) or {}
        wanted = wanted | set(within)
        if not wanted:
            continue
        head = None
        if fp.is_rename and not fp.is_binary and fp.hunks and fp.old_mode == fp.new_mode:
            fp = replace(fp, new_path=fp.old_path, is_rename=False, similarity=None)
            first = format_file_patch(replace(fp, hunks=fp.hunks[:1]))
            head = first[:len(first) - len(format_hunk(fp.hunks[0]))]
        if fp.binary is not None and not fp.is_rename and not fp.is_copy:
            sections.append(fp.raw)  # the blob upstream has now, as the patch made it
            continue
        if (fp.is_new or fp.is_delete) and not fp.is_binary and fp.hunks and \
                wanted == set(range(len(fp.hunks))):
            sections.append(fp.raw)  # a file made (or taken away) whole, as upstream did
            continue
        if fp.is_new or fp.is_delete or fp.is_rename or fp.is_copy or fp.is_binary \
                or fp.old_mode != fp.new_mode or not fp.hunks:
            return None
        if head is None and fp.hunks[0].raw in fp.raw:
            head = fp.raw[:fp.raw.index(fp.hunks[0].raw)]
        if head is None:
            return None
        head = b"".join(line for line in head.splitlines(keepends=True)
                        if not line.startswith(b"index "))
        body, shift = [], 0
        for k, hunk in enumerate(fp.hunks):
            if k not in wanted:
                shift -= hunk.new_count - hunk.old_count
                continue
            first = hunk.raw.partition(b"\n")[0]
            eol = b"\r\n" if first.endswith(b"\r") else b"\n"
            # A hunk some of whose changes landed: those alone (the others' lines context).
            kept = with_changes(hunk, within[k]) if k in within else hunk
            rest = kept.raw.partition(b"\n")[2]
            # (with_changes may trim context the left-out changes became: its own numbers.)
            header = (f"@@ -{kept.old_start},{kept.old_count} "
                      f"+{kept.new_start + shift},{kept.new_count} @@").encode() + hunk.section
            body.append(header + eol + rest)
            shift -= (hunk.new_count - hunk.old_count) - (kept.new_count - kept.old_count)
        sections.append(head + b"".join(body))
    if not sections:
        return None
    return patch.with_remade_diff(b"".join(sections))


def part_landed_in(store, target, name: str, part, index) -> str | None:
    """The commit that landed `part` (a patch's landed part: with changes inside a hunk in it,
    which the patch's own verdict does not count as landed, or hunks of a fix whose other
    hunks landed in an earlier commit since taken back): the part judged alone on the
    target, then looked up as a landed fix is; None where that judgement is not `upstreamed`
    or no commit is found."""
    if part is None:
        return None
    judged = SeriesJudge(store, target).assess(name, part)
    if judged.state != "upstreamed":
        return None
    try:
        return where_landed(store, target, part, judged, index)[0]
    except PatchforgeError:
        return None


def landed_words(patch, verdict, parts: dict | None, where: str | None) -> str:
    """What a rebase and bring-back say of a fix's landed part: "1 of its 2 hunks landed
    upstream in C", or, with changes inside a hunk (`parts`, Judgement.parts), "landed in
    part: 1 of the 2 changes in its hunk 1 (pkg/a.py) landed upstream in C"."""
    return part_words(patch, verdict.hunks_landed, verdict.hunks_total, parts, where)


def part_words(patch, landed: int, total: int, parts: dict | None, where: str | None) -> str:
    """landed_words of `landed` hunks of `total` and `parts`."""
    shown = f" in {where[:12]}" if where else ""
    if not parts:
        return f"{landed} of its {total} hunks landed upstream{shown}"
    from patchforge.apply.parts import parts_landed

    said = [f"{landed} of its {total} hunks"] if landed else []
    said += [f"{made} of the {changes} changes in its hunk {index + 1} ({path})"
             for path, index, made, changes in parts_landed(patch, parts)]
    return f"landed in part: {', '.join(said)} landed upstream{shown}"


def rest_words(landed: int, total: int, parts: dict | None) -> str:
    """What stays in the series beside a landed part kept under upstreamed/: "; the fix stays
    in the series with its other hunk". Without it, "2 of its 3 hunks landed upstream: kept
    under upstreamed/" reads as the whole fix leaving the series."""
    if parts or landed >= total:
        # (Changes inside a hunk landed: the rest is counted in changes, not hunks.)
        return "; the fix stays in the series with the rest of its changes"
    left = total - landed
    return (f"; the fix stays in the series with its other "
            f"{'hunk' if left == 1 else f'{left} hunks'}")


def landed_hunks(verdict, landing: str | None, parts: dict | None = None) -> LandedHunks | None:
    """The hunks of a stopped patch that landed upstream (its verdict's), and the changes
    inside hunks that did (`parts`, Judgement.parts), for --continue to keep those the
    resolution leaves to upstream; None when none did."""
    hunks = {fv.path: [hv.index for hv in fv.hunks if hv.landed] for fv in verdict.files}
    hunks = {path: found for path, found in hunks.items() if found}
    if not hunks and not parts:
        return None
    at = {fv.path: fv.target_path for fv in verdict.files
          if (fv.path in hunks or fv.path in (parts or {})) and fv.target_path
          and fv.target_path != fv.path}
    return LandedHunks(hunks, at, verdict.hunks_total, landing,
                       {path: {index: list(changes) for index, changes in found.items()}
                        for path, found in (parts or {}).items()})


def landed_part_left(patch, landed: LandedHunks, read, read_base, *,
                     keeping: dict[str, list[int]] | None = None
                     ) -> tuple[PatchFile, int, dict] | None:
    """The landed hunks of a stopped patch (`landed`) that its resolution leaves as upstream
    made them, as landed_part keeps them, and how many: each one whose change is in the
    stop's base (`read_base(path)`) and in the resolved file (`read(path)`: its content
    after the resolution, None when absent), at the path the patch gives it, or where
    upstream has it. One the resolution made again itself is in the resolved patch, and one
    it took out is no longer upstream's. A file the patch creates is left to the rebase's
    own check of created files (kept whole, or the fix's version under deleted/). The landed
    changes inside hunks (`landed.parts`) alike, each the hunk with that change alone: the
    third of what is returned names those left so. `keeping`: hunks kept with them whatever
    the resolution, not counted (a split bring-back's hunks upstream moved elsewhere in the
    file: the stop judged the fix without them). None when no hunk is left or kept so."""
    from patchforge.reverts import change_state

    created = {fp.path for fp in patch.file_patches if fp.is_new}
    renamed = {fp.old_path: fp.new_path for fp in patch.file_patches if fp.is_rename}
    left: dict[str, list[int]] = {}
    parts_left: dict[str, dict[int, tuple[int, ...]]] = {}
    asked: list[tuple[str, int, tuple[int, ...] | None]] = [
        (path, index, None) for path, indices in landed.hunks.items() for index in indices]
    asked += [(path, index, tuple(changes)) for path, found in landed.parts.items()
              for index, changes in found.items()]
    for path, index, changes in asked:
        if path in created:
            continue
        places = [p for p in dict.fromkeys((renamed.get(path), landed.at.get(path), path)) if p]
        one = landed_part(patch, None, hunks={path: [index]}) if changes is None else \
            landed_part(patch, None, hunks={}, parts={path: {index: changes}})
        if one is None or len(one.file_patches) != 1:
            continue
        if any(change_state(one.file_patches[0], read(place)) == "present" and
               change_state(one.file_patches[0], read_base(place)) == "present"
               for place in places):
            if changes is None:
                left.setdefault(path, []).append(index)
            else:
                parts_left.setdefault(path, {})[index] = changes
    count = sum(map(len, left.values()))
    for path, found in (keeping or {}).items():
        left[path] = sorted(set(left.get(path, [])) | set(found))
    part = landed_part(patch, None, hunks=left, parts=parts_left) \
        if any(left.values()) or parts_left else None
    return None if part is None else (part, count, parts_left)
