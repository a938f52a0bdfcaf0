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

from test_reverts_guard_rewritten import (GUARD, REWRITTEN, TAIL, _fn, _held_until_dropped,
                                          _landed, _module, _said_by)

TWO = b"    if x is None or y is None:\n        return 0\n"
HEAD = REWRITTEN + b"    b = b + y\n"

UPSTREAM_FORMS = {
    "two ifs": b"    if x is None:\n        return 0\n    if y is None:\n        return 0\n",
    "condition wrapped over lines":
        b"    if (\n        x is None\n        or y is None\n    ):\n        return 0\n",
}


@pytest.mark.parametrize("form", list(UPSTREAM_FORMS))
def test_the_guard_written_again_over_lines_is_quiet_until_a_commit_drops_it(tmp_path, form):
    _held_until_dropped(tmp_path, _module(_fn(b"a2", args=b"x, y")),
                        _module(_fn(b"a2", TWO, args=b"x, y")),
                        _module(_fn(b"a2", UPSTREAM_FORMS[form], HEAD, args=b"x, y")),
                        _module(_fn(b"a2", head=HEAD, args=b"x, y")),
                        ("rework a2", "a2: x and y are never None"))


def _c_fn(top: bytes = b"", head: bytes = b"  int a = 2;\n  int b = a + x[0];\n") -> bytes:
    return (b"int k2(const int *x, const int *y) {\n" + top + head +
            b"".join(b"  int v%d = b + %d;\n" % (k, k) for k in range(8)) + b"  return v7;\n}\n")


def _c_module(k2: bytes) -> bytes:
    other = b"int k0(int a) {\n" + b"".join(b"  a += %d;\n" % k for k in range(6)) + \
        b"  return a;\n}\n"
    return b"#include <x.h>\n\n" + other + b"\n" + k2


def test_a_cpp_guard_split_over_lines_is_quiet_until_a_commit_drops_it(tmp_path):
    guard = b"  if (!x || !y) return 0;\n"
    head = b"  int a = 3;\n  int b = a - x[0] + y[0];\n"
    split = b"  if (!x ||\n      !y)\n    return 0;\n"
    _held_until_dropped(tmp_path, _c_module(_c_fn()), _c_module(_c_fn(guard)),
                        _c_module(_c_fn(split, head)), _c_module(_c_fn(head=head)),
                        ("rework k2", "k2: never null"), "csrc/k.cu")


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
    _held_until_dropped(tmp_path, _module(_fn(b"a2")), _module(_fn(b"a2", GUARD)),
                        _module(_fn(b"a2", ONE_NAME_KEPT[form], REWRITTEN)),
                        _module(_fn(b"a2", head=REWRITTEN)), ("rework a2", "a2: x is never None"))


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
    "marked unlikely": b"  if (!x) [[unlikely]] return 0;\n",
    "marked unlikely, braced": b"  if (x == nullptr) [[unlikely]] {\n    return 0;\n  }\n",
}
CPP_OTHER = {
    "a check of its first value": b'  TORCH_CHECK(x[0] > 0, "x[0] is positive");\n',
    "another guard of it": b"  if (x[0] < 0) return 0;\n",
}


@pytest.mark.parametrize("form", list(CPP_KEPT))
def test_a_cpp_guard_kept_in_its_own_check_is_quiet_until_a_commit_drops_it(tmp_path, form):
    head = b"  int a = 3;\n  int b = a - x[0] + y[0];\n"
    _held_until_dropped(tmp_path, _c_module(_c_fn()), _c_module(_c_fn(b"  if (!x) return 0;\n")),
                        _c_module(_c_fn(CPP_KEPT[form], head)), _c_module(_c_fn(head=head)),
                        ("rework k2", "k2: never null"), "csrc/k.cu")


