"""The silent answers known wrong today (a lost fix or a doubling, exit 0), one test per shape.

Each test asserts the RIGHT answer and is marked xfail(strict=True) with the entry of
docs/guarantees.md, "Where these rules are known not to hold yet", that it reproduces: the day
a shape is mended its test passes and fails the suite, and the entry and the mark go together.
The tests of shapes mended since stay here unmarked, as they were written.
"""
from __future__ import annotations

import pytest

from helpers.cli import run_cli
from helpers.project import OneUpstreamStack
from test_kept_renamed_before_landing import BASE, GUARD as ASSERT_GUARD, _landed_after_a_rename
from test_rebase_doubled import stack_with_file
from test_reverts import BASE as BASE_LINES
from test_reverts_function_gone import A, _fn, _landed, _module

GUARD = b"    if x is None:\n        return 0\n"


def known_wrong(entry: str):
    return pytest.mark.xfail(strict=True, reason="known wrong: docs/guarantees.md, Where these "
                             f"rules are known not to hold yet: {entry}")


def said(stack: OneUpstreamStack) -> list:
    """What `status --against` upstream's head says taken out of the kept fixes."""
    doc = stack.json("status", "--against", f"up={stack.upstream.head()}", expect=None)
    return doc["reverted"] + doc["gone_upstream"]


def test_a_look_alike_at_the_old_path_does_not_keep_a_renamed_landed_fix(tmp_path):
    stack, _ = _landed_after_a_rename(tmp_path, same=False)
    g = b"def g(x):\n    y = x * 2\n    return math.ceil(y)\n"
    stack.commit({"pkg/a.py": BASE.replace(g + b"\n\n", b""),
                  "pkg/b.py": b"import math\n\n\n" + g,
                  "a.py": b"import math\n\n\n" + g.replace(b"def g(x):\n",
                                                          b"def g(x):\n" + ASSERT_GUARD)},
                 "move g into pkg/b.py; a.py: legacy g")
    assert said(stack), "the guard is in no overlay and not upstream"


def test_a_guard_dropped_with_its_context_rewritten_is_said(tmp_path):
    tail = b"".join(b"    v%d = x + %d\n" % (k, k) for k in range(8)) + b"    return v7\n"

    def fn(name: bytes, guard: bool, head=b"    a = 2\n    b = a + x\n    c = b * 2\n") -> bytes:
        return b"def %s(x):\n" % name + (GUARD if guard else b"") + head + tail

    def module(a2: bytes) -> bytes:
        return b'"""m."""\n\n\n' + fn(b"a0", False) + b"\n\n" + a2 + b"\n\n" + fn(b"a4", False)

    base, fixed = module(fn(b"a2", False)), module(fn(b"a2", True))
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": base, "pkg/b.py": b"b = 1\n"})
    stack.add_fix("fix", "pkg/a.py", base, fixed)
    stack.commit({"pkg/a.py": fixed}, "a2: check x (#5)", tag="v2")
    stack.dropped_as_landed("up=v2")
    rewritten = b"    a = 3\n    b = a - x\n    c = b * 4\n"
    stack.commit({"pkg/a.py": module(fn(b"a2", False, rewritten))}, "rework a2")
    assert said(stack), "the guard is in no overlay and not upstream"


def test_a_guard_dropped_from_a_copy_after_the_file_became_wrappers_is_said(tmp_path):
    stack, _ = _landed(tmp_path, ())
    stack.commit({"lib/a.py": _module(A, (b"a2",))}, "copy a into lib")
    wrappers = b'"""old home."""\nfrom lib import a as _a\n\n\n' + b"\n\n".join(
        b"def %s(x):\n    return _a.%s(x)\n" % (n, n) for n in A)
    stack.commit({"pkg/a.py": wrappers}, "pkg/a.py: wrappers")
    took = stack.commit({"lib/a.py": _module(A)}, "a2: x is never None")
    assert [s["by"] for s in said(stack)] == [took]


def test_a_function_moved_behind_a_shim_through_a_local_alias_is_followed(tmp_path):
    base, fixed = _module(A), _module(A, (b"a2",))
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": base})
    stack.add_fix("fix", "pkg/a.py", base, fixed)
    stack.commit({"pkg/a.py": fixed}, "a2: check x (#5)", tag="v2")
    stack.dropped_as_landed("up=v2")
    shim = base.replace(_fn(b"a2", 2), b"def a2(x):\n    from pkg.c import a2 as impl\n"
                        b"    return impl(x)\n")
    took = stack.commit({"pkg/a.py": shim, "pkg/c.py": b'"""c."""\n\n\n' + _fn(b"a2", 2)},
                        "move a2 to pkg/c.py, a shim left")
    assert [s["by"] for s in said(stack)] == [took]


NEG_BASE = (b"def twice(x, y, n, m):\n    for j in range(m):\n        x[j] *= 2.0\n"
            b"    sync_all()\n    return y\n\n\ndef version():\n    return 1\n")
LOOP = b"    for j in range(0, m, 2):\n        if j >= n:\n            break\n"


def loops_meet(tmp_path, mine: bytes, theirs: bytes) -> None:
    """The fix adds LOOP + `mine` below sync_all(), upstream LOOP + `theirs` above the old
    loop: the same work, so the rebase stops (exit 3), upstream's own way."""
    stack = stack_with_file(
        tmp_path, "pkg/k.py", NEG_BASE,
        NEG_BASE.replace(b"    sync_all()\n", b"    sync_all()\n" + LOOP + mine),
        NEG_BASE.replace(b"    for j in range(m):\n", LOOP + theirs + b"    for j in range(m):\n"))
    assert run_cli(stack.root, "rebase", "--to", "v2").rc == 3


def test_a_negated_temporary_added_where_upstream_subtracts_stops(tmp_path):
    loops_meet(tmp_path, b"        w = -x[j]\n        y[j] += w\n", b"        y[j] -= x[j]\n")


def test_a_negated_temporary_subtracted_where_upstream_adds_stops(tmp_path):
    loops_meet(tmp_path, b"        w = -x[j]\n        y[j] -= w\n", b"        y[j] += x[j]\n")


