"""Applying a `FilePatch` to bytes the way GNU patch does: exact, offset, fuzz; reverse application.

Owns: locating each hunk (exact position, then the nearest offset, then reduced context), building
the post-image byte for byte (CRLF, no final newline, non-UTF-8 and empty files survive), and
reporting how every hunk applied. A failed hunk is skipped, never half-applied; callers read `ok`.
"""
from __future__ import annotations

import bisect
import hashlib
import itertools
import re
from functools import lru_cache
from types import MethodType
from typing import Any, NamedTuple, Sequence

from patchforge.apply.diffparse import (FilePatch, Hunk, line_kind, reverse_file_patch,
                                        split_lines)
from patchforge.errors import ApplyError
from patchforge.model.record import field, record, replace
from patchforge.patterns import on_first_use

_RANK = {"exact": 0, "offset": 1, "fuzz": 2, "failed": 3}


@record(frozen=True)
class HunkOutcome:
    """How hunk `index` (0-based) applied. `offset` is in lines, relative to the line number in the
    hunk header; `at_line` is the 1-based line of the input where the hunk's pre-image (with the
    context that was kept) starts, None when it failed."""

    index: int
    status: str
    offset: int
    fuzz: int
    at_line: int | None


@record(frozen=True)
class FileApplication:
    """The result for one file. `content` is the post-image, None when the file is deleted (or
    when nothing could be applied at all, see `error`). `edits` says how the content was made
    from the old one when its hunks were placed on the bytes (`placed_on_bytes`): per placed
    hunk (start, end, post), the old bytes [start:end] replaced by `post`, the bytes between
    copied as they are (a range-diff's pack stores the content as that delta of the old
    one); None when it was made otherwise."""

    old_path: str | None
    new_path: str | None
    content: bytes | None
    hunks: tuple[HunkOutcome, ...]
    error: str | None = None
    edits: tuple[tuple[int, int, bytes], ...] | None = field(default=None, repr=False,
                                                             compare=False)

    @property
    def ok(self) -> bool:
        return self.error is None and all(h.status != "failed" for h in self.hunks)

    @property
    def worst(self) -> str:
        if self.error is not None:
            return "failed"
        return max((h.status for h in self.hunks), key=_RANK.__getitem__, default="exact")


def _matches(lines: list[bytes], pos: int, want: list[bytes]) -> bool:
    return lines[pos:pos + len(want)] == want


class Lines(list):
    """A file's lines (`split_lines`), which also say where a line is: the hunk search looks a
    line of the hunk up instead of comparing the hunk at every position.

    Most contents are searched a few times (a rebase applies a patch to a file once, and landed
    detection searches it forward and in reverse): for those, the places of one line of the
    hunk are found by the C-level list.index over the file and kept per line
    (`positions`). A content searched for many distinct lines (status over a long history,
    where most searches fail) gets the index of every line instead (`where`: two C-level dict
    builds over the whole file, about eight scans' worth), which then answers any line at once.
    Both belong to the content: callers must not modify the list."""

    __slots__ = ("_first", "_last", "_positions")
    _first: dict[bytes, int]
    _last: dict[bytes, int]
    _positions: dict[bytes, list[int]]

    # Distinct lines scanned for before the whole index is made (each scan costs about an
    # eighth of the index).
    SCANS_BEFORE_INDEX = 8

    def where(self) -> tuple[dict[bytes, int], dict[bytes, int]]:
        """(line -> its first index, line -> its last index)."""
        try:
            return self._first, self._last
        except AttributeError:
            count = len(self)
            self._first = dict(zip(reversed(self), range(count - 1, -1, -1)))
            self._last = dict(zip(self, range(count)))
            return self._first, self._last

    def indexed(self) -> bool:
        """Whether the whole index (`where`) is made, or should be by now."""
        if hasattr(self, "_first"):
            return True
        try:
            scanned = len(self._positions)
        except AttributeError:
            return False
        return scanned >= self.SCANS_BEFORE_INDEX

    def positions(self, line: bytes) -> list[int]:
        """Every index of `line`, ascending (one scan of the file, kept)."""
        try:
            known = self._positions
        except AttributeError:
            known = self._positions = {}
        found = known.get(line)
        if found is None:
            found = known[line] = []
            index = self.index
            pos = 0
            try:
                while True:
                    pos = index(line, pos)
                    found.append(pos)
                    pos += 1
            except ValueError:
                pass
        return found


def _locate(lines: Lines, want: list[bytes], expected: int, lo: int) -> int | None:
    """The position nearest to `expected` (ties: later first, as GNU patch tries +n before -n)
    in [lo, len(lines) - len(want)] where `want` matches."""
    hi = len(lines) - len(want)
    if hi < lo:
        return None
    expected = min(max(expected, lo), hi)
    if not want or _matches(lines, expected, want):
        return expected
    # Only positions where one chosen line of `want` is in its place can match at all, and
    # any line gives the same set of matching positions, so the same answer; the choice only
    # decides how many places are compared.
    if lines.indexed():
        candidates = _candidates_indexed(lines, want, lo, hi)
    else:
        candidates = _candidates_scanned(lines, want, lo, hi)
    # Nearest to `expected` first; at equal distance the later one (GNU patch tries +n first).
    for pos in sorted(candidates, key=lambda p: (abs(p - expected), -p)):
        if _matches(lines, pos, want):
            return pos
    return None


def _candidates_indexed(lines: Lines, want: list[bytes], lo: int, hi: int) -> list[int]:
    """Where `want` may start, by the whole index: the line of `want` whose occurrences in the
    file span the fewest lines (a line the file has once: one place to compare; a line it
    lacks: none), found between its first and last index with the C-level list.index."""
    first, last = lines.where()
    anchor, start, end = -1, 0, -1
    for k, line in enumerate(want):
        at = first.get(line)
        if at is None:
            return []
        until = last[line]
        if anchor < 0 or until - at < end - start:
            anchor, start, end = k, at, until
    line = want[anchor]
    start = max(start, lo + anchor)
    end = min(end, hi + anchor)
    candidates = []
    pos = start
    while pos <= end:
        try:
            pos = lines.index(line, pos, end + 1)
        except ValueError:
            break
        candidates.append(pos - anchor)
        pos += 1
    return candidates


def _candidates_scanned(lines: Lines, want: list[bytes], lo: int, hi: int) -> list[int]:
    """Where `want` may start, by the places of one of its lines (Lines.positions): a line
    already looked up that the file lacks rules the search out, one looked up with few places
    is taken next, else the longest line of `want` (the most telling: a blank line or a lone
    brace is everywhere), scanned for now."""
    known = lines._positions if hasattr(lines, "_positions") else {}
    anchor, fewest = -1, -1
    for k, line in enumerate(want):
        found = known.get(line)
        if found is not None and (anchor < 0 or len(found) < fewest):
            anchor, fewest = k, len(found)
            if not found:
                return []
    if anchor < 0 or fewest > 8:
        longest = max(range(len(want)), key=lambda k: len(want[k]))
        if anchor < 0 or len(lines.positions(want[longest])) < fewest:
            anchor = longest
    return [pos - anchor for pos in lines.positions(want[anchor])
            if lo + anchor <= pos <= hi + anchor]


class ReversedHunk:
    """The hunk that undoes `hunk` (diffparse.reverse_hunk) as apply_hunks sees it, made of
    `hunk`'s own views: the same context, the two sides swapped. Landed detection searches
    every hunk in reverse; making each reverse hunk's lines again was a third of that."""

    __slots__ = ("old_start", "old_count", "leading_context", "trailing_context", "_hunk")

    def __init__(self, hunk: Hunk) -> None:
        self.old_start, self.old_count = hunk.new_start, hunk.new_count
        # Swapping `+` and `-` leaves the context lines where they are.
        self.leading_context = hunk.leading_context
        self.trailing_context = hunk.trailing_context
        self._hunk = hunk

    def old_lines(self) -> list[bytes]:
        return self._hunk.new_lines()

    def new_lines(self) -> list[bytes]:
        return self._hunk.old_lines()


_Cut = tuple[int, list[bytes], list[bytes], str | None]


def _fuzzed(h: Hunk | ReversedHunk, fuzz: int) -> _Cut | None:
    """The hunk at fuzz level `fuzz`, the way GNU patch reduces it: (lines dropped at the top,
    pre-image, post-image, anchor). None when this level adds nothing or leaves nothing to match.

    Context shorter on one side than the other means the diff met the start or the end of the
    file there; GNU patch then only matches at that end ("start", "end", or "whole" for both),
    until the fuzz level makes up the difference. Doing the same keeps a hunk written for the top
    of a file from landing on a look-alike further down. Short leading context counts only in a
    hunk whose header starts at line 1 (GNU patch's locate_hunk asks `pch_first () <= 1`);
    elsewhere it is searched for as any other.

    The lines dropped at the top (`top`) still have their place: the hunk as a whole starts
    `top` lines above where its cut pre-image is found, and GNU patch places a hunk as a whole
    below the lines already patched, never above the file's first line nor over the previous
    hunk's last changed line (its locate_hunk's `min_where` and "do not try lines <= 0"). The
    searches (`apply_hunks`, `placed_on_bytes`) therefore look for the cut pre-image from
    line `frozen + top` on (`_frozen_from`).

    Kept per hunk and level in the hunk's __dict__ (a reversed hunk's in its hunk's, under
    another key), as Hunk.old_lines is: a series' walks apply each hunk many times, at each
    level. Callers must not modify the lists.
    """
    owner, key = (h._hunk, "_reverse_cuts") if isinstance(h, ReversedHunk) else (h, "_cuts")
    cuts: dict[int, _Cut | None] = owner.__dict__.setdefault(key, {})
    if fuzz not in cuts:
        cuts[fuzz] = _cut(h, fuzz)
    return cuts[fuzz]


def _cut(h: Hunk | ReversedHunk, fuzz: int) -> _Cut | None:
    lead, trail = h.leading_context, h.trailing_context
    context = max(lead, trail)
    if fuzz > context:
        return None
    prefix_fuzz = fuzz + lead - context
    suffix_fuzz = fuzz + trail - context
    top, bottom = max(prefix_fuzz, 0), max(suffix_fuzz, 0)
    anchor = {(True, True): "whole", (True, False): "start", (False, True): "end"}.get(
        (prefix_fuzz < 0 and h.old_start <= 1, suffix_fuzz < 0))
    old, new = h.old_lines(), h.new_lines()
    pre = old[top:len(old) - bottom]
    post = new[top:len(new) - bottom]
    if fuzz and not pre:
        return None  # a pure insertion without context would "match" anywhere
    return top, pre, post, anchor


def _frozen_from(last: Hunk | ReversedHunk | None, start: int) -> int:
    """GNU patch's last_frozen_line once hunk `last` is placed as a whole at line `start` (0
    before any hunk): the input written out up to its last changed line (its trailing context
    is not yet written). A later hunk, the lines fuzz cut from its top included, starts below
    them."""
    return 0 if last is None else start + last.old_count - last.trailing_context


def apply_hunks(lines: list[bytes], hunks: tuple[Hunk | ReversedHunk, ...], *,
                max_fuzz: int = 2, build: bool = True,
                mark_failed: tuple[str, str] | None = None,
                marked_base: list[bytes] | None = None
                ) -> tuple[list[bytes], tuple[HunkOutcome, ...]]:
    """Apply hunks in order to a list of lines (split with `split_lines`); failed hunks are
    skipped. Returns the new lines and one outcome per hunk; with build=False only the outcomes
    (the lines come back empty): landed detection asks where hunks go, many times per file.

    `mark_failed` (labels of the two sides): a failed hunk is not skipped but written where
    most of its pre-image's lines are (`_best_place`; else where its header puts it), after the
    hunks placed before it, as a conflict block, the lines there against the hunk's
    post-image, as git marks a conflict with `merge.conflictStyle=diff3` (`mark_hunks`): the
    hunk's pre-image, what it was made on, between them (`||||||| `). `marked_base` (with
    `mark_failed`) gets that file: the lines as they are, each marked block's as the hunk's
    pre-image."""
    if not isinstance(lines, Lines):
        lines = Lines(lines)
    out: list[bytes] = []
    outcomes: list[HunkOutcome] = []
    done = 0  # lines of the input already copied or replaced: later hunks cannot go back
    # The last hunk placed and the line its whole (cut lines included) starts at: GNU patch's
    # last_frozen_line, the input written out up to that hunk's last changed line, is worked
    # out from them only for a hunk whose top fuzz cut (`_frozen_from`).
    last: Hunk | ReversedHunk | None = None
    last_start = 0
    last_offset = 0  # GNU patch starts each search where the previous hunk was found
    for index, h in enumerate(hunks):
        base = h.old_start - 1 if h.old_count else h.old_start
        found = None
        for fuzz in range(0, max_fuzz + 1):
            cut = _fuzzed(h, fuzz)
            if cut is None:
                continue
            top, pre, post, anchor = cut
            # The lines fuzz dropped at the top are still the hunk's: GNU patch does not
            # place them above the file's first line nor over the lines already patched.
            lo = done
            if top:
                lo = max(done, _frozen_from(last, last_start) + top)
            pos = _place(lines, pre, base + top + last_offset, lo, anchor)
            if pos is not None:
                found = (pos, fuzz, top, pre, post)
                break
        if found is None:
            outcomes.append(HunkOutcome(index, "failed", 0, 0, None))
            if build and mark_failed is not None:
                at = _best_place(lines, h.old_lines(), base + last_offset, done)
                there = lines[at:_block_end(lines, h.old_lines(), at)]
                out.extend(lines[done:at])
                theirs = f"{mark_failed[1]} hunk #{index + 1}"
                out.extend(conflict_block(there, h.new_lines(), mark_failed[0], theirs,
                                          h.old_lines(), f"what {theirs} was made on"))
                if marked_base is not None:
                    marked_base.extend(lines[done:at])
                    marked_base.extend(h.old_lines())
                done = at + len(there)
            continue
        pos, fuzz, top, pre, post = found
        offset = pos - top - base
        last_offset = offset
        last, last_start = h, pos - top
        if build:
            out.extend(lines[done:pos])
            out.extend(post)
            if marked_base is not None:
                marked_base.extend(lines[done:pos + len(pre)])
        done = pos + len(pre)
        status = "fuzz" if fuzz else ("offset" if offset else "exact")
        outcomes.append(HunkOutcome(index, status, offset, fuzz, pos + 1))
    if build:
        out.extend(lines[done:])
        if marked_base is not None:
            marked_base.extend(lines[done:])
    return out, tuple(outcomes)


