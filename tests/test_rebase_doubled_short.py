"""A short statement the fix adds that upstream added too, its own way, within the fix's hunk:
a counter stepped (`count += 1`), a call made for what it does (`seen.append(name)`), a name set
from itself (`y = y.contiguous()`). Shorter than the 24 characters of code a run needs to say
anything, it was never read: `status` said the fix moves, the rebase merged the line in twice
(on the fast path the counter stepped twice), exit 0, as a plain 3-way merge does. Now the copy
stops as upstream's own way, where upstream added it within the fix's hunk (3 lines of the
change, its context) in the fix's function. The neighbours move, both kept: the same line
further off, another value, another function, a line setting a name from other names (`n = 0`:
twice is harmless), and a line between the copies that sets a name the statement reads.
Real git upstreams, real commands."""
from __future__ import annotations

import pytest

from helpers.project import OneUpstreamStack


def module(body: bytes) -> bytes:
    return (b'"""Kernels."""\n\n\nclass Lin:\n    def run(self, x, fast, seen, name):\n' + body +
            b"\n\ndef other(y):\n    return y\n")


BODY = (b"        y = matmul(x, self.weight)\n"
        b"        if fast:\n"
        b"            y = fuse(y)\n"
        b"            return y\n"
        b"        return finish(y)\n")
TOP = b"        y = matmul(x, self.weight)\n"
FAST = b"        if fast:\n"


def stack_with(tmp_path, base: bytes, fix: bytes, upstream: bytes) -> OneUpstreamStack:
    """Fix `fa` makes pkg/a.py `fix` from `base`; upstream makes it `upstream` at v2."""
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": base, "pkg/b.py": b"b = 1\n"})
    stack.add_fix("fa", "pkg/a.py", base, fix)
    stack.commit({"pkg/a.py": upstream}, "Count the calls", tag="v2")
    return stack


def stops(stack: OneUpstreamStack) -> None:
    """status says conflict, and the rebase stops (exit 3) as upstream having the lines."""
    status = stack.json("status", "--against", "v2", expect=1)
    assert [p["state"] for p in status["patches"]] == ["conflict"], status["patches"]
    _, _, err = stack.cli("rebase", "--to", "v2", expect=3)
    assert "upstream has these lines already, its own way" in err, err


def moves_with_both(stack: OneUpstreamStack, line: bytes) -> None:
    """status says the fix moves, the rebase moves it, and the overlay has both copies."""
    status = stack.json("status", "--against", "v2", expect=None)
    assert [p["rebase"] for p in status["patches"]] == ["move"], status["patches"]
    summary = stack.rebase_json("--to", "v2")
    assert [p["action"] for p in summary["patches"]] in (["clean"], ["offset"], ["merged"]), \
        summary["patches"]
    stack.cli("overlays")
    assert (stack.root / "overlays/up/pkg/a.py").read_bytes().count(line) == 2


def moved_quietly(stack: OneUpstreamStack, path: str) -> bytes:
    """status says the fix moves, the rebase onto v2 moves it (exit 0) and the overlays are
    written: the overlay of `path`, for the caller to count the copies in."""
    status = stack.json("status", "--against", "v2", expect=None)
    assert [p["rebase"] for p in status["patches"]] == ["move"], status["patches"]
    stack.cli("rebase", "--to", "v2")
    stack.cli("overlays")
    return (stack.root / "overlays/up" / path).read_bytes()


# What a stop whose first way on keeps the fix's copy says of the two copies' paths.
FEWER = "upstream's copy runs on only some of the paths through yours"
READ_BETWEEN = "a loop between the copies reads what it sets"
READ_IN_A_SWITCH = "a switch between the copies reads what it sets"
READ_IN_AN_IF = "an if between the copies reads what it sets on some paths"


def stops_again(stack: OneUpstreamStack) -> str:
    """stops(stack); then, the rebase aborted, the rebase stopping again: its error output."""
    stops(stack)
    stack.cli("rebase", "--abort")
    return stack.cli("rebase", "--to", "v2", expect=3)[2]


def stops_keeping_yours_first(stack: OneUpstreamStack, clause: str = FEWER,
                              said: str = "") -> None:
    """The rebase stops (stops_again) saying `clause` of the copies, its first way on keeping
    the fix's copy and taking upstream's out; `said`, where given, is said before it."""
    err = stops_again(stack)
    assert f"{said}its own way; {clause}: keep yours and take upstream's copy out" in err, err


def stops_deleting_yours_first(stack: OneUpstreamStack) -> None:
    """The rebase stops (stops_again), its first way on deleting the fix's copy (upstream's
    runs on every path through it)."""
    err = stops_again(stack)
    assert "only some of the paths" not in err, err
    assert err.split("its own way", 1)[1].startswith(": delete your copy"), err


def step_of(path: str) -> bytes:
    """`y += 1`, in C with its semicolon."""
    return b"y += 1;" if path.endswith(".cu") else b"y += 1"


STATEMENTS = [b"count += 1", b"seen.append(name)", b"y = y.contiguous()"]


@pytest.mark.parametrize("statement", STATEMENTS, ids=["counter", "call", "self-set"])
def test_a_short_statement_upstream_added_in_the_fast_branch_stops(tmp_path, statement):
    # The fix steps the counter once y is made; upstream steps it first thing on the fast
    # path, two lines lower: merged, the fast path stepped it twice, exit 0.
    base = module(BODY)
    fix = base.replace(TOP, TOP + b"        " + statement + b"\n")
    theirs = base.replace(FAST, FAST + b"            " + statement + b"\n")
    stops(stack_with(tmp_path, base, fix, theirs))


@pytest.mark.parametrize("statement", STATEMENTS, ids=["counter", "call", "self-set"])
def test_a_short_statement_upstream_added_a_line_lower_stops(tmp_path, statement):
    # No branch between: upstream's copy one line lower, past a line that sets another name.
    base = module(BODY.replace(TOP, TOP + b"        z = prep(x)\n"))
    fix = base.replace(TOP, TOP + b"        " + statement + b"\n")
    theirs = base.replace(b"        z = prep(x)\n",
                          b"        z = prep(x)\n        " + statement + b"\n")
    stops(stack_with(tmp_path, base, fix, theirs))


FURTHER = (b"        y = norm(y)\n        y = scale(y)\n        y = clip(y)\n"
           b"        return finish(y)\n")


def test_a_short_statement_upstream_added_further_off_moves(tmp_path):
    # Neighbour: eleven lines lower, past the fix's hunk and the 10 lines a copy is read
    # within, a short line is as often another step that reads alike: the fix moves, both
    # kept.
    body = BODY.replace(b"        return finish(y)\n", FURTHER.replace(
        b"        y = clip(y)\n", b"        y = clip(y)\n        y = pad(y)\n"
        b"        y = cast(y)\n        y = drop(y)\n"))
    base = module(body)
    fix = base.replace(TOP, b"        count += 1\n" + TOP)
    theirs = base.replace(b"        y = drop(y)\n", b"        y = drop(y)\n        count += 1\n")
    moves_with_both(stack_with(tmp_path, base, fix, theirs), b"count += 1")


def test_a_short_statement_upstream_added_past_the_fast_branch_keeps_yours_first(tmp_path):
    # Eight lines lower, past the fast branch that returns and naming nothing of the count's,
    # upstream's copy runs on every path that goes on (the slow one), where the count got 1
    # twice: it moved, exit 0. Now it stops, keep yours first (the fast path runs the fix's
    # copy alone).
    base = module(BODY.replace(b"        return finish(y)\n", FURTHER))
    fix = base.replace(TOP, b"        count += 1\n" + TOP)
    theirs = base.replace(b"        y = clip(y)\n", b"        y = clip(y)\n        count += 1\n")
    stack = stack_with(tmp_path, base, fix, theirs)
    stops_keeping_yours_first(stack)


@pytest.mark.parametrize("mine, theirs", [
    (b"count += 1", b"count += 2"),
    (b"seen.append(name)", b"seen.append(x)"),
    (b"n = 0", b"n = 0")], ids=["other-step", "other-item", "set-from-other-names"])
def test_another_value_or_a_plain_setting_moves(tmp_path, mine, theirs):
    # Neighbours: another step or item is another statement; a name set from other names
    # twice is the same value twice, harmless, and as often a line near any place.
    base = module(BODY)
    fix = base.replace(TOP, TOP + b"        " + mine + b"\n")
    upstream = base.replace(FAST, FAST + b"            " + theirs + b"\n")
    stack = stack_with(tmp_path, base, fix, upstream)
    status = stack.json("status", "--against", "v2", expect=None)
    assert [p["rebase"] for p in status["patches"]] == ["move"], status["patches"]
    summary = stack.rebase_json("--to", "v2")
    assert [p["action"] for p in summary["patches"]] in (["clean"], ["offset"], ["merged"])


def test_a_short_statement_upstream_added_to_another_function_moves(tmp_path):
    # Neighbour: the next function's own counter, right below the fix's place.
    base = (b'"""Kernels."""\n\n\ndef run(x):\n    y = matmul(x)\n    return y\n\n\n'
            b"def run2(x):\n    y = matmul(x)\n    return y\n")
    fix = base.replace(b"def run(x):\n    y = matmul(x)\n",
                       b"def run(x):\n    y = matmul(x)\n    count += 1\n")
    theirs = base.replace(b"def run2(x):\n", b"def run2(x):\n    count += 1\n")
    moves_with_both(stack_with(tmp_path, base, fix, theirs), b"count += 1")


def test_a_name_the_statement_reads_set_between_the_copies_moves(tmp_path):
    # Neighbour: y is set anew between the two `y = y.contiguous()`: each lays out another y.
    base = module(BODY)
    fix = base.replace(TOP, TOP + b"        y = y.contiguous()\n")
    theirs = base.replace(b"            y = fuse(y)\n",
                          b"            y = fuse(y)\n            y = y.contiguous()\n")
    moves_with_both(stack_with(tmp_path, base, fix, theirs), b"y = y.contiguous()")


def test_a_short_statement_upstream_added_to_the_next_loop_moves(tmp_path):
    # Neighbour: the fix counts in the first loop, upstream in the next one two lines lower:
    # each loop's own count, both wanted (a stop's first advice, delete your copy, would
    # leave the first loop uncounted).
    base = (b'"""Kernels."""\n\n\ndef run(a, b):\n    n = 0\n    for x in a:\n        use(x)\n'
            b"    for y in b:\n        use(y)\n    return n\n")
    fix = base.replace(b"        use(x)\n", b"        use(x)\n        n += 1\n")
    theirs = base.replace(b"        use(y)\n", b"        use(y)\n        n += 1\n")
    moves_with_both(stack_with(tmp_path, base, fix, theirs), b"n += 1")


def test_a_short_statement_in_the_same_loop_stops(tmp_path):
    # Neighbour: both copies in the one loop's body, a line apart: the count stepped twice a
    # round.
    base = (b'"""Kernels."""\n\n\ndef run(a, b):\n    n = 0\n    for x in a:\n        use(x)\n'
            b"        keep(x)\n    return n\n")
    fix = base.replace(b"        use(x)\n", b"        use(x)\n        n += 1\n")
    theirs = base.replace(b"        keep(x)\n", b"        keep(x)\n        n += 1\n")
    stops(stack_with(tmp_path, base, fix, theirs))


LAUNCH = (b'"""Kernels."""\n\n\ndef scaled(x):\n    %(n)s = compute(x)\n    out = launch(%(n)s)\n'
          b"    return finish(%(n)s, out)\n\n\ndef other(y):\n    return y\n")


@pytest.mark.parametrize("name", [b"y", b"weight"], ids=["short", "long"])
def test_a_step_again_the_same_before_and_after_a_use_moves(tmp_path, name):
    # The fix makes y contiguous for the launch right below; upstream makes it contiguous
    # after the launch, for what follows. Each copy serves another use, and made again it
    # changes nothing: both wanted. It stopped as doubled, and the first advice, delete your
    # copy, handed the launch a tensor not contiguous.
    base = LAUNCH % {b"n": name}
    line = b"    %s = %s.contiguous()\n" % (name, name)
    fix = base.replace(b"    out = launch", line + b"    out = launch")
    theirs = base.replace(b"    return finish", line + b"    return finish")
    moves_with_both(stack_with(tmp_path, base, fix, theirs), line.strip())


@pytest.mark.parametrize("line", [b"    count += 1\n", b"    y = y * 2\n", b"    y = y.T\n",
                                  b"    y = y.unsqueeze(0)\n"],
                         ids=["counter", "scaled", "transposed", "unsqueezed"])
def test_a_step_changing_again_before_and_after_a_use_stops(tmp_path, line):
    # Neighbours: a counter stepped, y scaled or transposed, before and after a use: made
    # again it changes the value again, the fix made twice, as before.
    base = LAUNCH % {b"n": b"y"}
    fix = base.replace(b"    out = launch", line + b"    out = launch")
    theirs = base.replace(b"    return finish", line + b"    return finish")
    stops(stack_with(tmp_path, base, fix, theirs))


def test_a_step_again_the_same_with_no_use_between_stops(tmp_path):
    # Neighbour: nothing between the copies reads y: the fix made twice, as before.
    base = LAUNCH % {b"n": b"y"}
    base = base.replace(b"    out = launch", b"    z = prep(x)\n    out = launch")
    line = b"    y = y.contiguous()\n"
    fix = base.replace(b"    z = prep", line + b"    z = prep")
    theirs = base.replace(b"    out = launch", line + b"    out = launch")
    stops(stack_with(tmp_path, base, fix, theirs))


KERNEL = (b"#include <hip/hip_runtime.h>\n\n"
          b"__global__ void swap_pairs(float* out, const float* in, int n) {\n"
          b"    __shared__ float smem[256];\n"
          b"    int tid = threadIdx.x;\n"
          b"    smem[tid] = in[tid];\n"
          b"    float y = smem[tid ^ 1];\n"
          b"    smem[tid] = y * 2.0f;\n"
          b"    out[tid] = smem[255 - tid];\n"
          b"}\n\nint version() { return 1; }\n")


def kernel_stack(tmp_path, fix: bytes, theirs: bytes) -> OneUpstreamStack:
    stack = OneUpstreamStack(tmp_path, {"pkg/k.cu": KERNEL, "pkg/b.py": b"b = 1\n"})
    stack.add_fix("fa", "pkg/k.cu", KERNEL, fix)
    stack.commit({"pkg/k.cu": theirs}, "Order the shared memory", tag="v2")
    return stack


def test_two_barriers_around_a_shared_read_move(tmp_path):
    # Upstream's barrier orders the first write before the read, the fix's the read before
    # the second write: two races, two barriers. It stopped as doubled, and the first advice,
    # delete your copy, brought the fix's race back.
    barrier = b"    __syncthreads();\n"
    fix = KERNEL.replace(b"    smem[tid] = y", barrier + b"    smem[tid] = y")
    theirs = KERNEL.replace(b"    float y", barrier + b"    float y")
    stack = kernel_stack(tmp_path, fix, theirs)
    status = stack.json("status", "--against", "v2", expect=None)
    assert [p["rebase"] for p in status["patches"]] == ["move"], status["patches"]
    summary = stack.rebase_json("--to", "v2")
    assert [p["action"] for p in summary["patches"]] in (["clean"], ["offset"], ["merged"])
    stack.cli("overlays")
    made = (stack.root / "overlays/up/pkg/k.cu").read_bytes()
    assert made.count(barrier) == 2 and made.index(barrier) < made.index(b"float y") < \
        made.rindex(barrier) < made.index(b"smem[tid] = y"), made.decode()


def test_a_barrier_upstream_added_beside_the_fixs_stops(tmp_path):
    # Neighbour: only a comment between the two barriers: the fix made twice, as before.
    barrier = b"    __syncthreads();\n"
    base = KERNEL.replace(b"    float y", b"    // read the pair\n    float y")
    fix = base.replace(b"    // read", barrier + b"    // read")
    theirs = base.replace(b"    float y", barrier + b"    float y")
    stack = OneUpstreamStack(tmp_path, {"pkg/k.cu": base, "pkg/b.py": b"b = 1\n"})
    stack.add_fix("fa", "pkg/k.cu", base, fix)
    stack.commit({"pkg/k.cu": theirs}, "Order the shared memory", tag="v2")
    status = stack.json("status", "--against", "v2", expect=1)
    assert [p["state"] for p in status["patches"]] == ["conflict"], status["patches"]


def test_a_barrier_upstream_added_past_an_if_only_some_paths_run_stops(tmp_path):
    # Neighbour: only an `if` between the two barriers (`if n:` + `torch.backends.fast =
    # True`): on the paths skipping it they wait at once, the fix made twice; it merged both
    # in, exit 0 (the `if` read as a use served on every path). Now it stops.
    sync = b"    torch.cuda.synchronize()\n"
    base = STRAIGHT.replace(b"    d = clip(c)\n",
                            b"    if n:\n        torch.backends.fast = True\n")
    fix = base.replace(b"    c = norm(b)\n", b"    c = norm(b)\n" + sync)
    theirs = base.replace(b"    e = scale(d)\n", sync + b"    e = scale(d)\n")
    stops(stack_with(tmp_path, base, fix, theirs))


def test_a_barrier_upstream_added_past_steps_on_every_path_and_an_if_moves(tmp_path):
    # Mirror: steps run between the two barriers on every path (`a = prep(x)` ...) besides
    # the `if`: each barrier serves a use, both kept, the fix moves quietly.
    block = b"    if n:\n        torch.backends.fast = True\n"
    stack = leaves_between(tmp_path, "pkg/a.py", block, b"torch.cuda.synchronize()")
    moves_with_both(stack, b"    torch.cuda.synchronize()\n")


FIND = (b'"""Kernels."""\n\n\ndef find(items, seen, name, y, b):\n    y = prep(items)\n'
        b"    for x in items:\n        use(x)\n        if x.name == name:\n            return x\n"
        b"    return None\n\n\ndef other(y):\n    return y\n")
