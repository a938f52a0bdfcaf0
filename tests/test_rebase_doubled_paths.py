"""A guard the fix adds in one branch of a function where upstream added the same guard for
another path: after the branch, which ends (`return`), or in its `else`. Upstream's guard does
not cover the fix's branch, so both are wanted; before, the near text read them as the fix
made twice, the rebase stopped ("upstream has these lines already, its own way") and its first
advice, delete your copy, lost the fix's check. Now the fix moves and the file checks both
paths. The neighbours still stop: upstream's guard before the branch (it runs on every path),
and the fix's branch running on into upstream's guard (one path, the guard a few lines lower).
Real git upstreams, real commands."""
from __future__ import annotations

import pytest

from helpers.project import OneUpstreamStack

GUARD = b"if x is None:\n    return None\n"
CPP_GUARD = b"if (x == nullptr) return nullptr;\n"


def indented(text: bytes, depth: int) -> bytes:
    return b"".join(b" " * depth + line + b"\n" for line in text.splitlines())


def py(body: bytes) -> bytes:
    return (b'"""Kernels."""\n\n\ndef run(x, fast):\n' + body +
            b"\n\ndef other():\n    return 1\n")


def cpp(body: bytes) -> bytes:
    return (b"float* run(float* x, bool fast) {\n" + body + b"}\n\n"
            b"int version() { return 1; }\n")


def stack_with(tmp_path, path: str, base: bytes, fix: bytes,
               upstream: bytes) -> OneUpstreamStack:
    """Fix `fa` makes `path` `fix` from `base`; upstream makes it `upstream` at v2."""
    stack = OneUpstreamStack(tmp_path, {path: base, "pkg/b.py": b"b = 1\n"})
    stack.add_fix("fa", path, base, fix)
    stack.commit({path: upstream}, "Guard the slow path", tag="v2")
    return stack


def moves_with_both(stack: OneUpstreamStack, path: str, guard: bytes) -> None:
    """status says the fix moves, the rebase moves it, and the overlay has both guards."""
    status = stack.json("status", "--against", "v2", expect=None)
    assert [p["rebase"] for p in status["patches"]] == ["move"], status["patches"]
    summary = stack.rebase_json("--to", "v2")
    assert [p["action"] for p in summary["patches"]] in (["clean"], ["offset"], ["merged"]), \
        summary["patches"]
    stack.cli("overlays")
    assert (stack.root / "overlays/up" / path).read_bytes().count(guard) == 2


def stops(stack: OneUpstreamStack) -> str:
    """status says conflict, and the rebase stops (exit 3) as upstream having the lines (what
    it says)."""
    status = stack.json("status", "--against", "v2", expect=1)
    assert [p["state"] for p in status["patches"]] == ["conflict"], status["patches"]
    _, _, err = stack.cli("rebase", "--to", "v2", expect=3)
    assert "upstream has these lines already, its own way" in err, err
    return err


FAST = b"    if fast:\n        y = x.contiguous()\n        return fast_path(y)\n"
SLOW = b"    return slow_path(x)\n"


@pytest.mark.parametrize("form", ["guard alone", "guard and a statement"])
def test_a_guard_in_the_fast_branch_where_upstream_guards_the_slow_path_moves(tmp_path, form):
    # The fix checks x in `if fast:`, which returns; upstream adds the same check after the
    # branch, for the slow path only. The stop's first advice (delete your copy) left the
    # fast path unchecked.
    base = py(FAST + SLOW)
    mine = indented(GUARD, 8) + (b"        x = x.contiguous()\n" if form != "guard alone" else b"")
    fix = base.replace(b"    if fast:\n", b"    if fast:\n" + mine)
    theirs = base.replace(SLOW, indented(GUARD, 4) + SLOW)
    moves_with_both(stack_with(tmp_path, "pkg/a.py", base, fix, theirs), "pkg/a.py",
                    b"if x is None")


def test_a_guard_in_the_if_branch_where_upstream_guards_the_else_moves(tmp_path):
    base = py(b"    if fast:\n        y = fast_path(x)\n    else:\n        y = slow_path(x)\n"
              b"    return y\n")
    fix = base.replace(b"    if fast:\n", b"    if fast:\n" + indented(GUARD, 8))
    theirs = base.replace(b"    else:\n", b"    else:\n" + indented(GUARD, 8))
    moves_with_both(stack_with(tmp_path, "pkg/a.py", base, fix, theirs), "pkg/a.py",
                    b"if x is None")


