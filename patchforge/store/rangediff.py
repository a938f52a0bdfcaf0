"""`git range-diff` of two commit chains made while a rebase runs, in a scratch repository that
borrows the store's objects (`RangeDiffImport`)."""
from __future__ import annotations

import bisect
import itertools
import mmap
import os
import re
import struct
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from patchforge import tempfiles
from patchforge.errors import StoreError
from patchforge.patterns import on_first_use
from patchforge.store.diff import _GitHunks, is_binary, quote_c_path
from patchforge.store.git import IMPORT_IDENT, start_git
from patchforge.store.objects import (DELTA_BASE_LIMIT, TREE_MODE, DeltaEntry, git_delta,
                                      object_id, stored_parts, write_parts_pack)

if TYPE_CHECKING:
    from patchforge.store.gitstore import UpstreamStore


def quote_fastimport(raw: bytes) -> bytes:
    # fast-import takes a path as is unless it starts with '"' or holds LF; quote C-style then.
    if not raw.startswith(b'"') and b"\n" not in raw:
        return raw
    return quote_c_path(raw, quote_high=False)


# A tree or commit made for a chain: (its kind, its raw bytes), its pack entry made from them
# only when a pack is written.
_Raw = tuple[bytes, bytes]


class _Trees:
    """A tree of files (path -> blob id) changed a few paths at a time: after each change only
    the directories on the changed paths are made again, in git's tree format (as
    objects.tree_bytes: entries sorted by name, a directory's as if it ended in '/'), each
    from its own entries (a child directory's entry holds the child's last id, so an unchanged
    subtree is never visited) in the order each directory keeps (a name is put in its place
    when it comes, not the whole directory sorted again for every commit). New trees go into
    `objects` (id -> (b"tree", its raw bytes): _Raw, packed only if a pack is written)."""

    def __init__(self, objects: dict[str, _Raw]) -> None:
        self.objects = objects
        # directory ("" or "a/b/") -> sort key -> raw entry, for its files and (as "name/")
        # its non-empty subdirectories; and the directory's sort keys, in order
        self.entries: dict[bytes, dict[bytes, bytes]] = {b"": {}}
        self.order: dict[bytes, list[bytes]] = {b"": []}
        self.ids: dict[bytes, str | None] = {}  # directory -> its tree id, None when empty
        self.dirty: set[bytes] = set()  # directories whose id must be made again

    def _put(self, directory: bytes, key: bytes, raw: bytes) -> None:
        entries = self.entries[directory]
        if key not in entries:
            bisect.insort(self.order[directory], key)
        entries[key] = raw

    def _drop(self, directory: bytes, key: bytes) -> None:
        if self.entries[directory].pop(key, None) is not None:
            self.order[directory].remove(key)

    def set(self, path: bytes, oid: str | None) -> None:
        """Put blob `oid` at `path` (None: remove it)."""
        directory, _, name = path.rpartition(b"/")
        parent = b""
        self.dirty.add(parent)
        for part in directory.split(b"/") if directory else ():
            parent += part + b"/"
            if parent not in self.entries:
                self.entries[parent], self.order[parent] = {}, []
            self.dirty.add(parent)
        if oid is None:
            self._drop(parent, name)
        else:
            self._put(parent, name, b"100644 %s\0" % name + bytes.fromhex(oid))

    def root(self) -> str:
        """The id of the whole tree (empty directories left out, as git does)."""
        # The deepest first: each directory's id goes into its parent's entries.
        for directory in sorted(self.dirty, key=lambda d: d.count(b"/"), reverse=True):
            order = self.order[directory]
            oid = None
            if order:
                raw = b"".join(map(self.entries[directory].__getitem__, order))
                oid = object_id(b"tree", raw)
                self.objects[oid] = (b"tree", raw)
            self.ids[directory] = oid
            if directory:
                parent, _, name = directory[:-1].rpartition(b"/")
                parent = parent + b"/" if parent else b""
                if oid is None:
                    self._drop(parent, name + b"/")
                else:
                    self._put(parent, name + b"/", b"%s %s\0" % (_TREE_MODE, name)
                              + bytes.fromhex(oid))
        self.dirty.clear()
        return self.ids.get(b"") or object_id(b"tree", b"")


_TREE_MODE = TREE_MODE.encode()


