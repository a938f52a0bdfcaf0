"""A kept landing of a guard at a function's top, the function then renamed in place upstream
(`a2` now `_a2` or `a2_impl`, where a2 was, its body kept) by the commit that wrote the guard
again in another form (`if x is None or x.numel() == 0:`). Read without the rename the same
rewrite is superseded, nothing said; with it, the function read as deleted with the fix's line,
and the fix was said taken out ("removed", exit 1), its advice to delete a fix upstream has its
own way. The renamed function is found where upstream's own diff of the base file carries the
fix's place, its old name given back, and the file judged so: superseded, as without the
rename. Its old code back there (the guard dropped as it was renamed), or a function deleted and
another written where it was, is still said. Real git history, through the CLI."""
from __future__ import annotations

import pytest

from test_reverts_function_gone import A, GUARD, TWIN, _fn, _landed, _module, _quiet

REWRITTEN = b"    if x is None or x.numel() == 0:\n        return None\n"


@pytest.mark.parametrize("twin", [(), TWIN], ids=["alone", "beside a look-alike"])
@pytest.mark.parametrize("name", [b"_a2", b"a2_impl", b"a2"])
def test_a_guard_written_again_as_its_function_was_renamed_in_place_is_quiet(
        tmp_path, name, twin):
    stack, _ = _landed(tmp_path, twin)
    rewritten = _module(A, (b"a2", *twin)).replace(
        b"def a2(x):\n" + GUARD, b"def %s(x):\n" % name + REWRITTEN)
    stack.commit({"pkg/a.py": rewritten}, "a2: check empty x too; private now")
    _quiet(stack)


@pytest.mark.parametrize("twin", [(), TWIN], ids=["alone", "beside a look-alike"])
@pytest.mark.parametrize("shape", ["renamed, guard dropped, a line below edited",
                                   "deleted, another function written there",
                                   "deleted, another function with a guard written there"])
def test_a_guard_gone_with_its_function_renamed_or_replaced_in_place_is_said(
        tmp_path, shape, twin):
    stack, _ = _landed(tmp_path, twin)
    text = _module(A, twin)
    if shape.startswith("renamed"):
        text = text.replace(b"def a2(x):\n    a = 2\n    b = a + x\n",
                            b"def _a2(x):\n    a = 2\n    b = a - x\n")
    else:
        guard = REWRITTEN.replace(b"x", b"y") if "guard" in shape else b""
        text = text.replace(_fn(b"a2", 2), b"def z9(y, w):\n" + guard + b"    return [y, w]\n")
    took = stack.commit({"pkg/a.py": text}, "rework a2")
    head = stack.upstream.head()
    doc = stack.json("status", "--against", f"up={head}", expect=1)
    (said,) = doc["reverted"] + doc["gone_upstream"]
    assert (said["name"], said["kind"], said["by"]) == ("fix.patch", "removed", took), said
