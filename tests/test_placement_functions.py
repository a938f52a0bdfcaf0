"""A fix carried onto a changed file lands in the function it changes, or the rebase stops: never
in another function that has a copy of its code. Real git upstreams, real commands: `status
--against`, `rebase --to`, `overlays`.

Upstream changes the fixed function (a context line of the fix, or the fix's own line its own
way) and keeps the old body as a renamed copy (`scale_legacy`), or reorders identical
functions: the fix's context is then whole only in the copy, and nearness to the header's line,
fuzz, an exact match where the copy took the function's place, and git's own 3-way merge (whose
line map takes `def scale` -> `def scale_legacy` for an edit) all put the fix there, every
check green, the deployed function without it. The definition line above the change names
another function than the fix's, while the fix's is still in the file: the rebase stops.
"""
from __future__ import annotations

import itertools
import random
import re

from helpers.project import OneUpstreamStack

from patchforge.apply import hunks

HEAD = b"import torch\n\n\ndef helper(x):\n    return x.float()\n"
AMAX = (b"    amax = x.abs().amax(dim=-1, keepdim=True)\n"
        b"    factor = amax / fp8_max_for(dtype)\n"
        b"    q = (x / factor).to(dtype)\n"
        b"    return q, factor\n")
CLAMPED = AMAX.replace(b"factor = amax / ", b"factor = amax.clamp(min=1e-12) / ")
BODY = (b"    a = load_input(x, layout)\n"
        b"    b = a * scale_for(dtype)\n"
        b"    c = b + bias_for(dtype)\n"
        b"    d = c.clamp(lower_bound, upper_bound)\n"
        b"    e = d.to(out_dtype)\n"
        b"    return e\n")
TAIL = b"\n\ndef tail(x):\n    return x + 1\n"


def define(name: str, body: bytes) -> bytes:
    return b"\n\ndef %s(x, dtype):\n" % name.encode() + body


def function(text: bytes, name: str) -> bytes:
    """The body of `name` in `text`: from its `def` line to the next top-level line."""
    start = text.index(b"def %s(" % name.encode())
    end = text.find(b"\ndef ", start + 1)
    return text[start:end if end >= 0 else len(text)]


def stops_naming(stack: OneUpstreamStack, target: str, fix: str, there: str) -> str:
    """status says the rebase stops; the rebase stops (exit 3) naming the fix's function and
    the one it would have changed, and --abort leaves the series as it was."""
    status = stack.json("status", "--against", target, expect=1)
    ((patch,),) = [status["patches"]]
    assert patch["rebase"] == "stop", patch
    _, _, err = stack.cli("rebase", "--to", target, expect=3)
    assert f"the fix changes {fix}, and would change {there}" in err, err
    assert f"{fix} is still in the file" in err, err
    stack.cli("rebase", "--abort")
    assert stack.series("up") == ["fix.patch"]
    return err


def test_a_fix_with_its_def_line_in_context_is_not_fuzzed_into_the_legacy_copy(tmp_path):
    """The hunk's context starts at `def scale(`; upstream renames the old function
    scale_legacy (where scale was) and adds a new scale() below whose `q` line (a context line
    of the fix) reads otherwise. Before: `fuzz`, the rebase "merged: 3-way merged cleanly",
    exit 0, the fix in scale_legacy."""
    v1 = HEAD + define("scale", AMAX)
    stack = OneUpstreamStack(tmp_path, {"k.py": v1})
    stack.add_fix("fix", "k.py", v1, HEAD + define("scale", CLAMPED))
    new_q = AMAX.replace(b"to(dtype)", b"to(dtype, copy=False)")
    stack.commit({"k.py": HEAD + define("scale_legacy", AMAX) + define("scale", new_q)},
                 "scale: no copy; the old one kept", tag="v2")
    stops_naming(stack, "up=v2", "scale", "scale_legacy")


def test_a_fix_landed_in_the_new_function_is_not_put_into_the_legacy_copy(tmp_path):
    """Upstream lands the fix in a new scale() and keeps the old code as scale_legacy where
    scale was. Before: status `unsure`, the rebase "merged cleanly; landed detection unsure:
    review", exit 0, and scale_legacy got the fix too."""
    v1 = HEAD + define("scale", AMAX)
    stack = OneUpstreamStack(tmp_path, {"k.py": v1})
    stack.add_fix("fix", "k.py", v1, HEAD + define("scale", CLAMPED))
    stack.commit({"k.py": HEAD + define("scale_legacy", AMAX) + define("scale", CLAMPED)},
                 "scale clamps; the old one kept", tag="v2")
    rc, out, err = stack.cli("rebase", "--to", "up=v2", expect=None)
    if rc == 3:
        stack.cli("rebase", "--abort")
    else:  # dropped as landed: the copy is not touched
        assert rc == 0 and stack.series("up") == [], out + err
        return
    assert "would change scale_legacy" in err, err
    assert stack.series("up") == ["fix.patch"]


def test_a_fix_matching_exactly_where_the_renamed_copy_took_its_place_stops(tmp_path):
    """Upstream renames scale() to scale_legacy() in place (its body unchanged) and adds a new
    scale() below that writes the fix's line its own way: the hunk (no `def` line in its
    context) matches exactly at scale_legacy. Before: `applies`, the rebase "applied exactly",
    exit 0, the deployed scale() without the fix."""
    v1 = HEAD + define("scale", BODY) + TAIL
    nan = BODY.replace(b"upper_bound)\n", b"upper_bound).nan_to_num()\n")
    own = BODY.replace(b"upper_bound)\n", b"upper_bound * 2)\n")
    stack = OneUpstreamStack(tmp_path, {"k.py": v1})
    stack.add_fix("fix", "k.py", v1, HEAD + define("scale", nan) + TAIL)
    stack.commit({"k.py": HEAD + define("scale_legacy", BODY) + define("scale", own) + TAIL},
                 "scale: a wider bound; the old one kept", tag="v2")
    stops_naming(stack, "up=v2", "scale", "scale_legacy")


def test_a_fix_in_the_last_function_is_not_put_into_a_copy_appended_after_it(tmp_path):
    """The fix changes a line near the end of the file's last function (its hunk is anchored
    at the file's end); upstream changes a context line of it and appends the old body as
    scale_legacy, now the file's end. Before: `offset`, exit 0, the fix in scale_legacy."""
    v1 = HEAD + define("scale", BODY)
    stack = OneUpstreamStack(tmp_path, {"k.py": v1})
    stack.add_fix("fix", "k.py", v1, HEAD + define(
        "scale", BODY.replace(b"d.to(out_dtype)", b"d.to(out_dtype).contiguous()")))
    changed = BODY.replace(b"bias_for(dtype)", b"bias_for(dtype, layout)")
    stack.commit({"k.py": HEAD + define("scale", changed) + define("scale_legacy", BODY)},
                 "bias by layout; the old one kept", tag="v2")
    stops_naming(stack, "up=v2", "scale", "scale_legacy")


QUANT_C = (b"    q = fetch_rows(x, layout)\n    r = q.sum(dim=-1)\n    s = r / count_rows(q)\n"
           b"    t = s.to(out_dtype)\n    return t\n")
UNCLAMPED = BODY.replace(b"    d = c.clamp(lower_bound, upper_bound)\n", b"")


