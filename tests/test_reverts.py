"""A fix that landed upstream (kept under upstreamed/ with its landing commit) and that upstream
then reverted: told from the history, by rebase, status and lint; and the ordinary changes
after a landing that are no revert stay silent."""
from __future__ import annotations

from helpers.project import OneUpstreamStack

BASE = b"".join(b"line %d of the module under test\n" % i for i in range(1, 31))
FIXED = BASE.replace(b"line 5 of the module under test\n", b"five = compute_it_properly()\n")


def _landed(tmp_path, files=None, fixed=None, created=None):
    """A stack whose fix `fa` lands upstream at v2 and is dropped into upstreamed/ by the
    rebase onto v2, its landing commit recorded: (stack, landing commit)."""
    stack = OneUpstreamStack(tmp_path, files or {"pkg/a.py": BASE})
    if created is not None:
        path, content = created
        stack.add_fix("fa", path, None, content)
        landing = stack.commit({path: content}, "Add the helper (#11)", tag="v2")
    else:
        stack.add_fix("fa", "pkg/a.py", BASE, fixed or FIXED)
        landing = stack.commit({"pkg/a.py": fixed or FIXED}, "Compute it properly (#11)",
                               tag="v2")
    stack.cli("rebase", "--to", "v2")
    kept = stack.root / "series/up/upstreamed/fa.patch"
    assert kept.is_file()
    assert f"commit {landing}".encode() in kept.read_bytes()
    return stack, landing


def test_a_reverted_landing_is_said_by_rebase_status_and_lint_until_it_lands_again(tmp_path):
    """Upstream reverts the landing (`git revert`'s message): the rebase onto it said "nothing
    to do" and every status after it exit 0, while the fix sat in upstreamed/ and nothing
    deployed it. Now `status --against`, the rebase's summary, `status` and `lint` name the
    reverting commit and the way back; a later upstream commit reverting the revert lands
    the fix again, and all is quiet."""
    stack, landing = _landed(tmp_path)
    _, _, err = stack.cli("status")
    assert "reverted" not in err
    other = stack.commit({"pkg/b.py": b"unrelated = True\n"}, "Something else", tag="v2b")
    assert other
    revert = stack.commit({"pkg/a.py": BASE},
                          f'Revert "Compute it properly (#11)"\n\nThis reverts commit '
                          f"{landing}.\n", tag="v3")
    _, _, err = stack.cli("status", "--against", "v3", expect=1)
    assert f"upstream commit {revert[:12]} reverted it" in err, err
    assert "patchforge bring-back up/fa.patch" in err, err
    document = stack.json("status", "--against", "v3", expect=1)
    assert document["needs_attention"] is True
    assert any(revert[:12] in note for note in document["notes"]), document["notes"]

    _, out, _ = stack.cli("rebase", "--to", "v3")  # the series moves: exit 0
    assert "reverted upstream (needs attention): up/fa.patch landed upstream in " \
        f"{landing[:12]}, and upstream commit {revert[:12]} reverted it" in out, out
    _, _, err = stack.cli("status", expect=1)
    assert f"upstream commit {revert[:12]} reverted it (its message reverts " \
        f"{landing[:12]})" in err, err
    lint = stack.json("lint", expect=1)
    assert [f["severity"] for f in lint["findings"]
            if f["patch"] == "up/upstreamed/fa.patch"] == ["error"], lint
    history = (stack.root / "series/history.jsonl").read_text()
    assert '"event":"reverted"' in history and revert in history

    stack.commit({"pkg/a.py": FIXED}, f'Reapply "Compute it properly (#11)"\n\nThis reverts '
                 f"commit {revert}.\n", tag="v4")
    document = stack.rebase_json("--to", "v4")
    assert [item["name"] for item in document["relanded"]] == ["fa.patch"], document
    assert "reverted" not in document
    _, _, err = stack.cli("status")
    assert "reverted" not in err, err
    lint = stack.json("lint")
    assert not [f for f in lint["findings"] if f["patch"] == "up/upstreamed/fa.patch"], lint


