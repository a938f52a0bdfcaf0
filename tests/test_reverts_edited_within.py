"""A kept landing that adds a function (AITER `4450ede0e1`'s fourth hunk adds a kernel), which
upstream later edits inside (`0476e29c33` put an `end_sync` line in that kernel). The added
function ends as the code before it does, so the hunk's old neighbours (the end of the function
above, then the next one's start) meet again at the end of the added function: read as the old
code back, the fix was said "taken back in part" by the edit, and at later revisions "taken
out, then changed", exit 1, with nothing taken out. Every line the fix added still at its
place, in order, among upstream's new lines, is no take-back. The mirrors: the added function
taken out, whole or after such an edit, is said, naming the commit that took it out. Real git
history, through the CLI."""
from __future__ import annotations

import pytest

from helpers.project import OneUpstreamStack

STEPS = b"".join(b"\n\ndef step%d(x):\n    return x + %d\n" % (k, k) for k in range(3))
BASE = b'"""Steps."""\n' + STEPS + b'\n\ndef first(x):\n    y = x + 1\n    return y\n\n\n' \
    b'def last(x):\n    return x - 1\n'
ADDED = b"def middle(x):\n    a = x * 2\n    b = a + 3\n    c = b * 5\n    y = c + 1\n" \
    b"    return y\n\n\n"
ADDS = BASE.replace(b"def last", ADDED + b"def last")
# (With a hunk before it that stays, as AITER's: the file's whole diff applies neither way.)
DOC = (b'"""Steps."""\n', b'"""Steps, and the middle one."""\n')
INSIDE = (b"    b = a + 3\n", b"    b = a + 3\n    b = max(b, 0)\n")
ALSO = (b"    c = b * 5\n", b"    c = b * 5\n    c = min(c, 99)\n")


def _landed(tmp_path, shape: str):
    """The fix (`shape`: the added function alone, or beside a docstring hunk) landed at v2
    and kept: (stack, the fixed file)."""
    fixed = ADDS if shape == "alone" else ADDS.replace(*DOC)
    stack = OneUpstreamStack(tmp_path, {"pkg/m.py": BASE})
    stack.add_fix("fa", "pkg/m.py", BASE, fixed)
    stack.commit({"pkg/m.py": fixed}, "Add middle (#7)", tag="v2")
    stack.dropped_as_landed("up=v2")
    return stack, fixed


SHAPES = pytest.mark.parametrize("shape", ["alone", "beside another hunk"])


def _said(stack, target: str, expect: int) -> list:
    document = stack.json("status", "--against", target, expect=expect)
    return document["reverted"] + document["gone_upstream"]


@SHAPES
def test_a_line_upstream_put_inside_the_code_a_fix_added_is_no_take_back(tmp_path, shape):
    stack, fixed = _landed(tmp_path, shape)
    edited = fixed.replace(*INSIDE)
    stack.commit({"pkg/m.py": edited}, "middle: clamp b", tag="v3")
    assert _said(stack, "v3", 0) == []
    # (Then another edit inside it, and one of the code around: quiet still.)
    stack.commit({"pkg/m.py": edited.replace(*ALSO).replace(b"return x - 1", b"return x - 2")},
                 "middle: clamp c; last: two", tag="v4")
    assert _said(stack, "v4", 0) == []
    _, out, err = stack.cli("rebase", "--to", "v4")
    assert "needs attention" not in out + err, out + err
    stack.cli("status", expect=0)


@SHAPES
@pytest.mark.parametrize("edited_first", [False, True])
def test_the_added_code_taken_out_is_said(tmp_path, shape, edited_first):
    """The mirrors: the added function taken out (after a line put inside it, or not) is the
    fix taken out, said naming that commit (in part where the other hunk stays)."""
    stack, fixed = _landed(tmp_path, shape)
    if edited_first:
        stack.commit({"pkg/m.py": fixed.replace(*INSIDE)}, "middle: clamp b")
    took = stack.commit({"pkg/m.py": fixed.replace(ADDED, b"").replace(b"return x - 1",
                                                                        b"return x - 2")},
                        "Drop middle; last: two", tag="v3")
    said = _said(stack, "v3", 1)
    assert [(g["kind"], g["by"]) for g in said] == [("removed", took)], said
    if shape != "alone":
        assert "taken back in part: pkg/m.py hunk 2" in said[0]["detail"], said


REWRITTEN = (b"    c = b * 5\n", b"    c = b * FIVE\n")
BESIDE_ABOVE = (b"def middle", b"FIVE = 5\n\n\ndef middle")
BESIDE_BELOW = (b"def last", b"def after_middle(x):\n    return x\n\n\ndef last")


def test_lines_upstream_rewrote_in_the_code_a_fix_added_or_put_beside_it_are_no_take_back(
        tmp_path):
    """Upstream rewrote a line of the added function and put a line above it (AITER
    `a4cad90d03` rewrote `512` in the kernels `4450ede0e1` added and put a `#define` above
    them), then a function below it (`52e7477989`): the hunk's old neighbours meet after the
    added code, read as its old code back, "taken back in part" (exit 1), nothing taken out.
    The code above them is the fix's, as the landing left it, more than the base file's:
    quiet."""
    stack, fixed = _landed(tmp_path, "beside another hunk")
    edited = fixed.replace(*REWRITTEN).replace(*BESIDE_ABOVE)
    stack.commit({"pkg/m.py": edited}, "middle: name the five", tag="v3")
    assert _said(stack, "v3", 0) == []
    stack.commit({"pkg/m.py": edited.replace(*BESIDE_BELOW)}, "Add after_middle", tag="v4")
    assert _said(stack, "v4", 0) == []
    _, out, err = stack.cli("rebase", "--to", "v4")
    assert "needs attention" not in out + err, out + err


TWICE = b"def first_twice(x):\n    y = x + 1\n    y = y * 2\n    return y\n\n\n"


@pytest.mark.parametrize("variant", [False, True])
def test_the_added_code_rewritten_then_taken_out_is_said(tmp_path, variant):
    """The mirrors: the added function, a line of it rewritten and a line put above it, then
    taken out, is said, naming that commit; so where the added function is a variant of the
    one above it (`first_twice` below `first`, most of its lines the same), a line put above
    it: the code above the place is the base file's again."""
    added, line, named, above = (TWICE, b"", b"",
                                 (b"def first_twice", b"TWO = 2\n\n\ndef first_twice")) \
        if variant else (ADDED, *REWRITTEN, BESIDE_ABOVE)
    adds = BASE.replace(b"def last", added + b"def last").replace(*DOC)
    stack = OneUpstreamStack(tmp_path, {"pkg/m.py": BASE})
    stack.add_fix("fa", "pkg/m.py", BASE, adds)
    stack.commit({"pkg/m.py": adds}, "Add it (#7)", tag="v2")
    stack.dropped_as_landed("up=v2")
    rewritten = (adds.replace(line, named) if line else adds).replace(*above)
    stack.commit({"pkg/m.py": rewritten}, "Name the number")
    took = stack.commit({"pkg/m.py": rewritten.replace(
        added.replace(line, named) if line else added, b"")},
                        "Drop it", tag="v3")
    said = _said(stack, "v3", 1)
    assert [(g["kind"], g["by"]) for g in said] == [("removed", took)], said
