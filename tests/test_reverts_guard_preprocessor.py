"""A kept C guard (`if (!x) return 0;`) that upstream dropped beside a copy under a
preprocessor conditional (`#ifdef CHECKS` / `if (!x) return 0;` / `#endif`): the preprocessor
lines were not read, so the copy counted as the guard kept in every build, quiet (exit 0),
while a build without CHECKS has no guard, in no overlay and not upstream. A copy under a
conditional leaves only in the builds that compile it: the guard is said taken out ("removed",
exit 1). A copy outside any conditional keeps it (a function with `#if` lines elsewhere too),
as do a copy under `#if 1` or in the `#else` of an `#if 0` (built always) and copies under
each branch of an `#ifdef` / `#else`; a guard the fix put under a conditional is kept by its copy under the same one, or
by one outside any. Real git history, through the CLI."""
from __future__ import annotations

import pytest

from test_reverts_guard_forms import _c_fn, _c_module
from test_reverts_guard_rewritten import _held_until_dropped, _landed, _said_by

C_GUARD = b"  if (!x) return 0;\n"
C_HEAD = b"  int a = 3;\n  int b = a - x[0];\n"
# A copy of the guard compiled in some builds only.
NOT_EVERY_BUILD = {
    "under an ifdef": b"#ifdef CHECKS\n" + C_GUARD + b"#endif\n",
    "under an ifndef": b"#ifndef NDEBUG\n" + C_GUARD + b"#endif\n",
    "under an if of an expression": b"#if CHECK_LEVEL > 1\n" + C_GUARD + b"#endif\n",
    "under an if 0": b"#if 0\n" + C_GUARD + b"#endif\n",
    "in an else only": b"#ifdef FAST\n  log(1);\n#else\n" + C_GUARD + b"#endif\n",
    "in an elif only": b"#if defined(FAST)\n  log(1);\n#elif defined(CHECKS)\n" + C_GUARD +
                       b"#else\n  log(2);\n#endif\n",
    "in the else of an if 1": b"#if 1\n  log(1);\n#else\n" + C_GUARD + b"#endif\n",
    "nested in another ifdef": b"#ifdef A\n#if 1\n" + C_GUARD + b"#endif\n#endif\n",
}
# A copy compiled in every build, beside conditionals or in them.
EVERY_BUILD = {
    "beside an ifdef of other work": C_GUARD + b"#ifdef CHECKS\n  log(1);\n#endif\n",
    "under an if 1": b"#if 1\n" + C_GUARD + b"#endif\n",
    "past a closed ifdef": b"#ifdef CHECKS\n  log(1);\n#else\n  log(2);\n#endif\n" + C_GUARD,
    "in both branches of an ifdef": b"#ifdef FAST\n" + C_GUARD + b"#else\n" + C_GUARD +
                                    b"#endif\n",
    "in each branch of an ifdef, elif, else": b"#ifdef A\n" + C_GUARD + b"#elif defined(B)\n" +
                                              C_GUARD + b"#else\n" + C_GUARD + b"#endif\n",
    "in the else of an if 0": b"#if 0\n  log(1);\n#else\n" + C_GUARD + b"#endif\n",
}


@pytest.mark.parametrize("shape", list(NOT_EVERY_BUILD))
def test_a_cpp_guard_dropped_beside_its_copy_built_in_some_builds_is_said(tmp_path, shape):
    stack = _landed(tmp_path, _c_module(_c_fn()), _c_module(_c_fn(C_GUARD)), "csrc/k.cu")
    took = stack.commit({"csrc/k.cu": _c_module(_c_fn(head=NOT_EVERY_BUILD[shape] + C_HEAD))},
                        "rework k2")
    said = _said_by(stack, took)
    assert "`if (!x) return 0;`" in said["detail"], said


@pytest.mark.parametrize("shape", list(EVERY_BUILD))
def test_a_cpp_guard_kept_by_its_copy_built_always_is_quiet_until_dropped(tmp_path, shape):
    kept = EVERY_BUILD[shape]
    _held_until_dropped(tmp_path, _c_module(_c_fn()), _c_module(_c_fn(C_GUARD)),
                        _c_module(_c_fn(head=kept + C_HEAD)),
                        _c_module(_c_fn(head=kept.replace(C_GUARD, b"  log(0);\n") + C_HEAD)),
                        ("rework k2", "k2: never null"), "csrc/k.cu")


# A guard the fix put under `#ifdef CHECKS` (the conditional in its context), and upstream's
# copy of it: under the same conditional, or outside any (built always, so in CHECKS' too).
FIX_UNDER = b"#ifdef CHECKS\n%s  log(1);\n#endif\n"
UPSTREAM_COPY = {
    "under the same ifdef": FIX_UNDER % b"  if (x == nullptr) return 0;\n",
    "outside any conditional": b"  if (x == nullptr) return 0;\n#ifdef CHECKS\n  log(3);\n"
                               b"#endif\n",
}


@pytest.mark.parametrize("shape", list(UPSTREAM_COPY))
def test_a_cpp_guard_the_fix_put_under_an_ifdef_is_kept_by_its_copy_until_dropped(tmp_path,
                                                                                   shape):
    head = b"  int a = 2;\n  int b = a + x[0];\n"
    _held_until_dropped(tmp_path, _c_module(_c_fn(head=FIX_UNDER % b"" + head)),
                        _c_module(_c_fn(head=FIX_UNDER % C_GUARD + head)),
                        _c_module(_c_fn(head=UPSTREAM_COPY[shape] + C_HEAD)),
                        _c_module(_c_fn(head=FIX_UNDER % b"" + C_HEAD + b"  b++;\n")),
                        ("rework k2", "k2: never null"), "csrc/k.cu")
