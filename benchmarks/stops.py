#!/usr/bin/env python3
"""Where users wait on a stop: a real AITER series that stops many times, next to `git rebase`.

    python3 benchmarks/stops.py [--repo DIR] [--branch zxe/fused_dispatch_gemm1_gfx1250] \
        [--target COMMIT] [--runs 3] [--vllm] [--other DIR] [--venv]

The series is a real one, built once (cached under `<bench>/aiter-stops-*`): an AITER work
branch's history since it left the main branch, one patch per first-parent commit (a merge into
the branch is one patch of what it brought), replayed onto the commit where it left. The default
branch gives 93 patches; rebased onto the default target, git stops on the number of them the
table says. The same commits become a patchforge project (`import git`) whose `git` upstream is
the AITER repository.

Timed, side by side in one run (median of --runs):

  series   git rebase TARGET, then `git rebase --skip` at every stop, to the end
  series   patchforge rebase --to TARGET, then `patchforge rebase --skip` at every stop
  one      patchforge rebase --skip (one stop resolved: the median of the run's skips)
  one      patchforge edit NAME, patchforge new NAME (one command each, on the AITER tree)

With --vllm, `edit` and `new` are also timed on a wheel upstream made of the vllm 0.32.0 wheel
(5,444 files, 824 MB). The repository is a local clone of github.com/ROCm/aiter (`--repo`, or
PATCHFORGE_BENCH_AITER); nothing is fetched from the network except the wheel, when missing.
The code measured is the patchforge beside this script (PYTHONPATH), not whatever is installed;
`--other DIR` times a second source tree the same way in the same run (e.g. an earlier commit,
`git archive REV | tar -x -C DIR`), for before/after figures taken side by side. Each row gives
the wall time and the CPU time (user + system of the command and its children), which a loaded
machine disturbs less. With --venv each tree is timed a second time as the README installs it
(`pip install TREE` in a virtual environment, built once per content under `<bench>/venvs/`):
the rows a user waits on, without the editable install's import finder and the `.pth` hooks of
this interpreter's site-packages that every start through PYTHONPATH pays.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from scenario import bench_dir, git, git_env, log  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
SERIES_FORMAT = 1


def default_repo() -> Path | None:
    explicit = os.environ.get("PATCHFORGE_BENCH_AITER")
    if explicit:
        return Path(explicit)
    mirror = Path("/work/.mirror/ROCm+aiter/repo")
    return mirror if mirror.is_dir() else None


def pf_env(cache: Path, code: Path | None = REPO) -> dict[str, str]:
    env = git_env({"PATCHFORGE_CACHE": str(cache), "NO_COLOR": "1", "PATCHFORGE_DATE": "2026-01-01"})
    if code is not None:
        env["PYTHONPATH"] = str(code)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(bench_dir() / "pycache")
    env.setdefault("PATCHFORGE_WHEELS", os.environ.get("PATCHFORGE_WHEELS", ""))
    if not env["PATCHFORGE_WHEELS"]:
        env.pop("PATCHFORGE_WHEELS")
    return env


@dataclass(frozen=True)
class Build:
    """One patchforge to time: a source tree run by this interpreter through PYTHONPATH, or
    (`script`) the console script of a virtual environment with `pip install TREE` in it, as
    the README installs it: without the editable install's import finder and this
    interpreter's site hooks, which every start of the first pays."""
    label: str
    code: Path
    script: Path | None = None

    def env(self, cache: Path) -> dict[str, str]:
        return pf_env(cache, None if self.script else self.code)

    def argv(self) -> list[str]:
        return [str(self.script)] if self.script else [sys.executable, "-m", "patchforge"]


SOURCE = Build("", REPO)


def pf(root: Path, env: dict, *args: str, ok=(0,), build: Build = SOURCE
       ) -> subprocess.CompletedProcess:
    # From the project: `python -m` puts the working directory first on sys.path, and a
    # patchforge source tree there would win over the one PYTHONPATH names.
    proc = subprocess.run([*build.argv(), "--root", str(root), *args],
                          env=env, capture_output=True, cwd=root)
    if proc.returncode not in ok:
        raise RuntimeError(f"patchforge {' '.join(args)} -> {proc.returncode}\n"
                           + proc.stderr.decode("utf-8", "replace")[-3000:])
    return proc


# ----------------------------------------------------------------------------------------------
# Building the series

