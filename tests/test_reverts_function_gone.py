"""A kept landing of a guard at a function's top, the function then taken out of its file by
upstream: moved whole into another file while a look-alike function left in the old file holds
the same guard (another kept fix's, there since before the fix). The look-alike's guard was read
as the fix's still in its old file: the guard dropped on the way was in no overlay and nothing
was said, exit 0. A place in another function the fix's base file has too is that function's,
never the fix's: the function is followed into the file the move put it in and judged there.

Or deleted outright: the function taken out of its file, added to no other, and the fix's guard
with it, into no other function or file. That read as "superseded", exit 0: the fix was in no
overlay and not upstream, and nothing said it. It is said taken out by the commit that took the
function out, naming the function and the guard (`delete` the kept fix where upstream no longer
needs the function; `bring-back` stops on the function gone, for the fix to be made where the
code went). A function renamed or merged into another with the guard is quiet; without it, said.
A method whose class was deleted while other classes keep a method of its name, or a function a
comment left behind still names, is deleted all the same: the bare name as a word in the file
read as the function staying, and that was quiet.
Real git history, through the CLI."""
from __future__ import annotations

import pytest

from helpers.project import OneUpstreamStack

GUARD = b"    if x is None:\n        return 0\n"


def _fn(name: bytes, n: int, guard: bool = False) -> bytes:
    return b"def %s(x):\n" % name + (GUARD if guard else b"") + \
        b"    a = %d\n    b = a + x\n    c = b * 2\n    return c\n" % n


def _module(names: list[bytes], guarded: tuple[bytes, ...] = ()) -> bytes:
    return b'"""m."""\n\n\n' + b"\n\n".join(
        _fn(name, n, name in guarded) for n, name in enumerate(names))


A = [b"a0", b"a1", b"a2", b"a3", b"a4"]
B = [b"b0", b"b1", b"b2"]
# a4 holds the same guard at the pin (another kept fix's): a look-alike of the fix's a2.
TWIN = (b"a4",)


def _landed(tmp_path, twin: tuple[bytes, ...] = TWIN):
    base = _module(A, twin)
    fixed = _module(A, (b"a2", *twin))
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": base, "pkg/b.py": _module(B)})
    stack.add_fix("fix", "pkg/a.py", base, fixed)
    landing = stack.commit({"pkg/a.py": fixed}, "a2: check x (#5)", tag="v2")
    stack.dropped_as_landed("up=v2")
    return stack, landing


def _old_file_without_a2(twin: tuple[bytes, ...] = TWIN) -> bytes:
    return b'"""m."""\n\n\n' + b"\n\n".join(
        _fn(name, n, name in twin) for n, name in enumerate(A) if name != b"a2")


def _moved(stack, dest: str, guard: bool) -> str:
    into = (_module(B) + b"\n\n" if dest == "pkg/b.py" else b'"""c."""\n\n\n') + \
        _fn(b"a2", 2, guard)
    return stack.commit({"pkg/a.py": _old_file_without_a2(), dest: into},
                        "move a2 to " + dest)


def _quiet(stack) -> None:
    head = stack.upstream.head()
    doc = stack.json("status", "--against", f"up={head}")
    assert doc["gone_upstream"] == [] and doc["reverted"] == [], doc
    stack.cli("rebase", "--to", f"up={head}")
    stack.cli("status")


def _said_removed_by(stack, took: str) -> dict:
    head = stack.upstream.head()
    doc = stack.json("status", "--against", f"up={head}", expect=1)
    (said,) = doc["reverted"] + doc["gone_upstream"]
    assert (said["name"], said["kind"], said["by"]) == ("fix.patch", "removed", took), said
    stack.cli("rebase", "--to", f"up={head}", expect=1)
    _, out, _ = stack.cli("status", expect=1)
    assert took[:12] in out and "up/fix.patch" in out, out
    return said


@pytest.mark.parametrize("dest", ["pkg/c.py", "pkg/b.py"])
def test_a_guard_dropped_as_its_function_moved_beside_a_look_alike_with_it_is_said(
        tmp_path, dest):
    stack, _ = _landed(tmp_path)
    took = _moved(stack, dest, guard=False)
    _said_removed_by(stack, took)
    # The advised bring-back puts the guard into a2 where it is now, once; a4 keeps its own.
    stack.cli("bring-back", "up/fix.patch")
    assert stack.series("up") == ["fix.patch"]
    stack.cli("overlays")
    moved = (stack.root / "overlays/up" / dest).read_bytes()
    assert moved.count(GUARD) == 1 and _fn(b"a2", 2, True) in moved, moved
    old = stack.root / "overlays/up/pkg/a.py"
    assert not old.exists() or old.read_bytes() == _old_file_without_a2(), old.read_bytes()
    stack.cli("status")


