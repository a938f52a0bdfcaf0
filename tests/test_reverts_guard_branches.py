"""A kept guard (`if x is None:` + `return 0`; C's `if (!x) return 0;`) that upstream wrote
again as a branch of an if/else while rewriting the lines under it: the exit in the `else:` of
its converse (`if x is not None: x = x.float()` + `else: return 0`), or a guard of two names
split into an `if` and an `elif` each ending in an exit. The function leaves wherever the
guard did: quiet, until a commit drops that exit (then said). Read as dropped, the guard
upstream kept was said taken out (exit 1, advising `bring-back`, which would put it back
beside upstream's own). An `else:` of another condition, of a wider one, or without an exit,
and an `elif` past a branch the work goes on past, keep nothing: the guard dropped beside
them is said. Real git history, through the CLI."""
from __future__ import annotations

import pytest

from test_reverts_guard_forms import HEAD, TWO, _c_fn, _c_module
from test_reverts_guard_rewritten import (GUARD, REWRITTEN, TAIL, _fn, _held_until_dropped,
                                          _landed, _module, _said_by)

PREP = b"    if x is not None:\n        x = x.float()\n"
ELSE_KEPT = {
    "the else of its converse": PREP + b"    else:\n        return 0\n",
    "the else on one line": PREP + b"    else: return 0\n",
    "the else past an elif": b"    if x is not None and FAST:\n        x = x.half()\n"
                             b"    elif x is not None:\n        x = x.float()\n"
                             b"    else:\n        log('no x')\n        return 0\n",
    "the else past a bare return": b"    if FAST:\n        return 1\n"
                                   b"    elif x is not None:\n        x = x.float()\n"
                                   b"    else:\n        return 0\n",
    "the else of a converse that returns": b"    if x is not None:\n        x = x.float()\n"
                                           b"        return x\n"
                                           b"    else:\n        log('no x')\n        return 0\n",
}
ELSE_OTHER = {
    "the else of another condition": b"    if FAST:\n        x = x.half()\n"
                                     b"    else:\n        return 0\n",
    "the else of a wider converse": b"    if x is not None or FAST:\n        x = x.float()\n"
                                    b"    else:\n        return 0\n",
    "the else without an exit": PREP + b"    else:\n        x = DEFAULT\n",
    "an else leaving a loop that always runs": b"    while True:\n        if x is not None:\n"
                                               b"            x = x.float()\n"
                                               b"        else:\n            break\n"
                                               b"        break\n",
    "an elif past a branch working then returning": b"    if FAST:\n        v = fast(x)\n"
                                                    b"        return v\n"
                                                    b"    elif x is None:\n        return 0\n",
}


@pytest.mark.parametrize("form", list(ELSE_KEPT))
def test_a_guard_kept_as_the_else_of_its_converse_is_quiet_until_a_commit_drops_it(
        tmp_path, form):
    said = _held_until_dropped(tmp_path, _module(_fn(b"a2")), _module(_fn(b"a2", GUARD)),
                               _module(_fn(b"a2", ELSE_KEPT[form], REWRITTEN)),
                               _module(_fn(b"a2", PREP, REWRITTEN)),
                               ("rework a2", "a2: x is never None"))
    assert "`if x is None:`" in said["detail"], said


@pytest.mark.parametrize("other", list(ELSE_OTHER))
def test_a_guard_dropped_beside_an_else_not_holding_it_is_said(tmp_path, other):
    stack = _landed(tmp_path, _module(_fn(b"a2")), _module(_fn(b"a2", GUARD)))
    took = stack.commit({"pkg/a.py": _module(_fn(b"a2", ELSE_OTHER[other], REWRITTEN))},
                        "rework a2")
    said = _said_by(stack, took)
    assert "`if x is None:`" in said["detail"], said


