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


OTHER = BASE.replace(b"module", b"other module")
SEVEN = (b"line 7 of the other module under test\n", b"seven = compute_it_too()\n")


def _two_files_landed(tmp_path):
    """A fix of two files (pkg/a.py line 5, pkg/b.py line 7) landed at v2 and kept under
    upstreamed/ by the rebase onto v2: (stack, landing)."""
    from helpers.project import add_patch_file, diff_of

    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": BASE, "pkg/b.py": OTHER})
    diff = (diff_of(stack.root.parent / "d1", "pkg/a.py", BASE, FIXED)
            + diff_of(stack.root.parent / "d2", "pkg/b.py", OTHER, OTHER.replace(*SEVEN)))
    add_patch_file(stack.root, "up", "fa.patch",
                   (f"Description: fix fa\nAuthor: T <t@e.com>\nUpstream-Status: Pending\n"
                    f"Upstream: up\nBase: {stack.base}\n\nWhy.\n---\n").encode() + diff)
    landing = stack.commit({"pkg/a.py": FIXED, "pkg/b.py": OTHER.replace(*SEVEN)},
                           "Compute it properly (#11)", tag="v2")
    stack.cli("rebase", "--to", "v2")
    assert stack.series("up") == []
    return stack, landing


def _two_files_taken_out_file_by_file(tmp_path):
    """The two-file fix landed, then taken out by other work a file at a time: v3 puts
    a.py's old line back (rewording line 20), v4 b.py's. (stack, landing, the two takers,
    a.py at v4)."""
    stack, landing = _two_files_landed(tmp_path)
    worked = BASE.replace(*TWENTY)
    first = stack.commit({"pkg/a.py": worked}, "Other work in a", tag="v3")
    second = stack.commit({"pkg/b.py": OTHER}, "Other work in b", tag="v4")
    return stack, landing, (first, second), worked


def test_a_two_file_fix_taken_out_file_by_file_then_its_old_lines_edited_is_said(tmp_path):
    """Each commit took out the part in one file; then upstream rewords both old lines. Each
    commit that took a part out was asked only where it changed every file of the fix, so
    neither was found: read alone, the rewording made the fix "superseded", `status` exited 0
    and `rebase --to` said "nothing to do", the fix in no overlay and not upstream. The commit
    that took the last part out is named, as at the revision before the rewording."""
    stack, landing, (first, second), worked = _two_files_taken_out_file_by_file(tmp_path)
    (said,) = stack.json("status", "--against", "v3", expect=1)["gone_upstream"]
    assert said["by"] == first and "taken back in part: pkg/a.py hunk 1" in said["detail"]
    (said,) = stack.json("status", "--against", "v4", expect=1)["gone_upstream"]
    assert said["by"] == second, said
    tidy = stack.commit({"pkg/a.py": worked.replace(*TIDIED),
                         "pkg/b.py": OTHER.replace(b"line 7 of", b"line seven of")}, "Tidy",
                        tag="v5")
    document = stack.json("status", "--against", "v5", expect=1)
    (said,) = document["gone_upstream"]
    assert document["reverted"] == [], document
    assert (said["kind"], said["by"], said["landed_in"]) == ("removed", second, landing), said
    assert said["detail"] == (
        f"commit {second[:12]} took its change out as part of other work (no revert of the "
        f"landing); taken out, then changed: {tidy[:12]} changed that code since, and "
        "neither the fix's change nor the code it replaced is there as it was"), said
    _, out, err = stack.cli("rebase", "--to", "v5", expect=1)
    assert "taken out upstream (needs attention)" in out + err and second[:12] in out + err, \
        out + err
    _, out, err = stack.cli("status", expect=1)
    assert "`patchforge bring-back up/fa.patch`" in out + err, out + err


def test_a_two_file_fix_taken_out_file_by_file_then_landed_again_is_superseded(tmp_path):
    """Taken out a file at a time, then landed again in upstream's own form in both files:
    upstream has the fix, nothing said."""
    stack, _, _, worked = _two_files_taken_out_file_by_file(tmp_path)
    stack.commit({"pkg/a.py": worked.replace(OLD_FIVE,
                                             b"five = compute_it_properly(strict=True)\n"),
                  "pkg/b.py": OTHER.replace(SEVEN[0], b"seven = compute_it_too(strict=True)\n")},
                 "Compute them strictly", tag="v5")
    assert _silent(stack, "v5")["gone_upstream"] == []


