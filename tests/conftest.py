"""Test isolation: every test gets its own HOME, XDG dirs, patchforge cache and git identity.

The one thing shared across tests (and with the tool and the benchmarks) is the wheel cache, since
the real vllm wheels are about 330 MB each: PATCHFORGE_WHEELS points at the user's cache.
"""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

# The user's cache, computed before any test isolates the environment. The real vllm wheels (about
# 330 MB each) and their imports into the store are shared by the tool, the tests and the
# benchmarks, so each is fetched and imported once per machine.
SHARED_CACHE = Path(os.environ.get("PATCHFORGE_CACHE")
                    or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
                    / "patchforge")
SHARED_WHEELS = Path(os.environ.get("PATCHFORGE_WHEELS") or SHARED_CACHE / "wheels")
REPO_ROOT = Path(__file__).resolve().parent.parent
# The machine's own network settings (proxies, pip's index configuration), taken before the
# isolation below points every proxy at a closed port: only `shared_release` downloads.
_NETWORK_ENV = {key: value for key, value in os.environ.items()
                if key.lower() in ("http_proxy", "https_proxy", "no_proxy", "all_proxy")}


@pytest.fixture(autouse=True)
def isolated_env(tmp_path_factory, monkeypatch):
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / ".cache"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("PATCHFORGE_CACHE", str(home / ".cache" / "patchforge"))
    monkeypatch.setenv("PATCHFORGE_WHEELS", str(SHARED_WHEELS))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_AUTHOR_NAME", "Test Author")
    monkeypatch.setenv("GIT_AUTHOR_EMAIL", "author@example.com")
    monkeypatch.setenv("GIT_COMMITTER_NAME", "Test Committer")
    monkeypatch.setenv("GIT_COMMITTER_EMAIL", "committer@example.com")
    monkeypatch.setenv("GIT_CONFIG_COUNT", "3")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", "commit.gpgsign")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", "false")
    monkeypatch.setenv("GIT_CONFIG_KEY_1", "init.defaultBranch")
    monkeypatch.setenv("GIT_CONFIG_VALUE_1", "main")
    monkeypatch.setenv("GIT_CONFIG_KEY_2", "protocol.file.allow")
    monkeypatch.setenv("GIT_CONFIG_VALUE_2", "always")
    monkeypatch.delenv("GITHUB_TOKEN", raising=False)
    monkeypatch.setenv("NO_COLOR", "1")
    # Child processes' temporary files go under the test's own directory: a test that kills a
    # command on purpose (crash safety) leaves its scratch directories there, not in /tmp.
    scratch = home / "tmp"
    scratch.mkdir(exist_ok=True)
    monkeypatch.setenv("TMPDIR", str(scratch))
    # No network: any proxy-less HTTP to a non-loopback host should fail fast in tests.
    monkeypatch.setenv("http_proxy", "http://127.0.0.1:9")
    monkeypatch.setenv("https_proxy", "http://127.0.0.1:9")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    yield


@pytest.fixture
def shared_cache(monkeypatch):
    """Use the machine's shared patchforge cache (real wheels already imported into its store).

    Only for tests on the real vllm/aiter releases; everything else runs on a private cache."""
    monkeypatch.setenv("PATCHFORGE_CACHE", str(SHARED_CACHE))
    return SHARED_CACHE


def shared_release(upstream: str, package: str, version: str) -> str:
    """Make sure `package`==`version` is imported into the shared store as upstream `upstream`
    (call it from a test using the `shared_cache` fixture); returns its commit.

    The wheel is downloaded once per machine, with the machine's own network settings, through
    the ordinary `pip download` (a fresh machine has only what `patchforge fetch` brought: the
    locked releases). The download goes to a scratch directory beside the shared wheels and is
    renamed into place, under a lock file, so a test running at the same time elsewhere never
    sees half a wheel."""
    import fcntl
    import shutil
    import sys
    import tempfile

    from patchforge.store.gitstore import UpstreamStore
    from patchforge.store.sources import cached_wheels, import_wheel_upstream

    SHARED_WHEELS.mkdir(parents=True, exist_ok=True)
    with open(SHARED_WHEELS / ".download.lock", "a+b") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not cached_wheels(package, version, SHARED_WHEELS):
            scratch = Path(tempfile.mkdtemp(prefix=".download.", dir=SHARED_WHEELS))
            try:
                env = {key: value for key, value in os.environ.items()
                       if key.lower() not in ("http_proxy", "https_proxy", "no_proxy", "all_proxy")}
                env.update(_NETWORK_ENV)
                subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps",
                                "--only-binary", ":all:", "--disable-pip-version-check",
                                "--no-input", "--progress-bar", "off", "-q", "-d", str(scratch),
                                f"{package}=={version}"], env=env, check=True)
                for wheel in cached_wheels(package, version, scratch):
                    os.replace(wheel, SHARED_WHEELS / wheel.name)
            finally:
                shutil.rmtree(scratch, ignore_errors=True)
        store = UpstreamStore.open(SHARED_CACHE)
        try:
            commit, _tree, _wheel = import_wheel_upstream(store, upstream, package, version,
                                                          offline=True)
        finally:
            store.close()
    return commit


def cli_in_process(root: Path, *args: str) -> tuple[int, str, str]:
    """The real command line, in this process: (exit code, stdout, stderr)."""
    import contextlib
    import io

    from patchforge.cli import main

    out, err = io.StringIO(), io.StringIO()
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(["--root", str(root), *args])
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return code, out.getvalue(), err.getvalue()


def commit_files(repo: Path, files: dict[str, bytes | None], message: str,
                 moves: dict[str, str] | None = None) -> str:
    """Commit to a real repository: `moves` renamed with git mv, then `files` written (None
    deletes). Returns the new commit id."""
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
    return git(repo, "rev-parse", "HEAD").strip()


def git(cwd: Path, *args: str, input: bytes | None = None) -> str:
    """Run git in `cwd` and return its stdout (text); raises on failure."""
    out = subprocess.run(["git", *args], cwd=cwd, input=input, capture_output=True, check=True)
    return out.stdout.decode("utf-8", "surrogateescape")


@pytest.fixture
def make_git_repo(tmp_path):
    """Build a real git repository: make_git_repo({"a.py": b"..."}) -> (path, commit sha)."""
    def build(files: dict[str, bytes], name: str = "upstream") -> tuple[Path, str]:
        repo = tmp_path / name
        repo.mkdir()
        git(repo, "init", "-q")
        for rel, data in files.items():
            p = repo / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(data)
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", "initial")
        return repo, git(repo, "rev-parse", "HEAD").strip()
    return build


class Upstream:
    """A real git repository standing for an upstream project, with a linear history on main."""

    def __init__(self, path: Path, files: dict[str, bytes]) -> None:
        self.path = path
        path.mkdir(parents=True)
        git(path, "init", "-q")
        self.base = self.commit(files, "initial")

    def head(self) -> str:
        return git(self.path, "rev-parse", "HEAD").strip()

    def read(self, rel: str, rev: str = "HEAD") -> bytes:
        return subprocess.run(["git", "show", f"{rev}:{rel}"], cwd=self.path, check=True,
                              capture_output=True).stdout

    def commit(self, files: dict[str, bytes | None], message: str = "change",
               renames: dict[str, str] | None = None) -> str:
        return commit_files(self.path, files, message, renames)

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
