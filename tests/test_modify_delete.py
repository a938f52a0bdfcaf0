"""A patch that deletes a file the new upstream changed, and a patch that changes a file the new
upstream deleted (git's modify/delete conflict), met by a rebase, a bring-back and a refresh, as
a user meets them: real git upstreams, real commands, one after another.

An overlay cannot delete a file in the image, so in a project that writes overlays (overlays/
exists) a series that deletes an upstream file is refused by `overlays` and by a rebase's
write-out: the resolution or refresh that would make one is refused where it is made.

Removing a file from a stop's worktree keeps a deletion only the patch itself makes: any other
file of the stop found missing at --continue (a conflicted file moved aside) is refused, never
written as a deletion of the whole upstream file."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers.cli import run_cli
from helpers.git import git
from helpers.project import add_patch_file
from helpers.snapshot import snapshot
from helpers.upstream import Upstream

OTHER = b"x = 1\ny = 2\nz = 3\n"
OTHER_V2 = b"x = 1\ny = 20\nz = 3\n"
MOD = b"m = 1\n"


class Project:
    def __init__(self, tmp_path: Path) -> None:
        self.up = Upstream(tmp_path / "up", {"pkg/mod.py": MOD, "pkg/other.py": OTHER},
                           tag="v1")
        self.root = tmp_path / "project"
        self.cli("init", "--standalone", str(self.root))
        self.cli("upstream", "add", "up", "--git", str(self.up.path), "--at", "v1",
                 "--install-root", "/opt/site")

    def cli(self, *args: str, expect: int | None = 0) -> tuple[int, str, str]:
        result = run_cli(self.root if args[0] != "init" else None, *args)
        if expect is not None:
            assert result.rc == expect, \
                f"patchforge {' '.join(args)} -> {result.rc}\n{result.out}\n{result.err}"
        return result.rc, result.out, result.err

    @property
    def work(self) -> Path:
        return self.root / ".patchforge" / "work" / "up"

    def series(self) -> list[str]:
        return (self.root / "series" / "up" / "series").read_text().split()

    def patch(self, name: str, where: str = "") -> bytes:
        sub = f"{where}/" if where else ""
        return (self.root / "series" / "up" / f"{sub}{name}.patch").read_bytes()

    def fix(self, name: str, files: dict[str, bytes]) -> None:
        self.cli("new", name, *[f"--file={rel}" for rel in files])
        for rel, data in files.items():
            (self.work / rel).write_bytes(data)
        self.cli("refresh")

    def deleting_patch(self, name: str = "drop-other") -> None:
        """A patch deleting pkg/other.py put into the series as an import or a colleague's
        commit brings it (refresh refuses to make one where overlays are made)."""
        diff = (b"diff --git a/pkg/other.py b/pkg/other.py\n"
                b"deleted file mode 100644\n"
                b"--- a/pkg/other.py\n+++ /dev/null\n@@ -1,3 +0,0 @@\n" +
                b"".join(b"-" + line for line in OTHER.splitlines(keepends=True)))
        header = (f"Description: drop other\nUpstream: up\nBase: {self.up.base}\n\n---\n")
        add_patch_file(self.root, "up", f"{name}.patch", header.encode() + diff)


@pytest.fixture
def project(tmp_path):
    return Project(tmp_path)


def test_a_patch_deleting_a_file_upstream_changed_says_who_did_what(project):
    """The stop said only "conflict in pkg/other.py", with no markers in the file and no word on
    which side did what. It says it as git does (deleted in the patch, modified upstream in v2),
    that the worktree holds v2's file, and the ways on; removing the file keeps the deletion
    (the project makes no overlays) and the series is written with it, against v2's file."""
    project.fix("fix-mod", {"pkg/mod.py": b"m = 2\n"})
    project.deleting_patch()
    project.up.commit({"pkg/other.py": OTHER_V2}, tag="v2")
    _, _, err = project.cli("rebase", "--to", "up=v2", expect=3)
    assert "CONFLICT (modify/delete): pkg/other.py deleted in drop-other.patch and modified " \
        "upstream in v2 (v2's file is left in the worktree, with no markers)" in err, err
    assert "keeps the upstream's file and drops the patch's deletion" in err, err
    assert "to keep the deletion, `patchforge rm pkg/other.py`" in err, err
    assert "rebase --skip" in err, err
    assert (project.work / "pkg/other.py").read_bytes() == OTHER_V2
    _, out, err = project.cli("status", expect=1)
    assert "CONFLICT (modify/delete)" in out + err, out + err
    _, _, err = project.cli("rm", "pkg/mod.py", expect=2)
    assert "the files it deletes that upstream changed: pkg/other.py" in err, err
    _, out, _ = project.cli("rm", "pkg/other.py")  # as `git rm` keeps the deletion
    assert "pkg/other.py removed from the worktree: the patch keeps its deletion" in out, out
    assert not (project.work / "pkg/other.py").exists()
    project.cli("rebase", "--continue")
    moved = project.patch("drop-other")
    assert b"deleted file mode" in moved and b"-y = 20\n" in moved, moved.decode()
    assert project.series() == ["fix-mod.patch", "drop-other.patch"]
    assert project.cli("status")[0] == 0


