"""Tests of the git layer (patchforge.store: gitstore, diff, catfile, imports, rangediff) on real git repositories."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import time
import zipfile
from pathlib import Path

import pytest

from helpers.env import SHARED_WHEELS, need_tool
from helpers.git import git
from patchforge.errors import StoreError
from patchforge.store.catfile import CatFile
from patchforge.store.git import git_env
from patchforge.store.diff import (FileChange, blob_oid, make_diff, make_file_diff,
                                   split_at_file_headers,
                                   FileMerge, merge_can_give_ours, merge_file,
                                   new_runs_are_in_ours)
from patchforge.store.gitstore import UpstreamStore, cache_dir, wheels_dir


def build_wheel(path: Path, files: dict[str, bytes], executable: tuple[str, ...] = ()) -> Path:
    # Members written in a scrambled order: the import must not depend on it.
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name in sorted(files, reverse=True):
            info = zipfile.ZipInfo(name, date_time=(2024, 1, 2, 3, 4, 5))
            info.create_system = 3
            info.external_attr = (0o100755 if name in executable else 0o100644) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, files[name])
    return path


WHEEL_FILES = {
    "pkg/__init__.py": b"VERSION = '1.0'\r\n",
    "pkg/mod.py": b"def f():\n    return 1\n",
    "pkg/bin/tool.sh": b"#!/bin/sh\necho hi\n",
    "pkg/data/latin1.txt": b"caf\xe9\n",
    "pkg-1.0.dist-info/RECORD": b"pkg/__init__.py,,\n",
}


@pytest.fixture
def store(tmp_path):
    with UpstreamStore.open() as opened:
        yield opened


@pytest.fixture
def wheel_commit(store, tmp_path):
    wheel = build_wheel(tmp_path / "pkg-1.0-py3-none-any.whl", WHEEL_FILES,
                        executable=("pkg/bin/tool.sh",))
    return store.import_wheel(wheel, "pkg", "1.0")


# ---- cache location


def test_cache_dir_follows_environment(monkeypatch, tmp_path):
    monkeypatch.delenv("PATCHFORGE_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == tmp_path / "xdg" / "patchforge"
    monkeypatch.delenv("PATCHFORGE_WHEELS")
    assert wheels_dir() == tmp_path / "xdg" / "patchforge" / "wheels"
    monkeypatch.setenv("PATCHFORGE_CACHE", str(tmp_path / "c"))
    assert cache_dir() == tmp_path / "c"
    monkeypatch.setenv("PATCHFORGE_WHEELS", str(tmp_path / "w"))
    assert wheels_dir() == tmp_path / "w"


def test_open_creates_a_bare_store_in_the_cache(store):
    assert store.git_dir == Path(os.environ["PATCHFORGE_CACHE"]) / "store.git"
    assert git(store.git_dir, "rev-parse", "--is-bare-repository").strip() == "true"
    # Opening again reuses it.
    with UpstreamStore.open() as again:
        assert again.git_dir == store.git_dir


def test_git_environment_is_isolated(monkeypatch):
    monkeypatch.setenv("GIT_DIR", "/nonexistent")
    monkeypatch.setenv("GIT_INDEX_FILE", "/nonexistent/index")
    monkeypatch.setenv("GIT_DIFF_OPTS", "--unified=9")
    env = git_env()
    assert "GIT_DIR" not in env and "GIT_INDEX_FILE" not in env and "GIT_DIFF_OPTS" not in env
    assert "GIT_CONFIG_COUNT" not in env
    assert env["GIT_CONFIG_NOSYSTEM"] == "1" and env["GIT_CONFIG_GLOBAL"] == "/dev/null"
    assert env["LC_ALL"] == "C"
    # And the store still works with those variables set.
    with UpstreamStore.open() as opened:
        assert opened.list_paths(opened.commit_tree(
            "4b825dc642cb6eb9a060e54bf8d69288fbee4904", [], "empty\n")) == []



def test_git_is_started_by_the_file_path_finds_and_follows_a_change_of_path(monkeypatch, tmp_path):
    """git_command names git by the file PATH finds (the child does not search PATH at each
    start), and a PATH changed since is looked up again: the same program as by name."""
    import shutil

    from patchforge.store.git import git_command, run_git

    real = shutil.which("git")
    assert real is not None and git_command("version")[0] == real
    bindir = tmp_path / "bin"
    bindir.mkdir()
    marker = tmp_path / "started"
    wrapper = bindir / "git"
    wrapper.write_text(f"#!/bin/sh\necho \"$@\" >> {marker}\nexec {real} \"$@\"\n")
    wrapper.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    assert git_command("version")[0] == str(wrapper)
    assert run_git("version").stdout.startswith(b"git version")
    assert marker.read_text().strip().endswith("version")
    monkeypatch.setenv("PATH", str(tmp_path / "nowhere"))
    assert git_command("version")[0] == "git"  # none on PATH: started by name, failing as before


# ---- imports and reading


def test_wheel_import_reads_back_byte_for_byte(store, wheel_commit):
    commit, tree = wheel_commit.commit, wheel_commit.tree
    assert store.resolve(commit) == commit and store.tree_id(commit) == tree
    assert sorted(store.list_paths(commit)) == sorted(WHEEL_FILES)
    assert store.list_paths(commit, "pkg/bin") == ["pkg/bin/tool.sh"]
    for path, data in WHEEL_FILES.items():
        assert store.read_blob(commit, path) == data
    assert store.read_blobs(commit, ["pkg/mod.py", "pkg/missing.py", "pkg"]) == {
        "pkg/mod.py": WHEEL_FILES["pkg/mod.py"], "pkg/missing.py": None, "pkg": None}
    assert store.entry(commit, "pkg/bin/tool.sh") == ("100755", blob_oid(b"#!/bin/sh\necho hi\n"))
    assert store.entry(commit, "pkg/mod.py")[0] == "100644"
    assert store.entry(commit, "pkg") is None and store.entry(commit, "nope/x.py") is None
    oid = store.blob_id(commit, "pkg/mod.py")
    assert store.read_blob_id(oid) == WHEEL_FILES["pkg/mod.py"]
    assert store.has_object(oid) and not store.has_object("1" * 40)
    assert store.resolve("refs/patchforge/imports/pkg/1.0") == commit
    assert store.resolve_in("pkg", "1.0") == commit


def test_import_commit_is_fixed(store, wheel_commit):
    raw = git(store.git_dir, "cat-file", "commit", wheel_commit.commit)
    assert "parent" not in raw
    assert "author patchforge <patchforge@localhost> 0 +0000" in raw
    assert "committer patchforge <patchforge@localhost> 0 +0000" in raw
    assert "pkg 1.0" in raw


def test_same_wheel_gives_same_commit_in_two_stores(tmp_path, wheel_commit):
    # The same file name (the message names the wheel), built again elsewhere.
    (tmp_path / "again").mkdir()
    wheel = build_wheel(tmp_path / "again" / "pkg-1.0-py3-none-any.whl", WHEEL_FILES,
                        executable=("pkg/bin/tool.sh",))
    with UpstreamStore.open(tmp_path / "other-cache") as other:
        assert other.import_wheel(wheel, "pkg", "1.0") == wheel_commit
    # Re-importing into the same store gives the same root commit, not a child of the first.
    with UpstreamStore.open() as same:
        assert same.import_wheel(wheel, "pkg", "1.0") == wheel_commit


def test_wheel_with_escaping_member_is_refused(store, tmp_path):
    wheel = build_wheel(tmp_path / "bad.whl", {"../evil.py": b"x\n"})
    with pytest.raises(StoreError, match="refusing member"):
        store.import_wheel(wheel, "bad", "1")
    assert not list(Path(store.git_dir, "refs").rglob("bad"))


def _mixed_wheel(path: Path) -> tuple[Path, dict[str, bytes]]:
    """A wheel whose members take every path of the pack writer: deflated, stored (method 0),
    empty, two with the same content, one larger than a read chunk that does not compress."""
    files = {
        "mix/__init__.py": b"",
        "mix/a.py": b"same = 1\n" * 50,
        "mix/copy_of_a.py": b"same = 1\n" * 50,
        "mix/stored.txt": b"kept as is\r\n",
        "mix/lib.so": os.urandom(5 << 20) + b"\0tail",
        "mix/run.sh": b"#!/bin/sh\nexit 0\n",
    }
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in files.items():
            info = zipfile.ZipInfo(name, date_time=(2024, 1, 2, 3, 4, 5))
            info.create_system = 3
            info.external_attr = (0o100755 if name.endswith(".sh") else 0o100644) << 16
            info.compress_type = zipfile.ZIP_STORED if name == "mix/stored.txt" \
                else zipfile.ZIP_DEFLATED
            archive.writestr(info, data)
    return path, files


def test_wheel_import_gives_the_tree_git_gives_and_a_pack_git_accepts(store, tmp_path):
    """The blobs go into the store as a pack made from the wheel's compressed bytes: git must
    read it as its own (fsck, an index identical to `git index-pack`'s), and the tree must be
    the one `git add` makes of the same files unpacked by `unzip`."""
    need_tool("unzip")
    wheel, files = _mixed_wheel(tmp_path / "mix-1.0-py3-none-any.whl")
    result = store.import_wheel(wheel, "mix", "1.0")
    for path, data in files.items():
        assert store.read_blob(result.commit, path) == data
    git(store.git_dir, "fsck", "--full", "--strict")
    packs = sorted(Path(store.git_dir, "objects", "pack").glob("*.pack"))
    biggest = max(packs, key=lambda p: p.stat().st_size)
    copy = tmp_path / "copy.pack"
    copy.write_bytes(biggest.read_bytes())
    git(tmp_path, "index-pack", "-o", str(tmp_path / "copy.idx"), str(copy))
    assert (tmp_path / "copy.idx").read_bytes() == biggest.with_suffix(".idx").read_bytes()
    unpacked = tmp_path / "unzipped"
    subprocess.run(["unzip", "-q", str(wheel), "-d", str(unpacked)], check=True)
    git(unpacked, "init", "-q")
    git(unpacked, "add", "-A")
    assert git(unpacked, "write-tree").strip() == result.tree
    assert store.entry(result.commit, "mix/run.sh")[0] == "100755"


def test_corrupt_wheel_member_leaves_nothing_in_the_store(store, tmp_path):
    wheel, files = _mixed_wheel(tmp_path / "mix-1.0-py3-none-any.whl")
    with zipfile.ZipFile(wheel) as archive:
        info = archive.getinfo("mix/a.py")
    data = bytearray(wheel.read_bytes())
    start = info.header_offset + 30 + len(info.filename)
    data[start + 3] ^= 0xFF  # inside its deflate data
    wheel.write_bytes(bytes(data))
    packs_before = sorted(os.listdir(Path(store.git_dir, "objects", "pack")))
    with pytest.raises(StoreError, match="mix/a.py"):
        store.import_wheel(wheel, "mix", "1.0")
    assert sorted(os.listdir(Path(store.git_dir, "objects", "pack"))) == packs_before
    assert store.shared_import_ref("mix", "1.0") is None


def test_unknown_revision_is_a_store_error(store, wheel_commit):
    with pytest.raises(StoreError, match="unknown revision"):
        store.resolve("refs/patchforge/imports/nope/1")
    with pytest.raises(StoreError):
        store.read_blob_id("2" * 40)
    with pytest.raises(StoreError, match="not a known"):
        store.resolve_in("pkg", "2.0")
    with pytest.raises(StoreError, match="invalid upstream name"):
        store.resolve_in("../x", "1")


def test_directory_import_keeps_modes_and_does_not_follow_symlinks(store, tmp_path):
    outside = tmp_path / "secret.txt"
    outside.write_bytes(b"secret\n")
    root = tmp_path / "site"
    (root / "pkg" / "__pycache__").mkdir(parents=True)
    (root / "pkg" / "a.py").write_bytes(b"a\r\n")
    (root / "pkg" / "run").write_bytes(b"#!/bin/sh\n")
    (root / "pkg" / "run").chmod(0o755)
    (root / "pkg" / "__pycache__" / "a.cpython-311.pyc").write_bytes(b"\0junk")
    (root / "pkg" / "leak").symlink_to(outside)
    (root / "pkg" / "linkdir").symlink_to(root / "pkg")
    result = store.import_directory(root, "site", "v1")
    assert sorted(store.list_paths(result.commit)) == ["pkg/a.py", "pkg/leak", "pkg/linkdir",
                                                       "pkg/run"]
    assert store.entry(result.commit, "pkg/run")[0] == "100755"
    assert store.entry(result.commit, "pkg/leak")[0] == "120000"
    assert store.read_blob(result.commit, "pkg/leak") == os.fsencode(outside)
    assert store.entry(result.commit, "pkg/linkdir")[0] == "120000"
    assert store.read_blob(result.commit, "pkg/a.py") == b"a\r\n"
    with UpstreamStore.open(tmp_path / "c2") as other:
        assert other.import_directory(root, "site", "v1") == result


@pytest.mark.skipif(not (SHARED_WHEELS / "vllm-0.32.0-cp38-abi3-manylinux_2_28_x86_64.whl").exists(),
                    reason="the real vllm 0.32.0 wheel is not in the shared wheel cache")
def test_REAL_VLLM_WHEEL_import_slow(store):
    """Imports the real 330 MB vllm 0.32.0 wheel (about 5 s here) and reads a file from it."""
    wheel = SHARED_WHEELS / "vllm-0.32.0-cp38-abi3-manylinux_2_28_x86_64.whl"
    result = store.import_wheel(wheel, "vllm", "0.32.0")
    path = "vllm/models/deepseek_v4/common/ops/fused_compress_quant_cache.py"
    data = store.read_blob(result.commit, path)
    with zipfile.ZipFile(wheel) as archive:
        assert data == archive.read(path)
        assert len(store.list_paths(result.commit)) == len(
            [i for i in archive.infolist() if not i.is_dir()])


# ---- git upstreams: partial fetch


@pytest.fixture
def upstream_repo(make_git_repo):
    repo, first = make_git_repo({"src/a.py": b"a = 1\n", "src/b.py": b"b = 1\n",
                                 "README": b"readme\n"})
    (repo / "src" / "a.py").write_bytes(b"a = 2\n")
    git(repo, "commit", "-qam", "change a")
    git(repo, "tag", "v1")
    second = git(repo, "rev-parse", "HEAD").strip()
    return repo, first, second


def _missing_objects(store: UpstreamStore, rev: str) -> set[str]:
    out = git(store.git_dir, "rev-list", "--objects", "--no-walk", "--missing=print", rev)
    return {line[1:] for line in out.splitlines() if line.startswith("?")}


def test_partial_fetch_brings_blobs_on_demand(store, upstream_repo):
    repo, first, second = upstream_repo
    store.fetch_git("aiter", str(repo), ["main", "v1"])
    assert store.resolve_in("aiter", "main") == second
    assert store.resolve_in("aiter", "v1") == second
    assert store.resolve_in("aiter", second[:9]) == second
    assert store.resolve_in("aiter", first) == first  # history came along, blob-less
    blob = git(repo, "rev-parse", "HEAD:src/a.py").strip()
    assert blob in _missing_objects(store, second), "the fetch was not blob-less"
    assert store.read_blob(second, "src/a.py") == b"a = 2\n"
    assert blob not in _missing_objects(store, second)
    # Several at once: one batched fetch of what is missing.
    assert store.read_blobs(second, ["src/b.py", "README"]) == {"src/b.py": b"b = 1\n",
                                                                "README": b"readme\n"}
    assert _missing_objects(store, second) == set()
    assert store.read_blob(first, "src/a.py") == b"a = 1\n"


def test_a_releases_files_are_read_each_delta_before_its_base(store, make_git_repo,
                                                              monkeypatch):
    """new_contents reads a commit's every new file (the moved-code check of a release): in
    an order in which a blob the store keeps as a delta of another asked blob is asked before
    that base (git keeps a base it inflated on the way to a delta, not the object asked for:
    asked first, a base is inflated twice), and with the contents git gives."""
    repo, first = make_git_repo({"README": b"readme\n"})
    # Files alike but for a line (a release's many; fewer are read as asked): the store's
    # pack keeps most of them as deltas of others.
    body = b"".join(b"def step_%d(x):\n    return x * %d + 7\n\n" % (k, k) for k in range(60))
    files = {f"pkg/mod_{k:03d}.py": body + b"NAME = 'mod_%03d'\n" % k for k in range(300)}
    assert len(files) >= getattr(UpstreamStore, "DELTA_ORDER_AT_LEAST", 0)
    for name, data in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_bytes(data)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "a release")
    release = git(repo, "rev-parse", "HEAD").strip()
    store.fetch_git("up", str(repo), ["main"])
    asked: list[list[str]] = []
    real = CatFile.query

    def query(self, names):
        asked.append(list(names))
        return real(self, names)
    monkeypatch.setattr(CatFile, "query", query)
    assert store.new_contents(release) == files
    read = next(names for names in asked if len(names) == len(set(files.values())))
    out = git(store.git_dir, "cat-file", "--batch-check=%(objectname) %(deltabase)",
              input="".join(oid + "\n" for oid in read).encode())
    base = dict(line.split() for line in out.splitlines())
    at = {oid: k for k, oid in enumerate(read)}
    pairs = [(oid, of) for oid, of in base.items() if of in at]
    assert len(pairs) >= 10, "the store keeps too few of the files as deltas of each other"
    assert all(at[oid] < at[of] for oid, of in pairs)


def test_a_history_commits_diff_of_a_file_gives_the_blocks_its_two_contents_diff_gives(
        store, make_git_repo):
    """Landed detection takes a file's own-place blocks from the history's diff of a commit
    that changes it from the base's content to the target's (judge.HistoryIndex.made_blocks)
    instead of a `git diff --no-index` of its own: the store's history diffs are made with the
    options of changed_blocks (myers, the indent heuristic, three lines of context), so each
    file's blocks are the same from either. Edits where the indent heuristic and the context
    matter: a function inserted between two, a line changed in a repeated block, lines taken
    out, a file without a final line end."""
    from patchforge.store.diff import blocks_of_file_diff, changed_blocks, split_at_file_headers

    def funcs(names, body=b"    x = 1\n    return x\n"):
        return b"".join(b"def %s():\n%s\n" % (n, body) for n in names)

    old = {"a.py": funcs([b"f", b"g", b"h"]),
           "b.py": b"".join(b"row %d\n" % (k % 7) for k in range(60)),
           "c.py": b"".join(b"line %d\n" % k for k in range(40)),
           "d.py": b"one\ntwo\nthree"}
    new = {"a.py": funcs([b"f", b"g", b"inserted", b"h"]),
           "b.py": b"".join(b"row %d\n" % (k % 7) if k != 31 else b"row x\n" for k in range(60)),
           "c.py": b"".join(b"line %d\n" % k for k in range(40) if k not in (3, 4, 20)),
           "d.py": b"one\n2\nthree"}
    repo, first = make_git_repo(old)
    for name, data in new.items():
        (repo / name).write_bytes(data)
    git(repo, "commit", "-qam", "edits")
    second = git(repo, "rev-parse", "HEAD").strip()
    store.fetch_git("up", str(repo), ["main"])
    names = sorted(old)
    parts = {part.split(b"\n", 1)[0]: part
             for part in split_at_file_headers(store.commit_patches([second], names))
             if part.startswith(b"diff --git ")}
    made = changed_blocks([(old[name], new[name]) for name in names])
    assert [blocks_of_file_diff(parts[b"diff --git a/%s b/%s" % (n.encode(), n.encode())])
            for n in names] == made
    assert all(made)


def test_presence_check_started_ahead_gives_the_prefetch_its_answer(store, upstream_repo,
                                                                    monkeypatch):
    """A rebase starts the partial store's check for missing files before it writes its
    journal; the prefetch after it takes that answer (no `git rev-list` of its own) and
    fetches what was missing, with one fetch. A check that did not ask about every file the
    prefetch wants is not taken, and a store closed with a check unread ends it."""
    repo, first, second = upstream_repo
    store.fetch_git("aiter", str(repo), ["main"])
    wanted = [(first, ["src/a.py", "src/b.py"]), (second, ["src/a.py", "src/b.py"])]
    before = _missing_objects(store, second) | _missing_objects(store, first)
    assert before  # blob-less
    store.start_presence_check(wanted)
    ran = []
    real = UpstreamStore._run

    def run(self, *args, **kw):
        ran.append("fetch" if "fetch" in args else args[0])
        return real(self, *args, **kw)
    monkeypatch.setattr(UpstreamStore, "_run", run)
    store.prefetch(wanted)
    # The one rev-list is the check after the fetch, of what it brought.
    assert ran.count("fetch") == 1 and "rev-list" not in ran[:ran.index("fetch")]
    assert ran.count("rev-list") == 1
    blobs = {git(repo, "rev-parse", f"{rev}:{path}").strip() for rev, paths in wanted
             for path in paths}
    assert blobs <= before and not blobs & _missing_objects(store, second) and \
        not blobs & _missing_objects(store, first) and not store._checks
    assert store.read_blobs(first, ["src/a.py", "src/b.py"]) == {"src/a.py": b"a = 1\n",
                                                                 "src/b.py": b"b = 1\n"}
    # An answer about fewer files is not taken; one never taken is ended with the store.
    readme = git(repo, "rev-parse", f"{second}:README").strip()
    store.start_presence_check([(second, ["README"])])
    ran.clear()
    assert store._missing([readme, "0" * 40]) == [readme, "0" * 40]
    assert ran == ["rev-list"] and len(store._checks) == 1
    started = store._checks[0][1]
    store.close()
    assert started._proc.returncode is not None and not store._checks


def test_a_commands_store_starts_its_reader_when_opened(tmp_path, upstream_repo):
    """The store a command opens (pins.open_store) starts its `git cat-file` at once, so git
    has opened the store by the first read; that process answers the reads, as one started by
    the first read would, and ends with the store."""
    from types import SimpleNamespace

    from patchforge.pins import open_store

    repo, first, _ = upstream_repo
    with UpstreamStore.open() as store:
        store.fetch_git("aiter", str(repo), ["main"])
    with open_store(SimpleNamespace(progress=None, upstream_names=lambda: [])) as store:
        started = store._cat._proc
        assert started is not None and started.poll() is None
        assert store.read_blobs(first, ["src/a.py", "src/b.py"]) == {"src/a.py": b"a = 1\n",
                                                                     "src/b.py": b"b = 1\n"}
        assert store._cat._proc is started
    assert started.returncode is not None


def test_fetch_by_commit_id_and_unknown_names(store, upstream_repo):
    repo, first, _ = upstream_repo
    store.fetch_git("aiter", str(repo), [first])
    assert store.resolve_in("aiter", first[:12]) == first
    assert store.resolve(f"refs/patchforge/remotes/aiter/commits/{first}") == first
    with pytest.raises(StoreError, match="no branch or tag 'nope'"):
        store.fetch_git("aiter", str(repo), ["nope"])


def test_fetch_keeps_history_for_ancestry_queries(store, upstream_repo):
    repo, first, second = upstream_repo
    store.fetch_git("up", str(repo), ["main"])
    assert store.is_ancestor(first, second) and not store.is_ancestor(second, first)
    assert store.ahead_behind(second, first) == (1, 0)
    assert store.ahead_behind(first, second) == (0, 1)
    assert store.commits_touching(first, second, ["src/a.py"]) == [second]
    assert store.commits_touching(first, second, ["src/b.py"]) == []
    assert store.changed_paths(first, second) == ["src/a.py"]


def test_commits_touching_is_empty_without_shared_history(store, wheel_commit):
    other = store.commit_tree(wheel_commit.tree, [], "unrelated root\n",
                              author=("x", "x@example.com", "1 +0000"))
    assert store.commits_touching(wheel_commit.commit, other, ["pkg/mod.py"]) == []


# ---- commits without checkout


def test_commit_files_is_deterministic_and_keeps_modes(store, wheel_commit, tmp_path):
    author = ("Dev One", "dev@example.com", "1700000000 +0100")
    changes = {"pkg/mod.py": b"def f():\n    return 2\n", "pkg/bin/tool.sh": b"#!/bin/sh\n",
               "pkg/new.py": b"new\n", "pkg/data/latin1.txt": None}
    commit = store.commit_files(wheel_commit.commit, changes, message="fix\n", author=author)
    again = store.commit_files(wheel_commit.commit, dict(reversed(changes.items())),
                               message="fix\n", author=author)
    assert commit == again
    assert store.read_blob(commit, "pkg/mod.py") == changes["pkg/mod.py"]
    assert store.read_blob(commit, "pkg/data/latin1.txt") is None
    assert store.entry(commit, "pkg/bin/tool.sh")[0] == "100755"
    assert store.entry(commit, "pkg/new.py")[0] == "100644"
    assert store.read_blob(commit, "pkg/__init__.py") == WHEEL_FILES["pkg/__init__.py"]
    raw = git(store.git_dir, "cat-file", "commit", commit)
    assert f"parent {wheel_commit.commit}" in raw
    assert "author Dev One <dev@example.com> 1700000000 +0100" in raw
    root = store.commit_files(wheel_commit.commit, {}, message="m\n", parents=[])
    assert "parent" not in git(store.git_dir, "cat-file", "commit", root)
    with UpstreamStore.open(tmp_path / "elsewhere") as other:
        (tmp_path / "w").mkdir()
        wheel = build_wheel(tmp_path / "w" / "pkg-1.0-py3-none-any.whl", WHEEL_FILES,
                            executable=("pkg/bin/tool.sh",))
        base = other.import_wheel(wheel, "pkg", "1.0").commit
        assert other.commit_files(base, changes, message="fix\n", author=author) == commit


def _commit_with_git_index(store, base: str, changes: dict, modes: dict, message: str) -> str:
    """What git's own index makes of the same change: read-tree, update-index --index-info
    (in path order), write-tree, commit-tree, with the store's fixed identity."""
    env = {**git_env(), "GIT_INDEX_FILE": str(store.git_dir / "reference-index")}
    def run(*args, input=None):
        return subprocess.run(["git", "--git-dir", str(store.git_dir), *args], input=input,
                              env=env, capture_output=True, check=True).stdout
    run("read-tree", base + "^{tree}")
    lines = b""
    for path in sorted(changes):
        data = changes[path]
        if data is None:
            lines += b"0 " + b"0" * 40 + b"\t" + path.encode() + b"\0"
            continue
        oid = run("hash-object", "-w", "--stdin", input=data).strip()
        mode = modes.get(path) or (store.entry(base, path) or ("100644",))[0]
        lines += mode.encode() + b" " + oid + b"\t" + path.encode() + b"\0"
    run("update-index", "-z", "--index-info", input=lines)
    tree = run("write-tree").decode().strip()
    (store.git_dir / "reference-index").unlink()
    return run("commit-tree", tree, "-p", base, input=message.encode()).decode().strip()


@pytest.mark.parametrize("changes,modes", [
    ({"pkg/mod.py": b"changed\n"}, {}),
    ({"pkg/deep/new/dir/file.py": b"new\n", "top.txt": b"root level\n"}, {}),
    ({"pkg/data/latin1.txt": None}, {}),  # the directory it leaves empty disappears
    ({"pkg/bin/tool.sh": None, "pkg/data/latin1.txt": None, "pkg/mod.py": None,
      "pkg/__init__.py": None}, {}),  # every file of pkg/: the directory goes too
    ({"pkg/data": b"a file where a directory was\n"}, {}),
    ({"pkg/mod.py/inner.py": b"a directory where a file was\n"}, {}),
    ({"pkg/mod.py": b"now executable\n", "pkg/run.sh": b"#!/bin/sh\n"},
     {"pkg/mod.py": "100755", "pkg/run.sh": "100755"}),
    ({"pkg/absent.py": None, "pkg/data": None}, {}),  # nothing there / a directory: kept
    ({"pkg/mod.py": WHEEL_FILES["pkg/mod.py"]}, {}),  # the same bytes: the same tree
])
def test_commit_files_makes_the_commit_git_index_makes(store, wheel_commit, changes, modes):
    """The commit is written without git (the trees on the changed paths only): its id, and so
    every object in it, is the one git's own index plumbing makes of the same change."""
    base = wheel_commit.commit
    ours = store.commit_files(base, changes, modes=modes, message="series so far\n")
    assert ours == _commit_with_git_index(store, base, changes, modes, "series so far\n")
    subprocess.run(["git", "--git-dir", str(store.git_dir), "fsck", "--strict", "--no-dangling"],
                   env=git_env(), check=True, capture_output=True)


@pytest.mark.parametrize("author,message", [
    (("Dev One", "dev@example.com", "1700000000 +0100"), "fix\n\nbody\n"),
    (("Dév Ōne", "", "0 -0530"), "no newline at the end"),
    ((" Dev, ", "<dev@example.com>", "1700000000 +0100"), "crud git strips\n"),
    (("Dev", "dev@example.com", "2023-11-14T22:13:20Z"), "a date git parses\n"),
    (("Dev", "dev@example.com", "1700000000 +0100"), "a non-character \ufffe git rewrites\n"),
])
def test_commit_tree_is_the_commit_git_makes(store, wheel_commit, author, message):
    """Written without git when nothing would change on the way, by git otherwise: the same
    commit either way."""
    tree = store.tree_id(wheel_commit.commit)
    name, email, date = author
    date = "@" + date if date[0].isdigit() and " " in date else date
    env = {**git_env(), "GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": email,
           "GIT_AUTHOR_DATE": date, "GIT_COMMITTER_NAME": name, "GIT_COMMITTER_EMAIL": email,
           "GIT_COMMITTER_DATE": date}
    expected = subprocess.run(["git", "--git-dir", str(store.git_dir), "commit-tree", tree, "-p",
                               wheel_commit.commit], input=message.encode(), env=env,
                              capture_output=True, check=True).stdout.decode().strip()
    assert store.commit_tree(tree, [wheel_commit.commit], message, author=author) == expected


# ---- merges


@pytest.mark.parametrize("base,changed", [
    (b"a\nb\nc\n", b"a\nB\nc\n"),
    (b"a\r\nb", b"a\r\nb\nno newline at the end before\n"),
    (b"", b"created\n"),
    (b"caf\xe9\n\x00binary-ish\n", b"caf\xe9\n"),
])
def test_merge_with_one_side_unchanged_is_what_git_merge_file_gives(tmp_path, base, changed):
    """The merge is made without git when one side is the base: the very bytes git gives."""
    for ours, theirs in ((base, changed), (changed, base)):
        for name, data in (("ours", ours), ("base", base), ("theirs", theirs)):
            (tmp_path / name).write_bytes(data)
        proc = subprocess.run(["git", "merge-file", "-p", "-L", "upstream", "-L", "base", "-L",
                               "patch", "ours", "base", "theirs"], cwd=tmp_path,
                              capture_output=True, env=git_env())
        if proc.returncode > 127:
            # git merge-file refuses content it takes for binary; git's own merges (merge-ort)
            # take the changed side when the other is the base, as merge_file does.
            assert merge_file(base, ours, theirs) == (True, changed)
            continue
        assert merge_file(base, ours, theirs) == (proc.returncode == 0, proc.stdout)


def test_merge_of_two_equal_sides_is_what_git_merge_file_gives_without_git(tmp_path):
    """Both sides the same bytes (landed detection asks this of a target that holds exactly
    the patched file): the merge is made without a git process, and is git merge-file's
    answer, clean or not, in both conflict styles: random edits of small files of few
    distinct lines (blank lines, CRLF, no LF at the end, empty files)."""
    import random

    rng = random.Random(20)
    words = [b"a", b"b", b"c", b"", b"  a", b"}", b"a\r"]
    checked = 0
    for case in range(120):
        base = [rng.choice(words) for _ in range(rng.randint(0, 8))]
        same = random_edit(rng, base, words, edits=4, deleted=0.35, replaced=0.6, run=3)
        sides = [b"\n".join(lines) + (b"" if not lines or rng.random() < 0.2 else b"\n")
                 for lines in (base, same)]
        base_bytes, same_bytes = sides
        if same_bytes == base_bytes:
            continue
        for name, data in (("ours", same_bytes), ("base", base_bytes), ("theirs", same_bytes)):
            (tmp_path / name).write_bytes(data)
        diff3 = case % 2 == 1
        proc = subprocess.run(["git", "merge-file", "-p", *(["--diff3"] if diff3 else []),
                               "-L", "upstream", "-L", "base", "-L", "patch",
                               "ours", "base", "theirs"], cwd=tmp_path, capture_output=True,
                              env=git_env())
        merge = FileMerge(base_bytes, same_bytes, same_bytes, diff3=diff3)
        try:
            assert merge._proc is None, "no git process"
            assert merge.result() == (proc.returncode == 0, proc.stdout), sides
        finally:
            merge.close()
        checked += 1
    assert checked > 80


def test_binary_content_changed_on_both_sides_conflicts_keeping_ours_as_git_merge_does(
        tmp_path):
    """Content git takes for binary (a NUL in its first 8,000 bytes), changed on both sides:
    `git merge-file` refuses it; `git merge` reports a conflict and keeps our side, and so
    does merge_file."""
    base, ours, theirs = b"\x00a\nb\n", b"\x00a\nB\n", b"\x00A\nb\n"
    repo = tmp_path / "repo"
    env = git_env()
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True, env=env)

    def commit(data: bytes, message: str) -> None:
        (repo / "f.bin").write_bytes(data)
        subprocess.run(["git", "add", "f.bin"], cwd=repo, check=True, env=env)
        subprocess.run(["git", "commit", "-q", "-m", message], cwd=repo, check=True, env=env)

    commit(base, "base")
    subprocess.run(["git", "checkout", "-q", "-b", "theirs"], cwd=repo, check=True, env=env)
    commit(theirs, "theirs")
    subprocess.run(["git", "checkout", "-q", "main"], cwd=repo, check=True, env=env)
    commit(ours, "ours")
    merge = subprocess.run(["git", "merge", "-q", "theirs"], cwd=repo, capture_output=True,
                           env=env)
    assert merge.returncode == 1 and b"binary" in merge.stdout + merge.stderr
    assert merge_file(base, ours, theirs) == (False, (repo / "f.bin").read_bytes()) \
        == (False, ours)


