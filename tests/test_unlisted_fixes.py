"""A patch file in series/<up>/ that its series does not list (a series edited by hand that lost
its line, `quilt delete` run on the series, a rename cut short): the commands that make
something to ship from the series or vouch for it (`overlays`, `overlays --check`,
`export --quilt`, `export --mbox`, `verify`, `verify --image`, `check`, `bump`, and
`rebase --to`, which would move the series without it) refuse, naming the file and how to go on, and write nothing; they
made a release without that fix, exit 0, where `status` and `lint` named it."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from helpers.cli import ok, run_cli, run_subprocess
from helpers.project import git_project
from helpers.snapshot import tree_bytes

SHIPPING = (["overlays"], ["overlays", "--check"], ["export", "--quilt", "OUT"],
            ["export", "--mbox", "OUT"], ["verify"],
            ["verify", "--image"], ["check"], ["check", "--run"], ["bump", "--to", "up=main"],
            ["bump", "--to", "up=main", "--dry-run"], ["rebase", "--to", "up=main"],
            ["rebase", "--to", "up=main", "--dry-run"])


def _three_fixes(tmp_path: Path) -> Path:
    """Upstream `up` with three fixes to a.py (new + refresh), its overlays written."""
    root, _ = git_project(tmp_path)
    for n in (2, 5, 9):
        ok(root, "new", f"fix-{n}", "--file", "a.py")
        work = root / ".patchforge" / "work" / "up" / "a.py"
        work.write_bytes(work.read_bytes().replace(b"line%d\n" % n, b"LINE%d\n" % n))
        ok(root, "refresh")
    ok(root, "overlays")
    return root


def _refused_everywhere(root: Path, tmp_path: Path, said: str) -> None:
    """Each shipping command exits 2 naming fix-9.patch and `said`, writing nothing."""
    before = tree_bytes(root, skip=(".patchforge",))
    for index, args in enumerate(SHIPPING):
        out = tmp_path / f"out-{index}"
        run = run_cli(root, *[str(out) if a == "OUT" else a for a in args])
        assert run.rc == 2, (args, run.text)
        assert "series/up/fix-9.patch: not listed in series/up/series" in run.err, (args, run.err)
        assert said in run.err, (args, run.err)
        assert not out.exists(), args
        assert tree_bytes(root, skip=(".patchforge",)) == before, args


def test_a_fix_whose_line_was_taken_from_the_series_by_hand_stops_every_release(tmp_path):
    root = _three_fixes(tmp_path)
    series = root / "series" / "up" / "series"
    series.write_bytes(b"fix-2.patch\nfix-5.patch\n")
    _refused_everywhere(root, tmp_path, "list it again in series/up/series (a line "
                                        "`fix-9.patch`")
    run = run_cli(root, "status")
    assert run.rc == 1 and "fix-9.patch" in run.out, run.text
    # Listed again: the release is what it was.
    series.write_bytes(b"fix-2.patch\nfix-5.patch\nfix-9.patch\n")
    ok(root, "overlays", "--check")
    # Moved to deleted/ on purpose: the release is made without it.
    series.write_bytes(b"fix-2.patch\nfix-5.patch\n")
    (root / "series" / "up" / "deleted").mkdir()
    (root / "series" / "up" / "fix-9.patch").rename(root / "series" / "up" / "deleted" /
                                                    "fix-9.patch")
    ok(root, "overlays")
    assert b"LINE9" not in (root / "overlays" / "up" / "a.py").read_bytes()
    assert b"LINE5" in (root / "overlays" / "up" / "a.py").read_bytes()


@pytest.mark.skipif(shutil.which("quilt") is None, reason="needs quilt")
def test_quilt_delete_run_on_the_series_stops_every_release(tmp_path):
    """`quilt delete` with QUILT_PATCHES at the series takes the line and leaves the file."""
    root = _three_fixes(tmp_path)
    proc = subprocess.run(["quilt", "delete", "fix-9.patch"], cwd=root, capture_output=True,
                          env={**os.environ, "QUILT_PATCHES": "series/up",
                               "QUILT_PC": str(tmp_path / "pc"), "QUILTRC": "/dev/null"})
    assert proc.returncode == 0, proc
    assert (root / "series" / "up" / "fix-9.patch").is_file()
    assert b"fix-9" not in (root / "series" / "up" / "series").read_bytes()
    _refused_everywhere(root, tmp_path, "or move it to series/up/deleted/ (or remove it)")


def test_the_copy_a_killed_rename_left_is_named_with_the_rename_that_finishes_it(tmp_path):
    """`rename fix-9 better` killed after better.patch was written, before the series named it:
    the shipping commands refuse, naming the rename that finishes it (never "list it": the
    fix twice); that rename run again lets them through."""
    prepared = _three_fixes(tmp_path)
    for n in range(1, 50):
        root = tmp_path / f"write-{n}"
        shutil.copytree(prepared, root, symlinks=True)
        series = root / "series" / "up"
        proc = run_subprocess(root, "rename", "fix-9", "better",
                              env={"PATCHFORGE_FAULT": f"write:{n}"})
        if proc.returncode == 0:
            break
        assert proc.returncode == 137, (n, proc.stderr.decode())
        if (series / "better.patch").exists() and \
                b"better.patch" not in (series / "series").read_bytes():
            run = run_cli(root, "overlays")
            assert run.rc == 2, (n, run.text)
            assert "the copy of fix-9.patch a `patchforge rename fix-9 better` cut short" \
                in run.err and "list it" not in run.err, (n, run.err)
            ok(root, "rename", "fix-9", "better")
            ok(root, "overlays")
            return
    pytest.fail("no kill left better.patch unlisted")


def _cut_short_write_out(tmp_path: Path, monkeypatch) -> tuple[Path, Path, Path]:
    """A rebase whose fix `landed` landed upstream, killed at each rename of its write-out
    until series/up/landed.patch is left beside a series that no longer lists it, the
    journal standing: returns that project, a copy the rebase moved unkilled and the
    project before the rebase."""
    from helpers.project import Stack
    from helpers.upstream import BASE, Upstream, with_lines

    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    upstream = Upstream(tmp_path / "up", {"pkg/mod.py": BASE, "pkg/other.py": b"x = 1\n"})
    stack = Stack(tmp_path / "template")
    stack.add_upstream("up", upstream)
    stack.add_patch("up", "clean", {"pkg/other.py": b"x = 1\ny = 2\n"})
    landed = with_lines({3: b"def f3():\n    return 'three, fixed upstream too'\n\n"})
    stack.add_patch("up", "landed", {"pkg/mod.py": landed})
    stack.cli("overlays")
    args = ["rebase", "--to", f"up={upstream.commit({'pkg/mod.py': landed})}"]
    moved = tmp_path / "moved"
    shutil.copytree(stack.root, moved, symlinks=True)
    run_subprocess(moved, *args, expect=0)
    for n in range(1, 40):
        root = tmp_path / f"renamed-{n}"
        shutil.copytree(stack.root, root, symlinks=True)
        if run_subprocess(root, *args, env={"PATCHFORGE_FAULT": f"renamed:{n}"}).returncode == 0:
            break
        series = root / "series" / "up"
        if (root / ".patchforge" / "rebase" / "journal.json").exists() and \
                (series / "landed.patch").exists() and \
                b"landed" not in (series / "series").read_bytes():
            return root, moved, stack.root
    pytest.fail("no kill left landed.patch unlisted beside the journal")


def test_the_file_a_rebase_cut_short_takes_out_is_named_with_its_continue_and_abort(
        tmp_path, monkeypatch):
    """A rebase killed in its write-out after the new series no longer listed landed.patch
    and before the file went: the commands that read the series said "list it again in
    series/up/series" (then `rebase --continue` refused: its new series was gone) or "move it
    to deleted/" (the landed fix kept in deleted/ and upstreamed/ both). Now they name the
    rebase: `rebase --continue` finishes it and `--abort` undoes it, and each ends right."""
    root, moved, start = _cut_short_write_out(tmp_path, monkeypatch)
    skip = (".patchforge", ".git")
    said = "`patchforge rebase --continue` finishes it, `patchforge rebase --abort` undoes it"
    before = tree_bytes(root, skip=(".patchforge",))
    for args in (["overlays"], ["overlays", "--check"], ["verify"], ["check"]):
        run = run_cli(root, *args)
        assert run.rc == 2, (args, run.text)
        assert "series/up/landed.patch: not listed in series/up/series: a rebase cut short" \
            in run.err and said in run.err, (args, run.err)
        assert "list it" not in run.err and "deleted/" not in run.err, (args, run.err)
    for args in (["bump", "up", "--dry-run"], ["bump", "up"]):
        # The rebase first, as before a patch file no series lists was asked about.
        run = run_cli(root, *args)
        assert run.rc == 2 and "a rebase is in progress (cut short while writing out its " \
            "result)" in run.err and said in run.err and "--skip" not in run.err, (args, run.err)
    for args in (["status"], ["lint"]):
        run = run_cli(root, *args)
        assert run.rc == 1 and said in run.out, (args, run.text)
        assert "list it" not in run.out and "deleted/" not in run.out, (args, run.out)
    assert tree_bytes(root, skip=(".patchforge",)) == before
    # Followed either way: the series the rebase makes, or the one it started from.
    undone = tmp_path / "undone"
    shutil.copytree(root, undone, symlinks=True)
    run_subprocess(root, "rebase", "--continue", expect=0)
    assert tree_bytes(root, skip=skip) == tree_bytes(moved, skip=skip)
    assert not (root / "series" / "up" / "landed.patch").exists()
    assert (root / "series" / "up" / "upstreamed" / "landed.patch").is_file()
    ok(root, "overlays", "--check")
    run_subprocess(undone, "rebase", "--abort", expect=0)
    assert tree_bytes(undone, skip=skip) == tree_bytes(start, skip=skip)
    assert (undone / "series" / "up" / "series").read_bytes() == b"clean.patch\nlanded.patch\n"
    assert not (undone / "series" / "up" / "upstreamed" / "landed.patch").exists()
    ok(undone, "overlays", "--check")


def test_a_move_of_a_series_that_forgot_a_fix_is_refused_before_anything_moves(tmp_path):
    """A series edited by hand that lost fix-9's line: `rebase --to` moved fix-2 and fix-5 onto
    upstream's new commit, exit 0, leaving fix-9.patch on the old pin beside them (and its
    dry run showed that move as all clean), where the next `overlays` refused. It refuses as
    `overlays` does, exit 2, naming the file, before anything is fetched or written; an
    upstream the move leaves where it is does not stop another's move; listed again, fix-9
    moves with the others."""
    from helpers.git import commit_files
    from helpers.project import add_git_upstream, lock_doc
    from helpers.upstream import Upstream

    root = _three_fixes(tmp_path)
    other = Upstream(tmp_path / "two-upstream", {"c.py": b"c = 1\n"})
    add_git_upstream(root, "two", other.path, "main")
    commit_files(tmp_path / "up-upstream", {"pkg/b.py": b"x = 1\ny = 2\nz = 4\n"}, "z is 4")
    moved = commit_files(other.path, {"c.py": b"c = 2\n"}, "c is 2")
    series = root / "series" / "up" / "series"
    series.write_bytes(b"fix-2.patch\nfix-5.patch\n")
    before = tree_bytes(root, skip=(".patchforge",))
    for extra in ((), ("--dry-run",), ("--json",)):
        run = run_cli(root, "rebase", "--to", "up=main", *extra)
        assert run.rc == 2, (extra, run.text)
        assert "series/up/fix-9.patch: not listed in series/up/series" in run.err, run.err
        assert "list it again in series/up/series (a line `fix-9.patch`" in run.err, run.err
        assert tree_bytes(root, skip=(".patchforge",)) == before, extra
        assert not (root / ".patchforge" / "rebase" / "journal.json").exists(), extra
    # Another upstream's move leaves up's series as it is: not stopped by it.
    ok(root, "rebase", "--to", "two=main")
    assert lock_doc(root)["upstreams"]["two"]["commit"] == moved
    assert run_cli(root, "status").rc == 1
    series.write_bytes(b"fix-2.patch\nfix-5.patch\nfix-9.patch\n")
    ok(root, "rebase", "--to", "up=main")
    pin = lock_doc(root)["upstreams"]["up"]["commit"]
    for n in (2, 5, 9):
        assert f"Base: {pin}".encode() in (root / "series" / "up" / f"fix-{n}.patch").read_bytes()
    assert b"LINE9" in (root / "series" / "up" / "fix-9.patch").read_bytes()


def test_the_commands_that_build_on_the_series_say_a_fix_it_forgot(tmp_path):
    """`edit`, `new` and `refresh` build on the series as listed: with fix-9's line taken out by
    hand, each made its worktree (or wrote its patch) on the series without it and said
    nothing, exit 0. Each says it in a note naming the file and the way on (the work goes on:
    nothing of it is shipped); with the line there, none says it."""
    root = _three_fixes(tmp_path)
    series = root / "series" / "up" / "series"
    note = "series/up/fix-9.patch: not listed in series/up/series: the series is read " \
        "without it here"
    way = "list it again in series/up/series (a line `fix-9.patch`"
    for listed in (b"fix-2.patch\nfix-5.patch\n", b"fix-2.patch\nfix-5.patch\nfix-9.patch\n"):
        series.write_bytes(listed)
        said = [run_cli(root, "edit", "fix-5")]
        work = root / ".patchforge" / "work" / "up" / "a.py"
        work.write_bytes(work.read_bytes().replace(b"line6\n", b"LINE6\n"))
        said.append(run_cli(root, "refresh"))
        said.append(run_cli(root, "new", "fix-10", "--file", "a.py"))
        ok(root, "edit", "--close")
        for run in said:
            assert run.rc == 0, run.text
            assert (note in run.err and way in run.err) is (b"fix-9" not in listed), run.text
        assert b"LINE6" in (root / "series" / "up" / "fix-5.patch").read_bytes()
        ok(root, "delete", "fix-10")
