"""A kept guard at the top of its block where other blocks of the file start alike: which of
the places its neighbours hold is the fix's. Blocks of no known function (a Lua file, a Python
module's top level): the place holding a context line the file has nowhere else (the block's
own header, `function k1(x)` / `# k1`) is the fix's, however many blank lines and first body
lines the look-alike blocks hold; no such place, no answer from the count. A known function
(`def k1`): a copy of the guard anywhere in the fix's own function is the fix's. Real git
history, through the CLI."""
from __future__ import annotations

import pytest

from helpers.project import OneUpstreamStack

HEADS = {"lua": b"-- kernels\nlocal cuda = require('cuda')\n\n\n",
         "top": b'"""Kernels."""\nimport torch\n\n\n', "def": b'"""Kernels."""\nimport torch\n\n\n'}
GUARDS = {"lua": b"  if x == nil then\n    error('x is needed')\n  end\n",
          "top": b"if x is None:\n    raise ValueError('x is needed')\n",
          "def": b"    if x is None:\n        raise ValueError('x is needed')\n"}
# The check upstream's own way, in one line.
OWN_WAY = {"lua": b"  if not x then error('x is required') end\n",
           "top": b"if x is None: raise ValueError('x is required')\n"}


def _path(form: str) -> str:
    return "pkg/k.lua" if form == "lua" else "pkg/k.py"


def _block(form: str, n: int, state: str, shared: set[int], edited: int) -> bytes:
    """Block k<n>: `shared` blocks start like k1 (`a = x`; k3 then shares two body lines, the
    others three); `edited`: how many lines right below the guard upstream rewrote; `state`:
    "" (no guard), "guard", "lower" (the guard one line down), "own" (the check upstream's
    way)."""
    ind = b"  local " if form == "lua" else b"    " if form == "def" else b""
    top = {"lua": b"function k%d(x)\n", "top": b"# k%d\nx = load()\n",
           "def": b"def k%d(x):\n"}[form] % n
    body = [ind + (b"a = x\n" if n in shared else b"a = x + %d\n" % n), ind + b"b = a * 2\n",
            ind + (b"c = b + 1\n" if n in (1, 2) or len(shared) < 3 else b"c = b + %d\n" % n), ind + b"d%d = c - %d\n" % (n, n),
            {"lua": b"  return d%d\nend\n", "top": b"out.append(d%d)\n",
             "def": b"    return d%d\n"}[form] % n]
    if edited:
        body[1] = body[1].replace(b"a * 2", b"a * 3")
    if edited > 1:
        body[2] = body[2].replace(b"b + 1", b"b + 5")
    if state == "lower":
        body.insert(1, GUARDS[form])
    elif state == "guard":
        top += GUARDS[form]
    elif state == "own":
        top += OWN_WAY[form]
    return top + b"".join(body)


def _file(form: str, guards: dict[int, str], shared=(1, 2), edited=None) -> bytes:
    """`edited`: block number -> how many lines below its guard upstream rewrote."""
    return HEADS[form] + b"\n\n".join(
        _block(form, n, guards.get(n, ""), set(shared), (edited or {}).get(n, 0))
        for n in range(4))


def _kept(tmp_path, form: str, pin: dict[int, str], shared=(1, 2)):
    """kfix1 adds the guard to k1; upstream lands it and the rebase keeps it."""
    path = _path(form)
    stack = OneUpstreamStack(tmp_path, {path: _file(form, pin, shared)})
    landed = {**pin, 1: "guard"}
    stack.add_fix("kfix1", path, _file(form, pin, shared), _file(form, landed, shared))
    stack.commit({path: _file(form, landed, shared)}, "k1: guard (#11)", tag="v2")
    stack.cli("rebase", "--to", "v2")
    assert (stack.root / "series/up/upstreamed/kfix1.patch").is_file()
    return stack, path


def _quiet(stack) -> None:
    assert stack.json("status", "--against", "v9")["gone_upstream"] == []
    stack.cli("rebase", "--to", "v9")
    stack.cli("check")


@pytest.mark.parametrize("form", ["lua", "top"])
def test_a_guard_taken_out_beside_blocks_holding_it_by_more_shared_lines_is_said(
        tmp_path, form):
    # k2 (starting like k1) and k3 hold the guard; upstream drops k1's while rewriting the
    # line below it: k2 holds the guard's neighbours as well as k1 its old code, but only k1
    # holds its header.
    pin = {2: "guard", 3: "guard"}
    stack, path = _kept(tmp_path, form, pin, shared=(1, 2, 3))
    content = _file(form, pin, shared=(1, 2, 3), edited={1: 1})
    drop = stack.commit({path: content}, "k1: other work (the guard dropped)", tag="v9")
    (said,) = stack.json("status", "--against", "v9", expect=1)["gone_upstream"]
    assert (said["name"], said["by"]) == ("kfix1.patch", drop), said
    assert f"commit {drop[:12]} took its change out" in said["detail"], said
    stack.cli("rebase", "--to", "v9", expect=1)


@pytest.mark.parametrize("form", ["lua", "top"])
def test_a_guard_still_in_its_block_while_a_look_alike_holds_its_old_code_is_quiet(
        tmp_path, form):
    # k3 had the guard before the fix; upstream drops it there and rewrites two lines below
    # k1's guard: k2 (no guard, starting like k1) holds the old code by more neighbours.
    stack, path = _kept(tmp_path, form, {3: "guard"})
    stack.commit({path: _file(form, {1: "guard"}, edited={1: 2})},
                 "k1: other work below the guard; k3: no check", tag="v9")
    _quiet(stack)


@pytest.mark.parametrize("form", ["lua", "top"])
def test_a_guard_upstream_made_its_own_way_in_its_block_is_quiet(tmp_path, form):
    stack, path = _kept(tmp_path, form, {})
    stack.commit({path: _file(form, {1: "own"})}, "k1: the check upstream's way", tag="v9")
    _quiet(stack)


@pytest.mark.parametrize("form", ["def", "top"])
@pytest.mark.parametrize("drop", ["in the same commit", "earlier"])
def test_a_guard_moved_a_line_lower_in_its_own_function_is_quiet(tmp_path, form, drop):
    # k2 (starting like k1) keeps its guard; k3's is dropped: the guard lines are one fewer in
    # the file than the fix left, but k1 still holds its own.
    pin = {2: "guard", 3: "guard"}
    stack, path = _kept(tmp_path, form, pin)
    if drop == "earlier":
        stack.commit({path: _file(form, {1: "guard", 2: "guard"})}, "k3: no check", tag="v8")
    stack.commit({path: _file(form, {1: "lower", 2: "guard"})},
                 "k1: check after the first step; k3: no check", tag="v9")
    _quiet(stack)
