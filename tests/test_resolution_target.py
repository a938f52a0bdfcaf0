"""A stop's resolution is checked against the target before it is written, as the series will be
applied there: real git upstreams, real commands, as a user meets them.

A file/directory stop (a new file under a path that became a file upstream, or a file where the
upstream now has a directory) left as it was took `rebase --continue` (and `bring-back
--continue`) with exit 0: the patch was written "resolved" creating a path the target fills, and
`status`, `lint`, `git apply` and the overlays refused the series from then on. --continue now
refuses such a resolution, naming the path, exit 2, nothing written and the stop kept, so that
`--skip` (the fix kept in skipped/) or `--abort` still go on from it."""
from __future__ import annotations

import subprocess

from helpers.git import git
from test_modify_delete import Project


def _new_file_fix(project: Project, path: str, content: bytes) -> None:
    project.cli("new", "fix-b", "--file", path, "--create")
    (project.work / path).write_bytes(content)
    project.cli("refresh")


def _stopped(tmp_path, path: str, content: bytes, upstream: dict[str, bytes],
             conflict: str) -> tuple[Project, bytes]:
    """A fix creating `path`, and the rebase to v2 (`upstream`'s files) stopped on it with
    `conflict`: the project, and the fix as it was."""
    project = Project(tmp_path)
    _new_file_fix(project, path, content)
    before = project.patch("fix-b")
    project.up.commit(upstream, tag="v2")
    _, _, err = project.cli("rebase", "--to", "up=v2", expect=3)
    assert conflict in err, err
    return project, before


def _refused_and_kept(project: Project, command: str, path: str, before: bytes) -> str:
    """`command --continue` refused naming `path`; the patch as it was; still stopped."""
    _, _, err = project.cli(command, "--continue", expect=2)
    assert f"would not apply on v2: {path}: fix-b.patch creates {path}" in err, err
    assert "nothing was written, the stop is as it was" in err, err
    _, out, err2 = project.cli("status", expect=1)
    assert ("stopped at fix-b.patch" if command == "rebase" else
            "bringing back fix-b.patch is stopped") in out + err2, out + err2
    assert project.patch("fix-b", "skipped" if command == "bring-back" else "") == before
    return err


def test_continue_refuses_a_new_file_under_a_path_that_is_a_file_at_the_target(tmp_path):
    project, before = _stopped(tmp_path, "pkg/sub/new.py", b"new = 1\n",
                               {"pkg/sub": b"now a file\n"},
                               "CONFLICT (file/directory): pkg/sub is a file in v2")
    err = _refused_and_kept(project, "rebase", "pkg/sub/new.py", before)
    assert "but pkg/sub is a file in the upstream (v2 with the series before it)" in err, err
    assert "`patchforge rebase --skip` keeps the whole patch in series/up/skipped/" in err, err
    # Refused again, the same, and --skip still goes on from the stop: the fix kept aside.
    _refused_and_kept(project, "rebase", "pkg/sub/new.py", before)
    project.cli("rebase", "--skip", expect=1)
    assert project.series() == []
    assert project.patch("fix-b", "skipped") == before
    _, out, _ = project.cli("status", expect=1)  # only the skipped fix needs attention
    assert "skipped (needs attention): up/fix-b.patch" in out and "stopped" not in out, out


def test_continue_refuses_a_new_file_where_the_target_has_a_directory(tmp_path):
    project, before = _stopped(tmp_path, "pkg/sub", b"sub = 1\n", {"pkg/sub/x.py": b"x = 1\n"},
                               "CONFLICT (file/directory): pkg/sub is a directory in v2")
    err = _refused_and_kept(project, "rebase", "pkg/sub", before)
    assert "creates pkg/sub, which is a directory in the upstream" in err, err
    project.cli("rebase", "--abort")
    assert project.patch("fix-b") == before and project.series() == ["fix-b.patch"]


def test_a_continued_resolution_that_fits_the_target_is_what_git_applies(tmp_path):
    """The check refuses only what does not fit: a conflict resolved in a file the target has
    is written as before, and `git apply` takes the series at the new pin."""
    project = Project(tmp_path)
    project.fix("fix-b", {"pkg/other.py": b"x = 1\ny = 2\nz = 30\n"})
    project.up.commit({"pkg/other.py": b"x = 1\ny = 2\nz = 4\n"}, tag="v2")
    project.cli("rebase", "--to", "up=v2", expect=3)
    (project.work / "pkg/other.py").write_bytes(b"x = 1\ny = 2\nz = 40\n")
    project.cli("rebase", "--continue")
    patch = project.patch("fix-b")
    checkout = tmp_path / "v2"
    git(tmp_path, "clone", "-q", "--branch", "v2", str(project.up.path), str(checkout))
    subprocess.run(["git", "apply", "--check", "-"], cwd=checkout,
                   input=patch[patch.index(b"diff --git"):], check=True)
    project.cli("status")


def test_bring_back_continue_refuses_a_new_file_under_a_path_that_is_a_file(tmp_path):
    project, before = _stopped(tmp_path, "pkg/sub/new.py", b"new = 1\n",
                               {"pkg/sub": b"now a file\n"}, "CONFLICT (file/directory)")
    project.cli("rebase", "--skip", expect=1)
    _, _, err = project.cli("bring-back", "fix-b", expect=3)
    assert "pkg/sub" in err, err

    err = _refused_and_kept(project, "bring-back", "pkg/sub/new.py", before)
    assert "`patchforge bring-back --abort` (the fix stays in skipped/)" in err, err
    project.cli("bring-back", "--abort")
    assert project.series() == [] and project.patch("fix-b", "skipped") == before
    _, out, _ = project.cli("status", expect=1)  # only the skipped fix needs attention
    assert "skipped (needs attention): up/fix-b.patch" in out and "stopped" not in out, out
