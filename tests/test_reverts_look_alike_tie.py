"""A kept landing of a line in one of several look-alike blocks of no known function (a text file
of steps, no block with a line of its own), another block holding the same line since the pin.
Upstream then drops the line from the fix's block and, in the same commit, rewrites a neighbour
line in every block, so the fix's diff applies neither way and its changed lines are read
among their neighbours: the post-image held at the other block as many times as the pre-image
at the fix's, a tie, was read as the fix there, exit 0, the line in no overlay. Upstream's own
diff of the file since the fix's base tells which block the fix's became: taken out, said
naming the commit; the other block's line dropped instead, quiet. Real git history, through
the CLI."""
from __future__ import annotations

import pytest

from helpers.project import OneUpstreamStack

GUARD = b"  guard\n"


def _block(guard: bool, edited: bool) -> bytes:
    return b"run:\n  setup\n" + (GUARD if guard else b"") + b"  check\n  build\n" + \
        (b"  test --all\n" if edited else b"  test\n")


def _steps(n: int, guarded: set[int], edited: bool = False) -> bytes:
    return b"# steps\n\n" + b"\n".join(_block(k in guarded, edited) for k in range(1, n + 1))


@pytest.mark.parametrize("n, mine, other", [(2, 2, 1), (2, 1, 2), (3, 2, 1), (4, 3, 1)])
@pytest.mark.parametrize("dropped", ["the fix's", "the other"])
def test_a_line_dropped_from_one_of_look_alike_blocks_of_no_function(tmp_path, n, mine, other,
                                                                      dropped):
    base = _steps(n, {other})
    fixed = _steps(n, {other, mine})
    stack = OneUpstreamStack(tmp_path, {"ci/steps.txt": base})
    stack.add_fix("fix", "ci/steps.txt", base, fixed)
    stack.commit({"ci/steps.txt": fixed}, "steps: guard (#5)", tag="v2")
    stack.dropped_as_landed("up=v2")
    left = {other, mine} - {mine if dropped == "the fix's" else other}
    took = stack.commit({"ci/steps.txt": _steps(n, left, edited=True)}, "steps: rework")
    head = stack.upstream.head()
    if dropped == "the other":
        doc = stack.json("status", "--against", f"up={head}")
        assert doc["gone_upstream"] == [] and doc["reverted"] == [], doc
        return
    doc = stack.json("status", "--against", f"up={head}", expect=1)
    (said,) = doc["reverted"] + doc["gone_upstream"]
    assert (said["name"], said["kind"], said["by"]) == ("fix.patch", "removed", took), said
    stack.cli("rebase", "--to", f"up={head}", expect=1)
    _, out, _ = stack.cli("status", expect=1)
    assert took[:12] in out, out
    # The advised bring-back puts the line back into the fix's block, once.
    stack.cli("bring-back", "up/fix.patch")
    assert stack.series("up") == ["fix.patch"]
    stack.cli("overlays")
    made = (stack.root / "overlays/up/ci/steps.txt").read_bytes()
    assert made == _steps(n, {other, mine}, edited=True), made
    stack.cli("status")
