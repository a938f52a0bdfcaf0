"""A hunk whose context is at more than one place of the file it meets: its place is carried over
by where it was (the line map a 3-way merge makes), never guessed by nearness to its header's
line. Real git upstreams, real commands: `rebase --to`, `status`, `refresh`, `lint`.

The file holds three identical blocks; the fix changes block 2. Lines inserted above by
upstream (or by an earlier patch) put block 1 where block 2 was: GNU patch and `git apply`
then change block 1, `git rebase` keeps block 2.
"""
from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from helpers.cli import run_cli
from helpers.git import git
from helpers.project import OneUpstreamStack

BLOCK = [b"    a = load()\n", b"    if a:\n", b"        use(a)\n", b"    b = a + 1\n",
         b"    CHECK = False\n", b"    c = b * 2\n", b"    log(c)\n", b"    return c\n",
         *[b"    pass\n"] * 11, b"\n"]
THREE = BLOCK * 3


def lines_of(data: bytes) -> list[bytes]:
    return data.splitlines(keepends=True)


def fixed(lines: list[bytes], block: int) -> list[bytes]:
    """`lines` with CHECK = True in the `block`-th (1-based) of its CHECK lines."""
    out = list(lines)
    at = [k for k, line in enumerate(out) if line == b"    CHECK = False\n"][block - 1]
    out[at] = b"    CHECK = True\n"
    return out


def header(count: int) -> list[bytes]:
    return [b"# header %d\n" % i for i in range(count)]


def checked_blocks(data: bytes) -> list[int]:
    """Which CHECK lines (1-based, in order) say True."""
    checks = [line for line in lines_of(data) if line.strip().startswith(b"CHECK")]
    return [k + 1 for k, line in enumerate(checks) if b"True" in line]


def stack_with_fix(tmp_path) -> OneUpstreamStack:
    stack = OneUpstreamStack(tmp_path, {"pkg/m.py": b"".join(THREE)})
    stack.add_fix("fix", "pkg/m.py", b"".join(THREE), b"".join(fixed(THREE, 2)))
    return stack


def applied_with_git(stack: OneUpstreamStack, rev: str, patch: bytes) -> bytes:
    """pkg/m.py at `rev` with the patch applied by `git apply` (which places by the header)."""
    git(stack.up, "checkout", "-q", rev)
    try:
        subprocess.run(["git", "apply", "-"], cwd=stack.up, input=patch, check=True,
                       capture_output=True)
        return (stack.up / "pkg" / "m.py").read_bytes()
    finally:
        git(stack.up, "checkout", "-q", "--", ".")
        git(stack.up, "checkout", "-q", "main")


def rebased_block(stack: OneUpstreamStack, target: str) -> tuple[dict, list[int]]:
    summary = stack.rebase_json("--to", f"up={target}")
    return summary, checked_blocks(applied_with_git(stack, target, stack.patch("up", "fix")))


def test_upstream_inserting_a_block_length_above_keeps_the_fix_in_its_block(tmp_path):
    stack = stack_with_fix(tmp_path)
    v2 = stack.commit({"pkg/m.py": b"".join(header(20) + THREE)}, "v2")
    status = stack.json("status", "--against", f"up={v2}", expect=1)
    summary, blocks = rebased_block(stack, v2)
    (patch,) = summary["patches"]
    # Before: "clean, applied exactly", the fix in block 1 (where block 2 was).
    assert blocks == [2]
    assert patch["action"] == "merged" and "placed by the 3-way merge" in patch["detail"]
    assert [p["state"] for p in status["patches"]] == ["merges"]  # status says what rebase does


