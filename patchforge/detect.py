"""Landed-upstream detection: for one patch against a target, which hunks are already there.

A false "upstreamed" makes a rebase drop a needed fix, the worst outcome this tool can produce, so
every verdict carries its evidence and a hunk counts as landed only when the target contains its
post-image AND its pre-image is gone from where the patch expects it:

- reverse-apply: the hunk applies in reverse, without fuzz, and does not apply forward (certain),
  at its own place (OwnPlaces: where git's diff of the base file to the target's carries the
  lines the hunk was made on). Found only at another copy of the code while the own place is
  still there without the change: `unsure` (git's merge, which maps that place, may still
  find it there), never landed, and the history's word does not override it;
- merge result empty: git's 3-way merge of the patch onto the target changes nothing (certain);
- post-image containment: the hunk's added code is in the target (whitespace and line wrapping
  ignored, so reformatted and moved landings count) and its removed code is not (likely), at
  its own place: where the own place is still there (its context kept by upstream's diff) with
  no copy of the added code at it (overlapping it, or anchored by its lines: `_at_place`), the
  copy found is another copy of the code (a method's indented twin, the twin function right
  below): not landed, and the history's word does not override it
  (OwnPlaces.contained_away). Where the own place is gone (the code moved), the copy stands.
  In a language whose indentation is meaning (Python, YAML, make: `indentation_matters`),
  a copy indented otherwise relative to its context, or that cannot be lined up with it, is
  another statement (`_indented_alike`): unsure, whatever the history says;
- twin functions: where the code without the change and the change are both in the file, at
  places apart, and the base file had that code twice, the change counts only under the
  definition line the fix's own change is under (git's default funcname rule,
  `_twin_function`): found only in another function, unsure, and neither git's merge nor the
  history decides it (upstream reordering the twins misleads both); found in the fix's
  function, the code without it only in the twin, landed (git's line map would put the fix
  into the twin);
- patch-id match against the upstream commits that touch the files (certain; history only).

Squash merges defeat patch-ids, so the content checks decide and patch-ids only add evidence.
When the checks disagree (the hunk is contained but also still applies), the verdict is `unsure`.
"""
from __future__ import annotations

import bisect
import itertools
import re
from collections import Counter
from functools import lru_cache
from typing import TYPE_CHECKING

from patchforge.apply.diffparse import line_content
from patchforge.apply.hunks import (CFile, HunkOutcome, ReversedHunk, _definitions_of, _fuzzed,
                                    _language, _line_places, _lines_at, _place_offsets,
                                    apply_file_patch, apply_hunks, body_end, lines_of,
                                    place_in_place)
from patchforge.history import (DOUBLE_QUOTE, SINGLE_QUOTE, opens_over_lines, over_lines,
                                string_parts, strings_open_at)
from patchforge.model.record import field, record, replace
from patchforge.patterns import on_first_use
from patchforge.store.diff import (NULL_OID, FileMerge, blob_oid, changed_blocks,
                                   merge_can_give_ours, merge_file, new_runs_are_in_ours)

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from patchforge.apply.hunks import FileApplication
    from patchforge.formats.patchfile import PatchFile

# Added code shorter than this (whitespace removed) is too generic to prove anything by containment
# ("return None", "pass", "}").
MIN_CONTAINED_CHARS = 24
# A context line anchors a contained block only when it says something ("total += n", not ")").
MIN_ANCHOR_CHARS = 8
# How far (in lines of the target) from the contained block its context may have drifted: upstream
# often adds a comment or a docstring line between the fix and its old neighbours.
ANCHOR_DISTANCE = 6
# What `\s` matches in a bytes pattern; bytes.translate removes them about ten times faster
# than a regular expression, and whitespace-insensitive search runs over every touched file.
_WS_BYTES = b" \t\n\r\x0b\x0c"
_WS_BUT_LF = _WS_BYTES.replace(b"\n", b"")
# The end of the evidence of a hunk both there and still applicable (the same code twice).
AMBIGUOUS = "succeed: ambiguous"
# The end of the evidence of a hunk whose change is in the file only away from its own place.
ELSEWHERE = "another copy of the code: unsure"
# The end of the evidence of a hunk found reversed at another copy while upstream changed its
# own place's lines its own way.
CHANGED_THERE = "not landed (a conflict)"
# The end of the evidence of a hunk found reversed only where the base already had the change.
AT_BASE = "no evidence of a landing"
# The end of the evidence of a hunk whose added code is in the file only away from its own
# place, which is still there (OwnPlaces.contained_away).
CONTAINED_AWAY = "another copy of the code: not landed"
# The end of the evidence of a hunk whose added code is next to its context only at another
# indentation relative to it (`_indented_alike`): in Python another statement.
INDENTED_OTHERWISE = "other code in an indented language: unsure"
# The end of the evidence of a hunk whose change is found only in another function than the one
# it changes (`_twin_function`), while the code without it is in the file too.
TWIN_ELSEWHERE = "another function's copy of the code: not landed"
# The end of the evidence of a hunk whose change is found in the function it changes, and the
# code without it only in another one (`_twin_function`).
TWIN_HERE = "landed"


def _strip_ws(data: bytes) -> bytes:
    return data.translate(None, _WS_BYTES)
_WORD = on_first_use(rb"[A-Za-z0-9_]")


@record
class HunkVerdict:
    index: int
    forward: str  # how it applies forward: exact | offset | fuzz | failed
    landed: str | None = None  # certain | likely | None
    evidence: list[str] = field(default_factory=list)
    ambiguous: bool = False  # the checks disagree: landed and still applicable
    # The change found only away from the hunk's own place, which is still there without it
    # (its pre-image, or upstream's own version of its lines: OwnPlaces.elsewhere): the own
    # place's lines. History must not call it landed either.
    elsewhere: str | None = None
    # The hunk's own place still has its old code: its lines. Asked when the history says a
    # commit made the change (OwnPlaces.old_code, judge.with_history), which then made it at
    # another place (or a later commit took it out there), and said where post-image
    # containment found the added code only at another copy (OwnPlaces.contained_away):
    # history must not call it landed.
    old_code: str | None = None
    # The added code is next to the hunk's context only indented otherwise relative to it
    # (`_indented_alike`): the copy's line. Another statement in Python: unsure, and history
    # (whose blocks ignore whitespace) must not call it landed either.
    indented: str | None = None
    # The commit the history names made the change only away from the hunk's own place in
    # that commit's parent (history_place.made_at, judge.with_history): where it made it and
    # the own place. History must not call it landed.
    made_away: str | None = None
    # git's merge is not asked of this hunk, nor does its empty result decide it: the code
    # without the change is in the file (a pure addition placed forward on its inner context,
    # fuzz 1, _inner_context_there: the merge's line map may put the own place on a twin that
    # has it), or a line the hunk removes is still there, moved (_removed_line_moved, or
    # among the hunk's own lines _removed_line_moved_inside: the merge takes the move for the
    # removal and an addition).
    merge_unasked: bool = False


@record
class FileVerdict:
    path: str  # path in the patch
    target_path: str | None  # where it is in the target (renamed), None when gone
    hunks: list[HunkVerdict] = field(default_factory=list)
    applied: FileApplication | None = None  # the whole file patch applied forward
    merged_empty: bool = False


@record
class PatchVerdict:
    name: str
    state: str  # applies | offset | fuzz | conflict | upstreamed | partial | obsolete | unsure
    confidence: str | None  # for upstreamed/partial: high | medium
    hunks_total: int
    hunks_landed: int
    evidence: list[str]
    files: list[FileVerdict]
    renames: dict[str, str]
    # Which evidence decided a landing: "content" (the target's files), "history" (a commit of
    # base..target made the change; patchforge.history), "series history" (the series'
    # cumulative change did).
    decided_by: str | None = None
    landed_commit: str | None = None  # the commit the history says landed it

    @property
    def landed(self) -> bool:
        return self.state == "upstreamed"


def _normalized(lines: list[bytes]) -> bytes:
    # Removing whitespace from the joined lines is removing it from each line (one C call).
    return b"".join(lines).translate(None, _WS_BYTES)


def _kinds(hunk) -> list[bytes]:
    """line_kind() of each body line of `hunk`, written out (no call per line): landed
    detection runs it over every line of every hunk it judges, twice (assess_file, contained).
    Kept in the hunk's __dict__, as Hunk.old_lines is; callers must not modify the list."""
    found = hunk.__dict__.get("_kinds")
    if found is None:
        found = hunk.__dict__["_kinds"] = [line[:1] if line not in (b"\n", b"") else b" "
                                           for line in hunk.lines]
    return found


def _changed_side(hunk, kind: bytes, kinds: list[bytes]) -> bytes:
    """One side's changed lines, from its first changed line to its last with the context lines
    between them, whitespace removed (`kinds`: _kinds(hunk)): added lines split by a context
    line are one block in the file, and searching for them joined without that line would
    never find them. Taken from the hunk's side (Hunk.new_lines/old_lines: its context and
    `kind` lines, which applying it made already), not from a pass over its lines."""
    if kind not in kinds:
        return b""
    return _normalized(_changed_side_lines(hunk, kind, kinds))


def _changed_side_lines(hunk, kind: bytes, kinds: list[bytes]) -> list[bytes]:
    """The lines `_changed_side` makes its text of, as they are."""
    if kind not in kinds:
        return []
    first = kinds.index(kind)
    last = len(kinds) - 1 - kinds[::-1].index(kind)
    side = hunk.new_lines() if kind == b"+" else hunk.old_lines()
    # Where the side's lines from first to last are in it: the context and `kind` lines
    # before them (the side holds those and no other).
    start = kinds[:first].count(b" ")
    between = kinds[first:last + 1]
    return side[start:start + between.count(b" ") + between.count(kind)]


def spaced_literals(lines: "Iterable[bytes]", waiting: bytes | None = None
                    ) -> tuple[bytes, ...]:
    """The string literals of `lines` with whitespace in them, as they are, in order: what the
    whitespace-insensitive checks must not take for alike. `"scale:  %d"` and `"scale: %d"`
    are one text without whitespace, but other strings (a log format, a key, a command line):
    a formatter rewraps and re-indents code, never a string's inside. A string over lines
    (Python's triple quotes, C++'s raw `R"(...)"`: history.over_lines) keeps the lines it
    opens, closes and spans whole, whitespace inside them kept; `waiting` is what closes the
    one the first line is in already (opened above `lines`), None: outside any."""
    found: list[bytes] = []
    for line in lines:
        if waiting is None and opens_over_lines(line):
            after, said = over_lines(line, None)
            if after is not None and said is not None:  # the line opens a string over lines
                waiting = after
                found.append(said)
                continue
        elif waiting is not None:
            waiting, said = over_lines(line, waiting)
            if said is not None and said.strip(_WS_BYTES):
                found.append(said)
            continue
        if SINGLE_QUOTE not in line and DOUBLE_QUOTE not in line:
            continue
        parts = string_parts(line)
        if parts is None:
            # quotes not told apart (history.string_parts): the whole line is the string
            literals = [line.strip(_WS_BYTES)]
        else:
            literals = parts[1::2]
        found.extend(literal for literal in literals
                     if literal.translate(None, _WS_BYTES) != literal)
    return tuple(found)


class NormalizedText:
    """A file with all whitespace removed, and where each line starts in it: substring search
    that ignores reformatting, mapped back to line numbers."""

    def __init__(self, content: bytes) -> None:
        # Built with C-level loops (translate, accumulate): it runs over every touched file.
        self._content = content
        self.text = content.translate(None, _WS_BYTES)
        self._line_start: list[int] | None = None
        self._raw_lines: list[bytes] | None = None
        self._strings: bool | None = None  # whether a string over lines can be in it
        self._open_at: tuple[int, bytes | None] = (0, None)  # string_open_at's last answer

    @property
    def line_start(self) -> list[int]:
        """Where each line starts in `text`: made when a search found something (most find
        nothing). The whole file loses its whitespace but its line ends in one call, then is
        split into lines (each line's own translate: hundreds of calls a file)."""
        if self._line_start is None:
            parts = self._content.translate(None, _WS_BUT_LF).split(b"\n")
            self._line_start = [0, *itertools.accumulate(map(len, parts))]
        return self._line_start

    def line_of(self, offset: int) -> int:
        return bisect.bisect_right(self.line_start, offset) - 1

    def line(self, number: int) -> bytes:
        """Line `number` (0-based) without whitespace."""
        start = self.line_start
        return self.text[start[number]:start[number + 1]]

    def string_open_at(self, number: int) -> bytes | None:
        """What closes the string over lines (history.strings_open_at') that line `number`
        (0-based) starts inside, None: outside any; a file with no triple quote or raw
        string is not read by lines."""
        if self._strings is None:
            self._strings = opens_over_lines(self._content)
        if not self._strings:
            return None
        # Read on from the line last asked when this one is further down (containment asks
        # of each copy found, top to bottom, and of each hunk of a file): each line read once.
        since, waiting = self._open_at if self._open_at[0] <= number else (0, None)
        waiting = strings_open_at(self.raw_lines, number, since, waiting)
        self._open_at = (number, waiting)
        return waiting

    @property
    def raw_lines(self) -> list[bytes]:
        """The file's lines as they are, without their line ends (split at b"\\n" alone, as
        `line_start` counts them; the last item is what follows the last line end). Split
        only when a search needs one."""
        if self._raw_lines is None:
            self._raw_lines = self._content.split(b"\n")
        return self._raw_lines

    def indent(self, number: int) -> int:
        """The columns of line `number`'s leading whitespace (a tab to the next multiple of
        8, as Python reads it)."""
        return _columns(self.raw_lines[number])

    def find_all(self, needle: bytes) -> list[int]:
        found, at = [], self.text.find(needle)
        while at != -1:
            found.append(at)
            at = self.text.find(needle, at + 1)
        return found

    def find_lines(self, needle: bytes) -> list[int]:
        """find_all's hits that start at a line's start and end at a line's end: whole lines
        of the file, however they are indented or wrapped. A hit inside a line is other code:
        `= 30` found in `= 300`, a call found after a comment's `#`."""
        hits = self.find_all(needle)
        if not hits:
            return hits
        starts = self.line_start
        index = bisect.bisect_left

        def boundary(offset: int) -> bool:
            at = index(starts, offset)
            return at < len(starts) and starts[at] == offset

        return [hit for hit in hits if boundary(hit) and boundary(hit + len(needle))]

    def span(self, first_line: int, end_line: int) -> tuple[int, int]:
        """Offsets of lines [first_line, end_line) (clamped)."""
        first = min(max(first_line, 0), len(self.line_start) - 1)
        end = min(max(end_line, first), len(self.line_start) - 1)
        return self.line_start[first], self.line_start[end]


@lru_cache(maxsize=256)
def normalized_text(content: bytes) -> NormalizedText:
    """NormalizedText of `content`, remembered for the files a series keeps coming back to
    (every patch on one file would otherwise normalize it again). As many as a long walk
    meets: its first batch of own-place diffs (PlaceDiffs) asks containment of the files of
    the whole rest of the walk, and with room for 32 the walk normalized each again when it
    got there (status against AITER's main: 189 normalizations of 115 contents, 6.6 MB; the
    2,515-commit row 406 of 258)."""
    return NormalizedText(content)


def _anchors(hunk, kinds: list[bytes]) -> tuple[list[bytes], list[bytes]]:
    """The context lines before the first change and after the last one that say something,
    nearest to the change first. `kinds`: _kinds(hunk)."""
    changed = [i for i, k in enumerate(kinds) if k in (b"+", b"-")]
    if not changed:
        return [], []

    def meaningful(indices) -> list[bytes]:
        out = []
        for i in indices:
            if kinds[i] != b" ":
                continue
            norm = _strip_ws(line_content(hunk.lines[i]))
            if len(norm) >= MIN_ANCHOR_CHARS and _WORD.search(norm):
                out.append(norm)
        return out

    return (meaningful(range(changed[0] - 1, -1, -1)),
            meaningful(range(changed[-1] + 1, len(kinds))))


