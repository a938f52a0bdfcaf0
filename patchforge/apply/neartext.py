"""Code read the way a formatter leaves it the same (near text).

A formatter run re-wraps a call, turns `'` into `"`, writes `0` as `0.0`, adds a trailing
comma; upstream taking a fix its own way does the same. Compared as near text (near_lines: no
whitespace, one quote, one number spelling, no trailing comma) such code reads alike, and a
run of added lines is found from a line's start to a line's end, never inside another
statement (NearText). Landed detection's kept-fix rules (reverts.py) read moves this way.
"""
from __future__ import annotations

from patchforge.patterns import on_first_use

_NUMBER = on_first_use(rb"(?<![\w.])(\d+)\.(\d*?)0+(?![\w.])")
_TRAILING_COMMA = on_first_use(rb",(?=[)\]}])")


def near_lines(lines) -> list[bytes]:
    """Each line as code that a formatter re-wrapped or re-spelled reads the same, the empty
    ones left out: number spelling (`0.0` as `0`, `1.50` as `1.5`), quotes (`'` as `"`), no
    whitespace, no comma before a closing bracket (black's trailing comma, also at a line's
    end before a line that closes)."""
    return [line for _, line in _near_numbered(lines)]


def _near_numbered(lines) -> list[tuple[int, bytes]]:
    """(its index, near_lines' text) of each line that is not empty so read."""
    out = [(k, text) for k, line in enumerate(lines) if (text := _TRAILING_COMMA.sub(
        b"", b"".join(_NUMBER.sub(lambda m: m[1] + (b"." + m[2] if m[2] else b""), line)
                      .replace(b"'", b'"').split())))]
    return [(n, line[:-1]) if line.endswith(b",") and k + 1 < len(out) and
            out[k + 1][1][:1] in (b")", b"]", b"}") else (n, line)
            for k, (n, line) in enumerate(out)]


class NearText:
    """A file's near_lines as one text, and where its lines begin and end in it: a run of
    code is counted only from a line's start to a line's end (a re-wrap moves code across
    lines, never into the middle of another statement: `str(activation),` is not the
    `(str(activation),)` of another line)."""

    def __init__(self, content: bytes) -> None:
        lines = _near_numbered(content.splitlines())
        self.flat = b"".join(line for _, line in lines)
        self.starts: dict[int, int] = {}  # where a line begins in `flat` -> its index
        self.ends: set[int] = set()
        at = 0
        for n, line in lines:
            self.starts[at] = n
            at += len(line)
            self.ends.add(at)

    def _found(self, run: bytes):
        """Where `run` is in the text from a line's start to a line's end."""
        at = self.flat.find(run)
        while at >= 0:
            if at in self.starts and at + len(run) in self.ends:
                yield at
            at = self.flat.find(run, at + 1)

    def count(self, run: bytes) -> int:
        """How many times `run` is in the text from a line's start to a line's end."""
        return sum(1 for _ in self._found(run))

    def lines_at(self, run: bytes) -> list[int]:
        """The lines (from 1) of the file where `run` begins, as count finds it."""
        return [self.starts[at] + 1 for at in self._found(run)]


def near_runs(hunk, kind: bytes = b"+") -> list[bytes]:
    """Each run of consecutive lines a hunk adds (`kind` "-": removes) as one text of its
    near_lines, the runs of 4 bytes or more: a re-wrap moves code across lines, never out of
    its run. The line after a run decides its last comma, as it does in the file."""
    from patchforge.apply.diffparse import line_content, line_kind

    runs: list[list[bytes]] = [[]]
    ends: list[bytes] = []
    for line in hunk.lines:
        if line_kind(line) == kind:
            runs[-1].append(line_content(line))
        elif runs[-1]:
            ends.append(line_content(line))
            runs.append([])
    found = []
    for k, run in enumerate(runs):
        lines = near_lines(run + ends[k:k + 1])
        text = b"".join(lines[:len(near_lines(run))])
        if len(text) >= 4:
            found.append(text)
    return found



def near_flat(content: bytes) -> bytes:
    """`content` as one text of near_lines' reading without its line ends: a run's near text
    is in it wherever NearText counts it (and may be where it does not: a first search)."""
    return _TRAILING_COMMA.sub(b"", b"".join(_NUMBER.sub(
        lambda m: m[1] + (b"." + m[2] if m[2] else b""), content).replace(b"'", b'"').split()))
