"""Everything around the patches is input too: config, lock, names, the store, the network.

A stack repository's `upstream.lock` and configuration arrive by pull request, like a patch. These
tests attack them through the real command line, with real pip (a local package directory that
would write a marker file if anything built it), real git and real HTTP servers on 127.0.0.1.
"""
from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import tarfile
import zipfile
from pathlib import Path

import pytest

from helpers.cli import ok, run_cli
from helpers.project import git_project, lock_doc
from helpers.snapshot import tree_bytes
from helpers.upstream import build_wheel

# --------------------------------------------------------------------------------------------
# Wheels: fetching never builds or runs anything, and only the recorded file is accepted

SETUP_PY = """\
import pathlib
pathlib.Path({marker!r}).write_text("setup.py ran")
from setuptools import setup
setup(name="evilpkg", version="1.0")
"""


@pytest.fixture
def evil(tmp_path, monkeypatch):
    """A package index (pip's find-links, as a machine may configure it) holding only an sdist
    of `evilpkg` 1.0, an unpacked source directory of it, and the marker its setup.py writes."""
    marker = tmp_path / "BUILT"
    source = tmp_path / "evil-src"
    source.mkdir()
    (source / "setup.py").write_text(SETUP_PY.format(marker=str(marker)))
    index = tmp_path / "index"
    index.mkdir()
    with tarfile.open(index / "evilpkg-1.0.tar.gz", "w:gz") as archive:
        for name, text in (("setup.py", SETUP_PY.format(marker=str(marker))),
                           ("PKG-INFO", "Metadata-Version: 2.1\nName: evilpkg\nVersion: 1.0\n")):
            data = text.encode()
            info = tarfile.TarInfo(f"evilpkg-1.0/{name}")
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(index))
    # A machine whose pip builds without isolation: a build would run setup.py right away (with
    # isolation it could fail earlier, installing setuptools offline, and prove nothing).
    monkeypatch.setenv("PIP_NO_BUILD_ISOLATION", "0")
    monkeypatch.setenv("PATCHFORGE_WHEELS", str(tmp_path / "wheels"))
    ok(None, "init", "--standalone", cwd=tmp_path)
    return tmp_path, index, source, marker


@pytest.mark.parametrize("package", [
    "evilpkg @ file://{source}",
    "-r{index}/evilpkg-1.0.tar.gz",
    "--index-url=http://127.0.0.1:9/",
    "{source}",
    "evilpkg==1.0 ; python_version>'0'",
])
def test_upstream_add_refuses_a_package_that_is_not_a_name(evil, package):
    root, index, source, marker = evil
    package = package.format(source=source, index=index)
    run = run_cli(root, "upstream", "add", "w", "--wheel", package, "--at", "1.0")
    assert run.rc == 2, run.err
    assert "not a valid Python distribution name" in run.err
    assert not marker.exists()
    assert lock_doc(root)["upstreams"] == {}


def test_an_sdist_is_never_built_even_for_a_valid_name(evil):
    root, _, _, marker = evil
    run = run_cli(root, "upstream", "add", "w", "--wheel", "evilpkg", "--at", "1.0")
    assert run.rc == 2 and "pip download evilpkg==1.0 failed" in run.err
    assert not marker.exists()
    assert not any((root / "wheels").iterdir())


def _wheel_lock(root: Path, package: str, version: str, filename: str, sha256: str) -> None:
    (root / "patchforge.toml").write_text(
        f'[upstreams.w]\nkind = "wheel"\npackage = "evilpkg"\ninstall-root = "/srv"\n')
    doc = {"version": 1, "upstreams": {"w": {
        "kind": "wheel", "commit": "1" * 40, "tree": "2" * 40, "label": "1.0", "version": "1.0",
        "source": {"package": package, "version": version, "filename": filename,
                   "sha256": sha256}}}}
    (root / "upstream.lock").write_text(json.dumps(doc, indent=2) + "\n")