FIND_CU = (b"#include <hip/hip_runtime.h>\n\n"
           b"__device__ int find(const int* items, int n, int name, int& count) {\n"
           b"    int y = prep(items);\n    for (int j = 0; j < n; ++j) {\n        use(items[j]);\n"
           b"        if (items[j] == name) {\n            return j;\n        }\n    }\n"
           b"    return -1;\n}\n\nint version() { return 1; }\n")


@pytest.mark.parametrize("base, statement, theirs_at", [
    (FIND, b"count += 1", b"            return x\n"),
    (FIND, b"seen.append(name)", b"            return x\n"),
    (FIND_CU, b"count++;", b"            return j;\n")], ids=["counter", "call", "c++-counter"])
def test_a_short_statement_before_a_loop_upstream_added_before_a_return_in_it_stops(
        tmp_path, base, statement, theirs_at):
    # The fix counts once before the loop; upstream counts in the loop's branch right before
    # its `return`, four lines lower: that runs at most once a call too, and on that path the
    # count is stepped twice. Past the 3 lines a short statement's copy was read within, the
    # fix moved and the merge stepped it twice, exit 0. Now it stops, keep yours first
    # (upstream's copy runs on only some of the paths through the fix's).
    head = b"    for " if base is FIND else b"    for (int j"
    fix = base.replace(head, b"    " + statement + b"\n" + head, 1)
    theirs = base.replace(theirs_at, b"            " + statement + b"\n" + theirs_at)
    stack = stack_with(tmp_path, base, fix, theirs)
    stops(stack)
    _, _, err = stack.cli("rebase", "--abort", expect=None)
    status = stack.json("status", "--against", "v2", expect=1)
    assert any("only some of the paths" in item
               for item in status["patches"][0]["evidence"]), status["patches"]


def test_a_short_statement_before_a_loop_upstream_added_in_its_body_moves(tmp_path):
    # Neighbour: upstream's copy in the loop's branch that goes on to the next round runs each
    # round the branch takes, the fix's once a call: each its own, both kept.
    base = FIND.replace(b"            return x\n", b"            keep(x)\n")
    fix = base.replace(b"    for ", b"    count += 1\n    for ", 1)
    theirs = base.replace(b"            keep(x)\n", b"            count += 1\n            keep(x)\n")
    moves_with_both(stack_with(tmp_path, base, fix, theirs), b"count += 1")


def test_a_short_statement_before_a_return_of_the_next_function_moves(tmp_path):
    # Neighbour: upstream counts before the next function's return, five lines lower: another
    # function's count, both kept.
    fix = FIND.replace(b"    return None\n", b"    count += 1\n    return None\n")
    theirs = FIND.replace(b"def other(y):\n    return y\n",
                          b"def other(y):\n    count += 1\n    return y\n")
    moves_with_both(stack_with(tmp_path, FIND, fix, theirs), b"count += 1")


STRAIGHT = (b'"""Kernels."""\n\n\ndef run(x, n):\n    y = x + 1\n    a = prep(x)\n'
            b"    b = load(a)\n    c = norm(b)\n    d = clip(c)\n    e = scale(d)\n"
            b"    z = y * 2\n    return z, e\n\n\ndef other(y):\n    return y\n")
STRAIGHT_CU = (b"#include <hip/hip_runtime.h>\n\n"
               b"__device__ int run(int* out, int x, int n) {\n    int y = x + 1;\n"
               b"    int a = prep(x);\n    int b = load(a);\n    int c = norm(b);\n"
               b"    int d = clip(c);\n    int e = scale(d);\n    out[0] = y * 2 + e;\n"
               b"    return 0;\n}\n\nint version() { return 1; }\n")


@pytest.mark.parametrize("base, path, statement, below, above", [
    (STRAIGHT, "pkg/a.py", b"y += 1", b"    y = x + 1\n", b"    z = y * 2\n"),
    (STRAIGHT, "pkg/a.py", b"y[0] += n", b"    y = x + 1\n", b"    z = y * 2\n"),
    (STRAIGHT_CU, "pkg/k.cu", b"y += 1;", b"    int y = x + 1;\n", b"    out[0] = y"),
    (STRAIGHT_CU, "pkg/k.cu", b"out[1] += n;", b"    int y = x + 1;\n", b"    out[0] = y")],
    ids=["counter", "item", "c-counter", "c-item"])
def test_a_short_statement_upstream_added_further_down_the_same_straight_run_stops(
        tmp_path, base, path, statement, below, above):
    # The fix steps y right after it is set; upstream steps it six lines lower, right before
    # it is read, every line between at the same level and neither reading nor setting what
    # the statement names: the two copies could change places, and merged y got 1 twice,
    # exit 0 (past the 3 lines a short statement's copy was read within). Now it stops.
    fix = base.replace(below, below + b"    " + statement + b"\n")
    theirs = base.replace(above, b"    " + statement + b"\n" + above)
    stack = OneUpstreamStack(tmp_path, {path: base, "pkg/b.py": b"b = 1\n"})
    stack.add_fix("fa", path, base, fix)
    stack.commit({path: theirs}, "Step y", tag="v2")
    stops(stack)


@pytest.mark.parametrize("statement, between", [
    (b"y += n", b"    n = b * 2\n"),
    (b"y += 1", b"    y = a + b\n"),
    (b"y += 1", b"    for k in range(n):\n        y *= 2\n")],
    ids=["what-it-reads-set", "its-target-set-anew", "a-loop-scaling-it"])
def test_a_short_statement_further_down_past_a_line_telling_the_steps_apart_moves(
        tmp_path, statement, between):
    # Neighbours: between the fix's copy and upstream's, six lines lower, a line sets what the
    # statement reads, or sets its target anew, or a loop scales it (the fix's step is
    # doubled n times, upstream's not): each copy is another step, both kept.
    base = STRAIGHT.replace(b"    c = norm(b)\n", b"    c = norm(b)\n" + between)
    fix = base.replace(b"    y = x + 1\n", b"    y = x + 1\n    " + statement + b"\n")
    theirs = base.replace(b"    z = y * 2\n", b"    " + statement + b"\n    z = y * 2\n")
    stack = stack_with(tmp_path, base, fix, theirs)
    status = stack.json("status", "--against", "v2", expect=None)
    assert [p["rebase"] for p in status["patches"]] == ["move"], status["patches"]
    summary = stack.rebase_json("--to", "v2")
    assert [p["action"] for p in summary["patches"]] in (["clean"], ["offset"], ["merged"]), \
        summary["patches"]
    stack.cli("overlays")
    made = (stack.root / "overlays/up/pkg/a.py").read_bytes()
    assert made.split(b"\n").count(b"    " + statement) == 2, made.decode()


@pytest.mark.parametrize("statement, between", [
    (b"y += 1", b"    y -= n\n"),
    (b"y -= 1", b"    for k in range(n):\n        y += k\n")],
    ids=["a-step-of-it", "a-loop-stepping-it-back"])
def test_a_short_statement_further_down_past_a_step_adding_to_it_stops(tmp_path, statement,
                                                                      between):
    # A line or a loop between that only adds to y (`y += 1` n times, `y -= n`) gives the same
    # sum whichever side of it the fix's `y += 1` stands: merged, y got 1 twice, exit 0 (a
    # line setting y was read as telling the steps apart). Now it stops, keep yours first.
    base = STRAIGHT.replace(b"    c = norm(b)\n", b"    c = norm(b)\n" + between)
    fix = base.replace(b"    y = x + 1\n", b"    y = x + 1\n    " + statement + b"\n")
    theirs = base.replace(b"    z = y * 2\n", b"    " + statement + b"\n    z = y * 2\n")
    stack = stack_with(tmp_path, base, fix, theirs)
    stops(stack)


@pytest.mark.parametrize("statement", [b"x[i] += n", b"self.buf[i] -= 1"], ids=["item", "attr"])
def test_an_item_updated_upstream_added_a_line_lower_stops(tmp_path, statement):
    # An item's update is a short statement too (`x[i] += n`): upstream's a line lower, past a
    # line that sets another name, merged in twice, exit 0. Now it stops.
    base = module(BODY.replace(TOP, TOP + b"        z = prep(x)\n"))
    fix = base.replace(TOP, TOP + b"        " + statement + b"\n")
    theirs = base.replace(b"        z = prep(x)\n",
                          b"        z = prep(x)\n        " + statement + b"\n")
    stops(stack_with(tmp_path, base, fix, theirs))


def test_an_item_updated_past_a_line_setting_its_index_moves(tmp_path):
    # Neighbour: the index is set anew between the copies: another item, both kept.
    base = module(BODY.replace(TOP, TOP + b"        i = prep(x)\n"))
    fix = base.replace(TOP, TOP + b"        x[i] += n\n")
    theirs = base.replace(b"        i = prep(x)\n", b"        i = prep(x)\n        x[i] += n\n")
    moves_with_both(stack_with(tmp_path, base, fix, theirs), b"x[i] += n")


C_STEPPED = (b"#include <hip/hip_runtime.h>\n\n__device__ int run(int* out, int i, int n) {\n"
             b"    int a = out[i];\n    STEP\n    int c = a + 1;\n"
             b"    return c;\n}\n\nint version() { return 1; }\n")
PY_STEPPED = (b'"""K."""\n\n\ndef run(out, it, i, j, n):\n    a = out[i]\n    STEP\n'
              b"    c = a + 1\n    return c\n")


def item_stepped(tmp_path, path: str, step: bytes,
                 declared: bytes = b"") -> tuple[OneUpstreamStack, bytes]:
    """The fix updates `out[i]` right after it is read; upstream a line lower, past `step`;
    `declared`: lines of a C file's top (the functions `step` calls)."""
    base, update = (C_STEPPED, b"out[i] += n;") if path.endswith(".cu") else \
        (PY_STEPPED, b"out[i] += n")
    base = base.replace(b"STEP", step).replace(b"runtime.h>\n", b"runtime.h>\n" + declared)
    read = b"    int a = out[i];\n" if path.endswith(".cu") else b"    a = out[i]\n"
    after = b"    int c = a + 1;\n" if path.endswith(".cu") else b"    c = a + 1\n"
    fix = base.replace(read, read + b"    " + update + b"\n")
    theirs = base.replace(after, b"    " + update + b"\n" + after)
    stack = OneUpstreamStack(tmp_path, {path: base, "pkg/b.py": b"b = 1\n"})
    stack.add_fix("fa", path, base, fix)
    stack.commit({path: theirs}, "Update the item", tag="v2")
    return stack, update


ADVANCE = b"__device__ void advance(int* i);\n"
NEXT_SLOT = b"static __device__ void next_slot(const int* out, int *i) { *i += out[*i]; }\n"


@pytest.mark.parametrize("path, step, declared", [
    ("pkg/k.cu", b"i++;", b""), ("pkg/k.cu", b"++i;", b""),
    ("pkg/k.cu", b"advance(&i);", ADVANCE), ("pkg/k.cu", b"next_slot(out, &i);", NEXT_SLOT),
    ("pkg/a.py", b"i, j = j, i", b"")],
    ids=["post-increment", "pre-increment", "address", "address-second", "swap"])
def test_an_item_updated_past_a_step_of_its_index_moves(tmp_path, path, step, declared):
    # The index is stepped between the copies, in a way other than `i += 1`: each copy
    # updates another item, both wanted (it stopped, its first advice, delete your copy,
    # losing the update of the first item). Its address is given to a function the file
    # declares with a pointer it may change through.
    stack, update = item_stepped(tmp_path, path, step, declared)
    status = stack.json("status", "--against", "v2", expect=None)
    assert [p["rebase"] for p in status["patches"]] == ["move"], status["patches"]
    stack.cli("rebase", "--to", "v2")
    stack.cli("overlays")
    assert (stack.root / "overlays/up" / path).read_bytes().count(update) == 2


@pytest.mark.parametrize("path, step", [
    ("pkg/k.cu", b"int b = out[i] * 2;"), ("pkg/k.cu", b"int m = a & i;"),
    ("pkg/a.py", b"it.advance()"), ("pkg/a.py", b"log(i, j)")],
    ids=["reads-item", "bitwise-and", "other-name-stepped", "reads-index"])
def test_an_item_updated_past_a_line_only_reading_its_index_stops(tmp_path, path, step):
    # Mirror: the line between reads the index, or steps another name, leaving `i` as it
    # was: the same item updated twice, a stop.
    stops(item_stepped(tmp_path, path, step)[0])


LOG_INDEX = b"static __device__ void log_index(const int* p) { printf(\"%d\\n\", *p); }\n"


@pytest.mark.parametrize("step, declared", [
    (b"log_index(&i);", LOG_INDEX), (b"print(&i);", b""), (b'printf("%p", &i);', b""),
    (b"advance(&i);", b""), (b"next_slot(out, &i);", NEXT_SLOT.replace(b"int *i", b"int i"))],
    ids=["const-pointer", "print", "printf", "undeclared", "no-pointer-there"])
def test_an_item_updated_past_a_call_given_its_index_address_to_read_stops(tmp_path, step,
                                                                            declared):
    # Mirror: the index's address given to a function that reads through it (a pointer to
    # const), or one the file does not declare (a print, a header's function): `i` may be as
    # it was, the same item updated twice. It moved, both kept, exit 0: the item updated
    # twice. Now a stop.
    stops(item_stepped(tmp_path, "pkg/k.cu", step, declared)[0])


CPP_VECTOR = (b"#include <vector>\n\nDECLARED\n"
              b"int run(std::vector<int>& out, int i, int n) {\n"
              b"    int a = out[i];\n    log_index(&i);\n    int c = a + 1;\n"
              b"    return c;\n}\n\nint version() { return 1; }\n")


@pytest.mark.parametrize("declared, moves", [
    (b"void log_index(const int* p);", False), (b"void log_index(int const *p);", False),
    (b"void log_index(int* p);", True)], ids=["const-int", "int-const", "changes"])
def test_a_vector_item_updated_past_its_index_address_given_moves_only_where_changed(
        tmp_path, declared, moves):
    # C++ list code: `out[i] += n;` in a std::vector, the index's address given to a function
    # the file declares; read through a pointer to const (either spelling) it stops, the
    # item updated twice otherwise (it moved, exit 0); through a pointer that may change it,
    # each copy updates another item: it moves, both kept.
    base = CPP_VECTOR.replace(b"DECLARED", declared)
    read, after, update = b"    int a = out[i];\n", b"    int c = a + 1;\n", b"out[i] += n;"
    stack = OneUpstreamStack(tmp_path, {"pkg/k.cpp": base, "pkg/b.py": b"b = 1\n"})
    stack.add_fix("fa", "pkg/k.cpp", base, base.replace(read, read + b"    " + update + b"\n"))
    stack.commit({"pkg/k.cpp": base.replace(after, b"    " + update + b"\n" + after)},
                 "Update the item", tag="v2")
    if not moves:
        stops(stack)
        return
    status = stack.json("status", "--against", "v2", expect=None)
    assert [p["rebase"] for p in status["patches"]] == ["move"], status["patches"]
    stack.cli("rebase", "--to", "v2")
    stack.cli("overlays")
    assert (stack.root / "overlays/up/pkg/k.cpp").read_bytes().count(update) == 2


def straight_with(tmp_path, base: bytes, path: str, statement: bytes, below: bytes,
                  above: bytes) -> OneUpstreamStack:
    """The fix adds `statement` under `below`; upstream adds it above `above`."""
    fix = base.replace(below, below + b"    " + statement + b"\n")
    theirs = base.replace(above, b"    " + statement + b"\n" + above)
    stack = OneUpstreamStack(tmp_path, {path: base, "pkg/b.py": b"b = 1\n"})
    stack.add_fix("fa", path, base, fix)
    stack.commit({path: theirs}, "Step y", tag="v2")
    return stack


@pytest.mark.parametrize("path, block", [
    ("pkg/a.py", b"    if n:\n        d = clip(c)\n"),
    ("pkg/a.py", b"    if n:\n        d = clip(c)\n    else:\n        d = c\n"),
    ("pkg/a.py", b"    d = c\n    for k in range(n):\n        d = clip(d)\n"),
    ("pkg/a.py", b"    with lock(a):\n        d = clip(c)\n"),
    ("pkg/k.cu", b"    int d = b;\n    if (n) {\n        d = clip(b);\n    }\n"),
    ("pkg/k.cu", b"    int d;\n    if (n) {\n        d = clip(b);\n    } else {\n"
                 b"        d = b;\n    }\n"),
    ("pkg/k.cu", b"    int d = b;\n    for (int k = 0; k < n; k++) {\n"
                 b"        d = clip(d);\n    }\n"),
    ("pkg/a.py", b"    d = c\n    if n: d = clip(c)\n"),
    ("pkg/k.cu", b"    int d = b;\n    if (n) d = clip(b);\n")],
    ids=["if", "if-else", "loop", "with", "c-if", "c-if-else", "c-loop", "one-line-if",
         "c-one-line-if"])
def test_a_short_statement_upstream_added_past_a_block_not_naming_it_stops(tmp_path, path,
                                                                            block):
    # The fix steps y right after it is set; upstream steps it further down, right before it
    # is read (within 10 lines), past a block that neither reads nor sets y (nor leaves): the two copies could
    # change places, and merged y got 1 twice, exit 0 (a block between was read as telling
    # the steps apart). Now it stops.
    if path.endswith(".cu"):
        base = STRAIGHT_CU.replace(b"    int c = norm(b);\n    int d = clip(c);\n", block)
        stack = straight_with(tmp_path, base, path, b"y += 1;", b"    int y = x + 1;\n",
                              b"    out[0] = y")
    else:
        base = STRAIGHT.replace(b"    d = clip(c)\n", block)
        stack = straight_with(tmp_path, base, path, b"y += 1", b"    y = x + 1\n",
                              b"    z = y * 2\n")
    stops(stack)


