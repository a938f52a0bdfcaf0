"""A kept guard at a function's top (`if x is None:` + `raise ValueError('x')`; C's `if (!x)
return 0;`) that upstream dropped beside a copy inside a block that leaves less than the
function where x is None: a `try:` whose `except` catches the raise (or a `with
contextlib.suppress(...)`), C's `switch` case, `else if`, `try {` around a `throw`, and (in
tests/test_known_wrong.py) C's loop, `if (strict) {` and `continue`. C's blocks were read
without their braces: the copy read as the guard kept, quiet (exit 0), the guard in no
overlay and not upstream; it is said taken out ("removed", exit 1). The same copy at the
function's level keeps it (quiet, until a commit drops it: then said), and a guard the fix
itself put in such a block is kept by its copy in that block. So does a copy in a block that
leaves wherever the guard did: a raise no `except` of its `try:` catches (the builtin classes
read by their standard hierarchy), or whose handler re-raises or returns, a raise under
`contextlib.suppress` of another class, copies in each branch of an if/else; a class of the
project's own, which may be any, reads as caught. Real git history, through the CLI."""
from __future__ import annotations

import pytest

from test_reverts_guard_forms import _c_fn, _c_module
from test_reverts_guard_rewritten import HEAD, _fn, _held_until_dropped, _landed, _module, _said_by

RAISE = b"    if x is None:\n        raise ValueError('x')\n"
RAISE_IN = b"        if x is None:\n            raise ValueError('x')\n"
C_GUARD = b"  if (!x) return 0;\n"
C_HEAD = b"  int a = 3;\n  int b = a - x[0];\n"
# Each copy in a block leaving less than the function, and the same copy at the function's
# level beside that block (the block then holding other work).
PYTHON_BLOCKS = {
    "a raise its except catches": (
        b"    try:\n" + RAISE_IN + b"    except ValueError:\n        x = DEFAULT\n",
        RAISE + b"    try:\n        x = x.float()\n    except ValueError:\n        x = DEFAULT\n"),
    "a raise under contextlib.suppress": (
        b"    with contextlib.suppress(ValueError):\n" + RAISE_IN + b"        x = x.float()\n",
        RAISE + b"    with contextlib.suppress(ValueError):\n        x = x.float()\n"),
}
C_BLOCKS = {
    "in a loop": (b"  for (int i = 0; i < n; ++i) {\n    if (!x) return 0;\n  }\n",
                  C_GUARD + b"  for (int i = 0; i < n; ++i) {\n    log(i);\n  }\n"),
    "under another if": (b"  if (strict) {\n    if (!x) return 0;\n  }\n",
                         C_GUARD + b"  if (strict) {\n    log(1);\n  }\n"),
    "a C continue": (b"  for (int i = 0; i < n; ++i) {\n    if (!x) continue;\n    log(i);\n  }\n",
                     C_GUARD + b"  for (int i = 0; i < n; ++i) {\n    log(i);\n  }\n"),
    "in a switch's case": (b"  switch (mode) {\n    case 1:\n      if (!x) return 0;\n"
                           b"      break;\n    default:\n      log(2);\n  }\n",
                           C_GUARD + b"  switch (mode) {\n    case 1:\n      log(1);\n"
                           b"      break;\n    default:\n      log(2);\n  }\n"),
    "an else if past a branch going on": (
        b"  if (fast) {\n    log(1);\n  } else if (!x) {\n    return 0;\n  }\n",
        C_GUARD + b"  if (fast) {\n    log(1);\n  }\n"),
    "under an if, a comment opening a later line": (
        b"  if (strict) {\n    if (!x) return 0;\n  }\n"
        b"  for (int i = 0; i < n; ++i) {\n    log(i);\n  /* each */ }\n",
        C_GUARD + b"  if (strict) {\n    log(1);\n  }\n"
        b"  for (int i = 0; i < n; ++i) {\n    log(i);\n  /* each */ }\n"),
    "a check call in a loop": (
        b"  for (int i = 0; i < n; ++i) {\n    TORCH_CHECK(x != nullptr, \"x\");\n  }\n",
        b"  TORCH_CHECK(x != nullptr, \"x\");\n"
        b"  for (int i = 0; i < n; ++i) {\n    log(i);\n  }\n"),
    "a check call in a lambda": (
        b"  auto check = [&]() {\n    TORCH_CHECK(x != nullptr, \"x\");\n  };\n",
        b"  TORCH_CHECK(x != nullptr, \"x\");\n  auto check = [&]() {\n    log(0);\n  };\n"),
    "a throw its catch catches": (
        b"  try {\n    if (!x) throw 1;\n  } catch (...) {\n    log(2);\n  }\n",
        b"  if (!x) throw 1;\n  try {\n    log(1);\n  } catch (...) {\n    log(2);\n  }\n"),
}
NEW_SHAPES = ["a raise under contextlib.suppress", "in a switch's case",
              "an else if past a branch going on",
              "under an if, a comment opening a later line", "a check call in a loop",
              "a check call in a lambda", "a throw its catch catches"]


