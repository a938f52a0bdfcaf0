"""Crash safety of `patchforge rebase`: the process is killed (PATCHFORGE_FAULT, exit 137) at every
write point of a run, and what it leaves is checked.

For each kind of write step (write, fsync, rename) and each N from 1 until the run completes
without meeting the fault: a fresh copy of the project is rebased in a subprocess killed at the
N-th step. Then either the project is byte for byte as before, or a journal is there from which
`rebase --continue` reaches exactly the bytes of an uninterrupted run and `rebase --abort` gets
the old bytes back. At the moment of the kill, every patch file's bytes exist somewhere under
series/ or the journal. The killed process's lock (a dead PID) never blocks the next command.
"""
from __future__ import annotations

import base64
import json
import os
import shutil
from pathlib import Path

import pytest

from helpers.cli import run_cli, run_subprocess
from helpers.project import Stack
from helpers.snapshot import snapshot
from helpers.upstream import BASE, Upstream, with_lines

KILLED = 137
INTERRUPTED = 130


def all_bytes(root: Path) -> list[bytes]:
    """The contents of every file under series/ and .patchforge/ (the journal included: its
    hard links to the originals, and the staged patches and the originals it keeps
    base64-encoded, one file each)."""
    out = []
    for top in ("series", ".patchforge"):
        for path in (root / top).rglob("*"):
            if path.is_file():
                out.append(path.read_bytes())
                if path.name == "originals.json" or path.name.startswith("staged"):
                    out += [base64.b64decode(v) for v in json.loads(out[-1]).values()
                            if isinstance(v, str)]
    return out


def build(tmp_path: Path, monkeypatch) -> tuple[Stack, list[str]]:
    """A stack with a clean, a merged and a landed patch, overlays generated; returns
    it and the `rebase` arguments that move it without a stop."""
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    upstream = Upstream(tmp_path / "up", {"pkg/mod.py": BASE, "pkg/other.py": b"x = 1\n"})
    stack = Stack(tmp_path / "template")
    stack.add_upstream("up", upstream)
    stack.add_patch("up", "clean", {"pkg/other.py": b"x = 1\ny = 2\n"})
    stack.add_patch("up", "merged", {"pkg/mod.py": with_lines({10: b"def f10():\n    return -10\n\n"})})
    landed = with_lines({3: b"def f3():\n    return 'three, fixed upstream too'\n\n"})
    stack.add_patch("up", "landed", {"pkg/mod.py": landed})
    stack.cli("overlays")
    theirs = with_lines({3: b"def f3():\n    return 'three, fixed upstream too'\n\n",
                         9: b"def f9():\n    return 9  # upstream\n\n"})
    new_commit = upstream.commit({"pkg/mod.py": b"# header\n# two lines\n" + theirs})
    return stack, ["rebase", "--to", f"up={new_commit}"]


def reference(stack: Stack, args: list[str], tmp_path: Path) -> dict[str, tuple]:
    """The bytes of an uninterrupted run."""
    root = tmp_path / "reference"
    shutil.copytree(stack.root, root, symlinks=True)
    result = run_cli(root, *args)
    assert result.rc == 0, result.text
    return snapshot(root, skip_state=True, dirs=False)


def check_killed_state(root: Path, before: dict[str, tuple], after: dict[str, tuple],
                       patches: list[bytes], label: str) -> str:
    """Check what a kill left; returns "old" or "journal"."""
    have = all_bytes(root)
    for data in patches:
        assert data in have, f"{label}: a patch file's bytes are nowhere"
    if not (root / ".patchforge" / "rebase" / "journal.json").exists():
        assert snapshot(root, skip_state=True, dirs=False) == before, f"{label}: no journal, yet the project changed"
        return "old"
    for verb, expected in (("--abort", before), ("--continue", after)):
        copy = root.parent / f"{root.name}{verb}"
        shutil.copytree(root, copy, symlinks=True)
        result = run_cli(copy, "rebase", verb)
        assert result.rc == 0, f"{label}: rebase {verb} -> {result.rc}\n{result.text}"
        assert snapshot(copy, skip_state=True, dirs=False) == expected, f"{label}: rebase {verb} did not give the bytes " \
            f"expected: {sorted(set(snapshot(copy, skip_state=True, dirs=False).items()) ^ set(expected.items()))[:3]}"
        assert not (copy / ".patchforge" / "rebase").exists()
        shutil.rmtree(copy)
    return "journal"


