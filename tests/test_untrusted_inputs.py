"""Everything around the patches is input too: config, lock, names, the store, the network.

A stack repository's `upstream.lock` and configuration arrive by pull request, like a patch. These
tests attack them through the real command line, with real pip (a local package directory that
would write a marker file if anything built it), real git and real HTTP servers on 127.0.0.1.
"""
from __future__ import annotations

import hashlib
import html
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from helpers.cli import ok, run_cli, run_subprocess
from helpers.project import add_patch_file, git_project, lock_doc, patch_bytes
from helpers.snapshot import tree_bytes
from helpers.upstream import build_wheel, diff_of

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
        '[upstreams.w]\nkind = "wheel"\npackage = "evilpkg"\ninstall-root = "/srv"\n')
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


def _member_as_deflate(wheel: Path, member: str, content: bytes, raw: bytes) -> None:
    """Make `member` of `wheel` (written stored, holding `raw`) a deflate member whose
    compressed bytes are `raw` and whose size and CRC are `content`'s: the shapes other zip
    writers make, which zipfile (and so pip) read as `content`."""
    import struct
    import zlib

    data = bytearray(wheel.read_bytes())
    name = member.encode()
    for signature, name_at, length_at, method_at, sizes_at in (
            (b"PK\x03\x04", 30, 26, 8, 14), (b"PK\x01\x02", 46, 28, 10, 16)):
        position = 0
        while (position := data.find(signature, position)) >= 0:
            length = struct.unpack_from("<H", data, position + length_at)[0]
            if bytes(data[position + name_at:position + name_at + length]) == name:
                struct.pack_into("<H", data, position + method_at, 8)
                struct.pack_into("<III", data, position + sizes_at, zlib.crc32(content),
                                 len(raw), len(content))
            position += 4
    wheel.write_bytes(bytes(data))
    assert zipfile.ZipFile(wheel).read(member) == content


def test_a_wheel_member_zipfile_reads_whatever_its_deflate_stream_ends_with_is_imported(
        tmp_path, monkeypatch):
    """A wheel's member whose deflate stream ends at a flush, without a final block (every byte
    there, its size and CRC right), and an empty member marked deflate with no compressed byte
    at all: zipfile and pip read them, and `upstream add --wheel` failed with an internal error
    (zlib's "incomplete or truncated stream", exit 70). Both are imported, their bytes as pip
    installs them."""
    import zlib

    wheels = tmp_path / "wheels"
    monkeypatch.setenv("PATCHFORGE_WHEELS", str(wheels))
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    content = b"".join(b"line %d\n" % i for i in range(1, 21))
    compressor = zlib.compressobj(6, zlib.DEFLATED, -15)
    flushed = compressor.compress(content) + compressor.flush(zlib.Z_SYNC_FLUSH)
    # build_wheel stores each member (ZipInfo's method): made deflate members of these bytes.
    wheel = build_wheel(wheels, "demo", "1.0", {"demo/__init__.py": flushed,
                                                 "demo/py.typed": b""})
    _member_as_deflate(wheel, "demo/__init__.py", content, flushed)
    _member_as_deflate(wheel, "demo/py.typed", b"", b"")
    root = tmp_path / "stack"
    root.mkdir()
    ok(None, "init", "--standalone", str(root))
    ok(root, "upstream", "add", "w", "--wheel", "demo", "--at", "1.0", "--install-root", "/srv")
    ok(root, "new", "fix", "--file", "demo/__init__.py", "--file", "demo/py.typed")
    work = root / ".patchforge" / "work" / "w" / "demo"
    assert (work / "__init__.py").read_bytes() == content
    assert (work / "py.typed").read_bytes() == b""


def test_a_wheel_whose_member_name_says_utf8_and_is_not_is_refused_naming_it(tmp_path,
                                                                              monkeypatch):
    """A member name flagged UTF-8 (zip flag bit 11) whose bytes are not UTF-8: `upstream add
    --wheel` failed with an internal error (UnicodeDecodeError, exit 70). Refused as any
    unreadable wheel is, naming it, nothing written."""
    wheels = tmp_path / "wheels"
    monkeypatch.setenv("PATCHFORGE_WHEELS", str(wheels))
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    wheel = build_wheel(wheels, "demo", "1.0", {"demo/__init__.py": b"x = 1\n",
                                                 "demo/\u00e9.py": b"y = 2\n"})
    wheel.write_bytes(wheel.read_bytes().replace(b"demo/\xc3\xa9.py", b"demo/\xff\xa9.py"))
    root = tmp_path / "stack"
    root.mkdir()
    ok(None, "init", "--standalone", str(root))
    before = tree_bytes(root, skip=(".patchforge",))
    run = run_cli(root, "upstream", "add", "w", "--wheel", "demo", "--at", "1.0",
                  "--install-root", "/srv")
    assert run.rc == 2 and f"cannot read wheel {wheel}" in run.err, run.text
    assert tree_bytes(root, skip=(".patchforge",)) == before


def _add_from_another_cache(root: Path, monkeypatch, wheel: Path, machine: str) -> None:
    """`upstream add w` of `wheel` as another machine ran it: from that machine's own wheel
    cache and store (`<machine>-cache`, `<machine>-store`), so this project's cache lacks it."""
    elsewhere = root / f"{machine}-cache"
    elsewhere.mkdir()
    shutil.copy(wheel, elsewhere / wheel.name)
    with monkeypatch.context() as there:
        there.setenv("PATCHFORGE_WHEELS", str(elsewhere))
        there.setenv("PATCHFORGE_CACHE", str(root / f"{machine}-store"))
        ok(root, "--offline", "upstream", "add", "w", "--wheel", "evilpkg", "--at", "1.0",
           "--install-root", "/srv")


def test_fetch_downloads_exactly_the_recorded_wheel_for_its_own_tags(evil, monkeypatch):
    """A lock made on Windows for CPython 3.11 fetches that very file on this Linux machine, even
    with other builds of the version (and the sdist) beside it."""
    root, index, _, marker = evil
    filename = "evilpkg-1.0-cp311-cp311-win_amd64.whl"
    wanted = _foreign_wheel(index, filename, b"WINDOWS = True\n")
    _foreign_wheel(index, "evilpkg-1.0-py3-none-any.whl", b"ANY = True\n")
    _foreign_wheel(index, "evilpkg-1.0-cp311-cp311-manylinux_2_17_x86_64.whl", b"LINUX = True\n")
    # The lock, as the Windows machine wrote it (its own cache held the file).
    _add_from_another_cache(root, monkeypatch, wanted, "windows")
    assert lock_doc(root)["upstreams"]["w"]["source"]["filename"] == filename
    run = ok(root, "fetch", "--json")
    assert json.loads(run.out)["fetched"][0]["result"] == "imported"
    cached = root / "wheels" / filename
    assert cached.read_bytes() == wanted.read_bytes()
    assert sorted(p.name for p in (root / "wheels").iterdir() if p.name != ".gitkeep") \
        == [filename, filename + ".origin.json"]
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


def test_a_cached_wheel_cut_short_is_downloaded_again_and_named_offline(evil, monkeypatch):
    """The wheel cache holds the lock's file name with other bytes (a copy cut short, a cache
    restored from elsewhere). Before, every `fetch` refused it ("the upstream.lock pin or the
    cached file is wrong", naming neither path) and never downloaded it again, though the lock
    is right. Now, with the network, pip downloads the pinned file (its digest checked) and it
    replaces the cached one; offline the message names the cached file to remove."""
    root, index, _, marker = evil
    filename = "evilpkg-1.0-py3-none-any.whl"
    wanted = _foreign_wheel(index, filename, b"RIGHT = True\n")
    _add_from_another_cache(root, monkeypatch, wanted, "other")
    cached = root / "wheels" / filename
    cached.parent.mkdir(exist_ok=True)
    cached.write_bytes(wanted.read_bytes()[:100])
    before = tree_bytes(root, skip=("wheels",))
    offline = run_cli(root, "--offline", "fetch")
    assert offline.rc == 2 and str(cached) in offline.err, offline.err
    assert "--offline" in offline.err
    run = run_cli(root, "fetch", "--json")
    assert run.rc == 0, run.err
    assert json.loads(run.out)["fetched"][0]["result"] == "imported"
    assert cached.read_bytes() == wanted.read_bytes()
    assert tree_bytes(root, skip=("wheels",)) == before
    assert not marker.exists()


@pytest.mark.parametrize("memo", [b"[]\n", b'"x"\n', b"[" * 100000 + b"]" * 100000],
                         ids=["a-list", "a-string", "nested-too-deep"])
def test_a_damaged_memo_of_wheel_digests_is_hashed_again(evil, memo):
    """The cache's wheel-digests.json holding JSON that is not an object (a hand edit, a bad
    merge of a shared cache) or nested a hundred thousand deep: every command that hashes
    the wheel ended in an internal error (AttributeError, RecursionError), where a file cut
    short was hashed again. Now it is hashed again too, and the memo written anew."""
    root, index, _, _ = evil
    (root / "wheels").mkdir()
    wheel = _foreign_wheel(root / "wheels", "evilpkg-1.0-py3-none-any.whl", b"X = 1\n")
    ok(root, "--offline", "upstream", "add", "w", "--wheel", "evilpkg", "--at", "1.0",
       "--install-root", "/srv")
    memo_path = Path(os.environ["PATCHFORGE_CACHE"]) / "wheel-digests.json"
    memo_path.write_bytes(memo)
    shutil.rmtree(Path(os.environ["PATCHFORGE_CACHE"]) / "store.git")
    run = run_cli(root, "--offline", "status")
    assert run.rc == 0, run.err
    assert [entry["sha256"] for entry in json.loads(memo_path.read_bytes()).values()] == \
        [hashlib.sha256(wheel.read_bytes()).hexdigest()]


def test_a_wheel_cache_that_is_a_file_is_named_as_such(evil, monkeypatch):
    """PATCHFORGE_WHEELS naming a file: before, `upstream add --wheel` failed with the OS's
    "File exists: <path>" and the hint to run the command again, which fails the same way.
    Now the message names the variable and what is wrong, and nothing is written."""
    root, index, _, marker = evil
    _foreign_wheel(index, "evilpkg-1.0-py3-none-any.whl", b"RIGHT = True\n")
    not_a_directory = root / "wheels-file"
    not_a_directory.write_bytes(b"x")
    monkeypatch.setenv("PATCHFORGE_WHEELS", str(not_a_directory))
    before = tree_bytes(root, skip=(".patchforge",))  # its lock file is made, and empty
    run = run_cli(root, "upstream", "add", "w", "--wheel", "evilpkg", "--at", "1.0.0",
                  "--install-root", "/srv")
    assert run.rc == 2, run.text
    assert f"PATCHFORGE_WHEELS {not_a_directory}: cannot download a wheel there" in run.err
    assert "run the command again" not in run.err
    assert tree_bytes(root, skip=(".patchforge",)) == before and not marker.exists()


def test_a_release_the_index_does_not_have_gets_no_hint_to_name_it_in_full(evil):
    """`upstream add --wheel evilpkg --at 2.0` where the index has no 2.0 at all: pip's "No
    matching distribution" came with the hint "a wheel version is named in full: 2.0.0, not
    2.0", which sends the user after a release that is not there either (pip takes 2.0 for
    2.0.0). The hint is now given only when a wheel of the full version came or is cached."""
    root, index, _, marker = evil
    _foreign_wheel(index, "evilpkg-1.0-py3-none-any.whl", b"ONE = True\n")
    run = run_cli(root, "upstream", "add", "w", "--wheel", "evilpkg", "--at", "2.0",
                  "--install-root", "/srv")
    assert run.rc == 2 and "No matching distribution" in run.err, run.err
    assert "named in full" not in run.err, run.err
    assert not marker.exists()


def _simple_index(files: dict[str, bytes], served: list[str] | None = None,
                  yanked: dict[str, str] | None = None):
    """A package index for toypkg on 127.0.0.1 (PEP 503's simple pages, over HTTP) serving
    `files` (wheel name -> bytes): its page links each with its sha256, marked yanked with
    the reason `yanked` gives for its name; each file fetched is appended to `served`. The
    caller closes it."""
    from helpers.servers import Answer, TestServer

    class Index(TestServer):
        def route(self, method, path, query, req):
            if path == "/simple/toypkg/":
                links = "".join(
                    f'<a href="/files/{name}#sha256={hashlib.sha256(data).hexdigest()}"'
                    + (f' data-yanked="{yanked[name]}"' if yanked and name in yanked else "")
                    + f">{name}</a>\n" for name, data in sorted(files.items()))
                return Answer(200, f"<html><body>{links}</body></html>".encode(),
                              {"Content-Type": "text/html"})
            name = path.rsplit("/", 1)[-1]
            if path.startswith("/files/") and name in files:
                if served is not None:
                    served.append(name)
                return Answer(200, files[name], {"Content-Type": "application/octet-stream"})
            return Answer(404, b"")

    return Index()


def test_a_yanked_release_is_pinned_with_a_warning_giving_the_reason(tmp_path, monkeypatch):
    """A package index (PEP 503's simple pages, over HTTP on 127.0.0.1) marks toypkg 1.0
    yanked, with a reason. pip downloads an exact `==1.0` of it all the same, saying so on its
    standard error only, which patchforge dropped: `upstream add --wheel toypkg --at 1.0`
    pinned the withdrawn release, exit 0, without a word. A release not yanked says nothing."""
    files = {w.name: w.read_bytes() for w in (
        build_wheel(tmp_path / "built", "toypkg", version, {"toypkg/m.py": body})
        for version, body in (("1.0", b"A = 1\n"), ("1.1", b"A = 2\n")))}
    index = _simple_index(files, yanked={name: "broken build: do not use"
                                         for name in files if "-1.0-" in name})
    try:
        monkeypatch.setenv("PIP_INDEX_URL", f"{index.url}/simple")
        monkeypatch.setenv("PIP_FIND_LINKS", "")
        monkeypatch.setenv("PATCHFORGE_WHEELS", str(tmp_path / "wheels"))
        root = tmp_path / "project"
        ok(None, "init", "--standalone", str(root))
        run = run_cli(root, "upstream", "add", "toy", "--wheel", "toypkg", "--at", "1.0",
                      "--install-root", "/opt/site")
        assert run.rc == 0, run.text
        said = " ".join(run.err.split())
        assert "warning: toypkg 1.0 is yanked on the package index" in said, run.err
        assert "broken build: do not use" in said, run.err
        run = run_cli(root, "rebase", "--to", "toy=1.1")
        assert run.rc == 0 and "yanked" not in run.err, run.text
    finally:
        index.close()


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


@pytest.mark.parametrize("where", ["absolute", "outside", "inside"])
def test_a_dir_pin_is_read_from_the_configured_directory_only(tmp_path, monkeypatch, where):
    """A dir upstream was imported from the lock's `source.path` (absolute, or `..` out of the
    project), not the configured `path`: a lock from a pull request had `fetch` read any
    directory into the cache, then said "the source changed under the pin". A lock naming
    another directory than the configuration is refused with its line, before anything is
    read; `upstream pin --force` re-pins from the configured one."""
    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / "a.py").write_bytes(b"TOP SECRET\n")
    root = _dir_project(tmp_path, "https://example.org/x.git")
    (root / "inner").mkdir()
    (root / "inner" / "a.py").write_bytes(b"TOP SECRET\n")
    path = {"absolute": str(secret), "outside": "../secret", "inside": "inner"}[where]
    ok(root, "upstream", "pin", "site", "--at", "installed", "--force")
    doc = lock_doc(root)
    pin = json.loads(json.dumps(doc["upstreams"]["site"]))
    doc["upstreams"]["site"]["source"]["path"] = path
    (root / "upstream.lock").write_text(json.dumps(doc, indent=2) + "\n")
    monkeypatch.setenv("PATCHFORGE_CACHE", str(tmp_path / "fresh-cache"))
    line = next(n for n, text in enumerate((root / "upstream.lock").read_text().splitlines(), 1)
                if json.dumps(path) in text)
    before = tree_bytes(root)
    for command in (["fetch"], ["status"], ["overlays"]):
        run = run_cli(root, *command)
        assert run.rc == 2, (command, run.err)
        assert f"upstream.lock:{line}: upstreams.site.source.path" in run.err, run.err
        assert "nothing was read" in run.err and "source changed" not in run.err, run.err
    assert tree_bytes(root) == before
    store = tmp_path / "fresh-cache" / "store.git"
    if store.is_dir():
        assert b"TOP SECRET" not in subprocess.run(
            ["git", "--git-dir", str(store), "cat-file", "--batch-all-objects", "--batch"],
            capture_output=True).stdout
    ok(root, "upstream", "pin", "site", "--at", "installed", "--force")
    assert lock_doc(root)["upstreams"]["site"]["source"] == pin["source"]
    ok(root, "fetch")
    ok(root, "overlays")