def test_the_twin_rules_other_function_is_not_where_the_rebase_puts_the_fix(tmp_path):
    """quant_a, quant_b, reduce_c, quant_d (a, b, d identical); the fix removes quant_b's
    clamp. Upstream removes quant_a's clamp, moves quant_b to the file's end and keeps a copy
    of it, quant_b_legacy, near its old place. Before: status `unsure` (the twin rule: the code
    without the change is in quant_b_legacy, not the fix's function), the rebase "applied
    exactly", exit 0, the fix in quant_b_legacy, quant_b still clamping."""
    v1 = HEAD + define("quant_a", BODY) + define("quant_b", BODY) + \
        define("reduce_c", QUANT_C) + define("quant_d", BODY)
    stack = OneUpstreamStack(tmp_path, {"k.py": v1})
    stack.add_fix("fix", "k.py", v1, HEAD + define("quant_a", BODY)
                  + define("quant_b", UNCLAMPED) + define("reduce_c", QUANT_C)
                  + define("quant_d", BODY))
    stack.commit({"k.py": HEAD + define("quant_a", UNCLAMPED) + define("reduce_c", QUANT_C)
                  + define("quant_b_legacy", BODY) + define("quant_d", BODY)
                  + define("quant_b", BODY)}, "quant_a unclamped; quant_b moved", tag="v2")
    stops_naming(stack, "up=v2", "quant_b", "quant_b_legacy")


def test_reordered_twins_do_not_carry_the_fix_into_the_other_twin(tmp_path):
    """The fix adds a line to quant_b; upstream swaps quant_a and quant_b, edits quant_b's
    line above the fix's, and adds the fix's line to quant_d only. Before: status `unsure`,
    the rebase "merged: 3-way merged cleanly", exit 0, the fix in quant_a (git's line map
    carries quant_b's place onto quant_a, now where quant_b was)."""
    v1 = HEAD + define("quant_a", BODY) + define("quant_b", BODY) + \
        define("reduce_c", QUANT_C) + define("quant_d", BODY)
    sat = BODY.replace(b"scale_for(dtype)\n",
                       b"scale_for(dtype)\n    b = saturate_to_range(b, fp8_limit)\n")
    stack = OneUpstreamStack(tmp_path, {"k.py": v1})
    stack.add_fix("fix", "k.py", v1, HEAD + define("quant_a", BODY) + define("quant_b", sat)
                  + define("reduce_c", QUANT_C) + define("quant_d", BODY))
    tuned = BODY.replace(b"scale_for(dtype)\n", b"scale_for(dtype)  # tuned\n")
    stack.commit({"k.py": HEAD + define("quant_b", tuned) + define("quant_a", BODY)
                  + define("reduce_c", QUANT_C) + define("quant_d", sat)},
                 "reorder; quant_d saturates", tag="v2")
    stops_naming(stack, "up=v2", "quant_b", "quant_a")


def test_a_method_is_not_fuzzed_into_its_legacy_copy_in_the_same_class(tmp_path):
    """The same in methods of one class (a module's per-dtype forward): the definition line
    that names the place is the method's own `def`, not the class line."""
    def method(name: str, body: bytes) -> bytes:
        return b"\n    def %s(self, x, dtype):\n" % name.encode() + \
            b"".join(b"    " + line + b"\n" for line in body.splitlines())

    head = b"import torch\n\n\nclass Quant(torch.nn.Module):\n    kind = 'fp8'\n"
    end = b"\n    def extra_repr(self):\n        return 'quant'\n"
    v1 = head + method("forward", AMAX) + end
    stack = OneUpstreamStack(tmp_path, {"k.py": v1})
    stack.add_fix("fix", "k.py", v1, head + method("forward", CLAMPED) + end)
    new_q = AMAX.replace(b"to(dtype)", b"to(dtype, copy=False)")
    stack.commit({"k.py": head + method("forward_legacy", AMAX) + method("forward", new_q) + end},
                 "forward: no copy; the old one kept", tag="v2")
    stops_naming(stack, "up=v2", "Quant.forward", "Quant.forward_legacy")


KERNEL = (b"{\n"
          b"    const int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
          b"    float a = in[i];\n"
          b"    float s = a * scale;\n"
          b"    out[i] = (T)s;\n"
          b"}\n")


def test_a_cuda_kernel_fix_is_not_put_into_the_legacy_kernel(tmp_path):
    """A kernel (`.cu`, the brace on its own line): upstream changes a context line of it
    and keeps the old kernel as scale_kernel_legacy above it. git's default funcname rule
    names the place."""
    def kernel(name: str, body: bytes) -> bytes:
        return (b"\ntemplate <typename T>\n__global__ void %s(const float* in, T* out, "
                b"float scale)\n" % name.encode()) + body

    head = b"#include <hip/hip_runtime.h>\n"
    v1 = head + kernel("scale_kernel", KERNEL)
    fixed = KERNEL.replace(b"float s = a * scale;", b"float s = fminf(a * scale, 448.0f);")
    stack = OneUpstreamStack(tmp_path, {"k.cu": v1})
    stack.add_fix("fix", "k.cu", v1, head + kernel("scale_kernel", fixed))
    changed = KERNEL.replace(b"out[i] = (T)s;", b"out[i] = static_cast<T>(s);")
    stack.commit({"k.cu": head + kernel("scale_kernel_legacy", KERNEL)
                  + kernel("scale_kernel", changed)}, "a cast; the old kernel kept", tag="v2")
    stops_naming(stack, "up=v2", "scale_kernel", "scale_kernel_legacy")


# Guards: where the fix's function is gone or the change is at the top level, the change
# follows the code as before. They hold on the code before the rule too.

def test_a_fix_follows_its_function_renamed_upstream(tmp_path):
    """Upstream renames scale() to scale_fp8() (no scale left): the fix goes into scale_fp8
    (the same function by its code), the rebase exits 0. Holds before the rule too."""
    v1 = HEAD + define("scale", AMAX) + TAIL
    stack = OneUpstreamStack(tmp_path, {"k.py": v1})
    stack.add_fix("fix", "k.py", v1, HEAD + define("scale", CLAMPED) + TAIL)
    stack.commit({"k.py": b"# scaling\n" + HEAD + define("scale_fp8", AMAX) + TAIL},
                 "rename", tag="v2")
    summary = stack.rebase_json("--to", "up=v2")
    assert [p["action"] for p in summary["patches"]] != ["dropped"]
    stack.cli("overlays")
    deployed = (stack.root / "overlays" / "up" / "k.py").read_bytes()
    assert b"clamp(min=1e-12)" in function(deployed, "scale_fp8")


def test_a_new_function_added_at_the_end_moves_past_upstreams_new_one(tmp_path):
    """The fix appends a function at the file's end, where upstream appended another: the
    line above the fix's is upstream's function now, and the fix's change is not in any
    function (a definition added whole): it moves, exit 0. Holds before the rule too."""
    v1 = HEAD + define("scale", AMAX)
    added, upstream_added = define("scale_safe", CLAMPED), define("scale_bf16", AMAX)
    stack = OneUpstreamStack(tmp_path, {"k.py": v1})
    stack.add_fix("fix", "k.py", v1, v1 + added)
    stack.commit({"k.py": v1 + upstream_added}, "another function", tag="v2")
    summary = stack.rebase_json("--to", "up=v2")
    assert [p["action"] for p in summary["patches"]] in (["offset"], ["merged"])
    stack.cli("overlays")
    assert (stack.root / "overlays" / "up" / "k.py").read_bytes() in (
        v1 + upstream_added + added, v1 + added + upstream_added)


