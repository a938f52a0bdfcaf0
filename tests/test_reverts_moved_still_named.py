"""A kept landing of a guard at a function's top, the function then moved by upstream into
another file without the guard while the old file still names it (an import of it from its new
file, a call of it) and keeps a look-alike function holding the same guard (another kept fix's,
there since before the fix). The look-alike's guard, at the one place of the old file where most
of the hunk's neighbours hold (the blank lines and body lines every function there shares), read
as the fix still in its old file: the guard was in no overlay and nothing was said, exit 0. A
place whose neighbours are only lines the file has elsewhere too is now read for the function it
is in, as one in a file naming the fix's function nowhere always was: another function the fix's
base file has too is that function's code, and the moved function is followed into its new
file. Moved with its guard, or left in its file with it, beside the same import or call: quiet.
Real git history, through the CLI."""
from __future__ import annotations

import pytest

from helpers.project import OneUpstreamStack

GUARD = b"    if x is None:\n        return 0\n"


def _fn(name: bytes, n: int, guard: bool = False) -> bytes:
    return b"def %s(x):\n" % name + (GUARD if guard else b"") + \
        b"    a = %d\n    b = a + x\n    c = b * 2\n    return c\n" % n


A = [b"a0", b"a1", b"a2", b"a3", b"a4"]
# a4 holds the same guard at the pin (another kept fix's): a look-alike of the fix's a2.
TWIN = (b"a4",)


def _module(names: list[bytes], guarded: tuple[bytes, ...], named: str = "") -> bytes:
    """pkg/a.py with `names` (numbered as in A), `guarded` holding the guard; `named`: the
    file also names a2 by an import from pkg/c.py, or by a call of it in a3."""
    head = b"from pkg.c import a2\n" if named == "an import" else b""
    text = b'"""m."""\n' + head + b"\n\n" + b"\n\n".join(
        _fn(name, A.index(name), name in guarded) for name in names)
    if named == "a call":
        text = text.replace(b"    a = 3\n    b = a + x\n    c = b * 2\n    return c\n",
                            b"    a = 3\n    b = a + x\n    c = b * 2\n    return a2(c)\n")
    return text


def _landed(tmp_path, named: str) -> OneUpstreamStack:
    base = _module(A, TWIN, named if named == "a call" else "")
    fixed = _module(A, (b"a2", *TWIN), named if named == "a call" else "")
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": base})
    stack.add_fix("fix", "pkg/a.py", base, fixed)
    stack.commit({"pkg/a.py": fixed}, "a2: check x (#5)", tag="v2")
    stack.dropped_as_landed("up=v2")
    return stack


@pytest.mark.parametrize("named", ["an import", "a call"])
def test_a_guard_dropped_as_its_function_moved_is_said_though_the_old_file_names_it(
        tmp_path, named):
    stack = _landed(tmp_path, named)
    rest = [name for name in A if name != b"a2"]
    took = stack.commit({"pkg/a.py": _module(rest, TWIN, named),
                         "pkg/c.py": b'"""c."""\n\n\n' + _fn(b"a2", 2)}, "move a2 to pkg/c.py")
    head = stack.upstream.head()
    said = stack.kept_fix_taken_back(f"up={head}")
    assert (said["name"], said["kind"], said["by"]) == ("fix.patch", "removed", took), said
    stack.cli("rebase", "--to", f"up={head}", expect=1)
    _, out, _ = stack.cli("status", expect=1)
    assert took[:12] in out and "up/fix.patch" in out, out
    # The advised bring-back puts the guard into a2 where it is now, once; a4 keeps its own.
    stack.cli("bring-back", "up/fix.patch")
    assert stack.series("up") == ["fix.patch"]
    stack.cli("overlays")
    moved = (stack.root / "overlays/up/pkg/c.py").read_bytes()
    assert moved.count(GUARD) == 1 and _fn(b"a2", 2, True) in moved, moved
    old = stack.root / "overlays/up/pkg/a.py"
    assert not old.exists() or old.read_bytes().count(GUARD) == 1, old.read_bytes()
    stack.cli("status")


