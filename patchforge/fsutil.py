"""Atomic file writes and the repository lock: every write of a project file goes through here.

A write is: temporary file in the same directory, write, fsync, rename over the target, fsync of
the directory. A kill at any moment leaves either the old bytes or the new bytes, never a mix.
"""
from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from patchforge.errors import LockedError, PartlyWritten, UsageError
from patchforge.patterns import on_first_use

# Fault injection for the crash-safety tests: PATCHFORGE_FAULT="name:N" makes the N-th (1-based)
# call of the write step `name` ("write", "fsync", "rename", "link", "dirsync": a directory's
# fsync after a rename; "renamed": just after a rename, where a signal that arrived during it
# takes effect) kill the process, or raise with
# PATCHFORGE_FAULT_MODE=raise, or send the process a real SIGINT (Ctrl-C) with
# PATCHFORGE_FAULT_MODE=interrupt (a SIGTERM with PATCHFORGE_FAULT_MODE=terminate), or stop it
# (SIGSTOP, until a SIGCONT) with
# PATCHFORGE_FAULT_MODE=stop: "lock:N" stops it just before its N-th take of the project lock,
# so a test can run a second command in between ("config:N", before the N-th write of a store
# remote's configuration; "forget:N", before the N-th removal of a rebase journal; "keep:N",
# before the N-th rename of a text or answer kept in the cache, store.kept.keep). "name:N+"
# fires at the N-th call and every one after it (a disk that keeps failing: the putting back of
# a failed command's writes fails too). Never set in normal use.
_FAULT_COUNTS: dict[str, int] = {}


def fault_point(step: str) -> None:
    spec = os.environ.get("PATCHFORGE_FAULT")
    if not spec:
        return
    _hear_injected_interrupts()
    name, _, nth = spec.partition(":")
    if name != step:
        return
    _FAULT_COUNTS[step] = _FAULT_COUNTS.get(step, 0) + 1
    onwards = nth.endswith("+")  # "write:3+": the 3rd write and every one after it
    first = int(nth.rstrip("+") or "1")
    if _FAULT_COUNTS[step] == first or onwards and _FAULT_COUNTS[step] > first:
        mode = os.environ.get("PATCHFORGE_FAULT_MODE")
        if mode == "raise":
            raise OSError(errno.EIO, f"injected fault at {step} #{nth}")
        if mode == "stop":
            import signal

            os.kill(os.getpid(), signal.SIGSTOP)  # a test runs another command, then SIGCONT
            return
        if mode in ("interrupt", "terminate"):
            import signal

            # Python raises KeyboardInterrupt (the CLI's handler, Terminated) right here.
            os.kill(os.getpid(), signal.SIGINT if mode == "interrupt" else signal.SIGTERM)
            return
        os._exit(137)


def _hear_injected_interrupts() -> None:
    """With PATCHFORGE_FAULT_MODE=interrupt, Python's Ctrl-C handler in place. A process started
    with SIGINT ignored (a background job of a non-interactive shell, and so every command of a
    test suite run that way) keeps it ignored, as a Ctrl-C at a terminal never reaches it: the
    injected one was lost and the command ran to its end. Done at the first fault point met,
    before a block that defers signals (interrupts_deferred) takes the handler it puts back."""
    import signal
    import threading

    if os.environ.get("PATCHFORGE_FAULT_MODE") == "interrupt" \
            and threading.current_thread() is threading.main_thread() \
            and signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