def kill_at_each(stack: Stack, args: list[str], step: str, before: dict[str, tuple],
                 after: dict[str, tuple], tmp_path: Path, *, mode: str | None = None
                 ) -> list[str]:
    """Run `args` on a fresh copy of the stack killed at the N-th `step`, for N from 1 until a
    run completes without meeting the fault; check each kill's state (check_killed_state) and
    return what each left ("old" or "journal"). With `mode` "interrupt", a Ctrl-C (SIGINT)
    arrives there instead of the kill, and the run's own cleanup runs (exit 130)."""
    patches = [entry[1] for rel, entry in before.items() if rel.endswith(".patch")]
    env = {"PATCHFORGE_FAULT_MODE": mode} if mode else {}
    stopped = INTERRUPTED if mode == "interrupt" else KILLED
    seen = []
    for n in range(1, 200):
        root = tmp_path / f"kill-{n}"
        shutil.copytree(stack.root, root, symlinks=True)
        proc = run_subprocess(root, *args, env={**env, "PATCHFORGE_FAULT": f"{step}:{n}"})
        if proc.returncode != stopped:
            assert proc.returncode == 0, proc.stderr.decode()
            assert snapshot(root, skip_state=True, dirs=False) == after  # the fault was never reached: a whole run
            return seen
        seen.append(check_killed_state(root, before, after, patches, f"{step}:{n}"))
        shutil.rmtree(root)
    pytest.fail("the run never completed")


@pytest.mark.parametrize("step", ["write", "fsync", "rename", "link"])
def test_kill_at_every_write_point_of_a_rebase(step, tmp_path, monkeypatch):
    stack, args = build(tmp_path, monkeypatch)
    before = stack.snapshot()
    after = reference(stack, args, tmp_path)
    assert after != before
    seen = kill_at_each(stack, args, step, before, after, tmp_path)
    if step == "link":  # the write-out keeps each file it changes (and the ledger's) by a link
        changed = [rel for rel in set(before) | set(after) if before.get(rel) != after.get(rel)
                   and rel in before and not rel.startswith("overlays/")]
        # One link per file kept (the ledger's too), each kill finished or undone from it.
        assert set(seen) == {"journal"} and len(seen) >= len(changed), (seen, changed)
        return
    # The kills fell before the journal, inside the moving phase and inside the write-out.
    assert seen[0] == "old" and "journal" in seen
    assert len(seen) >= 10


def test_ctrl_c_just_after_any_rename_of_a_rebase_leaves_the_old_state_or_a_journal_that_finishes(
        tmp_path, monkeypatch):
    """A Ctrl-C that arrives while a file is renamed takes effect once the rename is made
    (Python raises KeyboardInterrupt at its next instruction): whatever rename it is, the
    run's cleanup must leave the project as it was, or a journal that `rebase --continue`
    finishes (and `--abort` undoes); the one that begins the write-out, included."""
    stack, args = build(tmp_path, monkeypatch)
    before = stack.snapshot()
    after = reference(stack, args, tmp_path)
    seen = kill_at_each(stack, args, "renamed", before, after, tmp_path, mode="interrupt")
    assert seen.count("journal") >= 10, seen  # the journal's saves, the write-out's renames


def test_kill_at_every_rename_of_a_rebase_to_the_pinned_commit(tmp_path, monkeypatch):
    """A rebase to the commit already pinned leaves upstream.lock's bytes as they are. Its
    write-out rewrote the lock all the same, and a kill after that rename left a journal
    that --continue refused for good ("the new upstream.lock ... is gone, and upstream.lock
    is as it was"): a step renamed into place looked like one whose new file went missing."""
    stack, _ = build(tmp_path, monkeypatch)
    pinned = json.loads((stack.root / "upstream.lock").read_text())["upstreams"]["up"]["commit"]
    args = ["rebase", "--to", f"up={pinned}"]
    before = stack.snapshot()
    after = reference(stack, args, tmp_path)
    assert "journal" in kill_at_each(stack, args, "rename", before, after, tmp_path)