def _neighbours(hunk, kinds: list[bytes]) -> tuple[bytes, bytes]:
    """The hunk's nearest non-blank context line before its first change and after its last,
    whitespace removed (b"" where there is none), whatever their length: a brace counts."""
    changed = [i for i, k in enumerate(kinds) if k in (b"+", b"-")]
    if not changed:
        return b"", b""

    def first(indices) -> bytes:
        for i in indices:
            if kinds[i] == b" ":
                norm = _strip_ws(line_content(hunk.lines[i]))
                if norm:
                    return norm
        return b""

    return first(range(changed[0] - 1, -1, -1)), first(range(changed[-1] + 1, len(kinds)))


def _across_neighbour(target: "NormalizedText", first: int, last: int,
                      neighbours: tuple[bytes, bytes]) -> bool:
    """Whether the copy at lines `first`..`last` of the target sits across the hunk's nearest
    context line from where the hunk puts it: the non-blank line right above the copy is the
    one the hunk has right after its change (and not the one it has right before), or the
    line right below is the one it has right before. A statement the fix adds inside a
    block, before its `}`, that upstream added after the `}`: another block, another change
    (the braces are the block in C, C++ and HIP, as indentation is in Python)."""
    before, after = neighbours
    if not before or not after or before == after:
        return False
    lines = len(target.line_start) - 1

    def nearest(numbers) -> bytes:
        for number in numbers:
            line = target.line(number)
            if line:
                return line
        return b""

    above = nearest(range(first - 1, -1, -1))
    below = nearest(range(last + 1, lines))
    return (above == after and below != after) or (below == before and above != before)


def contained(hunk, target: "NormalizedText | bytes", *, anchored: bool = True,
              indented: str | None = None) -> tuple[bool, str, int | None]:
    """Post-image containment: the hunk's added code is in the target (whitespace and line
    wrapping ignored), next to the hunk's own context, and its removed code is not there.

    Anchoring is what keeps look-alikes out: the same added lines in another function (with the
    old code still in place where the patch changes it) prove nothing. The block must have a
    meaningful context line of the hunk within ANCHOR_DISTANCE lines on the side where the patch
    has it (either side for a hunk that also removes code, since the removed code being gone is
    evidence too; both sides for a pure addition). `indented`: the file's language, where it
    reads indentation (`indentation_matters`): a block indented otherwise relative to that context
    is another statement, not the hunk's (`_indented_alike`). Returns (contained, evidence or
    why not, the line (1-based) of a copy next to the context refused for its indentation
    alone, else None).
    """
    if isinstance(target, bytes):
        target = normalized_text(target)
    kinds = _kinds(hunk)
    added = _changed_side(hunk, b"+", kinds)
    if len(added) < MIN_CONTAINED_CHARS:
        return False, "too little added code to judge by containment", None
    hits = target.find_lines(added)
    if not hits:
        return False, "added code not found", None  # (the removed side is made only when needed)
    hits, otherwise = _spaced_alike(hunk, kinds, target, hits, len(added))
    if not hits:
        return False, f"added code found, but {otherwise}", None
    removed = _changed_side(hunk, b"-", kinds)
    if removed == added:
        # Only whitespace changes (a re-indent: in Python, other code): the unchanged file
        # holds the "added" code as well as the fixed one would.
        return False, "the hunk changes only whitespace, which containment does not see", None
    if removed and len(removed) >= MIN_CONTAINED_CHARS and removed not in added:
        outside = target.text.replace(added, b"\0")
        if removed in outside:
            return False, "the removed code is still in the file", None
    if not anchored:
        return True, "post-image containment (whitespace-insensitive)", None
    before, after = _anchors(hunk, kinds)
    neighbours = _neighbours(hunk, kinds)
    if not before and not after:
        return False, "added code found, but the hunk has no context to anchor it", None
    why = "added code found, but not next to the hunk's context"
    # The line of a copy refused for its indentation alone, and why.
    refused: tuple[int, str] | None = None
    for hit in hits:
        first, last = target.line_of(hit), target.line_of(hit + len(added) - 1)
        lo, start = target.span(first - ANCHOR_DISTANCE, first)
        end = hit + len(added)
        _, hi = target.span(last + 1, last + 1 + ANCHOR_DISTANCE)
        above = target.text[lo:hit]
        below = target.text[end:hi]
        if (after and after[0] in above and after[0] not in below) or \
                (before and before[0] in below and before[0] not in above) or \
                _across_neighbour(target, first, last, neighbours):
            # The hunk's context line next to the change is on the copy's other side: the
            # copy is after the statement the fix puts it before (a clamp after the multiply
            # that uses it), or before the one it follows. Another order, another change.
            why = "added code found, but on the other side of the hunk's context line next to it"
            continue
        near_before = any(line in above for line in before)
        near_after = any(line in below for line in after)
        if removed:
            if removed in above or removed in below:
                why = "the removed code is still next to the added code"
                continue
            ok = near_before or near_after
        else:
            ok = (near_before or not before) and (near_after or not after)
        alike = _indented_alike(hunk, kinds, target, hit, indented) if ok and indented \
            else True
        if not alike:
            # Indented otherwise (False), or no context line of the hunk's starts a line next
            # to the copy (None): a copy that cannot be lined up with its context is no
            # landing in a language whose indentation is meaning.
            if refused is None:
                refused = (first, "indented otherwise relative to it" if alike is False else
                           "not to be lined up with it line by line")
        elif ok:
            return True, "post-image containment (whitespace-insensitive, anchored by context)", \
                None
    if refused is not None:
        return False, (f"added code found next to the hunk's context at line {refused[0] + 1}, "
                       f"but {refused[1]}: {INDENTED_OTHERWISE}"), refused[0] + 1
    return False, why, None


def _spaced_alike(hunk, kinds: list[bytes], target: "NormalizedText", hits: list[int],
                  size: int) -> tuple[list[int], str]:
    """The `hits` (of the hunk's added code, `size` bytes in `target.text`) whose lines have
    the strings the added lines have, whitespace and all (`spaced_literals`), and, when none
    has, what differs: found only with a string spaced otherwise (`"a  b"` for the fix's
    `"a b"`, a format the fix mends), the change is not there."""
    changed = _changed_side_lines(hunk, b"+", kinds)
    # Each side read from outside strings, or from inside the string over lines the copy's
    # first line is in as the target's file read from its top says (a docstring opened in
    # the hunk's context or above it: the lines the fix changes hold no quote).
    wanted_in: dict[bytes | None, tuple[bytes, ...]] = {}
    alike, there = [], None
    wanted: tuple[bytes, ...] = ()
    for hit in hits:
        first = target.line_of(hit)
        waiting = target.string_open_at(first)
        if waiting not in wanted_in:
            wanted_in[waiting] = spaced_literals(changed, waiting)
        wanted = wanted_in[waiting]
        found = spaced_literals(target.raw_lines[first:target.line_of(hit + size - 1) + 1],
                                waiting)
        if found == wanted:
            alike.append(hit)
        elif there is None:
            there = found
    if alike or there is None:
        return alike, ""
    ours = next((s for s in wanted if s not in there), None)
    theirs = next((s for s in there if s not in wanted), None)
    said = " and ".join(
        ([f"the target has {theirs.decode('utf-8', 'replace')}"] if theirs is not None
         else []) + ([f"the fix {ours.decode('utf-8', 'replace')}"] if ours is not None
                     else []))
    return [], (f"with a string spaced otherwise ({said}): whitespace inside a string is "
                "content, not layout")


# The files whose indentation is meaning, by name: the language each is read as. Python (vLLM,
# AITER's wrappers; Cython): a block is its indentation. YAML (configurations, CI): a key's
# nesting is its indentation. Make: a recipe line is one that starts with a tab. In C, C++ and
# HIP the braces say it, and a line re-indented inside a guard upstream added later is still
# the line that landed; CMake, TOML, JSON and shell read no indentation either.
_INDENTED_SUFFIXES = {".py": "python", ".pyi": "python", ".pyw": "python", ".pyx": "python",
                      ".pxd": "python", ".pxi": "python", ".yaml": "yaml", ".yml": "yaml",
                      ".mk": "make"}
_INDENTED_NAMES = {"Makefile": "make", "makefile": "make", "GNUmakefile": "make",
                   ".clang-format": "yaml", ".clang-tidy": "yaml"}


def indentation_matters(path: str) -> str | None:
    """The language of the file at `path` when leading whitespace is meaning in it ("python",
    "yaml" or "make", by its name: _INDENTED_SUFFIXES, _INDENTED_NAMES), else None."""
    name = path.rsplit("/", 1)[-1]
    found = _INDENTED_NAMES.get(name)
    if found is None and "." in name:
        found = _INDENTED_SUFFIXES.get(name[name.rindex("."):])
    return found


# What moves a Python line's bracket depth or string state: a triple or single quote, an
# escaped character, a comment's start, a bracket.
_PY_TOKEN = on_first_use(rb'\\.|"""|\'\'\'|["\'#()[\]{}]', re.DOTALL)


def _scan_state(lines, kind: str | None,
                state: tuple[int, bytes | None, bool] = (0, None, False)
                ) -> tuple[list[bool], tuple[int, bytes | None, bool]]:
    """Which of `lines` (raw, without line ends) start a statement in language `kind`, and
    the state after them: (bracket depth, the open string's quote, a backslash continues the
    line), from `state` (the state before the first). A Python line starts a statement when
    it starts outside brackets, strings and backslash continuations: a continuation line's
    indentation is layout (black re-wraps it), a statement's is meaning. A make line continued
    by a backslash is not one; every YAML line is (its nesting is its indentation)."""
    depth, quote, continued = state
    starts = []
    for line in lines:
        starts.append(depth <= 0 and quote is None and not continued)
        if kind != "python":
            continued = kind == "make" and line.rstrip().endswith(b"\\")
            continue
        for token in _PY_TOKEN.finditer(line):
            text = token.group()
            if quote is not None:
                if text == quote:
                    quote = None
                continue
            if text == b"#":
                break
            if text in (b'"', b"'", b'"""', b"'''"):
                quote = text
            elif text in (b"(", b"[", b"{"):
                depth += 1
            elif text in (b")", b"]", b"}"):
                depth -= 1
        continued = line.rstrip().endswith(b"\\") and not line.lstrip().startswith(b"#")
        if quote is not None and len(quote) == 1 and not continued:
            quote = None  # a one-quote string ends with its line
    return starts, (depth, quote, continued)


def _indents(hunk, kinds: list[bytes], indices) -> dict[bytes, int]:
    """The anchoring context lines among hunk lines `indices` (as `_anchors` takes them,
    whitespace removed) -> their indentation's columns."""
    found: dict[bytes, int] = {}
    for i in indices:
        if kinds[i] == b" ":
            raw = line_content(hunk.lines[i])
            norm = _strip_ws(raw)
            if len(norm) >= MIN_ANCHOR_CHARS and _WORD.search(norm):
                found.setdefault(norm, _columns(raw))
    return found


def _columns(raw: bytes) -> int:
    """The columns of a line's leading whitespace (a tab to the next multiple of 8)."""
    return len(raw[:len(raw) - len(raw.lstrip(b" \t"))].expandtabs(8))


def _indented_alike(hunk, kinds: list[bytes], target: NormalizedText, hit: int,
                    kind: str | None = "python") -> bool | None:
    """Whether the copy of the hunk's added code found at offset `hit` of the target (whole
    lines: `find_lines`) is indented, relative to its anchoring context, as the hunk
    indents its first added line relative to the same context line: leading whitespace is
    meaning in Python (a statement put outside the `if` runs for every row), YAML and make
    (`indentation_matters`; `kind`: the file's language), while whitespace within a line and
    wrapping (black, clang-format) is not. A context line counts where it starts a line of
    the target next to the copy (on its side, within ANCHOR_DISTANCE lines, as `contained`
    anchors it; a context statement upstream re-wrapped still starts its line). One context
    line at the hunk's relative indentation suffices: a block upstream re-indented whole (put
    inside a `with`) moved its context with it. None when nothing tells (no such context
    line), but where both the hunk's first added line and the copy's are at the top level
    (column 0). The copy must also indent each of the hunk's lines, relative to its first, as
    the hunk does (False otherwise): every line where the copy has them one for one
    (`_one_for_one`); where upstream re-wrapped them, each line that starts a statement,
    which must start a line of the copy too (`_laid_out_alike`)."""
    changed = [i for i, k in enumerate(kinds) if k in (b"+", b"-")]
    first = target.line_of(hit)
    last = target.line_of(hit + len(_changed_side(hunk, b"+", kinds)) - 1)
    # The hunk's line at `hit`: the first that says something of the added block (from its
    # first added line on, the context between added lines included, as _changed_side).
    added = next(i for i in range(kinds.index(b"+"), len(kinds)) if kinds[i] in (b"+", b" ")
                 and _strip_ws(line_content(hunk.lines[i])))
    column = _columns(line_content(hunk.lines[added]))
    # The copy's own layout: each line indented relative to its first as the hunk has it. A
    # second statement put out of the `if` the first one is in is another change, whatever
    # the first line says.
    last_added = max(i for i, k in enumerate(kinds) if k == b"+")
    post = [line_content(hunk.lines[i]) for i in range(added, last_added + 1)
            if kinds[i] in (b"+", b" ")]
    if _one_for_one(post, target, hit):
        for offset, content in enumerate(post[1:], 1):
            if _strip_ws(content) and _columns(content) - column != \
                    target.indent(first + offset) - target.indent(first):
                return False
    elif not _laid_out_alike(post, target, hit, kind):
        return False
    before = _indents(hunk, kinds, range(changed[0]))
    after = _indents(hunk, kinds, range(changed[-1] + 1, len(kinds)))
    lines = len(target.line_start) - 1
    starts = target.line_start
    # The hunk's nearest non-blank context line on each side of its added code (in its
    # post-image), where upstream kept it right next to the copy (blank lines between
    # aside): the copy must be at the hunk's indentation relative to it. A statement one
    # level up where the fix has it two is at another indentation relative to the line
    # right above it, whatever lines further off say (upstream may have moved one of those
    # with it: the sync below put into the loop too).
    for inside, step in ((range(kinds.index(b"+") - 1, -1, -1), -1),
                         (range(last_added + 1, len(kinds)), 1)):
        mine = next((line_content(hunk.lines[i]) for i in inside if kinds[i] == b" "
                     and _strip_ws(line_content(hunk.lines[i]))), None)
        number = first - 1 if step < 0 else last + 1
        while 0 <= number < lines and starts[number] == starts[number + 1]:
            number += step  # a blank line (it starts where the next line does)
        if mine is None or not 0 <= number < lines:
            continue
        near = _strip_ws(mine)
        there = target.line(number)
        if there == near or (len(near) >= MIN_ANCHOR_CHARS and there.startswith(near)):
            if target.indent(first) - target.indent(number) != column - _columns(mine):
                return False
    told = False
    # Otherwise one context line at the hunk's relative indentation suffices (a context
    # statement upstream re-wrapped still starts its line, at its indentation): a block
    # upstream re-indented whole (put inside a `with`) moved its context with it.
    for number, anchors in itertools.chain(
            ((n, before) for n in range(max(first - ANCHOR_DISTANCE, 0), first)),
            ((n, after) for n in range(last + 1, min(last + 1 + ANCHOR_DISTANCE, lines)))):
        start = starts[number]
        if not anchors or start == starts[number + 1]:
            continue  # (a blank line starts where the next line does)
        for anchor, there_column in anchors.items():
            if target.text.startswith(anchor, start):
                if target.indent(first) - target.indent(number) == column - there_column:
                    return True
                told = True
    if told:
        return False
    # No context line starts a line next to the copy: only the top level, column 0 in both
    # (an import, a top-level key), is the same nesting without one.
    return True if column == 0 == target.indent(first) else None