def _replay(checkout: Path, base: str, commits: list[str]) -> list[str]:
    """The first-parent chain `commits` replayed onto `base` in `checkout` as plain commits (a
    merge becomes one commit of what it brought in), without their binary files (compiled
    kernels: a text patch cannot carry them, so the series leaves them as upstream has them);
    the new commit ids, with the original messages and authors."""
    git(checkout, "checkout", "-q", "-f", "--detach", base)
    picked = []
    for commit in commits:
        numstat = git(checkout, "diff", "--numstat", "--no-renames", "-z", f"{commit}^1", commit)
        binary = [record.split(b"\t", 2)[2].decode("utf-8", "surrogateescape")
                  for record in numstat.split(b"\0") if record.startswith(b"-\t-\t")]
        # Nor a submodule's commit (mode 160000): the series leaves it as upstream has it too.
        raw = git(checkout, "diff", "--raw", "--no-renames", "-z", f"{commit}^1", commit)
        fields = raw.split(b"\0")
        gitlinks = [path.decode("utf-8", "surrogateescape")
                    for meta, path in zip(fields[::2], fields[1::2])
                    if b"160000" in meta.lstrip(b":").split(b" ")[:2]]
        excludes = [f":(exclude,literal){path}" for path in binary + gitlinks]
        diff = git(checkout, "diff", "--binary", "--no-renames", f"{commit}^1", commit, "--",
                   ".", *excludes)
        if diff.strip():
            git(checkout, "apply", "--index", "--whitespace=nowarn", input=diff)
        meta = git(checkout, "log", "-1", "--format=%an%x00%ae%x00%ad%x00%B", "--date=raw",
                   commit).decode("utf-8", "surrogateescape").split("\0", 3)
        env = git_env({"GIT_AUTHOR_NAME": meta[0], "GIT_AUTHOR_EMAIL": meta[1],
                       "GIT_AUTHOR_DATE": meta[2]})
        git(checkout, "commit", "-q", "--allow-empty", "--no-verify", "-F", "-",
            input=meta[3].encode("utf-8", "surrogateescape"), env=env)
        picked.append(git(checkout, "rev-parse", "HEAD").decode().strip())
    return picked


def _same_tree_fork(repo: Path, tip: str, head: str) -> tuple[str, str]:
    """(the first first-parent ancestor of `tip` whose tree a commit of `head` has, that commit
    of `head`): where a branch of a rewritten history left it."""
    trees: dict[str, str] = {}
    for line in git(repo, "log", "--format=%T %H", head).decode().splitlines():
        tree, commit = line.split()
        trees.setdefault(tree, commit)
    for line in git(repo, "log", "--first-parent", "--format=%T %H", tip).decode().splitlines():
        tree, commit = line.split()
        if tree in trees:
            return commit, trees[tree]
    raise RuntimeError(f"{tip} shares no tree with {head}")


def build_series(repo: Path, branch: str) -> Path:
    """The series: `branch`'s first-parent history since it left the default branch, one
    patch per commit (a merge into the branch is one patch of what it brought); cached by the
    ids involved."""
    head = git(repo, "rev-parse", "HEAD").decode().strip()
    tip = git(repo, "rev-parse", branch + "^{commit}").decode().strip()
    fork = subprocess.run(["git", "-C", str(repo), "merge-base", tip, head], capture_output=True,
                          env=git_env())
    base_id = fork.stdout.decode().strip() if fork.returncode == 0 else None
    # A branch of the history AITER's main branch had before it was rewritten (the same trees
    # under other commit ids) has no merge base: it left the branch where its first-parent
    # chain reaches a tree the branch has, and is replayed onto that commit.
    old_fork = None
    if base_id is None:
        old_fork, base_id = _same_tree_fork(repo, tip, head)
    work = bench_dir() / f"aiter-stops-{tip[:10]}-f{SERIES_FORMAT}"
    if (work / "done.json").is_file():
        return work
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    checkout = work / "checkout"
    log(f"cloning {repo} for the series")
    subprocess.run(["git", "clone", "-q", "--no-checkout", str(repo), str(checkout)], check=True,
                   env=git_env())
    chain = git(repo, "rev-list", "--reverse", "--first-parent",
                f"{old_fork or base_id}..{tip}").decode().split()
    if old_fork is None:
        # The series starts where the chain does (the first commit's parent): from there
        # every commit replays exactly.
        base_id = git(repo, "rev-parse", chain[0] + "^1").decode().strip()
    series = _replay(checkout, base_id, chain)
    log(f"{branch}: {len(series)} commits on {base_id[:10]}")
    git(checkout, "update-ref", "refs/bench/series", series[-1])
    # The patchforge project: the AITER repository as a git upstream, the series imported.
    env = pf_env(work / "pf-cache")
    template = work / "pf-template"
    template.mkdir()
    pf(template, env, "init", "--standalone")
    pf(template, env, "upstream", "add", "aiter", "--git", str(repo), "--at", base_id)
    pf(template, env, "import", "git", f"{base_id}..{series[-1]}", "--repo", str(checkout),
       "--upstream", "aiter")
    names = (template / "series" / "aiter" / "series").read_text().split()
    (work / "done.json").write_text(json.dumps({
        "branch": branch, "base": base_id, "patches": len(series), "names": names,
        "tip": series[-1]}, indent=1) + "\n")
    return work


