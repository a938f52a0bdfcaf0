"""quilt `series` files: one patch name a line, `#` comments, optional `-pN` after the name.

Kept byte for byte: comments and blank lines survive every edit; only entries are changed.
"""
from __future__ import annotations

import re

from patchforge.apply.diffparse import conflict_marker_line
from patchforge.errors import InputError
from patchforge.names import INVISIBLE
from patchforge.model.record import record

PATCH_SUFFIX = ".patch"
_CONTROL_BYTES = bytes([*range(0x20), 0x7F])  # what no patch name may hold
# `-R`, alone or with a strip level after it (`-Rp1`): GNU patch, which quilt hands an entry's
# options to, applies the patch reversed.
_REVERSED = re.compile(rb"^-R(p\d+)?$")


@record(frozen=True)
class SeriesFile:
    lines: tuple[bytes, ...]  # raw lines, each with its line ending (the last may lack one)
    source: str = "series"
    # A quilt directory's series: an entry may say the strip level GNU patch applies it with
    # (`fix.patch -p0`, as `quilt refresh -p0` writes it); `strip_level` tells it.
    quilt: bool = False

    @property
    def names(self) -> list[str]:
        """The patch file names in order: `fix.patch` for a line `fix` too (a line may leave
        the suffix out, as quilt's may not: every command names the patch by its file, and a
        name spelled two ways was found by none of them)."""
        return [name for name, _ in self._files()]

    def as_written(self) -> list[tuple[str, int]]:
        """(name as the line writes it, 1-based line) of each entry: a quilt directory's series
        names its files exactly (`fix.diff`, `fix`)."""
        return [(name, index + 1) for name, index in self._entries()]

    def _files(self) -> list[tuple[str, int]]:
        """(patch file name, line index) of each entry."""
        made = self.__dict__.get("_made_files")
        if made is None:
            made = self.__dict__["_made_files"] = [(patch_file_name(name), index)
                                                    for name, index in self._entries()]
        return made

    def _entries(self) -> list[tuple[str, int]]:
        """(name, line index) of each entry, checked; read once per series (its lines never
        change): a command asks one series for its names several times. Callers must not
        change the list."""
        made = self.__dict__.get("_made_entries")
        if made is None:
            made = self.__dict__["_made_entries"] = self._read_entries()
        return made

    def strip_level(self, name: str) -> int:
        """The strip level (`-pN`) the quilt series entry `name` (as written) is applied with:
        1 where it says none, as quilt reads it."""
        return self.__dict__.get("_strip_levels", {}).get(name, 1)

    def _read_entries(self) -> list[tuple[str, int]]:
        out = []
        strip_levels: dict[str, int] = {}
        for index, raw in enumerate(self.lines):
            if raw[:1] in b"<>=|" and conflict_marker_line(raw) is not None:
                marker = raw.strip()[:40].decode("utf-8", "replace")
                raise InputError(f"a merge conflict marker ({marker!r}): a merge of this series "
                                 "file was left unresolved",
                                 path=self.source, line=index + 1,
                                 hint="resolve it: list the patches of both sides, in the order "
                                      "they apply, and remove the marker lines")
            text = raw.split(b"#", 1)[0].strip()
            if not text:
                continue
            parts = text.split()
            try:
                name = parts[0].decode("utf-8")
            except UnicodeDecodeError:
                # (A Latin-1 name from another tool.) It would go into manifest.json as a lone
                # surrogate, which strict JSON readers refuse, and raw into PATCHES.md.
                raise InputError(f"bad patch name {parts[0]!r}: it is not UTF-8 (rename the "
                                 "file, and its line, in UTF-8)",
                                 path=self.source, line=index + 1) from None
            for opt in _joined_strip_levels(parts[1:]):
                if _REVERSED.match(opt):
                    # quilt passes an entry's options to GNU patch, which applies a `-R`
                    # entry reversed (`-Rp1` alike); every command here reads a patch forward,
                    # so read as written it would be applied the other way than quilt does.
                    raise InputError(
                        f"patch {name!r} is listed with {opt[:40].decode(errors='replace')}: "
                        "quilt applies it reversed, and patchforge reads a patch only as its "
                        "diff is written", path=self.source, line=index + 1,
                        hint="write it forward: `quilt push` up to it and `quilt refresh` "
                             "(quilt writes the diff as applied and drops the -R), or reverse "
                             "its diff by hand and list it without -R")
                # (A strip level of more than 4300 digits is no number int() takes; of
                # more than four, no level a path has.)
                if self.quilt and opt[:2] == b"-p" and opt[2:].isdigit() and len(opt) <= 6:
                    strip_levels[name] = int(opt[2:])  # the last one, as GNU patch reads it
                    continue
                if not opt.startswith(b"-p") or self.quilt:
                    # (`-pab` is a `quilt refresh` option, never a series entry's: `quilt
                    # push` fails on it.)
                    raise InputError("unsupported series option "
                                     f"{opt[:40].decode(errors='replace')!r}",
                                     path=self.source, line=index + 1,
                                     hint="of a quilt series entry's options patchforge "
                                          "reads -pN (the strip level) alone"
                                          if self.quilt else None)
                if opt != b"-p1":
                    raise InputError(f"patch {name!r} is listed with {opt[:40].decode()}: patchforge "
                                     "patches are -p1 (paths relative to the upstream root)",
                                     path=self.source, line=index + 1)
            # quilt allows `sub/fix.patch` (a file in a subdirectory of patches/): a quilt
            # directory's entry may have one, each of its parts a name (never `..`, which
            # would read a file outside the directory, nor an absolute path); the import
            # takes the file's own name (`fix.patch`). A series of patchforge's is flat.
            parts_of = name.split("/") if self.quilt else [name]
            bad = next((part for part in parts_of
                        if part in ("", ".", "..") or part.startswith("-")), None)
            if bad is not None or (not self.quilt and "/" in name):
                # Said why: "bad patch name" alone left a user coming from quilt guessing.
                why = ("a patch of the series is a file directly in its series directory, "
                       "never in a subdirectory (move it up and list it by its file name)"
                       if not self.quilt and "/" in name else
                       "a part of its path is empty, '.' or '..' (a quilt patch is a file "
                       "under its patches directory)" if self.quilt and "/" in name and
                       bad in ("", ".", "..") else "a name cannot be '.' or '..'"
                       if bad in ("", ".", "..") else "a name cannot begin with '-' (it "
                       "would read as an option)")
                raise InputError(f"bad patch name {name!r}: {why}", path=self.source,
                                 line=index + 1)
            # (Tested on the bytes in one C pass: a decoded name holds a control character
            # exactly where its bytes hold one, and a test of each character in Python was
            # 1% of a long rebase's interpreted work, the series being read three times.)
            if len(parts[0].translate(None, _CONTROL_BYTES)) != len(parts[0]):
                # A NUL in a name reached the file system's calls as an internal error.
                raise InputError(f"bad patch name {name!r}: it holds a control character (a "
                                 "file name cannot, or should not)", path=self.source,
                                 line=index + 1)
            if not INVISIBLE.isdisjoint(name):
                raise InputError(f"bad patch name {name!r}: it holds a character that is not "
                                 "seen but changes how the name reads (zero-width or "
                                 "bidirectional)", path=self.source, line=index + 1)
            out.append((name, index))
        # `fix` and `fix.patch` name one file (a line may leave the suffix out): listed twice.
        seen: dict[str, tuple[str, int]] = {}
        for name, index in out:
            file_name = patch_file_name(name)
            if file_name in seen:
                first, at = seen[file_name]
                also = "" if first == name else f" as {first!r}"
                raise InputError(f"patch {name!r} is listed twice (first on line {at + 1}"
                                 f"{also})", path=self.source, line=index + 1)
            seen[file_name] = (name, index)
        self.__dict__["_strip_levels"] = strip_levels
        return out

    def line_of(self, name: str) -> int | None:
        """The 1-based line that lists `name` (either spelling), or None."""
        wanted = patch_file_name(name)
        return next((index + 1 for entry, index in self._files() if entry == wanted), None)

    def to_bytes(self) -> bytes:
        return b"".join(self.lines)

    def _line_ending(self) -> bytes:
        return b"\r\n" if self.lines and self.lines[0].endswith(b"\r\n") else b"\n"

    def _normalized(self) -> list[bytes]:
        lines = list(self.lines)
        if lines and not lines[-1].endswith(b"\n"):
            lines[-1] += self._line_ending()
        return lines

    def inserted(self, name: str, after: str | None = None, *, first: bool = False) -> "SeriesFile":
        """A new series with `name` after `after` (or at the end / at the start)."""
        lines = self._normalized()
        entry = name.encode("utf-8", "surrogateescape") + self._line_ending()
        entries = dict(self._files())
        after = None if after is None else patch_file_name(after)
        if first:
            position = min(entries.values(), default=len(lines))
        elif after is None:
            position = len(lines)
        else:
            position = entries[after] + 1
        lines.insert(position, entry)
        return SeriesFile(tuple(lines), self.source)

    def removed(self, name: str) -> "SeriesFile":
        entries = dict(self._files())
        lines = list(self.lines)
        del lines[entries[patch_file_name(name)]]
        return SeriesFile(tuple(lines), self.source)

    def renamed(self, old: str, new: str) -> "SeriesFile":
        index = dict(self._files())[patch_file_name(old)]
        spelled = next(name for name, at in self._entries() if at == index)
        if not spelled.endswith(PATCH_SUFFIX):  # the line's own way of naming it kept
            new = new.removesuffix(PATCH_SUFFIX)
        lines = list(self.lines)
        lines[index] = lines[index].replace(spelled.encode("utf-8", "surrogateescape"),
                                            new.encode("utf-8", "surrogateescape"), 1)
        return SeriesFile(tuple(lines), self.source)

    def replaced_names(self, names: list[str]) -> "SeriesFile":
        """The entries become exactly `names`, in that order, comments and blank lines kept.
        When `names` are the entries in their order with some left out (a rebase moving
        landed fixes out), every other line stays where it was, as written: an entry's own
        comment, `-p1` and place under a comment line included; the lines of the entries left
        out go. Otherwise the entries follow every comment and blank line, in order. One pass:
        a rebase of hundreds of patches calls this once."""
        entries = self._files()
        names = [patch_file_name(name) for name in names]
        wanted = set(names)
        if [name for name, _ in entries if name in wanted] == names:
            dropped = {index for name, index in entries if name not in wanted}
            return SeriesFile(tuple(raw for index, raw in enumerate(self.lines)
                                    if index not in dropped), self.source)
        entry_lines = {index for _, index in entries}
        base = SeriesFile(tuple(raw for index, raw in enumerate(self.lines)
                                if index not in entry_lines), self.source)
        if not names:
            return base
        ending = base._line_ending()
        return SeriesFile(tuple(base._normalized()) + tuple(
            name.encode("utf-8", "surrogateescape") + ending for name in names), self.source)


