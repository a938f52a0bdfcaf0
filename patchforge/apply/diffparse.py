"""Parsing git-style unified diffs (bytes) into `FilePatch`/`Hunk`, with path safety.

Owns: the byte-exact reading of `diff --git` and plain (`---`/`+++`, quilt-style) unified diffs, the
refusal of everything that is not one (ed scripts, normal and context diffs, ghost hunks, absurd
counts), and the checks that keep a patch inside its upstream (no absolute paths, `..`, `.git` in
any spelling, NUL or newline in names). Nothing here touches the filesystem or runs anything.

Bytes end to end: lines are split on b"\\n" only, so CR, form feed, \\x85 and U+2028 stay inside lines,
and every section keeps its exact bytes (`FilePatch.raw`, `Hunk.raw`) so that joining them gives back
the input.
"""
from __future__ import annotations

import io
import itertools
import re
from functools import cached_property
from operator import itemgetter
from typing import TYPE_CHECKING

from patchforge.errors import InputError, UnsafePathError
from patchforge.model.record import record, replace
from patchforge.patterns import on_first_use

# apply/gitbinary.py is imported where a `GIT binary patch` is met: most series have none, and
# every command that reads a patch would load it otherwise.
if TYPE_CHECKING:
    from patchforge.apply.gitbinary import BinaryPatch

NO_NEWLINE_MARKER = b"\\ No newline at end of file\n"
# The lines git merge writes around a conflict (`<<<<<<< HEAD`, `=======`, `>>>>>>> other`, and
# diff3's `||||||| base`). Between a diff's file sections they would be read as notes, so a
# patch file a merge left unresolved was taken whole: both sides' file sections applied.
_CONFLICT_MARKER = on_first_use(rb"(?:<{7}|>{7}|\|{7})(?: |\r?\n|$)|={7}\r?\n?$")


def conflict_marker_line(data: bytes) -> int | None:
    """The line (from 1) of `data`'s first line that is a merge's conflict marker, if any: a
    series or lock file `git merge` left unresolved (two branches that each added a patch at
    the end of one series) is said as that, not as the first line it cannot read."""
    for number, line in enumerate(split_lines(data), 1):
        if line[:1] in b"<>=|" and _CONFLICT_MARKER.match(line):
            return number
    return None

# "@@ -12,7 +12,8 @@ def foo():" -- counts are optional (",1" is implied when absent).
_HUNK_RE = re.compile(rb"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@(.*?)\r?\n?$", re.S)
# ed scripts ("12a", "3,5d") and normal diffs ("3,5c3,6"): GNU patch would run or apply these; we
# refuse them outright.
_ED_RE = on_first_use(rb"^\d+(?:,\d+)?[acdi]\r?\n?$")
_NORMAL_RE = on_first_use(rb"^\d+(?:,\d+)?[acd]\d+(?:,\d+)?\r?\n?$")
# git's extended header lines inside a `diff --git` section, in the order git may write them.
_GIT_HEADER_KEYS = (b"old mode ", b"new mode ", b"deleted file mode ", b"new file mode ",
                    b"copy from ", b"copy to ", b"rename from ", b"rename to ",
                    b"rename old ", b"rename new ", b"similarity index ",
                    b"dissimilarity index ", b"index ")
_MODE_RE = on_first_use(r"^[0-7]{6}$")
# Regular files and symlinks whose target stays inside the upstream (check_link_target); a
# gitlink (160000) is not file content at all.
_ALLOWED_MODES = {"100644", "100755", "100664", "120000"}
SYMLINK = "120000"
# Line numbers beyond this are not a real upstream file; refusing them bounds the work done.
_MAX_LINE_NO = 1 << 31
# Characters HFS+ ignores when comparing names: ".g\u200cit" is ".git" there (git refuses them too).
_HFS_IGNORABLE = dict.fromkeys(map(ord, "\u200c\u200d\u200e\u200f\u202a\u202b\u202c\u202d\u202e"
                                    "\u206a\u206b\u206c\u206d\u206e\u206f\ufeff"))
_C_ESCAPES = {ord("a"): 7, ord("b"): 8, ord("t"): 9, ord("n"): 10, ord("v"): 11, ord("f"): 12,
              ord("r"): 13, ord('"'): 34, ord("\\"): 92}


@record(frozen=True)
class Hunk:
    """One `@@` hunk. `lines` are the raw body lines (with their ' ', '-' or '+' and line ending);
    the "\\ No newline at end of file" markers are folded into the two flags and kept in `raw`."""

    old_start: int
    old_count: int
    new_start: int
    new_count: int
    section: bytes
    lines: tuple[bytes, ...]
    old_no_newline: bool
    new_no_newline: bool
    line_no: int
    raw: bytes = b""

    # The derived views below are computed once per hunk (kept in the instance's __dict__, as
    # functools.cached_property does): applying a series asks for them at every fuzz level of
    # every placement. Callers must not modify the lists.

    def old_lines(self) -> list[bytes]:
        """The pre-image lines as they are in the file (no-newline already applied)."""
        found = self.__dict__.get("_old_lines")
        if found is None:
            found = self.__dict__["_old_lines"] = _side(self.lines, b"-", self.old_no_newline)
        return found

    def new_lines(self) -> list[bytes]:
        """The post-image lines as they are in the file (no-newline already applied)."""
        found = self.__dict__.get("_new_lines")
        if found is None:
            found = self.__dict__["_new_lines"] = _side(self.lines, b"+", self.new_no_newline)
        return found

    @cached_property
    def leading_context(self) -> int:
        n = 0
        for line in self.lines:
            if line_kind(line) != b" ":
                break
            n += 1
        return n

    @cached_property
    def trailing_context(self) -> int:
        n = 0
        for line in reversed(self.lines):
            if line_kind(line) != b" ":
                break
            n += 1
        return n if n < len(self.lines) else 0

    @property
    def zero_context(self) -> bool:
        """True for a hunk with no context anchoring it somewhere inside a file (`diff -U0`).

        Such a hunk applies only by line number: callers refuse it unless explicitly allowed. A hunk
        at the very start of a file, or one that creates or empties a file, is anchored anyway.
        """
        # The same conditions, the ones that read no line first: a hunk at the start of a
        # file (a created file's, say) is answered without going through its lines.
        if self.old_start <= 1 or (self.new_count == 0 and self.new_start == 0):
            return False
        return not any(line_kind(line) == b" " for line in self.lines)


