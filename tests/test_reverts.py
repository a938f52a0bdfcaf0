"""A fix that landed upstream (kept under upstreamed/ with its landing commit) and that upstream
then took back: judged at the revision a command has (the pin, `status --against`'s or `rebase
--to`'s target) by the files there first, the history asked only to name the commit and to tell
a revert from other work. Each case is real git history made here: the reverts to say (status
exit 1, lint error, the rebase's summary) and the changes that are no revert (exit 0)."""
from __future__ import annotations

import json
import shutil

import pytest

from helpers.git import commit_files, git
from patchforge.formats.schemas import validation_errors
from helpers.project import OneUpstreamStack

BASE = b"".join(b"line %d of the module under test\n" % i for i in range(1, 31))
FIXED = BASE.replace(b"line 5 of the module under test\n", b"five = compute_it_properly()\n")
GUARD = b"if value is None:\n    raise ValueError('a value is needed here')\n"
GUARDED = BASE.replace(b"line 10 of the module under test\n",
                       b"line 10 of the module under test\n" + GUARD)


def _landed(tmp_path, fixed=FIXED, message="Compute it properly (#11)"):
    """A stack whose fix `fa` (pkg/a.py: BASE -> `fixed`) lands upstream at v2 and is dropped
    into upstreamed/ by the rebase onto v2, its landing commit recorded: (stack, landing)."""
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": BASE, "pkg/b.py": b"b = 1\n"})
    stack.add_fix("fa", "pkg/a.py", BASE, fixed)
    landing = stack.commit({"pkg/a.py": fixed}, message, tag="v2")
    stack.cli("rebase", "--to", "v2")
    kept = stack.root / "series/up/upstreamed/fa.patch"
    assert kept.is_file()
    assert f"commit:{landing}".encode() in kept.read_bytes()
    return stack, landing


def _revert(stack, commit: str, *args: str, tag: str | None = None) -> str:
    git(stack.up, "revert", "--no-edit", *args, commit)
    if tag:
        git(stack.up, "tag", tag)
    return git(stack.up, "rev-parse", "HEAD").strip()


def _said_reverted(stack, target: str, by: str, name: str = "fa") -> None:
    """status --against TARGET exits 1 naming the reverting commit and the way back; its
    --json has the entry; the rebase onto TARGET says it (exit 1: it needs attention, as
    status says), status and lint after it too."""
    _, out, _ = stack.cli("status", "--against", target, expect=1)
    assert f"was reverted upstream in {by[:12]}" in out, out
    assert f"`patchforge bring-back up/{name}.patch` puts it back in the series" in out, out
    document = stack.json("status", "--against", target, expect=1)
    assert validation_errors(document, "status") == []
    assert document["needs_attention"] is True
    assert [(g["name"], g["kind"], g["by"]) for g in document["reverted"]] == \
        [(f"{name}.patch", "reverted", by)], document["reverted"]
    summary = stack.rebase_json("--to", target, expect=1)
    assert [g["by"] for g in summary["reverted"]] == [by], summary
    _, out, _ = stack.cli("status", expect=1)
    assert f"reverted upstream (needs attention): fix up/{name}.patch landed in" in out, out
    lint = stack.json("lint", expect=1)
    assert [f["severity"] for f in lint["findings"]
            if f["patch"] == f"up/upstreamed/{name}.patch"] == ["error"], lint


def _brought_back(stack, name: str, line: bytes) -> None:
    """`bring-back up/NAME.patch`, the command the report names, puts the fix back at the end of
    the series with its `line`; status and lint are quiet after it."""
    stack.cli("bring-back", f"up/{name}.patch")
    assert stack.series("up")[-1] == f"{name}.patch"
    assert not (stack.root / f"series/up/upstreamed/{name}.patch").exists()
    assert b"\n+" + line in stack.patch("up", name)
    document = stack.json("status")
    assert document["reverted"] == [] and document["gone_upstream"] == []
    assert {p["name"]: p["state"] for p in document["patches"]}[f"{name}.patch"] == "applies"
    assert stack.json("lint")["errors"] == 0


def _silent(stack, target: str) -> dict:
    """Nothing called reverted at TARGET: status --against, the rebase onto it, status and
    lint never say "reverted". A change taken out by other work (`gone_upstream`: the fix's
    old code back at its place, in no overlay) needs attention: each exits 1 (lint with an error
    for the kept fix) and says it as taken out; with nothing taken out, all exit 0. The status
    document at TARGET."""
    _, out, _ = stack.cli("status", "--against", target, expect=None)
    document = json.loads(stack.cli("status", "--against", target, "--json", expect=None)[1])
    assert validation_errors(document, "status") == []
    assert document["reverted"] == [], document["reverted"]
    taken_out = bool(document["gone_upstream"])
    code = 1 if taken_out else 0
    assert document["needs_attention"] is taken_out
    _, out, err = stack.cli("rebase", "--to", target, expect=code)
    assert "reverted" not in out + err, out + err
    assert ("taken out upstream (needs attention)" in out + err) is taken_out, out + err
    _, out, err = stack.cli("status", expect=code)
    assert "reverted" not in out + err, out + err
    lint = json.loads(stack.cli("lint", "--json", expect=code)[1])
    assert bool([f for f in lint["findings"] if f["patch"] == "up/upstreamed/fa.patch"
                 and f["severity"] == "error"]) is taken_out, lint
    return document


def test_a_git_revert_is_said_until_bring_back_puts_the_fix_back(tmp_path):
    """(e) `git revert` of the landing commit: the rebase onto it said "nothing to do" and
    every status after it exit 0 while the fix sat in upstreamed/ and nothing deployed it.
    Now status --against, the rebase, status and lint say it; `bring-back` of the kept fix
    puts it back at the end of the series, and all is quiet."""
    stack, landing = _landed(tmp_path)
    stack.cli("status")
    stack.commit({"pkg/b.py": b"b = 2\n"}, "Something else", tag="v2b")
    revert = _revert(stack, landing, tag="v3")
    _said_reverted(stack, "v3", revert)
    document = stack.json("status", expect=1)
    assert f"its message reverts {landing[:12]}" in document["reverted"][0]["detail"]
    _, out, _ = stack.cli("bring-back", "up/fa.patch")
    assert stack.series("up") == ["fa.patch"]
    assert not (stack.root / "series/up/upstreamed/fa.patch").exists()
    assert b"compute_it_properly" in stack.patch("up", "fa")
    # Back in the series it no longer says it landed (it kept `Applied-Upstream: v2, commit
    # ID`, which lint warned about: not DEP-3's `commit:ID`).
    assert b"Applied-Upstream" not in stack.patch("up", "fa")
    document = stack.json("status")
    assert document["reverted"] == [] and document["patches"][0]["state"] == "applies"
    lint = stack.json("lint")
    assert lint["errors"] == 0
    assert not [f for f in lint["findings"] if f["check"] == "header"], lint


def test_a_pin_rolled_back_follows_the_pin_not_what_was_said_before(tmp_path):
    """(a) Said at the revert; the pin rolled back to before the revert: the fix is upstream
    there, nothing is said (no verdict kept from the other pin). Rolled back to before the
    landing (a bad nightly rolled back from): the fix is in no overlay and nothing upstream
    stands for it, so it needs attention as a revert does (it was a note, exit 0, and the
    rolled-back deployment went out without the fix with every check green); `bring-back`
    puts it back and all is quiet."""
    stack, landing = _landed(tmp_path)
    revert = _revert(stack, landing, tag="v3")
    _said_reverted(stack, "v3", revert)
    _silent(stack, "v2")
    document = stack.json("status", "--against", "v1", expect=1)
    assert validation_errors(document, "status") == []
    assert document["needs_attention"] is True and document["reverted"] == []
    assert [(g["kind"], g["landed_in"]) for g in document["gone_upstream"]] == \
        [("before-landing", landing)], document
    # The rollback's dry run and the rollback itself need attention too: exit 1 (both exited
    # 0, and `rebase --to v1 && patchforge overlays && deploy` went out without the fix).
    _, out, _ = stack.cli("rebase", "--to", "v1", "--dry-run", expect=1)
    assert "before its landing (needs attention)" in out, out
    _, out, _ = stack.cli("rebase", "--to", "v1", expect=1)
    said = "before its landing (needs attention): fix up/fa.patch landed in"
    assert said in out and "in no overlay" in out, out
    _, out, _ = stack.cli("status", expect=1)
    assert said in out and "`patchforge bring-back up/fa.patch`" in out, out
    lint = stack.json("lint", expect=1)
    assert [f["patch"] for f in lint["findings"] if f["severity"] == "error"] == \
        ["up/upstreamed/fa.patch"], lint
    stack.cli("bring-back", "up/fa.patch")
    assert stack.series("up") == ["fa.patch"]
    stack.cli("status")
    assert stack.json("lint")["errors"] == 0


def test_lines_a_fix_added_dropped_as_part_of_other_work_are_no_revert(tmp_path):
    """(b) A fix that only adds lines (a guard); upstream later drops them in a rework of the
    module (other lines changed too), or moves the code to another file: no revert. The
    first is said as taken out by that commit and needs attention (exit 1: the module is as
    before the fix, and no overlay has it; it was a note, exit 0, which CI never sees); the
    second says nothing."""
    stack, landing = _landed(tmp_path / "rework", fixed=GUARDED, message="Guard the value (#12)")
    reworked = BASE.replace(b"line 2 of the module", b"line two of the module") \
        .replace(b"line 25 of the module", b"line twenty-five of the module")
    rework = stack.commit({"pkg/a.py": reworked}, "Rework the loader", tag="v3")
    document = _silent(stack, "v3")
    assert [(g["kind"], g["by"]) for g in document["gone_upstream"]] == [("removed", rework)]

    stack, landing = _landed(tmp_path / "moved", fixed=GUARDED, message="Guard the value (#12)")
    lines = GUARDED.split(b"\n")
    stack.commit({"pkg/a.py": b"\n".join(lines[:6]) + b"\n",
                  "pkg/c.py": b"\n".join(lines[6:])}, "Split the module", tag="v3")
    document = _silent(stack, "v3")
    assert document["gone_upstream"] == []

    # A file the fix created, moved by upstream as it is, then moved again with an edit.
    helper = b"".join(b"def helper_%d():\n    return %d\n" % (i, i) for i in range(12))
    stack = OneUpstreamStack(tmp_path / "created", {"pkg/a.py": BASE})
    stack.add_fix("fa", "pkg/helper.py", None, helper)
    stack.commit({"pkg/helper.py": helper}, "Add the helper (#13)", tag="v2")
    stack.cli("rebase", "--to", "v2")
    assert (stack.root / "series/up/upstreamed/fa.patch").is_file()
    stack.commit({"pkg/helper.py": None, "pkg/util/helper.py": helper}, "Move the helper",
                 tag="v3")
    assert _silent(stack, "v3")["gone_upstream"] == []
    stack.commit({"pkg/util/helper.py": None,
                  "pkg/util/helpers.py": b"# helpers\n" + helper.replace(b"return", b"yield")},
                 "Rework the helpers", tag="v4")
    # (git's rename detection may still pair the two files: said nothing, or a note)
    assert [g["kind"] for g in _silent(stack, "v4")["gone_upstream"]] in ([], ["removed"])


def test_a_hand_made_exact_reverse_is_a_revert(tmp_path):
    """(f) No revert message: a commit whose change to the fix's file is the exact reverse of
    the landing's (after another commit changed the file elsewhere) is a revert."""
    stack, landing = _landed(tmp_path)
    later = FIXED.replace(b"line 25 of the module", b"line twenty-five of the module")
    stack.commit({"pkg/a.py": later}, "Rename a line", tag="v2b")
    undo = stack.commit({"pkg/a.py": later.replace(b"five = compute_it_properly()\n",
                                                   b"line 5 of the module under test\n")},
                        "Go back to the old computation", tag="v3")
    _said_reverted(stack, "v3", undo)
    document = stack.json("status", expect=1)
    assert "exact reverse" in document["reverted"][0]["detail"]


def test_a_fix_landed_again_in_another_form_after_its_revert_is_landed(tmp_path):
    """(k) Reverted, then landed again in another form: upstream has the fix, nothing is
    said (and a target at the revert itself still says it)."""
    stack, landing = _landed(tmp_path)
    revert = _revert(stack, landing, tag="v3")
    other = BASE.replace(b"line 5 of the module under test\n",
                         b"five = compute_it_properly(strict=True)\n")
    stack.commit({"pkg/a.py": other}, "Compute it properly, strictly (#20)", tag="v4")
    _silent(stack, "v4")
    stack.cli("status", "--against", "v3", expect=1)
    assert revert



TIDIED = BASE.replace(b"line 5 of the module under test\n",
                      b"line 5 of the module under test, tidied\n")


def test_a_revert_then_an_edit_of_the_same_line_is_still_said(tmp_path):
    """Reverted at v3 (said), then upstream edits that same line at v4: by the files alone
    neither the fix's change nor its old code is there ("superseded"), and `rebase --to v4`,
    status, lint, check, overlays --check and verify all exited 0 with the fix in no patch
    and no overlay. The revert the history holds is said still, as reverted then changed,
    until `bring-back` (a stop: upstream changed the fix's line) puts the fix back."""
    stack, landing = _landed(tmp_path)
    revert = _revert(stack, landing, tag="v3")
    stack.cli("status", "--against", "v3", expect=1)
    tidy = stack.commit({"pkg/a.py": TIDIED}, "tidy line 5", tag="v4")
    _said_reverted(stack, "v4", revert)
    (said,) = stack.json("status", expect=1)["reverted"]
    assert f"its message reverts {landing[:12]}" in said["detail"], said
    assert f"reverted, then changed: {tidy[:12]} changed that code since" in said["detail"], said
    stack.cli("overlays", expect=None)
    for command in (("check",), ("overlays", "--check"), ("verify",)):
        _, out, err = stack.cli(*command, expect=1)
        assert "up/fa.patch" in out + err, (command, out + err)
    stack.cli("bring-back", "up/fa.patch", expect=3)
    (stack.root / ".patchforge/work/up/pkg/a.py").write_bytes(FIXED)
    stack.cli("bring-back", "--continue")
    assert stack.series("up") == ["fa.patch"]
    assert b"+five = compute_it_properly()" in stack.patch("up", "fa")
    stack.cli("overlays")
    document = stack.json("status")
    assert document["reverted"] == [] and document["gone_upstream"] == []
    assert stack.json("lint")["errors"] == 0


def test_a_revert_by_hand_without_the_word_then_an_edit_is_still_said(tmp_path):
    """The landing undone by hand (the old line typed back, a message that does not say
    revert), then that line edited again: by the files neither the fix nor its old code is
    there, and the history was asked only for commits whose message says revert, so every
    check was green with the fix in no patch and no overlay. A commit that puts the fix's file
    back as the landing found it, from exactly what the landing made, is asked too: said as
    reverted (its change the landing's exact reverse), then changed. One that also changes
    another line of the file is no reverse: said taken out as part of other work, then
    changed, never reverted."""
    stack, landing = _landed(tmp_path / "undone")
    undo = stack.commit({"pkg/a.py": BASE}, "Go back to the plain computation", tag="v3")
    tidy = stack.commit({"pkg/a.py": TIDIED}, "tidy line 5", tag="v4")
    _said_reverted(stack, "v4", undo)
    (said,) = stack.json("status", expect=1)["reverted"]
    assert f"its change is the exact reverse of {landing[:12]}'s" in said["detail"], said
    assert f"reverted, then changed: {tidy[:12]} changed that code since" in said["detail"], said

    stack, landing = _landed(tmp_path / "reworked")
    took = stack.commit({"pkg/a.py": BASE.replace(b"line 9 of the module",
                                                  b"line nine of the module")},
                        "Plain computation, and line nine", tag="v3")
    stack.commit({"pkg/a.py": TIDIED.replace(b"line 9 of the module", b"line nine of the module")},
                 "tidy line 5", tag="v4")
    assert [g["by"] for g in _silent(stack, "v4")["gone_upstream"]] == [took]


