"""A patch that deletes an upstream file, brought into a project that writes overlays by every
way other than a worktree's change: `import quilt` (with and without --update, through the real
quilt), `import git` (a real commit), `import mbox` (`git format-patch`), a clean `bring-back`,
and a patch file copied into the series by hand (lint).

An overlay cannot delete a file in the image, so `overlays` refuses a series that deletes one;
`refresh`, `rebase --continue` and `rebase --to` refused to make one, but these ways let it in
with exit 0, after which `status` and `lint` passed and only `overlays` failed, naming no way
back. Each is now refused where the patch comes in (one check,
overlay.refuse_series_removals), exit 2, naming the patch's file and the deleted path,
nothing written; lint reports one already listed."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from helpers.cli import run_cli
from helpers.env import need_tool
from helpers.git import git
from helpers.project import add_patch_file
from helpers.snapshot import snapshot
from helpers.upstream import diff_of
from test_modify_delete import Project as Stack


class Project(Stack):
    """test_modify_delete's upstream (real git: pkg/mod.py, pkg/other.py, tagged v1) and
    project, with one fix and overlays/ generated."""

    def __init__(self, tmp_path: Path, *, overlays: bool = True) -> None:
        super().__init__(tmp_path)
        self.tmp = tmp_path
        self.fix("fix-mod", {"pkg/mod.py": b"m = 2\n"})
        if overlays:
            self.cli("overlays")

    def files(self) -> dict:
        """The project as committed (the series, patches, lock, overlays): what a refused
        command must leave byte for byte."""
        return snapshot(self.root, skip_state=True)

    def vendor(self, change: str = "delete") -> Path:
        """A clone of the upstream with one commit taking pkg/other.py away (`git rm`, or
        `git mv` to pkg/renamed.py, which `git format-patch` writes as a rename)."""
        vendor = self.tmp / "vendor"
        git(self.tmp, "clone", "-q", str(self.up.path), str(vendor))
        if change == "delete":
            git(vendor, "rm", "-q", "pkg/other.py")
        else:
            git(vendor, "mv", "pkg/other.py", "pkg/renamed.py")
        git(vendor, "-c", "user.name=Vendor", "-c", "user.email=v@example.com",
            "commit", "-qm", "Drop other")
        return vendor


def deleting_diff(project: Project) -> bytes:
    return project.up.diff({"pkg/other.py": None})


def header(project: Project) -> bytes:
    return (f"Description: drop other\nAuthor: t <t@example.com>\nUpstream: up\n"
            f"Upstream-Status: Pending\nBase: {project.up.base}\n\n---\n").encode()


@pytest.fixture
def project(tmp_path):
    return Project(tmp_path)


def test_import_quilt_update_of_a_quilt_patch_deleting_an_upstream_file_is_refused(project):
    """`quilt new`, `quilt add pkg/other.py`, the file removed, `quilt refresh`: taken back with
    exit 0 into a project that writes overlays, `status` and `lint` 0, `overlays` exit 2 naming
    the series, not where the patch came from. Refused, exit 2, naming quilt's patch file and
    the path with the lines of quilt's patch file and series file, nothing written; the same
    quilt patch keeping the file (emptied) is taken."""
    need_tool("quilt")
    exported = project.tmp / "q"
    project.cli("export", "--quilt", str(exported))
    checkout = project.tmp / "checkout"
    git(project.tmp, "clone", "-q", str(project.up.path), str(checkout))
    env = dict(os.environ, QUILT_PATCHES=str(exported), QUILTRC=str(project.tmp / "quiltrc"),
               EDITOR="false")
    (project.tmp / "quiltrc").write_text("")

    def quilt(*args: str) -> None:
        proc = subprocess.run(["quilt", *args], cwd=checkout, env=env, capture_output=True)
        assert proc.returncode == 0, (args, proc.stdout, proc.stderr)

    quilt("push", "-a")
    quilt("new", "drop-other.patch")
    quilt("add", "pkg/other.py")
    (checkout / "pkg/other.py").unlink()
    quilt("refresh")
    before = project.files()
    _, _, err = project.cli("import", "quilt", str(exported), "--update", expect=2)
    # Named with the line of quilt's patch file that deletes it and the line of quilt's
    # series that lists the patch (both were left out).
    section = next(no for no, line in enumerate(
        (exported / "drop-other.patch").read_bytes().splitlines(), 1)
        if line.startswith(b"--- ") and b"pkg/other.py" in line)
    assert f"{exported / 'drop-other.patch'}:{section}: patch drop-other.patch (listed at " \
        f"{exported / 'series'}:2): deletes pkg/other.py, a " \
        "file of the up upstream that no later patch makes again, and this project writes " \
        "overlays, which cannot delete a file in the image" in err, err
    assert "nothing was taken back" in err and "changed as the image needs" in err, err
    assert project.files() == before
    project.cli("lint", "--no-forge")
    project.cli("overlays")
    # Kept in quilt, emptied: taken back, and the overlays carry the empty file.
    (checkout / "pkg/other.py").write_bytes(b"")
    quilt("refresh")
    project.cli("import", "quilt", str(exported), "--update")
    project.cli("overlays")
    assert (project.root / "overlays/up/pkg/other.py").read_bytes() == b""


@pytest.mark.parametrize("how", ["quilt", "git", "mbox", "mbox-rename"])
def test_an_import_of_a_patch_deleting_an_upstream_file_is_refused(project, how):
    """`import quilt DIR`, `import git RANGE` and `import mbox FILE` of a patch deleting
    pkg/other.py (or, `git format-patch` of a `git mv`, renaming it away) listed it, exit 0, in a project whose `overlays` then refused
    the series. Refused, exit 2, naming where the patch came from and the path, nothing
    written."""
    vendor = project.vendor("rename" if how == "mbox-rename" else "delete")
    if how == "quilt":
        quilt_dir = project.tmp / "quilt"
        quilt_dir.mkdir()
        (quilt_dir / "drop-other.patch").write_bytes(header(project) + deleting_diff(project))
        (quilt_dir / "series").write_text("drop-other.patch\n")
        args = ["import", "quilt", str(quilt_dir)]
        where = f"{quilt_dir / 'drop-other.patch'}:8: patch drop-other.patch"
    elif how.startswith("mbox"):
        mbox = project.tmp / "drop.mbox"
        mbox.write_bytes(subprocess.run(["git", "format-patch", "-1", "--stdout"], cwd=vendor,
                                        check=True, capture_output=True).stdout)
        args = ["import", "mbox", str(mbox)]
        where = f"{mbox} (message 1): patch drop-other.patch"
    else:
        args = ["import", "git", "HEAD~1..HEAD", "--repo", str(vendor)]
        sha = git(vendor, "rev-parse", "HEAD").strip()
        where = f"{vendor}: commit {sha}: patch drop-other.patch"
    before = project.files()
    _, _, err = project.cli(*args, expect=2)
    what = "renames pkg/other.py to pkg/renamed.py" if how == "mbox-rename" else \
        "deletes pkg/other.py"
    assert f"{where}: {what}, a file of the up upstream that no later patch makes again, and " \
        "this project writes overlays, which cannot delete a file in the image (`patchforge " \
        "overlays` refuses a series that deletes one); nothing was imported" in err, err
    assert project.files() == before
    project.cli("overlays", "--check")


def test_an_import_deleting_a_file_is_taken_where_no_overlays_are_made(tmp_path):
    """A project without overlays/ carries a deletion as git and quilt do: the import goes
    through (and lint, with no overlays to make, says nothing of it)."""
    project = Project(tmp_path, overlays=False)
    vendor = project.vendor()
    project.cli("import", "git", "HEAD~1..HEAD", "--repo", str(vendor))
    assert b"deleted file mode" in (project.root / "series/up/drop-other.patch").read_bytes()
    run = run_cli(project.root, "lint", "--no-forge", "--json")
    assert "pkg/other.py" not in run.out, run.out


def test_a_clean_bring_back_of_a_fix_deleting_an_upstream_file_is_refused(project):
    """A skipped fix that deletes pkg/other.py and moves onto the pin cleanly was written into
    the series, exit 0 (a `bring-back --continue` refused the same deletion). Refused, exit 2,
    naming the skipped file, its line and the path; it stays in skipped/."""
    skipped = project.root / "series/up/skipped/drop-other.patch"
    skipped.parent.mkdir(parents=True)
    skipped.write_bytes(header(project) + deleting_diff(project))
    before = project.files()
    _, _, err = project.cli("bring-back", "drop-other", expect=2)
    assert f"{skipped}:8: patch drop-other.patch: deletes pkg/other.py, a file of the up " \
        "upstream that no later patch makes again" in err, err
    assert "it stays in skipped/" in err, err
    assert project.files() == before


def test_lint_reports_a_listed_patch_deleting_an_upstream_file(project):
    """A deleting patch copied into the series by hand (or listed before overlays/ was made)
    passed lint, exit 0, and `overlays` refused the series. lint reports it, an error naming
    the patch and the path, exit 1; a later patch making the file again is no finding."""
    add_patch_file(project.root, "up", "drop-other.patch", header(project) + deleting_diff(project))
    run = run_cli(project.root, "lint", "--no-forge", "--json")
    assert run.rc == 1, run.text
    found = [f for f in json.loads(run.out)["findings"] if f["check"] == "overlays"]
    assert [(f["patch"], f["severity"]) for f in found] == [("up/drop-other.patch", "error")], \
        found
    assert found[0]["message"].startswith(
        "deletes pkg/other.py, a file of the upstream that no later patch makes again: this "
        "project writes overlays, which cannot delete a file in the image"), found
    assert "`patchforge edit drop-other`" in found[0]["message"], found
    text = run_cli(project.root, "lint", "--no-forge")
    assert text.rc == 1 and "up/drop-other.patch" in text.out and "pkg/other.py" in text.out
    # Made again by a later patch: the series' end state has the file, the overlays carry it.
    creation = diff_of(project.tmp / "scratch", "pkg/other.py", None, b"made again\n")
    add_patch_file(project.root, "up", "again.patch", header(project) + creation)
    run = run_cli(project.root, "lint", "--no-forge", "--json")
    assert not [f for f in json.loads(run.out)["findings"] if f["check"] == "overlays"
                and "deletes" in f["message"]], run.out
    project.cli("overlays")
    assert (project.root / "overlays/up/pkg/other.py").read_bytes() == b"made again\n"


def test_deleting_the_patch_that_made_a_deleted_file_again_says_the_series_now_deletes_it(project):
    """drop-other deletes pkg/other.py and again.patch makes it again: the series' end state
    has the file and `overlays` writes it. `delete again` took again.patch out with exit 0 and
    no word, leaving a series `overlays` refuses. The patch still goes (the user asked), but
    the command says the series now deletes pkg/other.py, naming drop-other.patch, exit 1."""
    add_patch_file(project.root, "up", "drop-other.patch", header(project) + deleting_diff(project))
    creation = diff_of(project.tmp / "scratch", "pkg/other.py", None, b"made again\n")
    add_patch_file(project.root, "up", "again.patch", header(project) + creation)
    project.cli("overlays")
    _, _, err = project.cli("delete", "again", expect=1)
    assert "warning: without again the series deletes pkg/other.py (drop-other.patch: again " \
        "made it again)" in err, err
    assert "`patchforge edit drop-other`" in err, err
    assert project.root.joinpath("series/up/series").read_text().split() == \
        ["fix-mod.patch", "drop-other.patch"]
    assert (project.root / "series/up/deleted/again.patch").exists()
    # The series itself is what `overlays` refuses: status says so, needing attention.
    _, out, _ = project.cli("status", "--json", expect=1)
    document = json.loads(out)
    drop = next(p for p in document["patches"] if p["name"] == "drop-other.patch")
    assert drop["state"] == "applies" and drop["needs_attention"], drop
    assert drop["evidence"][0].startswith("deletes pkg/other.py, an upstream file no later "
                                          "patch makes again: `overlays` refuses the series"), drop
    project.cli("overlays", expect=2)


def test_status_says_a_listed_patch_deleting_an_upstream_file_needs_attention(project):
    """A deleting patch copied into the series by hand: `status` said "all 2 patches apply",
    exit 0, while `overlays` refuses the series. It needs attention there (exit 1, the path
    and the way on in its evidence); in a project that makes no overlays it applies, exit 0,
    as git and quilt carry a deletion."""
    add_patch_file(project.root, "up", "drop-other.patch", header(project) + deleting_diff(project))
    _, out, _ = project.cli("status", expect=1)
    assert "up/drop-other.patch  applies  deletes pkg/other.py" in out, out
    assert "`patchforge edit drop-other`, put pkg/other.py back" in out, out
    assert "1 patch needs attention" in out, out
    # Without overlays/ the series is what the project carries: nothing to say.
    (project.root / "overlays").rename(project.tmp / "overlays-aside")
    _, out, _ = project.cli("status")
    assert "deletes pkg/other.py" not in out, out


@pytest.mark.parametrize("how", ["git", "mbox"])
def test_an_import_of_a_commit_making_a_symlink_is_refused_and_lint_and_status_name_one(
        project, how):
    """`import git` and `import mbox` of a commit that also adds a symlink (`ln -s`) listed it,
    exit 0, and `status` and `lint` stayed green while `overlays` refused the series ("an
    overlay file is mounted or copied as a file, never as a link"). Refused where it comes in,
    exit 2, naming the commit (or message) and the link, nothing written; one copied into the
    series by hand is an `overlays` error of lint and needs attention in status."""
    vendor = project.tmp / "vendor"
    git(project.tmp, "clone", "-q", str(project.up.path), str(vendor))
    (vendor / "pkg/mod.py").write_bytes(b"m = 3\n")
    os.symlink("mod.py", vendor / "pkg/link.py")
    git(vendor, "add", "-A")
    git(vendor, "-c", "user.name=Vendor", "-c", "user.email=v@example.com", "commit", "-qm",
        "Fix mod and link it")
    if how == "mbox":
        mbox = project.tmp / "link.mbox"
        mbox.write_bytes(subprocess.run(["git", "format-patch", "-1", "--stdout"], cwd=vendor,
                                        check=True, capture_output=True).stdout)
        args = ["import", "mbox", str(mbox)]
    else:
        args = ["import", "git", "HEAD~1..HEAD", "--repo", str(vendor)]
    before = project.files()
    _, _, err = project.cli(*args, expect=2)
    assert "makes pkg/link.py a symlink, and this project writes overlays: an overlay file is " \
        "mounted or copied as a file, never as a link" in err and "nothing was imported" in err, \
        err
    assert project.files() == before
    # Copied in by hand: lint and status say what `overlays` will refuse.
    diff = subprocess.run(["git", "format-patch", "-1", "--stdout"], cwd=vendor, check=True,
                          capture_output=True).stdout
    add_patch_file(project.root, "up", "link.patch",
                   header(project) + diff[diff.index(b"diff --git"):])
    run = run_cli(project.root, "lint", "--no-forge", "--json")
    found = [f for f in json.loads(run.out)["findings"] if f["check"] == "overlays"]
    assert run.rc == 1 and [f["patch"] for f in found] == ["up/link.patch"], run.text
    assert found[0]["message"].startswith("makes pkg/link.py a symlink"), found
    status = run_cli(project.root, "status", "--json")
    assert status.rc != 0, status.text
    (entry,) = [p for p in json.loads(status.out)["patches"] if p["name"] == "link.patch"]
    assert any("makes pkg/link.py a symlink" in e for e in entry["evidence"]), entry


LATIN1 = os.fsdecode(b"pkg/caf\xe9.py")


def test_a_file_whose_name_is_not_utf8_is_refused_where_it_comes_in_not_at_overlays(project):
    """A fix of an upstream file named in Latin-1 (`pkg/caf\\xe9.py`): `refresh`, `lint` and
    `status` took it, exit 0, and only `overlays` refused the series ("cannot mount ... with
    compose: the name is not UTF-8"). Where the project writes overlays, refresh refuses it
    (exit 2, the name as git quotes it, the patch and worktree kept), an import refuses it
    (nothing written), and one copied in by hand is an `overlays` error of lint and needs
    attention in status."""
    up = project.up.path
    (up / LATIN1).write_bytes(b"x = 1\n")
    git(up, "add", "-A")
    git(up, "-c", "user.name=U", "-c", "user.email=u@example.com", "commit", "-qm", "latin-1")
    git(up, "tag", "v1b")
    project.cli("rebase", "--to", "up=v1b")
    project.cli("overlays")
    shown = '"pkg/caf\\351.py"'
    # refresh
    project.cli("new", "fix-cafe", f"--file={LATIN1}")
    (project.work / LATIN1).write_bytes(b"x = 2\n")
    before = project.files()
    _, _, err = project.cli("refresh", expect=2)
    assert f"{shown} changed in" in err and "its name is not UTF-8" in err, err
    assert "\\udce9" not in err, err
    assert project.files() == before and (project.work / LATIN1).read_bytes() == b"x = 2\n"
    project.cli("edit", "--close", "--discard")
    project.cli("delete", "fix-cafe")
    # an import of a commit changing it
    vendor = project.tmp / "vendor"
    git(project.tmp, "clone", "-q", str(up), str(vendor))
    (vendor / LATIN1).write_bytes(b"x = 3\n")
    git(vendor, "-c", "user.name=Vendor", "-c", "user.email=v@example.com", "commit", "-qam",
        "Fix cafe")
    before = project.files()
    _, _, err = project.cli("import", "git", "HEAD~1..HEAD", "--repo", str(vendor), expect=2)
    assert f"writes {shown}, and this project writes overlays" in err and \
        "nothing was imported" in err, err
    assert project.files() == before
    # an overlay of it: named by the overlay file given (before, by series/up/fix-cafe.patch,
    # a file never written)
    overlay = project.tmp / "cafe-overlay.py"
    overlay.write_bytes(b"x = 4\n")
    _, _, err = project.cli("import", "overlay", str(overlay), "--path", LATIN1, "--name",
                            "fix-cafe", expect=2)
    assert err.startswith(f"patchforge: error: {overlay}: patch fix-cafe.patch: writes {shown}"), err
    assert "series/up" not in err and project.files() == before
    # copied in by hand
    diff = subprocess.run(["git", "format-patch", "-1", "--stdout"], cwd=vendor, check=True,
                          capture_output=True).stdout
    add_patch_file(project.root, "up", "cafe.patch",
                   header(project).replace(project.up.base.encode(),
                                           git(up, "rev-parse", "v1b").strip().encode())
                   + diff[diff.index(b"diff --git"):])
    run = run_cli(project.root, "lint", "--no-forge", "--json")
    found = [f for f in json.loads(run.out)["findings"] if f["check"] == "overlays"]
    assert run.rc == 1 and [f["patch"] for f in found] == ["up/cafe.patch"], run.text
    assert found[0]["message"].startswith(f"writes {shown}"), found
    status = run_cli(project.root, "status", "--json")
    assert status.rc != 0, status.text
    (entry,) = [p for p in json.loads(status.out)["patches"] if p["name"] == "cafe.patch"]
    assert any(f"writes {shown}" in e for e in entry["evidence"]), entry
    # `overlays` refuses it naming the file as git quotes it (it said b'./overlays/...\xe9.py',
    # a Python bytes repr).
    _, _, err = project.cli("overlays", expect=2)
    assert "cannot mount" in err and "caf\\351.py" in err and "b'" not in err, err


def test_a_fix_following_upstream_to_a_non_utf8_name_is_refused_naming_abort(project):
    """Upstream renames the fixed file to a Latin-1 name and the fix follows it: `rebase --to`
    failed at its write-out with "cannot mount b'./overlays/up/pkg/caf\\xe9.py'" (a Python
    bytes repr), and its hint said to drop the patch and `--continue`, which a rebase in
    progress refuses. It names the fix and the file as git quotes it, says nothing was
    written and that `--abort` is the way out, which puts everything back."""
    up = project.up.path
    git(up, "mv", "pkg/mod.py", LATIN1)
    git(up, "-c", "user.name=U", "-c", "user.email=u@example.com", "commit", "-qm", "rename")
    git(up, "tag", "v2")
    before = project.files()
    _, _, err = project.cli("rebase", "--to", "up=v2", expect=2)
    assert 'up/fix-mod.patch would write "pkg/caf\\351.py" after the move' in err and \
        "nothing was written" in err, err
    assert "b'" not in err and "rebase --continue" not in err and \
        "`patchforge rebase --abort` puts everything back" in err, err
    project.cli("rebase", "--abort")
    assert project.files() == before



def _renamed_to_latin1(project, *, conflicting_other: bool = False) -> None:
    """Upstream's v2: pkg/mod.py (which fix-mod changes) renamed to a Latin-1 name; with
    `conflicting_other`, pkg/other.py's line changed too."""
    up = project.up.path
    git(up, "mv", "pkg/mod.py", LATIN1)
    if conflicting_other:
        (up / "pkg/other.py").write_bytes(b"x = 1\ny = 20\nz = 3\n")
        git(up, "add", "pkg/other.py")
    git(up, "-c", "user.name=U", "-c", "user.email=u@example.com", "commit", "-qm", "rename")
    git(up, "tag", "v2")


def test_a_dry_run_and_status_against_say_a_fix_following_upstream_to_a_non_utf8_name_is_refused(
        project):
    """`rebase --to --dry-run` and `status --against` said the move clean (exit 0, "follows
    pkg/mod.py -> pkg/caf\\udce9.py" with a surrogate escape) while the real run refuses it.
    Both say it: the dry run's row is a conflict naming the fix, the file as git quotes it
    and that `rebase --to` is refused (exit 1); status needs attention with the same words."""
    _renamed_to_latin1(project)
    shown = '"pkg/caf\\351.py"'
    said = f"up/fix-mod.patch would write {shown} after the move, and this project writes overlays"
    before = project.files()
    run = run_cli(project.root, "rebase", "--to", "up=v2", "--dry-run", "--json")
    assert run.rc == 1, run.text
    (entry,) = json.loads(run.out)["patches"]
    assert entry["action"] == "conflict" and said in entry["detail"] and \
        "`rebase --to` is refused here" in entry["detail"], entry
    assert f"follows pkg/mod.py -> {shown}" in entry["detail"], entry
    run = run_cli(project.root, "status", "--against", "up=v2", "--json")
    assert run.rc == 1, run.text
    (entry,) = json.loads(run.out)["patches"]
    assert entry["needs_attention"] and entry["rebase"] == "stop", entry
    assert any(said in e and "`rebase --to` refuses the move" in e
               for e in entry["evidence"]), entry
    assert project.files() == before


def test_a_fix_following_upstream_to_a_non_utf8_name_is_refused_before_a_later_stop(project):
    """The refusal came at the write-out: a later fix's conflict stopped the walk first (exit
    3, a worktree to resolve), and the resolution's --continue was then refused, the work
    thrown away. The walk refuses the move where it meets it (exit 2, --abort named), before
    the later fix's stop, and --abort puts everything back."""
    project.fix("fix-other", {"pkg/other.py": b"x = 1\ny = 2000\nz = 3\n"})
    project.cli("overlays")
    _renamed_to_latin1(project, conflicting_other=True)
    before = project.files()
    _, _, err = project.cli("rebase", "--to", "up=v2", expect=2)
    assert 'up/fix-mod.patch would write "pkg/caf\\351.py" after the move' in err and \
        "nothing was written" in err and "`patchforge rebase --abort` puts everything back" \
        in err, err
    assert "rebase --continue" not in err and not project.work.exists(), err
    project.cli("rebase", "--abort")
    assert project.files() == before
