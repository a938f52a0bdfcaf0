"""A kept landing of a guard in g() of a.py; upstream then moves g() whole into b.py (a.py
stays), and may rename b.py later (git mv). The move is followed (the fix judged in b.py), but
the rename of b.py was not: at the rename the fix read as taken out, the rename named (exit 1,
the guard still there); at the real take-out the rename named again; and `bring-back` stopped
("b.py is not in the base"). And a bring-back into the moved-to file wrote the old file's hunk
with only its paths changed (a.py's line numbers and context, no index line): status "offset"
and lint's byte-stable error right after it said done. Now the moved-to file is followed
through its renames as the fix's own files are, and the brought-back fix is made again on the
pin like every other. Real git history, through the CLI."""
from __future__ import annotations

import pytest

from helpers.project import OneUpstreamStack

GUARD = b'    assert x >= 0, "g needs a non-negative x"\n'
F = b"def f(x):\n    y = x + 1\n    return math.floor(y)\n"
G = b"def g(x):\n    y = x * 2\n    return math.ceil(y)\n"
PAD = b"def pad(v):\n    return [v, 3]\n"
HEAD = b"import math\n\n\n"


def _fixed(g: bytes) -> bytes:
    return g.replace(b"def g(x):\n", b"def g(x):\n" + GUARD)


def _moved(tmp_path, renames: int):
    """The fix landed in a.py (v2, dropped as landed), g() then moved into b.py, b.py then
    renamed `renames` times: (the stack, b.py's name now, its bytes)."""
    base = HEAD + F + b"\n\n" + G + b"\n\n" + PAD
    fixed = HEAD + F + b"\n\n" + _fixed(G) + b"\n\n" + PAD
    stack = OneUpstreamStack(tmp_path, {"a.py": base})
    stack.add_fix("fix", "a.py", base, fixed)
    stack.commit({"a.py": fixed}, "g: guard negative x (#3)", tag="v2")
    stack.dropped_as_landed("up=v2")
    moved = HEAD + _fixed(G) + b"\n\ndef other(v):\n    return v\n"
    stack.commit({"a.py": HEAD + F + b"\n\n" + PAD, "b.py": moved}, "move g to b.py")
    path = "b.py"
    for i in range(renames):
        new = f"lib{i}/g.py"
        stack.upstream.commit({}, f"rename {path}", {path: new})
        path = new
    return stack, path, moved


@pytest.mark.parametrize("renames", [1, 2])
def test_a_file_a_kept_fix_moved_into_renamed_later_is_followed(tmp_path, renames):
    stack, _, _ = _moved(tmp_path, renames)
    head = stack.upstream.head()
    doc = stack.json("status", "--against", f"up={head}")
    assert doc["gone_upstream"] == [] and doc["reverted"] == [], doc
    stack.cli("rebase", "--to", f"up={head}")
    stack.cli("status")


@pytest.mark.parametrize("when", ["after the renames", "between the renames"])
def test_a_guard_taken_out_of_a_moved_and_renamed_file_names_its_commit(tmp_path, when):
    stack, path, moved = _moved(tmp_path, 1 if when == "after the renames" else 0)
    took = stack.commit({path: moved.replace(GUARD, b"")}, "g: simplify")
    if when == "between the renames":
        stack.upstream.commit({}, "rename b.py", {path: "lib/g.py"})
        path = "lib/g.py"
    head = stack.upstream.head()
    doc = stack.json("status", "--against", f"up={head}", expect=1)
    (said,) = doc["reverted"] + doc["gone_upstream"]
    assert (said["name"], said["by"]) == ("fix.patch", took), said
    _, out, _ = stack.cli("rebase", "--to", f"up={head}", expect=1)
    assert took[:12] in out, out
    # The advised bring-back puts the guard into g() where it is now, once, as a diff made
    # on the pin: status and lint agree with what it said.
    _, out, _ = stack.cli("bring-back", "up/fix.patch")
    assert "is back at the end of the series" in out, out
    assert stack.series("up") == ["fix.patch"]
    data = stack.patch("up", "fix")
    assert f"+++ b/{path}".encode() in data and b"\nindex " in data, data
    assert b"+++ b/a.py" not in data, data
    stack.cli("overlays")
    now = (stack.root / "overlays/up" / path).read_bytes()
    assert now.count(GUARD) == 1 and _fixed(G) in now, now
    doc = stack.json("status")
    assert [p["state"] for p in doc["patches"]] == ["applies"], doc["patches"]
    _, out, _ = stack.cli("lint")
    assert "no findings" in out, out


def test_a_bring_back_into_a_moved_function_is_made_on_the_pin(tmp_path):
    # No rename: the move alone. The hunk's numbers in b.py differ from a.py's.
    stack, path, moved = _moved(tmp_path, 0)
    stack.commit({path: moved.replace(GUARD, b"")}, "g: simplify")
    stack.cli("rebase", "--to", f"up={stack.upstream.head()}", expect=1)
    stack.cli("bring-back", "up/fix.patch")
    data = stack.patch("up", "fix")
    assert b"\nindex " in data and b"@@ -2," in data and b"def f(x)" not in data, data
    doc = stack.json("status")
    assert [p["state"] for p in doc["patches"]] == ["applies"], doc["patches"]
    _, out, _ = stack.cli("lint")
    assert "no findings" in out, out