def _best_place(lines: Lines, want: list[bytes], expected: int, lo: int) -> int:
    """Where a hunk that does not apply is marked: the place in [lo, ...] where most of its
    pre-image's lines are in their place (nearest to `expected` among equals), or `expected`
    when none is. The header's line number alone is wrong by every line an earlier patch of
    the series added or took out above (a hunk applied before it in the same patch gives its
    offset, not those of the earlier patches): the block held other lines, and resolving it
    there deleted them and put the hunk's context in twice."""
    hi = max(len(lines) - len(want), lo)
    expected = min(max(expected, lo), min(hi, len(lines)))
    best, best_score = expected, 0
    for pos in range(lo, hi + 1):
        score = sum(1 for k, line in enumerate(want[:len(lines) - pos]) if lines[pos + k] == line)
        if score > best_score or (score == best_score and score and
                                  abs(pos - expected) < abs(best - expected)):
            best, best_score = pos, score
    return min(best, len(lines))


def _block_end(lines: Lines, want: list[bytes], at: int) -> int:
    """Where the block of a hunk that does not apply, marked from `at`, ends: where the
    pre-image's last lines end nearest to `at + len(want)`. Lines an earlier patch took out
    or put in inside the hunk's region make the region shorter or longer than the pre-image:
    a block as long as the pre-image then took in a line after the region (or left one of it
    out), and resolving the block on the patch's side deleted that line (or kept it twice)."""
    expected = min(at + len(want), len(lines))
    best, best_score = expected, 0
    for end in range(max(at, expected - len(want)), min(len(lines), expected + len(want)) + 1):
        score = 0
        while score < min(len(want), end - at) and lines[end - 1 - score] == want[-1 - score]:
            score += 1
        if score > best_score or (score == best_score and score and
                                  abs(end - expected) < abs(best - expected)):
            best, best_score = end, score
    return best


def conflict_block(ours: list[bytes], theirs: list[bytes], ours_label: str,
                   theirs_label: str, base: list[bytes] | None = None,
                   base_label: str = "base") -> list[bytes]:
    """The lines of a conflict as git merge-file writes one: `ours`, then `theirs`, between
    marker lines (a side's last line without its line end gets one); with `base`, that
    between them after a `||||||| base_label` line, as `git merge-file --diff3` writes it."""
    def ended(lines: list[bytes]) -> list[bytes]:
        if lines and not lines[-1].endswith(b"\n"):
            return [*lines[:-1], lines[-1] + b"\n"]
        return list(lines)

    middle = [] if base is None else [f"||||||| {base_label}\n".encode(), *ended(base)]
    return [f"<<<<<<< {ours_label}\n".encode(), *ended(ours), *middle, b"=======\n",
            *ended(theirs), f">>>>>>> {theirs_label}\n".encode()]


class Marked(NamedTuple):
    """A file patch applied as far as it goes (`mark_hunks`): `content`, with the blocks of
    the hunks that did not apply; `base`, the file each block's `|||||||` section shows, the
    lines the patch was made on in place of each block (None when the whole file is one
    block: there is no place of its own to show)."""
    content: bytes
    base: bytes | None


def mark_hunks(old: bytes | None, fp: FilePatch, ours: str, theirs: str, *,
               max_fuzz: int = 2) -> Marked | None:
    """A text file patch that does not apply to `old`, applied as far as it goes: every hunk
    that applies is applied, every one that does not is written where it should go as a
    conflict block (`apply_hunks`' `mark_failed`), so that the file holds the whole change,
    part of it to be resolved by hand. One that cannot be placed by hunks (a file to create
    that is there, one to change or delete that is not there or not as the patch deletes it,
    a whole-file hunk on another file) is one block: the whole file against the lines its
    hunks leave, with the lines the hunks were made on as its base.
    None for a binary patch, which has nothing to mark."""
    if fp.binary is not None or fp.is_binary:
        return None
    application = apply_file_patch(old, fp, max_fuzz=max_fuzz)
    new_lines = [line for h in fp.hunks for line in h.new_lines()]
    if application.error is not None or fp.is_new or fp.is_delete or old is None:
        made_on = [line for h in fp.hunks for line in h.old_lines()]
        return Marked(b"".join(conflict_block(split_lines(old or b""), new_lines, ours, theirs,
                                              made_on, f"what {theirs} was made on")), None)
    base: list[bytes] = []
    marked, _ = apply_hunks(lines_of(old), fp.hunks, max_fuzz=max_fuzz,
                            mark_failed=(ours, theirs), marked_base=base)
    return Marked(b"".join(marked), b"".join(base))


def _place(lines: Lines, pre: list[bytes], expected: int, lo: int,
           anchor: str | None) -> int | None:
    if not pre:
        # Zero-context insertion: only the line number says where.
        return expected if lo <= expected <= len(lines) else None
    if anchor is None:
        return _locate(lines, pre, expected, lo)
    if anchor == "whole":
        return 0 if lo == 0 and lines == pre else None
    pos = 0 if anchor == "start" else len(lines) - len(pre)
    return pos if pos >= lo and _matches(lines, pos, pre) else None


def apply_hunks_to_bytes(old: bytes, hunks: tuple[Hunk, ...], *, max_fuzz: int = 2,
                         edits: list | None = None) -> tuple[bytes, tuple[HunkOutcome, ...]]:
    """`apply_hunks` on file content: on the bytes themselves when they decide
    (`place_in_place`, which adds its placements to `edits`), else on its lines."""
    placed = place_in_place(old, hunks, max_fuzz=max_fuzz, edits=edits)
    if placed is not None:
        content, outcomes = placed
        assert content is not None, "built"
        if all(outcome.status == "failed" for outcome in outcomes):
            return old, outcomes
        return content, outcomes
    new_lines, outcomes = apply_hunks(lines_of(old), hunks, max_fuzz=max_fuzz)
    if all(outcome.status == "failed" for outcome in outcomes):
        return old, outcomes  # nothing placed: the lines joined again are `old` itself
    return b"".join(new_lines), outcomes


# Places of a hunk's pre-image in the file that are not at the start of a line, looked at
# before the search is left to the line search (a very short pre-image can be everywhere).
_IN_PLACE_MISSES = 64


def _cut_sides(h: Hunk | ReversedHunk, fuzz: int, cut: _Cut) -> tuple[bytes, bytes]:
    """The pre-image and post-image of `cut` (the hunk at fuzz level `fuzz`) as bytes, kept
    per level in the hunk's __dict__ as its cuts are (a reversed hunk's in its hunk's)."""
    owner, key = (h._hunk, "_reverse_cut_sides") if isinstance(h, ReversedHunk) \
        else (h, "_cut_sides")
    sides: dict[int, tuple[bytes, bytes]] = owner.__dict__.setdefault(key, {})
    found = sides.get(fuzz)
    if found is None:
        found = sides[fuzz] = (b"".join(cut[1]), b"".join(cut[2]))
    return found


# How many searches of one content are made on its bytes before it is split into lines
# (`place_in_place`), and how many contents are counted. A search of the bytes scans the file
# (about as long as splitting it); a search of its lines looks the hunk's lines up in the
# file's index (`Lines`), made once: a rebase searches most contents once or twice, status
# on a long history some dozens of times (timed over every search of both: 4 is the best
# of 1 to 8 for both).
_BYTE_SEARCHES = 4
_COUNTED = 64
# id(content) -> (content, searches made on its bytes); the content is kept so that its id
# is not another's meanwhile (hashing a content to key it would cost as much as a search).
_byte_searches: dict[int, tuple[bytes, int]] = {}


def place_in_place(old: bytes | None, hunks: tuple[Hunk | ReversedHunk, ...], *,
                   max_fuzz: int = 2, build: bool = True, edits: list | None = None
                   ) -> tuple[bytes | None, tuple[HunkOutcome, ...]] | None:
    """apply_hunks on `old` without splitting it into lines (`placed_on_bytes`), for the
    first few searches of a content; None when the line search is to decide."""
    if not old or not hunks:
        return None
    known = _byte_searches.get(id(old))
    count = known[1] if known is not None and known[0] is old else 0
    if count >= _BYTE_SEARCHES:
        return None
    if not count and len(_byte_searches) >= _COUNTED:
        del _byte_searches[next(iter(_byte_searches))]  # the oldest
    _byte_searches[id(old)] = (old, count + 1)
    return placed_on_bytes(old, hunks, max_fuzz=max_fuzz, build=build, edits=edits)


def placed_on_bytes(old: bytes, hunks: tuple[Hunk | ReversedHunk, ...], *,
                    max_fuzz: int = 2, build: bool = True, edits: list | None = None
                    ) -> tuple[bytes | None, tuple[HunkOutcome, ...]] | None:
    """apply_hunks on `old` without splitting it into lines: each hunk's pre-image, at each
    fuzz level up to `max_fuzz`, found in the file's bytes (`_found_whole`) where the line
    search finds it in its lines, so the outcomes and the content are the line search's.
    None, and the line search decides, for a hunk without a pre-image (placed by its line
    number alone) or one whose pre-image is in too many places inside lines. Returns (the
    new content, None with build=False; the outcomes). A rebase's applications and landed
    detection's searches were mostly this: splitting a file into a list of lines, and
    joining them again, was most of their cost (and the lists most of the memory a walk
    touches). Lines end at b"\\n" alone, as split_lines says. With build, the placements
    ((start, end, post) per placed hunk: FileApplication.edits) are added to `edits` when
    given and the content is made."""
    if not old or not hunks:
        return None
    pieces: list[bytes] = []
    placed: list[tuple[int, int, bytes]] = []
    outcomes: list[HunkOutcome] = []
    done = done_at = 0  # the line, and its first byte, where the next hunk may start
    last: Hunk | ReversedHunk | None = None  # as apply_hunks'
    last_start = 0
    last_offset = 0
    for index, h in enumerate(hunks):
        base = h.old_start - 1 if h.old_count else h.old_start
        found = None
        for fuzz in range(max_fuzz + 1):
            cut = _fuzzed(h, fuzz)
            if cut is None:
                continue
            top, pre_lines, _, anchor = cut
            pre, post = _cut_sides(h, fuzz, cut)
            if not pre:
                return None  # placed by its line number alone
            place = _found_whole(old, pre, base + top + last_offset, done, done_at, anchor,
                                 _frozen_from(last, last_start) + top if top else 0)
            if place is _UNDECIDED:
                return None
            if place is not None:
                found = (place, fuzz, top, len(pre_lines), pre, post)
                break
            if not fuzz and not _deepest_cut_there(h, max_fuzz, old, done_at):
                break  # no fuzz level can find it
        if found is None:
            outcomes.append(HunkOutcome(index, "failed", 0, 0, None))
            continue
        (line, pos), fuzz, top, count, pre, post = found
        offset = last_offset = line - top - base
        last, last_start = h, line - top
        if build:
            pieces += (old[done_at:pos], post)
            placed.append((pos, pos + len(pre), post))
        done, done_at = line + count, pos + len(pre)
        outcomes.append(HunkOutcome(index, "fuzz" if fuzz else "offset" if offset else "exact",
                                    offset, fuzz, line + 1))
    if not build:
        return None, tuple(outcomes)
    pieces.append(old[done_at:])
    if edits is not None:
        edits += placed
    return b"".join(pieces), tuple(outcomes)


_UNDECIDED: Any = object()


