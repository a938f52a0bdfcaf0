"""A fix whose one hunk holds two changes (lines 15 and 20) and upstream lands one of them in a
commit that also edits a line between them (line 17): no mix of the hunk's changes is in the
file whole, so each change is aligned on its own (its own nearest context lines, one place
only, in one form only, the places as far apart as in the hunk). The landed change is said
and kept under upstreamed/, its revert said. Wherever two readings exist, or upstream made a
change its own way, or moved the code, nothing is said. Real git upstreams, the CLI as a user
runs it."""
from __future__ import annotations

import pytest
from helpers.git import git
from helpers.project import OneUpstreamStack
from helpers.template import overlay_file

BASE = b"".join(b"line %d of the module under test\n" % i for i in range(1, 41))
LINE_15 = (b"line 15 of the module under test\n", b"fifteen = compute_it_the_better_way()\n")
LINE_17 = (b"line 17 of the module under test\n", b"seventeen = tidied_by_upstream()\n")
LINE_20 = (b"line 20 of the module under test\n", b"twenty = compute_it_the_better_way()\n")
FIXED = BASE.replace(*LINE_15).replace(*LINE_20)
# Upstream's commit: the line-15 change of the fix, and its own edit of line 17 between.
LANDED = BASE.replace(*LINE_15).replace(*LINE_17)


def _stack(tmp_path):
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": BASE, "pkg/b.py": b"b = 1\n"})
    stack.add_fix("fa", "pkg/a.py", BASE, FIXED)
    assert stack.patch("up", "fa").count(b"\n@@ ") == 1  # one hunk holds both changes
    return stack


def test_a_change_landed_inside_a_hunk_with_a_line_between_edited_is_kept_and_its_revert_said(
        tmp_path):
    """Before, `status --against` said "merges" with no evidence and the rebase "3-way merged
    cleanly" and nothing more: the line-15 change in no patch and not under upstreamed/, and
    when upstream reverted it, status said only "fuzz" of the fix, the change in no patch and
    no overlay."""
    stack = _stack(tmp_path)
    landing = stack.commit({"pkg/a.py": LANDED}, "Fifteen better, seventeen tidied (#14)",
                           tag="v2")
    _, out, _ = stack.cli("status", "--against", "v2", expect=1)
    assert "landed in part: pkg/a.py hunk 1: upstream has 1 of its 2 changes, not the " \
        "others" in out, out
    _, out, _ = stack.cli("rebase", "--to", "v2")
    assert "3-way merged cleanly; landed in part: 1 of the 2 changes in its hunk 1 " \
        f"(pkg/a.py) landed upstream in {landing[:12]}: kept under upstreamed/" in out, out
    moved = stack.patch("up", "fa")
    assert b"+twenty = compute" in moved and b"fifteen" not in moved, moved
    kept = stack.patch("up", "fa", "upstreamed")
    assert f"Applied-Upstream: v2, commit:{landing}".encode() in kept, kept
    assert b"+fifteen = compute" in kept and b"twenty" not in kept, kept
    assert stack.cli("status")[0] == 0  # at v2 the landed change is there: nothing to say
    stack.cli("overlays")
    assert overlay_file(stack.root, "pkg/a.py").read_bytes() == FIXED.replace(*LINE_17)

    git(stack.up, "revert", "--no-edit", landing)
    git(stack.up, "tag", "v3")
    revert = git(stack.up, "rev-parse", "HEAD").strip()
    _, out, _ = stack.cli("status", "--against", "v3", expect=1)
    assert f"was reverted upstream in {revert[:12]}" in out, out
    summary = stack.rebase_json("--to", "v3", expect=1)
    assert [g["by"] for g in summary["reverted"]] == [revert], summary
    stack.cli("bring-back", "up/fa.patch")
    assert not (stack.root / "series/up/upstreamed/fa.patch").exists()
    assert stack.cli("status")[0] == 0
    stack.cli("overlays")
    assert overlay_file(stack.root, "pkg/a.py").read_bytes() == FIXED


TWICE_MADE = b"line 14 of the module under test\n" + LINE_15[1] + \
    b"line 16 of the module under test\n"
TWICE_OLD = b"line 14 of the module under test\n" + LINE_15[0] + \
    b"line 16 of the module under test\n"
MOVED = b"".join(b"line %d of the module under test\n" % i for i in range(18, 26))

NOT_SPLIT = {
    # Upstream made line 15 another way (a similar change, not the fix's).
    "line 15 made another way": LANDED.replace(LINE_15[1], b"fifteen = compute_it(strict=True)\n"),
    # The landed change's lines, with its own context lines, are in the file twice.
    "the landed change twice": LANDED + TWICE_MADE,
    # ...or its old form is there too, elsewhere: two readings.
    "the old form elsewhere too": LANDED + TWICE_OLD,
    # Upstream took the hunk with its own change of line 20.
    "line 20 made its own way": LANDED.replace(LINE_20[0], b"twenty = compute(strict=True)\n"),
    # Upstream made the line-20 change elsewhere (line 30), keeping the old line 20.
    "line 20's change made elsewhere": LANDED.replace(
        b"line 30 of the module under test\n", LINE_20[1]),
    # The code around line 20 moved far below (after line 40).
    "the context moved far": LANDED.replace(MOVED, b"") + MOVED,
}


@pytest.mark.parametrize("why", sorted(NOT_SPLIT))
def test_a_change_aligned_on_its_own_is_not_said_where_two_readings_exist(tmp_path, why):
    """Where upstream also edited a line between the changes, each change is aligned on its
    own only where that leaves one reading: none of these says "landed in part", and the
    rebase keeps nothing under upstreamed/."""
    stack = _stack(tmp_path)
    stack.commit({"pkg/a.py": NOT_SPLIT[why]}, "Upstream's own work (#15)", tag="v2")
    _, out, err = stack.cli("status", "--against", "v2", expect=None)
    assert "landed in part" not in out + err, out + err
    _, out, err = stack.cli("rebase", "--to", "v2", expect=None)
    assert "landed in part" not in out + err, out + err
    assert not (stack.root / "series/up/upstreamed/fa.patch").exists()
