"""A file of a fix that the new upstream turned into a symlink (the code moved, a link left at
the old path), met by `status --against` and `rebase --to` as a user meets it (real git).

A patch may only touch regular files (writing through a link lands outside the tree), so the
rebase refuses such a series before it starts; it did so with no way on, while `status
--against` said only that a hunk fails. Both now name the link and the way on."""
from __future__ import annotations

import os

from helpers.git import git
from test_modify_delete import MOD, Project


def test_a_fix_on_a_file_the_target_made_a_symlink_is_refused_with_the_way_on(tmp_path):
    project = Project(tmp_path)
    project.fix("fix-a", {"pkg/mod.py": b"m = 2\n"})
    up = project.up.path
    git(up, "mv", "pkg/mod.py", "pkg/mod2.py")
    os.symlink("mod2.py", up / "pkg/mod.py")
    git(up, "add", "-A")
    git(up, "-c", "user.name=U", "-c", "user.email=u@example.com", "commit", "-qm", "move")
    git(up, "tag", "v2")
    assert (up / "pkg/mod2.py").read_bytes() == MOD

    _, out, _ = project.cli("status", "--against", "up=v2", expect=1)
    assert "up/fix-a.patch  conflict  pkg/mod.py is a symlink in v2" in out, out
    assert "`rebase --to` refuses the series" in out and "`patchforge delete fix-a`" in out, out

    before = project.patch("fix-a")
    _, _, err = project.cli("rebase", "--to", "up=v2", expect=2)
    assert "pkg/mod.py is a symlink in v2" in err, err
    assert "hint: v2 made pkg/mod.py a link" in err and "`patchforge delete fix-a`" in err, err
    assert project.patch("fix-a") == before
    assert not (project.root / ".patchforge/rebase").exists()
