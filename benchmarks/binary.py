"""Git binary patches: patchforge reading and applying them against `git apply` doing the same.

    python3 benchmarks/binary.py [--runs 5] [--sizes 262144,8388608]

For each size, a deterministic random "compiled kernel" and two fixes of it: a small change (16
places of 64 bytes rewritten, which git writes as a `delta` block) and a rewrite (a `literal`
block). The patch is made once by patchforge (`store.diff.make_diff`, which has git write the
binary section). The work measured, for each tool, is: read the patch, check the pre-image blob,
make the post-image and check its blob. patchforge: `parse_diff` (base85, inflate, the delta's
opcodes checked) then `apply_file_patch`, in this process; the peer: `git apply` of the same
patch file onto the same file in a scratch directory (outside any repository). Printed: the
median CPU seconds (user + system; the peer's are its child process's) of `--runs` runs, and
the ratio patchforge / git.
"""
from __future__ import annotations

import argparse
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _cases(size: int) -> list[tuple[str, bytes, bytes]]:
    rng = random.Random(size)
    old = rng.randbytes(size)
    small = bytearray(old)
    for k in range(16):
        at = (k * size) // 16
        small[at:at + 64] = rng.randbytes(64)
    return [("delta", old, bytes(small)), ("literal", old, rng.randbytes(size))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--sizes", default="262144,8388608")
    args = parser.parse_args()

    from patchforge.apply.diffparse import parse_diff
    from patchforge.apply.hunks import apply_file_patch
    from patchforge.store.diff import FileChange, make_diff

    print(f"{'size':>10} {'block':>8} {'patch':>10} {'patchforge CPU s':>17} "
          f"{'git apply CPU s':>16} {'ratio':>6}")
    for size in (int(s) for s in args.sizes.split(",")):
        for kind, old, new in _cases(size):
            diff = make_diff([FileChange.at("hsa/gfx950/k.co", old, new)])
            assert f"GIT binary patch\n{kind} ".encode() in diff, kind
            ours, theirs = [], []
            with tempfile.TemporaryDirectory(prefix="pf-bench-binary-") as tmp:
                work = Path(tmp)
                (work / "change.patch").write_bytes(diff)
                for _ in range(args.runs):
                    start = time.process_time()
                    (fp,) = parse_diff(diff, source="change.patch")
                    result = apply_file_patch(old, fp)
                    ours.append(time.process_time() - start)
                    assert result.ok and result.content == new
                    (work / "hsa/gfx950").mkdir(parents=True, exist_ok=True)
                    (work / "hsa/gfx950/k.co").write_bytes(old)
                    before = _children_cpu()
                    subprocess.run(["git", "apply", "change.patch"], cwd=work, check=True)
                    theirs.append(_children_cpu() - before)
                    assert (work / "hsa/gfx950/k.co").read_bytes() == new
            a, b = statistics.median(ours), statistics.median(theirs)
            print(f"{size:>10} {kind:>8} {len(diff):>10} {a:>17.3f} {b:>16.3f} "
                  f"{a / b if b else float('nan'):>6.2f}")


if __name__ == "__main__":
    main()
