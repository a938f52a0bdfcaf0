"""A kept C++ guard at a function's top (`if (!x) return 0;`) that upstream dropped while
keeping a copy of it inside a lambda's body (`auto pick = [&]() { if (!x) return 0; ... };`,
or a dispatch macro's `[&] { ... }`): the copy's `return` leaves the lambda only, the function
goes on to its work where x is null. Read as the guard kept, it was quiet (exit 0), the guard
in no overlay and not upstream; it is said taken out by that commit ("removed", exit 1). The
same copy in the function's own body keeps it (quiet, until a commit drops it: then said), and
so does a guard the fix itself put in a lambda, kept there by its copy in that lambda. Real git
history, through the CLI."""
from __future__ import annotations

import pytest

from test_reverts_guard_forms import _c_fn, _c_module
from test_reverts_guard_rewritten import _held_until_dropped, _landed, _said_by

GUARD = b"  if (!x) return 0;\n"
HEAD = b"  int a = 3;\n  int b = a - x[0] + y[0];\n"
IN_A_LAMBDA = {
    "the if form": b"  auto pick = [&]() {\n    if (!x) return 0;\n    return x[0];\n  };\n",
    "the else form": b"  auto pick = [&]() {\n    if (x) {\n      return x[0];\n"
                     b"    } else {\n      return 0;\n    }\n  };\n",
    "a dispatch macro's lambda": b"  DISPATCH_BY_TYPE(t, [&] {\n    if (!x) return;\n"
                                 b"    run(x);\n  });\n",
}
# The same copies in the function's own body: each leaves the function where x is null.
IN_THE_BODY = {
    "the if form": b"  if (!x) return 0;\n  auto pick = [&]() {\n    return x[0];\n  };\n",
    "the else form": b"  if (x) {\n    log(x[0]);\n  } else {\n    return 0;\n  }\n",
    "a dispatch macro's lambda": b"  if (!x) return 0;\n  DISPATCH_BY_TYPE(t, [&] {\n"
                                 b"    run(x);\n  });\n",
}


@pytest.mark.parametrize("shape", list(IN_A_LAMBDA))
def test_a_cpp_guard_dropped_beside_its_copy_in_a_lambda_is_said(tmp_path, shape):
    stack = _landed(tmp_path, _c_module(_c_fn()), _c_module(_c_fn(GUARD)), "csrc/k.cu")
    took = stack.commit({"csrc/k.cu": _c_module(_c_fn(IN_A_LAMBDA[shape], HEAD))},
                        "rework k2")
    said = _said_by(stack, took)
    assert "`if (!x) return 0;`" in said["detail"], said


@pytest.mark.parametrize("shape", list(IN_THE_BODY))
def test_a_cpp_guard_kept_by_its_copy_in_the_body_beside_a_lambda_is_quiet_until_dropped(
        tmp_path, shape):
    _held_until_dropped(tmp_path, _c_module(_c_fn()), _c_module(_c_fn(GUARD)),
                        _c_module(_c_fn(IN_THE_BODY[shape], HEAD)),
                        _c_module(_c_fn(IN_A_LAMBDA[shape], HEAD)),
                        ("rework k2", "k2: never null"), "csrc/k.cu")


LAMBDA = b"  auto pick = [&]() {\n%s    return x[0];\n  };\n  int a = 2;\n  int b = a + pick();\n"


def test_a_cpp_guard_the_fix_put_in_a_lambda_is_kept_by_its_copy_there_until_dropped(tmp_path):
    rework = LAMBDA.replace(b"a + pick()", b"a - pick() + y[0]")
    copy = rework % b"    if (x == nullptr) return 0;\n"
    dropped = rework.replace(b"pick", b"first").replace(b"x[0]", b"x[1]") % b""
    _held_until_dropped(tmp_path, _c_module(_c_fn(head=LAMBDA % b"")),
                        _c_module(_c_fn(head=LAMBDA % b"    if (!x) return 0;\n")),
                        _c_module(_c_fn(head=copy)), _c_module(_c_fn(head=dropped)),
                        ("rework k2", "k2: never null"), "csrc/k.cu")
