"""A kept guard (`if n == 0:` + `return 0`, `if x is None:` + `return 0`) that upstream widened
while rewriting the lines under it: a bound made wider (`if n <= 0:` for `n == 0` or `n < 0`,
`if n >= LIMIT:` for `n > LIMIT`; C's `if (n <= 0) return 0;` for `if (n == 0)`), a test on
None made a type test (`if not isinstance(x, torch.Tensor):`, `if not torch.is_tensor(x):`).
The function still leaves wherever the guard did: quiet, until a commit drops upstream's
check, which is then named. Read as dropped, the guard upstream kept was said taken out by
the widening commit (exit 1, advising `bring-back`, which would put it back beside upstream's
wider one). A narrower bound, another bound, or a type test that holds for None keeps
nothing: the guard dropped beside it is said. Real git history, through the CLI."""
from __future__ import annotations

import pytest

from test_reverts_guard_forms import _c_fn, _c_module
from test_reverts_guard_rewritten import (GUARD, REWRITTEN, _fn, _held_until_dropped, _landed,
                                          _module, _said_by)

WIDENED = {
    "n == 0 to n <= 0": (b"    if n == 0:\n        return 0\n",
                         b"    if n <= 0:\n        return 0\n"),
    "n < 0 to n <= 0": (b"    if n < 0:\n        raise ValueError('n')\n",
                        b"    if n <= 0:\n        raise ValueError('n')\n"),
    "n > LIMIT to n >= LIMIT": (b"    if n > LIMIT:\n        raise ValueError('n')\n",
                                b"    if LIMIT <= n:\n        raise ValueError('n')\n"),
    "x is None to not a tensor": (GUARD, b"    if not isinstance(x, torch.Tensor):\n"
                                         b"        return 0\n"),
    "x is None to not torch.is_tensor": (GUARD, b"    if not torch.is_tensor(x):\n"
                                                b"        return 0\n"),
}
NOT_WIDENED = {
    "n <= 0 narrowed to n == 0": (b"    if n <= 0:\n        return 0\n",
                                  b"    if n == 0:\n        return 0\n"),
    "n == 0 beside n < 0": (b"    if n == 0:\n        return 0\n",
                            b"    if n < 0:\n        return 0\n"),
    "n >= 0 beside n < 0": (b"    if n >= 0:\n        return 0\n",
                            b"    if n < 0:\n        return 0\n"),
    "n != 0 beside n <= 0": (b"    if n != 0:\n        return 0\n",
                             b"    if n <= 0:\n        return 0\n"),
    "x is None beside a type test holding None":
        (GUARD, b"    if not isinstance(x, (torch.Tensor, type(None))):\n        return 0\n"),
    "x is None beside a type of a name of its own":
        (GUARD, b"    if not isinstance(x, MaybeTensor):\n        return 0\n"),
    "x is None beside a dotted type None is of":
        (GUARD, b"    if not isinstance(x, collections.abc.Hashable):\n        return 0\n"),
    "x is None beside an attribute None has":
        (GUARD, b"    if not hasattr(x, '__class__'):\n        return 0\n"),
    "x is None beside a type test leaving for tensors":
        (GUARD, b"    if isinstance(x, torch.Tensor):\n        return 0\n"),
}


@pytest.mark.parametrize("form", list(WIDENED))
def test_a_guard_widened_upstream_is_quiet_until_a_commit_drops_it(tmp_path, form):
    guard, wider = WIDENED[form]
    said = _held_until_dropped(tmp_path, _module(_fn(b"a2", args=b"x, n")),
                               _module(_fn(b"a2", guard, args=b"x, n")),
                               _module(_fn(b"a2", wider, REWRITTEN, args=b"x, n")),
                               _module(_fn(b"a2", head=REWRITTEN, args=b"x, n")),
                               ("rework a2", "a2: drop the check"))
    assert "`%s`" % guard.splitlines()[0].strip().decode() in said["detail"], said


@pytest.mark.parametrize("other", list(NOT_WIDENED))
def test_a_guard_dropped_beside_a_check_not_holding_it_is_said(tmp_path, other):
    guard, check = NOT_WIDENED[other]
    stack = _landed(tmp_path, _module(_fn(b"a2", args=b"x, n")),
                    _module(_fn(b"a2", guard, args=b"x, n")))
    took = stack.commit({"pkg/a.py": _module(_fn(b"a2", check, REWRITTEN, args=b"x, n"))},
                        "rework a2")
    said = _said_by(stack, took)
    assert "`%s`" % guard.splitlines()[0].strip().decode() in said["detail"], said


C_HEAD = b"  int a = 3;\n  int b = a - x[0] + y[0];\n"


def test_a_cpp_guard_widened_upstream_is_quiet_until_a_commit_drops_it(tmp_path):
    guard = b"  if (n == 0) return 0;\n"
    wider = b"  if (n <= 0) {\n    return 0;\n  }\n"
    _held_until_dropped(tmp_path, _c_module(_c_fn()), _c_module(_c_fn(guard)),
                        _c_module(_c_fn(wider, C_HEAD)), _c_module(_c_fn(head=C_HEAD)),
                        ("rework k2", "k2: drop the check"), "csrc/k.cu")


C_NOT_WIDENED = {
    "n <= 0 narrowed to !n": (b"  if (n <= 0) return 0;\n", b"  if (!n) return 0;\n"),
    "n beside n <= 0": (b"  if (n) return 0;\n", b"  if (n <= 0) return 0;\n"),
}


@pytest.mark.parametrize("other", list(C_NOT_WIDENED))
def test_a_cpp_guard_dropped_beside_a_bound_not_holding_it_is_said(tmp_path, other):
    guard, check = C_NOT_WIDENED[other]
    stack = _landed(tmp_path, _c_module(_c_fn()), _c_module(_c_fn(guard)), "csrc/k.cu")
    took = stack.commit({"csrc/k.cu": _c_module(_c_fn(check, C_HEAD))}, "rework k2")
    said = _said_by(stack, took)
    assert "`%s`" % guard.strip().decode() in said["detail"], said
