"""Patch files: DEP-3 header + description + `---` + git-style diff, parsed and written byte for byte.

Owns: splitting a patch file into its parts (an mbox "From " line, the header fields, the free-text
description, the `---` separator with any diffstat, the diff), giving them back unchanged
(`PatchFile.to_bytes() == data` for every accepted input), editing single fields in place, and
writing new files in our canonical form. It also guards the interop promise: nothing before the
diff may look like a diff, a hunk or an ed script to `git apply`, `patch -p1` or `quilt push`.
"""
from __future__ import annotations

import io
import re
from functools import cached_property
from typing import Callable

from patchforge.apply.diffparse import (FilePatch, ParsedDiff, parse_diff, parse_diff_full,
                                        split_lines)
from patchforge.errors import InputError
from patchforge.model.record import field, record, replace
from patchforge.patterns import on_first_use

CANONICAL_ORDER = ("Description", "Author", "Origin", "Bug", "Forwarded", "Applied-Upstream",
                   "Upstream-Status", "Upstream", "Base", "Profiles", "Drop-When", "Keeps",
                   "Last-Update", "Reviewed-by")
# DEP-3 allows the git-am spellings as well; they name the same thing.
_ALIASES = {"description": "description", "subject": "description",
            "author": "author", "from": "author"}
# Every field a header of ours (or a DEP-3 one) has, canonical and lower case: _is_header_name.
# With them the names git writes above a message or under it (format-patch's mail headers,
# `quilt mail`'s, and the trailers `git interpret-trailers` users add): a first line `Name:
# value` under any other name is words (`ROCm: skip ...`, a commit subject naming its area).
_TRAILER_NAMES = frozenset({
    "acked-by", "reviewed-by", "signed-off-by", "co-authored-by", "co-developed-by",
    "tested-by", "reported-by", "suggested-by", "helped-by", "cc", "fixes", "link", "closes",
    "change-id"})
_HEADER_NAMES = {name.lower() for name in CANONICAL_ORDER} | {"date"} | _TRAILER_NAMES

# DEP-3's second set of fields ("pseudo-headers"), which may start any new paragraph of the free
# text: what `gbp pq export` and a git format-patch'd Debian patch carry after the description
# (From/Subject, the description, then `Forwarded: not-needed`, `Bug-Debian: URL`). These are
# read from there as from the header (after it), and `Bug-<Vendor>` too; never the fields that
# decide where a fix goes or which base it has, which only the header gives.
_PSEUDO_NAMES = frozenset({"forwarded", "applied-upstream", "bug", "origin", "last-update"})

# "Upstream-Status: Pending" -- a name, a colon, then whitespace or the end of the line (so that
# "http://..." in a free-text header is not taken for a field).
_FIELD_RE = re.compile(rb"^([A-Za-z0-9][A-Za-z0-9_-]*):(?:[ \t]|\r?\n|$)")
_NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9-]*$")
_MBOX_FROM_RE = re.compile(rb"^From \S+ ")
# The groups a mailer puts before a subject: the leading bracketed groups up to the last one
# holding `PATCH` (`[PATCH v2 1/3]`, `[RFC PATCH]`, `[RFC][PATCH 1/2]`: a group before a PATCH
# one marks the mail too). The groups after it, or a subject's with none (`[ROCm][Bugfix] Fix
# ...`, as vLLM titles pull requests), are the author's text, kept. `git am --keep-non-patch`
# (`git mailinfo -b`, which `import mbox` reads messages with) drops the PATCH groups alone:
# `[RFC][PATCH 1/2] [ROCm] x` is `[RFC][ROCm] x` there and `[ROCm] x` here, so a Description
# imported from an mbox keeps `[RFC]` that a patch file's Subject of the same text loses.
_PATCH_PREFIX_RE = re.compile(r"^(?:\s*\[[^\]]*\])*?(?:\s*\[[^\]]*PATCH[^\]]*\])+\s*")
# What GNU patch, git apply or quilt could take for the start of a diff, a hunk or an ed/normal
# diff. GNU patch skips leading blanks (and 'X') when looking for headers, so they are skipped here
# too before matching.
_DIFFLIKE_RE = re.compile(rb"^[ \tX]*(?:diff --git |--- |\+\+\+ |\*\*\* |Index: |@@ |Prereq:"
                          rb"|\*{15}|\d+(?:,\d+)?[acdi](?:\d+(?:,\d+)?)?\r?$)")


def _diff_start(lines: list[bytes]) -> int | None:
    """Index of the first line that starts the diff, as git apply and GNU patch see it."""
    for i, line in enumerate(lines):
        if line.startswith((b"diff --git ", b"Index: ")):
            return i
        if line.startswith(b"--- ") and i + 1 < len(lines) and lines[i + 1].startswith(b"+++ "):
            return i
    return None


diff_start = _diff_start  # for readers of other wrappings of a patch (what mailinfo gives)


def _split_at_diff(data: bytes) -> tuple[list[bytes], bytes]:
    """(the lines before the diff, the diff from its first line on, b"" without one): where
    _diff_start finds the start, without splitting the diff into lines and joining them again
    (a merge's patch of megabytes; the diff parser splits it once itself)."""
    head: list[bytes] = []
    reader = io.BytesIO(data)  # lines end at b"\n" only, as split_lines splits
    offset = 0
    line = reader.readline()
    while line:
        if line.startswith((b"diff --git ", b"Index: ")):
            return head, data[offset:]
        following = reader.readline()
        if line.startswith(b"--- ") and following.startswith(b"+++ "):
            return head, data[offset:]
        head.append(line)
        offset += len(line)
        line = following
    return head, b""