class RangeDiffImport:
    """`git range-diff` of two commit chains: file contents handed over while the caller works
    (blob()), then the two chains (range_diff()). It runs in a scratch repository that borrows
    the store's objects (alternates): the cache's own (`_take_kept`, emptied when the run
    ends), else one made in the temporary directory and removed afterwards. A report must not
    leave a pack and refs in the store on every run (hundreds of packs slow every later git
    process).

    Every object of the chains (contents, trees, commits: the ones `git fast-import` made
    before, id for id) is made here and written as one pack (objects.write_parts_pack: stored,
    not compressed, the contents not copied into it, an index without CRCs; the pack lives for
    one command), so `git range-diff` is the one git process. Streaming the contents through
    fast-import cost git more than the rest of the range-diff: it hashes each byte twice
    (object and pack) with its collision-detecting SHA-1, and set up zlib again for each of
    thousands of small trees. A content handed over with how it was made from another one
    (blob(made_from=): the hunks a walk placed on the bytes) is packed as git's delta of
    that one when it is in the pack too: the bases' contents come first, then the contents in
    the order handed over, so a base is always written before what is made from it, and a
    series' contents (half the pack) are neither checksummed nor written but as their
    edits. A content is hashed when it is handed over, on the caller's thread: range_diff()
    runs on a second thread, where each call that lets go of the GIL waits to get it back
    from the busy first one. close() (also done by range_diff()) empties or removes the
    repository; a caller that stops early must call it.
    """

    def __init__(self, store: "UpstreamStore") -> None:
        self._store = store
        self._tmp: Path | None = None
        self._blobs: list[str] = []  # the contents' ids by mark (mark n is _blobs[n - 1])
        # id -> (content, (the content it was made from, its edits) or None), in the order
        # handed over
        self._contents: dict[str, tuple[bytes, tuple | None]] = {}
        self._base_contents: dict[str, bytes] = {}  # the chains' bases' contents, by id
        # Trees and commits: id -> (kind, raw bytes), made pack entries (stored_parts) only when
        # a pack is written: a text written without git (_written_text) needs their ids alone.
        self._objects: dict[str, _Raw] = {}
        # id(content) -> (content, its blob id), for contents handed over more than once: a
        # patch that meets its files as the old series had them gives the new chain the very
        # bytes object the old chain got (the walk's applications are shared), so it is not
        # hashed again. The content is kept with its id, so no other object can take that id.
        self._known: dict[int, tuple[bytes, str]] = {}
        # Per chain made: (its first commit, each later commit as made), for _stand_ins.
        self._made: list[tuple[str, list[_Made]]] = []
        self._closed = False
        self._proc: subprocess.Popen | None = None  # git range-diff, once started
        # The range-diff's text when it is written here (_written_text), not by git
        self._text: bytes | None = None
        # A text written here once git's diffs show its pairs exact (_start_proofs)
        self._proof: tuple | None = None
        self._ranges: list[str] = []  # the two chains' ranges, for git
        # New commits whose pair git's diffs showed exact though their contents differ
        self._proven: frozenset[str] = frozenset()
        # git's range-diff of the changed pairs alone, under way (_Changed.start)
        self._changed: _ChangedRun | None = None
        # The descriptor holding the lock of the cache's kept repository, when this run has it
        self._kept_lock: int | None = None
        try:
            kept = _take_kept(store)
            if kept is not None:
                self._tmp, self._kept_lock = kept
            else:
                # In the temporary directory (TMPDIR), not scratch_dir's tmpfs: a run killed
                # before the end leaves the repository behind, and a pack of a long series
                # (17 MB at 300 patches) would hold that much memory until the machine
                # restarts.
                self._tmp = Path(tempfiles.make_temp_dir("patchforge-rangediff-"))
                _make_repository(self._tmp, store)
            self._scratch = self._tmp
        except (OSError, StoreError) as exc:
            self.close()
            raise StoreError(f"cannot make the range-diff's scratch repository: {exc}") from exc
        except BaseException:
            self.close()
            raise

    def blob(self, data: bytes, made_from: tuple | None = None) -> int:
        """Hand over one file content; returns its mark, for range_diff()'s chains.
        `made_from`: (another content, the edits that make this one of it), as
        apply.hunks.PatchApplications.made_from says."""
        if self._closed:
            raise StoreError("the range-diff import is closed")
        self._keep(data, made_from)
        return len(self._blobs)

    def _keep(self, data: bytes, made_from: tuple | None = None) -> str:
        """The content's id (hashed here, on the caller's thread, where the few GIL-releasing
        calls per content cost nothing); it goes into the pack."""
        known = self._known.get(id(data))
        if known is not None and known[0] is data:
            self._blobs.append(known[1])
            return known[1]
        oid = object_id(b"blob", data)
        self._known[id(data)] = (data, oid)
        if oid not in self._contents:
            self._contents[oid] = (data, made_from)
        self._blobs.append(oid)
        return oid

    def _pack_entries(self) -> dict[str, tuple | DeltaEntry]:
        """Every object of the pack, in the order written: the bases' contents, the contents
        handed over (a delta of the content it was made from when that one comes before it),
        the trees and commits."""
        entries: dict[str, tuple | DeltaEntry] = {}
        placed: dict[int, str] = {}  # id(content) -> its id, for those in `entries`
        for oid, data in self._base_contents.items():
            entries[oid] = stored_parts(b"blob", data)
            placed[id(data)] = oid
        for oid, (data, made_from) in self._contents.items():
            if oid in entries:  # the same as a base's content, or as one before
                placed[id(data)] = oid
                continue
            base = placed.get(id(made_from[0])) if made_from is not None else None
            if made_from is not None and base is not None and \
                    len(made_from[0]) <= DELTA_BASE_LIMIT:
                source, edits = made_from
                entries[oid] = DeltaEntry(base, git_delta(len(source), len(data), edits))
            else:
                entries[oid] = stored_parts(b"blob", data)
            placed[id(data)] = oid
        for oid, (kind, raw) in self._objects.items():
            if oid not in entries:
                entries[oid] = stored_parts(kind, raw)
        return entries

    def range_diff(self, chains: list[tuple[str, list[str], list]]) -> bytes:
        """`git range-diff` of two chains, each (base commit, paths, steps): a root commit holding
        the base's versions of `paths`, then a commit per step (name, {path: content}), where a
        content is bytes, a blob() mark, a blob id in the store (str), or None for a deleted
        file. Every file has mode 100644. Closes the import."""
        return self.start(chains).result()

    def start(self, chains: list[tuple[str, list[str], list]], *,
              made_hunks: dict | None = None, moved_exactly: frozenset[str] = frozenset(),
              ask: Callable[[list[tuple[str, bytes, bytes]]], None] | None = None
              ) -> RangeDiffRun:
        """range_diff() begun: the objects written and `git range-diff` started, its output
        going to a file of the scratch repository (a pipe nobody reads while the caller works
        would stop git once full); the RangeDiffRun's result() waits for it. The caller goes on
        (git runs on another core) and must end it: result(), or close() (which ends git).

        When git's text is known without it (_written_text), nothing is written and no git
        process started. `moved_exactly` names the new chain's patches that moved with their
        hunks as they were (context included, at other lines perhaps), `made_hunks` is where
        the caller puts, before result(), git's hunks of the pairs of contents it diffed
        ((old blob id, new blob id) -> hunks, store.diff.StartedDiffs.hunks_by_ids): a pair
        of such a patch and its old commit is shown to be exact by git's own diffs of both
        (RangeDiffImport._start_proofs); git's range-diff is started only if it is not. `ask`:
        where the old pairs of contents to diff ((path, old, new)) are handed, for the caller's
        own diffs to put their hunks in `made_hunks` too; without it they are diffed here."""
        try:
            ranges = [self.chain(*one) for one in chains]
            assert self._tmp is not None, "made in __init__"
            proofs: list = []
            if len(self._made) == 2:
                known = _written_text(
                    self._made, set(self._base_contents).union(self._contents, self._objects),
                    self._store.git_dir, moved_exactly if made_hunks is not None else None)
                if isinstance(known, bytes):  # no pack, no git process
                    self._text = known
                    self._contents, self._base_contents, self._objects = {}, {}, {}
                    self._made = []
                    return RangeDiffRun(self)
                if known is not None and not any(
                        is_binary(self._content(oid)) for pair in known[1] for step in pair
                        for change in step.changes.values() for oid in change
                        if oid is not None):
                    proofs = self._start_proofs(*known, made_hunks, ask)
            self._ranges = [f"{a}..{b}" for a, b in ranges]
            if not proofs:
                self._start_git()
        except BaseException:
            self.close()
            raise
        return RangeDiffRun(self)

    def _start_git(self) -> None:
        """The pack of every object made (with the stand-ins') written, and `git range-diff`
        started."""
        assert self._tmp is not None
        try:
            entries = self._pack_entries()
            stand_ins = _stand_ins(self._made, len(entries), self._store.git_dir,
                                   self._proven) if len(self._made) == 2 else {}
            for commit, (oid, parts, merge, merge_parts) in stand_ins.items():
                entries[merge], entries[oid] = merge_parts, parts
            write_parts_pack(self._scratch, entries)
            del entries
            self._contents, self._base_contents, self._objects = {}, {}, {}
            self._made = []
            if stand_ins:
                # One file of refs; "sorted" lets git read it without sorting it again.
                (self._scratch / "packed-refs").write_bytes(
                    b"# pack-refs with: peeled fully-peeled sorted \n" + b"".join(
                        b"%s refs/replace/%s\n" % (stand_ins[commit][0].encode(),
                                                     commit.encode())
                        for commit in sorted(stand_ins)))
            with open(self._tmp / "out", "wb") as out, open(self._tmp / "err", "wb") as err:
                self._proc = start_git(
                    "range-diff", "--no-color", *self._ranges, git_dir=self._scratch,
                    stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                    replace_objects=bool(stand_ins))
        except OSError as exc:
            raise StoreError(f"cannot start the range-diff: {exc}") from exc

    def _start_proofs(self, lines: list[str], pairs: list, where: dict[str, int],
                      made_hunks: dict | None,
                      ask: Callable[[list[tuple[str, bytes, bytes]]], None] | None) -> list:
        """The diffs that show the pairs `pairs` ((old commit, new commit) of _written_text)
        exact started: git's hunks of each old commit's files (handed to `ask`, or one `git
        diff --no-index` beside the caller's work), the new ones' to come from `made_hunks`.
        Kept for RangeDiffRun.result() with the text they make true."""
        olds = [(path, self._content(before), self._content(after)) for old, _ in pairs
                for path in sorted(old.changes) for before, after in (old.changes[path],)
                if before is not None and after is not None]
        if ask is not None and made_hunks is not None:
            ask(olds)
            self._proof = (lines, pairs, where, made_hunks, None)
            return pairs
        try:
            self._proof = (lines, pairs, where, made_hunks,
                           _GitHunks([(old, new) for _, old, new in olds]))
        except (OSError, StoreError):  # git's range-diff says it all the same
            return []
        return pairs

    def _content(self, oid: str) -> bytes:
        found = self._contents.get(oid)
        return found[0] if found is not None else self._base_contents[oid]

    def _proved(self) -> bytes | None:
        """The written text when git's diffs show every pair of _start_proofs exact; None
        when not: the pairs shown exact standing in (_stand_ins), git's range-diff of the
        whole chains started then, or, where the pairs left are ones git must show changed
        ('!') and pairs whatever its other costs (_Changed), git's range-diff of those pairs
        alone."""
        assert self._proof is not None
        lines, pairs, where, made_hunks, olds = self._proof
        self._proof = None
        hunks = olds.result() if olds is not None else None
        at, proven = 0, set()
        changed = []  # (old commit, new commit, {path: (old hunks, new hunks)}) not exact
        for old, new in pairs:
            same = True
            both = {}
            for path in sorted(old.changes):
                new_hunks = made_hunks.get(new.changes[path]) if made_hunks is not None else None
                old_hunks = hunks[at] if hunks is not None else \
                    made_hunks.get(old.changes[path]) if made_hunks is not None else None
                same = same and new_hunks is not None and old_hunks is not None and \
                    _same_text(old_hunks, new_hunks)
                both[path] = (old_hunks, new_hunks)
                at += 1
            if same:
                proven.add(new.commit)
            else:
                changed.append((old, new, both))
        if not changed:
            self._text = "".join(lines).encode()
            return self._text
        self._proven = frozenset(proven)
        decided = _Changed.decide(self._made, changed, self._content)
        if decided is not None:
            try:
                self._changed = decided.start(self._scratch, self._content, lines, where)
                return None
            except (OSError, StoreError):
                self._changed = None
                _empty_kept(self._scratch)
        self._start_git()
        return None

    def settle(self) -> None:
        """Decide now whether the text of _start_proofs holds (git's range-diff started when
        it does not), once the caller's `made_hunks` are in: git then runs beside the rest of
        the caller's work instead of after it."""
        if self._proof is not None and not self._closed:
            try:
                self._proved()
            except OSError as exc:
                raise StoreError(f"cannot start the range-diff: {exc}") from exc

    def chain(self, base: str, paths: list[str], steps: list) -> tuple[str, str]:
        """The commits of one chain (see range_diff), made as `git fast-import` makes them from a
        branch reset, then a commit per step given only a committer and its `M`/`D` lines:
        (the first commit, the last). Its objects wait for range_diff()'s pack."""
        if self._closed:
            raise StoreError("the range-diff import is closed")
        ident = "%s <%s> %s" % IMPORT_IDENT
        base_files = {p: found[1] for p, found in self._store.entries(base, paths).items()
                      if found is not None}
        # The base's contents go into the pack too (the walk read them: the store has them):
        # read from the store, most are deltas in a compressed pack, and git range-diff spent a
        # third of its time undoing those (177 -> 124 ms for a 300-patch series).
        self._base_contents.update(self._store.blobs_by_id(list(base_files.values())))
        trees = _Trees(self._objects)
        first = parent = None
        now: dict[str, str] = {}  # path -> its blob id in the commit last made
        made: list[_Made] = []
        for name, files in [("base", base_files), *steps]:
            changes: dict[str, tuple[str | None, str | None]] = {}
            for path, content in files.items():
                if isinstance(content, bytes):  # inline (a chain from the patch files)
                    oid = self._keep(content)
                elif isinstance(content, int):
                    oid = self._blobs[content - 1]
                else:
                    oid = content
                trees.set(path.encode("utf-8", "surrogateescape"), oid)
                was = now.pop(path, None)
                if oid is not None:
                    now[path] = oid
                if was != oid:
                    changes[path] = (was, oid)
            tree = trees.root()
            raw = (f"tree {tree}\n" + (f"parent {parent}\n" if parent else "")
                   + f"author {ident}\ncommitter {ident}\n\n").encode() \
                + f"{name}\n".encode("utf-8", "surrogateescape")
            commit = object_id(b"commit", raw)
            self._objects[commit] = (b"commit", raw)
            if parent is not None:
                made.append(_Made(name, commit, parent, tree, raw, changes))
            first, parent = first or commit, commit
        assert first is not None and parent is not None  # the base commit at least
        self._made.append((first, made))
        return first, parent

    def close(self) -> None:
        """End the import: a range-diff still running is ended, the scratch repository
        removed."""
        self._closed = True
        self._blobs, self._objects, self._known, self._made = [], {}, {}, []
        self._contents, self._base_contents = {}, {}
        if self._proc is not None and self._proc.returncode is None:
            self._proc.kill()
            self._proc.wait()
        if self._changed is not None:
            self._changed.close()
            self._changed = None
        if self._proof is not None:
            if self._proof[4] is not None:  # the old pairs' own diff process
                self._proof[4].close()
            self._proof = None
        if self._kept_lock is not None:  # the cache's: emptied and left (once)
            assert self._tmp is not None
            _empty_kept(self._tmp)
            os.close(self._kept_lock)  # (the lock goes with it)
            self._kept_lock = None
        elif self._tmp is not None and self._tmp.name != KEPT_REPOSITORY:
            tempfiles.remove_tree(self._tmp, ignore_errors=True)


