"""A kept guard upstream dropped beside a copy of it that guards none of the work: the copy
below a line reading the guard's value (`int b = a - x[0];` then `if (!x) return 0;`), or
leaving by `goto` to a label a read of it comes after (`if (!x) goto skip;` + `log(1);` +
`skip:` + the work). A check anywhere in the function was read as keeping the guard, quiet
(exit 0), the work reading x where it is null; such a copy is no copy now: "removed", exit 1
(tests/test_known_wrong.py holds the first two shapes). Upstream's ordinary copies stay quiet
until a commit drops them: above the work, in each branch of an if/else whose other branch
reads the value first, a `goto` past every read, a copy below the lines the fix's own guard
had above it, a name carrying the test assigned above it, names of the value that read
nothing (a keyword argument, `sizeof`, a lambda's body, `#if 0`, a conditional expression
testing it first), and for a guard on what the value holds (`x.numel() == 0`) steps keeping
it (`x = x.contiguous()`, `x.shape`); a test reading through the value (`if x.numel() ==
0:`, `TORCH_CHECK(x[0] > 0, ...)`) above a copy of `if x is None:` is work. For a kernel's
bounds guard (`if (i >= n) return;`) arithmetic on the index above the copy (`const int row =
i / cols;`) is no work; a load, a store through a name computed from it, a dereference, a call
taking it or a division by the bound is. Real git history, through the CLI."""
from __future__ import annotations

import pytest

from test_reverts_guard_forms import _c_fn, _c_module
from test_reverts_guard_rewritten import (GUARD, HEAD, REWRITTEN, _fn, _held_until_dropped,
                                          _landed, _module)

C_GUARD = b"  if (!x) return 0;\n"
C_WORK = b"  int a = 3;\n  int b = a - x[0];\n"


def _said(stack) -> list:
    doc = stack.json("status", "--against", f"up={stack.upstream.head()}", expect=None)
    return doc["reverted"] + doc["gone_upstream"]


BELOW = {
    "python": (b"    a = 3\n    b = a - x\n    if x is None:\n        return 0\n"),
    "python under a branch read first": (
        b"    if n > 0:\n        b = x + 1\n    if x is None:\n        return 0\n"
        b"    b = x - 1\n"),
    "python below a test reading through it": (
        b"    if x.numel() == 0:\n        return 1\n    if x is None:\n        return 0\n"),
    "python below an f-string reading it": (
        b"    log(f'{x[0]}')\n    if x is None:\n        return 0\n"),
    "python past a branch reading it that returns": (
        b"    if n > 0:\n        return x + 1\n    if x is None:\n        return 0\n"
        b"    b = x - 1\n"),
}


@pytest.mark.parametrize("shape", list(BELOW))
def test_a_guard_dropped_beside_a_copy_below_a_read_of_its_value_is_said(tmp_path, shape):
    stack = _landed(tmp_path, _module(_fn(b"a2")), _module(_fn(b"a2", GUARD)))
    stack.commit({"pkg/a.py": _module(_fn(b"a2", head=BELOW[shape] + b"    c = b * 4\n"))},
                 "rework a2")
    assert _said(stack), "x is read before any check: the guard is in no overlay"


def test_a_cpp_goto_copy_to_a_label_the_work_comes_after_is_said(tmp_path):
    stack = _landed(tmp_path, _c_module(_c_fn()), _c_module(_c_fn(C_GUARD)), "csrc/k.cu")
    head = b"  if (!x) goto done;\n  log(1);\ndone:\n  log(2);\n" + C_WORK
    stack.commit({"csrc/k.cu": _c_module(_c_fn(head=head))}, "rework k2")
    assert _said(stack), "the goto skips the logs only: x[0] is read where x is null"


def test_a_cpp_copy_below_a_check_reading_through_the_value_is_said(tmp_path):
    stack = _landed(tmp_path, _c_module(_c_fn()), _c_module(_c_fn(C_GUARD)), "csrc/k.cu")
    head = b"  TORCH_CHECK(x[0] > 0, \"x\");\n" + C_GUARD + C_WORK
    stack.commit({"csrc/k.cu": _c_module(_c_fn(head=head))}, "rework k2")
    assert _said(stack), "x[0] is read where x is null"


QUIET_PYTHON = {
    "above the work": GUARD + REWRITTEN,
    "in both branches, the other reading x first": (
        b"    if n > 0:\n        if x is None:\n            return 0\n        a = x + 1\n"
        b"    else:\n        if x is None:\n            return 0\n        a = x - 1\n"
        b"    b = a - x\n    c = b * 4\n"),
    "a keyword argument of its name above it": (
        b"    configure(x=1)\n" + GUARD + REWRITTEN),
    "a conditional expression testing it above it": (
        b"    n = 0 if x is None else len(x)\n" + GUARD + REWRITTEN),
    "a name carrying the test above it": (
        b"    missing = x is None\n    if missing:\n        return 0\n" + REWRITTEN),
}


@pytest.mark.parametrize("shape", list(QUIET_PYTHON))
def test_a_copy_above_every_read_is_quiet_until_a_commit_drops_it(tmp_path, shape):
    _held_until_dropped(tmp_path, _module(_fn(b"a2")), _module(_fn(b"a2", GUARD)),
                        _module(_fn(b"a2", head=QUIET_PYTHON[shape])),
                        _module(_fn(b"a2", head=REWRITTEN)), ("rework a2", "a2: never None"))


