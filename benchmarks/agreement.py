#!/usr/bin/env python3
"""Do `status` and `rebase` judge a real series alike? `status --against T --json` next to
`rebase --to T --dry-run --json`, patch by patch, on a real AITER work branch.

    python3 benchmarks/agreement.py [--repo DIR] [--branch B] [--target REV]... [--other DIR]

The series is the one benchmarks/stops.py builds (an AITER work branch's history since it left
the main branch, one patch per first-parent commit, imported with `import git`; cached under
`<bench>/aiter-stops-*`). For each TARGET (default: the one stops.py uses, and four later
commits of the main branch, evenly spread to its head), it prints how many patches status says
a rebase will drop / move / stop, what the dry run did, and every patch where they differ.
`--other DIR` runs a second patchforge source tree on the same cases (an earlier commit, say), so
a change is seen side by side in one run. Exit 1 when the tree beside this script disagrees.

It measures agreement, not time: status and rebase must call one judge, so the count of
disagreements must be 0.
"""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parent.parent), str(Path(__file__).resolve().parent)]
from stops import REPO, build_series, default_repo, pf, pf_env  # noqa: E402

# What each dry-run action means for status's `rebase` word ("conflict" is any stop).
WORD = {"clean": "move", "offset": "move", "merged": "move", "dropped": "drop",
        "conflict": "stop"}


def judge_both(work: Path, target: str, code: Path, scratch: Path) -> dict:
    project = scratch / f"pf-{code.name}-{target[:10]}"
    shutil.copytree(work / "pf-template", project, symlinks=True)
    env = pf_env(work / "pf-cache", code)
    status = json.loads(pf(project, env, "status", "--against", f"aiter={target}", "--json",
                           ok=(0, 1)).stdout)
    rebase = json.loads(pf(project, env, "rebase", "--to", f"aiter={target}", "--dry-run",
                           "--json", ok=(0, 1)).stdout)
    said = {p["name"]: (p["state"], p["rebase"]) for p in status["patches"]}
    did = {p["name"]: p["action"] for p in rebase["patches"]}
    return {"said": Counter(how for _, how in said.values()),
            "did": Counter(WORD.get(a, a) for a in did.values()),
            "differ": {n: (said[n], did.get(n)) for n in said
                       if WORD.get(did.get(n, ""), "?") != said[n][1]}}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", type=Path, default=default_repo())
    parser.add_argument("--branch", default="zxe/fused_dispatch_gemm1_gfx1250")
    parser.add_argument("--target", action="append", default=[])
    parser.add_argument("--other", type=Path, action="append", default=[])
    args = parser.parse_args(argv)
    if args.repo is None or not Path(args.repo).is_dir():
        raise SystemExit("no AITER repository: pass --repo (a clone of github.com/ROCm/aiter)")
    work = build_series(args.repo, args.branch)
    targets = args.target
    if not targets:
        later = subprocess.run(["git", "-C", str(args.repo), "rev-list", "--first-parent",
                                "d7c4c77bf012474869464bab9ab6553b6c08003f..HEAD"],
                               capture_output=True, text=True, check=True).stdout.split()
        targets = ["d7c4c77bf012474869464bab9ab6553b6c08003f"] + \
            [later[i] for i in range(0, len(later), max(1, len(later) // 4))][:4]
    codes = [REPO, *[p.resolve() for p in args.other]]
    failed = False
    with tempfile.TemporaryDirectory(prefix="pf-agreement-") as tmp:
        for target in targets:
            for code in codes:
                got = judge_both(work, target, code, Path(tmp))
                print(f"{target[:10]}  {code}: status says {dict(got['said'])}; the dry run "
                      f"did {dict(got['did'])}; {len(got['differ'])} disagree")
                for name, (said, did) in sorted(got["differ"].items()):
                    print(f"    {name}: status {said[0]} ({said[1]}), rebase {did}")
                failed = failed or (code == REPO and bool(got["differ"]))
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
