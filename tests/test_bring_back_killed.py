"""`bring-back` killed (kill -9, at each of its renames and directory syncs) and run again as
typed: whatever point the kill cut it at, the rerun ends with the files a run never killed
writes, the series' history and ledger included. Both ways in: a fix a rebase set aside
(`bring-back NAME`) and a landing upstream took back (`bring-back UPSTREAM/upstreamed/NAME`,
which moves the landing into skipped/ first). Real git, the CLI in its own process, the
fault points of patchforge/fsutil.py."""
from __future__ import annotations

import shutil

import pytest

from helpers.cli import run_subprocess
from helpers.git import git
from helpers.project import OneUpstreamStack

BASE = b"".join(b"line %d of the module under test\n" % i for i in range(1, 31))
FIXED = BASE.replace(b"line 5 of the module under test\n", b"five = compute_it_properly()\n")
OTHER = BASE.replace(b"line 5 of the module under test\n", b"five = compute_it_otherwise()\n")


def _series_files(root) -> dict:
    return {p.relative_to(root).as_posix(): p.read_bytes()
            for p in sorted((root / "series").rglob("*"))
            if p.is_file() and not p.name.startswith(".")}


def _set_aside(tmp_path):
    """A fix `fa` a rebase set aside (upstream changed its line at v2), upstream's change
    taken back at v3 and the pin moved there: `bring-back fa` moves it back cleanly."""
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": BASE})
    stack.add_fix("fa", "pkg/a.py", BASE, FIXED)
    stack.commit({"pkg/a.py": OTHER}, "Compute it otherwise", tag="v2")
    stack.cli("rebase", "--to", "v2", expect=3)
    stack.cli("rebase", "--skip", expect=1)
    stack.commit({"pkg/a.py": BASE}, "Back to the plain computation", tag="v3")
    stack.cli("rebase", "--to", "v3", expect=1)
    assert (stack.root / "series/up/skipped/fa.patch").is_file()
    return stack, ("bring-back", "fa")


def _landing_reverted(tmp_path):
    """A fix `fa` landed at v2 (kept under upstreamed/), `git revert` of it at v3 and the pin
    moved there: `bring-back up/upstreamed/fa.patch` moves it back."""
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": BASE})
    stack.add_fix("fa", "pkg/a.py", BASE, FIXED)
    landing = stack.commit({"pkg/a.py": FIXED}, "Compute it properly (#11)", tag="v2")
    stack.cli("rebase", "--to", "v2")
    assert (stack.root / "series/up/upstreamed/fa.patch").is_file()
    git(stack.up, "revert", "--no-edit", landing)
    git(stack.up, "tag", "v3")
    stack.cli("rebase", "--to", "v3", expect=1)
    return stack, ("bring-back", "up/upstreamed/fa.patch")


def _landing_moved_and_taken_back_in_part(tmp_path):
    """A fix `fa` of two guards landed at v2 (kept under upstreamed/); at v3 upstream moves the
    first guard a line lower and takes the second out, the pin moved there: `bring-back
    up/upstreamed/fa.patch` puts back the second guard alone and keeps the first under
    upstreamed/ as landed, two files written before the fix leaves skipped/."""
    guard = b"if value is None:\n    raise ValueError('a value is needed here')\n"
    other = b"if limit < 0:\n    raise ValueError('a limit is never negative')\n"
    line = b"line %d of the module under test\n"
    both = BASE.replace(line % 10, line % 10 + guard).replace(line % 28, line % 28 + other)
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": BASE})
    stack.add_fix("fa", "pkg/a.py", BASE, both)
    stack.commit({"pkg/a.py": both}, "Guard it (#11)", tag="v2")
    stack.cli("rebase", "--to", "v2")
    assert (stack.root / "series/up/upstreamed/fa.patch").is_file()
    stack.commit({"pkg/a.py": BASE.replace(line % 11, line % 11 + guard)},
                 "Move one check, drop the other", tag="v3")
    stack.cli("rebase", "--to", "v3", expect=1)
    return stack, ("bring-back", "up/upstreamed/fa.patch")


def _landing_moved_and_taken_back_in_part_by_its_name(tmp_path):
    """The same, as status advises it: `bring-back up/fa.patch`."""
    stack, _ = _landing_moved_and_taken_back_in_part(tmp_path)
    return stack, ("bring-back", "up/fa.patch")


