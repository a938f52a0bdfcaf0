"""What a user reads of a fix that landed in part (two of its three hunks upstream in one
commit), through the CLI on a real git upstream: `status --against` names every landed hunk,
and the rebase (a dry run and the real one) says what happens to each part, the landed hunks
kept under upstreamed/ and the fix staying in the series with the other."""
from __future__ import annotations

from helpers.project import OneUpstreamStack

BASE = b"".join(b"line %d of the module under test\n" % i for i in range(1, 41))
CHANGES = [(b"line %d of the module under test\n" % n, b"line_%d = better()\n" % n)
           for n in (5, 20, 35)]


def made(text: bytes, *changes: tuple[bytes, bytes]) -> bytes:
    for old, new in changes:
        assert old in text
        text = text.replace(old, new)
    return text


def _landed_in_part(tmp_path) -> tuple[OneUpstreamStack, str]:
    """fa changes lines 5, 20 and 35 (three hunks); v2 lands the last two in one commit."""
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": BASE})
    stack.add_fix("fa", "pkg/a.py", BASE, made(BASE, *CHANGES))
    assert stack.patch("up", "fa").count(b"\n@@ ") == 3
    landing = stack.commit({"pkg/a.py": made(BASE, *CHANGES[1:])}, "Better 20 and 35 (#7)",
                           tag="v2")
    return stack, landing


def test_status_names_every_landed_hunk(tmp_path):
    """Before: the evidence of `partial 2/3` named hunk 2 alone, as if hunk 3 had not landed."""
    stack, landing = _landed_in_part(tmp_path)
    _, out, _ = stack.cli("status", "--against", "up=v2", expect=1)
    row = next(line for line in out.splitlines() if line.startswith("up/fa.patch"))
    assert "partial 2/3" in row and f"landed in {landing[:12]}" in row, out
    assert "pkg/a.py hunk 2: " in row and "pkg/a.py hunk 3: " in row, out
    assert "hunk 1" not in row, out


def test_rebase_says_what_happens_to_each_part(tmp_path):
    """Before: "2 of its 3 hunks landed upstream in C: to be kept under upstreamed/" read as if
    the whole fix went there; its remaining hunk stays in the series, which it did not say."""
    stack, landing = _landed_in_part(tmp_path)
    before = stack.snapshot()
    _, out, _ = stack.cli("rebase", "--to", "up=v2", "--dry-run")
    assert (f"2 of its 3 hunks landed upstream in {landing[:12]}: to be kept under "
            "upstreamed/; the fix stays in the series with its other hunk") in out, out
    assert stack.snapshot() == before

    summary = stack.rebase_json("--to", "up=v2")
    (entry,) = summary["patches"]
    assert entry["detail"].endswith(
        f"2 of its 3 hunks landed upstream in {landing[:12]}: kept under upstreamed/; the fix "
        "stays in the series with its other hunk"), entry
    # As said: the fix in the series with hunk 1 alone, hunks 2 and 3 under upstreamed/.
    assert stack.series("up") == ["fa.patch"]
    moved = stack.patch("up", "fa")
    assert moved.count(b"\n@@ ") == 1 and b"+line_5 = better()" in moved, moved
    kept = stack.patch("up", "fa", "upstreamed")
    assert kept.count(b"\n@@ ") == 2 and b"+line_5 = better()" not in kept, kept
    assert b"+line_20 = better()" in kept and b"+line_35 = better()" in kept, kept
