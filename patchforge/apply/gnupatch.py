"""git's diffs as GNU patch (and so `quilt push`) reads them, and back.

git writes a name with a space unquoted (`diff --git a/my file.py b/my file.py`). Where a file's
section has `---`/`+++` lines, git ends them with a tab and GNU patch takes the name from them;
a section of headers only (a mode change, a pure rename or copy, an empty file created or
deleted) has none, and GNU patch cuts such a name at its first space ("can't find file to
patch", "Cannot rename file without two valid file names"). Both git and GNU patch read a name
in double quotes, so `export --quilt` writes those names quoted (`for_gnu_patch`), and
`import quilt` takes them back as git writes them (`as_git_writes`): git quotes a name only for a
character it must escape, so a quoted name with no backslash in it was quoted here.
"""
from __future__ import annotations

import re

_HEADER = re.compile(rb"(old mode|new mode|deleted file mode|new file mode|similarity index|"
                     rb"dissimilarity index|index|rename from|rename to|copy from|copy to) ")
_NAMED = re.compile(rb"(rename from|rename to|copy from|copy to) (.*)")


def for_gnu_patch(diff: bytes) -> bytes:
    """`diff` with the names of each header-only section that hold a space written in quotes."""
    return _rewrite(diff, quoted=True)


def as_git_writes(diff: bytes) -> bytes:
    """`diff` with the names `for_gnu_patch` quoted written back as git writes them."""
    return _rewrite(diff, quoted=False)


def _rewrite(diff: bytes, *, quoted: bool) -> bytes:
    lines = diff.split(b"\n")
    index = 0
    while index < len(lines):
        if not lines[index].startswith(b"diff --git "):
            index += 1
            continue
        end = index + 1
        while end < len(lines) and _HEADER.match(lines[end]):
            end += 1
        # A section whose headers are followed by anything but the next section or the end
        # (`---` lines, binary data) names its files there: only a header-only one is rewritten.
        if end == len(lines) or not lines[end] or lines[end].startswith(b"diff --git "):
            _rewrite_section(lines, index, end, quoted=quoted)
        index = end
    return b"\n".join(lines)


def _plain(name: bytes) -> bytes | None:
    """A name as git wrote it unquoted, or as `for_gnu_patch` quoted it; None for any other."""
    if name[:1] != b'"':
        return None if b'"' in name or b"\\" in name else name
    inner = name[1:-1]
    if len(name) < 2 or name[-1:] != b'"' or b'"' in inner or b"\\" in inner:
        return None  # git's own quoting (it escapes a character): kept as it is
    return inner


def _rewrite_section(lines: list[bytes], start: int, end: int, *, quoted: bool) -> None:
    names = lines[start][len(b"diff --git "):]
    sides: dict[bytes, bytes] = {}
    for line in lines[start + 1:end]:
        found = _NAMED.fullmatch(line)
        if found:
            plain = _plain(found.group(2))
            if plain is None:
                return
            sides[b"old" if found.group(1).endswith(b"from") else b"new"] = plain
    if sides:
        old, new = sides.get(b"old"), sides.get(b"new")
        if old is None or new is None:
            return
    else:  # one file on both sides: `a/NAME b/NAME` or `"a/NAME" "b/NAME"`, split by length
        skip, rest = (3, 9) if names[:1] == b'"' else (2, 5)  # `"a/`..`" "b/`..`"`, `a/`..` b/`
        size = (len(names) - rest) // 2
        old = new = names[skip:skip + size] if size > 0 else b""
    plain_form = b"a/" + old + b" b/" + new
    quoted_form = b'"a/' + old + b'" "b/' + new + b'"'
    if not old or names not in (plain_form, quoted_form) or _plain(b'"' + old + new + b'"') is None:
        return
    if quoted and (names != plain_form or b" " not in old + new):
        return
    if not quoted and names != quoted_form:
        return
    lines[start] = b"diff --git " + (quoted_form if quoted else plain_form)
    for number in range(start + 1, end):
        found = _NAMED.fullmatch(lines[number])
        if found:
            name = old if found.group(1).endswith(b"from") else new
            lines[number] = found.group(1) + b" " + (b'"' + name + b'"' if quoted else name)
