"""The rebase's range-diff of a series patch that renames a file: one pair, as the table says it.
Real git, the real CLI.
"""
from __future__ import annotations

import json
import re
import shutil

from helpers.cli import ok, run_cli
from helpers.upstream import Upstream

X = b'import os\n\n\ndef k(p):\n    q = os.path.join(p, "k")\n    return q\n\n\ndef m(p):\n    return p\n'


def test_a_patch_renaming_a_file_is_one_pair_of_the_range_diff(tmp_path, monkeypatch):
    """A fix renames x.py to y.py and changes one line; upstream changes another function of
    x.py. The rebase moved it clean, and its range-diff showed it dropped (`1: ... < -: ...`)
    and as a new patch (`-: ... > 1: ...`): the chain of the old series made from the walk lost
    the rename's deletion of x.py (never read before the patch came to it), so git saw a new
    file there. Now it is one pair, the same text as the range-diff made from the patch files
    (a resumed rebase's)."""
    from patchforge.rebase import engine

    up = Upstream(tmp_path / "up", {"x.py": X, "use.py": b"from x import k\n"}, tag="v1")
    up.commit({"x.py": X.replace(b"    return p\n", b"    return str(p)\n")}, "m", tag="v2")
    root = tmp_path / "project"
    root.mkdir()
    ok(root, "init", "--standalone", str(root))
    ok(root, "upstream", "add", "up", "--git", str(up.path), "--at", "v1")
    ok(root, "new", "ren", "-m", "rename x to y", "--file", "x.py", "--file", "use.py")
    work = root / ".patchforge/work/up"
    (work / "y.py").write_bytes(X.replace(b"def k(p):\n", b"def k(p):\n    p = os.fspath(p)\n"))
    (work / "x.py").unlink()
    (work / "use.py").write_bytes(b"from y import k\n")
    ok(root, "add", "y.py")
    ok(root, "refresh")
    patch = (root / "series/up/ren.patch").read_bytes()
    assert b"rename from x.py\nrename to y.py\n" in patch, patch
    copy = tmp_path / "copy"
    shutil.copytree(root, copy, symlinks=True)

    run = run_cli(root, "rebase", "--to", "v2", "--json")
    assert run.rc == 0, run.text
    recorded = json.loads(run.out)
    assert [(p["name"], p["action"]) for p in recorded["patches"]] == [("ren.patch", "clean")]
    lines = [line for line in recorded["range_diff"].splitlines() if "ren.patch" in line]
    assert len(lines) == 1 and re.match(r"\s*1:\s+\w+ [=!] 1:\s+\w+ ren\.patch$", lines[0]), \
        recorded["range_diff"]

    # The chains made from the patch files (what a resumed rebase does) give the same text.
    original = engine.Rebase._range_diff_inputs

    def without_recorded_chains(self, **options):
        self._chains.clear()
        return original(self, **options)
    monkeypatch.setattr(engine.Rebase, "_range_diff_inputs", without_recorded_chains)
    run = run_cli(copy, "rebase", "--to", "v2", "--json")
    assert run.rc == 0, run.text
    assert json.loads(run.out)["range_diff"] == recorded["range_diff"]