C_GUARD = b"  if (!x) return 0;\n"
C_HEAD = b"  int a = 3;\n  int b = a - x[0] + y[0];\n"
C_PREP = b"  if (x) {\n    log(1);\n  }"
C_ELSE_KEPT = {
    "a braced else": C_PREP + b" else {\n    return 0;\n  }\n",
    "an else of one statement": b"  if (x != nullptr) {\n    log(1);\n  } else return 0;\n",
}
C_ELSE_OTHER = {
    "the else of another condition": b"  if (fast) {\n    log(1);\n  } else {\n"
                                     b"    return 0;\n  }\n",
    "the else of a wider converse": b"  if (x || fast) {\n    log(1);\n  } else {\n"
                                    b"    return 0;\n  }\n",
    "the else without an exit": C_PREP + b" else {\n    log(0);\n  }\n",
    "an else going on with a loop": b"  for (int i = 0; i < 3; ++i) {\n    if (x) {\n"
                                    b"      log(i);\n    } else {\n      continue;\n    }\n  }\n",
    "an else inside another if": b"  if (strict) {\n    if (x) {\n      log(1);\n"
                                 b"    } else {\n      return 0;\n    }\n  }\n",
    "the else of an inner if": b"  if (x)\n    if (fast) log(1);\n    else return 0;\n",
}


@pytest.mark.parametrize("form", list(C_ELSE_KEPT))
def test_a_cpp_guard_kept_as_the_else_of_its_converse_is_quiet_until_a_commit_drops_it(
        tmp_path, form):
    said = _held_until_dropped(tmp_path, _c_module(_c_fn()), _c_module(_c_fn(C_GUARD)),
                               _c_module(_c_fn(C_ELSE_KEPT[form], C_HEAD)),
                               _c_module(_c_fn(C_PREP + b"\n", C_HEAD)),
                               ("rework k2", "k2: never null"), "csrc/k.cu")
    assert "`if (!x) return 0;`" in said["detail"], said


@pytest.mark.parametrize("other", list(C_ELSE_OTHER))
def test_a_cpp_guard_dropped_beside_an_else_not_holding_it_is_said(tmp_path, other):
    stack = _landed(tmp_path, _c_module(_c_fn()), _c_module(_c_fn(C_GUARD)), "csrc/k.cu")
    took = stack.commit({"csrc/k.cu": _c_module(_c_fn(C_ELSE_OTHER[other], C_HEAD))},
                        "rework k2")
    said = _said_by(stack, took)
    assert "`if (!x) return 0;`" in said["detail"], said


# A guard of two names (`if x is None or y is None:` + `return 0`) split by upstream into an
# `if` and an `elif`, each ending in an exit: where the `if` holds the function has left, so
# the `elif` leaves wherever its own condition holds, as a second `if` would.
ELIF_KEPT = {
    "if and elif returning": b"    if x is None:\n        return 0\n"
                             b"    elif y is None:\n        return 0\n",
    "the elif raising": b"    if y is None:\n        return 0\n"
                        b"    elif x is None:\n        raise ValueError('x')\n",
}
ELIF_OTHER = {
    "the if without an exit": b"    if x is None:\n        x = DEFAULT\n"
                              b"    elif y is None:\n        return 0\n",
    "the elif without an exit": b"    if x is None:\n        return 0\n"
                                b"    elif y is None:\n        y = DEFAULT\n",
}


@pytest.mark.parametrize("form", list(ELIF_KEPT))
def test_a_guard_of_two_names_kept_as_if_and_elif_is_quiet_until_a_commit_drops_it(
        tmp_path, form):
    only = ELIF_KEPT[form].split(b"    elif")[0]
    said = _held_until_dropped(tmp_path, _module(_fn(b"a2", args=b"x, y")),
                               _module(_fn(b"a2", TWO, args=b"x, y")),
                               _module(_fn(b"a2", ELIF_KEPT[form], HEAD, args=b"x, y")),
                               _module(_fn(b"a2", only, HEAD, args=b"x, y")),
                               ("rework a2", "a2: one of them is never None"))
    assert "`if x is None or y is None:`" in said["detail"], said


@pytest.mark.parametrize("other", list(ELIF_OTHER))
def test_a_guard_of_two_names_dropped_beside_an_if_and_elif_not_both_leaving_is_said(
        tmp_path, other):
    stack = _landed(tmp_path, _module(_fn(b"a2", args=b"x, y")),
                    _module(_fn(b"a2", TWO, args=b"x, y")))
    took = stack.commit({"pkg/a.py": _module(_fn(b"a2", ELIF_OTHER[other], HEAD,
                                                 args=b"x, y"))}, "rework a2")
    said = _said_by(stack, took)
    assert "`if x is None or y is None:`" in said["detail"], said


