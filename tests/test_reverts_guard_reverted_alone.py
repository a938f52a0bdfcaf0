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

