"""The editing worktree's HEAD and index, made without git, against git's own way of making them:
`git reset --hard` to the base commit, the patch's files written, `git add -N` for the files it
creates. Every git command a user or patchforge runs in there must answer the same."""
from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from patchforge.worktree import Worktree

BEFORE = {
    "pkg/a.py": ("100644", b"one\ntwo\n"),
    "pkg/run.sh": ("100755", b"#!/bin/sh\necho run\n"),
    "same.txt": ("100644", b"unchanged\n"),
    "chmod.txt": ("100644", b"made executable\n"),
    "link": ("120000", b"same.txt"),
    "kept.txt": ("100644", b"not in the patch's result\n"),
    "deep/" + "d" * 120 + "/" + "f" * 150 + ".py": ("100644", b"a long name\n"),
}
AFTER = {
    "pkg/a.py": b"one\n<<<<<<< upstream\nTWO\n=======\n2\n>>>>>>> patch\n",
    "pkg/run.sh": None,
    "same.txt": b"unchanged\n",
    "chmod.txt": b"made executable\n",
    "link": b"same.txt",
    "new/created.py": b"print('new')\n",
    "new/script.sh": b"#!/bin/sh\n",
    "deep/" + "d" * 120 + "/" + "f" * 150 + ".py": b"a long name, changed\n",
}
MODES = {"chmod.txt": "100755", "new/script.sh": "100755", "kept.txt": "100755"}

QUESTIONS = [
    ["diff-files", "--name-status"],  # plumbing first: nothing has refreshed our index yet
    ["diff-index", "HEAD"],
    ["diff-index", "--cached", "HEAD"],
    ["ls-files", "-s", "-z"],
    ["ls-files", "--debug"],
    ["rev-parse", "HEAD", "HEAD^{tree}"],
    ["diff", "--quiet"],
    ["status", "--porcelain=v1", "-z", "--untracked-files=all"],
    ["diff"],
    ["diff", "--cached"],
    ["diff", "HEAD"],
    ["fsck", "--no-dangling"],
]


def git(where: Path, *args: str) -> tuple[int, bytes]:
    proc = subprocess.run(["git", "-c", "core.autocrlf=false", "-c", "core.fileMode=true",
                           "-c", "core.logAllRefUpdates=false", *args], cwd=where,
                          capture_output=True)
    return proc.returncode, proc.stdout + proc.stderr


def answers(where: Path) -> list:
    out = []
    for question in QUESTIONS:
        rc, text = git(where, *question)
        if question[-1] == "--debug":  # the stat data of a file differs from one write to the next
            text = re.sub(rb"  (ctime|mtime|dev|uid|size): [^\n]*\n", b"", text)
        out.append((question, rc, text))
    return out


def made_by_git(where: Path, head: str, source: Path) -> None:
    """The same worktree made with git: a repository with the base commit, reset to it, the
    patch's files written, its created files added with -N."""
    subprocess.run(["git", "init", "-q", "--template=", str(where)], check=True)
    subprocess.run(["git", "fetch", "-q", str(source), head], cwd=where, check=True,
                   capture_output=True)
    assert git(where, "-c", "core.logAllRefUpdates=false", "reset", "-q", "--hard", head)[0] == 0
    for rel, new in AFTER.items():
        target = where / rel
        if new is None:
            target.unlink()
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.is_symlink():
            target.unlink()
        if BEFORE.get(rel, ("",))[0] == "120000":
            os.symlink(new, target)
        else:
            target.write_bytes(new)
    for rel, mode in MODES.items():
        if (where / rel).is_file():
            os.chmod(where / rel, 0o755 if mode == "100755" else 0o644)
    created = [rel for rel, new in AFTER.items() if new is not None and rel not in BEFORE]
    assert git(where, "add", "-f", "-N", "--", *created)[0] == 0


def test_a_worktree_answers_every_git_question_as_the_one_git_makes(tmp_path):
    ours = tmp_path / "ours"
    # An earlier stop's files first: the worktree is reused from stop to stop.
    Worktree.create(ours, {"old/stop.py": ("100644", b"x\n")}, {"old/stop.py": b"y\n",
                                                                 "old/new.py": b"n\n"})
    work = Worktree.create(ours, BEFORE, AFTER, modes=MODES)
    assert work.changes().changed == ("chmod.txt", "deep/" + "d" * 120 + "/" + "f" * 150 + ".py",
                                      "kept.txt", "new/created.py", "new/script.sh",
                                      "pkg/a.py", "pkg/run.sh")
    head = git(ours, "rev-parse", "HEAD")[1].decode().strip()
    theirs = tmp_path / "theirs"
    made_by_git(theirs, head, ours)
    # git's own index says "maybe changed" of a file written after `reset` wrote it (unless
    # within the same second), which only its plumbing shows: refreshed, it is what ours is
    # from the start. Then both are asked in turn (status refreshes the index as it goes).
    assert git(theirs, "update-index", "-q", "--refresh")[0] in (0, 1)
    for (question, rc, mine), (_, git_rc, git_text) in zip(answers(ours), answers(theirs)):
        assert (rc, mine) == (git_rc, git_text), question
    assert not (ours / "old").exists()
