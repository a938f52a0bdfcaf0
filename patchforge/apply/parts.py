"""The changes inside one hunk, and which of them a file has made: a fix landed in part.

git's diff puts two changes in one hunk when fewer than twice its context lines are between
them, so upstream can take one change of a hunk and not the other (a fix of lines 15 and 20,
line 15 landed). Landed detection judges whole hunks; a 3-way merge then takes the landed change
as made on both sides, and the moved patch no longer holds it. `changes_landed` tells such a
hunk apart, `with_changes` makes the hunk of those changes alone (on the patch's own base: the
other changes' removed lines are its context), the form a landed part is kept in.

A change is a run of `-`/`+` lines between context lines. Found only by exact lines: the file
has, at exactly one place, the hunk's lines with some of its changes made and the others not,
and neither the hunk's pre-image nor its post-image. Where no mix and neither image is there at
all (upstream edited a context line between the changes too: a fix of lines 15 and 20 whose
line-15 change landed in the commit that also changed line 17), each change is aligned on its
own (`_aligned`): its lines made or not between its own two nearest context lines, at exactly
one place in the file and in one form only, the places in the hunk's order and as far apart as
in the hunk (give or take MAX_DRIFT lines), and no change left unmade has its added lines
anywhere in the file. A change taken with changes of upstream's own (reformatted, one change
made another way), one whose own context line upstream changed, a line found twice, or code
moved away from the rest: nothing is said of it (the hunk's own verdict stands).
"""
from __future__ import annotations

from collections.abc import Collection

from patchforge.apply.diffparse import Hunk, format_hunk, line_content, line_kind
from patchforge.model.record import replace

# Past this many changes in one hunk the mixes (2**n) are not tried: nothing is said.
MAX_CHANGES = 6
# How many lines more or fewer than the hunk has between two of its changes the file may have
# there, each change aligned on its own: upstream's edit of the lines between (a line added or
# taken out, a comment); farther apart, the code was moved, and the changes are not one place's.
MAX_DRIFT = 6


def changes_of(hunk: Hunk) -> list[tuple[int, int]]:
    """Each change of the hunk: (first, end) indices into `hunk.lines` of a run of `-`/`+`
    lines between context lines."""
    runs: list[tuple[int, int]] = []
    start = None
    for k, line in enumerate(hunk.lines):
        if line_kind(line) == b" ":
            if start is not None:
                runs.append((start, k))
                start = None
        elif start is None:
            start = k
    if start is not None:
        runs.append((start, len(hunk.lines)))
    return runs


def _kept_lines(hunk: Hunk, keep: Collection[int]) -> list[bytes]:
    """The hunk's body lines making only the changes `keep` names (changes_of indices): the
    other changes' removed lines become context, their added lines go."""
    owner: dict[int, int] = {}
    for n, (first, end) in enumerate(changes_of(hunk)):
        for k in range(first, end):
            owner[k] = n
    lines = []
    for k, line in enumerate(hunk.lines):
        change = owner.get(k)
        if change is None or change in keep:
            lines.append(line)
        elif line_kind(line) == b"-":
            lines.append(b" " + line[1:])
    return lines


def with_changes(hunk: Hunk, keep: Collection[int]) -> Hunk:
    """The hunk with only the changes `keep` names, on the same pre-image (its old lines and
    numbers, but the context beyond the hunk's own on either side, unchanged; its new count
    following).

    The changes left out become context, which must not make either side's context longer
    than the diff's (the hunk's longer side): unequal context says the hunk is at the file's
    start or end (GNU patch, git apply and our own apply read it so), and the hunk of a
    `return` line kept with the `x = 0` line above it as five lines of context failed to apply
    in reverse where it had landed. So on both sides, the edge-of-file one too: a hunk at line 1
    whose first change is left out is kept at line 1 only while its context there stays shorter
    than after it (it still says "the file's start"), else trimmed to as much as after it, and
    then placed as a hunk in mid-file is; the same at the file's end."""
    lines = list(_kept_lines(hunk, keep))
    context = max(hunk.leading_context, hunk.trailing_context)
    lead = max(_run_of_context(lines) - context, 0)
    trail = max(_run_of_context(lines[::-1]) - context, 0)
    lines = lines[lead:len(lines) - trail]
    old_count = sum(1 for line in lines if line_kind(line) != b"+")
    new_count = sum(1 for line in lines if line_kind(line) != b"-")
    made = replace(hunk, lines=tuple(lines), old_start=hunk.old_start + lead,
                   new_start=hunk.new_start + lead, old_count=old_count, new_count=new_count,
                   raw=b"")
    return replace(made, raw=format_hunk(made))


def _run_of_context(lines: list[bytes]) -> int:
    """How many context lines `lines` starts with."""
    n = 0
    for line in lines:
        if line_kind(line) != b" ":
            break
        n += 1
    return n


def _image(lines: list[bytes]) -> bytes:
    """The file bytes a hunk body's post-image is (its context and `+` lines)."""
    return b"".join(line_content(line) for line in lines if line_kind(line) != b"-")


