"""What a resolved file does to the changes made under its patch: a conflict resolved with the
patch's side kept the lines the patch was made on, and so undid, inside the patch, what an
earlier patch (or the upstream) changed there since.

Three versions of a file: `base`, what the patch was made on (the `|||||||` section of a
conflict's markers); `ours`, the file under the patch now (the series before it, or the new
upstream with the series so far); `new`, the file as resolved. Each change from `base` to
`ours` is held by `new` as in `base` (undone), as in `ours` (kept), or neither (changed again:
the patch's own change where both changed the same lines, which is the resolution's to make).
`import overlay` asks the same of a file made before a rebase (`changes_kept`)."""
from __future__ import annotations

from difflib import SequenceMatcher
from typing import NamedTuple


class Kept(NamedTuple):
    """One change from `before` to `old` (lines [i1, i2) of `before` became [j1, j2) of
    `old`), and how `new` holds it: "before", "old" or "neither"."""
    how: str
    i1: int
    i2: int
    j1: int
    j2: int


# A region with no line of its own on either side (nothing to anchor on) is aligned by difflib's
# exact search up to this many line pairs.
_SMALL_REGION = 250_000


def _blocks(a: list[bytes], b: list[bytes]) -> list[tuple[int, int, int]]:
    """The lines `a` and `b` share, as difflib's matching blocks (i, j, size), the last
    (len(a), len(b), 0). Aligned as patience diff does: the common start and end, then the
    lines each side has once (their longest common order), and the same within each gap
    between them; a gap without such a line is left to difflib when small. difflib alone
    took seconds on a file of a few thousand lines with repeated ones (blank lines, `return`),
    and a rebase's --continue asks this of every file it resolved."""
    from bisect import bisect_left

    pairs: list[tuple[int, int]] = []
    todo = [(0, len(a), 0, len(b))]
    while todo:
        alo, ahi, blo, bhi = todo.pop()
        while alo < ahi and blo < bhi and a[alo] == b[blo]:
            pairs.append((alo, blo))
            alo, blo = alo + 1, blo + 1
        while alo < ahi and blo < bhi and a[ahi - 1] == b[bhi - 1]:
            ahi, bhi = ahi - 1, bhi - 1
            pairs.append((ahi, bhi))
        if alo == ahi or blo == bhi:
            continue
        count: dict[bytes, list[int]] = {}
        for i in range(alo, ahi):
            seen = count.setdefault(a[i], [0, -1, 0, -1])
            seen[0] += 1
            seen[1] = i
        for j in range(blo, bhi):
            found = count.get(b[j])
            if found is not None:
                found[2] += 1
                found[3] = j
        unique = sorted((e[1], e[3]) for e in count.values() if e[0] == 1 and e[2] == 1)
        if not unique:
            # difflib's own heuristic (lines common in a long region taken as junk) past a
            # size where its exact search costs seconds.
            matcher = SequenceMatcher(None, a[alo:ahi], b[blo:bhi],
                                      autojunk=(ahi - alo) * (bhi - blo) > _SMALL_REGION)
            for x, y, size in matcher.get_matching_blocks():
                pairs.extend((alo + x + k, blo + y + k) for k in range(size))
            continue
        # The longest run of them in the same order on both sides (patience sorting).
        tops: list[int] = []
        top_at: list[int] = []
        before: list[int] = []
        for index, (_, j) in enumerate(unique):
            at = bisect_left(tops, j)
            before.append(top_at[at - 1] if at else -1)
            if at == len(tops):
                tops.append(j)
                top_at.append(index)
            else:
                tops[at] = j
                top_at[at] = index
        anchors = []
        index = top_at[-1]
        while index >= 0:
            anchors.append(unique[index])
            index = before[index]
        anchors.reverse()
        pi, pj = alo, blo
        for i, j in anchors:
            todo.append((pi, i, pj, j))
            pairs.append((i, j))
            pi, pj = i + 1, j + 1
        todo.append((pi, ahi, pj, bhi))
    pairs.sort()
    out: list[tuple[int, int, int]] = []
    for i, j in pairs:
        if out and out[-1][0] + out[-1][2] == i and out[-1][1] + out[-1][2] == j:
            out[-1] = (out[-1][0], out[-1][1], out[-1][2] + 1)
        else:
            out.append((i, j, 1))
    out.append((len(a), len(b), 0))
    return out


def _opcodes(a: list[bytes], b: list[bytes]) -> list[tuple[str, int, int, int, int]]:
    """difflib's get_opcodes, of `_blocks`' alignment."""
    out: list[tuple[str, int, int, int, int]] = []
    i = j = 0
    for ai, bj, size in _blocks(a, b):
        tag = "replace" if i < ai and j < bj else "delete" if i < ai else \
            "insert" if j < bj else ""
        if tag:
            out.append((tag, i, ai, j, bj))
        if size:
            out.append(("equal", ai, ai + size, bj, bj + size))
        i, j = ai + size, bj + size
    return out