# The range-diff's repository kept in the cache, beside the store (`_take_kept`).
KEPT_REPOSITORY = "rangediff.git"
_HEAD = b"ref: refs/heads/master\n"
_CONFIG = b"[core]\n\trepositoryformatversion = 0\n\tbare = true\n"
# What a run writes into the kept repository, besides its pack: removed when it ends (and
# when the next run takes the repository, after a kill).
_RUN_FILES = ("packed-refs", "out", "err")


def _make_repository(path: Path, store: "UpstreamStore") -> None:
    """A bare repository at the existing directory `path` whose objects are its own pack's
    and the store's (alternates): `git init --bare` without its templates, made here (a git
    process less before the walk)."""
    for directory in ("objects/info", "objects/pack", "refs"):
        (path / directory).mkdir(parents=True)
    (path / "HEAD").write_bytes(_HEAD)
    (path / "config").write_bytes(_CONFIG)
    (path / "objects" / "info" / "alternates").write_bytes(_alternates(store))


def _alternates(store: "UpstreamStore") -> bytes:
    return os.fsencode((store.git_dir / "objects").resolve()) + b"\n"


def _take_kept(store: "UpstreamStore") -> tuple[Path, int] | None:
    """The cache's range-diff repository (made once, beside the store), locked for this run
    and emptied of what a killed run left in it: (its path, the descriptor holding its lock).
    None when it cannot be had: another run holds it, the cache is read-only, or it is not
    as it was made; the caller makes a repository of its own in the temporary directory.

    A repository made and removed per run cost its eight directories each time: on a file
    system that discards freed blocks at once (ext4 mounted `discard`, as cloud disks often
    are), removing a directory waited 0.1-4 ms for the disk, most of a rebase's wait after
    its range-diff; a file written and removed within seconds has no block to free."""
    import fcntl

    path = store.git_dir.parent / KEPT_REPOSITORY
    try:
        if os.path.islink(path):
            return None
        if not os.path.isdir(path):
            made = Path(tempfiles.make_temp_dir(f".{KEPT_REPOSITORY}.", store.git_dir.parent))
            try:
                _make_repository(made, store)
                os.rename(made, path)  # whole, or not at all (another run made it first)
            except OSError:
                tempfiles.remove_tree(made, ignore_errors=True)
        fd = os.open(path / "lock", os.O_CREAT | os.O_RDWR | os.O_CLOEXEC | os.O_NOFOLLOW,
                     0o644)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        # Only a repository as it was made is used: its configuration, its HEAD, its
        # alternates, no ref and no object but the packs a run leaves. (Its refs/replace/
        # would change what git compares; an object of its own, the ids' abbreviation.)
        for name, wanted in (("HEAD", _HEAD), ("config", _CONFIG),
                             ("objects/info/alternates", _alternates(store))):
            with open(path / name, "rb") as f:
                if f.read(len(wanted) + 1) != wanted:
                    raise OSError(f"{path / name} is not as made")
        if os.listdir(path / "refs") or sorted(os.listdir(path / "objects")) != \
                ["info", "pack"] or os.listdir(path / "objects" / "info") != ["alternates"]:
            raise OSError(f"{path} holds more than it was made with")
        _empty_kept(path, strict=True)
    except OSError:
        os.close(fd)
        return None
    return path, fd