def test_a_revert_by_hand_after_other_edits_of_the_file_then_an_edit_is_still_said(tmp_path):
    """Upstream edits another line of the fix's file (line 25), then takes the fix's line
    out by hand (the old line typed back, a message without the word revert), then edits
    that line again: the commit that took it out did not put the file back as the landing
    found it (line 25 stays edited), so it was never asked, and every check was green with
    the fix in no patch and no overlay. A commit before which the fix is there whole and
    after which its old code is back is asked too: said as reverted (its change the
    landing's exact reverse), then changed. One that also changes another line is no
    reverse: said taken out as part of other work, then changed, never reverted."""
    reworded = (b"line 25 of the module under test\n", b"line 25, reworded\n")
    stack, landing = _landed(tmp_path / "undone")
    stack.commit({"pkg/a.py": FIXED.replace(*reworded)}, "Reword line 25")
    undo = stack.commit({"pkg/a.py": BASE.replace(*reworded)},
                        "Go back to the plain computation", tag="v3")
    tidy = stack.commit({"pkg/a.py": TIDIED.replace(*reworded)}, "tidy line 5", tag="v4")
    _said_reverted(stack, "v4", undo)
    (said,) = stack.json("status", expect=1)["reverted"]
    assert f"its change is the exact reverse of {landing[:12]}'s" in said["detail"], said
    assert f"reverted, then changed: {tidy[:12]} changed that code since" in said["detail"], said

    stack, landing = _landed(tmp_path / "reworked")
    stack.commit({"pkg/a.py": FIXED.replace(*reworded)}, "Reword line 25")
    nine = (b"line 9 of the module", b"line nine of the module")
    took = stack.commit({"pkg/a.py": BASE.replace(*reworded).replace(*nine)},
                        "Plain computation, and line nine", tag="v3")
    stack.commit({"pkg/a.py": TIDIED.replace(*reworded).replace(*nine)}, "tidy line 5",
                 tag="v4")
    assert [g["by"] for g in _silent(stack, "v4")["gone_upstream"]] == [took]


def test_a_revert_by_hand_of_only_the_fixs_lines_of_a_wider_landing_is_said(tmp_path):
    """The landing commit changes the fix's line 5 and, as other work, line 20 of the same
    file; upstream then takes out the fix's line only, by hand (the old line typed back, a
    message without the word revert), line 20 kept. Its change was compared with the
    landing's whole change, never its exact reverse: at the revision after it the fix was
    "taken out as part of other work", and once upstream edited line 5 again every check was
    green with the fix in no patch and no overlay. A change that is the exact reverse of the
    landing's blocks that are the fix's own is a revert of it: said as reverted, then
    changed. One that also changes another line is no reverse: said taken out as part of other
    work, and so still once line 5 is edited again, never reverted."""
    twenty = (b"line 20 of the module under test\n", b"line 20, made wider\n")
    for place, undone in (("undone", BASE), ("reworked", BASE.replace(
            b"line 9 of the module", b"line nine of the module"))):
        stack = OneUpstreamStack(tmp_path / place, {"pkg/a.py": BASE, "pkg/b.py": b"b = 1\n"})
        stack.add_fix("fa", "pkg/a.py", BASE, FIXED)
        landing = stack.commit({"pkg/a.py": FIXED.replace(*twenty)},
                               "Compute it properly, and a wider line 20 (#11)", tag="v2")
        stack.cli("rebase", "--to", "v2")
        assert f"commit:{landing}".encode() in \
            (stack.root / "series/up/upstreamed/fa.patch").read_bytes()
        undo = stack.commit({"pkg/a.py": undone.replace(*twenty)},
                            "Go back to the plain computation", tag="v3")
        tidy = stack.commit({"pkg/a.py": undone.replace(*twenty).replace(
            b"line 5 of the module under test\n", b"line 5 of the module under test, tidied\n")},
            "tidy line 5", tag="v4")
        if place == "reworked":
            document = stack.json("status", "--against", "v3", expect=1)
            assert document["reverted"] == [] and \
                [g["by"] for g in document["gone_upstream"]] == [undo], document
            assert [g["by"] for g in _silent(stack, "v4")["gone_upstream"]] == [undo]
            continue
        document = stack.json("status", "--against", "v3", expect=1)
        assert [(g["kind"], g["by"]) for g in document["reverted"]] == [("reverted", undo)], \
            document
        _said_reverted(stack, "v4", undo)
        (said,) = stack.json("status", expect=1)["reverted"]
        assert f"its change is the exact reverse of {landing[:12]}'s change to the fix's lines" \
            in said["detail"], said
        assert f"reverted, then changed: {tidy[:12]} changed that code since" in \
            said["detail"], said


def test_a_landing_changed_later_without_a_revert_of_it_stays_superseded(tmp_path):
    """No noise: the landed line edited later by upstream says nothing, with a revert of
    another commit of the file in between, and so does a revert of the landing that a revert
    of the revert put back before the line was edited."""
    stack, landing = _landed(tmp_path / "refactored")
    other = stack.commit({"pkg/a.py": FIXED.replace(b"line 25 of the module",
                                                    b"line twenty-five of the module")},
                         "Rename a line", tag="v2b")
    _revert(stack, other, tag="v2c")
    stack.commit({"pkg/a.py": FIXED.replace(b"five = compute_it_properly()\n",
                                            b"five = compute_it_properly()  # checked\n")},
                 "tidy line 5", tag="v3")
    assert _silent(stack, "v3")["gone_upstream"] == []

    stack, landing = _landed(tmp_path / "relanded")
    revert = _revert(stack, landing, tag="v3")
    _revert(stack, revert, tag="v3b")
    stack.commit({"pkg/a.py": FIXED.replace(b"five = compute_it_properly()\n",
                                            b"five = compute_it_properly()  # checked\n")},
                 "tidy line 5", tag="v4")
    assert _silent(stack, "v4")["gone_upstream"] == []


B_BASE = b"".join(b"entry %d of the other module\n" % i for i in range(1, 31))


def test_kept_fixes_landed_apart_are_each_judged_by_the_commits_after_their_own_landing(
        tmp_path):
    """Two kept fixes landed at v2 and v3, the history since them read once for both: a
    revert of another change of fb's file between the two landings, and later edits of both
    fixes' lines, say nothing of fb; fa, reverted and then edited on a side branch merged
    back, is said as reverted, named by its revert and by the edit after it."""
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": BASE, "pkg/b.py": B_BASE})
    b_fixed = B_BASE.replace(b"entry 7 of the other module\n", b"seven = checked(7)\n")
    stack.add_fix("fa", "pkg/a.py", BASE, FIXED)
    stack.add_fix("fb", "pkg/b.py", B_BASE, b_fixed)
    landing = stack.commit({"pkg/a.py": FIXED}, "Compute it properly (#11)", tag="v2")
    stack.cli("rebase", "--to", "v2")
    other = stack.commit({"pkg/b.py": B_BASE.replace(b"entry 20 ", b"entry twenty ")},
                         "Rename entry 20")
    _revert(stack, other)
    b_landing = stack.commit({"pkg/b.py": b_fixed}, "Check seven (#12)", tag="v3")
    stack.cli("rebase", "--to", "v3")
    assert stack.series("up") == []
    git(stack.up, "checkout", "-q", "-b", "side")
    revert = _revert(stack, landing)
    tidy = stack.commit({"pkg/a.py": TIDIED}, "tidy line 5")
    git(stack.up, "checkout", "-q", "main")
    stack.commit({"pkg/b.py": b_fixed.replace(b"checked(7)", b"checked(7, strict=True)")},
                 "Stricter seven")
    git(stack.up, "merge", "-q", "--no-ff", "-m", "Merge side", "side")
    git(stack.up, "tag", "v4")
    merge = git(stack.up, "rev-parse", "v4").strip()
    assert b_landing != landing and tidy != merge
    _said_reverted(stack, "v4", revert)
    (said,) = stack.json("status", expect=1)["reverted"]
    assert f"its message reverts {landing[:12]}" in said["detail"], said
    # (Newest first: the merge that brought the edit is named.)
    assert f"reverted, then changed: {merge[:12]} changed that code since" in said["detail"], \
        said


