"""The fix the tests of a change landed inside one hunk share: a 40-line module whose fix
changes lines 15 and 20 (fewer than twice git's context lines apart: one hunk), and what a user
sees when upstream lands the line-15 change without the other (`landed_part_kept_then_reverted`).
"""
from __future__ import annotations

from helpers.git import git
from helpers.project import OneUpstreamStack
from helpers.template import overlay_file

BASE = b"".join(b"line %d of the module under test\n" % i for i in range(1, 41))
LINE_15 = (b"line 15 of the module under test\n", b"fifteen = better()\n")
LINE_20 = (b"line 20 of the module under test\n", b"twenty = better()\n")
HALF = BASE.replace(*LINE_15)
FIXED = HALF.replace(*LINE_20)


def within_hunk_stack(tmp_path) -> OneUpstreamStack:
    """A project pinned at v1 (BASE) with one fix, up/fa.patch: BASE -> FIXED in one hunk."""
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": BASE, "pkg/b.py": b"b = 1\n"})
    stack.add_fix("fa", "pkg/a.py", BASE, FIXED)
    assert stack.patch("up", "fa").count(b"\n@@ ") == 1  # one hunk holds both changes
    return stack


def landed_part_kept_then_reverted(stack: OneUpstreamStack, landed: bytes) -> None:
    """Upstream's v2 makes pkg/a.py `landed` (the line-15 change, not line 20's, perhaps with
    edits of its own): `status --against` and `rebase --to` say "landed in part", the line-15
    change is kept under upstreamed/ with its landing commit on the fix's own base, the moved
    fix holds line 20's alone. Then v3 reverts the landing: status, the rebase and lint say so,
    and `bring-back` puts the change back into the series."""
    landing = stack.commit({"pkg/a.py": landed}, "Fifteen better (#14)", tag="v2")
    _, out, _ = stack.cli("status", "--against", "v2", expect=1)
    assert "landed in part: pkg/a.py hunk 1: upstream has 1 of its 2 changes, not the " \
        "others" in out, out
    _, out, _ = stack.cli("rebase", "--to", "v2")
    assert "3-way merged cleanly; landed in part: 1 of the 2 changes in its hunk 1 " \
        f"(pkg/a.py) landed upstream in {landing[:12]}: kept under upstreamed/" in out, out
    moved = stack.patch("up", "fa")
    assert b"+" + LINE_20[1] in moved and b"fifteen" not in moved, moved
    kept = stack.patch("up", "fa", "upstreamed")
    assert f"Applied-Upstream: v2, commit:{landing}".encode() in kept, kept
    assert b"+" + LINE_15[1] in kept and b"twenty" not in kept, kept
    # The kept part is on the fix's own base, with the hunk's own context on each side (the
    # other change's line, five lines below, is past it: test_landed_part_context.py).
    assert b"\n@@ -12,7 +12,7 @@" in kept and b"line 20" not in kept, kept
    assert stack.cli("status")[0] == 0  # at v2 the landed change is there: nothing to say
    stack.cli("overlays")
    assert overlay_file(stack.root, "pkg/a.py").read_bytes() == landed.replace(*LINE_20)

    git(stack.up, "revert", "--no-edit", landing)
    git(stack.up, "tag", "v3")
    revert = git(stack.up, "rev-parse", "HEAD").strip()
    _, out, _ = stack.cli("status", "--against", "v3", expect=1)
    assert f"was reverted upstream in {revert[:12]}" in out, out
    assert "`patchforge bring-back up/fa.patch` puts it back in the series" in out, out
    summary = stack.rebase_json("--to", "v3", expect=1)
    assert [g["by"] for g in summary["reverted"]] == [revert], summary
    lint = stack.json("lint", expect=1)
    assert [f["severity"] for f in lint["findings"]
            if f["patch"] == "up/upstreamed/fa.patch"] == ["error"], lint
    stack.cli("bring-back", "up/fa.patch")
    assert not (stack.root / "series/up/upstreamed/fa.patch").exists()
    assert stack.cli("status")[0] == 0
    stack.cli("overlays")
    assert overlay_file(stack.root, "pkg/a.py").read_bytes() == FIXED
