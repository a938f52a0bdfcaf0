"""A fix that deletes or renames a file upstream moved stops, as `git rebase` stops: CONFLICT
(rename/delete), CONFLICT (rename/rename).

The fix deletes pkg/x.py (or renames it to pkg/x2.py); upstream moved it to lib/x.py (`git
mv`). The deletion (the rename) followed the move: `applies`, the rebase `clean`, exit 0, and
upstream's lib/x.py, which its own code now imports, was gone from the overlays. Now a stop:
the worktree holds the deletion (the rename from lib/x.py), so `--continue` keeps it, seen, and
lib/x.py put back (`git checkout --`) keeps upstream's file: the deleting fix is then empty and
set aside, the renaming one makes pkg/x2.py beside it."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

from helpers.cli import run_subprocess
from helpers.project import add_git_upstream, make_project
from helpers.upstream import Upstream, dep3_patch
from patchforge.store.diff import make_file_diff

TEXT = b"".join(b"def x_%d(v):\n    return v + %d\n\n" % (i, i) for i in range(40))
CHANGED = TEXT.replace(b"return v + 3\n", b"return v + 3  # fixed\n")


def _setup(tmp_path: Path, renamed_to: str | None = None) -> tuple[Path, str]:
    upstream = Upstream(tmp_path / "upstream", {"pkg/x.py": TEXT, "pkg/y.py": b"y = 1\n"})
    root = make_project(tmp_path / "project")
    add_git_upstream(root, "up", upstream.path, upstream.base, install_root=None)
    (root / "series" / "up").mkdir(parents=True, exist_ok=True)
    (root / "series" / "up" / "fix.patch").write_bytes(dep3_patch(make_file_diff(
        "pkg/x.py", renamed_to, TEXT, CHANGED if renamed_to else None)))
    (root / "series" / "up" / "series").write_text("fix.patch\n")
    return root, upstream.commit({}, "move x", renames={"pkg/x.py": "lib/x.py"})


def _said(proc) -> str:
    return proc.stdout.decode(errors="replace") + proc.stderr.decode(errors="replace")


def test_a_fix_deleting_a_file_upstream_moved_stops_and_keeps_the_deletion_when_resolved(
        tmp_path):
    root, target = _setup(tmp_path)
    proc = run_subprocess(root, "status", "--against", f"up={target}", "--json")
    [found] = json.loads(proc.stdout)["patches"]
    assert proc.returncode == 1 and found["rebase"] == "stop", found
    assert "CONFLICT (rename/delete): pkg/x.py renamed to lib/x.py upstream" in \
        " ".join(found["evidence"]), found
    rebase = run_subprocess(root, "rebase", "--to", f"up={target}")
    assert rebase.returncode == 3 and "git checkout -- lib/x.py" in _said(rebase), _said(rebase)
    assert not (root / ".patchforge/work/up/lib/x.py").exists()
    run_subprocess(root, "rebase", "--continue", expect=0)
    text = (root / "series" / "up" / "fix.patch").read_text()
    assert "diff --git a/lib/x.py b/lib/x.py\ndeleted file mode" in text, text


def test_the_file_put_back_keeps_upstreams_and_sets_the_empty_fix_aside(tmp_path):
    root, target = _setup(tmp_path)
    assert run_subprocess(root, "rebase", "--to", f"up={target}").returncode == 3
    work = root / ".patchforge/work/up"
    subprocess.run(["git", "checkout", "--", "lib/x.py"], cwd=work, check=True)
    done = run_subprocess(root, "rebase", "--continue")
    assert "set aside" in _said(done), _said(done)
    assert (root / "series" / "up" / "skipped" / "fix.patch").exists()
    assert "fix.patch" not in (root / "series" / "up" / "series").read_text()


def test_a_fix_renaming_a_file_upstream_moved_elsewhere_stops_with_both_ways_on(tmp_path):
    root, target = _setup(tmp_path / "as-is", "pkg/x2.py")
    proc = run_subprocess(root, "status", "--against", f"up={target}", "--json")
    [found] = json.loads(proc.stdout)["patches"]
    assert proc.returncode == 1 and found["rebase"] == "stop", found
    assert "CONFLICT (rename/rename): pkg/x.py renamed to lib/x.py upstream" in \
        " ".join(found["evidence"]), found
    rebase = run_subprocess(root, "rebase", "--to", f"up={target}")
    assert rebase.returncode == 3 and "git checkout -- lib/x.py" in _said(rebase), _said(rebase)
    run_subprocess(root, "rebase", "--continue", expect=0)
    text = (root / "series" / "up" / "fix.patch").read_text()
    assert "rename from lib/x.py\nrename to pkg/x2.py\n" in text, text

    root, target = _setup(tmp_path / "kept", "pkg/x2.py")
    assert run_subprocess(root, "rebase", "--to", f"up={target}").returncode == 3
    subprocess.run(["git", "checkout", "--", "lib/x.py"], cwd=root / ".patchforge/work/up",
                   check=True)
    run_subprocess(root, "rebase", "--continue", expect=0)
    text = (root / "series" / "up" / "fix.patch").read_text()
    assert "diff --git a/pkg/x2.py b/pkg/x2.py\nnew file mode" in text, text
    assert "lib/x.py" not in text, text
