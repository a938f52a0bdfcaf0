"""`import quilt --update` of a fix the series renamed and changed since the export, changed in
quilt too, in a stack that keeps no history: named by its new name, as changed on both sides.
Real git, real quilt, the real CLI.
"""
from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from helpers.cli import ok, run_cli
from helpers.upstream import Upstream

M = b"def f(x):\n    y = x + 1\n    return y\n\n\ndef g(x):\n    y = x * 2\n    return y\n\n\ndef h(x):\n    return x\n"


def _quilt(tree, *args):
    env = {**os.environ, "QUILT_PATCHES": "patches", "QUILTRC": "-"}
    subprocess.run(["quilt", *args], cwd=tree, env=env, check=True, capture_output=True)


def exported_stack(tmp_path, m: bytes, history: bool = False):
    """A project whose up series holds fix-f and fix-g (one line of `m`'s f and g each),
    exported with `export --quilt` to tmp_path/q, and a quilt tree (tmp_path/qt, `m` as m.py,
    patches/ the export) to work on it. `history`: the stack keeps PATCHES.md, so `rename`
    records its event. Returns (project root, quilt dir, quilt tree)."""
    up = Upstream(tmp_path / "up", {"m.py": m}, tag="v1")
    root = tmp_path / "proj"
    root.mkdir()
    ok(root, "init", "--standalone", str(root))
    ok(root, "upstream", "add", "up", "--git", str(up.path), "--at", "v1")
    work = root / ".patchforge/work/up"
    for name, old, new in (("fix-f", b"y = x + 1", b"y = x + 11"),
                           ("fix-g", b"y = x * 2", b"y = x * 22")):
        ok(root, "new", name, "-m", name[-1], "--file", "m.py")
        (work / "m.py").write_bytes((work / "m.py").read_bytes().replace(old, new))
        ok(root, "refresh")
    if history:
        ok(root, "ledger")
    q = tmp_path / "q"
    ok(root, "export", "--quilt", str(q))
    tree = tmp_path / "qt"
    tree.mkdir()
    (tree / "m.py").write_bytes(m)
    (tree / "patches").symlink_to(q)
    return root, q, tree


@pytest.mark.parametrize("history", [False, True])
def test_a_fix_renamed_and_changed_in_the_series_and_changed_in_quilt_is_named_so(tmp_path,
                                                                                  history):
    """export --quilt; quilt refreshes fix-f; the series renames fix-f to fix-ff and changes
    it, in a stack that keeps no history (told by the header) or one that does (told by the
    `renamed` event). The import said fix-f "left the up series (deleted, renamed, or landed upstream)" and
    advised keeping quilt's version as a new fix, which the import then refused as meeting
    fix-ff's lines. Now it names fix-ff and says both sides changed it, nothing written, and
    the way on its hint gives ends with quilt's change in fix-ff and nothing to take back."""
    root, q, tree = exported_stack(tmp_path, M, history=history)
    work = root / ".patchforge/work/up"
    _quilt(tree, "push", "fix-f.patch")
    (tree / "m.py").write_bytes((tree / "m.py").read_bytes().replace(b"    return y\n",
                                                                     b"    return int(y)\n", 1))
    _quilt(tree, "refresh")
    ok(root, "rename", "fix-f", "fix-ff")
    ok(root, "edit", "fix-ff")
    (work / "m.py").write_bytes((work / "m.py").read_bytes().replace(b"return x\n",
                                                                     b"return -x\n"))
    ok(root, "refresh")
    assert (root / "series/history.jsonl").exists() == history
    if history:
        assert b'"renamed"' in (root / "series/history.jsonl").read_bytes()
    before = {p: p.read_bytes() for p in sorted((root / "series").rglob("*")) if p.is_file()}

    run = run_cli(root, "import", "quilt", str(q), "--update")
    assert run.rc == 2, run.text
    assert "fix-f.patch is fix-ff.patch now (renamed in the up series after `export --quilt` " \
           "wrote it), and both sides changed it since" in run.err, run.err
    assert "left the up series" not in run.err and "new fix" not in run.err, run.err
    assert {p: p.read_bytes() for p in sorted((root / "series").rglob("*"))
            if p.is_file()} == before

    # The way on the hint gives.
    kept = (q / "fix-f.patch").read_bytes()
    assert b"+    return int(y)" in kept
    ok(root, "edit", "fix-ff")
    (work / "m.py").write_bytes((work / "m.py").read_bytes().replace(b"    return y\n",
                                                                     b"    return int(y)\n", 1))
    ok(root, "refresh")
    _quilt(tree, "pop", "-a")
    (q / "series").write_bytes((q / "series").read_bytes().replace(b"fix-f.patch\n",
                                                                   b"fix-ff.patch\n"))
    shutil.copyfile(root / "series/up/fix-ff.patch", q / "fix-ff.patch")
    (q / "fix-f.patch").unlink()
    run = ok(root, "import", "quilt", str(q), "--update")
    fixed = (root / "series/up/fix-ff.patch").read_bytes()
    assert b"+    return int(y)" in fixed and b"+    return -x" in fixed, fixed
    assert (root / "series/up/series").read_text().split() == ["fix-ff.patch", "fix-g.patch"]