def test_a_guard_after_the_branch_where_upstream_guards_inside_it_moves(tmp_path):
    # The other way round: upstream checks x in the fast branch only; the fix's check after
    # the branch covers the slow path, which upstream's does not.
    base = py(FAST + SLOW)
    fix = base.replace(SLOW, indented(GUARD, 4) + SLOW)
    theirs = base.replace(b"    if fast:\n", b"    if fast:\n" + indented(GUARD, 8))
    moves_with_both(stack_with(tmp_path, "pkg/a.py", base, fix, theirs), "pkg/a.py",
                    b"if x is None")


def test_a_cpp_guard_in_the_fast_branch_where_upstream_guards_the_slow_path_moves(tmp_path):
    base = cpp(b"    if (fast) {\n        float* y = widen(x);\n        return fast_path(y);\n"
               b"    }\n    return slow_path(x);\n")
    fix = base.replace(b"    if (fast) {\n", b"    if (fast) {\n        " + CPP_GUARD)
    theirs = base.replace(b"    return slow_path(x);\n",
                          b"    " + CPP_GUARD + b"    return slow_path(x);\n")
    moves_with_both(stack_with(tmp_path, "pkg/k.cu", base, fix, theirs), "pkg/k.cu",
                    b"if (x == nullptr)")


def test_upstreams_guard_before_the_branch_covers_the_fixs_and_stops(tmp_path):
    # Neighbour: upstream's check runs before the branch, on every path: the fix made twice.
    base = py(b"    y = prepare(fast)\n" + FAST + SLOW)
    fix = base.replace(b"    if fast:\n", b"    if fast:\n" + indented(GUARD, 8))
    theirs = base.replace(b"    if fast:\n", indented(GUARD, 4) + b"    if fast:\n")
    stops(stack_with(tmp_path, "pkg/a.py", base, fix, theirs))


def test_the_fixs_branch_running_on_into_upstreams_guard_stops(tmp_path):
    # Neighbour: the branch does not return, so the fast path reaches upstream's check a few
    # lines lower, as any guard upstream added a line lower: the fix made twice.
    base = py(b"    if fast:\n        y = x.contiguous()\n        log_fast(y)\n"
              b"    return slow_path(x)\n")
    fix = base.replace(b"    if fast:\n", b"    if fast:\n" + indented(GUARD, 8))
    theirs = base.replace(SLOW, indented(GUARD, 4) + SLOW)
    stops(stack_with(tmp_path, "pkg/a.py", base, fix, theirs))


def test_a_guard_in_a_with_block_before_upstreams_stops(tmp_path):
    # Neighbour: a `with` block runs on every path; it ending is no branch.
    base = py(b"    with torch.no_grad():\n        y = x.contiguous()\n        log_fast(y)\n"
              b"    return slow_path(x)\n")
    fix = base.replace(b"no_grad():\n", b"no_grad():\n" + indented(GUARD, 8))
    theirs = base.replace(SLOW, indented(GUARD, 4) + SLOW)
    stops(stack_with(tmp_path, "pkg/a.py", base, fix, theirs))


@pytest.mark.parametrize("head", [b"    try:\n", b"    if fast:\n"], ids=["try", "if"])
def test_a_guard_in_the_body_where_upstream_guards_the_handler_or_elif_moves(tmp_path, head):
    # The fix's check in a `try:` body (or an `if`) that returns, upstream's in the `except`
    # handler (or the `elif`): another path each. A `try:` body runs on every path but the
    # handler's, so it stopped as doubled.
    other = b"    except ValueError:\n" if head == b"    try:\n" else b"    elif x is not None:\n"
    base = py(head + b"        y = fast_path(x)\n        return y\n" + other +
              b"        log_slow(x)\n" + SLOW)
    fix = base.replace(head, head + indented(GUARD, 8))
    theirs = base.replace(b"        log_slow(x)\n", b"        log_slow(x)\n" + indented(GUARD, 8))
    moves_with_both(stack_with(tmp_path, "pkg/a.py", base, fix, theirs), "pkg/a.py",
                    b"if x is None")


@pytest.mark.parametrize("end", [b"log_fast(y)", b"continue", b"break"])
def test_a_guard_in_a_loop_body_running_on_into_upstreams_after_the_loop_stops(tmp_path, end):
    # Neighbour: the loop's body ends without leaving the function (`continue` and `break`
    # go on in or after the loop), so its path reaches upstream's check after the loop: one
    # path, the fix made twice (with `break` it moved, the check twice, exit 0).
    base = py(b"    for k in range(3):\n        y = fast_path(x)\n        " + end + b"\n" + SLOW)
    fix = base.replace(b"range(3):\n", b"range(3):\n" + indented(GUARD, 8))
    theirs = base.replace(SLOW, indented(GUARD, 4) + SLOW)
    stops(stack_with(tmp_path, "pkg/a.py", base, fix, theirs))


