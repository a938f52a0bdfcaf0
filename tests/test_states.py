"""The states of a project (idle, editing NAME, rebase stopped at NAME) and what each command may
do in each: run as a user would, in orders that used to lose a fix, on a real git upstream."""
from __future__ import annotations

import json
import re
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers.cli import ok, run_cli
from helpers.snapshot import snapshot
from helpers.upstream import Upstream

LINES = [f"def f{i}():\n    return {i}\n\n".encode() for i in range(20)]
BASE = b"".join(LINES)


def text(replacements: dict[int, bytes]) -> bytes:
    return b"".join(replacements.get(i, line) for i, line in enumerate(LINES))


class Project:
    def __init__(self, tmp_path: Path) -> None:
        self.up = Upstream(tmp_path / "up", {"pkg/mod.py": BASE, "pkg/other.py": b"x = 1\n"})
        self.root = tmp_path / "project"
        self.root.mkdir()
        self.cli("init", "--standalone", str(self.root))
        self.cli("upstream", "add", "up", "--git", str(self.up.path), "--at", self.up.base,
                 "--install-root", "/opt/site")

    def cli(self, *args: str, expect: int | None = 0) -> tuple[int, str, str]:
        result = run_cli(self.root, *args)
        code, out, err = result.rc, result.out, result.err
        if expect is not None:
            assert code == expect, f"patchforge {' '.join(args)} -> {code}\n{out}\n{err}"
        return code, out, err

    @property
    def work(self) -> Path:
        return self.root / ".patchforge" / "work" / "up"

    def fix(self, name: str, files: dict[str, bytes]) -> None:
        """A new patch made the quilt way: new, change the worktree, refresh."""
        self.cli("new", name, *[f"--file={rel}" for rel in files])
        for rel, data in files.items():
            (self.work / rel).write_bytes(data)
        self.cli("refresh")

    def patch(self, name: str, where: str = "") -> bytes:
        sub = f"{where}/" if where else ""
        return (self.root / "series" / "up" / f"{sub}{name}.patch").read_bytes()

    def series(self) -> list[str]:
        path = self.root / "series" / "up" / "series"
        return path.read_text().split() if path.exists() else []


@pytest.fixture
def project(tmp_path):
    return Project(tmp_path)


def stopped_on_a(project: Project) -> str:
    """fix-a and fix-b, then upstream changes fix-a's line: the rebase stops at fix-a."""
    project.fix("fix-a", {"pkg/mod.py": text({3: b"def f3():\n    return -3\n\n"})})
    project.fix("fix-b", {"pkg/mod.py": text({3: b"def f3():\n    return -3\n\n",
                                              12: b"def f12():\n    return -12\n\n"})})
    target = project.up.commit({"pkg/mod.py": text({3: b"def f3():\n    return 33\n\n"})})
    _, _, err = project.cli("rebase", "--to", f"up={target}", expect=3)
    assert "fix-a.patch" in err
    return target


def test_edit_of_another_patch_during_a_stop_is_refused_and_the_resolution_survives(project):
    stopped_on_a(project)
    resolved = text({3: b"def f3():\n    return -33\n\n"})
    (project.work / "pkg/mod.py").write_bytes(resolved)
    code, _, err = project.cli("edit", "fix-b", expect=2)
    assert "stopped at fix-a.patch" in err and "rebase --continue" in err
    assert (project.work / "pkg/mod.py").read_bytes() == resolved
    for refused in (("new", "fix-c"), ("delete", "fix-b"), ("move", "fix-b", "--first"),
                    ("refresh",), ("overlays",), ("upstream", "pin", "up", "--at",
                                                  project.up.base)):
        code, _, err = project.cli(*refused, expect=2)
        assert "stopped at fix-a.patch" in err, refused
    assert (project.work / "pkg/mod.py").read_bytes() == resolved
    project.cli("rebase", "--continue", expect=None)
    assert b"+    return -33" in project.patch("fix-a")
    assert project.series() == ["fix-a.patch", "fix-b.patch"]


def test_continue_takes_the_stops_files_and_what_the_user_adds_nothing_else(project):
    """`rebase --continue` takes the stopped patch's files plus what `patchforge add` named; a
    file staged or committed with git inside the worktree is listed and refused, and a
    resolution committed with git there is still the resolution (it was set aside as 'resolved
    to no change', and a staged notes.txt was folded into the fix)."""
    stopped_on_a(project)
    resolved = text({3: b"def f3():\n    return -33\n\n"})
    (project.work / "pkg/mod.py").write_bytes(resolved)
    user = ["-c", "user.name=u", "-c", "user.email=u@example.org"]
    subprocess.run(["git", *user, "commit", "-qam", "my resolution"], cwd=project.work, check=True)
    (project.work / "notes.txt").write_bytes(b"ask upstream about f3\n")
    subprocess.run(["git", "add", "notes.txt"], cwd=project.work, check=True)
    _, _, err = project.cli("rebase", "--continue", expect=2)
    assert "not part of the patch: notes.txt" in err and "patchforge add" in err
    subprocess.run(["git", *user, "commit", "-qm", "notes"], cwd=project.work, check=True)
    _, _, err = project.cli("rebase", "--continue", expect=2)  # committed: still not the fix's
    assert "notes.txt" in err
    # Named with `patchforge add`, a file is part of the fix (an upstream file here).
    project.cli("add", "pkg/other.py")
    (project.work / "pkg/other.py").write_bytes(b"x = 2\n")
    subprocess.run(["git", "rm", "-q", "--cached", "notes.txt"], cwd=project.work, check=True)
    (project.work / "notes.txt").unlink()
    project.cli("rebase", "--continue")
    fix = project.patch("fix-a")
    assert b"+    return -33" in fix and b"+x = 2" in fix and b"notes" not in fix
    assert not (project.root / "series" / "up" / "skipped").exists()


def test_new_beside_an_edit_left_unchanged_is_not_refused(project):
    """`new fix-a --file pkg/mod.py`, nothing changed yet, then `new fix-b` (quilt new; quilt
    new): refused with "fix-a.patch is being edited and has changes that are not refreshed",
    which it had not (`new` looked without the store, and assumed the worst); `edit --close`
    closed it without a word. Now `new` looks as `edit --close` does."""
    project.cli("new", "fix-a", "--file", "pkg/mod.py")
    project.cli("new", "fix-b", "--no-edit")
    project.cli("new", "fix-c", "--file", "pkg/other.py")
    assert project.series() == ["fix-a.patch", "fix-b.patch", "fix-c.patch"]
    (project.work / "pkg/other.py").write_bytes(b"x = 2\n")
    _, _, err = project.cli("new", "fix-d", expect=2)  # a change not refreshed: refused
    assert "fix-c.patch is being edited" in err and "not refreshed" in err


def test_new_cut_short_at_any_write_is_finished_by_running_it_again(project, tmp_path):
    """Ctrl-C at each write of `new fix-a --file pkg/mod.py` in turn; the report says nothing
    was half-written and to run it again. Cut between writing the patch and listing it, the
    run again said "a patch named fix-a.patch already exists" (it was not in the series, and
    status reported it unlisted); cut while the worktree was made, every command after took
    the half-made worktree for an edit with changes not refreshed. Running it again now ends
    where an uncut run ends."""
    import shutil

    pristine = tmp_path / "pristine"
    shutil.copytree(project.root, pristine, symlinks=True)
    args = ["new", "fix-a", "-m", "fix a", "--file", "pkg/mod.py"]
    project.cli(*args)
    done = snapshot(project.root, skip_state=True)
    for nth in range(1, 30):
        shutil.rmtree(project.root)
        shutil.copytree(pristine, project.root, symlinks=True)
        env = {**os.environ, "PATCHFORGE_FAULT": f"write:{nth}",
               "PATCHFORGE_FAULT_MODE": "interrupt"}
        cut = subprocess.run([sys.executable, "-m", "patchforge", "--root", str(project.root),
                              *args], capture_output=True, env=env)
        if cut.returncode == 0:
            break
        assert cut.returncode == 130 and b"run the command again" in cut.stderr, cut.stderr
        project.cli(*args)
        assert snapshot(project.root, skip_state=True) == done, nth
        assert (project.work / "pkg/mod.py").read_bytes() == BASE
        project.cli("status")
    else:
        raise AssertionError("new never ran to its end")
    assert nth > 3


def test_a_patch_name_that_differs_only_in_unicode_form_from_another_is_refused(project,
                                                                                tmp_path):
    """`café` typed on a Linux machine (one composed character) and on a Mac (`e` and a
    combining accent) made two patch files that print alike everywhere and are one file on
    macOS: one fix overwrote the other there. `new`, `rename` and the imports refuse it, as a
    name that differs only in case; nothing written."""
    composed, decomposed = "caf\u00e9", "cafe\u0301"
    project.fix(composed, {"pkg/mod.py": text({3: b"def f3():\n    return -3\n\n"})})
    project.cli("new", "other", "--no-edit")
    before = snapshot(project.root, skip_state=True)
    for args in (("new", decomposed, "--no-edit"), ("new", decomposed.upper(), "--no-edit"),
                 ("rename", "other", decomposed)):
        _, _, err = project.cli(*args, expect=2)
        assert f"{composed}.patch (series/up/)" in err and "Unicode" in err, err
    quilt = tmp_path / "quilt"
    quilt.mkdir()
    (quilt / "series").write_bytes(f"{decomposed}.patch\n".encode())
    (quilt / f"{decomposed}.patch").write_bytes(project.patch(composed).replace(b"-33", b"-44"))
    _, _, err = project.cli("import", "quilt", str(quilt), expect=2)
    assert "Unicode" in err, err
    assert snapshot(project.root, skip_state=True) == before


def test_a_patch_name_that_differs_only_in_case_from_another_is_refused(project, tmp_path):
    """fix-a.patch and Fix-A.patch are two files here, and one on the macOS laptop or Windows
    machine the stack is also checked out on: one fix overwrites the other there. `new`,
    `rename` and the imports refuse such a name, nothing written; renaming a patch to its own
    name in another case is still a rename."""
    project.fix("fix-a", {"pkg/mod.py": text({3: b"def f3():\n    return -3\n\n"})})
    project.cli("new", "fix-b", "--no-edit")
    before = snapshot(project.root, skip_state=True)
    _, _, err = project.cli("new", "Fix-A", "--no-edit", expect=2)
    assert "Fix-A.patch differs only in case from fix-a.patch" in err, err
    _, _, err = project.cli("rename", "fix-b", "FIX-A", expect=2)
    assert "FIX-A.patch differs only in case from fix-a.patch" in err, err
    quilt = tmp_path / "quilt"
    quilt.mkdir()
    (quilt / "series").write_bytes(b"Fix-a.patch\n")
    (quilt / "Fix-a.patch").write_bytes(project.patch("fix-a").replace(b"-33", b"-44"))
    _, _, err = project.cli("import", "quilt", str(quilt), expect=2)
    assert "Fix-a.patch differs only in case from fix-a.patch" in err, err
    assert snapshot(project.root, skip_state=True) == before
    project.cli("rename", "fix-a", "Fix-A")
    assert project.series() == ["Fix-A.patch", "fix-b.patch"]


def test_refresh_with_the_editor_still_open_takes_the_change_and_no_editor_file(project):
    """vim keeps `.mod.py.swp` beside a file it has open (Emacs `.#mod.py` and `#mod.py#`, a
    backup `mod.py~`, macOS `.DS_Store`): refresh refused them by name, so it failed until the
    editor was closed, and an edit with such a file left could not be closed without
    --discard. They are no part of a fix: ignored, as build products are; one that
    `patchforge add` names is still taken."""
    project.fix("fix-a", {"pkg/mod.py": text({3: b"def f3():\n    return -3\n\n"})})
    project.cli("edit", "fix-a")
    (project.work / "pkg/mod.py").write_bytes(text({3: b"def f3():\n    return -30\n\n"}))
    for name in (".mod.py.swp", "mod.py~", ".#mod.py", "#mod.py#", ".DS_Store"):
        (project.work / "pkg" / name).write_bytes(b"editor state\n")
    project.cli("refresh")
    fix = project.patch("fix-a")
    assert b"+    return -30" in fix and b"editor state" not in fix
    project.cli("edit", "fix-a")
    project.cli("add", "pkg/keep~")
    (project.work / "pkg/keep~").write_bytes(b"kept on purpose\n")
    project.cli("refresh")
    assert b"+kept on purpose" in project.patch("fix-a")


def test_refresh_refuses_a_file_staged_with_git_in_the_worktree(project):
    project.fix("fix-a", {"pkg/mod.py": text({3: b"def f3():\n    return -3\n\n"})})
    project.cli("edit", "fix-a")
    (project.work / "scratch.py").write_bytes(b"print('debugging')\n")
    subprocess.run(["git", "add", "scratch.py"], cwd=project.work, check=True)
    _, _, err = project.cli("refresh", expect=2)
    assert "scratch.py" in err
    project.cli("add", "scratch.py")  # asked for: a new file of the fix
    project.cli("refresh")
    assert b"+++ b/scratch.py" in project.patch("fix-a")


def test_no_patch_can_be_added_to_a_series_a_rebase_is_moving(project, tmp_path):
    stopped_on_a(project)
    overlay = tmp_path / "other.py"
    overlay.write_bytes(b"x = 2\n")
    project.cli("import", "overlay", str(overlay), "--upstream", "up", "--path",
                "pkg/other.py", "--name", "overlay-fix", expect=2)
    project.cli("new", "fix-c", expect=2)
    project.cli("rebase", "--skip", expect=None)
    listed = set(project.series())
    on_disk = {p.name for p in (project.root / "series" / "up").glob("*.patch")}
    assert on_disk == listed  # nothing unlisted left behind
    assert (project.root / "series" / "up" / "skipped" / "fix-a.patch").exists()


def test_read_only_commands_announce_a_stop(project):
    target = stopped_on_a(project)
    code, _, err = project.cli("status", expect=1)
    assert "note: up: a rebase is stopped at fix-a.patch" in err
    # How far it got, and from where to where, as `git status` says of a stopped rebase.
    pinned = json.loads((project.root / "upstream.lock").read_text())["upstreams"]["up"]["label"]
    assert f"stopped at fix-a.patch (patch 1 of 2, {pinned} -> {target[:12]}" in err, err
    assert "rebase --continue" in err
    _, _, err = project.cli("list")
    assert "stopped at fix-a.patch" in err
    _, _, err = project.cli("lint", "--no-forge", expect=1)
    assert "stopped at fix-a.patch" in err
    _, _, err = project.cli("overlays", "--check", expect=1)
    assert "stopped at fix-a.patch" in err
    # Nothing of the series is written before the rebase's write-out: an export during a
    # stop hands out the series as it was, and says the rebase is stopped.
    _, _, err = project.cli("export", "--quilt", str(project.root.parent / "q"))
    assert "stopped at fix-a.patch" in err
    assert (project.root.parent / "q" / "fix-a.patch").read_bytes() == project.patch("fix-a")
    # `upstream list` shows the pins the rebase has not left yet: it says the stop too (it
    # said nothing), and its --json stays one document.
    _, out, err = project.cli("upstream", "list")
    assert "stopped at fix-a.patch" in err and pinned in out, (out, err)
    _, out, err = project.cli("upstream", "list", "--json")
    assert json.loads(out)["upstreams"][0]["label"] == pinned and "note:" not in err
    project.cli("rebase", "--abort")
    _, _, err = project.cli("list")
    assert "note:" not in err
    _, _, err = project.cli("upstream", "list")
    assert "note:" not in err


def test_a_late_editor_save_after_refresh_is_kept_and_said(project):
    """`refresh` removes the worktree; an editor still open on its file saves afterwards and
    makes the file again. `status` said nothing, and the next `edit` replaced it without a
    word. Now `status` names the stray file, and the next `edit` keeps it, byte for byte,
    under .patchforge/left-behind/ and says where."""
    project.fix("fix-a", {"pkg/mod.py": text({3: b"def f3():\n    return -3\n\n"})})
    project.cli("edit", "fix-a")
    (project.work / "pkg/mod.py").write_bytes(text({3: b"def f3():\n    return -30\n\n"}))
    project.cli("refresh")
    assert not project.work.exists()
    late = text({3: b"def f3():\n    return -300\n\n"})
    (project.work / "pkg").mkdir(parents=True)
    (project.work / "pkg/mod.py").write_bytes(late)
    _, _, err = project.cli("status")
    assert "holds 1 file written after its edit ended (pkg/mod.py)" in err, err
    _, _, err = project.cli("edit", "fix-a")
    kept = project.root / ".patchforge/left-behind/up-1/pkg/mod.py"
    assert kept.read_bytes() == late
    assert "is kept in .patchforge/left-behind/up-1" in err and "pkg/mod.py" in err, err
    assert (project.work / "pkg/mod.py").read_bytes() != late  # the edit's own file
    assert "written after its edit ended" not in project.cli("status")[2]


def test_a_command_run_in_the_worktree_it_removes_says_where_the_project_is(project):
    """The tutorial works in .patchforge/work/<upstream>; refresh (or rebase --continue)
    removes it, and the shell is left in a deleted directory. The next command said "error:
    No such file or directory" and "nothing was left half-written". Now the command that
    removed it says so, and a command run there says the directory is gone and where the
    project is."""
    project.fix("fix-a", {"pkg/mod.py": text({3: b"def f3():\n    return -3\n\n"})})
    project.cli("edit", "fix-a")
    (project.work / "pkg/mod.py").write_bytes(text({3: b"def f3():\n    return -30\n\n"}))
    root = project.root.resolve()
    work = project.work.resolve()
    python = sys.executable
    script = (f'cd "{work}/pkg" && "{python}" -m patchforge refresh; echo "rc=$?" >&2; '
              f'"{python}" -m patchforge status; echo "rc=$?" >&2')
    proc = subprocess.run(["sh", "-c", script], capture_output=True, text=True,
                          env={**os.environ, "PWD": str(work)}, timeout=300)
    refresh_err, status_err = proc.stderr.split("rc=0\n", 1)
    assert f"note: the current directory {work}/pkg was removed with its worktree: " \
           f"`cd {root}`" in refresh_err, proc.stderr
    assert "the current directory" in status_err and "no longer exists" in status_err, \
        proc.stderr
    assert f"hint: `cd {root}` (the project)" in status_err and "rc=2" in status_err, \
        proc.stderr
    assert "half-written" not in status_err
    assert b"return -30" in project.patch("fix-a")


def test_help_and_the_version_answer_in_a_deleted_directory(tmp_path):
    """Run from a directory that no longer exists, every command was refused, even
    `patchforge --help` and `--version`, which read no project. They answer; a command that
    reads the project is still refused, saying the directory is gone."""
    gone = tmp_path / "gone"
    gone.mkdir()
    python = sys.executable
    script = (f'cd "{gone}" && rmdir "{gone}" && '
              + " ".join(f'"{python}" -m patchforge {args}; echo "rc=$?";'
                         for args in ("--help", "--version", "list --help", "status -h",
                                      "list")))
    proc = subprocess.run(["sh", "-c", script], capture_output=True, text=True,
                          env={**os.environ, "PWD": str(gone)},
                          timeout=300)
    rcs = [line for line in proc.stdout.splitlines() if line.startswith("rc=")]
    assert rcs == ["rc=0"] * 4 + ["rc=2"], proc.stdout + proc.stderr
    assert "Usage: patchforge [OPTIONS] COMMAND" in proc.stdout
    assert "patchforge, version " in proc.stdout
    assert "Usage: patchforge list" in proc.stdout and "Usage: patchforge status" in proc.stdout
    assert proc.stderr.count("no longer exists") == 1, proc.stderr


def test_each_way_out_of_an_edit_the_note_names_works_as_it_says(project):
    """During an edit the note said "`patchforge refresh` writes the change...; `patchforge
    edit --close` then ends the edit", but refresh already ends the edit, so the second step
    failed ("nothing is being edited"). Each command the note names now does what it says,
    on its own, from an edit with a change."""
    import re

    project.fix("fix-a", {"pkg/mod.py": text({3: b"def f3():\n    return -3\n\n"})})
    project.cli("edit", "fix-a")
    (project.work / "pkg/mod.py").write_bytes(text({3: b"def f3():\n    return -30\n\n"}))
    note = next(line for line in project.cli("status")[2].splitlines() if "being edited" in line)
    named = re.findall(r"`patchforge ([^`]*)`", note)
    assert named, note
    for command in named:
        if not (project.work / "pkg/mod.py").exists():
            project.cli("edit", "fix-a")
            (project.work / "pkg/mod.py").write_bytes(
                text({3: b"def f3():\n    return -31\n\n"}))
        project.cli(*command.split())
        assert "being edited" not in project.cli("status")[2], (command, note)
    # The note's word on each: refresh kept the change, --discard did not.
    assert b"+    return -30\n" in project.patch("fix-a")
    assert b"return -31" not in project.patch("fix-a")


