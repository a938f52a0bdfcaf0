"""A fix that upstream landed verbatim and a later commit took back as part of a larger edit,
with no revert message: the real shape (AITER v0.1.16 -> v0.1.18) is a CI workflow's table of
runner overrides. The fix re-points one entry; upstream lands it (the same patch-id), then a
commit re-pointing the whole table to other runners puts that entry back to its old value
in the same change block, and a later commit moves two other entries back. The target has the
old value: a rebase that drops the fix loses it, while `git cherry` says the fix is upstream.

The history's word on undoing compared blocks exactly, so a block larger than the fix's was
no undoing and the history said "landed by" the landing. Where the fix's own place is still
recognisable, its old code kept the fix (with evidence saying the commit made the change at
another place, which it had not); where the larger edit also rewrote the lines around the fix,
the fix was said upstreamed (high) and the rebase dropped it. The whole change reversed
inside a larger block of a later commit undoes it now, and the evidence names that commit.
One small block of a large fix found inside a later rewrite is not an undoing (the rewrite's
own code, AITER v0.1.18 -> v0.1.20: 73f1490828): that landing stands. Real git upstreams,
real commands: `status --against`, `rebase --to`, `overlays`."""
from __future__ import annotations

from helpers.project import OneUpstreamStack
from helpers.upstream import diff_of

from patchforge.apply.diffparse import parse_diff
from patchforge.history import blocks_of_git_diff, judge_history, patch_blocks

PATH = ".github/workflows/atom-test.yaml"
ENTRIES = ["atom-mi355-8gpu.predownload", "linux-atom-do-mi350x-8", "linux-atom-mi35x-4",
           "linux-atom-mi35x-1"]
BASE = ["linux-aiter-mi35x-8", "linux-aiter-do-mi350x-8", "linux-aiter-mi35x-4",
        "linux-aiter-mi35x-1"]
FIXED = [BASE[0], "linux-aiter-mi35x-8", *BASE[2:]]  # the fix: the 8-GPU job on MI35X
ON_DO = ["linux-aiter-do-mi350x-8", "linux-aiter-do-mi350x-8", "linux-aiter-do-mi350x-4",
         "linux-aiter-do-mi350x-1"]  # upstream moves every job to DO runners


def workflow(runners: list[str], name: str = "runner_overrides") -> bytes:
    rows = "".join(f'              "{entry}": "{runner}",\n'
                   for entry, runner in zip(ENTRIES, runners))
    return ("name: ATOM test\njobs:\n  pick:\n    runs-on: ubuntu-latest\n    steps:\n"
            "      - run: |\n          import json\n\n"
            f"          {name} = {{\n{rows}          }}\n\n"
            f"          print(json.dumps({name}))\n").encode()


def assert_kept_as_undone(stack: OneUpstreamStack, undoer: str) -> None:
    """status: not landed, the undoing commit named; the rebase stops on the fix or moves it,
    never drops it; the overlay still re-points the 8-GPU job."""
    status = stack.json("status", "--against", "up=v2", expect=1)
    ((patch,),) = [status["patches"]]
    assert patch["state"] != "upstreamed" and patch["rebase"] != "drop", patch
    assert not patch.get("landed_in"), patch
    assert f"history: commit {undoer} undoes this change (the whole change reversed within " \
        "a larger change)" in patch["evidence"], patch["evidence"]
    overlay = stack.kept_by_rebase("up=v2", PATH)
    assert b'"linux-atom-do-mi350x-8": "linux-aiter-mi35x-8",\n' in overlay, overlay


def test_a_landing_a_later_commit_takes_back_within_a_larger_edit_is_kept(tmp_path):
    """The real sequence: landed, the table re-pointed to DO runners (the fix's entry back to
    its old value), two entries moved back. The target has the old value at the fix's place."""
    v1 = workflow(BASE)
    stack = OneUpstreamStack(tmp_path, {PATH: v1})
    stack.add_fix("fix", PATH, v1, workflow(FIXED))
    stack.commit({PATH: workflow(FIXED)}, "CI: run ATOM 8-GPU accuracy on MI35X runner (#7)")
    undoer = stack.commit({PATH: workflow(ON_DO)}, "CI: run downstream tests on DO runners (#8)")
    stack.commit({PATH: workflow(ON_DO[:2] + BASE[2:])}, "CI: 4- and 1-GPU jobs back (#9)",
                 tag="v2")
    assert_kept_as_undone(stack, undoer)


def test_a_landing_taken_back_while_its_neighbours_are_rewritten_is_not_dropped(tmp_path):
    """The same take-back in a commit that also renames the table (its every line around the
    fix's entry changed): nothing recognises the fix's own place any more, and the history
    alone said the fix landed: upstreamed (high), dropped, its runner deployed nowhere."""
    v1 = workflow(BASE)
    stack = OneUpstreamStack(tmp_path, {PATH: v1})
    stack.add_fix("fix", PATH, v1, workflow(FIXED))
    stack.commit({PATH: workflow(FIXED)}, "CI: run ATOM 8-GPU accuracy on MI35X runner (#7)")
    undoer = stack.commit({PATH: workflow(ON_DO, "job_runners")},
                          "CI: run downstream tests on DO runners (#8)", tag="v2")
    assert_kept_as_undone(stack, undoer)