def _deepest_cut_there(h: Hunk | ReversedHunk, max_fuzz: int, old: bytes, done_at: int) -> bool:
    """Whether the pre-image of `h` at its deepest fuzz level (up to `max_fuzz`, from 2 on) is
    in `old` from byte `done_at` on; True where there is no such level. A hunk not found
    without fuzz is mostly not found at all (landed detection's searches of a file upstream
    rewrote): each level's search is a scan of the file, and this one scan answers for all
    of them. It never changes an answer: each level keeps fewer lines at the top and bottom
    of the same pre-image (`_cut`), so every place a level finds, from `done_at` on, holds the
    deepest level's pre-image, from `done_at` on too."""
    for fuzz in range(max_fuzz, 1, -1):
        cut = _fuzzed(h, fuzz)
        if cut is not None:
            return old.find(_cut_sides(h, fuzz, cut)[0], done_at) >= 0
    return True


def _found_whole(old: bytes, pre: bytes, expected: int, done: int, done_at: int,
                 anchor: str | None, least: int = 0) -> tuple[int, int] | None:
    """Where `_place` places a pre-image in the file's lines, found in its bytes: (line,
    byte) of its place from line `done` (byte `done_at`) and line `least` (the lines fuzz cut
    from the hunk's top must fit above it, `_fuzzed`) on, None when there is none,
    _UNDECIDED when it is in too many places inside lines to look at. Unanchored: the place
    nearest to `expected`, the later at equal distance (_locate also clamps `expected` to the
    last line the hunk can start at, which changes no choice: a place past it cannot be found,
    and of places before it the nearest is the last either way); anchored: only at the start,
    the end, or the whole of the file."""
    if anchor == "whole":
        return (0, 0) if done == 0 and old == pre else None
    ends_line = pre.endswith(b"\n")  # else its last line must end the file
    if anchor == "start":
        return (0, 0) if done == 0 and old.startswith(pre) and \
            (ends_line or len(pre) == len(old)) else None
    if anchor == "end":
        start = len(old) - len(pre)
        if start < done_at or not old.endswith(pre) or (start and old[start - 1] != 10):
            return None
        line = done + old.count(b"\n", done_at, start)
        return (line, start) if line >= least else None
    before = after = None  # the nearest places before and from `expected`
    line, counted, search, misses = done, done_at, done_at, 0
    while True:
        pos = old.find(pre, search)
        if pos < 0:
            break
        search = pos + 1
        if (pos and old[pos - 1] != 10) or (not ends_line and pos + len(pre) != len(old)):
            misses += 1  # not where a whole line starts (or ends the file)
            if misses > _IN_PLACE_MISSES:
                return _UNDECIDED
            continue
        line += old.count(b"\n", counted, pos)
        counted = pos
        if line < least:
            continue  # the hunk's cut top would be above the file or over the patched lines
        if line >= expected:
            after = (line, pos)
            break
        before = (line, pos)
    if before is None or (after is not None and after[0] - expected <= expected - before[0]):
        return after
    return before


@lru_cache(maxsize=32)
def lines_of(content: bytes) -> Lines:
    """split_lines(content), remembered for the few files a series keeps coming back to (each
    patch on a file, forward and reverse, splits it again otherwise). Callers must not modify
    the list."""
    return Lines(split_lines(content))


def _all_failed(fp: FilePatch, error: str) -> FileApplication:
    return FileApplication(fp.old_path, fp.new_path, None,
                           tuple(HunkOutcome(k, "failed", 0, 0, None)
                                 for k in range(len(fp.hunks))), error)


def _apply_binary(old: bytes | None, fp: FilePatch, reverse: bool) -> FileApplication:
    """A `GIT binary patch`: exact, judged by blob id, or failed (never offset, never fuzz)."""
    from patchforge.apply.gitbinary import NULL_OID, BinaryPatch, apply_binary

    binary = fp.binary
    assert binary is not None
    old_path, new_path = (fp.new_path, fp.old_path) if reverse else (fp.old_path, fp.new_path)
    if reverse:
        if binary.reverse is None and binary.old_oid != NULL_OID:
            return FileApplication(old_path, new_path, None,
                                   (HunkOutcome(0, "failed", 0, 0, None),),
                                   f"{fp.path}: the binary patch has no reverse block")
        binary = BinaryPatch(binary.new_oid, binary.old_oid,
                             binary.reverse or binary.forward, binary.forward, binary.index_line)
    content, why = apply_binary(old, binary)
    if why is not None:
        return FileApplication(old_path, new_path, None, (HunkOutcome(0, "failed", 0, 0, None),),
                               f"{fp.path}: {why}")
    return FileApplication(old_path, new_path, content, (HunkOutcome(0, "exact", 0, 0, 1),))


def apply_file_patch(old: bytes | None, fp: FilePatch, *, max_fuzz: int = 2,
                     reverse: bool = False) -> FileApplication:
    """Apply `fp` to the old content (None: the file does not exist). With reverse=True the
    inverse is applied, which is how "already applied" is detected."""
    if fp.binary is not None:
        return _apply_binary(old, fp, reverse)
    if fp.is_binary:  # the parser never makes one without data; kept for hand-made FilePatches
        raise ApplyError(f"{fp.path}: a binary change without its data cannot be applied")
    if fp.is_new and old is not None and not reverse:
        # Refused before _whole_file, which would go through every line of the hunk for its
        # (empty) old side: landed detection asks this of every file a patch creates that the
        # target has (114 files on the 2,515-commit AITER row, 8 ms).
        return _all_failed(fp, f"{fp.path} already exists")
    # (Read from the patch as written: a reversed patch is rendered without an `index` line.)
    whole = _whole_file(fp, reverse) if old is not None else None
    if reverse:
        fp = reverse_file_patch(fp)
    if fp.is_new:
        if old is not None:
            return _all_failed(fp, f"{fp.path} already exists")
        content = b"".join(line for h in fp.hunks for line in h.new_lines())
        return FileApplication(None, fp.new_path, content,
                               tuple(HunkOutcome(k, "exact", 0, 0, 1)
                                     for k in range(len(fp.hunks))))
    if old is None:
        return _all_failed(fp, f"{fp.old_path} does not exist")
    if fp.is_delete:
        # Deletion only when the file is exactly what the patch removes: deleting a file that
        # holds anything else would lose data.
        removed = b"".join(line for h in fp.hunks for line in h.old_lines())
        if removed != old:
            return _all_failed(fp, f"{fp.old_path} is not what the patch deletes")
        return FileApplication(fp.old_path, None, None,
                               tuple(HunkOutcome(k, "exact", 0, 0, 1)
                                     for k in range(len(fp.hunks))))
    # A hunk without context at the top of the file (`@@ -0,0 +1,N @@` filling an empty file,
    # `@@ -1,N +0,0 @@` emptying one, `@@ -1 +1 @@` replacing a one-line file) is matched by
    # git apply at both ends of the file. Placed by its lines alone, it "applied" to a file
    # upstream had filled or grown since (`x\na\ny\n` became `x\nb\ny\n`), where git apply
    # refuses it and git's merge conflicts.
    if whole is not None and old != whole:
        return _all_failed(fp, f"{fp.old_path} is not the whole file the patch replaces (a hunk "
                               "without context at the top of a file is matched at both ends, "
                               "as git apply matches it)")
    edits: list[tuple[int, int, bytes]] = []
    content, outcomes = apply_hunks_to_bytes(old, fp.hunks, max_fuzz=max_fuzz, edits=edits)
    return FileApplication(fp.old_path, fp.new_path, content, outcomes, None,
                           tuple(edits) if edits else None)  # by position: the quick way


# A git diff's `index` line: the pre-image's and the post-image's blob ids.
_INDEX_LINE = on_first_use(rb"\nindex ([0-9a-f]{4,64})\.\.([0-9a-f]{4,64})")


def applies_unfuzzed(content: bytes, fp: FilePatch, *, reverse: bool) -> bool:
    """Whether every hunk of `fp` (undone, with `reverse`) applies to `content` without fuzz
    (at an offset or not), only placed, nothing built: the reverse hunks are views of the
    patch's own (no reversed patch rendered and parsed again per file). How a kept fix's
    change is told present or gone (reverts) and a landing's form is checked (landings)."""
    if fp.has_zero_context:
        # (A hunk without context at the top of a file is matched at both ends, as git apply
        # matches it: apply_file_patch's own rule.)
        return apply_file_patch(content, fp, max_fuzz=0, reverse=reverse).ok
    hunks = tuple(ReversedHunk(h) for h in fp.hunks) if reverse else fp.hunks
    placed = placed_on_bytes(content, hunks, max_fuzz=0, build=False)
    outcomes = placed[1] if placed is not None else \
        apply_hunks(lines_of(content), hunks, max_fuzz=0, build=False)[1]
    return all(outcome.status != "failed" for outcome in outcomes)


def _blob_id(content: bytes, length: int) -> bytes:
    """The git blob id of `content`, SHA-1 or (for a 64-digit id) SHA-256."""
    digest = hashlib.sha256 if length > 40 else hashlib.sha1
    return digest(b"blob %d\0" % len(content) + content).hexdigest().encode()


def _whole_file(fp: FilePatch, reverse: bool) -> bytes | None:
    """The whole file a patch of one hunk without context at the top of the file must meet
    (in the direction it is applied), or None when the hunk is placed by its lines and number.

    Such a hunk (`@@ -1 +1 @@`, `@@ -0,0 +1,N @@`, `@@ -1,N +0,0 @@`) reads the same whether it
    replaces the whole file or changes the top of a longer one: git apply (without
    --unidiff-zero) takes the first reading and matches it at both ends of the file,
    `git apply --unidiff-zero` and GNU patch the second and place it by its line number. The
    `index` line decides when there is one: the hunk's side is the whole file when its blob id
    is the one recorded there. Without one, the reading git apply gives is taken: at worst a
    patch is refused that GNU patch would place by its line number, never the other way.
    """
    if len(fp.hunks) != 1:
        return None  # a diff -U0 of several hunks changes a longer file (and is refused)
    (hunk,) = fp.hunks
    start = hunk.new_start if reverse else hunk.old_start
    if start > 1 or hunk.leading_context or hunk.trailing_context or any(
            line_kind(line) == b" " for line in hunk.lines):
        return None
    side = b"".join(hunk.new_lines() if reverse else hunk.old_lines())
    found = _INDEX_LINE.search(fp.raw)
    if found is None:
        return side
    recorded = found.group(2 if reverse else 1)
    return side if _blob_id(side, len(recorded)).startswith(recorded) else None


class PatchApplications:
    """apply_file_patch, each (file patch, content) applied once for one walk of a series.

    A judge walks the old series more than once: the squash check replays it on the base
    before the first patch is judged, the judge's own old series (the 3-way merges' base)
    advances patch by patch, and each merge applies the patch to that base again; on a series
    that applies without fuzz the three are the same applications of the same patches to the
    same contents. The results are kept per file patch object and content object for as long
    as the walk (the object that owns this) lives. An application that placed every hunk
    without fuzz is the answer for any fuzz limit (the search tries no fuzz first, and then
    never gets further), so the squash check's (no fuzz allowed) serves the judge's (up to 2).

    A content is known by its identity, not its value: the walk's contents are whole files,
    and the ones it meets more than once are the same objects (the store gives one object per
    blob id; an application's result is what the next patch meets on both series). Keyed by
    value, each content was hashed in full once (a 300-patch rebase: about 20 MB, 1.5% of its
    instructions); an equal content that is another object is applied again, to the same
    answer."""

    def __init__(self) -> None:
        # (id of the file patch, id of the content) -> (the file patch, the content, max_fuzz,
        # the result); both are kept so that neither id is reused by another object meanwhile.
        self._done: dict[tuple[int, int],
                         tuple[FilePatch, bytes | None, int, FileApplication]] = {}
        # id(content) -> (the application that made it, the content it was made from), for
        # contents made by placing hunks on the bytes (`made_from`)
        self._made: dict[int, tuple[FileApplication, bytes]] = {}

    def __call__(self, old: bytes | None, fp: FilePatch, *, max_fuzz: int = 2) -> FileApplication:
        key = (id(fp), id(old))
        found = self._done.get(key)
        if found is not None and found[0] is fp and found[1] is old and (
                found[2] == max_fuzz or (found[3].error is None and all(
                    h.status in ("exact", "offset") for h in found[3].hunks))):
            return found[3]
        result = apply_file_patch(old, fp, max_fuzz=max_fuzz)
        self._done[key] = (fp, old, max_fuzz, result)
        if result.edits is not None and old is not None and result.content is not None:
            self._made[id(result.content)] = (result, old)
        return result

    def made_from(self, content: bytes) -> tuple[bytes, tuple[tuple[int, int, bytes], ...]] | None:
        """(the old content, FileApplication.edits) when `content` is the post-image of one of
        these applications made by placing its hunks on the bytes; None otherwise."""
        found = self._made.get(id(content))
        if found is None or found[0].content is not content:
            return None
        application, old = found
        assert application.edits is not None
        return old, application.edits


