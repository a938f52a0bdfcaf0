"""A fix that changes a file's content and its mode (a script made executable), met by a
target whose upstream made the content change alone, as a user meets it: real git upstreams,
`status --against`, `rebase --to`, `overlays`.

Landed detection judges content: such a fix was dropped as "landed upstream (high
confidence)", exit 0, and the overlay that made the script executable was gone. The mode is
the rest of the fix: it moves on as a mode-only patch (status: partial), and the fix is
landed only where the upstream made the mode change too."""
from __future__ import annotations

import json
import os
import stat

from helpers.git import git
from test_modify_delete import Project

TOOL = b"#!/bin/sh\necho a\necho b\n"
TOOL_FIXED = b"#!/bin/sh\necho a\necho B\n"


def _executable_fix(project: Project) -> None:
    project.up.commit({"pkg/tool.sh": TOOL}, tag="v1.1")
    project.cli("rebase", "--to", "up=v1.1")
    project.cli("new", "fix-m", "--file", "pkg/tool.sh")
    tool = project.work / "pkg/tool.sh"
    tool.write_bytes(TOOL_FIXED)
    tool.chmod(0o755)
    project.cli("refresh")
    assert b"old mode 100644\nnew mode 100755\n" in project.patch("fix-m")


def test_a_fix_whose_content_landed_without_its_mode_moves_on_with_the_mode(tmp_path):
    project = Project(tmp_path)
    _executable_fix(project)
    (project.root / "overlays").mkdir()
    project.cli("overlays")
    project.up.commit({"pkg/tool.sh": TOOL_FIXED}, tag="v2")  # the line lands, 100644

    _, out, _ = project.cli("status", "--against", "up=v2", "--json", expect=1)
    found = json.loads(out)["patches"][0]
    assert found["state"] == "partial" and found["rebase"] == "move", found
    assert "the content landed; the mode did not: pkg/tool.sh 100644 -> 100755" in \
        found["evidence"], found

    project.cli("rebase", "--to", "up=v2")
    assert project.series() == ["fix-m.patch"]
    patch = project.patch("fix-m")
    diff = patch[patch.index(b"diff --git"):]
    assert diff == b"diff --git a/pkg/tool.sh b/pkg/tool.sh\nold mode 100644\nnew mode 100755\n", \
        diff
    overlay = project.root / "overlays/up/pkg/tool.sh"
    assert overlay.read_bytes() == TOOL_FIXED
    assert os.stat(overlay).st_mode & stat.S_IXUSR
    project.cli("status")


def test_a_fix_landed_with_its_mode_is_dropped_as_landed(tmp_path):
    project = Project(tmp_path)
    _executable_fix(project)
    scratch = tmp_path / "upstream-clone"
    git(tmp_path, "clone", "-q", str(project.up.path), str(scratch))
    (scratch / "pkg/tool.sh").write_bytes(TOOL_FIXED)
    (scratch / "pkg/tool.sh").chmod(0o755)
    git(scratch, "-c", "user.name=U", "-c", "user.email=u@example.com", "commit", "-qam", "fix")
    git(scratch, "tag", "v2")
    git(scratch, "push", "-q", "origin", "HEAD:refs/heads/landed", "v2")
    _, out, _ = project.cli("rebase", "--to", "up=v2")
    assert "landed upstream" in out, out
    assert project.series() == []


def test_a_new_executable_file_the_upstream_adds_as_a_plain_file_keeps_its_mode(tmp_path):
    project = Project(tmp_path)
    project.cli("new", "fix-b", "--file", "pkg/run.sh", "--create")
    run = project.work / "pkg/run.sh"
    run.write_bytes(b"#!/bin/sh\necho hi\n")
    run.chmod(0o755)
    project.cli("refresh")
    assert b"new file mode 100755" in project.patch("fix-b")
    project.up.commit({"pkg/run.sh": b"#!/bin/sh\necho hi\n"}, tag="v2")
    project.cli("rebase", "--to", "up=v2")
    patch = project.patch("fix-b")
    assert patch[patch.index(b"diff --git"):] == \
        b"diff --git a/pkg/run.sh b/pkg/run.sh\nold mode 100644\nnew mode 100755\n", patch