def test_keeping_the_upstreams_file_at_a_modify_delete_stop_sets_an_empty_patch_aside(project):
    """--continue with v2's file as the worktree has it drops the patch's deletion: a patch
    that did nothing else is set aside in skipped/, never lost."""
    project.deleting_patch()
    project.up.commit({"pkg/other.py": OTHER_V2}, tag="v2")
    project.cli("rebase", "--to", "up=v2", expect=3)
    project.cli("rebase", "--continue", expect=1)  # set aside: in none of the overlays
    assert project.series() == []
    assert b"deleted file mode" in project.patch("drop-other", "skipped")


def test_a_deletion_the_overlays_cannot_carry_is_refused_at_continue_not_at_the_write_out(
        project):
    """In a project that writes overlays, removing the file at the stop (keeping the deletion,
    as `git rm` would) was taken by --continue, then the write-out failed (exit 2) on the
    overlays' refusal. --continue refuses it, exit 2, naming the file and why, the rebase still
    stopped on the patch and the worktree as the user left it; putting the file back changed
    as the image needs goes through to the overlays."""
    project.fix("fix-mod", {"pkg/mod.py": b"m = 2\n"})
    project.cli("overlays")
    project.deleting_patch()
    project.up.commit({"pkg/other.py": OTHER_V2}, tag="v2")
    _, _, err = project.cli("rebase", "--to", "up=v2", expect=3)
    assert "CONFLICT (modify/delete): pkg/other.py deleted in drop-other.patch" in err, err
    assert "the deletion cannot be kept, since this project's overlays cannot delete a file " \
        "in the image" in err, err
    assert "patchforge rm pkg/other.py" not in err, err
    _, _, err = project.cli("rm", "pkg/other.py", expect=2)
    assert "keeping drop-other.patch's deletion would make the series delete a file the " \
        "upstream has, and this project writes overlays" in err, err
    assert (project.work / "pkg/other.py").read_bytes() == OTHER_V2
    (project.work / "pkg/other.py").unlink()  # by hand, all the same
    before = snapshot(project.root, skip_state=True, dirs=False)
    _, _, err = project.cli("rebase", "--continue", expect=2)
    assert f"pkg/other.py removed in {project.work}: up/drop-other.patch would delete " \
        "pkg/other.py of v2, and this project writes overlays, which cannot delete a file " \
        "in the image" in err, err
    assert "the rebase is still stopped" in err and "git checkout -- PATH" in err \
        and "rebase --skip" in err, err
    assert snapshot(project.root, skip_state=True, dirs=False) == before
    assert not (project.work / "pkg/other.py").exists()
    _, out, err = project.cli("status", expect=1)
    assert "a rebase is stopped at drop-other.patch" in out + err, out + err
    # The way the message gives: the file back, emptied as the image needs it.
    git(project.work, "checkout", "--", "pkg/other.py")
    (project.work / "pkg/other.py").write_bytes(b"")
    project.cli("rebase", "--continue")
    assert project.series() == ["fix-mod.patch", "drop-other.patch"]
    assert (project.root / "overlays/up/pkg/other.py").read_bytes() == b""
    assert (project.root / "overlays/up/pkg/mod.py").read_bytes() == b"m = 2\n"
    project.cli("overlays", "--check")


