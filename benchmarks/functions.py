"""Which fixes the another-function rule stops on real code: a one-line fix made inside functions
of AITER's files, carried to a later version by git's own 3-way merge.

    python3 benchmarks/functions.py [--repo DIR] [--base REV] [--target REV] [--per-file 3]

For every `.py` and C-family file changed between BASE and TARGET, `--per-file` lines inside a
function (drawn with a fixed seed) each get a fix of their own (a comment appended to the line);
`git merge-file` carries each onto the target's file, and `apply.hunks.another_function` says
whether the merge put the change into another function than the fix's while that one still has
the code the fix is made on (the rebase then stops). Printed: each such case (file, line at
BASE, the fix's function, the one the merge changed, its line at TARGET), then how many fixes
were tried, merged cleanly, and stopped. It measures the rule's reach, not time: each stop is a
case to read (git's merge put the fix into a copy, or upstream moved the code).
"""
from __future__ import annotations

import argparse
import random
import subprocess
import sys
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parent.parent), str(Path(__file__).resolve().parent)]
from stops import default_repo  # noqa: E402

from patchforge.apply.diffparse import split_lines  # noqa: E402
from patchforge.apply.hunks import (CFile, _definitions_of, _language, another_function,  # noqa: E402
                                    file_changes)
from patchforge.store.diff import merge_file  # noqa: E402


def show(repo: Path, rev: str, path: str) -> bytes | None:
    proc = subprocess.run(["git", "-C", str(repo), "show", f"{rev}:{path}"], capture_output=True)
    return proc.stdout if proc.returncode == 0 else None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", type=Path, default=default_repo())
    parser.add_argument("--base", default="v0.1.18")
    parser.add_argument("--target", default="main")
    parser.add_argument("--per-file", type=int, default=3)
    args = parser.parse_args()
    if args.repo is None:
        parser.error("no AITER clone: pass --repo (or set PATCHFORGE_BENCH_AITER)")
    changed = subprocess.run(["git", "-C", str(args.repo), "diff", "--name-only", args.base,
                              args.target], capture_output=True, check=True, text=True)
    draw = random.Random(7)
    tried = clean = stopped = 0
    for path in changed.stdout.split():
        language = _language(path)
        base, target = show(args.repo, args.base, path), show(args.repo, args.target, path)
        if language is None or base is None or target is None or base == target:
            continue
        lines = split_lines(base)
        c_file = CFile(lines) if language == "c" else None  # its blocks read once
        inside = [k for k, line in enumerate(lines) if line[:1] in (b" ", b"\t")
                  and len(line.strip()) > 8 and _definitions_of(lines, k, line, language, c_file)]
        for k in draw.sample(inside, min(args.per_file, len(inside))):
            line = lines[k]
            text = line.rstrip(b"\r\n")
            mark = b"  # fix" if language == "python" else b" /* fix */"
            fixed = b"".join([*lines[:k], text + mark + line[len(text):], *lines[k + 1:]])
            merged_cleanly, merged = merge_file(base, target, fixed)
            tried += 1
            if not merged_cleanly:
                continue
            clean += 1
            found = another_function(path, base, file_changes(base, fixed), target,
                                     file_changes(target, merged))
            if found is not None:
                stopped += 1
                print(f"{path}:{k + 1}: the fix changes {found[0].decode()}, the merge "
                      f"{found[1].decode()} (line {found[2]})", flush=True)
    print(f"{args.base}..{args.target}: {tried} fixes, {clean} merged cleanly, {stopped} stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