def _one_for_one(lines: list[bytes], target: NormalizedText, hit: int) -> bool:
    """Whether the copy of a hunk's `lines` (raw, the first one saying something) found at
    offset `hit` of the target has them one for one: each line of them that says something
    is the whole line of the copy at its place (not re-wrapped)."""
    first, at = target.line_of(hit), hit
    starts = target.line_start
    for offset, line in enumerate(lines):
        key = _strip_ws(line)
        if key:
            number = first + offset
            if number + 1 >= len(starts) or starts[number] != at or \
                    starts[number + 1] != at + len(key):
                return False
        at += len(key)
    return True


def _laid_out_alike(lines: list[bytes], target: NormalizedText, hit: int,
                    kind: str | None) -> bool:
    """Whether the copy of a hunk's `lines` (raw, without line ends, the first one saying
    something) that upstream re-wrapped, found at offset `hit` of the target, puts each of
    them that starts a statement (`_scan_state`) at the start of one of its lines, indented
    relative to the copy's first line as `lines` indent it relative to their first. Lines
    within brackets, strings or backslash continuations are layout, free to move."""
    first = target.line_of(hit)
    state: tuple[int, bytes | None, bool] = (0, None, False)
    if kind == "python":
        # Where the copy starts: inside brackets or a string, or not, as the target's file
        # read from its top says (the hunk's own lines may start within a call's arguments).
        state = _scan_state(target.raw_lines[:first], kind)[1]
    starts = _scan_state(lines, kind, state)[0]
    column, there = _columns(lines[0]), target.indent(first)
    at = hit
    for line, start in zip(lines, starts):
        key = _strip_ws(line)
        offset, at = at, at + len(key)
        if not key or offset == hit or not start or key.startswith(b"#"):
            continue
        number = target.line_of(offset)
        if target.line_start[number] != offset or \
                _columns(line) - column != target.indent(number) - there:
            return False
    return True


def _nest(stack: list[tuple[int, int]], column: int, index: int) -> tuple[str, int | None]:
    """Where a statement at `column` (the `index`th line) nests among the statements before
    it (`stack`: the open ones, (column, index), shallowest first; updated): the sibling of
    the last one at its column, or the child of the nearest shallower one."""
    while stack and stack[-1][0] > column:
        stack.pop()
    if stack and stack[-1][0] == column:
        place: tuple[str, int | None] = ("sibling", stack[-1][1])
        stack[-1] = (column, index)
    else:
        place = ("child", stack[-1][1] if stack else None)
        stack.append((column, index))
    return place


def _indented_otherwise(made: bytes, there: bytes, kind: str | None = "python") -> int | None:
    """Where a file the patch creates (`made`) and the target's file (`there`), the same code
    but for whitespace, put a statement at another depth: the line (1-based) of `there`. The
    two are lined up by their text (whitespace removed, every line, also one seen twice);
    each line of `made` that starts a statement (`_scan_state`, in language `kind`) must start
    a line of `there` (one joined into another line cannot be lined up), nested as in `made`:
    the sibling of the same statement, or the child of the same one (`_nest`), at the top
    level where `made` has it there. Nesting, not columns: a file re-indented whole (2 spaces
    to 4) or re-wrapped (continuation lines are layout) is the same code, a statement out of
    its `if`, or out of one level of two, is not. None when every statement nests alike in
    one copy of `made` in `there`."""
    text = normalized_text(there)
    lines = made.split(b"\n")
    starts = _scan_state(lines, kind)[0]
    found = None
    for hit in text.find_lines(_strip_ws(made)):
        mine: list[tuple[int, int]] = []
        theirs: list[tuple[int, int]] = []
        at, otherwise = hit, None
        for index, (line, start) in enumerate(zip(lines, starts)):
            key = _strip_ws(line)
            offset, at = at, at + len(key)
            if not key or not start or key.startswith(b"#"):
                continue
            number = text.line_of(offset)
            column, column_there = _columns(line), text.indent(number)
            if text.line_start[number] != offset or (column == 0) != (column_there == 0) or \
                    _nest(mine, column, index) != _nest(theirs, column_there, index):
                otherwise = number + 1
                break
        if otherwise is None:
            return None
        found = otherwise if found is None else found
    return found


def _added_copies(hunk, current: bytes) -> list[tuple[int, int]]:
    """The target's lines (first, last; 0-based) of each copy of the hunk's added code that
    `contained` searches for (whitespace ignored), anchored or not."""
    text = normalized_text(current)
    added = _changed_side(hunk, b"+", _kinds(hunk))
    if not added:
        return []
    return [(text.line_of(hit), text.line_of(hit + len(added) - 1))
            for hit in text.find_lines(added)]


def _contained_may_ask(hunk, current: bytes) -> bool:
    """Whether assess_file may ask OwnPlaces.contained_away of `hunk` (its added code found
    by `contained`, and `_twin_may_fool`): for OwnPlaces.may_diff. `contained` is asked
    without the indentation check assess_file adds for Python files: True wherever that one
    is (it only refuses more), so never a diff missed."""
    if not contained(hunk, current)[0]:
        return False
    copies = _added_copies(hunk, current)
    return bool(copies) and _twin_may_fool(hunk, current, copies)


def _at_place(text: NormalizedText, copy: tuple[int, int], lo: int, hi: int,
              before: list[bytes], after: list[bytes], *, lead_kept: bool = False,
              trail_kept: bool = False) -> bool:
    """Whether a copy of a hunk's added code (its lines `copy`: first, last) is at the hunk's
    own place, lines [lo, hi) of the target: it overlaps them, or its anchoring context is
    theirs (a context line of the hunk's, `before`/`after` as `_anchors` gives them, within
    ANCHOR_DISTANCE lines above/below the copy, as `contained` anchors it, and among those
    lines). Nearness alone is not enough: a twin function right below the own place has a
    copy of the context of its own, and a copy of the fix there is the twin's.

    A copy wholly below the own place whose last line, context of the hunk's, is kept there
    (`trail_kept`) lies past the hunk's whole trailing context, not between its context lines
    where the fix puts its code: the same line added in the `else` branch right below the
    fix's `if` branch is another change; so, above, with the first line kept (`lead_kept`)."""
    first, last = copy
    if first < hi and last >= lo:
        return True
    start, end = max(lo, first - ANCHOR_DISTANCE), min(hi, first)
    if before and start < end and not trail_kept:
        window = text.text[slice(*text.span(start, end))]
        if any(line in window for line in before):
            return True
    start, end = max(lo, last + 1), min(hi, last + 1 + ANCHOR_DISTANCE)
    if after and start < end and not lead_kept:
        window = text.text[slice(*text.span(start, end))]
        if any(line in window for line in after):
            return True
    return False


def _twin_may_fool(hunk, current: bytes, copies: list[tuple[int, int]]) -> bool:
    """False only where OwnPlaces.contained_away of `hunk` certainly lets the containment
    landing stand, told by `current`'s bytes alone (`copies`: _added_copies'): no base file
    read, no git diff. It never changes that answer; it only says when asking is useless.

    Why it holds: contained_away refuses the landing only when no copy is at the own place
    (`_at_place`): none overlaps it, and no line of it above a copy (within ANCHOR_DISTANCE
    lines) holds a context line the hunk has before its change, nor one below a copy a
    context line the hunk has after it; and only when the own place keeps, byte for byte
    (upstream's diff keeps them as they were), a context line on each side that has context,
    half of the context and a line of at least MIN_ANCHOR_CHARS (`_context_kept`), or else
    every line the hunk removes (`_removed_kept`: each a line outside every copy). So each
    such line must be a line of `current` outside every copy, and, where it holds one of the
    hunk's anchoring lines of a side, outside the window on that side of every copy; a line
    that is nowhere so rules the refusal out. A landing made at the own place (reformatted,
    or its neighbours edited) has its context next to the copy found, and so does a landing
    whose code moved (the context moved with it): most fail at their first distinctive
    line.

    Whether a line is somewhere outside those lines is counted, not listed: its whole lines
    among the copies' lines (and windows), a few dozen lines read from `raw_lines`, and
    whether the file has one more than that (`_has_lines`: its first occurrences only). A
    blank line or a closing bracket is in a file hundreds of times, and each place of it was
    looked up before, each against each copy."""
    before, after = _anchors(hunk, _kinds(hunk))
    far: dict[bytes, bool] = {}
    text = normalized_text(current)

    def outside(line: bytes, above: bool, below: bool) -> bool:
        # Whether `line` is a whole line of `current` outside every copy (and, with
        # `above`/`below`, outside the ANCHOR_DISTANCE lines on that side of every copy).
        if not line.endswith(b"\n"):  # the file's last line: only there, its one place
            return any(not any(first <= at <= last
                               or (above and first - ANCHOR_DISTANCE <= at < first)
                               or (below and last < at <= last + ANCHOR_DISTANCE)
                               for first, last in copies)
                       for at in _line_places(current, line))
        lines = text.raw_lines
        whole = len(lines) - 1  # (the last item ends no line)
        near: set[int] = set()
        for first, last in copies:
            near.update(range(max(first - ANCHOR_DISTANCE if above else first, 0),
                              min(last + 1 + ANCHOR_DISTANCE if below else last + 1, whole)))
        raw = line[:-1]
        return _has_lines(current, line, sum(1 for at in near if lines[at] == raw) + 1)

    # A copy's window above anchors it only where the own place's last line may be other than
    # the hunk's (no trailing context), and its window below only where the first may be
    # (`_at_place`'s lead_kept and trail_kept, which this cannot tell without the base file).
    above_anchors = not hunk.trailing_context
    below_anchors = not hunk.leading_context

    def out(line: bytes) -> bool:
        found = far.get(line)
        if not line:
            return True  # (never a line of a hunk; taken as there, never a skip)
        if found is None:
            norm = _strip_ws(line)
            found = far[line] = outside(
                line, above_anchors and any(anchor in norm for anchor in before),
                below_anchors and any(anchor in norm for anchor in after))
        return found

    # Or the own place keeps every line the hunk removes (`_removed_kept`): each must then be
    # a line of `current` outside every copy.
    kinds = [kind for kind in _kinds(hunk) if kind in (b" ", b"-")]
    removed = [line for kind, line in zip(kinds, hunk.old_lines()) if kind == b"-"]
    if any(len(_strip_ws(line)) >= MIN_ANCHOR_CHARS for line in removed) and \
            all(outside(line, False, False) for line in removed):
        return True
    return _context_may_be_kept(hunk, out)


def created_file(fp) -> bytes:
    """The content of the file a creation patch makes."""
    if fp.binary is not None:
        return fp.binary.forward.apply(b"")
    return b"".join(line for h in fp.hunks for line in h.new_lines())


def assess_binary_file(fp, current: bytes | None) -> FileVerdict:
    """A `GIT binary patch` is judged by blob id alone, as one change: the target's blob at the
    path is the patch's post-image (landed, certain), its pre-image (applies, exact), or
    anything else (a conflict: binary content is never merged or fuzzed)."""
    verdict = FileVerdict(path=fp.path, target_path=fp.path)
    verdict.applied = apply_file_patch(current, fp)
    binary = fp.binary
    have = blob_oid(current) if current is not None else NULL_OID
    if have == binary.new_oid:
        hv = HunkVerdict(0, "failed", "certain",
                         [f"blob id is the patch's post-image ({have})"])
    elif have == binary.old_oid and verdict.applied.ok:
        hv = HunkVerdict(0, "exact")
    elif have == binary.old_oid:
        hv = HunkVerdict(0, "failed", None, [f"binary: {verdict.applied.error}"])
    else:
        what = "the file is absent" if current is None else f"the file is blob {have}"
        hv = HunkVerdict(0, "failed", None,
                         [f"binary: {what}, neither the pre-image ({binary.old_oid}) nor the "
                          f"post-image ({binary.new_oid})"])
    verdict.hunks.append(hv)
    return verdict


def created_identically(fp, existing: bytes | None) -> bool:
    """The target already has the file this patch creates, byte for byte: creating it again
    changes nothing, and git merges such a patch cleanly. The one place that says so: a rebase
    moves the rest of such a patch, and status counts the file as landed, while a creation
    over a different existing file stays a conflict."""
    return fp.is_new and existing is not None and created_file(fp) == existing


class PlaceDiffs:
    """git's change blocks (store.diff.changed_blocks) of the (base file, target's file) pairs
    OwnPlaces asks for, made in batches: a pair asked for that is not made yet is made together
    with every pair `ahead()` offers that OwnPlaces.may_diff says may be asked for later, in
    one git process. `ahead() -> [(file patch, base file, the file as it meets it)]`: the files
    the rest of a walk meets, as they are now (SeriesJudge's); without it each pair is a
    process of its own. A pair's blocks are git's diff of exactly those two contents whichever
    batch made them (changed_blocks), so verdicts do not depend on what was batched: a pair
    offered that is never asked for costs its diff, one the walk meets changed (an earlier
    patch moved into the file) is made when asked, with the rest of the walk offered again."""

    def __init__(self, ahead: Callable[[], Iterable[tuple]] | None = None,
                 apply=apply_file_patch, pairs_made: dict | None = None,
                 known: Callable[[list[tuple[str, bytes, bytes]], list[str]], dict] | None = None
                 ) -> None:
        self._ahead = ahead
        self._apply = apply  # the walk's applications (may_diff's are the walk's own then)
        # known([(path, base, file)], landing paths) -> {(base, file): blocks}: the pairs of a
        # batch whose blocks a diff git made already gives (a commit of the history that
        # changes the path from the one content to the other: judge.HistoryIndex.made_blocks);
        # only the others are diffed. `landing`: the paths of the files offered that look
        # landed as they are, whose history the same read may take along.
        self._known = known
        # (base, current) -> their blocks; a walk asks about a few dozen files at most. A
        # pair's blocks are a function of its two contents alone, so the dict may be another
        # PlaceDiffs' (a walk's, handed to landed_in's probes after it): shared, a pair is
        # diffed once for both.
        self.pairs_made: dict[tuple[bytes, bytes], list[tuple[int, int, int, int]] | None] = \
            pairs_made if pairs_made is not None else {}
        # id(file patch) -> (file patch, base file, file, {hunk index: _lands_without_diff's
        # answer}) as `ahead()` last offered it and may_diff found. Offered again with the
        # same two contents (the same objects), it was made then, or batched, or may_diff said
        # no, and says no again (its answer depends on those three alone): a later batch (a
        # file the walk meets changed) looks only at what changed since (at 300 patches 480 ->
        # 260 may_diff calls, each a search of a file's bytes). And elsewhere's pre-check of a
        # hunk may_diff asked already is its answer (`lands_without_diff`).
        self._offered: dict[int, tuple] = {}

    @classmethod
    def made(cls, pairs: list[tuple[bytes, bytes]]) -> PlaceDiffs:
        """The diffs of `pairs` (base file, file at the target), made now in one git process,
        for a caller that knows which it will ask (patchforge.reverts: the kept fixes' files
        at one revision); any other is made when asked."""
        places = cls()
        pairs = list(dict.fromkeys(pairs))
        places.pairs_made.update(zip(pairs, changed_blocks(pairs)))
        return places

    def blocks(self, base: bytes, current: bytes,
               path: str | None = None) -> list[tuple[int, int, int, int]] | None:
        key = (base, current)
        if key not in self.pairs_made:
            batch: dict[tuple[bytes, bytes], str | None] = {key: path}
            offered = self._offered
            # The files offered whose every hunk lands where it is (the reverse-apply found
            # and standing without a diff, `_lands_without_diff`): a landing the walk will
            # likely say, whose history diffs the landing lookup then reads. Handed to
            # `known` with the batch (never a verdict: a read made early).
            landing: list[str] = []
            for fp, other_base, other in self._ahead() if self._ahead is not None else ():
                last = offered.get(id(fp))
                if last is not None and last[1] is other_base and last[2] is other:
                    continue
                landed: dict[int, bool] = {}
                offered[id(fp)] = (fp, other_base, other, landed)  # fp kept: its id stays
                pair = (other_base, other)
                if pair not in self.pairs_made and pair not in batch and \
                        OwnPlaces.may_diff(fp, other_base, other, self._apply, landed):
                    batch[pair] = fp.old_path
                elif landed and len(landed) == len(fp.hunks) and all(landed.values()):
                    landing.append(fp.old_path)
            if self._known is not None:
                self.pairs_made.update(self._known([(one, *pair) for pair, one in batch.items()
                                                    if one is not None], landing))
            pairs = [pair for pair in batch if pair not in self.pairs_made]
            if pairs:
                self.pairs_made.update(zip(pairs, changed_blocks(pairs)))
        return self.pairs_made[key]

    def lands_without_diff(self, fp, index: int, hunk, post: list[bytes], base: bytes,
                           current: bytes) -> bool:
        """_lands_without_diff of `hunk`, hunk `index` of `fp` (`post`: its post-image's
        lines): what may_diff found when `fp` was last offered with these two contents, else
        asked now."""
        offer = self._offered.get(id(fp))
        if offer is not None and offer[0] is fp and offer[1] is base and offer[2] is current \
                and index in offer[3] and fp.hunks[index] is hunk:
            return offer[3][index]
        return _lands_without_diff(hunk, post, base, current)


