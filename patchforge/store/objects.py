"""Git objects made without git: object ids, raw trees and commits, loose objects and small packs
written into a git directory, and a tree edited along the paths that change.

A commit of "this tree with these few files changed" (a rebase stop, an edit's base) used to take
five git processes, one of which read the whole upstream tree into an index (5,000 files for
AITER) to change three of them. Editing the tree along the changed paths touches only the trees
on those paths (a few per file), which the store's cat-file has already read and parsed, and the
new objects are a handful of small loose objects: no process at all. The formats are git's own
(Documentation/technical: loose objects are `<kind> <size>\\0<data>` deflated, trees are sorted
entries `<mode> <name>\\0<20-byte id>`), and the tests hold every id to the one git makes of the
same change.
"""
from __future__ import annotations

import os
import struct
import zlib
from pathlib import Path
from typing import Callable

from patchforge import tempfiles
from patchforge.model.record import record
from patchforge.patterns import on_first_use

EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
TREE_MODE = "40000"

# What `git commit-tree` would rewrite or refuse in an identity: crud at either end (ident.c's
# `crud()`), '<', '>' and newlines inside. Such identities go through git itself.
_CRUD = frozenset(b" \t\n\r\x0b\x0c,:;<>\"\\'") | frozenset(range(0, 33))
_RAW_DATE = on_first_use(r"(\d{1,15}) ([+-])(\d\d)(\d\d)")


def object_id(kind: bytes, data: bytes) -> str:
    global _sha1
    if _sha1 is None:
        # Loaded at the first id, not at import: loading OpenSSL is not free, and few commands
        # hash; kept, not imported again per call: a rebase's range-diff makes an id for each
        # of its thousands of trees and commits.
        import hashlib

        _sha1 = hashlib.sha1
    digest = _sha1(b"%s %d\0" % (kind, len(data)))
    digest.update(data)  # not concatenated: that copies the content
    return digest.hexdigest()


_sha1: Callable | None = None


def write_loose(git_dir: Path, kind: bytes, data: bytes) -> str:
    """Store one object as a loose object of `git_dir` (a no-op when it is already loose there);
    returns its id. Written under a temporary name and renamed, as git does: a reader sees the
    whole object or none."""
    import hashlib

    body = b"%s %d\0" % (kind, len(data)) + data
    oid = hashlib.sha1(body).hexdigest()
    folder = Path(git_dir) / "objects" / oid[:2]
    target = folder / oid[2:]
    if target.exists():
        return oid
    folder.mkdir(exist_ok=True)
    fd, tmp = tempfiles.make_temp(folder, "tmp_obj_")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(zlib.compress(body, 1))
        os.chmod(tmp, 0o444)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return oid


def tree_bytes(entries: dict[bytes, tuple[str, str]]) -> bytes:
    """The raw tree of `entries` (name -> (mode, id)), in git's order: names compared as bytes,
    a directory's as if it ended in '/'."""
    def key(name: bytes) -> bytes:
        return name + b"/" if entries[name][0] == TREE_MODE else name

    return b"".join(b"%s %s\0" % (entries[name][0].encode(), name) + bytes.fromhex(entries[name][1])
                    for name in sorted(entries, key=key))


def git_mode(mode: str) -> str:
    """A mode as a tree stores it ("100644", "40000"), from any spelling ("040000")."""
    return mode.lstrip("0") or "0"


def commit_bytes(tree: str, parents: list[str], author: tuple[str, str, str],
                 message: str) -> bytes | None:
    """The raw commit `git commit-tree` makes with this tree, parents, author (also the
    committer: (name, email, raw date "<seconds> <+hhmm>")) and message; None when git would
    change something on the way (crud in the identity, another date form, a message that is not
    plain UTF-8 to git), so that the caller lets git make it."""
    name, email, date = author
    found = _RAW_DATE.fullmatch(date)
    if not found or int(found.group(4)) >= 60 or not _plain_ident(name) \
            or not _plain_ident(email, allow_empty=True):
        return None
    if any(0xFDD0 <= ord(c) <= 0xFDEF or (ord(c) & 0x1FFFFE) == 0xFFFE for c in message):
        return None  # git rewrites what its UTF-8 check refuses (non-characters)
    ident = f"{name} <{email}> {int(found.group(1))} {found.group(2)}{found.group(3)}" \
            f"{found.group(4)}"
    head = f"tree {tree}\n" + "".join(f"parent {p}\n" for p in parents) + \
        f"author {ident}\ncommitter {ident}\n\n"
    try:
        return (head + message).encode("utf-8")
    except UnicodeEncodeError:
        return None