# ----------------------------------------------------------------------------------------------
# Timing

def _fresh_copy(template: Path, where: Path) -> None:
    shutil.rmtree(where, ignore_errors=True)
    shutil.copytree(template, where, symlinks=True)


class Clock:
    """Wall and CPU time (user + system of the children this process waited for) since start."""

    def __init__(self) -> None:
        self.wall = time.perf_counter()
        self.cpu = _children_cpu()

    def read(self) -> tuple[float, float]:
        return time.perf_counter() - self.wall, _children_cpu() - self.cpu


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def time_git(work: Path, target: str) -> tuple[tuple[float, float], list[tuple[float, float]], int]:
    """((wall, cpu) of the whole run, (wall, cpu) of each --skip, stops) of git rebase TARGET
    with --skip at each stop."""
    checkout = work / "checkout"
    info = json.loads((work / "done.json").read_text())
    git(checkout, "checkout", "-q", "-f", "-B", "bench-run", info["tip"])
    skips = []
    whole = Clock()
    proc = subprocess.run(["git", "rebase", target], cwd=checkout, capture_output=True,
                          env=git_env())
    while proc.returncode != 0:
        one = Clock()
        proc = subprocess.run(["git", "rebase", "--skip"], cwd=checkout, capture_output=True,
                              env=git_env())
        skips.append(one.read())
    return whole.read(), skips, len(skips)


def time_patchforge(work: Path, target: str, scratch: Path, build: Build = SOURCE):
    """((wall, cpu) of the whole run, (wall, cpu) of each --skip, stops)."""
    project = scratch / "pf-run"
    _fresh_copy(work / "pf-template", project)
    env = build.env(work / "pf-cache")
    skips = []
    whole = Clock()
    # A move finished by `--skip` exits 1: the fixes it set aside are in skipped/, in none of
    # the overlays (earlier versions exited 0 there).
    proc = pf(project, env, "rebase", "--to", target, ok=(0, 1, 3), build=build)
    while proc.returncode == 3:
        one = Clock()
        proc = pf(project, env, "rebase", "--skip", ok=(0, 1, 3), build=build)
        skips.append(one.read())
    return whole.read(), skips, len(skips)


def time_one(project: Path, env: dict, build: Build, *args: str, ok=(0,)
             ) -> tuple[float, float]:
    clock = Clock()
    pf(project, env, *args, ok=ok, build=build)
    return clock.read()


def edit_and_new(project: Path, env: dict, name: str, runs: int, build: Build = SOURCE
                 ) -> dict[str, list]:
    """(wall, cpu) of each `edit NAME`, `refresh` (unchanged) and `new` (then deleted again)."""
    times: dict[str, list] = {"edit": [], "refresh": [], "new": []}
    for run in range(runs):
        times["edit"].append(time_one(project, env, build, "edit", name))
        times["refresh"].append(time_one(project, env, build, "refresh"))
        new_name = f"bench-new-{run}"
        times["new"].append(time_one(project, env, build, "new", new_name))
        pf(project, env, "refresh", ok=(0, 1, 2), build=build)
        pf(project, env, "delete", new_name, ok=(0, 1, 2), build=build)
    return times


def median_pair(pairs: list[tuple[float, float]]) -> tuple[float, float]:
    if not pairs:
        return float("nan"), float("nan")
    return statistics.median(p[0] for p in pairs), statistics.median(p[1] for p in pairs)


