"""A kept fix that landed, then was taken out by upstream's other work (its old code back at its
place, no revert of the landing: said "taken out as part of other work", exit 1), then its old
code edited by upstream (a tidy of the line the fix had replaced). By the files alone neither
the fix's change nor its old code is there: "superseded", and `rebase --to` said "nothing to
do", status exited 0, with the fix in no overlay and not upstream. The commit that took it out
is said still, as taken out, then changed; a re-landing in another form after it, or the fix
put back as it was before the edit, stays quiet (superseded); a revert of the landing in its
place is said as reverted, then changed, as before."""
from __future__ import annotations

import pytest

from helpers.git import git
from helpers.project import OneUpstreamStack
from test_reverts import BASE, FIXED, _landed, _revert, _silent

# Other work in the same file: line 20 reworded as the fix's line goes back to its old code.
TWENTY = (b"line 20 of the module under test\n", b"line twenty of the module under test\n")
OLD_FIVE = b"line 5 of the module under test\n"
TIDIED = (OLD_FIVE, b"line five of the module under test\n")


def _taken_out(tmp_path, how: str):
    """The fix landed at v2, taken out at v3 (`how`: by a `git revert` of the landing, or by
    other work that also rewords line 20): the stack, the landing, the taker, v3's file."""
    stack, landing = _landed(tmp_path)
    if how == "revert":
        taker, at_v3 = _revert(stack, landing, tag="v3"), BASE
    else:
        at_v3 = BASE.replace(*TWENTY)
        taker = stack.commit({"pkg/a.py": at_v3}, "Rework the module's lines", tag="v3")
    return stack, landing, taker, at_v3


@pytest.mark.parametrize("how", ["other-work", "revert"])
def test_a_fix_taken_out_then_its_old_line_edited_is_still_said(tmp_path, how):
    stack, landing, taker, at_v3 = _taken_out(tmp_path, how)
    kind = "reverted" if how == "revert" else "removed"
    document = stack.json("status", "--against", "v3", expect=1)
    assert [(g["kind"], g["by"]) for g in document["reverted"] + document["gone_upstream"]] \
        == [(kind, taker)], document
    # (The old line deleted, then written again tidied: said at each.)
    deleted = stack.commit({"pkg/a.py": at_v3.replace(OLD_FIVE, b"")}, "Drop line five",
                           tag="v3b")
    document = stack.json("status", "--against", "v3b", expect=1)
    assert [(g["kind"], g["by"]) for g in document["reverted"] + document["gone_upstream"]] \
        == [(kind, taker)], document
    assert f"then changed: {deleted[:12]} changed that code since" in \
        (document["reverted"] + document["gone_upstream"])[0]["detail"], document
    # (Its neighbour line reworded with it, a block's reformat: said too.)
    four = (b"line 4 of the module under test\n", b"line four of the module under test\n")
    both = stack.commit({"pkg/a.py": at_v3.replace(*TIDIED).replace(*four)},
                        "Reword lines four and five", tag="v3c")
    document = stack.json("status", "--against", "v3c", expect=1)
    assert [(g["kind"], g["by"]) for g in document["reverted"] + document["gone_upstream"]] \
        == [(kind, taker)], document
    assert f"then changed: {both[:12]} changed that code since" in \
        (document["reverted"] + document["gone_upstream"])[0]["detail"], document
    tidied = at_v3.replace(*TIDIED)
    tidy = stack.commit({"pkg/a.py": tidied}, "Tidy line five", tag="v4")
    document = stack.json("status", "--against", "v4", expect=1)
    (said,) = document["reverted"] + document["gone_upstream"]
    assert (said["kind"], said["by"], said["landed_in"]) == (kind, taker, landing), said
    if how == "revert":
        assert document["gone_upstream"] == [] and \
            f"reverted, then changed: {tidy[:12]} changed that code since" in said["detail"]
    else:
        assert document["reverted"] == [], document
        assert said["detail"] == (
            f"commit {taker[:12]} took its change out as part of other work (no revert of the "
            f"landing); taken out, then changed: {tidy[:12]} changed that code since, and "
            "neither the fix's change nor the code it replaced is there as it was"), said
    heading = "reverted upstream (needs attention)" if how == "revert" else \
        "taken out upstream (needs attention)"
    _, out, err = stack.cli("rebase", "--to", "v4", expect=1)
    assert heading in out + err and taker[:12] in out + err, out + err
    _, out, err = stack.cli("status", expect=1)
    assert heading in out + err and "`patchforge bring-back up/fa.patch`" in out + err, out + err
    lint = stack.json("lint", expect=1)
    assert [f["severity"] for f in lint["findings"]
            if f["patch"] == "up/upstreamed/fa.patch"] == ["error"], lint
    stack.cli("overlays", expect=None)
    for command in (("check",), ("overlays", "--check"), ("verify",)):
        _, out, err = stack.cli(*command, expect=1)
        assert "up/fa.patch" in out + err, (command, out + err)
    # As advised: the bring-back stops on the edited line; the fix put in there goes back
    # into the series, and all is quiet.
    stack.cli("bring-back", "up/fa.patch", expect=3)
    fixed = tidied.replace(b"line five of the module under test\n",
                           b"five = compute_it_properly()\n")
    (stack.root / ".patchforge/work/up/pkg/a.py").write_bytes(fixed)
    stack.cli("bring-back", "--continue")
    assert stack.series("up") == ["fa.patch"]
    assert b"+five = compute_it_properly()" in stack.patch("up", "fa")
    stack.cli("overlays")
    assert (stack.root / "overlays/up/pkg/a.py").read_bytes() == fixed
    document = stack.json("status")
    assert document["reverted"] == [] and document["gone_upstream"] == []
    assert stack.json("lint")["errors"] == 0


