"""The judge: a series walked over a target the way a rebase meets it (`SeriesJudge`), deciding
for each patch landed / applies / stop (`Judgement`, with the files it gives); and for a landed
patch, the upstream commit it landed in (`landed_in`, over a `HistoryIndex` of the history
between base and target). `status`, `rebase`, `pr` and `bring-back` all decide with
`SeriesJudge.judge`/`decide`, so they never disagree about a patch.
"""
from __future__ import annotations

import ast
import bisect
import io
import itertools
import keyword
import os
import re
import threading
from collections import Counter
from functools import lru_cache
from typing import TYPE_CHECKING, Callable

from patchforge.apply.diffparse import c_unquote, parse_diff, split_lines
from patchforge.apply.hunks import (FileApplication, PatchApplications, another_function,
                                    apply_file_patch, changed_places, copies_changed, copies_left,
                                    _language, defined_names, file_changes, function_named_at,
                                    mapped_places, placed_at, sampled_blocks, same_ends,
                                    repeated_places, unproven)
from patchforge.apply.neartext import (ALWAYS_BUILT, C_DIRECTIVE, NEAR_LINES, NEVER_BUILT,
                                       SHORT_NEAR_LINES, STRING_OR_COMMENT, NearText, block_runs,
                                       doubled_near, in_place_runs, is_guard, is_in_place,
                                       line_spans, near_lines, near_runs, near_windows,
                                       past_open_text, replacing_runs, short_runs, telling_runs)
from patchforge.apply.series import git_mode
from patchforge.apply.valueforms import BlockReading, read_block
from patchforge.background import Background
from patchforge.detect import (NOT_AT_BASE, OwnPlaces, PatchVerdict, PlaceDiffs,
                               assess_patch, created_identically, gone_file, spaced_literals)
from patchforge.errors import InputError, StoreError
from patchforge.history import (MIN_CHANGED_CHARS, MOVED_SHARE, WHITESPACE,
                                blocks_of_file_patch, blocks_of_git_diff, code_lines, code_of,
                                combine, combine_series, judge_history, loose_code, loose_code_key,
                                may_reverse,
                                file_strings, old_blob, over_lines, patch_blocks, put_in, share,
                                strings_open_at, taken_out, undo_probes, without_whitespace)
from patchforge.model.record import field, record, replace
from patchforge.names import shell_quoted_bytes
from patchforge.patterns import on_first_use
from patchforge.store.diff import (DEFAULT_LABELS, FileChange, FileMerge, blob_oid,
                                   blocks_of_file_diff, check_path, decode_path, diff_header,
                                   is_binary, split_at_file_headers, git_output_path, kept_answers,
                                   make_diffs, merge_file, merges_as_binary)

if TYPE_CHECKING:
    import mmap
    from collections.abc import Sequence

    from patchforge.store.gitstore import HistoryDiffs, UpstreamStore

# The content states in which the history is asked whether the patch landed: its pre-image is
# not all in the target, or the checks disagree (history.combine never overturns the rest).
HISTORY_DECIDES = {"fuzz", "conflict", "partial", "unsure"}
_REVERTS = on_first_use(rb"^    This reverts commit ([0-9a-f]{7,40})")
# A diff's `+` (`-`) lines, its header lines among them: every line a block adds (removes).
_PLUS_LINE = on_first_use(rb"\n\+([^\n]*)")
_MINUS_LINE = on_first_use(rb"\n-([^\n]*)")
# A diff's `+` line (not its `+++ ` header line): what it adds, without the `+`. Matched
# after the line end before it (the text is given a line end first): a pattern led by `^`
# (re.M) is tried at every byte of the diff, one led by a `\n` only where one is (6x faster).
_ADDED_LINE = on_first_use(rb"\n\+(?!\+\+ )([^\n]*)")
# Where a commit's id on a line (`git diff-tree --stdin`) or a file's section starts, each
# after a line end: no line of a hunk is either (each starts with ' ', '+', '-' or '\\'), nor
# is a header line of git's. The line end leads the pattern: a pattern with a literal first is
# searched for by a fast scan, one that starts with `^` is tried at every byte.
_COMMITS_AND_FILES = re.compile(rb"\n(?:([0-9a-f]{40})(?=\n)|diff --git )")
# In `store.range_changes`: a changed path (after the tab of ":<modes> <ids> <status>\t<path>")
# and a revert's message line (messages are indented).
_RAW_PATHS = re.compile(rb"\t([^\n]*)")
_REVERT_LINES = on_first_use(rb"\n    This reverts commit ([0-9a-f]{7,40})")
_HEX40 = re.compile(r"[0-9a-f]{40}")


def _tree_path(path: str) -> bool:
    """Whether the store looks `path` up in a tree (store.diff.check_path takes it)."""
    try:
        check_path(path)
    except StoreError:
        return False
    return True


def _git_mode(entry: tuple[str, str] | None) -> tuple[str, str] | None:
    """A tree entry (mode, id) with its mode as git's output gives it (cache.h's canon_mode:
    a file 100644 or 100755 by its owner's execute bit, whatever else an old tree's mode
    says; a symbolic link 120000; anything else a submodule, 160000)."""
    if entry is None:
        return None
    mode = int(entry[0], 8)
    kind = mode & 0o170000
    canonical = ("100755" if mode & 0o100 else "100644") if kind == 0o100000 else \
        "120000" if kind == 0o120000 else "160000"
    return canonical, entry[1]


@record
class Target:
    """Where an upstream is judged: the base pin and the target commit (and its version)."""

    upstream: str
    base_commit: str
    commit: str
    label: str
    version: str | None


@record
class Judgement:
    """The one judge's answer for one patch on a target: what `status` reports, what `rebase`
    does and what `pr` carries, decided in one place so that they never disagree.

    outcome: `landed` (every change is already in the target: a rebase keeps it under
    upstreamed/), `applies` (it moves: `changes` hold its files on the target) or `stop` (a
    human must decide: `stop_kind` says why, `files` which files, `after` the files as far as
    they got, with conflict markers).
    """

    name: str
    outcome: str  # landed | applies | stop
    state: str  # the status word: applies offset fuzz merges conflict upstreamed partial ...
    verdict: PatchVerdict  # per-hunk evidence
    how: str | None = None  # applies: clean | offset | merged
    stop_kind: str | None = None  # stop: conflict | obsolete | unsure | invariant
    files: list[str] = field(default_factory=list)  # stop: the files the stop is about
    # stop: those of `files` the patch deletes and the target changed (modify/delete); the
    # worktree holds the target's file
    deleted_here: list[str] = field(default_factory=list)
    before: dict = field(default_factory=dict)  # path -> content on the target before it
    after: dict = field(default_factory=dict)  # path -> content after it (stop: markers)
    # applies: [store.gitstore.FileChange]; a stop on lines doubled (DOUBLED) too: the move
    changes: list = field(default_factory=list)
    modes: dict = field(default_factory=dict)  # path -> the mode it has after the patch
    # stop: path -> the merge base of a file whose 3-way merge left conflict markers (what the
    # patch was made on: the markers' ||||||| section), for --continue to tell a resolution
    # that undoes a change made under the patch
    bases: dict = field(default_factory=dict)
    unchanged: bool = False  # pre-images and paths as in the old series: its diff still holds
    # applies: Keeps paths the upstream moved -> where (invariants.keeps_moved); the moved
    # patch's Keeps lines name the new paths
    keeps_moved: dict = field(default_factory=dict)
    evidence: list[str] = field(default_factory=list)
    message: str = ""
    # applies, conflict: the changes inside a hunk not landed whole that the target has made
    # and the others not (apply.parts.changes_landed): a path of the patch -> {hunk index: the
    # indices of those changes}. A rebase keeps them under upstreamed/ (the moved patch, a
    # 3-way merge's, no longer holds them); status says the fix landed in part.
    parts: dict = field(default_factory=dict)
    # stop, in a walk that goes on past its stops: the files the patch makes, as the later
    # patches meet them (SeriesJudge._made_past_a_stop), path -> content
    made: dict = field(default_factory=dict)

    @property
    def rebase_action(self) -> str:
        """What a rebase does with it: drop (to upstreamed/), move, or stop."""
        return {"landed": "drop", "applies": "move", "stop": "stop"}[self.outcome]


# The status word of a patch that moves, by what detection said; a patch detection judged
# `conflict` that git's 3-way merge takes cleanly `merges`.
# How the evidence of a stop on a hunk placed among several matches starts.
AMBIGUOUS_PLACE = "ambiguous place"
# How the evidence of a stop on a fix carried into another function than its own starts.
OTHER_FUNCTION = "another function"
# How the evidence of a stop on a fix whose added lines upstream has already near where the fix
# goes (its own way: re-wrapped, quotes changed) starts.
DOUBLED = "upstream has these lines already"
# What such a stop's evidence adds where upstream's copy runs on only some of the paths
# through the fix's (inside a branch the fix's copy is not in): deleting the fix's copy would
# lose its line on the other paths, so the way on that keeps it comes first.
FEWER_PATHS = "upstream's copy runs on only some of the paths through yours"
# What it says where upstream's copy is in a loop's body (each round) and the fix's outside
# the loop (once): the same work only where the loop runs one round.
EACH_ROUND = "upstream's copy runs each round of a loop, yours once outside it"
# Its mirror: the fix's copy in a loop's body (each round), upstream's outside it (once).
YOURS_EACH_ROUND = "your copy runs each round of a loop, upstream's once outside it"
# What the stop on a list item made twice says where the fix's copy stands beside other
# items than upstream's: on a line holding more (`"gfx1150", "gfx1201",`), or beside a new
# item of the fix's where upstream's stands beside another new one of upstream's (`"HIPCC",
# "hipcc",` against `"HIPCXX", "hipcc",`: a list of pairs, each value its key's, or an arch table
# extended on both sides, one name made twice; nothing in the list tells which). Deleting the
# fix's line(s) would lose what stands beside its copy: the ways on that keep it come first.
BESIDE_OTHERS = "stands beside other items in yours than in upstream's"
# What the stop on a list item made twice says where upstream's copy took the place of an
# item of the fix's base that upstream took out (`"CC", "clang",` made `"CC", "hipcc",`), a
# new item of the fix's beside the fix's copy (`"HIPCC", "hipcc",`): a list of pairs, upstream
# giving a base key the fix's value, both wanted, or a base name renamed to the fix's, one
# name twice; nothing in the list tells which (_in_a_base_items_place). Deleting the fix's
# copy, or taking it out of its line, would lose its pair's value: keep yours comes first.
IN_PLACE_OF = "upstream wrote in place of the base's"
# What the stop on a list item made twice says where upstream's copy follows an option
# upstream added with it of no known kind (`"--embed", "csrc/extra.cu",`: neither one
# documented to take the next argument, _TAKES_NEXT, nor of a form taking none,
# _TAKES_NONE), the fix's copy following no such option: upstream's may be that option's
# value, the fix's then an item of its own, both wanted, and deleting the fix's copy would
# lose it: the way that keeps it comes first.
MAYBE_ITS_VALUE = "follows an option upstream added with it, which may take it as its value"
# What the stop on a key the fix gives a dict literal that upstream gave the same dict at
# another place says (_key_twice_in_its_dict): the dict keeps one value per key, the later
# line's. With the same value deleting the fix's line loses nothing; with another value each
# way on keeps one of the two, and the stop says both.
KEY_TWICE = "is a key upstream gave this dict already"
SAME_VALUE = "with the same value"
OTHER_VALUE = "with another value"
# Where the fix's line holds other entries than the key (`"gfx1250": 64, "gfx1201": 32,`, none
# of them on upstream's line), deleting the line would lose them: the stop says them, and the
# way on takes only that entry out of the fix's line.
KEY_BESIDE = "beside other entries on your line"
# Where the fix's entry is the last of a JSON object (a comma added to the line above it),
# deleting it alone leaves that comma, which JSON does not take (`--continue` took the invalid
# file, exit 0): the way on takes upstream's entry out, or the comma with the fix's.
LAST_IN_JSON = "the last entry of its JSON object, after a comma"
# Where a loop between the two copies reads what the copied statement sets (`x = x + n`
# above a loop over x, the fix's, and upstream's below it): each copy gives the loop another
# value, and deleting the fix's copy hands it what the fix did not want.
READ_BETWEEN = "a loop between the copies reads what it sets"
# The same where the block between reading it is a C `switch` (no loop: its cases are
# branches), `switch (n) {` + `case 1:` + `d = clip(y);`.
READ_IN_A_SWITCH = "a switch between the copies reads what it sets"
# Where an `if` between the two copies of a short statement reads what it names on the paths
# through its body only (`if a:` + `b = clip(y)`): on the paths skipping it the step is made
# twice; on the others deleting the fix's copy hands the body what the fix did not want.
READ_IN_A_BRANCH = "an if between the copies reads what it sets on some paths"
# Where an item update's index has its address given between the copies to a function the
# file does not declare (`atomicAdd(&i, 1);`, `memcpy(&i, ...)`, `print(&i);`): it may step
# the index, each copy then updating another item, both wanted, or only read it, the same
# item updated twice. Nothing in the file tells which: deleting the fix's copy would lose its
# update in the first case, the way that keeps it comes first.
UNDECLARED_CALL = ("the index's address goes between the copies to a function this file does "
                   "not declare, which may change the index (each copy then updates another "
                   "item) or only read it")
# What the evidence of a fix whose removed code upstream moved to another file (where the
# target has it) says (`_removal_moved`): the file, the other file, the commit(s).
_MOVED_AWAY = on_first_use(r"^(.+?): the code it (?:removes|deletes) was moved to (.+) by "
                           r"commits? [0-9a-f]{40}(?: \(out of .+\) and [0-9a-f]{40} "
                           r"\(into .+\))?, and is there")


# The fewest lines of a deleted file's code (history.code_lines') another file must have for
# the file to have been folded into it (HistoryIndex.folded_into).
MOVED_LINES = 3


def moved_away(evidence) -> tuple[str, str] | None:
    """(what the evidence says of it, the file the code went to) where a fix's removal is no
    landing because upstream moved that code to another file, None elsewhere: a stop on it
    names that file, where the fix's change belongs now (a `--skip` would lose it)."""
    for item in evidence:
        found = _MOVED_AWAY.match(item)
        if found:
            return found[0], found[2]
    return None


def doubled_stop(judgement: Judgement) -> list[str]:
    """Where a stop on lines upstream has already (DOUBLED) says they are, [] for another
    judgement."""
    head = f"{DOUBLED}, its own way: "
    return [item[len(head):] for item in judgement.evidence if item.startswith(head)] \
        if judgement.stop_kind == "conflict" else []


def _moved_there(fp, commits: list[str], other: str) -> str:
    """The evidence of a fix whose removal from `fp`'s file upstream moved to `other` (by one
    commit, or out in the first of two and into `other` in the second), where the target has
    it: what `moved_away` reads back."""
    by = f"commit {commits[0]}" if len(commits) == 1 else \
        f"commits {commits[0]} (out of {fp.old_path}) and {commits[1]} (into {other})"
    return (f"{fp.old_path}: the code it {'deletes' if fp.is_delete else 'removes'} was moved "
            f"to {other} by {by}, and is there")


# The placements of hunks at repeated places a line map's answer is compared with, at most
# (each a candidate per such hunk of one file patch).
_PLACEMENTS_TRIED = 64
_MOVING_STATE = {"applies": "applies", "offset": "offset", "fuzz": "fuzz", "unsure": "unsure",
                 "partial": "partial", "conflict": "merges"}


def binary_move(fp_target, verdict, current: bytes | None,
                before: bytes | None) -> tuple[bool, bytes | None]:
    """A binary file patch on the target, judged by blob id: (True, the file after it) when the
    pre-image is there (it applies exactly) or the post-image is (nothing to do); (False, the
    target's file) when neither is: binary content is never merged, a human puts the file
    wanted in place."""
    application = apply_file_patch(current, fp_target)
    if application.ok:
        return True, application.content
    if verdict.hunks and verdict.hunks[0].landed:
        return True, before
    return False, current


def binary_stop_note(paths: list[str]) -> str:
    """What a stop on binary files adds to its message: why there are no conflict markers and
    how to go on."""
    if not paths:
        return ""
    return (f" ({', '.join(paths)}: binary, not merged: the target has neither the pre-image "
            "nor the post-image the binary patch records; put the file you want in the "
            "worktree and --continue, or --skip)")


def _said(paths: list[str]) -> str:
    """The files of a conflict, each as the stop's hint says it: a name that is not UTF-8 in
    the $'...' quotes a shell reads back (printed as it is, its byte shows as a replacement
    character)."""
    return ", ".join(shell_quoted_bytes(path) or path for path in paths)


def unmergeable_note(paths: list[str]) -> str:
    """What a stop adds for text patches on files git takes for binary (a NUL byte near the
    start): no 3-way merge was possible, so no conflict markers."""
    if not paths:
        return ""
    return (f" ({', '.join(paths)}: git takes the file for binary and cannot merge it: the "
            "worktree has the target's file; make the patch's change in it and --continue, "
            "or --skip)")


class ReadAhead:
    """The contents of `paths` at each of `revs` read into the store (which keeps them) on a
    second thread, READ_AHEAD paths at a time in the order given, the store's lock let go
    between rounds so that the thread walking the series reads what it needs meanwhile.
    Leaving the block stops the reading after the round under way and joins the thread."""

    # Paths per round: a round holds the store's reader (two or three revisions' contents of
    # that many files); the walk, which reads each patch's files as it meets them, waits for
    # at most one round.
    READ_AHEAD = 16

    def __init__(self, store: UpstreamStore, revs: list[str], paths: list[str]) -> None:
        self._enough = threading.Event()
        self._reading = Background(self._read, store, revs, paths) if paths else None

    def _read(self, store: UpstreamStore, revs: list[str], paths: list[str]) -> None:
        for start in range(0, len(paths), self.READ_AHEAD):
            if self._enough.is_set():
                return
            for rev in revs:
                # The files are in the store (reading_ahead fetched the missing ones).
                store.read_blobs(rev, paths[start:start + self.READ_AHEAD],
                                 fetch_together=False)

    def __enter__(self) -> ReadAhead:
        return self

    def __exit__(self, *exc) -> None:
        # Its errors are the walk's to meet: the walk reads any file it lacks itself.
        self._enough.set()
        if self._reading is not None:
            self._reading.wait()


def _post_image_there(fp, current: bytes | None) -> bool:
    """Whether every hunk of `fp` reverse-applies to `current` without fuzz: the file has the
    patch's result (a cheap sign, not landed detection's verdict)."""
    from patchforge.apply.hunks import ReversedHunk, apply_hunks, lines_of, place_in_place

    if current is None or not fp.hunks:
        return False
    reverse = tuple(ReversedHunk(h) for h in fp.hunks)
    placed = place_in_place(current, reverse, max_fuzz=0, build=False)
    outcomes = placed[1] if placed is not None else \
        apply_hunks(lines_of(current), reverse, max_fuzz=0, build=False)[1]
    return all(o.status in ("exact", "offset") for o in outcomes)


# A line any file may start with: an import, an include, a comment.
_HEADER_LINE = on_first_use(rb"\s*(?:import\s|from\s|#|//|/\*|\*)")


class _WholeLines:
    """A file as `_added_code_gone` looks a line up in it: as whole lines, whitespace and line
    breaks between them ignored; a `blob:<id>` line (history.binary_block's) as the file's
    blob id."""

    def __init__(self, content: bytes) -> None:
        self.content = content
        bare = [line.translate(None, WHITESPACE) for line in content.split(b"\n")]
        self.lines = set(bare)
        self.flat = b"".join(bare)
        self.starts = set(itertools.accumulate((len(line) for line in bare), initial=0))

    def has(self, code: bytes) -> bool:
        if code.startswith(b"blob:"):
            # Imported here: gitbinary loads base64, which a clean rebase never needs.
            from patchforge.apply.gitbinary import blob_id

            return blob_id(self.content) == code[5:].decode()
        if code in self.lines:
            return True
        at = self.flat.find(code)
        while at >= 0:  # a line upstream wrapped: from a line's start to a line's end
            if at in self.starts and at + len(code) in self.starts:
                return True
            at = self.flat.find(code, at + 1)
        return False


class SeriesJudge:
    """The one judge of a series on a target, used by `status`, `rebase` and `pr`.

    It walks one upstream's series in order over the target, keeping the target's files with the
    earlier moved patches applied (`current`), and the old series on its own base (`old`, the
    merge base of each patch's 3-way merge, as `git rebase` uses), so each patch meets exactly
    what a rebase would give it. `judge()` decides landed / applies / stop."""

    # 3-way merges of a patch started before its landed detection (`_start_merges`), at most:
    # each holds a git process and a pipe until the decision, and a patch of a thousand files
    # upstream changed would run out of file descriptors (a soft limit of 1024, 256 on macOS);
    # a merge beyond these runs when the decision reaches it.
    EARLY_MERGES = 16

    def __init__(self, store: UpstreamStore, target: Target, *, read_commit: str | None = None,
                 old_commit: str | None = None, history=None,
                 labels: tuple[str, str, str] = DEFAULT_LABELS,
                 stop_files: bool = True, fetched: bool = False,
                 renames: tuple[set[str], Callable[[], dict[str, str]]] | None = None,
                 lazy_old: bool = False, past_keeps_stops: bool = False,
                 pairs_made: dict | None = None, obsolete_hunks: bool = True,
                 doubled_stops: bool = True,
                 taken_out: frozenset[bytes] | set[bytes] = frozenset()) -> None:
        from patchforge.apply.series import SeriesState

        self.store = store
        self.target = target
        # Whether a fix whose added lines upstream has already near its place stops (DOUBLED),
        # or moves beside them: a bring-back asked to (`--allow-doubled`: a person has seen
        # that upstream's lines there are other code).
        self.doubled_stops = doubled_stops
        # Runs of added lines (near_runs) the history shows a revert took out of the fix's
        # place (reverts.taken_out_runs, a bring-back's): a hunk whose runs are all these is
        # put back, said possibly doubled, not stopped on upstream's copy near it.
        self.taken_out = frozenset(taken_out)
        # Whether the hunks of a patch a gone file makes obsolete are judged (each with its
        # evidence, as `status --json` shows them), or left (detect.assess_patch's
        # `obsolete_hunks`: status's table shows one line of evidence, the gone file's).
        self.obsolete_hunks = obsolete_hunks
        # The file applications, made once for the walk: the squash check's replay of the old
        # series, the walk's own (pass_old) and each 3-way merge's patched side are the same
        # applications of the same patches to the same contents; so is landed detection's
        # whole-file application wherever the patch meets the file as the old series had it
        # (upstream and the earlier patches left it alone: most files of a clean rebase).
        self.applications = PatchApplications()
        # Where the history's word on a landing comes from (an object with landing(patch) ->
        # history.HistoryLanding | None), None for content evidence alone (landed_in's probes).
        self.history = history
        if isinstance(history, LazyHistory):
            history.applications = self.applications
        # Where files not yet touched are read from: the target itself, or (when a rebase
        # resumes) a commit holding the target plus the series rebased so far.
        self.read_commit = read_commit or target.commit
        # Where the old series' files not yet touched are read from: the base, or (when a
        # rebase resumes) a commit holding the old series through the stopped patch.
        self.old_commit = old_commit or target.base_commit
        # A walk that goes on past its stops (status, a dry run) gives the patches after one
        # stopped only by its Keeps: lines its result, as the stopped rebase's worktree holds
        # it (`goes_past`). A real rebase stops there: its stop's base is the series before
        # the patch, so that --continue re-makes the patch from the whole worktree.
        self.past_keeps_stops = past_keeps_stops
        self.current: dict[str, bytes | None] = {}
        # The modes the moved patches gave (path -> mode); other files have the mode they
        # have where the judge reads (`read_mode`).
        self.current_modes: dict[str, str] = {}
        self._read: dict[str, bytes | None] = {}
        self.old = SeriesState()
        self.labels = labels
        # Whether a conflict stop carries every file of the patch, merged with conflict markers
        # (what a rebase puts in the worktree), or ends at the first file that conflicts: the
        # outcome is the same, and a caller that only reports it (status) is spared the
        # remaining 3-way merges, one git process each.
        self.stop_files = stop_files
        # Whether the files it reads are in the store already (a resumed rebase: the run that
        # started it brought in every file of the series), so that reading several at once
        # needs no check for missing ones first (a git process each time).
        self.fetched = fetched
        # (paths, get): the renames base..target of those paths, `store.renames` asked once for
        # all of them (by a second thread, while this one judges), instead of for each path
        # when a patch first meets it gone.
        self.renames = renames
        # Whether the old series is brought up to date file by file, when a file of it is
        # asked for (`old_file`, `old_mode`: a 3-way merge's base), instead of every file at
        # every patch: a caller that only reads the judgements (status) merges a few files of
        # the series, and a rebase reads `old` whole. (path -> the patches passed that touch
        # it, in order, with their position; path -> how many of those `old` holds.)
        self.lazy_old = lazy_old
        self._old_pending: dict[str, list[tuple[int, str, object, object]]] = {}
        # id of a judgement judge(defer_history=True) gave -> (name, patch, its content
        # verdict, the judgement): those whose history question waits for settle().
        self._deferred: dict[int, tuple[str, object, PatchVerdict, Judgement]] = {}
        self._unread: list = []  # their patches whose diffs are not started yet (_start_reads)
        self._old_done: dict[str, int] = {}
        self._old_passed = 0
        # The walk's patches in order (prefetch, reading_ahead) and where in it the patch being
        # judged is: landed detection's own-place diffs (PlaceDiffs) are made for the files
        # of the rest of the walk together, one git process instead of one per file.
        self._walk: list = []
        self._walk_at = 0
        self.places = PlaceDiffs(self._met_ahead, self.applications, pairs_made,
                                 known=self._history_blocks)

    def _history_blocks(self, asked: list[tuple[str, bytes, bytes]],
                        landing: Sequence[str] = ()) -> dict:
        """PlaceDiffs' `known`: the pairs whose blocks a commit's diff of the history gives
        (HistoryIndex.made_blocks, `landing` read along), none without a history."""
        made = getattr(self.history, "made_blocks", None)
        return made(asked, landing) if made is not None else {}

    def _met_ahead(self):
        """(file patch, base file, the file it meets) of each text file patch of the walk
        from the patch being judged on, the files as the walk has them now (PlaceDiffs)."""
        if self.target.commit == self.target.base_commit:
            return []  # every file as the patch found it: nothing can have landed
        # (Without `obsolete_hunks`, a patch a gone file makes obsolete asks for no own place:
        # its files are not offered. One the walk then meets otherwise asks for its own.)
        rest = [fp for _, patch in self._walk[self._walk_at:]
                if self.obsolete_hunks or not self._gone_file(patch)
                for fp in patch.file_patches
                if not (fp.is_new or fp.is_delete or fp.binary is not None)]
        paths = list(dict.fromkeys(fp.source_path for fp in rest))
        # Read together (the walk reads them anyway, the store keeps them).
        unread = [path for path in paths if path not in self.current and path not in self._read]
        try:
            bases = self.store.read_blobs(self.target.base_commit, paths,
                                          fetch_together=not self.fetched)
            if unread:
                self._read.update(self.store.read_blobs(self.read_commit, unread,
                                                        fetch_together=not self.fetched))
        except StoreError:
            # Said when the walk reaches the file that cannot be read (a stop before it, and
            # it never is): the diffs are made as they are asked for meanwhile.
            return []
        return [(fp, bases[fp.source_path], self.read_current(fp.source_path)) for fp in rest]

    def prefetch(self, patches) -> None:
        """Ask for every file the patches touch, on the base, on the old series' side (the same
        commit unless a rebase resumed) and where the judge reads, in the order the walk meets
        them (the store keeps them): git reads them, one pipelined cat-file exchange, while
        the walk judges the first patches, instead of one round per file and patch. A partial
        store's missing files are fetched first, with one check for all of them."""
        self._walk, self._walk_at = list(patches), 0
        paths = list(dict.fromkeys(p for _, patch in patches for p in patch.paths))
        if paths:
            revs = list(dict.fromkeys([self.target.base_commit, self.old_commit,
                                       self.read_commit]))
            if not self.fetched:
                self.store.prefetch([(rev, paths) for rev in revs])
            self.store.read_ahead([(rev, path) for path in paths for rev in revs])

    def reading_ahead(self, patches) -> ReadAhead:
        """prefetch() of a walk over `patches` that starts at once: the missing files are
        fetched first, then their contents are read on a second thread, a few patches at a
        time in series order, while this one judges (each file the walk reaches is then there,
        or read by the walk itself). A context manager: the reading ends with the block."""
        self._walk, self._walk_at = list(patches), 0
        paths = list(dict.fromkeys(p for _, patch in patches for p in patch.paths))
        revs = list(dict.fromkeys([self.target.base_commit, self.old_commit, self.read_commit]))
        if paths and not self.fetched:
            self.store.prefetch([(rev, paths) for rev in revs])
        return ReadAhead(self.store, revs, paths)

    def read_current(self, path: str) -> bytes | None:
        if path in self.current:
            return self.current[path]
        if path not in self._read:
            self._read[path] = self.store.read_blob(self.read_commit, path)
        return self._read[path]

    def start_after(self, state) -> None:
        """Judge what comes after `state` (an apply.series.SeriesState of earlier patches on
        the commit the judge reads): their files and the modes they gave."""
        self.current.update(state.current)

        def mode_at(path):
            found = self.store.entry(self.read_commit, path)
            return found[0] if found else None

        self.current_modes.update(state.given_modes(mode_at))

    def read_mode(self, path: str) -> str | None:
        """The mode of `path` where the next patch meets it (None: no such file)."""
        if path in self.current:
            if self.current[path] is None:
                return None
            if path in self.current_modes:
                return self.current_modes[path]
        found = self.store.entry(self.read_commit, path)
        return found[0] if found else None

    def old_mode(self, path: str) -> str | None:
        """The mode of `path` in the old series before the patch being judged."""
        def base_mode(p):
            found = self.store.entry(self.old_commit, p)
            return found[0] if found else None

        self._old_catch_up(path)
        return self.old.mode(path, base_mode)

    def old_file(self, path: str) -> bytes | None:
        """The file at `path` in the old series before the patch being judged."""
        self._old_catch_up(path)
        if path in self.old.current:
            return self.old.current[path]
        return self.store.read_blob(self.old_commit, path)

    def exists(self, path: str) -> bool:
        return self.read_current(path) is not None

    def _gone_file(self, patch) -> bool:
        """Whether a file `patch` changes (not one it makes or deletes) is gone from the
        target as the walk has it now, not renamed (detect.gone_file)."""
        return gone_file(patch, self.exists, self.find_rename)

    def find_rename(self, path: str) -> str | None:
        if self.target.base_commit == self.target.commit:
            return None
        if self.renames is not None and path in self.renames[0]:
            found = self.renames[1]().get(path)
        else:
            found = self.store.renames(self.target.base_commit, self.target.commit,
                                       [path]).get(path)
        return found if found is not None else self._made_and_moved(path)

    def split_copies(self, path: str) -> list[str]:
        """The other files upstream made of `path` as near it as the one find_rename follows
        it to (store.rename_splits, asked with the files find_rename asks with): upstream
        split the file into copies alike, and the fix would reach one of them."""
        if self.target.base_commit == self.target.commit:
            return []
        asked = sorted(self.renames[0]) if self.renames is not None and \
            path in self.renames[0] else [path]
        return self.store.rename_splits(self.target.base_commit, self.target.commit,
                                        asked).get(path, [])

    def _made_and_moved(self, path: str) -> str | None:
        """Where an earlier patch of the series made `path` (the base has no such file) inside
        a directory upstream moved, and its stop (_relocated) put the file where git suggests:
        that path, where the walk has it and the target does not (or has it as that patch
        made it: the creation landed there). A later patch's change to
        the file follows it there, as `git rebase` follows it (a rename from the old commit
        to the new one); elsewhere None."""
        base, target = self.target.base_commit, self.target.commit
        if self.store.entries(base, [path])[path] is not None:
            return None
        from patchforge.dirrenames import directory_moves

        move = directory_moves(self.store, base, target, [path],
                               self._gone_where_replayed).get(path)
        moved = move.suggested(path) if move is not None else None
        if moved is None or self.read_current(moved) is None:
            return None
        if self.store.entries(target, [moved])[moved] is not None and \
                self.read_current(moved) != self.old_file(path):
            # Upstream's own file there; unless it is the file as the earlier patch made it:
            # that creation landed there (_relocated dropped it), and the change follows.
            return None
        return moved

    def _gone_where_replayed(self, directory: str) -> bool:
        """Whether `directory` is no directory where the next patch meets the files (the
        target with the series so far)."""
        inside = directory + "/"
        if any(path.startswith(inside) and content is not None
               for path, content in self.current.items()):
            return False
        entry = self.store.entries(self.read_commit, [directory], directories=True)[directory]
        return entry is None or entry[0] != "040000"

    def assess(self, name: str, patch):
        """Landed detection alone (detect.assess_patch) on the current state, with the
        history's word where the content cannot decide: the evidence `judge()` starts from,
        and the probe `landed_in` bisects with."""
        return self.with_history(name, patch, self.content_verdict(name, patch))

    def content_verdict(self, name: str, patch):
        """detect.assess_patch of `patch` on the current state: what the files say, before
        the history is asked (`with_history`)."""
        base = self.target.base_commit
        if self.target.commit == base:
            # At the pin the series is what each patch was made against: a patch meets the
            # file as it found it, and nothing of it can have landed.
            read_base = self.read_current
        else:
            def read_base(path):
                return self.store.read_blob(base, path)
        # The walk goes on from this patch (one the walk does not hold leaves it where it is).
        self._walk_at = next((k for k in range(self._walk_at, len(self._walk))
                              if self._walk[k][1] is patch), self._walk_at)
        return assess_patch(
            name, patch, read_base=read_base,
            read_current=self.read_current, exists_in_target=self.exists,
            find_rename=self.find_rename, apply=self.applications, places=self.places,
            obsolete_hunks=self.obsolete_hunks)

    def with_history(self, name: str, patch, verdict):
        """`verdict` (content_verdict's) with the history's word when it is undecided
        (HISTORY_DECIDES): history.combine and combine_series leave its state as it is or make
        it `upstreamed`, and never change its files."""
        if self.history is not None and verdict.state in HISTORY_DECIDES:
            undecided = verdict
            landing = self.history.landing(patch)
            gone = None
            if landing is not None and landing.landed_by is not None:
                self._old_code_at_own_places(patch, verdict)
                self._made_away(patch, verdict, landing)
                gone = self._added_code_gone(patch, verdict, landing)
            verdict = combine(verdict, landing, gone=gone)
            run = self.history.series_landing(name) if not verdict.landed and \
                hasattr(self.history, "series_landing") else None
            if run is not None and verdict.state in HISTORY_DECIDES:
                self._old_code_at_own_places(patch, verdict)
                commit, first, last = run
                change = self.history.series_change(name) \
                    if hasattr(self.history, "series_change") else None
                gone = self._added_code_gone(patch, verdict, change[1], change[0]) \
                    if change is not None else None
                verdict = combine_series(verdict, commit, first, last, gone=gone)
            moved = self._removal_moved(patch) if verdict.landed else None
            if moved is not None:
                # (settle takes a verdict the history leaves as it was, or upstreamed)
                return replace(undecided, evidence=list(verdict.evidence) + [f"{moved}: kept"])
        elif verdict.landed:
            verdict.decided_by = "content"
            moved = self._removal_moved(patch)
            if moved is not None:
                verdict = replace(verdict, state="unsure", confidence=None, decided_by=None,
                                  evidence=list(verdict.evidence) + [
                                      f"{moved}: not taken as landed"])
        return verdict

    # The fewest lines a removal-only block needs for its code moved elsewhere to say the fix's
    # removal is not what upstream did (_removal_moved).
    MOVED_BLOCK_LINES = 3

    def _removal_moved(self, patch) -> str | None:
        """What says that code the patch removes (a block that removes only, large enough to
        tell) upstream moved to another file, where the target still has it, rather than
        removed: the removal the content finds (reverse-apply) is not the fix's (the function
        it deletes is still there to call, re-exported or not). None without a history."""
        moved_to = getattr(self.history, "moved_to", None)
        if moved_to is None or self.target.commit == self.target.base_commit:
            return None
        # What the fix itself puts into each file (a fix that moves code makes that move).
        own = {fp.new_path: blocks_of_file_patch(fp) for fp in patch.file_patches
               if fp.new_path is not None and fp.binary is None}
        for fp in patch.file_patches:
            if fp.binary is not None or fp.is_new or \
                    (fp.old_path != fp.new_path and not fp.is_delete):
                continue
            for removed, added in blocks_of_file_patch(fp):
                # A line or two found in another file is ordinary churn (an import a backport
                # takes out, which other modules import too: a real landing on the vllm wheels
                # stopped); a function or a block moved is several lines together.
                if added or len(removed) < self.MOVED_BLOCK_LINES or \
                        len(code_of(removed)) < MIN_CHANGED_CHARS:
                    continue
                for piece in self._pieces(removed) if fp.is_delete else (removed,):
                    found = moved_to(fp.old_path, piece)
                    if found is None:
                        continue
                    commits, other = found
                    if other in own and put_in(code_of(piece), own[other]):
                        continue  # the fix moves that code there itself (its landing did)
                    there = self.read_current(other)
                    if there is not None and put_in(code_of(piece),
                                                    (((), tuple(split_lines(there))),)):
                        return _moved_there(fp, commits, other)
            for lines in ((line[1:] for hunk in fp.hunks for line in hunk.lines
                           if line[:1] == b"-"),) if fp.is_delete else self._removals(fp):
                folded = self._code_folded(fp, lines, patch)
                if folded is not None:
                    return folded
        return None

    def _removals(self, fp):
        """The runs of lines `fp` only removes (no line added in their place), each
        MOVED_BLOCK_LINES lines or more with MIN_CHANGED_CHARS of code or more, as written."""
        for hunk in fp.hunks:
            run: list[bytes] = []
            adds = False
            for line in (*hunk.lines, b" "):
                kind = line[:1]
                if kind == b"-":
                    run.append(line[1:])
                elif kind == b"+":
                    adds = True
                elif kind != b"\\":
                    if run and not adds and len(run) >= self.MOVED_BLOCK_LINES and \
                            len(code_of(run)) >= MIN_CHANGED_CHARS:
                        yield tuple(run)
                    run, adds = [], False

    def _code_folded(self, fp, lines, patch) -> str | None:
        """What says that code the patch removes (`lines`: a file it deletes, or a run of
        lines it only removes from `fp`'s file) upstream moved to another file and edited
        there (no run of its lines is anywhere: each function reworded in a line), where the
        target still has most of it (history.MOVED_SHARE of its lines of code, as code_lines
        reads them, or of the functions and classes it defines, by name: each rewritten
        there), rather than took out; None when nothing does. Not a file the patch itself
        puts most of that code (or those definitions) into."""
        folded_into = getattr(self.history, "folded_into", None)
        if folded_into is None:
            return None
        lines = tuple(lines)
        code = code_lines(lines)
        names = defined_names(fp.old_path, lines)
        found = folded_into(fp.old_path, code, names)
        if found is None:
            return None
        commits, other = found
        own = [line[1:] for one in patch.file_patches if one.new_path == other
               for hunk in one.hunks for line in hunk.lines if line[:1] == b"+"]
        if share(code, code_lines(own)) >= MOVED_SHARE or \
                _named_share(names, defined_names(other, own)) >= MOVED_SHARE:
            return None  # the fix folds that file there itself (its landing did)
        there = self.read_current(other)
        if there is None:
            return None
        there_lines = split_lines(there)
        if share(code, code_lines(there_lines)) < MOVED_SHARE and \
                _named_share(names, defined_names(other, there_lines)) < MOVED_SHARE:
            return None
        return _moved_there(fp, commits, other)

    # The most parts of a file a fix deletes asked one by one whether upstream moved them.
    MOVED_PIECES = 64

    def _pieces(self, lines: tuple[bytes, ...]):
        """The lines of a file a fix deletes, whole, then each of its paragraphs (lines
        between blank ones) of code, MOVED_BLOCK_LINES or more that say something: upstream
        moving the file into another (beside other code, under new imports) is no rename git
        finds, and each function moved is still there. A paragraph of imports or comments
        alone is any file's."""
        yield lines
        piece: list[bytes] = []
        given = 0
        for line in (*lines, b""):
            if line.strip():
                piece.append(line)
                continue
            if len(piece) >= self.MOVED_BLOCK_LINES and len(piece) < len(lines) and \
                    len(code_of(piece)) >= MIN_CHANGED_CHARS and \
                    not all(_HEADER_LINE.match(said) for said in piece):
                yield tuple(piece)
                given += 1
                if given >= self.MOVED_PIECES:
                    return
            piece = []

    def _old_code_at_own_places(self, patch, verdict) -> None:
        """Each hunk of `verdict` the content did not find landed at its own place is marked
        (HunkVerdict.old_code) where that place still has its old code (detect.OwnPlaces.
        old_code): the history is about to make the verdict `upstreamed` because a commit made
        the patch's change, and cannot tell where that commit made it. Asked only then: the
        base file and a git diff of it to the target per file asked."""
        if self.target.commit == self.target.base_commit:
            return
        for fp, fv in zip(patch.file_patches, verdict.files):
            if fp.binary is not None or fp.is_new or fp.is_delete or fv.target_path is None:
                continue
            asked = [hv for hv in fv.hunks if hv.landed != "certain" and hv.elsewhere is None
                     and hv.old_code is None and hv.index < len(fp.hunks)]
            if not asked:
                continue
            base = self.store.read_blob(self.target.base_commit, fp.source_path)
            current = self.read_current(fv.target_path)
            if base is None or current is None:
                continue
            own = OwnPlaces(fp, base, current, self.applications, self.places)
            for hv in asked:
                hv.old_code = own.old_code(hv.index, fp.hunks[hv.index])

    def _added_code_gone(self, patch, verdict, landing, run: dict | None = None) -> str | None:
        """Which line the change adds the target does not have, and no commit made after the
        landing (`landing`, history.HistoryLanding: a commit listed after it that descends
        from it) took out, or None: the history is about to make the verdict `upstreamed`
        because a commit made the change, and the content could not find it. A line that
        went where the history shows no diff went in a merge's resolution (which took the
        other side's line): nothing says the fix is not needed any more. Or a file the patch
        deletes that the target has under the name upstream renamed it to.

        A line is there as whole lines of the target, whitespace and line breaks between
        them ignored (a line upstream wrapped is there; one inside a longer line, a comment
        naming it, is not), however short; a binary file is there as the blob the fix makes.
        `run`: the cumulative change blocks (path -> history.Blocks) of the run of the
        series that landed whole (a squash merge), whose added lines are asked instead of
        the patch's own (a later patch of the run rewrites an earlier one's)."""
        made = {other.new_path for other in patch.file_patches if not other.is_delete}
        taken: dict[bytes, list[str]] = {}
        for line, commit in landing.taken_out:
            taken.setdefault(line, []).append(commit)

        def taken_out(code: bytes) -> bool:
            return any(self.store.is_ancestor(landing.landed_by, commit)
                       for commit in taken.get(code, ()))

        def beside(commit: str) -> bool:
            """Made on a branch beside the landing: neither before it nor after it."""
            return not self.store.is_ancestor(commit, landing.landed_by) and \
                not self.store.is_ancestor(landing.landed_by, commit)

        for fp, fv in zip(patch.file_patches, verdict.files):
            if fv.target_path is None:
                continue
            current = self.read_current(fv.target_path)
            if current is None:
                continue
            if fp.is_delete and fv.target_path not in made and run is None:
                # The history is read without rename detection: a commit renaming the file
                # deletes its old path just as the fix does. (Not the patch's own move; nor a
                # file a later patch of a run that landed whole makes again.)
                return f"{fv.target_path}, the file it deletes renamed upstream, is there"
            if run is not None:
                added = [line.translate(None, WHITESPACE) for _, lines in run.get(fp.path, ())
                         for line in lines]
            elif fp.binary is not None:
                added = [] if fp.is_delete else [b"blob:" + fp.binary.new_oid.encode()]
            else:
                added = [line[1:].translate(None, WHITESPACE) for hunk in fp.hunks
                         for line in hunk.lines if line[:1] == b"+"]
            there = _WholeLines(current)
            for code in added:
                if code and not there.has(code) and not taken_out(code):
                    if code.startswith(b"blob:"):
                        return f"{fv.target_path} is not the file the fix makes (blob " \
                            f"{code[5:17].decode()}), and no later commit changed it (a " \
                            "merge's resolution lost it)"
                    text = next((line[1:].strip() for hunk in fp.hunks for line in hunk.lines
                                 if line[:1] == b"+"
                                 and line[1:].translate(None, WHITESPACE) == code), code)
                    return f"{fv.target_path} has no {text.decode('utf-8', 'replace')!r}, " \
                        "and no later commit took it out (a merge's resolution lost it)"
            if run is None and fp.binary is None:
                spaced = self._spaced_otherwise(fp, current, taken_out, b"" if fp.is_new else
                                                self.store.read_blob(self.target.base_commit,
                                                                     fp.source_path))
                if spaced is not None:
                    return f"{fv.target_path} has {spaced[0]!r} only with {spaced[1]} spaced " \
                        "otherwise (whitespace inside a string is content, not layout)"
            if run is None and fp.binary is None:
                moved = self._moved_line_gone(fp, current, landing, taken_out)
                if moved is not None:
                    return f"{fv.target_path} has {moved!r} only indented otherwise, and no " \
                        "later commit moved it (a merge's resolution lost it)"
            for path, commit, put in sorted(landing.rewritten):
                # A line the fix removes (or rewrites) that a branch beside the landing
                # rewrote its own way: the target has that branch's lines, the merge took them.
                if path == fp.path and put and there.has(put) and beside(commit):
                    return f"{fv.target_path} has the lines commit {commit[:12]} (made beside " \
                        "the landing) put where the fix takes a line out (a merge's resolution " \
                        "took that side)"
        return None

    @staticmethod
    def _spaced_otherwise(fp, current: bytes, taken_out,
                          base: bytes | None = None) -> tuple[str, str] | None:
        """A line `fp` adds whose code the target has (whitespace removed) but with a string
        of it spaced otherwise (detect.spaced_literals: not in `current` as the fix writes
        it; or a line of a string over lines, history.over_lines, not in `current` as the fix
        writes it but for its indentation), that no commit after the landing took out: (the
        line, the string). `has` finds a line without its whitespace, a string's too; the
        history shows no diff of a merge's resolution (or of a change made on a stale tree)
        that took the side with the string as it was. `base`: the file the fix changes,
        which says whether each hunk starts inside a string over lines (a docstring opened
        above it); None where it is not known, each hunk then read from outside strings."""
        lines = base.split(b"\n") if base is not None else None
        for hunk in fp.hunks:
            # what closes the string over lines the post-image is in
            waiting = strings_open_at(lines, max(hunk.old_start - 1, 0)) \
                if lines is not None else None
            # Where the file is not known, what the hunk takes out, without whitespace: a
            # line of a string over lines is asked only where the fix re-spaces (re-wraps)
            # text it takes out, not where it writes new code (after a string opened above
            # the hunk, its closing quote looks like an opening one).
            gone = None if lines is not None else b"".join(
                line[1:] for line in hunk.lines if line[:1] == b"-").translate(None, WHITESPACE)
            for line in hunk.lines:
                kind = line[:1]
                if kind in (b"-", b"\\"):
                    continue
                waiting, said = over_lines(line[1:], waiting)
                if kind != b"+":
                    continue
                if said is not None:
                    # In a string over lines (history.over_lines): its text as the fix writes
                    # it, indentation aside (a docstring re-indented with its function).
                    said = said.strip(WHITESPACE)
                    bare = said.translate(None, WHITESPACE)
                    missing = said if bare != said and (gone is None or bare in gone) and \
                        said not in current else None
                else:
                    missing = next((s for s in spaced_literals((line[1:],))
                                    if s not in current), None)
                if missing is not None and not taken_out(line[1:].translate(None, WHITESPACE)):
                    return (line[1:].strip().decode("utf-8", "replace"),
                            "its text (a string over lines)" if said is not None
                            else missing.decode("utf-8", "replace"))
        return None

    def _moved_line_gone(self, fp, current: bytes, landing, taken_out) -> str | None:
        """A line `fp` moves (a hunk's added line that, whitespace removed, is one of its
        removed lines: a statement moved into an `if`) that `current` does not have at the
        fix's indentation, and that no commit after the landing took out or rewrote: the line
        is there, but where the fix took it from. None when there is none."""
        have = {line.rstrip() for line in current.split(b"\n")}

        def rewritten_later() -> bool:  # (a re-indent puts the line in again: not taken out)
            return any(path == fp.path and self.store.is_ancestor(landing.landed_by, commit)
                       for path, commit, _ in landing.rewritten)

        for hunk in fp.hunks:
            removed = {line[1:].translate(None, WHITESPACE) for line in hunk.lines
                       if line[:1] == b"-"}
            for line in hunk.lines:
                code = line[1:].translate(None, WHITESPACE)
                if line[:1] != b"+" or not code or code not in removed or \
                        line[1:].rstrip() in have:
                    continue
                if not taken_out(code) and not rewritten_later():
                    return line[1:].strip().decode("utf-8", "replace")
        return None

    def _made_away(self, patch, verdict, landing) -> None:
        """Each hunk of `verdict` the content did not find landed, and no other evidence
        keeps, is marked (HunkVerdict.made_away) where every commit that made the patch's
        change since the last undoing made the hunk's change only away from its own place
        in that commit's parent (history_place.made_at): the history's blocks match without
        places, and a commit that fixed a twin, or put the fix's line on the other side of
        its neighbour, "makes the change" too. Asked only when the history is about to make
        the verdict `upstreamed`: per such commit, its parent's file, its diff of the file
        (the history's own) and a git diff of the base file to that parent's."""
        commit_diff = getattr(self.history, "commit_diff", None)
        if commit_diff is None or self.target.commit == self.target.base_commit:
            return
        made = landing.made_since_undo
        if not made:
            return
        # Here: a rebase or status that never asks it (no landing made since an undoing)
        # does not load history_place.
        from patchforge.history_place import made_at

        parents: dict[str, str | None] | None = None
        for fp, fv in zip(patch.file_patches, verdict.files):
            if fp.binary is not None or fp.is_new or fp.is_delete or fv.target_path is None \
                    or fp.old_path != fp.new_path:
                continue
            asked = [hv for hv in fv.hunks if hv.landed != "certain" and hv.elsewhere is None
                     and hv.old_code is None and hv.indented is None and hv.made_away is None
                     and hv.index < len(fp.hunks)]
            if not asked:
                continue
            if parents is None:
                parents = self.store.parents_of(made)
            base = self.store.read_blob(self.target.base_commit, fp.source_path)
            answers: dict[int, list] = {hv.index: [] for hv in asked}
            for commit in made:
                parent = parents.get(commit)
                there = self.store.read_blob(parent, fp.path) if parent is not None else None
                chunk = commit_diff(commit, fp.path)
                for hv in asked:
                    answers[hv.index].append(
                        (commit, made_at(fp, hv.index, fp.hunks[hv.index], base, there, chunk,
                                         self.applications, self.places)))
            for hv in asked:
                found = answers[hv.index]
                if all(at is not None and at[0] == "away" for _, at in found):
                    commit, at = found[-1]
                    hv.made_away = f"commit {commit[:12]} made it at {at[1]}"

    def pass_old(self, patches) -> None:
        """Walk the old series over `patches` without judging them (a rebase resuming after
        them)."""
        from patchforge.apply.series import apply_series, refuse_zero_context

        patches = list(patches)
        if self.lazy_old and any(fp.old_path != fp.new_path and None not in (fp.old_path,
                                                                             fp.new_path)
                                 for _, patch in patches for fp in patch.file_patches):
            # A rename or a copy carries a file's content to another path: from here on the
            # whole old series is walked at each patch, every file brought up to date first.
            for path in list(self._old_pending):
                self._old_catch_up(path)
            self.lazy_old = False
        if not self.lazy_old:
            apply_series(self._read_base, patches, strict=False, state=self.old,
                         apply=self.applications)
            return
        for name, patch in patches:
            for fp in patch.file_patches:
                # Refused as the walk would refuse it, when the patch is passed.
                refuse_zero_context(name, patch, fp)
                for path in {fp.old_path, fp.new_path} - {None}:
                    self._old_pending.setdefault(path, []).append(
                        (self._old_passed, name, patch, fp))
            self._old_passed += 1

    def take_old(self, files: dict, source: SeriesJudge) -> None:
        """The old series takes `files` ({path: content}) as another chain's patch carried
        them here (apply.chains), with the modes `source`'s old series gives them."""
        for path, content in files.items():
            if path not in self.old.base:
                self.old.base[path] = self.old_file(path)
            self._old_catch_up(path)
            self.old.current[path] = content
            for given, there in ((self.old.modes, source.old.modes),
                                 (self.old.origins, source.old.origins)):
                if path in there:
                    given[path] = there[path]
                else:
                    given.pop(path, None)

    def _old_catch_up(self, path: str) -> None:
        """`old` at `path` brought up to date (lazy_old): the file patches passed since that
        touch it, applied in order as apply_series would (without a rename or a copy, what
        one file becomes depends on its own file patches alone)."""
        from patchforge.apply.series import PatchPart, apply_series

        pending = self._old_pending.get(path, [])
        done = self._old_done.get(path, 0)
        if done == len(pending):
            return
        self._old_done[path] = len(pending)
        parts: list[tuple[str, PatchPart]] = []
        last = None  # the position of the patch parts[-1] is of
        for position, name, patch, fp in pending[done:]:
            if position == last:
                parts[-1][1].file_patches.append(fp)
            else:
                parts.append((name, PatchPart([fp], getattr(patch, "source", name))))
                last = position
        apply_series(self._read_base, parts, strict=False, state=self.old,
                     apply=self.applications)

    def _read_base(self, paths):
        return self.store.read_blobs(self.old_commit, paths, fetch_together=not self.fetched)

    def judge(self, name: str, patch, *, defer_history: bool = False) -> Judgement:
        """Decide the patch, then move on: a patch that applies (or stops only for its Keeps:
        lines) is applied to `current` (the next patch meets it), and the old series advances
        past it either way.

        `defer_history`: a patch the content checks and the 3-way merges stop as a conflict
        is given that stop for now, its history question left for `settle()`, whose answer
        (landed, or the same conflict) changes nothing the next patches meet; the history's
        diffs for it are read by a git process meanwhile (`LazyHistory.start_landing`)."""
        try:
            judgement = self.decide(name, patch, defer_history=defer_history)
        finally:
            self.pass_old([(name, patch)])
        if self.goes_past(judgement):
            for path, content in judgement.before.items():
                self.current[path] = judgement.after.get(path)
            for change in judgement.changes:
                if change.old_path is not None and change.old_path != change.new_path \
                        and not change.copy:
                    self.current_modes.pop(change.old_path, None)
                if change.new_path is not None:
                    self.current_modes[change.new_path] = change.new_mode
        elif self.past_keeps_stops and judgement.outcome == "stop":
            judgement.made = self._made_past_a_stop(patch)
        return judgement

    def _made_past_a_stop(self, patch) -> dict[str, bytes]:
        """The files a stopped patch makes (a new file, a rename's or copy's destination) put
        where the later patches of a walk that goes on past its stops (status, a dry run) meet
        them. Once the stop is resolved `--continue` makes them, and a later fix of such a file
        moves onto it as after a clean move; without them that fix read its file as never
        there ("obsolete ... nor made by an earlier patch"), advising to drop a live fix.

        A new file is as the patch makes it (the old series through it: `judge` has passed
        it); a rename's or copy's destination is its source as the walk has it (the stop's
        other changes do not go past, as they do not for the files it edits). Inside a
        directory upstream moved, the file is where git suggests, as a stop's worktree holds it
        (_relocated), and a later patch's change follows it there (_made_and_moved); a path the
        walk has a file at keeps that file (upstream's own: the stop's add/add). The rebase's
        own walk never comes here: its stop's base is the series before the patch. The files
        put, by the paths they are put at."""
        made = {fp.new_path: fp for fp in patch.file_patches
                if fp.new_path is not None and fp.new_path != fp.old_path}
        put: dict[str, bytes] = {}
        if not made:
            return put
        moves = {}
        if self.target.base_commit != self.target.commit:
            from patchforge.dirrenames import directory_moves

            moves = directory_moves(self.store, self.target.base_commit, self.target.commit,
                                    list(made), self._gone_where_replayed)
        for path, fp in made.items():
            content = self.old_file(path) if fp.is_new else self.read_current(fp.old_path)
            if content is None:
                continue
            move = moves.get(path)
            suggested = move.suggested(path) if move is not None else None
            held = suggested if suggested is not None and self.read_current(suggested) is None \
                else path
            if self.read_current(held) is not None:
                continue
            self.current[held] = put[held] = content
            mode = self.old_mode(path)
            if mode is not None:
                self.current_modes[held] = mode
        return put

    def goes_past(self, judgement: Judgement) -> bool:
        """Whether the patches after this one meet its result: it applies, or (`past_keeps_stops`)
        it applies and stops only for its Keeps: lines."""
        return judgement.outcome == "applies" or (self.past_keeps_stops
                                                  and judgement.stop_kind == "invariant")

    def decide(self, name: str, patch, *, defer_history: bool = False) -> Judgement:
        """landed / applies / stop for one patch on the current state, changing nothing
        (`defer_history`: see judge())."""
        self._start_reads()
        early = self._start_merges(patch)
        try:
            return self._decide(name, patch, early, defer_history)
        finally:
            for merge in early.values():
                merge.close()

    def _start_reads(self) -> None:
        """The history's diffs of the deferred conflicts, started (LazyHistory.start_landing)
        once the history's index is there, in series order."""
        while self._unread:
            if not self.history.start_landing(self._unread[0]):
                return
            self._unread.pop(0)

    def settle(self, judgement: Judgement) -> Judgement:
        """The final judgement of one that judge(defer_history=True) gave: itself, or for a
        patch whose history question waited, the landing the history proves, or the same
        judgement with the history's word in its verdict and evidence. Why that is what
        judge() decides at once: the history only makes an undecided verdict `upstreamed`
        (a landing, decided before any file is looked at) or leaves its state and its files
        (all _conclude reads of it) as they are, adding evidence; _conclude's judgement holds
        the verdict's evidence first, then its own."""
        deferred = self._deferred.pop(id(judgement), None)
        if deferred is None:
            return judgement
        name, patch, verdict, _ = deferred
        final = self.with_history(name, patch, verdict)
        if final.state == "upstreamed":
            return self._conclude(name, patch, final, {})
        return _with_history_word(judgement, verdict, final)

    def _start_merges(self, patch) -> dict[tuple[bytes, bytes, bytes], FileMerge]:
        """The 3-way merges `_decide` will run for `patch` when its files do not all apply,
        their git processes started now (so that they run while landed detection works), keyed
        by their inputs: the old series' file before the patch, the file where the patch meets
        it, and that old file plus the patch. For files the patch meets under their own paths
        (none when a file is gone: the patch is obsolete, or meets it renamed, which only
        landed detection finds), in order up to the first one that does not apply when a stop
        ends at its first conflict (nothing after it is merged then). `_decide` takes a merge
        whose inputs it meets; one it does not need after all (the patch landed) is ended."""
        if any(not fp.is_new and self.read_current(fp.source_path) is None
               for fp in patch.file_patches):
            return {}
        moves = []
        fails = landed = False
        for fp in patch.file_patches:
            if fp.is_new or fp.binary is not None:
                continue  # no merge
            current = self.read_current(fp.source_path)
            forward = self.applications(current, fp, max_fuzz=2)
            applies = forward.ok and forward.worst in ("exact", "offset")
            if self.stop_files or not applies:
                # A stop that ends at its first conflict asks the files that do not apply
                # first (`_failing_file_that_conflicts`): the others' merges wait for them.
                moves.append(fp)
            if not applies:
                fails = True
                landed = landed or _post_image_there(fp, current)
                if not self.stop_files:
                    break
        if not fails or landed:
            # Every file applies: nothing to merge, most likely. Or a file that does not apply
            # has the patch's post-image: the patch most likely landed, and landed detection
            # will say so without a merge (in a clean rebase, every patch that does not apply
            # is such a one: a merge started for each was a git process thrown away).
            return {}
        early: dict[tuple[bytes, bytes, bytes], FileMerge] = {}
        try:
            for fp in moves:
                source = fp.source_path
                current = self.read_current(source)
                assert current is not None
                base = self.old_file(source)
                theirs = self.applications(base, fp, max_fuzz=2)
                if theirs.ok and theirs.content is not None:
                    key = (base or b"", current, theirs.content)
                    if key not in early:
                        early[key] = FileMerge(*key, self.labels)
                        if len(early) == self.EARLY_MERGES:
                            break
        except BaseException:
            # A read or a start that fails (or Ctrl-C) ends the merges started before it:
            # `decide` only ends those it was handed.
            for merge in early.values():
                merge.close()
            raise
        return early

    def _decide(self, name: str, patch, early: dict[tuple[bytes, bytes, bytes], FileMerge],
                defer_history: bool = False) -> Judgement:
        verdict = self.content_verdict(name, patch)
        if not (defer_history and self.history is not None and verdict.state in HISTORY_DECIDES):
            return self._conclude(name, patch, self.with_history(name, patch, verdict), early)
        # The content cannot decide: the history will make the verdict `upstreamed` or leave
        # its state and files, all that the merges look at, as they are (settle). Unless the
        # patch moves, neither answer changes what the next patch meets: the question waits.
        answers: dict[tuple[bytes, bytes, bytes], tuple[bool, bytes]] = {}
        judgement = self._conclude(name, patch, verdict, early, answers)
        if judgement.outcome != "applies":
            self._deferred[id(judgement)] = (name, patch, verdict, judgement)
            if hasattr(self.history, "start_landing"):
                self._unread.append(patch)
            return judgement
        # It moves unless the history says it landed: asked now. Landed, it is concluded
        # again (the merges started early and `answers` taken again, the applications
        # remembered); otherwise the history left the verdict's state and files, all that
        # _conclude reads of it (settle), and the judgement stands with the history's word:
        # concluding again redid every step (the function check's diffs and walks of each
        # carried file, 8 ms of the 93-patch AITER row at v0.1.18) for the same judgement.
        final = self.with_history(name, patch, verdict)
        if final.state == "upstreamed":
            return self._conclude(name, patch, final, early, answers)
        return _with_history_word(judgement, verdict, final)

    def _relocated(self, name: str, patch, before: dict, after: dict, modes: dict,
                   sources: dict, copies: set, moved_made: set) -> dict[str, str]:
        """The paths `patch` makes (a new file, a rename's or copy's destination) inside a
        directory upstream moved (dirrenames.directory_moves: merge-ort's directory-rename
        rule), each with the stop's words, as `git rebase` stops: "CONFLICT (file location)".
        Left where the patch makes it, the file would sit in a directory the target no longer
        has, away from the code it was made beside, every check green. A stop's worktree
        (`stop_files`) holds it where git suggests (`after`, `modes`, `sources` and `copies`
        moved there; `before` says the target has no file there), as git's worktree has it,
        so that `--continue` makes it there, and the words say how to make it elsewhere; a
        split (no majority) or a path the target fills leaves it where the patch makes it.
        A new file upstream made at the suggested path with the same bytes landed there: it
        drops out of the patch (`after`, `before`, `modes`), no stop. Keyed by the path the
        stop's worktree holds it at; `moved_made` gets every path made inside a moved
        directory."""
        if self.target.base_commit == self.target.commit:
            return {}
        made = {fp.new_path: fp for fp in patch.file_patches
                if fp.new_path is not None and fp.new_path != fp.old_path}
        if not made:
            return {}
        from patchforge.dirrenames import directory_moves

        moves = directory_moves(self.store, self.target.base_commit, self.target.commit,
                                list(made), self._gone_where_replayed)
        located: dict[str, str] = {}
        edit = f"`patchforge edit {name.removesuffix('.patch')}`"
        for path, fp in made.items():
            move = moves.get(path)
            if move is None:
                continue
            said = move.said(path, name, self.target.label, fp.old_path, fp.is_copy)
            suggested = move.suggested(path)
            moved_made.add(path)
            if suggested is not None and fp.is_new and after.get(path) is not None and \
                    self.read_current(suggested) == after[path] and \
                    modes.get(path, (None, "100644"))[1] in (self.read_mode(suggested),
                                                              "100644"):
                # Upstream made this very file where git suggests it: the creation landed
                # there and drops out of the patch, as one at the patch's own path does (a
                # new file's 100644 is no mode the fix gives: upstream's executable stays so,
                # as _modes_not_landed reads a landing at the patch's own path).
                after.pop(path)
                before.pop(path, None)
                modes.pop(path, None)
                continue
            if suggested is not None and fp.is_new and after.get(path) is not None and \
                    suggested not in after and self.read_current(suggested) == after[path]:
                # Upstream made this very file there, in another mode (not executable where
                # the fix's is): the bytes landed, the mode is what is left of the fix, as
                # `git rebase`'s add/add at the suggested path says. The stop's worktree holds
                # upstream's file there in the fix's mode: `--continue` as it is keeps the
                # mode change alone, no copy at the path upstream no longer has.
                theirs = self.read_mode(suggested) or "100644"
                ours = modes.get(path, (None, "100644"))[1]
                said += (f"; {_said([suggested])} is in {self.target.label} too, the same bytes "
                         f"in mode {theirs}: what is left of the fix there is its mode, {ours}")
                if self.stop_files:
                    before[suggested] = after[suggested] = after.pop(path)
                    before.pop(path, None)
                    modes.pop(path, None)
                    modes[suggested] = (theirs, ours)
                    said += (f" (a stop's worktree holds {_said([suggested])} in mode {ours}: "
                             "its resolution as it is makes the mode change alone)")
                located[suggested if self.stop_files else path] = said
                continue
            if suggested is not None and (self.read_current(suggested) is not None
                                          or suggested in after
                                          or self._filled(suggested, None, "add/add")):
                said += (f"; {_said([suggested])} is taken in {self.target.label}, so "
                         f"{_said([path])} stays where {name} makes it")
                suggested = None
            held = suggested if self.stop_files and suggested is not None and path in after \
                else path
            if held != path:
                before[held] = None
                after[held] = after.pop(path)
                for moved in (modes, sources):
                    if path in moved:
                        moved[held] = moved.pop(path)
                if path in copies:
                    copies.discard(path)
                    copies.add(held)
            if self.stop_files:
                said += (f" (a stop's worktree holds it at {_said([held])}, where its "
                         f"resolution makes it; to make it "
                         + (f"at {_said([path])}" if held != path else "elsewhere")
                         + f", resolve, then {edit}, move the file, `patchforge add` it at "
                         "its new path and `patchforge refresh`)")
            located[held] = said
        return located

    def _split(self, name: str, path: str, moved: str, others: list[str]) -> str:
        """The stop's words for a file the patch changes that upstream split into copies alike
        (`moved`, which git's pairing follows it to, and `others`, as near): `git rebase`
        carries the change into one of them, as silently as the others go without it."""
        said = (f"CONFLICT (rename split): {_said([path])} was split upstream in "
                f"{self.target.label} into {_said([moved, *others])}, each a file git's rename "
                f"pairing may follow it to: {name}'s change follows {_said([moved])}, and "
                f"{_said(others)} would get none of it")
        if self.stop_files:
            said += (f" (a stop's worktree holds the change in {_said([moved])}: `patchforge "
                     f"add {_said(others)}` and make it there too, or take it out of "
                     f"{_said([moved])} if it belongs elsewhere, then `--continue`)")
        return said

    def _rename_delete(self, said: str, moved: str) -> str:
        """The stop's words for a file the patch deletes that upstream moved (`said`: as git
        says it, "CONFLICT (rename/delete): F renamed to G in X, but deleted in Y"), with the
        ways on where a worktree holds the stop: as it is the deletion stays, put back the
        file does."""
        if not self.stop_files:
            return said
        return (f"{said} (a stop's worktree holds the deletion: its resolution as it is deletes "
                f"{_said([moved])}; to keep upstream's file, `git checkout -- {_said([moved])}` "
                "in the worktree first)")

    def _modify_delete(self, name: str, paths: list[str]) -> str:
        """The stop's words for files the patch deletes and the target changed, as git says
        it ("CONFLICT (modify/delete): F deleted in X and modified in Y")."""
        listed = _said(paths)
        said = (f"CONFLICT (modify/delete): {listed} deleted in {name} and modified upstream "
                f"in {self.target.label}")
        if self.stop_files:
            said += f" ({self.target.label}'s file is left in the worktree, with no markers)"
        return said

    def _conclude(self, name: str, patch, verdict,
                  early: dict[tuple[bytes, bytes, bytes], FileMerge],
                  answers: dict[tuple[bytes, bytes, bytes], tuple[bool, bytes]] | None = None
                  ) -> Judgement:
        """The judgement of `patch` by `verdict` (the history's word in it, or not yet: see
        _decide): landed, obsolete, or its files moved, merged where they do not apply.
        `answers`: the merges run here that were not started early, kept by their inputs for
        a second _conclude of the same patch."""
        evidence = list(verdict.evidence)
        if not patch.file_patches:
            # An empty patch (`new`, never refreshed with a change) has nothing that could
            # have landed: it moves as it is, never recorded as landed upstream.
            return Judgement(name, "applies", "applies", verdict, how="clean", unchanged=True,
                             evidence=evidence, message="empty patch: nothing to apply")
        if verdict.state == "upstreamed":
            broken = self._keeps_broken_at_target(patch)
            if broken:
                # Landed detection says the target has the fix; the fix's own promise of what
                # its result holds says it does not (a landing found in another copy of the
                # code, say): the checks disagree. Judged as unsure: moved where it applies or
                # merges cleanly (its Keeps checked on the result), stopped otherwise, never
                # dropped.
                verdict = replace(verdict, state="unsure", confidence=None, evidence=[
                    *verdict.evidence, *(f"{problem} at {self.target.label}: not taken as "
                                         "landed" for problem in broken)])
                evidence = list(verdict.evidence)
        modes_left = self._modes_not_landed(patch, verdict) \
            if verdict.state == "upstreamed" else []
        if verdict.state == "upstreamed" and not modes_left:
            return Judgement(name, "landed", "upstreamed", verdict, evidence=evidence,
                             message=f"landed upstream ({verdict.confidence} confidence)")
        if modes_left:
            # Landed detection judges content: the mode the patch gives a file is the rest of
            # the fix, and it moves on with that alone (a partial landing keeps what is left).
            evidence.append(f"the content landed; the mode did not: {', '.join(modes_left)}")
        obsolete = verdict.state == "obsolete"
        if obsolete:
            gone = [f.path for f in verdict.files if f.target_path is None]
            never = [path for path in gone if f"{path} {NOT_AT_BASE}" in evidence]
            gone_message = f"{', '.join(never)} {NOT_AT_BASE}" if never else \
                f"{', '.join(gone)} is gone upstream (deleted, not renamed)"
            if not self.stop_files:
                # A caller that only reports the stop (status) needs none of its files.
                return Judgement(name, "stop", "obsolete", verdict, stop_kind="obsolete",
                                 files=gone, evidence=evidence, message=gone_message)
            # A rebase's or bring-back's stop: its worktree holds the patch's other files as
            # far as they get (applied, or merged with conflict markers), as a conflict stop's
            # does, so that the resolution written from it keeps their changes too.
        before: dict[str, bytes | None] = {}  # the target (plus earlier patches), per path
        after: dict[str, bytes | None] = {}
        modes: dict[str, tuple[str, str]] = {}
        # path after -> (path before, its content): a rename or a copy
        sources: dict[str, tuple[str, bytes | None]] = {}
        copies: set[str] = set()
        unchanged = True  # every pre-image and path as in the old series: keep the diff's bytes
        conflicts: list[str] = []
        bases: dict[str, bytes] = {}
        deleted_here: list[str] = []  # deleted by the patch, changed on the target
        renamed_away: dict[str, str] = {}  # deleted by the patch, moved upstream: git's words
        added_too: dict[str, str] = {}  # a path the patch makes -> what fills it there
        binary_stops: list[str] = []
        unmergeable: list[str] = []  # text patches on files git takes for binary
        merged_any = False
        repeated: list = []  # hunks whose place neither the file nor a line map decides
        mapped = False  # a hunk placed by the line map, not by nearness: as a merge places it
        # (path after, file patch, base, target's file, the application that made the file
        # after, None for a merge or a line map's placement): text files carried onto a file
        # upstream changed
        carried: list[tuple[str, object, bytes, bytes, FileApplication | None]] = []
        forward = obsolete or verdict.state in ("applies", "offset") or (
            verdict.state == "unsure" and all(f.applied is not None and f.applied.ok
                                              and f.applied.worst in ("exact", "offset")
                                              for f in verdict.files))
        files = list(zip(patch.file_patches, verdict.files))
        known: dict[tuple[bytes, bytes, bytes], tuple[bool, bytes]] = {}
        if not forward and not self.stop_files:
            # A stop that ends at its first conflicting file (status) asks first the merges of
            # the files that do not apply: one of them conflicts, as a rule, and then the merges
            # of the files that do (clean, as a rule) are not needed, since a stop changes
            # nothing the next patch meets. Any order gives the same outcome: the patch stops
            # when any file conflicts, and moves with every file merged otherwise.
            conflicting = self._failing_file_that_conflicts(files, early, answers, known)
            if conflicting is not None:
                files = [conflicting]
        for fp, fv in files:
            if conflicts and not self.stop_files:
                break
            source = fp.old_path if fp.old_path is not None else fp.new_path
            moved = fv.target_path
            if moved is None:  # a deletion of a file upstream deleted too: nothing left to do
                continue
            fp_target = fp if moved == source else replace(
                fp, old_path=moved if fp.old_path else None,
                new_path=moved if fp.new_path == source else fp.new_path)
            path_after = fp_target.new_path if fp_target.new_path is not None \
                else fp_target.old_path
            current = None if fp.is_new else self.read_current(moved)
            base = self.old_file(source)
            if fp.is_delete and moved != source and current is not None:
                # Upstream moved the file the patch deletes: git's rename/delete, a stop, never
                # the deletion followed to the new place unsaid (upstream's code that uses it
                # there would break). The stop's worktree holds the deletion (`--continue`
                # keeps it); the target's file is its base, to be put back.
                before[moved], after[moved] = current, None
                modes[moved] = self.modes_of(fp, moved)
                conflicts.append(moved)
                renamed_away[moved] = (f"CONFLICT (rename/delete): {_said([source])} renamed "
                                       f"to {_said([moved])} upstream in {self.target.label}, "
                                       f"but deleted in {name}")
                evidence.append(renamed_away[moved])
                continue
            before[path_after] = self.read_current(path_after)
            if fp_target.old_path and fp_target.old_path != path_after:
                sources[path_after] = (fp_target.old_path, current)
                if fp.is_copy:
                    copies.add(path_after)
                else:
                    before[fp_target.old_path] = current
                    # The source goes: a stop's worktree then holds its deletion too.
                    after.setdefault(fp_target.old_path, None)
            modes[path_after] = self.modes_of(fp, moved)
            # The diff's bytes hold only where the file is as the patch found it: content,
            # place and mode (a mode upstream changed makes the `index`/mode lines stale).
            unchanged = unchanged and moved == source and current == base and \
                (fp.is_new or modes[path_after][0] == git_mode(self.old_mode(source)))
            if fp.binary is None and created_identically(fp, before[path_after]):
                # Upstream added this very file: the creation drops out of the patch (so its
                # diff is made again), the rest of it moves, the mode it gives the file too.
                after[path_after] = before[path_after]
                modes[path_after] = (self.read_mode(path_after) or "100644",
                                     modes[path_after][1])
                unchanged = False
                continue
            if fp.binary is None and (fp.is_new or path_after in sources):
                # (a binary file's creation is judged by blob id: binary_move)
                filled = self._filled(path_after, before[path_after],
                                      "rename/add" if fp.is_rename else "add/add")
                if filled is not None:
                    # The path the patch makes (a new file, a rename's or copy's destination)
                    # is filled where it lands: git's add/add (or rename/add), never a clean
                    # move over the target's own file. The stop shows both sides.
                    conflicts.append(path_after)
                    added_too[path_after] = filled
                    if self.stop_files or self.target.base_commit != self.target.commit:
                        # (status at the pin says it its own way: stack.profile_collisions)
                        evidence.append(filled)
                    after[path_after] = self._both_added(fp, fp_target, base, current,
                                                         before[path_after])
                    bases[path_after] = b""
                    continue
            if forward:
                # Landed detection applied this very file patch to this very content already;
                # without fuzz, the result is the same: reuse it.
                application = fv.applied if fv.applied is not None and fv.applied.ok and \
                    fv.applied.worst in ("exact", "offset") else \
                    apply_file_patch(current, fp_target, max_fuzz=0)
                if application.ok:
                    after[path_after], undecided, moved_by_map = self._placed(
                        fp, fp_target, base, current, application)
                    repeated += undecided
                    if fp.binary is None and base is not None and current is not None and \
                            current != base:
                        carried.append((path_after, fp, base, current,
                                        None if moved_by_map else application))
                    merged_any = merged_any or moved_by_map
                    mapped = mapped or moved_by_map
                    continue
            # 3-way: ours = the target as it stands, base = the old series state before this
            # patch, theirs = that plus the patch.
            if fp.binary is not None:
                if (fp.is_new or path_after in sources) and before[path_after] is not None \
                        and not (fv.hunks and fv.hunks[0].landed):
                    # A binary file made where the target has another one: never moved over
                    # it (the target's file stays in the worktree, as at any binary stop).
                    conflicts.append(path_after)
                    binary_stops.append(path_after)
                    after[path_after] = before[path_after]
                    continue
                moves, after[path_after] = binary_move(fp_target, fv, current,
                                                       before[path_after])
                if not moves:
                    conflicts.append(path_after)
                    binary_stops.append(path_after)
                continue
            theirs = self.applications(None if fp.is_new else base, fp, max_fuzz=2)
            if fp.is_new and before[path_after] is None and theirs.ok:
                after[path_after] = theirs.content  # a creation where the target has nothing
                continue
            if not theirs.ok or theirs.content is None or current is None:
                if theirs.ok and theirs.content is None and current is not None:
                    # The patch deletes the file, the target changed it: git's modify/delete.
                    deleted_here.append(path_after)
                conflicts.append(path_after)
                after[path_after] = current
                continue
            key = (base or b"", current, theirs.content)
            started = early.get(key)
            if started is not None:
                clean, merged = started.result()
            elif answers is not None and key in answers:
                clean, merged = answers[key]
            elif key in known:
                clean, merged = known[key]
            else:
                clean, merged = merge_file(*key, self.labels)
                if answers is not None:
                    answers[key] = clean, merged
            merged_any = True
            after[path_after] = merged
            if clean and base is not None and current != base:
                carried.append((path_after, fp, base, current, None))
            if not clean:
                conflicts.append(path_after)
                if merges_as_binary(*key):
                    unmergeable.append(path_after)
                elif self.stop_files:
                    # The worktree's markers show the base too (`||||||| base`, git's diff3
                    # style): what the patch was made on, so that the lines that changed under
                    # it are seen. Asked only here: what merges cleanly stays the merge's
                    # default style's answer (diff3's coarser conflicts would stop a patch
                    # the default merges).
                    after[path_after] = merge_file(*key, self.labels, diff3=True)[1]
                    bases[path_after] = key[0]
        moved_made: set[str] = set()
        located = self._relocated(name, patch, before, after, modes, sources, copies,
                                  moved_made)
        for fp, fv in zip(patch.file_patches, verdict.files):
            # (A destination inside a moved directory is the file-location stop's; a source
            # an earlier patch made was moved by that patch's stop, not by upstream.)
            if fp.is_rename and not fp.is_copy and fv.target_path not in (None, fp.old_path) \
                    and fp.new_path != fv.target_path and fp.new_path not in moved_made \
                    and self.store.entries(self.target.base_commit,
                                           [fp.old_path])[fp.old_path] is not None:
                # Upstream moved the file the patch renames, elsewhere: git's rename/rename, a
                # stop, never upstream's file at its new place taken away unsaid.
                said = (f"CONFLICT (rename/rename): {_said([fp.old_path])} renamed to "
                        f"{_said([fv.target_path])} upstream in {self.target.label} and to "
                        f"{_said([fp.new_path])} in {name}")
                evidence.append(said)
                if self.stop_files:
                    said += (f" (a stop's worktree holds the rename from {_said([fv.target_path])}"
                             f": its resolution as it is takes {_said([fv.target_path])} away; "
                             f"to keep upstream's file as well, `git checkout -- "
                             f"{_said([fv.target_path])}` in the worktree first)")
                located[fp.new_path] = said
            elif fp.old_path == fp.new_path and fv.target_path not in (None, fp.old_path) and \
                    fv.target_path in after:
                others = [path for path in self.split_copies(fp.old_path)
                          if path != fv.target_path]
                if others:
                    # (first: status's table shows a patch's first line of evidence)
                    located[fv.target_path] = self._split(name, fp.old_path, fv.target_path,
                                                          others)
                    evidence.insert(0, located[fv.target_path])
        conflicts.extend(path for path in located if path not in conflicts)
        evidence.extend(said for said in located.values() if said not in evidence)
        new_modes = {path: mode for path, (_, mode) in modes.items()
                     if after.get(path) is not None}
        if obsolete:
            if not never:
                # As git says it: which side deleted the file, which changed it.
                listed = ", ".join(gone)
                gone_message = (f"CONFLICT (modify/delete): {listed} deleted upstream in "
                                f"{self.target.label} and modified in {name} ({listed} is gone "
                                "upstream, not renamed; the worktree has no copy)")
            return Judgement(name, "stop", "obsolete", verdict, stop_kind="obsolete",
                             files=gone + conflicts, before=before, after=after,
                             evidence=evidence, modes=new_modes, bases=bases,
                             message=gone_message + (f"; conflict in {_said(conflicts)}"
                                                     if conflicts else "")
                             + binary_stop_note(binary_stops) + unmergeable_note(unmergeable))
        if conflicts:
            others = [path for path in conflicts
                      if path not in deleted_here and path not in added_too
                      and path not in located and path not in renamed_away]
            message = "; ".join(
                ([self._modify_delete(name, deleted_here)] if deleted_here else [])
                + [self._rename_delete(said, path) for path, said in renamed_away.items()]
                + list(added_too.values()) + list(located.values())
                + ([f"conflict in {_said(others)}"] if others else []))
            return Judgement(name, "stop", "conflict", verdict, stop_kind="conflict",
                             files=conflicts, before=before, after=after, evidence=evidence,
                             modes=new_modes, bases=bases, deleted_here=deleted_here,
                             parts=self._changes_landed(patch, verdict),
                             message=message
                             + binary_stop_note(binary_stops) + unmergeable_note(unmergeable))
        if repeated and all(r.own_at for r in repeated) and \
                self._other_functions(carried, after):
            # Put into a near-copy that is another function than the fix's: the stop below
            # (`elsewhere`) names both functions, the plainer word.
            repeated = []
        if repeated:
            where = "; ".join(f"{r.describe()} (put at line {r.at_line})" for r in repeated)
            return Judgement(name, "stop", "unsure", verdict, stop_kind="unsure",
                             files=sorted({r.path for r in repeated}), before=before,
                             after=after, modes=new_modes,
                             evidence=evidence + [f"{AMBIGUOUS_PLACE}: {r.describe()}"
                                                  for r in repeated],
                             message=f"the place of the fix is ambiguous: {where}; "
                                     f"{repeated[0].why()}, and no line map of that version "
                                     "to this one decides between them (nearness to the hunk "
                                     "header's line would be a guess)")
        changes = self.file_changes(before, after, modes, sources, copies)
        if not changes:
            if verdict.state == "unsure":
                # The checks disagree and the merge changes nothing: never dropped on its own.
                moved = moved_away(verdict.evidence)
                return Judgement(name, "stop", "unsure", verdict, stop_kind="unsure",
                                 files=sorted(after), before=before, after=after,
                                 modes=new_modes,
                                 evidence=evidence + ["merge result empty"],
                                 message="landed detection is unsure "
                                         + (f"({moved[0]}) " if moved else "")
                                         + "and the 3-way merge leaves nothing to change: "
                                           "decide by hand")
            broken = self._keeps_broken_at_target(patch)
            if broken:
                # Nothing to change, yet the target lacks what the fix promises: the merge
                # found the fix's lines somewhere else (another copy of the code).
                return Judgement(name, "stop", "invariant", verdict, stop_kind="invariant",
                                 files=sorted(after), before=before, after=after,
                                 modes=new_modes,
                                 evidence=evidence + ["merge result empty", *broken],
                                 message="the 3-way merge leaves nothing to change, but "
                                         + "; ".join(broken) + ": decide by hand")
            return Judgement(name, "landed", "upstreamed", verdict,
                             evidence=evidence + ["merge result empty"],
                             message="the 3-way merge leaves nothing to change (landed upstream)")
        how = "merged" if merged_any else ("offset" if verdict.state == "offset" else "clean")
        state = "partial" if modes_left else "merges" if mapped else \
            _MOVING_STATE.get(verdict.state, verdict.state)
        judgement = Judgement(name, "applies", state,
                              verdict, how=how, before=before, after=after, changes=changes,
                              modes=new_modes, parts=self._changes_landed(patch, verdict),
                              unchanged=unchanged and not merged_any, evidence=evidence,
                              message="placed by the 3-way merge (its context is at more "
                              "than one place of the file)" if mapped else
                              {"merged": "3-way merged cleanly",
                               "offset": "applied with offset",
                               "clean": "applied exactly"}[how])
        if patch.get_all("Keeps"):
            # Applying is not enough: a fix that applies in the wrong place (or that a later
            # upstream change neutralised) breaks its Keeps: invariants.
            from patchforge.invariants import (check_patch_invariants, keeps_moved,
                                               with_keeps_moved)

            def read(path: str) -> bytes | None:
                return after[path] if path in after else self.read_current(path)

            # A Keeps line on a file the upstream moved follows the move, as the diff does:
            # checked at the new path, which the rebase writes into the moved patch.
            judgement.keeps_moved = keeps_moved(patch, read, self.find_rename)
            judgement.evidence.extend(f"Keeps line follows {old} -> {new}"
                                      for old, new in judgement.keeps_moved.items())
            broken = check_patch_invariants(with_keeps_moved(patch, judgement.keeps_moved), read)
            if broken:
                judgement.outcome, judgement.stop_kind = "stop", "invariant"
                judgement.files = sorted(after)
                judgement.evidence.extend(broken)
                judgement.message = "; ".join(broken)
                return judgement
        elsewhere = self._other_functions(carried, after)
        if elsewhere:
            # (after the Keeps check: a fix's own promise, broken, is the plainer word)
            where = "; ".join(said for _, said in elsewhere)
            judgement.outcome, judgement.stop_kind = "stop", "unsure"
            judgement.state, judgement.how, judgement.changes = "unsure", None, []
            judgement.files = sorted({path for path, _ in elsewhere})
            judgement.evidence.extend(f"{OTHER_FUNCTION}: {said}" for _, said in elsewhere)
            judgement.message = (f"the fix would go into another function: {where}; upstream "
                                 "changed or moved the function the fix changes, and the place "
                                 "found for the fix is in another copy of its code")
            return judgement
        doubled = self._doubled(carried, after) if self.doubled_stops else []
        if doubled:
            # Applied, merged or fuzzed in cleanly, the file would hold the fix's lines twice:
            # a conflict, as git would have it had upstream written them byte for byte where
            # the fix puts them. (A fix whose every change upstream made is landed, above.)
            # (Its `changes` stay: what the move would be, which bring-back, refusing to
            # double, words by hunk.)
            judgement.outcome, judgement.stop_kind = "stop", "conflict"
            judgement.state, judgement.how = "conflict", None
            judgement.files = sorted({path for path, _ in doubled})
            judgement.evidence.extend(f"{DOUBLED}, its own way: {said}" for _, said in doubled)
            judgement.message = "; ".join(_doubled_said(said) for _, said in doubled)
        return judgement

    def _doubled(self, carried: list, after: dict[str, bytes | None]) -> list[tuple[str, str]]:
        """Each file of `carried` (as _other_functions takes them) whose result would hold
        some of the fix's added lines twice: upstream added them itself near where the fix
        goes (apply.neartext.doubled_near), where the file the fix was made on did not have
        them. (its path, where: `PATH line N (upstream's at line M)`, lines of the result)."""
        found = []
        for path, fp, base, current, application in carried:
            result = after.get(path)
            fixed = self.applications(base, fp, max_fuzz=2)
            if result is None or not fixed.ok or fixed.content is None:
                continue
            # (Both places read alike: a hunk's placement spans its context lines, a line
            # diff of a 3-way merge's result only the changed ones; the base's window read
            # wider than the target's counts a look-alike further off, another function's.)
            made = self._spans(fp, base, fixed if application is not None else None,
                               fixed.content)
            doubled = doubled_near(fp, current, self._spans(fp, current, application, result),
                                   base, made, self._runs_not_taken_out(fp),
                                   lambda runs: _copies_taken_out(path, base, current, made, runs))
            if doubled:
                doubled = _upstreams_own(path, fp, base, current,
                                         self._places(fp, current, application, result), doubled)
            # (Upstream's copy is one upstream added: a copy the file had before may stand
            # nearer, between the two.)
            ups = _upstreams_lines(base, current, result) if doubled else set()
            if doubled:
                short = short_runs(fp) | in_place_runs(fp)
                doubled = [run for run in doubled if not (
                    run in short and _in_a_loop_apart(path, current, result, run, ups))]
            if doubled:
                blocks = block_runs(fp)
                doubled = [run for run in doubled
                           if not (run in blocks
                                   and _bodies_differ(path, current, result, run, ups))
                           and not _reads_what_is_set_between(path, current, result, run, ups)
                           and not _serves_a_use_between(path, current, result, run, ups)
                           and not _items_of_two_brackets(path, current, result, run, ups)
                           and not _on_two_paths(path, current, result, run, ups)]
            if doubled:
                # Upstream's copy inside a branch the fix's copy is not in runs on only some
                # of the paths through the fix's: a guard there is checked twice on those and
                # once, the fix's, on the others; both are wanted. Any other line is done twice
                # on those paths, and deleting the fix's copy loses it on the others: a stop
                # whose first way on keeps the fix's copy (FEWER_PATHS).
                # So does a short statement's copy past a block that leaves (`if a:` +
                # `return b` between the fix's `y += 1` and upstream's): the paths that
                # leave run the fix's alone.
                steps = short_runs(fp)
                fewer = [run for run in doubled
                         if _upstreams_on_fewer_paths(path, current, result, run, ups)
                         or (run in steps and _upstreams_past_a_leaving_block(path, current,
                                                                              result, run, ups))]
                doubled = [run for run in doubled
                           if run not in fewer or not _guard_at_fix(path, current, result, run)]
            if not doubled:
                item = _item_twice_in_its_bracket(current, result, fixed.content, base)
                if item is not None:
                    found.append((path, f"{path} line {item[0]} (upstream's at line {item[1]})"
                                  + (f"; {item[2]}" if item[2] else "")))
                    continue
                item = _key_twice_in_its_dict(path, current, result, fixed.content)
                if item is not None:
                    found.append((path, f"{path} line {item[0]} (upstream's at line {item[1]}); "
                                  f"{item[2]}"))
                    continue
            if doubled:
                said = _doubled_where(path, current, result, doubled, ups)
                if doubled[0] in fewer:
                    # Upstream's copy in a loop's body runs each round, the fix's outside it
                    # once: taking upstream's out would lose its rounds (EACH_ROUND).
                    said += "; " + (EACH_ROUND if _upstreams_each_round(
                        path, current, result, doubled[0], ups) else FEWER_PATHS)
                elif not _guard_at_fix(path, current, result, doubled[0]) and \
                        _fixs_each_round(path, current, result, doubled[0], ups):
                    # Deleting the fix's copy would lose its rounds (YOURS_EACH_ROUND).
                    said += "; " + YOURS_EACH_ROUND
                elif (block := _read_between(path, current, result, doubled[0], ups)):
                    said += "; " + (READ_IN_A_SWITCH if block == "switch" else READ_BETWEEN)
                elif _index_address_to_undeclared(path, current, result, doubled[0], ups):
                    said += "; " + UNDECLARED_CALL
                elif doubled[0] in steps and _read_in_a_branch(path, current, result,
                                                                doubled[0], ups):
                    said += "; " + READ_IN_A_BRANCH
                found.append((path, said))
        return found

    def _runs_not_taken_out(self, fp) -> list[bytes] | None:
        """The runs of `fp` the doubling check reads (telling_runs), but for those of hunks
        whose runs are all `taken_out`; None (all of them) where none are."""
        if not self.taken_out:
            return None
        kept: set[bytes] = set()
        for hunk in fp.hunks:
            runs = near_runs(hunk)
            if not runs or not all(run in self.taken_out for run in runs):
                kept.update(run for run, _ in replacing_runs(hunk))
        return [run for run in telling_runs(fp) if run in kept]

    @staticmethod
    def _places(fp, content: bytes, application: FileApplication | None,
                result: bytes) -> list[tuple[int, int, bytes]]:
        """Where in `content` the fix goes, as line places (changed_places), else the places a
        line diff of `content` and `result` finds."""
        places = changed_places(fp, application) if application is not None else None
        return file_changes(content, result) if places is None else places

    @staticmethod
    def _spans(fp, content: bytes, application: FileApplication | None,
               result: bytes) -> list[tuple[int, int]]:
        """Where in `content` the fix goes, as byte spans: the application's placements
        (read off it), else the places a line diff of `content` and `result` finds."""
        if application is not None and application.edits is not None:
            return [(start, end) for start, end, _ in application.edits]
        return line_spans(content, [(start, end) for start, end, _ in
                                    SeriesJudge._places(fp, content, application, result)])

    def _changes_landed(self, patch, verdict) -> dict[str, dict[int, tuple[int, ...]]]:
        """The changes inside hunks not landed whole that the target (with the series before
        the patch) has made, the others not (Judgement.parts). Asked only of a hunk that does
        not apply as it is: where its pre-image is there, none of its changes landed."""
        found: dict[str, dict[int, tuple[int, ...]]] = {}
        for fp, fv in zip(patch.file_patches, verdict.files):
            if fv.target_path is None or fp.binary is not None or fp.is_new or fp.is_delete \
                    or fp.is_copy:
                continue
            asked = [hv for hv in fv.hunks if not hv.landed and not hv.ambiguous
                     and hv.forward not in ("exact", "offset") and hv.index < len(fp.hunks)]
            if not asked:
                continue
            # Here: a patch whose every hunk applies (most of a clean rebase) loads no
            # apply.parts.
            from patchforge.apply.parts import changes_landed

            current = self.read_current(fv.target_path)
            for hv in asked:
                changes = changes_landed(fp.hunks[hv.index], current)
                if changes:
                    found.setdefault(fv.path, {})[hv.index] = changes
        return found

    def _other_functions(self, carried: list,
                         after: dict[str, bytes | None]) -> list[tuple[str, str]]:
        """Each file of `carried` (path, file patch, base, the target's file, the application
        that made the file after) whose result (`after`) has the fix's change in another
        function than the one the fix changes on the base, that function still in the file
        with the code the fix is made on (`another_function`): (its path, said as a stop says
        it)."""
        found = []
        for path, fp, base, current, application in carried:
            result = after.get(path)
            fixed = self.applications(base, fp, max_fuzz=2)
            fix = changed_places(fp, fixed) if fixed.ok else None
            if result is None or not fix:
                continue
            other = another_function(
                path, base, fix, current,
                changed_places(fp, application) or [] if application is not None
                else file_changes(current, result))
            if other is not None:
                fix_name, there = (other[0].decode(errors="replace"),
                                   other[1].decode(errors="replace"))
                found.append((path, f"{path}: the fix changes {fix_name}, and would change "
                                    f"{there} (line {other[2]}) instead; {fix_name} is still "
                                    "in the file"))
        return found

    def _keeps_broken_at_target(self, patch) -> list[str]:
        """The patch's `Keeps:` lines the target's files (with the series before it) do not
        hold, each said as a violation; a Keeps line on a file the upstream moved is asked at
        the new path. A fix judged landed must hold them there: the target is its result."""
        if not patch.get_all("Keeps"):
            return []  # most patches promise nothing: no need to load the invariants module
        from patchforge.invariants import check_patch_invariants, keeps_moved, with_keeps_moved

        moved = keeps_moved(patch, self.read_current, self.find_rename)
        return check_patch_invariants(with_keeps_moved(patch, moved), self.read_current)

    def _modes_not_landed(self, patch, verdict) -> list[str]:
        """The modes `patch` gives its files (a mode change, or a new file's mode other than
        100644) that the target's files do not have, each said as `PATH OLD -> NEW`: a patch
        whose content landed keeps these (a script made executable, the line change landed
        upstream without it)."""
        left = []
        for fp, fv in zip(patch.file_patches, verdict.files):
            if fp.binary is not None or fp.new_path is None or fv.target_path is None:
                continue
            wanted = git_mode(fp.new_mode)
            if wanted is None or (not fp.is_new and wanted == git_mode(fp.old_mode)) or \
                    (fp.is_new and wanted == "100644"):
                continue
            path = fp.new_path if fp.new_path != fp.old_path else fv.target_path
            there = self.read_mode(path)
            if there is not None and there != wanted:
                left.append(f"{path} {there} -> {wanted}")
        return left

    def _filled(self, path: str, there: bytes | None, kind: str) -> str | None:
        """What fills `path` where the next patch meets it (`there`: its file there), said as a
        stop says it, or None when a patch may make a file at `path`: a file (other than one
        the patch makes identically, asked before), a directory of the target, or a file of
        the target at one of its parent directories (the series so far seen through
        read_current)."""
        if there is not None:
            return (f"CONFLICT ({kind}): {_said([path])} is in {self.target.label} too (with "
                    "other content)")
        parents = path.split("/")[:-1]
        for depth in range(1, len(parents) + 1):
            parent = "/".join(parents[:depth])
            if self.read_current(parent) is not None:
                return (f"CONFLICT (file/directory): {_said([parent])} is a file in "
                        f"{self.target.label}, where {_said([path])} would go")
        entry = self.store.entries(self.read_commit, [path], directories=True)[path]
        if entry is not None and entry[0] == "040000" and path not in self.current:
            return (f"CONFLICT (file/directory): {_said([path])} is a directory in "
                    f"{self.target.label}")
        return None

    def _both_added(self, fp, fp_target, base: bytes | None, current: bytes | None,
                    there: bytes | None) -> bytes | None:
        """The stop's file where the patch makes a path the target fills: the target's file
        and the patch's, merged as git merges an add/add (an empty base: both sides in
        markers); the patch's own file where the target's is no file (a directory, a file
        at a parent: nothing to merge with)."""
        made = apply_file_patch(current, fp_target, max_fuzz=0) if not fp.is_new else None
        if made is None or not made.ok:
            made = self.applications(None if fp.is_new else base, fp, max_fuzz=2)
        if not made.ok or made.content is None:
            return there
        if there is None or not self.stop_files:
            return made.content
        return merge_file(b"", there, made.content, self.labels, diff3=True)[1]

    def _placed(self, fp, fp_target, base: bytes | None, current: bytes | None,
                application: FileApplication) -> tuple[bytes | None, list, bool]:
        """(the file after `fp`, the hunks whose place stays undecided (apply.hunks.
        RepeatedPlace), whether the line map moved one) for a file patch that applied forward
        to `current` (`application`, its hunks placed by nearness to their headers' lines).

        Where a hunk's pre-image is at more than one place of `current`, nearness decides
        nothing: upstream inserting lines above a repeated block put the fix into the block
        before it, every check green. The place the hunk had in the old series' file (`base`)
        is carried over by the line map of that file to this one: the lines around it that
        each file has once, with the same lines between them (`mapped_places`), else a 3-way
        merge of the patch (`git rebase`'s answer): the candidate whose application is that
        merge's result is taken. No clean merge, or one no candidate gives: undecided.
        So is a hunk whose pre-image is at one place of `current` but was at several of `base`
        (`copies_left`: upstream changed the copy it changes, and nearness found another)
        unless the map puts its place there.
        A file as the old series had it keeps the old series' placement (no search), except
        at the pin, where the old series is this one: there a patch whose `index` line names
        another pre-image than the file (an earlier patch edited since), or that has none
        (quilt's: it names no file, apply.hunks.unproven), is undecided.
        """
        content = application.content
        if fp.binary is not None or current is None or content is None:
            return content, [], False
        if current == base:
            if self.target.commit != self.target.base_commit:
                return content, [], False
            return content, unproven(repeated_places(current, fp_target, application), fp,
                                     current), False
        repeated = repeated_places(current, fp_target, application)
        theirs = None
        if not repeated:
            # The pre-image at one place now, but at several in the old file: upstream changed
            # (or removed) the copy the patch changes, and nearness may have found another
            # one, a fix put into code it never changed. The map confirms the place or not.
            if base is None:
                return content, [], False
            theirs = self.applications(base, fp, max_fuzz=2)
            if not theirs.ok or theirs.content is None:
                return content, [], False
            repeated = copies_left(base, current, fp_target, theirs, application)
            if not repeated:
                return content, [], False
        repeated = unproven(repeated, fp, current)
        if not repeated:
            return content, [], False
        if base is None:
            return content, repeated, False
        if theirs is None:
            theirs = self.applications(base, fp, max_fuzz=2)
        if not theirs.ok or theirs.content is None:
            return content, repeated, False
        if unproven(repeated_places(base, fp, theirs), fp, base):
            # Its place in the old series' file was nearness's guess too (the patch made on
            # another version there, or naming none): the map would carry the guess.
            return content, repeated, False
        found, undecided = carried_place(base, current, fp, fp_target, theirs, application,
                                         repeated, self.labels)
        if found is None:
            return content, undecided, False
        return found, [], found != content

    def _failing_file_that_conflicts(self, files, early, answers, known):
        """The first (file patch, file verdict) of `files` that does not apply forward and
        whose 3-way merge conflicts, None when there is none; each merge's answer is kept in
        `known` by its inputs (the key `_conclude` looks merges up by) for the walk over the
        files after it. Only plain text changes of a file the target has are asked here (a
        creation, a binary file, a file gone or a patch that does not apply to its base are
        left to `_conclude`)."""
        for fp, fv in files:
            applied = fv.applied
            if applied is not None and applied.ok and applied.worst in ("exact", "offset"):
                continue
            moved = fv.target_path
            if moved is None or fp.is_new or fp.binary is not None:
                continue
            current = self.read_current(moved)
            base = self.old_file(fp.old_path if fp.old_path is not None else fp.new_path)
            theirs = self.applications(base, fp, max_fuzz=2)
            if current is None or not theirs.ok or theirs.content is None:
                continue
            key = (base or b"", current, theirs.content)
            started = early.get(key)
            if started is not None:
                known[key] = started.result()
            elif answers is not None and key in answers:
                known[key] = answers[key]
            elif key not in known:
                known[key] = merge_file(*key, self.labels)
                if answers is not None:
                    answers[key] = known[key]
            if not known[key][0]:
                return fp, fv
        return None

    def modes_of(self, fp, moved: str) -> tuple[str, str]:
        """(old, new) mode of a file the patch changes: the target's mode, changed the way the
        patch changes it (a new executable script stays executable, a mode change stays, a
        rename or copy keeps its source's mode)."""
        if fp.is_new:
            return (git_mode(fp.new_mode) or "100644",) * 2
        old = self.read_mode(moved) or git_mode(fp.old_mode) or "100644"
        changes_mode = fp.new_mode is not None and fp.old_mode is not None and \
            git_mode(fp.new_mode) != git_mode(fp.old_mode)
        return old, (git_mode(fp.new_mode) or old) if changes_mode else old

    @staticmethod
    def file_changes(before, after, modes, sources, copies) -> list:
        """The diff entries (store.diff.FileChange) of a patch judged to move: `before`/`after`
        its files on the target, `modes` each file's (old, new) mode, `sources` the renames and
        copies (path after -> (source, its content)), `copies` which of them are copies."""
        changes = []
        renamed_away = {old for path, (old, _) in sources.items() if path not in copies}
        for path, new in after.items():
            if path in renamed_away and new is None:
                continue  # the rename's own entry says it
            old_path, old = sources.get(path, (path, before.get(path)))
            old_mode, new_mode = modes.get(path, ("100644", "100644"))
            if old == new and old_path == path and old_mode == new_mode:
                continue
            changes.append(FileChange(old_path if old is not None else None,
                                      path if new is not None else None, old, new,
                                      old_mode, new_mode, copy=path in copies))
        return changes


def _upstreams_own(path: str, fp, base: bytes, current: bytes,
                   places: list[tuple[int, int, bytes]], runs: list[bytes]) -> list[bytes]:
    """Of `runs` (doubled_near's: more copies near the fix's place than its base had), those
    upstream made itself there: a copy in `current` within NEAR_LINES of a place the fix goes
    (`places`, 0-based lines of `current`) whose lines upstream added (a line diff of `base`
    and `current`: not a line the base had that upstream's deletions brought near), in the
    fix's own function (a copy in another is other code that reads alike), and not a run that
    replaces removed lines still where the fix goes (replacing_runs: upstream did not make
    that change there; a copy is its change of another line, an if's and an else's call). A
    run the fix adds among context (a guard) counts, whatever the hunk changes beside it.
    Asked only of a doubling found: the diff is paid then."""
    import difflib

    lines = split_lines(current)
    windows = [NearText(window) for window in
               near_windows(current, line_spans(current, [(s, e) for s, e, _ in places]))]
    # (Run by run: one hunk holds every change within a few lines of another, a new guard and
    # a call changed two lines lower; the guard's copy is upstream's own all the same.)
    replaced_there, told = set(), set()
    for hunk in fp.hunks:
        for run, removed in replacing_runs(hunk):
            if removed and all(any(text.count(old) for text in windows) for old in removed):
                replaced_there.add(run)
            else:
                told.add(run)
    runs = [run for run in runs if run in told or run not in replaced_there]
    if not runs:
        return []
    old = split_lines(base)
    matcher = difflib.SequenceMatcher(None, old, lines, autojunk=len(old) + len(lines) > 4000)
    added = {k for tag, _, _, j1, j2 in matcher.get_opcodes() if tag != "equal"
             for k in range(j1, j2)}
    functions = {function_named_at(path, lines, start, first) for start, _, first in places}
    text = NearText(current)
    short = short_runs(fp)
    own = []
    for run in runs:
        # (A short statement's copy counts within the fix's hunk only: further off it is as
        # often another step that reads alike.)
        # (But one in a branch the fix's place is not in, which leaves the function right
        # after it, `count += 1` before a `return` in a loop's branch, runs at most once a
        # call, as the fix's before the loop does: on that path, twice. Within NEAR_LINES it
        # counts: upstream's copy on fewer paths, the stop keeps yours first. So does one in
        # the fix's straight run of statements with nothing between naming what it names:
        # the two could change places, the same step twice. Its NEAR_LINES are counted as
        # _statements_apart counts: C's lines of a brace alone, `}` closing a loop between,
        # are none, a block reading as many lines in C as in Python.)
        near = [at - 1 for at in text.lines_of(run)
                if any(start - NEAR_LINES <= at - 1 < end + NEAR_LINES
                       or run in short and start - 4 * NEAR_LINES <= at - 1 < end + 4 * NEAR_LINES
                       and _statements_apart(path, lines, at - 1, start, end) < NEAR_LINES
                       for start, end, _ in places)]
        if run in short:
            near = [k for k in near
                    if any(_statements_apart(path, lines, k, start, end) < SHORT_NEAR_LINES
                           for start, end, _ in places)
                    or _before_leaving_a_branch(lines, k, places)
                    or _the_same_step_apart(path, lines, k, places, _indents_of(fp, run), run)]
        if any(k in added and function_named_at(path, lines, k) in functions for k in near) \
                or _more_in_function(path, old, lines, run, near, functions):
            own.append(run)
    return own


def _between(k: int, start: int, end: int) -> range:
    """The lines (0-based) between line `k` and a place [start, end) of the fix."""
    return range(k + 1, start) if k < start else range(end, k)


def _statements_apart(path: str, lines: list[bytes], k: int, start: int, end: int) -> int:
    """How many lines stand between line `k` (0-based) of `lines` and the fix's place
    [start, end), but for C's lines of a brace alone (`}` closing a loop between): a block
    reads as many lines in C as in Python, `for (...) {` + body + `}` as `for ...:` + body.
    (Nor a `switch`'s labels on their own lines, `case 1:`, `default:`: a C case's `break;`
    counts where a Python `case 1:` line does; nor a `goto`'s label alone, `tail:`, no step.)"""
    braced = _language(path) == "c"
    return sum(1 for at in _between(k, start, end)
               if not (braced and (STRING_OR_COMMENT.sub(b"", lines[at]).strip() in _BRACES
                                   or _C_LABEL.fullmatch(
                                       STRING_OR_COMMENT.sub(b"", lines[at]).strip())
                                   or re.fullmatch(rb"[A-Za-z_]\w*\s*:\s*;?", STRING_OR_COMMENT
                                                   .sub(b"", lines[at]).strip()))))


_BRACES = frozenset((b"{", b"}", b"};"))
# A C `switch`'s label on its own line.
_C_LABEL = on_first_use(rb"(?:case\b[^;{}]*|default\s*):")


def _indents_of(fp, run: bytes) -> set[bytes]:
    """The indentation of each line the fix adds that reads as `run` (one short statement)."""
    return {line[1:len(line) - len(line[1:].lstrip(b" \t"))] for hunk in fp.hunks
            for line in hunk.lines
            if line[:1] == b"+" and b"".join(near_lines([line[1:].rstrip(b"\r\n")])) == run}


def _the_same_step_apart(path: str, lines: list[bytes], k: int,
                         places: list[tuple[int, int, bytes]], indents: set[bytes],
                         run: bytes) -> bool:
    """Whether upstream's copy of a short statement `run` at line `k` (0-based) of `lines`,
    further from the fix's place than SHORT_NEAR_LINES (within NEAR_LINES: doubled_near's),
    could change places with the fix's on the paths through both: at one indentation
    (`indents`, the fix's line's), every code line between at it too or in a block opened and
    closed between (_steps_between, a block that leaves too: `if a:` + `return b`), none
    naming a name the statement names (its target, what it reads); or upstream's copy below,
    in the one branch of an if/else that goes on (_in_the_branch_going_on), or above the if
    whose one branch going on holds the fix's (the same read the other way round). `y += 1`
    under `y = x + 1` and upstream's above `z = y * 2` five lines lower, `a = 1` ... or `if
    a:` + `b = 0` between: y gets 1 twice. (A line between reading `y` or setting what the
    statement reads tells the two steps apart: each may be its own, and the fix moves.) A C
    preprocessor line between (`#if`) is a boundary too: a copy past it may not be built."""
    if len(indents) != 1:
        return False
    braced = _language(path) == "c"
    indent = next(iter(indents))
    written = _written(lines, k + 1, run)[0]
    statement = STRING_OR_COMMENT.sub(b"", written).strip()
    names = set(_NAME.findall(statement))
    if not lines[k].startswith(indent):
        # (Upstream's copy above an `if`, the fix's in its one branch going on, `y += 1` /
        # `if n:` + `return c` / `else:` + ... + `y += 1`: read as the other way round, the
        # fix's line put at its place. Upstream's runs on every path through the fix's.)
        upper = written[:len(written) - len(written.lstrip(b" \t"))]
        return len(upper) < len(indent) and indent.startswith(upper) and any(
            _in_the_branch_going_on(lines[:start] + [indent + written.lstrip(b" \t")]
                                    + lines[end:], start, range(k + 1, start), upper, names,
                                    braced, any_branch=True)
            for start, end, _ in places if k < start)
    if lines[k][len(indent):len(indent) + 1] in (b" ", b"\t"):
        return any(_in_the_branch_going_on(lines, k, range(end, k), indent, names, braced)
                   for start, end, _ in places if end <= k)
    # (A statement adding to its target, `y += 1`, adds alike beside a step adding to it.)
    adds = re.fullmatch(rb"([A-Za-z_]\w*)\s*[-+]=(?!=)(.*?);?", statement)
    adds_to = adds[1] if adds is not None and adds[1] not in _NAME.findall(adds[2]) else None
    return any(_steps_between(lines, _between(k, start, end), indent, names, braced,
                              adds_to) is not None
               for start, end, _ in places if _between(k, start, end))


def _in_the_branch_going_on(lines: list[bytes], k: int, between: range, indent: bytes,
                            names: set[bytes], braced: bool, any_branch: bool = False) -> bool:
    """Whether line `k` (0-based) of `lines` is in a branch of an `if` at `indent` (with its
    `else`) that goes on (`if n:` + `return c` / `else:` + ... + `y += 1`; `if (ok) { ...
    y += 1; } else { return; }`; `if n:` + ... + `y += 1` / `else:` + `d = c`; a `try:`
    body, `except OSError:` + `return b`): upstream's copy there runs on the paths through
    that branch, the same step as the fix's on them (on every path going on past the `if`
    where every other branch leaves, as one past it does). The lines
    `between` the fix's copy and the `if` and the branch's own lines above `k` are steps
    (_steps_between); no line of the `if` but those after `k` in its branch names one of
    `names` (`else: return y` hands on the fix's step: each its own). Where `any_branch`
    (the other copy above the `if`), an `if`/`elif` with no `else` too."""
    def code(at: int) -> bytes:
        return STRING_OR_COMMENT.sub(b"", lines[at]).strip()

    def at_indent(at: int) -> bool:
        return lines[at].startswith(indent) and \
            lines[at][len(indent):len(indent) + 1] not in (b" ", b"\t")

    heads = [at for at in between if code(at) and at_indent(at)]
    start = next((at for at in reversed(heads)
                  if re.match(rb"if\s*\(" if braced else rb"if\b|try\s*:", code(at))), None)
    if start is None or _steps_between(lines, range(between.start, start), indent, names,
                                       braced) is None:
        return False
    # The branches of the `if` (or the `try:` and its handlers) from `start` on: (header
    # line, code lines of its body). (A `try:`'s `else:` or `finally:` runs on its body's
    # path: read as lines past the statement.)
    branches: list[tuple[int, list[int]]] = []
    tried = code(start).startswith(b"try")
    head_of = _C_BRANCH_HEAD if braced else _PY_HANDLER_HEAD if tried else _PY_BRANCH_HEAD
    for at in range(start, min(len(lines), start + 4 * NEAR_LINES)):
        if not code(at):
            continue
        if not lines[at].startswith(indent):
            break
        if at_indent(at):
            if head_of.fullmatch(code(at)) is None or \
                    (at > start and code(at).startswith((b"if", b"try"))):
                break
            branches.append((at, []))
        else:
            branches[-1][1].append(at)
    else:
        return False
    # (Where `any_branch`, the other copy is above the `if` and runs on every path through
    # line `k`'s branch, whichever: an `if`/`elif` with no `else` holds it too.)
    if len(branches) < 2 or not tried and not any_branch and \
            re.match(rb"(?:\}\s*)?else\b", code(branches[-1][0])) is None:
        return False
    own = next((head for head, body in branches if k in body), None)
    if own is None or (tried and own != start):
        return False  # (line `k` goes on a statement after the `if`, or is in none)
    # (Every other branch leaving the function, `if y > n:` + `return c` / `else:` + `y += 1`:
    # on the paths through upstream's copy the conditions only said they go on, as a guard's.)
    guarded = all(head == own or body and _bodies_leaving_the_function(
        lines, range(head, body[-1] + 1), indent) for head, body in branches)
    for head, body in branches:
        # (Another branch's body, `else: return y` or `else: d = y`, runs on no path through
        # the copy in line `k`'s branch; a condition tried on the way to it may tell them
        # apart.)
        # (Where `any_branch`, the other copy above the `if`, the conditions tried up to line
        # `k`'s branch, `elif y > c:`, are read between the copies on every path through it,
        # guard or not: each copy its own.)
        told = ([] if guarded and not (any_branch and head <= own) else [head]) + (
            [at for at in body if at < k] if head == own else [])
        if any(names & set(_NAME.findall(code(at))) for at in told):
            return False
    deeper = lines[k][:len(lines[k]) - len(lines[k].lstrip(b" \t"))]
    return _steps_between(lines, range(own + 1, k), deeper, names, braced) is not None


# The head of a branch of an `if`: `if a:`, `elif b:`, `else:`; `if (a) {`, `} else if (b) {`,
# `} else {`.
_PY_BRANCH_HEAD = on_first_use(rb"(?:if|elif)\b.*:|else\s*:")
# A `try:` and its handlers: `try:`, `except OSError:`, `except:`.
_PY_HANDLER_HEAD = on_first_use(rb"try\s*:|except\b.*:")
_C_BRANCH_HEAD = on_first_use(rb"(?:\}\s*)?(?:(?:else\s+)?if\s*\(.*\)\s*\{|else\s*\{)")


def _steps_between(lines: list[bytes], between: range, indent: bytes, names: set[bytes],
                   braced: bool, adds_to: bytes | None = None) -> str | None:
    """Whether the code lines `between` (0-based lines of `lines`) are plain steps at
    `indent` or whole blocks opened there (`if a:` + `b = 0`, `for (...) { ... }`: an `if`,
    `for`, `while`, `with` or `try`, with their `else`/`except` parts), none naming one of
    `names` (but in a body that leaves the function, _bodies_leaving_the_function, or the
    `return y` of `if n: return y`; or a step adding to `adds_to`, the statement's own
    target where it adds too, `y += k` beside `y += 1`), none a statement over several lines, none leaving a block at `indent` itself (a
    copy past one never runs). A short statement's two copies either side of them could
    change places: the same step twice. _EVERY_PATH where every path through the first copy
    reaches the second; _SOME_PATHS where a block between leaves (`if a:` + `return b`; a
    `break` or `continue` not inside a loop opened between, which leaves the copies' own
    round; a `yield`, in a block or not, past which the generator goes on only where its
    caller resumes it): the copy past it runs on only some of the paths through the other.
    None where they are no such steps."""
    # (What does not run where it stands, a string or a comment over lines, a nested `def`,
    # a part of an `#if` no build compiles, taken out; the parts some builds compile only,
    # `#ifdef DEBUG`, read as reading on some paths at most.)
    lines, unbuilt = _as_run(lines, between, braced, names)
    # (C: a name a block between declares anew is another variable there, renamed so: no
    # line of it sets the copies' own, and one naming it reads the copies' own on some paths
    # at most, as the lines of a block only some paths run.)
    lines = _unshadowed(lines, between, indent, names, braced)
    # (C: a label between, `tail:`, is no step: a `goto` to it goes on to the copy past it.)
    lines, labels, skipped = _without_labels(lines, between, indent, names, braced)
    shadows = {name + _SHADOWED for name in names}
    depth = 0  # C: the blocks opened between still open; Python: 1 in a block's body
    paths = _EVERY_PATH
    off_path = _bodies_leaving_the_function(lines, between, indent)
    read_some, guards = _if_reading_on_some_paths(lines, between, indent, names, braced,
                                                  off_path, shadows, labels)
    read_apart = False
    previous_one_line = False
    # (A statement over several lines, `d = clip(b,` + `lo=0)`: its lines read as one, the
    # text so far, whether its first line is set deeper, and the brackets still open.)
    going_on: tuple[bytes, bool, int] | None = None
    # (C: under a header with no braces, `if (n)` + `d = y;`, its body's lines set deeper.)
    unbraced = False

    def tells_apart(at: int, text: bytes, one_line: tuple[bytes, bytes] | None,
                    above: bytes = b"") -> bool:
        """Whether line `at` (its code `text`; `above`, the statement's lines above it where
        it goes on from them) names what the statement names on every path going on: each
        copy its own step."""
        nonlocal read_apart
        # (C's unevaluated operand, `decltype(y)`, `sizeof(y)`, reads nothing, nor does its
        # member, `cfg.y`, `p->y`; nor does a Python keyword, `clip(a, y=2)`, nor another's attribute, `a.y`, read y: read with
        # the lines above, `clip(a,` + `y=2)`, and the newlines kept to tell this line's.)
        read = _C_NOT_READING.sub(b"", _C_UNEVALUATED.sub(b"", text)) if braced else \
            _PY_NOT_READING.sub(
            lambda found: b"\n" * found[0].count(b"\n"), above + b"\n" + text
        ).rpartition(b"\n")[2]
        named = (names | shadows) & set(_NAME.findall(read))
        if not named or at in off_path or (
                one_line is not None and _LEAVES_FUNCTION.match(one_line[1]) is not None
                and not names & set(_NAME.findall(text[:len(text) - len(one_line[1])]))) \
                or _adds_alike(text, adds_to, names) or at in guards:
            return False
        # A line naming what the statement names tells the two steps apart: each may be
        # its own. Not one on a path that leaves the function before the copy past it
        # (`if n:` + `y = c` + `return c`, `if n: return y`): the paths through both
        # copies never run it. Nor a step adding to the statement's own target (`y += k`
        # beside `y += 1`): the two add alike in either order. Nor the condition of an
        # `if` whose whole body leaves the function (`if (y > n) return b;`): on the
        # paths going on it only read that they go on. Nor a line of an `if` some path
        # skips, only reading them (`if a:` + `b = clip(y)`): on that path the two steps
        # are the same step twice (_if_reading_on_some_paths; the stop keeps yours first).
        # Nor a line a `goto` to a label between skips (`if (n) goto tail;` + `d =
        # clip(y);` + `tail:`): on the paths through the `goto` too. Nor a line of a form
        # not read here (_unread_form): it may read them on some paths only. Nor a line
        # some builds leave out: under `#ifdef DEBUG`, or an assertion's (`assert y > 0`,
        # gone under `python -O`; C's `assert(y > 0);` under NDEBUG).
        if at not in read_some and at not in skipped and at not in unbuilt and \
                _ASSERTION.match(above or text) is None and not _unread_form(text, braced):
            return True
        read_apart = True
        return False

    for at in between:
        if braced and lines[at].lstrip().startswith(b"#"):
            return None
        code = STRING_OR_COMMENT.sub(b"", _f_strings_read(lines[at], braced))
        text = code.strip()
        if not text:
            continue
        if going_on is not None:
            # (A line going on with the statement above, at any indentation.)
            so_far, first_deeper, still_open = going_on
            if tells_apart(at, text, None, so_far):
                return None
            still_open += _brackets_opened(text, braced)
            text = so_far + b" " + text
            if still_open > 0 or _goes_on_past(text, braced, _code_below(lines, between, at)):
                going_on = (text, first_deeper, still_open)
                continue
            going_on = None
            deeper = first_deeper
            one_line = _one_line_block(text, braced)
        else:
            if not lines[at].startswith(indent):
                return None
            deeper = code[len(indent):len(indent) + 1] in (b" ", b"\t")
            if deeper and not depth and not unbraced:
                return None  # (a body under a header not read)
            if braced and unbraced and not deeper and \
                    not re.match(rb"(?:\}\s*)?else\b", text):
                unbraced = False
            one_line = _one_line_block(text, braced)
            if one_line is None and not deeper and \
                    re.match(rb"else\b" if braced else rb"(?:elif|else|except|finally)\b", text):
                # (`else: d = c` past `if n: d = y` or a block's body, C's `else if (b) d =
                # 2;` or `else d = c;` past `if (a) d = y;`: a part on its header's line, as a
                # one-line `if`.)
                head, inline = _inline(text, braced)
                if inline and (previous_one_line or depth and not braced):
                    one_line = (b"if", inline)
            previous_one_line = one_line is not None and one_line[0] == b"if" and not deeper
            if tells_apart(at, text, one_line):
                return None
            opened = _brackets_opened(text, braced)
            if opened > 0 or one_line is None and \
                    _goes_on_past(text, braced, _code_below(lines, between, at)):
                going_on = (text, deeper, opened)
                continue
        if one_line is not None:
            # (`if a: return b`, `if (n) d = clip(b);`: a whole block on its line.)
            head, body = one_line
            if braced and depth and not deeper:
                return None
            if not braced and not deeper:
                depth = 0
            text, at_loop = body, head in (b"for", b"while")
            nested = _one_line_block(text, braced)
            if nested is not None:  # (`else while (a--) d += y;`: a block on the part's line)
                text, at_loop = nested[1], at_loop or nested[0] in (b"for", b"while")
        else:
            at_loop = False
        whole = _whole_block_on_its_line(text, braced)
        if whole is not None:
            # (`if (n) d = y; else d = c;`, `if (n) { d = y; }`, `} else d = c;`, `if n: d =
            # c; e = y`: a block, or its last part, on one line.)
            closes, parts = whole
            if closes:
                depth -= 1
                if depth < 0:
                    return None
            elif not braced and not deeper:
                depth = 0
            if any(_LEAVES_BLOCK.match(part.strip()) is not None for part in parts):
                paths = _SOME_PATHS
            continue
        if braced and not one_line and re.fullmatch(
                rb"(?:\}\s*)?(?:else(?:\s+if\s*\(.*\))?|(?:if|for|while)\s*\(.*\))", text):
            # (A header with no braces, `if (n)`, `else`: its body the lines set deeper.)
            if text.startswith(b"}"):
                depth -= 1
                if depth < 0:
                    return None
            unbraced = True
            continue
        if _ASSERTION.match(text) and (not braced or text.endswith(b";")):
            # (An `assert` raises where it fails: the copy past it runs on some paths.)
            if not braced and not deeper:
                depth = 0
            paths = _SOME_PATHS
            continue
        if not braced and re.fullmatch(rb"try\s*:\s*\S.*", text):
            # (`try: d = clip(a)`: a `try:` whose body is on its header's line.)
            if _LEAVES_BLOCK.match(_inline(text, braced)[1]) is not None:
                paths = _SOME_PATHS
            depth = 1
            continue
        leaves = _LEAVES_BLOCK.match(text)
        if leaves is not None and leaves[0] in (b"yield", b"co_yield"):
            # A `yield` leaves nothing: the generator goes on past it, the copy past it too,
            # where the caller resumes it (one stopping there runs the first copy alone).
            if text.endswith((b":", b"\\", b",", b"(", b"[")) or re.search(rb"[{}]", text):
                return None
            if not braced and not (deeper or one_line):
                depth = 0
            paths = _SOME_PATHS
            continue
        if leaves is not None and _goes_to(text, labels):
            continue  # (`goto tail;`, `tail:` between: it goes on to the copy past it)
        if leaves is not None:
            if not (deeper or one_line) or \
                    text.endswith((b":", b"\\", b",", b"(", b"[")) or re.search(rb"[{}]", text):
                return None
            if leaves[0] not in (b"break", b"continue") or not (
                    at_loop or _in_a_loop_between(lines, between.start, at, len(indent),
                                                  leaves[0] == b"break")):
                paths = _SOME_PATHS
            continue
        if one_line is not None:
            if _STEP_BOUNDARY.match(text):
                return None
            continue
        label = braced and depth and re.match(rb"(?:case\b(?:[^:]|::)*|default\s*):(?!:)", text)
        if label:
            # (A `switch`'s label: its cases are its blocks' branches; one with statements
            # on its line, `case 1: d = y; break;`, or a brace, `case 1: {`, a step whose
            # reads _PathReads tells, on some paths at most.)
            depth += text.count(b"{") - text.count(b"}")
            if depth <= 0:
                return None
            continue
        if braced and _C_BLOCK_OPENS.fullmatch(text) and \
                (deeper or bool(depth) == text.startswith(b"}")):
            depth += text.count(b"{") - text.count(b"}")
            if depth < 0 or (deeper and not depth):
                return None
            continue
        if not braced:
            if _PY_BLOCK_OPENS.fullmatch(text) or \
                    (depth and _PY_BLOCK_GOES_ON.fullmatch(text)):
                depth = 1
                continue
            if not deeper:
                depth = 0
        # (Python's braces are a dict's or a set's, `d = {'b': b}`, closed by now: a step.)
        if text.endswith((b":", b"\\", b",", b"(", b"[")) or _STEP_BOUNDARY.match(text) and \
                not (braced and re.match(rb"(?:switch|try)\b.*\}$", text)) or \
                braced and re.search(rb"[{}]", text) and not (
                    text.endswith((b";", b"}")) and text.count(b"{") == text.count(b"}")):
            # (But a C statement with braces, `int y{clip(b)};`, a lambda's; a whole block
            # on its line, `switch (a) { case 1: d = y; break; }`, `try { ... } catch (...)
            # {}`: a step, its reads on some paths at most, _PathReads.)
            return None
    if braced and depth:
        return None
    return _READ_ON_SOME_PATHS if read_apart and paths == _EVERY_PATH else paths


def _f_strings_read(line: bytes, braced: bool) -> bytes:
    """A Python `line` with each f-string written as what it reads, its fields' expressions
    in brackets, `log(f"{y}: {n!r}")` as `log((y, n))`: STRING_OR_COMMENT takes a string out
    whole, and the names an f-string reads with it. Any other line as it is."""
    if braced or not re.search(rb"[fF][rR]?[\"']", line):
        return line
    return _PY_PREFIXED_STRING_OR_COMMENT.sub(
        lambda found: _f_string_fields(found[2][1:-1]) if found[1] and b"f" in found[1].lower()
        else found[0], line)


# A Python string with its prefix (`f`, `rb`), or a comment: strings read whole, a `#` in one
# no comment.
_PY_PREFIXED_STRING_OR_COMMENT = on_first_use(
    rb"(?:(?<![\w])([rRbBuUfF]{1,2}))?(\"(?:\\.|[^\"\\])*\"|'(?:\\.|[^'\\])*')|#.*")


def _f_string_fields(body: bytes) -> bytes:
    """The expressions of an f-string's fields (`body`, inside its quotes), in brackets: `{y}`,
    `{n!r}` and `{z:>4}` as `(y, n, z)`; `{{` is no field."""
    fields = []
    k = 0
    while k < len(body):
        if body[k:k + 2] in (b"{{", b"}}"):
            k += 2
            continue
        if body[k:k + 1] != b"{":
            k += 1
            continue
        depth, end, j = 0, None, k + 1
        while j < len(body):
            c = body[j:j + 1]
            if c in b"([{":
                depth += 1
            elif c in b")]}":
                if not depth:
                    break
                depth -= 1
            elif c in b"!:" and not depth and end is None and body[j + 1:j + 2] != b"=":
                end = j  # (a conversion, `!r`, or a format, `:>4`, follows)
            j += 1
        fields.append(body[k + 1:j if end is None else end].strip().rstrip(b"=").strip())
        k = j + 1
    return b"(" + b", ".join(fields) + b")"


def _code_below(lines: list[bytes], between: range, at: int) -> bytes:
    """The next code line (strings and comments taken out, stripped) of `between` past line
    `at`; b"" where there is none."""
    return next((code for code in (STRING_OR_COMMENT.sub(b"", lines[k]).strip()
                                   for k in range(at + 1, between.stop)) if code), b"")


def _brackets_opened(text: bytes, braced: bool) -> int:
    """How many brackets `text` (code, strings and comments taken out) leaves open: `(`
    and `[`, and in Python `{` (C's braces are blocks)."""
    openers, closers = (b"([", b")]") if braced else (b"([{", b")]}")
    return sum(text.count(c) for c in openers) - sum(text.count(c) for c in closers)


def _goes_on_past(text: bytes, braced: bool, below: bytes = b"") -> bool:
    """Whether the statement `text` (code, stripped) goes on past its line, its brackets
    closed: a Python line ending in `\\`; a C line ending in an operator, `int d = n > 0 ?`
    + `y : b;`, or not ending a statement whose next code line (`below`, stripped) opens
    with an operator no statement opens with, `int d = a ? clip(b)` + `: clip(y);` (not one
    ending in a name or a `)` with a statement below: a macro's call with no `;`,
    `CHECK(x)`, is a statement of its own)."""
    if not braced:
        return text.endswith(b"\\")
    if re.fullmatch(rb"(?:\}\s*)?(?:else\b.*|do\b.*|(?:if|for|while|switch)\s*\(.*\).*)",
                    text) is not None:
        return False
    return re.search(rb"[-?=+*/%&|^<>,!~]$", text) is not None or \
        re.search(rb"\?[^;]*(?<!:):$", text) is not None or \
        not text.endswith((b";", b"{", b"}", b":")) and _C_GOES_ON_BELOW.match(below) is not None


# The opening of a C line going on with the statement above: `: clip(y);`, `? b : c;`,
# `&& n`, `+ 1`, `.size()` (not `*p = 1;` nor `++i;`, statements of their own).
_C_GOES_ON_BELOW = on_first_use(rb"\?|:(?!:)|&&|\|\||[-+](?![-+])|[/%^]|\|(?!\|)|[=!<>]=|<<|>>"
                                rb"|[<>=]|\.|->")


def _whole_block_on_its_line(text: bytes, braced: bool) -> tuple[bool, list[bytes]] | None:
    """`text` (code, stripped) read as a block, or a block's last part, whole on its line,
    that _one_line_block does not read: C's `if (n) d = y; else d = c;`, `if (n) { d = y; }`,
    `} else d = c;`, `} else { d = c; }`; Python's branch of several statements, `if n: d =
    c; e = y`. Whether it closes a block opened above (`} else ...`), and its statements."""
    if braced:
        closes = text.startswith(b"}")
        rest = text.lstrip(b"}").strip()
        head = re.match(rb"(?:else\s+)?(?:if|for|while)\s*\(|else\b", rest)
        if head is None or not text.endswith((b";", b"}")) or \
                rest.count(b"{") != rest.count(b"}"):
            return None
        if rest.count(b";") < 2 and b"{" not in rest and not closes:
            return None  # (_one_line_block's)
        return closes, re.split(rb"[;{}]|\belse\b|\)\s", rest)[1:]
    head = re.match(rb"(?:if|elif|else|for|while|with|try|except|finally)\b", text)
    if head is None:
        return None
    cut = _py_header_end(text)
    if cut is None or b";" not in text[cut:]:
        return None
    return False, text[cut:].split(b";")


def _py_header_end(text: bytes) -> int | None:
    """Where a Python header line's `:` ends (`if a[1:2]: d = c` at its second `:`); None
    where it has none at its top level."""
    depth = 0
    for k in range(len(text)):
        c = text[k:k + 1]
        if c in b"([{":
            depth += 1
        elif c in b")]}":
            depth -= 1
        elif c == b":" and not depth and text[k + 1:k + 2] != b"=":
            return k + 1
    return None


def _unread_form(text: bytes, braced: bool) -> bool:
    """Whether a line (code, stripped) is of a form whose reads are not told here: a C++
    lambda (`[y = b]() { return y; }`, its captures and its body run where it is called), a
    block of several statements on one line (`if (n) { d = c; e = y; }`, `if n: d = c; e =
    y`): a line naming a name there reads it on some paths at most."""
    if braced:
        return re.search(rb"\[[^\[\]]*\]\s*(?:\([^()]*\)\s*)?(?:mutable\s*)?"
                         rb"(?:->\s*[\w:<>]+\s*)?\{", text) is not None or \
            re.search(rb"\{[^{}]*;[^{}]*;[^{}]*\}", text) is not None
    whole = _whole_block_on_its_line(text, braced)
    return whole is not None


# A C label opening a line, `tail:` (alone, or before a statement: `tail: d = c;`); not a
# `switch`'s `case`/`default`, an access specifier, nor a name qualified with `::`.
_C_JUMP_LABEL = on_first_use(rb"(?!(?:case|default|public|private|protected)\b)"
                             rb"([A-Za-z_]\w*)\s*:(?!:)(.*)")


def _without_labels(lines: list[bytes], between: range, indent: bytes, names: set[bytes],
                    braced: bool) -> tuple[list[bytes], frozenset[bytes], set[int]]:
    """`lines` (one for one) with each C label on a line `between` (0-based lines) taken off
    it, the statement after it, if any, set at `indent` (`tail:` a blank line, `tail: d = c;`
    a step); the labels so found; and the lines between a `goto` to one of them and the label
    further down (`if (n) goto tail;` + `d = clip(y);` + `tail:`), which the paths through the
    `goto` skip: read on some paths at most, where the `goto`'s own path has not read one of
    `names` before it (_read_before_goto). A label is where a `goto` lands, not a step: a
    `goto` to one goes on to the copy past the labels (_goes_to). A label stands where a
    statement may start: past a line ending one (`;`, `{`, `}`, a label), not on a line going
    on with an expression (`int d = n ?` + `y : b;`). Python's lines as they are."""
    if not braced:
        return lines, frozenset(), set()
    labels: dict[bytes, int] = {}
    out = lines
    for at in between:
        label = _C_JUMP_LABEL.fullmatch(STRING_OR_COMMENT.sub(b"", lines[at]).strip())
        if label is None:
            continue
        above = _code_line_above(lines, at)
        if above is not None and not lines[above].lstrip().startswith(b"#") and \
                not STRING_OR_COMMENT.sub(b"", lines[above]).rstrip() \
                .endswith((b";", b"{", b"}", b":")):
            continue
        if out is lines:
            out = list(lines)
        labels.setdefault(label[1], at)
        rest = label[2].strip()
        out[at] = b"" if rest in (b"", b";") else indent + rest
    skipped: set[int] = set()
    for at in between:
        for target in re.findall(rb"\bgoto\s+([A-Za-z_]\w*)\s*;",
                                 STRING_OR_COMMENT.sub(b"", out[at])):
            if labels.get(target, at) > at and \
                    not _read_before_goto(out, between.start, at, names):
                skipped.update(range(at + 1, labels[target]))
    return out, frozenset(labels), skipped


def _read_before_goto(lines: list[bytes], first: int, at: int, names: set[bytes]) -> bool:
    """Whether every path to the C `goto` on line `at` (0-based) of `lines` reads one of
    `names` from line `first` on: in the lines above it in its block (`d = clip(y);` +
    `goto next;`), or the condition of its one-line `if` (`if (y > n) goto next;`) or of an
    `if` holding it (`if (y > n) {`), or the lines above that block in the one holding it,
    outwards to `first`'s level. Where one does, the lines the `goto` skips are read on every
    path (each copy its own step); elsewhere they are not asked here. (A block's `else`
    reads the `if` above it as one with no `else`: a path it does not run at most.)"""
    paths = _PathReads(lines, names, True)

    def code(k: int) -> bytes:
        return STRING_OR_COMMENT.sub(b"", lines[k]).strip()

    def condition(head: bytes) -> bool:
        found = re.match(rb"(?:\}\s*)?(?:else\s+)?if\s*(\(.*\))", head)
        return found is not None and paths.told(found[1])

    if not code(at).lstrip(b"}").strip().startswith(b"goto") and \
            condition(_inline(code(at).lstrip(b"}").strip(), True)[0]):
        return True
    while True:
        body: list[int] = []
        opener = None
        for k in range(at - 1, first - 1, -1):
            if not code(k):
                continue
            if _indent(lines[k]) >= _indent(lines[at]):
                body.insert(0, k)
                continue
            opener = k
            break
        ways = paths.sequence(body) if body else {_MISSES}
        if _READS in ways and _MISSES not in ways:
            return True
        if opener is None:
            return False
        head = code(opener)
        if head == b"{":
            above = _code_line_above(lines, opener)
            head = b"" if above is None else code(above)
        if condition(head):
            return True
        at = opener


def _goes_to(text: bytes, labels: frozenset[bytes]) -> bool:
    """Whether `text` (a code line, stripped) is a `goto` to one of `labels`."""
    found = re.match(rb"goto\s+([A-Za-z_]\w*)\s*;", text)
    return found is not None and found[1] in labels


def _if_reading_on_some_paths(lines: list[bytes], between: range, indent: bytes,
                              names: set[bytes], braced: bool, off_path: set[int],
                              some: frozenset[bytes] | set[bytes] = frozenset(),
                              labels: frozenset[bytes] = frozenset()
                              ) -> tuple[set[int], set[int]]:
    """Of the code lines `between` (0-based lines of `lines`), in a statement at `indent` (a
    line, or a block with its parts: an `if` with its `elif`/`else`, a loop and its `else:`,
    a `try:` and its handlers, a `with`, a `match`, a `switch`, however deep they nest) with
    no line setting one of `names` (`y = c`, `y[i] = c`, `y.add_(c)`, `y++`, `&y`, any name a
    line binds, _bound_names): the lines naming one of `names` where some path going on past
    the statement reads none of them (_PathReads: a branch not reading them, a loop that may
    run no round, a handler, a `case` or the way past them all, a conditional expression's
    arm, `b = y if n else c`, `n and y`, `n ? y : c`), so that on that path the two copies of
    a statement naming them are one step twice; as the first set where another path going on
    reads one, as the second where none does but a condition of a branch whose whole body
    leaves the function (`if (y > n) return b;`, `if y > n:` + `return c` / `else:` + `d =
    clip(c)`): on the paths going on it only said they go on. A condition counts as read on
    a path going on past it where its own branch goes on. A name of `some` is read on some
    paths at most, wherever it stands. A `goto` to one of `labels` (C's, between the copies,
    _without_labels) goes on."""
    def code(at: int) -> bytes:
        return STRING_OR_COMMENT.sub(b"", _f_strings_read(lines[at], braced)).strip()

    def sets(text: bytes) -> bool:
        # (An attribute whose every name the statement names, `self.count = 0` or `del
        # self.count` between two `self.count += 1`, is the statement's own target set anew.)
        found = _SETS_NAME.match(text) or _SETS_ITEM.match(text)
        attribute = _SETS_ATTRIBUTE.match(text)
        if attribute is not None and set(_NAME.findall(attribute[1])) <= names:
            return True
        return found is not None and found[1] in names or any(
            re.search(rb"(?<![\w.])" + re.escape(name) + rb"\s*(?:\.\s*\w+\s*\(|\+\+|--)"
                      rb"|(?:\+\+|--|(?<!&)&(?!&))\s*" + re.escape(name) + rb"(?!\w)", text)
            for name in names) or bool(names & _bound_names(text, braced))

    read: set[int] = set()
    guards: set[int] = set()
    if not names:
        return read, guards
    paths = _PathReads(lines, names, braced, some, labels)
    for statement in paths.statements([at for at in between if code(at)]):
        ats = [at for head, body in statement for at in [head] + body]
        named = [at for at in ats if paths.naming(code(at)) and at not in off_path]
        # (A statement over several lines, `d = [keep(y)` + `for y in parts(c)]`, sets what
        # its whole text sets: not a loop's target.)
        first = code(statement[0][0])
        texts = [b" ".join(code(at) for at in ats)] if len(statement) == 1 and len(ats) > 1 \
            and not first.endswith((b":", b"{")) and not re.match(
                rb"(?:if|elif|else|for|while|with|try|except|finally|def|class|async|switch|do"
                rb"|case|default)\b", first) else [code(at) for at in ats]
        if not named or any(sets(text) for text in texts):
            continue
        ways = paths.statement(statement)
        if _MISSES not in ways:
            continue  # (every path going on past it reads them: each copy its own step)
        if _READS in ways:
            read.update(named)
        else:
            guards.update(named)
    return read, guards


# How the paths through a statement end, as _PathReads reads them: going on having read one
# of the names, going on to the next statement without, jumping elsewhere without (`break`,
# `continue`, `goto`), or leaving the function (`return`, `raise`, `throw`).
_READS = "reads"
_MISSES = "misses"
_JUMPS = "jumps"
_LEAVES = "leaves"


class _PathReads:
    """Whether the paths through statements read `names`: each statement (a line, or a
    block with its parts, read by indentation, C's braces closing on their own lines) gives
    the ways its paths end (_READS, _MISSES, _JUMPS, _LEAVES). A line reads a name where it
    names it outside the arms of a conditional expression, the operands past `and`/`or`,
    `&&`/`||`, a comprehension's body, a lambda's (each read on some paths only); a block
    as its parts run: a condition on the paths past it, a branch's body on its own, a loop's
    body on no path where it may run no round, a handler's on the paths something raises, a
    `switch`'s cases on the paths entering at their labels. A block not read here (`def`, a
    `switch` laid out otherwise, an unknown form) reads on some paths at most. Only the ways
    past a statement with no line setting a name are asked."""

    def __init__(self, lines: list[bytes], names: set[bytes], braced: bool,
                 some: frozenset[bytes] | set[bytes] = frozenset(),
                 labels: frozenset[bytes] = frozenset()) -> None:
        self.lines, self.names, self.braced, self.some = lines, names, braced, some
        self.labels = labels  # (C's labels between the copies: a `goto` to one goes on)

    def code(self, at: int) -> bytes:
        # (A string read as a value, `0`: the line still parses as a statement, and names
        # what the line without its strings names. A Python line going on past a backslash,
        # `d = clip(b) if a else \`, reads as its text, as one going on in brackets.)
        text = STRING_OR_COMMENT.sub(
            lambda found: b"0" if found[0][:1] in (b'"', b"'") else b"",
            _f_strings_read(self.lines[at], self.braced)).strip()
        return text if self.braced else text.removesuffix(b"\\").rstrip()

    def naming(self, text: bytes) -> bool:
        return bool((self.names | self.some) & set(_NAME.findall(text)))

    def told(self, text: bytes) -> bool:
        """Whether `text` (an expression or a line) reads a name on every path through it."""
        return bool(self.names & (set(_NAME.findall(_unconditional(text, self.braced)))
                                  | _read_in_both_arms(text, self.braced)))

    def statements(self, ats: list[int]) -> list[list[tuple[int, list[int]]]]:
        """`ats` (code lines, 0-based) as statements: each its parts, a part its header's line
        and its body's lines (those set deeper), `elif`/`else`/`except`/`finally`, C's `}
        else {`, `}`, `} while (c);` and a `switch`'s labels going on with the block above."""
        found: list[list[tuple[int, list[int]]]] = []
        if not ats:
            return found
        level = min(_indent(self.lines[at]) for at in ats)
        k = 0
        while k < len(ats):
            j = k + 1
            while j < len(ats) and _indent(self.lines[ats[j]]) > level:
                j += 1
            text = self.code(ats[k])
            goes_on = re.match(rb"[{}]|(?:else|catch|case|default)\b", text) if self.braced \
                else re.match(rb"(?:elif\b|else\s*:|except\b|finally\s*:)", text)
            if found and not self.braced and re.match(rb"[)\]}]", text):
                # (A bracket closing on its own line, `}` under `d = {` + `k: y for k in a`:
                # the statement above goes on.)
                found[-1][-1][1].extend(ats[k:j])
            elif found and goes_on is not None:
                found[-1].append((ats[k], ats[k + 1:j]))
            else:
                found.append([(ats[k], ats[k + 1:j])])
            k = j
        return found

    def sequence(self, ats: list[int]) -> set[str]:
        """The ways the paths through the statements `ats` end: each goes on to the next
        statement where it has read nothing yet and neither jumped nor left."""
        ways: set[str] = set()
        for statement in self.statements(ats):
            found = self.statement(statement)
            ways |= found - {_MISSES}
            if _MISSES not in found:
                return ways
        return ways | {_MISSES}

    def line(self, text: bytes) -> set[str]:
        """The ways a simple statement's paths end."""
        if _LEAVES_FUNCTION.match(text):
            return {_LEAVES}
        if _goes_to(text, self.labels):
            return {_MISSES}  # (to a label between the copies: on to the copy past it)
        if _LEAVES_OTHERWISE.match(text):
            return {_JUMPS}
        if not self.naming(text):
            return {_MISSES}
        return {_READS} if self.told(text) else {_READS, _MISSES}

    def statement(self, statement: list[tuple[int, list[int]]]) -> set[str]:
        """The ways the paths through one statement (its parts) end."""
        lines = [at for head, body in statement for at in [head] + body]
        unknown = {_READS, _MISSES} if any(self.naming(self.code(at)) for at in lines) \
            else {_MISSES}
        # The parts, C's `{` alone (Allman's style) read into the part above and `}` alone
        # dropped: (header's code, the statement on the header's line, the body's lines).
        parts: list[tuple[bytes, bytes, list[int]]] = []
        for head, body in statement:
            text = self.code(head)
            if self.braced:
                text = text.lstrip(b"}").strip()
                # (A branch's one statement in braces on its header's line, `if (n) { d =
                # y; }`: as it is without them.)
                if re.match(rb"(?:else\b|(?:if|for|while)\s*\()", text):
                    text = re.sub(rb";\s*else\b", b"; else", re.sub(
                        rb"\{\s*([^{};]*;)\s*\}", rb"\1 ", text)).strip()
                if text in (b"", b";", b"{"):
                    if parts and text == b"{":
                        parts[-1][2].extend(body)
                    elif body:
                        return unknown
                    continue
            if self.braced and re.match(rb"if\s*\(", text) and b"; else " in text:
                # (`if (n) d = y; else d = c;`: two parts on one line.)
                text, otherwise = text.split(b"; else ", 1)
                parts.append(_inline(text + b";", self.braced) + ([],))
                text = b"else " + otherwise
            parts.append(_inline(text, self.braced) + (list(body),))
        if not parts:
            return {_MISSES}
        first, _, body = parts[0]
        if re.match(rb"if\s*\(" if self.braced else rb"if\b", first):
            return self.branches(parts)
        if re.match(rb"(?:for|while)\s*\(" if self.braced else rb"(?:async\s+)?(?:for|while)\b",
                    first):
            return self.loop(parts)
        if self.braced:
            if re.match(rb"do\b", first):
                ways = self.body(parts[0])
                end = parts[-1][0] if len(parts) > 1 else b""
                if re.match(rb"while\b", end) and self.told(end):
                    ways = _then(ways, {_READS})
                return {_MISSES if way == _JUMPS else way for way in ways}
            if re.match(rb"switch\s*\(", first):
                if re.fullmatch(rb"switch\s*\([^{}]*\)\s*\{?", first) is None:
                    return unknown  # (its cases on its line, `switch (a) { case 1: ... }`)
                return {_READS} if self.told(first) else self.switch(statement, unknown)
            if first == b"{" and len(parts) == 1:
                return self.sequence(body)
        else:
            if re.match(rb"(?:async\s+)?with\b", first) and len(parts) == 1:
                return {_READS} if self.told(first) else self.sequence(body)
            if re.fullmatch(rb"try\s*:", first):
                return self.tried(parts)
            if re.match(rb"match\b.*:$", first) and len(parts) == 1:
                return self.matched(first, body)
        if len(parts) > 1 or first.endswith(b"{" if self.braced else b":") or \
                self.braced and re.search(rb"\{[^{}]*;", first):
            return unknown  # (C's `try { d = y; } catch (...) {}` on one line, too)
        # (A statement over several lines, its lines set deeper: one line.)
        return self.line(b" ".join([first] + [self.code(at) for at in body]))

    def body(self, part: tuple[bytes, bytes, list[int]]) -> set[str]:
        _, inline, body = part
        if not inline:
            return self.sequence(body)
        nested = _one_line_block(inline, self.braced)
        if nested is not None:
            # (A block on the part's line, `else while (a--) d += y;`: its body runs on some
            # paths at most, its header on every path through it.)
            if self.told(inline[:len(inline) - len(nested[1])]):
                return {_READS}
            return self.line(nested[1]) | {_MISSES}
        return self.line(inline)

    def branches(self, parts: list[tuple[bytes, bytes, list[int]]],
                 conditions: list[bytes] | None = None, otherwise: bool | None = None
                 ) -> set[str]:
        """An `if` with its `elif`/`else` (or a `match`'s cases, `conditions` their patterns
        and `otherwise` whether one catches all): each branch's paths, read past the
        conditions tried on the way to it; and, with no `else`, the way past them all."""
        if conditions is None:
            conditions = [b"" if re.match(rb"else\b(?!\s*if\b)", text) else text
                          for text, _, _ in parts]
            otherwise = not conditions[-1]
        bodies = [self.body(part) for part in parts]
        # (A branch jumping out, `else: continue`, leaves the copies' path as one returning.)
        leaves = [bool(ways) and ways <= {_LEAVES, _JUMPS} for ways in bodies]
        told = [self.told(condition) for condition in conditions]
        # A condition whose branch leaves, or all of whose other ways on leave (`if y > n:` +
        # `d = clip(c)` / `else:` + `return c`), only says on the paths going on that they go
        # on, as a guard's: read on none of them.
        guard = [leaves[a] or bool(otherwise) and all(leaves[a + 1:])
                 for a in range(len(parts))]
        ways: set[str] = set()
        if any(self.naming(c) and not t for c, t in zip(conditions, told)):
            ways |= {_READS, _MISSES}  # (a condition reading one on some paths only)
        for b, found in enumerate(bodies):
            before = any(told[a] and not guard[a] for a in range(b + 1))
            ways |= {_READS if before and way == _MISSES else way for way in found}
        if not otherwise:
            ways.add(_READS if any(t and not g for t, g in zip(told, guard)) else _MISSES)
        return ways

    def switch(self, statement: list[tuple[int, list[int]]], unknown: set[str]) -> set[str]:
        """A C `switch`'s cases (its value not naming a name): the paths entering at each
        label run its lines and those of the cases below it (falling through) up to a `break`,
        which goes on past the switch; with no `default:`, the way past them all too. Laid
        out otherwise than labels alone on their lines over bodies set deeper (a case's body
        on its label's line, `case 1: d = y;`, braces at the labels' depth): `unknown`."""
        ats = statement[0][1] + [at for head, body in statement[1:] for at in [head] + body]
        if ats and self.code(ats[-1]) == b"}":
            ats = ats[:-1]
        if ats and self.code(ats[0]) == b"{":
            ats = ats[1:]  # (Allman's `{` under the header)
        if not ats or _C_LABEL.fullmatch(self.code(ats[0])) is None:
            return unknown
        depth = _indent(self.lines[ats[0]])
        labels = [k for k, at in enumerate(ats) if _indent(self.lines[at]) <= depth]
        if any(_C_LABEL.fullmatch(self.code(ats[k])) is None for k in labels):
            return unknown
        ways: set[str] = set()
        for k in labels:
            body = [at for n, at in enumerate(ats[k:], k) if n not in labels]
            # (A `break` leaves the switch only, a `continue` read as it: past the switch.)
            ways |= {_MISSES if way == _JUMPS else way for way in self.sequence(body)}
        if not any(re.match(rb"default\b", self.code(ats[k])) for k in labels):
            ways.add(_MISSES)
        return ways

    def loop(self, parts: list[tuple[bytes, bytes, list[int]]]) -> set[str]:
        """A loop (with a Python `else:`): its header reads on every path; its body on the
        paths of a round, none where it may run no round (but `while True:`, `for (;;)`)."""
        header = parts[0][0]
        # (C's `for (init; test; step)`: the step runs past a round only.)
        clauses = _c_for_clauses(header) if self.braced else None
        if self.told(header if clauses is None else clauses[0] + b";" + clauses[1]):
            return {_READS}
        ways = self.body(parts[0])
        ways = {_MISSES if way == _JUMPS else way for way in ways}
        if self.naming(header):
            ways |= {_READS, _MISSES}
        always = re.fullmatch(rb"while\s*(?:\(\s*(?:1|true|True)\s*\)|True|1)\s*[:{]?"
                              rb"|for\s*\(\s*;\s*;\s*\)\s*\{?", header) or _runs_a_round(header)
        if not always:
            ways.add(_MISSES)
        if len(parts) > 1 and re.match(rb"else\s*:", parts[1][0]) and len(parts) == 2:
            # (A loop's `else:` runs where the loop ends without a `break`, a loop that runs a
            # round at least included.)
            breaks = any(re.match(rb"break\b", self.code(at)) for at in parts[0][2])
            ways = _then(ways, self.body(parts[1])) | ({_MISSES} if breaks else set())
        elif len(parts) > 1 and not always:
            return {_READS, _MISSES} if _READS in ways else {_MISSES}
        return ways

    def tried(self, parts: list[tuple[bytes, bytes, list[int]]]) -> set[str]:
        """A `try:` with its handlers, `else:` and `finally:`: what its body raises may be
        raised before it reads anything, and a handler's paths are read from its start."""
        ways = self.body(parts[0])
        handled: set[str] = set()
        handlers = False
        for text, inline, body in parts[1:]:
            found = self.body((text, inline, body))
            if text.startswith(b"except"):
                handlers = True
                handled |= found
            elif text.startswith(b"else"):
                ways = _then(ways, found)
            elif text.startswith(b"finally"):
                ways = _then(ways | (handled if handlers else {_LEAVES}), found)
                handled, handlers = set(), True
        return ways | (handled if handlers else {_LEAVES})

    def matched(self, first: bytes, body: list[int]) -> set[str]:
        """A `match` and its cases, read as an `if` and its `elif`s, its patterns their
        conditions; the way past them all where no case catches all (`case _:`)."""
        if self.told(first[len(b"match"):-1]):
            return {_READS}
        parts: list[tuple[bytes, bytes, list[int]]] = []
        conditions = []
        otherwise = partly = False
        for statement in self.statements(body):
            (head, inner), = statement[:1]
            text = self.code(head)
            case = re.match(rb"case\b(.*):$" if inner else rb"case\b(.*?):(.*)$", text)
            if case is None or len(statement) > 1:
                return {_READS, _MISSES} if self.naming(text) else {_MISSES}
            # (A case's guard, `case 1 if y > c:`, is tried where the pattern matched only.)
            pattern = re.match(rb"(.*?)\bif\b(.*)", case[1])
            if pattern is not None and self.naming(pattern[2]):
                partly = True
            conditions.append(case[1] if pattern is None else pattern[1])
            parts.append((text, b"" if inner else case[2].strip(), inner))
            otherwise = otherwise or re.fullmatch(rb"\s*(?:_|[A-Za-z_]\w*)\s*", case[1]) \
                is not None
        ways = self.branches(parts, conditions, otherwise)
        return ways | {_READS, _MISSES} if partly else ways


def _inline(text: bytes, braced: bool) -> tuple[bytes, bytes]:
    """A block's part (code, stripped) as its header and the statement on the header's line,
    if any: `if a: b = y` as `if a:` and `b = y`, `elif a: b = y`, `else: b = y`, `try: b =
    y`, `except E: return`; `if (n) d = y;`, `else d = y;`. Any other line, itself and b""."""
    one_line = _one_line_block(re.sub(rb"^else\s+(?=if\b)", b"", text) if braced
                               else re.sub(rb"^elif\b", b"if", text), braced)
    if one_line is not None:
        return text[:len(text) - len(one_line[1])].rstrip(), one_line[1]
    found = re.fullmatch(rb"else\s+(?!if\b)([^{}]*;)", text) if braced else \
        re.fullmatch(rb"((?:else|try|finally)\s*:|except\b[^:]*:)\s*(\S.*)", text)
    if found is None:
        return text, b""
    return (b"else", found[1]) if braced else (found[1], found[2])


def _c_for_clauses(header: bytes) -> list[bytes] | None:
    """A C `for (init; test; step)` header's three clauses; None for any other line."""
    if re.match(rb"for\s*\(", header) is None:
        return None
    depth, clauses, start = 0, [], header.index(b"(") + 1
    for k in range(start, len(header)):
        c = header[k:k + 1]
        if c in b"([{":
            depth += 1
        elif c in b")]}":
            if depth == 0:
                clauses.append(header[start:k])
                break
            depth -= 1
        elif c == b";" and depth == 0:
            clauses.append(header[start:k])
            start = k + 1
    return clauses if len(clauses) == 3 else None


def _runs_a_round(header: bytes) -> bool:
    """Whether a loop's header (code, stripped) runs its body a round at least, over literals:
    `for k in range(3):`, `for k in range(1, 4):`, `for k in (1, 2):`, `for k in [a]:`, `for
    (int k = 0; k < 4; k++)`."""
    found = re.fullmatch(rb"for\s+.+?\s+in\s+range\(\s*(?:(\d+)\s*,\s*)?(\d+)\s*\)\s*:",
                         header)
    if found is not None:
        return int(found[1] or 0) < int(found[2])
    found = re.fullmatch(rb"for\s+.+?\s+in\s+(\([^()]*,[^()]*\)|\[[^\[\]]*\S[^\[\]]*\])\s*:",
                         header)
    if found is not None:
        # A comprehension (`[v for v in c]`) or an unpacked item (`[*c]`, `(*c, *b)`) may
        # give no item at all: such a loop may run no round.
        return re.search(rb"\bfor\b|(?:^|,)\s*\*", found[1][1:-1]) is None
    found = re.match(rb"for\s*\(\s*(?:[A-Za-z_][\w:]*\s+)*([A-Za-z_]\w*)\s*=\s*(\d+)\s*;\s*"
                     rb"([A-Za-z_]\w*)\s*(<=?|!=)\s*(\d+)\s*;", header)
    return found is not None and found[1] == found[3] and (
        int(found[2]) <= int(found[5]) if found[4] == b"<=" else int(found[2]) < int(found[5]))


def _then(ways: set[str], after: set[str]) -> set[str]:
    """The ways paths end where those going on (_MISSES) run on into `after`'s."""
    return (ways - {_MISSES}) | (after if _MISSES in ways else set())


def _unconditional(text: bytes, braced: bool) -> bytes:
    """`text` (a code line or an expression, strings and comments taken out) with what it
    evaluates on some paths only blanked: the arms of a conditional expression (`y if n else
    c`, `n ? y : c`), the operands past `and`/`or`, `&&`/`||`, a comprehension's body and
    its later clauses (`[y for k in c]`: none where c is empty), a lambda's body. A Python
    line not read as a statement is given back whole."""
    if braced:
        out = bytearray(text)
        k = 0
        while k < len(text):
            if text.startswith((b"&&", b"||"), k) or text[k:k + 1] == b"?":
                end = _group_end(text, k)
                out[k:end] = b" " * (end - k)
                k = end
                continue
            k += 1
        return bytes(out)
    tree = None
    for source in (text, text + b" pass", re.sub(rb"^(?:elif|match)\b",
                                                  lambda m: b"if".ljust(len(m[0])), text)
                   + b" pass"):
        try:
            tree = ast.parse(source)
            break
        except (SyntaxError, ValueError):
            continue
    if tree is None:
        return text
    some: list[ast.expr] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.IfExp):
            some += [node.body, node.orelse]
        elif isinstance(node, ast.BoolOp):
            some += node.values[1:]
        elif isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            some += [node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]
            some += [part for k, gen in enumerate(node.generators)
                     for part in [gen.target] + list(gen.ifs) + ([gen.iter] if k else [])]
        elif isinstance(node, ast.Lambda):
            some.append(node.body)
        elif isinstance(node, ast.Compare) and len(node.comparators) > 1:
            # (`n < c < y`: `c < y` is tried where `n < c` holds only.)
            some += node.comparators[1:]
        elif isinstance(node, ast.Assert) and node.msg is not None:
            # (`assert n, y`: the message is made where the assertion fails only.)
            some.append(node.msg)
    out = bytearray(text)
    for node in some:
        if node.lineno == 1 and node.end_lineno == 1:
            for k in range(node.col_offset, min(node.end_col_offset or 0, len(out))):
                out[k] = 32
    return bytes(out)


def _group_end(text: bytes, k: int) -> int:
    """Where the operand group of C code `text` holding offset `k` ends: at its bracket
    closing, or a `,` or `;` outside brackets opened from `k` on; else the text's end."""
    depth = 0
    for at in range(k, len(text)):
        c = text[at:at + 1]
        if c in b"([{":
            depth += 1
        elif c in b")]}":
            depth -= 1
            if depth < 0:
                return at
        elif c in b",;" and depth == 0:
            return at
    return len(text)


# What in a Python line names no variable: a keyword argument's name, `clip(a, y=2)`; an
# attribute's, `a.y`.
_PY_NOT_READING = on_first_use(rb"(?<=[(,])\s*[A-Za-z_]\w*\s*=(?!=)|\.\s*[A-Za-z_]\w*")
# A C operand not evaluated: `sizeof(y)`, `decltype(y)`.
# What in a C line names no variable: a member, `cfg.y`, `p->y` (a field named y, not y).
_C_NOT_READING = on_first_use(rb"(?:\.|->)\s*[A-Za-z_]\w*")
_C_UNEVALUATED = on_first_use(rb"\b(?:sizeof|decltype|alignof|typeid)\s*\([^()]*\)")
# A C name that is no member's nor a namespace's (`y`, not `s.y`, `p->y`, `ns::y`).
_C_OWN_NAME = on_first_use(rb"(?<![\w.])(?<!->)(?<!::)[A-Za-z_]\w*")


def _read_in_both_arms(text: bytes, braced: bool) -> set[bytes]:
    """The names both arms of a conditional expression in `text` (code, strings and comments
    taken out) read, `clip(y) if n else y`, `n ? clip(y) : y`: read on every path through it,
    though _unconditional blanks the arms. An arm holding another form read on some paths
    only (a conditional, `and`, a comprehension, a lambda) reads none here."""
    found: set[bytes] = set()
    if braced:
        for start in [k for k in range(len(text)) if text[k:k + 1] == b"?"]:
            end = _group_end(text, start)
            depth, colon = 0, None
            for k in range(start + 1, end):
                c = text[k:k + 1]
                depth += (c in b"([{") - (c in b")]}")
                if c == b":" and depth == 0:
                    colon = k
                    break
            arms = [] if colon is None else [text[start + 1:colon], text[colon + 1:end]]
            # (A member or a namespace's name, `s.y`, `p->y`, `ns::y`, is another's; an
            # unevaluated operand, `sizeof(y)`, reads nothing.)
            if arms and not any(re.search(rb"\?|&&|\|\||\[[^\]]*\]\s*\(|\b(?:sizeof|decltype"
                                          rb"|alignof|typeid)\b", arm) for arm in arms):
                found |= set(_C_OWN_NAME.findall(arms[0])) & set(_C_OWN_NAME.findall(arms[1]))
        return found
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return found
    some = (ast.IfExp, ast.BoolOp, ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp,
            ast.Lambda, ast.Compare)

    def names(arm: ast.expr) -> set[bytes] | None:
        inner = list(ast.walk(arm))
        if any(isinstance(node, some) and not (isinstance(node, ast.Compare)
                                               and len(node.comparators) == 1)
               for node in inner):
            return None
        return {node.id.encode() for node in inner if isinstance(node, ast.Name)}

    for node in ast.walk(tree):
        if isinstance(node, ast.IfExp):
            body, orelse = names(node.body), names(node.orelse)
            if body is not None and orelse is not None:
                found |= body & orelse
    return found


def _bound_names(text: bytes, braced: bool) -> set[bytes]:
    """The names `text` (a code line, stripped, strings and comments taken out) binds
    wherever it binds them, not only as the first word of an assignment (_SETS_NAME): C's
    assignment inside an expression (`if ((y = clip(y)) > n)`, `clip(y = b)`, `a = y = 0`);
    Python's `:=` anywhere, an assignment's every target (`d, y = split(y)`, `a = y = 0`,
    `(a, *y) = t`, `y: int = 0`, `y[k] = c` changing y), a `for` loop's target
    (`for k, y in parts:`), an `as` (`with f() as y:`, `except E as y:`, `import m as y`), an
    import, a `def` or `class`, a `del`, a `case` pattern's capture. A line naming y this way sets it: it reads as another
    step, not as a read of y's value. Not a keyword argument (`clip(y=c)`), an attribute of
    another name (`c.y = d`), an attribute of y (`y.v = c`, `self.flag = c`: it binds the
    attribute, not y, and a statement naming y, `self.count += 1`, is not told apart by it),
    an index (`a[y] = c`), a comparison (`y <= n`), nor a comprehension's own name (`[k for y
    in c]`, which binds none of the function's)."""
    if braced:
        return set(_C_ASSIGNED.findall(text))
    bound = set(_PY_WALRUS.findall(text))
    head = re.match(rb"(?:async\s+)?(for|with|except|import|from|def|class|del)\b", text)
    if head is not None:
        word = head[1]
        rest = text[head.end():]
        if word == b"for":
            bound |= _targets(rest.split(b" in ", 1)[0])
        elif word in (b"def", b"class"):
            bound |= set(_NAME.findall(rest)[:1])
        elif word == b"del":
            bound |= _targets(rest)
        elif word in (b"import", b"from"):
            if word == b"from":
                rest = rest.split(b" import ", 1)[1] if b" import " in rest else b""
            for item in rest.strip(b" ()").split(b","):
                words = item.split()
                if words:
                    bound.add(words[-1] if len(words) == 3 and words[1] == b"as"
                              else words[0].split(b".")[0])
        for alias in re.finditer(rb"\bas\s*(\([^()]*\)|\[[^\[\]]*\]|[A-Za-z_]\w*)", rest):
            bound |= _targets(alias[1])
        return bound
    case = re.match(rb"case\b(.*?)(?:\bif\b.*)?:$", text)
    if case is not None:
        # (A pattern's capture names, `case [a, y]:`, `case P(v=y):`, `case _ as y:`; not a
        # dotted value, `case Kind.ONE:`, nor a class or keyword named, `P(` and `v=`.)
        return bound | {name[1] for name in re.finditer(
            rb"(?<![\w.])([A-Za-z_]\w*)(?!\s*[(.=\w])", case[1])} - _PY_WORDS - {b"_", b"as"}
    if re.match(rb"(?:if|elif|else|while|try|finally|return|yield|raise|assert|lambda|"
                rb"global|nonlocal|pass|break|continue|match)\b", text):
        return bound
    annotated = re.match(rb"([A-Za-z_]\w*)\s*:(?!=)", text)
    if annotated is not None:
        # (`y: int = 0`: the annotation names a type, not a target.)
        bound.add(annotated[1])
        text = re.sub(rb":[^=]*", b"", text, count=1)
    # The segments of the line between its assignments' `=` at the top level (not within
    # brackets, where `=` gives a keyword argument): all but the last are targets.
    depth, start, targets = 0, 0, []
    for k in range(len(text)):
        c = text[k:k + 1]
        if c in b"([{":
            depth += 1
        elif c in b")]}":
            depth -= 1
        elif depth == 0 and text.startswith(b"lambda", k) and \
                (k == 0 or not text[k - 1:k].isalnum()):
            break
        elif depth == 0 and c == b"=" and text[k + 1:k + 2] != b"=" and \
                text[k - 1:k] not in (b"=", b"!", b"<", b">", b":") or \
                depth == 0 and c == b"=" and text[k - 2:k] in (b"<<", b">>"):
            # (`y += 1`, `y //= 2`, `y <<= 1` assign too: the operator stays in the target.)
            targets.append(text[start:k])
            start = k + 1
    for target in targets:
        bound |= _targets(target)
    return bound


def _targets(text: bytes) -> set[bytes]:
    """The names an assignment's target `text` (Python, `d, y`, `(a, *y)`, `y[k]`, `y += `'s
    `y +`) binds or changes: each name standing as a target of its own, or whose item the
    target is; not a name in a call's or an index's brackets (`a[y]`, `f(y).v`), nor an
    attribute's name (`c.y`), nor the name whose attribute the target is (`self` of
    `self.flag`: the attribute's own step, which every method's `self.x = c` would otherwise
    read as setting `self`, telling apart two copies of `self.count += 1` it never touches)."""
    found: set[bytes] = set()
    # The brackets open where `k` stands: True for a tuple's or list's (targets within),
    # False for a call's or an index's (what is read within).
    opened: list[bool] = []
    k = 0
    while k < len(text):
        c = text[k:k + 1]
        name = _NAME.match(text, k)
        if name is not None:
            before = text[:k].rstrip()
            if all(opened) and not before.endswith(b".") and \
                    not text[name.end():].lstrip().startswith((b"(", b".")):
                found.add(name[0])
            k = name.end()
            continue
        if c in b"([{":
            before = text[:k].rstrip()
            opened.append(not before or not (before[-1:].isalnum() or before[-1:] in b"_)]"))
        elif c in b")]}" and opened:
            opened.pop()
        k += 1
    return found - _PY_WORDS


_PY_WORDS = frozenset((b"in", b"not", b"and", b"or", b"is", b"None", b"True", b"False",
                       b"await", b"lambda", b"if", b"else"))
# C's assignment wherever it stands in a line (`y = c`, `if ((y = clip(y)) > n)`, `y <<= 1`),
# its name not a member's (`s.y = 1`, `p->y = 1`) nor a comparison (`y <= n`, `y == n`).
_C_ASSIGNED = on_first_use(rb"(?<![\w.])(?<!->)(?<!::)([A-Za-z_]\w*)\s*"
                           rb"(?:<<|>>|[-+*/%&|^])?=(?!=)")


def _as_run(lines: list[bytes], between: range, braced: bool,
            names: frozenset[bytes] | set[bytes] = frozenset()) -> tuple[list[bytes], set[int]]:
    """`lines` (one for one) with what the lines `between` (0-based) hold that does not run
    where it stands taken out, and the lines between whose code some builds leave out: a
    string or a C comment over lines reads as `""` or nothing (past_open_text; `d = \"\"\"` +
    `clip(y)` + `\"\"\"` reads no y); a Python `def` nested between, its decorators and its
    body, as a step setting its name (`d = None`: the body runs where `d` is called, if
    anywhere, not there); a C preprocessor conditional opened and closed between, its
    directives as nothing, a part no build compiles (`#if 0`) as nothing, and the lines of a
    part some builds compile (`#ifdef DEBUG`) among the lines returned: a line there naming
    y reads it in those builds only (but where every build compiles a part of plain steps
    naming one of `names`, _read_in_every_build). What the lines hold is not sure to run,
    then: by the rule that what is not read counts against the quiet answer, it reads
    nothing on the paths between the copies."""
    out = lines

    def put(at: int, text: bytes) -> None:
        nonlocal out
        if out is lines:
            out = list(lines)
        out[at] = text

    open_text: bytes | None = None
    # (An f-string over lines reads its fields, `f\"\"\"` + `{clip(y)}`: read as it is.)
    formatted = not braced and any(_PY_F_STRING_OVER_LINES.search(lines[at]) for at in between)
    for at in ([] if formatted else between):
        line = lines[at]
        if open_text is not None or b"/*" in line or b'"""' in line or b"'''" in line:
            code, open_text = past_open_text(line, open_text, braced)
            if code != line:
                put(at, code)
    if not braced:
        return _nested_defs_as_steps(out, between), set()
    return _preprocessed(out, between, names)


def _lines_going_on(lines: list[bytes], between: range) -> set[int]:
    """The Python lines `between` (0-based lines of `lines`) that go on with a statement
    begun on a line above, inside its brackets or past a backslash (`d = clip(a,` +
    `y=2)`): none starts a statement."""
    going_on: set[int] = set()
    opened, backslash = 0, False
    for at in between:
        code = STRING_OR_COMMENT.sub(b"", lines[at]).strip()
        if not code:
            continue
        if opened > 0 or backslash:
            going_on.add(at)
        opened = max(0, opened + _brackets_opened(code, False))
        backslash = code.endswith(b"\\")
    return going_on


def _nested_defs_as_steps(lines: list[bytes], between: range) -> list[bytes]:
    """`lines` (one for one) with each Python `def` whose lines are all `between` (0-based),
    its decorators above it and its body, read as a step setting its name at its header's
    indentation (`d = None`), its other lines blank: defining a function runs none of its
    body. Not one with a parameter's default or a decorator's argument, which run at the
    `def` and may read a name (`def d(k=y):`), nor one called by a line between below it
    (`e = d()` runs its body there): read as they are."""
    out = lines
    at = between.start
    while at < between.stop:
        text = STRING_OR_COMMENT.sub(b"", lines[at]).strip()
        found = re.match(rb"(?:async\s+)?def\s+([A-Za-z_]\w*)", text)
        if found is None:
            at += 1
            continue
        level = _indent(lines[at])
        last = at
        opened = _brackets_opened(text, False)
        while opened > 0 and last + 1 < between.stop:  # (a header over lines)
            last += 1
            opened += _brackets_opened(STRING_OR_COMMENT.sub(b"", lines[last]), False)
        for k in range(last + 1, between.stop):
            code = STRING_OR_COMMENT.sub(b"", lines[k])
            if code.strip():
                if _indent(lines[k]) <= level:
                    break
                last = k
        else:
            if between.stop < len(lines) and _indent(lines[between.stop]) > level:
                return out  # (the body goes on past the lines between)
        first = at
        while first - 1 >= between.start and _indent(lines[first - 1]) == level and \
                lines[first - 1].lstrip().startswith(b"@"):
            first -= 1
        header = b" ".join(STRING_OR_COMMENT.sub(b"", lines[k]) for k in range(first, last + 1)
                           if _indent(lines[k]) == level or k == at)
        called = re.compile(rb"(?<![\w.])" + re.escape(found[1]) + rb"\s*\(")
        if b"=" in header.split(b")")[0] or b"(" in b"".join(lines[first:at]) or any(
                called.search(STRING_OR_COMMENT.sub(b"", lines[k]))
                for k in range(last + 1, between.stop)):
            # (A default or a decorator's argument runs at the `def` and may read a name;
            # a call of the function between runs its body: read as it is.)
            at = last + 1
            continue
        if out is lines:
            out = list(lines)
        for k in range(first, last + 1):
            out[k] = b""
        out[at] = lines[at][:len(lines[at]) - len(lines[at].lstrip())] + found[1] + b" = None"
        at = last + 1
    return out


def _preprocessed(lines: list[bytes], between: range,
                  names: frozenset[bytes] | set[bytes] = frozenset()) -> tuple[list[bytes], set[int]]:
    """`lines` (one for one) with each C preprocessor conditional opened and closed
    `between` (0-based lines) read as the builds compile it (and a `#pragma` line as no
    line): its directives blank, a part no
    build compiles (`#if 0`, the `#else` of `#if 1`) blank, a part every build compiles (`#if
    1`, the `#else` of `#if 0`) as it is; and the lines of the parts some builds compile only
    (`#ifdef DEBUG` + `d = clip(y);`), which are returned, but where every build compiles
    one of its parts and each is plain steps naming one of `names` (_read_in_every_build:
    `#ifdef DEBUG` / `d = clip(y);` / `#else` / `d = y;` / `#endif` reads y in every build,
    read as it is). A conditional not closed between stays, its directives too."""
    out = lines
    unsure: set[int] = set()
    # (Each conditional open: its directives' lines, and whether each part above is built
    # always, never or in some builds: True, False, None.)
    opened: list[tuple[list[int], list[bool | None]]] = []
    for at in between:
        directive = C_DIRECTIVE.match(lines[at])
        if directive is None:
            if re.match(rb"\s*#\s*pragma\b", lines[at]):
                # (`#pragma unroll` above a loop: a hint to the compiler, no step.)
                if out is lines:
                    out = list(lines)
                out[at] = b""
            continue
        word = directive[1]
        test = STRING_OR_COMMENT.sub(b"", directive[2]).strip()
        if word in (b"if", b"ifdef", b"ifndef"):
            opened.append(([at], [True if word == b"if" and test in ALWAYS_BUILT else
                                  False if word == b"if" and test in NEVER_BUILT else None]))
            continue
        if not opened:
            continue
        ats, built = opened[-1]
        ats.append(at)
        if word != b"endif":
            # (A part past one built always is built never; an `#else` past parts built
            # never, always.)
            built.append(False if True in built else
                         True if word == b"else" and all(b is False for b in built) else None)
            continue
        opened.pop()
        if out is lines:
            out = list(lines)
        every_build = _read_in_every_build(lines, ats, built, names)
        for part, (head, end) in enumerate(zip(ats, ats[1:])):
            out[head] = b""
            if built[part] is False:
                out[head + 1:end] = [b""] * (end - head - 1)
            elif built[part] is None and not every_build:
                unsure.update(range(head + 1, end))
        out[ats[-1]] = b""
    return out, unsure


def _read_in_every_build(lines: list[bytes], ats: list[int], built: list[bool | None],
                         names: frozenset[bytes] | set[bytes]) -> bool:
    """Whether the C preprocessor conditional whose directives are the lines `ats` (0-based,
    `#endif` last; `built` whether each part is built always, never or in some builds) reads
    one of `names` in every build on every path: its last part an `#else` (some part is
    compiled in any build), and each part built in some plain steps (a line ending in `;`,
    no block, no jump, no directive nested), one naming one of `names`."""
    last = C_DIRECTIVE.match(lines[ats[-2]])
    if not names or last is None or last[1] != b"else":
        return False
    for part, (head, end) in enumerate(zip(ats, ats[1:])):
        if built[part] is False:
            continue
        code = [STRING_OR_COMMENT.sub(b"", lines[at]).strip() for at in range(head + 1, end)]
        code = [text for text in code if text]
        if any(C_DIRECTIVE.match(lines[at]) for at in range(head + 1, end)) or not all(
                text.endswith(b";") and not re.search(rb"[{}]", text) and re.match(
                    rb"(?:if|for|while|do|switch|return|break|continue|goto|case|default)\b",
                    text) is None for text in code) or \
                not any(names & set(_NAME.findall(text)) for text in code):
            return False
    return True
    

def _unshadowed(lines: list[bytes], between: range, indent: bytes, names: set[bytes],
                braced: bool) -> list[bytes]:
    """`lines` (one for one) with each of `names` a C declaration `between` (0-based lines)
    declares anew renamed from that line to its block's end (`if (n) {` + `int y = clip(b);`
    + `y = y * 2;` + `}`; `for (int y = 0; y < n; y += 2)` and its body): another variable,
    which no line setting or reading it sets or reads the copies' own. Declared in a block
    set deeper than `indent` (the copies' own level, where it would declare y twice), or in
    a `for (`'s init. Python's names are the function's: `lines` as they are."""
    if not braced or not names:
        return lines
    out = lines
    depth = 0  # the braces opened since the first line between
    # Each name hidden: (its name, the depth it was declared at; for a `for`'s, the code
    # lines past its header it still holds where the header opens no braces, `for (int y =
    # 0; y < n; ++y)` + `d += y;`, else 0; None for any other declaration's).
    hidden: list[tuple[bytes, int, int | None]] = []
    for at in between:
        code = STRING_OR_COMMENT.sub(b"", lines[at])
        text = code.strip()
        if not text:
            continue
        looped = re.match(rb"for\s*\(", text) is not None
        if looped or _indent(lines[at]) > _indent(indent + b"x"):
            for name in _c_declared(text) & names:
                hidden.append((name, depth, (0 if text.endswith((b";", b"{")) else 1)
                               if looped else None))
        if hidden:
            if out is lines:
                out = list(lines)
            out[at] = re.sub(rb"(?<![\w.])(?<!->)(" + b"|".join(
                re.escape(name) for name, _, _ in hidden) + rb")(?!\w)",
                lambda found: found[1] + _SHADOWED, out[at])
        depth += code.count(b"{") - code.count(b"}")
        # (A declaration's name is hidden to its block's end, the brace closing below the
        # depth it was declared at; a `for`'s to the end of the braces its header opens, or
        # of the statement under a header with none.)
        kept: list[tuple[bytes, int, int | None]] = []
        for name, at_depth, left in hidden:
            if left is None:
                if depth >= at_depth:
                    kept.append((name, at_depth, None))
            elif depth > at_depth:
                kept.append((name, at_depth, 0))
            elif left:
                kept.append((name, at_depth, left - 1))
        hidden = kept
    return out


# An attribute a line sets anew or deletes (`self.count = 0`, `self.count *= k`, `del
# self.count`, `p->count = 0;`): the attribute, its owner's name and its own (group 1). Not
# one adding to it (`self.count += n`): beside a statement adding to it, the two add alike.
_SETS_ATTRIBUTE = on_first_use(
    rb"(?=(?:del\s+)?([A-Za-z_]\w*(?:\s*(?:\.|->)\s*[A-Za-z_]\w*)+))(?:del\s+\1\s*$"
    rb"|\1\s*(?:[*/%&|^]|<<|>>|//|\*\*)?=(?!=))")
# What _unshadowed adds to a name a block declares anew.
_SHADOWED = b"__shadowed"


def _c_declared(text: bytes) -> set[bytes]:
    """The names a C line (stripped, strings and comments taken out) declares: each
    declarator of a declaration opening the line or a `for (`'s init clause, past its type
    words (`int y = 0;`, `const float* y;`, `int e = 0, y = clip(b);`, `for (int y = 0; ...`,
    `std::vector<int> y(n);`). Not an assignment (`y = 0;`), nor a `return y;`."""
    found: set[bytes] = set()
    bound = _C_BINDING.match(text)
    if bound is not None:
        return set(_NAME.findall(bound[1] or bound[2]))
    head = _C_DECLARATION.match(text)
    if head is None or head[1] in _C_NOT_TYPES:
        return found
    found.add(head[2])
    # The declaration's further declarators: each `, name` at its top level up to its `;`.
    depth = 0
    for k in range(head.end(), len(text)):
        c = text[k:k + 1]
        if c in b"([{":
            depth += 1
        elif c in b")]}":
            depth -= 1
            if depth < 0:
                break
        elif c == b";" and depth == 0:
            break
        elif c == b"," and depth == 0:
            name = re.match(rb"\s*[*&\s]*([A-Za-z_]\w*)\s*(?=[=;,\[(]|$)", text[k + 1:])
            if name is not None:
                found.add(name[1])
    return found


# A C declaration opening a line or a `for (`'s init clause: its first type word (group 1),
# then further words, template arguments, `*`/`&`, and its first declarator's name (group 2).
# (Its first declarator set by braces, `int y{clip(b)};`, or, in a `for (`, a range-for's,
# `for (int y : ys)`.)
_C_DECLARATION = on_first_use(
    rb"(?:for\s*\(\s*)?([A-Za-z_][\w:]*)(?:\s*<[^;()]*>)?(?:\s+[A-Za-z_][\w:]*"
    rb"(?:\s*<[^;()]*>)?)*(?:\s*[*&]+\s*|\s+)([A-Za-z_]\w*)\s*(?=[=;,\[({]|$)")
# A C++ structured binding opening a line or a `for (`'s init, `auto [e, y] = split(b);`,
# `for (const auto& [k, v] : m)` (its names, group 1); a range-for's declarator, `for (int
# y : ys)` (its name, group 2).
_C_BINDING = on_first_use(rb"(?:for\s*\(\s*)?(?:const\s+)?auto\s*[&*]*\s*\[([^\[\]]*)\]"
                          rb"|for\s*\(\s*[A-Za-z_][\w:<>,\s*&]*?[\s*&]([A-Za-z_]\w*)\s*:(?!:)")
# Words that open a line as a type word would but declare nothing (`return y;`, `else y = 0;`).
_C_NOT_TYPES = frozenset((b"return", b"else", b"do", b"case", b"goto", b"throw", b"delete",
                          b"new", b"co_return", b"co_yield", b"co_await", b"if", b"while",
                          b"switch", b"sizeof"))
# Python's `:=` wherever it stands (`if (y := clip(y)) > n:`).
_PY_WALRUS = on_first_use(rb"(?<![\w.])([A-Za-z_]\w*)\s*:=")


def _bodies_leaving_the_function(lines: list[bytes], between: range,
                                 indent: bytes) -> set[int]:
    """The code lines `between` (0-based lines of `lines`) in the body of a block opened at
    `indent` whose last line, at the body's own indentation, leaves the function (`if n:` +
    `y = c` + `return c`; `if (n) {` + `return y;` + `}`), no line of it leaving otherwise
    (`break`, `continue`, `goto`; a `yield` goes on to the return): every path through them
    ends there, and a copy of a statement past the block never runs after them."""
    off: set[int] = set()
    body: list[int] = []
    head = b""

    def close() -> None:
        # (A branch's or a handler's body only: a `try:` body may be left part way by what
        # it raises, its lines before the raise going on past the handler.)
        if body and (_PY_BRANCH_HEAD.fullmatch(head) or _C_BRANCH_HEAD.fullmatch(head)
                     or re.fullmatch(rb"except\b.*:", head)):
            last = lines[body[-1]]
            first = lines[body[0]]
            if _indent(last) == _indent(first) and \
                    _LEAVES_FUNCTION.match(STRING_OR_COMMENT.sub(b"", last).strip()) and \
                    not any(_LEAVES_OTHERWISE.match(STRING_OR_COMMENT.sub(b"", lines[at]).strip())
                            for at in body):
                off.update(body)
        body.clear()

    for at in between:
        code = STRING_OR_COMMENT.sub(b"", lines[at])
        if not code.strip():
            continue
        if code.startswith(indent) and code[len(indent):len(indent) + 1] in (b" ", b"\t"):
            body.append(at)
        else:
            close()
            head = code.strip()
    close()
    return off


# The first words of a line that leaves the function (`return`, `raise`, `throw`), and of one
# that leaves a block some other way.
_LEAVES_FUNCTION = on_first_use(rb"(?:return|raise|throw|co_return)\b")
_LEAVES_OTHERWISE = on_first_use(rb"(?:break|continue|goto)\b")


def _adds_alike(text: bytes, adds_to: bytes | None, names: set[bytes]) -> bool:
    """Whether `text` (a code line, stripped) only adds to or takes from `adds_to` (`y += k`,
    `y -= k;`), naming nothing else of `names`: it and the statement adding to the same
    target (`y += 1`) give the same sum in either order."""
    if adds_to is None:
        return False
    step = re.fullmatch(rb"([A-Za-z_]\w*)\s*[-+]=(?!=)(.*?);?", text)
    return step is not None and step[1] == adds_to and \
        not names & set(_NAME.findall(step[2]))


def _one_line_block(text: bytes, braced: bool) -> tuple[bytes, bytes] | None:
    """`text` (a code line, stripped, strings and comments taken out) read as a whole `if`,
    `for` or `while` on one line, `if a: return b`, `if (n) d = clip(b);`: its first word and
    the one simple statement under it; None for any other line (a header alone, a body of
    several statements, a block in braces, a `lambda` whose `:` is no header's end)."""
    head = re.match(rb"(if|for|while)\b", text)
    if head is None:
        return None
    depth, cut = 0, None
    for k in range(head.end(), len(text)):
        c = text[k:k + 1]
        if c in b"([{":
            depth += 1
        elif c in b")]}":
            depth -= 1
            if braced and not depth:
                cut = k + 1
                break
        elif not braced and c == b":" and not depth and text[k + 1:k + 2] != b"=":
            cut = k + 1
            break
    if cut is None or (not braced and b"lambda" in text[:cut]):
        return None
    body = text[cut:].strip()
    # (Python's braces in the body are a dict's or a set's: `if a: d = {'y': y}`.)
    if not body or braced and re.search(rb"[{}]", body) or \
            text.endswith((b":", b"\\", b",", b"(", b"[")):
        return None
    if braced and (not body.endswith(b";") or body.count(b";") != 1):
        return None
    if not braced and b";" in body:
        return None
    return head[1], body


# What _steps_between says of the steps between two copies: every path through the first
# reaches the second, or only some do (a block between leaves), or every path does and an
# `if` between reads what the copies name on some of them (_if_reading_on_some_paths).
_EVERY_PATH = "every path"
_SOME_PATHS = "some paths"
_READ_ON_SOME_PATHS = "read on some paths"


def _in_a_loop_between(lines: list[bytes], first: int, at: int, level: int,
                       breaks: bool = False) -> bool:
    """Whether line `at` (0-based) of `lines` is inside a loop whose header is at line `first`
    or later, read by indentation up to `level` (the copies' own): a `break` or `continue`
    there leaves that loop, not the round the copies are in. Where `breaks` (a `break`), a C
    `switch` counts as a loop, its labels (`case 1:`, however set) as none of its lines."""
    for k in range(at - 1, first - 1, -1):
        code = STRING_OR_COMMENT.sub(b"", lines[k])
        if not code.strip() or _indent(lines[k]) >= _indent(lines[at]):
            continue
        opener = code.strip().lstrip(b"}").lstrip()
        if re.match(rb"(?:async\s+)?(?:for|while|do)\b", opener) or \
                breaks and re.match(rb"switch\s*\(", opener):
            return True
        if breaks and re.fullmatch(rb"(?:case\b.*|default\s*):", opener):
            continue
        if _indent(lines[k]) <= level:
            return False
        at = k
    return False


# A line opening a block the two copies of a short statement may stand either side of, or (C)
# closing one or going on to its `else`: `if a:`, `for k in r:`, `with lock:`, `try:`, `match
# n:` (its `case 1:` going on); `if (a) {`, `} else {`, `}`, `switch (n) {`.
_PY_BLOCK_OPENS = on_first_use(rb"(?:if|for|while|with|match|async\s+for|async\s+with)\b.*:"
                               rb"|try\s*:")
_PY_BLOCK_GOES_ON = on_first_use(rb"(?:elif\b.*|else\s*|except\b.*|finally\s*|case\b.*):")
_C_BLOCK_OPENS = on_first_use(rb"(?:\}\s*)?(?:(?:else\s+)?(?:if|for|while)\s*\(.*\)\s*\{"
                              rb"|else\s*\{|try\s*\{|catch\s*\(.*\)\s*\{)|\}"
                              rb"|switch\s*\(.*\)\s*\{")
# The first words of a line that leaves a block or the function: a copy past it may not run.
_LEAVES_BLOCK = on_first_use(rb"(?:return|break|continue|raise|throw|goto|yield|co_return"
                             rb"|co_yield)\b")


# A Python f-string opening a string over lines (`f"""`, `rf\'\'\'`): its fields are code.
_PY_F_STRING_OVER_LINES = on_first_use(rb"(?<![\w])(?:[rRbB]?[fF]|[fF][rRbB])(?:\"\"\"|\'\'\')")


# An assertion's line, Python's `assert y > 0` or C's `assert(y > 0);`: gone in some builds
# (`python -O`, NDEBUG), raising or aborting where it fails in the others.
_ASSERTION = on_first_use(rb"assert\b")


# The first words of a line that opens, closes or leaves a block, or is no plain step: a copy
# of a short statement past one is on another path or in another round.
_STEP_BOUNDARY = on_first_use(
    rb"(?:return|break|continue|raise|throw|goto|yield|await|case|default|else|elif|except"
    rb"|finally|if|for|while|do|switch|try|with|def|class|async|global|nonlocal|assert"
    rb"|co_return|co_yield)\b|[#@]")


# The statements that leave the function (a copy before one runs at most once a call).
_LEAVES_CALL = frozenset((b"return", b"raise", b"throw"))


def _before_leaving_a_branch(lines: list[bytes], at: int,
                             places: list[tuple[int, int, bytes]]) -> bool:
    """Whether line `at` (0-based) of `lines` is in a branch (an `if`, a loop's body, a
    handler, a case: _BRANCH) that holds none of the fix's `places` and leaves the function
    after it (`return`, `raise`, `throw`), read by indentation."""
    if _leaves_right_after(lines, at) not in _LEAVES_CALL:
        return False
    opener = _opener_at(lines, at)
    if opener is None:
        return False
    head = STRING_OR_COMMENT.sub(b"", lines[opener]).strip().lstrip(b"}").lstrip()
    if head == b"{":
        above = _code_line_above(lines, opener)
        if above is None:
            return False
        opener = above
        head = STRING_OR_COMMENT.sub(b"", lines[opener]).strip().lstrip(b"}").lstrip()
    return _BRANCH.match(head) is not None and \
        not any(_inside(lines, opener, start) for start, _, _ in places)


def _more_in_function(path: str, old: list[bytes], lines: list[bytes], run: bytes,
                      near: list[int], functions: set[bytes | None]) -> bool:
    """Whether a copy of `run` at `near` (0-based lines of `lines`, the target) is in one of
    the fix's `functions` (named, known) that holds more copies of it than in `old`, the file
    the fix was made on: upstream's own, though a line diff of the two files reads it as
    the base's line (upstream took the same line out of another function nearby, and the
    diff pairs the two copies)."""
    named = {function_named_at(path, lines, k) for k in near} & functions - {None, b""}
    if not named:
        return False

    def held(content: list[bytes]) -> dict[bytes | None, int]:
        counts: dict[bytes | None, int] = {}
        for at in NearText(b"".join(content)).lines_of(run):
            function = function_named_at(path, content, at - 1)
            counts[function] = counts.get(function, 0) + 1
        return counts

    now, was = held(lines), held(old)
    return any(now.get(function, 0) > was.get(function, 0) for function in named)


def _copies_taken_out(path: str, base: bytes, current: bytes, made: list[tuple[int, int]],
                      runs: list[bytes]) -> dict[bytes, int]:
    """How many copies of each of `runs` that `base` holds within NEAR_LINES of where the fix
    was made (`made`, byte spans of `base`), in another function than the fix's, upstream took
    out on the way to `current`: that function holds the run nowhere in `current` (the line
    dropped, the function deleted or moved to another file). Where no function is known (the
    top level, a file of no language known here), a copy whose first line a line diff of the
    two files deletes. Such a copy is no count the base may hold against a copy upstream
    wrote near the fix's place: the counts would even out, and the fix merge in beside
    upstream's. Asked only of runs whose counts even out."""
    old = split_lines(base)
    spans = [(base.count(b"\n", 0, start), base.count(b"\n", 0, end)) for start, end in made]
    near = NearText(base)
    found: dict[bytes, list[int]] = {}
    for run in runs:
        copies = [at - 1 for at in near.lines_of(run)
                  if any(low - NEAR_LINES <= at - 1 <= high + NEAR_LINES for low, high in spans)]
        if copies:
            found[run] = copies
    if not found:
        return {}
    fixes = {function_named_at(path, old, low) for low, _ in spans}
    new = split_lines(current)
    there = NearText(current)
    deleted: set[int] | None = None
    gone: dict[bytes, int] = {}
    for run, copies in found.items():
        holders: set[bytes | None] | None = None
        for at in copies:
            function = function_named_at(path, old, at)
            if function in fixes:
                continue
            if function:
                if holders is None:
                    holders = {function_named_at(path, new, k - 1) for k in there.lines_of(run)}
                taken = function not in holders
            else:
                if deleted is None:
                    import difflib

                    matcher = difflib.SequenceMatcher(None, old, new,
                                                      autojunk=len(old) + len(new) > 4000)
                    deleted = {k for tag, i1, i2, _, _ in matcher.get_opcodes()
                               if tag != "equal" for k in range(i1, i2)}
                taken = at in deleted
            gone[run] = gone.get(run, 0) + taken
    return gone


def _doubled_said(said: str) -> str:
    """The stop's words for a doubling found at `said` (_doubled's: the place, then what
    tells the copies' paths apart, FEWER_PATHS or EACH_ROUND, if any): the place, DOUBLED,
    then that."""
    for clause in (FEWER_PATHS, EACH_ROUND, YOURS_EACH_ROUND, READ_BETWEEN, READ_IN_A_SWITCH,
                   UNDECLARED_CALL, READ_IN_A_BRANCH):
        if said.endswith(f"; {clause}"):
            return f"{said[:-len(clause) - 2]}: {DOUBLED}, its own way; {clause}"
    if f" {BESIDE_OTHERS} (" in said or f" {MAYBE_ITS_VALUE} (" in said or \
            f" {IN_PLACE_OF} " in said or f" {KEY_TWICE}, " in said:
        # The place, then the item (key) and what tells the copies apart
        # (_item_twice_in_its_bracket, _key_twice_in_its_dict).
        cut = said.index("); ", said.index(" (upstream's at line ")) + 1
        return f"{said[:cut]}: {DOUBLED}, its own way; {said[cut + 2:]}"
    return f"{said}: {DOUBLED}, its own way"


def _doubled_where(path: str, current: bytes, result: bytes, runs: list[bytes],
                   upstreams: set[int] | None = None) -> str:
    """`PATH line N (upstream's at line M)`: where the first of `runs` is in `result`, the
    fix's copy (a line the fix added, by a line diff of `current` and `result`) and
    upstream's (the nearest other). Asked only of a doubling found: the diff is paid then."""
    starts, own, nearest = _copies_of(path, current, result, runs[0], upstreams)
    if own is None or nearest is None:
        return f"{path} line {starts[0]}" if starts else path
    return f"{path} line {own} (upstream's at line {nearest})"


def _copies_of(path: str, current: bytes, result: bytes, run: bytes,
               upstreams: set[int] | None = None) -> tuple[list[int], int | None, int | None]:
    """Where `run` starts in `result` (1-based lines), the fix's copy (a line the fix added,
    by a line diff of `current` and `result`) and upstream's nearest other copy (None where
    either is missing): of those in the fix's own function (function_named_at, as
    _upstreams_own found the doubling there) where one is, the nearest of those on
    `upstreams` (_upstreams_lines, the lines upstream added) where one is. (A copy the file
    had before, `y += 1` in a loop between the fix's and upstream's, is a line between them,
    not upstream's.)"""
    fix_lines = {line for start, end, _ in file_changes(result, current)
                 for line in range(start + 1, end + 1)}
    starts = NearText(result).lines_of(run)
    own = [line for line in starts if line in fix_lines]
    theirs = [line for line in starts if line not in fix_lines]
    if not own or not theirs:
        return starts, None, None
    if len(theirs) > 1:
        # (A nearer copy in another function, `y += 1` in the loop of the function above, is
        # other code that reads alike: read as upstream's, its loop would tell the two apart
        # and let the copy in the fix's own function run twice.)
        lines = split_lines(result)
        function = function_named_at(path, lines, own[0] - 1)
        theirs = [line for line in theirs
                  if function_named_at(path, lines, line - 1) == function] or theirs
    added = [line for line in theirs if line in (upstreams or ())]
    return starts, own[0], min(added or theirs, key=lambda line: abs(line - own[0]))


def _upstreams_lines(base: bytes, current: bytes, result: bytes) -> set[int]:
    """The lines (1-based) of `result`, `current` with the fix carried in, that upstream
    added: those a line diff of `base` (the file the fix was made on) and `current` finds
    new, at their places in `result` (a line diff of `current` and `result`)."""
    import difflib

    old, new, made = split_lines(base), split_lines(current), split_lines(result)
    added = {k for tag, _, _, j1, j2 in difflib.SequenceMatcher(
        None, old, new, autojunk=len(old) + len(new) > 4000).get_opcodes()
        if tag != "equal" for k in range(j1, j2)}
    return {j1 + (k - i1) + 1 for tag, i1, i2, j1, _ in difflib.SequenceMatcher(
        None, new, made, autojunk=len(new) + len(made) > 4000).get_opcodes()
        if tag == "equal" for k in range(i1, i2) if k in added}


# The name a statement sets (`ok = load(c);`, `err := f()`, `n += 1`, `auto ok = ...`,
# `bool ok = ...`): its target, first on the line after any type words, never a comparison
# (`==`, `<=`, `!=`, `>=`) nor a keyword argument inside a call's brackets (`f(limit=limit)`).
_SETS_NAME = on_first_use(rb"^\s*(?:[A-Za-z_][\w:<>]*[*&]*\s+[*&]*)*([A-Za-z_]\w*)\s*"
                          rb"(?:[-+*/%&|^]|<<|>>|:)?=(?!=)")
_NAME = on_first_use(rb"[A-Za-z_]\w*")
# A C statement stepping a name, `y++;`, `--y;`: the name (the first group or the second).
_STEPS_NAME = on_first_use(rb"([A-Za-z_]\w*)\s*(?:\+\+|--)\s*;?|(?:\+\+|--)\s*([A-Za-z_]\w*)\s*;?")
# An item a statement sets or updates (`x[i] += n;`, `y[j] = 0`): the name whose item it is.
_SETS_ITEM = on_first_use(rb"^\s*([A-Za-z_]\w*)\s*(?:\[[^\[\]]*\]\s*)+(?:[-+*/%&|^]|<<|>>)?=(?!=)")


def _reads_what_is_set_between(path: str, current: bytes, result: bytes, run: bytes,
                               upstreams: set[int] | None = None) -> bool:
    """Whether a line between the fix's copy of `run` and upstream's nearest copy in `result`
    sets a name `run` reads: then each copy checks (or uses) another state, as a check after
    each of two steps (`ok = alloc(c);` `if (!ok) return false;` `ok = load(c);` the same
    check again), and both are wanted: no doubling. Asked only of a doubling found."""
    _, own, theirs = _copies_of(path, current, result, run, upstreams)
    if own is None or theirs is None:
        return False
    lines = result.split(b"\n")
    written = _written(lines, own, run)
    code = [STRING_OR_COMMENT.sub(b"", line) for line in written]
    read = {name for line in code for name in _NAME.findall(line)}
    # The names whose layout or kind the run reads (`x.size(0)`, `x.is_contiguous()`,
    # `len(x)`, `x[0]`, `x.dtype`, `x.is_cuda`), each with the steps that give it another
    # answer (a transpose, a view, `x.float()`, `x.cuda()`). Not the target an in-place update
    # acts on: `y.add_(bias.to(y.dtype))` adds to what `y = y.float()` carried over, and
    # made twice it adds twice, whatever dtype it reads. Nor the kind a run other than a
    # guard reads, nor the layout one that tests nothing reads: a guard after a cast or a
    # transpose checks another answer, but
    # `y.add_(bias.to(x.dtype))` after `x = x.half()`, or `y.add_(bias.view(x.shape))` after
    # `x = x.t()`, still adds the bias, and made twice it adds twice (what it adds is cast or
    # laid out otherwise; the work is the same).
    in_place = _IN_PLACE_TARGET.match(code[0].strip()) if is_in_place(written) else None
    guard = is_guard(written)
    # A run that tests the layout (a guard, or `if not x.is_contiguous(): x = x.contiguous()`
    # mending what a transpose undid) tests another answer after a layout step. Not an `if`
    # whose body does work (`if x.size(0) > 1: y.add_(bias)`): after `x = x.t()` upstream's
    # adds the bias again wherever both answers hold, the work made twice.
    checks = guard or code[0].lstrip().startswith((b"while ", b"assert ")) or (
        code[0].lstrip().startswith((b"if ", b"if(", b"elif ")) and _mends_only(code[1:]))
    # A name set anew from itself converted to a kind it reads (`y = y.to(x.dtype)`,
    # `y = y.to(x.device)`) makes that kind its value: after `x = x.half()` it makes another
    # value, as a guard checks another answer (an in-place update reading a kind still adds
    # what it adds, whatever the kind).
    converts = len(code) == 1 and _CONVERTS_TO_KIND.match(code[0].strip()) is not None
    shaped: dict[bytes, frozenset[bytes]] = {}
    for line in code:
        for found in _READS_LAYOUT.finditer(line):
            if in_place is not None and (found[1] or found[3] or found[4]) == in_place[1]:
                continue
            if not converts and (found[1] and found[2] in _KIND_READS and not guard
                                 or not checks):
                continue
            name = found[1] or found[3] or found[4]
            changing = _CHANGED_BY.get(found[2], _SIZE_STEPS) if found[1] else _SIZE_STEPS
            if found[2] in (b"size", b"shape"):
                changing = changing - _transposes_keeping(line, name)
            shaped[name] = shaped.get(name, frozenset()) | changing
    if guard:
        # A guard on an attribute the table of steps does not name (`x.is_quantized`,
        # `x.layout`): any step may change it, and made twice a guard changes nothing, where
        # deleting the fix's copy after a step that did change it loses the fix's check.
        for line in code:
            for found in _READS_ATTRIBUTE.finditer(line):
                if found[2] not in _CHANGED_BY:
                    shaped[found[1]] = shaped.get(found[1], frozenset()) | _SAME_VALUE
    # The names the run reads as a tensor, through its own accessors (`x.numel()`,
    # `x.size(0)`, `x.dtype`): a step between the copies of the project's own, or arithmetic,
    # may keep what the guard reads (_may_keep).
    tensors = {found[1] for line in code for found in _READS_TENSOR.finditer(line)} - (
        {in_place[1]} if in_place is not None else set())
    low, high = sorted((own, theirs))
    # The lines after the first copy (it spans as many as the fix's), before the other; not
    # those of a branch that leaves the function between (`if n:` + `y = c` + `return c`):
    # no path through both copies runs them.
    first = lines[low - 1]
    off = _bodies_leaving_the_function(lines, range(low - 1 + len(written), high - 1),
                                       first[:_indent(first)])
    braced = _language(path) == "c"
    apart = range(low - 1 + len(written), high - 1)
    # (What does not run where it stands sets nothing there: a string or a comment over
    # lines, a nested `def`'s body, a part of an `#if` no build compiles; nor in every build a
    # part some compile, `#ifdef DEBUG` + `y = 0;`, nor does a Python keyword argument on a
    # call's line going on, `d = clip(a,` + `y=2)`.)
    lines, unbuilt = _as_run(lines, apart, braced)
    # (A C declaration in a block between, `int y = clip(b);`, sets another variable.)
    lines = _unshadowed(lines, apart, first[:len(first) - len(first.lstrip(b" \t"))], read,
                        braced)
    going_on = set() if braced else _lines_going_on(lines, apart)
    between = [lines[at] for at in apart if at not in off and at not in unbuilt
               and at not in going_on]
    # (A step adding to what the run adds to, `y += k` between two `y += 1`, sets y anew,
    # but the two add alike in either order: no other state, the same sum.)
    adds = re.fullmatch(rb"([A-Za-z_]\w*)\s*[-+]=(?!=)(.*?);?", code[0].strip()) \
        if len(code) == 1 else None
    adds_to = adds[1] if adds is not None and adds[1] not in _NAME.findall(adds[2]) else None
    if any(_sets_anew(line, read, shaped, tensors)
           and not _adds_alike(STRING_OR_COMMENT.sub(b"", line).strip(), adds_to, read)
           for line in between):
        return True
    # An item update (`out[i] += n;`) with its index stepped between the copies (`i++;`,
    # `++i;`, `advance(&i);`, `i, j = j, i`) updates another item each time: both wanted. A
    # line that only reads the index (`int b = out[i] * 2;`) leaves it as it was: not asked.
    item = _SETS_ITEM.match(code[0]) if len(code) == 1 else None
    if item is not None:
        index = set(_NAME.findall(b"".join(re.findall(rb"\[([^\[\]]*)\]", item[0]))))
        if any(_steps_index(STRING_OR_COMMENT.sub(b"", line), index, lines)
               for line in between):
            return True
    target = in_place
    if target is None or target[2] not in _RESETS:
        return False
    # An update that resets its target whatever it held (`out.zero_()`, `out.fill_(0)`) is
    # made for the use after it: with a line between the copies that names the target
    # (`accumulate(out, a)`, `save(out)`), each reset serves another use, and both are wanted.
    # (One that adds to what the target holds, `y.add_(bias)`, done twice is done twice,
    # whatever reads y between.)
    uses = re.compile(rb"(?<![\w.])" + re.escape(target[1]) + rb"(?!\w)")
    return any(uses.search(STRING_OR_COMMENT.sub(b"", line)) for line in between)


def _mends_only(body: list[bytes]) -> bool:
    """Whether each statement of `body` (an `if`'s, strings and comments out) sets a name anew
    from itself through steps that, made again, change nothing (`x = x.contiguous()`): made
    under a test of another answer, it mends; it does no work twice."""
    statements = [line.strip().rstrip(b";").rstrip() for line in body
                  if line.strip(b" \t\n{};")]
    for code in statements:
        set_at = _SETS_NAME.match(code)
        if set_at is None or set_at[0].rstrip()[-2:-1] in b"-+*/%&|^<>:" or \
                not _keeps_value(set_at[1], code[set_at.end():].strip(),
                                 _SAME_VALUE - _STEPS_AGAIN_THE_SAME):
            return False
    return bool(statements)


def _serves_a_use_between(path: str, current: bytes, result: bytes, run: bytes,
                          upstreams: set[int] | None = None) -> bool:
    """Whether `run` is one statement that done again at once changes nothing (a barrier,
    `__syncthreads();`; a name set from itself through steps that keep it so,
    `y = y.contiguous()`) and a line between the fix's copy and upstream's nearest in `result`
    uses what it made (any statement, for a barrier; a line naming `y`): then each copy serves
    another use, the fix's before `out = launch(y)`, upstream's after it, and both are wanted.
    Deleting the fix's copy would hand the use between what the fix made ready; keeping both
    does nothing twice. Asked only of a doubling found."""
    _, own, theirs = _copies_of(path, current, result, run, upstreams)
    if own is None or theirs is None:
        return False
    lines = result.split(b"\n")
    written = _written(lines, own, run)
    if len(written) != 1:
        return False
    code = STRING_OR_COMMENT.sub(b"", written[0]).strip().rstrip(b";").rstrip()
    low, high = sorted((own, theirs))
    between = [STRING_OR_COMMENT.sub(b"", line).strip()
               for line in lines[low:high - 1]]
    barrier = _BARRIER.fullmatch(code)
    if barrier is not None:
        # (A statement on every path between: at the copies' own level, no block's header
        # nor brace. One in a block some path skips, `if n:` + `x = c`, serves no use there,
        # and on that path the two wait at once.)
        level = min(_indent(lines[own - 1]), _indent(lines[theirs - 1]))
        return any(line.strip(b"{}; ") and _indent(raw) == level and
                   _STEP_BOUNDARY.match(line) is None and not line.endswith((b":", b"{"))
                   for raw, line in zip(lines[low:high - 1], between))
    set_at = _SETS_NAME.match(code)
    if set_at is None or set_at[0].rstrip()[-2:-1] in b"-+*/%&|^<>:" or \
            not _keeps_value(set_at[1], code[set_at.end():].strip(),
                             _SAME_VALUE - _STEPS_AGAIN_THE_SAME):
        return False
    uses = re.compile(rb"(?<![\w.])" + re.escape(set_at[1]) + rb"(?!\w)")
    return any(uses.search(line) for line in between)


# A call that only waits for, or orders, what runs around it: a barrier, a fence, a
# synchronize (`__syncthreads();`, `__syncwarp(mask);`, `torch.cuda.synchronize()`,
# `hipDeviceSynchronize()`, `dist.barrier()`). Made twice at once it waits once more.
_BARRIER = on_first_use(
    rb"(?:[A-Za-z_]\w*\s*(?:\.|::)\s*)*(?:__sync\w*|sync|\w*[Ss]ynchronize|\w*[Bb]arrier\w*"
    rb"|\w*threadfence\w*)\s*\([^()]*\)")
# The steps of _SAME_VALUE that, made again on what they made, change nothing: a layout made
# contiguous, an element type or device set, a view of a shape given. (Not a transpose or
# `unsqueeze(0)`, nor `squeeze(0)`: made again, they change the value again.)
_STEPS_AGAIN_THE_SAME = frozenset((
    b"contiguous", b"to", b"float", b"half", b"double", b"bfloat16", b"cuda", b"cpu", b"clone",
    b"detach", b"view", b"view_as", b"reshape", b"reshape_as", b"flatten", b"ravel", b"type",
    b"type_as", b"pin_memory", b"data"))


def _transposes_keeping(line: bytes, name: bytes) -> frozenset[bytes]:
    """The transposing steps that keep what the check on `line` reads of `name`'s sizes.
    One reading the whole shape in any order (`if 0 in x.shape:`, `min(x.shape) == 0`,
    `x.shape == (0, 0)`) is kept by any transpose or permutation: they reorder the sizes, the
    set stays. One reading sizes 0 and 1 alike, reading the same with the two swapped
    (`x.size(0) == 0 or x.size(1) == 0`, `x.shape[0] * x.shape[1] == 0`,
    `x.size(0) == x.size(1)`), is kept by the 2-D transposes `x.T`, `x.t()`. Those steps between two copies of such a check
    leave it the same check twice. A view or a reshape gives other sizes: never kept; so is
    any other read of `name` on the line (an item, a stride, `x.size(0) == 0` alone)."""
    text = line.strip()
    for word in (b"if ", b"elif ", b"while ", b"assert "):
        if text.startswith(word):
            text = text[len(word):]
            break
    try:
        tree = ast.parse(text.rstrip(b":").decode(), mode="eval").body
    except (SyntaxError, UnicodeDecodeError, ValueError):
        return frozenset()
    target = name.decode()
    seen: set[str] = set()

    def sizes(node: ast.AST) -> int | str | None:
        """Which size `node` reads of target: an index, "whole", or None (not a size read)."""
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) \
                and sizes(node.value) == "whole" and type(node.slice.value) is int:
            return node.slice.value
        if isinstance(node, ast.Call) and not node.keywords and isinstance(node.func, ast.Attribute) \
                and node.func.attr == "size" and _is_name(node.func.value, target):
            if not node.args:
                return "whole"
            first = node.args[0]
            if len(node.args) == 1 and isinstance(first, ast.Constant) and type(first.value) is int:
                return first.value
            return None
        if isinstance(node, ast.Attribute) and node.attr == "shape" and _is_name(node.value, target):
            return "whole"
        return None

    def form(node: object, swap: bool) -> str:
        """`node` written so that `or`, `and`, `*` and `+` read in any order are one form;
        with `swap`, sizes 0 and 1 of target trade places."""
        if isinstance(node, ast.Compare) and all(isinstance(op, (ast.In, ast.NotIn)) for op in node.ops) \
                and len(node.comparators) == 1 and sizes(node.comparators[0]) == "whole":
            seen.add("whole")
            return f"in({type(node.ops[0]).__name__},{form(node.left, swap)})"
        if isinstance(node, ast.Compare) and len(node.ops) == 1 \
                and isinstance(node.ops[0], (ast.Eq, ast.NotEq)):
            sides = (node.left, node.comparators[0])
            listed = [side for side in sides if isinstance(side, (ast.Tuple, ast.List))]
            if listed and any(sizes(side) == "whole" for side in sides):
                # The whole shape against sizes written out (`x.shape == (0, 0)`): the same
                # answer in any order only where every size written is the same.
                items = [form(item, swap) for item in listed[0].elts]
                seen.add("whole" if len(set(items)) == 1 else "other")
                return f"shape({type(node.ops[0]).__name__},{items[0] if items else ''})"
            # `a == b` reads as `b == a`: sizes 0 and 1 compared (`x.size(0) == x.size(1)`)
            # read the same swapped.
            return f"{type(node.ops[0]).__name__}({','.join(sorted(form(v, swap) for v in sides))})"
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id in _ORDER_FREE and len(node.args) == 1 and not node.keywords \
                and sizes(node.args[0]) == "whole":
            # A function of the sizes in any order (`min(x.shape)`, `len(x.shape)`).
            seen.add("whole")
            return f"{node.func.id}(whole)"
        if isinstance(node, ast.AST):
            read = sizes(node)
            if isinstance(read, int):
                seen.add(str(read))
                return f"size({1 - read if swap and read in (0, 1) else read})"
            if read == "whole" or _is_name(node, target):
                seen.add("other")
                return "other"
        if isinstance(node, ast.BoolOp):
            return f"{type(node.op).__name__}({','.join(sorted(form(v, swap) for v in node.values))})"
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Mult, ast.Add)):
            terms: list[ast.expr] = []
            stack: list[ast.expr] = [node]
            while stack:
                part = stack.pop()
                if isinstance(part, ast.BinOp) and type(part.op) is type(node.op):
                    stack += (part.left, part.right)
                else:
                    terms.append(part)
            return f"{type(node.op).__name__}({','.join(sorted(form(t, swap) for t in terms))})"
        if isinstance(node, ast.AST):
            return type(node).__name__ + "(" + ",".join(
                f"{key}={form(value, swap)}" for key, value in ast.iter_fields(node)) + ")"
        if isinstance(node, list):
            return "[" + ",".join(form(item, swap) for item in node) + "]"
        return repr(node)

    same = form(tree, False) == form(tree, True)
    if not same or "other" in seen or not seen:
        return frozenset()
    if seen == {"whole"}:
        return _TRANSPOSES
    return _TWO_D_TRANSPOSES if seen - {"whole"} == {"0", "1"} else frozenset()


# The builtins whose answer for a shape is the same in any order of its sizes.
_ORDER_FREE = frozenset(("min", "max", "sum", "len", "sorted", "set", "frozenset", "any", "all"))


def _is_name(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name


# The names a run reads the layout or the kind of: `x.size(0)`, `x.shape[0]`, `x.stride(1)`,
# `x.is_contiguous()`, `x.dim()`, `x.dtype`, `x.is_cuda`, `x.requires_grad` (name, what is
# read: a key of _CHANGED_BY), `len(x)`, an item `x[0]`.
_READS_LAYOUT = on_first_use(
    rb"(?<![\w.])([A-Za-z_]\w*)\s*\.\s*(size|shape|stride|is_contiguous|dim|ndim|ndimension"
    rb"|storage_offset|dtype|is_floating_point|is_complex|is_signed|element_size|itemsize"
    rb"|device|is_cuda|is_cpu|get_device|is_pinned|requires_grad|is_leaf|grad_fn|grad)\b"
    rb"|\blen\s*\(\s*([A-Za-z_]\w*)\s*\)|(?<![\w.])([A-Za-z_]\w*)\s*\[")
# A name's attribute a run reads (`x.is_quantized`, not a method's call but one asking `is_`:
# `x.is_sparse()`): name, attribute.
_READS_ATTRIBUTE = on_first_use(
    rb"(?<![\w.])([A-Za-z_]\w*)\s*\.\s*(is_\w+|[A-Za-z_]\w*\b(?!\s*[(.\w]))")
# The names a run reads through a tensor's own accessors: its count, sizes, layout, kind.
_READS_TENSOR = on_first_use(
    rb"(?<![\w.])([A-Za-z_]\w*)\s*\.\s*(?:numel|nelement|size|shape|stride|is_contiguous|dim|ndim"
    rb"|ndimension|storage_offset|dtype|is_floating_point|element_size|itemsize|device|is_cuda"
    rb")\b")
# Tensor methods known to give another count or other sizes (a reduction, a selection, a
# repeat, a matrix product): a check on the count or sizes reads another answer after them.
_NEW_COUNT = frozenset((
    b"sum", b"mean", b"amax", b"amin", b"max", b"min", b"prod", b"norm", b"any", b"all",
    b"argmax", b"argmin", b"std", b"var", b"median", b"mode", b"logsumexp", b"nansum",
    b"count_nonzero", b"nonzero", b"unique", b"unique_consecutive", b"masked_select",
    b"index_select", b"narrow", b"gather", b"select", b"expand", b"expand_as", b"repeat",
    b"repeat_interleave", b"tile", b"unfold", b"diag", b"diagonal", b"topk", b"kthvalue",
    b"split", b"chunk", b"unbind", b"tensor_split", b"item", b"tolist", b"numel", b"size",
    b"new_empty", b"new_zeros", b"new_ones", b"new_full", b"new_tensor", b"as_strided",
    b"take", b"matmul", b"mm", b"bmm", b"mv", b"dot", b"outer", b"kron"))
# What an in-place update acts on and how: `out` and `zero_` of `out.zero_()`, `self.buf` and
# `add_` of `self.buf.add_(b)`.
# `y = y.to(...)` / `y = y.type(...)`, the whole value a conversion of the name it sets.
_CONVERTS_TO_KIND = on_first_use(
    rb"([A-Za-z_]\w*)\s*=\s*\1\s*\.\s*(?:to|type)\s*\((?:[^()]|\([^()]*\))*\)\s*;?$")
_IN_PLACE_TARGET = on_first_use(
    rb"([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)\.([A-Za-z]\w*[A-Za-z0-9]_)\s*\(")
# In-place updates (torch's) that set their target whatever it held: a reset, a fill, a copy
# into it, a random draw.
_RESETS = frozenset((b"zero_", b"fill_", b"copy_", b"normal_", b"uniform_", b"random_",
                     b"bernoulli_", b"set_"))


def _bodies_differ(path: str, current: bytes, result: bytes, run: bytes,
                   upstreams: set[int] | None = None) -> bool:
    """Whether `run`, a new block's header with the guard its body begins with (block_runs),
    heads a block in `result` at the fix's copy that names something upstream's nearest block
    of the same header and check does not: upstream's loop writes `z[j]` where the fix's adds
    to `y[j]`, another loop, both wanted. (The same names spelled another way, `y[j] += x[j]`
    and `y[j] = y[j] + w` after `w = x[j]`, are the fix's block made again, on either side:
    the fix's temporaries and the type words that declare them are its own spelling, not
    names upstream's block must hold.) Asked only of a doubling found."""
    _, own, theirs = _copies_of(path, current, result, run, upstreams)
    if own is None or theirs is None:
        return False
    lines = result.split(b"\n")
    mine, other = _block_code(lines, own - 1), _block_code(lines, theirs - 1)
    # A cast that may change the value (to an integer type: `(int)x[j]` truncates a float)
    # is the fix's own work where what it casts is declared a float above (`float* x`),
    # unless upstream's block casts to an integer too, however spelt
    # (`static_cast<int>(x[j])`, _cast_type). Of what is declared an integer (`int* x`) it
    # is spelling; of what is declared of a type not shown (a template's `T* x`), or nowhere
    # above, it may be either: a doubt, read as spelling (the doubling stops, both ways on).
    cast_to = {_cast_type(cast[0]) for line in other for cast in _VALUE_CASTS.finditer(line)}
    for line in mine[1:]:
        for cast in _VALUE_CASTS.finditer(line):
            if _cast_type(cast[0]) not in cast_to and \
                    _declared_kind(lines, own - 1, line[cast.end():]) == b"float":
                return True
    tokens = set(_TOKENS.findall(b"\n".join(other[1:])))  # (the header is the run's own)
    names = _names_in(mine) - _temporaries(lines, own - 1, mine, other, tokens) - _TYPE_WORDS
    return not names <= _names_in(other)


def _cast_type(cast: bytes) -> bytes:
    """What a cast (a _VALUE_CASTS match) makes of a float, its spelling aside: `bool` for a
    cast to bool (any non-zero is true), else `integer`: `(int)`, `static_cast<int64_t>`,
    `(unsigned long)` all drop the fraction, and where their widths could tell the values
    apart is not shown, so they count as one cast (the doubling stops, both ways on)."""
    return b"bool" if re.search(rb"\bbool\b", cast) else b"integer"


def _declared_kind(lines: list[bytes], at: int, cast: bytes) -> bytes | None:
    """What the name that `cast` (the code after a cast) starts with is declared as by the
    nearest declaration of it above line `at` (0-based) of `lines`, however far: b"integer"
    (an integer or a pointer to integers: `int* x`, `const int64_t* __restrict__ x`,
    `size_t x`), b"float" (`float* x`, `const double* x`, `half x`), or None (declared of
    another type, `T* x`, `scalar_t x`, `auto x`, or nowhere above)."""
    name = _NAME.match(cast.lstrip().lstrip(b"("))
    if name is None:
        return None
    # (A declaration starts a statement or a parameter: `x` of `s * x` is no `s` declared.)
    declared = re.compile(rb"(?:^|[(,;{])\s*(?:(?:const|volatile|static|constexpr|register"
                          rb"|unsigned|signed|struct)\s+)*([A-Za-z_][\w:]*)\s*[*&\s]\s*"
                          rb"(?:__restrict__\s*|const\s*|[*&]\s*)*"
                          + re.escape(name[0]) + rb"\b(?!\s*\()")
    for line in reversed(lines[:at]):
        if name[0] not in line:
            continue
        for found in reversed(list(declared.finditer(STRING_OR_COMMENT.sub(b"", line)))):
            word = found[1]
            if word in _NOT_TYPES:
                continue
            if _INTEGER_TYPE.fullmatch(word):
                return b"integer"
            return b"float" if _FLOAT_TYPE.fullmatch(word) else None
    return None


# The type words of an integer (`int`, `unsigned`, `int64_t`, `size_t`, `index_t`) and of a
# float (`float`, `double`, `half`, `__half`, `bfloat16`, `__hip_bfloat16`, `float16_t`).
_INTEGER_TYPE = on_first_use(rb"int|long|short|char|bool|size_t|ssize_t|u?int\d+_t|unsigned"
                             rb"|signed|index_t|ptrdiff_t")
_FLOAT_TYPE = on_first_use(rb"float|double|half|__half2?|_Float16|float\d+_t|bfloat16"
                           rb"|__\w*bfloat16\w*|bf16|fp16|fp32")


def _block_code(lines: list[bytes], at: int) -> list[bytes]:
    """The code of the block whose header is line `at` (0-based) of `lines`, its header with
    it, strings and comments taken out: to its closing brace where the header, or a lone `{`
    under it, opens one; else (Python) the lines set deeper than the header (at most 80)."""
    code = [STRING_OR_COMMENT.sub(b"", line) for line in lines[at:at + 80]]
    braced = _braced(code)
    depth = 0
    for k, text in enumerate(code):
        if braced:
            depth += text.count(b"{") - text.count(b"}")
            if k > 0 and depth <= 0:
                return code[:k + 1]
        elif k > 0 and text.strip() and _indent(lines[at + k]) <= _indent(lines[at]):
            return code[:k]
    return code


def _braced(code: list[bytes]) -> bool:
    """Whether the block headed by `code[0]` opens a brace, on its header or a lone `{` under it."""
    return code[0].rstrip().endswith(b"{") or (len(code) > 1 and code[1].strip() == b"{")


def _names_in(code: list[bytes]) -> set[bytes]:
    return {name for text in code for name in _NAME.findall(text)}


def _temporaries(lines: list[bytes], at: int, code: list[bytes], theirs: list[bytes],
                 other: set[bytes]) -> set[bytes]:
    """The names the block at line `at` (0-based) of `lines`, whose code is `code`
    (_block_code), sets and reads only within itself, with the type words declaring them:
    `w` and `float` of `float w = x[j];` (C's declaration in a braced block lives in that
    block), `w` of Python's `w = x[j]` where no other line of the function names `w`. A name
    only added to (`acc += x[j]`) or set by the function outside the block is not one, nor
    one holding a value with a token (a name, a constant, an operator) upstream's block
    (`other`, its _TOKENS) never writes: `w = -x[j]`, `w = x[j] * 0.5` against `y[j] += x[j]`
    is other work. A value of upstream's tokens is read as syntax trees where both blocks
    (`code`, `theirs`: _block_code) read as such (apply.valueforms): it is spelling where
    upstream's block writes that value (`w = s * x[j] - t` against `y[j] += x[j] * s - t`,
    the product in another order) or does the work of each line reading it, else other work
    (`w = x[j] - s` against `y[j] += s - x[j]`). Where a line of either is not read, a value
    of upstream's tokens in any order stays spelling, and the doubling stops with both ways on
    rather than make the work twice."""
    found: set[bytes] = set()
    braced = _braced(code)
    outside: set[bytes] | None = None
    trees: tuple[BlockReading | None, BlockReading | None] | None = None
    for text in code[1:]:
        set_at = _SETS_NAME.match(text)
        if set_at is None or set_at[0].rstrip()[-2:-1] in b"-+*/%&|^<>:":
            continue
        missing = set(_TOKENS.findall(text[set_at.end():].rstrip().rstrip(b";"))) - other
        if missing - _SIGNS:
            continue
        if trees is None:
            trees = read_block(code[1:], braced), read_block(theirs[1:], braced)
        mine_read, theirs_read = trees
        if missing:
            # A sign upstream's block writes only in an update's `-=` or `+=` (`w = -x[j]` /
            # `y[j] += w` against `y[j] -= x[j]`): the trees say where it is the same work;
            # unread, or not shown the same, it is other work as before (it moves).
            if mine_read is None or theirs_read is None or \
                    not mine_read.shown_same(set_at[1].decode(), theirs_read):
                continue
        elif mine_read is not None and theirs_read is not None and \
                not mine_read.same_work(set_at[1].decode(), theirs_read):
            continue
        declared = _NAME.findall(text[:set_at.start(1)])
        if braced:
            if declared and not set(declared) & _NOT_TYPES:
                found.update(declared)
                found.add(set_at[1])
            continue
        if outside is None:
            outside = _names_in(_function_around(lines, at, len(code)))
        if set_at[1] not in outside:
            found.add(set_at[1])
    return found


# The signs of a value (`-x[j]`, `a - b`) that upstream's block may write only as an update's
# `-=` or `+=`.
_SIGNS = frozenset((b"-", b"+"))
# The tokens of a line of code: names, constants (`0.5f`), operators of more than one
# character whole (`**`, `+=`, `->`: `+=` holds no `+` of its own), any other character alone.
_TOKENS = on_first_use(
    rb"[A-Za-z_]\w*|\.?\d[\w.]*|\*\*=?|//=?|<<=?|>>=?|->|::|&&|\|\||[-+*/%&|^<>=!]=|\S")
# A cast to an integer type, C's or C++'s (`(int)x[j]`, `(unsigned long)`,
# `static_cast<int64_t>(`): it drops a float's fraction, another value.
_VALUE_CASTS = on_first_use(
    rb"\(\s*(?:(?:const|unsigned|signed)\s+)*(?:int|long|short|char|bool|size_t|u?int\d+_t"
    rb"|unsigned|signed)(?:\s+(?:int|long))*\s*\)(?=\s*[\w(])"
    rb"|\b(?:static|reinterpret)_cast\s*<\s*(?:(?:const|unsigned|signed)\s+)*(?:int|long|short"
    rb"|char|bool|size_t|u?int\d+_t|unsigned|signed)(?:\s+(?:int|long))*\s*>")
# C and C++'s own type words and qualifiers: a cast or a declaration spells the same work
# (`y[j] += (float)x[j];`), it names nothing another block must hold.
_TYPE_WORDS = frozenset((b"int", b"float", b"double", b"char", b"bool", b"long", b"short",
                         b"unsigned", b"signed", b"auto", b"const", b"constexpr", b"volatile",
                         b"register", b"static", b"void", b"size_t", b"int32_t", b"int64_t",
                         b"uint32_t", b"uint64_t", b"half", b"__half"))
# Words before a name that are not a declaration's type (`return x = ...` is not C).
_NOT_TYPES = frozenset((b"return", b"delete", b"throw", b"else", b"case", b"goto", b"co_return",
                        b"co_yield", b"yield", b"not", b"and", b"or", b"in", b"is", b"lambda"))


def _function_around(lines: list[bytes], at: int, size: int) -> list[bytes]:
    """The code of the Python function holding the block of `size` lines at line `at`
    (0-based) of `lines`, the block's own lines left out: from the nearest `def` above set
    less deep than the block's header to the next line set no deeper than that `def` (the
    whole file where no `def` holds it)."""
    top, depth = 0, -1
    for k in range(at - 1, -1, -1):
        text = lines[k].lstrip()
        if text.startswith((b"def ", b"async def ")) and _indent(lines[k]) < _indent(lines[at]):
            top, depth = k, _indent(lines[k])
            break
    end = len(lines)
    if depth >= 0:
        for k in range(at + size, len(lines)):
            if lines[k].strip() and _indent(lines[k]) <= depth:
                end = k
                break
    return [STRING_OR_COMMENT.sub(b"", line) for line in lines[top:at] + lines[at + size:end]]


def _written(lines: list[bytes], own: int, run: bytes) -> list[bytes]:
    """The fix's copy of `run` as written, from line `own` (1-based) of `lines` on: as many
    lines as make up the run's near text (near text glues words: `if(!ok)returnfalse;`)."""
    written, near = [], b""
    for line in lines[own - 1:]:
        written.append(line)
        near += b"".join(near_lines([line]))
        if len(near) >= len(run):
            break
    return written


def _on_two_paths(path: str, current: bytes, result: bytes, run: bytes,
                  upstreams: set[int] | None = None) -> bool:
    """Whether the fix's copy of `run` in `result` and upstream's nearest are on two paths of
    the function that never meet, read by indentation: the later copy inside another branch of
    the same statement (`else`, `elif`, `except`, `case`, `default`), or the earlier copy
    inside a branch (`if`, a loop's body, a handler, a case) that ends (`return`, `raise`,
    `throw`, `goto`; `continue` or `break` only where the later copy is further on in the same
    loop's body) before the later one. A guard, or any line, the fix adds in `if fast:` that
    returns, where upstream added it for the slow path lower down, runs once on each path: both
    are wanted, no doubling. Not another path: a `try:` body's or a loop's `else:` (it runs
    after the body), a branch that runs on into the other copy, a copy in a branch opened
    after the other, a branch that breaks out of its loop before the line after the loop.
    Asked only of a doubling found."""
    _, own, theirs = _copies_of(path, current, result, run, upstreams)
    if own is None or theirs is None:
        return False
    lines = result.split(b"\n")
    first, second = sorted((own - 1, theirs - 1))
    depth = _indent(lines[first])
    # The first copy's block closes before the second: the first line between them (the
    # second itself, at the latest) set less deep, not inside an open bracket.
    closing, last = None, first
    open_brackets = 0
    for k in range(first, second + 1):
        code = STRING_OR_COMMENT.sub(b"", lines[k]).strip()
        if not code:
            continue
        if k > first and open_brackets <= 0 and _indent(lines[k]) < depth:
            closing = k
            break
        if open_brackets <= 0 and _indent(lines[k]) == depth:
            last = k
        open_brackets += sum(code.count(c) for c in b"([{") - sum(code.count(c) for c in b")]}")
    if closing is None:
        return False  # (the second copy in the first's block: one path reaches both)
    head = lines[closing].lstrip().lstrip(b"}").lstrip()
    if _SIBLING.match(head) is not None and _inside(lines, closing, second) \
            and not (head.startswith(b"else") and _LOOP_OR_TRY.match(
                _head_of(lines, first, _indent(lines[closing]))) is not None):
        return True
    opener = _opener_above(lines, first, depth)
    if _BRANCH.match(opener) is None:
        return False  # (a `with` or `try` block runs on every path: one path still)
    ends = _ENDS_PATH.match(STRING_OR_COMMENT.sub(b"", lines[last]))
    if ends is None:
        return False
    if ends[0].strip() not in (b"continue", b"break"):
        return True
    # A loop's body that goes on to its next round, or out of the loop, ends in the loop,
    # whose path goes on: past the other copy where that is after the loop (a branch that
    # breaks out reaches the line after the loop), before it only where the other copy is
    # later in the same loop's body.
    loop = _loop_around(lines, first)
    if loop is not None and ends[0].strip() == b"break" and _in_loops_else(lines, loop, second):
        return True
    return (loop is not None and _LOOP_OR_TRY.match(opener) is None
            and not lines[loop].lstrip().lstrip(b"}").lstrip().startswith(b"switch")
            and _inside(lines, loop, second))


def _in_loops_else(lines: list[bytes], loop: int, at: int) -> bool:
    """Whether line `at` (0-based) of `lines` is in the `else:` of the loop whose head is line
    `loop`, and that loop's body never goes on to its next round (`continue`): the `else:`
    runs only where the loop ran out, so a body's path that breaks out never reaches it."""
    depth = _indent(lines[loop])
    for k in range(loop + 1, min(len(lines), loop + 400)):
        code = STRING_OR_COMMENT.sub(b"", lines[k]).strip()
        if not code:
            continue
        if _indent(lines[k]) <= depth:
            return _indent(lines[k]) == depth and re.match(rb"else\s*:", code) is not None \
                and _inside(lines, k, at)
        if re.match(rb"continue\b", code):
            return False
    return False


def _upstreams_on_fewer_paths(path: str, current: bytes, result: bytes, run: bytes,
                              upstreams: set[int] | None = None) -> bool:
    """Whether upstream's nearest copy of `run` in `result` runs on only some of the paths
    through the fix's copy: a block that holds upstream's copy and not the fix's is one only
    some paths run (an `if`'s or `else`'s branch, a loop's body, a handler, a case), read by
    indentation from upstream's copy outwards up to the first block holding both. Upstream's
    in an `if fast:` that runs on, the fix's after it (or the fix's first and upstream's in a
    later branch): the paths past the branch run the fix's copy alone. A `with` or `try:` body
    and a `finally:` run on every path; a loop's or a `try:`'s `else:` runs after the body on
    its path, so one holding upstream's copy where the body holds the fix's is one path (a
    body that breaks out is _on_two_paths'). Asked only of a doubling found."""
    _, own, theirs = _copies_of(path, current, result, run, upstreams)
    if own is None or theirs is None:
        return False
    lines = result.split(b"\n")
    mine, at = own - 1, theirs - 1
    while True:
        opener = _opener_at(lines, at)
        if opener is None or _inside(lines, opener, mine):
            return False
        head = STRING_OR_COMMENT.sub(b"", lines[opener]).strip().lstrip(b"}").lstrip()
        if head == b"{":
            # (Allman's style: the block's header is the code line above its lone `{`.)
            above = _code_line_above(lines, opener)
            if above is None or _indent(lines[above]) != _indent(lines[opener]):
                return False
            opener = above
            if _inside(lines, opener, mine):
                return False
            head = STRING_OR_COMMENT.sub(b"", lines[opener]).strip().lstrip(b"}").lstrip()
        if head.startswith((b"def ", b"async def ", b"class ")):
            return False
        if _BRANCH.match(head) is not None and not (
                head.startswith(b"else") and _else_after_body_of(lines, opener, mine)):
            return True
        at = opener


def _read_in_a_branch(path: str, current: bytes, result: bytes, run: bytes,
                      upstreams: set[int] | None = None) -> bool:
    """Whether the fix's copy of `run` (a short statement) in `result` and upstream's nearest
    stand at one indentation with steps between (_steps_between) of which an `if` reads what
    the statement names on the paths through its body only (`if a:` + `b = clip(y)`). Asked
    only of a doubling found."""
    _, own, theirs = _copies_of(path, current, result, run, upstreams)
    if own is None or theirs is None:
        return False
    lines = result.split(b"\n")
    written = _written(lines, own, run)
    mine = lines[own - 1]
    indent = mine[:len(mine) - len(mine.lstrip(b" \t"))]
    if len(written) != 1 or not lines[theirs - 1].startswith(indent) or \
            lines[theirs - 1][len(indent):len(indent) + 1] in (b" ", b"\t"):
        return False
    statement = STRING_OR_COMMENT.sub(b"", written[0]).strip()
    adds = re.fullmatch(rb"([A-Za-z_]\w*)\s*[-+]=(?!=)(.*?);?", statement)
    adds_to = adds[1] if adds is not None and adds[1] not in _NAME.findall(adds[2]) else None
    between = range(own, theirs - 1) if own < theirs else range(theirs, own - 1)
    return _steps_between(lines, between, indent, set(_NAME.findall(statement)),
                          _language(path) == "c", adds_to) == _READ_ON_SOME_PATHS


def _upstreams_past_a_leaving_block(path: str, current: bytes, result: bytes, run: bytes,
                                    upstreams: set[int] | None = None) -> bool:
    """Whether upstream's nearest copy of `run` (a short statement) in `result` is below the
    fix's, at its indentation, with steps between (_steps_between, whatever they name) of
    which a block leaves (`if a:` + `return b`, `if (n) { return; }`, a `continue` in an `if`
    of the copies' loop body), or inside a branch of an if/else or a `try:` body
    (_in_the_branch_going_on): the paths that leave, or go through another branch, run the
    fix's copy alone. Asked only of a doubling found."""
    _, own, theirs = _copies_of(path, current, result, run, upstreams)
    if own is None or theirs is None or theirs < own:
        return False
    lines = result.split(b"\n")
    mine = lines[own - 1]
    indent = mine[:len(mine) - len(mine.lstrip(b" \t"))]
    braced = _language(path) == "c"
    between = range(own - 1 + len(_written(lines, own, run)), theirs - 1)
    if not lines[theirs - 1].startswith(indent):
        return False
    if lines[theirs - 1][len(indent):len(indent) + 1] in (b" ", b"\t"):
        return _in_the_branch_going_on(lines, theirs - 1, between, indent, set(), braced)
    return _steps_between(lines, between, indent, set(), braced) == _SOME_PATHS


def _upstreams_each_round(path: str, current: bytes, result: bytes, run: bytes,
                          upstreams: set[int] | None = None) -> bool:
    """Whether upstream's nearest copy of `run` in `result` is inside a loop's body the fix's
    copy is outside of, a body that never leaves the loop (no `break`, `return`, `raise`,
    `throw` nor `goto` in it): upstream's copy runs each round (on the rounds its branches
    take), the fix's once. Read by indentation, as _upstreams_on_fewer_paths reads it. (A body
    that may leave runs a copy before the exit at most once: not asked here.)"""
    _, own, theirs = _copies_of(path, current, result, run, upstreams)
    if own is None or theirs is None:
        return False
    return _each_round(result.split(b"\n"), theirs - 1, own - 1)


def _fixs_each_round(path: str, current: bytes, result: bytes, run: bytes,
                     upstreams: set[int] | None = None) -> bool:
    """_upstreams_each_round's mirror: whether the fix's copy of `run` in `result` is inside
    a loop's body that never leaves the loop, and upstream's nearest copy outside it."""
    _, own, theirs = _copies_of(path, current, result, run, upstreams)
    if own is None or theirs is None:
        return False
    return _each_round(result.split(b"\n"), own - 1, theirs - 1)


def _read_between(path: str, current: bytes, result: bytes, run: bytes,
                  upstreams: set[int] | None = None) -> str | None:
    """Whether `run` is one statement setting a name (`x = x + n`, `n += 1`, `n++;`) or
    updating a target in place (`y.add_(b)`), and a loop between the fix's copy in `result` and
    upstream's nearest reads that name, in its header or its body: the loop sees another value
    with each copy; "loop" then, or "switch" where the only such block is a C `switch` (its
    cases are no rounds, and the stop says so). (A single line between reading it, `log(y)`,
    is not asked: deleting the fix's copy there is the way on that stop has advised.)"""
    _, own, theirs = _copies_of(path, current, result, run, upstreams)
    if own is None or theirs is None:
        return None
    lines = result.split(b"\n")
    written = _written(lines, own, run)
    if len(written) != 1:
        return None
    code = STRING_OR_COMMENT.sub(b"", written[0]).strip()
    set_at = _SETS_NAME.match(code) or _SETS_ITEM.match(code)
    target = set_at[1] if set_at is not None else None
    if target is None:
        in_place = _IN_PLACE_TARGET.match(code)
        stepped = _STEPS_NAME.fullmatch(code)  # (`y++;`)
        target = in_place[1] if in_place is not None else \
            stepped[1] or stepped[2] if stepped is not None else None
    if target is None:
        return None
    low, high = sorted((own, theirs))
    between = [STRING_OR_COMMENT.sub(b"", line) for line in lines[low - 1 + len(written):high - 1]]
    uses = re.compile(rb"(?<![\w.])" + re.escape(target) + rb"(?!\w)")
    found = None
    for k, line in enumerate(between):
        head = _LOOP.match(line.strip().lstrip(b"}").lstrip())
        if head is None or not any(uses.search(later) for later in between[k:]):
            continue
        if head[0] != b"switch":
            return "loop"
        found = "switch"
    return found


def _each_round(lines: list[bytes], at: int, mine: int) -> bool:
    """Whether line `at` (0-based) of `lines` is inside a loop's body that line `mine` is
    outside of, a body that never leaves the loop (_upstreams_each_round)."""
    while True:
        opener = _opener_at(lines, at)
        if opener is None or _inside(lines, opener, mine):
            return False
        head = STRING_OR_COMMENT.sub(b"", lines[opener]).strip().lstrip(b"}").lstrip()
        if head == b"{":
            above = _code_line_above(lines, opener)
            if above is None or _inside(lines, above, mine):
                return False
            opener = above
            head = STRING_OR_COMMENT.sub(b"", lines[opener]).strip().lstrip(b"}").lstrip()
        if head.startswith((b"def ", b"async def ", b"class ")):
            return False
        if re.match(rb"(?:for|while|do)\b", head) is not None:
            depth = _indent(lines[opener])
            body = itertools.takewhile(
                lambda text: not STRING_OR_COMMENT.sub(b"", text).strip().lstrip(b"}")
                or _indent(text) > depth, lines[opener + 1:opener + 400])
            return not any(re.match(rb"\s*(?:return|raise|break|throw|goto)\b",
                                    STRING_OR_COMMENT.sub(b"", text)) for text in body)
        at = opener


def _code_line_above(lines: list[bytes], at: int) -> int | None:
    """The nearest line (0-based) above line `at` holding code, within four lines: the header
    of a block whose `{` stands alone on line `at` (Allman's style)."""
    return next((k for k in range(at - 1, max(at - 5, -1), -1)
                 if STRING_OR_COMMENT.sub(b"", lines[k]).strip()), None)


def _opener_at(lines: list[bytes], at: int) -> int | None:
    """The line (0-based) of the nearest code line above line `at` of `lines` set less deep
    than it (not a bracket's closing line): the head of the block holding it (None where none
    is within 400 lines)."""
    depth = _indent(lines[at])
    for k in range(at - 1, max(at - 400, -1), -1):
        code = STRING_OR_COMMENT.sub(b"", lines[k]).strip()
        if code and _indent(lines[k]) < depth and not code.startswith((b")", b"]")):
            return k
    return None


def _else_after_body_of(lines: list[bytes], opened: int, at: int) -> bool:
    """Whether the `else:` at line `opened` (0-based) of `lines` is a loop's or a `try:`'s
    whose body holds line `at`: it runs after that body on its path."""
    depth = _indent(lines[opened])
    head = None
    for k in range(opened - 1, max(opened - 400, -1), -1):
        code = STRING_OR_COMMENT.sub(b"", lines[k]).strip().lstrip(b"}").lstrip()
        if not code or _indent(lines[k]) > depth:
            continue
        if _indent(lines[k]) < depth or not code.startswith((b"except", b"catch")):
            head = k if _indent(lines[k]) == depth else None
            break
    return head is not None and _LOOP_OR_TRY.match(
        STRING_OR_COMMENT.sub(b"", lines[head]).strip().lstrip(b"}").lstrip()) is not None \
        and _inside(lines, head, at)


def _guard_at_fix(path: str, current: bytes, result: bytes, run: bytes) -> bool:
    """Whether the fix's copy of `run` in `result` is one whole guard (neartext.is_guard):
    a check that, made a second time on a path, changes nothing."""
    _, own, _ = _copies_of(path, current, result, run)
    return own is not None and is_guard(_written(result.split(b"\n"), own, run))


def _in_a_loop_apart(path: str, current: bytes, result: bytes, run: bytes,
                     upstreams: set[int] | None = None) -> bool:
    """Whether one of the fix's copy of `run` and upstream's nearest in `result` is in a loop
    (`for`, `while`, `do`) the other is not in: a short statement or an in-place update there
    runs once a round, the other's once (or in another loop, `n += 1` counting each,
    `y.add_(b)` adding in each): each its own, both wanted. Asked only of a short statement's
    or an in-place update's doubling found (short_runs, in_place_runs)."""
    _, own, theirs = _copies_of(path, current, result, run, upstreams)
    if own is None or theirs is None:
        return False
    lines = result.split(b"\n")
    for one, other in ((own - 1, theirs - 1), (theirs - 1, own - 1)):
        loop = _loop_around(lines, one)
        leaves = _leaves_right_after(lines, one)
        if leaves is not None and leaves != b"break":
            # (Its branch leaves the function right after it: it runs once a call, as the
            # other's does; no loop makes it each round's.)
            continue
        if leaves == b"break" and loop is not None and not _is_switch(lines[loop]):
            # Its branch breaks out right after it: it runs once each time the loop is
            # entered, as upstream's before a `break` reads to _upstreams_on_fewer_paths;
            # only a loop around that one makes it a round's own.
            loop = _loop_around(lines, loop)
        if loop is not None and not _is_switch(lines[loop]) \
                and (other < loop or not _inside(lines, loop, other)):
            return True
    return False


def _is_switch(line: bytes) -> bool:
    """Whether `line` opens a `switch` (a `break` in it leaves the switch, not a loop)."""
    return line.lstrip().lstrip(b"}").lstrip().startswith(b"switch")


def _leaves_right_after(lines: list[bytes], at: int) -> bytes | None:
    """The statement (`break`, `return`, `raise`, `throw`, `goto`) that leaves, without a
    condition, the block holding line `at` (0-based) of `lines` after it: a code line set
    as deep as it further down in its block (None where none does)."""
    depth = _indent(lines[at])
    for k in range(at + 1, min(at + 400, len(lines))):
        code = STRING_OR_COMMENT.sub(b"", lines[k]).strip()
        if not code:
            continue
        if _indent(lines[k]) < depth or code.startswith(b"}"):
            return None
        left = re.match(rb"(break|return|raise|throw|goto)\b", code)
        if _indent(lines[k]) == depth and left is not None:
            return left.group(1)
    return None


def _loop_around(lines: list[bytes], at: int) -> int | None:
    """The line (0-based) of the innermost loop (`for`, `while`, `do`) or `switch` holding
    line `at` of `lines`, what a `break` there leaves, read by indentation (None where none
    holds it)."""
    depth = _indent(lines[at])
    for k in range(at - 1, max(at - 400, -1), -1):
        code = STRING_OR_COMMENT.sub(b"", lines[k]).strip()
        if not code or _indent(lines[k]) >= depth:
            continue
        depth = _indent(lines[k])
        if _LOOP.match(code.lstrip(b"}").lstrip()) is not None:
            return k
        if depth == 0:
            return None
    return None


def _inside(lines: list[bytes], opened: int, at: int) -> bool:
    """Whether line `at` (0-based) of `lines` is inside the block line `opened` opens: set
    deeper, with no code line between them set as shallow as `opened` (another branch's head,
    a statement after the block)."""
    depth = _indent(lines[opened])
    if _indent(lines[at]) <= depth:
        return False
    return not any(STRING_OR_COMMENT.sub(b"", lines[k]).strip() and _indent(lines[k]) <= depth
                   for k in range(opened + 1, at))


def _head_of(lines: list[bytes], at: int, depth: int) -> bytes:
    """The nearest code line above line `at` (0-based) of `lines` set at `depth` exactly or
    less deep, stripped, a closing brace before it taken off: the head of the statement
    whose branch holds line `at`."""
    for k in range(at - 1, max(at - 400, -1), -1):
        code = STRING_OR_COMMENT.sub(b"", lines[k]).strip()
        if code and _indent(lines[k]) <= depth and not code.startswith((b")", b"]")):
            return code.lstrip(b"}").lstrip()
    return b""


def _indent(line: bytes) -> int:
    """How deep `line` is set: its leading spaces, a tab as eight."""
    text = line.expandtabs(8)
    return len(text) - len(text.lstrip(b" "))


def _opener_above(lines: list[bytes], at: int, depth: int, lowest: int = -1) -> bytes:
    """The nearest code line above line `at` (0-based) of `lines` set less deep than `depth`,
    not below line `lowest`, stripped, a closing brace before it taken off (b"" where none)."""
    for k in range(at - 1, max(lowest, at - 400, -1), -1):
        code = STRING_OR_COMMENT.sub(b"", lines[k]).strip()
        if code and _indent(lines[k]) < depth and not code.startswith((b")", b"]")):
            return code.lstrip(b"}").lstrip()
    return b""


# A block only some paths run: a branch, a loop's body, a handler, a case.
_BRANCH = on_first_use(rb"(?:if|elif|else|for|while|except|catch|case|default|switch|match)\b")
# The head of another branch of the same statement.
_SIBLING = on_first_use(rb"(?:elif|else|except|catch|case|default)\b")
# A statement whose `else:` runs after its body, on the body's path.
_LOOP_OR_TRY = on_first_use(rb"(?:for|while|try)\b")
# A loop's head, or a switch's (what a `break` leaves).
_LOOP = on_first_use(rb"(?:for|while|do|switch)\b")
# A statement after which the path goes on elsewhere.
_ENDS_PATH = on_first_use(rb"\s*(?:return|raise|continue|break|throw|goto)\b")


def _items_of_two_brackets(path: str, current: bytes, result: bytes, run: bytes,
                           upstreams: set[int] | None = None) -> bool:
    """Whether `run` is an item of a list, dict or call (it ends with a comma, or a closing
    bracket follows it) and the fix's copy in `result` and upstream's nearest are inside two
    different brackets: the same keyword argument passed to two calls
    (`stream=torch.cuda.current_stream(),` in launch_a's and in launch_b's) is two items,
    both wanted: no doubling. Asked only of a doubling found."""
    _, own, theirs = _copies_of(path, current, result, run, upstreams)
    if own is None or theirs is None:
        return False
    lines = result.split(b"\n")
    written, near = 0, b""
    for line in lines[own - 1:]:
        written += 1
        near += b"".join(near_lines([line]))
        if len(near) >= len(run):
            break
    after = lines[own - 1 + written].lstrip() if own - 1 + written < len(lines) else b""
    if not (run.endswith(b",") or after.startswith((b")", b"]", b"}"))):
        return False
    if run.endswith((b":", b";", b"{", b"(", b"[")):
        return False
    mine, other = _bracket_opened_above(lines, own - 1), _bracket_opened_above(lines, theirs - 1)
    if mine is None or other is None or mine == other:
        return False
    # A bracket that unpacks a name (`**opts`, `*args`) may be fed by the other copy
    # (`opts = dict(stream=...)` above, passed as `**opts`): the same argument twice, which
    # Python refuses at run time; only a bracket that unpacks nothing is an item of its own.
    return not _UNPACKS.search(_bracket_text(lines, mine))


# An item that unpacks a name into a call or a literal: `**opts,`, `*args`.
_UNPACKS = on_first_use(rb"(?m)(?:^|[(\[{,])\s*\*{1,2}\s*[A-Za-z_]")


# A quoted string (`"gfx1201"`, `'gfx1201'`).
_QUOTED = rb"(?:\"[^\"\\\n]*\"|'[^'\\\n]*')"
# A line of quoted items: one or more quoted strings, a comma between each and one after the
# last or none (`"gfx1201",`, `"gfx1201", "gfx1200",`), and a comment after them where one is
# (`"gfx1201",  # RDNA4`: the items are the same). A line holding anything else (a name, a
# call, `"a" if x else "b"`, a dict's `"k": "v"`) holds no item read here.
_STRING_ITEMS = on_first_use(rb"\s*(" + _QUOTED + rb"(?:\s*,\s*" + _QUOTED
                             + rb")*)\s*,?\s*(?:(?:#|//)[^\n]*)?")
_ONE_QUOTED = on_first_use(_QUOTED)


def _item_twice_in_its_bracket(current: bytes, result: bytes, made: bytes,
                               base: bytes | None = None) -> tuple[int, int, str] | None:
    """Where (the fix's line, upstream's: 1-based lines of `result`, and what tells the two
    copies apart, _maybe_its_value's or _beside_others', or "") a quoted string the fix
    adds as an item of a list, set or dict literal (`"gfx1201",`) is there twice in the same
    bracket of `result`, where the file the fix made (`made`) held it once in its bracket:
    upstream added the item itself at another place of the list (its head, in order). Short,
    it is no run the near check reads, and the list held the item twice, exit 0. Items are
    compared by their value (`"gfx1201"` is `'gfx1201'`), wherever each stands on a line of
    quoted items (`"gfx1201", "gfx1200",` holds `"gfx1201"` as `"gfx1201",` alone does), and
    only items of the bracket itself (one in a call's arguments inside the list is the
    call's). An item standing alone (_alone: a name or a flag of no value, `"-DFOO"`, and no
    option's value) is there twice however many the fix adds beside it (`"gfx1150",`
    `"gfx1201",` where upstream added `"gfx1201",`; `"-DFOO", "-DBAR",` where upstream added
    `"-DFOO",`); another option or an option's value only where every item the fix's lines
    hold in that bracket is there twice: a fix adding `"-D", "A=1",` where upstream added
    `"-D", "B=2",` adds another flag, both wanted, as `"-I", "inc",` beside `"-isystem",
    "inc",`. The value of an option documented to take one (`"-include", "csrc/extra.cu",`,
    _value_of) is another item than the same string after no such option. An item upstream
    added to another bracket is another list's, both wanted (None). `base`, the file the fix
    was made on, tells a copy upstream wrote in place of a base item (_in_a_base_items_place)."""
    fixs = _items_the_fix_adds(result, current)
    if not fixs:
        return None
    lines = result.split(b"\n")
    brackets: dict[int, None] = {}
    for at in fixs:
        opened = _bracket_opened_above(lines, at)
        if opened is not None:
            brackets.setdefault(opened)
    for opened in brackets:
        items = _bracket_items(lines, opened)
        keyed = _flat_pairs(items)
        pairs, alone, every = [], [], True
        for n, (at, value) in enumerate(items):
            if at not in fixs or value is None or not fixs[at][value]:
                continue
            # The value of an option documented to take the next argument (`"csrc/extra.cu"`
            # after `"-include"`) is not the item standing alone (a source to build): only a
            # copy after the same such option, or after none, is the same item. In a flat
            # list of pairs each a number's (_flat_pairs), a value is its key's: only a copy
            # after the same key is the same pair's.
            others = [m for m, (k, other) in enumerate(items)
                      if k not in fixs and other is not None and other == value
                      and _value_of(items, m) == _value_of(items, n)
                      and (not keyed or m % 2 == 0 or items[m - 1][1] == items[n - 1][1])]
            if not others or _items_in_bracket_made(made, value) > 1:
                every = False
                continue
            theirs = min(others, key=lambda m: abs(items[m][0] - at))
            found = (at + 1, items[theirs][0] + 1,
                     _maybe_its_value(lines, items, n, theirs, fixs, made)
                     or _in_a_base_items_place(lines, items, n, theirs, fixs, base)
                     or _beside_others(lines, items, n, theirs, fixs, made))
            pairs.append(found)
            if _alone(items, n, lambda o: fixs[items[n - 1][0]][o] > 0
                      if items[n - 1][0] in fixs else False) and \
                    _alone(items, theirs, lambda o: items[theirs - 1][0] not in fixs
                           and _upstream_adds(items, fixs, made, o)):
                alone.append(found)
        if pairs and every:
            return pairs[0]
        if alone:
            return alone[0]
    return None


def _beside_others(lines: list[bytes], items: list[tuple[int, object]], n: int,
                   theirs: int, fixs: dict[int, Counter], made: bytes) -> str:
    """What tells the lines of the fix's copy of an item (the `n`th of a bracket's `items`,
    _bracket_items) apart from those of upstream's copy (the `theirs`th), "" where nothing
    does: the fix's line holds other items than upstream's (`"gfx1150", "gfx1201",`, or the
    items of a line of the base it adds to), or the item next to the fix's copy on one side (the one before
    it, or after, on its line or the next) is one the fix adds (in `fixs`, the items of
    _items_the_fix_adds) and the item next to upstream's copy on that side is one upstream
    adds (_upstream_adds), the two differing (`"HIPCC", "hipcc",` against `"HIPCXX",
    "hipcc",`; a key made twice, `"HIPCC", "hipcc",` against `"HIPCC", "clang",`). Next to a base item (`"gfx950",
    "gfx1201",` upstream's, the fix's appended under its own `"gfx1150",`) upstream's copy is
    the fix's item made twice, and deleting the fix's line loses nothing: "". Said: the item,
    BESIDE_OTHERS, and each copy's lines, upstream's first."""
    at, upstreams = items[n][0], items[theirs][0]
    mine, other = {at}, {upstreams}
    for step in (-1, 1):
        m, t = n + step, theirs + step
        if not (0 <= m < len(items) and 0 <= t < len(items)):
            continue
        (near, value), (far, upstream_value) = items[m], items[t]
        if value is None or upstream_value is None or value == upstream_value:
            continue
        if near in fixs and fixs[near][value] and far not in fixs and \
                _upstream_adds(items, fixs, made, upstream_value):
            mine.add(near)
            other.add(far)
    on_line = [value for k, value in items if k == at]
    if mine == {at} and (len(on_line) == 1 or
                         on_line == [value for k, value in items if k == upstreams]):
        # Alone on its line, or on a line of upstream's very items: deleting it loses nothing.
        return ""

    return (f"{_item_written(lines, items, n)} {BESIDE_OTHERS} "
            f"(upstream's {_shown_items(lines, other)}; yours, {_shown_items(lines, mine)})")


def _shown_items(lines: list[bytes], held: set[int]) -> str:
    """The lines `held` (0-based) of `lines`, from the first to the last, as a stop says them:
    `lines 8-9: "HIPCC", "hipcc"`."""
    first, last = min(held) + 1, max(held) + 1
    where = f"line {first}" if first == last else f"lines {first}-{last}"
    return f"{where}: " + ", ".join(text for k in range(first - 1, last)
                                    for text in _items_written(lines[k]))


def _in_a_base_items_place(lines: list[bytes], items: list[tuple[int, object]], n: int,
                           theirs: int, fixs: dict[int, Counter], base: bytes | None) -> str:
    """What says upstream's copy of an item (the `theirs`th of a bracket's `items`,
    _bracket_items; the fix's is the `n`th) took the place of another item of the fix's base
    file `base`, one upstream took out of the list (`"CC", "clang",` made `"CC", "hipcc",`),
    where a new item of the fix's stands beside the fix's copy (next to it, or on its line:
    `"HIPCC", "hipcc",`); "" where it does not, or the base's bracket is not found (one line
    opens it, as in the result). In a list of pairs that is upstream giving a base key the
    fix's value, each value its key's and both wanted, and deleting the fix's copy (or taking
    it out of its line) would lose the fix's pair its value; in a list of names it is a base
    name renamed to the fix's, the same name twice. Nothing in the list tells which: the way
    that loses nothing, keep yours, comes first (_DOUBLED_WAYS). Said: the item, IN_PLACE_OF,
    the base's item, and each copy's lines with the item before it, upstream's first."""
    if base is None:
        return ""
    at, upstreams = items[n][0], items[theirs][0]
    beside = {items[m][0] for m in (n - 1, n + 1) if 0 <= m < len(items)
              and items[m][1] is not None and items[m][0] in fixs
              and fixs[items[m][0]][items[m][1]]}
    if not beside and not any(k == at and m != n and fixs[at][value]
                              for m, (k, value) in enumerate(items)):
        return ""
    opened = _bracket_opened_above(lines, at)
    if opened is None:
        return ""
    base_lines = base.split(b"\n")
    opening = [k for k, line in enumerate(base_lines) if line == lines[opened]]
    if len(opening) != 1:
        return ""
    base_items = _bracket_items(base_lines, opening[0])
    was = [j for j, (_, value) in enumerate(base_items) if value is not None]
    now = [m for m, (k, value) in enumerate(items) if value is not None and k not in fixs]
    if theirs not in now:
        return ""
    import difflib

    matcher = difflib.SequenceMatcher(None, [base_items[j][1] for j in was],
                                      [items[m][1] for m in now], autojunk=False)
    place = now.index(theirs)
    left = Counter(items[m][1] for m in now)
    before = Counter(base_items[j][1] for j in was)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag != "replace" or not j1 <= place < j2:
            continue
        # (A base item upstream took out of the list, not one it moved elsewhere in it.)
        gone = [was[i] for i in range(i1, i2)
                if left[base_items[was[i]][1]] < before[base_items[was[i]][1]]]
        if not gone:
            return ""
        other = {upstreams} | ({items[theirs - 1][0]} if theirs > 0 and
                               items[theirs - 1][1] is not None else set())
        return (f"{_item_written(lines, items, n)} {IN_PLACE_OF} "
                f"{_item_written(base_lines, base_items, gone[0])} "
                f"(upstream's {_shown_items(lines, other)}; "
                f"yours, {_shown_items(lines, {at} | beside)})")
    return ""


def _maybe_its_value(lines: list[bytes], items: list[tuple[int, object]], n: int,
                     theirs: int, fixs: dict[int, Counter], made: bytes) -> str:
    """What says upstream's copy of an item (the `theirs`th of a bracket's `items`,
    _bracket_items; the fix's is the `n`th) may be another item than the fix's: it follows an
    option upstream added with it of no known kind (neither _TAKES_NEXT nor _TAKES_NONE:
    `"--embed", "csrc/extra.cu",`), the fix's copy following not that option; "" where it
    does not. Said: the item, MAYBE_ITS_VALUE, and the option with its line."""
    if theirs == 0:
        return ""
    near, before = items[theirs - 1]
    if not _is_option(before) or _takes_next(items, theirs - 1) or \
            _TAKES_NONE.fullmatch(str(before)) is not None or near in fixs or \
            not _upstream_adds(items, fixs, made, before) or \
            n > 0 and items[n - 1][1] == before:
        return ""
    return (f"{_item_written(lines, items, n)} {MAYBE_ITS_VALUE} "
            f"({_item_written(lines, items, theirs - 1)}, line {near + 1})")


def _item_written(lines: list[bytes], items: list[tuple[int, object]], n: int) -> str:
    """The `n`th of a bracket's `items` (_bracket_items) as it is written (`"gfx1201"`)."""
    at = items[n][0]
    return _items_written(lines[at])[[m for m, (k, _) in enumerate(items) if k == at].index(n)]


def _upstream_adds(items: list[tuple[int, object]], fixs: dict[int, Counter], made: bytes,
                   value: object) -> bool:
    """Whether upstream adds an item `value` to a bracket of the result whose `items`
    (_bracket_items) stand on the lines `fixs` (_items_the_fix_adds) the fix changed or on
    upstream's: upstream's lines hold it more often than the base did (the file the fix made,
    `made`, but for the fix's own; counted high where a line of the fix's block keeps it)."""
    theirs = sum(1 for k, other in items if k not in fixs and other == value)
    fixs_own = sum(1 for k, other in items if k in fixs and other == value and fixs[k][value])
    return theirs > _items_in_bracket_made(made, value) - fixs_own


def _items_written(line: bytes) -> list[str]:
    """The items of a line of quoted items as they are written (`"gfx1201"`), [] for
    another line."""
    found = _STRING_ITEMS.fullmatch(line)
    return [quoted.decode("utf-8", "replace") for quoted in _ONE_QUOTED.findall(found[1])] \
        if found is not None else []


def _items_the_fix_adds(result: bytes, current: bytes) -> dict[int, Counter]:
    """Per line (0-based) of `result`, the file a fix made on upstream's `current`, that the
    fix changed and that is a line of quoted items: the items its block of changed lines adds,
    by a line diff of the two (those not on the lines of `current` it replaces: a line the fix
    makes `"gfx90a", "gfx942", "gfx1201",` out of `"gfx90a", "gfx942",` adds gfx1201 only)."""
    blocks = _changed_blocks(result, current,
                             lambda line: _STRING_ITEMS.fullmatch(line) is not None)
    if not blocks:
        return {}
    lines, theirs = result.split(b"\n"), current.split(b"\n")
    found: dict[int, Counter] = {}
    for mine, other in blocks:
        held = {k: _line_items(lines[k]) for k in mine}
        added = Counter(value for values in held.values() if values for value in values)
        added -= Counter(value for k in other for value in _line_items(theirs[k]) or ())
        found.update((k, added) for k, values in held.items() if values is not None)
    return found


def _changed_blocks(result: bytes, current: bytes,
                    wanted: Callable[[bytes], bool]) -> list[tuple[range, range]]:
    """The blocks of changed lines of `result`, a file a fix made on upstream's `current`, by
    a line diff of the two: (its lines, those of `current` they replace), 0-based; none where
    no changed line of `result` is `wanted` (the diff is paid only then)."""
    top, mine, other = _changed_span(result, current)
    if not any(wanted(line) for line in mine):
        return []
    if not other:
        return [(range(top, top + len(mine)), range(top, top))]
    return [(range(top + i1, top + i2), range(top + j1, top + j2))
            for i1, i2, j1, j2 in _changed_opcodes(result, current)]


@lru_cache(maxsize=4)
def _changed_span(result: bytes, current: bytes) -> tuple[int, tuple[bytes, ...],
                                                          tuple[bytes, ...]]:
    """The lines `result` and `current` differ in, once the lines both start and end with
    are set aside: (the first such line, 0-based; `result`'s lines there; `current`'s).
    Kept for the pairs asked again: the doubling check's item and key checks (`_doubled`)
    each ask it of the same result and upstream's file."""
    lines, theirs = result.split(b"\n"), current.split(b"\n")
    top, tail = same_ends(lines, theirs)
    return top, tuple(lines[top:len(lines) - tail]), tuple(theirs[top:len(theirs) - tail])


@lru_cache(maxsize=4)
def _changed_opcodes(result: bytes, current: bytes) -> tuple[tuple[int, int, int, int], ...]:
    """The line diff of `_changed_span`'s two runs of lines: (i1, i2, j1, j2) of each block
    that is not equal, relative to its first line. Kept as `_changed_span` is."""
    import difflib

    _, mine, other = _changed_span(result, current)
    matcher = difflib.SequenceMatcher(None, mine, other, autojunk=len(mine) + len(other) > 4000)
    sampled_blocks(matcher)  # its blocks, found by sampling, kept for get_opcodes
    return tuple((i1, i2, j1, j2) for tag, i1, i2, j1, j2 in matcher.get_opcodes()
                 if tag != "equal")


def _line_items(line: bytes) -> list[object] | None:
    """The values of the items of a line of quoted items (`"gfx1201", 'gfx1200',`: gfx1201,
    gfx1200), in order; None for another line."""
    found = _STRING_ITEMS.fullmatch(line)
    if found is None:
        return None
    values: list[object] = []
    for quoted in _ONE_QUOTED.findall(found[1]):
        try:
            values.append(ast.literal_eval(quoted.decode()))
        except (ValueError, SyntaxError, UnicodeDecodeError, MemoryError, RecursionError):
            values.append(quoted)
    return values


def _bracket_items(lines: list[bytes], opened: int) -> list[tuple[int, object]]:
    """The items of the bracket left open at line `opened` (0-based) of `lines`, in order:
    (its line, its value) for each item of a line of quoted items, (the line, None) for a line
    of other code (no item; an item after it follows no option). The lines of a bracket inside
    it (a call's arguments, a nested list) are that bracket's: its opening line is other code."""
    found: list[tuple[int, object]] = []
    depth = 0
    for k in _bracket_lines(lines, opened)[1:]:
        code = STRING_OR_COMMENT.sub(b"", lines[k])
        if depth == 0:
            values = _line_items(lines[k])
            if values is not None:
                found.extend((k, value) for value in values)
            elif code.strip():
                found.append((k, None))
        depth += sum(code.count(c) for c in b"([{") - sum(code.count(c) for c in b")]}")
        if depth < 0:
            break
    return found


def _alone(items: list[tuple[int, object]], n: int, new: Callable[[object], bool]) -> bool:
    """Whether the `n`th of a bracket's `items` (_bracket_items) stands alone: a string that
    names one thing (`"gfx1201"`, `"csrc/a.cu"`: no text, an empty string or a line of a
    template, `""`, `"}"`, `"int x = 0;"`, that a list may well hold twice) or a flag whose
    text says it takes no value (`"-DFOO"`, `"-fPIC"`, `"--offload-arch=gfx942"`: _TAKES_NONE;
    another option, `"-D"`, `"--arch"`, may be half of a pair), and no option's value: the
    item before it (on its line or the line above) is no option that may take the next
    argument, one documented to (_TAKES_NEXT, `"-I"` before `"inc"`) or one of no known kind
    its side added with it (`new`: `"--foo"` before `"A=1"`). A flag of no value before it
    (`"-fPIC"` before `"csrc/extra.cu"`) or a base option of no known kind takes none."""
    value = items[n][1]
    if not isinstance(value, str):
        return False
    if _is_option(value):
        if _TAKES_NONE.fullmatch(value) is None or _takes_next(items, n):
            return False
    elif _ONE_NAME.fullmatch(value) is None:
        return False
    if n == 0:
        return True
    before = items[n - 1][1]
    return not (_is_option(before) and (_takes_next(items, n - 1) or
                                        _TAKES_NONE.fullmatch(str(before)) is None
                                        and new(before)))


def _flat_pairs(items: list[tuple[int, object]]) -> bool:
    """Whether a bracket's `items` (_bracket_items) read as a flat list of pairs, each a key
    and its number (`"fp16", "64", "bf16", "256",`, `"--jobs", "4",`): two pairs or more,
    every item a string, every second one a number and none of the others. A list of names
    (`"gfx942", "gfx1201",`) or of numbers alone is none: a value there made twice is one
    item twice; here it is two keys' values, both wanted, where only a key made twice is."""
    if items and items[-1][1] is None:
        items = items[:-1]  # the line closing the bracket
    if len(items) < 4 or len(items) % 2 or \
            any(not isinstance(value, str) for _, value in items):
        return False
    return all(_NUMBER.fullmatch(str(value)) is not None for _, value in items[1::2]) and \
        not any(_NUMBER.fullmatch(str(value)) is not None for _, value in items[::2])


# A string that is a number (`"128"`, `"0.5"`, `"-1"`).
_NUMBER = on_first_use(r"-?\d+(?:\.\d+)?")


def _value_of(items: list[tuple[int, object]], n: int) -> object:
    """The option whose value the `n`th of a bracket's `items` (_bracket_items) is: the item
    before it (on its line or the line above), where that is an option documented to take
    the next argument (_TAKES_NEXT: `"-include"` for `"csrc/extra.cu"` in `"-include",
    "csrc/extra.cu",`); None where it is no such option's value."""
    if n == 0 or not _takes_next(items, n - 1):
        return None
    return items[n - 1][1]


def _takes_next(items: list[tuple[int, object]], n: int) -> bool:
    """Whether the `n`th of a bracket's `items` (_bracket_items) is an option that takes the
    item after it as its value: one documented to (_TAKES_NEXT), or `"-Werror"` before one of
    nvcc's kinds (`"-Werror", "reorder",`; before anything else it is gcc's flag of none)."""
    if n < 0 or n >= len(items):
        return False
    value = items[n][1]
    if value in _TAKES_NEXT:
        return True
    return value == "-Werror" and n + 1 < len(items) and items[n + 1][1] in _NVCC_WERROR_KINDS


# A string that names one thing: a word, a version, a path, a dotted or scoped name.
_ONE_NAME = on_first_use(r"[\w.:/@+-]*[A-Za-z0-9][\w.:/@+-]*")
# Options that gcc, clang, nvcc and hipcc document to take the next argument as their value
# (`"-include", "csrc/extra.cu",`): the item after one is its value, another item than the
# same string standing alone (a source to build). Nothing else in a list tells it.
_TAKES_NEXT = frozenset({
    "-include", "-imacros", "-I", "-isystem", "-iquote", "-idirafter", "-isysroot", "-D",
    "-U", "-L", "-l", "-o", "-x", "-MF", "-MT", "-MQ", "-Xcompiler", "-Xlinker", "-Xclang",
    "-Xassembler", "-Xptxas", "-Xnvlink", "-Xarch_host", "-Xarch_device", "-mllvm",
    "-gencode", "-ccbin", "-arch", "-code", "-target", "--include-path",
    "--pre-include", "--compiler-options", "--linker-options", "--ptxas-options",
    "--output-file", "--define-macro", "--undefine-macro", "--library-path", "--library",
    "--system-include", "--compiler-bindir", "--gpu-architecture", "--gpu-code",
    "--generate-code", "--offload-arch", "--amdgpu-target", "-framework",
    # nvcc's, written as flags of no value would be (`-m...`, `-l...`, `-f...`): `"-maxrregcount",
    # "64",` is one option and its value.
    "-maxrregcount", "-ldir", "-odir", "-fmad", "-ftz", "-rdc", "-std", "--threads"})
# The kinds nvcc's `-Werror` takes as its value (`"-Werror", "all-warnings",`); gcc's and
# clang's `-Werror` takes none, so it is taken as an option with a value only before one.
_NVCC_WERROR_KINDS = frozenset({
    "all-warnings", "cross-execution-space-call", "reorder", "default-stream-launch",
    "missing-launch-bounds", "ext-lambda-captures-this", "deprecated-declarations"})
# An option whose text says it takes no value, its value written in or none
# (`"-DFOO"`, `"-DFOO=1"`, `"-Iinc"`, `"-lm"`, `"-O3"`, `"-fPIC"`, `"-g"`, `"-Wall"`,
# `"-mavx2"`, `"--offload-arch=gfx942"`, `"-shared"`): a copy of one upstream added is the same
# flag made twice wherever it stands (those of _TAKES_NEXT excepted, `-mllvm`, `-gencode`,
# `-maxrregcount`, and `-Werror` before one of nvcc's kinds: _takes_next).
_TAKES_NONE = on_first_use(r"--?[\w+.-]+=\S*|-[DUIL][^\s=]\S*|-l\S+|-O\w*|-f[\w+.-]+|-g\w*"
                           r"|-W[\w,+.-]+|-m[\w+.-]+|-(?:shared|static|c|S|E|w|pthread|rdynamic"
                           r"|pipe)")


def _is_option(value: object) -> bool:
    """Whether an item's value (_line_items'; None for a line of other code) reads as a
    command line's option (`"-D"`, `"--arch"`, `"/O2"`): a string item not read as a
    literal is taken for one too."""
    return value is not None and (not isinstance(value, str) or
                                  value.startswith(("-", "/", "+")))


def _bracket_lines(lines: list[bytes], at: int) -> list[int]:
    """The lines (0-based) from line `at`, whose bracket is left open, to the line closing it
    (at most 200)."""
    depth, held = 0, []
    for k in range(at, min(at + 200, len(lines))):
        held.append(k)
        code = STRING_OR_COMMENT.sub(b"", lines[k])
        depth += sum(code.count(c) for c in b"([{") - sum(code.count(c) for c in b")]}")
        if depth <= 0:
            break
    return held


def _items_in_bracket_made(made: bytes, item: object) -> int:
    """How often `item` (a value of `_line_items`) is an item of one bracket in `made` (the
    most of any bracket)."""
    lines = made.split(b"\n")
    most = 0
    for at, line in enumerate(lines):
        values = _line_items(line)
        if values is None or item not in values:
            continue
        opened = _bracket_opened_above(lines, at)
        if opened is not None:
            most = max(most, sum(1 for _, value in _bracket_items(lines, opened)
                                 if value is not None and value == item))
    return most


def _bracket_text(lines: list[bytes], at: int) -> bytes:
    """The code (strings and comments taken out) from line `at`, whose bracket is left open,
    to the line that closes it (at most 200 lines)."""
    return b"\n".join(STRING_OR_COMMENT.sub(b"", lines[k]) for k in _bracket_lines(lines, at))


def _bracket_opened_above(lines: list[bytes], at: int) -> int | None:
    """The line (0-based) whose bracket, left open, holds line `at` of `lines`: the nearest
    above with more brackets opened than closed after it; None where none is within 200
    lines."""
    depth = 0
    for k in range(at - 1, max(at - 200, 0) - 1, -1):
        code = STRING_OR_COMMENT.sub(b"", lines[k])
        for char in reversed(code):
            if char in b")]}":
                depth += 1
            elif char in b"([{":
                depth -= 1
                if depth < 0:
                    return k
    return None


# A key opening an entry of a dict literal, and its `:` (`"gfx950": 128,`, `'gfx950':`,
# `950: "x",`, `dtypes.fp8: 2,`, JSON's `"srcs": [`): a quoted string, a number or a dotted
# name. Not a bare name: in C-family code `public:` and `done:` are no keys, and a name key
# in JavaScript is a string another spelling would have to be read as.
_NUMBER_KEY = rb"[-+]?\.?\d[\w.]*"
_DOTTED_KEY = rb"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+"
_DICT_KEY = on_first_use(rb"\s*(" + _QUOTED + rb"|" + _NUMBER_KEY + rb"|" + _DOTTED_KEY
                         + rb")\s*:(?![:=])")
# In Python a bare name is a key too (`GFX950: 128,`, a constant: the same name is the same
# key), but for a keyword (`else:` opens a block; `lambda:` its body, in a set of lambdas).
_PYTHON_DICT_KEY = on_first_use(
    rb"\s*(" + _QUOTED + rb"|" + _NUMBER_KEY + rb"|(?!(?:"
    + "|".join(k for k in keyword.kwlist if k not in ("True", "False", "None")).encode()
    + rb")\b)[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)\s*:(?![:=])")
# In C-family code an initialiser's designator and its `=` (`[GFX950] = 128,`, `.block_m =
# 64,`): the same index or member given twice, the later value wins (a warning at most).
_C_DESIGNATOR = on_first_use(rb"\s*(\[[^\]\n]+\]|\.[A-Za-z_]\w*)\s*=(?!=)")
# A line's strings and comments, in Python (where `//` divides: `"n": m // 2,`) and in other
# languages; and the same with a bracket or a comma: what a line of a dict is read by, token
# by token (brackets and commas in a string or a comment are no code's).
_PYTHON_NOISE = rb'"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\'|#.*'
_PYTHON_STRING_OR_COMMENT = on_first_use(_PYTHON_NOISE)
_PYTHON_TOKEN = on_first_use(_PYTHON_NOISE + rb"|[()\[\]{},]")
_TOKEN = on_first_use(_PYTHON_NOISE + rb"|//.*|[()\[\]{},]")
_BRACKET = on_first_use(rb"[()\[\]{}]")


@record
class _DictEntry:
    """An entry of a dict literal (_dict_entries): its key's value and text, the line it
    opens on (0-based), where its value starts on that line and where it ends there (None:
    it runs on below, its brackets left open), and how many brackets are open where it
    stands (the dict's among them)."""
    key: object
    key_text: str
    first: int
    start: int
    end: int | None
    depth: int


@record(frozen=True)
class _DictSyntax:
    """How the dict literals of a file are read (_dict_syntax): what opens an entry (`key`),
    a line's tokens (`tokens`), its strings and comments (`noise`)."""
    key: re.Pattern[bytes]
    tokens: re.Pattern[bytes]
    noise: re.Pattern[bytes]


def _dict_syntax(path: str) -> _DictSyntax:
    """How the dict literals of the file at `path` are read: an entry opens with _DICT_KEY,
    in Python with _PYTHON_DICT_KEY (and `//` divides), in C-family code with _C_DESIGNATOR."""
    language = _language(path)
    if language == "python":
        return _DictSyntax(_PYTHON_DICT_KEY, _PYTHON_TOKEN, _PYTHON_STRING_OR_COMMENT)
    return _DictSyntax(_C_DESIGNATOR if language == "c" else _DICT_KEY, _TOKEN,
                       STRING_OR_COMMENT)


def _key_of(text: bytes) -> object:
    """A key's value: a literal's (`"gfx950"` is `'gfx950'`, `0x10` is `16`), else its text
    without whitespace (`[GFX950]` is `[ GFX950 ]`)."""
    try:
        return ast.literal_eval(text.decode())
    except (ValueError, SyntaxError, UnicodeDecodeError, MemoryError, RecursionError):
        return b"".join(text.split())


def _line_segments(line: bytes, tokens: re.Pattern[bytes]) -> list[tuple[int, int | None]]:
    """The entries a line holds at the level it starts at: (start, end) columns of each, split
    at its commas, a comment or the close of that level ending the last; its end None where
    brackets it opens are left open at the line's end (a value running on below). Read by
    `tokens` (_DictSyntax's)."""
    spans: list[tuple[int, int | None]] = []
    start, depth = 0, 0
    for token in tokens.finditer(line):
        text = token.group()
        if text[:1] in b"#/":
            break
        if text in (b"(", b"[", b"{"):
            depth += 1
        elif text in (b")", b"]", b"}"):
            depth -= 1
            if depth < 0:
                spans.append((start, token.start()))
                return spans
        elif text == b"," and depth == 0:
            spans.append((start, token.start()))
            start = token.end()
    else:
        spans.append((start, None if depth > 0 else len(line)))
        return spans
    spans.append((start, None if depth > 0 else token.start()))
    return spans


def _dict_entries(lines: list[bytes], syntax: _DictSyntax
                  ) -> tuple[dict[tuple[int, int], list[_DictEntry]], list[int]]:
    """The entries of each dict literal of `lines` (a brace, each entry opening a line at the
    brace's own level after a line ending in the brace or a comma, or following a comma on
    its line: one on the brace's own line is not read),
    by where its brace opens (line, and its place among the line's brackets), in order; and
    per line, how many brackets are open at its start (an entry's value runs on through the
    lines more are open at, _entry_value). One pass over the file."""
    found: dict[tuple[int, int], list[_DictEntry]] = {}
    stack: list[tuple[int, int, bytes]] = []
    depths: list[int] = []
    after = b""
    for k, line in enumerate(lines):
        depths.append(len(stack))
        code = syntax.noise.sub(b"", line).rstrip()
        if stack and stack[-1][2] == b"{":
            opened = stack[-1][:2]
            for start, end in _line_segments(line, syntax.tokens):
                opens = syntax.key.match(line, start)
                # An entry opening the line follows the brace or a comma: one following
                # other code goes on with it (a statement wrapped in a block, `x[i]` /
                # `[j] = 0;`, is no designator).
                if opens is not None and (end is None or opens.end() <= end) and \
                        (start > 0 or after in (b"{", b",")):
                    found.setdefault(opened, []).append(_DictEntry(
                        _key_of(opens[1]), opens[1].decode("utf-8", "replace"), k,
                        opens.end(), end, len(stack)))
        for n, bracket in enumerate(_BRACKET.finditer(code)):
            if bracket[0] in b"([{":
                stack.append((k, n, bracket[0]))
            elif stack:
                stack.pop()
        if code.strip():
            after = code[-1:]
    return found, depths


def _entry_value(lines: list[bytes], depths: list[int], entry: _DictEntry) -> tuple[int, bytes]:
    """An entry's last line (0-based) and its value's text, whitespace runs made one space: to
    the end of its segment, or, running on below, through the lines inside its brackets."""
    line = lines[entry.first]
    if entry.end is not None:
        return entry.first, b" ".join(line[entry.start:entry.end].split())
    last = entry.first
    while last + 1 < len(lines) and depths[last + 1] > entry.depth:
        last += 1
    text = b" ".join(lines[k].strip() for k in range(entry.first + 1, last + 1))
    value = b" ".join((line[entry.start:] + b" " + text).split())
    return last, value.rstrip(b",").rstrip()


def _same_value(one: bytes, other: bytes) -> bool:
    """Whether two entries' values (_entry_value's) are the same: as literals (`'a'` is
    `"a"`), else as text without whitespace."""
    try:
        return bool(ast.literal_eval(one.decode()) == ast.literal_eval(other.decode()))
    except (ValueError, SyntaxError, UnicodeDecodeError, MemoryError, RecursionError,
            TypeError):
        return b"".join(one.split()) == b"".join(other.split())


def _key_twice_in_its_dict(path: str, current: bytes, result: bytes,
                           made: bytes) -> tuple[int, int, str] | None:
    """Where (the fix's line, upstream's: 1-based lines of `result`, and what the stop says
    of the two, KEY_TWICE) a key the fix gives a dict literal (`"gfx1201": 32,`) is a key of
    the same dict in `result` on a line the fix did not change, where the file the fix made
    (`made`) held it once in any dict: upstream gave the dict that key itself at another
    place. A dict keeps one value per key, the later line's: merged in both, the dict held
    the key twice, exit 0, and with another value one side's was lost silently. A key the fix
    gives an entry it replaces (a value changed, a comma added) is no new key; the same key
    in another dict, or a keyword argument of a call (`dict(gfx1201=32)`), is another
    mapping's, both wanted (None)."""
    syntax = _dict_syntax(path)
    blocks = _changed_blocks(result, current, lambda line: syntax.key.match(line) is not None)
    if not blocks:
        return None
    lines, theirs = result.split(b"\n"), current.split(b"\n")
    changed = {k for mine, _ in blocks for k in mine}
    replaced = {_key_of(opens[1]) for _, other in blocks for k in other
                for start, end in _line_segments(theirs[k], syntax.tokens)
                if (opens := syntax.key.match(theirs[k], start)) is not None
                and (end is None or opens.end() <= end)}
    # Only an entry opening on a changed line with a key the fix does not replace is asked
    # about below, and each entry opens where its line's segment opens a key (_dict_entries
    # reads the same segments): where no changed line opens such a key (most fixes), the
    # whole file's dict literals are not read.
    if not any(_key_of(opens[1]) not in replaced for k in changed
               for start, end in _line_segments(lines[k], syntax.tokens)
               if (opens := syntax.key.match(lines[k], start)) is not None
               and (end is None or opens.end() <= end)):
        return None
    dicts, depths = _dict_entries(lines, syntax)
    for entries in dicts.values():
        for entry in entries:
            if entry.first not in changed or entry.key in replaced:
                continue
            others = [other for other in entries
                      if other.first not in changed and other.key == entry.key]
            if not others or _keys_in_a_dict_made(made, entry.key, syntax) > 1:
                continue
            upstreams = min(others, key=lambda other: abs(other.first - entry.first))
            mine, theirs_value = (_entry_value(lines, depths, entry),
                                  _entry_value(lines, depths, upstreams))
            said = _key_twice_said(entry.key_text, mine, entry.first, theirs_value,
                                   upstreams.first)
            # The last of its object: upstream's copy is another entry, so a comma precedes it.
            if path.lower().endswith(".json") and entry is entries[-1]:
                return entry.first + 1, upstreams.first + 1, f"{said}, {LAST_IN_JSON}"
            # Entries on the fix's line(s) not on upstream's: deleting the line loses them.
            theirs_keys = {other.key for other in entries
                           if upstreams.first <= other.first <= theirs_value[0]}
            beside = [other.key_text for other in entries if other is not entry
                      and entry.first <= other.first <= mine[0] and other.key not in theirs_keys]
            if beside:
                return entry.first + 1, upstreams.first + 1, \
                    f"{said}, {KEY_BESIDE} ({', '.join(beside)})"
            return entry.first + 1, upstreams.first + 1, said
    return None


def _key_twice_said(key: str, mine: tuple[int, bytes], at: int, theirs: tuple[int, bytes],
                    upstreams: int) -> str:
    """What the stop on a key made twice in a dict says: the key, KEY_TWICE, with the same
    value or another, and each copy's lines and value (_entry_value's: the fix's `mine`
    opening at line `at`, upstream's `theirs` at `upstreams`, 0-based), upstream's first; with
    another value, which one the dict keeps as it stands (the later line's)."""
    def shown(first: int, value: tuple[int, bytes]) -> str:
        where = f"line {first + 1}" if first == value[0] else f"lines {first + 1}-{value[0] + 1}"
        text = value[1].decode("utf-8", "replace")
        return f"{where}: {text if len(text) <= 60 else text[:57] + '...'}"

    both = f"(upstream's {shown(upstreams, theirs)}; yours, {shown(at, mine)}"
    if _same_value(mine[1], theirs[1]):
        return f"{key} {KEY_TWICE}, {SAME_VALUE} {both})"
    later = "yours" if at > upstreams else "upstream's"
    return f"{key} {KEY_TWICE}, {OTHER_VALUE} {both}; as it stands the later, {later}, wins)"


def _keys_in_a_dict_made(made: bytes, value: object, syntax: _DictSyntax) -> int:
    """How often the key `value` (_key_of's) opens an entry of one dict literal in `made`
    (the most of any dict)."""
    dicts, _ = _dict_entries(made.split(b"\n"), syntax)
    return max((sum(1 for entry in entries if entry.key == value) for entries in dicts.values()),
               default=0)


def _index_address_to_undeclared(path: str, current: bytes, result: bytes, run: bytes,
                                 upstreams: set[int] | None = None) -> bool:
    """Whether `run` is one item update (`out[i] += n;`) and a line between the fix's copy in
    `result` and upstream's nearest gives its index's address to a call of a function the
    file does not declare (_changes_through: None), which may step it (UNDECLARED_CALL)."""
    _, own, theirs = _copies_of(path, current, result, run, upstreams)
    if own is None or theirs is None:
        return False
    lines = result.split(b"\n")
    written = _written(lines, own, run)
    code = [STRING_OR_COMMENT.sub(b"", line) for line in written]
    item = _SETS_ITEM.match(code[0]) if len(code) == 1 else None
    if item is None:
        return False
    index = set(_NAME.findall(b"".join(re.findall(rb"\[([^\[\]]*)\]", item[0]))))
    low, high = sorted((own, theirs))
    for line in lines[low - 1 + len(written):high - 1]:
        line = STRING_OR_COMMENT.sub(b"", line)
        for name in index:
            for found in re.finditer(rb"[(,]\s*&\s*" + re.escape(name) + rb"\s*[,)]", line):
                if _changes_through(line, found.start(), lines) is None:
                    return True
    return False


def _steps_index(code: bytes, names: set[bytes], lines: list[bytes]) -> bool:
    """Whether the code line `code` steps one of `names` (an item update's index names) in a
    way _SETS_NAME does not read: `i++`, `--i`, its address given to a call the file
    declares with a pointer to change at that place (`advance(&i)` beside `void advance(int*
    i)`: _changes_through), or one target of several (`i, j = j, i`). A C++ call taking `i`
    by reference is not told from one reading it (`use(i)`): not asked, the stop stands."""
    for name in names:
        named = re.escape(name)
        if re.search(rb"(?:\+\+|--)\s*" + named + rb"(?!\w)|(?<![\w.])" + named
                     + rb"\s*(?:\+\+|--)", code) is not None:
            return True
        for found in re.finditer(rb"[(,]\s*&\s*" + named + rb"\s*[,)]", code):
            if _changes_through(code, found.start(), lines) is True:
                return True
        targets = re.match(rb"\s*([\w\s,*]+?)\s*=(?!=)", code)
        if targets is not None and b"," in targets[1] and re.search(
                rb"(?<![\w.])" + named + rb"(?![\w\[.(])", targets[1]) is not None:
            return True
    return False


# A line naming a call after a word that is no type (`return advance(&i);`): no declaration.
_NOT_A_DECLARATION = on_first_use(
    rb"\s*(?:return|else|case|throw|delete|new|goto|co_return|co_await|co_yield)\b")


def _changes_through(code: bytes, at: int, lines: list[bytes]) -> bool | None:
    """Whether the call whose argument starts at `at` of the code line `code` (its `(` or the
    comma before it) is one the file declares or defines (a line naming it before its `(`
    with a type: `void advance(int* i);`, `static void next_slot(int* out, int* i) {`, its
    parameters over several lines read together) with a pointer to what may be changed at
    that argument's place. A pointer to const (`log_index(const int* p)`) or a parameter of
    no pointer is a read: False, counted a step, the item updated twice was merged twice,
    exit 0; a stop is said. A function the file does not declare (`print(&i)`, `printf("%p",
    &i)`, `atomicAdd(&i, 1)`, `memcpy(&i, ...)`, one from a header) may read or change it:
    None, not told; a stop is said, keeping the fix's copy first (UNDECLARED_CALL)."""
    depth, position, start = 0, 0, at
    while start >= 0:
        char = code[start:start + 1]
        if char in b")]":
            depth += 1
        elif char in b"([":
            if depth == 0:
                break
            depth -= 1
        elif char == b"," and depth == 0:
            position += 1
        start -= 1
    callee = re.search(rb"(\w+)\s*$", code[:max(start, 0)])
    if start < 0 or code[start:start + 1] != b"(" or callee is None:
        return False
    name = re.escape(callee[1])
    head = rb"^\s*(?:[\w:<>*&]+\s+)*?[\w:<>]+[\s*&]+(?:\w+::)*" + name + rb"\s*\("
    opens, declared = re.compile(head), re.compile(head + rb"([^()]*)\)")
    code_lines = [STRING_OR_COMMENT.sub(b"", line) for line in lines]
    for k, line in enumerate(code_lines):
        if opens.match(line) is None or _NOT_A_DECLARATION.match(line):
            continue
        # A parameter list over several lines (`void advance(` / `int* i,` / `int n)`): its
        # lines up to the closing `)` read as one.
        joined, end = line, k + 1
        while joined.count(b"(") > joined.count(b")") and end < min(len(code_lines), k + 40):
            joined += b" " + code_lines[end]
            end += 1
        found = declared.match(joined)
        if found is None:
            continue
        params = found[1].split(b",")
        if position >= len(params):
            continue
        param = params[position]
        star = param.find(b"*")
        return star >= 0 and re.search(rb"\bconst\b", param[:star]) is None
    return None


def _sets_anew(line: bytes, read: set[bytes],
               shaped: dict[bytes, frozenset[bytes]] | None = None,
               tensors: set[bytes] | frozenset[bytes] = frozenset()) -> bool:
    """Whether `line` sets one of the names `read` to a new state: not the same value laid
    out anew by steps of its own that keep what a guard on it checks (`x = x.contiguous()`,
    `x = x.to(device).float()`, `x = x.T`: its second copy is the fix made twice). Any other
    method or attribute is a step to another value (`s = s.strip()` may empty s,
    `node = node.next_node()` and `node = node.next` reach another node), as is an augmented
    assignment (`i += stride`) or another expression. For a name in `shaped`, whose layout
    the run reads (`x.size(0)`), a step `shaped` gives it (`x = x.T`, a view) is another value
    too. For a name in `tensors`, read through a tensor's own accessors, a step not known
    either way may keep what the guard reads (_may_keep): not a new value, so the second copy
    stops with both ways on rather than merge in twice."""
    set_at = _SETS_NAME.match(line)
    if set_at is None or set_at[1] not in read:
        return False
    if set_at[0].rstrip()[-2:-1] in b"-+*/%&|^<>:":
        return True  # (augmented)
    value = STRING_OR_COMMENT.sub(b"", line[set_at.end():]).strip().rstrip(b";").rstrip()
    changing = (shaped or {}).get(set_at[1], frozenset())
    if _keeps_value(set_at[1], value, changing):
        return False
    return set_at[1] not in tensors or not _may_keep(set_at[1], value, changing)


def _may_keep(name: bytes, value: bytes, changing: frozenset[bytes]) -> bool:
    """Whether `value`, set to tensor `name`, may keep what a check on it reads, not known
    either way: `name` through a chain of methods none of them known to change it (neither
    `changing` nor _NEW_COUNT), some the project's own (`x.to_kernel_layout()`), or such a
    chain (or `name` itself) with arithmetic after it (`x.float() * scale`: the same count
    unless the operand broadcasts). An attribute of the project's own (`x.weight`) reaches
    another object, as `node.next` does; a matrix product (`@`) or an item (`x[mask]`) gives
    another tensor."""
    if not value.startswith(name) or value[len(name):len(name) + 1].isalnum() \
            or value[len(name):len(name) + 1] == b"_":
        return False
    at = len(name)
    while True:
        step = _STEP.match(value, at)
        if step is None:
            break
        opened = step.end()
        if value[opened:opened + 1] != b"(":
            if step[1] not in _SAME_VALUE:
                return False  # (an attribute: another object)
            at = opened
        else:
            depth = 0
            for k in range(opened, len(value)):
                depth += (value[k:k + 1] == b"(") - (value[k:k + 1] == b")")
                if depth == 0:
                    at = k + 1
                    break
            else:
                return False
        if step[1] in changing or step[1] in _NEW_COUNT or (
                step[1] == b"to" and _to_kinds(value[opened:at]) & changing):
            return False
    rest = value[at:].strip()
    return not rest and at > len(name) or rest[:1] in (b"*", b"/", b"+", b"-") \
        and rest[:2] != b"**"


def _keeps_value(name: bytes, value: bytes, changing: frozenset[bytes] = frozenset()) -> bool:
    """Whether `value` is `name` through a chain of steps each of _SAME_VALUE (`x.T`,
    `x.to(d).float()`, `x.view(-1, 4).contiguous()`) and nothing else, none of `changing`
    (the steps that change the layout a check reads)."""
    if not value.startswith(name + b"."):
        return False
    at, steps = len(name), 0
    while at < len(value):
        step = _STEP.match(value, at)
        if step is None or step[1] not in _SAME_VALUE:
            return False
        at, steps, opened = step.end(), steps + 1, step.end()
        if value[at:at + 1] == b"(":
            depth = 0
            for k in range(at, len(value)):
                depth += (value[k:k + 1] == b"(") - (value[k:k + 1] == b")")
                if depth == 0:
                    at = k + 1
                    break
            else:
                return False
        if step[1] in changing or (step[1] == b"to" and _to_kinds(value[opened:at]) & changing):
            return False
    return steps > 0


def _to_kinds(arguments: bytes) -> frozenset[bytes]:
    """What a `.to(...)` with `arguments` may change, read from how they are spelt: the device
    (`device`, `"cuda"`, `torch.device(...)`, `other.device`), the element type (`dtype`,
    `torch.float16`, `other.dtype`), or, where they tell neither (`x.to(other)`), both (the
    keys TO_DEVICE and TO_DTYPE of _CHANGED_BY's sets)."""
    kinds = set()
    if _DEVICE_WORDS.search(arguments):
        kinds.add(_TO_DEVICE)
    if _DTYPE_WORDS.search(arguments):
        kinds.add(_TO_DTYPE)
    return frozenset(kinds or (_TO_DEVICE, _TO_DTYPE))


# One step of a chain: a dot and a method's or attribute's name.
_STEP = on_first_use(rb"\.\s*([A-Za-z_]\w*)\s*")
# The steps that lay a value out anew (its layout, element type, device, a copy, a view or a
# transpose of the same elements) and keep what a guard on it checks: its being None or
# empty, its element count.
_SAME_VALUE = frozenset((
    b"contiguous", b"to", b"float", b"half", b"double", b"bfloat16", b"cuda", b"cpu",
    b"clone", b"detach", b"view", b"view_as", b"reshape", b"reshape_as", b"transpose",
    b"permute", b"t", b"T", b"mT", b"H", b"mH", b"data", b"flatten", b"ravel", b"squeeze",
    b"unsqueeze", b"type", b"type_as", b"astype", b"pin_memory", b"requires_grad_",
    b"copy", b"numpy"))
# The steps of _SAME_VALUE that change the layout, by what a check reads: the number of
# dimensions (a view, a reshape), the sizes' order too (a transpose), the strides too
# (`contiguous()`): a guard on `x.dim()`, `x.size(0)` or `x.is_contiguous()` reads another
# answer after them.
_RANK_STEPS = frozenset((b"view", b"view_as", b"reshape", b"reshape_as", b"flatten", b"ravel",
                         b"squeeze", b"unsqueeze"))
# The steps that reorder the sizes and keep them (a transpose, a permutation), and those of
# them that swap sizes 0 and 1 of a 2-D tensor: a check reading the sizes alike stays.
_TRANSPOSES = frozenset((b"transpose", b"permute", b"t", b"T", b"mT", b"H", b"mH"))
_TWO_D_TRANSPOSES = frozenset((b"t", b"T"))
_SIZE_STEPS = _RANK_STEPS | _TRANSPOSES
# A `.to(...)` by what its arguments change (_to_kinds): the device, the element type.
_TO_DEVICE, _TO_DTYPE = b"to(device)", b"to(dtype)"
_DEVICE_WORDS = on_first_use(rb"device|\bdev\b|cuda|cpu|\bmeta\b|\bhip\b")
_DTYPE_WORDS = on_first_use(rb"dtype|\btorch\s*\.\s*(?:u?int\d*|float\d*|half|double|bfloat16"
                            rb"|bool|complex\d*|long|short)\b")
# The steps of _SAME_VALUE that give another element type (a check on `x.dtype`, on
# `x.is_floating_point()` reads another answer after them), another device, or another
# tensor cut off from autograd (`x.requires_grad`); `x.grad_fn`, `x.is_leaf` and `x.grad`
# are another tensor's after any step.
_DTYPE_STEPS = frozenset((b"float", b"half", b"double", b"bfloat16", b"type", b"type_as",
                          b"astype", b"numpy", _TO_DTYPE))
_DEVICE_STEPS = frozenset((b"cuda", b"cpu", b"type", b"type_as", b"numpy", _TO_DEVICE))
_GRAD_STEPS = frozenset((b"detach", b"data", b"requires_grad_", b"numpy"))
# The reads of a tensor's kind (its element type, device, place in autograd), not its layout.
_KIND_READS = frozenset((b"dtype", b"is_floating_point", b"is_complex", b"is_signed",
                         b"element_size", b"itemsize", b"device", b"is_cuda", b"is_cpu",
                         b"get_device", b"is_pinned", b"requires_grad", b"is_leaf", b"grad_fn",
                         b"grad"))
_CHANGED_BY = {b"dim": _RANK_STEPS, b"ndim": _RANK_STEPS, b"ndimension": _RANK_STEPS,
               b"size": _SIZE_STEPS, b"shape": _SIZE_STEPS,
               b"stride": _SIZE_STEPS | {b"contiguous"},
               b"is_contiguous": _SIZE_STEPS | {b"contiguous"},
               b"storage_offset": _SIZE_STEPS | {b"contiguous"},
               **dict.fromkeys((b"dtype", b"is_floating_point", b"is_complex", b"is_signed",
                                b"element_size", b"itemsize"), _DTYPE_STEPS),
               **dict.fromkeys((b"device", b"is_cuda", b"is_cpu", b"get_device"), _DEVICE_STEPS),
               b"is_pinned": _DEVICE_STEPS | {b"pin_memory"},
               b"requires_grad": _GRAD_STEPS,
               **dict.fromkeys((b"is_leaf", b"grad_fn", b"grad"), _SAME_VALUE)}


def _with_history_word(judgement: Judgement, verdict, final) -> Judgement:
    """`judgement` (_conclude's of `verdict`) with `final` (with_history's word on `verdict`,
    which it left undecided: the same state and files, more evidence) in its verdict and
    evidence: what _conclude gives for `final`, whose evidence starts with the verdict's and
    goes on with its own steps' (SeriesJudge.settle says why)."""
    assert final.state == verdict.state and final.files is verdict.files
    own = judgement.evidence[len(verdict.evidence):]
    return replace(judgement, verdict=final, evidence=list(final.evidence) + own)


def judge_on_profile_bases(make_judge: Callable[[list], SeriesJudge], patches,
                           configured) -> list[tuple[SeriesJudge, Judgement]]:
    """Each of `patches` ([(name, PatchFile)]) judged on its own base, in a series with
    patches for some profiles only (apply.series.profile_bases_differ), as a rebase moves it:
    one judge per chain (apply.series.profile_chains: each profile set of the series and each
    profile's own series, `make_judge(chain)`); a patch is judged on its own set's chain and
    carried into the others that hold it (`carry_to_chains`). One that moves on its base but
    does not go into a profile's series is a conflict naming that series and the patches it
    meets there. Returns [(judge, judgement)] in series order, each to be settled by its
    judge."""
    from patchforge.apply.series import profile_chains, profile_set

    own = [profile_set(patch, configured) for _, patch in patches]
    judges: dict = {}
    for chosen, positions in profile_chains(patches, configured):
        chain = [patches[i] for i in positions]
        judge = make_judge(chain)
        judge.prefetch(chain)
        judges[chosen] = (judge, set(positions))
    found: list = []
    for position, (name, patch) in enumerate(patches):
        judge = judges[own[position]][0]
        old_before = {p: judge.old_file(p) for p in patch.paths}
        judgement = judge.judge(name, patch, defer_history=True)
        problem = carry_to_chains(patches, own, position, judges, judgement, old_before)
        if problem is not None:
            path, message = problem
            judgement = replace(judgement, outcome="stop", state="conflict",
                                stop_kind="conflict", files=[path], message=message,
                                evidence=[*judgement.evidence, message])
        found.append((judge, judgement))
    return found


def carry_old(patches, own, position, judges, old_before: dict) -> None:
    """The old series of every chain of `judges` ({profile set: (judge, positions)}) but the
    patch's own, that holds the patch at `position`, takes it as the overlays at the old pin
    did (apply.chains.carry_files of its files on its own chain's old series: `old_before`
    before it, that judge's old series after it); where that does not go, by its diff (the
    old pin's overlays failed there)."""
    from patchforge.apply.chains import carry_files, patch_renames

    name, patch = patches[position]
    judge = judges[own[position]][0]
    paths = sorted(old_before)
    renames = patch_renames(patch)
    for chosen, (other, held) in judges.items():
        if chosen == own[position] or position not in held:
            continue
        files, stuck = carry_files(paths, old_before.get, judge.old_file, other.old_file,
                                   renames)
        if stuck is None:
            other.take_old(files, judge)
        else:
            other.pass_old([(name, patch)])


def carry_to_chains(patches, own, position, judges, judgement: Judgement,
                    old_before: dict) -> tuple[str, str] | None:
    """Carry the patch at `position`, judged on its own chain (`judges[own[position]]`,
    `judgement`), into every other chain of `judges` ({profile set: (judge, positions)}) that
    holds it (apply.chains.carry_files: the file on its base, there, and with it, merged). The
    old series there takes it so too (its 3-way merges' base, as the overlays at the old pin
    were made). A patch that moves but does not go into a chain is (path, the message naming
    that chain and the patches there it meets), and is carried nowhere; a stop or a landing is
    carried nowhere either (the chains go on without it, as its own does), but for one stopped
    only by its Keeps: lines, whose result its own chain goes on with (`SeriesJudge.goes_past`),
    and for the files a stopped patch makes (`Judgement.made`), which its own chain's later
    patches meet: those are carried where they go (a chain with a file of its own there keeps
    it; the stop is said already)."""
    carry_old(patches, own, position, judges, old_before)
    if judgement.made:
        carry_moved(patches, own, position, judges, dict.fromkeys(judgement.made),
                    judgement.made)
    if not judges[own[position]][0].goes_past(judgement):
        return None
    return carry_moved(patches, own, position, judges, judgement.before, judgement.after)


def carry_moved(patches, own, position, judges, before: dict,
                after: dict) -> tuple[str, str] | None:
    """Carry the patch at `position`, moved on its own chain from the files `before` to
    `after` ({path: content}), into every other chain of `judges` ({profile set: (judge,
    positions)}) that holds it (apply.chains.carry_files). One that does not go into a chain is
    (path, the message naming that chain and the patches there it meets), and is carried
    nowhere."""
    from patchforge.apply.chains import ChainProblem, carry_files, met_in_chain, patch_renames

    own_judge = judges[own[position]][0]
    paths = sorted(after)
    carried = []
    # The patch's renames, where its moved files still have both paths (a file renamed
    # upstream meanwhile moved it elsewhere: carry_files checks each pair against the files).
    renames = patch_renames(patches[position][1])
    for chosen, (other, held) in judges.items():
        if chosen == own[position] or position not in held:
            continue
        files, stuck = carry_files(paths, before.get, after.get, other.read_current, renames)
        if stuck is not None:
            problem = ChainProblem(patches[position][0], chosen, stuck,
                                   met_in_chain(patches, own, held, position, stuck))
            return stuck, problem.describe()
        carried.append((other, files))
    for other, files in carried:
        other.current.update(files)
        other.current_modes.update({p: m for p, m in own_judge.current_modes.items()
                                    if p in files})
    return None


@record
class OneCommitWalk:
    """read_history's answer for a target whose one parent is the base (a release-per-commit
    history, a rebase onto the next commit): the range is that commit alone, and its walk is
    made by HistoryIndex from the two trees' entries of the series' paths, which the store
    reads anyway. Git's walk, which lists every file of the commit (1,271 paths for a vllm
    release), is asked only by a question about the commit's other files."""

    commit: str
    parent: str
    message: bytes  # the commit's message, as its object holds it


def read_history(store: UpstreamStore, target: Target) -> bytes | OneCommitWalk | None:
    """The walk of the history from base to target a HistoryIndex is made from
    (`store.range_changes`, no path limit), None without history. It needs no patch: a caller
    can start it on a second thread before the series is even parsed.

    The walk runs first: it tells whether the base is an ancestor of the target (`_history`)
    by itself (range_changes), which a git process before it asked at the cost of a walk of
    its own. When it is not (a target on another branch, a wheel's root commit), the walk
    listed nothing and is dropped. A target whose one parent is the base is no walk at all
    (OneCommitWalk): its commit object, read by cat-file, says so."""
    if target.base_commit == target.commit:
        return None
    if _HEX40.fullmatch(target.base_commit):
        only = store.only_parent(target.commit)
        if only is not None and only[0] == target.base_commit:
            return OneCommitWalk(target.commit, only[0], only[1])
    changes = store.range_changes(target.base_commit, target.commit)
    return changes if _history(store, target) else None


def series_history_index(store: UpstreamStore, target: Target,
                         walk: Callable[[], bytes | OneCommitWalk | None],
                         patches, squash: SquashPaths | None = None) -> "HistoryIndex | None":
    """HistoryIndex of the series' files from the history `walk()` returns (read_history's),
    None without history; with the diffs the squash check (series_landings) asks for read
    already, so that a second thread can make them while the first judges. `squash` is told
    the squash check's files as soon as they are known, before those diffs are read."""
    try:
        changes = walk()
        if changes is None:
            return None
        index = HistoryIndex(store, target,
                             sorted({p for _, patch in patches for p in patch.paths}),
                             changes=changes)
        paths, last = _squash_candidates(patches, index)
        if squash is not None:
            squash.found(paths, last)
    finally:
        if squash is not None:
            squash.found(None)  # no history, or an error: nothing is known (the first word stays)
    index.diffs(paths)
    return index


class SquashPaths:
    """The files of the squash check's candidate runs (`_squash_candidates`), told by the
    thread that reads the history (series_history_index) once the log is read, before their
    diffs are: the thread judging waits for that word (`wait()`), not for the diffs, to know
    whether an old series walk for the squash check is worth making meanwhile."""

    def __init__(self) -> None:
        self._paths: list[str] | None = None
        # The last patch (0-based position) a candidate run reaches, once told; None: any.
        self.last: int | None = None
        self._told = threading.Event()

    def found(self, paths: list[str] | None, last: int | None = None) -> None:
        """`paths` (and `last`), or None when nothing is known (no history, an error): the
        first word counts."""
        if not self._told.is_set():
            self._paths = paths
            self.last = last
            self._told.set()

    def wait(self) -> list[str] | None:
        self._told.wait()
        return self._paths


def _history(store: UpstreamStore, target: Target) -> bool:
    """Whether the store has the upstream's history from base to target (git upstreams; wheel
    and directory imports are root commits with none)."""
    return target.base_commit != target.commit and store.is_ancestor(target.base_commit,
                                                                     target.commit)


def series_renames(store: UpstreamStore, target: Target,
                   patches) -> tuple[set[str], Callable[[], dict[str, str]]] | None:
    """SeriesJudge's `renames` for a series (name, patch) over `target`: where upstream moved
    the files its patches change, asked once for all of them (store.renames: git's pairing
    of those gone from the target, as `git rebase` pairs the files it replays, against every
    file the target adds). `status --against` and `rebase --to` ask this one question, so
    that where two of the series' files are nearest the same new file both settle it alike;
    None where there is nothing to ask."""
    paths = sorted({fp.source_path for _, patch in patches if patch is not None
                    for fp in patch.file_patches if not fp.is_new})
    if target.base_commit == target.commit or not paths:
        return None
    return set(paths), lambda: store.renames(target.base_commit, target.commit, paths)


def series_gone(store: UpstreamStore, target: Target, patches) -> list[str]:
    """The files of the series' rename question (series_renames) that `target` no longer has,
    sorted: the only ones git's pairing weighs. A rebase records them with each fix it sets
    aside, so that `bring-back` asks the whole series' question too (ops.series.bring_back)."""
    asked = series_renames(store, target, patches)
    if asked is None:
        return []
    paths = sorted(asked[0])
    before, after = store.entries(target.base_commit, paths), store.entries(target.commit, paths)
    return [path for path in paths if before[path] is not None and after[path] is None]


def _patch_paths(verdict) -> list[str]:
    return sorted({f.path for f in verdict.files}
                  | {f.target_path for f in verdict.files if f.target_path})


def landed_in(store: UpstreamStore, target: Target, patch, verdict, *,
              commits: list[str] | None = None, holds_at: str | None = None,
              pairs_made: dict | None = None) -> str | None:
    """The upstream commit that introduced the change: the first commit touching the patch's
    files (between base and target) at which every hunk the target has is already there (for a
    partial landing: as many hunks as in the target). Binary search over only those commits
    keeps it fast on long histories; each probe judges the patch alone on that commit.

    `holds_at`: a commit at which `verdict` is already the patch's own judgement by content (the
    target, when the judge met the patch's files as the target has them): not probed again.
    A release-to-release upstream, one commit from base to target, then needs no probe.
    `pairs_made`: the own-place diffs a walk made (PlaceDiffs.pairs_made), which the probes
    take instead of asking git for a pair again (a probe at the target meets the files the
    walk offered before an earlier patch changed them); the probes' own go there too."""
    if verdict.hunks_landed == 0 or not _history(store, target):
        return None
    if commits is None:
        commits = store.commits_touching(target.base_commit, target.commit,
                                         _patch_paths(verdict))
    if not commits:
        return None
    want_all = verdict.state == "upstreamed"

    def landed_at(commit: str) -> bool:
        if commit == holds_at:
            return True
        probe = SeriesJudge(store, Target(target.upstream, target.base_commit, commit,
                                          commit, None), pairs_made=pairs_made)
        found = probe.assess("probe", patch)
        if want_all:
            return found.state == "upstreamed"
        return found.hunks_landed >= verdict.hunks_landed

    lo, hi = 0, len(commits) - 1
    if not landed_at(commits[hi]):
        return None
    while lo < hi:
        mid = (lo + hi) // 2
        if landed_at(commits[mid]):
            hi = mid
        else:
            lo = mid + 1
    return commits[lo]


class LazyHistory:
    """The history's word for SeriesJudge, from a HistoryIndex made (or read on another thread)
    only when a patch needs it: `get_index()` -> HistoryIndex | None. With the series
    (`patches`, in order, and `read_base(paths)` for the base's files) it also answers for runs
    of consecutive patches (series_landings), computed once, on the first question."""

    def __init__(self, get_index, patches=None, read_base=None, ready=None,
                 squash: SquashPaths | None = None) -> None:
        self._get_index = get_index
        self._patches = patches
        self._read_base = read_base
        # ready() -> whether get_index() would answer at once (the index is read on another
        # thread): until then, a question walks the old series the squash check needs
        # (old_series_walk) instead of waiting idle; unless `squash` (a SquashPaths) says that
        # the check has no run of patches to look at (it says so before the diffs are read).
        self._ready = ready
        self._squash = squash
        self._walked: tuple[dict, list, list] | None = None
        self._series: dict[str, tuple[str, int, int]] | None = None
        # Per patch of a run that landed whole: the run's change blocks and its landing.
        self._series_changes: dict[str, tuple[dict, object]] = {}
        # How the squash check applies a patch to a file: the judge's remembered applications
        # when a SeriesJudge walks with this history (its own walk of the old series then
        # finds them made).
        self.applications: Callable[..., FileApplication] = apply_file_patch

    def _index(self):
        if self._ready is not None and self._walked is None and not self._ready() and \
                self._read_base is not None and len(self._patches or []) >= 2 and \
                (self._squash is None or self._squash.wait() != []):
            # Its applications are the judge's own walk's (remembered): none is wasted. Up to
            # the last patch a candidate run reaches: the check looks at nothing after it.
            self._walked = old_series_walk(self._patches, self._read_base, self.applications,
                                           self._squash.last if self._squash else None)
        return self._get_index()

    def landing(self, patch):
        index = self._index()
        return index.landing(patch) if index is not None else None

    def moved_to(self, path: str, removed: tuple[bytes, ...]) -> tuple[list[str], str] | None:
        """HistoryIndex.moved_to, None without an index."""
        index = self._index()
        return index.moved_to(path, removed) if index is not None else None

    def made_blocks(self, asked: list[tuple[str, bytes, bytes]],
                    landing: Sequence[str] = ()) -> dict:
        """HistoryIndex.made_blocks, none without an index."""
        index = self._get_index()
        return index.made_blocks(asked, landing) if index is not None else {}

    def folded_into(self, path: str, code: frozenset[bytes],
                    names: frozenset[bytes] = frozenset()) -> tuple[list[str], str] | None:
        """HistoryIndex.folded_into, None without an index."""
        index = self._index()
        return index.folded_into(path, code, names) if index is not None else None

    def commit_diff(self, commit: str, path: str) -> bytes | None:
        """HistoryIndex.commit_diff, None without an index."""
        index = self._index()
        return index.commit_diff(commit, path) if index is not None else None

    def start_landing(self, patch) -> bool:
        """The diffs landing(patch) will read, started now in a git process of their own
        when the index is there already (HistoryIndex.start_landing), so that they are read
        while the judge goes on. False (nothing done) while the index is still being made."""
        if self._ready is not None and not self._ready():
            return False
        index = self._get_index()
        if index is not None:
            index.start_landing(patch)
        return True

    def close(self) -> None:
        """Ends the diffs started and not taken (an error before settle)."""
        if self._ready is None or self._ready():
            try:
                index = self._get_index()
            except Exception:  # the second thread's error is its caller's to report
                return
            if index is not None:
                index.close()

    def series_landing(self, name: str) -> tuple[str, int, int] | None:
        """(commit, first, last): the run of the series (positions, 1-based) whose cumulative
        change that commit made, when `name` belongs to one."""
        if self._series is None:
            index = self._index()
            self._series = series_landings(self._patches or [], index, self._read_base,
                                           self.applications, walked=self._walked,
                                           changes=self._series_changes) \
                if index is not None and self._read_base is not None else {}
        return self._series.get(name)

    def series_change(self, name: str) -> tuple[dict, object] | None:
        """(the cumulative change blocks per path, its history.HistoryLanding) of the run
        series_landing(name) names, None when it names none."""
        return self._series_changes.get(name) if self.series_landing(name) else None


# Longest run of consecutive patches judged as one change: a squash-merged branch.
MAX_SERIES_RUN = 12


def _candidate_runs(files: list, log: list[tuple[str, list[str]]]) -> dict[tuple[int, int],
                                                                           list[str]]:
    """(first, last) position of each run of consecutive patches (2 to MAX_SERIES_RUN) whose
    files (`files[k]`: a collection of paths, None for a patch no run goes through) some commit
    of `log` all touches -> those commits."""
    runs: dict[tuple[int, int], list[str]] = {}
    # A patch is inside a commit when the commit touches each of its files: counted from the
    # commit's few paths through the patches on each path, not by testing every patch of the
    # series against every commit of a history of thousands.
    size: dict[int, int] = {}
    on_path: dict[str, list[int]] = {}
    for i, b in enumerate(files):
        if b is not None:
            paths = set(b)
            size[i] = len(paths)
            for path in paths:
                on_path.setdefault(path, []).append(i)
    always = [i for i, n in size.items() if n == 0]
    for commit, touched in log:
        count: dict[int, int] = {}
        for path in set(touched):
            for i in on_path.get(path, ()):
                count[i] = count.get(i, 0) + 1
        inside = sorted(always + [i for i, n in count.items() if n == size[i]])
        start = 0
        while start < len(inside):
            end = start
            while end + 1 < len(inside) and inside[end + 1] == inside[end] + 1:
                end += 1
            for i in range(inside[start], inside[end]):
                for j in range(i + 1, min(inside[end], i + MAX_SERIES_RUN - 1) + 1):
                    runs.setdefault((i, j), []).append(commit)
            start = end + 1
    return runs


def _run_paths(patch) -> set[str] | None:
    """The files of `patch` a run of the squash check goes through; None for a patch with a
    rename or a copy (no run goes through it). A binary file goes through: its part of a run's
    cumulative change is one blob-id block (history.binary_block: the run's first pre-image
    against its last post-image), which the squash commit's own diff of the file must be; a
    branch rebuilding a kernel patch after patch lands so, its first builds nowhere upstream."""
    if any(fp.old_path and fp.new_path and fp.old_path != fp.new_path
           for fp in patch.file_patches):
        return None
    return {fp.new_path or fp.old_path for fp in patch.file_patches}


def _squash_candidates(patches, index: "HistoryIndex") -> tuple[list[str], int]:
    """series_landings' candidate runs by the patches' paths alone (no patch applied): (the
    files of their patches: every file whose diffs it may read, none without a run; the last
    patch a run reaches, -1 without one). A patch that does not apply only takes runs away."""
    files, runs = _runs_by_paths(patches, index)
    return sorted({path for i, j in runs for k in range(i, j + 1) for path in files[k] or ()}), \
        max((j for _, j in runs), default=-1)


def _runs_by_paths(patches, index: "HistoryIndex") -> tuple[list, dict]:
    files = [_run_paths(patch) for _, patch in patches]
    return files, _candidate_runs(files, index.log) if len(patches) >= 2 else {}


def _added_lines(patch, paths: set[str]) -> dict[str, set[bytes]]:
    """The `+` lines of `patch`, whitespace removed, per file of `paths` it changes."""
    return {fp.new_path or fp.old_path: {line[1:].translate(None, WHITESPACE)
                                        for hunk in fp.hunks for line in hunk.lines
                                        if line[:1] == b"+"}
            for fp in patch.file_patches if (fp.new_path or fp.old_path) in paths}


def old_series_walk(patches, read_base, apply=apply_file_patch,
                    through: int | None = None) -> tuple[dict, list, list]:
    """The old series as series_landings walks it, without fuzz on the base (`read_base(paths)`
    gives the base's files): (the base's files, each patch's files before it, after it), a
    patch's entries None when it renames or copies, or does not apply exactly there (no
    run of the squash check goes through it). It needs no history: a caller waiting for the
    history walks it meanwhile. `through`: the last patch walked (position); those after it
    get None (the walk of the ones before does not depend on them), the base files are
    those of the patches walked."""
    last = len(patches) - 1 if through is None else through
    paths = sorted({p for _, patch in patches[:last + 1] for p in patch.paths})
    state = dict(read_base(paths))
    base_files = dict(state)
    before: list[dict[str, bytes | None] | None] = []
    after: list[dict[str, bytes | None] | None] = []
    for k, (_, patch) in enumerate(patches):
        if k > last:
            before.append(None)
            after.append(None)
            continue
        mine_before: dict[str, bytes | None] = {}
        mine_after: dict[str, bytes | None] = {}
        usable = _run_paths(patch) is not None
        for fp in patch.file_patches if usable else ():
            path = fp.new_path or fp.old_path
            old = state.get(path) if not fp.is_new else None
            applied = apply(old, fp, max_fuzz=0)
            if not applied.ok:
                usable = False
                break
            mine_before.setdefault(path, old)
            mine_after[path] = applied.content
        if not usable:
            before.append(None)
            after.append(None)
            continue
        state.update(mine_after)
        before.append(mine_before)
        after.append(mine_after)
    return base_files, before, after


def series_landings(patches, index: "HistoryIndex", read_base, apply=apply_file_patch, *,
                    walked: tuple[dict, list, list] | None = None,
                    changes: dict[str, tuple[dict, object]] | None = None
                    ) -> dict[str, tuple[str, int, int]]:
    """Patches that landed as part of one upstream commit with their neighbours: a branch of
    several commits squash-merged upstream. For every commit of the history, the runs of
    consecutive patches that touch only files it touches are candidates; a run whose cumulative
    change (the old series' files before its first patch against after its last, git's diff)
    that commit makes, and no later commit undoes (history.judge_history), landed whole.
    One git process makes every candidate's diff. `walked`: old_series_walk's answer, when the
    caller has it already. `changes`, when given, is told per patch of a run found the run's
    change blocks and its landing (history.HistoryLanding)."""
    if len(patches) < 2 or not index.log:
        return {}
    # The runs' candidates by the patches' paths alone, before any patch is applied: a patch
    # that does not apply only takes runs away, so with none here there is none at all.
    files, runs = _runs_by_paths(patches, index)
    if not runs:
        return {}
    maybe = None
    if walked is None:
        # The runs no commit can have made by their lines alone (_runs_that_can_land), asked
        # first of these runs and every patch's lines, leave out every run the same check
        # after the walk would (a patch the walk does not apply takes runs away, and its
        # lines only make a run's required lines fewer): none left, no walk; otherwise the
        # walk goes up to the last patch of the runs left (1,500-line files applied 93 times).
        run_paths = {path for i, j in runs for k in range(i, j + 1) for path in files[k] or ()}
        maybe = _runs_that_can_land(
            runs, {k: _added_lines(patch, run_paths) for k, (_, patch) in enumerate(patches)
                   if files[k] is not None}, dict(read_base(sorted(run_paths))), index)
        if not maybe:
            return {}
        walked = old_series_walk(patches, read_base, apply, max(j for _, j in maybe))
    base_files, before, after = walked
    runs = _candidate_runs(before, index.log)
    if maybe is not None:
        # The same check after the walk keeps none of the runs it left out (see above), and
        # each run is judged alone: it is asked of the runs left only (4 of 281 against
        # main), each patch of them with all its files as before.
        runs = {run: commits for run, commits in runs.items() if run in maybe}
    run_paths = {path for i, j in runs for k in range(i, j + 1) for path in before[k] or ()}
    # The `+` lines of each patch the walk applied, on the runs' files.
    added = {k: _added_lines(patches[k][1], run_paths)
             for k, was in enumerate(before) if was is not None}
    runs = _runs_that_can_land(runs, added, base_files, index)
    lines: dict[bytes, frozenset[bytes]] = {}  # a file's content -> line_set
    # Whitespace but the line ends: taken out of a whole file at once, it leaves the same lines
    # as taking it out of each line (a C loop instead of one per line).
    inside_lines = WHITESPACE.replace(b"\n", b"")

    def line_set(k: int, path: str, was: bool) -> frozenset[bytes]:
        """Patch k's file before (was) or after it, as a set of lines, whitespace removed."""
        files = before[k] if was else after[k]
        assert files is not None
        content = files.get(path)
        if not content:
            return frozenset()
        # By content: a patch's file after it is the next one's before it, the same bytes.
        found = lines.get(content)
        if found is None:
            found = lines[content] = frozenset(content.translate(None, inside_lines).split(b"\n"))
        return found

    # A run is diffed only when some commit adds every line its cumulative change can add (the
    # lines of the run's result that are nowhere in the file before it): set operations instead
    # of a diff for each of the hundreds of runs a long series on the same files makes.
    ordered = []
    befores: list[dict[str, bytes | None]] = []  # each ordered run's files before it
    groups = []
    # The diffs of every file a candidate run touches, read in one go (not file by file).
    index.diffs(sorted({path for i, j in runs for k in range(i, j + 1)
                        for path in before[k] or ()}))
    for (i, j), commits in sorted(runs.items()):
        first: dict[str, bytes | None] = {}
        last: dict[str, bytes | None] = {}
        first_at: dict[str, int] = {}
        last_at: dict[str, int] = {}
        for k in range(i, j + 1):
            was, now = before[k], after[k]
            assert was is not None and now is not None  # runs are made of usable patches only
            for path, content in was.items():
                first.setdefault(path, content)
                first_at.setdefault(path, k)
            last.update(now)
            last_at.update(dict.fromkeys(now, k))
        # A line of the result that is not in the file before the run came from one of the
        # run's `+` lines: only those are looked up (not every line of a large file).
        new_lines: dict[str, set[bytes]] = {}
        for path in first:
            result, earlier = line_set(last_at[path], path, False), \
                line_set(first_at[path], path, True)
            # Set operations (C loops), not a test per line: hundreds of runs share patches.
            new_lines[path] = set().union(*(added[k].get(path, ()) for k in range(i, j + 1))) \
                .intersection(result).difference(earlier, (b"",))
        if not any(all(new_lines[path] <= index.added_lines(commit, path) for path in first)
                   for commit in commits):
            continue
        ordered.append((i, j))
        befores.append(first)
        groups.append([FileChange(p if first[p] is not None else None,
                                  p if last[p] is not None else None, first[p], last[p])
                       for p in first])
    if not groups:
        return {}
    try:
        diffs = make_diffs(groups)
    except StoreError:  # a path or mode git cannot diff: no cumulative diff to compare
        return {}
    found: dict[str, tuple[str, int, int]] = {}
    for (i, j), diff, first in zip(ordered, diffs, befores):
        parts = {part.split(b"\n", 1)[0].split(b" b/", 1)[-1].decode("utf-8", "surrogateescape"):
                 part for part in split_at_file_headers(diff) if part.startswith(b"diff --git ")}
        wanted = {p: b for p, b in ((p, blocks_of_git_diff(part)) for p, part in parts.items())
                  if b}
        size = sum(len(line) for bs in wanted.values() for r, a in bs for line in (*r, *a))
        if not wanted or size < MIN_CHANGED_CHARS:
            continue
        landing = index.judge_blocks(wanted, {p: blocks_of_git_diff(parts[p], spaced=True)
                                              for p in wanted})
        if landing is not None and landing.landed_by is not None and \
                not _run_made_away(index, diff, first, landing):
            for k in range(i, j + 1):
                known = found.get(patches[k][0])
                if known is None or known[2] - known[1] < j - i:  # the longest run wins
                    found[patches[k][0]] = (landing.landed_by, i + 1, j + 1)
                    if changes is not None:
                        changes[patches[k][0]] = (wanted, landing)
    return found


def _run_made_away(index: "HistoryIndex", diff: bytes, first: dict[str, bytes | None],
                   landing) -> bool:
    """Whether every commit that made a run's cumulative change (`diff`, against the run's
    files before it, `first`) since the last undoing made a hunk of it only away from that
    hunk's own place in the commit's parent (history_place.made_at, as for one patch's
    landing: the history's blocks match without places)."""
    made = landing.made_since_undo
    if not made:
        return False
    from patchforge.history_place import made_at  # (here: _made_away says why)

    try:
        file_patches = parse_diff(diff)
    except InputError:
        return False
    parents = index.store.parents_of(made)
    places = PlaceDiffs()
    for fp in file_patches:
        base = first.get(fp.path)
        if fp.binary is not None or fp.is_new or fp.is_delete or fp.old_path != fp.new_path \
                or base is None:
            continue
        answers: dict[int, list] = {k: [] for k in range(len(fp.hunks))}
        for commit in made:
            parent = parents.get(commit)
            there = index.store.read_blob(parent, fp.path) if parent is not None else None
            chunk = index.commit_diff(commit, fp.path)
            for k, hunk in enumerate(fp.hunks):
                answers[k].append(made_at(fp, k, hunk, base, there, chunk, apply_file_patch,
                                          places))
        if any(all(at is not None and at[0] == "away" for at in found)
               for found in answers.values()):
            return True
    return False


def _runs_that_can_land(runs: dict[tuple[int, int], list[str]], added: dict,
                        base_files: dict[str, bytes | None],
                        index: "HistoryIndex") -> dict[tuple[int, int], list[str]]:
    """The candidate runs (series_landings') that one of their commits can have made, by a
    necessary condition on lines alone, before any file's lines are counted.

    The `+` lines of the last patch of a run on a file are in the file after the run (the walk
    applied it without fuzz). Those of them that are neither a line of the base's file nor a
    `+` line of an earlier patch on it cannot be in the file before the run: they are lines
    the run adds, and the commit must add each of them. `added`: the `+` lines (whitespace
    removed) of each patch the walk applied, per path; `base_files`: the files at the base."""
    inside_lines = WHITESPACE.replace(b"\n", b"")
    base_lines: dict[str, frozenset[bytes]] = {}  # path -> the base file's lines
    first_added: dict[str, dict[bytes, int]] = {}  # path -> line -> the first patch adding it
    for k in sorted(added):
        for path, lines in added[k].items():
            first = first_added.setdefault(path, {})
            for line in lines:
                first.setdefault(line, k)

    kept = {}
    made: dict[tuple[int, str, int], set[bytes]] = {}  # (k, path, i) -> fresh[path]
    for (i, j), commits in runs.items():
        fresh: dict[str, set[bytes]] = {}
        for k in range(j, i - 1, -1):  # the last patch of the run on each file first
            for path, lines in added[k].items():
                if path not in fresh:
                    # The same for every run from i whose last patch on the file is k (runs
                    # from one patch end at up to MAX_SERIES_RUN places): made once.
                    found = made.get((k, path, i))
                    if found is None:
                        if path not in base_lines:
                            content = base_files.get(path)
                            base_lines[path] = frozenset(
                                content.translate(None, inside_lines).split(b"\n") if content
                                else ())
                        base, first = base_lines[path], first_added[path]
                        found = made[k, path, i] = {line for line in lines if line not in base
                                                    and first[line] >= i and line}
                    fresh[path] = found
        if any(all(lines <= index.added_lines(commit, path) for path, lines in fresh.items())
               for commit in commits):
            kept[i, j] = commits
    return kept


def where_landed(store: UpstreamStore, target: Target, patch, verdict, index: "HistoryIndex | None",
                 commits: list[str] | None = None, *,
                 holds_at: str | None = None,
                 pairs_made: dict | None = None) -> tuple[str | None, list[str]]:
    """(landed_in, history evidence to add) for a landed or partly landed patch: the commit the
    history says landed it, else the bisection of `commits` (default: those touching its files)
    after the last commit that undid the change (across a revert "landed" is not monotonic, and
    the search could end on the revert itself). `holds_at`, `pairs_made`: see landed_in."""
    if verdict.landed_commit is not None:
        return verdict.landed_commit, []
    # For a landing the content decided, the history adds news only when something undid it
    # on the way (a patch-id match already names a verbatim landing); a history in which
    # nothing can undo it (`may_undo`) is not judged: its blocks are the lookup's most work.
    landing = index.landing(patch) if index is not None and index.may_undo(patch) else None
    evidence = [line for line in landing.describe() if line not in verdict.evidence] \
        if landing is not None and landing.last_undo is not None else []
    if commits is None and index is not None:
        commits = index.commits_touching(_patch_paths(verdict))
    undo = landing.last_undo if landing is not None else None
    if commits is not None and undo in commits:
        commits = commits[commits.index(undo) + 1:]
    return landed_in(store, target, patch, verdict, commits=commits,
                     holds_at=holds_at, pairs_made=pairs_made), evidence


def added_lines_of(diff: bytes) -> frozenset[bytes]:
    """The lines a file's diff adds (its `+` lines but the `+++ ` header), whitespace removed.
    Found and stripped by C loops (a regular expression, one translate over all of them), not
    a test per line of the diff: the squash check reads this of every candidate commit."""
    added = _ADDED_LINE.findall(b"\n" + diff)
    if not added:
        return frozenset()
    return frozenset(b"\n".join(added).translate(None, WHITESPACE.replace(b"\n", b""))
                     .split(b"\n"))


def _raw_changes(text: bytes, raw: int,
                 end: int) -> list[tuple[bool, str | None, str | None, str, bytes]]:
    """The files of a commit's `:` lines (from `raw` up to `end` in `text`, the walk's; `raw`
    -1: none) in `git log --raw --no-abbrev` (`:<old mode> <new mode> <old blob> <new blob>
    <status>\t<path>`, the path C-quoted when git quotes it): (whether either side is a
    submodule, the blob before, the blob after, the path, its `diff --git` line), a missing
    side's blob None."""
    found: list[tuple[bool, str | None, str | None, str, bytes]] = []
    if raw < 0:
        return found
    for line in text[raw:end].split(b"\n:")[1:]:
        meta, _, name = line.partition(b"\t")
        old_mode, new_mode, old, new = meta.split(b" ", 4)[:4]
        name = name.split(b"\n", 1)[0]
        path = decode_path(c_unquote(name) if name.startswith(b'"') else name)
        link = old_mode == b"160000" or new_mode == b"160000"
        found.append((link, None if link or old_mode == b"000000" else old.decode(),
                      None if link or new_mode == b"000000" else new.decode(), path,
                      diff_header(path)))
    return found


def _new_blobs(text: bytes, raw: int, end: int) -> dict[str, str]:
    """What store.new_blobs gives of a commit (each file it adds or changes -> its blob after
    it, no submodule), read from its `:` lines in the range's walk (from `raw` up to `end` in
    `text`, as _raw_changes reads them; `raw` -1: none): a line whose new mode is 000000 (the
    file deleted) or 160000 (a submodule) names no such blob, as `git diff-tree -r
    --diff-filter=d` lists none."""
    found: dict[str, str] = {}
    if raw < 0:
        return found
    for line in text[raw:end].split(b"\n:")[1:]:
        meta, _, name = line.partition(b"\t")
        new_mode, _, new = meta.split(b" ", 4)[1:4]
        if new_mode not in (b"000000", b"160000"):
            name = name.split(b"\n", 1)[0]
            found[decode_path(c_unquote(name) if name.startswith(b'"') else name)] = \
                new.decode()
    return found


def _blocks_per_file(diff: bytes) -> dict[bytes, tuple]:
    """Change blocks per file (by its `diff --git` line) of `git diff-tree -p` output."""
    return {part.split(b"\n", 1)[0]: blocks_of_git_diff(part)
            for part in split_at_file_headers(diff) if part.startswith(b"diff --git ")}


def _named_share(names: frozenset[bytes], other: frozenset[bytes]) -> float:
    """How many of `names` (apply.hunks.defined_names') `other` has, over all of them (0 for
    none)."""
    return len(names & other) / len(names) if names else 0.0


def _net_names(path: str, part: bytes) -> frozenset[bytes]:
    """The names (defined_names') the diff of the file at `path` (`part`) adds definitions of
    and takes none of out: a function or class new in that file, however its lines are
    written."""
    if b"\n@@" not in part:
        return frozenset()
    text = b"\n" + part.split(b"\n@@", 1)[1]
    return defined_names(path, _PLUS_LINE.findall(text)) - \
        defined_names(path, _MINUS_LINE.findall(text))


# What a file of kept loose texts (_keep_loose) starts with; the version says its layout
# (4: synced before it is named, with its CRC-32 and the boot that wrote it).
_KEPT_LOOSE = b"patchforge loose code 4"
_KEPT_ENTRY = on_first_use(rb"([0-9]+) ([^\n]+)\n")


def _keep_loose(texts: dict[str, bytes]) -> list[bytes] | None:
    """The loose texts of a commit's every new file (path -> text) as one file, as the parts
    to write one after the other: a line of `_KEPT_LOOSE`, the CRC-32 and the length of the
    rest and the boot it is written in (store.kept.boot_id; none where the system says
    none), then per file `<length> <path>` on a line and the text; None when a path holds a
    line end (no such file is kept). Written synced (keep_text's `synced`). Not compressed:
    zlib's inflating of a release's 18.7 MB cost a rebase 70 ms, reading them 7. The texts
    are parts as they are, never joined: a release's file joined, then copied again behind
    its first line, was two copies of 18.7 MB (about 45 ms of CPU, most of it fresh pages)."""
    import zlib  # here: only a release's loose texts are kept

    from patchforge.store.kept import boot_id

    names = {path: path.encode("utf-8", "surrogateescape") for path in texts}
    if any(b"\n" in name for name in names.values()):
        return None
    body: list[bytes] = []
    crc = size = 0
    for path, text in texts.items():
        for part in (b"%d %s\n" % (len(text), names[path]), text):
            body.append(part)
            crc = zlib.crc32(part, crc)
            size += len(part)
    return [b"%s %08x %d %s\n" % (_KEPT_LOOSE, crc, size, boot_id() or b"-"), *body]


def _kept_loose(data: bytes | mmap.mmap | None) -> dict[str, bytes | _KeptText]:
    """The texts of a file _keep_loose made, by path; none at all unless `data` (its bytes, or
    the file mapped: store.kept_text) is such a file whole: of this layout (an earlier one is
    made again), its length the one its first line says, its entries (`<length> <path>`
    lines) ending where it ends, and its CRC-32 the one its first line says unless it was
    written in this boot (synced before it was named, and no crash since: store.kept.boot_id;
    the check of a release's 18.7 MB cost every command reading it 8 ms of CPU). A file of
    another boot (a cache copied, restored, moved, then a crash) is checked."""
    import zlib  # here: only a release's loose texts are kept

    from patchforge.store.kept import boot_id

    if data is None or data[:len(_KEPT_LOOSE) + 1] != _KEPT_LOOSE + b" ":
        return {}
    at = data.find(b"\n") + 1  # the body's start (its bytes are not copied)
    fields = data[len(_KEPT_LOOSE) + 1:at - 1].split(b" ")
    if at == 0 or len(fields) != 3 or fields[1] != b"%d" % (len(data) - at):
        return {}
    if boot_id() is None or fields[2] != boot_id():
        with memoryview(data) as view:
            if fields[0] != b"%08x" % zlib.crc32(view[at:]):
                return {}
    spans: list[tuple[str, int, int]] = []
    while at < len(data):
        entry = _KEPT_ENTRY.match(data, at)
        if entry is None:
            return {}
        start = entry.end()
        at = start + int(entry[1])
        if at > len(data):
            return {}
        spans.append((entry[2].decode("utf-8", "surrogateescape"), start, at))
    return _KeptLoose(data, spans) if spans else {}


class _KeptText:
    """A loose text where a kept file (_kept_loose) holds it: searched in place (`part in
    text`, what the moved-code checks ask of a text), not copied out of the file's bytes (a
    release's 18.7 MB copied again cost 10 ms of CPU, most of it fresh pages). `data`: the
    file's bytes, or the file mapped (mmap's `find` is bytes')."""
    __slots__ = ("data", "start", "end")

    def __init__(self, data: bytes | mmap.mmap, start: int, end: int) -> None:
        self.data, self.start, self.end = data, start, end

    def __contains__(self, part: bytes) -> bool:
        return self.data.find(part, self.start, self.end) >= 0

    def __bytes__(self) -> bytes:
        return self.data[self.start:self.end]


def _holds_share(lines: list[tuple[int, bytes]], text: bytes | _KeptText, need: float) -> bool:
    """Whether the lines of `lines` ((size, line), largest first) that `text` holds are `need`
    in size or more: `sum(size for size, line in lines if line in text) >= need`, its
    searches stopped once the answer is known (the lines left cannot reach it, or it is
    reached): at 300 patches a release's 1,246 files are searched for a moved block's lines."""
    found, left = 0, sum(size for size, _ in lines)
    for size, line in lines:
        if found >= need or found + left < need:
            break
        left -= size
        if line in text:
            found += size
    return found >= need


class _KeptLoose(dict):
    """_kept_loose's texts by path (each a _KeptText), all in one kept file's bytes, one after
    the other, each behind its entry line: a part asked of every text is searched for in the
    file once (`holding`, `sharing`), not once per text. A release's 1,246 texts asked one by
    one were 1,246 searches over the same bytes, each a call that set up its search of the
    part again (for a part of 100 bytes or more, the two-way search's preprocessing)."""

    def __init__(self, data: bytes | mmap.mmap, spans: list[tuple[str, int, int]]) -> None:
        super().__init__((path, _KeptText(data, start, end)) for path, start, end in spans)
        self.data = data
        self.paths = [path for path, _, _ in spans]
        self.starts = [start for _, start, _ in spans]
        self.ends = [end for _, _, end in spans]

    def _holding(self, part: bytes) -> list[int]:
        """The positions (in order) of the texts that hold `part`: one search from the first
        text on. A place found lies in the text it starts in, or runs past that text's end
        (across the entry line after it: in no text, and no later place of that text can
        end inside it); either way the search goes on from the next text's start."""
        data, starts, ends = self.data, self.starts, self.ends
        found: list[int] = []
        k, at = 0, starts[0]
        while True:
            place = data.find(part, at)
            if place < 0:
                return found
            k = bisect.bisect_right(starts, place, k) - 1
            if place + len(part) <= ends[k]:
                found.append(k)
            k += 1
            if k == len(starts):
                return found
            at = starts[k]

    def holding(self, part: bytes) -> list[str]:
        """The paths of the texts that hold `part` (`part in text`), in order."""
        return [self.paths[k] for k in self._holding(part)]

    def sharing(self, lines: list[tuple[int, bytes]], need: float) -> list[str]:
        """The paths, in order, of the texts _holds_share(lines, text, need) answers yes for:
        each line (largest first) searched for once in the whole file while the texts still
        undecided are most of its bytes, then in each undecided text alone. A text stays
        undecided while _holds_share's search of it would go on (below `need`, and the lines
        left can still reach it); a decided text's answer is its sum's, found more or not
        (_holds_share's answer is the sum's)."""
        starts, ends = self.starts, self.ends
        found = [0] * len(starts)
        left = sum(size for size, _ in lines)
        whole = ends[-1] - starts[0]
        undecided: list[int] | range = range(len(starts))
        for size, line in lines:
            undecided = [k for k in undecided if found[k] < need <= found[k] + left]
            if not undecided:
                break
            left -= size
            if 2 * sum(ends[k] - starts[k] for k in undecided) > whole:
                for k in self._holding(line):
                    found[k] += size
            else:
                for k in undecided:
                    if self.data.find(line, starts[k], ends[k]) >= 0:
                        found[k] += size
        return [self.paths[k] for k, held in enumerate(found) if held >= need]


def _texts_holding(texts: dict[str, bytes | _KeptText], part: bytes) -> list[str]:
    """The paths of `texts` whose text holds `part`, in order (kept texts: one search)."""
    if isinstance(texts, _KeptLoose):
        return texts.holding(part)
    return [path for path, text in texts.items() if part in text]


def _texts_sharing(texts: dict[str, bytes | _KeptText], lines: list[tuple[int, bytes]],
                   need: float) -> list[str]:
    """The paths of `texts` that hold `need` of `lines` (_holds_share), in order (kept
    texts: each line searched for once in the whole kept file while most are undecided)."""
    if isinstance(texts, _KeptLoose):
        return texts.sharing(lines, need)
    return [path for path, text in texts.items() if _holds_share(lines, text, need)]


def _net_lines(part: bytes, adds: bool) -> frozenset[bytes]:
    """The lines of code (history.code_lines') one file's diff (`part`) adds (`adds`) or
    takes out, and does not also take out (add) there."""
    if b"\n@@" not in part:
        return frozenset()
    text = b"\n" + part.split(b"\n@@", 1)[1]
    plus, minus = code_lines(_PLUS_LINE.findall(text)), code_lines(_MINUS_LINE.findall(text))
    return plus - minus if adds else minus - plus


class HistoryIndex:
    """The upstream history between a base and a target, read once per series: which commits
    touch which of the series' files (`log`, oldest first by ancestry), each commit's diff of
    each file, and which commits a revert's message names. Change blocks, landed_in's
    candidates and patch-ids (one `git patch-id` for the whole series) all come from it.

    What it holds is what `git log -p --ancestry-path --topo-order BASE..TARGET -- <paths>`
    shows. With `--ancestry-path` git does not simplify the history: it shows every commit of
    the range that changes the paths (a merge when it differs from a parent in them, without
    a diff), in the order of the same walk without a pathspec. So the commits come from that
    walk with `--raw` (matching hundreds of paths against every commit's trees is most of the
    `git log -p`'s cost), and each file's diffs are read only when a question needs them (one
    `git diff-tree` for the paths asked, never again). A history with a merge from outside the
    range is read with that `git log -p` itself."""

    # made_blocks reads the files that look landed along with the own places' files when
    # fewer than this: each is a diff more that the walk waits for there. (The rebase starts
    # its landing reads beside the walk once rebase.engine._EARLY_MIN files wait.)
    LANDING_READ_ALONG = 8

    def __init__(self, store: UpstreamStore, target: Target, paths: list[str], *,
                 changes: bytes | OneCommitWalk | None = None) -> None:
        """`changes`: read_history's walk of base..target when the caller has it already."""
        self.store = store
        self.target = target
        self.paths = paths
        # commit -> {its `diff --git` line: that file's diff}, for the paths in `_loaded`.
        self._chunks: dict[str, dict[bytes, bytes]] = {}
        self._loaded: set[str] = set()
        self._order: list[str] = []  # commits as `git log` gives them, newest first
        self._blocks: dict[tuple[str, bytes], tuple] = {}  # (commit, diff header) -> blocks
        # (commit, diff header) -> that diff without whitespace (may_undo)
        self._flat: dict[tuple[str, bytes], bytes] = {}
        self._reverts: dict[str, list[str]] = {}  # commit -> the commits its message reverts
        self._added: dict[tuple[str, str], frozenset[bytes]] = {}
        # (id(patch), spaced) -> (the patch, its patch_blocks) (_blocks_of)
        self._patch_blocks: dict[tuple[int, bool], tuple] = {}
        self._stripped: dict = {}  # judge_history's `kept`
        self._whole: dict[str, dict[bytes, tuple]] = {}  # commit -> blocks per diff header
        # commit -> {diff header: [that file's diff, its added lines and its removed lines
        # as loose_code has them, its blocks (each made when first asked)]} (_files_holding)
        self._parts: dict[str, dict[bytes, list]] = {}
        # commit -> {each file it adds or changes: its content after it, loose_code's}
        self._new_code: dict[str, dict[str, bytes | _KeptText]] = {}
        # commit -> the range's walk, where the commit's `:` lines start in it (`git log
        # --raw`: each file it changes, with the blob ids before and after; -1: none) and
        # where its part of the walk ends, for every commit of the range with one parent;
        # _raw_changes of them, made when first asked; blob id -> its content as loose_code
        # has it (None: binary), and a binary one's loose_code apart (the test whether a
        # commit can put code in, _may_put_in); (commit, diff header) -> that file's blocks
        # (_blocks_holding)
        self._raw: dict[str, tuple[bytes, int, int]] = {}
        # A one-commit range whose `_raw` lists the series' paths alone (OneCommitWalk): git's
        # walk of the commit's every file is asked when a question needs them (_whole_raw).
        self._paths_only: OneCommitWalk | None = None
        self._changes: dict[str, list] = {}
        self._loose: dict[str, bytes | None] = {}
        self._loose_binary: dict[str, bytes] = {}
        self._held: dict[tuple[str, bytes], tuple] = {}
        self._at: dict[str, list[int]] | None = None  # path -> its places in `log`
        self._touches: dict[str, list[str]] | None = None  # `log` as a dict (_fetch_versions)
        # The diffs start_landing asked for and no question has taken yet: (paths, the git
        # process reading them), and those paths.
        self._started: list[tuple[list[str], HistoryDiffs]] = []
        self._starting: set[str] = set()
        # Every commit of the range but merges, as the walk lists them (newest first), and
        # where each is in it (`beside`): left empty where the walk is not read.
        self._range: list[str] = []
        touched = self._walk_without_pathspec(changes) if paths else {}
        if touched is None:
            touched = self._read_log_patches()
        self._range_at = {commit: k for k, commit in enumerate(self._range)}
        # Each commit's paths in the order of `paths`: the few a commit touches sorted, not
        # each of the hundreds of paths tested against each of the thousands of commits.
        rank = {path: k for k, path in enumerate(paths)}
        self.log: list[tuple[str, list[str]]] = [
            (commit, sorted(touched[commit], key=rank.__getitem__))
            for commit in reversed(self._order)]

    def made_blocks(self, asked: list[tuple[str, bytes, bytes]],
                    landing: Sequence[str] = ()) -> dict:
        """{(base, file): store.diff.changed_blocks of that pair} for those of `asked` ((path,
        the base's content, a content of it), text, different) whose path one commit alone of
        this history changes, from exactly the one content to the other (its diff's `index`
        line names their blob ids): that diff is git's of those two contents with
        changed_blocks' options (store.diff.DIFF_OPTIONS), so no `git diff --no-index` is made
        for them (the own places of a release's landed files: 30 pairs, 2.9 MB, at 300
        patches). Their diffs are read as landing() reads them, in one git process for those
        not read yet; when that process is started, it also reads the history of `landing`
        (the paths of files the rest of the walk meets that look landed where they are), if
        there are fewer than LANDING_READ_ALONG: the landing lookup reads them after the walk
        otherwise, in a git process of its own (a first `rebase --to` of a release at 30
        patches: one `git diff-tree` instead of two). More are left to the rebase's reads
        beside the walk (rebase.engine's `_start_early`): here the walk waits for them."""
        wanted = [(path, base, current) for path, base, current in asked
                  if path in self.paths and base is not None and current is not None and
                  base != current and not is_binary(base) and
                  not is_binary(current) and len(self.commits_touching([path])) == 1]
        if not wanted:
            return {}
        paths = {path for path, _, _ in wanted}
        if len(landing) < self.LANDING_READ_ALONG and self.unread(list(paths))[0]:
            paths.update(landing)  # (diffs reads only this index's paths not read yet)
        chunks = self.diffs(sorted(paths))
        found = {}
        for path, base, current in wanted:
            commit = self.commits_touching([path])[0]
            chunk = chunks.get(commit, {}).get(diff_header(path))
            if chunk is None:
                continue
            ids = b"\nindex %s..%s" % (blob_oid(base).encode(), blob_oid(current).encode())
            at = chunk.find(ids)
            blocks = blocks_of_file_diff(chunk) if at >= 0 and \
                chunk[at + len(ids):at + len(ids) + 1] in (b" ", b"\n") else None
            if blocks is not None:
                found[base, current] = blocks
        return found

    def commits_touching(self, paths: list[str]) -> list[str]:
        """The commits of `log` that touch any of `paths`, in its order."""
        if self._at is None:
            # Where each path is in the log: each question looks up its few paths instead of
            # walking the log (thousands of commits on a long history, a question per patch).
            self._at = {}
            for k, (_, changed) in enumerate(self.log):
                for path in changed:
                    self._at.setdefault(path, []).append(k)
        found = sorted({k for path in set(paths) for k in self._at.get(path, ())})
        return [self.log[k][0] for k in found]

    def added_lines(self, commit: str, path: str) -> frozenset[bytes]:
        """The lines `commit` adds to `path`, whitespace removed."""
        key = (commit, path)
        if key not in self._added:
            chunk = self.diffs([path]).get(commit, {}).get(diff_header(path), b"")
            self._added[key] = added_lines_of(chunk)
        return self._added[key]

    def landing(self, patch):
        """What the history says of `patch` (history.HistoryLanding), None when it cannot say
        (a file outside the paths read, a binary or rename, too small a change)."""
        wanted = self._blocks_of(patch)
        made: list[dict] = []

        def spaced() -> dict:
            # Made only for a commit whose blocks make the change: each of its files read
            # at the pin, to tell where its hunks start inside a string over lines.
            if not made:
                made.append(self._blocks_of(patch, spaced=True) or {})
            return made[0]
        return self.judge_blocks(wanted, spaced if wanted is not None else None,
                                 from_files=True)

    def commit_diff(self, commit: str, path: str) -> bytes | None:
        """`commit`'s diff of `path` (of this index's paths) as the history reads it, None when
        it has none."""
        if path not in self.paths:
            return None
        return self.diffs([path]).get(commit, {}).get(diff_header(path))

    def may_undo(self, patch) -> bool:
        """Whether a commit of this history can undo `patch`'s change as judge_history judges
        undoing: False only when landing(patch) finds no commit that undoes it (or gives None),
        told from the diffs' text (history.undo_probes) without making their blocks. A commit
        whose message reverts one is not looked into: True."""
        wanted = self._blocks_of(patch)
        if wanted is None or not set(wanted) <= set(self.paths):
            return False  # landing(patch) is None
        commits = self.commits_touching(list(wanted))
        probes = undo_probes(wanted)
        if probes is None or any(commit in self._reverts for commit in commits):
            return True
        if not probes:
            return False
        chunks = self.diffs(list(probes))
        for path, wanted_there in probes.items():
            header = diff_header(path)
            for commit in commits:
                chunk = chunks.get(commit, {}).get(header)
                if chunk is None:
                    continue
                key = (commit, header)
                text = self._flat.get(key)
                if text is None:
                    text = self._flat[key] = without_whitespace(chunk)
                if may_reverse(wanted_there, text):
                    return True
        return False

    def _blocks_of(self, patch, spaced: bool = False):
        """history.patch_blocks of `patch` (its files before it read at the base), made once
        per patch: start_landing, may_undo and landing each ask it."""
        key = (id(patch), spaced)
        made = self._patch_blocks.get(key)
        if made is None or made[0] is not patch:
            made = self._patch_blocks[key] = (patch, patch_blocks(
                patch, lambda path: self.store.read_blob(self.target.base_commit, path), spaced))
        return made[1]

    def start_landing(self, patch) -> None:
        """The diffs landing(patch) reads that are not read yet, asked of git now and taken
        when a question first needs them (`diffs`): the same text, read meanwhile."""
        # Every file it can ask about read or being read (its blocks name its paths only):
        # nothing to start, and its blocks are not worth making.
        if not set(patch.paths).intersection(self.paths).difference(self._loaded,
                                                                     self._starting):
            return
        wanted = self._blocks_of(patch)
        if wanted is None or not set(wanted) <= set(self.paths):
            return
        missing, commits = self.unread(list(wanted))
        if missing and commits:
            self._fetch_versions(commits, missing)
            self._started.append((missing, self.store.start_commit_patches(commits, missing)))
            self._starting.update(missing)

    def close(self) -> None:
        """Ends the reads start_landing started that no question took."""
        started, self._started = self._started, []
        self._starting.clear()
        for _, read in started:
            read.close()

    def judge_blocks(self, wanted, spaced=None, from_files: bool = False):
        """history.judge_history of change blocks per path over this history; `spaced`: the
        same change's blocks as history.spaced_blocks_of_lines makes them, or a function
        giving them (a commit makes the change only where its own so made contain them too).
        `from_files`: `spaced` read each hunk from where the file before the change is at its
        start (inside a string over lines or not), and so are the commits' (each from its
        file before it)."""
        if wanted is None or not set(wanted) <= set(self.paths):
            return None
        chunks = self.diffs(list(wanted))
        headers = {path: diff_header(path) for path in wanted}
        commits = []
        for commit in self.commits_touching(list(wanted)):
            files = chunks.get(commit, {})
            changed = {}
            for path, header in headers.items():
                if header in files:
                    key = (commit, header)
                    if key not in self._blocks:
                        self._blocks[key] = blocks_of_git_diff(files[header])
                    changed[path] = self._blocks[key]
            commits.append((commit, changed))

        def spaced_of(commit: str) -> dict[str, tuple]:
            files = chunks.get(commit, {})
            return {path: blocks_of_git_diff(files[header], spaced=True, opened=self._strings(
                        files[header]) if from_files else None)
                    for path, header in headers.items() if header in files}

        return judge_history(wanted, commits, self._reverts, self.other_files,
                             (spaced, spaced_of) if spaced is not None else None,
                             self._stripped)

    def _strings(self, chunk: bytes):
        """history.spaced_blocks_of_lines' `opened` of the file one commit's diff (`chunk`)
        changes, read by its blob id when first asked (outside strings for a file it
        creates)."""
        blob = old_blob(chunk)

        def read() -> bytes | None:
            try:
                return self.store.read_blob_id(blob) if blob is not None else None
            except StoreError:
                return None  # (not in a partial store: each hunk read from outside strings)
        return file_strings(read)

    def other_files(self, commit: str, paths: list[str],
                    codes: tuple[bytes, ...] | None = None):
        """`commit`'s change blocks in its files other than `paths` (judge_history's
        `elsewhere`: where a commit taking a fix's code out may have put the old code back),
        and those of the commits beside it (`beside`: a move made in two commits, out of the
        fix's file in one, into another file in the next). With `codes` (code_of's texts:
        the old code, the fix's), only the files whose content before or after the commit
        (_blocks_holding), or else whose lines added or removed (the commits beside, without
        the range's walk), whitespace and commas out, hold one of them: every block in which
        _code_run_in (put_in's test of a block) can find one is among them, or none at all
        when no file's content after these commits can hold the first of `codes` (put_in then
        finds it put in nowhere, whatever the other blocks are: _may_put_in)."""
        asked = {diff_header(path) for path in paths}
        if codes is not None and commit in self._whole_raw():
            ones = [commit, *self.beside(commit)]
            held = self._blocks_holding(ones, codes, asked)
            return tuple(block for one in ones for blocks in held[one].values()
                         for block in blocks)
        own = tuple(block for header, blocks in self._whole_commit(commit).items()
                    if header not in asked for block in blocks)
        if codes is not None:
            self._read_parts([one for one in self.beside(commit)
                              if one not in self._whole and one not in self._parts])
        return own + tuple(block for one in self.beside(commit)
                           for header, blocks in self._files_holding(one, codes).items()
                           if header not in asked for block in blocks)

    # The version of _blocks_holding's "none can hold it" as kept (_may_put_in's test of a
    # file by its link flag, blob id and loose content): part of the kept answer's name, raise
    # it with any change to that test.
    _NONE_HOLDS_READING = 1

    def _blocks_holding(self, commits: list[str], codes: tuple[bytes, ...],
                        leaving: set[bytes]) -> dict[str, dict[bytes, tuple]]:
        """Each of `commits`' (the range's, one parent each) change blocks per file (by its
        `diff --git` line) but the files of `leaving` (diff headers), of the files whose
        content before or after it holds one of `codes`
        (code_of's), whitespace and commas out (loose_code), and of its binary files and
        submodules: a block's removed (added) lines are consecutive lines of the content
        before (after), so every block in which _code_run_in finds a code is among them. The
        files are told by their blobs (named by the range's walk, each read once), and only
        theirs are diffed, in one git process: the commits beside a removal are whole
        commits (a table of tuned shapes rewritten), whose every file diffed was most of
        git's work in `status --against`. The contents after the commits are read first:
        when none can hold the first of `codes` (_may_put_in), no block puts it in, and
        put_in, the one question asked of these blocks (history._put_back_apart), is False
        whatever they are: none is made, and the contents before (as many bytes again) are
        not read."""
        wanted = [loose_code(code) for code in codes]
        changes = {}
        for one in commits:
            files = self._changes.get(one)
            if files is None:
                files = self._changes[one] = _raw_changes(*self._whole_raw()[one])
            changes[one] = files
        # That no content after these commits can hold the first code is a function of that
        # code and of the files' blob ids alone (a blob id names its content for ever): an
        # earlier command's "none" (store.diff.KeptAnswers) answers it without the contents,
        # which were most of the read (each inflated by git and made loose; the figures are
        # in docs/performance.md).
        kept, name = kept_answers(), ""
        if kept is not None:
            name = kept.name_of("none-holds", (str(self._NONE_HOLDS_READING), loose_code_key()),
                                [wanted[0], *(b"%d %s" % (link, (new or "-").encode())
                                              for files in changes.values()
                                              for link, _, new, _, header in files
                                              if header not in leaving)])
            if kept.answer(name) == b"none":
                return {one: {} for one in commits}
        self._read_loose(changes, leaving, after=True)
        if not any(self._may_put_in(wanted[0], link, new)
                   for files in changes.values()
                   for link, _, new, _, header in files if header not in leaving):
            if kept is not None:
                kept.keep(name, [b"none"])
            return {one: {} for one in commits}
        self._read_loose(changes, leaving, after=False)
        found: dict[str, dict[bytes, tuple]] = {}
        asked: dict[str, dict[bytes, str]] = {}  # commit -> {header: path} to diff
        for one, files in changes.items():
            for link, old, new, name, header in files:
                if header in leaving:
                    continue
                texts = [self._loose.get(oid) for oid in (old, new) if oid is not None]
                if link or any(text is None or any(code in text for code in wanted)
                               for text in texts):
                    if (one, header) not in self._held:
                        asked.setdefault(one, {})[header] = name
        if asked:
            paths = sorted({name for names in asked.values() for name in names.values()})
            text = self.store.commits_file_patches(
                list(asked), paths if len(paths) <= self.NAMED_FILES_AT_MOST else [])
            made: dict[tuple[str, bytes], tuple] = {
                (one, header): () for one, names in asked.items() for header in names}
            text = b"\n" + text
            starts = [(at.start() + 1, at[1]) for at in _COMMITS_AND_FILES.finditer(text)]
            starts.append((len(text), None))
            of = None  # the commit the sections follow
            for (start, commit_id), (end, _) in zip(starts, starts[1:]):
                if commit_id is not None:
                    of = commit_id.decode()
                elif of is not None:
                    section = text[start:end]
                    key = (of, section.split(b"\n", 1)[0])
                    if key in made:  # (one git does not write has no blocks)
                        made[key] = blocks_of_git_diff(section)
            self._held.update(made)
        for one, files in changes.items():
            mine = found[one] = {}
            for *_, header in files:
                blocks = self._held.get((one, header))
                if blocks is not None and header not in leaving and header not in mine:
                    mine[header] = blocks
        return found

    def _read_loose(self, changes: dict[str, list], leaving: set[bytes], after: bool) -> None:
        """The contents after (`after`, else before) the commits of `changes` (_raw_changes'
        of each) of their files but those of `leaving` into `_loose` (and `_loose_binary`),
        those not read yet, in one cat-file round."""
        unread: dict[str, tuple[str, str]] = {}
        for one, files in changes.items():
            for _, old, new, name, header in files:
                oid = new if after else old
                if header not in leaving and oid is not None and oid not in self._loose:
                    unread.setdefault(oid, (one, name))
        if unread:
            for oid, data in self.store.history_blobs(unread).items():
                if b"\0" in data[:8000]:
                    self._loose[oid] = None
                    self._loose_binary[oid] = loose_code(data)
                else:
                    self._loose[oid] = loose_code(data)

    _NO_BLOB = "0" * 40  # (the blob id git's diff writes for a side a file does not have)

    def _may_put_in(self, code: bytes, link: bool, new: str | None) -> bool:
        """Whether a commit's diff of a file (a submodule: `link`; `new`: its blob after the
        commit, None when it deletes the file, read by _read_loose) can have a block whose
        added lines _code_run_in finds `code` (loose_code's) in: as text, its added lines are
        consecutive lines of the content after it, whose loose_code then has `code`; as a
        binary file's (either side binary, for git), its added side is the blob id line
        (history.binary_block). A submodule's lines are taken as able to."""
        if link:
            return True
        oid = new if new is not None else self._NO_BLOB
        if code in b"blob:" + oid.encode():
            return True
        if new is None:
            return False
        if new not in self._loose:
            return True  # (not read: a blob the store does not have, for git's diff to say)
        text = self._loose[new]
        return code in (text if text is not None else self._loose_binary[new])

    def _files_holding(self, commit: str,
                       codes: tuple[bytes, ...] | None) -> dict[bytes, tuple]:
        """`commit`'s change blocks per file (as _whole_commit's), of the files whose added
        or removed lines can hold one of `codes` (code_of's; all with None). Its diff is read
        once; a file's blocks are made only when a question first needs them: the commits
        beside a removal are whole commits (a table of tuned shapes rewritten), whose every
        file parsed cost `status --against` a tenth of its time."""
        whole = self._whole.get(commit)
        if whole is not None or codes is None:
            return whole if whole is not None else self._whole_commit(commit)
        if commit not in self._parts:
            self._read_parts([commit])
        parts = self._parts[commit]
        wanted = [loose_code(code) for code in codes]
        found = {}
        for header, held in parts.items():
            part = held[0]
            if b"\n@@" in part:  # (a binary file's blob block is always made: no lines)
                if held[1] is None:
                    # Each run a block has of added (removed) lines is a run of the file's
                    # added (removed) lines, whatever else git writes between them.
                    held[1] = loose_code(b"\n".join(_PLUS_LINE.findall(part)))
                    held[2] = loose_code(b"\n".join(_MINUS_LINE.findall(part)))
                if not any(code in held[1] or code in held[2] for code in wanted):
                    continue
            if held[3] is None:
                held[3] = blocks_of_git_diff(part)
            found[header] = held[3]
        return found

    def _read_parts(self, commits: list[str]) -> None:
        """The whole diffs of `commits` (none a merge) into `_parts`, in one git process."""
        if not commits:
            return
        for commit in commits:
            self._parts[commit] = {}
        text = b"\n" + self.store.commit_patches(commits, [])
        starts = [(found.start() + 1, found[1]) for found in _COMMITS_AND_FILES.finditer(text)]
        starts.append((len(text), None))
        mine = None  # the sections of the commit they follow
        for (start, commit_id), (end, _) in zip(starts, starts[1:]):
            if commit_id is not None:
                mine = self._parts.get(commit_id.decode())
            elif mine is not None:
                section = text[start:end]
                mine[section.split(b"\n", 1)[0]] = [section, None, None, None]

    def _whole_commit(self, commit: str) -> dict[bytes, tuple]:
        """`commit`'s change blocks per file (by its `diff --git` line), its whole diff read
        once, when a question first needs it."""
        files = self._whole.get(commit)
        if files is None:
            files = self._whole[commit] = _blocks_per_file(
                self.store.commit_patches([commit], []))
        return files

    def moved_to(self, path: str, removed: tuple[bytes, ...]) -> tuple[list[str], str] | None:
        """([commit], the file) when the last commit of this history that takes the lines
        `removed` (a run of them, whitespace ignored) out of `path`, and puts none of them
        back there, puts them into another file: a move, not a removal. ([commit, other],
        the file) when it puts them nowhere and a commit next to it (`beside`) puts them
        into another file: a move made in two commits."""
        if path not in self.paths:
            return None
        code = code_of(removed)
        header = diff_header(path)
        chunks = self.diffs([path])
        found = None
        for commit in self.commits_touching([path]):
            chunk = chunks.get(commit, {}).get(header)
            if chunk is None:
                continue
            theirs = self._blocks.get((commit, header))
            if theirs is None:
                theirs = self._blocks[commit, header] = blocks_of_git_diff(chunk)
            if not taken_out(removed, code, theirs):
                continue
            found = None
            for one in (commit, *self.beside(commit)):
                for other, blocks in self._files_with_code(one, code).items():
                    if other != header and other.startswith(b"diff --git a/") and \
                            put_in(code, blocks):
                        found = [commit] if one == commit else [commit, one], \
                            os.fsdecode(other.split(b" b/", 1)[-1])
                if found is not None:
                    break
        return found

    def folded_into(self, path: str, code: frozenset[bytes],
                    names: frozenset[bytes] = frozenset()) -> tuple[list[str], str] | None:
        """([commit], the file) when the last commit of this history that takes most of
        `code` (history.code_lines' of lines a fix removes, or of a file it deletes:
        MOVED_SHARE of it) out of `path`, and does not put it back there, adds most of it to
        one other file, or (where no file gets most of its lines) definitions of most of
        `names` (the functions and classes that code defines, apply.hunks.defined_names'):
        the code moved (a file folded into another) and edited there, however much, which no
        rename git finds and no run of its lines (moved_to) shows. ([commit, other], the file)
        when a commit next to it (`beside`) does: a move made in two commits."""
        if path not in self.paths or len(code) < MOVED_LINES:
            return None
        header = diff_header(path)
        chunks = self.diffs([path])
        found = None
        for commit in self.commits_touching([path]):
            chunk = chunks.get(commit, {}).get(header)
            if chunk is None or share(code, _net_lines(chunk, False)) < MOVED_SHARE:
                continue
            found = None
            for one in (commit, *self.beside(commit)):
                other = self._adding_most_of(one, code, path)
                if other is None and names:
                    other = self._defining(one, names, path)
                if other is not None:
                    found = [commit] if one == commit else [commit, one], other
                    break
        return found

    def _defining(self, commit: str, names: frozenset[bytes], path: str) -> str | None:
        """The file other than `path` into which `commit` puts definitions of the largest
        share of `names` (defined_names'), MOVED_SHARE of them or more, each new there
        (`_net_names`); None when no file gets that many. Only the files whose content after
        it holds that many of the names are diffed."""
        need = MOVED_SHARE * len(names)
        holding = [one for one, text in self._loose_contents(commit).items() if one != path
                   and sum(name in text for name in names) >= need]
        if not holding:
            return None
        return self._most_moved_into(commit, holding,
                                     lambda one, part: _named_share(names, _net_names(one, part)))

    def _adding_most_of(self, commit: str, code: frozenset[bytes], path: str) -> str | None:
        """The file other than `path` to which `commit` adds the largest share of `code`
        (code_lines'), MOVED_SHARE of it or more in MOVED_LINES lines or more, its lines net
        (not also taken out of it); None when no file gets that much. The files whose content
        after it has that much are read first (each line of code_lines' is in the file's
        loose_code; a file without that much so is not read by lines); their diff alone is
        asked."""
        lines = sorted(((len(line), loose_code(line)) for line in code), reverse=True)
        need = MOVED_SHARE * sum(size for size, _ in lines)
        loose = [one for one in _texts_sharing(self._loose_contents(commit), lines, need)
                 if one != path]
        # Only those files' content is read again as it is (the release's every file read
        # again cost a 300-patch rebase about 60 ms of CPU), their blobs fetched already.
        texts = self.store.read_blobs(commit, loose, fetch_together=False) if loose else {}
        holding = []
        for one in loose:
            text = texts.get(one)
            if text is not None and share(code, code_lines(text.split(b"\n"))) >= MOVED_SHARE:
                holding.append(one)
        if not holding:
            return None

        def moved_share(one: str, part: bytes) -> float:
            added = _net_lines(part, True)
            return share(code, added) if len(code & added) >= MOVED_LINES else 0.0

        return self._most_moved_into(commit, holding, moved_share)

    def _most_moved_into(self, commit: str, holding: list[str], measure) -> str | None:
        """The file of `holding` whose part of `commit`'s diff `measure(file, part)` gives the
        largest share, MOVED_SHARE or more; None when none does. (A file's part is found by its
        `diff --git` line as git writes it: quoted where git quotes it, `"b/k\303\251.py"`,
        which no split at " b/" reads.)"""
        headers = {diff_header(one): one for one in holding}
        best, most = None, 0.0
        for part in split_at_file_headers(self.store.commit_file_patches(commit, holding)):
            one = headers.get(part.split(b"\n", 1)[0])
            if one is None:
                continue
            found = measure(one, part)
            if found >= MOVED_SHARE and found > most:
                best, most = one, found
        return best

    def _files_with_code(self, commit: str, code: bytes) -> dict[bytes, tuple]:
        """`commit`'s change blocks per file (as _whole_commit's) of those of its files that
        can put `code` (code_of's) in, as put_in asks: the files whose content after it has
        the code, whitespace and commas out (loose_code), a condition every file put_in finds
        meets. Their diff alone is read: a wheel upstream's commit is a whole release, whose
        every file diffed and parsed cost a 300-patch rebase 0.4 s of CPU; its files' content
        read once (cat-file) and searched for each block asked costs about a third of it."""
        whole = self._whole.get(commit)
        if whole is not None:
            return whole
        wanted = loose_code(code)  # (code_of keeps a string's whitespace; the texts none)
        holding = _texts_holding(self._loose_contents(commit), wanted)
        if len(holding) > self.NAMED_FILES_AT_MOST:  # (code that common: the whole diff)
            return self._whole_commit(commit)
        return _blocks_per_file(self.store.commit_file_patches(commit, holding)) \
            if holding else {}

    def _loose_contents(self, commit: str) -> dict[str, bytes | _KeptText]:
        """Each file `commit` (not a merge) adds or changes -> its content after it as
        loose_code has it, made once per commit for every question about it: from its blob
        (cat-file), or, for a commit of KEEP_LOOSE_AT_LEAST files or more, from what an
        earlier command made of that blob and kept in the cache (store.kept_text)."""
        texts = self._new_code.get(commit)
        if texts is None:
            texts = self._new_code[commit] = self._made_loose(commit)
        return texts

    # The fewest new files of a commit whose loose texts are kept in the cache once made: a
    # release (a wheel upstream's commit, 1,247 files at 300 patches), whose every blob git
    # inflated and loose_code translated again in each rebase or status that asked (about 180
    # ms of CPU, most of it git's); a commit of a few files is read as it is.
    KEEP_LOOSE_AT_LEAST = 256

    def _made_loose(self, commit: str) -> dict[str, bytes | _KeptText]:
        """_loose_contents' texts of `commit`: those an earlier command kept for it, as they
        are (no git process at all: a commit's files are its id's), or else each made from its
        blob, and then kept when there are enough and every one was read."""
        name = f"loose-{loose_code_key()}-{commit}"
        kept = _kept_loose(self.store.kept_text(name))
        if kept:
            return kept
        # The range's walk names a commit's every file and its blob after it already (a
        # release's 1,246: `git diff-tree -r` listing them again cost the first command asking
        # about it a git process of 22 million instructions); a commit it does not hold, a
        # merge, is listed by git.
        raw = self._whole_raw().get(commit)
        blob_of = _new_blobs(*raw) if raw is not None else self.store.new_blobs(commit)
        blobs = self.store.history_blobs({oid: (commit, path) for path, oid in blob_of.items()})
        texts: dict[str, bytes] = {}
        for path, oid in blob_of.items():
            # Each blob let go once made loose (none is asked again: two paths with one blob
            # take it once each), its memory used for the next text's, not fresh pages.
            content = blobs.get(oid)
            if content is not None:
                texts[path] = loose_code(content)
        del blobs
        if len(texts) == len(blob_of) >= self.KEEP_LOOSE_AT_LEAST:
            parts = _keep_loose(texts)
            if parts is not None:
                self.store.keep_text(name, parts, synced=True)
        return dict(texts)

    # The most files _files_with_code names on git's command line (far below its length's
    # limit); more, and the commit's whole diff is read.
    NAMED_FILES_AT_MOST = 500

    # How many commits on each side of one that takes a fix's code out of its file are asked
    # whether they put it into another: a move made in two commits (out of one file, into
    # another; the other way round).
    BESIDE = 3

    def beside(self, commit: str) -> list[str]:
        """The commits next to `commit` in the walk of the whole range (BESIDE on each side,
        merges left out), nearest first; none when the index was read without that walk."""
        at = self._range_at.get(commit)
        if at is None:
            return []
        return [self._range[k] for step in range(1, self.BESIDE + 1)
                for k in (at + step, at - step) if 0 <= k < len(self._range)]

    def diffs(self, paths: list[str]) -> dict[str, dict[bytes, bytes]]:
        """commit -> {its `diff --git` line: that file's diff}, with `paths` (of this index's)
        among them: those not read yet are read now, in one git process (those start_landing
        started are taken first)."""
        if self._started and not self._starting.isdisjoint(paths):
            self.take_started()
        missing, commits = self.unread(paths)
        if commits:
            self._fetch_versions(commits, missing)
        self.add_read(missing, self.store.commit_patches(commits, missing) if commits else b"")
        return self._chunks

    def _fetch_versions(self, commits: list[str], paths: list[str]) -> None:
        """The blobs the diffs of `paths` in `commits` read, fetched at once into a partial
        store that lacks some (store.fetch_history_blobs). Asked first of one version of each
        path (the one after its oldest commit here, a version between the pin's and the
        target's, which the walk's own reads fetched): a store that has read this history
        before holds them all, and the rest are not looked up."""
        if self.store.holds_blobs(self._versions(commits, paths, first=True)):
            return
        self.store.fetch_history_blobs(self._versions(commits, paths))

    def _versions(self, commits: list[str], paths: list[str],
                  first: bool = False) -> dict[str, tuple[str, str]]:
        """{blob id: (commit, path)} of the blobs before and after each of `commits`' changes
        of `paths`, as the range's walk names them (`_raw`: a commit with one parent);
        `first`: only the blob after the oldest of them that changes each path (before it,
        when it deletes the path). Each path's line is found by its name (`:<modes> <old id>
        <new id> <status>\t<path>` in `git log --raw`), not every line of a large commit
        parsed; a submodule has no blob."""
        where: dict[str, tuple[str, str]] = {}
        if self._touches is None:
            self._touches = dict(self.log)
        left = set(paths)
        for commit in commits:  # (`log`'s order: oldest first)
            entry = self._raw.get(commit)
            if entry is None or entry[1] < 0:
                continue
            text, raw, end = entry
            for path in left.intersection(self._touches.get(commit, ())):
                name = b"\t" + git_output_path(os.fsencode(path))
                at = text.find(name + b"\n", raw, end)
                if at < 0 and text.endswith(name, raw, end):
                    at = end - len(name)
                start = text.rfind(b"\n:", raw, at) if at >= 0 else -1
                fields = text[start + 2:at].split(b" ") if start >= 0 else []
                if len(fields) < 4 or b"160000" in fields[:2]:
                    continue
                sides = [oid.decode() for mode, oid in ((fields[0], fields[2]),
                                                        (fields[1], fields[3]))
                         if mode != b"000000"]
                for oid in sides[-1:] if first else sides:
                    where.setdefault(oid, (commit, path))
                if first:
                    left.discard(path)
            if first and not left:
                break
        return where

    def take_started(self) -> None:
        """The reads start_landing started, taken into the index (each waited for)."""
        started, self._started = self._started, []
        self._starting.clear()
        try:
            while started:
                paths, read = started[0]
                self.add_read(paths, read.result())
                started.pop(0)
        finally:
            for _, read in started:
                read.close()

    def unread(self, paths) -> tuple[list[str], list[str]]:
        """(those of `paths`, of this index's, whose diffs are not read yet nor being read;
        the commits touching them): `store.commit_patches` of the two is what `add_read`
        takes, read on any thread (it is only a git process)."""
        missing = sorted(set(paths) & set(self.paths) - self._loaded - self._starting)
        return missing, self.commits_touching(missing) if missing else []

    def add_read(self, paths: list[str], text: bytes) -> None:
        """The diffs of `paths` (see unread), read as `git diff-tree` gives them, into the
        index. A file section read twice is the same bytes both times."""
        if text:
            self._add_chunks(text, from_log=False)
        self._loaded.update(paths)

    def _walk_without_pathspec(self, changes: bytes | OneCommitWalk | None
                               ) -> dict[str, set[str]] | None:
        """The commits `git log -p -- <paths>` shows (newest first into `_order`, reverts into
        `_reverts`) with the paths each changes, from the same walk without a pathspec; None
        when a merge has a parent outside the range (where git's rule for showing it depends
        on more than the paths it changes)."""
        raw_names = {git_output_path(os.fsencode(path)): path for path in self.paths}
        walk: dict[str, tuple[list[str], set[str]]] = {}  # in git's order, newest first
        reverts: dict[str, list[str]] = {}
        raw_lines: dict[str, tuple[bytes, int, int]] = {}  # (`_raw`)
        if isinstance(changes, OneCommitWalk):
            # (Not for a name no tree can hold: git's walk says what it says of it.)
            one = changes
            changes = self._one_commit_walk(one) if all(_tree_path(path) for path in self.paths) \
                else None
            if changes is not None:
                self._paths_only = one
        if changes is None:
            changes = self.store.range_changes(self.target.base_commit, self.target.commit)
        # Commit by commit, each one's lines searched by C loops (bytes.find, regular
        # expressions): a long history lists tens of thousands of paths and message lines,
        # and a test of each line in Python was most of the index's time. Lines end at LF
        # only: git indents each line of a message, but a bare CR inside one (an old tool's
        # line end) is no line end to git, and splitlines() would make the text after it a
        # line of its own (a `commit` or `:` line). Each commit's part (from after its
        # "commit " to the line end before the next one) is searched where it lies in the
        # walk's text, bounded by its ends, never copied out: a 2,515-commit walk is 6 MB,
        # and its parts copied were 6 MB of new pages each time (8-10 ms of the index's CPU).
        # Where each "\ncommit " is (-1: a "commit " at the text's start), and the text's end.
        cuts = [-1] if changes.startswith(b"commit ") else []
        cut = changes.find(b"\ncommit ")
        while cut >= 0:
            cuts.append(cut)
            cut = changes.find(b"\ncommit ", cut + 1)
        cuts.append(len(changes))
        for start, stop in zip(cuts, cuts[1:]):
            start += len(b"\ncommit ")
            end = changes.find(b"\n", start, stop)  # none: no message, no change listed
            commit, *parents = changes[start:end if end >= 0 else stop].decode().split()
            # The paths: after the tab of each line from the first `:` line on (the message
            # comes first, then the commit's `:` lines, one per path; a tab in a name is quoted).
            raw = changes.find(b"\n:", start, stop)
            if commit in walk:  # a merge again, against its next parent
                changed = walk[commit][1]
            else:
                changed = set()
                walk[commit] = (parents, changed)
                if len(parents) == 1:
                    raw_lines[commit] = (changes, raw, stop)
                named = _REVERT_LINES.findall(changes, start, stop) \
                    if changes.find(b"\n    This reverts commit ", start, stop) >= 0 else []
                if named:
                    reverts[commit] = [found.decode() for found in named]
            if raw >= 0:
                changed.update(raw_names[name] for name in
                               raw_names.keys() & _RAW_PATHS.findall(changes, raw, stop))
        # The range's commits but merges, whatever the merges' parents: `beside` needs them
        # in a history whose first merge has the pin for a parent (the pathspec walk below
        # cannot be taken there, but a move made in two commits is still two commits).
        self._range = [commit for commit, (parents, _) in walk.items() if len(parents) <= 1]
        self._raw = raw_lines
        if any(len(parents) > 1 and any(parent not in walk for parent in parents)
               for parents, _ in walk.values()):
            return None  # (before anything is put into `_order`, which the log read fills)
        touched: dict[str, set[str]] = {}
        for commit, (parents, paths) in walk.items():
            if len(parents) > 1:
                if paths:
                    # Shown, without a diff: it differs from a parent in the paths.
                    self._order.append(commit)
                    touched[commit] = set()
            elif paths:
                self._order.append(commit)
                touched[commit] = paths
            if commit in touched and commit in reverts:
                self._reverts[commit] = reverts[commit]
        return touched

    def _one_commit_walk(self, one: OneCommitWalk) -> bytes:
        """What the range's walk (store.range_changes) says of the one commit of `one` for the
        series' paths: its header and message, then a `:` line for each of the paths whose
        entry (mode and id, a submodule's too) the commit changes, as `git log --raw
        --no-renames` lists them (a path that is a directory, or under a file, on one side is
        absent there; each side's entries are read from the trees, no git process)."""
        before = self.store.entries(one.parent, self.paths, links=True)
        after = self.store.entries(one.commit, self.paths, links=True)
        lines = [b"commit %s %s" % (one.commit.encode(), one.parent.encode())]
        # `%w(0,4,4)%B`: each line of the message indented, an empty one too; then the
        # format's line end, and the empty line before the `:` lines.
        message = one.message[:-1] if one.message.endswith(b"\n") else one.message
        lines += [b"    " + line for line in message.split(b"\n")] if message else []
        lines += [b"", b""]
        absent = ("000000", "0" * 40)
        for name, path in sorted((git_output_path(os.fsencode(path)), path)
                                 for path in self.paths):
            old, new = _git_mode(before[path]), _git_mode(after[path])
            if old == new:
                continue
            status = b"A" if old is None else b"D" if new is None else \
                b"M" if old[0][:2] == new[0][:2] else b"T"
            (old_mode, old_id), (new_mode, new_id) = old or absent, new or absent
            lines.append(b":%s %s %s %s %s\t%s" % (old_mode.encode(), new_mode.encode(),
                                                    old_id.encode(), new_id.encode(), status,
                                                    name))
        return b"\n".join(lines) + b"\n"

    def _whole_raw(self) -> dict[str, tuple[bytes, int, int]]:
        """`_raw` with every file of each commit: for a one-commit range (OneCommitWalk),
        git's walk of it is asked now, once (and kept, as status asks it), and its `:` lines
        replace those of the series' paths alone. The commits and the paths each touches
        stay as they were made: the walk lists the same for the series' paths."""
        one = self._paths_only
        if one is not None:
            self._paths_only = None
            walk = self.store.range_changes(self.target.base_commit, self.target.commit)
            self._raw = {one.commit: (walk, walk.find(b"\n:"), len(walk))}
        return self._raw

    def _read_log_patches(self) -> dict[str, set[str]]:
        """Every diff of the paths from one `git log -p` (newest first into `_order`): the
        paths each commit changes."""
        self._add_chunks(self.store.log_patches(self.target.base_commit, self.target.commit,
                                                self.paths), from_log=True)
        self._loaded.update(self.paths)
        headers = {diff_header(path): path for path in self.paths}
        return {commit: {headers[h] for h in files if h in headers}
                for commit, files in self._chunks.items()}

    def _add_chunks(self, text: bytes, *, from_log: bool) -> None:
        """File sections of `git log -p` output (from_log: also the order and the reverts) or
        of `git diff-tree --stdin -p` output (each commit's id on a line) into `_chunks`."""
        if not from_log:
            # `git diff-tree --stdin` output (megabytes on a long history): cut at its commit
            # lines and file headers by regular expressions, not read line by line.
            text = b"\n" + text
            starts = [(found.start() + 1, found[1]) for found in _COMMITS_AND_FILES.finditer(text)]
            starts.append((len(text), None))
            mine: dict[bytes, bytes] | None = None  # the sections of the commit they follow
            for (start, commit_id), (end, _) in zip(starts, starts[1:]):
                if commit_id is not None:
                    mine = self._chunks.setdefault(commit_id.decode(), {})
                elif mine is not None:
                    section = text[start:end]
                    line_end = section.find(b"\n")
                    mine[section[:line_end] if line_end >= 0 else section] = section
            return
        chunks: dict[str, dict[bytes, list[bytes]]] = {}
        files: dict[bytes, list[bytes]] = {}
        header = None
        # Lines end at LF only (BytesIO's): a bare CR in a file's content or a message is no
        # line end to git, and splitlines() would make what follows it (forty hex digits, say)
        # a line of its own.
        for line in io.BytesIO(text):
            if line.startswith(b"commit ") and len(line.strip()) == 47:
                commit = line.split()[1].decode()
                files = chunks.setdefault(commit, {})
                self._order.append(commit)
                header = None
            elif header is None and line.startswith(b"    This reverts commit "):
                found = _REVERTS.match(line)
                if found:
                    self._reverts.setdefault(commit, []).append(found[1].decode())
            elif line.startswith(b"diff --git "):
                header = line.rstrip(b"\n")
                files[header] = [line]
            elif header is not None:
                files[header].append(line)
        for commit, sections in chunks.items():
            mine = self._chunks.setdefault(commit, {})
            for h, lines in sections.items():
                mine[h] = b"".join(lines)

    def patch_id_matches(self, requests: list[tuple[object, bytes, list[str]]]) -> dict:
        """For each (key, the patch's diff, its paths): the commits whose change to those paths
        has the patch's `git patch-id --stable`, in one patch-id run for the whole series."""
        chunks = self.diffs(sorted({p for _, _, paths in requests for p in paths}))
        feed: list[bytes] = []
        owners: dict[str, tuple[object, str | None]] = {}  # fake id -> (request key, commit)
        for key, diff, paths in requests:
            fake = f"{len(owners):040x}"
            owners[fake] = (key, None)
            feed.append(f"commit {fake}\n\n".encode() + diff)
            headers = [diff_header(p) for p in paths]
            for commit in self.commits_touching(paths):
                body = b"".join(chunks.get(commit, {}).get(h, b"") for h in headers)
                if body:
                    fake = f"{len(owners):040x}"
                    owners[fake] = (key, commit)
                    feed.append(f"commit {fake}\n\n".encode() + body)
        if not feed:
            return {}
        ids = {fake: patch_id for patch_id, fake in self.store.patch_ids(b"".join(feed))}
        own = {key: ids.get(fake) for fake, (key, commit) in owners.items() if commit is None}
        matches: dict[object, list[str]] = {key: [] for key, _, _ in requests}
        for fake, (key, landed) in owners.items():
            if landed is not None and own.get(key) and ids.get(fake) == own[key]:
                matches[key].append(landed)
        return matches


def carried_place(base: bytes, current: bytes, fp, fp_target, theirs: FileApplication,
                  application: FileApplication, repeated: list,
                  labels: tuple[str, str, str]) -> tuple[bytes | None, list]:
    """(the file `application` (`fp_target` applied to `current`, its hunks placed by nearness
    to their headers' lines) gives with each hunk of `repeated` (apply.hunks.RepeatedPlace)
    at the place its place in `base` (`theirs`: `fp` applied there) has in `current`, the
    hunks to name when that is None: nothing decides it).

    The lines around the place decide where they can (`mapped_places`, no git process): most
    repeated contexts in real code sit between lines each file has once. Else a 3-way merge
    of the patch (`git rebase`'s answer): the candidate placement that gives that merge's
    result. No clean merge, or one no candidate gives: None."""
    content = application.content
    assert theirs.content is not None, "the callers carry only a place that applied in base"
    places = mapped_places(base, current, fp, theirs, application, repeated)
    if places is not None:
        moves = {index: line for index, line in places.items()
                 if line != next(r.at_line for r in repeated if r.index == index)}
        if not moves:
            return content, []
        moved = placed_at(current, fp_target, application, moves)
        if moved is not None:
            return moved, []
    if any(r.own_at for r in repeated):
        # Put into lines upstream added, its own place changed: git's diff aligns a copy with
        # the original as readily as nearness did, so the merge cannot confirm it. Stop.
        return None, repeated
    clean, merged = merge_file(base, current, theirs.content, labels)
    if not clean:
        return None, repeated
    found, chosen = None, {}
    if merged == content:
        found, chosen = content, {r.index: r.at_line for r in repeated}
    else:
        choices = 1
        for r in repeated:
            choices *= len(r.candidates)
        if choices <= _PLACEMENTS_TRIED:
            for lines in itertools.product(*(r.candidates for r in repeated)):
                chosen = {r.index: line for r, line in zip(repeated, lines)}
                moved = placed_at(current, fp_target, application, chosen)
                if moved == merged:
                    found = moved
                    break
    if found is None:
        return None, repeated
    # Upstream changed a line of a copy of the code a hunk changes, and the line diff puts
    # the hunk elsewhere than the merge did: which copy is the fix's own, the merge's
    # alignment or the diff's, is a guess (AITER's 75ad905370 split a kernel launch in two,
    # then one of them was edited). Stop.
    changed = copies_changed(base, current, fp, theirs, repeated, chosen)
    return (None, changed) if changed else (found, [])
