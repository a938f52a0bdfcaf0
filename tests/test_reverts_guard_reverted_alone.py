"""A kept landing of two hunks (a guard at a function's top, `torch.cuda.synchronize()` before
its return) of which upstream later takes the guard back, while the other functions of the
file hold kept fixes with the same guard or synchronize. The guard's context every function
shares holds at several places, and the synchronize hunk still upstream cannot be told at its
place from the other copies either; the guard's whole pre-image is at one place and the
commit that took it out made that place: taken back in part, said. Real git history, through
the CLI."""
from __future__ import annotations

from helpers.project import OneUpstreamStack

STEPS = 10
GUARD = b"    if x is None and not torch.cuda.is_available():\n" \
    b"        raise ValueError('x is needed')\n"
SYNC = b"    torch.cuda.synchronize()\n"


def _kernel(n: int, *, guard: bool = False, sync: bool = False) -> bytes:
    steps = b"".join(b"    step%d = step%d + %d\n" % (i, i - 1, 100 * n + i) for i in range(1, STEPS))
    return b"def k%d(x):\n" % n + (GUARD if guard else b"") + b"    step0 = x\n" + steps + \
        (SYNC if sync else b"") + b"    return step%d\n" % (STEPS - 1)


def _file(parts: dict[int, tuple[bool, bool]]) -> bytes:
    return b'"""Kernels."""\nimport torch\n\n\n' + b"\n\n".join(
        _kernel(n, guard=parts.get(n, (False, False))[0], sync=parts.get(n, (False, False))[1])
        for n in range(4))


def _landed(tmp_path, fixes: list[tuple[str, int, tuple[bool, bool]]]):
    """Each fix (name, function, (guard, sync)) added to the series, then landed upstream in
    its own commit and kept by the rebase onto it; returns the stack and the parts upstream has."""
    base = _file({})
    stack = OneUpstreamStack(tmp_path, {"pkg/k.py": base})
    parts: dict[int, tuple[bool, bool]] = {}
    for name, n, fix in fixes:
        before = _file(parts)
        parts[n] = fix
        stack.add_fix(name, "pkg/k.py", before, _file(parts))
    parts = {}
    for i, (name, n, fix) in enumerate(fixes):
        parts[n] = fix
        stack.commit({"pkg/k.py": _file(parts)}, f"k{n}: {name} (#{10 + i})", tag=f"v{i + 2}")
        stack.cli("rebase", "--to", f"v{i + 2}")
        assert (stack.root / f"series/up/upstreamed/{name}.patch").is_file(), name
    return stack, parts


def test_a_guard_taken_back_while_every_other_function_has_the_same_guard_is_said(tmp_path):
    fixes = [("kfix0", 3, (False, True)), ("kfix1", 2, (True, False)),
             ("kfix2", 1, (True, False)), ("kfix3", 0, (True, True))]
    stack, parts = _landed(tmp_path, fixes)
    dropped = {**parts, 0: (False, True)}
    drop = stack.commit({"pkg/k.py": _file(dropped)}, "k0: no guard after all", tag="v9")
    (said,) = stack.json("status", "--against", "v9", expect=1)["gone_upstream"]
    assert (said["name"], said["by"]) == ("kfix3.patch", drop), said
    assert "taken back in part" in said["detail"], said
    stack.cli("rebase", "--to", "v9", expect=1)
    for command in (("check",), ("status",)):
        _, out, err = stack.cli(*command, expect=1)
        assert f"up/{said['name']}" in out + err and "taken back in part" in out + err, \
            (command, out + err)



