"""A kept guard at a function's top (`if x is None:` + `return 0`; `if (!x) return 0;` in C++)
that upstream dropped in a commit that also rewrote the lines under it (the hunk's context), the
function keeping its name: the fix's diff applies neither way, and it was read as the guard
written again in another form, superseded, nothing said (exit 0), the guard in no overlay and
not upstream. It is said taken out by that commit ("removed", exit 1) where no line of the
function checks the names the guard checks any more. Upstream's own forms of the guard stay
quiet: one line, merged into another condition, an assert, a raise, the check inverted around
the body, the check moved into the function's caller in the same commit; so does a fix that
is no guard, rewritten (`torch.clamp(y, min=0)` -> `y.clamp(min=0)`). Real git history,
through the CLI."""
from __future__ import annotations

import pytest

from helpers.project import OneUpstreamStack

GUARD = b"    if x is None:\n        return 0\n"
HEAD = b"    a = 2\n    b = a + x\n    c = b * 2\n"
REWRITTEN = b"    a = 3\n    b = a - x\n    c = b * 4\n"
TAIL = b"".join(b"    v%d = c + %d\n" % (k, k) for k in range(8)) + b"    return v7\n"


def _fn(name: bytes, top: bytes = b"", head: bytes = HEAD, args: bytes = b"x") -> bytes:
    return b"def %s(%s):\n" % (name, args) + top + head + TAIL


def _module(a2: bytes, a4: bytes | None = None) -> bytes:
    return b'"""m."""\n\n\n' + _fn(b"a0") + b"\n\n" + a2 + b"\n\n" + (a4 or _fn(b"a4"))


def _landed(tmp_path, base: bytes, fixed: bytes, path: str = "pkg/a.py") -> OneUpstreamStack:
    stack = OneUpstreamStack(tmp_path, {path: base, "pkg/b.py": b"b = 1\n"})
    stack.add_fix("fix", path, base, fixed)
    stack.commit({path: fixed}, "a2: check x (#5)", tag="v2")
    stack.dropped_as_landed("up=v2")
    return stack


def _said_by(stack: OneUpstreamStack, took: str) -> dict:
    head = stack.upstream.head()
    said = stack.kept_fix_taken_back(f"up={head}")
    assert (said["name"], said["kind"], said["by"]) == ("fix.patch", "removed", took), said
    stack.cli("rebase", "--to", f"up={head}", expect=1)
    _, out, _ = stack.cli("status", expect=1)
    assert took[:12] in out and "up/fix.patch" in out, out
    return said


def _held_until_dropped(tmp_path, base: bytes, fixed: bytes, kept: bytes, dropped: bytes,
                        messages: tuple[str, str], path: str = "pkg/a.py") -> dict:
    """The shape of the tests of a guard upstream keeps in another form: the fix (`base` to
    `fixed` at `path`) landed and kept under upstreamed/, then a commit (its message the first
    of `messages`) rewrites the function keeping the guard in its own form (`kept`): the kept
    fix holds, quiet; then one (the second) drops it (`dropped`): said taken out by that
    commit, which `rebase` and `status` name (what is said returned)."""
    stack = _landed(tmp_path, base, fixed, path)
    stack.commit({path: kept}, messages[0])
    stack.kept_fixes_hold(f"up={stack.upstream.head()}")
    took = stack.commit({path: dropped}, messages[1])
    return _said_by(stack, took)


@pytest.mark.parametrize("args", [b"x", b"x, scale=1.0"], ids=["same", "a new parameter"])
def test_a_guard_dropped_with_the_lines_under_it_rewritten_is_said(tmp_path, args):
    stack = _landed(tmp_path, _module(_fn(b"a2")), _module(_fn(b"a2", GUARD)))
    took = stack.commit({"pkg/a.py": _module(_fn(b"a2", head=REWRITTEN, args=args))},
                        "rework a2")
    said = _said_by(stack, took)
    assert "`if x is None:`" in said["detail"] and "a2" in said["detail"], said


def _c_fn(name: bytes, top: bytes = b"", head: bytes = b"  int a = 2;\n  int b = a + x[0];\n"
          b"  int c = b * 2;\n") -> bytes:
    return b"int %s(const int *x) {\n" % name + top + head + b"".join(
        b"  int v%d = c + %d;\n" % (k, k) for k in range(8)) + b"  return v7;\n}\n"


