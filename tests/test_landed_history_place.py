"""The history's "commit X makes this change" is asked where X made it.

The history matches a commit's change blocks to the fix's without their places: a commit that
writes the fix's line in another function of the file (or another YAML section, or on the
other side of the `else:` / `}` next to the fix's line) while it rewrites the fix's own lines
its own way "makes the change" (the same change, or within a larger one). Status said
"upstreamed (high)", the rebase dropped the fix (exit 0), and the overlays deployed the file
without it. The commit's own diff of the file says where it made each block: unless that is
the hunk's own place in the commit's parent (history_place.made_at), the history does not land
the fix. Landings the commit made at the own place still count, also when later commits
rewrote those lines again (superseded) or moved them before the commit. And upstream taking
the fix's line out from between its neighbours (left in place) while it writes the fix's line
in the twin is its own change of that line, no move (detect.OwnPlaces.contained_away): a
conflict. Real git upstreams, real commands: `status --against`, `rebase --to`, `overlays`."""
from __future__ import annotations

import pytest

from helpers.project import OneUpstreamStack
from test_landed_twins import SCALE_ROW

CLAMP = b"    factor = clamp_to_finite_range(factor, limit)\n"
SCALE = (b"def scale_fp8(tensor, amax):\n"
         b"    limit = compute_limit(tensor.dtype)\n"
         b"    factor = amax / limit\n"
         b"    result = tensor * factor\n"
         b"    return result\n"
         b"\n\n"
         b"def scale_bf16(tensor, amax, limit):\n"
         b"    factor = amax / limit\n"
         b"    return tensor.to(torch.bfloat16) * factor\n")


def not_upstreamed(stack: OneUpstreamStack, path: str) -> bytes:
    """status: not upstreamed, no landing commit, the history's commit said and refused; the
    rebase drops nothing (a stop, aborted, or a move): the overlay of `path` after it."""
    status = stack.json("status", "--against", "up=v2", expect=1)
    ((patch,),) = [status["patches"]]
    assert patch["state"] != "upstreamed" and patch["rebase"] != "drop", patch
    assert not patch.get("landed_in"), patch
    assert any(line.startswith("history: landed by ") and line.endswith(": kept")
               for line in patch["evidence"]), patch["evidence"]
    return stack.kept_by_rebase("up=v2", path)


def test_an_addition_whose_neighbour_upstream_rewrote_made_in_another_function_is_kept(
        tmp_path):
    """The fix clamps scale_fp8's factor after `factor = amax / limit`; upstream's commit
    writes that division otherwise (no clamp) and adds the fix's line to scale_bf16."""
    stack = OneUpstreamStack(tmp_path, {"k.py": SCALE})
    fixed = SCALE.replace(b"    factor = amax / limit\n", b"    factor = amax / limit\n" + CLAMP,
                          1)
    stack.add_fix("fix", "k.py", SCALE, fixed)
    fp8, bf16 = SCALE.split(b"def scale_bf16")
    stack.commit({"k.py": fp8.replace(b"amax / limit", b"amax / float(limit)") + b"def scale_bf16"
                  + bf16.replace(b"    factor = amax / limit\n",
                                 b"    factor = amax / limit\n" + CLAMP)}, "clamp bf16", tag="v2")
    overlay = not_upstreamed(stack, "k.py")
    fp8_there = overlay[:overlay.index(b"def scale_bf16")]
    assert CLAMP in fp8_there


def test_an_addition_made_in_another_function_after_its_neighbours_were_rewritten_is_kept(
        tmp_path):
    """As above, but an earlier commit rewrote both lines next to the fix's (the division and
    the multiplication), and the commit adding the fix's line to scale_bf16 changes nothing
    else ("the same change"): the hunk's place in that commit's parent is between the lines
    kept above and below it, and the commit's line is not there."""
    stack = OneUpstreamStack(tmp_path, {"k.py": SCALE})
    fixed = SCALE.replace(b"    factor = amax / limit\n", b"    factor = amax / limit\n" + CLAMP,
                          1)
    stack.add_fix("fix", "k.py", SCALE, fixed)
    fp8, bf16 = SCALE.split(b"def scale_bf16")
    fp8 = fp8.replace(b"amax / limit", b"amax / float(limit)").replace(
        b"tensor * factor", b"tensor * factor.to(tensor.dtype)")
    stack.commit({"k.py": fp8 + b"def scale_bf16" + bf16}, "dtypes")
    stack.commit({"k.py": fp8 + b"def scale_bf16" + bf16.replace(
        b"    factor = amax / limit\n", b"    factor = amax / limit\n" + CLAMP)}, "clamp bf16",
        tag="v2")
    overlay = not_upstreamed(stack, "k.py")
    assert CLAMP in overlay[:overlay.index(b"def scale_bf16")]


