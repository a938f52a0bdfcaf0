"""Bytes end to end through the commands: what git diffs, `overlays` and `edit` give back exactly.

Each case is a change made in a clone of a real upstream (no final newline on either side, CRLF,
lone CR, form feeds and U+2028 inside lines, non-UTF-8 content and names, empty files, creation,
deletion, renames with edits, mode changes), turned into a patch by `git diff` itself, put into a
project's series, and applied by the commands: the overlay (and the `edit` worktree) must hold
exactly the bytes git had. A hypothesis test then takes random byte files through
`import overlay` -> `overlays` and asks for the same bytes back.
"""
from __future__ import annotations

import os
import re
import stat
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers.cli import run_cli, run_subprocess
from helpers.project import add_patch_file
from helpers.snapshot import snapshot
from helpers.template import (HEADER, build_template, overlay_file,
                              verify_but_for_the_install_root)

LATIN1_NAME = b"d\xe9j\xe0.py".decode("utf-8", "surrogateescape")
FILES = {
    "nonl.txt": b"a\nb\nc",
    "withnl.txt": b"1\n2\n3\n",
    "crlf.txt": b"alpha\r\nbeta\r\ngamma\r\n",
    "cr.txt": b"one\rtwo\rthree\nfour\n",
    "ff.txt": b"page1\x0cpage2\nend\n",
    "u2028.txt": "left\u2028right\nnext\u2029para\n\x85nel\n".encode(),
    "latin1.txt": b"caf\xe9\nna\xefve\n\xff\xfe\n",
    LATIN1_NAME: b"v = 1\n",
    "empty.txt": b"",
    "exec.sh": b"#!/bin/sh\necho hi\n",
    "gone.txt": b"to be deleted\r\nlast line no newline",
    "old_name.py": b"".join(b"line %d\n" % i for i in range(1, 21)),
}

# (case, {path: new bytes or None to delete}); applied with `overlays` and `edit`.
CHANGES = {
    "no-newline-both-sides": {"nonl.txt": b"a\nB\nc"},
    "no-newline-added": {"nonl.txt": b"a\nb\nc\n"},
    "no-newline-removed": {"withnl.txt": b"1\n2\n3"},
    "crlf": {"crlf.txt": b"alpha\r\nBETA\r\ngamma\r\n"},
    "crlf-to-lf-one-line": {"crlf.txt": b"alpha\r\nbeta\ngamma\r\n"},
    "lone-cr": {"cr.txt": b"one\rTWO\rthree\nfour\n"},
    "form-feed": {"ff.txt": b"page1\x0cPAGE2\x0c\nend\n"},
    "unicode-separators": {"u2028.txt": "left\u2028RIGHT\nnext\u2029para\n\x85nel\n".encode()},
    "non-utf8-content": {"latin1.txt": b"caf\xe9\nNA\xefVE\n\xff\xfe\n"},
    "non-utf8-name": {LATIN1_NAME: b"v = 2\n"},
    "empty-to-content": {"empty.txt": b"now\r\n"},
    "content-to-empty": {"withnl.txt": b""},
    "creation": {"new/dir/created.txt": b"brand\r\nnew\xff"},
    "several-files": {"crlf.txt": b"alpha\r\nbeta\r\nGAMMA", "nonl.txt": b"a\nb\nc\nd"},
}


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    return build_template(tmp_path_factory, files=FILES)


def _git(cwd: Path, *args: str) -> bytes:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, check=True).stdout


def git_made_patch(env, tmp_path: Path, change: dict, *, chmod: dict | None = None,
                   renames: dict | None = None) -> bytes:
    """The change made in a clone of the upstream, as `git diff` writes it (with a DEP-3 header)."""
    clone = tmp_path / "clone"
    _git(tmp_path, "clone", "-q", str(env.upstream), str(clone))
    for old, new in (renames or {}).items():
        _git(clone, "mv", old, new)
    for path, data in change.items():
        target = clone / path
        if data is None:
            _git(clone, "rm", "-q", path)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    for path, mode in (chmod or {}).items():
        os.chmod(clone / path, mode)
    _git(clone, "add", "-A")
    diff = _git(clone, "-c", "core.quotePath=true", "diff", "--cached", "-M", "HEAD")
    assert diff
    return HEADER + diff


