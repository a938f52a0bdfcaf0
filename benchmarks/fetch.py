#!/usr/bin/env python3
"""The first `patchforge fetch` of a wheel upstream next to its peers, in one run.

    python3 benchmarks/fetch.py [--package vllm] [--version 0.32.0] [--runs 3] [--no-download]

Each run starts cold: a new patchforge cache (no store) and, for the rows that download, a new
wheel directory, with pip's own HTTP cache off (PIP_NO_CACHE_DIR=1) so that every download
really comes over the network, as configured for pip on this machine. Rows:

  download  pip download PACKAGE==VERSION                 (the peer: what any install pays)
  download  patchforge fetch (first fetch: download + sha256 + import)
  import    unzip -q WHEEL -d DIR                          (the peer: unpacking the same files)
  import    patchforge fetch, the wheel already cached     (the import alone, plus start-up)
  import    git add of the unzipped files, in a new repo   (git storing the same files)

Medians of --runs runs (wall time, and CPU time of the command and its children), each with its
ratio to `pip download` (download rows) or to `unzip` (import rows). --no-download leaves out the rows that need the network. The code measured is
the patchforge beside this script (PYTHONPATH), not whatever is installed.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def shared_wheels() -> Path:
    explicit = os.environ.get("PATCHFORGE_WHEELS")
    if explicit:
        return Path(explicit)
    cache = os.environ.get("PATCHFORGE_CACHE")
    if cache:
        return Path(cache) / "wheels"
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "patchforge" / "wheels"


def timed(command: list[str], *, cwd: Path, env: dict, prepare=None) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the command and its children)."""
    import resource

    if prepare is not None:
        prepare()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(command, cwd=cwd, env=env, capture_output=True)
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({proc.returncode}):\n"
                         + proc.stderr.decode("utf-8", "replace")[-2000:])
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return elapsed, cpu


def project(root: Path, package: str, version: str, env: dict) -> None:
    root.mkdir(parents=True)
    pf = [sys.executable, "-m", "patchforge"]
    subprocess.run(pf + ["init", "--standalone"], cwd=root, env=env, check=True,
                   capture_output=True)
    subprocess.run(pf + ["upstream", "add", package, "--wheel", package, "--at", version],
                   cwd=root, env=env, check=True, capture_output=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--package", default="vllm")
    parser.add_argument("--version", default="0.32.0")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--no-download", action="store_true",
                        help="only the rows that use the cached wheel (no network)")
    args = parser.parse_args(argv)

    scratch = Path(tempfile.mkdtemp(prefix="pf-bench-fetch-"))
    try:
        base_env = {**os.environ, "PYTHONPATH": str(REPO), "PIP_NO_CACHE_DIR": "1",
                    "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
        base_env.pop("PYTHONDONTWRITEBYTECODE", None)
        base_env["PYTHONPYCACHEPREFIX"] = str(scratch / "pycache")
        wheels = shared_wheels()
        # The pin (and the wheel, when missing) comes from one setup run on the shared cache.
        setup_env = {**base_env, "PATCHFORGE_CACHE": str(scratch / "setup-cache"),
                     "PATCHFORGE_WHEELS": str(wheels)}
        root = scratch / "project"
        project(root, args.package, args.version, setup_env)
        wheel_files = [p for p in wheels.glob("*.whl")
                       if p.name.lower().startswith(args.package.replace("-", "_").lower() + "-"
                                                    + args.version)]
        if not wheel_files:
            raise SystemExit(f"no {args.package} {args.version} wheel in {wheels}")
        wheel = wheel_files[0]
        print(f"{wheel.name}: {wheel.stat().st_size / 1e6:.0f} MB; {args.runs} runs each; "
              f"nproc {os.cpu_count()}", flush=True)

        cache = scratch / "cache"
        fresh_wheels = scratch / "wheels"
        unzipped = scratch / "unzipped"

        def cold_store():
            shutil.rmtree(cache, ignore_errors=True)

        def cold_all():
            cold_store()
            shutil.rmtree(fresh_wheels, ignore_errors=True)
            fresh_wheels.mkdir()

        def no_unzipped():
            shutil.rmtree(unzipped, ignore_errors=True)

        def unzipped_repo():
            shutil.rmtree(unzipped / ".git", ignore_errors=True)
            if not unzipped.is_dir():
                subprocess.run(["unzip", "-q", str(wheel), "-d", str(unzipped)], check=True)
            subprocess.run(["git", "init", "-q", str(unzipped)], check=True)

        pf = [sys.executable, "-m", "patchforge", "--root", str(root)]
        rows = []  # (work, label, command, env, prepare); the first row of each work is the peer
        if not args.no_download:
            download_env = {**base_env, "PATCHFORGE_CACHE": str(cache),
                            "PATCHFORGE_WHEELS": str(fresh_wheels)}
            rows.append(("download", f"pip download {args.package}=={args.version}",
                         [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary",
                          ":all:", "-q", "-d", str(fresh_wheels),
                          f"{args.package}=={args.version}"], download_env, cold_all))
            rows.append(("download", "patchforge fetch (first: download + import)",
                         pf + ["fetch"], download_env, cold_all))
        cached_env = {**base_env, "PATCHFORGE_CACHE": str(cache), "PATCHFORGE_WHEELS": str(wheels)}
        rows.append(("import", "unzip -q WHEEL -d DIR",
                     ["unzip", "-q", str(wheel), "-d", str(unzipped)], base_env, no_unzipped))
        rows.append(("import", "patchforge fetch (wheel cached, new store)", pf + ["fetch"],
                     cached_env, cold_store))
        rows.append(("import", "git add -A of the unzipped files (new repository)",
                     ["git", "-C", str(unzipped), "add", "-A"], base_env, unzipped_repo))

        results = []
        for kind, label, command, env, prepare in rows:
            runs = [timed(command, cwd=scratch, env=env, prepare=prepare)
                    for _ in range(args.runs)]
            walls = [wall for wall, _ in runs]
            cpu = statistics.median(c for _, c in runs)
            results.append((kind, label, statistics.median(walls), min(walls), max(walls), cpu))
            print(f"  {label}: {statistics.median(walls):.2f} s", file=sys.stderr, flush=True)
        reference = {}
        for kind, _, median, _, _, cpu in results:
            reference.setdefault(kind, (median, cpu))
        print(f"\nload average at the end: {os.getloadavg()[0]:.1f}\n")
        print("| work | command | wall (median) | min-max | CPU (median) | wall vs peer | "
              "CPU vs peer |")
        print("|---|---|---:|---:|---:|---:|---:|")
        for kind, label, median, low, high, cpu in results:
            print(f"| {kind} | `{label}` | {median:.2f} s | {low:.2f}-{high:.2f} s | "
                  f"{cpu:.2f} s | {median / reference[kind][0]:.2f}x | "
                  f"{cpu / reference[kind][1]:.2f}x |")
        return 0
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
