#!/usr/bin/env python3
"""`status --against` on a long real history, next to `git cherry` on the same question.

    python3 benchmarks/status_speed.py [--repo DIR] [--branch zxe/fused_dispatch_gemm1_gfx1250]
        [--targets v0.1.18,v0.1.20,main] [--runs 5] [--other DIR]
        [--long] [--long-branch refs/tags/archive/felix/mla_debug_dsread] [--by-name]
        [--first-asking [--asked-before TARGET]] [--plain]

The series is the real 93-patch AITER work branch benchmarks/stops.py builds (cached under
`<bench>/aiter-stops-*`, built on first use): a patchforge project whose `git` upstream is the
AITER repository, pinned where the branch left the main branch, and the same commits on a
clone. For every target both tools answer "which of these patches are already upstream":

  patchforge   patchforge status --against TARGET --json   (the whole command, every patch judged)
  git cherry   git cherry TARGET <series tip> <base>        (patch-id equality only)

`--long` adds the question over the longest real history the AITER repository offers (its main
branch holds 2,830 commits; no branch of it left earlier than 1,341 commits before its tip):
a 67-commit branch of the history main had before it was rewritten (same trees, other commit
ids), replayed the same way onto the main commit with the tree it left from, 2.5k commits
before main's tip, and asked against main.

patchforge is given the target's commit id (the store answers it without asking the remote);
with `--by-name` it is given the target as named (`v0.1.18`, `main`): a branch is fetched again
and a tag is checked against the remote (one `git ls-remote --tags`), as a user naming it meets.

Each is run --runs times, alternating, after one untimed run of each (the store has the target's
history, the page cache is warm); the table gives the median wall-clock time, the median CPU
time (user + system of the process and its children: what the command costs when the machine
is shared), and patchforge's ratio to git. The target of the speed work is a ratio of 3 or less.
The code measured is the patchforge beside this script (PYTHONPATH), with its bytecode cached
the way an installed package has it; `--other DIR` times a second source tree the same way in
the same run (e.g. an earlier commit, `git archive REV | tar -x -C DIR`), alternating with the
first, for before/after figures taken side by side. Both must give the same answer.

What a command keeps in the cache's `kept/` for the next one (a release's loose code, git's
answers about the history between a pin and a target, and about contents: its 3-way merges
and own-place diffs, `kept/contents/`) is read back by every run after the
untimed one. `--first-asking` empties `kept/` before each patchforge run instead: the figure of
the first command to ask about a target (a nightly asked about once), next to git's. With
`--asked-before v0.1.20` each emptying is followed by one untimed command asking about v0.1.20:
the figure of a new nightly asked after an earlier one (what the earlier one kept is there, as
it is for a user following nightlies).

`--plain` times the command as a user types it, `patchforge status --against TARGET` (the
table; hunks a gone file makes obsolete are not judged, since no line of the table shows
them), and checks its answer with one more, untimed, `--json` run of each source tree.
"""
from __future__ import annotations

import argparse
import json
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]
from scenario import git, git_env, log  # noqa: E402
from stops import build_series, default_repo, pf_env  # noqa: E402


