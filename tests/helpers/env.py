"""The isolated environment every test runs in, and the one cache the tests share.

`isolated_environ(home)` is the whole isolation: HOME and XDG dirs under `home`, a private
patchforge cache, fixed git identity and configuration, no system git config, no network, no
token. conftest applies it to each test with a MonkeyPatch of its own (a test's `monkeypatch.undo()`
cannot lift it); module-scoped builders apply it with `isolate(...)`.
"""
from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]

# The user's cache, computed once at import, before any test isolates the environment. The real
# vllm wheels (about 330 MB each) and their imports into the store are shared by the tool, the
# tests and the benchmarks, so each is fetched and imported once per machine.
SHARED_CACHE = Path(os.environ.get("PATCHFORGE_CACHE")
                    or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
                    / "patchforge")
SHARED_WHEELS = Path(os.environ.get("PATCHFORGE_WHEELS") or SHARED_CACHE / "wheels")
# The machine's own network settings (proxies, pip's index configuration), taken before the
# isolation points every proxy at a closed port: only `shared_release` downloads.
_NETWORK_ENV = {key: value for key, value in os.environ.items()
                if key.lower() in ("http_proxy", "https_proxy", "no_proxy", "all_proxy")}

# This checkout first, then what the caller had (taken once, at import).
_PYTHONPATH = os.pathsep.join([str(REPO_ROOT)] + [part for part in
                                                  os.environ.get("PYTHONPATH", "").split(os.pathsep)
                                                  if part])

# GH_TOKEN and GITHUB_TOKEN: the forge token; DOCKER_CONFIG: registry logins (~/.docker under the
# test's HOME instead).
# PYTHONDONTWRITEBYTECODE: see PYTHONPYCACHEPREFIX below.
UNSET = ("GITHUB_TOKEN", "GH_TOKEN", "DOCKER_CONFIG", "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE",
         "PYTHONDONTWRITEBYTECODE")


def isolated_environ(home: Path) -> dict[str, str]:
    """The variables of the isolated environment rooted at `home` (TMPDIR: `home`/tmp, made)."""
    scratch = home / "tmp"
    scratch.mkdir(parents=True, exist_ok=True)
    return {
        "HOME": str(home),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "PATCHFORGE_CACHE": str(home / ".cache" / "patchforge"),
        "PATCHFORGE_WHEELS": str(SHARED_WHEELS),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "Test Author",
        "GIT_AUTHOR_EMAIL": "author@example.com",
        "GIT_COMMITTER_NAME": "Test Committer",
        "GIT_COMMITTER_EMAIL": "committer@example.com",
        "GIT_CONFIG_COUNT": "3",
        "GIT_CONFIG_KEY_0": "commit.gpgsign",
        "GIT_CONFIG_VALUE_0": "false",
        "GIT_CONFIG_KEY_1": "init.defaultBranch",
        "GIT_CONFIG_VALUE_1": "main",
        "GIT_CONFIG_KEY_2": "protocol.file.allow",
        "GIT_CONFIG_VALUE_2": "always",
        "NO_COLOR": "1",
        # A command run in a process of its own (`python -m patchforge`, in a project directory)
        # runs this checkout's code, not whichever checkout the package was installed from.
        "PYTHONPATH": _PYTHONPATH,
        # Its byte code cached once per run, outside the checkout (beside the test's home, in the
        # run's temporary directory): a machine with PYTHONDONTWRITEBYTECODE set (unset below)
        # otherwise compiles the whole package again in every process a test starts, which was
        # most of the suite's time. What a test writes or reads is the same either way.
        "PYTHONPYCACHEPREFIX": str(home.parent / "pycache"),
        # Child processes' temporary files go under the test's own directory: a test that kills
        # a command on purpose (crash safety) leaves its scratch directories there, not in /tmp.
        "TMPDIR": str(scratch),
        # No network: any proxy-less HTTP to a non-loopback host fails fast.
        "http_proxy": "http://127.0.0.1:9",
        "https_proxy": "http://127.0.0.1:9",
        "no_proxy": "127.0.0.1,localhost",
    }


def isolate(mp: pytest.MonkeyPatch, home: Path) -> None:
    """Apply the isolated environment rooted at `home` through `mp`."""
    for key, value in isolated_environ(home).items():
        mp.setenv(key, value)
    for key in UNSET:
        mp.delenv(key, raising=False)


@contextlib.contextmanager
def isolated(home: Path) -> Iterator[pytest.MonkeyPatch]:
    """The isolated environment for the length of a `with` block (module-scoped builders)."""
    with pytest.MonkeyPatch.context() as mp:
        isolate(mp, home)
        yield mp


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
    from patchforge.store.sources import (_came_from_index, cached_wheels, import_wheel_upstream,
                                          record_wheel_origin, wheel_sha256)

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
        for wheel in cached_wheels(package, version, SHARED_WHEELS):
            # Downloaded by pip from the machine's index (here or by an earlier run): recorded
            # as the index's, as patchforge's own download records it.
            if not _came_from_index(wheel, wheel_sha256(wheel), package, version):
                record_wheel_origin(wheel, wheel_sha256(wheel))
        store = UpstreamStore.open(SHARED_CACHE)
        try:
            commit, _tree, _wheel = import_wheel_upstream(store, upstream, package, version,
                                                          offline=True)
        finally:
            store.close()
    return commit


def shared_example_releases() -> None:
    """The example stack's locked releases (what `patchforge fetch` brings) and vllm 0.33.0,
    its documented target, in the shared cache (see shared_release)."""
    import json

    lock = json.loads((REPO_ROOT / "upstream.lock").read_text())
    for upstream, pin in lock["upstreams"].items():
        shared_release(upstream, pin["source"]["package"], pin["version"])
    shared_release("vllm", "vllm", "0.33.0")


def need_tool(tool: str) -> None:
    """Skip the test when the standard tool it checks our output with is not installed."""
    import shutil

    if shutil.which(tool) is None:
        pytest.skip(f"{tool} is not installed (apt-get install -y {tool})")
