"""Stops whose first advice, delete your copy, would lose the fix: upstream added beside the fix's
lines something that reads alike but is other work. Each shape is tried both ways: where
upstream's lines are other work the fix moves and both are in the overlay; where they are the
fix's work written another way the rebase stops as the fix made twice (a move would merge the
same work in twice, exit 0). Real git upstreams, real commands."""
from __future__ import annotations

import pytest

from helpers.project import OneUpstreamStack
from test_rebase_doubled import moves, stack_with_file


def stops_as_doubled(stack: OneUpstreamStack) -> None:
    """status says conflict, and the rebase stops (exit 3) as upstream having the lines."""
    status = stack.json("status", "--against", "v2", expect=1)
    assert [p["state"] for p in status["patches"]] == ["conflict"], status["patches"]
    _, _, err = stack.cli("rebase", "--to", "v2", expect=3)
    assert "upstream has these lines already, its own way" in err, err


def loops(tmp_path, lang: str, mine: bytes, theirs_body: bytes) -> tuple[OneUpstreamStack,
                                                                            str, bytes]:
    """The fix adds a loop of a new header and check whose body is `mine`; upstream adds one
    of the same header and check whose body is `theirs_body`, further up the function."""
    if lang == "cu":
        path, check = "pkg/k.cu", b"        if (j >= n) break;\n"
        base = (b"#include <hip/hip_runtime.h>\n\n"
                b"__global__ void twice(float* x, float* y, int n, int m, float s, float t) {\n"
                b"    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                b"    for (int j = i; j < m; j += 32) {\n        x[j] *= 2.0f;\n    }\n"
                b"    sync_all();\n}\n\nint version() { return 1; }\n")
        head = b"    for (int j = i; j < m; j += 64) {\n"
        after, first = b"    sync_all();\n", b"    for (int j = i; j < m; j += 32) {\n"
        mine, theirs_body = mine + b"    }\n", theirs_body + b"    }\n"
    else:
        path, check = "pkg/k.py", b"        if j >= n:\n            break\n"
        base = (b"def twice(x, y, n, m, s, t):\n    for j in range(m):\n        x[j] *= 2.0\n"
                b"    sync_all()\n    return y\n\n\ndef version():\n    return 1\n")
        head = b"    for j in range(0, m, 2):\n"
        after, first = b"    sync_all()\n", b"    for j in range(m):\n"
    stack = stack_with_file(tmp_path, path, base, base.replace(after, after + head + check + mine),
                            base.replace(first, head + check + theirs_body + first))
    return stack, path, check


@pytest.mark.parametrize("lang, mine, theirs_body", [
    ("py", b"        w = x[j] - s\n        y[j] += w\n", b"        y[j] += s - x[j]\n"),
    ("py", b"        w = x[j] / s\n        y[j] += w\n", b"        y[j] += s / x[j]\n"),
    ("cu", b"        float w = x[j] - s;\n        y[j] += w;\n", b"        y[j] += s - x[j];\n"),
    ("cu", b"        float w = x[j] / s;\n        y[j] += w;\n", b"        y[j] += s / x[j];\n"),
    ("py", b"        w = g(x[j] - s) * t\n        y[j] += w\n",
     b"        y[j] += t * g(s - x[j])\n"),
    ("cu", b"        float w = g(x[j] - s) * t;\n        y[j] += w;\n",
     b"        y[j] += t * g(s - x[j]);\n"),
    ("py", b"        w = x[j] - s * t\n        y[j] += w\n", b"        y[j] += t * s - x[j]\n"),
    ("cu", b"        float w = x[j] - s;\n        y[j] -= w;\n", b"        y[j] -= s - x[j];\n"),
    ("py", b"        w = -x[j]\n        y[j] += w\n", b"        y[j] += x[j]\n"),
    ("py", b"        w = -x[j]\n        y[j] -= w\n", b"        y[j] -= x[j]\n"),
    ("cu", b"        float w = -x[j];\n        y[j] += w;\n", b"        y[j] += x[j];\n"),
    ("py", b"        w = -x[j] * s\n        y[j] -= w\n", b"        y[j] -= x[j] * s\n"),
    ("py", b"        w = x[j] - s\n        y[j] += w\n", b"        y[j] += x[j] + s\n"),
    ("cu", b"        float w = x[j] - s;\n        y[j] -= w;\n", b"        y[j] -= x[j] + s;\n")],
    ids=["py-swapped-minus", "py-swapped-divide", "cu-swapped-minus", "cu-swapped-divide",
         "py-bracketed-minus", "cu-bracketed-minus", "py-minus-of-a-product",
         "cu-subtracted-swapped", "py-negated-added", "py-negated-subtracted",
         "cu-negated-added", "py-negated-product-subtracted", "py-minus-against-a-plus",
         "cu-minus-subtracted-against-a-plus"])