def _empty_kept(path: Path, *, strict: bool = False) -> None:
    """Remove what a run wrote into the kept repository `path`: its pack and the files of
    _RUN_FILES. `strict`: an entry that cannot go is an OSError."""
    pack = path / "objects" / "pack"
    try:
        names = [pack / name for name in os.listdir(pack)]
    except OSError:
        if strict:
            raise
        names = []
    for name in names + [path / name for name in _RUN_FILES]:
        try:
            os.unlink(name)
        except FileNotFoundError:
            pass
        except OSError:
            if strict:
                raise


class RangeDiffRun:
    """A `git range-diff` under way (RangeDiffImport.start): result() waits for its text."""

    def __init__(self, importer: RangeDiffImport) -> None:
        self._importer = importer

    def result(self) -> bytes:
        """The range-diff's text; a StoreError when git failed. Closes the import."""
        importer = self._importer
        try:
            if importer._proof is not None and not importer._closed:
                importer._proved()
            if importer._changed is not None and not importer._closed:
                importer._text = importer._changed.result()
                importer._changed = None
                if importer._text is None:  # git paired them otherwise: its whole range-diff
                    _empty_kept(importer._scratch, strict=True)
                    importer._start_git()
            if importer._text is not None and not importer._closed:
                return importer._text
            if importer._closed or importer._proc is None or importer._tmp is None:
                raise StoreError("the range-diff import is closed")
            importer._proc.wait()
            if importer._proc.returncode != 0:
                err = (importer._tmp / "err").read_bytes().decode("utf-8", "replace").strip()
                raise StoreError(f"git range-diff failed: "
                                 f"{err or 'exit ' + str(importer._proc.returncode)}")
            return (importer._tmp / "out").read_bytes()
        except OSError as exc:
            raise StoreError(f"cannot read the range-diff: {exc}") from exc
        finally:
            importer.close()

    def settle(self) -> None:
        """RangeDiffImport.settle; a StoreError when git's range-diff cannot start."""
        self._importer.settle()

    def close(self) -> None:
        self._importer.close()


class _Made:
    """A commit of a chain after its first, as RangeDiffImport.chain made it (_stand_ins).
    (A plain class: a NamedTuple's is made by exec at import, a command's tenth of a ms.)"""
    __slots__ = ("name", "commit", "parent", "tree", "raw", "changes")

    def __init__(self, name: str, commit: str, parent: str, tree: str, raw: bytes,
                 changes: dict[str, tuple[str | None, str | None]]) -> None:
        self.name, self.commit, self.parent, self.tree = name, commit, parent, tree
        self.raw = raw  # the commit object
        self.changes = changes  # path -> its blob id before, after