def test_a_hand_made_revert_is_told_by_its_reversed_change_and_bring_back_ends_it(tmp_path):
    """No revert message: a commit whose change to the fix's file is the exact reverse of the
    landing's (after another commit changed the same file elsewhere) undoes it too. Brought
    back into the series, the fix is deployed again and nothing more is said."""
    stack, landing = _landed(tmp_path)
    later = FIXED.replace(b"line 25 of the module", b"line twenty-five of the module")
    stack.commit({"pkg/a.py": later}, "Rename a line", tag="v2b")
    undo = stack.commit({"pkg/a.py": later.replace(b"five = compute_it_properly()\n",
                                                   b"line 5 of the module under test\n")},
                        "Go back to the old computation", tag="v3")
    document = stack.rebase_json("--to", "v3")
    (item,) = document["reverted"]
    assert (item["name"], item["landed_in"], item["reverted_by"], item["new"]) == \
        ("fa.patch", landing, undo, True), item
    assert "reverses the change" in item["detail"]
    stack.cli("status", expect=1)
    (stack.root / "series/up/skipped").mkdir()
    (stack.root / "series/up/upstreamed/fa.patch").rename(stack.root / "series/up/skipped/fa.patch")
    stack.cli("bring-back", "up/fa.patch")
    assert stack.series("up") == ["fa.patch"]
    _, _, err = stack.cli("status")
    assert "reverted" not in err, err


def test_ordinary_changes_after_a_landing_are_no_revert(tmp_path):
    """What the first judgement of the target took for reverts, each silent now (status,
    status --against, the rebase, lint: exit 0): upstream rewrote the code around one of a
    landed fix's hunks; upstream moved a file the fix created; a fix was moved into
    upstreamed/ by hand after upstream fixed the bug another way."""
    # 1. Landed whole (two hunks), then the code around one of them rewritten.
    two = FIXED.replace(b"line 20 of the module under test\n", b"twenty = also_fixed()\n")
    stack, _ = _landed(tmp_path / "rewrite", fixed=two)
    rewritten = two.replace(b"line 4 of the module under test\nfive = compute_it_properly()\n"
                            b"line 6 of the module under test\n",
                            b"def five():\n    return compute_it_properly()\n")
    stack.commit({"pkg/a.py": rewritten}, "Refactor the computation", tag="v3")
    _assert_silent(stack, "v3")

    # 2. A created file, moved by upstream later.
    helper = b"".join(b"def helper_%d():\n    return %d\n" % (i, i) for i in range(12))
    stack, _ = _landed(tmp_path / "move", created=("pkg/helper.py", helper))
    stack.commit({"pkg/helper.py": None, "pkg/util/helper.py": helper}, "Move the helper",
                 tag="v3")
    _assert_silent(stack, "v3")

    # 3. Moved into upstreamed/ by hand; upstream fixed the bug another way.
    stack = OneUpstreamStack(tmp_path / "hand", {"pkg/a.py": BASE})
    stack.add_fix("fa", "pkg/a.py", BASE, FIXED)
    (stack.root / "series/up/upstreamed").mkdir()
    (stack.root / "series/up/fa.patch").rename(stack.root / "series/up/upstreamed/fa.patch")
    (stack.root / "series/up/series").write_text("")
    stack.commit({"pkg/a.py": BASE.replace(b"line 5 of", b"line 5 (fixed) of")},
                 "Fix the computation another way", tag="v2")
    stack.commit({"pkg/b.py": b"x = 1\n"}, "More", tag="v3")
    stack.cli("rebase", "--to", "v2")
    _assert_silent(stack, "v3")


def _assert_silent(stack, target: str) -> None:
    for args in (("status", "--against", target), ("rebase", "--to", target), ("status",),
                 ("lint",)):
        _, out, err = stack.cli(*args)
        assert "reverted" not in out + err, (args, out, err)
