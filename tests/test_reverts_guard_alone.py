"""A kept landing of two hunks (a guard at a function's top, `torch.cuda.synchronize()` before
its return) of which upstream later drops the guard alone, in a commit of other work. The
guard's context (two blank lines, the `def` line, a first body line every function of the
file shares) holds at several places, so its place cannot be told by its neighbours; its
whole pre-image is back at one place and its lines are nowhere in the file: taken back in
part. Real git history, through the CLI."""
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
K1 = _kernel(1)
FIXED = BASE.replace(K1, K1.replace(b"    step0 = x\n", GUARD + b"    step0 = x\n").replace(
    b"    return step9\n", SYNC + b"    return step9\n"))
DROPPED = BASE.replace(K1, K1.replace(b"    return step9\n", SYNC + b"    return step9\n"))


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
    (said,) = stack.json("status", "--against", "v3", expect=1)["gone_upstream"]
    assert (said["name"], said["by"]) == ("kfix.patch", drop), said
    assert "taken back in part: pkg/k.py hunk 1, the rest of its change still upstream" \
        in said["detail"], said
    stack.cli("rebase", "--to", "v3", expect=1)
    for command in (("check",), ("status",)):
        _, out, err = stack.cli(*command, expect=1)
        assert "up/kfix.patch" in out + err and "taken back in part" in out + err, \
            (command, out + err)
    # The advised bring-back puts the guard back; the synchronize, landed, stays kept.
    _, out, _ = stack.cli("bring-back", "up/kfix.patch")
    assert "1 of its 2 hunks landed upstream" in out, out
    assert stack.series("up") == ["kfix.patch"]
    back = stack.patch("up", "kfix")
    assert b"\n+    if x is None" in back and b"synchronize" not in back, back.decode()
    assert (stack.root / "series/up/upstreamed/kfix.patch").is_file()
    stack.cli("overlays")
    overlay = (stack.root / "overlays/up/pkg/k.py").read_bytes()
    assert overlay == FIXED, overlay.decode()
    for command in (("check",), ("status",)):
        stack.cli(*command)