def timed(argv: list[str], **kw) -> tuple[float, float, subprocess.CompletedProcess]:
    """(wall seconds, CPU seconds of the process and its children, the result)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, **kw)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, proc


def measure(args, work: Path, targets: list[str]) -> list[dict]:
    """The table's rows for one series (a directory `build_series` made): each target, each source
    tree."""
    info = json.loads((work / "done.json").read_text())
    checkout = work / "checkout"
    project = work / "status-speed"
    if not project.is_dir():
        shutil.copytree(work / "pf-template", project, symlinks=True)
    codes = [("patchforge", ROOT)] + [(f"patchforge [{d.name}]", d.resolve()) for d in args.other]
    envs = {label: pf_env(work / "pf-cache", code) for label, code in codes}
    rows = []
    for target in targets:
        commit = git(args.repo, "rev-parse", f"{target}^{{commit}}").decode().strip()
        behind = git(args.repo, "rev-list", "--count",
                     f"{info['base']}..{commit}").decode().strip()
        json_argv = [sys.executable, "-m", "patchforge", "--root", str(project), "status",
                     "--against", target if args.by_name else commit, "--json"]
        pf_argv = json_argv[:-1] if args.plain else json_argv
        git_argv = ["git", "cherry", commit, info["tip"], info["base"]]
        walls: dict[str, list[float]] = {label: [] for label, _ in codes + [("git", None)]}
        cpus: dict[str, list[float]] = {label: [] for label in walls}
        landed: dict[str, int] = {}
        answers: dict[str, bytes] = {}
        for run in range(args.runs + 1):
            for label, _ in codes:
                if args.first_asking:
                    shutil.rmtree(work / "pf-cache" / "kept", ignore_errors=True)
                    for before in args.asked_before:
                        asked = subprocess.run(
                            [*json_argv[:6], "--against", git(args.repo, "rev-parse", (
                                f"{before}^{{commit}}")).decode().strip(), "--json"],
                            capture_output=True, env=envs[label], cwd=project)
                        if asked.returncode not in (0, 1):
                            raise RuntimeError(asked.stderr.decode(errors="replace")[-2000:])
                # From the project: `python -m` puts the working directory first on sys.path,
                # where a patchforge source tree would win over the one PYTHONPATH names.
                wall, cpu, proc = timed(pf_argv, env=envs[label], cwd=project)
                if proc.returncode not in (0, 1):
                    raise RuntimeError(proc.stderr.decode(errors="replace")[-2000:])
                if run:
                    walls[label].append(wall)
                    cpus[label].append(cpu)
                if args.plain and run < args.runs:
                    continue
                if args.plain:  # the answer, compared below, from one untimed `--json` run
                    proc = subprocess.run(json_argv, capture_output=True, env=envs[label],
                                          cwd=project)
                    if proc.returncode not in (0, 1):
                        raise RuntimeError(proc.stderr.decode(errors="replace")[-2000:])
                patches = json.loads(proc.stdout)["patches"]
                landed[label] = sum(p["state"] == "upstreamed" for p in patches)
                answers[label] = json.dumps([(p["name"], p["state"], p["rebase"])
                                             for p in patches]).encode()
            wall, cpu, proc = timed(git_argv, cwd=checkout, env=git_env())
            if run:
                walls["git"].append(wall)
                cpus["git"].append(cpu)
            landed["git"] = sum(line.startswith("-") for line in proc.stdout.decode().splitlines())
        if len(set(answers.values())) > 1:
            raise RuntimeError(f"{target}: the source trees disagree on the patches' states")
        for label, _ in codes:
            rows.append({"series": f"{info['patches']} patches of {info['branch']}",
                         "target": target, "code": label, "commits": int(behind),
                         "pf_landed": landed[label], "git_landed": landed["git"],
                         "pf_wall": statistics.median(walls[label]),
                         "pf_cpu": statistics.median(cpus[label]),
                         "git_wall": statistics.median(walls["git"]),
                         "git_cpu": statistics.median(cpus["git"])})
        log(f"{target}: done")
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", type=Path, default=default_repo())
    parser.add_argument("--branch", default="zxe/fused_dispatch_gemm1_gfx1250")
    parser.add_argument("--targets", default="v0.1.18,v0.1.20,main")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--other", type=Path, action="append", default=[],
                        help="another patchforge source tree to time side by side")
    parser.add_argument("--long", action="store_true",
                        help="add the series of --long-branch against main (2.5k commits)")
    parser.add_argument("--long-branch", default="refs/tags/archive/felix/mla_debug_dsread")
    parser.add_argument("--by-name", action="store_true",
                        help="give patchforge the targets as named (a tag is checked against "
                             "the remote), not their commit ids")
    parser.add_argument("--first-asking", action="store_true",
                        help="empty the cache's kept/ before each patchforge run: the first "
                             "command asking about a target")
    parser.add_argument("--asked-before", action="append", default=[], metavar="TARGET",
                        help="with --first-asking: ask TARGET (untimed) after emptying kept/, "
                             "before each timed run: a new nightly asked after an earlier one")
    parser.add_argument("--plain", action="store_true",
                        help="time `status --against TARGET` as typed (the table), not "
                             "`--json`; the answers are compared by one untimed --json run")
    args = parser.parse_args(argv)
    if args.repo is None:
        parser.error("--repo DIR (a clone of github.com/ROCm/aiter) or PATCHFORGE_BENCH_AITER")
    series = [(args.branch, args.targets.split(","))]
    if args.long:
        series.append((args.long_branch, ["main"]))
    rows = []
    for branch, targets in series:
        rows += measure(args, build_series(args.repo.resolve(), branch), targets)
    print(f"status --against{'' if args.plain else ' --json'} next to git cherry, "
          f"median of {args.runs} runs"
          + (" (first asking: the cache's kept/ emptied before each patchforge run"
             + "".join(f", then {before} asked" for before in args.asked_before) + ")"
             if args.first_asking else ""))
    print("| series | target | commits base..target | code | patchforge wall | git cherry wall | "
          "ratio | patchforge CPU | git cherry CPU | CPU ratio | landed (patchforge / git) |")
    print("|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['series']} | {r['target']} | {r['commits']} | {r['code']} | "
              f"{r['pf_wall']:.3f} s | {r['git_wall']:.3f} s | "
              f"{r['pf_wall'] / r['git_wall']:.1f}x | "
              f"{r['pf_cpu']:.3f} s | {r['git_cpu']:.3f} s | "
              f"{r['pf_cpu'] / max(r['git_cpu'], 1e-3):.1f}x | "
              f"{r['pf_landed']} / {r['git_landed']} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
