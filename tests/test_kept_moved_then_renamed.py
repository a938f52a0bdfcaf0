"""A kept landing of a guard in g() of a.py; upstream then moves g() whole into b.py (a.py
stays), and takes the guard out there. A bring-back into the moved-to file wrote the old
file's hunk with only its paths changed (a.py's line numbers and context, no index line):
status "offset" and lint's byte-stable error right after it said done. Now the brought-back
fix is made again on the pin like every other. Real git history, through the CLI."""
from __future__ import annotations

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