def _is_header_name(name: str) -> bool:
    """A field name a patch header has: DEP-3's and patchforge's (CANONICAL_ORDER and the git-am
    spellings), DEP-3's `Bug-<Vendor>` and `Acked-by`, and `X-` extensions."""
    low = name.lower()
    return _canon(low) in _HEADER_NAMES or low.startswith(("bug-", "x-"))


def _is_trailer_name(name: str) -> bool:
    """A name git writes under a commit message (`Signed-off-by`, `Fixes`, `Reviewed-by`):
    a header of such lines alone, or of them under a subject, is a commit message's words."""
    return name.lower() in _TRAILER_NAMES


# What a trailer's value is: a person (`A B <ab@example.com>`), a commit alone or with its
# subject in brackets (`Fixes: 1234567890ab ("...")`), an address (`Link: https://...`,
# `Closes: #12`), a Change-Id (`I0123abc...`). A commit followed by bare words (`Fixes:
# 1234567890ab negative slots read past the table`) is a subject naming the commit it mends.
_TRAILER_VALUE_RE = on_first_use(
    r"(?:.*<[^<>@\s]+@[^<>\s]+>|[^\s@]+@[^\s@]+|[0-9a-fA-F]{7,40}(?:\s*\(.*\))?|\S*://\S+"
    r"|\S*#\d+|I[0-9a-f]{7,40})\s*")


def _subject_not_trailer(f: HeaderField) -> bool:
    """A first line `Name: value` under a trailer's name whose value is none of a trailer's
    (`Fixes: negative slots read past the table`): a commit subject, not a field."""
    return _is_trailer_name(f.name) and "\n" not in f.value and \
        _TRAILER_VALUE_RE.fullmatch(f.value.strip()) is None


def _canon(name: str) -> str:
    low = name.lower()
    return _ALIASES.get(low, low)


@record(frozen=True)
class HeaderField:
    """One header field. `value` is unfolded (continuation lines joined with "\\n", " ." an empty
    line); `raw` is the exact bytes, continuation lines and line endings included."""

    name: str
    value: str
    raw: bytes


# What a terminal acts on (ESC starts a sequence that sets the window title, clears the screen,
# hides lines), the C1 controls included; tab and newline are text.
_CONTROL_RE = on_first_use("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def control_character(text: str) -> str | None:
    """The first control character of `text`, written visible (`\\x1b`); None without one."""
    found = _CONTROL_RE.search(text)
    return None if found is None else f"\\x{ord(found.group()):02x}"


def field_with_control_character(patch: "PatchFile") -> tuple[str, int, str] | None:
    """(field name, its line, the character written visible) of the first header field whose
    value holds a control character (a terminal showing the patch acts on it); None."""
    line = 1 + patch.preamble.count(b"\n")
    for f in patch.fields:
        found = control_character(f.value)
        if found is not None:
            return f.name, line, found
        line += f.raw.count(b"\n")
    return None


def description_with_control_character(patch: "PatchFile") -> tuple[int, str] | None:
    """(its line in the file, the character written visible) of the first control character
    in the free-text description between the header and the diff, which `pr` makes the commit
    body and the pull request's and `export --mbox` the mail's (a terminal showing them acts on
    it); None. A tab is text, and so is the CR of a line ending in CRLF."""
    line = 1 + (patch.preamble + b"".join(f.raw for f in patch.fields) + patch.gap).count(b"\n")
    for k, raw in enumerate(patch.description.split(b"\n")):
        found = control_character((raw[:-1] if raw.endswith(b"\r") else raw).decode(
            "utf-8", "replace"))
        if found is not None:
            return line + k, found
    return None


def _not_utf8(patch: "PatchFile", *, description: bool = True) -> tuple[str, int] | None:
    """(what, its line) of the first header field (or, with `description`, line of the free
    text) of `patch` whose bytes are not UTF-8 (a Latin-1 `Author: Andr\xe9`); None."""
    line = 1 + patch.preamble.count(b"\n")
    for f in patch.fields:
        try:
            f.raw.decode("utf-8")
        except UnicodeDecodeError:
            return f"{f.name}", line
        line += f.raw.count(b"\n")
    if not description:
        return None
    line += patch.gap.count(b"\n")
    for k, raw in enumerate(patch.description.split(b"\n")):
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError:
            return "description", line + k
    return None


def refuse_control_characters(patch: "PatchFile", path: str, carried: str, *,
                              text_as_bytes: bool = False) -> None:
    """InputError naming `path` and the line when a header field or the description of `patch`
    holds a control character, which `carried` (", which the mail would carry") says where it
    would go; the hint is `lint`, which names every one. Bytes that are not UTF-8 in a header
    field are refused alike, and in the description unless `text_as_bytes`: a pull request's
    JSON and a mail's header cannot carry them as they are (`pr` ended in an internal error
    with PR.md written and its record not), where a mail's body carries the free text byte for
    byte (`export --mbox`, then `import mbox`, gives the patch back as it was)."""
    foreign = _not_utf8(patch, description=not text_as_bytes)
    if foreign is not None:
        what, line = foreign
        raise InputError(f"its {what} holds bytes that are not UTF-8{carried}", path=path,
                         line=line, hint="save the patch file as UTF-8 (`iconv -f latin1 -t "
                                         "utf-8`, or your editor's encoding setting)")
    held = field_with_control_character(patch)
    if held is not None:
        name, line, char = held
        raise InputError(f"its {name} holds a control character ({char}){carried}", path=path,
                         line=line, hint="remove it from the header (`patchforge lint` names "
                                         "every one)")
    held_text = description_with_control_character(patch)
    if held_text is not None:
        line, char = held_text
        raise InputError(f"its description holds a control character ({char}){carried}",
                         path=path, line=line, hint="remove it from the description "
                                                    "(`patchforge lint` names every one)")


# DEP-3's `Last-Update`: a day, YYYY-MM-DD.
_LAST_UPDATE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})$")