def test_with_edits_open_in_two_upstreams_each_notes_way_out_names_its_patch(project,
                                                                               tmp_path):
    """With an edit open in each of two upstreams, the notes said "`patchforge refresh`
    writes the change...; `patchforge edit --close --discard` ends it", and both, run as
    said, were refused: "several patches are being edited ...; name one", with no hint of
    the form. Each note (and the refusal's hint) now names the patch, and what it names
    works on that edit alone."""
    import re

    project.fix("fix-a", {"pkg/mod.py": text({3: b"def f3():\n    return -3\n\n"})})
    up2 = Upstream(tmp_path / "up2", {"pkg/mod.py": BASE})
    project.cli("upstream", "add", "up2", "--git", str(up2.path), "--at", up2.base,
                "--install-root", "/opt/up2")
    work2 = project.root / ".patchforge" / "work" / "up2"
    project.cli("new", "fix-g", "--upstream", "up2", "--file", "pkg/mod.py")
    (work2 / "pkg/mod.py").write_bytes(text({5: b"def f5():\n    return -5\n\n"}))
    project.cli("refresh")
    project.cli("edit", "fix-a")
    (project.work / "pkg/mod.py").write_bytes(text({3: b"def f3():\n    return -30\n\n"}))
    project.cli("edit", "fix-g")
    (work2 / "pkg/mod.py").write_bytes(text({5: b"def f5():\n    return -50\n\n"}))

    notes = [line for line in project.cli("status")[2].splitlines() if "being edited" in line]
    named = {line.split(":")[1].strip(): re.findall(r"`patchforge ([^`]*)`", line)
             for line in notes}
    assert named == {"up": ["refresh up/fix-a", "edit --close --discard up/fix-a"],
                     "up2": ["refresh up2/fix-g", "edit --close --discard up2/fix-g"]}, notes
    for bare in (["refresh"], ["edit", "--close", "--discard"]):
        _, _, err = project.cli(*bare, expect=2)
        assert "several patches are being edited" in err
        hint = re.findall(r"`patchforge ([^`]*)`", err)
        assert hint == [f"{' '.join(bare)} up/fix-a", f"{' '.join(bare)} up2/fix-g"], err

    project.cli(*named["up"][0].split())  # refresh up/fix-a
    assert b"+    return -30\n" in project.patch("fix-a")
    assert (work2 / "pkg/mod.py").read_bytes() == text({5: b"def f5():\n    return -50\n\n"})
    project.cli(*named["up2"][1].split())  # edit --close --discard up2/fix-g
    fix_g = (project.root / "series" / "up2" / "fix-g.patch").read_bytes()
    assert b"+    return -5\n" in fix_g and b"return -50" not in fix_g
    assert "being edited" not in project.cli("status")[2]


def test_an_open_edit_with_unrefreshed_changes_is_never_reset(project):
    project.fix("fix-a", {"pkg/mod.py": text({3: b"def f3():\n    return -3\n\n"})})
    project.fix("fix-b", {"pkg/other.py": b"x = 2\n"})
    project.cli("edit", "fix-a")
    changed = text({3: b"def f3():\n    return -300\n\n"})
    (project.work / "pkg/mod.py").write_bytes(changed)
    _, _, err = project.cli("status")
    assert "fix-a.patch is being edited" in err
    for refused in (("edit", "fix-a"), ("edit", "fix-b"), ("new", "fix-c"), ("edit", "--close"),
                    ("move", "fix-b", "--first"), ("delete", "fix-a")):
        _, _, err = project.cli(*refused, expect=2)
        assert "not refreshed" in err, refused
        assert (project.work / "pkg/mod.py").read_bytes() == changed, refused
    project.cli("refresh")
    assert b"+    return -300" in project.patch("fix-a")
    # Refreshed: moving a patch before the edited one ends the edit (its worktree was made on
    # the old order); nothing is lost, it is all in the patch.
    project.cli("move", "fix-b", "--first")
    assert not (project.root / ".patchforge" / "work" / "up.json").exists()
    project.cli("edit", "fix-a")
    (project.work / "pkg/mod.py").write_bytes(BASE)
    project.cli("edit", "--close", "--discard")
    assert b"+    return -300" in project.patch("fix-a")


def test_an_edit_of_a_patch_made_by_plain_git_diff_left_untouched_has_nothing_unrefreshed(
        tmp_path):
    """Fixes a colleague made with plain `git diff` (abbreviated `index 511af2f..b6a44c1`
    lines; a rename; a mode change; a binary file, whose data git encodes its own way): `edit`
    of one, looked at and left untouched, then `new`, `edit --close`, `move`, `delete` or
    `rebase --to` was refused, "has changes that are not refreshed", leaving the choice of
    rewriting the patch's form or "throwing away" changes never made. The patch gives the
    worktree's files exactly: nothing is unrefreshed. A real change is still one, however
    small: a file's mode only, a rename turned into a copy, one byte of a binary file."""
    from helpers.git import git, git_bytes
    from helpers.upstream import dep3_patch

    blob = bytes(range(256)) * 8
    up = Upstream(tmp_path / "up", {"pkg/mod.py": BASE, "pkg/other.py": b"x = 1\ny = 2\nz = 3\n",
                                    "pkg/run.sh": b"#!/bin/sh\necho run\n", "pkg/blob.bin": blob})
    root = tmp_path / "project"
    root.mkdir()
    run_cli(None, "init", "--standalone", str(root))
    assert run_cli(root, "upstream", "add", "up", "--git", str(up.path), "--at", up.base,
                   "--install-root", "/opt/site").rc == 0
    scratch = tmp_path / "scratch"
    git(tmp_path, "clone", "-q", str(up.path), str(scratch))

    def git_diff(*options: str) -> bytes:
        """What the colleague's `git diff` wrote, then the scratch clone back as it was."""
        git(scratch, "add", "-A")
        out = git_bytes(scratch, "-c", "core.abbrev=7", "diff", "--cached", *options)
        git(scratch, "reset", "-q", "--hard")
        return out

    (scratch / "pkg/mod.py").write_bytes(text({3: b"def f3():\n    return 33\n\n"}))
    (scratch / "pkg/run.sh").chmod(0o755)
    fix_a = git_diff()
    git(scratch, "mv", "pkg/other.py", "pkg/renamed.py")
    (scratch / "pkg/renamed.py").write_bytes(b"x = 1\ny = 2\nz = 33\n")
    fix_b = git_diff("-M")
    (scratch / "pkg/blob.bin").write_bytes(blob[:100] + b"\xff" + blob[101:])
    fix_c = git_diff("--binary")
    assert b"index " in fix_a and b"old mode 100644" in fix_a and b"rename from" in fix_b
    assert b"GIT binary patch" in fix_c
    series = root / "series" / "up"
    series.mkdir(parents=True, exist_ok=True)
    for name, diff in (("fix-a", fix_a), ("fix-b", fix_b), ("fix-c", fix_c)):
        (series / f"{name}.patch").write_bytes(
            dep3_patch(diff, description=name, extra=f"Upstream: up\nBase: {up.base}\n"))
    (series / "series").write_text("fix-a.patch\nfix-b.patch\nfix-c.patch\n")
    written = {p.name: p.read_bytes() for p in series.glob("*.patch")}
    work = root / ".patchforge" / "work" / "up"

    def cli(*args: str, expect: int = 0) -> str:
        result = run_cli(root, *args)
        assert result.rc == expect, f"patchforge {' '.join(args)} -> {result.rc}\n{result.text}"
        return result.err

    for name in ("fix-a", "fix-b", "fix-c"):
        cli("edit", name)
        cli("edit", "--close")
    cli("edit", "fix-a")
    cli("new", "fix-d", "--no-edit")
    cli("edit", "fix-b")
    cli("move", "fix-d", "--first")
    cli("edit", "fix-c")
    cli("delete", "fix-d")
    # Untouched edits end without a word, and every patch keeps its bytes.
    assert {p.name: p.read_bytes() for p in series.glob("*.patch")} == written

    # A real change is one, however small: refused, the worktree kept.
    def refused(change: str) -> None:
        for command in (("edit", "--close"), ("new", "fix-e"), ("edit", "fix-a")):
            err = cli(*command, expect=2)
            assert "not refreshed" in err, (change, command, err)
        assert {p.name: p.read_bytes() for p in series.glob("*.patch")} == written, change
        cli("edit", "--close", "--discard")

    cli("edit", "fix-a")
    (work / "pkg/run.sh").chmod(0o644)  # the mode only
    refused("mode")
    cli("edit", "fix-b")
    git(work, "checkout", "HEAD", "--", "pkg/other.py")  # the renamed file back: a copy
    refused("rename")
    cli("edit", "fix-c")
    data = (work / "pkg/blob.bin").read_bytes()
    (work / "pkg/blob.bin").write_bytes(data[:200] + b"\x00" + data[201:])
    refused("binary")

    # An untouched edit does not stop a rebase either.
    target = up.commit({"pkg/mod.py": text({15: b"def f15():\n    return 1515\n\n"})})
    cli("edit", "fix-c")
    cli("rebase", "--to", f"up={target}")
    assert not (root / ".patchforge" / "work" / "up.json").exists()
    assert b"GIT binary patch" in (series / "fix-c.patch").read_bytes()


def test_an_edit_whose_worktree_lost_its_git_keeps_its_files(project):
    """The worktree's .git removed by hand (taken for clutter): its files could no longer be
    compared with the base, so they counted as refreshed and `edit --close` (or `edit`,
    `new`) deleted them, the unrefreshed change with them; `refresh` failed with git's "not a
    git repository". They count as changes now, and `refresh` says what to do; a worktree
    removed whole is a clear error too, and `edit --close` ends that edit."""
    import shutil

    project.fix("fix-a", {"pkg/mod.py": text({3: b"def f3():\n    return -3\n\n"})})
    project.cli("edit", "fix-a")
    changed = text({3: b"def f3():\n    return -300\n\n"})
    (project.work / "pkg/mod.py").write_bytes(changed)
    shutil.rmtree(project.work / ".git")
    for refused in (("edit", "--close"), ("edit", "fix-a"), ("new", "fix-b")):
        _, _, err = project.cli(*refused, expect=2)
        assert "not refreshed" in err, refused
        assert (project.work / "pkg/mod.py").read_bytes() == changed, refused
    _, _, err = project.cli("refresh", expect=2)
    assert "lost its .git" in err and "--discard" in err, err
    project.cli("edit", "--close", "--discard")
    project.cli("edit", "fix-a")
    shutil.rmtree(project.work)
    _, _, err = project.cli("refresh", expect=2)
    assert "is gone" in err and "edit --close" in err, err
    project.cli("edit", "--close")
    assert b"+    return -3\n" in project.patch("fix-a")


def test_new_with_a_bad_file_path_writes_nothing(project):
    """`new NAME --file ../../etc/passwd` wrote NAME.patch and listed it ("created up/x.patch"),
    then failed on the path, exit 2: a patch nobody meant to make was left in the series. The
    paths are checked first now; a good one still opens the worktree."""
    before = sorted(p.name for p in (project.root / "series").rglob("*"))
    for bad in ("../../etc/passwd", ".git/config", "/etc/passwd"):
        _, _, err = project.cli("new", "x", "--file", bad, expect=2)
        assert "created" not in err, err
        assert sorted(p.name for p in (project.root / "series").rglob("*")) == before, bad
    project.cli("new", "x", "--file", "pkg/mod.py")
    assert project.series() == ["x.patch"] and (project.work / "pkg/mod.py").is_file()


def test_a_stop_whose_worktree_lost_its_git_says_how_to_go_on(project):
    """The worktree of a rebase stop (or of a stopped bring-back) with its .git removed by hand:
    `--continue` failed with git's own "not a git repository". It now says what is lost and
    the ways on; `--skip` keeps the fix in skipped/ and `bring-back --abort` leaves it there."""
    import shutil

    stopped_on_a(project)
    shutil.rmtree(project.work / ".git")
    _, _, err = project.cli("rebase", "--continue", expect=2)
    assert "lost its .git" in err and "rebase --skip" in err, err
    skipped = project.patch("fix-a")
    project.cli("rebase", "--skip", expect=1)
    assert project.patch("fix-a", "skipped") == skipped
    project.cli("bring-back", "fix-a", expect=3)
    shutil.rmtree(project.work / ".git")
    _, _, err = project.cli("bring-back", "--continue", expect=2)
    assert "lost its .git" in err and "bring-back --abort" in err, err
    project.cli("bring-back", "--abort")
    assert project.patch("fix-a", "skipped") == skipped


def test_bring_back_abort_keeps_the_files_made_in_its_worktree_that_nobody_added(project):
    """As `rebase --skip` and `--abort` do: the stopped bring-back's worktree goes, a file made
    there without `patchforge add` is copied under .patchforge/left-behind/ first."""
    stopped_on_a(project)
    project.cli("rebase", "--skip", expect=1)
    project.cli("bring-back", "fix-a", expect=3)
    (project.work / "idea.py").write_bytes(b"x = 1\n")
    _, _, err = project.cli("bring-back", "--abort")
    assert "kept in .patchforge/left-behind/up-1" in err, err
    assert (project.root / ".patchforge/left-behind/up-1/idea.py").read_bytes() == b"x = 1\n"


def test_bring_back_abort_keeps_a_hand_resolution_and_says_where(project):
    """As `rebase --abort` does: the resolution made in a stopped bring-back's worktree is
    copied, byte for byte, under .patchforge/left-behind/ before the worktree goes, and the
    command says where; it was thrown away without a word. Nothing changed: nothing kept."""
    stopped_on_a(project)
    project.cli("rebase", "--skip", expect=1)
    project.cli("bring-back", "fix-a", expect=3)
    _, _, err = project.cli("bring-back", "--abort")
    assert "resolution" not in err and not (project.root / ".patchforge/left-behind").exists()
    project.cli("bring-back", "fix-a", expect=3)
    resolved = text({3: b"def f3():\n    return -33\n\n"})
    (project.work / "pkg/mod.py").write_bytes(resolved)
    _, _, err = project.cli("bring-back", "--abort")
    assert "(a resolution: pkg/mod.py) is kept in .patchforge/left-behind/up-1" in err, err
    assert "patchforge bring-back fix-a" in err, err
    assert (project.root / ".patchforge/left-behind/up-1/pkg/mod.py").read_bytes() == resolved


def test_overlays_and_a_dry_run_beside_a_stopped_bring_back_name_its_way_on_not_refresh(project):
    """`overlays` while a bring-back is stopped said its fix "is being edited and has changes
    not refreshed ... until `patchforge refresh`", which that state refuses (the fix is in
    skipped/, in no patch file the overlays read), and `rebase --to --dry-run` said the rebase
    was refused until `refresh`. Only the bring-back's own way on is said."""
    stopped_on_a(project)
    project.cli("rebase", "--skip", expect=1)
    project.cli("bring-back", "fix-a", expect=3)
    _, _, err = project.cli("overlays", expect=None)
    assert "bring-back --continue" in err and "bring-back --abort" in err, err
    assert "is being edited" not in err and "patchforge refresh" not in err, err
    _, _, refused = project.cli("refresh", expect=2)
    assert "bringing back fix-a.patch is stopped" in refused, refused
    # So does a dry run of the rebase that stop refuses.
    _, _, err = project.cli("rebase", "--to", f"up={project.up.base}", "--dry-run", expect=1)
    assert "is being edited" not in err and "patchforge refresh" not in err, err
    assert "the rebase is refused until it is finished" in err and "bring-back --continue" in err


def test_import_overlay_refuses_a_path_the_upstream_does_not_have(project, tmp_path):
    overlay = tmp_path / "mod.py"
    overlay.write_bytes(text({3: b"def f3():\n    return -3\n\n"}))
    _, _, err = project.cli("import", "overlay", str(overlay), "--upstream", "up", "--path",
                            "mod.py", "--name", "typo", expect=2)
    assert "mod.py does not exist in up" in err and "did you mean pkg/mod.py" in err
    assert project.series() == []
    project.cli("import", "overlay", str(overlay), "--upstream", "up", "--path", "pkg/mod.py",
                "--name", "fix")
    project.cli("import", "overlay", str(overlay), "--upstream", "up", "--path", "pkg/new.py",
                "--name", "new-file", "--create")
    assert b"new file mode" in project.patch("new-file")


def test_ctrl_c_exits_130_and_names_the_journal_it_left(project):
    project.fix("fix-a", {"pkg/mod.py": text({3: b"def f3():\n    return -3\n\n"})})
    target = project.up.commit({"pkg/other.py": b"x = 3\n"})
    # A real SIGINT at the rebase's second durable write (after its journal exists).
    env = {**os.environ, "PATCHFORGE_FAULT": "rename:2", "PATCHFORGE_FAULT_MODE": "interrupt"}
    proc = subprocess.run([sys.executable, "-m", "patchforge", "--root", str(project.root),
                           "rebase", "--to", f"up={target}"], capture_output=True, env=env)
    err = proc.stderr.decode()
    assert proc.returncode == 130, err
    assert "interrupted" in err and "journal" in err and "rebase --continue" in err
    _, _, err = project.cli("status", expect=1)
    assert "a rebase is in progress" in err
    project.cli("rebase", "--continue")
    assert project.cli("status")[0] == 0
    assert f"Base: {target}".encode() in project.patch("fix-a")


@pytest.mark.parametrize("mode,code,said", [("interrupt", 130, "interrupted"),
                                             ("terminate", 143, "terminated")])
def test_an_interrupt_said_in_a_pipe_starts_on_its_own_line_without_empty_ones(
        project, mode, code, said):
    """Ctrl-C or SIGTERM of a command whose stderr is a pipe (a CI log): two empty lines came
    before `patchforge: interrupted`, the newline that ends a terminal's `^C` line written
    twice (by the rebase's own handler and the CLI's). In a pipe the line is empty already:
    the message is the first line, with no empty line before it."""
    project.fix("fix-a", {"pkg/mod.py": text({3: b"def f3():\n    return -3\n\n"})})
    target = project.up.commit({"pkg/other.py": b"x = 3\n"})
    env = {**os.environ, "PATCHFORGE_FAULT": "rename:2", "PATCHFORGE_FAULT_MODE": mode}
    proc = subprocess.run([sys.executable, "-m", "patchforge", "--root", str(project.root),
                           "rebase", "--to", f"up={target}"], capture_output=True, env=env)
    err = proc.stderr.decode()
    assert proc.returncode == code, err
    assert f"patchforge: {said}\n" in err and "\n\n" not in err and \
        not err.startswith("\n"), repr(err)
    project.cli("rebase", "--continue")


def test_ctrl_c_during_the_first_imports_exits_130_without_a_traceback(tmp_path):
    """Ctrl-C in the first moments of a command, while main() still imports its output
    module (before its own handler is in place), printed a KeyboardInterrupt traceback and
    the process died by the signal. The console script now says "interrupted", exit 130, as a
    moment later. The Ctrl-C is raised at that import, in the real console entry point."""
    script = tmp_path / "early.py"
    script.write_text(
        "import builtins, sys\n"
        "import patchforge.cli as cli\n"
        "real, raised = builtins.__import__, []\n"
        "def imp(name, *a, **k):\n"
        "    if name == 'patchforge.cli.output' and not raised:\n"
        "        raised.append(1)\n"
        "        raise KeyboardInterrupt\n"
        "    return real(name, *a, **k)\n"
        "builtins.__import__ = imp\n"
        "sys.argv = ['patchforge', '--version']\n"
        "cli.console_main()\n")
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, cwd=tmp_path)
    err = proc.stderr.decode()
    assert proc.returncode == 130 and "patchforge: interrupted" in err, err
    assert "Traceback" not in err, err


# A sitecustomize that sends the process a real SIGINT when `{module}` is first imported (a
# Ctrl-C pressed at that moment), with Python's own handler in place as at a terminal: a process
# started with SIGINT ignored (a test run as a background job) would keep it ignored.
_CTRL_C_AT_IMPORT = (
    "import builtins, os, signal\n"
    "if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:\n"
    "    signal.signal(signal.SIGINT, signal.default_int_handler)\n"
    "real, sent = builtins.__import__, []\n"
    "def imported(name, *args, **kwargs):\n"
    "    if name == {module!r} and not sent:\n"
    "        sent.append(name)\n"
    "        os.kill(os.getpid(), signal.SIGINT)\n"
    "    return real(name, *args, **kwargs)\n"
    "builtins.__import__ = imported\n")


