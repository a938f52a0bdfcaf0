"""What judging a kept landing costs in a long file: the file's lines read without their
whitespace in passes over the whole file, not line by line. Real git history, through the
CLI."""
from __future__ import annotations

from helpers.project import OneUpstreamStack

STEPS = b"".join(b"    step%d = step%d + %d\n" % (i, i - 1, i) for i in range(1, 20))
ALPHA = b"def alpha(x):\n    step0 = x\n" + STEPS + b"    return step19\n\n\n"
# Other functions, some indented with tabs and ending their lines with \r\n: whitespace the
# squeezed reading drops.
OTHERS = b"".join(b"def other%d(y):\n\tz = y *  %d\r\n    return z\n\n\n" % (i, i)
                  for i in range(200))
SYNC = b"    torch.cuda.synchronize()\n"
CHECK = b"    if x is None:\n        raise ValueError('x is needed')\n"
FIXED_ALPHA = ALPHA.replace(b"    step0 = x\n", CHECK + b"    step0 = x\n").replace(
    b"    return step19\n", SYNC + b"    return step19\n")


def test_a_long_file_a_kept_landing_left_is_not_squeezed_line_by_line(tmp_path, monkeypatch):
    """A fix of two hunks in alpha() lands and is kept under upstreamed/; upstream takes it
    out again and moves the check into another function, re-indented with a tab. Whether its
    lines moved is told by the file's lines without whitespace, counted: the 1,000-line file
    is read so as a whole, not by a split and a join of each of its lines (a file of
    thousands of lines was read so per hunk). The check, moved, is not said taken back; the
    synchronize, gone, is: as before."""
    import patchforge.reverts as reverts

    squeezed: list[bytes] = []
    real = reverts._squeezed

    def counted(line):
        squeezed.append(line)
        return real(line)

    monkeypatch.setattr(reverts, "_squeezed", counted)
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": ALPHA + OTHERS})
    stack.add_fix("fa", "pkg/a.py", ALPHA + OTHERS, FIXED_ALPHA + OTHERS)
    stack.commit({"pkg/a.py": FIXED_ALPHA + OTHERS}, "alpha: check and synchronize (#11)",
                 tag="v2")
    stack.cli("rebase", "--to", "v2")
    assert (stack.root / "series/up/upstreamed/fa.patch").is_file()
    tabbed = b"\tif x is None:\n\t\traise ValueError('x is needed')\n"
    moved = OTHERS.replace(b"def other7(y):\n", b"def other7(y):\n" + tabbed)
    stack.commit({"pkg/a.py": ALPHA + moved}, "alpha: no check here, other7 checks (#12)",
                 tag="v3")
    squeezed.clear()
    document = stack.json("status", "--against", "v3", expect=1)
    (said,) = document["gone_upstream"] + document["reverted"]
    assert said["name"] == "fa.patch" and said["kind"] == "removed", said
    assert "taken back in part: pkg/a.py hunk 2," in said["detail"] and \
        "pkg/a.py hunk 1 moved elsewhere in the file upstream" in said["detail"], said
    # (The hunks' own lines are squeezed one by one; the file's 1,000 lines are not.)
    assert len(squeezed) < 100, len(squeezed)