def test_the_fixs_loop_through_another_order_of_a_minus_or_a_divide_moves(tmp_path, lang, mine,
                                                                          theirs_body):
    # The fix's loop adds through a temporary `x[j] - s`, upstream's loop of the same header
    # and check adds `s - x[j]`: the same tokens, the opposite value, other work. It stopped as
    # the fix made twice, and its first advice, delete your copy, lost the fix's loop. Read as
    # syntax trees the two values differ: the fix moves and both loops are in the overlay.
    stack, path, check = loops(tmp_path, lang, mine, theirs_body)
    moves(stack)
    stack.cli("overlays")
    made = (stack.root / f"overlays/up/{path}").read_bytes()
    assert made.count(check) == 2 and made.count(b"y[j] ") == 2, made.decode()


@pytest.mark.parametrize("lang, mine, theirs_body", [
    ("py", b"        w = s * x[j] - t\n        y[j] += w\n", b"        y[j] += x[j] * s - t\n"),
    ("cu", b"        float w = s * x[j] - t;\n        y[j] += w;\n",
     b"        y[j] += x[j] * s - t;\n"),
    ("py", b"        w = x[j] - s\n        y[j] += w\n", b"        y[j] += x[j] - s\n"),
    ("py", b"        w = x[j] - s\n        y[j] += w\n", b"        y[j] += -s + x[j]\n"),
    ("py", b"        w = x[j] - s\n        y[j] -= w\n", b"        y[j] += s - x[j]\n"),
    ("cu", b"        float w = x[j] - s;\n        y[j] += w;\n",
     b"        y[j] = y[j] + (x[j] - s);\n"),
    ("py", b"        w = x[j - 1] * s\n        y[j] += w\n", b"        y[j] += s * x[j - 1]\n"),
    ("py", b"        w = -x[j] * s\n        y[j] += w\n", b"        y[j] += s * -x[j]\n"),
    ("py", b"        w = abs(x[j] - s) * t\n        y[j] += w\n",
     b"        y[j] += t * abs(s - x[j])\n"),
    ("cu", b"        float w = (x[j] - s) / t;\n        y[j] += w;\n",
     b"        y[j] += (-s + x[j]) / t;\n"),
    ("cu", b"        float w = fmaxf(x[j], s) - t;\n        y[j] += w;\n",
     b"        y[j] += fmaxf(s, x[j]) - t;\n"),
    ("cu", b"        float w = -x[j];\n        y[j] += w;\n", b"        y[j] -= x[j];\n"),
    ("cu", b"        float w = -x[j];\n        y[j] -= w;\n", b"        y[j] += x[j];\n"),
    ("py", b"        w = -x[j] * s\n        y[j] += w\n", b"        y[j] -= x[j] * s\n")],
    ids=["py-product-reordered", "cu-product-reordered", "py-minus-as-written",
         "py-minus-as-a-sum", "py-subtracted-from", "cu-added-to-itself", "py-index-reordered",
         "py-sign-reordered", "py-abs-of-the-swap", "cu-divided-sum", "cu-max-reordered",
         "cu-negated-added-where-subtracted", "cu-negated-subtracted-where-added",
         "py-negated-product-where-subtracted"])
