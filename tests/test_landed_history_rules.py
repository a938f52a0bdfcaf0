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


def lost_in_merge(stack: OneUpstreamStack, path: str, fixed: bytes, theirs: bytes,
                  then: bytes | None = None) -> list:
    """Upstream lands the fix (#12) on main (then commits `then` there) while a branch forked
    at v1 rewrites the line; the merge conflicts, and its resolution takes the branch's file
    (v2). status's word on each patch."""
    up = stack.up
    git(up, "checkout", "-q", "-b", "feature")
    stack.commit({path: theirs}, "a helper for it")
    git(up, "checkout", "-q", "-")
    stack.commit({path: fixed}, "the fix (#12)")
    if then is not None:
        stack.commit({path: then}, "a later change on main")
    assert subprocess.run(["git", "merge", "-q", "--no-edit", "feature"], cwd=up,
                          capture_output=True).returncode != 0
    stack.commit({path: theirs}, "Merge branch 'feature'", tag="v2")
    assert len(git(up, "log", "-1", "--format=%P").split()) == 2
    return stack.json("status", "--against", "up=v2", expect=None)["patches"]


def test_a_landing_a_merge_resolution_lost_is_no_landing(tmp_path):
    old = scale_module(b"scale = torch.finfo(torch.float8_e4m3fn).max")
    fixed = scale_module(b"scale = torch.finfo(torch.float8_e4m3fnuz).max")
    theirs = scale_module(b"scale = get_fp8_max(dtype=torch.float8_e4m3fn)")
    stack = OneUpstreamStack(tmp_path, {"k.py": old})
    stack.add_fix("fix", "k.py", old, fixed)
    (patch,) = lost_in_merge(stack, "k.py", fixed, theirs)
    assert patch["state"] != "upstreamed" and patch["rebase"] != "drop", patch
    assert any("no later commit took it out" in line for line in patch["evidence"]), patch
    assert b"e4m3fnuz" in stack.kept_by_rebase("up=v2", "k.py")


def test_a_lost_landing_is_no_landing_whatever_the_rest_of_the_file_has(tmp_path):
    """Before, each of these was dropped as "upstreamed (high)", v2 without the fix: the fix's
    line inside a longer line of the file (`self.scale = ...`, a comment naming it), every
    line the fix adds short (`BM = 128`), a branch forked before the landing that took an
    equal line out elsewhere in the file (listed after the landing, so taken for upstream's
    later rewrite of the fix's line), and a commit after the landing that moved the fix's
    line below its neighbour (taken out and put in again: not taken out)."""
    fix = b"scale = torch.finfo(torch.float8_e4m3fnuz).max"
    cases = {
        "inside": (b"scale = torch.finfo(torch.float8_e4m3fn).max", fix,
                   b"scale = get_fp8_max(dtype=torch.float8_e4m3fn)", b"self." + fix,
                   b"self." + fix),
        "comment": (b"scale = torch.finfo(torch.float8_e4m3fn).max", fix,
                    b"scale = get_fp8_max(dtype=torch.float8_e4m3fn)",
                    b"# NOTE: " + fix + b" on ROCm", b"# NOTE: " + fix + b" on ROCm"),
        "short": (b"BM = 64\n    BN = 64\n    BK = 32", b"BM = 128\n    BN = 32\n    BK = 64",
                  b"BM, BN, BK = pick_tile(x.shape)", b"y = 3", b"y = 3"),
        "parallel": (b"scale = torch.finfo(torch.float8_e4m3fn).max", fix,
                     b"scale = get_fp8_max(dtype=torch.float8_e4m3fn)", fix,
                     b"scale = get_fp8_max(dtype=torch.float8_e4m3fnuz)"),
        "moved": (b"scale = torch.finfo(torch.float8_e4m3fn).max", fix,
                  b"scale = get_fp8_max(dtype=torch.float8_e4m3fn)", b"y = 3", b"y = 3"),
    }
    for name, (old, new, rewritten, f3, f3_theirs) in cases.items():
        def text(f7: bytes, f3: bytes) -> bytes:
            return scale_module(f7).replace(b"    y = x + 3\n", b"    y = x + 3\n    %s\n" % f3)

        stack = OneUpstreamStack(tmp_path / name, {"k.py": text(old, f3)})
        stack.add_fix("fix", "k.py", text(old, f3), text(new, f3))
        moved = text(new, f3).replace(b"    %s\n    return y * scale\n" % fix,
                                      b"    return y * scale\n    %s\n" % fix)
        (patch,) = lost_in_merge(stack, "k.py", text(new, f3), text(rewritten, f3_theirs),
                                 moved if name == "moved" else None)
        assert patch["state"] != "upstreamed" and patch["rebase"] != "drop", (name, patch)
        assert any("no later commit took it out" in line for line in patch["evidence"]), \
            (name, patch)


def test_a_removal_a_merge_resolution_lost_is_no_landing(tmp_path):
    """The fix removes f7's `torch.cuda.synchronize()`; main lands the removal (#12), a branch
    forked before it rewrote the line (`torch.cuda.current_stream().synchronize()`), and the
    merge took the branch's. Before: "upstreamed (high)", dropped, v2 syncing there again
    (the fix adds no line to look for)."""
    def synced(line: bytes) -> bytes:
        return scale_module(b"y = gemm_a8w8(x, w, scale)\n    " + line if line else
                            b"y = gemm_a8w8(x, w, scale)")

    old = synced(b"torch.cuda.synchronize()")
    stack = OneUpstreamStack(tmp_path, {"k.py": old})
    stack.add_fix("fix", "k.py", old, synced(b""))
    (patch,) = lost_in_merge(stack, "k.py", synced(b""),
                             synced(b"torch.cuda.current_stream().synchronize()"))
    assert patch["state"] != "upstreamed" and patch["rebase"] != "drop", patch
    assert any("(made beside the landing) put where the fix takes a line out" in line
               for line in patch["evidence"]), patch