@pytest.mark.parametrize("other", list(CPP_OTHER))
def test_a_cpp_guard_dropped_beside_another_check_of_its_name_is_said(tmp_path, other):
    stack = _landed(tmp_path, _c_module(_c_fn()), _c_module(_c_fn(b"  if (!x) return 0;\n")),
                    "csrc/k.cu")
    head = b"  int a = 3;\n  int b = a - x[0] + y[0];\n"
    took = stack.commit({"csrc/k.cu": _c_module(_c_fn(CPP_OTHER[other], head))}, "rework k2")
    said = _said_by(stack, took)
    assert "`if (!x) return 0;`" in said["detail"], said


# A guard the fix marked with a C++20 attribute (`[[unlikely]]` between its condition and its
# body) is a guard as any other: upstream writing it without the mark keeps it, dropping it
# while rewriting the lines under it is said.
MARKED = b"  if (!x) [[unlikely]] return 0;\n"


def test_a_cpp_guard_marked_unlikely_kept_unmarked_is_quiet_until_a_commit_drops_it(tmp_path):
    head = b"  int a = 3;\n  int b = a - x[0] + y[0];\n"
    _held_until_dropped(tmp_path, _c_module(_c_fn()), _c_module(_c_fn(MARKED)),
                        _c_module(_c_fn(b"  if (!x) return 0;\n", head)),
                        _c_module(_c_fn(head=head)), ("rework k2", "k2: never null"), "csrc/k.cu")


def test_a_cpp_guard_marked_unlikely_dropped_with_the_lines_under_it_is_said(tmp_path):
    stack = _landed(tmp_path, _c_module(_c_fn()), _c_module(_c_fn(MARKED)), "csrc/k.cu")
    head = b"  int a = 3;\n  int b = a - x[0] + y[0];\n"
    took = stack.commit({"csrc/k.cu": _c_module(_c_fn(head=head))}, "rework k2")
    _said_by(stack, took)


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
    _held_until_dropped(tmp_path, _module(_fn(b"a2")), _module(_fn(b"a2", EQUAL_GUARD)),
                        _module(_fn(b"a2", MEMBER_KEPT[form], REWRITTEN)),
                        _module(_fn(b"a2", head=REWRITTEN)), ("rework a2", "a2: x is never ROW"))


def test_a_guard_of_one_value_dropped_beside_membership_of_others_is_said(tmp_path):
    stack = _landed(tmp_path, _module(_fn(b"a2")), _module(_fn(b"a2", EQUAL_GUARD)))
    other = b"    if x in (COL, DIAG):\n        return 0\n"
    took = stack.commit({"pkg/a.py": _module(_fn(b"a2", other, REWRITTEN))}, "rework a2")
    said = _said_by(stack, took)
    assert "`if x == ROW:`" in said["detail"], said


# A guard inside an if (`if skip:` + `return b` under `if a > 1:`) that upstream carried
# through a name assigned its condition and the enclosing one (`early = a > 1 and skip`, then
# `if early:` + `return b`, the enclosing if made an `elif`): kept, quiet until a commit
# drops the exit on the name; the name tested without the guard's test in it, or assigned and
# tested by no exit, keeps nothing.
WORK = b"c = b * 2", b"d = c + 1", b"e = d + 2", b"f = e + 3", b"b = f - 1"
REWORKED = b"c = b * 4", b"d = c - 1", b"e = d - 2", b"f = e - 3", b"b = f - 1"


def _split(inner: bytes = b"", head: bytes = b"    a = 2\n    b = a + x\n",
           opened: bytes = b"    if a > 1:\n", work: tuple[bytes, ...] = WORK) -> bytes:
    return (b"def a2(x, skip):\n" + head + opened + inner +
            b"".join(b"        %s\n" % line for line in work) +
            b"".join(b"    v%d = b + %d\n" % (k, k) for k in range(8)) + b"    return v7\n")


SKIP = b"        if skip:\n            return b\n"
CARRIED_HEAD = b"    a = 3\n    b = a - x\n"


