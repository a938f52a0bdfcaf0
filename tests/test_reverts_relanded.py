"""A fix upstream lands, reverts, lands again and reverts again: the last revert is said as the
first one is (reverted, naming the reverting commit and `bring-back`, exit 1), and the landing
between them is quiet, whether the project's pin stays before them all (`status --against`
each) or follows upstream (a rebase at each step, the fix brought back after the first revert
and dropped again as landed by the second landing). Each way of landing it again is tried: a
revert of the revert, a cherry-pick of the first landing, a new commit of the same change.
Real git upstreams, every command through the CLI."""
from __future__ import annotations

import pytest

from helpers.git import git
from helpers.project import OneUpstreamStack

BASE = b"".join(b"line %d of the module under test\n" % i for i in range(1, 31))
FIXED = BASE.replace(b"line 5 of the module under test\n", b"five = compute_it_properly()\n")


def _revert(stack: OneUpstreamStack, commit: str, tag: str) -> str:
    git(stack.up, "revert", "--no-edit", commit)
    git(stack.up, "tag", tag)
    return git(stack.up, "rev-parse", "HEAD").strip()


def _landed_again(stack: OneUpstreamStack, how: str, landing: str, revert: str) -> str:
    """Upstream lands the fix a second time (tagged v4), `how`: the commit."""
    if how == "revert of the revert":
        return _revert(stack, revert, "v4")
    if how == "cherry-pick":
        git(stack.up, "cherry-pick", landing)
        git(stack.up, "tag", "v4")
        return git(stack.up, "rev-parse", "HEAD").strip()
    return stack.commit({"pkg/a.py": FIXED}, "Compute it properly, again (#12)", tag="v4")


def _said_reverted(stack: OneUpstreamStack, args: tuple[str, ...], landed: str,
                   by: str) -> None:
    """`status ARGS` exits 1 saying fa reverted by `by`, its landing `landed`, with the way
    back; its document has it as `reverted`, nothing else."""
    rc, out, _ = stack.cli("status", *args, expect=1)
    assert f"fix up/fa.patch landed in {landed[:12]} was reverted upstream in {by[:12]}: " \
        "`patchforge bring-back up/fa.patch` puts it back in the series" in out, out
    document = stack.json("status", *args, expect=1)
    assert [(g["name"], g["kind"], g["by"]) for g in document["reverted"]] == \
        [("fa.patch", "reverted", by)], document
    assert document["gone_upstream"] == [], document


def _quiet(stack: OneUpstreamStack, args: tuple[str, ...]) -> None:
    document = stack.json("status", *args, expect=0)
    assert document["reverted"] == document["gone_upstream"] == [], document


@pytest.mark.parametrize("how", ["revert of the revert", "cherry-pick", "a new commit"])
def test_the_revert_of_a_landing_made_again_is_said_as_the_first_revert(tmp_path, how):
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": BASE, "pkg/b.py": b"b = 1\n"})
    stack.add_fix("fa", "pkg/a.py", BASE, FIXED)
    landing = stack.commit({"pkg/a.py": FIXED}, "Compute it properly (#11)", tag="v2")
    stack.cli("rebase", "--to", "v2")
    assert stack.series("up") == []
    first = _revert(stack, landing, "v3")
    again = _landed_again(stack, how, landing, first)
    last = _revert(stack, again, "v5")
    # The pin stays at the first landing: each revision asked of it.
    _said_reverted(stack, ("--against", "v3"), landing, first)
    _quiet(stack, ("--against", "v4"))
    _said_reverted(stack, ("--against", "v5"), landing, last)
    # The project follows upstream: the fix brought back after the first revert, dropped
    # again as landed by the second landing, and its revert said at v5 as the first was.
    stack.cli("rebase", "--to", "v3", expect=1)
    _said_reverted(stack, (), landing, first)
    stack.cli("bring-back", "up/fa.patch")
    assert stack.series("up") == ["fa.patch"]
    _quiet(stack, ())
    stack.cli("rebase", "--to", "v4")
    assert stack.series("up") == []
    assert f"commit:{again}".encode() in stack.patch("up", "fa", "upstreamed")
    _quiet(stack, ())
    stack.cli("rebase", "--to", "v5", expect=1)
    _said_reverted(stack, (), again, last)