def _untouched(opcodes, lo: int, hi: int, *, beside: bool = False) -> bool:
    """Lines [lo, hi) of one side are in the other as they are, and nothing is put among them
    (nor, for an empty range, at its place). `beside`: for an empty range, lines a change
    next to its place adds count as put there too (a line replaced by two is, to an
    alignment, no different from a line kept and one put after it)."""
    for tag, i1, i2, j1, j2 in opcodes:
        if tag == "equal":
            continue
        if i1 < hi and i2 > lo:
            return False
        if i1 == i2 and (lo < i1 < hi or lo == hi == i1):
            return False
        if beside and lo == hi and j2 > j1 and i1 <= lo <= i2:
            return False
    return True


def changes_kept(before: bytes, old: bytes, new: bytes) -> list[Kept]:
    """Every change from `before` to `old`, with how `new` holds it."""
    before_lines, old_lines, new_lines = (data.splitlines(keepends=True)
                                          for data in (before, old, new))
    from_before = _opcodes(before_lines, new_lines)
    from_old = _opcodes(old_lines, new_lines)
    out = []
    for tag, i1, i2, j1, j2 in _opcodes(before_lines, old_lines):
        if tag == "equal":
            continue
        how = "before" if _untouched(from_before, i1, i2) else \
            "old" if _untouched(from_old, j1, j2) else "neither"
        out.append(Kept(how, i1, i2, j1, j2))
    return out


class Undone(NamedTuple):
    """A change made under a patch that its resolved file undoes: at `line` (1-based, of the
    resolved file) it holds `back` (the lines the patch was made on; none where the change
    added lines) where the file under the patch has `instead` (none where it took lines
    out)."""
    line: int
    back: tuple[bytes, ...]
    instead: tuple[bytes, ...]


def undone_changes(base: bytes, ours: bytes, new: bytes) -> list[Undone]:
    """The changes from `base` to `ours` that `new` holds as in `base`: a resolution that put
    back what the patch was made on over what changed under it since."""
    base_lines, ours_lines, new_lines = (data.splitlines(keepends=True)
                                         for data in (base, ours, new))
    from_ours = _opcodes(ours_lines, new_lines)
    # Held as in `base` and not as in `ours` too (lines alike on both sides, blank ones, can
    # leave an alignment that says both); a change of blank lines alone undoes no fix. Lines
    # taken out under the patch and put back by the resolution beside the patch's own change
    # (`c` made `C`, `d` taken out, resolved `C d`) are not as in `ours`: `beside`.
    found = [k for k in changes_kept(base, ours, new) if k.how == "before"
             and not _untouched(from_ours, k.j1, k.j2, beside=True)
             and any(line.strip() for line in (*base_lines[k.i1:k.i2],
                                               *ours_lines[k.j1:k.j2]))]
    if not found:
        return []
    blocks = _blocks(base_lines, new_lines)
    out = []
    for k in found:
        # Where lines [i1, i2) of `base` are in `new`: they are there as they are.
        at = next((b + k.i1 - a for a, b, size in blocks if a <= k.i1 < a + size), None)
        if at is None:  # an empty range: the line after it, or the end
            at = next((b + k.i1 - a for a, b, size in blocks if a <= k.i1 <= a + size),
                      len(new_lines))
        out.append(Undone(at + 1, tuple(base_lines[k.i1:k.i2]), tuple(ours_lines[k.j1:k.j2])))
    return out


def said(line: bytes) -> str:
    return line.rstrip(b"\r\n").decode("utf-8", "replace")


def _lines(lines: tuple[bytes, ...]) -> str:
    shown = " / ".join(f"`{said(line).strip()}`" for line in lines[:2] if line.strip())
    return shown + (" / ..." if len(lines) > 2 else "") if shown else "blank lines"


def describe(path: str, undone: Undone, by: str) -> str:
    """`path` line N: ... in words: what the resolution holds there and whose change it
    undoes (`by`: an earlier patch, or the upstream)."""
    if undone.back and undone.instead:
        what = (f"puts back {_lines(undone.back)} where {by} has {_lines(undone.instead)}")
    elif undone.back:
        what = f"puts back {_lines(undone.back)}, which {by} took out"
    else:
        what = f"takes out {_lines(undone.instead)}, which {by} put there"
    return f"{path} line {undone.line}: {what}"


def who_changed(path: str, undone: Undone, earlier, fallback: str) -> str:
    """The last of `earlier` ([(name, parsed patch)], in series order) whose change to `path`
    adds a line of `undone.instead` or takes out one of `undone.back` (blank lines say
    nothing), else `fallback` (the upstream)."""
    wanted_added = {line.strip() for line in undone.instead if line.strip()}
    wanted_removed = {line.strip() for line in undone.back if line.strip()}
    for name, patch in reversed(list(earlier)):
        for fp in getattr(patch, "file_patches", ()):
            if path not in (fp.old_path, fp.new_path):
                continue
            for hunk in getattr(fp, "hunks", ()):
                for line in hunk.lines:
                    body = line[1:].strip()
                    if (line[:1] == b"+" and body in wanted_added) or \
                            (line[:1] == b"-" and body in wanted_removed):
                        return name
    return fallback