@pytest.mark.parametrize("path, block, above", [
    ("pkg/a.py", b"    d = clip(c)\n    if n:\n        y = d\n", b"    z = y * 2\n"),
    ("pkg/a.py", b"    d = clip(c)\n    if n:\n        e = scale(d)\n", b"        e = scale(d)\n"),
    ("pkg/k.cu", b"    int d = clip(b);\n    if (n) {\n        y = d;\n    }\n", b"    out[0] = y"),
    ("pkg/k.cu", b"    int d = clip(b);\n    if (n) {\n        out[1] = d;\n    }\n",
     b"        out[1] = d;\n")],
    ids=["block-sets-it", "inside-the-block", "c-block-sets-it",
         "c-inside-the-block"])
def test_a_short_statement_past_a_block_telling_the_steps_apart_moves(tmp_path, path, block,
                                                                      above):
    # Mirrors: the block between sets y anew, or upstream's copy is inside the block (y
    # stepped only where n holds): each copy is another step, both kept (a stop's first
    # advice, delete your copy, would lose the fix's step). (A block reading y:
    # test_known_wrong.py.)
    statement = step_of(path)
    if path.endswith(".cu"):
        base = STRAIGHT_CU.replace(b"    int c = norm(b);\n    int d = clip(c);\n", block)
        below = b"    int y = x + 1;\n"
    else:
        base = STRAIGHT.replace(b"    d = clip(c)\n", block)
        below = b"    y = x + 1\n"
    fix = base.replace(below, below + b"    " + statement + b"\n")
    indent = above[:len(above) - len(above.lstrip())]
    theirs = base.replace(above, indent + statement + b"\n" + above)
    stack = OneUpstreamStack(tmp_path, {path: base, "pkg/b.py": b"b = 1\n"})
    stack.add_fix("fa", path, base, fix)
    stack.commit({path: theirs}, "Step y", tag="v2")
    made = moved_quietly(stack, path)
    assert made.count(b" " + statement + b"\n") == 2, made.decode()


def test_a_short_statement_upstream_added_to_the_next_function_past_a_block_moves(tmp_path):
    # Mirror: the fix's function ends with a block; upstream steps the next function's own y.
    base = (b'"""Kernels."""\n\n\ndef run(x, n):\n    y = x + 1\n    a = prep(x)\n'
            b"    if n:\n        a = clip(a)\n    keep(a, y)\n\n\ndef other(y):\n"
            b"    a = prep(y)\n    return y * a\n")
    stack = straight_with(tmp_path, base, "pkg/a.py", b"y += 1", b"    y = x + 1\n",
                          b"    return y * a\n")
    moves_with_both(stack, b"y += 1")


ADVANCE_OVER_LINES = b"static __device__ void advance(\n    int* i,\n    int n) { *i += n; }\n"
LOG_OVER_LINES = b"static __device__ void log_index(\n    const int* p,\n    int n);\n"


def test_an_item_updated_past_a_call_declared_over_lines_moves_where_it_changes_the_index(
        tmp_path):
    # The function taking the index's address is declared with its parameters over several
    # lines (`void advance(` / `int* i,` / `int n)`): it changes the index, each copy updates
    # another item, both wanted. Read as undeclared, it stopped, its first advice, delete
    # your copy, losing the update of the first item.
    stack, update = item_stepped(tmp_path, "pkg/k.cu", b"advance(&i, 2);", ADVANCE_OVER_LINES)
    status = stack.json("status", "--against", "v2", expect=None)
    assert [p["rebase"] for p in status["patches"]] == ["move"], status["patches"]
    stack.cli("rebase", "--to", "v2")
    stack.cli("overlays")
    assert (stack.root / "overlays/up/pkg/k.cu").read_bytes().count(update) == 2


def test_an_item_updated_past_a_call_declared_over_lines_to_read_the_index_stops(tmp_path):
    # Mirror: declared over lines with a pointer to const, the call only reads the index:
    # the same item updated twice, a stop.
    stops(item_stepped(tmp_path, "pkg/k.cu", b"log_index(&i, 2);", LOG_OVER_LINES)[0])


@pytest.mark.parametrize("step", [
    b"atomicAdd(&i, 1);", b"memcpy(&i, out + 4, sizeof(int));", b'printf("%p", &i);'],
    ids=["atomicAdd", "memcpy", "printf"])
def test_an_item_updated_past_an_undeclared_call_given_its_index_address_keeps_yours_first(
        tmp_path, step):
    # A function the file does not declare (a builtin, the C library's, a header's) may
    # change the index through its address or only read it: the stop stays, its first way
    # on keeps the fix's copy and says why. Its first advice was delete your copy, losing
    # the fix's update where the call steps the index (`atomicAdd(&i, 1)`, `memcpy(&i, ...)`).
    stack, update = item_stepped(tmp_path, "pkg/k.cu", step)
    err = stops_again(stack)
    said = err.split("its own way", 1)[1]
    assert said.index("keep yours") < said.index("delete your copy"), err
    assert "a function this file does not declare, which may change the index" in err, err
    # Followed: --continue with the worktree as it is keeps both updates.
    stack.cli("rebase", "--continue")
    stack.cli("overlays")
    assert (stack.root / "overlays/up/pkg/k.cu").read_bytes().count(update) == 2


def leaves_between(tmp_path, path: str, block: bytes, mine: bytes = b"y += 1",
                   theirs: bytes | None = None, fix_below: bool = False) -> OneUpstreamStack:
    """STRAIGHT (STRAIGHT_CU for a .cu path) with `block` in place of the lines between y's
    setting and z's: the fix adds `mine` under y's setting and upstream `theirs` (`mine`)
    above z's, or the other way round where `fix_below`."""
    theirs = mine if theirs is None else theirs
    if path.endswith(".cu"):
        base = STRAIGHT_CU.replace(b"    int c = norm(b);\n    int d = clip(c);\n", block)
        top, bottom = b"    int y = x + 1;\n", b"    out[0] = y"
    else:
        base = STRAIGHT.replace(b"    d = clip(c)\n", block)
        top, bottom = b"    y = x + 1\n", b"    z = y * 2\n"
    above, below = (theirs, mine) if fix_below else (mine, theirs)
    fix_at = (top, top + b"    " + above + b"\n") if not fix_below else \
        (bottom, b"    " + below + b"\n" + bottom)
    theirs_at = (bottom, b"    " + below + b"\n" + bottom) if not fix_below else \
        (top, top + b"    " + above + b"\n")
    stack = OneUpstreamStack(tmp_path, {path: base, "pkg/b.py": b"b = 1\n"})
    stack.add_fix("fa", path, base, base.replace(*fix_at))
    stack.commit({path: base.replace(*theirs_at)}, "Step y", tag="v2")
    return stack


LEAVING = [
    ("pkg/a.py", b"    if n:\n        return c\n    d = clip(c)\n"),
    ("pkg/a.py", b"    if n:\n        raise ValueError(c)\n    d = clip(c)\n"),
    ("pkg/a.py", b"    if n:\n        return c\n    else:\n        d = clip(c)\n"),
    ("pkg/a.py", b"    d = c\n    for k in range(n):\n        if k > d:\n            return d\n"),
    ("pkg/k.cu", b"    if (n) {\n        return b;\n    }\n    int d = clip(b);\n"),
    ("pkg/k.cu", b"    int d = b;\n    if (n) {\n        d = clip(b);\n    } else {\n"
                 b"        goto done;\n    }\n"),
    ("pkg/k.cu", b"    int d = b;\n    for (int k = 0; k < n; k++) {\n        if (k > d) {\n"
                 b"            return k;\n        }\n    }\n"),
    ("pkg/a.py", b"    if n: return c\n    d = clip(c)\n"),
    ("pkg/k.cu", b"    if (n) return b;\n    int d = clip(b);\n")]
LEAVING_IDS = ["if-return", "if-raise", "if-return-else", "loop-returning", "c-if-return",
               "c-else-goto", "c-loop-returning", "one-line-return", "c-one-line-return"]


@pytest.mark.parametrize("path, block", LEAVING, ids=LEAVING_IDS)
def test_a_short_statement_upstream_added_past_a_block_that_leaves_keeps_yours_first(
        tmp_path, path, block):
    # The fix steps y right after it is set; upstream steps it further down, past a block
    # that leaves the function on some paths (`if n: return c`) and names nothing of y's:
    # on the paths that go on y got 1 twice, exit 0 (a block that leaves was read as telling
    # the steps apart). Now it stops as upstream having the lines; upstream's copy runs on
    # only some of the paths through the fix's (not on those that leave), so the first way
    # on keeps the fix's copy and takes upstream's out.
    stack = leaves_between(tmp_path, path, block, step_of(path))
    stops_keeping_yours_first(stack)


@pytest.mark.parametrize("path, block", [
    ("pkg/a.py", b"    d = c\n    for k in range(n):\n        if k > d:\n            break\n"),
    ("pkg/a.py", b"    d = c\n    while d:\n        d = clip(d)\n        if d:\n"
                 b"            continue\n"),
    ("pkg/k.cu", b"    int d = b;\n    for (int k = 0; k < n; k++) {\n        if (k > d) {\n"
                 b"            break;\n        }\n    }\n")],
    ids=["loop-breaking", "loop-going-on", "c-loop-breaking"])
def test_a_short_statement_past_a_loop_leaving_only_itself_stops(tmp_path, path, block):
    # A `break` or `continue` inside a loop between leaves that loop, not the function: every
    # path through the fix's copy reaches upstream's, y got 1 twice, exit 0. Now it stops,
    # its first way on deleting the fix's copy (upstream's does its step on every path).
    stack = leaves_between(tmp_path, path, block, step_of(path))
    stops_deleting_yours_first(stack)


@pytest.mark.parametrize("path, block", [LEAVING[0], LEAVING[4]], ids=["if-return", "c-if-return"])
def test_the_fixs_short_statement_past_a_block_that_leaves_advises_deleting_it(tmp_path, path,
                                                                               block):
    # Mirror: upstream steps y right after it is set, the fix further down past the block
    # that leaves: upstream's copy runs on every path through the fix's, y got 1 twice on
    # them, exit 0. Now it stops, and deleting the fix's copy, the first way on, loses
    # nothing (upstream's steps y on the paths that leave too, its own choice).
    stack = leaves_between(tmp_path, path, block, step_of(path), fix_below=True)
    stops_deleting_yours_first(stack)


YIELDING = [
    ("pkg/a.py", b"    if n:\n        yield c\n    d = clip(c)\n"),
    ("pkg/a.py", b"    if n: yield c\n    d = clip(c)\n"),
    ("pkg/a.py", b"    yield c\n    d = clip(c)\n"),
    ("pkg/a.py", b"    if n:\n        y = c\n        yield c\n        return c\n    d = clip(c)\n")]
YIELDING_IDS = ["if-yield", "one-line-yield", "yield", "setting-it-yielding-then-returning"]


@pytest.mark.parametrize("path, block", YIELDING, ids=YIELDING_IDS)
def test_a_short_statement_upstream_added_past_a_yield_keeps_yours_first(tmp_path, path, block):
    # A `yield` between leaves nothing: the generator goes on past it where its caller
    # resumes it, and there y got 1 twice, exit 0 (what follows a `yield` was read as another
    # step; a branch yielding before it returns as one going on, its `y = c` telling the steps
    # apart). Now it stops as upstream having the lines; a caller stopping at the `yield` runs
    # the fix's copy alone, so the first way on keeps the fix's copy.
    stack = leaves_between(tmp_path, path, block)
    stops_keeping_yours_first(stack)


def test_the_fixs_short_statement_past_a_yield_advises_deleting_it(tmp_path):
    # Mirror: upstream steps y right after it is set, the fix past `if n: yield c`:
    # upstream's runs on every path through the fix's; delete your copy first.
    stack = leaves_between(tmp_path, *YIELDING[0], fix_below=True)
    stops_deleting_yours_first(stack)


def test_a_short_statement_past_a_yield_handing_it_out_moves(tmp_path):
    # Mirror: the `yield` between hands y out on every path (`yield y`): the caller reads
    # the fix's step there and upstream's after it, each its own, both kept.
    stack = leaves_between(tmp_path, "pkg/a.py", b"    yield y\n    d = clip(c)\n")
    moves_with_both(stack, b"    y += 1\n")


LOOP_BODY = (b'"""Kernels."""\n\n\ndef run(xs, n):\n    t = 0\n    for x in xs:\n'
             b"        y = x + 1\n        a = prep(x)\n        if a > n:\n            continue\n"
             b"        d = clip(a)\n        t += y * 2 + d\n    return t\n")
LOOP_BODY_CU = (b"#include <hip/hip_runtime.h>\n\n"
                b"__device__ int run(const int* xs, int m, int n) {\n    int t = 0;\n"
                b"    for (int j = 0; j < m; ++j) {\n        int y = xs[j] + 1;\n"
                b"        int a = prep(xs[j]);\n        if (a > n) {\n            continue;\n"
                b"        }\n        int d = clip(a);\n        t += y * 2 + d;\n    }\n"
                b"    return t;\n}\n\nint version() { return 1; }\n")


@pytest.mark.parametrize("path, base, top, bottom, statement", [
    ("pkg/a.py", LOOP_BODY, b"        y = x + 1\n", b"        t += y", b"y += 1"),
    ("pkg/k.cu", LOOP_BODY_CU, b"        int y = xs[j] + 1;\n", b"        t += y", b"y += 1;")],
    ids=["py", "cu"])
def test_a_short_statement_past_a_round_left_early_keeps_yours_first(tmp_path, path, base, top,
                                                                    bottom, statement):
    # Both copies in one loop's body, an `if` between going on to the next round: on the
    # rounds that go through, y got 1 twice, exit 0. Now it stops; upstream's copy runs on
    # fewer rounds than the fix's: keep yours first.
    stack = OneUpstreamStack(tmp_path, {path: base, "pkg/b.py": b"b = 1\n"})
    stack.add_fix("fa", path, base, base.replace(top, top + b"        " + statement + b"\n"))
    stack.commit({path: base.replace(bottom, b"        " + statement + b"\n" + bottom)},
                 "Step y", tag="v2")
    stops_keeping_yours_first(stack)


@pytest.mark.parametrize("path, block, mine, theirs", [
    ("pkg/a.py", LEAVING[0][1], b"y += 1", b"y += 2"),
    ("pkg/a.py", LEAVING[0][1], b"y += 1", b"e += 1"),
    ("pkg/k.cu", LEAVING[4][1], b"y += 1;", b"y += 2;"),
    ("pkg/a.py", b"    if n:\n        y = c\n    d = clip(c)\n", b"y += 1", None),
    ("pkg/a.py", b"    if n:\n        y = c\n        if c:\n            return c\n"
                 b"    d = clip(c)\n", b"y += 1", None),
    ("pkg/a.py", b"    d = c\n    for k in range(n):\n        y *= k\n        if k > d:\n"
                 b"            break\n", b"y += 1", None),
    ("pkg/k.cu", b"    if (n) {\n        y = b;\n        if (b) {\n            return b;\n"
                 b"        }\n    }\n    int d = clip(b);\n", b"y += 1;", None),
    ("pkg/k.cu", b"    int d = b;\n    for (int k = 0; k < n; k++) {\n        y *= k;\n"
                 b"        if (k > d) {\n            break;\n        }\n    }\n", b"y += 1;", None),
    ("pkg/k.cu", b"    int d = b;\n    int f = clip(d);\n    int g = clip(f);\n"
                 b"    for (int k = 0; k < n; k++) {\n        y += k;\n        if (k > g) {\n"
                 b"            break;\n        }\n    }\n", b"y += 1;", None)],
    ids=["another-value", "another-target", "c-another-value", "setting-it-going-on",
         "setting-it-leaving-only-sometimes", "a-loop-scaling-it",
         "c-setting-it-leaving-only-sometimes", "c-a-loop-scaling-it",
         "c-ten-statements-off"])
def test_a_short_statement_past_a_block_that_leaves_telling_the_steps_apart_moves(
        tmp_path, path, block, mine, theirs):
    # Mirrors: upstream's line past the block that leaves is another update (another value,
    # another target), or the block sets y anew on a path that goes on past it (`y = c` in
    # a branch that does not leave, or leaves only when c holds), or a loop scales it (`y *=
    # k`: the fix's step is scaled, upstream's not): each its own, both kept, the fix moves
    # quietly (a stop's first advice would drop one). So does a C copy 10 statements off, its
    # lines of a brace alone aside: further off than a copy is read within.
    stack = leaves_between(tmp_path, path, block, mine, theirs)
    made = moved_quietly(stack, path)
    theirs = mine if theirs is None else theirs
    assert made.count(b"    " + mine + b"\n") == (2 if theirs == mine else 1), made.decode()
    assert made.count(b"    " + theirs + b"\n") == (2 if theirs == mine else 1), made.decode()


NAMING_IT_WHERE_IT_LEAVES = [
    ("pkg/a.py", b"    if n:\n        return y\n    d = clip(c)\n"),
    ("pkg/a.py", b"    if n:\n        y = c\n        return c\n    d = clip(c)\n"),
    ("pkg/k.cu", b"    if (n) {\n        return y;\n    }\n    int d = clip(b);\n"),
    ("pkg/k.cu", b"    if (n) {\n        y = b;\n        return b;\n    }\n    int d = clip(b);\n"),
    ("pkg/a.py", b"    if n: return y\n    d = clip(c)\n"),
    ("pkg/a.py", b"    if n:\n        d = c\n    else:\n        raise ValueError(y)\n")]
NAMING_IT_WHERE_IT_LEAVES_IDS = ["returning-it", "setting-it", "c-returning-it", "c-setting-it",
                                 "one-line-returning-it", "raising-it-in-the-else"]


@pytest.mark.parametrize("path, block", NAMING_IT_WHERE_IT_LEAVES,
                         ids=NAMING_IT_WHERE_IT_LEAVES_IDS)