BIAS = b"y.add_(self.bias.to(y.dtype))\n"
MATMUL = b"    y = matmul(x, weight)\n"


@pytest.mark.parametrize("where", ["fix first", "upstream first"])
def test_a_statement_on_the_path_through_both_copies_stops(tmp_path, where):
    # A line on the path through both copies is done twice: the fix adds the bias after the
    # matmul and upstream inside a later `if fast:` (or upstream's inside an `if fast:` that
    # runs on, the fix's after it). The fast path adds the bias twice; it moved, exit 0.
    # Upstream's copy runs on the fast path only: deleting the fix's would lose the bias on
    # the slow path, so the first way on keeps the fix's copy (it was "delete your copy").
    base = py(MATMUL + b"    if fast:\n        log_fast(y)\n    return finish(y)\n")
    if where == "fix first":
        fix = base.replace(MATMUL, MATMUL + b"    " + BIAS)
        theirs = base.replace(b"    if fast:\n", b"    if fast:\n        " + BIAS)
    else:
        fix = base.replace(b"    return finish", b"    " + BIAS + b"    return finish")
        theirs = base.replace(b"    if fast:\n", b"    if fast:\n        " + BIAS)
    stack = stack_with(tmp_path, "pkg/a.py", base, fix, theirs)
    err = stops(stack)
    assert "upstream's copy runs on only some of the paths through yours" in err, err
    assert ": keep yours and take upstream's copy out in the worktree" in err, err
    assert err.index("keep yours") < err.index("delete your copy only if"), err


ACCUMULATE = b"    total = total + scale * weight\n"


def test_upstreams_line_each_round_of_a_loop_and_the_fixs_after_it_keeps_both_first(tmp_path):
    # Upstream adds to the total each round of the loop, the fix once after it: the same work
    # only where the loop runs one round. The first way on was "keep yours and take
    # upstream's copy out", which lost upstream's rounds; now it is keep both, and taking
    # upstream's copy out is never advised. The stop says the place, then what it is.
    base = py(b"    total = 0.0\n    for item in x:\n        log_item(item)\n"
              b"        check_item(item)\n    report(x)\n    return finish(total)\n")
    fix = base.replace(b"    return finish", ACCUMULATE + b"    return finish")
    theirs = base.replace(b"        log_item(item)\n", b"        log_item(item)\n    " + ACCUMULATE)
    err = stops(stack_with(tmp_path, "pkg/a.py", base, fix, theirs))
    assert "upstream has these lines already, its own way; upstream's copy runs each round " \
        "of a loop, yours once outside it: keep both" in err, err
    assert "take upstream's copy out" not in err and "only some of the paths" not in err, err


def test_upstreams_line_in_a_loop_body_that_breaks_out_keeps_the_fixs_first(tmp_path):
    # Neighbour: a body that breaks out runs upstream's copy at most once, on the paths that
    # break: on fewer paths than the fix's after the loop, keep yours first, as before, and
    # the stop says the place before what it is.
    base = py(b"    total = 0.0\n    for item in x:\n        log_item(item)\n"
              b"        break\n    report(x)\n    return finish(total)\n")
    fix = base.replace(b"    return finish", ACCUMULATE + b"    return finish")
    theirs = base.replace(b"        log_item(item)\n", b"        log_item(item)\n    " + ACCUMULATE)
    err = stops(stack_with(tmp_path, "pkg/a.py", base, fix, theirs))
    assert "upstream has these lines already, its own way; upstream's copy runs on only some " \
        "of the paths through yours: keep yours and take upstream's copy out" in err, err


def test_the_fixs_branch_running_on_into_upstreams_statement_advises_deleting_the_fixs(tmp_path):
    # Neighbour: the fix's bias inside `if fast:`, which runs on into upstream's after it:
    # every path through the fix's copy runs upstream's, the fix made twice, and deleting
    # the fix's copy loses nothing: that stays the first way on.
    base = py(MATMUL + b"    if fast:\n        log_fast(y)\n    return finish(y)\n")
    fix = base.replace(b"    if fast:\n", b"    if fast:\n        " + BIAS)
    theirs = base.replace(b"    return finish", b"    " + BIAS + b"    return finish")
    stack = stack_with(tmp_path, "pkg/a.py", base, fix, theirs)
    err = stops(stack)
    assert ": delete your copy of these lines in the worktree" in err, err
    assert "only some of the paths" not in err, err


