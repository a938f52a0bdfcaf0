"""A name set again between the fix's copy of its lines and upstream's copy a line or two
lower: is the second copy the fix made twice, or a check (or update) of another value? Only
steps that lay the same value out anew (`x.contiguous()`, `x.to(d).float()`, `x.T`, a view or a
reshape: the same elements, so the same emptiness and count) keep what the copies read; any
other method or attribute (`s.strip()`, which may empty s, `node.next_node()`, which reaches
another node) makes a new value, and both copies are wanted. Before, every method of the
name's own read as the same value (a stop whose first advice, delete your copy, lost the fix's
check) and every attribute as a new one (`x = x.T`: the guard merged in twice, exit 0). An
in-place update (`y.add_(bias)`) counts as a guard does at any length: made twice, the bias is
added twice. Real git upstreams, real commands."""
from __future__ import annotations

import pytest

from helpers.project import OneUpstreamStack


def module(body: bytes) -> bytes:
    return b'"""Kernels."""\n\n\n' + body + b"\n\ndef other(y):\n    return y\n"


def stack_with(tmp_path, base: bytes, fix: bytes, upstream: bytes) -> OneUpstreamStack:
    """Fix `fa` makes pkg/a.py `fix` from `base`; upstream makes it `upstream` at v2."""
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": base, "pkg/b.py": b"b = 1\n"})
    stack.add_fix("fa", "pkg/a.py", base, fix)
    stack.commit({"pkg/a.py": upstream}, "Guard the kernel", tag="v2")
    return stack


def moves_with_both(stack: OneUpstreamStack, lines: bytes) -> None:
    """status says the fix moves, the rebase moves it, and the overlay has both copies."""
    status = stack.json("status", "--against", "v2", expect=None)
    assert [p["rebase"] for p in status["patches"]] == ["move"], status["patches"]
    summary = stack.rebase_json("--to", "v2")
    assert [p["action"] for p in summary["patches"]] in (["clean"], ["offset"], ["merged"]), \
        summary["patches"]
    stack.cli("overlays")
    assert (stack.root / "overlays/up/pkg/a.py").read_bytes().count(lines) == 2


def stops(stack: OneUpstreamStack) -> None:
    """status says conflict, and the rebase stops (exit 3) as upstream having the lines."""
    status = stack.json("status", "--against", "v2", expect=1)
    assert [p["state"] for p in status["patches"]] == ["conflict"], status["patches"]
    _, _, err = stack.cli("rebase", "--to", "v2", expect=3)
    assert "upstream has these lines already, its own way" in err, err


def guarded_twice(tmp_path, name: bytes, step: bytes, guard: bytes) -> OneUpstreamStack:
    """`run(NAME)` reads NAME, sets it by `step`, and reads it again; the fix adds `guard`
    at the top, upstream adds it after the step."""
    base = module(b"def run(%s):\n    first = prepare(%s)\n%s    return finish(first, %s)\n"
                  % (name, name, step, name))
    return stack_with(tmp_path, base, base.replace(b"    first", guard + b"    first"),
                      base.replace(step, step + guard))


@pytest.mark.parametrize("step", [b"    s = s.strip()\n", b"    s = s.next_node()\n",
                                  b"    s = s.next\n", b"    s = s[1:]\n"],
                         ids=["strip", "next_node", "next", "slice"])
def test_a_step_to_a_new_value_between_the_copies_is_another_check(tmp_path, step):
    # strip() may empty s and next_node() reach the end: the guard after it checks what the
    # fix's before it did not. They stopped as doubled (strip, next_node), the advice losing
    # the fix's first check.
    guard = b"    if not s:\n        return None\n"
    moves_with_both(guarded_twice(tmp_path, b"s", step, guard), b"if not s:")


@pytest.mark.parametrize("step", [b"    x = x.T\n", b"    x = x.view(-1, 4).contiguous()\n",
                                  b"    x = x.to(device=x.device).T\n",
                                  b"    x = x.contiguous()  # dense\n"],
                         ids=["T", "view", "to-T", "commented"])
def test_the_same_value_laid_out_anew_between_the_copies_stops(tmp_path, step):
    # `x = x.T` is the same tensor transposed: its count, which the guard checks, is the
    # same; the guard merged in twice, exit 0.
    guard = b"    if x.numel() == 0:\n        return x\n"
    stops(guarded_twice(tmp_path, b"x", step, guard))