def test_the_fixs_loop_through_the_same_value_written_otherwise_stops(tmp_path, lang, mine,
                                                                      theirs_body):
    # The mirror: upstream's loop adds the value the fix's temporary holds, written in another
    # order or form (`x[j] * s - t` for `s * x[j] - t`; `y[j] += s - x[j]` for
    # `w = x[j] - s` / `y[j] -= w`). It is the fix's loop made twice: a move would add the
    # value to y twice, exit 0 (`w = s * x[j] - t` did, when order counted across `-`).
    stack, _, _ = loops(tmp_path, lang, mine, theirs_body)
    stops_as_doubled(stack)


def stopped_saying(stack: OneUpstreamStack) -> str:
    """status says conflict, and the rebase stops (exit 3) as upstream having the lines:
    what it says."""
    status = stack.json("status", "--against", "v2", expect=1)
    assert [p["state"] for p in status["patches"]] == ["conflict"], status["patches"]
    _, _, err = stack.cli("rebase", "--to", "v2", expect=3)
    assert "upstream has these lines already, its own way" in err, err
    return err


def module(body: bytes) -> bytes:
    return b'"""Kernels."""\n\n\n' + body + b"\n\ndef other(y):\n    return y\n"


def guarded_around(tmp_path, step: bytes, guard: bytes) -> OneUpstreamStack:
    """`run(x)` reads x, sets it by `step`, and reads it again; the fix adds `guard` at the
    top, upstream adds it after the step."""
    base = module(b"def run(x, y):\n    first = prepare(x)\n%s    return finish(first, x)\n"
                  % step)
    return stack_with_file(tmp_path, "pkg/a.py", base,
                           base.replace(b"    first", guard + b"    first"),
                           base.replace(step, step + guard))


@pytest.mark.parametrize("step, guard", [
    (b"    x = x.float()\n", b"    if x.is_quantized:\n        return x\n"),
    (b"    x = x.to(device)\n", b"    if x.is_meta:\n        return x\n"),
    (b"    x = x.contiguous()\n", b"    if x.layout != torch.strided:\n        return x\n")],
    ids=["float-is_quantized", "to-is_meta", "contiguous-layout"])
def test_a_guard_on_an_attribute_no_step_table_names_after_a_step_moves(tmp_path, step, guard):
    # `x = x.float()` between the fix's `if x.is_quantized:` and upstream's: what the step
    # does to an attribute the table of steps does not name is not known, and the guard after
    # it may check another answer. It stopped as the fix made twice, and its first advice,
    # delete your copy, lost the fix's check where the step did change it. A guard made twice
    # changes nothing: the fix moves, and both guards are in the overlay.
    stack = guarded_around(tmp_path, step, guard)
    status = stack.json("status", "--against", "v2", expect=None)
    assert [p["rebase"] for p in status["patches"]] == ["move"], status["patches"]
    stack.rebase_json("--to", "v2")
    stack.cli("overlays")
    made = (stack.root / "overlays/up/pkg/a.py").read_bytes()
    assert made.count(guard.splitlines()[0]) == 2, made.decode()


@pytest.mark.parametrize("step, guard", [
    (b"    y = y.float()\n", b"    if x.is_quantized:\n        return x\n"),
    (b"    x = x.float()\n", b"    if x.is_quantized:\n        x = x.dequantize()\n")],
    ids=["another-name-set", "not-a-guard"])
def test_a_check_on_an_attribute_no_step_sets_again_stops(tmp_path, step, guard):
    # The mirror: no line between the copies sets x (only y), so the guard is the fix's made
    # twice; and a check whose body goes on (not a guard) done twice is done twice: both stop.
    stopped_saying(guarded_around(tmp_path, step, guard))


LOOP = (b"def run(x, y, scale, weight):\n    total = 0.0\n    for item in x:\n"
        b"        log_item(item)\n        check_item(item)\n    report(x)\n"
        b"    return finish(total)\n")
ACCUMULATE = b"total = total + scale * weight\n"


def test_the_fixs_line_each_round_of_a_loop_and_upstreams_after_it_keeps_both_first(tmp_path):
    # The fix adds to the total each round, upstream once after the loop: the same work only
    # where the loop runs one round. The stop's first advice, delete your copy, lost the fix's
    # rounds; now it says so and keeps both first, as the mirror (upstream's each round) does.
    fix = LOOP.replace(b"        check_item", b"        " + ACCUMULATE + b"        check_item")
    theirs = LOOP.replace(b"    report(x)\n", b"    report(x)\n    " + ACCUMULATE)
    err = stopped_saying(stack_with_file(tmp_path, "pkg/a.py", LOOP, fix, theirs))
    assert "upstream has these lines already, its own way; your copy runs each round of a " \
        "loop, upstream's once outside it: keep both" in err, err
    assert "delete your copy" not in err, err


