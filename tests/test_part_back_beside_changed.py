"""A fix of two hunks landed whole and kept under upstreamed/; upstream puts one hunk's old
code back exactly (a revert of part of the landing), and later changes the other hunk's line.
The hunk taken back is in no overlay and not upstream: said taken back in part, whatever
became of the other hunk."""
from __future__ import annotations

from helpers.project import OneUpstreamStack

BASE = b"".join(b"line %d of the module under test\n" % i for i in range(1, 31))


def _line(n: int) -> bytes:
    return b"line %d of the module under test\n" % n


FIXED = BASE.replace(_line(5), b"five = compute_it_properly()\n")
BOTH = FIXED.replace(_line(25), b"twenty_five = also_fixed()\n")
STRICT = FIXED.replace(b"compute_it_properly()", b"compute_it_properly(strict=True)")


def test_a_hunk_taken_back_beside_one_changed_since_is_said_and_brought_back(tmp_path):
    """It was "superseded" (one hunk changed since made the whole fix so): status, the
    rebase onto it and check exited 0, and bring-back refused ("upstream has its change at
    the pin, or changed that code otherwise"): hunk 2's fix was in no overlay and not
    upstream."""
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": BASE, "pkg/b.py": b"b = 1\n"})
    stack.add_fix("fa", "pkg/a.py", BASE, BOTH)
    land = stack.commit({"pkg/a.py": BOTH}, "Compute it properly (#11)", tag="v2")
    stack.cli("rebase", "--to", "v2")
    assert (stack.root / "series/up/upstreamed/fa.patch").is_file()
    back = stack.commit({"pkg/a.py": FIXED},
                        'Revert "Compute it properly (#11)" for twenty-five\n\n'
                        f"This reverts part of commit {land}.", tag="v3")
    stack.commit({"pkg/a.py": STRICT}, "Be strict", tag="v4")
    (said,) = stack.json("status", "--against", "v4", expect=1)["reverted"]
    assert (said["name"], said["by"]) == ("fa.patch", back), said
    assert "taken back in part: pkg/a.py hunk 2, the rest of its change changed upstream " \
        "since (pkg/a.py hunk 1)" in said["detail"], said
    stack.cli("rebase", "--to", "v4", expect=1)
    for command in (("check",), ("status",)):
        _, out, err = stack.cli(*command, expect=1)
        assert "up/fa.patch" in out + err and "taken back in part" in out + err, \
            (command, out + err)
    # Hunk 1's line upstream changed since: the bring-back stops there, the fix kept in
    # skipped/; taking upstream's line for it, hunk 2 goes back into the series.
    _, _, err = stack.cli("bring-back", "up/fa.patch", expect=3)
    assert "conflict in pkg/a.py" in err, err
    assert (stack.root / "series/up/skipped/fa.patch").is_file()
    work = stack.root / ".patchforge/work/up/pkg/a.py"
    work.write_bytes(STRICT.replace(_line(25), b"twenty_five = also_fixed()\n"))
    stack.cli("bring-back", "--continue")
    assert stack.series("up") == ["fa.patch"]
    moved = stack.patch("up", "fa")
    assert b"\n+twenty_five = also_fixed()" in moved and b"compute_it" not in moved, \
        moved.decode()
    stack.cli("overlays")
    overlay = (stack.root / "overlays/up/pkg/a.py").read_bytes()
    assert overlay == STRICT.replace(_line(25), b"twenty_five = also_fixed()\n"), \
        overlay.decode()
    for command in (("check",), ("status",)):
        stack.cli(*command)


def test_a_hunk_changed_since_beside_one_still_there_stays_superseded(tmp_path):
    """No hunk with its old code back: one changed since, the other still upstream. Nothing
    is said (upstream changed the code otherwise)."""
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": BASE, "pkg/b.py": b"b = 1\n"})
    stack.add_fix("fa", "pkg/a.py", BASE, BOTH)
    stack.commit({"pkg/a.py": BOTH}, "Compute it properly (#11)", tag="v2")
    stack.cli("rebase", "--to", "v2")
    stack.commit({"pkg/a.py": BOTH.replace(b"compute_it_properly()",
                                           b"compute_it_properly(strict=True)")},
                 "Be strict", tag="v3")
    document = stack.json("status", "--against", "v3")
    assert document["reverted"] == [] and document["gone_upstream"] == [], document
    stack.cli("rebase", "--to", "v3")
    stack.cli("check")