def test_write_out_syncs_each_directory_only_where_the_order_needs_it(tmp_path, monkeypatch):
    """What the journal names at the write-out (the new files' temporary files beside their
    targets, the links to the originals, originals.json) is made durable as one batch, each
    of their directories synced once before the journal that names them and the project's
    once more after the renames, with the last files' batch (the history, the ledger and
    last-rebase.json: a kill between any of those renames is what --continue finishes, as the
    kills above check). The journal's first save, before any write, waits for no directory
    sync: lost to a crash, it leaves the project as before the rebase. Each directory sync
    waits for the disk: a clean rebase of 30 patches made about twenty of them."""
    from patchforge import fsutil

    stack, args = build(tmp_path, monkeypatch)
    after = reference(stack, args, tmp_path)
    synced: list[str] = []
    real = fsutil.fsync_dir

    def fsync_dir(directory):
        synced.append(Path(directory).relative_to(stack.root).as_posix())
        real(directory)
    monkeypatch.setattr(fsutil, "fsync_dir", fsync_dir)
    assert run_cli(stack.root, *args).rc == 0
    assert snapshot(stack.root, skip_state=True, dirs=False) == after
    # The copy of overlays/ kept for --abort is synced, its directories too, before it is
    # renamed into the journal (tests/test_rebase_durability.py checks it against a power loss).
    synced = [d for d in synced if not d.startswith(".patchforge/rebase/.orig-overlays.partial")]
    # At the write-out (what it names, then the journal), at its removal; not at the start.
    assert synced.count(".patchforge/rebase") == 3
    write_out = synced.index(".patchforge/rebase")
    project_dirs = ["series/up", "series/up/upstreamed", "."]  # the patches, lock, fix set aside
    assert synced[:write_out + 2] == [*project_dirs, ".patchforge/rebase",
                                      ".patchforge/rebase"]
    # after the renames and the removal (the landed patch leaves series/up), once each, with
    # the last files' directories (series/history.jsonl and series/PATCHES.md, then
    # last-rebase.json's), after the overlays; then the journal's removal
    assert synced[-6:] == [*project_dirs, "series", ".patchforge", ".patchforge/rebase"]
    assert synced.count("series/up") == 2 and synced.count("series") == 1


def test_the_journal_that_begins_the_write_out_is_synced_with_the_files_it_names(
        tmp_path, monkeypatch):
    """The journal that begins the write-out names its temporary files before they are made,
    so it is written and synced in their batch and only renamed into place after their
    directories are synced: the write-out waits for the disk once for all of them, not once
    more for the journal."""
    from patchforge import fsutil

    stack, args = build(tmp_path, monkeypatch)
    after = reference(stack, args, tmp_path)
    batches: list[list[str]] = []
    real = fsutil._write_batch

    def write_batch(items, **options):
        batches.append([Path(path).relative_to(stack.root).as_posix() for path, _, _ in items])
        return real(items, **options)
    monkeypatch.setattr(fsutil, "_write_batch", write_batch)
    assert run_cli(stack.root, *args).rc == 0
    assert snapshot(stack.root, skip_state=True, dirs=False) == after
    journal = ".patchforge/rebase/journal.json"
    write_out = next(batch for batch in batches if "series/up/clean.patch" in batch)
    assert journal in write_out and ".patchforge/rebase/originals.json" in write_out
    assert sum(journal in batch for batch in batches) == 2  # the start's and the write-out's


