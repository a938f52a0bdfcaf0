"""The rebase journal: everything a stopped or killed rebase needs to go on or go back.

It lives in `.patchforge/rebase/`: `journal.json` (written atomically after every step), `staged/`
(the new patch files, written before the journal names them) and, once the final write-out has
begun, `orig/` (the project files as they were, for a byte-for-byte `--abort`). The project's own
files are not touched until the write-out, which is the last phase.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

from patchforge.fsutil import atomic_write

JOURNAL_VERSION = 1


class Journal:
    def __init__(self, state_dir: Path) -> None:
        self.dir = Path(state_dir) / "rebase"
        self.path = self.dir / "journal.json"
        self.data: dict = {}

    def exists(self) -> bool:
        return self.path.exists()

    def load(self) -> dict:
        self.data = json.loads(self.path.read_text("utf-8"))
        return self.data

    def save(self) -> None:
        self.data["version"] = JOURNAL_VERSION
        atomic_write(self.path, (json.dumps(self.data, indent=2, sort_keys=True) + "\n").encode())

    def stage(self, rel: str, data: bytes) -> str:
        """Keep new bytes for a project file until the write-out; returns the staged name."""
        staged = f"staged/{rel}"
        atomic_write(self.dir / staged, data)
        return staged

    def staged_bytes(self, staged: str) -> bytes:
        return (self.dir / staged).read_bytes()

    def save_original(self, root: Path, rel: str) -> None:
        """Copy a project file (or record its absence) before the write-out changes it."""
        originals = self.data.setdefault("originals", {})
        if rel in originals:
            return
        source = root / rel
        if source.exists():
            atomic_write(self.dir / "orig" / rel, source.read_bytes())
            originals[rel] = True
        else:
            originals[rel] = False

    def restore_originals(self, root: Path) -> list[str]:
        from patchforge.fsutil import atomic_delete

        restored = []
        for rel, existed in sorted(self.data.get("originals", {}).items()):
            if existed:
                atomic_write(root / rel, (self.dir / "orig" / rel).read_bytes())
            else:
                atomic_delete(root / rel)
            restored.append(rel)
        return restored

    def remove(self) -> None:
        if self.dir.exists():
            shutil.rmtree(self.dir)