def test_the_fixs_line_before_a_loop_and_upstreams_after_it_deletes_the_fixs_first(tmp_path):
    # The mirror: the fix's line before the loop runs once, as upstream's after it, and the
    # loop does not read the total: the fix made twice, delete your copy first as ever.
    fix = LOOP.replace(b"    for item", b"    " + ACCUMULATE + b"    for item")
    theirs = LOOP.replace(b"    report(x)\n", b"    report(x)\n    " + ACCUMULATE)
    err = stopped_saying(stack_with_file(tmp_path, "pkg/a.py", LOOP, fix, theirs))
    assert ": delete your copy of these lines in the worktree" in err, err


SHORT_LOOP = (b"def twice(x, y, n, m):\n    load(x)\n    for j in range(m):\n"
              b"        y[j] += x[j] * 2.0\n    store(y)\n    return y\n\n\n"
              b"def version():\n    return 1\n")


@pytest.mark.parametrize("line", [b"    x = x + n\n", b"    x.add_(n)\n", b"    x += n\n"],
                         ids=["set", "in-place", "augmented"])
def test_a_statement_above_a_loop_reading_it_and_upstreams_below_keeps_the_fixs_first(tmp_path,
                                                                                   line):
    # The fix adds n to x just above the loop that reads x; upstream adds it just below the
    # loop: the loop reads x + n with the fix's, x with upstream's. Done twice x gets n twice
    # (a stop), but its first advice, delete your copy, handed the loop x without n; now the
    # first way on keeps the fix's copy.
    fix = SHORT_LOOP.replace(b"    for j", line + b"    for j")
    theirs = SHORT_LOOP.replace(b"    store(y)", line + b"    store(y)")
    err = stopped_saying(stack_with_file(tmp_path, "pkg/k.py", SHORT_LOOP, fix, theirs))
    assert "a loop between the copies reads what it sets: keep yours and take upstream's " \
        "copy out" in err, err


SHORT_LOOP_CU = (b"#include <hip/hip_runtime.h>\n\n"
                 b"__global__ void twice(float* x, float* y, int n, int m) {\n"
                 b"    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    load(x, i);\n"
                 b"    for (int j = i; j < m; j += 32) {\n        y[j] += x[j] * 2.0f;\n    }\n"
                 b"    store(y, i);\n}\n\nint version() { return 1; }\n")


@pytest.mark.parametrize("line, first", [
    (b"    x[i] += n;\n", "a loop between the copies reads what it sets: keep yours and take "
     "upstream's copy out"),
    (b"    count += 1;\n", ": delete your copy of these lines in the worktree")],
    ids=["item-the-loop-reads", "count-the-loop-does-not-read"])
def test_a_c_statement_above_a_loop_and_upstreams_below_stops(tmp_path, line, first):
    # The C loop's closing brace made upstream's copy below it 4 lines from the fix's change,
    # past the 3 a short statement's copy was read within (the Python loop has no such line):
    # merged, x got n twice, exit 0. Now a brace alone is no line there: it stops, keep yours
    # first where the loop reads what the statement sets, delete yours where it does not.
    fix = SHORT_LOOP_CU.replace(b"    for (int j", line + b"    for (int j")
    theirs = SHORT_LOOP_CU.replace(b"    store(y", line + b"    store(y")
    err = stopped_saying(stack_with_file(tmp_path, "pkg/k.cu", SHORT_LOOP_CU, fix, theirs))
    assert first in err, err


def test_a_statement_above_a_loop_not_reading_it_deletes_the_fixs_first(tmp_path):
    # The mirror: the loop does not read `count`: one count either way, the fix made twice.
    line = b"    count += 1\n"
    fix = SHORT_LOOP.replace(b"    for j", line + b"    for j")
    theirs = SHORT_LOOP.replace(b"    store(y)", line + b"    store(y)")
    err = stopped_saying(stack_with_file(tmp_path, "pkg/k.py", SHORT_LOOP, fix, theirs))
    assert ": delete your copy of these lines in the worktree" in err, err


