"""Temporary files and directories, a directory tree's removal and a program's lookup on PATH,
made here instead of by the standard library's `tempfile` and `shutil`.

Every command that opens the store makes temporary files (git's input, output and messages,
the range-diff's scratch repository, packs) and removes a directory tree or two. Importing
`tempfile` imports `shutil` and `random`, and `shutil` imports `bz2` and `lzma` with their C
libraries: 6-9 ms of CPU at every start of a command installed in a virtual environment
(docs/performance.md), for none of their work. These functions are those modules' own, as the
standard library of Python 3.11 does them on a POSIX system: the same flags, modes (0600
files, 0700 directories), name shapes (prefix, then 8 characters of `a-z0-9_`) and places.

Where `tempfile` is loaded all the same (by a calling program or a site hook), its answer for
the temporary directory is taken, so a program that set `tempfile.tempdir` is obeyed.
"""
from __future__ import annotations

import os
import sys
from typing import BinaryIO

_NAME_CHARS = b"abcdefghijklmnopqrstuvwxyz0123456789_"
_ATTEMPTS = 10000  # tempfile.TMP_MAX
# tempfile's `_bin_openflags`: a new file, never through a symlink, not inherited by children.
_FILE_FLAGS = os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_root: str | None = None  # the temporary directory, once found (tempfile.tempdir's cache)


def _random_name() -> str:
    return bytes(_NAME_CHARS[b % len(_NAME_CHARS)] for b in os.urandom(8)).decode()


def temp_root() -> str:
    """The temporary directory, as `tempfile.gettempdir()` finds it: the first of $TMPDIR,
    $TEMP, $TMP, /tmp, /var/tmp, /usr/tmp and the working directory where a file can be made,
    found once per process."""
    loaded = sys.modules.get("tempfile")
    if loaded is not None:
        return loaded.gettempdir()
    global _root
    if _root is None:
        _root = _find_root()
    return _root


def _find_root() -> str:
    candidates = [os.environ[name] for name in ("TMPDIR", "TEMP", "TMP") if os.environ.get(name)]
    candidates += ["/tmp", "/var/tmp", "/usr/tmp"]
    try:
        cwd = os.getcwd()
    except (AttributeError, OSError):
        cwd = os.curdir
    candidates.append(cwd)
    for directory in candidates:
        if directory != os.curdir:
            directory = os.path.abspath(directory)
        for _ in range(100):  # tempfile tries a writable file in each, as here
            path = os.path.join(directory, _random_name())
            try:
                fd = os.open(path, _FILE_FLAGS, 0o600)
                try:
                    os.write(fd, b"blat")
                finally:
                    os.close(fd)
                    os.unlink(path)
                return directory
            except FileExistsError:
                continue
            except OSError:
                break
    raise FileNotFoundError(f"no usable temporary directory found in {candidates}")


def make_temp(dir: str | os.PathLike | None = None, prefix: str = "tmp") -> tuple[int, str]:
    """`tempfile.mkstemp(prefix=prefix, dir=dir)`: a new file (0600) opened for reading and
    writing, as (descriptor, absolute path)."""
    directory = os.fspath(dir) if dir is not None else temp_root()
    for _ in range(_ATTEMPTS):
        path = os.path.join(directory, prefix + _random_name())
        try:
            fd = os.open(path, _FILE_FLAGS, 0o600)
        except FileExistsError:
            continue
        return fd, os.path.abspath(path)
    raise FileExistsError(f"no unused temporary file name in {directory}")


def make_temp_dir(prefix: str = "tmp", dir: str | os.PathLike | None = None) -> str:
    """`tempfile.mkdtemp(prefix=prefix, dir=dir)`: a new directory (0700), its absolute
    path."""
    directory = os.fspath(dir) if dir is not None else temp_root()
    for _ in range(_ATTEMPTS):
        path = os.path.join(directory, prefix + _random_name())
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            continue
        return os.path.abspath(path)
    raise FileExistsError(f"no unused temporary directory name in {directory}")