@pytest.mark.parametrize("module", ["patchforge.errors", "shlex"])
@pytest.mark.parametrize("entry", ["console script", "python -m"])
def test_ctrl_c_while_the_command_line_loads_exits_130_without_a_traceback(
        tmp_path, entry, module):
    """A real SIGINT while the command line's own module loads (patchforge.cli, at its import
    of `module`), before cli.console_main's handler is in place: the `patchforge` console
    script and `python -m patchforge` printed a KeyboardInterrupt traceback and died by the
    signal. Both say "interrupted", exit 130, as a moment later. The console script is the one
    pip writes for pyproject.toml's entry point."""
    import tomllib

    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(_CTRL_C_AT_IMPORT.format(module=module))
    if entry == "python -m":
        command = [sys.executable, "-m", "patchforge", "--version"]
    else:
        pyproject = Path(__file__).resolve().parent.parent / "pyproject.toml"
        target = tomllib.loads(pyproject.read_text())["project"]["scripts"]["patchforge"]
        module_name, _, attribute = target.partition(":")
        script = tmp_path / "patchforge"
        script.write_text(  # pip's console script
            "import re\nimport sys\n"
            f"from {module_name} import {attribute}\n"
            "if __name__ == '__main__':\n"
            "    sys.argv[0] = re.sub(r'(-script\\.pyw|\\.exe)?$', '', sys.argv[0])\n"
            f"    sys.exit({attribute}())\n")
        command = [sys.executable, str(script), "--version"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(hook), *filter(None, [os.environ.get("PYTHONPATH")])])}
    proc = subprocess.run(command, capture_output=True, cwd=tmp_path, env=env)
    err = proc.stderr.decode()
    assert proc.returncode == 130 and "patchforge: interrupted" in err, (proc.returncode, err)
    assert "Traceback" not in err, err


def test_sigterm_exits_143_names_the_journal_and_leaves_no_temporary_file(project):
    """A CI job cancelled (or `timeout`) sends SIGTERM. Without a handler the rebase ended
    where it stood, with no word of the journal it left, and the temporary file of the write
    in progress stayed in series/. It is taken as Ctrl-C is: the cleanup runs and the report
    names the journal and `rebase --continue`, exit 143."""
    project.fix("fix-a", {"pkg/mod.py": text({3: b"def f3():\n    return -3\n\n"})})
    target = project.up.commit({"pkg/other.py": b"x = 3\n"})
    # Stopped at the rebase's second durable write (after its journal exists), then SIGTERM
    # from outside, as a job runner sends it.
    env = {**os.environ, "PATCHFORGE_FAULT": "rename:2", "PATCHFORGE_FAULT_MODE": "stop"}
    proc = subprocess.Popen([sys.executable, "-m", "patchforge", "--root", str(project.root),
                             "rebase", "--to", f"up={target}"], stderr=subprocess.PIPE,
                            stdout=subprocess.DEVNULL, env=env)
    while not _stopped(proc.pid):
        if proc.poll() is not None:
            raise AssertionError(proc.stderr.read().decode())
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGTERM)
    os.kill(proc.pid, signal.SIGCONT)
    err = proc.stderr.read().decode()
    assert proc.wait() == 143, err
    assert "terminated" in err and "journal" in err and "rebase --continue" in err, err
    assert not [p for p in project.root.rglob("*.tmp")
                if ".patchforge" not in p.relative_to(project.root).parts]
    project.cli("rebase", "--continue")
    assert f"Base: {target}".encode() in project.patch("fix-a")


def test_ctrl_c_between_the_write_outs_renames_leaves_only_what_the_journal_renames(
        project, tmp_path):
    """Ctrl-C at each rename of a rebase: the cleanup removes every temporary file the run
    made, except, once the write-out has begun renaming, the new files its journal still
    names; `rebase --abort` removes those and puts the series back, `rebase --continue`
    renames them into place. None of them is ever a file nothing will rename."""
    def three_fixes_and_a_target(project: Project) -> str:
        for name, line in (("fix-a", 3), ("fix-b", 9), ("fix-c", 15)):
            project.fix(name, {"pkg/mod.py": text({line: b"def f%d():\n    return -%d\n\n"
                                                         % (line, line)})})
        return project.up.commit({"pkg/other.py": b"x = 3\n"})

    def temporaries(project: Project) -> set[Path]:
        return {p for p in project.root.rglob("*.tmp")
                if ".patchforge" not in p.relative_to(project.root).parts}

    def named(project: Project) -> set[Path]:
        journal = project.root / ".patchforge" / "rebase" / "journal.json"
        plan = (json.loads(journal.read_bytes()).get("plan") or []) if journal.exists() else []
        return {project.root / os.path.dirname(step["path"]) / step["temp"]
                for step in plan if step.get("temp")}

    def rebase_cut_short(project: Project, target: str, nth: int):
        env = {**os.environ, "PATCHFORGE_FAULT": f"rename:{nth}",
               "PATCHFORGE_FAULT_MODE": "interrupt"}
        return subprocess.run([sys.executable, "-m", "patchforge", "--root", str(project.root),
                               "rebase", "--to", f"up={target}"], capture_output=True, env=env)

    target = three_fixes_and_a_target(project)
    before = snapshot(project.root, skip_state=True)
    left_to_rename = None
    for nth in range(1, 40):
        proc = rebase_cut_short(project, target, nth)
        if proc.returncode == 0:
            break  # past the run's last rename
        assert proc.returncode == 130, proc.stderr.decode()
        assert temporaries(project) <= named(project), (nth, proc.stderr.decode())
        if temporaries(project) and left_to_rename is None:
            left_to_rename = nth
        if (project.root / ".patchforge" / "rebase" / "journal.json").exists():
            project.cli("rebase", "--abort")
        assert not temporaries(project), nth
        assert snapshot(project.root, skip_state=True) == before, nth
    else:
        raise AssertionError("the rebase never ran to its end")
    # The case itself, in a project made the same way: cut short between the renames, then
    # finished by --continue.
    assert left_to_rename is not None, "no interrupt fell between the write-out's renames"
    again = Project(tmp_path / "again")
    target = three_fixes_and_a_target(again)
    proc = rebase_cut_short(again, target, left_to_rename)
    assert proc.returncode == 130 and b"rebase --continue" in proc.stderr, proc.stderr
    assert temporaries(again) and temporaries(again) <= named(again)
    again.cli("rebase", "--continue")
    assert not temporaries(again)
    for name in ("fix-a", "fix-b", "fix-c"):
        assert f"Base: {target}".encode() in again.patch(name)


def _stopped(pid: int) -> bool:
    """True once the process `pid` is stopped (SIGSTOP): its state in /proc is T."""
    with open(f"/proc/{pid}/stat", "rb") as stat:
        return stat.read().rsplit(b")", 1)[1].split()[0] == b"T"


def test_a_skipped_fix_is_brought_back_through_the_three_way_merge(project):
    stopped_on_a(project)
    skipped = project.patch("fix-a")
    project.cli("rebase", "--skip", expect=1)
    assert project.series() == ["fix-b.patch"]
    assert project.patch("fix-a", "skipped") == skipped  # its last good diff, byte for byte
    code, _, err = project.cli("status", expect=1)
    assert "fix-a.patch was set aside" in err
    # It still conflicts with the new base: it stops like a rebase, with conflict markers in
    # the worktree, the fix staying in skipped/ until the bring-back is finished.
    _, _, err = project.cli("bring-back", "fix-a", expect=3)
    assert "does not move" in err and "stays in skipped/" in err
    assert "bring-back --continue" in err and "bring-back --abort" in err
    assert project.series() == ["fix-b.patch"]
    assert project.patch("fix-a", "skipped") == skipped
    marked = (project.work / "pkg/mod.py").read_bytes()
    assert b"<<<<<<< series" in marked and b">>>>>>> skipped fix-a.patch" in marked
    # Every other command sees the stop; nothing may change the series under it.
    _, _, err = project.cli("status", expect=1)
    assert "bringing back fix-a.patch is stopped" in err and "bring-back --continue" in err
    # The note on the skipped fix (`bring-back fix-a` puts it back) is not said beside the
    # stop: that command is the one being finished, and run again it is refused.
    assert "fix-a.patch was set aside" not in err and "`patchforge bring-back fix-a`" not in err
    # lint and overlays name the stop's ways on too (they said `bring-back fix-a`, refused).
    _, out, _ = project.cli("lint", "--no-forge", expect=1)
    assert "bringing it back is stopped" in out and "bring-back --continue" in out, out
    assert "`patchforge bring-back fix-a`" not in out, out
    _, _, err = project.cli("overlays", expect=1)
    assert "bringing it back is stopped" in err and "bring-back --continue" in err, err
    assert "`patchforge bring-back fix-a`" not in err, err
    _, _, err = project.cli("edit", "fix-b", expect=2)
    assert "bring-back --continue" in err
    project.cli("new", "other", expect=2)
    project.cli("refresh", expect=2)
    project.cli("rebase", "--to", f"up={project.up.head()}", expect=2)
    project.cli("bring-back", "--continue", expect=2)  # the markers are still there
    # --abort gives up: the fix is where it was.
    _, out, _ = project.cli("bring-back", "--abort")
    assert "stays in series/up/skipped/fix-a.patch" in out
    assert not project.work.exists() and project.patch("fix-a", "skipped") == skipped
    # Again, resolved this time: a scratch file is refused, then the fix joins the series.
    project.cli("bring-back", "fix-a", expect=3)
    (project.work / "pkg/mod.py").write_bytes(text({3: b"def f3():\n    return -333\n\n",
                                                    12: b"def f12():\n    return -12\n\n"}))
    (project.work / "notes.txt").write_bytes(b"ask upstream\n")
    _, _, err = project.cli("bring-back", "--continue", expect=2)
    assert "notes.txt" in err and project.patch("fix-a", "skipped") == skipped
    (project.work / "notes.txt").unlink()
    _, out, _ = project.cli("bring-back", "--continue")
    assert "is back at the end of the series" in out
    assert project.series() == ["fix-b.patch", "fix-a.patch"]
    assert not (project.root / "series" / "up" / "skipped" / "fix-a.patch").exists()
    back = project.patch("fix-a")
    assert b"+    return -333" in back and b"notes.txt" not in back
    assert project.cli("status")[0] == 0


def stopped_on_a_file_gone_upstream(project: Project) -> str:
    """fix-two changes pkg/mod.py and pkg/other.py; upstream deletes pkg/other.py: the rebase
    stops at fix-two (obsolete). Returns the target."""
    project.fix("fix-two", {"pkg/mod.py": text({3: b"def f3():\n    return -3\n\n"}),
                            "pkg/other.py": b"x = 2\n"})
    target = project.up.commit({"pkg/other.py": None})
    _, _, err = project.cli("rebase", "--to", f"up={target}", expect=3)
    assert "pkg/other.py is gone upstream" in err
    return target


def test_a_stop_on_a_file_gone_upstream_keeps_the_fix_in_the_other_files(project):
    """A rebase stopped because one file of a patch is gone upstream: its worktree holds the
    patch's other files with their change (as a conflict stop's does), so that re-creating the
    gone file and --continue keeps the whole fix; --continue without it is refused. The
    worktree held none of its files, and --continue wrote a patch without the pkg/mod.py
    change."""
    target = stopped_on_a_file_gone_upstream(project)
    assert (project.work / "pkg/mod.py").read_bytes() == text({3: b"def f3():\n    return -3\n\n"})
    assert not (project.work / "pkg/other.py").exists()
    # Continued without the gone file: refused, rather than a patch without its change.
    before = project.patch("fix-two")
    _, _, err = project.cli("rebase", "--continue", expect=2)
    assert "pkg/other.py (gone upstream) is not re-created" in err and "--skip" in err
    assert project.patch("fix-two") == before
    (project.work / "pkg/other.py").write_bytes(b"x = 2\n")
    project.cli("add", "pkg/other.py")
    project.cli("rebase", "--continue")
    moved = project.patch("fix-two")
    assert b"+    return -3" in moved and b"+x = 2" in moved, moved.decode()
    assert f"Base: {target}".encode() in moved


def test_a_bring_back_stopped_on_a_file_gone_upstream_keeps_the_fix_in_the_other_files(project):
    """The same through `bring-back` of the skipped fix: the stop's worktree had pkg/mod.py
    without the fix, and --continue put back a patch without that change (exit 0, the fix
    gone from skipped/)."""
    stopped_on_a_file_gone_upstream(project)
    project.cli("rebase", "--skip", expect=1)
    skipped = project.patch("fix-two", "skipped")
    _, _, err = project.cli("bring-back", "fix-two", expect=3)
    assert "pkg/other.py is gone upstream" in err
    assert (project.work / "pkg/mod.py").read_bytes() == text({3: b"def f3():\n    return -3\n\n"})
    assert project.patch("fix-two", "skipped") == skipped
    _, _, err = project.cli("bring-back", "--continue", expect=2)
    assert "pkg/other.py (gone upstream) is not re-created" in err and "--abort" in err
    assert project.patch("fix-two", "skipped") == skipped and project.series() == []
    (project.work / "pkg/other.py").write_bytes(b"x = 2\n")
    project.cli("add", "pkg/other.py")
    project.cli("bring-back", "--continue")
    back = project.patch("fix-two")
    assert b"+    return -3" in back and b"+x = 2" in back, back.decode()
    assert project.series() == ["fix-two.patch"]


@pytest.mark.parametrize("nth", [1, 2, 3])
def test_a_bring_back_continue_killed_at_a_write_is_finished_by_running_it_again(tmp_path, nth):
    """kill -9 at the nth rename of `bring-back --continue` (the fix's file, the series, the
    ledger): the fix is in the series or still in skipped/, never neither, and --continue run
    again ends with it in the series once, resolved."""
    project = Project(tmp_path)
    stopped_on_a(project)
    project.cli("rebase", "--skip", expect=1)
    project.cli("bring-back", "fix-a", expect=3)
    (project.work / "pkg/mod.py").write_bytes(text({3: b"def f3():\n    return -333\n\n",
                                                    12: b"def f12():\n    return -12\n\n"}))
    env = {**os.environ, "PATCHFORGE_FAULT": f"rename:{nth}", "PATCHFORGE_FAULT_MODE": ""}
    proc = subprocess.run([sys.executable, "-m", "patchforge", "--root", str(project.root),
                           "bring-back", "--continue"], capture_output=True, env=env)
    assert proc.returncode == 137, proc.stderr.decode()
    skipped = project.root / "series" / "up" / "skipped" / "fix-a.patch"
    assert skipped.exists() or "fix-a.patch" in project.series()
    project.cli("status", expect=1)  # the stop (or the fix in skipped/) still needs attention
    project.cli("bring-back", "--continue")
    assert project.series() == ["fix-b.patch", "fix-a.patch"] and not skipped.exists()
    assert b"+    return -333" in project.patch("fix-a")
    assert project.cli("status")[0] == 0 and not project.work.exists()


@pytest.mark.parametrize("fault", ["rename:1", "rename:2", "rename:3", "renamed:2"])
def test_a_bring_back_killed_at_a_write_is_finished_by_running_it_again(tmp_path, fault):
    """kill -9 at a rename of a `bring-back` that moves the fix cleanly (its file, the
    series, the ledger): run again, it ends with the fix in the series once under its own
    name. Killed after the fix's file was written but before the series listed it, the rerun
    took that name as another fix's and brought the fix back a second time as fix-a.2.patch,
    leaving fix-a.patch unlisted beside it. Killed once the series listed it (`renamed:2`),
    before it left skipped/, the rerun judged the skipped copy on a series that has its
    change: "has landed upstream meanwhile", a copy kept under upstreamed/ as landed and a
    landing in the history that never happened."""
    project = Project(tmp_path)
    project.fix("fix-a", {"pkg/mod.py": text({3: b"def f3():\n    return -3\n\n"})})
    target = project.up.commit({"pkg/mod.py": text({3: b"def f3():\n    return 33\n\n"})})
    project.cli("rebase", "--to", f"up={target}", expect=3)
    project.cli("rebase", "--skip", expect=1)
    back = project.up.commit({"pkg/mod.py": BASE})  # upstream takes its change back
    project.cli("rebase", "--to", f"up={back}", expect=1)
    env = {**os.environ, "PATCHFORGE_FAULT": fault, "PATCHFORGE_FAULT_MODE": ""}
    proc = subprocess.run([sys.executable, "-m", "patchforge", "--root", str(project.root),
                           "bring-back", "fix-a"], capture_output=True, env=env)
    assert proc.returncode == 137, proc.stderr.decode()
    skipped = project.root / "series" / "up" / "skipped" / "fix-a.patch"
    assert skipped.exists() or "fix-a.patch" in project.series()
    if skipped.exists():
        _, out, err = project.cli("bring-back", "fix-a")
        assert "landed" not in out + err and "back at the end of the series" in out, out + err
    assert project.series() == ["fix-a.patch"] and not skipped.exists()
    assert sorted(p.relative_to(project.root / "series" / "up").as_posix()
                  for p in (project.root / "series" / "up").rglob("*.patch")) == \
        ["fix-a.patch"]
    assert b"+    return -3" in project.patch("fix-a")
    history = (project.root / "series" / "history.jsonl").read_text()
    assert "upstreamed" not in history and "landed upstream" not in history, history
    assert project.cli("status")[0] == 0


def fail_each_step_in_turn(project, state, step: str, *args: str) -> int:
    """Run `patchforge ARGS` with an error injected at its 1st, 2nd, ... `step` (write, fsync,
    rename) until a run passes every one; after each failed run the project (`state()`) must be
    as before the first. Returns the run that passed (1: nothing was ever failed)."""
    before = state()
    for nth in range(1, 20):
        env = {**os.environ, "PATCHFORGE_FAULT": f"{step}:{nth}", "PATCHFORGE_FAULT_MODE": "raise"}
        proc = subprocess.run([sys.executable, "-m", "patchforge", "--root", str(project.root),
                               *args], capture_output=True, env=env)
        if proc.returncode == 0:
            return nth
        assert proc.returncode == 2 and "injected fault" in proc.stderr.decode(), proc.stderr
        after = state()
        assert after == before, (nth, sorted(k for k in set(after) | set(before)
                                             if after.get(k) != before.get(k)))
    pytest.fail(f"the fault {step} never stopped firing")


@pytest.mark.parametrize("step", ["write", "fsync", "rename"])
def test_a_bring_back_continue_that_fails_at_a_write_leaves_everything_as_it_was(tmp_path, step):
    """`bring-back --continue` failing (EIO) at each of its writes in turn (the fix's file, the
    series, the ledger, the end of the stop): the project is as it was before the command, files,
    stop and worktree byte for byte, so the fix is in skipped/ and nowhere else; the next run
    finishes the job in one go. (A kill may still leave the documented intermediate, which
    --continue finishes: the test above.)"""
    from helpers.snapshot import snapshot

    project = Project(tmp_path)
    stopped_on_a(project)
    project.cli("rebase", "--skip", expect=1)
    project.cli("ledger")  # the stack keeps series/PATCHES.md: one more file to write
    project.cli("bring-back", "fix-a", expect=3)
    (project.work / "pkg/mod.py").write_bytes(text({3: b"def f3():\n    return -333\n\n",
                                                    12: b"def f12():\n    return -12\n\n"}))

    def state() -> dict:
        return {k: v for k, v in snapshot(project.root).items()
                if k != ".patchforge/lock" and not k.startswith(".patchforge/work/up/.git/")}

    assert fail_each_step_in_turn(project, state, step, "bring-back", "--continue") > 1
    skipped = project.root / "series" / "up" / "skipped" / "fix-a.patch"
    assert project.series() == ["fix-b.patch", "fix-a.patch"] and not skipped.exists()
    assert b"+    return -333" in project.patch("fix-a") and not project.work.exists()
    assert project.cli("status")[0] == 0 and project.cli("lint")[0] == 0


def test_a_bring_back_continue_on_a_failing_disk_never_loses_the_fix(tmp_path):
    """`bring-back --continue` on a disk whose writes fail from the nth on, so that putting
    back what the command wrote fails too: the fix is in the series (its file listed) or in
    skipped/, never neither, a file left as written is named (never "nothing was left
    half-written" when something was), and --continue run again finishes it. Before, the
    putting back went on past the skipped/ file it could not write back, removed the fix's
    new file and left the series listing it: the fix was gone from both, and the next
    --continue, taking it for done, removed the stop's worktree too."""
    partly = 0
    for nth in range(1, 20):
        project = Project(tmp_path / str(nth))
        stopped_on_a(project)
        project.cli("rebase", "--skip", expect=1)
        project.cli("ledger")
        project.cli("bring-back", "fix-a", expect=3)
        (project.work / "pkg/mod.py").write_bytes(text({3: b"def f3():\n    return -333\n\n",
                                                        12: b"def f12():\n    return -12\n\n"}))
        before = snapshot(project.root)
        env = {**os.environ, "PATCHFORGE_FAULT": f"write:{nth}+", "PATCHFORGE_FAULT_MODE": "raise"}
        proc = subprocess.run([sys.executable, "-m", "patchforge", "--root", str(project.root),
                               "bring-back", "--continue"], capture_output=True, env=env)
        if proc.returncode == 0:
            break
        err = proc.stderr.decode()
        assert proc.returncode == 2 and "injected fault" in err, err
        skipped = project.root / "series" / "up" / "skipped" / "fix-a.patch"
        listed = "fix-a.patch" in project.series() and \
            (project.root / "series" / "up" / "fix-a.patch").is_file()
        assert skipped.is_file() or listed, (nth, err)
        after = snapshot(project.root)
        changed = sorted(k for k in set(before) | set(after)
                         if before.get(k) != after.get(k) and not k.startswith(".patchforge/"))
        if changed:
            partly += 1
            assert "could not be put back" in err, (nth, err)
            assert all(str(project.root / k) in err for k in changed), (changed, err)
            assert "bring-back --continue" in err
        project.cli("bring-back", "--continue")
        assert project.series() == ["fix-b.patch", "fix-a.patch"] and not skipped.exists()
        assert b"+    return -333" in project.patch("fix-a") and not project.work.exists()
    else:
        pytest.fail("the fault never stopped firing")
    assert partly, "no run left a file as written: the test proves nothing"