def _c_module(k2: bytes) -> bytes:
    return b"#include <x.h>\n\n" + _c_fn(b"k0") + b"\n" + k2 + b"\n" + _c_fn(b"k4")


@pytest.mark.parametrize("guard", [b"  if (!x) return 0;\n",
                                   b"  if (x == nullptr) {\n    return 0;\n  }\n"],
                         ids=["one line", "braced"])
def test_a_cpp_guard_dropped_with_the_lines_under_it_rewritten_is_said(tmp_path, guard):
    stack = _landed(tmp_path, _c_module(_c_fn(b"k2")), _c_module(_c_fn(b"k2", guard)),
                    "csrc/k.cu")
    rewritten = b"  int a = 3;\n  int b = a - x[0];\n  int c = b * 4;\n"
    took = stack.commit({"csrc/k.cu": _c_module(_c_fn(b"k2", head=rewritten))}, "rework k2")
    said = _said_by(stack, took)
    assert "k2" in said["detail"], said


# Upstream's own forms of the guard, written in the commit that rewrote the lines under it.
THE_GUARD_KEPT = {
    "one line": b"    if x is None: return 0\n",
    "merged into another condition": b"    if x is None or x.numel() == 0:\n        return 0\n",
    "an assert": b"    assert x is not None, 'x is needed'\n",
    "a raise": b"    if x is None:\n        raise ValueError('x is needed')\n",
}


@pytest.mark.parametrize("form", list(THE_GUARD_KEPT))
def test_the_guard_written_again_in_another_form_is_quiet_until_a_commit_drops_it(tmp_path,
                                                                                  form):
    _held_until_dropped(tmp_path, _module(_fn(b"a2")), _module(_fn(b"a2", GUARD)),
                        _module(_fn(b"a2", THE_GUARD_KEPT[form], REWRITTEN)),
                        _module(_fn(b"a2", head=REWRITTEN)), ("rework a2", "a2: x is never None"))


def test_the_check_inverted_around_the_rewritten_body_is_quiet_until_a_commit_drops_it(
        tmp_path):
    body = b"".join(b"    " + line for line in (REWRITTEN + TAIL).splitlines(keepends=True))
    inverted = b"def a2(x):\n    if x is not None:\n" + body + b"    return 0\n"
    _held_until_dropped(tmp_path, _module(_fn(b"a2")), _module(_fn(b"a2", GUARD)),
                        _module(inverted), _module(_fn(b"a2", head=REWRITTEN)),
                        ("rework a2", "a2: x is never None"))


def test_the_guard_kept_under_a_renamed_parameter_is_quiet_until_a_commit_drops_it(tmp_path):
    renamed = REWRITTEN.replace(b"x", b"inp")
    said = _held_until_dropped(
        tmp_path, _module(_fn(b"a2")), _module(_fn(b"a2", GUARD)),
        _module(_fn(b"a2", GUARD.replace(b"x", b"inp"), renamed, args=b"inp")),
        _module(_fn(b"a2", head=renamed, args=b"inp")), ("rework a2", "a2: inp is never None"))
    assert "`x`" in said["detail"], said


def test_the_guard_kept_on_an_object_of_another_name_is_quiet_until_a_commit_drops_it(
        tmp_path):
    guard = b"    if opts.skip:\n        return 0\n"
    parsed = b"    parsed = parse(opts)\n"
    _held_until_dropped(
        tmp_path, _module(_fn(b"a2", args=b"x, opts")),
        _module(_fn(b"a2", guard, args=b"x, opts")),
        _module(_fn(b"a2", parsed + guard.replace(b"opts", b"parsed"), REWRITTEN,
                    args=b"x, opts")),
        _module(_fn(b"a2", parsed, REWRITTEN, args=b"x, opts")),
        ("rework a2", "a2: never skipped"))


CALLER = b"def a4(x):\n    return a2(x) + 1\n"
CALLER_CHECKS = b"def a4(x):\n    if x is None:\n        return 0\n    return a2(x) + 1\n"