def test_a_fix_of_a_top_level_statement_moves_past_a_new_function_above_it(tmp_path):
    """A fix to a module-level statement below scale(); upstream adds a function between
    them: the statement is in no function, so nothing names another: it moves, exit 0.
    Holds before the rule too."""
    v1 = HEAD + define("scale", AMAX) + b"\n\nLIMITS = {'fp8': 448.0}\nDEFAULT = 'fp8'\n"
    stack = OneUpstreamStack(tmp_path, {"k.py": v1})
    stack.add_fix("fix", "k.py", v1, v1.replace(b"448.0}", b"448.0, 'bf16': 3.0e38}"))
    v2 = v1.replace(b"\n\nLIMITS", define("unscale", AMAX) + b"\n\nLIMITS")
    stack.commit({"k.py": v2}, "unscale", tag="v2")
    summary = stack.rebase_json("--to", "up=v2")
    assert [p["action"] for p in summary["patches"]] == ["offset"]


# The rule itself (apply.hunks.another_function) on the four files: the patch's base, the fixed
# base, upstream's file, what the carrying made of it.

def carried(base: bytes, fixed: bytes, current: bytes, result: bytes, path: str = "k.py"):
    from patchforge.apply.hunks import another_function, file_changes
    return another_function(path, base, file_changes(base, fixed), current,
                            file_changes(current, result))


def test_a_change_carried_into_a_function_nested_in_the_fixs_own_follows_it():
    """Upstream wraps scale()'s body into a nested `_body()` (AITER's flydsl kernels, v0.1.18
    -> main): the change in _body is in scale."""
    v1 = HEAD + define("scale", AMAX)
    nested = b"".join(b"    " + line + b"\n" for line in AMAX.splitlines())
    v2 = HEAD + b"\n\ndef scale(x, dtype):\n    def _body():\n" + nested + b"    return _body()\n"
    result = v2.replace(b"factor = amax / ", b"factor = amax.clamp(min=1e-12) / ")
    assert carried(v1, HEAD + define("scale", CLAMPED), v2, result) is None


def test_a_change_carried_into_the_helper_upstream_moved_the_code_into_follows_it():
    """Upstream moves scale()'s body into `_scale_impl` and makes scale() a wrapper: scale()
    no longer has the code the fix is made on, the change follows the code."""
    v1 = HEAD + define("scale", AMAX)
    wrapper = b"    return _scale_impl(x, dtype)\n"
    v2 = HEAD + define("_scale_impl", AMAX) + define("scale", wrapper)
    result = v2.replace(b"factor = amax / ", b"factor = amax.clamp(min=1e-12) / ")
    assert carried(v1, HEAD + define("scale", CLAMPED), v2, result) is None


def test_the_rule_names_the_copy_while_the_fixs_function_keeps_its_code():
    """The counterpart of the two above, on the same files: scale() kept whole upstream (one
    context line changed), the change carried into the copy beside it."""
    v1 = HEAD + define("scale", AMAX)
    new_q = AMAX.replace(b"to(dtype)", b"to(dtype, copy=False)")
    v2 = HEAD + define("scale_legacy", AMAX) + define("scale", new_q)
    result = v2.replace(b"factor = amax / ", b"factor = amax.clamp(min=1e-12) / ", 1)
    assert carried(v1, HEAD + define("scale", CLAMPED), v2, result) == \
        (b"scale", b"scale_legacy", 10)


def test_files_without_functions_have_no_rule():
    """YAML, Markdown, CMake: their column-0 lines are keys and text, not definitions."""
    v1 = b"engine:\n  dtype: fp8\n  scale: 1.0\nother:\n  dtype: fp8\n  scale: 1.0\n"
    fixed = v1.replace(b"scale: 1.0", b"scale: 2.0", 1)
    v2 = b"other:\n  dtype: fp8\n  scale: 1.0\nengine:\n  dtype: fp8\n  scale: 1.5\n"
    result = v2.replace(b"scale: 1.0", b"scale: 2.0", 1)
    assert carried(v1, fixed, v2, result, "config.yaml") is None


def test_a_method_is_not_merged_into_a_same_named_method_of_a_new_class(tmp_path):
    """Upstream keeps the old body as `Legacy.run` in a new class above `A` and changes one
    line of `A.run`. Named by their bare `def` lines both were `run`: git's clean merge put
    the fix into Legacy.run, exit 0, status, lint and verify quiet. A method is named with its
    class: the rebase stops, naming both."""
    def body(head: bytes, start: bytes) -> bytes:
        return (head + b"        total = " + start + b"\n        for row in rows:\n"
                b"            if row.ok:\n                total += row.value\n"
                b"        return total\n")
    a = b"class A:\n    def run(self, rows):\n"
    legacy = b"class Legacy:\n    def run(self, rows):\n"
    v1 = b"import os\n\n\n" + body(a, b"0")
    stack = OneUpstreamStack(tmp_path, {"m.py": v1})
    stack.add_fix("fix", "m.py", v1, v1.replace(b"row.value\n", b"row.value * row.weight\n"))
    stack.commit({"m.py": b"import os\n\n\n" + body(legacy, b"0") + b"\n\n" + body(a, b"start")},
                 "A.run starts from start; the old one kept as Legacy.run", tag="v2")
    stops_naming(stack, "up=v2", "A.run", "Legacy.run")


# Same-named definitions in the branches of one conditional are two functions: a C `#ifdef X`
# / `#else` pair, a Python `if`/`else` or `try`/`except ImportError` pair. Each is named with
# the branch it sits in (its conditions, a negated one after `!`/`not`), so the names follow a
# definition whose branches upstream reordered and tell two same-named ones apart.

PICK_FAST = (b"{\n"
             b"    int a = load_fast(ctx);\n"
             b"    int b = widen_fast(a, ctx->lanes);\n"
             b"    int c = combine(a, b);\n"
             b"    int d = c >> ctx->shift;\n"
             b"    return d;\n"
             b"}\n")
PICK_SLOW = (b"{\n"
             b"    int a = load_slow(ctx);\n"
             b"    int b = a * ctx->lanes;\n"
             b"    return b;\n"
             b"}\n")
PICK = b"static int pick(struct ctx *ctx)\n"
C_HEAD = b"#include \"ctx.h\"\n\n"
C_TAIL = b"\nint run(struct ctx *ctx)\n{\n    return pick(ctx);\n}\n"
PICK_MASKED = PICK_FAST.replace(b"combine(a, b);", b"combine(a, b) & ctx->mask;")


def ifdef(first: bytes, second: bytes, directive: bytes = b"#ifdef USE_FAST") -> bytes:
    return C_HEAD + directive + b"\n" + PICK + first + b"#else\n" + PICK + second + \
        b"#endif\n" + C_TAIL


