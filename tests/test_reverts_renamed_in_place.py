"""A kept landing of a guard at a function's top, the function then renamed in place upstream
(`a2` now `_a2` or `a2_impl`, where a2 was, its body kept) by the commit that wrote the guard
again in another form (`if x is None or x.numel() == 0:`). Read without the rename the same
rewrite is superseded, nothing said; with it, the function read as deleted with the fix's line,
and the fix was said taken out ("removed", exit 1), its advice to delete a fix upstream has its
own way. The renamed function is found where upstream's own diff of the base file carries the
fix's place, its old name given back, and the file judged so: superseded, as without the
rename where the renamed function holds the names the guard adds. Its old code back there (the guard
dropped as it was renamed, also with the lines under it rewritten), or a function deleted and
another written where it was, is still said. Real git history, through the CLI."""
from __future__ import annotations

import pytest

from helpers.project import OneUpstreamStack
from test_reverts_function_gone import (A, GUARD, TWIN, _fn, _landed, _module, _quiet,
                                        _said_removed_by)

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


# A long a2 (its body mostly kept by a rewrite of its first lines): read as renamed in place.
TAIL = b"".join(b"    v%d = x + %d\n" % (k, k) for k in range(8)) + b"    return v7\n"
HEAD = b"    a = 2\n    b = a + x\n    c = b * 2\n"


def _long(name: bytes, guard: bytes = b"", head: bytes = HEAD) -> bytes:
    return b"def %s(x):\n" % name + guard + head + TAIL


def _long_module(a2: bytes, twin: tuple[bytes, ...]) -> bytes:
    return b'"""m."""\n\n\n' + _long(b"a0") + b"\n\n" + a2 + b"\n\n" + \
        _long(b"a4", GUARD if twin else b"")


@pytest.mark.parametrize("twin", [(), TWIN], ids=["alone", "beside a look-alike"])
@pytest.mark.parametrize("shape", ["guard kept", "guard written again",
                                   "guard dropped, the lines under it rewritten",
                                   "guard dropped, the rewrite checking another name"])
def test_a_renamed_function_is_superseded_only_where_it_holds_the_guards_names(
        tmp_path, shape, twin):
    """Renamed in place (`_a2`), the file judged with the old name given back: the fix's
    diff applying neither way read as the guard written again in another form, superseded,
    also where upstream dropped the guard and rewrote the three lines under it (the hunk's
    context): the guard was in no overlay and not upstream, exit 0. Superseded only where the
    renamed function holds, on one line, the words of each line the guard adds (`if`, `x`,
    `is`, `None`): not `if b is None:` about another name in the rewrite; else said taken
    out, as before the rename was followed. The look-alike a4's guard is not the fix's."""
    base = _long_module(_long(b"a2"), twin)
    fixed = _long_module(_long(b"a2", GUARD), twin)
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": base, "pkg/b.py": b"b = 1\n"})
    stack.add_fix("fix", "pkg/a.py", base, fixed)
    stack.commit({"pkg/a.py": fixed}, "a2: check x (#5)", tag="v2")
    stack.dropped_as_landed("up=v2")
    renamed = {"guard kept": _long(b"_a2", GUARD),
               "guard written again": _long(b"_a2", REWRITTEN),
               "guard dropped, the lines under it rewritten": _long(
                   b"_a2", head=b"    a = 3\n    b = a - x\n    c = b * 4\n"),
               "guard dropped, the rewrite checking another name": _long(
                   b"_a2", head=b"    a = 3\n    b = lookup(a)\n    if b is None:\n"
                                b"        b = 0\n    c = b * 4\n")}[shape]
    took = stack.commit({"pkg/a.py": _long_module(renamed, twin)}, "rework a2")
    if shape.startswith("guard dropped"):
        _said_removed_by(stack, took)
    else:
        _quiet(stack)