def _stand_ins(made: list[tuple[str, list[_Made]]], pack_count: int,
               store_git_dir: Path, proven: frozenset[str] = frozenset()
               ) -> dict[str, tuple[str, tuple, str, tuple]]:
    """Stand-ins for the commits of a pair `git range-diff` will find identical, so that it
    diffs only what differs: commit id -> (its stand-in's id, its pack entry, the stand-in's
    parent's id, its entry), for refs/replace/ of the scratch repository; {} when nothing
    may stand in.

    A patch whose commit changes the same paths from the same blobs to the same blobs in both
    chains, under the same name, gives `git range-diff` the same text twice: an exact pair,
    printed as "N: id = M: id name" with no diff. git still diffed both commits' files whole
    for it (its two `git log -p`: every line of both sides hashed). Each of the two commits is
    replaced by a commit with its tree and message whose parent is a merge with that same tree
    (its other parent the chain's first commit, outside the range): `--no-merges` leaves the
    merge out, and the commit's diff is empty. The pair stays exact (both texts are its name
    alone), every other text is the same (each chain's names are one per commit, even with
    their whitespace taken out, and a commit after a stand-in diffs against its own tree), and
    the output names each commit by its own id, with its own message. The abbreviated ids
    must not change either: no stand-in's id begins as a chain commit's does (7 hex digits,
    git's shortest), and the object count git takes the length from (the packs' entries: the
    scratch pack's and the store's) stays between the same two powers of four, else nothing
    stands in.
    A git that ignored refs/replace/ would read the real commits, which stay in the pack.
    `proven`: new commits whose pair git's own diffs of both showed exact though their
    contents differ (RangeDiffImport._proved): they stand in too."""
    (old_first, old), (new_first, new) = made
    keys = [[b"".join(step.name.encode("utf-8", "surrogateescape").split()) for step in side]
            for side in (old, new)]
    if any(len(set(side)) != len(side) for side in keys):
        return {}
    olds = dict(zip(keys[0], old))
    # (A chain's first patch is left as it is: its stand-in's merge would have one parent
    # twice.)
    pairs = [(olds[key], step) for key, step in zip(keys[1], new)
             if key in olds and olds[key].name == step.name and step.changes
             and (olds[key].changes == step.changes or step.commit in proven)
             and olds[key].parent != old_first and step.parent != new_first]
    count = _pack_objects(store_git_dir)
    if not pairs or count is None or _abbreviation_length(count + pack_count) != \
            _abbreviation_length(count + pack_count + 4 * len(pairs)):
        return {}
    ident = ("%s <%s> %s" % IMPORT_IDENT).encode()
    printed = {oid[:7] for first, side in made for oid in (first, *(s.commit for s in side))}
    stand_ins: dict[str, tuple[str, tuple, str, tuple]] = {}
    for first, step in [(old_first, a) for a, _ in pairs] + [(new_first, b) for _, b in pairs]:
        for nonce in itertools.count():
            merge_raw = b"tree %s\nparent %s\nparent %s\nauthor %s\ncommitter %s\n\n%d\n" % (
                step.tree.encode(), step.parent.encode(), first.encode(), ident, ident, nonce)
            merge = object_id(b"commit", merge_raw)
            raw = step.raw.replace(b"\nparent %s\n" % step.parent.encode(),
                                   b"\nparent %s\n" % merge.encode(), 1)
            oid = object_id(b"commit", raw)
            if merge[:7] not in printed and oid[:7] not in printed:
                break
        stand_ins[step.commit] = (oid, stored_parts(b"commit", raw), merge,
                                  stored_parts(b"commit", merge_raw))
    return stand_ins


