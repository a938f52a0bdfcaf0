"""Code a fix takes out that upstream moved to another file, where the target still has it:
the fix's removal is not what upstream did, whatever the fix's own file says. Before, each of
these was "upstreamed" and the rebase (or `bring-back`) dropped the fix while the target kept
the code: a file the fix deletes that upstream folded into another (no rename git finds), a
move made in two commits (out of the file in one, into another in the next), and a landing
that a stale move in two commits undid. Now the fix is kept, the stop names the file the code
went to, and its way on does not lead to `--skip` alone.
Real git upstreams, real commands: `status --against`, `rebase --to`, `bring-back`."""
from __future__ import annotations

import pytest

from helpers.git import git
from helpers.project import OneUpstreamStack, add_patch_file


def functions(only) -> bytes:
    return b"".join(b"def f%d(x):\n    y = x + %d\n    torch.cuda.synchronize(device=x.device)\n"
                    b"    return y\n\n\n" % (i, i) for i in only)


def deleting(stack: OneUpstreamStack, path: str) -> None:
    """fix.patch deleting `path` (git's diff of the upstream's file at the pin)."""
    diff = stack.upstream.diff({path: None})
    add_patch_file(stack.root, "up", "fix.patch", (
        f"Description: drop {path}\nAuthor: Test Author <author@example.com>\n"
        f"Upstream-Status: Pending\nUpstream: up\nBase: {stack.base}\n\n"
        "Its kernels are broken on gfx942.\n---\n").encode() + diff)


def kept(stack: OneUpstreamStack, evidence: str) -> None:
    """status says the fix needs a human (not upstreamed, the rebase stops) with `evidence`;
    the rebase stops on it and keeps it in the series."""
    status = stack.json("status", "--against", "up=v2", expect=None)
    ((patch,),) = [status["patches"]]
    assert (patch["state"], patch["rebase"]) == ("unsure", "stop"), patch
    assert any(evidence in line for line in patch["evidence"]), patch["evidence"]
    rc, out, err = stack.cli("rebase", "--to", "up=v2", expect=3)
    assert evidence in err, err
    stack.cli("rebase", "--abort")
    assert stack.series("up") == ["fix.patch"]
    assert not (stack.root / "series" / "up" / "upstreamed" / "fix.patch").exists()


def test_a_file_the_fix_deletes_that_upstream_folded_into_another_is_no_landing(tmp_path):
    """The fix deletes f15.py; upstream moves its functions into k2.py, under other imports
    and beside other code: git finds no rename, the history sees f15.py deleted. Before:
    "upstreamed (high)" ("file deleted upstream"), dropped, and k2.py has the code."""
    f15 = b"import torch\n\n\n" + functions(range(15, 18))
    stack = OneUpstreamStack(tmp_path, {"k.py": functions(range(10)), "f15.py": f15})
    deleting(stack, "f15.py")
    moving = stack.commit({"f15.py": None,
                           "k2.py": b"import os\nimport torch\n\n\n" + functions(range(30, 40))
                           + functions(range(15, 18))}, "fold f15.py into k2.py", tag="v2")
    kept(stack, f"f15.py: the code it deletes was moved to k2.py by commit {moving}, and is "
         "there")


def reworded(only) -> bytes:
    """functions(only) as a fold into another module leaves them: each one's first statement
    reworded, a line more in each (no run of a function's lines is as it was)."""
    return b"".join(b"def f%d(x):\n    y = x * SCALE + %d\n"
                    b"    torch.cuda.synchronize(device=x.device)\n"
                    b"    log.debug('f%d done')\n    return y\n\n\n" % (i, i, i) for i in only)


@pytest.mark.parametrize("into", ["k2.py", "ké.py"])
def test_a_file_the_fix_deletes_folded_edited_into_a_file_git_quotes_is_no_landing(
        tmp_path, into):
    """As below, folded (each function reworded) into a file whose name git writes quoted
    (`"b/k\\303\\251.py"` on its `diff --git` line): the file was named by that line cut at
    " b/", which is no file. Before: "upstreamed (high)" ("file deleted upstream"), dropped,
    and ké.py has the code."""
    f15 = b"import torch\n\n\n" + functions(range(15, 18))
    k2 = b"import os\nimport torch\n\n\n" + functions(range(30, 40))
    stack = OneUpstreamStack(tmp_path, {"k.py": functions(range(10)), "f15.py": f15, into: k2})
    deleting(stack, "f15.py")
    moving = stack.commit({"f15.py": None, into: b"import logging\n" + k2 +
                           b"log = logging.getLogger()\n\n\n" + reworded(range(15, 18))},
                          f"fold f15.py into {into}", tag="v2")
    kept(stack, f"f15.py: the code it deletes was moved to {into} by commit {moving}, and is "
         "there")


@pytest.mark.parametrize("in_two_commits", [False, True])
def test_a_file_the_fix_deletes_that_upstream_folded_into_another_edited_is_no_landing(
        tmp_path, in_two_commits):
    """The fix deletes f15.py; upstream folds its functions into k2.py and edits every one of
    them there (in one commit, or out in one and into k2.py in the next): no run of their
    lines is in k2.py, most of their lines are. Before: "upstreamed (high)" ("file deleted
    upstream"), dropped, and k2.py has the code."""
    f15 = b"import torch\n\n\n" + functions(range(15, 18))
    k2 = b"import os\nimport torch\n\n\n" + functions(range(30, 40))
    stack = OneUpstreamStack(tmp_path, {"k.py": functions(range(10)), "f15.py": f15, "k2.py": k2})
    deleting(stack, "f15.py")
    folded = {"k2.py": b"import logging\n" + k2 + b"log = logging.getLogger()\n\n\n"
              + reworded(range(15, 18))}
    if in_two_commits:
        out = stack.commit({"f15.py": None}, "drop f15.py (to k2.py, next)")
        into = stack.commit(folded, "k2.py: f15..f17, logged", tag="v2")
        by = f"commits {out} (out of f15.py) and {into} (into k2.py)"
    else:
        by = "commit " + stack.commit({"f15.py": None, **folded}, "fold f15.py into k2.py",
                                      tag="v2")
    kept(stack, f"f15.py: the code it deletes was moved to k2.py by {by}, and is there")