@pytest.mark.parametrize("case", sorted(CHANGES))
def test_git_made_patch_applied_by_overlays_gives_exact_bytes(env, tmp_path, monkeypatch, case):
    root = env.fresh(tmp_path, monkeypatch)
    add_patch_file(root, "up", "change.patch", git_made_patch(env, tmp_path, CHANGES[case]))
    r = run_cli(root, "overlays")
    assert r.rc == 0, r.text
    for path, data in CHANGES[case].items():
        assert overlay_file(root, path).read_bytes() == data, path
    # The manifest's pre-image digest is the upstream file's.
    verify_but_for_the_install_root(root)


@pytest.mark.parametrize("case", sorted(CHANGES))
def test_git_made_patch_in_edit_worktree_gives_exact_bytes(env, tmp_path, monkeypatch, case):
    root = env.fresh(tmp_path, monkeypatch)
    add_patch_file(root, "up", "change.patch", git_made_patch(env, tmp_path, CHANGES[case]))
    r = run_cli(root, "edit", "change")
    assert r.rc == 0, r.text
    work = root / ".patchforge" / "work" / "up"
    for path, data in CHANGES[case].items():
        assert (work / path).read_bytes() == data, path
    # Files the patch does not touch are not there: the worktree is what the patch is about.
    for path in FILES:
        if path not in CHANGES[case]:
            assert not (work / path).exists(), path


def test_deletion_and_rename_with_edit_in_edit_worktree(env, tmp_path, monkeypatch):
    # Overlays cannot delete or move files in an image (they refuse); the edit worktree shows them.
    renamed = FILES["old_name.py"].replace(b"line 10\n", b"line ten\r\n")
    root = env.fresh(tmp_path, monkeypatch)
    add_patch_file(root, "up", "moves.patch", git_made_patch(
        env, tmp_path, {"gone.txt": None, "new_name.py": renamed},
        renames={"old_name.py": "new_name.py"}))
    assert b"rename from old_name.py" in (root / "series" / "up" / "moves.patch").read_bytes()
    r = run_cli(root, "edit", "moves")
    assert r.rc == 0, r.text
    work = root / ".patchforge" / "work" / "up"
    assert not (work / "gone.txt").exists() and not (work / "old_name.py").exists()
    assert (work / "new_name.py").read_bytes() == renamed
    before = snapshot(root / "overlays") if (root / "overlays").exists() else None
    r = run_cli(root, "overlays")
    assert r.rc == 2 and "delete" in r.err, r.text
    assert (snapshot(root / "overlays") if (root / "overlays").exists() else None) == before


def test_mode_change_applied_by_overlays_keeps_content(env, tmp_path, monkeypatch):
    root = env.fresh(tmp_path, monkeypatch)
    add_patch_file(root, "up", "mode.patch", git_made_patch(env, tmp_path, {"exec.sh": b"#!/bin/sh\necho ho\n"},
                                                 chmod={"exec.sh": 0o755}))
    assert b"new mode 100755" in (root / "series" / "up" / "mode.patch").read_bytes()
    assert run_cli(root, "overlays").rc == 0
    assert overlay_file(root, "exec.sh").read_bytes() == b"#!/bin/sh\necho ho\n"


def test_mode_change_survives_edit_and_refresh(env, tmp_path, monkeypatch):
    root = env.fresh(tmp_path, monkeypatch)
    add_patch_file(root, "up", "mode.patch", git_made_patch(env, tmp_path, {}, chmod={"exec.sh": 0o755}))
    r = run_cli(root, "edit", "mode")
    assert r.rc == 0, r.text
    r = run_cli(root, "refresh")
    assert r.rc == 0, r.text
    assert b"new mode 100755" in (root / "series" / "up" / "mode.patch").read_bytes()
    assert run_cli(root, "edit", "mode").rc == 0
    assert os.stat(root / ".patchforge" / "work" / "up" / "exec.sh").st_mode & stat.S_IXUSR