def test_a_guard_carried_through_a_name_is_quiet_until_a_commit_drops_its_exit(tmp_path):
    carried = CARRIED_HEAD + b"    early = a > 1 and skip\n    if early:\n        return b\n"
    assigned = CARRIED_HEAD + b"    early = a > 1 and skip\n    log(early)\n"
    said = _held_until_dropped(
        tmp_path, _module(_split()), _module(_split(SKIP)),
        _module(_split(head=carried, opened=b"    elif a > 1:\n", work=REWORKED)),
        _module(_split(head=assigned, opened=b"    if a >= 2:\n", work=REWORKED)),
        ("rework a2", "a2: reduce always"))
    assert "`if skip:`" in said["detail"], said


CARRIED_OTHER = {
    "the name tested without the guard's test":
        b"    early = a > 1 and not skip\n    if early:\n        return b\n",
    "the name assigned, no exit on it": b"    early = a > 1 and skip\n    b = pick(b, early)\n",
    "the name assigned twice":
        b"    early = a > 1 and skip\n    early = a > 2\n    if early:\n        return b\n",
}


@pytest.mark.parametrize("other", list(CARRIED_OTHER))
def test_a_guard_dropped_beside_a_name_not_carrying_it_is_said(tmp_path, other):
    stack = _landed(tmp_path, _module(_split()), _module(_split(SKIP)))
    took = stack.commit({"pkg/a.py": _module(_split(head=CARRIED_HEAD + CARRIED_OTHER[other],
                                                    opened=b"    elif a > 1:\n",
                                                    work=REWORKED))}, "rework a2")
    said = _said_by(stack, took)
    assert "`if skip:`" in said["detail"], said


def test_a_guard_dropped_inside_an_if_ending_in_a_return_is_said(tmp_path):
    """The if the guard sits in ends in a `return` of its own: it leaves where its condition
    holds, but does the work first; it keeps nothing of the guard."""
    def ending(inner: bytes = b"", head: bytes = b"    a = 2\n    b = a + x\n",
               work: tuple[bytes, ...] = WORK) -> bytes:
        return _split(inner, head, b"    assert skip in (True, False)\n    if a > 1:\n",
                      work[:-1] + (b"return f - 1",))
    stack = _landed(tmp_path, _module(ending()), _module(ending(SKIP)))
    took = stack.commit({"pkg/a.py": _module(ending(head=CARRIED_HEAD, work=REWORKED))},
                        "rework a2")
    said = _said_by(stack, took)
    assert "`if skip:`" in said["detail"], said


def test_a_guard_carried_through_a_name_at_the_top_is_quiet_until_a_commit_drops_it(tmp_path):
    carried = b"    missing = x is None\n    if missing:\n        return 0\n"
    logged = b"    missing = x is None\n    log(missing)\n"
    said = _held_until_dropped(tmp_path, _module(_fn(b"a2")), _module(_fn(b"a2", GUARD)),
                               _module(_fn(b"a2", carried, REWRITTEN)),
                               _module(_fn(b"a2", logged, REWRITTEN)),
                               ("rework a2", "a2: x is never None"))
    assert "`if x is None:`" in said["detail"], said


def test_a_guard_dropped_beside_a_name_narrowing_it_is_said(tmp_path):
    stack = _landed(tmp_path, _module(_fn(b"a2")), _module(_fn(b"a2", GUARD)))
    narrowed = b"    missing = x is None and STRICT\n    if missing:\n        return 0\n"
    took = stack.commit({"pkg/a.py": _module(_fn(b"a2", narrowed, REWRITTEN))}, "rework a2")
    said = _said_by(stack, took)
    assert "`if x is None:`" in said["detail"], said


