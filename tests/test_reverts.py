"""A fix that landed upstream (kept under upstreamed/ with its landing commit) and that upstream
then reverted: told from the history and confirmed by the target's files, by rebase, status and
lint; and what either witness alone misreads (ordinary changes after a landing, a revert of
other lines of the landing commit, a created file moved with an edit, a fix landed again in
another form) stays silent, while a revert after a rename is followed."""
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


def test_a_revert_of_other_lines_of_the_landing_commit_leaves_the_fix_landed(tmp_path):
    """Upstream's #11 landed the fix's line together with more (another line of the file,
    another file). "Revert part of #11", whose message names the landing commit, takes back
    only that other line: the fix's own line stays upstream, so nothing is said and every
    command exits 0."""
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": BASE, "pkg/b.py": b"b = 1\n"})
    stack.add_fix("fa", "pkg/a.py", BASE, FIXED)
    larger = FIXED.replace(b"line 20 of the module under test\n", b"twenty = more_of_it()\n")
    landing = stack.commit({"pkg/a.py": larger, "pkg/b.py": b"b = 2\n"},
                           "Compute it properly, and more (#11)", tag="v2")
    stack.cli("rebase", "--to", "v2")
    kept = stack.root / "series/up/upstreamed/fa.patch"
    assert f"commit {landing}".encode() in kept.read_bytes()
    stack.commit({"pkg/a.py": FIXED}, f"Revert part of #11\n\nThis reverts commit {landing}.\n",
                 tag="v3")
    _assert_silent(stack, "v3")


def _reverted_at_v3(tmp_path):
    """A stack whose landed fix `fa` upstream reverted at v3 (`git revert`'s message), the
    rebase onto v3 having said so: (stack, landing, revert)."""
    stack, landing = _landed(tmp_path)
    revert = stack.commit({"pkg/a.py": BASE}, f'Revert "Compute it properly (#11)"\n\nThis '
                          f"reverts commit {landing}.\n", tag="v3")
    document = stack.rebase_json("--to", "v3")
    assert [item["reverted_by"] for item in document["reverted"]] == [revert], document
    stack.cli("status", expect=1)
    return stack, landing, revert


# Upstream's second landing of the fix, in another form: with more in the same file and in
# another file, no message naming the revert.
AGAIN = FIXED.replace(b"line 12 of the module under test\n", b"twelve = cached()\n")


def test_a_fix_landed_again_in_another_form_ends_the_reverted_state(tmp_path):
    """After the revert, upstream lands the fix again in another form (#15). The way back the
    report names (skipped/, then bring-back) finds it landed and keeps it under upstreamed/:
    that records the new landing, and status and lint are quiet (they said 'reverted' again,
    exit 1, in a loop). A rebase onto the new landing, the fix still under upstreamed/, says
    it landed again and ends the report as well."""
    stack, _, _ = _reverted_at_v3(tmp_path / "bring-back")
    (stack.root / "series/up/skipped").mkdir()
    (stack.root / "series/up/upstreamed/fa.patch").rename(stack.root / "series/up/skipped/fa.patch")
    again = stack.commit({"pkg/a.py": AGAIN, "pkg/c.py": b"cache = {}\n"},
                         "Compute it properly, with a cache (#15)", tag="v4")
    stack.cli("rebase", "--to", "v4")
    stack.cli("bring-back", "up/fa.patch")
    kept = (stack.root / "series/up/upstreamed/fa.patch").read_bytes()
    assert f"commit {again}".encode() in kept, kept
    _, out, err = stack.cli("status")
    assert "reverted" not in out + err, (out, err)
    lint = stack.json("lint")
    assert not [f for f in lint["findings"] if f["patch"] == "up/upstreamed/fa.patch"], lint

    stack, _, _ = _reverted_at_v3(tmp_path / "rebase")
    again = stack.commit({"pkg/a.py": AGAIN, "pkg/c.py": b"cache = {}\n"},
                         "Compute it properly, with a cache (#15)", tag="v4")
    document = stack.rebase_json("--to", "v4")
    assert "reverted" not in document, document
    (item,) = document["relanded"]
    assert (item["name"], item["landed_in"]) == ("fa.patch", again), item
    _, out, err = stack.cli("status")
    assert "reverted" not in out + err, (out, err)
    lint = stack.json("lint")
    assert not [f for f in lint["findings"] if f["patch"] == "up/upstreamed/fa.patch"], lint


def test_a_created_file_moved_with_an_edit_git_sees_no_rename_of_is_no_revert(tmp_path):
    """The fix created pkg/helper.py; upstream moves it to pkg/util/helpers.py and edits it in
    the same commit, enough that git's rename detection (50% similar) sees a deletion and a
    new file. The fix lives on there: nothing is said."""
    import subprocess

    helper = b"".join(b"def helper_%d():\n    return %d\n" % (i, i) for i in range(12))
    stack, _ = _landed(tmp_path, created=("pkg/helper.py", helper))
    moved = b"".join(b'def helper_%d() -> int:\n    """The number %d."""\n    return %d\n'
                     % (i, i, i) for i in range(12))
    stack.commit({"pkg/helper.py": None, "pkg/util/helpers.py": moved},
                 "Move the helpers into pkg.util, typed", tag="v3")
    seen = subprocess.run(["git", "-C", str(stack.up), "diff", "-M", "--name-status",
                           "v2", "v3"], capture_output=True, text=True, check=True).stdout
    assert sorted(seen.split()) == ["A", "D", "pkg/helper.py", "pkg/util/helpers.py"], seen
    _assert_silent(stack, "v3")


def test_a_revert_after_upstream_renamed_the_fixs_file_is_found(tmp_path):
    """Upstream renames pkg/a.py to pkg/core/a.py after the landing, then reverts the landing
    there: by `git revert`'s message (rename and revert in one rebase's range), or by hand,
    the exact reverse, in a later range than the rename. Each is said, as without the
    rename."""
    stack, landing = _landed(tmp_path / "message")
    stack.commit({"pkg/a.py": None, "pkg/core/a.py": FIXED}, "Move a.py into pkg.core",
                 tag="v2b")
    revert = stack.commit({"pkg/core/a.py": BASE}, f'Revert "Compute it properly (#11)"\n\n'
                          f"This reverts commit {landing}.\n", tag="v3")
    _, _, err = stack.cli("status", "--against", "v3", expect=1)
    assert f"upstream commit {revert[:12]} reverted it" in err, err
    document = stack.rebase_json("--to", "v3")
    assert [(item["name"], item["reverted_by"]) for item in document["reverted"]] == \
        [("fa.patch", revert)], document
    _, _, err = stack.cli("status", expect=1)
    assert f"upstream commit {revert[:12]} reverted it" in err, err
    assert [f["severity"] for f in stack.json("lint", expect=1)["findings"]
            if f["patch"] == "up/upstreamed/fa.patch"] == ["error"]

    stack, landing = _landed(tmp_path / "by-hand")
    stack.commit({"pkg/a.py": None, "pkg/core/a.py": FIXED}, "Move a.py into pkg.core",
                 tag="v2b")
    stack.cli("rebase", "--to", "v2b")
    undo = stack.commit({"pkg/core/a.py": BASE}, "Go back to the old computation", tag="v3")
    document = stack.rebase_json("--to", "v3")
    assert [(item["name"], item["reverted_by"]) for item in document["reverted"]] == \
        [("fa.patch", undo)], document
    stack.cli("status", expect=1)
