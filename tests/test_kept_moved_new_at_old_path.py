"""A kept landing whose file upstream moved after it (`git mv pkg/a.py lib/a.py`) and wrote a new
file at the old path, a module of wrappers that still defines the fix's function (`def a2(x):
return _a.a2(x)`), in the same commit or a later one. The fix's guard then dropped from a2 in
lib/a.py was said nothing: status exit 0, the guard in no overlay and not upstream. The fix was
read at its old path, where the wrapper holds neither the fix nor its old code (superseded),
and git's rename detection pairs only a path gone. A file kept at its path with less than half
of its lines, where the commit that made it so added one other file with at least half of them
(or deleted it, git pairing it with another), is read at that other file: the take-out is
said, and `bring-back` puts the guard into a2 in lib/a.py. Real git history, through the CLI."""
from __future__ import annotations

import pytest

from test_reverts_function_gone import A, GUARD, _landed, _module

WRAPPERS = b'"""old home."""\nfrom lib import a as _a\n\n\n' + b"\n\n".join(
    b"def %s(x):\n    return _a.%s(x)\n" % (name, name) for name in A)


@pytest.mark.parametrize("guard", [False, True], ids=["guard dropped", "guard kept"])
@pytest.mark.parametrize("when", ["in the move", "after the move"])
def test_a_file_moved_with_wrappers_written_at_its_path(tmp_path, when, guard):
    stack, _ = _landed(tmp_path, ())
    moved = _module(A, (b"a2",) if guard else ())
    if when == "in the move":
        took = stack.upstream.commit({"lib/a.py": moved, "pkg/a.py": WRAPPERS},
                                     "move a into lib", {"pkg/a.py": "lib/a.py"})
    else:
        stack.upstream.commit({}, "move a into lib", {"pkg/a.py": "lib/a.py"})
        stack.commit({"pkg/a.py": WRAPPERS}, "pkg/a.py: keep the old names")
        took = stack.commit({"lib/a.py": moved}, "a2: x is never None")
    head = stack.upstream.head()
    if guard:
        stack.kept_fixes_hold(f"up={head}")
        return
    said = stack.kept_fix_taken_back(f"up={head}")
    assert (said["name"], said["by"]) == ("fix.patch", took), said
    _, out, _ = stack.cli("rebase", "--to", f"up={head}", expect=1)
    assert took[:12] in out, out
    stack.cli("bring-back", "up/fix.patch")
    assert stack.series("up") == ["fix.patch"]
    stack.cli("overlays")
    assert (stack.root / "overlays/up/lib/a.py").read_bytes() == _module(A, (b"a2",))
    assert not (stack.root / "overlays/up/pkg/a.py").exists()
    assert GUARD not in WRAPPERS
    stack.cli("status")


def _copied_then_wrappers(tmp_path, wrappers: bytes = WRAPPERS):
    """The fix's file copied whole to lib/a.py in one commit (pkg/a.py left as it is), pkg/a.py
    cut down to `wrappers` in a later one, which adds no file."""
    stack, _ = _landed(tmp_path, ())
    stack.commit({"lib/a.py": _module(A, (b"a2",))}, "copy a into lib")
    stack.commit({"pkg/a.py": wrappers}, "pkg/a.py: wrappers")
    return stack


@pytest.mark.parametrize("guard", [False, True], ids=["guard dropped", "guard kept"])
def test_a_file_copied_then_cut_down_to_wrappers_is_read_at_its_copy(tmp_path, guard):
    # Only a commit that both cut the file down and added the other was followed: read at its
    # old path, the guard then dropped from the copy read as superseded, nothing said, exit 0.
    stack = _copied_then_wrappers(tmp_path)
    now = _module(A, (b"a2",) if guard else ()) + b"\n\nVERSION = 2\n"
    took = stack.commit({"lib/a.py": now}, "lib/a.py: version 2")
    head = stack.upstream.head()
    if guard:
        stack.kept_fixes_hold(f"up={head}")
        return
    said = stack.kept_fix_taken_back(f"up={head}")
    assert (said["name"], said["kind"], said["by"]) == ("fix.patch", "removed", took), said
    _, out, _ = stack.cli("rebase", "--to", f"up={head}", expect=1)
    assert took[:12] in out, out
    stack.cli("bring-back", "up/fix.patch")
    assert stack.series("up") == ["fix.patch"]
    stack.cli("overlays")
    assert (stack.root / "overlays/up/lib/a.py").read_bytes() == \
        _module(A, (b"a2",)) + b"\n\nVERSION = 2\n"
    assert not (stack.root / "overlays/up/pkg/a.py").exists()
    stack.cli("status")


def test_a_guard_kept_in_the_wrapper_of_a_copied_file_is_quiet(tmp_path):
    # The copy's a2 loses the guard, the wrapper of a2 left at the old path checks x before
    # its call: upstream kept the fix at its path, nothing to say.
    kept = WRAPPERS.replace(b"def a2(x):\n", b"def a2(x):\n" + GUARD)
    stack = _copied_then_wrappers(tmp_path, kept)
    stack.commit({"lib/a.py": _module(A)}, "a2: x is never None")
    head = stack.upstream.head()
    stack.kept_fixes_hold(f"up={head}")


@pytest.mark.parametrize("snapshot", ["before the fix", "with the guard, dropped later"])
def test_a_snapshot_added_since_is_no_copy_of_a_file_whose_function_moved(tmp_path, snapshot):
    # Upstream adds a snapshot of the fix's file (test data), then moves a2, guard included,
    # into pkg/b.py and cuts pkg/a.py down: the snapshot, added since the landing and keeping
    # most of pkg/a.py's lines, was read as its copy, the fix said taken out (exit 1) and
    # `bring-back` advised to patch the snapshot. The commit's own move of a2 is followed, and
    # a file added without the fix's lines is no copy of the landed file.
    from test_reverts_function_gone import B, _fn
    stack, _ = _landed(tmp_path, ())
    held = (b"a2",) if snapshot.startswith("with") else ()
    stack.commit({"tests/data/a_snapshot.py": _module(A, held)}, "tests: snapshot of pkg/a.py")
    stack.commit({"pkg/a.py": b'"""m."""\n\n\n' + _fn(b"a0", 0),
                  "pkg/b.py": _module(B) + b"\n\n" + _fn(b"a2", 2, True)},
                 "move a2 to b; drop dead code")
    stack.commit({"tests/data/a_snapshot.py": _module(A) + b"# v2\n"}, "tests: refresh snapshot")
    head = stack.upstream.head()
    stack.kept_fixes_hold(f"up={head}")