def test_a_short_statement_past_a_block_naming_it_only_where_it_leaves_keeps_yours_first(
        tmp_path, path, block):
    # The block between names y only in a branch that leaves the function (`if n: return y`,
    # `if n:` + `y = c` + `return c`: that `y = c` is never read): no path going on past the
    # block runs those lines, and on those paths y got 1 twice, exit 0 (a block naming y was
    # read as telling the steps apart). Now it stops as upstream having the lines, keep
    # yours first (the paths that leave run the fix's copy alone: `return y` hands on its
    # step).
    stack = leaves_between(tmp_path, path, block, step_of(path))
    stops_keeping_yours_first(stack)


@pytest.mark.parametrize("path, block", [NAMING_IT_WHERE_IT_LEAVES[0],
                                         NAMING_IT_WHERE_IT_LEAVES[2]],
                         ids=["returning-it", "c-returning-it"])
def test_the_fixs_short_statement_past_a_block_naming_it_only_where_it_leaves_stops(
        tmp_path, path, block):
    # Mirror: upstream steps y right after it is set, the fix past `if n: return y`: on the
    # paths going on y got 1 twice, exit 0. Now it stops, delete your copy first (upstream's
    # runs on every path through the fix's).
    stack = leaves_between(tmp_path, path, block, step_of(path), fix_below=True)
    stops_deleting_yours_first(stack)


READING_ON_SOME_PATHS = [
    ("pkg/a.py", b"    if n:\n        d = clip(y)\n"),
    ("pkg/a.py", b"    d = c\n    if n: d = clip(y)\n"),
    ("pkg/k.cu", b"    int d = b;\n    if (n) {\n        d = clip(y);\n    }\n"),
    ("pkg/k.cu", b"    int d = b;\n    if (n) d = clip(y);\n"),
    ("pkg/a.py", b"    if n:\n        log(f\"{y:>4}\")\n")]


@pytest.mark.parametrize("fix_below", [False, True], ids=["fix-above", "fix-below"])
@pytest.mark.parametrize("path, block", READING_ON_SOME_PATHS,
                         ids=["if", "one-line-if", "c-if", "c-one-line-if", "f-string-in-an-if"])
def test_a_short_statement_past_an_if_reading_it_keeps_yours_first(tmp_path, path, block,
                                                                  fix_below):
    # An `if` between (no `else`) reads y in its body only: on the paths skipping it y got
    # 1 twice, exit 0 (a line reading y was read as telling the steps apart on every path).
    # Now it stops as upstream having the lines, keep yours first, either copy above: the
    # body reads y as the fix has it.
    stack = leaves_between(tmp_path, path, block, step_of(path), fix_below=fix_below)
    stops_keeping_yours_first(stack, READ_IN_AN_IF)


GUARDS_READING = [
    ("pkg/k.cu", b"    if (y > n) return b;\n    int d = clip(b);\n"),
    ("pkg/k.cu", b"    if (y > n) {\n        return b;\n    }\n    int d = clip(b);\n"),
    ("pkg/a.py", b"    if y > n:\n        return c\n    d = clip(c)\n"),
    ("pkg/a.py", b"    if y > n: raise ValueError(c)\n    d = clip(c)\n")]
GUARDS_READING_IDS = ["c-one-line", "c-block", "if-return", "one-line-raise"]


@pytest.mark.parametrize("path, block", GUARDS_READING, ids=GUARDS_READING_IDS)
def test_a_short_statement_past_a_guard_reading_it_keeps_yours_first(tmp_path, path, block):
    # An `if` between whose condition reads y and whose whole body leaves the function (`if
    # (y > n) return b;`): on the paths going on it only said they go on, and there y got 1
    # twice, exit 0. Now it stops as upstream having the lines; upstream's copy runs on only
    # some of the paths through yours: keep yours first.
    stack = leaves_between(tmp_path, path, block, step_of(path))
    stops_keeping_yours_first(stack)


@pytest.mark.parametrize("path, block", [GUARDS_READING[0], GUARDS_READING[2]],
                         ids=["c-one-line", "if-return"])
def test_the_fixs_short_statement_past_a_guard_reading_it_advises_deleting_it(tmp_path, path,
                                                                             block):
    # Mirror: upstream's copy above the guard, the fix's past it: upstream's runs on every
    # path through the fix's; delete your copy first.
    stack = leaves_between(tmp_path, path, block, step_of(path), fix_below=True)
    stops_deleting_yours_first(stack)


@pytest.mark.parametrize("path, block", [
    ("pkg/a.py", b"    d = clip(y)\n"),
    ("pkg/a.py", b"    if n:\n        d = clip(y)\n    else:\n        d = y\n"),
    ("pkg/a.py", b"    if y > n:\n        d = clip(c)\n"),
    ("pkg/a.py", b"    with lock(n):\n        d = clip(y)\n"),
    ("pkg/k.cu", b"    int d = b;\n    if (y > n) {\n        d = 0;\n    }\n"),
    ("pkg/k.cu", b"    int d = b;\n    if (n) {\n        d = clip(y);\n    } else {\n"
                 b"        d = y;\n    }\n"),
    ("pkg/k.cu", b"    int d = b;\n    if (n) {\n        d = clip(y++);\n    }\n"),
    ("pkg/a.py", b"    log(f\"{y}\")\n"),
    ("pkg/a.py", b"    log(f'n={n!r}, y={y:>4}')\n"),
    ("pkg/a.py", b"    d = clip(a, y=y)\n")],
    ids=["a-line", "if-else-both", "a-condition-going-on", "with", "c-a-condition-going-on",
         "c-if-else-both", "c-stepping-it-in-the-if", "an-f-string", "an-f-string-formatted",
         "a-keyword-given-it"])
def test_a_short_statement_past_a_line_reading_it_on_every_path_moves(tmp_path, path, block):
    # Mirrors: y is read between the copies on every path (a line, both branches of an
    # if/else, a `with` body, the condition of an `if` whose body goes on, a field of an
    # f-string), or the `if` steps y itself (`clip(y++)`): each copy is its own step, both
    # kept, the fix moves quietly. (An f-string was taken out whole with the strings, its
    # read of y with it: it stopped, its first way on deleting the fix's step.)
    statement = step_of(path)
    stack = leaves_between(tmp_path, path, block, statement)
    made = moved_quietly(stack, path)
    assert made.count(b"    " + statement + b"\n") == 2, made.decode()


READ_IN_ONE_BRANCH = [
    ("pkg/a.py", b"    if n:\n        d = clip(c)\n    else:\n        d = y\n"),
    ("pkg/a.py", b"    if n:\n        d = clip(y)\n    elif c:\n        d = 2\n"),
    ("pkg/k.cu", b"    int d = b;\n    if (n) {\n        d = clip(b);\n    } else {\n"
                 b"        d = y;\n    }\n")]


@pytest.mark.parametrize("fix_below", [False, True], ids=["fix-above", "fix-below"])
@pytest.mark.parametrize("path, block", READ_IN_ONE_BRANCH,
                         ids=["if-else", "if-elif", "c-if-else"])
def test_a_short_statement_past_an_if_else_reading_it_in_one_branch_keeps_yours_first(
        tmp_path, path, block, fix_below):
    # An if/else between reads y in one branch only (`else:` + `d = y`; an `elif` with no
    # `else`): on the paths through the other y got 1 twice, exit 0 (the branch reading y was
    # read as telling the steps apart on every path). Now it stops as upstream having the
    # lines, keep yours first, either copy above: the branch reads y as the fix has it.
    stack = leaves_between(tmp_path, path, block, step_of(path), fix_below=fix_below)
    stops_keeping_yours_first(stack, READ_IN_AN_IF)


@pytest.mark.parametrize("fix_below", [False, True], ids=["fix-above", "fix-below"])
@pytest.mark.parametrize("path, block", [
    ("pkg/a.py", b"    d = c\n    for k in range(n):\n        d = clip(y)\n"),
    ("pkg/a.py", b"    d = c\n    while d:\n        d = clip(y, d)\n"),
    ("pkg/k.cu", b"    int d = b;\n    for (int k = 0; k < n; k++) {\n        d = clip(y);\n"
                 b"    }\n")],
    ids=["for", "while", "c-for"])
def test_a_short_statement_past_a_loop_reading_it_keeps_yours_first(tmp_path, path, block,
                                                                   fix_below):
    # A loop between reads y in its body only, its header naming none of it: it may run no
    # round, and then y got 1 twice, exit 0 (the body was read as telling the steps apart).
    # Now it stops, keep yours first, either copy above: the loop reads y as the fix has it.
    stack = leaves_between(tmp_path, path, block, step_of(path), fix_below=fix_below)
    stops_keeping_yours_first(stack, READ_BETWEEN)


@pytest.mark.parametrize("fix_below", [False, True], ids=["fix-above", "fix-below"])
def test_a_c_step_past_a_loop_reading_it_says_a_loop(tmp_path, fix_below):
    # `y++;` past a loop reading y: the stop called it "an if between the copies" (`y++;`
    # was not read as setting y). Now it says a loop, keep yours first, either copy above.
    block = b"    int d = b;\n    for (int k = 0; k < n; k++) {\n        d = clip(y);\n    }\n"
    stack = leaves_between(tmp_path, "pkg/k.cu", block, b"y++;", fix_below=fix_below)
    stops_keeping_yours_first(stack, READ_BETWEEN)


GUARDS_WITH_AN_ELSE = [
    ("pkg/a.py", b"    if y > n:\n        return c\n    else:\n        d = clip(c)\n"),
    ("pkg/k.cu", b"    int d = b;\n    if (y > n) {\n        return b;\n    } else {\n"
                 b"        d = clip(b);\n    }\n")]


@pytest.mark.parametrize("path, block", GUARDS_WITH_AN_ELSE, ids=["if-return-else", "c"])
def test_a_short_statement_past_a_guard_with_an_else_keeps_yours_first(tmp_path, path, block):
    # A guard reading y whose body leaves, with an `else` going on: on the paths going on
    # its condition only said they go on, and there y got 1 twice, exit 0. Now it stops as
    # the guard with no `else` does, keep yours first.
    stack = leaves_between(tmp_path, path, block, step_of(path))
    stops_keeping_yours_first(stack)


@pytest.mark.parametrize("path, block", GUARDS_WITH_AN_ELSE, ids=["if-return-else", "c"])
def test_the_fixs_short_statement_past_a_guard_with_an_else_advises_deleting_it(tmp_path, path,
                                                                               block):
    # Mirror: upstream's copy above the guard runs on every path through the fix's, past it:
    # y got 1 twice, exit 0; now it stops, delete your copy first.
    stack = leaves_between(tmp_path, path, block, step_of(path), fix_below=True)
    stops_deleting_yours_first(stack)


@pytest.mark.parametrize("fix_below", [False, True], ids=["fix-above", "fix-below"])
@pytest.mark.parametrize("path, block", [
    ("pkg/a.py", b"    d = c\n    for k in range(y):\n        d = clip(k)\n"),
    ("pkg/a.py", b"    d = c\n    while y > d:\n        d = clip(d)\n"),
    ("pkg/a.py", b"    d = c\n    while True:\n        d = clip(y, d)\n        if d:\n"
                 b"            break\n"),
    ("pkg/k.cu", b"    int d = b;\n    do {\n        d = clip(y);\n    } while (d < n);\n"),
    ("pkg/a.py", b"    if y > n:\n        return c\n    else:\n        d = clip(y)\n"),
    ("pkg/a.py", b"    if n:\n        d = clip(y)\n    elif c:\n        d = y\n    else:\n"
                 b"        d = y + 1\n")],
    ids=["a-loop-over-it", "a-loop-while-it", "a-loop-running-once", "c-do-while",
         "a-guard-else-reading-it", "every-branch-reading-it"])
def test_a_short_statement_past_a_block_reading_it_on_every_path_going_on_moves(
        tmp_path, path, block, fix_below):
    # Mirrors: every path going on past the block reads y (a loop's header, a loop running
    # a round at least, a guard's `else` reading it, every branch of an if/elif/else): each
    # copy is its own step, both kept, the fix moves quietly, either copy above.
    statement = step_of(path)
    stack = leaves_between(tmp_path, path, block, statement, fix_below=fix_below)
    made = moved_quietly(stack, path)
    assert made.count(b"    " + statement + b"\n") == 2, made.decode()


READ_DEEPER_ON_SOME_PATHS = [
    ("pkg/a.py", b"    if n:\n        if c:\n            d = y\n    else:\n        d = y\n"),
    ("pkg/a.py", b"    if n:\n        for k in range(c):\n            d = clip(y)\n    else:\n"
                 b"        d = y\n"),
    ("pkg/k.cu", b"    int d = b;\n    if (n) {\n        if (c) d = y;\n    } else {\n"
                 b"        d = y;\n    }\n"),
    ("pkg/a.py", b"    with lock(n):\n        if c:\n            d = y\n"),
    ("pkg/a.py", b"    match n:\n        case 1:\n            d = y\n        case _:\n"
                 b"            d = clip(c)\n"),
    ("pkg/k.cu", b"    int d = b;\n    switch (n) {\n    case 1:\n        d = y;\n        break;\n"
                 b"    default:\n        d = c;\n    }\n"),
    ("pkg/a.py", b"    try:\n        d = clip(c)\n    except ValueError:\n        d = y\n"),
    ("pkg/a.py", b"    for k in range(c):\n        if k:\n            break\n    else:\n"
                 b"        d = y\n"),
    ("pkg/a.py", b"    d = clip(c) if n else y\n"),
    ("pkg/a.py", b"    d = n and clip(y)\n"),
    ("pkg/a.py", b"    d = [y for k in range(c)]\n"),
    ("pkg/k.cu", b"    int d = n ? clip(y) : b;\n"),
    ("pkg/k.cu", b"    int d = n && y;\n"),
    ("pkg/k.cu", b"    int d = b;\n    switch (n) {\n    case 1:\n        break;\n    default:\n"
                 b"        d = y;\n    }\n")]
READ_DEEPER_ON_SOME_PATHS_IDS = [
    "an-if-in-a-branch", "a-loop-in-a-branch", "c-an-if-in-a-branch", "an-if-in-a-with",
    "match", "c-switch", "try-except", "for-else-broken", "conditional-expression", "and",
    "comprehension", "c-conditional-expression", "c-and", "c-switch-a-case-breaking"]


@pytest.mark.parametrize("fix_below", [False, True], ids=["fix-above", "fix-below"])
@pytest.mark.parametrize("path, block", READ_DEEPER_ON_SOME_PATHS,
                         ids=READ_DEEPER_ON_SOME_PATHS_IDS)
def test_a_short_statement_past_a_read_on_some_paths_at_any_depth_keeps_yours_first(
        tmp_path, path, block, fix_below):
    # y read between the copies on some of the paths going on only, at any depth or in any
    # form: in a block nested in a branch (`if n:` + `if c:` + `d = y` / `else:` + `d = y`:
    # the path through n and not c reads nothing), a `with` body's `if`, a `match`'s case or
    # a `switch`'s, a handler, a loop's `else:` a `break` skips, an arm of a conditional
    # expression, an operand past `and`/`&&`, a comprehension's body. Each merged both in,
    # exit 0, y stepped twice on the paths not reading it (a line naming y was read as
    # telling the steps apart on every path). Now it stops as upstream having the lines,
    # keep yours first, either copy above.
    stack = leaves_between(tmp_path, path, block, step_of(path), fix_below=fix_below)
    err = stops_again(stack)
    assert "its own way; " in err and ": keep yours and take upstream's copy out" in err, err


@pytest.mark.parametrize("fix_below", [False, True], ids=["fix-above", "fix-below"])
@pytest.mark.parametrize("path, block", [
    ("pkg/a.py", b"    if n:\n        if c:\n            d = y\n        else:\n"
                 b"            d = y + 1\n    else:\n        d = y\n"),
    ("pkg/a.py", b"    if n:\n        if c:\n            return c\n        d = y\n    else:\n"
                 b"        d = y\n"),
    ("pkg/k.cu", b"    int d = b;\n    if (n) {\n        if (c) d = 1;\n        d += y;\n"
                 b"    } else {\n        d = y;\n    }\n"),
    ("pkg/a.py", b"    match n:\n        case 1:\n            d = y\n        case _:\n"
                 b"            d = clip(y)\n"),
    ("pkg/a.py", b"    match y:\n        case 1:\n            d = c\n        case _:\n"
                 b"            d = clip(c)\n"),
    ("pkg/k.cu", b"    int d = b;\n    switch (y) {\n    case 1:\n        d = c;\n        break;\n"
                 b"    default:\n        d = b;\n    }\n"),
    ("pkg/a.py", b"    try:\n        d = clip(y)\n    except ValueError:\n        d = y\n"),
    ("pkg/a.py", b"    for k in range(c):\n        d = k\n    else:\n        d = y\n"),
    ("pkg/a.py", b"    d = c if y else n\n"),
    ("pkg/a.py", b"    d = y and n\n"),
    ("pkg/a.py", b"    d = [k for k in y]\n"),
    ("pkg/k.cu", b"    int d = y ? n : b;\n"),
    ("pkg/a.py", b"    d = clip(y) if n else y\n"),
    ("pkg/k.cu", b"    int d = n ? clip(y) : y;\n"),
    ("pkg/k.cu", b"    int d = n ? clip(y)\n            : clip(y);\n"),
    ("pkg/a.py", b"    d = clip(y) if n else \\\n        clip(y)\n"),
    ("pkg/k.cu", b"    int d = b;\n    switch (n) {\n        case 1:\n            d = clip(y);\n"
                 b"            break;\n        default:\n            d = y;\n    }\n"),
    ("pkg/k.cu", b"    int d = b;\n    switch (n) {\n    case 1:\n    case 2:\n        d = y;\n"
                 b"        break;\n    default:\n        d = clip(y);\n    }\n"),
    ("pkg/k.cu", b"    int d = 0;\n    if (n) d = y;\n    else for (int k = 0; k < y; ++k) d += 1;\n"),
    ("pkg/k.cu", b"    int d = n ? clip(y) :\n            n > 1 ? y : clip(y);\n")],
    ids=["nested-every-branch", "nested-guard-then-line", "c-nested-then-line",
         "match-every-case", "match-on-it", "c-switch-on-it", "try-and-handler", "for-else",
         "condition-of-an-expression", "first-operand", "comprehension-over-it",
         "c-condition-of-an-expression", "both-arms", "c-both-arms", "c-both-arms-colon-first",
         "both-arms-over-a-backslash", "c-switch-every-case-and-default",
         "c-switch-falling-through", "c-else-for-over-it", "c-every-arm-its-line-ending-in-a-colon"])