def test_a_fix_is_not_carried_into_the_same_named_function_of_the_else_branch(tmp_path):
    """`pick` defined under `#ifdef USE_FAST` and again under `#else`; the fix changes the
    fast one. Upstream changes a context line of the fast one and makes the old fast body the
    fallback: its pre-image is whole only in the `#else` pick. Before: both were `pick`, the
    rebase "applied exactly" into the fallback, exit 0, the fast pick without the fix."""
    v1 = ifdef(PICK_FAST, PICK_SLOW)
    stack = OneUpstreamStack(tmp_path, {"pick.c": v1})
    stack.add_fix("fix", "pick.c", v1, ifdef(PICK_MASKED, PICK_SLOW))
    wider = PICK_FAST.replace(b"widen_fast(a, ctx->lanes)", b"widen_fast(a, ctx->lanes * 2)")
    stack.commit({"pick.c": ifdef(wider, PICK_FAST)}, "wider fast pick; the old one the fallback",
                 tag="v2")
    stops_naming(stack, "up=v2", "pick [defined(USE_FAST)]", "pick [!defined(USE_FAST)]")


def test_an_ifndef_with_its_define_and_an_else_is_two_branches_not_an_include_guard(tmp_path):
    """`#ifndef WARP_SIZE`, `#define WARP_SIZE 64`, then `#else`: a default and its
    alternative, not an include guard (which has no `#else`). Read as a guard, the picks of
    its two branches were one function again: the fix was carried into the `#else` copy,
    exit 0. It stops as the `#ifdef USE_FAST` form does."""
    directive = b"#ifndef WARP_SIZE\n#define WARP_SIZE 64"
    v1 = ifdef(PICK_FAST, PICK_SLOW, directive)
    stack = OneUpstreamStack(tmp_path, {"pick.c": v1})
    stack.add_fix("fix", "pick.c", v1, ifdef(PICK_MASKED, PICK_SLOW, directive))
    wider = PICK_FAST.replace(b"widen_fast(a, ctx->lanes)", b"widen_fast(a, ctx->lanes * 2)")
    stack.commit({"pick.c": ifdef(wider, PICK_FAST, directive)},
                 "wider fast pick; the old one the fallback", tag="v2")
    stops_naming(stack, "up=v2", "pick [!defined(WARP_SIZE)]", "pick [defined(WARP_SIZE)]")


def test_a_c_fix_follows_its_branch_when_upstream_reorders_the_branches():
    """Upstream writes the pair as `#ifndef USE_FAST` (the slow one first) / `#else`: the fix
    carried into the fast pick, now second, is in its own function (the same branch)."""
    v1 = ifdef(PICK_FAST, PICK_SLOW)
    v2 = ifdef(PICK_SLOW, PICK_FAST, b"#ifndef USE_FAST")
    result = v2.replace(b"combine(a, b);", b"combine(a, b) & ctx->mask;")
    assert carried(v1, ifdef(PICK_MASKED, PICK_SLOW), v2, result, "pick.c") is None
    wrong = ifdef(PICK_SLOW.replace(b"a * ctx->lanes;", b"a * ctx->lanes & ctx->mask;"),
                  PICK_FAST, b"#ifndef USE_FAST")
    assert carried(v1, ifdef(PICK_MASKED, PICK_SLOW), v2, wrong, "pick.c") == \
        (b"pick [defined(USE_FAST)]", b"pick [!defined(USE_FAST)]", 7)


def test_a_fix_carried_into_a_copy_upstream_disabled_with_if_0_stops(tmp_path):
    """Upstream keeps the old pick under `#if 0` and writes a new pick below it (a common C
    idiom): the fix's context is whole only in the disabled copy, and the fix's own pick no
    longer has its code, which read as the change following the code: status and the rebase
    said "offset", exit 0, and the deployed file had the fix only in code never built. The
    rebase stops, naming the disabled copy; `#else` of `#if 1` and Python's `if False:` are
    never built either, while a copy under a real condition still follows the code."""
    v1 = C_HEAD + PICK + PICK_FAST + C_TAIL
    stack = OneUpstreamStack(tmp_path, {"pick.c": v1})
    stack.add_fix("fix", "pick.c", v1, C_HEAD + PICK + PICK_MASKED + C_TAIL)
    rewritten = b"{\n    return pick_vectorized(ctx);\n}\n"
    v2 = C_HEAD + b"#if 0\n" + PICK + PICK_FAST + b"#endif\n\n" + PICK + rewritten + C_TAIL
    stack.commit({"pick.c": v2}, "pick rewritten; the old one kept under #if 0", tag="v2")
    stops_naming(stack, "up=v2", "pick", "pick [0]")
    masked = v2.replace(b"combine(a, b);", b"combine(a, b) & ctx->mask;")
    fixed = C_HEAD + PICK + PICK_MASKED + C_TAIL
    for disabled, live in ((b"#if 1\n", b"#else\n"), (b"#if USE_OLD\n", b"#else\n")):
        v3 = C_HEAD + disabled + PICK + rewritten + live + PICK + PICK_FAST + b"#endif\n" + C_TAIL
        result = v3.replace(b"combine(a, b);", b"combine(a, b) & ctx->mask;")
        found = carried(v1, fixed, v3, result, "pick.c")
        assert (found is not None) == (disabled == b"#if 1\n"), (disabled, found)
    assert carried(v1, fixed, v2, masked, "pick.c") == (b"pick", b"pick [0]", 8)
    py2 = HEAD + b"\n\nif False:\n" + b"".join(
        b"    " + line + b"\n" for line in define("scale", AMAX).splitlines()) + \
        define("scale", b"    return fast_scale(x, dtype)\n")
    result = py2.replace(b"factor = amax / ", b"factor = amax.clamp(min=1e-12) / ")
    assert carried(HEAD + define("scale", AMAX), HEAD + define("scale", CLAMPED), py2,
                   result)[1] == b"scale [False]"


def test_a_header_guard_and_upstreams_new_condition_around_it_do_not_stop_a_fix():
    """A header's include guard is no branch, and a function upstream wraps in a new `#if`
    (one definition, no other of its name) is the same function: the change follows it."""
    guard = b"#ifndef PICK_H\n#define PICK_H\n"
    v1 = guard + C_HEAD + PICK + PICK_FAST + C_TAIL + b"#endif\n"
    fixed = v1.replace(b"combine(a, b);", b"combine(a, b) & ctx->mask;")
    v2 = v1.replace(PICK, b"#if defined(__gfx942__)\n" + PICK).replace(
        C_TAIL, b"#endif\n" + C_TAIL).replace(b"PICK_H", b"AITER_PICK_H")
    result = v2.replace(b"combine(a, b);", b"combine(a, b) & ctx->mask;")
    assert carried(v1, fixed, v2, result, "pick.h") is None


SCALE_TRITON = (b"        amax = x.abs().amax(dim=-1, keepdim=True)\n"
                b"        factor = amax / fp8_max_for(dtype)\n"
                b"        q = triton_quant(x, factor, dtype)\n"
                b"        q = q.view(x.shape)\n"
                b"        q = q.masked_fill(x.isnan(), 0)\n"
                b"        factor = factor.squeeze(-1)\n"
                b"        return q, factor\n")
SCALE_TORCH = (b"        factor = x.abs().max() / 448.0\n"
               b"        return (x / factor).to(dtype), factor\n")


