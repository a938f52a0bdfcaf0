"""Interop: patch files written by render_patch_file are taken as-is by `git apply`, `patch -p1` and
`quilt push`, and those tools produce exactly what patchforge's own application produces."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from helpers.env import need_tool
from helpers.git import git
from helpers.snapshot import tree_bytes, write_tree

from patchforge.apply.hunks import apply_file_patch
from patchforge.formats.patchfile import parse_patch_file, render_patch_file

DATA = Path(__file__).parent / "data" / "patches"
ODD_NAME = os.fsdecode(b"lat\xe9n.txt")

BASE = {
    "src/crlf.txt": b"one\r\ntwo\r\nthree\r\n",
    "src/nonl.txt": b"alpha\nbeta",
    "src/bytes.bin.txt": b"caf\xe9\n\xff\xfe\x0c\n\xe2\x80\xa8\n",
    ODD_NAME: b"x\n",
    "src/gone.txt": b"going\n",
    "src/old_name.py": b"".join(b"value_%d = %d\n" % (k, k) for k in range(15)),
    "src/empty.txt": b"",
}
NEW = {
    "src/crlf.txt": b"one\r\nTWO\r\nthree\r\n",
    "src/nonl.txt": b"alpha\ngamma",
    "src/bytes.bin.txt": b"caf\xe9\n\xfe\xff\x0c\n\xe2\x80\xa8\n",
    ODD_NAME: b"y\n",
    "src/new.txt": b"created\nno newline",
    "src/new_name.py": b"".join(b"value_%d = %d\n" % (k, k * (k != 7)) for k in range(15)),
    "src/empty.txt": b"now filled\n",
}


@pytest.fixture
def rendered(make_git_repo) -> bytes:
    """A canonical patch file whose diff git made: CRLF, no final newline, non-UTF-8 content and
    names, creation, deletion, rename with edits, an empty file filled."""
    repo, _ = make_git_repo(BASE)
    for name in BASE:
        if name not in NEW:
            (repo / name).unlink()
    write_tree(repo, NEW)
    git(repo, "add", "-A")
    diff = subprocess.run(["git", "diff", "--cached", "-M", "--full-index"], cwd=repo,
                          capture_output=True, check=True).stdout
    fields = [("Description", "Carry the MI300X fixes\nas one patch for the interop test"),
              ("Author", "Test Author <author@example.com>"), ("Upstream-Status", "Pending"),
              ("Upstream", "vllm"), ("Profiles", "gfx942")]
    data = render_patch_file(fields, b"Why: the overlays drifted.\n", diff)
    assert parse_patch_file(data, "fix.patch").to_bytes() == data
    return data


def test_ours_gives_the_new_tree(rendered):
    tree = dict(BASE)
    for fp in parse_patch_file(rendered, "fix.patch").file_patches:
        res = apply_file_patch(tree.get(fp.old_path) if fp.old_path else None, fp)
        assert res.ok and res.worst == "exact", fp.path
        if fp.old_path is not None:
            del tree[fp.old_path]
        if res.content is not None:
            tree[fp.new_path] = res.content
    assert tree == NEW


def test_git_apply_accepts_it(rendered, tmp_path):
    need_tool("git")
    work = tmp_path / "tree"
    write_tree(work, BASE)
    subprocess.run(["git", "apply", "--check", "-"], cwd=work, input=rendered, check=True,
                   capture_output=True)
    subprocess.run(["git", "apply", "-"], cwd=work, input=rendered, check=True,
                   capture_output=True)
    assert tree_bytes(work) == NEW


def test_gnu_patch_accepts_it(rendered, tmp_path):
    need_tool("patch")
    work = tmp_path / "tree"
    write_tree(work, BASE)
    for extra in (["--dry-run"], []):
        out = subprocess.run(["patch", "-p1", "--batch", "--forward", "-F0", *extra],
                             cwd=work, input=rendered, capture_output=True)
        assert out.returncode == 0, out.stdout.decode(errors="replace")
        assert b"fuzz" not in out.stdout and b"offset" not in out.stdout
    # GNU patch leaves an emptied file in place unless told otherwise; nothing is emptied here.
    assert tree_bytes(work) == NEW


def test_quilt_push_accepts_it(rendered, tmp_path, monkeypatch):
    need_tool("quilt")
    work = tmp_path / "tree"
    write_tree(work, BASE)
    (work / "patches").mkdir()
    (work / "patches" / "fix.patch").write_bytes(rendered)
    (work / "patches" / "series").write_bytes(b"fix.patch\n")
    monkeypatch.setenv("QUILT_PATCHES", "patches")
    monkeypatch.setenv("QUILTRC", "/dev/null")
    out = subprocess.run(["quilt", "push", "-a", "--fuzz=0"], cwd=work, capture_output=True)
    assert out.returncode == 0, out.stdout.decode(errors="replace") + out.stderr.decode()
    assert tree_bytes(work, skip=("patches", ".pc")) == NEW
    # And quilt can take it back off, byte for byte -- except that quilt stores "did not exist"
    # as an empty backup, so an originally empty file is removed on pop (quilt's convention).
    out = subprocess.run(["quilt", "pop", "-a"], cwd=work, capture_output=True)
    assert out.returncode == 0, out.stdout.decode(errors="replace")
    assert tree_bytes(work, skip=("patches", ".pc")) == {k: v for k, v in BASE.items() if v}


def test_dep3_sample_accepted_by_all_tools(tmp_path, monkeypatch):
    data = (DATA / "debian-dep3.patch").read_bytes()
    orig = (DATA / "fp8_utils.py.orig").read_bytes()
    patched = (DATA / "fp8_utils.py.patched").read_bytes()
    target = "vllm/model_executor/layers/fp8_utils.py"
    runs = [("git", ["git", "apply", "-"]), ("patch", ["patch", "-p1", "--batch", "-F0"])]
    for tool, cmd in runs:
        need_tool(tool)
        work = tmp_path / tool
        write_tree(work, {target: orig})
        subprocess.run(cmd, cwd=work, input=data, check=True, capture_output=True)
        assert (work / target).read_bytes() == patched, tool
    need_tool("quilt")
    work = tmp_path / "quilt"
    write_tree(work, {target: orig, "patches/series": b"debian-dep3.patch\n",
                      "patches/debian-dep3.patch": data})
    monkeypatch.setenv("QUILT_PATCHES", "patches")
    monkeypatch.setenv("QUILTRC", "/dev/null")
    subprocess.run(["quilt", "push", "-a", "--fuzz=0"], cwd=work, check=True, capture_output=True)
    assert (work / target).read_bytes() == patched


def test_hunks_overlapping_the_previous_one_are_refused_naming_the_file_hunk_and_lines(tmp_path):
    """Two fixes' `diff -U10` hunks of one file joined under one file header (changes 15 lines
    apart: the second hunk's context starts inside the first's lines). GNU patch 2.7 applies
    it (each hunk matched against the original file), `git apply` refuses it (a line an earlier
    hunk patched is never matched again): no result both give, so patchforge refuses it too,
    and its message said only "hunks out of order or overlapping within one file". Now it says
    the file, both hunks (number and line in the patch) and the lines they share."""
    need_tool("patch")
    from helpers.project import OneUpstreamStack, add_patch_file

    base = b"".join(b"value_%d = %d\n" % (k, k) for k in range(1, 41))
    changed = {15: b"value_15 = 150\n", 30: b"value_30 = 300\n"}
    files = tmp_path / "files"
    files.mkdir()
    (files / "base").write_bytes(base)
    hunks = []
    for line, new in changed.items():
        one = base.replace(b"value_%d = %d\n" % (line, line), new)
        (files / f"c{line}").write_bytes(one)
        made = subprocess.run(["diff", "-U10", "--label", "a/pkg/long.py", "--label",
                               "b/pkg/long.py", "base", f"c{line}"], cwd=files,
                              capture_output=True).stdout
        hunks.append(made[made.index(b"@@"):])
    diff = b"--- a/pkg/long.py\n+++ b/pkg/long.py\n" + b"".join(hunks)
    assert [h.split(b" @@")[0] for h in hunks] == [b"@@ -5,21 +5,21", b"@@ -20,21 +20,21"]
    both = base
    for line, new in changed.items():
        both = both.replace(b"value_%d = %d\n" % (line, line), new)
    for tool in (["patch", "-p1", "-s"], ["git", "apply"]):
        tree = tmp_path / tool[0]
        (tree / "pkg").mkdir(parents=True)
        (tree / "pkg/long.py").write_bytes(base)
        ran = subprocess.run(tool, cwd=tree, input=diff, capture_output=True)
        if tool[0] == "patch":
            assert ran.returncode == 0 and (tree / "pkg/long.py").read_bytes() == both, ran
        else:
            assert ran.returncode != 0 and (tree / "pkg/long.py").read_bytes() == base, ran

    stack = OneUpstreamStack(tmp_path / "stack", {"pkg/long.py": base})
    header = b"Description: two fixes joined\nUpstream-Status: Pending\n\n---\n"
    add_patch_file(stack.root, "up", "joined.patch", header + diff)
    before = stack.snapshot()
    rc, out, err = stack.cli("status", expect=None)
    assert rc == 2, (rc, out, err)
    second = 4 + 2 + 1 + 22 + 1  # the header, the file header, hunk 1's @@ line and body
    assert f"series/up/joined.patch:{second}:" in err and \
        f"pkg/long.py: hunk 2 (line {second}) starts at old line 20, inside hunk 1 (line 7), " \
        "which ends at 25: the two hunks overlap on old lines 20-25" in err, err
    assert "`git apply` refuses them" in err, err
    assert stack.snapshot() == before