@pytest.mark.parametrize("dest", ["pkg/c.py", "pkg/b.py"])
def test_a_function_moved_with_its_guard_beside_a_look_alike_with_it_is_quiet(tmp_path, dest):
    stack, _ = _landed(tmp_path)
    _moved(stack, dest, guard=True)
    _quiet(stack)


@pytest.mark.parametrize("guard", [True, False])
def test_a_function_renamed_in_place_beside_a_look_alike(tmp_path, guard):
    # a2 -> a2_impl in pkg/a.py: with its guard, quiet; without it, said, naming the rename.
    stack, _ = _landed(tmp_path)
    renamed = _module(A, (b"a2", *TWIN)).replace(b"def a2(x):\n", b"def a2_impl(x):\n")
    if not guard:
        renamed = renamed.replace(b"def a2_impl(x):\n" + GUARD, b"def a2_impl(x):\n")
    took = stack.commit({"pkg/a.py": renamed}, "a2 -> a2_impl")
    if guard:
        _quiet(stack)
    else:
        _said_removed_by(stack, took)


def test_a_function_merged_with_its_guard_into_another_is_quiet(tmp_path):
    # a2's body, guard first, made the top of a1's; a2 gone.
    stack, _ = _landed(tmp_path)
    merged = _old_file_without_a2().replace(
        b"def a1(x):\n", b"def a1(x):\n" + GUARD + b"    x = x + 2\n")
    stack.commit({"pkg/a.py": merged}, "fold a2 into a1")
    _quiet(stack)


@pytest.mark.parametrize("twin", [(), TWIN], ids=["alone", "beside a look-alike"])
def test_a_guard_whose_function_upstream_deleted_is_said_naming_the_commit(tmp_path, twin):
    stack, _ = _landed(tmp_path, twin)
    took = stack.commit({"pkg/a.py": _old_file_without_a2(twin)}, "a2: no longer used")
    said = _said_removed_by(stack, took)
    assert "took a2 out of pkg/a.py" in said["detail"], said
    assert "`if x is None:`" in said["detail"], said
    assert "delete up/upstreamed/fix.patch" in said["message"], said
    # The advised delete keeps it under deleted/, and nothing more is said.
    stack.cli("delete", "up/upstreamed/fix.patch")
    stack.cli("status")


def test_a_guard_whose_function_was_deleted_by_a_revert_of_the_landing_is_said_reverted(
        tmp_path):
    stack, landing = _landed(tmp_path, ())
    took = stack.commit({"pkg/a.py": _old_file_without_a2(())},
                        f'Revert "a2: check x (#5)"\n\nThis reverts commit {landing}.\n')
    head = stack.upstream.head()
    doc = stack.json("status", "--against", f"up={head}", expect=1)
    (said,) = doc["reverted"] + doc["gone_upstream"]
    assert (said["kind"], said["by"]) == ("reverted", took), said


@pytest.mark.parametrize("twin", [(), TWIN], ids=["alone", "beside a look-alike"])
def test_a_function_merged_without_its_guard_into_another_is_said(tmp_path, twin):
    stack, _ = _landed(tmp_path, twin)
    merged = _old_file_without_a2(twin).replace(
        b"def a1(x):\n", b"def a1(x):\n    x = x + 2\n")
    took = stack.commit({"pkg/a.py": merged}, "fold a2 into a1")
    _said_removed_by(stack, took)


def test_a_function_deleted_whose_guard_its_caller_in_another_file_took_is_quiet(tmp_path):
    stack, _ = _landed(tmp_path, ())
    caller = _module(B).replace(b"def b1(x):\n", b"def b1(x):\n" + GUARD)
    stack.commit({"pkg/a.py": _old_file_without_a2(()), "pkg/b.py": caller},
                 "inline a2 into b1")
    _quiet(stack)


def test_a_function_deleted_where_the_fix_only_took_a_line_out_is_quiet(tmp_path):
    # The fix takes `c = b * 2` out of a2; upstream later deletes a2: nothing of the fix left
    # to lose.
    base = _module(A)
    fixed = base.replace(_fn(b"a2", 2), _fn(b"a2", 2).replace(b"    c = b * 2\n", b""))
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": base, "pkg/b.py": _module(B)})
    stack.add_fix("fix", "pkg/a.py", base, fixed)
    stack.commit({"pkg/a.py": fixed}, "a2: no c", tag="v2")
    stack.dropped_as_landed("up=v2")
    stack.commit({"pkg/a.py": _old_file_without_a2(())}, "a2: no longer used")
    _quiet(stack)


def _c_fn(name: bytes, guard: bool = False) -> bytes:
    return b"int %s(int *x)\n{\n" % name + (b"    if (!x)\n        return 0;\n" if guard else b"") + \
        b"    int a = x[0];\n    int b = a + 1;\n    return b * 2;\n}\n"