def test_a_short_statement_past_a_read_on_every_path_at_any_depth_moves(tmp_path, path, block,
                                                                         fix_below):
    # Mirrors: every path going on past the block reads y, however deep (each branch of a
    # nested if, a line past a nested guard, every case, the `match`'s or `switch`'s own
    # value, a `try:` body and its handler, a loop's `else:` no `break` skips, the condition
    # of a conditional expression or both its arms, a first operand, a comprehension's
    # iterable, every case of a C `switch` with a `default:`, falling through or not): each
    # copy is its own step, both kept, the fix moves quietly, either copy above. (Both arms
    # and a `switch`'s cases were read as reading y on some paths only: a stop whose first
    # way on took upstream's step out.)
    statement = step_of(path)
    stack = leaves_between(tmp_path, path, block, statement, fix_below=fix_below)
    made = moved_quietly(stack, path)
    assert made.count(b"    " + statement + b"\n") == 2, made.decode()


@pytest.mark.parametrize("fix_below", [False, True], ids=["fix-above", "fix-below"])
@pytest.mark.parametrize("block", [
    b"    int d = b;\n    switch (n) {\n    case 1:\n        d = clip(y);\n        break;\n"
    b"    case 2:\n        d = y;\n        break;\n    }\n"],
    ids=["every-case-no-default"])
def test_a_short_statement_past_a_switch_reading_it_says_a_switch(tmp_path, block, fix_below):
    # A C `switch` between whose cases read y, with no `default:` (where n is neither case
    # nothing reads y), stops, and the stop called it "a loop between the copies", its ways
    # on speaking of "the loop". Now it says a switch, keep yours first, either copy above.
    # (With a `default:` reading y too it moves: test_a_short_statement_past_a_read_on_every_
    # path_at_any_depth_moves.)
    stack = leaves_between(tmp_path, "pkg/k.cu", block, b"y += 1;", fix_below=fix_below)
    err = stops_again(stack)
    assert f"its own way; {READ_IN_A_SWITCH}: keep yours and take upstream's copy out" in err, err
    assert "loop" not in err, err


@pytest.mark.parametrize("fix_below", [False, True], ids=["fix-above", "fix-below"])
@pytest.mark.parametrize("path, block", [
    ("pkg/a.py", b"    d = clip(b,\n             lo=0)\n"),
    ("pkg/a.py", b"    d = b + \\\n        1\n"),
    ("pkg/k.cu", b"    int d = clip(b,\n                 0);\n"),
    ("pkg/a.py", b"    if n:\n        d = clip(b,\n                 lo=0)\n"),
    ("pkg/k.cu", b"    CHECK_INPUT(b)\n    if (n) {\n        b = c;\n    }\n")],
    ids=["call-over-lines", "backslash", "c-call-over-lines", "in-a-block",
         "c-call-with-no-semicolon"])
def test_a_short_statement_past_a_statement_over_lines_stops(tmp_path, path, block, fix_below):
    # A statement written over several lines between the copies, naming nothing of y's:
    # its second line was read as a body under a header not read, the steps between not
    # read at all, and y got 1 twice, exit 0. Now its lines read as one statement: it stops
    # as upstream having the lines, either copy above. (Mirror: a C macro's call with no
    # `;` is a statement of its own, not one going on into the block below.)
    stops(leaves_between(tmp_path, path, block, step_of(path), fix_below=fix_below))


# Lines of forms read whole only now, each reading y on some paths only.
READ_IN_FORMS_ON_SOME_PATHS = [
    ("pkg/a.py", b"    d = [keep(y)\n         for y in parts(c)]\n"),
    ("pkg/a.py", b"    try: d = clip(b)\n    except ValueError:\n        d = clip(y)\n"),
    ("pkg/a.py", b"    if n: d = c; e = y\n"),
    ("pkg/a.py", b"    d = n < c < y\n"),
    ("pkg/k.cu", b"    int d;\n    if (n) d = y; else d = c;\n"),
    ("pkg/k.cu", b"    int d = c;\n    if (n) { d = y; }\n"),
    ("pkg/k.cu", b"    int d = c;\n    if (n) {\n        d = c;\n    } else d = y;\n"),
    ("pkg/k.cu", b"    int d = c;\n    if (n)\n        d = y;\n"),
    ("pkg/k.cu", b"    int d;\n    if (n)\n        d = y;\n    else\n        d = c;\n"),
    ("pkg/k.cu", b"    auto f = [y = b]() { return y; };\n"),
    ("pkg/k.cu", b"    if (n) {\n        int y{clip(b)};\n        y += 2;\n    }\n"),
    ("pkg/k.cu", b"    for (int y : ys) {\n        y += 2;\n    }\n"),
    ("pkg/k.cu", b"    if (n) {\n        auto [e2, y] = split(b);\n        y += 2;\n    }\n"),
    ("pkg/k.cu", b"    int d = n > 0 ?\n        y : b;\n"),
    ("pkg/a.py", b"    if (n and\n            c):\n        d = clip(y)\n"),
    ("pkg/k.cu", b"    int d = c;\n    if (n &&\n        c) {\n        d = y;\n    }\n"),
    ("pkg/k.cu", b"    int d;\n    if (n) { d = y; } else { d = c; }\n"),
    ("pkg/k.cu", b"    int d = c;\n    if (n) { d = c; d += y; }\n"),
    ("pkg/k.cu", b"    int d = c;\n    for (int k = 0; k < n; k++)\n        d += y;\n"),
    ("pkg/a.py", b"    d = clip(b) if n else \\\n        clip(y)\n"),
    ("pkg/k.cu", b"    int d;\n    if (n) d = y;\n    else if (a) d = 2;\n    else d = clip(y);\n"),
    ("pkg/k.cu", b"    int d = n ? clip(b)\n            : clip(y);\n"),
    ("pkg/a.py", b"    d = {'b': clip(y) if n else b}\n"),
    ("pkg/a.py", b"    d = {\n        k: clip(y)\n        for k in a\n    }\n"),
    ("pkg/a.py", b"    d = {'b': b}\n    if n: d = {'y': y}\n"),
    ("pkg/k.cu", b"    int d = 0;\n    switch (n) { case 1: d = y; break; }\n"),
    ("pkg/k.cu", b"    int d = 0;\n    switch (n) {\n    case 1: d = y; break;\n    default: break;\n"
                 b"    }\n"),
    ("pkg/k.cu", b"    int d = 0;\n    try {\n        d = load(a);\n        d += y;\n"
                 b"    } catch (...) {\n    }\n"),
    ("pkg/k.cu", b"    int d = 0;\n    try {\n        d = load(a);\n    } catch (...) {\n"
                 b"        d = y;\n    }\n"),
    ("pkg/k.cu", b"    int d = 0;\n    try { d = load(a); d += y; } catch (...) {}\n"),
    ("pkg/k.cu", b"    int d = n ? clip(y) : p->y;\n"),
    ("pkg/k.cu", b"    int d = 0;\n    if (n) d = y;\n    else while (a--) d += y;\n"),
    ("pkg/k.cu", b"    int d = 0;\n    if (n) d = y;\n    else for (int k = 0; k < a; ++k) d += y;\n"),
    ("pkg/k.cu", b"    int d = n ? clip(b) :\n            n > 1 ? clip(b) : clip(y);\n")]
READ_IN_FORMS_ON_SOME_PATHS_IDS = [
    "comprehension-over-lines", "try-on-its-header-line", "several-on-a-branch-line",
    "chained-comparison", "c-if-else-on-one-line", "c-braced-on-one-line",
    "c-else-on-its-line", "c-unbraced-if", "c-unbraced-if-else", "c-lambda-capture",
    "c-brace-init-in-a-block", "c-range-for", "c-structured-binding", "c-conditional-over-lines",
    "header-over-lines", "c-header-over-lines", "c-if-else-braced-on-one-line",
    "c-several-in-braces", "c-unbraced-loop", "conditional-over-a-backslash",
    "c-else-if-chain-on-header-lines", "c-conditional-its-colon-first", "dict-reading-it-in-an-arm",
    "dict-comprehension-over-lines", "one-line-if-setting-a-dict", "c-switch-on-one-line",
    "c-case-on-its-label-line", "c-try-reading-it", "c-catch-reading-it", "c-try-on-one-line",
    "c-an-arm-reading-a-member", "c-else-while-on-its-line", "c-else-for-on-its-line",
    "c-conditional-its-line-ending-in-a-colon"]


@pytest.mark.parametrize("fix_below", [False, True], ids=["fix-above", "fix-below"])
@pytest.mark.parametrize("path, block", READ_IN_FORMS_ON_SOME_PATHS,
                         ids=READ_IN_FORMS_ON_SOME_PATHS_IDS)
def test_a_short_statement_past_a_form_reading_it_on_some_paths_keeps_yours_first(
        tmp_path, path, block, fix_below):
    # y read between the copies on some paths only, in a form the reader did not read: a statement
    # over several lines (a comprehension's own y), a `try:` whose body is on its header's line,
    # several statements on a branch's line, the last operand of a chained comparison, C's branches
    # on their header's line or with no braces, a C++ lambda's capture, a name a block declares anew
    # by braces, a range-for or a structured binding; a conditional expression going on past a
    # backslash, a C else-if chain on its header lines, a C conditional expression whose `:` opens
    # the next line, a dict reading y in an arm, a dict comprehension whose `}` closes on a line of
    # its own, a one-line `if` setting a dict; a C `switch` with a case on its label's line or on
    # its own, a C++ `try`/`catch` (y unread where `load` throws, or read only there); a C arm
    # reading a member named y (`p->y`), not y; a C loop on its `else`'s line, a C conditional whose
    # line ends in its `:`. Each merged both in, exit 0, y stepped twice on the paths not reading
    # it. Now it stops as upstream having the lines, keep yours first, either copy above.
    stack = leaves_between(tmp_path, path, block, step_of(path), fix_below=fix_below)
    err = stops_again(stack)
    assert "its own way; " in err and ": keep yours and take upstream's copy out" in err, err


@pytest.mark.parametrize("fix_below", [False, True], ids=["fix-above", "fix-below"])
@pytest.mark.parametrize("path, block", [
    ("pkg/a.py", b"    d = {'b': b}\n"),
    ("pkg/a.py", b"    d = {b, a}\n"),
    ("pkg/a.py", b"    d = {\n        'b': b,\n    }\n"),
    ("pkg/a.py", b"    d = {k: b for k in a}\n"),
    ("pkg/k.cu", b"    int d;\n    if (n) d = 1;\n    else if (a) d = 2;\n    else d = 3;\n"),
    ("pkg/k.cu", b"    int d = n ? clip(b)\n            : clip(a);\n"),
    ("pkg/a.py", b"    log(f\"{b}: y\")\n"),
    ("pkg/k.cu", b"    decltype(y) d = 0;\n"),
    ("pkg/a.py", b"    d = a.y\n"),
    ("pkg/a.py", b"    d = clip(a, y=2)\n"),
    ("pkg/k.cu", b"    int d = cfg.y;\n"),
    ("pkg/k.cu", b"    int d = cfg->y;\n")],
    ids=["dict", "set", "dict-over-lines", "dict-comprehension", "c-else-if-chain",
         "c-conditional-its-colon-first", "an-f-string-not-reading-it", "c-decltype",
         "another-s-attribute-y", "a-keyword-y", "c-a-member-y", "c-a-member-y-through-a-pointer"])
def test_a_short_statement_past_a_literal_or_a_chain_not_naming_it_stops(tmp_path, path, block,
                                                                         fix_below):
    # A Python dict or set literal between the copies (its braces were read as a block's),
    # a C else-if chain with its branches on their header lines (its `else` was read as
    # ending the steps), a C conditional expression whose `:` opens the next line (read as
    # a body under a header), none naming y (`decltype(y)` unevaluated, `a.y` another's
    # attribute, C's `cfg.y` or `p->y` a member, `y=2` a keyword, read as naming it): the
    # steps between were not read, or read as telling the copies apart, and y got 1 twice,
    # exit 0. Now they read as steps: it stops as upstream having the lines, either copy
    # above.
    stops(leaves_between(tmp_path, path, block, step_of(path), fix_below=fix_below))


def test_a_short_statement_past_an_assert_reading_it_in_its_message_stops(tmp_path):
    # `assert n, y` between the copies reads y only where it fails, and raises there: on the
    # paths going on y got 1 twice, exit 0 (the line named y). Now it stops as past a block
    # that leaves: keep yours first where upstream's copy is past it, delete yours first
    # where yours is.
    block = b"    assert n, y\n"
    stops_keeping_yours_first(leaves_between(tmp_path / "above", "pkg/a.py", block))
    stops_deleting_yours_first(leaves_between(tmp_path / "below", "pkg/a.py", block,
                                              fix_below=True))


@pytest.mark.parametrize("path, block", [
    ("pkg/a.py", b"    d = clip(y,\n             lo=0)\n"),
    ("pkg/a.py", b"    d = clip(b,\n             lo=y)\n"),
    ("pkg/a.py", b"    d = {\n        'y': y,\n    }\n"),
    ("pkg/a.py", b"    d = clip(y)\n    e = scale(b,\n              lo=0)\n"),
    ("pkg/a.py", b"    d = clip(y)\n    try: e = clip(b)\n    except ValueError:\n        e = 0\n"),
    ("pkg/a.py", b"    d = c; e = clip(y)\n"),
    ("pkg/a.py", b"    d = y < c < n\n"),
    ("pkg/k.cu", b"    int d = clip(y,\n                 0);\n"),
    ("pkg/k.cu", b"    int d;\n    if (n) d = y; else d = clip(y);\n"),
    ("pkg/k.cu", b"    int d;\n    if (n)\n        d = y;\n    else\n        d = clip(y);\n"),
    ("pkg/k.cu", b"    int d{clip(y)};\n"),
    ("pkg/k.cu", b"    int d = c; int e = clip(y);\n"),
    ("pkg/a.py", b"    if (y and\n            c):\n        d = clip(b)\n"),
    ("pkg/k.cu", b"    int d;\n    if (n) { d = y; } else { d = clip(y); }\n"),
    ("pkg/a.py", b"    d = {'y': y}\n"),
    ("pkg/a.py", b"    d = {b, y}\n"),
    ("pkg/a.py", b"    d = clip(b) if y else \\\n        clip(a)\n"),
    ("pkg/k.cu", b"    int d;\n    if (n) d = y;\n    else if (a) d = y + 1;\n    else d = clip(y);\n"),
    ("pkg/k.cu", b"    int d = y ? clip(b)\n            : a;\n")],
    ids=["over-lines-first", "over-lines-last", "dict-over-lines", "read-before-over-lines",
         "read-before-a-try-on-its-line", "several-on-a-line", "chained-comparison-first", "c-over-lines", "c-if-else-on-one-line-both",
         "c-unbraced-both", "c-brace-init", "c-several-on-a-line", "header-over-lines",
         "c-if-else-braced-on-one-line", "dict", "set", "condition-over-a-backslash",
         "c-else-if-chain-every-branch", "c-condition-its-colon-below"])
def test_a_short_statement_past_a_form_reading_it_on_every_path_moves(tmp_path, path, block):
    # Mirrors: every path going on reads y in those forms (a statement over lines, the
    # first operand of a chained comparison, each branch, a
    # brace-init reading it, a dict or set literal, the condition of a conditional
    # expression going on below), or before them: each copy its own step, the fix moves
    # quietly, both kept.
    statement = step_of(path)
    made = moved_quietly(leaves_between(tmp_path, path, block, statement), path)
    assert made.count(b"    " + statement + b"\n") == 2, made.decode()


@pytest.mark.parametrize("fix_below", [False, True], ids=["fix-above", "fix-below"])
@pytest.mark.parametrize("path, block", [
    ("pkg/a.py", b"    def d():\n        return clip(y)\n"),
    ("pkg/a.py", b"    @cached\n    def d(a,\n          b):\n        y = a\n        return y\n"),
    ("pkg/a.py", b"    d = \"\"\"\n    clip(y)\n    \"\"\"\n"),
    ("pkg/a.py", b"    d = \"\"\"\n    y = 2\n    \"\"\"\n"),
    ("pkg/k.cu", b"    int d = 0;\n    /*\n    d = clip(y);\n    */\n"),
    ("pkg/k.cu", b"    int d = 0;\n#if 0\n    y = clip(b);\n#endif\n"),
    ("pkg/k.cu", b"    int d = 0;\n#if 1\n    d = b;\n#else\n    d = clip(y);\n#endif\n"),
    ("pkg/a.py", b"    d = clip(a,\n             y=2)\n"),
    ("pkg/k.cu", b"    int d = 0;\n#pragma unroll\n    for (int k = 0; k < 4; ++k) {\n"
                 b"        d += clip(b);\n    }\n")],
    ids=["a-nested-def", "a-nested-def-setting-its-own", "a-string-over-lines",
         "a-string-setting-it", "a-c-comment-over-lines", "c-if-0-setting-it",
         "c-else-of-if-1", "a-keyword-on-a-continuation-line", "c-pragma-above-a-loop"])