def test_a_bring_back_that_fails_at_a_write_leaves_the_fix_in_skipped(tmp_path):
    """A bring-back that moves cleanly, failing (EIO) at each of its writes in turn: the
    project is as it was (the fix in skipped/, nowhere else); the next run brings it back."""
    from helpers.snapshot import snapshot

    project = Project(tmp_path)
    stopped_on_a(project)
    project.cli("rebase", "--skip", expect=1)
    project.cli("ledger")
    later = project.up.commit({"pkg/mod.py": BASE}, "revert f3")
    project.cli("rebase", "--to", f"up={later}", expect=1)

    def state() -> dict:
        return {k: v for k, v in snapshot(project.root).items() if k != ".patchforge/lock"}

    assert fail_each_step_in_turn(project, state, "write", "bring-back", "fix-a") > 1
    assert project.series() == ["fix-b.patch", "fix-a.patch"]
    assert not (project.root / "series" / "up" / "skipped" / "fix-a.patch").exists()


def test_a_skipped_fix_that_moves_cleanly_comes_back_without_a_stop(project):
    stopped_on_a(project)
    project.cli("rebase", "--skip", expect=1)
    # Upstream reverts the change that made fix-a conflict: its last good diff applies again.
    later = project.up.commit({"pkg/mod.py": BASE}, "revert f3")
    project.cli("rebase", "--to", f"up={later}", expect=1)
    _, out, _ = project.cli("bring-back", "fix-a")
    assert "is back at the end of the series (applied exactly)" in out
    assert project.series() == ["fix-b.patch", "fix-a.patch"]
    assert f"Base: {later}".encode() in project.patch("fix-a")
    assert b"+    return -3" in project.patch("fix-a")
    assert project.cli("status")[0] == 0


def test_a_skipped_fix_can_be_dropped_for_good(project):
    stopped_on_a(project)
    project.cli("rebase", "--skip", expect=1)
    original = project.patch("fix-a", "skipped")
    _, _, err = project.cli("edit", "fix-a", expect=2)  # not in the series, but not gone
    assert "a rebase set it aside" in err and "bring-back fix-a" in err
    _, out, _ = project.cli("delete", "fix-a")
    assert "removed fix-a from skipped/" in out
    assert project.patch("fix-a", "deleted") == original
    assert project.cli("status")[0] == 0


@pytest.mark.parametrize("by_hand", ["rename", "unlist"])
def test_an_edit_whose_patch_left_the_series_by_hand_keeps_its_unrefreshed_change(project, by_hand):
    """A patch renamed on disk (or taken out of the series file) while its edit holds a change
    not refreshed: refresh says the patch is gone and points at `edit --close`, which must not
    then throw the change away. Before, `edit --close` (and `edit`, `new` of another patch)
    reset the worktree as if everything were refreshed: the change was lost without --discard."""
    project.fix("fix-a", {"pkg/mod.py": text({3: b"def f3():\n    return -3\n\n"})})
    project.cli("edit", "fix-a")
    changed = text({3: b"def f3():\n    return -300\n\n"})
    (project.work / "pkg/mod.py").write_bytes(changed)
    series_dir = project.root / "series" / "up"
    if by_hand == "rename":
        (series_dir / "fix-a.patch").rename(series_dir / "fix-b.patch")
        (series_dir / "series").write_text("fix-b.patch\n")
    else:
        (series_dir / "series").write_text("")
    _, _, err = project.cli("refresh", expect=2)
    assert "no longer in the series" in err
    for refused in (("edit", "--close"), ("new", "fix-c")):
        _, _, err = project.cli(*refused, expect=2)
        assert "not refreshed" in err, refused
        assert (project.work / "pkg/mod.py").read_bytes() == changed, refused
    project.cli("edit", "--close", "--discard")
    # A change that was refreshed before the patch left is in a patch file: nothing to refuse.
    name = "fix-b" if by_hand == "rename" else "fix-a"
    (series_dir / "series").write_text(f"{name}.patch\n")
    project.cli("edit", name)
    (series_dir / f"{name}.patch").rename(series_dir / "fix-z.patch")
    (series_dir / "series").write_text("fix-z.patch\n")
    project.cli("edit", "--close")


@pytest.mark.parametrize("damage", [b'{"patch": ', b"[]", b'{"patch": "../../x.patch", "base": "0"}',
                                    b'{"patch": "fix-a.patch"}',
                                    b'{"patch": "fix-a.patch", "base": 7}'])
def test_a_damaged_edit_state_is_a_clear_error_and_discarding_always_works(project, damage):
    """The open edit's state file (.patchforge/work/<upstream>.json) cut short or edited by
    hand: before, refresh, edit and even `edit --close --discard` ended in an internal error
    (exit 70) with no way out but deleting files by hand, while the project counted as idle, so
    `rebase --to` would take the worktree. Now every command names the file (exit 2), the
    project counts as editing, and `edit --close --discard` ends the edit."""
    project.fix("fix-a", {"pkg/mod.py": text({3: b"def f3():\n    return -3\n\n"})})
    project.cli("edit", "fix-a")
    (project.work / "pkg/mod.py").write_bytes(text({3: b"def f3():\n    return -30\n\n"}))
    state = project.root / ".patchforge" / "work" / "up.json"
    state.write_bytes(damage)
    for command in (("refresh",), ("edit", "fix-a"), ("edit", "--close"),
                    ("rebase", "--to", f"up={project.up.base}")):
        code, _, err = project.cli(*command, expect=None)
        assert code == 2 and str(state) in err, (command, code, err)
    _, _, err = project.cli("status")
    assert "being edited" in err
    project.cli("edit", "--close", "--discard")
    assert not state.exists() and not project.work.exists()
    project.cli("edit", "fix-a")


def test_continue_takes_a_file_whose_own_lines_look_like_conflict_markers(tmp_path):
    """A file that has conflict-marker lines of its own (a document about merges, a test
    fixture) and a real conflict elsewhere: once the conflict is resolved, `--continue` took
    the file's own `<<<<<<< ours` lines for markers left behind and refused it forever (the only
    way on was --skip). Markers the file already had upstream are now its own."""
    from helpers.project import OneUpstreamStack

    own = b"Example:\n<<<<<<< ours\nmine\n=======\nyours\n>>>>>>> theirs\n"
    lines = b"".join(b"line %d\n" % i for i in range(20))
    stack = OneUpstreamStack(tmp_path, {"doc/merging.txt": own + lines})
    stack.add_fix("fix-a", "doc/merging.txt", own + lines,
                  own + lines.replace(b"line 15\n", b"line 15 fixed\n"))
    target = stack.commit({"doc/merging.txt": own + lines.replace(b"line 15\n", b"line 15 up\n")},
                          "v2")
    stack.cli("rebase", "--to", f"up={target}", expect=3)
    work = stack.root / ".patchforge/work/up/doc/merging.txt"
    assert work.read_bytes().count(b"<<<<<<< ") == 2
    work.write_bytes(own + lines.replace(b"line 15\n", b"line 15 up, fixed\n"))
    stack.cli("rebase", "--continue")
    assert b"+line 15 up, fixed\n" in stack.patch("up", "fix-a")
    # A marker the merge wrote is still refused.
    target = stack.commit({"doc/merging.txt": own + lines.replace(b"line 15\n", b"line 15 v3\n")},
                          "v3")
    stack.cli("rebase", "--to", f"up={target}", expect=3)
    _, _, err = stack.cli("rebase", "--continue", expect=2)
    assert "conflict markers left in doc/merging.txt" in err


def test_a_lone_middle_marker_left_after_a_conflict_is_refused(tmp_path):
    """The two outer markers taken out, `=======` left between the sides: `--continue` wrote
    the patch with `+=======` in it, exit 0, and status and lint said nothing. Refused now
    (nothing written); a `=======` line the fix itself adds (a heading's underline) is its
    own and goes through."""
    from helpers.project import OneUpstreamStack

    lines = b"".join(b"line %d\n" % i for i in range(20))
    stack = OneUpstreamStack(tmp_path, {"doc/notes.txt": lines})
    fixed = lines.replace(b"line 15\n", b"line 15 fixed\n").replace(b"line 2\n",
                                                                       b"Title\n=======\n")
    stack.add_fix("fix-a", "doc/notes.txt", lines, fixed)
    before = stack.patch("up", "fix-a")
    target = stack.commit({"doc/notes.txt": lines.replace(b"line 15\n", b"line 15 up\n")}, "v2")
    stack.cli("rebase", "--to", f"up={target}", expect=3)
    work = stack.root / ".patchforge/work/up/doc/notes.txt"
    marked = work.read_bytes()
    assert marked.count(b"\n=======\n") == 2  # the fix's own underline and the conflict's
    half = b"".join(line for line in marked.splitlines(keepends=True)
                    if not line.startswith((b"<<<<<<< ", b">>>>>>> ")))
    work.write_bytes(half)
    _, _, err = stack.cli("rebase", "--continue", expect=2)
    assert "conflict markers left in doc/notes.txt" in err, err
    assert stack.patch("up", "fix-a") == before
    work.write_bytes(fixed.replace(b"line 15 fixed\n", b"line 15 up, fixed\n"))
    stack.cli("rebase", "--continue")
    moved = stack.patch("up", "fix-a")
    assert b"+=======\n" in moved and b"+line 15 up, fixed\n" in moved
    assert moved.count(b"+=======\n") == 1


def test_refresh_never_reverts_a_patch_changed_since_the_edit_opened(project):
    """The stack is a git repository: a `git pull` while an edit is open brings a teammate's
    version of the patch. Refresh wrote the worktree's diff (made from the old version) over
    it, silently reverting the teammate's hunk; it is refused, and the way out keeps both."""
    project.fix("fix-a", {"pkg/mod.py": text({3: b"def f3():\n    return -3\n\n"})})
    project.cli("edit", "fix-a")
    mine = text({3: b"def f3():\n    return -300\n\n"})
    (project.work / "pkg/mod.py").write_bytes(mine)
    patch_path = project.root / "series" / "up" / "fix-a.patch"
    theirs = patch_path.read_bytes() + (b"@@ -44,7 +44,7 @@ def f14():\n     return 14\n \n def f15():\n"
                       b"-    return 15\n+    return -15\n \n def f16():\n     return 16\n")
    patch_path.write_bytes(theirs)  # what the pull brings
    code, _, err = project.cli("refresh", expect=2)
    assert "changed since `edit` opened it" in err and "series/up/fix-a.patch" in err
    assert patch_path.read_bytes() == theirs
    assert (project.work / "pkg/mod.py").read_bytes() == mine
    # The way out the message gives.
    project.cli("edit", "--close", "--discard")
    project.cli("edit", "fix-a")
    assert b"return -15" in (project.work / "pkg/mod.py").read_bytes()
    (project.work / "pkg/mod.py").write_bytes(
        (project.work / "pkg/mod.py").read_bytes().replace(b"return -3\n", b"return -300\n"))
    project.cli("refresh")
    assert b"+    return -15" in project.patch("fix-a") and b"+    return -300" in project.patch("fix-a")


def test_an_edit_whose_patch_a_pull_deleted_or_renamed_names_ways_on_that_keep_its_change(
        project):
    """A `git pull` while fix-a is being edited (a change not refreshed yet) brings a teammate's
    `delete fix-a`, or their `rename fix-a fix-z`. Every read-only command's note still said
    "`patchforge refresh` writes the change into fix-a.patch", refresh refused, and its hint and
    `edit --close` (refused too) left `--discard` as the only way out. The note says the patch
    left the series, and the ways it names keep the change: the rename run here takes the edit
    to the new name, and refresh writes it there."""
    project.fix("fix-a", {"pkg/mod.py": text({3: b"def f3():\n    return -3\n\n"})})
    project.fix("fix-b", {"pkg/mod.py": text({3: b"def f3():\n    return -3\n\n",
                                              9: b"def f9():\n    return -9\n\n"})})
    series = project.root / "series" / "up"
    listed = (series / "series").read_bytes()
    project.cli("edit", "fix-a")
    mine = text({3: b"def f3():\n    return -300\n\n"})
    (project.work / "pkg/mod.py").write_bytes(mine)
    # What the pull of a teammate's `patchforge rename fix-a fix-z` brings.
    (series / "fix-a.patch").rename(series / "fix-z.patch")
    (series / "series").write_bytes(listed.replace(b"fix-a.patch", b"fix-z.patch"))
    _, _, err = project.cli("status")
    assert "fix-a.patch is being edited" in err and "no longer in the series" in err, err
    assert "`patchforge refresh` writes the change" not in err, err
    assert "`patchforge rename up/fix-a NEW`" in err, err
    _, _, err = project.cli("refresh", expect=2)
    assert "no longer in the series" in err and "`patchforge rename up/fix-a NEW`" in err, err
    # The way on it names: the rename run here takes the edit, its change kept, to fix-z.
    project.cli("rename", "up/fix-a", "fix-z")
    _, _, err = project.cli("status")
    assert "fix-z.patch is being edited" in err and "no longer in the series" not in err, err
    project.cli("refresh")
    assert b"+    return -300" in (series / "fix-z.patch").read_bytes()
    # A teammate's `patchforge delete fix-z` pulled while it is being edited again.
    project.cli("edit", "fix-z")
    (project.work / "pkg/mod.py").write_bytes(text({3: b"def f3():\n    return -301\n\n"}))
    (series / "deleted").mkdir(exist_ok=True)
    (series / "fix-z.patch").rename(series / "deleted" / "fix-z.patch")
    (series / "series").write_bytes(b"fix-b.patch\n")
    _, _, err = project.cli("list")
    assert "no longer in the series" in err and "copy what you changed out of" in err, err
    assert "`patchforge edit --close --discard`" in err, err
    project.cli("edit", "--close", expect=2)  # (refused: the change is kept for the copy)
    assert b"return -301" in (project.work / "pkg/mod.py").read_bytes()


def test_refresh_names_the_patch_as_edit_takes_it_when_another_series_has_its_name(
        project, tmp_path):
    """up2's series has a patch named as up's fix-a (a merge of two branches made so; `new`
    and `rename` refuse it). Then the short name is refused as in several series, and
    refresh's closing line named `patchforge edit fix-a`, which exits 2: it names `up/fix-a`,
    which opens the edit."""
    project.fix("fix-a", {"pkg/mod.py": text({3: b"def f3():\n    return -3\n\n"})})
    other = Upstream(tmp_path / "up2", {"pkg/two.py": BASE})
    project.cli("upstream", "add", "up2", "--git", str(other.path), "--at", other.base,
                "--install-root", "/opt/two")
    project.cli("new", "g", "--upstream", "up2", "--no-edit")
    # (`new` and `rename` refuse the name: a stack made so by a merge of two branches.)
    series = project.root / "series/up2"
    (series / "g.patch").rename(series / "fix-a.patch")
    (series / "series").write_text("fix-a.patch\n")
    project.cli("edit", "up/fix-a")
    (project.work / "pkg/mod.py").write_bytes(text({3: b"def f3():\n    return -30\n\n"}))
    _, out, _ = project.cli("refresh", "up/fix-a")
    assert "(`patchforge edit up/fix-a` opens it again)" in out, out
    project.cli("edit", "fix-a", expect=2)  # (the short name: in several series)
    project.cli("edit", "up/fix-a")
    assert b"return -30" in (project.work / "pkg/mod.py").read_bytes()


def test_status_and_lint_name_an_empty_patch_as_edit_takes_it_when_another_series_has_its_name(
        project, tmp_path):
    """up2's fix-b has no change yet (made by `new`), and up has a fix-b too (a merge made it
    so). `status` and `lint` said `patchforge edit fix-b`, which exits 2 (in several series);
    they name `up2/fix-b`, which opens up2's patch."""
    project.fix("fix-b", {"pkg/mod.py": text({3: b"def f3():\n    return -3\n\n"})})
    _twin_in_another_series(project, tmp_path, "fix-b")
    for argv in (("status",), ("lint", "--no-forge")):
        _, out, err = project.cli(*argv, expect=None)
        assert "has no change yet (no diff): `patchforge edit up2/fix-b`" in out + err, \
            (argv, out, err)
    project.cli("edit", "up2/fix-b")
    _, _, err = project.cli("status", expect=None)
    assert "note: up2: fix-b.patch is being edited" in err, err


def test_a_name_another_series_has_is_refused_by_new_rename_and_the_imports(project, tmp_path):
    """up has fix-a. `new fix-a --upstream up2` was refused, but `rename up2/g fix-a`, `import
    overlay --name fix-a` and `import quilt` of a fix-a.patch into up2 were taken: from then
    on `edit fix-a`, `delete fix-a` and every hint naming it were refused as in several
    series. One rule now: a patch's name names one fix in the project; each is refused,
    exit 2, naming up/fix-a, nothing written. A name of up2's own is taken as before."""
    project.fix("fix-a", {"pkg/mod.py": text({3: b"def f3():\n    return -3\n\n"})})
    other = Upstream(tmp_path / "up2", {"pkg/two.py": BASE})
    project.cli("upstream", "add", "up2", "--git", str(other.path), "--at", other.base,
                "--install-root", "/opt/two")
    project.cli("new", "g", "--upstream", "up2", "--no-edit")
    before = {p.relative_to(project.root): p.read_bytes()
              for p in (project.root / "series").rglob("*") if p.is_file()}
    overlay = tmp_path / "two.py"
    overlay.write_bytes(BASE.replace(b"return 5", b"return -5"))
    quilt = tmp_path / "quilt"
    (quilt / "patches").mkdir(parents=True)
    (quilt / "patches/series").write_text("fix-a.patch\n")
    (quilt / "patches/fix-a.patch").write_bytes(
        b"Fix five\n\n--- a/pkg/two.py\n+++ b/pkg/two.py\n@@ -16,2 +16,2 @@\n def f5():\n"
        b"-    return 5\n+    return -5\n")
    for argv in (("new", "fix-a", "--upstream", "up2", "--no-edit"),
                 ("rename", "up2/g", "fix-a"),
                 ("import", "overlay", str(overlay), "--upstream", "up2", "--path",
                  "pkg/two.py", "--name", "fix-a"),
                 ("import", "quilt", str(quilt / "patches"), "--upstream", "up2")):
        _, out, err = project.cli(*argv, expect=2)
        assert "fix-a.patch is the name of a patch of the up series (up/fix-a)" in err, \
            (argv, out, err)
        assert {p.relative_to(project.root): p.read_bytes()
                for p in (project.root / "series").rglob("*") if p.is_file()} == before, argv
    project.cli("import", "overlay", str(overlay), "--upstream", "up2", "--path",
                "pkg/two.py", "--name", "fix-five")
    project.cli("rename", "up2/g", "fix-g")
    assert "up2/fix-a" not in project.cli("list")[1]


