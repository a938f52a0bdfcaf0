"""A fix whose added lines upstream added too, its own way, a line or a few lines from where the
fix goes (quotes changed, re-wrapped). Before, `rebase --to` applied or 3-way-merged the fix
cleanly (git's merge does the same: the two sides add different bytes at different lines) and
the overlay checked the limit twice, with no word. The judge reads the fix's added runs as near
text around where it goes: more copies there than the file the fix was made on had near its
place is a conflict naming the file and line; `status --against` says so too, and
`--continue` (keep yours), `--skip` (take upstream's) and an edit work as at any stop. A
common one-line addition (`return None`) near upstream's own never stops. Real git upstreams,
real commands."""
from __future__ import annotations

import pytest

from helpers.project import OneUpstreamStack

BASE = b"".join(b"line %d of the module under test\n" % i for i in range(1, 31))
LIMIT = b"if limit < 0:\n    raise ValueError('a limit is never negative')\n"
THEIRS = b'if limit < 0:\n    raise ValueError("a limit is never negative")\n'
WRAPPED = b'if limit < 0:\n    raise ValueError(\n        "a limit is never negative"\n    )\n'


def line(n: int) -> bytes:
    return b"line %d of the module under test\n" % n


def after(n: int, added: bytes, content: bytes = BASE) -> bytes:
    return content.replace(line(n), line(n) + added)


def stack_with(tmp_path, fix: bytes, upstream: bytes, base: bytes = BASE) -> OneUpstreamStack:
    """Fix `fa` makes pkg/a.py `fix` from `base`; upstream makes it `upstream` at v2."""
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": base, "pkg/b.py": b"b = 1\n"})
    stack.add_fix("fa", "pkg/a.py", base, fix)
    stack.commit({"pkg/a.py": upstream}, "Check the limit", tag="v2")
    return stack


def stack_with_file(tmp_path, path: str, base: bytes, fix: bytes,
                    upstream: bytes) -> OneUpstreamStack:
    """Fix `fa` makes `path` `fix` from `base`; upstream makes it `upstream` at v2."""
    stack = OneUpstreamStack(tmp_path, {path: base, "pkg/b.py": b"b = 1\n"})
    stack.add_fix("fa", path, base, fix)
    stack.commit({path: upstream}, "Guard the kernel", tag="v2")
    return stack


def said_doubled(stack: OneUpstreamStack, where: str) -> str:
    """status --against v2 and the dry run agree: a stop, named at `where`; the rebase
    stops there (exit 3) and says the three ways on. Its error output."""
    status = stack.json("status", "--against", "v2", expect=1)
    ((patch,),) = [status["patches"]]
    assert (patch["state"], patch["rebase"]) == ("conflict", "stop"), patch
    dry = stack.rebase_json("--to", "v2", "--dry-run", expect=1)
    assert [p["action"] for p in dry["patches"]] == ["conflict"], dry["patches"]
    rc, out, err = stack.cli("rebase", "--to", "v2", expect=3)
    assert f"{where}: upstream has these lines already, its own way" in err, err
    assert "keep yours" in err and "--skip" in err, err
    return err


def moves(stack: OneUpstreamStack) -> None:
    """status says the rebase moves the fix, and the rebase does, as before."""
    status = stack.json("status", "--against", "v2", expect=None)
    assert [p["rebase"] for p in status["patches"]] == ["move"], status["patches"]
    summary = stack.rebase_json("--to", "v2")
    assert [p["action"] for p in summary["patches"]] in (["clean"], ["offset"], ["merged"]), \
        summary["patches"]
    assert stack.series("up") == ["fa.patch"]


def limit_checks(stack: OneUpstreamStack) -> int:
    """How many times the deployed pkg/a.py checks the limit: the overlay's, else v2's own."""
    stack.cli("overlays", expect=None)  # (1 with a fix in skipped/)
    overlay = stack.root / "overlays/up/pkg/a.py"
    return (overlay.read_bytes() if overlay.exists() else
            after(29, THEIRS)).count(b"if limit < 0")


@pytest.mark.parametrize("theirs", [THEIRS, WRAPPED], ids=["quotes", "rewrapped"])
def test_a_merge_that_would_double_the_fix_stops_and_continue_keeps_both(tmp_path, theirs):
    stack = stack_with(tmp_path, after(28, LIMIT), after(29, theirs))
    said_doubled(stack, "pkg/a.py line 29 (upstream's at line 32)")
    work = stack.root / ".patchforge/work/up/pkg/a.py"
    assert work.read_bytes().count(b"if limit < 0") == 2  # both, for the user to see
    # Keep yours: the worktree as it is, both copies, by the user's own word.
    stack.cli("rebase", "--continue")
    assert stack.series("up") == ["fa.patch"]
    assert limit_checks(stack) == 2


def test_skip_takes_upstreams_and_an_edit_to_one_copy_sets_the_fix_aside(tmp_path):
    stack = stack_with(tmp_path, after(28, LIMIT), after(29, THEIRS))
    said_doubled(stack, "pkg/a.py line 29 (upstream's at line 32)")
    stack.cli("rebase", "--skip", expect=1)  # (a fix set aside: needs attention)
    assert stack.series("up") == []
    assert (stack.root / "series/up/skipped/fa.patch").is_file()
    assert limit_checks(stack) == 1
    # Brought back, it would double them as well: bring-back refuses, as the rebase stopped.
    rc, out, err = stack.cli("bring-back", "fa", expect=2)
    assert "would have them twice" in err, err
    # A person who has seen that upstream's check is other code puts it back beside it.
    stack.cli("bring-back", "fa", "--allow-doubled")
    assert stack.series("up") == ["fa.patch"] and limit_checks(stack) == 2

    other = stack_with(tmp_path / "edit", after(28, LIMIT), after(29, THEIRS))
    said_doubled(other, "pkg/a.py line 29 (upstream's at line 32)")
    work = other.root / ".patchforge/work/up/pkg/a.py"
    work.write_bytes(work.read_bytes().replace(LIMIT, b"", 1))  # the fix's copy out
    rc, out, err = other.cli("rebase", "--continue", expect=None)
    assert "resolved to no change" in out, out
    assert (other.root / "series/up/skipped/fa.patch").is_file()
    assert limit_checks(other) == 1


def test_a_fix_that_applies_exactly_beside_upstreams_copy_stops_too(tmp_path):
    # Upstream's check five lines lower leaves the fix's context whole: it applies exactly.
    stack = stack_with(tmp_path, after(10, LIMIT), after(15, THEIRS))
    said_doubled(stack, "pkg/a.py line 11 (upstream's at line 18)")
    stack.cli("rebase", "--abort")
    assert stack.series("up") == ["fa.patch"]


