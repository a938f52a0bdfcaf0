"""The history's diffs kept per commit (`<cache>/kept/commits/`): git's diff of one commit
against its parent in one file (`git diff-tree -p` with store.diff.DIFF_OPTIONS and
`--no-renames`) is a function of the commit id, the path and git alone, whatever the target a
command asks about. A nightly's history is the last one's and a few commits more: kept per
commit, not per question, the next target's read asks git only for the commits (and files)
no earlier command read.

A record is one commit's: its id, then each file asked so far with git's section of it
(empty: the commit does not change it), named by a digest of the commit id, git's arguments
without the paths, the format and git itself (store.kept.answer_name), checked by its length,
its CRC-32 and the commit id it names, written whole to a temporary file renamed over the
last one (store.kept.keep). A record says only what git said: git's answer to a question is
rebuilt from records only when each file of each commit asked is in them, and a question's
records are kept only when the text rebuilt from them is git's text byte for byte."""
from __future__ import annotations

import contextlib
import os
import re
import threading
from collections.abc import Iterable
from pathlib import Path

from patchforge.store import kept as kept_files
from patchforge.store.diff import diff_header

# A commit's line in `git diff-tree --stdin -p` output (its id alone), or a file's header,
# each after a line end (searched in the text with one put in front: a `(?m)^` is tried at
# every byte, four times slower on a 1.6 MB history).
_COMMIT_OR_FILE = re.compile(rb"\n(?:([0-9a-f]{40})(?=\n)|diff --git )")


def answerable(paths: list[str]) -> bool:
    """Whether git's answer for `paths` is its answer for each path apart put together: no
    path is a pathspec that matches more than its own file in some commit (a glob's `*`, `?`,
    `[`, `\\`; a `:` magic), nor a directory above another asked (a file one commit makes a
    directory: asked with its own files, the path alone matches them too)."""
    if any(path.startswith(":") or any(c in path for c in "*?[\\") for path in paths):
        return False
    above = {path[:at] for path in paths for at in range(len(path)) if path[at] == "/"}
    return above.isdisjoint(paths)


def git_order(paths: Iterable[str]) -> list[str]:
    """`paths` in the order git's recursive diff lists them: by their bytes (the index's
    order, which git's tree order keeps: a directory sorts as its name and `/`)."""
    return sorted(set(paths), key=os.fsencode)


def rebuilt(commits: list[str], paths: list[str], records: dict[str, dict[str, bytes]]
            ) -> bytes | None:
    """`git diff-tree --stdin -p -- PATHS` of `commits` from the records (commit -> path ->
    git's section, b"": none), None when one of the commits' files is not in them: each
    commit with a section, its id on a line and its sections in git's order."""
    order = git_order(paths)
    parts: list[bytes] = []
    for commit in commits:
        record = records.get(commit, {})
        sections = []
        for path in order:
            section = record.get(path)
            if section is None:
                return None
            if section:
                sections.append(section)
        if sections:
            parts.append(commit.encode() + b"\n")
            parts.extend(sections)
    return b"".join(parts)


def split(text: bytes, commits: list[str], paths: list[str]
          ) -> dict[str, dict[str, bytes]] | None:
    """git's `diff-tree --stdin -p -- PATHS` output for `commits` as records (commit -> path
    -> its section, b"" for each path a commit does not change), None when it cannot be told
    apart so (a section that is no asked path's own: a file under an asked path that one
    commit makes a directory, say; a path twice, commits out of order) or the records would
    not give the text back byte for byte. A path's section kept so says the commit changes no
    file under it either (git, asked the path, would have shown it: split gives None)."""
    headers = {diff_header(path): path for path in paths}
    found: dict[str, dict[str, bytes]] = {commit: dict.fromkeys(paths, b"") for commit in commits}
    # Where each line found starts in `text` (a match's start, the line end put in front).
    starts = [(m.start(), m[1]) for m in _COMMIT_OR_FILE.finditer(b"\n" + text)]
    if text and (not starts or starts[0][0] != 0):
        return None
    starts.append((len(text), None))
    at = 0  # the next of `commits` a commit line may name
    record: dict[str, bytes] | None = None
    for (start, commit_id), (end, _) in zip(starts, starts[1:]):
        if commit_id is not None:
            commit = commit_id.decode()
            while at < len(commits) and commits[at] != commit:
                at += 1
            if at == len(commits):
                return None
            record = found[commit]
            at += 1
            continue
        line_end = text.find(b"\n", start, end)
        path = headers.get(text[start:line_end if line_end >= 0 else end])
        if record is None or path is None or record[path]:
            return None
        record[path] = text[start:end]
    if len(set(commits)) != len(commits) or rebuilt(commits, paths, found) != text:
        return None
    return found