def test_every_hint_naming_a_patch_another_series_has_names_it_as_edit_takes_it(
        project, tmp_path):
    """up's fix-b deletes pkg/other.py (made before the project wrote overlays); up2 has an
    empty fix-b of its own (a merge made it so). The export warnings, lint's and status'
    overlay findings and rebase's refusal said `patchforge edit fix-b` (or `delete fix-b`),
    which exits 2 (in several series). Each names UPSTREAM/fix-b now, and each command named
    acts on that series' fix-b."""
    project.cli("new", "fix-b", "--file=pkg/other.py")
    (project.work / "pkg/other.py").unlink()
    project.cli("refresh")
    _twin_in_another_series(project, tmp_path, "fix-b")

    def named(said: str) -> list[tuple[str, str]]:
        return [(verb, word) for verb, word in
                re.findall(r"`patchforge (edit|delete) ([^`\s]+)`", said)
                if word.endswith("fix-b")]

    def follow(word: str) -> None:
        upstream = word.split("/")[0]
        project.cli("edit", word)
        _, _, err = project.cli("status", expect=None)
        assert f"note: {upstream}: fix-b.patch is being edited" in err, err
        project.cli("edit", "--close")

    _, out, err = project.cli("export", "--quilt", str(tmp_path / "quilt"))
    assert named(out + err) == [("edit", "up2/fix-b")], out + err
    _, out, err = project.cli("export", "--upstream", "up2", "--mbox",
                              str(tmp_path / "fixes.mbox"))
    assert named(out + err) == [("edit", "up2/fix-b")], out + err
    follow("up2/fix-b")
    # The project writes overlays from now on: the deletion is refused by `overlays`.
    (project.root / "overlays").mkdir()
    for argv in (("lint", "--no-forge"), ("status",)):
        _, out, err = project.cli(*argv, expect=None)
        said = [pair for pair in named(out + err) if pair[1] == "up/fix-b"]
        assert said == [("edit", "up/fix-b")], (argv, out + err)
        assert ("edit", "fix-b") not in named(out + err), (argv, out + err)
    follow("up/fix-b")
    target = project.up.commit({"pkg/mod.py": text({5: b"def f5():\n    return 55\n\n"})})
    _, out, err = project.cli("rebase", "--to", f"up={target}", expect=2)
    assert named(out + err) == [("edit", "up/fix-b"), ("delete", "up/fix-b")], out + err
    project.cli("delete", "up/fix-b")
    assert project.series() == []
    assert (project.root / "series/up2/series").read_text() == "fix-b.patch\n"


def test_add_at_a_stop_on_a_file_gone_upstream_names_the_patch_as_show_takes_it(
        project, tmp_path):
    """up's fix-b changes pkg/other.py, which the target deletes: the rebase stops there, and
    `add pkg/other.py` warned "`patchforge show fix-b.patch` has the fix's change to it",
    which exits 2 while up2 has a fix-b too (in several series). It names `up/fix-b`, and
    `show up/fix-b` prints up's fix-b."""
    project.fix("fix-b", {"pkg/other.py": b"x = 2\n"})
    _twin_in_another_series(project, tmp_path, "fix-b")
    target = project.up.commit({"pkg/other.py": None})
    project.cli("rebase", "--to", f"up={target}", expect=None)
    _, out, err = project.cli("add", "pkg/other.py", expect=None)
    named = re.findall(r"`patchforge show ([^`]+)`", out + err)
    assert named == ["up/fix-b"], out + err
    _, out, _ = project.cli("show", *named)
    assert "+x = 2" in out, out


def _twin_in_another_series(project: Project, tmp_path: Path, name: str) -> None:
    """A second upstream, up2, whose series has a patch of its own named `name` too (a stack
    made so by a merge of two branches, or by an older version: `new` and `rename` refuse it)."""
    other = Upstream(tmp_path / "up2", {"pkg/two.py": BASE})
    project.cli("upstream", "add", "up2", "--git", str(other.path), "--at", other.base,
                "--install-root", "/opt/two")
    project.cli("new", "g", "--upstream", "up2", "--no-edit")
    series = project.root / "series/up2"
    (series / "g.patch").rename(series / f"{name}.patch")
    (series / "series").write_text(f"{name}.patch\n")


def test_a_fix_set_aside_is_named_as_bring_back_and_delete_take_it_beside_a_twin(
        project, tmp_path):
    """A rebase set up's fix-a aside (skipped/); up2's series has a fix-a of its own (a merge
    made it so). `status`, `lint`, `verify` and `overlays` said `patchforge delete fix-a`,
    which takes up2's live fix-a out of its series, and `bring-back fix-a`. They name
    `up/fix-a`, and the commands named act on up's set-aside fix; with a fix-a set aside in
    both series (where the short name is refused as skipped in several), each is named by
    its own upstream."""
    stopped_on_a(project)
    project.cli("rebase", "--skip", expect=1)
    project.cli("overlays", expect=None)
    _twin_in_another_series(project, tmp_path, "fix-a")

    def named(said: str) -> set[tuple[str, str]]:
        return set(re.findall(r"`patchforge (bring-back|delete) ([^`\s]*fix-a)`", said))

    for argv in (("status",), ("lint", "--no-forge"), ("verify",), ("overlays",)):
        _, out, err = project.cli(*argv, expect=None)
        assert named(out + err) == {("bring-back", "up/fix-a"), ("delete", "up/fix-a")}, \
            (argv, out + err)
    up2 = project.root / "series/up2"
    (up2 / "skipped").mkdir()
    (up2 / "fix-a.patch").rename(up2 / "skipped/fix-a.patch")
    (up2 / "series").write_text("")
    _, out, err = project.cli("status", expect=None)
    assert named(out + err) == {("bring-back", "up/fix-a"), ("delete", "up/fix-a"),
                                ("bring-back", "up2/fix-a"), ("delete", "up2/fix-a")}, out + err
    project.cli("delete", "up2/fix-a")
    assert not (up2 / "skipped/fix-a.patch").exists()
    assert (project.root / "series/up/skipped/fix-a.patch").exists()


@pytest.mark.parametrize("command", ["delete", "move"])
def test_delete_and_move_name_a_patch_as_edit_takes_it_when_another_series_has_its_name(
        project, tmp_path, command):
    """fix-b changes fix-a's line; up2's series has a fix-b.patch of its own. `delete fix-a`
    (fix-b no longer applies without it) and `move fix-b --first` (fix-b does not apply
    there) said `patchforge edit fix-b`, which exits 2 (in several series). They name
    `up/fix-b` now, and the command they name opens up's fix-b."""
    project.fix("fix-a", {"pkg/mod.py": text({3: b"def f3():\n    return -3\n\n"})})
    project.fix("fix-b", {"pkg/mod.py": text({3: b"def f3():\n    return -33\n\n"})})
    _twin_in_another_series(project, tmp_path, "fix-b")
    argv = ("delete", "fix-a") if command == "delete" else ("move", "up/fix-b", "--first")
    _, _, err = project.cli(*argv, expect=1)
    named = re.findall(r"`patchforge edit ([^`]+)`", err)
    assert named == ["up/fix-b"], err
    # (Its hunk does not apply: the edit opens with it marked in the worktree, exit 2.)
    _, out, err = project.cli("edit", *named, expect=None)
    assert "fix-b.patch does not apply on the series before it" in err, out + err
    _, _, err = project.cli("status", expect=None)
    assert "note: up: fix-b.patch is being edited" in err, err


def test_bump_dry_run_says_an_edit_not_refreshed_keeps_the_bump_from_running(project):
    """An edit holds a change not refreshed. `bump --dry-run` said "the stack would move
    cleanly", exit 0, of the patch file, not a word of the edit, and the bump itself is refused
    (exit 2) for that edit; `rebase --dry-run` says so in a note, and so does the bump's."""
    project.fix("fix-a", {"pkg/mod.py": text({3: b"def f3():\n    return -3\n\n"})})
    project.cli("edit", "fix-a")
    (project.work / "pkg/mod.py").write_bytes(text({3: b"def f3():\n    return -300\n\n"}))
    target = project.up.commit({"pkg/other.py": b"x = 3\n"})
    _, out, err = project.cli("bump", "up", "--to", target, "--dry-run")
    assert "would move cleanly" in out, out
    assert "note: up/fix-a.patch is being edited and has changes not refreshed: this dry run " \
        "used its patch file, and the bump is refused until `patchforge refresh`" in err, err
    _, _, err = project.cli("bump", "up", "--to", target, expect=2)
    assert "has changes not refreshed" in err, err
    project.cli("refresh")
    _, _, err = project.cli("bump", "up", "--to", target, "--dry-run")
    assert "being edited" not in err, err


def test_refresh_says_when_the_series_before_the_patch_changed_under_the_edit(project):
    """A `git pull` while `fix-b` is being edited brings a teammate's fix-a, changing a line in
    fix-b's hunk's context. refresh wrote fix-b, made on the old fix-a, exit 0 without a word;
    `status` then said conflict and `overlays` failed. It is written all the same (nothing of
    either change is lost) and said, exit 1, with the way on: `edit fix-b` opens it on the
    series as it is now, the hunk that no longer applies marked."""
    f3 = {3: b"def f3():\n    return -3\n\n"}
    project.fix("fix-a", {"pkg/mod.py": text(f3)})
    project.fix("fix-b", {"pkg/mod.py": text({**f3, 9: b"def f9():\n    return -9\n\n"})})
    a_path = project.root / "series" / "up" / "fix-a.patch"
    ours = a_path.read_bytes()
    project.cli("edit", "fix-a")  # the teammate's fix-a, also changing f9's def (fix-b's context)
    (project.work / "pkg/mod.py").write_bytes(text({**f3, 9: b"def f9(n):\n    return 9\n\n"}))
    project.cli("refresh", expect=1)
    theirs = a_path.read_bytes()
    a_path.write_bytes(ours)
    project.cli("edit", "fix-b")
    mine = {9: b"def f9():\n    return -9\n\n", 15: b"def f15():\n    return -15\n\n"}
    (project.work / "pkg/mod.py").write_bytes(text({**f3, **mine}))
    a_path.write_bytes(theirs)  # what the pull brings
    result = run_cli(project.root, "refresh")
    assert result.rc == 1, result.out + result.err
    assert "warning: fix-b.patch does not apply on the series before it as that is now: the " \
        "series changed since `edit` opened it" in result.err, result.err
    assert "`patchforge edit fix-b` opens it on the series as it is now" in result.err, result.err
    assert b"+    return -15" in project.patch("fix-b") and a_path.read_bytes() == theirs
    project.cli("status", expect=1)
    # The way on: the edit opens on the series as it is now, the hunk marked.
    _, _, err = project.cli("edit", "fix-b", expect=2)
    assert "fix-b.patch does not apply on the series before it" in err and "hunk #1" in err, err
    (project.work / "pkg/mod.py").write_bytes(
        text({**f3, **mine, 9: b"def f9(n):\n    return -9\n\n"}))
    _, _, err = project.cli("refresh")
    assert "warning" not in err, err
    project.cli("status")
    project.cli("overlays")


def _two_no_longer_applies(project) -> dict:
    """Patch `two` (pkg/mod.py's f3 and f12, after `early`'s f15) made not to apply by an
    `early` refreshed with f3 changed too: its hunk #1 fails, hunk #2 applies. Returns
    `early`'s change, for the files the test writes."""
    early = {15: b"def f15():\n    return -15\n\n"}
    project.fix("early", {"pkg/mod.py": text(early)})
    project.fix("two", {"pkg/mod.py": text({**early, 3: b"def f3():\n    return -3\n\n",
                                            12: b"def f12():\n    return -12\n\n"})})
    project.cli("edit", "early")
    (project.work / "pkg/mod.py").write_bytes(text({**early, 3: b"def f3():\n    return 33\n\n"}))
    _, _, err = project.cli("refresh", expect=1)
    assert "two.patch no longer applies" in err
    return early


def test_an_edit_of_a_patch_that_no_longer_applies_keeps_every_hunk(project):
    """`edit` of a patch an earlier patch's change no longer lets apply: the worktree holds
    its hunks that apply, applied, and the one that does not marked where it should go, and
    refresh refuses while a marker is left. The worktree held none of the file's hunks (exit
    2), and redoing the failed one and refreshing (exit 0) wrote the patch without the other."""
    early = _two_no_longer_applies(project)
    two = project.patch("two")
    _, _, err = project.cli("edit", "two", expect=2)
    assert "pkg/mod.py: hunk #1 failed; marked where it should go" in err, err
    opened = (project.work / "pkg/mod.py").read_bytes()
    assert b"    return -12\n" in opened  # hunk #2 applied
    assert b"<<<<<<< series before two.patch\n" in opened
    assert b">>>>>>> two.patch hunk #1\n" in opened and b"    return -3\n" in opened
    # Hunk #1 made again by hand, its marker block left: refused, nothing written.
    (project.work / "pkg/mod.py").write_bytes(opened.replace(b"return 33\n", b"return -33\n"))
    _, _, err = project.cli("refresh", expect=2)
    assert "conflict markers left in pkg/mod.py" in err
    assert project.patch("two") == two
    # Resolved: the patch holds both hunks.
    (project.work / "pkg/mod.py").write_bytes(
        text({**early, 3: b"def f3():\n    return -33\n\n", 12: b"def f12():\n    return -12\n\n"}))
    project.cli("refresh")
    moved = project.patch("two")
    assert b"+    return -33" in moved and b"+    return -12" in moved, moved.decode()
    assert project.cli("status")[0] == 0


@pytest.mark.parametrize("how", ["put back", "removed"])
def test_a_marked_file_put_back_or_removed_never_empties_the_patch(project, how):
    """A file `edit` marked, put back as it was at the base (`git checkout -- FILE` to start
    over) or removed, has no marker left: refresh wrote the patch with an empty diff (or
    deleting the whole file), exit 0, and status said it applies. Refused now, the patch as
    it was; `edit --close --discard` ends the edit with the patch kept."""
    _two_no_longer_applies(project)
    two = project.patch("two")
    project.cli("edit", "two", expect=2)
    marked = project.work / "pkg/mod.py"
    if how == "put back":
        subprocess.run(["git", "checkout", "--", "pkg/mod.py"], cwd=project.work, check=True,
                       capture_output=True)
    else:
        marked.unlink()
    _, _, err = project.cli("refresh", expect=2)
    assert "pkg/mod.py holds none of two.patch's change where `edit` marked it" in err, err
    assert project.patch("two") == two
    project.cli("edit", "--close", "--discard")
    assert project.patch("two") == two


def test_refresh_of_a_worktree_put_back_as_at_the_base_never_empties_the_fix(project):
    """`edit`, then the worktree put back as at the base (`git checkout -- FILE` to start over,
    an editor's revert), then `refresh`: it wrote the patch with no change at all, exit 0, and
    status said it applies. Refused now (quilt says "Nothing in patch" too), the patch as it
    was, with the ways on."""
    project.fix("fa", {"pkg/mod.py": text({12: b"def f12():\n    return -12\n\n"})})
    before = project.patch("fa")
    project.cli("edit", "fa")
    subprocess.run(["git", "checkout", "--", "pkg/mod.py"], cwd=project.work, check=True,
                   capture_output=True)
    _, _, err = project.cli("refresh", expect=2)
    assert "refresh would empty up/fa.patch" in err and "patchforge delete fa" in err, err
    assert project.patch("fa") == before
    project.cli("edit", "--close", "--discard")
    assert project.patch("fa") == before
    # An empty patch (`new`, nothing made yet) still refreshes as it is.
    project.cli("new", "empty", "--file", "pkg/mod.py")
    project.cli("refresh")


def test_refresh_of_another_patch_than_the_open_one_names_the_open_one(project):
    """`refresh fa` while `fb` is open said "run `patchforge edit fa`", which is refused while
    `fb`'s edit has changes: the hint names the open edit and its way on first."""
    project.fix("fa", {"pkg/mod.py": text({12: b"def f12():\n    return -12\n\n"})})
    project.fix("fb", {"pkg/mod.py": text({3: b"def f3():\n    return -3\n\n"})})
    project.cli("edit", "fb")
    _, _, err = project.cli("refresh", "fa", expect=2)
    assert "fa.patch is not being edited" in err
    assert "up/fb.patch is being edited: `patchforge refresh` writes it" in err, err
    project.cli("edit", "--close")
    _, _, err = project.cli("refresh", "fa", expect=2)
    assert "`patchforge edit NAME` opens a patch" in err, err


def test_an_edit_of_a_patch_file_saved_with_crlf_line_ends_never_empties_it(project):
    """A patch file saved with CRLF line ends (an editor's doing) applies nowhere: `edit` marks
    its hunk in the file, and refresh refuses while the marker is there. It exited 2 with the
    file as it was, and refresh then wrote the patch with no change at all (exit 0)."""
    project.fix("fc", {"pkg/mod.py": text({12: b"def f12():\n    return -12\n\n"})})
    path = project.root / "series" / "up" / "fc.patch"
    path.write_bytes(path.read_bytes().replace(b"\n", b"\r\n"))
    saved = path.read_bytes()
    project.cli("edit", "fc", expect=2)
    assert b">>>>>>> fc.patch hunk #1\n" in (project.work / "pkg/mod.py").read_bytes()
    _, _, err = project.cli("refresh", expect=2)
    assert "conflict markers left in pkg/mod.py" in err
    assert path.read_bytes() == saved


def test_edit_waits_for_no_one_while_another_command_holds_the_project(project):
    """`edit` took no lock: beside a running rebase (which holds it until it stops) it could
    replace the rebase's conflict worktree. It is refused while another process works."""
    project.fix("fix-a", {"pkg/mod.py": text({3: b"def f3():\n    return -3\n\n"})})
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from patchforge.fsutil import RepoLock\n"
         "with RepoLock(sys.argv[1]):\n    print('held', flush=True); time.sleep(60)",
         str(project.root / ".patchforge")], stdout=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])})
    try:
        assert holder.stdout.readline() == "held\n"
        _, _, err = project.cli("edit", "fix-a", expect=2)
        assert "another patchforge process" in err and f"pid {holder.pid}" in err
        assert not project.work.exists()
    finally:
        holder.kill()
        holder.wait()
    project.cli("edit", "fix-a")


def test_status_never_says_all_apply_over_a_patch_file_its_series_does_not_list(project):
    """A `git merge` of the stack whose series file took one side lost fix-b's entry: its
    file stays, in no overlay and no rebase, and status said "all 1 patches apply"."""
    import json

    project.fix("fix-a", {"pkg/mod.py": text({3: b"def f3():\n    return -3\n\n"})})
    project.fix("fix-b", {"pkg/other.py": b"x = 2\n"})
    (project.root / "series" / "up" / "series").write_bytes(b"fix-a.patch\n")
    _, out, _ = project.cli("status", expect=1)
    assert "not in the series (needs attention): series/up/fix-b.patch" in out
    _, out, _ = project.cli("status", "--json", expect=1)
    doc = json.loads(out)
    assert doc["needs_attention"] is True
    assert doc["unlisted"] == [{"upstream": "up", "name": "fix-b.patch",
                                "path": "series/up/fix-b.patch"}]
    (project.root / "series" / "up" / "series").write_bytes(b"fix-a.patch\nfix-b.patch\n")
    assert project.cli("status")[0] == 0


def test_a_patch_file_emptied_is_never_taken_for_a_patch_that_changes_nothing(project, tmp_path):
    """A patch file of no bytes (a checkout or merge that lost its content) was read as a
    patch that changes nothing: status said "all 1 patches apply" (exit 0) and overlays wrote
    an overlay set without the fix. Every command that reads it refuses it, naming the file;
    `delete` still takes it out."""
    project.fix("fix-a", {"pkg/mod.py": text({3: b"def f3():\n    return -3\n\n"})})
    project.cli("overlays")
    path = project.root / "series" / "up" / "fix-a.patch"
    path.write_bytes(b"")
    before = snapshot(project.root)
    for args in (("status",), ("overlays",), ("overlays", "--check"),
                 ("export", "--quilt", str(tmp_path / "q"))):
        _, _, err = project.cli(*args, expect=2)
        assert f"{path}: an empty file, not a patch" in err, (args, err)
    assert snapshot(project.root) == before and not (tmp_path / "q").exists()
    # A Git LFS pointer in its place: no header, no diff.
    path.write_bytes(b"version https://git-lfs.github.com/spec/v1\noid sha256:" + b"1" * 64
                     + b"\nsize 812\n")
    for args in (("status",), ("overlays",)):
        _, _, err = project.cli(*args, expect=2)
        assert f"{path}: neither a patch header nor a diff" in err, (args, err)
    project.cli("delete", "fix-a")
    assert project.series() == []


def test_an_upstream_with_patches_and_no_pin_is_never_left_out_of_status(project):
    """upstream.lock lost (a merge, never committed): status skipped every upstream without a
    pin and said "all 0 patches apply" (exit 0) over the series. It refuses, naming the
    upstream and how to pin it again; overlays too."""
    project.fix("fix-a", {"pkg/mod.py": text({3: b"def f3():\n    return -3\n\n"})})
    lock = project.root / "upstream.lock"
    saved = lock.read_bytes()
    lock.unlink()
    for args in (("status",), ("overlays",)):
        _, _, err = project.cli(*args, expect=2)
        assert "upstream 'up' is not pinned in upstream.lock" in err, err
        assert "`patchforge upstream pin up --at SPEC`" in err, err
    lock.write_bytes(saved)
    project.cli("status")


