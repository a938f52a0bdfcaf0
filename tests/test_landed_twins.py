"""A fix's code found next to its context is a landing only where that context is the fix's
own and the code sits in it as the fix puts it.

Twins: k.py has two adjacent functions with the same body (scale_fp8, then scale_fp16). The fix
changes scale_fp8; upstream makes the same change in scale_fp16 only, and edits a line next
to the fix's place in scale_fp8. The copy in scale_fp16 is a few lines below the fix's own
place, within the drift post-image containment allows, and was taken for the fix made there:
status said "upstreamed (medium)" and the rebase dropped the fix, scale_fp8 left without it.
A copy belongs to the own place only when its anchoring context is the own place's lines
(detect._at_place), not the twin's copy of them.

Indentation: upstream adds the fix's statement right below the fix's place, but at the loop's
level instead of inside the `if` (in Python, another change: it runs for every row). Whitespace
within lines and line wrapping are ignored by containment; indentation relative to the
anchoring context is not (detect._indented_alike): unsure, and the rebase stops. The same for
a file the fix creates that upstream created with a statement at another depth
(detect._indented_otherwise).

Landings made at the own place (reformatted, re-indented with their context, or both twins
fixed) are still dropped. Real git upstreams, real commands: `status --against`,
`rebase --to`, `overlays`."""
from __future__ import annotations

import pytest

from helpers.project import OneUpstreamStack

BODY = (b"    limit = compute_limit(tensor.dtype)\n"
        b"    factor = amax / limit\n"
        b"    result = tensor * factor\n"
        b"    return result\n")
CLAMP = b"    factor = clamp_to_finite_range(factor, limit)\n"
EPS = b"    factor = amax / max(limit, 1e-12)\n"


def twins(fp8: bytes = BODY, fp16: bytes = BODY) -> bytes:
    return (b"def scale_fp8(tensor, amax):\n" + fp8 + b"\n\n"
            b"def scale_fp16(tensor, amax):\n" + fp16)


def clamped(body: bytes) -> bytes:
    return body.replace(b"    factor = amax / limit\n", b"    factor = amax / limit\n" + CLAMP)


def kept_at_conflict(stack: OneUpstreamStack, fixed: bytes) -> None:
    """status: not upstreamed, the rebase stops there; the rebase stops on the fix in k.py
    and drops nothing; after --abort the overlays (at the pin, where only the fixed function
    has the change) still deploy `fixed`."""
    status = stack.json("status", "--against", "up=v2", expect=1)
    ((patch,),) = [status["patches"]]
    assert patch["state"] != "upstreamed" and patch["rebase"] == "stop", patch
    assert not patch.get("landed_in"), patch
    rc, out, err = stack.cli("rebase", "--to", "up=v2", expect=3)
    assert "k.py" in err and "dropped" not in out, out + err
    assert not (stack.root / "series" / "up" / "upstreamed" / "fix.patch").exists()
    assert stack.series("up") == ["fix.patch"]
    stack.cli("rebase", "--abort")
    stack.cli("overlays")
    assert fixed in (stack.root / "overlays" / "up" / "k.py").read_bytes()


def test_a_fix_made_upstream_only_in_the_twin_right_below_is_kept(tmp_path):
    """The fix clamps scale_fp8's factor; upstream clamps scale_fp16's (7 lines below) and
    writes scale_fp8's division otherwise: a conflict at the fix's own place, as git's merge
    says, never a landing."""
    v1 = twins()
    stack = OneUpstreamStack(tmp_path, {"k.py": v1})
    stack.add_fix("fix", "k.py", v1, twins(fp8=clamped(BODY)))
    other = BODY.replace(b"amax / limit", b"amax / float(limit)")
    stack.commit({"k.py": twins(fp8=other, fp16=clamped(BODY))}, "clamp fp16", tag="v2")
    status = stack.json("status", "--against", "up=v2", expect=1)
    evidence = " ".join(status["patches"][0]["evidence"])
    assert "only away from the hunk's own place" in evidence, evidence
    kept_at_conflict(stack, b"    factor = amax / limit\n" + CLAMP)


