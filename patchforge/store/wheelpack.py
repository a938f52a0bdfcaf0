"""A wheel's files as one git pack that reuses the wheel's own compression.

A wheel is a zip whose members are (almost always) raw deflate streams, and a git pack stores
each object as a zlib stream: a deflate stream between a two-byte header and the Adler-32 of the
content. So a member's compressed bytes can go into a pack unchanged. Importing a 330 MB vLLM
wheel then costs one inflate of each member (for the blob id, the Adler-32 and the zip's CRC
check), not a second compression of 800 MB by `git fast-import` (docs/performance.md has
the figures).

This module writes the pack and its index (formats from git's gitformat-pack documentation,
version 2 of both) into the store's `objects/pack/`, each file complete and synced before the
index, which makes git see the pack, is renamed into place. Trees and the commit are then made
by `git fast-import` from the blob ids, so the commit is exactly the one a plain import gives.
Members stored without compression (or with another method) are compressed here with zlib.
"""
from __future__ import annotations

import hashlib
import os
import struct
import tempfile
import threading
import zlib
from pathlib import Path
from typing import Callable, Iterable

from patchforge.errors import StoreError
from patchforge.model.record import record
from patchforge.store.objects import pack_index, pack_object_header

_DEFLATED = 8
_ZLIB_HEADER = b"\x78\x01"  # deflate, 32 KiB window, "fastest" level: a valid zlib header
_CHUNK = 4 << 20
_OBJ_BLOB = 3

# (bytes done, bytes in all): called from the hashing threads, in any order of members.
ProgressCallback = Callable[[int, int], None]


@record
class PackMember:
    """One wheel member on its way into the pack."""

    name: str                 # as in the zip (for messages)
    offset: int               # where its compressed data starts in the wheel
    compress_size: int
    file_size: int
    method: int
    crc: int                  # the zip's CRC-32 of the content
    oid: str = ""             # git blob id, once hashed
    adler: int = 1
    recompressed: bytes | None = None  # zlib stream made here when the zip's bytes cannot be used


def locate_members(wheel: Path, infos: Iterable) -> list[PackMember]:
    """PackMember of each zipfile.ZipInfo: where its data starts (after the local header, whose
    name and extra fields may differ in length from the central directory's)."""
    members = []
    with open(wheel, "rb") as handle:
        for info in infos:
            if info.flag_bits & 0x1:
                raise StoreError(f"wheel {wheel.name}: member {info.filename} is encrypted")
            handle.seek(info.header_offset)
            header = handle.read(30)
            if len(header) != 30 or header[:4] != b"PK\x03\x04":
                raise StoreError(f"wheel {wheel.name}: bad local header for {info.filename}")
            name_len, extra_len = struct.unpack("<HH", header[26:30])
            members.append(PackMember(info.filename, info.header_offset + 30 + name_len + extra_len,
                                      info.compress_size, info.file_size, info.compress_type,
                                      info.CRC))
    return members


def hash_members(wheel: Path, members: list[PackMember], *,
                 progress: ProgressCallback | None = None, threads: int = 2) -> None:
    """Inflate every member once: its blob id, Adler-32, and the zip's CRC checked.

    Two threads share the members (zlib, hashlib and file reads release the interpreter lock,
    so on two cores this halves the import)."""
    total = sum(m.file_size for m in members) or 1
    done = [0]
    lock = threading.Lock()
    errors: list[BaseException] = []
    # Largest first, handed out one at a time: the threads end together.
    queue = sorted(members, key=lambda m: -m.file_size)
    position = [0]

    def work() -> None:
        try:
            fd = os.open(wheel, os.O_RDONLY)
        except OSError as exc:
            errors.append(StoreError(f"cannot read wheel {wheel}: {exc}"))
            return
        try:
            while not errors:
                with lock:
                    if position[0] >= len(queue):
                        return
                    member = queue[position[0]]
                    position[0] += 1
                _hash_member(fd, wheel, member)
                if progress is not None:
                    with lock:
                        done[0] += member.file_size
                        progress(done[0], total)
        except BaseException as exc:  # handed to the caller's thread
            errors.append(exc)
        finally:
            os.close(fd)

    workers = [threading.Thread(target=work, daemon=True) for _ in range(max(1, threads) - 1)]
    for worker in workers:
        worker.start()
    work()
    for worker in workers:
        worker.join()
    if errors:
        raise errors[0]


def _read_exact(fd: int, offset: int, size: int, wheel: Path, member: PackMember) -> bytes:
    data = os.pread(fd, size, offset)
    if len(data) != size:
        raise StoreError(f"wheel {wheel.name}: member {member.name} is truncated")
    return data