def test_the_guard_moved_into_the_caller_is_quiet_into_another_function_said(tmp_path):
    stack = _landed(tmp_path, _module(_fn(b"a2"), CALLER), _module(_fn(b"a2", GUARD), CALLER))
    stack.commit({"pkg/a.py": _module(_fn(b"a2", head=REWRITTEN), CALLER_CHECKS)},
                 "check x in a4, the caller of a2")
    stack.kept_fixes_hold(f"up={stack.upstream.head()}")

    # The check put into a function that does not call a2 is other code.
    stack = _landed(tmp_path / "other", _module(_fn(b"a2")), _module(_fn(b"a2", GUARD)))
    elsewhere = _fn(b"a4", THE_GUARD_KEPT["an assert"])
    took = stack.commit({"pkg/a.py": _module(_fn(b"a2", head=REWRITTEN), elsewhere)},
                        "rework a2; a4 checks x")
    _said_by(stack, took)


SCALE = b'"""s."""\n\n\ndef scale(y, s):\n    y = y * s\n    z = y + 1\n    w = z * 2\n' \
    b'    return w\n'


# A branch of other work that ends the function early (a profiling mode) is no guard.
PROFILE = b"    if args.profile:\n" + b"".join(
    b"        p%d = c + %d\n" % (k, k) for k in range(5)) + b"        return p4\n"


def test_a_fix_that_is_no_guard_rewritten_with_its_neighbours_stays_quiet_beside_one(tmp_path):
    """A fix that is no guard: a line changed (`torch.clamp(y, min=0)` written `y.clamp(min=0)`
    by upstream), or a long branch ending the function early; each dropped or rewritten with
    the lines around it in the commit that drops a guard: that guard alone is said."""
    base = _module(_fn(b"a2"))
    clamped = SCALE.replace(b"    y = y * s\n", b"    y = torch.clamp(y * s, min=0)\n")
    bench = _fn(b"bench", args=b"x, args")
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": base, "pkg/s.py": SCALE,
                                        "pkg/p.py": bench})
    stack.add_fix("clamp", "pkg/s.py", SCALE, clamped)
    stack.add_fix("fix", "pkg/a.py", base, _module(_fn(b"a2", GUARD)))
    stack.add_fix("profile", "pkg/p.py", bench, _fn(b"bench", PROFILE, args=b"x, args"))
    stack.commit({"pkg/a.py": _module(_fn(b"a2", GUARD)), "pkg/s.py": clamped,
                  "pkg/p.py": _fn(b"bench", PROFILE, args=b"x, args")},
                 "scale: clamp; a2: check x; bench: profile (#5)", tag="v2")
    stack.cli("rebase", "--to", "v2")
    assert stack.series("up") == []
    rewritten = b'"""s."""\n\n\ndef scale(y, s):\n    y = (y * s).clamp(min=0)\n' \
        b'    z = y - 1\n    w = z * 4\n    return w\n'
    took = stack.commit({"pkg/a.py": _module(_fn(b"a2", head=REWRITTEN)), "pkg/s.py": rewritten,
                         "pkg/p.py": _fn(b"bench", head=REWRITTEN, args=b"x, args")},
                        "rework scale, a2 and bench")
    doc = stack.json("status", "--against", f"up={took}", expect=1)
    said = [(s["name"], s["kind"], s["by"]) for s in doc["reverted"] + doc["gone_upstream"]]
    assert said == [("fix.patch", "removed", took)], doc


def test_bring_back_puts_the_dropped_guard_back_into_the_rewritten_function(tmp_path):
    stack = _landed(tmp_path, _module(_fn(b"a2")), _module(_fn(b"a2", GUARD)))
    stack.commit({"pkg/a.py": _module(_fn(b"a2", head=REWRITTEN))}, "rework a2", tag="v3")
    stack.cli("rebase", "--to", "v3", expect=1)
    # A stop on the rewritten lines below the guard, the guard shown against them; made
    # again by hand at a2's top, the fix goes back with it alone.
    _, _, err = stack.cli("bring-back", "up/fix.patch", expect=3)
    assert "conflict in pkg/a.py" in err, err
    work = stack.root / ".patchforge/work/up/pkg/a.py"
    assert b"=======\n" + GUARD + HEAD + b">>>>>>>" in work.read_bytes(), work.read_text()
    work.write_bytes(_module(_fn(b"a2", GUARD, REWRITTEN)))
    stack.cli("bring-back", "--continue")
    assert b"\n+    if x is None:\n+        return 0\n" in stack.patch("up", "fix")
    assert stack.series("up") == ["fix.patch"]
    stack.cli("overlays")
    assert (stack.root / "overlays/up/pkg/a.py").read_bytes() == \
        _module(_fn(b"a2", GUARD, REWRITTEN))
    stack.kept_fixes_hold("up=v3")