def test_a_rebase_cut_short_then_asked_again_names_only_the_ways_that_go_on(tmp_path,
                                                                          monkeypatch):
    """Ctrl-C in a rebase's walk (a journal, no stop), then the same `rebase --to` again: the
    refusal's hint said "run `patchforge rebase --continue`, `--skip` or `--abort`", and
    `--skip` then said "the rebase is not stopped on a patch; nothing to skip". It names
    `--continue` and `--abort` alone, and `--continue` finishes the move; a rebase stopped on
    a conflict and asked again still names `--skip`."""
    stack, args = build(tmp_path, monkeypatch)
    after = reference(stack, args, tmp_path)
    for n in range(1, 50):
        root = tmp_path / f"cut-{n}"
        shutil.copytree(stack.root, root, symlinks=True)
        proc = run_subprocess(root, *args, env={"PATCHFORGE_FAULT_MODE": "interrupt",
                                                "PATCHFORGE_FAULT": f"renamed:{n}"})
        assert proc.returncode == INTERRUPTED, proc.stderr.decode()
        journal = root / ".patchforge/rebase/journal.json"
        if journal.exists() and json.loads(journal.read_text())["phase"] == "running":
            break
    else:
        pytest.fail("no Ctrl-C left a rebase cut short in its walk")
    again = run_cli(root, *args)
    assert again.rc == 2 and "a rebase is in progress" in again.err, again.text
    assert "`patchforge rebase --continue` or `--abort`" in again.err, again.text
    assert "--skip" not in again.err, again.text
    assert run_cli(root, "rebase", "--continue").rc == 0
    assert snapshot(root, skip_state=True, dirs=False) == after

    # The mirror: stopped on a conflict, asked again: `--skip` is a way on there.
    upstream = Upstream(tmp_path / "up2", {"pkg/mod.py": BASE})
    stopped = Stack(tmp_path / "stopped")
    stopped.add_upstream("up", upstream)
    stopped.add_patch("up", "conflicting",
                      {"pkg/mod.py": with_lines({10: b"def f10():\n    return -10\n\n"})})
    moved = upstream.commit({"pkg/mod.py": with_lines({10: b"def f10():\n    return 100\n\n"})})
    stopped.cli("rebase", "--to", f"up={moved}", expect=3)
    again = run_cli(stopped.root, "rebase", "--to", f"up={moved}")
    assert again.rc == 2 and "a rebase is in progress" in again.err, again.text
    assert "`patchforge rebase --continue`, `--skip` or `--abort`" in again.err, again.text


def test_kill_during_continue_after_a_conflict(tmp_path, monkeypatch):
    """Killed at every write point of `--continue` (resolution staged, write-out): the journal
    still finishes or aborts to the right bytes."""
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    upstream = Upstream(tmp_path / "up", {"pkg/mod.py": BASE})
    stack = Stack(tmp_path / "template")
    stack.add_upstream("up", upstream)
    stack.add_patch("up", "conflicting", {"pkg/mod.py": with_lines({10: b"def f10():\n    return -10\n\n"})})
    stack.add_patch("up", "later", {"pkg/mod.py": with_lines({20: b"def f20():\n    pass\n\n"})})
    stack.cli("overlays")
    before = stack.snapshot()
    new_commit = upstream.commit({"pkg/mod.py": with_lines({10: b"def f10():\n    return 100\n\n"})})
    stack.cli("rebase", "--to", f"up={new_commit}", expect=3)
    (stack.root / ".patchforge" / "work" / "up" / "pkg" / "mod.py").write_bytes(
        with_lines({10: b"def f10():\n    return -100\n\n"}))
    patches = [entry[1] for rel, entry in before.items() if rel.endswith(".patch")]
    after = reference(stack, ["rebase", "--continue"], tmp_path)
    for n in range(1, 200):
        root = tmp_path / f"kill-{n}"
        shutil.copytree(stack.root, root, symlinks=True)
        proc = run_subprocess(root, "rebase", "--continue", env={"PATCHFORGE_FAULT": f"rename:{n}"})
        if proc.returncode != KILLED:
            assert proc.returncode == 0, proc.stderr.decode()
            assert snapshot(root, skip_state=True, dirs=False) == after
            break
        # Stopped before: the journal is always there, and --abort always gives the old bytes.
        assert check_killed_state(root, before, after, patches, f"rename:{n}") == "journal"
        shutil.rmtree(root)
    else:
        pytest.fail("the run never completed")


