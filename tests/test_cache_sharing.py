"""The cache as users share it: one made read-only (a CI image's, a colleague's), and two
processes on one cache at the same moment. Real processes, a real read-only mount."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

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


# --------------------------------------------------------------------------------------------
# Two processes on one cache at the same moment

def _start(root: Path, *args: str):
    import subprocess
    import sys

    return subprocess.Popen([sys.executable, "-m", "patchforge", "--root", str(root), *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _together(*runs: tuple[Path, tuple[str, ...]]) -> list[tuple[int, bytes, bytes]]:
    """Each (root, args) started at once, all waited for: (exit code, stdout, stderr) each."""
    procs = [_start(root, *args) for root, args in runs]
    out = []
    for proc in procs:
        stdout, stderr = proc.communicate(timeout=300)
        out.append((proc.returncode, stdout, stderr))
    return out


def _two_stacks(tmp_path: Path) -> tuple[OneUpstreamStack, OneUpstreamStack]:
    stacks = []
    for name in ("a", "b"):
        s = OneUpstreamStack(tmp_path / name, FILES)
        s.add_fix("fix", "a.py", FILES["a.py"], FILES["a.py"].replace(b"line 5\n", b"five\n"))
        s.commit({"a.py": FILES["a.py"].replace(b"line 20\n", b"twenty\n")}, "v2", tag="v2")
        stacks.append(s)
    return stacks[0], stacks[1]


def test_two_stacks_fetch_into_a_new_cache_at_the_same_moment(tmp_path, monkeypatch):
    """Two projects of different upstreams (two CI jobs on one runner) fetching into an empty
    cache at once: the store is made once, each upstream's configuration and refs are its own,
    and each project's commands then work from it."""
    a, b = _two_stacks(tmp_path)
    for round_ in range(3):
        monkeypatch.setenv("PATCHFORGE_CACHE", str(tmp_path / f"cache-{round_}"))
        for rc, out, err in _together((a.root, ("fetch",)), (b.root, ("fetch",)),
                                      (a.root, ("status", "--against", "up=v2")),
                                      (a.root, ("overlays",)), (b.root, ("overlays",))):
            assert rc == 0, err.decode()
        for s in (a, b):
            run_subprocess(s.root, "status", expect=0)
            run_subprocess(s.root, "overlays", "--check", expect=0)