def _python(tmp_path, copy: bytes):
    stack = _landed(tmp_path, _module(_fn(b"a2")), _module(_fn(b"a2", RAISE)))
    return stack, stack.commit({"pkg/a.py": _module(_fn(b"a2", copy, HEAD.replace(b"2", b"3")))},
                               "rework a2")


def _c(tmp_path, copy: bytes):
    stack = _landed(tmp_path, _c_module(_c_fn()), _c_module(_c_fn(C_GUARD)), "csrc/k.cu")
    return stack, stack.commit({"csrc/k.cu": _c_module(_c_fn(head=copy + C_HEAD))},
                               "rework k2")


def _rework(tmp_path, shape: str):
    """The fix landed, then a commit dropping its guard beside a copy inside the block."""
    if shape in PYTHON_BLOCKS:
        return _python(tmp_path, PYTHON_BLOCKS[shape][0])
    return _c(tmp_path, C_BLOCKS[shape][0])


@pytest.mark.parametrize("shape", NEW_SHAPES)
def test_a_guard_dropped_beside_its_copy_in_a_block_leaving_less_is_said(tmp_path, shape):
    stack, took = _rework(tmp_path, shape)
    _said_by(stack, took)


@pytest.mark.parametrize("shape", list(PYTHON_BLOCKS) + list(C_BLOCKS))
def test_a_guard_kept_by_its_copy_beside_such_a_block_is_quiet_until_dropped(tmp_path, shape):
    if shape in PYTHON_BLOCKS:
        inside, beside = PYTHON_BLOCKS[shape]
        head = HEAD.replace(b"2", b"3")
        dropped = inside.replace(RAISE_IN, b"        log(0)\n")
        _held_until_dropped(tmp_path, _module(_fn(b"a2")), _module(_fn(b"a2", RAISE)),
                            _module(_fn(b"a2", beside, head)), _module(_fn(b"a2", dropped, head)),
                            ("rework a2", "a2: x is never None"))
        return
    inside, beside = C_BLOCKS[shape]
    for copy in (b"if (!x) return 0;", b"if (!x) continue;", b"if (!x) throw 1;",
                 b'TORCH_CHECK(x != nullptr, "x");'):
        inside = inside.replace(copy, b"log(0);")
    _held_until_dropped(tmp_path, _c_module(_c_fn()), _c_module(_c_fn(C_GUARD)),
                        _c_module(_c_fn(head=beside + C_HEAD)),
                        _c_module(_c_fn(head=inside + C_HEAD)),
                        ("rework k2", "a2: x is never None"), "csrc/k.cu")


def test_a_cpp_guard_kept_by_its_copy_past_a_label_is_quiet_until_dropped(tmp_path):
    _held_until_dropped(tmp_path, _c_module(_c_fn()), _c_module(_c_fn(C_GUARD)),
                        _c_module(_c_fn(head=b"  retry:\n" + C_GUARD + C_HEAD)),
                        _c_module(_c_fn(head=b"  retry:\n  log(0);\n" + C_HEAD)),
                        ("rework k2", "k2: never null"), "csrc/k.cu")


# A guard the fix put inside a block, kept by upstream's copy in that block.
FIX_IN_A_BLOCK = {
    "a C continue in its loop": (
        b"  for (int i = 0; i < n; ++i) {\n%s    log(i);\n  }\n", b"    if (!x) continue;\n",
        b"    if (x == nullptr) continue;\n"),
    "a C return under another if": (
        b"  if (strict) {\n%s    log(1);\n  }\n", b"    if (!x) return 0;\n",
        b"    if (x == nullptr) return 0;\n"),
}


@pytest.mark.parametrize("shape", list(FIX_IN_A_BLOCK))
def test_a_cpp_guard_the_fix_put_in_a_block_is_kept_by_its_copy_there_until_dropped(
        tmp_path, shape):
    block, guard, copy = FIX_IN_A_BLOCK[shape]
    head = b"  int a = 2;\n  int b = a + x[0];\n"
    _held_until_dropped(tmp_path, _c_module(_c_fn(head=block % b"" + head)),
                        _c_module(_c_fn(head=block % guard + head)),
                        _c_module(_c_fn(head=block % copy + C_HEAD)),
                        _c_module(_c_fn(head=block % b"" + C_HEAD + b"  b++;\n")),
                        ("rework k2", "k2: never null"), "csrc/k.cu")


