"""A kept fix of two hunks landed whole; a revert of its landing takes out one hunk only (the
other changed upstream before it, or left as landed), then upstream edits the lines the revert
put back. The revert read as one only where the whole fix was gone at it: from the edit on,
status exited 0 with the reverted hunk in no overlay and not upstream. Now it is said
reverted, taken back in part, naming the revert, and the advised `bring-back` puts that part
back once. A re-landing of that part after the revert, a rewrite of the fix's lines with no
revert, and a revert of another commit stay quiet."""
from __future__ import annotations

import pytest

from helpers.project import OneUpstreamStack
from test_known_wrong import (PART_BODY, PART_GUARD, PART_HEAD, PART_ONE, PART_ONE_FIX,
                              _part_landed)

CLAMP, CLAMP_MIN = b"    a3 = a3.clamp(0)\n", b"    a3 = a3.clamp(min=0)\n"
STAGES = b"    stages = 3\n    return step11 * stages\n"
EDITED = b"    stages = 4\n    return step11 * stages * 2\n"
# The guard put back by hand into the edited code (a bring-back's resolution).
GUARDED = b"    stages = 4\n    if x.is_cuda:\n        stages = 1\n    return step11 * stages * 2\n"
REVERT = 'Revert "k: fewer stages (#7)"\n\nThis reverts commit {}.'


def _reverted_in_part(tmp_path, changed_before: bool):
    """The landing, then (`changed_before`) upstream's own form of hunk 1's line, then a
    revert of the landing taking out hunk 2 alone (hunk 1 as upstream has it), then an edit
    of the lines the revert put back: the stack, the file at each step, the revert commit."""
    stack, fixed, landing = _part_landed(tmp_path)
    before = fixed.replace(CLAMP, CLAMP_MIN) if changed_before else fixed
    if changed_before:
        stack.commit({"pkg/k.py": before}, "k: keyword (#8)")
    reverted = before.replace(PART_GUARD, b"    stages = 3\n")
    revert = stack.commit({"pkg/k.py": reverted}, REVERT.format(landing), tag="reverted")
    return stack, before, reverted, revert


@pytest.mark.parametrize("changed_before", [True, False], ids=["other-changed", "other-landed"])
def test_a_revert_in_part_then_an_edit_is_said_and_brought_back_once(tmp_path, changed_before):
    stack, before, reverted, revert = _reverted_in_part(tmp_path, changed_before)
    (took,) = stack.json("status", "--against", "reverted", expect=1)["reverted"]
    assert took["by"] == revert and "taken back in part: pkg/k.py hunk 2" in took["detail"], took
    edited = reverted.replace(STAGES, EDITED)
    stack.commit({"pkg/k.py": edited}, "k: four stages", tag="edited")
    doc = stack.json("status", "--against", "edited", expect=1)
    (took,) = doc["reverted"]
    assert (took["name"], took["kind"], took["by"]) == ("kfix.patch", "reverted", revert), took
    rest = "changed upstream since (pkg/k.py hunk 1)" if changed_before else "still upstream"
    assert f"taken back in part: pkg/k.py hunk 2, the rest of its change {rest}" in \
        took["detail"] and "reverted, then changed" in took["detail"], took
    assert "patchforge bring-back up/kfix.patch" in took["message"], took
    stack.cli("rebase", "--to", "edited", expect=1)
    for command in (("check",), ("status",)):
        _, out, err = stack.cli(*command, expect=1)
        assert "up/kfix.patch" in out + err and "taken back in part" in out + err, out + err
    # As advised: the bring-back stops on the edited lines; the guard put in there, with
    # hunk 1 as upstream has it, goes back into the series alone.
    _, _, err = stack.cli("bring-back", "up/kfix.patch", expect=3)
    assert "conflict in pkg/k.py" in err, err
    work = stack.root / ".patchforge/work/up/pkg/k.py"
    work.write_bytes(edited.replace(EDITED, GUARDED))
    stack.cli("bring-back", "--continue")
    assert stack.series("up") == ["kfix.patch"]
    moved = stack.patch("up", "kfix")
    assert b"\n+    if x.is_cuda:" in moved and b"clamp" not in moved, moved.decode()
    stack.cli("overlays")
    overlay = (stack.root / "overlays/up/pkg/k.py").read_bytes()
    assert overlay == edited.replace(EDITED, GUARDED), overlay.decode()
    lines = overlay.splitlines(keepends=True)
    for line in (b"    if x.is_cuda:\n", b"        stages = 1\n",
                 CLAMP_MIN if changed_before else CLAMP):
        assert lines.count(line) == 1, (line, overlay.decode())
    assert sum(b"clamp" in line for line in lines) == 1, overlay.decode()
    for command in (("check",), ("status",)):
        stack.cli(*command)


