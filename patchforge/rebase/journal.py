"""The rebase journal: everything a stopped or killed rebase needs to go on or go back.

It lives in `.patchforge/rebase/`:
- `journal.json`: where the run stands, rewritten atomically after every step. Its presence is
  what "a rebase is in progress" means: it is the first file written and the first removed.
- `staged-<n>.json`: the new patch files (name -> base64), written before the journal names
  them: each save adds one file with what was staged since the last one (one durable write per
  save rather than one per patch; rewriting all of them at every stop made a series with many
  stops quadratic). A later file overrides an earlier one. (`staged.json`, the one file of
  journals written before, is read as the first.)
- `originals.json` and `orig-overlays/`: once the write-out begins, the project files it
  replaces and the whole overlays/ tree as they were, for a byte-for-byte `--abort`.

The project's own files are not touched until the write-out, which is the last phase.
"""
from __future__ import annotations

import base64
import json
import os
import shutil
from pathlib import Path

from patchforge.errors import UsageError
from patchforge.fsutil import atomic_delete, atomic_write, fsync_dir

JOURNAL_VERSION = 1


class CorruptJournal(UsageError):
    """The journal is truncated or damaged: `rebase --abort` is the way out."""

    def __init__(self, message: str) -> None:
        super().__init__(message, hint="`patchforge rebase --abort` puts back the project files "
                                       "the journal saved (if any) and removes it")


def confined(root: Path, rel: object) -> Path:
    """`root / rel` for a path the journal names, when it stays inside the project (and out
    of .git); UsageError otherwise: a journal is a file on disk like any other input."""
    parts = rel.split("/") if isinstance(rel, str) else []
    if not parts or rel.startswith("/") or "\0" in rel or \
            any(p in ("", ".", "..") or p.lower() == ".git" for p in parts):
        raise UsageError(f"the rebase journal names {rel!r}, which is not a path inside the "
                         "project", hint="`patchforge rebase --abort`")
    target = Path(root) / rel
    if not target.parent.resolve().is_relative_to(Path(root).resolve()):
        raise UsageError(f"the rebase journal names {rel!r}, which leads outside the project "
                         "(through a symlink)", hint="`patchforge rebase --abort`")
    return target


def is_confined(root: Path, rel: object) -> bool:
    try:
        confined(root, rel)
    except UsageError:
        return False
    return True


