"""The reverted-landing check (patchforge.reverts: the tree first, the history to name the commit)
on the real AITER history: what it says and what it costs.

    python3 benchmarks/reverts.py [--repo DIR] [--samples 150] [--seed 1] [--runs 5]

Each landing is a fix made from a real commit X (its diff of text files, at most 20 of them),
kept as under upstreamed/ with `Applied-Upstream: commit:X` and `Base: X^`, then judged at a
revision as `status` and `rebase --to` judge it.
1. Known reverts: every commit whose message says `This reverts commit X`, X taken as the
   landing, judged at the revert (it must be said reverted, by that commit) and at the head
   (said, or quiet where upstream has the change again or changed the code since). And
   `fc91146141` ("Revert DO runner smoke test", no such line), the exact reverse of
   `be195d1638`, judged at itself.
2. Ordinary landings: `--samples` commits drawn at random (`--seed`), judged at the head:
   every one said (reverted, or a quiet note) is printed with the commit named, to be read.
3. Cost: 30 landings judged at a revision 50 and 300 first-parent commits after them, all
   together as `status` judges what is kept under upstreamed/ (reverts.judge_many), median
   of `--runs` runs (a fresh store each run), and the same with the one revert among them. Run
   `uptime` first; the machine's load moves these figures: each time is given with its CPU
   (this process and the git processes it waited for, the store's cat-file included where
   the store is closed in the time: not in part 2's judging one by one), which the load
   moves less. Part 2 also judges its landings together, as commands judge them.
The repository is read, never written: `--repo` (default: the bare mirror the other benchmarks
use, /work/.mirror/ROCm+aiter/repo).
"""
from __future__ import annotations

import argparse
import random
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from patchforge.reverts import _file_state, _parse, judge_many  # noqa: E402
from patchforge.store.gitstore import UpstreamStore  # noqa: E402

HAND_MADE = ("fc91146141", "be195d1638")