@record(frozen=True)
class FilePatch:
    """The changes to one file. Paths are p1-stripped, UTF-8 with surrogateescape; None is /dev/null."""

    old_path: str | None
    new_path: str | None
    old_mode: str | None
    new_mode: str | None
    is_rename: bool
    is_copy: bool
    is_binary: bool
    similarity: int | None
    hunks: tuple[Hunk, ...]
    raw: bytes
    line_no: int
    # A `GIT binary patch` (is_binary is then True): blob ids and the inflated blocks.
    binary: BinaryPatch | None = None

    # Every file patch names a path on at least one side (the parser refuses one that does not).
    @property
    def path(self) -> str:
        """The file's path after the patch: the new one, or the old one of a deleted file."""
        return self.new_path if self.new_path is not None else self.old_path  # type: ignore[return-value]

    @property
    def source_path(self) -> str:
        """The file's path before the patch: the old one, or the new one of a created file."""
        return self.old_path if self.old_path is not None else self.new_path  # type: ignore[return-value]

    @property
    def is_new(self) -> bool:
        return self.old_path is None

    @property
    def is_delete(self) -> bool:
        return self.new_path is None

    @property
    def has_zero_context(self) -> bool:
        return any(h.zero_context for h in self.hunks)

    @property
    def told_by_content(self) -> bool:
        """Whether a file's content at a revision can tell this change present or gone: by
        its lines, or a binary one by its blob ids. Not a rename or copy (the fix's own), not a
        mode change alone."""
        if self.is_copy or (self.is_binary and self.binary is None):
            return False
        if self.old_path is not None and self.new_path is not None and \
                self.old_path != self.new_path:
            return False
        return bool(self.hunks) or self.is_new or self.is_delete or self.binary is not None


@record(frozen=True)
class ParsedDiff:
    """A whole diff: its file sections and the bytes after the last one (e.g. a format-patch
    signature). Any text before a section's header belongs to that section's `raw`."""

    files: tuple[FilePatch, ...]
    trailing: bytes

    def to_bytes(self) -> bytes:
        return b"".join(fp.raw for fp in self.files) + self.trailing


def line_kind(line: bytes) -> bytes:
    """b' ', b'-', b'+' or b'\\\\' for a hunk body line. An empty line counts as empty context:
    editors and mailers strip the lone space, and git and GNU patch accept it."""
    if line in (b"\n", b""):
        return b" "
    return line[:1]


def line_content(line: bytes) -> bytes:
    """The file bytes of a hunk body line (without its ' ', '-' or '+')."""
    return b"\n" if line == b"\n" else line[1:]


def _side(lines: tuple[bytes, ...], kind: bytes, no_newline: bool) -> list[bytes]:
    # line_content() of the lines whose line_kind() is " " or `kind`, written out (twice as
    # fast): this runs over every line of every hunk a series applies.
    keep = (b" ", kind)
    out = [line[1:] if line != b"\n" else line for line in lines
           if line[:1] in keep or line in (b"\n", b"")]
    if no_newline and out and out[-1].endswith(b"\n"):
        out[-1] = out[-1][:-1]
    return out


def split_lines(data: bytes) -> list[bytes]:
    """Split on b"\\n" only, keeping the endings; the last element may lack one."""
    # BytesIO splits on b"\n" alone, in C (bytes.splitlines would also split on \r and
    # friends); this runs over every file a series touches.
    return io.BytesIO(data).readlines()


# ---------------------------------------------------------------------------------------------
# Paths


def c_unquote(quoted: bytes) -> bytes:
    """Undo git's C-style quoting of a name: b'"a/\\\\303\\\\251"' -> b'a/\\xc3\\xa9'."""
    if len(quoted) < 2 or quoted[:1] != b'"' or quoted[-1:] != b'"':
        raise ValueError("not a quoted name")
    body = quoted[1:-1]
    out = bytearray()
    i = 0
    while i < len(body):
        c = body[i]
        if c == 0x22:  # an unescaped quote inside: the name ended earlier
            raise ValueError("stray quote in quoted name")
        if c != 0x5C:
            out.append(c)
            i += 1
            continue
        if i + 1 >= len(body):
            raise ValueError("dangling backslash in quoted name")
        e = body[i + 1]
        if e in _C_ESCAPES:
            out.append(_C_ESCAPES[e])
            i += 2
        elif re.fullmatch(rb"[0-3][0-7][0-7]", body[i + 1:i + 4]):
            out.append(int(body[i + 1:i + 4], 8))
            i += 4
        else:
            raise ValueError(f"unknown escape \\{chr(e)} in quoted name")
    return bytes(out)


def c_quote(name: bytes) -> bytes:
    """Quote a name the way git does when it holds bytes that are not plain printable ASCII."""
    if all(0x20 <= b < 0x7F and b not in (0x22, 0x5C) for b in name):
        return name
    out = bytearray(b'"')
    rev = {v: k for k, v in _C_ESCAPES.items()}
    for b in name:
        if b in rev:
            out += b"\\" + bytes([rev[b]])
        elif 0x20 <= b < 0x7F:
            out.append(b)
        else:
            out += b"\\%03o" % b
    out += b'"'
    return bytes(out)


def _take_name(text: bytes) -> tuple[bytes, bytes]:
    """Split one (possibly quoted) name off the front of `text`; returns (name, rest)."""
    if text[:1] == b'"':
        i = 1
        while i < len(text):
            if text[i] == 0x5C:
                i += 2
                continue
            if text[i] == 0x22:
                return c_unquote(text[:i + 1]), text[i + 1:]
            i += 1
        raise ValueError("unterminated quoted name")
    return text, b""


