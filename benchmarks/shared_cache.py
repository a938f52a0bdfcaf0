#!/usr/bin/env python3
"""One cache shared by many projects: `status` and `overlays` of one project as the number of
projects (each with its own local git upstream, so one promisor remote each in the shared
store) grows, some of those upstreams deleted since.

    python3 benchmarks/shared_cache.py [--work DIR] [--projects 50,200] [--runs 3]
        [--other DIR]...

A CI runner with a persistent cache, a developer with many stacks over months, or a test suite
on one cache leave one promisor remote per upstream in `<cache>/store.git`; git's own fetch of
an object the store lacks asks each of them in turn, one `git fetch` each (a deleted local
upstream too). The measured project (the one in the middle of the store's list of remotes,
whose upstream is kept) has a fix kept as landed under `upstreamed/` whose recorded landing
commit (`Applied-Upstream: commit:...`) and `Base` the cache never fetched (a rewritten upstream
history, a colleague's cache): asked whether the store has them, git fetched each on demand
from every remote in turn.

Built once under --work (default: /tmp/patchforge-shared-cache-bench), with this tree's
patchforge, grown for each larger --projects count: N upstream repositories (12 files each,
all different), N projects made with `init`, `upstream add`, a one-line fix, `fetch` and
`overlays`; then the upstreams numbered 1 and 3 modulo 5 (40%) are deleted (moved to
`--work`/gone, put back before a larger count is built). The store's
configuration as it stands then is put back before each timed command, so every source tree
(this one, and each `--other DIR`, e.g. `git archive REV | tar -x -C DIR`) meets the same
cache, run alternately after one untimed run of each; the table gives the median wall-clock
seconds of --runs runs. Both
trees must print the same `status`.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
ABSENT = "1234567890abcdef1234567890abcdef12345678"


def _environ(work: Path) -> None:
    os.environ.update({
        "HOME": str(work / "home"), "PATCHFORGE_CACHE": str(work / "cache"),
        "XDG_CACHE_HOME": str(work / "home" / ".cache"),
        "XDG_CONFIG_HOME": str(work / "home" / ".config"),
        "GIT_CONFIG_NOSYSTEM": "1", "GIT_AUTHOR_NAME": "A", "GIT_AUTHOR_EMAIL": "a@example.com",
        "GIT_COMMITTER_NAME": "A", "GIT_COMMITTER_EMAIL": "a@example.com",
        "GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "init.defaultBranch",
        "GIT_CONFIG_VALUE_0": "main", "NO_COLOR": "1",
        "PYTHONPYCACHEPREFIX": str(work / "pycache"),
    })
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    (work / "home").mkdir(parents=True, exist_ok=True)


def _cli(root: Path | None, *args: str) -> None:
    from patchforge.cli import main

    argv = (["--root", str(root)] if root else []) + list(args)
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            main(argv)
    except SystemExit as exc:
        if exc.code not in (0, None):
            raise RuntimeError(f"patchforge {' '.join(argv)} -> {exc.code}") from None


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                          text=True).stdout


def _patch(base: str, path: str, lines: list[str], at: int, new: str, what: str) -> str:
    first = max(0, at - 3)
    context = lines[first:at], lines[at + 1:at + 4]
    count = len(context[0]) + 1 + len(context[1])
    return (f"Description: {what}\nAuthor: A <a@example.com>\nUpstream-Status: Pending\n"
            f"Upstream: up\nBase: {base}\n\nwhy\n---\n--- a/{path}\n+++ b/{path}\n"
            f"@@ -{first + 1},{count} +{first + 1},{count} @@\n"
            + "".join(" " + x for x in context[0]) + "-" + lines[at] + "+" + new
            + "".join(" " + x for x in context[1]))


def _make(work: Path, i: int) -> None:
    up, root = work / "ups" / f"u{i}", work / "projects" / f"p{i}"
    for stale in (up, root):
        shutil.rmtree(stale, ignore_errors=True)
    up.mkdir(parents=True)
    _git(up, "init", "-q")
    for k in range(12):
        (up / f"m{k}.py").write_text("".join(f"def f{j}():\n    return {i * 1000 + j}\n\n"
                                             for j in range(20)))
    _git(up, "add", "-A")
    _git(up, "commit", "-q", "-m", "v1")
    _git(up, "tag", "v1")
    _cli(None, "init", "--standalone", str(root))
    _cli(root, "upstream", "add", "up", "--git", str(up), "--at", "v1",
         "--install-root", "/opt/site")
    base = _git(up, "rev-parse", "v1").strip()
    lines = (up / "m3.py").read_text().splitlines(keepends=True)
    at = lines.index(f"    return {i * 1000 + 5}\n")
    series = root / "series" / "up"
    series.mkdir(parents=True, exist_ok=True)
    (series / "fix.patch").write_text(
        _patch(base, "m3.py", lines, at, f"    return {i * 1000 + 5} + 1\n", "fix"))
    (series / "series").write_text("fix.patch\n")
    _cli(root, "fetch")
    _cli(root, "overlays")
    (root / ".made").write_text("")


def _kept_fix(up: Path, root: Path, i: int) -> None:
    """A fix kept as landed (its line is the pin's) whose recorded landing commit and Base the
    cache never fetched (a rewritten upstream history, a colleague's cache)."""
    kept = root / "series" / "up" / "upstreamed"
    kept.mkdir(exist_ok=True)
    lines = (up / "m3.py").read_text().splitlines(keepends=True)
    at = lines.index(f"    return {i * 1000 + 7}\n")
    text = _patch(ABSENT, "m3.py", lines[:at] + ["    return 1\n"] + lines[at + 1:], at,
                  lines[at], "an old fix")
    (kept / "old.patch").write_text(text.replace(
        "Upstream-Status: Pending\n", f"Upstream-Status: Accepted\nApplied-Upstream: "
        f"commit:{ABSENT}\n"))


def _timed(tree: Path, root: Path, config: Path, saved: bytes, args: list[str]
           ) -> tuple[float, bytes]:
    config.write_bytes(saved)  # the cache as found, whatever the run before let go
    env = {**os.environ, "PYTHONPATH": str(tree)}
    started = time.perf_counter()
    # (Run from the tree: `-m` puts the working directory first on the path.)
    proc = subprocess.run([sys.executable, "-m", "patchforge", "--root", str(root), *args],
                          capture_output=True, env=env, cwd=tree)
    took = time.perf_counter() - started
    if proc.returncode not in (0, 1):
        raise RuntimeError(f"{tree}: {args} -> {proc.returncode}: {proc.stderr.decode()}")
    return took, proc.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, default=Path("/tmp/patchforge-shared-cache-bench"))
    parser.add_argument("--projects", default="50,200")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--other", type=Path, action="append", default=[])
    args = parser.parse_args()
    work = args.work.resolve()
    _environ(work)
    sys.path.insert(0, str(HERE))
    trees = [HERE] + [tree.resolve() for tree in args.other]
    print(f"{'projects':>8} {'remotes':>7} {'gone':>5}  " + "  ".join(
        f"{'status ' + tree.name:>24} {'overlays ' + tree.name:>24}" for tree in trees))
    gone_dir = work / "gone"
    gone_dir.mkdir(parents=True, exist_ok=True)
    for count in (int(n) for n in args.projects.split(",")):
        # The upstreams "deleted" at a smaller count are put back first: a build by this tree
        # would otherwise let their remotes go before an earlier tree met them.
        for moved in gone_dir.iterdir():
            moved.rename(work / "ups" / moved.name)
        for i in range(count):
            if not (work / "projects" / f"p{i}" / ".made").exists():
                _make(work, i)
        for i in range(1, count):
            if i % 5 in (1, 3) and (work / "ups" / f"u{i}").exists():
                (work / "ups" / f"u{i}").rename(gone_dir / f"u{i}")
        measured = count // 2 - (count // 2) % 5  # (0 modulo 5: its upstream is kept)
        root = work / "projects" / f"p{measured}"
        _kept_fix(work / "ups" / f"u{measured}", root, measured)
        config = work / "cache" / "store.git" / "config"
        saved = config.read_bytes()
        remotes = saved.count(b"[remote ")
        gone = sum(1 for i in range(count) if not (work / "ups" / f"u{i}").exists())
        times: dict[tuple[Path, str], list[float]] = {}
        said: dict[Path, bytes] = {}
        for tree in trees:  # (untimed: each tree's bytecode cached, the page cache warm)
            for command in ("status", "overlays"):
                _timed(tree, root, config, saved, [command])
        for _ in range(args.runs):
            for tree in trees:
                for command in ("status", "overlays"):
                    took, out = _timed(tree, root, config, saved, [command])
                    times.setdefault((tree, command), []).append(took)
                    if command == "status":
                        said[tree] = out
        config.write_bytes(saved)
        if len(set(said.values())) > 1:
            raise SystemExit(f"the trees' status differ: {said}")
        print(f"{count:>8} {remotes:>7} {gone:>5}  " + "  ".join(
            f"{statistics.median(times[(tree, 'status')]):>23.2f}s"
            f" {statistics.median(times[(tree, 'overlays')]):>23.2f}s" for tree in trees),
            flush=True)


if __name__ == "__main__":
    main()