def cpu_time() -> float:
    """CPU seconds of this process and of the children it has waited for (git)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), \
        resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", type=Path, default=Path("/work/.mirror/ROCm+aiter/repo"))
    parser.add_argument("--samples", type=int, default=150)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    repo = args.repo

    def git(*words: str) -> str:
        return subprocess.run(["git", "--git-dir", str(repo), *words], capture_output=True,
                              text=True, check=True).stdout

    made: dict[str, bytes | None] = {}

    def kept(commit: str) -> bytes | None:
        """The fix file of a landing `commit`: its diff of text files (at most 20)."""
        if commit not in made:
            numstat = git("diff-tree", "--no-commit-id", "-r", "--numstat", "--no-renames",
                          f"{commit}^", commit)
            files = [line.split("\t", 2)[2] for line in numstat.splitlines()
                     if line and not line.startswith("-\t")][:20]
            diff = subprocess.run(["git", "--git-dir", str(repo), "diff", "--full-index",
                                   "--no-renames", f"{commit}^", commit, "--", *files],
                                  capture_output=True, check=True).stdout if files else b""
            made[commit] = (f"Description: landing {commit[:10]}\nApplied-Upstream: "
                            f"commit:{commit}\nBase: {git('rev-parse', commit + '^').strip()}"
                            "\n\nmade from the commit\n---\n").encode() + diff \
                if diff.strip() else None
        return made[commit]

    def judge(store: UpstreamStore, commit: str, at: str):
        data = kept(commit)
        if data is None:
            return "no text change"
        unread: list[tuple[str, str]] = []
        found = judge_many(store, "aiter", [(f"{commit[:10]}.patch",
                                             f"series/aiter/upstreamed/{commit[:10]}.patch",
                                             data, {})], at, unread=unread)
        if unread:
            # (A fix the judge could not read, a git process failing under load say: never
            # counted quiet, which once hid such a run among five.)
            return "not judged: " + "; ".join(" ".join(why.split()) for _, why in unread)
        return found[0] if found else None

    def said(found) -> str:
        if found is None:
            return "quiet"
        if isinstance(found, str):
            return found
        return f"{found.kind}" + (f" by {found.by[:10]}" if found.by else "") + \
            f" ({found.detail})"

    def tree(store: UpstreamStore, commit: str, at: str) -> str:
        """Why a landing is not said at `at`: the landing not in its history, or each of its
        files' state there (present, gone: the pre-image back exactly, other)."""
        if not store.is_ancestor(commit, at):
            return "the landing is not in its history (a commit of another branch)"
        data = kept(commit)
        fix = _parse("aiter", "x.patch", "x", data) if data else None
        if fix is None:
            return "no text change to judge"
        contents = store.read_blobs(at, [fp.path for fp in fix.files])
        states = [_file_state(fp, contents[fp.path]) for fp in fix.files]
        return f"files {', '.join(f'{states.count(s)} {s}' for s in sorted(set(states)))} " \
            "(the pre-image not back exactly everywhere: upstream changed the code otherwise)"

    with UpstreamStore(repo) as store:
        head = store.resolve("HEAD")
        print("1. known reverts, judged at the revert and at the head")
        reverts = git("log", "--format=%H", "--grep=This reverts commit", "HEAD").split()
        right = 0
        said_ones: list[tuple[str, str]] = []
        reasons: dict[str, int] = {}
        for revert in reverts:
            message = git("log", "-1", "--format=%B", revert)
            original = message.split("This reverts commit ")[1][:40].rstrip(".,")
            try:
                original = store.resolve(original)
            except Exception:  # noqa: BLE001 - a revert of a commit outside this history
                print(f"  {revert[:10]} reverts {original[:10]}: not in this history")
                continue
            at_revert = judge(store, original, revert)
            ok = not isinstance(at_revert, str) and at_revert is not None and \
                at_revert.reverted and at_revert.by == revert
            right += ok
            if ok:
                said_ones.append((revert, original))
            why = "" if ok else f"  <- not said: {tree(store, original, revert)}"
            if not ok:
                reason = "not in its history" if "history" in why else "no text change" \
                    if "no text" in why else "pre-image not back exactly"
                reasons[reason] = reasons.get(reason, 0) + 1
            print(f"  {revert[:10]} reverts {original[:10]}: at the revert "
                  f"{said(at_revert)}; at the head {said(judge(store, original, head))}{why}")
        print(f"  {right} of {len(reverts)} said reverted by the revert itself; the others: "
              + ", ".join(f"{n} {why}" for why, n in sorted(reasons.items())))
        revert, original = (store.resolve(c) for c in HAND_MADE)
        print(f"  {HAND_MADE[0]} (no revert line) undoes {HAND_MADE[1]}: at itself "
              f"{said(judge(store, original, revert))}; at the head "
              f"{said(judge(store, original, head))}")

        print(f"2. {args.samples} ordinary landings (seed {args.seed}), judged at the head")
        commits = git("rev-list", "--no-merges", "--max-count=2500", "HEAD").split()
        random.seed(args.seed)
        counts: dict[str, int] = {}
        started, cpu_started = time.perf_counter(), cpu_time()
        sample = random.sample(commits[200:], args.samples)
        for commit in sample:
            found = judge(store, commit, head)
            kind = found.split(":")[0] if isinstance(found, str) else found.kind if found \
                else "quiet"
            counts[kind] = counts.get(kind, 0) + 1
            if found is not None and not isinstance(found, str):
                subject = git("log", "-1", "--format=%s", commit).strip()[:60]
                print(f"  {commit[:10]} {subject!r}: {said(found)}")
        print("  " + ", ".join(f"{n} {kind}" for kind, n in sorted(counts.items())) +
              f" ({time.perf_counter() - started:.1f} s, CPU {cpu_time() - cpu_started:.1f} s; "
              "each judged alone, its fix file made in the time)")
    # As commands judge what is kept under upstreamed/: all at once, in a fresh store.
    items = [(f"{c[:10]}.patch", f"series/aiter/upstreamed/{c[:10]}.patch", kept(c), {})
             for c in sample if kept(c) is not None]
    with UpstreamStore(repo) as store:
        started, cpu_started = time.perf_counter(), cpu_time()
        unread: list[tuple[str, str]] = []
        together = judge_many(store, "aiter", items, head, unread=unread)
        spent = time.perf_counter() - started
    print(f"  the same {len(items)} judged together (reverts.judge_many, as status judges "
          f"them): {len(together)} said ({', '.join(g.name[:10] for g in together)}) "
          f"({spent:.1f} s, CPU {cpu_time() - cpu_started:.1f} s)"
          + "".join(f"; NOT JUDGED {name[:10]}: {' '.join(why.split())}"
                    for name, why in unread))

    print("3. cost")
    first = git("rev-list", "--first-parent", "HEAD").split()
    pool = [c for c in git("rev-list", "--no-merges", f"{first[700]}..{first[320]}").split()]
    fixes = [c for c in pool if kept(c) is not None][:30]
    for width in (50, 300):
        times, cpus = [], []
        items = [(f"{c[:10]}.patch", f"series/aiter/upstreamed/{c[:10]}.patch", kept(c), {})
                 for c in fixes]
        for _ in range(args.runs):
            with UpstreamStore(repo) as store:
                start, cpu_start = time.perf_counter(), cpu_time()
                said_now = judge_many(store, "aiter", items, first[320 - width])
                times.append(time.perf_counter() - start)
            # (Taken once the store is closed: its cat-file's CPU is counted then.)
            cpus.append(cpu_time() - cpu_start)
        gone = [said(found) for found in said_now]
        print(f"  30 landings judged {width} first-parent commits later: median "
              f"{statistics.median(times) * 1000:.0f} ms (min {min(times) * 1000:.0f}, max "
              f"{max(times) * 1000:.0f}), CPU median {statistics.median(cpus) * 1000:.0f} ms; "
              f"said: {'; '.join(gone) or 'nothing'}")
    # A change found gone costs the history too: each revert said in part 1, judged at the
    # revert itself (the walk of landing..revert, the file states at its commits).
    costs = []
    with UpstreamStore(repo) as store:
        for revert, original in said_ones:
            start = time.perf_counter()
            judge(store, original, revert)
            costs.append(time.perf_counter() - start)
    print(f"  each of the {len(costs)} reverts said, judged at the revert (history walk "
          f"included): median {statistics.median(costs) * 1000:.0f} ms, max "
          f"{max(costs) * 1000:.0f} ms")


if __name__ == "__main__":
    main()
