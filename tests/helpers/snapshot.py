"""Whole trees captured to compare before and after: `snapshot` for "nothing changed"
(every entry: bytes and mode of files, symlink targets, directories), `tree_bytes` for contents."""
from __future__ import annotations

import os
from pathlib import Path

STATE = ".patchforge"


def snapshot(root: Path, *, skip_state: bool = False, dirs: bool = True) -> dict[str, tuple]:
    """Every entry under `root`: ("file", bytes, mode), ("link", target) or ("dir",). With
    `skip_state`, patchforge's local state (`.patchforge/`) is left out; without `dirs`,
    directories are (an empty directory is then nothing, as for git)."""
    out: dict[str, tuple] = {}
    for directory, subdirs, files in os.walk(root):
        if skip_state and Path(directory) == root and STATE in subdirs:
            subdirs.remove(STATE)
        for name in subdirs + files:
            path = Path(directory, name)
            rel = path.relative_to(root).as_posix()
            if path.is_symlink():
                out[rel] = ("link", os.readlink(path))
            elif path.is_dir():
                if dirs:
                    out[rel] = ("dir",)
            else:
                out[rel] = ("file", path.read_bytes(), path.stat().st_mode & 0o7777)
    return out


def tree_bytes(directory: Path) -> dict[str, bytes]:
    """Every file under `directory` (relative path -> bytes), to compare whole trees' contents."""
    return {p.relative_to(directory).as_posix(): p.read_bytes()
            for p in sorted(directory.rglob("*")) if p.is_file()}