def test_a_patch_changing_a_file_upstream_deleted_says_who_did_what(project):
    """The other side of modify/delete: the stop names the upstream revision that deleted the
    file and the patch that changed it, and the ways on (`rm` drops the change)."""
    project.fix("fix-two", {"pkg/mod.py": b"m = 2\n", "pkg/other.py": b"x = 5\ny = 2\nz = 3\n"})
    project.up.commit({"pkg/other.py": None}, tag="v2")
    _, _, err = project.cli("rebase", "--to", "up=v2", expect=3)
    assert "CONFLICT (modify/delete): pkg/other.py deleted upstream in v2 and modified in " \
        "fix-two.patch (pkg/other.py is gone upstream, not renamed; the worktree has no copy)" \
        in err, err
    assert "`patchforge rm PATH`" in err and "--skip" in err, err
    project.cli("rm", "pkg/other.py")
    project.cli("rebase", "--continue")
    assert b"other.py" not in project.patch("fix-two")


def test_bring_back_of_a_deletion_upstream_changed_says_so_and_refuses_what_overlays_cannot(
        project):
    """A bring-back stops the same way, and where overlays are made its --continue refuses a
    resolution that deletes the file (the series would then fail `overlays`)."""
    project.fix("fix-mod", {"pkg/mod.py": b"m = 2\n"})
    project.cli("overlays")
    project.deleting_patch()
    project.up.commit({"pkg/other.py": OTHER_V2}, tag="v2")
    project.cli("rebase", "--to", "up=v2", expect=3)
    project.cli("rebase", "--skip", expect=1)
    _, _, err = project.cli("bring-back", "drop-other", expect=3)
    assert "CONFLICT (modify/delete): pkg/other.py deleted in drop-other.patch and modified " \
        "upstream in v2" in err, err
    assert "the deletion cannot be kept" in err and "bring-back --abort" in err, err
    _, _, err = project.cli("rm", "pkg/other.py", expect=2)
    assert "keeping drop-other.patch's deletion would make the series delete" in err, err
    (project.work / "pkg/other.py").unlink()
    _, _, err = project.cli("bring-back", "--continue", expect=2)
    assert "pkg/other.py removed in" in err and "cannot delete a file in the image" in err, err
    assert b"deleted file mode" in project.patch("drop-other", "skipped")
    assert project.series() == ["fix-mod.patch"]
    git(project.work, "checkout", "--", "pkg/other.py")
    (project.work / "pkg/other.py").write_bytes(b"")
    project.cli("bring-back", "--continue")
    assert project.series() == ["fix-mod.patch", "drop-other.patch"]
    project.cli("overlays")


def test_refresh_says_at_once_when_the_series_cannot_carry_a_deletion(project):
    """refresh of an edit whose file was removed wrote a patch deleting it (as git and quilt
    do), which only `overlays` refused, later. Where overlays are made, refresh refuses it
    (exit 2, the edit open, nothing written), saying why and how to put it back; where none
    are made yet, it writes the deletion and warns that `overlays` will refuse it."""
    project.fix("fix-mod", {"pkg/mod.py": b"m = 2\n"})
    # No overlays yet: written, with a warning (and in --json).
    project.cli("edit", "fix-mod")
    project.cli("add", "pkg/other.py")
    (project.work / "pkg/other.py").unlink()
    result = run_cli(project.root, "refresh", "--json")
    assert result.rc == 0 and json.loads(result.out)["removes_upstream_files"] == \
        ["pkg/other.py"], result.out + result.err
    assert b"deleted file mode" in project.patch("fix-mod")
    project.cli("edit", "fix-mod")
    git(project.work, "checkout", "--", "pkg/other.py")
    _, _, err = project.cli("refresh")
    assert "deletes" not in err, err
    project.cli("overlays")
    # Overlays made: refused, the edit still open, the patch as it was.
    project.cli("edit", "fix-mod")
    project.cli("add", "pkg/other.py")
    (project.work / "pkg/other.py").unlink()
    kept = project.patch("fix-mod")
    _, _, err = project.cli("refresh", expect=2)
    assert f"pkg/other.py removed in {project.work}: up/fix-mod.patch would delete it from " \
        "the upstream's files, and this project writes overlays, which cannot delete a file " \
        "in the image" in err, err
    assert "git checkout -- PATH" in err, err
    assert project.patch("fix-mod") == kept and (project.work / "pkg/mod.py").exists()
    git(project.work, "checkout", "--", "pkg/other.py")
    (project.work / "pkg/other.py").write_bytes(b"")
    project.cli("refresh")
    project.cli("overlays")
    assert (project.root / "overlays/up/pkg/other.py").read_bytes() == b""