def doubled_after_rebase(stack: OneUpstreamStack, path: str, line: bytes) -> bool:
    """The rebase to v2 went through (exit 0) and the overlay holds `line` twice (a stop,
    exit 3, is loud: `overlays` refuses while it lasts)."""
    rc, _, err = stack.cli("rebase", "--to", "up=v2", expect=None)
    assert rc in (0, 3), err
    if rc == 3:
        return False
    stack.cli("overlays")
    return any(p.read_bytes().count(line) > 1 for p in stack.root.glob(f"overlays/**/{path}"))


def test_a_short_update_upstream_added_further_down_the_function_is_not_doubled(tmp_path):
    k = (b"def f(x):\n    y = x + 1\n    a = 1\n    b = 2\n    c = 3\n    d = 4\n    e = 5\n"
         b"    z = y * 2\n    return z\n\n\ndef g(x):\n    return x\n")
    line = b"    y += 1\n"
    stack = stack_with_file(tmp_path, "k.py", k,
                            k.replace(b"    y = x + 1\n", b"    y = x + 1\n" + line),
                            k.replace(b"    z = y * 2\n", line + b"    z = y * 2\n"))
    assert not doubled_after_rebase(stack, "k.py", line)


def test_a_c_statement_above_a_loop_upstream_added_below_it_is_not_doubled(tmp_path):
    cu = (b"#include <hip/hip_runtime.h>\n\n"
          b"__global__ void twice(float* x, float* y, int n, int m) {\n"
          b"    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
          b"    load(x, i);\n"
          b"    for (int j = i; j < m; j += 32) {\n        y[j] += x[j] * 2.0f;\n    }\n"
          b"    store(y, i);\n}\n\nint version() { return 1; }\n")
    line = b"    x[i] += n;\n"
    stack = stack_with_file(tmp_path, "pkg/k.cu", cu,
                            cu.replace(b"    for (int j", line + b"    for (int j"),
                            cu.replace(b"    store(y", line + b"    store(y"))
    assert not doubled_after_rebase(stack, "pkg/k.cu", line)


def test_a_temporary_upstream_writes_as_two_updates_one_subtracting_stops(tmp_path):
    loops_meet(tmp_path, b"        w = x[j] - s\n        y[j] += w\n",
               b"        y[j] -= s\n        y[j] += x[j]\n")


def test_a_short_statement_upstream_added_past_a_block_not_naming_it_is_not_doubled(tmp_path):
    k = (b"def f(x, a):\n    y = x + 1\n    b = 1\n    if a:\n        b = 0\n    d = 4\n"
         b"    z = y * 2\n    return z + b + d\n\n\ndef g(x):\n    return x\n")
    line = b"    y += 1\n"
    stack = stack_with_file(tmp_path, "k.py", k,
                            k.replace(b"    y = x + 1\n", b"    y = x + 1\n" + line),
                            k.replace(b"    z = y * 2\n", line + b"    z = y * 2\n"))
    assert not doubled_after_rebase(stack, "k.py", line)


def test_a_short_statement_upstream_added_past_a_block_that_returns_is_not_doubled(tmp_path):
    k = (b"def f(x, a):\n    y = x + 1\n    b = 1\n    if a:\n        return b\n    d = 4\n"
         b"    z = y * 2\n    return z + b + d\n\n\ndef g(x):\n    return x\n")
    line = b"    y += 1\n"
    stack = stack_with_file(tmp_path, "k.py", k,
                            k.replace(b"    y = x + 1\n", b"    y = x + 1\n" + line),
                            k.replace(b"    z = y * 2\n", line + b"    z = y * 2\n"))
    assert not doubled_after_rebase(stack, "k.py", line)


def test_a_short_statement_upstream_added_past_a_block_that_yields_is_not_doubled(tmp_path):
    k = (b"def f(x, a):\n    y = x + 1\n    b = 1\n    if a:\n        yield b\n    d = 4\n"
         b"    z = y * 2\n    yield z + b + d\n\n\ndef g(x):\n    return x\n")
    line = b"    y += 1\n"
    stack = stack_with_file(tmp_path, "k.py", k,
                            k.replace(b"    y = x + 1\n", b"    y = x + 1\n" + line),
                            k.replace(b"    z = y * 2\n", line + b"    z = y * 2\n"))
    assert not doubled_after_rebase(stack, "k.py", line)


def test_a_short_statement_upstream_added_in_a_try_body_whose_handler_returns_is_not_doubled(
        tmp_path):
    k = (b"def f(x, a):\n    y = x + 1\n    b = 1\n    try:\n        d = load(a)\n"
         b"    except OSError:\n        return b\n    z = y * 2\n    return z + b + d\n\n\n"
         b"def g(x):\n    return x\n")
    line = b"    y += 1\n"
    stack = stack_with_file(tmp_path, "k.py", k,
                            k.replace(b"    y = x + 1\n", b"    y = x + 1\n" + line),
                            k.replace(b"        d = load(a)\n",
                                      b"        d = load(a)\n    " + line))
    assert not doubled_after_rebase(stack, "k.py", line)


@pytest.mark.parametrize("path, base, line", [
    ("k.py", b"def f(x, a):\n    y = x + 1\n    b = 1\n    if a:\n        b = clip(y)\n"
             b"    d = 4\n    z = y * 2\n    return z + b + d\n\n\ndef g(x):\n    return x\n",
     b"    y += 1\n"),
    ("k.cu", b"int f(int x, int n) {\n    int y = x + 1;\n    int b = 1;\n"
             b"    if (y > n) return b;\n    int d = 4;\n    int z = y * 2;\n"
             b"    return z + b + d;\n}\n\nint g(int x) { return x; }\n",
     b"    y += 1;\n")],
    ids=["a-block-reading-it", "c-a-condition-reading-it"])