def test_a_short_statement_past_lines_naming_it_that_do_not_run_stops(tmp_path, path, block,
                                                                      fix_below):
    # Lines naming y between the copies that do not run where they stand: a nested `def`'s
    # body (run where the function is called, if ever; its own y another variable), a string
    # or a C comment over lines, a part of an `#if` no build compiles, a keyword argument on
    # a call's line going on (`y=2` names a parameter); or a `#pragma` line (`#pragma
    # unroll` above a loop not naming y, read as no step to read past): each was read as
    # reading or setting y on every path, or ending the steps, the rebase merged both in,
    # exit 0, and y got 1 twice. Now they read as steps naming nothing of y's: it stops,
    # either copy above.
    stops(leaves_between(tmp_path, path, block, step_of(path), fix_below=fix_below))


@pytest.mark.parametrize("path, block", [
    ("pkg/k.cu", b"    int d = 0;\n#ifdef DEBUG\n    d = clip(y);\n#endif\n"),
    ("pkg/k.cu", b"    int d = 0;\n#ifdef DEBUG\n    y = clip(b);\n#endif\n"),
    ("pkg/k.cu", b"    int d = 0;\n#ifdef DEBUG\n    d = clip(y);\n#else\n    d = b;\n#endif\n"),
    ("pkg/k.cu", b"    int d = 0;\n#ifdef DEBUG\n    if (n) d = clip(y);\n#else\n"
     b"    d = y;\n#endif\n"),
    ("pkg/a.py", b"    assert y > 0\n"),
    ("pkg/a.py", b"    assert (y >\n            0)\n"),
    ("pkg/k.cu", b"    int d = 0;\n    assert(y > 0);\n")],
    ids=["c-ifdef", "c-ifdef-setting-it", "c-ifdef-else-not-reading-it",
         "c-ifdef-else-reading-it-in-an-if", "assert", "assert-over-lines", "c-assert"])
def test_a_short_statement_past_lines_naming_it_in_some_builds_stops_keeping_yours_first(
        tmp_path, path, block):
    # Lines reading or setting y between the copies that some builds leave out: a part of
    # an `#ifdef`, an assertion (gone under `python -O`, or NDEBUG in C): each was read as
    # naming y on every path, the rebase merged both in, exit 0, and in those builds y got 1
    # twice. Now it stops, keep yours first where upstream's copy is past them (an assertion
    # leaves where it fails; a build compiling the part reads y there).
    stack = leaves_between(tmp_path, path, block, step_of(path))
    err = stops_again(stack)
    assert "its own way; " in err and ": keep yours and take upstream's copy out" in err, err


@pytest.mark.parametrize("path, block", [
    ("pkg/k.cu", b"    int d = 0;\n#if 1\n    d = clip(y);\n#endif\n"),
    ("pkg/k.cu", b"    int d = 0;\n#if 0\n    d = b;\n#else\n    d = clip(y);\n#endif\n"),
    ("pkg/k.cu", b"    int d = 0;\n#ifdef DEBUG\n    d = b;\n#endif\n    d = clip(y);\n"),
    ("pkg/k.cu", b"    int d = 0;\n#ifdef DEBUG\n    d = clip(y);\n#else\n    d = y;\n#endif\n"),
    ("pkg/k.cu", b"    int d = 0;\n#if A\n    d = clip(y);\n#elif B\n    d = y;\n#else\n"
     b"    d = clip2(y);\n#endif\n"),
    ("pkg/k.cu", b"    int d = 0;\n#if 1\n    y = clip(b);\n#endif\n"),
    ("pkg/k.cu", b"    int d = 0;\n    /*\n    a note\n    */ d = clip(y);\n"),
    ("pkg/a.py", b"    def e():\n        return 0\n    d = clip(y)\n"),
    ("pkg/a.py", b"    d = \"\"\"\n    a note\n    \"\"\" + str(y)\n"),
    ("pkg/a.py", b"    d = clip(a,\n             y=2, lo=y)\n"),
    ("pkg/a.py", b"    d = clip(a,\n             y=y)\n"),
    ("pkg/a.py", b"    assert n > 0\n    d = clip(y)\n"),
    ("pkg/a.py", b"    def e():\n        return clip(y)\n    d = e()\n"),
    ("pkg/a.py", b"    def e(k=y):\n        return k\n"),
    ("pkg/a.py", b"    d = f\"\"\"\n    {clip(y)}\n    \"\"\"\n")],
    ids=["c-if-1", "c-else-of-if-0", "c-read-past-an-ifdef", "c-ifdef-else-each-reading-it",
         "c-if-elif-else-each-reading-it", "c-if-1-setting-it",
         "c-read-closing-a-comment", "read-past-a-nested-def", "read-closing-a-string",
         "a-keyword-and-a-read-going-on", "a-keyword-given-it", "read-past-an-assert",
         "a-nested-def-called-between", "a-default-reading-it", "an-f-string-over-lines"])
def test_a_short_statement_past_lines_naming_it_that_run_in_every_build_moves(tmp_path, path,
                                                                               block):
    # Mirrors: where every build runs the line reading or setting y (`#if 1`, the `#else` of
    # `#if 0`, code past a conditional, a comment or a string closed on its line, a nested
    # `def`, an assertion; a keyword's value going on; a nested `def` called between or
    # reading y in a default, an f-string's fields over lines), each copy is its own step:
    # the fix moves quietly, both kept.
    statement = step_of(path)
    made = moved_quietly(leaves_between(tmp_path, path, block, statement), path)
    assert made.count(b"    " + statement + b"\n") == 2, made.decode()


# A C `if` whose `else` jumps with a `goto` (to `tail:`, or to `done:` past the copies).
GOTO_ELSE = (b"    int d = b;\n    if (n) {\n        d = clip(y);\n    } else {\n"
             b"        goto tail;\n    }\n")


@pytest.mark.parametrize("fix_below", [False, True], ids=["fix-above", "fix-below"])
@pytest.mark.parametrize("block", [
    GOTO_ELSE + b"tail:\n",
    GOTO_ELSE + b"  tail: d = clip(b);\n",
    b"    int d = b;\n    if (n) goto tail;\n    d = clip(y);\ntail:\n",
    b"    int d = b;\n    if (n) {\n        if (m) {\n            d = clip(y);\n        }\n"
    b"        goto tail;\n    }\n    d = clip(y, 2);\ntail:\n",
    b"    int d = b;\n    switch (n) {\n    case 1:\n        d = clip(y);\n        goto tail;\n"
    b"    case 2:\n        goto tail;\n    }\n    d = clip(y, 2);\ntail:\n",
    b"    int d = b;\n    if (n) {\n        d = clip(y);\n        goto tail;\n    }\n"
    b"    goto other;\ntail:\n    d = 1;\nother:\n"],
    ids=["else-going-to-it", "label-before-a-step", "one-line-if-skipping-the-read",
         "from-a-branch-reading-it-on-some-paths", "from-a-case-not-reading-it",
         "past-the-read-to-another-label"])
def test_a_short_statement_past_a_goto_to_a_label_between_the_copies_keeps_yours_first(
        tmp_path, block, fix_below):
    # A `goto` to a label between the copies lands before the copy past it: on its path
    # nothing reads y between them (or only some of its paths read it: a nested `if`, one
    # case of a `switch`), y got 1 twice, exit 0 (the `goto` was read as leaving, as one to
    # a label past the copies; the label's line was read as no step at all, or counted as a
    # line putting the copies too far apart to be read). Now the jump goes on to the label,
    # the read is on some paths only: it stops as upstream having the lines, keep yours
    # first, either copy above.
    stack = leaves_between(tmp_path, "pkg/k.cu", block, b"y += 1;", fix_below=fix_below)
    err = stops_again(stack)
    assert "its own way; " in err and ": keep yours and take upstream's copy out" in err, err


@pytest.mark.parametrize("fix_below", [False, True], ids=["fix-above", "fix-below"])
def test_a_short_statement_past_a_label_between_the_copies_stops(tmp_path, fix_below):
    # A label between the copies with nothing reading y (`tail:` + `d = clip(b);`): every
    # path through the one copy reaches the other, y got 1 twice, exit 0 (the label's line
    # ended the steps read between). Now it stops as upstream having the lines.
    block = b"    int d = b;\ntail:\n    d = clip(b);\n"
    stops(leaves_between(tmp_path, "pkg/k.cu", block, b"y += 1;", fix_below=fix_below))


@pytest.mark.parametrize("fix_below", [False, True], ids=["fix-above", "fix-below"])
@pytest.mark.parametrize("block", [
    GOTO_ELSE.replace(b"tail", b"done"),
    b"    int d = b;\n    if (n) goto done;\n    d = clip(y);\n",
    b"    int d = b;\n    if (n) {\n        d = clip(y);\n        goto next;\n    }\n"
    b"    d = clip(y, 2);\nnext:\n",
    b"    int d = b;\n    if (y > n) goto next;\n    d = clip(y, 2);\nnext:\n",
    b"    int d = clip(y);\n    if (n) goto next;\n    d = clip(y, 2);\nnext:\n"],
    ids=["else-going-past", "one-line-if-going-past", "going-to-a-label-between-having-read-it",
         "one-line-if-reading-it-going-to-a-label-between",
         "going-to-a-label-between-past-a-read"])
def test_a_short_statement_past_a_goto_to_a_label_past_the_copies_and_a_read_moves(
        tmp_path, block, fix_below):
    # Mirrors: the `goto` jumps to a label past both copies (`done:`, further down): its path
    # leaves the copies' as a `return` does, every path going on reads y; or it jumps to a
    # label between having read y on its own path (in its block, its `if`'s condition, or
    # above its `if`). Each copy is its own step: the fix moves quietly, both kept, either
    # copy above.
    stack = leaves_between(tmp_path, "pkg/k.cu", block, b"y += 1;", fix_below=fix_below)
    made = moved_quietly(stack, "pkg/k.cu")
    assert made.count(b"    y += 1;\n") == 2, made.decode()


@pytest.mark.parametrize("fix_below", [False, True], ids=["fix-above", "fix-below"])
@pytest.mark.parametrize("path, block", [
    ("pkg/a.py", b"    for k in range(3):\n        d = clip(y)\n"),
    ("pkg/a.py", b"    for k in (1, 2):\n        d = clip(y, k)\n"),
    ("pkg/k.cu", b"    int d = b;\n    for (int k = 0; k < 4; k++) {\n        d += y;\n    }\n")],
    ids=["range-of-a-literal", "a-tuple", "c-literal-bounds"])
def test_a_short_statement_past_a_loop_over_literals_reading_it_moves(tmp_path, path, block,
                                                                      fix_below):
    # A loop over literals runs a round at least, as `while True:`: its body reads y on every
    # path. It stopped, keep yours first, the way on taking upstream's step out; now it moves,
    # both kept.
    statement = step_of(path)
    stack = leaves_between(tmp_path, path, block, statement, fix_below=fix_below)
    made = moved_quietly(stack, path)
    assert made.count(b"    " + statement + b"\n") == 2, made.decode()


def test_a_short_statement_past_a_loop_over_literals_leaving_before_it_reads_keeps_yours_first(
        tmp_path):
    # Mirror: the round may end at a `break` above the line reading y: on that path nothing
    # reads it, the stop stays, keep yours first.
    block = b"    for k in range(3):\n        if c:\n            break\n        d = clip(y)\n"
    stack = leaves_between(tmp_path, "pkg/a.py", block)
    stops_keeping_yours_first(stack, READ_BETWEEN)


@pytest.mark.parametrize("block", [
    b"    for k in [v for v in c if v]:\n        d = clip(y)\n",
    b"    for k in [v for v in c]:\n        d = clip(y, k)\n",
    b"    for k in [*c]:\n        d = clip(y)\n",
    b"    for k in (*c, *b):\n        d = clip(y)\n"],
    ids=["comprehension-with-if", "comprehension", "unpacked-list", "unpacked-tuple"])
def test_a_short_statement_past_a_loop_over_a_bracket_that_may_be_empty_keeps_yours_first(
        tmp_path, block):
    # Mirror of the loops over literals: a comprehension or an unpacked item in the brackets
    # may give no item, the loop no round, and on that path nothing reads y between the
    # copies. Read as a literal it moved, y stepped twice, exit 0; it stops, keep yours first.
    stack = leaves_between(tmp_path, "pkg/a.py", block)
    stops_keeping_yours_first(stack, READ_BETWEEN)


@pytest.mark.parametrize("block", [
    b"    for k in range(3):\n        d = k\n    else:\n        d = clip(y)\n",
    b"    for k in (1, 2):\n        d = k\n    else:\n        d = clip(y)\n"],
    ids=["range-of-a-literal", "a-tuple"])
def test_a_short_statement_past_a_loop_over_literals_whose_else_reads_it_moves(tmp_path, block):
    # No `break`: the `else:` runs on every path, past the loop's rounds, and reads y. The
    # loop's `else:` went unread where the loop runs a round at least: a stop whose way on
    # took upstream's step out. It moves, both kept.
    stack = leaves_between(tmp_path, "pkg/a.py", block, step_of("pkg/a.py"))
    made = moved_quietly(stack, "pkg/a.py")
    assert made.count(b"    " + step_of("pkg/a.py") + b"\n") == 2, made.decode()


def test_a_short_statement_past_a_loop_over_literals_breaking_past_its_else_keeps_yours_first(
        tmp_path):
    # Mirror: a `break` skips the `else:` reading y; on that path nothing reads it.
    block = (b"    for k in range(3):\n        if k > n:\n            break\n    else:\n"
             b"        d = clip(y)\n")
    stops_keeping_yours_first(leaves_between(tmp_path, "pkg/a.py", block), READ_BETWEEN)


GUARDS_THE_OTHER_WAY_ROUND = [
    ("pkg/a.py", b"    if y > n:\n        d = clip(c)\n    else:\n        return c\n"),
    ("pkg/a.py", b"    if y > n:\n        d = clip(c)\n    else:\n        raise ValueError(c)\n"),
    ("pkg/k.cu", b"    int d = b;\n    if (y > n) {\n        d = clip(b);\n    } else {\n"
                 b"        return 0;\n    }\n")]


@pytest.mark.parametrize("path, block", GUARDS_THE_OTHER_WAY_ROUND,
                         ids=["return", "raise", "c-return"])
def test_a_short_statement_past_a_guard_written_the_other_way_round_keeps_yours_first(
        tmp_path, path, block):
    # `if y > n:` + the work / `else:` + `return c` is the guard `if not y > n: return c`:
    # on the paths going on its condition only said they go on, and there y got 1 twice,
    # exit 0 (the condition was read as telling the steps apart). Now it stops as the guard
    # does, keep yours first; delete your copy first where yours is past it.
    stops_keeping_yours_first(leaves_between(tmp_path, path, block, step_of(path)))


@pytest.mark.parametrize("path, block", GUARDS_THE_OTHER_WAY_ROUND,
                         ids=["return", "raise", "c-return"])
def test_the_fixs_short_statement_past_a_guard_written_the_other_way_round_advises_deleting_it(
        tmp_path, path, block):
    stops_deleting_yours_first(leaves_between(tmp_path, path, block, step_of(path),
                                              fix_below=True))


ROUND = (b'"""Kernels."""\n\n\ndef run(xs, n):\n    t = 0\n    for x in xs:\n'
         b"        y = x + 1\n        a = prep(x)\n        BLOCK        t += y * 2\n    return t\n")


@pytest.mark.parametrize("fix_below", [False, True], ids=["fix-above", "fix-below"])
@pytest.mark.parametrize("leave", [b"continue", b"break"])
def test_a_short_statement_past_an_if_else_reading_it_or_leaving_the_round_moves(
        tmp_path, leave, fix_below):
    # Both copies in a loop's body, between them `if a > n:` + `d = clip(y)` / `else:` +
    # `continue`: every path reaching upstream's copy reads y, the other leaves the round. It
    # stopped, keep yours first (the `else` read as a path going on not reading y); now it
    # moves, both kept.
    block = (b"if a > n:\n            d = clip(y)\n        else:\n            " + leave +
             b"\n")
    base = ROUND.replace(b"BLOCK", block)
    top, bottom = b"        y = x + 1\n", b"        t += y"
    mine = top + b"        y += 1\n"
    theirs = b"        y += 1\n" + bottom
    fix, up = (base.replace(top, mine), base.replace(bottom, theirs)) if not fix_below else \
        (base.replace(bottom, theirs), base.replace(top, mine))
    stack = stack_with(tmp_path, base, fix, up)
    moves_with_both(stack, b"        y += 1\n")


@pytest.mark.parametrize("fix_below", [False, True], ids=["fix-above", "fix-below"])
@pytest.mark.parametrize("block", [
    b"    if n: d = y\n    else: d = c\n",
    b"    if n:\n        d = y\n    else: d = c\n",
    b"    if n:\n        d = y\n    elif c: d = c\n",
    b"    try:\n        d = clip(c)\n    except ValueError: d = y\n"],
    ids=["if-else", "else", "elif", "except"])
def test_a_short_statement_past_an_if_else_on_their_headers_lines_keeps_yours_first(
        tmp_path, block, fix_below):
    # A branch on its header's line (`if n: d = y` / `else: d = c`, `else: d = c` past a
    # block's body, `except ValueError: d = y`), y read on some paths only. It was read as no
    # block, and merged both in, exit 0. Now it stops, keep yours first.
    stack = leaves_between(tmp_path, "pkg/a.py", block, fix_below=fix_below)
    stops_keeping_yours_first(stack, READ_IN_AN_IF)


def test_a_short_statement_past_an_if_else_on_their_headers_lines_both_reading_it_moves(tmp_path):
    # Mirror: both branches read y: it moves, both kept.
    block = b"    if n: d = y\n    else: d = y + 1\n"
    stack = leaves_between(tmp_path, "pkg/a.py", block)
    moves_with_both(stack, b"    y += 1\n")