def test_a_guard_testing_a_name_assigned_once_is_quiet_until_a_commit_drops_it(tmp_path):
    """The guard tests the name itself (`if done:` after `done = probe(x)`): its own if,
    written again, keeps it, read through the name or not."""
    assign = b"    done = probe(x)\n"
    said = _held_until_dropped(
        tmp_path, _module(_fn(b"a2", assign)),
        _module(_fn(b"a2", assign + b"    if done:\n        return 0\n")),
        _module(_fn(b"a2", assign + b"    if done: return 0\n", REWRITTEN)),
        _module(_fn(b"a2", assign + b"    assert done in (1, 2)\n", REWRITTEN)),
        ("rework a2", "a2: never done early"))
    assert "`if done:`" in said["detail"], said


# An `if` whose body the function's work goes on past (`if x is not None: x = x.float()`,
# then the work) skips nothing of that work where its condition fails: it keeps no guard of
# the converse, nor does a name carrying its condition, nor an exit reached only under
# another if or past another branch. Only an `if` around the rest of the function's work
# (nothing but an exit after it) leaves where its condition fails.
PREP = b"    if x is not None:\n        x = x.float()\n"
GOES_ON_PAST = {
    "the converse around one step": (GUARD, PREP),
    "the converse around a few steps": (GUARD, PREP + b"        x = x.contiguous()\n"
                                        b"        x = x * 2\n        x = x + 1\n"),
    "a name carrying the converse": (GUARD, b"    ok = x is not None\n    if ok:\n"
                                     b"        x = x.float()\n"),
    "a default for the converse guard": (b"    if x is not None:\n        return x\n",
                                         b"    if x is None:\n        x = DEFAULT\n"),
    "the guard only under another if": (GUARD, b"    if STRICT:\n        if x is None:\n"
                                        b"            return 0\n"),
    "the guard only past another branch": (GUARD, b"    if FAST:\n        x = x.half()\n"
                                           b"    elif x is None:\n        return 0\n"),
}


@pytest.mark.parametrize("shape", list(GOES_ON_PAST))
def test_a_guard_dropped_beside_a_branch_the_work_goes_on_past_is_said(tmp_path, shape):
    guard, other = GOES_ON_PAST[shape]
    stack = _landed(tmp_path, _module(_fn(b"a2")), _module(_fn(b"a2", guard)))
    took = stack.commit({"pkg/a.py": _module(_fn(b"a2", other, REWRITTEN))}, "rework a2")
    said = _said_by(stack, took)
    assert "`%s`" % guard.splitlines()[0].strip().decode() in said["detail"], said


def _around(opened: bytes, after: bytes) -> bytes:
    """a2 with its rewritten work inside `opened` and `after` past it, the function's end."""
    body = b"".join(b"    " + line for line in (REWRITTEN + TAIL).splitlines(keepends=True))
    return b"def a2(x):\n" + opened + body + after


AROUND_THE_WORK = {
    "an else returning": (b"    if x is not None:\n", b"    else:\n        return 0\n"),
    "a name carrying the converse": (b"    ok = x is not None\n    if ok:\n",
                                     b"    return 0\n"),
    "under a with": (b"    with torch.no_grad():\n        if x is None:\n"
                     b"            return 0\n", b""),
}


@pytest.mark.parametrize("shape", list(AROUND_THE_WORK))
def test_a_guard_kept_around_the_rest_of_the_work_is_quiet_until_a_commit_drops_it(
        tmp_path, shape):
    _held_until_dropped(tmp_path, _module(_fn(b"a2")), _module(_fn(b"a2", GUARD)),
                        _module(_around(*AROUND_THE_WORK[shape])),
                        _module(_fn(b"a2", head=REWRITTEN)), ("rework a2", "a2: x is never None"))


