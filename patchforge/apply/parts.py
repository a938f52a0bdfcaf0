"""The changes inside one hunk, and which of them a file has made: a fix landed in part.

git's diff puts two changes in one hunk when fewer than twice its context lines are between
them, so upstream can take one change of a hunk and not the other (a fix of lines 15 and 20,
line 15 landed). Landed detection judges whole hunks; a 3-way merge then takes the landed change
as made on both sides, and the moved patch no longer holds it. `changes_landed` tells such a
hunk apart, `with_changes` makes the hunk of those changes alone (on the patch's own base: the
other changes' removed lines are its context), the form a landed part is kept in.

A change is a run of `-`/`+` lines between context lines. Found only by exact lines: the file
has, at exactly one place, the hunk's lines with some of its changes made and the others not,
and neither the hunk's pre-image nor its post-image. A change taken with changes of upstream's
own (reformatted, or a context line between them changed too) matches no such mix: nothing is
said of it (the hunk's own verdict stands).
"""
from __future__ import annotations

from collections.abc import Collection

from patchforge.apply.diffparse import Hunk, format_hunk, line_content, line_kind
from patchforge.model.record import replace

# Past this many changes in one hunk the mixes (2**n) are not tried: nothing is said.
MAX_CHANGES = 6


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
    numbers unchanged, its new count following)."""
    lines = tuple(_kept_lines(hunk, keep))
    new_count = sum(1 for line in lines if line_kind(line) != b"-")
    made = replace(hunk, lines=lines, new_count=new_count, raw=b"")
    return replace(made, raw=format_hunk(made))


def _image(lines: list[bytes]) -> bytes:
    """The file bytes a hunk body's post-image is (its context and `+` lines)."""
    return b"".join(line_content(line) for line in lines if line_kind(line) != b"-")


def _places(content: bytes, image: bytes) -> int:
    """At how many line starts of `content` `image` is (0, 1, or 2 for more)."""
    found = 0
    at = content.find(image)
    while at >= 0:
        if at == 0 or content[at - 1] == 0x0A:
            found += 1
            if found == 2:
                break
        at = content.find(image, at + 1)
    return found


def changes_landed(hunk: Hunk, content: bytes | None) -> tuple[int, ...] | None:
    """The changes of a hunk of two or more that `content` has made, the others not: the one
    mix of them (some, not all) whose lines `content` has, at one place, where it has neither
    the hunk's pre-image nor its post-image. None otherwise: one change, more than
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
    return found


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