def test_refresh_of_a_file_moved_aside_says_plainly_that_the_patch_now_deletes_it(project):
    """A file of the fix moved aside in the edit's worktree: refresh writes the patch deleting
    the whole file (as quilt and git do: it is also how a patch is made to delete a file), and
    said only that `overlays` would refuse the series. It says, naming the file, that it is
    missing from the worktree, that the patch now DELETES it, and how to put it back; in
    --json too. Putting the copy back and refreshing again gives the fix back as it was."""
    project.fix("fix-two", {"pkg/mod.py": b"m = 2\n", "pkg/other.py": OTHER_V2})
    before = project.patch("fix-two")
    project.cli("edit", "fix-two")
    aside = project.root.parent / "other.py.aside"
    (project.work / "pkg/other.py").rename(aside)
    _, out, err = project.cli("refresh")
    assert "pkg/other.py is missing from the edit worktree: fix-two.patch now DELETES " \
        "pkg/other.py (the whole file); if you did not mean that, `patchforge edit fix-two`, " \
        "put it back (the copy you moved aside; `git checkout -- PATH` in the worktree gives " \
        "the file as before the patch) and `patchforge refresh` again" in err, err
    patch = project.patch("fix-two")
    assert b"deleted file mode" in patch and b"+y = 20" not in patch, patch.decode()
    # Refreshed again with the deletion kept: no longer new, no longer said so.
    project.cli("edit", "fix-two")
    (project.work / "pkg/mod.py").write_bytes(b"m = 3\n")
    result = run_cli(project.root, "refresh", "--json")
    assert result.rc == 0 and json.loads(result.out)["deletes_missing_files"] == [], result.text
    assert "missing from the edit worktree" not in result.err, result.err
    # The way back the warning gives: the copy put back, refreshed.
    project.cli("edit", "fix-two")
    (project.work / "pkg/mod.py").write_bytes(b"m = 2\n")
    aside.rename(project.work / "pkg/other.py")
    _, _, err = project.cli("refresh")
    assert "deletes" not in err.lower(), err
    assert project.patch("fix-two").split(b"\n---\n", 1)[1] == before.split(b"\n---\n", 1)[1]
    # Two files missing: both named.
    project.cli("edit", "fix-two")
    (project.work / "pkg/other.py").unlink()
    (project.work / "pkg/mod.py").unlink()
    _, _, err = project.cli("refresh")
    assert "pkg/mod.py, pkg/other.py are missing from the edit worktree: fix-two.patch now " \
        "DELETES pkg/mod.py, pkg/other.py (the whole files)" in err, err