def test_a_cpp_guard_dropped_beside_an_if_the_work_goes_on_past_is_said(tmp_path):
    stack = _landed(tmp_path, _c_module(_c_fn()), _c_module(_c_fn(b"  if (!x) return 0;\n")),
                    "csrc/k.cu")
    head = b"  if (x) {\n    x = x + 1;\n  }\n  int a = 3;\n  int b = a - x[0] + y[0];\n"
    took = stack.commit({"csrc/k.cu": _c_module(_c_fn(head=head))}, "rework k2")
    said = _said_by(stack, took)
    assert "`if (!x) return 0;`" in said["detail"], said


def test_a_cpp_guard_kept_around_the_rest_of_the_work_is_quiet_until_a_commit_drops_it(
        tmp_path):
    work = b"  int a = 3;\n  int b = a - x[0] + y[0];\n" + \
        b"".join(b"  int v%d = b + %d;\n" % (k, k) for k in range(8)) + b"  return v7;\n"
    around = b"int k2(const int *x, const int *y) {\n  if (x) {\n" + \
        b"".join(b"  " + line for line in work.splitlines(keepends=True)) + \
        b"  }\n  return 0;\n}\n"
    head = b"  int a = 3;\n  int b = a - x[0] + y[0];\n"
    _held_until_dropped(tmp_path, _c_module(_c_fn()), _c_module(_c_fn(b"  if (!x) return 0;\n")),
                        _c_module(around), _c_module(_c_fn(head=head)),
                        ("rework k2", "k2: never null"), "csrc/k.cu")


# A guard testing a string (`if act == 'gelu':` + `return 0`, AITER's activation, arch and
# dtype names): a test of another string keeps nothing; the same string in other quotes, or
# in a literal tuple, keeps it.
STRING_GUARD = b"    if act == 'gelu':\n        return 0\n"
STRING_OTHER = {
    "another string": b"    if act == 'silu':\n        return 0\n",
    "membership of other strings": b"    if act in ('silu', 'swiglu'):\n        return 0\n",
}
STRING_KEPT = {
    "in other quotes": b'    if act == "gelu":\n        return 0\n',
    "widened to a tuple holding it": b'    if act in ("silu", "gelu"):\n        return 0\n',
}


@pytest.mark.parametrize("other", list(STRING_OTHER))
def test_a_string_guard_dropped_beside_a_test_of_other_strings_is_said(tmp_path, other):
    base = _fn(b"a2", args=b"x, act")
    stack = _landed(tmp_path, _module(base), _module(_fn(b"a2", STRING_GUARD, args=b"x, act")))
    took = stack.commit({"pkg/a.py": _module(_fn(b"a2", STRING_OTHER[other], REWRITTEN,
                                                 args=b"x, act"))}, "rework a2")
    said = _said_by(stack, took)
    assert "`if act == 'gelu':`" in said["detail"], said


@pytest.mark.parametrize("form", list(STRING_KEPT))
def test_a_string_guard_kept_in_its_own_test_is_quiet_until_a_commit_drops_it(tmp_path, form):
    _held_until_dropped(tmp_path, _module(_fn(b"a2", args=b"x, act")),
                        _module(_fn(b"a2", STRING_GUARD, args=b"x, act")),
                        _module(_fn(b"a2", STRING_KEPT[form], REWRITTEN, args=b"x, act")),
                        _module(_fn(b"a2", head=REWRITTEN, args=b"x, act")),
                        ("rework a2", "a2: act is never gelu"))


# A guard on zero or empty (`if n == 0:`, `if len(x) == 0:`) kept by upstream as `if not n:`
# (it leaves there too) is quiet; `if not n:` dropped beside `if n == 0:` (None is not 0) is
# said.
ZERO_KEPT = {
    "n == 0 as not n": (b"    if n == 0:\n        return 0\n",
                        b"    if not n:\n        return 0\n"),
    "len(n) == 0 as not n": (b"    if len(n) == 0:\n        return 0\n",
                             b"    if not n:\n        return 0\n"),
}