def test_an_in_place_update_upstream_made_after_a_transpose_stops(tmp_path):
    # The fix adds the bias once y is made; upstream adds it after `y = y.T`, the same
    # tensor: merged, the bias was added twice, exit 0.
    base = module(b"def run(x, bias):\n    y = prepare(x)\n    y = y.T\n    return launch(y)\n")
    stops(stack_with(tmp_path, base,
                     base.replace(b"    y = prepare(x)\n", b"    y = prepare(x)\n    y.add_(bias)\n"),
                     base.replace(b"    y = y.T\n", b"    y = y.T\n    y.add_(bias)\n")))


def test_an_in_place_update_after_a_new_value_or_in_another_function_moves(tmp_path):
    # Neighbours: upstream's add after `y = widen(y)` updates another tensor, and the same
    # line in the next function is that function's: the fix moves, both kept.
    base = module(b"def run(x, bias):\n    y = prepare(x)\n    y = widen(y)\n"
                  b"    return launch(y)\n\n\ndef run2(y, bias):\n    y = widen(y)\n"
                  b"    return launch(y)\n")
    fix = base.replace(b"    y = prepare(x)\n", b"    y = prepare(x)\n    y.add_(bias)\n")
    for n, upstream in enumerate((base.replace(b"    y = widen(y)\n    return launch(y)\n\n\n"
                                               b"def run2",
                                               b"    y = widen(y)\n    y.add_(bias)\n"
                                               b"    return launch(y)\n\n\ndef run2"),
                                  base.replace(b"bias):\n    y = widen(y)\n",
                                               b"bias):\n    y = widen(y)\n    y.add_(bias)\n"))):
        stack = stack_with(tmp_path / str(n), base, fix, upstream)
        moves_with_both(stack, b"y.add_(bias)")


@pytest.mark.parametrize("guard", [b"    if x.size(0) == 0:\n        return x\n",
                                   b"    if x.shape[0] == 0:\n        return x\n",
                                   b"    if not x.is_contiguous():\n        x = x.contiguous()\n"],
                         ids=["size0", "shape0", "contiguous"])
def test_a_transpose_before_a_guard_on_the_layout_is_another_check(tmp_path, guard):
    # `x = x.T` keeps the count but swaps the sizes and strides: a guard on x.size(0) or on
    # x.is_contiguous() after it checks another dimension, another layout. It stopped as
    # doubled, and the advice (delete your copy) dropped the fix's check of the untransposed x.
    moves_with_both(guarded_twice(tmp_path, b"x", b"    x = x.T\n", guard),
                    guard.splitlines()[0].strip())


@pytest.mark.parametrize("step, guard", [
    (b"    x = x.float()\n", b"    if x.size(0) == 0:\n        return x\n"),
    (b"    x = x.contiguous()\n", b"    if x.size(0) == 0:\n        return x\n"),
    (b"    x = x.T\n", b"    if x.dim() != 2:\n        return x\n")],
    ids=["float-size0", "contiguous-size0", "T-dim"])
def test_a_step_keeping_the_layout_before_a_guard_on_it_stops(tmp_path, step, guard):
    # Neighbours: `x = x.float()` and `x = x.contiguous()` keep the sizes a guard on
    # x.size(0) reads, a transpose the number of dimensions: the fix made twice.
    stops(guarded_twice(tmp_path, b"x", step, guard))


@pytest.mark.parametrize("step, guard", [
    (b"    x = x.float()\n", b"    if x.dtype == torch.float16:\n        return x\n"),
    (b"    x = x.half()\n", b"    if not x.is_floating_point():\n        return x\n"),
    (b"    x = x.to(torch.float16)\n", b"    if x.dtype != torch.float16:\n        return x\n"),
    (b"    x = x.cuda()\n", b"    if not x.is_cuda:\n        return x\n"),
    (b"    x = x.to(device)\n", b"    if x.device != device:\n        return x\n"),
    (b"    x = x.to(other)\n", b"    if x.dtype == torch.float16:\n        return x\n"),
    (b"    x = x.detach()\n", b"    if x.requires_grad:\n        return x\n")],
    ids=["float-dtype", "half-floating", "to-dtype", "cuda-is_cuda", "to-device", "to-other",
         "detach-grad"])