def check_link_target(link: str, target: bytes, *, source: str, line: int | None) -> str:
    """The path inside the upstream that the symlink `link` with content `target` names;
    UnsafePathError when it names nothing, an absolute path, a place outside the upstream, or
    git's own data."""
    def bad(why: str) -> UnsafePathError:
        return UnsafePathError(f"symlink {link!r} -> {target!r}: {why}", path=source, line=line,
                               hint="a patch may only make links that stay inside its upstream")
    if not target or b"\0" in target or b"\n" in target:
        raise bad("an empty target, or one with NUL or newline")
    text = _decode(target)
    if text.startswith("/") or "\\" in text or re.match(r"^[A-Za-z]:", text):
        raise bad("an absolute target")
    parts = link.split("/")[:-1]
    for comp in text.split("/"):
        if comp in ("", "."):
            continue
        if comp == "..":
            if not parts:
                raise bad("a target outside the upstream")
            parts.pop()
        else:
            parts.append(comp)
    if not parts:
        raise bad("a target that is the upstream's root")
    resolved = "/".join(parts)
    try:
        return check_path(resolved, source=source, line=line)
    except UnsafePathError as exc:
        raise bad(str(exc)) from None


_ASCII_LETTERS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")


def check_path(path: str, *, source: str, line: int | None) -> str:
    """Refuse any path that could leave the upstream tree or reach into git's own data."""
    def bad(why: str, hint: str = "a patch may only touch files inside its upstream"
            ) -> UnsafePathError:
        return UnsafePathError(f"unsafe path {path!r}: {why}", path=source, line=line,
                               hint=hint)
    if not path:
        raise bad("empty name")
    for ch, what in (("\0", "NUL"), ("\n", "newline"), ("\r", "carriage return")):
        if ch in path:
            raise bad(f"{what} in name")
    if "\\" in path:
        # The file may well be inside the upstream: the name is what no patch carries.
        raise bad("backslash in name (Windows or UNC path)",
                  "a patch's file names use `/` alone: one with a backslash cannot be "
                  "carried by a patch (rename it upstream, or leave it out of the fix)")
    if path.startswith("/"):
        raise bad("absolute path")
    if path[1:2] == ":" and path[0] in _ASCII_LETTERS:
        raise bad("Windows drive letter")
    if path.startswith("-"):
        raise bad("name begins with '-'")
    for comp in path.split("/"):
        if comp in ("", "."):
            raise bad("empty or '.' component")
        if comp == "..":
            raise bad("'..' component")
        # NTFS drops trailing dots and spaces, HFS+ ignores some zero-width characters, and the
        # 8.3 short name of ".git" is "GIT~1": all of these reach the repository's git directory.
        folded = comp.translate(_HFS_IGNORABLE).rstrip(". ").casefold()
        if folded == ".git" or folded == "git~1":
            raise bad("'.git' component")
    return path


def validate_path(path: str, *, source: str, line: int | None = None) -> str:
    """`check_path` for callers that name a path themselves (e.g. `import overlay --path`)."""
    return check_path(path, source=source, line=line)


def _decode(name: bytes) -> str:
    return name.decode("utf-8", "surrogateescape")


# ---------------------------------------------------------------------------------------------
# Parser


