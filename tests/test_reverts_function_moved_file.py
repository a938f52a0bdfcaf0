"""A kept landing of a guard at a function's top, the function then moved whole by upstream into
another file (a new one or one already there) while the old file stays: no git rename, so the
fix's file still read as its own. Where the move dropped the guard, or a later commit in the new
file did (even one whose message reverts the landing), the fix was in no overlay and nothing was
said (exit 0): the function gone from the old file read as upstream's other work there. The
function is now followed into the file the commit that took it out added it to, and judged
there as in its own file: moved with its guard, quiet; the guard dropped, said, and `bring-back`
puts it into the new file once. Real git history, through the CLI."""
from __future__ import annotations

import pytest

from helpers.project import OneUpstreamStack

GUARD = b"    if x is None:\n        return 0\n"


def _fn(name: bytes, n: int, guard: bool = False) -> bytes:
    return b"def %s(x):\n" % name + (GUARD if guard else b"") + \
        b"    a = %d\n    b = a + x\n    c = b * 2\n    return c\n" % n


def _module(names: list[bytes], guarded: bytes = b"") -> bytes:
    return b'"""m."""\n\n\n' + b"\n\n".join(
        _fn(name, n, name == guarded) for n, name in enumerate(names))


A = [b"a0", b"a1", b"a2", b"a3"]
B = [b"b0", b"b1", b"b2"]


def _landed(tmp_path):
    base = _module(A)
    fixed = _module(A, b"a2")
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": base, "pkg/b.py": _module(B)})
    stack.add_fix("fix", "pkg/a.py", base, fixed)
    landing = stack.commit({"pkg/a.py": fixed}, "a2: check x (#5)", tag="v2")
    stack.dropped_as_landed("up=v2")
    return stack, landing


def _move(stack, dest: str, guard: bool) -> str:
    """Upstream's commit moving a2 out of pkg/a.py into `dest` (new or pkg/b.py)."""
    into = (_module(B) + b"\n\n" if dest == "pkg/b.py" else b'"""c."""\n\n\n') + \
        _fn(b"a2", 2, guard)
    return stack.commit({"pkg/a.py": _module([b"a0", b"a1", b"a3"]), dest: into},
                        "move a2 to " + dest)


@pytest.mark.parametrize("dest", ["pkg/c.py", "pkg/b.py"])
def test_a_function_moved_with_its_guard_into_another_file_is_quiet(tmp_path, dest):
    stack, _ = _landed(tmp_path)
    _move(stack, dest, guard=True)
    head = stack.upstream.head()
    doc = stack.json("status", "--against", f"up={head}")
    assert doc["gone_upstream"] == [] and doc["reverted"] == [], doc
    stack.cli("rebase", "--to", f"up={head}")
    stack.cli("check")
    stack.cli("status")


@pytest.mark.parametrize("dest", ["pkg/c.py", "pkg/b.py"])
@pytest.mark.parametrize("when", ["in the move", "later", "later, a revert"])
def test_a_guard_dropped_from_a_function_moved_into_another_file_is_said(tmp_path, dest, when):
    stack, landing = _landed(tmp_path)
    took = _move(stack, dest, guard=when != "in the move")
    if when != "in the move":
        message = f'Revert "a2: check x (#5)"\n\nThis reverts commit {landing}.\n' \
            if when == "later, a revert" else "a2: x is never None"
        now = stack.upstream.read(dest)
        took = stack.commit({dest: now.replace(GUARD, b"", 1)}, message)
    head = stack.upstream.head()
    doc = stack.json("status", "--against", f"up={head}", expect=1)
    # (A later commit that drops just the guard undoes exactly what the landing did.)
    kind = "removed" if when == "in the move" else "reverted"
    (said,) = doc["reverted"] + doc["gone_upstream"]
    assert said in doc["reverted" if kind == "reverted" else "gone_upstream"], doc
    assert (said["name"], said["kind"], said["by"]) == ("fix.patch", kind, took), said
    stack.cli("rebase", "--to", f"up={head}", expect=1)
    _, out, _ = stack.cli("status", expect=1)
    assert took[:12] in out, out
    # The advised bring-back puts the guard into the function where it is now, once.
    stack.cli("bring-back", "up/fix.patch")
    assert stack.series("up") == ["fix.patch"]
    stack.cli("overlays")
    moved = (stack.root / "overlays/up" / dest).read_bytes()
    assert moved.count(GUARD) == 1 and _fn(b"a2", 2, True) in moved, moved
    assert not (stack.root / "overlays/up/pkg/a.py").exists() or \
        GUARD not in (stack.root / "overlays/up/pkg/a.py").read_bytes()
    stack.cli("status")


C1 = b"def c1(x):\n" + GUARD + b"    return x + 1\n"


@pytest.mark.parametrize("lookalike", ["above", "below, its body a2's", "below"])
@pytest.mark.parametrize("guard", [False, True])
def test_the_other_files_own_guard_is_not_the_fix_moved_there(tmp_path, lookalike, guard):
    # pkg/c.py has, since before the fix, another function starting with the same guard. The
    # move commit puts a2 there without the fix's guard: c1's copy is not the fix's moved
    # (it was in that file before the move), so the guard dropped by the move is said, and
    # bring-back puts it into a2 in pkg/c.py once. Moved with its guard: quiet.
    base = _module(A)
    fixed = _module(A, b"a2")
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": base, "pkg/c.py": b'"""c."""\n\n\n' + C1})
    stack.add_fix("fix", "pkg/a.py", base, fixed)
    stack.commit({"pkg/a.py": fixed}, "a2: check x (#5)", tag="v2")
    stack.dropped_as_landed("up=v2")
    a2 = _fn(b"a2", 2, guard)
    into = C1 + b"\n\n" + a2 if lookalike == "above" else \
        a2 + b"\n\n" + (_fn(b"c1", 2, True) if lookalike.endswith("a2's") else C1)
    took = stack.commit({"pkg/a.py": _module([b"a0", b"a1", b"a3"]),
                         "pkg/c.py": b'"""c."""\n\n\n' + into}, "move a2 to pkg/c.py")
    head = stack.upstream.head()
    if guard:
        doc = stack.json("status", "--against", f"up={head}")
        assert doc["gone_upstream"] == [] and doc["reverted"] == [], doc
        return
    doc = stack.json("status", "--against", f"up={head}", expect=1)
    (said,) = doc["reverted"] + doc["gone_upstream"]
    assert (said["name"], said["kind"], said["by"]) == ("fix.patch", "removed", took), said
    assert "pkg/a.py line" not in said["detail"], said
    stack.cli("rebase", "--to", f"up={head}", expect=1)
    stack.cli("bring-back", "up/fix.patch")
    assert stack.series("up") == ["fix.patch"]
    stack.cli("overlays")
    moved = (stack.root / "overlays/up/pkg/c.py").read_bytes()
    assert moved.count(GUARD) == 2 and _fn(b"a2", 2, True) in moved, moved
    stack.cli("status")
