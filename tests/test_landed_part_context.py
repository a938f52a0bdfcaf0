"""A change landed inside one hunk that is the hunk's last (a fix of lines 15 and 20, one hunk
of git's diff; upstream lands line 20 alone): the kept part is the hunk with that change alone,
the other change's lines its context. Made so, it had five lines of context before the change
and three after, which patch tools read as a hunk at the file's end: it applied nowhere, so no
landing commit was found, and a revert of the landing, or the file left behind by a rebase
undone with git, went without a word. The same at the file's start: a hunk at line 1 whose
later change lands alone. Real git upstreams, the CLI as a user runs it."""
from __future__ import annotations

import subprocess

import pytest

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
    landing, kept = _landed_in_part(stack, LANDED, "Twenty better (#14)")
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


def _landed_in_part(stack, landed: bytes, message: str) -> tuple[str, bytes]:
    """Upstream lands one of fa's two changes in its hunk of pkg/a.py (tagged v2), and the
    stack is rebased onto it: (the landing commit, fa's kept part under upstreamed/), after
    the rebase has said so, naming the commit, and the kept part records it."""
    landing = stack.commit({"pkg/a.py": landed}, message, tag="v2")
    _, out, _ = stack.cli("rebase", "--to", "v2")
    assert "landed in part: 1 of the 2 changes in its hunk 1 (pkg/a.py) landed upstream in " \
        f"{landing[:12]}: kept under upstreamed/" in out, out
    kept = stack.patch("up", "fa", "upstreamed")
    assert f"Applied-Upstream: v2, commit:{landing}".encode() in kept, kept
    return landing, kept


def hunk_file(kept: bytes) -> bytes:
    """The diff of a kept patch file (from its `diff --git` line)."""
    return kept[kept.index(b"diff --git"):]


EDGE = b"".join(b"line %d of the module under test\n" % i for i in range(1, 21))
LINE_1 = (b"line 1 of the module under test\n", b"one = better()\n")
LINE_8 = (b"line 8 of the module under test\n", b"eight = better()\n")
LINE_13 = (b"line 13 of the module under test\n", b"thirteen = better()\n")
LINE_20 = (b"line 20 of the module under test\n", b"twenty = better()\n")


@pytest.mark.parametrize("edge, left_out, landed_alone", [
    ("start", LINE_1, LINE_8),  # the hunk has no context before line 1; line 8's change lands
    ("end", LINE_20, LINE_13),  # nor after line 20; line 13's change lands
])
def test_a_change_landed_alone_in_a_hunk_at_the_files_edge_then_reverted_is_said(
        tmp_path, edge, left_out, landed_alone):
    """A hunk at the file's start (end) whose other change, the one at the edge, is left out.
    At the start it was kept at line 1 with that change's lines as seven lines of context
    before the landed change against three after, which GNU patch reads as a hunk at the file's
    END: it applied nowhere. Before: the rebase said "landed upstream: kept under upstreamed/"
    without the commit, and `status --against` a revert of the landing said the fix applies,
    the revert unsaid. At the end the long side (after the change) was not at line 1, so the
    part was placed already; it is kept here as the same guarantee's other edge."""
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": EDGE, "pkg/b.py": b"b = 1\n"})
    landed = EDGE.replace(*landed_alone)
    stack.add_fix("fa", "pkg/a.py", EDGE, landed.replace(*left_out))
    hunks = stack.patch("up", "fa")
    assert hunks.count(b"\n@@ ") == 1, hunks  # one hunk holds both changes
    assert (b"\n@@ -1," in hunks) == (edge == "start"), hunks
    landing, kept = _landed_in_part(stack, landed, "Better (#15)")
    # GNU patch takes the kept part back out of the file it landed in.
    landed_file = tmp_path / "landed.py"
    landed_file.write_bytes(landed)
    gnu = subprocess.run(["patch", "-s", "-R", "--dry-run", str(landed_file)],
                         input=hunk_file(kept), capture_output=True)
    assert gnu.returncode == 0, gnu.stdout + gnu.stderr

    stack.commit({"pkg/a.py": EDGE}, "Revert better", tag="v3")
    revert = git(stack.up, "rev-parse", "HEAD").strip()
    _, out, _ = stack.cli("status", "--against", "v3", expect=1)
    assert f"fix up/fa.patch landed in {landing[:12]} was reverted upstream in {revert[:12]}" \
        in out, out
