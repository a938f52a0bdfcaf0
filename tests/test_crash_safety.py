"""Crash safety of the commands that write project files (not rebase: see test_rebase_crash.py).

Faults are injected with PATCHFORGE_FAULT=write:N|fsync:N|rename:N (patchforge/fsutil.py): the N-th
write step of `atomic_write` kills the process (exit 137, no cleanup, as kill -9 would) or, with
PATCHFORGE_FAULT_MODE=raise, fails with EIO. Every N is tried until the command finishes without
reaching the fault, so every write point of `refresh`, `delete`, `rename` and `upstream add` is
hit. After each fault the project must be in its old state or its new state (or, where the
command documents one, a named intermediate state that loses nothing), no patch may be lost, and
the next command must work (the dead process's lock is stale and taken over).

`overlays` swaps a staging tree in with two renames (overlay.py write_overlays); its fault points are
tried like the others, its kill points are also reproduced as the on-disk states a kill leaves, and
a real SIGKILL is sent at several moments: `recover_overlays` must turn each into the old or the new
set.
"""
from __future__ import annotations

import errno
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers.cli import ok, run_cli, run_faulted_copy, run_subprocess
from helpers.project import add_patch_file
from helpers.snapshot import snapshot
from helpers.template import (HEADER, MODIFY_A, build_template, check_but_for_the_install_root,
                              verify_but_for_the_install_root)

STEPS = ("write", "fsync", "rename")


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    return build_template(tmp_path_factory)


def project_files(root: Path) -> dict:
    """The project's files as a user sees them: local state (.patchforge/) and the temporary files
    a killed atomic_write leaves behind (hidden, `.name.XXXX.tmp`) are not part of it."""
    snap = snapshot(root)
    return {k: v for k, v in snap.items()
            if not k.startswith(".patchforge") and v[0] != "dir"  # (an empty deleted/ is nothing)
            and not (Path(k).name.startswith(".") and Path(k).name.endswith(".tmp"))}


def stray_temp_files(root: Path) -> list[str]:
    return sorted(k for k in snapshot(root) if Path(k).name.endswith(".tmp")
                  and not k.startswith(".patchforge/work/"))


def run_with_faults(prepared: Path, tmp_path: Path, args: tuple[str, ...], check_state,
                    *, mode: str = "kill") -> int:
    """Run `args` on a fresh copy of `prepared` with each fault in turn; returns how many fault
    points were hit. `check_state(root, phase)` asserts the state after each faulted run."""
    hits = 0
    for step in STEPS:
        for n in range(1, 50):
            root = tmp_path / f"{step}-{n}-{mode}"
            proc = run_faulted_copy(prepared, root, *args, fault=f"{step}:{n}",
                                    mode="raise" if mode == "raise" else None)
            if proc.returncode == 0:
                break  # the command has fewer than n such steps: all were tried
            hits += 1
            err = proc.stderr.decode()
            if mode == "kill":
                assert proc.returncode == 137, err
            else:
                assert proc.returncode != 0 and "injected fault" in err, err
            check_state(root, f"{step}:{n}")
            # The killed process's lock is stale: the next command takes it over and works.
            again = run_cli(root, "list")
            assert again.rc == 0, again.text
        else:
            pytest.fail(f"{args}: the fault {step} never stopped firing")
    return hits


def _prepared(env, tmp_path, monkeypatch) -> Path:
    root = env.fresh(tmp_path / "base", monkeypatch)
    add_patch_file(root, "up", "fix.patch", HEADER + MODIFY_A)
    add_patch_file(root, "up", "other.patch", HEADER + (
        b"diff --git a/pkg/mod.py b/pkg/mod.py\n--- a/pkg/mod.py\n+++ b/pkg/mod.py\n"
        b"@@ -1,3 +1,3 @@\n x = 1\n-y = 2\n+y = 20\n z = 3\n"))
    return root


def _after(prepared: Path, tmp_path: Path, *args: str) -> dict:
    """The new state: the same command run to the end without faults."""
    root = tmp_path / "clean-run"
    shutil.copytree(prepared, root, symlinks=True)
    proc = run_subprocess(root, *args)
    assert proc.returncode == 0, proc.stderr.decode()
    return project_files(root)


@pytest.mark.parametrize("mode", ["kill", "raise"])
def test_refresh_at_every_write_point(env, tmp_path, monkeypatch, mode):
    prepared = _prepared(env, tmp_path, monkeypatch)
    # With a ledger (series/PATCHES.md), refresh writes it after the patch: a kill there
    # leaves the patch written and the edit open.
    assert run_cli(prepared, "ledger").rc == 0
    assert run_cli(prepared, "edit", "fix").rc == 0
    work = prepared / ".patchforge" / "work" / "up" / "a.txt"
    work.write_bytes(work.read_bytes().replace(b"line5\n", b"LINE5\r\n"))
    old = project_files(prepared)
    new = _after(prepared, tmp_path, "refresh")
    assert new != old

    # Documented intermediate: the patch written, the ledger (derived from it) not yet.
    written = {**old, "series/up/fix.patch": new["series/up/fix.patch"]}

    def check(root, phase):
        state = project_files(root)
        assert state in (old, written, new), phase
        # Running it again finishes it (a kill after the patch was written leaves the edit
        # open on a patch that now holds the worktree's change: not a change to refuse).
        again = run_cli(root, "refresh")
        assert again.rc == 0 and project_files(root) == new, (phase, again.text)

    assert run_with_faults(prepared, tmp_path, ("refresh",), check, mode=mode) >= 3


@pytest.mark.parametrize("mode", ["kill"])
def test_delete_at_every_write_point(env, tmp_path, monkeypatch, mode):
    prepared = _prepared(env, tmp_path, monkeypatch)
    data = (prepared / "series" / "up" / "fix.patch").read_bytes()
    old = project_files(prepared)
    new = _after(prepared, tmp_path, "delete", "fix")
    # Documented intermediate: the copy under deleted/ is written, the series still lists it.
    copied = dict(old)
    copied["series/up/deleted/fix.patch"] = new["series/up/deleted/fix.patch"]
    # ... and after unlisting, before removing the original.
    unlisted = dict(new)
    unlisted["series/up/fix.patch"] = old["series/up/fix.patch"]

    def check(root, phase):
        state = project_files(root)
        assert state in (old, copied, unlisted, new), phase
        # No patch lost: its bytes are listed in the series or kept under deleted/.
        kept = [p for p in (root / "series/up/fix.patch", root / "series/up/deleted/fix.patch")
                if p.exists()]
        assert kept and all(p.read_bytes() == data for p in kept), phase

    assert run_with_faults(prepared, tmp_path, ("delete", "fix"), check, mode=mode) >= 6


def _deletions(root: Path) -> list[bytes]:
    """The `deleted` events of the project's series history."""
    history = root / "series" / "history.jsonl"
    lines = history.read_bytes().splitlines() if history.exists() else []
    return [line for line in lines if b'"event":"deleted"' in line]


