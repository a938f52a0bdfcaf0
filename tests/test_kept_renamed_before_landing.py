"""A fix that landed upstream after upstream renamed its file (a.py -> pkg/a.py between the fix's
base and the landing): the rebase that dropped it followed the rename, and the fix is kept under
upstreamed/ with its diff still naming a.py. When upstream then took the change back (a revert,
or other work), nothing was said (status exit 0, the rebase "nothing to do") and `bring-back`
refused: the fix was in no patch and no overlay. The renames were looked for from the landing
only, which has the file at neither path. They are now followed from the fix's base through the
landing to the revision judged: the take-out is said, and `bring-back` puts the fix into the
file under its current name. Real git history, through the CLI."""
from __future__ import annotations

import pytest

from helpers.project import OneUpstreamStack

GUARD = b'    assert x >= 0, "g needs a non-negative x"\n'
BASE = b"import math\n\n\ndef f(x):\n    y = x + 1\n    return math.floor(y)\n\n\n" \
    b"def g(x):\n    y = x * 2\n    return math.ceil(y)\n\n\ndef pad(v):\n    return [v, 3]\n"
FIXED = BASE.replace(b"def g(x):\n", b"def g(x):\n" + GUARD)


def _landed_after_a_rename(tmp_path, same: bool):
    """Upstream renames a.py to pkg/a.py, then lands the fix there (v2; `same`: in one
    commit); the rebase drops the fix as landed."""
    stack = OneUpstreamStack(tmp_path, {"a.py": BASE})
    stack.add_fix("fix", "a.py", BASE, FIXED)
    if same:
        landing = stack.upstream.commit({"pkg/a.py": FIXED}, "g: guard negative x",
                                        {"a.py": "pkg/a.py"}, tag="v2")
    else:
        stack.upstream.commit({}, "move a.py into pkg", {"a.py": "pkg/a.py"})
        landing = stack.commit({"pkg/a.py": FIXED}, "g: guard negative x", tag="v2")
    stack.dropped_as_landed("up=v2")
    assert b"+++ b/a.py" in stack.patch("up", "fix", "upstreamed")
    return stack, landing


@pytest.mark.parametrize("later", ["", "renamed again"])
@pytest.mark.parametrize("how", ["git revert", "other work"])
def test_a_landing_in_a_file_renamed_before_it_taken_back_is_said(tmp_path, how, later):
    stack, landing = _landed_after_a_rename(tmp_path, same=False)
    path = "pkg/a.py"
    if later:
        stack.upstream.commit({}, "move pkg/a.py to lib", {path: "lib/a.py"})
        path = "lib/a.py"
    if how == "git revert":
        took = stack.commit({path: BASE},
                            f'Revert "g: guard negative x"\n\nThis reverts commit {landing}.\n')
    else:
        took = stack.commit({path: BASE + b"# note\n"}, "g: simplify")
    head = stack.upstream.head()
    doc = stack.json("status", "--against", f"up={head}", expect=1)
    kind = "reverted" if how == "git revert" else "removed"
    (said,) = doc["reverted"] + doc["gone_upstream"]
    assert said in doc["reverted" if kind == "reverted" else "gone_upstream"], doc
    assert (said["name"], said["kind"], said["by"]) == ("fix.patch", kind, took), said
    _, out, _ = stack.cli("rebase", "--to", f"up={head}", expect=1)
    assert took[:12] in out, out
    # The advised bring-back puts the guard into the file under its current name, once.
    stack.cli("bring-back", "up/fix.patch")
    assert stack.series("up") == ["fix.patch"]
    assert f"+++ b/{path}".encode() in stack.patch("up", "fix")
    stack.cli("overlays")
    now = (stack.root / "overlays/up" / path).read_bytes()
    assert now.count(GUARD) == 1, now
    assert not (stack.root / "overlays/up/a.py").exists()
    stack.cli("status")
    stack.cli("lint")