def test_a_pin_check_beside_another_stacks_remote_configuration_writes_no_config(
        tmp_path, monkeypatch):
    """Two projects of different upstreams fetching into one new cache: one failed with git's
    "could not lock config file .../store.git/config". A pin check (cat-file of a commit the
    store lacks) makes git fetch it from every promisor remote, and a remote another process
    had made a promisor but not yet given its filter made that fetch write the filter itself,
    outside the store's write lock, beside the other process's own configuration writes. At
    every point of another process's remote configuration, a reader now writes nothing."""
    import signal
    import subprocess
    import sys

    from patchforge.store.gitstore import UpstreamStore

    a, b = _two_stacks(tmp_path)
    for point in range(1, 6):  # each of the remote's five configuration writes
        cache = tmp_path / f"cache-{point}"
        monkeypatch.setenv("PATCHFORGE_CACHE", str(cache))
        env = {**os.environ, "PATCHFORGE_FAULT": f"config:{point}",
               "PATCHFORGE_FAULT_MODE": "stop"}
        proc = subprocess.Popen([sys.executable, "-m", "patchforge", "--root", str(b.root),
                                 "fetch"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                env=env)
        _, status = os.waitpid(proc.pid, os.WUNTRACED)
        assert os.WIFSTOPPED(status), proc.communicate()
        config = cache / "store.git" / "config"
        before = config.read_bytes()
        with UpstreamStore.open(cache) as store:
            # a's pin, not in the store (unless b's upstream made the same commit): git asks
            # every promisor remote for it.
            store.has_object(a.base)
        assert config.read_bytes() == before, (point, config.read_bytes().decode())
        os.kill(proc.pid, signal.SIGCONT)
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err.decode()
        run_subprocess(b.root, "status", expect=0)
        run_subprocess(a.root, "status", expect=0)


def test_a_rebase_beside_another_stacks_commands_on_one_cache(tmp_path):
    """One project rebases onto a new tag while another, on the same cache, fetches the same
    kind of tag, builds overlays and asks status: each answers what it answers alone."""
    a, b = _two_stacks(tmp_path)
    for s in (a, b):
        run_subprocess(s.root, "overlays", expect=0)
    alone = run_subprocess(b.root, "status", "--against", "up=v2", "--json", expect=0).stdout
    results = _together((a.root, ("rebase", "--to", "up=v2")),
                        (b.root, ("status", "--against", "up=v2", "--json")),
                        (b.root, ("overlays",)), (a.root, ("status",)))
    for rc, out, err in results[:3]:
        assert rc == 0, (out.decode(), err.decode())
    # a's own status, beside a's rebase, sees the series before or after it, or (the rebase
    # started first) says that a rebase is in progress, exit 1.
    rc, out, err = results[3]
    assert rc == 0 or (rc == 1 and "a rebase is in progress" in err.decode()), \
        (out.decode(), err.decode())
    assert results[1][1] == alone
    assert a.lock()["upstreams"]["up"]["label"] == "v2"
    run_subprocess(a.root, "overlays", "--check", expect=0)
    run_subprocess(b.root, "overlays", "--check", expect=0)


def _stopped_at_first_lock(root: Path, *args: str):
    """`patchforge ARGS` started and stopped (SIGSTOP) just before it first takes the project
    lock; returned once it is stopped (waitpid sees it), to be continued with SIGCONT."""
    import subprocess
    import sys

    env = {**os.environ, "PATCHFORGE_FAULT": "lock:1", "PATCHFORGE_FAULT_MODE": "stop"}
    proc = subprocess.Popen([sys.executable, "-m", "patchforge", "--root", str(root), *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    _, status = os.waitpid(proc.pid, os.WUNTRACED)
    assert os.WIFSTOPPED(status), proc.communicate()
    return proc


def test_overlays_never_write_the_series_a_rebase_beside_them_replaced(tmp_path):
    """`overlays` built the overlays of the series and lock as it read them, then took the
    project lock to write them: a rebase run meanwhile (another terminal, a bump in CI) had
    written the new series, lock and overlays, and `overlays` wrote the old ones over them.
    overlays --check then said the stack had drifted, and a deployment got the old base's
    files. `overlays` now holds the lock from before it reads anything."""
    import signal

    s, _ = _two_stacks(tmp_path)
    run_subprocess(s.root, "overlays", expect=0)
    proc = _stopped_at_first_lock(s.root, "overlays")
    run_subprocess(s.root, "rebase", "--to", "up=v2", expect=0)
    os.kill(proc.pid, signal.SIGCONT)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err.decode()
    assert s.lock()["upstreams"]["up"]["label"] == "v2"
    run_subprocess(s.root, "overlays", "--check", expect=0)


@pytest.mark.parametrize("command", [("delete", "late"), ("rename", "late", "later"),
                                     ("move", "late", "--first"), ("new", "other", "--no-edit"),
                                     ("upstream", "pin", "up", "--at", "v2", "--force")])
def test_a_command_that_waited_for_the_lock_is_refused_by_a_stop_made_meanwhile(tmp_path,
                                                                                command):
    """A command asked whether the state allowed it, then took the project lock: a rebase
    that stopped on a conflict in between (another terminal) left a stop the command may not
    act in, and it acted all the same (`delete` took a patch out of the series the stop's
    journal holds, and `rebase --skip` then refused: the patch file changed while stopped).
    Asked again under the lock, it is refused, exit 2, naming the stop; nothing written, and
    the stop goes on as if the command had never run."""
    import signal

    s = OneUpstreamStack(tmp_path, FILES)
    s.add_fix("fix", "a.py", FILES["a.py"], FILES["a.py"].replace(b"line 15\n", b"fifteen\n"))
    s.add_fix("late", "a.py", FILES["a.py"], FILES["a.py"].replace(b"line 25\n", b"late\n"))
    s.commit({"a.py": FILES["a.py"].replace(b"line 15\n", b"FIFTEEN\n")}, "v2", tag="v2")
    run_subprocess(s.root, "overlays", expect=0)
    before = s.snapshot()
    proc = _stopped_at_first_lock(s.root, *command)
    run_subprocess(s.root, "rebase", "--to", "up=v2", expect=3)
    stopped = s.snapshot()
    os.kill(proc.pid, signal.SIGCONT)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 2, (out + err).decode()
    assert "refused: up: a rebase is stopped at fix.patch" in err.decode(), err.decode()
    assert s.snapshot() == stopped
    run_subprocess(s.root, "rebase", "--abort", expect=0)
    assert s.snapshot() == before


@pytest.mark.parametrize("left", ["ref", "config"])
def test_a_lock_a_killed_git_left_in_the_cache_is_named_never_a_name_to_check(tmp_path, left):
    """Two projects on one cache: one's git killed (an out-of-memory kill, a CI job's hard
    timeout) as it wrote a ref of the shared store (its fetch of a new tag), or the store's
    configuration (its first fetch, configuring its upstream's remote), leaves git's lock
    file there, which refuses that write for good. The other project's next command needing
    it was refused with "has no branch or tag '2'" and "check the name", of a tag the
    upstream has. It names the file left and how to go on; nothing in the project changes.
    git is killed at that write by strace, each time."""
    import shutil
    import subprocess

    from helpers.env import need_tool

    need_tool("strace")
    real = shutil.which("git")
    if subprocess.run(["strace", "-qq", "-o", os.devnull, real, "--version"],
                      capture_output=True).returncode != 0:
        pytest.skip("strace cannot trace processes here")
    a = OneUpstreamStack(tmp_path / "a", FILES)
    a.add_fix("fix", "a.py", FILES["a.py"], FILES["a.py"].replace(b"line 5\n", b"five\n"))
    a.commit({"a.py": FILES["a.py"].replace(b"line 20\n", b"twenty\n")}, "v2", tag="v2")
    env: dict[str, str] = {}
    store = _cache() / "store.git"
    if left == "ref":
        b_root = tmp_path / "b-of-a"
        shutil.copytree(a.root, b_root, symlinks=True)  # a second checkout of the same project
        run_subprocess(a.root, "fetch", expect=0)
        (namespace,) = [p.name for p in (store / "refs/patchforge/remotes").iterdir()]
        lock = store / "refs/patchforge/remotes" / namespace / "tags" / "v2.lock"
        command, killed_args = "fetch", ("status", "--against", "up=v2")
    else:
        b_root = _two_stacks(tmp_path / "others")[0].root  # a project of another upstream
        # A new cache, where a's fetch configures its upstream's remote.
        env = {"PATCHFORGE_CACHE": str(tmp_path / "new-cache")}
        lock = tmp_path / "new-cache" / "store.git" / "config.lock"
        command, killed_args = "config", ("fetch",)
    shim = tmp_path / "bin" / "git"
    shim.parent.mkdir()
    shim.write_text(
        "#!/bin/sh\n"
        f'case " $* " in *" {command} "*) exec strace -qq -f -o /dev/null -P "{lock}" '
        f'-e trace=rename,renameat,renameat2 -e inject=rename,renameat,renameat2:signal=SIGKILL '
        f'"{real}" "$@";; esac\nexec "{real}" "$@"\n')
    shim.chmod(0o755)
    killed = run_subprocess(a.root, *killed_args,
                            env={**env, "PATH": f"{shim.parent}{os.pathsep}{os.environ['PATH']}"})
    assert killed.returncode != 0 and lock.exists(), killed.stderr.decode()
    before = b_root.joinpath("upstream.lock").read_bytes()
    refused = run_subprocess(b_root, "status", "--against", "up=v2", env=env, expect=2)
    err = refused.stderr.decode()
    assert "check the name" not in err and "has no branch or tag" not in err, err
    assert f"holds a lock file a git process left: {lock}" in err, err
    assert f"remove {lock} and run the command again" in err, err
    assert b_root.joinpath("upstream.lock").read_bytes() == before
    lock.unlink()
    run_subprocess(b_root, "status", "--against", "up=v2", env=env, expect=0)


def test_a_lock_a_killed_git_left_on_an_import_label_is_gone_without(tmp_path):
    """The mirror: a project's label of its import (of a directory or a wheel) is written where
    the store can, and gone without where it cannot. git killed as it wrote that label leaves
    its lock file; the next commands of the project go without the label, as before, exit 0
    (the lock file left is not a refusal there)."""
    import shutil
    import subprocess

    from helpers.cli import ok
    from helpers.env import need_tool

    need_tool("strace")
    real = shutil.which("git")
    if subprocess.run(["strace", "-qq", "-o", os.devnull, real, "--version"],
                      capture_output=True).returncode != 0:
        pytest.skip("strace cannot trace processes here")
    src = tmp_path / "src"
    (src / "pkg").mkdir(parents=True)
    (src / "pkg" / "a.py").write_bytes(FILES["a.py"])
    root = tmp_path / "project"
    ok(None, "init", "--standalone", str(root))
    ok(root, "upstream", "add", "up", "--dir", str(src), "--at", "1.0")
    env = {"PATCHFORGE_CACHE": str(tmp_path / "new-cache")}  # where `fetch` imports it again
    shim = tmp_path / "bin" / "git"
    shim.parent.mkdir()
    shim.write_text(
        "#!/bin/sh\n"
        'case " $* " in *" update-ref refs/patchforge/labels/"*) exec strace -qq -f -o /dev/null '
        '-e trace=rename,renameat,renameat2 -e inject=rename,renameat,renameat2:signal=SIGKILL '
        f'"{real}" "$@";; esac\nexec "{real}" "$@"\n')
    shim.chmod(0o755)
    run_subprocess(root, "fetch", env={**env, "PATH": f"{shim.parent}{os.pathsep}"
                                                      f"{os.environ['PATH']}"})
    labels = tmp_path / "new-cache" / "store.git" / "refs" / "patchforge" / "labels"
    assert [p.name for p in labels.rglob("*.lock")] == ["1.0.lock"]
    for args in (("status",), ("overlays",), ("fetch",)):
        run_subprocess(root, *args, env=env, expect=0)
