"""How `status` words a landing upstream took back and made again its own way, where the
history does not show which commit did what: it says what was not found, never names a
commit that did not do it."""
from __future__ import annotations

from helpers.git import git
from helpers.project import OneUpstreamStack

STEPS = b"".join(b"    step%d = step%d + %d\n" % (i, i - 1, i) for i in range(1, 20))
ALPHA = b"def alpha(x):\n    step0 = x\n" + STEPS + b"    return step19\n\n\n"
BETA = b"def beta(y):\n    return y * 2\n"
CHECK = b"    if x is None:\n        raise ValueError('x is needed')\n"
THEIR_CHECK = b'    if x is None:\n        raise ValueError("x is needed")\n'


def test_a_relanding_after_a_revert_in_a_merge_names_no_commit_that_did_not_make_it(tmp_path):
    """A guard at alpha's top lands (#11); a later commit changes alpha's end; a merge takes
    the guard out (no single commit does: a revert done in a merge), and upstream makes the
    guard again its own way a line lower (#12). No commit is seen taking the hunk out, yet
    status said "<the commit after the landing> put them in alpha again since": the oldest
    commit asked, which only held the landed guard. It says none was seen moving them and
    names no commit for the copy, and a bring-back still stops on it."""
    base = ALPHA + BETA
    fixed = base.replace(b"def alpha(x):\n", b"def alpha(x):\n" + CHECK)
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": base})
    stack.add_fix("fa", "pkg/a.py", base, fixed)
    landing = stack.commit({"pkg/a.py": fixed}, "alpha: check x (#11)", tag="v2")
    stack.cli("rebase", "--to", "v2")
    assert (stack.root / "series/up/upstreamed/fa.patch").is_file()

    def done(content: bytes) -> bytes:
        return content.replace(b"step19\n\n", b"step19  # done\n\n")

    later = stack.commit({"pkg/a.py": done(fixed)}, "alpha: say where it ends")
    git(stack.up, "checkout", "-q", "-b", "side", landing)
    (stack.up / "pkg/b.py").write_bytes(b"b = 1\n")
    git(stack.up, "add", "pkg/b.py")
    git(stack.up, "commit", "-qm", "side work")
    git(stack.up, "checkout", "-q", "-")
    git(stack.up, "merge", "-q", "--no-ff", "--no-commit", "side")
    (stack.up / "pkg/a.py").write_bytes(done(base))
    git(stack.up, "add", "pkg/a.py")
    git(stack.up, "commit", "-qm", "Merge side work, without the check")
    again = base.replace(b"    step0 = x\n", b"    step0 = x\n" + THEIR_CHECK)
    stack.commit({"pkg/a.py": done(again)}, "alpha: check x again (#12)", tag="v3")

    (said,) = stack.json("status", "--against", "v3", expect=1)["gone_upstream"]
    assert said["by"] is None, said
    assert "no commit since the landing is seen moving them, and they are in alpha again " \
        "since: landed again its own way, it seems: a bring-back stops on it (look at " \
        "pkg/a.py line 3)" in said["detail"], said
    assert later[:12] not in said["detail"], said
    stack.cli("rebase", "--to", "v3", expect=1)
    stack.cli("bring-back", "up/fa.patch", expect=2)
    assert stack.series("up") == []
    assert (stack.root / "series/up/skipped/fa.patch").is_file()
