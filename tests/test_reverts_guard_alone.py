"""A kept landing of two hunks (a guard at a function's top, `torch.cuda.synchronize()` before
its return) of which upstream later drops the guard alone, in a commit of other work. The
guard's context (two blank lines, the `def` line, a first body line every function of the
file shares) holds at several places, so its place cannot be told by its neighbours; its
whole pre-image is back at one place, and the commit that took the guard out made that place
and left the guard's lines in the file fewer times: taken back in part, whether or not
another function has the same guard (another kept fix's). The same drop with the guard moved
into another function, and a look-alike function holding the old code of a guard upstream
rewrote in the fix's own, are no take-back. Real git history, through the CLI."""
from __future__ import annotations

from helpers.project import OneUpstreamStack


def _kernel(n: int) -> bytes:
    steps = b"".join(b"    step%d = step%d + %d\n" % (i, i - 1, 100 * n + i) for i in range(1, 10))
    return b"def k%d(x):\n    step0 = x\n" % n + steps + b"    return step9\n"


HEAD = b'"""Kernels."""\nimport torch\n'
BASE = HEAD + b"".join(b"\n\n" + _kernel(n) for n in range(4))
GUARD = b"    if x is None and not torch.cuda.is_available():\n" \
    b"        raise ValueError('x is needed')\n"
SYNC = b"    torch.cuda.synchronize()\n"
K1, K2, K3 = _kernel(1), _kernel(2), _kernel(3)
FIXED = BASE.replace(K1, K1.replace(b"    step0 = x\n", GUARD + b"    step0 = x\n").replace(
    b"    return step9\n", SYNC + b"    return step9\n"))
DROPPED = BASE.replace(K1, K1.replace(b"    return step9\n", SYNC + b"    return step9\n"))


def guard_said_taken_back_and_brought_back(stack: OneUpstreamStack, drop: str) -> dict:
    """kfix's guard, taken out by `drop` at v3, is said taken back in part by status (its
    entry returned), the rebase onto v3, check and status at the pin (exit 1); the advised
    bring-back puts the guard alone back into the series, the landed synchronize kept."""
    (said,) = stack.json("status", "--against", "v3", expect=1)["gone_upstream"]
    assert (said["name"], said["by"]) == ("kfix.patch", drop), said
    assert "taken back in part: pkg/k.py hunk 1, the rest of its change still upstream" \
        in said["detail"], said
    stack.cli("rebase", "--to", "v3", expect=1)
    for command in (("check",), ("status",)):
        _, out, err = stack.cli(*command, expect=1)
        assert "up/kfix.patch" in out + err and "taken back in part" in out + err, \
            (command, out + err)
    _, out, _ = stack.cli("bring-back", "up/kfix.patch")
    assert "1 of its 2 hunks landed upstream" in out, out
    assert stack.series("up") == ["kfix.patch"]
    back = stack.patch("up", "kfix")
    assert b"\n+    if x is None" in back and b"synchronize" not in back, back.decode()
    return said


def test_a_guard_upstream_drops_alone_with_context_every_function_shares_is_said(tmp_path):
    """It was "superseded" (the guard's hunk neither there nor back at one place its
    neighbours tell): status, the rebase onto it and check exited 0 with the guard in no
    overlay and not upstream. Now said taken back in part (exit 1), and the guard goes back
    into the series while the synchronize stays upstream's."""
    stack = OneUpstreamStack(tmp_path, {"pkg/k.py": BASE})
    stack.add_fix("kfix", "pkg/k.py", BASE, FIXED)
    stack.commit({"pkg/k.py": FIXED}, "k1: guard and synchronize (#11)", tag="v2")
    stack.cli("rebase", "--to", "v2")
    assert (stack.root / "series/up/upstreamed/kfix.patch").is_file()
    drop = stack.commit({"pkg/k.py": DROPPED}, "Tidy the kernels", tag="v3")
    guard_said_taken_back_and_brought_back(stack, drop)
    assert (stack.root / "series/up/upstreamed/kfix.patch").is_file()
    stack.cli("overlays")
    overlay = (stack.root / "overlays/up/pkg/k.py").read_bytes()
    assert overlay == FIXED, overlay.decode()
    for command in (("check",), ("status",)):
        stack.cli(*command)


def _guarded(text: bytes, kernel: bytes, *, guard: bool = True, sync: bool = True) -> bytes:
    """`text` with `kernel` given the guard at its top and the synchronize before its return."""
    new = kernel.replace(b"    step0 = x\n", GUARD + b"    step0 = x\n") if guard else kernel
    new = new.replace(b"    return step9\n", SYNC + b"    return step9\n") if sync else new
    return text.replace(kernel, new)


def _two_kept_guards(tmp_path) -> tuple[OneUpstreamStack, bytes]:
    """kfix2 (a guard in k2) landed, then kfix (the same guard and a synchronize in k1), each
    kept as landed; returns the stack and the file at the second landing (v2)."""
    stack = OneUpstreamStack(tmp_path, {"pkg/k.py": BASE})
    stack.add_fix("kfix", "pkg/k.py", BASE, FIXED)
    both = _guarded(FIXED, K2, sync=False)
    stack.add_fix("kfix2", "pkg/k.py", FIXED, both)
    stack.commit({"pkg/k.py": _guarded(BASE, K2, sync=False)}, "k2: a guard (#10)", tag="v1b")
    stack.cli("rebase", "--to", "v1b")
    stack.commit({"pkg/k.py": both}, "k1: a guard and a synchronize (#11)", tag="v2")
    stack.cli("rebase", "--to", "v2")
    for name in ("kfix", "kfix2"):
        assert (stack.root / f"series/up/upstreamed/{name}.patch").is_file(), name
    return stack, both