def test_a_common_line_or_a_copy_far_off_or_one_the_base_had_moves_as_before(tmp_path):
    # `return None` added by both near each other: too little code to say anything.
    stack = stack_with(tmp_path / "common", after(10, b"return None\n"),
                       after(12, b"return None\n"))
    moves(stack)
    # The check at the far end of a long file: other code that reads alike.
    long = b"".join(line(n) for n in range(1, 81))
    stack = stack_with(tmp_path / "far", after(5, LIMIT, long), after(60, THEIRS, long), long)
    moves(stack)
    # The file had the check near the fix's place already (the fix adds a second on
    # purpose); upstream's change elsewhere in the file adds none.
    had = after(12, THEIRS)
    stack = stack_with(tmp_path / "had", after(9, LIMIT, had),
                       had.replace(line(25), b"line 25, changed upstream\n"), had)
    moves(stack)
    assert limit_checks(stack) == 2


# A guard at a Python function's top, and the body lines the module's functions have.
GUARD = b"    if limit < 0:\n        raise ValueError('a limit is never negative')\n"


def body(name: bytes, steps: int) -> bytes:
    return b"def %s(limit):\n" % name + b"".join(b"    x%d = step(%d)\n" % (k, k)
                                                 for k in range(steps))


def test_the_else_calls_change_is_not_the_ifs(tmp_path):
    # The same call in an if and its else; the fix passes the stream to the first, upstream to
    # the second: each call changed once, nothing doubled.
    call = b"        out = launch_kernel(x, y, block=64)\n"
    new = b"        out = launch_kernel(x, y, block=64, stream=stream)\n"
    base = (b"def run(x, y, stream, fast):\n    if fast:\n" + call + b"        a = 1\n"
            b"        b = 2\n    else:\n        c = 3\n" + call + b"        d = 4\n"
            b"    return out\n")
    cut = base.rfind(call)
    stack = stack_with(tmp_path, base.replace(call, new, 1),
                       base[:cut] + new + base[cut + len(call):], base)
    moves(stack)
    stack.cli("overlays")
    assert (stack.root / "overlays/up/pkg/a.py").read_bytes().count(new) == 2


def test_a_common_line_upstream_adds_in_another_function_nearby_moves(tmp_path):
    base = (b"def bench_a(x):\n    y = kernel_a(x)\n    return y\n\n\n"
            b"def bench_c(x):\n    y = kernel_c(x)\n    return y\n")
    sync = b"    torch.cuda.synchronize()\n"
    fixed = base.replace(b"    y = kernel_a(x)\n", b"    y = kernel_a(x)\n" + sync)
    theirs = base.replace(b"def bench_c", b"def bench_b(x):\n    start = time.time()\n"
                          b"    y = kernel_b(x)\n" + sync + b"    return y, time.time() - start\n"
                          b"\n\ndef bench_c")
    stack = stack_with(tmp_path, fixed, theirs, base)
    moves(stack)
    stack.cli("overlays")
    assert (stack.root / "overlays/up/pkg/a.py").read_bytes().count(sync) == 2


def test_a_look_alike_upstreams_deletions_bring_near_is_not_upstreams(tmp_path):
    # The fix copies g's guard (there at the base, 13 lines lower) into f; upstream only
    # deletes the comments between: the guard it brings near is no line upstream added.
    comments = b"".join(b"# note %d about the helpers below\n" % k for k in range(4))
    base = (body(b"f", 6) + b"    return x0\n\n" + comments + body(b"g", 1) + GUARD
            + b"    y = 1\n    z = 2\n    w = 3\n    return x0\n")
    stack = stack_with(tmp_path, base.replace(b"def f(limit):\n", b"def f(limit):\n" + GUARD),
                       base.replace(comments, b""), base)
    moves(stack)


def test_the_series_own_other_copy_is_not_upstreams(tmp_path):
    # fa guards f, fb the same guard in g; upstream deletes 8 comment lines between.
    comments = b"".join(b"# note %d about the helpers below\n" % k for k in range(8))
    base = (body(b"f", 3) + b"    return x0\n\n" + comments + body(b"g", 1)
            + b"    y = 1\n    z = 2\n    w = 3\n    return x0\n")
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": base, "pkg/b.py": b"b = 1\n"})
    first = base.replace(b"def f(limit):\n", b"def f(limit):\n" + GUARD)
    stack.add_fix("fa", "pkg/a.py", base, first)
    stack.add_fix("fb", "pkg/a.py", first,
                  first.replace(b"    x0 = step(0)\n    y = 1\n",
                                b"    x0 = step(0)\n" + GUARD + b"    y = 1\n"))
    (stack.root / "series/up/series").write_text("fa.patch\nfb.patch\n")
    stack.commit({"pkg/a.py": base.replace(comments, b"")}, "Drop stale comments", tag="v2")
    status = stack.json("status", "--against", "v2", expect=None)
    assert [p["rebase"] for p in status["patches"]] == ["move", "move"], status["patches"]
    stack.rebase_json("--to", "v2")
    assert stack.series("up") == ["fa.patch", "fb.patch"]
    stack.cli("overlays")
    assert (stack.root / "overlays/up/pkg/a.py").read_bytes().count(b"if limit < 0") == 2


def test_the_stop_offers_the_edit_first_and_says_skip_sets_the_whole_fix_aside(tmp_path):
    # Hunk 1's check upstream added a line lower; hunk 2 a change upstream does not have.
    base = BASE.replace(line(30), b"limit_default = 0\n")
    fixed = after(5, LIMIT, base).replace(b"limit_default = 0\n", b"limit_default = 1\n")
    stack = stack_with(tmp_path, fixed, after(6, THEIRS, base), base)
    err = said_doubled(stack, "pkg/a.py line 6 (upstream's at line 9)")
    assert "delete your copy of these lines" in err and "WHOLE fix aside" in err, err
    assert err.index("delete your copy") < err.index("--skip"), err
    work = stack.root / ".patchforge/work/up/pkg/a.py"
    work.write_bytes(work.read_bytes().replace(LIMIT, b"", 1))
    stack.cli("rebase", "--continue")
    assert stack.series("up") == ["fa.patch"] and limit_checks(stack) == 1
    assert b"limit_default = 1" in (stack.root / "overlays/up/pkg/a.py").read_bytes()


