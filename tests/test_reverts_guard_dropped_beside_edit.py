"""A kept landing of a guard at a function's top and `torch.cuda.synchronize()` before its
return, whose guard upstream later drops in a commit of other work that also rewrites the
line below it (`step0 = x` -> `step0 = x.contiguous()`), or after an earlier commit rewrote
it, while another function that starts alike holds another kept fix's same guard. The guard's
old neighbours, one of them rewritten, no longer tell its place by every line; with the
blank lines and the first body line every function has, they hold the guard at the other
function too: read as the fix's there, the fix was said superseded (exit 0), the guard in no
overlay and not upstream. The fix's own function holds the old code: the commit that took the
guard out of it tells, and put it nowhere. Real git history, through the CLI."""
from __future__ import annotations

import pytest

from helpers.project import OneUpstreamStack

STEPS = 10
GUARD = b"    if x is None and not torch.cuda.is_available():\n" \
    b"        raise ValueError('x is needed')\n"
SYNC = b"    torch.cuda.synchronize()\n"
STEP0 = b"    step0 = x\n"
EDITED = b"    step0 = x.contiguous()\n"


def _kernel(n: int, *, guard: bool = False, sync: bool = False, edited: bool = False) -> bytes:
    steps = b"".join(b"    step%d = step%d + %d\n" % (i, i - 1, 100 * n + i) for i in range(1, STEPS))
    return b"def k%d(x):\n" % n + (GUARD if guard else b"") + (EDITED if edited else STEP0) + \
        steps + (SYNC if sync else b"") + b"    return step%d\n" % (STEPS - 1)


def _file(parts: dict[int, dict]) -> bytes:
    return b'"""Kernels."""\nimport torch\n\n\n' + b"\n\n".join(
        _kernel(n, **parts.get(n, {})) for n in range(4))


def _landed(tmp_path, fixes: list[int]):
    """kfix<n> (guard and synchronize in k<n>) for each n, added to the series, then landed
    upstream in its own commit and kept by the rebase onto it."""
    stack = OneUpstreamStack(tmp_path, {"pkg/k.py": _file({})})
    parts: dict[int, dict] = {}
    for n in fixes:
        before = _file(parts)
        parts[n] = {"guard": True, "sync": True}
        stack.add_fix(f"kfix{n}", "pkg/k.py", before, _file(parts))
    parts = {}
    for i, n in enumerate(fixes):
        parts[n] = {"guard": True, "sync": True}
        stack.commit({"pkg/k.py": _file(parts)}, f"k{n}: guard and sync (#{10 + i})",
                     tag=f"v{i + 2}")
        stack.cli("rebase", "--to", f"v{i + 2}")
        assert (stack.root / f"series/up/upstreamed/kfix{n}.patch").is_file(), n
    return stack, parts


@pytest.mark.parametrize("rewrite", ["in the same commit", "before"])
def test_a_guard_dropped_beside_a_rewritten_line_while_another_function_has_it_is_said(
        tmp_path, rewrite):
    stack, parts = _landed(tmp_path, [0, 1])
    if rewrite == "before":
        stack.commit({"pkg/k.py": _file({**parts, 0: {**parts[0], "edited": True}})},
                     "k0: contiguous input")
    dropped = {**parts, 0: {"sync": True, "edited": True}}
    drop = stack.commit({"pkg/k.py": _file(dropped)}, "k0: take contiguous input", tag="v9")
    (said,) = stack.json("status", "--against", "v9", expect=1)["gone_upstream"]
    assert (said["name"], said["by"]) == ("kfix0.patch", drop), said
    assert "taken back in part: pkg/k.py hunk 1, the rest of its change still upstream" \
        in said["detail"], said
    stack.cli("rebase", "--to", "v9", expect=1)
    for command in (("check",), ("status",)):
        _, out, err = stack.cli(*command, expect=1)
        assert "up/kfix0.patch" in out + err and "taken back in part" in out + err, \
            (command, out + err)
    # The advised bring-back stops (the line below the guard changed): the guard made again
    # by hand at k0's top, the fix goes back with it alone, once.
    _, _, err = stack.cli("bring-back", "up/kfix0.patch", expect=3)
    assert "conflict in pkg/k.py" in err, err
    fixed = _file({**dropped, 0: {"guard": True, "sync": True, "edited": True}})
    (stack.root / ".patchforge/work/up/pkg/k.py").write_bytes(fixed)
    stack.cli("bring-back", "--continue")
    back = stack.patch("up", "kfix0")
    assert b"\n+    if x is None" in back and b"synchronize" not in back, back.decode()
    stack.cli("overlays")
    made = (stack.root / "overlays/up/pkg/k.py").read_bytes()
    assert made == fixed, made.decode()
    for command in (("check",), ("status",)):
        stack.cli(*command)


def test_a_guard_upstream_moved_into_another_function_beside_a_rewritten_line_is_quiet(
        tmp_path):
    """The same commit, but one that puts the guard into k2 (which had none) as it takes it
    out of k0: moved, as good as landed; nothing said."""
    stack, parts = _landed(tmp_path, [0, 1])
    moved = {**parts, 0: {"sync": True, "edited": True}, 2: {"guard": True}}
    stack.commit({"pkg/k.py": _file(moved)}, "k0: take contiguous input, check in k2",
                 tag="v9")
    assert stack.json("status", "--against", "v9")["gone_upstream"] == []
    stack.cli("rebase", "--to", "v9")
    stack.cli("check")