def test_a_write_that_fails_says_what_the_rebase_left(tmp_path, monkeypatch):
    """An I/O error (EIO: a full disk) at each rename of a run: a run that failed in its
    write-out, some files already replaced, said "nothing was half-written; run the command
    again", and running it again was refused (a rebase in progress). The hint now names the
    journal and `rebase --continue`, which finishes the run to the bytes of an uncut one; a
    failure before the journal leaves the project as it was and says so."""
    stack, args = build(tmp_path, monkeypatch)
    before = stack.snapshot()
    after = reference(stack, args, tmp_path)
    seen = set()
    for n in range(1, 200):
        root = tmp_path / f"eio-{n}"
        shutil.copytree(stack.root, root, symlinks=True)
        proc = run_subprocess(root, *args, env={"PATCHFORGE_FAULT": f"rename:{n}",
                                                "PATCHFORGE_FAULT_MODE": "raise"})
        err = proc.stderr.decode()
        if proc.returncode == 0:
            break
        assert proc.returncode == 2 and "injected fault" in err, err
        if (root / ".patchforge" / "rebase" / "journal.json").exists():
            seen.add("journal")
            assert "rebase --continue" in err and "run the command again" not in err, err
            result = run_cli(root, "rebase", "--continue")
            assert result.rc == 0, result.text
            assert snapshot(root, skip_state=True, dirs=False) == after, n
        else:
            seen.add("old")
            assert "nothing was left half-written" in err, err
            assert snapshot(root, skip_state=True, dirs=False) == before, n
        shutil.rmtree(root)
    else:
        pytest.fail("the run never completed")
    assert seen == {"old", "journal"}


def test_export_never_hands_out_a_half_written_series(tmp_path, monkeypatch):
    """A rebase killed in its write-out left some patch files new and some old; `export` wrote
    that mixture (patches against two bases) with exit 0. It is refused (exit 2, naming
    `rebase --continue`, nothing written) until the write-out is finished or undone."""
    stack, args = build(tmp_path, monkeypatch)
    before = stack.snapshot()
    after = reference(stack, args, tmp_path)
    for n in range(1, 200):
        root = tmp_path / f"kill-{n}"
        shutil.copytree(stack.root, root, symlinks=True)
        proc = run_subprocess(root, *args, env={"PATCHFORGE_FAULT": f"rename:{n}"})
        assert proc.returncode == KILLED, "the write-out was never cut half-way"
        # The write-out's new files wait in temporary files beside the patches until the
        # journal names them: not a patch file changed yet.
        now = {rel: entry for rel, entry in snapshot(root, skip_state=True, dirs=False).items()
               if not rel.endswith(".tmp")}
        if now != before and now != after:
            break
        shutil.rmtree(root)
    quilt, mbox = tmp_path / "quilt", tmp_path / "out.mbox"
    for how in (["--quilt", str(quilt)], ["--mbox", str(mbox)]):
        refused = run_cli(root, "export", *how)
        assert refused.rc == 2, refused.text
        assert "cut short while writing out its result" in refused.err
        assert "rebase --continue" in refused.err
    assert not quilt.exists() and not mbox.exists()
    assert run_cli(root, "rebase", "--continue").rc == 0
    exported = run_cli(root, "export", "--quilt", str(quilt))
    assert exported.rc == 0, exported.text
    for rel, entry in after.items():
        if rel.startswith("series/up/") and rel.count("/") == 2 and rel.endswith(".patch"):
            assert (quilt / rel.rsplit("/", 1)[1]).read_bytes() == entry[1]