@pytest.mark.parametrize("fix_below", [False, True], ids=["fix-above", "fix-below"])
@pytest.mark.parametrize("path, block", [
    ("pkg/a.py", b"    match n:\n        case 1 if y > c:\n            d = 1\n        case _:\n"
                 b"            d = 2\n"),
    ("pkg/k.cu", b"    int d = b;\n    for (int k = 0; k < n; k += y) {\n        d += k;\n"
                 b"    }\n")],
    ids=["a-case-guard", "c-a-loop-step"])
def test_a_short_statement_past_a_case_guard_or_a_loop_step_reading_it_keeps_yours_first(
        tmp_path, path, block, fix_below):
    # A `case`'s guard is tried where its pattern matched only, a C loop's step runs past a
    # round only: y read there is read on some paths. Each merged both in, exit 0; now it
    # stops, keep yours first.
    stack = leaves_between(tmp_path, path, block, step_of(path), fix_below=fix_below)
    err = stops_again(stack)
    assert "its own way; " in err and ": keep yours and take upstream's copy out" in err, err


BINDING_IT = [
    ("pkg/k.cu", b"    if ((y = clip(y)) > n) return b;\n    int d = clip(b);\n"),
    ("pkg/a.py", b"    if (y := clip(y)) > n:\n        return c\n    d = clip(c)\n"),
    ("pkg/a.py", b"    if (y := clip(y)) > n: return c\n    d = clip(c)\n"),
    ("pkg/a.py", b"    if n:\n        d, y = split(y)\n"),
    ("pkg/a.py", b"    if n:\n        d = (y := clip(y))\n"),
    ("pkg/a.py", b"    if n:\n        for y in parts(c):\n            keep(y)\n"),
    ("pkg/a.py", b"    if n:\n        d = y = clip(c)\n"),
    ("pkg/a.py", b"    if n:\n        with open(c) as y:\n            keep(y)\n"),
    ("pkg/k.cu", b"    int d = b;\n    if (n) d = clip(y = b);\n"),
    ("pkg/k.cu", b"    int d = b;\n    if (n) {\n        d = (y = clip(b)) + 1;\n    }\n")]
BINDING_IT_IDS = ["c-guard-assigning-it", "walrus-guard", "walrus-one-line-guard", "tuple-target",
                  "walrus-in-the-body", "for-target", "chained-targets", "with-as",
                  "c-assigning-it-in-a-call", "c-assigning-it-in-a-sum"]


@pytest.mark.parametrize("fix_below", [False, True], ids=["fix-above", "fix-below"])
@pytest.mark.parametrize("path, block", BINDING_IT, ids=BINDING_IT_IDS)
def test_a_short_statement_past_an_if_setting_it_inside_a_line_moves(tmp_path, path, block,
                                                                     fix_below):
    # An `if` between sets y otherwise than as a line's first word (`if ((y = clip(y)) > n)`,
    # a walrus, a tuple's or a loop's target, `with ... as y`): each copy is its own step,
    # both wanted. The `if` was read as only reading y, and the rebase stopped as for a
    # doubling, its first advice losing a line (delete your copy, or take upstream's out).
    # Now it moves quietly, both kept, either copy above.
    statement = step_of(path)
    stack = leaves_between(tmp_path, path, block, statement, fix_below=fix_below)
    made = moved_quietly(stack, path)
    assert made.count(b"    " + statement + b"\n") == 2, made.decode()


@pytest.mark.parametrize("fix_below", [False, True], ids=["fix-above", "fix-below"])
@pytest.mark.parametrize("path, block", [
    ("pkg/a.py", b"    if n:\n        d[y] = c\n"),
    ("pkg/a.py", b"    if n:\n        d = (e := clip(y))\n"),
    ("pkg/a.py", b"    if n:\n        d = y <= c\n"),
    ("pkg/a.py", b"    if n:\n        d.y = clip(y)\n"),
    ("pkg/k.cu", b"    int d = b;\n    if (n) d = (y == b);\n"),
    ("pkg/k.cu", b"    int d = b;\n    if (n) {\n        s.y = clip(y);\n    }\n")],
    ids=["an-index", "walrus-of-another", "a-comparison", "an-attribute",
         "c-a-comparison", "c-a-member"])
def test_a_short_statement_past_an_if_reading_it_as_it_binds_another_keeps_yours_first(
        tmp_path, path, block, fix_below):
    # Mirrors: the `if` binds another name (`k`, `e`, an item of d, a member) with y's value,
    # or compares y: it reads y on the paths through its body only, and on the others y
    # gets 1 twice: the stop stays, keep yours first.
    stack = leaves_between(tmp_path, path, block, step_of(path), fix_below=fix_below)
    stops_keeping_yours_first(stack, READ_IN_AN_IF)



@pytest.mark.parametrize("fix_below", [False, True], ids=["fix-above", "fix-below"])
@pytest.mark.parametrize("block", [
    b"    if n:\n        self.flag = c\n    d = clip(c)\n",
    b"    if n:\n        self.items[n] = c\n    d = clip(c)\n",
    b"    if n:\n        self.flag, d = c, clip(c)\n"],
    ids=["another-attribute", "an-item-of-another-attribute", "a-tuple-of-attributes"])
def test_a_short_statement_of_an_attribute_past_an_if_setting_another_keeps_yours_first(
        tmp_path, block, fix_below):
    # `self.count += 1` made by the fix and by upstream, an `if` between setting another
    # attribute of self (`self.flag = c`): read as setting `self`, it told the two steps
    # apart, and the fix moved, both kept, exit 0: the count stepped twice on every path.
    # It sets self.flag, not self: the `if` reads self on some paths, the stop stays, keep
    # yours first.
    stack = leaves_between(tmp_path, "pkg/a.py", block, b"self.count += 1",
                           fix_below=fix_below)
    stops_keeping_yours_first(stack, READ_IN_AN_IF)

@pytest.mark.parametrize("fix_below", [False, True], ids=["fix-above", "fix-below"])
def test_a_short_statement_past_an_if_looping_over_it_keeps_yours_first(tmp_path, fix_below):
    # Mirror: the loop in the `if` binds k, reading y for its bound: the stop stays, keep
    # yours first (the loop reads y as the fix has it).
    block = b"    if n:\n        for k in range(y):\n            keep(k, d)\n"
    stack = leaves_between(tmp_path, "pkg/a.py", block, fix_below=fix_below)
    stops_keeping_yours_first(stack, READ_BETWEEN)


@pytest.mark.parametrize("path, block", [
    ("pkg/a.py", b"    if (d := clip(y)) > n:\n        return c\n    d = clip(c)\n"),
    ("pkg/k.cu", b"    int d = b;\n    if ((d = clip(y)) > n) return b;\n")],
    ids=["walrus-of-another", "c-assigning-another"])
def test_a_short_statement_past_a_guard_reading_it_as_it_binds_another_keeps_yours_first(
        tmp_path, path, block):
    # Mirror: the guard's condition sets another name from y (`d := clip(y)`): it only reads
    # y, and on the paths going on y gets 1 twice: the stop stays, keep yours first.
    stack = leaves_between(tmp_path, path, block, step_of(path))
    stops_keeping_yours_first(stack)


@pytest.mark.parametrize("fix_below", [False, True], ids=["fix-above", "fix-below"])
@pytest.mark.parametrize("block, clause", [
    (b"    int d = b;\n    if (n) {\n        for (int y = 0; y < n; y += 2) d += y;\n    }\n",
     READ_BETWEEN),
    (b"    int d = b;\n    if (n) {\n        int e = 0, y = clip(b);\n        d = e + y;\n    }\n",
     READ_IN_AN_IF)],
    ids=["a-loop-declaring-it", "a-declaration-list"])
def test_a_short_statement_past_an_if_declaring_its_own_keeps_yours_first(
        tmp_path, block, clause, fix_below):
    # The `if`'s block declares a y of its own (`for (int y = 0; ...)`, `int e = 0, y = ...`):
    # another variable, shadowing the copies' y, which nothing between sets; on every path it
    # gets 1 twice. The declaration was read as setting y: the fix moved, both kept, exit 0.
    # Now the stop stays, keep yours first.
    stack = leaves_between(tmp_path, "pkg/k.cu", block, step_of("pkg/k.cu"), fix_below=fix_below)
    stops_keeping_yours_first(stack, clause)


@pytest.mark.parametrize("fix_below", [False, True], ids=["fix-above", "fix-below"])
@pytest.mark.parametrize("block", [
    b"    int d = b;\n    if (n) {\n        for (y = 0; y < n; y += 2) d += y;\n    }\n",
    b"    int d = b;\n    if (n) {\n        int e = clip(b);\n        y = e;\n    }\n"],
    ids=["a-loop-setting-it", "a-declaration-of-another"])
def test_a_short_statement_past_an_if_setting_it_beside_a_declaration_moves(tmp_path, block,
                                                                              fix_below):
    # Mirrors: the `if`'s block sets the copies' own y (a loop's init without a type, a line
    # past another name's declaration): each copy is its own step, both wanted: it moves.
    path = "pkg/k.cu"
    stack = leaves_between(tmp_path, path, block, step_of(path), fix_below=fix_below)
    made = moved_quietly(stack, path)
    assert made.count(b"    " + step_of(path) + b"\n") == 2, made.decode()


@pytest.mark.parametrize("fix_below", [False, True], ids=["fix-above", "fix-below"])
@pytest.mark.parametrize("block", [
    b"    int d = b;\n    if (n) {\n        int y = clip(b);\n        y = y * 2;\n        d = y;\n"
    b"    }\n",
    b"    int d = b;\n    if (n) {\n        int e = 0, y = clip(b);\n        y = y * 2;\n"
    b"        d = e + y;\n    }\n"],
    ids=["a-declaration", "a-declaration-list"])
def test_a_short_statement_past_an_if_declaring_its_own_then_setting_it_keeps_yours_first(
        tmp_path, block, fix_below):
    # The `if`'s block declares a y of its own and sets it (`int y = clip(b);` + `y = y *
    # 2;`): another variable, the copies' y set nowhere between, and on every path it got 1
    # twice, exit 0 (the declaration was read as setting the copies' y, each copy its own
    # step). Now the stop stays, keep yours first.
    stack = leaves_between(tmp_path, "pkg/k.cu", block, step_of("pkg/k.cu"), fix_below=fix_below)
    stops_keeping_yours_first(stack, READ_IN_AN_IF)


@pytest.mark.parametrize("fix_below", [False, True], ids=["fix-above", "fix-below"])
def test_a_short_statement_past_an_if_setting_it_past_an_inner_declaration_moves(tmp_path,
                                                                                 fix_below):
    # Mirror: the y an inner loop's body declares ends with that body; the line past it sets
    # the copies' own y: each copy its own step, both kept.
    block = (b"    int d = b;\n    if (n) {\n        for (int k = 0; k < n; k++) {\n"
             b"            int y = k;\n            d += y;\n        }\n        y = d;\n    }\n")
    path = "pkg/k.cu"
    stack = leaves_between(tmp_path, path, block, step_of(path), fix_below=fix_below)
    made = moved_quietly(stack, path)
    assert made.count(b"    " + step_of(path) + b"\n") == 2, made.decode()


@pytest.mark.parametrize("fix_below", [False, True], ids=["fix-above", "fix-below"])
def test_a_short_statement_of_an_attribute_past_an_if_deleting_another_keeps_yours_first(
        tmp_path, fix_below):
    # `self.count += 1` made by the fix and by upstream, an `if` between deleting another
    # attribute of self (`del self.cache`): a `del` was read as no plain step, and the fix
    # moved, both kept, exit 0, the count stepped twice on every path. It only reads self
    # on some paths: the stop stays, keep yours first.
    block = b"    if n:\n        del self.cache\n"
    stack = leaves_between(tmp_path, "pkg/a.py", block, b"self.count += 1",
                           fix_below=fix_below)
    stops_keeping_yours_first(stack, READ_IN_AN_IF)


@pytest.mark.parametrize("fix_below", [False, True], ids=["fix-above", "fix-below"])
@pytest.mark.parametrize("block", [
    b"    if n:\n        self.count = 0\n",
    b"    if n:\n        del self.count\n",
    b"    if n:\n        self.count *= 2\n"],
    ids=["reset", "deleted", "scaled"])
def test_a_short_statement_of_an_attribute_past_an_if_setting_it_moves(tmp_path, block,
                                                                        fix_below):
    # The `if` sets the statement's own attribute anew (`self.count = 0`): each copy its own
    # step, as past `if n:` + `y = c`; it stopped as a doubling, keep yours first. Now it
    # moves, both kept.
    line = b"self.count += 1"
    stack = leaves_between(tmp_path, "pkg/a.py", block, line, fix_below=fix_below)
    made = moved_quietly(stack, "pkg/a.py")
    assert made.count(b"    " + line + b"\n") == 2, made.decode()


@pytest.mark.parametrize("fix_below", [False, True], ids=["fix-above", "fix-below"])
def test_a_short_statement_of_an_attribute_past_an_if_adding_to_it_keeps_yours_first(
        tmp_path, fix_below):
    # Mirror: the `if` adds to the statement's own attribute (`self.count += 2`): the two
    # copies add alike in either order, the same step twice: the stop stays, keep yours first.
    block = b"    if n:\n        self.count += 2\n"
    stack = leaves_between(tmp_path, "pkg/a.py", block, b"self.count += 1",
                           fix_below=fix_below)
    stops_keeping_yours_first(stack, READ_IN_AN_IF)


C_LOOP_ADDING = (b"    int d = b;\n    for (int k = 0; k < n; k++) {\n        y += k;\n"
                 b"        if (k > d) {\n            break;\n        }\n    }\n")


@pytest.mark.parametrize("path, block", [
    ("pkg/a.py", b"    d = c\n    for k in range(n):\n        y += k\n        if k > d:\n"
                 b"            break\n"),
    ("pkg/a.py", b"    d = c\n    while d:\n        y -= d\n        d = clip(d)\n"),
    ("pkg/k.cu", C_LOOP_ADDING)],
    ids=["a-loop-stepping-it", "a-loop-stepping-it-back", "c-a-loop-stepping-it"])
def test_a_short_statement_past_a_loop_adding_to_it_keeps_yours_first(tmp_path, path, block):
    # A loop between adds to y (`y += k`), left by a `break` of its own: every path reaches
    # both copies, and the loop's sum is the same whichever side of it the fix's `y += 1`
    # stands: y got 1 twice, exit 0 (the loop's step read as telling the two apart). Now it
    # stops, keep yours first (the loop reads y as the fix has it). In C the loop's lines of
    # a brace alone count for nothing in the 10 lines a copy is read within (they put
    # upstream's copy 11 lines off, and it moved, y got 1 twice, exit 0).
    stack = leaves_between(tmp_path, path, block, step_of(path))
    stops_keeping_yours_first(stack, READ_BETWEEN)


def test_a_short_statement_past_a_loop_of_the_same_step_keeps_yours_first(tmp_path):
    # The loop between the copies steps y by the very line the fix adds (`y += 1` each round):
    # read as upstream's copy (the nearest other), in a loop the fix's is not in, it told the
    # two apart, and the rebase merged in a third `y += 1`, exit 0, y got 1 twice. Upstream's
    # copy is the one upstream added, past the loop: it stops, naming that line, keep yours
    # first (the loop only adds to y, as test_a_short_statement_past_a_loop_adding_to_it_...).
    base = STRAIGHT.replace(b"    c = norm(b)\n",
                            b"    c = norm(b)\n    for k in range(n):\n        y += 1\n")
    stack = stack_with(tmp_path, base,
                       base.replace(b"    y = x + 1\n", b"    y = x + 1\n    y += 1\n"),
                       base.replace(b"    z = y * 2\n", b"    y += 1\n    z = y * 2\n"))
    stops_keeping_yours_first(stack, READ_BETWEEN, "pkg/a.py line 6 (upstream's at line 14): "
                              "upstream has these lines already, ")


def test_a_short_statement_upstream_added_in_a_loop_past_a_copy_the_file_had_moves(tmp_path):
    # Mirror: upstream adds its `y += 1` in a loop's body (each round), the fix its own once
    # above, beside a `y += 1` the file had: each its own, both kept. The file's copy, read as
    # upstream's, stopped the rebase, its first way on deleting the fix's copy (its step lost).
    base = STRAIGHT.replace(b"    c = norm(b)\n", b"    c = norm(b)\n    y += 1\n")
    stack = stack_with(tmp_path, base,
                       base.replace(b"    y = x + 1\n", b"    y = x + 1\n    y += 1\n"),
                       base.replace(b"    z = y * 2\n",
                                    b"    for k in range(n):\n        y += 1\n    z = y * 2\n"))
    made = moved_quietly(stack, "pkg/a.py")
    assert made.split(b"\n").count(b"    y += 1") == 2, made.decode()
    assert made.split(b"\n").count(b"        y += 1") == 1, made.decode()


def branch_of_an_if(tmp_path, path: str, block: bytes, theirs_block: bytes,
                    fix_in_branch: bool = False) -> OneUpstreamStack:
    """STRAIGHT (STRAIGHT_CU for a .cu path) with `block` in place of the lines between y's
    setting and z's: the fix adds `y += 1` under y's setting; upstream makes `block`
    `theirs_block` (its copy of the step inside a branch). Or the other way round where
    `fix_in_branch`."""
    if path.endswith(".cu"):
        base0, cut, top, mine = (STRAIGHT_CU, b"    int c = norm(b);\n    int d = clip(c);\n",
                                 b"    int y = x + 1;\n", b"y += 1;")
    else:
        base0, cut, top, mine = STRAIGHT, b"    d = clip(c)\n", b"    y = x + 1\n", b"y += 1"
    base = base0.replace(cut, block)
    above, in_branch = base.replace(top, top + b"    " + mine + b"\n"), base0.replace(cut,
                                                                                     theirs_block)
    fix, upstream = (in_branch, above) if fix_in_branch else (above, in_branch)
    stack = OneUpstreamStack(tmp_path, {path: base, "pkg/b.py": b"b = 1\n"})
    stack.add_fix("fa", path, base, fix)
    stack.commit({path: upstream}, "Step y", tag="v2")
    return stack