def test_a_function_the_fix_removes_that_upstream_moved_and_edited_is_no_landing(tmp_path):
    """The fix removes f15 from k.py; upstream moves f15 to k2.py (k.py re-exports it) and
    rewords it there. Before: "upstreamed (high)" by reverse-apply, dropped, and k2.py has
    the code."""
    stack, moving = moved_f15(tmp_path, reworded_there=True)
    kept(stack, f"k.py: the code it removes was moved to k2.py by commit {moving}, and is there")


def test_a_function_removed_upstream_beside_new_code_of_its_own_is_still_a_landing(tmp_path):
    """Upstream removes f15 from k.py as the fix does and, in the same commit, writes a new
    function into k2.py sharing a line with it: a landing, dropped."""
    v1 = functions(range(20))
    stack = OneUpstreamStack(tmp_path, {"k.py": v1})
    without = functions([i for i in range(20) if i != 15])
    stack.add_fix("fix", "k.py", v1, without)
    stack.commit({"k.py": without, "k2.py": b"import torch\n\n\ndef g(x):\n"
                  b"    z = torch.empty_like(x).fill_(15)\n"
                  b"    torch.cuda.synchronize(device=x.device)\n    return z\n"},
                 "f15 goes; k2.g", tag="v2")
    stack.dropped_as_landed()


def rewritten(only) -> bytes:
    """functions(only) rewritten where upstream moved them: each one's name is all that is
    left of its lines (its signature given types, each statement written anew)."""
    return b"".join(b"def f%d(t: torch.Tensor) -> torch.Tensor:\n    out = t.add(%d)\n"
                    b"    torch.cuda.current_stream(t.device).synchronize()\n"
                    b"    return out\n\n\n" % (i, i) for i in only)


@pytest.mark.parametrize("in_two_commits", [False, True])
def test_a_function_the_fix_removes_that_upstream_moved_and_rewrote_is_no_landing(
        tmp_path, in_two_commits):
    """The fix removes f15 from k.py; upstream moves f15 to k2.py (k.py re-exports it) and
    rewrites every line of it there (in one commit, or out in one and into k2.py in the
    next): no line of it is in k2.py, f15 is. Before: "upstreamed (high)" by reverse-apply,
    dropped, and the target still has f15 to call."""
    v1 = functions(range(20))
    stack = OneUpstreamStack(tmp_path, {"k.py": v1})
    without = functions([i for i in range(20) if i != 15])
    stack.add_fix("fix", "k.py", v1, without)
    moved = {"k2.py": b"import torch\n\n\n" + rewritten([15])}
    if in_two_commits:
        out = stack.commit({"k.py": without + b"from k2 import f15\n"},
                           "k.py: f15 goes (to k2.py, next)")
        into = stack.commit(moved, "k2.py: f15, typed", tag="v2")
        by = f"commits {out} (out of k.py) and {into} (into k2.py)"
    else:
        by = "commit " + stack.commit({"k.py": without + b"from k2 import f15\n", **moved},
                                      "split k.py: f15 goes to k2.py, typed", tag="v2")
    kept(stack, f"k.py: the code it removes was moved to k2.py by {by}, and is there")


def test_a_file_the_fix_deletes_that_upstream_folded_into_another_rewritten_is_no_landing(
        tmp_path):
    """The fix deletes f15.py; upstream folds f15..f17 into k2.py, every line of each
    rewritten there. Before: "upstreamed (high)" ("file deleted upstream"), dropped."""
    f15 = b"import torch\n\n\n" + functions(range(15, 18))
    k2 = b"import os\nimport torch\n\n\n" + functions(range(30, 40))
    stack = OneUpstreamStack(tmp_path, {"k.py": functions(range(10)), "f15.py": f15, "k2.py": k2})
    deleting(stack, "f15.py")
    moving = stack.commit({"f15.py": None, "k2.py": k2 + rewritten(range(15, 18))},
                          "fold f15.py into k2.py, typed", tag="v2")
    kept(stack, f"f15.py: the code it deletes was moved to k2.py by commit {moving}, and is "
         "there")


def test_a_function_removed_upstream_beside_a_rewritten_one_of_another_name_is_a_landing(
        tmp_path):
    """Upstream removes f15 from k.py as the fix does and, in the same commit, writes into
    k2.py a function doing what f15 did under another name: nothing of f15 is there, a
    landing, dropped. So is the fix's own move of f15 into k2.py, rewritten, landed as it
    is."""
    v1 = functions(range(20))
    stack = OneUpstreamStack(tmp_path, {"k.py": v1})
    without = functions([i for i in range(20) if i != 15])
    stack.add_fix("fix", "k.py", v1, without)
    stack.commit({"k.py": without, "k2.py": b"import torch\n\n\n" +
                  rewritten([15]).replace(b"def f15", b"def add_and_wait")},
                 "f15 goes; k2.add_and_wait", tag="v2")
    stack.dropped_as_landed()


def test_a_method_removed_upstream_beside_a_class_with_a_method_of_its_name_is_a_landing(
        tmp_path):
    """The fix removes A.forward_fp8 from k.py; upstream removes it too and, in the same
    commit, writes into k2.py a class B of its own with a method of that name: a method's name
    is many classes', and nothing of A's method is there. A landing, dropped."""
    def with_a(methods: bytes) -> bytes:
        return b"import torch\n\n\nclass A:\n    def forward(self, x):\n        return x * 2\n\n" \
            + methods + functions(range(10))

    fp8 = (b"    def forward_fp8(self, x):\n        y = x.to(torch.float8_e4m3fnuz)\n"
           b"        torch.cuda.synchronize(device=x.device)\n        return y.float()\n\n\n")
    stack = OneUpstreamStack(tmp_path, {"k.py": with_a(fp8)})
    stack.add_fix("fix", "k.py", with_a(fp8), with_a(b"\n"))
    stack.commit({"k.py": with_a(b"\n"), "k2.py": b"import torch\n\n\nclass B:\n"
                  b"    def forward_fp8(self, t: torch.Tensor) -> torch.Tensor:\n"
                  b"        return t.to(torch.float8_e4m3fn).float()\n"},
                 "A: no fp8 path; B", tag="v2")
    stack.dropped_as_landed()