@pytest.mark.parametrize("same", [False, True])
def test_a_landing_in_a_file_renamed_before_it_still_there_is_quiet(tmp_path, same):
    stack, _ = _landed_after_a_rename(tmp_path, same)
    stack.commit({"pkg/a.py": FIXED + b"\n\ndef other(v):\n    return v\n"}, "add other")
    stack.upstream.commit({}, "move pkg/a.py to lib", {"pkg/a.py": "lib/a.py"})
    head = stack.upstream.head()
    stack.kept_fixes_hold(f"up={head}")


@pytest.mark.parametrize("guard", [False, True])
def test_a_landing_in_a_file_renamed_before_it_whose_function_moved_on_is_followed(
        tmp_path, guard):
    # After the landing in pkg/a.py (renamed from a.py), upstream moves g into pkg/b.py, the
    # guard dropped on the way: said, and the advised bring-back puts the guard into g where it
    # is now. (It stopped on a conflict in pkg/a.py, its hint to make the fix where g no longer
    # is: the move was looked for at the kept diff's path, a.py, only.) With the guard: quiet.
    stack, _ = _landed_after_a_rename(tmp_path, same=False)
    g = b"def g(x):\n" + (GUARD if guard else b"") + b"    y = x * 2\n    return math.ceil(y)\n"
    stack.commit({"pkg/a.py": BASE.replace(g.replace(GUARD, b"") + b"\n\n", b""),
                  "pkg/b.py": b"import math\n\n\n" + g}, "move g into pkg/b.py")
    head = stack.upstream.head()
    if guard:
        doc = stack.json("status", "--against", f"up={head}")
        assert doc["reverted"] == [] and doc["gone_upstream"] == [], doc
        return
    said = stack.kept_fix_taken_back(f"up={head}")
    assert (said["name"], said["kind"]) == ("fix.patch", "removed"), said
    stack.cli("rebase", "--to", f"up={head}", expect=1)
    stack.cli("bring-back", "up/fix.patch")
    assert stack.series("up") == ["fix.patch"]
    assert b"+++ b/pkg/b.py" in stack.patch("up", "fix")
    stack.cli("overlays")
    assert (stack.root / "overlays/up/pkg/b.py").read_bytes().count(GUARD) == 1
    assert not (stack.root / "overlays/up/pkg/a.py").exists()
    stack.cli("status")


G = b"def g(x):\n    y = x * 2\n    return math.ceil(y)\n"
# A legacy g upstream writes at the kept diff's path, a.py, after the landing, holding the guard.
LEGACY = b"import math\n\n\n" + G.replace(b"def g(x):\n", b"def g(x):\n" + GUARD)


@pytest.mark.parametrize("same", [False, True])
@pytest.mark.parametrize("how", ["moved into pkg/b.py", "left in pkg/a.py"])
@pytest.mark.parametrize("guard", [False, True])
def test_a_look_alike_at_the_old_path_is_not_the_landed_fix(tmp_path, same, how, guard):
    # After the landing in pkg/a.py (renamed from a.py), upstream writes a legacy g holding the
    # guard at a.py in the commit that moves g into pkg/b.py or leaves it where it is, the
    # guard dropped from g or not. Read at the kept diff's path first, the legacy copy kept a
    # guard dropped from g quiet: in no overlay and not upstream, exit 0. With it: quiet.
    stack, _ = _landed_after_a_rename(tmp_path, same)
    g = G.replace(b"def g(x):\n", b"def g(x):\n" + GUARD) if guard else G
    if how == "moved into pkg/b.py":
        now = {"pkg/a.py": BASE.replace(G + b"\n\n", b""), "pkg/b.py": b"import math\n\n\n" + g}
    else:
        now = {"pkg/a.py": BASE.replace(G, g)}
    took = stack.commit({**now, "a.py": LEGACY}, f"g {how}; a.py: legacy g")
    head = stack.upstream.head()
    if guard:
        stack.kept_fixes_hold(f"up={head}")
        return
    said = stack.kept_fix_taken_back(f"up={head}")
    assert (said["name"], said["kind"], said["by"]) == ("fix.patch", "removed", took), said
    stack.cli("rebase", "--to", f"up={head}", expect=1)
    # The advised bring-back puts the guard into g where it is now, once; a.py is upstream's.
    stack.cli("bring-back", "up/fix.patch")
    assert stack.series("up") == ["fix.patch"]
    into = "pkg/b.py" if how == "moved into pkg/b.py" else "pkg/a.py"
    assert f"+++ b/{into}".encode() in stack.patch("up", "fix")
    stack.cli("overlays")
    assert (stack.root / "overlays/up" / into).read_bytes().count(GUARD) == 1
    assert not (stack.root / "overlays/up/a.py").exists()
    stack.cli("status")


