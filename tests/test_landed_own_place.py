"""A fix whose post-image the file already had at the fix's base, in another copy of the code
(fp8 and fp16 kernels with the same context lines; fp16 clamps at 240 and the fix makes fp8 do
the same): the hunk's reverse-apply finds that copy in any target, as it did at the base, and
says nothing of a landing. Before, upstream rewriting fp8's line its own way
(`clamp(b, fp8_max())`) made status say "upstreamed (high)" and the rebase drop the fix, no
overlay carrying it. The hunk is judged at its own place (where upstream's diff of the file
carries it): its context still there with the fix's line changed by upstream to a third
version is a conflict (the rebase stops); its code gone, with the only copy of the change one
the base had, is no landing either. A landing at the own place still counts. Real git
upstreams, real commands: `status --against`, `rebase --to`, `overlays`."""
from __future__ import annotations

import pytest

from helpers.project import OneUpstreamStack


def kernel(name: str, limit: bytes) -> bytes:
    return (f"def {name}(t):\n".encode() + b"    w = warmup(t)\n    a = load(t)\n"
            b"    b = scale(a)\n    x = clamp(b, " + limit + b")\n    c = store(x)\n"
            b"    d = flush(c)\n    return d\n\n\n")


def a_py(fp8: bytes | None, fp16: bytes, top: bytes = b"") -> bytes:
    return b"import os\n\n\n" + top + (kernel("fp8", fp8) if fp8 is not None else b"") + \
        kernel("fp16", fp16)


def assert_stops_and_keeps(stack: OneUpstreamStack) -> None:
    """status: a conflict, not upstreamed; the rebase stops on the fix and never drops it;
    after --abort the series still deploys fp8 clamped at 240."""
    status = stack.json("status", "--against", "up=v2", expect=1)
    ((patch,),) = [status["patches"]]
    assert patch["state"] == "conflict" and patch["rebase"] == "stop", patch
    assert not patch.get("landed_in"), patch
    rc, out, err = stack.cli("rebase", "--to", "up=v2", expect=3)
    assert "conflict in a.py" in err and "dropped" not in out, out + err
    assert not (stack.root / "series" / "up" / "upstreamed" / "fix.patch").exists()
    assert stack.series("up") == ["fix.patch"]
    stack.cli("rebase", "--abort")
    stack.cli("overlays")
    overlay = (stack.root / "overlays" / "up" / "a.py").read_bytes()
    assert b"x = clamp(b, 240)\n" in overlay.split(b"def fp16")[0], overlay


def stops_unsure_and_keeps(stack: OneUpstreamStack, said: str) -> bytes:
    """status at v2: `unsure` (evidence holding `said`), no landing named; the rebase stops on
    the fix and never drops it; after --abort, the overlay `overlays` writes for k.py."""
    status = stack.json("status", "--against", "up=v2", expect=1)
    ((patch,),) = [status["patches"]]
    assert patch["state"] == "unsure" and patch["rebase"] == "stop", patch
    assert not patch.get("landed_in"), patch
    assert any(said in line for line in patch["evidence"]), patch
    rc, out, err = stack.cli("rebase", "--to", "up=v2", expect=3)
    assert "dropped" not in out and stack.series("up") == ["fix.patch"], out + err
    assert not (stack.root / "series" / "up" / "upstreamed" / "fix.patch").exists()
    stack.cli("rebase", "--abort")
    stack.cli("overlays")
    return (stack.root / "overlays" / "up" / "k.py").read_bytes()


def test_a_post_image_copy_there_at_the_base_is_no_landing_of_a_rewritten_line(tmp_path):
    """fp16 clamps at 240 at the base; the fix makes fp8 do so; upstream writes fp8's line
    its own way and leaves fp16 alone: a conflict at the fix's own place."""
    v1 = a_py(b"448", b"240")
    stack = OneUpstreamStack(tmp_path, {"a.py": v1})
    stack.add_fix("fix", "a.py", v1, a_py(b"240", b"240"))
    stack.commit({"a.py": a_py(b"fp8_max()", b"240")}, "fp8: clamp at the dtype's max", tag="v2")
    status = stack.json("status", "--against", "up=v2", expect=1)
    evidence = " ".join(status["patches"][0]["evidence"])
    assert "upstream changed the lines the hunk removes" in evidence, evidence
    assert_stops_and_keeps(stack)


