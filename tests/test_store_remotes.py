"""The promisor remotes of the one store that every project of a cache shares: one per git
upstream, and git's own fetch of an object the store lacks asks each of them in turn. Real
git, real processes: what git did is read from its own trace (GIT_TRACE, which patchforge
passes on), and from the store's configuration."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from helpers.cli import run_subprocess
from helpers.project import OneUpstreamStack, add_patch_file, patch_bytes
from helpers.snapshot import tree_bytes

FILES = {"a.py": b"".join(b"line %d\n" % i for i in range(1, 31)),
         "b.py": b"".join(b"other %d\n" % i for i in range(1, 31))}
FIXED = FILES["a.py"].replace(b"line 5\n", b"five\n")
ABSENT = "1234567890abcdef1234567890abcdef12345678"  # a commit no repository here has


def _b(name: str) -> bytes:
    return FILES["b.py"] + f"# {name}\n".encode()


def _store() -> Path:
    return Path(os.environ["PATCHFORGE_CACHE"]) / "store.git"


def _remotes() -> dict[str, str]:
    """namespace -> url of each remote in the store's configuration."""
    out = subprocess.run(["git", "--git-dir", str(_store()), "config", "--get-regexp",
                          r"^remote\..*\.url$"], capture_output=True, text=True).stdout
    return {key[len("remote."):-len(".url")]: url
            for key, _, url in (line.partition(" ") for line in out.splitlines())}


def _stacks(tmp_path: Path, *names: str) -> list[OneUpstreamStack]:
    """A project per name, each on its own local upstream, all on the test's one cache, each
    fetched (the store holds its pin and its fix's file)."""
    stacks = []
    for name in names:
        # (Files of their own: a blob both had could be fetched from either.)
        s = OneUpstreamStack(tmp_path / name, {**FILES, "b.py": _b(name)})
        s.add_patch("up", "fix", {"a.py": FIXED})
        run_subprocess(s.root, "fetch", expect=0)
        stacks.append(s)
    return stacks


def test_status_asks_no_remote_for_a_commit_the_cache_lacks(tmp_path):
    """A fix kept as landed whose Base the cache never fetched (made on a later commit in a
    colleague's cache): git was asked whether the store has that commit, and a partial store's
    git fetched it on demand from every upstream's remote in turn, one `git fetch` each (the
    other project's too): with the remotes of a few hundred projects in one cache, `status`
    took minutes. Now the store answers from its own packs, and nothing is fetched."""
    a, b = _stacks(tmp_path, "a", "b")
    kept = a.root / "series" / "up" / "upstreamed"
    kept.mkdir()
    (kept / "old.patch").write_bytes(patch_bytes("up", ABSENT, "an old fix", a.upstream.diff(
        {"a.py": FILES["a.py"].replace(b"line 20\n", b"twenty\n")}, a.base)))
    names = {url: name for name, url in _remotes().items()}
    assert len(names) == 2  # (both projects' upstreams: git had two remotes to ask)
    trace = tmp_path / "trace"
    status = run_subprocess(a.root, "status", env={"GIT_TRACE": str(trace)}, expect=0)
    assert b"up/fix.patch  applies" in status.stdout, status.stdout
    fetches = [line for line in trace.read_text().splitlines() if " fetch " in line]
    # Neither git's own fetch on demand (started by git: `run_command`) nor any fetch of the
    # other project's remote.
    assert not [line for line in fetches if "run_command:" in line], fetches
    assert not [line for line in fetches if names[str(b.up)] in line], fetches


def test_a_deleted_upstreams_remote_is_let_go_and_its_pin_still_reads(tmp_path):
    """A project whose local upstream was deleted (a finished experiment, a test's temporary
    directory) left its promisor remote in the shared store for ever, asked by every fetch of
    a missing object of every other project. The next command of any project takes it out of
    the store's configuration; its refs and objects stay: that project still reads its pin
    from the cache, and once its upstream is back, its next command configures it again."""
    a, b = _stacks(tmp_path, "a", "b")
    away = tmp_path / "b-up-away"
    b.up.rename(away)
    run_subprocess(a.root, "status", expect=0)
    assert [url for url in _remotes().values()] == [str(a.up)], _remotes()
    refs = subprocess.run(["git", "--git-dir", str(_store()), "for-each-ref",
                           "refs/patchforge/remotes/"], capture_output=True, text=True).stdout
    assert refs.count("refs/patchforge/remotes/up.") == 4, refs  # each its tag and its commit
    # The project whose upstream is gone still makes its overlay from the cache.
    run_subprocess(b.root, "overlays", expect=0)
    assert tree_bytes(b.root / "overlays")["up/a.py"] == FIXED
    # Its upstream back, a file the store never fetched is read from it.
    away.rename(b.up)
    new = run_subprocess(b.root, "new", "second", "--file", "b.py", expect=0)
    assert (b.root / ".patchforge" / "work" / "up" / "b.py").read_bytes() == _b("b"), \
        new.stderr
    assert sorted(_remotes().values()) == sorted([str(a.up), str(b.up)])