@pytest.mark.parametrize("how", ["other-work", "revert"])
@pytest.mark.parametrize("back", ["another-form", "as-it-was-then-edited"])
def test_a_fix_taken_out_then_landed_again_is_superseded(tmp_path, how, back):
    """Taken out, then landed again, in another form or as it was and then its line edited:
    upstream has the fix in its own form, superseded, nothing said."""
    stack, _, _, at_v3 = _taken_out(tmp_path, how)
    if back == "another-form":
        stack.commit({"pkg/a.py": at_v3.replace(
            OLD_FIVE, b"five = compute_it_properly(strict=True)\n")}, "Compute it strictly",
            tag="v4")
    else:
        stack.commit({"pkg/a.py": at_v3.replace(OLD_FIVE, b"five = compute_it_properly()\n")},
                     "Compute it properly again")
        stack.commit({"pkg/a.py": at_v3.replace(
            OLD_FIVE, b"five = compute_it_properly()  # checked\n")}, "Note the check",
            tag="v4")
    assert _silent(stack, "v4")["gone_upstream"] == []


def test_a_fix_edited_by_upstream_then_taken_out_then_its_old_line_edited_is_said(tmp_path):
    """The landed line edited by upstream first (its own form of the fix, nearer the fix than
    the old code), then other work puts the old line back, then that line is tidied: the
    commit that took the fix's form out is named."""
    stack, landing = _landed(tmp_path)
    stack.commit({"pkg/a.py": FIXED.replace(b"compute_it_properly()",
                                            b"compute_it_properly()  # checked")}, "Note it")
    taker = stack.commit({"pkg/a.py": BASE.replace(*TWENTY)}, "Rework the module's lines")
    tidy = stack.commit({"pkg/a.py": BASE.replace(*TWENTY).replace(*TIDIED)}, "Tidy line five",
                        tag="v4")
    document = stack.json("status", "--against", "v4", expect=1)
    assert [(g["kind"], g["by"]) for g in document["gone_upstream"]] == [("removed", taker)], \
        document
    assert f"taken out, then changed: {tidy[:12]}" in document["gone_upstream"][0]["detail"]
    assert document["reverted"] == []


def test_a_hunk_taken_out_by_other_work_then_its_old_line_edited_is_said_in_part(tmp_path):
    """A fix of two hunks; other work puts the first one's old line back, the second kept as
    landed (said taken back in part), then upstream tidies that line: said still, naming the
    hunk, and `bring-back` keeps the landed hunk under upstreamed/."""
    fixed = FIXED.replace(b"line 25 of the module under test\n", b"twenty_five = checked(25)\n")
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": BASE, "pkg/b.py": b"b = 1\n"})
    stack.add_fix("fa", "pkg/a.py", BASE, fixed)
    landing = stack.commit({"pkg/a.py": fixed}, "Compute it properly (#11)", tag="v2")
    stack.cli("rebase", "--to", "v2")
    at_v3 = fixed.replace(b"five = compute_it_properly()\n", OLD_FIVE).replace(*TWENTY)
    taker = stack.commit({"pkg/a.py": at_v3}, "Rework the module's lines", tag="v3")
    tidy = stack.commit({"pkg/a.py": at_v3.replace(*TIDIED)}, "Tidy line five", tag="v4")
    document = stack.json("status", "--against", "v4", expect=1)
    (said,) = document["gone_upstream"]
    assert (said["kind"], said["by"], said["landed_in"]) == ("removed", taker, landing), said
    assert "taken back in part: pkg/a.py hunk 1, the rest of its change still upstream; " \
        f"taken out, then changed: {tidy[:12]} changed that code since" in said["detail"], said
    stack.cli("rebase", "--to", "v4", expect=1)
    stack.cli("status", expect=1)


L25 = b"line 25 of the module under test\n"


@pytest.mark.parametrize("order", ["relanded-elsewhere-and-tidied-in-one",
                                   "tidied-then-relanded-elsewhere",
                                   "relanded-elsewhere-then-tidied"])
def test_a_fix_taken_out_then_landed_again_elsewhere_in_the_file_is_superseded(tmp_path, order):
    """Taken out by other work, then the fix's line landed again lower in the file (upstream
    moved it), the old line tidied before, after or in the same commit: the fix is upstream's
    again, superseded, nothing said (said "taken out, then changed", its bring-back would put
    the line in twice)."""
    stack, _, _, at_v3 = _taken_out(tmp_path, "other-work")
    lower = at_v3.replace(L25, L25 + b"five = compute_it_properly()\n")
    steps = {"relanded-elsewhere-and-tidied-in-one": [lower.replace(*TIDIED)],
             "tidied-then-relanded-elsewhere": [at_v3.replace(*TIDIED), lower.replace(*TIDIED)],
             "relanded-elsewhere-then-tidied": [lower, lower.replace(*TIDIED)]}[order]
    for content in steps:
        stack.commit({"pkg/a.py": content}, "Rework line five")
    git(stack.up, "tag", "v4")
    assert _silent(stack, "v4")["gone_upstream"] == []