class KeptCommitDiffs:
    """The records of `<cache>/kept/commits/`: read, merged with git's new sections, kept,
    and bounded (the AT_MOST most recently used within BYTES_AT_MOST, when the command's
    store closes). One cut short, damaged or naming another commit is read as none (git is
    asked again); a cache that cannot be written keeps nothing and says nothing."""

    AT_MOST = 4096  # a nightly adds tens of commits touching a series' files
    BYTES_AT_MOST = 128 << 20
    DIR = "kept/commits"
    # What the records' reading of git's output is (part of each record's name, with git's
    # arguments): raise it with any change to split/rebuilt or the record's format.
    READING = "commit-diffs-1"

    def __init__(self, cache: Path, args: tuple[str, ...]) -> None:
        """`args`: git's arguments before the paths (`diff-tree --stdin -p ...`)."""
        self.directory = cache / self.DIR
        self._args = (*args, self.READING)
        self._wrote = False
        self._held: dict[str, dict[str, bytes]] = {}  # commit -> its record (record, add)
        self._lock = threading.RLock()  # (a status reads the history on a thread of its own)

    def _name(self, commit: str) -> str:
        return kept_files.answer_name("commit", self._args, (commit.encode(),))

    def record(self, commit: str) -> dict[str, bytes]:
        """The files of `commit` kept so far (path -> git's section, b"": none), marked used:
        read once per command, then held (add() keeps what the command adds)."""
        with self._lock:
            held = self._held.get(commit)
            if held is None:
                held = self._held[commit] = self._read(commit)
            return held

    def _read(self, commit: str) -> dict[str, bytes]:
        try:
            with open(self.directory / self._name(commit), "rb") as f:
                data = f.read()
                with contextlib.suppress(OSError):  # a read-only cache: read, not marked
                    os.utime(f.fileno())
        except OSError:
            return {}
        return _parsed(kept_files.answer_of(data), commit)

    def add(self, commit: str, sections: dict[str, bytes]) -> dict[str, bytes]:
        """`commit`'s record with git's `sections` added, kept (all it holds: two questions
        of one command about the same commit, read on two threads, each add theirs)."""
        with self._lock:
            record = self._held[commit] = {**self.record(commit), **sections}
            parts = [b"commit %s\n" % commit.encode()]
            for path in git_order(record):
                raw = os.fsencode(path)
                parts += [b"%d %d\n" % (len(raw), len(record[path])), raw, record[path]]
            if kept_files.keep(self.directory, self._name(commit),
                               kept_files.answer_parts(parts)):
                self._wrote = True
            return record

    def bound(self) -> None:
        """After a command that kept records: all but the AT_MOST most recently used that fit
        in BYTES_AT_MOST removed (store.kept.bound)."""
        if self._wrote:
            self._wrote = False
            kept_files.bound(self.directory, lambda name: 0,
                             [(self.AT_MOST, self.BYTES_AT_MOST)])


def _parsed(payload: bytes | None, commit: str) -> dict[str, bytes]:
    """A record's files, {} unless `payload` is a whole record of `commit`."""
    head = b"commit %s\n" % commit.encode()
    if payload is None or not payload.startswith(head):
        return {}
    record: dict[str, bytes] = {}
    at = len(head)
    while at < len(payload):
        line_end = payload.find(b"\n", at)
        sizes = payload[at:line_end].split(b" ") if line_end >= 0 else []
        if len(sizes) != 2 or not all(size.isdigit() for size in sizes):
            return {}
        name_end = line_end + 1 + int(sizes[0])
        end = name_end + int(sizes[1])
        if end > len(payload):
            return {}
        record[os.fsdecode(payload[line_end + 1:name_end])] = payload[name_end:end]
        at = end
    return record