def test_a_fix_that_moves_a_function_and_rewrites_it_is_still_a_landing(tmp_path):
    """The fix moves f15 from k.py into k2.py and rewrites it there; upstream lands that
    commit: f15 is in k2.py because the fix put it there, a landing, dropped."""
    v1 = functions(range(20))
    stack = OneUpstreamStack(tmp_path, {"k.py": v1, "k2.py": b"import torch\n"})
    without = functions([i for i in range(20) if i != 15])
    moved = b"import torch\n\n\n" + rewritten([15])
    diff = stack.upstream.diff({"k.py": without, "k2.py": moved})
    add_patch_file(stack.root, "up", "fix.patch", (
        "Description: f15 into k2.py\nAuthor: Test Author <author@example.com>\n"
        f"Upstream-Status: Pending\nUpstream: up\nBase: {stack.base}\n\nTyped.\n---\n"
    ).encode() + diff)
    stack.commit({"k.py": without, "k2.py": moved}, "f15 into k2.py, typed (#31)", tag="v2")
    stack.dropped_as_landed()


def kernels(names, line: bytes) -> bytes:
    """HIP kernels `names`, each with `line` among its own."""
    return b"".join(b"__global__ void %s(const float* __restrict__ in, float* out, int n) {\n"
                    b"    const int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                    b"    if (i >= n) return;\n    %s\n    out[i] = __expf(in[i] - row_max_%s);\n"
                    b"}\n\n" % (name, line, name) for name in names)


def test_a_hip_file_the_fix_deletes_that_upstream_folded_into_another_edited_is_no_landing(
        tmp_path):
    """As above, a HIP file: the fix deletes csrc/softmax_old.cu; upstream folds its kernels
    into csrc/softmax.cu, each kernel's guard line rewritten there."""
    old = b"#include <hip/hip_runtime.h>\n\n" + kernels([b"softmax_a", b"softmax_b"],
                                                          b"float acc = 0.0f;")
    new = b"#include <hip/hip_runtime.h>\n\n" + kernels([b"softmax_c"], b"float acc = 1.0f;")
    stack = OneUpstreamStack(tmp_path, {"csrc/softmax_old.cu": old, "csrc/softmax.cu": new})
    deleting(stack, "csrc/softmax_old.cu")
    moving = stack.commit({"csrc/softmax_old.cu": None, "csrc/softmax.cu": new + kernels(
        [b"softmax_a", b"softmax_b"], b"float acc = 0.0f;").replace(
        b"if (i >= n) return;", b"if (i >= n) { return; }")}, "softmax: one file", tag="v2")
    kept(stack, f"csrc/softmax_old.cu: the code it deletes was moved to csrc/softmax.cu by "
         f"commit {moving}, and is there")


def test_a_hip_kernel_the_fix_removes_that_upstream_moved_and_rewrote_is_no_landing(tmp_path):
    """The fix removes softmax_b from csrc/softmax_a.cu; upstream moves it into
    csrc/softmax.cu and rewrites its body there (a guarded block for the early return, other
    names). Before: "upstreamed (high)" by reverse-apply, dropped."""
    head = b"#include <hip/hip_runtime.h>\n\n"
    old = head + kernels([b"softmax_a", b"softmax_b", b"softmax_d"], b"float acc = 0.0f;")
    without = head + kernels([b"softmax_a", b"softmax_d"], b"float acc = 0.0f;")
    other = head + kernels([b"softmax_c"], b"float acc = 1.0f;")
    stack = OneUpstreamStack(tmp_path, {"csrc/softmax_a.cu": old, "csrc/softmax.cu": other})
    stack.add_fix("fix", "csrc/softmax_a.cu", old, without)
    moving = stack.commit({"csrc/softmax_a.cu": without, "csrc/softmax.cu": other + (
        b"__global__ void softmax_b(const float* __restrict__ x, float* y, int count) {\n"
        b"    int idx = threadIdx.x + blockIdx.x * blockDim.x;\n"
        b"    if (idx < count) {\n        y[idx] = expf(x[idx] - row_max_softmax_b);\n"
        b"    }\n}\n")}, "softmax: b with c", tag="v2")
    kept(stack, f"csrc/softmax_a.cu: the code it removes was moved to csrc/softmax.cu by "
         f"commit {moving}, and is there")


def test_a_file_deleted_upstream_beside_new_code_of_its_own_is_still_a_landing(tmp_path):
    """Upstream deletes f15.py as the fix does and, in the same commit, writes new functions
    into k2.py that share a line or two with f15.py's: a replacement, not a fold; a landing,
    dropped."""
    f15 = b"import torch\n\n\n" + functions(range(15, 18))
    stack = OneUpstreamStack(tmp_path, {"k.py": functions(range(10)), "f15.py": f15})
    deleting(stack, "f15.py")
    fresh = b"".join(b"def g%d(x):\n    z = torch.empty_like(x).fill_(%d)\n"
                     b"    torch.cuda.synchronize(device=x.device)\n    return z\n\n\n" % (i, i)
                     for i in range(3))
    stack.commit({"f15.py": None, "k2.py": b"import torch\n\n\n" + fresh},
                 "replace f15.py by k2.py's g0..g2", tag="v2")
    stack.dropped_as_landed()


@pytest.mark.parametrize("merge_on_the_pin", [False, True])
def test_a_removal_upstream_moved_in_two_commits_is_no_landing(tmp_path, merge_on_the_pin):
    """The fix deletes f15 from k.py; upstream takes it out of k.py in one commit and puts it
    into k2.py in the next. Before: "upstreamed (high)" by reverse-apply, dropped. The same
    after a history whose first commit after the pin merges a pull request (the merge's first
    parent is the pin, outside the range): there the commits beside the one taking f15 out
    were never asked."""
    v1 = functions(range(20))
    stack = OneUpstreamStack(tmp_path, {"k.py": v1, "README": b"readme\n"})
    without = functions([i for i in range(20) if i != 15])
    stack.add_fix("fix", "k.py", v1, without)
    if merge_on_the_pin:
        git(stack.up, "checkout", "-q", "-b", "docs")
        stack.commit({"README": b"readme, more\n"}, "docs: readme")
        git(stack.up, "checkout", "-q", "main")
        git(stack.up, "merge", "-q", "--no-ff", "-m", "Merge pull request #1 from docs", "docs")
    out = stack.commit({"k.py": without}, "k.py: f15 goes (to k2.py, next)")
    into = stack.commit({"k2.py": b"import torch\n\n\n" + functions([15])}, "k2.py: f15",
                        tag="v2")
    kept(stack, f"k.py: the code it removes was moved to k2.py by commits {out} (out of k.py) "
         f"and {into} (into k2.py), and is there")