def test_the_fix_made_upstream_in_the_other_copy_only_with_its_line_rewritten_is_kept(tmp_path):
    """Both copies clamp at 448 at the base; upstream sets fp16 to 240 (the fix's change, in
    the other copy) and rewrites fp8's line, every context line of the fix's place kept:
    not landed (the history's commit that changed fp16 does not land it either)."""
    v1 = a_py(b"448", b"448")
    stack = OneUpstreamStack(tmp_path, {"a.py": v1})
    stack.add_fix("fix", "a.py", v1, a_py(b"240", b"448"))
    stack.commit({"a.py": a_py(b"fp8_max()", b"240")}, "fp8: clamp at the dtype's max", tag="v2")
    assert_stops_and_keeps(stack)


def test_the_fixs_code_gone_and_a_copy_the_base_had_is_no_landing(tmp_path):
    """Upstream deletes fp8 outright; fp16 had the fix's lines at the base: nothing landed (a
    conflict: the fix's code is gone, the user decides), never dropped as upstreamed."""
    v1 = a_py(b"448", b"240")
    stack = OneUpstreamStack(tmp_path, {"a.py": v1})
    stack.add_fix("fix", "a.py", v1, a_py(b"240", b"240"))
    stack.commit({"a.py": a_py(None, b"240")}, "fp8 kernel removed", tag="v2")
    status = stack.json("status", "--against", "up=v2", expect=1)
    ((patch,),) = [status["patches"]]
    assert patch["state"] != "upstreamed" and patch["rebase"] == "stop", patch
    rc, out, err = stack.cli("rebase", "--to", "up=v2", expect=3)
    assert "dropped" not in out and stack.series("up") == ["fix.patch"], out + err
    assert not (stack.root / "series" / "up" / "upstreamed" / "fix.patch").exists()


def test_a_landing_at_the_own_place_beside_a_copy_the_base_had_is_dropped(tmp_path):
    """The other side: upstream makes fp8 clamp at 240 (30 lines added above); the fp16 copy
    the base had does not hide it: upstreamed (high), dropped, nothing left to deploy."""
    v1 = a_py(b"448", b"240")
    stack = OneUpstreamStack(tmp_path, {"a.py": v1})
    stack.add_fix("fix", "a.py", v1, a_py(b"240", b"240"))
    stack.commit({"a.py": a_py(b"240", b"240", top=b"# generated\n" * 30)},
                 "fp8: clamp at 240", tag="v2")
    stack.landed_and_dropped("up=v2", "a.py")


SLIDE_HEAD = [b"import math\n", b"\n", b"\n", b"def config(m, k):\n", b"    buffers = 4\n"]
SLIDE_OLD = [b"    if m > 4:\n", b"        block = 128\n", b"        warps = 8\n", b"    else:\n",
             b"        block = 256\n", b"        warps = 4\n", b"\n"]
SLIDE_TAIL = [b"    ret = {\n", b'        "block": block,\n', b'        "warps": warps,\n',
              b'        "buffers": buffers,\n', b"    }\n", b"    return ret\n"]
SLIDE_ADDED = [b"    buffers = min(buffers, math.ceil(k / block))\n", b"\n"]
SLIDE_NEW = [b"    cfg = TUNED[m]\n", b"    block, warps = (\n", b'        cfg["block"],\n',
             b'        cfg["warps"],\n', b"    )\n", b"\n", SLIDE_ADDED[0], b"    block *= 2\n", b"\n"]