def test_a_delete_killed_at_any_write_is_in_the_history_and_leaves_nothing_to_commit(
        env, tmp_path, monkeypatch):
    """In a stack that keeps a ledger and a history, `delete` killed at each write. Once the
    series no longer lists the fix, the history's `deleted` event says where it is kept: the
    event was written last, so a kill before it left the fix under deleted/ with a history
    that did not know of it, and the same delete run again was refused ("not in the
    series"). Now the same delete run again finishes what a kill cut short, recording the
    event once. The hidden temporary file a kill leaves beside its target is ignored by the
    .gitignore `init` wrote: `git status` in the stack's repository shows none of them."""
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1767225600")
    prepared = _prepared(env, tmp_path, monkeypatch)
    data = (prepared / "series" / "up" / "fix.patch").read_bytes()
    assert run_cli(prepared, "ledger").rc == 0
    for args in (("init", "-q"), ("add", "-A"), ("commit", "-qm", "stack")):
        subprocess.run(["git", *args], cwd=prepared, check=True, capture_output=True)

    def files(root: Path) -> dict:
        return {k: v for k, v in project_files(root).items() if not k.startswith(".git/")}

    new_root = tmp_path / "clean-run"
    shutil.copytree(prepared, new_root, symlinks=True)
    run_subprocess(new_root, "delete", "fix", expect=0)
    new = files(new_root)
    [event] = _deletions(new_root)
    assert b"kept as series/up/deleted/fix.patch" in event, event

    def check(root, phase):
        listed = (root / "series/up/series").read_bytes().split()
        kept = root / "series/up/deleted/fix.patch"
        if b"fix.patch" not in listed:
            assert kept.read_bytes() == data, phase
            assert _deletions(root) == [event], phase
        else:
            assert (root / "series/up/fix.patch").read_bytes() == data, phase
            assert _deletions(root) in ([], [event]), phase
        status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"],
                                cwd=root, check=True, capture_output=True, text=True).stdout
        assert ".tmp" not in status, (phase, status)
        done = files(root) == new
        again = run_cli(root, "delete", "fix")
        if done:  # (nothing left to delete)
            assert again.rc == 2 and "deleted/fix.patch" in again.err, (phase, again.text)
        else:
            assert again.rc == 0, (phase, again.text)
        assert files(root) == new and _deletions(root) == [event], phase

    assert run_with_faults(prepared, tmp_path, ("delete", "fix"), check) >= 8


@pytest.mark.parametrize("name", ["fix", "t[1](2)"])
def test_a_delete_out_of_skipped_killed_at_any_write_is_finished_by_the_same_delete(
        env, tmp_path, monkeypatch, name):
    """In a stack that keeps a ledger, `delete` of a fix a rebase set aside (skipped/) killed
    at each write. A kill once the fix left skipped/ and before the ledger was written left
    the ledger stale (lint said so, `patchforge ledger` repaired it), and the same delete run
    again was refused: the fix was already kept under deleted/. Now the same delete run again
    finishes it to the clean run's files, the `deleted` event recorded once; so it does for a
    name holding brackets, whose PATCHES.md row links its file as `(<...>)` (the delete run
    again did not find that row, and was refused)."""
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1767225600")
    prepared = _prepared(env, tmp_path, monkeypatch)
    series_dir = prepared / "series" / "up"
    data = (series_dir / "fix.patch").read_bytes()
    (series_dir / "skipped").mkdir()
    (series_dir / "fix.patch").rename(series_dir / "skipped" / f"{name}.patch")
    (series_dir / "series").write_bytes(b"other.patch\n")
    assert run_cli(prepared, "ledger").rc == 0

    new_root = tmp_path / "clean-run"
    shutil.copytree(prepared, new_root, symlinks=True)
    run_subprocess(new_root, "delete", name, expect=0)
    new = project_files(new_root)
    [event] = _deletions(new_root)
    assert f"kept as series/up/deleted/{name}.patch".encode() in event, event
    assert new["series/PATCHES.md"] != project_files(prepared)["series/PATCHES.md"]

    def check(root, phase):
        kept = root / f"series/up/deleted/{name}.patch"
        aside = root / f"series/up/skipped/{name}.patch"
        assert [p.read_bytes() for p in (aside, kept) if p.exists()][:1] == [data], phase
        done = project_files(root) == new
        again = run_cli(root, "delete", name)
        if done:  # (nothing left to delete)
            assert again.rc == 2 and f"deleted/{name}.patch" in again.err, (phase, again.text)
        else:
            assert again.rc == 0 and f"removed {name} from skipped/" in again.out, \
                (phase, again.text)
        assert project_files(root) == new and _deletions(root) == [event], phase
        assert run_cli(root, "lint").rc == 0, phase

    assert run_with_faults(prepared, tmp_path, ("delete", name), check) >= 6


@pytest.mark.parametrize("mode", ["kill", "raise"])
def test_rename_at_every_write_point(env, tmp_path, monkeypatch, mode):
    """Killed at each write, or failing there (EIO: a full disk): every listed patch exists.
    A failure leaves the project as it was (it left the new file unlisted, and the same rename
    run again refused: "better.patch already exists"); after a kill, the same rename run again
    finishes it (it refused, or answered "no patch named 'fix'" with fix.patch left over)."""
    prepared = _prepared(env, tmp_path, monkeypatch)
    data = (prepared / "series" / "up" / "fix.patch").read_bytes()
    old = project_files(prepared)
    new = _after(prepared, tmp_path, "rename", "fix", "better")
    written = dict(old)
    written["series/up/better.patch"] = new["series/up/better.patch"]
    relisted = dict(new)
    relisted["series/up/fix.patch"] = old["series/up/fix.patch"]

    def check(root, phase):
        state = project_files(root)
        assert state in (old, written, relisted, new), phase
        series = (root / "series/up/series").read_bytes().split()
        for name in series:  # every listed patch exists, with the same bytes
            assert (root / "series/up" / name.decode()).exists(), phase
        assert b"other.patch" in series and (b"fix.patch" in series or b"better.patch" in series)
        assert data in ((root / "series/up/fix.patch").read_bytes()
                        if b"fix.patch" in series else (root / "series/up/better.patch").read_bytes())
        if mode == "raise":
            assert state in (old, new), phase
        again = run_cli(root, "rename", "fix", "better")
        assert again.rc == 0 and project_files(root) == new, (phase, again.text)

    assert run_with_faults(prepared, tmp_path, ("rename", "fix", "better"), check,
                           mode=mode) >= 6


@pytest.mark.parametrize("mode", ["interrupt", "kill"])
def test_a_rename_of_the_fix_being_edited_cut_short_anywhere_keeps_the_edit(
        env, tmp_path, monkeypatch, mode):
    """`rename` while the fix is being edited, with a change in the worktree not refreshed yet,
    cut short (Ctrl-C, or a kill) at each of its writes and just after each rename and removal:
    the same rename run again finishes it, and `refresh` then writes the change into the fix
    under its new name. Never the edit left on OLD's name with OLD's file gone, which nothing
    could refresh and only `edit --close --discard` ended."""
    prepared = _prepared(env, tmp_path, monkeypatch)
    assert run_cli(prepared, "edit", "fix").rc == 0
    work = prepared / ".patchforge" / "work" / "up" / "a.txt"
    work.write_bytes(work.read_bytes().replace(b"line5\n", b"LINE5\n"))
    env_mode = {"PATCHFORGE_FAULT_MODE": "interrupt"} if mode == "interrupt" else {}
    hits = 0
    for step in ("write", "fsync", "rename", "renamed", "dirsync"):
        for n in range(1, 50):
            root = tmp_path / f"{step}-{n}"
            shutil.copytree(prepared, root, symlinks=True)
            proc = run_subprocess(root, "rename", "fix", "better",
                                  env={**env_mode, "PATCHFORGE_FAULT": f"{step}:{n}"})
            if proc.returncode == 0:
                break
            hits += 1
            assert proc.returncode == (130 if mode == "interrupt" else 137), \
                (step, n, proc.stderr.decode())
            again = run_cli(root, "rename", "fix", "better")
            series = (root / "series/up/series").read_bytes().split()
            if again.rc != 0:  # the rename was whole: there is no fix left to rename
                assert b"fix.patch" not in series, (step, n, again.text)
            refreshed = run_cli(root, "refresh")
            assert refreshed.rc == 0, (step, n, again.text, refreshed.text)
            assert b"better.patch" in series and b"fix.patch" not in series, (step, n)
            assert not (root / "series/up/fix.patch").exists(), (step, n)
            assert b"+LINE5\n" in (root / "series/up/better.patch").read_bytes(), (step, n)
            shutil.rmtree(root)
        else:
            pytest.fail(f"the fault {step} never stopped firing")
    assert hits >= 10