def last_update_day(value: str):
    """The day a `Last-Update` value names (a datetime.date), read one way by every command:
    DEP-3's YYYY-MM-DD, that day at midnight UTC wherever a moment is needed (`pr`'s commit,
    `export --mbox`'s Date, so `git am` of the mbox and `pr` record one date). ValueError for
    anything else: `7 Dec 2026`, a day no month has, and a moment (`2026-05-01T10:00:00+02:00`,
    which `export --mbox` read with its time and mailed as +0000 while `pr` refused it)."""
    import datetime

    match = _LAST_UPDATE.match(value.strip())
    if match is None:
        raise ValueError(f"not YYYY-MM-DD: {value!r}")
    return datetime.date(int(match[1]), int(match[2]), int(match[3]))


def profile_names(value: str | None) -> tuple[str, ...]:
    """The profiles a `Profiles:` value lists (comma- or space-separated)."""
    return tuple(value.replace(",", " ").split()) if value else ()


@record(frozen=True)
class PatchFile:
    """A parsed patch file; the parts concatenate back to the input:
    preamble + fields + gap + description + separator + diff.

    `gap` is the blank line that ends the header (empty when there is no header), `separator`
    the `---` line with any diffstat up to the first diff line, `source` the name used in errors.
    """

    preamble: bytes
    fields: tuple[HeaderField, ...]
    description: bytes
    separator: bytes
    diff: bytes
    gap: bytes = b""
    source: str = field(default="<patch>", compare=False)

    def to_bytes(self) -> bytes:
        return (self.preamble + b"".join(f.raw for f in self.fields) + self.gap
                + self.description + self.separator + self.diff)

    # -- header -------------------------------------------------------------------------------

    def get(self, name: str) -> str | None:
        """The first value of `name` (case-insensitive; Subject/Description and From/Author are
        the same field), or None."""
        values = self.get_all(name)
        return values[0] if values else None

    def get_all(self, name: str) -> list[str]:
        return list(self._values.get(_canon(name), ()))

    def get_all_at(self, name: str) -> list[tuple[str, int]]:
        """The values of `name` as `get_all` gives them, each with the line of the file its
        field starts on (for messages that name where a value is wrong)."""
        key = _canon(name)
        found: list[tuple[str, int]] = []
        line = 1 + self.preamble.count(b"\n")
        for f in self.fields:
            if _canon(f.name) == key:
                found.append((f.value, line))
            line += f.raw.count(b"\n")
        return found + [(f.value, at) for f, at in self.pseudo_fields if _canon(f.name) == key]

    @cached_property
    def _values(self) -> dict[str, list[str]]:
        """Each field's values by its canonical name, in order: a command asks every patch of a
        long series for several fields (the judge, the ledger's columns), and folding each
        field's name again for each question added up."""
        values: dict[str, list[str]] = {}
        for f in self.fields:
            values.setdefault(_canon(f.name), []).append(f.value)
        for f, _ in self.pseudo_fields:
            values.setdefault(_canon(f.name), []).append(f.value)
        return values

    @cached_property
    def pseudo_fields(self) -> tuple[tuple[HeaderField, int], ...]:
        """DEP-3's pseudo-headers (see _PSEUDO_NAMES) with the line of the file each starts on:
        the fields of the free text's paragraphs that are fields only (every line `Name: value`
        or a folded continuation), as `gbp pq export` writes `Forwarded:` after a description.
        A paragraph holding any other line is prose, and nothing of it is read."""
        if b":" not in self.description:
            return ()
        found: list[tuple[HeaderField, int]] = []
        first = 1 + (self.preamble + b"".join(f.raw for f in self.fields) + self.gap).count(b"\n")
        lines = split_lines(self.description)
        start = 0  # where the paragraph being read begins
        for end in range(len(lines) + 1):
            if end < len(lines) and lines[end].strip():
                continue
            paragraph = lines[start:end]
            if paragraph and _FIELD_RE.match(paragraph[0]) and all(
                    _FIELD_RE.match(part) or part[:1] in (b" ", b"\t") for part in paragraph):
                i = 0
                while i < len(paragraph):
                    j = i + 1
                    while j < len(paragraph) and paragraph[j][:1] in (b" ", b"\t"):
                        j += 1
                    match = _FIELD_RE.match(paragraph[i])
                    assert match is not None
                    name = match.group(1).decode("ascii")
                    if name.lower() in _PSEUDO_NAMES or name.lower().startswith("bug-"):
                        found.append((HeaderField(name, _unfold(paragraph[i:j]),
                                                  b"".join(paragraph[i:j])), first + start + i))
                    i = j
            start = end + 1
        return tuple(found)

    @property
    def _eol(self) -> bytes:
        for part in [f.raw for f in self.fields] + [self.gap, self.separator]:
            if part.endswith(b"\r\n"):
                return b"\r\n"
            if part.endswith(b"\n"):
                return b"\n"
        return b"\n"

    def with_field(self, name: str, value: str) -> PatchFile:
        """Set a field: the first field of that name (or its alias) keeps its place and spelling;
        otherwise the field is added at the end of the header (above the words of a header that
        is none: `header_read_as_text`)."""
        key = _canon(name)
        fields = list(self.fields)
        for k, f in enumerate(fields):
            if _canon(f.name) == key:
                # Keep the replaced field's own line ending (headers can mix them).
                eol = b"\r\n" if f.raw.endswith(b"\r\n") else (
                    b"\n" if f.raw.endswith(b"\n") else self._eol)
                fields[k] = HeaderField(f.name, value, _render_field(f.name, value, eol))
                return _keep_parse(self, replace(self, fields=tuple(fields)))
        text = self.header_read_as_text()
        if text is not self:  # the words' first line only looked like a field: kept whole
            return text.with_field(name, value)
        fields.append(HeaderField(name, value, _render_field(name, value, self._eol)))
        gap = self.gap
        # A new header must be ended by a blank line. One that already ran straight into its
        # `---` or diff (a Debian patch's, often) is read so with the field added too: its
        # bytes are kept as written.
        if not gap and (self.description or not self.fields) \
                and (self.description or self.separator or self.diff):
            gap = self._eol
        return _keep_parse(self, replace(self, fields=tuple(fields), gap=gap))

    def with_field_added(self, name: str, value: str) -> PatchFile:
        """Add one more field of a repeatable name (`Keeps`, `Bug`): under the last field of
        that name (or its alias), else as `with_field` adds a field."""
        key = _canon(name)
        fields = list(self.fields)
        last = max((k for k, f in enumerate(fields) if _canon(f.name) == key), default=None)
        if last is None:
            return self.with_field(name, value)
        raw = fields[last].raw
        eol = b"\r\n" if raw.endswith(b"\r\n") else (b"\n" if raw.endswith(b"\n") else self._eol)
        fields.insert(last + 1, HeaderField(name, value, _render_field(name, value, eol)))
        return _keep_parse(self, replace(self, fields=tuple(fields)))

    def with_each(self, name: str, rewrite: Callable[[str], str]) -> PatchFile:
        """Every field of that name (or its alias) given `rewrite(value)`, in its place; a field
        the rewrite leaves equal keeps its bytes (its folding, its line ending)."""
        key = _canon(name)
        fields = list(self.fields)
        for k, f in enumerate(fields):
            if _canon(f.name) == key and (value := rewrite(f.value)) != f.value:
                eol = b"\r\n" if f.raw.endswith(b"\r\n") else (
                    b"\n" if f.raw.endswith(b"\n") else self._eol)
                fields[k] = HeaderField(f.name, value, _render_field(f.name, value, eol))
        if fields == list(self.fields):
            return self
        return _keep_parse(self, replace(self, fields=tuple(fields)))

    def without_field(self, name: str) -> PatchFile:
        """Drop every field of that name (or its alias)."""
        key = _canon(name)
        fields = tuple(f for f in self.fields if _canon(f.name) != key)
        gap = self.gap if fields or self.preamble else b""
        return replace(self, fields=fields, gap=gap)

    def with_description(self, description: bytes) -> PatchFile:
        """Replace the free-text description (checked so no tool can take it for a diff)."""
        if description and not description.endswith(b"\n"):
            description += self._eol
        _check_text(description, self.source, 1)
        gap = self.gap
        if self.fields and not gap and description:
            gap = self._eol
        separator = self.separator
        if description and not separator and self.diff:
            separator = b"---" + self._eol
        return replace(self, description=description, gap=gap, separator=separator)

    def with_diff(self, diff: bytes) -> PatchFile:
        """Replace the diff (validated by parsing it)."""
        parsed = parse_diff_full(diff, source=self.source, first_line=self.diff_first_line)
        separator = self.separator
        if diff and not separator and (self.fields or self.description):
            separator = b"---" + self._eol
        new = replace(self, diff=diff, separator=separator)
        if new.diff_first_line == self.diff_first_line:
            new.__dict__["parsed_diff"] = parsed  # what the cached property would compute
        return new

    def with_remade_diff(self, diff: bytes) -> PatchFile:
        """`with_diff` for a diff patchforge made again (refresh, rebase, bring-back, a quilt
        patch taken back): the words the old diff held between its file sections
        (`notes_in_diff`) have no place in the new one, so they go to the end of the
        description instead of being lost. The caller says so (`notes_in_diff` of the old
        patch gives them with their lines)."""
        new = self.with_diff(diff)
        if new.diff == self.diff:
            return new
        notes = self.notes_in_diff()
        if not notes:
            return new
        kept = self.description.rstrip(b"\r\n")
        # A note may hold lines a patch tool would read as part of a diff (`*** NOTE ***`, a
        # `---` rule, `@@ `): kept as words, those lines quoted (quote_diff_like).
        return new.with_description(
            b"\n\n".join(([kept] if kept else [])
                         + [quote_diff_like(text).rstrip(b"\r\n") for _, text in notes])
            + b"\n\n")

    def header_read_as_text(self) -> PatchFile:
        """This patch with a header that is no header given back to the text: lines that only
        look like fields (`Note: c must be C.`, `ROCm: skip negative slots`, `enum: keep in
        step with C++`), none a field a patch header has (DEP-3's, patchforge's, git's,
        `Bug-*`, `X-*`: _is_header_name), are words. Running straight into free text, they
        are the first lines of a plain diff's words: a field written under them (refresh's
        `Last-Update`) split that paragraph in two, half of it now a field. Alone, or above
        a blank line and more words, the first is a commit subject naming its area, as
        `quilt header -r` keeps it: read as a field, the subject was in no Description,
        `lint` said there was none, and taking it back replaced the fix's header with it.
        So are git's trailers with no field of a patch header beside them, under such a
        subject (`ROCm: ...` with `Signed-off-by:` straight under it) or under a subject that
        is itself `Fixes: ...` (no commit, person or address a trailer names): a commit
        message, not a header (read as one, `quilt header -r` of it replaced the fix's
        Description, Author and Upstream-Status). Trailers alone (`Signed-off-by: A B
        <ab@example.com>`) stay fields. Otherwise the patch itself. The bytes are the same
        either way."""
        if self.preamble or not self.fields or any(
                _is_header_name(f.name) and not _is_trailer_name(f.name) for f in self.fields):
            return self
        first = self.fields[0]
        if _is_header_name(first.name) and not _subject_not_trailer(first):
            return self
        return _keep_parse(self, replace(self, fields=(), gap=b"", description=b"".join(
            f.raw for f in self.fields) + self.gap + self.description))

    def field_line(self, name: str) -> int | None:
        """The line of the patch file the first `name` field starts on, or None (for findings
        that point at a field)."""
        line = 1 + self.preamble.count(b"\n")
        for f in self.fields:
            if _canon(f.name) == _canon(name):
                return line
            line += f.raw.count(b"\n")
        return next((at for f, at in self.pseudo_fields if _canon(f.name) == _canon(name)),
                    None)

    @property
    def standing(self) -> str | None:
        """Where the fix stands upstream, in Upstream-Status's words: the field itself, else
        what DEP-3's own fields say (a Debian patch carries no Upstream-Status, and one is never
        added to it: its header is kept as written). Applied-Upstream: `Accepted [it]`;
        Forwarded: `no` is `Pending`, `not-needed` `Inappropriate [not needed]`, `yes`
        `Submitted`, a URL (or OWNER/REPO#N) `Submitted [it]`. None when nothing says."""
        status = " ".join((self.get("Upstream-Status") or "").split())
        if status:
            return status
        applied = " ".join((self.get("Applied-Upstream") or "").split())
        if applied:
            return f"Accepted [{applied}]"
        forwarded = " ".join((self.get("Forwarded") or "").split())
        said = {"no": "Pending", "not-needed": "Inappropriate [not needed]", "yes": "Submitted"}
        if forwarded.lower() in said:
            return said[forwarded.lower()]
        return f"Submitted [{forwarded}]" if forwarded else None

    @property
    def profiles(self) -> tuple[str, ...]:
        """The profiles the patch lists (`Profiles: gfx942, gfx950`); empty means all profiles."""
        return profile_names(self.get("Profiles"))

    @property
    def description_text(self) -> str:
        """The whole description as text: the Description field's continuation lines (DEP-3's
        long description), then the free text between the header and the diff, blank lines at
        either end dropped. What a pull request's body and the reviewers' page show."""
        parts: list[str] = []
        for f in self.fields:
            if f.name.lower() == "description":
                rest = f.value.split("\n", 1)[1] if "\n" in f.value else ""
                if rest.strip():
                    parts.append(rest.strip("\n"))
                break
        free = self.description.decode("utf-8", "replace").replace("\r\n", "\n")
        if free.strip():
            parts.append(free.strip("\n"))
        return "\n\n".join(parts)

    @property
    def subject(self) -> str | None:
        """The one-line summary: the first line of Description, or the (unfolded, decoded) email
        Subject with its "[PATCH n/m]" prefix stripped (a bracketed tag of the author's own,
        `[ROCm]`, stays: it is part of the title a pull request or a commit carries)."""
        for f in self.fields:
            if _canon(f.name) != "description":
                continue
            if f.name.lower() == "subject":
                text = " ".join(part.strip() for part in f.value.split("\n"))
                if "=?" in text:
                    try:
                        from email.header import decode_header, make_header

                        text = str(make_header(decode_header(text)))
                    except (ValueError, LookupError):
                        pass
            else:
                text = f.value.split("\n", 1)[0]
            return _PATCH_PREFIX_RE.sub("", text).strip()
        return None

    # -- diff ---------------------------------------------------------------------------------

    @property
    def diff_first_line(self) -> int:
        """1-based line number in the file where the diff begins."""
        head = (self.preamble + b"".join(f.raw for f in self.fields) + self.gap
                + self.description + self.separator)
        return head.count(b"\n") + 1

    @cached_property
    def parsed_diff(self) -> ParsedDiff:
        """The diff parsed keeping everything (the words between file sections too)."""
        return parse_diff_full(self.diff, source=self.source, first_line=self.diff_first_line)

    @property
    def file_patches(self) -> tuple[FilePatch, ...]:
        return self.parsed_diff.files

    def converted_line_end(self) -> int | None:
        """The line of the patch file where its line ends show an editor converted them to
        CRLF, or None: a file header line (`diff --git`, `---`) never ends in CR as git or diff
        write it (a CR in a name is quoted), so one that does was converted after the fact; a
        CR inside the hunks can be the upstream file's own. No hunk of such a file matches an
        LF file, and applying it says only that the hunks fail."""
        for fp in self.file_patches:
            header = next((line for line in fp.raw.split(b"\n")
                           if line.startswith((b"diff --git ", b"--- "))), b"")
            if header.endswith(b"\r"):
                return fp.line_no
        return None

    def converted_line_end_words(self) -> tuple[int, str] | None:
        """(line, why its hunks fail) for a patch file whose line ends an editor converted to
        CRLF (`converted_line_end`), or None: the words lint's `line-ends` finding and every
        command applying the series say, so that the ones CI runs (`overlays --check`,
        `check`) name the cause, not only a hunk that does not apply."""
        line = self.converted_line_end()
        if line is None:
            return None
        return line, (f"line {line} of the patch file ends in CRLF: its line ends were converted "
                      "(an editor saving with CRLF?), so its hunks match no LF file")

    def notes_in_diff(self) -> list[tuple[int, bytes]]:
        """(line in the file, text) of each block of words the diff holds outside its file
        sections: between two of them (a note on the next file, written into a plain .diff)
        or after the last one. git apply and GNU patch pass over them, so they live only in
        these bytes: a diff made again (`refresh`) has no place for them. The lines diff tools
        write there themselves (`diff -ruN a b`, `Only in`, format-patch's `-- ` signature)
        and blank lines are no one's words and are left out."""
        parsed = self.parsed_diff
        line = self.diff_first_line
        blocks: list[tuple[int, bytes]] = []
        outside = [(fp.raw, True) for fp in parsed.files] + [(parsed.trailing, False)]
        for raw, has_section in outside:
            lines = split_lines(raw)
            start = (_diff_start(lines) or 0) if has_section else len(lines)
            if not has_section and SIGNATURE.fullmatch(raw):
                start = 0  # format-patch's signature: the mail's, as `git am` drops it
            words = [(line + k, text) for k, text in enumerate(lines[:start])
                     if not text.startswith(_TOOL_LINES)]
            while words and not words[0][1].strip():
                words.pop(0)
            while words and not words[-1][1].strip():
                words.pop()
            if words:
                blocks.append((words[0][0], b"".join(text for _, text in words)))
            line += len(lines)
        return blocks

    @cached_property
    def paths(self) -> tuple[str, ...]:
        """Every path the diff touches (both names of a rename), in order, once each (made
        once: a rebase asks each patch for them a few times, the judge's reads many)."""
        seen: dict[str, None] = {}
        for fp in self.file_patches:
            for p in (fp.old_path, fp.new_path):
                if p is not None:
                    seen.setdefault(p, None)
        return tuple(seen)


