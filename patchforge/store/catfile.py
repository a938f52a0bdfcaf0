"""Reading objects through one persistent `git cat-file --batch` (`CatFile`), and raw trees."""
from __future__ import annotations

import os
import subprocess
import tempfile
import threading
from pathlib import Path
from typing import IO

from patchforge.errors import StoreError
from patchforge.store.git import end_process, start_git


class CatFile:
    """One `git cat-file --batch`: reads objects by id or `<rev>:<path>` without a process each.

    In a partial clone, a missing blob is fetched on demand by git itself (promisor remote).
    """

    def __init__(self, git_dir: Path) -> None:
        self._git_dir = git_dir
        self._proc: subprocess.Popen | None = None
        self._stderr: IO[bytes] | None = None
        self.lock = threading.Lock()

    def _start(self) -> subprocess.Popen:
        if self._proc is None or self._proc.poll() is not None:
            self._stderr = tempfile.TemporaryFile()
            self._proc = start_git("cat-file", "--batch", git_dir=self._git_dir,
                                   stderr=self._stderr)
        return self._proc

    def query(self, names: list[str]) -> list[tuple[str, str, bytes] | None]:
        """(oid, type, content) for each name, None when missing or ambiguous."""
        for name in names:
            if "\n" in name or not name:
                raise StoreError(f"invalid object name {name!r}")
        results: list[tuple[str, str, bytes] | None] = []
        with self.lock:
            proc = self._start()
            # Requests are written in chunks that fit the pipe, then every answer is read: git
            # flushes after each object, so neither side can block on a full pipe.
            start = 0
            while start < len(names):
                end, size = start, 0
                while end < len(names) and (end == start or size < 16384):
                    size += len(os.fsencode(names[end])) + 1
                    end += 1
                try:
                    assert proc.stdin is not None  # started with stdin=PIPE
                    proc.stdin.write(b"".join(os.fsencode(n) + b"\n" for n in names[start:end]))
                    proc.stdin.flush()
                    for _ in range(start, end):
                        results.append(self._read_one(proc))
                except (BrokenPipeError, OSError, ValueError) as exc:
                    self.close()
                    raise StoreError(f"git cat-file stopped: {self._error_text()}") from exc
                except BaseException:
                    # Interrupted mid-answer (Ctrl-C): the answers left in the pipe would be
                    # read as the next query's (a second thread's, while the command ends).
                    # The next query starts a new process.
                    self._kill()
                    raise
                start = end
        return results

    def _read_one(self, proc: subprocess.Popen) -> tuple[str, str, bytes] | None:
        assert proc.stdout is not None  # started with stdout=PIPE
        header = proc.stdout.readline()
        if not header:
            raise OSError("no answer")
        fields = header.rstrip(b"\n").split(b" ")
        if len(fields) == 3 and fields[2].isdigit():
            size = int(fields[2])
            data = proc.stdout.read(size + 1)
            if len(data) != size + 1:
                raise OSError("short read")
            return fields[0].decode(), fields[1].decode(), data[:size]
        # "<name> missing", "<name> ambiguous", or an extended message for symlinks: none of
        # them carry a body we must skip (we never ask with --follow-symlinks).
        return None

    def _error_text(self) -> str:
        if self._stderr is None:
            return "unknown error"
        self._stderr.seek(0)
        return self._stderr.read().decode("utf-8", "replace").strip()[-2000:] or "unknown error"

    def restart(self) -> None:
        """End the running process once no query is using it: the next query starts a new one,
        which reads the repository's configuration afresh."""
        with self.lock:
            self.close()

    def _kill(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None:
            proc.kill()
            proc.wait()
            for pipe in (proc.stdin, proc.stdout):
                if pipe is not None:
                    try:
                        pipe.close()
                    except OSError:
                        pass
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None

    def close(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None:
            end_process(proc, grace=5)
            if proc.stdout is not None:
                proc.stdout.close()
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None


def parse_tree(data: bytes) -> dict[bytes, tuple[str, str]]:
    """name -> (mode, id) of a raw tree object."""
    entries = {}
    pos = 0
    while pos < len(data):
        space = data.index(b" ", pos)
        nul = data.index(b"\0", space)
        entries[data[space + 1:nul]] = (data[pos:space].decode(), data[nul + 1:nul + 21].hex())
        pos = nul + 21
    return entries
