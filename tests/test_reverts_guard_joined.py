"""A kept guard (`if x is None:` + `return 0`) that upstream wrote again over a backslash
continuation (`if x is None \\` + `or x.numel() == 0:`) or with its body joined by `;` on the
if's line (`if x is None: log(0); return 0`) while rewriting the lines under it: each read as
the one statement it is, the function still leaves where the guard did: quiet, until a commit
drops it (then said). Read a line at a time, the guard upstream kept was said taken out
(exit 1, advising `bring-back`). A continuation narrowing the guard by `and`, or a joined
body without an exit, keeps nothing: said. Real git history, through the CLI."""
from __future__ import annotations

import pytest

from test_reverts_guard_rewritten import (GUARD, REWRITTEN, _fn, _held_until_dropped, _landed,
                                          _module, _said_by)

JOINED_KEPT = {
    "continued by a backslash": b"    if x is None \\\n            or x.numel() == 0:\n"
                                b"        return 0\n",
    "continued after or": b"    if FAST or \\\n            x is None:\n        return 0\n",
    "a body joined by ;": b"    if x is None: log(0); return 0\n",
}
JOINED_OTHER = {
    "continued into an and": b"    if x is None \\\n            and STRICT:\n        return 0\n",
    "a joined body without an exit": b"    if x is None: log(0); x = DEFAULT\n",
}


@pytest.mark.parametrize("form", list(JOINED_KEPT))
def test_a_guard_written_over_a_continuation_or_joined_is_quiet_until_a_commit_drops_it(
        tmp_path, form):
    said = _held_until_dropped(tmp_path, _module(_fn(b"a2")), _module(_fn(b"a2", GUARD)),
                               _module(_fn(b"a2", JOINED_KEPT[form], REWRITTEN)),
                               _module(_fn(b"a2", head=REWRITTEN)),
                               ("rework a2", "a2: x is never None"))
    assert "`if x is None:`" in said["detail"], said


@pytest.mark.parametrize("other", list(JOINED_OTHER))
def test_a_guard_dropped_beside_a_continuation_or_joined_body_not_holding_it_is_said(
        tmp_path, other):
    stack = _landed(tmp_path, _module(_fn(b"a2")), _module(_fn(b"a2", GUARD)))
    took = stack.commit({"pkg/a.py": _module(_fn(b"a2", JOINED_OTHER[other], REWRITTEN))},
                        "rework a2")
    said = _said_by(stack, took)
    assert "`if x is None:`" in said["detail"], said