def test_a_short_statement_upstream_added_past_a_line_reading_it_is_not_doubled(tmp_path, path,
                                                                             base, line):
    top = base.split(b"\n")[1] + b"\n"
    stack = stack_with_file(tmp_path, path, base, base.replace(top, top + line),
                            base.replace(b"    int z" if path.endswith(".cu") else b"    z =",
                                         line + (b"    int z" if path.endswith(".cu")
                                                 else b"    z =")))
    assert not doubled_after_rebase(stack, path, line)


def test_a_short_statement_upstream_added_past_an_if_else_reading_it_in_one_branch_is_not_doubled(
        tmp_path):
    k = (b"def f(x, a):\n    y = x + 1\n    b = 1\n    if a:\n        b = clip(y)\n"
         b"    else:\n        b = 2\n    d = 4\n    z = y * 2\n    return z + b + d\n\n\n"
         b"def g(x):\n    return x\n")
    line = b"    y += 1\n"
    stack = stack_with_file(tmp_path, "k.py", k,
                            k.replace(b"    y = x + 1\n", b"    y = x + 1\n" + line),
                            k.replace(b"    z = y * 2\n", line + b"    z = y * 2\n"))
    assert not doubled_after_rebase(stack, "k.py", line)


@pytest.mark.parametrize("between", [
    b"    d = clip(b,\n             lo=0)\n",
    b"    try: d = clip(a)\n    except ValueError:\n        d = clip(y)\n"],
    ids=["over-lines", "try-on-its-header-line"])
def test_a_short_statement_upstream_added_past_lines_reading_it_on_some_paths_is_not_doubled(
        tmp_path, between):
    k = (b"def f(x, a):\n    y = x + 1\n    b = 1\n" + between +
         b"    e = 4\n    z = y * 2\n    return z + b + e\n\n\ndef g(x):\n    return x\n")
    line = b"    y += 1\n"
    stack = stack_with_file(tmp_path, "k.py", k,
                            k.replace(b"    y = x + 1\n", b"    y = x + 1\n" + line),
                            k.replace(b"    z = y * 2\n", line + b"    z = y * 2\n"))
    assert not doubled_after_rebase(stack, "k.py", line)


def test_a_short_statement_the_fix_added_in_the_branch_going_on_is_not_doubled(tmp_path):
    k = (b"def f(x, a, n, c):\n    y = x + 1\n    b = 1\n    if n:\n        return c\n"
         b"    else:\n        d = clip(a)\n    z = y * 2\n    return z + b\n\n\n"
         b"def g(x):\n    return x\n")
    stack = stack_with_file(tmp_path, "k.py", k,
                            k.replace(b"        d = clip(a)\n", b"        d = clip(a)\n        y += 1\n"),
                            k.replace(b"    b = 1\n", b"    b = 1\n    y += 1\n"))
    assert not doubled_after_rebase(stack, "k.py", b"y += 1\n")


@pytest.mark.parametrize("path, between", [
    ("k.py", b"    d = {'b': b}\n"),
    ("k.py", b"    d = {b, a}\n"),
    ("k.py", b"    d = {\n        'b': b,\n    }\n"),
    ("k.py", b"    d = clip(b) if a else \\\n        clip(y)\n"),
    ("k.cu", b"    int d;\n    if (a) d = y;\n    else if (b) d = 2;\n    else d = clip(y);\n"),
    ("k.cu", b"    int d = a ? clip(b)\n            : clip(y);\n")],
    ids=["dict-on-one-line", "set-on-one-line", "dict-over-lines", "conditional-over-a-backslash",
         "c-else-if-chain-on-header-lines", "c-conditional-its-colon-first"])
def test_a_short_statement_upstream_added_past_literals_or_chains_not_read_is_not_doubled(
        tmp_path, path, between):
    if path.endswith(".cu"):
        k = (b"int f(int x, int a, int b) {\n    int y = x + 1;\n" + between +
             b"    int e = 4;\n    int z = y * 2;\n    return z + e;\n}\n\n"
             b"int g(int x) {\n    return x;\n}\n")
        line, top, bottom = b"    y += 1;\n", b"    int y = x + 1;\n", b"    int z = y * 2;\n"
    else:
        k = (b"def f(x, a):\n    y = x + 1\n    b = 1\n" + between +
             b"    e = 4\n    z = y * 2\n    return z + b + e\n\n\ndef g(x):\n    return x\n")
        line, top, bottom = b"    y += 1\n", b"    y = x + 1\n", b"    z = y * 2\n"
    stack = stack_with_file(tmp_path, path, k, k.replace(top, top + line),
                            k.replace(bottom, line + bottom))
    assert not doubled_after_rebase(stack, path, line)


@pytest.mark.parametrize("path, between", [
    ("k.py", b"    def d():\n        return clip(y)\n"),
    ("k.py", b"    d = \"\"\"\n    clip(y)\n    \"\"\"\n"),
    ("k.cu", b"    /*\n    d = clip(y);\n    */\n"),
    ("k.cu", b"#if 0\n    d = clip(y);\n#endif\n"),
    ("k.cu", b"#ifdef DEBUG\n    d = clip(y);\n#endif\n"),
    ("k.py", b"    d = clip(a,\n             y=2)\n"),
    ("k.py", b"    assert y > 0\n")],
    ids=["a-nested-def", "a-string-over-lines", "a-c-comment-over-lines", "c-if-0", "c-ifdef",
         "a-keyword-on-a-continuation-line", "an-assert-under-python-O"])
def test_a_short_statement_upstream_added_past_lines_naming_it_unread_is_not_doubled(
        tmp_path, path, between):
    if path.endswith(".cu"):
        k = (b"int f(int x, int a, int b) {\n    int y = x + 1;\n    int d = 0;\n" + between +
             b"    int e = 4;\n    int z = y * 2;\n    return z + e + d;\n}\n\n"
             b"int g(int x) {\n    return x;\n}\n")
        line, top, bottom = b"    y += 1;\n", b"    int y = x + 1;\n", b"    int z = y * 2;\n"
    else:
        k = (b"def f(x, a):\n    y = x + 1\n    b = 1\n" + between +
             b"    e = 4\n    z = y * 2\n    return z + b + e\n\n\ndef g(x):\n    return x\n")
        line, top, bottom = b"    y += 1\n", b"    y = x + 1\n", b"    z = y * 2\n"
    stack = stack_with_file(tmp_path, path, k, k.replace(top, top + line),
                            k.replace(bottom, line + bottom))
    assert not doubled_after_rebase(stack, path, line)