class _Parser:
    def __init__(self, data: bytes, source: str, first_line: int) -> None:
        self.data = data
        self.lines = split_lines(data)
        self.source = source
        self.first_line = first_line
        # Byte offset of each line, so sections can be cut out of `data` exactly.
        self.offsets = list(itertools.accumulate(map(len, self.lines), initial=0))
        # Paths already checked in this diff: a file's path is named on its `diff --git`,
        # `---` and `+++` lines (and a/ b/ prefixes), and each check is a dozen string passes.
        # git's own prefixes (`a/`, `b/`) are safe names: checked once here, not per diff.
        self.checked: set[str] = {"a", "b"}
        # The sections read so far, by the path each writes (`written`) and by the path each
        # deletes or renames away (`gone`): check_after_earlier's lookups, kept as the diff is
        # read (made again from every earlier section for each one, a merge patch of 460
        # files cost 100,000 entries).
        self.written: dict[str, FilePatch] = {}
        self.gone: dict[str, FilePatch] = {}

    def err(self, i: int, message: str, *, hint: str | None = None) -> InputError:
        return InputError(message, path=self.source, line=self.first_line + i, hint=hint)

    def lineno(self, i: int) -> int:
        return self.first_line + i

    def counts_hint(self, header: int) -> str:
        """What to do about a hunk whose body and @@ counts disagree: most often a hand edit."""
        return (f"the hunk's @@ line is line {self.lineno(header)}: after a hand edit of the "
                "diff, correct its counts there (or put the file back and make the change with "
                "`patchforge edit NAME` and `patchforge refresh`, which write the diff)")

    def path(self, name: bytes, i: int, *, strip: bool) -> str | None:
        """A header name -> a checked, p1-stripped path (None for /dev/null)."""
        if name == b"/dev/null":
            return None
        if b"\0" in name or b"\n" in name:
            raise UnsafePathError("unsafe path: NUL or newline in name", path=self.source,
                                  line=self.lineno(i))
        text = _decode(name)
        if text.startswith("/"):
            # Stripped with -p1 this would be relative, but with -p0 (or another tool) it is
            # outside the tree: refuse the name as written.
            raise UnsafePathError(f"unsafe path {text!r}: absolute path", path=self.source,
                                  line=self.lineno(i))
        if strip:
            if "/" not in text:
                raise self.err(i, f"cannot strip the leading directory (p1) from {text!r}",
                               hint="paths must look like a/<path> and b/<path>")
            prefix, text = text.split("/", 1)
            if prefix and prefix not in self.checked:
                self.checked.add(check_path(prefix, source=self.source, line=self.lineno(i)))
        if text not in self.checked:
            self.checked.add(check_path(text, source=self.source, line=self.lineno(i)))
        return text

    def header_name(self, rest: bytes, i: int) -> bytes:
        """The name on a ---/+++ line: quoted, or up to a tab (timestamps follow a tab)."""
        rest = rest.rstrip(b"\n")
        if rest.endswith(b"\r"):
            rest = rest[:-1]
        try:
            if rest[:1] == b'"':
                name, _ = _take_name(rest)
                return name
        except ValueError as exc:
            raise self.err(i, f"bad quoted file name: {exc}") from None
        return rest.split(b"\t", 1)[0]

    def refuse_foreign(self, i: int) -> None:
        line = self.lines[i]
        if _ED_RE.match(line) or _NORMAL_RE.match(line):
            raise self.err(i, "this is an ed script or a normal diff, not a unified diff; "
                              "ed scripts are never run", hint="make the diff with `git diff`")
        if line.startswith(b"***************") or (
                line.startswith(b"*** ") and i + 1 < len(self.lines)
                and self.lines[i + 1].startswith(b"--- ")):
            raise self.err(i, "context diffs are not supported, only unified diffs",
                           hint="make the diff with `git diff` or `diff -u`")

    def parse(self) -> ParsedDiff:
        lines = self.lines
        n = len(lines)
        files: list[FilePatch] = []
        sec_start = 0
        i = 0
        after_hunk = False
        while i < n:
            line = lines[i]
            if line.startswith(b"diff --git "):
                fp, j = self.git_section(i)
            elif line.startswith(b"--- ") and i + 1 < n and lines[i + 1].startswith(b"+++ "):
                fp, j = self.plain_section(i)
            else:
                if line.startswith(b"@@"):
                    raise self.err(i, "hunk without a file header (or a hunk body longer than "
                                      "its @@ counts say)")
                if line.startswith(b"GIT binary patch") or (
                        line.startswith(b"Binary files ") and line.rstrip().endswith(b" differ")):
                    raise self.err(i, "binary change without a `diff --git` header")
                if after_hunk and line[:1] in (b"+", b"-", b" ") and line.rstrip(b"\r\n") not in (
                        b"--", b"-- "):
                    raise self.err(i, "hunk body is longer than its @@ counts say")
                if _CONFLICT_MARKER.match(line):
                    marker = line.rstrip(b"\r\n")[:40].decode("utf-8", "replace")
                    raise self.err(i, f"a merge conflict marker ({marker!r}): a merge of this "
                                      "patch file was left unresolved",
                                   hint="resolve it: keep the file sections the fix needs and "
                                        "remove the marker lines")
                if line.startswith(b"Index: "):
                    name = line[7:].rstrip(b"\r\n")
                    # quilt writes "Index: dir/file"; GNU patch may fall back to this name.
                    if name:
                        self.path(name, i, strip=False)
                self.refuse_foreign(i)
                after_hunk = False
                i += 1
                continue
            self.check_after_earlier(fp, i)
            raw = self.data[self.offsets[sec_start]:self.offsets[j]]
            files.append(replace(fp, raw=raw))
            after_hunk = bool(fp.hunks)
            sec_start = i = j
        trailing = self.data[self.offsets[sec_start]:]
        if not files and trailing.strip():
            raise self.err(0, "not a unified diff: no `diff --git` or `---`/`+++` file header",
                           hint="patches must be git-style unified diffs")
        return ParsedDiff(tuple(files), trailing)

    def check_after_earlier(self, fp: FilePatch, i: int) -> None:
        """Refuse a section that meets what an earlier section of the diff made: the same file
        written twice (two patches concatenated, a fold), or a file changed after an earlier
        section deleted or renamed it away. git apply and GNU patch apply such sections in
        turn (or refuse them), while each section here is judged against the file before the
        patch: `status` and `rebase` said "conflict" (or "obsolete", or "applies") where the
        overlays had another answer. Sections that read one file each (a copy and a change of
        its source, as `git diff -C` writes) are one change and stay. Once it passes, the
        section is one of the earlier ones (`written`, `gone`)."""
        written, gone = self.written, self.gone
        hint = ("make the change one section per file: apply the patch with `git apply` in a "
                "checkout of its base and write it again with `git diff` (or split it into "
                "two patches)")
        if fp.new_path is not None and fp.new_path in written:
            first = written[fp.new_path]
            raise self.err(i, f"{fp.new_path} is changed again: the section at line "
                              f"{first.line_no} changes it already (one file is one section of "
                              "a patch)", hint=hint)
        if fp.old_path is not None and fp.old_path in gone:
            first = gone[fp.old_path]
            what = "deletes" if first.new_path is None else f"renames it to {first.new_path}"
            raise self.err(i, f"{fp.old_path} is changed after the section at line "
                              f"{first.line_no} {what}", hint=hint)
        if fp.new_path is not None:
            written[fp.new_path] = fp
        if fp.old_path is not None and fp.old_path != fp.new_path and not fp.is_copy:
            gone[fp.old_path] = fp

    def git_section(self, i: int) -> tuple[FilePatch, int]:
        lines = self.lines
        start = i
        rest = lines[i][len(b"diff --git "):].rstrip(b"\n")
        if rest.endswith(b"\r"):
            rest = rest[:-1]
        a_name, b_name = self.split_git_names(rest, i)
        old_path = self.path(a_name, i, strip=True) if a_name is not None else None
        new_path = self.path(b_name, i, strip=True) if b_name is not None else None
        old_mode = new_mode = None
        is_new = is_delete = is_rename = is_copy = is_binary = False
        similarity = None
        index_value: bytes | None = None
        index_line = start
        link_line: int | None = None  # the mode line saying 120000
        binary = None
        i += 1
        n = len(lines)
        while i < n:
            line = lines[i]
            if not line.startswith(_GIT_HEADER_KEYS):  # (the `---` line, most often)
                break
            key = next(k for k in _GIT_HEADER_KEYS if line.startswith(k))
            value = line[len(key):].rstrip(b"\n").rstrip(b"\r")
            if key in (b"old mode ", b"deleted file mode "):
                old_mode = self.mode(value, i)
                is_delete = is_delete or key == b"deleted file mode "
            elif key in (b"new mode ", b"new file mode "):
                new_mode = self.mode(value, i)
                is_new = is_new or key == b"new file mode "
            elif key in (b"rename from ", b"rename old ", b"copy from "):
                old_path = self.path(self.unquote(value, i), i, strip=False)
                is_rename = is_rename or key != b"copy from "
                is_copy = is_copy or key == b"copy from "
            elif key in (b"rename to ", b"rename new ", b"copy to "):
                new_path = self.path(self.unquote(value, i), i, strip=False)
            elif key in (b"similarity index ", b"dissimilarity index "):
                m = re.match(rb"^(\d{1,3})%$", value)
                if not m:
                    raise self.err(i, f"bad {key.decode().strip()} line")
                similarity = int(m.group(1))
            elif key == b"index ":
                index_value, index_line = value, i
            if key in (b"old mode ", b"deleted file mode ", b"new mode ", b"new file mode ") \
                    and value == SYMLINK.encode():
                link_line = i
            i += 1
        hunks: tuple[Hunk, ...] = ()
        if i < n and lines[i].startswith(b"--- "):
            if i + 1 >= n or not lines[i + 1].startswith(b"+++ "):
                raise self.err(i, "`---` line without a `+++` line after it")
            minus = self.path(self.header_name(lines[i][4:], i), i, strip=True)
            plus = self.path(self.header_name(lines[i + 1][4:], i + 1), i + 1, strip=True)
            if minus is None:
                is_new = True
            else:
                old_path = minus
            if plus is None:
                is_delete = True
            else:
                new_path = plus
            hunks, i = self.hunks(i + 2, plus or minus)
            if not hunks:
                raise self.err(i, "file header with no hunks after it")
        elif i < n and lines[i].startswith(b"GIT binary patch"):
            is_binary = True
            binary, i = self.binary(i, new_path or old_path or "?", index_value, index_line,
                                    is_new, is_delete)
        elif i < n and lines[i].startswith(b"Binary files "):
            raise self.err(i, f"{new_path or old_path}: a binary change without its data "
                              "(`Binary files ... differ`): it cannot be carried",
                           hint="make the diff with `git diff --binary` (or `git format-patch "
                                "--binary`), which writes a `GIT binary patch`")
        if is_new:
            old_path = None
        if is_delete:
            new_path = None
        if old_path is None and new_path is None:
            if a_name is None:
                raise self.err(start, "cannot tell the file names apart in this `diff --git` line")
            raise self.err(start, "a file section that neither creates, changes nor deletes a file")
        if old_path is not None and new_path is not None and old_path != new_path and \
                not (is_rename or is_copy):
            # git apply takes such a section as a rename, GNU patch as a change of one file in
            # place; the overlays read it as a copy: three answers, so none is taken.
            raise self.err(start, f"this section names two files ({old_path} and {new_path}) "
                                  "without `rename from`/`rename to` (or `copy from`/`copy "
                                  "to`): tools differ on what it does",
                           hint="write the same path on its `diff --git`, `---` and `+++` "
                                "lines; a rename has its `rename from` and `rename to` lines "
                                "(`git diff -M` writes them)")
        self.check_sides(hunks, is_new, is_delete, start)
        if index_value is not None and index_value.endswith(b" " + SYMLINK.encode()) and \
                old_mode is None and new_mode is None:
            old_mode = new_mode = SYMLINK  # a link whose target changes: the index line says so
            link_line = index_line
        if SYMLINK in (old_mode, new_mode):
            assert link_line is not None
            self.check_symlink(old_mode, new_mode, new_path, hunks, is_binary, link_line)
        fp = FilePatch(old_path, new_path, old_mode, new_mode, is_rename, is_copy, is_binary,
                       similarity, hunks, b"", self.lineno(start), binary)
        return fp, i

    def check_symlink(self, old_mode: str | None, new_mode: str | None, new_path: str | None,
                      hunks: tuple[Hunk, ...], is_binary: bool, i: int) -> None:
        """A symlink section: created, deleted or retargeted, never a file turning into a link
        (or back), and its new target inside the upstream."""
        def refuse(why: str) -> UnsafePathError:
            return UnsafePathError(f"symlink {new_path or ''}: {why}".replace("  ", " "),
                                   path=self.source, line=self.lineno(i),
                                   hint="a patch may only make links that stay inside its "
                                        "upstream")
        if old_mode is not None and new_mode is not None and old_mode != new_mode:
            raise refuse(f"mode {old_mode} -> {new_mode}: a file turning into a symlink (or "
                         "back) is not supported")
        if is_binary:
            raise refuse("a binary section for a symlink")
        if new_path is None:
            return  # a link deleted: nothing is written
        # A link's content is its target, one line without a newline: the one hunk gives all.
        if len(hunks) != 1 or hunks[0].new_start not in (0, 1) or hunks[0].old_start > 1:
            raise refuse("its target must be given whole (one hunk from the first line)")
        target = b"".join(hunks[0].new_lines())
        check_link_target(new_path, target, source=self.source, line=self.lineno(i))

    def plain_section(self, i: int) -> tuple[FilePatch, int]:
        start = i
        old_path = self.path(self.header_name(self.lines[i][4:], i), i, strip=True)
        new_path = self.path(self.header_name(self.lines[i + 1][4:], i + 1), i + 1, strip=True)
        if old_path is None and new_path is None:
            raise self.err(i, "both sides are /dev/null")
        if old_path is not None and new_path is not None and old_path != new_path:
            # `diff -u a/x.py b/x.py.new`: GNU patch, quilt and git apply change one file in
            # place (each picks its own of the two names); only a `diff --git` section with
            # `rename from`/`copy from` lines moves a file. Read as both, the overlays shipped
            # the fix under the `+++` name and the file under the `---` name unfixed.
            raise self.err(start, f"the `---` and `+++` lines name two files ({old_path} and "
                                  f"{new_path}): a diff without `diff --git` changes one file "
                                  "in place, and tools differ on which",
                           hint="write the same path on both lines (a/PATH and b/PATH); a "
                                "rename is a `diff --git` section with `rename from` and "
                                "`rename to` (`git diff -M` writes one)")
        hunks, i = self.hunks(i + 2, new_path or old_path)
        if not hunks:
            raise self.err(i, "file header with no hunks after it")
        self.check_sides(hunks, old_path is None, new_path is None, start)
        return FilePatch(old_path, new_path, None, None, False, False, False, None, hunks, b"",
                         self.lineno(start)), i

    def check_sides(self, hunks: tuple[Hunk, ...], is_new: bool, is_delete: bool,
                    start: int) -> None:
        for h in hunks:
            if is_new and h.old_count:
                raise self.err(h.line_no - self.first_line,
                               "a hunk that creates a file cannot remove lines")
            if is_delete and h.new_count:
                raise self.err(h.line_no - self.first_line,
                               "a hunk that deletes a file cannot add lines")

    def unquote(self, value: bytes, i: int) -> bytes:
        if value[:1] != b'"':
            return value
        try:
            return c_unquote(value)
        except ValueError as exc:
            raise self.err(i, f"bad quoted file name: {exc}") from None

    def mode(self, value: bytes, i: int) -> str:
        text = value.decode("ascii", "replace")
        if not _MODE_RE.match(text):
            raise self.err(i, f"bad file mode {text!r}")
        if text not in _ALLOWED_MODES:
            raise UnsafePathError(f"file mode {text} (symlink or submodule) is not supported; "
                                  "only regular files can be patched",
                                  path=self.source, line=self.lineno(i))
        return text

    def split_git_names(self, rest: bytes, i: int) -> tuple[bytes | None, bytes | None]:
        """The two names of a `diff --git` line. Unquoted names with spaces are ambiguous; like
        git, take the split where both sides name the same file, else leave them to the
        `rename`/`---` lines that follow."""
        try:
            if rest[:1] == b'"':
                a, tail = _take_name(rest)
                if tail[:1] != b" ":
                    raise ValueError("expected a space after the first name")
                tail = tail[1:]
                b = _take_name(tail)[0] if tail[:1] == b'"' else tail
                return a, b
            if rest.endswith(b'"') and b' "' in rest:
                k = rest.index(b' "')
                return rest[:k], _take_name(rest[k + 1:])[0]
        except ValueError as exc:
            raise self.err(i, f"bad quoted file name: {exc}") from None
        spaces = []
        k = rest.find(b" ")
        while k >= 0:  # by the C-level find, not a Python loop over every byte of the line
            spaces.append(k)
            k = rest.find(b" ", k + 1)
        for k in spaces:
            a, b = rest[:k], rest[k + 1:]
            if b"/" in a and b"/" in b and a.split(b"/", 1)[1] == b.split(b"/", 1)[1]:
                return a, b
        if len(spaces) == 1:
            return rest[:spaces[0]], rest[spaces[0] + 1:]
        return None, None

    def binary(self, i: int, path: str, index_value: bytes | None, index_line: int,
               is_new: bool, is_delete: bool) -> tuple[BinaryPatch, int]:
        """Read a `GIT binary patch` (apply/gitbinary.py) at lines[i]; its `index` line must give
        full blob ids, which are what a binary change is checked by."""
        from patchforge.apply.gitbinary import (NULL_OID, BinaryFormatError, BinaryPatch,
                                                is_abbreviated_index, parse_binary_blocks,
                                                parse_index_ids)

        if self.lines[i] != b"GIT binary patch\n":
            raise self.err(i, "malformed `GIT binary patch` line")
        ids = parse_index_ids(index_value) if index_value is not None else None
        if ids is None:
            where = index_line if index_value is not None else i
            why = ("abbreviated blob ids in its `index` line" if index_value is not None
                   and is_abbreviated_index(index_value) else "no `index <old>..<new>` line")
            raise self.err(where, f"{path}: a binary patch with {why}: it cannot be checked",
                           hint="make the diff with `git diff --binary --full-index`")
        old_oid, new_oid = ids
        if is_new != (old_oid.strip("0") == "") or is_delete != (new_oid.strip("0") == ""):
            raise self.err(index_line, f"{path}: the `index` line's blob ids do not match the "
                                       "file's creation or deletion")
        try:
            forward, reverse, j = parse_binary_blocks(self.lines, i + 1,
                                                      first_line=self.first_line)
        except BinaryFormatError as exc:
            raise self.err(exc.index, f"{path}: {exc}") from None
        return BinaryPatch(NULL_OID if is_new else old_oid, NULL_OID if is_delete else new_oid,
                           forward, reverse, self.lineno(index_line)), j

    def hunks(self, i: int, path: str | None) -> tuple[tuple[Hunk, ...], int]:
        out: list[Hunk] = []
        while i < len(self.lines) and self.lines[i].startswith(b"@@"):
            h, i = self.hunk(i)
            if out:
                self.check_order(out[-1], h, len(out) + 1, path)
            out.append(h)
        return tuple(out), i

    def check_order(self, prev: Hunk, h: Hunk, number: int, path: str | None) -> None:
        """Refuse a hunk that starts before the end of the one before it, on either side.
        GNU patch applies hunks whose context overlaps the previous hunk's lines, each
        matched against the original file, while `git apply` refuses them (a line an earlier
        hunk patched is never matched again): no result both tools give, so none is made
        here. Said with the file, both hunks and the lines they share."""
        def span(start: int, count: int) -> tuple[int, int]:
            first = start if count else start + 1
            return first, first + count
        for side, a, b in (("old", span(prev.old_start, prev.old_count),
                            span(h.old_start, h.old_count)),
                           ("new", span(prev.new_start, prev.new_count),
                            span(h.new_start, h.new_count))):
            if b[0] >= a[1]:
                continue
            where = (f"{path or '?'}: hunk {number} (line {h.line_no}) starts at {side} line "
                     f"{b[0]}")
            before = f"hunk {number - 1} (line {prev.line_no})"
            if b[0] < a[0]:
                raise self.err(h.line_no - self.first_line,
                               f"{where}, before {before}, which starts at {a[0]}: hunks out "
                               "of order within one file",
                               hint="put the file's hunks in the order of their lines")
            if b[1] == b[0]:
                # Lines added only, on this side: an insertion between two lines, no range.
                what = (f"{path or '?'}: hunk {number} (line {h.line_no}) inserts after {side} "
                        f"line {b[0] - 1}, inside {before}, which has {side} lines "
                        f"{a[0]}-{a[1] - 1}: the two hunks overlap")
            else:
                shared = f"line {b[0]}" if min(a[1], b[1]) - b[0] == 1 else \
                    f"lines {b[0]}-{min(a[1], b[1]) - 1}"
                what = (f"{where}, inside {before}, which ends at {a[1] - 1}: the two hunks "
                        f"overlap on {side} {shared}")
            raise self.err(h.line_no - self.first_line, what,
                           hint="GNU patch applies such hunks, each matched against the original "
                                "file; `git apply` refuses them: join the two hunks into one, or make the "
                                "change with `patchforge edit NAME` and `patchforge refresh`, "
                                "which write the diff")

    def hunk(self, i: int) -> tuple[Hunk, int]:
        lines = self.lines
        n = len(lines)
        m = _HUNK_RE.match(lines[i])
        if not m:
            raise self.err(i, "malformed @@ hunk header")
        nums = [m.group(1), m.group(2), m.group(3), m.group(4)]
        if any(x is not None and len(x) > 10 for x in nums):
            raise self.err(i, "absurd line numbers in hunk header")
        old_start, new_start = int(nums[0]), int(nums[2])
        old_count = int(nums[1]) if nums[1] is not None else 1
        new_count = int(nums[3]) if nums[3] is not None else 1
        if max(old_start, new_start, old_count, new_count) >= _MAX_LINE_NO:
            raise self.err(i, "absurd line numbers in hunk header")
        # Every body line serves at least one side, so a header promising more lines than the
        # input still holds is a lie; refusing it here bounds the work by the input size.
        if max(old_count, new_count) > n - i - 1:
            raise self.err(i, f"hunk header promises {max(old_count, new_count)} lines but only "
                              f"{n - i - 1} follow")
        if old_count == 0 and new_count == 0:
            raise self.err(i, "empty hunk")
        if old_start == 0 and old_count != 0:
            raise self.err(i, "hunk starts at line 0 but removes lines")
        if new_start == 0 and new_count != 0:
            raise self.err(i, "hunk starts at line 0 but adds lines")
        header = i
        i += 1
        # The plain lines first (context, removed and added lines that end in a newline and
        # that the counts still expect), without a test per line where their first bytes
        # decide. The first line that is anything else (a marker, a `--- ` line, a line too
        # many, the end of the input) is left to the checking loop below, which goes on from
        # there and names any error precisely.
        start = i
        i, old_rem, new_rem = _plain_lines(lines, self.data, self.offsets, i, old_count,
                                           new_count)
        body: list[bytes] = list(lines[start:i])
        old_nonl = new_nonl = False
        while old_rem > 0 or new_rem > 0 or (i < n and lines[i].startswith(b"\\")):
            if i >= n:
                raise self.err(header, "hunk ends before its @@ counts are used up",
                               hint=self.counts_hint(header))
            line = lines[i]
            kind = line_kind(line)
            if kind == b"\\":
                if not body:
                    raise self.err(i, "'\\ No newline' marker with no line before it")
                last = line_kind(body[-1])
                if (old_nonl and last in (b" ", b"-")) or (new_nonl and last in (b" ", b"+")):
                    raise self.err(i, "repeated '\\ No newline' marker")
                if last in (b" ", b"-"):
                    old_nonl = True
                if last in (b" ", b"+"):
                    new_nonl = True
                i += 1
                continue
            if not line.endswith(b"\n"):
                raise self.err(i, "the diff ends in the middle of a hunk line")
            if kind == b" ":
                old_rem -= 1
                new_rem -= 1
            elif kind == b"-":
                old_rem -= 1
                if (line.startswith(b"--- ") and i + 2 < n and lines[i + 1].startswith(b"+++ ")
                        and lines[i + 2].startswith(b"@@ ")):
                    raise self.err(header, "hunk @@ counts run into the next file header "
                                           f"(line {self.lineno(i)})")
            elif kind == b"+":
                new_rem -= 1
            else:
                raise self.err(i, "hunk body shorter than its @@ counts say "
                                  "(this line is not a ' ', '-' or '+' line)",
                               hint=self.counts_hint(header))
            if old_rem < 0 or new_rem < 0:
                raise self.err(i, "hunk body does not match its @@ counts",
                               hint=self.counts_hint(header))
            if (old_nonl and kind in (b" ", b"-")) or (new_nonl and kind in (b" ", b"+")):
                raise self.err(i, "line after a '\\ No newline at end of file' marker")
            body.append(line)
            i += 1
        raw = self.data[self.offsets[header]:self.offsets[i]]
        h = Hunk(old_start, old_count, new_start, new_count, m.group(5), tuple(body),
                 old_nonl, new_nonl, self.lineno(header), raw)
        return h, i