@contextlib.contextmanager
def interrupts_deferred():
    """Ctrl-C (SIGINT) and SIGTERM that arrive inside the block take effect when it ends: for a
    step of two operations that only make sense together (a swap by two renames). Python runs
    a signal's handler in the main thread whichever thread the signal reaches, so the handlers
    are replaced, not the signal mask; from another thread (which cannot set handlers) the
    block runs as it is."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    arrived: list[int] = []
    previous = {number: signal.signal(number, lambda got, frame: arrived.append(got))
                for number in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for number, handler in previous.items():
            # None: a handler set outside Python, which cannot be put back; the default then.
            signal.signal(number, signal.SIG_DFL if handler is None else handler)
        if arrived:
            signal.raise_signal(arrived[0])


@contextlib.contextmanager
def put_back_on_failure(paths: Sequence[Path], *, finish: str, unless=None):
    """Several writes whole or not at all: the files `paths` (those the block may write or
    remove, in the order it does) are put back as they are now (their bytes, or no file)
    when the block ends by an exception (Ctrl-C, SIGTERM, a failed write), the last written
    first, with the signals deferred, and the exception goes on: what the CLI then says,
    "nothing was left half-written", is true. Should a file not go back (the disk failing
    still), the putting back stops there: that file and those written before it stay as the
    block wrote them, the state a kill just after that file's write leaves, which the block's
    order of writes makes one that running the command again finishes (putting back the
    earlier ones past it would have left, say, a series listing patch files put back to
    nothing). PartlyWritten names them all, with `finish` (how the command, run again,
    finishes them) as its hint. A kill leaves what the block wrote: its writes must still be in
    an order that running it again finishes. `unless` (a callable) returning True when the
    block has failed keeps its writes: they are what the state it left needs (a bump's report
    of the rebase it left in progress)."""
    before: dict[Path, bytes | None] = {}
    for path in paths:
        before.setdefault(Path(path), _bytes_or_none(path))
    try:
        yield
    except BaseException as cut:
        if unless is not None and unless():
            raise
        left: list[str] = []
        try:
            with interrupts_deferred():
                order = list(before.items())
                for at in range(len(order) - 1, -1, -1):
                    path, data = order[at]
                    try:
                        if _bytes_or_none(path) == data:
                            continue
                        if data is None:
                            atomic_delete(path)
                        else:
                            atomic_write(path, data)
                    except OSError:
                        if not _written(path, data):
                            # Back in place, only its directory's sync failed: not "left
                            # as the command wrote" it.
                            continue
                        left = [str(earlier) for earlier, was in order[:at]
                                if _written(earlier, was)] + [str(path)]
                        break
        finally:
            if left:
                reason = "interrupted" if isinstance(cut, KeyboardInterrupt) else \
                    getattr(cut, "strerror", None) or str(cut)
                earlier = f"it and the {len(left) - 1} written before it are" \
                    if len(left) > 1 else "it is"
                raise PartlyWritten(
                    f"cut short ({reason}), and {left[-1]} could not be put back: {earlier} "
                    "left as the command wrote them: " + ", ".join(left), hint=finish) from cut
        raise


def parse_json(data: bytes) -> Any:
    """The JSON value in `data` (UTF-8). Whatever is wrong with it (not UTF-8, not JSON, a
    number too long for Python to read, or nested so deep that the parser's recursion runs
    out: `[[[[...` 200 KB of it) is a ValueError saying what, so a caller names its file once
    for all of them."""
    try:
        text = data.decode("utf-8")
        return json.loads(text)
    except RecursionError:
        raise ValueError("not valid JSON: nested deeper than patchforge reads") from None
    except UnicodeDecodeError as exc:
        raise ValueError(f"not UTF-8: {exc}") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"not valid JSON: {exc}") from None
    except ValueError:
        line = long_number_line(text)
        raise ValueError(f"not valid JSON: {LONG_NUMBER}" + (f" (line {line})" if line else "")
                         ) from None


# Python reads no integer of more than this many digits (sys.get_int_max_str_digits(), a guard
# against conversions that take quadratic time): json, tomllib and packaging then raise a bare
# ValueError ("Exceeds the limit (4300 digits) for integer string conversion"), which reached
# every command reading such a number as an internal error.
INT_DIGITS = 4300
LONG_NUMBER = f"a number of more than {INT_DIGITS} digits, longer than patchforge reads"
_LONG_NUMBER = on_first_use(r"[0-9]{%d}" % (INT_DIGITS + 1))


def long_number_line(text: str) -> int | None:
    """The line of the first number of more than INT_DIGITS digits in `text`, if any."""
    found = _LONG_NUMBER.search(text)
    return text.count("\n", 0, found.start()) + 1 if found else None


def _written(path: Path, before: bytes | None) -> bool:
    """Whether `path` differs from `before` (its bytes, None: no file); a file that cannot be
    read counts as written (put_back_on_failure names it rather than pass it over)."""
    try:
        return _bytes_or_none(path) != before
    except OSError:
        return True


def _bytes_or_none(path: Path | str) -> bytes | None:
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except FileNotFoundError:
        return None


def fsync_dir(directory: Path | str) -> None:
    fault_point("dirsync")
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def exchange(first: Path, second: Path) -> bool:
    """Swap two existing paths in one step (Linux `renameat2` with RENAME_EXCHANGE): a reader,
    or a kill, sees one or the other, never neither. False where the system or the file system
    cannot (no such call, EINVAL, ENOTSUP): the caller swaps by two renames then. A directory
    swapped by two renames is missing between them, and a kill there left it missing until
    the next command that knew to put it back."""
    import ctypes

    try:
        call = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):  # not Linux, or a C library before glibc 2.28
        return False
    call.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p,
                     ctypes.c_uint]
    here, rename_exchange = -100, 2  # AT_FDCWD, RENAME_EXCHANGE (linux/fs.h)
    if call(here, os.fsencode(first), here, os.fsencode(second), rename_exchange) == 0:
        return True
    number = ctypes.get_errno()
    if number in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP):
        return False
    raise OSError(number, os.strerror(number), os.fspath(first), None, os.fspath(second))


def fsync_dirs(directories) -> None:
    """fsync_dir() of each directory (a str or a Path), once each, in order."""
    for directory in dict.fromkeys(map(os.fspath, directories)):
        fsync_dir(directory)


def sync_tree(root: Path) -> None:
    """Make a directory tree written by plain copies (shutil.copytree) durable: every file's
    bytes synced, side by side as a batch's are, then every directory, deepest first, so each
    name is durable once the directory holding it is. root's own name is its parent's: the
    caller syncs that (or renames root first and syncs the parent then). Symbolic links are
    names only, durable with their directory."""
    files: list[str] = []
    directories: list[str] = []
    for directory, _, names in os.walk(root):
        directories.append(directory)
        files += [os.path.join(directory, name) for name in names
                  if not os.path.islink(os.path.join(directory, name))]
    for start in range(0, len(files), _WRITE_BATCH):  # well under any limit on open files
        fds: list[int] = []
        try:
            for path in files[start:start + _WRITE_BATCH]:
                fds.append(os.open(path, os.O_RDONLY))
            _sync_all(fds)
        finally:
            for fd in fds:
                os.close(fd)
    fsync_dirs(reversed(directories))


def atomic_write(path: Path | str, data: bytes, *, mode: int | None = None,
                 sync_directory: bool = True) -> None:
    """Replace `path` with `data` atomically (same-directory temp file, fsync, rename, the
    directory's fsync). Without `sync_directory` the rename is left to the file system's next
    commit (the bytes are synced before it all the same, so a crash finds the old file or the
    whole new one): for a file whose loss to a crash is harmless (the rebase journal's first
    save), one wait for the disk fewer."""
    path = Path(path)
    _replace_batch([(path, data, mode)])
    if sync_directory:
        fsync_dir(path.parent)


def write_destination(path: Path | str, data: bytes) -> None:
    """Write `data` where the user said (`export --mbox FILE`, `status --html FILE`): a file
    replaced atomically, as atomic_write; but a destination that is a stream (a named pipe
    another program reads, `/dev/stdout`, a terminal: neither a regular file nor a directory,
    after its symlinks) is written through, as a shell's `>` writes it. Renamed over, the pipe
    was replaced by a regular file its reader never saw (and, as root where /dev is writable,
    a device node by a file), while the command said it had written. A symbolic link is
    written through too, whatever it leads to: `/dev/stdout` is one (to /proc/self/fd/1), and
    with standard output a file (`--mbox /dev/stdout > fixes.mbox`) the link itself was
    renamed over, while the file the shell opened got nothing; a link the user made to a file
    elsewhere stays a link, as `>` leaves it."""
    import stat
    import sys

    try:
        kind = os.lstat(path).st_mode
    except OSError:
        kind = None
    if kind is None or stat.S_ISREG(kind) or stat.S_ISDIR(kind):
        atomic_write(path, data)
        return
    if is_standard_output(path):
        # Opened anew, a file the shell gave as standard output is written from its start
        # (and cut there), over what the command printed before or prints after.
        sys.stdout.flush()
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
        return
    with open(path, "wb") as stream:
        stream.write(data)


def is_standard_output(path: Path | str) -> bool:
    """Whether a destination the user named is this process's standard output: `-`, or a
    link or stream leading to the file standard output is (`/dev/stdout`, `/dev/fd/1`, a
    named pipe also given as `>`); a regular file named outright is a file to replace."""
    import stat

    if str(path) == "-":
        return True
    try:
        if stat.S_ISREG(os.lstat(path).st_mode):
            return False
        here, out = os.stat(path), os.fstat(1)
    except OSError:
        return False
    return (here.st_dev, here.st_ino) == (out.st_dev, out.st_ino)


# How many files atomic_write_many() has open at once (a batch): well under any limit on open
# files, and enough that the file system commits most of a long series' data together.
_WRITE_BATCH = 128


def atomic_write_many(items: Sequence[tuple[Path | str, bytes]], *, also_sync=()) -> None:
    """atomic_write() of several files: each file is replaced atomically and durably (its
    temporary file synced before the rename, its directory after), in batches. A batch's
    temporary files are all written before the first is synced, so the file system commits
    their data together: the first fsync does most of the work and the rest find little left
    (on ext4, 290 patch files took 140-160 ms written one after another, or side by side on
    eight threads, and 60-90 ms this way). The directories are synced once each at the end,
    with `also_sync` (directories whose renames or removals the caller made durable with
    these files, not by a wait for the disk of their own)."""
    writes: list[tuple[Path | str, bytes, int | None]] = [(path, data, None)
                                                          for path, data in items]
    for start in range(0, len(writes), _WRITE_BATCH):
        _replace_batch(writes[start:start + _WRITE_BATCH])
    fsync_dirs([*also_sync, *(os.path.dirname(path) or os.curdir for path, _, _ in writes)])


def write_temporaries(items: Sequence[tuple[Path | str, bytes]], *,
                      token: str | None = None) -> list[str]:
    """The first half of atomic_write_many(): each (path, data) written to a new temporary file
    beside `path` (mode: the file's own, 0o644 for a new one), every one synced, none renamed;
    returns their paths, in order. The caller renames each over its target once something
    durable names them (the rebase journal: the rename is then the whole commit of a file) and
    syncs the directories first (a temporary file's name is durable only then). With `token`
    (10 hex digits) each is `.NAME.TOKEN.tmp`, a name the caller knows before they are
    written; one already there is an error. A failure removes the temporary files made."""
    writes: list[tuple[Path | str, bytes, int | None]] = [(path, data, None)
                                                          for path, data in items]
    made: list[str] = []
    try:
        for start in range(0, len(writes), _WRITE_BATCH):
            made += [tmp for tmp, _ in _write_batch(writes[start:start + _WRITE_BATCH],
                                                    token=token)]
    except BaseException:
        for tmp in made:
            try:
                os.unlink(tmp)
            except FileNotFoundError:
                pass
        raise
    return made


def _replace_batch(items: list[tuple[Path | str, bytes, int | None]]) -> None:
    """The temporary files, their fsyncs and the renames of atomic writes of (path, data, mode:
    None keeps the file's own, 0o644 for a new one): every temporary file written and synced
    (`_write_batch`), then each renamed over its target (the directories' fsync is the
    caller's). A failure removes the temporary files not renamed yet."""
    written = _write_batch(items)
    if _WRITTEN_DIRECTORIES:
        _WRITTEN_DIRECTORIES[-1].update(os.path.dirname(os.fspath(path)) for path, _, _ in items)
    renamed = 0
    try:
        for tmp, path in written:
            fault_point("rename")
            os.replace(tmp, path)
            fault_point("renamed")
            renamed += 1
    except BaseException:
        for tmp, _ in written[renamed:]:
            try:
                os.unlink(tmp)
            except FileNotFoundError:
                pass
        raise


def _write_batch(items: list[tuple[Path | str, bytes, int | None]], *,
                 token: str | None = None) -> list[tuple[str, Path | str]]:
    """Every temporary file of a batch written, then each synced: (temporary path, target), in
    order. A failure removes them all.

    Plain descriptors, not file objects: a long series writes hundreds of files, and the
    buffered writer, tempfile's name generator and a chmod by path were a fifth of the
    batch's CPU (the kernel's work is the rest). Paths as strings (a target may be given as
    either): a Path's parent and name are objects made per file."""
    made: list[tuple[int, str, Path | str]] = []  # (open temporary file, its path, target)
    closed = 0
    directories: set[str] = set()
    try:
        for path, data, mode in items:
            directory, name = os.path.split(os.fspath(path))
            directory = directory or os.curdir  # a bare file name is the working directory's
            if directory not in directories:
                os.makedirs(directory, exist_ok=True)
                directories.add(directory)
            if mode is None:
                try:
                    mode = os.stat(path).st_mode & 0o7777
                except FileNotFoundError:
                    mode = 0o644
            fd, tmp = _temporary(directory, name, token)
            made.append((fd, tmp, path))
            os.fchmod(fd, mode)
            fault_point("write")
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        _start_writeback([fd for fd, _, _ in made])
        _sync_all([fd for fd, _, _ in made])
        for fd, _, _ in made:
            # Counted first: a close that reports an error (a deferred write error) has
            # released the descriptor all the same, and its number may be another thread's
            # file by the time the cleanup below runs.
            closed += 1
            os.close(fd)
    except BaseException:
        for fd, _, _ in made[closed:]:
            try:
                os.close(fd)
            except OSError:
                pass  # released anyway; the first error is the one to report
        for _, tmp, _ in made:
            try:
                os.unlink(tmp)
            except FileNotFoundError:
                pass
        raise
    return [(tmp, path) for _, tmp, path in made]


_TEMP_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0) \
    | getattr(os, "O_NOFOLLOW", 0)


# The name _temporary gives: `.NAME.XXXXXXXXXX.tmp` (NAME the target's).
TEMPORARY_NAME = re.compile(r"\.(.+)\.[0-9a-f]{10}\.tmp")


def _temporary(directory: str, name: str, token: str | None = None) -> tuple[int, str]:
    """A new file in `directory` beside its file `name`, named `.NAME.XXXXXXXXXX.tmp` (as
    tempfile.mkstemp would: created exclusively, mode 0600 until the caller sets the target's):
    its descriptor and path. With `token`, that is its XXXXXXXXXX, and a file of that name
    already there is an error."""
    while True:
        tmp = os.path.join(directory, f".{name}.{token or os.urandom(5).hex()}.tmp")
        try:
            return os.open(tmp, _TEMP_FLAGS, 0o600), tmp
        except FileExistsError:
            if token:
                raise
            continue


# How many fsyncs of a batch are waited for at once (`_sync_all`).
_SYNC_THREADS = 8


def _sync_all(fds: list[int]) -> None:
    """fsync each of `fds` (a batch's temporary files), several at once from a few threads, and
    return when all are done; the first error is raised then. The file system commits syncs
    that wait together in one journal commit: one after another, each of 290 files waited for
    a commit of its own, 45-77 ms on a disk other programs were syncing to, against 12-17 ms
    for eight at a time. Nothing is renamed before this returns, so every file is still durable
    before its rename. The fault points are met first, one per file, in the batch's order."""
    for _ in fds:
        fault_point("fsync")
    if len(fds) < 2:
        for fd in fds:
            os.fsync(fd)
        return
    from patchforge.background import Background

    pending = list(reversed(fds))  # taken from the end: in the batch's order

    def drain() -> None:
        while True:
            try:
                fd = pending.pop()  # atomic: each descriptor goes to one thread
            except IndexError:
                return
            os.fsync(fd)

    workers: list[Background] = []
    try:
        for _ in range(min(_SYNC_THREADS, len(fds))):
            workers.append(Background(drain))
    finally:
        # The caller closes the descriptors once this returns (or raises): only after every
        # thread is done with them, a Ctrl-C meanwhile included (Background.wait waits on).
        interrupted = None
        for worker in workers:
            try:
                worker.wait()
            except KeyboardInterrupt as exc:
                interrupted = exc
        if interrupted is not None:
            raise interrupted
    for worker in workers:
        worker.result()  # the first error, once all are done


def _start_writeback(fds: list[int]) -> None:
    """Ask the kernel to start writing every temporary file of a batch before the first fsync
    waits (posix_fadvise DONTNEED starts the writeback of a file's dirty pages and drops none
    of them while they are being written). The first fsync's journal commit then carries the
    whole batch's block allocations, and the other fsyncs find their file's done: 290 patch
    files, 32 -> 9 ms of fsyncs on ext4. A hint only, where the system has it: every file is
    still synced before its rename."""
    advise = getattr(os, "posix_fadvise", None)
    if advise is None:
        return
    for fd in fds:
        try:
            advise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        except OSError:
            return  # a file system that takes no advice: the fsyncs do the work


def atomic_delete(path: Path | str) -> None:
    """Remove `path` (if present) and make the removal durable."""
    path = Path(path)
    try:
        os.unlink(path)
    except FileNotFoundError:
        return
    if _WRITTEN_DIRECTORIES:
        _WRITTEN_DIRECTORIES[-1].add(os.fspath(path.parent))
    fsync_dir(path.parent)


def refuse_linked_state(state_dir: Path) -> None:
    """The local state directory (.patchforge/) and what lies directly in it are patchforge's
    own: a symlink there (committed in a pull request: .gitignore does not stop `git add -f`)
    would have every writing command write through it, truncating a `lock` file elsewhere,
    making worktrees and journals outside the project. Refused before anything is written."""
    links = [state_dir] if state_dir.is_symlink() else []
    if not links and os.path.lexists(state_dir) and not state_dir.is_dir():
        # A file of that name (committed: `/.patchforge/` in .gitignore ignores a directory
        # only) failed every writing command with "Not a directory" and the hint of a rebase
        # journal that was never there.
        raise UsageError(f"{state_dir} is a file, not a directory: patchforge keeps its local "
                         "state there, in a directory of its own",
                         hint=f"move the file aside (`mv {state_dir} {state_dir}.file`); "
                              "patchforge makes the directory")
    if not links:
        try:
            links = [Path(entry.path) for entry in os.scandir(state_dir) if entry.is_symlink()]
        except FileNotFoundError:
            pass
    if links:
        raise UsageError(f"{links[0]} is a symlink (to {os.readlink(links[0])}): patchforge keeps "
                         "its local state there, in a directory of its own",
                         hint=f"remove the link (`rm {links[0]}`); patchforge makes it again")


def holder_named(pid: int | None) -> str:
    """`pid N: patchforge rebase --to X`, the process holding a lock, for a message: the PID
    written in the lock's file, and that process's command line (from /proc, where there is
    one) when it is a patchforge command; `pid N` alone otherwise (another program, or the PID
    of a holder gone since and taken by another process), "" without a PID. The command line
    is shown, never run: quoted, its unprintable characters as `?`, cut at 160 characters."""
    if not pid or pid <= 0:
        return ""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv = f.read(4096).split(b"\0")
    except OSError:
        return f"pid {pid}"
    args = [a.decode("utf-8", "replace") for a in argv if a]
    for i, arg in enumerate(args):
        # `python3 -m patchforge ...`, or the console script run by its interpreter
        # (`python3 /venv/bin/patchforge ...`, or exec'd itself).
        as_module = arg == "patchforge" and i > 0 and args[i - 1] == "-m"
        as_script = os.path.basename(arg) == "patchforge" and (
            i == 0 or not args[i - 1].startswith("-"))
        if as_module or as_script:
            import shlex
            line = " ".join(["patchforge", *(shlex.quote(a) for a in args[i + 1:])])
            line = "".join(c if c.isprintable() else "?" for c in line)
            return f"pid {pid}: {line if len(line) <= 160 else line[:157] + '...'}"
    return f"pid {pid}"


class RepoLock:
    """An exclusive lock on one patchforge repository: a kernel lock (`fcntl.flock`) on
    `.patchforge/lock`, which also holds the holder's PID for the message a second process gives.

    The kernel releases the lock when its holder exits, however it exits, so a killed process
    never leaves a lock behind and two processes can never both hold it (a PID file cannot
    promise either: a stale one must be guessed at and taken over, and an empty one says
    nothing). With `wait` > 0 the second process waits up to that many seconds, then refuses
    with LockedError; it never corrupts the first one's work. The file itself stays: removing
    it would let a third process lock a new file while the second holds the old one.
    """

    def __init__(self, state_dir: Path, *, wait: float = 0.0) -> None:
        self.path = Path(state_dir) / "lock"
        self.wait = wait
        self._fd: int | None = None

    def acquire(self) -> None:
        import fcntl

        fault_point("lock")
        refuse_linked_state(self.path.parent)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_CREAT | os.O_RDWR | getattr(os, "O_CLOEXEC", 0), 0o644)
        deadline = time.monotonic() + self.wait
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    holder = read_holder(fd)
                    os.close(fd)
                    raise LockedError(
                        "another patchforge process "
                        + (f"({holder_named(holder)}) " if holder else "")
                        + "is working on this repository",
                        path=str(self.path), hint="wait for it to finish") from None
                time.sleep(0.05)
            except OSError as exc:
                # A file system without kernel locks (ENOLCK: a network one without its lock
                # service; EOPNOTSUPP: some FUSE ones): nothing would keep two commands
                # changing the project apart, so none runs (the error said "run it again").
                os.close(fd)
                # (The message follows the path, which the error names: said once.)
                raise LockedError(f"cannot be locked ({exc.strerror or exc}): "
                                  "its file system keeps no kernel locks, so nothing would keep "
                                  "two commands changing this project apart",
                                  path=str(self.path),
                                  hint="keep the project on a file system with locks (a local "
                                       "disk, or a network one with its lock service running)"
                                  ) from None
        write_holder(fd)
        self._fd = fd
        _HELD_REPO_LOCKS.add(os.path.abspath(self.path))

    def release(self) -> None:
        if self._fd is not None:
            import fcntl

            _HELD_REPO_LOCKS.discard(os.path.abspath(self.path))

            try:
                os.ftruncate(self._fd, 0)
            except OSError:
                pass
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> "RepoLock":
        self.acquire()
        return self

    def __exit__(self, *exc) -> None:
        self.release()


class WriteOutLock:
    """A kernel lock (`fcntl.flock`) on the project directory itself that keeps the commands
    reading a project's files apart from a rebase writing out its result, which replaces
    several files (patches, series, upstream.lock, overlays) that only make sense together,
    each whole but one after the other. A reader holds it shared while it reads, the write-out
    exclusive while it writes: a reader sees the project as it was before the write-out or as
    it is after, never part of each. Readers never wait for each other, and nothing waits for
    the rest of a rebase (its walk, its stops), only for the write-out itself.

    A waiting write-out goes first: readers whose reads overlap (a CI loop, `watch patchforge
    status`) would otherwise keep the directory shared for ever, and LOCK_EX never be granted.
    So a writer first takes a second lock, `.patchforge/turnstile`, exclusively, and keeps it
    until it is done; a reader takes the turnstile shared just until it holds the directory.
    While a writer waits, no new reader gets in: it waits only for the readers already reading.
    (The turnstile file is made by the first writer and stays; a reader never makes it.)

    The directory always exists, so no file is made for the lock, and a holder's death
    releases it (a write-out killed half way leaves its journal, which readers announce).
    `on_wait` is called once when the lock is held by the other side; past `wait` seconds
    LockedError says who holds it, and for the write-out what is `undone` and the `hint` (by
    default a rebase's write-out, which `--continue` finishes)."""

    def __init__(self, root: Path, *, exclusive: bool, wait: float, on_wait=None,
                 undone: str = "the rebase's result is not written yet",
                 hint: str = "`patchforge rebase --continue` writes it out once they end") -> None:
        self.root = Path(root)
        self.exclusive = exclusive
        self.wait = wait
        self.on_wait = on_wait if on_wait is not None or not exclusive else \
            (lambda: say_waiting_for_readers(self.root))
        self.undone = undone
        self.hint = hint
        self._fd: int | None = None
        self._turnstile: int | None = None
        self._deadline: float | None = None
        self._key = ""  # the directory's real path, once entered
        self._nested = False  # entered inside this process's own exclusive hold
        self._said = False  # on_wait called
        # A reader that waits: the write-out it waits for (`pid N: patchforge rebase ...`, from
        # the turnstile, where the writer holding it wrote its PID), "" when not known.
        self.writer = ""

    def __enter__(self) -> "WriteOutLock":
        import fcntl

        self._key = os.path.realpath(self.root)
        if self._key in _HELD_EXCLUSIVE:
            # Taken again inside a hold of this process's own (a write phase made of smaller
            # ones): it holds the project already, and a second lock would wait for itself.
            _HELD_EXCLUSIVE[self._key] += 1
            self._nested = True
            return self
        self._nested = False
        try:
            fd = os.open(self.root, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0)
                         | getattr(os, "O_CLOEXEC", 0))
        except OSError as exc:
            say_unlockable(self.root, exc)  # a directory without read permission
            return self
        self._fd = fd
        kind = fcntl.LOCK_EX if self.exclusive else fcntl.LOCK_SH
        try:
            turnstile = self._open_turnstile()
            if turnstile is not None and not (self._take(turnstile, kind) if self.exclusive
                                              else self._let_writer_first(turnstile)):
                os.close(turnstile)
                turnstile = None
            self._turnstile = turnstile
            if not self._take(fd, kind):
                os.close(fd)
                self._fd = None
        except BaseException:
            self.__exit__()
            raise
        if self.exclusive:
            _HELD_EXCLUSIVE[self._key] = 1
            if self._turnstile is not None:
                write_holder(self._turnstile)
        elif self._turnstile is not None:
            os.close(self._turnstile)  # in: the next writer may queue up
            self._turnstile = None
        return self

    def _open_turnstile(self) -> int | None:
        state = self.root / ".patchforge"
        flags = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0) \
            | getattr(os, "O_NONBLOCK", 0)
        # Open for writing to lock it exclusively: NFS makes flock a POSIX lock, which needs it.
        flags |= os.O_RDWR | os.O_CREAT if self.exclusive else os.O_RDONLY
        try:
            return os.open(state / "turnstile", flags, 0o644)
        except OSError:
            # None yet (no writer ever wrote here) or none to be made: the directory's own
            # lock still keeps readers and writers apart, without a writer's precedence.
            return None

    def _let_writer_first(self, turnstile: int) -> bool:
        """A reader: wait while a writer queued on the turnstile goes first, for at most
        QUEUED_WRITER_WAIT seconds; then read beside the readers it waits for (as before the
        turnstile) rather than fail. A writer queued behind a long reader (one asking a slow
        forge, say) must not turn every reader after it into a refusal. False: no turnstile."""
        import fcntl

        deadline = None
        while True:
            try:
                fcntl.flock(turnstile, fcntl.LOCK_SH | fcntl.LOCK_NB)
                return True
            except BlockingIOError:
                if deadline is None:
                    deadline = time.monotonic() + QUEUED_WRITER_WAIT
                    self._say_waiting()
                elif time.monotonic() >= deadline:
                    return False
                time.sleep(0.02)
            except OSError:
                return False  # no locks here: the directory's own lock says so

    def _say_waiting(self) -> None:
        if not self._said and not self.exclusive:
            self.writer = self._writer_named()
        if self.on_wait is not None and not self._said:
            self._said = True
            self.on_wait()

    def _writer_named(self) -> str:
        """The writer holding the turnstile, named for a reader's message ("" if unknown)."""
        flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0) \
            | getattr(os, "O_NONBLOCK", 0)
        try:
            fd = os.open(self.root / ".patchforge" / "turnstile", flags)
        except OSError:
            return ""
        try:
            return holder_named(read_holder(fd))
        finally:
            os.close(fd)

    def _take(self, fd: int, kind: int) -> bool:
        """Lock `fd` (waiting as the class says); False on a file system without locks."""
        import fcntl

        while True:
            try:
                fcntl.flock(fd, kind | fcntl.LOCK_NB)
                return True
            except BlockingIOError:
                if self._deadline is None:
                    self._deadline = time.monotonic() + self.wait
                    self._say_waiting()
                elif time.monotonic() >= self._deadline:
                    raise LockedError(
                        "commands reading this project still read its files after "
                        f"{self.wait:g} s; {self.undone}"
                        if self.exclusive else
                        "another command "
                        + (f"({self.writer}) " if self.writer else "")
                        + f"is still changing this project after {self.wait:g} "
                        "s: its files are part old, part new until it ends",
                        path=str(self.root),
                        hint=self.hint if self.exclusive else "run this command again once it has ended"
                    ) from None
                time.sleep(0.02)
            except OSError as exc:
                # A file system without kernel locks (some network and FUSE ones): a reader
                # must still read, and a write-out still write; said once.
                say_unlockable(self.root, exc)
                return False

    def __exit__(self, *exc) -> None:
        if self._nested:
            _HELD_EXCLUSIVE[self._key] -= 1
            return
        if self.exclusive:
            _HELD_EXCLUSIVE.pop(self._key, None)
            if self._turnstile is not None:
                # The next writer writes its own; a reader never names one gone.
                with contextlib.suppress(OSError):
                    os.ftruncate(self._turnstile, 0)
        # Closing the only descriptor releases its lock: the directory's first, then the
        # turnstile, so the readers let in next find the write-out whole.
        for name in ("_fd", "_turnstile"):
            fd = getattr(self, name)
            if fd is not None:
                os.close(fd)
                setattr(self, name, None)