def test_a_rename_killed_then_a_refresh_of_the_old_name_is_finished_by_the_next_rename(
        env, tmp_path, monkeypatch):
    """`rename fix better` killed (as SIGKILL would) while `fix` is being edited, then
    `refresh`, then the same rename: killed after better.patch was written and before the
    series named it, the refresh changed fix.patch, and the copy of it from before the
    refresh, unlisted, made the rename again say "better.patch already exists" without saying
    what it was. The rename's journal says: the next rename takes its copy away and renames
    the fix as it is now. At every kill point the rename then ends with better.patch listed,
    holding the refresh's change, and no file of either name left unlisted."""
    prepared = _prepared(env, tmp_path, monkeypatch)
    assert run_cli(prepared, "edit", "fix").rc == 0
    met_the_copy = 0
    for n in range(1, 50):
        root = tmp_path / f"write-{n}"
        shutil.copytree(prepared, root, symlinks=True)
        series = root / "series" / "up"
        proc = run_subprocess(root, "rename", "fix", "better", env={"PATCHFORGE_FAULT": f"write:{n}"})
        if proc.returncode == 0:
            break
        assert proc.returncode == 137, (n, proc.stderr.decode())
        met_the_copy += (series / "better.patch").exists() and \
            b"better.patch" not in (series / "series").read_bytes()
        work = root / ".patchforge" / "work" / "up" / "a.txt"
        work.write_bytes(work.read_bytes().replace(b"line5\n", b"LINE5\n"))
        refreshed = run_cli(root, "refresh")
        if (series / "better.patch").exists() and \
                b"better.patch" not in (series / "series").read_bytes():
            # status and lint say what the file is, never "list it" (the fix twice).
            said = "the copy of fix.patch a `patchforge rename fix better` cut short left"
            for command in ("status", "lint"):
                run = run_cli(root, command)
                assert said in run.text and "list it" not in run.text, (n, run.text)
        again = run_cli(root, "rename", "fix", "better")
        assert again.rc == 0 or b"fix.patch" not in (series / "series").read_bytes(), \
            (n, refreshed.text, again.text)
        if refreshed.rc != 0:  # the series named better already: the rename finishes first
            assert "finished by running it again" in refreshed.err, (n, refreshed.text)
            assert run_cli(root, "refresh").rc == 0, n
        listed = (series / "series").read_bytes().split()
        assert listed == [b"better.patch", b"other.patch"], (n, listed)
        assert sorted(p.name for p in series.glob("*.patch")) == ["better.patch", "other.patch"]
        assert b"+LINE5\n" in (series / "better.patch").read_bytes(), n
        assert not (root / ".patchforge" / "rename.json").exists(), n
        shutil.rmtree(root)
    else:
        pytest.fail("the fault never stopped firing")
    assert met_the_copy, "no kill left better.patch unlisted"
    # A file of NEW's name the journal does not explain (put there by hand, or left by an
    # earlier patchforge) is never taken away: the refusal says what it is and the way on.
    series = prepared / "series" / "up"
    (series / "better.patch").write_bytes(b"my notes\n")
    refused = run_cli(prepared, "rename", "fix", "better")
    assert refused.rc == 2 and "better.patch already exists in series/up/, though the up " \
        "series does not list it" in refused.err, refused.text
    assert "cut short" in refused.err and "rm series/up/better.patch" in refused.err
    assert (series / "better.patch").read_bytes() == b"my notes\n"


def test_an_edit_left_on_the_old_name_of_a_cut_rename_goes_to_the_new_name_when_it_is_run_again(
        env, tmp_path, monkeypatch):
    """What a rename cut short by an earlier patchforge could leave: the series lists NEW, OLD's
    file is gone, and the open edit is still of OLD. `refresh` says the same rename run again
    finishes it; run again, the edit is NEW's and `refresh` writes the change into it."""
    root = _prepared(env, tmp_path, monkeypatch)
    assert run_cli(root, "edit", "fix").rc == 0
    work = root / ".patchforge" / "work" / "up" / "a.txt"
    work.write_bytes(work.read_bytes().replace(b"line5\n", b"LINE5\n"))
    series = root / "series" / "up"
    (series / "fix.patch").rename(series / "better.patch")
    (series / "series").write_bytes((series / "series").read_bytes().replace(b"fix.patch",
                                                                              b"better.patch"))
    refused = run_cli(root, "refresh")
    assert refused.rc == 2 and "a `patchforge rename` cut short is finished by running it " \
        "again" in refused.err, refused.text
    assert run_cli(root, "rename", "fix", "better").rc == 0
    assert run_cli(root, "refresh").rc == 0
    assert b"+LINE5\n" in (series / "better.patch").read_bytes()
    assert not (series / "fix.patch").exists()


_COPY_SAID = "the copy of fix.patch a `patchforge rename fix better` cut short left"
_OLD_SAID = "the old name of better.patch, which a `patchforge rename fix better` cut short"


def _rename_journals(sha256: str) -> dict[str, bytes | None]:
    """A rename journal (.patchforge/rename.json) as a rename writes it, then ones no rename
    writes: each is refused alike by what reads it for a copy a rename left and for the old
    name it left (None: a FIFO there)."""
    import json

    whole = {"upstream": "up", "old": "fix.patch", "new": "better.patch", "sha256": sha256}
    return {
        "whole": json.dumps(whole).encode(),
        "not JSON": b"{\"upstream\": \"up\", ",
        "a list": json.dumps(list(whole.values())).encode(),
        "no sha256": json.dumps({k: v for k, v in whole.items() if k != "sha256"}).encode(),
        "a number for sha256": json.dumps({**whole, "sha256": 7}).encode(),
        "an unknown upstream": json.dumps({**whole, "upstream": "elsewhere"}).encode(),
        "a path for NEW": json.dumps({**whole, "new": "../up/better.patch"}).encode(),
        "a path for OLD": json.dumps({**whole, "old": "../up/fix.patch"}).encode(),
        "NEW the same as OLD": json.dumps({**whole, "new": "fix.patch"}).encode(),
        "a FIFO": None,
    }


def test_a_forged_rename_journal_is_refused_alike_for_the_copy_and_the_old_name(
        env, tmp_path, monkeypatch):
    """The rename journal is read for two things a rename cut short can leave: NEW's file
    beside a series still listing OLD (its copy) and OLD's file beside a series listing NEW
    (its old name); `status` says which. A journal a rename writes explains both; one no
    rename writes (not JSON, a field missing or not a string, an unknown upstream, a path
    for a name, NEW the same as OLD, a link, a FIFO) explains neither: the file is said as
    any unlisted file is, never as the rename's, and a FIFO there never blocks `status`."""
    import hashlib

    prepared = _prepared(env, tmp_path, monkeypatch)
    fix = (prepared / "series" / "up" / "fix.patch").read_bytes()
    journals = _rename_journals(hashlib.sha256(fix).hexdigest())
    journals["a link to a whole journal"] = journals["whole"]
    for at, (what, journal) in enumerate(journals.items()):
        said = {}
        for left in ("copy", "old name"):
            root = tmp_path / f"{at}-{left.replace(' ', '-')}"
            shutil.copytree(prepared, root, symlinks=True)
            series = root / "series" / "up"
            if left == "copy":  # killed before the series named NEW
                (series / "better.patch").write_bytes(fix)
            else:  # killed after the series named NEW, before OLD's file went
                (series / "better.patch").write_bytes(fix)
                (series / "series").write_bytes(
                    (series / "series").read_bytes().replace(b"fix.patch", b"better.patch"))
            path = root / ".patchforge" / "rename.json"
            if journal is None:
                os.mkfifo(path)
            elif what.startswith("a link"):
                (tmp_path / "elsewhere.json").write_bytes(journal)
                path.symlink_to(tmp_path / "elsewhere.json")
            else:
                path.write_bytes(journal)
            if journal is None:  # in a process of its own: a read that blocks is cut short
                proc = run_subprocess(root, "status", timeout=60)
                text = (proc.stdout + proc.stderr).decode()
            else:
                text = run_cli(root, "status").text
            said[left] = (_COPY_SAID if left == "copy" else _OLD_SAID) in text
            assert "fix.patch" in text and "better.patch" in text, (what, left, text)
            assert _COPY_SAID not in text or left == "copy", (what, left, text)
        assert said == ({"copy": True, "old name": True} if what == "whole" else
                        {"copy": False, "old name": False}), (what, said)