def test_a_fix_made_upstream_only_in_the_twin_right_above_is_kept(tmp_path):
    """The same with the fix in the lower function: upstream clamps scale_fp8 (above) and
    writes scale_fp16's division otherwise."""
    v1 = twins()
    stack = OneUpstreamStack(tmp_path, {"k.py": v1})
    stack.add_fix("fix", "k.py", v1, twins(fp16=clamped(BODY)))
    other = BODY.replace(b"amax / limit", b"amax / float(limit)")
    stack.commit({"k.py": twins(fp8=clamped(BODY), fp16=other)}, "clamp fp8", tag="v2")
    kept_at_conflict(stack, b"    factor = amax / limit\n" + CLAMP + b"    result")


@pytest.mark.parametrize("edit", [
    (b"    limit = compute_limit(tensor.dtype)\n",
     b"    limit = compute_limit(tensor.dtype, fnuz=True)\n"),
    (b"    result = tensor * factor\n", b"    result = tensor.float() * factor\n"),
], ids=["line-above", "line-below"])
def test_a_changed_line_made_upstream_only_in_the_twin_is_kept(tmp_path, edit):
    """The fix changes a line (the division guards against a zero limit); upstream makes the
    same change in the twin below only, and edits the line above (or below) the fix's line in
    scale_fp8: the fix's old line is still there, not landed."""
    v1 = twins()
    stack = OneUpstreamStack(tmp_path, {"k.py": v1})
    fixed = BODY.replace(b"    factor = amax / limit\n", EPS)
    stack.add_fix("fix", "k.py", v1, twins(fp8=fixed))
    stack.commit({"k.py": twins(fp8=BODY.replace(*edit), fp16=fixed)}, "guard fp16",
                 tag="v2")
    kept_at_conflict(stack, b"def scale_fp8(tensor, amax):\n" + fixed.split(b"    result")[0])


def test_both_twins_fixed_with_the_line_above_edited_is_a_landing(tmp_path):
    """The other side: upstream clamps both functions and edits scale_fp8's division: the
    copy at the fix's own place is anchored by its own lines, a landing; dropped."""
    v1 = twins()
    stack = OneUpstreamStack(tmp_path, {"k.py": v1})
    stack.add_fix("fix", "k.py", v1, twins(fp8=clamped(BODY)))
    other = BODY.replace(b"amax / limit", b"amax / float(limit)")
    v2 = twins(fp8=other.replace(b"    result", CLAMP + b"    result"), fp16=clamped(BODY))
    stack.commit({"k.py": v2}, "clamp both", tag="v2")
    stack.dropped_as_landed()


ROWS = (b"def total_rows(batches):\n"
        b"    count = 0\n"
        b"    for batch in batches:\n"
        b"        if batch.is_padded:\n"
        b"            count += batch.real_rows\n"
        b"        count += batch.header_rows\n"
        b"    return count\n")
REAL = b"            count += batch.real_rows\n"


def test_a_fix_line_upstream_added_at_another_indentation_is_kept(tmp_path):
    """The fix subtracts the padding inside `if batch.is_padded:`; upstream subtracts it
    right below at the loop's level (every batch): unsure, the rebase stops (git's merge
    conflicts), the fix is kept."""
    stack = OneUpstreamStack(tmp_path, {"k.py": ROWS})
    fixed = REAL + b"            count -= batch.padding_rows_of_block\n"
    stack.add_fix("fix", "k.py", ROWS, ROWS.replace(REAL, fixed))
    stack.commit({"k.py": ROWS.replace(
        REAL, REAL + b"        count -= batch.padding_rows_of_block\n")}, "padding", tag="v2")
    status = stack.json("status", "--against", "up=v2", expect=1)
    evidence = " ".join(status["patches"][0]["evidence"])
    assert "indented otherwise" in evidence, evidence
    kept_at_conflict(stack, fixed)


def test_a_fix_line_upstream_wrapped_at_the_same_indentation_is_a_landing(tmp_path):
    """The other side: upstream adds the fix's statement inside the `if`, wrapped over three
    lines (black's way): a landing, dropped."""
    stack = OneUpstreamStack(tmp_path, {"k.py": ROWS})
    stack.add_fix("fix", "k.py", ROWS, ROWS.replace(
        REAL, REAL + b"            count -= batch.padding_rows_of_block(batch.rows, 4)\n"))
    stack.commit({"k.py": ROWS.replace(REAL, REAL + (
        b"            count -= batch.padding_rows_of_block(\n"
        b"                batch.rows, 4\n"
        b"            )\n"))}, "padding", tag="v2")
    stack.dropped_as_landed()


