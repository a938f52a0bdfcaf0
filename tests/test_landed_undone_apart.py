"""A landing a later commit undid by putting the old code back apart from the fix's place.
Before, each of these dropped the fix as "upstreamed (high)" (the rebase moved it to
upstreamed/, exit 0) though the target has the old code again: the history took a commit
undoing the change only when one of its change blocks was the fix's block reversed, or a block
of the old lines alone, and the commit's diff here is one block with the old line wrapped by a
formatter run on a stale tree beside a line it requoted, or the fix's line out of the patch's
file and the old line in the file the function moved to. Now the commit undoes the landing:
status keeps the fix (conflict, the rebase stops) and names the commit. And a removal of code
upstream moved to another file is no landing.
Real git upstreams, real commands: `status --against`, `rebase --to`."""
from __future__ import annotations

from helpers.project import OneUpstreamStack

OLD = b"scale = torch.finfo(torch.float8_e4m3fn).max"
FIX = b"scale = torch.finfo(torch.float8_e4m3fnuz).max"


def module(line: bytes, *, below: bool = False, only=range(20), quote: bytes = b"'") -> bytes:
    """Twenty small functions, f7 computing the scale by `line` (after `y.contiguous()` when
    `below`); `only`: those of them in this file."""
    f7 = (b"def f7(x):\n    y = x + 7\n    y = y.contiguous()\n    %s\n" if below else
          b"def f7(x):\n    y = x + 7\n    %s\n    y = y.contiguous()\n") % line
    return b"".join(f7 + b"    return y * scale, %sf7%s\n\n\n" % (quote, quote) if i == 7 else
                    b"def f%d(x):\n    y = x + %d\n    return y\n\n\n" % (i, i) for i in only)


def undone(stack: OneUpstreamStack, undoing: str) -> None:
    status = stack.json("status", "--against", "up=v2", expect=None)
    ((patch,),) = [status["patches"]]
    assert patch["state"] != "upstreamed" and patch["rebase"] != "drop", patch
    assert any(line.startswith(f"history: commit {undoing} undoes this change")
               for line in patch["evidence"]), patch["evidence"]
    assert FIX in stack.kept_by_rebase("up=v2", "k.py")


def test_the_old_line_put_back_wrapped_and_requoted_by_a_formatter_undoes_the_landing(
        tmp_path):
    """black run on a tree from before the landing: the old line wrapped over three lines,
    the quotes of the line after it made double (one block of git's diff: the fix's line and
    the next one out, the wrapped old line and the requoted one in)."""
    stack = OneUpstreamStack(tmp_path, {"k.py": module(OLD, below=True)})
    stack.add_fix("fix", "k.py", module(OLD, below=True), module(FIX, below=True))
    stack.commit({"k.py": module(FIX, below=True)}, "fp8: e4m3fnuz max on ROCm (#12)")
    wrapped = b"scale = torch.finfo(\n        torch.float8_e4m3fn\n    ).max"
    undoing = stack.commit({"k.py": module(wrapped, below=True, quote=b'"')}, "black",
                           tag="v2")
    undone(stack, undoing)


def test_the_function_moved_to_another_file_from_a_stale_copy_undoes_the_landing(tmp_path):
    stack = OneUpstreamStack(tmp_path, {"k.py": module(OLD)})
    stack.add_fix("fix", "k.py", module(OLD), module(FIX))
    stack.commit({"k.py": module(FIX)}, "fp8: e4m3fnuz max on ROCm (#12)")
    undoing = stack.commit({"k.py": module(OLD, only=range(7)),
                            "k2.py": module(OLD, only=range(7, 20))},
                           "split k.py (a branch rebased taking its side)", tag="v2")
    undone(stack, undoing)


def test_the_function_moved_to_another_file_with_the_fix_stays_landed(tmp_path):
    stack = OneUpstreamStack(tmp_path, {"k.py": module(OLD)})
    stack.add_fix("fix", "k.py", module(OLD), module(FIX))
    made = stack.commit({"k.py": module(FIX)}, "fp8: e4m3fnuz max on ROCm (#12)")
    stack.commit({"k.py": module(FIX, only=range(7)), "k2.py": module(FIX, only=range(7, 20))},
                 "split k.py", tag="v2")
    status = stack.json("status", "--against", "up=v2", expect=1)
    ((patch,),) = [status["patches"]]
    assert (patch["state"], patch["rebase"]) == ("upstreamed", "drop"), patch
    assert f"history: commit {made} makes this change (the same change)" in patch["evidence"]


def functions(only=range(20)) -> bytes:
    return b"".join(b"def f%d(x):\n    y = x + %d\n    torch.cuda.synchronize(device=x.device)\n"
                    b"    return y\n\n\n" % (i, i) for i in only)