@pytest.mark.parametrize("changed_before", [True, False], ids=["other-changed", "other-landed"])
def test_a_revert_in_part_then_a_relanding_with_a_neighbour_edited_is_quiet(tmp_path,
                                                                           changed_before):
    """The part the revert took out landed again, its neighbour line edited in the same
    commit (its place not found by its context): upstream has the whole fix, nothing said."""
    stack, before, reverted, _ = _reverted_in_part(tmp_path, changed_before)
    relanded = before.replace(b"    return step11 * stages\n",
                              b"    return step11 * stages * 2\n")
    stack.commit({"pkg/k.py": relanded}, "k: fewer stages on cuda again, doubled", tag="again")
    doc = stack.json("status", "--against", "again")
    assert doc["reverted"] == [] and doc["gone_upstream"] == [], doc


def test_a_revert_in_part_then_a_relanding_in_another_form_then_an_edit_is_quiet(tmp_path):
    """The part the revert took out landed again in another form (a cuda check spelled
    otherwise), then upstream edited the lines around it: nothing is said, though the place
    no longer tells the re-landing at the last revision."""
    stack, before, reverted, _ = _reverted_in_part(tmp_path, False)
    other_form = b"    stages = 3\n    if x.device.type == 'cuda':\n        stages = 1\n"
    again = before.replace(PART_GUARD, other_form)
    stack.commit({"pkg/k.py": again}, "k: fewer stages on cuda again (#9)")
    edited = again.replace(other_form + b"    return step11 * stages\n",
                           other_form.replace(b"= 3", b"= 4") + b"    return step11 * stages * 2\n")
    stack.commit({"pkg/k.py": edited}, "k: four stages", tag="edited")
    doc = stack.json("status", "--against", "edited")
    assert doc["reverted"] == [] and doc["gone_upstream"] == [], doc


@pytest.mark.parametrize("revert_other", [False, True], ids=["no-revert", "other-revert"])
def test_the_fix_rewritten_upstreams_way_without_a_revert_of_it_stays_quiet(tmp_path,
                                                                          revert_other):
    """Upstream writes the cuda branch its own way (no revert of the landing), after its other
    hunk changed; a revert of another commit of the file after it names no landing of the fix:
    superseded, nothing said."""
    stack, fixed, landing = _part_landed(tmp_path)
    changed = fixed.replace(CLAMP, CLAMP_MIN)
    other = stack.commit({"pkg/k.py": changed.replace(b"def gather(x):\n",
                                                      b"def gather(x):\n    # stages\n")},
                         "k: a note (#9)")
    own_way = changed.replace(PART_GUARD, b"    stages = 1 if x.is_cuda else 3\n")
    stack.commit({"pkg/k.py": own_way.replace(b"def gather(x):\n",
                                              b"def gather(x):\n    # stages\n")},
                 "k: stages in one line", tag=None if revert_other else "later")
    if revert_other:
        stack.commit({"pkg/k.py": own_way},
                     f'Revert "k: a note (#9)"\n\nThis reverts commit {other}.', tag="later")
    doc = stack.json("status", "--against", "later")
    assert doc["reverted"] == [] and doc["gone_upstream"] == [], doc


def test_a_hunk_a_revert_in_part_took_out_and_a_later_commit_put_back_is_not_named(tmp_path):
    """A fix of three hunks; the revert takes out the last two, the first stays as landed; a
    later commit lands the second again, then upstream edits the third's old code: said,
    naming the third hunk alone (the second is upstream's again)."""
    third = b"\n\ndef third(x):\n" + b"".join(b"    t%d = x * %d\n" % (i, i) for i in range(10)) \
        + b"    return t9\n"
    abs_line = b"    t4 = x * 4\n    t4 = t4.abs()\n"
    base = PART_HEAD + third + PART_BODY
    fixed = PART_HEAD.replace(PART_ONE, PART_ONE_FIX) + third.replace(
        b"    t4 = x * 4\n", abs_line) + PART_BODY.replace(b"    stages = 3\n", PART_GUARD)
    stack = OneUpstreamStack(tmp_path, {"pkg/k.py": base})
    stack.add_fix("kfix", "pkg/k.py", base, fixed)
    landing = stack.commit({"pkg/k.py": fixed}, "k: fewer stages (#7)", tag="v2")
    stack.dropped_as_landed("up=v2")
    reverted = fixed.replace(PART_GUARD, b"    stages = 3\n").replace(abs_line,
                                                                     b"    t4 = x * 4\n")
    revert = stack.commit({"pkg/k.py": reverted}, REVERT.format(landing), tag="reverted")
    again = reverted.replace(b"    t4 = x * 4\n", abs_line)
    stack.commit({"pkg/k.py": again}, "k: abs of t4 again (#12)", tag="again")
    stack.commit({"pkg/k.py": again.replace(STAGES, EDITED)}, "k: four stages", tag="edited")
    (took,) = stack.json("status", "--against", "edited", expect=1)["reverted"]
    assert took["by"] == revert, took
    assert "taken back in part: pkg/k.py hunk 3, the rest of its change upstream (pkg/k.py " \
        "hunk 2 put back since)" in took["detail"], took