@known_wrong("a short statement the fix adds inside a C block on its line")
def test_a_short_statement_the_fix_added_inside_a_block_on_its_line_is_not_doubled(tmp_path):
    from test_rebase_doubled_short import branch_of_an_if
    block = b"    int d = b;\n    if (n) return b;\n    else { d = clip(b); }\n"
    stack = branch_of_an_if(tmp_path, "pkg/k.cu", block,
                            block.replace(b"clip(b); }", b"clip(b); y += 1; }"), fix_in_branch=True)
    assert not doubled_after_rebase(stack, "pkg/k.cu", b"y += 1;")


def test_a_short_statement_the_fix_added_in_an_elif_with_no_else_is_not_doubled(tmp_path):
    from test_rebase_doubled_short import branch_of_an_if
    block = b"    if n:\n        return c\n    elif c:\n        d = clip(c)\n"
    stack = branch_of_an_if(tmp_path, "pkg/a.py", block,
                            block + b"        y += 1\n", fix_in_branch=True)
    assert not doubled_after_rebase(stack, "pkg/a.py", b"y += 1\n")


@known_wrong("a short statement the fix adds in a loop inside the one branch of an `if` that goes on")
def test_a_short_statement_the_fix_added_in_a_loop_in_the_branch_going_on_stops(tmp_path):
    from test_rebase_doubled_short import branch_of_an_if
    block = b"    if n:\n        return c\n    else:\n        for k in c:\n            d = clip(k)\n"
    stack = branch_of_an_if(tmp_path, "pkg/a.py", block,
                            block + b"            y += 1\n", fix_in_branch=True)
    assert not doubled_after_rebase(stack, "pkg/a.py", b"y += 1\n")


def test_an_item_upstream_added_beside_another_on_its_line_stops(tmp_path):
    archs = b'    "gfx90a",\n    "gfx942",\n    "gfx950",\n    "gfx1100",\n'
    base = b'"""Archs."""\n\nARCHS = [\n' + archs + b"]\n"
    stack = stack_with_file(tmp_path, "pkg/a.py", base,
                            base.replace(b"]\n", b'    "gfx1150",\n    "gfx1201",\n]\n'),
                            base.replace(b'    "gfx950",\n',
                                         b'    "gfx950",\n    "gfx1201", "gfx1200",\n'))
    assert not doubled_after_rebase(stack, "pkg/a.py", b'"gfx1201"')


def test_a_dict_key_upstream_added_elsewhere_in_the_dict_stops(tmp_path):
    waves = b'    "gfx90a": 64,\n    "gfx942": 64,\n    "gfx950": 64,\n    "gfx1100": 32,\n'
    base = b'"""Waves."""\n\nWAVES = {\n' + waves + b"}\n"
    stack = stack_with_file(tmp_path, "pkg/a.py", base,
                            base.replace(b"}\n", b'    "gfx1201": 32,\n}\n'),
                            base.replace(b'    "gfx942": 64,\n',
                                         b'    "gfx942": 64,\n    "gfx1201": 32,\n'))
    assert not doubled_after_rebase(stack, "pkg/a.py", b'"gfx1201"')


def test_a_guard_dropped_beside_another_check_of_its_name_is_said(tmp_path):
    from test_reverts_guard_rewritten import GUARD as TOP, HEAD, _fn, _landed, _module
    stack = _landed(tmp_path, _module(_fn(b"a2")), _module(_fn(b"a2", TOP)))
    other = b"    if x.dim() > 2:\n        raise ValueError('x is 2-d')\n"
    stack.commit({"pkg/a.py": _module(_fn(b"a2", other, HEAD))}, "rework a2")
    assert said(stack), "the guard is in no overlay and not upstream"


def test_a_guard_dropped_beside_its_copy_in_a_loop_is_said(tmp_path):
    from test_reverts_guard_rewritten import GUARD as TOP, HEAD, _fn, _landed, _module
    stack = _landed(tmp_path, _module(_fn(b"a2")), _module(_fn(b"a2", TOP)))
    loop = b"    for y in ys:\n        if x is None:\n            return 0\n"
    stack.commit({"pkg/a.py": _module(_fn(b"a2", loop, HEAD.replace(b"2", b"3")))},
                 "rework a2")
    assert said(stack), "where ys is empty the guard is in no overlay and not upstream"


CPP_NESTED = {
    "in a loop": b"  for (int i = 0; i < n; ++i) {\n    if (!x) return 0;\n  }\n",
    "under another if": b"  if (strict) {\n    if (!x) return 0;\n  }\n",
}


@pytest.mark.parametrize("shape", list(CPP_NESTED))
def test_a_cpp_guard_dropped_beside_its_copy_in_a_block_is_said(tmp_path, shape):
    from test_reverts_guard_forms import _c_fn, _c_module
    from test_reverts_guard_rewritten import _landed
    stack = _landed(tmp_path, _c_module(_c_fn()), _c_module(_c_fn(b"  if (!x) return 0;\n")),
                    "csrc/k.cu")
    head = CPP_NESTED[shape] + b"  int a = 3;\n  int b = a - x[0];\n"
    stack.commit({"csrc/k.cu": _c_module(_c_fn(head=head))}, "rework k2")
    assert said(stack), "where the block does not run the guard is in no overlay and not upstream"


def test_a_cpp_guard_dropped_beside_its_copy_under_an_ifdef_is_said(tmp_path):
    from test_reverts_guard_forms import _c_fn, _c_module
    from test_reverts_guard_rewritten import _landed
    stack = _landed(tmp_path, _c_module(_c_fn()), _c_module(_c_fn(b"  if (!x) return 0;\n")),
                    "csrc/k.cu")
    head = b"#ifdef CHECKS\n  if (!x) return 0;\n#endif\n  int a = 3;\n  int b = a - x[0];\n"
    stack.commit({"csrc/k.cu": _c_module(_c_fn(head=head))}, "rework k2")
    assert said(stack), "built without CHECKS the guard is in no overlay and not upstream"


