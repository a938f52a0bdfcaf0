"""What judging a kept landing costs in a long file: the file's lines read without their
whitespace in passes over the whole file, not line by line; the near text's numbers found by
their first digit, at the places the rule says and no others. Real git history, through the
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


BASE = b"".join(b"line %d of the table's notes\n" % i for i in range(1, 31))
# Numbers at a line's start, after a comma, inside a name (`gfx1250`, `x1.50`) and after a dot.
ROWS = b"1.50,gfx1250,0.0,x1.50\n2.0,gfx942,12.50,v.1.50\n"


def test_numbers_respelled_with_the_rows_moved_are_read_alike_only_as_numbers(tmp_path):
    """A fix adds two table rows; upstream moves them to the end of the file and writes each
    number without its trailing zeros (`1.50` as `1.5`, `0.0` as `0`): read as near text the
    rows are the same, moved, and nothing is said. A fraction inside a name (`x1.50`) or after
    a dot (`v.1.50`) is no number: written otherwise there, the rows are not the fix's, and
    it is said taken out."""
    fixed = BASE.replace(b"line 20 of the table's notes\n",
                         b"line 20 of the table's notes\n" + ROWS)
    respelled = ROWS.replace(b"1.50,", b"1.5,").replace(b",0.0,", b",0,").replace(
        b"2.0,", b"2,").replace(b"12.50", b"12.5")
    assert b"x1.50" in respelled and b"v.1.50" in respelled
    for k, (later, said) in enumerate(((respelled, False),
                                       (respelled.replace(b"x1.50", b"x1.5"), True),
                                       (respelled.replace(b"v.1.50", b"v.1.5"), True))):
        stack = OneUpstreamStack(tmp_path / str(k), {"pkg/t.csv": BASE, "pkg/b.py": b"b = 1\n"})
        stack.add_fix("fa", "pkg/t.csv", BASE, fixed)
        stack.commit({"pkg/t.csv": fixed}, "Rows (#11)", tag="v2")
        stack.cli("rebase", "--to", "v2")
        stack.commit({"pkg/t.csv": BASE + later}, "Tidy the table: the rows last",
                     tag="v3")
        document = stack.json("status", "--against", "v3", expect=1 if said else 0)
        assert document["reverted"] == [] and \
            [s["name"] for s in document["gone_upstream"]] == (["fa.patch"] if said else []), \
            (later, document["gone_upstream"])