def test_an_added_run_slid_by_a_later_rewrite_still_lands(tmp_path):
    """Real history (AITER v0.1.18 -> v0.1.20, 73f1490828 and 5ce8f62187): a fix that only
    adds lines ending with a blank line after a blank context line, landed by the very commit
    (its patch-id), whose neighbourhood a later commit rewrote. git's diff of the base to the
    target slides the added lines above the kept blank line, into upstream's change block; the
    own-place check looked only at the hunk's own insertion point, said the place still had
    the old code, and the fix was a conflict (a loss of recall, found by benchmarks/landed.py).
    The added lines may as well sit anywhere they slide: the own place has the change."""
    v1 = b"".join(SLIDE_HEAD + SLIDE_OLD + SLIDE_TAIL)
    fixed = b"".join(SLIDE_HEAD + SLIDE_OLD + SLIDE_ADDED + SLIDE_TAIL)
    stack = OneUpstreamStack(tmp_path, {"k.py": v1})
    stack.add_fix("fix", "k.py", v1, fixed)
    stack.commit({"k.py": fixed}, "cap buffers (#7)", tag="v2")
    stack.commit({"k.py": b"".join(SLIDE_HEAD + SLIDE_NEW + SLIDE_TAIL)}, "tuned configs (#8)",
                 tag="v3")
    status = stack.json("status", "--against", "up=v3", expect=None)
    ((patch,),) = [status["patches"]]
    assert (patch["state"], patch["rebase"]) == ("upstreamed", "drop"), patch


def scale(name: str, clamp: bool) -> bytes:
    return (f"def scale_{name}(tensor, amax):\n".encode()
            + b"    limit = compute_limit(tensor.dtype)\n    factor = amax / limit\n"
            + (b"    factor = clamp_to_finite_range(factor, limit)\n" if clamp else b"")
            + b"    result = tensor * factor\n    return result\n")


CONSTANTS = b"".join(b"CONSTANT_%d = %d\n" % (i, i) for i in range(1, 16))


def test_a_fix_whose_function_moved_while_its_twin_took_its_place_with_the_change_is_kept(
        tmp_path):
    """The fix clamps scale_fp8; upstream clamps scale_fp16 and swaps the two: scale_fp16,
    clamped, comes first where scale_fp8 was, and scale_fp8, unchanged, is the file's end.
    git's diff maps the fix's place onto scale_fp16, which has the clamp, and git's merge
    changes nothing; status said "upstreamed (high)" and the rebase dropped the fix, while
    the fix's code without the clamp is whole in scale_fp8 (GNU patch places it there, fuzz 1:
    only its last context line, a blank line, is past the file's end). Now unsure: the rebase
    stops on it, and nothing is dropped."""
    v1 = scale("fp8", False) + b"\n" + CONSTANTS + b"\n\n" + scale("fp16", False)
    stack = OneUpstreamStack(tmp_path, {"k.py": v1})
    stack.add_fix("fix", "k.py", v1, scale("fp8", True) + b"\n" + CONSTANTS + b"\n\n"
                  + scale("fp16", False))
    stack.commit({"k.py": scale("fp16", True) + b"\n\n" + CONSTANTS + b"\n\n"
                  + scale("fp8", False)}, "scale_fp16 clamps; scale_fp8 last", tag="v2")
    overlay = stops_unsure_and_keeps(stack, "and the code without it too")
    assert overlay.split(b"def scale_fp16")[0].count(b"clamp_to_finite_range") == 1, overlay


FORWARD = (b"def forward(self, query, key_cache):\n"
           b"    workspace = self.allocate_workspace(query)\n"
           b"    indptr = self.build_indptr(query)\n%s"
           b"    logits = self.paged_mqa_logits(query, key_cache, indptr)\n"
           b"    weights = self.select_topk(logits)\n"
           b"    output = self.gather(weights, key_cache)\n"
           b"    output = self.project(output)\n%s"
           b"    return output\n")
BARRIER = b"    torch.cuda.synchronize()  # leftover debugging barrier\n"


@pytest.mark.parametrize("barrier", [BARRIER, b"    dist.barrier()\n",
                                     b"    __syncthreads();\n"],
                         ids=["synchronize", "dist.barrier", "__syncthreads"])