@known_wrong("a kept C guard the fix put under a preprocessor conditional")
def test_a_cpp_guard_the_fix_put_under_an_ifdef_dropped_beside_a_copy_under_another_is_said(
        tmp_path):
    from test_reverts_guard_forms import _c_fn, _c_module
    from test_reverts_guard_rewritten import _landed
    under = b"#ifdef CHECKS\n%s  log(1);\n#endif\n"
    head = b"  int a = 2;\n  int b = a + x[0];\n"
    stack = _landed(tmp_path, _c_module(_c_fn(head=under % b"" + head)),
                    _c_module(_c_fn(head=under % b"  if (!x) return 0;\n" + head)), "csrc/k.cu")
    other = under.replace(b"log(1)", b"log(3)") % b"" + \
        b"#ifdef DEBUG\n  if (!x) return 0;\n#endif\n  int a = 3;\n  int b = a - x[0];\n"
    stack.commit({"csrc/k.cu": _c_module(_c_fn(head=other))}, "rework k2")
    assert said(stack), "built with CHECKS and without DEBUG the guard is in no overlay"


def test_a_guard_dropped_beside_its_copy_below_the_work_is_said(tmp_path):
    from test_reverts_guard_forms import _c_fn, _c_module
    from test_reverts_guard_rewritten import _landed
    stack = _landed(tmp_path, _c_module(_c_fn()), _c_module(_c_fn(b"  if (!x) return 0;\n")),
                    "csrc/k.cu")
    head = b"  int a = 3;\n  int b = a - x[0];\n  if (!x) return 0;\n"
    stack.commit({"csrc/k.cu": _c_module(_c_fn(head=head))}, "rework k2")
    assert said(stack), "x[0] is read before any check: the guard is in no overlay"


def test_a_cpp_guard_dropped_beside_a_goto_copy_skipping_less_than_the_work_is_said(tmp_path):
    from test_reverts_guard_forms import _c_fn, _c_module
    from test_reverts_guard_rewritten import _landed
    stack = _landed(tmp_path, _c_module(_c_fn()), _c_module(_c_fn(b"  if (!x) return 0;\n")),
                    "csrc/k.cu")
    head = b"  if (!x) goto skip;\n  log(1);\nskip:\n  int a = 3;\n  int b = a - x[0];\n"
    stack.commit({"csrc/k.cu": _c_module(_c_fn(head=head))}, "rework k2")
    assert said(stack), "the goto skips log(1) only: x[0] is read where x is null"


@known_wrong("a read of a kept guard's value put above the guard")
def test_a_read_put_above_the_kept_guard_is_said(tmp_path):
    from test_reverts_guard_rewritten import _fn, _landed, _module
    stack = _landed(tmp_path, _module(_fn(b"a2", b"    w = 1\n")),
                    _module(_fn(b"a2", b"    w = 1\n" + GUARD)))
    stack.commit({"pkg/a.py": _module(_fn(b"a2", b"    w = x[0]\n" + GUARD))}, "read x first")
    assert said(stack), "x[0] is read where x is None: the guard guards none of it"


def test_a_raise_guard_dropped_beside_a_copy_whose_class_the_module_rebinds_is_said(tmp_path):
    from test_reverts_guard_rewritten import HEAD, _fn, _landed, _module
    guard = b"    if x is None:\n        raise ValueError('x')\n"
    stack = _landed(tmp_path, _module(_fn(b"a2")), _module(_fn(b"a2", guard)))
    copy = b"    try:\n        if x is None:\n            raise ValueError('x')\n" \
        b"    except KeyError:\n        x = DEFAULT\n"
    stack.commit({"pkg/a.py": b"from pkg.errors import ValueError\n" +
                  _module(_fn(b"a2", copy, HEAD.replace(b"2", b"3")))}, "rework a2")
    assert said(stack), "the module's ValueError may be a KeyError: the work runs on None"


@known_wrong("copies of a kept guard in two ifs of converse conditions")
def test_a_guard_dropped_beside_copies_under_converse_ifs_a_call_between_may_flip_is_said(
        tmp_path):
    from test_reverts_guard_rewritten import HEAD, _fn, _landed, _module
    stack = _landed(tmp_path, _module(_fn(b"a2")), _module(_fn(b"a2", GUARD)))
    inner = b"        if x is None:\n            return 0\n"
    copies = b"    if FAST:\n" + inner + b"    configure()\n    if not FAST:\n" + inner
    stack.commit({"pkg/a.py": _module(_fn(b"a2", copies, HEAD.replace(b"2", b"3")))},
                 "rework a2")
    assert said(stack), "where configure() sets FAST the work runs on None"


LEAVING_A_BLOCK = {
    "a raise its except catches": (
        b"    if x is None:\n        raise ValueError('x')\n",
        b"    try:\n        if x is None:\n            raise ValueError('x')\n"
        b"    except ValueError:\n        x = DEFAULT\n"),
    "a C continue": (
        b"  if (!x) return 0;\n",
        b"  for (int i = 0; i < n; ++i) {\n    if (!x) continue;\n    log(i);\n  }\n"),
}


@pytest.mark.parametrize("shape", list(LEAVING_A_BLOCK))
def test_a_guard_dropped_beside_a_copy_leaving_only_a_block_is_said(tmp_path, shape):
    from test_reverts_guard_forms import _c_fn, _c_module
    from test_reverts_guard_rewritten import HEAD, _fn, _landed, _module
    guard, copy = LEAVING_A_BLOCK[shape]
    if shape.startswith("a C"):
        stack = _landed(tmp_path, _c_module(_c_fn()), _c_module(_c_fn(guard)), "csrc/k.cu")
        head = copy + b"  int a = 3;\n  int b = a - x[0];\n"
        stack.commit({"csrc/k.cu": _c_module(_c_fn(head=head))}, "rework k2")
    else:
        stack = _landed(tmp_path, _module(_fn(b"a2")), _module(_fn(b"a2", guard)))
        stack.commit({"pkg/a.py": _module(_fn(b"a2", copy, HEAD.replace(b"2", b"3")))},
                     "rework a2")
    assert said(stack), "where x is None the work runs: the guard is in no overlay and not upstream"