def test_refresh_of_unchanged_worktree_keeps_patch_bytes(env, tmp_path, monkeypatch):
    # A patch patchforge made itself (import overlay) survives edit + refresh byte for byte,
    # CRLF and missing final newline included.
    root = env.fresh(tmp_path, monkeypatch)
    overlay = tmp_path / "crlf.txt"
    overlay.write_bytes(b"alpha\r\nbeta\r\nGAMMA")
    r = run_cli(root, "import", "overlay", str(overlay), "--upstream", "up", "--path", "crlf.txt",
                "--name", "crlf")
    assert r.rc == 0, r.text
    before = (root / "series" / "up" / "crlf.patch").read_bytes()
    assert run_cli(root, "edit", "crlf").rc == 0
    r = run_cli(root, "refresh")
    assert r.rc == 0 and "unchanged" in r.out, r.text
    assert (root / "series" / "up" / "crlf.patch").read_bytes() == before



def test_refresh_rewrites_an_index_line_naming_another_pre_image(env, tmp_path, monkeypatch):
    """A patch whose change is the worktree's but whose `index` line names another pre-image
    (made on another series, a profile's): refresh kept its bytes ("unchanged"), while lint
    said `edit` + `refresh` rewrites it, and the judge takes a stale id for where a patch was
    made. It is rewritten with the base's blob id; an abbreviated id that is right stays."""
    root = env.fresh(tmp_path, monkeypatch)
    overlay = tmp_path / "crlf.txt"
    overlay.write_bytes(b"alpha\r\nbeta\r\nGAMMA")
    assert run_cli(root, "import", "overlay", str(overlay), "--upstream", "up", "--path",
                   "crlf.txt", "--name", "crlf").rc == 0
    path = root / "series" / "up" / "crlf.patch"
    made = path.read_bytes()
    index = re.search(rb"^index ([0-9a-f]{40})\.\.([0-9a-f]{40})", made, re.M)
    assert index is not None, made
    stale = made.replace(index.group(1), b"1" * 40)
    path.write_bytes(stale)
    assert run_cli(root, "edit", "crlf").rc == 0
    r = run_cli(root, "refresh")
    assert r.rc == 0 and "refreshed" in r.out, r.text
    assert index.group(0) in path.read_bytes()
    # Abbreviated and right: another tool's bytes, kept.
    short = made.replace(index.group(0), b"index " + index.group(1)[:7] + b".." +
                         index.group(2)[:7])
    path.write_bytes(short)
    assert run_cli(root, "edit", "crlf").rc == 0
    r = run_cli(root, "refresh")
    assert r.rc == 0 and "unchanged" in r.out, r.text
    assert path.read_bytes() == short

# Random bytes, biased towards the characters that break line-based tools.
_chunks = st.sampled_from([b"\n", b"\r\n", b"\r", b"\x0c", b"\x00", b"\xff", b"\xe9",
                           "\u2028".encode(), b" ", b"x", b"line", b"\\ No newline", b"@@ -1 +1 @@",
                           b"+", b"-", b"diff --git a/x b/x"])
byte_files = st.one_of(st.binary(max_size=300),
                       st.lists(_chunks, max_size=60).map(b"".join))


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=byte_files, target=st.sampled_from(["crlf.txt", "nonl.txt", "empty.txt",
                                                "latin1.txt", "brand/new.bin"]))
def test_import_overlay_then_overlays_is_byte_exact(env, tmp_path_factory, monkeypatch, data,
                                                    target):
    tmp_path = tmp_path_factory.mktemp("prop")
    root = env.fresh(tmp_path, monkeypatch)
    overlay = tmp_path / "overlay.bin"
    overlay.write_bytes(data)
    r = run_cli(root, "import", "overlay", str(overlay), "--upstream", "up", "--path", target,
                "--name", "prop", *(["--create"] if target not in FILES else []))
    if FILES.get(target) == data:
        assert r.rc == 2 and "identical" in r.err
        return
    assert r.rc == 0, r.text
    if b"\0" in data:
        # A NUL makes it binary content: carried as a git binary patch, byte for byte.
        assert b"GIT binary patch\n" in (root / "series" / "up" / "prop.patch").read_bytes()
    r = run_cli(root, "overlays")
    assert r.rc == 0, r.text
    assert overlay_file(root, target).read_bytes() == data