def test_a_line_the_fix_removes_that_upstream_moved_is_no_landing(tmp_path, barrier):
    """The fix removes a leftover barrier; upstream moved it five lines down. The hunk's
    reverse-apply succeeds (the line is gone from its place) and git's merge changes nothing
    (it takes the move for the removal and an addition): status said "upstreamed (high)" and
    the rebase dropped the fix, the deployed file still running the barrier. Now unsure: the
    rebase stops on it. A removal upstream made itself still lands. So for a short call alone
    (`dist.barrier()`, `__syncthreads();`: it runs wherever it is), which was not asked (a line
    shorter than 24 characters moved past the hunk's lines is too common to tell anything)."""
    v1 = FORWARD % (barrier, b"")
    stack = OneUpstreamStack(tmp_path, {"k.py": v1})
    stack.add_fix("fix", "k.py", v1, FORWARD % (b"", b""))
    stack.commit({"k.py": FORWARD % (b"", barrier)}, "the barrier after project", tag="v2")
    stack.commit({"k.py": FORWARD % (b"", b"")}, "no barrier", tag="v3")
    status = stack.json("status", "--against", "up=v2", expect=1)
    ((patch,),) = [status["patches"]]
    assert patch["state"] == "unsure" and patch["rebase"] == "stop", patch
    assert any("moved, not removed" in line for line in patch["evidence"]), patch
    rc, out, err = stack.cli("rebase", "--to", "up=v2", expect=3)
    assert "dropped" not in out and stack.series("up") == ["fix.patch"], out + err
    stack.cli("rebase", "--abort")
    status = stack.json("status", "--against", "up=v3", expect=1)
    ((patch,),) = [status["patches"]]
    assert patch["state"] == "upstreamed", patch


def test_a_short_call_the_fix_removes_lands_though_another_copy_is_near(tmp_path):
    """A guard: the fix and upstream remove the first of two `dist.barrier()` lines five
    lines apart. The one near the place was there at the base (the file has the line once
    less): a landing, as before short calls were asked."""
    barrier = b"    dist.barrier()\n"
    v1 = FORWARD % (barrier, barrier)
    stack = OneUpstreamStack(tmp_path, {"k.py": v1})
    stack.add_fix("fix", "k.py", v1, FORWARD % (b"", barrier))
    stack.commit({"k.py": FORWARD % (b"", barrier)}, "one barrier less", tag="v2")
    status = stack.json("status", "--against", "up=v2", expect=1)
    ((patch,),) = [status["patches"]]
    assert patch["state"] == "upstreamed", patch


def test_a_fix_that_moves_a_line_itself_lands_where_upstream_made_the_move(tmp_path):
    """The fix moves the barrier after `project` (one hunk removes it, another adds it):
    upstream making that move is the fix landed, the line being in the file as often as at
    the base notwithstanding (AITER's mla.py, #3699, moved `out_scale` lines so)."""
    v1 = FORWARD % (BARRIER, b"")
    stack = OneUpstreamStack(tmp_path, {"k.py": v1})
    stack.add_fix("fix", "k.py", v1, FORWARD % (b"", BARRIER))
    stack.commit({"k.py": (FORWARD % (b"", BARRIER)).replace(
        b"    workspace = self.allocate_workspace(query)\n",
        b"    workspace = self.allocate_workspace(query, 2)\n")}, "the move", tag="v2")
    status = stack.json("status", "--against", "up=v2", expect=1)
    ((patch,),) = [status["patches"]]
    assert patch["state"] == "upstreamed", patch