PART_HEAD = b"def top(x):\n" + b"".join(b"    a%d = x + %d\n" % (i, i) for i in range(8)) + \
    b"    return a7\n"
PART_BODY = b"\n\ndef gather(x):\n" + b"".join(
    b"    step%d = x + %d\n" % (i, i) for i in range(12)) + \
    b"    stages = 3\n    return step11 * stages\n"
PART_ONE = b"    a3 = x + 3\n"
PART_ONE_FIX = b"    a3 = x + 3\n    a3 = a3.clamp(0)\n"
PART_GUARD = b"    stages = 3\n    if x.is_cuda:\n        stages = 1\n"


def _part_landed(tmp_path):
    """A kept fix of two hunks (a clamp in `top`, a cuda branch in `gather`) landed at v2:
    the stack, the fixed file and the landing commit."""
    base = PART_HEAD + PART_BODY
    fixed = (PART_HEAD.replace(PART_ONE, PART_ONE_FIX)
             + PART_BODY.replace(b"    stages = 3\n", PART_GUARD))
    stack = OneUpstreamStack(tmp_path, {"pkg/k.py": base})
    stack.add_fix("kfix", "pkg/k.py", base, fixed)
    landing = stack.commit({"pkg/k.py": fixed}, "k: fewer stages (#7)", tag="v2")
    stack.dropped_as_landed("up=v2")
    return stack, fixed, landing


def test_a_revert_in_part_then_an_edit_is_said(tmp_path):
    stack, fixed, landing = _part_landed(tmp_path)
    changed = fixed.replace(b"    a3 = a3.clamp(0)\n", b"    a3 = a3.clamp(min=0)\n")
    stack.commit({"pkg/k.py": changed}, "k: keyword (#8)", tag="v3")
    reverted = changed.replace(PART_GUARD, b"    stages = 3\n")
    revert = stack.commit({"pkg/k.py": reverted}, 'Revert "k: fewer stages (#7)"\n\n'
                          f"This reverts commit {landing}.", tag="v4")
    (took,) = stack.json("status", "--against", "v4", expect=1)["reverted"]
    assert took["by"] == revert, took
    edited = reverted.replace(b"    stages = 3\n    return step11 * stages\n",
                              b"    stages = 4\n    return step11 * stages * 2\n")
    stack.commit({"pkg/k.py": edited}, "k: four stages", tag="v5")
    (took,) = stack.json("status", "--against", "v5", expect=1)["reverted"]
    assert took["by"] == revert, "the cuda branch is in no overlay and not upstream"


def test_a_revert_of_one_hunk_while_the_other_stays_is_said_after_an_edit(tmp_path):
    stack, fixed, landing = _part_landed(tmp_path)
    reverted = fixed.replace(PART_GUARD, b"    stages = 3\n")
    stack.commit({"pkg/k.py": reverted}, 'Revert "k: fewer stages (#7)"\n\n'
                 f"This reverts commit {landing}.", tag="v3")
    doc = stack.json("status", "--against", "v3", expect=1)
    assert doc["reverted"] or doc["gone_upstream"], doc
    edited = reverted.replace(b"    stages = 3\n    return step11 * stages\n",
                              b"    stages = 4\n    return step11 * stages * 2\n")
    stack.commit({"pkg/k.py": edited}, "k: four stages", tag="v4")
    doc = stack.json("status", "--against", "v4", expect=1)
    assert doc["reverted"] or doc["gone_upstream"], "the guard is in no overlay and not upstream"


def test_a_two_file_fix_taken_out_file_by_file_then_its_old_lines_edited_is_said(tmp_path):
    from helpers.project import add_patch_file, diff_of
    from test_reverts import BASE as LINES

    other = LINES.replace(b"module", b"other module")
    fixed_a = LINES.replace(b"line 5 of the module under test\n", b"five = compute_it_properly()\n")
    fixed_b = other.replace(b"line 7 of the other module under test\n", b"seven = compute_it_too()\n")
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": LINES, "pkg/b.py": other})
    diff = (diff_of(stack.root.parent / "d1", "pkg/a.py", LINES, fixed_a)
            + diff_of(stack.root.parent / "d2", "pkg/b.py", other, fixed_b))
    add_patch_file(stack.root, "up", "fa.patch",
                   (f"Description: fix fa\nAuthor: T <t@e.com>\nUpstream-Status: Pending\n"
                    f"Upstream: up\nBase: {stack.base}\n\nWhy.\n---\n").encode() + diff)
    stack.commit({"pkg/a.py": fixed_a, "pkg/b.py": fixed_b}, "Compute it properly (#11)", tag="v2")
    stack.cli("rebase", "--to", "v2")
    worked = LINES.replace(b"line 20 of", b"line twenty of")
    stack.commit({"pkg/a.py": worked}, "Other work in a", tag="v3")
    stack.commit({"pkg/b.py": other}, "Other work in b", tag="v4")
    stack.commit({"pkg/a.py": worked.replace(b"line 5 of", b"line five of"),
                  "pkg/b.py": other.replace(b"line 7 of", b"line seven of")}, "Tidy", tag="v5")
    assert said(stack), "the fix is in no overlay and not upstream"


