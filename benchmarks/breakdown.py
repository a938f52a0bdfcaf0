#!/usr/bin/env python3
"""Where one patchforge command's wall time goes, next to `git rebase` of the same series.

    python3 benchmarks/breakdown.py [--patches 30|300] [--seed 1] [--runs 5] [--command rebase|status]

Runs the command `--runs` times on the benchmark's work directory (built by run.py, cached) with
git's own tracing (GIT_TRACE2_EVENT) and splits each run's wall time into:

  interpreter   `python3 -c pass` on the same interpreter (measured separately)
  imports       what the command imports beyond `python3 -c pass`'s own start-up, from
                `python -X importtime` (that flag adds a little of its own)
  start-up      from exec to the first git process (the persistent `cat-file`): the two
                above, plus reading the configuration and the lock
  git           the time during which at least one git process of the command runs (the union
                of their intervals, as git traces them; git's own children are inside them),
                but for the persistent `git cat-file --batch`, which waits for the whole command
  python        the rest: patchforge's own work while no git process (but those two) runs

Each part is printed in milliseconds (median over the runs) and as a share of `git rebase`'s median
wall time on the same series, the reference of every ratio in run.py. Nothing is asserted.
"""
from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run  # noqa: E402
from scenario import TARGET  # noqa: E402


def _git_intervals(trace: Path) -> tuple[float | None, list[tuple[float, float]]]:
    """When the first git process started, and (start, end) of every git process the command
    started itself, from a GIT_TRACE2_EVENT file; git's children (a sid with a '/') run inside
    their parent's interval. The processes that live for the whole command are left out of the
    intervals: the persistent `git cat-file --batch`, which waits for questions, and the
    range-diff's `git fast-import`, which takes file contents as the rebase makes them."""
    starts, ends, servers = {}, {}, set()
    for line in trace.read_text().splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        sid = event.get("sid", "")
        if "/" in sid:
            continue
        when = event.get("time")
        if when is None:
            continue
        stamp = _seconds(when)
        if event.get("event") == "start":
            starts[sid] = stamp
            argv = event.get("argv") or []
            if ("cat-file" in argv and "--batch" in argv) or "fast-import" in argv:
                servers.add(sid)
        elif event.get("event") in ("exit", "atexit"):
            ends[sid] = max(ends.get(sid, stamp), stamp)
    return (min(starts.values(), default=None),
            sorted((starts[s], ends[s]) for s in starts if s in ends and s not in servers))


def _seconds(stamp: str) -> float:
    # "2026-11-29T19:43:59.220758Z"
    clock = stamp.split("T", 1)[1].rstrip("Z")
    hours, minutes, seconds = clock.split(":")
    return int(hours) * 3600 + int(minutes) * 60 + float(seconds)


def _union(intervals: list[tuple[float, float]]) -> float:
    total, end = 0.0, None
    for start, stop in intervals:
        if end is None or start > end:
            total += stop - start
            end = stop
        elif stop > end:
            total += stop - end
            end = stop
    return total


def _import_ms(command: list[str], cwd: Path, env: dict) -> float:
    """The sum of the top-level imports' cumulative times of one run of the command, less those
    of `python3 -c pass` (the interpreter's own start, `site` and what it loads)."""
    return _imports_of([*command], cwd, env) - _imports_of(["-c", "pass"], cwd, env)


def _imports_of(arguments: list[str], cwd: Path, env: dict) -> float:
    proc = subprocess.run([sys.executable, "-X", "importtime", *arguments], cwd=cwd, env=env,
                          capture_output=True)
    total = 0
    for line in proc.stderr.decode(errors="replace").splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        _, cumulative, name = line[len("import time:"):].split("|")
        if not name.startswith("  "):  # depth 0: a top-level import
            total += int(cumulative)
    return total / 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--patches", type=int, default=30)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--command", choices=("rebase", "status"), default="rebase")
    args = parser.parse_args()

    work = run.build_work(args.patches, args.seed)
    env = run.pf_env(work)
    exe = run.patchforge_exe()
    scratch = work.root / "scratch"
    scratch.mkdir(exist_ok=True)
    project = scratch / "pf-breakdown"

    reference = run.time_command(
        "git-rebase", "git rebase v0.33.0", f"git rebase -q v{TARGET}", cwd=work.run_checkout,
        env=env, runs=args.runs, prepare="git rebase --abort >/dev/null 2>&1; "
                                         "git checkout -q -f -B run refs/bench/clean-orig")
    floor = run.time_command("floor", "python3 -c pass", f"{sys.executable} -c pass",
                             cwd=scratch, env=env, runs=max(args.runs, 10))

    def fresh() -> Path:
        if args.command == "rebase":
            shutil.rmtree(project, ignore_errors=True)
            shutil.copytree(work.pf_clean, project, symlinks=True)
            return project
        return work.pf_full

    verb = ["rebase", "--to", TARGET] if args.command == "rebase" else \
        ["status", "--against", TARGET]
    rows: dict[str, list[float]] = {"total": [], "start-up": [], "git": [], "python": []}
    for _ in range(args.runs + 1):  # the first run warms the caches and is not counted
        root = fresh()
        with tempfile.TemporaryDirectory() as tmp:
            trace = Path(tmp) / "trace.json"
            started = time.time()
            began = time.perf_counter()
            subprocess.run([*exe, "--root", str(root), *verb], cwd=scratch,
                           env={**env, "GIT_TRACE2_EVENT": str(trace)}, capture_output=True)
            wall = time.perf_counter() - began
            first_git, intervals = _git_intervals(trace) if trace.exists() else (None, [])
        # Trace times are UTC wall-clock seconds of the day; so is `started` once reduced.
        day_start = started % 86400
        first = first_git - day_start if first_git is not None else wall
        git_time = _union(intervals)
        rows["total"].append(wall)
        rows["start-up"].append(first)
        rows["git"].append(git_time)
        rows["python"].append(wall - first - git_time)
    for values in rows.values():
        del values[0]
    imports = statistics.median(_import_ms([*exe, "--root", str(fresh()), *verb], scratch, env)
                                for _ in range(3))

    reference_ms = reference.median * 1000
    print(f"\n## Where `patchforge {' '.join(verb)}` spends its wall time "
          f"({args.patches}-patch series, {args.runs} runs, median)\n")
    print(f"`git rebase v{TARGET}` of the same series: {reference_ms:.0f} ms "
          f"(a quarter: {reference_ms / 4:.0f} ms)\n")
    print("| part | ms | share of git rebase |")
    print("|---|---:|---:|")

    def row(name: str, ms: float) -> None:
        print(f"| {name} | {ms:.0f} | {ms / reference_ms:.2f}x |")
    row("interpreter (`python3 -c pass`)", floor.median * 1000)
    row("imports beyond the interpreter's own (`-X importtime`)", imports)
    row("start-up: exec to the first git process", statistics.median(rows["start-up"]) * 1000)
    row("git processes (union of their intervals)", statistics.median(rows["git"]) * 1000)
    row("python work outside start-up and git", statistics.median(rows["python"]) * 1000)
    row("**total**", statistics.median(rows["total"]) * 1000)


if __name__ == "__main__":
    main()
