"""Code upstream moved and black re-wrapped, adding the parentheses it puts around a condition
or right-hand side too long for its line (`if (` ... `):`, `x = (` ... `)`), is the fix's code
moved, not taken back: a kept landing so moved is quiet, and a skipped fix whose lines upstream
so has is refused by `bring-back` (the overlay would have them twice). A hunk really taken back,
beside a wrapped condition that is not its own, is still said."""
from __future__ import annotations

import pytest

from helpers.project import OneUpstreamStack

BASE = b"".join(b"line %d of the module under test\n" % i for i in range(1, 41))


def _line(n: int) -> bytes:
    return b"line %d of the module under test\n" % n


GUARD = b"if value is None:\n    raise ValueError('a value is needed here')\n"
CHECKS = {
    "condition": (
        b"if requested_block_size > maximum_block_size_for_this_device and not allow_oversize:\n"
        b"    raise ValueError('block too large')\n",
        b"with device_guard():\n    if (\n"
        b"        requested_block_size > maximum_block_size_for_this_device\n"
        b"        and not allow_oversize\n    ):\n"
        b"        raise ValueError(\"block too large\")\n"),
    "right-hand side": (
        b"block_size = requested_block_size_for_this_call + extra_block_size_for_the_device\n",
        b"with device_guard():\n    block_size = (\n"
        b"        requested_block_size_for_this_call\n"
        b"        + extra_block_size_for_the_device\n    )\n"),
}
FIXED = {kind: BASE.replace(_line(10), _line(10) + GUARD).replace(_line(30), _line(30) + check)
         for kind, (check, _) in CHECKS.items()}


def _kept(tmp_path, kind):
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": BASE, "pkg/b.py": b"b = 1\n"})
    stack.add_fix("fa", "pkg/a.py", BASE, FIXED[kind])
    stack.commit({"pkg/a.py": FIXED[kind]}, "Check the block size (#11)", tag="v2")
    stack.cli("rebase", "--to", "v2")
    assert (stack.root / "series/up/upstreamed/fa.patch").is_file()
    return stack


@pytest.mark.parametrize("kind", sorted(CHECKS))
def test_a_landing_upstream_moved_and_black_wrapped_is_quiet(tmp_path, kind):
    """Upstream moves the fix's second hunk into a `with` block, where black wraps it in
    parentheses. It was said "taken back in part: pkg/a.py hunk 2, the rest still upstream",
    and the advised bring-back put the lines back at the old place: the overlay had them
    twice, every check green after."""
    stack = _kept(tmp_path, kind)
    stack.commit({"pkg/a.py": BASE.replace(_line(10), _line(10) + GUARD).replace(
        _line(33), _line(33) + CHECKS[kind][1])}, "Under the device guard (black)", tag="v3")
    _, out, _ = stack.cli("status", "--against", "v3")
    assert "taken back" not in out and "revert" not in out, out
    stack.cli("rebase", "--to", "v3")
    assert stack.series("up") == [] and (stack.root / "series/up/upstreamed/fa.patch").is_file()
    stack.cli("check")


def test_a_hunk_taken_back_beside_another_black_wrapped_condition_is_said(tmp_path):
    """Upstream takes the block-size check out and wraps a condition of its own (another
    test) the way black does: the parentheses read away do not make it the fix's."""
    stack = _kept(tmp_path, "condition")
    other = (b"with device_guard():\n    if (\n"
             b"        requested_block_size > maximum_block_size_for_this_device\n"
             b"        and allow_oversize\n    ):\n        warn(\"block too large\")\n")
    stack.commit({"pkg/a.py": BASE.replace(_line(10), _line(10) + GUARD).replace(
        _line(33), _line(33) + other)}, "Warn only", tag="v3")
    (said,) = stack.json("status", "--against", "v3", expect=1)["gone_upstream"]
    assert said["name"] == "fa.patch" and "taken back in part: pkg/a.py hunk 2" in \
        said["detail"], said


def test_bring_back_refuses_a_fix_whose_check_upstream_added_black_wrapped(tmp_path):
    """A rebase sets the fix aside; upstream then adds its block-size check its own way, a
    few lines lower and black-wrapped. bring-back moved the fix cleanly, the overlay checking
    the block size twice; now it is refused, naming where upstream has the lines."""
    check, wrapped = CHECKS["condition"]
    fixed = BASE.replace(_line(30), _line(30) + check)
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": BASE, "pkg/b.py": b"b = 1\n"})
    stack.add_fix("fa", "pkg/a.py", BASE, fixed)
    stack.commit({"pkg/a.py": BASE.replace(_line(30), b"thirty = 30\n")}, "Thirty", tag="v2")
    stack.cli("rebase", "--to", "v2", expect=3)
    stack.cli("rebase", "--skip", expect=1)
    assert (stack.root / "series/up/skipped/fa.patch").is_file()
    stack.commit({"pkg/a.py": BASE.replace(_line(33), _line(33) + wrapped)},
                 "Check the block size under the device guard", tag="v3")
    stack.cli("rebase", "--to", "v3", expect=1)
    _, _, err = stack.cli("bring-back", "fa", expect=2)
    assert "pkg/a.py hunk 1 (upstream has its lines at pkg/a.py line 35)" in err, err
    assert stack.series("up") == [] and (stack.root / "series/up/skipped/fa.patch").is_file()