def _unfold(raw_lines: list[bytes]) -> str:
    first = raw_lines[0].split(b":", 1)[1].rstrip(b"\r\n").strip(b" \t")
    parts = [first]
    for line in raw_lines[1:]:
        body = line.rstrip(b"\r\n")[1:]
        parts.append(b"" if body == b"." else body)
    return b"\n".join(parts).decode("utf-8", "surrogateescape")


def _render_field(name: str, value: str, eol: bytes = b"\n") -> bytes:
    if not _NAME_RE.match(name):
        raise InputError(f"bad header field name {name!r}", hint="use letters, digits and '-'")
    if any(c in value for c in "\0\r"):
        raise InputError(f"header field {name}: NUL or carriage return in value")
    lines = value.split("\n")
    out = [f"{name}:" + (f" {lines[0]}" if lines[0] else "")]
    # DEP-3 continuation: a leading space; an empty line is written " ."
    out.extend(" " + (line if line else ".") for line in lines[1:])
    data = eol.join(s.encode("utf-8", "surrogateescape") for s in out) + eol
    _check_text(data, f"<field {name}>", 1)
    return data


def _check_text(data: bytes, source: str, first_line: int) -> None:
    """Refuse any line a patch tool could take for part of a diff or an ed script."""
    for k, line in enumerate(split_lines(data)):
        if _DIFFLIKE_RE.match(line.rstrip(b"\n")) or line.rstrip(b"\r\n") == b"---":
            raise InputError("this line would be taken for part of a diff by git apply, "
                             "patch or quilt", path=source, line=first_line + k,
                             hint="indent it differently or reword it")


