"""What a command asked git (or made of the store's contents) and kept in the cache for the next
command (`<cache>/kept/`): one naming, one file format, one atomic write and one bounding pass
for every kind, UpstreamStore's texts and answers (`kept/`) and the answers about contents alone
(store.diff.KeptAnswers, `kept/contents/`). A fix to one (what a name covers, the format check,
the write, the bound) reaches them all."""

from __future__ import annotations

import contextlib
import mmap
import os
import re
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from patchforge import tempfiles
from patchforge.fsutil import fault_point
from patchforge.store.git import git_executable
from patchforge.store.objects import write_parts

# The version of what a kept answer's name covers and of how patchforge reads what it keeps:
# part of every name, so an answer an earlier patchforge kept is never read by one that
# names or reads answers another way (raise it with any such change). The caller's own
# reading of its answer (its kind's format) goes into the question's arguments.
FORMAT = 2
# The first line of a kept answer (answer_parts): this, its CRC-32 and its length.
HEADER = b"patchforge-git-answer"
# A temporary file older than this is a killed write's (a write takes seconds): `bound`
# removes it.
TEMP_STALE_S = 3600


def answer_name(kind: str, args: Iterable[str], inputs: Iterable[bytes] = ()) -> str:
    """The kept file's name of git's answer to `args` (the exact arguments it is asked with,
    and the version of the caller's reading of the answer) about `inputs`: `git-KIND-`, then a
    digest (SHA-256, cut to 40 hex) of FORMAT, the git that answers (its path, size and
    modification time: an upgrade of git asks again), the arguments, and each input with its
    length."""
    import hashlib  # here: only the kept answers are named by it

    executable = git_executable()
    try:
        found = os.stat(executable)
        identity = f"{executable}\0{found.st_size}\0{found.st_mtime_ns}"
    except OSError:
        identity = executable
    digest = hashlib.sha256("\0".join((str(FORMAT), identity, kind, *args)).encode(
        "utf-8", "surrogateescape"))
    for data in inputs:
        digest.update(b"\0%d\0" % len(data))
        digest.update(data)
    return f"git-{kind}-{digest.hexdigest()[:40]}"


# Where Linux says which boot this is: a random UUID made at each boot.
BOOT_ID_FILE = "/proc/sys/kernel/random/boot_id"
_boot_id: list[bytes | None] = []  # read once per process


def boot_id() -> bytes | None:
    """This boot's id (BOOT_ID_FILE's), None where the system says none. A kept file written
    synced (keep's `synced`) and read in the boot that wrote it is the bytes written: on the
    disk before it was named, and no crash since (a crash is a reboot). One read in another
    boot may have been copied (a cache restored, `cp -a`) and damaged by a crash since: its
    format's checksum is checked."""
    if not _boot_id:
        try:
            with open(BOOT_ID_FILE, "rb") as f:
                found = f.read(64).strip()
        except OSError:
            found = b""
        _boot_id.append(found if re.fullmatch(rb"[0-9a-f-]{36}", found) else None)
    return _boot_id[0]


def answer_parts(parts: list[bytes]) -> list[bytes]:
    """The answer made of `parts` (one after the other) as a kept file's parts: a first line
    with HEADER, the CRC-32 and the length of the answer, then `parts`."""
    import zlib

    crc = 0
    for part in parts:
        crc = zlib.crc32(part, crc)
    return [b"%s %08x %d\n" % (HEADER, crc, sum(map(len, parts))), *parts]


def answer_of(data: bytes | mmap.mmap | None) -> bytes | None:
    """The answer an answer_parts file's bytes `data` hold, None unless they are such a file
    whole (it is not synced: a crash can leave a short or empty one, which its length and
    CRC-32 tell). A mapped file is closed: the answer is copied out of it."""
    import zlib

    if data is None:
        return None
    try:
        if data[:len(HEADER) + 1] != HEADER + b" ":
            return None
        at = data.find(b"\n") + 1
        fields = data[len(HEADER) + 1:at - 1].split(b" ")
        if at == 0 or len(fields) != 2 or fields[1] != b"%d" % (len(data) - at):
            return None
        out = data[at:]
    finally:
        if isinstance(data, mmap.mmap):
            data.close()
    return out if fields[0] == b"%08x" % zlib.crc32(out) else None


def keep(directory: Path, name: str, parts: Sequence[bytes | memoryview], *,
         synced: bool = False) -> bool:
    """Write the bytes of `parts`, one after the other, as `directory/name` (written with
    writev, never joined: a release's text is 18.7 MB): to a temporary file renamed over the
    old one, so a reader finds one file or the other; not synced (a file lost to a crash is
    made again, and the reader's format tells a damaged one), unless `synced`: then its bytes
    reach the disk before it is named (a file under its name is whole, whatever crash comes
    after; a write the disk reports failed keeps nothing). Whether it was written: a cache
    that cannot be written keeps nothing, and says nothing, as what is kept only spares the
    next command work."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfiles.make_temp(directory, f".{name}.")
    except OSError:
        return False
    try:
        try:
            write_parts(fd, list(parts))
            if synced:
                os.fsync(fd)
        finally:
            os.close(fd)
        fault_point("keep")
        os.replace(tmp, directory / name)
    except BaseException as exc:  # (Ctrl-C too: no temporary file is left behind)
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if not isinstance(exc, OSError):
            raise
        return False
    return True


def bound(directory: Path, group_of: Callable[[str], int | None],
          limits: list[tuple[int, int | None]], written: str | None = None) -> None:
    """Remove from `directory` the kept files beyond their group's limits, and killed writes'
    temporary files (dot-names older than TEMP_STALE_S). `group_of` gives a name's group (an
    index into `limits`; None: not a kept file, left alone; directories are left alone too),
    each group keeping its most recently used (by modification time: written, or marked read)
    up to its (count, bytes or None) limit. `written` (just kept) is never removed and counts
    first in its group. Safe beside other commands on the cache: a reader that opened a file
    before its removal reads it whole (the name goes, not the bytes), and one that finds it
    gone asks again; two commands bounding at once remove the same ones (each removal is one
    unlink, a name already gone is skipped)."""
    groups: list[list[tuple[int, int, str]]] = [[] for _ in limits]
    removed: list[str] = []
    stale_before = time.time_ns() - TEMP_STALE_S * 1_000_000_000
    try:
        with os.scandir(directory) as entries:
            for entry in entries:
                try:
                    if entry.is_dir(follow_symlinks=False):
                        continue  # another directory of kept files: bounded apart
                    found = entry.stat(follow_symlinks=False)
                except OSError:
                    continue  # removed meanwhile
                if entry.name.startswith("."):
                    if found.st_mtime_ns < stale_before:
                        removed.append(entry.name)
                    continue
                group = group_of(entry.name)
                if group is not None:
                    used = 1 << 126 if entry.name == written else found.st_mtime_ns
                    groups[group].append((used, found.st_size, entry.name))
    except OSError:
        return
    for files, (at_most, bytes_at_most) in zip(groups, limits):
        files.sort(reverse=True)
        total = 0
        for count, (_, size, name) in enumerate(files):
            total += size
            if name != written and (count >= at_most or
                                    bytes_at_most is not None and total > bytes_at_most):
                removed.append(name)
    for name in removed:
        with contextlib.suppress(OSError):
            os.unlink(directory / name)