def test_a_two_file_fix_one_file_rewritten_the_other_edited_elsewhere_is_superseded(tmp_path):
    """Nothing taken out: upstream writes a.py's line its own way, then other work edits
    b.py elsewhere (a commit changing one file of the fix that takes no part of it out)."""
    stack, _ = _two_files_landed(tmp_path)
    stack.commit({"pkg/a.py": FIXED.replace(b"compute_it_properly()",
                                            b"compute_it_properly(strict=True)")}, "Strictly")
    stack.commit({"pkg/b.py": OTHER.replace(*SEVEN).replace(b"line 20 of", b"line twenty of")},
                 "Other work in b", tag="v5")
    assert _silent(stack, "v5")["gone_upstream"] == []


STRICT = BASE.replace(OLD_FIVE, b"five = compute_it_properly(strict=True)\n")


def test_a_two_file_fix_one_file_rewritten_the_other_taken_out_is_said_and_brought_back(
        tmp_path):
    """Upstream writes a.py's line its own way, then other work puts b.py's old line back: the
    file written otherwise made the whole fix "superseded" (one file of it neither there nor
    gone), `status` exited 0 and `rebase --to` said nothing, b.py's part in no overlay and not
    upstream. Said taken back in part, as for two hunks of one file, and `bring-back` puts
    b.py's part back (a.py's stop resolved to upstream's line)."""
    stack, landing = _two_files_landed(tmp_path)
    stack.commit({"pkg/a.py": STRICT}, "Strictly")
    took = stack.commit({"pkg/b.py": OTHER}, "Other work in b", tag="v4")
    (said,) = stack.json("status", "--against", "v4", expect=1)["gone_upstream"]
    assert (said["kind"], said["by"], said["landed_in"]) == ("removed", took, landing), said
    assert said["detail"].endswith(
        "taken back in part: pkg/b.py hunk 1, the rest of its change changed upstream since "
        "(pkg/a.py)"), said
    _, out, err = stack.cli("rebase", "--to", "v4", expect=1)
    assert "taken out upstream (needs attention)" in out + err and took[:12] in out + err, \
        out + err
    _, _, err = stack.cli("bring-back", "up/fa.patch", expect=3)
    assert "conflict in pkg/a.py" in err, err
    (stack.root / ".patchforge/work/up/pkg/a.py").write_bytes(STRICT)
    stack.cli("bring-back", "--continue")
    assert stack.series("up") == ["fa.patch"]
    moved = stack.patch("up", "fa")
    assert b"\n+seven = compute_it_too()" in moved and b"compute_it_properly" not in moved, \
        moved.decode()
    stack.cli("overlays")
    assert (stack.root / "overlays/up/pkg/b.py").read_bytes() == OTHER.replace(*SEVEN)
    for command in (("check",), ("status",)):
        stack.cli(*command)


def test_a_two_file_fix_one_file_rewritten_the_other_moved_in_its_file_is_superseded(tmp_path):
    """The mirror: upstream writes a.py's line its own way and moves b.py's line lower (its old
    line back at its place, the fix's line still in the file): nothing taken out, nothing
    said."""
    stack, _ = _two_files_landed(tmp_path)
    stack.commit({"pkg/a.py": STRICT}, "Strictly")
    lower = OTHER.replace(b"line 20 of the other module under test\n",
                          b"line 20 of the other module under test\n" + SEVEN[1])
    stack.commit({"pkg/b.py": lower}, "Compute seven later", tag="v4")
    assert _silent(stack, "v4")["gone_upstream"] == []


def test_a_two_file_fix_both_files_rewritten_is_superseded(tmp_path):
    """The mirror: upstream writes both files' lines its own way (neither file's old code
    back): superseded, nothing said."""
    stack, _ = _two_files_landed(tmp_path)
    stack.commit({"pkg/a.py": STRICT}, "Strictly")
    stack.commit({"pkg/b.py": OTHER.replace(SEVEN[0], b"seven = compute_it_too(strict=True)\n")},
                 "Strictly too", tag="v4")
    assert _silent(stack, "v4")["gone_upstream"] == []