def _plain_ident(text: str, *, allow_empty: bool = False) -> bool:
    raw = text.encode("utf-8", "surrogateescape")
    if not raw:
        return allow_empty
    return raw[0] not in _CRUD and raw[-1] not in _CRUD and not any(b in raw for b in b"<>\n")


def edit_tree(root: str, changes: dict[bytes, tuple[str, str] | None],
              read_tree: Callable[[str], dict[bytes, tuple[str, str]]],
              write: Callable[[bytes, bytes], str]) -> str:
    """The tree `root` with `changes` made (raw path -> (mode, blob id), or None to delete), as
    git's index would make it (`read-tree`, `update-index --index-info` in path order,
    `write-tree`): a file replaces whatever is at its path or on the way to it, a deletion
    removes a file (never a directory), and a directory left empty disappears. Only the trees on
    the changed paths are read (`read_tree(id)` -> name -> (mode, id)) and written
    (`write(kind, data)` -> id); a tree that comes out as it was keeps its id."""
    # directory (raw, b"" for the root) -> its entries, edited in place, loaded on first touch;
    # and the id each one had, None for a directory that was not there
    edited: dict[bytes, dict[bytes, tuple[str, str]]] = {}
    was: dict[bytes, str | None] = {}

    def load(directory: bytes) -> dict[bytes, tuple[str, str]]:
        if directory not in edited:
            if not directory:
                tree: str | None = root
            else:
                above, _, name = directory.rpartition(b"/")
                hit = load(above).get(name)
                tree = hit[1] if hit is not None and hit[0] == TREE_MODE else None
            edited[directory] = dict(read_tree(tree)) if tree not in (None, EMPTY_TREE) else {}
            was[directory] = tree
        return edited[directory]

    for path in sorted(changes):
        change = changes[path]
        parent, _, name = path.rpartition(b"/")
        if change is None:
            entries = load(parent)
            if name in entries and entries[name][0] != TREE_MODE:
                del entries[name]
            continue
        parts = path.split(b"/")
        for depth in range(1, len(parts)):  # every directory on the way is one
            directory = b"/".join(parts[:depth])
            above, _, dir_name = directory.rpartition(b"/")
            hit = load(above).get(dir_name)
            if hit is None or hit[0] != TREE_MODE:
                edited[directory], was[directory] = {}, None
                load(above)[dir_name] = (TREE_MODE, EMPTY_TREE)  # its id is set below
        load(parent)[name] = (git_mode(change[0]), change[1])
    # Deepest first: a directory's new id is known before its parent is written.
    for directory in sorted(edited, key=lambda d: -len(d.split(b"/")) if d else 0):
        if not directory:
            continue
        entries = edited[directory]
        above, _, dir_name = directory.rpartition(b"/")
        into = edited[above]
        if into.get(dir_name, ("",))[0] != TREE_MODE:
            continue  # replaced by a file, or never there
        if not entries:
            del into[dir_name]
        else:
            into[dir_name] = (TREE_MODE, _tree_id(entries, was[directory], read_tree, write))
    if b"" not in edited:
        return root  # nothing changed
    return _tree_id(edited[b""], was[b""], read_tree, write)


def _tree_id(entries, old: str | None, read_tree, write) -> str:
    if old is not None and old != EMPTY_TREE and entries == read_tree(old):
        return old
    return write(b"tree", tree_bytes(entries))


# ---- the index (gitformat-index: versions 2 and 3)

EMPTY_BLOB = "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"
_INDEX_MODES = {"100644": 0o100644, "100755": 0o100755, "120000": 0o120000}