def test_a_sync_taken_back_while_another_function_has_the_same_guard_and_sync_is_said(tmp_path):
    """kfix1's synchronize taken out of k1 alone while k2 holds kfix2's guard and synchronize:
    it was said superseded (exit 0), the synchronize in no overlay and not upstream: k2's copy
    counted as the line moved there, and k1's guard could not be told from k2's. The commit
    that took the line out of k1 put none elsewhere: taken back in part, said (exit 1), and
    the bring-back puts the synchronize alone back into k1."""
    fixes = [("kfix1", 1, (True, True)), ("kfix2", 2, (True, True))]
    stack, parts = _landed(tmp_path, fixes)
    dropped = {**parts, 1: (True, False)}
    drop = stack.commit({"pkg/k.py": _file(dropped)}, "k1: no sync after all", tag="v9")
    (said,) = stack.json("status", "--against", "v9", expect=1)["gone_upstream"]
    assert (said["name"], said["by"]) == ("kfix1.patch", drop), said
    assert "taken back in part: pkg/k.py hunk 2, the rest of its change still upstream" \
        in said["detail"], said
    stack.cli("rebase", "--to", "v9", expect=1)
    for command in (("check",), ("status",)):
        _, out, err = stack.cli(*command, expect=1)
        assert f"up/{said['name']}" in out + err and "taken back in part" in out + err, \
            (command, out + err)
    _, out, _ = stack.cli("bring-back", "up/kfix1.patch")
    assert "1 of its 2 hunks landed upstream" in out, out
    back = stack.patch("up", "kfix1")
    assert b"\n+    torch.cuda.synchronize()" in back and b"if x is None" not in back, back.decode()
    stack.cli("overlays")
    assert (stack.root / "overlays/up/pkg/k.py").read_bytes() == _file(parts)
    for command in (("check",), ("status",)):
        stack.cli(*command)


def test_a_sync_moved_in_its_function_then_taken_out_is_said_beside_another_copy(tmp_path):
    """Upstream moved kfix1's synchronize a few lines up within k1, later took it out of k1,
    and later still put a synchronize in a helper. The commit that moved it left the place
    the fix had it empty, and it read as the one that took the hunk out: a move, so the
    helper's copy counted as the line and the fix was said superseded (exit 0), the
    synchronize in no overlay and not upstream. The commit that took it out of k1 put it
    nowhere: taken back in part, said."""
    fixes = [("kfix1", 1, (True, True)), ("kfix2", 2, (True, False))]
    stack, parts = _landed(tmp_path, fixes)
    now = _file(parts)
    moved = now.replace(SYNC + b"    return step9\n", b"    return step9\n", 1).replace(
        b"    step6 = step5 + 106\n", b"    step6 = step5 + 106\n" + SYNC, 1)
    assert moved.count(SYNC) == 1 and moved != now
    stack.commit({"pkg/k.py": moved}, "k1: synchronize where it belongs")
    drop = stack.commit({"pkg/k.py": moved.replace(SYNC, b"")}, "k1: no sync after all")
    helper = b"\n\ndef helper(x):\n    y = x - 1\n" + SYNC + b"    return y\n"
    stack.commit({"pkg/k.py": moved.replace(SYNC, b"") + helper}, "helper: settle first",
                 tag="v9")
    (said,) = stack.json("status", "--against", "v9", expect=1)["gone_upstream"]
    assert (said["name"], said["by"]) == ("kfix1.patch", drop), said
    assert "taken back in part: pkg/k.py hunk 2, the rest of its change still upstream" \
        in said["detail"], said
    stack.cli("rebase", "--to", "v9", expect=1)
    _, out, err = stack.cli("check", expect=1)
    assert "up/kfix1.patch" in out + err and "taken back in part" in out + err, out + err


def test_a_sync_dropped_as_its_function_moves_beside_another_copy_is_said(tmp_path):
    """The same synchronize taken out of k1 by a commit that also moves k1 to the end of the
    file (a reorder of the module): said superseded (exit 0) as the drop alone was; the
    function that took it out put it nowhere else: taken back in part, said, that commit
    named."""
    fixes = [("kfix1", 1, (True, True)), ("kfix2", 2, (True, True))]
    stack, parts = _landed(tmp_path, fixes)
    text = b'"""Kernels."""\nimport torch\n\n\n' + b"\n\n".join(
        _kernel(n, guard=parts.get(n, (False, False))[0],
                sync=parts.get(n, (False, False))[1] and n != 1) for n in (0, 2, 3, 1))
    drop = stack.commit({"pkg/k.py": text}, "k1: keep the kernels in call order", tag="v9")
    (said,) = stack.json("status", "--against", "v9", expect=1)["gone_upstream"]
    assert (said["name"], said["by"]) == ("kfix1.patch", drop), said
    assert "taken back in part: pkg/k.py hunk 2, the rest of its change still upstream" \
        in said["detail"], said
    stack.cli("rebase", "--to", "v9", expect=1)
