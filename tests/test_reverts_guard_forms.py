"""A kept guard naming two values (`if x is None or y is None:` + `return 0`; C's `if (!x ||
!y) return 0;`) that upstream wrote again in its own form while rewriting the lines under it:
as two ifs, or with its condition wrapped over lines (black's `if (` ... `):`, C's condition
split after `||`). Each check is read as its whole statement, and the guard is kept where each
clause of its condition is held by some check of the function: quiet, until a commit drops it
(then said). Read on one physical line, the guard upstream still had was said taken out (exit
1, advising `bring-back`). A check of a name that is not the guard's clause (`if x.dim() > 2:`
+ `raise`) keeps nothing: the guard dropped beside it is said. Real git history, through the
CLI."""
from __future__ import annotations

import pytest

from test_reverts_guard_rewritten import GUARD, REWRITTEN, _fn, _landed, _module, _said_by

TWO = b"    if x is None or y is None:\n        return 0\n"
HEAD = REWRITTEN + b"    b = b + y\n"

UPSTREAM_FORMS = {
    "two ifs": b"    if x is None:\n        return 0\n    if y is None:\n        return 0\n",
    "condition wrapped over lines":
        b"    if (\n        x is None\n        or y is None\n    ):\n        return 0\n",
}


@pytest.mark.parametrize("form", list(UPSTREAM_FORMS))
def test_the_guard_written_again_over_lines_is_quiet_until_a_commit_drops_it(tmp_path, form):
    stack = _landed(tmp_path, _module(_fn(b"a2", args=b"x, y")),
                    _module(_fn(b"a2", TWO, args=b"x, y")))
    stack.commit({"pkg/a.py": _module(_fn(b"a2", UPSTREAM_FORMS[form], HEAD, args=b"x, y"))},
                 "rework a2")
    stack.kept_fixes_hold(f"up={stack.upstream.head()}")
    took = stack.commit({"pkg/a.py": _module(_fn(b"a2", head=HEAD, args=b"x, y"))},
                        "a2: x and y are never None")
    _said_by(stack, took)


def _c_fn(top: bytes = b"", head: bytes = b"  int a = 2;\n  int b = a + x[0];\n") -> bytes:
    return (b"int k2(const int *x, const int *y) {\n" + top + head +
            b"".join(b"  int v%d = b + %d;\n" % (k, k) for k in range(8)) + b"  return v7;\n}\n")


def _c_module(k2: bytes) -> bytes:
    other = b"int k0(int a) {\n" + b"".join(b"  a += %d;\n" % k for k in range(6)) + \
        b"  return a;\n}\n"
    return b"#include <x.h>\n\n" + other + b"\n" + k2


def test_a_cpp_guard_split_over_lines_is_quiet_until_a_commit_drops_it(tmp_path):
    guard = b"  if (!x || !y) return 0;\n"
    stack = _landed(tmp_path, _c_module(_c_fn()), _c_module(_c_fn(guard)), "csrc/k.cu")
    head = b"  int a = 3;\n  int b = a - x[0] + y[0];\n"
    split = b"  if (!x ||\n      !y)\n    return 0;\n"
    stack.commit({"csrc/k.cu": _c_module(_c_fn(split, head))}, "rework k2")
    stack.kept_fixes_hold(f"up={stack.upstream.head()}")
    took = stack.commit({"csrc/k.cu": _c_module(_c_fn(head=head))}, "k2: never null")
    _said_by(stack, took)


OTHER_CHECKS = {
    "of x": b"    if x.dim() > 2:\n        raise ValueError('x is 2-d')\n",
    "of x and of y": b"    if x.dim() > 2:\n        raise ValueError('x is 2-d')\n"
                     b"    if y.dim() > 2:\n        raise ValueError('y is 2-d')\n",
}


@pytest.mark.parametrize("other", list(OTHER_CHECKS))
def test_the_guard_dropped_beside_other_checks_of_its_names_is_said(tmp_path, other):
    stack = _landed(tmp_path, _module(_fn(b"a2", args=b"x, y")),
                    _module(_fn(b"a2", TWO, args=b"x, y")))
    took = stack.commit({"pkg/a.py": _module(_fn(b"a2", OTHER_CHECKS[other], HEAD,
                                                 args=b"x, y"))}, "rework a2")
    said = _said_by(stack, took)
    assert "`if x is None or y is None:`" in said["detail"], said


# A guard of one name (`if x is None:` + `return 0`): its own check written again another
# way keeps it; a check of its name testing something else does not.
ONE_NAME_KEPT = {
    "merged with another name": b"    if x is None or FAST:\n        return 0\n",
    "reordered on one line": b"    if x.numel() == 0 or x is None: return 0\n",
    "parenthesised": b"    if (x is None) or x.numel() == 0:\n        return 0\n",
    "written == None": b"    if x == None:\n        return 0\n",
    "a check call": b"    torch._check(x is not None, lambda: 'x is needed')\n",
    "a log line before the exit": b"    if x is None:\n        log('no x')\n        return 0\n",
    "widened to any false x": b"    if not x:\n        return 0\n",
    "moved into a helper named as a check": b"    validate_input(x)\n",
}


@pytest.mark.parametrize("form", list(ONE_NAME_KEPT))
def test_the_guard_of_one_name_kept_in_its_own_check_is_quiet_until_a_commit_drops_it(
        tmp_path, form):
    stack = _landed(tmp_path, _module(_fn(b"a2")), _module(_fn(b"a2", GUARD)))
    stack.commit({"pkg/a.py": _module(_fn(b"a2", ONE_NAME_KEPT[form], REWRITTEN))},
                 "rework a2")
    stack.kept_fixes_hold(f"up={stack.upstream.head()}")
    took = stack.commit({"pkg/a.py": _module(_fn(b"a2", head=REWRITTEN))}, "a2: x is never None")
    _said_by(stack, took)