def _abbreviation_length(count: int) -> int:
    """The length git abbreviates ids to in a repository of `count` objects (its
    find_unique_abbrev: half the count's bits, rounded up; 7 at least), before it lengthens
    one that another object's id begins as."""
    return max(7, (count.bit_length() + 1) // 2)


def _pack_indexes(git_dir: Path) -> list[str] | None:
    """The paths of the pack indexes of `git_dir` whose pack is there; None where git counts
    other entries too (a multi-pack index, alternates of its own). OSError when the pack
    directory cannot be read."""
    objects = os.path.join(git_dir, "objects")
    pack_dir = os.path.join(objects, "pack")
    names = set(os.listdir(pack_dir))
    if "multi-pack-index" in names or os.path.exists(os.path.join(objects, "info", "alternates")):
        return None
    return [os.path.join(pack_dir, name) for name in names
            if name.endswith(".idx") and name[:-4] + ".pack" in names]


def _pack_objects(git_dir: Path) -> int | None:
    """How many entries the packs of `git_dir` hold, as git counts them for the abbreviated
    ids' length (each index's count); None where another count could apply (a multi-pack
    index, alternates of its own) or an index cannot be read."""
    count = 0
    try:
        indexes = _pack_indexes(git_dir)
        if indexes is None:
            return None
        for path in indexes:
            with open(path, "rb") as f:
                head = f.read(1032)
            # version 2 starts "\377tOc", version 1 with its fan-out table (whose last of 256
            # entries is the count)
            at = 1028 if head.startswith(b"\xfftOc") else 1020
            if len(head) < at + 4:
                return None
            count += int.from_bytes(head[at:at + 4], "big")
    except OSError:
        return None
    return count


def _written_text(made: list[tuple[str, list[_Made]]], objects: set[str],
                  store_git_dir: Path, moved_exactly: frozenset[str] | None = None
                  ) -> bytes | tuple[list[str], list[tuple[_Made, _Made]], dict[str, int]] | None:
    """`git range-diff`'s text of the two chains `made`, written here without git, when git's
    is known without reading the commits; None when it is not (git's range-diff is run then).

    It is known when every commit of the new chain has a commit of the old chain under its
    name that changes the same files from the same contents to the same contents: git's text
    of the two is the same (the same name, author and diffs), so git pairs them exactly
    ("N: id = M: id name") before it weighs any other pairing, and with no commit of the new
    chain left over, each old commit not paired is left out ("N: id < -: ------- name")
    whatever its diff (git's other pairings are only of commits not paired exactly on both
    sides). Names must be one per chain even with their whitespace taken out (git's text of
    a commit may differ from another's in whitespace alone), and printable ASCII without
    spaces around them (git prints a commit's subject line). The lines come in git's order:
    the new chain's, each old commit left out placed once every old commit before it was
    printed. The ids are abbreviated as git abbreviates them in the scratch repository (its
    pack of `objects` and the store's objects): to the length its object count sets, which
    git lengthens only for an id another object's begins as; when any object's id begins as
    a printed one at that length, git is left to say how long.

    A patch of `moved_exactly` whose files are the old commit's, each changed in both (not
    made, not deleted), may differ in contents: the text is returned as its lines with those
    pairs, (the old commit, the new one), and each new commit's line, for git's diffs to show
    them exact (RangeDiffImport._start_proofs) or the pairs git shows changed ('!') to be
    decided (_Changed)."""
    (_, old), (_, new) = made
    if not old or not new:
        return None
    names = [step.name for step in old], [step.name for step in new]
    for side in names:
        if len({"".join(name.split()) for name in side}) != len(side):
            return None
        for name in side:
            if not name or not name.isascii() or not name.isprintable() or name != name.strip():
                return None
    olds = {step.name: at for at, step in enumerate(old)}
    partner = []  # per new commit, the old one git pairs it with exactly
    unproved = []
    for step in new:
        at = olds.get(step.name)
        if at is None:
            return None
        if old[at].changes != step.changes:
            if moved_exactly is None or step.name not in moved_exactly or \
                    set(old[at].changes) != set(step.changes) or \
                    not all(None not in pair for changes in (old[at].changes, step.changes)
                            for pair in changes.values()):
                return None
            unproved.append((old[at], step))
        partner.append(at)
    store = _store_ids(store_git_dir)
    if store is None:
        return None
    length = _abbreviation_length(store[0] + len(objects))
    printed = [step.commit for step in old] + [step.commit for step in new]
    try:
        if not _unique_at(printed, length, objects, store[1], store_git_dir):
            return None
    finally:
        _close_all(store[1])
    width = len(str(1 + max(len(old), len(new))))
    paired = {at: j for j, at in enumerate(partner)}
    shown = [False] * len(old)
    dashes = "-" * length
    lines = []
    where: dict[str, int] = {}  # a new commit -> the index of its line
    i = j = 0
    # git's range-diff.c output(): the new chain's order, each old commit left out printed
    # once all the old commits before it were
    while i < len(old) or j < len(new):
        while i < len(old) and shown[i]:
            i += 1
        if i < len(old) and i not in paired:
            lines.append(f"{i + 1:>{width}}:  {old[i].commit[:length]} < "
                         f"{'-':>{width}}:  {dashes} {old[i].name}\n")
            i += 1
            continue
        if j < len(new):
            at = partner[j]
            where[new[j].commit] = len(lines)
            lines.append(f"{at + 1:>{width}}:  {old[at].commit[:length]} = "
                         f"{j + 1:>{width}}:  {new[j].commit[:length]} {new[j].name}\n")
            shown[at] = True
            j += 1
    if unproved:
        # each unproved pair's line, for a '!' and its diff to take its place (_Changed)
        return lines, unproved, where
    return "".join(lines).encode()


# A hunk's header up to its second "@@": what `git range-diff` takes out of each hunk header
# (the line numbers), keeping the function line after it.
_HUNK_LINES = re.compile(rb"(?m)^@@ -[0-9,]+ \+[0-9,]+ @@")


def _same_text(old: bytes, new: bytes) -> bool:
    """Whether git's hunks of two pairs of contents of one path are the same text for `git
    range-diff` (which reads a patch's hunks with their headers' line numbers taken out)."""
    return old.startswith(b"@@") and new.startswith(b"@@") and \
        _HUNK_LINES.sub(b"@@", old) == _HUNK_LINES.sub(b"@@", new)


def _store_ids(git_dir: Path) -> tuple[int, list[tuple[tuple[int, ...], mmap.mmap]]] | None:
    """(how many entries the packs of `git_dir` hold, as _pack_objects counts them; per pack
    its index's 256 counts by first byte, the ids up to it, and the index mapped, to look ids
    up in), or None where _pack_objects would say None (or an index is not version 2). The
    indexes are mapped, not read: a long history's store has one of megabytes, of
    which a few pages are looked at. The caller closes the maps."""
    count = 0
    tables: list[tuple[tuple[int, ...], mmap.mmap]] = []
    try:
        indexes = _pack_indexes(git_dir)
        if indexes is None:
            return None
        for path in indexes:
            with open(path, "rb") as f:
                size = os.fstat(f.fileno()).st_size
                index = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) if size >= 1032 \
                    else None
            if index is None or index[:8] != b"\xfftOc\0\0\0\2":
                _close_all(tables, index)
                return None
            fanout = struct.unpack_from(">256I", index, 8)
            tables.append((fanout, index))
            if size < 1032 + 20 * fanout[255]:
                _close_all(tables)
                return None
            count += fanout[255]
    except (OSError, ValueError):
        _close_all(tables)
        return None
    return count, tables


def _close_all(tables: list, *more) -> None:
    for index in [index for _, index in tables] + [m for m in more if m is not None]:
        index.close()


def _unique_at(printed: list[str], length: int, objects: set[str],
               tables: list[tuple[tuple[int, ...], mmap.mmap]], store_git_dir: Path) -> bool:
    """Whether no object but itself has an id that begins as each of `printed` does to
    `length` hex digits: the scratch pack's `objects`, the store's packs (`tables`, as
    _store_ids maps them: version 2 indexes, 256 counts by first byte, then the ids sorted)
    and loose objects. In a pack the ids next to where the id sorts are the ones that share
    most of it (git's find_unique_abbrev looks at those two)."""
    begins: dict[str, int] = {}
    for oid in objects:
        begins[oid[:length]] = begins.get(oid[:length], 0) + 1
    loose: dict[str, list[str]] = {}
    for oid in printed:
        prefix = oid[:length]
        if begins.get(prefix) != 1:
            return False
        raw = bytes.fromhex(oid)
        first = raw[0]
        for fanout, index in tables:
            low, high = fanout[first - 1] if first else 0, fanout[first]
            while low < high:  # where raw sorts among the ids of its first byte
                middle = (low + high) // 2
                if index[1032 + 20 * middle:1052 + 20 * middle] < raw:
                    low = middle + 1
                else:
                    high = middle
            bucket = range(fanout[first - 1] if first else 0, fanout[first])
            for at in (low - 1, low, low + 1):
                if at in bucket:
                    near = index[1032 + 20 * at:1052 + 20 * at]
                    if near != raw and near.hex().startswith(prefix):
                        return False
        directory = oid[:2]
        if directory not in loose:
            try:
                loose[directory] = os.listdir(os.path.join(store_git_dir, "objects", directory))
            except FileNotFoundError:
                loose[directory] = []
            except OSError:
                return False
        rest = prefix[2:]
        if any(name.startswith(rest) and directory + name != oid for name in loose[directory]):
            return False
    return True