def branches(first: bytes, second: bytes, opening: bytes = b"if HAS_TRITON:\n",
             other: bytes = b"else:\n") -> bytes:
    return (b"import torch\n\nHAS_TRITON = find_spec('triton') is not None\n\n"
            + opening + b"    def scale(x, dtype):\n" + first
            + other + b"    def scale(x, dtype):\n" + second
            + b"\n\ndef tail(x):\n    return x + 1\n")


def test_a_python_fix_is_not_carried_into_the_same_named_def_of_the_else_branch(tmp_path):
    """`def scale` under `if HAS_TRITON:` and again under `else:`; the fix changes the triton
    one, upstream changes its `triton_quant` line (a context line of the fix) and makes the
    old body the fallback: the fix's pre-image is whole only there. Before: both were
    `scale`, the rebase carried the fix into the fallback ("applied at an offset"), exit 0."""
    v1 = branches(SCALE_TRITON, SCALE_TORCH)
    stack = OneUpstreamStack(tmp_path, {"k.py": v1})
    stack.add_fix("fix", "k.py", v1, branches(
        SCALE_TRITON.replace(b"q.view(x.shape)", b"q.view(x.shape).contiguous()"), SCALE_TORCH))
    rounded = SCALE_TRITON.replace(b"factor, dtype)", b"factor, dtype, rounding='rne')")
    stack.commit({"k.py": branches(rounded, SCALE_TRITON)}, "rounding; the old one kept",
                 tag="v2")
    stops_naming(stack, "up=v2", "scale [HAS_TRITON]", "scale [not HAS_TRITON]")


def test_a_fix_is_not_carried_from_the_try_branch_into_the_import_error_fallback():
    """The same in a `try:` / `except ImportError:` fallback pair (the branch named by its
    clause); a fix carried into its own def of the pair, and one whose pair upstream wrote
    the other way round (`if not HAS_TRITON:` first), follow it."""
    clamped = SCALE_TRITON.replace(b"factor = amax / ", b"factor = amax.clamp(min=1e-12) / ")
    v1 = branches(SCALE_TRITON, SCALE_TORCH, b"try:\n", b"except ImportError:\n")
    fixed = branches(clamped, SCALE_TORCH, b"try:\n", b"except ImportError:\n")
    reshaped = SCALE_TRITON.replace(b"q.view(x.shape)", b"q.reshape(x.shape)")
    v2 = branches(reshaped, SCALE_TRITON, b"try:\n", b"except ImportError:\n")
    wrong = v2.replace(b"factor = amax / ", b"factor = amax.clamp(min=1e-12) / ").replace(
        b"amax.clamp(min=1e-12) / ", b"amax / ", 1)
    assert carried(v1, fixed, v2, wrong) == (b"scale [try]", b"scale [except ImportError]", 17)
    right = v2.replace(b"factor = amax / ", b"factor = amax.clamp(min=1e-12) / ", 1)
    assert carried(v1, fixed, v2, right) is None
    v1 = branches(SCALE_TRITON, SCALE_TORCH)
    swapped = branches(SCALE_TORCH, SCALE_TRITON, b"if not HAS_TRITON:\n")
    result = swapped.replace(b"factor = amax / ", b"factor = amax.clamp(min=1e-12) / ")
    assert carried(v1, branches(clamped, SCALE_TORCH), swapped, result) is None


def test_a_cpp_method_is_not_merged_into_the_same_named_method_of_another_class(tmp_path):
    """C++ methods defined out of their class (`int A::run(`): upstream keeps the old body as
    `Legacy::run` above `A::run` and changes one line of A's. Named by the identifier before
    `(` both were `run`: git's clean merge put the fix into Legacy::run, exit 0. A method is
    named with its class: the rebase stops, naming both."""
    def body(owner: bytes, start: bytes) -> bytes:
        return (b"int " + owner + b"::run(const Rows& rows)\n{\n    int total = " + start
                + b";\n    for (const Row& row : rows) {\n        if (row.ok)\n"
                b"            total += row.value;\n    }\n    return total;\n}\n")
    v1 = b"#include \"rows.h\"\n\n" + body(b"A", b"0")
    stack = OneUpstreamStack(tmp_path, {"rows.cpp": v1})
    stack.add_fix("fix", "rows.cpp", v1,
                  v1.replace(b"row.value;", b"row.value * row.weight;"))
    stack.commit({"rows.cpp": b"#include \"rows.h\"\n\n" + body(b"Legacy", b"0") + b"\n"
                  + body(b"A", b"start")}, "A::run starts from start; the old one kept",
                 tag="v2")
    stops_naming(stack, "up=v2", "A::run", "Legacy::run")


# C++ scopes: a function is named with the namespaces and classes it is in, read by brace
# depth, so that same-named functions of two namespaces written at column 0 (git's funcname
# rule names both by their own line), or methods defined inside two classes, are two.

def rows_run(indent: bytes, start: bytes) -> bytes:
    body = (b"int run(const Rows& rows)\n{\n    int total = " + start + b";\n"
            b"    for (const Row& row : rows) {\n        if (row.ok)\n"
            b"            total += row.value;\n    }\n    return total;\n}\n")
    return b"".join(indent + line if line.strip() else line
                    for line in body.splitlines(keepends=True))


def in_namespace(name: bytes, start: bytes) -> bytes:
    return b"namespace " + name + b" {\n\n" + rows_run(b"", start) + \
        b"\n}  // namespace " + name + b"\n"


def in_struct(name: bytes, start: bytes) -> bytes:
    return b"struct " + name + b" {\n  int kept;\n\n" + rows_run(b"  ", start) + b"};\n"


def kept_as_legacy(tmp_path, path: str, wrapped, fix: str, there: str) -> None:
    """`run` (`wrapped(name, start)`: in a namespace or struct of that name) fixed; upstream
    keeps the old body as a `legacy` copy above it and changes one line of the fix's: the
    rebase stops naming both."""
    v1 = b"#include \"rows.h\"\n\n" + wrapped(b"fast", b"0")
    stack = OneUpstreamStack(tmp_path, {path: v1})
    stack.add_fix("fix", path, v1, v1.replace(b"row.value;", b"row.value * row.weight;"))
    stack.commit({path: b"#include \"rows.h\"\n\n" + wrapped(b"legacy", b"0") + b"\n"
                  + wrapped(b"fast", b"start")}, "run starts from start", tag="v2")
    stops_naming(stack, "up=v2", fix, there)


def test_a_fix_is_not_merged_into_the_same_named_function_of_another_namespace(tmp_path):
    """`run` in `namespace fast`, written at column 0 as most namespaces are; upstream keeps
    the old body as `legacy::run` in a namespace above and changes one line of fast's. By
    their own lines both were `run`: git's clean merge put the fix into legacy::run, exit 0,
    the fast run without it. Named with their namespaces: the rebase stops, naming both."""
    kept_as_legacy(tmp_path, "rows.cpp", in_namespace, "fast::run", "legacy::run")


def test_a_fix_is_not_merged_into_the_same_named_method_of_another_struct(tmp_path):
    """The same with `run` defined inside `struct fast` and upstream's `struct legacy` above
    it. Indented, neither was read as a definition: the change was in no function, the merge
    into legacy::run clean, exit 0. A method's body is found by its braces: it stops."""
    kept_as_legacy(tmp_path, "rows.hpp", in_struct, "fast::run", "legacy::run")