# What diff tools write between file sections themselves (`diff -ruN a/x b/x`, `Only in a: y`):
# no one's words (PatchFile.notes_in_diff).
_TOOL_LINES = (b"diff ", b"Only in ", b"Common subdirectories: ")
# What `git format-patch` writes after a message's diff unless --no-signature: `-- `, a line
# (git's version, or --signature's text) and blank lines.
SIGNATURE = re.compile(rb"-- \r?\n[^\n]*\n?(?:\r?\n)*")

_BINARY_MARK_RE = re.compile(rb"^(?:Binary files .* differ\r?|GIT binary patch\r?)$")


def quote_diff_like(text: bytes) -> bytes:
    """`text` (a commit message, say) with every line a patch tool could take for part of a
    diff quoted as "> line": a Markdown `---` rule, a quoted `--- a/x` or `@@` line, a
    "2d" that reads as an ed command. A real commit is never refused for its message; the
    words stay, only the line no longer starts a diff."""
    out = []
    for line in split_lines(text):
        bare = line.rstrip(b"\r\n")
        if _DIFFLIKE_RE.match(bare) or bare == b"---" or _BINARY_MARK_RE.match(bare):
            line = b"> " + line
        out.append(line)
    return b"".join(out)


def _keep_parse(old: PatchFile, new: PatchFile) -> PatchFile:
    """`new` with `old`'s parsed diff when that parse is also new's: same diff bytes starting on
    the same line of the file (the parse holds line numbers for error messages)."""
    parsed = old.__dict__.get("parsed_diff")
    if parsed is not None and new.diff == old.diff and new.diff_first_line == old.diff_first_line:
        new.__dict__["parsed_diff"] = parsed
    return new