def test_a_large_landing_with_one_small_block_inside_a_later_rewrite_still_lands(tmp_path):
    """The other side: a fix of several blocks, landed verbatim; a later rewrite of one
    function's lines takes one of the fix's lines out and has, among its own lines, the old
    form of it (`(num_tokens)` with its parentheses). The rest of the fix is there: landed."""
    head = [f"def step{i}(x):\n    return x + {i}\n\n\n".encode() for i in range(6)]

    def kernel(oob: bytes, tiles: bytes, scale: bytes) -> bytes:
        return b"".join(head[:2]) + (
            b"def route(num_tokens, num_warps):\n"
            b"    IDX_LAYOUT: gl.constexpr = gl.SliceLayout(\n"
            b"        0, gl.BlockedLayout([1, 16], [32, 1], [1, num_warps], [0, 1])\n"
            b"    )\n" + oob + b"    return oob_idx\n\n\n") + b"".join(head[2:4]) + \
            tiles + b"".join(head[4:]) + scale

    old_oob = b"    oob_idx = (num_tokens).to(gl.uint16)\n"
    new_oob = b"    oob_idx = num_tokens.to(gl.uint16)\n"
    old_tiles = b"TILES = {'m': 64, 'n': 128}\n\n\n"
    new_tiles = b"TILES = {'m': 128, 'n': 256, 'persistent': True}\n\n\n"
    old_scale = b"def gammas(w):\n    return w.scale * w.bias\n"
    new_scale = b"def gammas(w):\n    return w.scale_and_bias()\n"
    v1 = kernel(old_oob, old_tiles, old_scale)
    fixed = kernel(new_oob, new_tiles, new_scale)
    stack = OneUpstreamStack(tmp_path, {"moe.py": v1})
    stack.add_fix("fix", "moe.py", v1, fixed)
    landed = stack.commit({"moe.py": fixed}, "Moe a8w4 tp4 tuning (#7)")
    rewritten = fixed.replace(
        b"    IDX_LAYOUT: gl.constexpr = gl.SliceLayout(\n"
        b"        0, gl.BlockedLayout([1, 16], [32, 1], [1, num_warps], [0, 1])\n"
        b"    )\n" + new_oob, old_oob)
    stack.commit({"moe.py": rewritten}, "multicast support for MoE a8w4 (#8)", tag="v2")
    status = stack.json("status", "--against", "up=v2", expect=None)
    ((patch,),) = [status["patches"]]
    assert (patch["state"], patch["rebase"]) == ("upstreamed", "drop"), patch
    assert patch["landed_in"] == landed, patch
    assert not any("undoes" in line for line in patch["evidence"]), patch["evidence"]


def test_the_history_says_undone_only_for_the_whole_change_reversed(tmp_path):
    """history.judge_history alone, on git's own diffs: the fix's one block reversed inside a
    larger block undoes it; a fix of two blocks, one of them reversed inside a larger block
    and the other still there, stays landed; a block that only takes the fix's line out
    (nothing put back) is a rewrite, not an undoing."""
    made_at = iter(range(100))

    def diff(old: bytes, new: bytes) -> bytes:
        return diff_of(tmp_path / f"d{next(made_at)}", PATH, old, new)

    def blocks(old: bytes, new: bytes) -> dict:
        return {PATH: blocks_of_git_diff(diff(old, new))}

    class Patch:
        def __init__(self, data: bytes) -> None:
            self.file_patches = parse_diff(data, source="<test>")

    one = patch_blocks(Patch(diff(workflow(BASE), workflow(FIXED))))
    made = blocks(workflow(BASE), workflow(FIXED))
    said = judge_history(one, [("a", made), ("b", blocks(workflow(FIXED), workflow(ON_DO)))])
    assert said.landed_by is None and said.undone_by == "b", said
    gone = blocks(workflow(FIXED), workflow(FIXED).replace(
        b'              "linux-atom-do-mi350x-8": "linux-aiter-mi35x-8",\n', b""))
    assert judge_history(one, [("a", made), ("b", gone)]).landed_by == "a"

    def printed(text: bytes) -> bytes:
        return text.replace(b"print(", b"print('overrides:', ")

    two = patch_blocks(Patch(diff(workflow(BASE), printed(workflow(FIXED)))))
    made_two = blocks(workflow(BASE), printed(workflow(FIXED)))
    table_two = blocks(printed(workflow(FIXED)), printed(workflow(ON_DO)))
    assert judge_history(two, [("a", made_two), ("b", table_two)]).landed_by == "a"