def test_an_upstream_renamed_in_the_configuration_never_hides_its_series(project):
    """`[upstreams.up]` renamed to `[upstreams.vllm]` by hand (or lost in a merge of the
    stack): series/up/ was read by nothing, so status said "all 0 patches apply" (exit 0) and
    overlays wrote an overlay set without the fix (exit 0), and lint failed with "unknown
    upstream 'up'" naming no file. status names the series (exit 1), overlays refuses (exit 2,
    nothing written), lint reports the series and the lock's pin."""
    import json

    project.fix("fix-a", {"pkg/mod.py": text({3: b"def f3():\n    return -3\n\n"})})
    project.cli("overlays")
    config = project.root / "patchforge.toml"
    config.write_text(config.read_text().replace("[upstreams.up]", "[upstreams.vllm]"))
    _, out, _ = project.cli("status", expect=1)
    assert "not in any series (needs attention): series/up/fix-a.patch: 'up' is no " \
        "configured upstream" in out, out
    doc = json.loads(project.cli("status", "--json", expect=1)[1])
    assert doc["needs_attention"] is True and doc["unlisted"] == [
        {"upstream": "up", "name": "fix-a.patch", "path": "series/up/fix-a.patch"}]
    before = snapshot(project.root / "overlays")
    for args in (("overlays",), ("overlays", "--check")):
        _, _, err = project.cli(*args, expect=2)
        assert "series/up/ holds 1 patch file (fix-a.patch) of upstream 'up', which " \
            "patchforge.toml does not configure" in err, err
    assert snapshot(project.root / "overlays") == before
    doc = json.loads(project.cli("lint", "--no-forge", "--json", expect=1)[1])
    assert {("series/up", "series"), ("upstream.lock", "lock")} <= \
        {(f["patch"], f["check"]) for f in doc["findings"] if f["severity"] == "error"}, doc
    config.write_text(config.read_text().replace("[upstreams.vllm]", "[upstreams.up]"))
    project.cli("status")
    project.cli("overlays", "--check")


def test_a_pin_of_an_upstream_the_configuration_does_not_name_is_said(project):
    """A pin in upstream.lock for an upstream the configuration no longer names (renamed or
    removed by hand, a lock merged by hand) was read by nothing and kept by every write of the
    lock, without a word from status. status notes it naming the lock's line, lint reports it,
    and a write of the lock says it kept it."""
    import json

    lock = project.root / "upstream.lock"
    doc = json.loads(lock.read_bytes())
    doc["upstreams"]["old"] = dict(doc["upstreams"]["up"])
    lock.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    said = "upstream.lock:3: pins upstream 'old', which patchforge.toml does not configure"
    _, _, err = project.cli("status")
    assert said in err, err
    doc = json.loads(project.cli("lint", "--no-forge", "--json", expect=None)[1])
    assert any(f["check"] == "lock" and said in f["message"] for f in doc["findings"]), doc
    commit = json.loads(lock.read_bytes())["upstreams"]["up"]["commit"]
    _, _, err = project.cli("upstream", "pin", "up", "--at", commit)
    assert said in err and "every write of the lock keeps it" in err, err
    assert "old" in json.loads(lock.read_bytes())["upstreams"]


def _paused_at_the_lock(project: Project, *args: str) -> subprocess.Popen:
    """Run `patchforge ARGS` in a process of its own that stops itself (SIGSTOP) just before it
    takes the project lock (PATCHFORGE_FAULT=lock:1, mode stop): what it read before is what
    a second command may change meanwhile."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1]),
           "PATCHFORGE_FAULT": "lock:1", "PATCHFORGE_FAULT_MODE": "stop"}
    proc = subprocess.Popen([sys.executable, "-m", "patchforge", *args], cwd=project.root,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    stat = Path(f"/proc/{proc.pid}/stat")
    for _ in range(600):
        if stat.read_text().rsplit(")", 1)[1].split()[0] == "T":
            return proc
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    proc.kill()
    raise AssertionError(f"patchforge {' '.join(args)} never reached the lock")


def _go_on(proc: subprocess.Popen) -> tuple[int, str]:
    os.kill(proc.pid, signal.SIGCONT)
    _, err = proc.communicate(timeout=120)
    return proc.returncode, err.decode()


def test_a_rename_never_writes_what_it_read_before_a_refresh_beside_it(project):
    """`rename` (allowed while an edit is open) read the patch before it took the lock: a
    `refresh` in between wrote the change, then the rename wrote the old bytes under the new
    name and removed the refreshed file: the change was lost."""
    project.fix("fix-a", {"pkg/mod.py": text({3: b"def f3():\n    return -3\n\n"})})
    project.cli("edit", "fix-a")
    (project.work / "pkg/mod.py").write_bytes(text({3: b"def f3():\n    return -300\n\n"}))
    renaming = _paused_at_the_lock(project, "rename", "fix-a", "fix-z")
    try:
        project.cli("refresh")
    finally:
        code, err = _go_on(renaming)
    assert code == 0, err
    assert project.series() == ["fix-z.patch"]
    assert b"+    return -300" in project.patch("fix-z")


@pytest.mark.parametrize("beside", [("rename", "fix-a", "fix-z"),
                                    ("edit", "--close", "--discard")])
def test_a_refresh_whose_edit_changed_beside_it_says_so(project, beside):
    """`refresh` read the edit, then a `rename` of the edited patch ran beside it: the refresh
    failed with "fix-a.patch is listed in the series but the file is missing" (it is not
    listed). After an `edit --close --discard` beside it, it wrote the change the user had
    just thrown away. Both say what happened, exit 2, nothing written; after the rename the
    worktree is kept and `refresh` again writes the change into the renamed patch."""
    project.fix("fix-a", {"pkg/mod.py": text({3: b"def f3():\n    return -3\n\n"})})
    project.cli("edit", "fix-a")
    (project.work / "pkg/mod.py").write_bytes(text({3: b"def f3():\n    return -300\n\n"}))
    refreshing = _paused_at_the_lock(project, "refresh")
    try:
        project.cli(*beside)
    finally:
        code, err = _go_on(refreshing)
    assert code == 2 and "while refresh waited" in err, err
    assert all(b"-300" not in path.read_bytes()
               for path in (project.root / "series" / "up").glob("*.patch"))
    if beside[0] == "rename":
        assert "renamed to fix-z.patch" in err
        project.cli("refresh")
        assert b"+    return -300" in project.patch("fix-z")


def test_a_move_never_writes_a_series_read_before_a_new_patch_joined_it(project):
    """`move` read the series, judged the new order (the long part), then wrote it: a `new`
    in between lost its entry (its file left unlisted, in no overlay)."""
    project.fix("fix-a", {"pkg/mod.py": text({3: b"def f3():\n    return -3\n\n"})})
    project.fix("fix-b", {"pkg/other.py": b"x = 2\n"})
    moving = _paused_at_the_lock(project, "move", "fix-b", "--first")
    try:
        project.cli("new", "fix-c", "--no-edit")
    finally:
        code, err = _go_on(moving)
    assert "fix-c.patch" in project.series()
    if code == 0:
        assert project.series() == ["fix-b.patch", "fix-a.patch", "fix-c.patch"]
    else:
        assert code == 2 and "changed while" in err, err


def test_a_bring_back_never_writes_a_series_read_before_a_new_patch_joined_it(project):
    """`bring-back` judged the fix on the series as it read it, then wrote that series with
    the fix added: a `new` in between lost its entry."""
    stopped_on_a(project)
    project.cli("rebase", "--skip", expect=1)
    later = project.up.commit({"pkg/mod.py": BASE}, "revert f3")
    project.cli("rebase", "--to", f"up={later}", expect=1)
    bringing = _paused_at_the_lock(project, "bring-back", "fix-a")
    try:
        project.cli("new", "fix-c", "--no-edit")
    finally:
        code, err = _go_on(bringing)
    assert "fix-c.patch" in project.series()
    if code == 0:
        assert project.series() == ["fix-b.patch", "fix-c.patch", "fix-a.patch"]
    else:
        assert code == 2 and "changed while" in err, err
        assert (project.root / "series" / "up" / "skipped" / "fix-a.patch").exists()


def test_an_import_never_reports_done_over_a_patch_of_its_name_made_beside_it(project, tmp_path):
    """`import overlay --name fix-c` found the name free, then a `new fix-c` took it: the
    import skipped writing (the name was listed) and said "imported", its change lost."""
    overlay = tmp_path / "mod.py"
    overlay.write_bytes(text({7: b"def f7():\n    return -7\n\n"}))
    importing = _paused_at_the_lock(project, "import", "overlay", str(overlay), "--upstream",
                                    "up", "--path", "pkg/mod.py", "--name", "fix-c")
    try:
        project.cli("new", "fix-c", "--no-edit")
    finally:
        code, err = _go_on(importing)
    assert code == 2 and "appeared in the up series while the import ran" in err, err
    assert b"return -7" not in project.patch("fix-c")  # new's patch, untouched
    assert project.series() == ["fix-c.patch"]


def test_a_rename_of_a_patch_deleted_beside_it_says_so(project):
    """`rename` found fix-a, then a `delete` took it: the rename said "listed in the series
    but the file is missing" of a patch no longer listed. It says what happened."""
    project.fix("fix-a", {"pkg/mod.py": text({3: b"def f3():\n    return -3\n\n"})})
    renaming = _paused_at_the_lock(project, "rename", "fix-a", "fix-z")
    try:
        project.cli("delete", "fix-a")
    finally:
        code, err = _go_on(renaming)
    assert code == 2 and "fix-a.patch left the up series while this command waited" in err, err
    assert project.series() == [] and not (project.root / "series/up/fix-z.patch").exists()


def test_a_skipped_fix_taken_beside_a_delete_or_bring_back_is_said_so(project):
    """A `delete` of a skipped fix that another `delete` took meanwhile failed with the bare
    "No such file or directory" (and "run the command again", which could only fail again);
    a `bring-back` whose fix a `delete` took while it judged listed it again, undoing the
    delete with exit 0. Both say what happened, exit 2, and change nothing."""
    stopped_on_a(project)
    project.cli("rebase", "--skip", expect=1)
    skipped = project.root / "series" / "up" / "skipped" / "fix-a.patch"
    for command in (("delete", "fix-a"), ("bring-back", "fix-a")):
        if not skipped.exists():
            (project.root / "series/up/deleted/fix-a.patch").rename(skipped)
        waiting = _paused_at_the_lock(project, *command)
        try:
            project.cli("delete", "fix-a")
        finally:
            code, err = _go_on(waiting)
        assert code == 2 and "up/fix-a.patch left skipped/ while this command waited" in err, \
            (command, err)
        assert project.series() == ["fix-b.patch"]
        assert sorted(p.name for p in (project.root / "series/up/deleted").iterdir()) == \
            ["fix-a.patch"]
        assert not skipped.exists()


def test_refresh_never_writes_an_edit_opened_on_another_pin(project):
    """A `git checkout` of the stack moved upstream.lock to another pin while an edit was open
    (the patch's diff unchanged): the worktree's change is against the old upstream, and
    refresh wrote it as the patch of the new one. Refused, naming both pins."""
    import json

    project.fix("fix-a", {"pkg/mod.py": text({3: b"def f3():\n    return -3\n\n"})})
    project.cli("edit", "fix-a")
    (project.work / "pkg/mod.py").write_bytes(text({3: b"def f3():\n    return -300\n\n"}))
    newer = project.up.commit({"pkg/other.py": b"x = 5\n"})
    lock_path = project.root / "upstream.lock"
    lock = json.loads(lock_path.read_text())
    old = lock["upstreams"]["up"]["commit"]
    tree = subprocess.run(["git", "rev-parse", f"{newer}^{{tree}}"], cwd=project.up.path,
                          capture_output=True, text=True, check=True).stdout.strip()
    # The whole pin moved, as a checkout of the stack moves it (its label too: a label naming
    # another commit than the lock's is refused on its own).
    lock["upstreams"]["up"].update(commit=newer, tree=tree, label=newer)
    lock_path.write_text(json.dumps(lock, indent=2, sort_keys=True) + "\n")
    before = project.patch("fix-a")
    _, _, err = project.cli("refresh", expect=2)
    assert f"pinned at {newer[:12]}" in err and f"opened on {old[:12]}" in err, err
    assert project.patch("fix-a") == before


def test_an_edit_under_a_pulled_re_pin_names_the_way_on_refresh_takes(project, tmp_path):
    """A `git pull` of a teammate's rebase moved upstream.lock's pin while an edit was open
    with a change: `refresh` refuses that change (made on the old pin), yet `status`, `list`
    and `overlays` named `patchforge refresh` as the next step, and `new` said "refresh
    first". They say why and the way refresh's own refusal gives: the change copied out, the
    edit discarded and opened again on the new pin, the change made again; followed, it
    works."""
    def git(cwd, *args):
        subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)

    project.fix("fix-a", {"pkg/mod.py": text({3: b"def f3():\n    return -3\n\n"})})
    project.cli("overlays")
    git(project.root, "init", "-q")
    git(project.root, "add", "-A")
    git(project.root, "commit", "-qm", "the stack")
    teammate = tmp_path / "teammate"
    git(tmp_path, "clone", "-q", str(project.root), str(teammate))
    newer = project.up.commit({"pkg/other.py": b"x = 5\n"})
    assert run_cli(teammate, "rebase", "--to", f"up={newer}").rc == 0
    ok(teammate, "overlays")
    git(teammate, "add", "-A")
    git(teammate, "commit", "-qm", "rebased")

    project.cli("edit", "fix-a")
    mine = text({3: b"def f3():\n    return -300\n\n"})
    (project.work / "pkg/mod.py").write_bytes(mine)
    git(project.root, "pull", "-q", str(teammate), "HEAD")
    why = "the edit was opened on "
    way = (f"copy what you changed out of {project.work}, then `patchforge edit --close "
           "--discard`, `patchforge edit fix-a` (made on the pin now), make the change again "
           "and `patchforge refresh`")
    for command in (["status"], ["list"], ["overlays"], ["new", "fix-b"]):
        code, _, err = project.cli(*command, expect=None)
        assert code == (2 if command[0] == "new" else 0), (command, err)
        assert why in err and f"upstream.lock pins {newer[:12]} now" in err and way in err, \
            (command, err)
        assert "next: `patchforge refresh` writes" not in err and "until `patchforge " \
            "refresh`" not in err and "`patchforge refresh` first" not in err, (command, err)
    _, _, err = project.cli("refresh", expect=2)
    assert "against the old upstream" in err, err
    copied = (project.work / "pkg/mod.py").read_bytes()
    project.cli("edit", "--close", "--discard")
    project.cli("edit", "fix-a")
    (project.work / "pkg/mod.py").write_bytes(copied)
    project.cli("refresh")
    assert b"+    return -300" in project.patch("fix-a")


def test_every_read_only_command_says_what_is_open(project, tmp_path):
    """The reference's table of states: `show`, `verify`, `check` and `pr` (a draft) answer
    during a stop and an open edit, and say so, as `status`, `list`, `lint` and `export` do.
    They answered as if nothing were open: `verify` '2 ok, 0 failed', `check` 'Keeps
    invariants: all hold', a pull request drafted from a patch whose edit was not refreshed."""
    project.fix("fix-c", {"pkg/other.py": b"x = 2\n"})
    project.cli("overlays")
    stopped_on_a(project)
    commands = [("show", "fix-a", "--no-pager"), ("verify",), ("check",),
                ("pr", "fix-c", "--out", str(tmp_path / "pr"))]
    for argv in commands:
        code, _, err = project.cli(*argv, expect=None)
        assert code in (0, 1) and "note: up: a rebase is stopped at fix-a.patch" in err, \
            (argv, code, err)
    project.cli("rebase", "--abort")
    project.cli("edit", "fix-c")
    (project.work / "pkg" / "other.py").write_bytes(b"x = 3\n")
    for argv in commands:
        code, _, err = project.cli(*argv, expect=None)
        assert code in (0, 1) and "note: up: fix-c.patch is being edited" in err, (argv, code, err)


def test_verify_fails_while_a_fix_is_set_aside(project, tmp_path):
    """A rebase sets fix-a aside (`--skip`): the overlays it writes lack fix-a, and `status`,
    `lint`, `overlays --check` and `check` exit 1. `verify` (also `--installed`) said "ok" for
    every file, exit 0: a deployment checked by it went out without the fix. It names the
    fix, exit 1, as it does a fix kept as landed that upstream took out again at the pin; a
    verify of another profile than the fix's is not held back by it."""
    project.cli("overlays")
    stopped_on_a(project)
    project.cli("rebase", "--skip", expect=1)
    assert (project.root / "series/up/skipped/fix-a.patch").exists()
    _, out, err = project.cli("verify", expect=1)
    assert "missing  ../series/up/skipped/fix-a.patch" in out and "bring-back fix-a" in out, \
        out + err
    installed = tmp_path / "installed"
    (installed / "pkg").mkdir(parents=True)
    pin = json.loads((project.root / "upstream.lock").read_text())["upstreams"]["up"]["commit"]
    (installed / "pkg/mod.py").write_bytes(subprocess.run(
        ["git", "show", f"{pin}:pkg/mod.py"], cwd=project.up.path, check=True,
        capture_output=True).stdout)
    document = json.loads(project.cli("verify", "--installed", str(installed), "--json",
                                      expect=1)[1])
    from patchforge.formats.schemas import validation_errors
    assert validation_errors(document, "verify") == []
    assert document["ok"] is False and \
        ["../series/up/skipped/fix-a.patch", "missing"] in \
        [[r["path"], r["state"]] for r in document["results"]], document
    project.cli("delete", "fix-a")  # the user's decision: verify is green again
    project.cli("verify")


def test_a_move_says_the_fix_an_earlier_rebase_set_aside(project):
    """fix-a set aside by `rebase --skip`; upstream moves on and the stack is rebased again:
    the overlays the move writes lack fix-a (as `status` and `overlays` say, exit 1), and the
    move and its dry run said nothing of it. Each now says so (a `note:` on stderr, naming the
    fix and the way on; `set_aside` in --json)."""
    project.cli("overlays")
    stopped_on_a(project)
    project.cli("rebase", "--skip", expect=1)
    target = project.up.commit({"pkg/other.py": b"x = 9\n"})
    for dry in (("--dry-run",), ()):
        if not dry:
            _, _, err = project.cli("rebase", "--to", f"up={target}", "--dry-run", expect=1)
            assert "note: up/fix-a.patch was set aside by a rebase" in err and \
                "in none of the overlays this move would write" in err, err
            document = json.loads(project.cli("rebase", "--to", f"up={target}", "--json",
                                              expect=1)[1])
        else:
            document = json.loads(project.cli("rebase", "--to", f"up={target}", *dry,
                                              "--json", expect=1)[1])
        from patchforge.formats.schemas import validation_errors
        assert validation_errors(document, "rebase") == []
        assert [(f["upstream"], f["name"]) for f in document["set_aside"]] == \
            [("up", "fix-a.patch")], document
    assert (project.root / "series/up/skipped/fix-a.patch").exists()


def test_a_move_that_leaves_a_fix_set_aside_exits_1_as_verify_and_bump_do(project):
    """A fix set aside under skipped/ is in none of the overlays a rebase writes. `bump`,
    `bump --dry-run` and `verify` exit 1 for it; `rebase --to` named it and exited 0, so a job
    running `patchforge rebase --to X && deploy` shipped without the fix, and so did a script
    whose `rebase --skip` (or `--continue`) finished the move. Each of them exits 1 now, the
    fix named on stderr; once it is brought back or deleted, a move exits 0 again."""
    project.cli("overlays")
    stopped_on_a(project)
    # `--skip` finishing the move it stopped: fix-a is in none of the overlays it wrote.
    code, out, err = project.cli("rebase", "--skip", expect=None)
    assert code == 1, out + err
    assert "note: up/fix-a.patch was set aside by a rebase" in err and \
        "in none of the overlays this move writes" in err, err
    assert "patchforge bring-back fix-a" in err and "patchforge delete fix-a" in err, err
    project.cli("verify", expect=1)
    # A later `rebase --to` (the CI job): its dry run and the move itself.
    target = project.up.commit({"pkg/other.py": b"x = 9\n"})
    for dry in (("--dry-run",), ()):
        code, out, err = project.cli("rebase", "--to", f"up={target}", *dry, expect=None)
        assert code == 1 and "note: up/fix-a.patch was set aside by a rebase" in err, \
            (dry, code, out, err)
    assert json.loads((project.root / "upstream.lock").read_text())["upstreams"]["up"][
        "commit"] == target
    # A move that stops on another fix and is finished by `--continue`.
    project.fix("fix-c", {"pkg/other.py": b"x = 10\n"})
    conflicting = project.up.commit({"pkg/other.py": b"x = 11\n"})
    project.cli("rebase", "--to", f"up={conflicting}", expect=3)
    (project.work / "pkg/other.py").write_bytes(b"x = 12\n")
    code, out, err = project.cli("rebase", "--continue", expect=None)
    assert code == 1 and "note: up/fix-a.patch was set aside by a rebase" in err, \
        (code, out, err)
    assert b"+x = 12" in project.patch("fix-c")
    # The person's decision: the next move exits 0.
    project.cli("delete", "fix-a")
    newer = project.up.commit({"pkg/new.py": b"y = 1\n"})
    _, _, err = project.cli("rebase", "--to", f"up={newer}")
    assert "set aside" not in err, err