def test_a_cpp_fix_follows_its_function_across_namespaces_reordered_and_written_otherwise():
    """Each carried into its own function, the change follows it: namespaces upstream
    reordered, a method upstream moved out of its class (`int A::run(` at column 0 is the
    `A::run` that was defined inside `struct A`), a namespace written `a::b` or nested; and a
    change carried into the other namespace's `run` is named so."""
    def fix(text: bytes) -> bytes:
        return text.replace(b"row.value;", b"row.value * row.weight;", 1)

    two = in_namespace(b"fast", b"0") + in_namespace(b"legacy", b"0")
    swapped = in_namespace(b"legacy", b"0") + in_namespace(b"fast", b"0")
    carried_into = swapped.replace(b"row.value;", b"row.value * row.weight;").replace(
        b"row.value * row.weight;", b"row.value;", 1)
    assert carried(two, fix(two), swapped, carried_into, "rows.cpp") is None
    assert carried(two, fix(two), swapped, fix(swapped), "rows.cpp") == \
        (b"fast::run", b"legacy::run", 8)
    inside = b"namespace a {\nnamespace b {\n" + in_struct(b"A", b"0") + b"}\n}\n"
    outside = (b"namespace a::b {\nstruct A {\n  int kept;\n  int run(const Rows& rows);\n};\n"
               + rows_run(b"", b"0").replace(b"int run(", b"int A::run(") + b"}\n")
    assert carried(inside, fix(inside), outside, fix(outside), "rows.hpp") is None


def test_the_scopes_are_read_past_comments_strings_and_later_branches():
    """Braces in comments, strings, character literals and an `#else` branch (which repeats
    the `#if` branch's) do not move the depth: `run` after them is still `A::run`; an
    `extern "C"` block and a `template <class T>` in front of a struct name no scope."""
    from patchforge.apply.diffparse import split_lines
    from patchforge.apply.hunks import CFile, _definitions_of, _functions_of

    text = (b"extern \"C\" {\n/* { */\n// }\nconst char* open = \"{\";\nchar close = '}';\n"
            b"#ifdef WIDE\nstruct Pad { int a;\n#else\nstruct Pad { int a, b;\n#endif\n};\n"
            b"template <class T>\nstruct A : Base<T> {\n  public:\n  int run(int x) const\n"
            b"  {\n    return x + 1;\n  }\n};\n}\n")
    lines = split_lines(text)
    at = lines.index(b"    return x + 1;\n")
    c_file = CFile(lines)
    definitions = _definitions_of(lines, at, lines[at], "c", c_file)
    assert [lines[k] for k in definitions] == [b"  int run(int x) const\n"]
    assert _functions_of(lines, definitions, "c", c_file) == [b"A::run"]


# Branches of a conditional inside one function (per-GPU tuning): upstream adds a branch copied
# from the fix's and changes the fix's own; git's base -> target diff pairs the fix's old
# branch with the new, unchanged copy, so its merge carries the fix there, cleanly.

def tuning(arch: str, tile_n: int, warps: int, waves: int, first: bool = False) -> bytes:
    return (b"#if" if first else b"#elif") + (
        b" defined(__%s__)\n    constexpr int kTileM = 256;\n    constexpr int kTileN = %d;\n"
        b"    constexpr int kWarps = %d;\n    constexpr int kWavesPerEU = %d;\n"
        b"    constexpr bool kUseLds = true;\n    constexpr int kLdsPad = 8;\n"
        b"    constexpr int kPrefetch = 2;\n") % (arch.encode(), tile_n, warps, waves)


def kernel(*branches: bytes) -> bytes:
    helpers = b"".join(b"int helper%d(int x) {\n    return x + %d;\n}\n\n" % (i, i)
                       for i in range(6))
    return (b"#include <cstdint>\n\n" + helpers + b"template <typename T>\n"
            b"__global__ void gemm_kernel(const T* a, const T* b, T* c, int m, int n) {\n"
            + b"".join(branches) + b"#endif\n    run_tiles<T, kTileM, kTileN, kWarps>(a, b, c, m, n);\n}\n"
            + b"".join(b"\nint tail%d(int x) {\n    return x * %d;\n}\n" % (i, i) for i in range(6)))


GFX942 = tuning("gfx942", 128, 4, 2, first=True)


def test_a_fix_of_one_gpu_branch_is_not_carried_into_upstreams_copy_of_it(tmp_path):
    """The fix sets kWarps 8 -> 4 in gemm_kernel's `#elif defined(__gfx950__)` branch.
    Upstream adds a `__gfx1250__` branch made from the old gfx950 one and retunes gfx950.
    Before: status `fuzz`, the rebase "merged: 3-way merged cleanly", exit 0, the deployed
    gfx950 branch with kWarps 8 and gfx1250 (a GPU the fix was never made for) with 4."""
    v1 = kernel(GFX942, tuning("gfx950", 256, 8, 1))
    stack = OneUpstreamStack(tmp_path, {"csrc/gemm.cu": v1})
    stack.add_fix("fix", "csrc/gemm.cu", v1, kernel(GFX942, tuning("gfx950", 256, 4, 1)))
    stack.commit({"csrc/gemm.cu": kernel(GFX942, tuning("gfx950", 128, 8, 2),
                                         tuning("gfx1250", 256, 8, 1))},
                 "gemm: gfx1250 tuning (from gfx950's); retune gfx950", tag="v2")
    stops_naming(stack, "up=v2", "gemm_kernel (in its branch defined(__gfx950__))",
                 "gemm_kernel (in its branch defined(__gfx1250__))")


def test_a_python_fix_of_one_elif_branch_is_not_carried_into_upstreams_copy_of_it(tmp_path):
    """The same in Python: `elif arch == "gfx950":` copied into a new `elif arch ==
    "gfx1250":`, gfx950's own retuned. Before: "merged cleanly", exit 0, the fix in gfx1250's."""
    def branch(word: str, arch: str, tile_n: int, warps: int, waves: int) -> bytes:
        return (b'    %s arch == "%s":\n        tile_m = 256\n        tile_n = %d\n'
                b"        warps = %d\n        waves = %d\n        use_lds = True\n"
                b"        lds_pad = 8\n        prefetch = 2\n") % (
                    word.encode(), arch.encode(), tile_n, warps, waves)

    def config(*branches: bytes) -> bytes:
        return (HEAD + b"\n\ndef gemm_config(arch):\n" + b"".join(branches)
                + b"    else:\n        raise ValueError(arch)\n    return tile_n, warps\n" + TAIL)

    first = branch("if", "gfx942", 128, 4, 2)
    v1 = config(first, branch("elif", "gfx950", 256, 8, 1))
    stack = OneUpstreamStack(tmp_path, {"k.py": v1})
    stack.add_fix("fix", "k.py", v1, config(first, branch("elif", "gfx950", 256, 4, 1)))
    stack.commit({"k.py": config(first, branch("elif", "gfx950", 128, 8, 2),
                                 branch("elif", "gfx1250", 256, 8, 1))},
                 "gfx1250 tuning (from gfx950's); retune gfx950", tag="v2")
    stops_naming(stack, "up=v2", 'gemm_config (in its branch arch == "gfx950")',
                 'gemm_config (in its branch arch == "gfx1250")')


