"""A change landed inside one hunk that is the hunk's last (a fix of lines 15 and 20, one hunk
of git's diff; upstream lands line 20 alone): the kept part is the hunk with that change alone,
the other change's lines its context. Made so, it had five lines of context before the change
and three after, which patch tools read as a hunk at the file's end: it applied nowhere, so no
landing commit was found, and a revert of the landing, or the file left behind by a rebase
undone with git, went without a word. Real git upstreams, the CLI as a user runs it."""
from __future__ import annotations

from helpers.git import git
from helpers.project import OneUpstreamStack

BASE = b"".join(b"line %d of the module under test\n" % i for i in range(1, 41))
LINE_15 = (b"line 15 of the module under test\n", b"fifteen = better()\n")
LINE_20 = (b"line 20 of the module under test\n", b"twenty = better()\n")
LANDED = BASE.replace(*LINE_20)  # upstream lands the hunk's last change alone
FIXED = LANDED.replace(*LINE_15)


def _stack(tmp_path):
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": BASE, "pkg/b.py": b"b = 1\n"})
    stack.add_fix("fa", "pkg/a.py", BASE, FIXED)
    assert stack.patch("up", "fa").count(b"\n@@ ") == 1  # one hunk holds both changes
    return stack


def test_the_last_change_of_a_hunk_landed_alone_then_reverted_is_said(tmp_path):
    """Before: the rebase said "landed upstream: kept under upstreamed/" without the commit,
    and after `git revert` of the landing, `rebase --to` and `status` exited 0 with the
    line-20 change in no patch and no overlay."""
    stack = _stack(tmp_path)
    landing = stack.commit({"pkg/a.py": LANDED}, "Twenty better (#14)", tag="v2")
    _, out, _ = stack.cli("rebase", "--to", "v2")
    assert "landed in part: 1 of the 2 changes in its hunk 1 (pkg/a.py) landed upstream in " \
        f"{landing[:12]}: kept under upstreamed/" in out, out
    kept = stack.patch("up", "fa", "upstreamed")
    assert f"Applied-Upstream: v2, commit:{landing}".encode() in kept, kept
    hunk = kept[kept.index(b"\n@@ ") + 1:]
    # As much context before the change as after it (three lines: git's own diff's).
    assert hunk.startswith(b"@@ -17,7 +17,7 @@"), hunk
    assert git(stack.up, "apply", "--check", "-R", "-", input=hunk_file(kept)) == ""

    git(stack.up, "revert", "--no-edit", landing)
    git(stack.up, "tag", "v3")
    revert = git(stack.up, "rev-parse", "HEAD").strip()
    summary = stack.rebase_json("--to", "v3", expect=1)
    assert [g["by"] for g in summary["reverted"]] == [revert], summary
    _, out, _ = stack.cli("status", expect=1)
    assert f"was reverted upstream in {revert[:12]}" in out, out
    stack.cli("bring-back", "up/fa.patch")
    assert stack.cli("status")[0] == 0


def test_the_last_change_of_a_hunk_kept_by_a_rebase_undone_with_git_is_a_leftover(tmp_path):
    """Before: `status` said nothing of the file the undone rebase left, and `bring-back` of it
    said upstream had its change at the pin, which the pin lacks."""
    stack = _stack(tmp_path)
    git(stack.root, "init", "-q")
    git(stack.root, "add", "-A")
    git(stack.root, "commit", "-qm", "stack")
    stack.commit({"pkg/a.py": LANDED}, "Twenty better (#14)", tag="v2")
    stack.cli("rebase", "--to", "v2")
    git(stack.root, "reset", "-q", "--hard")
    assert (stack.root / "series/up/upstreamed/fa.patch").is_file()
    _, _, err = stack.cli("status")
    assert "note: series/up/upstreamed/fa.patch is a leftover: the series carries its change " \
        "at the pin (v1)" in err, err


def hunk_file(kept: bytes) -> bytes:
    """The diff of a kept patch file (from its `diff --git` line)."""
    return kept[kept.index(b"diff --git"):]