@pytest.mark.parametrize("named", ["an import", "a call"])
@pytest.mark.parametrize("where", ["moved with its guard", "left in its file"])
def test_the_guard_still_in_its_function_beside_a_look_alike_and_a_name_is_quiet(
        tmp_path, named, where):
    stack = _landed(tmp_path, named)
    if where == "moved with its guard":
        rest = [name for name in A if name != b"a2"]
        stack.commit({"pkg/a.py": _module(rest, TWIN, named),
                      "pkg/c.py": b'"""c."""\n\n\n' + _fn(b"a2", 2, True)},
                     "move a2 to pkg/c.py")
    else:
        # An unrelated edit of a0 beside the same call (or a new import of another name).
        now = _module(A, (b"a2", *TWIN), "a call" if named == "a call" else "")
        if named == "an import":
            now = now.replace(b'"""m."""\n', b'"""m."""\nfrom pkg.c import c0\n')
        stack.commit({"pkg/a.py": now.replace(b"    a = 0\n", b"    a = 10\n"),
                      "pkg/c.py": b'"""c."""\n\n\n' + _fn(b"c0", 0)}, "a0: start at 10")
    head = stack.upstream.head()
    stack.kept_fixes_hold(f"up={head}")


def _shared(name: bytes, n: int, guard: bool = False) -> bytes:
    # a2 and a4 alone hold `x = special(x)` under where the guard goes: once a2 left, the
    # look-alike's copy is the file's only one, a line of "its own" there.
    special = b"    x = special(x)\n" if name in (b"a2", b"a4") else b""
    return b"def %s(x):\n" % name + (GUARD if guard else b"") + special + \
        b"    a = %d\n    b = a + x\n    return b\n" % n


def _shared_module(names: list[bytes], guarded: tuple[bytes, ...], head: bytes = b"") -> bytes:
    return b'"""m."""\n' + head + b"\n\n" + b"\n\n".join(
        _shared(name, A.index(name), name in guarded) for name in names)


@pytest.mark.parametrize("guard", [False, True])
def test_a_look_alike_sharing_a_line_with_the_moved_function_alone_is_not_the_fix(
        tmp_path, guard):
    base, fixed = _shared_module(A, TWIN), _shared_module(A, (b"a2", *TWIN))
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": base})
    stack.add_fix("fix", "pkg/a.py", base, fixed)
    stack.commit({"pkg/a.py": fixed}, "a2: check x (#5)", tag="v2")
    stack.dropped_as_landed("up=v2")
    rest = [name for name in A if name != b"a2"]
    took = stack.commit({"pkg/a.py": _shared_module(rest, TWIN, b"from pkg.c import a2\n"),
                         "pkg/c.py": b'"""c."""\n\n\n' + _shared(b"a2", 2, guard)},
                        "move a2 to pkg/c.py")
    head = stack.upstream.head()
    if guard:
        doc = stack.json("status", "--against", f"up={head}")
        assert doc["gone_upstream"] == [] and doc["reverted"] == [], doc
        return
    said = stack.kept_fix_taken_back(f"up={head}")
    assert (said["name"], said["kind"], said["by"]) == ("fix.patch", "removed", took), said


# The shims upstream leaves of a2 in pkg/a.py when it moves a2's code into pkg/c.py: a call
# through the module, or through a name a2 is imported as, in the shim or at the file's top.
SHIMS = {
    "through its module": (b"", b"def a2(x):\n    from pkg import c\n    return c.a2(x)\n"),
    "through a local alias": (b"", b"def a2(x):\n    from pkg.c import a2 as impl\n"
                              b"    return impl(x)\n"),
    "through an alias at the top": (b"from pkg.c import a2 as _a2\n",
                                    b"def a2(x):\n    return _a2(x)\n"),
}


def _shim_landed(tmp_path) -> tuple[OneUpstreamStack, bytes]:
    names = [b"a0", b"a1", b"a2", b"a3"]
    base = b'"""m."""\n\n\n' + b"\n\n".join(_fn(n, A.index(n)) for n in names)
    fixed = base.replace(_fn(b"a2", 2), _fn(b"a2", 2, True))
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": base})
    stack.add_fix("fix", "pkg/a.py", base, fixed)
    stack.commit({"pkg/a.py": fixed}, "a2: check x (#5)", tag="v2")
    stack.dropped_as_landed("up=v2")
    return stack, base


def _with_shim(base: bytes, shim: str, kept: bool = False) -> bytes:
    """pkg/a.py with a2 left as the shim `shim` (SHIMS), holding the guard where `kept`."""
    top, body = SHIMS[shim]
    if kept:
        body = body.replace(b"    return ", GUARD + b"    return ")
    return base.replace(b'"""m."""\n', b'"""m."""\n' + top).replace(_fn(b"a2", 2), body)