ROUGH = b"five = compute_it_roughly()\n"


@pytest.mark.parametrize("out", ["a revert", "other work", "a revert put back"])
def test_a_revert_of_the_landing_is_named_over_a_later_undoing_of_a_change_near_the_fix(
        tmp_path, out):
    """Reverted, then the old line changed for a while to one nearer the fix than the old
    code (read as a re-landing: AITER `30f3975714`, reverted by `ae821833f8`, its runner line
    then set to another runner like the fix's and back), that undone by other work, then the
    old line tidied: the revert of the landing is named ("reverted, then changed"), not the
    commit that undid the temporary change (it was said "taken out ... as part of other
    work"). The mirrors: taken out by other work, no revert of the landing to name, the
    newest commit that took it out is named, as before; a revert put back as it was (a revert
    of the revert) before the temporary change is no revert of it any more."""
    stack, landing = _landed(tmp_path)
    if out == "a revert":
        first, at = _revert(stack, landing), BASE
    else:
        if out == "a revert put back":
            _revert(stack, _revert(stack, landing))
        at = BASE.replace(*TWENTY)
        first = stack.commit({"pkg/a.py": at}, "Rework the module's lines")
    stack.commit({"pkg/a.py": at.replace(OLD_FIVE, ROUGH)}, "Compute it roughly for now")
    undone = stack.commit({"pkg/a.py": at}, "Line five back for now")
    tidy = stack.commit({"pkg/a.py": at.replace(*TIDIED)}, "Tidy line five", tag="v4")
    document = stack.json("status", "--against", "v4", expect=1)
    said = document["reverted"] + document["gone_upstream"]
    changed = f"{tidy[:12]} changed that code since, and neither the fix's change nor the " \
        "code it replaced is there as it was"
    if out == "a revert":
        assert [(g["kind"], g["by"]) for g in said] == [("reverted", first)], said
        assert said[0]["detail"] == \
            f"its message reverts {landing[:12]}; reverted, then changed: {changed}", said
    else:
        assert [(g["kind"], g["by"]) for g in said] == [("removed", undone)], said
        assert said[0]["detail"] == (
            f"commit {undone[:12]} took its change out as part of other work (no revert of "
            f"the landing); taken out, then changed: {changed}"), said


def test_a_revert_that_edited_a_neighbour_of_the_hunk_it_took_out_is_named_once_undone(
        tmp_path):
    """A fix of two lines (5 and 25) landed; other work put line 25's old code back; then a
    revert of the landing put line 5's back, editing line 8 (a neighbour of that hunk) and
    line 25's old code; a later commit undid the edit of line 8. Line 5's hunk is taken back
    (its old code back exactly), line 25's changed since. The revert took line 5 out, but the
    fix was neither there nor gone after it (line 5's old code not back exactly beside line
    25 changed), so no commit leaving less of the whole change named it: the commit undoing
    the edit of line 8 was said to take the change out as other work (AITER `11dfa25a40` at
    the head: "unexplained", its revert `517a3af5ec` unnamed). The revert is named."""
    twenty_five = b"line 25 of the module under test\n"
    stack, landing = _landed(tmp_path, FIXED.replace(twenty_five, b"twenty_five = also_fixed()\n"))
    stack.commit({"pkg/a.py": FIXED}, "Other work on line 25")
    tidied = BASE.replace(twenty_five, b"line 25 of the module, tidied\n")
    eight = b"line 8 of the module under test\n"
    revert = stack.commit({"pkg/a.py": tidied.replace(eight, eight[:-1] + b"  # and more\n")},
                          'Revert "Compute it properly (#11)"\n\n'
                          f"This reverts commit {landing}.")
    stack.commit({"pkg/a.py": tidied}, "Line 8 as it was", tag="v4")
    (said,) = stack.json("status", "--against", "v4", expect=1)["reverted"]
    assert (said["by"], said["landed_in"]) == (revert, landing), said
    assert "taken back in part: pkg/a.py hunk 1, the rest of its change changed upstream " \
        "since (pkg/a.py hunk 2)" in said["detail"], said