def _plain_run(lines: list[bytes], i: int, old_rem: int,
               new_rem: int) -> tuple[int, int, int]:
    """From line `i` of a hunk's body, the plain lines, one at a time: (the first line that is
    not one, the old and new lines the counts still expect after them). A plain line ends in a
    newline and is a context line (` `, or an empty line) while both counts expect one, an
    added line while the new count does, a removed line (not `--- `, a file header's) while the
    old count does; the run ends where both counts are used up."""
    n = len(lines)
    while i < n and (old_rem > 0 or new_rem > 0):
        line = lines[i]
        if line[-1:] != b"\n":
            break
        kind = line[:1]
        if (kind == b" " or line == b"\n") and old_rem > 0 and new_rem > 0:
            old_rem -= 1
            new_rem -= 1
        elif kind == b"+" and new_rem > 0:
            new_rem -= 1
        elif kind == b"-" and old_rem > 0 and not line.startswith(b"--- "):
            old_rem -= 1
        else:
            break
        i += 1
    return i, old_rem, new_rem


# A body line's first byte -> what it takes of the two counts together (a context line one of
# each, an added or removed line one), for _plain_lines' running sum; 0 for any other byte
# (no plain line: the run stops before it, found by a search for a NUL byte).
_TAKES = bytes(2 if byte in b" \n" else 1 if byte in b"-+" else 0 for byte in range(256))