def test_refresh_of_a_new_file_moved_aside_says_the_patch_no_longer_creates_it(project):
    """A file the fix creates, moved aside in the edit's worktree: refresh wrote the fix
    without it, "refreshed (1 file(s))", exit 0, not a word: the new file's lines were gone
    from the patch. Written still (removing it is how a new file is taken out of a patch), it
    says so, naming the file and the way back, which gives the fix back as it was."""
    project.cli("new", "fix-new", "--file", "pkg/new.py", "--file", "pkg/mod.py", "--create")
    (project.work / "pkg/new.py").write_bytes(b"made = 1\n")
    (project.work / "pkg/mod.py").write_bytes(b"m = 2\n")
    project.cli("refresh")
    before = project.patch("fix-new")
    project.cli("edit", "fix-new")
    aside = project.root.parent / "new.py.aside"
    (project.work / "pkg/new.py").rename(aside)
    result = run_cli(project.root, "refresh", "--json")
    assert result.rc == 0 and json.loads(result.out)["drops_missing_files"] == ["pkg/new.py"]
    assert b"pkg/new.py" not in project.patch("fix-new")
    aside.rename(project.root.parent / "kept.py")
    # Said in the text output too, with the way back, which works as said.
    project.cli("edit", "fix-new")
    (project.root.parent / "kept.py").rename(project.work / "pkg/new.py")
    project.cli("add", "pkg/new.py")
    project.cli("refresh")
    assert project.patch("fix-new").split(b"\n---\n", 1)[1] == before.split(b"\n---\n", 1)[1]
    project.cli("edit", "fix-new")
    (project.work / "pkg/new.py").rename(aside)
    _, _, err = project.cli("refresh")
    assert "warning: pkg/new.py is missing from the edit worktree: fix-new.patch no longer " \
        "CREATES pkg/new.py (its lines are no longer in the patch); if you did not mean that, " \
        "`patchforge edit fix-new`, put it back (the copy you moved aside), `patchforge add " \
        "pkg/new.py` and `patchforge refresh` again" in err, err
    assert "DELETES" not in err, err


def test_refresh_of_a_deletion_a_later_patch_makes_again_is_no_refusal(project):
    """The series' end state is what the overlays hold: a file one patch deletes and a later
    one creates again is a file in the overlay, and refresh lets the deletion through."""
    project.cli("new", "drop", "--file", "pkg/other.py")
    (project.work / "pkg/other.py").unlink()
    _, _, err = project.cli("refresh")
    assert "warning: drop.patch now deletes pkg/other.py, a file of the upstream: `patchforge " \
        "overlays` refuses a series that deletes a file" in err, err
    project.cli("new", "again")
    project.cli("add", "pkg/other.py")
    (project.work / "pkg/other.py").write_bytes(b"made again\n")
    project.cli("refresh")
    project.cli("overlays")
    project.cli("edit", "drop")
    assert not (project.work / "pkg/other.py").exists()
    _, _, err = project.cli("refresh")
    assert "deletes" not in err, err
    assert (project.root / "overlays/up/pkg/other.py").read_bytes() == b"made again\n"


def test_a_rebase_that_would_move_a_deletion_the_overlays_refuse_never_starts(project):
    """A series that deletes a file the target has as the pin had it, in a project that writes
    overlays: the deletion moved cleanly and the write-out failed (exit 2) on the overlays'
    refusal, leaving a rebase in progress that only --abort could end (nothing can be edited
    during it). It is refused before anything starts, naming the patch and the file, with the
    way on; followed, the rebase goes through."""
    project.cli("overlays")
    project.deleting_patch()
    project.up.commit({"pkg/mod.py": b"m = 10\n"}, tag="v2")
    before = snapshot(project.root, skip_state=True, dirs=False)
    _, _, err = project.cli("rebase", "--to", "up=v2", expect=2)
    assert "up/drop-other.patch deletes pkg/other.py, which v2 has as v1 had it: the rebase " \
        "would move the deletion as it is, and its write-out, as `patchforge overlays`, " \
        "refuses a series that deletes a file" in err and "nothing was started" in err, err
    assert snapshot(project.root, skip_state=True, dirs=False) == before
    _, _, err = project.cli("rebase", "--abort", expect=2)
    assert "no rebase" in err, err
    # The way the hint gives.
    project.cli("edit", "drop-other")
    git(project.work, "checkout", "--", "pkg/other.py")
    (project.work / "pkg/other.py").write_bytes(b"")
    project.cli("refresh")
    project.cli("rebase", "--to", "up=v2")
    assert (project.root / "overlays/up/pkg/other.py").read_bytes() == b""