@pytest.mark.parametrize("path, block, theirs_block", [
    ("pkg/a.py", b"    if n:\n        return c\n    else:\n        d = clip(c)\n",
     b"    if n:\n        return c\n    else:\n        y += 1\n        d = clip(c)\n"),
    ("pkg/a.py", b"    if n:\n        d = clip(c)\n    else:\n        return c\n",
     b"    if n:\n        d = clip(c)\n        y += 1\n    else:\n        return c\n"),
    ("pkg/a.py", b"    if n:\n        return c\n    elif c:\n        raise ValueError(c)\n"
                 b"    else:\n        d = clip(c)\n",
     b"    if n:\n        return c\n    elif c:\n        raise ValueError(c)\n"
     b"    else:\n        d = clip(c)\n        y += 1\n"),
    ("pkg/k.cu", b"    int d = b;\n    if (n) {\n        return b;\n    } else {\n"
                 b"        d = clip(b);\n    }\n",
     b"    int d = b;\n    if (n) {\n        return b;\n    } else {\n        y += 1;\n"
     b"        d = clip(b);\n    }\n"),
    ("pkg/k.cu", b"    int d = b;\n    if (n) {\n        d = clip(b);\n    } else {\n"
                 b"        goto done;\n    }\n",
     b"    int d = b;\n    if (n) {\n        d = clip(b);\n        y += 1;\n    } else {\n"
     b"        goto done;\n    }\n"),
    ("pkg/a.py", b"    try:\n        d = clip(c)\n    except OSError:\n        return c\n",
     b"    try:\n        d = clip(c)\n        y += 1\n    except OSError:\n        return c\n"),
    ("pkg/a.py", b"    try:\n        d = clip(c)\n    except OSError:\n        return c\n"
                 b"    except ValueError:\n        raise\n",
     b"    try:\n        d = clip(c)\n        y += 1\n    except OSError:\n        return c\n"
     b"    except ValueError:\n        raise\n"),
    ("pkg/a.py", b"    if n:\n        d = clip(c)\n    else:\n        return y\n",
     b"    if n:\n        d = clip(c)\n        y += 1\n    else:\n        return y\n"),
    ("pkg/a.py", b"    try:\n        d = clip(c)\n    except OSError:\n        return y\n",
     b"    try:\n        d = clip(c)\n        y += 1\n    except OSError:\n        return y\n")],
    ids=["else-after-a-return", "if-before-an-else-returning", "else-after-an-elif-raising",
         "c-else-after-a-return", "c-if-before-an-else-leaving", "try-whose-handler-returns",
         "try-whose-handlers-leave", "the-other-returning-it", "a-handler-returning-it"])
def test_a_short_statement_upstream_added_in_the_branch_going_on_keeps_yours_first(
        tmp_path, path, block, theirs_block):
    # Upstream steps y inside the one branch of an if/else that goes on, every other branch
    # leaving (`if n: return c` / `else: y += 1`; a `try:` body whose handlers all leave;
    # the one that leaves may name y, `else: return y`, no path through upstream's copy runs
    # it): its copy runs on every path past the if, as one past it does, and there y got 1
    # twice, exit 0 (a copy inside a branch was read as another step). Now it stops as
    # upstream having the lines, keep yours first (the paths that leave run the fix's copy
    # alone).
    stack = branch_of_an_if(tmp_path, path, block, theirs_block)
    stops_keeping_yours_first(stack)


@pytest.mark.parametrize("path, block, theirs_block", [
    ("pkg/a.py", b"    if y > n:\n        return c\n    else:\n        d = clip(c)\n",
     b"    if y > n:\n        return c\n    else:\n        y += 1\n        d = clip(c)\n"),
    ("pkg/a.py", b"    if y > n:\n        d = clip(c)\n    else:\n        return c\n",
     b"    if y > n:\n        d = clip(c)\n        y += 1\n    else:\n        return c\n"),
    ("pkg/k.cu", b"    int d = b;\n    if (y > n) {\n        return b;\n    } else {\n"
                 b"        d = clip(b);\n    }\n",
     b"    int d = b;\n    if (y > n) {\n        return b;\n    } else {\n        y += 1;\n"
     b"        d = clip(b);\n    }\n")],
    ids=["else-of-a-guard", "if-of-a-guard", "c-else-of-a-guard"])
def test_a_short_statement_upstream_added_in_the_branch_a_condition_reading_it_goes_on_to_stops(
        tmp_path, path, block, theirs_block):
    # The condition of the if holding upstream's copy reads y, every other branch leaving
    # the function: on the paths through upstream's copy it only said they go on, as a
    # guard's, and there y got 1 twice, exit 0 (the condition was read as telling the steps
    # apart). Now it stops as for the branch going on, keep yours first.
    stack = branch_of_an_if(tmp_path, path, block, theirs_block)
    stops_keeping_yours_first(stack)


BRANCHES_GOING_ON = [
    ("pkg/a.py", b"    if n:\n        d = clip(c)\n    else:\n        d = c\n",
     b"    if n:\n        d = clip(c)\n        y += 1\n    else:\n        d = c\n"),
    ("pkg/a.py", b"    if n:\n        return c\n    elif c:\n        d = c\n    else:\n"
                 b"        d = clip(c)\n",
     b"    if n:\n        return c\n    elif c:\n        d = c\n    else:\n        y += 1\n"
     b"        d = clip(c)\n"),
    ("pkg/k.cu", b"    int d = b;\n    if (n) {\n        d = clip(b);\n    } else {\n"
                 b"        d = 0;\n    }\n",
     b"    int d = b;\n    if (n) {\n        d = clip(b);\n        y += 1;\n    } else {\n"
     b"        d = 0;\n    }\n"),
    ("pkg/a.py", b"    try:\n        d = clip(c)\n    except OSError:\n        d = c\n",
     b"    try:\n        d = clip(c)\n        y += 1\n    except OSError:\n        d = c\n"),
    ("pkg/a.py", b"    if n:\n        d = clip(c)\n    else:\n        d = y\n",
     b"    if n:\n        d = clip(c)\n        y += 1\n    else:\n        d = y\n")]
BRANCHES_GOING_ON_IDS = ["no-branch-leaving", "an-elif-going-on", "c-no-branch-leaving",
                         "a-handler-going-on", "the-other-reading-it"]


@pytest.mark.parametrize("path, block, theirs_block", BRANCHES_GOING_ON,
                         ids=BRANCHES_GOING_ON_IDS)
def test_a_short_statement_upstream_added_in_one_of_the_branches_going_on_keeps_yours_first(
        tmp_path, path, block, theirs_block):
    # Upstream steps y inside one branch of an if/else, another going on too (or a `try:`
    # body whose handler goes on): on the paths through upstream's branch y got 1 twice,
    # exit 0 (the copies, on other paths at the branch, were read as two steps). Whether
    # they are, nothing tells: it stops, keep yours first (the paths through the other
    # branches run the fix's copy alone), keep both a way on.
    stops_keeping_yours_first(branch_of_an_if(tmp_path, path, block, theirs_block))


@pytest.mark.parametrize("path, block, theirs_block", [BRANCHES_GOING_ON[0],
                                                       BRANCHES_GOING_ON[2]],
                         ids=["no-branch-leaving", "c-no-branch-leaving"])
def test_the_fixs_short_statement_in_one_of_the_branches_going_on_advises_deleting_it(
        tmp_path, path, block, theirs_block):
    # Mirror: the fix's copy in the branch, upstream's above the if: it stops, delete your
    # copy first (upstream's runs on every path through the fix's).
    stops_deleting_yours_first(branch_of_an_if(tmp_path, path, block, theirs_block,
                                               fix_in_branch=True))


@pytest.mark.parametrize("path, block, theirs_block", [
    ("pkg/a.py", b"    if n:\n        return c\n    else:\n        y = c\n        d = clip(c)\n",
     b"    if n:\n        return c\n    else:\n        y = c\n        y += 1\n"
     b"        d = clip(c)\n"),
    ("pkg/a.py", b"    if y > n:\n        return c\n    else:\n        d = clip(y)\n",
     b"    if y > n:\n        return c\n    else:\n        d = clip(y)\n        y += 1\n"),
    ("pkg/a.py", b"    if y > n:\n        d = clip(c)\n    else:\n        d = c\n",
     b"    if y > n:\n        d = clip(c)\n        y += 1\n    else:\n        d = c\n")],
    ids=["set-anew-in-the-branch", "read-in-the-branch-before-it",
         "a-condition-reading-it-no-branch-leaving"])
def test_a_short_statement_in_a_branch_told_apart_moves(tmp_path, path, block, theirs_block):
    # Mirrors: the branch before the copy sets y anew, or reads y above upstream's copy (or
    # its condition does, the other branch going on too): both kept, the fix moves quietly.
    stack = branch_of_an_if(tmp_path, path, block, theirs_block)
    made = moved_quietly(stack, path)
    statement = step_of(path)
    assert made.count(b" " + statement + b"\n") == 2, made.decode()


@pytest.mark.parametrize("path, block, theirs_block", [
    ("pkg/a.py", b"    if n:\n        return c\n    else:\n        d = clip(c)\n",
     b"    if n:\n        return c\n    else:\n        d = clip(c)\n        y += 1\n"),
    ("pkg/a.py", b"    if n:\n        d = clip(c)\n    else:\n        return c\n",
     b"    if n:\n        d = clip(c)\n        y += 1\n    else:\n        return c\n"),
    ("pkg/k.cu", b"    int d = b;\n    if (n) {\n        return b;\n    } else {\n"
                 b"        d = clip(b);\n    }\n",
     b"    int d = b;\n    if (n) {\n        return b;\n    } else {\n        y += 1;\n"
     b"        d = clip(b);\n    }\n"),
    ("pkg/a.py", b"    try:\n        d = clip(c)\n    except OSError:\n        return c\n",
     b"    try:\n        d = clip(c)\n        y += 1\n    except OSError:\n        return c\n"),
    ("pkg/a.py", b"    if n:\n        return c\n    elif c:\n        d = clip(c)\n",
     b"    if n:\n        return c\n    elif c:\n        d = clip(c)\n        y += 1\n")],
    ids=["else-after-a-return", "if-before-an-else-returning", "c-else-after-a-return",
         "try-whose-handler-returns", "elif-with-no-else"])
def test_the_fixs_short_statement_in_the_branch_going_on_advises_deleting_it(
        tmp_path, path, block, theirs_block):
    # Mirror of upstream's copy in the branch going on: the fix steps y inside the one
    # branch of an if/else that goes on, upstream above the if. Upstream's runs on every
    # path through the fix's, and there y got 1 twice, exit 0 (the fix's copy, deeper than
    # upstream's, was read as another step; in the last branch of an `if`/`elif` with no
    # `else`, whose paths run upstream's copy too, alike). Now it stops, delete your copy
    # first.
    stops_deleting_yours_first(branch_of_an_if(tmp_path, path, block, theirs_block,
                                                fix_in_branch=True))


@pytest.mark.parametrize("path, block, theirs_block", [
    ("pkg/a.py", b"    if n:\n        return c\n    elif y > c:\n        d = clip(c)\n",
     b"    if n:\n        return c\n    elif y > c:\n        d = clip(c)\n        y += 1\n"),
    ("pkg/a.py", b"    if y > n:\n        return c\n    elif c:\n        d = clip(c)\n",
     b"    if y > n:\n        return c\n    elif c:\n        d = clip(c)\n        y += 1\n"),
    ("pkg/a.py", b"    if y > n:\n        return c\n    else:\n        d = clip(c)\n",
     b"    if y > n:\n        return c\n    else:\n        d = clip(c)\n        y += 1\n"),
    ("pkg/k.cu", b"    if (n) {\n        return b;\n    } else if (y > b) {\n"
     b"        int d = clip(b);\n    }\n",
     b"    if (n) {\n        return b;\n    } else if (y > b) {\n        int d = clip(b);\n"
     b"        y += 1;\n    }\n"),
    ("pkg/k.cu", b"    if (y > b) {\n        return b;\n    } else {\n        int d = clip(b);\n    }\n",
     b"    if (y > b) {\n        return b;\n    } else {\n        int d = clip(b);\n"
     b"        y += 1;\n    }\n")],
    ids=["its-elif-reading-it", "the-if-before-reading-it", "the-if-before-its-else-reading-it",
         "c-its-else-if-reading-it", "c-the-if-before-its-else-reading-it"])
def test_the_fixs_short_statement_in_a_branch_a_condition_reading_it_goes_on_to_moves(
        tmp_path, path, block, theirs_block):
    # The fix steps y in a branch going on of an if/elif (with an else or none), upstream
    # above the if, and a condition tried on the way to the fix's branch reads y (`elif y >
    # c:`, `if y > n:` + `return c` / `else:`; C's `} else if (y > b) {`): it read
    # as upstream's copy running on every path through the fix's, the rebase stopped, delete
    # your copy first (which drops the fix's step). The condition reads y between the copies
    # on every path through the fix's: each its own, the fix moves quietly, both kept. (The
    # mirror with a condition not reading it stops:
    # ::test_the_fixs_short_statement_in_the_branch_going_on_advises_deleting_it.)
    made = moved_quietly(branch_of_an_if(tmp_path, path, block, theirs_block,
                                         fix_in_branch=True), path)
    assert made.count(b" " + step_of(path) + b"\n") == 2, made.decode()


@pytest.mark.parametrize("path, block, theirs_block", [
    ("pkg/a.py", b"    if n:\n        return c\n    else:\n        d = clip(y)\n",
     b"    if n:\n        return c\n    else:\n        d = clip(y)\n        y += 1\n")],
    ids=["read-in-the-branch-before-it"])
def test_the_fixs_short_statement_in_a_branch_told_apart_moves(tmp_path, path, block,
                                                               theirs_block):
    # Mirror: the branch reads y above the fix's copy: both kept, the fix moves quietly.
    stack = branch_of_an_if(tmp_path, path, block, theirs_block, fix_in_branch=True)
    made = moved_quietly(stack, path)
    assert made.count(b" " + step_of(path) + b"\n") == 2, made.decode()


# A function with a loop above the fix's run() of straight steps.
STEPS = b"".join(b"    s%d = prep%d(x)\n" % (k, k) for k in range(5))
BELOW_A_LOOP = (b'"""Kernels."""\n\n\ndef prev(ys):\n    for v in ys:\n        log(v)\n\n\n'
                b"def run(x, n):\n    y = x + 1\n" + STEPS + b"    z = y * 2\n    return z + s4\n")
BELOW_A_LOOP_CU = (b"#include <hip/hip_runtime.h>\n\n"
                   b"__device__ void prev(const int* ys, int m) {\n"
                   b"    for (int v = 0; v < m; ++v) {\n        log(ys[v]);\n    }\n}\n\n"
                   b"__device__ int run(int x, int n) {\n    int y = x + 1;\n"
                   + STEPS.replace(b"    s", b"    int s").replace(b")\n", b");\n")
                   + b"    int z = y * 2;\n    return z + s4;\n}\n")


def below_a_loop(tmp_path, path: str, in_run: bytes) -> OneUpstreamStack:
    """Fix `fa` steps y right after run() sets it; upstream steps it in the loop of prev(),
    the function above, and adds `in_run` before run()'s `z = y * 2`."""
    c_file = path.endswith(".cu")
    base = BELOW_A_LOOP_CU if c_file else BELOW_A_LOOP
    set_y, log_v, use_y = (b"    int y = x + 1;\n", b"        log(ys[v]);\n",
                           b"    int z = y * 2;\n") if c_file else \
        (b"    y = x + 1\n", b"        log(v)\n", b"    z = y * 2\n")
    fix = base.replace(set_y, set_y + b"    " + step_of(path) + b"\n")
    theirs = base.replace(log_v, log_v + b"        " + step_of(path) + b"\n").replace(
        use_y, in_run + use_y)
    stack = OneUpstreamStack(tmp_path, {path: base, "pkg/b.py": b"b = 1\n"})
    stack.add_fix("fa", path, base, fix)
    stack.commit({path: theirs}, "Step y", tag="v2")
    return stack


@pytest.mark.parametrize("path", ["pkg/a.py", "pkg/k.cu"], ids=["python", "c"])
def test_a_short_statement_further_down_the_run_with_a_copy_in_the_loop_above_stops(tmp_path,
                                                                                    path):
    # Upstream steps y six lines lower in run(), a doubling, and also adds the same line to
    # the loop of prev(), the function above, nearer the fix's line: that copy was read as
    # upstream's, in a loop the fix's is not in, each its own, and merged run() stepped y
    # twice, exit 0. Now upstream's copy is the one in the fix's own function: it stops.
    stops_deleting_yours_first(below_a_loop(tmp_path, path, b"    " + step_of(path) + b"\n"))


@pytest.mark.parametrize("path, in_run", [
    ("pkg/a.py", b""),
    ("pkg/a.py", b"    for k in range(n):\n        y += 1\n"),
    ("pkg/k.cu", b""),
    ("pkg/k.cu", b"    for (int k = 0; k < n; ++k) {\n        y += 1;\n    }\n")],
    ids=["only-in-the-loop-above", "and-in-a-loop-of-run", "c-only-in-the-loop-above",
         "c-and-in-a-loop-of-run"])
def test_a_short_statement_in_the_loop_above_and_in_a_loop_of_its_own_moves(tmp_path, path,
                                                                              in_run):
    # Mirrors: upstream's copy in run() is in a loop the fix's is not in (y stepped n times,
    # each its own step), or there is none in run(): the copy in prev()'s loop is other code
    # that reads alike. The fix moves quietly, every copy kept.
    stack = below_a_loop(tmp_path, path, in_run)
    made = moved_quietly(stack, path)
    assert made.count(step_of(path) + b"\n") == (3 if in_run else 2), made.decode()