class OwnPlaces:
    """Where each hunk of a file patch belongs in the target's file: its place in the patch's
    base file carried over by git's diff of that file to the target's (upstream's changes),
    asked of a hunk whose reverse-apply was found. The search finds the reversed hunk nearest
    the hunk header's line, which knows nothing of upstream's changes: in a file with the same
    code twice (fp8 and fp16 variants of a kernel) it finds the copy upstream fixed, and the
    copy the patch fixes, still without the change, made the fix look landed and the rebase
    drop it. The diff is asked of `places` (a PlaceDiffs: a walk's files diffed together) once
    per file, only when a hunk needs it."""

    def __init__(self, fp, base: bytes | None, current: bytes, apply,
                 places: PlaceDiffs | None = None) -> None:
        self._fp = fp
        self._base = base
        self._current = current
        self._apply = apply
        self._places = places if places is not None else PlaceDiffs()
        self._blocks: list[tuple[int, int, int, int]] | None = None
        self._at_base: dict[int, int] | None = None

    @staticmethod
    def may_diff(fp, base: bytes | None, current: bytes | None, apply=apply_file_patch,
                 landed: dict[int, bool] | None = None) -> bool:
        """Whether assess_file may ask OwnPlaces of `fp` for git's diff of `base` to `current`
        (False: it never does; True may be wrong, which costs a diff made for nothing): in a
        text file patch that changes a file both have and upstream changed, a hunk whose
        reverse-apply without fuzz may be found away from the file's ends (its post-image's
        lines, one after the other, are in the file), which elsewhere's pre-check
        (`_lands_without_diff`) does not answer, or whose added code `contained` finds
        where contained_away's pre-check (`_twin_may_fool`) does not answer, whose pre-image
        assess_file may not find
        (what the whole-file application, `apply`'s, says of it: found without fuzz, it is
        there; with fuzz, the lines a hunk removes are), and which has a place in the base
        file (elsewhere's application there, with fuzz too, as OwnPlaces.base_start takes it). Asked cheapest first: the whole-file
        application is made by assess_file anyway (`apply`, a walk's, keeps it for the walk,
        as it keeps the base's for elsewhere), then the file is searched. `landed`: where
        each hunk's pre-check answer is put (hunk index -> _lands_without_diff), for elsewhere
        to take (PlaceDiffs.lands_without_diff). A hunk whose reverse-apply is found and
        which the pre-check answers offers nothing: assess_file asks containment only of a
        hunk whose reverse-apply is not found (where the bytes test finds what the line
        search does not, that question makes its diff when it comes, the verdict the same)."""
        if base is None or current is None or base == current or fp.is_new or \
                fp.is_delete or fp.binary is not None:
            return False
        whole = apply(current, fp, max_fuzz=2).hunks
        at_base = None
        for index, hunk in enumerate(fp.hunks):
            forward = whole[index].status if index < len(whole) else "failed"
            if forward in ("exact", "offset") or (forward == "fuzz" and b"-" in _kinds(hunk)):
                continue
            cut = _fuzzed(ReversedHunk(hunk), 0)
            reverse = cut is not None and cut[3] is None and b"".join(cut[1]) in current
            if reverse:
                assert cut is not None
                lands = _lands_without_diff(hunk, cut[1], base, current)
                if landed is not None:
                    landed[index] = lands
                if lands:
                    # elsewhere answers without a diff, and assess_file asks containment
                    # only of a hunk whose reverse-apply is not found: none is asked.
                    continue
            if not reverse and not _contained_may_ask(hunk, current):
                continue
            if at_base is None:
                at_base = apply(base, fp, max_fuzz=2).hunks
            if index < len(at_base) and at_base[index].at_line is not None:
                return True  # placed, with fuzz too (OwnPlaces.base_start's place)
        return False

    def elsewhere(self, index: int, hunk, found: HunkOutcome) -> tuple[str, str] | None:
        """What the reverse-apply `found` (of hunk `index`, without fuzz) says, when it is
        away from the hunk's own place: None when it stands (a landing), else (why, lines):

        - ("pre-image", "lines N-M"): the own place still holds the hunk's pre-image: every
          line the hunk removes, and its context (see `_context_kept`), each where upstream's
          diff keeps it, and no copy of the post-image there (another copy has the change);
        - ("changed", "lines N-M"): the own place's context is kept but upstream changed
          lines the hunk removes to something else: upstream's own change to the fix's
          lines, a conflict, as a rebase meets any such change (not a landing);
        - ("at-base", ""): the own place's code is gone, and every copy of the post-image in
          the target was there, unchanged, at the patch's base: the same reverse-apply
          succeeded at the base, so it says nothing of a landing.

        The reverse-apply stands when nothing says where the own place is (no base file, a
        hunk that does not apply to it even with fuzz; a place the file's start or end
        fixes; a diff git takes for binary), when a copy of the post-image overlaps the own place, and when upstream
        rewrote or moved the code there (its context gone from that place) and a copy of the
        post-image is upstream's own (the change made where the code went, or in another
        form)."""
        if self._base is None or found.at_line is None:
            return None
        cut = _fuzzed(ReversedHunk(hunk), 0)
        if cut is None or (cut[3] is not None and found is not _SOMEWHERE):
            # A reverse-apply anchored at the file's start or end has one place it can be.
            # (old_code asks of no reverse-apply: where the own place is says it all.)
            return None
        post = cut[1]
        if self._places.lands_without_diff(
                self._fp, index, hunk, post, self._base, self._current):
            return None
        place = self._own_place(index, hunk)
        if place is None:
            return None
        lo, hi, kinds, kept = place
        places = _line_places(self._current, b"".join(post)) if post else []
        if any(lo - len(post) < at < max(hi, lo + 1) for at in places):
            return None  # a copy of the post-image overlaps the own place: it is there
        own = f"lines {lo + 1}-{max(hi, lo + 1)}"
        if found is not _SOMEWHERE and _removed_kept(hunk, kinds, kept):
            # (A copy of the post-image is elsewhere: the fix's line kept here is the old
            # code. Without one, old_code's question, a later rewrite that took the fix's
            # line out with its neighbours within a larger landing is the history's to judge.)
            return "pre-image", own
        if _context_kept(hunk, kinds, kept):
            held = [kinds[k] for k in kept]
            return ("pre-image" if held.count(b"-") == kinds.count(b"-") else "changed", own)
        if places and not any(self._new_in_target(at, at + len(post)) for at in places):
            return ("at-base", "")
        return None

    def carried(self, index: int, hunk) -> tuple[int, int] | None:
        """The lines [lo, hi) of the target (0-based) that hunk `index`'s pre-image in the
        base file became by upstream's changes (`_own_place`), None when nothing says."""
        place = self._own_place(index, hunk)
        return None if place is None else (place[0], place[1])

    def _own_place(self, index: int, hunk) -> tuple[int, int, list[bytes], set[int]] | None:
        """Where hunk `index`'s pre-image is in the target: (lo, hi, kinds, kept) as
        `_carried` tells them for the base lines the hunk applies to (kinds: the pre-image's
        line kinds), or None when nothing says (no base file, a hunk that does not apply to
        it at all, a diff git takes for binary). The base file's hunks are placed (with GNU
        patch's fuzz, as the overlays place them) and the diff made once per file, when first
        asked."""
        start = self.base_start(index)
        if start is None or self._base is None:
            return None
        if self._blocks is None:
            self._blocks = self._places.blocks(self._base, self._current, self._fp.old_path)
        if self._blocks is None:
            return None
        kinds = [kind for kind in _kinds(hunk) if kind in (b" ", b"-")]  # the pre-image
        lo, hi, kept = self._carried(start, start + len(kinds))
        return lo, hi, kinds, kept

    def base_start(self, index: int) -> int | None:
        """Where hunk `index`'s pre-image starts in the base file (0-based), None when it does
        not apply there, even with fuzz (or there is no base file). The base file's hunks are
        placed once per file, when first asked."""
        if self._base is None:
            return None
        if self._at_base is None:
            # Line k of the hunk's pre-image is base line start + k. With fuzz too (a patch
            # kept by hand, or made on an earlier fix's lines): the lines GNU patch left
            # unmatched at the top are still above where the rest was found, and the place
            # is where the overlays put the fix, so it is the fix's own place as much.
            self._at_base = {}
            for o in self._apply(self._base, self._fp, max_fuzz=2).hunks:
                if o.at_line is None:
                    continue
                cut = _fuzzed(self._fp.hunks[o.index], o.fuzz) if o.fuzz else None
                self._at_base[o.index] = o.at_line - 1 - (cut[0] if cut is not None else 0)
        return self._at_base.get(index)

    def contained_away(self, index: int, hunk) -> tuple[str, str] | None:
        """What post-image containment (`contained`: the hunk's added code in the file,
        whitespace ignored, next to its context) says of hunk `index`, asked of its own
        place: None when the landing stands, else (why, "lines N-M" of the own place):

        ("pre-image", ...): the own place keeps every line the hunk removes and its
        context (`_context_kept`), and no copy of the added code is at it (`_at_place`:
        overlapping it, or anchored, within the drift containment's anchoring allows, by
        its lines rather than by another copy of its context): the copy found is another
        copy of the code (a twin indented otherwise, a class method's copy of a function, the
        twin function right below), and the own place still has the old code.

        ("changed", ...): the own place is there (`_context_kept`) with no copy at it, but
        upstream wrote other lines in place of lines the hunk removes: its own version of the
        fix's lines, a conflict, as elsewhere's "changed"; so are lines taken out from
        between their neighbours in the hunk, which stay (`_taken_out_between`). Other lines
        taken out with nothing put there are a move (the function went elsewhere, its outer
        neighbours stayed): the landing stands.

        The landing stands where nothing says where the own place is (elsewhere's rule),
        where a copy of the added code is at it (reformatted there), and where the own place
        is gone (its context rewritten or moved: the code moved, and the change with it; a
        function moved leaves its neighbours, the hunk's outer context, behind). Asked only where `_twin_may_fool` says
        the own place may be away from every copy (bytes only: no base file read, no git
        diff)."""
        copies = _added_copies(hunk, self._current)
        if not copies or not _twin_may_fool(hunk, self._current, copies):
            return None
        place = self._own_place(index, hunk)
        if place is None:
            return None
        lo, hi, kinds, kept = place
        # Lines upstream put at the own place, in place of the base's or next to them.
        put_there = hi - lo > len(kept)
        hi = max(hi, lo + 1)
        before, after = _anchors(hunk, _kinds(hunk))
        text = normalized_text(self._current)
        lead_kept = hunk.leading_context > 0 and 0 in kept
        trail_kept = hunk.trailing_context > 0 and len(kinds) - 1 in kept
        if any(_at_place(text, copy, lo, hi, before, after, lead_kept=lead_kept,
                         trail_kept=trail_kept) for copy in copies):
            return None
        if _removed_kept(hunk, kinds, kept):
            return "pre-image", f"lines {lo + 1}-{hi}"
        if not _context_kept(hunk, kinds, kept):
            # Gone: a function moved away leaves its neighbours (the hunk's outer context)
            # behind, and the change may have moved with it.
            return None
        held = [kinds[k] for k in kept]
        if held.count(b"-") == kinds.count(b"-"):
            return "pre-image", f"lines {lo + 1}-{hi}"
        if put_there:
            # The place is there, context and all, and upstream wrote other lines in place of
            # those the hunk removes: its own change to the fix's lines, a conflict whatever
            # the twin has (as elsewhere's "changed").
            return "changed", f"lines {lo + 1}-{hi}"
        if _taken_out_between(hunk, kinds, kept):
            # Taken out between its neighbours, which stay (next to each other, nothing put
            # there): upstream's own change to the fix's lines, not a move (a function moved
            # takes those neighbours with it).
            return "changed", f"lines {lo + 1}-{hi}"
        # Taken out with nothing put there: a function moved away (with the change, maybe)
        # leaves its neighbours, the hunk's outer context, behind.
        return None

    def _new_in_target(self, lo: int, hi: int) -> bool:
        """Whether upstream's diff changed lines [lo, hi) of the target (0-based): one of
        them is in a change block, or lines were taken out between two of them. False: the
        base had these very lines, one after the other."""
        assert self._blocks is not None
        return any((n_start < hi and n_end > lo) or (n_start == n_end and lo < n_start < hi)
                   for _, _, n_start, n_end in self._blocks)

    def old_code(self, index: int, hunk) -> str | None:
        """The own place's lines in the target ("lines N-M") when no commit can have made the
        hunk's change there: it holds the hunk's pre-image by elsewhere's rule (every line the
        hunk removes kept by upstream's diff, most of its context, no copy of its post-image
        over it), and each run of lines the hunk only adds goes where upstream's diff changes
        nothing (kept context alone says nothing there: the lines may be in another form).
        None otherwise. For the history's word, whose change blocks say which lines a commit
        changed, never where: the commit that made the same change in another copy of the
        code is "the same change" (and its patch-id the patch's), found by no reverse-apply
        where that copy is indented otherwise, or at all where the own place has the old code
        exactly (both apply: `unsure`, which the history decided)."""
        away = self.elsewhere(index, hunk, _SOMEWHERE)
        if away is None or away[0] != "pre-image":
            return None
        place = away[1]
        # (elsewhere found the place: the base file's hunks are placed, the diff is made)
        assert self._at_base is not None and self._blocks is not None
        start = self._at_base[index]
        at = start  # the base line the hunk's next pre-image line is
        body = [(kind, line) for kind, line in zip(_kinds(hunk), hunk.lines)
                if kind in (b" ", b"-", b"+")]
        kinds = [kind for kind, _ in body]
        for k, kind in enumerate(kinds):
            if kind == b"+" and (k == 0 or kinds[k - 1] == b" "):
                run = kinds[k:kinds.index(b" ", k)] if b" " in kinds[k:] else kinds[k:]
                # Lines added before base line `at`: a block of upstream's diff there (lines
                # put in, or either neighbour changed) may be them. The same lines put in
                # may be placed as far as they slide over context lines equal to their
                # own (lines ending with a blank line added after a blank line): git's diff
                # of the base to the target may have put them at any of those places.
                if b"-" not in run and any(o_start <= near <= o_end
                                           for near in _slides(body, k, k + len(run), at)
                                           for o_start, o_end, _, _ in self._blocks):
                    return None
            if kind != b"+":
                at += 1
        return place

    def _carried(self, start: int, end: int) -> tuple[int, int, set[int]]:
        """The lines [lo, hi) of the target that lines [start, end) of the base became (with
        what upstream put in place of or next to them), and which of those base lines
        (counted from `start`) upstream's diff keeps as they were."""
        assert self._blocks is not None
        lo = hi = None
        shift = 0  # lines upstream added minus those it removed before the line looked at
        kept: set[int] = set()
        k = start
        for o_start, o_end, n_start, n_end in self._blocks:
            if o_end < start or (o_end == start and o_start < start):
                shift = n_end - o_end
                continue
            if o_start > end or (o_start == end and o_end > end):
                break
            # Lines kept before this block, then the block (touching the span: in it, or an
            # insertion at its edge), taken whole.
            if k < o_start:
                kept.update(range(k - start, min(o_start, end) - start))
                lo = k + shift if lo is None else lo
            lo = n_start if lo is None else min(lo, n_start)
            hi = n_end
            shift = n_end - o_end
            k = max(k, o_end)
        if k < end:
            kept.update(range(k - start, end - start))
            lo = k + shift if lo is None else lo
            hi = end + shift
        assert lo is not None and hi is not None
        return lo, max(hi, lo), kept