def test_a_guard_in_the_hunk_of_a_changed_call_upstream_left_stops(tmp_path):
    # One hunk (git joins changes within 6 lines): the guard at the top, the stream passed to
    # the call two lines lower. Upstream adds the guard its own way a line lower and leaves
    # the call: the call's old line is still at its place, the guard doubled all the same.
    body = (b"def run(x, limit, stream):\n    a = prepare(x)\n    b = widen(a)\n"
            b"    out = launch(b)\n    c = narrow(out)\n    d = finish(c)\n    return d\n")
    base = b'"""Kernels."""\n\n\n' + body + b"\n\ndef other(y):\n    return y\n"
    fixed = base.replace(b"    a = prepare(x)\n", GUARD + b"    a = prepare(x)\n").replace(
        b"    out = launch(b)\n", b"    out = launch(b, stream=stream)\n")
    theirs = GUARD.replace(b"'a limit is never negative'", b'"a limit is never negative"')
    stack = stack_with(tmp_path, fixed,
                       base.replace(b"    a = prepare(x)\n", b"    a = prepare(x)\n" + theirs),
                       base)
    said_doubled(stack, "pkg/a.py line 5 (upstream's at line 8)")
    work = stack.root / ".patchforge/work/up/pkg/a.py"
    work.write_bytes(work.read_bytes().replace(GUARD, b"", 1))  # the fix's copy out
    stack.cli("rebase", "--continue")
    assert stack.series("up") == ["fa.patch"]
    stack.cli("overlays")
    overlay = (stack.root / "overlays/up/pkg/a.py").read_bytes()
    assert overlay.count(b"if limit < 0") == 1 and b"launch(b, stream=stream)" in overlay



def test_a_guard_right_above_the_call_it_changes_stops(tmp_path):
    # The guard and the changed call are one run of added lines replacing the old call, which
    # upstream left at its place: the guard's lines are like none the fix removes, and count.
    body = (b"def run(x, limit, stream):\n    a = prepare(x)\n    b = widen(a)\n"
            b"    out = launch(b)\n    c = narrow(out)\n    d = finish(c)\n    return d\n")
    base = b'"""Kernels."""\n\n\n' + body + b"\n\ndef other(y):\n    return y\n"
    theirs = GUARD.replace(b"'a limit is never negative'", b'"a limit is never negative"')
    stack = stack_with(tmp_path, base.replace(b"    out = launch(b)\n",
                                              GUARD + b"    out = launch(b, stream=stream)\n"),
                       base.replace(b"    b = widen(a)\n", theirs + b"    b = widen(a)\n"), base)
    said_doubled(stack, "pkg/a.py line 9 (upstream's at line 6)")


KERNEL = (b"#include <hip/hip_runtime.h>\n\ntemplate <typename T>\n"
          b"__global__ void scale(T* x, int n) {\n"
          b"    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    T a = x[i];\n"
          b"    T b = a * static_cast<T>(2);\n    T c = b + a;\n    x[i] = c;\n}\n"
          b"\nint version() { return 1; }\n")


@pytest.mark.parametrize("theirs", [b"    if (i >= n)\n        return;\n",
                                    b"    if (i >= n)  return;\n",
                                    b"    if (i >= n) {\n        return;\n    }\n"],
                         ids=["wrapped", "spaced", "braced"])
def test_a_one_line_kernel_guard_upstream_added_respaced_a_line_lower_stops(tmp_path, theirs):
    # A bounds guard is short (15 characters of code), under the least a run needs to say
    # anything, yet it is the commonest kernel fix: a whole guard counts, its one statement in
    # braces or not (clang-format writes either).
    guard = b"    if (i >= n) return;\n"
    index = b"threadIdx.x;\n"
    stack = stack_with_file(tmp_path, "pkg/k.cu", KERNEL, KERNEL.replace(index, index + guard),
                            KERNEL.replace(b"    T a = x[i];\n", b"    T a = x[i];\n" + theirs))
    said_doubled(stack, "pkg/k.cu line 6 (upstream's at line 8)")
    work = (stack.root / ".patchforge/work/up/pkg/k.cu").read_bytes()
    assert work.count(b"if (i >= n)") == 2  # both, for the user to see
    stack.cli("rebase", "--skip", expect=1)  # (a fix set aside: needs attention)
    assert stack.series("up") == []


def test_a_one_line_guard_upstream_added_to_the_next_kernel_moves(tmp_path):
    # The same bounds guard in the kernel after the fix's, 8 lines lower: another function's.
    guard = b"    if (i >= n) return;\n"
    index = b"threadIdx.x;\n"
    shift = (b"__global__ void shift(float* x, int n) {\n"
             b"    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    x[i] += 1.0f;\n}\n")
    two = KERNEL.replace(b"\nint version()", b"\n" + shift + b"\nint version()")
    stack = stack_with_file(tmp_path, "pkg/k.cu", two, two.replace(index, index + guard, 1),
                            two.replace(shift, shift.replace(index, index + guard)))
    moves(stack)
    stack.cli("overlays")
    assert (stack.root / "overlays/up/pkg/k.cu").read_bytes().count(guard) == 2


@pytest.mark.parametrize("language", ["c++", "python", "c++-commented"])
def test_the_same_check_upstream_added_after_the_next_step_is_another_check(tmp_path, language):
    # A check after each of two steps: the fix checks the first step's result, upstream adds
    # the same check after the second step, a line or two lower. Each checks another state
    # (the name it reads is set again between them); the stop and its advice (delete your
    # copy, or --skip) lost the fix's check of the first step.
    if language != "python":
        path, check = "pkg/k.cu", b"    if (!ok) return false;\n"
        base = (b"bool setup(Ctx* c) {\n    bool ok = alloc_buffers(c);\n"
                b"    ok = load_weights(c);\n    c->ready = true;\n    log_setup(c);\n"
                b"    return true;\n}\n\nint version() { return 1; }\n")
        first, second = b"alloc_buffers(c);\n", b"load_weights(c);\n"
    else:
        path, check = "pkg/a.py", b"    if err:\n        return err\n"
        base = (b"def setup(c):\n    err = alloc_buffers(c)\n    err = load_weights(c)\n"
                b"    c.ready = True\n    log_setup(c)\n    return None\n\n\n"
                b"def version():\n    return 1\n")
        first, second = b"alloc_buffers(c)\n", b"load_weights(c)\n"
    # (A comment above the fix's check: the check inside the run is read on its own.)
    mine = b"    // the buffers are there\n" + check if language == "c++-commented" else check
    stack = stack_with_file(tmp_path, path, base, base.replace(first, first + mine),
                            base.replace(second, second + check))
    moves(stack)
    stack.cli("overlays")
    assert (stack.root / "overlays/up" / path).read_bytes().count(check) == 2


def test_a_guard_beside_a_changed_call_stops_though_the_next_function_has_it(tmp_path):
    # As test_a_guard_in_the_hunk_of_a_changed_call_upstream_left_stops, but the next function
    # starts with the same guard: the 3-way merge's changed lines on the target and the fix's
    # hunk (context and all) on its base were read with windows of different reach, and the
    # next function's guard counted on the base only.
    guard = (b"    if x is None and not torch.cuda.is_available():\n"
             b"        raise ValueError('x is needed')\n")
    theirs = guard.replace(b"'x is needed'", b'"x is needed"')

    def function(i: int, head: bytes = b"", call: bool = False) -> bytes:
        steps = [b"    step0 = x\n"] + [b"    step%d = step%d + %d\n" % (k, k - 1, 100 * i + k)
                                         for k in range(1, 10)]
        if call:
            steps[2] = b"    step2 = launch(step1, stream=x)\n"
        return b"def k%d(x):\n" % i + head + b"".join(steps) + b"    return step9\n"

    def module(k1: bytes) -> bytes:
        return b'"""Kernels."""\nimport torch\n\n\n' + b"\n\n".join(
            [function(0), k1, function(2, head=guard)]) + b"\n"

    upstream = module(function(1)).replace(b"    step0 = x\n    step1 = step0 + 101\n",
                                           b"    step0 = x\n" + theirs
                                           + b"    step1 = step0 + 101\n")
    stack = stack_with(tmp_path, module(function(1, head=guard, call=True)), upstream,
                       module(function(1)))
    said_doubled(stack, "pkg/a.py line 20 (upstream's at line 23)")


