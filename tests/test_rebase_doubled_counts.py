"""A fix's line upstream wrote its own way in the fix's function while, in the same range, it took
the same line out of another function of that file nearby (the line dropped, the function
deleted or moved to another file). The doubling check counted the line near the fix's place in
the file the fix was made on (the other function's copy) and in the target (upstream's own): the
counts evened out, and the rebase merged the fix's copy in beside upstream's, exit 0, the line
twice in the fix's function. A copy the target no longer has near the place (upstream took it
out) is no copy the base's count may hold against upstream's new one. The neighbours: the other
function's copy left alone stops as before; the line taken out of the other function while
upstream added it elsewhere (not in the fix's function) moves, both kept. Real git upstreams,
real commands."""
from __future__ import annotations

import pytest

from helpers.project import OneUpstreamStack

GUARD = (b"    if x is None or x.numel() == 0:\n"
         b"        raise ValueError('an empty input is never launched')\n")
THEIRS = (b"    if x is None or x.numel() == 0:\n"
          b'        raise ValueError("an empty input is never launched")\n')


def function(name: bytes, head: bytes = b"", steps: int = 3, lower: bytes = b"") -> bytes:
    """`def NAME(x):` with `head` first, then `steps` steps, `lower` after the first."""
    lines = [b"    s%d = step(x, %d)\n" % (k, k) for k in range(steps)]
    lines[0] += lower
    return b"def %s(x):\n" % name + head + b"".join(lines) + b"    return s%d\n" % (steps - 1)


def module(*functions: bytes) -> bytes:
    return b'"""Kernels."""\n\n\n' + b"\n\n".join(functions)


def stack_with(tmp_path, base: bytes, fix: bytes, upstream: bytes,
               moved: bytes | None = None) -> OneUpstreamStack:
    files = {"pkg/a.py": base, "pkg/b.py": b"b = 1\n"}
    stack = OneUpstreamStack(tmp_path, files)
    stack.add_fix("fa", "pkg/a.py", base, fix)
    change = {"pkg/a.py": upstream}
    if moved is not None:
        change["pkg/b.py"] = b"b = 1\n\n\n" + moved
    stack.commit(change, "Check the input where it is launched", tag="v2")
    return stack


def stops(stack: OneUpstreamStack) -> None:
    status = stack.json("status", "--against", "v2", expect=1)
    assert [p["state"] for p in status["patches"]] == ["conflict"], status["patches"]
    _, _, err = stack.cli("rebase", "--to", "v2", expect=3)
    assert "upstream has these lines already, its own way" in err, err


def moves_with(stack: OneUpstreamStack, copies: int) -> None:
    status = stack.json("status", "--against", "v2", expect=None)
    assert [p["rebase"] for p in status["patches"]] == ["move"], status["patches"]
    summary = stack.rebase_json("--to", "v2")
    assert [p["action"] for p in summary["patches"]] in (["clean"], ["offset"], ["merged"]), \
        summary["patches"]
    stack.cli("overlays")
    made = (stack.root / "overlays/up/pkg/a.py").read_bytes()
    assert made.count(b"if x is None or x.numel() == 0:") == copies, made.decode()


@pytest.mark.parametrize("how", ["dropped", "deleted", "moved"])
def test_upstreams_own_copy_while_it_takes_the_line_out_of_the_next_function_stops(
        tmp_path, how):
    # k1 (the fix's) and k2 (holding the guard at the base, six lines lower). Upstream adds
    # the guard its own way to k1 and takes it out of k2 (dropped, k2 deleted, or k2 moved to
    # pkg/b.py): one copy near the fix's place on both sides, and the fix merged in twice.
    base = module(function(b"k1"), function(b"k2", GUARD), function(b"k3", steps=8))
    fix = base.replace(b"def k1(x):\n", b"def k1(x):\n" + GUARD)
    theirs_k1 = function(b"k1", lower=THEIRS)
    k2 = {"dropped": function(b"k2"), "deleted": b"", "moved": b""}[how]
    upstream = module(*(part for part in (theirs_k1, k2, function(b"k3", steps=8)) if part))
    stops(stack_with(tmp_path, base, fix, upstream,
                     function(b"k2", GUARD) if how == "moved" else None))


def test_the_next_functions_copy_left_alone_stops(tmp_path):
    # Neighbour: k2 keeps its guard; upstream's own copy in k1 is one more: stops, as before.
    base = module(function(b"k1"), function(b"k2", GUARD), function(b"k3", steps=8))
    fix = base.replace(b"def k1(x):\n", b"def k1(x):\n" + GUARD)
    upstream = base.replace(function(b"k1"), function(b"k1", lower=THEIRS))
    stops(stack_with(tmp_path, base, fix, upstream))


def test_the_line_taken_out_of_the_next_function_and_put_in_a_third_moves(tmp_path):
    # Mirror: upstream moves k2's guard down into k3 (not the fix's function); the fix's k1
    # gets its own guard, k3 keeps upstream's: two functions checked, both wanted.
    base = module(function(b"k1"), function(b"k2", GUARD), function(b"k3"))
    fix = base.replace(b"def k1(x):\n", b"def k1(x):\n" + GUARD)
    upstream = module(function(b"k1"), function(b"k2"), function(b"k3", THEIRS))
    moves_with(stack_with(tmp_path, base, fix, upstream), 2)


def test_the_line_taken_out_of_the_next_function_alone_moves(tmp_path):
    # Mirror: upstream only drops k2's guard; k1 has none of its own: the fix's is the one.
    base = module(function(b"k1"), function(b"k2", GUARD), function(b"k3", steps=8))
    fix = base.replace(b"def k1(x):\n", b"def k1(x):\n" + GUARD)
    upstream = module(function(b"k1"), function(b"k2"), function(b"k3", steps=8))
    moves_with(stack_with(tmp_path, base, fix, upstream), 1)
