"""`git range-diff` of two commit chains made while a rebase runs, in a scratch repository that
borrows the store's objects (`RangeDiffImport`)."""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from patchforge.errors import StoreError
from patchforge.store.diff import quote_c_path
from patchforge.store.git import IMPORT_IDENT, run_git
from patchforge.store.objects import TREE_MODE, object_id, pack_entry, write_pack

if TYPE_CHECKING:
    from patchforge.store.gitstore import UpstreamStore


def quote_fastimport(raw: bytes) -> bytes:
    # fast-import takes a path as is unless it starts with '"' or holds LF; quote C-style then.
    if not raw.startswith(b'"') and b"\n" not in raw:
        return raw
    return quote_c_path(raw, quote_high=False)


class _Trees:
    """A tree of files (path -> blob id) changed a few paths at a time: after each change only
    the directories on the changed paths are made again, in git's tree format (as
    objects.tree_bytes: entries sorted by name, a directory's as if it ended in '/'), each
    from its own entries (a child directory's entry holds the child's last id, so an unchanged
    subtree is never visited). New trees go into `objects` (id -> objects.pack_entry)."""

    def __init__(self, objects: dict[str, tuple[bytes, int]]) -> None:
        self.objects = objects
        # directory ("" or "a/b/") -> sort key -> raw entry, for its files and (as "name/")
        # its non-empty subdirectories
        self.entries: dict[bytes, dict[bytes, bytes]] = {b"": {}}
        self.ids: dict[bytes, str | None] = {}  # directory -> its tree id, None when empty
        self.dirty: set[bytes] = set()  # directories whose id must be made again

    def set(self, path: bytes, oid: str | None) -> None:
        """Put blob `oid` at `path` (None: remove it)."""
        directory, _, name = path.rpartition(b"/")
        parent = b""
        self.dirty.add(parent)
        for part in directory.split(b"/") if directory else ():
            parent += part + b"/"
            self.entries.setdefault(parent, {})
            self.dirty.add(parent)
        if oid is None:
            self.entries[parent].pop(name, None)
        else:
            self.entries[parent][name] = b"100644 %s\0" % name + bytes.fromhex(oid)

    def root(self) -> str:
        """The id of the whole tree (empty directories left out, as git does)."""
        # The deepest first: each directory's id goes into its parent's entries.
        for directory in sorted(self.dirty, key=lambda d: d.count(b"/"), reverse=True):
            entries = self.entries[directory]
            oid = None
            if entries:
                raw = b"".join(entries[key] for key in sorted(entries))
                oid = object_id(b"tree", raw)
                self.objects[oid] = pack_entry(b"tree", raw, level=0)
            self.ids[directory] = oid
            if directory:
                parent, _, name = directory[:-1].rpartition(b"/")
                siblings = self.entries[parent + b"/" if parent else b""]
                if oid is None:
                    siblings.pop(name + b"/", None)
                else:
                    siblings[name + b"/"] = b"%s %s\0" % (TREE_MODE.encode(), name) \
                        + bytes.fromhex(oid)
        self.dirty.clear()
        return self.ids.get(b"") or object_id(b"tree", b"")