@pytest.mark.parametrize("where", ["upstream in the branch", "fix first",
                                   "upstream in a loop body", "cpp", "cpp allman"])
def test_a_guard_where_upstreams_copy_runs_on_fewer_paths_moves(tmp_path, where):
    # Upstream's guard in `if fast:` that does not return, the fix's after the branch (or the
    # fix's at the top and upstream's in a later `if fast:`, or upstream's in a loop's body,
    # which may run no round, and the fix's after the loop): the paths past upstream's branch
    # run the fix's check alone. It stopped as doubled, and the first advice, delete your
    # copy, left the slow path unchecked. A guard made twice on the fast path changes nothing.
    if where.startswith("cpp"):
        opened = b"    if (fast)\n    {\n" if where == "cpp allman" else b"    if (fast) {\n"
        base = cpp(opened + b"        log_fast(x);\n    }\n    return slow_path(x);\n")
        fix = base.replace(b"    return slow", b"    " + CPP_GUARD + b"    return slow")
        theirs = base.replace(opened, opened + b"        " + CPP_GUARD)
        moves_with_both(stack_with(tmp_path, "pkg/k.cu", base, fix, theirs), "pkg/k.cu",
                        CPP_GUARD.strip())
        return
    if where == "upstream in a loop body":
        base = py(b"    for k in range(tries(x)):\n        y = x.contiguous()\n"
                  b"        log_fast(y)\n" + SLOW)
        theirs = base.replace(b"range(tries(x)):\n", b"range(tries(x)):\n" + indented(GUARD, 8))
        fix = base.replace(SLOW, indented(GUARD, 4) + SLOW)
    else:
        base = py(b"    y = prepare(x)\n    if fast:\n        y = x.contiguous()\n"
                  b"        log_fast(y)\n" + SLOW)
        theirs = base.replace(b"    if fast:\n", b"    if fast:\n" + indented(GUARD, 8))
        if where == "fix first":
            fix = base.replace(b"    y = prepare(x)\n", indented(GUARD, 4) + b"    y = prepare(x)\n")
        else:
            fix = base.replace(SLOW, indented(GUARD, 4) + SLOW)
    moves_with_both(stack_with(tmp_path, "pkg/a.py", base, fix, theirs), "pkg/a.py",
                    b"if x is None")


TRY_ELSE = (b"    y = prepare(x)\n    try:\n        launch(y)\n    except RuntimeError:\n"
            b"        fallback(y)\n    else:\n        finish(y)\n    return y\n")


@pytest.mark.parametrize("line", [BIAS, b"if y is None: return None\n"],
                         ids=["statement", "guard"])
def test_the_try_body_and_the_trys_else_are_one_path_and_stop(tmp_path, line):
    # The try's `else:` runs after the body on success: the fix's line in the body and
    # upstream's in the `else:` run one after the other. The `else:` closing the handler read
    # as another branch of the body: it moved, the line twice, exit 0.
    fix = py(TRY_ELSE.replace(b"        launch(y)\n", b"        %s        launch(y)\n" % line))
    theirs = py(TRY_ELSE.replace(b"        finish(y)\n", b"        %s        finish(y)\n" % line))
    stops(stack_with(tmp_path, "pkg/a.py", py(TRY_ELSE), fix, theirs))


def test_a_loops_body_and_its_else_are_one_path_and_stop(tmp_path):
    base = py(b"    for part in x:\n        launch(part)\n    else:\n        finish(x)\n"
              b"    return x\n")
    fix = base.replace(b"    for part in x:\n", b"    for part in x:\n" + indented(GUARD, 8))
    theirs = base.replace(b"    else:\n", b"    else:\n" + indented(GUARD, 8))
    stops(stack_with(tmp_path, "pkg/a.py", base, fix, theirs))


def test_a_guard_in_the_handler_where_upstream_guards_the_trys_else_moves(tmp_path):
    # Neighbour the other way: the handler and the try's `else:` are two paths (the body
    # raised, or it did not): both guards wanted.
    fix = py(TRY_ELSE.replace(b"        fallback(y)\n",
                              b"        if y is None:\n            return None\n"
                              b"        fallback(y)\n"))
    theirs = py(TRY_ELSE.replace(b"        finish(y)\n",
                                 b"        if y is None:\n            return None\n"
                                 b"        finish(y)\n"))
    moves_with_both(stack_with(tmp_path, "pkg/a.py", py(TRY_ELSE), fix, theirs), "pkg/a.py",
                    b"if y is None")


CHANNELS_LAST = b"y = y.contiguous(memory_format=torch.channels_last)\n"
FAST_Y = b"    y = prepare(x)\n    if fast:\n        return fast_path(y)\n    return slow_path(y)\n"