@pytest.mark.parametrize("field,value,message", [
    ("package", "evilpkg @ file://{source}", "not a valid Python distribution name"),
    ("package", "-r{index}/x.txt", "not a valid Python distribution name"),
    ("version", "1.0 --index-url=http://127.0.0.1:9/", "not a valid PEP 440 version"),
    ("filename", "../../evilpkg-1.0-py3-none-any.whl", "is not a wheel file name"),
    ("filename", "evilpkg-1.0.tar.gz", "is not a wheel file name"),
    ("filename", "other-1.0-py3-none-any.whl", "is not a wheel of evilpkg 1.0"),
])
def test_fetch_refuses_a_lock_whose_wheel_source_is_not_a_wheel(evil, field, value, message):
    root, index, source, marker = evil
    values = {"package": "evilpkg", "version": "1.0", "filename": "evilpkg-1.0-py3-none-any.whl"}
    values[field] = value.format(source=source, index=index)
    _wheel_lock(root, sha256="0" * 64, **values)
    run = run_cli(root, "fetch")
    assert run.rc == 2, run.err
    assert message in run.err and "upstream.lock:" in run.err
    assert f"upstreams.w.source.{field}" in run.err
    assert not marker.exists()


def _foreign_wheel(index: Path, filename: str, body: bytes) -> Path:
    path = index / filename
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(zipfile.ZipInfo("evilpkg/__init__.py", (2024, 1, 1, 0, 0, 0)), body)
        for name, text in (("METADATA", "Metadata-Version: 2.1\nName: evilpkg\nVersion: 1.0\n"),
                           ("WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: true\n"),
                           ("RECORD", "")):
            archive.writestr(zipfile.ZipInfo(f"evilpkg-1.0.dist-info/{name}",
                                             (2024, 1, 1, 0, 0, 0)), text)
    return path


def test_fetch_downloads_exactly_the_recorded_wheel_for_its_own_tags(evil, monkeypatch):
    """A lock made on Windows for CPython 3.11 fetches that very file on this Linux machine, even
    with other builds of the version (and the sdist) beside it."""
    root, index, _, marker = evil
    filename = "evilpkg-1.0-cp311-cp311-win_amd64.whl"
    wanted = _foreign_wheel(index, filename, b"WINDOWS = True\n")
    _foreign_wheel(index, "evilpkg-1.0-py3-none-any.whl", b"ANY = True\n")
    _foreign_wheel(index, "evilpkg-1.0-cp311-cp311-manylinux_2_17_x86_64.whl", b"LINUX = True\n")
    # The lock, as the Windows machine wrote it (its own cache held the file).
    elsewhere = root / "windows-cache"
    elsewhere.mkdir()
    shutil.copy(wanted, elsewhere / filename)
    with monkeypatch.context() as there:
        there.setenv("PATCHFORGE_WHEELS", str(elsewhere))
        there.setenv("PATCHFORGE_CACHE", str(root / "windows-store"))
        ok(root, "--offline", "upstream", "add", "w", "--wheel", "evilpkg", "--at", "1.0",
           "--install-root", "/srv")
    assert lock_doc(root)["upstreams"]["w"]["source"]["filename"] == filename
    run = ok(root, "fetch", "--json")
    assert json.loads(run.out)["fetched"][0]["result"] == "imported"
    cached = root / "wheels" / filename
    assert cached.read_bytes() == wanted.read_bytes()
    assert sorted(p.name for p in (root / "wheels").iterdir() if p.name != ".gitkeep") \
        == [filename]
    assert not marker.exists()


def test_fetch_refuses_a_wheel_whose_digest_is_not_the_pin(evil):
    root, index, _, marker = evil
    filename = "evilpkg-1.0-py3-none-any.whl"
    _foreign_wheel(index, filename, b"SERVED = True\n")
    _wheel_lock(root, "evilpkg", "1.0", filename, "ab" * 32)
    run = run_cli(root, "fetch")
    assert run.rc == 2 and "sha256" in run.err, run.err
    # Nothing unverified entered the wheel cache, and no scratch directory is left behind.
    assert list((root / "wheels").iterdir()) == []
    assert not marker.exists()


def test_a_pinned_cached_wheel_with_another_digest_is_refused(evil):
    root, index, _, _ = evil
    filename = "evilpkg-1.0-py3-none-any.whl"
    (root / "wheels").mkdir()
    _foreign_wheel(root / "wheels", filename, b"CACHED = True\n")
    _wheel_lock(root, "evilpkg", "1.0", filename, "cd" * 32)
    run = run_cli(root, "--offline", "fetch")
    assert run.rc == 2 and "does not match the pinned sha256" in run.err