@pytest.mark.parametrize("shim", list(SHIMS))
@pytest.mark.parametrize("guard", [False, True])
def test_a_function_moved_into_another_file_behind_a_shim_of_its_name_is_followed(
        tmp_path, guard, shim):
    # a2's code moved into pkg/c.py; pkg/a.py keeps `def a2(x): return c.a2(x)`, or calls it
    # as `impl(x)` after `from pkg.c import a2 as impl`. Without the guard: the shim still
    # defined a2 there, so a2 was not followed and the guard gone from it read as code
    # rewritten in another form, nothing said. With it: quiet.
    stack, base = _shim_landed(tmp_path)
    took = stack.commit({"pkg/a.py": _with_shim(base, shim),
                         "pkg/c.py": b'"""c."""\n\n\n' + _fn(b"a2", 2, guard)},
                        "move a2 to pkg/c.py, a shim left")
    head = stack.upstream.head()
    if guard:
        stack.kept_fixes_hold(f"up={head}")
        return
    said = stack.kept_fix_taken_back(f"up={head}")
    assert (said["name"], said["kind"], said["by"]) == ("fix.patch", "removed", took), said
    stack.cli("rebase", "--to", f"up={head}", expect=1)
    stack.cli("bring-back", "up/fix.patch")
    stack.cli("overlays")
    moved = (stack.root / "overlays/up/pkg/c.py").read_bytes()
    assert moved.count(GUARD) == 1 and _fn(b"a2", 2, True) in moved, moved
    old = stack.root / "overlays/up/pkg/a.py"
    assert not old.exists() or GUARD not in old.read_bytes(), old.read_bytes()
    stack.cli("status")


GUARDED_SHIM = b"def a2(x):\n" + GUARD + b"    from pkg import c\n    return c.a2(x)\n"


def test_a_function_moved_behind_a_shim_that_still_holds_the_guard_is_quiet(tmp_path):
    # a2's code moved into pkg/c.py without the guard; pkg/a.py keeps a shim of its name that
    # checks x first, then calls the moved one: the guard still runs on every call of a2
    # there. It was said taken out ("removed", exit 1), and the bring-back it advised wrote
    # the guard a second time, into the moved function. Now quiet, as the guard moved along.
    names = [b"a0", b"a1", b"a2", b"a3"]
    base = b'"""m."""\n\n\n' + b"\n\n".join(_fn(n, A.index(n)) for n in names)
    fixed = base.replace(_fn(b"a2", 2), _fn(b"a2", 2, True))
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": base})
    stack.add_fix("fix", "pkg/a.py", base, fixed)
    stack.commit({"pkg/a.py": fixed}, "a2: check x (#5)", tag="v2")
    stack.dropped_as_landed("up=v2")
    stack.commit({"pkg/a.py": base.replace(_fn(b"a2", 2), GUARDED_SHIM),
                  "pkg/c.py": b'"""c."""\n\n\n' + _fn(b"a2", 2)},
                 "move a2 to pkg/c.py, a checking shim left")
    head = stack.upstream.head()
    stack.kept_fixes_hold(f"up={head}")
    stack.cli("lint", "--no-forge")


@pytest.mark.parametrize("shim", list(SHIMS))
def test_a_guard_upstream_kept_in_the_shim_is_quiet(tmp_path, shim):
    # a2's code moved into pkg/c.py without the guard, the shim left in pkg/a.py (calling it
    # through its module or an alias) checking x before its call: upstream kept the fix where
    # it was, nothing to say; the aliased shim is followed only where it lacks the guard.
    stack, base = _shim_landed(tmp_path)
    stack.commit({"pkg/a.py": _with_shim(base, shim, kept=True),
                  "pkg/c.py": b'"""c."""\n\n\n' + _fn(b"a2", 2)},
                 "move a2 to pkg/c.py, the check left in the shim")
    head = stack.upstream.head()
    stack.kept_fixes_hold(f"up={head}")


CHECK_AFTER_SHIM = b"def a2(x):\n    from pkg import c\n    r = c.a2(x)\n" + GUARD + \
    b"    return r\n"


def test_a_shim_that_checks_only_after_calling_the_moved_function_is_said(tmp_path):
    # a2's code moved into pkg/c.py without the guard; the shim left in pkg/a.py calls the
    # moved one first and checks x after: the guard's lines are there, but no longer guard
    # the call. Read as the guard kept in the shim, nothing was said (exit 0).
    stack, base = _shim_landed(tmp_path)
    took = stack.commit({"pkg/a.py": base.replace(_fn(b"a2", 2), CHECK_AFTER_SHIM),
                         "pkg/c.py": b'"""c."""\n\n\n' + _fn(b"a2", 2)},
                        "move a2 to pkg/c.py, a shim checking after the call")
    doc = stack.json("status", "--against", f"up={took}", expect=1)
    (said,) = doc["reverted"] + doc["gone_upstream"]
    assert (said["name"], said["kind"], said["by"]) == ("fix.patch", "removed", took), said
    stack.cli("rebase", "--to", f"up={took}", expect=1)
