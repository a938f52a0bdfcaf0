"""Kept landings (a guard at a block's top and a synchronize before its end) where the function
a hunk changes is not known here: blocks at a Python module's top level, a file of a language
not known here (Lua), a function upstream renamed. Another block that starts alike holds
another kept fix's same lines. Upstream then drops the guard while rewriting the line below it,
or drops the synchronize alone: the hunk's neighbours held it at the other block too (the blank
lines and first body line every block has), read as the fix's there or as no place at all, so
the fix was said superseded (exit 0), the line in no overlay and not upstream. Of the places
its neighbours hold, the one holding more of them is the fix's (its block's own first line):
taken back in part, said. The same guard moved into a third block is not said. Real git
history, through the CLI."""
from __future__ import annotations

import pytest

from helpers.project import OneUpstreamStack

STEPS = 10
FORMS = {
    # path, the module's head, a block's first line, its guard, its synchronize, its step, end
    "top": ("pkg/k.py", b'"""Kernels."""\nimport torch\n\n\n', b"# k%d\nx = load()\n",
            b"if x is None and not torch.cuda.is_available():\n"
            b"    raise ValueError('x is needed')\n",
            b"torch.cuda.synchronize()\n", b"step%d = step%d + %d\n", b"out.append(step9)\n"),
    "lua": ("pkg/k.lua", b"-- kernels\nlocal cuda = require('cuda')\n\n\n", b"function k%d(x)\n",
            b"  if x == nil and not cuda.available() then\n    error('x is needed')\n  end\n",
            b"  cuda.synchronize()\n", b"  local step%d = step%d + %d\n",
            b"  return step9\nend\n"),
    "renamed": ("pkg/k.py", b'"""Kernels."""\nimport torch\n\n\n', b"def k%d(x):\n",
                b"    if x is None and not torch.cuda.is_available():\n"
                b"        raise ValueError('x is needed')\n",
                b"    torch.cuda.synchronize()\n", b"    step%d = step%d + %d\n",
                b"    return step9\n"),
}


def _file(form: str, parts: dict[int, dict]) -> bytes:
    path, head, first, guard, sync, step, end = FORMS[form]
    blocks = []
    for n in range(4):
        state = parts.get(n, {})
        top = first % n if b"%d" in first else first
        if state.get("renamed"):
            top = top.replace(b"k0(", b"k0_impl(")
        steps = [step.replace(b"step%d + %d", b"x") % 0] + \
            [step % (i, i - 1, 100 * n + i) for i in range(1, STEPS)]
        if state.get("edited"):
            steps[0] = steps[0].replace(
                b"= x", b"= x:contiguous()" if form == "lua" else b"= x.contiguous()")
        blocks.append(top + (guard if state.get("guard") else b"") + b"".join(steps) +
                      (sync if state.get("sync") else b"") + end)
    return head + b"\n\n".join(blocks)


def _landed(tmp_path, form: str):
    """kfix0 (k0) and kfix1 (k1), each a guard and a synchronize, landed upstream one after
    the other and kept by the rebases onto them."""
    path = FORMS[form][0]
    stack = OneUpstreamStack(tmp_path, {path: _file(form, {})})
    parts: dict[int, dict] = {}
    for n in (0, 1):
        before = _file(form, parts)
        parts[n] = {"guard": True, "sync": True}
        stack.add_fix(f"kfix{n}", path, before, _file(form, parts))
    parts = {}
    for n in (0, 1):
        parts[n] = {"guard": True, "sync": True}
        stack.commit({path: _file(form, parts)}, f"k{n}: guard and sync (#{10 + n})",
                     tag=f"v{n + 2}")
        stack.cli("rebase", "--to", f"v{n + 2}")
        assert (stack.root / f"series/up/upstreamed/kfix{n}.patch").is_file(), n
    return stack, parts, path


@pytest.mark.parametrize("form", sorted(FORMS))
@pytest.mark.parametrize("drop", ["the guard, rewriting the line below", "the synchronize"])
def test_a_line_taken_out_of_a_block_of_no_known_function_is_said(tmp_path, form, drop):
    stack, parts, path = _landed(tmp_path, form)
    gone = {"guard": False, "edited": True} if drop.startswith("the guard") else {"sync": False}
    renamed = {"renamed": True} if form == "renamed" else {}
    dropped = {**parts, 0: {**parts[0], **gone, **renamed}}
    drop_commit = stack.commit({path: _file(form, dropped)}, "k0: other work", tag="v9")
    (said,) = stack.json("status", "--against", "v9", expect=1)["gone_upstream"]
    assert (said["name"], said["by"]) == ("kfix0.patch", drop_commit), said
    hunk = 1 if drop.startswith("the guard") else 2
    assert f"taken back in part: {path} hunk {hunk}, the rest of its change" in said["detail"], \
        said
    stack.cli("rebase", "--to", "v9", expect=1)
    for command in (("check",), ("status",)):
        _, out, err = stack.cli(*command, expect=1)
        assert "up/kfix0.patch" in out + err and "taken back in part" in out + err, \
            (command, out + err)


@pytest.mark.parametrize("form", sorted(FORMS))
def test_a_guard_moved_into_another_block_of_no_known_function_is_quiet(tmp_path, form):
    stack, parts, path = _landed(tmp_path, form)
    renamed = {"renamed": True} if form == "renamed" else {}
    moved = {**parts, 0: {**parts[0], "guard": False, "edited": True, **renamed},
             2: {"guard": True}}
    stack.commit({path: _file(form, moved)}, "k0: other work, the check in k2", tag="v9")
    assert stack.json("status", "--against", "v9")["gone_upstream"] == []
    stack.cli("rebase", "--to", "v9")
    stack.cli("check")