def _slides(body: list[tuple[bytes, bytes]], first: int, end: int, at: int) -> list[int]:
    """The base lines before which lines [first, end) of a hunk's `body` ((kind, raw line)
    pairs), lines it only adds before base line `at`, may as well be put: the added lines
    slid up or down over the hunk's context lines equal to the added line they pass (the
    same result, which a diff places at either end)."""
    text = line_content
    found = [at]
    lo, hi, here = first, end, at
    while lo > 0 and body[lo - 1][0] == b" " and text(body[lo - 1][1]) == text(body[hi - 1][1]):
        lo, hi, here = lo - 1, hi - 1, here - 1
        found.append(here)
    lo, hi, here = first, end, at
    while hi < len(body) and body[hi][0] == b" " and text(body[hi][1]) == text(body[lo][1]):
        lo, hi, here = lo + 1, hi + 1, here + 1
        found.append(here)
    return found


def _removed_kept(hunk, kinds: list[bytes], kept: set[int]) -> bool:
    """Whether upstream's diff keeps, at the own place, every line the hunk removes, one of
    them saying something (MIN_ANCHOR_CHARS): the line the fix changes is still there, as it
    was, whatever upstream rewrote around it (the lines after it turned into another call). A
    function moved away takes its lines with it; these stayed: the own place has the old code
    (`_context_kept` alone would call the place gone once one side's context is rewritten)."""
    removed = [k for k, kind in enumerate(kinds) if kind == b"-"]
    if not removed or not all(k in kept for k in removed):
        return False
    old = hunk.old_lines()
    return any(len(_strip_ws(old[k])) >= MIN_ANCHOR_CHARS for k in removed)


def _taken_out_between(hunk, kinds: list[bytes], kept: set[int]) -> bool:
    """Whether each run of lines the hunk removes that upstream's diff does not keep whole
    has its two neighbours in the hunk (the pre-image lines right above and below it) kept,
    one of them saying something (MIN_ANCHOR_CHARS): upstream took the fix's lines out from
    between lines it left in place (`kinds`: the pre-image's kinds; `kept`: the pre-image
    lines, counted from its first, the diff keeps)."""
    old = hunk.old_lines()
    runs = [list(group) for removed, group in itertools.groupby(
        range(len(kinds)), key=lambda k: kinds[k] == b"-") if removed]
    taken = [run for run in runs if not all(k in kept for k in run)]
    return bool(taken) and all(
        run[0] > 0 and run[-1] + 1 < len(kinds) and run[0] - 1 in kept and run[-1] + 1 in kept
        and max(len(_strip_ws(old[run[0] - 1])), len(_strip_ws(old[run[-1] + 1])))
        >= MIN_ANCHOR_CHARS for run in taken)


def _context_kept(hunk, kinds: list[bytes], kept: set[int]) -> bool:
    """Whether the own place of `hunk` is still there (`kept`: the pre-image lines, counted
    from its first, that upstream's diff keeps as they were; `kinds`: the pre-image's kinds):
    at least one context line kept on each side that has context, at least half of the
    context kept, and a kept line that says something (MIN_ANCHOR_CHARS)."""
    lead, trail = hunk.leading_context, hunk.trailing_context
    if lead and not any(k < lead for k in kept):
        return False
    if trail and not any(k >= len(kinds) - trail for k in kept):
        return False
    if 2 * sum(1 for k in kept if kinds[k] == b" ") < kinds.count(b" "):
        return False
    return any(len(_strip_ws(line)) >= MIN_ANCHOR_CHARS
               for k, line in enumerate(hunk.old_lines()) if k in kept)


def _lands_without_diff(hunk, post: list[bytes], base: bytes, current: bytes) -> bool:
    """Whether OwnPlaces.elsewhere answers None (the reverse-apply stands) for `hunk` whatever
    git's diff of `base` to `current` says; `post`: the hunk's post-image lines. Asked first:
    a true landing of a changed line is answered without that diff (a git process per landed
    file of a rebase).

    Why this is exact: a line the diff keeps is the same text in both files. Every line the
    hunk removes that says something (MIN_ANCHOR_CHARS) is nowhere in `current` (none of
    them is kept); every context line that says something is in `current` only where the
    post-image has it (as many times as the post-image has it, and the post-image is in
    `current`: the reverse-apply found it; so there is one copy), so where the diff keeps
    it, it is inside that copy, which then overlaps the own place. So either a copy of the
    post-image overlaps the own place, or no line that says something is kept there and
    `_context_kept` fails (the context is gone). And the post-image's bytes are nowhere in
    `base`, so no copy of it was there at the base: every copy is upstream's."""
    if b"".join(post) in base:
        return False
    kinds = [kind for kind in _kinds(hunk) if kind in (b" ", b"-")]
    for kind, line in zip(kinds, hunk.old_lines()):
        if len(_strip_ws(line)) < MIN_ANCHOR_CHARS:
            continue
        if not line.endswith(b"\n"):
            return False  # the file's last line: counted below by whole lines only
        if kind == b"-":
            if _has_line(current, line):
                return False
        elif _line_count(current, line) != post.count(line):
            return False
    return True


class _CountedLines:
    """A content's whole lines counted (each without its LF -> how many times; `last`: what
    follows its last LF), made once the content has been asked SCANS_BEFORE_COUNT whole-line
    questions (_has_line, _line_count, _has_lines, _is_a_line_of): landed detection asks
    hundreds of them of the file a patch meets (its lines that say something, for each hunk,
    at each check), and each was a scan of the file's bytes; counted, each is a lookup.
    Most contents are asked a few times, and are never counted: counting a file costs about
    as many scans. The answers are the scans', whole line for whole line (a line holding an
    LF but at its end is left to the scan)."""
    __slots__ = ("content", "asked", "counts", "last")

    # Scans of a content's bytes before its lines are counted, and how many contents are
    # followed (their counts kept): as many as normalized_text keeps.
    SCANS_BEFORE_COUNT = 24
    FOLLOWED_AT_MOST = 256
    _followed: dict[int, _CountedLines] = {}  # id(content) -> its entry (content kept)

    def __init__(self, content: bytes) -> None:
        self.content = content
        self.asked = 0
        self.counts: Counter[bytes] | None = None
        self.last = b""

    @classmethod
    def of(cls, content: bytes) -> tuple[Counter[bytes], bytes] | None:
        """(the counts, the part after the last LF) of `content`, None while its questions
        are still scans."""
        entry = cls._followed.get(id(content))
        if entry is None or entry.content is not content:
            if len(cls._followed) >= cls.FOLLOWED_AT_MOST:
                cls._followed.clear()  # (one C call: safe beside another thread's lookups)
            entry = cls._followed[id(content)] = cls(content)
        if entry.counts is None:
            entry.asked += 1
            if entry.asked <= cls.SCANS_BEFORE_COUNT:
                return None
            pieces = content.split(b"\n")
            entry.last = pieces.pop()
            entry.counts = Counter(pieces)
        return entry.counts, entry.last


def _line_count(text: bytes, line: bytes) -> int:
    """How many whole lines of `text` are `line` (which ends with its newline). Not
    bytes.count of `\n` + line: two such lines one after the other share that newline, and
    count, which never overlaps its matches, found one of them."""
    if line and line.find(b"\n") == len(line) - 1 and \
            (counted := _CountedLines.of(text)) is not None:
        return counted[0][line[:-1]]
    needle = b"\n" + line
    found = int(text.startswith(line))
    at = text.find(needle)
    while at != -1:
        found += 1
        at = text.find(needle, at + len(line))  # from this match's last byte, its newline
    return found


# A reverse-apply found somewhere (OwnPlaces.old_code): elsewhere asks of it only that.
_SOMEWHERE = HunkOutcome(0, "offset", 0, 0, 1)


def may_be_elsewhere(hunk, current: bytes) -> bool:
    """False only where OwnPlaces.elsewhere of `hunk` (its reverse-apply found in `current`)
    certainly does not say that the own place holds the pre-image ("pre-image"), told by
    `current`'s bytes alone: no base file read, no git diff. It never changes that answer; it
    only says when asking is useless.

    Why it holds: elsewhere says "pre-image" only when the own place keeps every line the hunk
    removes, a context line on each side that has context, half of the context and a line of
    at least MIN_ANCHOR_CHARS, each byte for byte (git's diff keeps them as they were, and the
    hunk applied to the base without fuzz), and no copy of the hunk's post-image overlaps that
    place. So each such line must be a line of `current` somewhere outside every copy of the
    post-image; a line that is not there rules the place out. A file that has a fix's code
    once (most of them) fails at its first distinctive line, where a search for the removed
    lines alone still passed hunks whose removed line was common code (a blank line, `}`)."""
    cut = _fuzzed(ReversedHunk(hunk), 0)
    if cut is None or cut[3] is not None:
        return False  # anchored at the file's start or end: elsewhere says None
    kinds = [kind for kind in _kinds(hunk) if kind in (b" ", b"-")]  # the pre-image's
    old = hunk.old_lines()
    if not _removed_lines_in(hunk, current):
        return False  # (most landings: a line they removed is nowhere, no copy looked for)
    post = cut[1]
    copies = _line_places(current, b"".join(post)) if post else []
    overlap = any(b - a < len(post) for a, b in zip(copies, copies[1:]))
    covered = {at + k for at in copies for k in range(len(post))} if overlap else set()
    outside: dict[bytes, bool] = {}

    def out(line: bytes) -> bool:
        found = outside.get(line)
        if found is None and (not line or not line.endswith(b"\n")):
            return True  # (a file's last line without its end: taken as there, never a skip)
        if found is None:
            if overlap:  # (copies sharing lines: each occurrence's line number asked)
                found = any(at not in covered for at in _line_places(current, line))
            else:
                # The copies hold this many of its occurrences; one more is outside them.
                found = _has_lines(current, line, len(copies) * post.count(line) + 1)
            outside[line] = found
        return found

    if not all(out(line) for kind, line in zip(kinds, old) if kind == b"-"):
        return False
    return _context_may_be_kept(hunk, out)


def _context_may_be_kept(hunk, out: Callable[[bytes], bool]) -> bool:
    """Whether `_context_kept` may say that an own place of `hunk` is still there, where
    `out(line)` says whether a line of the hunk's pre-image is in the file where that place
    may be (False: a place there cannot keep it): a line of at least MIN_ANCHOR_CHARS, a
    context line on each side that has context, and half of the context may be kept."""
    kinds = [kind for kind in _kinds(hunk) if kind in (b" ", b"-")]  # the pre-image's
    old = hunk.old_lines()
    if not any(out(line) for line in old if len(_strip_ws(line)) >= MIN_ANCHOR_CHARS):
        return False
    lead, trail = hunk.leading_context, hunk.trailing_context
    if (lead and not any(out(line) for line in old[:lead])) or \
            (trail and not any(out(line) for line in old[len(old) - trail:])):
        return False
    context = [line for kind, line in zip(kinds, old) if kind == b" "]
    return 2 * sum(1 for line in context if out(line)) >= len(context)


def _has_lines(text: bytes, line: bytes, wanted: int) -> bool:
    """Whether `line` (ending with its newline) is at least `wanted` whole lines of `text`:
    searched for after each line end (and at the start), up to the `wanted`th."""
    if line and line.find(b"\n") == len(line) - 1 and \
            (counted := _CountedLines.of(text)) is not None:
        return counted[0][line[:-1]] >= wanted
    found = 1 if text.startswith(line) else 0
    needle = b"\n" + line
    at = text.find(needle)
    while at >= 0 and found < wanted:
        found += 1
        at = text.find(needle, at + 1)
    return found >= wanted


def _removed_lines_in(hunk, text: bytes) -> bool:
    """Whether every line `hunk` removes is a line of `text`."""
    pre_kinds = [kind for kind in _kinds(hunk) if kind in (b" ", b"-")]
    return all(kind != b"-" or _has_line(text, line)
               for kind, line in zip(pre_kinds, hunk.old_lines()))


def _has_line(text: bytes, line: bytes) -> bool:
    """Whether `line` (as the file has it: with its newline, but the last line of a file that
    has none) is a whole line of `text`."""
    lf = line.find(b"\n")  # (`find`, not `in`: see history.DOUBLE_QUOTE)
    if (lf < 0 or lf == len(line) - 1) and (counted := _CountedLines.of(text)) is not None:
        return counted[0][line[:-1]] > 0 if lf >= 0 else counted[1] == line
    if line.endswith(b"\n"):
        return text.startswith(line) or b"\n" + line in text
    return text == line or text.endswith(b"\n" + line)


