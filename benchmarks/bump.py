#!/usr/bin/env python3
"""What `bump` adds to a rebase, and how it orders nightlies, measured in one run.

    python3 benchmarks/bump.py [--commits 5000] [--nightlies 200] [--fixes 30] [--runs 5]

Builds (in a temporary directory, with its own patchforge cache) a git upstream of --commits
commits on main (git fast-import, fixed dates), an image registry on 127.0.0.1 (the tests' server)
whose repository lists --nightlies `nightly-<sha>` tags of commits spread over that history plus
as many other tags, and a stack of --fixes fixes pinned at the tenth newest nightly (one commit in
25 moves the fixes' file). Then prints:

  ordering   --nightlies commits newest first by ancestry: `UpstreamStore.newest_first` (one
             git rev-list) against a comparison sort asking `git merge-base --is-ancestor` per
             pair (what ordering by ancestry costs done one question at a time); the ratio.
  bump       `patchforge bump --dry-run` (tags list, ordering, the image, the judge, the planned
             rebase) against `patchforge rebase --to nightly-<sha> --dry-run` alone on the same
             stack and target; the ratio is what finding and judging adds to the rebase.

Medians of --runs runs. Nothing is asserted: a benchmark reports, it does not fail.
"""
from __future__ import annotations

import argparse
import functools
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))
sys.path.insert(0, str(REPO_ROOT / "tests"))

FUNCTIONS = 400  # the one upstream file: f0 ... f399, far enough apart for one hunk each