@pytest.mark.parametrize("mode", ["kill", "raise"])
def test_a_rename_in_a_stack_with_a_history_is_recorded_once_at_every_write_point(
        env, tmp_path, monkeypatch, mode):
    """In a stack that keeps a ledger and a history (a fix's past recorded under its old
    name), `rename` records itself before the old file goes. Killed at each write, the states
    are the rename's own cut-short ones (the same rename run again finishes it) or the history
    holding the event beside OLD's file, never a finished rename the history does not know of;
    a failure (EIO) before the history holds the event leaves the project as it was. Run
    again, the event is there exactly once, and the ledger is the clean run's."""
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1767225600")
    prepared = _prepared(env, tmp_path, monkeypatch)
    (prepared / "series" / "history.jsonl").write_bytes(
        b'{"event":"rebased","patch":"fix.patch","time":"2025-12-01T00:00:00Z",'
        b'"upstream":"up","v":1}\n')
    assert run_cli(prepared, "ledger").rc == 0
    old = project_files(prepared)
    new = _after(prepared, tmp_path, "rename", "fix", "better")
    history, ledger = "series/history.jsonl", "series/PATCHES.md"
    assert new[history][1].count(b'"event":"renamed"') == 1
    assert b"| up/better.patch | as fix.patch: rebased" in new[ledger][1]
    written = {**old, "series/up/better.patch": new["series/up/better.patch"]}
    relisted = {**new, "series/up/fix.patch": old["series/up/fix.patch"],
                history: old[history], ledger: old[ledger]}
    recorded = {**relisted, history: new[history]}
    ledgered = {**recorded, ledger: new[ledger]}
    states = [old, written, relisted, recorded, ledgered, new] if mode == "kill" else \
        [old, recorded, ledgered, new]

    def check(root, phase):
        state = project_files(root)
        assert state in states, phase
        again = run_cli(root, "rename", "fix", "better")
        if state == new:  # (done: the same rename again has nothing to rename)
            assert again.rc == 2, (phase, again.text)
        else:
            assert again.rc == 0, (phase, again.text)
        assert project_files(root) == new, phase

    assert run_with_faults(prepared, tmp_path, ("rename", "fix", "better"), check,
                           mode=mode) >= 8


def test_upstream_add_at_every_write_point(env, tmp_path, monkeypatch):
    prepared = _prepared(env, tmp_path, monkeypatch)
    args = ("upstream", "add", "second", "--git", str(env.upstream), "--at", "main")
    old = project_files(prepared)
    new = _after(prepared, tmp_path, *args)
    # Documented intermediate (ops/setup.py add_upstream): the lock has the pin, the config not
    # yet; running `upstream add` again completes it.
    pinned = dict(old)
    pinned["upstream.lock"] = new["upstream.lock"]

    def check(root, phase):
        state = project_files(root)
        assert state in (old, pinned, new), phase
        if state == pinned:
            again = run_subprocess(root, *args)
            assert again.returncode == 0, again.stderr.decode()
            assert project_files(root) == new

    assert run_with_faults(prepared, tmp_path, args, check) >= 6


def test_killed_atomic_write_leaves_only_hidden_temp_files(env, tmp_path, monkeypatch):
    # What a kill between write and rename leaves: a hidden temporary file beside the target,
    # which no command reads as a patch (the series and `*.patch` never match `.x.patch.N.tmp`).
    prepared = _prepared(env, tmp_path, monkeypatch)
    root = tmp_path / "killed"
    shutil.copytree(prepared, root, symlinks=True)
    proc = run_subprocess(root, "delete", "fix", env={"PATCHFORGE_FAULT": "rename:1"})
    assert proc.returncode == 137
    stray = stray_temp_files(root)
    assert stray and all(Path(s).name.startswith(".") for s in stray)
    r = run_cli(root, "lint", "--no-forge", "--json")
    assert r.rc in (0, 1), r.text
    assert ".tmp" not in r.out


def test_the_next_write_to_a_directory_removes_the_temporary_files_killed_writes_left_there(
        env, tmp_path, monkeypatch):
    """`delete fix` killed at each write leaves `.NAME.XXXXXXXXXX.tmp` files beside their
    targets (series/, series/up/, series/up/deleted/). Every command ignored them and none
    removed them: they piled up under series/ for good. Now the next command that writes in
    those directories (`delete other`) removes them, and only them: a user's look-alikes (a
    name that is not ours, a link, a directory) stay as they are."""
    prepared = _prepared(env, tmp_path, monkeypatch)
    assert run_cli(prepared, "ledger").rc == 0
    series = prepared / "series" / "up"
    (series / "deleted").mkdir()
    theirs = {"series/up/.notes.tmp": b"mine\n", "series/up/.fix.patch.0123456789.tmp.bak": b"x\n",
              "series/up/deleted/.fix.patch.ABCDEF0123.tmp": b"mine\n",
              ".draft.012345678.tmp": b"mine\n"}
    for rel, data in theirs.items():
        (prepared / rel).write_bytes(data)
    (series / ".dir.0123456789.tmp").mkdir()
    (series / ".link.0123456789.tmp").symlink_to("fix.patch")
    kept = {*theirs, "series/up/.dir.0123456789.tmp", "series/up/.link.0123456789.tmp"}
    left_some = 0

    def check(root, phase):
        nonlocal left_some
        ours = [s for s in stray_temp_files(root) if s not in kept]
        left_some += bool(ours)
        assert run_cli(root, "delete", "other").rc == 0, phase
        assert set(stray_temp_files(root)) == {k for k in kept if k.endswith(".tmp")}, \
            (phase, ours)
        for rel, data in theirs.items():
            assert (root / rel).read_bytes() == data, phase
        assert (root / "series/up/.link.0123456789.tmp").is_symlink(), phase

    assert run_with_faults(prepared, tmp_path, ("delete", "fix"), check) >= 6
    assert left_some >= 4


def test_a_reports_temporary_file_in_the_project_root_is_never_taken_for_a_stray(tmp_path):
    """`status --html status.html` (or `export`, `pr --out`) in the project's root holds no
    project lock; a command that writes in the root (`delete`, `rename`, ...) ends its hold
    while the report is between its temporary file and its rename: the report's temporary file
    stays, and its rename succeeds. A killed write of the project's own root files (the lock)
    is still tidied away."""
    from patchforge import fsutil

    root = tmp_path / "project"
    (root / ".patchforge").mkdir(parents=True)
    (root / "series").mkdir()
    fd, report = fsutil._temporary(str(root), "status.html")
    os.write(fd, b"<html>report</html>\n")
    os.close(fd)
    stale = root / ".upstream.lock.0123456789.tmp"
    stale.write_bytes(b"{}")
    with fsutil.RepoLock(root / ".patchforge"):
        with fsutil.writing_project(root):
            fsutil.atomic_write(root / "series" / "x", b"x\n")
            fsutil.atomic_write(root / "upstream.lock", b"{}\n")
    os.replace(report, root / "status.html")
    assert (root / "status.html").read_bytes() == b"<html>report</html>\n"
    assert not stale.exists()

# ---------------------------------------------------------------------------------------------
# overlays: the swap's kill points, as the states they leave


def _overlay_states(env, tmp_path, monkeypatch):
    prepared = _prepared(env, tmp_path, monkeypatch)
    assert run_cli(prepared, "overlays").rc == 0
    old_overlays = snapshot(prepared / "overlays")
    (prepared / "series" / "up" / "fix.patch").write_bytes(
        HEADER + MODIFY_A.replace(b"+LINE2", b"+LINE-TWO"))
    clean = tmp_path / "clean-overlays"
    shutil.copytree(prepared, clean, symlinks=True)
    assert run_cli(clean, "overlays").rc == 0
    new_overlays = snapshot(clean / "overlays")
    assert new_overlays != old_overlays
    return prepared, old_overlays, new_overlays