@pytest.mark.parametrize("form", list(ZERO_KEPT))
def test_a_guard_on_zero_kept_as_any_false_value_is_quiet_until_a_commit_drops_it(
        tmp_path, form):
    guard, kept = ZERO_KEPT[form]
    _held_until_dropped(tmp_path, _module(_fn(b"a2", args=b"x, n")),
                        _module(_fn(b"a2", guard, args=b"x, n")),
                        _module(_fn(b"a2", kept, REWRITTEN, args=b"x, n")),
                        _module(_fn(b"a2", head=REWRITTEN, args=b"x, n")),
                        ("rework a2", "a2: n is never 0"))


def test_a_guard_on_any_false_value_dropped_beside_a_check_of_zero_is_said(tmp_path):
    falsy = b"    if not n:\n        return 0\n"
    stack = _landed(tmp_path, _module(_fn(b"a2", args=b"x, n")),
                    _module(_fn(b"a2", falsy, args=b"x, n")))
    took = stack.commit({"pkg/a.py": _module(_fn(b"a2", b"    if n == 0:\n        return 0\n",
                                                 REWRITTEN, args=b"x, n"))}, "rework a2")
    said = _said_by(stack, took)
    assert "`if not n:`" in said["detail"], said


def _strict(guard: bytes = b"", head: bytes = HEAD) -> bytes:
    """a2 with its work under `if STRICT:`, the guard five lines below that if: beyond the
    fix's hunk's context."""
    prep = b"".join(b"        y = y + %d\n" % k for k in range(5))
    deeper = lambda code: b"".join(b"    " + line for line in code.splitlines(keepends=True))
    return b"def a2(x):\n    y = 0\n    if STRICT:\n" + prep + deeper(guard) + deeper(head) + \
        TAIL


def test_a_guard_under_an_if_beyond_its_context_kept_there_is_quiet_until_a_commit_drops_it(
        tmp_path):
    _held_until_dropped(tmp_path, _module(_strict()), _module(_strict(GUARD)),
                        _module(_strict(GUARD, REWRITTEN)),
                        _module(_strict(head=REWRITTEN.replace(b"4", b"8"))),
                        ("rework a2", "a2: x is never None"))


# A guard kept only inside a loop (`for y in ys:` + `if x is None:` + `return 0`) leaves only
# where the loop's body runs: where ys is empty nothing leaves, so a guard at the function's
# top dropped beside it is said. A guard the fix put in a loop is kept by its copy in the same
# loop (the loop's name for its item aside) or above it, not by one in another loop.
IN_A_LOOP = {
    "a for loop": b"    for y in ys:\n        if x is None:\n            return 0\n",
    "a while loop": b"    while k < n:\n        if x is None:\n            return 0\n"
                    b"        k += 1\n",
    "a range of a name": b"    for _ in range(n):\n        if x is None:\n            return 0\n",
    "an empty range": b"    for _ in range(3, 1):\n        if x is None:\n            return 0\n",
    "an empty tuple": b"    for k in ():\n        if x is None:\n            return 0\n",
    "a list of what ks holds": b"    for k in [*ks]:\n        if x is None:\n"
                               b"            return 0\n",
    "a break out of a loop that always runs": b"    while True:\n        if x is None:\n"
                                              b"            break\n        break\n",
    "a continue in a literal range": b"    for _ in range(3):\n        if x is None:\n"
                                     b"            continue\n        log(x)\n",
    "a copy past a break of a literal range": b"    for _ in range(3):\n        if FAST:\n"
                                              b"            break\n        if x is None:\n"
                                              b"            return 0\n",
    "a copy past a break of while True": b"    while True:\n        if FAST:\n"
                                         b"            break\n        if x is None:\n"
                                         b"            return 0\n        break\n",
}


@pytest.mark.parametrize("shape", list(IN_A_LOOP))
def test_a_guard_dropped_beside_its_copy_in_a_loop_is_said(tmp_path, shape):
    stack = _landed(tmp_path, _module(_fn(b"a2")), _module(_fn(b"a2", GUARD)))
    took = stack.commit({"pkg/a.py": _module(_fn(b"a2", IN_A_LOOP[shape], REWRITTEN))},
                        "rework a2")
    said = _said_by(stack, took)
    assert "`if x is None:`" in said["detail"], said