def test_a_fix_placed_by_the_merge_is_an_exact_pair_of_the_range_diff_written_without_git(
        tmp_path, monkeypatch):
    """A fix the 3-way merge placed (its context at more than one place of the file) whose
    hunk moved as it was pairs exactly with its old commit: git's own diffs of both pairs of
    contents show it, and the range-diff is written without `git range-diff`, git's text byte
    for byte. (It ran git's range-diff, diffing both commits' files whole, before.)"""
    from patchforge.store import rangediff

    stack = stack_with_fix(tmp_path)
    v2 = stack.commit({"pkg/m.py": b"".join(header(20) + THREE)}, "v2")
    copy = tmp_path / "copy"
    shutil.copytree(stack.root, copy, symlinks=True)
    started = []
    real_start = rangediff.RangeDiffImport._start_git

    def start_git(self):
        started.append(self)
        return real_start(self)
    monkeypatch.setattr(rangediff.RangeDiffImport, "_start_git", start_git)
    written = stack.rebase_json("--to", f"up={v2}")
    (patch,) = written["patches"]
    assert patch["action"] == "merged" and "placed by the 3-way merge" in patch["detail"]
    assert not started
    monkeypatch.setattr(rangediff, "_written_text", lambda *args: None)
    result = run_cli(copy, "rebase", "--to", f"up={v2}", "--json")
    assert result.rc == 0, result.err
    assert started and json.loads(result.out)["range_diff"] == written["range_diff"]
    assert " = " in written["range_diff"]


def test_upstream_inserting_lines_above_keeps_the_fix_in_its_block_at_an_offset(tmp_path):
    stack = stack_with_fix(tmp_path)
    v2 = stack.commit({"pkg/m.py": b"".join(header(15) + THREE)}, "v2")
    _, blocks = rebased_block(stack, v2)
    assert blocks == [2]  # before: "offset", the fix in block 1


def test_the_map_decides_with_upstream_changes_elsewhere_in_a_file_of_repeated_blocks(tmp_path):
    stack = stack_with_fix(tmp_path)
    changed = list(THREE)
    changed[43] = b"    b = a + 3\n"  # block 3 changed: two identical blocks left
    v2 = stack.commit({"pkg/m.py": b"".join(header(20) + changed + [b"# end\n"])}, "v2")
    summary, blocks = rebased_block(stack, v2)
    assert summary["stopped"] is None and summary["written"] is True
    assert blocks == [2]  # before: block 1
    # The new patch is made on the target: its header's lines are the right block's, and
    # another rebase onto the same file is the plain case again.
    assert b"@@ -42,7 +42,7 @@" in stack.patch("up", "fix")


def test_where_the_map_agrees_with_the_nearest_place_the_rebase_stays_clean(tmp_path):
    stack = stack_with_fix(tmp_path)
    v2 = stack.commit({"pkg/m.py": b"".join(THREE + [b"# appended\n"])}, "v2")
    summary, blocks = rebased_block(stack, v2)
    assert [p["action"] for p in summary["patches"]] == ["clean"]
    assert blocks == [2]


def test_a_place_the_map_cannot_decide_stops_the_rebase_naming_the_file_and_lines(tmp_path):
    stack = stack_with_fix(tmp_path)
    changed = list(THREE)
    changed[23] = b"    b = a + 2\n"  # next to the fix's line, in block 2 itself
    v2 = stack.commit({"pkg/m.py": b"".join(header(20) + changed)}, "v2")
    status = stack.json("status", "--against", f"up={v2}", expect=1)
    assert [p["state"] for p in status["patches"]] == ["unsure"]
    code, _, err = stack.cli("rebase", "--to", f"up={v2}", expect=None)
    # Before: "applied exactly" into block 1, exit 0.
    assert code != 0
    assert "the place of the fix is ambiguous: pkg/m.py hunk #1: its context is at lines " \
        "22, 62" in err
    # The fix is not lost: the worktree holds it (at the nearest place), to be moved.
    work = stack.root / ".patchforge" / "work" / "up" / "pkg" / "m.py"
    assert checked_blocks(work.read_bytes()) == [1]
    lines = lines_of(work.read_bytes())
    lines[22 + 3 - 1] = b"    CHECK = False\n"
    lines[62 + 3 - 1] = b"    CHECK = True\n"
    work.write_bytes(b"".join(lines))
    stack.cli("rebase", "--continue")
    assert checked_blocks(applied_with_git(stack, v2, stack.patch("up", "fix"))) == [3]


