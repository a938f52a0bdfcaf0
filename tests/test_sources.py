"""Tests of patchforge.store.sources: wheel, directory and git upstreams brought into the store."""
from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.git import git
from helpers.upstream import build_wheel
from patchforge.errors import StoreError
from patchforge.store import sources
from patchforge.store.gitsource import fetch_git_upstream
from patchforge.store.gitstore import UpstreamStore
from patchforge.store.sources import (cached_wheels, fetch_wheel, import_dir_upstream,
                                      import_wheel_upstream)


@pytest.fixture
def wheels(tmp_path, monkeypatch):
    directory = tmp_path / "wheels"
    directory.mkdir()
    monkeypatch.setenv("PATCHFORGE_WHEELS", str(directory))
    return directory


@pytest.fixture
def store():
    with UpstreamStore.open() as opened:
        yield opened


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_cached_wheels_match_normalized_names(wheels):
    wheel = build_wheel(wheels, "Amd-Aiter", "0.1.7.post2.dev18", {"aiter/__init__.py": b""})
    build_wheel(wheels, "amd-aiter", "0.1.8", {"aiter/__init__.py": b""})
    assert cached_wheels("amd_aiter", "0.1.7.post2.dev18") == [wheel]
    assert cached_wheels("AMD.aiter", "0.1.7.post2.dev18") == [wheel]
    assert cached_wheels("amd-aiter", "0.2") == []


def test_fetch_wheel_reuses_the_cache_and_checks_the_pin(wheels, monkeypatch):
    wheel = build_wheel(wheels, "demo", "1.0", {"demo/__init__.py": b"x = 1\n"})
    monkeypatch.setattr(sources, "_pip_download",
                        lambda *a: pytest.fail("a cached wheel must not be downloaded"))
    got = fetch_wheel("demo", "1.0")
    assert got.path == wheel and got.filename == wheel.name and got.sha256 == sha256(wheel)
    assert fetch_wheel("demo", "1.0", pin_sha256=sha256(wheel).upper()).path == wheel
    with pytest.raises(StoreError, match="does not match the pinned sha256"):
        fetch_wheel("demo", "1.0", pin_sha256="0" * 64)


def test_offline_without_cached_wheel_is_an_error(wheels):
    with pytest.raises(StoreError, match="offline"):
        fetch_wheel("demo", "9.9", offline=True)


@pytest.mark.skipif(subprocess.run([sys.executable, "-m", "pip", "--version"],
                                   capture_output=True).returncode != 0, reason="no pip")
def test_a_cache_entry_under_a_wheels_name_that_is_no_file_is_named_never_opened(wheels,
                                                                                 tmp_path):
    """What lies in the wheel cache under a wheel's name, looked at before it is read: a FIFO
    there hung `upstream add --wheel` for ever (reading it waits for a writer), and a directory
    or a symbolic link to nothing gave an OS error with the hint to run the command again, which
    failed alike. Each is named with what it is (exit 2, "remove it"), nothing written; so is a
    directory where the lock's own wheel file was, which `fetch --offline` called missing."""
    import os
    import shutil

    from helpers.cli import run_subprocess
    from helpers.project import make_project

    root = make_project(tmp_path / "project")
    config = (root / "patchforge.toml").read_bytes()
    lock = (root / "upstream.lock").read_bytes()
    entry = wheels / "evilpkg-1.0-py3-none-any.whl"
    for kind, make in (("a FIFO", os.mkfifo), ("a directory", os.mkdir),
                       ("a symbolic link to", lambda p: os.symlink(tmp_path / "gone.whl", p))):
        make(entry)
        try:
            # A command that hangs fails the test here rather than holding it for ever.
            proc = run_subprocess(root, "--offline", "upstream", "add", "ev", "--wheel", "evilpkg",
                                  "--at", "1.0", "--install-root", "/opt/site", timeout=120)
        finally:
            (os.rmdir if kind == "a directory" else os.unlink)(entry)
        err = proc.stderr.decode()
        assert proc.returncode == 2 and f"{entry} in PATCHFORGE_WHEELS is {kind}" in err, err
        assert "remove it" in err and "run the command again" not in err, err
        assert (root / "patchforge.toml").read_bytes() == config
        assert (root / "upstream.lock").read_bytes() == lock

    wheel = build_wheel(wheels, "tinypkg", "1.2.0", {"tinypkg/mod.py": b"A = 1\n"})
    ok = run_subprocess(root, "upstream", "add", "tiny", "--wheel", "tinypkg", "--at", "1.2.0",
                        "--install-root", "/opt/site", expect=0)
    assert ok.returncode == 0
    shutil.rmtree(os.environ["PATCHFORGE_CACHE"])  # a new clone of the stack: the store is empty
    wheel.unlink()
    wheel.mkdir()
    proc = run_subprocess(root, "--offline", "fetch", timeout=120)
    err = proc.stderr.decode()
    assert proc.returncode == 2 and f"{wheel} in PATCHFORGE_WHEELS is a directory" in err, err
    assert wheel.is_dir()


