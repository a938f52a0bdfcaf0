"""Reading objects through one persistent `git cat-file --batch` (`CatFile`), and raw trees."""
from __future__ import annotations

import collections
import fcntl
import hashlib
import os
import re
import subprocess
import threading
import zlib
from pathlib import Path
from typing import IO, Callable

from patchforge import tempfiles
from patchforge.errors import StoreError
from patchforge.store.git import damage_error, end_process, scratch_dir, start_git

_HEX40 = re.compile(r"[0-9a-f]{40}")
# git's last word when it could not read an object and then found its loose file.
_LOOSE_CORRUPT = re.compile(r"^fatal: loose object (?P<oid>[0-9a-f]{40}|[0-9a-f]{64}) "
                            r"\(stored in (?P<path>.+)\) is corrupt$")


class _WrittenMeanwhile(StoreError):
    """git ended calling a loose object corrupt that is whole: another process wrote it while
    git looked for it (see _written_meanwhile). The process and the answers asked ahead of it
    are gone; asked again, git reads the object. `damaged` is what is said if it does not."""

    def __init__(self, oid: str, damaged: StoreError) -> None:
        super().__init__(str(damaged))
        self.oid = oid
        self.damaged = damaged


class CatFile:
    """One `git cat-file --batch`: reads objects by id or `<rev>:<path>` without a process each.

    In a partial clone, a missing blob is fetched on demand by git itself (promisor remote).
    A name reached from a full object id the store does not hold (`<id>^{tree}`, `<id>:path`,
    `<id>~1`), as `known_absent` tells it, is answered missing without asking git: git would
    fetch that id on demand from every promisor remote of the store in turn, one `git fetch`
    each, and a cache shared by a few hundred projects made one `status` take minutes.
    """

    # Names asked ahead (`ahead`) whose answers git may be writing, at most: their requests
    # (about 10 KB) always fit the pipe to git, so writing one never waits for git, which may
    # itself wait for room to write its answers.
    AHEAD_OUTSTANDING = 256
    # The pipe git writes its answers into, asked for this size (Linux; the system's 64 KB
    # otherwise): how far git can read ahead of the caller.
    PIPE_BYTES = 1 << 20

    def __init__(self, git_dir: Path,
                 known_absent: Callable[[set[str]], set[str]] | None = None) -> None:
        self._git_dir = git_dir
        # full ids -> those of them the store is known not to hold (nothing when unsure)
        self._known_absent = known_absent
        self._proc: subprocess.Popen | None = None
        self._stderr: IO[bytes] | None = None
        self.lock = threading.Lock()
        # Reading ahead (`ahead`, `answer`): names not written to git yet, names written whose
        # answers are unread (in git's order), and answers read before they were asked for.
        self._queued: collections.deque[str] = collections.deque()
        self._outstanding: collections.deque[str] = collections.deque()
        self._asked: set[str] = set()  # the names in either
        self._early: dict[str, tuple[str, str, bytes] | None] = {}

    def start(self) -> None:
        """Start git now rather than at the first question: it opens the store's packs and
        indexes while the caller goes on."""
        with self.lock:
            self._start()

    def _start(self) -> subprocess.Popen:
        if self._proc is None or self._proc.poll() is not None:
            self._forget_ahead()
            self._stderr = tempfiles.temporary_file(dir=scratch_dir())  # as StartedGit's
            self._proc = start_git("cat-file", "--batch", git_dir=self._git_dir,
                                   stderr=self._stderr)
            if self._proc.stdout is not None and hasattr(fcntl, "F_SETPIPE_SZ"):
                try:
                    fcntl.fcntl(self._proc.stdout.fileno(), fcntl.F_SETPIPE_SZ, self.PIPE_BYTES)
                except OSError:
                    pass  # above the system's limit: the default size reads less far ahead
        return self._proc

    def _forget_ahead(self) -> None:
        self._asked.clear()
        self._queued.clear()
        self._outstanding.clear()
        self._early.clear()

    def ahead(self, names: list[str]) -> None:
        """Ask for `names` now and read their answers later (`answer`), in this order: git reads
        them (inflating each blob) while the caller works, as far ahead as the pipe holds. A
        query() meanwhile waits only for the answers git is writing then."""
        for name in names:
            if "\n" in name or not name:
                raise StoreError(f"invalid object name {name!r}")
        absent = self._absent_names(names)
        with self.lock:
            self._start()
            for name in names:
                if name in absent:
                    if name not in self._asked:
                        self._early[name] = None
                elif name not in self._asked and name not in self._early:
                    self._asked.add(name)
                    self._queued.append(name)
            try:
                self._guarded(self._top_up)
            except _WrittenMeanwhile:
                pass  # (the names are forgotten: answer() asks them anew)

    def answer(self, name: str) -> tuple[str, str, bytes] | None:
        """The answer to a name asked ahead (read now if git has not given it yet); a name not
        asked ahead, or asked before git was started again, is asked now."""
        with self.lock:
            if name in self._asked:
                try:
                    self._guarded(lambda: self._read_ahead(until=name))
                except _WrittenMeanwhile:
                    pass  # (every answer asked ahead is forgotten: `name` is asked below)
            if name in self._early:
                found = self._early.pop(name)
                if found is None:
                    self._refuse_damage()
                return found
        return self.query([name])[0]

    def asked(self, name: str) -> bool:
        """Whether `name` was asked ahead and its answer not taken yet."""
        return name in self._asked or name in self._early

    def _top_up(self) -> None:
        proc = self._proc
        assert proc is not None and proc.stdin is not None  # started with stdin=PIPE
        sent: list[str] = []
        while self._queued and len(self._outstanding) + len(sent) < self.AHEAD_OUTSTANDING:
            sent.append(self._queued.popleft())
        if sent:
            proc.stdin.write(b"".join(os.fsencode(n) + b"\n" for n in sent))
            proc.stdin.flush()
            self._outstanding.extend(sent)

    def _read_ahead(self, until: str | None) -> None:
        """Read answers of names asked ahead into `_early`: up to `until`'s, or (None) those git
        is writing now."""
        proc = self._proc
        assert proc is not None
        if until is not None:
            self._top_up()
        while self._outstanding:
            name = self._outstanding[0]
            self._early[name] = self._read_one(proc)
            self._outstanding.popleft()
            self._asked.discard(name)
            if until is None:
                continue
            self._top_up()
            if name == until:
                return

    def _guarded(self, step) -> None:
        """`step` on the running process. A failure ends the process with a StoreError; an
        interruption (Ctrl-C) mid-answer kills it, since the answers left in the pipe would be
        read as the next query's (a second thread's, while the command ends): the next query
        starts a new process."""
        try:
            step()
        except (BrokenPipeError, OSError, ValueError) as exc:
            # git's message is read before close() lets its file go ("unknown error" before).
            text = self._error_text()
            self.close()
            damaged = damage_error(text, self._git_dir)
            if damaged is not None:
                whole = _written_meanwhile(text)
                if whole is not None:
                    raise _WrittenMeanwhile(whole, damaged) from None
                raise damaged from None
            raise StoreError(f"git cat-file stopped: {text}") from exc
        except BaseException:
            self._kill()
            raise

    def _ask(self, proc: subprocess.Popen, names: list[str],
             results: list[tuple[str, str, bytes] | None]) -> None:
        """Write `names` as one request and append their answers to `results`."""
        assert proc.stdin is not None  # started with stdin=PIPE
        proc.stdin.write(b"".join(os.fsencode(n) + b"\n" for n in names))
        proc.stdin.flush()
        for _ in names:
            results.append(self._read_one(proc))

    def query(self, names: list[str]) -> list[tuple[str, str, bytes] | None]:
        """(oid, type, content) for each name, None when missing or ambiguous."""
        written: set[str] = set()
        while True:
            try:
                return self._query(names)
            except _WrittenMeanwhile as exc:
                # Asked again of a new process, which finds the object now whole in the store.
                # The same object called corrupt again is not one being written: git cannot
                # read a file that looks whole, said damaged as before. So is a fourth object
                # in a row (a bound, never met: each needs a write at git's instant).
                if exc.oid in written or len(written) >= 3:
                    raise exc.damaged from None
                written.add(exc.oid)

    def _query(self, names: list[str]) -> list[tuple[str, str, bytes] | None]:
        for name in names:
            if "\n" in name or not name:
                raise StoreError(f"invalid object name {name!r}")
        absent = self._absent_names(names)
        if absent:
            asked = [name for name in names if name not in absent]
            answers = iter(self._query(asked) if asked else [])
            return [None if name in absent else next(answers) for name in names]
        results: list[tuple[str, str, bytes] | None] = []
        with self.lock:
            proc = self._start()
            if self._outstanding:
                # Git answers in order: the answers it is writing for names asked ahead come
                # first (kept for answer()); the names not written yet wait for this query.
                self._guarded(lambda: self._read_ahead(until=None))
            # Requests are written in chunks that fit the pipe, then every answer is read: git
            # flushes after each object, so neither side can block on a full pipe.
            start = 0
            while start < len(names):
                end, size = start, 0
                while end < len(names) and (end == start or size < 16384):
                    size += len(os.fsencode(names[end])) + 1
                    end += 1
                self._guarded(lambda first=start, last=end: self._ask(proc, names[first:last],
                                                                      results))
                start = end
            if self._queued:
                self._guarded(self._top_up)
            if None in results:
                self._refuse_damage()
        return results

    def _absent_names(self, names: list[str]) -> set[str]:
        """Those of `names` reached from a full object id (`<id>^{...}`, `<id>:<path>`,
        `<id>~n`) that `known_absent` says the store does not hold. A bare id is never
        screened: it may be a blob a partial store is promised, which git fetches."""
        if self._known_absent is None:
            return set()
        leads = {name: name[:40].lower() for name in names
                 if len(name) > 40 and name[40] in "^:~" and _HEX40.fullmatch(name[:40].lower())}
        if not leads:
            return set()
        absent = self._known_absent(set(leads.values()))
        return {name for name, lead in leads.items() if lead in absent}

    def _refuse_damage(self) -> None:
        """A damaged pack index makes git answer "missing" for what the pack holds, saying
        why only on its stderr: an answer read as "not in the store" would have the command
        take a locked revision for one its source lacks. Raise StoreDamaged when git said so."""
        if self._stderr is None or os.fstat(self._stderr.fileno()).st_size == 0:
            return
        damaged = damage_error(self._error_text(), self._git_dir)
        if damaged is not None:
            raise damaged

    def _read_one(self, proc: subprocess.Popen) -> tuple[str, str, bytes] | None:
        assert proc.stdout is not None  # started with stdout=PIPE
        header = proc.stdout.readline()
        if not header:
            raise OSError("no answer")
        fields = header.rstrip(b"\n").split(b" ")
        if len(fields) == 3 and fields[2].isdigit():
            size = int(fields[2])
            # The content, then the line end git writes after it, read apart: read together,
            # the content was a copy of what was read (`data[:size]`), every blob copied twice
            # (a release's 27 MB of new files, read by the first command asking about it).
            data = proc.stdout.read(size)
            if len(data) != size or len(proc.stdout.read(1)) != 1:
                raise OSError("short read")
            return fields[0].decode(), fields[1].decode(), data
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
        self._forget_ahead()
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

    def close(self, meanwhile: Callable[[], object] | None = None) -> None:
        """End git; `meanwhile`, the caller's own closing work, runs once git has seen its
        input end, so that git exits (freeing its caches, a millisecond or two) while it
        runs, not before it."""
        if self._outstanding:
            # Answers asked ahead and not read: git may be waiting for room in the pipe to
            # write them, and would never see its input end. They are not needed: git only
            # reads here, so it is ended at once.
            self._kill()
            if meanwhile is not None:
                meanwhile()
            return
        self._forget_ahead()
        proc, self._proc = self._proc, None
        if proc is not None and proc.stdin is not None:
            try:
                proc.stdin.close()
            except OSError:
                pass
        try:
            if meanwhile is not None:
                meanwhile()
        finally:
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