def _plain_lines(lines: list[bytes], data: bytes, offsets: list[int], i: int, old_rem: int,
                 new_rem: int) -> tuple[int, int, int]:
    """_plain_run's answer, from the first bytes of the lines (`offsets`: where each line of
    `data` starts) instead of a test per line: a hunk of a few thousand lines (a merge's, a
    file rewritten) was most of a parse. Each plain line takes one of the counts' sum (a
    context line two), so the run that uses up both counts is the one whose running sum first
    reaches their sum, with as many context and removed lines as the old count and context and
    added lines as the new one: each line then had its count still expecting it (a count that
    ends at 0, one less a line, was 1 or more before). Anything else, a `--- ` line among the
    removed ones or a last line without its newline, goes to _plain_run, which stops where
    the lines stop being plain."""
    total = old_rem + new_rem
    starts = offsets[i:min(i + total, len(lines))]
    if len(starts) < 2:  # (itemgetter of one index gives an int, not a tuple)
        return _plain_run(lines, i, old_rem, new_rem)
    kinds = bytes(itemgetter(*starts)(data))
    takes = kinds.translate(_TAKES)
    other = takes.find(0)
    if other >= 0:
        kinds, takes = kinds[:other], takes[:other]
    try:
        used = list(itertools.accumulate(takes)).index(total) + 1
    except ValueError:  # the counts are not used up by plain lines
        return _plain_run(lines, i, old_rem, new_rem)
    context = kinds.count(b" ", 0, used) + kinds.count(b"\n", 0, used)
    removed = kinds.count(b"-", 0, used)
    end = i + used
    if context + removed != old_rem or used - removed != new_rem or \
            lines[end - 1][-1:] != b"\n":
        return _plain_run(lines, i, old_rem, new_rem)
    if removed:
        # A removed line that reads `--- ` (a file header where the counts are wrong) is no
        # plain line. Looked for as "\n---", then the space: a needle ending in a space
        # meets a partial match every few bytes of code.
        if lines[i].startswith(b"--- "):
            return _plain_run(lines, i, old_rem, new_rem)
        at = data.find(b"\n---", offsets[i], offsets[end] - 1)
        while at >= 0:
            if data[at + 4:at + 5] == b" ":
                return _plain_run(lines, i, old_rem, new_rem)
            at = data.find(b"\n---", at + 1, offsets[end] - 1)
    return end, 0, 0