@pytest.mark.parametrize("kind", ["a C function", "a method"])
@pytest.mark.parametrize("guard", [False, True])
def test_a_c_function_or_a_method_deleted(tmp_path, kind, guard):
    # Deleted with the fix's guard: said; its guard kept by a function that took its body in
    # the same commit: quiet.
    if kind == "a C function":
        path, names = "csrc/k.cu", [b"k0", b"k1", b"k2"]

        def module(fixed=(), gone=(), taken=False):
            return b"#include <x.h>\n\n" + b"\n".join(
                _c_fn(n, n in fixed or (taken and n == b"k1")) for n in names if n not in gone)
        guard_line = b"if (!x)"
    else:
        path, names = "pkg/m.py", [b"m0", b"m1", b"m2"]

        def module(fixed=(), gone=(), taken=False):
            return b'"""m."""\n\n\nclass K:\n' + b"\n".join(
                b"\n".join(b"    " + line if line else line for line in _fn(
                    n, i, n in fixed or (taken and n == b"m1")).split(b"\n"))
                for i, n in enumerate(names) if n not in gone)
        guard_line = b"if x is None:"
    fixed_name = names[2]
    base, fixed = module(), module((fixed_name,))
    stack = OneUpstreamStack(tmp_path, {path: base})
    stack.add_fix("fix", path, base, fixed)
    stack.commit({path: fixed}, "check x (#5)", tag="v2")
    stack.dropped_as_landed("up=v2")
    took = stack.commit({path: module(gone=(fixed_name,), taken=guard)}, "no longer used")
    if guard:
        _quiet(stack)
        return
    said = _said_removed_by(stack, took)
    assert guard_line.decode() in said["detail"], said


def test_a_guard_taken_out_before_its_function_was_deleted_names_the_commit_that_took_it(
        tmp_path):
    # The guard dropped from a2 by one commit, a2 deleted by a later one: the deletion took no
    # line of the fix; the commit that did is named, and the deletion after it.
    stack, _ = _landed(tmp_path, ())
    # (Its own rewrite of a2's last line with it: no exact reverse of the landing.)
    dropped = _module(A).replace(b"    a = 2\n    b = a + x\n    c = b * 2\n    return c\n",
                                 b"    a = 2\n    b = a + x\n    c = b * 2\n    return c + 0\n")
    took = stack.commit({"pkg/a.py": dropped}, "a2: x is never None")
    deleted = stack.commit({"pkg/a.py": _old_file_without_a2(())}, "a2: no longer used")
    said = _said_removed_by(stack, took)
    assert f"commit {deleted[:12]} then took a2 out of pkg/a.py" in said["detail"], said


def _classes(names: list[bytes], guarded: tuple[bytes, ...] = ()) -> bytes:
    # A torch module file's shape: each class with its own `forward`.
    return b'"""m."""\n\n\n' + b"\n\n".join(
        b"class %s:\n    def forward(self, x):\n" % name +
        (b"        if x is None:\n            return 0\n" if name in guarded else b"") +
        b"        a = x + %d\n        b = a * 2\n        return b\n" % n
        for n, name in enumerate(names))


@pytest.mark.parametrize("how", ["deleted", "class renamed with it"])
def test_a_method_whose_class_was_deleted_while_others_keep_that_name(tmp_path, how):
    # B.forward holds the fix's guard; upstream deletes class B while A and C keep their own
    # `forward`: the name `forward` stays in the file, B's method does not, and the guard
    # went with it: said. Class B renamed B2 with the guard in its forward: quiet.
    base, fixed = _classes([b"A", b"B", b"C"]), _classes([b"A", b"B", b"C"], (b"B",))
    stack = OneUpstreamStack(tmp_path, {"pkg/m.py": base})
    stack.add_fix("fix", "pkg/m.py", base, fixed)
    stack.commit({"pkg/m.py": fixed}, "B: check x (#5)", tag="v2")
    stack.dropped_as_landed("up=v2")
    if how == "deleted":
        took = stack.commit({"pkg/m.py": _classes([b"A", b"C"])}, "B: no longer used")
        said = _said_removed_by(stack, took)
        assert "took B.forward out of pkg/m.py" in said["detail"], said
    else:
        stack.commit({"pkg/m.py": _classes([b"A", b"B2", b"C"], (b"B2",))}, "B -> B2")
        _quiet(stack)


def test_a_guard_whose_function_was_deleted_leaving_a_comment_naming_it_is_said(tmp_path):
    stack, _ = _landed(tmp_path, ())
    gone = _old_file_without_a2(()).replace(
        b"def a3(x):\n", b"# a2 was folded into its callers.\ndef a3(x):\n")
    took = stack.commit({"pkg/a.py": gone}, "a2: no longer used")
    said = _said_removed_by(stack, took)
    assert "took a2 out of pkg/a.py" in said["detail"], said