@record(frozen=True)
class RepeatedPlace:
    """A hunk whose pre-image (with the context it was placed with) is at more than one place
    of the file it was applied to: nearness to its header's line chose `at_line` of
    `candidates` (1-based lines of that file)."""

    path: str
    index: int  # the hunk, 0-based
    at_line: int
    candidates: tuple[int, ...]
    # (copies_left) the 1-based lines of the old file where the pre-image was, more than one
    # place, when this file has it at one place only; empty otherwise
    was_at: tuple[int, ...] = ()
    # The patch names no file it was made on (no `index` line: quilt, `diff -u`), rather than
    # another one (`unproven`)
    no_index: bool = False
    # (copies_left) the 1-based line of this file that the line diff of the old file to it
    # aligns with the hunk's old place, where upstream changed a line of the pre-image: the
    # one place that has it whole (`at_line`) is then in lines upstream added. 0 otherwise.
    own_at: int = 0
    # (copies_changed) the 1-based lines of this file where all but a line or two of the
    # pre-image are, places the file before upstream's change had fewer of: upstream changed
    # a copy of the code, maybe the fix's own. Empty otherwise.
    changed_at: tuple[int, ...] = ()

    def why(self) -> str:
        """Why its header's line numbers cannot choose the place (see `unproven`)."""
        if self.changed_at:
            return "git's 3-way merge takes an unchanged copy as readily as the fix's own"
        if self.no_index:
            return ("its diff has no index lines naming the file it was made on (a quilt or "
                    "`diff -u` patch), so its line numbers may be another version's")
        return "its line numbers were made on another version of the file"

    def describe(self) -> str:
        lines = ", ".join(str(line) for line in self.candidates)
        if self.own_at:
            return (f"{self.path} hunk #{self.index + 1}: its context was at line "
                    f"{self.was_at[0]} of the file before upstream's change, which changed "
                    f"it there (now line {self.own_at}); it is whole only at line {lines}, "
                    "in lines upstream added (a copy of that code, maybe)")
        if self.was_at:
            was = ", ".join(str(line) for line in self.was_at)
            return (f"{self.path} hunk #{self.index + 1}: its context was at "
                    f"line{'s' if len(self.was_at) > 1 else ''} {was} of "
                    f"the file before upstream's change, and is only at line {lines} now "
                    "(another copy of that code, maybe)")
        if self.changed_at:
            near = ", ".join(str(line) for line in self.changed_at)
            plural = "s" if len(self.changed_at) > 1 else ""
            return (f"{self.path} hunk #{self.index + 1}: its context is at lines {lines}, "
                    f"and all but a line or two of it at line{plural} {near}, where upstream "
                    "changed a copy of that code (the fix's own, maybe)")
        return f"{self.path} hunk #{self.index + 1}: its context is at lines {lines}"


def _line_places(content: bytes, pre: bytes) -> list[int]:
    """The 0-based lines of `content` where `pre` (whole lines; without a final line end it
    must end the file) starts, in order. Two `bytes.find`s when it is there once."""
    return _lines_at(content, _place_offsets(content, pre))


def _place_offsets(content: bytes, pre: bytes) -> list[int]:
    """Where in `content`'s bytes each of _line_places' places starts, in order: how many
    places there are, without counting lines (a pass over the file up to each place), which
    only a caller that finds more than one needs (`_lines_at`)."""
    ends_line = pre.endswith(b"\n")
    offsets: list[int] = []
    pos = content.find(pre)
    while pos >= 0:
        if (pos == 0 or content[pos - 1] == 10) and \
                (ends_line or pos + len(pre) == len(content)):
            offsets.append(pos)
        pos = content.find(pre, pos + 1)
    return offsets


def _lines_at(content: bytes, offsets: list[int]) -> list[int]:
    """The 0-based line of each of `offsets` (ascending, each a line's start) in `content`."""
    lines: list[int] = []
    line = counted = 0
    for pos in offsets:
        line += content.count(b"\n", counted, pos)
        counted = pos
        lines.append(line)
    return lines


def repeated_places(content: bytes | None, fp: FilePatch,
                    application: FileApplication) -> list[RepeatedPlace]:
    """The hunks `application` (of `fp` to `content`) placed where their pre-image is not the
    only match in the file: there the place was chosen by nearness to the header's line alone
    (as GNU patch and git apply choose), which is right only when the header's line numbers
    are those of this very file. A hunk anchored at the file's start or end, or without a
    pre-image, has one place it can go. Costs a search of the file per hunk (one match: the
    first find, then one that finds nothing)."""
    if content is None or fp.binary is not None or application.content is None:
        return []
    found = []
    for outcome in application.hunks:
        if outcome.at_line is None:
            continue
        hunk = fp.hunks[outcome.index]
        cut = _fuzzed(hunk, outcome.fuzz)
        if cut is None or cut[3] is not None or not cut[1]:
            continue
        offsets = _place_offsets(content, _cut_sides(hunk, outcome.fuzz, cut)[0])
        if len(offsets) > 1:  # lines counted only then: most pre-images are in one place
            found.append(RepeatedPlace(fp.path, outcome.index, outcome.at_line,
                                       tuple(line + 1 for line in _lines_at(content, offsets))))
    return found


def copies_left(old: bytes, new: bytes, fp: FilePatch, old_application: FileApplication,
                application: FileApplication) -> list[RepeatedPlace]:
    """The hunks `application` (of `fp` to `new`) placed at the one place of `new` that has
    their pre-image, where `old` (the file before upstream's change, `old_application` the
    patch applied to it) had it at more than one: upstream changed or removed the copy the
    patch changes, and nearness found another copy. Each as a RepeatedPlace whose one
    candidate is that place (`was_at`: the old places), for the line map to confirm."""
    if fp.binary is not None or application.content is None or \
            old_application.content is None:
        return []
    found = []
    before = {o.index: o for o in old_application.hunks}
    for outcome in application.hunks:
        was = before.get(outcome.index)
        if outcome.at_line is None or was is None or was.at_line is None or \
                was.fuzz != outcome.fuzz:
            continue
        hunk = fp.hunks[outcome.index]
        cut = _fuzzed(hunk, outcome.fuzz)
        if cut is None or cut[3] is not None or not cut[1]:
            continue
        pre = _cut_sides(hunk, outcome.fuzz, cut)[0]
        offsets = _place_offsets(old, pre)
        if len(offsets) > 1 and len(_place_offsets(new, pre)) == 1:
            found.append(RepeatedPlace(fp.path, outcome.index, outcome.at_line,
                                       (outcome.at_line,),
                                       tuple(line + 1 for line in _lines_at(old, offsets))))
        elif outcome.status == "offset" and len(offsets) == 1 and \
                len(now := _place_offsets(new, pre)) == 1 and \
                _new_surroundings(old, offsets[0], new, now[0], len(pre)):
            # At one place in each, but nearness found a place with other neighbours: upstream
            # may have changed the code the patch changes (one of its context lines) and added
            # a copy of the old code elsewhere (a function kept as `..._legacy`), which alone
            # still has the pre-image. The map, or git's merge, says whether it is the place.
            found.append(RepeatedPlace(fp.path, outcome.index, outcome.at_line,
                                       (outcome.at_line,), (was.at_line,)))
        elif len(offsets) == 1 and (own := _own_place_changed(
                old, new, cut[1], cut[2], was.at_line - 1, outcome.at_line - 1)) is not None:
            found.append(RepeatedPlace(fp.path, outcome.index, outcome.at_line,
                                       (outcome.at_line,), (was.at_line,), own_at=own + 1))
    return found


def copies_changed(old: bytes, new: bytes, fp: FilePatch, old_application: FileApplication,
                   repeated: list[RepeatedPlace], chosen: dict[int, int]) -> list[RepeatedPlace]:
    """Those of `repeated` (hunks of `fp` whose pre-image is whole at several places of `new`,
    put at the lines `chosen` gives by hunk: a 3-way merge's placement) where `new` has more
    places with all but a line or two of the pre-image than `old` (the file before upstream's
    change, `old_application` the patch applied to it), and a line diff of `old` to `new`
    puts the hunk elsewhere than `chosen`: upstream changed a line of a copy of the code the
    hunk changes, maybe the fix's own copy, and the merge's alignment and the diff's disagree
    on which copy is the fix's. Each with `changed_at`, those places."""
    before = {o.index: o for o in old_application.hunks}
    found = []
    for r in repeated:
        was = before.get(r.index)
        cut = _fuzzed(fp.hunks[r.index], was.fuzz) if was is not None else None
        if cut is None or not cut[1] or was is None or was.at_line is None:
            continue
        near = _near_places(lines_of(new), cut[1])
        if not near or len(near) <= len(_near_places(lines_of(old), cut[1])):
            continue
        own = _diff_place(old, new, cut[1], cut[2], was.at_line - 1)
        if own is not None and own + 1 != chosen[r.index]:
            found.append(replace(r, changed_at=tuple(start + 1 for start in sorted(near))))
    return found