def test_a_moved_function_edited_once_more_while_its_twin_took_its_place_is_kept(tmp_path):
    """The case above with one more upstream edit in the moved scale_fp8 (`return result` ->
    `return result.contiguous()`): GNU patch then places the fix there with fuzz 2, on
    `factor = amax / limit` and `result = tensor * factor` alone, and the fuzz-1 rule did not
    look: status said "upstreamed (high)" (git's merge, its line map putting the fix's place
    on the clamped scale_fp16, changed nothing) and the rebase dropped the fix. The base had
    the two functions' code twice (twins), the change is found only in scale_fp16, and
    scale_fp8, the fix's function, has the code without it: unsure, the rebase stops."""
    v1 = scale("fp8", False) + b"\n" + CONSTANTS + b"\n\n" + scale("fp16", False)
    stack = OneUpstreamStack(tmp_path, {"k.py": v1})
    stack.add_fix("fix", "k.py", v1, scale("fp8", True) + b"\n" + CONSTANTS + b"\n\n"
                  + scale("fp16", False))
    moved = scale("fp8", False).replace(b"return result\n", b"return result.contiguous()\n")
    stack.commit({"k.py": scale("fp16", True) + b"\n\n" + CONSTANTS + b"\n\n" + moved},
                 "scale_fp16 clamps; scale_fp8 last, contiguous", tag="v2")
    overlay = stops_unsure_and_keeps(stack, "another function's copy of the code")
    assert overlay.split(b"def scale_fp16")[0].count(b"clamp_to_finite_range") == 1, overlay


SHORT_BARRIER = b"    dist.barrier()\n"


def moved_barrier_is_kept(tmp_path, barrier: bytes, after: bytes,
                          edit: tuple[bytes, bytes] = (b"", b""), put: bytes = b"") -> None:
    """The fix removes `barrier` from FORWARD; upstream v2 puts it (or its own version of it,
    `put`) back right after the line `after` (inside the hunk's context lines) and makes
    `edit` (old, new) too, v3 removes it: v2 is unsure, the rebase stops and the overlay still
    lacks the barrier; v3 is the landing."""
    v1 = FORWARD % (barrier, b"")
    fixed = FORWARD % (b"", b"")
    stack = OneUpstreamStack(tmp_path, {"k.py": v1})
    stack.add_fix("fix", "k.py", v1, fixed)
    assert fixed.count(after) == 1
    stack.commit({"k.py": fixed.replace(after, after + (put or barrier)).replace(*edit)},
                 "the barrier moved", tag="v2")
    stack.commit({"k.py": fixed.replace(*edit)}, "no barrier", tag="v3")
    assert barrier not in stops_unsure_and_keeps(stack, "not removed: unsure")
    status = stack.json("status", "--against", "up=v3", expect=1)
    ((patch,),) = [status["patches"]]
    assert patch["state"] == "upstreamed", patch


def test_a_barrier_the_fix_removes_moved_past_the_next_call_is_no_landing(tmp_path):
    """The fix removes the leftover barrier before paged_mqa_logits; upstream moved it one
    line down, after that call, inside the hunk's after-context: the reverse-apply fails on
    it, the moved-line rule (asked only where the reverse-apply succeeds) was not asked, and
    git's merge, taking the move for a removal and an addition, changed nothing: status said
    "upstreamed (high)" and the rebase dropped the fix, the deployed file still running the
    barrier. The hunk's post-image is in the file with the removed line put back among its
    lines: moved, not removed, unsure."""
    moved_barrier_is_kept(tmp_path, BARRIER,
                          b"    logits = self.paged_mqa_logits(query, key_cache, indptr)\n")


def test_a_short_barrier_the_fix_removes_moved_two_lines_is_no_landing(tmp_path):
    """The same with `dist.barrier()` (shorter than a moved line far from the place must be
    to count) moved two lines down, after select_topk: the whole post-image around it is the
    evidence."""
    moved_barrier_is_kept(tmp_path, SHORT_BARRIER,
                          b"    weights = self.select_topk(logits)\n")


def test_a_barrier_moved_while_an_outer_context_line_changed_is_no_landing(tmp_path):
    """The barrier moved past the next call while upstream also gave `forward` another
    parameter (the hunk's first context line): the post-image is in the file as GNU patch's
    fuzz 1 leaves it, with the barrier among its lines: unsure, not dropped."""
    moved_barrier_is_kept(tmp_path, BARRIER,
                          b"    logits = self.paged_mqa_logits(query, key_cache, indptr)\n",
                          (b"def forward(self, query, key_cache):",
                           b"def forward(self, query, key_cache, scale=None):"))