def write_holder(fd: int) -> None:
    """This process's PID into a lock's file it holds, for the messages of those who wait."""
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    except OSError:
        pass  # the PID is only for messages; the kernel lock is what counts


def read_holder(fd: int) -> int | None:
    """The PID `write_holder` wrote into the lock's file open at `fd`; None when there is
    none (released, or not written yet) or the file holds something else."""
    try:
        return int(os.pread(fd, 32, 0).decode("ascii").strip() or "0") or None
    except (OSError, ValueError, UnicodeDecodeError):
        return None


# The project directories (real paths) this process holds exclusively (`WriteOutLock`), with
# how many holds are open: a hold taken inside another is one already.
_HELD_EXCLUSIVE: dict[str, int] = {}


# The `.patchforge/lock` files (absolute paths) this process holds (`RepoLock`).
_HELD_REPO_LOCKS: set[str] = set()
# Per open `writing_project` hold, innermost last: the directories its atomic writes and
# removals wrote to.
_WRITTEN_DIRECTORIES: list[set[str]] = []


def writing_project(root: Path) -> WriteOutLock:
    """Held (a context manager) while a command other than a rebase's write-out changes
    several of a project's files that only make sense together (a patch file and the series
    that lists it, a fix and skipped/, a pin and the series): the commands reading the project
    see it before or after, never between. Taken for the writes alone, never while the command
    waits on the network. Past its wait, nothing is written yet and the command is refused.
    At the end of the outermost hold, once its writes succeeded, the temporary files killed
    atomic writes left in the directories it wrote are removed (remove_stray_temporaries)."""
    return _ProjectWrite(root, exclusive=True, wait=WRITE_WAIT, undone="nothing was written",
                         hint="run the command again once they end")