def test_a_moved_line_a_merge_resolution_lost_is_no_landing(tmp_path):
    """The fix changes f7's scale and moves its `torch.cuda.synchronize()` into `if debug:`;
    main lands both (#12), a branch forked before it changed the `if`, and the merge took the
    branch's block (the sync outside the `if` again). Before: "upstreamed (high)", dropped:
    the moved line, whitespace removed, is in the target, where the fix took it from."""
    def f7(scale: bytes, inside: bool, condition: bytes = b"debug") -> bytes:
        sync = b"torch.cuda.synchronize()\n"
        tail = (b"    if %s:\n        %s        log(y)\n" % (condition, sync) if inside else
                b"    %s    if %s:\n        log(y)\n" % (sync, condition))
        return b"".join(b"def f7(x, debug=False):\n    %s\n    y = gemm_a8w8(x, w, scale)\n"
                        % scale + tail + b"    return y\n\n\n" if i == 7 else
                        b"def f%d(x):\n    y = x + %d\n    return y\n\n\n" % (i, i)
                        for i in range(20))

    old, fix = b"scale = torch.finfo(torch.float8_e4m3fn).max", \
        b"scale = torch.finfo(torch.float8_e4m3fnuz).max"
    stack = OneUpstreamStack(tmp_path, {"k.py": f7(old, False)})
    stack.add_fix("fix", "k.py", f7(old, False), f7(fix, True))
    up = stack.up
    git(up, "checkout", "-q", "-b", "feature")
    stack.commit({"k.py": f7(old, False, b"debug or TRACE")}, "trace")
    git(up, "checkout", "-q", "-")
    stack.commit({"k.py": f7(fix, True)}, "fp8, and sync only when debugging (#12)")
    assert subprocess.run(["git", "merge", "-q", "--no-edit", "feature"], cwd=up,
                          capture_output=True).returncode != 0
    stack.commit({"k.py": f7(fix, False, b"debug or TRACE")}, "Merge branch 'feature'",
                 tag="v2")
    assert len(git(up, "log", "-1", "--format=%P").split()) == 2
    status = stack.json("status", "--against", "up=v2", expect=None)
    ((patch,),) = [status["patches"]]
    assert patch["state"] != "upstreamed" and patch["rebase"] != "drop", patch
    assert any("only indented otherwise, and no later commit moved it" in line
               for line in patch["evidence"]), patch


def test_a_binary_landing_a_merge_resolution_lost_is_no_landing(tmp_path):
    """A kernel blob (hsa/gemm.co) the fix rebuilds, landed on main, while a branch retuned
    the same blob and the merge took the branch's. Before: "upstreamed (high)" (the evidence
    itself said the file is neither the pre-image nor the post-image), dropped."""
    def blob(word: bytes) -> bytes:
        return b"\x00\x01CO" + word * 50 + b"\x00"

    stack = OneUpstreamStack(tmp_path, {"hsa/gemm.co": blob(b"old"), "k.py": b"x = 1\n"})
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    git(scratch, "init", "-q")
    (scratch / "hsa").mkdir()
    (scratch / "hsa" / "gemm.co").write_bytes(blob(b"old"))
    git(scratch, "add", "-A")
    git(scratch, "commit", "-q", "-m", "old")
    (scratch / "hsa" / "gemm.co").write_bytes(blob(b"fixed"))
    diff = subprocess.run(["git", "diff", "--full-index", "--binary"], cwd=scratch, check=True,
                          capture_output=True).stdout
    add_patch_file(stack.root, "up", "fix.patch", patch_bytes(
        "up", stack.base, "gemm.co rebuilt for gfx950", diff))
    (patch,) = lost_in_merge(stack, "hsa/gemm.co", blob(b"fixed"), blob(b"theirs"))
    assert patch["state"] != "upstreamed" and patch["rebase"] != "drop", patch
    assert any("is not the file the fix makes" in line for line in patch["evidence"]), patch


def test_a_squash_landed_run_a_merge_resolution_lost_is_no_landing(tmp_path):
    """Two patches (e4m3fnuz, then halved) landed as one commit (#12), then a merge took a
    branch's rewrite of the line. Before: both "upstreamed (high) ... the cumulative change of
    patches 1-2 (a squash merge)", both dropped; the run's landing never asked whether the
    target has what it adds."""
    old = scale_module(b"scale = torch.finfo(torch.float8_e4m3fn).max")
    first = scale_module(b"scale = torch.finfo(torch.float8_e4m3fnuz).max")
    second = scale_module(b"scale = torch.finfo(torch.float8_e4m3fnuz).max / 2.0")
    stack = OneUpstreamStack(tmp_path, {"k.py": old})
    stack.add_fix("p1", "k.py", old, first)
    stack.add_fix("p2", "k.py", first, second)
    patches = lost_in_merge(stack, "k.py", second,
                            scale_module(b"scale = get_fp8_max(dtype=torch.float8_e4m3fn)"))
    assert len(patches) == 2
    for patch in patches:
        assert patch["state"] != "upstreamed" and patch["rebase"] != "drop", patch
        assert any("patches 1-2" in line and "no later commit took it out" in line
                   for line in patch["evidence"]), patch


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