OLD = b"scale = torch.finfo(torch.float8_e4m3fn).max"
FIX = b"scale = torch.finfo(torch.float8_e4m3fnuz).max"


def module(line: bytes, only=range(20)) -> bytes:
    f7 = b"def f7(x):\n    y = x + 7\n    %s\n    y = y.contiguous()\n" % line
    return b"".join(f7 + b"    return y * scale, 'f7'\n\n\n" if i == 7 else
                    b"def f%d(x):\n    y = x + %d\n    return y\n\n\n" % (i, i) for i in only)


@pytest.mark.parametrize("moved_to", ["k2.py", "ké.py"])
def test_a_landing_undone_by_a_stale_move_in_two_commits_is_no_landing(tmp_path, moved_to):
    """The fix lands; then f7.. leave k.py (fixed) in one commit and come into k2.py from a
    tree before the landing (the old line) in the next. Before: "upstreamed (high)" by the
    history, dropped, and k2.py computes the old scale. Into a file whose name git writes
    quoted (`"k\\303\\251.py"` in its lists and diffs), the file is found by its content and
    its diff read under that name alike."""
    stack = OneUpstreamStack(tmp_path, {"k.py": module(OLD)})
    stack.add_fix("fix", "k.py", module(OLD), module(FIX))
    stack.commit({"k.py": module(FIX)}, "fp8: e4m3fnuz max on ROCm (#12)")
    out = stack.commit({"k.py": module(FIX, range(7))}, f"k.py: f7.. go to {moved_to}")
    stack.commit({moved_to: module(OLD, range(7, 20))}, f"{moved_to}: f7.. (from a stale branch)",
                 tag="v2")
    status = stack.json("status", "--against", "up=v2", expect=None)
    ((patch,),) = [status["patches"]]
    assert patch["state"] != "upstreamed" and patch["rebase"] != "drop", patch
    assert f"history: commit {out} undoes this change (reverses part of it in k.py)" in \
        patch["evidence"], patch["evidence"]
    rc, _, err = stack.cli("rebase", "--to", "up=v2", expect=None)
    assert rc == 3, err
    stack.cli("rebase", "--abort")
    assert stack.series("up") == ["fix.patch"]


def test_a_stale_move_in_two_commits_among_other_files_wrapped_otherwise_is_no_landing(tmp_path):
    """As above, the old line put into k2.py wrapped over three lines (a formatter's), and both
    commits of the move rewriting a table of tuned shapes too: the old code is found in k2.py
    among the commits' other files however git's lines break it, and the fix is kept."""
    table = b"".join(b"%d,%d,%d\n" % (m, m * 2, m * 3) for m in range(400))
    stack = OneUpstreamStack(tmp_path, {"k.py": module(OLD), "tuned.csv": table})
    stack.add_fix("fix", "k.py", module(OLD), module(FIX))
    stack.commit({"k.py": module(FIX)}, "fp8: e4m3fnuz max on ROCm (#12)")
    out = stack.commit({"k.py": module(FIX, range(7)), "tuned.csv": table.replace(b",", b";")},
                       "k.py: f7.. go to k2.py; retune")
    wrapped = module(OLD, range(7, 20)).replace(
        b"    " + OLD + b"\n",
        b"    scale = torch.finfo(\n        torch.float8_e4m3fn\n    ).max\n")
    assert OLD not in wrapped
    stack.commit({"k2.py": wrapped, "tuned.csv": table}, "k2.py: f7.. (from a stale branch)",
                 tag="v2")
    status = stack.json("status", "--against", "up=v2", expect=None)
    ((patch,),) = [status["patches"]]
    assert patch["state"] != "upstreamed" and patch["rebase"] != "drop", patch
    assert f"history: commit {out} undoes this change (reverses part of it in k.py)" in \
        patch["evidence"], patch["evidence"]


def moved_f15(tmp_path, *, reworded_there: bool = False) -> tuple[OneUpstreamStack, str]:
    """The fix deletes f15 from k.py; upstream moves f15 to k2.py (k.py re-exports it), as it
    is or reworded there."""
    v1 = functions(range(20))
    stack = OneUpstreamStack(tmp_path, {"k.py": v1})
    without = functions([i for i in range(20) if i != 15])
    stack.add_fix("fix", "k.py", v1, without)
    moved = reworded([15]) if reworded_there else functions([15])
    moving = stack.commit({"k.py": without + b"from k2 import f15\n",
                           "k2.py": b"import torch\n\n\n" + moved},
                          "split k.py: f15 goes to k2.py", tag="v2")
    return stack, moving


def test_bring_back_of_a_removal_of_code_upstream_moved_is_no_landing(tmp_path):
    """The rebase stopped on the fix (unsure: the code moved) and `--skip` set it aside; then
    `bring-back fix`. Before: "has landed upstream meanwhile", kept as upstreamed/fix.patch
    (bring-back judged without the history). Now it stops as the rebase did, naming k2.py,
    and done as it says, the fix deletes f15 from k2.py."""
    stack, moving = moved_f15(tmp_path)
    stack.cli("rebase", "--to", "up=v2", expect=3)
    stack.cli("rebase", "--skip", expect=1)
    rc, out, err = stack.cli("bring-back", "fix", expect=3)
    assert f"k.py: the code it removes was moved to k2.py by commit {moving}, and is there" \
        in err, err
    assert "the code the fix takes out is in k2.py now; if the fix is still needed, take it " \
        "out there (`patchforge add k2.py` brings it into the worktree) and `patchforge " \
        "bring-back --continue`" in err, err
    assert not (stack.root / "series" / "up" / "upstreamed" / "fix.patch").exists()
    assert (stack.root / "series" / "up" / "skipped" / "fix.patch").exists()
    stack.cli("add", "k2.py")
    work = stack.root / ".patchforge" / "work" / "up" / "k2.py"
    work.write_bytes(work.read_bytes().replace(functions([15]), b""))
    stack.cli("bring-back", "--continue")
    assert stack.series("up") == ["fix.patch"]
    stack.cli("overlays")
    assert b"def f15" not in (stack.root / "overlays" / "up" / "k2.py").read_bytes()