def test_a_wheels_origin_record_that_is_no_file_is_named_never_opened(wheels, tmp_path):
    """`<wheel>.origin.json` beside a cached wheel, as a directory: `upstream add --wheel` failed
    naming a temporary file (`Is a directory: .../.<wheel>.origin.json.5e44b24671.tmp`) with the
    hint to run the command again, which failed the same way every time; as a FIFO it hung for
    ever, and as a link to /dev/zero it read until memory ran out (exit 70). Each is named
    with what it is, exit 2, "remove it", nothing written, as the wheel in those shapes is."""
    import os

    from helpers.cli import run_subprocess
    from helpers.project import make_project

    root = make_project(tmp_path / "project")
    config = (root / "patchforge.toml").read_bytes()
    lock = (root / "upstream.lock").read_bytes()
    build_wheel(wheels, "tinypkg", "1.2.0", {"tinypkg/mod.py": b"A = 1\n"}, origin=False)
    record = wheels / "tinypkg-1.2.0-py3-none-any.whl.origin.json"
    for kind, make in (("a directory", os.mkdir), ("a FIFO", os.mkfifo),
                       ("a symbolic link to /dev/zero, a device", lambda p: p.symlink_to("/dev/zero"))):
        make(record)
        try:
            proc = run_subprocess(root, "upstream", "add", "tiny", "--wheel", "tinypkg", "--at",
                                  "1.2.0", "--install-root", "/opt/site", timeout=120)
        finally:
            (os.rmdir if kind == "a directory" else os.unlink)(record)
        err = proc.stderr.decode()
        assert proc.returncode == 2, err
        assert f"{record} in PATCHFORGE_WHEELS is {kind}, not the wheel's origin record" in err, err
        assert "remove it" in err and "run the command again" not in err, err
        assert (root / "patchforge.toml").read_bytes() == config
        assert (root / "upstream.lock").read_bytes() == lock


def test_fetch_wheel_downloads_with_pip_as_configured(wheels, tmp_path, monkeypatch):
    # pip's own configuration (here: environment variables) decides where wheels come from;
    # a local find-links directory stands in for an index.
    index = tmp_path / "index"
    source = build_wheel(index, "demo-pkg", "2.0", {"demo_pkg/__init__.py": b"v = 2\n"})
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(index))
    got = fetch_wheel("demo-pkg", "2.0", pin_sha256=sha256(source))
    assert got.path.parent == wheels and got.path.read_bytes() == source.read_bytes()
    with pytest.raises(StoreError, match="pip download demo-pkg==3.0 failed"):
        fetch_wheel("demo-pkg", "3.0")


@pytest.mark.skipif(subprocess.run([sys.executable, "-m", "pip", "--version"],
                                   capture_output=True).returncode != 0, reason="no pip")
def test_a_version_the_index_lacks_names_the_newest_few_not_every_one(wheels, tmp_path,
                                                                       monkeypatch):
    """pip's "(from versions: ...)" lists every version the index has (about a hundred for
    vllm); the message carried them all. It keeps the count and the newest few."""
    index = tmp_path / "index"
    for minor in range(12):
        build_wheel(index, "demo-pkg", f"1.{minor}", {"demo_pkg/__init__.py": b"v = 1\n"})
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(index))
    with pytest.raises(StoreError) as raised:
        fetch_wheel("demo-pkg", "1.99")
    message = str(raised.value)
    assert "(from versions: 12 in all, the newest 1.6, 1.7, 1.8, 1.9, 1.10, 1.11)" in message
    assert "1.0," not in message and "1.5," not in message