def _hash_member(fd: int, wheel: Path, member: PackMember) -> None:
    sha = hashlib.sha1(b"blob %d\0" % member.file_size)
    adler, crc, size = 1, 0, 0
    if member.method == _DEFLATED:
        inflater = zlib.decompressobj(-15)
        position, end = member.offset, member.offset + member.compress_size
        while position < end:
            raw = _read_exact(fd, position, min(_CHUNK, end - position), wheel, member)
            position += len(raw)
            try:
                # Bounded output: a member that inflates to far more than it says stops here.
                data = inflater.decompress(raw, _CHUNK * 8)
                while True:
                    sha.update(data)
                    adler = zlib.adler32(data, adler)
                    crc = zlib.crc32(data, crc)
                    size += len(data)
                    if size > member.file_size or not inflater.unconsumed_tail:
                        break
                    data = inflater.decompress(inflater.unconsumed_tail, _CHUNK * 8)
            except zlib.error as exc:
                raise StoreError(f"wheel {wheel.name}: corrupt member {member.name}: {exc}") \
                    from None
            if size > member.file_size:
                break
        # The zip's bytes go into the pack as they are only if they are exactly one deflate
        # stream; anything else (trailing bytes) is compressed again below.
        reusable = inflater.eof and not inflater.unused_data
        content = None
    elif member.method == 0:
        content = _read_exact(fd, member.offset, member.compress_size, wheel, member)
        reusable = False
    else:
        raise StoreError(f"wheel {wheel.name}: member {member.name} uses compression method "
                         f"{member.method}, which wheels do not use")
    if content is not None:
        sha.update(content)
        adler = zlib.adler32(content, adler)
        crc = zlib.crc32(content, crc)
        size = len(content)
    if size != member.file_size or crc != member.crc:
        raise StoreError(f"wheel {wheel.name}: member {member.name} does not match its size or "
                         "CRC (corrupt wheel)")
    member.oid = sha.hexdigest()
    member.adler = adler
    if not reusable:
        if content is None:  # rare: inflate again to compress
            # As the pass above did, with an inflater: its bytes matched the size and CRC, so
            # a stream that lacks its final block (or has no bytes at all, an empty member)
            # gives them again, where zlib.decompress refused it.
            inflater = zlib.decompressobj(-15)
            try:
                content = inflater.decompress(
                    _read_exact(fd, member.offset, member.compress_size, wheel, member),
                    member.file_size or 1)[:member.file_size]
            except zlib.error as exc:
                raise StoreError(f"wheel {wheel.name}: corrupt member {member.name}: {exc}") \
                    from None
        member.recompressed = zlib.compress(content, 1)


def write_pack(git_dir: Path, wheel: Path, members: list[PackMember]) -> str | None:
    """Write the hashed members as one pack in `git_dir` (a blob that two members share, once):
    the pack's name, or None when there is nothing to write."""
    unique: dict[str, PackMember] = {}
    for member in members:
        unique.setdefault(member.oid, member)
    if not unique:
        return None
    pack_dir = Path(git_dir) / "objects" / "pack"
    pack_dir.mkdir(parents=True, exist_ok=True)
    fd, tmp_pack = _temp(pack_dir, "tmp_pack_")
    tmp_idx = None
    try:
        entries: list[tuple[bytes, int, int]] = []  # (binary id, crc of the entry, offset)
        pack_sha = hashlib.sha1()
        with os.fdopen(fd, "wb") as out, open(wheel, "rb") as source:
            def emit(data: bytes) -> None:
                out.write(data)
                pack_sha.update(data)

            emit(b"PACK" + struct.pack(">II", 2, len(unique)))
            offset = 12
            for oid, member in unique.items():
                head = pack_object_header(_OBJ_BLOB, member.file_size)
                crc = zlib.crc32(head)
                emit(head)
                length = len(head)
                if member.recompressed is not None:
                    crc = zlib.crc32(member.recompressed, crc)
                    emit(member.recompressed)
                    length += len(member.recompressed)
                else:
                    trailer = struct.pack(">I", member.adler)
                    crc = zlib.crc32(_ZLIB_HEADER, crc)
                    emit(_ZLIB_HEADER)
                    source.seek(member.offset)
                    left = member.compress_size
                    while left:
                        chunk = source.read(min(_CHUNK, left))
                        if not chunk:
                            raise StoreError(f"wheel {wheel.name}: member {member.name} is "
                                             "truncated")
                        crc = zlib.crc32(chunk, crc)
                        emit(chunk)
                        left -= len(chunk)
                    crc = zlib.crc32(trailer, crc)
                    emit(trailer)
                    length += 2 + member.compress_size + 4
                entries.append((bytes.fromhex(oid), crc, offset))
                offset += length
            checksum = pack_sha.digest()
            out.write(checksum)
            out.flush()
            os.fsync(out.fileno())
        entries.sort()
        fd, tmp_idx = _temp(pack_dir, "tmp_idx_")
        with os.fdopen(fd, "wb") as out:
            out.write(pack_index(entries, checksum))
            out.flush()
            os.fsync(out.fileno())
        name = f"pack-{checksum.hex()}"
        os.chmod(tmp_pack, 0o444)
        os.chmod(tmp_idx, 0o444)
        os.replace(tmp_pack, pack_dir / f"{name}.pack")
        os.replace(tmp_idx, pack_dir / f"{name}.idx")  # last: from here on git sees the pack
        dir_fd = os.open(pack_dir, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
        return name
    except BaseException:
        for path in (tmp_pack, tmp_idx):
            if path is not None:
                try:
                    os.unlink(path)
                except FileNotFoundError:
                    pass
        raise


def _temp(directory: Path, prefix: str) -> tuple[int, str]:
    return tempfile.mkstemp(prefix=prefix, dir=directory)
