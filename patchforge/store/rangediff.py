"""`git range-diff` of two commit chains fed to `git fast-import` while a rebase runs, in a
scratch repository that borrows the store's objects (`RangeDiffImport`)."""
from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from patchforge.errors import StoreError
from patchforge.store.diff import quote_c_path
from patchforge.store.git import IMPORT_IDENT, end_process, run_git, start_git

if TYPE_CHECKING:
    from patchforge.store.gitstore import UpstreamStore


def quote_fastimport(raw: bytes) -> bytes:
    # fast-import takes a path as is unless it starts with '"' or holds LF; quote C-style then.
    if not raw.startswith(b'"') and b"\n" not in raw:
        return raw
    return quote_c_path(raw, quote_high=False)


class RangeDiffImport:
    """`git range-diff` of two commit chains: file contents handed over while the caller works
    (blob()), then the two chains' commits (range_diff()). It runs in a scratch repository
    that borrows the store's objects (alternates) and is removed afterwards: a report must not
    leave a pack and refs in the store on every run (hundreds of packs slow every later git
    process).

    The contents become one pack written here (objects.write_small_pack: stored, not
    compressed, no deltas; the pack lives for one command), and one `git fast-import` makes
    only the trees and commits, naming the blobs by id. Streaming every content through
    fast-import instead cost more than the rest of the range-diff: git hashes with its
    collision-detecting SHA-1, twice per byte (the object and the pack), where hashlib's is
    several times faster. close() (also done by range_diff()) ends the process and removes the
    repository; a caller that stops early must call it.
    """

    def __init__(self, store: "UpstreamStore") -> None:
        self._store = store
        self._tmp: Path | None = None
        self._blobs: list[bytes] = []  # the contents by mark (mark n is _blobs[n - 1])
        self._mark = 0
        self._proc: subprocess.Popen | None = None
        try:
            self._tmp = Path(tempfile.mkdtemp(prefix="patchforge-rangediff-"))
            scratch = self._tmp / "scratch.git"
            run_git("init", "-q", "--bare", "--template=", str(scratch))
            (scratch / "objects" / "info").mkdir(parents=True, exist_ok=True)
            (scratch / "objects" / "info" / "alternates").write_text(
                str((store.git_dir / "objects").resolve()) + "\n")
            self._scratch = scratch
            self._stderr = open(self._tmp / "stderr", "w+b")
            self._proc = start_git("-c", "pack.compression=0", "fast-import", "--quiet", "--done",
                                   "--depth=0", f"--export-marks={self._tmp / 'marks'}",
                                   git_dir=scratch, stdout=subprocess.DEVNULL,
                                   stderr=self._stderr)
        except (OSError, StoreError) as exc:
            self.close()
            raise StoreError(f"cannot start git fast-import for the range-diff: {exc}") from exc
        except BaseException:
            self.close()
            raise

    def blob(self, data: bytes) -> int:
        """Hand over one file content; returns its mark, for range_diff()'s chains."""
        if self._proc is None:
            raise StoreError("git fast-import stopped: the range-diff import is closed")
        return self._keep(data)

    def _keep(self, data: bytes) -> int:
        self._blobs.append(data)
        return len(self._blobs)

    def _write_blobs(self) -> list[str]:
        """Write every content handed over as one pack of the scratch repository (before any
        commit names them: fast-import then finds them by id); returns their ids by mark - 1."""
        from patchforge.store.objects import object_id, write_small_pack

        ids = [object_id(b"blob", data) for data in self._blobs]
        objects = {oid: (b"blob", data) for oid, data in zip(ids, self._blobs)}
        try:
            write_small_pack(self._scratch, objects, level=0)
        except OSError as exc:
            raise StoreError(f"cannot write the range-diff's contents: {exc}") from exc
        self._blobs = []
        return ids

    def _write(self, *parts: bytes) -> None:
        try:
            stdin = self._proc.stdin if self._proc is not None else None
            if stdin is None:
                raise OSError("not running")
            for part in parts:
                stdin.write(part)
        except (BrokenPipeError, OSError, ValueError, AttributeError) as exc:
            raise StoreError("git fast-import stopped: " + self._error_text()) from exc

    def range_diff(self, chains: list[tuple[str, list[str], list]]) -> bytes:
        """`git range-diff` of two chains, each (base commit, paths, steps): a root commit holding
        the base's versions of `paths`, then a commit per step (name, {path: content}), where a
        content is bytes, a blob() mark, a blob id in the store (str), or None for a deleted
        file. Closes the import."""
        try:
            # Inline contents (a chain made from the patch files) join the pack as well.
            chains = [(base, paths, [(name, {path: self._keep(content)
                                             if isinstance(content, bytes) else content
                                             for path, content in files.items()})
                                     for name, files in steps])
                      for base, paths, steps in chains]
            blob_ids = self._write_blobs()
            ident = f"{IMPORT_IDENT[0]} <{IMPORT_IDENT[1]}> {IMPORT_IDENT[2]}\n".encode()
            ranges = []
            for index, (base, paths, steps) in enumerate(chains):
                base_files = {p: found[1] for p, found in self._store.entries(base, paths).items()
                              if found is not None}
                ref = f"refs/heads/chain-{index}".encode()
                self._write(b"reset " + ref + b"\n")
                commits = []
                for name, files in [("base", base_files), *steps]:
                    self._mark += 1
                    commits.append(self._mark)
                    msg = f"{name}\n".encode("utf-8", "surrogateescape")
                    lines = [b"commit %s\nmark :%d\ncommitter %s" % (ref, self._mark, ident),
                             b"data %d\n%s\n" % (len(msg), msg)]
                    for path in sorted(files):
                        raw = quote_fastimport(path.encode("utf-8", "surrogateescape"))
                        content = files[path]
                        if content is None:
                            lines.append(b"D " + raw + b"\n")
                        else:  # a mark of blob(), or a blob id in the store
                            oid = blob_ids[content - 1] if isinstance(content, int) else content
                            lines.append(b"M 100644 %s %s\n" % (oid.encode(), raw))
                    self._write(*lines)
                ranges.append((commits[0], commits[-1]))
            self._write(b"done\n")
            assert self._proc is not None and self._proc.stdin is not None and self._tmp
            self._proc.stdin.close()
            if self._proc.wait() != 0:
                raise StoreError("git fast-import failed: " + self._error_text())
            ids: dict[str, str] = {}
            for line in (self._tmp / "marks").read_text().split("\n"):
                if line:
                    mark, oid = line.split(" ", 1)
                    ids[mark] = oid
            return run_git("range-diff", "--no-color",
                           *(f"{ids[f':{a}']}..{ids[f':{b}']}" for a, b in ranges),
                           git_dir=self._scratch).stdout
        finally:
            self.close()

    def _error_text(self) -> str:
        try:
            self._stderr.seek(0)
            return self._stderr.read().decode("utf-8", "replace").strip()[-2000:] or "no message"
        except (OSError, ValueError, AttributeError):
            return "no message"

    def close(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None:
            end_process(proc, grace=0)  # done already, or given up: no range-diff is wanted
        stderr = getattr(self, "_stderr", None)
        if stderr is not None:
            stderr.close()
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
