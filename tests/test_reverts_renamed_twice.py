"""A kept landing reverted upstream, its file then renamed twice (or more): the revert is named,
said reverted, never the second rename "as part of other work". A revision between the renames
has the file under neither its old path nor its new one: it read as the change there again, so
the revert was passed over for the rename that followed. `bring-back` puts the fix into the
file under its current name. Real git history, through the CLI."""
from __future__ import annotations

import pytest

from helpers.project import OneUpstreamStack


def _module() -> bytes:
    return b'"""m."""\n\n' + b"\n\n".join(
        b"def b%d(x):\n    a = %d\n    b = a + 1\n    return b\n" % (i, i) for i in range(4))


@pytest.mark.parametrize("renames", [2, 3])
@pytest.mark.parametrize("how", ["git revert", "by hand"])
def test_a_revert_then_two_renames_names_the_revert(tmp_path, renames, how):
    base = _module()
    fixed = base.replace(b"    a = 2\n", b"    a = 2 + 0  # fix\n")
    stack = OneUpstreamStack(tmp_path, {"pkg/b.py": base})
    stack.add_fix("fix", "pkg/b.py", base, fixed)
    landing = stack.commit({"pkg/b.py": fixed}, "b2: fix (#7)", tag="v2")
    stack.dropped_as_landed("up=v2")
    message = f'Revert "b2: fix (#7)"\n\nThis reverts commit {landing}.\n' \
        if how == "git revert" else "Go back to the plain computation"
    revert = stack.commit({"pkg/b.py": base}, message)
    path = "pkg/b.py"
    for i in range(1, renames + 1):
        new = f"{path[:-3]}_{i}.py"
        stack.upstream.commit({new: base}, f"move the kernels ({i})", {path: new})
        path = new
    head = stack.upstream.head()
    doc = stack.json("status", "--against", f"up={head}", expect=1)
    assert doc["gone_upstream"] == [], doc["gone_upstream"]
    (said,) = doc["reverted"]
    assert (said["name"], said["kind"], said["by"]) == ("fix.patch", "reverted", revert), said
    stack.cli("rebase", "--to", f"up={head}", expect=1)
    _, out, _ = stack.cli("status", expect=1)
    assert f"was reverted upstream in {revert[:12]}" in out, out
    # The advised bring-back puts the fix into the file under its current name.
    stack.cli("bring-back", "up/fix.patch")
    assert stack.series("up") == ["fix.patch"]
    stack.cli("overlays")
    assert (stack.root / "overlays/up" / path).read_bytes() == fixed
    stack.cli("status")