def _python_without_pip(tmp_path: Path) -> tuple[list[str], dict]:
    """This interpreter as an environment without pip would run it (as `uv venv` makes them):
    no site, and every installed package but pip reachable on PYTHONPATH."""
    import site
    import sys

    packages = tmp_path / "site-no-pip"
    packages.mkdir()
    for directory in site.getsitepackages():
        for entry in Path(directory).iterdir():
            if entry.name.lower().startswith("pip") or (packages / entry.name).exists():
                continue
            (packages / entry.name).symlink_to(entry)
    repo = Path(__file__).resolve().parent.parent
    env = dict(os.environ, PYTHONPATH=f"{repo}{os.pathsep}{packages}")
    return [sys.executable, "-S", "-m", "patchforge"], env


def test_fetch_without_pip_in_the_environment_uses_pip_on_path(evil):
    import subprocess

    root, index, _, _ = evil
    wheel = build_wheel(index, "evilpkg", "1.0", {"evilpkg/__init__.py": b"OK = 1\n"})
    command, env = _python_without_pip(root)
    check = subprocess.run(command[:2] + ["-c", "import pip"], env=env, capture_output=True)
    assert check.returncode != 0, "the environment must not have pip"
    run = subprocess.run(command + ["--root", str(root), "upstream", "add", "w", "--wheel",
                                    "evilpkg", "--at", "1.0"], env=env, capture_output=True)
    assert run.returncode == 0, run.stderr.decode()
    assert lock_doc(root)["upstreams"]["w"]["source"]["sha256"] == \
        hashlib.sha256(wheel.read_bytes()).hexdigest()
    # No pip anywhere: a clear message, exit 2.
    bare = root / "bin"
    bare.mkdir()
    (bare / "git").symlink_to(shutil.which("git"))
    env["PATH"] = str(bare)
    run = subprocess.run(command + ["--root", str(root), "upstream", "pin", "w", "--at", "2.0",
                                    "--force"], env=env, capture_output=True)
    assert run.returncode == 2
    assert b"no pip in this Python environment" in run.stderr


# --------------------------------------------------------------------------------------------
# Git: a URL or name from a file is never an option, a command or another transport

FIX = (b"Description: fix\nAuthor: A <a@example.com>\n\n---\n"
       b"diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -1,2 +1,2 @@\n-one\n+ONE\n two\n")