@pytest.mark.parametrize("step", STEPS)
def test_a_batch_of_atomic_writes_keeps_modes_and_fails_whole(tmp_path, monkeypatch, step):
    """atomic_write_many: each file replaced keeps its own mode (a new one gets 0644, whatever
    the umask), the bytes are the new ones, and nothing else is left in the directory; a write
    step that fails (EIO) leaves every file as it was and removes the temporary files."""
    from patchforge.fsutil import atomic_write_many

    old = {"run.sh": (b"echo old\n", 0o755), "secret.txt": (b"s0\n", 0o600)}
    for name, (data, mode) in old.items():
        (tmp_path / name).write_bytes(data)
        os.chmod(tmp_path / name, mode)
    new = {"run.sh": b"echo new\n", "secret.txt": b"s1\n", "fresh.patch": b"x" * 70000}
    monkeypatch.setenv("PATCHFORGE_FAULT", f"{step}:2")
    monkeypatch.setenv("PATCHFORGE_FAULT_MODE", "raise")
    with pytest.raises(OSError, match="injected fault"):
        atomic_write_many([(tmp_path / name, data) for name, data in new.items()])
    assert sorted(os.listdir(tmp_path)) == sorted(old)
    for name, (data, mode) in old.items():  # a rename that failed: the first is new, whole
        got = (tmp_path / name).read_bytes()
        assert got == data or (step == "rename" and got == new[name])
    assert not [n for n in os.listdir(tmp_path) if n.endswith(".tmp")]
    monkeypatch.delenv("PATCHFORGE_FAULT")
    old_umask = os.umask(0o077)
    try:
        atomic_write_many([(tmp_path / name, data) for name, data in new.items()])
    finally:
        os.umask(old_umask)
    assert sorted(os.listdir(tmp_path)) == sorted(new)
    for name, data in new.items():
        assert (tmp_path / name).read_bytes() == data
    modes = {name: (tmp_path / name).stat().st_mode & 0o7777 for name in new}
    assert modes == {"run.sh": 0o755, "secret.txt": 0o600, "fresh.patch": 0o644}


def test_writes_cut_short_are_put_back_or_the_ones_left_are_named(tmp_path):
    """put_back_on_failure: a block of writes that fails puts every file back (bytes, mode,
    a file it made removed) and the failure goes on as it was; a file that cannot go back (its
    directory replaced by a file here) is named, with the way to finish, never passed over in
    silence ("nothing was left half-written" would then be false)."""
    from patchforge.errors import PartlyWritten
    from patchforge.fsutil import atomic_delete, atomic_write, put_back_on_failure

    (tmp_path / "d").mkdir()
    kept, made, gone = tmp_path / "kept.patch", tmp_path / "d/made.patch", tmp_path / "gone"
    kept.write_bytes(b"old\n")
    os.chmod(kept, 0o600)
    gone.write_bytes(b"keep me\n")
    with pytest.raises(OSError, match="disk"):
        with put_back_on_failure([kept, made, gone], finish="run it again"):
            atomic_write(kept, b"new\n")
            atomic_write(made, b"made\n")
            atomic_delete(gone)
            raise OSError(errno.EIO, "the disk failed")
    assert (kept.read_bytes(), kept.stat().st_mode & 0o777) == (b"old\n", 0o600)
    assert not made.exists() and gone.read_bytes() == b"keep me\n"

    with pytest.raises(PartlyWritten) as raised:
        with put_back_on_failure([kept, made], finish="run it again"):
            atomic_write(kept, b"new\n")
            atomic_write(made, b"made\n")
            shutil.rmtree(tmp_path / "d")
            (tmp_path / "d").write_bytes(b"")
            raise OSError(errno.EIO, "the disk failed")
    assert kept.read_bytes() == b"new\n"  # written before it: left as written, and named
    assert str(made) in raised.value.message and str(kept) in raised.value.message
    assert "the disk failed" in raised.value.message and raised.value.hint == "run it again"


def test_a_file_that_cannot_go_back_keeps_the_ones_written_before_it(tmp_path):
    """put_back_on_failure stops at the first file (from the last written) that cannot go
    back: those written before it stay as written, consistent with it, and the message names
    them all, in the order written. Before, it went on: an import's patch files were removed
    while the series it could not put back still listed them, and the hint "run the import
    again: it lists the patches it wrote" was untrue."""
    from patchforge.errors import PartlyWritten
    from patchforge.fsutil import atomic_write, put_back_on_failure

    (tmp_path / "patches").mkdir()
    (tmp_path / "listing").mkdir()
    first, second = tmp_path / "patches/a.patch", tmp_path / "patches/b.patch"
    series, untouched = tmp_path / "listing/series", tmp_path / "patches/c.patch"
    series.write_bytes(b"old.patch\n")
    with pytest.raises(PartlyWritten) as raised:
        with put_back_on_failure([first, untouched, second, series], finish="run it again"):
            atomic_write(first, b"a\n")
            atomic_write(second, b"b\n")
            atomic_write(series, b"old.patch\na.patch\nb.patch\n")
            shutil.rmtree(tmp_path / "listing")  # the series can no longer be written back
            (tmp_path / "listing").write_bytes(b"")
            raise OSError(errno.EIO, "the disk failed")
    assert (first.read_bytes(), second.read_bytes()) == (b"a\n", b"b\n")
    assert not untouched.exists()
    message = raised.value.message
    assert f"{series} could not be put back" in message, message
    assert message.endswith(f"{first}, {second}, {series}") and str(untouched) not in message


def test_a_file_put_back_whose_directory_sync_fails_is_not_said_left_as_written(tmp_path,
                                                                                 monkeypatch):
    """A put-back whose rename (or removal) happened but whose directory sync then failed left
    the file back in place, yet PartlyWritten named it (and the ones before it) "left as the
    command wrote them". Such a file is back: the putting back goes on, and nothing is said
    left as written."""
    import patchforge.fsutil as fsutil

    patch, series = tmp_path / "a.patch", tmp_path / "series"
    series.write_bytes(b"old.patch\n")
    failing = []

    def sync(directory):
        if failing:
            raise OSError(errno.EIO, "the disk failed")

    monkeypatch.setattr(fsutil, "fsync_dir", sync)
    with pytest.raises(OSError) as raised:
        with fsutil.put_back_on_failure([patch, series], finish="run it again"):
            fsutil.atomic_write(patch, b"a\n")
            fsutil.atomic_write(series, b"old.patch\na.patch\n")
            failing.append(True)
            raise OSError(errno.EIO, "the write failed")
    assert not isinstance(raised.value, fsutil.PartlyWritten), raised.value
    assert not patch.exists() and series.read_bytes() == b"old.patch\n"


def test_a_batchs_syncs_wait_together_and_all_come_before_any_rename(tmp_path, monkeypatch):
    """atomic_write_many syncs a batch's temporary files several at once (the file system
    commits syncs that wait together in one journal commit), each exactly once, and renames
    none before every one is synced; an fsync that fails on one of those threads fails the
    batch like any other step: every file as it was, no temporary file, no descriptor left."""
    import threading

    from patchforge.fsutil import atomic_write_many

    names = [f"p{k:02d}.patch" for k in range(16)]
    for name in names:
        (tmp_path / name).write_bytes(b"old\n")
    events: list[tuple[str, object]] = []
    lock = threading.Lock()
    meet = threading.Barrier(2, timeout=30)  # broken if no two syncs ever wait at once
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd):
        with lock:
            first_two = sum(kind == "fsync" for kind, _ in events) < 2
            events.append(("fsync", fd))
        if first_two:
            meet.wait()
        return real_fsync(fd)

    def replace(src, dst):
        with lock:
            events.append(("rename", dst))
        return real_replace(src, dst)
    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    atomic_write_many([(tmp_path / name, name.encode()) for name in names])
    kinds = [kind for kind, _ in events]
    assert kinds == ["fsync"] * 16 + ["rename"] * 16 + ["fsync"]  # the directory's, last
    assert len({fd for _, fd in events[:16]}) == 16
    assert all((tmp_path / name).read_bytes() == name.encode() for name in names)

    def failing(fd):
        if fd == failing.fd:
            raise OSError(errno.EIO, "fsync failed")
        return real_fsync(fd)
    before = set(os.listdir("/proc/self/fd"))
    failing.fd = None

    def first_fsync(fd):
        if failing.fd is None:
            failing.fd = fd
        return failing(fd)
    monkeypatch.setattr(os, "fsync", first_fsync)
    with pytest.raises(OSError, match="fsync failed"):
        atomic_write_many([(tmp_path / name, b"new\n") for name in names])
    assert sorted(os.listdir(tmp_path)) == names
    assert all((tmp_path / name).read_bytes() == name.encode() for name in names)
    assert set(os.listdir("/proc/self/fd")) == before