@pytest.mark.parametrize("lang, mine, theirs_body", [
    ("py", b"        w = x[j] / s\n        y[j] += w\n", b"        y[j] += x[j] * (1 / s)\n"),
    ("cu", b"        float w = x[j] / s;\n        y[j] += w;\n",
     b"        y[j] += x[j] * (1.0f / s);\n"),
    ("cu", b"        float w = s * (x[j] - t);\n        y[j] += w;\n",
     b"        y[j] += s * x[j] - s * t;\n"),
    ("py", b"        w = x[j] - s\n        y[j] += w\n",
     b"        y[j] += x[j]\n        y[j] += -s\n"),
    ("py", b"        w = x[j] / s / t\n        y[j] += w\n", b"        y[j] += x[j] / (s * t)\n"),
    ("py", b"        w = x[j] * s / t\n        y[j] += w\n", b"        y[j] += x[j] * (s / t)\n")],
    ids=["py-times-the-reciprocal", "cu-times-the-reciprocal", "cu-distributed",
         "py-split-in-two-updates", "py-divided-twice", "py-quotient-regrouped"])
def test_the_fixs_loop_through_the_same_value_in_other_algebra_stops(tmp_path, lang, mine,
                                                                     theirs_body):
    # Upstream's loop adds the value the fix's temporary holds, in other algebra than an order
    # of terms or factors (`x[j] * (1 / s)` for `x[j] / s`, `s * x[j] - s * t` for
    # `s * (x[j] - t)`, two updates for one). Read as syntax trees the forms differ, but that
    # is not shown other work (only a sum negated or a `/` swapped is): it stops, where it
    # moved and merged the loop in twice, exit 0.
    stack, _, _ = loops(tmp_path, lang, mine, theirs_body)
    stops_as_doubled(stack)



@pytest.mark.parametrize("lang, mine, theirs_body", [
    ("py", b"        w = x[j] - s\n        y[j] += w\n",
     b"        y[j] += x[j]\n        y[j] -= s\n"),
    ("cu", b"        float w = x[j] - s;\n        y[j] += w;\n",
     b"        y[j] -= s;\n        y[j] += x[j];\n"),
    ("py", b"        w = s - x[j]\n        y[j] -= w\n",
     b"        y[j] -= s\n        y[j] += x[j]\n"),
    ("py", b"        w = x[j] - s\n        y[j] += w\n",
     b"        y[j] = y[j] - s\n        y[j] += x[j]\n")],
    ids=["py-subtracting-last", "cu-subtracting-first", "py-subtracted-temporary",
         "py-added-to-itself-first"])
def test_the_fixs_loop_through_a_temporary_upstream_writes_as_two_updates_stops(
        tmp_path, lang, mine, theirs_body):
    # Upstream's loop adds the fix's temporary `x[j] - s` to y in two updates, one of them
    # subtracting (`y[j] -= s` and `y[j] += x[j]`, in either order): together they are the
    # fix's `y[j] += w`. No one update holds the whole value, and the `-` is upstream's only
    # inside `-=`: it moved, exit 0, and y got `x[j] - s` twice.
    stack, _, _ = loops(tmp_path, lang, mine, theirs_body)
    stops_as_doubled(stack)


@pytest.mark.parametrize("lang, mine, theirs_body", [
    ("py", b"        w = x[j] - s\n        y[j] += w\n",
     b"        y[j] -= s\n        y[j] += x[j] * 2\n"),
    ("cu", b"        float w = x[j] - s;\n        y[j] += w;\n",
     b"        y[j] -= s;\n        y[j] += x[j] * 2.0f;\n"),
    ("py", b"        w = x[j] - s\n        y[j] += w\n",
     b"        y[j] += s\n        y[j] -= x[j]\n"),
    ("py", b"        w = x[j] - s\n        y[j] += w\n",
     b"        y[j] -= s\n        y[j] *= t\n        y[j] += x[j]\n"),
    ("py", b"        w = x[j] - s\n        y[j] += w\n",
     b"        y[j] -= s\n        t[j] += x[j]\n")],
    ids=["py-twice-the-item", "cu-twice-the-item", "py-the-value-turned",
         "py-scaled-between", "py-another-target"])