def test_a_raise_guard_the_fix_put_in_a_try_is_kept_by_its_copy_there_until_dropped(tmp_path):
    block = b"    try:\n%s        x = x.float()\n    except ValueError:\n        x = DEFAULT\n"
    guard = b"        if x is None:\n            raise ValueError('x')\n"
    copy = b"        if x is None: raise ValueError('no x')\n"
    rework = HEAD.replace(b"2", b"3")
    _held_until_dropped(tmp_path, _module(_fn(b"a2", block % b"")),
                        _module(_fn(b"a2", block % guard)),
                        _module(_fn(b"a2", block % copy, rework)),
                        _module(_fn(b"a2", block % b"", rework + b"    c = c + 1\n")),
                        ("rework a2", "a2: x is never None"))


# A copy that leaves the function wherever the guard did though it sits in a block: a raise
# no `except` of its `try:` catches (another class, by the standard exception hierarchy), or
# whose handler re-raises or returns, or under `contextlib.suppress` of another class; the
# guard copied into both branches of an if/else (each path through one copy); a copy in a loop's
# `else:` with no `break` in the loop (it runs wherever the loop ends). Each was read
# as leaving less than the function, and the guard kept that way said taken out (exit 1,
# advising `bring-back`, which would put it back beside upstream's own).
GUARD = b"    if x is None:\n        return 0\n"
GUARD_IN = b"        if x is None:\n            return 0\n"
LEAVING_AS_THE_GUARD = {
    "a raise in a try catching another class": (
        RAISE, b"    try:\n" + RAISE_IN + b"        x = x.float()\n"
        b"    except KeyError:\n        x = DEFAULT\n"),
    "a raise in a try catching other classes as a tuple": (
        RAISE, b"    try:\n" + RAISE_IN + b"        x = x.float()\n"
        b"    except (KeyError, TypeError) as e:\n        x = DEFAULT\n"),
    "a raise whose handler re-raises": (
        RAISE, b"    try:\n" + RAISE_IN + b"        x = x.float()\n"
        b"    except ValueError as e:\n        log(e)\n        raise\n"),
    "a raise whose handler returns": (
        RAISE, b"    try:\n" + RAISE_IN + b"        x = x.float()\n"
        b"    except ValueError:\n        return 0\n"),
    "a raise under suppress of another class": (
        RAISE, b"    with contextlib.suppress(KeyError):\n" + RAISE_IN + b"        x = x.float()\n"),
    "in both branches of an if/else": (
        GUARD, b"    if FAST:\n" + GUARD_IN + b"        x = x.half()\n"
        b"    else:\n" + GUARD_IN + b"        x = x.float()\n"),
    "in each branch of an if/elif/else": (
        GUARD, b"    if n > 0:\n" + GUARD_IN + b"    elif n < 0:\n" + GUARD_IN +
        b"    else:\n" + GUARD_IN),
    "in a for loop's else, no break in the loop": (
        GUARD, b"    for k in ks:\n        log(k)\n    else:\n" + GUARD_IN),
    "in a while loop's else, no break in the loop": (
        GUARD, b"    while n > 0:\n        n = n - 1\n    else:\n" + GUARD_IN),
    "C: in both branches of an if/else": (
        C_GUARD, b"  if (n > 0) {\n    if (!x) return 0;\n  } else {\n    if (!x) return 0;\n  }\n"),
    "C: in each branch of an else if chain": (
        C_GUARD, b"  if (n > 0) {\n    if (!x) return 0;\n  } else if (n < 0) {\n"
        b"    if (!x) return 0;\n  } else {\n    if (!x) return 0;\n  }\n"),
}
# The same blocks where a path goes on to the work with x None (a `break` skips a loop's
# `else:`; one in a nested loop is read so too): said, as before.
LEAVING_LESS = {
    "a raise in a try catching its base class": (
        RAISE, b"    try:\n" + RAISE_IN + b"    except Exception:\n        x = DEFAULT\n"),
    "a raise in a try catching it in a tuple": (
        RAISE, b"    try:\n" + RAISE_IN + b"    except (KeyError, ValueError):\n        x = DEFAULT\n"),
    "a raise in a try catching a class of the project's own": (
        RAISE, b"    try:\n" + RAISE_IN + b"    except ShapeError:\n        x = DEFAULT\n"),
    "a raise of a class of the project's own in a try catching another": (
        b"    if x is None:\n        raise ShapeError('x')\n",
        b"    try:\n        if x is None:\n            raise ShapeError('x')\n"
        b"    except KeyError:\n        x = DEFAULT\n"),
    "a raise whose handler raises another, caught further out": (
        RAISE, b"    try:\n        try:\n    " + RAISE_IN.replace(b"\n        ", b"\n            ") +
        b"        except ValueError:\n            raise KeyError('x')\n"
        b"    except KeyError:\n        x = DEFAULT\n"),
    "a raise under suppress of its base class": (
        RAISE, b"    with suppress(Exception):\n" + RAISE_IN + b"        x = x.float()\n"),
    "in one branch of an if/else": (
        GUARD, b"    if FAST:\n" + GUARD_IN + b"        x = x.half()\n"
        b"    else:\n        x = x.float()\n"),
    "in an if and an elif only": (
        GUARD, b"    if n > 0:\n" + GUARD_IN + b"    elif n < 0:\n" + GUARD_IN),
    "in two ifs of converse conditions, the name set between": (
        GUARD, b"    if n > 0:\n" + GUARD_IN + b"    n = n - 2\n    if n <= 0:\n" + GUARD_IN),
    "in both branches of an if/else on a call": (
        GUARD, b"    if use_fast():\n" + GUARD_IN + b"    else:\n" + GUARD_IN),
    "in a for loop's else, a break in the loop": (
        GUARD, b"    for k in ks:\n        if k:\n            break\n    else:\n" + GUARD_IN),
    "in a for loop's else, a break in a loop nested in it": (
        GUARD, b"    for k in ks:\n        for j in k:\n            break\n    else:\n" + GUARD_IN),
    "in a try's else": (
        GUARD, b"    try:\n        prep()\n    except OSError:\n        pass\n    else:\n" + GUARD_IN),
    "C: in one branch of an if/else": (
        C_GUARD, b"  if (n > 0) {\n    if (!x) return 0;\n  } else {\n    log(1);\n  }\n"),
}