ONE_NAME_OTHER = {
    "a check of its shape": b"    if x.dim() > 2:\n        raise ValueError('x is 2-d')\n",
    "another guard of it": b"    if x.numel() == 0:\n        return 0\n",
    "a default": b"    x = x or DEFAULT\n",
    "a default chosen by a condition": b"    x = DEFAULT if x is None else x\n",
    "its condition without an exit": b"    if x is None:\n        x = DEFAULT\n",
    "its condition narrowed by and": b"    if x is None and STRICT:\n        return 0\n",
    "the converse ending early": b"    if x is not None:\n        return 0\n",
    "a helper checking another value of it": b"    check_shape(x.shape)\n",
}


@pytest.mark.parametrize("other", list(ONE_NAME_OTHER))
def test_the_guard_of_one_name_dropped_beside_another_check_of_it_is_said(tmp_path, other):
    stack = _landed(tmp_path, _module(_fn(b"a2")), _module(_fn(b"a2", GUARD)))
    took = stack.commit({"pkg/a.py": _module(_fn(b"a2", ONE_NAME_OTHER[other], REWRITTEN))},
                        "rework a2")
    said = _said_by(stack, took)
    assert "`if x is None:`" in said["detail"], said


CPP_KEPT = {
    "a check call": b'  TORCH_CHECK(x != nullptr, "x is needed");\n',
    "compared the other way": b"  if (nullptr == x) {\n    return 0;\n  }\n",
}
CPP_OTHER = {
    "a check of its first value": b'  TORCH_CHECK(x[0] > 0, "x[0] is positive");\n',
    "another guard of it": b"  if (x[0] < 0) return 0;\n",
}


@pytest.mark.parametrize("form", list(CPP_KEPT))
def test_a_cpp_guard_kept_in_its_own_check_is_quiet_until_a_commit_drops_it(tmp_path, form):
    stack = _landed(tmp_path, _c_module(_c_fn()), _c_module(_c_fn(b"  if (!x) return 0;\n")),
                    "csrc/k.cu")
    head = b"  int a = 3;\n  int b = a - x[0] + y[0];\n"
    stack.commit({"csrc/k.cu": _c_module(_c_fn(CPP_KEPT[form], head))}, "rework k2")
    stack.kept_fixes_hold(f"up={stack.upstream.head()}")
    took = stack.commit({"csrc/k.cu": _c_module(_c_fn(head=head))}, "k2: never null")
    _said_by(stack, took)


@pytest.mark.parametrize("other", list(CPP_OTHER))
def test_a_cpp_guard_dropped_beside_another_check_of_its_name_is_said(tmp_path, other):
    stack = _landed(tmp_path, _c_module(_c_fn()), _c_module(_c_fn(b"  if (!x) return 0;\n")),
                    "csrc/k.cu")
    head = b"  int a = 3;\n  int b = a - x[0] + y[0];\n"
    took = stack.commit({"csrc/k.cu": _c_module(_c_fn(CPP_OTHER[other], head))}, "rework k2")
    said = _said_by(stack, took)
    assert "`if (!x) return 0;`" in said["detail"], said


def test_a_guard_on_any_false_value_dropped_beside_a_check_of_none_is_said(tmp_path):
    """`if not x:` + `return 0` leaves for an empty x too: `if x is None:` does not keep it."""
    falsy = b"    if not x:\n        return 0\n"
    stack = _landed(tmp_path, _module(_fn(b"a2")), _module(_fn(b"a2", falsy)))
    took = stack.commit({"pkg/a.py": _module(_fn(b"a2", GUARD, REWRITTEN))}, "rework a2")
    said = _said_by(stack, took)
    assert "`if not x:`" in said["detail"], said


# A guard testing one value (`if x == ROW:` + `return 0`): upstream widening it to a literal
# list, tuple or set holding that value, or writing it as membership in one, keeps it; a
# membership test of other values does not.
EQUAL_GUARD = b"    if x == ROW:\n        return 0\n"
MEMBER_KEPT = {
    "widened to a tuple": b"    if x in (ROW, COL):\n        return 0\n",
    "written as a list of it": b"    if x in [ROW]:\n        return 0\n",
}


@pytest.mark.parametrize("form", list(MEMBER_KEPT))
def test_a_guard_of_one_value_kept_as_membership_is_quiet_until_a_commit_drops_it(
        tmp_path, form):
    stack = _landed(tmp_path, _module(_fn(b"a2")), _module(_fn(b"a2", EQUAL_GUARD)))
    stack.commit({"pkg/a.py": _module(_fn(b"a2", MEMBER_KEPT[form], REWRITTEN))},
                 "rework a2")
    stack.kept_fixes_hold(f"up={stack.upstream.head()}")
    took = stack.commit({"pkg/a.py": _module(_fn(b"a2", head=REWRITTEN))}, "a2: x is never ROW")
    _said_by(stack, took)


def test_a_guard_of_one_value_dropped_beside_membership_of_others_is_said(tmp_path):
    stack = _landed(tmp_path, _module(_fn(b"a2")), _module(_fn(b"a2", EQUAL_GUARD)))
    other = b"    if x in (COL, DIAG):\n        return 0\n"
    took = stack.commit({"pkg/a.py": _module(_fn(b"a2", other, REWRITTEN))}, "rework a2")
    said = _said_by(stack, took)
    assert "`if x == ROW:`" in said["detail"], said