def temporary_file(dir: str | os.PathLike | None = None) -> BinaryIO:
    """`tempfile.TemporaryFile(dir=dir)`: a file without a name (gone when closed), opened
    "w+b": O_TMPFILE where the file system makes one, else a file made and removed at once."""
    directory = os.fspath(dir) if dir is not None else temp_root()
    if hasattr(os, "O_TMPFILE"):
        try:
            fd = os.open(directory, (_FILE_FLAGS | os.O_TMPFILE) & ~os.O_CREAT, 0o600)
        except OSError:  # IsADirectoryError: a kernel without it; others: not on this system
            pass
        else:
            return _opened(fd)
    fd, path = make_temp(directory)
    try:
        os.unlink(path)
    except BaseException:
        os.close(fd)
        raise
    return _opened(fd)


def _opened(fd: int) -> BinaryIO:
    try:
        return open(fd, "w+b")
    except BaseException:
        os.close(fd)
        raise


class TemporaryDirectory:
    """`tempfile.TemporaryDirectory(prefix=prefix, dir=dir)`: a new directory (`name`),
    removed with what it holds by cleanup() or at the end of a `with` block. Unlike
    tempfile's, what cannot be removed is left rather than raised (as the scratch
    directories of merges always were): a scratch directory's cleanup, often on an error's
    way out, never replaces the command's own outcome."""

    def __init__(self, prefix: str = "tmp", dir: str | os.PathLike | None = None) -> None:
        self.name = make_temp_dir(prefix, dir)

    def __enter__(self) -> str:
        return self.name

    def __exit__(self, *exc) -> None:
        self.cleanup()

    def cleanup(self) -> None:
        remove_tree(self.name, ignore_errors=True)


def remove_tree(path: str | os.PathLike, *, ignore_errors: bool = False) -> None:
    """`shutil.rmtree(path, ignore_errors=...)` as it runs on Linux: the tree walked by
    directory descriptors, no symlink followed (a link is removed, never what it names; a
    `path` that is a link is refused); with `ignore_errors` every entry that can go goes,
    else the first error is raised."""
    path = os.fspath(path)
    try:
        # As shutil: what the name is now, then what opening it gives, the same or refused.
        named = os.lstat(path)
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        if ignore_errors:
            return
        raise
    try:
        if not os.path.samestat(named, os.fstat(fd)):
            if ignore_errors:
                return
            raise OSError("Cannot call rmtree on a symbolic link")
        _remove_contents(fd, ignore_errors)
    finally:
        os.close(fd)
    try:
        os.rmdir(path)
    except OSError:
        if not ignore_errors:
            raise


def _remove_contents(fd: int, ignore_errors: bool) -> None:
    try:
        with os.scandir(fd) as found:
            entries = []
            for entry in found:
                try:
                    is_dir = entry.is_dir(follow_symlinks=False)
                except OSError:
                    is_dir = False
                entries.append((entry.name, is_dir))
    except OSError:
        if ignore_errors:
            return
        raise
    for name, is_dir in entries:
        try:
            if is_dir:  # never through a link: one made since the listing is refused
                child = os.open(name, _DIR_FLAGS, dir_fd=fd)
                try:
                    _remove_contents(child, ignore_errors)
                finally:
                    os.close(child)
                os.rmdir(name, dir_fd=fd)
            else:
                os.unlink(name, dir_fd=fd)
        except OSError:
            if not ignore_errors:
                raise


def which(name: str, path: str | None = None) -> str | None:
    """`shutil.which(name, path=path)` on a POSIX system: the first file `name` in the
    directories of `path` (else $PATH, else the system's default) that may be executed and
    is not a directory; a `name` with a directory part is checked as it is."""
    if os.path.dirname(name):
        return name if _executable(name) else None
    if path is None:
        path = os.environ.get("PATH", None)
        if path is None:
            try:
                path = os.confstr("CS_PATH")
            except (AttributeError, ValueError):
                path = os.defpath
    if not path:
        return None
    seen = set()
    for directory in os.fsdecode(path).split(os.pathsep):
        if directory not in seen:
            seen.add(directory)
            candidate = os.path.join(directory, name)
            if _executable(candidate):
                return candidate
    return None


def _executable(path: str) -> bool:
    return os.path.exists(path) and os.access(path, os.F_OK | os.X_OK) and \
        not os.path.isdir(path)