def test_a_barrier_moved_and_given_other_arguments_is_no_landing(tmp_path):
    """Upstream moved `dist.barrier()` past the next call and passed it the group: its own
    version of the line the fix removes (the same call), among the hunk's lines. git's merge
    changed nothing (a removal and another line added); the program still waits there."""
    moved_barrier_is_kept(tmp_path, SHORT_BARRIER,
                          b"    logits = self.paged_mqa_logits(query, key_cache, indptr)\n",
                          put=b"    dist.barrier(group=self.group)\n")


def step(name: bytes, barrier_at: int | None) -> bytes:
    lines = [b"    handle = dist.all_reduce(tensor, group=group, async_op=True)\n",
             b"    handle.wait()\n", b"    tensor = tensor.to(out_dtype)\n",
             b"    return tensor\n"]
    if barrier_at is not None:
        lines.insert(barrier_at, SHORT_BARRIER)
    return b"def all_reduce_" + name + b"(tensor, group):\n" + b"".join(lines)


def test_a_barrier_moved_in_the_fixs_function_while_a_twin_lost_it_is_no_landing(tmp_path):
    """Twin functions all_reduce_a / all_reduce_b; the fix removes all_reduce_b's barrier.
    Upstream removes all_reduce_a's barrier and moves all_reduce_b's past the wait: the file
    has the line once less than the base, but the fix's function still runs it. Found by a
    random scenario generator; before, "upstreamed (high)" by git's empty merge, dropped."""
    v1 = step(b"a", 0) + b"\n\n" + step(b"b", 0)
    stack = OneUpstreamStack(tmp_path, {"k.py": v1})
    stack.add_fix("fix", "k.py", v1, step(b"a", 0) + b"\n\n" + step(b"b", None))
    stack.commit({"k.py": step(b"a", None) + b"\n\n" + step(b"b", 2)}, "barriers", tag="v2")
    status = stack.json("status", "--against", "up=v2", expect=1)
    ((patch,),) = [status["patches"]]
    assert patch["state"] in ("unsure", "conflict") and patch["rebase"] == "stop", patch
    assert any("moved, not removed: unsure" in line for line in patch["evidence"]), patch
    rc, out, err = stack.cli("rebase", "--to", "up=v2", expect=3)
    assert "dropped" not in out and stack.series("up") == ["fix.patch"], out + err


def bindings(*ops: str) -> bytes:
    return (b"PYBIND11_MODULE(ops, module)\n{\n"
            + b"".join(f'    module.def("{op}", &{op}, "the {op} kernel");\n'.encode()
                       for op in ops)
            + b"}\n")


def test_a_removed_binding_landed_beside_a_binding_upstream_added_still_lands(tmp_path):
    """A guard, true on main too: the fix removes the binding of gemm_old from a table of
    `module.def(` lines; upstream removes it too, and adds another binding where it was. The
    added line makes the same call as the removed one, but so do the table's other lines:
    not upstream's version of the removed line; the fix landed."""
    ops = ["rms_norm", "layer_norm", "gemm_old", "gemm_a8w8", "moe_sorting", "topk_softmax"]
    v1 = bindings(*ops)
    stack = OneUpstreamStack(tmp_path, {"ops.cpp": v1})
    stack.add_fix("fix", "ops.cpp", v1, bindings(*[op for op in ops if op != "gemm_old"]))
    stack.commit({"ops.cpp": bindings("rms_norm", "layer_norm", "gemm_a8w8", "gemm_a4w4",
                                      "moe_sorting", "topk_softmax")}, "gemm_old out",
                 tag="v2")
    status = stack.json("status", "--against", "up=v2", expect=1)
    ((patch,),) = [status["patches"]]
    assert patch["state"] == "upstreamed", patch