def _made_and_run_uncut(tmp_path, made):
    """The stack `made` builds, its bring-back's arguments, and the series files a copy of it
    holds once that bring-back ran uncut: what every killed run must end as."""
    stack, args = made(tmp_path / "stack")
    clean = tmp_path / "clean"
    shutil.copytree(stack.root, clean, symlinks=True)
    run_subprocess(clean, *args, expect=0)
    return stack, args, _series_files(clean)


@pytest.mark.parametrize("made", [_set_aside, _landing_reverted,
                                  _landing_moved_and_taken_back_in_part,
                                  _landing_moved_and_taken_back_in_part_by_its_name])
def test_a_bring_back_killed_anywhere_is_finished_by_the_same_command(tmp_path, monkeypatch,
                                                                    made):
    """Killed after the fix left skipped/ and before the history recorded its return, the
    rerun was refused ("no skipped fix", "names no one fix kept under upstreamed/"): the fix
    was in the series, but its history still said it was set aside (or landed), status and
    the ledger with it, and no command took it on. Now the rerun records the return the
    killed run did not, and every point of the kill ends as the run never killed."""
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1767225600")
    stack, args, done = _made_and_run_uncut(tmp_path, made)
    assert "series/up/fa.patch" in done and b"brought-back" in done["series/history.jsonl"]
    if made in (_landing_moved_and_taken_back_in_part,
                _landing_moved_and_taken_back_in_part_by_its_name):
        assert b"a value is needed here" in done["series/up/upstreamed/fa.patch"]
        assert b"a value is needed here" not in done["series/up/fa.patch"]
    cut_short = 0
    for step in ("rename", "dirsync"):
        for n in range(1, 30):
            root = tmp_path / f"{step}-{n}"
            shutil.copytree(stack.root, root, symlinks=True)
            if run_subprocess(root, *args, env={"PATCHFORGE_FAULT": f"{step}:{n}"}
                              ).returncode == 0:
                break
            if _series_files(root) == done:
                continue  # killed after its last write
            cut_short += 1
            again = run_subprocess(root, *args)
            assert again.returncode == 0, (step, n, again.stderr.decode())
            assert _series_files(root) == done, (step, n)
            assert run_subprocess(root, "status").returncode == 0, (step, n)
    assert cut_short >= 3


@pytest.mark.parametrize("made", [_set_aside, _landing_reverted,
                                  _landing_moved_and_taken_back_in_part_by_its_name])
def test_the_fix_a_killed_bring_back_wrote_unlisted_is_named_with_the_bring_back(
        tmp_path, monkeypatch, made):
    """Killed after it wrote series/up/fa.patch and before the series listed it: the commands
    that read the series said "list it again in series/up/series, or move it to deleted/"
    (the fix is still in skipped/: deleted/ kept it twice). Now they name the bring-back that
    finishes it, and that command, run as said, ends as the run never killed."""
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1767225600")
    stack, args, done = _made_and_run_uncut(tmp_path, made)
    said = "`patchforge bring-back fa` finishes it"
    if made is _set_aside:
        # A copy of skipped/fa.patch made by hand, on its older base, is no bring-back's
        # write (run again, bring-back writes the fix beside it): not named as one.
        by_hand = tmp_path / "by-hand"
        shutil.copytree(stack.root, by_hand, symlinks=True)
        shutil.copyfile(by_hand / "series/up/skipped/fa.patch", by_hand / "series/up/fa.patch")
        err = run_subprocess(by_hand, "overlays", "--check", expect=2).stderr.decode()
        assert "list it again in series/up/series" in err and said not in err, err
    cut_short = 0
    for n in range(1, 30):
        root = tmp_path / f"renamed-{n}"
        shutil.copytree(stack.root, root, symlinks=True)
        if run_subprocess(root, *args, env={"PATCHFORGE_FAULT": f"renamed:{n}"}
                          ).returncode == 0:
            break
        series = root / "series" / "up"
        if not (series / "fa.patch").is_file() or b"fa.patch" in (series / "series").read_bytes():
            continue
        cut_short += 1
        for command in (["overlays", "--check"], ["verify"]):
            run = run_subprocess(root, *command, expect=2)
            err = run.stderr.decode()
            assert "series/up/fa.patch: not listed in series/up/series" in err and \
                said in err and "list it" not in err and "deleted/" not in err, (n, err)
        status = run_subprocess(root, "status", expect=1).stdout.decode()
        assert "series/up/fa.patch: the fix a `patchforge bring-back fa` cut short" in status \
            and said in status and "list it in" not in status, (n, status)
        run_subprocess(root, "bring-back", "fa", expect=0)
        assert _series_files(root) == done, n
        assert run_subprocess(root, "status").returncode == 0, n
    assert cut_short >= 1