def _written_meanwhile(stderr: str) -> str | None:
    """The id of the loose object git's last message calls corrupt when its file is whole
    now (None otherwise). git looks for an object (its packs, its loose file, the packs listed
    again), and only when all miss checks whether the loose file exists, to say why it cannot
    read it: one another process writes then (a fetch of another project on the shared cache unpacks a few objects
    loose; git writes each whole to a temporary file, then links it in place) is found by that
    check and called corrupt, and the command said the store was damaged and had the user
    remove it. A file that inflates, to its end and nothing after, to a header of the right
    size and content of its own id is whole: a damaged one does not."""
    lines = stderr.strip().splitlines()
    match = _LOOSE_CORRUPT.match(lines[-1].strip()) if lines else None
    if match is None:
        return None
    inflate = zlib.decompressobj()
    try:
        with open(match.group("path"), "rb") as f:
            content = inflate.decompress(f.read())
    except (OSError, zlib.error):
        return None
    if not inflate.eof or inflate.unused_data:
        return None  # cut short, or followed by bytes git refuses ("garbage at end")
    header, nul, rest = content.partition(b"\0")
    if not nul or header.split(b" ")[-1] != str(len(rest)).encode():
        return None  # a size other than the content's: git refuses it too
    oid = match.group("oid")
    digest = hashlib.sha1 if len(oid) == 40 else hashlib.sha256
    return oid if digest(content).hexdigest() == oid else None