@pytest.mark.parametrize("line", [CHANNELS_LAST, BIAS], ids=["layout", "bias"])
@pytest.mark.parametrize("where", ["fix in the branch", "upstream in the branch"])
def test_a_statement_in_a_branch_that_returns_and_after_it_moves(tmp_path, line, where):
    # Any line, not only a guard: the fix's in `if fast:`, which returns, upstream's after the
    # branch for the slow path (or the other way round). The paths never meet, each runs the
    # line once. It stopped as "upstream has these lines already, its own way", and the first
    # advice, delete your copy, left the fast path without the fix's line.
    base = py(FAST_Y)
    in_branch = base.replace(b"        return fast_path",
                             b"        " + line + b"        return fast_path")
    after = base.replace(b"    return slow_path", b"    " + line + b"    return slow_path")
    fix, theirs = (in_branch, after) if where == "fix in the branch" else (after, in_branch)
    moves_with_both(stack_with(tmp_path, "pkg/a.py", base, fix, theirs), "pkg/a.py",
                    line.strip())


@pytest.mark.parametrize("line", [BIAS, GUARD], ids=["statement", "guard"])
def test_a_line_in_a_branch_that_breaks_out_of_the_loop_and_after_the_loop_stops(tmp_path, line):
    # Neighbour: `break` in an `if` inside the loop leaves the loop, and its path reaches the
    # line after the loop: one path, the fix made twice (a guard moved, the check twice, exit 0).
    base = py(b"    y = prepare(x)\n    for k in range(3):\n        y = step(y)\n"
              b"        if done(y):\n            log(y)\n            break\n    return finish(y)\n")
    fix = base.replace(b"            log(y)\n", indented(line, 12) + b"            log(y)\n")
    theirs = base.replace(b"    return finish", indented(line, 4) + b"    return finish")
    stops(stack_with(tmp_path, "pkg/a.py", base, fix, theirs))


def test_a_statement_in_a_branch_that_goes_on_to_the_next_round_and_later_in_the_body_moves(
        tmp_path):
    # `continue` in an `if` skips the rest of the loop's body: the fix's line in the branch and
    # upstream's later in the same body run once each round, on two paths.
    base = py(b"    for k in range(3):\n        y = step(x)\n        if done(y):\n"
              b"            log(y)\n            continue\n        save(y)\n    return x\n")
    fix = base.replace(b"            log(y)\n", b"            " + BIAS + b"            log(y)\n")
    theirs = base.replace(b"        save(y)\n", b"        " + BIAS + b"        save(y)\n")
    moves_with_both(stack_with(tmp_path, "pkg/a.py", base, fix, theirs), "pkg/a.py",
                    BIAS.strip())


@pytest.mark.parametrize("whose", ["fix's in the body", "upstream's in the body"])
def test_a_guard_in_a_body_that_breaks_out_and_in_the_loops_else_moves(tmp_path, whose):
    # `break` skips the loop's `else:`, which runs only where the loop ran out: a guard in a
    # body ending in `break` and the same guard in the `else:` are on two paths, both
    # wanted. It stopped as doubled, and the first advice, delete your copy, left the path
    # through the body unchecked.
    base = py(b"    for k in range(tries):\n        y = fast_path(x)\n        break\n"
              b"    else:\n        y = slow_path(x)\n    return finish(y)\n")
    in_body = base.replace(b"range(tries):\n", b"range(tries):\n" + indented(GUARD, 8))
    in_else = base.replace(b"    else:\n", b"    else:\n" + indented(GUARD, 8))
    fix, theirs = (in_body, in_else) if whose == "fix's in the body" else (in_else, in_body)
    moves_with_both(stack_with(tmp_path, "pkg/a.py", base, fix, theirs), "pkg/a.py",
                    b"if x is None")


def test_a_guard_in_a_body_that_may_go_on_and_in_the_loops_else_stops(tmp_path):
    # Neighbour: a body that may go on to its next round (`continue`) can run the loop out,
    # and the `else:` after it: one path through both guards, the fix made twice.
    base = py(b"    for k in range(tries):\n        y = fast_path(x)\n        if y is None:\n"
              b"            continue\n        break\n"
              b"    else:\n        y = slow_path(x)\n    return finish(y)\n")
    fix = base.replace(b"range(tries):\n", b"range(tries):\n" + indented(GUARD, 8))
    theirs = base.replace(b"    else:\n", b"    else:\n" + indented(GUARD, 8))
    stops(stack_with(tmp_path, "pkg/a.py", base, fix, theirs))