# A loop that always runs its body at least once (`while True:`, a `for` over a literal range
# or a literal tuple, list or string with an item) holds its guard wherever the function runs.
ALWAYS_RUNS = {
    "while True": b"    while True:\n        if x is None:\n            return 0\n        break\n",
    "a literal range": b"    for _ in range(3):\n        if x is None:\n            return 0\n",
    "a range of literal bounds": b"    for k in range(1, 4):\n        if x is None:\n"
                                 b"            return 0\n",
    "a literal tuple": b"    for k in (1, 2):\n        if x is None:\n            return 0\n",
    "a literal list": b"    for k in ['a']:\n        if x is None:\n            return 0\n",
    "a literal range, a break past the copy": b"    for _ in range(3):\n        if x is None:\n"
                                              b"            return 0\n        if FAST:\n"
                                              b"            break\n",
}


@pytest.mark.parametrize("shape", list(ALWAYS_RUNS))
def test_a_guard_kept_in_a_loop_that_always_runs_is_quiet_until_a_commit_drops_it(tmp_path,
                                                                                   shape):
    _held_until_dropped(tmp_path, _module(_fn(b"a2")), _module(_fn(b"a2", GUARD)),
                        _module(_fn(b"a2", ALWAYS_RUNS[shape], REWRITTEN)),
                        _module(_fn(b"a2", head=REWRITTEN)), ("rework a2", "a2: x is never None"))


def _looped(guard: bytes = b"", head: bytes = HEAD, opened: bytes = b"    for y in ys:\n",
            above: bytes = b"") -> bytes:
    """a2 with its work in a loop over ys, `guard` the loop's first statement."""
    deeper = lambda code: b"".join(b"    " + line for line in code.splitlines(keepends=True))
    return b"def a2(x, ys):\n    c = 0\n" + above + opened + deeper(guard) + deeper(head) + TAIL


LOOP_KEPT = {
    "in the same loop": (GUARD, b"", b"    for y in ys:\n"),
    "in the same loop, its item named otherwise": (GUARD, b"", b"    for z in ys:\n"),
    "above the loop": (b"", GUARD, b"    for y in ys:\n"),
}


@pytest.mark.parametrize("form", list(LOOP_KEPT))
def test_a_guard_in_a_loop_kept_there_or_above_is_quiet_until_a_commit_drops_it(tmp_path,
                                                                                  form):
    guard, above, opened = LOOP_KEPT[form]
    _held_until_dropped(tmp_path, _module(_looped()), _module(_looped(GUARD)),
                        _module(_looped(guard, REWRITTEN, opened, above)),
                        _module(_looped(head=REWRITTEN.replace(b"4", b"8"))),
                        ("rework a2", "a2: x is never None"))


def test_a_guard_in_a_loop_dropped_beside_its_copy_in_another_loop_is_said(tmp_path):
    stack = _landed(tmp_path, _module(_looped()), _module(_looped(GUARD)))
    other = b"    for w in ws:\n        if x is None: return 0\n"
    took = stack.commit({"pkg/a.py": _module(_looped(head=REWRITTEN, above=other))},
                        "rework a2")
    said = _said_by(stack, took)
    assert "`if x is None:`" in said["detail"], said


# A `continue` guard skips the rest of its loop's body only: an if upstream put around the
# whole loop narrows nothing of it, and its copy in the same loop keeps it; its copy in
# another loop does not.
SKIP_ITEM = b"if y is None:\n    continue\n"
ITEM_WORK = b"a = 2\nb = a + y\nc = b * 2\n"
ITEM_REWORKED = b"a = 3\nb = a - y\nc = b * 4\n"