def _moved_upstream_then(tmp_path, renamed_to: str | None) -> dict:
    """`status --against` of a fix that renames pkg/x.py to `renamed_to` with a change (None:
    deletes it), where upstream moved it to lib/x.py, as `git rebase` replays it."""
    import json

    from helpers.cli import run_subprocess
    from helpers.project import add_git_upstream, make_project
    from helpers.upstream import Upstream, dep3_patch
    from patchforge.store.diff import make_file_diff

    text = b"".join(b"def x_%d(v):\n    return v + %d\n\n" % (i, i) for i in range(40))
    upstream = Upstream(tmp_path / "upstream", {"pkg/x.py": text, "pkg/y.py": b"y = 1\n"})
    root = make_project(tmp_path / "project")
    add_git_upstream(root, "up", upstream.path, upstream.base, install_root=None)
    (root / "series" / "up").mkdir(parents=True, exist_ok=True)
    changed = text.replace(b"return v + 3\n", b"return v + 33\n") if renamed_to else None
    (root / "series" / "up" / "fix.patch").write_bytes(dep3_patch(
        make_file_diff("pkg/x.py", renamed_to, text, changed)))
    (root / "series" / "up" / "series").write_text("fix.patch\n")
    target = upstream.commit({}, "move x", renames={"pkg/x.py": "lib/x.py"})
    proc = run_subprocess(root, "status", "--against", f"up={target}", "--json")
    return json.loads(proc.stdout)["patches"][0]


def test_a_fix_renaming_a_file_upstream_moved_elsewhere_stops(tmp_path):
    found = _moved_upstream_then(tmp_path, "pkg/x2.py")
    assert found["rebase"] == "stop", "git rebase: CONFLICT (rename/rename)"


def test_a_fix_deleting_a_file_upstream_moved_elsewhere_stops(tmp_path):
    found = _moved_upstream_then(tmp_path, None)
    assert found["rebase"] == "stop", "git rebase: CONFLICT (rename/delete)"


def test_a_file_is_followed_into_its_renamed_directory_beside_an_added_namesake(tmp_path):
    """ops/ renamed kernels/ (a.py, b.py, c.py moved unchanged), ops/x.py reworked there (one
    line in twelve), and tests/x.py added, ops/x.py with one line edited: `git rebase`
    carries a fix to ops/x.py into kernels/x.py (merge-ort's base-name pass guesses the
    directory's new place where the name is not unique); git's diff pairs the nearest."""
    from test_status_exact_renames import FUNCTIONS, where_a_fix_follows

    lines = FUNCTIONS.splitlines(keepends=True)
    reworked = b"".join(line[:-1] + b"  # reworked\n" if i % 12 == 1 else line
                        for i, line in enumerate(lines))
    copy = FUNCTIONS.replace(b"def fn_1(value):\n", b"def fn_1(value): # test copy\n")
    others = {f"ops/{n}.py": b"".join(b"def %s_%d():\n    return %d\n\n" % (n.encode(), i, i)
                                      for i in range(30)) for n in "abc"}
    found = where_a_fix_follows(tmp_path, "ops/x.py", others,
                                {"ops/x.py": None, "kernels/x.py": reworked, "tests/x.py": copy},
                                renames={p: "kernels/" + p[4:] for p in others})
    assert [f["target_path"] for f in found["files"]] == ["kernels/x.py"], \
        "git rebase: the fix lands in kernels/x.py"


def test_a_file_split_into_two_copies_equally_near_it_is_not_followed_into_one(tmp_path):
    """ops/x.py split into ops/gfx942/x.py and ops/gfx950/x.py, each with one token of one
    line changed alike (the same score for both): a fix to ops/x.py is carried into one copy,
    `applies`, exit 0, and the other arch never gets it (`git rebase` picks the other copy,
    as silently). The right answer names both copies and stops."""
    from test_status_exact_renames import FUNCTIONS, where_a_fix_follows

    found = where_a_fix_follows(tmp_path, "ops/x.py", {"keep.py": b"k = 1\n"}, {
        "ops/x.py": None,
        "ops/gfx942/x.py": FUNCTIONS.replace(b"value * 5 + 17", b"value * 5 + 42"),
        "ops/gfx950/x.py": FUNCTIONS.replace(b"value * 5 + 17", b"value * 5 + 43")})
    assert found["rebase"] == "stop", "one arch's copy would go without the fix"


def test_a_two_file_fix_one_part_rewritten_the_other_taken_out_is_said(tmp_path):
    from test_reverts_taken_then_changed import OTHER, _two_files_landed

    stack, _ = _two_files_landed(tmp_path)
    stack.commit({"pkg/a.py": BASE_LINES.replace(
        b"line 5 of the module under test\n", b"five = compute_it_properly(strict=True)\n")},
        "Strictly")
    took = stack.commit({"pkg/b.py": OTHER}, "Other work in b", tag="v4")
    assert [s["by"] for s in said(stack)] == [took], "b.py's part is in no overlay and not upstream"


@known_wrong("a kept fix whose added line upstream folded into a neighbour line")
def test_a_line_upstream_folded_into_its_neighbour_is_not_put_back_beside_it(tmp_path):
    """The fix adds `total += 1` after `log("size")`; upstream folds it into the line above
    (`total = n + 1`, its copy of the fix's line gone): read as taken out (exit 1), and the
    advised `bring-back` merges clean, exit 0, `total` counted twice. It must stop there."""
    base = (b'def size(n):\n    total = n\n    log("size")\n    check(total)\n'
            b'    return total\n\n\ndef log(what):\n    print(what)\n')
    fixed = base.replace(b'    log("size")\n', b'    log("size")\n    total += 1\n')
    stack = OneUpstreamStack(tmp_path, {"pkg/cfg.py": base})
    stack.add_fix("fa", "pkg/cfg.py", base, fixed)
    stack.commit({"pkg/cfg.py": fixed}, "Count the header (#11)", tag="v2")
    stack.cli("rebase", "--to", "v2")
    stack.commit({"pkg/cfg.py": base.replace(b"    total = n\n", b"    total = n + 1\n")},
                 "Count the header at once", tag="v3")
    stack.cli("rebase", "--to", "v3", expect=1)
    code, _, _ = stack.cli("bring-back", "up/fa.patch", expect=None)
    assert code == 3, "total counted twice in the overlay"