def test_an_upstreams_eol_and_ident_attributes_never_hide_a_change(tmp_path, monkeypatch):
    """An upstream whose .gitattributes says `*.py text eol=crlf` and `*.txt ident`, edited
    by a user whose own git says core.autocrlf=true and core.safecrlf=true: the edit's
    worktree is bytes. Its git compared each file as git would commit it (line ends
    normalized, `$Id: ...$` folded back), so a change of line ends alone (LF made CRLF, CRLF
    made LF) or of a keyword's text read as no change: `refresh` said "unchanged (0 file(s))"
    and closed the edit with those changes left out. Now each is the patch's change, byte for
    byte, the worktree opened again and the overlays hold the CRs as written, and no command
    prints a word of git's (its CRLF warnings say nothing of what patchforge does)."""
    upstream = tmp_path / "lib"
    upstream.mkdir()

    def upstream_git(*args: str) -> None:
        subprocess.run(["git", "-c", "core.autocrlf=false", *args], cwd=upstream, check=True,
                       capture_output=True)

    upstream_git("init", "-q", "-b", "main")
    base = {"a.py": b"x = 1\ny = 2\n", "w.py": b"p = 1\r\nq = 2\r\n", "k.txt": b"# $Id$\nv = 1\n"}
    for rel, data in base.items():
        (upstream / rel).write_bytes(data)
    upstream_git("add", ".")
    upstream_git("commit", "-qm", "files")
    # The attributes come after the files: the blobs stay as written above.
    (upstream / ".gitattributes").write_bytes(b"*.py text eol=crlf\n*.txt ident\n")
    upstream_git("add", ".gitattributes")
    upstream_git("commit", "-qm", "attributes")
    user_config = tmp_path / "gitconfig"
    user_config.write_bytes(b"[core]\n\tautocrlf = true\n\tsafecrlf = true\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(user_config))

    root = tmp_path / "stack"
    said = []

    def pf(*args: str, at: Path | None = root) -> subprocess.CompletedProcess:
        proc = run_subprocess(at, *args, expect=0)
        said.append(proc.stderr.decode())
        return proc

    pf("init", str(root), at=None)
    pf("upstream", "add", "lib", "--git", str(upstream), "--at", "main",
       "--install-root", "/opt/lib")
    pf("new", "ends", "--file", ".gitattributes", "--file", "a.py", "--file", "w.py",
       "--file", "k.txt", "-m", "line ends and a keyword")
    work = root / ".patchforge/work/lib"
    assert {rel: (work / rel).read_bytes() for rel in base} == base
    edited = {"a.py": b"x = 1\r\ny = 2\r\n", "w.py": b"p = 1\nq = 2\n",
              "k.txt": b"# $Id: 0123abcd $\nv = 1\n"}
    for rel, data in edited.items():
        (work / rel).write_bytes(data)
    refreshed = pf("refresh").stdout.decode()
    assert "refreshed (3 files)" in refreshed, refreshed
    patch = (root / "series/lib/ends.patch").read_bytes()
    assert b"+x = 1\r\n+y = 2\r\n" in patch and b"-p = 1\r\n-q = 2\r\n+p = 1\n+q = 2\n" in patch
    assert b"+# $Id: 0123abcd $\n" in patch
    pf("edit", "ends")
    assert {rel: (work / rel).read_bytes() for rel in edited} == edited
    pf("edit", "--close")
    pf("overlays")
    assert {rel: (root / "overlays/lib" / rel).read_bytes() for rel in edited} == edited
    assert not [text for text in said if "warning: in the working copy" in text
                or "will be replaced" in text or "fatal:" in text], said