def test_an_earlier_patch_shifting_a_later_ones_block_is_reported_not_applied(tmp_path):
    top = [b"# top\n"]
    stack = OneUpstreamStack(tmp_path, {"pkg/m.py": b"".join(top + THREE)})
    work = stack.root / ".patchforge" / "work" / "up" / "pkg" / "m.py"

    def cli(*args, expect=0):
        result = run_cli(stack.root, *args)
        assert expect is None or result.rc == expect, (args, result.out, result.err)
        return result

    cli("new", "fix-a", "--file", "pkg/m.py", "-m", "A")
    work.write_bytes(b"".join([b"# top (A)\n"] + THREE))
    cli("refresh")
    cli("new", "fix-b", "--file", "pkg/m.py", "-m", "B")
    work.write_bytes(b"".join([b"# top (A)\n"] + fixed(THREE, 2)))
    cli("refresh")
    cli("lint", expect=None)
    assert "placement" not in cli("lint", expect=None).out
    cli("edit", "fix-a")
    work.write_bytes(b"".join([b"# top (A)\n"] + header(20) + THREE))
    refreshed = cli("refresh", expect=1)
    # Before: refresh exit 0, saying nothing; status "applies"; the overlay had B in block 1.
    assert "warning: fix-b.patch: the place of its change is ambiguous after this change " \
        "(pkg/m.py hunk #1: its context is at lines 23, 43, 63" in refreshed.err
    status = cli("status", "--json", expect=1).out
    assert '"unsure"' in status and "ambiguous place: pkg/m.py hunk #1" in status
    lint = cli("lint", expect=1).out
    assert "placement" in lint and "fix-b" in lint
    # Moved where it belongs and refreshed, it is made on this file: nothing to say.
    cli("edit", "fix-b")
    assert checked_blocks(work.read_bytes()) == [1]
    work.write_bytes(b"".join([b"# top (A)\n"] + header(20) + fixed(THREE, 2)))
    cli("refresh")
    assert "placement" not in cli("lint", expect=None).out
    cli("status")


def test_blocks_between_lines_each_file_has_once_are_mapped_by_those_lines(tmp_path):
    """Real code: the repeated lines sit in functions whose `def` lines are each there once;
    those lines map the place (no merge needed), wherever upstream's changes are."""
    named = [b"def one():\n", *BLOCK, b"def two():\n", *BLOCK, b"def three():\n", *BLOCK]
    stack = OneUpstreamStack(tmp_path, {"pkg/m.py": b"".join(named)})
    stack.add_fix("fix", "pkg/m.py", b"".join(named), b"".join(fixed(named, 2)))
    changed = header(21) + named[:-3] + [b"    return None\n", b"\n", b"\n"]
    v2 = stack.commit({"pkg/m.py": b"".join(changed)}, "v2")
    summary, blocks = rebased_block(stack, v2)
    assert blocks == [2]  # before: block 1
    assert [p["action"] for p in summary["patches"]] == ["merged"]


def test_a_line_map_by_the_lines_each_file_has_once():
    from patchforge.apply.hunks import mapped_line

    old = b"a\nx\nx\nb\nx\nx\nc\n"
    # Three lines above, the same lines between `b` and `c`: line 5 is line 8.
    assert mapped_line(old, b"n\nn\nn\n" + old, 5, 2) == 8
    # The lines between the anchors changed: the map does not say.
    assert mapped_line(old, b"a\nx\nx\nb\nx\ny\nx\nc\n", 5, 2) is None
    # No line there once in either file: the whole files are compared.
    assert mapped_line(b"x\nx\n", b"x\nx\n", 2, 1) == 2
    assert mapped_line(b"x\nx\n", b"y\nx\nx\n", 2, 1) is None


SCALE = (b"import torch\n\n\n"
         b"def scale_fp8(tensor, amax):\n"
         b'    """Scale a tensor into the finite range of its dtype."""\n'
         b"    assert tensor.is_contiguous()\n"
         b"    limit = compute_limit(tensor.dtype)\n"
         b"    factor = amax / limit\n"
         b"    result = tensor * factor\n"
         b"    result = result.to(tensor.dtype)\n"
         b"    return result\n\n\n"
         b"def helper():\n    return None\n")