def test_a_command_does_not_wait_for_another_process_to_let_a_remote_go(tmp_path):
    """The store's write lock held by another process (a long wheel import): a reading
    command does not wait for it to take a gone upstream's remote out, and leaves the
    configuration as it is."""
    a, b = _stacks(tmp_path, "a", "b")
    b.up.rename(tmp_path / "b-up-away")
    holder = subprocess.Popen(
        [sys.executable, "-c", "import fcntl, os, sys, time\n"
         f"fd = os.open({str(_store() / 'patchforge.lock')!r}, os.O_RDWR)\n"
         "fcntl.flock(fd, fcntl.LOCK_EX)\nprint('held', flush=True)\nsys.stdin.read()\n"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert holder.stdout.readline() == b"held\n"
        before = (_store() / "config").read_bytes()
        status = run_subprocess(a.root, "status", expect=0, timeout=120)
        assert b"waiting for another patchforge process" not in status.stderr, status.stderr
        assert (_store() / "config").read_bytes() == before
    finally:
        holder.stdin.close()
        holder.wait(timeout=60)
    run_subprocess(a.root, "status", expect=0)
    assert list(_remotes().values()) == [str(a.up)]


def test_a_fetch_after_one_that_found_no_pin_says_it_fetched_it(tmp_path, monkeypatch):
    """The lock pins a commit the upstream does not have yet (a colleague pinned a branch not
    pushed there yet): `fetch` on a new cache fails, its upstream's remote configured. Once the
    upstream has the commit, the next `fetch` asked whether the store held the pin, git fetched
    it on demand from that remote, and `fetch` said "already in the cache" of a pin it had just
    fetched. Now the store tells it lacks the pin from its own packs (no fetch of git's own),
    and `fetch` says it fetched it."""
    stack = OneUpstreamStack(tmp_path, FILES)
    pinned = stack.commit({"a.py": FIXED}, "v2", tag="v2")
    stack.cli("upstream", "pin", "up", "--at", "v2")
    kept = tmp_path / "kept.git"
    subprocess.run(["git", "clone", "-q", "--mirror", str(stack.up), str(kept)], check=True)
    for args in (["tag", "-d", "v2"], ["reset", "-q", "--hard", "v1"],
                 ["reflog", "expire", "--expire=now", "--all"], ["gc", "-q", "--prune=now"]):
        subprocess.run(["git", "-C", str(stack.up), *args], check=True, capture_output=True)
    monkeypatch.setenv("PATCHFORGE_CACHE", str(tmp_path / "new-cache"))
    code, _, err = stack.cli("fetch", expect=None)
    assert code != 0 and f"the locked commit {pinned} is not a commit of" in err, err
    assert list(_remotes().values()) == [str(stack.up)]  # (configured before it failed)
    subprocess.run(["git", "-C", str(stack.up), "fetch", "-q", str(kept),
                    "+refs/tags/*:refs/tags/*"], check=True)
    trace = tmp_path / "trace"
    fetch = run_subprocess(stack.root, "fetch", env={"GIT_TRACE": str(trace)}, expect=0)
    assert fetch.stdout.decode().strip() == f"up v2: fetched into the cache ({pinned[:12]})", \
        fetch.stdout
    assert not [line for line in trace.read_text().splitlines()
                if " fetch " in line and "run_command:" in line]


RENAMED_BASE = (b"import math\n\n\ndef f(x):\n    y = x + 1\n    return math.floor(y)\n\n\n"
                b"def g(x):\n    y = x * 2\n    return math.ceil(y)\n")
GUARDED = RENAMED_BASE.replace(b"def g(x):\n", b'def g(x):\n    assert x >= 0, "x >= 0"\n')


def test_a_kept_fixs_base_the_cache_lacks_is_fetched_from_its_own_upstream(tmp_path,
                                                                          monkeypatch):
    """A fix made on a commit of an upstream branch deleted since (a merged pull request's:
    `Base` is not the pin), landed after upstream renamed its file, kept as landed; upstream
    then reverts the landing. In a fresh clone's cache, which no fetch brought that commit
    into, git no longer fetched it on demand: the kept fix was judged without its base file,
    and `status` and the rebase said nothing (exit 0) while the fix was in no overlay and not
    upstream. The commit is fetched from the project's own upstream (no other's remote): the
    revert is said."""
    (b,) = _stacks(tmp_path, "b")
    a = OneUpstreamStack(tmp_path / "a", {"c.py": RENAMED_BASE, "b.py": _b("a")})
    subprocess.run(["git", "-C", str(a.up), "checkout", "-q", "-b", "feature"], check=True)
    made_on = a.commit({"notes.txt": b"feature\n"}, "feature work")
    subprocess.run(["git", "-C", str(a.up), "checkout", "-q", "main"], check=True)
    diff = a.upstream.diff({"c.py": GUARDED}, made_on)
    add_patch_file(a.root, "up", "fix.patch", patch_bytes("up", made_on, "guard g", diff))
    a.upstream.commit({}, "move c.py into pkg", {"c.py": "pkg/c.py"})
    landing = a.commit({"pkg/c.py": GUARDED}, "g: guard negative x", tag="v2")
    a.cli("rebase", "--to", "v2")
    assert made_on in a.patch("up", "fix", "upstreamed").decode()
    subprocess.run(["git", "-C", str(a.up), "branch", "-D", "feature"], check=True)
    revert = a.commit({"pkg/c.py": RENAMED_BASE},
                      f'Revert "g: guard negative x"\n\nThis reverts commit {landing}.\n', tag="v3")
    monkeypatch.setenv("PATCHFORGE_CACHE", str(tmp_path / "fresh-cache"))
    a.cli("fetch")
    run_subprocess(b.root, "fetch", expect=0)  # (another project's remote in the store)
    names = {url: name for name, url in _remotes().items()}
    trace = tmp_path / "trace"
    status = run_subprocess(a.root, "status", "--against", "v3", "--json",
                            env={"GIT_TRACE": str(trace)}, expect=1)
    (said,) = json.loads(status.stdout)["reverted"]
    assert (said["name"], said["by"]) == ("fix.patch", revert), said
    fetches = [line for line in trace.read_text().splitlines() if " fetch " in line]
    assert not [line for line in fetches if "run_command:" in line], fetches
    assert not [line for line in fetches if names[str(b.up)] in line], fetches
    _, out, _ = a.cli("rebase", "--to", "v3", expect=1)
    assert revert[:12] in out, out
