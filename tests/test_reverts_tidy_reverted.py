"""A kept fix taken out upstream (a revert of its landing, or other work), then its old line
tidied (`line 5 of` to `line five of`), then that tidy undone (a revert of it, or its exact
reverse by hand): the old code is back exactly, and what took the fix out is the commit that
did before the tidy. The tidy was read as having the change again (its state neither the
fix's nor the old code's), so the first take-out was passed over, and the tidy's undoing was
said "reverted ... which landed it again after it was taken out", naming the tidy as a
re-landing of the fix. A tidy is told by the fix's place: nearer the old code than the fix.
The mirrors: a real re-landing in another form after the take-out (nearer the fix), then its
revert, is named as one, the tidy before it or not."""
from __future__ import annotations

import pytest

from test_reverts import BASE, _landed, _revert, _said_reverted

TIDY_FIVE = (b"line 5 of the module under test\n", b"line five of the module under test\n")
TWENTY = (b"line 20 of the module under test\n", b"line twenty of the module under test\n")
STRICT_FIVE = b"five = compute_it_properly(strict=True)\n"


def _taken_out(tmp_path, out: str):
    """The fix landed at v2, taken out at v3 (`out`: a `git revert` of the landing, or other
    work that also rewords line 20): (stack, landing, the taker, v3's file)."""
    stack, landing = _landed(tmp_path)
    if out == "a revert":
        return stack, landing, _revert(stack, landing, tag="v3"), BASE
    at_v3 = BASE.replace(*TWENTY)
    return stack, landing, stack.commit({"pkg/a.py": at_v3}, "Rework the module's lines",
                                        tag="v3"), at_v3


@pytest.mark.parametrize("undone", ["a revert of it", "its exact reverse by hand"])
@pytest.mark.parametrize("out", ["a revert", "other work"])
def test_a_tidy_of_the_old_line_undone_is_no_re_landing(tmp_path, out, undone):
    stack, landing, taker, at_v3 = _taken_out(tmp_path, out)
    tidy = stack.commit({"pkg/a.py": at_v3.replace(*TIDY_FIVE)}, "Tidy line five", tag="v4")
    document = stack.json("status", "--against", "v4", expect=1)
    assert [g["by"] for g in document["reverted"] + document["gone_upstream"]] == [taker]
    if undone == "a revert of it":
        _revert(stack, tidy, tag="v5")
    else:
        stack.commit({"pkg/a.py": at_v3}, "Spell line five as before", tag="v5")
    document = stack.json("status", "--against", "v5", expect=1)
    said = document["reverted"] + document["gone_upstream"]
    assert [(g["kind"], g["by"], g["landed_in"]) for g in said] == \
        [("reverted" if out == "a revert" else "removed", taker, landing)], said
    assert "landed it again" not in said[0]["detail"], said
    if out == "a revert":
        assert said[0]["detail"] == f"its message reverts {landing[:12]}", said
        _said_reverted(stack, "v5", taker)
    else:
        assert said[0]["detail"] == (f"commit {taker[:12]} took its change out as part of "
                                     "other work (no revert of the landing)"), said
        summary = stack.rebase_json("--to", "v5", expect=1)
        assert [(g["kind"], g["by"]) for g in summary["gone_upstream"]] == [("removed", taker)]


@pytest.mark.parametrize("tidied", [False, True])
@pytest.mark.parametrize("out", ["a revert", "other work"])
def test_a_re_landing_after_the_take_out_reverted_is_named_as_one(tmp_path, out, tidied):
    """The mirror: after the take-out (and a tidy of the old line reverted, or not) upstream
    writes the fix again in its own form (nearer the fix than the old code), then reverts
    that: the revert of the re-landing is named, as before."""
    stack, _, _, at_v3 = _taken_out(tmp_path, out)
    if tidied:
        _revert(stack, stack.commit({"pkg/a.py": at_v3.replace(*TIDY_FIVE)}, "Tidy line five"))
    again = stack.commit({"pkg/a.py": at_v3.replace(TIDY_FIVE[0], STRICT_FIVE)},
                         "Compute it properly, strictly (#20)", tag="v4")
    stack.cli("status", "--against", "v4", expect=0)
    by = _revert(stack, again, tag="v5")
    _said_reverted(stack, "v5", by)
    (said,) = stack.json("status", "--against", "v5", expect=1)["reverted"]
    assert said["detail"] == \
        f"its message reverts {again[:12]}, which landed it again after it was taken out", said