def test_a_yaml_key_upstream_added_under_another_section_is_kept(tmp_path):
    """YAML: the fix adds `disable_custom_all_reduce: true` under `engine:`; upstream's commit
    adds it under `scheduler:` (where it means nothing) and edits the line above the fix's."""
    v1 = (b"model: deepseek-v4\n"
          b"engine:\n"
          b"  tensor_parallel_size: 8\n"
          b"  gpu_memory_utilization: 0.92\n"
          b"  enable_prefix_caching: true\n"
          b"scheduler:\n"
          b"  max_num_batched_tokens: 8192\n"
          b"  policy: fcfs\n")
    key = b"  disable_custom_all_reduce: true\n"
    stack = OneUpstreamStack(tmp_path, {"serve.yaml": v1})
    stack.add_fix("fix", "serve.yaml", v1, v1.replace(b"0.92\n", b"0.92\n" + key))
    stack.commit({"serve.yaml": v1.replace(b"0.92", b"0.90").replace(b"fcfs\n", b"fcfs\n" + key)},
                 "scheduler knob", tag="v2")
    overlay = not_upstreamed(stack, "serve.yaml")
    assert key in overlay[:overlay.index(b"scheduler:")]


BODY = (b"    a = load_input(x, layout)\n"
        b"    b = a * scale_for(dtype)\n"
        b"    c = b + bias_for(dtype)\n"
        b"    d = c.clamp(lower_bound, upper_bound)\n"
        b"    e = d.to(out_dtype)\n"
        b"    return e\n")
OTHER = b"    q = fetch_rows(x, layout)\n    r = q.sum(dim=-1)\n    return r\n"
CLAMPED = b"    d = c.clamp(lower_bound, upper_bound)\n"


def quants(a: bytes, d: bytes, tail: bool) -> bytes:
    return (b"import torch\n\n\ndef quant_a(x, dtype):\n" + a +
            b"\n\ndef reduce_c(x, dtype):\n" + OTHER +
            b"\n\ndef quant_d(x, dtype):\n" + d +
            (b"\n\ndef tail(x):\n    return x + 1\n" if tail else b""))


@pytest.mark.parametrize("tail", [False, True])
def test_a_removal_upstream_made_in_the_twin_while_rewriting_the_own_line_is_kept(tmp_path,
                                                                                  tail):
    """The fix removes quant_d's clamp; upstream's commit removes quant_a's and rewrites
    quant_d's its own way (`upper_bound * 2`). quant_d the file's last function (the history
    decided: the reverse-apply, anchored at the file's end, finds nothing), or with a function
    after it (tail: the reverse-apply finds quant_a's place, upstream's own change at quant_d
    says conflict; a guard that holds on main too)."""
    v1 = quants(BODY, BODY, tail)
    stack = OneUpstreamStack(tmp_path, {"k.py": v1})
    stack.add_fix("fix", "k.py", v1, quants(BODY, BODY.replace(CLAMPED, b""), tail))
    stack.commit({"k.py": quants(BODY.replace(CLAMPED, b""), BODY.replace(
        CLAMPED, CLAMPED.replace(b"upper_bound)", b"upper_bound * 2)")), tail)},
        "clamp once", tag="v2")
    status = stack.json("status", "--against", "up=v2", expect=1)
    ((patch,),) = [status["patches"]]
    assert (patch["state"], patch["rebase"]) == ("conflict", "stop"), patch
    overlay = stack.kept_by_rebase("up=v2", "k.py")
    assert b"c.clamp" not in overlay[overlay.index(b"def quant_d"):]


SCALE_ROWS = (b"import torch\n"
              b"\n"
              b"\n"
              b"def scale_rows(x, limit, stats):\n"
              b"    amax = x.abs().amax(dim=-1, keepdim=True)\n"
              b"    if amax.max() > limit:\n"
              b"        amax = amax.clamp(max=limit)\n"
              b"    else:\n"
              b"        amax = amax.clamp(min=1e-12)\n"
              b"    factor = amax / limit\n"
              b"    return x / factor\n")


