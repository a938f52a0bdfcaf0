"""Diffstat for `show` and `list`: lines added and removed per file, computed with unidiff.

Owns the one import of python-unidiff. unidiff only has a text API, so the diff is decoded as
latin-1 (every byte maps to one character and back) and names are turned back into bytes, then
decoded UTF-8 with surrogateescape like every other path in patchforge.
"""
from __future__ import annotations

from unidiff import PatchSet
from unidiff.errors import UnidiffParseError

from patchforge.apply.diffparse import c_unquote
from patchforge.errors import InputError


def diffstat(diff: bytes, *, source: str = "<diff>") -> list[tuple[str, int, int]]:
    """[(path, added, removed), ...] in diff order; a deleted file is named by its old path."""
    try:
        patch = PatchSet(diff.decode("latin-1"))
    except UnidiffParseError as exc:
        raise InputError(f"cannot compute a diffstat: {exc}", path=source) from None
    out = []
    for pf in patch:
        name = pf.source_file if pf.is_removed_file else pf.target_file
        raw = name.encode("latin-1")
        if raw.startswith(b'"'):
            try:
                raw = c_unquote(raw)
            except ValueError:
                pass
        # unidiff keeps the a/ b/ prefixes on source_file/target_file; p1-strip them like
        # diffparse does.
        raw = raw.split(b"/", 1)[1] if b"/" in raw else raw
        out.append((raw.decode("utf-8", "surrogateescape"), pf.added, pf.removed))
    return out