def test_export_beside_a_rebase_writing_out_waits_for_it(tmp_path, monkeypatch):
    """`export` beside a rebase in the middle of its write-out (held there, SIGSTOP, with some
    patch files new and some old) read the series as it was then and wrote that mixture. It
    takes the project lock (waiting, as overlays does), so it exports the series the rebase
    wrote."""
    import os
    import signal
    import subprocess
    import sys
    import time

    stack, args = build(tmp_path, monkeypatch)
    before = stack.snapshot()
    after = reference(stack, args, tmp_path)
    for n in range(1, 200):  # the first rename with the series half written
        root = tmp_path / f"kill-{n}"
        shutil.copytree(stack.root, root, symlinks=True)
        run_subprocess(root, *args, env={"PATCHFORGE_FAULT": f"rename:{n}"}, expect=KILLED)
        now = snapshot(root, skip_state=True, dirs=False)
        shutil.rmtree(root)
        if now != before and now != after:
            break
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    rebase = subprocess.Popen([sys.executable, "-m", "patchforge", "--root", str(stack.root),
                               *args], env={**env, "PATCHFORGE_FAULT": f"rename:{n + 1}",
                                            "PATCHFORGE_FAULT_MODE": "stop"},
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    stat = Path(f"/proc/{rebase.pid}/stat")
    while stat.read_text().rsplit(")", 1)[1].split()[0] != "T":
        assert rebase.poll() is None, rebase.communicate()
        time.sleep(0.05)
    quilt = tmp_path / "quilt"
    export = subprocess.Popen([sys.executable, "-m", "patchforge", "--root", str(stack.root),
                               "export", "--quilt", str(quilt)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    for _ in range(100):  # it ends at once when it does not wait for the lock
        if export.poll() is not None:
            break
        time.sleep(0.05)
    os.kill(rebase.pid, signal.SIGCONT)
    assert rebase.wait(timeout=120) == 0, rebase.communicate()
    _, err = export.communicate(timeout=120)
    assert export.returncode == 0, err.decode()
    for rel, entry in after.items():
        if rel.startswith("series/up/") and rel.count("/") == 2 and rel.endswith(".patch"):
            assert (quilt / rel.rsplit("/", 1)[1]).read_bytes() == entry[1], rel


def test_the_write_out_links_the_originals_and_writes_each_new_file_once(tmp_path):
    """The save that begins the write-out copies no file: each file the plan changes is kept as
    a hard link in the journal (no bytes read or written), and each new file's bytes go once
    to a temporary file beside its target, which the journal's plan names (version 2) and the
    write-out renames; no staged-<n>.json holds them again. A journal loaded from disk gives
    the same bytes back: the new ones from the temporary file, or from the target once it is
    renamed there; the old ones from the links."""
    import os

    from patchforge.rebase.journal import Journal, PlanStep, RebaseRun

    root = tmp_path / "project"
    (root / "series" / "up").mkdir(parents=True)
    patch = root / "series" / "up" / "a.patch"
    patch.write_bytes(b"old a\n")
    journal = Journal(root / ".patchforge", root)
    journal.run = RebaseRun({}, [])
    journal.begin()
    staged = journal.stage("up/a.patch", b"new a\n")
    journal.run.phase = "committing"
    journal.run.plan = [PlanStep("series/up/a.patch", staged, None),
                        PlanStep("upstream.lock", None, None)]
    journal.save_write_out(["series/up/a.patch", "upstream.lock"],
                           {"series/up/a.patch": b"new a\n", "upstream.lock": b"lock\n"})
    assert sorted(path.name for path in journal.dir.iterdir()) == \
        ["journal.json", "orig.series%2Fup%2Fa.patch", "originals.json"]
    assert json.loads((journal.dir / "originals.json").read_bytes()) == \
        {"series/up/a.patch": True, "upstream.lock": None}
    assert os.path.samefile(journal.dir / "orig.series%2Fup%2Fa.patch", patch)
    doc = json.loads(journal.path.read_bytes())
    assert doc["version"] == 3
    temps = {step["path"]: step["temp"] for step in doc["plan"]}
    assert patch.read_bytes() == b"old a\n"
    assert (patch.parent / temps["series/up/a.patch"]).read_bytes() == b"new a\n"
    assert (root / temps["upstream.lock"]).read_bytes() == b"lock\n"
    assert journal.staged_bytes(staged) == b"new a\n"  # from memory

    loaded = Journal(root / ".patchforge", root)
    loaded.load()
    assert loaded.staged_bytes(staged) == b"new a\n"
    assert loaded.originals() == {"series/up/a.patch": b"old a\n", "upstream.lock": None}
    os.replace(patch.parent / temps["series/up/a.patch"], patch)  # what the write-out does
    loaded = Journal(root / ".patchforge", root)
    loaded.load()
    assert loaded.staged_bytes(staged) == b"new a\n"
    assert loaded.originals() == {"series/up/a.patch": b"old a\n", "upstream.lock": None}


def killed_once_committing(stack: Stack, args: list[str], tmp_path: Path) -> Path:
    """A copy of the project whose rebase was killed right after the journal that begins the
    write-out was saved (its plan recorded, no project file renamed yet)."""
    for n in range(1, 200):
        root = tmp_path / f"kill-{n}"
        shutil.copytree(stack.root, root, symlinks=True)
        proc = run_subprocess(root, *args, env={"PATCHFORGE_FAULT": f"rename:{n}"})
        assert proc.returncode == KILLED, "the write-out was never reached"
        journal = root / ".patchforge" / "rebase" / "journal.json"
        if journal.exists() and json.loads(journal.read_bytes())["phase"] == "committing":
            return root
        shutil.rmtree(root)
    pytest.fail("the write-out was never reached")


def finish_and_undo(root: Path, before: dict, after: dict) -> None:
    for verb, expected in (("--abort", before), ("--continue", after)):
        copy = root.parent / f"{root.name}{verb}"
        shutil.copytree(root, copy, symlinks=True)
        result = run_cli(copy, "rebase", verb)
        assert result.rc == 0, f"rebase {verb} -> {result.rc}\n{result.text}"
        assert snapshot(copy, skip_state=True, dirs=False) == expected, verb
        assert not (copy / ".patchforge" / "rebase").exists()


def version_3_write_out(tmp_path: Path, monkeypatch):
    """The states an older journal's test starts from: the project before and after a whole
    rebase, and a copy killed once committing, with its journal directory and journal (which
    a version 3 patchforge wrote)."""
    stack, args = build(tmp_path, monkeypatch)
    before = stack.snapshot()
    after = reference(stack, args, tmp_path)
    root = killed_once_committing(stack, args, tmp_path)
    state = root / ".patchforge" / "rebase"
    doc = json.loads((state / "journal.json").read_bytes())
    assert doc["version"] == 3
    return before, after, root, state, doc


def test_a_write_out_a_journal_of_version_2_began_is_finished_or_undone(tmp_path, monkeypatch):
    """A journal of version 2 (a write-out killed, then patchforge upgraded) keeps the
    originals' links in orig-files/: --continue finishes it and --abort undoes it all the
    same. (Version 3 keeps them in the journal's own directory, `orig.<path>`: a directory
    fewer to make, sync and remove per write-out.)"""
    before, after, root, state, doc = version_3_write_out(tmp_path, monkeypatch)
    assert not (state / "orig-files").exists()
    links = sorted(state.glob("orig.*"))
    assert links
    (state / "orig-files").mkdir()
    for link in links:
        os.replace(link, state / "orig-files" / link.name[len("orig."):])
    doc["version"] = 2
    (state / "journal.json").write_text(json.dumps(doc))
    finish_and_undo(root, before, after)


def test_a_write_out_a_journal_of_version_1_began_is_finished_or_undone(tmp_path, monkeypatch):
    """A journal of version 1 (a write-out killed, then patchforge upgraded) carries the new
    files in staged-<n>.json or inline and the originals' bytes in originals.json, with no
    temporary file and no link: --continue finishes it and --abort undoes it all the same."""
    before, after, root, state, doc = version_3_write_out(tmp_path, monkeypatch)
    staged = {}
    for step in doc["plan"]:
        temp = step.pop("temp", None)
        if temp is not None:
            new = root / step["path"]
            data = (new.parent / temp).read_bytes()
            (new.parent / temp).unlink()
            if step["staged"]:
                staged[step["staged"]] = base64.b64encode(data).decode()
            else:
                step["inline"] = base64.b64encode(data).decode()
    doc["version"] = 1
    kept = {rel: base64.b64encode((state / ("orig." + rel.replace("/", "%2F"))).read_bytes())
            .decode() if saved is True else saved
            for rel, saved in json.loads((state / "originals.json").read_bytes()).items()}
    assert kept and all(saved is None or isinstance(saved, str) for saved in kept.values())
    for link in state.glob("orig.*"):
        link.unlink()
    (state / "originals.json").write_text(json.dumps(kept))
    (state / "staged-9.json").write_text(json.dumps(staged))
    (state / "journal.json").write_text(json.dumps(doc))
    finish_and_undo(root, before, after)


def test_a_write_out_whose_new_file_is_gone_is_not_finished_without_it(tmp_path, monkeypatch):
    """The journal names the write-out's new files, which wait beside their targets; one
    removed by hand after a kill (before its rename) is said to be gone by --continue, which
    finishes nothing without it, and --abort still puts every file back."""
    stack, args = build(tmp_path, monkeypatch)
    before = stack.snapshot()
    root = killed_once_committing(stack, args, tmp_path)
    doc = json.loads((root / ".patchforge" / "rebase" / "journal.json").read_bytes())
    step = next(step for step in doc["plan"] if step["path"].endswith("/clean.patch"))
    gone = root / step["path"]
    (gone.parent / step["temp"]).unlink()
    result = run_cli(root, "rebase", "--continue")
    assert result.rc != 0
    assert f"the new {step['path']} that the rebase journal names is gone" in result.err
    assert gone.read_bytes() == before[step["path"]][1]
    assert run_cli(root, "rebase", "--abort").rc == 0
    assert snapshot(root, skip_state=True, dirs=False) == before


def test_no_command_on_another_upstream_runs_beside_a_cut_short_write_out(tmp_path, monkeypatch):
    """A rebase of up2 killed in its write-out leaves up idle; `upstream add`, `rename` and
    `delete` of up's fixes ran (exit 0), then `rebase --abort` put back upstream.lock and
    series/history.jsonl as the write-out had kept them: up3's pin was gone while the
    configuration still named it, and the rename's and the delete's events were lost, without
    a word; `ledger` wrote series/PATCHES.md of the half-written series. Each is refused (exit 2, naming the journal and both ways on, nothing written) until
    the write-out is finished or undone; then each runs and keeps its change."""
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    up = Upstream(tmp_path / "up", {"pkg/b.py": BASE, "pkg/c.py": b"x = 1\n"})
    up2 = Upstream(tmp_path / "up2", {"pkg/mod.py": BASE})
    stack = Stack(tmp_path / "template")
    stack.add_upstream("up", up)
    stack.add_upstream("up2", up2)
    stack.add_patch("up", "fb", {"pkg/b.py": with_lines({4: b"def f4():\n    return 44\n\n"})})
    stack.add_patch("up", "fc", {"pkg/c.py": b"x = 1\ny = 2\n"})
    stack.add_patch("up2", "gb", {"pkg/mod.py": with_lines({10: b"def f10():\n    return -10\n\n"})})
    stack.cli("overlays")
    stack.cli("ledger")  # a stack that keeps a history: rename and delete record events
    moved = up2.commit({"pkg/mod.py": b"# header\n" + BASE})
    before = stack.snapshot()
    root = killed_once_committing(stack, ["rebase", "--to", f"up2={moved}"], tmp_path)
    def files():  # the project and the journal (.patchforge/lock holds whoever ran last)
        return (snapshot(root, skip_state=True, dirs=False),
                snapshot(root / ".patchforge" / "rebase", dirs=False))

    killed = files()
    commands = [["upstream", "add", "up3", "--git", str(up.path), "--at", up.base,
                 "--install-root", "/opt/three"],
                ["rename", "fb", "fbren"], ["delete", "fc"], ["ledger"]]
    for args in commands:
        refused = run_cli(root, *args)
        assert refused.rc == 2, (args, refused.text)
        assert "the rebase of up2 was cut short while writing out its result" in refused.err
        assert ".patchforge/rebase/journal.json" in refused.err
        assert "rebase --continue" in refused.err and "rebase --abort" in refused.err
        assert files() == killed, args
    status = run_cli(root, "status")
    assert status.rc == 1 and "up2: a rebase is in progress (writing out its result)" in status.err
    assert run_cli(root, "rebase", "--abort").rc == 0
    assert snapshot(root, skip_state=True, dirs=False) == before
    for args in commands:
        assert run_cli(root, *args).rc == 0, args
    assert "up3" in json.loads((root / "upstream.lock").read_bytes())["upstreams"]
    events = [json.loads(line)["event"]
              for line in (root / "series" / "history.jsonl").read_bytes().splitlines()]
    assert "renamed" in events and "deleted" in events