@pytest.mark.parametrize("open_", ["edit", "rebase stop", "bring-back stop"])
def test_an_edit_or_a_stop_goes_on_in_a_new_cache(project, tmp_path, monkeypatch, open_):
    """The cache emptied (or another PATCHFORGE_CACHE: a new shell, a CI runner) while an edit
    or a stop is open: the worktree's base is a commit patchforge made in the old cache (the
    series so far over the upstream's revision), which no fetch brings back. `refresh`,
    `rebase --continue` and `bring-back --continue` failed with "unknown revision ... in the
    upstream store; fetch the upstream first", and `patchforge fetch` did not help: the change
    made there could not be written. The base's objects are now kept in the worktree."""
    three = text({3: b"def f3():\n    return -3\n\n"})
    project.fix("fix-b", {"pkg/mod.py": text({12: b"def f12():\n    return -12\n\n"})})
    project.fix("fix-a", {"pkg/mod.py": text({3: b"def f3():\n    return -3\n\n",
                                              12: b"def f12():\n    return -12\n\n"})})
    resolved = text({3: b"def f3():\n    return -333\n\n",
                     12: b"def f12():\n    return -12\n\n"})
    if open_ == "edit":
        project.cli("edit", "fix-a")
        finish = ("refresh",)
    else:
        target = project.up.commit({"pkg/mod.py": text({3: b"def f3():\n    return 33\n\n"})})
        project.cli("rebase", "--to", f"up={target}", expect=3)  # stopped at fix-a
        finish = ("rebase", "--continue")
        if open_ == "bring-back stop":
            project.cli("rebase", "--skip", expect=1)
            project.cli("bring-back", "fix-a", expect=3)
            finish = ("bring-back", "--continue")
    assert three != resolved
    (project.work / "pkg/mod.py").write_bytes(resolved)
    monkeypatch.setenv("PATCHFORGE_CACHE", str(tmp_path / "another-cache"))
    project.cli(*finish)
    assert b"+    return -333" in project.patch("fix-a")
    assert project.cli("status")[0] == 0


@pytest.mark.parametrize("command", ["rebase", "edit --close"])
@pytest.mark.parametrize("changed", [False, True])
def test_an_edit_open_in_a_new_cache_is_judged_by_rebase_and_edit_close(
        project, tmp_path, monkeypatch, changed, command):
    """An edit of the series' first fix open (its worktree's base: the pin's own tree, under a
    commit patchforge made), the cache emptied, upstream moved on: `rebase --to` and `edit
    --close` failed with "unknown revision ... in the upstream store" (exit 2), naming a commit
    no fetch brings, since they read that base before the pin's objects were in the new cache.
    Now the edit is judged: closed (and the fix moved) when everything in it is refreshed,
    refused naming `refresh` when it holds an unrefreshed change."""
    project.fix("fix-a", {"pkg/mod.py": text({3: b"def f3():\n    return -3\n\n"})})
    project.cli("edit", "fix-a")
    if changed:
        (project.work / "pkg/mod.py").write_bytes(
            text({3: b"def f3():\n    return -33\n\n"}))
    monkeypatch.setenv("PATCHFORGE_CACHE", str(tmp_path / "another-cache"))
    target = project.up.commit({"pkg/other.py": b"x = 2\n"})
    run = ("rebase", "--to", f"up={target}") if command == "rebase" else ("edit", "--close")
    code, out, err = project.cli(*run, expect=None)
    assert "unknown revision" not in out + err, out + err
    if changed:
        assert code == 2 and "refresh" in err and "not refreshed" in err, (code, out, err)
        project.cli("refresh")
        assert b"+    return -33" in project.patch("fix-a")
    else:
        assert code == 0, (code, out, err)
    assert not project.work.exists()
    project.cli("rebase", "--to", f"up={target}")
    assert json.loads((project.root / "upstream.lock").read_text())["upstreams"]["up"][
        "commit"] == target
    assert project.cli("status")[0] == 0


