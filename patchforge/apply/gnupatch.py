"""git's diffs as GNU patch (and so `quilt push`) reads them, and back.

git writes a name with a space unquoted (`diff --git a/my file.py b/my file.py`). Where a file's
section has `---`/`+++` lines, git ends them with a tab and GNU patch takes the name from them;
a section of headers only (a mode change, a pure rename or copy, an empty file created or
deleted) has none, and GNU patch cuts such a name at its first space ("can't find file to
patch", "Cannot rename file without two valid file names"). Both git and GNU patch read a name
in double quotes, so `export --quilt` writes those names quoted (`for_gnu_patch`), and
`import quilt` takes them back as git writes them (`as_git_writes`): git quotes a name only for a
character it must escape, so a quoted name with no backslash in it was quoted here. A quilt series
entry at another strip level (`fix.patch -p0`) has its names read as -p1 (`with_p1_names`).
"""
from __future__ import annotations

import re

from patchforge.errors import InputError

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


# A quilt series entry `fix.patch -p0` (`quilt refresh -p0`, `QUILT_REFRESH_ARGS=-p0`) names
# its files from the tree's root, the old one as `<path>.orig` (quilt's diff_file); `-p2`
# (`quilt import -p2`) under two directories. patchforge's patches are -p1 (`a/<path>`).
_HUNK_COUNTS = re.compile(rb"@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@")


def with_p1_names(data: bytes, strip: int, source: str) -> bytes:
    """`data`, a patch file whose diff GNU patch applies with `-p<strip>`, with each file's
    names on its `---`/`+++` lines as a -p1 patch writes them (`a/<path>`, `b/<path>`), the
    rest byte for byte; quilt's old name `<path>.orig` is the file itself. Only quilt's own
    sections (`---`/`+++`, no `diff --git`) are read so: a git section names its files on its
    `diff --git` line too, and is refused, naming the line."""
    if strip == 1:
        return data
    lines = data.splitlines(keepends=True)
    out: list[bytes] = []
    k = 0
    while k < len(lines):
        line = lines[k]
        if line.startswith(b"diff --git "):
            raise InputError(f"a git diff section in a patch quilt applies with -p{strip}: "
                             "patchforge reads quilt's own diffs at that level alone",
                             path=source, line=k + 1,
                             hint="list the patch at -p1 (`quilt refresh -p1`, or -p ab)")
        if not (line.startswith(b"--- ") and k + 1 < len(lines)
                and lines[k + 1].startswith(b"+++ ")):
            out.append(line)
            k += 1
            continue
        old, quoted_old, old_rest = _stripped_name(line[4:], strip, source, k + 1)
        new, quoted_new, new_rest = _stripped_name(lines[k + 1][4:], strip, source, k + 2)
        if new is not None and old == new + b".orig":
            old, quoted_old = new, quoted_new
        out += [b"--- " + _p1_name(b"a/", old, quoted_old) + old_rest,
                b"+++ " + _p1_name(b"b/", new, quoted_new) + new_rest]
        k += 2
        # Its hunks copied by their counts: a removed line `-- x` reads `--- x` too.
        while k < len(lines):
            counts = _HUNK_COUNTS.match(lines[k])
            if counts is None:
                break
            out.append(lines[k])
            k += 1
            old_left, new_left = (int(n) if n is not None else 1 for n in counts.groups())
            while k < len(lines) and (old_left > 0 or new_left > 0 or lines[k][:1] == b"\\"):
                kind = lines[k][:1]
                old_left -= kind in (b" ", b"-", b"\n", b"\r")
                new_left -= kind in (b" ", b"+", b"\n", b"\r")
                out.append(lines[k])
                k += 1
    return b"".join(out)


def _p1_name(prefix: bytes, path: bytes | None, quoted: bool) -> bytes:
    if path is None:
        return b"/dev/null"
    return b'"' + prefix + path + b'"' if quoted else prefix + path


def _stripped_name(rest: bytes, strip: int, source: str,
                   line: int) -> tuple[bytes | None, bool, bytes]:
    """The name on a `---`/`+++` line (`rest` the text after `--- `) without its first
    `strip` directories (None for /dev/null), whether it is quoted, and what follows it (a
    tab and a time, the line end). A quoted name is cut inside its quotes (a C escape holds
    no `/`)."""
    end = rest.find(b"\t")
    if end < 0:
        end = len(rest.rstrip(b"\r\n"))
    name, after = rest[:end], rest[end:]
    if name == b"/dev/null":
        return None, False, after
    quoted = len(name) > 1 and name[:1] == name[-1:] == b'"'
    parts = (name[1:-1] if quoted else name).split(b"/")
    if len(parts) <= strip:
        raise InputError(f"cannot strip {strip} directories from "
                         f"{name.decode('utf-8', 'replace')!r} (the patch is listed with "
                         f"-p{strip})", path=source, line=line)
    return b"/".join(parts[strip:]), quoted, after