CLAMP = b"    factor = clamp_to_finite_range(factor, limit)\n"


def test_a_copy_of_the_old_code_upstream_added_elsewhere_is_not_the_fix_s_place(tmp_path):
    """Upstream changes a context line of the fixed function (a saturating limit) and keeps
    the old body at the file's end as scale_fp8_legacy: the fix's pre-image is whole only in
    the copy, once, and nearness to the header's line would put the fix there (an offset, every
    check green), the deployed scale_fp8 without it. git's line map keeps scale_fp8 as the
    place: status says the place is ambiguous, the rebase stops on it naming both lines, and
    nothing is put into the copy."""
    stack = OneUpstreamStack(tmp_path, {"k.py": SCALE})
    factor = b"    factor = amax / limit\n"
    stack.add_fix("fix", "k.py", SCALE, SCALE.replace(factor, factor + CLAMP))
    body = SCALE.split(b"\n\n\ndef helper")[0].split(b"import torch\n\n\n")[1]
    legacy = body.replace(b"def scale_fp8(", b"def scale_fp8_legacy(").replace(
        b"Scale a tensor into the finite range of its dtype.", b"Deprecated: kept for old files.")
    v2 = SCALE.replace(b"compute_limit(tensor.dtype)", b"compute_limit(tensor.dtype, saturate=True)")
    stack.commit({"k.py": v2 + b"\n\n" + legacy + b"\n"}, "saturate; keep the old one",
                 tag="v2")
    status = stack.json("status", "--against", "up=v2", expect=1)
    ((patch,),) = [status["patches"]]
    assert patch["state"] not in ("applies", "offset", "upstreamed"), patch
    assert patch["rebase"] == "stop", patch
    rc, out, err = stack.cli("rebase", "--to", "up=v2", expect=3)
    assert "k.py hunk #1" in err and "line 6" in err and "line 20" in err, err
    stack.cli("rebase", "--abort")
    assert stack.series("up") == ["fix.patch"]


def test_a_fix_near_the_end_of_a_file_without_a_final_newline_moves_by_its_offset(tmp_path):
    """The fix changes the line three lines before the end of a file whose last line has no
    newline (the hunk ends with `\\ No newline at end of file`); upstream adds two lines above:
    the hunk applies at an offset, status says so and the rebase moves it (the check of the
    offset's neighbours reads a last line without a newline as a line)."""
    text = (b"import os\n\n\ndef step(x):\n    a = x * 2\n    b = a + 1\n    c = b - 3\n"
            b"    return c")
    stack = OneUpstreamStack(tmp_path, {"k.py": text})
    stack.add_fix("fix", "k.py", text, text.replace(b"x * 2", b"x * 4"))
    stack.commit({"k.py": b"# header\n# more\n" + text}, "header", tag="v2")
    status = stack.json("status", "--against", "up=v2")
    ((patch,),) = [status["patches"]]
    assert patch["state"] == "offset", patch
    stack.rebase_json("--to", "up=v2")
    assert stack.series("up") == ["fix.patch"]
    stack.cli("overlays")
    assert (stack.root / "overlays" / "up" / "k.py").read_bytes() == \
        b"# header\n# more\n" + text.replace(b"x * 2", b"x * 4")



# A near-copy of a block upstream inserts beside the original, in the same function: a
# triton.Config entry copied above the one it was made from (AITER's bwd.py configs; its
# MHC_POST_KERNEL_IMPL_RAW_ macro is the same shape).
CONFIGS = (b"import triton\n\n\n"
           b"def get_configs():\n"
           b"    return [\n"
           b"        # the tuned default\n"
           b"        triton.Config(\n"
           b"            {\n"
           b'                "BLOCK_M": 64,\n'
           b'                "BLOCK_N": 64,\n'
           b'                "SLICE": 2,\n'
           b'                "waves": 2,\n'
           b"            },\n"
           b"            num_stages=2,\n"
           b"            num_warps=8,\n"
           b"        ),\n"
           b"    ]\n")
