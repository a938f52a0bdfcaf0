"""The cache as users share it: one made read-only (a CI image's, a colleague's), and two
processes on one cache at the same moment. Real processes, a real read-only mount."""
from __future__ import annotations

import os
from pathlib import Path

from helpers.cli import run_subprocess, run_with_read_only
from helpers.project import OneUpstreamStack

FILES = {"a.py": b"".join(b"line %d\n" % i for i in range(1, 31))}


def _cache() -> Path:
    return Path(os.environ["PATCHFORGE_CACHE"])


def _says_the_cache(stderr: bytes) -> str:
    err = stderr.decode()
    assert f"the cache {_cache()} cannot be written" in err, err
    assert "PATCHFORGE_CACHE" in err, err
    assert "check the name" not in err and "nothing was left half-written" not in err, err
    return err


def test_new_on_a_read_only_cache_names_it_before_writing_anything(tmp_path):
    """`new` made its patch, listed it, then failed to make the worktree's commits in a
    read-only cache, saying "run the command again", which failed the same way each time."""
    s = OneUpstreamStack(tmp_path, FILES)
    run_subprocess(s.root, "fetch", expect=0)
    before = s.snapshot()
    refused = run_with_read_only(_cache(), s.root, "new", "fix")
    assert refused.returncode == 2, refused.stderr
    _says_the_cache(refused.stderr)
    assert s.snapshot() == before  # no patch, no series entry
    # With a cache it may write, the same command makes the patch and its worktree.
    run_subprocess(s.root, "new", "fix", expect=0)
    assert s.series("up") == ["fix.patch"]


def test_edit_on_a_read_only_cache_names_it(tmp_path):
    s = OneUpstreamStack(tmp_path, FILES)
    s.add_fix("fix", "a.py", FILES["a.py"], FILES["a.py"].replace(b"line 5\n", b"five\n"))
    run_subprocess(s.root, "fetch", expect=0)
    refused = run_with_read_only(_cache(), s.root, "edit", "fix")
    assert refused.returncode == 2, refused.stderr
    _says_the_cache(refused.stderr)
    assert not (s.root / ".patchforge" / "work" / "up").exists()


def test_a_read_only_cache_serves_reads_and_names_itself_for_a_fetch(tmp_path):
    """Reading commands work from a read-only cache; one that must fetch a new revision into
    it names the cache, not the SPEC ("check the name" sent the user after a good tag)."""
    s = OneUpstreamStack(tmp_path, FILES)
    s.add_fix("fix", "a.py", FILES["a.py"], FILES["a.py"].replace(b"line 5\n", b"five\n"))
    run_subprocess(s.root, "fetch", expect=0)
    s.commit({"b.py": b"new\n"}, "v2", tag="v2")
    status = run_with_read_only(_cache(), s.root, "status")
    assert status.returncode == 0, status.stderr
    assert b"applies" in status.stdout
    against = run_with_read_only(_cache(), s.root, "status", "--against", "up=v2")
    assert against.returncode == 2, against.stderr
    _says_the_cache(against.stderr)
    before = s.snapshot()
    rebase = run_with_read_only(_cache(), s.root, "rebase", "--to", "up=v2")
    assert rebase.returncode == 2, rebase.stderr
    _says_the_cache(rebase.stderr)
    assert s.snapshot() == before
    assert not (s.root / ".patchforge" / "rebase").exists()
