"""A fix whose one hunk holds two changes (lines 15 and 20, fewer than twice the context lines
apart: git's diff makes them one hunk) and upstream lands one of them alone: the hunk is not
landed, and a 3-way merge moves the fix with the other change only. The landed change is said
("landed in part") and kept under upstreamed/ as a landed hunk is, so that a revert of it is
said too. A hunk upstream took with changes of its own is never split. Real git upstreams,
the CLI as a user runs it."""
from __future__ import annotations

from helpers.project import OneUpstreamStack
from helpers.template import overlay_file
from helpers.within_hunk import (BASE, FIXED, HALF, LINE_20, landed_part_kept_then_reverted,
                                 within_hunk_stack)


def test_a_change_landed_inside_one_hunk_is_kept_under_upstreamed_and_its_revert_said(
        tmp_path):
    """Before, `rebase` said "3-way merged cleanly" and nothing more: the line-15 change was
    in no patch and not under upstreamed/, and when upstream reverted it, status, the rebase
    and lint exited 0 with the change in no patch and no overlay."""
    landed_part_kept_then_reverted(within_hunk_stack(tmp_path), HALF)


def test_a_hunk_upstream_took_with_changes_of_its_own_is_not_split(tmp_path):
    """Upstream made line 15 as the fix does and line 20 its own way: no mix of the hunk's
    changes is in its file, so nothing is said landed in part, and nothing is kept."""
    stack = within_hunk_stack(tmp_path)
    stack.commit({"pkg/a.py": HALF.replace(LINE_20[0], b"twenty = better(strict=True)\n")},
                 "Fifteen and twenty better (#14)", tag="v2")
    _, out, _ = stack.cli("status", "--against", "v2", expect=1)
    assert "landed in part" not in out, out
    _, out, err = stack.cli("rebase", "--to", "v2", expect=None)
    assert "landed in part" not in out + err, out + err
    assert not (stack.root / "series/up/upstreamed/fa.patch").exists()


def test_a_change_landed_inside_a_hunk_next_to_a_hunk_landed_whole_is_kept_with_it(tmp_path):
    """A fix of two hunks (line 3; lines 15 and 20) whose first hunk and line-15 change landed:
    both are kept in one part under upstreamed/, the rebase saying each."""
    fixed = FIXED.replace(b"line 3 of the module under test\n", b"three = better()\n")
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": BASE, "pkg/b.py": b"b = 1\n"})
    stack.add_fix("fa", "pkg/a.py", BASE, fixed)
    landing = stack.commit({"pkg/a.py": HALF.replace(b"line 3 of the module under test\n",
                                                     b"three = better()\n")},
                           "Three and fifteen better (#15)", tag="v2")
    _, out, _ = stack.cli("rebase", "--to", "v2")
    assert "landed in part: 1 of its 2 hunks, 1 of the 2 changes in its hunk 2 (pkg/a.py) " \
        f"landed upstream in {landing[:12]}: kept under upstreamed/" in out, out
    kept = stack.patch("up", "fa", "upstreamed")
    assert b"+three = better()" in kept and b"+fifteen = better()" in kept, kept
    assert b"twenty" not in kept, kept
    assert b"+twenty = better()" in stack.patch("up", "fa")
    assert stack.cli("status")[0] == 0


def test_a_skipped_fix_whose_change_inside_a_hunk_landed_meanwhile_is_brought_back_with_it_kept(
        tmp_path):
    """`bring-back` of a fix set aside (its guard's hunk stopped at v2) whose line-15 change
    upstream landed meanwhile: the rest moves into the series, the landed change is kept under
    upstreamed/, and the command says so."""
    guard = b"line 35 of the module under test\n"
    fixed = FIXED.replace(guard, guard + b"guard_thirty_five()\n")
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": BASE, "pkg/b.py": b"b = 1\n"})
    stack.add_fix("fa", "pkg/a.py", BASE, fixed)
    stack.commit({"pkg/a.py": BASE.replace(b"line 36 of", b"LINE 36 of")}, "Line 36", tag="v2")
    stack.cli("rebase", "--to", "v2", expect=3)
    stack.cli("rebase", "--skip", expect=1)
    stack.commit({"pkg/a.py": BASE}, "Line 36 back")
    landing = stack.commit({"pkg/a.py": HALF}, "Fifteen better (#14)", tag="v3")
    stack.cli("rebase", "--to", "v3", expect=1)  # the skipped fix needs attention
    _, out, _ = stack.cli("bring-back", "fa")
    assert "landed in part: 1 of the 2 changes in its hunk 1 (pkg/a.py) landed upstream in " \
        f"{landing[:12]}: kept as series/up/upstreamed/fa.patch" in out, out
    moved = stack.patch("up", "fa")
    assert b"fifteen" not in moved and b"+twenty = better()" in moved, moved
    kept = stack.patch("up", "fa", "upstreamed")
    assert b"+fifteen = better()" in kept and b"twenty" not in kept, kept
    assert f"commit:{landing}".encode() in kept, kept
    assert stack.cli("status")[0] == 0
    stack.cli("overlays")
    assert overlay_file(stack.root, "pkg/a.py").read_bytes() == fixed


