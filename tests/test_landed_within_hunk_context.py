"""A fix whose one hunk holds two changes (lines 15 and 20) and upstream lands one of them in a
commit that also edits a line between them (line 17): no mix of the hunk's changes is in the
file whole, so each change is aligned on its own (its own nearest context lines, one place
only, in one form only, the places as far apart as in the hunk). The landed change is said
and kept under upstreamed/, its revert said. Wherever two readings exist, or upstream made a
change its own way, or moved the code, nothing is said. Real git upstreams, the CLI as a user
runs it."""
from __future__ import annotations

import pytest
from helpers.within_hunk import (HALF, LINE_15, LINE_20, landed_part_kept_then_reverted,
                                 within_hunk_stack)

LINE_17 = (b"line 17 of the module under test\n", b"seventeen = tidied_by_upstream()\n")
# Upstream's commit: the line-15 change of the fix, and its own edit of line 17 between.
LANDED = HALF.replace(*LINE_17)


def test_a_change_landed_inside_a_hunk_with_a_line_between_edited_is_kept_and_its_revert_said(
        tmp_path):
    """Before, `status --against` said "merges" with no evidence and the rebase "3-way merged
    cleanly" and nothing more: the line-15 change in no patch and not under upstreamed/, and
    when upstream reverted it, status said only "fuzz" of the fix, the change in no patch and
    no overlay."""
    landed_part_kept_then_reverted(within_hunk_stack(tmp_path), LANDED)


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
    stack = within_hunk_stack(tmp_path)
    stack.commit({"pkg/a.py": NOT_SPLIT[why]}, "Upstream's own work (#15)", tag="v2")
    _, out, err = stack.cli("status", "--against", "v2", expect=None)
    assert "landed in part" not in out + err, out + err
    _, out, err = stack.cli("rebase", "--to", "v2", expect=None)
    assert "landed in part" not in out + err, out + err
    assert not (stack.root / "series/up/upstreamed/fa.patch").exists()