QUIET_C = {
    "a goto past every read": (
        b"  if (!x) goto out;\n" + C_WORK + b"  return b;\nout:\n  return 0;\n"),
    "in both branches, the other reading x first": (
        b"  int b = 0;\n  if (n) {\n    if (!x) return 0;\n    b = x[0];\n  } else {\n"
        b"    if (!x) return 0;\n    b = x[1];\n  }\n" + C_WORK),
    "below a sizeof": b"  int s = sizeof(x);\n" + C_GUARD + C_WORK,
    "below a lambda's body": (
        b"  auto f = [&]() {\n    return x[0];\n  };\n" + C_GUARD + C_WORK),
    "below an #if 0": b"#if 0\n  int q = x[0];\n#endif\n" + C_GUARD + C_WORK,
}


@pytest.mark.parametrize("shape", list(QUIET_C))
def test_a_cpp_copy_above_every_read_is_quiet_until_a_commit_drops_it(tmp_path, shape):
    body = QUIET_C[shape]
    _held_until_dropped(tmp_path, _c_module(_c_fn()), _c_module(_c_fn(C_GUARD)),
                        _c_module(_c_fn(head=body)), _c_module(_c_fn(head=C_WORK)),
                        ("rework k2", "k2: never null"), "csrc/k.cu")


def test_a_copy_below_the_reads_the_fix_put_its_guard_under_is_quiet_until_dropped(tmp_path):
    """The fix's guard sat under `x = x.contiguous()`: a copy there guards what it did."""
    first = b"    x = x.contiguous()\n"
    guard = b"    if x.numel() == 0:\n        return 0\n"
    _held_until_dropped(tmp_path, _module(_fn(b"a2", first)), _module(_fn(b"a2", first + guard)),
                        _module(_fn(b"a2", first + guard, REWRITTEN)),
                        _module(_fn(b"a2", first, REWRITTEN)), ("rework a2", "a2: never empty"))


@pytest.mark.parametrize("above", [b"    x = x.contiguous()\n", b"    shape = x.shape\n"],
                         ids=["a layout step", "a read of its shape"])
def test_a_size_guard_copy_below_steps_keeping_the_value_is_quiet_until_dropped(tmp_path,
                                                                               above):
    """A guard on what x holds lets x through: a step keeping it is no work."""
    guard = b"    if x.numel() == 0:\n        return 0\n"
    _held_until_dropped(tmp_path, _module(_fn(b"a2")), _module(_fn(b"a2", guard)),
                        _module(_fn(b"a2", above + guard, REWRITTEN)),
                        _module(_fn(b"a2", above, REWRITTEN)), ("rework a2", "a2: never empty"))


def test_the_work_above_the_landed_guard_rewritten_makes_the_copy_below_it_said(tmp_path):
    """What the fix's guard had above it, rewritten upstream, reads as work the copy is below."""
    first = b"    x = x.contiguous()\n"
    guard = b"    if x.numel() == 0:\n        return 0\n"
    stack = _landed(tmp_path, _module(_fn(b"a2", first)), _module(_fn(b"a2", first + guard)))
    stack.commit({"pkg/a.py": _module(_fn(b"a2", b"    y = x[0]\n" + first + guard,
                                          HEAD.replace(b"2", b"3")))}, "rework a2")
    assert _said(stack), "x[0] is read on an empty x before the check"


def _kernel(head: bytes) -> bytes:
    """A HIP module whose kernel k2 opens with `head` (under its index) above its work."""
    return (b"#include <hip/hip_runtime.h>\n\n__global__ void k0(float* out, const float* in, "
            b"int n) {\n  out[0] = in[0];\n}\n\n__global__ void k2(float* out, const float* in, "
            b"int n, int cols) {\n  const int i = blockIdx.x * blockDim.x + threadIdx.x;\n" +
            head + b"  out[i] = in[i] * 2;\n  out[i + n] = 0.f;\n}\n")


BOUNDS = b"  if (i >= n) return;\n"


def test_a_bounds_guard_copy_below_arithmetic_on_the_index_is_quiet_until_dropped(tmp_path):
    """`const int row = i / cols;` above upstream's `if (i >= n) return;` touches no memory:
    the copy guards every load and store the fix's guard did."""
    row = b"  const int row = i / cols;\n"
    _held_until_dropped(tmp_path, _kernel(b""), _kernel(BOUNDS), _kernel(row + BOUNDS),
                        _kernel(row), ("rework k2", "k2: no bounds check"), "csrc/k.cu")


KERNEL_WORK_ABOVE = {
    "a load": b"  float v = in[i];\n",
    "a store through a name computed from it": b"  const int row = i / cols;\n  out[row] = 0.f;\n",
    "a pointer computed from it, dereferenced": b"  float* p = out + i;\n  *p = 0.f;\n",
    "a call taking it": b"  clear(out, i);\n",
    "a division by the bound": b"  const int per = cols / n;\n",
}


@pytest.mark.parametrize("shape", list(KERNEL_WORK_ABOVE))
def test_a_bounds_guard_copy_below_memory_work_on_the_index_is_said(tmp_path, shape):
    stack = _landed(tmp_path, _kernel(b""), _kernel(BOUNDS), "csrc/k.cu")
    stack.commit({"csrc/k.cu": _kernel(KERNEL_WORK_ABOVE[shape] + BOUNDS)}, "rework k2")
    assert _said(stack), "memory is touched through the index before the check"