def renamed(patch: PatchFile, source: str) -> PatchFile:
    """`patch` named `source`, keeping its parsed diff."""
    return patch if patch.source == source else _keep_parse(patch, replace(patch, source=source))


def parse_patch_file(data: bytes, source: str = "<patch>", *,
                     diffs: dict | None = None) -> PatchFile:
    """Split a patch file into its parts; raises InputError(path=source, line=N) when it is
    malformed or hostile. A file with no diff at all is a valid (empty) patch. (A command
    parses each patch once through Project.parse_patch, which keeps the parses it made.)

    `diffs` keeps parsed diffs by (diff bytes, first line): a patch whose diff is one already
    parsed there (a rebase changes only the Base field of most patches) takes that parse, which
    is exactly what parsing it again would give (the name is only used in error messages)."""
    if data.startswith(b"\xef\xbb\xbf"):
        # An editor's byte-order mark (Notepad) is invisible: the first field, read with it,
        # is no field, and the refusal that follows named a line that looks right.
        raise InputError("the file begins with a UTF-8 byte-order mark (U+FEFF, invisible in "
                         "an editor): its first header field would not be read", path=source,
                         line=1, hint="save it as UTF-8 without a byte-order mark")
    head, diff = _split_at_diff(data)
    i = 0
    preamble = b""
    if head and _MBOX_FROM_RE.match(head[0]) and not _FIELD_RE.match(head[0]):
        preamble = head[0]
        i = 1
    fields: list[HeaderField] = []
    while i < len(head) and (m := _FIELD_RE.match(head[i])):
        j = i + 1
        while j < len(head) and head[j][:1] in (b" ", b"\t") and head[j].strip():
            j += 1
        fields.append(HeaderField(m.group(1).decode("ascii"), _unfold(head[i:j]),
                                  b"".join(head[i:j])))
        i = j
    gap = b""
    if (fields or preamble) and i < len(head) and head[i] in (b"\n", b"\r\n"):
        gap = head[i]
        i += 1
    sep = next((k for k in range(i, len(head)) if head[k].rstrip(b"\r\n") == b"---"), len(head))
    description = b"".join(head[i:sep])
    separator = b"".join(head[sep:])
    # Lines before the diff: nothing there may look like a hunk or an ed script. A diffstat in
    # the separator only ever holds " path | n +-" lines, so it is checked the same way.
    first = 1 + (preamble + b"".join(f.raw for f in fields) + gap).count(b"\n")
    _check_description(description + separator, source, first)
    _check_deciding_spellings(fields, source, 1 + preamble.count(b"\n"))
    _check_deciding_values(fields, source, 1 + preamble.count(b"\n"))
    _check_no_stranded_field(description, gap, source, first)
    pf = PatchFile(preamble, tuple(fields), description, separator, diff, gap, source)
    if diff:
        # PatchFile.diff_first_line, from the counts above (it joins the head again).
        key = (diff, first + (description + separator).count(b"\n"))
        known = diffs.get(key) if diffs is not None else None
        if known is None:  # validate now: a malformed diff is an input error at load time
            known = parse_diff_full(diff, source=source, first_line=key[1])
            if diffs is not None:
                diffs[key] = known
        pf.__dict__["parsed_diff"] = known  # what the cached property would compute
    if pf.to_bytes() != data:  # a bug, not bad input: the parts must always add up
        raise AssertionError("patch file split is not byte-exact")
    return pf