# A path git writes as it is in a range-diff's `## path ##` and `@@ path:` lines (no quoting,
# no space): any other leaves a changed pair to git's whole range-diff.
_PLAIN_PATH = on_first_use(r'[!#-\[\]-~]+\Z')
# git range-diff's pair line: its number on the left, the status, its number on the right
# (padded to the width of the larger number: fewer than the four spaces each line of a pair's
# diff starts with, for fewer than a thousand pairs)
_PAIR_HEAD = on_first_use(rb" {0,2}([0-9]+|-):  (?:[0-9a-f]+|-+) ([=!<>]) +([0-9]+|-):  ")
# git's default --creation-factor (range-diff.c: a commit's diff's size times it, over 100, is
# what leaving it unpaired costs)
_CREATION_FACTOR = 60


def _patch_text(hunks_by_path: dict[str, bytes | None]) -> list[bytes] | None:
    """The lines `git range-diff` weighs of a commit that changes each path of `hunks_by_path`
    (none made or deleted) by git's hunks given (range-diff.c's read_patches: its diff part,
    from the first `## path ##` on, each line counted in its size); None when a path or a
    hunk line is one this does not write as git would."""
    lines: list[bytes] = []
    for path in sorted(hunks_by_path):
        hunks = hunks_by_path[path]
        if hunks is None or not _PLAIN_PATH.match(path) or not hunks.endswith(b"\n"):
            return None
        name = path.encode()
        lines.append(b" ## %s ##" % name)
        for line in hunks[:-1].split(b"\n"):
            first = line[:1]
            if first == b"@":
                if not line.startswith(b"@@ "):
                    return None
                end = line.find(b"@@", 3)
                if end < 0:
                    return None
                heading = line[end + 2:]
                lines.append(b"@@ %s:%s" % (name, heading) if heading else b"@@")
            elif first in (b" ", b"-", b"+"):
                lines.append(line)
            elif first == b"\\":
                lines.append(b" " + line)
            else:
                return None
    return lines


def _counts(lines: list[bytes]) -> dict[bytes, int]:
    counts: dict[bytes, int] = {}
    for line in lines:
        counts[line] = counts.get(line, 0) + 1
    return counts


def _lines_at_most(text: bytes, contents: list[bytes], want: int) -> int:
    """How many lines of `contents` are `text`, counted up to `want` (at least as many:
    `text` followed by a line end anywhere counts)."""
    needle = text + b"\n"
    found = 0
    for data in contents:
        at = data.find(needle)
        while at >= 0:
            found += 1
            if found >= want:
                return found
            at = data.find(needle, at + len(needle))
        if data and not data.endswith(b"\n") and (data == text or data.endswith(b"\n" + text)):
            found += 1
            if found >= want:
                return found
    return found


def _shared_at_most(counts: dict[bytes, int], step: _Made,
                    content: Callable[[str], bytes]) -> int:
    """At most how many of the lines `counts` (a commit's range-diff lines, _patch_text) the
    range-diff text of commit `step` can have in common with them, in any order, without
    git's diff of it: its lines are its paths' `## ... ##` and `@@ path: ...` lines, `@@`,
    each line of a file before it (' ' or '-') or after it (' ' or '+'), and git's notes
    (no line end, a binary file)."""
    paths = [path.encode("utf-8", "surrogateescape") for path in step.changes]
    befores = [content(before) for before, _ in step.changes.values() if before is not None]
    afters = [content(after) for _, after in step.changes.values() if after is not None]
    total = 0
    for line, want in counts.items():
        can = 0
        if line == b"@@" or line == b" \\ No newline at end of file" or \
                line.startswith(b" Binary files ") or \
                line.startswith((b" ## ", b"@@ ")) and any(path in line for path in paths):
            can = want
        kind, text = line[:1], line[1:]
        if can < want:
            if kind == b" ":  # (the files after it looked through only if before it has it)
                before = _lines_at_most(text, befores, want)
                can += before and min(before, _lines_at_most(text, afters, want))
            elif kind == b"-":
                can += _lines_at_most(text, befores, want)
            elif kind == b"+":
                can += _lines_at_most(text, afters, want)
        total += min(can, want)
    return total