def test_the_stop_on_a_removal_of_moved_code_names_the_file_and_its_way_on_works(tmp_path):
    """The stop said "if the target has the fix, `--skip` sets the patch aside" and named no
    other file: the target has f15 (in k2.py), which reads as "has the fix". Now it names
    k2.py and says to take the code out there; done as it says, the fix deletes f15 from
    k2.py."""
    stack, _ = moved_f15(tmp_path)
    _, _, err = stack.cli("rebase", "--to", "up=v2", expect=3)
    assert "the code the fix takes out is in k2.py now; if the fix is still needed, take it " \
        "out there (`patchforge add k2.py` brings it into the worktree) and --continue" in err, \
        err
    stack.cli("add", "k2.py")
    work = stack.root / ".patchforge" / "work" / "up" / "k2.py"
    work.write_bytes(work.read_bytes().replace(functions([15]), b""))
    stack.cli("rebase", "--continue")
    assert stack.series("up") == ["fix.patch"]
    stack.cli("overlays")
    assert b"def f15" not in (stack.root / "overlays" / "up" / "k2.py").read_bytes()


def test_a_fix_that_moves_a_files_code_itself_is_still_a_landing(tmp_path):
    """The fix folds f15.py into k.py itself (deletes the file, adds its functions to k.py);
    upstream lands that very commit. The code it deletes is in k.py because the fix put it
    there: a landing, dropped (AITER's 5ce8f62187 moves an asm header's code so)."""
    f15 = b"import torch\n\n\n" + functions(range(15, 18))
    stack = OneUpstreamStack(tmp_path, {"k.py": functions(range(10)), "f15.py": f15})
    folded = functions(range(10)) + functions(range(15, 18))
    diff = stack.upstream.diff({"f15.py": None, "k.py": folded})
    add_patch_file(stack.root, "up", "fix.patch", (
        "Description: fold f15.py into k.py\nAuthor: Test Author <author@example.com>\n"
        f"Upstream-Status: Pending\nUpstream: up\nBase: {stack.base}\n\nOne module.\n---\n"
    ).encode() + diff)
    stack.commit({"f15.py": None, "k.py": folded}, "fold f15.py into k.py (#31)", tag="v2")
    stack.dropped_as_landed()


def test_a_fix_that_folds_a_file_into_another_edited_is_still_a_landing(tmp_path):
    """As above, the fix rewording each function it folds into k.py: upstream lands that
    commit; the code it deletes lives on in k.py because the fix put it there."""
    f15 = b"import torch\n\n\n" + functions(range(15, 18))
    stack = OneUpstreamStack(tmp_path, {"k.py": functions(range(10)), "f15.py": f15})
    folded = b"import logging\n" + functions(range(10)) + b"log = logging.getLogger()\n\n\n" \
        + reworded(range(15, 18))
    diff = stack.upstream.diff({"f15.py": None, "k.py": folded})
    add_patch_file(stack.root, "up", "fix.patch", (
        "Description: fold f15.py into k.py\nAuthor: Test Author <author@example.com>\n"
        f"Upstream-Status: Pending\nUpstream: up\nBase: {stack.base}\n\nOne module.\n---\n"
    ).encode() + diff)
    stack.commit({"f15.py": None, "k.py": folded}, "fold f15.py into k.py (#31)", tag="v2")
    stack.dropped_as_landed()


def diff_trees_run(trace) -> list[str]:
    """The `git diff-tree -p` commands in GIT_TRACE's file `trace`, each as traced."""
    return [line for line in trace.read_text().splitlines()
            if "trace: built-in: git diff-tree" in line and " -p " in line]


def test_the_commits_of_a_stale_move_are_diffed_only_in_the_files_that_can_hold_the_code(
        tmp_path, monkeypatch):
    """The stale move in two commits among a table of tuned shapes rewritten by both: the
    history tells the files that can hold the old code or the fix's by their content before
    and after each commit, and asks git's diff of those alone (k2.py), not of every file of
    the commits beside (the table, whose diff was most of git's work on a long history). The
    verdict is the one the whole diffs give."""
    table = b"".join(b"%d,%d,%d\n" % (m, m * 2, m * 3) for m in range(400))
    stack = OneUpstreamStack(tmp_path, {"k.py": module(OLD), "tuned.csv": table})
    stack.add_fix("fix", "k.py", module(OLD), module(FIX))
    stack.commit({"k.py": module(FIX)}, "fp8: e4m3fnuz max on ROCm (#12)")
    out = stack.commit({"k.py": module(FIX, range(7)), "tuned.csv": table.replace(b",", b";")},
                       "k.py: f7.. go to k2.py; retune")
    stack.commit({"k2.py": module(OLD, range(7, 20)), "tuned.csv": table},
                 "k2.py: f7.. (from a stale branch)", tag="v2")
    trace = tmp_path / "trace"
    monkeypatch.setenv("GIT_TRACE", str(trace))
    status = stack.json("status", "--against", "up=v2", expect=None)
    monkeypatch.delenv("GIT_TRACE")
    ((patch,),) = [status["patches"]]
    assert patch["state"] != "upstreamed" and patch["rebase"] != "drop", patch
    assert f"history: commit {out} undoes this change (reverses part of it in k.py)" in \
        patch["evidence"], patch["evidence"]
    diffs = diff_trees_run(trace)
    assert any(line.endswith(" -- k2.py") for line in diffs), diffs
    assert not [line for line in diffs if line.endswith(" --") or "tuned.csv" in line], diffs