@pytest.mark.parametrize("path", ["k.cu", "k.py"])
def test_a_line_upstream_added_across_the_closing_brace_or_else_is_no_landing(tmp_path, path):
    """The fix records a saturation at the end of the `if` branch; upstream's commit adds the
    same call after the `}` (C: every row recorded) or as the first statement of the `else:`
    branch (Python: the other rows). Its blocks are the fix's ("the same change"); the place
    is across the short context line next to the fix's, which the content's other-side rule
    sees, and the history now too."""
    if path == "k.cu":
        v1, at, call = SCALE_ROW, b"        amax = limit;\n", \
            b"        record_saturation_event(row, n);\n"
        v2 = v1.replace(b"    }\n", b"    }\n" + call[4:])
    else:
        v1, at, call = SCALE_ROWS, b"        amax = amax.clamp(max=limit)\n", \
            b"        stats.record_saturated_rows(x, limit)\n"
        v2 = v1.replace(b"    else:\n", b"    else:\n" + call)
    stack = OneUpstreamStack(tmp_path, {path: v1})
    stack.add_fix("fix", path, v1, v1.replace(at, at + call))
    stack.commit({path: v2}, "record", tag="v2")
    overlay = not_upstreamed(stack, path)
    assert at + call in overlay


QUANT = (b"def quant_fp8_{x}(x):\n"
         b"    amax = x.abs().max()\n"
         b"    scale = amax / 448.0\n"
         b"    q = (x / scale).clamp(-448.0, 448.0)\n"
         b"    out = q.to(torch.float8_e4m3fn)\n"
         b"    return out, scale\n")
GUARDED = b"    scale = amax.clamp(min=1e-12) / 448.0\n"


def twins(a: bytes, b: bytes) -> bytes:
    return b"import torch\n\n\n" + a + b"\n\n" + b + b"\n\ndef helper():\n    return None\n"


def quant(x: bytes, line: bytes | None = b"    scale = amax / 448.0\n") -> bytes:
    body = QUANT.replace(b"{x}", x)
    return body if line == b"    scale = amax / 448.0\n" else \
        body.replace(b"    scale = amax / 448.0\n", line or b"")


def test_the_fix_s_line_taken_out_at_its_place_and_made_in_the_twin_is_a_conflict(tmp_path):
    """The fix guards quant_fp8_a's scale; upstream's commit deletes that line from
    quant_fp8_a (the lines above and below it stay, next to each other) and writes the fix's
    line in quant_fp8_b. Taken out between neighbours that stay is upstream's change of the
    fix's line, not a function moved away: a conflict, never "upstreamed (medium)"."""
    v1 = twins(quant(b"a"), quant(b"b"))
    stack = OneUpstreamStack(tmp_path, {"k.py": v1})
    stack.add_fix("fix", "k.py", v1, twins(quant(b"a", GUARDED), quant(b"b")))
    stack.commit({"k.py": twins(quant(b"a", None), quant(b"b", GUARDED))}, "guard b",
                 tag="v2")
    status = stack.json("status", "--against", "up=v2", expect=1)
    ((patch,),) = [status["patches"]]
    assert (patch["state"], patch["rebase"]) == ("conflict", "stop"), patch
    overlay = stack.kept_by_rebase("up=v2", "k.py")
    assert GUARDED in overlay[:overlay.index(b"def quant_fp8_b")]


def test_a_landing_at_the_own_place_rewritten_later_and_moved_before_is_still_dropped(
        tmp_path):
    """Guard (holds on main too): upstream first puts two functions above scale_fp8 (the
    commit's parent is not the fix's base), then lands the fix in scale_fp8 and the twin at
    once, then rewrites the clamp line in both (superseded: no file check proves the landing,
    the history does). The commit made it at the own place in its parent: dropped as landed
    (high), by history."""
    stack = OneUpstreamStack(tmp_path, {"k.py": SCALE})
    fixed = SCALE.replace(b"    factor = amax / limit\n", b"    factor = amax / limit\n" + CLAMP,
                          1)
    stack.add_fix("fix", "k.py", SCALE, fixed)
    top = b"def helper_one(x):\n    return x + 1\n\n\ndef helper_two(x):\n    return x * 2\n\n\n"
    stack.commit({"k.py": top + SCALE}, "helpers")
    both = top + SCALE.replace(b"    factor = amax / limit\n",
                               b"    factor = amax / limit\n" + CLAMP)
    stack.commit({"k.py": both}, "clamp (#12)")
    stack.commit({"k.py": both.replace(CLAMP, b"    factor = factor.clamp(-limit, limit)\n")},
                 "clamp in torch", tag="v2")
    status = stack.json("status", "--against", "up=v2", expect=1)
    ((patch,),) = [status["patches"]]
    assert (patch["state"], patch["decided_by"], patch["rebase"]) == \
        ("upstreamed", "history", "drop"), patch
    summary = stack.rebase_json("--to", "up=v2")
    assert [p["action"] for p in summary["patches"]] == ["dropped"], summary["patches"]