def _env(home: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update({"HOME": str(home), "XDG_CACHE_HOME": str(home / ".cache"),
                "PATCHFORGE_CACHE": str(home / ".cache" / "patchforge"),
                "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null",
                "GIT_AUTHOR_NAME": "Bench", "GIT_AUTHOR_EMAIL": "bench@example.com",
                "GIT_COMMITTER_NAME": "Bench", "GIT_COMMITTER_EMAIL": "bench@example.com",
                "PYTHONPATH": str(REPO_ROOT), "NO_COLOR": "1",
                "no_proxy": "127.0.0.1,localhost"})
    return env


def source(header_lines: int) -> bytes:
    head = b"".join(b"# upstream line %d\n" % i for i in range(header_lines))
    return head + b"".join(b"def f%d(x):\n    return x + %d\n\n\n" % (i, i)
                           for i in range(FUNCTIONS))


EVERY = 25  # one commit in EVERY touches the fixes' file (adds a header line above them)


def build_upstream(path: Path, commits: int, env: dict[str, str]) -> list[str]:
    """main with `commits` commits; commit k touches pkg/n<k % 50>.py, and every EVERY-th one
    also adds a header line to pkg/mod.py (so the fixes move by an offset). Returns the ids,
    oldest first."""
    subprocess.run(["git", "init", "-q", "-b", "main", str(path)], check=True, env=env)
    stream = bytearray()
    for k in range(commits):
        files = {f"pkg/n{k % 50}.py": b"N = %d\n" % k}
        if k % EVERY == 0:
            files["pkg/mod.py"] = source(k // EVERY)
        stream += b"commit refs/heads/main\nmark :%d\n" % (k + 1)
        stream += b"committer Bench <bench@example.com> %d +0000\n" % (1_700_000_000 + 60 * k)
        message = b"change %d\n" % k
        stream += b"data %d\n%s" % (len(message), message)
        if k:
            stream += b"from :%d\n" % k
        for name, data in files.items():
            stream += b"M 100644 inline %s\ndata %d\n%s\n" % (name.encode(), len(data), data)
    subprocess.run(["git", "fast-import", "--quiet"], cwd=path, input=bytes(stream),
                   check=True, env=env)
    out = subprocess.run(["git", "rev-list", "--reverse", "main"], cwd=path, check=True,
                         capture_output=True, env=env).stdout.decode()
    return out.split()


def make_stack(root: Path, upstream: Path, base: str, base_index: int, fixes: int,
               env: dict[str, str]) -> None:
    from patchforge.store.gitstore import make_file_diff

    def cli(*args: str) -> None:
        subprocess.run([sys.executable, "-m", "patchforge", "--root", str(root), *args],
                       check=True, env=env, capture_output=True)

    root.mkdir()
    cli("init", "--standalone")
    cli("upstream", "add", "up", "--git", str(upstream), "--at", base, "--follow", "main")
    old = source(base_index // EVERY)
    series = root / "series" / "up"
    series.mkdir(parents=True, exist_ok=True)
    names = []
    for i in range(fixes):
        function = i * (FUNCTIONS // fixes)
        new = old.replace(b"    return x + %d\n" % function, b"    return x - %d\n" % function)
        diff = make_file_diff("pkg/mod.py", "pkg/mod.py", old, new)
        name = f"fix-{i:03d}.patch"
        (series / name).write_bytes(b"Description: fix %d\nUpstream-Status: Pending\n\n---\n%s"
                                    % (i, diff))
        names.append(name)
    (series / "series").write_text("".join(f"{n}\n" for n in names))


def median_seconds(run, runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--commits", type=int, default=5000)
    parser.add_argument("--nightlies", type=int, default=200)
    parser.add_argument("--fixes", type=int, default=30)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    from helpers.servers import RegistryServer

    with tempfile.TemporaryDirectory(prefix="pf-bench-bump-") as tmp:
        tmp_path = Path(tmp)
        env = _env(tmp_path / "home")
        os.environ.update(env)  # the store opened in this process uses the same cache
        commits = build_upstream(tmp_path / "upstream", args.commits, env)
        rng = random.Random(1)
        nightly = sorted(rng.sample(commits[1:], args.nightlies), key=commits.index)
        registry = RegistryServer()
        registry.tags_page_size = 100
        repo = "rocm/bench"
        try:
            for commit in nightly:
                registry.push_image(repo, f"nightly-{commit}", {"up.commit": commit},
                                    index=False)
                registry.extra_tags.setdefault(repo, []).append(f"build-{commit[:8]}")
            # The stack is on the nightly ten before the newest, as after a week of bumps.
            pin = nightly[-11]
            stack = tmp_path / "stack"
            make_stack(stack, tmp_path / "upstream", pin, commits.index(pin), args.fixes, env)

            # -- ordering -----------------------------------------------------------------------
            from patchforge.store.gitsource import fetch_git_upstream
            from patchforge.store.gitstore import UpstreamStore

            store = UpstreamStore.open()
            try:
                tip = fetch_git_upstream(store, "up", str(tmp_path / "upstream"), "main")
                shuffled = nightly[:]
                rng.shuffle(shuffled)
                one = median_seconds(lambda: store.newest_first(shuffled, tip), args.runs)

                def pairwise():
                    # A store of its own each time: it remembers ancestry answers.
                    with UpstreamStore.open() as fresh:
                        def compare(a: str, b: str) -> int:
                            return 0 if a == b else (1 if fresh.is_ancestor(a, b) else -1)
                        return sorted(shuffled, key=functools.cmp_to_key(compare))

                pair = median_seconds(pairwise, max(1, args.runs // 2))
                assert store.newest_first(shuffled, tip) == pairwise() == nightly[::-1]
            finally:
                store.close()

            # -- bump against the rebase alone ---------------------------------------------------
            newest = nightly[-1]

            def cli(*command: str) -> None:
                proc = subprocess.run([sys.executable, "-m", "patchforge", "--root", str(stack),
                                       *command], env=env, capture_output=True)
                if proc.returncode not in (0, 1):
                    raise SystemExit(proc.stderr.decode())

            bump = median_seconds(lambda: cli("bump", "--image", f"{registry.host}/{repo}",
                                              "--dry-run", "--json"), args.runs)
            rebase = median_seconds(lambda: cli("rebase", "--to", f"nightly-{newest}",
                                                "--dry-run", "--json"), args.runs)
        finally:
            registry.close()
    print(f"ordering {args.nightlies} nightlies on a {args.commits}-commit history "
          f"(median of {args.runs}):")
    print(f"  newest_first (one git rev-list)          {one * 1000:9.1f} ms   1.00")
    print(f"  comparison sort, is-ancestor per pair    {pair * 1000:9.1f} ms   "
          f"{pair / one:6.2f}")
    print(f"bump on {args.fixes} fixes, {2 * args.nightlies} tags in pages of 100 "
          f"(median of {args.runs}):")
    print(f"  patchforge rebase --to nightly --dry-run {rebase * 1000:9.1f} ms   1.00")
    print(f"  patchforge bump --dry-run                {bump * 1000:9.1f} ms   "
          f"{bump / rebase:6.2f}")


if __name__ == "__main__":
    main()
