"""Whole trees captured to compare before and after: `snapshot` for "nothing changed"
(every entry: bytes and mode of files, symlink targets, directories), `tree_bytes` for contents;
`write_tree` lays a tree of files down."""
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


def tree_bytes(directory: Path, *, skip: tuple[str, ...] = ()) -> dict[str, bytes]:
    """Every file under `directory` (relative path -> bytes), to compare whole trees' contents;
    files below a directory named in `skip` (`.git`, quilt's `.pc`) are left out."""
    out = {}
    for path in sorted(directory.rglob("*")):
        rel = path.relative_to(directory)
        if path.is_file() and not set(rel.parts[:-1]) & set(skip):
            out[rel.as_posix()] = path.read_bytes()
    return out


def write_tree(root: Path, files: dict[str, bytes]) -> None:
    """Write `files` (relative path -> bytes) under `root`, making directories as needed."""
    root.mkdir(parents=True, exist_ok=True)
    for rel, data in files.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