def test_a_step_changing_the_kind_a_guard_reads_is_another_check(tmp_path, step, guard):
    # `x = x.float()` gives x another dtype, `x.cuda()` another device, `x.detach()` a tensor
    # needing no grad: the guard after it reads another answer than the fix's before it. It
    # stopped as doubled, and the first advice, delete your copy, left the input unchecked.
    moves_with_both(guarded_twice(tmp_path, b"x", step, guard), guard.splitlines()[0].strip())


@pytest.mark.parametrize("step, guard", [
    (b"    x = x.to(device)\n", b"    if x.dtype == torch.float16:\n        return x\n"),
    (b"    x = x.float()\n", b"    if not x.is_cuda:\n        return x\n"),
    (b"    x = x.contiguous()\n", b"    if x.dtype == torch.float16:\n        return x\n"),
    (b"    x = x.to(torch.float16)\n", b"    if x.device != device:\n        return x\n")],
    ids=["to-device-dtype", "float-is_cuda", "contiguous-dtype", "to-dtype-device"])
def test_a_step_keeping_the_kind_a_guard_reads_stops(tmp_path, step, guard):
    # Neighbours: moving x to a device keeps its dtype, a cast keeps its device: the same
    # check twice, the fix made twice.
    stops(guarded_twice(tmp_path, b"x", step, guard))


def test_an_in_place_update_reading_its_targets_dtype_after_a_cast_stops(tmp_path):
    # The bias cast to y's dtype is added to what `y = y.float()` carried over: made twice,
    # added twice, whatever dtype the second reads.
    bias = b"    y.add_(bias.to(y.dtype))\n"
    base = module(b"def run(x, bias):\n    y = prepare(x)\n    y = y.float()\n"
                  b"    return launch(y)\n")
    stops(stack_with(tmp_path, base,
                     base.replace(b"    y = prepare(x)\n", b"    y = prepare(x)\n" + bias),
                     base.replace(b"    y = y.float()\n", b"    y = y.float()\n" + bias)))


@pytest.mark.parametrize("line, step", [
    (b"    y.add_(bias.to(x.dtype))\n", b"    x = x.half()\n"),
    (b"    y.add_(bias.to(x.device))\n", b"    x = x.cuda()\n"),
    (b"    y.mul_(scale.to(x.dtype))\n", b"    x = x.float()\n"),
    (b"    y += bias.to(x.device)\n", b"    x = x.cuda()\n"),
    (b"    y = y * scale.to(y.dtype)\n", b"    y = y.float()\n")],
    ids=["add-other-dtype", "add-other-device", "mul-other-dtype", "augmented-device",
         "scaled-own-dtype"])
def test_an_update_reading_a_kind_a_step_between_changes_stops(tmp_path, line, step):
    # A cast or a move to a device gives another answer only to a guard on what it changes:
    # `y.add_(bias.to(x.dtype))` after `x = x.half()` still adds the bias to y, made twice it
    # adds it twice. It moved, and the overlay added the bias twice, exit 0, no word.
    base = module(b"def run(x, bias, scale):\n    y = prepare(x)\n%s    return launch(x, y)\n"
                  % step)
    stops(stack_with(tmp_path, base,
                     base.replace(b"    y = prepare(x)\n", b"    y = prepare(x)\n" + line),
                     base.replace(step, step + line)))


@pytest.mark.parametrize("line, step", [
    (b"    y.add_(bias.view(x.shape))\n", b"    x = x.t()\n"),
    (b"    y = y + bias.reshape(x.shape)\n", b"    x = x.t()\n"),
    (b"    out.copy_(x.view(x.size(0), -1))\n", b"    x = x.view(-1, 4)\n"),
    (b"    y.add_(bias[: len(x)])\n", b"    x = x.reshape(-1)\n")],
    ids=["add-view-shape", "plus-reshape-shape", "copy-view-size", "add-slice-len"])
def test_an_update_reading_a_layout_a_step_between_changes_stops(tmp_path, line, step):
    # A transpose, a view or a reshape gives another answer only to a guard on the layout:
    # `y.add_(bias.view(x.shape))` after `x = x.t()` still adds the bias to y, made twice it
    # adds it twice. It moved, and the overlay added the bias twice, exit 0, no word.
    base = module(b"def run(x, bias, out):\n    y = prepare(x)\n%s    return launch(x, y, out)\n"
                  % step)
    stops(stack_with(tmp_path, base,
                     base.replace(b"    y = prepare(x)\n", b"    y = prepare(x)\n" + line),
                     base.replace(step, step + line)))