def test_a_dir_pin_whose_path_is_written_another_way_is_the_same_directory(tmp_path):
    """Pinned with `--dir /x/site/`, the configuration then tidied to `/x/site` (or `./site`
    beside the project written `site`): every command refused it, exit 2, "pinned from
    directory '/x/site/', but patchforge.toml configures it as '/x/site'", wanting a re-pin of
    the very directory the pin was made from. The same directory written another way is the
    same directory; another one is still refused."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "a.py").write_bytes(b"one\ntwo\n")
    root = tmp_path / "stack"
    root.mkdir()
    ok(None, "init", "--standalone", cwd=root)
    ok(root, "upstream", "add", "site", "--dir", f"{site}/", "--at", "installed")
    config = root / "patchforge.toml"
    assert f'path = "{site}/"' in config.read_text()
    for written in (str(site), f"{site}//", f"{tmp_path}/./site", "../site"):
        config.write_text(config.read_text().replace(f'path = "{site}/"', f'path = "{written}"'))
        ok(root, "status")
        ok(root, "new", "fix", "--file", "a.py")
        ok(root, "edit", "--close")
        ok(root, "delete", "fix")
        config.write_text(config.read_text().replace(f'path = "{written}"', f'path = "{site}/"'))
    (tmp_path / "other").mkdir()
    config.write_text(config.read_text().replace(f'path = "{site}/"', f'path = "{tmp_path}/other"'))
    run = run_cli(root, "status")
    assert run.rc == 2 and "upstreams.site.source.path" in run.err, run.text


def test_a_git_pin_recorded_from_another_repository_is_read_from_the_configured_one(tmp_path):
    """upstream.lock's `source.url` was never compared with the configured `url`: a lock merged
    from a branch that configured a fork or a mirror (its configuration merged back to the
    upstream's) went on saying so, unsaid, and a fork's commit was refused as "not a commit"
    with no word of the lock's other repository. The configured repository is the one read:
    every command that reads the pin says, naming both files' lines, that the lock records
    another; a commit the configured repository lacks is refused so (exit 2, nothing
    written); the same repository written another way is not another; the ledger names the
    configured one; `upstream pin --force` records it."""
    root, base = git_project(tmp_path)
    config = root / "pyproject.toml"
    upstream = tmp_path / "up-upstream"
    diff = diff_of(tmp_path / "scratch", "pkg/b.py", b"x = 1\ny = 2\nz = 3\n",
                   b"x = 1\ny = 20\nz = 3\n")
    add_patch_file(root, "up", "fix.patch", patch_bytes("up", base, "y is 20", diff))
    ok(root, "overlays")
    mine = config.read_text()
    config_line = next(n for n, text in enumerate(mine.splitlines(), 1)
                       if text.startswith("url = ") and json.dumps(str(upstream)) in text)
    mirror, fork = tmp_path / "mirror.git", tmp_path / "fork"
    subprocess.run(["git", "clone", "-q", "--bare", str(upstream), str(mirror)], check=True)
    subprocess.run(["git", "clone", "-q", str(upstream), str(fork)], check=True)
    (fork / "a.py").write_bytes(b"FORK ONLY\n")
    subprocess.run(["git", "-C", str(fork), "commit", "-qam", "fork: its own change"],
                   check=True)

    def merged_from_a_branch_pinned_at(other: Path) -> int:
        """The other branch configured and pinned `other`; the merge took this branch's
        configuration and that branch's lock. The lock's line of `source.url`."""
        config.write_text(mine.replace(json.dumps(str(upstream)), json.dumps(str(other))))
        ok(root, "upstream", "pin", "up", "--at", "main", "--force")
        config.write_text(mine)
        return next(n for n, text in enumerate(
            (root / "upstream.lock").read_text().splitlines(), 1) if json.dumps(str(other)) in text)

    said = (f"pins up from {{!r}}, but pyproject.toml:{config_line} configures "
            f"{str(upstream)!r}")
    line = merged_from_a_branch_pinned_at(fork)
    assert lock_doc(root)["upstreams"]["up"]["commit"] != base
    before = tree_bytes(root)
    for command in (["status"], ["overlays"], ["fetch"], ["check"], ["edit", "fix"]):
        run = run_cli(root, *command)
        assert run.rc == 2, (command, run.rc, run.err)
        assert "is not a commit of the configured repository: upstream.lock:" \
            f"{line}: " + said.format(str(fork)) in run.err, run.err
        assert "upstream pin up --at main --force" in run.err, run.err
        assert tree_bytes(root) == before, command

    line = merged_from_a_branch_pinned_at(mirror)
    assert lock_doc(root)["upstreams"]["up"]["commit"] == base
    for command in (["status"], ["overlays"], ["fetch"], ["check"], ["edit", "fix"]):
        run = ok(root, *command)
        assert f"note: upstream.lock:{line}: " + said.format(str(mirror)) in run.err, \
            (command, run.err)
        assert run.err.count("note: upstream.lock") == 1, run.err
    ok(root, "refresh")
    ok(root, "ledger")
    ledger = (root / "series" / "PATCHES.md").read_text()
    assert f"git {upstream}" in ledger and str(mirror) not in ledger, ledger
    # The same repository written as a file:// URL with a trailing slash is not another.
    config.write_text(mine.replace(json.dumps(str(upstream)), json.dumps(f"file://{mirror}/")))
    assert "note:" not in ok(root, "status").err
    config.write_text(mine)
    ok(root, "upstream", "pin", "up", "--at", "main", "--force")
    assert lock_doc(root)["upstreams"]["up"]["source"]["url"] == str(upstream)
    assert "note:" not in ok(root, "status").err


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
    # Said as the configuration's error where it is written, not as a network problem.
    assert "patchforge.toml:" in run.err and "upstreams.site.git-url" in run.err, run.err
    assert "network" not in run.err, run.err
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
    assert "patchforge.toml:3: upstreams.site.url" in run.err, run.err
    assert "network" not in run.err, run.err


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


def _stack_pinned_at_v1_with_a_fix_dropped_at_v2(tmp_path: Path, *tag_options: str):
    """A git upstream with v1 and v2 (tagged with `tag_options`, e.g. `-a -m MSG` for an
    annotated tag), a stack pinned at v1 whose one fix says `Drop-When: vllm>=2`: (the stack's
    root, v2's commit)."""
    from helpers.git import commit_files, git

    upstream = tmp_path / "up"
    _tagged_repo(upstream, b"a = 1\nb = 2\nc = 3\n")
    v2 = commit_files(upstream, {"a.py": b"a = 1\nb = 2\nc = 4\n"}, "v2")
    git(upstream, "tag", *tag_options, "v2")
    root = tmp_path / "stack"
    _git_stack(root, str(upstream))
    ok(root, "new", "fix", "--file", "a.py")
    (root / ".patchforge/work/vllm/a.py").write_bytes(b"a = 11\nb = 2\nc = 3\n")
    ok(root, "refresh")
    patch = root / "series/vllm/fix.patch"
    patch.write_bytes(patch.read_bytes().replace(b"\n\n", b"\nDrop-When: vllm>=2\n\n", 1))
    return root, v2


@pytest.mark.parametrize("setting", [
    # patchforge's own upload-pack with a command in front: run by every blob fetch.
    ("remote.{ns}.uploadpack", "touch {marker}; git -c uploadpack.allowFilter=true "
                               "-c uploadpack.allowAnySHA1InWant=true upload-pack"),
    # Another promisor remote: git's own fetch of a missing blob asks every one of them.
    ("remote.planted.uploadpack", "touch {marker}; git-upload-pack"),
    ("core.sshCommand", "touch {marker}"),
])
def test_a_command_in_the_caches_store_config_is_never_run(tmp_path, monkeypatch, setting):
    """A cache is not always the user's own: a shared one, a copied one, or one inside the
    stack's checkout (a CI cache restored into the workspace). A command written into its
    store.git/config (a remote's upload-pack, which a blob fetch runs) is refused, named with
    the file, before git reads that file; a clean cache works as before."""
    from helpers.git import git

    monkeypatch.setenv("PATCHFORGE_CACHE", str(tmp_path / "cache"))
    root, _ = git_project(tmp_path)
    store = tmp_path / "cache" / "store.git"
    ns = git(store, "config", "--get-regexp", r"^remote\..*\.url$").split()[0].split(".")[1:-1]
    key, value = setting
    marker = tmp_path / "RAN"
    if key.startswith("remote.planted."):
        git(store, "config", "remote.planted.url", str(tmp_path / "up-upstream"))
        git(store, "config", "remote.planted.promisor", "true")
    git(store, "config", key.format(ns=".".join(ns)), value.format(marker=marker))
    before = tree_bytes(root)
    for command in (["new", "fix1", "-m", "x", "--file", "pkg/b.py"], ["status"], ["fetch"]):
        run = run_cli(root, *command)
        assert run.rc == 2, (command, run.err)
        assert not marker.exists(), command
        assert f"{store / 'config'}" in run.err and "nothing was run" in run.err, run.err
    assert tree_bytes(root) == before
    # The setting taken out, the same cache serves again.
    git(store, "config", "--unset", key.format(ns=".".join(ns)))
    if key.startswith("remote.planted."):
        git(store, "config", "--remove-section", "remote.planted")
    # What an older git's filtered fetch records itself is the store's too.
    git(store, "config", "extensions.partialClone", ".".join(ns))
    ok(root, "new", "fix1", "-m", "x", "--file", "pkg/b.py")
    assert not marker.exists()


def test_a_cache_among_the_files_a_commit_brings_is_refused(tmp_path, monkeypatch):
    """A CI job whose cache is under the workspace (`.cache/patchforge`, as the Action's
    default was) checks out a pull request that committed files there: a store.git/config of
    its choosing, a mark that its configuration was validated, wheels, forge answers. A cache
    holding files the project's git tracks is refused before anything is read; one git
    ignores, the CI cache's usual place, is used as before."""
    from helpers.git import git

    root, _ = git_project(tmp_path)
    monkeypatch.setenv("PATCHFORGE_CACHE", str(root / ".cache" / "patchforge"))
    git(root, "init", "-q")
    (root / ".gitignore").write_text(".cache/\n")
    ok(root, "new", "fix1", "-m", "x", "--file", "pkg/b.py")
    ok(root, "status")
    git(root, "add", "-f", ".cache/patchforge/store.git/config")
    git(root, "commit", "-q", "-m", "a cache of the commit's own")
    before = tree_bytes(root)
    for command in (["status"], ["fetch"], ["lint"]):
        run = run_cli(root, *command)
        assert run.rc == 2, (command, run.text)
        assert "PATCHFORGE_CACHE puts the cache" in run.err and \
            "among files the project's git tracks (.cache/patchforge/store.git/config)" in run.err, \
            run.err
    assert tree_bytes(root) == before
    git(root, "rm", "-q", "--cached", ".cache/patchforge/store.git/config")
    ok(root, "status")


@pytest.mark.parametrize("label", ["2026/.hidden", "2026/12.lock/a"])
def test_a_label_a_part_of_which_git_refuses_is_refused_before_any_import(tmp_path, label):
    """A `dir` upstream's label is a ref name under refs/patchforge/: a part of it that begins
    with `.` or ends in `.lock` passed the label check, which looked at the whole label only;
    git fast-import then refused the ref ("Branch name doesn't conform to GIT standards") and
    left a `fast_import_crash_NNN` report in the shared store at every try. Refused before
    anything runs now, naming the label; the store holds no crash report."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "m.py").write_text("a = 1\n")
    ok(None, "init", "--standalone", str(tmp_path / "project"))
    root = tmp_path / "project"
    ok(root, "upstream", "add", "d", "--dir", str(site), "--at", "first",
       "--install-root", "/opt/site")
    (site / "m.py").write_text("a = 2\n")
    run = run_cli(root, "upstream", "pin", "d", "--at", label, "--force")
    assert run.rc == 2, run.text
    assert f"invalid label '{label}': it must be usable in a git ref name" in run.err, run.err
    store = Path(os.environ["PATCHFORGE_CACHE"]) / "store.git"
    assert not list(store.glob("fast_import_crash_*"))


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


def test_two_projects_sharing_a_cache_fetch_one_upstream_at_the_same_time(tmp_path):
    """Two projects on one upstream and one cache, each asking for its moving branch at the
    same moment (two CI jobs, two terminals). Before, git refused one of the fetches' ref
    updates ('cannot lock ref ...: is at X but expected Y') and that command failed with exit
    2. The store's writes now take turns on a kernel lock (store.git/patchforge.lock): a fetch
    waits while another process holds it, and every concurrent command succeeds."""
    import fcntl
    import subprocess
    import sys
    import time

    from helpers.git import commit_files

    upstream = tmp_path / "up"
    _tagged_repo(upstream, b"base\n")
    roots = [tmp_path / "a", tmp_path / "b"]
    for root in roots:
        _git_stack(root, str(upstream))

    def start(root):
        return subprocess.Popen([sys.executable, "-m", "patchforge", "--root", str(root),
                                 "status", "--against", "vllm=main"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    for round_ in range(1):
        commit_files(upstream, {"a.py": b"round %d\n" % round_}, f"round {round_}")
        procs = [start(root) for root in roots * 2]
        for proc in procs:
            out, err = proc.communicate(timeout=120)
            assert proc.returncode in (0, 1), err.decode()
    # The lock is what orders them: held here, a fetch waits for it.
    commit_files(upstream, {"a.py": b"held\n"}, "held")
    lock = os.open(os.environ["PATCHFORGE_CACHE"] + "/store.git/patchforge.lock",
                   os.O_CREAT | os.O_RDWR)
    fcntl.flock(lock, fcntl.LOCK_EX)
    try:
        proc = start(roots[0])
        time.sleep(2)
        assert proc.poll() is None, proc.communicate()
    finally:
        fcntl.flock(lock, fcntl.LOCK_UN)
        os.close(lock)
    proc.communicate(timeout=120)
    assert proc.returncode in (0, 1)


def test_a_command_waiting_for_the_shared_cache_says_for_whom(tmp_path):
    """A command waiting for the shared cache's lock (another command importing a wheel, for
    minutes) sat silent. It now says, on a line of its own, that it waits and for which
    process, as the project lock's refusal names its holder; then goes on once it is free."""
    import fcntl
    import subprocess
    import sys
    import threading

    from helpers.git import commit_files

    upstream = tmp_path / "up"
    _tagged_repo(upstream, b"base\n")
    root = tmp_path / "a"
    _git_stack(root, str(upstream))
    commit_files(upstream, {"a.py": b"held\n"}, "held")
    lock = os.open(os.environ["PATCHFORGE_CACHE"] + "/store.git/patchforge.lock",
                   os.O_CREAT | os.O_RDWR)
    fcntl.flock(lock, fcntl.LOCK_EX)
    os.write(lock, f"{os.getpid()}\n".encode())  # as a holder does
    released = threading.Event()

    def release():
        if not released.is_set():
            released.set()
            fcntl.flock(lock, fcntl.LOCK_UN)

    # Only a guard: were nothing said, the command would otherwise wait here for ever.
    guard = threading.Timer(300, release)
    guard.start()
    try:
        proc = subprocess.Popen([sys.executable, "-m", "patchforge", "--root", str(root),
                                 "status", "--against", "vllm=main"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        said = proc.stderr.readline().decode()
        waited = not released.is_set()
        release()
        out, err = proc.communicate(timeout=300)
    finally:
        guard.cancel()
        release()
        os.close(lock)
    assert waited and said.startswith(
        f"patchforge: waiting for another patchforge process (pid {os.getpid()}) writing to "
        "the shared cache"), said + err.decode()
    assert proc.returncode in (0, 1), err.decode()


def test_a_lock_key_written_twice_is_refused_naming_its_line(tmp_path):
    """A lock that arrives by pull request with the pin's commit written twice in one object:
    a reviewer reads the first, while json kept the last and the project was built from it
    without a word. Now the lock is refused, exit 2, naming the key and the line of the
    second."""
    _tagged_repo(tmp_path / "up", b"released\n")
    root = tmp_path / "a"
    pin = _git_stack(root, str(tmp_path / "up"))
    text = (root / "upstream.lock").read_text()
    commit_line = f'      "commit": "{pin["commit"]}",\n'
    assert commit_line in text
    text = text.replace(commit_line, commit_line + '      "commit": "' + "1" * 40 + '",\n')
    (root / "upstream.lock").write_text(text)
    line = text.splitlines().index('      "commit": "' + "1" * 40 + '",') + 1
    for command in (["status"], ["fetch"], ["overlays"]):
        run = run_cli(root, *command)
        assert run.rc == 2 and f"upstream.lock:{line}: " in run.err \
            and '"commit" is written twice' in run.err, (command, run.err)


@pytest.mark.parametrize("edit, key", [
    (lambda d: d.update(comment="pinned by hand for the release"), "comment"),
    (lambda d: d["upstreams"]["vllm"].update(note="x"), "upstreams.vllm.note"),
    (lambda d: d["upstreams"]["vllm"]["source"].update(ref="main"), "upstreams.vllm.source.ref"),
])
def test_a_lock_key_the_schema_does_not_have_is_refused_naming_its_line(tmp_path, edit, key):
    """A hand-merged lock with a `comment` at the top or a `note` in a pin, which
    lock.schema.json refuses: every command read it without a word, and the next
    `upstream pin` wrote the lock without it, silently. Now it is refused, exit 2, naming the
    key and its line, and nothing is written."""
    _tagged_repo(tmp_path / "up", b"released\n")
    root = tmp_path / "a"
    _git_stack(root, str(tmp_path / "up"))
    doc = lock_doc(root)
    edit(doc)
    text = json.dumps(doc, indent=2, sort_keys=True) + "\n"
    (root / "upstream.lock").write_text(text)
    name = key.rsplit(".", 1)[-1]
    line = next(n for n, l in enumerate(text.splitlines(), 1) if l.strip().startswith(f'"{name}"'))
    for command in (["status"], ["lint"], ["overlays"], ["upstream", "pin", "vllm", "--at", "v1",
                                                          "--force"]):
        run = run_cli(root, *command)
        assert run.rc == 2 and f"upstream.lock:{line}: {key}: not a key of upstream.lock" \
            in run.err, (command, run.err)
    assert (root / "upstream.lock").read_text() == text


def test_a_lock_or_manifest_nested_too_deep_is_refused_naming_it(tmp_path):
    """A pull request leaves upstream.lock with a key whose value is nested a hundred
    thousand deep (200 KB), or overlays/manifest.json so: `status` and `verify` ended in an
    internal error (RecursionError). Now the file is named, exit 2, nothing written."""
    root, _ = git_project(tmp_path)
    ok(root, "overlays")
    lock = root / "upstream.lock"
    good = lock.read_bytes()
    deep = b"[" * 100000 + b"]" * 100000
    lock.write_bytes(good.rstrip().rstrip(b"}") + b', "x": ' + deep + b"}\n")
    before = tree_bytes(root)
    for command in (["status"], ["overlays"], ["fetch"]):
        run = run_cli(root, *command)
        assert run.rc == 2, (command, run.err)
        assert f"{lock}: not valid JSON: nested deeper than patchforge reads" in run.err, run.err
    assert tree_bytes(root) == before
    lock.write_bytes(good)
    manifest = root / "overlays" / "manifest.json"
    manifest.write_bytes(deep)
    run = run_cli(root, "verify")
    assert run.rc == 2, run.err
    assert f"{manifest}: not valid JSON: nested deeper than patchforge reads" in run.err


def test_a_git_pin_must_be_a_commit_of_its_own_source(tmp_path):
    fork = _tagged_repo(tmp_path / "fork", b"fork\n")
    _tagged_repo(tmp_path / "other", b"other\n")
    _git_stack(tmp_path / "a", str(tmp_path / "fork"))
    b = tmp_path / "b"
    _git_stack(b, str(tmp_path / "other"))
    # B's lock edited to name A's commit (and its tree, as a whole pin would): the store holds
    # it, but not as a commit of B's source.
    from helpers.git import git

    doc = lock_doc(b)
    doc["upstreams"]["vllm"]["commit"] = fork
    doc["upstreams"]["vllm"]["tree"] = git(tmp_path / "fork", "rev-parse", "HEAD^{tree}").strip()
    (b / "upstream.lock").write_text(json.dumps(doc))
    run = run_cli(b, "fetch")
    assert run.rc == 2 and f"the locked commit {fork} is not a commit of" in run.err
    # Still labelled v1, whose tag the store has at B's commit: refused by what only reads
    # the pin too.
    run = run_cli(b, "new", "fix", "--file", "a.py")
    assert run.rc == 2 and "upstreams.vllm.label: tag v1 names commit" in run.err, run.err
    # overlays too, which took a commit the store held without asking whose it was (labelled
    # by a branch, which says nothing of the commit).
    doc["upstreams"]["vllm"]["label"] = "main"
    del doc["upstreams"]["vllm"]["version"]
    (b / "upstream.lock").write_text(json.dumps(doc))
    ok(b, "new", "fix", "--file", "a.py")
    (b / ".patchforge/work/vllm/a.py").write_bytes(b"other, fixed\n")
    ok(b, "refresh")
    run = run_cli(b, "overlays")
    assert run.rc == 2 and f"the locked commit {fork} is not a commit of" in run.err, run.err
    assert not (b / "overlays").exists()
    doc["upstreams"]["vllm"]["commit"] = "0123456789" * 4
    (b / "upstream.lock").write_text(json.dumps(doc))
    run = run_cli(b, "status")
    assert run.rc == 2 and "is not a commit of" in run.err, run.err
    assert "does not exist" not in run.err


def _damage_store(store: Path, damage: str) -> None:
    packs = sorted((store / "objects" / "pack").glob("*.pack"))
    assert packs
    for pack in packs:
        data = bytearray(pack.read_bytes())
        if damage == "pack-cut-short":
            pack.write_bytes(bytes(data[:len(data) // 2]))
        elif damage == "byte-flipped":
            data[len(data) // 2] ^= 0xFF
            pack.write_bytes(bytes(data))
        else:
            pack.with_suffix(".idx").write_bytes(b"")


def _fixed_project_and_its_store(tmp_path: Path) -> tuple[Path, str, Path]:
    """A git project with one fix and its overlays made: (root, pinned commit, store.git)."""
    root, commit = git_project(tmp_path)
    ok(root, "new", "fix", "--file", "a.py")
    (root / ".patchforge/work/up/a.py").write_bytes(b"fixed\n")
    ok(root, "refresh")
    ok(root, "overlays")
    return root, commit, Path(os.environ["PATCHFORGE_CACHE"]) / "store.git"


@pytest.mark.parametrize("damage", ["pack-cut-short", "byte-flipped", "index-emptied"])
def test_a_damaged_store_is_named_as_such_never_as_a_pin_to_change(tmp_path, damage):
    """A pack of the cache's store cut short, a byte of it changed, its index emptied (a disk
    or a copy of the cache gone wrong). Before, every command failed with screenfuls of git's
    messages and "the locked commit ... is not a commit of <url>: re-pin it (`upstream pin
    --force` or `rebase --to`)", advice that changes a correct lock; a changed byte gave "git
    cat-file stopped: unknown error"; `fetch` could not repair it. Now the message says the
    store is damaged, names the file, and says that moving the store aside is the cure; the
    project is not touched; once moved aside, the next command brings the pin back."""
    root, commit, store = _fixed_project_and_its_store(tmp_path)
    _damage_store(store, damage)
    before = tree_bytes(root)
    for command in (("status",), ("overlays",), ("fetch",), ("--offline", "status")):
        run = run_cli(root, *command)
        assert run.rc == 2, (command, run.text)
        assert f"the cache's git store {store} is damaged" in run.err, (command, run.err)
        assert "re-pin" not in run.err and "not a commit of" not in run.err, run.err
        assert f"move {store} aside" in run.err
        assert len(run.err.splitlines()) <= 3, run.err  # not git's every complaint
    if damage != "byte-flipped":
        assert "/objects/pack/pack-" in run.err  # the damaged file itself is named
    assert tree_bytes(root) == before
    store.rename(store.with_name("store.git.damaged"))
    assert run_cli(root, "status").rc == 0
    assert run_cli(root, "overlays", "--check").rc == 0
    assert lock_doc(root)["upstreams"]["up"]["commit"] == commit


@pytest.mark.parametrize("damage", ["pack cut short", "pack lost"])
def test_fetch_reads_the_pinned_tree_through_and_never_calls_a_damaged_store_fine(
        tmp_path, monkeypatch, damage):
    """A wheel pin whose commit and trees are loose objects of the store and whose files are
    in a pack cut short (or lost): every other command refused the store ("is damaged", or
    "the store lists it, but does not have its content": run `patchforge fetch`), while
    `fetch`, what CI runs to warm or mend a cache, found the commit object and said `toy 1.0:
    already in the cache`, exit 0. It reads the pinned tree through now: exit 2, the store
    said damaged with the way on (move it aside), the project untouched; once moved aside,
    `fetch` imports the pin again and every command works."""
    from helpers.git import git

    wheels = tmp_path / "wheels"
    monkeypatch.setenv("PATCHFORGE_WHEELS", str(wheels))
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    build_wheel(wheels, "toypkg", "1.0", {"toypkg/a.py": b"def f(x):\n    return x + 1\n"})
    root = tmp_path / "stack"
    root.mkdir()
    ok(None, "init", "--standalone", str(root))
    ok(root, "upstream", "add", "toy", "--wheel", "toypkg", "--at", "1.0", "--install-root",
       "/opt/site")
    ok(root, "new", "fix", "--file", "toypkg/a.py")
    (root / ".patchforge/work/toy/toypkg/a.py").write_bytes(b"def f(x):\n    return x + 2\n")
    ok(root, "refresh")
    assert "toy 1.0: already in the cache" in ok(root, "fetch").out
    store = Path(os.environ["PATCHFORGE_CACHE"]) / "store.git"
    git(tmp_path, "--git-dir", str(store), "prune-packed")
    packs = sorted((store / "objects" / "pack").glob("*.pack"))
    assert packs and any(p.is_dir() for p in (store / "objects").iterdir()
                         if len(p.name) == 2)  # the commit and its trees are loose
    for pack in packs:
        if damage == "pack cut short":
            pack.write_bytes(pack.read_bytes()[:-30])
        else:
            pack.with_suffix(".idx").unlink()
            pack.unlink()
    assert run_cli(root, "status").rc == 2
    before = tree_bytes(root)
    run = run_cli(root, "fetch")
    assert run.rc == 2, run.text
    assert f"the cache's git store {store} is damaged" in run.err, run.err
    assert f"move {store} aside" in run.err and "already in the cache" not in run.out, run.text
    assert tree_bytes(root) == before
    store.rename(store.with_name("store.git.damaged"))
    assert "toy 1.0: imported into the cache" in ok(root, "fetch").out
    assert run_cli(root, "status").rc == 0


@pytest.mark.parametrize("damage", ["pinned-commit-ref", "branch-ref", "config", "packed-refs",
                                    "head", "objects-a-file"])
def test_a_damaged_ref_or_config_of_the_store_is_its_damage_never_a_pin_to_change(tmp_path,
                                                                                   damage):
    """The store's record of the pinned commit (or of the branch it was pinned from) holding
    garbage, or the store's config unreadable (a disk error, a `git gc` killed half-way):
    the ref read as missing, and every command said "the locked commit ... is not a commit of
    <url>: re-pin it", which moves the pin of a series made on that commit; a bad config said
    only "git cat-file stopped: fatal: bad config line". Now both are the store's damage,
    with the cure (move it aside); the project is not touched, and once the store is moved
    aside the next command brings the same pin back."""
    root, commit, store = _fixed_project_and_its_store(tmp_path)
    if damage == "config":
        with open(store / "config", "a") as config:
            config.write("[bad\n")
    elif damage == "packed-refs":
        # A line git never writes there (a killed `git gc`, a disk error): was "could not be
        # checked against <url>", with the hint to check the network.
        with open(store / "packed-refs", "a") as packed:
            packed.write("zzz\n")
    elif damage == "head":
        # Garbage in HEAD, or objects/ a file: git takes it for no repository, and every
        # command said only "git cat-file stopped: fatal: not a git repository".
        (store / "HEAD").write_text("xx\n")
    elif damage == "objects-a-file":
        shutil.rmtree(store / "objects")
        (store / "objects").write_text("")
    else:
        kind = "commits" if damage == "pinned-commit-ref" else "heads"
        refs = [ref for ref in (store / "refs/patchforge/remotes").glob(f"*/{kind}/*")
                if ref.is_file()]
        assert refs, kind
        for ref in refs:
            ref.write_text("zzzz\n")
    before = tree_bytes(root)
    commands = [("status",), ("overlays",), ("--offline", "status")]
    if damage != "branch-ref":
        # The pin itself is checked by the pinned commit's ref; a broken branch ref is met
        # by what follows the branch.
        commands.append(("fetch",))
    else:
        commands = [("upstream", "pin", "up", "--at", "main", "--force"),
                    ("--offline", "upstream", "pin", "up", "--at", "main", "--force")]
    for command in commands:
        run = run_cli(root, *command)
        assert run.rc == 2, (command, run.text)
        assert f"the cache's git store {store} is damaged" in run.err, (command, run.err)
        assert "re-pin" not in run.err and "not a commit of" not in run.err, run.err
        assert f"move {store} aside" in run.err, run.err
    assert tree_bytes(root) == before
    store.rename(store.with_name("store.git.damaged"))
    assert run_cli(root, "status").rc == 0
    assert run_cli(root, "overlays", "--check").rc == 0
    assert lock_doc(root)["upstreams"]["up"]["commit"] == commit


def test_a_pin_of_another_kind_than_the_configured_upstream_is_refused(tmp_path):
    """B's lock edited to say its git upstream is a `dir` pinned at A's commit (which the
    shared store holds): a dir pin's commit was taken as it was, so status judged and overlays
    built B's fixes on another project's tree, exit 0. Refused, naming the lock's line."""
    fork = _tagged_repo(tmp_path / "fork", b"fork\n")
    _tagged_repo(tmp_path / "other", b"other\n")
    _git_stack(tmp_path / "a", str(tmp_path / "fork"))
    b = tmp_path / "b"
    _git_stack(b, str(tmp_path / "other"))
    ok(b, "new", "fix", "--file", "a.py")
    (b / ".patchforge/work/vllm/a.py").write_bytes(b"other, fixed\n")
    ok(b, "refresh")
    doc = lock_doc(b)
    doc["upstreams"]["vllm"].update(commit=fork, kind="dir", source={"path": "elsewhere"})
    (b / "upstream.lock").write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    line = (b / "upstream.lock").read_text().splitlines().index('      "kind": "dir",') + 1
    before = tree_bytes(b)
    for command in (["status"], ["overlays"], ["fetch"], ["lint", "--no-forge"]):
        run = run_cli(b, *command)
        assert run.rc == 2, (command, run.text)
        assert f"upstream.lock:{line}: upstreams.vllm.kind: vllm is pinned as a dir upstream, " \
            "but patchforge.toml configures it as git" in run.err, (command, run.err)
    assert tree_bytes(b) == before


@pytest.mark.parametrize("edit", ["tree", "commit"])
def test_a_lock_whose_tree_is_not_its_commits_is_refused_naming_its_line(tmp_path, edit):
    """A lock whose `tree` is not the tree of the commit beside it (its tree edited, or its
    commit moved to another revision of the same source without the tree, as a merge of two
    re-pins can leave it): the tree was never read, so every command took the commit and
    said nothing. Refused by every command that reads the pin, exit 2, naming upstream.lock
    and the tree's line, nothing written; `upstream pin --force` makes it whole."""
    from helpers.git import commit_files
    from helpers.template import check_but_for_the_install_root

    upstream = tmp_path / "up"
    _tagged_repo(upstream, b"released\n")
    root = tmp_path / "a"
    pin = _git_stack(root, str(upstream))
    ok(root, "new", "fix", "--file", "a.py")
    (root / ".patchforge/work/vllm/a.py").write_bytes(b"released, fixed\n")
    ok(root, "refresh")
    ok(root, "overlays")
    doc = lock_doc(root)
    if edit == "tree":
        doc["upstreams"]["vllm"]["tree"] = "1" * 40
    else:
        doc["upstreams"]["vllm"]["commit"] = commit_files(upstream, {"a.py": b"later\n"},
                                                          "later")
    (root / "upstream.lock").write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    line = next(n for n, text in enumerate((root / "upstream.lock").read_text().splitlines(), 1)
                if '"tree"' in text)
    before = tree_bytes(root)
    for command in (["status"], ["fetch"], ["overlays"], ["overlays", "--check"],
                    ["edit", "fix"], ["lint", "--no-forge"], ["rebase", "--to", "vllm=v1"]):
        run = run_cli(root, *command)
        assert run.rc == 2, (command, run.text)
        assert f"upstream.lock:{line}: upstreams.vllm.tree: " in run.err, (command, run.err)
        assert "is not the tree of the locked commit" in run.err, run.err
    assert tree_bytes(root) == before
    ok(root, "upstream", "pin", "vllm", "--at", "v1", "--force")
    assert lock_doc(root)["upstreams"]["vllm"]["tree"] == pin["tree"]
    check_but_for_the_install_root(root, "vllm")


def test_a_wheel_pin_of_another_package_than_the_configured_one_is_refused_naming_its_line(
        tmp_path, monkeypatch):
    """The configuration changed its `package` after the pin (`tinypkg` to `otherpkg`, as a
    stack moves from one build of an upstream to another), or a merge took one side's lock:
    the lock still pins tinypkg's wheel, and every command took that wheel as the upstream's
    (`new` opened tinypkg's file, `status` exit 0), `fetch` downloading it, without a word.
    Refused now, exit 2, naming upstream.lock's `source.package` line and the re-pin, before
    anything is downloaded; the same name written another way is the same distribution, and
    `upstream pin --force` pins the configured package."""
    monkeypatch.setenv("PATCHFORGE_WHEELS", str(tmp_path / "wheels"))
    build_wheel(tmp_path / "wheels", "tinypkg", "1.0", {"pkg/mod.py": b"A = 1\n"})
    build_wheel(tmp_path / "wheels", "otherpkg", "1.0", {"pkg/mod.py": b"A = 2\n"})
    root = tmp_path / "stack"
    root.mkdir()
    ok(None, "init", "--standalone", str(root))
    ok(root, "upstream", "add", "tiny", "--wheel", "tinypkg", "--at", "1.0",
       "--install-root", "/srv")
    config = root / "patchforge.toml"
    config.write_text(config.read_text().replace('package = "tinypkg"', 'package = "TinyPKG"'))
    ok(root, "status")
    config.write_text(config.read_text().replace('package = "TinyPKG"', 'package = "otherpkg"'))
    line = next(n for n, text in enumerate((root / "upstream.lock").read_text().splitlines(), 1)
                if '"package": "tinypkg"' in text)
    before = tree_bytes(root)
    for command in (["status"], ["new", "fix", "--file", "pkg/mod.py"], ["fetch"]):
        run = run_cli(root, *command)
        assert run.rc == 2, (command, run.text)
        assert f"upstream.lock:{line}: upstreams.tiny.source.package: tiny is pinned to a " \
               "wheel of 'tinypkg'" in run.err and "'otherpkg'" in run.err, (command, run.err)
        assert "upstream pin tiny --at VERSION --force" in run.err, run.err
    assert tree_bytes(root) == before
    monkeypatch.setenv("PATCHFORGE_CACHE", str(tmp_path / "fresh-cache"))
    monkeypatch.setenv("PATCHFORGE_WHEELS", str(tmp_path / "fresh-wheels"))
    run = run_cli(root, "fetch")
    assert run.rc == 2 and "source.package" in run.err, run.text
    assert not (tmp_path / "fresh-wheels").exists()
    monkeypatch.setenv("PATCHFORGE_WHEELS", str(tmp_path / "wheels"))
    ok(root, "upstream", "pin", "tiny", "--at", "1.0", "--force")
    assert lock_doc(root)["upstreams"]["tiny"]["source"]["package"] == "otherpkg"
    ok(root, "new", "fix", "--file", "pkg/mod.py")
    assert (root / ".patchforge/work/tiny/pkg/mod.py").read_bytes() == b"A = 2\n"


def test_a_wheel_pin_whose_version_is_not_its_wheels_is_refused_naming_its_line(
        tmp_path, monkeypatch):
    """upstream.lock out of a merge of two branches that each moved the pin, resolved line by
    line: `"version": "1.1"` beside the source of the 1.0 wheel (its filename, sha256, commit
    and tree). Every command took it: `status` said "Drop-When tinypkg>=1.1 is true" and
    `lint` "is true for 1.0: remove the fix", of a fix still needed on the 1.0 files deployed.
    Refused now as a tree that is not the commit's is, exit 2, naming upstream.lock and the
    line of the pin's own `version` (not its source's, which the sorted lock writes first),
    nothing written; `upstream pin --force` makes it whole. An image pin whose digest or tag
    is not its reference's is refused alike."""
    monkeypatch.setenv("PATCHFORGE_WHEELS", str(tmp_path / "wheels"))
    lines = b"A = 1\nB = 2\nC = 3\nD = 4\nE = 5\n"
    for version, value in (("1.0", b"V = 1\n"), ("1.1", b"V = 2\n")):
        build_wheel(tmp_path / "wheels", "tinypkg", version,
                    {"tinypkg/__init__.py": lines + value})
    root = tmp_path / "stack"
    root.mkdir()
    ok(None, "init", "--standalone", str(root))
    ok(root, "upstream", "add", "tiny", "--wheel", "tinypkg", "--at", "1.0",
       "--install-root", "/srv")
    ok(root, "new", "fix", "--file", "tinypkg/__init__.py")
    (root / ".patchforge/work/tiny/tinypkg/__init__.py").write_bytes(
        lines.replace(b"A = 1", b"A = 11") + b"V = 1\n")
    ok(root, "refresh")
    patch = root / "series/tiny/fix.patch"
    patch.write_bytes(patch.read_bytes().replace(b"\n\n", b"\nDrop-When: tinypkg>=1.1\n\n", 1))
    ok(root, "status")
    good = (root / "upstream.lock").read_text()
    assert good.count('"version": "1.0"') == 2
    text = good.splitlines()
    pin_line = max(n for n, line in enumerate(text, 1) if line == '      "version": "1.0"')
    text[pin_line - 1] = '      "version": "1.1"'
    (root / "upstream.lock").write_text("\n".join(text) + "\n")
    before = tree_bytes(root)
    for command in (["status"], ["fetch"], ["lint", "--no-forge"], ["overlays"],
                    ["overlays", "--check"], ["edit", "fix"], ["rebase", "--to", "1.1"]):
        run = run_cli(root, *command)
        assert run.rc == 2, (command, run.text)
        assert f"upstream.lock:{pin_line}: upstreams.tiny.version: '1.1' is not the version " \
               "of the pinned wheel tinypkg-1.0-py3-none-any.whl" in run.err, (command, run.err)
        assert "is true" not in run.text, (command, run.text)
    assert tree_bytes(root) == before
    ok(root, "upstream", "pin", "tiny", "--at", "1.1", "--force")
    assert lock_doc(root)["upstreams"]["tiny"]["source"]["version"] == "1.1"
    run = run_cli(root, "lint", "--no-forge")
    assert run.rc == 1 and "Drop-When tinypkg>=1.1 is true for 1.1: remove the fix" in run.out
    ok(root, "overlays")

    # The image pin: a reference by digest (or tag) beside a digest (or tag) naming another.
    digest_a, digest_b = "sha256:" + "a" * 64, "sha256:" + "b" * 64
    for image, key in (({"reference": f"registry.example:5000/vllm@{digest_a}",
                         "digest": digest_b}, "digest"),
                       ({"reference": "registry.example:5000/vllm:nightly-2",
                         "tag": "nightly-1", "digest": digest_a}, "tag")):
        doc = lock_doc(root)
        doc["image"] = image
        (root / "upstream.lock").write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
        line = next(n for n, text in enumerate((root / "upstream.lock").read_text().splitlines(),
                                               1) if f'"{key}"' in text)
        before = tree_bytes(root)
        for command in (["status"], ["overlays"], ["verify", "--image"]):
            run = run_cli(root, *command)
            assert run.rc == 2, (command, run.text)
            assert f"upstream.lock:{line}: image.{key}: " in run.err, (command, run.err)
            assert "the lock names two images" in run.err, (command, run.err)
        assert tree_bytes(root) == before
    # A bare nightly tag as the reference says nothing to compare with.
    doc["image"] = {"reference": "nightly-1", "tag": "nightly-1", "digest": digest_a}
    (root / "upstream.lock").write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    assert run_cli(root, "status").rc == 1


@pytest.mark.parametrize("edit", ["release-unfetched", "release-fetched", "version", "commit",
                                  "nightly", "no-spec"])
def test_a_git_pins_label_or_version_naming_another_revision_is_refused(tmp_path, edit):
    """upstream.lock whose commit is v1's but whose `label`/`version` say v2 (bumped by hand,
    or a merge of two re-pins resolved line by line): `status` said `target v2` and judged
    `Drop-When: vllm>=2` true on v1's files. What the label says is checked where it costs no
    fetch: the commit's own release tag in the store (v1), the label's tag once the store has
    it, a version beside the label, a commit id (or `nightly-<sha>`, as bump writes it) as the
    label. A label no SPEC reads (`v1..v2`) names no version, and a version beside it was
    compared with nothing. Refused, exit 2, naming upstream.lock and the line, nothing written;
    `upstream pin --force` makes it whole."""
    root, v2 = _stack_pinned_at_v1_with_a_fix_dropped_at_v2(tmp_path)
    assert "Drop-When" not in ok(root, "status").out
    if edit == "release-fetched":
        run_cli(root, "status", "--against", "vllm=v2")  # the store has tag v2 now
    doc = lock_doc(root)
    key, said = {"release-unfetched": ("label", "the locked commit"),
                 "release-fetched": ("label", f"tag v2 names commit {v2}"),
                 "version": ("version", "'2' is not the version the label 'v1' names"),
                 "commit": ("label", f"'{v2[:10]}' names commit {v2[:10]}, not the locked "
                                     "commit"),
                 "nightly": ("label", f"'nightly-{v2}' names commit {v2}, not the locked "
                                      "commit"),
                 "no-spec": ("version", "'2' is not the version the label 'v1..v2' names (it "
                                        "is no SPEC, and names none)")}[edit]
    if edit == "version":
        doc["upstreams"]["vllm"]["version"] = "2"
    elif edit == "no-spec":
        doc["upstreams"]["vllm"].update(label="v1..v2", version="2")
    elif edit in ("commit", "nightly"):
        # (`nightly-<sha>`: the label bump writes, taken from the other side of a merge.)
        doc["upstreams"]["vllm"].update(label=v2[:10] if edit == "commit" else f"nightly-{v2}")
        del doc["upstreams"]["vllm"]["version"]
    else:
        doc["upstreams"]["vllm"].update(label="v2", version="2")
    (root / "upstream.lock").write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    line = next(n for n, text in enumerate((root / "upstream.lock").read_text().splitlines(), 1)
                if text.startswith(f'      "{key}"'))
    before = tree_bytes(root)
    for command in (["status"], ["overlays"], ["lint", "--no-forge"], ["edit", "fix"]):
        run = run_cli(root, *command)
        assert run.rc == 2, (command, run.text)
        assert f"upstream.lock:{line}: upstreams.vllm.{key}: " in run.err, (command, run.err)
        assert said in run.err and "the lock names two revisions" in run.err, run.err
        assert "target v2" not in run.text and "target v1..v2" not in run.text and \
            "is true" not in run.text, run.text
    assert tree_bytes(root) == before
    ok(root, "upstream", "pin", "vllm", "--at", "v1", "--force")
    assert "Drop-When" not in ok(root, "status").out
    if edit == "nightly":  # the nightly pins patchforge writes itself are one revision
        v1 = lock_doc(root)["upstreams"]["vllm"]["commit"]
        ok(root, "upstream", "pin", "vllm", "--at", f"nightly-{v2}", "--force")
        assert lock_doc(root)["upstreams"]["vllm"]["label"] == f"nightly-{v2}"
        assert run_cli(root, "status").rc in (0, 1)
        ok(root, "rebase", "--to", f"vllm=nightly-{v1}")
        assert lock_doc(root)["upstreams"]["vllm"]["label"] == f"nightly-{v1}"
        ok(root, "lint", "--no-forge")
        assert run_cli(root, "status").rc in (0, 1)


def test_a_pin_at_an_ancestor_of_a_release_records_no_version(tmp_path):
    """`upstream pin --at v2~1` (and `rebase --to up=v2~1`) recorded `"version": "2~1"`, which
    is no version (PEP 440) and not the release's: the commit is an ancestor of v2. No version
    is recorded now; a lock an earlier patchforge wrote so is still read as it was."""
    from helpers.git import commit_files, git

    upstream = tmp_path / "up"
    _tagged_repo(upstream, b"a = 1\n")
    commit_files(upstream, {"a.py": b"a = 2\n"}, "v2")
    git(upstream, "tag", "v2")
    root = tmp_path / "stack"
    _git_stack(root, str(upstream))
    ok(root, "upstream", "pin", "vllm", "--at", "v2~1", "--force")
    pin = lock_doc(root)["upstreams"]["vllm"]
    assert pin["label"] == "v2~1" and "version" not in pin, pin
    doc = lock_doc(root)
    doc["upstreams"]["vllm"]["version"] = "2~1"
    (root / "upstream.lock").write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    ok(root, "status")
    ok(root, "rebase", "--to", "vllm=v2")
    ok(root, "rebase", "--to", "vllm=v2~1")
    pin = lock_doc(root)["upstreams"]["vllm"]
    assert pin["label"] == "v2~1" and "version" not in pin, pin


def test_a_label_naming_an_ancestor_of_a_release_is_checked_against_the_stored_tag(tmp_path):
    """A lock labelled `v3~1` (as `rebase --to up=v3~1` writes it, no version) over v1's
    commit, where v3~1 is v2 and the store holds tag v3: read before (an ancestor label was
    never checked), `status` said `target v3~1` and judged v1's files. Refused now, naming the
    line and the commit the label names; a pin patchforge wrote at `v3~1` is still read."""
    root, v1, v2 = _stack_pinned_at_v1_of_tags_v1_v2_v3(tmp_path)
    assert run_cli(root, "status", "--against", "vllm=v3").rc in (0, 1)  # the store has v3
    _lock_labelled_v3_1_is_refused(root, v1, v2)
    ok(root, "upstream", "pin", "vllm", "--at", "v3~1", "--force")
    pin = lock_doc(root)["upstreams"]["vllm"]
    assert pin["label"] == "v3~1" and pin["commit"] == v2, pin
    ok(root, "status")
    ok(root, "rebase", "--to", "vllm=v3~2")
    assert lock_doc(root)["upstreams"]["vllm"]["commit"] == v1


def test_a_label_naming_an_ancestor_of_a_release_is_checked_on_a_fresh_cache_too(
        tmp_path, monkeypatch):
    """The same lock, `v3~1` over v1's commit, read where the cache is fresh (CI, a new
    clone): the commit is fetched by its id, and v3's tag came with it only for a label naming
    v3 itself, so `status` said `target v3~1` over v1 with exit 0 where a warm cache refused
    it. The release's tag now comes in the same fetch, and both caches refuse it alike."""
    root, v1, v2 = _stack_pinned_at_v1_of_tags_v1_v2_v3(tmp_path)
    monkeypatch.setenv("PATCHFORGE_CACHE", str(tmp_path / "fresh"))
    _lock_labelled_v3_1_is_refused(root, v1, v2)


@pytest.mark.parametrize("cache", ["warm", "fresh"])
def test_a_label_naming_a_releases_tag_in_full_is_checked(tmp_path, monkeypatch, cache):
    """`rebase --to up=refs/tags/v2` writes the label `refs/tags/v2` (no version). A lock
    labelled `refs/tags/v3` (or `refs/tags/v3~1`) over v1's commit was never checked, on a
    cache holding tag v3 or a fresh one: `status` said `target refs/tags/v3`, exit 0, and
    judged v1's files, where `v3` and `v3~1` are refused. Refused alike now, naming the label's
    line; the pins patchforge writes at `refs/tags/v2` and `refs/tags/v3~1` are still read."""
    root, v1, v2 = _stack_pinned_at_v1_of_tags_v1_v2_v3(tmp_path)
    if cache == "warm":
        assert run_cli(root, "status", "--against", "vllm=v3").rc in (0, 1)  # the store has v3
    else:
        monkeypatch.setenv("PATCHFORGE_CACHE", str(tmp_path / "fresh"))
    path = root / "upstream.lock"
    written = path.read_text()
    for label, names in (("refs/tags/v3", "tag v3 names commit "),
                         ("refs/tags/v3~1", f"'refs/tags/v3~1' names commit {v2}")):
        doc = json.loads(written)
        doc["upstreams"]["vllm"]["label"] = label
        doc["upstreams"]["vllm"].pop("version", None)
        path.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
        line = next(n for n, text in enumerate(path.read_text().splitlines(), 1)
                    if text.startswith('      "label"'))
        for command in (["status"], ["fetch"]):
            run = run_cli(root, *command)
            assert run.rc == 2, (label, command, run.text)
            said = " ".join(run.err.split())
            assert f"upstream.lock:{line}: upstreams.vllm.label: {names}" in said and \
                "the lock names two revisions" in said, (label, command, run.err)
    path.write_text(written)
    for spec, commit in (("refs/tags/v2", v2), ("refs/tags/v3~1", v2)):
        ok(root, "upstream", "pin", "vllm", "--at", spec, "--force")
        pin = lock_doc(root)["upstreams"]["vllm"]
        assert (pin["label"], pin["commit"]) == (spec, commit), pin
        monkeypatch.setenv("PATCHFORGE_CACHE", str(tmp_path / f"again-{len(spec)}"))
        assert f"vllm: target {spec} {commit[:12]}" in ok(root, "status").out


def _stack_pinned_at_v1_of_tags_v1_v2_v3(tmp_path) -> tuple[Path, str, str]:
    """A stack pinned at v1 of an upstream tagged v1, v2, v3 (one commit each): (root, v1, v2)."""
    from helpers.git import commit_files, git

    upstream = tmp_path / "up"
    v1 = _tagged_repo(upstream, b"a = 1\n")
    v2 = commit_files(upstream, {"a.py": b"a = 2\n"}, "v2")
    git(upstream, "tag", "v2")
    commit_files(upstream, {"a.py": b"a = 3\n"}, "v3")
    git(upstream, "tag", "v3")
    root = tmp_path / "stack"
    _git_stack(root, str(upstream))
    return root, v1, v2


def _lock_labelled_v3_1_is_refused(root, v1: str, v2: str) -> None:
    """Write upstream.lock's pin of v1 labelled `v3~1` (no version); `status` and `fetch`
    refuse it, naming the label's line and v2, the commit the label names."""
    doc = lock_doc(root)
    assert doc["upstreams"]["vllm"]["commit"] == v1
    doc["upstreams"]["vllm"]["label"] = "v3~1"
    doc["upstreams"]["vllm"].pop("version", None)
    (root / "upstream.lock").write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    line = next(n for n, text in enumerate((root / "upstream.lock").read_text().splitlines(), 1)
                if text.startswith('      "label"'))
    for command in (["status"], ["fetch"]):
        run = run_cli(root, *command)
        assert run.rc == 2, (command, run.text)
        assert f"upstream.lock:{line}: upstreams.vllm.label: 'v3~1' names commit {v2}" in \
            run.err and "the lock names two revisions" in run.err, (command, run.err)


def test_a_tag_named_by_hex_digits_alone_is_hinted_by_its_full_name(tmp_path):
    """An upstream tag `20261205` (a date tag: hex digits alone) is read as a commit id, and
    `status --against up=20261205` said only that it is no commit, branch or tag of the
    upstream, which has it, with "check the name". The hint names the tag in full now, and
    that name, as printed, is the tag."""
    from helpers.git import commit_files, git

    upstream = tmp_path / "up"
    _tagged_repo(upstream, b"a = 1\n")
    v2 = commit_files(upstream, {"a.py": b"a = 2\n"}, "v2")
    git(upstream, "tag", "20261205")
    root = tmp_path / "stack"
    _git_stack(root, str(upstream))
    run = run_cli(root, "status", "--against", "vllm=20261205")
    assert run.rc == 2, run.text
    hint = "a tag or branch of that name is named in full, `refs/tags/20261205`"
    assert hint in " ".join(run.err.split()), run.err
    run = run_cli(root, "status", "--against", "vllm=refs/tags/20261205")
    assert run.rc in (0, 1) and v2[:12] in run.out, run.text


def test_a_release_candidates_commit_pinned_as_the_release_is_one_revision(tmp_path):
    """The commit of v2rc1 released as v2 (both tags on one commit): a lock a teammate re-pinned
    at v2, read here where the store fetched only v2rc1, names one revision and is taken."""
    from helpers.git import git

    upstream = tmp_path / "up"
    _tagged_repo(upstream, b"a = 1\n")
    git(upstream, "tag", "v2rc1")
    root = tmp_path / "stack"
    _git_stack(root, str(upstream), at="v2rc1")
    git(upstream, "tag", "v2")
    doc = lock_doc(root)
    doc["upstreams"]["vllm"].update(label="v2", version="2")
    (root / "upstream.lock").write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    ok(root, "status")
    ok(root, "fetch")


def test_a_git_pins_release_label_is_checked_on_a_fresh_cache_too(tmp_path, monkeypatch):
    """A lock whose commit is v1's labelled `v2`, read where the cache is fresh (a new clone, a
    CI runner): the commit was fetched by its id, no tag came with it, and `status` said
    `target v2` over v1's files and judged `Drop-When: vllm>=2` true. The label's tag is
    fetched with the commit (the remote is asked anyway): refused, naming the line."""
    root, v2 = _stack_pinned_at_v1_with_a_fix_dropped_at_v2(tmp_path, "-a", "-m", "release 2")
    doc = lock_doc(root)
    doc["upstreams"]["vllm"].update(label="v2", version="2")
    (root / "upstream.lock").write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    line = next(n for n, text in enumerate((root / "upstream.lock").read_text().splitlines(), 1)
                if text.startswith('      "label"'))
    before = tree_bytes(root)
    for n, command in enumerate((["status"], ["overlays"], ["fetch"], ["lint", "--no-forge"])):
        monkeypatch.setenv("PATCHFORGE_CACHE", str(tmp_path / f"fresh-{n}"))
        run = run_cli(root, *command)
        assert run.rc == 2, (command, run.text)
        assert f"upstream.lock:{line}: upstreams.vllm.label: tag v2 names commit {v2}" in \
            run.err and "the lock names two revisions" in run.err, (command, run.err)
        assert "target v2" not in run.text and "is true" not in run.text, run.text
        # The next command of that cache refuses it again, from the store.
        assert run_cli(root, *command).rc == 2
    assert tree_bytes(root) == before
    # A label the remote has no tag of (`v7`): the commit's own tags come with it, and the
    # commit is v1, as the cache that fetched v1's tag refused it; a fresh cache took it,
    # said `target v7` and judged `Drop-When: vllm>=2` true on v1's files.
    doc["upstreams"]["vllm"].update(label="v7", version="7")
    (root / "upstream.lock").write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    for cache in ("fresh-untagged", "fresh-untagged"):  # fresh, then as that fetch left it
        monkeypatch.setenv("PATCHFORGE_CACHE", str(tmp_path / cache))
        run = run_cli(root, "status")
        assert run.rc == 2, (cache, run.text)
        assert f"upstream.lock:{line}: upstreams.vllm.label: the locked commit " in run.err \
            and "is tag v1 (as the store last fetched it), not v7" in run.err, run.err
        assert "target v7" not in run.text and "is true" not in run.text, run.text
    # A commit the remote has no tag of says nothing to check: taken, as before.
    from helpers.git import git

    git(tmp_path / "up", "tag", "-d", "v1")
    monkeypatch.setenv("PATCHFORGE_CACHE", str(tmp_path / "fresh-no-tag-of-v1"))
    assert run_cli(root, "status").rc == 1


def test_a_release_label_that_is_a_tag_and_a_branch_names_the_tag(tmp_path, monkeypatch):
    """An upstream with both a tag `v2` and a branch `v2` at another commit: the label `v2`
    resolves to the tag (as git's own rule has it). A lock labelled `v2` on the branch's
    commit was taken, as if the branch were what the label names: the lock names two
    revisions, and is refused, naming the line, in the cache that has both refs and in a
    fresh one."""
    from helpers.git import commit_files, git

    upstream = tmp_path / "up"
    _tagged_repo(upstream, b"a = 1\nb = 2\n")
    tagged = commit_files(upstream, {"a.py": b"a = 1\nb = 3\n"}, "two")
    git(upstream, "tag", "-a", "-m", "release 2", "v2")
    branched = commit_files(upstream, {"a.py": b"a = 1\nb = 4\n"}, "work")
    git(upstream, "branch", "v2", branched)
    root = tmp_path / "stack"
    monkeypatch.setenv("PATCHFORGE_CACHE", str(tmp_path / "cache"))
    _git_stack(root, str(upstream), at="v2")
    assert lock_doc(root)["upstreams"]["vllm"]["commit"] == tagged  # the tag, not the branch
    doc = lock_doc(root)
    doc["upstreams"]["vllm"].update(
        commit=branched, tree=git(upstream, "rev-parse", f"{branched}^{{tree}}").strip())
    (root / "upstream.lock").write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    line = next(n for n, text in enumerate((root / "upstream.lock").read_text().splitlines(), 1)
                if text.startswith('      "label"'))
    before = tree_bytes(root)
    for cache in ("cache", "fresh"):
        monkeypatch.setenv("PATCHFORGE_CACHE", str(tmp_path / cache))
        run = run_cli(root, "status")
        assert run.rc == 2, (cache, run.text)
        assert f"upstream.lock:{line}: upstreams.vllm.label: tag v2 names commit {tagged}" in \
            run.err and "the lock names two revisions" in run.err, (cache, run.err)
    assert tree_bytes(root) == before


def test_a_pin_on_a_release_named_branch_is_taken_after_the_branch_moves(tmp_path, monkeypatch):
    """An upstream with a branch `v2` (no tag of that name) at v1's tagged commit: `rebase
    --to v2` pins it, labelled `v2`. The branch then moves on upstream, and the store fetches
    it (`status --against v2`): the unchanged lock was refused by every command from then on
    ("the locked commit is tag v1, not v2"). A branch label names a commit of the branch's
    history, as for `main`; one the branch never had is still refused."""
    from helpers.git import commit_files, git

    upstream = tmp_path / "up"
    v1 = _tagged_repo(upstream, b"a = 1\nb = 2\n")
    git(upstream, "branch", "v2", v1)
    root = tmp_path / "stack"
    monkeypatch.setenv("PATCHFORGE_CACHE", str(tmp_path / "cache"))
    _git_stack(root, str(upstream))
    off = commit_files(upstream, {"a.py": b"a = 1\nb = 5\n"}, "elsewhere")  # on main
    ok(root, "rebase", "--to", "v2")
    pinned = lock_doc(root)
    assert (pinned["upstreams"]["vllm"]["label"], pinned["upstreams"]["vllm"]["commit"]) == \
        ("v2", v1)
    git(upstream, "checkout", "-q", "v2")
    commit_files(upstream, {"a.py": b"a = 1\nb = 3\n"}, "on the release branch")
    ok(root, "status", "--against", "vllm=v2")  # the store has the moved branch now
    assert lock_doc(root) == pinned
    for cache in ("cache", "fresh"):
        monkeypatch.setenv("PATCHFORGE_CACHE", str(tmp_path / cache))
        for command in (["status"], ["overlays"], ["lint", "--no-forge"]):
            run = run_cli(root, *command)
            assert run.rc == 0, (cache, command, run.text)
    # A commit the branch never had, under its label, names two revisions.
    doc = json.loads(json.dumps(pinned))
    doc["upstreams"]["vllm"].update(
        commit=off, tree=git(upstream, "rev-parse", f"{off}^{{tree}}").strip())
    (root / "upstream.lock").write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    git(upstream, "tag", "v1.5", off)
    run = run_cli(root, "status")
    assert run.rc == 2 and "the lock names two revisions" in run.err, run.text


@pytest.mark.parametrize("to", ["release", "release-branch", "commit", "short-commit",
                                "tag-object-id", "ancestor", "branch"])
def test_every_pin_patchforge_writes_is_taken_by_every_command(tmp_path, monkeypatch, to):
    """The pins `rebase --to` writes pass the check of what a label says of its commit, in
    the cache that made them and in a fresh one. `rebase --to v2` where v2 is a branch at
    v1's commit wrote `label: v2` that every later command refused ("the locked commit is tag
    v1"), and the id of an annotated tag's object (what `git rev-parse v3` prints) was written as the label of the commit it tags, which it does not begin: refused the
    same, `rebase` included, until `upstream pin --force`."""
    from helpers.git import commit_files, git

    upstream = tmp_path / "up"
    lines = b"a = 1\n\n\n\n\nx\ny\nz\n"
    v1 = _tagged_repo(upstream, lines + b"b = 2\n")
    git(upstream, "branch", "v2")  # named like a release, at v1's commit
    commit_files(upstream, {"a.py": lines + b"b = 3\n"}, "three")
    git(upstream, "tag", "-a", "-m", "release 3", "v3")
    head = commit_files(upstream, {"a.py": lines + b"b = 4\n"}, "four")
    spec = {"release": "v3", "release-branch": "v2", "commit": head, "short-commit": head[:9],
            "tag-object-id": git(upstream, "rev-parse", "v3").strip(),
            "ancestor": "v3~1", "branch": "main"}[to]
    root = tmp_path / "stack"
    _git_stack(root, str(upstream))
    ok(root, "new", "fix", "--file", "a.py")
    (root / ".patchforge/work/vllm/a.py").write_bytes(lines.replace(b"1", b"11") + b"b = 2\n")
    ok(root, "refresh")
    ok(root, "rebase", "--to", f"vllm={spec}")
    pinned = lock_doc(root)["upstreams"]["vllm"]
    assert pinned["commit"] != v1 or to in ("release-branch", "ancestor")
    # An ancestor of a release is no release: `Drop-When` said v3~1's version was "3~1".
    assert pinned.get("version") == {"release": "3", "release-branch": "2"}.get(to), pinned
    for cache in ("made-them", "fresh"):
        if cache == "fresh":
            monkeypatch.setenv("PATCHFORGE_CACHE", str(tmp_path / "fresh"))
        for command in (["status"], ["overlays"], ["lint", "--no-forge"], ["fetch"],
                        ["edit", "fix"], ["refresh"]):
            ok(root, *command)
        assert "upstream.lock" not in run_cli(root, "verify").text
    ok(root, "rebase", "--to", "vllm=v1")
    assert lock_doc(root)["upstreams"]["vllm"]["commit"] == v1


def test_a_wheel_pins_label_that_is_not_its_wheels_version_is_refused(tmp_path, monkeypatch):
    """A wheel pin's `label` edited to 2.0 beside alpha 1.0's wheel: status said `target 2.0`,
    and the project's namespace of the store labelled 1.0's import `2.0`, so a later
    `import overlay --made-on 2.0` diffed against 1.0's files. Refused as its `version` is."""
    monkeypatch.setenv("PATCHFORGE_WHEELS", str(tmp_path / "wheels"))
    build_wheel(tmp_path / "wheels", "tinypkg", "1.0", {"tinypkg/__init__.py": b"V = 1\n"})
    ok(None, "init", "--standalone", cwd=tmp_path)
    ok(tmp_path, "upstream", "add", "tiny", "--wheel", "tinypkg", "--at", "1.0")
    doc = lock_doc(tmp_path)
    doc["upstreams"]["tiny"]["label"] = "2.0"
    (tmp_path / "upstream.lock").write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    line = next(n for n, text in enumerate((tmp_path / "upstream.lock").read_text()
                                           .splitlines(), 1) if '"label"' in text)
    before = tree_bytes(tmp_path)
    for command in (["status"], ["fetch"]):
        run = run_cli(tmp_path, *command)
        assert run.rc == 2, (command, run.text)
        assert f"upstream.lock:{line}: upstreams.tiny.label: '2.0' is not the version of the " \
               "pinned wheel tinypkg-1.0-py3-none-any.whl" in run.err, (command, run.err)
        assert "target 2.0" not in run.text
    assert tree_bytes(tmp_path) == before


def test_a_tampered_wheel_sha256_is_refused_with_a_warm_store(tmp_path, monkeypatch):
    monkeypatch.setenv("PATCHFORGE_WHEELS", str(tmp_path / "wheels"))
    build_wheel(tmp_path / "wheels", "tinypkg", "1.0", {"tinypkg/__init__.py": b"V = 1\n"})
    ok(None, "init", "--standalone", cwd=tmp_path)
    ok(tmp_path, "upstream", "add", "tiny", "--wheel", "tinypkg", "--at", "1.0")
    assert json.loads(ok(tmp_path, "fetch", "--json").out)["fetched"][0]["result"] == \
        "present"
    doc = lock_doc(tmp_path)
    doc["upstreams"]["tiny"]["source"]["sha256"] = "ab" * 32
    (tmp_path / "upstream.lock").write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    lines = (tmp_path / "upstream.lock").read_text().splitlines()
    commit = next(n for n, text in enumerate(lines, 1) if '"commit"' in text)
    digest = next(n for n, text in enumerate(lines, 1) if '"sha256"' in text)
    for command in (["fetch"], ["status"]):
        run = run_cli(tmp_path, *command)
        # Named as every other disagreement of the lock is: the file and the lines (it
        # named the upstream alone).
        assert run.rc == 2 and f"upstream.lock:{commit}: upstreams.tiny.commit: the locked " \
            "commit" in run.err and "is not the import of" in run.err \
            and f"(source.sha256, line {digest})" in run.err, run.err


def test_a_tampered_wheel_commit_is_refused_naming_the_lock_with_a_cold_store(tmp_path,
                                                                              monkeypatch):
    """A lock whose commit was changed (by hand, a bad merge) to one the store does not hold,
    as on a fresh CI machine: the wheel is imported again, and its commit is not the lock's.
    That was said as `upstream tiny: the locked revision is ..., but re-creating it gave ...`,
    naming neither upstream.lock nor a line, with a hint blaming a changed source (the wheel
    matched its sha256); with a warm store the same lock names the file and the line. Now it
    is said as every other disagreement of the lock is, and nothing is written."""
    monkeypatch.setenv("PATCHFORGE_WHEELS", str(tmp_path / "wheels"))
    build_wheel(tmp_path / "wheels", "tinypkg", "1.0", {"tinypkg/__init__.py": b"V = 1\n"})
    ok(None, "init", "--standalone", cwd=tmp_path)
    ok(tmp_path, "upstream", "add", "tiny", "--wheel", "tinypkg", "--at", "1.0")
    doc = lock_doc(tmp_path)
    imported = doc["upstreams"]["tiny"]["commit"]
    doc["upstreams"]["tiny"]["commit"] = "ab" * 20
    (tmp_path / "upstream.lock").write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    line = next(n for n, text in enumerate((tmp_path / "upstream.lock").read_text()
                                           .splitlines(), 1) if '"commit"' in text)
    before = tree_bytes(tmp_path)
    for command in (["fetch"], ["status"]):
        run = run_cli(tmp_path, *command)
        assert run.rc == 2, (command, run.text)
        assert f"upstream.lock:{line}: upstreams.tiny.commit: the locked commit ababababab" \
            in run.err and "is not the import of tinypkg-1.0-py3-none-any.whl" in run.err \
            and imported[:12] in run.err, (command, run.err)
        assert "restore upstream.lock from version control" in run.err, run.err
    assert tree_bytes(tmp_path) == before


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
    # URLs the schema's pattern passes that no HTTP client takes: every command asking the
    # forge ended in an internal error (`ValueError: Invalid IPv6 URL`, `Port out of range`);
    # a query or fragment had the API's paths appended after it.
    ('api-url = "https://api.github.com"', 'api-url = "http://[::1"', "forge.api-url",
     "'http://[::1' is not a URL an HTTP client can ask (Invalid IPv6 URL)"),
    ('api-url = "https://api.github.com"', 'api-url = "https://127.0.0.1:99999/"',
     "forge.api-url", "is not a URL an HTTP client can ask (Port out of range"),
    ('api-url = "https://api.github.com"', 'api-url = "https://ghe.example/api/v3?x=1#y"',
     "forge.api-url", "has a query or a fragment: the API's paths are added at its end"),
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


@pytest.mark.parametrize("entry, why", [
    ('"art\\ttab.sh"', "'art\\ttab.sh' is not a valid artifacts entry: it holds a control character (U+0009)"),
    ('""', "'' is not a valid artifacts entry: it is empty"),
])
def test_a_bad_list_entry_is_named_by_its_list_and_says_why(tmp_path, entry, why):
    # A list item failing its pattern was "is not a valid 1": the item's index taken for the
    # kind of value, and nothing said about what is wrong with it.
    root, _ = git_project(tmp_path)
    config = root / "pyproject.toml"
    text = config.read_text().replace("[tool.patchforge]\n",
                                      f'[tool.patchforge]\nartifacts = ["ok.sh", {entry}]\n', 1)
    config.write_text(text)
    (root / "ok.sh").write_text("a\n")
    run = run_cli(root, "overlays")
    assert run.rc == 2, run.err
    line = next(n for n, one in enumerate(text.splitlines(), 1) if one.startswith("artifacts = "))
    assert f"pyproject.toml:{line}: tool.patchforge.artifacts[1]: {why}" in run.err, run.err


@pytest.mark.parametrize("name", ["a#b", "a b", "a\nb", "tab\there", "-rf", ".hidden",
                                  "dir/x", "quote'd", "nul\x00x", "esc\x1b]0;t\x07",
                                  "fix\u202etxt.patch", "zero\u200bwidth", "iso\u2066late",
                                  "caf\udce9"])
def test_a_patch_name_the_series_file_cannot_hold_is_refused(tmp_path, name):

    root, _ = git_project(tmp_path)
    ok(root, "new", "good")
    before = tree_bytes(root)
    # (A '/' after a name that is no configured upstream is said to be that.)
    said = "a patch name holds no '/'" if name == "dir/x" else "cannot be written to a series file"
    run = run_cli(root, "new", "--", name)
    assert run.rc == 2 and said in run.err, run.err
    run = run_cli(root, "rename", "good", "--", name)
    assert run.rc == 2 and said in run.err, run.err
    assert tree_bytes(root) == before
    assert "up/good.patch" in ok(root, "list").out


def test_a_series_line_whose_name_reads_as_another_is_refused(tmp_path):
    """A series file (a pull request to the stack) listing `fix\u202etxt.patch`: a
    right-to-left override makes it read as another name in a terminal or a review, and every
    command took it. Refused with the series file and line, exit 2, nothing written."""
    root, _ = git_project(tmp_path)
    ok(root, "new", "good")
    directory = root / "series" / "up"
    hidden = "evil\u202etxt.patch"
    (directory / hidden).write_bytes((directory / "good.patch").read_bytes())
    (directory / "series").write_bytes(f"good.patch\n{hidden}\n".encode())
    before = tree_bytes(root)
    for command in (["status"], ["overlays"], ["list"]):
        run = run_cli(root, *command)
        assert run.rc == 2, (command, run.text)
        assert "series/up/series:2: bad patch name 'evil\\u202etxt.patch'" in run.err, run.err
    run = run_cli(root, "lint", "--no-forge")  # a finding of its own
    assert run.rc == 1 and "series/up/series:2: bad patch name" in run.out, run.text
    assert tree_bytes(root) == before


def test_a_series_line_whose_name_is_not_utf8_is_refused(tmp_path):
    """A series listing a patch whose file name is not UTF-8 (`caf\\xe9.patch`, a Latin-1
    name from another tool): `overlays` wrote it into manifest.json as a lone surrogate
    (`"caf\\udce9.patch"`), which strict JSON readers refuse, and the ledger wrote the raw byte
    into PATCHES.md. Refused with the series file and line, exit 2, nothing written."""
    root, _ = git_project(tmp_path)
    ok(root, "new", "good")
    directory = root / "series" / "up"
    latin = b"caf\xe9.patch"
    (directory / os.fsdecode(latin)).write_bytes((directory / "good.patch").read_bytes())
    (directory / "series").write_bytes(b"good.patch\n" + latin + b"\n")
    before = tree_bytes(root)
    for command in (["status"], ["overlays"], ["ledger"]):
        run = run_cli(root, *command)
        assert run.rc == 2, (command, run.text)
        assert "series/up/series:2: bad patch name b'caf\\xe9.patch': it is not UTF-8" in run.err, \
            run.err
    assert tree_bytes(root) == before


# --------------------------------------------------------------------------------------------
# The network: every answer bounded in time and size; tokens only over https, only to their host

def _raw_server(serve) -> tuple[str, list[bytes]]:
    """A one-connection-at-a-time TCP server on 127.0.0.1 whose `serve(conn)` writes whatever
    bytes it likes (to misbehave below the level of an HTTP library). Returns (url, requests)."""
    import socket
    import threading

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)
    seen: list[bytes] = []

    def loop() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            with conn:
                seen.append(conn.recv(65536))
                try:
                    serve(conn)
                except OSError:
                    pass

    threading.Thread(target=loop, daemon=True).start()
    return f"http://127.0.0.1:{listener.getsockname()[1]}", seen


def test_an_answer_dripping_a_byte_at_a_time_is_cut_at_the_deadline(tmp_path):
    import time

    from patchforge.errors import NetworkError
    from patchforge.net.http import HttpClient

    def drip(conn) -> None:
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n")
        for _ in range(1000):
            conn.sendall(b"x")
            time.sleep(0.2)

    url, _ = _raw_server(drip)
    client = HttpClient(tmp_path / "cache", deadline=1.5, max_retries=0)
    started = time.monotonic()
    with pytest.raises(NetworkError, match="took longer than 2 s"):
        client.get(url + "/slow")
    # The per-read timeout (30 s) never fires on a drip: only the overall deadline does.
    assert time.monotonic() - started < 5


def test_a_huge_answer_is_refused_in_bounded_memory(tmp_path):
    import resource

    from patchforge.errors import NetworkError
    from patchforge.net.http import HttpClient

    def flood(conn) -> None:
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 3000000000\r\n\r\n")
        block = b"\0" * (1 << 20)
        for _ in range(3000):
            conn.sendall(block)

    url, _ = _raw_server(flood)
    client = HttpClient(tmp_path / "cache", max_body=8 << 20, max_retries=0)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(NetworkError, match="larger than 8 MiB"):
        client.get(url + "/huge")
    grown_mib = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert grown_mib < 64


@pytest.mark.parametrize("url", ["http://forge.example/api/repos/o/r/pulls/1",
                                 "http://10.0.0.8:8080/repos/o/r/pulls/1"])
def test_a_token_never_goes_over_plain_http_off_this_machine(tmp_path, url):
    from patchforge.errors import NetworkError
    from patchforge.net.http import HttpClient, host_of

    client = HttpClient(tmp_path / "cache", token="ghp_secret", token_host=host_of(url),
                        max_retries=0)
    with pytest.raises(NetworkError, match="refusing to send a token over plain http") as info:
        client.get(url)
    assert "ghp_secret" not in str(info.value)
    # A token passed by a caller (a registry's bearer token) obeys the same rule.
    with pytest.raises(NetworkError, match="refusing to send a token"):
        HttpClient(tmp_path / "cache").get(url, headers={"Authorization": "Bearer tok"})


def test_a_token_to_loopback_over_http_never_goes_through_a_proxy(tmp_path, monkeypatch,
                                                                 forge_server):
    from patchforge.net.http import HttpClient

    proxy_url, proxied = _raw_server(lambda conn: conn.sendall(
        b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n"))
    monkeypatch.setenv("http_proxy", proxy_url)
    monkeypatch.setenv("HTTP_PROXY", proxy_url)
    monkeypatch.delenv("no_proxy", raising=False)
    monkeypatch.delenv("NO_PROXY", raising=False)
    forge_server.add_pull("o/r", 1)
    client = HttpClient(tmp_path / "cache", token="ghp_secret", token_host=forge_server.host,
                        max_retries=0)
    assert client.get(f"{forge_server.url}/repos/o/r/pulls/1").status == 200
    assert forge_server.requests[-1].header("authorization") == "Bearer ghp_secret"
    assert proxied == []
    # Without a token the machine's proxy settings apply as usual (this proxy answers 502).
    from patchforge.errors import NetworkError
    with pytest.raises(NetworkError, match="502"):
        HttpClient(tmp_path / "cache", max_retries=0).get(
            f"{forge_server.url}/repos/o/r/pulls/1", use_cache=False)
    assert len(proxied) == 1 and b"ghp_secret" not in proxied[0]


def test_registry_credentials_go_only_to_the_registrys_own_realm(tmp_path, registry_server):
    from patchforge.errors import NetworkError
    from patchforge.net.http import HttpClient
    from patchforge.net.registry import RegistryClient

    registry_server.push_image("team/img", "t", {"x": "y"})
    registry_server.auth_required = True
    # The registry names a realm on another host (here: `localhost` for the registry's
    # 127.0.0.1): the user's secret must not go there.
    registry_server.realm_url = f"http://localhost:{registry_server.token_server.port}/token"
    env = {"PATCHFORGE_REGISTRY_TOKEN": "pat-secret", "PATCHFORGE_REGISTRY_USER": "me",
           "PATCHFORGE_REGISTRY_HOST": registry_server.host}
    client = RegistryClient.from_env(HttpClient(tmp_path / "c1", max_retries=0), env)
    client.resolve_image(f"{registry_server.host}/team/img:t")  # anonymous token: allowed
    realm = registry_server.token_server.requests
    assert realm and all(r.header("authorization") is None for r in realm)
    registry_server.token_server.credentials = "Basic bWU6cGF0LXNlY3JldA=="  # me:pat-secret
    with pytest.raises(NetworkError, match="answered 401") as info:
        RegistryClient.from_env(HttpClient(tmp_path / "c2", max_retries=0), env) \
            .resolve_image(f"{registry_server.host}/team/img:t")
    assert "PATCHFORGE_REGISTRY_REALMS" in (info.value.hint or "")
    # Named by the user: trusted.
    trusted = dict(env, PATCHFORGE_REGISTRY_REALMS="localhost")
    RegistryClient.from_env(HttpClient(tmp_path / "c3", max_retries=0), trusted) \
        .resolve_image(f"{registry_server.host}/team/img:t")
    assert realm[-1].header("authorization") == "Basic bWU6cGF0LXNlY3JldA=="


def test_a_token_realm_that_is_no_url_is_said_as_the_registrys(tmp_path, registry_server):
    """A registry whose 401 names a token realm no URL parser takes (`http://[::1`, an unclosed
    IPv6 bracket): `status --against REGISTRY/REPO:TAG` ended in an internal error (exit 70,
    `ValueError: Invalid IPv6 URL`). It is the registry's bad answer, said as such (exit 2)."""
    registry_server.push_image("team/img", "t", {"up.commit": "0" * 40})
    registry_server.auth_required = True
    registry_server.realm_url = "http://[::1"
    root, _ = git_project(tmp_path)
    run = run_cli(root, "status", "--against", f"up={registry_server.host}/team/img:t")
    assert run.rc == 2 and "internal error" not in run.err, run.text
    assert f"registry {registry_server.host} names a bad token realm 'http://[::1'" in run.err, \
        run.err


def test_a_registry_token_bound_to_no_host_goes_to_no_registry(tmp_path, registry_server):
    """PATCHFORGE_REGISTRY_TOKEN without PATCHFORGE_REGISTRY_HOST was sent to any registry
    that asked, through a token realm on that registry's own host: an image reference comes
    from the configuration (`image`), which a pull request can change, so a CI job checking it
    (`verify --image`, `bump`) gave the token to whatever registry the pull request named. Now
    it is bound to no registry; the 401 that follows says so and how to bind it."""
    from patchforge.errors import NetworkError
    from patchforge.net.http import HttpClient
    from patchforge.net.registry import RegistryClient

    registry_server.push_image("team/img", "t", {"x": "y"})
    registry_server.auth_required = True
    registry_server.realm_url = f"http://{registry_server.host}/token"  # its own host
    registry_server.token_server.credentials = "Basic bWU6cGF0LXNlY3JldA=="  # me:pat-secret
    realm_on_own_host = registry_server.token_server.route
    registry_server.route = (lambda original: lambda method, path, query, req:
                             realm_on_own_host(method, path, query, req) if path == "/token"
                             else original(method, path, query, req))(registry_server.route)
    env = {"PATCHFORGE_REGISTRY_TOKEN": "pat-secret", "PATCHFORGE_REGISTRY_USER": "me"}
    with pytest.raises(NetworkError, match="answered 401") as info:
        RegistryClient.from_env(HttpClient(tmp_path / "c1", max_retries=0), env) \
            .resolve_image(f"{registry_server.host}/team/img:t")
    assert "PATCHFORGE_REGISTRY_HOST" in (info.value.hint or "")
    assert all(r.header("authorization") is None for r in registry_server.requests)
    bound = dict(env, PATCHFORGE_REGISTRY_HOST=registry_server.host)
    RegistryClient.from_env(HttpClient(tmp_path / "c2", max_retries=0), bound) \
        .resolve_image(f"{registry_server.host}/team/img:t")
    asked = [r for r in registry_server.requests if r.path.startswith("/token")]
    assert asked[-1].header("authorization") == "Basic bWU6cGF0LXNlY3JldA=="


# --------------------------------------------------------------------------------------------
# State files: a kernel lock, a journal that always leaves a way out, confined to the project

def test_sixteen_contenders_never_hold_the_lock_together(tmp_path):
    """Every contender records when it holds the lock; with a stale PID file left by a killed
    process to start from, no two holding intervals ever overlap."""
    import subprocess
    import sys

    state = tmp_path / ".patchforge"
    state.mkdir()
    (state / "lock").write_text("999999\n")  # a dead holder's PID: means nothing to flock
    log = tmp_path / "log"
    script = ("import os, sys, time\nfrom patchforge.fsutil import RepoLock\n"
              f"with RepoLock({str(state)!r}, wait=60):\n"
              f"    with open({str(log)!r}, 'a') as out:\n"
              "        out.write(f'in {os.getpid()}\\n'); out.flush()\n"
              "        time.sleep(0.01)\n"
              "        out.write(f'out {os.getpid()}\\n'); out.flush()\n")
    procs = [subprocess.Popen([sys.executable, "-c", script]) for _ in range(16)]
    assert all(p.wait(timeout=120) == 0 for p in procs)
    lines = log.read_text().splitlines()
    assert len(lines) == 32
    for enter, leave in zip(lines[::2], lines[1::2]):
        assert enter.startswith("in ") and leave == "out " + enter[3:]


@pytest.mark.parametrize("damage", ["truncate", "empty", "garbage", "not-an-object",
                                    "missing-fields", "nested-too-deep"])
def test_a_damaged_journal_can_always_be_aborted(tmp_path, damage):
    from helpers.project import add_patch_file
    from helpers.snapshot import tree_bytes

    root, _ = git_project(tmp_path, {"a.py": b"one\ntwo\n"})
    add_patch_file(root, "up", "fix.patch", FIX)
    ok(root, "overlays")
    before = tree_bytes(root)
    journal = root / ".patchforge" / "rebase" / "journal.json"
    journal.parent.mkdir(parents=True)
    text = json.dumps({"version": 1, "phase": "running", "order": ["up"], "upstreams": {}})
    journal.write_text({"truncate": text[:20], "empty": "", "garbage": "\xff\xfe{",
                        "not-an-object": "[1, 2]",
                        "nested-too-deep": "[" * 100000 + "]" * 100000,
                        "missing-fields": json.dumps({"version": 1, "order": ["up"],
                                                      "upstreams": {"up": {}}})}[damage])
    (root / ".patchforge" / "work" / "up").mkdir(parents=True)
    for args in (["rebase", "--continue"], ["rebase", "--to", "up=main"]):
        run = run_cli(root, *args)
        assert run.rc == 2, run.err
        assert "--abort" in run.err
    run = run_cli(root, "status")  # says the rebase needs attention, never an internal error
    assert run.rc in (1, 2) and "internal error" not in run.err, run.err
    run = run_cli(root, "rebase", "--abort")
    assert run.rc == 0, run.err
    assert not journal.exists() and not (root / ".patchforge" / "work" / "up").exists()
    assert {k: v for k, v in tree_bytes(root).items() if not k.startswith(".patchforge")} == \
        {k: v for k, v in before.items() if not k.startswith(".patchforge")}
    ok(root, "status")


@pytest.mark.parametrize("damage", ["truncate", "garbage", "not-an-object", "not-base64",
                                    "not-a-string", "nested-too-deep", "emptied"])
def test_damaged_staged_files_beside_a_stopped_rebase_are_named_and_aborted(tmp_path, damage):
    """A stop keeps the patches rebased so far in staged-<n>.json beside the journal; one
    damaged (cut short, not JSON, not an object, nested too deep) ended `rebase --continue` in
    an internal error. It is named as the damaged journal it is, and `--abort` still works."""
    from helpers.project import Stack
    from helpers.snapshot import snapshot
    from helpers.upstream import BASE, Upstream, with_lines

    upstream = Upstream(tmp_path / "up", {"pkg/mod.py": BASE, "pkg/other.py": b"x = 1\n"})
    stack = Stack(tmp_path / "project")
    stack.add_upstream("up", upstream)
    stack.add_patch("up", "first", {"pkg/mod.py": with_lines({2: b"def f2():\n    return -2\n\n"})})
    stack.add_patch("up", "middle", {"pkg/mod.py": with_lines({10: b"def f10():\n    return -10\n\n"})})
    stack.cli("overlays")
    before = snapshot(stack.root, skip_state=True, dirs=False)
    theirs = upstream.commit({"pkg/mod.py": with_lines({10: b"def f10():\n    return 100\n\n"})})
    stack.cli("rebase", "--to", f"up={theirs}", expect=3)
    state = stack.root / ".patchforge" / "rebase"
    staged = sorted(state.glob("staged-*.json"))
    assert staged, sorted(p.name for p in state.iterdir())
    text = staged[0].read_text()
    staged[0].write_text({"truncate": text[:20], "garbage": "\xff\xfe{", "not-an-object": "[1]",
                          "not-base64": json.dumps({"staged/up/first.patch": "!!"}),
                          "not-a-string": json.dumps({"staged/up/first.patch": 5}),
                          "nested-too-deep": "[" * 100000 + "]" * 100000, "emptied": "{}"}[damage])
    (stack.root / ".patchforge" / "work" / "up" / "pkg" / "mod.py").write_bytes(
        with_lines({2: b"def f2():\n    return -2\n\n", 10: b"def f10():\n    return -100\n\n"}))
    run = run_cli(stack.root, "rebase", "--continue")
    assert run.rc == 2, run.err
    if damage == "emptied":  # the file named was a staged.json that is not there
        assert f"{state / 'journal.json'}: the journal names staged/up/first.patch, which no " \
            "staged file beside it holds" in run.err, run.err
    else:
        assert f"{staged[0]}: the staged patch files of the rebase journal cannot be read" \
            in run.err, run.err
    assert "--abort" in run.err and "internal error" not in run.err
    assert snapshot(stack.root, skip_state=True, dirs=False) == before
    run = run_cli(stack.root, "status")
    assert run.rc in (1, 2) and "internal error" not in run.err, run.err
    ok(stack.root, "rebase", "--abort")
    assert not state.exists() or not any(state.iterdir())
    assert snapshot(stack.root, skip_state=True, dirs=False) == before
    ok(stack.root, "status")


@pytest.mark.parametrize("damaged", ["state", "record"])
def test_an_edit_record_nested_too_deep_is_named_never_an_internal_error(tmp_path, damaged):
    """An open edit keeps its state in .patchforge/work/<upstream>.json and its worktree's
    record in .git/patchforge.json; either nested a hundred thousand deep ended `refresh` and
    `edit --close` in "internal error: RecursionError", exit 70, as it did `edit --close
    --discard` for the state, the way out. The state is named as one cut short is, and
    --discard ends the edit; the record is read as none, as one cut short is."""
    from helpers.project import Stack
    from helpers.upstream import BASE, Upstream, with_lines

    upstream = Upstream(tmp_path / "up", {"pkg/mod.py": BASE})
    stack = Stack(tmp_path / "project")
    stack.add_upstream("up", upstream)
    stack.add_patch("up", "first", {"pkg/mod.py": with_lines({2: b"def f2():\n    return -2\n\n"})})
    stack.cli("overlays")
    patch = stack.root / "series" / "up" / "first.patch"
    before = patch.read_bytes()
    ok(stack.root, "edit", "first.patch")
    state = stack.root / ".patchforge" / "work" / "up.json"
    path = {"state": state,
            "record": stack.root / ".patchforge" / "work" / "up" / ".git" / "patchforge.json"}[damaged]
    assert path.is_file()
    path.write_text("[" * 100000 + "]" * 100000)
    if damaged == "state":
        for args in (["refresh"], ["edit", "--close"]):
            run = run_cli(stack.root, *args)
            assert run.rc == 2, run.text
            assert f"{state}: the open edit's state cannot be read" in run.err, run.err
        ok(stack.root, "edit", "--close", "--discard")
    else:
        ok(stack.root, "refresh")
    assert not state.exists() and patch.read_bytes() == before
    ok(stack.root, "status")


def test_journal_paths_never_leave_the_project(tmp_path):
    """A journal is a file like any other: names and paths in it that lead outside the project
    are never written or removed, even by --abort."""
    import base64

    from helpers.git import git
    from helpers.project import add_patch_file
    from patchforge.errors import UsageError
    from patchforge.rebase.journal import confined

    root, _ = git_project(tmp_path, {"a.py": b"one\ntwo\n"})
    add_patch_file(root, "up", "fix.patch", FIX)
    upstream = tmp_path / "up-upstream"
    (upstream / "a.py").write_bytes(b"uno\ntwo\n")
    git(upstream, "commit", "-qam", "conflicts with the fix")
    assert run_cli(root, "rebase", "--to", "up=main").rc == 3  # stopped on the conflict
    outside = tmp_path / "outside.txt"
    outside.write_bytes(b"keep me\n")
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "data").write_bytes(b"keep\n")
    state = root / ".patchforge" / "rebase"
    doc = json.loads((state / "journal.json").read_text())
    doc["phase"] = "committing"
    doc["upstreams"]["../../../victim"] = {}
    (state / "journal.json").write_text(json.dumps(doc))
    (state / "originals.json").write_text(json.dumps({
        "../outside.txt": base64.b64encode(b"overwritten\n").decode(),
        "series/up/../../../outside.txt": None}))
    run = run_cli(root, "rebase", "--abort")
    assert run.rc == 0, run.err
    assert outside.read_bytes() == b"keep me\n"
    assert (victim / "data").read_bytes() == b"keep\n"
    assert not (state / "journal.json").exists()
    for rel in ("../x", "/etc/passwd", "a/../../x", ".git/config", "series/./x", ""):
        with pytest.raises(UsageError, match="not a path inside the project"):
            confined(root, rel)
    (root / "series" / "link").symlink_to(tmp_path)
    with pytest.raises(UsageError, match="through a symlink"):
        confined(root, "series/link/outside.txt")
    assert confined(root, "series/up/fix.patch") == root / "series/up/fix.patch"


def test_scratch_left_by_kills_is_removed(tmp_path, monkeypatch):
    import os
    import tempfile
    import time

    from patchforge.store.gitstore import UpstreamStore

    root, _ = git_project(tmp_path)
    with UpstreamStore.open() as store:
        pack = store.git_dir / "objects" / "pack"
        old = time.time() - 2 * 3600
        stale = [pack / "tmp_pack_AbC123", Path(tempfile.gettempdir()) / "patchforge-rangediff-x1"]
        stale[0].write_bytes(b"half a pack")
        stale[1].mkdir()
        (stale[1] / "scratch.git").mkdir()
        fresh = pack / "tmp_pack_running"
        fresh.write_bytes(b"a fetch in progress")
        for path in stale:
            os.utime(path, (old, old))
    ok(root, "status")  # any command that opens the store cleans up when it closes it
    assert not any(p.exists() for p in stale)
    assert fresh.exists()


# --------------------------------------------------------------------------------------------
# Output: names and descriptions from files never drive the terminal

ESCAPES = "\x1b]0;owned\x07\x1b[2J\x9b31m"


def test_terminal_escapes_in_a_patch_are_shown_not_obeyed(tmp_path):
    from helpers.cli import run_subprocess
    from helpers.project import add_patch_file

    root, _ = git_project(tmp_path, {"a.py": b"one\ntwo\n"})
    add_patch_file(root, "up", "fix.patch", FIX.replace(
        b"Description: fix", ("Description: fix " + ESCAPES).encode()))
    for args in (["list"], ["show", "fix"], ["status"], ["lint"]):
        proc = run_subprocess(root, *args)
        out = proc.stdout.decode("utf-8", "replace") + proc.stderr.decode("utf-8", "replace")
        assert "\x1b" not in out and "\x07" not in out and "\x9b" not in out, (args, out)
    assert "\\x1b]0;owned\\x07" in run_subprocess(root, "show", "fix").stdout.decode()
    # An error message quoting a hostile name is neutralized too.
    proc = run_subprocess(root, "show", "x" + ESCAPES)
    assert proc.returncode == 2 and b"\x1b" not in proc.stderr and b"\\x1b" in proc.stderr


@pytest.mark.parametrize("hidden", ["\u202e", "\u2066", "\u200b", "\u2028", "\ufeff"])
def test_invisible_characters_in_a_patch_are_shown_not_passed_to_the_terminal(tmp_path, hidden):
    """A bidirectional override in a header (`fix \u202egnp.exe` shows as "fix exe.png"), a
    zero-width space, a line separator: list, show, status and lint passed them to the
    terminal as they were, where they reorder or hide what the reader sees. They are shown as
    `\\u202e`, as control characters are shown as `\\x1b`; a JSON document keeps the value
    (the escape is JSON's own)."""
    from helpers.cli import run_subprocess
    from helpers.project import add_patch_file

    root, _ = git_project(tmp_path, {"a.py": b"one\ntwo\n"})
    add_patch_file(root, "up", "fix.patch", FIX.replace(b"Description: fix", (
        f"Description: fix {hidden}gnp.exe\nForwarded: https://github.com/a/b/pull/1{hidden}"
    ).encode()))
    shown = f"\\u{ord(hidden):04x}"
    for args in (["list"], ["show", "fix"], ["status"], ["lint", "--no-forge"]):
        proc = run_subprocess(root, *args)
        out = proc.stdout.decode("utf-8", "replace") + proc.stderr.decode("utf-8", "replace")
        assert hidden not in out, (args, out)
        # (status and lint quote the header only in what they find about it.)
        assert shown in out or args[0] in ("status", "lint"), (args, out)
    listed = json.loads(run_subprocess(root, "list", "--json").stdout)
    assert listed["patches"][0]["subject"] == f"fix {hidden}gnp.exe"


@pytest.mark.parametrize("encoding", ["latin-1", "ascii"])
def test_a_character_the_terminal_cannot_encode_is_shown_escaped_not_an_internal_error(
        tmp_path, encoding):
    """An ISO-8859-1 (or ASCII) terminal and a patch whose description holds an em dash, or
    whose error names a file with one: every command that shows it ended "internal error:
    UnicodeEncodeError", exit 70. The character is shown as `\\u2014`; what the encoding holds
    is written as it is."""
    from helpers.cli import run_subprocess
    from helpers.project import add_patch_file

    root, _ = git_project(tmp_path, {"a.py": b"one\ntwo\n"})
    add_patch_file(root, "up", "fix.patch", FIX.replace(
        b"Description: fix", "Description: fix \u2014 the fast path, caf\u00e9".encode()))
    for args in (["list"], ["show", "fix"], ["status"], ["lint", "--no-forge"],
                 ["list", "--json"]):
        proc = run_subprocess(root, *args, env={"PYTHONIOENCODING": encoding})
        assert proc.returncode in (0, 1), (args, proc.stderr)
        assert b"internal error" not in proc.stderr, (args, proc.stderr)
        if args == ["list"]:
            # (`show` writes the patch's own bytes; on an ASCII stream click writes UTF-8,
            # taking the locale for a misconfigured one.)
            shown = b"fix \\u2014 the fast path, caf\xe9" if encoding == "latin-1" else \
                "fix \u2014 the fast path, caf\u00e9".encode()
            assert shown in proc.stdout, (args, proc.stdout)
    listed = json.loads(run_subprocess(root, "list", "--json",
                                       env={"PYTHONIOENCODING": encoding}).stdout)
    assert listed["patches"][0]["subject"] == "fix \u2014 the fast path, caf\u00e9"
    # An error message naming a patch the terminal cannot show: exit 2, the name escaped.
    proc = run_subprocess(root, "show", "fix\u2014x", env={"PYTHONIOENCODING": encoding})
    assert proc.returncode == 2 and (b"fix\\u2014x" if encoding == "latin-1" else
                                     "fix\u2014x".encode()) in proc.stderr, proc.stderr
    # A JSON document is UTF-8 (here ASCII, its escapes) whatever the terminal's encoding.
    document = run_subprocess(root, "list", "--json", env={"PYTHONIOENCODING": encoding}).stdout
    assert document.isascii() and b"fix \\u2014 the fast path, caf\\u00e9" in document


# --------------------------------------------------------------------------------------------
# Patches that create what the upstream already has

def _creation(path: str, content: bytes) -> bytes:
    lines = content.splitlines(keepends=True)
    return (f"Description: adds {path}\n\n---\ndiff --git a/{path} b/{path}\nnew file mode 100644\n"
            f"--- /dev/null\n+++ b/{path}\n@@ -0,0 +1,{len(lines)} @@\n").encode() + \
        b"".join(b"+" + line for line in lines)


@pytest.mark.parametrize("patch, message", [
    (_creation("a.py", b"replaced\n"), "creates a.py, which the upstream already has"),
    (_creation("pkg", b"x\n"), "creates pkg, which is a directory in the upstream"),
    (_creation("a.py/inner.py", b"x\n"), "creates a.py/inner.py, but a.py is a file"),
    (b"Description: copy\n\n---\ndiff --git a/a.py b/pkg/b.py\nsimilarity index 100%\n"
     b"copy from a.py\ncopy to pkg/b.py\n", "copies to pkg/b.py, which the upstream already has"),
])
def test_a_patch_creating_what_the_upstream_has_is_refused(tmp_path, patch, message):
    from helpers.project import add_patch_file
    from helpers.snapshot import tree_bytes

    root, _ = git_project(tmp_path, {"a.py": b"one\ntwo\n", "pkg/b.py": b"b\n"})
    add_patch_file(root, "up", "new.patch", patch)
    before = tree_bytes(root)
    for args in (["overlays"], ["edit", "new"]):
        run = run_cli(root, *args)
        assert run.rc == 2, run.err
        assert message in run.err and "new.patch:4:" in run.err, run.err
    assert tree_bytes(root) == before
    if "already has" in message:  # git apply refuses the same patch on the same tree
        import subprocess
        proc = subprocess.run(["git", "apply", "--check", str(root / "series/up/new.patch")],
                              cwd=tmp_path / "up-upstream", capture_output=True)
        assert proc.returncode != 0 and b"already exists" in proc.stderr


def test_creating_a_file_the_upstream_has_byte_for_byte_is_no_collision(tmp_path):
    from helpers.project import add_patch_file

    root, _ = git_project(tmp_path, {"a.py": b"one\ntwo\n"})
    add_patch_file(root, "up", "same.patch", _creation("a.py", b"one\ntwo\n"))
    ok(root, "overlays")


# --------------------------------------------------------------------------------------------
# Mail headers and Markdown: a header value never starts a header, text never becomes HTML

def test_export_mbox_never_lets_a_header_value_start_a_header(tmp_path):
    import mailbox

    from helpers.project import add_patch_file

    root, _ = git_project(tmp_path, {"a.py": b"one\ntwo\n"})
    add_patch_file(root, "up", "fix.patch", FIX.replace(
        b"Author: A <a@example.com>\n",
        b"Author: A <a@example.com>\n Bcc: victim@example.com\n"
        b"Description2: x\r\nX-Injected: 1\n").replace(
        b"\n\n---\n", b"\n\nFrom 0000 Mon Sep 17 00:00:00 2001\nFrom: evil <e@x>\n\n---\n"))
    out = tmp_path / "out.mbox"
    ok(root, "export", "--mbox", str(out))
    messages = list(mailbox.mbox(str(out)))
    assert len(messages) == 1
    message = messages[0]
    assert message["Bcc"] is None and message["X-Injected"] is None
    # The From is the field's first person (the author git am gives the commit); the folded
    # rest stays in the field, in the message body, as written.
    assert message["From"] == "A <a@example.com>"
    assert b"\n Bcc: victim@example.com\n" in out.read_bytes()
    # git am takes it as one patch, the From line in the description staying in the message.
    from helpers.git import git
    upstream = tmp_path / "up-upstream"
    before = int(git(upstream, "rev-list", "--count", "HEAD"))
    git(upstream, "am", str(out))
    assert int(git(upstream, "rev-list", "--count", "HEAD")) == before + 1
    assert (upstream / "a.py").read_bytes() == b"ONE\ntwo\n"
    assert ">From 0000" in git(upstream, "log", "-1", "--format=%B")


def test_patches_md_and_pr_md_never_carry_raw_html(tmp_path):
    from helpers.project import add_patch_file

    hostile = b"fix <!-- the rest is hidden --> <img src=x onerror=alert(1)>"
    root, _ = git_project(tmp_path, {"a.py": b"one\ntwo\n"})
    add_patch_file(root, "up", "fix.patch", FIX.replace(b"Description: fix", b"Description: "
                                                        + hostile).replace(
        b"\n---\n", b"\nWhy: <details><summary>x</summary>\nsee <https://example.org/ok>\n"
                    b"```\nkept <raw> in code\n```\n---\n", 1))
    ok(root, "ledger")
    ledger = (root / "series" / "PATCHES.md").read_text()
    body_lines = ledger.split("\n", 1)[1]  # the first line is patchforge's own comment
    assert "<!--" not in body_lines and "<img" not in body_lines
    assert "&lt;!-- the rest is hidden --&gt;" in body_lines or \
        "&lt;!-- the rest is hidden -->" in body_lines
    run = ok(root, "pr", "fix", "--json", "--out", str(tmp_path / "pr"))
    body = Path(json.loads(run.out)["written"]["body"]).read_text()
    assert "<!--" not in body and "<img" not in body and "<details>" not in body
    assert "<https://example.org/ok>" in body or "https://example.org/ok" in body


def _outside_code_spans(line: str) -> str:
    """`line` without its inline code spans, read as CommonMark reads them: a run of N
    backticks opens a span that the next run of exactly N backticks closes (a run without
    one is text)."""
    import re

    out, at = [], 0
    runs = list(re.finditer(r"`+", line))
    k = 0
    while k < len(runs):
        opening = runs[k]
        closing = next((r for r in runs[k + 1:] if len(r.group()) == len(opening.group())), None)
        if closing is None:
            k += 1
            continue
        out.append(line[at:opening.start()])
        at = closing.end()
        k = runs.index(closing) + 1
    out.append(line[at:])
    return "".join(out)


def test_a_file_name_with_backticks_never_leaves_its_code_span(tmp_path):
    """A patch creating `docs/x``<img src=y>``.md` (git takes the name): PATCHES.md wrapped
    it in two backticks, the name's own two ended the span, and `<img src=y>` was raw HTML in
    the page GitHub renders. The span is now opened by more backticks than the name holds."""
    from helpers.project import add_patch_file
    from helpers.upstream import diff_of

    root, base = git_project(tmp_path, {"a.py": b"one\n"})
    name = "docs/x``<img src=y>``.md"
    add_patch_file(root, "up", "hostile.patch",
                   FIX.split(b"diff --git", 1)[0] + diff_of(tmp_path / "d", name, None, b"new\n"))
    ok(root, "ledger")
    rows = [line for line in (root / "series" / "PATCHES.md").read_text().splitlines()
            if "hostile.patch" in line]
    assert rows and name in rows[0]
    assert "<img" not in _outside_code_spans(rows[0]), rows[0]


def test_a_state_path_that_is_a_file_is_named_never_taken_for_a_rebase(tmp_path):
    """`.patchforge` committed as a file (`/.patchforge/` in .gitignore ignores a directory
    only): `status` said "a rebase is in progress (journal unreadable)", and every writing
    command failed with "Not a directory" and the hint that the rebase journal records where
    the rebase stands (`rebase --continue`, `--abort`), for a rebase that never was. Status
    reads the project as it is; a writing command names the file and the way on."""
    root = _three_fixes(tmp_path)
    shutil.rmtree(root / ".patchforge")
    (root / ".patchforge").write_bytes(b"not a directory\n")
    run = run_cli(root, "status")
    assert run.rc == 0 and "rebase" not in run.text, run.text
    for args in (["overlays"], ["edit", "fix-5"]):
        run = run_cli(root, *args)
        assert run.rc == 2, (args, run.text)
        assert f"{root / '.patchforge'} is a file, not a directory" in run.err, (args, run.err)
        assert "rebase" not in run.err, (args, run.err)
    assert (root / ".patchforge").read_bytes() == b"not a directory\n"


def test_a_symlinked_state_directory_is_never_written_through(tmp_path):
    """.patchforge/ committed as a symlink (`git add -f` passes .gitignore), or a link inside
    it: `overlays` truncated the `lock` file of the directory it named, and `edit` made its
    worktree there. Every writing command now refuses it (exit 2) naming the link, and the
    directory it names is untouched; read-only commands still run."""
    root, _ = git_project(tmp_path)
    patch = ("Description: d\nAuthor: a <a@b>\nUpstream-Status: Pending\nUpstream: up\n\n---\n"
             "diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -1,3 +1,3 @@\n line1\n-line2\n"
             "+LINE2\n line3\n")
    (root / "series" / "up").mkdir(parents=True, exist_ok=True)
    (root / "series" / "up" / "fix.patch").write_text(patch)
    (root / "series" / "up" / "series").write_text("fix.patch\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "lock").write_bytes(b"someone else's\n")
    shutil.rmtree(root / ".patchforge", ignore_errors=True)
    for link in (root / ".patchforge", root / ".patchforge" / "work"):
        link.parent.mkdir(exist_ok=True)
        link.symlink_to(elsewhere)
        for args in (["overlays"], ["edit", "fix"], ["new", "other"], ["rename", "fix", "b"]):
            run = run_cli(root, *args)
            assert run.rc == 2 and f"{link} is a symlink" in run.err, (link, args, run.text)
            assert tree_bytes(elsewhere) == {"lock": b"someone else's\n"}, (link, args)
        ok(root, "list")
        link.unlink()
    ok(root, "edit", "fix")


@pytest.mark.parametrize("kind", ["symlink", "file"])
def test_a_fix_is_never_kept_aside_through_a_symlinked_or_unusable_deleted_directory(tmp_path, kind):
    """`series/up/deleted` committed as a symlink to a directory outside the project: `delete`
    wrote the fix's only kept copy there (exit 0, "kept as .../deleted/fix.patch"), where
    `git status` does not show it. As a file, it failed with "File exists" and a hint to run
    it again, which fails the same. Both are refused, exit 2, naming it; nothing is written
    outside or changed in the project, for a fix of the series and one in skipped/ alike."""
    root, _ = git_project(tmp_path)
    ok(root, "new", "fix", "--file", "a.py")
    work = root / ".patchforge" / "work" / "up" / "a.py"
    work.write_bytes(work.read_bytes().replace(b"line2\n", b"LINE2\n"))
    ok(root, "refresh")
    up = root / "series" / "up"
    (up / "skipped").mkdir()
    (up / "skipped" / "old.patch").write_bytes((up / "fix.patch").read_bytes())
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    if kind == "symlink":
        (up / "deleted").symlink_to(elsewhere)
    else:
        (up / "deleted").write_bytes(b"not a directory\n")
    before = tree_bytes(root / "series")
    for name in ("fix", "old"):
        run = run_cli(root, "delete", name)
        assert run.rc == 2, (name, run.text)
        said = "is a symlink" if kind == "symlink" else "is not a directory"
        assert f"{up / 'deleted'} {said}" in run.err, (name, run.text)
        assert tree_bytes(elsewhere) == {}, name
        assert tree_bytes(root / "series") == before, name


def test_a_kept_fix_the_history_or_the_lock_committed_as_a_link_or_a_fifo_is_never_read(tmp_path):
    """A pull request commits `series/up/upstreamed/x.patch`, `series/history.jsonl` or
    `upstream.lock` as a symlink: to /dev/zero it ran status, lint, verify, overlays --check and
    check (which judge the fixes kept as landed), or every command (the lock), out of memory,
    exit 70; to a file outside the project it read that file as the stack's. A FIFO there (or
    under deleted/, which `pr` reads for the pull requests other fixes claim) hung them for ever.
    Each is refused, exit 2, naming the link, as a link among the series' own files is; and a
    fix under deleted/ that does not parse no longer stops `pr` of another fix."""
    root, _ = git_project(tmp_path)
    ok(root, "new", "fix", "--file", "a.py")
    work = root / ".patchforge" / "work" / "up" / "a.py"
    work.write_bytes(work.read_bytes().replace(b"line2\n", b"LINE2\n"))
    ok(root, "refresh")
    ok(root, "ledger")
    ok(root, "overlays")
    up = root / "series" / "up"
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "kept.patch").write_bytes((up / "fix.patch").read_bytes())
    (outside / "history.jsonl").write_bytes(b'{"event": "note", "v": 1, "upstream": "up"}\n')
    (outside / "upstream.lock").write_bytes((root / "upstream.lock").read_bytes())

    (up / "upstreamed").mkdir()
    kept = up / "upstreamed" / "x.patch"
    kept.symlink_to(outside / "kept.patch")
    for command in ("status", "lint", "verify", "overlays --check", "check"):
        run = run_cli(root, *command.split())
        assert run.rc == 2 and f"{kept} is a symlink" in run.err, (command, run.text)
    kept.unlink()
    os.mkfifo(kept)
    for command in ("status", "verify"):
        proc = run_subprocess(root, command, timeout=120)
        assert proc.returncode == 2 and f"{kept} is not a regular file" in proc.stderr.decode(), \
            (command, proc.stderr)
    kept.unlink()

    history = root / "series" / "history.jsonl"
    assert not history.exists()
    history.symlink_to(outside / "history.jsonl")
    ledger = (root / "series" / "PATCHES.md").read_bytes()
    run = run_cli(root, "ledger")
    assert run.rc == 2 and f"{history} is a symlink" in run.err, run.text
    assert (root / "series" / "PATCHES.md").read_bytes() == ledger
    history.unlink()

    lock = root / "upstream.lock"
    lock.unlink()
    lock.symlink_to(outside / "upstream.lock")
    for command in ("status", "overlays --check", "rebase --to main --dry-run"):
        run = run_cli(root, *command.split())
        assert run.rc == 2 and f"{lock} is a symlink" in run.err, (command, run.text)
    lock.unlink()
    shutil.copyfile(outside / "upstream.lock", lock)

    (up / "deleted").mkdir()
    (up / "deleted" / "old.patch").write_bytes(b"Description: old\nProfiles:\n\n---\n")
    os.mkfifo(up / "deleted" / "pipe.patch")
    proc = run_subprocess(root, "pr", "fix", timeout=120)
    assert proc.returncode == 0, proc.stderr


def test_a_terminal_escape_in_a_mails_subject_is_refused_and_never_written_raw_into_the_ledger(
        tmp_path):
    """An mbox whose Subject (an RFC 2047 word) decodes to terminal escape sequences (set the
    window title, clear the screen): `import mbox` kept them in the fix's Description, and
    `ledger` wrote them raw into series/PATCHES.md, a committed file that `cat`, `git diff` or
    `git log -p` shows in a reviewer's terminal; `lint` said nothing. The import is refused,
    exit 2, naming the mail, nothing written; a header written so by hand is written visible
    by the ledger (`\\x1b`), and `lint` names it."""
    import base64

    root, _ = git_project(tmp_path)
    subject = "fix \x1b]0;owned\x07\x1b[2J title"
    word = "=?utf-8?b?" + base64.b64encode(subject.encode()).decode() + "?="
    diff = ("diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -1,3 +1,3 @@\n line1\n"
            "-line2\n+LINE2\n line3\n")
    (tmp_path / "in.mbox").write_text(
        "From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\n"
        "From: A <a@x>\nDate: Mon, 1 Jan 2024 00:00:00 +0000\n"
        f"Subject: {word}\n\nBody text.\n---\n{diff}-- \n2.40.0\n\n")
    before = tree_bytes(root, skip=(".patchforge",))
    run = run_cli(root, "import", "mbox", str(tmp_path / "in.mbox"), "--upstream", "up")
    assert run.rc == 2 and "in.mbox (message 1): its Subject holds a control character (\\x1b)" \
        in run.err, run.text
    assert tree_bytes(root, skip=(".patchforge",)) == before
    ok(root, "new", "fix", "--file", "a.py")
    work = root / ".patchforge" / "work" / "up" / "a.py"
    work.write_bytes(work.read_bytes().replace(b"line2\n", b"LINE2\n"))
    ok(root, "refresh")
    patch = root / "series" / "up" / "fix.patch"
    data = patch.read_bytes()
    assert data.startswith(b"Description: ")
    patch.write_bytes(b"Description: " + subject.encode() + data[data.index(b"\n"):])
    ok(root, "ledger")
    ledger = (root / "series" / "PATCHES.md").read_bytes()
    assert b"\x1b" not in ledger and b"\x07" not in ledger
    assert b"fix \\x1b]0;owned\\x07\\x1b[2J title" in ledger
    run = run_cli(root, "lint", "--no-forge")
    assert run.rc == 1 and "Description holds a control character (\\x1b)" in run.out, run.text


def _clone_with_line2_fixed(tmp_path, message: str):
    """A clone of git_project's upstream with one commit, `message`, changing a.py's line2."""
    from helpers.git import git

    upstream = next(tmp_path.glob("*-upstream"))
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(upstream), str(clone))
    (clone / "a.py").write_bytes((clone / "a.py").read_bytes().replace(b"line2", b"LINE2"))
    git(clone, "commit", "-qam", message)
    return clone


def test_a_terminal_escape_is_refused_by_every_command_that_writes_a_header_from_outside(
        tmp_path):
    """`import mbox` refused a Subject holding terminal escape sequences, but the other ways a
    subject enters a fix's header took it raw into the patch file (which `cat`, `git diff`
    and `git log -p` show in a reviewer's terminal) and `export --mbox` wrote it back into a
    mail that `import mbox` then refused: `new -m` and `import overlay -m`, a quilt patch's
    header (`import quilt`),
    a commit's subject or author (`import git`). Each is refused now, exit 2, naming where it
    came from (the quilt file's line, the commit), nothing written."""
    from helpers.git import git

    root, _ = git_project(tmp_path)
    diff = (b"diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -1,3 +1,3 @@\n line1\n"
            b"-line2\n+LINE2\n line3\n")
    before = tree_bytes(root, skip=(".patchforge",))
    run = run_cli(root, "new", "fix", "-m", "fix " + ESCAPES, "--no-edit")
    assert run.rc == 2 and "-m holds a control character (\\x1b)" in run.err, run.text
    assert tree_bytes(root, skip=(".patchforge",)) == before
    overlay = tmp_path / "a.py"
    overlay.write_bytes(b"line1\nLINE2\n" + b"".join(b"line%d\n" % i for i in range(3, 21)))
    run = run_cli(root, "import", "overlay", str(overlay), "--path", "a.py", "--name", "fix",
                  "-m", "fix " + ESCAPES)
    assert run.rc == 2 and "-m holds a control character (\\x1b)" in run.err, run.text
    assert tree_bytes(root, skip=(".patchforge",)) == before
    quilt = tmp_path / "quilt"
    quilt.mkdir()
    (quilt / "series").write_text("first.patch\nsecond.patch\n")
    (quilt / "first.patch").write_bytes(b"Description: first\n\n" + diff)
    (quilt / "second.patch").write_bytes(
        b"Author: A <a@x>\nDescription: second " + ESCAPES.encode() + b"\n\n"
        + b"diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -1,3 +1,3 @@\n line1\n"
        b" LINE2\n-line3\n+LINE3\n")
    run = run_cli(root, "import", "quilt", str(quilt))
    assert run.rc == 2 and f"{quilt / 'second.patch'}:2: its Description holds a control " \
        "character (\\x1b): nothing was imported" in run.err, run.text
    assert tree_bytes(root, skip=(".patchforge",)) == before
    clone = _clone_with_line2_fixed(tmp_path, "fix " + ESCAPES)
    for what, author in (("subject", None), ("author", "A \x9b31m B <a@example.com>")):
        if author:
            git(clone, "commit", "-q", "--amend", "-m", "fix", f"--author={author}")
        run = run_cli(root, "import", "git", "HEAD^!", "--repo", str(clone))
        assert run.rc == 2 and f"'s {what} holds a control character" in run.err and \
            "nothing was imported" in run.err, run.text
        assert tree_bytes(root, skip=(".patchforge",)) == before
    assert "\x1b" not in run.err and "\x9b" not in run.err


def test_a_terminal_escape_in_the_authors_name_or_email_is_refused_naming_where_it_came_from(
        tmp_path, monkeypatch):
    """`new` and `import overlay` write the Author from GIT_AUTHOR_NAME/GIT_AUTHOR_EMAIL, else
    git's user.name/user.email: a terminal escape there went into the patch file, exit 0, and
    `lint` then failed the stack on it (`new -m` with the same character is refused). Refused
    now, exit 2, naming the variable or the git setting, nothing written."""
    from helpers.git import git

    root, _ = git_project(tmp_path)
    overlay = tmp_path / "a.py"
    overlay.write_bytes(b"line1\nLINE2\n" + b"".join(b"line%d\n" % i for i in range(3, 21)))
    before = tree_bytes(root, skip=(".patchforge",))
    config = tmp_path / "gitconfig"
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    for variable, value, source in (
            ("GIT_AUTHOR_NAME", "A " + ESCAPES, "GIT_AUTHOR_NAME"),
            ("GIT_AUTHOR_EMAIL", "a\x1b@example.com", "GIT_AUTHOR_EMAIL"),
            ("GIT_AUTHOR_NAME", None, "git's user.name")):
        monkeypatch.setenv("GIT_AUTHOR_NAME", "A")
        monkeypatch.setenv("GIT_AUTHOR_EMAIL", "a@example.com")
        if value is None:
            monkeypatch.delenv(variable)
            git(tmp_path, "config", "--file", str(config), "user.name", "A \x9b31m B")
        else:
            monkeypatch.setenv(variable, value)
        for command in (["new", "fix", "--no-edit"],
                        ["import", "overlay", str(overlay), "--path", "a.py", "--name", "fix"]):
            run = run_cli(root, *command)
            assert run.rc == 2, (source, command, run.text)
            assert f"the author's {source} holds a control character" in run.err, run.err
            assert "\x1b" not in run.err and "\x9b" not in run.err
            assert tree_bytes(root, skip=(".patchforge",)) == before, (source, command)


def test_a_kept_fix_that_does_not_parse_is_named_never_taken_for_landed(tmp_path):
    """A file under upstreamed/ whose diff patchforge refuses (a hunk cut short, a path with
    `..`: edited by hand, a merge) was judged by nothing and said by nobody: lint exit 0, and
    `bring-back` said "upstream has its change at the pin", `delete` "the pin still has its
    change", neither checked. lint names it now (an error, the file and line), bring-back
    refuses it naming the line, and delete takes it out (kept under deleted/)."""
    root, base = git_project(tmp_path)
    kept = root / "series" / "up" / "upstreamed"
    kept.mkdir(parents=True)
    header = (f"Description: kept\nAuthor: A <a@example.com>\nOrigin: vendor\n"
              f"Upstream-Status: Accepted\nUpstream: up\nBase: {base}\n\nWhy.\n---\n").encode()
    (kept / "cut.patch").write_bytes(header + b"diff --git a/a.py b/a.py\n--- a/a.py\n"
                                     b"+++ b/a.py\n@@ -1,9 +1,9 @@\n-line1\n")
    (kept / "evil.patch").write_bytes(
        header + b"diff --git a/../out.py b/../out.py\nnew file mode 100644\n--- /dev/null\n"
        b"+++ b/../out.py\n@@ -0,0 +1 @@\n+landed\n")
    run = run_cli(root, "lint", "--no-forge", "--json")
    assert run.rc == 1, run.text
    found = {f["patch"]: f for f in json.loads(run.out)["findings"]}
    for name, line in (("cut", 13), ("evil", 10)):
        finding = found[f"up/upstreamed/{name}.patch"]
        assert (finding["check"], finding["severity"]) == ("parse", "error"), finding
        assert f"{kept / name}.patch:{line}: " in finding["message"], finding
    # status and check, a CI gate's commands, said nothing and exited 0 on it: a kept fix
    # nobody can judge (a landing upstream takes back goes unsaid) needs attention there too.
    run = run_cli(root, "status")
    assert run.rc == 1, run.text
    for name, line in (("cut", 13), ("evil", 10)):
        assert f"NOT CHECKED (needs attention): up/upstreamed/{name}.patch is judged by " \
               f"nothing: {kept / name}.patch:{line}: " in run.out, run.text
    run = run_cli(root, "status", "--json", "--html", str(tmp_path / "report.html"))
    assert run.rc == 1, run.text
    document = json.loads(run.out)
    assert document["needs_attention"] is True
    unparsed = {u["path"]: u for u in document["unparsed"]}
    assert set(unparsed) == {"series/up/upstreamed/cut.patch", "series/up/upstreamed/evil.patch"}
    assert f"{kept / 'cut'}.patch:13: " in unparsed["series/up/upstreamed/cut.patch"]["message"]
    # The report says the sentence status says (one function gives it).
    assert f"NOT CHECKED: up/upstreamed/evil.patch is judged by nothing: " \
           f"{kept / 'evil'}.patch:10: " in html.unescape((tmp_path / "report.html").read_text())
    run = run_cli(root, "check")
    assert run.rc == 1, run.text
    assert f"NOT CHECKED: up/upstreamed/cut.patch is judged by nothing: {kept / 'cut'}.patch:13: " \
        in run.err, run.text
    run = run_cli(root, "check", "--json")
    assert run.rc == 1, run.text
    document = json.loads(run.out)
    assert document["ok"] is False
    assert any(f"{kept / 'evil'}.patch:10: " in note for note in document["notes"]), document
    # verify (the deployment's gate) and overlays --check passed over it without a word: each
    # says it NOT CHECKED, as a kept fix it cannot judge (a note; exit 0 for that alone).
    ok(root, "overlays")
    for command in (("verify",), ("overlays", "--check")):
        run = run_cli(root, *command)
        assert run.rc == 0, (command, run.text)
        for name, line in (("cut", 13), ("evil", 10)):
            assert f"NOT CHECKED: up/upstreamed/{name}.patch is judged by nothing: " \
                   f"{kept / name}.patch:{line}: " in run.err, (command, run.text)
        run = run_cli(root, *command, "--json")
        assert run.rc == 0, (command, run.text)
        notes = json.loads(run.out)["notes"]
        assert any(f"{kept / 'cut'}.patch:13: " in note for note in notes), (command, notes)
    before = tree_bytes(root, skip=(".patchforge",))
    run = run_cli(root, "bring-back", "up/upstreamed/cut")
    assert run.rc == 2 and f"{kept / 'cut.patch'}:13: " in run.err, run.text
    assert "has its change" not in run.err
    assert tree_bytes(root, skip=(".patchforge",)) == before
    data = (kept / "evil.patch").read_bytes()
    ok(root, "delete", "up/upstreamed/evil")
    assert not (kept / "evil.patch").exists()
    assert (root / "series" / "up" / "deleted" / "evil.patch").read_bytes() == data


def test_pr_refuses_a_header_holding_a_terminal_escape(tmp_path):
    """A header written by hand with a terminal escape sequence (`lint` flags it): `pr` made
    the upstream commit with it in its subject (format-patch's `Subject:` and the branch
    `--push` sends, which `git log` shows raw in every upstream maintainer's terminal) and the
    pull request's title. It is refused now, exit 2, naming the patch file and the line,
    nothing written."""
    from helpers.project import add_patch_file, patch_bytes

    root, base = git_project(tmp_path)
    diff = (b"diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -1,3 +1,3 @@\n line1\n"
            b"-line2\n+LINE2\n line3\n")
    data = patch_bytes("up", base, "fix", diff, "")
    add_patch_file(root, "up", "fix.patch", data.replace(
        b"Description: fix", b"Description: fix " + ESCAPES.encode(), 1))
    before = tree_bytes(root)
    run = run_cli(root, "pr", "fix", "--out", str(tmp_path / "pr"))
    assert run.rc == 2 and "series/up/fix.patch:1: its Description holds a control character " \
        "(\\x1b), which the commit and the pull request would carry upstream" in run.err, \
        run.text
    assert tree_bytes(root) == before and not (tmp_path / "pr").exists()


@pytest.mark.parametrize("where, line", [("Author", 2), ("description", 8)])
def test_pr_and_export_refuse_a_patch_whose_header_is_not_utf8_naming_the_line(tmp_path, where,
                                                                             line):
    """A patch saved in Latin-1 (`Author: Andr\\xe9`): `pr --out` wrote PR.md and the
    format-patch file, then ended in an internal error (exit 70) writing its JSON record,
    which cannot hold the byte; a description line was changed to U+FFFD in the pull request.
    Refused now by `pr` and `export --mbox` before anything is written, naming the line."""
    from helpers.project import add_patch_file, patch_bytes

    root, base = git_project(tmp_path)
    diff = (b"diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -1,3 +1,3 @@\n line1\n"
            b"-line2\n+LINE2\n line3\n")
    data = patch_bytes("up", base, "fix", diff, "")
    data = data.replace(b"Author: Test Author", b"Author: Andr\xe9 Author", 1) \
        if where == "Author" else data.replace(b"Why this fix", b"Caf\xe9: why this fix", 1)
    add_patch_file(root, "up", "fix.patch", data)
    before = tree_bytes(root)
    run = run_cli(root, "pr", "fix", "--out", str(tmp_path / "pr"))
    assert run.rc == 2 and f"series/up/fix.patch:{line}: its {where} holds bytes that are not " \
        "UTF-8" in run.err, run.text
    assert tree_bytes(root) == before and not (tmp_path / "pr").exists()
    run = run_cli(root, "export", "--mbox", str(tmp_path / "out.mbox"))
    if where == "description":
        # A mail's body carries the free text byte for byte, and `import mbox` gives it back
        # (test_cli_exchange.py::test_export_mbox_then_import_mbox_keeps_every_field_byte_for_byte).
        assert run.rc == 0 and b"Caf\xe9: why this fix" in (tmp_path / "out.mbox").read_bytes()
        return
    assert run.rc == 2 and f"series/up/fix.patch:{line}: its {where} holds bytes" in run.err
    assert not (tmp_path / "out.mbox").exists()


def test_a_terminal_escape_in_a_description_is_named_by_lint_and_refused_by_pr_and_imports(
        tmp_path):
    """A header's terminal escape sequence was refused, but the free text between the header
    and the diff was read by nothing: `lint` said nothing, `pr` made it the upstream commit's
    body and the pull request's, `export --mbox` the mail's, and `import quilt`, `import git`
    (a commit's body) and `import mbox` (a mail's body) took it in raw. Now `lint` names the
    file and the line, `pr` refuses naming them, each import refuses as for a header, nothing
    written. A tab and CRLF line ends stay text."""
    from helpers.git import git
    from helpers.project import add_patch_file, patch_bytes

    root, base = git_project(tmp_path)
    diff = (b"diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -1,3 +1,3 @@\n line1\n"
            b"-line2\n+LINE2\n line3\n")
    data = patch_bytes("up", base, "fix", diff, "")
    add_patch_file(root, "up", "fix.patch", data.replace(
        b"Why this fix exists, in a few words.\n",
        b"Why this fix exists,\tin a few words.\r\nSee " + ESCAPES.encode() + b" here.\n", 1))
    before = tree_bytes(root)
    run = run_cli(root, "lint")
    assert run.rc == 1 and "the description holds a control character (\\x1b) at line 9 of " \
        "series/up/fix.patch" in run.text, run.text
    run = run_cli(root, "pr", "fix", "--out", str(tmp_path / "pr"))
    assert run.rc == 2 and "series/up/fix.patch:9: its description holds a control character " \
        "(\\x1b), which the commit and the pull request would carry upstream" in run.err, \
        run.text
    assert tree_bytes(root) == before and not (tmp_path / "pr").exists()
    # A tab and a CRLF line end are text: nothing said of them.
    add_patch_file(root, "up", "fix.patch", data.replace(
        b"Why this fix exists, in a few words.\n", b"Why this fix exists,\tin a few words.\r\n"))
    assert "control character" not in run_cli(root, "lint").text
    (root / "series" / "up" / "fix.patch").unlink()
    (root / "series" / "up" / "series").write_text("")
    before = tree_bytes(root, skip=(".patchforge",))
    quilt = tmp_path / "quilt"
    quilt.mkdir()
    (quilt / "series").write_text("first.patch\n")
    (quilt / "first.patch").write_bytes(b"Description: first\n\nTab\tis fine.\nNot "
                                        + ESCAPES.encode() + b"\n" + diff)
    run = run_cli(root, "import", "quilt", str(quilt))
    assert run.rc == 2 and f"{quilt / 'first.patch'}:4: its description holds a control " \
        "character (\\x1b): nothing was imported" in run.err, run.text
    assert tree_bytes(root, skip=(".patchforge",)) == before
    clone = _clone_with_line2_fixed(tmp_path, "fix it\n\nBecause " + ESCAPES + " of it.")
    run = run_cli(root, "import", "git", "HEAD^!", "--repo", str(clone))
    assert run.rc == 2 and "'s message holds a control character (\\x1b) in its description: " \
        "nothing was imported" in run.err, run.text
    assert tree_bytes(root, skip=(".patchforge",)) == before
    mbox = tmp_path / "fix.mbox"
    mbox.write_bytes(git(clone, "format-patch", "-1", "--stdout").encode())
    run = run_cli(root, "import", "mbox", str(mbox))
    assert run.rc == 2 and "holds a control character (\\x1b) in its description: nothing " \
        "was imported" in run.err, run.text
    assert tree_bytes(root, skip=(".patchforge",)) == before
    assert "\x1b" not in run.err and "\x9b" not in run.err


def _three_fixes(tmp_path: Path) -> Path:
    """A project whose upstream `up` carries three fixes to a.py, made with new + refresh, and
    its overlays written."""
    root, _ = git_project(tmp_path)
    for n in (2, 5, 9):
        ok(root, "new", f"fix-{n}", "--file", "a.py")
        work = root / ".patchforge" / "work" / "up" / "a.py"
        work.write_bytes(work.read_bytes().replace(b"line%d\n" % n, b"LINE%d\n" % n))
        ok(root, "refresh")
    ok(root, "overlays")
    return root


def test_a_lost_series_file_beside_its_patches_is_refused_not_read_as_empty(tmp_path):
    """`series/up/series` removed (an `rm`, a merge that dropped it) while its three patch files
    stay: `overlays` wrote a release with none of the fixes, removing their overlay, exit 0, and
    `overlays --check` then agreed. Both refuse now (exit 2), naming the file and the patch
    files it would leave out, and write nothing; `status` names each file as not in the
    series."""
    root = _three_fixes(tmp_path)
    (root / "series" / "up" / "series").unlink()
    before = tree_bytes(root / "overlays")
    for args in (["overlays"], ["overlays", "--check"]):
        run = run_cli(root, *args)
        assert run.rc == 2, (args, run.text)
        assert "series/up/series: missing, but series/up/ holds 3 patch files (fix-2.patch, " \
            "fix-5.patch, fix-9.patch)" in run.err, (args, run.err)
    assert tree_bytes(root / "overlays") == before
    run = run_cli(root, "status")
    assert run.rc == 1 and run.out.count("not in the series") == 3, run.text
    (root / "series" / "up" / "series").write_bytes(b"fix-2.patch\nfix-5.patch\nfix-9.patch\n")
    ok(root, "overlays", "--check")


def test_a_patch_or_series_path_that_is_not_a_file_is_refused_naming_it(tmp_path):
    """A listed patch that is a directory (an unpacked archive, a bad checkout) made every
    command say `error: Is a directory: 8` (a file descriptor for a name) and "run the command
    again"; a FIFO there would hang it for ever. Each is refused, exit 2, naming the path."""
    root = _three_fixes(tmp_path)
    patch = root / "series" / "up" / "fix-5.patch"
    patch.unlink()
    patch.mkdir()
    for args in (["status"], ["list"], ["overlays"]):
        run = run_cli(root, *args)
        assert run.rc == 2, (args, run.text)
        assert f"{patch} is a directory: a series file or a patch must be a file" in run.err, \
            (args, run.err)
        assert "run the command again" not in run.err
    patch.rmdir()
    os.mkfifo(patch)
    run = subprocess.run([sys.executable, "-m", "patchforge", "--root", str(root), "status"],
                         capture_output=True, timeout=120)
    assert run.returncode == 2 and f"{patch} is not a regular file".encode() in run.stderr, \
        run.stderr


def test_a_patch_saved_with_a_byte_order_mark_is_refused_saying_so(tmp_path):
    """A patch saved by an editor that puts a UTF-8 byte-order mark first was refused saying
    its header "ends at line 1 (a line there is not 'Name: value')", where every editor shows
    `Description: ...`. The refusal names the mark, line 1, and how to save the file."""
    root = _three_fixes(tmp_path)
    patch = root / "series" / "up" / "fix-5.patch"
    patch.write_bytes(b"\xef\xbb\xbf" + patch.read_bytes())
    for args in (["status"], ["overlays"]):
        run = run_cli(root, *args)
        assert run.rc == 2, (args, run.text)
        assert f"{patch}:1: the file begins with a UTF-8 byte-order mark" in run.err, run.err
        assert "save it as UTF-8 without a byte-order mark" in run.err
    run = run_cli(root, "lint", "--no-forge")
    assert run.rc == 1 and "byte-order mark" in run.out, run.text


LONG = "9" * 5000  # Python's int() reads at most 4300 digits (sys.get_int_max_str_digits)


@pytest.mark.parametrize("where", ["lock", "config", "history", "forwarded", "drop-when",
                                   "spec", "quilt"])
def test_a_number_longer_than_python_reads_is_refused_naming_its_line(tmp_path, where):
    """A number of more than 4300 digits (`"version": 999...` in the lock, a TOML integer, a
    history line, a Forwarded pull request's number, a Drop-When version, a SPEC's version, a
    quilt series' `-p999...`) is no integer Python's int() takes: its bare ValueError ended
    each command as an internal error, exit 70. Each is said as bad input now: the file and
    line, exit 2, or for a header field the patch's row."""
    root = _three_fixes(tmp_path)
    patch = root / "series" / "up" / "fix-5.patch"
    header = patch.read_bytes()
    if where == "lock":
        lock = root / "upstream.lock"
        text = lock.read_text()
        lock.write_text(text.replace('\n  "version": 1\n', f'\n  "version": {LONG}\n'))
        line = lock.read_text().split("\n").index(f'  "version": {LONG}') + 1
        run = run_cli(root, "status")
        assert run.rc == 2, run.text
        assert f"{lock}:{line}: not valid JSON: a number of more than 4300 digits" in run.err
    elif where == "config":
        config = root / "pyproject.toml"
        config.write_text(config.read_text() + f"signoff = {LONG}\n")
        line = config.read_text().count("\n")
        run = run_cli(root, "status")
        assert run.rc == 2, run.text
        assert f"{config}:{line}: not valid TOML: a number of more than 4300 digits" in run.err
    elif where == "history":
        history = root / "series" / "history.jsonl"
        history.write_text(f'{{"event": "x", "n": {LONG}}}\n')
        line = history.read_text().count("\n")
        run = run_cli(root, "ledger")
        assert run.rc == 2, run.text
        assert f"{history}:{line}: not a JSON line: a number of more than 4300 digits" in run.err
    elif where in ("forwarded", "drop-when"):
        if where == "drop-when":  # a pin with a version (a tag's), for the condition to meet
            subprocess.run(["git", "tag", "v1", "main"], cwd=tmp_path / "up-upstream", check=True)
            ok(root, "upstream", "pin", "up", "--at", "v1", "--force")
        field = (f"Forwarded: https://github.com/o/r/pull/{LONG}" if where == "forwarded"
                 else f"Drop-When: up>={LONG}").encode()
        patch.write_bytes(header.replace(b"Upstream-Status: Pending",
                                         b"Upstream-Status: Pending\n" + field))
        run = run_cli(root, "--offline", "status")
        assert run.rc in (0, 1) and "internal error" not in run.text, run.text
        assert ("not a pull request URL" if where == "forwarded"
                else "Drop-When up>=999") in run.out, run.out
        run = run_cli(root, "lint", "--no-forge")
        assert run.rc in (0, 1) and "internal error" not in run.text, run.text
    elif where == "spec":
        run = run_cli(root, "status", "--against", f"up=1.0.dev{LONG}")
        assert run.rc == 2 and "cannot resolve up=1.0.dev999" in run.err, run.text
    else:
        quilt = tmp_path / "quilt"
        quilt.mkdir()
        (quilt / "a.patch").write_bytes(header[header.index(b"diff --git"):])
        (quilt / "series").write_text(f"a.patch -p{LONG}\n")
        run = run_cli(root, "import", "quilt", str(quilt))
        assert run.rc == 2, run.text
        assert f"{quilt / 'series'}:1: unsupported series option '-p999" in run.err, run.err
    assert "internal error" not in run.text


def test_a_forge_answer_whose_length_is_no_number_is_said_not_a_traceback(tmp_path):
    """A forge (a proxy in front of it) answering a pull request with a Content-Length of 5000
    digits: int() refused it inside the lookup thread, which died printing a bare Python
    traceback, and `status` waited out its whole 20 s deadline for the answer ("no answer
    within 20 s"). The answer is refused as such now, naming its Content-Length."""
    pull = json.dumps({"number": 1, "state": "open", "merged": False, "url": "x",
                       "html_url": "https://github.com/o/r/pull/1",
                       "head": {"ref": "b", "sha": "0" * 40}, "base": {"ref": "main"},
                       "title": "t"}).encode()
    url, _ = _raw_server(lambda conn: conn.sendall(
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " + b"9" * 5000
        + b"\r\nConnection: close\r\n\r\n" + pull))
    root = _three_fixes(tmp_path)
    config = root / "pyproject.toml"
    config.write_text(config.read_text().replace("https://api.github.com", url))
    patch = root / "series" / "up" / "fix-5.patch"
    patch.write_bytes(patch.read_bytes().replace(
        b"Upstream-Status: Pending",
        b"Upstream-Status: Submitted\nForwarded: https://github.com/o/r/pull/1"))
    run = run_cli(root, "status", "--json")
    assert run.rc == 0 and "Traceback" not in run.err, run.text
    assert "no answer within" not in run.out, run.out
    assert "the answer's Content-Length (99999999999999999999...) is no length" in run.out, run.out


def test_a_patch_a_merge_left_with_conflict_markers_is_refused_naming_the_line(tmp_path):
    """Two branches of the stack each add a file section at the end of one fix, and `git merge`
    leaves both between conflict markers. Between file sections a line is read as a note, so
    `status` said the fix applies and `overlays` wrote both sides' files, exit 0, the merge
    never resolved. Every command refuses it now, naming the marker's line; nothing is written."""
    root = _three_fixes(tmp_path)
    patch = root / "series" / "up" / "fix-5.patch"
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=root, check=True)
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)
    commit = ["git", "-c", "user.name=T", "-c", "user.email=t@e", "commit", "-qam"]
    subprocess.run([*commit, "three fixes"], cwd=root, check=True)
    subprocess.run(["git", "checkout", "-qb", "other"], cwd=root, check=True)
    patch.write_bytes(patch.read_bytes() + b"diff --git a/pkg/b.py b/pkg/b.py\n--- a/pkg/b.py\n"
                      b"+++ b/pkg/b.py\n@@ -1,3 +1,3 @@\n x = 1\n-y = 2\n+y = 3\n z = 3\n")
    subprocess.run([*commit, "other: b.py too"], cwd=root, check=True)
    subprocess.run(["git", "checkout", "-q", "main"], cwd=root, check=True)
    patch.write_bytes(patch.read_bytes() + b"diff --git a/pkg/c.py b/pkg/c.py\n"
                      b"new file mode 100644\n--- /dev/null\n+++ b/pkg/c.py\n@@ -0,0 +1 @@\n"
                      b"+c = 1\n")
    subprocess.run([*commit, "main: a new c.py"], cwd=root, check=True)
    merge = subprocess.run(["git", "merge", "-q", "other"], cwd=root, capture_output=True)
    assert merge.returncode == 1 and b"CONFLICT" in merge.stdout + merge.stderr
    marker = patch.read_bytes().split(b"\n").index(b"<<<<<<< HEAD") + 1
    before = tree_bytes(root / "overlays")
    for args in (["status"], ["overlays"], ["overlays", "--check"]):
        run = run_cli(root, *args)
        assert run.rc == 2, (args, run.text)
        assert f"{patch}:{marker}: a merge conflict marker ('<<<<<<< HEAD'): a merge of this " \
            "patch file was left unresolved" in run.err, (args, run.err)
    assert tree_bytes(root / "overlays") == before
    run = run_cli(root, "lint", "--no-forge")
    assert run.rc == 1 and "a merge conflict marker" in run.out, run.text


@pytest.mark.parametrize("merged", ["series", "upstream.lock", "pyproject.toml"])
def test_a_series_lock_or_configuration_a_merge_left_unresolved_is_said_as_such(tmp_path,
                                                                                merged):
    """Two branches of the stack that each add a fix (each re-pin the upstream, each add an
    upstream) conflict in `series/up/series` (`upstream.lock`, the configuration) when merged.
    The markers were read as a series line ("unsupported series option 'HEAD'"), as JSON
    ("Expecting property name enclosed in double quotes") or TOML ("Invalid statement"), which
    sent the user after a typo. Said as the unresolved merge it is now, naming the marker's
    line, with the way on; nothing is written."""
    root = _three_fixes(tmp_path)
    upstream = tmp_path / "up-upstream"
    commit = ["git", "-c", "user.name=T", "-c", "user.email=t@e", "commit", "-q"]
    for args in (["init", "-q", "-b", "main"], ["add", "-A"]):
        subprocess.run(["git", *args], cwd=root, check=True)
    subprocess.run([*commit, "-m", "three fixes"], cwd=root, check=True)
    for branch in ("other", "main"):
        checkout = ["-b", "other"] if branch == "other" else ["main"]
        subprocess.run(["git", "checkout", "-q", *checkout], cwd=root, check=True)
        if merged == "series":
            ok(root, "new", f"fix-{branch}", "--no-edit", "-m", f"a fix made on {branch}")
        elif merged == "pyproject.toml":
            site = tmp_path / f"site-{branch}"
            site.mkdir()
            (site / "m.py").write_text("m = 1\n")
            ok(root, "upstream", "add", f"d-{branch}", "--dir", str(site), "--at", "one")
        else:
            (upstream / f"{branch}.py").write_text(f"{branch} = 1\n")
            subprocess.run(["git", "add", "-A"], cwd=upstream, check=True)
            subprocess.run([*commit, "-m", branch], cwd=upstream, check=True)
            sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=upstream, check=True,
                                 capture_output=True, text=True).stdout.strip()
            ok(root, "upstream", "pin", "up", "--at", sha, "--force")
        subprocess.run(["git", "add", "-A"], cwd=root, check=True)
        subprocess.run([*commit, "-m", f"{branch}'s change"], cwd=root, check=True)
    merge = subprocess.run(["git", "merge", "-q", "other"], cwd=root, capture_output=True)
    assert merge.returncode == 1 and b"CONFLICT" in merge.stdout + merge.stderr
    path = root / "series" / "up" / "series" if merged == "series" else root / merged
    marker = path.read_bytes().split(b"\n").index(b"<<<<<<< HEAD") + 1
    before = tree_bytes(root / "overlays")
    for args in (["status"], ["overlays"]):
        run = run_cli(root, *args)
        assert run.rc == 2, (args, run.text)
        assert f"{path}:{marker}: a merge conflict marker" in run.err, (args, run.err)
        said = {"series": "this series file", "upstream.lock": "upstream.lock"}
        assert f"a merge of {said.get(merged, 'this file')} was left unresolved" in run.err, \
            run.err
    assert tree_bytes(root / "overlays") == before


def test_a_patch_header_a_merge_left_unresolved_is_refused_not_sent_upstream(tmp_path):
    """Two branches each refresh one fix on another day: both change its Last-Update line, and
    `git merge` leaves that line between conflict markers, the rest of the file merged. The
    header then ended at the marker and the block was read as description: `status` said the fix
    applies, lint found nothing, and `pr` drafted the pull request with the markers in its
    description. Refused now, naming the marker's line."""
    import re

    root = _three_fixes(tmp_path)
    patch = root / "series" / "up" / "fix-5.patch"
    commit = ["git", "-c", "user.name=T", "-c", "user.email=t@e", "commit", "-q"]
    for args in (["init", "-q", "-b", "main"], ["add", "-A"]):
        subprocess.run(["git", *args], cwd=root, check=True)
    subprocess.run([*commit, "-m", "three fixes"], cwd=root, check=True)
    for branch, day in (("other", b"2026-01-02"), ("main", b"2026-01-03")):
        checkout = ["-b", "other"] if branch == "other" else ["main"]
        subprocess.run(["git", "checkout", "-q", *checkout], cwd=root, check=True)
        patch.write_bytes(re.sub(rb"Last-Update: [0-9-]+", b"Last-Update: " + day,
                                 patch.read_bytes()))
        subprocess.run([*commit, "-am", f"{branch}: refreshed"], cwd=root, check=True)
    merge = subprocess.run(["git", "merge", "-q", "other"], cwd=root, capture_output=True)
    assert merge.returncode == 1 and b"CONFLICT" in merge.stdout + merge.stderr
    marker = patch.read_bytes().split(b"\n").index(b"<<<<<<< HEAD") + 1
    for args in (["status"], ["overlays"], ["pr", "fix-5"]):
        run = run_cli(root, *args)
        assert run.rc == 2, (args, run.text)
        assert f"{patch}:{marker}: a merge conflict marker ('<<<<<<< HEAD'): a merge of this " \
            "patch file was left unresolved" in run.err, (args, run.err)
    assert not (root / ".patchforge" / "pr").exists()
    run = run_cli(root, "lint", "--no-forge")
    assert run.rc == 1 and "a merge conflict marker" in run.out, run.text


@pytest.mark.parametrize("kind", ["directory", "fifo"])
def test_verify_installed_names_a_directory_or_pipe_where_a_file_should_be(tmp_path, kind):
    """`verify --installed DIR` with a directory (or a named pipe) where an overlay's pre-image
    should be said "installed file is not the pre-image this overlay was made for", and its
    hint sent the user to deploy another upstream version or rebase. It says what is there."""
    from helpers.project import UPSTREAM_FILES

    root = _three_fixes(tmp_path)
    installed = tmp_path / "site-packages"
    for path, data in UPSTREAM_FILES.items():
        (installed / path).parent.mkdir(parents=True, exist_ok=True)
        if path != "a.py":
            (installed / path).write_bytes(data)
    if kind == "directory":
        (installed / "a.py").mkdir()
    else:
        os.mkfifo(installed / "a.py")
    run = run_cli(root, "verify", "--installed", str(installed), "--json")
    assert run.rc == 1, run.text
    what = "a directory" if kind == "directory" else "a named pipe, a socket or a device"
    assert f"{what} is installed there, where the overlay's pre-image is a file" in run.out, \
        run.out
    assert "not the pre-image" not in run.text and "rebase --to" not in run.text, run.text


@pytest.mark.parametrize("made_a_file", ["series/up", "series"])
def test_a_file_where_a_series_directory_goes_is_named(tmp_path, made_a_file):
    """A file where the series' directory goes (`series/up`, or `series` itself: a merge or a
    hand edit left one): every command failed with "Not a directory: .../series/up/series" and
    the hint "nothing was left half-written (every write is atomic); run the command again",
    which failed the same way. The file is named, with the way on."""
    root = _three_fixes(tmp_path)
    shutil.rmtree(root / made_a_file)
    (root / made_a_file).write_bytes(b"not a directory\n")
    for args in (["status"], ["overlays"], ["list"]):
        run = run_cli(root, *args)
        assert run.rc == 2, (args, run.text)
        assert f"{root / made_a_file} is a file, where a series directory goes" in run.err, \
            (args, run.err)
        assert "run the command again" not in run.err, run.err


def test_overlays_check_names_an_overlays_path_that_is_a_file(tmp_path):
    """`overlays/` itself a file: `overlays --check` said ". is a file, not a directory" for each
    overlay, naming nothing the user could find. It names `overlays` now."""
    root = _three_fixes(tmp_path)
    shutil.rmtree(root / "overlays")
    (root / "overlays").write_bytes(b"not a directory\n")
    run = run_cli(root, "overlays", "--check")
    assert run.rc == 1, run.text
    assert "a.py: overlays is a file, not a directory" in run.out, run.out
    assert ": . is a file" not in run.out, run.out


def test_a_series_or_patch_file_that_is_a_symlink_is_never_read(tmp_path):
    """A pull request commits `series/up/series` as a link to a file of the machine that runs
    its CI (/proc/self/environ, a key): `lint` printed its lines as patch names ("up/SECRET=...
    listed in the series but missing"), and a patch file linked the same way was shown and
    exported as a description. Each is refused, naming the link; nothing of the file shows."""
    root, _ = git_project(tmp_path)
    secret = tmp_path / "environ"
    secret.write_bytes(b"SECRET_TOKEN=ghp_0123456789\n")
    up = root / "series" / "up"
    up.mkdir(parents=True, exist_ok=True)
    (up / "series").symlink_to(secret)
    for args in (["lint", "--no-forge"], ["status"], ["list"]):
        run = run_cli(root, *args)
        assert run.rc in (1, 2) and "ghp_" not in run.text, (args, run.text)
        assert f"{up / 'series'} is a symlink" in run.text, (args, run.text)
    (up / "series").unlink()
    (up / "series").write_bytes(b"leak.patch\n")
    (up / "leak.patch").symlink_to(secret)
    for args in (["lint", "--no-forge"], ["status"], ["show", "leak", "--no-pager"],
                 ["export", "--mbox", str(tmp_path / "out.mbox")]):
        run = run_cli(root, *args)
        assert run.rc in (1, 2) and "ghp_" not in run.text, (args, run.text)
        assert "leak.patch is a symlink" in run.text, (args, run.text)
    assert not (tmp_path / "out.mbox").exists()
    # Set aside (skipped/, upstreamed/): the ledger put the linked file's first line in
    # series/PATCHES.md as the fix's subject, for `bump --open-pr` to push.
    (up / "leak.patch").unlink()
    (up / "series").write_bytes(b"")
    secret.write_bytes(b"Description: SECRET_TOKEN=ghp_0123456789\n\nx\n")
    for aside in ("skipped", "upstreamed"):
        (up / aside).mkdir()
        (up / aside / "leak.patch").symlink_to(secret)
    ok(root, "ledger")
    assert b"ghp_" not in (root / "series" / "PATCHES.md").read_bytes()
    for args in (["bring-back", "leak"], ["delete", "leak"]):
        run = run_cli(root, *args)
        assert run.rc == 2 and "leak.patch is a symlink" in run.err, (args, run.text)


@pytest.mark.parametrize("where", ["header", "description"])
def test_export_mbox_refuses_a_patch_whose_mail_would_carry_a_terminal_escape(tmp_path, where):
    """`export --mbox` wrote a hand-written header's or description's escape sequence into the
    mail (which `import mbox` then refuses, and which every terminal showing the mail acts
    on). Now it is refused naming the patch file and line, nothing written: neither the mbox
    nor the quilt directory the same command was asked for."""
    from helpers.project import add_patch_file, patch_bytes

    root, base = git_project(tmp_path)
    diff = (b"diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -1,3 +1,3 @@\n line1\n"
            b"-line2\n+LINE2\n line3\n")
    data = patch_bytes("up", base, "fix", diff, "")
    if where == "header":
        data = data.replace(b"Description: ", b"Description: " + ESCAPES.encode() + b" ", 1)
    else:
        data = data.replace(b"Why this fix exists, in a few words.\n",
                            b"See " + ESCAPES.encode() + b" here.\n", 1)
    add_patch_file(root, "up", "fix.patch", data)
    mbox, quilt = tmp_path / "out.mbox", tmp_path / "quilt"
    run = run_cli(root, "export", "--mbox", str(mbox), "--quilt", str(quilt))
    assert run.rc == 2 and "series/up/fix.patch:" in run.err and \
        "holds a control character (\\x1b), which the mail would carry" in run.err, run.text
    assert not mbox.exists() and not quilt.exists()


def test_a_cached_wheel_of_the_index_pip_conf_named_before_is_checked_against_the_one_named_now(
        tmp_path, monkeypatch):
    """Two package indexes on 127.0.0.1 serve toypkg-1.0-py3-none-any.whl with other bytes, and
    pip's configuration file (PIP_CONFIG_FILE, where most people set their index) names A, then
    B. The wheel cache's origin record stored only the PIP_* environment's index, empty both
    times, so a project made after the switch pinned A's cached file without asking B: its
    upstream.lock recorded a sha256 that B does not serve, and a colleague's `fetch` failed on
    pip's hash check. pip's configuration files are part of the setting now: B is asked, its
    file replaces the cached one with a warning, and the record keeps no password."""
    def index_serving(body: bytes):
        built = build_wheel(tmp_path / f"built-{len(body)}", "toypkg", "1.0",
                            {"toypkg/m.py": body}, origin=False)
        data = built.read_bytes()
        served: list[str] = []
        return _simple_index({built.name: data}, served), hashlib.sha256(data).hexdigest(), served

    index_a, digest_a, _ = index_serving(b"A = 1\n")
    index_b, digest_b, served_b = index_serving(b"A = 22\n")
    wheels = tmp_path / "wheels"
    pip_conf = tmp_path / "pip.conf"
    try:
        for key in ("PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_NO_INDEX"):
            monkeypatch.delenv(key, raising=False)
        monkeypatch.setenv("PIP_FIND_LINKS", "")
        monkeypatch.setenv("PIP_CONFIG_FILE", str(pip_conf))
        monkeypatch.setenv("PATCHFORGE_WHEELS", str(wheels))
        pip_conf.write_text(f"[global]\nindex-url = {index_a.url}/simple\n")
        first = tmp_path / "first"
        ok(None, "init", "--standalone", str(first))
        ok(first, "upstream", "add", "toy", "--wheel", "toypkg", "--at", "1.0",
           "--install-root", "/opt/site")
        assert lock_doc(first)["upstreams"]["toy"]["source"]["sha256"] == digest_a
        # The same file asked again while pip.conf names A: taken from the cache.
        again = tmp_path / "again"
        ok(None, "init", "--standalone", str(again))
        run = run_cli(again, "upstream", "add", "toy", "--wheel", "toypkg", "--at", "1.0",
                      "--install-root", "/opt/site")
        assert run.rc == 0 and "warning" not in run.err, run.text
        host_b = index_b.url.split("//", 1)[1]
        pip_conf.write_text(f"[global]\nindex-url = http://someone:secret@{host_b}/simple\n")
        second = tmp_path / "second"
        ok(None, "init", "--standalone", str(second))
        run = run_cli(second, "upstream", "add", "toy", "--wheel", "toypkg", "--at", "1.0",
                      "--install-root", "/opt/site")
        assert run.rc == 0, run.text
        assert served_b == ["toypkg-1.0-py3-none-any.whl"], run.text
        assert f"(sha256 {digest_a}) is not the file the package index serves (sha256 " \
               f"{digest_b})" in " ".join(run.err.split()), run.err
        assert lock_doc(second)["upstreams"]["toy"]["source"]["sha256"] == digest_b
        record = (wheels / "toypkg-1.0-py3-none-any.whl.origin.json").read_text()
        assert host_b in record and "secret" not in record, record
    finally:
        index_a.close()
        index_b.close()


def test_a_relative_pip_config_file_is_the_one_pip_reads(tmp_path, monkeypatch):
    """PIP_CONFIG_FILE=pip.conf, relative to where patchforge is run, names the package index
    (on 127.0.0.1). pip was started from a scratch directory of the wheel cache, where no such
    file is, so it asked its default index while the wheel's origin record said pip.conf's:
    the download failed, or took another index's file. pip is given the file's full path."""
    built = build_wheel(tmp_path / "built", "toypkg", "1.0", {"toypkg/m.py": b"A = 1\n"},
                        origin=False)
    data = built.read_bytes()
    served: list[str] = []
    index = _simple_index({built.name: data}, served)
    try:
        for key in ("PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_NO_INDEX"):
            monkeypatch.delenv(key, raising=False)
        monkeypatch.setenv("PIP_FIND_LINKS", "")
        # Without the file, pip asks its default index: once, briefly.
        monkeypatch.setenv("PIP_RETRIES", "0")
        monkeypatch.setenv("PIP_TIMEOUT", "3")
        monkeypatch.setenv("PATCHFORGE_WHEELS", str(tmp_path / "wheels"))
        (tmp_path / "pip.conf").write_text(f"[global]\nindex-url = {index.url}/simple\n")
        monkeypatch.setenv("PIP_CONFIG_FILE", "pip.conf")
        root = tmp_path / "stack"
        ok(None, "init", "--standalone", str(root))
        run = run_cli(root, "upstream", "add", "toy", "--wheel", "toypkg", "--at", "1.0",
                      "--install-root", "/opt/site", cwd=tmp_path)
        assert run.rc == 0, run.text
        assert served == [built.name], run.text
        assert lock_doc(root)["upstreams"]["toy"]["source"]["sha256"] == \
            hashlib.sha256(data).hexdigest()
    finally:
        index.close()


def _no_pip_index(monkeypatch, tmp_path) -> None:
    """pip told of no index but what a test names: none of this machine's configuration."""
    for key in ("PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_FIND_LINKS", "PIP_NO_INDEX",
                "PIP_CERT", "PIP_CONFIG_FILE"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("PIP_RETRIES", "0")
    monkeypatch.setenv("PIP_TIMEOUT", "3")
    monkeypatch.setenv("PATCHFORGE_WHEELS", str(tmp_path / "wheels"))


@pytest.mark.parametrize("where", ["environment", "pip.conf"])
def test_a_relative_find_links_directory_is_the_one_pip_reads(tmp_path, monkeypatch, where):
    """PIP_FIND_LINKS=found (or `find-links = found` in the pip.conf PIP_CONFIG_FILE names), a
    directory relative to where patchforge is run, with no index: pip, started from a scratch
    directory of the wheel cache, found no such directory ("Location 'found' is ignored") and
    no wheel, while the wheel's origin record named it; `upstream add` failed. pip is given
    the directory's full path, and the origin record names it so."""
    _no_pip_index(monkeypatch, tmp_path)
    built = build_wheel(tmp_path / "found", "toypkg", "1.0", {"toypkg/m.py": b"A = 1\n"},
                        origin=False)
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    if where == "environment":
        monkeypatch.setenv("PIP_FIND_LINKS", "found")
    else:
        (tmp_path / "pip.conf").write_text("[download]\nfind-links = found\n")
        monkeypatch.setenv("PIP_CONFIG_FILE", str(tmp_path / "pip.conf"))
    root = tmp_path / "stack"
    ok(None, "init", "--standalone", str(root))
    run = run_cli(root, "upstream", "add", "toy", "--wheel", "toypkg", "--at", "1.0",
                  "--install-root", "/opt/site", cwd=tmp_path)
    assert run.rc == 0, run.text
    assert lock_doc(root)["upstreams"]["toy"]["source"]["sha256"] == \
        hashlib.sha256(built.read_bytes()).hexdigest()
    record = json.loads((tmp_path / "wheels" / (built.name + ".origin.json")).read_bytes())
    assert str(tmp_path / "found") in record["index"], record


@pytest.mark.parametrize("spelling", ["PIP_find_links", "--find-links", "relative"])
def test_pips_wheel_source_spelled_as_pip_also_reads_it_is_the_origin_records(
        tmp_path, monkeypatch, spelling):
    """pip reads any case after `PIP_` (`PIP_find_links`) and a configuration key written
    `--find-links` as `find-links`; the wheel's origin record read only `PIP_FIND_LINKS` and
    `find-links`. A wheel cached from directory A was then pinned, exit 0 and no word, after
    pip was pointed at B that way: B, which serves another file of that name, never asked (with
    `PIP_FIND_LINKS=B` B's file replaces the cached one, with a warning). And a relative
    `PIP_find_links=found` reached pip as it was, read from pip's scratch directory, where it
    is not. pip's own reading of the names is the record's, and a relative path is made
    absolute in any spelling."""
    _no_pip_index(monkeypatch, tmp_path)
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.chdir(tmp_path)
    a = build_wheel(tmp_path / "A", "toypkg", "1.0", {"toypkg/m.py": b"A = 1\n"}, origin=False)
    b = build_wheel(tmp_path / "B", "toypkg", "1.0", {"toypkg/m.py": b"A = 2\n"}, origin=False)
    if spelling == "relative":
        (tmp_path / "found").mkdir()
        shutil.copy(a, tmp_path / "found" / a.name)
    conf = tmp_path / "pip.conf"

    def told_of(where: str) -> None:
        if spelling == "--find-links":
            conf.write_text(f"[global]\n--find-links = {where}\n")
            monkeypatch.setenv("PIP_CONFIG_FILE", str(conf))
        else:
            monkeypatch.setenv("PIP_find_links", where)

    def pinned(name: str, rc: int = 0) -> str:
        root = tmp_path / name
        ok(None, "init", "--standalone", str(root))
        run = run_cli(root, "upstream", "add", "toy", "--wheel", "toypkg", "--at", "1.0",
                      "--install-root", "/opt/site", cwd=tmp_path)
        assert run.rc == rc, run.text
        return lock_doc(root)["upstreams"]["toy"]["source"]["sha256"] if rc == 0 else run.err

    told_of("found" if spelling == "relative" else str(tmp_path / "A"))
    assert pinned("first") == hashlib.sha256(a.read_bytes()).hexdigest()
    if spelling == "relative":
        record = json.loads((tmp_path / "wheels" / (a.name + ".origin.json")).read_bytes())
        assert str(tmp_path / "found") in record["index"], record
        return
    told_of(str(tmp_path / "B"))
    assert pinned("second") == hashlib.sha256(b.read_bytes()).hexdigest()


def test_a_relative_xdg_config_home_names_the_pip_conf_pip_reads(tmp_path, monkeypatch):
    """XDG_CONFIG_HOME=cfg, relative to where patchforge is run, holds the pip.conf naming the
    find-links directory: pip run there downloads the wheel, but the pip patchforge starts, from
    a scratch directory of the wheel cache, found no such file, and `upstream add` failed
    "Could not find a version", while the origin record named that file's find-links. pip is
    given the directory's full path."""
    _no_pip_index(monkeypatch, tmp_path)
    monkeypatch.delenv("PIP_CONFIG_FILE")
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CONFIG_HOME", "cfg")
    monkeypatch.chdir(tmp_path)
    built = build_wheel(tmp_path / "A", "toypkg", "1.0", {"toypkg/m.py": b"A = 1\n"},
                        origin=False)
    (tmp_path / "cfg" / "pip").mkdir(parents=True)
    (tmp_path / "cfg" / "pip" / "pip.conf").write_text(f"[global]\nfind-links = {built.parent}\n")
    root = tmp_path / "stack"
    ok(None, "init", "--standalone", str(root))
    run = run_cli(root, "upstream", "add", "toy", "--wheel", "toypkg", "--at", "1.0",
                  "--install-root", "/opt/site", cwd=tmp_path)
    assert run.rc == 0, run.text
    assert lock_doc(root)["upstreams"]["toy"]["source"]["sha256"] == \
        hashlib.sha256(built.read_bytes()).hexdigest()


def test_a_tilde_in_xdg_config_dirs_names_the_pip_conf_pip_reads(tmp_path, monkeypatch):
    """XDG_CONFIG_DIRS=~/sys: pip 23 reads the system pip.conf from ~/sys/pip/ in the home
    directory, pip 24.2 from a directory named `~` where it runs; patchforge took `~/sys` for
    a directory relative to where it runs and handed pip that full path, so a pip that
    expands `~` read another pip.conf than its user's (here: another find-links directory,
    holding another build of the release) and the lock pinned that build. Real pip is asked
    which file it reads (`pip config debug`, from where patchforge runs); the wheel that file's
    find-links holds is the one pinned, and the other pip.conf is never read."""
    import re

    _no_pip_index(monkeypatch, tmp_path)
    monkeypatch.delenv("PIP_CONFIG_FILE")
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("XDG_CONFIG_DIRS", "~/sys")
    monkeypatch.chdir(tmp_path)
    debug = subprocess.run([sys.executable, "-m", "pip", "config", "debug"], cwd=tmp_path,
                           capture_output=True, text=True, check=True).stdout
    read = Path(re.search(r"^global:\n\s+(.*), exists: ", debug, re.M).group(1))
    assert read in (Path("~/sys/pip/pip.conf"), home / "sys" / "pip" / "pip.conf"), debug
    other = home / "sys" / "pip" / "pip.conf" if read == Path("~/sys/pip/pip.conf") else \
        tmp_path / "~" / "sys" / "pip" / "pip.conf"
    wanted = build_wheel(tmp_path / "A", "toypkg", "1.0", {"toypkg/m.py": b"A = 1\n"},
                         origin=False)
    elsewhere = build_wheel(tmp_path / "B", "toypkg", "1.0", {"toypkg/m.py": b"B = 2\n"},
                            origin=False)
    for conf, wheel in ((tmp_path / read, wanted), (other, elsewhere)):
        conf.parent.mkdir(parents=True)
        conf.write_text(f"[global]\nfind-links = {wheel.parent}\n")
    root = tmp_path / "stack"
    ok(None, "init", "--standalone", str(root))
    run = run_cli(root, "upstream", "add", "toy", "--wheel", "toypkg", "--at", "1.0",
                  "--install-root", "/opt/site", cwd=tmp_path)
    assert run.rc == 0, run.text
    assert lock_doc(root)["upstreams"]["toy"]["source"]["sha256"] == \
        hashlib.sha256(wanted.read_bytes()).hexdigest()
    origin = next((tmp_path / "wheels").rglob("*.origin.json")).read_text()
    assert str(wanted.parent) in origin and str(elsewhere.parent) not in origin, origin



@pytest.mark.parametrize("order", ["empty first", "empty last"])
def test_an_empty_part_of_xdg_config_dirs_reads_no_pip_conf_where_patchforge_runs(
        tmp_path, monkeypatch, order):
    """XDG_CONFIG_DIRS with an empty part (`:/x` or `/x:`, what `export
    XDG_CONFIG_DIRS=$XDG_CONFIG_DIRS:/x` gives when it was unset) was handed to pip as the
    directory patchforge runs in: a `pip/pip.conf` in the stack's checkout (a file a pull
    request can add) steered pip's downloads, and the lock pinned the build its find-links
    held, or the origin record named it. An empty part is no directory (the XDG Base Directory
    specification has relative paths there ignored): real pip, run by patchforge, reads the
    system pip.conf of the part named alone."""
    _no_pip_index(monkeypatch, tmp_path)
    monkeypatch.delenv("PIP_CONFIG_FILE")
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    system = tmp_path / "sys"
    monkeypatch.setenv("XDG_CONFIG_DIRS", f":{system}" if order == "empty first" else f"{system}:")
    wanted = build_wheel(tmp_path / "A", "toypkg", "1.0", {"toypkg/m.py": b"A = 1\n"},
                         origin=False)
    planted = build_wheel(tmp_path / "B", "toypkg", "1.0", {"toypkg/m.py": b"B = 2\n"},
                          origin=False)
    root = tmp_path / "stack"
    ok(None, "init", "--standalone", str(root))
    for conf, wheel in ((system / "pip" / "pip.conf", wanted),
                        (root / "pip" / "pip.conf", planted)):
        conf.parent.mkdir(parents=True)
        conf.write_text(f"[global]\nfind-links = {wheel.parent}\n")
    run = run_cli(root, "upstream", "add", "toy", "--wheel", "toypkg", "--at", "1.0",
                  "--install-root", "/opt/site", cwd=root)
    assert run.rc == 0, run.text
    assert lock_doc(root)["upstreams"]["toy"]["source"]["sha256"] == \
        hashlib.sha256(wanted.read_bytes()).hexdigest()
    origin = next((tmp_path / "wheels").rglob("*.origin.json")).read_text()
    assert str(wanted.parent) in origin and str(planted.parent) not in origin, origin


@pytest.mark.parametrize("pip_config_file", [True, False])
def test_the_users_pip_conf_is_read_only_where_pip_reads_it(tmp_path, monkeypatch,
                                                             pip_config_file):
    """The user's pip.conf holds `find-links = ../userwheels` (relative), and PIP_CONFIG_FILE
    names a file of the machine's own: pip then skips the user's file, finds no wheel, and
    patchforge handed pip that find-links anyway (as a PIP_FIND_LINKS made absolute), so it
    pinned a wheel pip itself, run the same way, never finds. Without PIP_CONFIG_FILE pip
    reads the user's file, and so does patchforge. Real pip is asked, from the same place."""
    _no_pip_index(monkeypatch, tmp_path)
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    home = tmp_path / "home"
    (home / ".config" / "pip").mkdir(parents=True)
    (home / ".config" / "pip" / "pip.conf").write_text("[global]\nfind-links = ../userwheels\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    if pip_config_file:
        (tmp_path / "ci.conf").write_text("[global]\nno-index = true\n")
        monkeypatch.setenv("PIP_CONFIG_FILE", str(tmp_path / "ci.conf"))
    else:
        monkeypatch.delenv("PIP_CONFIG_FILE")
    built = build_wheel(tmp_path / "userwheels", "toypkg", "1.0", {"toypkg/m.py": b"A = 1\n"},
                        origin=False)
    root = tmp_path / "stack"
    ok(None, "init", "--standalone", str(root))
    pip = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-d",
                          str(tmp_path / "pip-out"), "toypkg==1.0"],
                         cwd=root, capture_output=True, text=True)
    assert (pip.returncode == 0) is not pip_config_file, pip.stdout + pip.stderr
    run = run_cli(root, "upstream", "add", "toy", "--wheel", "toypkg", "--at", "1.0",
                  "--install-root", "/opt/site", cwd=root)
    if pip_config_file:
        assert run.rc != 0, run.text
        assert "No matching distribution found for toypkg==1.0" in run.text, run.text
        assert "toy" not in lock_doc(root).get("upstreams", {})
        assert not list((tmp_path / "wheels").glob("*.whl"))
    else:
        assert run.rc == 0, run.text
        assert lock_doc(root)["upstreams"]["toy"]["source"]["sha256"] == \
            hashlib.sha256(built.read_bytes()).hexdigest()


def test_a_relative_certificate_file_is_the_one_pip_reads(tmp_path, monkeypatch):
    """PIP_CERT=ca.pem, relative to where patchforge is run, is the certificate of a package
    index served over HTTPS on 127.0.0.1: pip, started from a scratch directory of the wheel
    cache, could not open it ("Could not find a suitable TLS CA certificate bundle") and the
    download failed. pip is given the file's full path."""
    import ssl

    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("no openssl to make the index's certificate")
    # A certificate authority of the test's own, and the index's certificate it signs.
    for args in (["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj",
                  "/CN=patchforge test CA", "-keyout", "ca-key.pem", "-out", "ca.pem"],
                 ["req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1",
                  "-keyout", "key.pem", "-out", "index.csr"],
                 ["x509", "-req", "-in", "index.csr", "-CA", "ca.pem", "-CAkey", "ca-key.pem",
                  "-CAcreateserial", "-days", "2", "-extfile", "san.cnf", "-out", "index.pem"]):
        (tmp_path / "san.cnf").write_text("subjectAltName=IP:127.0.0.1\n")
        subprocess.run([openssl, *args], check=True, capture_output=True, cwd=tmp_path)
    _no_pip_index(monkeypatch, tmp_path)
    # (requests takes these over pip's own --cert: a machine's bundle would hide the test's.)
    for key in ("REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE"):
        monkeypatch.delenv(key, raising=False)
    built = build_wheel(tmp_path / "built", "toypkg", "1.0", {"toypkg/m.py": b"A = 1\n"},
                        origin=False)
    served: list[str] = []
    index = _simple_index({built.name: built.read_bytes()}, served)
    try:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(tmp_path / "index.pem", tmp_path / "key.pem")
        index.httpd.socket = context.wrap_socket(index.httpd.socket, server_side=True)
        url = index.url.replace("http://", "https://")
        monkeypatch.setenv("PIP_INDEX_URL", f"{url}/simple")
        monkeypatch.setenv("PIP_CERT", "ca.pem")
        root = tmp_path / "stack"
        ok(None, "init", "--standalone", str(root))
        run = run_cli(root, "upstream", "add", "toy", "--wheel", "toypkg", "--at", "1.0",
                      "--install-root", "/opt/site", cwd=tmp_path)
        assert run.rc == 0, run.text
        assert served == [built.name], run.text
    finally:
        index.close()


def test_a_cached_wheel_the_index_does_not_serve_is_never_pinned(tmp_path, monkeypatch):
    """The wheel cache (shared by projects and users) holds a toypkg 1.1 wheel that is not the
    one the package index (PEP 503's simple pages, over HTTP on 127.0.0.1) serves: a local
    build, a file left from another index. `rebase --to toy=1.1`, the release's first pin,
    took it without asking the index, so upstream.lock recorded a sha256 no index serves (a
    colleague's `fetch` then failed on pip's hash check) and the overlays were made from that
    other file. Now pip is asked for the index's file, which replaces the cached one with a
    warning naming it; a wheel patchforge downloaded itself is taken from the cache again."""
    files = {w.name: w.read_bytes() for w in (
        build_wheel(tmp_path / "built" / version, "toypkg", version, {"toypkg/m.py": body})
        for version, body in (("1.0", b"A = 1\n"), ("1.1", b"A = 2\n")))}
    served: list[str] = []
    wheels = tmp_path / "wheels"
    other = build_wheel(wheels, "toypkg", "1.1", {"toypkg/m.py": b"A = 666\n"}, origin=False)
    other_digest = hashlib.sha256(other.read_bytes()).hexdigest()
    index_digest = hashlib.sha256(files[other.name]).hexdigest()
    index = _simple_index(files, served)
    try:
        monkeypatch.setenv("PIP_INDEX_URL", f"{index.url}/simple")
        monkeypatch.setenv("PIP_FIND_LINKS", "")
        monkeypatch.setenv("PATCHFORGE_WHEELS", str(wheels))
        root = tmp_path / "project"
        ok(None, "init", "--standalone", str(root))
        ok(root, "upstream", "add", "toy", "--wheel", "toypkg", "--at", "1.0",
           "--install-root", "/opt/site")
        run = run_cli(root, "rebase", "--to", "toy=1.1")
        assert run.rc == 0, run.text
        said = " ".join(run.err.split())
        assert f"the cached {other} (sha256 {other_digest}) is not the file the package " \
               f"index serves (sha256 {index_digest})" in said, run.err
        lock = (root / "upstream.lock").read_text()
        assert index_digest in lock and other_digest not in lock, lock
        assert other.read_bytes() == files[other.name]
        ok(root, "rebase", "--to", "toy=1.0")
        served.clear()
        # Downloaded by patchforge, recorded as the index's: no second download.
        run = run_cli(root, "rebase", "--to", "toy=1.1")
        assert run.rc == 0 and "warning" not in run.err and served == [], run.text
        # Offline, a cached wheel without the record is pinned, said in a warning.
        local = build_wheel(wheels, "toypkg", "1.2", {"toypkg/m.py": b"A = 3\n"}, origin=False)
        run = run_cli(root, "--offline", "rebase", "--to", "toy=1.2")
        assert run.rc == 0, run.text
        assert f"pinning {local} from the wheel cache, which does not record it as the " \
               "package index's file" in " ".join(run.err.split()), run.err
        # A release the index does not have (built here only): pinned, with the same warning.
        local = build_wheel(wheels, "toypkg", "1.3", {"toypkg/m.py": b"A = 4\n"}, origin=False)
        run = run_cli(root, "rebase", "--to", "toy=1.3")
        assert run.rc == 0, run.text
        said = " ".join(run.err.split())
        assert f"pinning {local} from the wheel cache, which does not record it as the " \
               "package index's file" in said and "pip did not download" in said, run.err
        assert hashlib.sha256(local.read_bytes()).hexdigest() in \
            (root / "upstream.lock").read_text()
    finally:
        index.close()
