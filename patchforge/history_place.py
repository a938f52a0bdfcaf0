"""Where the commit the history names made a patch's change: at the fix's own place, or away.

The history (history.py) matches a commit's change blocks to the patch's without their places:
a commit that makes the fix's line in another function of the file (a twin, an `else:` branch
instead of the `if`, another YAML section), while it rewrites the fix's own lines its own way,
"makes the change" as much as the commit that fixed the own place. This asks the commit's own
diff of the file where it made each block of a hunk, against where the hunk's block belongs in
the commit's parent: the hunk's lines in the base file (placed as the overlays place them,
detect.OwnPlaces.base_start) carried to the parent by git's diff of the two files (upstream's
changes before the commit). Asking the commit rather than the target keeps landings upstream
changed again later (superseded): the commit made the change at its place, whatever came
after.

A block is made at its place when the parent, with the commit's block made where the commit
made it, reads as the parent with it made at the hunk's block's place (whitespace ignored, as
the history compares): the same lines at the same place, or slid over lines equal to its own.
The place of a hunk's block is between the nearest lines of the hunk above and below it that
the diff keeps: one place where upstream changed nothing next to the block before the commit,
anywhere between them where it put lines in there or rewrote the lines next to it. The hunk's
own place must be there in the parent (detect._context_kept). Where
nothing tells the place (the base file missing, the hunk not placed there, the code rewritten
or moved before the commit, a diff git takes for binary), nothing is said: the history stands.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from patchforge.apply.diffparse import split_lines
from patchforge.detect import OwnPlaces, _context_kept, _kinds
from patchforge.patterns import on_first_use

if TYPE_CHECKING:
    from patchforge.detect import PlaceDiffs

_WHITESPACE = b" \t\n\r\x0b\x0c"
_HUNK_HEADER = on_first_use(rb"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")

# A change block with where it is: (pre-image line it starts at, 0-based, its removed lines,
# its added lines, both without whitespace, and, for a commit's block, its first line in the
# commit's version of the file).
Placed = tuple[int, tuple[bytes, ...], tuple[bytes, ...], int]


def _strip(line: bytes) -> bytes:
    return line.translate(None, _WHITESPACE)


def commit_blocks(chunk: bytes) -> list[Placed]:
    """The change blocks of one file's diff in a commit (`git diff-tree -p`'s section of that
    file, its header and all), split as history.blocks_of_lines splits them, each with the
    parent's line it starts at and the commit's line its added lines start at (0-based)."""
    body = chunk.split(b"\n@@", 1)
    if len(body) < 2:
        return []
    found: list[Placed] = []
    removed: list[bytes] = []
    added: list[bytes] = []
    start = (0, 0)
    old = new = 0

    def close() -> None:
        if removed or added:
            found.append((start[0], tuple(removed), tuple(added), start[1]))
            removed.clear()
            added.clear()

    for line in (b"@@" + body[1]).split(b"\n"):
        header = _HUNK_HEADER.match(line)
        kind = line[:1]
        if header is not None:
            close()
            # A count of 0 puts the start on the line before (`-5,0`: after line 5).
            old = int(header[1]) - (0 if header[2] == b"0" else 1)
            new = int(header[3]) - (0 if header[4] == b"0" else 1)
        elif kind in (b"-", b"+"):
            if not removed and not added:
                start = (old, new)
            if kind == b"-":
                removed.append(_strip(line[1:]))
                old += 1
            else:
                added.append(_strip(line[1:]))
                new += 1
        elif kind == b"\\":
            continue  # "\ No newline at end of file"
        else:
            close()
            old += 1
            new += 1
    close()
    return found


def hunk_blocks(hunk) -> list[Placed]:
    """The hunk's change blocks (as history.blocks_of_file_patch splits them), each with the
    pre-image line (counted from the hunk's first) it starts at."""
    found: list[Placed] = []
    removed: list[bytes] = []
    added: list[bytes] = []
    at = start = 0
    for kind, line in zip(_kinds(hunk), hunk.lines):
        if kind in (b"-", b"+"):
            if not removed and not added:
                start = at
            (removed if kind == b"-" else added).append(_strip(line[1:]))
            at += kind == b"-"
        elif kind == b"\\":
            continue
        else:
            if removed or added:
                found.append((start, tuple(removed), tuple(added), 0))
                removed, added = [], []
            at += 1
    if removed or added:
        found.append((start, tuple(removed), tuple(added), 0))
    return found


def _line_map(blocks: list[tuple[int, int, int, int]], start: int, end: int) -> dict[int, int]:
    """Base lines [start, end) that git's diff (`blocks`, changed_blocks') keeps -> their line
    in the other file (0-based)."""
    kept: dict[int, int] = {}
    for line in range(start, end):
        shift = 0
        for o_start, o_end, _, n_end in blocks:
            if o_end <= line:
                shift = n_end - o_end  # (lines put in right before it too)
            elif o_start <= line:
                break  # removed or rewritten
            else:
                kept[line] = line + shift
                break
        else:
            kept[line] = line + shift
    return kept


def _same_result(parent: list[bytes], block: Placed, at: int) -> bool:
    """Whether making `block` (a commit's) where the commit made it gives the parent's lines
    (`parent`, whitespace removed) that making it at line `at` gives."""
    there, removed, added, _ = block
    if there == at:
        return True
    if at < 0 or at + len(removed) > len(parent):
        return False
    lo, hi = min(there, at), max(there, at) + len(removed)
    return parent[lo:there] + list(added) + parent[there + len(removed):hi] == \
        parent[lo:at] + list(added) + parent[at + len(removed):hi]


def made_at(fp, index: int, hunk, base: bytes | None, parent: bytes | None, chunk: bytes | None,
            apply, places: PlaceDiffs) -> tuple[str, str] | None:
    """Where a commit made hunk `index` of `fp`: ("here", "") when it made each of the hunk's
    blocks at the hunk's own place in its parent's file (`parent`), ("away", "line N of the
    commit's file, the own place at line M of its parent's") when it made one only elsewhere,
    None when nothing tells (see the module's docstring). `chunk`: the commit's diff of the
    file; `base`: the patch's base file; `apply` and `places`: the walk's (the base file's
    hunks are placed as the overlays place them, the base -> parent diff is made once)."""
    if base is None or parent is None or chunk is None:
        return None
    theirs = commit_blocks(chunk)
    mine = hunk_blocks(hunk)
    if not theirs or not mine:
        return None
    own = OwnPlaces(fp, base, parent, apply, places)
    start = own.base_start(index)
    if start is None:
        return None
    blocks = [] if base == parent else places.blocks(base, parent)
    if blocks is None:
        return None
    kinds = [kind for kind in _kinds(hunk) if kind in (b" ", b"-")]  # the pre-image
    kept = _line_map(blocks, start, start + len(kinds) + 1)
    if not _context_kept(hunk, kinds, {k - start for k in kept if k < start + len(kinds)}):
        return None  # the own place is gone before the commit: it says nothing of a place
    lines = [_strip(line) for line in split_lines(parent)]
    for at, removed, added, _ in mine:
        same = [b for b in theirs if b[1] == removed and b[2] == added]
        if not same:
            return None  # not this commit's block: the history matched another way
        # The block's place in the parent: after the nearest line above it that the diff
        # keeps and before the nearest one below it (the block's first removed line, or the
        # line after what it adds): one place where upstream changed nothing there before
        # the commit, any between them where it put lines in or rewrote them; with lines
        # kept on one side only, next to those.
        above = [kept[start + k] + 1 for k in range(at) if start + k in kept]
        below = [kept[start + k] for k in range(at, len(kinds) + 1) if start + k in kept]
        if not above and not below:
            return None
        lo = above[-1] if above else below[0]
        hi = below[0] if below else lo
        if not any(lo <= b[0] <= hi or _same_result(lines, b, lo) or _same_result(lines, b, hi)
                   for b in same):
            where = f"line {lo + 1}" if lo == hi else f"lines {lo + 1}-{hi}"
            return "away", f"line {same[0][3] + 1} of its file, the own place at {where} " \
                "of its parent's"
    return "here", ""