def test_a_close_that_reports_an_error_fails_the_batch_cleanly(tmp_path, monkeypatch):
    """A close may report a deferred write error (NFS, a full disk) after releasing the
    descriptor: the batch fails with that error, every file as it was and no temporary file
    left, and no descriptor is closed twice (its number may be another thread's file by then)."""
    from patchforge.fsutil import atomic_write_many

    for name in ("a.patch", "b.patch", "c.patch"):
        (tmp_path / name).write_bytes(b"old\n")
    real_close, calls = os.close, []

    def close_reporting_an_error(fd):
        calls.append(fd)
        real_close(fd)
        if len(calls) == 2:
            raise OSError(errno.EIO, "deferred write error")

    monkeypatch.setattr(os, "close", close_reporting_an_error)
    with pytest.raises(OSError) as raised:
        atomic_write_many([(tmp_path / name, b"new\n") for name in ("a.patch", "b.patch",
                                                                    "c.patch")])
    monkeypatch.undo()
    assert raised.value.errno == errno.EIO
    assert len(calls) == len(set(calls)) == 3
    assert sorted(os.listdir(tmp_path)) == ["a.patch", "b.patch", "c.patch"]
    assert {(tmp_path / n).read_bytes() for n in os.listdir(tmp_path)} == {b"old\n"}


@pytest.mark.parametrize("kill_point", ["staging-partial", "between-renames", "before-cleanup"])
def test_overlays_swap_interrupted_is_recovered(env, tmp_path, monkeypatch, kill_point):
    prepared, old_overlays, new_overlays = _overlay_states(env, tmp_path, monkeypatch)
    root = tmp_path / kill_point
    shutil.copytree(prepared, root, symlinks=True)
    overlays, staging, old = root / "overlays", root / ".overlays.new", root / ".overlays.old"
    if kill_point == "staging-partial":  # killed while writing the staging tree
        staging.mkdir()
        (staging / "SHA256SUMS").write_bytes(b"half")
    elif kill_point == "between-renames":  # overlays/ moved aside, staging not yet in place
        shutil.copytree(tmp_path / "clean-overlays" / "overlays", staging)
        os.replace(overlays, old)
    else:  # staging in place, the old tree not yet removed
        os.replace(overlays, old)
        shutil.copytree(tmp_path / "clean-overlays" / "overlays", overlays)
    # Before any regeneration, a reader of overlays/ sees the old or the new set, never a mix...
    from patchforge.overlay import recover_overlays
    from patchforge.project import Project

    recover_overlays(Project.discover(root))
    assert snapshot(overlays) in (old_overlays, new_overlays)
    assert not staging.exists() and not old.exists()
    # ... and the next `overlays` run writes the new set.
    r = run_cli(root, "overlays")
    assert r.rc == 0, r.text
    assert snapshot(overlays) == new_overlays
    verify_but_for_the_install_root(root)


def test_an_overlays_swap_cut_short_is_said_and_keeps_the_projects_rules(
        env, tmp_path, monkeypatch):

    """A kill (SIGKILL, a power cut) between the swap's two renames leaves overlays/ moved
    aside to .overlays.old until the next `overlays` or `rebase` puts it back. Meanwhile
    `status` exited 0 saying nothing, `verify` said to run `overlays` "first", and every rule
    of a project that makes overlays lapsed with the directory: `refresh` of an edit that
    deletes an upstream file wrote the deletion, which the next `overlays` refuses. Now status
    says where the set is and exits 1, verify says the same, and the rules hold."""
    prepared, old_overlays, _ = _overlay_states(env, tmp_path, monkeypatch)
    root = tmp_path / "cut"
    shutil.copytree(prepared, root, symlinks=True)
    os.replace(root / "overlays", root / ".overlays.old")  # where the kill left it
    status = run_cli(root, "status")
    assert status.rc == 1 and "overlays/ is missing" in status.err and \
        ".overlays.old" in status.err, status.text
    verify = run_cli(root, "verify")
    assert verify.rc == 2 and "a command replacing it" in verify.err, verify.text
    assert run_cli(root, "overlays", "--check").rc == 1
    ok(root, "edit", "fix")
    work = root / ".patchforge" / "work" / "up"
    ok(root, "add", "pkg/mod.py")
    gone = work / "pkg" / "mod.py"
    gone.unlink()
    refresh = run_cli(root, "refresh")
    assert refresh.rc == 2, refresh.text
    assert b"deleted file" not in (root / "series/up/fix.patch").read_bytes()
    ok(root, "edit", "--close", "--discard")
    # The next `overlays` puts the set back, then makes it again.
    ok(root, "overlays")
    assert not (root / ".overlays.old").exists()
    assert run_cli(root, "status").rc == 0


def test_overlays_at_every_write_point(env, tmp_path, monkeypatch):
    # overlay.py's swap has its own fault points (each staging file's write and fsync, both
    # renames): after a kill at any of them, recovery gives the old or the new set, and the next
    # run the new one.
    from patchforge.overlay import recover_overlays
    from patchforge.project import Project

    prepared, old_overlays, new_overlays = _overlay_states(env, tmp_path, monkeypatch)

    def check(root, phase):
        recover_overlays(Project.discover(root))
        assert snapshot(root / "overlays") in (old_overlays, new_overlays), phase
        r = run_cli(root, "overlays")
        assert r.rc == 0, r.text
        assert snapshot(root / "overlays") == new_overlays, phase

    assert run_with_faults(prepared, tmp_path, ("overlays",), check) >= 4


@pytest.mark.parametrize("mode", ["interrupt", "terminate"])
def test_overlays_interrupted_at_either_rename_leaves_a_whole_set_without_recovery(
        env, tmp_path, monkeypatch, mode):
    """A Ctrl-C (or SIGTERM) that arrived between the swap's two renames left no overlays/ at
    all: the committed SHA256SUMS, manifest and compose file gone from the checkout, `verify`
    refusing, until the next `overlays` recovered it, while the message said nothing was left
    half-written. The swap finishes first, then the command ends (exit 130 or 143): whoever reads
    next, without any recovery, finds a whole set and patchforge's record of it."""
    prepared, old_overlays, new_overlays = _overlay_states(env, tmp_path, monkeypatch)
    for nth in (1, 2):
        root = tmp_path / f"{mode}-{nth}"
        shutil.copytree(prepared, root, symlinks=True)
        proc = run_subprocess(root, "overlays", env={"PATCHFORGE_FAULT": f"rename:{nth}",
                                                     "PATCHFORGE_FAULT_MODE": mode})
        assert proc.returncode == (130 if mode == "interrupt" else 143), proc.stderr
        assert b"nothing was left half-written" in proc.stderr, proc.stderr
        assert snapshot(root / "overlays") == new_overlays, nth
        assert not (root / ".overlays.old").exists() and not (root / ".overlays.new").exists()
        check_but_for_the_install_root(root)


def test_an_injected_interrupt_reaches_a_command_started_with_sigint_ignored(env, tmp_path,
                                                                             monkeypatch):
    """A suite run as a background job of a non-interactive shell (`sh -c 'pytest ... &'`)
    starts every command with SIGINT ignored, which Python keeps: the Ctrl-C a test injects
    (PATCHFORGE_FAULT_MODE=interrupt) was lost, the command ran to its end, exit 0 or 1 where
    the test expects 130, so tests of an interrupt failed there and passed alone. It arrives."""
    prepared, _, new_overlays = _overlay_states(env, tmp_path, monkeypatch)
    root = tmp_path / "ignored"
    shutil.copytree(prepared, root, symlinks=True)
    command = [sys.executable, "-m", "patchforge", "--root", str(root), "overlays"]
    proc = subprocess.run(["sh", "-c", '"$@" & wait $!', "sh", *command], capture_output=True,
                          env={**os.environ, "PATCHFORGE_FAULT": "rename:1",
                               "PATCHFORGE_FAULT_MODE": "interrupt"})
    assert proc.returncode == 130, proc.stderr
    assert b"nothing was left half-written" in proc.stderr, proc.stderr
    assert snapshot(root / "overlays") == new_overlays