class _ProjectWrite(WriteOutLock):
    """writing_project's hold: a WriteOutLock that notes the directories written under it."""

    def __enter__(self) -> "_ProjectWrite":
        super().__enter__()
        if not self._nested:
            _WRITTEN_DIRECTORIES.append(set())
        return self

    def __exit__(self, *exc) -> None:
        try:
            if not self._nested:
                written = _WRITTEN_DIRECTORIES.pop()
                if exc[0] is None:
                    remove_stray_temporaries(self.root, written)
        finally:
            super().__exit__(*exc)


# The files a command holding the project's lock writes in the project's root. Only their
# temporary files are taken there: a report a reader writes in the root without that lock
# (`status --html status.html` in a CI job's checkout, `export`, `pr --out`) may be between
# its temporary file and its rename.
_ROOT_FILES = frozenset({"upstream.lock", "patchforge.toml", "pyproject.toml", ".gitignore"})


def remove_stray_temporaries(root: Path | str, directories) -> list[str]:
    """Remove the temporary files that atomic writes a kill cut short left (`_temporary`'s
    `.NAME.XXXXXXXXXX.tmp`, a regular file) in those of `directories` that are the project's
    root (of the project's own files there only, `_ROOT_FILES`) or under its series/ (the
    places the .gitignore `init` writes ignores them), and return their paths. Nothing else
    is ever removed: a user's file of another name, a link, a directory. Only by a process holding the project's lock (`RepoLock`) once its own
    writes are done, so that no other command's write is between its temporary file and its
    rename; and never while a rebase is in progress (its journal exists): the temporary files
    of its write-out are renamed by `rebase --continue`, which, like `--abort`, removes those
    it does not keep."""
    root = os.path.abspath(root)
    state = os.path.join(root, ".patchforge")
    if os.path.join(state, "lock") not in _HELD_REPO_LOCKS or \
            os.path.lexists(os.path.join(state, "rebase", "journal.json")):
        return []
    series = os.path.join(root, "series")
    removed: list[str] = []
    for directory in sorted({os.path.abspath(d) for d in directories}):
        if directory != root and directory != series and \
                not directory.startswith(series + os.sep):
            continue
        try:
            with os.scandir(directory) as entries:
                found = [entry.path for entry in entries
                         if (name := TEMPORARY_NAME.fullmatch(entry.name))
                         and (directory != root or name.group(1) in _ROOT_FILES)
                         and entry.is_file(follow_symlinks=False)]
        except OSError:
            continue  # gone or unreadable: nothing of ours to take
        for path in found:
            try:
                os.unlink(path)
            except OSError:
                continue  # left to the next write: a tidying never fails the command it ends
            removed.append(path)
    return removed


# How long a command changing the project waits for the commands reading it.
WRITE_WAIT = 600.0


def _unsaid(*args) -> None:
    """A core that is not run from the command line says nothing (it never prints)."""


# Called with the project directory and the error when it cannot be locked (`WriteOutLock`):
# the command goes on, but nothing keeps its reads and a rebase's write-out apart. The command
# line sets it to say so once on stderr.
say_unlockable = _unsaid
# Called with the project directory when a command changing it waits for the commands reading
# it (`WriteOutLock` taken exclusively without an `on_wait` of its own): the command line says so.
say_waiting_for_readers = _unsaid
# How long a reader lets a writer queued on the turnstile go first before it reads beside the
# readers that writer waits for (`WriteOutLock._let_writer_first`).
QUEUED_WRITER_WAIT = 10.0