def test_a_fix_follows_its_gpu_branch_through_upstreams_ordinary_changes():
    """The branch rule on the files alone: the fix carried into its own branch follows it
    where upstream inserted a branch before it, wrapped its lines in a new `#if`, retuned a
    context line of it, or renamed its condition (its branch gone: the change follows the
    code); carried into the copy upstream inserted before the retuned branch, it stops."""
    fix_line = (b"    constexpr int kWarps = 8;\n", b"    constexpr int kWarps = 4;\n")
    v1 = kernel(GFX942, tuning("gfx950", 256, 8, 1))
    fixed = kernel(GFX942, tuning("gfx950", 256, 4, 1))

    def in_gfx950(current: bytes) -> bytes:
        at = current.index(b"defined(__gfx950__)")
        return current[:at] + current[at:].replace(*fix_line, 1)

    inserted = kernel(GFX942, tuning("gfx1250", 128, 8, 2), tuning("gfx950", 256, 8, 1))
    wrapped = v1.replace(b"    constexpr bool kUseLds = true;\n",
                         b"#if KERNEL_LDS\n    constexpr bool kUseLds = true;\n#endif\n")
    retuned = kernel(GFX942, tuning("gfx950", 256, 8, 2))
    renamed = v1.replace(b"defined(__gfx950__)", b"defined(__gfx950__) || defined(__gfx955__)")
    for current in (inserted, wrapped, retuned, renamed):
        assert carried(v1, fixed, current, in_gfx950(current), "gemm.cu") is None
    copied_first = kernel(GFX942, tuning("gfx1250", 256, 8, 1), tuning("gfx950", 128, 8, 2))
    wrong = copied_first.replace(*fix_line, 1)
    assert carried(v1, fixed, copied_first, wrong, "gemm.cu") == (
        b"gemm_kernel (in its branch defined(__gfx950__))",
        b"gemm_kernel (in its branch defined(__gfx1250__))", 40)


def test_the_branches_of_a_functions_places_are_read_off_one_walk_down_it():
    """_place_branch given the walks made for earlier places (`walked`, as _another_branch
    keeps them per file, each read as far down as the furthest place asks, `reach`) says the
    branch a place would have had from a walk of its own: random Python and C-family
    functions of nested `if`/`elif`/`else`/`try`/`except`, `#if`/`#elif`/`#else`/`#endif`
    (continued lines too), places asked in any order, insertions and replacements, up to the
    file's end. Fails on main: each place walked down its function again (no `walked`)."""
    import random

    from patchforge.apply.hunks import _place_branch

    rng = random.Random(1933)
    python = [b"    if a:\n", b"        if b == 1:\n", b"    elif c:\n", b"        elif d:\n",
              b"    else:\n", b"        else:\n", b"    try:\n", b"    except ImportError:\n",
              b"    x = 1\n", b"        y = 2\n", b"\n", b"    # note\n", b"    match k:\n",
              b"        case 1:\n"]
    c_family = [b"#if defined(__gfx950__)\n", b"#elif defined(__gfx1250__)\n", b"#else\n",
                b"#endif\n", b"#ifdef X \\\n", b"  && Y\n", b"  int k = 4;\n",
                b"  if (a) {\n", b"  }\n", b"#ifndef Z\n", b""]
    said = 0
    for _ in range(600):
        language, kinds, head = rng.choice([("python", python, b"def f():\n"),
                                            ("c", c_family, b"void f() {\n")])
        lines = [b"x = 0\n"] * rng.randrange(0, 3)
        definition = len(lines)
        lines += [head] + [rng.choice(kinds) for _ in range(rng.randrange(0, 40))]
        walked: dict = {}
        for _ in range(8):
            start = rng.randrange(definition + 1, len(lines) + 2)
            end = min(start + rng.randrange(0, 4), len(lines) + 1)
            alone = _place_branch(lines, definition, start, end, language)
            reach = rng.randrange(0, len(lines) + 2)  # (read further down when first asked)
            assert _place_branch(lines, definition, start, end, language, walked,
                                 reach) == alone, (lines, start, end, reach)
            said += bool(alone)
    assert said > 500


# The walk up from a change to the definitions it is in (Python): each line of the function's
# or class's body it passes is told below the walk's indentation by one C call, not made
# into its text without indentation first. The old loop, kept here as the rule's statement.

def _definitions_as_the_rule_says(lines, at, changed):
    found = []
    limit = len(changed) - len(changed.lstrip(b" \t"))
    for k in range(min(at, len(lines)) - 1, -1, -1):
        if not limit:
            break
        line = lines[k]
        text = line.lstrip(b" \t")
        if not text.strip() or text[:1] in (b"#", b")", b"]", b"}"):
            continue
        indent = len(line) - len(text)
        if indent >= limit:
            continue
        if re.match(rb"([ \t]*)(?:async[ \t]+)?(?:def|class)[ \t]+([A-Za-z_]\w*)", line):
            found.append(k)
        elif not found and not indent:
            break
        limit = indent
    return found


def _branch_lines_as_the_rule_says(lines, k):
    """The lines the old `_python_branch` loop read clauses from (its `limit` steps)."""
    read = []
    limit = len(lines[k]) - len(lines[k].lstrip(b" \t"))
    j = k
    while limit and j > 0:
        j -= 1
        line = lines[j]
        text = line.lstrip(b" \t")
        if not text.strip() or text[:1] in (b"#", b")", b"]", b"}") or \
                len(line) - len(text) >= limit:
            continue
        if re.match(rb"([ \t]*)(?:async[ \t]+)?(?:def|class)[ \t]+([A-Za-z_]\w*)", line):
            break
        limit = len(line) - len(text)
        read.append(j)
    return read


def test_the_walk_up_to_a_python_definition_finds_what_the_rule_says_on_random_files():
    """Random Python-like files (spaces and tabs, blank lines with and without spaces, CRLF,
    form feeds, comments, closing brackets, `if`/`elif`/`else`/`try` clauses, nested
    definitions): every line's definitions and the branch conditions of every definition are
    those the line-by-line rule gives."""
    from patchforge.apply.diffparse import split_lines
    from patchforge.apply.hunks import _definitions_of, _python_branch, _python_clause

    rng = random.Random(1905)
    words = [b"def f(x):", b"class A:", b"async def g():", b"if a:", b"elif b:", b"else:",
             b"try:", b"except ImportError:", b"finally:", b"for x in y:", b"x = 1",
             b"return x", b"# note", b")", b"]", b"}", b"pass", b"if not (a and b):"]
    pads = [b"", b" ", b"  ", b"    ", b"        ", b"\t", b"    \t", b"\t    ", b" \x0c  ",
            b"            "]
    ends = [b"\n", b"\n", b"\n", b"\r\n"]
    for _ in range(400):
        lines = split_lines(b"".join(
            rng.choice([b"", b"   ", b"\t"] if rng.random() < 0.15 else pads)
            + (b"" if rng.random() < 0.1 else rng.choice(words)) + rng.choice(ends)
            for _ in range(rng.randrange(1, 60))))
        for at in range(len(lines) + 1):
            changed = lines[at] if at < len(lines) else rng.choice(pads) + b"x = 2\n"
            assert _definitions_of(lines, at, changed, "python") == \
                _definitions_as_the_rule_says(lines, at, changed), (lines, at)
        for k in range(len(lines)):
            expected = [condition for j in _branch_lines_as_the_rule_says(lines, k)
                        for condition in _python_clause(
                            lines, j, len(lines[j]) - len(lines[j].lstrip(b" \t")))]
            assert _python_branch(lines, k) == expected, (lines, k)