class KeptOver(NamedTuple):
    """A block where the patch and the change made under it changed the same lines, resolved
    with the patch's side whole: lines [first, last] (1-based, of the resolved file) are the
    patch's, where the file under the patch has `instead` (what the patch was made on: `back`)."""
    first: int
    last: int
    instead: tuple[bytes, ...]
    back: tuple[bytes, ...]


def _changed(a: list[bytes], b: list[bytes]) -> list[tuple[int, int, int, int]]:
    return [(i1, i2, j1, j2) for tag, i1, i2, j1, j2 in _opcodes(a, b) if tag != "equal"]


def _at(changes: list[tuple[int, int, int, int]], i: int, *, end: bool) -> int:
    """Where the start (or `end`) of a block at line boundary `i` of the first side is on the
    second: shifted by the changes before it (for its end, the block's own too, lines put in
    at its end among them: the blocks join every change that touches them)."""
    shift = 0
    for i1, i2, j1, j2 in changes:
        if i1 < i or (end and i1 == i):
            shift = j2 - i2
    return i + shift


def patch_side_kept(base: bytes, ours: bytes, theirs: bytes, new: bytes) -> list[KeptOver]:
    """The blocks a 3-way merge of `ours` and `theirs` (the patch applied to `base`) conflicts
    on, where both changed the same lines (or lines next to each other), that `new` resolves
    with the patch's side as it is, between the same lines of `ours` around it: the change
    made under the patch is undone there. Only blocks so kept whole are said; one that holds
    `ours`' lines, both, or lines of its own is not, nor a patch's side that holds every change
    made under it as `ours` has it (the patch made upstream's change too, beside its own)."""
    b, o, t, n = (data.splitlines(keepends=True) for data in (base, ours, theirs, new))
    under, own = _changed(b, o), _changed(b, t)
    spans = sorted([(i1, i2, 0) for i1, i2, _, _ in under] + [(i1, i2, 1) for i1, i2, _, _ in own])
    blocks: list[list[int]] = []  # [start, end, sides]
    for i1, i2, side in spans:
        if blocks and i1 <= blocks[-1][1]:
            blocks[-1][1] = max(blocks[-1][1], i2)
            blocks[-1][2] |= 1 << side
        else:
            blocks.append([i1, i2, 1 << side])
    to_new = [(i1, i2) for tag, i1, i2, _, _ in _opcodes(o, n) if tag == "equal"]
    equal = _blocks(o, n)
    out = []
    for start, end, sides in blocks:
        if sides != 3:
            continue
        o1, o2 = _at(under, start, end=False), _at(under, end, end=True)
        t1, t2 = _at(own, start, end=False), _at(own, end, end=True)
        if o[o1:o2] == t[t1:t2] or not any(line.strip() for line in t[t1:t2]):
            continue
        # The lines of `ours` around the block, each where `new` has it as it is.
        before = o1 == 0 or any(i1 <= o1 - 1 < i2 for i1, i2 in to_new)
        after = o2 == len(o) or any(i1 <= o2 < i2 for i1, i2 in to_new)
        if not (before and after):
            continue
        n1 = 0 if o1 == 0 else next(y + o1 - 1 - x for x, y, size in equal
                                    if x <= o1 - 1 < x + size) + 1
        n2 = len(n) if o2 == len(o) else next(y + o2 - x for x, y, size in equal
                                              if x <= o2 < x + size)
        # A patch's side that made upstream's change too (the same line, with a line of its
        # own beside it) undoes nothing there: every change from the base to `ours` in the
        # block is held as `ours` has it, and no line `ours` took out of the block is back (a
        # base line kept beside upstream's new one is that line put back: changes_kept reads
        # a line next to the change as untouched).
        if n[n1:n2] != t[t1:t2]:
            continue
        taken_out = set(b[start:end]) - set(o[o1:o2])
        if taken_out & set(t[t1:t2]) or not all(
                k.how == "old" for k in changes_kept(b"".join(b[start:end]),
                                                     b"".join(o[o1:o2]), b"".join(t[t1:t2]))):
            out.append(KeptOver(n1 + 1, n2, tuple(o[o1:o2]), tuple(b[start:end])))
    return out


def describe_kept_over(path: str, kept: KeptOver, by: str) -> str:
    """`path` lines N-M: ... in words, for a note: the patch's side kept whole over `by`'s
    change of the same lines."""
    lines = f"line {kept.first} is" if kept.first == kept.last else \
        f"lines {kept.first}-{kept.last} are"
    changed = f"to {_lines(kept.instead)}" if kept.instead else "by taking them out"
    return (f"{path} {lines} the patch's side kept whole, where {by} changed the same "
            f"lines ({changed}): the resolution undoes that change there")