def _items(guard: bytes = b"", work: bytes = ITEM_WORK, wrapped: bool = False,
           above: bytes = b"") -> bytes:
    """a2 summing its work over ys, `guard` the loop's first statement, the loop under `if
    ys:` where `wrapped`."""
    pad = b"    " * (2 + wrapped)
    body = b"".join(pad + line for line in (guard + work + b"t = t + c\n").splitlines(True))
    loop = b"    if ys:\n        for y in ys:\n" if wrapped else b"    for y in ys:\n"
    return b"def a2(x, ys):\n    t = 0\n" + above + loop + body + \
        b"".join(b"    v%d = t + %d\n" % (k, k) for k in range(8)) + b"    return v7\n"


def test_a_skip_in_a_loop_an_if_now_wraps_is_quiet_until_a_commit_drops_it(tmp_path):
    _held_until_dropped(tmp_path, _module(_items()), _module(_items(SKIP_ITEM)),
                        _module(_items(SKIP_ITEM, ITEM_REWORKED, wrapped=True)),
                        _module(_items(work=ITEM_REWORKED.replace(b"4", b"8"), wrapped=True)),
                        ("rework a2", "a2: ys holds no None"))


def test_a_skip_in_a_loop_dropped_beside_its_copy_in_another_loop_is_said(tmp_path):
    stack = _landed(tmp_path, _module(_items()), _module(_items(SKIP_ITEM)))
    other = b"    for y in zs:\n        if y is None: continue\n        t = t - 1\n"
    took = stack.commit({"pkg/a.py": _module(_items(work=ITEM_REWORKED, above=other))},
                        "rework a2")
    said = _said_by(stack, took)
    assert "`if y is None:`" in said["detail"], said


def _two_loops(guard: bytes = b"", work: bytes = ITEM_WORK, other: bytes | None = None,
               step: bytes = b"1") -> bytes:
    """a2 with two loops doing the same work (`other` in the second, where given), `guard`
    in each below three lines of prep (its first line adding `step` in the second loop): the
    hunk's context does not show the loop it sits in."""
    def body(guard: bytes, work: bytes, step: bytes) -> bytes:
        prep = b"p = y + %s\nq = p * 2\nr = q - 1\n" % step
        return b"".join(b"        " + line for line in
                        (prep + guard + work + b"t = t + c\n").splitlines(True))
    tail = b"".join(b"    u%d = t + %d\n" % (k, k) for k in range(8))
    return b"def a2(x, ys, zs):\n    t = 0\n    for y in ys:\n" + body(guard, work, b"1") + \
        tail + b"    for y in zs:\n" + body(guard, work if other is None else other, step) + \
        b"    return t\n"


SKIP_R = b"if r is None:\n    continue\n"


def test_a_skip_in_two_loops_kept_in_both_is_quiet_until_a_commit_drops_it(tmp_path):
    _held_until_dropped(tmp_path, _module(_two_loops()), _module(_two_loops(SKIP_R)),
                        _module(_two_loops(SKIP_R, ITEM_REWORKED)),
                        _module(_two_loops(work=ITEM_REWORKED.replace(b"4", b"8"))),
                        ("rework a2", "a2: no None item"))


def test_a_skip_in_two_loops_dropped_from_one_is_said(tmp_path):
    """The two loops' prep tells the two copies of the skip apart: each read in its own."""
    stack = _landed(tmp_path, _module(_two_loops(step=b"2")),
                    _module(_two_loops(SKIP_R, step=b"2")))
    dropped = _two_loops(work=ITEM_REWORKED, other=ITEM_WORK, step=b"2").replace(
        b"        r = q - 1\n        a = 2",
        b"        r = q - 1\n        if r is None: continue\n        a = 2")
    took = stack.commit({"pkg/a.py": _module(dropped)}, "rework a2")
    said = _said_by(stack, took)
    assert "`if r is None:`" in said["detail"], said