def test_a_fix_line_upstream_reindented_with_its_context_is_a_landing(tmp_path):
    """The other side: upstream puts the loop inside a `with` (every line 4 columns deeper)
    and the fix's statement inside the `if`: the same relative indentation, a landing."""
    stack = OneUpstreamStack(tmp_path, {"k.py": ROWS})
    line = b"            count -= batch.padding_rows_of_block\n"
    stack.add_fix("fix", "k.py", ROWS, ROWS.replace(REAL, REAL + line))
    lines = ROWS.replace(REAL, REAL + line).splitlines(keepends=True)
    v2 = lines[0] + b"    with timer():\n" + b"".join(b"    " + x for x in lines[1:])
    stack.commit({"k.py": v2}, "padding, timed", tag="v2")
    stack.dropped_as_landed()


def test_the_landing_lookups_probes_take_the_own_place_diffs_the_walk_made(tmp_path,
                                                                            monkeypatch):
    """A fix landed where an earlier patch of the series changed its file is looked up after
    the walk by a probe at the landing commit, which judges the fix alone on the target's
    file: the own place's diff of (base file, target's file) that the walk made for it, when
    an earlier fix first asked for one, is that probe's too, not asked of git again (a
    pair's change blocks depend on its two contents alone). Both fixes are dropped, the one
    in k.py naming its landing commit; no pair is diffed twice."""
    from patchforge import detect, judge

    made: list[tuple[bytes, bytes]] = []
    real = detect.changed_blocks

    def changed_blocks(pairs):
        made.extend(pairs)
        return real(pairs)

    # A pair the history's commit diffs already (HistoryIndex.made_blocks) is made there.
    real_history = judge.HistoryIndex.made_blocks

    def made_blocks(self, asked, *landing):
        found = real_history(self, asked, *landing)
        made.extend(found)
        return found

    monkeypatch.setattr(detect, "changed_blocks", changed_blocks)
    monkeypatch.setattr(judge.HistoryIndex, "made_blocks", made_blocks)
    v1 = twins()
    tail = b"\n\ndef unrelated():\n    return None\n"
    stack = OneUpstreamStack(tmp_path, {"j.py": v1, "k.py": v1})
    stack.add_fix("0jfix", "j.py", v1, twins(fp8=clamped(BODY)))
    stack.add_fix("1pre", "k.py", v1, v1 + tail)
    stack.add_fix("2kfix", "k.py", v1, twins(fp8=clamped(BODY)))
    (stack.root / "series" / "up" / "series").write_text("0jfix.patch\n1pre.patch\n2kfix.patch\n")
    both = twins(fp8=clamped(BODY), fp16=clamped(BODY))
    landing = stack.commit({"j.py": both, "k.py": both}, "clamp both", tag="v2")
    summary = stack.rebase_json("--to", "up=v2")
    assert [p["action"] == "dropped" for p in summary["patches"]] == [True, False, True], \
        summary["patches"]
    assert stack.series("up") == ["1pre.patch"]
    assert f"commit:{landing}" in stack.patch("up", "2kfix", "upstreamed").decode()
    assert (v1, both) in made  # the walk's pair, the probe's too
    assert len(made) == len(set(made)), made


WORKSPACE = (b"def check_workspace(buffer, needed_bytes):\n"
             b"    if buffer.numel() < needed_bytes:\n"
             b"        buffer = allocate_workspace(needed_bytes)\n"
             b"        zero_fill_workspace(buffer, needed_bytes)\n"
             b"    return buffer\n")


def test_a_created_file_upstream_made_with_a_statement_out_of_its_if_is_kept(tmp_path):
    """The fix creates ws.py, zero-filling a buffer only where it allocates one; upstream
    creates ws.py with the same lines but the zero-fill at the function's level (every buffer,
    also one in use). The same text but for whitespace, other statements: not upstreamed, the
    rebase stops on the creation and drops nothing."""
    stack = OneUpstreamStack(tmp_path, {"k.py": ROWS})
    stack.add_fix("fix", "ws.py", None, WORKSPACE)
    stack.commit({"ws.py": WORKSPACE.replace(b"        zero_fill", b"    zero_fill")},
                 "add ws.py", tag="v2")
    status = stack.json("status", "--against", "up=v2", expect=1)
    ((patch,),) = [status["patches"]]
    assert patch["state"] != "upstreamed" and patch["rebase"] == "stop", patch
    assert "indented otherwise" in " ".join(patch["evidence"]), patch
    rc, out, err = stack.cli("rebase", "--to", "up=v2", expect=3)
    assert "ws.py" in err and "dropped" not in out, out + err
    assert not (stack.root / "series" / "up" / "upstreamed" / "fix.patch").exists()
    assert stack.series("up") == ["fix.patch"]