def test_a_guard_dropped_alone_while_another_function_has_the_same_guard_is_said(tmp_path):
    """It was quiet: status, the rebase onto it and check exited 0, k2's guard (kfix2's)
    taken for kfix's own, held with the blank lines and first body line every function
    shares, while k1 held kfix's old code, every line of it; the guard was in no overlay and
    not upstream. The commit that took it out of k1 made that place and left one guard in
    the file of two: taken back in part, said (exit 1), and the bring-back puts the guard
    alone back into k1."""
    stack, both = _two_kept_guards(tmp_path)
    dropped = _guarded(_guarded(BASE, K1, guard=False), K2, sync=False)
    drop = stack.commit({"pkg/k.py": dropped}, "Tidy the kernels", tag="v3")
    said = guard_said_taken_back_and_brought_back(stack, drop)
    assert said["kind"] == "removed", said
    stack.cli("overlays")
    assert (stack.root / "overlays/up/pkg/k.py").read_bytes() == both
    for command in (("check",), ("status",)):
        stack.cli(*command)


def test_a_guard_dropped_alone_then_its_context_edited_and_reverted_is_said(tmp_path):
    """The guard dropped alone as above, then upstream edits k1's first step (in the guard
    hunk's context) and reverts that edit. The revert read as the commit that made the
    guard's old place, and it left k2's guard as it was: a move, said superseded (exit 0),
    the guard in no overlay and not upstream. The commit that took the guard out of k1 put
    it nowhere else: taken back in part, said, that commit named."""
    stack, both = _two_kept_guards(tmp_path)
    dropped = _guarded(_guarded(BASE, K1, guard=False), K2, sync=False)
    drop = stack.commit({"pkg/k.py": dropped}, "Tidy the kernels")
    k1 = dropped.index(b"def k1(x):")
    edited = dropped[:k1] + dropped[k1:].replace(b"    step1 = step0 + 101\n",
                                                 b"    step1 = step0 + 1001\n", 1)
    edit = stack.commit({"pkg/k.py": edited}, "k1: a wider first step")
    stack.commit({"pkg/k.py": dropped},
                 f'Revert "k1: a wider first step"\n\nThis reverts commit {edit}.', tag="v3")
    said = guard_said_taken_back_and_brought_back(stack, drop)
    assert said["kind"] == "removed" and "possibly doubled" not in said["detail"], said
    stack.cli("overlays")
    assert (stack.root / "overlays/up/pkg/k.py").read_bytes() == both


def test_a_guard_moved_into_another_function_beside_another_copy_is_not_said(tmp_path):
    """The commit that took the guard out of k1 put it into k3: the file has it as often as
    before (k2's and k3's), a move upstream made, not a take-back: quiet, as before."""
    stack, _ = _two_kept_guards(tmp_path)
    moved = _guarded(_guarded(_guarded(BASE, K1, guard=False), K2, sync=False), K3, sync=False)
    stack.commit({"pkg/k.py": moved}, "The input check where it belongs", tag="v3")
    assert stack.json("status", "--against", "v3")["gone_upstream"] == []
    stack.cli("rebase", "--to", "v3")
    stack.cli("check")


def _limit_kernel(name: bytes, launch: bytes = b"    launch(out, n)\n") -> bytes:
    return b"def %s(x, limit):\n    out = alloc(x)\n" % name + \
        b"".join(b"    a%d = prep(out, %d)\n" % (k, k) for k in range(6)) + \
        b"    n = size(out)\n" + launch + b"    done = True\n    return out\n\n\n"


def test_a_guard_rewritten_beside_a_look_alike_with_its_old_code_is_not_said(tmp_path):
    """A landing of two hunks in f2 (a stream argument at its def, a limit guard mid-body)
    that upstream rewrites: the guard becomes a helper's call at the same place. f1 looks
    alike and holds the guard hunk's whole old code, as it did when the fix landed: that
    place was no commit's doing since. It was said taken back in part (exit 1, and the
    advised bring-back stopped on a conflict); now quiet."""
    base = b'"""Kernels."""\nfrom pkg.checks import check_limit\n\n\n' + \
        _limit_kernel(b"f1") + _limit_kernel(b"f2") + \
        _limit_kernel(b"f3", b"    launch(out, n, stream=None)\n") + b"VERSION = 1\n"
    guard = b"    if limit < 0:\n        raise ValueError('a limit is never negative')\n"
    f2 = _limit_kernel(b"f2")
    f2_fixed = f2.replace(b"def f2(x, limit):\n", b"def f2(x, limit, stream=None):\n").replace(
        b"    n = size(out)\n", b"    n = size(out)\n" + guard)
    fixed = base.replace(f2, f2_fixed)
    checks = b"def check_limit(limit):\n    pass\n"
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": base, "pkg/checks.py": checks})
    stack.add_fix("fa", "pkg/a.py", base, fixed)
    stack.commit({"pkg/a.py": fixed}, "f2: a stream and a limit guard (#11)", tag="v2")
    stack.cli("rebase", "--to", "v2")
    assert (stack.root / "series/up/upstreamed/fa.patch").is_file()
    rewritten = base.replace(f2, f2_fixed.replace(guard, b"    check_limit(limit)\n"))
    stack.commit({"pkg/a.py": rewritten, "pkg/checks.py": b"def check_limit(limit):\n" + guard},
                 "Checks: one helper for the limit", tag="v3")
    assert stack.json("status", "--against", "v3")["gone_upstream"] == []
    stack.cli("rebase", "--to", "v3")
    stack.cli("check")