@pytest.mark.parametrize("step, guard", [
    (b"    x = x.T\n", b"    if 0 in x.shape:\n        return x\n"),
    (b"    x = x.permute(1, 0)\n", b"    if 0 in x.size():\n        return x\n"),
    (b"    x = x.T\n", b"    if x.size(0) == 0 or x.size(1) == 0:\n        return x\n"),
    (b"    x = x.t()\n", b"    if x.shape[0] * x.shape[1] == 0:\n        return x\n"),
    (b"    x = x.T\n", b"    if x.size(0) == x.size(1):\n        return x\n"),
    (b"    x = x.T\n", b"    if min(x.shape) == 0:\n        return x\n"),
    (b"    x = x.permute(1, 0)\n", b"    if x.shape == (0, 0):\n        return x\n")],
    ids=["T-in-shape", "permute-in-size", "T-or-sizes", "t-product", "T-sizes-equal", "T-min",
         "permute-shape-tuple"])
def test_a_transpose_before_a_guard_reading_the_sizes_alike_stops(tmp_path, step, guard):
    # A transpose reorders the sizes and keeps them: a guard reading the whole shape, or sizes
    # 0 and 1 alike (`x.size(0) == x.size(1)`, `min(x.shape)`, `x.shape == (0, 0)`), checks
    # the same after it: the fix made twice. It moved, and the file held the guard twice, exit 0.
    stops(guarded_twice(tmp_path, b"x", step, guard))


@pytest.mark.parametrize("step, guard", [
    (b"    x = x.view(-1, 4)\n", b"    if 0 in x.shape:\n        return x\n"),
    (b"    x = x.reshape(4, -1)\n", b"    if x.size(0) == 0 or x.size(1) == 0:\n        return x\n"),
    (b"    x = x.transpose(1, 2)\n", b"    if x.size(0) == 0 or x.size(1) == 0:\n        return x\n"),
    (b"    x = x.T\n", b"    if x.size(0) == 0 or x.size(1) > 1:\n        return x\n"),
    (b"    x = x.T\n", b"    if x.size(0) < x.size(1):\n        return x\n"),
    (b"    x = x.T\n", b"    if x.shape == (0, 1):\n        return x\n"),
    (b"    x = x.transpose(1, 2)\n", b"    if x.size(0) == x.size(1):\n        return x\n")],
    ids=["view-in-shape", "reshape-or-sizes", "transpose12-or-sizes", "T-unlike-sizes",
         "T-sizes-ordered", "T-shape-unlike", "transpose12-sizes-equal"])
def test_a_step_giving_other_sizes_before_a_guard_reading_them_alike_moves(tmp_path, step, guard):
    # Neighbours: a view or a reshape gives other sizes, a transpose of dimensions 1 and 2
    # moves another size to place 1, and a guard comparing sizes 0 and 1 unlike reads another
    # answer after a transpose: another check, both kept.
    moves_with_both(guarded_twice(tmp_path, b"x", step, guard), guard.splitlines()[0].strip())


@pytest.mark.parametrize("between", [b"    save(out)\n", b"    out.mul_(2)\n",
                                     b"    out[0] = 1\n"], ids=["call", "in-place", "item"])
def test_a_reset_with_its_target_used_between_the_copies_moves(tmp_path, between):
    # The fix zeroes out before the first accumulate, upstream before the second: with out
    # used between them (accumulate, save, an in-place update, an item set), each zeroing
    # serves another use, and both are wanted. It stopped as doubled, and the advice (delete
    # your copy) had the first accumulate sum into stale data.
    base = module(b"def run(a, b, out):\n    accumulate(out, a)\n" + between +
                  b"    accumulate(out, b)\n    return out\n")
    fix = base.replace(b"    accumulate(out, a)\n", b"    out.zero_()\n    accumulate(out, a)\n")
    theirs = base.replace(b"    accumulate(out, b)\n", b"    out.zero_()\n    accumulate(out, b)\n")
    moves_with_both(stack_with(tmp_path, base, fix, theirs), b"out.zero_()")


def test_a_reset_with_only_other_names_between_stops(tmp_path):
    # Neighbour: the lines between the copies name no out: the fix made twice, out zeroed
    # twice in a row.
    base = module(b"def run(a, b, out):\n    w = prepare(a)\n    log(w, b)\n"
                  b"    accumulate(out, w)\n    return out\n")
    fix = base.replace(b"    w = prepare(a)\n", b"    out.zero_()\n    w = prepare(a)\n")
    theirs = base.replace(b"    accumulate(out, w)\n", b"    out.zero_()\n    accumulate(out, w)\n")
    stops(stack_with(tmp_path, base, fix, theirs))