def _stopped_inside_the_write_out(tmp_path: Path):
    """A clean rebase of two fixes stopped (SIGSTOP) just after the write-out replaced the first
    of its files: the project then holds the new fix-a.patch beside the old lock and the old
    fix-b.patch. Returns the project, the stopped process and the rebase's target."""
    for nth in range(1, 30):
        project = Project(tmp_path / str(nth))
        project.fix("fix-a", {"pkg/mod.py": text({3: b"def f3():\n    return -3\n\n"})})
        project.fix("fix-b", {"pkg/mod.py": text({3: b"def f3():\n    return -3\n\n",
                                                  12: b"def f12():\n    return -12\n\n"})})
        target = project.up.commit({"pkg/other.py": b"x = 3\n"})
        watched = ["series/up/fix-a.patch", "series/up/fix-b.patch", "upstream.lock"]
        before = {rel: (project.root / rel).read_bytes() for rel in watched}
        env = {**os.environ, "PATCHFORGE_FAULT": f"rename:{nth}", "PATCHFORGE_FAULT_MODE": "stop"}
        proc = subprocess.Popen([sys.executable, "-m", "patchforge", "--root",
                                 str(project.root), "rebase", "--to", f"up={target}"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        while proc.poll() is None and not _stopped(proc.pid):
            time.sleep(0.02)
        if proc.poll() is not None:
            raise AssertionError("the rebase ended before its write-out replaced a file")
        changed = [rel for rel in watched if (project.root / rel).read_bytes() != before[rel]]
        if changed and len(changed) < len(watched):
            return project, proc, target
        os.kill(proc.pid, signal.SIGCONT)
        proc.wait()
    raise AssertionError("no stop inside the write-out")


def _run_beside_the_write_out(project, writer, *args: str):
    """`patchforge ARGS` started beside the write-out `writer` stopped inside: it says that it
    waits, then the write-out goes on and ends; (exit status, stdout, stderr) of the command."""
    reader = subprocess.Popen([sys.executable, "-m", "patchforge", "--root", str(project.root),
                               *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        first = reader.stderr.readline().decode()
        assert "waiting for a command changing this project" in first, first
    finally:
        os.kill(writer.pid, signal.SIGCONT)
    assert writer.wait() == 0
    out, err = reader.communicate()
    return reader.returncode, out, err


def test_status_during_a_rebase_write_out_sees_the_new_series_never_a_mixture(tmp_path):
    """`status` run while a rebase writes out its result read a series part old, part new (the
    new fix-a.patch against the old lock) and said a rebase was in progress, exit 1. It waits
    for the write-out to end, saying so on stderr, then reports the series the rebase left."""
    project, writer, target = _stopped_inside_the_write_out(tmp_path)
    rc, out, err = _run_beside_the_write_out(project, writer, "status", "--json")
    assert rc == 0, err.decode()
    import json
    document = json.loads(out)
    assert document["targets"]["up"]["commit"] == target and document["notes"] == []
    assert [p["state"] for p in document["patches"]] == ["applies", "applies"]


def test_a_reader_waiting_for_a_write_out_names_the_command_writing(tmp_path):
    """A reader meeting a write-out said it waited for "a rebase writing out its result, new,
    delete, ..." and, past its wait, that "another command" was still changing the project: a
    user with several terminals (or a CI job beside a stuck one) could not tell which. It now
    names the writer's PID and its command line, as the project lock's refusal names its PID."""
    project, writer, target = _stopped_inside_the_write_out(tmp_path)
    reader = subprocess.Popen([sys.executable, "-m", "patchforge", "--root", str(project.root),
                               "status"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        first = reader.stderr.readline().decode()
    finally:
        os.kill(writer.pid, signal.SIGCONT)
    assert writer.wait() == 0
    reader.communicate()
    assert (f"waiting for a command changing this project (pid {writer.pid}: patchforge "
            f"--root {project.root} rebase --to up={target}) to end") in first, first


def test_a_holder_s_command_line_is_shown_quoted_and_printable(tmp_path):
    """The holder's command line comes from another process (its arguments can be anything a
    user typed, a patch name, a description): it is shown quoted, with its control characters
    as `?`, never as terminal escapes; a PID of another program is named by its PID alone."""
    from patchforge.fsutil import holder_named
    proc = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()", "-m",
                             "patchforge", "new", "fix \x1b[31mred"], stdin=subprocess.PIPE)
    other = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"],
                             stdin=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        while b"patchforge" not in Path(f"/proc/{proc.pid}/cmdline").read_bytes():
            assert time.monotonic() < deadline
            time.sleep(0.01)
        assert holder_named(proc.pid) == f"pid {proc.pid}: patchforge new 'fix ?[31mred'"
        assert holder_named(other.pid) == f"pid {other.pid}"
    finally:
        for p in (proc, other):
            p.stdin.close()
            p.wait()
    assert holder_named(proc.pid) == f"pid {proc.pid}"  # gone: no command line to read
    assert holder_named(0) == ""


def test_lint_during_a_rebase_write_out_reads_the_finished_project(tmp_path):
    """`lint` (and `list`, `verify`, `check`) read the series as `status` does: during
    a write-out they wait for its end and answer as they do on the finished project."""
    project, writer, target = _stopped_inside_the_write_out(tmp_path)
    rc, out, _ = _run_beside_the_write_out(project, writer, "lint", "--json")
    after = run_cli(project.root, "lint", "--json")
    assert (rc, out.decode()) == (after.rc, after.out)
    assert f"Base: {target}".encode() in project.patch("fix-a")


def test_a_reader_beside_an_abort_of_a_cut_short_write_out_reads_it_whole(tmp_path):
    """`rebase --abort` of a write-out cut short put the old files back holding the project
    for writing, then let go of it before it removed its worktrees and journal: a reader in
    between read the old series under a journal saying a rebase was writing out (status exit
    1). The journal goes while the project is held: a reader waits (the abort is stopped just
    before the removal), then reads the project as it was before the rebase."""
    import json

    project, writer, target = _stopped_inside_the_write_out(tmp_path)
    writer.kill()  # the write-out cut short
    writer.wait()
    env = {**os.environ, "PATCHFORGE_FAULT": "forget:1", "PATCHFORGE_FAULT_MODE": "stop"}
    abort = subprocess.Popen([sys.executable, "-m", "patchforge", "--root", str(project.root),
                              "rebase", "--abort"], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, env=env)
    while not _stopped(abort.pid):
        assert abort.poll() is None, "the abort removed its journal without stopping"
        time.sleep(0.02)
    rc, out, err = _run_beside_the_write_out(project, abort, "status", "--json")
    assert rc == 0, err.decode()
    document = json.loads(out)
    assert document["notes"] == [] and document["targets"]["up"]["commit"] != target
    assert not (project.root / ".patchforge" / "rebase").exists()


def test_status_says_one_state_of_the_project_even_while_it_changes(project, tmp_path):
    """`status` read the project's state (stops, rebases in progress, fixes set aside) several
    times: for its notes, for its exit status, and for the document. A fix set aside meanwhile
    (a `rebase --skip` in another terminal) gave `needs_attention` without a note saying why,
    or a note with exit 0 ("project needs attention (see the note above)" above no note). Each
    answer now comes from one reading. A process puts a fix into skipped/ and takes it out
    again, over and over, while status runs: every answer agrees with itself."""
    import json

    project.fix("fix-a", {"pkg/mod.py": text({3: b"def f3():\n    return -3\n\n"})})
    skipped = project.root / "series" / "up" / "skipped"
    skipped.mkdir()
    toggler = subprocess.Popen([sys.executable, "-c", f"""
import os, sys
path = {str(skipped / "fix-z.patch")!r}
data = open({str(project.root / "series/up/fix-a.patch")!r}, "rb").read()
while True:
    with open(path + ".tmp", "wb") as out:
        out.write(data)
    os.replace(path + ".tmp", path)
    os.unlink(path)
"""])
    try:
        answers = set()
        for _ in range(12):
            run = run_cli(project.root, "status", "--json")
            document = json.loads(run.out)
            said = (bool(document["notes"]), bool(document["skipped"]),
                    document["needs_attention"], run.rc == 1)
            assert len(set(said)) == 1, (said, document)
            answers.add(said[0])
            code, out, err = project.cli("status", expect=None)
            noted = "fix-z.patch was set aside" in err
            # ("1 patch needs attention", "2 patches need attention")
            attention = "need attention" in out or "needs attention" in out
            assert noted == (code == 1) == ("set aside" in out or attention), (code, out, err)
    finally:
        toggler.kill()
        toggler.wait()


def test_a_write_out_that_waits_for_a_reader_says_so(tmp_path):
    """A rebase's write-out waits for the commands reading the project (they hold its read
    lock): it says so on stderr, as a reader waiting for it does, instead of hanging without
    a word; once the reader is done it writes its result out."""
    import fcntl

    project = Project(tmp_path / "p")
    project.fix("fix-a", {"pkg/mod.py": text({3: b"def f3():\n    return -3\n\n"})})
    target = project.up.commit({"pkg/other.py": b"x = 3\n"})
    reading = os.open(project.root, os.O_RDONLY)
    try:
        fcntl.flock(reading, fcntl.LOCK_SH)  # as `status` holds it while it reads
        writer = subprocess.Popen([sys.executable, "-m", "patchforge", "--root",
                                   str(project.root), "rebase", "--to", f"up={target}"],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        import select

        said = select.select([writer.stderr], [], [], 60)[0]
        first = writer.stderr.readline().decode() if said else "(nothing in 60 s)"
    finally:
        os.close(reading)  # the reader is done
    assert "waiting for commands reading this project" in first, first
    out, err = writer.communicate()
    assert writer.returncode == 0, err.decode()
    assert f"Base: {target}".encode() in project.patch("fix-a")


def test_the_write_out_s_wait_starts_a_line_of_its_own_after_the_progress_line(tmp_path):
    """On a terminal, the rebase's progress line (`rebasing 1 up/fix-a`, rewritten in place)
    had the write-out's `waiting for commands reading this project` run on from it. The
    progress line is ended and the message stands on a line of its own."""
    import fcntl
    import pty
    import select

    project = Project(tmp_path / "p")
    project.fix("fix-a", {"pkg/mod.py": text({3: b"def f3():\n    return -3\n\n"})})
    target = project.up.commit({"pkg/other.py": b"x = 3\n"})
    terminal, terminal_side = pty.openpty()
    reading = os.open(project.root, os.O_RDONLY)
    said = b""
    try:
        fcntl.flock(reading, fcntl.LOCK_SH)  # as `status` holds it while it reads
        writer = subprocess.Popen([sys.executable, "-m", "patchforge", "--root",
                                   str(project.root), "rebase", "--to", f"up={target}"],
                                  stdout=subprocess.PIPE, stderr=terminal_side)
        os.close(terminal_side)
        while b"waiting for commands reading this project" not in said:
            assert select.select([terminal], [], [], 60)[0], said
            said += os.read(terminal, 4096)
    finally:
        os.close(reading)
    try:
        while select.select([terminal], [], [], 60)[0]:
            said += os.read(terminal, 4096)
    except OSError:  # EIO: the rebase closed its terminal
        pass
    os.close(terminal)
    assert writer.wait() == 0, said
    before, _, _ = said.partition(b"patchforge: waiting for commands reading")
    assert b"rebasing 1 up/fix-a" in before and before.endswith(b"\n"), said


def test_readers_coming_one_after_another_never_hold_a_write_out_back(tmp_path):
    """Readers whose reads overlap (a CI loop, `watch patchforge status`) kept the project
    directory's lock shared without a gap, so a waiting write-out's exclusive lock was never
    granted. A waiting write-out now goes first: a reader that comes while it waits waits
    for it (saying so), and the write-out waits only for the readers already reading. Here
    one reader holds the lock (the test, as `status` holds it), the rebase's write-out waits
    for it, and a `status` started meanwhile must not join the first reader."""
    import fcntl
    import json
    import select

    project = Project(tmp_path / "p")
    project.fix("fix-a", {"pkg/mod.py": text({3: b"def f3():\n    return -3\n\n"})})
    target = project.up.commit({"pkg/other.py": b"x = 3\n"})
    reading = os.open(project.root, os.O_RDONLY)
    command = [sys.executable, "-m", "patchforge", "--root", str(project.root)]
    try:
        fcntl.flock(reading, fcntl.LOCK_SH)
        writer = subprocess.Popen([*command, "rebase", "--to", f"up={target}"],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        said = select.select([writer.stderr], [], [], 60)[0]
        first = writer.stderr.readline().decode() if said else "(nothing in 60 s)"
        assert "waiting for commands reading this project" in first, first
        reader = subprocess.Popen([*command, "status", "--json"], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE)
        said = select.select([reader.stderr], [], [], 60)[0]
        joined = reader.stderr.readline().decode() if said else "(nothing in 60 s)"
    finally:
        os.close(reading)  # the first reader is done
    out, err = writer.communicate(timeout=300)
    assert writer.returncode == 0, err.decode()
    assert "waiting for a command changing this project" in joined, joined
    out, err = reader.communicate(timeout=300)
    assert reader.returncode == 0, err.decode()
    assert json.loads(out)["targets"]["up"]["commit"] == target  # read after the write-out


def test_a_reader_behind_a_writer_queued_behind_a_long_reader_still_reads(tmp_path):
    """A writer queued behind a long reader (`lint` asking a slow forge holds the lock for
    minutes) held every reader after it on the turnstile until the reader gave up after 120 s,
    saying a rebase was writing out, while nothing was written. A reader lets a queued writer
    go first for a while, then reads beside the long reader; the writer goes on once that one
    ends."""
    import fcntl
    import json

    project = Project(tmp_path / "p")
    project.fix("fix-a", {"pkg/mod.py": text({3: b"def f3():\n    return -3\n\n"})})
    target = project.up.commit({"pkg/other.py": b"x = 3\n"})
    reading = os.open(project.root, os.O_RDONLY)
    command = [sys.executable, "-m", "patchforge", "--root", str(project.root)]
    writer = None
    try:
        fcntl.flock(reading, fcntl.LOCK_SH)  # the long reader
        writer = subprocess.Popen([*command, "rebase", "--to", f"up={target}"],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        _wait_until_a_writer_holds_the_turnstile(project.root, writer)
        reader = subprocess.run([*command, "status", "--json"], capture_output=True,
                                timeout=120)
        assert writer.poll() is None  # still queued: the long reader reads on
        # It read (1: a rebase is under way, which status reports as needing attention).
        assert reader.returncode in (0, 1), reader.stderr.decode()
        assert b"waiting for a command changing this project" in reader.stderr
        assert json.loads(reader.stdout)["targets"]["up"]["commit"] != target  # read before
    finally:
        os.close(reading)
        if writer is not None:
            out, err = writer.communicate(timeout=300)
    assert writer.returncode == 0, err.decode()


def _wait_until_a_writer_holds_the_turnstile(root, writer) -> None:
    """Until `writer` holds `.patchforge/turnstile` exclusively. The file's existence is not
    enough: a loaded machine can run a reader between the writer making the file and locking
    it, and that reader rightly reads at once."""
    import fcntl
    import time

    deadline = time.monotonic() + 60
    turnstile = root / ".patchforge" / "turnstile"
    while True:
        assert time.monotonic() < deadline and writer.poll() is None, "no writer queued"
        if turnstile.exists():
            probe = os.open(turnstile, os.O_RDONLY)
            try:
                fcntl.flock(probe, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                return
            finally:
                os.close(probe)
        time.sleep(0.05)


def _set_up_for(project: Project, command: str) -> tuple[str, ...]:
    """The project made ready for `command`, and its arguments: each changes several files."""
    project.fix("fix-a", {"pkg/mod.py": text({3: b"def f3():\n    return -3\n\n"})})
    if command == "refresh":
        project.cli("edit", "fix-a")
        (project.work / "pkg/mod.py").write_bytes(text({3: b"def f3():\n    return -30\n\n"}))
        return ("refresh",)
    if command in ("move", "bring-back"):
        project.fix("fix-b", {"pkg/other.py": b"x = 2\n"})
    if command == "bring-back":  # fix-b set aside in skipped/, as a rebase --skip leaves it
        data = project.patch("fix-b")
        project.cli("delete", "fix-b")  # out of the series first: `delete` never guesses
        skipped = project.root / "series/up/skipped"
        skipped.mkdir()
        (skipped / "fix-b.patch").write_bytes(data)
    if command == "import":  # fix-a exported as a quilt series, then taken out
        project.cli("export", "--quilt", str(project.root.parent / "quilt"))
        project.cli("delete", "fix-a")
        return ("import", "quilt", str(project.root.parent / "quilt"))
    if command == "upstream add":
        two = Upstream(project.root.parent / "two", {"two.py": b"y = 1\n"})
        return ("upstream", "add", "two", "--git", str(two.path), "--at", two.base,
                "--install-root", "/opt/two")
    if command == "overlays":
        return ("overlays",)
    return {"new": ("new", "fix-n", "--no-edit"), "delete": ("delete", "fix-a"),
            "rename": ("rename", "fix-a", "fix-z"), "move": ("move", "fix-b", "--first"),
            "bring-back": ("bring-back", "fix-b")}[command]


@pytest.mark.parametrize("command", ["new", "delete", "rename", "move", "refresh", "bring-back",
                                     "import", "upstream add", "overlays"])
def test_a_command_changing_several_files_waits_for_the_readers(tmp_path, command):
    """Only a rebase's write-out kept the commands reading the project out while it wrote:
    `delete` unlisted a patch, then removed its file (`status` read between them named an
    unlisted patch file, exit 1), `rename` and `new` wrote a patch file its series did not
    list yet, `refresh` wrote the patch of an edit still open, `bring-back` listed a fix still
    in skipped/, an import listed its patches one by one, `upstream add` wrote the pin before
    the configuration, `overlays` swapped overlays/ in with two renames. Each holds the
    project for writing while it writes: with a reader reading,
    it says that it waits and changes nothing; once the reader is done, it writes."""
    import fcntl
    import select

    project = Project(tmp_path / "p")
    args = _set_up_for(project, command)
    before = snapshot(project.root, skip_state=True)
    reading = os.open(project.root, os.O_RDONLY)
    try:
        fcntl.flock(reading, fcntl.LOCK_SH)  # as `status` holds it while it reads
        writer = subprocess.Popen([sys.executable, "-m", "patchforge", "--root",
                                   str(project.root), *args],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        said = ""
        while "waiting for commands reading this project" not in said:
            if not select.select([writer.stderr], [], [], 60)[0]:
                break
            line = writer.stderr.readline().decode()
            if not line:
                break  # it ended without waiting
            said += line
        held = snapshot(project.root, skip_state=True)
    finally:
        os.close(reading)  # the reader is done
    out, err = writer.communicate(timeout=300)
    assert "waiting for commands reading this project to end before writing" in said, said
    assert held == before  # nothing written while the reader read
    assert writer.returncode == 0, said + err.decode()
    assert snapshot(project.root, skip_state=True) != before


@pytest.mark.parametrize("reader", [("lint", "--no-forge"), ("check",), ("status",),
                                    ("overlays", "--check")])
def test_a_reader_fetching_its_pins_holds_back_no_write_out(tmp_path, reader):
    """`lint`, `check`, `status` and `overlays --check` on a cache without the pinned
    revisions (a fresh clone's first run) fetched them holding the project's read lock: a
    rebase's write-out waited for the network. They fetch first, then read under the lock. The reader is stopped (SIGSTOP) in the middle
    of its fetch, as it configures the new store's remote: the project can be locked for
    writing meanwhile."""
    project = Project(tmp_path / "p")
    project.fix("fix-a", {"pkg/mod.py": text({3: b"def f3():\n    return -3\n\n"})})
    env = {**os.environ, "PATCHFORGE_CACHE": str(tmp_path / "fresh-cache"),
           "PATCHFORGE_FAULT": "config:1", "PATCHFORGE_FAULT_MODE": "stop"}
    proc = subprocess.Popen([sys.executable, "-m", "patchforge", "--root", str(project.root),
                             *reader], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        while not _stopped(proc.pid):
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.02)
        _lock_for_writing_at_once(project.root)  # BlockingIOError: a reader holds it
    finally:
        os.kill(proc.pid, signal.SIGCONT)
        out, err = proc.communicate(timeout=300)
    assert proc.returncode == run_cli(project.root, *reader).rc, err.decode()


def _lock_for_writing_at_once(root: Path) -> None:
    """Take (and let go) the project directory's write lock without waiting: raises
    BlockingIOError while a command holds it for reading."""
    import fcntl

    directory = os.open(root, os.O_RDONLY)
    try:
        fcntl.flock(directory, fcntl.LOCK_EX | fcntl.LOCK_NB)
    finally:
        os.close(directory)


def test_status_against_a_new_target_fetches_it_before_it_reads(tmp_path):
    """`status --against up=COMMIT` fetched a target the cache lacks holding the project's
    read lock: a rebase's write-out waited for the network. The target is resolved first. The
    status is stopped (SIGSTOP) in the middle of the target's fetch, as it configures the
    store's remote again (taken away here): the project can be locked for writing meanwhile."""
    import fcntl

    project = Project(tmp_path / "p")
    project.fix("fix-a", {"pkg/mod.py": text({3: b"def f3():\n    return -3\n\n"})})
    target = project.up.commit({"pkg/other.py": b"x = 3\n"})
    store = Path(os.environ["PATCHFORGE_CACHE"]) / "store.git"
    names = subprocess.run(["git", "--git-dir", str(store), "config", "--name-only",
                            "--get-regexp", r"^remote\.up\."], check=True, capture_output=True,
                           text=True).stdout.split()
    for section in sorted({name.rsplit(".", 1)[0] for name in names}):
        subprocess.run(["git", "--git-dir", str(store), "config", "--remove-section", section],
                       check=True)
    args = ("status", "--against", f"up={target}")
    env = {**os.environ, "PATCHFORGE_FAULT": "config:1", "PATCHFORGE_FAULT_MODE": "stop"}
    proc = subprocess.Popen([sys.executable, "-m", "patchforge", "--root", str(project.root),
                             *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        while not _stopped(proc.pid):
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.02)
        directory = os.open(project.root, os.O_RDONLY)
        try:
            fcntl.flock(directory, fcntl.LOCK_EX | fcntl.LOCK_NB)  # BlockingIOError: held
        finally:
            os.close(directory)
    finally:
        os.kill(proc.pid, signal.SIGCONT)
        out, err = proc.communicate(timeout=300)
    assert proc.returncode == run_cli(project.root, *args).rc == 0, err.decode()
    assert target.encode() in out


def _full_pipe() -> tuple[int, int]:
    """A pipe whose buffer is full: a process writing to it blocks until it is read, as one
    whose output waits in a pager (`patchforge list | less` left open)."""
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)
    try:
        while True:
            os.write(write_end, b"\n" * 4096)
    except BlockingIOError:
        pass
    os.set_blocking(write_end, True)
    return read_end, write_end


@pytest.mark.parametrize("reader, answer", [(("list",), b"up/fix-a"),
                                            (("lint", "--no-forge"), b"\nlint: ")])
def test_a_reader_left_unread_in_a_pipe_holds_back_no_write_out(tmp_path, reader, answer):
    """`list` and `lint` held the project's read lock while they printed: their output left
    unread (a pager, a blocked pipe) held a rebase's write-out back until the write-out gave
    up. They read under the lock and print after letting it go: while one is blocked on its
    output, the project can be locked for writing, and a rebase beside it writes out."""
    project = Project(tmp_path / "p")
    project.fix("fix-a", {"pkg/mod.py": text({3: b"def f3():\n    return -3\n\n"})})
    target = project.up.commit({"pkg/other.py": b"x = 3\n"})
    read_end, write_end = _full_pipe()
    proc = subprocess.Popen([sys.executable, "-m", "patchforge", "--root", str(project.root),
                             *reader], stdout=write_end, stderr=subprocess.DEVNULL)
    os.close(write_end)
    try:
        # Blocked writing its answer to stdout (system call 1, write, on fd 1; x86-64).
        deadline = time.monotonic() + 120
        while open(f"/proc/{proc.pid}/syscall").read().split()[:2] != ["1", "0x1"]:
            assert proc.poll() is None, proc.returncode
            assert time.monotonic() < deadline, "never blocked writing to its stdout"
            time.sleep(0.02)
        _lock_for_writing_at_once(project.root)  # BlockingIOError: a reader holds it
        project.cli("rebase", "--to", f"up={target}")
        assert f"Base: {target}".encode() in project.patch("fix-a")
    finally:
        with os.fdopen(read_end, "rb") as pipe:
            out = pipe.read()
        proc.wait()
    assert proc.returncode == 0 and answer in out, out[-300:]  # what it read, whole


@pytest.mark.skipif(not sys.platform.startswith("linux") or os.uname().machine != "x86_64",
                    reason="the file system without locks is made by a seccomp filter for x86-64")
def test_a_project_on_a_file_system_without_locks_is_said_so(project):
    """On a file system whose flock(2) fails (ENOLCK: a network one without its lock service),
    readers went on without a word, though nothing kept them apart from a rebase's write-out,
    and commands that change the project died on "No locks available", advised to run again.
    Readers still answer, saying once on stderr that the project directory cannot be locked;
    a command that changes the project is refused, naming the lock file, nothing written."""
    project.fix("fix-a", {"pkg/mod.py": text({3: b"def f3():\n    return -3\n\n"})})
    before = snapshot(project.root)

    def without_locks(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, str(Path(__file__).parent / "helpers/nolocks.py"),
                               sys.executable, "-m", "patchforge", "--root", str(project.root),
                               *args], capture_output=True, text=True, timeout=300)

    for reader in ("list", "status", "lint"):
        run = without_locks(reader, *(["--no-forge"] if reader == "lint" else []))
        assert run.returncode == run_cli(project.root, reader, *(
            ["--no-forge"] if reader == "lint" else [])).rc, run.stderr
        said = run.stderr.count("cannot be locked")
        assert said == 1 and "the project directory" in run.stderr, run.stderr
    changing = without_locks("new", "fix-b", "--no-edit")
    assert changing.returncode == 2, changing.stderr
    # The lock file named once, then why (it said the path twice: `PATH: PATH cannot ...`).
    assert changing.stderr.startswith(f"patchforge: error: {project.root}/.patchforge/lock: "
                                      "cannot be locked (No locks available): "), changing.stderr
    assert changing.stderr.count(".patchforge/lock") == 1, changing.stderr
    assert "run the command again" not in changing.stderr, changing.stderr
    assert snapshot(project.root) == before


def test_a_write_out_lock_that_gives_up_says_what_is_left_and_what_to_run(tmp_path):
    """Past its wait, the write-out's lock says what is not done and the command that finishes
    it: --continue for a rebase's write-out, --abort again for an --abort's restore (it gave
    --continue's hint to an --abort)."""
    import fcntl

    from patchforge.errors import LockedError
    from patchforge.fsutil import WriteOutLock

    reading = os.open(tmp_path, os.O_RDONLY)
    try:
        fcntl.flock(reading, fcntl.LOCK_SH)
        with pytest.raises(LockedError) as write_out:
            with WriteOutLock(tmp_path, exclusive=True, wait=0.05):
                pass
        with pytest.raises(LockedError) as abort:
            with WriteOutLock(tmp_path, exclusive=True, wait=0.05,
                              undone="the cut-short write-out is not undone yet",
                              hint="run `patchforge rebase --abort` again once they end"):
                pass
    finally:
        os.close(reading)
    assert "result is not written yet" in str(write_out.value)
    assert "--continue" in write_out.value.hint
    assert "not undone yet" in str(abort.value) and "--abort" in abort.value.hint


def test_a_failed_hunk_is_marked_where_it_belongs_after_lines_inserted_above(project):
    """`edit` marks a hunk that no longer applies where it should go. Its place was taken from
    the hunk header's line number: an earlier patch that inserted lines above (and changed the
    hunk's line) put the block on other lines (f0..f2 where f3 was meant), and resolving it as
    the hint says, then refreshing, deleted the lines there and put f2..f4 in twice. The block
    holds the lines the hunk was made for, and the resolution gives the file with the change."""
    project.fix("early", {"pkg/mod.py": text({15: b"def f15():\n    return -15\n\n"})})
    project.fix("two", {"pkg/mod.py": text({15: b"def f15():\n    return -15\n\n",
                                            3: b"def f3():\n    return -3\n\n"})})
    project.cli("edit", "early")
    header = b"".join(b"# header line %d\n" % i for i in range(9))
    early_file = header + text({15: b"def f15():\n    return -15\n\n",
                                3: b"def f3():\n    return 33\n\n"})
    (project.work / "pkg/mod.py").write_bytes(early_file)
    project.cli("refresh", expect=1)
    _, _, err = project.cli("edit", "two", expect=2)
    assert "pkg/mod.py: hunk #1 failed; marked where it should go" in err, err
    opened = (project.work / "pkg/mod.py").read_bytes()
    start = opened.index(b"<<<<<<< ")
    made_on = opened.index(b"||||||| ", start)  # the hunk's pre-image: what it was made on
    middle = opened.index(b"=======\n", made_on)
    end = opened.index(b"\n", opened.index(b">>>>>>> ", middle)) + 1
    ours = opened[opened.index(b"\n", start) + 1:made_on]
    theirs = opened[middle + len(b"=======\n"):opened.index(b">>>>>>> ", middle)]
    assert b"    return 33\n" in ours and b"header line" not in ours, opened.decode()
    assert b"    return 3\n" in opened[made_on:middle], opened.decode()
    # Nothing of the file is lost or doubled outside the block.
    assert opened[:start] + ours + opened[end:] == early_file, opened.decode()
    # Resolved as the hint says: the patch's change made there in place of the block.
    resolved = opened[:start] + theirs.replace(b"return -3\n", b"return -33\n") + opened[end:]
    (project.work / "pkg/mod.py").write_bytes(resolved)
    project.cli("refresh")
    assert resolved == early_file.replace(b"return 33\n", b"return -33\n"), resolved.decode()
    assert project.cli("status")[0] == 0


def test_refusals_during_an_edit_with_marked_hunks_never_say_refresh_first(project):
    """During an edit that marked a hunk that did not apply, `new`, `edit`, `delete` and
    `rebase --to` were refused with the hint "`patchforge refresh` first", and status said
    refresh writes the change: refresh then refused too (a marker left). They say to resolve
    the marked blocks in the file first; followed, refresh and the refused command work."""
    early = _two_no_longer_applies(project)
    project.cli("edit", "two", expect=2)
    for args in (["new", "three", "--no-edit"], ["edit", "early"], ["delete", "early"],
                 ["rebase", "--to", f"up={project.up.base}"]):
        _, _, err = project.cli(*args, expect=2)
        hint = err.split("hint: ", 1)[1]
        assert hint.startswith("resolve the blocks `edit` marked in pkg/mod.py"), err
    _, _, err = project.cli("rebase", "--to", f"up={project.up.base}", "--dry-run", expect=None)
    assert "refused until the blocks `edit` marked in pkg/mod.py are resolved and " \
        "`patchforge refresh`" in err, err
    _, out, err = project.cli("status", expect=None)
    assert "resolve the blocks `edit` marked in pkg/mod.py" in out + err, out + err
    assert "next: `patchforge refresh`" not in out + err, out + err
    (project.work / "pkg/mod.py").write_bytes(
        text({**early, 3: b"def f3():\n    return -33\n\n", 12: b"def f12():\n    return -12\n\n"}))
    _, out, err = project.cli("status", expect=None)
    assert "next: `patchforge refresh` writes the change" in out + err, out + err
    project.cli("refresh")
    project.cli("new", "three", "--no-edit")


@pytest.mark.parametrize("how", ["rebase", "bring-back"])
def test_a_file_gone_upstream_can_be_dropped_from_the_patch_keeping_the_rest(project, how):
    """At a stop on a file gone upstream there was no way to keep the patch's other files'
    change without that file's (--continue refused until it was re-created; --skip set the
    whole fix aside), and `add` of the gone file said "did you mean pkg/other.py?" (itself, at
    the old pin) and to delete it before `refresh`, which is no command of a stop. `add` says
    what adding it does at this stop and the way to drop it; `patchforge rm PATH` drops the
    patch's change to it, as `git rm` resolves a conflict on a file the other side deleted,
    and --continue writes the patch with the other files' change."""
    target = stopped_on_a_file_gone_upstream(project)
    go_on = "patchforge rebase --continue"
    if how == "bring-back":
        project.cli("rebase", "--skip", expect=1)
        project.cli("bring-back", "fix-two", expect=3)
        go_on = "patchforge bring-back --continue"
    _, _, err = project.cli(go_on.split()[1], "--continue", expect=2)
    assert "`patchforge rm pkg/other.py` drops the patch's change" in err, err
    _, _, err = project.cli("add", "pkg/other.py")
    assert "did you mean" not in err and "refresh" not in err, err
    assert "pkg/other.py is gone upstream" in err and f"then `{go_on}`" in err \
        and "`patchforge rm pkg/other.py`" in err, err
    _, _, err = project.cli("rm", "pkg/mod.py", expect=2)
    assert "pkg/mod.py is not a file gone upstream at this stop of fix-two.patch" in err, err
    _, out, _ = project.cli("rm", "pkg/other.py")
    assert "pkg/other.py dropped from the patch" in out and go_on in out, out
    assert not (project.work / "pkg/other.py").exists()
    project.cli(go_on.split()[1], "--continue")
    moved = project.patch("fix-two")
    assert b"+    return -3" in moved and b"other.py" not in moved, moved.decode()
    assert f"Base: {target}".encode() in moved
    assert project.series() == ["fix-two.patch"]
    assert project.cli("status")[0] == 0


def test_rm_is_refused_where_no_stop_is_on_a_file_gone_upstream(project):
    """`patchforge rm` outside such a stop changes nothing: during an edit it says how a file
    leaves a patch being edited."""
    project.fix("fix-a", {"pkg/mod.py": text({3: b"def f3():\n    return -3\n\n"})})
    _, _, err = project.cli("rm", "pkg/mod.py", expect=2)
    assert "no worktree is open" in err, err
    project.cli("edit", "fix-a")
    _, _, err = project.cli("rm", "pkg/mod.py", expect=2)
    assert "at no stop on a file gone upstream" in err and "git checkout -- PATH" in err, err
    assert (project.work / "pkg/mod.py").exists()


def test_patch_files_a_series_line_cannot_name_are_reported_as_unlisted(project):
    """A copy of a fix dropped into series/up/ by hand as extra.diff, X.PATCH or under a
    subdirectory is in no series line (a line names only NAME.patch beside it), so the fix is
    never applied, and status said "all apply", exit 0, lint nothing. They are reported as an
    unlisted NAME.patch is, with the way on; the copies kept aside (skipped/, deleted/,
    upstreamed/) and other files are not."""
    import json

    project.fix("fix-a", {"pkg/mod.py": text({3: b"def f3():\n    return -3\n\n"})})
    directory = project.root / "series" / "up"
    fix = project.patch("fix-a")
    for rel in ("extra.diff", "X.PATCH", "old/fix-b.patch", "deleted/gone.patch",
                "upstreamed/landed.patch", "deleted/sub/older.diff"):
        (directory / rel).parent.mkdir(parents=True, exist_ok=True)
        (directory / rel).write_bytes(fix)
    (directory / "README.md").write_bytes(b"notes\n")
    _, out, _ = project.cli("status", expect=1)
    for rel in ("extra.diff", "X.PATCH", "old/fix-b.patch"):
        assert f"not in the series (needs attention): series/up/{rel}: a series line names " \
               "only NAME.patch in series/up/" in out, out
    assert "gone.patch" not in out and "landed.patch" not in out and "README" not in out, out
    _, out, _ = project.cli("status", "--json", expect=1)
    assert sorted(u["path"] for u in json.loads(out)["unlisted"]) == [
        "series/up/X.PATCH", "series/up/extra.diff", "series/up/old/fix-b.patch"]
    _, out, _ = project.cli("lint", "--no-forge", expect=1)
    for rel in ("extra.diff", "X.PATCH", "old/fix-b.patch"):
        assert f"up/{rel}" in out, out
    assert "under a name a series line cannot give" in out, out
    for rel in ("extra.diff", "X.PATCH", "old/fix-b.patch"):
        (directory / rel).rename(directory / "deleted" / rel.replace("/", "-"))
    assert project.cli("status")[0] == 0


def test_a_read_only_command_leaves_the_open_edits_git_index_alone(project):
    """A read-only command during an edit never writes the worktree's git index: `git status`
    there refreshed the stat data of a file `patchforge add` staged by its hash, so `overlays
    --check`, `rebase --dry-run` and `bump --dry-run` rewrote .git/index (and took its lock,
    which a `git add` run there at the same time then found taken)."""
    project.fix("fix-a", {"pkg/mod.py": text({3: b"def f3():\n    return -3\n\n"})})
    project.cli("edit", "fix-a")
    project.cli("add", "pkg/other.py")
    index = project.work / ".git" / "index"
    head = project.up.head()
    for argv in (("overlays", "--check"), ("rebase", "--to", f"up={head}", "--dry-run"),
                 ("bump", "up", "--to", head, "--dry-run"), ("status",), ("check",)):
        before = index.read_bytes()
        project.cli(*argv, expect=None)
        assert index.read_bytes() == before, argv