def kept_as_moved(stack: OneUpstreamStack, moving: str, to: str) -> None:
    """status keeps the one fix (unsure, the rebase stops) and says k.py's code went to `to`."""
    status = stack.json("status", "--against", "up=v2", expect=None)
    ((patch,),) = [status["patches"]]
    assert (patch["state"], patch["rebase"]) == ("unsure", "stop"), patch
    assert f"k.py: the code it removes was moved to {to} by commit {moving}, and is there: " \
        "not taken as landed" in patch["evidence"], patch["evidence"]


def test_a_removal_of_code_upstream_moved_to_another_file_is_no_landing(tmp_path):
    """The fix deletes f15; upstream moves f15 as it is to k2.py (k.py re-exports it). Before:
    "upstreamed (high)", k.py's hunk reverse-applies, dropped, and the target still has f15.
    Now the move is said and the fix kept (unsure: the rebase stops for a human to decide)."""
    v1 = functions()
    stack = OneUpstreamStack(tmp_path, {"k.py": v1})
    without = functions([i for i in range(20) if i != 15])
    stack.add_fix("fix", "k.py", v1, without)
    moving = stack.commit({"k.py": without + b"from k2 import f15\n",
                           "k2.py": b"import torch\n\n" + functions([15])},
                          "split k.py: f15 goes to k2.py", tag="v2")
    kept_as_moved(stack, moving, "k2.py")
    assert b"def f15" not in stack.kept_by_rebase("up=v2", "k.py")


def test_an_import_line_a_landing_takes_out_that_another_file_gains_is_still_a_landing(
        tmp_path):
    """The landing of a backport that takes an import line out of k.py, while the same commit
    adds that very line to another module (which imports it too): the removal rule above took
    the line for code moved to k2.py and stopped the rebase ("unsure") on a real landing (on
    the vllm wheels' 300-patch series, 0118-landed.patch). A line or two is no moved block: the
    landing stands."""
    v1 = b"from m import (\n    alpha,\n    ChatCompletionNamedToolChoiceParam,\n)\n\n" + \
        functions()
    stack = OneUpstreamStack(tmp_path, {"k.py": v1})
    without = v1.replace(b"    ChatCompletionNamedToolChoiceParam,\n", b"")
    stack.add_fix("fix", "k.py", v1, without)
    stack.commit({"k.py": without, "k2.py": b"from m import (\n    ChatCompletionNamedToolChoice"
                  b"Param,\n)\n"}, "use the parameter in k2 only", tag="v2")
    status = stack.json("status", "--against", "up=v2", expect=None)
    ((patch,),) = [status["patches"]]
    assert patch["state"] == "upstreamed" and patch["rebase"] == "drop", patch


def test_a_removal_of_code_moved_reformatted_among_other_changed_files_is_no_landing(tmp_path):
    """The move of f15 to k3.py comes with a dozen other files changed: several have f15's
    names (`synchronize`, `device`) without its code, and z.py has had a twin of f15 all along
    (the commit changes another line of it). The moved copy is reformatted: a call wrapped
    over three lines with a trailing comma, `x + 15` spaced otherwise, a string's quotes made
    single. The check diffs only the files whose new content can hold the code (z.py and
    k3.py), not the commit's every file: k3.py is found (its commas and quotes read as
    put_in reads them), z.py (which puts no f15 in) is not taken for it, and the fix is kept
    (unsure), as when every file of the commit was diffed."""
    f15 = (b"def f15(x):\n    y = x + 15\n    torch.cuda.synchronize(device=x.device)\n"
           b"    return torch.where(y > 0, y, x), \"f15\"\n")
    v1 = functions(range(15)) + f15 + b"\n\n" + functions(range(16, 20))
    others = {f"m{i}.py": b"def g%d(x):\n    torch.cuda.synchronize(device=x.device)\n" % i
              for i in range(12)}
    others["z.py"] = b"import torch\n\n\n" + f15
    stack = OneUpstreamStack(tmp_path, {"k.py": v1, **others})
    without = functions([i for i in range(20) if i != 15])
    stack.add_fix("fix", "k.py", v1, without)
    moved = (b"import torch\n\n\ndef f15(x):\n    y = x+15\n    torch.cuda.synchronize(\n"
             b"        device=x.device,\n    )\n    return torch.where(y > 0, y, x), 'f15'\n")
    changed = {name: text + b"    return x\n" for name, text in others.items()}
    moving = stack.commit({"k.py": without + b"from k3 import f15\n", "k3.py": moved, **changed},
                          "split k.py: f15 goes to k3.py", tag="v2")
    kept_as_moved(stack, moving, "k3.py")