def test_a_call_black_wrapped_by_the_fix_is_its_change_not_lines_added_beside_it(tmp_path):
    # The fix passes the stream to launch(), black-wrapped over four lines; upstream passes the
    # same stream to another call it adds three lines lower and leaves launch alone. The
    # wrapped arguments go on with the changed line: they were read as lines added beside it,
    # and the rebase stopped as doubled, its advice (delete your copy) breaking the call.
    body = (b"def run(x, limit):\n    a = prepare(x)\n    b4 = pin(a)\n"
            b"    out = launch(b4)\n    c = narrow(out)\n    d = finish(c)\n    e = pack(d)\n"
            b"    return e\n")
    base = b'"""Kernels."""\n\n\n' + body + b"\n\ndef other(y):\n    return y\n"
    tail = b"        b4,\n        stream=torch.cuda.current_stream(),\n    )\n"
    stack = stack_with(tmp_path, base.replace(b"    out = launch(b4)\n",
                                              b"    out = launch(\n" + tail),
                       base.replace(b"    d = finish(c)\n",
                                    b"    d = finish(c)\n    res = reduce(\n" + tail), base)
    moves(stack)


def stops(stack: OneUpstreamStack) -> None:
    """status says conflict, and the rebase stops (exit 3) as upstream having the lines."""
    status = stack.json("status", "--against", "v2", expect=1)
    assert [p["state"] for p in status["patches"]] == ["conflict"], status["patches"]
    _, _, err = stack.cli("rebase", "--to", "v2", expect=3)
    assert "upstream has these lines already, its own way" in err, err


def test_a_keyword_argument_between_the_copies_sets_no_name(tmp_path):
    # `widen(a, limit=limit)` passes the limit on; it sets nothing the guard reads, so the
    # guard upstream added after it is the fix's made twice (it merged in twice, exit 0).
    body = (b"def run(x, limit):\n    a = prepare(x)\n    b = widen(a, limit=limit)\n"
            b"    out = launch(b)\n    c = narrow(out)\n    d = finish(c)\n    return d\n")
    base = b'"""Kernels."""\n\n\n' + body + b"\n\ndef other(y):\n    return y\n"
    theirs = GUARD.replace(b"'a limit is never negative'", b'"a limit is never negative"')
    fixed = base.replace(b"    a = prepare(x)\n", GUARD + b"    a = prepare(x)\n")
    stops(stack_with(tmp_path, fixed, base.replace(b"    b = widen(a, limit=limit)\n",
                                                   b"    b = widen(a, limit=limit)\n" + theirs),
                     base))


def test_a_block_the_changed_line_opens_is_no_call_going_on(tmp_path):
    # The fix widens `if (mode == 1) {` and guards the block's first line; `{` opens a block,
    # not arguments of the changed line: the guard upstream added a line lower is the fix's
    # made twice (it merged in twice, exit 0).
    kernel = (b"#include <hip/hip_runtime.h>\n\ntemplate <typename T>\n"
              b"__global__ void scale(T* x, int n, int mode) {\n"
              b"    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (mode == 1) {\n"
              b"        T a = x[i];\n        T b = a * static_cast<T>(2);\n"
              b"        T c = b + a;\n        x[i] = c;\n    }\n}\n\n"
              b"int version() { return 1; }\n")
    guard = b"        if (i >= n) return;\n"
    stops(stack_with_file(tmp_path, "pkg/k.cu", kernel,
                          kernel.replace(b"    if (mode == 1) {\n",
                                         b"    if (mode == 1 && n > 0) {\n" + guard),
                          kernel.replace(b"        T a = x[i];\n",
                                         b"        T a = x[i];\n        if (i >= n)  return;\n")))


@pytest.mark.parametrize("run", [b"    // threads past the end do nothing\n    if (i >= n) return;\n",
                                 b"    if (n <= 0) return;\n    if (i >= n) return;\n"],
                         ids=["comment-above", "two-guards"])
def test_a_guard_inside_a_longer_run_upstream_added_alone_a_line_lower_stops(tmp_path, run):
    # The fix's run is a comment line and the guard (or two guards); upstream adds the guard
    # alone, over two lines, a line lower. The run as a whole is no guard and under 24
    # characters of code, and the comment's words are not in upstream's file: the rebase
    # merged the guard in twice, exit 0.
    index = b"threadIdx.x;\n"
    stack = stack_with_file(tmp_path, "pkg/k.cu", KERNEL, KERNEL.replace(index, index + run),
                            KERNEL.replace(b"    T a = x[i];\n",
                                           b"    T a = x[i];\n    if (i >= n)\n        return;\n"))
    said_doubled(stack, "pkg/k.cu line 7 (upstream's at line 9)")


def test_a_guard_with_a_comment_upstream_added_to_the_next_kernel_moves(tmp_path):
    # Its neighbour: the same guard alone in the kernel after the fix's is another function's.
    run = b"    // threads past the end do nothing\n    if (i >= n) return;\n"
    index = b"threadIdx.x;\n"
    shift = (b"__global__ void shift(float* x, int n) {\n"
             b"    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    x[i] += 1.0f;\n}\n")
    two = KERNEL.replace(b"\nint version()", b"\n" + shift + b"\nint version()")
    stack = stack_with_file(tmp_path, "pkg/k.cu", two, two.replace(index, index + run, 1),
                            two.replace(shift, shift.replace(index, index + b"    if (i >= n) "
                                                                           b"return;\n")))
    moves(stack)
    stack.cli("overlays")
    assert (stack.root / "overlays/up/pkg/k.cu").read_bytes().count(b"if (i >= n)") == 2


def test_a_guard_beside_a_changed_line_naming_a_word_upstream_lacks_stops(tmp_path):
    # The fix widens the block's condition with `x != nullptr`, a word upstream's file does not
    # have, and guards the block's first line; upstream adds the guard alone a line lower.
    # The run's words were asked whole, `nullptr` missing, and the guard in it never read: it
    # merged in twice, exit 0.
    kernel = (b"#include <hip/hip_runtime.h>\n\ntemplate <typename T>\n"
              b"__global__ void scale(T* x, int n, int mode) {\n"
              b"    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (mode == 1) {\n"
              b"        T a = x[i];\n        T b = a * static_cast<T>(2);\n"
              b"        T c = b + a;\n        x[i] = c;\n    }\n}\n\n"
              b"int version() { return 1; }\n")
    stack = stack_with_file(tmp_path, "pkg/k.cu", kernel,
                            kernel.replace(b"    if (mode == 1) {\n",
                                           b"    if (mode == 1 && x != nullptr) {\n"
                                           b"        if (i >= n) return;\n"),
                            kernel.replace(b"        T a = x[i];\n",
                                           b"        T a = x[i];\n        if (i >= n)  return;\n"))
    said_doubled(stack, "pkg/k.cu line 7 (upstream's at line 9)")