def test_an_old_twin_moved_beside_the_fixed_codes_move_undoes_no_landing(tmp_path):
    """The fix lands; f7.. leave k.py (fixed) in one commit, and in the next a stale copy of
    them moves from old.py into k2.py: the old code is put into k2.py and taken out of old.py,
    a move of a twin, not the old code put back. The landing stands (the history's word is
    that commit's landing). Told apart by old.py's content before the commit: its content
    after it holds neither code."""
    stack = OneUpstreamStack(tmp_path, {"k.py": module(OLD), "old.py": module(OLD, range(7, 20))})
    stack.add_fix("fix", "k.py", module(OLD), module(FIX))
    landed = stack.commit({"k.py": module(FIX)}, "fp8: e4m3fnuz max on ROCm (#12)")
    stack.commit({"k.py": module(FIX, range(7))}, "k.py: f7.. go to k2.py")
    stack.commit({"k2.py": module(OLD, range(7, 20)), "old.py": b"# moved to k2.py\n"},
                 "old.py: into k2.py", tag="v2")
    status = stack.json("status", "--against", "up=v2", expect=None)
    ((patch,),) = [status["patches"]]
    assert not any("undoes this change" in line for line in patch["evidence"]), \
        patch["evidence"]
    assert any(landed in line for line in patch["evidence"]), patch["evidence"]


def test_the_contents_before_the_commits_beside_are_read_only_when_one_after_holds_the_old_code(
        tmp_path, monkeypatch):
    """The fix lands; f7.. leave k.py (fixed) in one commit, and in the next a stale copy of
    the old code is taken out of old.py: no file's content after either commit holds the old
    code, so none of their blocks puts it back, and the files whose content before holds it
    (old.py) are not diffed. The landing stands, as when their diffs were read."""
    stack = OneUpstreamStack(tmp_path, {"k.py": module(OLD), "old.py": module(OLD, range(7, 20))})
    stack.add_fix("fix", "k.py", module(OLD), module(FIX))
    landed = stack.commit({"k.py": module(FIX)}, "fp8: e4m3fnuz max on ROCm (#12)")
    stack.commit({"k.py": module(FIX, range(7))}, "k.py: f7.. go")
    stack.commit({"old.py": b"# f7.. are gone\n"}, "old.py: the stale copy goes too", tag="v2")
    trace = tmp_path / "trace"
    monkeypatch.setenv("GIT_TRACE", str(trace))
    status = stack.json("status", "--against", "up=v2", expect=None)
    monkeypatch.delenv("GIT_TRACE")
    ((patch,),) = [status["patches"]]
    assert not any("undoes this change" in line for line in patch["evidence"]), \
        patch["evidence"]
    assert any(landed in line for line in patch["evidence"]), patch["evidence"]
    diffs = diff_trees_run(trace)
    assert not [line for line in diffs if "old.py" in line], diffs