def test_a_created_file_upstream_made_reindented_and_wrapped_is_a_landing(tmp_path):
    """The other side (holds on main too): upstream creates ws.py indented by two columns a
    level and with a call wrapped over three lines: every statement at the same depth, so
    the creation landed and is dropped."""
    stack = OneUpstreamStack(tmp_path, {"k.py": ROWS})
    stack.add_fix("fix", "ws.py", None, WORKSPACE)
    stack.commit({"ws.py": (b"def check_workspace(buffer, needed_bytes):\n"
                            b"  if buffer.numel() < needed_bytes:\n"
                            b"    buffer = allocate_workspace(needed_bytes)\n"
                            b"    zero_fill_workspace(\n"
                            b"      buffer, needed_bytes\n"
                            b"    )\n"
                            b"  return buffer\n")}, "add ws.py", tag="v2")
    stack.dropped_as_landed()


@pytest.mark.parametrize("after", [b"", b"\n\ndef unrelated():\n    return 1\n"],
                         ids=["at-the-file-end", "inside-the-file"])
def test_a_fix_line_upstream_added_after_the_statement_it_must_precede_is_kept(tmp_path, after):
    """The fix clamps `factor` before `result = tensor * factor` uses it; upstream adds the
    same clamp one statement lower, after the multiply (where it changes nothing), and edits
    the `limit` line above: the added code is next to the hunk's context, but on the other side
    of the context line that follows the change. Another order, another change: not
    upstreamed, the rebase keeps the fix (git's merge puts it before the multiply), once a
    person has seen upstream's copy (the rebase stops on lines upstream has nearby). The
    history's commit makes "the same change" too, which the own place, still with the old
    code, vetoes also where the hunk is anchored at the file's end (no reverse-apply asked)."""
    body = twins().split(b"\n\n\n")[0] + b"\n" + after
    stack = OneUpstreamStack(tmp_path, {"k.py": body})
    stack.add_fix("fix", "k.py", body, clamped(body))
    result = b"    result = tensor * factor\n"
    stack.commit({"k.py": body.replace(result, result + CLAMP).replace(
        b"compute_limit(tensor.dtype)", b"compute_limit(tensor.dtype, strict=True)")},
        "clamp after the multiply", tag="v2")
    status = stack.json("status", "--against", "up=v2", expect=1)
    ((patch,),) = [status["patches"]]
    assert patch["state"] != "upstreamed" and patch["rebase"] != "drop", patch
    # Upstream's clamp is the fix's lines a statement away: the rebase stops so that a person
    # sees both (docs/reference.md, "A fix whose lines upstream added too, its own way"), and
    # keeping the fix's as well (--continue with the worktree as it is) carries the fix on.
    _, out, err = stack.cli("rebase", "--to", "up=v2", expect=3)
    assert "upstream has these lines already, its own way" in out + err, out + err
    stack.cli("rebase", "--continue")
    assert stack.series("up") == ["fix.patch"]
    stack.cli("overlays")
    assert b"    factor = amax / limit\n" + CLAMP + result in \
        (stack.root / "overlays" / "up" / "k.py").read_bytes()


def test_a_fix_applying_at_its_pin_with_fuzz_made_upstream_only_in_the_twin_is_kept(tmp_path):
    """The fix's first context line reads otherwise than the pin's (a patch kept by hand, or
    made on an earlier fix's lines): it applies there with fuzz 1, in scale_fp8. The fix guards
    the division; upstream makes the change in scale_fp16 only: the history's commit makes "the same change", but the fix's
    own place (where the fuzz puts it, as the overlays do) still has the old code: not
    upstreamed, and the fix stays in the series and in the overlays."""
    base = twins()
    hand = base.replace(b"def scale_fp8(tensor, amax):", b"def scale_fp8(tensor, amax, /):")
    stack = OneUpstreamStack(tmp_path, {"k.py": base})
    fixed = BODY.replace(b"    factor = amax / limit\n", EPS)
    stack.add_fix("fix", "k.py", hand, twins(fp8=fixed).replace(
        b"def scale_fp8(tensor, amax):", b"def scale_fp8(tensor, amax, /):"))
    stack.commit({"k.py": twins(fp16=fixed)}, "guard fp16", tag="v2")
    status = stack.json("status", "--against", "up=v2", expect=1)
    ((patch,),) = [status["patches"]]
    assert patch["state"] != "upstreamed" and patch["rebase"] != "drop", patch
    rc, out, err = stack.cli("rebase", "--to", "up=v2", expect=None)
    assert "dropped" not in out, out + err
    if rc == 3:
        stack.cli("rebase", "--abort")
    assert stack.series("up") == ["fix.patch"]
    stack.cli("overlays")
    assert twins(fp8=fixed).split(b"\n\n\n")[0] in \
        (stack.root / "overlays" / "up" / "k.py").read_bytes()


