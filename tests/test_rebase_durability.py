"""A rebase's writes against a power loss, not only a kill: every name change and every file's
bytes the journal's removal relies on are synced before that removal is.

The model is the strict one (a file system that keeps no order between directories): a new,
renamed or removed name in directory D is durable once D is fsynced after the change, a file's
bytes once the file is fsynced after it was written. The real system calls run; each is recorded
as it returns, and the record is checked against the model.
"""
from __future__ import annotations

import builtins
import json
import os
from pathlib import Path

import pytest

from helpers.cli import run_cli, run_subprocess
from patchforge.fsutil import TEMPORARY_NAME
from tests.test_rebase_crash import KILLED, build


class SyscallRecord:
    """The rename, unlink, link, create and fsync calls made in this process, with paths
    relative to `root`, in the order they returned."""

    def __init__(self, root: Path, monkeypatch):
        self.root = root.resolve()
        self.ops: list[tuple[str, ...]] = []
        real = {name: getattr(os, name) for name in ("replace", "rename", "unlink", "link",
                                                      "fsync", "open", "mkdir")}
        real_open = builtins.open

        def record(kind, *paths):
            self.ops.append((kind, *(self._rel(p) for p in paths)))

        def recorder(name, kind, *positions):
            """os.`name`, called, then recorded as `kind` of its arguments at `positions`."""
            def call(*args, **kwargs):
                result = real[name](*args, **kwargs)
                record(kind, *(args[i] for i in positions))
                return result
            return call

        def fsync(fd):
            result = real["fsync"](fd)
            number = fd if isinstance(fd, int) else fd.fileno()
            record("fsync", os.readlink(f"/proc/self/fd/{number}"))
            return result

        def open_fd(path, flags, *args, **kwargs):
            fd = real["open"](path, flags, *args, **kwargs)
            if flags & os.O_CREAT:
                record("create", path)
            return fd

        def open_file(file, mode="r", *args, **kwargs):
            handle = real_open(file, mode, *args, **kwargs)
            if isinstance(file, (str, os.PathLike)) and any(c in mode for c in "wax"):
                record("create", file)
            return handle

        for name, kind, positions in (("replace", "rename", (0, 1)), ("rename", "rename", (0, 1)),
                                      ("unlink", "unlink", (0,)), ("link", "create", (1,)),
                                      ("mkdir", "create", (0,))):
            monkeypatch.setattr(os, name, recorder(name, kind, *positions))
        monkeypatch.setattr(os, "fsync", fsync)
        monkeypatch.setattr(os, "open", open_fd)
        monkeypatch.setattr(builtins, "open", open_file)

        from patchforge import fsutil, overlay

        real_exchange = fsutil.exchange

        def exchange(first, second):
            """An exchange (renameat2) is both renames in one step: recorded as both."""
            done = real_exchange(first, second)
            if done:
                record("rename", first, second)
                record("rename", second, first)
            return done
        monkeypatch.setattr(fsutil, "exchange", exchange)
        monkeypatch.setattr(overlay, "exchange", exchange)

    def _rel(self, path) -> str:
        absolute = Path(os.path.abspath(path))
        try:
            return absolute.relative_to(self.root).as_posix()
        except ValueError:
            return str(absolute)

    def journal_removed(self) -> int:
        """Where journal.json's removal became durable (its directory's fsync after it)."""
        removal = max(i for i, op in enumerate(self.ops)
                      if op == ("unlink", ".patchforge/rebase/journal.json"))
        return next(i for i in range(removal, len(self.ops))
                    if self.ops[i] == ("fsync", ".patchforge/rebase"))

    def names_not_durable_at(self, index: int, wanted) -> list[tuple[str, ...]]:
        """Name changes under `wanted` made before ops[index] whose directory was not fsynced
        between the change and ops[index] (a rename counts in both directories)."""
        left = []
        for i, op in enumerate(self.ops[:index]):
            if op[0] == "fsync":
                continue
            for path in op[1:]:
                if not wanted(path):
                    continue
                directory = os.path.dirname(path) or "."
                if ("fsync", directory) not in self.ops[i + 1:index + 1]:
                    left.append(op)
        return left

    def bytes_not_durable_at(self, index: int, wanted) -> list[str]:
        """Files under `wanted` created before ops[index] and not fsynced after it."""
        return [op[1] for i, op in enumerate(self.ops[:index])
                if op[0] == "create" and wanted(op[1])
                and ("fsync", op[1]) not in self.ops[i + 1:index + 1]]


def in_project(path: str) -> bool:
    """A project file: not a temporary file beside one (a power loss may leave one of those
    behind; it holds no fix and names none)."""
    return ((path.startswith("series/") or path == "upstream.lock")
            and not TEMPORARY_NAME.fullmatch(os.path.basename(path)))