def scaled(line: bytes, below: bool = False) -> bytes:
    """Twenty small functions; f7 computes `line` above its `contiguous()` (or below it)."""
    body = (b"    y = y.contiguous()\n    %s\n" if below else b"    %s\n    y = y.contiguous()\n")
    return b"".join(b"def f7(x):\n    y = x + 7\n" + body % line + b"    return y * scale\n\n\n"
                    if i == 7 else b"def f%d(x):\n    y = x + %d\n    return y\n\n\n" % (i, i)
                    for i in range(20))


def test_a_landing_taken_back_with_the_old_line_a_line_lower_or_wrapped_is_kept(tmp_path):
    """Landed (#12), then a later commit takes the fix's line out and writes the old one a
    line lower (its diff two blocks), or wrapped over three lines as black wraps it (a black
    run on a stale tree). Before: the undoing was sought as one block, whole lines: none, and
    the fix was "upstreamed (high)", dropped, the target computing the old scale."""
    old = b"scale = torch.finfo(torch.float8_e4m3fn).max"
    fix = b"scale = torch.finfo(torch.float8_e4m3fnuz).max"
    wrapped = b"scale = torch.finfo(\n        torch.float8_e4m3fn\n    ).max"
    for name, undone in (("lower", scaled(old, below=True)), ("wrapped", scaled(wrapped))):
        stack = OneUpstreamStack(tmp_path / name, {"k.py": scaled(old)})
        stack.add_fix("fix", "k.py", scaled(old), scaled(fix))
        stack.commit({"k.py": scaled(fix)}, "fp8: e4m3fnuz max on ROCm (#12)")
        undoer = stack.commit({"k.py": undone}, "scale after contiguous()", tag="v2")
        status = stack.json("status", "--against", "up=v2", expect=None)
        ((patch,),) = [status["patches"]]
        assert patch["state"] != "upstreamed" and patch["rebase"] != "drop", (name, patch)
        assert f"history: commit {undoer} undoes this change (reverses part of it in k.py)" \
            in patch["evidence"], (name, patch["evidence"])
        assert fix in stack.kept_by_rebase("up=v2", "k.py"), name


def loader(first: str = "load", at_end: bool = False, debug: bool = True) -> bytes:
    """A module of two functions; `first` reads a file (printing a debug line unless not
    `debug`), placed above save() or (`at_end`) below it."""
    reads = (f"def {first}(path):\n    data = open(path).read()\n"
             + ('    print("debug: loaded", path)\n' if debug else "")
             + "    return data\n")
    saves = 'def save(path, data):\n    with open(path, "w") as fh:\n        fh.write(data)\n'
    return ("import os\n\n\n" + ("\n\n".join((saves, reads)) if at_end
                                 else "\n\n".join((reads, saves)))).encode()


def test_a_function_upstream_moved_with_the_line_the_fix_deletes_undoes_nothing(tmp_path):
    """The fix deletes a debug print; upstream, which never had the fix, moves the function
    holding it below another (renamed, or not). The move's diff adds the print line at the
    function's new place, the reverse of the fix's one block inside a larger one, and the
    history said the moving commit "undoes this change (the whole change reversed within a
    larger change)", as though the fix had landed and been taken back. A line moved is not
    put back: status names no undoing, and the rebase still keeps the fix."""
    for name, moved in (("renamed", loader("read_file", at_end=True)),
                        ("same name", loader(at_end=True))):
        stack = OneUpstreamStack(tmp_path / name.replace(" ", "-"), {"pkg/a.py": loader()})
        stack.add_fix("fix", "pkg/a.py", loader(), loader(debug=False))
        mover = stack.commit({"pkg/a.py": moved}, "move the reader below save()", tag="v2")
        status = stack.json("status", "--against", "up=v2", expect=None)
        ((patch,),) = [status["patches"]]
        assert patch["state"] != "upstreamed" and patch["rebase"] != "drop", (name, patch)
        assert not any("undoes this change" in line for line in patch["evidence"]), \
            (name, mover, patch["evidence"])
        assert b"debug" not in stack.kept_by_rebase("up=v2", "pkg/a.py"), name


def test_a_landing_a_later_move_puts_the_deleted_line_back_in_is_still_undone(tmp_path):
    """The fix lands (the print deleted); a later commit moves the function below save()
    with the print written in again: the line is put back, not moved (the commit takes out
    no print), and that commit still undoes the landing, named, the fix kept."""
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": loader()})
    stack.add_fix("fix", "pkg/a.py", loader(), loader(debug=False))
    stack.commit({"pkg/a.py": loader(debug=False)}, "drop the debug print (#3)")
    undoer = stack.commit({"pkg/a.py": loader("read_file", at_end=True)},
                          "move the reader below save()", tag="v2")
    status = stack.json("status", "--against", "up=v2", expect=None)
    ((patch,),) = [status["patches"]]
    assert patch["state"] != "upstreamed" and patch["rebase"] != "drop", patch
    assert any(f"history: commit {undoer} undoes this change" in line
               for line in patch["evidence"]), patch["evidence"]
    assert b"debug" not in stack.kept_by_rebase("up=v2", "pkg/a.py")