def _dir_project(tmp_path: Path, git_url: str) -> Path:
    """A directory upstream whose pull requests go to `git_url` (the configuration's value)."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "a.py").write_bytes(b"one\ntwo\n")
    root = tmp_path / "stack"
    root.mkdir()
    ok(None, "init", "--standalone", cwd=root)
    ok(root, "upstream", "add", "site", "--dir", str(site), "--at", "installed")
    config = root / "patchforge.toml"
    config.write_text(config.read_text() + f"git-url = {json.dumps(git_url)}\n")
    (root / "series" / "site").mkdir(parents=True)
    (root / "series" / "site" / "fix.patch").write_bytes(FIX)
    (root / "series" / "site" / "series").write_bytes(b"fix.patch\n")
    return root


@pytest.mark.parametrize("url", [
    "--upload-pack=touch {marker};://x",
    "ext::sh -c touch% {marker}",
    "fd::3",
    "ssh://-oProxyCommand=touch% {marker}/x",
    "-oProxyCommand=touch {marker}:x",
    "https://example.org/x\n[core]\n\tsshCommand = touch {marker}",
])
def test_a_git_url_from_the_configuration_never_runs_a_command(tmp_path, url):
    marker = tmp_path / "RAN"
    root = _dir_project(tmp_path, url.format(marker=marker))
    run = run_cli(root, "pr", "fix")
    assert run.rc == 2, run.err
    assert not marker.exists()
    # The same value as an upstream's own URL, on `upstream add` and in the lock on `fetch`.
    run = run_cli(root, "upstream", "add", "evil", "--git", url.format(marker=marker), "--at", "main")
    assert run.rc == 2 and not marker.exists(), run.err
    doc = lock_doc(root)
    doc["upstreams"]["site"] = {"kind": "git", "commit": "1" * 40, "tree": "2" * 40,
                                "label": "main", "source": {"url": url.format(marker=marker)}}
    (root / "upstream.lock").write_text(json.dumps(doc))
    (root / "patchforge.toml").write_text(
        '[upstreams.site]\nkind = "git"\nurl = "placeholder"\n'.replace(
            "placeholder", json.dumps(url.format(marker=marker))[1:-1]))
    run = run_cli(root, "fetch")
    assert run.rc == 2 and not marker.exists(), run.err


def test_git_processes_may_use_only_plain_transports(tmp_path):
    """Even a URL that reached git some other way (a remote's `insteadOf`, an old store) cannot
    use `ext::`: every git process runs with GIT_ALLOW_PROTOCOL."""
    import subprocess

    from patchforge.store.git import git_env

    marker = tmp_path / "RAN"
    proc = subprocess.run(["git", "ls-remote", f"ext::sh -c touch% {marker}"],
                          env=git_env(), capture_output=True)
    assert proc.returncode != 0 and b"transport 'ext' not allowed" in proc.stderr
    assert not marker.exists()


def test_scp_style_urls_are_remote_everywhere(tmp_path, monkeypatch):
    """`host:repo.git` is ssh to `host`, as git reads it, in every command (an ssh stand-in
    records what git asked of it; nothing leaves the machine)."""
    from patchforge.store.giturl import is_local_git_url, source_identity

    assert not is_local_git_url("host:repo.git") and not is_local_git_url("git@host:r")
    assert is_local_git_url("./host:repo.git") and is_local_git_url("/srv/a:b")
    assert is_local_git_url("file:///srv/x") and not is_local_git_url("https://h/x")
    assert source_identity("git@github.com:ROCm/aiter.git") == \
        source_identity("https://github.com/ROCm/aiter/") == "github.com/ROCm/aiter"
    log = tmp_path / "ssh.log"
    ssh = tmp_path / "fake-ssh"
    ssh.write_text(f'#!/bin/sh\necho "$@" >> {log}\nexit 1\n')
    ssh.chmod(0o755)
    monkeypatch.setenv("GIT_SSH_COMMAND", str(ssh))
    root = _dir_project(tmp_path, "somehost:team/vllm.git")
    run = run_cli(root, "pr", "fix")
    assert run.rc == 2
    run = run_cli(root, "upstream", "add", "other", "--git", "somehost:team/vllm.git", "--at", "main")
    assert run.rc == 2
    calls = log.read_text().splitlines()
    assert len(calls) >= 2 and all("somehost" in call for call in calls)


# --------------------------------------------------------------------------------------------
# The shared store: keyed by source, and a pin is checked against its source

def _tagged_repo(where: Path, content: bytes) -> str:
    from helpers.git import git

    where.mkdir(parents=True)
    git(where, "init", "-q", "-b", "main")
    (where / "a.py").write_bytes(content)
    git(where, "add", "-A")
    git(where, "commit", "-q", "-m", "release")
    git(where, "tag", "v1")
    return git(where, "rev-parse", "HEAD").strip()


def _git_stack(root: Path, url: str, at: str = "v1") -> dict:
    root.mkdir(parents=True)
    ok(None, "init", "--standalone", cwd=root)
    ok(root, "upstream", "add", "vllm", "--git", url, "--at", at)
    return lock_doc(root)["upstreams"]["vllm"]


def test_two_projects_sharing_a_cache_never_pin_each_others_tags(tmp_path):
    fork = _tagged_repo(tmp_path / "rocm-vllm", b"fork\n")
    main = _tagged_repo(tmp_path / "vllm-project", b"main\n")
    assert _git_stack(tmp_path / "a", str(tmp_path / "rocm-vllm"))["commit"] == fork
    assert _git_stack(tmp_path / "b", str(tmp_path / "vllm-project"))["commit"] == main
    # Each project's overlays come from its own tree.
    for stack, content in (("a", b"fork\n"), ("b", b"main\n")):
        root = tmp_path / stack
        (root / "series" / "vllm").mkdir(parents=True)
        (root / "series" / "vllm" / "x.patch").write_bytes(
            b"Description: x\n\n---\ndiff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n"
            b"@@ -1 +1,2 @@\n " + content + b"+added\n")
        (root / "series" / "vllm" / "series").write_bytes(b"x.patch\n")
        ok(root, "overlays")
        assert (root / "overlays" / "vllm" / "a.py").read_bytes() == content + b"added\n"


def test_a_git_pin_must_be_a_commit_of_its_own_source(tmp_path):
    fork = _tagged_repo(tmp_path / "fork", b"fork\n")
    _tagged_repo(tmp_path / "other", b"other\n")
    _git_stack(tmp_path / "a", str(tmp_path / "fork"))
    b = tmp_path / "b"
    _git_stack(b, str(tmp_path / "other"))
    # B's lock edited to name A's commit: the store holds it, but not as a commit of B's source.
    doc = lock_doc(b)
    doc["upstreams"]["vllm"]["commit"] = fork
    (b / "upstream.lock").write_text(json.dumps(doc))
    run = run_cli(b, "fetch")
    assert run.rc == 2 and f"the locked commit {fork} is not a commit of" in run.err
    doc["upstreams"]["vllm"]["commit"] = "0123456789" * 4
    (b / "upstream.lock").write_text(json.dumps(doc))
    run = run_cli(b, "status")
    assert run.rc == 2 and "is not a commit of" in run.err, run.err
    assert "does not exist" not in run.err


def test_a_tampered_wheel_sha256_is_refused_with_a_warm_store(tmp_path, monkeypatch):
    monkeypatch.setenv("PATCHFORGE_WHEELS", str(tmp_path / "wheels"))
    build_wheel(tmp_path / "wheels", "tinypkg", "1.0", {"tinypkg/__init__.py": b"V = 1\n"})
    ok(None, "init", "--standalone", cwd=tmp_path)
    ok(tmp_path, "upstream", "add", "tiny", "--wheel", "tinypkg", "--at", "1.0")
    assert json.loads(ok(tmp_path, "fetch", "--json").out)["fetched"][0]["result"] == \
        "present"
    doc = lock_doc(tmp_path)
    doc["upstreams"]["tiny"]["source"]["sha256"] = "ab" * 32
    (tmp_path / "upstream.lock").write_text(json.dumps(doc))
    for command in (["fetch"], ["status"]):
        run = run_cli(tmp_path, *command)
        assert run.rc == 2 and "is not the import of" in run.err, run.err


# --------------------------------------------------------------------------------------------
# The configuration: validated against the published schema, with the offending key's line

@pytest.mark.parametrize("old, new, key, message", [
    ("[tool.patchforge.profiles]\n", '[tool.patchforge.profiles]\n"../../../x" = "escapes"\n',
     "profiles.../../../x", "is not a valid name"),
    ("[tool.patchforge]\n", '[tool.patchforge]\n'
     'compose-service = "inference\\n  evil:\\n    privileged: true"\n',
     "compose-service", "is not a valid compose-service"),
    ('api-url = "https://api.github.com"', "api-url = 5", "forge.api-url",
     "is not of type 'string'"),
    ('kind = "git"', 'kind = "git"\nsignoff = "false"', "upstreams.up.signoff",
     "is not of type 'boolean'"),
    ('kind = "git"', 'kind = "git"\ninstal-root = "/srv"', "upstreams.up.instal-root",
     "unknown key 'instal-root'"),
    ('kind = "git"', 'kind = "git"\npackage = "x @ file:///tmp/x"', "upstreams.up.package",
     "is not a valid package"),
    ("[tool.patchforge]\n", '[tool.patchforge]\ncolour = "always"\n', "colour",
     "unknown key 'colour'"),
])
def test_a_bad_configuration_is_refused_with_its_key_and_line(tmp_path, old, new, key, message):
    root, _ = git_project(tmp_path)
    config = root / "pyproject.toml"
    text = config.read_text()
    assert old in text
    text = text.replace(old, new, 1)
    config.write_text(text)
    before = sorted(p for p in tmp_path.rglob("*"))
    for command in (["overlays"], ["status"], ["list"]):
        run = run_cli(root, *command)
        assert run.rc == 2, run.err
        assert f"tool.patchforge.{key}: " in run.err and message in run.err, run.err
        line = int(run.err.split("pyproject.toml:")[1].split(":")[0])
        offending = key.rsplit(".", 1)[-1]
        assert offending.strip('"') in text.splitlines()[line - 1], (line, run.err)
    assert sorted(p for p in tmp_path.rglob("*")) == before


@pytest.mark.parametrize("name", ["a#b", "a b", "a\nb", "tab\there", "-rf", ".hidden",
                                  "dir/x", "quote'd", "nul\x00x", "esc\x1b]0;t\x07"])
def test_a_patch_name_the_series_file_cannot_hold_is_refused(tmp_path, name):

    root, _ = git_project(tmp_path)
    ok(root, "new", "good")
    before = tree_bytes(root)
    run = run_cli(root, "new", "--", name)
    assert run.rc == 2 and "cannot be written to a series file" in run.err, run.err
    run = run_cli(root, "rename", "good", "--", name)
    assert run.rc == 2 and "cannot be written to a series file" in run.err, run.err
    assert tree_bytes(root) == before
    assert "up/good.patch" in ok(root, "list").out