class Journal:
    def __init__(self, state_dir: Path) -> None:
        self.dir = Path(state_dir) / "rebase"
        self.path = self.dir / "journal.json"
        self.data: dict = {}
        self._pending: dict[str, bytes] = {}  # staged name -> bytes not yet on disk
        self._saved: dict[str, bytes] | None = None  # what staged.json holds, once read

    def exists(self) -> bool:
        return self.path.exists()

    def begin(self) -> None:
        """Clear what an earlier run that was killed while cleaning up may have left."""
        if self.dir.exists():
            shutil.rmtree(self.dir)
        self._saved = None

    def load(self) -> dict:
        try:
            data = json.loads(self.path.read_text("utf-8"))
        except (OSError, ValueError) as exc:  # UnicodeDecodeError and JSONDecodeError too
            raise CorruptJournal(f"{self.path}: the rebase journal cannot be read "
                                 f"({type(exc).__name__}: {exc})") from None
        if not isinstance(data, dict) or not isinstance(data.get("upstreams"), dict) \
                or not isinstance(data.get("order"), list):
            raise CorruptJournal(f"{self.path}: the rebase journal is not a journal this "
                                 "patchforge wrote (missing upstreams or order)")
        if data.get("version") != JOURNAL_VERSION:
            raise UsageError(f"{self.path}: a rebase journal of version {data.get('version')} "
                             f"(this patchforge reads version {JOURNAL_VERSION})",
                             hint="finish or abort it with the patchforge that started it")
        self.data = data
        return data

    def save(self) -> None:
        """Write the journal; staged bytes it names are made durable first."""
        self.flush_staged()
        self.data["version"] = JOURNAL_VERSION
        # No indent: json's C encoder only runs without one, and a long series' journal is big.
        atomic_write(self.path, (json.dumps(self.data, sort_keys=True) + "\n").encode())

    def stage(self, rel: str, data: bytes) -> str:
        """Keep new bytes for a project file until the write-out; returns the staged name.

        They stay in memory until the journal is saved (a stop, or the write-out): a kill before
        that leaves a journal that does not name them, and a resumed run recomputes them, so
        writing each one durably as it is made would only cost time."""
        staged = f"staged/{rel}"
        self._pending[staged] = data
        return staged

    def staged_bytes(self, staged: str) -> bytes:
        if staged in self._pending:
            return self._pending[staged]
        saved = self._load_saved()
        if staged not in saved:
            raise UsageError(f"{self.dir / 'staged.json'}: the journal names {staged}, which is "
                             "not there", hint="`patchforge rebase --abort`")
        return saved[staged]

    def _staged_files(self) -> list[Path]:
        """The staged files in the order they were written."""
        numbered = []
        for path in self.dir.glob("staged-*.json"):
            number = path.name[len("staged-"):-len(".json")]
            if number.isdigit():
                numbered.append((int(number), path))
        legacy = self.dir / "staged.json"
        return ([legacy] if legacy.exists() else []) + [path for _, path in sorted(numbered)]

    def _load_saved(self) -> dict[str, bytes]:
        if self._saved is None:
            self._saved = {}
            for path in self._staged_files():
                self._saved.update({name: base64.b64decode(data) for name, data in
                                    json.loads(path.read_bytes()).items()})
        return self._saved

    def flush_staged(self) -> None:
        """Make the pending staged bytes durable: one new file with them alone."""
        if not self._pending:
            return
        files = self._staged_files()
        last = files[-1].name[len("staged-"):-len(".json")] if files else ""
        number = int(last) + 1 if last.isdigit() else 1
        atomic_write(self.dir / f"staged-{number}.json", json.dumps(
            {name: base64.b64encode(data).decode() for name, data in sorted(self._pending.items())}
        ).encode())
        if self._saved is not None:
            self._saved.update(self._pending)
        self._pending = {}

    def save_originals(self, root: Path, rels: list[str]) -> None:
        """Keep the project files the write-out will change (or their absence), all in one
        atomic write: `originals.json`, path -> base64 of the bytes or null."""
        originals = {}
        for rel in rels:
            source = Path(root) / rel
            originals[rel] = base64.b64encode(source.read_bytes()).decode() \
                if source.exists() else None
        atomic_write(self.dir / "originals.json",
                     (json.dumps(originals, sort_keys=True) + "\n").encode())

    def originals(self) -> dict[str, bytes | None]:
        path = self.dir / "originals.json"
        if not path.exists():
            return {}
        try:
            doc = json.loads(path.read_bytes())
            if not isinstance(doc, dict):
                raise ValueError("not an object")
            return {rel: None if data is None else base64.b64decode(data, validate=True)
                    for rel, data in doc.items()}
        except (ValueError, TypeError) as exc:
            raise CorruptJournal(f"{path}: the saved project files cannot be read ({exc})") \
                from None

    def restore_originals(self, root: Path) -> list[str]:
        restored = []
        for rel, data in sorted(self.originals().items()):
            if not is_confined(root, rel):
                continue  # never written: a journal cannot send --abort outside the project
            target = Path(root) / rel
            if data is not None:
                if not target.exists() or target.read_bytes() != data:
                    atomic_write(target, data)
                    restored.append(rel)
            elif target.exists():
                atomic_delete(target)
                restored.append(rel)
        return restored

    def save_tree(self, name: str, source: Path) -> bool:
        """Copy a directory into the journal (copied aside, then renamed into place, so the copy
        is whole or absent). False when there is no such directory."""
        target = self.dir / f"orig-{name}"
        partial = self.dir / f".orig-{name}.partial"
        for stale in (target, partial):
            if stale.exists():
                shutil.rmtree(stale)
        if not Path(source).is_dir():
            return False
        shutil.copytree(source, partial, symlinks=True)
        os.replace(partial, target)
        fsync_dir(self.dir)
        return True

    def restore_tree(self, name: str, target: Path) -> bool:
        """Put a saved directory back where it was, unless it is already identical."""
        saved = self.dir / f"orig-{name}"
        if not saved.is_dir() or _same_tree(saved, Path(target)):
            return False
        if Path(target).exists():
            shutil.rmtree(target)
        shutil.copytree(saved, target, symlinks=True)
        return True

    def remove(self) -> None:
        """Forget the run: journal.json first (from then on nothing is in progress), then the
        rest."""
        atomic_delete(self.path)
        if self.dir.exists():
            shutil.rmtree(self.dir)


def _same_tree(a: Path, b: Path) -> bool:
    def listing(root: Path) -> dict[str, bytes]:
        out = {}
        for directory, _, names in os.walk(root):
            for name in names:
                path = Path(directory, name)
                out[path.relative_to(root).as_posix()] = path.read_bytes()
        return out

    return b.is_dir() and listing(a) == listing(b)