def test_an_update_adding_to_its_target_with_a_call_taking_it_between_stops(tmp_path):
    # Neighbour: `y.add_(bias)` adds to what y holds: made twice, the bias is added twice,
    # whatever call reads y between the copies.
    base = module(b"def run(x, bias):\n    y = prepare(x)\n    save(y)\n    return launch(y)\n")
    fix = base.replace(b"    y = prepare(x)\n", b"    y = prepare(x)\n    y.add_(bias)\n")
    stops(stack_with(tmp_path, base, fix,
                     base.replace(b"    save(y)\n", b"    save(y)\n    y.add_(bias)\n")))


@pytest.mark.parametrize("step, guard", [
    (b"    x = x.to_kernel_layout()\n", b"    if x.numel() == 0:\n        return x\n"),
    (b"    x = x.float() * scale\n", b"    if x.numel() == 0:\n        return x\n"),
    (b"    x = x.to_kernel_layout()\n", b"    if x.size(0) == 0:\n        return x\n"),
    (b"    x = x * 2\n", b"    if x.dim() != 2:\n        return x\n"),
    (b"    x = x.view(-1) * 2\n", b"    if x.numel() == 0:\n        return x\n")],
    ids=["own-method-numel", "float-times-scale", "own-method-size0", "times-two-dim",
         "view-times-two-numel"])
def test_a_step_that_may_keep_a_tensor_before_a_guard_on_it_stops(tmp_path, step, guard):
    # A method of the project's own (`to_kernel_layout()`) may keep what the guard reads, as
    # may arithmetic on the same tensor (`x.float() * scale`): not known either way, the
    # rebase stops with both ways on (delete your copy, or keep yours) where it moved, and the
    # file held the guard twice, exit 0.
    stops(guarded_twice(tmp_path, b"x", step, guard))


@pytest.mark.parametrize("step, guard", [
    (b"    x = x.sum(0)\n", b"    if x.numel() == 0:\n        return x\n"),
    (b"    x = x.float() @ w\n", b"    if x.numel() == 0:\n        return x\n"),
    (b"    x = x.T * scale\n", b"    if x.size(0) == 0:\n        return x\n"),
    (b"    x = x.to_kernel_layout()\n", b"    if not x:\n        return x\n"),
    (b"    x = first.to_kernel_layout()\n", b"    if x.numel() == 0:\n        return x\n"),
    (b"    x = x.weight * 2\n", b"    if x.numel() == 0:\n        return x\n")],
    ids=["sum-numel", "matmul-numel", "T-times-size0", "own-method-truth", "other-name",
         "own-attribute"])
def test_a_step_known_to_change_a_tensor_or_a_guard_on_no_tensor_moves(tmp_path, step, guard):
    # Neighbours: a reduction and a matrix product give another count, a transpose other
    # sizes, another name's layout or an attribute of x another tensor; and a guard reading no
    # tensor accessor (`if not x:`) after a method of the project's own checks a new value, as
    # `s.strip()` does: both kept.
    moves_with_both(guarded_twice(tmp_path, b"x", step, guard), guard.splitlines()[0].strip())


LOOPS = (b'"""Kernels."""\n\n\ndef run(a, b, y, bias):\n    for x in a:\n        use(x)\n'
         b"        keep(x)\n    for z in b:\n        use(z)\n    return y\n")


def test_an_in_place_update_in_another_loop_moves(tmp_path):
    # The fix adds the bias in the first loop's body, upstream in the next loop's, two lines
    # lower: each loop's own update, both wanted. It stopped as doubled, its first advice
    # (delete your copy) leaving the first loop without its update.
    fix = LOOPS.replace(b"        use(x)\n", b"        use(x)\n        y.add_(bias)\n")
    upstream = LOOPS.replace(b"        use(z)\n", b"        use(z)\n        y.add_(bias)\n")
    moves_with_both(stack_with(tmp_path, LOOPS, fix, upstream), b"y.add_(bias)")


def test_an_in_place_update_in_the_same_loop_stops(tmp_path):
    # Neighbour: both copies in the one loop's body: the bias added twice a round.
    fix = LOOPS.replace(b"        use(x)\n", b"        use(x)\n        y.add_(bias)\n")
    upstream = LOOPS.replace(b"        keep(x)\n", b"        keep(x)\n        y.add_(bias)\n")
    stops(stack_with(tmp_path, LOOPS, fix, upstream))