# A merge's conflict block (`<<<<<<< HEAD` ... `>>>>>>> other`) in the header or description:
# two branches that each refreshed one fix both changed its Last-Update line, and with the
# markers the header ended above it, the rest read as description. Nothing said so; `pr` put
# the markers into the pull request's description.
_CONFLICT_OPENS = re.compile(rb"<{7}(?: |\r?\n|$)")
_CONFLICT_CLOSES = on_first_use(rb">{7}(?: |\r?\n|$)")
# A hunk, a context diff's markers or an ed command: no line before the diff may read so.
_HUNKLIKE_RE = on_first_use(
    rb"^[ \tX]*(?:@@ |\*\*\* |\*{15}|\d+(?:,\d+)?[acdi](?:\d+(?:,\d+)?)?\r?$)")


def _check_description(text: bytes, source: str, first_line: int) -> None:
    lines = split_lines(text)
    opened = next((k for k, line in enumerate(lines) if _CONFLICT_OPENS.match(line)), None)
    if opened is not None and any(_CONFLICT_CLOSES.match(line) for line in lines[opened + 1:]):
        marker = lines[opened].strip()[:40].decode("utf-8", "replace")
        raise InputError(f"a merge conflict marker ({marker!r}): a merge of this patch file was "
                         "left unresolved", path=source, line=first_line + opened,
                         hint="resolve it: keep the header fields and description each side "
                              "meant, and remove the marker lines")
    for k, line in enumerate(lines):
        bare = line.rstrip(b"\n")
        if _HUNKLIKE_RE.match(bare):
            raise InputError("a hunk, context diff or ed script outside the diff; refused "
                             "(nothing from a patch is ever run)", path=source,
                             line=first_line + k)
        if _BINARY_MARK_RE.match(bare):
            # A binary change without a `diff --git` header would otherwise pass for text and
            # make an empty patch: refuse it as the binary patch it is.
            raise InputError("a binary patch outside any `diff --git` section (no file to "
                             "carry it to)", path=source, line=first_line + k)


# Fields that decide where a fix goes or when it leaves. One of them stranded in the description
# (the header ended early because a line above it lost its colon) would silently change what is
# deployed: a gfx942-only fix would reach every profile.
_DECIDING_FIELDS = {b"profiles", b"drop-when", b"keeps", b"base", b"upstream"}


