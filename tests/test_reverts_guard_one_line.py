"""A kept guard (`if x is None:` + `return 0` at a function's top) that upstream later wrote
again as one line in its place (`if x is None or x.numel() == 0: return 0`), its function
renamed in place or not: upstream has the check. The one line in the two's place read as a
neighbour line edited beside the fix's old code: said taken out ("removed", exit 1), its advice
to delete a fix upstream has in its own form. Now quiet; that line replaced later by a check of
other work (`if x.numel() == 0: return 0`, no word of `x is None`) is said taken out by that
commit. Real git history, through the CLI."""
from __future__ import annotations

import pytest

from test_reverts_function_gone import A, _fn, _landed, _module

ONE_LINE = b"    if x is None or x.numel() == 0: return 0\n"
OTHER_WORK = b"    if x.numel() == 0: return 0\n"
# The same check with its conditions in another order, or in parentheses: it was said
# "removed" (exit 1), its advice to delete a fix upstream has.
ONE_LINE_FORMS = {
    "or": ONE_LINE,
    "reordered": b"    if x.numel() == 0 or x is None: return 0\n",
    "parenthesised": b"    if (x is None) or x.numel() == 0: return 0\n",
    "in parentheses whole": b"    if (x is None or x.numel() == 0): return 0\n",
}


@pytest.mark.parametrize("form", list(ONE_LINE_FORMS))
@pytest.mark.parametrize("renamed", [False, True], ids=["in place", "renamed in place"])
def test_a_guard_written_again_as_one_line_is_quiet_until_other_work_replaces_it(tmp_path,
                                                                                 renamed, form):
    stack, _ = _landed(tmp_path, ())
    name = b"_a2" if renamed else b"a2"

    def with_check(check: bytes) -> bytes:
        fn = _fn(b"a2", 2).replace(b"def a2(x):\n", b"def %s(x):\n" % name + check)
        return _module(A).replace(_fn(b"a2", 2), fn)

    again = stack.commit({"pkg/a.py": with_check(ONE_LINE_FORMS[form])}, "a2: one check")
    doc = stack.json("status", "--against", f"up={again}")
    assert doc["gone_upstream"] == [] and doc["reverted"] == [], doc
    stack.cli("rebase", "--to", f"up={again}")
    stack.cli("status")
    stack.cli("lint", "--no-forge")
    took = stack.commit({"pkg/a.py": with_check(OTHER_WORK)}, "a2: x is never None")
    doc = stack.json("status", "--against", f"up={took}", expect=1)
    (said,) = doc["reverted"] + doc["gone_upstream"]
    assert (said["name"], said["kind"], said["by"]) == ("fix.patch", "removed", took), said


# Lines in the guard's place holding every word of `if x is None:` + `return 0` but not the
# check: the fix is taken out all the same. Read as the two joined, each was quiet (exit 0).
NOT_THE_GUARD = {
    "reversed check": b"    if x is not None: return 0\n",
    "comment": b"    # if x is None the caller must return 0 itself\n",
    "log call": b"    log.debug('if x is None we used to return 0')\n",
    # A condition put in with `and` narrows the check: x None returns 0 no more unless
    # `strict` (it was quiet, exit 0).
    "narrowed by and": b"    if x is None and strict: return 0\n",
    "narrowed, reordered": b"    if strict and x is None: return 0\n",
}


@pytest.mark.parametrize("line", list(NOT_THE_GUARD))
def test_a_line_naming_the_guards_words_without_its_check_is_said_taken_out(tmp_path, line):
    stack, _ = _landed(tmp_path, ())
    fn = _fn(b"a2", 2).replace(b"def a2(x):\n", b"def a2(x):\n" + NOT_THE_GUARD[line])
    took = stack.commit({"pkg/a.py": _module(A).replace(_fn(b"a2", 2), fn)}, "a2: no guard")
    doc = stack.json("status", "--against", f"up={took}", expect=1)
    (said,) = doc["reverted"] + doc["gone_upstream"]
    assert (said["name"], said["kind"], said["by"]) == ("fix.patch", "removed", took), said
    rc, out, err = stack.cli("rebase", "--to", f"up={took}", expect=None)
    assert rc != 0, out + err