def assess_file(fp, base: bytes | None, current: bytes | None, *,
                apply=apply_file_patch, merges: list | None = None,
                places: PlaceDiffs | None = None) -> FileVerdict:
    """Judge every hunk of one file patch against the target's current content. `apply` is
    apply_file_patch, or a walk's remembered applications (apply.hunks.PatchApplications).
    `places`: where the hunks' own places' diffs come from (PlaceDiffs: a walk's, made
    together; none: a process of its own).
    `merges`: a list the git merge this may need is added to, started (store.diff.FileMerge),
    for `_finish_merges` to end, instead of run and waited for here: assess_patch runs a
    patch's merges side by side."""
    verdict = FileVerdict(path=fp.path, target_path=fp.path)
    verdict.applied = apply(current, fp, max_fuzz=2)
    if current is None or fp.is_new or fp.is_delete:
        # Whole-file cases: creation landed when the target has exactly the new file.
        if fp.is_new and current is not None:
            same = created_identically(fp, current)
            # The file's own path anchors its content: no context lines to look for.
            text = normalized_text(current)
            contained_all = same or all(contained(h, text, anchored=False)[0] for h in fp.hunks)
            language = indentation_matters(fp.path)
            otherwise = _indented_otherwise(created_file(fp), current, language) \
                if contained_all and not same and language else None
            if otherwise is not None:
                # The created file's code is there, but as other statements (one put out of
                # its `if`): neither landed nor absent, as for a hunk of an existing file.
                for index, _ in enumerate(fp.hunks):
                    verdict.hunks.append(HunkVerdict(
                        index, "failed", None,
                        [f"file exists upstream with the same code (whitespace-insensitive), "
                         f"but line {otherwise} indented otherwise relative to the lines "
                         f"around it: {INDENTED_OTHERWISE}"],
                        ambiguous=True, indented=f"line {otherwise}"))
                return verdict
            for index, _ in enumerate(fp.hunks):
                verdict.hunks.append(HunkVerdict(
                    index, "failed", "certain" if same else ("likely" if contained_all else None),
                    ["file exists upstream with identical content" if same else
                     "post-image containment (whitespace-insensitive)"] if contained_all else []))
        elif fp.is_delete and current is None:
            for index, _ in enumerate(fp.hunks or (None,)):
                verdict.hunks.append(HunkVerdict(index, "failed", "certain",
                                                 ["file deleted upstream"]))
        else:
            for outcome in verdict.applied.hunks:
                verdict.hunks.append(HunkVerdict(outcome.index, outcome.status))
        return verdict
    if base is not None and current == base:
        # The file is as the patch found it (at the pin, say): nothing of the patch can have
        # landed in it, and code that merely appears twice in the file proves nothing.
        verdict.hunks = [HunkVerdict(o.index, o.status) for o in verdict.applied.hunks]
        return verdict
    searched: bytes = current
    lines = None  # the file's lines, split only for a search its bytes do not decide

    def search(hunk, max_fuzz: int) -> HunkOutcome:
        nonlocal lines
        placed = place_in_place(searched, (hunk,), max_fuzz=max_fuzz, build=False)
        if placed is not None:
            return placed[1][0]
        if lines is None:
            lines = lines_of(searched)
        return apply_hunks(lines, (hunk,), max_fuzz=max_fuzz, build=False)[1][0]

    whole = verdict.applied.hunks
    placed = False  # whether the whole-file application has placed a hunk before this one
    own = OwnPlaces(fp, base, current, apply, places)
    indented = indentation_matters(fp.path)
    for index, hunk in enumerate(fp.hunks):
        if index < len(whole) and (whole[index].status == "exact" or not placed):
            # Exact in the whole-file application means exact on its own too (found at its
            # own line, nothing moved before it): no second search. So does any outcome
            # before the first hunk placed: the search on its own starts from the same line
            # and the same lower bound, the file's top (on a target far from the patch's base
            # every hunk of most files fails, each search a scan of the file per fuzz level).
            forward = whole[index]
        else:
            forward = search(hunk, 2)
        hv = HunkVerdict(index, forward.status)
        removes = b"-" in _kinds(hunk)
        # The hunk's pre-image is still in the file: clean forward for any hunk; with reduced
        # context too when the hunk removes code (that code is still there). A pure addition
        # "applies with fuzz" wherever its outer context lines are, which proves nothing.
        pre_image_there = hv.forward in ("exact", "offset") or (removes and hv.forward == "fuzz")
        backward = search(ReversedHunk(hunk), 0)
        no_evidence = False  # a post-image the file had at the base: contained() is no proof
        is_contained = False
        if backward.status in ("exact", "offset"):
            away = None if pre_image_there else own.elsewhere(index, hunk, backward)
            if pre_image_there:
                hv.ambiguous = True
                hv.evidence.append(f"reverse-apply and forward-apply ({hv.forward}) both "
                                   f"{AMBIGUOUS}")
            elif away is None and base is not None and removes and \
                    (moved := _removed_line_moved(fp, hunk, base, current, backward,
                                                  own.base_start(index))) is not None:
                # Gone from the hunk's place but not from the file: upstream moved the line
                # (a barrier put after the next call), and the program still runs it. Not a
                # landing unless a person says so: git's merge, which takes a move for a
                # removal and an addition, does not decide it, nor does a history commit.
                hv.ambiguous = hv.merge_unasked = True
                hv.old_code = moved[0]
                hv.evidence.append(
                    "reverse-apply" + (f" (offset {backward.offset})" if backward.offset
                                       else "") + f", but a line the hunk removes (or its "
                    f"call) is still {moved[1]}, at {moved[0]}, as often as at the base: "
                    "moved, not removed: unsure")
            elif away is None:
                hv.landed = "certain"
                hv.evidence.append("reverse-apply" + (f" (offset {backward.offset})"
                                                      if backward.offset else ""))
            elif away[0] == "pre-image":
                # The change is in the file, but at another copy of the code: the hunk's own
                # place (where upstream's diff puts it) is still there without it. Not a
                # landing unless git's merge (which maps that place) changes nothing.
                hv.ambiguous = True
                hv.elsewhere = away[1]
                hv.evidence.append(f"reverse-apply (offset {backward.offset}) only at line "
                                   f"{backward.at_line}, away from the hunk's own place "
                                   f"({away[1]}), which does not have the change: {ELSEWHERE}")
            elif away[0] == "changed":
                # Upstream kept the own place and wrote its own version of the fix's lines:
                # a conflict, as any upstream change to them is (the merge decides), whatever
                # another copy of the code has. History must not call it landed either.
                hv.elsewhere = away[1]
                hv.evidence.append(f"reverse-apply (offset {backward.offset}) only at line "
                                   f"{backward.at_line}, away from the hunk's own place "
                                   f"({away[1]}), where upstream changed the lines the hunk "
                                   f"removes to others: {CHANGED_THERE}")
            else:
                no_evidence = True
                hv.evidence.append(f"reverse-apply (offset {backward.offset}) only at line "
                                   f"{backward.at_line}, a copy of the code that had the "
                                   f"change at the patch's base: {AT_BASE}")
        elif removes and hv.forward not in ("exact", "offset") and base is not None and \
                (inside := _removed_line_moved_inside(fp, hunk, base, current)) is not None:
            # The hunk's post-image is in the file but for a line it removes, which upstream
            # moved a line or two (a barrier put after the next call), inside the hunk's lines:
            # the reverse-apply fails on it. Not a landing unless a person says so: git's
            # merge takes the move for the removal and an addition, and changes nothing.
            hv.ambiguous = hv.merge_unasked = True
            hv.old_code = inside[0]
            hv.evidence.append(f"the hunk's post-image is in the file but for {inside[1]}, at "
                               f"{inside[0]}, among the hunk's lines: {inside[2]}: unsure")
        if hv.landed is None and not hv.ambiguous and hv.elsewhere is None and not no_evidence:
            # Normalizing the file is the costly part: only for hunks the patch tools could not
            # place (contained() keeps the result for the next hunk on the same file).
            is_contained, why, indented_at = contained(hunk, current, indented=indented)
            # A pure addition placed with fuzz on its inner context (_inner_context_there):
            # the code without it is in the file too, whole but for the outer context lines.
            inner = _inner_context_there(hunk, forward) if is_contained and not removes \
                else 0
            away = own.contained_away(index, hunk) \
                if is_contained and not pre_image_there and not inner else None
            if indented_at is not None and not pre_image_there:
                # The fix's code is there, but as another statement (outside the `if` it was
                # written in): neither landed nor absent. The rebase moves it only where it
                # applies or merges cleanly, and stops otherwise; it never drops it.
                hv.ambiguous = True
                hv.indented = f"line {indented_at}"
                hv.evidence.append(why)
            elif inner:
                # Both are in the file: the added code at one place, the code without it at
                # another (a twin that has the change, this copy without it): neither landed
                # nor applies can be said, and git's merge, whose line map may put the own
                # place on the twin, does not decide it.
                hv.ambiguous = hv.merge_unasked = True
                # Kept whatever a commit of the history did: it made the change elsewhere.
                at = forward.at_line or 0  # placed: _inner_context_there saw its line
                hv.old_code = f"lines {at}-{at + inner - 1}"
                hv.evidence.append(f"added code is present, and the code without it too, at "
                                   f"{hv.old_code} (forward-apply: fuzz 1, its inner context): "
                                   f"{ELSEWHERE}")
            elif is_contained and pre_image_there:
                hv.evidence.append("added code is present but the old code is still there "
                                   f"(forward-apply: {hv.forward})")
            elif away is not None and away[0] == "changed":
                # Upstream kept the own place and wrote its own version of the fix's lines
                # there: a conflict (the merge decides), whatever the copy elsewhere is.
                # History must not call it landed either.
                hv.elsewhere = away[1]
                hv.evidence.append(
                    f"added code found (whitespace-insensitive) only away from the hunk's own "
                    f"place ({away[1]}), where upstream changed the lines the hunk removes to "
                    f"others: {CHANGED_THERE}")
            elif away is not None:
                # The added code is in the file, but at another copy of the code: the own
                # place (where upstream's diff puts it) is still there without it. Marked
                # for the history too, which cannot tell where a commit made the change.
                hv.old_code = away[1]
                hv.evidence.append(
                    f"added code found (whitespace-insensitive) only away from the hunk's own "
                    f"place ({away[1]}), which still has the old code: {CONTAINED_AWAY}")
            elif is_contained:
                hv.landed = "likely"
                hv.evidence.append(why)
        if not (hv.merge_unasked or hv.elsewhere or hv.old_code or hv.indented):
            twin = _twin_found(hunk, forward, backward, pre_image_there, is_contained,
                               current, base, lambda: own.base_start(index))
            if twin is not None and twin[0]:
                # The change is in the fix's function, the code without it only in a twin:
                # git's line map, upstream having reordered the twins, carries the fix's place
                # onto the twin (and a rebase would put the fix there).
                hv.landed = "certain" if backward.status in ("exact", "offset") else "likely"
                hv.ambiguous = False
                hv.evidence = [item for item in hv.evidence if not item.endswith(AMBIGUOUS)
                               and not item.startswith("added code is present but")]
                hv.evidence.append(twin[1])
            elif twin is not None:
                # The change is in the file, but in another function than the fix's, which still
                # has the code without it: git's merge, whose line map may carry the fix's place
                # onto the twin (a reordered file), does not decide it, nor does a history
                # commit (it made the change in the twin).
                hv.landed = None
                hv.ambiguous = hv.merge_unasked = True
                hv.old_code = twin[2]
                hv.evidence.append(twin[1])
        verdict.hunks.append(hv)
        placed = placed or (index < len(whole) and whole[index].status != "failed")
    if base is not None and any(not h.merge_unasked and (
            h.ambiguous or (h.landed != "certain" and h.forward not in ("exact", "offset")))
                                for h in verdict.hunks):
        # Upstream changed the region around the fix: let git's 3-way merge say whether the
        # patch still changes anything. An empty result proves every hunk is there, and turns
        # "likely" into "certain". Only an empty result counts here: the merge runs (a git
        # process) only when a line check does not already rule that out, asked first of the
        # patch's own lines (no application, no file split into lines).
        # An ambiguous hunk (its pre-image at one place, its post-image at another: the same
        # code more than once) is asked too: the merge maps the hunk's own place (where the
        # old file had it) by upstream's line map, so an empty result says the change is there,
        # and the pre-image found is another copy of the code, which the patch never changed.
        if _adds_a_line_neither_has(fp, base, current):
            return verdict
        patched = apply(base, fp, max_fuzz=0)
        if patched.ok and patched.content == current:
            # The target holds exactly the patched file (ambiguous hunks of code the file has
            # more than once, as a rule): both line checks below would let the merge through,
            # and merge_file answers two equal sides without git.
            _take_merge(verdict, current, *merge_file(base, current, current))
        elif patched.ok and patched.content is not None and \
                merge_can_give_ours(base, current, patched.content) and \
                new_runs_are_in_ours(base, current, patched.content):
            if merges is None:
                _take_merge(verdict, current, *merge_file(base, current, patched.content))
            else:
                merges.append((verdict, current, FileMerge(base, current, patched.content)))
    return verdict


# The `+` lines _adds_a_line_neither_has looks up, at most: each is a search of two files (a
# patch that adds hundreds of lines the files have is left to merge_can_give_ours' line sets).
_LINES_LOOKED_UP = 8


def _removed_counts(fp, removed) -> dict[bytes, int]:
    """How many times the whole patch of the file takes each line of `removed` out, less the
    times it adds it back (a fix that moves a line removes nothing)."""
    taken = dict.fromkeys(removed, 0)
    for hunk in fp.hunks:
        for kind, line in zip(_kinds(hunk), hunk.lines):
            if kind in (b"-", b"+") and (content := line_content(line)) in taken:
                taken[content] += 1 if kind == b"-" else -1
    return taken


def _removed_line_moved(fp, hunk, base: bytes, current: bytes, found: HunkOutcome,
                        base_start: int | None = None) -> tuple[str, str] | None:
    """Where (`line N` of `current`, and "in the file") a line `hunk` (of file patch `fp`) removes is, when
    `current` has it as often as `base` had it before the patch took it out (the patch's
    other hunks counted: a fix that moves the line itself removes nothing), within
    ANCHOR_DISTANCE lines of where the hunk's reverse-apply `found` it: upstream moved the
    line a few lines rather than removed it, although the hunk's place is without it. Asked
    of lines of MIN_CONTAINED_CHARS or more, without whitespace (a closing bracket or
    `return x` is everywhere), and of a shorter call alone (`_call_alone`: `dist.barrier()`
    runs wherever it is put); None otherwise. (A copy far away, in a file that grew copies
    of the code over a long range of commits, says nothing of this place.) In a function
    of a language whose functions are read (`base_start`: where the hunk's pre-image starts
    in `base`), the function is the place instead for a hunk that only removes lines (and
    "in its function"): `_removed_line_in_function`."""
    if found.at_line is None:
        return None
    if base_start is not None and b"+" not in _kinds(hunk) and \
            (language := _language(fp.path)) is not None:
        functions = _removal_functions(hunk, base, current, found.at_line - 1, base_start,
                                       language)
        if functions is not None:
            where = _removed_line_in_function(fp, hunk, found.at_line - 1, *functions)
            return None if where is None else (where, "in its function")
    at = found.at_line - 1
    post = hunk.new_lines()
    lo, hi = at - ANCHOR_DISTANCE, at + len(post) + ANCHOR_DISTANCE
    removed = dict.fromkeys(line_content(line) for kind, line in zip(_kinds(hunk), hunk.lines)
                            if kind == b"-")
    long_lines = [line for line in removed
                  if line.endswith(b"\n") and (len(_strip_ws(line)) >= MIN_CONTAINED_CHARS
                                               or _call_alone(line))]
    if not long_lines:
        return None
    # Nearness asked first, in the bytes of lines lo..hi alone (found from the copy of the
    # post-image the reverse-apply found, at line `at`): a landing (the line gone, or only far
    # from this place) is answered without a search of the whole file per removed line, and
    # the counts (a pass over every line of the file patch, searches of both files) are made
    # only for a line near the place.
    window = _lines_around(current, b"".join(post), at, ANCHOR_DISTANCE,
                           ANCHOR_DISTANCE + 1)
    taken: dict[bytes, int] | None = None
    for line in long_lines:
        if window is None:  # (no post-image to find the place by)
            places = _line_places(current, line)
        else:
            start, end, first = window
            places = [first + n for n in _line_places(current[start:end], line)]
        near = [n for n in places if lo <= n <= hi]
        if not near:
            continue
        if taken is None:
            taken = _removed_counts(fp, removed)
        count = taken[line]
        if count > 0 and _line_count(current, line) > _line_count(base, line) - count:
            return f"line {near[0] + 1}", "in the file"
    return None


def _removal_functions(hunk, base: bytes, current: bytes, at: int, base_start: int,
                       language: str) -> tuple[list[bytes], range, list[bytes], range] | None:
    """The function `hunk` removes its first removed line from, in `base` (its pre-image at
    0-based line `base_start`) and in `current` (its post-image at line `at`): (the base's
    lines, its body's lines there, the same of `current`), None when the removal is not
    inside a function of both (a module's statement, a language whose functions are not read
    by `_definitions_of`)."""
    kinds = _kinds(hunk)
    first = kinds.index(b"-")
    line = line_content(hunk.lines[first])
    pre_before = sum(1 for kind in kinds[:first] if kind != b"+")
    post_before = sum(1 for kind in kinds[:first] if kind != b"-")
    base_lines = lines_of(base)
    base_body = _function_body(base_lines, base_start + pre_before, line, language)
    if base_body is None or base_start + pre_before not in base_body or \
            base_lines[base_start + pre_before] != line:
        return None  # (the base's function read otherwise than the hunk's place says)
    current_lines = lines_of(current)
    current_body = _function_body(current_lines, at + post_before, line, language)
    if current_body is None:
        return None
    return base_lines, base_body, current_lines, current_body