def test_a_conflicted_file_missing_at_a_content_stop_is_no_deletion(project):
    """At a content conflict (no modify/delete), the conflicted file moved aside in the worktree
    was taken by --continue as the resolution "delete the upstream's file": the one-line fix
    was written as a deletion of the whole file, "conflict resolved by hand", exit 0, and
    `status` was green. It is refused, exit 2, naming the file and the ways on, nothing written
    and the rebase still stopped; with the file back the resolution goes through."""
    project.fix("fix-other", {"pkg/other.py": b"x = 1\ny = 5\nz = 3\n"})
    project.up.commit({"pkg/other.py": OTHER_V2}, tag="v2")
    _, _, err = project.cli("rebase", "--to", "up=v2", expect=3)
    assert "conflict in pkg/other.py" in err and "modify/delete" not in err, err
    aside = project.root.parent / "other.py.aside"
    (project.work / "pkg/other.py").rename(aside)
    before = snapshot(project.root, skip_state=True, dirs=False)
    _, _, err = project.cli("rebase", "--continue", expect=2)
    assert f"pkg/other.py is missing from {project.work} (moved aside?): fix-other.patch " \
        "would be written deleting pkg/other.py (the whole file as the stop's base has it), " \
        "a deletion the patch does not make" in err, err
    assert "nothing was written, the stop is as it was" in err, err
    assert "`git checkout -- PATH` in the worktree gives it as at the stop's base" in err \
        and "`patchforge rebase --skip`" in err \
        and "`patchforge edit fix-other`, remove it and `patchforge refresh`" in err, err
    assert snapshot(project.root, skip_state=True, dirs=False) == before
    _, out, err = project.cli("status", expect=1)
    assert "a rebase is stopped at fix-other.patch" in out + err, out + err
    # The way on: the file back, resolved.
    aside.rename(project.work / "pkg/other.py")
    (project.work / "pkg/other.py").write_bytes(b"x = 1\ny = 50\nz = 3\n")
    project.cli("rebase", "--continue")
    moved = project.patch("fix-other")
    assert b"deleted file mode" not in moved and b"-y = 20\n+y = 50\n" in moved, moved.decode()
    assert project.cli("status")[0] == 0


def test_a_file_the_patch_creates_missing_at_a_stop_is_not_left_out(project):
    """A file the stopped patch creates, removed from the worktree, made --continue write the
    patch without it, reported resolved. Refused, naming the file and where its lines are;
    a file of the patch removed at a bring-back's content stop is refused alike."""
    project.cli("new", "fix-two", "--file", "pkg/other.py")
    project.cli("add", "pkg/new.py")
    (project.work / "pkg/other.py").write_bytes(b"x = 1\ny = 5\nz = 3\n")
    (project.work / "pkg/new.py").write_bytes(b"n = 1\n")
    project.cli("refresh", expect=None)
    assert b"new file mode" in project.patch("fix-two")
    project.up.commit({"pkg/other.py": OTHER_V2}, tag="v2")
    project.cli("rebase", "--to", "up=v2", expect=3)
    assert (project.work / "pkg/new.py").read_bytes() == b"n = 1\n"
    (project.work / "pkg/new.py").unlink()
    (project.work / "pkg/other.py").write_bytes(b"x = 1\ny = 50\nz = 3\n")
    _, _, err = project.cli("rebase", "--continue", expect=2)
    assert f"pkg/new.py is missing from {project.work} (moved aside?): fix-two.patch would be " \
        "written without pkg/new.py, which it creates" in err, err
    assert "re-create pkg/new.py (series/up/fix-two.patch has the patch's lines)" in err, err
    # Set aside, then brought back: its stop refuses the same.
    project.cli("rebase", "--skip", expect=1)
    project.cli("bring-back", "fix-two", expect=3)
    (project.work / "pkg/other.py").unlink()
    (project.work / "pkg/new.py").unlink()
    _, _, err = project.cli("bring-back", "--continue", expect=2)
    assert "pkg/other.py, pkg/new.py are missing from" in err \
        and "would be written deleting pkg/other.py" in err \
        and "re-create pkg/new.py (series/up/skipped/fix-two.patch has the patch's lines)" \
        in err and "`patchforge bring-back --abort`" in err, err
    assert project.series() == [] and b"new file mode" in project.patch("fix-two", "skipped")
    git(project.work, "checkout", "--", "pkg/other.py")
    (project.work / "pkg/other.py").write_bytes(b"x = 1\ny = 50\nz = 3\n")
    (project.work / "pkg/new.py").write_bytes(b"n = 1\n")
    project.cli("bring-back", "--continue")
    assert project.series() == ["fix-two.patch"]
    assert b"+n = 1\n" in project.patch("fix-two") and project.cli("status")[0] == 0