def test_that_no_file_after_the_commits_beside_holds_the_old_code_is_kept_and_read_back(
        tmp_path):
    """As above, no file's content after the commits beside the one that takes the code out
    holds it: that answer is a function of the old code and those files' blob ids, kept in the
    cache (`kept/contents/`) by the first status and read back by the next, which then reads
    none of those contents (on AITER's main, 226 blobs, 10.1 MB made loose). The same landing
    each time; a kept answer cut short, damaged or gone is found again, and kept whole."""
    import os
    from pathlib import Path

    stack = OneUpstreamStack(tmp_path, {"k.py": module(OLD), "old.py": module(OLD, range(7, 20))})
    stack.add_fix("fix", "k.py", module(OLD), module(FIX))
    landed = stack.commit({"k.py": module(FIX)}, "fp8: e4m3fnuz max on ROCm (#12)")
    stack.commit({"k.py": module(FIX, range(7))}, "k.py: f7.. go")
    stack.commit({"old.py": b"# f7.. are gone\n"}, "old.py: the stale copy goes too", tag="v2")
    contents = Path(os.environ["PATCHFORGE_CACHE"]) / "kept" / "contents"

    def landing() -> list[str]:
        status = stack.json("status", "--against", "up=v2", expect=None)
        ((patch,),) = [status["patches"]]
        assert any(landed in line for line in patch["evidence"]), patch["evidence"]
        assert not any("undoes this change" in line for line in patch["evidence"])
        return patch["evidence"]

    first = landing()
    (made,) = [p for p in contents.iterdir() if p.name.startswith("git-none-holds-")]
    whole, read_back = made.read_bytes(), made.stat()
    assert landing() == first
    # Read back (the same file, its modification time set by the read), not found again.
    assert made.stat().st_ino == read_back.st_ino
    assert made.stat().st_mtime_ns > read_back.st_mtime_ns
    for damaged in (whole[:len(whole) // 2], whole[:-1] + bytes([whole[-1] ^ 1]), b""):
        made.write_bytes(damaged)
        assert landing() == first
        assert made.read_bytes() == whole
    made.unlink()
    assert landing() == first
    assert made.read_bytes() == whole


def folded_in_a_release(tmp_path):
    """fix.patch deleting f15.py, and v2 a release (a commit of hundreds of files, as a wheel
    upstream's version is) that folds f15.py into k2.py: (the stack, the stop's evidence)."""
    f15 = b"import torch\n\n\n" + functions(range(15, 18))
    stack = OneUpstreamStack(tmp_path, {"k.py": functions(range(10)), "f15.py": f15})
    deleting(stack, "f15.py")
    release = {f"pkg/m{k:03d}.py": b"def g%d(x):\n    return x + %d\n" % (k, k)
               for k in range(300)}
    moving = stack.commit({"f15.py": None, **release,
                           "k2.py": b"import os\nimport torch\n\n\n" + functions(range(30, 40))
                           + functions(range(15, 18))}, "release 2", tag="v2")
    return stack, f"f15.py: the code it deletes was moved to k2.py by commit {moving}, and is there"


def loose_kept(kept_dir) -> list:
    """The release's loose texts kept in the cache's `kept/` (beside git's kept answers)."""
    return sorted(p for p in kept_dir.iterdir() if p.name.startswith("loose-"))


def test_a_releases_loose_code_is_kept_once_made_and_read_back_alike(tmp_path):
    """A release that folds the file the fix deletes into another: the moved-code check makes
    each new file's loose code (whitespace and commas out) once and keeps it in the cache
    (`kept/`), and the next command reads it back instead of every blob: the same stop each
    time, the same where the kept file is cut short or empty, of the layout an earlier
    patchforge wrote (not synced), or its bytes damaged in another boot than the one that
    wrote it (a cache copied, then a crash: its CRC-32 is checked; it is made again, whole),
    and the same once it is gone."""
    import os
    import zlib
    from pathlib import Path

    from patchforge.store.kept import boot_id

    stack, evidence = folded_in_a_release(tmp_path)
    kept_dir = Path(os.environ["PATCHFORGE_CACHE"]) / "kept"
    kept(stack, evidence)
    (made,) = loose_kept(kept_dir)
    whole = made.read_bytes()
    assert b"deff15(x):y=x+15" in whole and b"defg299(x):returnx+299" in whole
    read_back = made.stat()
    kept(stack, evidence)
    assert loose_kept(kept_dir) == [made] and made.read_bytes() == whole
    # Read back, not made again (a file whose length or CRC-32 were written wrong would be
    # made again by every command, the same stop each time): the same file (made again, it
    # would be another, renamed over it), its modification time set by the read (used now).
    assert made.stat().st_ino == read_back.st_ino
    assert made.stat().st_mtime_ns > read_back.st_mtime_ns
    first, rest = whole.split(b"\n", 1)
    head, crc, size, boot = first.rsplit(b" ", 3)
    assert boot == boot_id() and crc == b"%08x" % zlib.crc32(rest)
    other_boot = b" ".join([head, crc, size, b"0" * len(boot)]) + b"\n"
    zeroed = rest.replace(b"deff15(x)", bytes(9))
    for damaged in (whole[:len(whole) // 2], other_boot + rest.replace(b"15", b"16"),
                    other_boot + zeroed, b"patchforge loose code 2 %s %s\n" % (crc, size) + rest,
                    b""):
        made.write_bytes(damaged)
        kept(stack, evidence)
        assert made.read_bytes() == whole
    made.unlink()
    kept(stack, evidence)
    assert made.read_bytes() == whole


def test_a_releases_loose_code_reaches_the_disk_before_it_is_named_in_the_cache(tmp_path):
    """The release's loose code is kept synced: its bytes reach the disk before the file is
    named (a file under its name is whole whatever crash comes after, so no CRC-32 of its
    18.7 MB, for a vllm release, is taken at each read). A disk that reports the write failed
    at the sync (EIO, injected into the command's fsync calls by strace) keeps nothing, and
    the command answers as it does with the file; the next command keeps it."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    from helpers.env import REPO_ROOT, need_tool

    need_tool("strace")
    if subprocess.run(["strace", "-qq", "-o", os.devnull, sys.executable, "-c", "pass"],
                      capture_output=True).returncode != 0:
        pytest.skip("strace cannot trace processes here")
    stack, evidence = folded_in_a_release(tmp_path)
    kept_dir = Path(os.environ["PATCHFORGE_CACHE"]) / "kept"
    # A first command fetches the release (git syncs its pack) and keeps the other answers.
    kept(stack, evidence)
    for made in loose_kept(kept_dir):
        made.unlink()
    command = [sys.executable, "-m", "patchforge", "--root", str(stack.root), "status",
               "--against", "up=v2", "--json"]
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    failing = subprocess.run(["strace", "-qq", "-f", "-o", os.devnull, "-e", "trace=fsync",
                              "-e", "inject=fsync:error=EIO", *command],
                             env=env, capture_output=True)
    ((patch,),) = [json.loads(failing.stdout)["patches"]]
    assert (patch["state"], patch["rebase"]) == ("unsure", "stop"), failing.stderr
    assert any(evidence in line for line in patch["evidence"]), patch["evidence"]
    assert loose_kept(kept_dir) == []
    assert not any(p.name.startswith(".loose-") for p in kept_dir.iterdir())
    kept(stack, evidence)
    (made,) = loose_kept(kept_dir)
    assert made.read_bytes().startswith(b"patchforge loose code 4 ")


def test_a_releases_loose_code_is_read_back_without_its_crc_in_the_boot_that_wrote_it(
        tmp_path):
    """The kept loose code's CRC-32 (a vllm release's 18.7 MB: 8 ms of every later command's
    CPU) is checked only in another boot than the one that wrote the file: synced before it
    was named, and no crash since, a file of this boot is the bytes written. A file of this
    boot whose CRC-32 field is wrong is read back as it is (the same file, not made again);
    the same file naming another boot is checked, and made again."""
    import os
    from pathlib import Path

    stack, evidence = folded_in_a_release(tmp_path)
    kept_dir = Path(os.environ["PATCHFORGE_CACHE"]) / "kept"
    kept(stack, evidence)
    (made,) = loose_kept(kept_dir)
    whole = made.read_bytes()
    first, rest = whole.split(b"\n", 1)
    head, crc, size, boot = first.rsplit(b" ", 3)
    wrong = b"%08x" % (int(crc, 16) ^ 1)
    made.write_bytes(b" ".join([head, wrong, size, boot]) + b"\n" + rest)
    written = made.stat().st_ino
    kept(stack, evidence)
    assert made.stat().st_ino == written and made.read_bytes().split(b" ")[4] == wrong
    made.write_bytes(b" ".join([head, wrong, size, b"0" * len(boot)]) + b"\n" + rest)
    kept(stack, evidence)
    assert made.stat().st_ino != written and made.read_bytes() == whole


def test_a_releases_loose_code_interrupted_or_refused_on_its_way_to_the_cache_leaves_nothing(
        tmp_path):
    """Ctrl-C (a real SIGINT) while the release's loose code is written to the cache: the
    command exits 130 and leaves no temporary file in `kept/`; a disk that refuses the write
    (EIO) keeps nothing, and the command answers as it does with the file."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    from helpers.env import REPO_ROOT

    stack, evidence = folded_in_a_release(tmp_path)
    kept_dir = Path(os.environ["PATCHFORGE_CACHE"]) / "kept"
    # A first command keeps the history's walk and rename pairing too: read back from then
    # on, they leave the release's loose code the only text the next commands keep.
    kept(stack, evidence)
    for made in loose_kept(kept_dir):
        made.unlink()
    answers = sorted(kept_dir.iterdir())
    command = [sys.executable, "-m", "patchforge", "--root", str(stack.root), "status",
               "--against", "up=v2", "--json"]
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "PATCHFORGE_FAULT": "keep:1",
           "PATCHFORGE_FAULT_MODE": "interrupt"}
    interrupted = subprocess.run(command, env=env, capture_output=True)
    assert interrupted.returncode == 130, interrupted.stderr
    assert sorted(kept_dir.iterdir()) == answers
    refused = subprocess.run(command, env={**env, "PATCHFORGE_FAULT_MODE": "raise"},
                             capture_output=True)
    ((patch,),) = [json.loads(refused.stdout)["patches"]]
    assert patch["state"] == "unsure", patch
    assert any(evidence in line for line in patch["evidence"]), patch["evidence"]
    assert sorted(kept_dir.iterdir()) == answers
    kept(stack, evidence)
    assert len(loose_kept(kept_dir)) == 1


def test_the_caches_kept_loose_code_holds_the_releases_last_used_and_no_more(tmp_path):
    """A stack asked about one new release after another (a nightly each night): each
    release's loose code was kept in the cache's `kept/` for ever, one file (18.7 MB for vllm)
    per release. `kept/` now holds the KEPT_AT_MOST texts last made or read: writing another
    removes the least recently used (a release read again stays), and a release whose text
    was removed is judged alike, its text made again."""
    import os
    from pathlib import Path

    at_most = 8  # as docs/reference.md says (UpstreamStore.KEPT_AT_MOST)
    f15 = b"import torch\n\n\n" + functions(range(15, 18))
    stack = OneUpstreamStack(tmp_path, {"k.py": functions(range(10)), "f15.py": f15})
    deleting(stack, "f15.py")
    kept_dir = Path(os.environ["PATCHFORGE_CACHE"]) / "kept"
    evidence: dict[str, str] = {}

    def release(n: int) -> None:
        # Each its own commit on the pin, as the nightlies of a wheel upstream are imported.
        git(stack.up, "checkout", "-q", "-B", f"r{n}", "v1")
        files = {f"pkg/m{k:03d}.py": b"def g%d(x):\n    return x + %d\n" % (k, k + n)
                 for k in range(300)}
        moving = stack.commit({"f15.py": None, **files,
                               "k2.py": b"import os\nimport torch\n\n\n"
                               + functions(range(30, 40)) + functions(range(15, 18))},
                              f"release {n}", tag=f"r{n}")
        evidence[f"r{n}"] = f"f15.py: the code it deletes was moved to k2.py by commit " \
            f"{moving}, and is there"

    def judged(tag: str) -> None:
        status = stack.json("status", "--against", f"up={tag}", expect=None)
        ((patch,),) = [status["patches"]]
        assert (patch["state"], patch["rebase"]) == ("unsure", "stop"), patch
        assert any(evidence[tag] in line for line in patch["evidence"]), patch["evidence"]

    def kept() -> set[str]:
        return {path.name.rsplit("-", 1)[1] for path in loose_kept(kept_dir)}

    def commit_of(tag: str) -> str:
        return git(stack.up, "rev-parse", f"{tag}^{{commit}}").strip()

    for n in range(at_most):
        release(n)
        judged(f"r{n}")
    assert kept() == {commit_of(f"r{n}") for n in range(at_most)}
    judged("r0")  # read again: the most recently used now
    release(at_most)
    judged(f"r{at_most}")
    assert kept() == {commit_of(f"r{n}") for n in (0, *range(2, at_most + 1))}, \
        "r1, the least recently used, goes"
    assert not [p for p in kept_dir.iterdir() if p.name.startswith(".")]
    judged("r1")  # made again, and judged alike
    assert commit_of("r1") in kept() and commit_of("r2") not in kept() and \
        len(kept()) == at_most


def test_the_first_command_asking_about_a_release_names_its_files_from_the_walk(
        tmp_path, monkeypatch):
    """The first command asking about a release (nothing kept yet) makes each new file's loose
    code from the blobs the range's walk names (`git log --raw`, a name git quotes read back
    as the file's): no `git diff-tree -r` lists the release's files again. The code folded
    into a file whose name git quotes (not ASCII) is found there, and the next command, which
    reads the kept texts back, says the same."""
    import json
    import os
    from pathlib import Path

    f15 = b"import torch\n\n\n" + functions(range(15, 18))
    stack = OneUpstreamStack(tmp_path, {"k.py": functions(range(10)), "f15.py": f15})
    deleting(stack, "f15.py")
    release = {f"pkg/m{k:03d}.py": b"def g%d(x):\n    return x + %d\n" % (k, k)
               for k in range(300)}
    moving = stack.commit({"f15.py": None, **release,
                           "pkg/k2 \u00fc.py": b"import os\nimport torch\n\n\n"
                           + functions(range(30, 40)) + functions(range(15, 18))},
                          "release 2", tag="v2")
    evidence = f"f15.py: the code it deletes was moved to pkg/k2 \u00fc.py by commit {moving}"
    kept_dir = Path(os.environ["PATCHFORGE_CACHE"]) / "kept"
    trace = tmp_path / "trace.json"
    monkeypatch.setenv("GIT_TRACE2_EVENT", str(trace))
    kept(stack, evidence)
    listed = [event["argv"] for event in map(json.loads, trace.read_text().splitlines())
              if event["event"] == "start" and "diff-tree" in event["argv"]
              and "--diff-filter=d" in event["argv"]]
    assert listed == [], [a[a.index("diff-tree") - 2:] for a in listed]
    (made,) = loose_kept(kept_dir)
    assert b"pkg/k2 \xc3\xbc.py\n" in made.read_bytes()
    monkeypatch.delenv("GIT_TRACE2_EVENT")
    kept(stack, evidence)
    assert loose_kept(kept_dir) == [made]