def _places(content: bytes, image: bytes) -> int:
    """At how many line starts of `content` `image` is (0, 1, or 2 for more)."""
    return len(_starts(content, image))


def _starts(content: bytes, image: bytes) -> list[int]:
    """The offsets of the line starts of `content` at which `image` is, up to two."""
    found: list[int] = []
    at = content.find(image)
    while at >= 0 and len(found) < 2:
        if at == 0 or content[at - 1] == 0x0A:
            found.append(at)
        at = content.find(image, at + 1)
    return found


def changes_landed(hunk: Hunk, content: bytes | None) -> tuple[int, ...] | None:
    """The changes of a hunk of two or more that `content` has made, the others not: the one
    mix of them (some, not all) whose lines `content` has, at one place, where it has neither
    the hunk's pre-image nor its post-image; where it has no mix and neither image at all, the
    changes each aligned on its own (`_aligned`). None otherwise: one change, more than
    MAX_CHANGES, a "no newline" end, two mixes there, a mix at two places, or none."""
    if content is None or hunk.old_no_newline or hunk.new_no_newline:
        return None
    runs = changes_of(hunk)
    if not 2 <= len(runs) <= MAX_CHANGES:
        return None
    everything = (1 << len(runs)) - 1
    found = None
    for mask in range(everything + 1):
        keep = [n for n in range(len(runs)) if mask >> n & 1]
        image = _image(_kept_lines(hunk, keep))
        there = _places(content, image) if image else 2
        if not there:
            continue
        if mask in (0, everything) or there > 1 or found is not None:
            return None
        found = tuple(keep)
    return found if found is not None else _aligned(hunk, runs, content)


def _aligned(hunk: Hunk, runs: list[tuple[int, int]], content: bytes) -> tuple[int, ...] | None:
    """The changes `content` has made, the others not, each change aligned on its own: its
    removed lines (not made) or its added lines (made) between the context line just above it
    and the one just below, found at exactly one line start of `content`, in one of the two
    forms only. None unless every change is so found, some made and some not, in the hunk's
    order with as many lines between each two as the hunk has (give or take MAX_DRIFT), and no
    change left unmade has its added lines anywhere in `content` (upstream may have made it
    elsewhere, or its own way). Asked where no mix of the changes is there whole: upstream
    edited the lines between them."""
    lines = hunk.lines
    readings = []  # (made, the line (from 1) in `content` of its context line above, its lines)
    for first, end in runs:
        if first == 0 or end == len(lines):
            return None  # a change at the hunk's edge has no own context line on that side
        above, below = line_content(lines[first - 1]), line_content(lines[end])
        if not above.endswith(b"\n") or not below.endswith(b"\n"):
            return None
        hits = []
        for done, kind in ((False, b"-"), (True, b"+")):
            side = b"".join(line_content(line) for line in lines[first:end]
                            if line_kind(line) == kind)
            for at in _starts(content, above + side + below):
                hits.append((done, content.count(b"\n", 0, at) + 1, side.count(b"\n")))
        if len(hits) != 1:
            return None  # not there, or two readings (two places, or both forms)
        readings.append(hits[0])
    made = tuple(n for n, (done, _, _) in enumerate(readings) if done)
    if not made or len(made) == len(runs):
        return None
    for n in range(1, len(runs)):
        between = runs[n][0] - runs[n - 1][1]
        there = readings[n][1] - (readings[n - 1][1] + readings[n - 1][2])
        if there < 1 or abs(there - between) > MAX_DRIFT:
            return None
    for n, (first, end) in enumerate(runs):
        added = b"".join(line_content(line) for line in lines[first:end]
                         if line_kind(line) == b"+")
        if n not in made and added and _places(content, added):
            return None
    return made


def parts_said(patch, parts: dict) -> str:
    """What is said of a fix with changes inside a hunk landed upstream and others not
    (judge.Judgement.parts: a path -> {hunk index: the changes landed}): "landed in part:
    pkg/a.py hunk 1: upstream has 1 of its 2 changes, not the others" (`status --against`'s
    evidence, `pr`'s detail)."""
    said = [f"{path} hunk {index + 1}: upstream has {landed} of its {total} changes, not the "
            f"others" for path, index, landed, total in parts_landed(patch, parts)]
    return "landed in part: " + "; ".join(said)


def parts_landed(patch, parts: dict) -> list[tuple[str, int, int, int]]:
    """(path, hunk index, changes landed, changes of the hunk) for each hunk of `patch` that
    `parts` (judge.Judgement.parts) has, in the patch's order: what parts_said and a rebase's
    words of a landed part (rebase.engine.part_words) say."""
    found = []
    for fp in patch.file_patches:
        path = fp.source_path if fp.is_rename else fp.path
        for index, changes in sorted((parts.get(path) or {}).items()):
            found.append((path, index, len(changes), len(changes_of(fp.hunks[index]))))
    return found
