"""Diffs of renamed files with their extended headers: patchforge against `git diff -M`.

    python3 benchmarks/renames.py [--runs 5] [--files 50] [--lines 2000]

N files of L lines, each renamed with one line changed (the diffs a rebase writes again for a
series of renaming patches). patchforge: `store.diff.make_diffs` of the N renames, one patch
each, as the rebase's write-out makes them (git's hunks, then git's own similarity score for the
`similarity index` lines: one more `git diff -M` for all of them); and the same N files changed
in place, without renames. The peer: `git diff --cached -M --full-index` of the same renames
staged in a scratch repository. Printed: the median wall seconds of `--runs` runs and the ratios.
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from patchforge.store.diff import FileChange, make_diffs  # noqa: E402


def timed(work, runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--files", type=int, default=50)
    parser.add_argument("--lines", type=int, default=2000)
    args = parser.parse_args()
    pairs = []
    for i in range(args.files):
        old = b"".join(b"def f%d_%d():\n    return %d\n" % (i, j, j) for j in range(args.lines // 2))
        pairs.append((old, old.replace(b"return 10\n", b"return 11\n", 1)))
    renamed = [[FileChange(f"pkg/m{i}.py", f"pkg/n{i}.py", old, new)]
               for i, (old, new) in enumerate(pairs)]
    in_place = [[FileChange(f"pkg/m{i}.py", f"pkg/m{i}.py", old, new)]
                for i, (old, new) in enumerate(pairs)]
    ours = timed(lambda: make_diffs(renamed), args.runs)
    plain = timed(lambda: make_diffs(in_place), args.runs)
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp)
        env_git = ["git", "-c", "user.name=b", "-c", "user.email=b@example.com"]
        subprocess.run([*env_git, "init", "-q"], cwd=repo, check=True)
        (repo / "pkg").mkdir()
        for i, (old, _) in enumerate(pairs):
            (repo / "pkg" / f"m{i}.py").write_bytes(old)
        subprocess.run([*env_git, "add", "-A"], cwd=repo, check=True)
        subprocess.run([*env_git, "commit", "-qm", "base"], cwd=repo, check=True)
        for i, (_, new) in enumerate(pairs):
            (repo / "pkg" / f"m{i}.py").unlink()
            (repo / "pkg" / f"n{i}.py").write_bytes(new)
        subprocess.run([*env_git, "add", "-A"], cwd=repo, check=True)
        peer = timed(lambda: subprocess.run(["git", "diff", "--cached", "-M", "--full-index"],
                                            cwd=repo, check=True, capture_output=True),
                     args.runs)
    print(f"{args.files} renamed files of {args.lines} lines, median of {args.runs} runs")
    print(f"patchforge make_diffs, renames (with similarity index): {ours:.3f} s")
    print(f"patchforge make_diffs, the same changes in place:        {plain:.3f} s")
    print(f"git diff --cached -M --full-index (peer):               {peer:.3f} s")
    print(f"ratio renames / peer: {ours / peer:.2f}x; renames / in place: {ours / plain:.2f}x")


if __name__ == "__main__":
    main()