@pytest.mark.parametrize("language", ["python", "c++"])
def test_a_name_recomputed_from_itself_between_the_copies_is_the_same_check(tmp_path, language):
    # `x = x.contiguous()` sets x again, but to the same tensor laid out anew: the guard on x
    # upstream added after it checks what the fix's before it checks. It read as a check of
    # another state, and the guard merged in twice, exit 0.
    if language == "python":
        path, guard, again = "pkg/a.py", b"    if x.numel() == 0:\n        return x\n", \
            b"    x = x.contiguous()\n"
        base = (b'"""Kernels."""\n\n\ndef run(x, limit):\n    a = prepare(limit)\n' + again +
                b"    out = launch(x, a)\n    c = narrow(out)\n    return c\n\n\n"
                b"def other(y):\n    return y\n")
    else:
        path, guard, again = "pkg/k.cu", b"    if (x.numel() == 0) return x;\n", \
            b"    x = x.contiguous();\n"
        base = (b"at::Tensor run(at::Tensor x, int limit) {\n    auto a = prepare(limit);\n" +
                again + b"    auto out = launch(x, a);\n    return narrow(out);\n}\n\n"
                b"int version() { return 1; }\n")
    stops(stack_with_file(tmp_path, path, base, base.replace(again, guard + again),
                          base.replace(again, again + guard)))


def test_a_step_along_an_attribute_between_the_copies_is_another_check(tmp_path):
    # `node = node.next` sets node from itself, but to another node, not a method's new form
    # of the same value: the guard after it checks the next node, and the fix moves.
    base = (b'"""Lists."""\n\n\ndef second(node):\n    first = node.value\n'
            b"    node = node.next\n    return first + node.value\n\n\n"
            b"def other(y):\n    return y\n")
    guard, step = b"    if node is None:\n        return None\n", b"    node = node.next\n"
    stack = stack_with(tmp_path, base.replace(b"    first", guard + b"    first"),
                       base.replace(step, step + guard), base)
    moves(stack)


def test_a_counter_stepped_between_the_copies_is_another_check(tmp_path):
    # Its neighbour: `i += stride;` moves the index on, so the same guard after it checks the
    # next element: both are wanted, and the fix moves.
    kernel = (b"__global__ void two(float* x, int n, int stride) {\n"
              b"    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    x[i] *= 2.0f;\n"
              b"    i += stride;\n    x[i] *= 2.0f;\n}\n\nint version() { return 1; }\n")
    guard = b"    if (i >= n) return;\n"
    first, second = b"threadIdx.x;\n", b"    i += stride;\n"
    stack = stack_with_file(tmp_path, "pkg/k.cu", kernel, kernel.replace(first, first + guard),
                            kernel.replace(second, second + guard))
    moves(stack)


def test_a_python_guard_with_a_statement_after_it_upstream_added_alone_stops(tmp_path):
    # The fix's run is the guard and a statement after it; the Python guard pattern read the
    # whole run as one guard (`return None` running on into `y = x.contiguous()`), so the
    # guard was never read on its own: upstream's copy a line lower merged in twice, exit 0.
    body = (b"def run(x, limit):\n    a = prepare(limit)\n    b = widen(a)\n"
            b"    out = launch(x, b)\n    c = narrow(out)\n    d = finish(c)\n    return d\n")
    base = b'"""Kernels."""\n\n\n' + body + b"\n\ndef other(y):\n    return y\n"
    guard = b"    if x is None:\n        return None\n"
    stack = stack_with(tmp_path, base.replace(b"    a = prepare(limit)\n",
                                              b"    a = prepare(limit)\n" + guard +
                                              b"    y = x.contiguous()\n"),
                       base.replace(b"    b = widen(a)\n", b"    b = widen(a)\n" + guard), base)
    said_doubled(stack, "pkg/a.py line 6 (upstream's at line 10)")


@pytest.mark.parametrize("language", ["c++", "python"])
def test_a_guard_opening_a_new_loop_of_the_fix_upstream_added_to_another_loop_moves(
        tmp_path, language):
    # The fix adds a new loop whose body begins with a bound check; upstream adds the same
    # check to the other, existing loop a few lines higher. Two loops, two checks: the check
    # read on its own out of the fix's run stopped "upstream has these lines already", and
    # the advice (delete your copy, or --skip) left the fix's loop running past n.
    if language == "c++":
        path, check = "pkg/k.cu", b"        if (j >= n) break;\n"
        base = (b"#include <hip/hip_runtime.h>\n\n"
                b"__global__ void twice(float* x, float* y, int n, int m) {\n"
                b"    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                b"    for (int j = i; j < m; j += 32) {\n        x[j] *= 2.0f;\n    }\n"
                b"    sync_all();\n}\n\nint version() { return 1; }\n")
        loop, after, first = (b"    for (int j = i; j < m; j += 64) {\n" + check +
                              b"        y[j] += x[j];\n    }\n"), b"    sync_all();\n", \
            b"        x[j] *= 2.0f;\n"
    else:
        path, check = "pkg/k.py", b"        if j >= n:\n            break\n"
        base = (b"def twice(x, y, n, m):\n    for j in range(m):\n        x[j] *= 2.0\n"
                b"    sync_all()\n    return y\n\n\ndef version():\n    return 1\n")
        loop, after, first = (b"    for j in range(0, m, 2):\n" + check +
                              b"        y[j] += x[j]\n"), b"    sync_all()\n", \
            b"        x[j] *= 2.0\n"
    stack = stack_with_file(tmp_path, path, base, base.replace(after, after + loop),
                            base.replace(first, check + first))
    moves(stack)
    stack.cli("overlays")
    assert (stack.root / f"overlays/up/{path}").read_bytes().count(check) == 2