BREAKS_OUT = (b'"""Kernels."""\n\n\ndef run(a, y, bias):\n    n = 0\n    while True:\n'
              b"        ok = step(a)\n        if ok:\n            break\n    return n, y\n")


@pytest.mark.parametrize("line", [b"y.add_(bias)", b"n += 1"])
def test_a_copy_before_a_loops_break_and_the_fixs_after_the_loop_stops(tmp_path, line):
    # Upstream's copy right before the `break` runs once, as the fix's right after the loop
    # does: made twice (the bias added twice, the count stepped twice). Read as each loop's
    # own, it moved with both, silently.
    fix = BREAKS_OUT.replace(b"            break\n", b"            break\n    %s\n" % line)
    upstream = BREAKS_OUT.replace(b"            break\n",
                                  b"            %s\n            break\n" % line)
    stops(stack_with(tmp_path, BREAKS_OUT, fix, upstream))


def test_a_copy_before_an_inner_loops_break_and_the_fixs_after_the_outer_loop_moves(tmp_path):
    # Neighbour: the loop broken out of is inside another loop the fix's copy is after:
    # upstream's runs once a round of the outer loop, the fix's once: both wanted.
    base = (b'"""Kernels."""\n\n\ndef run(a, y, bias):\n    for x in a:\n        while True:\n'
            b"            ok = step(x)\n            if ok:\n                break\n    return y\n")
    fix = base.replace(b"    return y\n", b"    y.add_(bias)\n    return y\n")
    upstream = base.replace(b"                break\n",
                            b"                y.add_(bias)\n                break\n")
    moves_with_both(stack_with(tmp_path, base, fix, upstream), b"y.add_(bias)")


@pytest.mark.parametrize("line, step, want", [
    (b"    y = y.to(x.dtype)\n", b"    x = x.half()\n", "move"),
    (b"    y = y.to(x.device)\n", b"    x = x.cuda()\n", "move"),
    (b"    y = y.to(x.dtype)\n", b"    x = x.contiguous()\n", "stop"),
    (b"    y.add_(bias.to(x.dtype))\n", b"    x = x.half()\n", "stop")],
    ids=["converted-to-other-dtype", "converted-to-other-device", "step-keeping-the-kind",
         "in-place-update"])
def test_a_conversion_to_a_kind_a_step_between_changes_moves(tmp_path, line, step, want):
    # `y = y.to(x.dtype)` makes y of x's kind: upstream's before `x = x.half()` makes y float,
    # the fix's after it half, to match the x it is launched with; both wanted. It stopped, its
    # first advice (delete your copy) leaving y float beside a half x. A step keeping x's
    # dtype between, or an in-place update adding whatever kind it reads, stops.
    base = module(b"def run(x, y, bias):\n    y = prepare(y)\n%s    return launch(x, y)\n"
                  % step)
    stack = stack_with(tmp_path, base, base.replace(step, step + line),
                       base.replace(b"    y = prepare(y)\n", b"    y = prepare(y)\n" + line))
    if want == "stop":
        stops(stack)
        return
    moves_with_both(stack, line.strip())


@pytest.mark.parametrize("step, want", [
    (b"    x = x.t()\n", "stop"), (b"    x = x.transpose(0, 1)\n", "stop"),
    (b"    x = x.sum(0)\n", "move"), (b"    x = pick(x)\n", "move")],
    ids=["t", "transpose", "reduced", "another-value"])
def test_an_update_under_an_if_on_the_layout_after_a_transpose(tmp_path, step, want):
    # `if x.size(0) > 1: y.add_(bias)` is no guard: it adds the bias, and after `x = x.t()`
    # (the same elements laid out otherwise) upstream's copy adds it again wherever both
    # sizes are over 1. Read as a check of another answer, it moved, the bias added twice,
    # exit 0. A reduction or another value between is other work: both kept.
    line = b"    if x.size(0) > 1:\n        y.add_(bias)\n"
    base = module(b"def run(x, bias):\n    y = prepare(x)\n%s    return launch(x, y)\n" % step)
    stack = stack_with(tmp_path, base,
                       base.replace(b"    y = prepare(x)\n", b"    y = prepare(x)\n" + line),
                       base.replace(step, step + line))
    if want == "stop":
        stops(stack)
        return
    moves_with_both(stack, b"y.add_(bias)")