def index_bytes(entries: dict[bytes, tuple[str, str, os.stat_result | None]],
                intent_to_add: list[tuple[bytes, str]] | None = None) -> bytes:
    """A git index holding `entries` (raw path -> (mode, blob id, the working file's lstat when
    it holds exactly that blob, else None)) at stage 0, and the paths of `intent_to_add` (raw
    path, mode) as `git add -N` records them: the empty blob, flagged (version 3 of the format
    then, as git writes it). An entry without stat data is one `git read-tree` leaves: git looks
    at the file's content before it calls it changed or unchanged; one with it is one a refresh
    leaves. The caller writes the empty blob's object when it needs one (git add -N does)."""
    import hashlib

    rows = [(path, mode, oid, st, False) for path, (mode, oid, st) in entries.items()]
    rows += [(path, mode, EMPTY_BLOB, None, True) for path, mode in intent_to_add or ()]
    rows.sort(key=lambda row: row[0])  # git's order: the raw paths, byte by byte
    parts = [b"DIRC" + struct.pack(">II", 3 if intent_to_add else 2, len(rows))]
    for path, mode, oid, st, ita in rows:
        # ctime and mtime (seconds, nanoseconds), dev, ino, mode, uid, gid, size, each
        # truncated to 32 bits as git stores them; then the id and the flags: the name's length,
        # and for an intent-to-add entry the bit saying a second flags word follows, holding
        # CE_INTENT_TO_ADD.
        stat = (0, 0, 0, 0, 0, 0) if st is None else (
            st.st_ctime_ns // 10**9, st.st_ctime_ns % 10**9, st.st_mtime_ns // 10**9,
            st.st_mtime_ns % 10**9, st.st_dev, st.st_ino)
        owner = (0, 0, 0) if st is None else (st.st_uid, st.st_gid, st.st_size)
        flags = min(len(path), 0xFFF) | (0x4000 if ita else 0)
        entry = struct.pack(">10I", *(v & 0xFFFFFFFF for v in (
            *stat, _INDEX_MODES[mode], *owner))) + bytes.fromhex(oid) + struct.pack(">H", flags)
        if ita:
            entry += struct.pack(">H", 0x2000)
        entry += path
        parts.append(entry + b"\0" * (8 - len(entry) % 8))  # 1 to 8 NULs, to a multiple of 8
    body = b"".join(parts)
    return body + hashlib.sha1(body).digest()


# ---- packs (gitformat-pack: version 2 of the pack; version 2 of its index, or 1 for a pack of
# stored parts)

_PACK_TYPES = {b"commit": 1, b"tree": 2, b"blob": 3}


def write_small_pack(git_dir: Path, objects: dict[str, tuple[bytes, bytes]], *,
                     level: int = 1) -> str | None:
    """Objects (id -> (kind, data)) as one pack of `git_dir`, each object whole (no deltas):
    two files where loose objects would spread over a directory each. Not synced: for scratch
    repositories (the editing worktree), whose content is derived state. Returns the pack's
    name, None when there is nothing to write."""
    return write_pack(git_dir, {oid: pack_entry(kind, data, level=level)
                                for oid, (kind, data) in objects.items()})


def pack_entry(kind: bytes, data: bytes, *, level: int = 1) -> tuple[bytes, int]:
    """One object as a pack holds it (its header, then its content deflated at zlib `level`;
    0: stored, made here without zlib's deflate) and the CRC-32 the index keeps of it."""
    header = pack_object_header(_PACK_TYPES[kind], len(data))
    if level == 0 and len(data) <= 65535:
        # One stored block (every tree and commit, most files), joined with the header in
        # one copy: a range-diff writes thousands of these.
        entry = b"".join((header, b"\x78\x01", _BLOCK.pack(1, len(data), len(data) ^ 0xFFFF),
                          data, _ADLER.pack(zlib.adler32(data))))
        return entry, zlib.crc32(entry)
    deflated = _stored(data) if level == 0 else zlib.compress(data, level)
    return header + deflated, zlib.crc32(deflated, zlib.crc32(header))


_BLOCK = struct.Struct("<BHH")  # a stored block's header: final flag, length, its complement
_ADLER = struct.Struct(">I")