def _removed_line_in_function(fp, hunk, at: int, base_lines: list[bytes], base_body: range,
                              current_lines: list[bytes], current_body: range) -> str | None:
    """`_removed_line_moved` for a hunk that only removes lines, inside a function of both
    files (`_removal_functions`; `at`: the 0-based line of the target's copy of the
    post-image): where (`line N` of the target) a line the hunk removes is, when the target's
    function has it more often than the base's had it less what the hunk takes out of it (a
    line the patch as a whole adds back is not removed); None otherwise. Lines are compared
    without their whitespace, shorter than the file-wide window asks (MIN_ANCHOR_CHARS: in the
    fix's own function `x = x.to(torch.float16)` moved a few lines still runs, while a
    closing bracket or `return x` is in most functions); a call alone (`_call_alone`) is
    counted by what it calls too (`torch.cuda.synchronize(` given another argument is still
    made there). Counts are per function: upstream may have taken a copy out of another
    function. (A hunk that also adds lines is a rewrite, found in reverse: a line it removes
    found elsewhere in a long function is most often another statement alike, and the window
    of `_removed_line_moved` asks.)"""
    net: dict[bytes, int] = {}  # how many of a line's or a call's copies the hunk removes
    removed: dict[bytes, None] = {}
    for kind, each in zip(_kinds(hunk), hunk.lines):
        if kind == b"-":
            line = line_content(each)
            removed[line] = None
            for key in _line_keys(line):
                net[key] = net.get(key, 0) + 1
    taken = _removed_counts(fp, removed)
    for line in removed:
        if taken[line] <= 0 or len(_strip_ws(line)) < MIN_ANCHOR_CHARS:
            continue  # a line the patch moves rather than removes; a line that says little
        for key in _line_keys(line):
            there = [n for n in current_body if key in _line_keys(current_lines[n])]
            had = sum(1 for n in base_body if key in _line_keys(base_lines[n]))
            if there and len(there) > had - net[key] >= 0:
                return f"line {min(there, key=lambda n: abs(n - at)) + 1}"
    return None


def _line_keys(line: bytes) -> tuple[bytes, ...]:
    """What `_removed_line_in_function` counts a line by: its text without whitespace, and for
    a call alone also what it calls (its text up to its first `(`, whitespace removed)."""
    text = _strip_ws(line)
    if not text:
        return ()
    if not _call_alone(line):
        return (text,)
    return (text, b"call " + text[:text.find(b"(") + 1])


def _function_body(lines: list[bytes], at: int, line: bytes, language: str) -> range | None:
    """The 0-based lines [start, end) of the body of the innermost function that holds `line`
    put at line `at` of `lines`, None when it is in no function (`_definitions_of`)."""
    c_file = CFile(lines) if language == "c" else None  # (a method inside its class)
    definitions = _definitions_of(lines, at, line, language, c_file)
    if not definitions:
        return None
    return range(definitions[0] + 1, body_end(lines, definitions[0], language, c_file))


# A statement that is a call alone (`dist.barrier()`, `__syncthreads();`, `free(buf);`): it
# does what it does wherever it is, so moved a few lines it still runs. Not a line that gives
# a value (`x = f()`, `return f()`) nor a block's head (`if (x)`).
_CALL_ALONE = on_first_use(rb"[ \t]*(?!(?:if|for|while|switch|return|sizeof|elif|assert|del)\b)"
                         rb"[A-Za-z_][\w.:]*(?:->[A-Za-z_][\w.:]*)*[ \t]*\(.*\)[ \t]*;?"
                         rb"[ \t]*(?:(?:#|//).*)?\r?\n")


def _call_alone(line: bytes) -> bool:
    """Whether `line` is a call statement alone that says something (MIN_ANCHOR_CHARS,
    whitespace removed): `dist.barrier()`."""
    return len(_strip_ws(line)) >= MIN_ANCHOR_CHARS and _CALL_ALONE.fullmatch(line) is not None


def _removed_line_moved_inside(fp, hunk, base: bytes,
                               current: bytes) -> tuple[str, str, str] | None:
    """Where (`line N` of `current`), what and how (for the evidence) a line `hunk` (of file
    patch `fp`) removes is, when `current` has the hunk's post-image whole (or what GNU
    patch's fuzz 1 or 2 leaves of it: upstream edited an outer context line too) with that
    line put back among its lines, up to ANCHOR_DISTANCE lines from where the hunk removes it,
    elsewhere than there (not at the whole post-image's first or last line: there the
    reverse-apply finds the post-image, and `_removed_line_moved` asks): upstream moved the
    line past a line or two of the hunk's context rather than removed it, whatever it did to
    the line's copies in other functions. Or upstream's version of that line there, a line
    the base had less often that makes the same call (its text up to its first `(` the same,
    and no line of the post-image makes it: the line given other arguments, moved or not).
    The post-image around it is the evidence, so a line that says something
    (MIN_ANCHOR_CHARS, whitespace removed) is asked, shorter than `_removed_line_moved` asks
    (`dist.barrier()`), the first _LINES_LOOKED_UP of them, and only a line the patch as a
    whole removes (a fix that moves it itself removes nothing); None otherwise."""
    kinds = _kinds(hunk)
    # Each line asked: the line, the call it makes (b"" for none: its text up to its first
    # `(`), and where in the post-image the hunk removes it (the post-image lines before it).
    asked: list[tuple[bytes, bytes, int]] = []
    removed: dict[bytes, None] = {}
    post_starts: bytes | None = None  # (made once the hunk has a line to ask)
    at = 0
    for kind, each in zip(kinds, hunk.lines):
        if kind != b"-":
            at += 1
            continue
        line = line_content(each)
        if line in removed:
            continue
        removed[line] = None
        if len(asked) == _LINES_LOOKED_UP or not line.endswith(b"\n") or \
                len(_strip_ws(line)) < MIN_ANCHOR_CHARS:
            continue
        if post_starts is None:
            if not _inner_post_image_there(hunk, current):
                return None
            post_starts = _line_starts(hunk.new_lines())
        stripped = line.lstrip()
        call = stripped[:stripped.find(b"(") + 1]
        wanted = _strip_ws(call)
        if len(wanted) < MIN_ANCHOR_CHARS or call not in current or \
                b"\n" + wanted in post_starts:
            # (a call the post-image makes too is one of a list of them, `m.def(` of a
            # binding table: another line of the list is not a version of this one)
            call = b""
        if call or line in current:
            asked.append((line, call, at))
    if not asked:
        return None
    # The post-image (and what GNU patch's fuzz 1 or 2 leaves of it, two lines that say
    # something left, `return e` saying little: upstream edited an outer context line too),
    # its lines dropped at the top, with the pre-image cut alike.
    # Each: (lines cut at the top, at the bottom, post-image, pre-image).
    reverse = ReversedHunk(hunk)
    whole = len(hunk.new_lines())
    images: list[tuple[int, int, list[bytes], bytes]] = []
    for fuzz in range(3):
        cut = _fuzzed(reverse, fuzz)
        if cut is not None and len(cut[1]) > 1 and (not fuzz or _saying_something(cut[1]) > 1):
            top, post = cut[0], cut[1]
            images.append((top, whole - top - len(post), post, b"".join(cut[2])))
    parts: dict[tuple[int, int], tuple[bytes, bytes]] = {}

    def between(start: int, end: int, spots: list[tuple[int, int]]) -> bool:
        """Whether the line at current[start:end] is between the head and the tail of the
        post-image cut at one of `spots` (image, line), other than as in the pre-image."""
        for k, j in spots:
            _, _, post, pre = images[k]
            # (the lines next to it first: most places are not the post-image's)
            if j and not current.endswith(post[j - 1], 0, start) or \
                    j < len(post) and not current.startswith(post[j], end):
                continue
            if (k, j) not in parts:
                parts[k, j] = (b"".join(post[:j]), b"".join(post[j:]))
            head, tail = parts[k, j]
            if current.endswith(head, 0, start) and current.startswith(tail, end) and \
                    current[start - len(head):end + len(tail)] != pre:
                return True
        return False

    taken: dict[bytes, int] | None = None
    for line, call, at in asked:
        # Where the line may have moved to: up to ANCHOR_DISTANCE lines from where the hunk
        # removes it, between two lines of the post-image (or next to what fuzz leaves of it:
        # among the context lines it cut); put back where the hunk removes it, it makes the
        # pre-image, a copy of the code without the change (a twin's).
        spots = [(k, j) for k, (top, bottom, post, _) in enumerate(images)
                 for j in range(max(0 if top else 1, at - top - ANCHOR_DISTANCE),
                                min(len(post) + (bottom > 0), at - top + ANCHOR_DISTANCE + 1))]
        for start in _place_offsets(current, line):
            if not between(start, start + len(line), spots):
                continue
            if taken is None:
                taken = _removed_counts(fp, removed)
            # (A fix that moves the line itself, a hunk removing it, another adding it, removes
            # nothing. Counts in the whole file do not matter: upstream may have taken the line
            # out of a twin of the code.)
            if taken[line] > 0:
                return (f"line {_lines_at(current, [start])[0] + 1}",
                        "a line the hunk removes", "moved, not removed")
        if not call:
            continue
        wanted = _strip_ws(call)
        found = current.find(call)
        while found >= 0:
            # The line the call is on: upstream's, between the post-image's head and tail.
            start = current.rfind(b"\n", 0, found) + 1
            end = current.find(b"\n", found) + 1
            if end == 0:
                break
            other = current[start:end]
            if other != line and _strip_ws(other).startswith(wanted) and \
                    between(start, end, spots) and \
                    _line_count(current, other) > _line_count(base, other):
                return (f"line {_lines_at(current, [start])[0] + 1}",
                        "upstream's version of a line the hunk removes (the same call)",
                        "rewritten, not removed")
            found = current.find(call, end)
    return None


def _line_starts(lines: list[bytes]) -> bytes:
    """`lines` (each ending with a line end, but the last) without whitespace, each after a
    line end: one of them starts with bytes P without whitespace where this holds
    b"\n" + P. One search, where stripping each line to ask each of them was a loop over
    every line of a hunk of thousands of lines, for each line it removes."""
    return b"\n" + b"".join(lines).translate(None, _WS_BUT_LF)


def _inner_post_image_there(hunk, current: bytes) -> bool:
    """Whether `current` has the first or the second half of the lines of `hunk`'s
    post-image that fuzz 2 leaves (all but two at either end), each half whole (its one line,
    for one line): a necessary condition of every answer of `_removed_line_moved_inside`, one
    or two searches of the file before its searches per removed line. That check finds a
    line only right between a head and a tail of the post-image cut by fuzz 0, 1 or 2 (each
    cut inside the one before), which hold the lines fuzz 2 leaves, split where the line
    sits: one of the two holds either half whole."""
    inner = hunk.new_lines()[2:-2]
    if len(inner) < 2:
        return not inner or inner[0] in current
    half = len(inner) // 2
    return b"".join(inner[:half]) in current or b"".join(inner[half:]) in current


def _saying_something(lines: list[bytes]) -> int:
    """How many of `lines` say something (MIN_ANCHOR_CHARS without whitespace)."""
    return sum(len(_strip_ws(line)) >= MIN_ANCHOR_CHARS for line in lines)


# git's default funcname rule (xdiff's def_ff): a line that starts with a letter, `_` or `$`
# names the function or block the lines below it are in (`def scale(`, `void launch(`).
_DEFINITION_START = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_$")
# The name a definition line gives: the identifier before its first `(` (a signature upstream
# gave another parameter still names the same function), else the whole line.
_CALLED = on_first_use(rb"([A-Za-z_$][\w$]*)\s*\(")


def _definition_name(line: bytes) -> bytes:
    called = _CALLED.search(line)
    return called.group(1) if called else _strip_ws(line)


# A Python `def` or `class` line inside a class or function: git's default rule (column 0)
# names every method of a class by the class line, so twin methods would share one name.
_INDENTED_DEFINITION = re.compile(rb"[ \t]+(?:async[ \t]+)?(?:def|class)[ \t]+[A-Za-z_]")


def _indent_of(line: bytes) -> int:
    return len(line) - len(line.lstrip(b" \t"))


def _name_above(lines: list[bytes], at: int) -> bytes | None:
    """The name (`_definition_name`) of the nearest definition line (`_DEFINITION_START`)
    above line `at` (0-based) of `lines`, None when there is none. A line inside a Python
    method (or nested function) is named by its own `def`: an indented definition line less
    indented than line `at` and than every line between them (`_INDENTED_DEFINITION`)."""
    limit = _indent_of(lines[at]) if at < len(lines) and lines[at].strip() else 0
    for k in range(min(at, len(lines)) - 1, -1, -1):
        line = lines[k]
        if line and line[0] in _DEFINITION_START:
            return _definition_name(line)
        if limit and line.strip() and not line.lstrip().startswith((b"#", b")", b"]", b"}")):
            indent = _indent_of(line)
            if indent < limit:
                if _INDENTED_DEFINITION.match(line):
                    # Qualified by the top-level definition it is in (`Class.method`): the
                    # `__init__` or `forward` of two classes are two functions.
                    outer = _name_above(lines, k) if indent else None
                    own = _definition_name(line)
                    return outer + b"." + own if outer is not None else own
                limit = indent  # a block the line is in (`if`, `for`): its own is above
    return None


def _same_function(place: bytes | None, fix: bytes) -> bool:
    """Whether a place named `place` (`_name_above`) is in the fix's function `fix`. A fix
    named by its hunk header's funcname (git's rule: the class line for a method) is the
    class, and every method of it is in it."""
    return place is not None and (place == fix or place.startswith(fix + b"."))


def _fix_function(hunk, base_lines: list[bytes] | None, base_start: int | None) -> bytes | None:
    """The name of the function `hunk` changes: the definition line above its first change in
    the base file (`base_start`: where its pre-image starts there, 0-based), git's default rule,
    the rule `_name_above` reads the target with; where the hunk has no place in the base, its
    own context lines above the change, then its header's funcname (the text after the second
    `@@`). None when nothing names it."""
    if base_lines is not None and base_start is not None:
        return _name_above(base_lines, base_start + hunk.leading_context)
    for line in reversed(hunk.old_lines()[:hunk.leading_context]):
        if line and line[0] in _DEFINITION_START:
            return _definition_name(line)
    section = hunk.section.strip()
    return _definition_name(section) if section else None


def _twin_function(name: bytes | None, lines: list[bytes], before: tuple[int, int, int],
                   after: list[tuple[int, int, int]]) -> tuple[bool, str] | None:
    """Which function has the change of a hunk whose function is `name` (`_fix_function`),
    found in the target (`lines`) at the places `after`, while the code without it is at
    `before`: identical twin functions, upstream having made the change in one of them (and,
    often, reordered the file, which misleads git's line map and merge: they carry the fix's
    place onto the other twin). Each place is (first line, end, the line of its first
    change), 0-based. (False, reason ending in TWIN_ELSEWHERE) where the change is only in
    another function than the fix's; (True, reason ending in TWIN_HERE) where it is in the
    fix's function and the code without it only in another one; None where nothing tells:
    nothing names the fix's function (a file of blocks without definition lines, where the
    merge's map decides), both in the fix's function, or the pre-image found inside a copy of
    the post-image (an added function that ends as its neighbour does: the code without it
    is the change's own tail). Where neither place is in the fix's function (renamed, or a
    line without a definition above it), nothing tells which copy is the fix's: not landed."""
    if name is None:
        return None
    first, end, _ = before
    own = _name_above(lines, before[2])
    found: list[tuple[int, bytes | None]] = []
    for start, stop, changed in after:
        if start < end and first < stop:
            return None  # the pre-image found is a part of the post-image found
        found.append((changed, _name_above(lines, changed)))
    if not found:
        return None
    fix = name.decode(errors="replace")
    ours = [at for at, there in found if _same_function(there, name)]
    if ours:
        if _same_function(own, name) or len(found) > 1:
            return None
        other = own.decode(errors="replace") if own is not None else "no function"
        return True, (f"the change is found in {fix}, the function the fix changes (line "
                      f"{ours[0] + 1}), and the code without it only in {other} (lines "
                      f"{first + 1}-{end}), a twin of it: {TWIN_HERE}")
    at, there = found[0]
    where = (f"in {there.decode(errors='replace')}" if there is not None
             else "above every definition line")
    still = (f"{fix}, the function the fix changes," if _same_function(own, name) else
             f"{own.decode(errors='replace') if own is not None else 'the file'} (the fix "
             f"changes {fix})")
    return False, (f"the change is found only {where} (line {at + 1}), and {still} still has "
                   f"the code without it (lines {first + 1}-{end}): {TWIN_ELSEWHERE}")