def test_a_merge_started_early_gives_git_merge_file_s_answer_and_leaves_nothing(tmp_path):
    """FileMerge: the git process starts when it is made; its answer, read later, is git
    merge-file's (clean and conflicting, labels included); one closed unread is ended and
    leaves no file behind."""
    base = b"".join(b"line %d\n" % i for i in range(200))
    ours = base.replace(b"line 100\n", b"line 100 ours\n")
    cases = [(ours, base.replace(b"line 10\n", b"line 10 theirs\n")),   # clean
             (ours, base.replace(b"line 100\n", b"line 100 theirs\n"))]  # a conflict
    for ours, theirs in cases:
        for name, data in (("ours", ours), ("base", base), ("theirs", theirs)):
            (tmp_path / name).write_bytes(data)
        proc = subprocess.run(["git", "merge-file", "-p", "-L", "a", "-L", "b", "-L", "c",
                               "ours", "base", "theirs"], cwd=tmp_path, capture_output=True,
                              env=git_env())
        merge = FileMerge(base, ours, theirs, ("a", "b", "c"))
        assert merge.result() == (proc.returncode == 0, proc.stdout)
        merge.close()
        assert merge_file(base, ours, theirs, ("a", "b", "c")) == merge.result()
    unread = FileMerge(base, *cases[1])
    scratch = unread._tmp
    assert scratch is not None and os.path.isdir(scratch)
    unread.close()
    assert not os.path.exists(scratch)