def _near_places(lines: Lines, pre: list[bytes]) -> set[int]:
    """The 0-based lines of `lines` where all but a line or two of `pre` start, never where
    all of it does: a near-copy differs in a line or two of a hunk's usual seven (an edit);
    three lines alike at least (in a hunk of two or three lines, one line is anywhere)."""
    size = len(pre)
    votes: dict[int, int] = {}
    for k, text in enumerate(pre):
        for pos in lines.positions(text):
            votes[pos - k] = votes.get(pos - k, 0) + 1
    alike = max(3, size - max(1, size // 3))
    return {start for start, count in votes.items() if alike <= count < size and start >= 0}


def _own_place_changed(old: bytes, new: bytes, pre: list[bytes], post: list[bytes],
                       was: int, at: int) -> int | None:
    """The 0-based line of `new` where the pre-image `pre`, at line `was` of `old` and placed
    at line `at` of `new` (its one whole place there), has its own place, changed by
    upstream, when that is not `at`: upstream inserted a near-copy of the code (a second
    macro, another config entry) and edited a line of the original, and only the copy still
    has the pre-image whole. None when `at` is its own place, or nothing says another is.
    A place of `new` with all but a few lines of `pre` is asked for first, by the lines'
    index (most hunks have none); only then are the files aligned by a line diff."""
    near = _near_places(lines_of(new), pre)  # (`at`, whole, is none of them)
    if not near:
        return None
    best = _diff_place(old, new, pre, post, was)
    return best if best is not None and best != at and best in near else None


def _diff_place(old: bytes, new: bytes, pre: list[bytes], post: list[bytes],
                was: int) -> int | None:
    """The 0-based line of `new` where a line diff of `old` to `new` puts the hunk whose
    pre-image `pre` (post-image `post`) is at line `was` of `old`: where most of the lines it
    changes (or, for an insertion, the two around it) went, else most of its lines. None
    when none of them is left."""
    size = len(pre)
    # Upstream's edit and copy may split the old lines between places: per start, how many.
    same = 0
    while same < min(size, len(post)) and pre[same] == post[same]:
        same += 1
    tail = 0
    while tail < min(size, len(post)) - same and pre[-1 - tail] == post[-1 - tail]:
        tail += 1
    changed = range(same, size - tail) if same < size - tail else \
        range(max(same - 1, 0), min(same + 1, size))
    starts: dict[int, int] = {}
    at_changed: dict[int, int] = {}
    for i, j, length in _aligned_contents(old, new):
        for k in range(max(i, was), min(i + length, was + size)):
            start = j - i + was
            starts[start] = starts.get(start, 0) + 1
            if k - was in changed:
                at_changed[start] = at_changed.get(start, 0) + 1
    counted = at_changed or starts
    if not counted:
        return None
    return max(counted.items(), key=lambda item: (item[1], -item[0]))[0]


@lru_cache(maxsize=8)
def _aligned_contents(old: bytes, new: bytes) -> tuple[tuple[int, int, int], ...]:
    """_aligned_blocks of two contents' lines, kept for the pairs asked again: each moved hunk
    of a patch on a file upstream changed asks of the same two contents (a line diff of
    whole files, the largest single step of the carried patches' copy check)."""
    return tuple(_aligned_blocks(lines_of(old), lines_of(new)))


def _aligned_blocks(old: list[bytes], new: list[bytes]) -> list[tuple[int, int, int]]:
    """The lines a line diff of `old` to `new` keeps, as (old line, new line, count) blocks
    (0-based). The lines both files start and end with are set aside first; no line is
    junk (a popular line left out would be called added)."""
    import difflib

    top, tail = same_ends(old, new)
    matcher = difflib.SequenceMatcher(None, old[top:len(old) - tail],
                                      new[top:len(new) - tail], autojunk=False)
    blocks = [(0, 0, top)] if top else []
    blocks += [(top + i, top + j, n) for i, j, n in sampled_blocks(matcher) if n]
    if tail:
        blocks.append((len(old) - tail, len(new) - tail, tail))
    return blocks


def _new_surroundings(old: bytes, old_at: int, new: bytes, new_at: int, size: int) -> bool:
    """Whether the `size` bytes of whole lines at offset `new_at` of `new` have other lines
    right above and right below them than the same bytes at `old_at` of `old`: upstream
    changed the code on both sides of the place (or nearness found another copy of it). Lines
    moved down by lines added above them keep their neighbours; a copy elsewhere has others.
    Read at the two offsets alone, not by counting the files' lines."""
    def around(content: bytes, at: int) -> tuple[bytes | None, bytes | None]:
        # `at` starts a line: the line above ends at it; the one below starts at its end.
        above = content[content.rfind(b"\n", 0, at - 1) + 1:at] if at else None
        end = at + size
        if end >= len(content):
            return above, None
        below_end = content.find(b"\n", end)
        return above, content[end:len(content) if below_end < 0 else below_end + 1]

    before_old, after_old = around(old, old_at)
    before_new, after_new = around(new, new_at)
    return before_old != before_new and after_old != after_new


# Which function a changed line is in, for `another_function`: files of languages whose code
# lives in named functions. Python by its `def`/`class` lines (a method by its own, at any
# indentation); the C family by git's default funcname rule (a line at column 0 that starts
# with a letter, `_` or `$`), taken as a definition where it calls something a name (`void
# launch(`, `__global__ void kernel(`, `int A::run(`). Elsewhere (YAML, Markdown, CMake: their
# column-0 lines are keys and text) a line has no function.
_PYTHON_SUFFIXES = (".py", ".pyi")
_C_SUFFIXES = (".c", ".h", ".cc", ".cpp", ".cxx", ".c++", ".hpp", ".hh", ".hxx", ".h++",
               ".cu", ".cuh", ".hip", ".inl", ".inc", ".cl", ".ipp", ".tcc")
_PYTHON_DEFINITION = re.compile(rb"([ \t]*)(?:async[ \t]+)?(?:def|class)[ \t]+([A-Za-z_]\w*)")
_C_DEFINITION_START = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_$")
# A C++ method defined outside its class is named with it (`A::run`, `Foo<T>::run`): the
# `run` of two classes are two functions.
# A match starts only where a name starts (never inside one): tried at every byte of a long
# run of word characters without a `(`, each try read the rest of the run (a column-0 line of
# a generated source took seconds).
_C_CALLED = on_first_use(
    rb"(?<![\w$])((?:[A-Za-z_$][\w$]*(?:<[^<>()]*>)?\s*::\s*)*~?[A-Za-z_$][\w$]*)\s*\(")


def _language(path: str) -> str | None:
    lower = path.lower()
    if lower.endswith(_PYTHON_SUFFIXES):
        return "python"
    if lower.endswith(_C_SUFFIXES):
        return "c"
    return None


def _c_definition(line: bytes) -> bytes | None:
    """The name a C-family line at column 0 defines (`static void foo(int a,` -> foo), None
    for any other line: a declaration or statement (`;`), a label or access specifier (`:`),
    a block without a call in it (`struct Foo {`, `namespace x {`)."""
    if not line[:1] or line[0] not in _C_DEFINITION_START:
        return None
    text = line.rstrip()
    if text.endswith((b";", b":")):
        return None
    called = _C_CALLED.search(text)
    return b"".join(called.group(1).split()) if called else None


def defined_names(path: str, lines) -> frozenset[bytes]:
    """The names `lines` (whole lines of a file at `path`) define at its top level: a Python
    `def` or `class` at column 0, a C-family definition at column 0 (`_c_definition`'s); none
    in other languages. A method's name (`forward`, `run`) is many classes'; a dunder
    (`__init__`) or a name in capitals (a macro's: `PYBIND11_MODULE(`, `TORCH_LIBRARY(`) is
    every module's: none names anything of its own."""
    language = _language(path)
    if language is None:
        return frozenset()
    names = set()
    for line in lines:
        if language == "python":
            found = _PYTHON_DEFINITION.match(line)
            name = found.group(2) if found is not None and not found.group(1) else None
        else:
            name = _c_definition(line)
        if name and not name.isupper() and not (name.startswith(b"__") and
                                                 name.endswith(b"__")):
            names.add(name)
    return frozenset(names)


# The named scopes of a C-family file (C++ `namespace`, `class`, `struct`, `union`), read by
# brace depth, so that a function is named with them: `f` of `namespace a` and `f` of
# `namespace b` (each at column 0, git's funcname rule naming both `f`), `run` defined inside
# `struct A` and inside `struct B`, are two functions (`a::f`, `A::run`). Comments, strings
# and character literals hold no braces; of an `#if`'s branches only the first is read (as
# ctags does): the others repeat its braces (`#ifdef X` / `void f(int a) {` / `#else` /
# `void f() {`). `extern "C" {` is no scope; a namespace without a name is `(anonymous)`.
_C_TOKEN = on_first_use(rb'//|/\*|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|[{};]')
_C_ACCESS = on_first_use(rb"(?:(?:public|private|protected)\s*:\s*)+")
_C_SCOPE = on_first_use(rb"(?:(?:inline|export|typedef)\s+)?(?:namespace|class|struct|union)\b\s*"
                      rb"(?:(?:__attribute__\s*\(\(.*?\)\)|__declspec\s*\([^)]*\)|alignas\s*"
                      rb"\([^)]*\)|\[\[.*?\]\])\s*)*([A-Za-z_]\w*(?:\s*::\s*[A-Za-z_]\w*)*(?:\s*<.*?>)?)?"
                      rb"\s*(?:final\b)?\s*(?::[^()]*)?", re.S)
_C_LINKAGE = on_first_use(rb'extern\s*"C(?:\+\+)?"')


class _CBlock(NamedTuple):
    """A block `{...}` of a C-family file opened where only scopes are open: a namespace's or
    a class's (`scope` its name), an `extern "C"` one (no name), or a function's body
    (`function` its name). 0-based lines: `line` of its name, `opened` of its `{`, `closed`
    of its `}`."""
    line: int
    opened: int
    closed: int
    scope: bytes = b""
    function: bytes = b""


class CFile:
    """What the function check reads of one C-family file, each found once (the check asks of
    one file for many definitions): the lines that may be directives, and its blocks."""

    def __init__(self, lines: list[bytes]) -> None:
        self.lines = lines
        self._directives: list[int] | None = None
        self._blocks: list[_CBlock] | None = None

    @property
    def directives(self) -> list[int]:
        if self._directives is None:
            self._directives = _directive_lines(b"".join(self.lines))
        return self._directives

    @property
    def blocks(self) -> list[_CBlock]:
        if self._blocks is None:
            self._blocks = _c_blocks(self.lines)
        return self._blocks

    def scopes_at(self, k: int) -> list[bytes]:
        """The names of the namespaces and classes line `k` is in, outermost first."""
        return [block.scope for block in self.blocks
                if block.scope and block.opened < k <= block.closed]

    def function_at(self, k: int) -> _CBlock | None:
        """The function whose body (below its `{`, above its `}`) holds line `k`."""
        return next((block for block in self.blocks
                     if block.function and block.opened < k < block.closed), None)

    def defined_at(self, k: int) -> _CBlock | None:
        """The function whose name is on line `k`."""
        return next((block for block in self.blocks if block.function and block.line == k),
                    None)


def _without_template(header: bytes) -> bytes:
    """`header` without the `template <...>` in front of it (its `class T` is no scope)."""
    if not header.startswith(b"template"):
        return header
    depth = 0
    for k in range(header.find(b"<"), len(header)):
        depth += {60: 1, 62: -1}.get(header[k], 0)
        if not depth:
            return header[k + 1:].strip()
    return header


def _c_blocks(lines: list[bytes]) -> list[_CBlock]:
    """The blocks (`_CBlock`) of a C-family file, by its braces outside comments, strings and
    all but the first branch of each `#if`; a block still open at the end closes there."""
    found: list[_CBlock] = []
    # Per open block: its index in `found`, or None for one that is neither a scope nor a
    # function, or is inside a function (an initializer, an enum, a statement's, a lambda's).
    open_blocks: list[int | None] = []
    header: list[tuple[int, bytes]] = []  # (line, code) since the last `;`, `{` or `}`
    later_branch: list[bool] = []  # per open `#if`: whether a branch after its first is read
    in_comment = continued = False
    for k, line in enumerate(lines):
        if continued or (not in_comment and line.lstrip()[:1] == b"#"):
            directive = None if continued else _C_DIRECTIVE.match(line)
            continued = line.rstrip().endswith(b"\\")
            word = directive.group(1) if directive is not None else b""
            if word in (b"if", b"ifdef", b"ifndef"):
                later_branch.append(False)
            elif word.startswith(b"el") and later_branch:
                later_branch[-1] = True
            elif word == b"endif" and later_branch:
                later_branch.pop()
            continue
        if True in later_branch:
            continue
        pos = 0
        while pos < len(line):
            if in_comment:
                end = line.find(b"*/", pos)
                in_comment, pos = end < 0, len(line) if end < 0 else end + 2
                continue
            token = _C_TOKEN.search(line, pos)
            header.append((k, line[pos:len(line) if token is None else token.start()]))
            if token is None:
                break
            word, pos = token.group(), token.end()
            if word == b"//":
                break
            if word == b"/*":
                in_comment = True
            elif word[:1] in b"\"'":
                header.append((k, word))
            elif word == b"{":
                open_blocks.append(_opened(found, open_blocks, header, k, len(lines)))
                header = []
            else:
                if word == b"}" and open_blocks:
                    closing = open_blocks.pop()
                    if closing is not None:
                        found[closing] = found[closing]._replace(closed=k)
                header = []
    return found


def _opened(found: list[_CBlock], open_blocks: list[int | None],
            header: list[tuple[int, bytes]], k: int, end: int) -> int | None:
    """The index in `found` of the block opened by the `{` on line `k` after `header` (the
    code since the statement before it), appended there: a scope or a function opened where
    only scopes are open. None for any other block."""
    if any(index is None or found[index].function for index in open_blocks):
        return None
    text = b" ".join(b"".join(code for _, code in header).split())
    access = _C_ACCESS.match(text)  # `public: void run() {`
    text = _without_template(text[access.end():] if access is not None else text)
    scope = _C_SCOPE.fullmatch(text)
    if scope is not None or _C_LINKAGE.fullmatch(text):  # `extern "C" {`: a block, no name
        name = b"" if scope is None else scope.group(1) or b"(anonymous)"
        found.append(_CBlock(k, k, end, scope=b"".join(name.split())))
        return len(found) - 1
    called = _C_CALLED.search(text)
    if called is None or b"=" in text[:called.start()]:
        return None  # an initializer (`= {`), an enum, a block of no name
    # Its line: the first of the header that names a call (a `template <...>` line above it,
    # a return type on a line of its own, are not its name).
    line = next((at for at, code in header if _C_CALLED.search(code)), header[0][0])
    found.append(_CBlock(line, k, end, function=b"".join(called.group(1).split())))
    return len(found) - 1


def _definitions_of(lines: list[bytes], at: int, changed: bytes, language: str,
                    c_file: CFile | None = None) -> list[int]:
    """The definition lines (0-based) of the functions whose body holds a change made at line
    `at` (0-based) of `lines`, `changed` its first changed line that is not blank: the
    innermost first, then (Python) the functions and classes it is nested in. Empty where the
    change is not inside a named function: at the top level (a definition added or removed
    whole, a module's statement), after a C function's closing brace, or above every
    definition. `c_file`: `CFile(lines)`, when the caller asks of one file many times."""
    found: list[int] = []
    if language == "python":
        limit = len(changed) - len(changed.lstrip(b" \t"))
        deeper = b" " * limit
        for k in range(min(at, len(lines)) - 1, -1, -1):
            if not limit:
                break
            line = lines[k]
            if line.startswith(deeper) or line.isspace():
                continue  # as deep as the limit, or blank: C calls (most lines of a body)
            text = line.lstrip(b" \t")
            if not text.strip() or text[:1] in (b"#", b")", b"]", b"}"):
                continue  # blank, a comment, the end of a bracketed continuation
            indent = len(line) - len(text)
            if indent >= limit:
                continue
            if _PYTHON_DEFINITION.match(line) is not None:
                found.append(k)
            elif not found and not indent:
                break  # a module's statement: in no function
            limit = indent  # an `if`/`for`/`with` the change is under: its function is above
            deeper = b" " * limit
        return found
    if changed[:1] == b"}" or (changed[:1] and changed[0] in _C_DEFINITION_START):
        return found  # a top-level line itself
    for k in range(min(at, len(lines)) - 1, -1, -1):
        line = lines[k]
        if line[:1] == b"}":
            return found  # after a function's end, outside every function
        if line[:1] and line[0] in _C_DEFINITION_START:
            if line.rstrip().endswith(b":"):
                continue  # a label (`out:`), an access specifier (`public:`)
            if _c_definition(line) is not None:
                return [k]
            break  # `struct A {`, `namespace a {`: a method defined in its class is indented
    method = (c_file or CFile(lines)).function_at(at)
    return [method.line] if method is not None else []


def _definition_name(lines: list[bytes], k: int, language: str,
                     c_file: CFile | None = None) -> bytes | None:
    """The name line `k` defines: a Python `def`/`class`, a C-family definition at column 0
    (git's funcname rule) or one whose body `c_file` found (a method inside its class)."""
    line = lines[k]
    if language == "python":
        found = _PYTHON_DEFINITION.match(line)
        return found.group(2) if found is not None else None
    if line[:1] and line[0] in _C_DEFINITION_START:
        return _c_definition(line)
    method = (c_file or CFile(lines)).defined_at(k) if line[:1] in (b" ", b"\t") else None
    return method.function if method is not None else None


def _functions_of(lines: list[bytes], definitions: list[int], language: str,
                  c_file: CFile | None = None) -> list[bytes]:
    """The names of the functions defined at `definitions` (`_definitions_of`, innermost
    first), each qualified by what it is nested in (`_qualified`; in the C family the
    namespaces and classes it is in: `a::A::run`) and by the branch of a conditional it is
    defined in (`_branch`): `A.run`, `pick [defined(USE_FAST)]`. `c_file`: `CFile(lines)`,
    when the caller asks of one file many times."""
    if language == "c" and c_file is None:
        c_file = CFile(lines)
    names = []
    for k in definitions:
        name = _definition_name(lines, k, language, c_file) or b""
        if c_file is not None:
            name = b"::".join([*c_file.scopes_at(k), name])
        branch = _branch(lines, k, language, c_file)
        joined = (b" and " if language == "python" else b" && ").join(branch)
        names.append(name + b" [" + joined + b"]" if branch else name)
    return _qualified(names)


# The branch a definition sits in, so that two of one name in the branches of a conditional
# (`#ifdef X` / `#else`, `if X:` / `else:`, `try:` / `except ImportError:`) are two functions.
# A branch is said by its conditions (those of the `#if`/`#elif`/`if`/`elif` it is under, and
# the negation of each earlier one of its conditional), sorted: the same definition under the
# same conditions written the other way round (`#ifndef X` first) keeps its name.
_C_DIRECTIVE = on_first_use(rb"[ \t]*#[ \t]*(if|ifdef|ifndef|elif|elifdef|elifndef|else|endif|define)"
                          rb"\b[ \t]*(.*)")
_C_COMMENT = on_first_use(rb"/\*.*?\*/|//.*")
_PYTHON_CLAUSE = on_first_use(rb"[ \t]*(if|elif|else|try|except|finally)\b[ \t]*(.*?)[ \t]*:"
                            rb"\s*(?:#.*)?$")
_SIMPLE_CONDITION = on_first_use(rb"[\w.]+(?:\([\w., ]*\))?")


def _unwrapped(text: bytes) -> bytes:
    """`text` without the parentheses around all of it, and its spaces made single."""
    text = b" ".join(text.split())
    while text[:1] == b"(" and text[-1:] == b")":
        depth = 0
        for k, char in enumerate(text):
            depth += {40: 1, 41: -1}.get(char, 0)
            if not depth and k < len(text) - 1:
                return text  # `(a) && (b)`: the first parenthesis closes early
        text = text[1:-1].strip()
    return text


def _condition(text: bytes, negation: bytes) -> tuple[bool, bytes]:
    """A condition as (whether it is asked true, what is asked), the negations in front of it
    (`!` in C, `not ` in Python) and parentheses around it taken off; `defined X` written
    `defined(X)`."""
    if negation == b"!":
        text = re.sub(rb"defined\s*\(?\s*(\w+)\s*\)?", rb"defined(\1)", text)
    positive, text = True, _unwrapped(text)
    while text.startswith(negation):
        rest = text[len(negation):].strip()
        inner = _unwrapped(rest)
        if inner == rest and not _SIMPLE_CONDITION.fullmatch(rest):
            break  # `!a && b`: the negation is its first term's
        positive, text = not positive, inner
    return positive, text


def _said(condition: tuple[bool, bytes], negation: bytes) -> bytes:
    positive, text = condition
    if positive:
        return text
    return negation + (text if _SIMPLE_CONDITION.fullmatch(text) else b"(" + text + b")")


def _branch(lines: list[bytes], k: int, language: str,
            c_file: CFile | None = None) -> list[bytes]:
    """The conditions (sorted) the definition at line `k` of `lines` is under, up to the
    function or class it is nested in; empty for one in no conditional."""
    if language == "python":
        return sorted(set(_python_branch(lines, k)))
    return sorted(set(_c_branch(lines, k, (c_file or CFile(lines)).directives)))


# The conditions of a branch never built or run, as _branch says them: `#if 0`, `#else` of
# `#if 1`, `if False:`.
_NEVER_TRUE = frozenset({b"0", b"false", b"!1", b"!true", b"False", b"not True", b"not 1"})


def _directive_lines(content: bytes) -> list[int]:
    """The (0-based) lines of `content` that may be preprocessor directives (`#` first), in
    order: found once per file from its `#` bytes, not by reading every line above each
    definition asked about (which made the function check quadratic in a file's size)."""
    out: list[int] = []
    line = counted = 0
    at = content.find(b"#")
    while at != -1:
        start = content.rfind(b"\n", 0, at) + 1
        if not content[start:at].strip(b" \t"):
            line += content.count(b"\n", counted, start)
            counted = start
            out.append(line)
        at = content.find(b"#", at + 1)
    return out


def _c_branch(lines: list[bytes], k: int, directives: list[int]) -> list[bytes]:
    """The C preprocessor conditions line `k` is read under (`directives`: the file's
    `_directive_lines`). A header's include guard (`#ifndef X` then `#define X`) is no branch:
    every line of the file is under it."""
    # Per open `#if`: its conditions so far, and those of the branch being read.
    groups: list[tuple[list[tuple[bool, bytes]], list[tuple[bool, bytes]]]] = []
    for j in directives:
        if j >= k:
            break
        found = _C_DIRECTIVE.match(lines[j])
        if found is None or found.group(1) == b"define":
            continue
        word, rest = found.group(1), _C_COMMENT.sub(b"", found.group(2)).strip()
        if word in (b"if", b"ifdef", b"ifndef"):
            asked = _directive_condition(word, rest)
            guard = not asked[0] and asked[1].startswith(b"defined(") and \
                _guard_defined(lines, j, asked[1][len(b"defined("):-1]) and \
                not _has_alternative(lines, directives, j)
            groups.append(([], []) if guard else ([asked], [asked]))
        elif word == b"endif":
            if groups:
                groups.pop()
        elif groups and groups[-1][0]:  # an `#elif`, an `#else` (of no guard)
            earlier = groups[-1][0]
            branch = [(not positive, text) for positive, text in earlier]
            if word != b"else":
                asked = _directive_condition(word, rest)
                earlier.append(asked)
                branch.append(asked)
            groups[-1] = (earlier, branch)
    return [_said(condition, b"!") for _, branch in groups for condition in branch]


def _directive_condition(word: bytes, rest: bytes) -> tuple[bool, bytes]:
    """The condition of an `#if`, `#ifdef`, `#elif`... directive, `rest` the text after it."""
    if word in (b"if", b"elif"):
        return _condition(rest, b"!")
    return not word.endswith(b"ndef"), b"defined(" + rest + b")"


def _guard_defined(lines: list[bytes], j: int, name: bytes) -> bool:
    """Whether the first line after `#ifndef NAME` at line `j` that is not blank defines
    NAME: an include guard."""
    for line in itertools.islice(lines, j + 1, None):
        if line.strip():
            found = _C_DIRECTIVE.match(line)
            return found is not None and found.group(1) == b"define" and \
                found.group(2).split()[:1] == [name]
    return False


def _has_alternative(lines: list[bytes], directives: list[int], j: int) -> bool:
    """Whether the conditional opened at line `j` has an `#else` or `#elif` of its own: an
    include guard has none (`#ifndef WARP_SIZE`, `#define WARP_SIZE 64`, then an `#else` is
    a default and its alternative, two branches)."""
    depth = 0
    for i in directives[bisect.bisect_right(directives, j):]:
        found = _C_DIRECTIVE.match(lines[i])
        if found is None or found.group(1) == b"define":
            continue
        word = found.group(1)
        if word in (b"if", b"ifdef", b"ifndef"):
            depth += 1
        elif word == b"endif":
            if not depth:
                return False
            depth -= 1
        elif not depth:
            return True
    return False


def _python_branch(lines: list[bytes], k: int) -> list[bytes]:
    """The conditions of the `if`/`elif`/`else` blocks (the clause of a `try`) that line `k`
    is in, up to the function or class it is nested in."""
    branch: list[bytes] = []
    limit = len(lines[k]) - len(lines[k].lstrip(b" \t"))
    deeper = b" " * limit
    j = k
    while limit and j > 0:
        j -= 1
        line = lines[j]
        if line.startswith(deeper) or line.isspace():
            continue  # as deep as the limit, or blank: C calls (most lines of a class)
        text = line.lstrip(b" \t")
        if not text.strip() or text[:1] in (b"#", b")", b"]", b"}") or \
                len(line) - len(text) >= limit:
            continue
        if _PYTHON_DEFINITION.match(line) is not None:
            break  # its own branch is in its name
        limit = len(line) - len(text)
        deeper = b" " * limit
        branch += _python_clause(lines, j, limit)
    return branch


def _python_clause(lines: list[bytes], j: int, indent: int) -> list[bytes]:
    """The conditions of the block whose header is line `j` (at `indent`): an `if`'s own, an
    `elif`'s and an `else`'s with the negation of the `if`/`elif` above it; a `try`'s clauses
    by their words (`try`, `except ImportError`). Nothing for other blocks (`for`, `with`)."""
    found = _PYTHON_CLAUSE.match(lines[j])
    if found is None:
        return []
    word, rest = found.group(1), found.group(2)
    if word in (b"try", b"finally"):
        return [word]
    if word == b"except":
        return [b" ".join([word, *rest.split()])]
    if word == b"if":
        return [_said(_condition(rest, b"not "), b"not ")]
    # An `elif` or `else`: the clauses above it at its indentation, up to their `if`.
    earlier: list[tuple[bool, bytes]] = []
    for above in range(j - 1, -1, -1):
        line = lines[above]
        text = line.lstrip(b" \t")
        if not text.strip() or text[:1] == b"#" or len(line) - len(text) > indent:
            continue
        clause = _PYTHON_CLAUSE.match(line)
        if len(line) - len(text) < indent or clause is None:
            return []  # not a clause of an `if` (a `for`/`while`'s `else`)
        if clause.group(1) in (b"try", b"except"):
            return [b"else of try"] if word == b"else" else []
        if clause.group(1) in (b"if", b"elif"):
            earlier.append(_condition(clause.group(2), b"not "))
            if clause.group(1) == b"if":
                break
    branch = [(not positive, text) for positive, text in earlier]
    if word == b"elif":
        branch.append(_condition(rest, b"not "))
    return [_said(condition, b"not ") for condition in branch]


def _bodies(lines: list[bytes], function: bytes, bare: bytes, language: str,
            c_file: CFile | None = None, branch: tuple[bytes, ...] = ()) -> set[bytes]:
    """The lines (without their indentation and line end) of every definition in `lines` that
    `_functions_of` names `function` (whose own name is `bare`), its definition line to its
    end: the next line as little indented as its `def` (Python), its closing brace at column
    0 (the C family; a method defined inside its class: its own closing brace). With
    `branch`: only the lines in that branch of a conditional inside it (`_inner_branches`)."""
    found: set[bytes] = set()
    k = 0
    while k < len(lines):
        line = lines[k]
        if bare.rsplit(b":", 1)[-1] not in line or \
                _definition_name(lines, k, language, c_file) != bare or \
                _functions_of(lines, [k, *_definitions_of(lines, k, line, language, c_file)],
                              language, c_file)[0] != function:
            k += 1
            continue
        end = body_end(lines, k, language, c_file)
        if branch:
            found.update(each.strip() for each, inside in
                         zip(lines[k + 1:end], _inner_branches(lines, k, end, language))
                         if inside[:len(branch)] == branch)
        else:
            found.update(each.strip() for each in lines[k + 1:end])
        k = end
    return found


def body_end(lines: list[bytes], definition: int, language: str,
             c_file: CFile | None = None) -> int:
    """Where the body of the function defined at line `definition` (0-based) of `lines` ends
    (the 0-based line after its last): the next line as little indented as its `def`
    (Python; comments and closing brackets of a continuation are the body's), its closing
    brace at column 0 (the C family; a method defined inside its class, as `c_file`,
    `CFile(lines)`, finds it: its own closing brace)."""
    k = definition + 1
    line = lines[definition]
    method = c_file.defined_at(definition) if c_file is not None and line[:1] in (b" ", b"\t") \
        else None
    if method is not None:
        return method.closed
    if language == "python":
        indent = len(line) - len(line.lstrip(b" \t"))
        while k < len(lines):
            text = lines[k].lstrip(b" \t")
            if text.strip() and text[:1] not in (b"#", b")", b"]", b"}") and \
                    len(lines[k]) - len(text) <= indent:
                break
            k += 1
    else:
        while k < len(lines) and lines[k][:1] != b"}":
            k += 1
    return k


def _changed_places(old: list[bytes], new: list[bytes],
                    at: int = 0) -> list[tuple[int, int, bytes]]:
    """Where `new` differs from `old`, as a line diff says: per changed block, the 0-based
    lines of `old` it replaces ([start, end), plus `at`) and its first line that is not blank
    (an added one, else a removed one); blocks of blank lines alone are left out. The lines
    both start and end with are set aside first: a change is a few blocks of a long file."""
    top, tail = same_ends(old, new)
    a, b = old[top:len(old) - tail], new[top:len(new) - tail]
    if not a and not b:
        return []
    if not a or not b:
        # Lines only added, or only removed: one block, the line diff's answer, made without
        # loading difflib (a clean rebase of fixes that add lines needs it nowhere else).
        first = next((line for line in [*b, *a] if line.strip()), None)
        return [(at + top, at + top + len(a), first)] if first is not None else []
    import difflib

    matcher = difflib.SequenceMatcher(None, a, b, autojunk=len(a) + len(b) > 4000)
    places = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        first = next((line for line in [*b[j1:j2], *a[i1:i2]] if line.strip()), None)
        if first is not None:
            places.append((at + top + i1, at + top + i2, first))
    return places


def same_ends(old: Sequence[bytes], new: Sequence[bytes]) -> tuple[int, int]:
    """How many lines `old` and `new` start with alike, and how many they then end with.

    Found by halving, each step comparing one run of lines as a whole (lines alike from an end
    stay alike over any shorter run from it): comparisons of slices, in C, instead of a loop
    over every shared line in Python, most of a large file with a change near its end."""
    short = min(len(old), len(new))
    top, most = 0, short  # old[:top] == new[:top]; no run longer than `most` is alike
    while top < most:
        mid = (top + most + 1) // 2
        if old[top:mid] == new[top:mid]:
            top = mid
        else:
            most = mid - 1
    tail, most = 0, short - top
    end_old, end_new = len(old), len(new)
    while tail < most:
        mid = (tail + most + 1) // 2
        if old[end_old - mid:end_old - tail] == new[end_new - mid:end_new - tail]:
            tail = mid
        else:
            most = mid - 1
    return top, tail


def sampled_blocks(matcher: Any) -> list[tuple[int, int, int]]:
    """`matcher.get_matching_blocks()` (a difflib.SequenceMatcher of two runs of lines), the
    same blocks, kept by the matcher for its `get_opcodes`, with each longest match of a
    large range found by sampling (_sampled_longest_match) instead of difflib's search, which
    pairs every line of one side with every equal line of the other (a file's blank lines
    with each other: most of a long range's cost)."""
    matcher.find_longest_match = MethodType(_sampled_longest_match, matcher)
    try:
        return matcher.get_matching_blocks()
    finally:
        del matcher.find_longest_match


# A range whose sides are this many lines or more, with a run of this many alike through its
# middle line, has its longest match found by sampling; any other by difflib's own search.
_SAMPLED = 64


def _sampled_longest_match(matcher: Any, alo: int, ahi: int, blo: int, bhi: int) -> Any:
    """difflib's find_longest_match of `matcher` in a[alo:ahi], b[blo:bhi], the same answer:
    the longest run alike, the first in `a`, then in `b`. Once a run of `least` lines is
    known (those through the range's middle line), every run as long or longer holds one of
    `a`'s lines alo + least - 1, alo + 2 * least - 1, ...: the runs through those lines, each
    grown both ways, hold the longest. A range with junk or popular lines (difflib's index
    leaves them out, and its answer grows over them) is left to difflib's own."""
    from difflib import Match

    a, b, b2j = matcher.a, matcher.b, matcher.b2j
    search = type(matcher).find_longest_match
    if matcher.bjunk or matcher.bpopular or min(ahi - alo, bhi - blo) < _SAMPLED:
        return search(matcher, alo, ahi, blo, bhi)
    runs: dict[int, tuple[int, int]] = {}  # per diagonal (i - j), a run's lines [lo, hi) of a

    def run_through(i: int, j: int) -> tuple[int, int]:
        """The lines alike before a[i] and b[j], and from them on."""
        seen = runs.get(i - j)
        if seen is not None and seen[0] <= i < seen[1]:
            return i - seen[0], seen[1] - i
        before = 0
        while i - before > alo and j - before > blo and a[i - before - 1] == b[j - before - 1]:
            before += 1
        after = 1
        while i + after < ahi and j + after < bhi and a[i + after] == b[j + after]:
            after += 1
        runs[i - j] = (i - before, i + after)
        return before, after

    def places(i: int) -> list[int]:
        return [j for j in b2j.get(a[i], ()) if blo <= j < bhi]

    middle = (alo + ahi) // 2
    least = max((sum(run_through(middle, j)) for j in places(middle)), default=0)
    if least < _SAMPLED:
        return search(matcher, alo, ahi, blo, bhi)
    best = (0, alo, blo)
    for i in range(alo + least - 1, ahi, least):
        for j in places(i):
            before, after = run_through(i, j)
            # The longest; of those, the first in a, then in b (difflib's).
            best = min(best, (-(before + after), i - before, j - before))
    return Match(best[1], best[2], -best[0])


def changed_places(fp: FilePatch, application: FileApplication
                   ) -> list[tuple[int, int, bytes]] | None:
    """`another_function`'s places of a change (0-based lines [start, end) of the file
    `application` applied `fp` to, the first line changed that is not blank), read off its
    hunks where they were placed: no diff of the whole file. None when a hunk failed."""
    places = []
    for outcome in application.hunks:
        cut = _fuzzed(fp.hunks[outcome.index], outcome.fuzz) if outcome.at_line else None
        if outcome.at_line is None or cut is None:
            return None
        places += _changed_places(cut[1], cut[2], outcome.at_line - 1)
    return places


def file_changes(old: bytes, new: bytes) -> list[tuple[int, int, bytes]]:
    """`changed_places` for a file made otherwise (a 3-way merge): by a line diff of the two."""
    return _changed_places(split_lines(old), split_lines(new))


# The lines above and below a change that, with the lines it removes, are the code it is made
# on (a hunk's context, as git diff writes it).
_AROUND = 3


def another_function(path: str, base: bytes, fix: list[tuple[int, int, bytes]],
                     current: bytes, carried: list[tuple[int, int, bytes]]
                     ) -> tuple[bytes, bytes, int] | None:
    """Whether the fix's change (`fix`: its places in `base`, the file the patch was made on,
    as `changed_places` says them) went into another function when carried to `current`
    (upstream's file; `carried`: the places of the change made there), while the fix's own
    function there still has the code the fix is made on: (the function the fix changes, the
    one the carrying changes instead, the 1-based line of `current` where), None otherwise. A
    function changed that is nested in the fix's is the fix's; so is one upstream moved the
    fix's code into (the fix's function then no longer has that code: a wrapper of a new
    `_impl`), and one it renamed (the fix's name gone from the file): the change follows the
    code there.

    Upstream that changes the fixed function and keeps the old body as a copy (a
    `..._legacy` function), or that reorders identical functions, leaves the fix's context
    whole only in the copy: nearness, fuzz, an exact match where the copy took the function's
    place, and git's own line map and merge all put the fix there, every check green."""
    language = _language(path)
    if language is None:
        return None
    base_lines = lines_of(base)
    # A C-family file's directives and blocks, read once per file for all its definitions.
    base_c = CFile(base_lines) if language == "c" else None
    wanted: dict[bytes, tuple[bytes, set[bytes]]] = {}
    # Each place's definitions and function, for _another_branch too: (start, end, the
    # definitions, the innermost's name); for the carrying's, its names.
    fix_at: list[tuple[int, int, list[int], bytes]] = []
    carried_at: list[tuple[int, int, list[int], list[bytes]]] = []
    for start, end, first in fix:
        definitions = _definitions_of(base_lines, start, first, language, base_c)
        if definitions:
            name = _functions_of(base_lines, definitions, language, base_c)[0]
            fix_at.append((start, end, definitions, name))
            bare = _definition_name(base_lines, definitions[0], language, base_c) or b""
            code = wanted.setdefault(name, (bare, set()))[1]
            code.update(line.strip() for line in
                        base_lines[max(0, start - _AROUND):end + _AROUND] if line.strip())
    if not wanted:
        return None
    current_lines = lines_of(current)
    current_c = CFile(current_lines) if language == "c" else None
    reached: set[bytes] = set()
    elsewhere = None
    never_built = False
    for start, end, first in carried:
        definitions = _definitions_of(current_lines, start, first, language, current_c)
        names = _functions_of(current_lines, definitions, language, current_c)
        carried_at.append((start, end, definitions, names))
        reached.update(names)
        if names and elsewhere is None and not wanted.keys() & set(names):
            elsewhere = (names[0], start + 1)
            never_built = any(condition in _NEVER_TRUE for k in definitions[:1]
                              for condition in _branch(current_lines, k, language, current_c))
    if elsewhere is None:
        return _another_branch(language, base_lines, base_c, fix_at, current_lines, current_c,
                               carried_at)
    if never_built:
        # A copy upstream disabled (`#if 0`, `if False:`) beside a rewritten function: the
        # change there is in code never built, wherever the fix's own code went.
        return (sorted(wanted.keys() - reached) or sorted(wanted))[0], *elsewhere
    for name in sorted(wanted.keys() - reached):
        bare, code = wanted[name]
        # The fix's function still has most of the code the fix is made on: upstream kept it
        # there (a context line changed, the fix's own line rewritten), and the copy changed
        # is another function's.
        if len(code & _bodies(current_lines, name, bare, language, current_c)) * 2 \
                >= len(code):
            return name, elsewhere[0], elsewhere[1]
    return None


def function_named_at(path: str, lines: list[bytes], k: int,
                       changed: bytes | None = None) -> bytes | None:
    """The function (`_functions_of`: qualified, innermost) whose body holds line `k` (0-based)
    of `lines` (`changed`: the line there, or one a change puts there), b"" for none (the top
    level); None for a file of no language known here. The doubling check asks it of a copy
    upstream added near a fix: one in another function than the fix's is other code that
    reads alike."""
    language = _language(path)
    if language is None:
        return None
    if changed is None:
        changed = lines[k] if 0 <= k < len(lines) else b""
    c_file = CFile(lines) if language == "c" else None
    definitions = _definitions_of(lines, k, changed, language, c_file)
    return _functions_of(lines, definitions, language, c_file)[0] if definitions else b""


def signature_at(path: str, lines: list[bytes], k: int, changed: bytes | None = None) -> bytes:
    """Of a C-family file, the definition of the function whose body holds line `k` (0-based)
    of `lines` as written from its name's line to its `{`, whitespace taken out: C++ overloads
    (`void launch(int n)`, `void launch(float x)`) share one name (`function_named_at`) and
    are two functions. b"" for none, or for a file of another language (where a name is
    defined once per scope and branch, so the name tells)."""
    if _language(path) != "c":
        return b""
    if changed is None:
        changed = lines[k] if 0 <= k < len(lines) else b""
    c_file = CFile(lines)
    definitions = _definitions_of(lines, k, changed, "c", c_file)
    if not definitions:
        return b""
    block = c_file.defined_at(definitions[0])
    end = block.opened + 1 if block is not None else next(
        (j + 1 for j in range(definitions[0], min(definitions[0] + 10, len(lines)))
         if b"{" in lines[j]), definitions[0] + 1)
    text = b"".join(lines[definitions[0]:end])
    return b"".join(text.split(b"{")[0].split())


# The branch of a conditional inside a function that a change is in, for `another_function`:
# upstream that adds a branch copied from the fix's (`#elif defined(__gfx1250__)` made from the
# `__gfx950__` one, an `elif arch == "gfx1250":` made from `"gfx950"`'s) and changes the fix's
# own, leaves the fix's context whole only in the copy; git's merge puts the fix there, and the
# function check passes (one function). A branch is said by its own condition (an `#elif`'s,
# an `elif`'s; an `#else` by the `#if` it ends): upstream inserting a branch before it keeps it.
_PYTHON_BRANCH = re.compile(rb"[ \t]*(if|elif|else|try|except|finally|case)\b[ \t]*(.*?)[ \t]*:"
                            rb"\s*(?:#.*)?$")
# What a line that _PYTHON_BRANCH matches begins with, its indentation taken off.
_CLAUSE_WORDS = (b"if", b"elif", b"else", b"try", b"except", b"finally", b"case")


def _inner_branches(lines: list[bytes], definition: int, stop: int,
                    language: str) -> list[tuple[bytes, ...]]:
    """Per line of `lines` from `definition + 1` to `stop` (0-based, exclusive), the branches of
    the conditionals opened below the definition line that it is in, outermost first: a
    branch's own header line (`#elif X`, `elif X:`) is in it."""
    # Per open conditional: (its indentation (Python), the branch being read, its first one).
    open_: list[tuple[int, bytes, bytes]] = []
    found: list[tuple[bytes, ...]] = []
    shown: tuple[int, tuple[int, bytes, bytes] | None] = (0, None)
    branches: tuple[bytes, ...] = ()
    continued = False
    for line in itertools.islice(lines, definition + 1, stop):
        if language == "python":
            text = line.lstrip(b" \t")
            if text.strip() and text[:1] not in (b"#", b")", b"]", b"}"):
                indent = len(line) - len(text)
                clause = _PYTHON_BRANCH.match(line) if text.startswith(_CLAUSE_WORDS) else None
                word, rest = (clause.group(1), clause.group(2)) if clause is not None \
                    else (b"", b"")
                while open_ and (open_[-1][0] > indent or open_[-1][0] == indent and word
                                 not in (b"elif", b"else", b"except", b"finally")):
                    open_.pop()
                if word in (b"if", b"elif", b"case"):
                    said = _said(_condition(rest, b"not "), b"not ")
                    said = b"case " + said if word == b"case" else said
                elif word in (b"try", b"finally"):
                    said = word
                elif word == b"except":
                    said = b" ".join([word, *rest.split()])
                if word == b"else":
                    first = open_.pop()[2] if open_ and open_[-1][0] == indent else b""
                    open_.append((indent, b"else of " + first, first))
                elif word in (b"elif", b"except", b"finally"):
                    first = open_.pop()[2] if open_ and open_[-1][0] == indent else said
                    open_.append((indent, said, first))
                elif word:
                    open_.append((indent, said, said))
        elif continued or line.lstrip()[:1] == b"#":
            directive = None if continued else _C_DIRECTIVE.match(line)
            continued = line.rstrip().endswith(b"\\")
            word = directive.group(1) if directive is not None else b""
            rest = _C_COMMENT.sub(b"", directive.group(2)).rstrip(b" \t\r\n\\") \
                if directive is not None else b""
            if word in (b"if", b"ifdef", b"ifndef"):
                said = _said(_directive_condition(word, rest), b"!")
                open_.append((0, said, said))
            elif word in (b"elif", b"elifdef", b"elifndef") and open_:
                first = open_.pop()[2]
                open_.append((0, _said(_directive_condition(word, rest), b"!"), first))
            elif word == b"else" and open_:
                first = open_.pop()[2]
                open_.append((0, b"else of " + first, first))
            elif word == b"endif" and open_:
                open_.pop()
        # At most one branch opened per line, after those it closed: the same depth and the
        # same innermost branch are the same branches, made into a tuple once.
        if (len(open_), open_[-1] if open_ else None) != shown:
            shown = (len(open_), open_[-1] if open_ else None)
            branches = tuple(said for _, said, _ in open_)
        found.append(branches)
    return found


def _place_branch(lines: list[bytes], definition: int, start: int, end: int,
                  language: str, walked: dict[int, list[tuple[bytes, ...]]] | None = None,
                  reach: int = 0) -> tuple[bytes, ...]:
    """The branches (`_inner_branches`) a change replacing lines [start, end) of `lines` is in,
    inside the function defined at line `definition`: those of all its lines (an insertion:
    of the lines on both sides of it). `walked`: definition -> its `_inner_branches` as far
    as read for an earlier place of `lines`, read down to line `reach` (0-based, excluded)
    when first asked (a line's branches depend on the lines above it alone: the places of a
    function are read off one walk down it, not a walk each)."""
    first = max(definition + 1, start - 1 if start == end else start)
    stop = _place_stop(lines, start, end)
    if walked is None:
        inner = _inner_branches(lines, definition, stop, language)
    else:
        inner = walked.get(definition, [])
        if len(inner) < stop - definition - 1:
            inner = walked[definition] = _inner_branches(lines, definition, max(stop, reach),
                                                         language)
    branches = inner[first - definition - 1:max(stop - definition - 1, 0)]
    if not branches:
        return ()
    common = list(branches[0])
    for branch in branches[1:]:
        while tuple(common) != branch[:len(common)]:
            common.pop()
    return tuple(common)


def _place_stop(lines: list[bytes], start: int, end: int) -> int:
    """Where _place_branch's walk of a change replacing lines [start, end) ends (excluded)."""
    return min(len(lines), max(end, start + 1))


def _reaches(lines: list[bytes], places: list[tuple[int, int, list[int], Any]]
             ) -> dict[int, int]:
    """Per definition, where the walk down it ends for the furthest of `places` in it."""
    reach: dict[int, int] = {}
    for start, end, definitions, _ in places:
        if definitions:
            stop = _place_stop(lines, start, end)
            reach[definitions[0]] = max(reach.get(definitions[0], 0), stop)
    return reach


def _said_branch(name: bytes, branch: tuple[bytes, ...]) -> bytes:
    return name + b" (in its branch " + b", ".join(branch) + b")" if branch else name


def _another_branch(language: str, base_lines: list[bytes], base_c: CFile | None,
                    fix: list[tuple[int, int, list[int], bytes]], current_lines: list[bytes],
                    current_c: CFile | None,
                    carried: list[tuple[int, int, list[int], list[bytes]]]
                    ) -> tuple[bytes, bytes, int] | None:
    """`another_function` within one function: whether the carrying changes the fix's function
    in a branch of a conditional inside it (`#if`/`#elif`/`#else`, `if`/`elif`/`else`, a `try`'s
    clauses, a `case`) that is none of the fix's, while the fix's own branch is still in it with
    most of the code the fix is made on: (the fix's function and branch, the function and
    branch changed instead, the 1-based line of `current_lines` where), None otherwise. A
    branch nested in the fix's is the fix's; so is any branch where the fix changes its
    function outside every one. `fix`, `carried`: each place in a function, with its
    definitions and its function's name (or names) as another_function found them."""
    wanted: dict[tuple[bytes, tuple[bytes, ...]], tuple[bytes, set[bytes]]] = {}
    walked: dict[int, list[tuple[bytes, ...]]] = {}  # (_place_branch's, of base_lines)
    reach = _reaches(base_lines, fix)
    for start, end, definitions, name in fix:
        branch = _place_branch(base_lines, definitions[0], start, end, language, walked,
                               reach[definitions[0]])
        bare = _definition_name(base_lines, definitions[0], language, base_c) or b""
        code = wanted.setdefault((name, branch), (bare, set()))[1]
        code.update(line.strip() for line in
                    base_lines[max(0, start - _AROUND):end + _AROUND] if line.strip())
    if not any(branch for _, branch in wanted):
        return None  # (most fixes: no conditional inside the function around them)
    reached: set[tuple[bytes, tuple[bytes, ...]]] = set()
    elsewhere = None
    walked_current: dict[int, list[tuple[bytes, ...]]] = {}
    reach = _reaches(current_lines, carried)
    for start, end, definitions, names in carried:
        if not definitions:
            continue
        name = names[0]
        branch = _place_branch(current_lines, definitions[0], start, end, language,
                               walked_current, reach[definitions[0]])
        ours = [key for key in wanted if key[0] == name and branch[:len(key[1])] == key[1]]
        reached.update(ours)
        if not ours and elsewhere is None and any(key[0] == name for key in wanted):
            elsewhere = (_said_branch(name, branch), start + 1)
    if elsewhere is None:
        return None
    for name, branch in sorted(wanted.keys() - reached):
        bare, code = wanted[name, branch]
        if len(code & _bodies(current_lines, name, bare, language, current_c, branch)) * 2 \
                >= len(code):
            return _said_branch(name, branch), elsewhere[0], elsewhere[1]
    return None


def _qualified(names: list[bytes]) -> list[bytes]:
    """`_functions_of`'s names (innermost first) each qualified by what it is nested in,
    innermost first: `A.run`, `A` for a method `run` of class `A`. By the bare name, `run` of
    a class `Legacy` upstream added with the old body was the fix's own `A.run`, and git's
    clean merge into it passed."""
    outward = list(reversed(names))
    return [b".".join(outward[:k]) for k in range(len(outward), 0, -1)]


def unproven(repeated: list[RepeatedPlace], fp: FilePatch,
             content: bytes) -> list[RepeatedPlace]:
    """Of `repeated` (repeated_places of `fp` applied to `content`), those whose place the
    patch cannot prove: all of them unless its `index` line names `content` (then its header's
    line numbers are this file's, and nearness to them is the place). A patch without an
    `index` line (quilt's, `diff -u`'s) names no file: its line numbers may be any version's,
    as those of a patch made on another version are, and its places are marked `no_index`."""
    if not repeated:
        return []
    known = made_on(fp, content)
    if known:
        return []
    return [replace(r, no_index=True) for r in repeated] if known is None else repeated


def made_on(fp: FilePatch, content: bytes) -> bool | None:
    """Whether `content` is the file the patch was made on, by the pre-image blob id of its
    `index` line (then its header's line numbers are this file's); None without one."""
    found = _INDEX_LINE.search(fp.raw)
    if found is None:
        return None
    recorded = found.group(1)
    if not recorded.strip(b"0"):
        return None  # a creation's
    return _blob_id(content, len(recorded)).startswith(recorded)


def placed_at(content: bytes, fp: FilePatch, application: FileApplication,
              moved: dict[int, int]) -> bytes | None:
    """`application`'s content with the hunks of `moved` (index -> 1-based line, one of its
    RepeatedPlace candidates) placed there instead, each at the fuzz level it was applied
    with; None when the hunks would then overlap or leave their order."""
    lines = lines_of(content)
    out: list[bytes] = []
    done = 0
    for outcome in application.hunks:
        if outcome.at_line is None:
            continue
        cut = _fuzzed(fp.hunks[outcome.index], outcome.fuzz)
        assert cut is not None
        _, pre, post, _ = cut
        pos = moved.get(outcome.index, outcome.at_line) - 1
        if pos < done or not _matches(lines, pos, pre):
            return None
        out.extend(lines[done:pos])
        out.extend(post)
        done = pos + len(pre)
    out.extend(lines[done:])
    return b"".join(out)


def mapped_line(old: bytes, new: bytes, line: int, count: int) -> int | None:
    """Where the `count` lines at `line` (1-based) of `old` are in `new`, by the lines around
    them that each file has once (the anchors a patience diff aligns): the nearest such line
    above them and below them (or the file's start and end), when everything between the two
    is the same in both files. None when that does not say (no such anchors, or the lines
    between them changed): a 3-way merge's map is asked then, a git process. A repeated
    block in real code sits between lines each file has once; upstream's changes are
    elsewhere, mostly."""
    old_lines, new_lines = lines_of(old), lines_of(new)

    def only(lines: Lines, text: bytes) -> int | None:
        """Where `text` is in `lines` when it is there once: by a scan for it (the nearest
        lines are most often such lines already), by the whole index after a few."""
        if lines.indexed():
            first, last = lines.where()
            at = first.get(text)
            return at if at is not None and at == last[text] else None
        found = lines.positions(text)
        return found[0] if len(found) == 1 else None

    def anchor(k: int) -> int | None:
        """The line of `new` that is line `k` of `old`, both lines the only one of its kind."""
        text = old_lines[k]
        return None if only(old_lines, text) is None else only(new_lines, text)

    start = line - 1
    above, above_new = -1, -1
    for k in range(start - 1, -1, -1):
        found = anchor(k)
        if found is not None:
            above, above_new = k, found
            break
    below, below_new = len(old_lines), len(new_lines)
    for k in range(start + count, len(old_lines)):
        found = anchor(k)
        if found is not None:
            below, below_new = k, found
            break
    if above_new >= below_new or \
            old_lines[above + 1:below] != new_lines[above_new + 1:below_new]:
        return None
    return above_new + (start - above) + 1


def mapped_places(old: bytes, new: bytes, fp: FilePatch, old_application: FileApplication,
                  application: FileApplication, repeated: list[RepeatedPlace]
                  ) -> dict[int, int] | None:
    """For each hunk of `repeated` (placed in `new` by `application`), the line of `new` its
    place in `old` (where `old_application` put it) maps to by `mapped_line`, when that line
    is one of its candidates; None when the anchors do not decide for every one of them."""
    before = {o.index: o for o in old_application.hunks}
    now = {o.index: o for o in application.hunks}
    places = {}
    for r in repeated:
        was = before.get(r.index)
        if was is None or was.at_line is None or was.fuzz != now[r.index].fuzz:
            return None
        cut = _fuzzed(fp.hunks[r.index], was.fuzz)
        assert cut is not None
        line = mapped_line(old, new, was.at_line, len(cut[1]))
        if line not in r.candidates:
            return None
        places[r.index] = line
    return places