# What a spelling of a field name may add or leave out: `-`, `_`, spaces and tabs.
_SPELLING_MARKS = str.maketrans("", "", "-_ \t")
# The deciding fields by a spelling that forgives case, `-`/`_`/space and a plural `s`: what
# a hand-written near miss (`Profile:`, `Drop_When:`, `Keep:`, `Profiles :`) comes down to.
_DECIDING_SPELLED = {"profile": "Profiles", "dropwhen": "Drop-When", "keep": "Keeps",
                     "base": "Base", "upstream": "Upstream"}
_NEAR_MISS_CONSEQUENCE = {
    "Profiles": "the fix would reach every profile",
    "Drop-When": "its condition would never be evaluated",
    "Keeps": "its invariant would never be checked",
    "Base": "the base would not be recorded", "Upstream": "the upstream would not be checked"}
# A line that may be meant as a field: a name (letters, digits, `-`, `_`, spaces), then `:` or
# `=`, with blanks around either.
_LOOSE_FIELD_RE = on_first_use(rb"^[ \t]*([A-Za-z][A-Za-z0-9_ -]*?)[ \t]*[:=]")


def _deciding_field_meant(name: bytes | str) -> str | None:
    """The deciding field a field name is a spelling of (`Profile` -> `Profiles`), or None."""
    text = name.decode("ascii", "replace") if isinstance(name, bytes) else name
    key = text.lower().translate(_SPELLING_MARKS)
    return _DECIDING_SPELLED.get(key[:-1] if key.endswith("s") else key)


def _check_deciding_spellings(fields: list[HeaderField], source: str, first_line: int) -> None:
    """Refuse a header field spelled nearly like a deciding one (`Profile: gfx942`): kept as an
    unknown field, it would be ignored, and a one-profile fix deployed everywhere."""
    line = first_line
    for f in fields:
        meant = _deciding_field_meant(f.name)
        if meant is not None and f.name.lower() != meant.lower():
            raise InputError(f"'{f.name}:' is not a field patchforge reads: "
                             f"{_NEAR_MISS_CONSEQUENCE[meant]}", path=source, line=line,
                             hint=f"write it as '{meant}:'")
        line += f.raw.count(b"\n")


# The deciding fields a patch has one of: a second one was read by some commands and not by
# others (overlays took a fix to the first `Profiles:` line's profiles, `pr` to both lines').
_SINGLE_DECIDING = {"profiles": "Profiles", "drop-when": "Drop-When", "base": "Base",
                    "upstream": "Upstream"}


def _check_deciding_values(fields: list[HeaderField], source: str, first_line: int) -> None:
    """Refuse a deciding field written twice, and a `Profiles:` that lists no profile: a fix
    without the field is for every profile, and an empty one read the same, so a list whose
    names were lost (cut by an editor, a merge) deployed a one-profile fix everywhere."""
    line = first_line
    seen: dict[str, int] = {}  # field -> the line it was first written on
    for f in fields:
        name = f.name.lower()
        if name in _SINGLE_DECIDING:
            canon = _SINGLE_DECIDING[name]
            if name in seen:
                raise InputError(f"'{canon}:' is written twice (first at line {seen[name]}): "
                                 "a patch has one, and commands would disagree on which "
                                 "counts", path=source, line=line,
                                 hint=f"join them into one '{canon}:' line")
            seen[name] = line
            if name == "profiles" and not profile_names(f.value):
                raise InputError("'Profiles:' lists no profile, and would be read as every "
                                 "profile", path=source, line=line,
                                 hint="name the profiles the fix is for (`Profiles: gfx942`), or "
                                      "remove the line: a fix without one is for every profile")
        line += f.raw.count(b"\n")


def _check_no_stranded_field(description: bytes, gap: bytes, source: str, first_line: int) -> None:
    """Refuse a deciding field in the description's first paragraph when no blank line separates
    it from where the header ended: the header was cut short, not written that way (a line
    above lost its colon, or the field itself is misspelled: `Profiles : gfx942`)."""
    if gap:
        return
    for k, line in enumerate(split_lines(description)):
        if not line.strip():
            return
        m = _FIELD_RE.match(line)
        if m and m.group(1).lower() in _DECIDING_FIELDS:
            raise InputError(f"'{m.group(1).decode('ascii')}:' is read as description, not as a "
                             f"header field: the header ends at line {first_line} (a line "
                             "there is not 'Name: value'); fix that line", path=source,
                             line=first_line + k)
        loose = _LOOSE_FIELD_RE.match(line)
        meant = _deciding_field_meant(loose.group(1)) if loose else None
        if meant is not None:
            raise InputError(f"{line.strip().decode('utf-8', 'replace')[:60]!r} is read as "
                             f"description, not as the header field '{meant}': "
                             f"{_NEAR_MISS_CONSEQUENCE[meant]}", path=source,
                             line=first_line + k, hint=f"write it as '{meant}: ...'")


def render_patch_file(fields: list[tuple[str, str]], description: bytes, diff: bytes) -> bytes:
    """Write a new patch file in canonical form: fields in canonical order ("Name: value"), a
    blank line, the description (if any), "---", the diff."""
    def rank(item: tuple[int, tuple[str, str]]) -> tuple[int, int]:
        k, (name, _) = item
        canon = {"subject": "description", "from": "author"}.get(name.lower(), name.lower())
        order = [n.lower() for n in CANONICAL_ORDER]
        return (order.index(canon) if canon in order else len(order), k)
    ordered = [f for _, f in sorted(enumerate(fields), key=rank)]
    head = b"".join(_render_field(name, value) for name, value in ordered)
    if description and not description.endswith(b"\n"):
        description += b"\n"
    _check_text(description, "<description>", 1)
    parse_diff(diff, source="<diff>")
    return head + b"\n" + description + b"---\n" + diff