def random_edit(rng, lines: list[bytes], words: list[bytes], *, edits: int, deleted: float,
                replaced: float, run: int) -> list[bytes]:
    """`lines` after up to `edits` changes drawn by `rng` (the random merge checks below): a
    line deleted (with chance `deleted`), replaced by one of `words` (up to `replaced`), or up
    to `run` lines of `words` inserted."""
    out = list(lines)
    for _ in range(rng.randint(0, edits)):
        at = rng.randint(0, len(out))
        kind = rng.random()
        if kind < deleted and at < len(out):
            del out[at]
        elif kind < replaced and at < len(out):
            out[at] = rng.choice(words)
        elif run == 1:
            out.insert(at, rng.choice(words))
        else:
            out[at:at] = rng.sample(words, rng.randint(1, run))
    return out


def test_the_line_check_never_rules_out_a_merge_that_gives_ours_back(tmp_path):
    """merge_can_give_ours says False only where git merge-file cannot give `ours` back cleanly:
    checked against git on edits of a small file drawn at random (few distinct lines, so the two
    sides' changes overlap, repeat lines and touch the ends)."""
    import random

    rng = random.Random(19)
    words = [b"a", b"b", b"c", b"d", b"e", b"", b"  a"]

    def edit(lines):
        return random_edit(rng, lines, words, edits=3, deleted=0.4, replaced=0.7, run=1)

    checked = ruled_out = 0
    for case in range(150):
        base = [rng.choice(words) for _ in range(rng.randint(0, 6))]
        ours = edit(base)
        # A third of the cases: theirs makes a change ours already has, so a clean merge
        # giving ours back is common and the check must let it through.
        theirs = ours if case % 3 == 0 else edit(base)
        end = b"" if rng.random() < 0.2 else b"\n"
        sides = [b"\n".join(lines) + (end if lines else b"") for lines in (base, ours, theirs)]
        for name, data in zip(("base", "ours", "theirs"), sides):
            (tmp_path / name).write_bytes(data)
        proc = subprocess.run(["git", "merge-file", "-p", "ours", "base", "theirs"],
                              cwd=tmp_path, capture_output=True, env=git_env())
        gives_ours = proc.returncode == 0 and proc.stdout == sides[1]
        if not merge_can_give_ours(*sides):
            ruled_out += 1
            assert not gives_ours, sides
        checked += gives_ours
    assert checked and ruled_out  # both kinds of case came up


def test_the_run_check_never_rules_out_a_merge_that_gives_ours_back(tmp_path):
    """new_runs_are_in_ours says False only where git merge-file cannot give `ours` back
    cleanly: checked against git on random edits of small files of few distinct lines (blank
    lines, a lone brace, no LF at the end, empty files), with theirs' change already in ours
    in part of the cases; and it rules out cases that merge_can_give_ours' line sets let
    through (a new line of theirs that ours has elsewhere)."""
    import random

    rng = random.Random(12)
    vocabularies = [[b"a", b"b", b"c", b"d", b"e", b"", b"  a"], [b"a", b"b", b""],
                    [b"x%d" % k for k in range(10)] + [b"", b"}"]]

    def edit(lines, words):
        return random_edit(rng, lines, words, edits=4, deleted=0.35, replaced=0.6, run=3)

    gives = ruled_out = beyond_line_sets = 0
    for case in range(600):
        words = rng.choice(vocabularies)
        base = [rng.choice(words) for _ in range(rng.randint(0, 9))]
        theirs = edit(base, words)
        ours = {0: lambda: theirs, 1: lambda: edit(theirs, words),
                2: lambda: edit(base, words)}[case % 3]()
        sides = [b"\n".join(lines) + (b"" if not lines or rng.random() < 0.2 else b"\n")
                 for lines in (base, ours, theirs)]
        for name, data in zip(("base", "ours", "theirs"), sides):
            (tmp_path / name).write_bytes(data)
        proc = subprocess.run(["git", "merge-file", "-p", "ours", "base", "theirs"],
                              cwd=tmp_path, capture_output=True, env=git_env())
        gives_ours = proc.returncode == 0 and proc.stdout == sides[1]
        gives += gives_ours
        if not new_runs_are_in_ours(*sides):
            ruled_out += 1
            assert not gives_ours, sides
            beyond_line_sets += merge_can_give_ours(*sides)
    assert gives > 100 and ruled_out > 100 and beyond_line_sets > 20, \
        (gives, ruled_out, beyond_line_sets)


def test_the_run_check_rules_out_a_new_line_ours_has_elsewhere():
    """Theirs adds `X` after `a`; ours has `X` too, but at the top: git merges both in (clean,
    not ours), and so says the run check, where the line sets cannot."""
    base, ours, theirs = b"a\nb\nc\n", b"X\na\nb\nc\n", b"a\nX\nb\nc\n"
    assert merge_file(base, ours, theirs) == (True, b"X\na\nX\nb\nc\n")
    assert merge_can_give_ours(base, ours, theirs)
    assert not new_runs_are_in_ours(base, ours, theirs)
    # At the top in both: the run starts both files, and the merge gives ours back.
    assert new_runs_are_in_ours(base, ours, ours) and merge_file(base, ours, ours) == (True, ours)


@pytest.fixture
def merge_base(store):
    files = {"m/a.py": b"".join(b"line %d\n" % i for i in range(1, 21)),
             "m/b.py": b"b1\nb2\nb3\n"}
    return store.commit_files(store.commit_tree(
        "4b825dc642cb6eb9a060e54bf8d69288fbee4904", [], "empty\n"), files, message="base\n")


def _edit(data: bytes, line: int, text: bytes) -> bytes:
    lines = data.splitlines(keepends=True)
    lines[line - 1] = text
    return b"".join(lines)




def test_small_files_of_git_processes_are_in_memory(store, merge_base):
    """A git process started for later (a presence check, the landing lookup) has its input
    and its messages, and the store's cat-file its messages, in files of scratch_dir's memory
    file system when there is one (each file made and freed on the disk's cost about 0.1 ms,
    far more while other programs sync); the output of the started process, which can be
    large, stays in the temporary directory."""
    from patchforge.store.git import StartedGit, scratch_dir

    if scratch_dir() is None:
        pytest.skip("no memory file system for scratch files here")
    memory = os.stat(scratch_dir()).st_dev
    started = StartedGit("cat-file", "--batch-check", git_dir=store.git_dir,
                         input=f"{merge_base}\n".encode())
    try:
        assert os.fstat(started._err.fileno()).st_dev == memory
        assert os.fstat(started._out.fileno()).st_dev == os.stat(tempfile.gettempdir()).st_dev
        assert started.result().startswith(merge_base.encode() + b" commit ")
    finally:
        started.close()
    store.read_blob(merge_base, "m/a.py")
    assert os.fstat(store._cat._stderr.fileno()).st_dev == memory


def _rounds_of_requests(store) -> list[list[str]]:
    """The names of each round of requests the store asks of its cat-file from now on."""
    asked: list[list[str]] = []
    real = store._cat.query

    def query(names):
        asked.append(names)
        return real(names)
    store._cat.query = query
    return asked


def test_trees_read_ahead_answer_the_lookups_that_follow(store, merge_base):
    """The trees a rebase reads ahead while it parses its series (every directory on the way
    to each path, at each commit) answer the lookups after it as a round of requests would,
    the paths that are not there and the directories that are files among them, and no round
    of requests is made for them; a path check_path refuses is left to the lookup."""
    other = store.commit_files(merge_base, {"m/sub/c.py": b"c\n", "m/b.py": None},
                               message="more\n")
    paths = ["m/a.py", "m/b.py", "m/sub/c.py", "m/a.py/x", "gone/deep/d.py", "top.py"]
    fresh = UpstreamStore(store.git_dir)
    try:
        expected = {rev: fresh.entries(rev, paths, directories=True)
                    for rev in (merge_base, other)}
    finally:
        fresh.close()
    store.read_trees_ahead([merge_base, other], [*paths, "a//bad"])
    asked = _rounds_of_requests(store)
    assert {rev: store.entries(rev, paths, directories=True)
            for rev in (merge_base, other)} == expected
    assert asked == []
    with pytest.raises(StoreError, match="invalid path"):
        store.entries(merge_base, ["a//bad"])


def test_parents_asked_together_are_what_resolve_gives(store, merge_base):
    """parents_of answers each commit's first parent as resolve(commit + "^1") does, in one
    round of requests (a rebase asks it for all its landed patches' landings at once): None
    for a root commit and for a commit the store does not have."""
    child = store.commit_files(merge_base, {"m/b.py": b"b\n"}, message="child\n")
    grandchild = store.commit_files(child, {"m/b.py": b"c\n"}, message="grandchild\n")
    root = store.resolve(merge_base + "^1")
    unknown = "0123456789" * 4
    asked = _rounds_of_requests(store)
    parents = store.parents_of([grandchild, child, merge_base, root, unknown, child])
    assert len(asked) == 1
    assert parents == {grandchild: child, child: merge_base, merge_base: root, root: None,
                       unknown: None}
    assert store.resolve(grandchild + "^1") == child
    with pytest.raises(StoreError):
        store.resolve(root + "^1")


def test_renames_follow_a_rename_on_one_side(store, merge_base):
    a = store.read_blob(merge_base, "m/a.py")
    ours = store.commit_files(merge_base, {"m/a.py": _edit(a, 3, b"fixed\n")}, message="o\n")
    theirs = store.commit_files(merge_base, {"m/a.py": None, "m/renamed.py": a},
                                message="rename\n")
    assert store.renames(merge_base, theirs, ["m/a.py", "m/b.py"]) == {"m/a.py": "m/renamed.py"}
    assert store.renames(merge_base, ours, ["m/a.py"]) == {}


# ---- diffs


def _apply_in_repo(tmp_path: Path, files: dict[str, bytes], diff: bytes) -> dict[str, bytes]:
    repo = tmp_path / "apply"
    repo.mkdir()
    git(repo, "init", "-q")
    for rel, data in files.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_bytes(data)
    (repo / "change.patch").write_bytes(diff)
    git(repo, "apply", "--check", "change.patch")
    git(repo, "apply", "change.patch")
    (repo / "change.patch").unlink()
    return {str(p.relative_to(repo)): p.read_bytes() for p in repo.rglob("*")
            if p.is_file() and ".git" not in p.parts}


@pytest.mark.parametrize("old,new", [
    (b"one\r\ntwo\r\nthree\r\n", b"one\r\nTWO\r\nthree\r\n"),
    (b"a\nb\nc", b"a\nb\nc\nd"),
    (b"a\nb\nc\n", b"a\nb\nc"),
    (b"caf\xe9\n\xff\xfe\n", b"caf\xe9 au lait\n\xff\xfe\n"),
])
def test_file_diff_round_trips_through_git_apply(tmp_path, old, new):
    diff = make_file_diff("pkg/x.py", "pkg/x.py", old, new)
    assert diff.startswith(b"diff --git a/pkg/x.py b/pkg/x.py\nindex " + blob_oid(old).encode()
                           + b".." + blob_oid(new).encode() + b" 100644\n--- a/pkg/x.py\n"
                           + b"+++ b/pkg/x.py\n@@ ")
    assert _apply_in_repo(tmp_path, {"pkg/x.py": old}, diff) == {"pkg/x.py": new}
    assert make_file_diff("pkg/x.py", "pkg/x.py", old, new) == diff