def _stored(data: bytes) -> bytes:
    """A zlib stream of `data` in stored (not compressed) blocks of up to 65,535 bytes. Made
    here rather than by zlib.compress(data, 0), which sets up a compressor (hundreds of KB)
    for each of the thousands of small trees a range-diff writes, and lets other threads run
    (and wait for its turn again) around each call."""
    parts = [b"\x78\x01"]
    for start in range(0, max(len(data), 1), 65535):
        chunk = data[start:start + 65535]
        final = start + 65535 >= len(data)
        parts += (struct.pack("<BHH", final, len(chunk), len(chunk) ^ 0xFFFF), chunk)
    parts.append(struct.pack(">I", zlib.adler32(data)))
    return b"".join(parts)


def write_pack(git_dir: Path, entries: dict[str, tuple[bytes, int]]) -> str | None:
    """A pack of `git_dir` made of pack_entry()s (id -> (entry, crc)), and its version 2 index
    (with those CRCs). Not synced (see write_small_pack). Returns the pack's name, None when
    there is nothing."""
    return write_parts_pack(git_dir, {oid: (entry,) for oid, (entry, _) in entries.items()},
                            crcs={oid: crc for oid, (_, crc) in entries.items()})


def _install(tmp: str, pack_dir: Path, checksum: bytes, suffix: str) -> str:
    """Give a written pack file (or its index) its name from the pack's checksum, read-only as
    git keeps them. Returns the pack's name (`pack-<checksum>`)."""
    name = f"pack-{checksum.hex()}"
    os.chmod(tmp, 0o444)
    os.replace(tmp, pack_dir / (name + suffix))
    return name


def _write_index(pack_dir: Path, checksum: bytes, index: bytes) -> None:
    """Write a pack's index beside it, after the pack: git sees a pack once its index is there."""
    fd, tmp = tempfiles.make_temp(pack_dir, "tmp_")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(index)
        _install(tmp, pack_dir, checksum, ".idx")
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def stored_parts(kind: bytes, data: bytes) -> tuple[bytes | memoryview, ...]:
    """One object as a pack holds it, its content in zlib's stored (not compressed) format, as
    the parts to write one after the other (`write_parts_pack`): a content of 4 KB or more is
    one of them as it is, not copied into the entry. A range-diff's pack is 10-20 MB of such
    contents, each of which the joined entry (`pack_entry`) copied once more."""
    size = len(data)
    head = pack_object_header(_PACK_TYPES[kind], size) + b"\x78\x01"
    adler = _ADLER.pack(zlib.adler32(data))
    if size <= 65535:
        block = _BLOCK.pack(1, size, size ^ 0xFFFF)
        if size < 4096:  # trees, commits, small files: one part
            return (b"".join((head, block, data, adler)),)
        return (head + block, data, adler)
    parts: list[bytes | memoryview] = [head]
    view = memoryview(data)
    for start in range(0, size, 65535):
        chunk = view[start:start + 65535]
        parts += (_BLOCK.pack(start + 65535 >= size, len(chunk), len(chunk) ^ 0xFFFF), chunk)
    parts.append(adler)
    return tuple(parts)


def git_delta(base_size: int, result_size: int,
              edits: tuple[tuple[int, int, bytes], ...] | list[tuple[int, int, bytes]]) -> bytes:
    """Git's delta (Documentation/technical/pack-format.txt, "Deltified representation") that
    makes a content of `result_size` bytes from a base of `base_size`: per edit (start, end,
    new bytes), in order and not overlapping, the base's bytes up to `start` copied, `new`
    inserted and the base's [start:end] left out; the rest of the base copied at the end
    (apply.hunks.FileApplication.edits). A ValueError for a base past DELTA_BASE_LIMIT."""
    if base_size > DELTA_BASE_LIMIT:
        raise ValueError(f"a delta base of {base_size} bytes is past what a copy can address")
    out = bytearray(_size_varint(base_size) + _size_varint(result_size))
    at = 0
    for start, end, new in edits:
        _delta_copy(out, at, start - at)
        for first in range(0, len(new), 0x7F):  # an insert carries up to 127 bytes
            chunk = new[first:first + 0x7F]
            out.append(len(chunk))
            out += chunk
        at = end
    _delta_copy(out, at, base_size - at)
    return bytes(out)