@pytest.mark.parametrize("language", ["c++", "python"])
def test_a_new_loop_of_the_fix_upstream_added_its_own_way_under_the_same_header_stops(
        tmp_path, language):
    # The fix adds a new loop whose body begins with a bound check; upstream adds the same
    # loop (the same header, the same check, its body spelled another way) three lines
    # higher. The fix made twice: merged, both loops would run and y get x added twice.
    if language == "c++":
        path, check = "pkg/k.cu", b"        if (j >= n) break;\n"
        base = (b"#include <hip/hip_runtime.h>\n\n"
                b"__global__ void twice(float* x, float* y, int n, int m) {\n"
                b"    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                b"    for (int j = i; j < m; j += 32) {\n        x[j] *= 2.0f;\n    }\n"
                b"    sync_all();\n}\n\nint version() { return 1; }\n")
        head = b"    for (int j = i; j < m; j += 64) {\n"
        loop, theirs = (head + check + b"        y[j] += x[j];\n    }\n",
                        head + check + b"        y[j] = y[j] + x[j];\n    }\n")
        after, first, where = b"    sync_all();\n", b"    for (int j = i; j < m; j += 32) {\n", \
            "pkg/k.cu line 13 (upstream's at line 5)"
    else:
        path, check = "pkg/k.py", b"        if j >= n:\n            break\n"
        base = (b"def twice(x, y, n, m):\n    for j in range(m):\n        x[j] *= 2.0\n"
                b"    sync_all()\n    return y\n\n\ndef version():\n    return 1\n")
        head = b"    for j in range(0, m, 2):\n"
        loop, theirs = (head + check + b"        y[j] += x[j]\n",
                        head + check + b"        y[j] = y[j] + x[j]\n")
        after, first, where = b"    sync_all()\n", b"    for j in range(m):\n", \
            "pkg/k.py line 9 (upstream's at line 2)"
    stack = stack_with_file(tmp_path, path, base, base.replace(after, after + loop),
                            base.replace(first, theirs + first))
    said_doubled(stack, where)


@pytest.mark.parametrize("upstream", ["same loop", "another loop"])
def test_a_new_loop_of_the_fix_in_allman_style_is_read_with_its_header(tmp_path, upstream):
    # The same two cases with `{` on a line of its own: the fix's loop's header is the line
    # above the brace. Upstream adding the fix's loop its own way stops; upstream adding the
    # check to its other, existing loop moves.
    check = b"        if (j >= n) break;\n"
    base = (b"__global__ void twice(float* x, float* y, int n, int m)\n{\n"
            b"    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
            b"    for (int j = i; j < m; j += 32)\n    {\n        x[j] *= 2.0f;\n    }\n"
            b"    sync_all();\n}\n\nint version() { return 1; }\n")
    head = b"    for (int j = i; j < m; j += 64)\n    {\n"
    fix = base.replace(b"    sync_all();\n",
                       b"    sync_all();\n" + head + check + b"        y[j] += x[j];\n    }\n")
    if upstream == "same loop":
        theirs = base.replace(b"    for (int j = i; j < m; j += 32)",
                              head + check + b"        y[j] = y[j] + x[j];\n    }\n"
                              b"    for (int j = i; j < m; j += 32)")
    else:
        theirs = base.replace(b"    {\n        x[j]", b"    {\n" + check + b"        x[j]")
    stack = stack_with_file(tmp_path, "pkg/k.cu", base, fix, theirs)
    if upstream == "same loop":
        status = stack.json("status", "--against", "v2", expect=1)
        assert [p["rebase"] for p in status["patches"]] == ["stop"], status["patches"]
        rc, out, err = stack.cli("rebase", "--to", "v2", expect=3)
        assert "upstream has these lines already, its own way" in err, err
    else:
        moves(stack)
        stack.cli("overlays")
        assert (stack.root / "overlays/up/pkg/k.cu").read_bytes().count(check) == 2


@pytest.mark.parametrize("header", ["same", "another"])
@pytest.mark.parametrize("language", ["c++", "python"])
def test_a_new_loop_of_the_fix_upstream_added_with_a_line_before_the_check(
        tmp_path, language, header):
    # As test_a_new_loop_of_the_fix_upstream_added_its_own_way_under_the_same_header_stops,
    # but upstream's loop reads x[j] into a name before the check: the header and the check
    # read as one run were nowhere in the file, the fix moved, and both loops ran (y got x
    # added twice, exit 0). Under another header the check is another loop's: it moves.
    if language == "c++":
        path, check = "pkg/k.cu", b"        if (j >= n) break;\n"
        base = (b"#include <hip/hip_runtime.h>\n\n"
                b"__global__ void twice(float* x, float* y, int n, int m) {\n"
                b"    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                b"    for (int j = i; j < m; j += 32) {\n        x[j] *= 2.0f;\n    }\n"
                b"    sync_all();\n}\n\nint version() { return 1; }\n")
        head = b"    for (int j = i; j < m; j += 64) {\n"
        theirs_head = head if header == "same" else b"    for (int j = i; j < m; j += 16) {\n"
        loop = head + check + b"        y[j] += x[j];\n    }\n"
        theirs = theirs_head + b"        float w = x[j];\n" + check + \
            b"        y[j] = y[j] + w;\n    }\n"
        after, first = b"    sync_all();\n", b"    for (int j = i; j < m; j += 32) {\n"
    else:
        path, check = "pkg/k.py", b"        if j >= n:\n            break\n"
        base = (b"def twice(x, y, n, m):\n    for j in range(m):\n        x[j] *= 2.0\n"
                b"    sync_all()\n    return y\n\n\ndef version():\n    return 1\n")
        head = b"    for j in range(0, m, 2):\n"
        theirs_head = head if header == "same" else b"    for j in range(1, m, 2):\n"
        loop = head + check + b"        y[j] += x[j]\n"
        theirs = theirs_head + b"        w = x[j]\n" + check + b"        y[j] = y[j] + w\n"
        after, first = b"    sync_all()\n", b"    for j in range(m):\n"
    stack = stack_with_file(tmp_path, path, base, base.replace(after, after + loop),
                            base.replace(first, theirs + first))
    if header == "same":
        stops(stack)
    else:
        moves(stack)
        stack.cli("overlays")
        assert (stack.root / f"overlays/up/{path}").read_bytes().count(check) == 2