def _guard_and_copy(shapes: dict, shape: str):
    guard, copy = shapes[shape]
    if shape.startswith("C: "):
        return (_c_module(_c_fn()), _c_module(_c_fn(guard)), "csrc/k.cu",
                lambda top: _c_module(_c_fn(head=top + C_HEAD)))
    return (_module(_fn(b"a2")), _module(_fn(b"a2", guard)), "pkg/a.py",
            lambda top: _module(_fn(b"a2", top, HEAD.replace(b"2", b"3"))))


@pytest.mark.parametrize("shape", list(LEAVING_AS_THE_GUARD))
def test_a_guard_kept_by_a_copy_leaving_wherever_it_did_is_quiet_until_dropped(tmp_path, shape):
    base, fixed, path, reworked = _guard_and_copy(LEAVING_AS_THE_GUARD, shape)
    copy = LEAVING_AS_THE_GUARD[shape][1]
    dropped = copy
    for line in (RAISE_IN, GUARD_IN, b"    if (!x) return 0;\n"):
        dropped = dropped.replace(line, line[:len(line) - len(line.lstrip())] + b"log(0)\n"
                                  if path.endswith(".py") else b"    log(0);\n")
    _held_until_dropped(tmp_path, base, fixed, reworked(copy), reworked(dropped),
                        ("rework", "x is never None"), path)


@pytest.mark.parametrize("shape", list(LEAVING_LESS))
def test_a_guard_dropped_beside_a_copy_some_path_goes_past_is_said(tmp_path, shape):
    base, fixed, path, reworked = _guard_and_copy(LEAVING_LESS, shape)
    stack = _landed(tmp_path, base, fixed, path)
    took = stack.commit({path: reworked(LEAVING_LESS[shape][1])}, "rework")
    _said_by(stack, took)


# In an `async def`: a copy inside `async for` leaves only where the loop has an item (read
# as the function's own header, it kept the guard: quiet, exit 0); one inside `async with`
# keeps it, as in a `with`.
def _async_fn(top: bytes = b"", head: bytes = HEAD) -> bytes:
    return _fn(b"a2", top, head).replace(b"def a2(x):", b"async def a2(x):")


def test_a_guard_dropped_beside_its_copy_in_an_async_for_is_said(tmp_path):
    stack = _landed(tmp_path, _module(_async_fn()), _module(_async_fn(GUARD)))
    took = stack.commit({"pkg/a.py": _module(_async_fn(b"    async for y in ys:\n" + GUARD_IN,
                                                       HEAD.replace(b"2", b"3")))}, "rework a2")
    _said_by(stack, took)


def test_a_guard_kept_by_its_copy_in_an_async_with_is_quiet_until_dropped(tmp_path):
    head = HEAD.replace(b"2", b"3")
    _held_until_dropped(tmp_path, _module(_async_fn()), _module(_async_fn(GUARD)),
                        _module(_async_fn(b"    async with lock:\n" + GUARD_IN + b"        log(0)\n",
                                          head)),
                        _module(_async_fn(b"    async with lock:\n        log(0)\n", head)),
                        ("rework a2", "a2: x is never None"))