def parse_diff_full(data: bytes, *, source: str = "<diff>", first_line: int = 1) -> ParsedDiff:
    """Parse a diff keeping everything: `result.to_bytes() == data` for any accepted input."""
    return _Parser(data, source, first_line).parse()


def parse_diff(data: bytes, *, source: str = "<diff>",
               first_line: int = 1) -> tuple[FilePatch, ...]:
    """Parse a git-style or plain unified diff into its file sections; raises InputError (or
    UnsafePathError) naming `source` and the 1-based line (counted from `first_line`)."""
    return parse_diff_full(data, source=source, first_line=first_line).files


# ---------------------------------------------------------------------------------------------
# Writing


def format_hunk(h: Hunk) -> bytes:
    """Render a hunk canonically: '-' lines before '+' lines in each change, markers in place."""
    def rng(start: int, count: int) -> bytes:
        return b"%d" % start if count == 1 else b"%d,%d" % (start, count)
    out = [b"@@ -" + rng(h.old_start, h.old_count) + b" +" + rng(h.new_start, h.new_count)
           + b" @@" + h.section + b"\n"]
    body: list[bytes] = []
    block: list[bytes] = []

    def flush() -> None:
        body.extend(x for x in block if line_kind(x) == b"-")
        body.extend(x for x in block if line_kind(x) == b"+")
        block.clear()
    for line in h.lines:
        if line_kind(line) == b" ":
            flush()
            body.append(line)
        else:
            block.append(line)
    flush()
    last_old = max((k for k, x in enumerate(body) if line_kind(x) in (b" ", b"-")), default=None)
    last_new = max((k for k, x in enumerate(body) if line_kind(x) in (b" ", b"+")), default=None)
    for k, line in enumerate(body):
        out.append(line)
        if (h.old_no_newline and k == last_old) or (h.new_no_newline and k == last_new):
            out.append(NO_NEWLINE_MARKER)
    return b"".join(out)