def _joined_strip_levels(options: list[bytes]) -> list[bytes]:
    """An entry's options with `-p N` (two words, which quilt passes to GNU patch as they are
    and GNU patch reads as `-pN`: `quilt push` applies `fix.patch -p 1` at level 1) joined
    into `-pN`; every other word as written."""
    out: list[bytes] = []
    at = 0
    while at < len(options):
        opt = options[at]
        if opt == b"-p" and at + 1 < len(options) and options[at + 1].isdigit():
            out.append(opt + options[at + 1])
            at += 2
            continue
        out.append(opt)
        at += 1
    return out


def patch_file_name(name: str) -> str:
    """The file a series entry names: a line may leave out `.patch`."""
    return name if name.endswith(PATCH_SUFFIX) else name + PATCH_SUFFIX


def parse_series(data: bytes, source: str = "series", *, quilt: bool = False) -> SeriesFile:
    """A series file checked; `quilt`: a quilt directory's (its entries may say `-pN`)."""
    # Split on \n only, so that whatever a user wrote (CR, form feeds) survives byte for byte.
    lines = tuple(_split_lf(data))
    series = SeriesFile(lines, source, quilt)
    series._entries()  # validate now, with line numbers
    return series


def _split_lf(data: bytes) -> list[bytes]:
    out, start = [], 0
    while start < len(data):
        end = data.find(b"\n", start)
        if end < 0:
            out.append(data[start:])
            break
        out.append(data[start:end + 1])
        start = end + 1
    return out