# The guard kept as `if x is not None:` around all the function's work and its `return`,
# nothing after it: where x is None the function ends there (an implicit `return None`),
# skipping the work as the guard did. An `if` at the end past the work (`if x is not None:`
# + `return v7`, the work done before it) keeps nothing.
def _ending_in(opened: bytes) -> bytes:
    from test_reverts_guard_forms import _around
    return _around(opened, b"")


def test_a_guard_kept_around_the_work_to_the_functions_end_is_quiet_until_a_commit_drops_it(
        tmp_path):
    said = _held_until_dropped(tmp_path, _module(_fn(b"a2")), _module(_fn(b"a2", GUARD)),
                               _module(_ending_in(b"    if x is not None:\n")),
                               _module(_fn(b"a2", head=REWRITTEN)),
                               ("rework a2", "a2: x is never None"))
    assert "`if x is None:`" in said["detail"], said


END_OTHER = {
    "a return past the work": b"    if x is not None:\n        return v7\n",
    "a step past the work": b"    if x is not None:\n        log(v7)\n",
}


@pytest.mark.parametrize("other", list(END_OTHER))
def test_a_guard_dropped_beside_an_if_at_the_functions_end_past_the_work_is_said(
        tmp_path, other):
    stack = _landed(tmp_path, _module(_fn(b"a2")), _module(_fn(b"a2", GUARD)))
    ending = _fn(b"a2", head=REWRITTEN).replace(b"    return v7\n", END_OTHER[other])
    took = stack.commit({"pkg/a.py": _module(ending)}, "rework a2")
    said = _said_by(stack, took)
    assert "`if x is None:`" in said["detail"], said


# A guard written again as an if/else whose `else:` holds the function's work, the `if`
# setting the value returned past it: where x is None the work is skipped, as the guard
# skipped it. Kept, quiet until a commit drops the if; the same if/else with another
# condition, or a step past it before the return, or an `if` body longer than a guard's,
# keeps nothing.
def _else_work(condition: bytes = b"x is None", short: bytes = b"        v7 = 0\n",
               past: bytes = b"") -> bytes:
    work = b"".join(b"    " + line for line in (REWRITTEN + TAIL).splitlines(keepends=True)
                    if not line.strip().startswith(b"return"))
    return (b"def a2(x):\n    if %s:\n" % condition + short + b"    else:\n" + work + past +
            b"    return v7\n")


def test_a_guard_kept_as_an_if_whose_else_holds_the_work_is_quiet_until_a_commit_drops_it(
        tmp_path):
    _held_until_dropped(tmp_path, _module(_fn(b"a2")), _module(_fn(b"a2", GUARD)),
                        _module(_else_work()), _module(_fn(b"a2", head=REWRITTEN)),
                        ("rework a2", "a2: x is never None"))


ELSE_WORK_OTHER = {
    "another condition": _else_work(b"FAST"),
    "a step past the if/else": _else_work(past=b"    log(v7)\n"),
    "an if body of other work": _else_work(
        short=b"        v7 = fallback()\n        v7 = v7 + 1\n        v7 = v7 * 2\n"
              b"        v7 = v7 - 3\n"),
    "an if body working with x": _else_work(short=b"        v7 = compute(x)\n"),
    "an if body reading x after its value": _else_work(
        short=b"        v7 = 0\n        w = x + 1\n"),
    "a return past it reading x": _else_work().replace(b"    return v7\n", b"    return v7 + x\n"),
}


@pytest.mark.parametrize("other", list(ELSE_WORK_OTHER))
def test_a_guard_dropped_beside_an_if_else_of_the_work_not_holding_it_is_said(tmp_path, other):
    stack = _landed(tmp_path, _module(_fn(b"a2")), _module(_fn(b"a2", GUARD)))
    took = stack.commit({"pkg/a.py": _module(ELSE_WORK_OTHER[other])}, "rework a2")
    said = _said_by(stack, took)
    assert "`if x is None:`" in said["detail"], said