def test_file_diff_hunks_are_gits(tmp_path, make_git_repo):
    old = b"".join(b"def f%d():\n    return %d\n\n" % (i, i) for i in range(30))
    new = old.replace(b"return 7\n", b"return 77\n").replace(b"def f20", b"def g20")
    repo, _ = make_git_repo({"x.py": old})
    (repo / "x.py").write_bytes(new)
    expected = subprocess.run(["git", "diff", "--no-color", "x.py"], cwd=repo,
                              capture_output=True, check=True).stdout
    ours = make_file_diff("x.py", "x.py", old, new)
    assert ours[ours.index(b"@@"):] == expected[expected.index(b"@@"):]


def test_creation_deletion_and_rename(tmp_path):
    created = make_file_diff(None, "new/file.py", None, b"hello\n")
    assert created.startswith(b"diff --git a/new/file.py b/new/file.py\nnew file mode 100644\n"
                              b"index " + b"0" * 40 + b"..")
    assert b"\n--- /dev/null\n+++ b/new/file.py\n@@ -0,0 +1 @@\n+hello\n" in created
    deleted = make_file_diff("old.py", None, b"bye\n", None)
    assert b"deleted file mode 100644\n" in deleted and b"+++ /dev/null\n" in deleted
    renamed = make_file_diff("a/old.py", "b/new.py", b"1\n2\n3\n", b"1\n2\nthree\n")
    # The similarity score is git's own (`git diff -M1%` says 40% for these two).
    assert renamed.startswith(b"diff --git a/a/old.py b/b/new.py\nsimilarity index 40%\n"
                              b"rename from a/old.py\nrename to b/new.py\nindex ")
    pure = make_file_diff("same.py", "moved.py", b"x\n", b"x\n")
    assert pure == b"diff --git a/same.py b/moved.py\nsimilarity index 100%\n" \
        b"rename from same.py\nrename to moved.py\n"
    mode = make_file_diff("run", "run", b"x\n", b"x\n", new_mode="100755")
    assert mode == b"diff --git a/run b/run\nold mode 100644\nnew mode 100755\n"
    assert make_file_diff("same.py", "same.py", b"x\n", b"x\n") == b""
    empty = make_file_diff(None, "empty", None, b"")
    assert empty == (b"diff --git a/empty b/empty\nnew file mode 100644\nindex " + b"0" * 40
                     + b".." + blob_oid(b"").encode() + b"\n")
    everything = make_diff([FileChange("old.py", None, b"bye\n", None),
                            FileChange("a/old.py", "b/new.py", b"1\n2\n3\n", b"1\n2\nthree\n"),
                            FileChange(None, "new/file.py", None, b"hello\n"),
                            FileChange(None, "empty", None, b"")])
    files = _apply_in_repo(tmp_path, {"old.py": b"bye\n", "a/old.py": b"1\n2\n3\n"}, everything)
    assert files == {"b/new.py": b"1\n2\nthree\n", "new/file.py": b"hello\n", "empty": b""}
    # Sorted by path, whatever the order given.
    heads = [line for line in everything.splitlines() if line.startswith(b"diff --git")]
    assert heads == sorted(heads, key=lambda h: h.split(b" b/")[-1])


def test_paths_needing_quotes_are_quoted_like_git(tmp_path):
    diff = make_file_diff("dir/caf\udce9 \"x\".py", "dir/caf\udce9 \"x\".py", b"1\n", b"2\n")
    assert diff.startswith(b'diff --git "a/dir/caf\\351 \\"x\\".py" "b/dir/caf\\351 \\"x\\".py"\n')
    repo_files = _apply_in_repo(tmp_path, {"x": b""},
                                make_file_diff(None, "dir/caf\u00e9.py", None, b"2\n"))
    assert repo_files["dir/caf\u00e9.py"] == b"2\n"


def test_binary_content_gets_a_git_binary_patch_git_applies(tmp_path):
    import random

    rng = random.Random(17)
    old = bytes(rng.randrange(256) for _ in range(30000))
    new = old[:100] + b"\0patched\0" + old[110:]
    # A NUL past git's 8000-byte look is binary to patchforge too (never a text diff with NUL).
    late = b"x\n" * 5000
    diff = make_diff([FileChange.at("k.co", old, new), FileChange.at("late.bin", late, late + b"\0"),
                      FileChange.at("t.csv", b"a,b\r\n", b"a,c\r\n")])
    assert diff.count(b"GIT binary patch\n") == 2 and b"@@ -1 +1 @@" in diff
    assert b"delta " in diff  # a small change to a large file: git's delta is the smaller
    files = _apply_in_repo(tmp_path, {"k.co": old, "late.bin": late, "t.csv": b"a,b\r\n"}, diff)
    assert files == {"k.co": new, "late.bin": late + b"\0", "t.csv": b"a,c\r\n"}


def test_make_diff_is_one_process_for_many_files(monkeypatch):
    calls = []

    class Counting(subprocess.Popen):
        def __init__(self, args, *a, **kw):
            calls.append(args)
            super().__init__(args, *a, **kw)

    monkeypatch.setattr(subprocess, "Popen", Counting)
    changes = [FileChange(f"f{i}.py", f"f{i}.py", b"a\nb\n", b"a\nB%d\n" % i) for i in range(50)]
    diff = make_diff(changes)
    assert diff.count(b"diff --git ") == 50 and len(calls) == 1


def test_new_diffs_take_their_index_ids_from_git_and_hash_no_content(tmp_path, monkeypatch):
    """git's diff hashes both sides of every file for its `index` line: the diffs' headers take
    those ids, which `git hash-object` gives for the same bytes, instead of hashing every
    content a second time in the process (3.3 MB at 300 patches in a rebase)."""
    import hashlib
    import random

    rng = random.Random(5)
    kernel = bytes(rng.randrange(256) for _ in range(9000))
    changes = [FileChange("x.py", "x.py", b"a\nb\nc\n", b"a\nB\nc\n"),
               FileChange("crlf.txt", "crlf.txt", b"one\r\ntwo\r\n", b"one\r\nTWO\r\n"),
               FileChange("k.co", "k.co", kernel, kernel[:50] + b"\0fix\0" + kernel[55:]),
               FileChange(None, "new.py", None, b"hello\n"),
               FileChange(None, "empty", None, b""),
               FileChange("gone.py", None, b"bye\n", None),
               FileChange("old/name.py", "new/name.py", b"1\n2\n3\n", b"1\n2\nthree\n"),
               FileChange("run.sh", "run.sh", b"x\n", b"y\n", "100644", "100755")]
    hashed = []
    real_sha1 = hashlib.sha1

    class Counted:
        def __init__(self, data=b"", **kw):
            self._hash = real_sha1(data, **kw)
            hashed.append(len(data))

        def update(self, data):
            hashed.append(len(data))
            self._hash.update(data)

        def __getattr__(self, name):
            return getattr(self._hash, name)

    monkeypatch.setattr(hashlib, "sha1", Counted)
    diff = make_diff(changes)
    monkeypatch.undo()
    assert sum(hashed) == 0
    sides = tmp_path / "sides"
    sides.mkdir()
    expected = []
    for n, c in enumerate(changes):
        ids = []
        for side, data in (("o", c.old), ("n", c.new)):
            if data is None:
                ids.append("0" * 40)
                continue
            (sides / f"{side}{n}").write_bytes(data)
            ids.append(git(sides, "hash-object", "--no-filters", f"{side}{n}").strip())
        expected.append(f"index {ids[0]}..{ids[1]}")
    index_lines = [line.decode() for line in diff.splitlines() if line.startswith(b"index ")]
    in_order = sorted(range(len(changes)),  # the sections' order: by path
                      key=lambda k: (changes[k].new_path or changes[k].old_path or ""))
    assert [" ".join(line.split(" ")[:2]) for line in index_lines] == \
        [expected[k] for k in in_order]
    files = _apply_in_repo(tmp_path, {"x.py": b"a\nb\nc\n", "crlf.txt": b"one\r\ntwo\r\n",
                                      "k.co": kernel, "gone.py": b"bye\n",
                                      "old/name.py": b"1\n2\n3\n", "run.sh": b"x\n"}, diff)
    assert files == {"x.py": b"a\nB\nc\n", "crlf.txt": b"one\r\nTWO\r\n",
                     "k.co": changes[2].new, "new.py": b"hello\n", "empty": b"",
                     "new/name.py": b"1\n2\nthree\n", "run.sh": b"y\n"}


def test_patch_id_ignores_line_numbers(store):
    body = b"a\nb\nc\nd\ne\nf\ng\n"
    far = b"".join(b"z%d\n" % i for i in range(10))
    one = make_file_diff("x.py", "x.py", body, body.replace(b"d\n", b"D\n"))
    shifted = make_file_diff("x.py", "x.py", far + body, far + body.replace(b"d\n", b"D\n"))
    assert b"@@ -1,7 +1,7 @@" in one and b"@@ -11,7 +11,7 @@" in shifted
    other = make_file_diff("x.py", "x.py", body, body.replace(b"d\n", b"X\n"))
    assert store.patch_id(one) == store.patch_id(shifted)
    assert store.patch_id(one) != store.patch_id(other)
    assert store.patch_id(b"") is None


def _packs_and_refs(store) -> tuple[list[str], str]:
    return (sorted(os.listdir(store.git_dir / "objects" / "pack")),
            git(store.git_dir, "for-each-ref"))


def test_checked_paths_are_remembered_and_refusals_are_not():
    """check_path is asked about the same paths thousands of times in a rebase and remembers
    its answers: each is what the check itself gives, and a path it refuses is refused again
    every time it is asked."""
    from patchforge.store.diff import check_path

    for path in ("a.py", "m/sub/é.py", os.fsdecode(b"m/\x80raw.py"), "a b/c"):
        assert check_path(path) == check_path(path) == check_path.__wrapped__(path) == \
            os.fsencode(path)
    for bad in ("", "/abs", "a/../b", "a//b", "./a", ".git/config", "a\nb", "a/.git"):
        for _ in range(2):
            with pytest.raises(StoreError, match="invalid path"):
                check_path(bad)