# The largest base a delta's copy instructions address (four offset bytes).
DELTA_BASE_LIMIT = 0xFFFFFFFF


def _size_varint(size: int) -> bytes:
    """A size in a delta's header: 7 bits a byte, the lowest first."""
    out = bytearray()
    while size >= 0x80:
        out.append(0x80 | (size & 0x7F))
        size >>= 7
    out.append(size)
    return bytes(out)


def _delta_copy(out: bytearray, offset: int, size: int) -> None:
    """Copy instructions for the base's [offset:offset + size] (none for an empty range): the
    offset's and size's non-zero bytes, flagged in the instruction byte."""
    while size > 0:
        step = min(size, 0xFFFFFF)  # the most one instruction copies (three size bytes)
        command, operands = 0x80, bytearray()
        for shift in range(4):
            byte = (offset >> (8 * shift)) & 0xFF
            if byte:
                command |= 1 << shift
                operands.append(byte)
        for shift in range(3):
            byte = (step >> (8 * shift)) & 0xFF
            if byte:
                command |= 0x10 << shift
                operands.append(byte)
        out.append(command)
        out += operands
        offset += step
        size -= step


@record(frozen=True)
class DeltaEntry:
    """A pack entry stored as a delta (git_delta) of `base`, an object written before it in the
    same pack (write_parts_pack makes it an offset delta)."""

    base: str
    delta: bytes


def _ofs_delta_parts(distance: int, delta: bytes) -> tuple[bytes, ...]:
    """An offset delta's entry: its header, how far back its base starts, the delta stored."""
    back = bytearray([distance & 0x7F])
    distance >>= 7
    while distance:
        distance -= 1
        back.append(0x80 | (distance & 0x7F))
        distance >>= 7
    back.reverse()
    return (pack_object_header(_OFS_DELTA, len(delta)) + bytes(back) + _stored(delta),)


_OFS_DELTA = 6


def write_parts_pack(git_dir: Path,
                     entries: dict[str, tuple[bytes | memoryview, ...] | DeltaEntry], *,
                     crcs: dict[str, int] | None = None) -> str | None:
    """A pack of `git_dir` made of stored_parts() (id -> parts) and DeltaEntry's (whose base
    comes before them), written with writev (the parts are not joined), and its index:
    version 1, which holds no CRC-32 of each entry (git reads objects without it; version 2's
    CRCs cost a pass over every byte of the pack), unless the entries' `crcs` are given or the
    pack is too large for version 1's 32-bit offsets. Not synced (see write_small_pack).
    Returns the pack's name, None when there is nothing."""
    import hashlib

    if not entries:
        return None
    pack_dir = Path(git_dir) / "objects" / "pack"
    pack_dir.mkdir(parents=True, exist_ok=True)
    head = b"PACK" + struct.pack(">II", 2, len(entries))
    digest = hashlib.sha1(head)
    offsets: list[tuple[bytes, int]] = []
    placed_at: dict[str, int] = {}  # id -> offset, for the deltas' bases
    made: dict[str, tuple[bytes, ...]] = {}  # the deltas' entries, as written
    offset = len(head)
    fd, pack_tmp = tempfiles.make_temp(pack_dir, "tmp_")
    try:
        try:
            pending: list[bytes | memoryview] = [head]
            for oid, parts in entries.items():
                offsets.append((bytes.fromhex(oid), offset))
                if isinstance(parts, DeltaEntry):
                    if parts.base not in placed_at:
                        raise ValueError(f"the delta {oid} comes before its base {parts.base}")
                    parts = made[oid] = _ofs_delta_parts(offset - placed_at[parts.base],
                                                         parts.delta)
                placed_at[oid] = offset
                for part in parts:
                    digest.update(part)
                    offset += len(part)
                pending += parts
                if len(pending) >= _WRITEV_PARTS:
                    write_parts(fd, pending)
                    pending = []
            checksum = digest.digest()
            pending.append(checksum)
            write_parts(fd, pending)
        finally:
            os.close(fd)
        name = _install(pack_tmp, pack_dir, checksum, ".pack")
    except BaseException:
        Path(pack_tmp).unlink(missing_ok=True)
        raise
    if crcs is None and offset <= _V1_OFFSETS:
        index = pack_index_v1(sorted(offsets), checksum)
    else:
        if crcs is None:
            crcs = {oid: _crc_of(made.get(oid, parts)) for oid, parts in entries.items()}
        index = pack_index(sorted((oid, crcs[oid.hex()], at) for oid, at in offsets), checksum)
    _write_index(pack_dir, checksum, index)
    return name


