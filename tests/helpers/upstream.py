"""Real upstreams for the tests: a git repository with a linear history on main, and a wheel."""
from __future__ import annotations

import os
import re
import subprocess
import zipfile
from pathlib import Path

from helpers.git import commit_files, git

# A file long enough for offsets and context to mean something: 30 small functions.
BASE_LINES = [f"def f{i}():\n    return {i}\n\n".encode() for i in range(30)]
BASE = b"".join(BASE_LINES)


# An upstream source file in the shape of vLLM's attention helpers, which the fixes of status and
# bump tests are made against. Functions are far enough apart that each fix is its own hunk.
ATTENTION = b'''"""Attention helpers."""
import os

import torch


def block_size(config):
    size = config.block_size or 16
    return size


def fill_indptr(indptr, lengths):
    total = 0
    for i, n in enumerate(lengths):
        indptr[i] = total
        total += n
    indptr[len(lengths)] = total
    return indptr


def use_aiter_kernel(device):
    if device.type != "cuda":
        return False
    return os.environ.get("VLLM_USE_AITER", "0") == "1"


def row_offset(row, stride, limit):
    return row * stride


def scale_for(dtype):
    if dtype == "fp8":
        return 448.0
    return 1.0
'''

# (old, new) of the fixes made to ATTENTION, each inside one of its functions.
INDPTR = (b"    indptr[len(lengths)] = total\n",
          b"    indptr[len(lengths):].fill_(total)  # padding lanes must not read garbage\n")
CLAMP = (b"    return row * stride\n",
         b"    return torch.clamp(row.to(torch.int64) * stride, min=0, max=limit)\n")
AITER = (b'    if device.type != "cuda":\n', b'    if device.type not in ("cuda", "hip"):\n')
BLOCK = (b"    size = config.block_size or 16\n", b"    size = config.block_size or 32\n")


def changed(text: bytes, *fixes: tuple[bytes, bytes]) -> bytes:
    """`text` with each (old, new) of `fixes` made; every `old` must be there."""
    for old, new in fixes:
        assert old in text, old
        text = text.replace(old, new)
    return text


def dep3_patch(diff: bytes, *, description: str = "A fix", extra: str = "") -> bytes:
    """A patch file with a short DEP-3 header (and `extra` header lines) over `diff`."""
    head = (f"Description: {description}\nAuthor: Test Author <author@example.com>\n"
            f"Upstream-Status: Pending\n{extra}")
    return head.encode() + b"\n---\n" + diff


def with_lines(replacements: dict[int, bytes], lines: list[bytes] = BASE_LINES) -> bytes:
    """BASE with function i replaced by `replacements[i]`."""
    return b"".join(replacements.get(i, line) for i, line in enumerate(lines))


class Upstream:
    """A real git repository standing for an upstream project, with a linear history on main.

    `files` (and `links`: symlink path -> target) make the first commit, `base`, tagged `tag`."""

    def __init__(self, path: Path, files: dict[str, bytes], *, links: dict[str, str] | None = None,
                 message: str = "initial", tag: str | None = None) -> None:
        self.path = path
        path.mkdir(parents=True)
        git(path, "init", "-q", "-b", "main")
        for rel, target in (links or {}).items():
            (path / rel).parent.mkdir(parents=True, exist_ok=True)
            os.symlink(target, path / rel)
        self.base = self.commit(files, message, tag=tag)

    def head(self) -> str:
        return git(self.path, "rev-parse", "HEAD").strip()

    def read(self, rel: str, rev: str = "HEAD") -> bytes:
        return subprocess.run(["git", "show", f"{rev}:{rel}"], cwd=self.path, check=True,
                              capture_output=True).stdout

    def commit(self, files: dict[str, bytes | None], message: str = "change",
               renames: dict[str, str] | None = None, *, tag: str | None = None) -> str:
        return commit_files(self.path, files, message, renames, tag=tag)

    def diff(self, files: dict[str, bytes | None], rev: str | None = None) -> bytes:
        """`git diff` of `files` against `rev` (default HEAD), as a user would make a patch."""
        rev = rev or self.head()
        git(self.path, "checkout", "-q", rev)
        try:
            for rel, data in files.items():
                if data is None:
                    (self.path / rel).unlink()
                else:
                    (self.path / rel).parent.mkdir(parents=True, exist_ok=True)
                    (self.path / rel).write_bytes(data)
            git(self.path, "add", "-A")
            out = subprocess.run(["git", "diff", "--cached", "--full-index"], cwd=self.path,
                                 check=True, capture_output=True).stdout
            git(self.path, "reset", "-q", "--hard")
        finally:
            git(self.path, "checkout", "-q", "main")
        return out


def diff_of(scratch: Path, path: str, old: bytes | None, new: bytes) -> bytes:
    """`git diff --full-index` of `path` going from `old` (None: created) to `new`, made in a
    throwaway repository `scratch`, as a user would make a patch of any two contents."""
    scratch.mkdir(parents=True)
    git(scratch, "init", "-q")
    target = scratch / path
    target.parent.mkdir(parents=True, exist_ok=True)
    if old is not None:
        target.write_bytes(old)
        git(scratch, "add", "-A")
        git(scratch, "commit", "-q", "-m", "old")
    target.write_bytes(new)
    git(scratch, "add", "-A")
    return subprocess.run(["git", "diff", "--cached", "--full-index"], cwd=scratch, check=True,
                          capture_output=True).stdout


def build_wheel(directory: Path, name: str, version: str, files: dict[str, bytes], *,
                origin: bool = True) -> Path:
    """A tiny real wheel (a zip with a dist-info) in `directory`, with fixed timestamps; the file
    name carries the normalized distribution name, METADATA the name as given."""
    directory.mkdir(parents=True, exist_ok=True)
    dist = re.sub(r"[-_.]+", "_", name).lower()
    path = directory / f"{dist}-{version}-py3-none-any.whl"
    info = f"{dist}-{version}.dist-info"
    members = dict(files)
    members[f"{info}/METADATA"] = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode()
    members[f"{info}/WHEEL"] = (b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
                                b"Tag: py3-none-any\n")
    members[f"{info}/RECORD"] = b""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for rel, data in members.items():
            archive.writestr(zipfile.ZipInfo(rel, date_time=(2024, 1, 1, 0, 0, 0)), data)
    if origin:
        # As if downloaded from the index pip is told to use: a first pin takes it from the
        # cache without asking pip (`build_wheel(..., origin=False)` for a file no index served).
        from patchforge.store.sources import record_wheel_origin

        record_wheel_origin(path)
    else:
        Path(str(path) + ".origin.json").unlink(missing_ok=True)
    return path