OWN_ENTRY = CONFIGS.split(b"    return [\n")[1].split(b"    ]\n")[0]


@pytest.mark.parametrize("above", [0, 2], ids=["exact", "offset"])
def test_a_fix_is_not_put_into_a_copy_upstream_inserted_beside_its_own_code(tmp_path, above):
    """Upstream inserts a near-copy of the fixed config entry right above it (num_warps=4)
    and retunes the line above the fix's line in the original: only the copy has the fix's
    pre-image whole, at the original's old lines (`above` = 0: "applied exactly") or near
    them (an offset). Before, the rebase put the fix into the copy and exited 0, the
    original entry without it. Now status says the place is unsure and the rebase stops,
    naming the old place, the changed own place and the copy's line; nothing is moved."""
    stack = OneUpstreamStack(tmp_path, {"k.py": CONFIGS})
    stack.add_fix("fix", "k.py", CONFIGS,
                  CONFIGS.replace(b'"SLICE": 2,', b'"SLICE": 1,'))
    copy = b"        # small tiles\n" * above + OWN_ENTRY.replace(
        b"# the tuned default", b"# small tiles").replace(b"num_warps=8", b"num_warps=4")
    retuned = CONFIGS.replace(b'"BLOCK_N": 64,', b'"BLOCK_N": 48,')
    v2 = retuned.replace(b"    return [\n", b"    return [\n" + copy)
    stack.commit({"k.py": v2}, "small tiles; retune BLOCK_N", tag="v2")
    status = stack.json("status", "--against", "up=v2", expect=1)
    ((patch,),) = [status["patches"]]
    assert patch["state"] == "unsure" and patch["rebase"] == "stop", patch
    rc, out, err = stack.cli("rebase", "--to", "up=v2", expect=3)
    # Each pre-image starts at its `{` line: the copy's first, then the original's.
    copy_line, own_line = [k + 1 for k, line in enumerate(lines_of(v2))
                           if line == b"            {\n"]
    assert copy_line == 8 + above
    assert "k.py hunk #1" in err and "in lines upstream added" in err, err
    assert f"only at line {copy_line}" in err and f"now line {own_line}" in err, err
    assert "at line 8 of the file before" in err, err
    stack.cli("rebase", "--abort")
    assert stack.series("up") == ["fix.patch"]



def _launch(indent: bytes, kind: bytes, tweak: bool = False) -> bytes:
    """A kernel launch whose argument list ends alike in every copy, its arguments where
    they are however deep the launch (AITER's fused_qknorm_idxrqknorm.cu); `tweak`:
    upstream retuned its `x,` line."""
    pad = b" " * 16
    return (indent + b"launch<" + kind + b">(\n"
            + pad + b"qkv,\n" + pad + b"cast<" + kind + b">(kv_cache),\n"
            + pad + b"eps,\n" + pad + b"rotary_dim,\n" + pad + b"num_tokens,\n"
            + pad + b"block_size,\n" + pad + (b"x * 2,\n" if tweak else b"x,\n")
            + pad + b"max_kv_tokens,\n" + pad + b"k_s_block,\n" + pad + b"k_s_token,\n"
            + pad + b"v_s_block,\n" + pad + b"stream);\n")


def _branches(fp8: bytes, half: bytes) -> bytes:
    return b"    if(fp8)\n    {\n" + fp8 + b"    }\n    else\n    {\n" + half + b"    }\n}\n"


def _split(kind: bytes, tweaked: bool) -> bytes:
    """The launch of `kind` split by upstream into one per index-cache kind, the first of
    them retuned when `tweaked`."""
    return b"".join(
        (b"        if(fp8_index)\n" if first else b"        else\n") + b"        {\n"
        + _launch(b"            ", kind + b", " + index, tweaked and first) + b"        }\n"
        for first, index in ((True, b"fp8"), (False, b"half")))