@pytest.mark.parametrize("guard", [False, True])
def test_a_landing_in_a_file_renamed_before_it_then_renamed_back_is_read_there(tmp_path, guard):
    # Upstream renames pkg/a.py back to a.py after the landing (the guard dropped there later,
    # or not): a.py is the fix's file again, followed by git's rename detection.
    stack, _ = _landed_after_a_rename(tmp_path, same=False)
    stack.upstream.commit({}, "move pkg/a.py back to a.py", {"pkg/a.py": "a.py"})
    took = stack.commit({"a.py": FIXED if guard else BASE}, "g: rework")
    head = stack.upstream.head()
    if guard:
        doc = stack.json("status", "--against", f"up={head}")
        assert doc["reverted"] == [] and doc["gone_upstream"] == [], doc
        return
    said = stack.kept_fix_taken_back(f"up={head}")
    assert (said["name"], said["kind"], said["by"]) == ("fix.patch", "removed", took), said


@pytest.mark.parametrize("cut", [b"from a import *  # noqa\n", b"\n"],
                         ids=["re-export", "emptied"])
def test_a_landed_file_copied_back_to_its_old_path_then_cut_is_read_there(tmp_path, cut):
    # pkg/a.py copied back whole to a.py (guard included), then cut to a re-export or emptied:
    # the old path was never read as the copy, the fix was said removed (exit 1) while a.py
    # held it. A file added at the old path since the landing holding the fix's lines is the
    # copy; the guard then dropped from it is said, naming that commit.
    stack, _ = _landed_after_a_rename(tmp_path, same=False)
    stack.commit({"a.py": FIXED}, "copy pkg/a.py to a.py")
    stack.commit({"pkg/a.py": cut}, "pkg/a.py: cut")
    head = stack.upstream.head()
    doc = stack.json("status", "--against", f"up={head}")
    assert doc["reverted"] == [] and doc["gone_upstream"] == [], doc
    took = stack.commit({"a.py": BASE + b"# v3\n"}, "g: simplify")
    head = stack.upstream.head()
    said = stack.kept_fix_taken_back(f"up={head}")
    assert (said["name"], said["by"]) == ("fix.patch", took), said
    stack.cli("rebase", "--to", f"up={head}", expect=1)
    stack.cli("bring-back", "up/fix.patch")
    stack.cli("overlays")
    assert (stack.root / "overlays/up/a.py").read_bytes() == FIXED + b"# v3\n"
    assert not (stack.root / "overlays/up/pkg/a.py").exists()
    stack.cli("status")


def test_a_guard_dropped_from_a_cut_file_beside_a_legacy_copy_at_its_old_path_is_said(tmp_path):
    # Mirror of the above: upstream keeps a legacy copy of pkg/a.py at a.py (guard included),
    # then cuts pkg/a.py down, g still defined there, its guard dropped: read at the copy, the
    # fix was quiet (exit 0) while the module's own g lacked the guard. What the cut left still
    # runs g with the fix's old code: the drop is said, naming that commit.
    stack, _ = _landed_after_a_rename(tmp_path, same=False)
    stack.commit({"a.py": FIXED}, "keep a legacy a.py")
    took = stack.commit({"pkg/a.py": b"import math\n\n\ndef g(x):\n    y = x * 2\n"
                                     b"    return math.ceil(y)\n"}, "pkg/a.py: only g, simpler")
    said = stack.kept_fix_taken_back(f"up={took}")
    assert (said["name"], said["kind"], said["by"]) == ("fix.patch", "removed", took), said