def test_import_wheel_upstream_is_deterministic_and_reused(wheels, store, tmp_path, monkeypatch):
    wheel = build_wheel(wheels, "demo", "1.0", {"demo/a.py": b"a\r\n", "demo/b.py": b"\xff\n"})
    commit, tree, wf = import_wheel_upstream(store, "demo", "demo", "1.0", sha256(wheel))
    assert wf.path == wheel
    assert store.read_blob(commit, "demo/a.py") == b"a\r\n"
    assert store.read_blob(commit, "demo/b.py") == b"\xff\n"
    assert store.tree_id(commit) == tree
    # Second time: the earlier import is found, nothing is imported again.
    with monkeypatch.context() as mp:
        mp.setattr(UpstreamStore, "import_wheel",
                   lambda *a, **k: pytest.fail("the import should have been reused"))
        assert import_wheel_upstream(store, "demo", "demo", "1.0")[:2] == (commit, tree)
    # Another store imports the same wheel to the same commit.
    with UpstreamStore.open(tmp_path / "other") as other:
        assert import_wheel_upstream(other, "demo", "demo", "1.0")[:2] == (commit, tree)


def test_import_dir_upstream(store, tmp_path):
    root = tmp_path / "site-packages"
    (root / "aiter").mkdir(parents=True)
    (root / "aiter" / "ops.py").write_bytes(b"def op():\n    pass\n")
    commit, tree = import_dir_upstream(store, "aiter", root, "installed")
    assert store.read_blob(commit, "aiter/ops.py") == b"def op():\n    pass\n"
    assert store.resolve_in("aiter", "installed") == commit and store.tree_id(commit) == tree


def test_fetch_git_upstream_branch_tag_and_commit(store, make_git_repo):
    repo, first = make_git_repo({"aiter/a.py": b"one\n"})
    (repo / "aiter" / "a.py").write_bytes(b"two\n")
    git(repo, "commit", "-qam", "two")
    git(repo, "tag", "v2")
    second = git(repo, "rev-parse", "HEAD").strip()
    assert fetch_git_upstream(store, "aiter", str(repo), "main") == second
    assert fetch_git_upstream(store, "aiter", str(repo), "v2") == second
    assert fetch_git_upstream(store, "aiter", str(repo), first[:10]) == first
    assert store.read_blob(first, "aiter/a.py") == b"one\n"
    # Offline: what is in the store resolves, the rest is an error naming --offline.
    assert fetch_git_upstream(store, "aiter", str(repo), second, offline=True) == second
    with pytest.raises(StoreError, match="offline"):
        fetch_git_upstream(store, "aiter", str(repo), "other-branch", offline=True)


def test_fetch_git_upstream_abbreviated_id_not_yet_fetched(store, make_git_repo):
    repo, first = make_git_repo({"x.py": b"x\n"})
    assert fetch_git_upstream(store, "up", str(repo), first[:8]) == first
    with pytest.raises(StoreError, match="not a known"):
        fetch_git_upstream(store, "up", str(repo), "deadbeef")


def test_pip_is_asked_for_a_python_the_recorded_wheel_runs_on():
    # A stable-ABI wheel (vllm's cp38-abi3) or a py3 wheel runs on this interpreter too: pip is
    # given this interpreter's version, or a Requires-Python >= 3.11 hides the release from it.
    from patchforge.store.sources import _python_version_for

    here = f"{sys.version_info.major}{sys.version_info.minor}"
    assert _python_version_for("cp", "38", [("cp38", "abi3", "manylinux_2_28_x86_64")]) == here
    assert _python_version_for("py", "3", [("py3", "none", "any")]) == here
    # An exact CPython ABI, or a stable ABI newer than this interpreter: the tag's own version.
    assert _python_version_for("cp", "310", [("cp310", "cp310", "linux_x86_64")]) == "310"
    later = f"{sys.version_info.major}{sys.version_info.minor + 1}"
    assert _python_version_for("cp", later, [(f"cp{later}", "abi3", "any")]) == later


@pytest.mark.skipif(subprocess.run([sys.executable, "-m", "pip", "--version"],
                                   capture_output=True).returncode != 0, reason="no pip")
@pytest.mark.skipif(sys.prefix != sys.base_prefix,
                    reason="in a virtual environment pip's require-virtualenv is met anyway")
def test_fetch_wheel_outside_a_virtualenv_with_pip_requiring_one(wheels, tmp_path, monkeypatch):
    """PIP_REQUIRE_VIRTUALENV (a safeguard against installing outside a virtual environment)
    made every wheel fetch fail: 'pip download ... failed: ERROR: Could not find an activated
    virtualenv (required)', with a hint about the package name and the index. A download into
    the cache installs nothing: it is fetched."""
    index = tmp_path / "index"
    source = build_wheel(index, "demo-pkg", "2.0", {"demo_pkg/__init__.py": b"v = 2\n"})
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(index))
    monkeypatch.setenv("PIP_REQUIRE_VIRTUALENV", "1")
    got = fetch_wheel("demo-pkg", "2.0", pin_sha256=sha256(source))
    assert got.path.read_bytes() == source.read_bytes()