@known_wrong("a file upstream split into copies alike where one copy keeps the file's base name")
def test_a_file_split_into_a_copy_of_its_name_and_another_is_not_followed_into_one(tmp_path):
    """ops/ moved to kernels/, ops/x.py made kernels/x.py and kernels/x_gfx950.py, the same
    token changed in both (identical copies): git pairs the file by its name, the fix follows
    kernels/x.py, `applies`, exit 0, and the gfx950 copy never gets it (`git rebase` too)."""
    from test_status_exact_renames import FUNCTIONS, OTHERS, where_a_fix_follows

    copy = FUNCTIONS.replace(b"value * 5 + 17", b"value * 5 + 42")
    found = where_a_fix_follows(tmp_path, "ops/x.py", OTHERS, {
        "ops/x.py": None, "kernels/x.py": copy, "kernels/x_gfx950.py": copy},
        renames={p: "kernels/" + p[4:] for p in OTHERS})
    assert found["rebase"] == "stop", "the gfx950 copy would go without the fix"


@known_wrong("a reverted kept fix whose line upstream later sets to a third value")
def test_a_reverted_fix_whose_line_upstream_sets_to_a_third_value_is_said(tmp_path):
    """The fix makes `TIMEOUT = 30` read `TIMEOUT = 300`; it lands, a `git revert` takes it out,
    then upstream sets `TIMEOUT = 3000`: a line nearer the fix's text than the old one reads as
    the fix landed again, `status` exits 0, while 300 is in no overlay and not upstream."""
    base = (b"import os\n\n# seconds to wait for the server\nTIMEOUT = 30\nRETRIES = 3\n\n\n"
            b"def get(key):\n    return os.environ.get(key)\n")
    fixed = base.replace(b"TIMEOUT = 30\n", b"TIMEOUT = 300\n")
    stack = OneUpstreamStack(tmp_path, {"pkg/cfg.py": base})
    stack.add_fix("fix-timeout", "pkg/cfg.py", base, fixed)
    landing = stack.commit({"pkg/cfg.py": fixed}, "Wait longer (#11)", tag="v2")
    stack.dropped_as_landed("up=v2")
    stack.commit({"pkg/cfg.py": base}, 'Revert "Wait longer (#11)"\n\n'
                 f"This reverts commit {landing}.", tag="v3")
    stack.commit({"pkg/cfg.py": base.replace(b"TIMEOUT = 30\n", b"TIMEOUT = 3000\n")},
                 "cfg: wait for slow servers", tag="v4")
    assert said(stack), "TIMEOUT = 300 is in no overlay and not upstream"


def _c_copies_around(block: bytes, before: bytes = b"    int e = scale(a);\n"
                     ) -> tuple[bytes, bytes, bytes]:
    """A HIP function reading y below `block`: the base, the fix's `y += 1;` under y's
    setting, upstream's above `before` (a line below `block`)."""
    base = (b"#include <hip/hip_runtime.h>\n\n"
            b"__device__ int run(int* out, int x, int n, const int* c) {\n"
            b"    int y = x + 1;\n    int a = prep(x);\n" + block +
            b"    int e = scale(a);\n    out[0] = y * 2 + e;\n    return 0;\n}\n\n"
            b"int version() { return 1; }\n")
    fix = base.replace(b"    int y = x + 1;\n", b"    int y = x + 1;\n    y += 1;\n")
    return base, fix, base.replace(before, b"    y += 1;\n" + before)


@known_wrong("a short statement the fix adds at the end of a block that always runs")
@pytest.mark.parametrize("header", [b"    if b:\n", b"    with LOCK:\n"], ids=["if", "with"])
def test_a_short_statement_the_fix_added_at_the_end_of_a_block_is_not_doubled(tmp_path, header):
    base = (b'"""Kernels."""\n\n\ndef run(x, n, c):\n    y = x + 1\n    a = prep(x)\n'
            b"    b = load(a)\n" + header + b"        d = clip(b)\n    e = scale(a)\n"
            b"    z = y * 2\n    return z, e\n\n\ndef other(y):\n    return y\n")
    fix = base.replace(b"        d = clip(b)\n", b"        d = clip(b)\n        y += 1\n")
    upstream = base.replace(b"    y = x + 1\n", b"    y = x + 1\n    y += 1\n")
    stack = stack_with_file(tmp_path, "pkg/a.py", base, fix, upstream)
    assert not doubled_after_rebase(stack, "pkg/a.py", b"y += 1\n")


@known_wrong("a short statement the fix adds where upstream added the same past a C `switch`")
def test_a_short_statement_past_a_switch_of_braced_cases_with_no_default_is_not_doubled(
        tmp_path):
    cases = b"".join(b"    case %d: {\n        d = clip%d(y);\n        break;\n    }\n" % (k, k)
                     for k in (1, 2))
    base, fix, upstream = _c_copies_around(b"    int d = 0;\n    switch (n) {\n" + cases
                                           + b"    }\n", before=b"    out[0] = y * 2 + e;\n")
    stack = stack_with_file(tmp_path, "pkg/k.cu", base, fix, upstream)
    assert not doubled_after_rebase(stack, "pkg/k.cu", b"y += 1;")


@known_wrong("a short statement the fix adds where upstream added the same past a C++ lambda")
def test_a_short_statement_past_a_lambda_over_lines_is_not_doubled(tmp_path):
    base, fix, upstream = _c_copies_around(b"    auto f = [&]() {\n        return clip(y);\n"
                                           b"    };\n")
    stack = stack_with_file(tmp_path, "pkg/k.cu", base, fix, upstream)
    assert not doubled_after_rebase(stack, "pkg/k.cu", b"y += 1;")


def test_each_mark_names_an_entry_the_docs_still_list():
    """An entry taken out of docs/guarantees.md takes its test's mark with it, and back."""
    from pathlib import Path
    here = Path(__file__)
    docs = (here.parents[1] / "docs" / "guarantees.md").read_text()
    section = docs.split("### Where these rules are known not to hold yet")[1].split("\n### ")[0]
    entries = " ".join(section.split())
    marks = [line.split('known_wrong("')[1].split('")')[0]
             for line in here.read_text().splitlines() if line.startswith('@known_wrong("')]
    assert len(marks) == 11
    assert [m for m in marks if f"- {m}" not in entries] == []