class RangeDiffImport:
    """`git range-diff` of two commit chains: file contents handed over while the caller works
    (blob()), then the two chains (range_diff()). It runs in a scratch repository that borrows
    the store's objects (alternates) and is removed afterwards: a report must not leave a pack
    and refs in the store on every run (hundreds of packs slow every later git process).

    Every object of the chains (contents, trees, commits: the ones `git fast-import` made
    before, id for id) is made here and written as one pack (objects.write_pack: stored, not
    compressed, no deltas; the pack lives for one command), so `git range-diff` is the one
    git process. Streaming the contents through fast-import cost git more than the rest of
    the range-diff: it hashes each byte twice (object and pack) with its collision-detecting
    SHA-1, and set up zlib again for each of thousands of small trees. A content is hashed and
    packed when it is handed over, on the caller's thread: range_diff() runs on a second
    thread, where each call that lets go of the GIL waits to get it back from the busy first
    one. close() (also done by range_diff()) removes the repository; a caller that stops early
    must call it.
    """

    def __init__(self, store: "UpstreamStore") -> None:
        self._store = store
        self._tmp: Path | None = None
        self._blobs: list[str] = []  # the contents' ids by mark (mark n is _blobs[n - 1])
        self._objects: dict[str, tuple[bytes, int]] = {}  # id -> objects.pack_entry
        self._closed = False
        try:
            self._tmp = Path(tempfile.mkdtemp(prefix="patchforge-rangediff-"))
            scratch = self._tmp / "scratch.git"
            run_git("init", "-q", "--bare", "--template=", str(scratch))
            (scratch / "objects" / "info").mkdir(parents=True, exist_ok=True)
            (scratch / "objects" / "info" / "alternates").write_text(
                str((store.git_dir / "objects").resolve()) + "\n")
            self._scratch = scratch
        except (OSError, StoreError) as exc:
            self.close()
            raise StoreError(f"cannot make the range-diff's scratch repository: {exc}") from exc
        except BaseException:
            self.close()
            raise

    def blob(self, data: bytes) -> int:
        """Hand over one file content; returns its mark, for range_diff()'s chains."""
        if self._closed:
            raise StoreError("the range-diff import is closed")
        self._keep(data)
        return len(self._blobs)

    def _keep(self, data: bytes) -> str:
        """The content's id; it goes into the pack (hashed and made a pack entry here, on the
        caller's thread, where the few GIL-releasing calls per content cost nothing)."""
        oid = object_id(b"blob", data)
        if oid not in self._objects:
            self._objects[oid] = pack_entry(b"blob", data, level=0)
        self._blobs.append(oid)
        return oid

    def range_diff(self, chains: list[tuple[str, list[str], list]]) -> bytes:
        """`git range-diff` of two chains, each (base commit, paths, steps): a root commit holding
        the base's versions of `paths`, then a commit per step (name, {path: content}), where a
        content is bytes, a blob() mark, a blob id in the store (str), or None for a deleted
        file. Every file has mode 100644. Closes the import."""
        try:
            ranges = [self.chain(*one) for one in chains]
            try:
                write_pack(self._scratch, self._objects)
            except OSError as exc:
                raise StoreError(f"cannot write the range-diff's objects: {exc}") from exc
            return run_git("range-diff", "--no-color", *(f"{a}..{b}" for a, b in ranges),
                           git_dir=self._scratch).stdout
        finally:
            self.close()

    def chain(self, base: str, paths: list[str], steps: list) -> tuple[str, str]:
        """The commits of one chain (see range_diff), made as `git fast-import` makes them from a
        branch reset, then a commit per step given only a committer and its `M`/`D` lines:
        (the first commit, the last). Its objects wait for range_diff()'s pack."""
        if self._closed:
            raise StoreError("the range-diff import is closed")
        ident = "%s <%s> %s" % IMPORT_IDENT
        base_files = {p: found[1] for p, found in self._store.entries(base, paths).items()
                      if found is not None}
        trees = _Trees(self._objects)
        first = parent = None
        for name, files in [("base", base_files), *steps]:
            for path, content in files.items():
                if isinstance(content, bytes):  # inline (a chain from the patch files)
                    oid = self._keep(content)
                elif isinstance(content, int):
                    oid = self._blobs[content - 1]
                else:
                    oid = content
                trees.set(path.encode("utf-8", "surrogateescape"), oid)
            raw = (f"tree {trees.root()}\n" + (f"parent {parent}\n" if parent else "")
                   + f"author {ident}\ncommitter {ident}\n\n").encode() \
                + f"{name}\n".encode("utf-8", "surrogateescape")
            parent = object_id(b"commit", raw)
            self._objects[parent] = pack_entry(b"commit", raw, level=0)
            first = first or parent
        assert first is not None and parent is not None  # the base commit at least
        return first, parent

    def close(self) -> None:
        self._closed = True
        self._blobs, self._objects = [], {}
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
