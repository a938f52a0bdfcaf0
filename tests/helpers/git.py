"""Running git in the tests' own repositories (upstreams, forks, checkouts)."""
from __future__ import annotations

import subprocess
from pathlib import Path


def git(cwd: Path, *args: str, input: bytes | None = None) -> str:
    """Run git in `cwd` and return its stdout (text); raises on failure."""
    out = subprocess.run(["git", *args], cwd=cwd, input=input, capture_output=True, check=True)
    return out.stdout.decode("utf-8", "surrogateescape")


def git_bytes(cwd: Path, *args: str, input: bytes | None = None) -> bytes:
    """Run git in `cwd` and return its stdout as bytes; raises on failure."""
    return subprocess.run(["git", *args], cwd=cwd, input=input, capture_output=True,
                          check=True).stdout


def commit_files(repo: Path, files: dict[str, bytes | None], message: str,
                 moves: dict[str, str] | None = None, *, tag: str | None = None) -> str:
    """Commit to a real repository: `moves` renamed with git mv, then `files` written (None
    deletes), then tagged `tag` if given. Returns the new commit id."""
    for old, new in (moves or {}).items():
        (repo / new).parent.mkdir(parents=True, exist_ok=True)
        git(repo, "mv", old, new)
    for rel, data in files.items():
        if data is None:
            git(repo, "rm", "-q", rel)
            continue
        target = repo / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--allow-empty", "-m", message)
    if tag:
        git(repo, "tag", tag)
    return git(repo, "rev-parse", "HEAD").strip()