def format_file_patch(fp: FilePatch) -> bytes:
    """Render a FilePatch as a canonical `diff --git` section (used for reversed patches)."""
    a = (fp.old_path if fp.old_path is not None else fp.new_path) or ""
    b = (fp.new_path if fp.new_path is not None else fp.old_path) or ""

    def enc(prefix: str, p: str) -> bytes:
        return c_quote((prefix + p).encode("utf-8", "surrogateescape"))
    out = [b"diff --git " + enc("a/", a) + b" " + enc("b/", b) + b"\n"]
    if fp.is_new:
        out.append(b"new file mode %s\n" % (fp.new_mode or "100644").encode())
    elif fp.is_delete:
        out.append(b"deleted file mode %s\n" % (fp.old_mode or "100644").encode())
    elif fp.old_mode and fp.new_mode and fp.old_mode != fp.new_mode:
        out.append(b"old mode %s\nnew mode %s\n" % (fp.old_mode.encode(), fp.new_mode.encode()))
    if fp.is_rename or fp.is_copy:
        if fp.similarity is not None:
            out.append(b"similarity index %d%%\n" % fp.similarity)
        word = b"copy" if fp.is_copy else b"rename"
        out.append(word + b" from " + enc("", a) + b"\n" + word + b" to " + enc("", b) + b"\n")
    if fp.binary is not None:
        from patchforge.apply.gitbinary import render_binary

        out.append(render_binary(fp.binary))
    if fp.hunks:
        # As git: a tab after a name with a space, where GNU patch ends the name.
        old_label = enc("a/", a) if not fp.is_new else b"/dev/null"
        new_label = enc("b/", b) if not fp.is_delete else b"/dev/null"
        out.append(b"--- " + old_label + (b"\t" if b" " in old_label else b"") + b"\n")
        out.append(b"+++ " + new_label + (b"\t" if b" " in new_label else b"") + b"\n")
        out.extend(format_hunk(h) for h in fp.hunks)
    return b"".join(out)


def reverse_hunk(h: Hunk, *, render: bool = True) -> Hunk:
    """The hunk that undoes `h`; its `raw` rendered unless `render` is False (a hunk only
    applied, never written, needs no bytes)."""
    flip = {b"-": b"+", b"+": b"-"}
    lines = tuple(flip[line_kind(x)] + x[1:] if line_kind(x) in flip else x for x in h.lines)
    rev = Hunk(h.new_start, h.new_count, h.old_start, h.old_count, h.section, lines,
               h.new_no_newline, h.old_no_newline, h.line_no)
    return replace(rev, raw=format_hunk(rev)) if render else rev


def reverse_file_patch(fp: FilePatch) -> FilePatch:
    """The patch that undoes `fp` (old and new swapped); its `raw` is freshly rendered."""
    binary = None
    if fp.binary is not None:
        if fp.binary.reverse is None:
            raise ValueError(f"{fp.path}: the binary patch has no reverse block")
        from patchforge.apply.gitbinary import BinaryPatch

        binary = BinaryPatch(fp.binary.new_oid, fp.binary.old_oid, fp.binary.reverse,
                             fp.binary.forward, fp.binary.index_line)
    rev = FilePatch(fp.new_path, fp.old_path, fp.new_mode, fp.old_mode, fp.is_rename, fp.is_copy,
                    fp.is_binary, fp.similarity, tuple(reverse_hunk(h) for h in fp.hunks), b"",
                    fp.line_no, binary)
    return replace(rev, raw=format_file_patch(rev))
