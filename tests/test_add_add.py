"""A patch that makes a path the new upstream fills too, met by `status --against` and `rebase
--to` as a user meets them (real git upstreams, real commands): git's add/add (a new file the
upstream adds too, with other content) and rename/add (a rename onto a path the upstream
adds), and a new file under a path that became a file upstream (file/directory).

The add/add stop's worktree held no file at all (neither side, no markers), and `--continue`
then wrote the fix as a deletion of the upstream's new file, exit 0: the fix was gone. The
rename onto an added path moved "clean, applied exactly" over the upstream's file, a series
that `git apply` refuses at the new pin. Each is a stop now, the worktree holding both sides
in markers as git shows an add/add."""
from __future__ import annotations

import subprocess

from helpers.git import git
from test_modify_delete import Project


def _new_file_fix(project: Project, path: str, content: bytes) -> None:
    project.cli("new", "fix-b", "--file", path, "--create")
    (project.work / path).write_bytes(content)
    project.cli("refresh")


def test_a_new_file_the_upstream_adds_too_stops_with_both_sides(tmp_path):
    project = Project(tmp_path)
    _new_file_fix(project, "pkg/new.py", b"fix-b's new file\n")
    project.up.commit({"pkg/new.py": b"the upstream's own new.py\n"}, tag="v2")

    _, out, _ = project.cli("status", "--against", "up=v2", expect=1)
    assert "up/fix-b.patch  conflict  CONFLICT (add/add): pkg/new.py is in v2 too" in out, out

    _, _, err = project.cli("rebase", "--to", "up=v2", expect=3)
    assert "CONFLICT (add/add): pkg/new.py is in v2 too (with other content)" in err, err
    stopped = (project.work / "pkg/new.py").read_bytes()
    assert stopped.startswith(b"<<<<<<< "), stopped
    assert b"the upstream's own new.py\n" in stopped and b"fix-b's new file\n" in stopped
    # As the stop left it: markers, refused; nothing of the fix lost.
    project.cli("rebase", "--continue", expect=2)
    assert b"+fix-b's new file" in project.patch("fix-b")

    (project.work / "pkg/new.py").write_bytes(b"the upstream's own new.py\nfix-b's new file\n")
    project.cli("rebase", "--continue")
    patch = project.patch("fix-b")
    assert b"new file mode" not in patch and b"deleted file mode" not in patch, patch
    assert b"+fix-b's new file\n" in patch and b" the upstream's own new.py\n" in patch, patch
    # The series is what git applies at the new pin.
    checkout = tmp_path / "v2"
    git(tmp_path, "clone", "-q", "--branch", "v2", str(project.up.path), str(checkout))
    diff = patch[patch.index(b"diff --git"):]
    subprocess.run(["git", "apply", "--check", "-"], cwd=checkout, input=diff, check=True)
    project.cli("status")


def test_a_rename_onto_a_path_the_upstream_adds_stops_instead_of_moving_clean(tmp_path):
    project = Project(tmp_path)
    project.cli("new", "fix-r", "--file", "pkg/other.py")
    git(project.work, "mv", "pkg/other.py", "pkg/b.py")
    (project.work / "pkg/b.py").write_bytes(b"x = 1\ny = 2\nz = 30\n")
    project.cli("add", "pkg/b.py")
    project.cli("refresh")
    assert b"rename to pkg/b.py" in project.patch("fix-r")
    project.up.commit({"pkg/b.py": b"b = 'the upstream's'\n"}, tag="v2")

    _, out, _ = project.cli("status", "--against", "up=v2", expect=1)
    assert "CONFLICT (rename/add): pkg/b.py is in v2 too" in out, out
    _, out, _ = project.cli("rebase", "--to", "up=v2", "--dry-run", expect=1)
    assert "applied exactly" not in out, out
    _, _, err = project.cli("rebase", "--to", "up=v2", expect=3)
    assert "CONFLICT (rename/add): pkg/b.py is in v2 too" in err, err
    stopped = (project.work / "pkg/b.py").read_bytes()
    assert b"b = 'the upstream's'\n" in stopped and b"z = 30\n" in stopped, stopped
    project.cli("rebase", "--abort")
    assert b"rename to pkg/b.py" in project.patch("fix-r")


def test_a_new_file_under_a_path_that_became_a_file_upstream_stops(tmp_path):
    project = Project(tmp_path)
    _new_file_fix(project, "pkg/sub/new.py", b"new = 1\n")
    project.up.commit({"pkg/sub": b"now a file\n"}, tag="v2")
    _, out, _ = project.cli("status", "--against", "up=v2", expect=1)
    assert "CONFLICT (file/directory): pkg/sub is a file in v2, where pkg/sub/new.py would go" \
        in out, out
    _, _, err = project.cli("rebase", "--to", "up=v2", expect=3)
    assert "CONFLICT (file/directory): pkg/sub is a file in v2" in err, err


def test_a_new_binary_file_the_upstream_adds_too_stops(tmp_path):
    """A binary file is judged by blob id: made where the target has another one, it moved
    over the target's file. It stops, the target's file in the worktree (binary, not merged)."""
    project = Project(tmp_path)
    _new_file_fix(project, "pkg/data.bin", b"\x00fix\x01" * 20)
    assert b"GIT binary patch" in project.patch("fix-b")
    project.up.commit({"pkg/data.bin": b"\x00upstream\x02" * 20}, tag="v2")
    project.cli("status", "--against", "up=v2", expect=1)
    _, _, err = project.cli("rebase", "--to", "up=v2", expect=3)
    assert "binary, not merged" in err, err
    assert (project.work / "pkg/data.bin").read_bytes() == b"\x00upstream\x02" * 20
    # The same bytes upstream: landed, dropped as such.
    project.cli("rebase", "--abort")
    project.up.commit({"pkg/data.bin": b"\x00fix\x01" * 20}, tag="v3")
    _, out, _ = project.cli("rebase", "--to", "up=v3")
    assert "landed upstream" in out, out