def test_a_changed_line_upstream_rewrote_its_own_way_while_the_twin_got_the_fix_is_kept(
        tmp_path):
    """The fix guards scale_fp8's division; upstream, in one commit, rewrites that very line
    its own way (no guard) and writes the fix's exact line in scale_fp16, whose next line it
    rewords (so no reverse-apply finds the copy). The own place is there, context and all,
    with upstream's own version of the fix's line: a conflict, not a landing."""
    v1 = twins()
    stack = OneUpstreamStack(tmp_path, {"k.py": v1})
    fixed = BODY.replace(b"    factor = amax / limit\n", EPS)
    stack.add_fix("fix", "k.py", v1, twins(fp8=fixed))
    stack.commit({"k.py": twins(
        fp8=BODY.replace(b"amax / limit", b"amax / FP8_E4M3_MAX"),
        fp16=fixed.replace(b"tensor * factor", b"tensor.mul(factor)"))}, "constants",
        tag="v2")
    kept_at_conflict(stack, b"def scale_fp8(tensor, amax):\n" + fixed.split(b"    result")[0])


def test_the_fix_s_line_kept_while_upstream_rewrote_the_lines_after_it_is_kept(tmp_path):
    """The fix guards scale_fp8's division; upstream rewrites the lines after it (another
    call, another return) and makes the fix's change in scale_fp16 only. scale_fp8 still has
    the very line the fix changes, where it was: the code did not move (a function moved takes
    its lines along), the own place has the old code, and the twin's copy is no landing."""
    body = BODY.replace(b"    return result\n",
                        b"    result = result.contiguous()\n    return result\n")
    v1 = twins(body, body)
    stack = OneUpstreamStack(tmp_path, {"k.py": v1})
    fixed = body.replace(b"    factor = amax / limit\n", EPS)
    stack.add_fix("fix", "k.py", v1, twins(fixed, body))
    tail = body.split(b"    factor = amax / limit\n")[1]
    rewritten = body.replace(tail, b"    out = torch.ops.fp8.scale(tensor, factor, saturate=True)\n"
                                   b"    return out.view(tensor.dtype)\n")
    stack.commit({"k.py": twins(rewritten, fixed)}, "fp8 op; guard fp16", tag="v2")
    status = stack.json("status", "--against", "up=v2", expect=1)
    ((patch,),) = [status["patches"]]
    assert patch["state"] != "upstreamed" and patch["rebase"] == "stop", patch
    rc, out, err = stack.cli("rebase", "--to", "up=v2", expect=3)
    assert "dropped" not in out, out + err
    stack.cli("rebase", "--abort")
    assert stack.series("up") == ["fix.patch"]


def test_a_fix_s_second_line_upstream_added_at_another_indentation_is_kept(tmp_path):
    """The fix adds two statements inside `if batch.is_padded:`; upstream adds both, the first
    inside the `if`, the second at the loop's level (every batch): the copy's first line is
    where the fix has it, its second is another statement. Unsure, the rebase stops."""
    stack = OneUpstreamStack(tmp_path, {"k.py": ROWS})
    two = (b"            count -= batch.padding_rows_of_block\n"
           b"            count = clamp_to_capacity(count, batch)\n")
    stack.add_fix("fix", "k.py", ROWS, ROWS.replace(REAL, REAL + two))
    stack.commit({"k.py": ROWS.replace(REAL, REAL + two.replace(
        b"            count = clamp", b"        count = clamp"))}, "padding", tag="v2")
    status = stack.json("status", "--against", "up=v2", expect=1)
    evidence = " ".join(status["patches"][0]["evidence"])
    assert "indented otherwise" in evidence, evidence
    kept_at_conflict(stack, REAL + two)