def vllm_project(scratch: Path, build: Build = SOURCE) -> tuple[Path, dict, str]:
    """A project on the vllm 0.32.0 wheel with one real-sized patch (a line added to a file)."""
    cache = bench_dir() / "pf-cache-vllm-stops"
    env = build.env(cache)
    root = scratch / f"pf-vllm-{build.code.name}{'-venv' if build.script else ''}"
    root.mkdir()
    pf(root, env, "init", "--standalone", build=build)
    pf(root, env, "upstream", "add", "vllm", "--wheel", "vllm", "--at", "0.32.0", build=build)
    pf(root, env, "new", "fix-one", "-m", "a one-line fix", build=build)
    work = root / ".patchforge" / "work" / "vllm"
    target = work / "vllm" / "envs.py"
    target.parent.mkdir(parents=True, exist_ok=True)
    if not target.exists():
        pf(root, env, "add", "vllm/envs.py", build=build)
    target.write_bytes(target.read_bytes() + b"# a local fix\n")
    pf(root, env, "refresh", build=build)
    return root, env, "fix-one"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", type=Path, default=default_repo())
    parser.add_argument("--branch", default="zxe/fused_dispatch_gemm1_gfx1250")
    parser.add_argument("--target", default="d7c4c77bf012474869464bab9ab6553b6c08003f",
                        help="default: three commits of the main branch after the series' base")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--vllm", action="store_true", help="also edit/new on the vllm wheel")
    parser.add_argument("--other", type=Path, action="append", default=[],
                        help="another patchforge source tree to time side by side")
    parser.add_argument("--venv", action="store_true",
                        help="time each tree as the README installs it too (pip install TREE "
                             "in a virtual environment, its console script)")
    args = parser.parse_args(argv)
    if args.repo is None or not Path(args.repo).is_dir():
        raise SystemExit("no AITER repository: pass --repo (a clone of github.com/ROCm/aiter)")
    work = build_series(Path(args.repo), args.branch)
    info = json.loads((work / "done.json").read_text())
    target = git(Path(args.repo), "rev-parse", args.target + "^{commit}").decode().strip()
    scratch = work / "scratch"
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir()
    codes = [SOURCE] + [Build(f" [{d.name}]", d.resolve()) for d in args.other]
    if args.venv:
        from run import readme_install
        for build in list(codes):
            script = readme_install(build.code)
            if script is not None:
                codes.append(Build(f"{build.label} (venv)", build.code, script))
    print(f"AITER {args.branch}: {info['patches']} patches on {info['base'][:10]}, rebased onto "
          f"{target[:10]}; {args.runs} runs; nproc {os.cpu_count()}; load average at the start "
          f"{os.getloadavg()[0]:.1f}", flush=True)
    git_runs, git_skips, git_stops = [], [], 0
    pf_runs: dict[str, list] = {build.label: [] for build in codes}
    pf_skips: dict[str, list] = {build.label: [] for build in codes}
    pf_stops: dict[str, int] = {}
    for _ in range(args.runs):  # the tools take turns, so that a change of load hits them all
        whole, skips, git_stops = time_git(work, target)
        git_runs.append(whole)
        git_skips += skips
        for build in codes:
            whole, skips, pf_stops[build.label] = time_patchforge(work, target, scratch, build)
            pf_runs[build.label].append(whole)
            pf_skips[build.label] += skips
    rows = [("series", f"git rebase + --skip at each stop ({git_stops} stops)",
             median_pair(git_runs), None),
            ("one", "git rebase --skip (median of all skips)", median_pair(git_skips), None)]
    for label in (build.label for build in codes):
        rows += [("series", f"patchforge rebase + --skip at each stop ({pf_stops[label]} stops)"
                  f"{label}", median_pair(pf_runs[label]), None),
                 ("one", f"patchforge rebase --skip (median of all skips){label}",
                  median_pair(pf_skips[label]), 0.3)]
    name = info["names"][len(info["names"]) // 2]
    for build in codes:
        project = scratch / f"pf-edit-{build.code.name}{'-venv' if build.script else ''}"
        _fresh_copy(work / "pf-template", project)
        one = edit_and_new(project, build.env(work / "pf-cache"), name, args.runs, build)
        rows += [("one", f"patchforge {k} (AITER){build.label}", median_pair(v), 0.3)
                 for k, v in one.items()]
    if args.vllm:
        for build in codes:
            root, env, vname = vllm_project(scratch, build)
            one = edit_and_new(root, env, vname, args.runs, build)
            rows += [("one", f"patchforge {k} (vllm wheel){build.label}", median_pair(v), 0.3)
                     for k, v in one.items()]
    reference = rows[0][2][0]
    print(f"\nload average at the end: {os.getloadavg()[0]:.1f}\n")
    print("| work | command | wall (median) | CPU (median) | wall vs git rebase | target |")
    print("|---|---|---:|---:|---:|---|")
    for kind, label, (wall, cpu), limit in rows:
        ratio = f"{wall / reference:.2f}x" if kind == "series" else ""
        if kind == "series" and "patchforge" in label:
            verdict = f"<= 2x: {'met' if wall <= 2 * reference else 'MISSED'}"
        elif limit is not None:
            verdict = f"< {limit} s: {'met' if wall < limit else 'MISSED'}"
        else:
            verdict = ""
        print(f"| {kind} | `{label}` | {wall:.3f} s | {cpu:.3f} s | {ratio} | {verdict} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