def test_the_nearness_a_revert_then_change_is_judged_by_is_difflibs_ratio():
    """Whether the fix's place holds the old code changed or the fix in another form is told
    by difflib's ratio of the bytes (SequenceMatcher without junk), which took 12 s for a
    20 KB run of a tuned kernel table; reverts._similarity gives the same number in time
    that grows with the lengths. Compared here on runs made to be near each other, to share
    nothing, to repeat a few bytes, and empty."""
    import random
    from difflib import SequenceMatcher

    from patchforge import reverts

    chance = random.Random(7)
    table = b"".join(b"%d,%d,%d,kernel_%d_%s\n" % (m, n, k, m * n % 97,
                                                   b"bf16" if k % 3 else b"fp8")
                     for m in (1, 2, 4, 8, 16) for n in (128, 256, 512) for k in range(6))
    pairs = [(b"", b""), (b"", b"x\n"), (b"abc", b"xyz"), (b"ab" * 300, b"ba" * 310),
             (table, table), (table, table[::-1])]
    for _ in range(40):
        a = bytearray(table[:chance.randrange(200, len(table))])
        b = bytearray(a)
        for _ in range(chance.randrange(1, 30)):
            at = chance.randrange(len(b))
            b[at:at + chance.randrange(0, 4)] = bytes(chance.choice(b"0123456789,_\n")
                                                     for _ in range(chance.randrange(0, 4)))
        pairs.append((bytes(a), bytes(b)))
    for a, b in pairs:
        assert reverts._similarity(a, b) == \
            SequenceMatcher(None, a, b, autojunk=False).ratio(), (a[:40], b[:40])
    # (Every range asked by the automaton too, not only the large ones.)
    for a, b in pairs[:12]:
        matcher = SequenceMatcher(None, a, b, autojunk=False)
        for alo, ahi, blo, bhi in ((0, len(a), 0, len(b)), (len(a) // 3, len(a), 5, len(b))):
            want = matcher.find_longest_match(alo, ahi, blo, bhi)
            got = reverts._longest_match(a, b, alo, ahi, blo, bhi)
            assert got[2] == want.size and (not got[2] or got == tuple(want)), (got, want)


CODE = b"".join(b"step_%d = prepare(%d)\n" % (i, i) for i in range(1, 9)) + \
    b"if ready:\n    value = old_compute(step_1)\nelse:\n    value = None\nreturn value\n" + \
    b"".join(b"tail_%d = finish(%d)\n" % (i, i) for i in range(1, 9))
CODE_FIXED = CODE.replace(b"    value = old_compute(step_1)\n",
                          b"    value = new_compute(step_1, checked=True)\n")


def test_a_partial_revert_of_other_lines_after_an_edit_of_the_fix_is_no_revert(tmp_path):
    """(c) #11 landed the fix's line with more (the `return`, another file). An ordinary edit
    then changed the fix's line; "Revert part of #11", naming the PR, takes back the other
    lines. The fix's pre-image is not back (its line was edited, not reverted): nothing is
    called reverted, exit 0."""
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": CODE, "pkg/b.py": b"b = 1\n"})
    stack.add_fix("fa", "pkg/a.py", CODE, CODE_FIXED)
    larger = CODE_FIXED.replace(b"return value\n", b"return value or default()\n")
    stack.commit({"pkg/a.py": larger, "pkg/b.py": b"b = 2\n"}, "Compute it anew (#11)",
                 tag="v2")
    stack.cli("rebase", "--to", "v2")
    assert (stack.root / "series/up/upstreamed/fa.patch").is_file()
    edited = larger.replace(b"checked=True)", b"checked=True, cache=True)")
    stack.commit({"pkg/a.py": edited}, "Cache the computation", tag="v2b")
    stack.commit({"pkg/a.py": edited.replace(b"return value or default()\n", b"return value\n"),
                  "pkg/b.py": b"b = 1\n"}, "Revert part of #11: the default", tag="v3")
    _silent(stack, "v3")


def test_a_re_land_with_a_line_inserted_in_the_fix_block_is_landed(tmp_path):
    """(d) Reverted, then landed again with a line inserted inside the fix's block: the target
    has the fix in another form; nothing is said."""
    two = CODE.replace(b"    value = old_compute(step_1)\nelse:\n",
                       b"    value = new_compute(step_1, checked=True)\n"
                       b"    value = validated(value)\nelse:\n")
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": CODE})
    stack.add_fix("fa", "pkg/a.py", CODE, two)
    landing = stack.commit({"pkg/a.py": two}, "Validate the computation (#30)", tag="v2")
    stack.cli("rebase", "--to", "v2")
    assert (stack.root / "series/up/upstreamed/fa.patch").is_file()
    _revert(stack, landing, tag="v3")
    stack.cli("status", "--against", "v3", expect=1)
    relanded = two.replace(b"    value = validated(value)\n",
                           b"    log_value(value)\n    value = validated(value)\n")
    stack.commit({"pkg/a.py": relanded}, "Validate the computation again (#31)", tag="v4")
    _silent(stack, "v4")


def test_a_revert_of_a_merged_multi_commit_pull_request_is_a_revert(tmp_path):
    """(g) The fix landed through a pull request of two commits merged with a merge commit;
    `git revert -m 1 MERGE` takes it back: the message names the merge that brought the
    landing."""
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": BASE, "pkg/b.py": b"b = 1\n"})
    both = FIXED.replace(b"line 20 of the module under test\n", b"twenty = also_fixed()\n")
    stack.add_fix("fa", "pkg/a.py", BASE, both)
    git(stack.up, "checkout", "-q", "-b", "feature")
    stack.commit({"pkg/a.py": FIXED}, "Compute five properly")
    stack.commit({"pkg/a.py": both}, "Compute twenty properly")
    git(stack.up, "checkout", "-q", "main")
    stack.commit({"pkg/b.py": b"b = 2\n"}, "Meanwhile on main")
    git(stack.up, "merge", "-q", "--no-ff", "-m", "Merge pull request #40 from x/feature",
        "feature")
    merge = git(stack.up, "rev-parse", "HEAD").strip()
    git(stack.up, "tag", "v2")
    stack.cli("rebase", "--to", "v2")
    assert (stack.root / "series/up/upstreamed/fa.patch").is_file()
    revert = _revert(stack, merge, "-m", "1", tag="v3")
    _said_reverted(stack, "v3", revert)


def test_a_fix_landed_in_two_commits_both_reverted_is_a_revert(tmp_path):
    """(h) The fix's two hunks landed in two commits; each is reverted: the pre-image is back
    after the second revert, which names the first landing commit."""
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": BASE})
    both = FIXED.replace(b"line 20 of the module under test\n", b"twenty = also_fixed()\n")
    stack.add_fix("fa", "pkg/a.py", BASE, both)
    first = stack.commit({"pkg/a.py": FIXED}, "Compute five properly")
    second = stack.commit({"pkg/a.py": both}, "Compute twenty properly", tag="v2")
    stack.cli("rebase", "--to", "v2")
    assert (stack.root / "series/up/upstreamed/fa.patch").is_file()
    back = _revert(stack, second)
    # One of two taken back: in no overlay and no longer upstream, so said, in part.
    _, out, _ = stack.cli("status", "--against", "main", expect=1)
    assert f"was reverted upstream in {back[:12]}" in out, out
    assert "taken back in part: pkg/a.py hunk 2, the rest of its change still upstream" in out
    revert = _revert(stack, first, tag="v3")
    _said_reverted(stack, "v3", revert)


def test_a_fix_whose_two_lines_of_one_hunk_landed_in_two_commits_is_kept_whole(tmp_path):
    """The fix changes two lines three apart (one hunk); upstream lands the first in one commit,
    the second in the next, and a rebase moves past both. The fix was kept under upstreamed/
    as the second commit made it: its second line alone. Upstream then reverted both commits;
    `bring-back`, as status said, put back that one line, and the fix's first line was in no
    patch, no overlay and no kept file. The kept fix holds both lines (its own diff), and
    comes back whole."""
    both = FIXED.replace(b"line 8 of the module under test\n", b"eight = also_fixed()\n")
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": BASE})
    stack.add_fix("fa", "pkg/a.py", BASE, both)
    first = stack.commit({"pkg/a.py": FIXED}, "Compute five properly")
    second = stack.commit({"pkg/a.py": both}, "Compute eight properly", tag="v2")
    stack.cli("rebase", "--to", "v2")
    kept = (stack.root / "series/up/upstreamed/fa.patch").read_bytes()
    assert b"\n+five = compute_it_properly()\n" in kept and b"\n+eight = also_fixed()\n" in kept, \
        kept.decode()
    _revert(stack, second)
    revert = _revert(stack, first, tag="v3")
    stack.cli("rebase", "--to", "v3", expect=1)
    stack.cli("bring-back", "up/fa.patch")
    back = stack.patch("up", "fa")
    assert b"\n+five = compute_it_properly()\n" in back and b"\n+eight = also_fixed()\n" in back, \
        (revert, back.decode())


def test_a_revert_hidden_by_history_simplification_is_found(tmp_path):
    """(i) The landing is reverted on a side branch (with more work), and main makes the same
    content by hand in a commit that names nothing; the merge leaves the file as main had
    it, so git's default history simplification hides the side branch and its revert. The
    side branch is followed: the revert is named."""
    stack, landing = _landed(tmp_path)
    after = BASE.replace(b"line 25 of the module", b"line twenty-five of the module")
    git(stack.up, "checkout", "-q", "-b", "side")
    revert = _revert(stack, landing)
    stack.commit({"pkg/a.py": after}, "More on the side")
    git(stack.up, "checkout", "-q", "main")
    stack.commit({"pkg/a.py": after}, "Tidy the module")
    git(stack.up, "merge", "-q", "--no-ff", "-m", "Merge side", "side")
    git(stack.up, "tag", "v3")
    simplified = git(stack.up, "log", "--format=%H", f"{landing}..v3", "--", "pkg/a.py").split()
    assert revert not in simplified  # what the default walk hides
    _said_reverted(stack, "v3", revert)


def test_a_partial_revert_restoring_exactly_the_fix_lines_is_a_revert(tmp_path):
    """(j) #11 landed the fix's line with another one; "Revert part of #11" (made by hand, no
    `This reverts commit`) restores exactly the fix's line: a revert, named by the PR."""
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": BASE})
    stack.add_fix("fa", "pkg/a.py", BASE, FIXED)
    larger = FIXED.replace(b"line 20 of the module under test\n", b"twenty = more_of_it()\n")
    stack.commit({"pkg/a.py": larger}, "Compute it properly (#11)", tag="v2")
    stack.cli("rebase", "--to", "v2")
    assert (stack.root / "series/up/upstreamed/fa.patch").is_file()
    undo = stack.commit({"pkg/a.py": larger.replace(b"five = compute_it_properly()\n",
                                                    b"line 5 of the module under test\n")},
                        "Revert part of #11: the computation of five", tag="v3")
    _said_reverted(stack, "v3", undo)
    assert "its message reverts #11" in stack.json("status", expect=1)["reverted"][0]["detail"]


def test_a_revert_after_a_rename_of_the_file_is_followed(tmp_path):
    """(l) Upstream renamed the fix's file after the landing, then reverted the landing
    (git revert follows the rename): the fix is judged at the file's new path."""
    stack, landing = _landed(tmp_path)
    git(stack.up, "mv", "pkg/a.py", "pkg/core.py")
    git(stack.up, "commit", "-q", "-m", "Rename the module")
    revert = _revert(stack, landing, tag="v3")
    assert b"line 5 of the module" in stack.upstream.read("pkg/core.py", "v3")
    _said_reverted(stack, "v3", revert)


def test_bring_back_refuses_a_kept_fix_upstream_still_has(tmp_path):
    """bring-back of a fix under upstreamed/ whose change the pin has: refused, nothing moved
    (it would only be judged landed again)."""
    stack, _ = _landed(tmp_path)
    before = stack.snapshot()
    _, _, err = stack.cli("bring-back", "up/fa.patch", expect=2)
    assert "upstream has its change at the pin" in err, err
    assert stack.snapshot() == before


def test_a_fix_landed_in_another_form_or_kept_by_hand_says_nothing(tmp_path):
    """A fix kept by hand under upstreamed/ naming a landing commit that never had its exact
    change (upstream put the same guard lower down: the fix's own place still has its
    pre-image), and one moved there with nothing recorded while upstream fixed the bug another
    way: the target's files have their pre-image, and nothing is said of either."""
    def kept_by_hand(stack, fields: str = "") -> None:
        stack.add_fix("fa", "pkg/a.py", BASE, GUARDED, fields=fields)
        (stack.root / "series/up/upstreamed").mkdir()
        (stack.root / "series/up/fa.patch").rename(stack.root / "series/up/upstreamed/fa.patch")
        (stack.root / "series/up/series").write_text("")

    stack = OneUpstreamStack(tmp_path / "form", {"pkg/a.py": BASE, "pkg/b.py": b"b = 1\n"})
    elsewhere = BASE.replace(b"line 14 of the module under test\n",
                             b"line 14 of the module under test\n" + GUARD)
    landing = stack.commit({"pkg/a.py": elsewhere}, "Guard the value (#12)", tag="v2")
    kept_by_hand(stack, f"Applied-Upstream: commit:{landing}\n")
    stack.commit({"pkg/b.py": b"b = 2\n"}, "More", tag="v3")
    assert _silent(stack, "v3")["gone_upstream"] == []

    stack = OneUpstreamStack(tmp_path / "hand", {"pkg/a.py": BASE})
    kept_by_hand(stack)
    stack.commit({"pkg/a.py": BASE.replace(b"line 5 of", b"line 5 (fixed) of")},
                 "Fix the computation another way", tag="v2")
    assert _silent(stack, "v2")["gone_upstream"] == []


def test_a_landing_recorded_only_in_the_history_is_named_there(tmp_path):
    """A kept fix whose Applied-Upstream names no commit (edited by hand to the label alone):
    the landing commit comes from the history's `dropped` event, and the revert is said."""
    stack, landing = _landed(tmp_path)
    kept = stack.root / "series/up/upstreamed/fa.patch"
    kept.write_bytes(kept.read_bytes().replace(f", commit:{landing}".encode(), b""))
    assert landing.encode() not in kept.read_bytes()
    revert = _revert(stack, landing, tag="v3")
    document = stack.json("status", "--against", "v3", expect=1)
    assert [(g["landed_in"], g["by"]) for g in document["reverted"]] == [(landing, revert)]


NUMBERED = b"".join(b"v%02d = %d\n" % (i, i) for i in range(1, 41))


def _set(content: bytes, number: int, line: bytes) -> bytes:
    """`content` with its line `number` (1-based) replaced by `line`."""
    lines = content.splitlines(keepends=True)
    lines[number - 1] = line
    return b"".join(lines)


def _made_with_new(stack, name: str, path: str, content: bytes, *options: str) -> None:
    """A fix made as a user makes one: `new NAME --file PATH`, the file edited in the
    worktree, `refresh` (its diff then has the earlier fixes of its base in its context)."""
    stack.cli("new", name, "--file", path, "-m", f"fix {name}", *options)
    (stack.root / ".patchforge/work/up" / path).write_bytes(content)
    stack.cli("refresh")


def test_a_revert_after_a_neighbour_line_changed_is_said_and_brought_back(tmp_path):
    """(m) After the landing upstream edited a line two below the fix's (inside the kept
    diff's three lines of context), then `git revert`ed the landing: the kept diff applied
    neither way without fuzz, so the fix counted as superseded: rebase, status and lint said
    nothing (exit 0) while no deployment had it, and `bring-back` refused it. Its changed lines
    now decide (at their place, found by the context still there): the revert is said, and
    `bring-back` puts the fix back. Before the revert, the fix is upstream, quiet."""
    stack, landing = _landed(tmp_path)
    neighbour = FIXED.replace(b"line 7 of the module under test\n", b"seven = 7\n")
    stack.commit({"pkg/a.py": neighbour}, "Name line seven", tag="v2b")
    assert _silent(stack, "v2b")["gone_upstream"] == []
    revert = _revert(stack, landing, tag="v3")
    assert b"line 5 of the module" in stack.upstream.read("pkg/a.py", "v3")
    _said_reverted(stack, "v3", revert)
    _brought_back(stack, "fa", b"five = compute_it_properly()")
    _, out, _ = stack.cli("status")
    assert "reverted" not in out, out


def test_a_fix_line_put_back_by_other_work_after_a_neighbour_change_is_no_revert(tmp_path):
    """(n) The same neighbour edit, then the fix's line set back to the old code in a commit
    that reworks the module and names no landing: never called a revert, but said as taken
    out by that commit and needing attention, the file holding the fix's pre-image again;
    and the fix's own line rewritten another way there: nothing said."""
    stack, landing = _landed(tmp_path / "back")
    neighbour = FIXED.replace(b"line 7 of the module under test\n", b"seven = 7\n")
    stack.commit({"pkg/a.py": neighbour}, "Name line seven", tag="v2b")
    reworked = neighbour.replace(b"five = compute_it_properly()\n",
                                 b"line 5 of the module under test\n") \
        .replace(b"line 25 of the module", b"line twenty-five of the module")
    rework = stack.commit({"pkg/a.py": reworked}, "Rework the loader", tag="v3")
    document = _silent(stack, "v3")
    assert [(g["kind"], g["by"]) for g in document["gone_upstream"]] == [("removed", rework)]

    stack, landing = _landed(tmp_path / "other")
    neighbour = FIXED.replace(b"line 6 of the module under test\n", b"six = 6\n")
    stack.commit({"pkg/a.py": neighbour.replace(b"compute_it_properly()", b"compute_it(x)")},
                 "Compute it from x", tag="v3")
    assert _silent(stack, "v3")["gone_upstream"] == []


@pytest.mark.parametrize("profiles", [["--profiles", "gfx950"], []], ids=["gfx950", "all"])
def test_a_revert_of_a_fix_with_a_series_neighbour_in_its_context_is_said(tmp_path, profiles):
    """(o) fix-950b, made with `new` after fix-950a (two lines above it: fix-950a's line is in
    fix-950b's context), lands upstream alone and is dropped into upstreamed/ (the landing
    commit, searched by the whole diff, is not found: its context is the series'), then is
    `git revert`ed: nothing was said (exit 0) while neither upstream nor any overlay had it.
    The landing is now found by the fix's files, the revert said, and `bring-back` puts the
    fix back; the overlays then have both fixes."""
    stack = OneUpstreamStack(tmp_path, {"tune.py": NUMBERED},
                             profiles={"gfx942": "a", "gfx950": "b"})
    first = _set(NUMBERED, 18, b"v18 = 1800\n")
    _made_with_new(stack, "fix-950a", "tune.py", first, *profiles)
    _made_with_new(stack, "fix-950b", "tune.py", _set(first, 20, b"v20 = 2000\n"), *profiles)
    assert b"\n v18 = 1800\n" in stack.patch("up", "fix-950b")
    landing = stack.commit({"tune.py": _set(NUMBERED, 20, b"v20 = 2000\n")},
                           "Set v20 (#12)", tag="v2")
    stack.cli("rebase", "--to", "v2")
    assert stack.series("up") == ["fix-950a.patch"]
    assert (stack.root / "series/up/upstreamed/fix-950b.patch").is_file()
    assert _silent(stack, "v2")["gone_upstream"] == []
    revert = _revert(stack, landing, tag="v3")
    _said_reverted(stack, "v3", revert, name="fix-950b")
    document = stack.json("status", expect=1)
    assert document["reverted"][0]["landed_in"] == landing
    _brought_back(stack, "fix-950b", b"v20 = 2000")
    stack.cli("overlays")
    for profile in ["gfx950"] if profiles else ["gfx942", "gfx950"]:
        overlay = (stack.root / "overlays" / profile / "up/tune.py").read_bytes()
        assert b"v18 = 1800\n" in overlay and b"v20 = 2000\n" in overlay, profile


def test_a_skipped_fix_bring_back_finds_landed_is_kept_so_its_revert_is_said(tmp_path):
    """(p) fix-a is skipped at a conflict (upstream changed its line), then upstream lands its
    change in a commit that changes more of the file; `bring-back fix-a` keeps it under
    upstreamed/. It was kept with its own diff (a pre-image upstream no longer had) and no
    landing commit, so the landing's `git revert` was never said (exit 0). It is now kept as
    the landing made it (the landing's hunk that carries its line, nothing else; Base the
    landing's parent; the commit recorded): the revert is said, and `bring-back` puts the fix
    back on the reverted code."""
    stack = OneUpstreamStack(tmp_path, {"tune.py": NUMBERED},
                             profiles={"gfx942": "a", "gfx950": "b"})
    _made_with_new(stack, "fix-a", "tune.py", _set(NUMBERED, 20, b"v20 = 2000\n"),
                   "--profiles", "gfx950")
    _made_with_new(stack, "fix-b", "tune.py", _set(NUMBERED, 5, b"v05 = 500\n"))
    changed = _set(NUMBERED, 20, b"v20 = 21\n")
    stack.commit({"tune.py": changed}, "Tune v20", tag="v2")
    stack.cli("rebase", "--to", "v2", expect=3)
    stack.cli("rebase", "--skip", expect=1)
    assert (stack.root / "series/up/skipped/fix-a.patch").is_file()
    landed = _set(_set(changed, 20, b"v20 = 2000\n"), 36, b"v36 = 3600\n")
    landing = stack.commit({"tune.py": landed}, "Set v20 and v36 (#11)", tag="v3")
    stack.cli("rebase", "--to", "v3", expect=1)
    _, out, _ = stack.cli("bring-back", "fix-a")
    assert f"has landed upstream meanwhile (in {landing[:12]})" in out, out
    kept = stack.patch("up", "fix-a", "upstreamed")
    assert f"Applied-Upstream: v3, commit:{landing}".encode() in kept, kept
    assert b"\n-v20 = 21\n+v20 = 2000\n" in kept and b"v36 = 3600" not in kept, kept
    assert _silent(stack, "v3")["gone_upstream"] == []
    _, out, _ = stack.cli("status")
    assert f"fix-a.patch: dropped as upstreamed in commit `{landing[:12]}`" in out, out
    revert = _revert(stack, landing, tag="v4")
    _said_reverted(stack, "v4", revert, name="fix-a")
    _brought_back(stack, "fix-a", b"v20 = 2000")
    assert b"\n-v20 = 21\n+v20 = 2000\n" in stack.patch("up", "fix-a")


def test_a_fix_one_rebase_finds_landed_after_upstream_changed_its_line_is_kept_as_landed(
        tmp_path):
    """(q) Upstream changed the fix's line (v2), then landed the fix (v3, with more of the file);
    one `rebase --to v3` drops it. It was kept with its own diff, whose pre-image upstream no
    longer had when it landed it, so the landing's `git revert` (v4) was never said (exit 0).
    It is now kept as the landing made it (the hunk that carries its line, Base the landing's
    parent): the revert is said, and `bring-back` puts it back on the reverted code. A fix
    whose own pre-image is the landing parent's keeps its own diff, byte for byte."""
    stack = OneUpstreamStack(tmp_path, {"tune.py": NUMBERED})
    _made_with_new(stack, "fa", "tune.py", _set(NUMBERED, 20, b"v20 = 2000\n"))
    own = stack.patch("up", "fa")
    changed = _set(NUMBERED, 20, b"v20 = 21\n")
    stack.commit({"tune.py": changed}, "Tune v20", tag="v2")
    landed = _set(_set(changed, 20, b"v20 = 2000\n"), 36, b"v36 = 3600\n")
    landing = stack.commit({"tune.py": landed}, "Set v20 and v36 (#11)", tag="v3")
    stack.cli("rebase", "--to", "v3")
    kept = stack.patch("up", "fa", "upstreamed")
    assert f"Applied-Upstream: v3, commit:{landing}".encode() in kept, kept
    assert b"\n-v20 = 21\n+v20 = 2000\n" in kept and b"v36 = 3600" not in kept, kept
    assert f"Base: {git(stack.up, 'rev-parse', 'v2').strip()}".encode() in kept, kept
    header = own.split(b"\n---\n")[0]
    assert header.split(b"\nBase: ")[0] in kept  # (its header kept, its Base the new one)
    revert = _revert(stack, landing, tag="v4")
    _said_reverted(stack, "v4", revert)
    _brought_back(stack, "fa", b"v20 = 2000")


def test_a_revert_is_said_when_a_new_fix_of_the_same_name_lands_in_the_same_rebase(tmp_path):
    """fa lands (v2) and is kept as upstreamed/fa.patch; a new, different fix is then made as
    fa. Upstream v3 reverts the first landing and lands the new fa. The rebase onto v3 keeps the
    new fa as upstreamed/fa.2.patch and judged every kept fix but those named fa.patch: the old
    fix's revert went unsaid (exit 0) until the next `status`. The rebase leaves out only the
    file it kept the new drop in."""
    stack, landing = _landed(tmp_path)
    b_fixed = b"b = 1  # checked\n"
    shutil.rmtree(tmp_path / "diff-fa")  # the first fa's scratch repository
    stack.add_fix("fa", "pkg/b.py", b"b = 1\n", b_fixed, description="Check b")
    revert = _revert(stack, landing)
    stack.commit({"pkg/b.py": b_fixed}, "Check b (#12)", tag="v3")
    summary = stack.rebase_json("--to", "v3", expect=1)
    assert sorted(p.name for p in (stack.root / "series/up/upstreamed").iterdir()) == \
        ["fa.2.patch", "fa.patch"]
    assert [(g["name"], g["by"]) for g in summary["reverted"]] == [("fa.patch", revert)], summary
    _, out, _ = stack.cli("status", expect=1)
    assert f"was reverted upstream in {revert[:12]}" in out, out


def test_a_landing_taken_out_by_other_work_needs_attention_until_deleted(tmp_path, monkeypatch):
    """The fix lands (v2); a commit that names no landing ("bring utils in line with the
    release branch", other lines changed too) puts the fix's line back as it was: the module
    is exactly as before the fix and no overlay has it. It was a `note:`, with status, lint
    and the rebase onto it all exit 0. It needs attention now (never called a revert), with
    both ways on: `delete up/upstreamed/fa.patch` keeps the fix under deleted/ (upstream was
    right) and all is quiet, even with a new fix named fa in the series (`delete up/fa.patch`,
    the advice before, took that live fix out instead); `bring-back` is tested above."""
    stack, landing = _landed(tmp_path)
    rework = stack.commit({"pkg/a.py": BASE.replace(b"line 20 of the module",
                                                    b"line twenty of the module")},
                          "refactor: bring utils in line with the release branch", tag="v3")
    _, out, _ = stack.cli("status", "--against", "v3", expect=1)
    assert f"taken out upstream (needs attention): fix up/fa.patch landed in {landing[:12]}" \
        in out and f"commit {rework[:12]} took its change out" in out, out
    assert "`patchforge delete up/upstreamed/fa.patch`" in out and "reverted" not in out, out
    stack.cli("rebase", "--to", "v3", expect=1)
    # The CI's step summary and the HTML page say it too (they said all was well, exit 1).
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    _, out, _ = stack.cli("status", "--format", "github", expect=1)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY")
    assert "1 patch needs attention" in summary.read_text(), summary.read_text()
    assert f"commit {rework[:12]} took its change out" in summary.read_text()
    assert "::error file=series/up/upstreamed/fa.patch" in out, out
    stack.cli("status", "--html", str(tmp_path / "page.html"), expect=1)
    page = (tmp_path / "page.html").read_text()
    assert f"commit {rework[:12]} took its change out" in page and "banner bad" in page
    stack.cli("new", "fa", "--file", "pkg/b.py")  # the name is free: another fix takes it
    work = stack.root / ".patchforge/work/up/pkg/b.py"
    work.write_bytes(b"b = 3\n")
    stack.cli("refresh")
    stack.cli("status", expect=1)
    assert [f["patch"] for f in stack.json("lint", expect=1)["findings"]
            if f["severity"] == "error"] == ["up/upstreamed/fa.patch"]
    stack.cli("delete", "up/upstreamed/fa.patch")
    assert stack.series("up") == ["fa.patch"] and b"+b = 3" in stack.patch("up", "fa")
    assert not (stack.root / "series/up/upstreamed/fa.patch").exists()
    assert f"commit:{landing}".encode() in \
        (stack.root / "series/up/deleted/fa.patch").read_bytes()
    stack.cli("status")
    assert stack.json("lint")["errors"] == 0

def test_a_delete_of_a_landing_taken_back_killed_at_any_write_is_finished_by_the_same_delete(
        tmp_path, monkeypatch):
    """`delete up/upstreamed/fa.patch` killed at each write (PATCHFORGE_FAULT, exit 137, as
    kill -9). A kill once the fix had left upstreamed/, before the ledger was written, left
    the ledger stale, and the same delete run again was refused ("names no one fix kept
    under upstreamed/"): lint failed until `patchforge ledger`. Now the same delete run again
    finishes it to the clean run's files, the `deleted` event recorded once."""
    from helpers.cli import run_subprocess

    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1767225600")
    stack, _ = _landed(tmp_path / "stack")
    stack.commit({"pkg/a.py": BASE.replace(b"line 20 of the module",
                                           b"line twenty of the module")},
                 "refactor: bring utils in line with the release branch", tag="v3")
    stack.cli("rebase", "--to", "v3", expect=1)
    args = ("delete", "up/upstreamed/fa.patch")

    def series_files(root) -> dict:
        return {p.relative_to(root).as_posix(): p.read_bytes()
                for p in sorted((root / "series").rglob("*"))
                if p.is_file() and not p.name.startswith(".")}

    clean = tmp_path / "clean"
    shutil.copytree(stack.root, clean, symlinks=True)
    run_subprocess(clean, *args, expect=0)
    done = series_files(clean)
    assert done["series/history.jsonl"].count(b'"event":"deleted"') == 1
    killed = 0
    for n in range(1, 20):
        root = tmp_path / f"write-{n}"
        shutil.copytree(stack.root, root, symlinks=True)
        if run_subprocess(root, *args, env={"PATCHFORGE_FAULT": f"write:{n}"}).returncode == 0:
            break
        killed += 1
        again = run_subprocess(root, *args)
        assert again.returncode == 0, (n, again.stderr.decode())
        assert b"from upstreamed/; kept as" in again.stdout, (n, again.stdout)
        assert series_files(root) == done, n
        assert json.loads(run_subprocess(root, "lint", "--json", expect=0).stdout)[
            "errors"] == 0, n
    assert killed >= 3


def test_the_text_summary_counts_a_landing_taken_back_as_needs_attention_does(tmp_path):
    """A landing taken back needs attention (exit 1, `needs_attention` in --json), and the text
    summary's count left it out: with a conflicting patch beside it, "1 patch(es) need
    attention" over two things to do; with nothing else wrong, "all 1 patches apply at the
    pin, but the project needs attention (see the note above)" under no note, against a
    target that is not the pin. The count is what needs_attention counts, each once."""
    stack, landing = _landed(tmp_path)
    stack.add_fix("fb", "pkg/b.py", b"b = 1\n", b"b = 2\n")
    revert = _revert(stack, landing, tag="v3")
    stack.commit({"pkg/b.py": b"b = 5\n"}, "b is five", tag="v4")
    document = stack.json("status", "--against", "v3", expect=1)
    assert document["needs_attention"] is True and [g["by"] for g in document["reverted"]] \
        == [revert] and [p["state"] for p in document["patches"]] == ["applies"], document
    _, out, _ = stack.cli("status", "--against", "v3", expect=1)
    assert "1 patch needs attention" in out and "see the note above" not in out, out
    document = stack.json("status", "--against", "v4", expect=1)
    assert [p["state"] for p in document["patches"]] == ["conflict"] and \
        len(document["reverted"]) == 1, document
    _, out, _ = stack.cli("status", "--against", "v4", expect=1)
    assert "2 patches need attention" in out, out


def test_a_fix_brought_back_beside_a_later_fix_of_its_name_keeps_its_past_across_a_rename(
        tmp_path):
    """fa lands (v2, kept as upstreamed/fa.patch); a new fix takes the name fa and lands too,
    in the rebase that finds the first landing reverted (v3): it is kept as fa.2.patch (the
    history's `kept_as`). The first fa is brought back, then renamed fb. Its past is fb's:
    `status` said "left the series: up/fa.patch: dropped as upstreamed" of the fix that is
    in the series as fb, and PATCHES.md listed its landing under up/fa, apart from its
    rename (a fix brought back after a plain departure is followed across a rename)."""
    stack, landing = _landed(tmp_path)
    b_fixed = b"b = 1  # checked\n"
    shutil.rmtree(tmp_path / "diff-fa")
    stack.add_fix("fa", "pkg/b.py", b"b = 1\n", b_fixed, description="Check b")
    _revert(stack, landing)
    stack.commit({"pkg/b.py": b_fixed}, "Check b (#12)", tag="v3")
    stack.rebase_json("--to", "v3", expect=1)
    assert sorted(p.name for p in (stack.root / "series/up/upstreamed").iterdir()) == \
        ["fa.2.patch", "fa.patch"]
    stack.cli("bring-back", "up/fa.patch")
    stack.cli("rename", "fa", "fb")
    assert stack.series("up") == ["fb.patch"] and b"compute_it_properly" in stack.patch("up", "fb")
    _, out, _ = stack.cli("status")
    left = [line for line in out.splitlines() if line.startswith("left the series:")]
    assert [line.split(":")[1].strip() for line in left] == ["up/fa.2.patch"], out
    ledger = (stack.root / "series/PATCHES.md").read_text()
    rows = [line for line in ledger.splitlines() if line.startswith("| ") and "dropped" in line]
    assert any("| up/fb.patch |" in row and "as fa.patch: dropped" in row and landing[:12] in row
               for row in rows), ledger
    assert not any("| up/fa.patch |" in row for row in rows), ledger


def test_a_fix_landed_in_part_then_reverted_is_said_and_brought_back(tmp_path):
    """A fix of two hunks whose first one upstream lands alone (v2): the rebase moves the rest
    and keeps the landed hunk under upstreamed/ with its landing commit. Upstream then reverts
    that landing (v3): the hunk was in no patch and no overlay, and the rebase onto v3, status,
    lint and overlays --check all exited 0. Now the revert is said as for a fix landed whole,
    and `bring-back` puts the landed part back into the series."""
    guarded = FIXED.replace(b"line 25 of the module under test\n",
                            b"line 25 of the module under test\n" + GUARD)
    half = FIXED
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": BASE, "pkg/b.py": b"b = 1\n"})
    stack.add_fix("fa", "pkg/a.py", BASE, guarded)
    landing = stack.commit({"pkg/a.py": half}, "Compute it properly (#11)", tag="v2")
    summary = stack.rebase_json("--to", "v2")  # (checked against the published schema)
    assert "1 of its 2 hunks landed upstream" in summary["patches"][0]["detail"], summary
    assert stack.series("up") == ["fa.patch"]
    moved = stack.patch("up", "fa")
    assert b"compute_it_properly" not in moved and b"raise ValueError" in moved
    kept = (stack.root / "series/up/upstreamed/fa.patch").read_bytes()
    assert f"commit:{landing}".encode() in kept
    assert b"+five = compute_it_properly()" in kept and b"raise ValueError" not in kept
    stack.cli("status")  # the landed hunk is there at v2: nothing to say
    revert = _revert(stack, landing, tag="v3")
    _said_reverted(stack, "v3", revert)
    stack.cli("bring-back", "up/fa.patch")
    assert not (stack.root / "series/up/upstreamed/fa.patch").exists()
    back = [stack.patch("up", name.removesuffix(".patch")) for name in stack.series("up")]
    assert any(b"+five = compute_it_properly()" in data for data in back), back
    assert stack.json("status")["reverted"] == []


def test_a_pin_before_a_landing_needs_attention_in_check_and_overlays_without_install_root(
        tmp_path):
    """A fix kept as landed (v2), then the pin moved back before its landing (`upstream pin
    --force`), in a stack whose upstream has no install-root: status exited 1, but `check`
    and `overlays` exited 0 (their judgement of kept fixes follows the files into the image,
    and nothing mounts such an upstream's). Now both exit 1 and `overlays` says which fix."""
    stack, landing = _landed(tmp_path)
    for config in (stack.root / "patchforge.toml", stack.root / "pyproject.toml"):
        if config.is_file() and "install-root" in config.read_text():
            config.write_text("".join(line for line in config.read_text().splitlines(True)
                                      if not line.startswith("install-root")))
    stack.cli("upstream", "pin", "up", "--at", "v1", "--force")
    stack.cli("status", expect=1)
    _, _, err = stack.cli("overlays", expect=1)
    assert "the pin lacks a fix kept as landed: fix up/fa.patch" in err, err
    stack.cli("check", expect=1)


@pytest.mark.parametrize("install_root", [True, False])
@pytest.mark.parametrize("other_fix", [True, False])
def test_a_kept_landing_reverted_at_the_pin_fails_every_check_naming_it(tmp_path, install_root,
                                                                         other_fix):
    """A fix kept as landed (v2) that upstream reverts (v3), the rebase onto v3 made: with no
    fix left in the series and no install-root, `overlays` exited 1 but `overlays --check`
    exited 0 ("overlays are up to date (0 files)") and `check` exited 1 naming no fix. Now
    `overlays --check`, `check` and `verify` exit 1 naming it, with or without an install-root
    and another fix in the series."""
    stack, landing = _landed(tmp_path)
    if other_fix:
        stack.add_fix("fb", "pkg/b.py", b"b = 1\n", b"b = 2\n")
    if not install_root:
        for config in (stack.root / "patchforge.toml", stack.root / "pyproject.toml"):
            if config.is_file() and "install-root" in config.read_text():
                config.write_text("".join(line for line in config.read_text().splitlines(True)
                                          if not line.startswith("install-root")))
    _revert(stack, landing, tag="v3")
    stack.cli("rebase", "--to", "v3", expect=1)
    stack.cli("overlays", expect=1)
    for command in (("overlays", "--check"), ("check",), ("verify",)):
        _, out, err = stack.cli(*command, expect=1)
        assert "up/fa.patch" in out + err and "reverted upstream" in out + err, \
            (command, out + err)
    document = stack.json("overlays", "--check", expect=1)
    assert document["ok"] is False and document["drift"] == []
    # What fails it is named in the document as the text names it (it gave `ok: false` and
    # no note: a CI reading the JSON could not say which fix).
    assert any("up/fa.patch" in note and "reverted upstream" in note
               for note in document.get("notes", [])), document


def test_a_file_a_fix_creates_made_the_same_upstream_then_taken_out_is_said(tmp_path):
    """A fix that changes pkg/a.py and creates pkg/helper.py; upstream makes helper.py the same
    (v2), so the rebase moves the fix without it, then upstream removes it again (v3): the
    file was in no patch and no overlay, every check green. Now the created file is kept under
    upstreamed/ and its removal needs attention."""
    helper = b"def helper():\n    return 1\n"
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": BASE, "pkg/b.py": b"b = 1\n"})
    stack.add_patch("up", "fa", {"pkg/a.py": FIXED, "pkg/helper.py": helper})
    stack.commit({"pkg/helper.py": helper}, "A helper (#12)", tag="v2")
    stack.cli("rebase", "--to", "v2")
    assert b"helper.py" not in stack.patch("up", "fa")
    kept = (stack.root / "series/up/upstreamed/fa.patch").read_bytes()
    assert b"+++ b/pkg/helper.py" in kept and b"compute_it_properly" not in kept
    stack.commit({"pkg/helper.py": None}, "No helper after all", tag="v3")
    stack.cli("status", "--against", "v3", expect=1)
    stack.cli("rebase", "--to", "v3", expect=1)
    stack.cli("status", expect=1)
    stack.cli("check", expect=1)


KERNEL = bytes(range(256)) * 8
TUNED = KERNEL[:100] + b"\x00tuned\x00" + KERNEL[107:]


def _imported(tmp_path, stack, files: dict[str, bytes], message: str) -> str:
    """The fix as a real commit on a clone of the upstream (binary sections and all), brought
    in with `import git`: its name without `.patch`."""
    work = tmp_path / "fix-repo"
    git(tmp_path, "clone", "-q", str(stack.up), str(work))
    commit_files(work, files, message)
    stack.cli("import", "git", "HEAD~1..HEAD", "--repo", str(work), "--upstream", "up")
    (name,) = stack.series("up")
    return name.removesuffix(".patch")


def test_a_binary_file_of_a_fix_landed_in_part_then_reverted_is_said_and_brought_back(tmp_path):
    """A fix that retunes a compiled kernel (a binary file) and changes pkg/a.py; upstream
    lands the kernel alone, byte for byte (v2), so the rebase moves the fix without it; then
    upstream reverts that landing (v3). The kernel's change was in no patch and no overlay,
    and the rebase, status, check, overlays and verify all exited 0. Now it is kept under
    upstreamed/ with its blob ids, its revert is said, and `bring-back` puts it back."""
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": BASE, "pkg/k.co": KERNEL})
    fix = _imported(tmp_path, stack, {"pkg/a.py": FIXED, "pkg/k.co": TUNED}, "Retune k")
    landing = stack.commit({"pkg/k.co": TUNED}, "Retune the kernel (#12)", tag="v2")
    summary = stack.rebase_json("--to", "v2")
    assert "1 of its 2 hunks landed upstream" in summary["patches"][0]["detail"], summary
    assert b"k.co" not in stack.patch("up", fix)
    kept = stack.patch("up", fix, "upstreamed")
    assert b"GIT binary patch" in kept and f"commit:{landing}".encode() in kept, kept
    assert b"compute_it_properly" not in kept
    stack.cli("status")  # the kernel is there at v2: nothing to say
    revert = _revert(stack, landing, tag="v3")
    _said_reverted(stack, "v3", revert, name=fix)
    stack.cli("check", expect=1)
    stack.cli("bring-back", f"up/{fix}.patch")
    stack.cli("overlays")
    assert (stack.root / "overlays/up/pkg/k.co").read_bytes() == TUNED
    assert stack.json("status")["reverted"] == []


def test_a_binary_fix_landed_whole_then_reverted_is_said(tmp_path):
    """A fix of a compiled kernel alone, landed upstream byte for byte and dropped into
    upstreamed/ by the rebase; upstream then reverts it. The kept fix was never judged (its one
    file binary): every check was green with the kernel in no overlay. Now judged by blob id."""
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": BASE, "pkg/k.co": KERNEL})
    fix = _imported(tmp_path, stack, {"pkg/k.co": TUNED}, "Retune k")
    landing = stack.commit({"pkg/k.co": TUNED}, "Retune the kernel (#12)", tag="v2")
    stack.cli("rebase", "--to", "v2")
    assert stack.series("up") == []
    stack.cli("status")
    revert = _revert(stack, landing, tag="v3")
    _said_reverted(stack, "v3", revert, name=fix)
    stack.cli("overlays", expect=1)


def test_a_landed_hunk_of_a_file_a_fix_renames_is_kept_and_its_revert_said(tmp_path):
    """A fix (a `git format-patch -M` commit) that renames pkg/a.py to pkg/c.py and changes two
    places of it; upstream lands one of the two changes in pkg/a.py (v2), so the rebase moves
    the rename with the other alone; then upstream reverts that landing (v3). The landed
    change was in no patch, and the rebase, status and lint exited 0. Now it is kept under
    upstreamed/ as a change of pkg/a.py, where upstream landed it, and its revert is said.
    `bring-back` then puts the change back in pkg/c.py, where the series has the file (it
    stopped, exit 3, saying pkg/a.py was "deleted upstream", which upstream never did)."""
    guarded = FIXED.replace(b"line 25 of the module under test\n",
                            b"line 25 of the module under test\n" + GUARD)
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": BASE, "pkg/b.py": b"b = 1\n"})
    work = tmp_path / "fix-repo"
    git(tmp_path, "clone", "-q", str(stack.up), str(work))
    commit_files(work, {"pkg/c.py": guarded}, "Move a to c and fix it",
                 moves={"pkg/a.py": "pkg/c.py"})
    (tmp_path / "fix.mbox").write_text(git(work, "format-patch", "-M", "-1", "--stdout"))
    stack.cli("import", "mbox", str(tmp_path / "fix.mbox"), "--upstream", "up")
    (name,) = stack.series("up")
    fix = name.removesuffix(".patch")
    assert b"rename from pkg/a.py" in stack.patch("up", fix)
    landing = stack.commit({"pkg/a.py": FIXED}, "Compute it properly (#11)", tag="v2")
    summary = stack.rebase_json("--to", "v2")
    assert "1 of its 2 hunks landed upstream" in summary["patches"][0]["detail"], summary
    moved = stack.patch("up", fix)
    assert b"rename to pkg/c.py" in moved and b"compute_it_properly" not in moved, moved
    kept = stack.patch("up", fix, "upstreamed")
    assert b"+++ b/pkg/a.py" in kept and b"rename" not in kept.split(b"\n---\n", 1)[1], kept
    assert b"+five = compute_it_properly()" in kept and b"raise ValueError" not in kept
    assert f"commit:{landing}".encode() in kept
    stack.cli("status")  # the landed hunk is there at v2: nothing to say
    revert = _revert(stack, landing, tag="v3")
    _said_reverted(stack, "v3", revert, name=fix)
    _, out, err = stack.cli("bring-back", f"up/{fix}.patch")
    assert "deleted upstream" not in out + err, out + err
    back = stack.patch("up", stack.series("up")[-1].removesuffix(".patch"))
    assert b"+++ b/pkg/c.py" in back and b"+five = compute_it_properly()" in back, back
    assert b"pkg/a.py" not in back and b"rename" not in back.split(b"\n---\n", 1)[1], back
    assert not (stack.root / f"series/up/upstreamed/{fix}.patch").exists()
    document = stack.json("status")
    assert document["reverted"] == [] and document["needs_attention"] is False, document
    assert stack.json("lint")["errors"] == 0


def test_a_file_a_fix_creates_left_as_upstream_made_it_at_a_stop_is_kept_under_upstreamed(
        tmp_path):
    """A fix that changes pkg/a.py and creates pkg/helper.py; upstream makes helper.py the same
    and changes the fix's line of pkg/a.py (v2): the rebase stops on pkg/a.py, the user
    resolves it and `--continue`s. The resolved patch no longer creates helper.py (the
    worktree's file is upstream's), and nothing kept the fix's: when upstream removed
    helper.py again (v3), every check was green with the file in no patch and no overlay.
    Now that landed part is kept under upstreamed/, with its landing commit, and its removal
    needs attention."""
    helper = b"def helper():\n    return 1\n"
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": BASE, "pkg/b.py": b"b = 1\n"})
    stack.add_patch("up", "fa", {"pkg/a.py": FIXED, "pkg/helper.py": helper})
    landing = stack.commit({"pkg/helper.py": helper,
                            "pkg/a.py": BASE.replace(b"line 5 of", b"LINE 5 of")},
                           "A helper (#12)", tag="v2")
    stack.cli("rebase", "--to", "v2", expect=3)
    (stack.root / ".patchforge/work/up/pkg/a.py").write_bytes(FIXED)
    summary = stack.rebase_json("--continue")
    assert validation_errors(summary, "rebase") == []
    (entry,) = summary["patches"]
    assert entry["action"] == "resolved", summary
    assert f"pkg/helper.py, which it creates, landed upstream in {landing[:12]}" \
        in entry["detail"], entry
    assert b"helper.py" not in stack.patch("up", "fa")
    kept = stack.patch("up", "fa", "upstreamed")
    assert b"+++ b/pkg/helper.py" in kept and f"commit:{landing}".encode() in kept, kept
    assert b"compute_it_properly" not in kept
    stack.cli("status")  # helper.py is upstream's at v2: nothing to say
    stack.commit({"pkg/helper.py": None}, "No helper after all", tag="v3")
    _, out, _ = stack.cli("status", "--against", "v3", expect=1)
    assert "`patchforge bring-back up/fa.patch`" in out, out
    stack.cli("rebase", "--to", "v3", expect=1)
    stack.cli("check", expect=1)


def test_upstreams_file_taken_for_one_a_fix_creates_at_a_stop_keeps_the_fixs_under_deleted(
        tmp_path):
    """A fix that changes pkg/a.py and creates pkg/helper.py; upstream adds its own helper.py
    (v2): the rebase stops (`CONFLICT (add/add)`), and the user takes upstream's file and
    `--continue`s. The fix's version of helper.py was in no patch, no set-aside copy and no
    record: the detail said "resolved by hand" alone. Now the fix's version is kept under
    deleted/, the detail and the ledger say so, and `bring-back` names the way back to it."""
    helper = b"def helper():\n    return 1\n"
    theirs = b"def helper():\n    return 2\n"
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": BASE, "pkg/b.py": b"b = 1\n"})
    stack.add_patch("up", "fa", {"pkg/a.py": FIXED, "pkg/helper.py": helper})
    stack.commit({"pkg/helper.py": theirs}, "A helper of upstream's (#12)", tag="v2")
    _, _, err = stack.cli("rebase", "--to", "v2", expect=3)
    assert "CONFLICT (add/add): pkg/helper.py" in err, err
    (stack.root / ".patchforge/work/up/pkg/helper.py").write_bytes(theirs)
    summary = stack.rebase_json("--continue")
    (entry,) = summary["patches"]
    said = "the fix's own pkg/helper.py left for v2's, as the resolution took it: the fix's " \
        "version kept under deleted/"
    assert said in entry["detail"], entry
    moved = stack.patch("up", "fa")
    assert b"helper.py" not in moved and b"+five = compute_it_properly()" in moved, moved
    kept = stack.patch("up", "fa", "deleted")
    assert b"+++ b/pkg/helper.py" in kept and b"+    return 1" in kept, kept
    assert b"compute_it_properly" not in kept and b"Applied-Upstream" not in kept
    assert not (stack.root / "series/up/upstreamed").exists()
    events = [json.loads(line) for line in
              (stack.root / "series/history.jsonl").read_text().splitlines()]
    assert any(said in (event.get("detail") or "") for event in events), events
    assert said in (stack.root / "series/PATCHES.md").read_text()
    _, _, err = stack.cli("bring-back", "fa", expect=2)
    assert "up/fa.patch is in the series; copies kept aside: series/up/deleted/fa.patch" \
        in err, err


def _set_aside_then_landed_in_part(tmp_path):
    """A fix of two hunks (line 5; a guard after line 25) set aside by `rebase --skip` at a
    stop (v2 changed line 26), then upstream puts line 26 back and lands the line-5 hunk alone
    (v3), and the series is rebased onto v3: (stack, landing)."""
    guarded = FIXED.replace(b"line 25 of the module under test\n",
                            b"line 25 of the module under test\n" + GUARD)
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": BASE, "pkg/b.py": b"b = 1\n"})
    stack.add_fix("fa", "pkg/a.py", BASE, guarded)
    stack.commit({"pkg/a.py": BASE.replace(b"line 26 of the module under test\n",
                                           b"twenty_six()\n")}, "Line 26", tag="v2")
    stack.cli("rebase", "--to", "v2", expect=3)
    stack.cli("rebase", "--skip", expect=1)
    stack.commit({"pkg/a.py": BASE}, "Line 26 back")
    landing = stack.commit({"pkg/a.py": FIXED}, "Compute it properly (#11)", tag="v3")
    stack.cli("rebase", "--to", "v3", expect=1)  # the skipped fix needs attention
    return stack, landing


def test_a_skipped_fix_landed_in_part_meanwhile_is_brought_back_with_its_landed_hunk_kept(
        tmp_path):
    """`bring-back` of a fix set aside whose line-5 hunk upstream landed meanwhile moved it
    "3-way merged cleanly" with its other hunk alone, and kept the landed one nowhere: when
    upstream reverted that landing, the rebase, status and lint exited 0 with the change in
    no patch and no overlay. Now bring-back keeps it under upstreamed/ as the rebase does,
    says so, and the revert is said."""
    stack, landing = _set_aside_then_landed_in_part(tmp_path)
    _, out, _ = stack.cli("bring-back", "fa")
    assert f"1 of its 2 hunks landed upstream in {landing[:12]}: kept as " \
        "series/up/upstreamed/fa.patch" in out, out
    assert stack.series("up") == ["fa.patch"]
    moved = stack.patch("up", "fa")
    assert b"compute_it_properly" not in moved and b"raise ValueError" in moved, moved
    kept = stack.patch("up", "fa", "upstreamed")
    assert f"Applied-Upstream: v3, commit:{landing}".encode() in kept, kept
    assert b"+five = compute_it_properly()" in kept and b"raise ValueError" not in kept, kept
    stack.cli("status")  # the landed hunk is there at v3: nothing to say
    revert = _revert(stack, landing, tag="v4")
    _said_reverted(stack, "v4", revert)


@pytest.mark.parametrize("upstreams", ["same", "other"])
def test_a_bring_back_resolved_with_upstreams_file_for_one_the_fix_creates_keeps_the_fixs(
        tmp_path, upstreams):
    """A fix that changes pkg/a.py and creates pkg/helper.py, set aside at a stop (`--skip`);
    upstream then adds helper.py, the same as the fix's or its own, and `bring-back` stops on
    pkg/a.py (and on helper.py, an add/add, when upstream's differs). The user resolves
    pkg/a.py, leaves helper.py as upstream has it, and `--continue`s: the fix's helper.py was
    kept nowhere. Now, as at `rebase --continue`, upstream's same file is kept under
    upstreamed/ with its landing commit, and the fix's own version of another under deleted/,
    the command and the ledger saying which."""
    helper = b"def helper():\n    return 1\n"
    theirs = helper if upstreams == "same" else b"def helper():\n    return 2\n"
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": BASE, "pkg/b.py": b"b = 1\n"})
    stack.add_patch("up", "fa", {"pkg/a.py": FIXED, "pkg/helper.py": helper})
    stack.commit({"pkg/a.py": BASE.replace(b"line 5 of", b"LINE 5 of")}, "Line 5", tag="v2")
    stack.cli("rebase", "--to", "v2", expect=3)
    stack.cli("rebase", "--skip", expect=1)
    landing = stack.commit({"pkg/helper.py": theirs}, "A helper (#12)", tag="v3")
    stack.cli("rebase", "--to", "v3", expect=1)
    stack.cli("bring-back", "fa", expect=3)
    work = stack.root / ".patchforge/work/up"
    (work / "pkg/a.py").write_bytes(FIXED)
    (work / "pkg/helper.py").write_bytes(theirs)
    _, _, err = stack.cli("bring-back", "--continue")
    back = stack.patch("up", "fa")
    assert b"helper.py" not in back and b"+five = compute_it_properly()" in back, back
    if upstreams == "same":
        said = f"pkg/helper.py, which it creates, landed upstream in {landing[:12]}"
        kept = stack.patch("up", "fa", "upstreamed")
        assert f"commit:{landing}".encode() in kept, kept
    else:
        said = "the fix's own pkg/helper.py left for v3's, as the resolution took it: the " \
            "fix's version kept under deleted/"
        kept = stack.patch("up", "fa", "deleted")
    assert said in err, err
    assert b"+++ b/pkg/helper.py" in kept and b"+    return 1" in kept, kept
    assert b"compute_it_properly" not in kept
    assert said in (stack.root / "series/PATCHES.md").read_text()
    if upstreams == "same":
        stack.commit({"pkg/helper.py": None}, "No helper after all", tag="v4")
        stack.cli("status", "--against", "v4", expect=1)


L25 = b"line 25 of the module under test\n"
L26 = b"line 26 of the module under test\n"


def _resolved_keeping_upstreams_side(stack, target_text: bytes) -> None:
    """The stop's worktree file resolved the obvious way: the target's text (upstream's side,
    its landed hunk included) with the fix's guard after line 25 again."""
    (stack.root / ".patchforge/work/up/pkg/a.py").write_bytes(
        target_text.replace(L25, L25 + GUARD))


def test_a_stop_resolved_on_a_fix_whose_other_hunk_landed_keeps_it_under_upstreamed(tmp_path):
    """A fix of two hunks (line 5; a guard after line 25); upstream changes line 26, then lands
    the line-5 hunk alone (v2): the rebase stops on the guard. Resolved the obvious way
    (upstream's side, the guard again), `--continue` wrote the fix with the guard alone, "conflict
    resolved by hand": the landed hunk was kept nowhere, and when upstream reverted its
    landing, the rebase, status and lint exited 0. Now it is kept under upstreamed/, as the
    rebase keeps the landed hunks of a fix that moves by itself, and the revert is said."""
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": BASE, "pkg/b.py": b"b = 1\n"})
    stack.add_fix("fa", "pkg/a.py", BASE, FIXED.replace(L25, L25 + GUARD))
    moved = BASE.replace(L26, b"twenty_six()\n")
    stack.commit({"pkg/a.py": moved}, "Line 26")
    landing = stack.commit({"pkg/a.py": moved.replace(
        b"line 5 of the module under test\n", b"five = compute_it_properly()\n")},
        "Compute it properly (#11)", tag="v2")
    stack.cli("rebase", "--to", "v2", expect=3)
    _resolved_keeping_upstreams_side(stack, git(stack.up, "show", "v2:pkg/a.py").encode())
    summary = stack.rebase_json("--continue")
    (entry,) = summary["patches"]
    assert entry["action"] == "resolved", entry
    assert f"1 of its 2 hunks landed upstream in {landing[:12]}, left so by the resolution: " \
        "kept under upstreamed/" in entry["detail"], entry
    resolved = stack.patch("up", "fa")
    assert b"compute_it_properly" not in resolved and b"raise ValueError" in resolved, resolved
    kept = stack.patch("up", "fa", "upstreamed")
    assert f"Applied-Upstream: v2, commit:{landing}".encode() in kept, kept
    assert b"+five = compute_it_properly()" in kept and b"raise ValueError" not in kept, kept
    stack.cli("status")
    revert = _revert(stack, landing, tag="v3")
    _said_reverted(stack, "v3", revert)


def test_a_bring_back_stop_resolved_on_a_fix_whose_other_hunk_landed_keeps_it(tmp_path):
    """The same at a bring-back's stop: the fix set aside at v2 (upstream changed line 26),
    its line-5 hunk landed meanwhile (v3); `bring-back` stops on the guard, resolved the
    obvious way, `--continue` put the fix back with the guard alone and the landed hunk was
    kept nowhere. Now it is kept under upstreamed/, the command says so, and the revert of
    that landing is said."""
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": BASE, "pkg/b.py": b"b = 1\n"})
    stack.add_fix("fa", "pkg/a.py", BASE, FIXED.replace(L25, L25 + GUARD))
    moved = BASE.replace(L26, b"twenty_six()\n")
    stack.commit({"pkg/a.py": moved}, "Line 26", tag="v2")
    stack.cli("rebase", "--to", "v2", expect=3)
    stack.cli("rebase", "--skip", expect=1)
    landing = stack.commit({"pkg/a.py": moved.replace(
        b"line 5 of the module under test\n", b"five = compute_it_properly()\n")},
        "Compute it properly (#11)", tag="v3")
    stack.cli("rebase", "--to", "v3", expect=1)  # the skipped fix needs attention
    stack.cli("bring-back", "fa", expect=3)
    _resolved_keeping_upstreams_side(stack, git(stack.up, "show", "v3:pkg/a.py").encode())
    _, _, err = stack.cli("bring-back", "--continue")
    assert f"1 of its 2 hunks landed upstream in {landing[:12]}, left so by the resolution: " \
        "kept under upstreamed/" in err, err
    assert stack.series("up") == ["fa.patch"]
    resolved = stack.patch("up", "fa")
    assert b"compute_it_properly" not in resolved and b"raise ValueError" in resolved, resolved
    kept = stack.patch("up", "fa", "upstreamed")
    assert f"Applied-Upstream: v3, commit:{landing}".encode() in kept, kept
    assert b"+five = compute_it_properly()" in kept and b"raise ValueError" not in kept, kept
    stack.cli("status")
    revert = _revert(stack, landing, tag="v4")
    _said_reverted(stack, "v4", revert)


def test_lint_names_a_kept_fix_it_cannot_judge_as_status_does(tmp_path):
    """A fix kept as landed whose recorded landing commit this cache never saw (a teammate's
    rebase onto a revision fetched on their machine only), on a pin that lacks its change:
    `status` notes `NOT CHECKED` naming it, and `lint` said nothing at all (`lint: no
    findings`, exit 0), a CI's lint step green on a fix nothing judged. Now lint warns, naming
    the kept fix and why, the exit status unchanged as status's."""
    stack, landing = _landed(tmp_path)
    kept = stack.root / "series/up/upstreamed/fa.patch"
    kept.write_bytes(kept.read_bytes().replace(landing.encode(), b"1234567" * 5 + b"12345"))
    stack.cli("upstream", "pin", "up", "--at", "v1", "--force")
    _, _, err = stack.cli("status")
    assert "NOT CHECKED: whether up v1 still holds up/upstreamed/fa.patch" in err, err
    lint = stack.json("lint", "--no-forge")
    assert validation_errors(lint, "lint") == []
    said = [f for f in lint["findings"] if f["patch"] == "up/upstreamed/fa.patch"]
    assert [(f["severity"], f["check"]) for f in said] == [("warning", "series")], lint
    assert said[0]["message"].startswith(
        "NOT CHECKED: whether up v1 still holds up/upstreamed/fa.patch: "), said


def _landing_unknown_to_the_cache(stack, landing: str) -> str:
    """The kept fa.patch's recorded landing made one this cache never saw (a teammate's rebase
    onto a revision fetched on their machine only): what `status` then notes NOT CHECKED."""
    kept = stack.root / "series/up/upstreamed/fa.patch"
    unknown = "1234567" * 5 + "12345"
    kept.write_bytes(kept.read_bytes().replace(landing.encode(), unknown.encode()))
    return unknown


def test_a_rebase_names_a_kept_fix_it_cannot_judge_as_status_does(tmp_path):
    """fa landed at v2 and is kept under upstreamed/ with a landing this cache never saw;
    upstream reverts it at v3. `status --against v3` notes `NOT CHECKED` naming it, and `rebase
    --to v3` (its dry run, --json, and offline) said nothing of it: `nothing to do`, exit 0, the
    fix in no overlay the move writes with nothing said. Now the rebase says the same `NOT
    CHECKED` note on stderr and lists it under `not_checked` in --json (exit status unchanged,
    as status's)."""
    stack, landing = _landed(tmp_path)
    _revert(stack, landing, tag="v3")
    _landing_unknown_to_the_cache(stack, landing)
    said = "NOT CHECKED: whether up v3 still holds up/upstreamed/fa.patch: "
    _, _, err = stack.cli("status", "--against", "v3")
    assert f"note: {said}" in err, err
    for args in (("--dry-run",), ()):
        _, out, err = stack.cli("--offline", "rebase", "--to", "v3", *args)
        assert f"note: {said}" in err and "(123456712345)" in err, (out, err)
        stack.cli("rebase", "--to", "v2")
    summary = stack.rebase_json("--to", "v3")
    (entry,) = summary["not_checked"]
    assert entry["upstream"] == "up" and entry["name"] == "fa.patch" and \
        entry["path"] == "series/up/upstreamed/fa.patch", entry
    assert entry["message"].startswith(said) and "not in the cache" in entry["message"], entry
    assert "reverted" not in summary and "gone_upstream" not in summary, summary
    assert stack.lock()["upstreams"]["up"]["label"] == "v3"


def test_bring_back_and_delete_of_a_kept_fix_they_cannot_judge_say_so(tmp_path):
    """The same kept fix (landing unknown to the cache, reverted at the pin): `bring-back
    up/upstreamed/fa.patch` said "upstream has its change at the pin (v3)... nothing to bring
    back", and `delete` "the pin still has its change", which nothing had checked. Now both
    refuse naming the fix as NOT CHECKED and why (exit 2, nothing moved)."""
    stack, landing = _landed(tmp_path)
    _revert(stack, landing, tag="v3")
    stack.cli("rebase", "--to", "v3", expect=1)  # the revert is said
    _landing_unknown_to_the_cache(stack, landing)
    before = stack.snapshot()
    for command in ("bring-back", "delete"):
        _, _, err = stack.cli(command, "up/upstreamed/fa.patch", expect=2)
        assert "up/upstreamed/fa.patch: NOT CHECKED whether up v3 still holds its change: " \
               "its change is not at" in err and "(123456712345), is not in the cache" in err, err
        assert "has its change" not in err, err
        assert stack.snapshot() == before


def test_overlays_and_check_name_a_kept_fix_they_cannot_judge_without_install_root(tmp_path):
    """The same kept fix (landing unknown to the cache, reverted at the pin) of an upstream
    without install-root, whose overlays nothing mounts: `status` and `verify` note it `NOT
    CHECKED`, and `overlays`, `overlays --check` and `check` said nothing at all (exit 0, "up
    to date", "all hold"). Now each notes it so too (--json: in `notes`), the exit status
    unchanged, as verify's."""
    stack, landing = _landed(tmp_path)
    for config in (stack.root / "patchforge.toml", stack.root / "pyproject.toml"):
        if config.is_file() and "install-root" in config.read_text():
            config.write_text("".join(line for line in config.read_text().splitlines(True)
                                      if not line.startswith("install-root")))
    _revert(stack, landing, tag="v3")
    stack.cli("rebase", "--to", "v3", expect=1)
    _landing_unknown_to_the_cache(stack, landing)
    said = "NOT CHECKED: whether up v3 still holds up/upstreamed/fa.patch: "
    for command in (("overlays",), ("overlays", "--check"), ("check",), ("verify",)):
        _, out, err = stack.cli(*command)
        assert said in err and "(123456712345), is not in the cache" in err, (command, out, err)
    for command in (("overlays", "--check"), ("check",)):
        document = stack.json(*command)
        assert any(note.startswith(said) for note in document.get("notes", [])), document


def test_a_reverted_landing_whose_name_a_skipped_fix_has_is_named_so_bring_back_takes_it(
        tmp_path):
    """fa landed (kept under upstreamed/), a later fix named fa again was set aside by `rebase
    --skip`, then upstream reverted the landing. The hint said `bring-back up/fa.patch`, which
    brings back the skipped fix instead, and no name took the reverted landing
    (`bring-back up/upstreamed/fa.patch`: "no skipped fix named"). The hint names
    `up/upstreamed/fa.patch` and the skipped fix in the way; bring-back takes that name, as
    delete does, and puts the landing back once the skipped fix is out of the way."""
    stack, landing = _landed(tmp_path)
    shutil.rmtree(stack.root.parent / "diff-fa")  # the first fa's scratch directory
    stack.add_fix("fa", "pkg/b.py", b"b = 1\n", b"b = 2\n")
    stack.commit({"pkg/b.py": b"b = 10\n"}, "Another b", tag="v3")
    stack.cli("rebase", "--to", "v3", expect=3)
    stack.cli("rebase", "--skip", expect=1)
    assert (stack.root / "series/up/skipped/fa.patch").is_file()
    revert = _revert(stack, landing, tag="v4")
    stack.cli("rebase", "--to", "v4", expect=1)
    _, out, _ = stack.cli("status", expect=1)
    assert f"was reverted upstream in {revert[:12]}: `patchforge bring-back " \
           "up/upstreamed/fa.patch` puts it back in the series" in out, out
    assert "series/up/skipped/fa.patch" in out, out
    before = stack.snapshot()
    _, _, err = stack.cli("bring-back", "up/upstreamed/fa.patch", expect=2)
    assert "series/up/skipped/fa.patch exists already" in err and \
        "`patchforge delete up/fa.patch`" in err, err
    assert stack.snapshot() == before
    stack.cli("delete", "up/fa.patch")
    stack.cli("bring-back", "up/upstreamed/fa.patch")
    assert stack.series("up") == ["fa.patch"]
    assert b"+five = compute_it_properly()" in stack.patch("up", "fa")
    assert not (stack.root / "series/up/upstreamed/fa.patch").exists()
    stack.cli("status")


def test_a_reverted_landing_brought_back_by_its_kept_name_behind_a_fix_of_its_name(tmp_path):
    """fa landed (kept under upstreamed/), a new, different fix named fa again ends the series,
    then upstream reverted the landing. `bring-back up/upstreamed/fa.patch` moved the landing
    into skipped/, took the series' last patch (of its name) for a run cut short, found other
    bytes there and asked again by `up/upstreamed/fa.patch`, which was gone: exit 2, "names no
    one fix kept under upstreamed/", the fix left in skipped/. It is now put back beside the
    other fa, both in the series."""
    stack, landing = _landed(tmp_path)
    shutil.rmtree(stack.root.parent / "diff-fa")  # the first fa's scratch directory
    stack.add_fix("fa", "pkg/b.py", b"b = 1\n", b"b = 2\n")
    _revert(stack, landing, tag="v4")
    stack.cli("rebase", "--to", "v4", expect=1)
    other = stack.patch("up", "fa")
    _, out, err = stack.cli("bring-back", "up/upstreamed/fa.patch")
    series = stack.series("up")
    assert len(series) == 2 and series[0] == "fa.patch", (series, out, err)
    assert stack.patch("up", "fa") == other  # the other fa, as it was
    assert series[1] == "fa.2.patch", series  # numbered beside the other fa
    brought = (stack.root / "series/up" / series[1]).read_bytes()
    assert b"+five = compute_it_properly()" in brought
    assert not (stack.root / "series/up/upstreamed/fa.patch").exists()
    assert not (stack.root / "series/up/skipped/fa.patch").exists()
    stack.cli("status")


def test_a_landing_name_whose_fix_is_in_skipped_says_the_name_that_takes_it(tmp_path):
    """`bring-back up/upstreamed/fa.patch` where no landing fa is kept, and a fix fa a rebase
    set aside is in skipped/: that fix is no landing, so it is not taken by this name, and
    the refusal said only "names no one fix kept under upstreamed/". It names where the fix
    is and the bring-back that takes it, nothing written."""
    stack, _ = _landed(tmp_path)
    shutil.rmtree(stack.root.parent / "diff-fa")  # the first fa's scratch directory
    stack.add_fix("fa", "pkg/b.py", b"b = 1\n", b"b = 2\n")
    stack.commit({"pkg/b.py": b"b = 10\n"}, "Another b", tag="v3")
    stack.cli("rebase", "--to", "v3", expect=3)
    stack.cli("rebase", "--skip", expect=1)
    (stack.root / "series/up/upstreamed/fa.patch").unlink()  # taken out by hand
    before = stack.snapshot()
    _, _, err = stack.cli("bring-back", "up/upstreamed/fa.patch", expect=2)
    assert "names no one fix kept under upstreamed/" in err, err
    assert "series/up/skipped/fa.patch has that name" in err and \
        "`patchforge bring-back fa` takes it" in err, err
    assert stack.snapshot() == before


@pytest.mark.parametrize("history", ["gone", "emptied"])
def test_a_landing_name_without_a_history_to_tell_takes_no_skipped_fix(tmp_path, history):
    """As above, with the history that told the fix a rebase set aside from a landing a
    bring-back moved there gone (an old project without series/history.jsonl) or emptied (a
    copy that lost its lines): `bring-back up/upstreamed/fa.patch` took the set-aside fix for the
    landing and put it back in the series, by a name that says it is none. Now it is
    refused, naming the skipped fix and the `bring-back fa` that takes it, nothing written;
    that command then takes it (a stop: upstream changed its line since)."""
    stack, _ = _landed(tmp_path)
    shutil.rmtree(stack.root.parent / "diff-fa")  # the first fa's scratch directory
    stack.add_fix("fa", "pkg/b.py", b"b = 1\n", b"b = 2\n")
    stack.commit({"pkg/b.py": b"b = 10\n"}, "Another b", tag="v3")
    stack.cli("rebase", "--to", "v3", expect=3)
    stack.cli("rebase", "--skip", expect=1)
    (stack.root / "series/up/upstreamed/fa.patch").unlink()  # taken out by hand
    path = stack.root / "series/history.jsonl"
    if history == "gone":
        path.unlink()
    else:
        path.write_bytes(b"")
    before = stack.snapshot()
    _, _, err = stack.cli("bring-back", "up/upstreamed/fa.patch", expect=2)
    assert "names no one fix kept under upstreamed/" in err, err
    assert "series/up/skipped/fa.patch has that name" in err and \
        "`patchforge bring-back fa` takes it" in err, err
    assert stack.snapshot() == before
    _, _, err = stack.cli("bring-back", "fa", expect=3)
    assert "up/fa.patch does not move onto v3 cleanly: conflict in pkg/b.py" in err, err


def test_a_bring_back_of_a_landing_killed_at_any_write_is_finished_by_the_same_command(
        tmp_path, monkeypatch):
    """`bring-back up/upstreamed/fa.patch` of a landing upstream reverted, killed at each
    rename (PATCHFORGE_FAULT, exit 137, as kill -9). Killed once it had moved the landing into
    skipped/, the same command run again was refused ("names no one fix kept under
    upstreamed/"), while `bring-back fa` finished it. Now the command as typed finishes the
    move to the clean run's files."""
    from helpers.cli import run_subprocess

    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1767225600")
    stack, landing = _landed(tmp_path / "stack")
    _revert(stack, landing, tag="v3")
    stack.cli("rebase", "--to", "v3", expect=1)
    args = ("bring-back", "up/upstreamed/fa.patch")

    def series_files(root) -> dict:
        return {p.relative_to(root).as_posix(): p.read_bytes()
                for p in sorted((root / "series").rglob("*"))
                if p.is_file() and not p.name.startswith(".")}

    clean = tmp_path / "clean"
    shutil.copytree(stack.root, clean, symlinks=True)
    run_subprocess(clean, *args, expect=0)
    done = series_files(clean)
    assert "series/up/fa.patch" in done and "series/up/skipped/fa.patch" not in done
    cut_short = 0
    for n in range(1, 20):
        root = tmp_path / f"rename-{n}"
        shutil.copytree(stack.root, root, symlinks=True)
        if run_subprocess(root, *args, env={"PATCHFORGE_FAULT": f"rename:{n}"}
                          ).returncode == 0:
            break
        if (root / "series/up/upstreamed/fa.patch").exists() or \
                not (root / "series/up/skipped/fa.patch").exists():
            continue  # killed before the landing left upstreamed/, or after it left skipped/
        cut_short += 1
        again = run_subprocess(root, *args)
        assert again.returncode == 0, (n, again.stderr.decode())
        assert series_files(root) == done, n
    assert cut_short >= 2


def _line(number: int) -> bytes:
    return b"line %d of the module under test\n" % number


IMPORTS = b"import os\nimport re\nimport sys\nimport zlib\n\n"


@pytest.mark.parametrize("case", ["guard moved down", "import sorted", "moved and re-indented"])
def test_a_kept_fix_whose_added_lines_upstream_only_moved_is_no_revert(tmp_path, case):
    """A fix of one hunk that only adds lines lands (v2); upstream then only moves those lines
    (a guard a line lower, an import sorted to the top of its block, a guard moved into a
    nested block): the lines around the place they were added at meet again, as a revert
    leaves them, and status, the rebase onto it, check and lint said it "taken out" (exit
    1), `bring-back` then doubling the import in the overlay. The added lines are looked for
    elsewhere in the file first: still there, nothing is said, and bring-back refuses."""
    if case == "import sorted":
        base = IMPORTS + BASE
        fixed = base.replace(b"import sys\n", b"import sys\nimport abc\n")
        later = b"import abc\n" + base
    else:
        base, fixed = BASE, GUARDED
        guard = GUARD if case == "guard moved down" else \
            b"".join(b"    " + line for line in GUARD.splitlines(True))
        at = 11 if case == "guard moved down" else 20
        later = BASE.replace(_line(at), _line(at) + guard)
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": base, "pkg/b.py": b"b = 1\n"})
    stack.add_fix("fa", "pkg/a.py", base, fixed)
    stack.commit({"pkg/a.py": fixed}, "Fix a (#11)", tag="v2")
    stack.cli("rebase", "--to", "v2")
    assert (stack.root / "series/up/upstreamed/fa.patch").is_file()
    stack.commit({"pkg/a.py": later}, f"Tidy: {case}", tag="v3")
    document = _silent(stack, "v3")
    assert document["gone_upstream"] == [], document["gone_upstream"]
    stack.cli("overlays")
    stack.cli("check")
    _, _, err = stack.cli("bring-back", "up/fa.patch", expect=2)
    assert "nothing to bring back" in err, err


def _two_hunks(kind: str) -> tuple[bytes, bytes]:
    """(the fix's result, the same with its second hunk's old code back) for a fix of two
    hunks twenty lines apart: each replacing a line, or each adding a guard."""
    if kind == "replaced":
        both = FIXED.replace(_line(25), b"twenty_five = also_fixed()\n")
        return both, FIXED
    other = b"if limit < 0:\n    raise ValueError('a limit is never negative')\n"
    both = GUARDED.replace(_line(28), _line(28) + other)
    return both, GUARDED


@pytest.mark.parametrize("kind,message", [("replaced", "Revert part of #11: twenty-five"),
                                          ("replaced", "Tidy up twenty-five"),
                                          ("added", "Drop the limit check")])
def test_a_landing_taken_back_in_part_is_said_and_brought_back_once(tmp_path, kind, message):
    """A fix of two hunks lands whole (#11) and is kept under upstreamed/; upstream then puts
    back the old code of one hunk only. That part was in no overlay and not upstream while
    status, the rebase onto it, check and overlays --check all exited 0. Now it is said,
    reverted (the message names the pull request) or taken out, naming the hunk; `bring-back`
    puts that hunk back into the series, the other kept under upstreamed/ as landed (it said
    the whole fix "landed upstream meanwhile" for a guard taken out, and kept it there), and
    the overlay has each line once."""
    both, later = _two_hunks(kind)
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": BASE, "pkg/b.py": b"b = 1\n"})
    stack.add_fix("fa", "pkg/a.py", BASE, both)
    stack.commit({"pkg/a.py": both}, "Compute it properly (#11)", tag="v2")
    stack.cli("rebase", "--to", "v2")
    assert (stack.root / "series/up/upstreamed/fa.patch").is_file()
    stack.cli("overlays")
    back = stack.commit({"pkg/a.py": later}, message, tag="v3")
    document = stack.json("status", "--against", "v3", expect=1)
    said_kind = "reverted" if message.startswith("Revert") else "removed"
    (said,) = document["reverted" if said_kind == "reverted" else "gone_upstream"]
    assert (said["name"], said["kind"], said["by"]) == ("fa.patch", said_kind, back), said
    assert "taken back in part: pkg/a.py hunk 2, the rest of its change still upstream" in \
        said["detail"], said
    stack.cli("rebase", "--to", "v3", expect=1)
    stack.cli("overlays", expect=None)
    for command in (("check",), ("overlays", "--check"), ("status",)):
        _, out, err = stack.cli(*command, expect=1)
        assert "up/fa.patch" in out + err and "taken back in part" in out + err, \
            (command, out + err)
    notes = stack.json("overlays", "--check", expect=1).get("notes", [])
    assert any("up/fa.patch" in note for note in notes), notes
    _, out, _ = stack.cli("bring-back", "up/fa.patch")
    assert "1 of its 2 hunks landed upstream" in out, out
    assert stack.series("up") == ["fa.patch"]
    moved, kept = stack.patch("up", "fa"), stack.patch("up", "fa", "upstreamed")
    first, second = (b"five = compute_it_properly()", b"twenty_five = also_fixed()") \
        if kind == "replaced" else (b"a value is needed here", b"if limit < 0:")
    assert b"\n+" + second in moved and first not in moved, moved.decode()
    assert first in kept and second not in kept, kept.decode()
    stack.cli("overlays")
    overlay = (stack.root / "overlays/up/pkg/a.py").read_bytes()
    assert overlay == both, overlay.decode()
    for command in (("check",), ("overlays", "--check"), ("status",)):
        stack.cli(*command)


def test_a_landing_one_of_whose_hunks_upstream_only_moved_is_no_revert(tmp_path):
    """A fix of two hunks lands whole; upstream then moves one hunk's guard a line lower. Its
    old neighbours meet again there, as if that hunk were taken back, but its lines are still
    in the file: nothing is said (a landing taken back in part is said only for lines that are
    gone)."""
    both, _ = _two_hunks("added")
    other = b"if limit < 0:\n    raise ValueError('a limit is never negative')\n"
    later = GUARDED.replace(_line(29), _line(29) + other)
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": BASE, "pkg/b.py": b"b = 1\n"})
    stack.add_fix("fa", "pkg/a.py", BASE, both)
    stack.commit({"pkg/a.py": both}, "Fix a (#11)", tag="v2")
    stack.cli("rebase", "--to", "v2")
    stack.commit({"pkg/a.py": later}, "Check the limit after line 29", tag="v3")
    document = _silent(stack, "v3")
    assert document["gone_upstream"] == [], document["gone_upstream"]
    stack.cli("overlays")
    stack.cli("check")


LIMIT = b"if limit < 0:\n    raise ValueError('a limit is never negative')\n"
ROWS = b"gfx1250,64,128,0,12.5\ngfx1250,64,256,0,13.75\ngfx1250,128,256,1,20.0\n"


@pytest.mark.parametrize("edit", ["quotes", "re-wrapped", "numbers"])
def test_a_landing_whose_hunk_upstream_moved_and_reformatted_is_no_revert(tmp_path, edit):
    """A fix lands whole; upstream then moves one hunk's lines a little lower and, in the same
    commit, reformats them: quotes changed (`'` to `"`), the call re-wrapped over three lines
    as black does, or CSV rows moved to the end with `0` written `0.0`. Counted line by line
    the lines were gone: said "taken back in part" (or taken out), and the advised bring-back
    put them in the overlay a second time, every check green after. The hunk's added text,
    whitespace, quotes and number spelling aside, is still in the file: nothing is said, and
    bring-back refuses."""
    if edit == "numbers":
        fixed = BASE.replace(_line(20), _line(20) + ROWS)
        later = BASE + ROWS.replace(b",0,", b",0.0,").replace(b",1,", b",1.0,")
    else:
        fixed = GUARDED.replace(_line(28), _line(28) + LIMIT)
        moved = LIMIT.replace(b"'", b'"') if edit == "quotes" else \
            b"if limit < 0:\n    raise ValueError(\n        'a limit is never negative'\n    )\n"
        later = GUARDED.replace(_line(29), _line(29) + moved)
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": BASE, "pkg/b.py": b"b = 1\n"})
    stack.add_fix("fa", "pkg/a.py", BASE, fixed)
    stack.commit({"pkg/a.py": fixed}, "Fix a (#11)", tag="v2")
    stack.cli("rebase", "--to", "v2")
    assert (stack.root / "series/up/upstreamed/fa.patch").is_file()
    stack.commit({"pkg/a.py": later}, "Tidy: move and format", tag="v3")
    document = _silent(stack, "v3")
    assert document["gone_upstream"] == [], document["gone_upstream"]
    stack.cli("overlays")
    stack.cli("check")
    _, _, err = stack.cli("bring-back", "up/fa.patch", expect=2)
    assert "nothing to bring back" in err, err
    assert stack.series("up") == [] and (stack.root / "series/up/upstreamed/fa.patch").is_file()


@pytest.mark.parametrize("edit", ["quotes", "re-wrapped"])
def test_bring_back_refuses_a_fix_whose_lines_upstream_has_moved_and_reformatted(tmp_path,
                                                                                edit):
    """A fix computes line 5 properly and adds a limit check; a rebase sets it aside at a
    conflict on line 5. Upstream then puts line 5 back and adds the same limit check a line
    lower, formatted its own way. bring-back moved the fix cleanly, the limit check back at
    its old place: the overlay checked the limit twice, every check green after. Now it is
    refused (exit 2), naming the hunk, and nothing is written: the fix stays in skipped/,
    the series and the overlay as they were."""
    fixed = FIXED.replace(_line(28), _line(28) + LIMIT)
    moved = LIMIT.replace(b"'", b'"') if edit == "quotes" else \
        b"if limit < 0:\n    raise ValueError(\n        'a limit is never negative'\n    )\n"
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": BASE, "pkg/b.py": b"b = 1\n"})
    stack.add_fix("fa", "pkg/a.py", BASE, fixed)
    stack.commit({"pkg/a.py": BASE.replace(_line(5), b"five = 5\n")}, "Five", tag="v2")
    stack.cli("rebase", "--to", "v2", expect=3)
    stack.cli("rebase", "--skip", expect=1)
    assert (stack.root / "series/up/skipped/fa.patch").is_file()
    stack.commit({"pkg/a.py": BASE.replace(_line(29), _line(29) + moved)}, "Check the limit",
                 tag="v3")
    stack.cli("rebase", "--to", "v3", expect=1)
    stack.cli("overlays", expect=None)

    def files():
        return {p: p.read_bytes() for p in sorted(stack.root.rglob("*"))
                if p.is_file() and ".git" not in p.parts}

    before = files()
    _, out, err = stack.cli("bring-back", "fa", expect=2)
    assert "adds lines upstream has at the pin (v3) already" in err and \
        "pkg/a.py hunk 2" in err and "the overlay would have them twice" in err, out + err
    assert files() == before
    assert stack.series("up") == [] and (stack.root / "series/up/skipped/fa.patch").is_file()


@pytest.mark.parametrize("elsewhere", [False, True])
def test_a_reverted_landing_adding_a_last_argument_is_said(tmp_path, elsewhere):
    """A fix adds a last argument line (`strict=True,` before the call's `)`), or wraps an
    argument (`str(activation),`) that a later commit also writes inside another line
    (`keys = [str(activation), rest]`); upstream reverts the landing. The added text, compared
    across lines, is looked for where the fix left it (a comma before a closing bracket read
    away in the file but not in the run made it found nowhere, before and after, and so
    taken for moved), and only from a line's start to a line's end (the other line's
    `str(activation),` is no copy of the fix's line): the revert was silent, it is said."""
    from helpers.git import git

    call = b"result = compute(\n    activation,\n    b,\n)\n"
    base = BASE.replace(_line(12), _line(12) + call)
    fixed = base.replace(b"    activation,\n", b"    str(activation),\n") if elsewhere else \
        base.replace(b"    b,\n)\n", b"    b,\n    strict=True,\n)\n")
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": base, "pkg/b.py": b"b = 1\n"})
    stack.add_fix("fa", "pkg/a.py", base, fixed)
    landing = stack.commit({"pkg/a.py": fixed}, "Strict compute (#11)", tag="v2")
    stack.cli("rebase", "--to", "v2")
    if elsewhere:
        stack.commit({"pkg/a.py": fixed.replace(
            _line(25), _line(25) + b"keys = [str(activation), rest]\n")}, "Keys", tag="v3")
    git(stack.up, "revert", "--no-edit", landing)
    revert = git(stack.up, "rev-parse", "HEAD").strip()
    git(stack.up, "tag", "v4")
    _said_reverted(stack, "v4", revert)


def test_a_hunk_taken_back_beside_a_reformatted_copy_of_its_lines_is_said_in_part(tmp_path):
    """The file has the fix's guard already, spelled with other quotes, elsewhere; the fix
    adds it again (and a second guard), and upstream takes that hunk out. The copy left is
    the file's own, there before the fix too: the near comparison counts one short of the
    file as the fix left it, and it is said, in part."""
    base = BASE.replace(_line(3), _line(3) + LIMIT.replace(b"'", b'"'))
    both = base.replace(_line(10), _line(10) + GUARD).replace(_line(28), _line(28) + LIMIT)
    _landed_then_hunk_2_said_taken_back(tmp_path, base, both,
                                        base.replace(_line(10), _line(10) + GUARD))


def test_a_line_the_fix_adds_twice_taken_out_once_is_said_in_part(tmp_path):
    """The fix adds the same guard in two places; upstream takes one out. The copy left is the
    fix's other hunk, not the taken one moved: said, in part."""
    _landed_then_hunk_2_said_taken_back(tmp_path, BASE,
                                        GUARDED.replace(_line(25), _line(25) + GUARD), GUARDED)


def _landed_then_hunk_2_said_taken_back(tmp_path, base: bytes, both: bytes, later: bytes):
    """The fix (`base` to `both`) lands whole and is kept; upstream's next commit leaves the
    file `later`: `status` says its hunk 2 taken back in part, by that commit."""
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": base, "pkg/b.py": b"b = 1\n"})
    stack.add_fix("fa", "pkg/a.py", base, both)
    stack.commit({"pkg/a.py": both}, "Guard both (#11)", tag="v2")
    stack.cli("rebase", "--to", "v2")
    back = stack.commit({"pkg/a.py": later}, "Take a guard back", tag="v3")
    (said,) = stack.json("status", "--against", "v3", expect=1)["gone_upstream"]
    assert said["by"] == back and "taken back in part: pkg/a.py hunk 2" in said["detail"], said


def test_a_part_taken_back_beside_a_hunk_upstream_moved_is_brought_back_without_it(tmp_path):
    """A fix of two hunks lands whole; upstream then moves the first hunk's guard a line lower
    and takes the second hunk's guard out. The second is said taken back in part and the
    first named as moved. `bring-back` put the whole fix back (judged by the files, the moved
    hunk's old place has its old code), the overlay holding the moved guard twice, and said
    to take it out with `patchforge edit`; now it puts back the second hunk alone, the first
    kept under upstreamed/ as landed, and every check passes with each line once."""
    both, _ = _two_hunks("added")
    later = BASE.replace(_line(11), _line(11) + GUARD)
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": BASE, "pkg/b.py": b"b = 1\n"})
    stack.add_fix("fa", "pkg/a.py", BASE, both)
    stack.commit({"pkg/a.py": both}, "Fix a (#11)", tag="v2")
    stack.cli("rebase", "--to", "v2")
    stack.commit({"pkg/a.py": later}, "Move one check, drop the other", tag="v3")
    (said,) = stack.json("status", "--against", "v3", expect=1)["gone_upstream"]
    assert "taken back in part: pkg/a.py hunk 2, the rest of its change still upstream " \
        "(pkg/a.py hunk 1 moved elsewhere in the file upstream: a bring-back keeps it under " \
        "upstreamed/ as landed)" in said["detail"], said
    stack.cli("rebase", "--to", "v3", expect=1)
    _, out, _ = stack.cli("bring-back", "up/fa.patch")
    assert "pkg/a.py hunk 1 still upstream, moved elsewhere in the file: kept as " \
        "series/up/upstreamed/fa.patch" in out, out
    assert stack.series("up") == ["fa.patch"]
    moved, kept = stack.patch("up", "fa"), stack.patch("up", "fa", "upstreamed")
    other = b"if limit < 0:\n    raise ValueError('a limit is never negative')\n"
    assert b"\n+if limit < 0:" in moved and b"a value is needed here" not in moved, \
        moved.decode()
    assert b"a value is needed here" in kept and b"if limit < 0:" not in kept, kept.decode()
    assert b"Applied-Upstream: v3" in kept, kept.decode()
    stack.cli("overlays")
    overlay = (stack.root / "overlays/up/pkg/a.py").read_bytes()
    assert overlay == later.replace(_line(28), _line(28) + other), overlay.decode()
    for command in (("check",), ("overlays", "--check"), ("status",)):
        stack.cli(*command)


@pytest.mark.parametrize("still", [False, True])
def test_a_split_bring_back_stopped_on_a_conflict_keeps_the_moved_hunk_at_continue(tmp_path,
                                                                                   still):
    """The fix of the test above (with, `still`, a third hunk upstream kept as it landed);
    upstream also changed the line after the guard it took out, so the bring-back of the rest
    stops on a conflict. Resolved and `--continue`d, the overlay was right but nothing was
    kept under upstreamed/: the record that the moved hunk (and the hunk still upstream)
    landed was gone, the stop's state numbering the rest's landed hunk as the whole fix's.
    Now --continue keeps them under upstreamed/ as landed, as a bring-back that does not stop
    does, and the series' fix holds the resolved hunk alone."""
    limit = b"if limit < 0:\n    raise ValueError('a limit is never negative')\n"
    twenty = b"twenty = computed()\n" if still else _line(19)
    both = GUARDED.replace(_line(19), twenty).replace(_line(28), _line(28) + limit)
    later = BASE.replace(_line(11), _line(11) + GUARD).replace(_line(19), twenty) \
        .replace(_line(29), b"twenty_nine()\n")
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": BASE, "pkg/b.py": b"b = 1\n"})
    stack.add_fix("fa", "pkg/a.py", BASE, both)
    landing = stack.commit({"pkg/a.py": both}, "Fix a (#11)", tag="v2")
    stack.cli("rebase", "--to", "v2")
    stack.commit({"pkg/a.py": later}, "Move one check, drop the other", tag="v3")
    stack.cli("rebase", "--to", "v3", expect=1)
    _, _, err = stack.cli("bring-back", "up/fa.patch", expect=3)
    assert "does not move onto v3 cleanly: conflict in pkg/a.py" in err, err
    resolved = later.replace(_line(28), _line(28) + limit)
    (stack.root / ".patchforge/work/up/pkg/a.py").write_bytes(resolved)
    _, out, err = stack.cli("bring-back", "--continue")
    assert "pkg/a.py hunk 1 still upstream, moved elsewhere in the file" in out + err, out + err
    assert ("1 of its 3 hunks landed upstream" in out + err) is still, out + err
    assert stack.series("up") == ["fa.patch"]
    moved, kept = stack.patch("up", "fa"), stack.patch("up", "fa", "upstreamed")
    assert b"\n+if limit < 0:" in moved and b"a value is needed here" not in moved and \
        b"computed" not in moved, moved.decode()
    assert b"\n+if value is None:" in kept and b"if limit < 0:" not in kept, kept.decode()
    assert (b"\n+twenty = computed()" in kept) is still, kept.decode()
    assert f"Applied-Upstream: v3, commit:{landing}".encode() in kept, kept.decode()
    assert not list((stack.root / "series/up/skipped").glob("*.patch"))
    stack.cli("overlays")
    assert (stack.root / "overlays/up/pkg/a.py").read_bytes() == resolved
    for command in (("check",), ("overlays", "--check"), ("status",)):
        stack.cli(*command)


@pytest.mark.parametrize("stop", [False, True])
def test_a_split_bring_back_counts_the_hunks_of_the_whole_fix(tmp_path, stop):
    """A fix of three hunks lands; upstream moves hunk 1's guard, takes hunk 3's out and keeps
    hunk 2 as it landed. The split bring-back (stopped on a conflict and `--continue`d, or
    not) said "1 of its 2 hunks landed upstream" beside "hunk 1 ... moved": the count was of
    the rest it judged (two hunks), the number of the whole fix's, so the two read as a fix of
    two hunks. It counts the whole fix: 1 of its 3 hunks."""
    limit = b"if limit < 0:\n    raise ValueError('a limit is never negative')\n"
    twenty = b"twenty = computed()\n"
    both = GUARDED.replace(_line(19), twenty).replace(_line(28), _line(28) + limit)
    later = BASE.replace(_line(11), _line(11) + GUARD).replace(_line(19), twenty)
    if stop:
        later = later.replace(_line(29), b"twenty_nine()\n")
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": BASE, "pkg/b.py": b"b = 1\n"})
    stack.add_fix("fa", "pkg/a.py", BASE, both)
    stack.commit({"pkg/a.py": both}, "Fix a (#11)", tag="v2")
    stack.cli("rebase", "--to", "v2")
    stack.commit({"pkg/a.py": later}, "Move one check, drop the other", tag="v3")
    stack.cli("rebase", "--to", "v3", expect=1)
    _, out, err = stack.cli("bring-back", "up/fa.patch", expect=3 if stop else 0)
    if stop:
        (stack.root / ".patchforge/work/up/pkg/a.py").write_bytes(
            later.replace(_line(28), _line(28) + limit))
        _, out, err = stack.cli("bring-back", "--continue")
    assert "1 of its 3 hunks landed upstream" in out + err, out + err
    assert "of its 2 hunks" not in out + err, out + err
    assert "pkg/a.py hunk 1 still upstream, moved elsewhere in the file" in out + err


def test_overlays_on_a_fresh_clone_fetches_the_pin_of_an_upstream_that_only_keeps_landings(
        tmp_path, monkeypatch):
    """The series' one fix landed and is kept under upstreamed/, so the upstream has no patch
    in its series: `overlays` on a fresh clone (a cache without the pin) fetched only the pins
    of upstreams with patches, then judged the kept fix at the pin and failed, exit 2, "unknown
    revision ... in the upstream store". It fetches that pin too, and writes the overlays."""
    stack, _ = _landed(tmp_path)
    stack.cli("overlays")
    written = (stack.root / "overlays/SHA256SUMS").read_bytes()
    monkeypatch.setenv("PATCHFORGE_CACHE", str(tmp_path / "fresh-cache"))
    _, out, err = stack.cli("overlays")
    assert "fetched up v2 into the cache" in err, out + err
    assert (stack.root / "overlays/SHA256SUMS").read_bytes() == written
    stack.cli("status")


# The fix's line 5 landed again in another form after its landing was reverted.
STRICT = BASE.replace(b"line 5 of the module under test\n",
                      b"five = compute_it_properly(strict=True)\n")


@pytest.mark.parametrize("how", ["a revert of it", "its exact reverse by hand",
                                 "taken out with other work"])
def test_a_revert_of_a_re_land_in_another_form_is_said_a_revert(tmp_path, how):
    """fa landed at v2, reverted at v3 (said reverted), landed again in another form at v4
    (quiet: superseded); v5 takes that re-land out. A `git revert` of the re-land names it,
    never the landing, and was said "taken out ... as part of other work (no revert of the
    landing)". Now it is said reverted, naming the re-land it reverts; so is a commit whose
    change is the re-land's exact reverse. The mirror: a commit that takes the re-land out
    together with other work in the file stays said taken out as part of other work. Every
    way needs attention (exit 1), the rebase onto v5 saying it as status does."""
    stack, landing = _landed(tmp_path)
    _revert(stack, landing, tag="v3")
    stack.cli("status", "--against", "v3", expect=1)
    again = stack.commit({"pkg/a.py": STRICT}, "Compute it properly, strictly (#20)", tag="v4")
    stack.cli("status", "--against", "v4", expect=0)
    if how == "a revert of it":
        by = _revert(stack, again, tag="v5")
        said = f"its message reverts {again[:12]}, which landed it again after it was taken out"
    elif how == "its exact reverse by hand":
        by = stack.commit({"pkg/a.py": BASE}, "Compute it plainly", tag="v5")
        said = f"its change is the exact reverse of {again[:12]}'s, which landed it again " \
            "after it was taken out"
    else:
        by = stack.commit({"pkg/a.py": BASE.replace(b"line 20 of", b"line twenty of")},
                          "Compute it plainly, and name line twenty", tag="v5")
        said = None
    if said is not None:
        _said_reverted(stack, "v5", by)
        _, out, _ = stack.cli("status", expect=1)
        assert f"({said})" in out, out
        return
    document = stack.json("status", "--against", "v5", expect=1)
    assert document["reverted"] == [], document
    assert [(g["kind"], g["by"]) for g in document["gone_upstream"]] == [("removed", by)], \
        document
    summary = stack.rebase_json("--to", "v5", expect=1)
    assert "reverted" not in summary, summary
    assert [(g["kind"], g["by"]) for g in summary["gone_upstream"]] == [("removed", by)], \
        summary
    _, out, _ = stack.cli("status", expect=1)
    assert f"commit {by[:12]} took its change out as part of other work" in out, out
