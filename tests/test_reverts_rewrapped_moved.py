"""A kept landing of a guard at a function's top that upstream, in one commit, re-wraps black's
way (its condition in parentheses over several lines) and moves a few lines down within the
function. The lines' copy was looked for line by line, so the wrapped guard was found nowhere
in the function: read as taken out of it by that commit, the fix was said taken back in part
(exit 1, "possibly doubled"), and the bring-back it advised put the plain guard back beside
upstream's, twice, exit 0. Read as the file's near text, the wrapped guard is the fix's moved
within its function: nothing said. Real git history, through the CLI."""
from __future__ import annotations

import pytest

from helpers.project import OneUpstreamStack

STEPS = 10
PLAIN = b"    if x is None and not torch.cuda.is_available():\n" \
    b"        raise ValueError('x is needed')\n"
BLACK = b"    if (\n        x is None\n        and not torch.cuda.is_available()\n    ):\n" \
    b"        raise ValueError(\"x is needed\")\n"
SYNC = b"    torch.cuda.synchronize()\n"


def _kernel(n: int, guard: bytes = b"", at: int = 0, sync: bool = False) -> bytes:
    lines = [b"    step0 = x\n"] + [b"    step%d = step%d + %d\n" % (i, i - 1, 100 * n + i)
                                     for i in range(1, STEPS)]
    if guard:
        lines.insert(at, guard)
    return b"def k%d(x):\n" % n + b"".join(lines) + (SYNC if sync else b"") + \
        b"    return step%d\n" % (STEPS - 1)


def _file(k0: bytes) -> bytes:
    return b'"""Kernels."""\nimport torch\n\n\n' + b"\n\n".join(
        [k0] + [_kernel(n) for n in range(1, 4)])


@pytest.mark.parametrize("sync", [False, True])
def test_a_guard_upstream_rewrapped_and_moved_within_its_function_is_quiet(tmp_path, sync):
    base = _file(_kernel(0))
    fixed = _file(_kernel(0, PLAIN, sync=sync))
    stack = OneUpstreamStack(tmp_path, {"pkg/k.py": base})
    stack.add_fix("kfix", "pkg/k.py", base, fixed)
    stack.commit({"pkg/k.py": fixed}, "k0: check x (#10)", tag="v2")
    stack.dropped_as_landed("up=v2")
    moved = _file(_kernel(0, BLACK, at=3, sync=sync))
    stack.commit({"pkg/k.py": moved}, "k0: format, check after the first steps", tag="v3")
    assert stack.json("status", "--against", "v3")["gone_upstream"] == []
    stack.cli("rebase", "--to", "v3")
    stack.cli("check")
    stack.cli("status")