def test_the_walk_up_a_long_class_strips_no_line_of_its_body():
    """A change in the last method of a class of 3,000 lines: the walk up to the class passes
    every line of the methods above without taking its indentation off (`lstrip`), a C call
    each instead: the function check walked such classes a Python step and two copies a line
    (vllm's model files: 1.3 ms of a 30-patch rebase)."""
    from patchforge.apply.hunks import _definitions_of, _python_branch

    stripped = []

    class Line(bytes):
        def lstrip(self, *chars):
            stripped.append(self)
            return bytes(self).lstrip(*chars)

    body = [b"class Model:\n"]
    for i in range(300):
        body += [b"    def step%d(self, x):\n" % i, b"        y = x + %d\n" % i,
                 b"        if y:\n", b"            y = y * 2\n", b"\n",
                 b"        # keep going\n", b"        z = (y,\n", b"             y)\n",
                 b"        return z\n", b"\n"]
    body += [b"    def last(self, x):\n", b"        return x\n"]
    lines = [Line(line) for line in body]
    at = len(lines) - 1
    assert [lines[k] for k in _definitions_of(lines, at, lines[at], "python")] == \
        [b"    def last(self, x):\n", b"class Model:\n"]
    assert len(stripped) < 10, len(stripped)
    stripped.clear()
    assert _python_branch(lines, at - 1) == []
    assert len(stripped) < 10, len(stripped)


# The branches of the conditionals inside a function, line by line (`_inner_branches`): a line's
# clause pattern is tried only where the line begins with a clause's word, and the lines under
# the same branches share one tuple. The old loop, kept here as the rule's statement.

def _inner_branches_as_the_rule_says(lines, definition, stop, language):
    """The old loop: every line matched, a tuple made per line."""
    # Per open conditional: (its indentation (Python), the branch being read, its first one).
    open_: list[tuple[int, bytes, bytes]] = []
    found: list[tuple[bytes, ...]] = []
    continued = False
    for line in itertools.islice(lines, definition + 1, stop):
        if language == "python":
            text = line.lstrip(b" \t")
            if text.strip() and text[:1] not in (b"#", b")", b"]", b"}"):
                indent = len(line) - len(text)
                clause = hunks._PYTHON_BRANCH.match(line)
                word, rest = (clause.group(1), clause.group(2)) if clause is not None \
                    else (b"", b"")
                while open_ and (open_[-1][0] > indent or open_[-1][0] == indent and word
                                 not in (b"elif", b"else", b"except", b"finally")):
                    open_.pop()
                if word in (b"if", b"elif", b"case"):
                    said = hunks._said(hunks._condition(rest, b"not "), b"not ")
                    said = b"case " + said if word == b"case" else said
                elif word in (b"try", b"finally"):
                    said = word
                elif word == b"except":
                    said = b" ".join([word, *rest.split()])
                if word == b"else":
                    first = open_.pop()[2] if open_ and open_[-1][0] == indent else b""
                    open_.append((indent, b"else of " + first, first))
                elif word in (b"elif", b"except", b"finally"):
                    first = open_.pop()[2] if open_ and open_[-1][0] == indent else said
                    open_.append((indent, said, first))
                elif word:
                    open_.append((indent, said, said))
        elif continued or line.lstrip()[:1] == b"#":
            directive = None if continued else hunks._C_DIRECTIVE.match(line)
            continued = line.rstrip().endswith(b"\\")
            word = directive.group(1) if directive is not None else b""
            rest = hunks._C_COMMENT.sub(b"", directive.group(2)).rstrip(b" \t\r\n\\") \
                if directive is not None else b""
            if word in (b"if", b"ifdef", b"ifndef"):
                said = hunks._said(hunks._directive_condition(word, rest), b"!")
                open_.append((0, said, said))
            elif word in (b"elif", b"elifdef", b"elifndef") and open_:
                first = open_.pop()[2]
                open_.append((0, hunks._said(hunks._directive_condition(word, rest), b"!"), first))
            elif word == b"else" and open_:
                first = open_.pop()[2]
                open_.append((0, b"else of " + first, first))
            elif word == b"endif" and open_:
                open_.pop()
        found.append(tuple(said for _, said, _ in open_))
    return found


def test_the_branches_inside_a_function_are_what_the_rule_says_on_random_files():
    """Random Python-like and C-like function bodies (clauses with and without conditions,
    nested and closed ones, comments, blank lines, directives with continuations): every
    line's branches are those the line-by-line rule gives."""
    from patchforge.apply.diffparse import split_lines
    from patchforge.apply.hunks import _inner_branches

    rng = random.Random(1906)
    python = [b"if a:", b"elif b == 1:", b"else:", b"try:", b"except ImportError:",
              b"finally:", b"case 3:", b"for x in y:", b"x = 1", b"# if c:", b"iffy = 2",
              b"elsewhere()", b"if not (a and b):  # why", b"trying = 1", b"exceptional()",
              b")", b"return x"]
    c = [b"#if defined(X)", b"#ifdef Y", b"#ifndef Z", b"#elif W > 1", b"#else", b"#endif",
         b"#define V 1", b"#if A && \\", b"  B", b"x = 1;", b"  y();", b"/* #if */"]
    for _ in range(300):
        language = rng.choice(["python", "c"])
        words = python if language == "python" else c
        lines = split_lines(b"def f():\n" + b"".join(
            rng.choice([b"    ", b"        ", b"            ", b"  ", b""]) + rng.choice(words)
            + b"\n" if rng.random() > 0.1 else b"\n" for _ in range(rng.randrange(1, 50))))
        assert _inner_branches(lines, 0, len(lines), language) == \
            _inner_branches_as_the_rule_says(lines, 0, len(lines), language), lines


def test_the_branches_of_a_long_function_match_the_clause_pattern_on_clause_lines_only(
        monkeypatch):
    """A 2,000-line function with one `if`/`else`: the clause pattern is asked of the two
    clause lines only, and the lines under one branch share its tuple (the old loop matched
    every line and made a tuple a line: 1 us a line at 300 patches)."""
    asked = []

    class Counted:
        def __init__(self, pattern):
            self.pattern = pattern

        def match(self, line):
            asked.append(line)
            return self.pattern.match(line)

    monkeypatch.setattr(hunks, "_PYTHON_BRANCH", Counted(hunks._PYTHON_BRANCH))
    body = [b"def run(x):\n", b"    if x:\n"] + [b"        y = x + %d\n" % i
                                                for i in range(1000)]
    body += [b"    else:\n"] + [b"        y = x - %d\n" % i for i in range(1000)]
    found = hunks._inner_branches(body, 0, len(body), "python")
    assert found[1] == (b"x",) and found[-1] == (b"else of x",)
    assert len(asked) == 2, len(asked)
    assert all(each is found[1] for each in found[1:1001])
