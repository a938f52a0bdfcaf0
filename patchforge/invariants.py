"""`Keeps:` invariants: text a patch promises is present in its patched files.

A clean merge can still neutralise a fix (upstream moved the guarded code, a later patch undid
it, a context match landed it in the wrong function). Each `Keeps: <path>: <text>` line of a
patch header names a file of the patched result and text that must be in it; `re:<pattern>` makes
it a regular expression. Patterns are only ever matched, never executed.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from patchforge.errors import InputError

# Bounded so that a hostile pattern cannot make a check run away on a large file.
MAX_PATTERN = 512


@dataclass(frozen=True)
class Invariant:
    path: str
    text: str
    regex: bool

    def describe(self) -> str:
        return f"{self.path}: {'re:' if self.regex else ''}{self.text}"

    def holds(self, content: bytes | None) -> bool:
        if content is None:
            return False
        haystack = content.decode("utf-8", "surrogateescape")
        if self.regex:
            return re.search(self.text, haystack, re.M) is not None
        return self.text in haystack


def parse_invariants(patch, source: str = "<patch>") -> list[Invariant]:
    out = []
    for value in patch.get_all("Keeps"):
        for line in value.split("\n"):
            line = line.strip()
            if not line:
                continue
            path, sep, text = line.partition(": ")
            if not sep or not text.strip() or not path:
                raise InputError(f"Keeps: expected '<path>: <text>' (got {line!r})", path=source)
            text = text.strip()
            regex = text.startswith("re:")
            if regex:
                text = text[3:]
                if len(text) > MAX_PATTERN:
                    raise InputError("Keeps: regular expression too long", path=source)
                try:
                    re.compile(text)
                except re.error as exc:
                    raise InputError(f"Keeps: bad regular expression {text!r}: {exc}",
                                     path=source) from None
            out.append(Invariant(path.strip(), text, regex))
    return out


def check_patch_invariants(patch, read) -> list[str]:
    """Violations (as messages) of the patch's Keeps: lines; `read(path)` gives patched bytes."""
    problems = []
    for inv in parse_invariants(patch):
        if not inv.holds(read(inv.path)):
            problems.append(f"Keeps invariant broken: {inv.describe()} is not in the result")
    return problems