class _Changed:
    """Pairs `git range-diff` shows changed ('!'), decided without its whole run.

    When every other commit of the new chain is an exact pair (RangeDiffImport._proved), git
    weighs each commit of the new chain left over (its pair here, `b`) against each old commit
    left over: paired with old commit `a` it costs the size of the diff of their two texts
    (`diffsize`), left out `b`'s own size times the creation factor over 100 (`f(b)`), and
    each old commit left out `f(a)`; it takes the assignment of least cost (linear-assignment.c,
    the exact pairs kept: every other cost is below theirs, COST_MAX). So `b` goes with its
    own old commit `o` whatever the order git looks in when, for each `b`, `diffsize(o, b) -
    f(o)` is below `f(b)` and below `diffsize(a, b) - f(a)` for every other old commit `a`
    left over: no other assignment is as cheap. Those are shown without git's diff of any `a`:
    - `diffsize(o, b)` at most: git's range-diff of the pairs alone, run with a smaller
      creation factor `c` (the largest that lowers `f(o) + f(b)`), pairs them only where
      `diffsize(o, b) <= fc(o) + fc(b)` (leaving one out is an assignment too), below `f(o) +
      f(b)` by the choice of `c`;
    - `diffsize(a, b)` at least: every line of `b`'s text not in the longest run of lines
      both texts share, and every line of `a`'s: `|a| + |b| - 2 * shared`, where `shared` is
      at most _shared_at_most (from `a`'s files), and `|a| - f(a)` at least that of a
      one-line text.
    That small run's text for each pair (the diff of the two commits' texts) is git's own, the
    same in the whole run: a commit's text is its message, author and diff alone. Anything
    else (a size not known, a bound not met, git pairing them otherwise) leaves the whole
    range-diff to git."""

    def __init__(self, pairs: list[tuple[_Made, _Made]], factor: int) -> None:
        self.pairs = pairs  # (old commit, new commit), in the new chain's order
        self.factor = factor

    @classmethod
    def decide(cls, made: list[tuple[str, list[_Made]]],
               changed: list[tuple[_Made, _Made, dict[str, tuple[bytes | None, bytes | None]]]],
               content: Callable[[str], bytes]) -> _Changed | None:
        """The pairs `changed` ((old commit, new commit, per path git's hunks of the old and
        the new pair of contents)) of chains `made` whose every other new commit is an
        exact pair, when each is git's pair whatever its diff; else None."""
        try:
            return cls._decide(made, changed, content)
        except KeyError:  # a content not in memory (a blob id of the store)
            return None

    @classmethod
    def _decide(cls, made, changed, content) -> _Changed | None:
        (_, old), (_, new) = made
        paired = {step.name for step in new}
        left = [step for step in old if step.name not in paired]
        if any(not step.changes for step in left):
            return None  # a commit without a diff: git weighs its whole text
        for a, b, _ in changed:
            for step in (a, b):
                for oid in step.changes.values():
                    content(oid[0]), content(oid[1])  # all in memory (KeyError if not)
        texts = []
        for a, b, both in changed:
            old_text = _patch_text({path: pair[0] for path, pair in both.items()})
            new_text = _patch_text({path: pair[1] for path, pair in both.items()})
            if old_text is None or new_text is None:
                return None
            texts.append((old_text, new_text))

        def cost(size: int, factor: int = _CREATION_FACTOR) -> int:
            return size * factor // 100

        factor = _CREATION_FACTOR - 1
        for old_text, new_text in texts:
            whole = cost(len(old_text)) + cost(len(new_text))
            while factor > 0 and \
                    cost(len(old_text), factor) + cost(len(new_text), factor) >= whole:
                factor -= 1
            if factor <= 0:
                return None
        for k, (old_text, new_text) in enumerate(texts):
            counts = _counts(new_text)
            # what pairing b with o costs beyond leaving o out, at most
            at_most = cost(len(old_text), factor) + cost(len(new_text), factor) - \
                cost(len(old_text))
            for a in left:
                shared = _shared_at_most(counts, a, content)
                if len(new_text) - 2 * shared + 1 <= at_most:
                    return None
            for other, (old_text2, _) in enumerate(texts):
                if other != k:
                    counts2 = _counts(old_text2)
                    shared = sum(min(n, counts2.get(line, 0)) for line, n in counts.items())
                    if len(new_text) + len(old_text2) - 2 * shared - cost(len(old_text2)) <= \
                            at_most:
                        return None
        return cls([(a, b) for a, b, _ in changed], factor)

    def start(self, scratch: Path, content: Callable[[str], bytes], lines: list[str],
              where: dict[str, int]) -> _ChangedRun:
        """Git's range-diff of the pairs alone started in `scratch` (empty of packs): each side a
        chain of their commits, each made again on a tree holding its files as they were before
        it (a merge of that tree between two, which `git range-diff` leaves out), with its own
        message. `lines`, `where`: the whole text as _written_text wrote it."""
        ident = ("%s <%s> %s" % IMPORT_IDENT).encode()
        objects: dict[str, _Raw] = {}
        entries: dict[str, tuple | DeltaEntry] = {}
        ranges = []
        for side in (0, 1):
            trees = _Trees(objects)
            first = parent = ""
            for pair in self.pairs:
                step = pair[side]
                for path, (before, _) in step.changes.items():
                    assert before is not None, "a pair only changes files (_written_text)"
                    trees.set(path.encode("utf-8", "surrogateescape"), before)
                    entries.setdefault(before, stored_parts(b"blob", content(before)))
                tree = trees.root()
                if not first:
                    raw = b"tree %s\nauthor %s\ncommitter %s\n\nbase\n" % (
                        tree.encode(), ident, ident)
                    first = object_id(b"commit", raw)
                else:
                    raw = b"tree %s\nparent %s\nparent %s\nauthor %s\ncommitter %s\n\nmerge\n" \
                        % (tree.encode(), parent.encode(), first.encode(), ident, ident)
                parent = object_id(b"commit", raw)
                objects[parent] = (b"commit", raw)
                for path, (_, after) in step.changes.items():
                    assert after is not None, "a pair only changes files (_written_text)"
                    trees.set(path.encode("utf-8", "surrogateescape"), after)
                    entries.setdefault(after, stored_parts(b"blob", content(after)))
                raw = b"tree %s\nparent %s\nauthor %s\ncommitter %s\n\n" % (
                    trees.root().encode(), parent.encode(), ident, ident) + \
                    step.raw[step.raw.index(b"\n\n") + 2:]
                parent = object_id(b"commit", raw)
                objects[parent] = (b"commit", raw)
            ranges.append(f"{first}..{parent}")
        entries.update((oid, stored_parts(kind, raw)) for oid, (kind, raw) in objects.items())
        write_parts_pack(scratch, entries)
        with open(scratch / "out", "wb") as out, open(scratch / "err", "wb") as err:
            proc = start_git("range-diff", "--no-color", f"--creation-factor={self.factor}",
                             *ranges, git_dir=scratch, stdin=subprocess.DEVNULL, stdout=out,
                             stderr=err)
        return _ChangedRun(self, proc, scratch, lines, where)


class _ChangedRun:
    """_Changed's git run under way: result() waits for it."""

    def __init__(self, changed: _Changed, proc: subprocess.Popen, scratch: Path,
                 lines: list[str], where: dict[str, int]) -> None:
        self._changed, self._proc, self._scratch = changed, proc, scratch
        self._lines, self._where = lines, where

    def result(self) -> bytes | None:
        """The whole range-diff's text, each changed pair's line with git's '!' and its diff;
        None when git did not pair them one for one in order, or failed."""
        if self._proc.wait() != 0:
            return None
        out = (self._scratch / "out").read_bytes()
        pairs = self._changed.pairs
        bodies: list[list[bytes]] = []
        if not out.endswith(b"\n"):
            return None
        for line in out.split(b"\n")[:-1]:
            head = _PAIR_HEAD.match(line)
            if head is not None:
                if head.group(2) != b"!" or head.group(1) != head.group(3) or \
                        int(head.group(1)) != len(bodies) + 1:
                    return None
                bodies.append([])
            elif not bodies or not line.startswith(b"    "):
                return None
            else:
                bodies[-1].append(line + b"\n")
        if len(bodies) != len(pairs) or not all(bodies):
            return None
        shown = {self._where[new.commit]: body for (_, new), body in zip(pairs, bodies)}
        text = []
        for k, written in enumerate(self._lines):
            if k in shown:
                text.append(written.replace(" = ", " ! ", 1).encode())
                text.extend(shown[k])
            else:
                text.append(written.encode())
        return b"".join(text)

    def close(self) -> None:
        if self._proc.returncode is None:
            self._proc.kill()
            self._proc.wait()