def _nothing_left(importer) -> bool:
    """Whether a closed range-diff import left nothing of its run: the cache's kept
    repository emptied (no pack, no refs, no output) and unlocked, or its own scratch
    repository removed."""
    import fcntl

    from patchforge.store.rangediff import KEPT_REPOSITORY

    path = importer._tmp
    if path.name != KEPT_REPOSITORY:
        return not path.exists()
    fd = os.open(path / "lock", os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # not held any more
    finally:
        os.close(fd)
    return not os.listdir(path / "objects" / "pack") and not os.listdir(path / "refs") and \
        sorted(os.listdir(path)) == ["HEAD", "config", "lock", "objects", "refs"]


def test_range_diff_of_imported_chains_leaves_the_store_alone(store, merge_base):
    a = store.read_blob(merge_base, "m/a.py")
    before = _packs_and_refs(store)
    importer = store.range_diff_import()
    one = importer.blob(_edit(a, 7, b"x\n"))  # handed over while the caller works, by mark
    out = importer.range_diff([
        (merge_base, ["m/a.py"], [("fix", {"m/a.py": one})]),
        (merge_base, ["m/a.py"], [("fix", {"m/a.py": _edit(a, 7, b"y\n")})]),  # or inline
    ])
    assert b"fix" in out and b"!" in out and b"+x" in out and b"+y" in out
    assert _packs_and_refs(store) == before
    assert _nothing_left(importer)  # the scratch repository is emptied or gone


def test_a_content_handed_over_twice_is_one_blob(store, merge_base, tmp_path):
    """The same bytes object handed over twice (the old chain's and the new chain's content of
    a patch that met its file unchanged) and an equal copy are one blob, git's id for it."""
    data = _edit(store.read_blob(merge_base, "m/a.py"), 7, b"x\n")
    (tmp_path / "a.py").write_bytes(data)
    expected = git(tmp_path, "hash-object", "a.py").strip()
    importer = store.range_diff_import()
    marks = [importer.blob(data), importer.blob(data), importer.blob(bytes(bytearray(data)))]
    assert [importer._blobs[mark - 1] for mark in marks] == [expected] * 3
    out = importer.range_diff([(merge_base, ["m/a.py"], [("fix", {"m/a.py": marks[0]})]),
                               (merge_base, ["m/a.py"], [("fix", {"m/a.py": marks[1]})])])
    assert b" = " in out and b"fix" in out


def test_range_diff_chains_are_the_commits_git_fast_import_makes(store, merge_base, tmp_path):
    """The chains' objects are made without git: each commit id must be the one `git
    fast-import` gives the same branch (a reset, then commits given only a committer), across
    nested and sibling directories git sorts by their '/', a directory emptied and removed, a
    file put back, contents given by mark, inline or by store blob id, names that are not UTF-8
    or need quoting, an empty file, and a file replaced by a directory."""
    from patchforge.store.git import IMPORT_IDENT
    from patchforge.store.rangediff import quote_fastimport

    a = store.read_blob(merge_base, "m/a.py")
    b_id = store.entry(merge_base, "m/b.py")[1]
    importer = store.range_diff_import()
    steps = [
        ("one", {"m/a.py": importer.blob(_edit(a, 3, b"x\n")), "m.py": b"top\n",
                 "m-x/n.py": b"dash\n", "m/sub/deep/c.py": b"deep\n"}),
        ("two", {"m/sub/deep/c.py": None, "m/b.py": None, "m/a.py": b"only\n"}),
        ("three", {"m/b.py": b_id, "m/sub/e.py": importer.blob(b"again\n")}),
        ("four", {"m/a.py": None, "m/b.py": None, "m/sub/e.py": None, "m.py": None,
                  "m-x/n.py": None}),
        # Names git sorts by their bytes (a byte that is not UTF-8 before 'é' and U+E000), one
        # fast-import must quote, an empty file, then a file that becomes a directory.
        ("five", {**{name: name.encode("utf-8", "surrogateescape") + b"\n" for name in (
            os.fsdecode(b"m/\x80raw.py"), "m/\u00e9.py", "m/\ue000.py", "m/sp ace.py",
            'm/"q.py', "m/nl\nx.py")}, "m/empty.py": b"", "m/f": b"file\n"}),
        ("six", {"m/f": None, "m/f/deep.py": b"deep\n"}),
    ]
    ours = importer.chain(merge_base, ["m/a.py", "m/b.py"], steps)
    importer.close()

    scratch = tmp_path / "fi.git"
    git(tmp_path, "init", "-q", "--bare", str(scratch))
    (scratch / "objects" / "info" / "alternates").write_text(
        str((store.git_dir / "objects").resolve()) + "\n")
    ident = "%s <%s> %s" % IMPORT_IDENT
    stream = [b"reset refs/heads/c\n"]
    base = {"m/a.py": store.entry(merge_base, "m/a.py")[1], "m/b.py": b_id}
    for mark, (name, files) in enumerate([("base", base), *steps], 1):
        stream.append(b"commit refs/heads/c\nmark :%d\ncommitter %s\ndata %d\n%s\n"
                      % (mark, ident.encode(), len(name) + 1, name.encode()))
        for path in sorted(files):
            raw = quote_fastimport(path.encode("utf-8", "surrogateescape"))
            content = files[path]
            if content is None:
                stream.append(b"D " + raw + b"\n")
            elif isinstance(content, str):
                stream.append(b"M 100644 %s %s\n" % (content.encode(), raw))
            else:
                data = content if isinstance(content, bytes) else \
                    {1: _edit(a, 3, b"x\n"), 2: b"again\n"}[content]
                stream.append(b"M 100644 inline %s\ndata %d\n%s\n" % (raw, len(data), data))
    marks = tmp_path / "marks"
    subprocess.run(["git", "--git-dir", str(scratch), "fast-import", "--quiet",
                    f"--export-marks={marks}"], input=b"".join(stream), check=True,
                   env=git_env())
    ids = dict(line.split(" ") for line in marks.read_text().split("\n") if line)
    assert ours == (ids[":1"], ids[f":{len(steps) + 1}"])


def test_range_diff_scratch_repository_is_the_caches_or_one_in_the_temporary_directory(
        store, merge_base, tmp_path, monkeypatch):
    """The range-diff runs in the cache's repository beside the store, one run at a time; a
    run meanwhile makes one in the temporary directory, never in memory (a rebase killed
    before its end leaves it, and its pack is megabytes for a long series). What a killed run
    left in the cache's (its pack, its refs, its output) is gone before the next run writes
    its own, and the text is git's as before."""
    from patchforge.store.rangediff import KEPT_REPOSITORY

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    a = store.read_blob(merge_base, "m/a.py")
    chains = [(merge_base, ["m/a.py"], [("fix", {"m/a.py": _edit(a, 7, b"x\n")})]),
              (merge_base, ["m/a.py"], [("fix", {"m/a.py": _edit(a, 7, b"y\n")})])]
    first = store.range_diff_import()
    second = store.range_diff_import()
    kept = store.git_dir.parent / KEPT_REPOSITORY
    try:
        assert first._tmp == kept
        assert second._tmp.parent == tmp_path
        expected = second.range_diff(chains)
    finally:
        first.close()
    assert _nothing_left(first) and _nothing_left(second)
    # A run killed after writing its pack: the next one starts from an empty repository.
    killed = store.range_diff_import()
    killed.start(chains)
    os.kill(killed._proc.pid, 9)
    killed._proc.wait()
    os.close(killed._kept_lock)  # the kernel lets the lock go with the process
    assert os.listdir(kept / "objects" / "pack") and (kept / "out").exists()
    again = store.range_diff_import()
    assert again._tmp == kept and not os.listdir(kept / "objects" / "pack")
    assert again.range_diff(chains) == expected
    assert _nothing_left(again)


def test_the_caches_range_diff_repository_is_used_only_as_it_was_made(store, merge_base,
                                                                      tmp_path, monkeypatch):
    """A ref in the cache's range-diff repository (refs/replace/ would change what git
    compares), an object of its own (loose, or a second alternates file: the ids'
    abbreviation counts them), its configuration or alternates changed, or the repository a
    symlink: it is not used, and the run makes its own in the temporary directory."""
    from patchforge.store.rangediff import KEPT_REPOSITORY

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    kept = store.git_dir.parent / KEPT_REPOSITORY
    store.range_diff_import().close()
    assert kept.is_dir()
    for change in ("ref", "loose", "info", "config", "alternates", "symlink"):
        saved = tmp_path / "saved"
        shutil.copytree(kept, saved, symlinks=True)
        if change == "ref":
            (kept / "refs" / "replace").mkdir()
            (kept / "refs" / "replace" / merge_base).write_text(merge_base + "\n")
        elif change == "loose":
            (kept / "objects" / merge_base[:2]).mkdir()
            (kept / "objects" / merge_base[:2] / merge_base[2:]).write_bytes(b"x")
        elif change == "info":
            (kept / "objects" / "info" / "http-alternates").write_text(str(tmp_path) + "\n")
        elif change == "config":
            with open(kept / "config", "ab") as f:
                f.write(b"[diff]\n\tnoprefix = true\n")
        elif change == "alternates":
            (kept / "objects" / "info" / "alternates").write_text(str(tmp_path) + "\n")
        else:
            shutil.rmtree(kept)
            kept.symlink_to(saved, target_is_directory=True)
        importer = store.range_diff_import()
        try:
            assert importer._tmp.parent == tmp_path, change
        finally:
            importer.close()
        if kept.is_symlink():
            kept.unlink()
        else:
            shutil.rmtree(kept)
        shutil.move(saved, kept)
    importer = store.range_diff_import()
    assert importer._tmp == kept
    importer.close()


def test_range_diff_import_that_cannot_start_is_a_store_error(store, merge_base, monkeypatch):
    """No room for the scratch repository, or no git process to be had: a StoreError, and no
    scratch directory left behind."""
    from patchforge import tempfiles

    made = []
    real_make_temp_dir = tempfiles.make_temp_dir

    def make_temp_dir(*args, **kw):
        made.append(real_make_temp_dir(*args, **kw))
        return made[-1]

    def no_room(*args, **kw):
        raise OSError(28, "No space left on device")

    def no_fork(*args, **kw):
        raise OSError(11, "Resource temporarily unavailable")
    monkeypatch.setattr(tempfiles, "make_temp_dir", make_temp_dir)
    with monkeypatch.context() as patched:
        patched.setattr(Path, "write_bytes", no_room)
        with pytest.raises(StoreError, match="cannot make the range-diff's scratch repository"):
            store.range_diff_import()
    importer = store.range_diff_import()
    one, two = importer.blob(b"a fix\n"), importer.blob(b"another fix\n")
    monkeypatch.setattr(subprocess, "Popen", no_fork)
    with pytest.raises(StoreError, match="cannot start the range-diff"):
        importer.range_diff([(merge_base, ["m/a.py"], [("fix", {"m/a.py": one})]),
                             (merge_base, ["m/a.py"], [("fix", {"m/a.py": two})])])
    assert made and not any(Path(p).exists() for p in made) and _nothing_left(importer)


def test_range_diff_started_then_closed_ends_git_and_leaves_nothing(store, merge_base):
    """A range-diff runs while the caller goes on (start); a caller that fails meanwhile closes
    it: git is ended and the scratch repository removed. One that waits gets the text that
    range_diff() gives."""
    a = store.read_blob(merge_base, "m/a.py")
    chains = [(merge_base, ["m/a.py"], [("fix", {"m/a.py": _edit(a, 7, b"x\n")})]),
              (merge_base, ["m/a.py"], [("fix", {"m/a.py": _edit(a, 7, b"y\n")})])]
    expected = store.range_diff_import().range_diff(chains)
    importer = store.range_diff_import()
    run = importer.start(chains)
    run.close()
    assert importer._proc.returncode is not None and _nothing_left(importer)
    with pytest.raises(StoreError):
        run.result()
    importer = store.range_diff_import()
    assert importer.start(chains).result() == expected
    assert _nothing_left(importer)


def _series_chains(store, merge_base: str, old_names=None) -> list:
    """Two chains of a rebase, over the fixture's base and over a target that took the old
    chain's "landed" and changed the first line of m/a.py: "first", "same" and "created"
    change the same files from the same contents to the same contents in both, "moved" edits
    m/a.py as it is on each side (git's text the same, the contents not), "changed" differs,
    "added" is the new chain's alone."""
    a, b = store.read_blob(merge_base, "m/a.py"), store.read_blob(merge_base, "m/b.py")
    landed = _edit(a, 10, b"landed\n")
    target = store.commit_files(merge_base, {"m/a.py": _edit(landed, 1, b"upstream\n")},
                                message="target\n")
    first = {"m/b.py": _edit(b, 1, b"first\n")}
    same = {"m/b.py": _edit(_edit(b, 1, b"first\n"), 2, b"same\n")}
    created = {"m/c.py": b"new file\n"}
    changed = _edit(_edit(b, 1, b"first\n"), 2, b"same\n")
    old = [("first", first), ("same", same), ("landed", {"m/a.py": landed}),
           ("moved", {"m/a.py": _edit(landed, 18, b"moved\n")}), ("created", created),
           ("changed", {"m/b.py": _edit(changed, 3, b"b3\nb4\nb5\nb6\nold\n")})]
    new = [("first", first), ("same", same),
           ("moved", {"m/a.py": _edit(_edit(landed, 1, b"upstream\n"), 18, b"moved\n")}),
           ("created", created), ("changed", {"m/b.py": _edit(changed, 3, b"b3\nb4\nb5\nb6\nnew\n")}),
           ("added", {"m/d.py": b"added\n"})]
    if old_names:
        old = [(name, files) for name, (_, files) in zip(old_names, old)]
    return [(merge_base, ["m/a.py", "m/b.py"], old), (target, ["m/a.py", "m/b.py"], new)]


# A pair's line of a range-diff: its number on the old side, its id there, the mark.
_PAIR_LINE = re.compile(rb"(?m)^ *(\d+|-): +([0-9a-f]+|-+) ([=!<>]) ")


def _scratch_git(importer, *args: str, replace: bool = True) -> bytes:
    env = git_env()
    if replace:
        del env["GIT_NO_REPLACE_OBJECTS"]
    return subprocess.run(["git", "--git-dir", str(importer._scratch), *args], env=env,
                          capture_output=True, check=True).stdout


def test_range_diff_diffs_only_the_patches_that_differ(store, merge_base):
    """A patch that changes the same files from the same contents to the same contents in both
    chains is an exact pair for `git range-diff`; each of its two commits stands in as one
    with the same tree and message whose diff is empty (refs/replace/ of the scratch
    repository), so git's two `git log -p` diff only the other patches' files. Every line of
    the text is the one git gives reading the commits themselves: the same ids, order, pairs
    ('=', '!', '<', '>') and diffs. The first patch of a chain keeps its commit."""
    chains = _series_chains(store, merge_base)
    importer = store.range_diff_import()
    run = importer.start(chains)
    try:
        ranges = [arg for arg in importer._proc.args if ".." in arg]
        for side in ranges:
            as_made = _scratch_git(importer, "log", "-p", "--no-merges", "--reverse",
                                   "--format=%x00%H %s", side, replace=False)
            as_git_reads = _scratch_git(importer, "log", "-p", "--no-merges", "--reverse",
                                        "--format=%x00%H %s", side)
            made = {c[:c.index(b" ")]: c for c in as_made.split(b"\0")[1:]}
            read = {c[:c.index(b" ")]: c for c in as_git_reads.split(b"\0")[1:]}
            assert list(made) == list(read)  # the same commits, in the same order
            names = {c.split(b"\n")[0].split(b" ")[1]: oid for oid, c in made.items()}
            for name, oid in names.items():
                if name in (b"same", b"created"):
                    assert b"diff --git" in made[oid] and b"diff --git" not in read[oid]
                else:
                    assert read[oid] == made[oid]
        expected = _scratch_git(importer, "range-diff", "--no-color", *ranges, replace=False)
    finally:
        text = run.result()
    assert text == expected
    marks = [pair[2] for pair in _PAIR_LINE.findall(text)]
    assert marks == [b"=", b"=", b"<", b"=", b"=", b"!", b">"], text.decode()


def test_range_diff_stand_ins_need_one_name_per_commit(store, merge_base):
    """Names that are one name with their whitespace taken out (git's text of a commit may
    differ from another's in whitespace alone): no commit stands in, and the text is git's
    of the commits themselves."""
    chains = _series_chains(store, merge_base,
                            old_names=["first", "same", "sa me", "moved", "created", "changed"])
    importer = store.range_diff_import()
    run = importer.start(chains)
    try:
        assert not (importer._scratch / "packed-refs").exists()
        ranges = [arg for arg in importer._proc.args if ".." in arg]
        expected = _scratch_git(importer, "range-diff", "--no-color", *ranges, replace=False)
    finally:
        text = run.result()
    assert text == expected and b" = " in text


def test_range_diff_stand_ins_never_change_the_abbreviated_ids(store, merge_base):
    """git abbreviates ids to a length its object count sets (7 hex digits up to 16,383
    objects in the packs, the scratch repository's and the store's, 8 from 16,384). With the
    store grown to one object short of 16,384 beside the range-diff's own pack, the stand-ins'
    objects would take the count past it: none is made, and the ids keep 7 digits. One more
    object in the store, and git gives 8 digits with the stand-ins made too."""
    from patchforge.store.objects import object_id, stored_parts, write_parts_pack
    from patchforge.store.rangediff import _pack_objects

    chains = _series_chains(store, merge_base)
    importer = store.range_diff_import()
    run = importer.start(chains)
    stand_ins = len((importer._scratch / "packed-refs").read_bytes().splitlines()) - 1
    alternates = importer._scratch / "objects" / "info" / "alternates"
    alternates.unlink()  # (to count its own pack alone)
    own = _pack_objects(importer._scratch)
    run.close()
    assert stand_ins == 4 and own is not None
    pad = 16383 - (own - 2 * stand_ins) - _pack_objects(store.git_dir)
    padding = [b"padding %d\n" % i for i in range(pad + 1)]
    write_parts_pack(store.git_dir, {object_id(b"blob", data): stored_parts(b"blob", data)
                                     for data in padding[:-1]})

    def ids_printed():
        importer = store.range_diff_import()
        run = importer.start(chains)
        made = (importer._scratch / "packed-refs").exists()
        text = run.result()
        return made, {len(pair[1]) for pair in _PAIR_LINE.findall(text)} - {1}
    assert ids_printed() == (False, {7})
    write_parts_pack(store.git_dir, {object_id(b"blob", padding[-1]):
                                     stored_parts(b"blob", padding[-1])})
    assert ids_printed() == (True, {8})


def test_range_diff_import_closed_early_leaves_nothing(store, merge_base):
    importer = store.range_diff_import()
    importer.blob(b"half a series\n")
    importer.close()
    assert _nothing_left(importer)
    with pytest.raises(StoreError):
        importer.blob(b"the rest\n")


def test_maintain_repacks_a_store_of_many_packs(store, merge_base, monkeypatch):
    commits = []
    for i in range(5):
        commits.append(store.commit_files(merge_base, {"m/new.py": b"n = %d\n" % i},
                                          message=f"c{i}\n"))
        git(store.git_dir, "update-ref", f"refs/test/c{i}", commits[-1])
        git(store.git_dir, "repack", "-d", "-q")  # each round's loose objects: one more pack
    packs = [n for n in os.listdir(store.git_dir / "objects" / "pack") if n.endswith(".pack")]
    assert len(packs) >= 5
    monkeypatch.setattr(UpstreamStore, "MAX_PACKS", 100)
    assert store.maintain() is False
    monkeypatch.setattr(UpstreamStore, "MAX_PACKS", 2)
    assert store.maintain() is True
    packs = [n for n in os.listdir(store.git_dir / "objects" / "pack") if n.endswith(".pack")]
    assert len(packs) == 1
    fresh = UpstreamStore(store.git_dir)
    for i, commit in enumerate(commits):
        assert fresh.read_blob(commit, "m/new.py") == b"n = %d\n" % i
    fresh.close()


# ---- materialize


def test_materialize_whole_tree_and_some_paths(store, wheel_commit, tmp_path):
    dest = tmp_path / "work"
    store.materialize(wheel_commit.commit, dest)
    for path, data in WHEEL_FILES.items():
        assert (dest / path).read_bytes() == data
    assert os.access(dest / "pkg/bin/tool.sh", os.X_OK)
    assert not (dest / "HEAD").exists() and not (dest / ".git").exists()
    some = tmp_path / "some"
    store.materialize(wheel_commit.commit, some, ["pkg/mod.py"])
    assert [str(p.relative_to(some)) for p in some.rglob("*") if p.is_file()] == ["pkg/mod.py"]


def test_an_import_stays_readable_after_another_takes_its_label_and_the_store_repacks(
        store, tmp_path, monkeypatch):
    """Two projects sharing one cache, each with a directory upstream named `site` labelled
    `v1` but different files: the second import takes the label's ref. The first project's
    lock still pins the first commit, and its directory may have changed since, so the store
    must never drop that commit (a repack drops what no ref reaches)."""
    first_dir, second_dir = tmp_path / "a", tmp_path / "b"
    for root, text in ((first_dir, b"first\n"), (second_dir, b"second\n")):
        root.mkdir()
        (root / "f.py").write_bytes(text)
    monkeypatch.setattr(UpstreamStore, "MAX_PACKS", -1)  # repack whatever there is
    first = store.import_directory(first_dir, "site", "v1")
    assert store.maintain() is True  # packed, as a wheel's import is
    second = store.import_directory(second_dir, "site", "v1")
    assert first.commit != second.commit
    assert store.shared_import_ref("site", "v1") == second.commit
    assert store.maintain() is True
    fresh = UpstreamStore(store.git_dir)
    try:
        assert fresh.read_blob(first.commit, "f.py") == b"first\n"
        assert fresh.read_blob(second.commit, "f.py") == b"second\n"
    finally:
        fresh.close()


def test_stored_pack_entries_are_what_git_reads_at_every_size(tmp_path):
    """A range-diff's pack holds its objects stored, not compressed: an object of one stored
    block is made in one piece, a larger one block by block. Both are the general form's bytes
    (zlib header, blocks, Adler-32) with the CRC-32 the index keeps, and git reads each object
    back from the pack, which `git verify-pack` accepts."""
    import zlib

    from patchforge.store.objects import (_stored, object_id, pack_entry, pack_object_header,
                                          write_pack)

    contents = [b"", b"x", b"a\n" * 32767 + b"b", b"c" * 65536, bytes(range(256)) * 800]
    entries = {}
    for data in contents:
        entry, crc = pack_entry(b"blob", data, level=0)
        general = pack_object_header(3, len(data)) + _stored(data)
        assert (entry, crc) == (general, zlib.crc32(general))
        assert zlib.decompress(general[len(pack_object_header(3, len(data))):]) == data
        entries[object_id(b"blob", data)] = (entry, crc)
    repo = tmp_path / "r.git"
    git(tmp_path, "init", "-q", "--bare", str(repo))
    name = write_pack(repo, entries)
    subprocess.run(["git", "verify-pack", str(repo / "objects" / "pack" / f"{name}.idx")],
                   check=True, env=git_env(), capture_output=True)
    for oid, data in zip(entries, contents):
        out = subprocess.run(["git", "--git-dir", str(repo), "cat-file", "blob", oid],
                             check=True, env=git_env(), capture_output=True).stdout
        assert out == data


def test_pack_of_stored_parts_is_the_pack_git_indexes(tmp_path, monkeypatch):
    """The range-diff's pack is written from each object's parts (the content not copied into
    its entry) with an index of version 1, which keeps no CRC-32: at every size of object, the
    pack and its index must be the bytes `git index-pack --index-version=1` makes of the same
    objects (so git reads them as its own), and a pack past version 1's 32-bit offsets gets
    git's version 2 index, CRCs and all."""
    from patchforge.store import objects
    from patchforge.store.objects import object_id, stored_parts, write_parts_pack

    contents = [b"", b"x", b"y" * 4095, b"z" * 4096, b"a\n" * 32767 + b"b", b"c" * 65536,
                bytes(range(256)) * 800]
    for version, limit in ((1, objects._V1_OFFSETS), (2, 100)):
        monkeypatch.setattr(objects, "_V1_OFFSETS", limit)
        repo = tmp_path / f"v{version}.git"
        git(tmp_path, "init", "-q", "--bare", str(repo))
        entries = {object_id(b"blob", data): stored_parts(b"blob", data) for data in contents}
        entries[object_id(b"tree", b"")] = stored_parts(b"tree", b"")
        name = write_parts_pack(repo, entries)
        pack = repo / "objects" / "pack" / f"{name}.pack"
        copy = tmp_path / f"copy{version}.pack"
        copy.write_bytes(pack.read_bytes())
        git(tmp_path, "index-pack", f"--index-version={version}", "-o",
            str(tmp_path / f"copy{version}.idx"), str(copy))
        assert (tmp_path / f"copy{version}.idx").read_bytes() == \
            pack.with_suffix(".idx").read_bytes()
        subprocess.run(["git", "verify-pack", str(pack.with_suffix(".idx"))], check=True,
                       env=git_env(), capture_output=True)
        for data in contents:
            out = subprocess.run(["git", "--git-dir", str(repo), "cat-file", "blob",
                                  object_id(b"blob", data)],
                                 check=True, env=git_env(), capture_output=True).stdout
            assert out == data


def test_contents_packed_as_deltas_are_what_git_reads_back(tmp_path):
    """A range-diff's pack holds a content the walk made by placing hunks as git's delta of
    the content it was made from (objects.git_delta from FileApplication.edits, an offset
    delta in the pack). On random contents and edits (at either end, side by side, deleting
    only, inserts longer than one instruction takes, offsets and copies of every width up to
    a base past 16 MB, deltas of deltas) `git verify-pack` accepts the pack and git reads each
    object back byte for byte."""
    import random

    from patchforge.store.objects import (DeltaEntry, git_delta, object_id, stored_parts,
                                          write_parts_pack)

    rng = random.Random(13)

    def edited(old: bytes) -> tuple[bytes, list]:
        edits, at = [], 0
        for _ in range(rng.randrange(0, 6)):
            start = rng.randrange(at, len(old) + 1) if rng.random() < 0.8 else at
            end = min(len(old), start + rng.choice((0, 1, 7, 300, 70000)))
            post = rng.randbytes(rng.choice((0, 1, 126, 127, 128, 255, 1000)))
            edits.append((start, end, post))
            at = end
        return _made_by(old, edits), edits

    bases = [b"", b"x", rng.randbytes(300), rng.randbytes(0x10000),
             b"line\r\n" * 40000, rng.randbytes(0x1000010)]
    bases += [rng.randbytes(rng.randrange(1, 5000)) for _ in range(20)]
    entries: dict = {}
    expected: dict[str, bytes] = {}
    for base in bases:
        oid = object_id(b"blob", base)
        entries.setdefault(oid, stored_parts(b"blob", base))
        expected[oid] = base
        content, made_from = base, oid
        for _ in range(rng.randrange(1, 4)):  # a chain: each the delta of the one before
            new, edits = edited(content)
            new_oid = object_id(b"blob", new)
            if new_oid not in entries:
                entries[new_oid] = DeltaEntry(made_from, git_delta(len(content), len(new),
                                                                   edits))
                expected[new_oid] = new
            content, made_from = new, new_oid
    # Past 16 MB: a copy longer than one instruction takes, and an offset of four bytes.
    big = bases[5]
    for edits in ([(len(big), len(big), b"!")],
                  [(10, 20, b"a" * 200), (0x1000005, 0x1000006, b"")]):
        new = _made_by(big, edits)
        entries[object_id(b"blob", new)] = DeltaEntry(object_id(b"blob", big),
                                                      git_delta(len(big), len(new), edits))
        expected[object_id(b"blob", new)] = new
    assert sum(isinstance(e, DeltaEntry) for e in entries.values()) > 30
    with pytest.raises(ValueError):  # a copy addresses four bytes of offset: such a content
        git_delta(2 ** 32, 1, [(0, 2 ** 32, b"x")])  # is packed whole
    repo = tmp_path / "r.git"
    git(tmp_path, "init", "-q", "--bare", str(repo))
    name = write_parts_pack(repo, entries)
    subprocess.run(["git", "verify-pack", str(repo / "objects" / "pack" / f"{name}.idx")],
                   check=True, env=git_env(), capture_output=True)
    out = subprocess.run(["git", "--git-dir", str(repo), "cat-file", "--batch"],
                         input="".join(f"{oid}\n" for oid in expected).encode(), check=True,
                         env=git_env(), capture_output=True).stdout
    at = 0
    for oid, data in expected.items():
        header = f"{oid} blob {len(data)}\n".encode()
        assert out[at:at + len(header)] == header
        at += len(header)
        assert out[at:at + len(data)] == data, oid
        at += len(data) + 1
    assert at == len(out)


def _made_by(old: bytes, edits) -> bytes:
    pieces, at = [], 0
    for start, end, post in edits:
        pieces += (old[at:start], post)
        at = end
    return b"".join(pieces) + old[at:]


def test_cat_file_read_ahead_gives_what_a_query_gives(tmp_path):
    """Names asked ahead are read as git gives them: many more than are ever outstanding, more
    bytes than git's pipe holds (no side waits on the other), a missing one and repeats among
    them, taken in another order than asked, with queries in between (each gets its own
    answers) and git started again midway (what is not read yet is asked again)."""
    import signal
    import time

    from patchforge.store.catfile import CatFile
    from patchforge.store.objects import write_loose

    repo = tmp_path / "r.git"
    git(tmp_path, "init", "-q", "--bare", str(repo))
    # More requests than the pipe to git holds (41 bytes each), more answers than the pipe
    # from it: asked all at once, each side would wait for the other.
    blobs = [b"%d\n" % i * (8000 if i < 200 else 20) for i in range(2000)]
    assert sum(map(len, blobs[:200])) > 2 * CatFile.PIPE_BYTES and 1800 * 41 > 65536
    ids = [write_loose(repo, b"blob", data) for data in blobs]
    missing = "0" * 40
    cat = CatFile(repo)
    try:
        cat.ahead([*ids, missing, *ids[:5]])
        assert cat.query([ids[600], "HEAD"]) == [(ids[600], "blob", blobs[600]), None]
        order = [*range(300, len(ids)), *range(300)]
        for k in order[:1500]:
            assert cat.answer(ids[k]) == (ids[k], "blob", blobs[k])
            assert not cat.asked(ids[k])
        assert cat.answer(missing) is None
        cat.restart()
        for k in order[1500:]:
            assert cat.answer(ids[k]) == (ids[k], "blob", blobs[k])
        assert cat.answer(ids[0]) == (ids[0], "blob", blobs[0])  # taken already: asked again
        # Closed with answers outstanding (git waiting for room in the pipe, never reading
        # the end of its input): git is ended at once, not waited for.
        cat.ahead(ids)
        proc = cat._proc
        began = time.monotonic()
        cat.close()
        assert proc is not None and proc.returncode == -signal.SIGKILL
        assert time.monotonic() - began < 2.5  # not the 5 s a process is given to end
        cat.query([ids[0]])
        proc = cat._proc
        cat.close()  # nothing outstanding: git ends on its own
        assert proc is not None and proc.returncode == 0
    finally:
        cat.close()


def test_files_read_ahead_are_the_files_read(store, merge_base):
    """read_ahead() changes when git reads a file, never what the store gives for it: a path
    absent at its revision, one asked at two revisions, and a path asked for later alone."""
    second = store.commit_files(merge_base, {"m/a.py": b"other\n", "m/c.py": b"c\n"},
                                message="two\n")
    files = [(merge_base, "m/a.py"), (second, "m/a.py"), (merge_base, "m/c.py"),
             (second, "m/c.py"), (second, "m/b.py")]
    with UpstreamStore.open() as fresh:
        expected = {(rev, path): fresh.read_blob(rev, path) for rev, path in files}
    store.read_ahead(files)
    assert {(rev, path): store.read_blob(rev, path) for rev, path in reversed(files)} == expected
    assert expected[(merge_base, "m/c.py")] is None and expected[(second, "m/c.py")] == b"c\n"
    # A blob git did not have when it was asked ahead (a partial store fetches it before the
    # read) is asked again when it is read.
    from patchforge.store.objects import object_id, write_loose

    data = b"fetched later\n"
    oid = object_id(b"blob", data)
    third = store.commit_files(merge_base, {"m/d.py": data}, message="three\n")
    loose = store.git_dir / "objects" / oid[:2] / oid[2:]
    loose.unlink()
    with UpstreamStore.open() as later:
        later.read_ahead([(third, "m/d.py")])
        later.read_blob(merge_base, "m/a.py")  # a query meanwhile reads git's "missing"
        write_loose(later.git_dir, b"blob", data)
        assert later.read_blob(third, "m/d.py") == data


def test_files_read_already_are_answered_while_another_thread_holds_the_store(store, merge_base,
                                                                             monkeypatch):
    """A file read before is given from what the store keeps without its lock (a thread
    reading ahead holds the lock while git inflates a round), and so is the entry (mode, blob
    id) of a path whose directory was read; a file or a directory not read yet waits for the
    lock and is read then, never answered from a cache that lacks it. The same when the store
    drops the files it keeps (its size limit), between the reads."""
    import threading

    from patchforge.store import gitstore

    second = store.commit_files(merge_base, {"m/a.py": b"other\n"}, message="two\n")
    with UpstreamStore.open() as fresh:
        expected = {(rev, path): fresh.read_blob(rev, path)
                    for rev in (merge_base, second) for path in ("m/a.py", "m/b.py", "m/c.py")}
    assert store.read_blobs(merge_base, ["m/a.py", "m/c.py"]) == {
        "m/a.py": expected[(merge_base, "m/a.py")], "m/c.py": None}
    got: dict = {}

    def read(rev, paths):
        got[(rev, tuple(paths))] = store.read_blobs(rev, paths)

    entries = {path: store.entry(merge_base, path) for path in ("m/a.py", "m/c.py", "m")}
    third = store.commit_files(merge_base, {"n/e.py": b"e\n"}, message="three\n")

    def entry(rev, path):
        got[(rev, path)] = store.entry(rev, path)

    with store._lock:  # another thread's round under way
        kept = threading.Thread(target=read, args=(merge_base, ["m/c.py", "m/a.py"]))
        known = [threading.Thread(target=entry, args=(merge_base, path)) for path in entries]
        for thread in (kept, *known):
            thread.start()
            thread.join(timeout=30)
            assert not thread.is_alive()  # answered without the lock
        assert got[(merge_base, ("m/c.py", "m/a.py"))] == {
            "m/c.py": None, "m/a.py": expected[(merge_base, "m/a.py")]}
        assert {path: got[(merge_base, path)] for path in entries} == entries
        assert entries["m/a.py"] is not None and entries["m/c.py"] is None
        # A directory not read yet at that commit: the entry waits for the lock.
        unread = threading.Thread(target=entry, args=(third, "n/e.py"))
        unread.start()
        unread.join(timeout=0.2)
        assert unread.is_alive()
        # One path of the two not read yet: the whole request waits for the lock.
        waiting = threading.Thread(target=read, args=(merge_base, ["m/a.py", "m/b.py"]))
        other_rev = threading.Thread(target=read, args=(second, ["m/a.py"]))
        waiting.start()
        other_rev.start()
        waiting.join(timeout=0.2)
        other_rev.join(timeout=0.2)
        assert waiting.is_alive() and other_rev.is_alive()
    waiting.join(timeout=30)
    other_rev.join(timeout=30)
    unread.join(timeout=30)
    assert got[(third, "n/e.py")] is not None and got[(third, "n/e.py")][0] == "100644"
    assert got[(merge_base, ("m/a.py", "m/b.py"))] == {
        "m/a.py": expected[(merge_base, "m/a.py")], "m/b.py": expected[(merge_base, "m/b.py")]}
    assert got[(second, ("m/a.py",))] == {"m/a.py": b"other\n"}
    # Over the size limit the store starts again from nothing: the next reads read again.
    monkeypatch.setattr(gitstore, "_BLOB_CACHE_BYTES", 1)
    assert store.read_blobs(second, ["m/b.py"]) == {"m/b.py": expected[(second, "m/b.py")]}
    assert {(rev, path): store.read_blob(rev, path) for rev, path in expected} == expected


def test_a_file_whose_content_left_the_store_is_an_error_never_an_absent_file(store,
                                                                            wheel_commit):
    """The cache emptied while a command runs (another command's cleanup, `rm -rf`): the store
    keeps the trees it has read, and git, asked for a file's content after, answers "missing".
    The file was read as absent from the revision: `status` called every fix "obsolete: ... is
    gone upstream (deleted, not renamed)" and asked for it to be dropped. Now reading it is a
    StoreError naming the file, and so is a directory its parent lists whose tree is gone."""
    commit = wheel_commit.commit
    # The trees of the root and of pkg/ are read (and kept), as a walk of a series reads them.
    assert store.entries(commit, ["pkg/mod.py", "README"])["pkg/mod.py"] is not None
    objects = store.git_dir / "objects"
    objects.rename(store.git_dir / "objects-removed")
    (objects / "pack").mkdir(parents=True)
    with pytest.raises(StoreError, match=r"pkg/mod\.py at .*: the store lists it, but does not "
                                         r"have its content"):
        store.read_blob(commit, "pkg/mod.py")
    with pytest.raises(StoreError, match=r"pkg/data at .*: the store lists it"):
        store.read_blob(commit, "pkg/data/latin1.txt")
    assert store.read_blob(commit, "pkg/not-there.py") is None  # absent is still absent


def test_a_store_removed_under_a_command_is_said_so_never_taken_for_a_missing_revision(
        tmp_path):
    """The cache removed while a command ran: git, pointed at the store, says it is no
    repository. The fetch of a pin then failed as "the locked commit ... is not a commit of
    <url> ... re-pin it", advice that changes a correct lock. Now a git process on a store that
    is gone raises StoreDamaged saying so; on any other directory the error is git's own."""
    from patchforge.errors import StoreDamaged
    from patchforge.store.git import run_git

    gone = tmp_path / "cache" / "store.git"
    with pytest.raises(StoreDamaged, match=f"the cache's git store {gone} was removed while "
                                           "the command ran"):
        run_git("rev-parse", "HEAD", git_dir=gone)
    with pytest.raises(StoreError) as other:
        run_git("rev-parse", "HEAD", git_dir=tmp_path / "work" / ".git")
    assert not isinstance(other.value, StoreDamaged)


@pytest.mark.parametrize("path", ["m/a.py", "a.py"])
def test_trees_read_ahead_before_their_commit_came_in_are_asked_again(store, merge_base, path):
    """A commit's trees asked ahead while the store lacked it (git answered "missing"), then the
    commit brought in (as a fetch brings it), then looked up: its files are there. The missing
    answer was taken as it was, so a file at the top read as absent and one in a directory as a
    damaged store."""
    def run(*args, data=None):
        return subprocess.run(["git", "--git-dir", str(store.git_dir), *args], input=data,
                              capture_output=True, check=True).stdout.decode().strip()

    tree = run("rev-parse", f"{merge_base}^{{tree}}" if "/" in path else f"{merge_base}:m")
    body = (f"tree {tree}\nauthor a <a@b> 1700000000 +0000\ncommitter a <a@b> 1700000000 "
            f"+0000\n\nlater\n").encode()
    later = run("hash-object", "-t", "commit", "--stdin", data=body)
    fresh = UpstreamStore(store.git_dir)
    try:
        fresh.read_trees_ahead([later], [path])
        # A lookup of another commit waits for git's answers in order: the trees asked ahead
        # are answered missing before the commit comes in. Written while git still looked for
        # it (under load git had often not read the names yet), the commit was found, and the
        # case was not met (or git called it corrupt: the test below).
        assert fresh.has_object(merge_base)
        run("hash-object", "-w", "-t", "commit", "--stdin", data=body)
        found = fresh.entries(later, [path])
    finally:
        fresh.close()
    assert found[path] is not None


def test_a_commit_written_while_git_looked_for_it_is_read_not_called_a_damaged_store(
        store, merge_base, tmp_path, monkeypatch):
    """A commit written into the store (another project's fetch on the shared cache unpacks a
    few objects loose) while this command's git looked for it: git missed it in the packs and
    as a loose file, then, checking whether the loose file exists to say why, found it, and
    ended saying "loose object ... is corrupt"; the command said the store was damaged and had
    the user move it aside. The object is whole: it is asked again, and its files read. git is
    held in that window (its check of the loose file delayed by strace) for the write to fall
    there each time."""
    need_tool("strace")
    real = shutil.which("git")
    if subprocess.run(["strace", "-qq", "-o", os.devnull, real, "--version"],
                      capture_output=True).returncode != 0:
        pytest.skip("strace cannot trace processes here")

    def run(*args, data=None):
        return subprocess.run([real, "--git-dir", str(store.git_dir), *args], input=data,
                              capture_output=True, check=True).stdout.decode().strip()

    tree = run("rev-parse", f"{merge_base}^{{tree}}")
    body = (f"tree {tree}\nauthor a <a@b> 1700000000 +0000\ncommitter a <a@b> 1700000000 "
            f"+0000\n\nlater\n").encode()
    later = run("hash-object", "-t", "commit", "--stdin", data=body)
    loose = store.git_dir / "objects" / later[:2] / later[2:]
    trace = tmp_path / "cat-file.trace"
    trace.touch()
    shim = tmp_path / "bin" / "git"
    shim.parent.mkdir()
    shim.write_text(
        "#!/bin/sh\n"
        f'case " $* " in *" cat-file --batch "*) exec strace -qq -o "{trace}" -P "{loose}" '
        f'-e trace=openat,newfstatat -e inject=newfstatat:delay_enter=2000000 "{real}" "$@";; '
        f'esac\nexec "{real}" "$@"\n')
    shim.chmod(0o755)
    monkeypatch.setenv("PATH", f"{shim.parent}{os.pathsep}{os.environ['PATH']}")
    fresh = UpstreamStore(store.git_dir)
    try:
        fresh.read_trees_ahead([later], ["m/a.py"])
        # git missed the loose file twice (its look, and its look after listing the packs
        # again); its check of that file now waits two seconds, and the commit comes in.
        # (Bounded: a git that looks otherwise would hold the test forever.)
        deadline = time.monotonic() + 300
        while trace.read_text().count("ENOENT") < 2:
            if time.monotonic() > deadline:
                pytest.fail(f"git did not look for {loose} twice:\n{trace.read_text()}")
            time.sleep(0.01)
        run("hash-object", "-w", "-t", "commit", "--stdin", data=body)
        found = fresh.entries(later, ["m/a.py"])
    finally:
        fresh.close()
    assert found["m/a.py"] is not None


@pytest.mark.parametrize("damage", ["garbage", "checksum cut", "bytes after", "short size"])
def test_a_damaged_loose_object_is_still_said_damaged(store, merge_base, damage):
    """The mirror: a loose object git calls corrupt whose file is damaged is a damaged store,
    said so with the file it names: one that does not inflate; and ones whose inflated content
    is of their own id, which would pass for an object written meanwhile: cut before the
    stream's checksum, bytes after the stream, a header whose size is short of the content."""
    import hashlib
    import zlib

    from patchforge.errors import StoreDamaged

    body = b"tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904\n\nbroken\n"
    if damage == "short size":
        data = b"commit 10\0" + body
        later = hashlib.sha1(data).hexdigest()
        loose = store.git_dir / "objects" / later[:2] / later[2:]
        loose.parent.mkdir(exist_ok=True)
        loose.write_bytes(zlib.compress(data))
    else:
        later = subprocess.run(["git", "--git-dir", str(store.git_dir), "hash-object", "-w",
                                "-t", "commit", "--stdin"], input=body, capture_output=True,
                               check=True).stdout.decode().strip()
        loose = store.git_dir / "objects" / later[:2] / later[2:]
        loose.chmod(0o644)
        whole = loose.read_bytes()
        loose.write_bytes({"garbage": b"not what git writes", "checksum cut": whole[:-4],
                           "bytes after": whole + b"GARBAGE"}[damage])
    fresh = UpstreamStore(store.git_dir)
    try:
        with pytest.raises(StoreDamaged, match=f"loose object {later} .* is corrupt"):
            fresh.entries(later, ["m/a.py"])
    finally:
        fresh.close()


def test_a_commit_asked_for_before_it_came_in_is_read_whole_after(store, merge_base):
    """A lookup at a commit the store lacks is refused (unknown revision); once the commit comes
    in (a fetch), the same store reads its files: the directories read as missing at the
    refused lookup were not kept as missing."""
    def run(*args, data=None):
        return subprocess.run(["git", "--git-dir", str(store.git_dir), *args], input=data,
                              capture_output=True, check=True).stdout.decode().strip()

    tree = run("rev-parse", f"{merge_base}^{{tree}}")
    body = (f"tree {tree}\nauthor a <a@b> 1700000000 +0000\ncommitter a <a@b> 1700000000 "
            f"+0000\n\nlater still\n").encode()
    later = run("hash-object", "-t", "commit", "--stdin", data=body)
    fresh = UpstreamStore(store.git_dir)
    try:
        with pytest.raises(StoreError, match="unknown revision"):
            fresh.entries(later, ["m/a.py"])
        run("hash-object", "-w", "-t", "commit", "--stdin", data=body)
        found = fresh.entries(later, ["m/a.py"])
    finally:
        fresh.close()
    assert found["m/a.py"] is not None


def test_file_sections_are_cut_where_the_regular_expression_cuts_them():
    """split_at_file_headers (bytes.find) gives what `re.split(rb"(?m)^(?=diff --git )", text)`
    gives, on random texts made of header-like pieces: the text before the first header (empty
    when it starts with one), then each section up to the next header at a line's start."""
    import random
    import re

    rng = random.Random(19)
    pieces = [b"diff --git ", b"diff --git a/x b/x\n", b"\n", b"x", b"diff", b" --git ",
              b"\ndiff --git ", b"+diff --git a\n", b"@@ -1 +1 @@\n"]
    for _ in range(20000):
        text = b"".join(rng.choice(pieces) for _ in range(rng.randint(0, 12)))
        assert split_at_file_headers(text) == re.split(rb"(?m)^(?=diff --git )", text), text


def test_change_blocks_are_read_off_gits_hunks_as_its_zero_context_diff_gives_them(tmp_path):
    """changed_blocks reads each pair's blocks off git's hunks (three lines of context) by
    each line's first byte, trying the hunk header's pattern only on lines that start with
    `@`: the same blocks as git's own `diff -U0` of each pair gives, over random pairs whose
    lines look like hunk headers, context, removals and additions (`@@ -1 +1 @@`, `-x`,
    `+x`, ` x`, `\\ x`), with and without a last line end, run on random line positions."""
    import random

    from patchforge.store.diff import changed_blocks

    rng = random.Random(23)
    kinds = [b"@@ -1 +1 @@", b"@@ -3,0 +4,2 @@ def f():", b"@@", b"-x", b"+x", b" x", b"\\ x",
             b"x", b"y", b"", b"@x"]

    def text() -> bytes:
        lines = [rng.choice(kinds) for _ in range(rng.randint(0, 30))]
        joined = b"\n".join(lines)
        return joined + b"\n" if lines and rng.random() < 0.8 else joined

    def zero_context_blocks(old: bytes, new: bytes):
        (tmp_path / "old").write_bytes(old)
        (tmp_path / "new").write_bytes(new)
        out = subprocess.run(["git", "diff", "--no-index", "-U0", "--diff-algorithm=myers",
                              "--indent-heuristic", "old", "new"], cwd=tmp_path,
                             capture_output=True).stdout
        blocks = []
        for a, b, c, d in re.findall(rb"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@", out,
                                     re.M):
            old_count, new_count = int(b or 1), int(d or 1)
            old_start = int(a) - (1 if old_count else 0)
            new_start = int(c) - (1 if new_count else 0)
            blocks.append((old_start, old_start + old_count, new_start, new_start + new_count))
        return blocks

    pairs = []
    for _ in range(60):
        old = text()
        lines = old.split(b"\n")
        for _ in range(rng.randint(1, 4)):  # a few edits of the old text
            at = rng.randint(0, len(lines))
            lines[at:at + rng.randint(0, 3)] = [rng.choice(kinds)
                                               for _ in range(rng.randint(0, 3))]
        pairs.append((old, b"\n".join(lines)))
    made = changed_blocks(pairs)
    assert made == [zero_context_blocks(old, new) if old != new else [] for old, new in pairs]
    assert sum(len(blocks) > 1 for blocks in made) >= 10


def _git_range_diff_of(store, chains, monkeypatch) -> bytes:
    """`git range-diff`'s own text of `chains`, read from the commits (nothing written
    without git, no stand-ins)."""
    from patchforge.store import rangediff

    with monkeypatch.context() as patched:
        patched.setattr(rangediff, "_written_text", lambda *args: None)
        patched.setattr(rangediff, "_stand_ins", lambda *args: {})
        return store.range_diff_import().range_diff(chains)


def test_range_diff_written_without_git_is_gits_text(store, merge_base, monkeypatch):
    """When every patch of the new series changes the same files from the same contents to
    the same contents as the old series' patch of its name, the range-diff's text is written
    without `git range-diff` (no pack, no git process): byte for byte git's own, for series
    of 1 to 12 patches whose old side has patches the new one dropped anywhere (the first,
    the last, runs of them), ids at git's abbreviation; a series whose new side differs in
    one patch, adds one, or names two patches alike but for a space still goes to git."""
    import random

    from patchforge.store import rangediff

    a = store.read_blob(merge_base, "m/a.py")
    rng = random.Random(7)
    written = []
    real = rangediff._written_text

    def spy(*args):
        text = real(*args)
        written.append(text is not None)
        return text
    monkeypatch.setattr(rangediff, "_written_text", spy)
    for size in list(range(1, 13)) + [rng.randint(2, 12) for _ in range(6)]:
        # each patch its own file (one of them m/a.py edited), so a patch left out changes
        # nothing of what the others change
        old = [(f"{k + 1:04d}-fix.patch",
                {"m/a.py": _edit(a, 3, b"fix %d\n" % size)} if k == size // 2
                else {f"m/p{k}.py": b"fix %d %d\n" % (size, k)}) for k in range(size)]
        keep = [step for step in old if rng.random() < 0.6] or [old[rng.randrange(size)]]
        chains = [(merge_base, ["m/a.py"], old), (merge_base, ["m/a.py"], keep)]
        expected = _git_range_diff_of(store, chains, monkeypatch)
        written.clear()
        importer = store.range_diff_import()
        assert importer.start(chains).result() == expected, expected.decode()
        assert _nothing_left(importer)
        assert written == [True], (size, [n for n, _ in keep])
    # what git must say itself: a patch that differs, one the old side lacks, two names alike
    first = {"m/a.py": _edit(a, 1, b"one\n")}
    second = {"m/a.py": _edit(_edit(a, 1, b"one\n"), 5, b"two\n")}
    other = {"m/a.py": _edit(_edit(a, 1, b"one\n"), 5, b"2\n")}
    for old, new in (([("one", first), ("two", second)], [("one", first), ("two", other)]),
                     ([("one", first)], [("one", first), ("two", second)]),
                     ([("one", first), ("o ne", second)], [("one", first)])):
        chains = [(merge_base, ["m/a.py"], old), (merge_base, ["m/a.py"], new)]
        expected = _git_range_diff_of(store, chains, monkeypatch)
        written.clear()
        assert store.range_diff_import().start(chains).result() == expected
        assert written == [False]


def test_range_diff_of_patches_moved_as_they_were_written_without_git(store, merge_base,
                                                                      monkeypatch):
    """A patch that moved with its hunks as they were (upstream changed its file elsewhere)
    changes other contents in the two chains: its pair is exact for `git range-diff` only if
    git's diffs of both show the same hunks but for their line numbers. Those diffs (the new
    one as the rebase's new diffs made it, the old one by a `git diff --no-index` of its
    own) show it, and the text is written without `git range-diff`, git's own byte for byte.
    Where upstream renamed the function above a hunk (its function line differs), git says
    so ('!') in a range-diff of that pair alone (the landed commit's diff shares no line with
    it), and the whole chains' range-diff is not run."""
    from patchforge.store.diff import FileChange, StartedDiffs

    body = b"def f():\n" + b"".join(b"    x = %d\n" % i for i in range(1, 16))
    other = b"def h():\n" + b"".join(b"    y = %d\n" % i for i in range(1, 16))
    base = store.commit_files(merge_base, {"m/f.py": body, "m/g.py": other}, message="f\n")
    for top, mark in ((b"# upstream's own line\n", b"="), (b"def g():\n", b"!")):
        # upstream: a line before the function, or the function renamed; a line before the
        # other file's function
        shifted = top + body if mark == b"=" else top + body[len(b"def f():\n"):]
        pushed = b"# upstream\n" + other
        target = store.commit_files(base, {"m/f.py": shifted, "m/g.py": pushed},
                                    message="target\n")
        kept = {"m/b.py": b"kept\n"}
        old_moved = _edit(body, 10, b"    fixed = 9\n")
        new_moved = shifted.replace(b"    x = 9\n", b"    fixed = 9\n")
        old_other = _edit(other, 5, b"    fixed = 4\n")
        new_other = pushed.replace(b"    y = 4\n", b"    fixed = 4\n")
        chains = [(base, ["m/f.py", "m/g.py"],
                   [("kept", kept), ("landed", {"m/c.py": b"landed\n"}),
                    ("other", {"m/g.py": old_other}), ("moved", {"m/f.py": old_moved})]),
                  (target, ["m/f.py", "m/g.py"],
                   [("kept", kept), ("other", {"m/g.py": new_other}),
                    ("moved", {"m/f.py": new_moved})])]
        expected = _git_range_diff_of(store, chains, monkeypatch)
        diffs = StartedDiffs([[FileChange("m/f.py", "m/f.py", shifted, new_moved)],
                              [FileChange("m/g.py", "m/g.py", pushed, new_other)]])
        diffs.result()
        importer = store.range_diff_import()
        run = importer.start(chains, made_hunks=diffs.hunks_by_ids,
                             moved_exactly=frozenset({"moved", "other"}))
        assert importer._proc is None  # no range-diff started
        run.settle()
        assert importer._proc is None
        assert (importer._changed is None) == (mark == b"=")
        assert run.result() == expected and _nothing_left(importer)
        assert [pair[2] for pair in _PAIR_LINE.findall(expected)] == [b"=", b"<", b"=", mark]
        assert len(importer._proven) == (mark == b"!")
        # a pair whose new hunks the caller did not make, or a patch not said to have moved
        # as it was: git's range-diff, from the start
        for hunks, moved in (({}, {"moved", "other"}), (diffs.hunks_by_ids, {"other"})):
            importer = store.range_diff_import()
            run = importer.start(chains, made_hunks=hunks, moved_exactly=frozenset(moved))
            assert run.result() == expected
            assert importer._proc is not None


def test_range_diff_of_changed_pairs_is_gits_whatever_the_chains_hold(store, merge_base,
                                                                       monkeypatch):
    """Patches that moved as they were but whose function line upstream renamed are git's
    changed pairs ('!'). When every other pair is exact and no landed commit's files share
    enough lines with such a patch's text to be paired in its place, `git range-diff` runs on
    those pairs alone (with a smaller creation factor: a pair it makes then is one it makes at
    the default, whatever the other costs) and its text for them goes into the written one.
    Where a landed commit's files hold the patch's lines, or where git leaves a changed patch
    unpaired, the whole range-diff is git's. Each text is git's own reading the commits, byte
    for byte."""
    from patchforge.store.diff import FileChange, StartedDiffs

    def body(name: bytes, base: int) -> bytes:
        return b"def %s():\n" % name + b"".join(b"    x = %d\n" % (base + i)
                                                for i in range(1, 16))
    f, g = body(b"f", 0), body(b"g", 100)
    base = store.commit_files(merge_base, {"m/f.py": f, "m/g.py": g, "m/copy.py": f},
                              message="f\n")
    # upstream renames both functions (each hunk's function line)
    renamed = {"m/f.py": f.replace(b"def f()", b"def f2()"),
               "m/g.py": g.replace(b"def g()", b"def g2()")}
    target = store.commit_files(base, renamed, message="target\n")

    def fix(content: bytes, n: int) -> bytes:
        return content.replace(b"x = %d\n" % n, b"fixed = %d\n" % n)
    old_f, old_g = {"m/f.py": fix(f, 9)}, {"m/g.py": fix(g, 109)}
    new_f, new_g = {"m/f.py": fix(renamed["m/f.py"], 9)}, {"m/g.py": fix(renamed["m/g.py"], 109)}
    far = {"m/c.py": b"landed\n"}
    # a landed change in a file holding the moved patch's lines (a copy of f.py)
    near = {"m/copy.py": fix(f, 9).replace(b"fixed = 9", b"copied = 9")}
    # the new side of a pair that is not the old one at all: git leaves both out
    unlike = {"m/f.py": renamed["m/f.py"].replace(b"    x = ", b"    y = ")}
    cases = [  # (old chain, new chain, the pairs' range-diff alone run, the whole one)
        ([("far", far), ("f", old_f)], [("f", new_f)], True, False),
        ([("f", old_f), ("far", far), ("g", old_g)], [("f", new_f), ("g", new_g)], True, False),
        ([("near", near), ("f", old_f)], [("f", new_f)], False, True),
        ([("far", far), ("f", old_f)], [("f", unlike)], True, True),
    ]
    for old, new, alone, whole in cases:
        paths = ["m/copy.py", "m/f.py", "m/g.py"]
        chains = [(base, paths, old), (target, paths, new)]
        expected = _git_range_diff_of(store, chains, monkeypatch)
        diffs = StartedDiffs([[FileChange(path, path, renamed[path], content)]
                              for _, files in new for path, content in files.items()])
        diffs.result()
        importer = store.range_diff_import()
        run = importer.start(chains, made_hunks=diffs.hunks_by_ids,
                             moved_exactly=frozenset(name for name, _ in new))
        run.settle()
        assert (importer._changed is not None) == alone, (old, new)
        assert run.result() == expected, expected.decode()
        assert _nothing_left(importer)
        assert (importer._proc is not None) == whole, (old, new)
        assert (b" ! " in expected) == (new[0][1] is not unlike)
        # ended early, before its diffs were read or while git runs on the pairs alone:
        # nothing left behind
        for settled in (False, True):
            importer = store.range_diff_import()
            run = importer.start(chains, made_hunks=diffs.hunks_by_ids,
                                 moved_exactly=frozenset(name for name, _ in new))
            if settled:
                run.settle()
            run.close()
            assert _nothing_left(importer)


def test_range_diff_of_changed_pairs_at_random_is_gits(store, merge_base, monkeypatch):
    """Random series of one to three patches whose function line upstream renamed (git's
    '!'), landed commits between them that change a copy of a patched file, make a file of
    its lines or change another: the range-diff is git's own text, byte for byte, whether
    the changed pairs were decided without git's whole run or left to it."""
    import random

    from patchforge.store.diff import FileChange, StartedDiffs

    rng = random.Random(1905)

    def body(k: int) -> bytes:
        return b"def f%d():\n" % k + b"".join(b"    x = %d\n" % (100 * k + i)
                                              for i in range(1, 16))
    files = {f"m/f{k}.py": body(k) for k in range(3)}
    files["m/copy.py"] = body(0)
    base = store.commit_files(merge_base, files, message="f\n")
    decided = whole = 0
    for _ in range(10):
        renamed = {path: content.replace(b"():\n", b"_new():\n", 1) if rng.random() < 0.8
                   else b"# upstream\n" + content
                   for path, content in files.items() if path != "m/copy.py"}
        target = store.commit_files(base, renamed, message="target\n")
        old, new = [], []
        for k in rng.sample(range(3), rng.randint(1, 3)):
            path, n = f"m/f{k}.py", 100 * k + rng.randint(4, 12)
            old.append((f"p{k}", {path: files[path].replace(b"x = %d\n" % n, b"fixed\n")}))
            new.append((f"p{k}", {path: renamed[path].replace(b"x = %d\n" % n, b"fixed\n")}))
        copy = files["m/copy.py"]
        for j in range(rng.randint(0, 3)):
            lines = copy.splitlines(keepends=True)
            kind = rng.choice(("copy", "made", "other"))
            if kind == "copy":
                at = rng.randrange(1, len(lines))
                copy = b"".join(lines[:at] + [b"    landed = %d\n" % j] + lines[at + 1:])
                change = {"m/copy.py": copy}
            elif kind == "made":
                change = {f"m/made{j}.py": b"".join(rng.sample(lines, 8))}
            else:
                change = {f"m/other{j}.py": b"other %d\n" % j}
            old.insert(rng.randint(0, len(old)), (f"landed{j}", change))
        paths = sorted(files)
        chains = [(base, paths, old), (target, paths, new)]
        expected = _git_range_diff_of(store, chains, monkeypatch)
        diffs = StartedDiffs([[FileChange(path, path, renamed[path], content)]
                              for _, changed in new for path, content in changed.items()])
        diffs.result()
        importer = store.range_diff_import()
        run = importer.start(chains, made_hunks=diffs.hunks_by_ids,
                             moved_exactly=frozenset(name for name, _ in new))
        run.settle()
        alone = importer._changed is not None
        assert run.result() == expected, (old, new, expected.decode())
        assert _nothing_left(importer)
        decided += alone and importer._proc is None
        whole += importer._proc is not None
    assert decided and whole


def test_kept_git_answers_are_bounded_apart_from_the_release_texts(store):
    """The cache's `kept/` holds the KEPT_AT_MOST release texts last used and, counted apart,
    the KEPT_ANSWERS_AT_MOST git answers last used (a history's walk, a rename pairing: a few
    per pin and target asked): answers written one after another never push a release's text
    out, and beyond their own bound the least recently used answers go."""
    import os

    kept_dir = store.git_dir.parent / store.KEPT_DIR
    releases = [f"loose-1test-{k:040x}" for k in range(store.KEPT_AT_MOST)]
    answers = [f"git-range-{k:040x}" for k in range(store.KEPT_ANSWERS_AT_MOST + 5)]
    clock = 1_000_000_000_000_000_000
    for name in releases + answers:
        store.keep_text(name, [b"text of ", name.encode()])
        clock += 1_000_000_000
        os.utime(kept_dir / name, ns=(clock, clock))  # one second apart: the order of use
    left = set(os.listdir(kept_dir))
    assert set(releases) <= left, "no release text goes for git's answers"
    assert left - set(releases) == set(answers[-store.KEPT_ANSWERS_AT_MOST:])
    assert bytes(store.kept_text(answers[-1])) == b"text of " + answers[-1].encode()


def test_range_diff_written_only_where_no_other_object_shares_an_abbreviated_id(tmp_path):
    """The range-diff's text is written without git only when no other object's id begins
    as a printed id does at the length git abbreviates to (git would lengthen that one): an
    id next to it in a pack's index (the store's index is mapped and searched, not read
    whole), a loose object of that prefix, or another object of the chains; the id itself
    in the store is no other object."""
    import struct

    from patchforge.store.rangediff import _close_all, _store_ids, _unique_at

    printed = "abcdef1" + "0" * 33
    def index_of(ids):
        ids = sorted(bytes.fromhex(oid) for oid in ids)
        fanout = [sum(1 for oid in ids if oid[0] <= b) for b in range(256)]
        return b"\xfftOc\0\0\0\2" + struct.pack(">256I", *fanout) + b"".join(ids) + \
            b"\0" * 40

    def unique(pack_ids=(), loose=(), objects=()):
        git_dir = tmp_path / f"store{len(list(tmp_path.iterdir()))}"
        (git_dir / "objects" / "pack").mkdir(parents=True)
        (git_dir / "objects" / "pack" / "pack-1.idx").write_bytes(index_of(
            ["00" * 20, "ff" * 20, "abcdef0" + "f" * 33, "abcdef2" + "0" * 33, *pack_ids]))
        (git_dir / "objects" / "pack" / "pack-1.pack").write_bytes(b"")
        for oid in loose:
            (git_dir / "objects" / oid[:2]).mkdir(exist_ok=True)
            (git_dir / "objects" / oid[:2] / oid[2:]).write_bytes(b"")
        count, tables = _store_ids(git_dir)
        try:
            assert count == 4 + len(pack_ids)
            return _unique_at([printed], 7, {printed, *objects}, tables, git_dir)
        finally:
            _close_all(tables)
    assert unique()
    assert unique(pack_ids=[printed])  # the id itself
    assert not unique(pack_ids=["abcdef1" + "f" * 33])
    assert not unique(pack_ids=["abcdef1" + "0" * 32 + "1"])
    assert unique(pack_ids=["abcdef0" + "0" * 33, "abcdef2" + "f" * 33])
    assert not unique(loose=["abcdef1" + "9" * 33])
    assert unique(loose=["abcdef2" + "9" * 33, printed])
    assert not unique(objects=["abcdef1" + "2" * 33])


def test_the_historys_diffs_kept_per_commit_are_gits_text_for_any_later_question(store,
                                                                               merge_base):
    """commit_patches keeps git's diffs per commit (`kept/commits/`) and answers later
    questions about other lists of those commits and other files from them: each answer is
    git's own text, byte for byte, in this command and the next, whatever was asked before
    (a file made a directory by one commit, a name git quotes, a commit changing none of
    the files asked, a damaged record)."""
    from patchforge.store.diff import DIFF_OPTIONS

    def lines(n, word=b"x"):
        return b"".join(b"%s %d\n" % (word, k) for k in range(n))

    commits, head = [], merge_base
    for changes in ({"m/a.py": lines(30), "m/c": b"a file\n"},
                    {"m/b.py": b"b1\nB2\nb3\n", "m/sp ace.py": b"spaced\n"},
                    {"m/c": None, "m/c/x.py": b"now a directory\n", "m/\xe9t\xe9.py": b"quoted\n"},
                    {"README": b"nothing of the series\n"},
                    {"m/a.py": lines(31, b"y"), "m/b.py": None, "m/sp ace.py": b"spaced 2\n"}):
        head = store.commit_files(head, {path: data for path, data in changes.items()},
                                  message="change\n")
        commits.append(head)
    paths = ["m/a.py", "m/b.py", "m/c", "m/c/x.py", "m/sp ace.py", "m/\xe9t\xe9.py", "README"]

    def git_text(asked, files):
        return subprocess.run(["git", "--git-dir", str(store.git_dir), "diff-tree", "--stdin",
                               "-p", *DIFF_OPTIONS, "--", *files],
                              input="".join(c + "\n" for c in asked).encode(),
                              capture_output=True, check=True).stdout

    questions = [(commits[:2], paths[:2]), (commits[1:4], paths[1:3]), (commits, paths[:1]),
                 (commits[::-1], paths[4:]), (commits, paths), (commits[2:], ["m/c"]),
                 (commits[3:4], paths[:2])]
    for asked, files in questions:
        assert store.commit_patches(asked, files) == git_text(asked, files), (asked, files)
    records = store.git_dir.parent / "kept" / "commits"
    assert len(list(records.iterdir())) == len(commits)
    with UpstreamStore.open() as later:
        for asked, files in questions[::-1]:
            assert later.commit_patches(asked, files) == git_text(asked, files), (asked, files)
    for record in records.iterdir():
        record.write_bytes(record.read_bytes().replace(b"spaced", b"spaceD"))
    with UpstreamStore.open() as later:
        for asked, files in questions:
            assert later.commit_patches(asked, files) == git_text(asked, files), (asked, files)