@pytest.mark.parametrize("between", ["a line before the check", "none"])
@pytest.mark.parametrize("language", ["c++", "python"])
def test_upstreams_loop_of_the_same_header_and_check_writing_another_array_moves(
        tmp_path, language, between):
    # Upstream adds a loop with the fix's header and bound check whose body writes z, not the
    # fix's y: another loop, both wanted. The header and the check read as the fix's loop made
    # again stopped as doubled, and the advice (delete your copy) dropped the fix's y loop.
    if language == "c++":
        path, check = "pkg/k.cu", b"        if (j >= n) break;\n"
        base = (b"#include <hip/hip_runtime.h>\n\n"
                b"__global__ void twice(float* x, float* y, float* z, int n, int m) {\n"
                b"    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                b"    for (int j = i; j < m; j += 32) {\n        x[j] *= 2.0f;\n    }\n"
                b"    sync_all();\n}\n\nint version() { return 1; }\n")
        head, body = b"    for (int j = i; j < m; j += 64) {\n", b"        y[j] += x[j];\n    }\n"
        gap, theirs_body = b"        float w = x[j];\n", b"        z[j] = w * 3.0f;\n    }\n"
        after, first = b"    sync_all();\n", b"    for (int j = i; j < m; j += 32) {\n"
    else:
        path, check = "pkg/k.py", b"        if j >= n:\n            break\n"
        base = (b"def twice(x, y, z, n, m):\n    for j in range(m):\n        x[j] *= 2.0\n"
                b"    sync_all()\n    return y\n\n\ndef version():\n    return 1\n")
        head, body = b"    for j in range(0, m, 2):\n", b"        y[j] += x[j]\n"
        gap, theirs_body = b"        w = x[j]\n", b"        z[j] = w * 3.0\n"
        after, first = b"    sync_all()\n", b"    for j in range(m):\n"
    if between == "none":
        gap, theirs_body = b"", theirs_body.replace(b"w * 3.0", b"x[j] * 3.0")
    theirs = head + gap + check + theirs_body
    stack = stack_with_file(tmp_path, path, base, base.replace(after, after + head + check + body),
                            base.replace(first, theirs + first))
    moves(stack)
    stack.cli("overlays")
    made = (stack.root / f"overlays/up/{path}").read_bytes()
    assert made.count(check) == 2 and made.count(b"y[j] += x[j]") == 1, made.decode()


@pytest.mark.parametrize("writes", ["y", "z"])
@pytest.mark.parametrize("language", ["c++", "python", "c++ cast"])
def test_the_fixs_loop_through_a_temporary_upstream_wrote_straight_stops(
        tmp_path, language, writes):
    # The fix's new loop does its work through a temporary (`w = x[j]` then `y[j] += w`),
    # upstream added the same loop written straight (`y[j] += x[j]`). The temporary (and the
    # type word declaring it) named nothing upstream's loop holds, so it read as another loop:
    # the fix moved, both loops ran and y got x added twice, exit 0. Upstream's loop writing
    # another array (z) is another loop still, and moves.
    if language != "python":
        path, check = "pkg/k.cu", b"        if (j >= n) break;\n"
        base = (b"#include <hip/hip_runtime.h>\n\n"
                b"__global__ void twice(float* x, float* y, float* z, int n, int m) {\n"
                b"    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                b"    for (int j = i; j < m; j += 32) {\n        x[j] *= 2.0f;\n    }\n"
                b"    sync_all();\n}\n\nint version() { return 1; }\n")
        head = b"    for (int j = i; j < m; j += 64) {\n"
        mine = b"        float w = x[j];\n        y[j] += w;\n    }\n"
        if language == "c++ cast":  # (a cast's type word alike)
            mine = b"        y[j] += (float)x[j];\n    }\n"
        theirs_body = b"        %s[j] += x[j];\n    }\n" % writes.encode()
        after, first = b"    sync_all();\n", b"    for (int j = i; j < m; j += 32) {\n"
    else:
        path, check = "pkg/k.py", b"        if j >= n:\n            break\n"
        base = (b"def twice(x, y, z, n, m):\n    for j in range(m):\n        x[j] *= 2.0\n"
                b"    sync_all()\n    return y\n\n\ndef version():\n    return 1\n")
        head = b"    for j in range(0, m, 2):\n"
        mine = b"        w = x[j]\n        y[j] += w\n"
        theirs_body = b"        %s[j] += x[j]\n" % writes.encode()
        after, first = b"    sync_all()\n", b"    for j in range(m):\n"
    stack = stack_with_file(tmp_path, path, base, base.replace(after, after + head + check + mine),
                            base.replace(first, head + check + theirs_body + first))
    if writes == "y":
        stops(stack)
        return
    moves(stack)
    stack.cli("overlays")
    made = (stack.root / f"overlays/up/{path}").read_bytes()
    assert made.count(check) == 2 and made.count(b"y[j] +=") == 1, made.decode()


@pytest.mark.parametrize("mine, x_type, want", [
    (b"        float w = -x[j];\n        y[j] += w;\n", b"float", "move"),
    (b"        float w = x[j] * 0.5f;\n        y[j] += w;\n", b"float", "move"),
    (b"        float w = x[j + 1];\n        y[j] += w;\n", b"float", "move"),
    (b"        y[j] += (int)x[j];\n", b"float", "move"),
    (b"        y[j] += static_cast<int>(x[j]);\n", b"float", "move"),
    (b"        y[j] += (int)x[j];\n", b"int", "stop"),
    (b"        w = -x[j]\n        y[j] += w\n", None, "move"),
    (b"        w = x[j] ** 2\n        y[j] += w\n", None, "move"),
    (b"        w = x[j - 1]\n        y[j] += w\n", None, "move")],
    ids=["neg", "scaled", "next-item", "int-cast", "static-cast", "int-cast-of-ints", "py-neg",
         "py-square", "py-prev-item"])
def test_the_fixs_loop_through_another_value_than_upstreams_moves(tmp_path, mine, x_type, want):
    # The fix's loop adds another value than upstream's same-header loop (`w = -x[j]`, a
    # scaled or another item, a cast that drops a float's fraction): two loops doing other
    # work. It stopped as doubled (the temporary, the cast's type word, read as spelling), and
    # the first advice, delete your copy, lost the fix's loop. A cast of what is declared an
    # integer array (`int* x`) is spelling still, and stops.
    if x_type is not None:
        path, check = "pkg/k.cu", b"        if (j >= n) break;\n"
        base = (b"#include <hip/hip_runtime.h>\n\n"
                b"__global__ void twice(%s* x, float* y, int n, int m) {\n" % x_type +
                b"    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                b"    for (int j = i; j < m; j += 32) {\n        x[j] *= 2;\n    }\n"
                b"    sync_all();\n}\n\nint version() { return 1; }\n")
        head, theirs_body = b"    for (int j = i; j < m; j += 64) {\n", b"        y[j] += x[j];\n    }\n"
        mine += b"    }\n"
        after, first = b"    sync_all();\n", b"    for (int j = i; j < m; j += 32) {\n"
    else:
        path, check = "pkg/k.py", b"        if j >= n:\n            break\n"
        base = (b"def twice(x, y, n, m):\n    for j in range(m):\n        x[j] *= 2.0\n"
                b"    sync_all()\n    return y\n\n\ndef version():\n    return 1\n")
        head, theirs_body = b"    for j in range(0, m, 2):\n", b"        y[j] += x[j]\n"
        after, first = b"    sync_all()\n", b"    for j in range(m):\n"
    stack = stack_with_file(tmp_path, path, base, base.replace(after, after + head + check + mine),
                            base.replace(first, head + check + theirs_body + first))
    if want == "stop":
        stops(stack)
        return
    moves(stack)
    stack.cli("overlays")
    made = (stack.root / f"overlays/up/{path}").read_bytes()
    assert made.count(check) == 2 and made.count(b"y[j] += x[j]") == 1, made.decode()