def test_a_rename_killed_after_the_series_named_new_says_what_the_old_file_is(
        env, tmp_path, monkeypatch):
    """`rename fix better` killed (as SIGKILL would) after the series named better.patch and
    before fix.patch went: status and lint called fix.patch a patch file to "list it in
    series/up/series", which would apply the fix twice. They name it as the old name the
    rename left, and the same rename run again finishes it."""
    prepared = _prepared(env, tmp_path, monkeypatch)
    met = 0
    for step in ("renamed", "rename", "dirsync"):
        for n in range(1, 10):
            root = tmp_path / f"{step}-{n}"
            shutil.copytree(prepared, root, symlinks=True)
            series = root / "series" / "up"
            proc = run_subprocess(root, "rename", "fix", "better",
                                  env={"PATCHFORGE_FAULT": f"{step}:{n}"})
            if proc.returncode == 0:
                break
            assert proc.returncode == 137, (step, n, proc.stderr.decode())
            if (series / "fix.patch").exists() and \
                    b"better.patch" in (series / "series").read_bytes():
                met += 1
                said = "the old name of better.patch, which a `patchforge rename fix better` " \
                    "cut short after the series named better.patch left"
                for command in ("status", "lint"):
                    run = run_cli(root, command)
                    assert run.rc == 1 and said in run.text and "list it" not in run.text \
                        and "add it" not in run.text, (step, n, command, run.text)
                assert run_cli(root, "rename", "fix", "better").rc == 0, (step, n)
                assert (series / "series").read_bytes().split() == \
                    [b"better.patch", b"other.patch"], (step, n)
                assert sorted(p.name for p in series.glob("*.patch")) == \
                    ["better.patch", "other.patch"], (step, n)
                assert run_cli(root, "status").rc == 0, (step, n)
            shutil.rmtree(root)
    assert met, "no kill left fix.patch beside a series naming better.patch"


def test_a_delete_cut_short_after_the_series_let_the_fix_go_says_what_the_file_is(
        env, tmp_path, monkeypatch):
    """`delete fix` killed, or stopped by Ctrl-C, after the series no longer listed fix.patch
    and before the file went (deleted/ keeping it already): status and lint called fix.patch
    a patch file to "list it in series/up/series, or move it to series/up/deleted/" (the fix
    the user deleted put back, or kept there twice). They name it as the file the delete left,
    and the same delete run again finishes it."""
    prepared = _prepared(env, tmp_path, monkeypatch)
    met = set()
    for mode, code in (("kill", 137), ("interrupt", 130)):
        for step in ("renamed", "rename", "dirsync"):
            for n in range(1, 10):
                root = tmp_path / f"{mode}-{step}-{n}"
                shutil.copytree(prepared, root, symlinks=True)
                series = root / "series" / "up"
                proc = run_subprocess(root, "delete", "fix", env={
                    "PATCHFORGE_FAULT": f"{step}:{n}", "PATCHFORGE_FAULT_MODE": mode})
                if proc.returncode == 0:
                    break
                assert proc.returncode == code, (mode, step, n, proc.stderr.decode())
                if (series / "fix.patch").exists() and \
                        b"fix.patch" not in (series / "series").read_bytes():
                    met.add(mode)
                    said = "the file a `patchforge delete fix` cut short left once the series " \
                        "no longer listed it (the fix is kept as series/up/deleted/fix.patch)" \
                        ": `patchforge delete up/fix` finishes the delete"
                    for command in ("status", "lint"):
                        run = run_cli(root, command)
                        assert run.rc == 1 and said in run.text and "list it" not in run.text \
                            and "move it to" not in run.text, (mode, step, n, command, run.text)
                    assert run_cli(root, "delete", "up/fix").rc == 0, (mode, step, n)
                    assert (series / "series").read_bytes().split() == [b"other.patch"]
                    assert sorted(p.name for p in series.glob("*.patch")) == ["other.patch"]
                    assert [p.name for p in (series / "deleted").iterdir()] == ["fix.patch"]
                    assert run_cli(root, "status").rc == 0, (mode, step, n)
                shutil.rmtree(root)
    assert met == {"kill", "interrupt"}, met


def test_overlays_killed_at_either_rename_leaves_a_whole_set_without_recovery(
        env, tmp_path, monkeypatch):
    """A kill -9 between the swap's two renames left no overlays/ at all until the next
    `overlays` or rebase put the old set back: meanwhile `status` said nothing, `verify` said
    to run `overlays` first, and `refresh` took the project for one that makes no overlays
    (it wrote a deletion of an upstream file that it refuses where overlays are made). The
    swap is one step (an exchange of the two directories) where the system can: whoever reads
    next, without any recovery, finds the old set or the new one."""
    import ctypes

    prepared, old_overlays, new_overlays = _overlay_states(env, tmp_path, monkeypatch)
    probe = tmp_path / "probe"
    (probe / "a").mkdir(parents=True)
    (probe / "b").mkdir()
    renameat2 = getattr(ctypes.CDLL(None, use_errno=True), "renameat2", None)
    if renameat2 is None or renameat2(-100, bytes(probe / "a"), -100, bytes(probe / "b"), 2):
        pytest.skip("this system or file system swaps no directories in one step")
    for nth in (1, 2, 3):
        root = tmp_path / f"kill-{nth}"
        shutil.copytree(prepared, root, symlinks=True)
        proc = run_subprocess(root, "overlays", env={"PATCHFORGE_FAULT": f"rename:{nth}"})
        assert proc.returncode in (0, 137), proc.stderr
        assert snapshot(root / "overlays") in (old_overlays, new_overlays), nth
        assert not (root / ".overlays.old").exists(), nth
        r = run_cli(root, "overlays")
        assert r.rc == 0, r.text
        assert snapshot(root / "overlays") == new_overlays, nth


@pytest.mark.parametrize("fault", ["interrupt:write:2", "terminate:write:2", "raise:fsync:2",
                                   "raise:rename:2"])
def test_overlays_cut_short_while_writing_the_new_set_leaves_nothing_of_it(
        env, tmp_path, monkeypatch, fault):
    """A Ctrl-C (a real SIGINT), a SIGTERM or a failed write (EIO: a full disk) while `overlays`
    wrote the new set: the part-written tree stayed beside overlays/ as `.overlays.new/` (files
    a project without init's ignore lines takes into `git add -A`) while the message said
    nothing was left half-written, and a failed second rename of the swap left no overlays/ at
    all until the next run. Now the old set is there, whole, and nothing of the new one; the
    next run writes the new set."""
    mode, step, nth = fault.split(":")
    prepared, old_overlays, new_overlays = _overlay_states(env, tmp_path, monkeypatch)
    root = tmp_path / "cut"
    shutil.copytree(prepared, root, symlinks=True)
    proc = run_subprocess(root, "overlays", env={"PATCHFORGE_FAULT": f"{step}:{nth}",
                                                 "PATCHFORGE_FAULT_MODE": mode})
    assert proc.returncode == {"interrupt": 130, "terminate": 143}.get(mode, 2), proc.stderr
    assert b"half-written" in proc.stderr or b"injected fault" in proc.stderr, proc.stderr
    assert sorted(p for p in os.listdir(root) if "overlays" in p) == ["overlays"]
    assert snapshot(root / "overlays") == old_overlays
    # The old set, whole: made from the fix before its change, which verify now says.
    verify_but_for_the_install_root(root, changed_since=("series/up/fix.patch",))
    r = run_cli(root, "overlays")
    assert r.rc == 0, r.text
    assert snapshot(root / "overlays") == new_overlays
    verify_but_for_the_install_root(root)


