"""The reverted-landing lookup (patchforge.reverts) on the real AITER history: what it finds and
what it costs.

    python3 benchmarks/reverts.py [--repo DIR] [--samples 150] [--seed 1]

1. Known reverts: for each commit whose message says `This reverts commit X` (a list of real
   ones), X taken as a fix's recorded landing, judged over its range to the revert itself and
   to the head: at the revert the lookup must name it; at the head it says nothing where
   upstream has the change again. And `fc91146141` ("Revert DO runner smoke test"), which has
   no such line, must be found by its change, the exact reverse of `be195d1638`'s.
2. Ordinary landings: `--samples` commits drawn at random (`--seed`), each taken as a landing
   with its own files, judged to the head; every one found undone is printed with the commit
   that undid it, marked when a revert message names it, so that each other one can be read;
   and every one a revert message names that is not said, to be read too.
3. Cost: 30 and 80 recorded landings judged over a range of 50 and 300 first-parent commits,
   median of 5 runs each (a fresh store each run). Run `uptime` first; the machine's load moves
   these figures.
The repository is read, never written: `--repo` (default: the bare clone the other benchmarks
use, /work/.mirror/ROCm+aiter/repo).
"""
from __future__ import annotations

import argparse
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from patchforge.reverts import Landing, find_changes  # noqa: E402
from patchforge.store.gitstore import UpstreamStore  # noqa: E402

KNOWN = ["518cfbc60b", "32d76e9595", "62aa6fe9a3", "ca1909e300", "c7033306f3", "dff1d1f064"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", type=Path, default=Path("/work/.mirror/ROCm+aiter/repo"))
    parser.add_argument("--samples", type=int, default=150)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    repo = args.repo

    def git(*words: str) -> str:
        return subprocess.run(["git", "--git-dir", str(repo), *words], capture_output=True,
                              text=True, check=True).stdout

    def files_of(commit: str) -> list[str]:
        return [p for p in git("diff-tree", "--no-commit-id", "-r", "--name-only",
                               "--no-renames", commit).split("\n") if p]

    with UpstreamStore(repo) as store:
        head = store.resolve("HEAD")

        def judge(landing: str, new: str = head) -> list:
            landing = store.resolve(landing)
            one = Landing("aiter", "x.patch", "x", landing, files_of(landing))
            return find_changes(store, [one], landing, store.resolve(new))

        print("1. known reverts, judged at the revert and at the head")
        for revert in KNOWN:
            original = git("log", "-1", "--format=%B", revert).split("This reverts commit ")[1][:40]
            said = []
            for new in (revert, head):
                ok = [c for c in judge(original, new) if c.reverted_by
                      and c.reverted_by.startswith(revert)]
                said.append(f"found ({ok[0].how})" if ok else "not said")
            print(f"  {revert} reverts {original[:10]}: at the revert {said[0]}; at the head "
                  f"{said[1]}")
        for new in ("fc91146141", head):
            found = judge("be195d1638", new)
            print(f"  fc91146141 (no revert line) undoes be195d1638, at {new[:10]}: "
                  + (f"found ({found[0].how})" if found and found[0].reverted_by
                     and found[0].reverted_by.startswith("fc91146141") else "not said"))

        print(f"2. {args.samples} ordinary landings (seed {args.seed})")
        named = set()
        for message in git("log", "--format=%B%x00", "HEAD").split("\x00"):
            for part in message.split("This reverts commit ")[1:]:
                named.add(part[:10])
        commits = git("rev-list", "--no-merges", "--max-count=2500", "HEAD").split()
        random.seed(args.seed)
        judged = undone = silent = 0
        for commit in random.sample(commits[200:], args.samples):
            if not 0 < len(files_of(commit)) <= 40:
                continue
            judged += 1
            found = [c for c in judge(commit) if c.reverted_by]
            subject = git("log", "-1", "--format=%s", commit).strip()[:60]
            if found:
                undone += 1
                print(f"  {commit[:10]} {subject!r}: undone by {found[0].reverted_by[:10]} "
                      f"({found[0].how}){' [named by a revert message]' if commit[:10] in named else ''}")
            elif commit[:10] in named:
                silent += 1
                print(f"  {commit[:10]} {subject!r}: named by a revert message, not said at "
                      "the head (its change is there again, or the revert took back none of "
                      "its lines): read it")
        print(f"  {undone} of {judged} judged landings found undone; {silent} named by a "
              "revert message and not said")

    print("3. cost")
    first = git("rev-list", "--first-parent", "HEAD").split()
    pool = git("rev-list", "--no-merges", f"{first[700]}..{first[320]}").split()
    for count, width in ((30, 50), (80, 50), (80, 300)):
        landings = [Landing("aiter", f"{c[:8]}.patch", "x", c, files_of(c)[:20])
                    for c in pool[:count]]
        times = []
        for _ in range(5):
            with UpstreamStore(repo) as store:
                start = time.perf_counter()
                find_changes(store, landings, first[300], first[300 - width])
                times.append(time.perf_counter() - start)
        print(f"  {count} recorded landings, {width} first-parent commits: median "
              f"{statistics.median(times) * 1000:.0f} ms (fastest {min(times) * 1000:.0f} ms)")


if __name__ == "__main__":
    main()