SCALE_ROW = (b"#include <cuda_fp16.h>\n\n"
             b"__device__ float scale_row(const float* row, int n, float limit) {\n"
             b"    float amax = row_absmax(row, n);\n"
             b"    if (amax > limit) {\n"
             b"        amax = limit;\n"
             b"    }\n"
             b"    float factor = amax / 448.0f;\n"
             b"    return factor;\n"
             b"}\n")


def test_a_fix_line_upstream_added_after_the_closing_brace_of_its_block_is_no_containment(
        tmp_path):
    """C/CUDA: the fix records a saturation inside `if (amax > limit) { ... }`, before its
    `}`; upstream adds the same call after the `}` (every row is recorded). The copy sits
    across the hunk's nearest context line, the brace, from where the fix puts it: another
    block, so post-image containment does not call the hunk landed (what a wheel upstream,
    which has no history, is judged by). A git upstream's history finds a commit that makes
    "the same change" (its blocks ignore context), which made it across the brace: no landing
    either (test_landed_history_place.py)."""
    record = b"record_saturation_event(row, n);\n"
    stack = OneUpstreamStack(tmp_path, {"k.cu": SCALE_ROW})
    stack.add_fix("fix", "k.cu", SCALE_ROW, SCALE_ROW.replace(
        b"        amax = limit;\n", b"        amax = limit;\n        " + record))
    stack.commit({"k.cu": SCALE_ROW.replace(b"    }\n", b"    }\n    " + record)},
                 "record every row", tag="v2")
    status = stack.json("status", "--against", "up=v2", expect=1)
    ((patch,),) = [status["patches"]]
    ((hunk,),) = [patch["files"][0]["hunks"]]
    assert hunk["landed"] is None, patch
    assert not any("post-image containment" in line for line in patch["evidence"]), patch


def kernel(fp8_extra: bytes = b"", other_extra: bytes = b"",
           fp8_next: bytes = b"        float b = a * 2.0f;\n") -> bytes:
    """A HIP kernel whose `if (fp8)` and `else` branches begin alike, between two rows of small
    device functions."""
    helpers = b"".join(b"__device__ int g%d(int x) {\n    return x + %d;\n}\n\n" % (i, i)
                       for i in range(6))
    return (helpers + b"__global__ void run(const float* in, float* out, bool fp8) {\n"
            b"    int i = threadIdx.x;\n    if (fp8) {\n        float a = in[i];\n"
            + fp8_extra + fp8_next + b"        out[i] = b;\n    } else {\n"
            b"        float a = in[i];\n" + other_extra
            + b"        float b = a * 2.0f;\n        out[i] = b;\n    }\n}\n\n"
            + helpers.replace(b"g", b"h"))


def test_a_line_the_fix_adds_in_its_if_branch_upstream_added_in_the_else_below_is_kept(tmp_path):
    """The fix clamps `a` in the `if (fp8)` branch; upstream clamps it in the `else` branch
    right below (the line after the branch's alike first line, within the distance a copy's
    context anchors it) and edits the `if` branch's next line. The copy lies past the hunk's
    whole trailing context (`} else {`, kept), so it is not at the fix's place: a stop, never
    "upstreamed" and a drop."""
    clamp = b"        a = fminf(fmaxf(a, -448.0f), 448.0f);\n"
    stack = OneUpstreamStack(tmp_path, {"k.cu": kernel()})
    stack.add_fix("fix", "k.cu", kernel(), kernel(fp8_extra=clamp))
    stack.commit({"k.cu": kernel(other_extra=clamp,
                                 fp8_next=b"        float b = a * 4.0f;\n")},
                 "else: clamp; if: scale by 4", tag="v2")
    status = stack.json("status", "--against", "up=v2", expect=1)
    ((patch,),) = [status["patches"]]
    assert patch["state"] != "upstreamed" and patch["rebase"] == "stop", patch
    rc, out, err = stack.cli("rebase", "--to", "up=v2", expect=3)
    assert "k.cu" in err and "dropped" not in out, out + err
    assert stack.series("up") == ["fix.patch"]
    assert not (stack.root / "series" / "up" / "upstreamed" / "fix.patch").exists()