def test_a_clean_rebase_makes_its_renames_durable_before_the_journal_goes(tmp_path,
                                                                          monkeypatch):
    stack, args = build(tmp_path, monkeypatch)
    record = SyscallRecord(stack.root, monkeypatch)
    assert run_cli(stack.root, *args).rc == 0
    removed = record.journal_removed()
    assert record.names_not_durable_at(removed, in_project) == []
    # The new overlays tree: every name in it, its subdirectories' included, and every file's
    # bytes, before the swap makes it the overlays.
    swap = next(i for i, op in enumerate(record.ops) if op[:2] == ("rename", ".overlays.new"))
    assert any(op[0] == "create" and op[1].startswith(".overlays.new/")
               and "/" in op[1][len(".overlays.new/"):] for op in record.ops[:swap]), \
        "the overlays tree has a subdirectory"
    assert record.names_not_durable_at(swap, lambda p: p.startswith(".overlays.new/")) == []
    assert record.bytes_not_durable_at(swap, lambda p: p.startswith(".overlays.new/")) == []


def test_the_overlays_kept_for_abort_are_durable_before_the_write_out_replaces_them(
        tmp_path, monkeypatch):
    """The write-out removes the old overlays once the new ones are in place: the copy
    `--abort` puts back must not be lost to a power loss from then on."""
    stack, args = build(tmp_path, monkeypatch)
    record = SyscallRecord(stack.root, monkeypatch)
    assert run_cli(stack.root, *args).rc == 0
    swap = next(i for i, op in enumerate(record.ops) if op[:2] == ("rename", "overlays"))
    root_synced = next(i for i in range(swap, len(record.ops)) if record.ops[i] == ("fsync", "."))
    kept = [op for op in record.ops[:swap] if op[0] == "create" and "orig-overlays" in op[1]]
    assert kept, "the rebase keeps a copy of overlays/"
    assert record.bytes_not_durable_at(root_synced, lambda p: "orig-overlays" in p) == []
    assert record.names_not_durable_at(root_synced, lambda p: "orig-overlays" in p) == []


def _killed_in_the_write_out(stack, args, kill_at: int) -> bool:
    """Whether a rebase killed at its `kill_at`-th rename leaves a journal in the write-out."""
    proc = run_subprocess(stack.root, *args, env={"PATCHFORGE_FAULT": f"rename:{kill_at}"})
    journal = stack.root / ".patchforge/rebase/journal.json"
    return (proc.returncode == KILLED and journal.exists()
            and json.loads(journal.read_text())["phase"] == "committing")


def test_some_of_the_kills_below_fall_in_the_write_out(tmp_path, monkeypatch):
    """The cases below skip a kill that falls outside the write-out: at least one must not."""
    stack, args = build(tmp_path, monkeypatch)
    assert _killed_in_the_write_out(stack, args, 4)


@pytest.mark.parametrize("kill_at", range(1, 12))
def test_an_abort_after_a_killed_write_out_is_durable_before_the_journal_goes(
        kill_at, tmp_path, monkeypatch):
    stack, args = build(tmp_path, monkeypatch)
    if not _killed_in_the_write_out(stack, args, kill_at):
        pytest.skip("this rename is not one of the write-out's")
    record = SyscallRecord(stack.root, monkeypatch)
    assert run_cli(stack.root, "rebase", "--abort").rc == 0
    removed = record.journal_removed()

    def restored(path: str) -> bool:
        return in_project(path) or path.startswith("overlays")

    assert record.names_not_durable_at(removed, restored) == []
    assert record.bytes_not_durable_at(removed, lambda p: p.startswith("overlays")) == []


def test_a_stop_makes_the_journal_durable_before_it_opens_the_worktree(tmp_path, monkeypatch):
    """The journal's first save is not waited for; a stop writes a worktree outside the journal
    after it, so the journal's name is synced before the worktree's first name: a power loss
    must not keep an edit open that no rebase owns."""
    from helpers.project import OneUpstreamStack

    monkeypatch.setenv("PATCHFORGE_CACHE", str(tmp_path / "cache"))
    lines = b"".join(b"line %d\n" % i for i in range(1, 21))
    stack = OneUpstreamStack(tmp_path, {"a.py": lines})
    stack.add_fix("fix", "a.py", lines, lines.replace(b"line 5\n", b"mine 5\n"))
    stack.commit({"a.py": lines.replace(b"line 5\n", b"theirs 5\n")}, "v2", tag="v2")
    record = SyscallRecord(stack.root, monkeypatch)
    assert run_cli(stack.root, "rebase", "--to", "up=v2").rc == 3
    worktree = next(i for i, op in enumerate(record.ops)
                    if op[0] == "create" and op[1].startswith(".patchforge/work"))
    assert record.names_not_durable_at(worktree, lambda p: p.endswith("rebase/journal.json")) == []
