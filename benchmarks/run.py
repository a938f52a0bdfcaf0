#!/usr/bin/env python3
"""patchforge against git rebase, StGit and quilt on a real vLLM history.

    python3 benchmarks/run.py [--patches 30|300] [--seed 1] [--quick] [--runs N] [--json FILE]
                              [--other DIR]...

Builds (once, cached under `<patchforge cache>/bench/`) the history of the vllm 0.30.0-0.33.0
Python sources and a seeded series on 0.32.0 (see scenario.py), then times the median of several
runs of (the rebase rows by time_at_phases, each run settled and started at its own point of a
second; the others with hyperfine when it is installed, else time.perf_counter around
subprocess runs):

  rebase   patchforge rebase --to 0.33.0 | git rebase v0.33.0 | stg rebase -m v0.33.0 |
           quilt push -a (a functional check: it stops at the first landed patch)
           -- all on the clean part of the series (landed + clean fixes; a conflict would stop
           every tool and measure nothing after it)
  status   patchforge status --against 0.33.0 (whole series) | git cherry
  overlays patchforge overlays, overlays --check (whole series, at 0.32.0)
  startup  patchforge --help | git --help | python3 -c pass

and prints a table with each time as a ratio to `git rebase`'s, then the landed-detection
quality of patchforge, git cherry, git rebase and stg next to the generated ground truth.
`--other DIR` adds a `patchforge rebase` row for another source tree (an earlier commit,
`git archive REV | tar -x -C DIR`), run from DIR through PYTHONPATH: a change measured against
the same `git rebase` in one run.
Nothing is asserted: a benchmark reports, it does not fail.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import mmap
import os
import platform
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import scenario  # noqa: E402
from scenario import BASE, TARGET, git, git_env, log  # noqa: E402

TARGETS = {"rebase": 0.25, "status": 0.25}


def rebase_target(patches: int) -> float:
    """The share of `git rebase`'s time a clean rebase may take: 6 times faster for a series
    of 30 patches, 8 times for 300 (the earlier target was a quarter at any length)."""
    return 1 / 8 if patches >= 300 else 1 / 6 if patches >= 30 else TARGETS["rebase"]


@dataclass
class Work:
    root: Path
    history: Path
    checkout: Path       # clone with refs/bench/{full,clean}-orig
    run_checkout: Path   # where git rebase runs
    pf_cache: Path
    pf_clean: Path       # template project, clean part of the series
    pf_full: Path        # project with the whole series (status, overlays)
    stg_template: Path
    quilt_template: Path
    kinds: dict          # patch name -> landed | clean | conflict
    base_commit: str


def patchforge_exe() -> list[str]:
    """The console script installed beside this interpreter (not a pyenv shim on PATH, which
    is a bash script costing 100-300 ms per call before Python even starts)."""
    beside = Path(sys.executable).parent / "patchforge"
    if beside.is_file():
        return [str(beside)]
    found = shutil.which("patchforge")
    return [found] if found else [sys.executable, "-m", "patchforge"]


def measured_source() -> Path:
    """The source tree of the patchforge this script measures (PYTHONPATH's, else the
    installed editable checkout)."""
    import patchforge
    return Path(patchforge.__file__).resolve().parent.parent


def readme_install(source: Path) -> Path | None:
    """The `patchforge` console script of a virtual environment with `pip install SOURCE` in
    it, as the README installs patchforge: no editable install's import finder, and none of
    the `.pth` files of the interpreter's own site-packages (this machine's imports certifi at
    every start). Built once per content of the package and pyproject.toml, cached under
    `<bench>/venvs/`; None (the row is left out) when pip cannot build it."""
    digest = hashlib.sha256()
    files = [source / "pyproject.toml",
             *sorted(path for path in (source / "patchforge").rglob("*")
                     if path.is_file() and "__pycache__" not in path.parts)]
    for path in files:
        digest.update(str(path.relative_to(source)).encode() + b"\0" + path.read_bytes())
    venv = scenario.bench_dir() / "venvs" / digest.hexdigest()[:16]
    script = venv / "bin" / "patchforge"
    if script.is_file():
        return script
    log(f"building {venv}: pip install {source}")
    shutil.rmtree(venv, ignore_errors=True)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    for step in ([sys.executable, "-m", "venv", str(venv)],
                 [str(venv / "bin" / "python"), "-m", "pip", "install", "-q",
                  "--disable-pip-version-check", str(source)]):
        proc = subprocess.run(step, capture_output=True, env=env)
        if proc.returncode != 0:
            log(f"  {' '.join(step)} failed (exit {proc.returncode}); row left out:\n"
                + proc.stderr.decode(errors="replace")[-1000:])
            shutil.rmtree(venv, ignore_errors=True)
            return None
    return script


def pf_env(work_or_cache) -> dict[str, str]:
    cache = work_or_cache.pf_cache if isinstance(work_or_cache, Work) else work_or_cache
    env = git_env({"PATCHFORGE_CACHE": str(cache), "NO_COLOR": "1"})
    env.setdefault("PATCHFORGE_WHEELS", str(scenario.wheels_dir()))
    # Measure patchforge as an installed package runs: with its bytecode cached. An environment
    # with PYTHONDONTWRITEBYTECODE=1 (some machines set it) recompiles every imported
    # patchforge module on every command; the start-up rows show that cost separately. The
    # prefix keeps the .pyc files out of the (editable) source tree.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(scenario.bench_dir() / "pycache")
    return env


def pf(env, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run([*patchforge_exe(), *args], capture_output=True, env=env)
    if check and proc.returncode != 0:
        raise RuntimeError(f"patchforge {' '.join(args)} exited {proc.returncode}:\n"
                           f"{proc.stdout.decode(errors='replace')}"
                           f"{proc.stderr.decode(errors='replace')}")
    return proc


# ----------------------------------------------------------------------------------------------
# Building the work directories (cached per count and seed)

def build_work(count: int, seed: int, reformatted: int = 0, reformatted_code: int = 0) -> Work:
    history = scenario.ensure_history()
    head = git(history, "rev-parse", "main").decode().strip()
    root = scenario.bench_dir() / (f"work-{count}-s{seed}"
                                   + (f"-r{reformatted}" if reformatted else "")
                                   + (f"-c{reformatted_code}" if reformatted_code else ""))
    pf_cache = scenario.bench_dir() / "pf-cache"
    stamp = root / "work.json"
    want = {"series-format": scenario.SERIES_FORMAT, "count": count, "seed": seed,
            "history": head}
    if reformatted:
        want["reformatted"] = reformatted
    if reformatted_code:
        want["reformatted-code"] = reformatted_code
    paths = dict(root=root, history=history, checkout=root / "checkout",
                 run_checkout=root / "run-checkout", pf_cache=pf_cache,
                 pf_clean=root / "pf-clean", pf_full=root / "pf-full",
                 stg_template=root / "stg-template", quilt_template=root / "quilt-template")
    if stamp.is_file():
        saved = json.loads(stamp.read_text())
        if saved.get("want") == want:
            return Work(**paths, kinds=saved["kinds"], base_commit=saved["base"])
    log(f"generating the {count}-patch series (seed {seed}) in {root}")
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    checkout = paths["checkout"]
    git(root, "clone", "-q", str(history), str(checkout))
    base_commit = git(checkout, "rev-parse", f"v{BASE}^{{commit}}").decode().strip()
    patches = scenario.generate_series(checkout, count, seed, reformatted, reformatted_code)
    kinds = {p.name: p.kind for p in patches}
    series = {"full": patches, "clean": [p for p in patches if p.kind != "conflict"]}
    for part, chosen in series.items():
        commits = scenario.commit_series(checkout, f"series-{part}", chosen, base_commit)
        git(checkout, "update-ref", f"refs/bench/{part}-orig", commits[-1])
        outdir = root / f"patches-{part}"
        outdir.mkdir()
        for patch, commit in zip(chosen, commits):
            (outdir / patch.name).write_bytes(
                scenario.patch_file_bytes(checkout, commit, patch, base_commit))
        (outdir / "series").write_text("".join(f"{p.name}\n" for p in chosen))
    git(checkout, "checkout", "-q", "-f", "--detach", f"v{TARGET}")

    # git rebase runs in its own clone so the checkout above stays as generated.
    run_checkout = paths["run_checkout"]
    git(root, "clone", "-q", str(checkout), str(run_checkout))
    git(run_checkout, "fetch", "-q", "origin", "refs/bench/*:refs/bench/*")

    # patchforge projects: a git upstream pointing at the history repository.
    env = pf_env(pf_cache)
    for part, project in (("clean", paths["pf_clean"]), ("full", paths["pf_full"])):
        pf(env, "init", "--standalone", str(project))
        pf(env, "--root", str(project), "upstream", "add", "vllm", "--git", str(history),
           "--at", f"v{BASE}", "--install-root", "/usr/local/lib/python3.12/dist-packages")
        pin = json.loads((project / "upstream.lock").read_text())["upstreams"]["vllm"]["commit"]
        if pin != base_commit:
            raise RuntimeError(f"patchforge pinned {pin}, the history says {base_commit}")
        target_dir = project / "series" / "vllm"
        target_dir.mkdir(parents=True, exist_ok=True)
        for item in (root / f"patches-{part}").iterdir():
            shutil.copy2(item, target_dir / item.name)

    # StGit: the clean series uncommitted into a stack on 0.32.0.
    stg = paths["stg_template"]
    git(root, "clone", "-q", str(checkout), str(stg))
    git(stg, "fetch", "-q", "origin", "refs/bench/*:refs/bench/*")
    git(stg, "checkout", "-q", "-f", "-B", "stack", "refs/bench/clean-orig")
    run(["stg", "init"], stg)
    run(["stg", "uncommit", "-n", str(len(series["clean"]))], stg)

    # quilt: the 0.33.0 tree with the clean series in patches/.
    quilt = paths["quilt_template"]
    quilt.mkdir()
    archive = subprocess.run(["git", "archive", f"v{TARGET}"], cwd=history, capture_output=True,
                             env=git_env(), check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(quilt)], input=archive, check=True)
    shutil.copytree(root / "patches-clean", quilt / "patches")

    stamp.write_text(json.dumps({"want": want, "kinds": kinds, "base": base_commit},
                                indent=1, sort_keys=True))
    return Work(**paths, kinds=kinds, base_commit=base_commit)


def run(cmd: list[str], cwd: Path, env=None, check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, env=env or git_env())
    if check and proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} in {cwd} exited {proc.returncode}:\n"
                           f"{proc.stdout.decode(errors='replace')}"
                           f"{proc.stderr.decode(errors='replace')}")
    return proc


# ----------------------------------------------------------------------------------------------
# Timing

@dataclass
class Timing:
    key: str
    label: str
    command: str
    median: float
    low: float
    high: float
    runs: int
    exit_codes: list
    cpu: float  # mean user + system CPU seconds (the process and the children it waited for)


def time_command(key: str, label: str, command: str, *, cwd: Path, env: dict, runs: int,
                 prepare: str | None = None, warmup: int = 1) -> Timing:
    """Median wall time of `command` (a shell command line) over `runs` runs after `warmup`."""
    log(f"  timing {label}: {command}")
    if shutil.which("hyperfine"):
        with tempfile.NamedTemporaryFile(suffix=".json") as out:
            cmd = ["hyperfine", "--style", "none", "--runs", str(runs), "--warmup", str(warmup),
                   "-i", "--export-json", out.name]
            if prepare:
                cmd += ["--prepare", prepare]
            cmd.append(command)
            subprocess.run(cmd, cwd=cwd, env=env, check=True, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
            result = json.load(open(out.name))["results"][0]
        times = result["times"]
        return Timing(key, label, command, result["median"], min(times), max(times), len(times),
                      sorted(set(result.get("exit_codes", []))),
                      result.get("user", 0.0) + result.get("system", 0.0))
    import resource
    times, codes, cpus = [], [], []
    for i in range(warmup + runs):
        if prepare:
            subprocess.run(prepare, shell=True, cwd=cwd, env=env, capture_output=True)
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        proc = subprocess.run(command, shell=True, cwd=cwd, env=env, capture_output=True)
        elapsed = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if i >= warmup:
            times.append(elapsed)
            codes.append(proc.returncode)
            cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return Timing(key, label, command, statistics.median(times), min(times), max(times),
                  len(times), sorted(set(codes)), statistics.mean(cpus))


# A timed rebase starts from a state as a user's would be, for every tool alike. Each prepare
# (a fresh copy of the starting state) is followed by SETTLE_SECONDS of waiting and the tool's
# own settling step: git compares a file's modification time with its index's to whole seconds
# (git is built without USE_NSEC by default), and a file written in the second the index was
# written is "racily clean": git hashes it again wherever it reads or writes that index. The
# prepare's checkout writes 1,268 files and the index within one second, so `git rebase` began
# by hashing them again (25-80 ms and one index write more than a rebase of a checkout made
# earlier pays); `git update-index --refresh` a second later writes an index newer than every
# file. (A `sync` after the prepare, so that its dirty pages are not written back during the
# timed run, made `git rebase` slower under load, not faster: not done.) Each timed run then
# starts at its own point of the wall-clock second, spread evenly over the runs, the tools
# taking turns (see time_at_phases).
SETTLE_SECONDS = 1.05
GIT_SETTLE = "git update-index -q --refresh"

# The waits before a timed run keep memory in use. The machine these benchmarks were measured on
# hands memory that has stayed free for a moment back to its host (free page reporting: the
# virtio balloon, `page_reporting.page_reporting_order` on the kernel's command line); a process
# that then touches fresh pages waits for the host to back each one again. Timed after an idle
# wait, a process touching 40 MB took 20 ms back to back, 27 ms after 1.05 s and 36 ms after
# 2.5 s, while one doing the same CPU work without new memory took the same time after any wait.
# That cost falls on a command by how much fresh memory one process touches, not by the work it
# does: `git rebase`'s many short processes take pages the previous ones freed, one Python
# process takes tens of megabytes. A workstation has no such cost, so each wait touches and frees
# KEPT_IN_USE bytes in a loop (the pages a command takes next are then backed), the same before
# every tool's runs; `--idle-waits` waits idle instead, to show the difference.
KEPT_IN_USE = 128 << 20
PAGE = mmap.PAGESIZE
IDLE_WAITS = False


def wait_until(deadline: float) -> None:
    """Return at the wall-clock `deadline` (time.time()), the machine's memory kept in use
    meanwhile (see KEPT_IN_USE) unless IDLE_WAITS."""
    if IDLE_WAITS:
        time.sleep(max(0.0, deadline - time.time()))
        return
    step = 8 << 20
    ones = b"\1" * (step // PAGE)
    while time.time() < deadline:
        block = mmap.mmap(-1, KEPT_IN_USE)
        try:
            for start in range(0, KEPT_IN_USE, step):
                block[start:start + step:PAGE] = ones
                if time.time() >= deadline:
                    break
        finally:
            block.close()


@dataclass
class PhasedRow:
    """A command timed by time_at_phases: its untimed prepare (a fresh copy of the starting
    state) and settling step run in `prepare_cwd` (else `cwd`)."""
    key: str
    label: str
    argv: list
    cwd: Path
    env: dict
    runs: int
    prepare: str
    settle: str | None = None
    prepare_cwd: Path | None = None
    warmup: int = 1


def time_at_phases(rows: list[PhasedRow]) -> list[Timing]:
    """Each row's median wall time over its runs, the rows taking turns run by run, and run k of
    a row's N starting at (k + 1/2) / N of a wall-clock second after its prepare has settled.

    `git rebase`'s time depends on where in the second it starts: its own checkout writes the
    target's files and then each picked commit writes the index; every file written in the
    second the index is written is hashed again at each index write (git's racy-clean check, to
    the second), until the clock passes into the next second. Started at 0.4-0.5 of a second its
    checkout ends near the next one (about 0.8 s for the 30-patch series here), started at
    0.6-0.7 it pays a whole second of re-hashing (about 1.4 s). A user's rebase starts at any
    point, so every point counts alike: runs at evenly spread points give the median over the
    second, the same for every tool timed here (hyperfine's back-to-back runs fall where the
    previous run ended, so five of them sampled whatever points they met). Taking turns, the
    tools meet the same load."""
    for row in rows:
        log(f"  timing {row.label}: {' '.join(shlex.quote(a) for a in row.argv)} "
            "(settled, spread over the second, taking turns)")
    measured: dict[str, tuple[list, list, list]] = {row.key: ([], [], []) for row in rows}
    for i in range(max(row.warmup + row.runs for row in rows)):
        for row in rows:
            if i >= row.warmup + row.runs:
                continue
            where = row.prepare_cwd or row.cwd
            # A failed prepare would time a rebase of an already rebased branch ("up to
            # date", exit 0) as if it were the real one.
            _must(subprocess.run(row.prepare, shell=True, cwd=where, env=row.env,
                                 capture_output=True), row.label, "prepare")
            wait_until(time.time() + SETTLE_SECONDS)
            if row.settle:
                _must(subprocess.run(row.settle, shell=True, cwd=where, env=row.env,
                                     capture_output=True), row.label, "settling step")
            phase = ((i - row.warmup) % row.runs + 0.5) / row.runs
            now = time.time()
            wait_until(now + (phase - now % 1) % 1)
            start = time.perf_counter()
            proc = subprocess.Popen(row.argv, cwd=row.cwd, env=row.env,
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            _, status, usage = os.wait4(proc.pid, 0)
            elapsed = time.perf_counter() - start
            if i >= row.warmup:
                times, codes, cpus = measured[row.key]
                times.append(elapsed)
                codes.append(os.waitstatus_to_exitcode(status))
                cpus.append(usage.ru_utime + usage.ru_stime)
    timings = []
    for row in rows:
        times, codes, cpus = measured[row.key]
        timings.append(Timing(row.key, row.label, " ".join(shlex.quote(a) for a in row.argv),
                              statistics.median(times), min(times), max(times), len(times),
                              sorted(set(codes)), statistics.mean(cpus)))
    return timings


def measure(work: Work, runs: int, include: set[str], variants: bool = True,
            others: list[Path] | None = None, readme: bool = False) -> list[Timing]:
    q = shlex.quote
    pfx = " ".join(q(a) for a in patchforge_exe())
    env = pf_env(work)
    scratch = work.root / "scratch"
    scratch.mkdir(exist_ok=True)
    results: list[Timing] = []
    if "rebase" in include:
        rows = [PhasedRow(
            "git-rebase", "git rebase v0.33.0", ["git", "rebase", "-q", f"v{TARGET}"],
            cwd=work.run_checkout, env=env, runs=runs,
            prepare="git rebase --abort >/dev/null 2>&1; "
                    "git checkout -q -f -B run refs/bench/clean-orig",
            settle=GIT_SETTLE)]
        project = scratch / "pf-rebase"
        fresh_project = f"rm -rf {q(str(project))} && cp -a {q(str(work.pf_clean))} {q(str(project))}"
        pf_rebase = [*patchforge_exe(), "--root", str(project), "rebase", "--to", TARGET]
        rows.append(PhasedRow("pf-rebase", "patchforge rebase --to 0.33.0", pf_rebase,
                              cwd=scratch, env=env, runs=runs, prepare=fresh_project))
        # The first command asking about 0.33.0 makes the release's loose code and keeps it in
        # the cache (docs/performance.md, "A release's loose code kept"); every later one, the
        # row above from its second run on, reads it back. A user's first `rebase --to` of a
        # new release, with no `status --against` of it before, is this row.
        kept = Path(env["PATCHFORGE_CACHE"]) / "kept"
        rows.append(PhasedRow("pf-rebase-first", "patchforge rebase --to 0.33.0 (first asking "
                              "about 0.33.0: the cache's kept/ emptied)", pf_rebase,
                              cwd=scratch, env=env, runs=runs,
                              prepare=f"{fresh_project} && rm -rf {q(str(kept))}"))
        for number, other in enumerate(others or [], 1):
            rows.append(PhasedRow(
                f"pf-rebase-other{number}", f"patchforge rebase --to 0.33.0 ({other})", pf_rebase,
                cwd=scratch, env={**env, "PYTHONPATH": str(other)}, runs=runs,
                prepare=fresh_project))
        installed = readme_install(measured_source()) if readme else None
        if installed is not None:
            rows.append(PhasedRow(
                "pf-rebase-venv", "patchforge rebase --to 0.33.0 (pip install . in a venv)",
                [str(installed), "--root", str(project), "rebase", "--to", TARGET],
                cwd=scratch, env={k: v for k, v in env.items() if k != "PYTHONPATH"},
                runs=runs, prepare=fresh_project))
        if variants:
            rows.append(PhasedRow(
                "pf-rebase-offline", "patchforge --offline rebase --to 0.33.0",
                [*patchforge_exe(), "--offline", "--root", str(project), "rebase", "--to", TARGET],
                cwd=scratch, env=env, runs=runs, prepare=fresh_project))
        stack = scratch / "stg"
        # StGit takes about half a second per patch here: at 300 patches one run says enough.
        slow = len(work.kinds) > 100
        rows.append(PhasedRow(
            "stg-rebase", "stg rebase -m v0.33.0", ["stg", "rebase", "-m", f"v{TARGET}"],
            cwd=stack, env=env, runs=1 if slow else runs, warmup=0 if slow else 1,
            prepare=f"rm -rf {q(str(stack))} && cp -a {q(str(work.stg_template))} {q(str(stack))}",
            settle=f"git -C {q(str(stack))} update-index -q --refresh", prepare_cwd=scratch))
        results.extend(time_at_phases(rows))
    if "status" in include:
        results.append(time_command(
            "pf-status", "patchforge status --against 0.33.0",
            f"{pfx} --root {q(str(work.pf_full))} status --against {TARGET}",
            cwd=scratch, env=env, runs=runs))
        if variants:
            results.append(time_command(
                "pf-status-offline", "patchforge --offline status --against 0.33.0",
                f"{pfx} --offline --root {q(str(work.pf_full))} status --against {TARGET}",
                cwd=scratch, env=env, runs=runs))
        results.append(time_command(
            "git-cherry", "git cherry v0.33.0 <series>",
            f"git cherry v{TARGET} refs/bench/full-orig",
            cwd=work.run_checkout, env=env, runs=runs))
    if "overlays" in include:
        project = scratch / "pf-overlays"
        if not project.exists():
            shutil.copytree(work.pf_full, project, symlinks=True)
            pf(env, "--root", str(project), "overlays")
        results.append(time_command(
            "pf-overlays", "patchforge overlays", f"{pfx} --root {q(str(project))} overlays",
            cwd=scratch, env=env, runs=runs))
        results.append(time_command(
            "pf-overlays-check", "patchforge overlays --check",
            f"{pfx} --root {q(str(project))} overlays --check", cwd=scratch, env=env, runs=runs))
    if "startup" in include:
        results.append(time_command("pf-help", "patchforge --help", f"{pfx} --help",
                                    cwd=scratch, env=env, runs=max(runs, 10), warmup=2))
        on_path = shutil.which("patchforge")
        if on_path and Path(on_path).resolve() != Path(patchforge_exe()[0]).resolve():
            results.append(time_command("pf-help-path", f"patchforge --help via PATH ({on_path})",
                                        "patchforge --help", cwd=scratch, env=env,
                                        runs=max(runs, 10), warmup=2))
        nopyc = dict(env, PYTHONDONTWRITEBYTECODE="1",
                     PYTHONPYCACHEPREFIX=str(scratch / "no-pycache"))
        results.append(time_command("pf-help-nopyc", "patchforge --help, PYTHONDONTWRITEBYTECODE=1",
                                    f"{pfx} --help", cwd=scratch, env=nopyc,
                                    runs=max(runs, 10), warmup=2))
        results.append(time_command("python-pass", "python3 -c pass (floor)",
                                    f"{q(sys.executable)} -c pass", cwd=scratch, env=env,
                                    runs=max(runs, 10), warmup=2))
        results.append(time_command("git-help", "git --help", "git --help", cwd=scratch, env=env,
                                    runs=max(runs, 10), warmup=2))
    return results


# ----------------------------------------------------------------------------------------------
# Functional results: what each tool did with the series

def _name_of_commit_message(message: str) -> str | None:
    for token in message.split():
        if token.endswith(".patch"):
            return token
    return None


def detection(work: Work) -> dict:
    env = pf_env(work)
    kinds = work.kinds
    truth = {k: sorted(n for n, kind in kinds.items() if kind == k)
             for k in sorted(set(kinds.values()))}
    out: dict = {"truth": {k: len(v) for k, v in truth.items()}}

    # patchforge status on the whole series.
    proc = pf(env, "--root", str(work.pf_full), "status", "--against", TARGET, "--json",
              check=False)
    doc = json.loads(proc.stdout)
    states = {p["name"]: p["state"] for p in _status_patches(doc)}
    out["patchforge status"] = _score(kinds, {n for n, s in states.items() if s == "upstreamed"},
                                      states)

    # git cherry: only patch-id matches count.
    cherry = git(work.run_checkout, "cherry", "-v", f"v{TARGET}", "refs/bench/full-orig").decode()
    equivalent = set()
    for line in cherry.splitlines():
        if line.startswith("- "):
            sha = line.split()[1]
            msg = git(work.run_checkout, "log", "-1", "--format=%B", sha).decode()
            equivalent.add(_name_of_commit_message(msg))
    out["git cherry"] = _score(kinds, equivalent, {})

    # git rebase of the whole series, skipping at each conflict: what it drops as applied.
    rc = work.run_checkout
    run(["git", "rebase", "--abort"], rc, check=False)
    git(rc, "checkout", "-q", "-f", "-B", "detect", "refs/bench/full-orig")
    stopped = set()
    proc = run(["git", "rebase", f"v{TARGET}"], rc, check=False)
    guard = 0
    while (rc / ".git" / "rebase-merge").exists() and guard < len(kinds) + 5:
        guard += 1
        msg = git(rc, "log", "-1", "--format=%B", "REBASE_HEAD", check=False).decode()
        stopped.add(_name_of_commit_message(msg))
        run(["git", "rebase", "--skip"], rc, check=False)
    kept = {_name_of_commit_message(git(rc, "log", "-1", "--format=%B", c).decode())
            for c in git(rc, "rev-list", f"v{TARGET}..HEAD").decode().split()}
    dropped = set(kinds) - kept - stopped
    git_states = {n: ("stopped (conflict)" if n in stopped else
                      "dropped" if n in dropped else "kept") for n in kinds}
    out["git rebase"] = _score(kinds, dropped, git_states)
    out["git rebase"]["stopped"] = len(stopped)
    out["git rebase"]["stopped_truth"] = _by_kind(kinds, stopped)

    # patchforge rebase of the clean part.
    scratch = work.root / "scratch"
    project = scratch / "pf-rebase-detect"
    shutil.rmtree(project, ignore_errors=True)
    shutil.copytree(work.pf_clean, project, symlinks=True)
    proc = pf(env, "--root", str(project), "rebase", "--to", TARGET, "--json", check=False)
    try:
        summary = json.loads(proc.stdout)
        actions = {p["name"]: p["action"] for p in summary.get("patches", [])}
    except json.JSONDecodeError:
        actions = {}
        out["patchforge rebase error"] = proc.stderr.decode(errors="replace")[-2000:]
    clean_kinds = {n: k for n, k in kinds.items() if k != "conflict"}
    out["patchforge rebase (clean part)"] = _score(
        clean_kinds, {n for n, a in actions.items() if a == "dropped"}, actions)
    out["patchforge rebase (clean part)"]["exit"] = proc.returncode

    # StGit rebase -m of the clean part: merged patches end up empty.
    stack = scratch / "stg-detect"
    shutil.rmtree(stack, ignore_errors=True)
    shutil.copytree(work.stg_template, stack, symlinks=True)
    proc = run(["stg", "rebase", "-m", f"v{TARGET}"], stack, check=False)
    series = run(["stg", "series", "-e", "-d"], stack, check=False).stdout.decode()
    empty = set()
    stg_names = run(["stg", "series", "--noprefix"], stack, check=False).stdout.decode().split()
    stg_map = {}
    for sname in stg_names:
        # `stg show` prints nothing when its output is not a terminal: ask git for the message.
        sha = run(["stg", "id", sname], stack, check=False).stdout.decode().strip()
        msg = git(stack, "log", "-1", "--format=%B", sha, check=False).decode(errors="replace")
        stg_map[sname] = _name_of_commit_message(msg)
    for line in series.splitlines():
        if line.startswith("0"):
            parts = line.split()
            if len(parts) > 1 and parts[1] in stg_map:
                empty.add(stg_map[parts[1]])
    out["stg rebase -m (clean part)"] = _score(clean_kinds, empty, {})
    out["stg rebase -m (clean part)"]["exit"] = proc.returncode

    # quilt push -a on the 0.33.0 tree: where it stops.
    tree = scratch / "quilt-detect"
    shutil.rmtree(tree, ignore_errors=True)
    shutil.copytree(work.quilt_template, tree, symlinks=True)
    proc = run(["quilt", "push", "-a"], tree, check=False)
    applied = run(["quilt", "applied"], tree, check=False).stdout.decode().split()
    order = (tree / "patches" / "series").read_text().split()
    first_fail = order[len(applied)] if len(applied) < len(order) else None
    # A landed patch that quilt pushed went in a second time (GNU patch found a look-alike
    # place with fuzz): upstream's change is now duplicated, silently.
    applied_again = sorted(n for n in applied if kinds.get(Path(n).name, "").startswith("landed"))
    out["quilt push -a (clean part)"] = {
        "exit": proc.returncode, "applied": len(applied), "of": len(order),
        "stopped_at": first_fail, "stopped_at_kind": kinds.get(first_fail) if first_fail else None,
        "landed_applied_again": applied_again}
    return out


def _status_patches(doc) -> list[dict]:
    if isinstance(doc, dict):
        for key in ("patches", "results"):
            if key in doc and isinstance(doc[key], list):
                return doc[key]
        for value in doc.values():
            if isinstance(value, dict) and "patches" in value:
                return value["patches"]
    return doc if isinstance(doc, list) else []


def _by_kind(kinds: dict, names: set) -> dict:
    counts: dict[str, int] = {}
    for name in names:
        counts[kinds.get(name, "?")] = counts.get(kinds.get(name, "?"), 0) + 1
    return counts


def _score(kinds: dict, said_landed: set, states: dict) -> dict:
    landed = {n for n, k in kinds.items() if k.startswith("landed")}
    said_landed = {n for n in said_landed if n in kinds}
    result = {"true_landed": len(said_landed & landed),
              "missed_landed": len(landed - said_landed),
              "false_landed": len(said_landed - landed)}
    if states:
        per_kind: dict[str, dict[str, int]] = {}
        for name, state in states.items():
            kind = kinds.get(name)
            if kind is None:
                continue
            per_kind.setdefault(kind, {})
            per_kind[kind][state] = per_kind[kind].get(state, 0) + 1
        result["states_by_kind"] = per_kind
    result["false_landed_names"] = sorted(said_landed - landed)
    result["missed_landed_names"] = sorted(landed - said_landed)
    return result


# ----------------------------------------------------------------------------------------------
# Reporting

def machine() -> dict:
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    def version(cmd):
        try:
            return subprocess.run(cmd, capture_output=True, text=True).stdout.strip().splitlines()[0]
        except (OSError, IndexError):
            return "missing"
    return {"nproc": os.cpu_count(), "cpu": cpu, "git": version(["git", "--version"]),
            "python": platform.python_version(), "stg": version(["stg", "--version"]),
            "quilt": version(["quilt", "--version"]),
            "hyperfine": version(["hyperfine", "--version"]) if shutil.which("hyperfine")
            else "missing (time.perf_counter)",
            "kernel": platform.release(),
            "patchforge": _patchforge_revision(),
            "load average at the end": " ".join(f"{x:.1f}" for x in os.getloadavg())}


def _must(proc: subprocess.CompletedProcess, label: str, step: str) -> None:
    if proc.returncode != 0:
        raise SystemExit(f"{label}: its {step} failed (exit {proc.returncode}): "
                         + proc.stderr.decode("utf-8", "replace").strip()[-500:])


def _patchforge_revision() -> str:
    """The commit of the patchforge checkout measured (plus "+dirty" for local changes)."""
    import patchforge

    root = measured_source()
    head = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=root,
                          capture_output=True, text=True, env=git_env())
    if head.returncode != 0:
        return f"{getattr(patchforge, '__version__', '?')} (not a git checkout)"
    dirty = subprocess.run(["git", "status", "--porcelain", "--", "patchforge"], cwd=root,
                           capture_output=True, text=True, env=git_env()).stdout.strip()
    return head.stdout.strip() + ("+dirty" if dirty else "")


def table(results: list[Timing], count: int) -> str:
    by = {r.key: r for r in results}
    ref = by.get("git-rebase")
    rows = ["| work | command | wall (median) | min-max | runs | CPU (user+sys) | "
            "wall vs git rebase | CPU vs git rebase | target |",
            "|---|---|---:|---:|---:|---:|---:|---:|---|"]
    groups = {"git-rebase": "rebase", "pf-rebase": "rebase", "pf-rebase-offline": "rebase",
              "pf-rebase-venv": "rebase", "pf-rebase-first": "rebase",
              "stg-rebase": "rebase", "pf-status": "status", "pf-status-offline": "status",
              "git-cherry": "status", "pf-overlays": "overlays", "pf-overlays-check": "overlays",
              "pf-help": "start-up", "pf-help-path": "start-up", "pf-help-nopyc": "start-up", "python-pass": "start-up", "git-help": "start-up"}
    for r in results:
        if r.key.startswith("pf-rebase-other"):
            groups[r.key] = "rebase"
        ratio = f"{r.median / ref.median:.2f}x" if ref else "-"
        cpu_ratio = f"{r.cpu / ref.cpu:.2f}x" if ref and ref.cpu else "-"
        target = ""
        # The venv row is a second view of the same tree (start-up without this machine's
        # site hooks), not the installed command the target is judged on: no verdict.
        if (r.key in ("pf-rebase", "pf-rebase-first", "pf-status", "pf-rebase-offline",
                      "pf-status-offline") or r.key.startswith("pf-rebase-other")) and ref:
            share = rebase_target(count) if r.key.startswith("pf-rebase") else 0.25
            wall_ok = r.median <= share * ref.median
            cpu_ok = bool(ref.cpu) and r.cpu <= share * ref.cpu
            target = (f"<= {share:.3f}x: wall {'met' if wall_ok else 'MISSED'}, "
                      f"CPU {'met' if cpu_ok else 'MISSED'}")
        elif r.key in ("pf-overlays", "pf-overlays-check"):
            # The target is for the 30 files of the 30-patch series; larger runs show scale.
            target = f"< 0.5 s: {'met' if r.median < 0.5 else 'MISSED'}" if count <= 30 \
                else "(target: 30 files)"
        elif r.key == "pf-help":
            target = f"< 150 ms: {'met' if r.median < 0.150 else 'MISSED'}"
        codes = "" if r.exit_codes in ([0], []) else f" (exit {','.join(map(str, r.exit_codes))})"
        rows.append(f"| {groups.get(r.key, '')} | `{r.label}`{codes} | {fmt(r.median)} | "
                    f"{fmt(r.low)}-{fmt(r.high)} | {r.runs} | {fmt(r.cpu)} | {ratio} | "
                    f"{cpu_ratio} | {target} |")
    return "\n".join(rows)


def fmt(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms" if seconds < 10 else f"{seconds:.1f} s"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--patches", type=int, default=30, help="series length (30 or 300)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--quick", action="store_true", help="3 runs instead of 5")
    parser.add_argument("--runs", type=int, help="runs per command")
    parser.add_argument("--only", default="rebase,status,overlays,startup,detection",
                        help="comma-separated: rebase,status,overlays,startup,detection")
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--reformatted", type=int, default=0, metavar="K",
                        help="add K landed patches written unformatted (see scenario.py); they "
                             "stop git rebase and StGit, so use with --only detection")
    parser.add_argument("--reformatted-code", type=int, default=0, metavar="K",
                        help="add K landed patches whose code alone is written unformatted "
                             "(never a string's inside: see scenario.py); --only detection too")
    parser.add_argument("--other", type=Path, action="append", default=[], metavar="DIR",
                        help="also time `patchforge rebase` from this source tree (repeatable)")
    parser.add_argument("--venv", action="store_true",
                        help="also time `patchforge rebase` installed as the README installs it: "
                             "`pip install .` into a virtual environment (built once, cached)")
    parser.add_argument("--idle-waits", action="store_true",
                        help="wait idle between a rebase row's prepare and its timed run instead "
                             "of keeping memory in use (see KEPT_IN_USE)")
    args = parser.parse_args(argv)
    global IDLE_WAITS
    IDLE_WAITS = args.idle_waits
    runs = args.runs or (3 if args.quick else 5)
    include = set(args.only.split(","))
    revision_at_start = _patchforge_revision()
    work = build_work(args.patches, args.seed, args.reformatted, args.reformatted_code)
    counts = {k: sum(1 for v in work.kinds.values() if v == k)
              for k in ("landed", "landed-reformatted", "landed-reformatted-code", "clean",
                        "conflict")}
    log(f"series: {args.patches} patches ({counts}); work dir {work.root}")
    results = measure(work, runs, include, variants=not args.quick,
                      others=[p.resolve() for p in args.other], readme=args.venv)
    quality = detection(work) if "detection" in include else {}
    info = machine()
    if "rebase" in include:
        info["rebase rows' waits"] = "idle" if IDLE_WAITS else "memory kept in use"
    if info["patchforge"] != revision_at_start:
        # Other work landed in the checkout while this ran: the rows mix two versions.
        info["patchforge"] = f"{revision_at_start} -> {info['patchforge']} (changed during the run)"
    print(f"\n## {args.patches}-patch series (seed {args.seed}): "
          f"{counts['landed']} landed, {counts['clean']} clean, {counts['conflict']} conflict"
          + (f", {counts['landed-reformatted']} landed reformatted" if args.reformatted else "")
          + (f", {counts['landed-reformatted-code']} landed with their code reformatted"
             if args.reformatted_code else "")
          + "\n")
    print("machine: " + ", ".join(f"{k} {v}" for k, v in info.items()) + "\n")
    print(table(results, args.patches))
    if quality:
        print("\n### landed detection and functional results\n")
        print(json.dumps(quality, indent=1, sort_keys=True))
    if args.json:
        args.json.write_text(json.dumps({
            "patches": args.patches, "seed": args.seed, "counts": counts, "machine": info,
            "timings": [r.__dict__ for r in results], "detection": quality},
            indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