def test_overlays_killed_by_sigkill_leaves_old_or_new_set(env, tmp_path, monkeypatch):
    # A real kill -9 at a few moments during `overlays` (the staging writes have no fault points),
    # followed by recovery: never a mix of old and new files.
    from patchforge.overlay import recover_overlays
    from patchforge.project import Project

    prepared, old_overlays, new_overlays = _overlay_states(env, tmp_path, monkeypatch)
    for delay in (0.05, 0.15, 0.25, 0.35, 0.5, 0.7):
        root = tmp_path / f"sigkill-{delay}"
        shutil.copytree(prepared, root, symlinks=True)
        proc = subprocess.Popen([sys.executable, "-m", "patchforge", "--root", str(root),
                                 "overlays"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(delay)
        proc.kill()
        proc.wait()
        recover_overlays(Project.discover(root))
        assert snapshot(root / "overlays") in (old_overlays, new_overlays), delay


# ---------------------------------------------------------------------------------------------
# The repository lock


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_stale_lock_of_a_dead_process_is_taken_over(env, tmp_path, monkeypatch):
    root = _prepared(env, tmp_path, monkeypatch)
    lock = root / ".patchforge" / "lock"
    lock.parent.mkdir(exist_ok=True)
    lock.write_text(f"{_dead_pid()}\n")
    r = run_cli(root, "delete", "fix")
    assert r.rc == 0, r.text
    assert (root / "series/up/deleted/fix.patch").exists()
    # An empty lock file (a full disk) blocks nothing either: only a live holder does.
    lock.write_bytes(b"")
    assert run_cli(root, "rename", "other", "renamed").rc == 0


def _hold_lock(root: Path) -> subprocess.Popen:
    """Another process holding the repository lock until its stdin closes."""
    proc = subprocess.Popen(
        [sys.executable, "-c",
         "import sys\nfrom patchforge.fsutil import RepoLock\n"
         f"with RepoLock({str(root / '.patchforge')!r}):\n"
         "    print('held', flush=True)\n    sys.stdin.read()\n"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert proc.stdout.readline() == b"held\n"
    return proc


@pytest.mark.parametrize("args", [("delete", "fix"), ("rename", "fix", "better"),
                                  ("new", "third", "--no-edit")])
def test_second_process_refuses_while_the_lock_is_held(env, tmp_path, monkeypatch, args):
    root = _prepared(env, tmp_path, monkeypatch)
    before = project_files(root)
    holder = _hold_lock(root)
    try:
        proc = run_subprocess(root, *args)
        assert proc.returncode == 2, proc.stderr.decode()
        assert f"pid {holder.pid}" in proc.stderr.decode()
        assert project_files(root) == before
    finally:
        holder.stdin.close()
        holder.wait()
    proc = run_subprocess(root, *args)
    assert proc.returncode == 0, proc.stderr.decode()


def test_overlays_waits_for_the_lock_then_writes(env, tmp_path, monkeypatch):
    root = _prepared(env, tmp_path, monkeypatch)
    holder = _hold_lock(root)
    proc = subprocess.Popen([sys.executable, "-m", "patchforge", "--root", str(root), "overlays"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        time.sleep(0.5)
        assert proc.poll() is None  # still waiting: it did not write under someone else's lock
        assert not (root / "overlays").exists()
    finally:
        holder.stdin.close()
        holder.wait()
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err.decode()
    assert (root / "overlays" / "SHA256SUMS").exists()


def test_concurrent_commands_never_corrupt_the_series(env, tmp_path, monkeypatch):
    # Several processes at once, each adding its own patch: each one either succeeds or refuses
    # (exit 2, locked); every success is listed, every listed patch exists, nothing is duplicated.
    root = _prepared(env, tmp_path, monkeypatch)
    names = [f"c{i}" for i in range(6)]
    procs = [subprocess.Popen([sys.executable, "-m", "patchforge", "--root", str(root), "new",
                               name, "--no-edit"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for name in names]
    results = {name: (p.wait(timeout=120), p.stderr.read().decode()) for name, p in
               zip(names, procs)}
    series = (root / "series/up/series").read_text().split()
    assert len(series) == len(set(series))
    for name, (rc, err) in results.items():
        assert rc in (0, 2), err
        if rc == 0:
            assert f"{name}.patch" in series
        else:
            assert "another patchforge process" in err, err
    for entry in series:
        assert (root / "series/up" / entry).exists()


def test_an_import_cut_short_at_any_write_leaves_none_of_it(env, tmp_path, monkeypatch):
    """`import quilt` listed its patches one at a time: a Ctrl-C part-way left some listed
    (and one more file unlisted) while the message said "nothing was left half-written". The
    import now writes its files, then lists them all in one write of the series file, and a
    Ctrl-C (or a failed write) before that removes the files it made: at every write point
    the project is as it was, the message is true, and the same import run again takes it
    all. A kill (no cleanup) leaves at most unlisted files, which the run again lists."""
    prepared = env.fresh(tmp_path / "base", monkeypatch)
    quilt = tmp_path / "quilt"
    quilt.mkdir()
    (quilt / "fix.patch").write_bytes(HEADER + MODIFY_A)
    (quilt / "other.patch").write_bytes(HEADER + (
        b"diff --git a/pkg/mod.py b/pkg/mod.py\n--- a/pkg/mod.py\n+++ b/pkg/mod.py\n"
        b"@@ -1,3 +1,3 @@\n x = 1\n-y = 2\n+y = 20\n z = 3\n"))
    (quilt / "series").write_text("fix.patch\nother.patch\n")
    args = ("import", "quilt", str(quilt), "--upstream", "up")
    old = project_files(prepared)
    new = _after(prepared, tmp_path, *args)
    hits = 0
    for step in (*STEPS, "dirsync"):
        for mode in ("interrupt", "raise", "kill"):
            for n in range(1, 20):
                root = tmp_path / f"{step}-{mode}-{n}"
                shutil.copytree(prepared, root, symlinks=True)
                env_vars = {"PATCHFORGE_FAULT": f"{step}:{n}"}
                if mode != "kill":
                    env_vars["PATCHFORGE_FAULT_MODE"] = mode
                proc = run_subprocess(root, *args, env=env_vars)
                if proc.returncode == 0:
                    break
                hits += 1
                state = project_files(root)
                listed = state.get("series/up/series", (None, b""))[1]
                # Never a listed patch without its file (a failure after the series' rename
                # removed them once).
                for name in listed.split():
                    assert f"series/up/{name.decode()}" in state, (step, mode, n, name)
                if mode == "kill":
                    assert state == old or not listed.strip() or state == new, (step, n)
                else:
                    # Before the series is written: nothing of the import is left, and the
                    # message says so truly; after it (the directory's sync), it is whole.
                    assert state in (old, new), (step, mode, n, sorted(set(state) ^ set(old)))
                    if state == old:
                        assert "nothing was left half-written" in proc.stderr.decode()
                again = run_subprocess(root, *args)
                assert again.returncode == 0 or state == new, again.stderr.decode()
                assert project_files(root) == new, (step, mode, n)
    assert hits >= 12


@pytest.mark.parametrize("mode, exit_code, again", [
    ("interrupt", 130, "run the command again"),
    ("terminate", 143, "run the command again"),
    ("raise", 2, "fix the cause and run the command again")])
def test_a_command_cut_short_before_any_project_says_only_what_applies(env, tmp_path, mode,
                                                                       exit_code, again):
    """Ctrl-C in a command with no project open yet (`init`'s first write) said "fix the
    cause and run the command again", the words for a refused write: a Ctrl-C has no cause to
    fix. An interrupt or SIGTERM says to run the command again; a failed write keeps naming a
    cause to fix first."""
    directory = tmp_path / "new"
    directory.mkdir()
    proc = run_subprocess(None, "init", cwd=directory,
                          env={"PATCHFORGE_FAULT": "write:1", "PATCHFORGE_FAULT_MODE": mode})
    err = proc.stderr.decode()
    assert proc.returncode == exit_code, err
    assert f"hint: nothing was left half-written (every write is atomic); {again}\n" in err, err
    assert ("fix the cause" in err) == (mode == "raise"), err
    assert not (directory / "patchforge.toml").exists()