@pytest.mark.parametrize("lang, mine, theirs_body, want", [
    ("py", b"        w = x[j] * s\n        y[j] += w\n", b"        y[j] += s * x[j]\n", "stop"),
    ("cu", b"        float w = s * x[j];\n        y[j] += w;\n    }\n",
     b"        y[j] += x[j] * s;\n    }\n", "stop"),
    ("cu", b"        y[j] += (int)x[j];\n    }\n", b"        y[j] += static_cast<int>(x[j]);\n    }\n",
     "stop"),
    ("cu", b"        y[j] += (long)x[j];\n    }\n", b"        y[j] += (int64_t)x[j];\n    }\n",
     "stop"),
    ("py", b"        w = x[j] * s\n        y[j] += w\n", b"        y[j] += s + x[j]\n", "move"),
    ("py", b"        w = x[j] * s * 2\n        y[j] += w\n", b"        y[j] += s * x[j]\n", "move"),
    ("cu", b"        float w = s * x[j];\n        y[j] += w;\n    }\n",
     b"        y[j] += x[j] - s;\n    }\n", "move"),
    ("cu", b"        y[j] += (bool)x[j];\n    }\n", b"        y[j] += static_cast<int>(x[j]);\n    }\n",
     "move")],
    ids=["py-reordered", "cu-reordered", "cast-spelt-otherwise", "casts-of-other-widths",
         "py-other-operator", "py-another-factor", "cu-other-operator", "bool-cast"])
def test_the_fixs_loop_through_upstreams_value_in_another_order_stops(tmp_path, lang, mine,
                                                                     theirs_body, want):
    # The fix's loop adds through a temporary, or a cast, what upstream's loop of the same
    # header and check adds written in another order (`w = x[j] * s` against
    # `y[j] += s * x[j]`) or cast spelt another way (`(int)x[j]` against
    # `static_cast<int>(x[j])`). Nothing shows the values apart: it is the fix's loop made
    # twice, and it stops. It moved, and the merge added the value to y twice, exit 0, no word.
    # A value with an operator or factor upstream's loop does not write is other work, and moves.
    if lang == "cu":
        path, check = "pkg/k.cu", b"        if (j >= n) break;\n"
        base = (b"#include <hip/hip_runtime.h>\n\n"
                b"__global__ void twice(float* x, float* y, int n, int m, float s) {\n"
                b"    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                b"    for (int j = i; j < m; j += 32) {\n        x[j] *= 2.0f;\n    }\n"
                b"    sync_all();\n}\n\nint version() { return 1; }\n")
        head = b"    for (int j = i; j < m; j += 64) {\n"
        after, first = b"    sync_all();\n", b"    for (int j = i; j < m; j += 32) {\n"
    else:
        path, check = "pkg/k.py", b"        if j >= n:\n            break\n"
        base = (b"def twice(x, y, n, m, s):\n    for j in range(m):\n        x[j] *= 2.0\n"
                b"    sync_all()\n    return y\n\n\ndef version():\n    return 1\n")
        head = b"    for j in range(0, m, 2):\n"
        after, first = b"    sync_all()\n", b"    for j in range(m):\n"
    stack = stack_with_file(tmp_path, path, base, base.replace(after, after + head + check + mine),
                            base.replace(first, head + check + theirs_body + first))
    if want == "stop":
        stops(stack)
        return
    moves(stack)
    stack.cli("overlays")
    made = (stack.root / f"overlays/up/{path}").read_bytes()
    assert made.count(check) == 2 and made.count(b"y[j] +=") == 2, made.decode()


def test_a_python_loop_whose_set_name_the_function_reads_after_it_is_no_temporary(tmp_path):
    # The fix's loop keeps the last item in `last`, which the function returns after the loop;
    # upstream's loop of the same header and check adds x to y. `last` is the fix's loop's
    # work, not a temporary: another loop, both wanted, the fix moves.
    base = (b"def twice(x, y, z, n, m):\n    for j in range(m):\n        x[j] *= 2.0\n"
            b"    sync_all()\n    return y\n\n\ndef version():\n    return 1\n")
    head, check = b"    for j in range(0, m, 2):\n", b"        if j >= n:\n            break\n"
    fixed = base.replace(b"    sync_all()\n    return y\n",
                         b"    sync_all()\n    last = None\n" + head + check
                         + b"        last = x[j]\n    return last\n")
    theirs = base.replace(b"    for j in range(m):\n",
                          head + check + b"        y[j] += x[j]\n    for j in range(m):\n")
    stack = stack_with_file(tmp_path, "pkg/k.py", base, fixed, theirs)
    moves(stack)
    stack.cli("overlays")
    made = (stack.root / "overlays/up/pkg/k.py").read_bytes()
    assert made.count(check) == 2 and b"        last = x[j]\n" in made, made.decode()


def _far_kernel(x_decl: bytes, pad: int) -> bytes:
    """A kernel whose `x` is declared (`x_decl`, a parameter) `pad` lines above its loops."""
    notes = b"".join(b"    // note %d on the layout of the rows\n" % k for k in range(pad))
    return (b"#include <hip/hip_runtime.h>\n\n"
            b"__global__ void twice(%s, float* y, int n, int m) {\n" % x_decl + notes +
            b"    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
            b"    for (int j = i; j < m; j += 32) {\n        y[j] *= 2;\n    }\n"
            b"    sync_all();\n}\n\nint version() { return 1; }\n")


@pytest.mark.parametrize("x_decl, want", [
    (b"const int* x", "stop"), (b"T* x", "stop"), (b"const float* x", "move"),
    (b"const double* __restrict__ x", "move")],
    ids=["int-far-above", "template-type", "float-far-above", "double-far-above"])
def test_an_integer_cast_of_a_name_declared_far_above_is_read_by_its_declaration(
        tmp_path, x_decl, want):
    # The fix's loop adds `(int)x[j]`, upstream's same loop `x[j]`; x is declared 210 lines
    # above the loop. Past the 200 lines read for its declaration, the cast read as another
    # value: an `int* x` cast to int is the same value, and the fix moved, the merge adding x
    # to y twice, exit 0. Now the declaration is read wherever it is above: an integer's cast
    # is spelling (stops); a name whose type is not shown (a template's T) is a doubt, and
    # stops (both ways on); a float's is other work, and moves with both.
    base = _far_kernel(x_decl, 210)
    if x_decl.startswith(b"T*"):
        base = base.replace(b"__global__", b"template <typename T>\n__global__")
    check = b"        if (j >= n) break;\n"
    head = b"    for (int j = i; j < m; j += 64) {\n"
    after, first = b"    sync_all();\n", b"    for (int j = i; j < m; j += 32) {\n"
    stack = stack_with_file(
        tmp_path, "pkg/k.cu", base,
        base.replace(after, after + head + check + b"        y[j] += (int)x[j];\n    }\n"),
        base.replace(first, head + check + b"        y[j] += x[j];\n    }\n" + first))
    if want == "stop":
        stops(stack)
        return
    moves(stack)