def test_a_fix_is_not_put_into_one_of_the_copies_upstream_split_its_code_into(tmp_path):
    """At the pin the launch the fix changes (the half one) is alike around the fixed line
    to the fp8 one. Upstream splits each launch in two (an fp8 index cache or not) and
    retunes the line above the fixed one in the first half copy: the hunk's context is whole
    at three places, and git's 3-way merge put the fix into one of them with exit 0
    ("placed by the 3-way merge"), where the line diff puts the fix's own lines in the
    retuned copy. Now the place is unsure: status says so and the rebase stops naming the
    places, the retuned copy's line among them; nothing is moved."""
    pin = b"void run(bool fp8)\n{\n" + _branches(_launch(b"        ", b"fp8"),
                                                  _launch(b"        ", b"half"))
    stack = OneUpstreamStack(tmp_path, {"k.cu": pin})
    after = lines_of(pin)
    own = [k for k, line in enumerate(after) if b"max_kv_tokens" in line][1]
    after[own] = after[own].replace(b"max_kv_tokens", b"max_kv_tokens / 2")
    stack.add_fix("fix", "k.cu", pin, b"".join(after))
    v2 = b"void run(bool fp8, bool fp8_index)\n{\n" + _branches(_split(b"fp8", False),
                                                                _split(b"half", True))
    stack.commit({"k.cu": v2}, "an index cache of its own kind; retune x", tag="v2")
    status = stack.json("status", "--against", "up=v2", expect=1)
    ((patch,),) = [status["patches"]]
    assert patch["state"] == "unsure" and patch["rebase"] == "stop", patch
    _, _, err = stack.cli("rebase", "--to", "up=v2", expect=3)
    # (the hunk's context starts two lines above the retuned one)
    retuned = [k + 1 for k, line in enumerate(lines_of(v2)) if b"x * 2," in line][0]
    assert "k.cu hunk #1: its context is at lines" in err, err
    assert f"all but a line or two of it at line {retuned - 2}, where upstream changed a " \
        "copy of that code" in err, err
    stack.cli("rebase", "--abort")
    assert stack.series("up") == ["fix.patch"]


def test_the_lines_two_contents_share_at_their_ends_are_found_by_halving():
    """Before a line diff of two versions of a file (the copy check's alignment, the doubling
    checks' changed blocks), the lines both start and end with are set aside: found by
    comparing runs of lines as a whole, halving, not by a loop over every shared line in
    Python (10,000 steps for a 10,000-line file changed in its middle). The alignment is the
    one a line-by-line search gives."""
    old = [b"    value_%d = %d\n" % (n, n) for n in range(10_000)]
    new = old[:6_000] + [b"    inserted = 1\n"] + old[6_000:]
    blocks, steps = _traced_aligned_blocks(old, new)
    assert blocks == [(0, 0, 6_000), (6_000, 6_001, 4_000)]
    assert len(steps) < 1_000, len(steps)


def test_the_line_diff_of_two_contents_is_made_once_for_every_hunk_that_asks(monkeypatch):
    """Where a moved hunk has its own place asked by a line diff of the file before and after
    upstream's change (`_diff_place`: a near-copy upstream inserted, as above), every other
    hunk of the patch on that file asks of the same two contents: the alignment (difflib, a
    whole-file line diff in Python, the largest step of the carried patches' copy check) is
    made once and each hunk's place read from it, the places those of a fresh alignment."""
    import difflib

    from patchforge.apply import hunks

    made = []

    class Counted(difflib.SequenceMatcher):
        def __init__(self, *args, **kwargs):
            made.append(args)
            super().__init__(*args, **kwargs)

    unique = b"# contents of this test alone: %d\n" % id(made)
    old = unique + CONFIGS + CONFIGS.replace(b"get_configs", b"other_configs")
    new = old.replace(b'"BLOCK_N": 64,', b'"BLOCK_N": 48,', 1).replace(
        b"    return [\n", b"    return [\n" + OWN_ENTRY.replace(b"num_warps=8", b"num_warps=4"), 1)
    first = [b'                "BLOCK_M": 64,\n', b'                "BLOCK_N": 64,\n',
             b'                "SLICE": 2,\n']
    second = [b"            num_stages=2,\n", b"            num_warps=8,\n", b"        ),\n"]
    at = {tuple(pre): lines_of(old).index(pre[0]) for pre in (first, second)}
    fresh = [hunks._aligned_blocks(lines_of(old), lines_of(new))]
    made.clear()
    monkeypatch.setattr(difflib, "SequenceMatcher", Counted)
    places = [hunks._diff_place(old, new, pre, pre, at[tuple(pre)]) for pre in (first, second)]
    assert len(made) == 1
    assert list(hunks._aligned_contents(old, new)) == fresh[0]
    monkeypatch.undo()
    hunks._aligned_contents.cache_clear()
    assert places == [hunks._diff_place(old, new, pre, pre, at[tuple(pre)])
                      for pre in (first, second)]
    assert all(place is not None for place in places)