def _twice_in(base: bytes, pre: list[bytes], at: int) -> bool:
    """Whether `base` has, at two places or more, the lines of pre-image `pre` around its
    change (before line `at` of it) that are inside one function: up to the definition lines
    (`_DEFINITION_START`) it reaches on either side (a twin's own definition line differs,
    the code under it is the same), without the blank lines at its ends."""
    starts = [k for k, line in enumerate(pre) if line[:1] and line[0] in _DEFINITION_START
              or _INDENTED_DEFINITION.match(line)]
    first = max((k + 1 for k in starts if k < at), default=0)
    end = min((k for k in starts if k >= at), default=len(pre))
    inner = pre[first:end]
    # Blank lines at its ends are the space between functions (the file's last has none).
    while inner and not inner[0].strip():
        inner = inner[1:]
    while inner and not inner[-1].strip():
        inner = inner[:-1]
    return bool(inner) and len(_place_offsets(base, b"".join(inner))) >= 2


def _twin_found(hunk, forward: HunkOutcome, backward: HunkOutcome, pre_image_there: bool,
                is_contained: bool, current: bytes, base: bytes | None,
                base_start: Callable[[], int | None]) -> tuple[bool, str, str] | None:
    """`_twin_function`'s answer (landed, reason) and the lines of the code without the
    change, where the hunk's change (its reverse-apply `backward`, else each copy of its added
    code, whitespace ignored, as `contained` searches for it) and the code without it
    (`forward`: the pre-image found, `pre_image_there`, or a pure addition's inner context,
    `_inner_context_there`) are both in the file, in twin functions (`_twice_in`); None
    otherwise. A landing is said only of a change the reverse-apply found, or `contained`
    (`is_contained`: anchored by the hunk's context) found once. Answered from the hunk's
    outcomes first: only a hunk whose pre-image and change are both found reads the files'
    lines."""
    if forward.at_line is None:
        return None
    # A pure addition placed on its inner context with fuzz 2 (one more upstream edit in the
    # moved function than fuzz 1 allows) is asked only for the twin rule's "not landed": the
    # two lines left that say something are often the code of a landing's other copy too.
    guard_only = False
    if not pre_image_there:
        if b"-" in _kinds(hunk):
            return None
        if not _inner_context_there(hunk, forward):
            if not _inner_context_there(hunk, forward, widest=2):
                return None
            guard_only = True
    lead = hunk.leading_context
    reversed_ = backward.status in ("exact", "offset") and backward.at_line is not None
    if not reversed_ and len(_changed_side(hunk, b"+", _kinds(hunk))) < MIN_CONTAINED_CHARS:
        return None
    cut = _fuzzed(hunk, forward.fuzz)
    top, pre = (cut[0], cut[1]) if cut is not None else (0, hunk.old_lines())
    if base is None or not _twice_in(base, pre, lead - top):
        # Twins are code the base file had twice: code in a function upstream made of the
        # fix's (a helper its body moved into, the wrapper keeping the docstring) is that
        # function's, wherever the change went. (Asked first: a search of the base's bytes
        # that most hunks, their code there once, end at.)
        return None
    if reversed_:
        assert backward.at_line is not None
        at = backward.at_line - 1
        after = [(at, at + len(hunk.new_lines()), at + lead)]
    else:
        # (the removed code still in the file, `contained` says no; its copies say where)
        after = [(start, last + 1, start) for start, last in _added_copies(hunk, current)]
    if not after:
        return None
    first = forward.at_line - 1 - top
    before = (first, first + len(hunk.old_lines()), first + lead)
    start = base_start()
    name = _fix_function(hunk, base.split(b"\n") if start is not None else None, start)
    said = _twin_function(name, current.split(b"\n"), before, after)
    if said is None or (said[0] and (guard_only or (not reversed_ and not is_contained))):
        return None
    return said[0], said[1], f"lines {before[0] + 1}-{before[1]}"


def _lines_around(content: bytes, lines: bytes, at: int, before: int,
                  after: int) -> tuple[int, int, int] | None:
    """(start, end, first): the bytes content[start:end] are its lines `first` (0-based) up to
    `after` lines past the copy of `lines` (whole lines) that starts at line `at`, from
    `before` lines above it (both clamped to the file); None when `lines` is empty or not at
    line `at`. Lines are counted only where `lines` is in the file more than once: a single
    copy is the one at line `at` (its caller found it there)."""
    if not lines:
        return None
    offsets = _place_offsets(content, lines)
    if len(offsets) != 1:
        at_offset = dict(zip(_lines_at(content, offsets), offsets))
        if at not in at_offset:
            return None
        offsets = [at_offset[at]]
    pos = offsets[0]
    start, first = pos, at
    while first > at - before and start > 0:
        start = content.rfind(b"\n", 0, start - 1) + 1
        first -= 1
    end = pos + len(lines)
    for _ in range(after):
        if end >= len(content):
            break
        found = content.find(b"\n", end)
        end = len(content) if found < 0 else found + 1
    return start, end, first


def _inner_context_there(hunk, forward: HunkOutcome, widest: int = 1) -> int:
    """How many lines of the file (0: none) show that a pure addition placed forward with fuzz
    (`forward`) was placed on its inner context: fuzz 1 (one context line dropped at each end
    that has more than one), with a context line that says something (MIN_ANCHOR_CHARS) on
    each side of what it adds. Those lines are then in the file, one after the other, without
    the added code between them: the code the fix changes, still without the change (its
    function moved, say, and a twin of it took its place with the change), which post-image
    containment must not call landed. At fuzz 2 a line on each side is all that is matched
    (a blank line and a closing bracket are everywhere, and two lines that say something are
    often in a file twice): asked up to fuzz `widest`, 2 only where twin functions tell which
    copy is the fix's (`_twin_found`)."""
    if forward.status != "fuzz" or not 1 <= forward.fuzz <= widest or forward.at_line is None:
        return 0
    cut = _fuzzed(hunk, forward.fuzz)
    if cut is None:
        return 0
    top, pre, _, _ = cut
    kinds = _kinds(hunk)
    bottom = len(hunk.old_lines()) - top - len(pre)  # context lines dropped at the end
    end = len(kinds) - bottom
    adds = [k for k in range(top, end) if kinds[k] == b"+"]
    if not adds:
        return 0

    def says_something(lines: range) -> bool:
        return any(len(_strip_ws(line_content(hunk.lines[k]))) >= MIN_ANCHOR_CHARS
                   for k in lines)

    # Each side of what it adds has a line that says something: two blank lines before a
    # `def` are before every function of the file (a new function put elsewhere lands too).
    if not says_something(range(top, adds[0])) or not says_something(range(adds[-1] + 1, end)):
        return 0
    return len(pre)


def _adds_a_line_neither_has(fp, base: bytes, current: bytes) -> bool:
    """Whether one of the first `+` lines of `fp` is a line neither of `base` nor of `current`
    (store.diff.merge_can_give_ours then says False for `fp` applied to `base`, without fuzz).

    Why: applied without fuzz, `fp` turns `base` into a file whose lines are lines of `base`
    (its context among them) and its `+` lines; so a `+` line `base` lacks is one of the lines
    merge_can_give_ours finds new in that file, and `current` lacks it too. A line of a file
    (merge_can_give_ours splits at each LF) is the text between two LFs, or the file's start
    or end: what is found between two LFs once the file is put between two."""
    looked_up: set[bytes] = set()
    for hunk in fp.hunks:
        for line in hunk.lines:
            if line[:1] != b"+":
                continue
            text = line[1:-1] if line.endswith(b"\n") else line[1:]
            if text in looked_up:
                continue
            if not _is_a_line_of(base, text) and not _is_a_line_of(current, text):
                return True
            looked_up.add(text)
            if len(looked_up) == _LINES_LOOKED_UP:
                return False
    return False


def _is_a_line_of(content: bytes, text: bytes) -> bool:
    """Whether `text` (no LF in it) is a line of `content` as merge_can_give_ours splits it:
    `b"\\n" + text + b"\\n"` in `b"\\n" + content + b"\\n"`, asked without copying the file
    (twice per merge question, files of 100 KB): between two LFs, at the start before one,
    at the end after one, or the whole file."""
    if text.find(b"\n") < 0 and (counted := _CountedLines.of(content)) is not None:
        return text in counted[0] or counted[1] == text
    return b"\n" + text + b"\n" in content or content.startswith(text + b"\n") or \
        content.endswith(b"\n" + text) or content == text


def _take_merge(verdict: FileVerdict, current: bytes, clean: bool, merged: bytes) -> None:
    """The end of assess_file: git's merge of the patch onto the file gave `merged`."""
    if clean and merged == current:
        verdict.merged_empty = True
        for hv in verdict.hunks:
            if hv.merge_unasked:
                continue  # the merge's view is what the hunk's evidence doubts
            if hv.ambiguous:
                # The merge maps the hunk's own place: the pre-image forward-apply found (or the
                # place without the change) is another copy of the code, which the patch never
                # changed.
                elsewhere = any(item.endswith(ELSEWHERE) for item in hv.evidence)
                hv.ambiguous = False
                hv.elsewhere = None
                hv.landed = "certain"
                hv.evidence = [item for item in hv.evidence
                               if not item.endswith((AMBIGUOUS, ELSEWHERE))]
                hv.evidence.append(
                    "merge result empty (git merge-file): its own place has the change" +
                    ("" if elsewhere else f"; the pre-image forward-apply found ({hv.forward}) "
                     "is another copy of that code"))
            elif hv.landed != "certain":
                hv.landed = "certain"
                # The merge maps the own place: the change is there.
                hv.elsewhere = hv.old_code = None
                hv.evidence = [item for item in hv.evidence if not item.endswith(CONTAINED_AWAY)]
                hv.evidence.append("merge result empty (git merge-file)")


# The merges of assess_file that assess_patch runs at once, at most: each holds a git process
# and a pipe until its answer is read (see judge.SeriesJudge.EARLY_MERGES).
MERGES_AT_ONCE = 16


def _finish_merges(merges: list) -> None:
    """assess_file's merges started meanwhile (`merges` argument), their answers taken."""
    try:
        for verdict, current, merge in merges:
            _take_merge(verdict, current, *merge.result())
    finally:
        for _, _, merge in merges:
            merge.close()
        merges.clear()


# The evidence for a file a patch changes that neither the target nor the patch's base has.
NOT_AT_BASE = ("is not in the base either (nor made by an earlier patch): the patch does not "
               "apply where it was made (patches are -p1: a/<path>)")


def hunk_count(fp) -> int:
    """How many hunks a file patch has, as its verdict counts them: a binary patch is one."""
    return 1 if fp.binary is not None else len(fp.hunks)


def gone_file(patch: PatchFile, exists_in_target: Callable[[str], bool],
              find_rename: Callable[[str], str | None]) -> bool:
    """Whether a file `patch` changes (not one it makes or deletes) is gone from the target,
    not renamed: what makes assess_patch call the patch obsolete, whatever its hunks say
    (its `file ... is gone upstream` evidence), for a caller that need not judge its hunks."""
    return any(not fp.is_new and not fp.is_delete and not exists_in_target(fp.source_path)
               and find_rename(fp.source_path) is None for fp in patch.file_patches)


def assess_patch(name: str, patch: PatchFile, *, read_base, read_current, exists_in_target,
                 find_rename, apply=apply_file_patch,
                 places: PlaceDiffs | None = None, obsolete_hunks: bool = True) -> PatchVerdict:
    """Judge one patch against the target.

    read_base(path) -> bytes|None: the file at the patch's base; read_current(path): the file in
    the target with the earlier patches of the series applied; exists_in_target(path) -> bool;
    find_rename(path) -> new path | None (rename detection between base and target); apply:
    how a whole file patch is applied, places: where own places' diffs come from (see
    assess_file). `obsolete_hunks` False: a patch that a file gone upstream makes obsolete
    (whatever its hunks say) has none of its hunks judged, its files' verdicts without hunks
    and its evidence the files' own lines (gone, renamed), for a caller that shows no hunk.
    """
    unjudged = not obsolete_hunks and gone_file(patch, exists_in_target, find_rename)
    files: list[FileVerdict] = []
    renames: dict[str, str] = {}
    evidence: list[str] = []
    # The git merges assess_file needs, started as it finds them and finished together (at
    # most MERGES_AT_ONCE at a time): each runs while the next files are judged.
    merges: list = []
    try:
        for fp in patch.file_patches:
            path = fp.source_path
            target_path = path
            if not fp.is_new and not exists_in_target(path):
                moved = find_rename(path)
                if moved is None:
                    if fp.is_delete:
                        files.append(FileVerdict(path, None, [HunkVerdict(
                            0, "failed", "certain", ["file deleted upstream"])]))
                        continue
                    verdict = FileVerdict(path, None)
                    files.append(verdict)
                    # A file the base did not have either was never there to be deleted: at
                    # the pin ("gone upstream" told the user the fix was obsolete), or a path
                    # read with another prefix (a -p0 diff's `pkg/x.py` is `x.py` at -p1).
                    evidence.append(f"{path} {NOT_AT_BASE}" if read_base(path) is None
                                    else f"{path} is gone upstream (deleted, not renamed)")
                    continue
                renames[path] = moved
                target_path = moved
                evidence.append(f"{path} was renamed upstream to {moved}")
                fp = replace(fp, old_path=moved, new_path=moved if fp.new_path == path
                             else fp.new_path)
            if unjudged:
                verdict = FileVerdict(path, target_path)
            elif fp.binary is not None:
                verdict = assess_binary_file(fp, read_current(target_path))
            else:
                verdict = assess_file(fp, read_base(path) if not fp.is_new else None,
                                      read_current(target_path), apply=apply, merges=merges,
                                      places=places)
                if len(merges) >= MERGES_AT_ONCE:
                    _finish_merges(merges)
            verdict.path = path
            verdict.target_path = target_path
            files.append(verdict)
        _finish_merges(merges)
    finally:
        for _, _, merge in merges:  # an error, or Ctrl-C: the merges started end
            merge.close()
    # Every hunk the patch has, judged or not: a file gone upstream (or one left unjudged) has
    # no verdicts, and its hunks count all the same (`hunks.total` is the patch's own count).
    total = sum(len(f.hunks) or hunk_count(fp) for fp, f in zip(patch.file_patches, files))
    landed = [h for f in files for h in f.hunks if h.landed]
    for f in files:
        for h in f.hunks:
            for item in h.evidence:
                text = f"{f.path} hunk {h.index + 1}: {item}"
                evidence.append(text)
    if any(f.target_path is None and not f.hunks for f in files):
        state, confidence = "obsolete", None
    elif total and len(landed) == total:
        state = "upstreamed"
        confidence = "high" if all(h.landed == "certain" for h in landed) else "medium"
    elif any(h.ambiguous for f in files for h in f.hunks):
        # Some hunk is both there and still applicable (duplicated code): neither "applies" nor
        # "upstreamed" can be said for sure, whatever the other hunks say.
        state, confidence = "unsure", None
    elif landed:
        state, confidence = "partial", None
    else:
        state, confidence = _STATE[_forward_state(files)], None
    return PatchVerdict(name=name, state=state, confidence=confidence, hunks_total=total,
                        hunks_landed=len(landed), evidence=evidence, files=files, renames=renames)


_STATE = {"exact": "applies", "offset": "offset", "fuzz": "fuzz", "failed": "conflict"}


def _forward_state(files: list[FileVerdict]) -> str:
    order = ("exact", "offset", "fuzz", "failed")
    worst = "exact"
    for f in files:
        status = f.applied.worst if f.applied is not None else "failed"
        worst = max(worst, status, key=order.index)
    return worst
