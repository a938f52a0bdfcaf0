"""What the history may call landed. Before:
- a fix that changes whitespace only (in Python, a statement moved into the `if` by
  re-indenting it) was "made" by any commit that re-indented or stripped those lines (the
  blocks are compared with whitespace removed, and its two sides were then the same): a commit
  stripping trailing whitespace dropped the fix as upstreamed, the statement still outside the
  `if`;
- a fix upstream landed on its mainline and a merge's resolution then lost (it took the
  branch's rewrite of the line) was dropped as landed: the merge has no diff in the history,
  so nothing undid the landing, and the target has none of the fix's line;
- a fix deleting a file (a plugin that must not load) was dropped as landed when upstream
  renamed the file with a small change: the history, read without rename detection, took the
  rename for the deletion, and the target still ships the plugin under its new name.
Real git upstreams, real commands: `status --against`, `rebase --to`."""
from __future__ import annotations

import subprocess

from helpers.git import git
from helpers.project import OneUpstreamStack, add_patch_file, patch_bytes

F7 = (b"def f7(x):\n    if x.is_cuda:\n        y = x + 7\n"
      b"%storch.cuda.synchronize(x.device)%s\n    return y\n\n\n")


def module(indent: bytes = b"    ", trailing: bytes = b"  ") -> bytes:
    """Twenty small functions, f7's sync at `indent` (inside the `if` at 8 spaces)."""
    return b"".join(F7 % (indent, trailing) if i == 7 else
                    b"def f%d(x):\n    y = x + %d\n    return y\n\n\n" % (i, i)
                    for i in range(20))


def test_a_whitespace_only_fix_is_not_made_by_a_commit_changing_other_whitespace(tmp_path):
    v1 = module()
    stack = OneUpstreamStack(tmp_path, {"k.py": v1})
    stack.add_fix("fix", "k.py", v1, module(indent=b"        "))
    stack.commit({"k.py": module(trailing=b"")}, "strip trailing whitespace", tag="v2")
    status = stack.json("status", "--against", "up=v2", expect=None)
    ((patch,),) = [status["patches"]]
    assert patch["state"] != "upstreamed" and patch["rebase"] != "drop", patch
    assert b"        torch.cuda.synchronize" in stack.kept_by_rebase("up=v2", "k.py")


def test_a_whitespace_only_fix_upstream_made_as_it_is_still_lands_by_history(tmp_path):
    """The same re-indent made upstream, the line after it edited later (no reverse-apply
    finds it): the history still names the commit that made it."""
    v1 = module()
    stack = OneUpstreamStack(tmp_path, {"k.py": v1})
    stack.add_fix("fix", "k.py", v1, module(indent=b"        "))
    made = stack.commit({"k.py": module(indent=b"        ")}, "sync on the cuda path only")
    stack.commit({"k.py": module(indent=b"        ").replace(
        b"    return y\n\n\ndef f8", b"    return y.contiguous()\n\n\ndef f8")},
        "contiguous f7", tag="v2")
    status = stack.json("status", "--against", "up=v2", expect=1)
    ((patch,),) = [status["patches"]]
    assert (patch["state"], patch["rebase"]) == ("upstreamed", "drop"), patch
    assert f"history: commit {made} makes this change (the same change)" in patch["evidence"], \
        patch


def scale_module(line: bytes) -> bytes:
    return b"".join(b"def f7(x):\n    y = x + 7\n    %s\n    return y * scale\n\n\n" % line
                    if i == 7 else b"def f%d(x):\n    y = x + %d\n    return y\n\n\n" % (i, i)
                    for i in range(20))


def test_a_landing_a_merge_resolution_lost_is_no_landing(tmp_path):
    old = scale_module(b"scale = torch.finfo(torch.float8_e4m3fn).max")
    fixed = scale_module(b"scale = torch.finfo(torch.float8_e4m3fnuz).max")
    theirs = scale_module(b"scale = get_fp8_max(dtype=torch.float8_e4m3fn)")
    stack = OneUpstreamStack(tmp_path, {"k.py": old})
    stack.add_fix("fix", "k.py", old, fixed)
    up = stack.up
    git(up, "checkout", "-q", "-b", "feature")
    stack.commit({"k.py": theirs}, "fp8: get_fp8_max helper")
    git(up, "checkout", "-q", "-")
    stack.commit({"k.py": fixed}, "fp8: e4m3fnuz max on ROCm (#12)")
    # The merge conflicts on the line; its resolution takes the branch's.
    assert subprocess.run(["git", "merge", "-q", "--no-edit", "feature"], cwd=up,
                          capture_output=True).returncode != 0
    stack.commit({"k.py": theirs}, "Merge branch 'feature'", tag="v2")
    assert len(git(up, "log", "-1", "--format=%P").split()) == 2
    status = stack.json("status", "--against", "up=v2", expect=None)
    ((patch,),) = [status["patches"]]
    assert patch["state"] != "upstreamed" and patch["rebase"] != "drop", patch
    assert any("no later commit took it out" in line for line in patch["evidence"]), patch
    assert b"e4m3fnuz" in stack.kept_by_rebase("up=v2", "k.py")


def plugin(priority: bytes) -> bytes:
    return b"".join(b"def hook%d(registry):\n    registry.add('rocm_hook_%d', priority=%s)\n"
                    b"\n\n" % (i, i, priority if i == 3 else b"%d" % i) for i in range(10))


def test_a_deletion_of_a_file_upstream_renamed_with_a_change_is_no_landing(tmp_path):
    stack = OneUpstreamStack(tmp_path, {"plugins/rocm_override.py": plugin(b"3")})
    add_patch_file(stack.root, "up", "fix.patch", patch_bytes(
        "up", stack.base, "the ROCm override must not load",
        stack.upstream.diff({"plugins/rocm_override.py": None})))
    git(stack.up, "mv", "plugins/rocm_override.py", "plugins/rocm_moved.py")
    stack.commit({"plugins/rocm_moved.py": plugin(b"30")}, "the ROCm override moved", tag="v2")
    status = stack.json("status", "--against", "up=v2", expect=None)
    ((patch,),) = [status["patches"]]
    assert patch["state"] != "upstreamed" and patch["rebase"] != "drop", patch
    assert any("the file it deletes renamed upstream, is there: kept" in line
               for line in patch["evidence"]), patch