def test_a_long_line_diff_finds_its_longest_runs_by_sampling():
    """A line diff of two versions of a file changed at both ends (the copy check's alignment,
    the doubling checks' changed blocks) finds each longest run of lines alike by the runs
    through a few sampled lines, not by difflib's search, which pairs each line with every
    equal line of the other side (here each blank line with 300 others, 90,000 pairs): the
    blocks difflib's own search gives."""
    import difflib

    old = [line for n in range(300) for line in (b"    value_%d = %d\n" % (n, n), b"\n")]
    new = [b"import os\n", *old[:-1], b"    value_299 = -1\n", b"\n"]
    blocks, steps = _traced_aligned_blocks(old, new)
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    assert blocks == [tuple(block) for block in matcher.get_matching_blocks() if block.size]
    assert len(steps) < 20_000, len(steps)


@pytest.mark.parametrize("seed", range(4))
def test_the_sampled_longest_match_is_difflibs(monkeypatch, seed):
    """The longest runs found by sampling are difflib's own, ties included (the first in the
    old side, then in the new): random runs of lines from small alphabets (many equal lines
    and runs of the same length), edited, copied and swapped, with the sampling taken down
    to runs of 1-8 lines so that nearly every range is sampled; difflib's popular lines
    (autojunk) left to difflib."""
    import difflib
    import random

    from patchforge.apply import hunks

    rng = random.Random(seed)
    for _ in range(2_000):
        monkeypatch.setattr(hunks, "_SAMPLED", rng.choice([1, 2, 3, 5, 8]))
        alphabet = [b"line %d\n" % k for k in range(rng.choice([1, 2, 3, 5, 20, 200]))]
        old = [rng.choice(alphabet) for _ in range(rng.randrange(150))]
        new = list(old)
        for _ in range(rng.randrange(6)):
            at = rng.randrange(len(new) + 1)
            edit = rng.randrange(4)
            if edit == 0:
                del new[at:at + rng.randrange(1, 5)]
            elif edit == 1:
                new[at:at] = [rng.choice(alphabet) for _ in range(rng.randrange(1, 5))]
            elif edit == 2:
                new[at:at + 1] = [rng.choice(alphabet)]
            else:
                start = rng.randrange(len(new) + 1)
                new[at:at] = new[start:start + rng.randrange(1, 30)]
        if rng.random() < 0.3:
            old, new = new, old
        autojunk = rng.random() < 0.2
        sampled = difflib.SequenceMatcher(None, old, new, autojunk=autojunk)
        searched = difflib.SequenceMatcher(None, old, new, autojunk=autojunk)
        assert hunks.sampled_blocks(sampled) == searched.get_matching_blocks(), (old, new)
        assert sampled.get_opcodes() == searched.get_opcodes()


def _traced_aligned_blocks(old, new):
    """`hunks._aligned_blocks(old, new)` and the Python lines it stepped through, by name."""
    import sys

    from patchforge.apply import hunks

    steps = []

    def count(frame, event, arg):
        if event == "line":
            steps.append(frame.f_code.co_name)
        return count

    sys.settrace(count)
    try:
        return hunks._aligned_blocks(old, new), steps
    finally:
        sys.settrace(None)