# The largest offset a version 1 pack index can hold.
_V1_OFFSETS = 0xFFFFFFFF

# How many parts one writev takes (Linux's IOV_MAX is 1024).
_WRITEV_PARTS = 512


def write_parts(fd: int, parts: list[bytes | memoryview]) -> None:
    """Write `parts` in order (os.writev, up to 1,024 at a time, again for what a short write
    left; `parts` is changed)."""
    first = 0
    while first < len(parts):
        written = os.writev(fd, parts[first:first + 1024])
        while first < len(parts) and written >= len(parts[first]):
            written -= len(parts[first])
            first += 1
        if written:  # a short write inside a part: the rest of that part next
            parts[first] = memoryview(parts[first])[written:]


def _crc_of(parts) -> int:
    crc = 0
    for part in parts:
        crc = zlib.crc32(part, crc)
    return crc


def pack_index_v1(entries: list[tuple[bytes, int]], pack_checksum: bytes) -> bytes:
    """A version 1 pack index of sorted (id, offset) entries (every offset below 2**32): the
    fan-out table, then each offset and id, then the pack's checksum and the index's own."""
    import hashlib

    fanout = [0] * 256
    for oid, _ in entries:
        fanout[oid[0]] += 1
    running = 0
    for i in range(256):
        running += fanout[i]
        fanout[i] = running
    body = b"".join([struct.pack(">256I", *fanout),
                     b"".join(struct.pack(">I", offset) + oid for oid, offset in entries),
                     pack_checksum])
    return body + hashlib.sha1(body).digest()


def pack_object_header(kind: int, size: int) -> bytes:
    """The header of one object in a pack."""
    # Type and size: 3 bits of type and 4 of size in the first byte, then 7 bits per byte.
    # Most objects of a range-diff's pack (trees, commits, deltas) are under 2 KB: their
    # header, one or two bytes, is made at once (a header per object, thousands per pack).
    if size < 0x10:
        return bytes(((kind << 4) | size,))
    if size < 0x800:
        return bytes(((kind << 4) | (size & 0x0F) | 0x80, size >> 4))
    out = bytearray()
    byte = (kind << 4) | (size & 0x0F)
    size >>= 4
    while size:
        out.append(byte | 0x80)
        byte = size & 0x7F
        size >>= 7
    out.append(byte)
    return bytes(out)


def pack_index(entries: list[tuple[bytes, int, int]], pack_checksum: bytes) -> bytes:
    """A version 2 pack index of sorted (id, crc, offset) entries."""
    import hashlib

    fanout = [0] * 256
    for oid, _, _ in entries:
        fanout[oid[0]] += 1
    running = 0
    for i in range(256):
        running += fanout[i]
        fanout[i] = running
    large: list[int] = []
    offsets = bytearray()
    for _, _, offset in entries:
        if offset < 0x80000000:
            offsets += struct.pack(">I", offset)
        else:
            offsets += struct.pack(">I", 0x80000000 | len(large))
            large.append(offset)
    body = b"".join([
        b"\xfftOc", struct.pack(">I", 2), struct.pack(">256I", *fanout),
        b"".join(oid for oid, _, _ in entries),
        b"".join(struct.pack(">I", crc) for _, crc, _ in entries),
        bytes(offsets), b"".join(struct.pack(">Q", o) for o in large), pack_checksum])
    return body + hashlib.sha1(body).digest()