def test_a_stop_resolved_on_a_fix_whose_change_inside_a_hunk_landed_keeps_it(tmp_path):
    """A fix of lines 15 and 20 (one hunk) and 35 (another), upstream landing line 15 and
    changing line 35 its own way: the rebase stops on line 35. Resolved the obvious way (the
    worktree's file as the merge left it, line 35 made by hand), `--continue` writes the fix
    with lines 20 and 35, and keeps the line-15 change under upstreamed/, saying so."""
    line_35 = b"line 35 of the module under test\n"
    fixed = FIXED.replace(line_35, b"thirty_five = better()\n")
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": BASE, "pkg/b.py": b"b = 1\n"})
    stack.add_fix("fa", "pkg/a.py", BASE, fixed)
    theirs = HALF.replace(line_35, b"thirty_five = upstream()\n")
    landing = stack.commit({"pkg/a.py": theirs}, "Fifteen better, 35 changed (#16)", tag="v2")
    _, out, _ = stack.cli("status", "--against", "v2", expect=1)
    assert "landed in part: pkg/a.py hunk 1: upstream has 1 of its 2 changes" in out, out
    stack.cli("rebase", "--to", "v2", expect=3)
    work = stack.root / ".patchforge/work/up/pkg/a.py"
    assert b"<<<<<<<" in work.read_bytes()
    work.write_bytes(theirs.replace(*LINE_20).replace(b"thirty_five = upstream()\n",
                                                      b"thirty_five = better()\n"))
    _, out, _ = stack.cli("rebase", "--continue")
    assert "conflict resolved by hand; landed in part: 1 of the 2 changes in its hunk 1 " \
        f"(pkg/a.py) landed upstream in {landing[:12]}, left so by the resolution: kept under " \
        "upstreamed/" in out, out
    moved = stack.patch("up", "fa")
    assert b"fifteen" not in moved and b"+twenty = better()" in moved, moved
    kept = stack.patch("up", "fa", "upstreamed")
    assert b"+fifteen = better()" in kept and b"twenty" not in kept, kept
    assert f"commit:{landing}".encode() in kept, kept
    assert stack.cli("status")[0] == 0


def test_a_bring_back_stop_resolved_on_a_fix_whose_change_inside_a_hunk_landed_keeps_it(
        tmp_path):
    """The same at `bring-back --continue`: a fix set aside (its line-35 hunk stopped at v2)
    whose line-15 change landed meanwhile while upstream changed line 35 its own way."""
    line_35 = b"line 35 of the module under test\n"
    fixed = FIXED.replace(line_35, b"thirty_five = better()\n")
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": BASE, "pkg/b.py": b"b = 1\n"})
    stack.add_fix("fa", "pkg/a.py", BASE, fixed)
    stack.commit({"pkg/a.py": BASE.replace(line_35, b"thirty_five = first()\n")}, "35",
                 tag="v2")
    stack.cli("rebase", "--to", "v2", expect=3)
    stack.cli("rebase", "--skip", expect=1)
    theirs = HALF.replace(line_35, b"thirty_five = upstream()\n")
    landing = stack.commit({"pkg/a.py": theirs}, "Fifteen better, 35 again (#16)", tag="v3")
    stack.cli("rebase", "--to", "v3", expect=1)  # the skipped fix needs attention
    stack.cli("bring-back", "fa", expect=3)
    work = stack.root / ".patchforge/work/up/pkg/a.py"
    work.write_bytes(theirs.replace(*LINE_20).replace(b"thirty_five = upstream()\n",
                                                      b"thirty_five = better()\n"))
    _, out, err = stack.cli("bring-back", "--continue")
    assert "landed in part: 1 of the 2 changes in its hunk 1 (pkg/a.py) landed upstream in " \
        f"{landing[:12]}" in out + err, out + err
    moved = stack.patch("up", "fa")
    assert b"fifteen" not in moved and b"+twenty = better()" in moved, moved
    kept = stack.patch("up", "fa", "upstreamed")
    assert b"+fifteen = better()" in kept and b"twenty" not in kept, kept
    assert stack.cli("status")[0] == 0


def test_pr_says_a_change_inside_a_hunk_is_already_upstream(tmp_path):
    """`pr --onto` a revision that has the line-15 change: the commit carries line 20 alone,
    and the command says why ("3-way merged" was all it said)."""
    stack = within_hunk_stack(tmp_path)
    stack.commit({"pkg/a.py": HALF}, "Fifteen better (#14)", tag="v2")
    _, out, _ = stack.cli("pr", "fa", "--onto", "v2")
    assert "3-way merged; landed in part: pkg/a.py hunk 1: upstream has 1 of its 2 changes, " \
        "not the others" in out, out