def test_the_fixs_loop_beside_two_updates_of_other_work_moves(tmp_path, lang, mine,
                                                              theirs_body):
    # The mirror: upstream's two updates add another value (`x[j] * 2 - s`, `s - x[j]`), or
    # y is scaled between them, or the second adds to another item: other work, both wanted.
    # A stop here would advise first to delete the fix's copy, losing its loop.
    stack, path, check = loops(tmp_path, lang, mine, theirs_body)
    moves(stack)
    stack.cli("overlays")
    made = (stack.root / f"overlays/up/{path}").read_bytes()
    assert made.count(check) == 2 and made.count(mine.split(b"\n")[1]) == 1, made.decode()
    assert made.count(theirs_body) == 1, made.decode()


@pytest.mark.parametrize("lang, mine, theirs_body", [
    ("py", b"        w = x[j] - s\n        y[j] += w\n",
     b"        if t:\n            y[j] -= s\n        else:\n            y[j] += x[j]\n"),
    ("cu", b"        float w = x[j] - s;\n        y[j] += w;\n",
     b"        if (t > 0) {\n            y[j] -= s;\n        } else {\n            y[j] += x[j];\n"
     b"        }\n"),
    ("py", b"        w = x[j] - s\n        y[j] += w\n",
     b"        y[j] += x[j]\n        if t:\n            y[j] -= s\n"),
    ("cu", b"        float w = x[j] - s;\n        y[j] += w;\n",
     b"        y[j] += x[j];\n        if (t > 0) y[j] -= s;\n"),
    ("py", b"        w = x[j] - s\n        y[j] += w\n",
     b"        y[j] -= s\n        y[j] += x[j]\n        y[j] += x[j]\n"),
    ("py", b"        w = x[j] - s\n        y[j] += w\n",
     b"        y[j] -= s\n        y[j] += y[j]\n        y[j] += x[j]\n")],
    ids=["py-if-else", "cu-if-else", "py-one-conditional", "cu-one-conditional",
         "py-twice-x-in-three-updates", "py-added-to-itself-between"])
def test_the_fixs_loop_beside_updates_on_branches_or_adding_more_moves(tmp_path, lang, mine,
                                                                        theirs_body):
    # Upstream's updates of y run on different paths (`if t: y[j] -= s` / `else: y[j] +=
    # x[j]`, one of them under an `if`), or add more than the fix's value together (`x[j]`
    # twice; `y[j] += y[j]` doubling y between): no path adds `x[j] - s` once. Other work,
    # both wanted: it stopped, its first advice, delete your copy, losing the fix's loop.
    stack, path, check = loops(tmp_path, lang, mine, theirs_body)
    moves(stack)
    stack.cli("overlays")
    made = (stack.root / f"overlays/up/{path}").read_bytes()
    assert made.count(check) == 2 and made.count(mine.split(b"\n")[1]) == 1, made.decode()
    assert made.count(theirs_body) == 1, made.decode()


@pytest.mark.parametrize("lang, mine, theirs_body", [
    ("py", b"        w = x[j] - s\n        y[j] += w\n",
     b"        y[j] += x[j]\n        y[j] += t\n        y[j] -= s\n        y[j] -= t\n"),
    ("cu", b"        float w = x[j] - s;\n        y[j] += w;\n",
     b"        if (j == 0) continue;\n        y[j] -= s;\n        y[j] += x[j];\n")],
    ids=["py-a-term-added-and-taken-away", "cu-after-a-check-leaving-the-round"])
def test_the_fixs_loop_through_updates_summing_to_its_value_on_one_path_stops(
        tmp_path, lang, mine, theirs_body):
    # Mirror: the updates all run on one path (after a check that leaves the round, not
    # inside a branch) and together add the fix's `x[j] - s`, no more: made twice, a stop.
    stack, _, _ = loops(tmp_path, lang, mine, theirs_body)
    stops_as_doubled(stack)