STRICT = b"    factor = clamp_to_finite_range(factor, limit, strict=True)\n"


@pytest.mark.parametrize("where", ["twin", "own"])
def test_a_series_whose_cumulative_change_upstream_made_elsewhere_is_kept(tmp_path, where):
    """Two patches: the first adds the clamp to scale_fp8, the second makes it strict (so
    neither patch's own change is any commit's). Upstream's commit adds the strict clamp to
    scale_bf16 and writes scale_fp8's division otherwise (twin): the commit makes the
    series' cumulative change, elsewhere, and it kept neither patch before; made in scale_fp8
    itself (own, the limit's line rewritten there too, a guard that holds on main too) the
    squash check still drops the first (the second's line is there: the content drops it).
    """
    stack = OneUpstreamStack(tmp_path, {"k.py": SCALE})
    one = SCALE.replace(b"    factor = amax / limit\n", b"    factor = amax / limit\n" + CLAMP, 1)
    stack.add_fix("p1", "k.py", SCALE, one)
    stack.add_fix("p2", "k.py", one, one.replace(CLAMP, STRICT))
    fp8, bf16 = SCALE.split(b"def scale_bf16")
    if where == "twin":
        fp8 = fp8.replace(b"amax / limit", b"amax / float(limit)")
        bf16 = bf16.replace(b"    factor = amax / limit\n", b"    factor = amax / limit\n" + STRICT)
    else:
        fp8 = fp8.replace(b"    factor = amax / limit\n", b"    factor = amax / limit\n" + STRICT)
        fp8 = fp8.replace(b"    limit = compute_limit(", b"    limit = compute_fp8_limit(")
    stack.commit({"k.py": fp8 + b"def scale_bf16" + bf16}, "strict clamp (#9)", tag="v2")
    status = stack.json("status", "--against", "up=v2", expect=1)
    states = [(p["state"], p.get("decided_by")) for p in status["patches"]]
    if where == "own":
        assert [state for state, _ in states] == ["upstreamed"] * 2, status["patches"]
        assert states[0][1] == "series history", status["patches"]
        summary = stack.rebase_json("--to", "up=v2")
        assert [p["action"] for p in summary["patches"]] == ["dropped"] * 2
        return
    assert all(state != "upstreamed" for state, _ in states), status["patches"]
    rc, out, err = stack.cli("rebase", "--to", "up=v2", expect=None)
    assert rc in (0, 3) and "dropped" not in out, out + err
    if rc == 3:
        stack.cli("rebase", "--abort")
    assert stack.series("up") == ["p1.patch", "p2.patch"]
    stack.cli("overlays")
    overlay = (stack.root / "overlays" / "up" / "k.py").read_bytes()
    assert STRICT in overlay[:overlay.index(b"def scale_bf16")]


def test_a_landing_after_a_line_upstream_put_at_the_fix_s_place_first_is_still_dropped(
        tmp_path):
    """Guard (holds on main too): upstream first puts a logging call right where the fix adds
    its clamp (after the division), then lands the clamp after that call, then rewrites the
    clamp line (superseded: the history decides). The lines upstream put in at the fix's place
    before the commit are the own place too: dropped as landed, by history."""
    stack = OneUpstreamStack(tmp_path, {"k.py": SCALE})
    fixed = SCALE.replace(b"    factor = amax / limit\n", b"    factor = amax / limit\n" + CLAMP,
                          1)
    stack.add_fix("fix", "k.py", SCALE, fixed)
    log = b"    log_step(factor)\n"
    logged = SCALE.replace(b"    factor = amax / limit\n", b"    factor = amax / limit\n" + log,
                           1)
    stack.commit({"k.py": logged}, "log")
    landed = logged.replace(log, log + CLAMP, 1)
    stack.commit({"k.py": landed}, "clamp (#12)")
    stack.commit({"k.py": landed.replace(CLAMP, b"    factor = factor.clamp(-limit, limit)\n")},
                 "clamp in torch", tag="v2")
    status = stack.json("status", "--against", "up=v2", expect=1)
    ((patch,),) = [status["patches"]]
    assert (patch["state"], patch["decided_by"], patch["rebase"]) == \
        ("upstreamed", "history", "drop"), patch
