"""A kept guard testing one value (`if act == 'gelu':` + `return 0`) that upstream wrote again
with a name for the value while rewriting the lines under it: a constant the module binds once
(`GELU = "gelu"` + `if act == GELU:`, `SKIP = ("gelu",)` + `if act in SKIP:`) or the function
binds once before the check. The function still leaves wherever the guard did: quiet, until a
commit drops upstream's check, which is then named. Read as another check of its name, the
guard upstream kept was said taken out (exit 1, advising `bring-back`, which would put it back
beside upstream's own). A name whose value is another, or is not known (bound twice, imported,
a class's, a parameter), keeps nothing: the guard dropped beside it is said. Real git history, through
the CLI."""
from __future__ import annotations

import pytest

from test_reverts_guard_rewritten import REWRITTEN, _fn, _held_until_dropped, _landed, _said_by

GELU = b"    if act == 'gelu':\n        return 0\n"


def _module(a2: bytes, top: bytes = b"") -> bytes:
    """pkg/a.py: `top` (module constants, imports) above a0, `a2` and a4."""
    return (b'"""m."""\n\n' + top + b"\n\n" + _fn(b"a0") + b"\n\n" + a2 + b"\n\n" +
            _fn(b"a4"))


# Upstream's check of act (above a2's rewritten work) and what the module has above a0.
NAMED = {
    "a module constant": (b"    if act == GELU:\n        return 0\n", b'GELU = "gelu"\n'),
    "an annotated module constant": (b"    if act == GELU:\n        return 0\n",
                                     b'GELU: str = "gelu"\n'),
    "a constant of the function": (b"    GELU = 'gelu'\n    if act == GELU:\n        return 0\n",
                                   b""),
    "a module tuple": (b"    if act in SKIP:\n        return 0\n", b'SKIP = ("gelu",)\n'),
    "a module tuple over lines": (b"    if act in SKIP:\n        return 0\n",
                                  b'SKIP = (\n    "silu",\n    "gelu",\n)\n'),
}
NOT_HOLDING = {
    "a constant of another value": (b"    if act == GELU:\n        return 0\n",
                                    b'GELU = "silu"\n'),
    "a constant bound twice": (b"    if act == GELU:\n        return 0\n",
                               b'GELU = "gelu"\nif FAST:\n    GELU = "silu"\n'),
    "an imported name": (b"    if act == GELU:\n        return 0\n",
                         b"from pkg.acts import GELU\n"),
    "a module tuple not holding it": (b"    if act in SKIP:\n        return 0\n",
                                      b'SKIP = ("silu", "swiglu")\n'),
    "a constant of a class": (b"    if act == GELU:\n        return 0\n",
                              b'class Acts:\n    GELU = "gelu"\n'),
    "a parameter": (b"    if act == GELU:\n        return 0\n", b'GELU = "gelu"\n',
                    b"x, act, GELU=GELU"),
}


@pytest.mark.parametrize("form", list(NAMED))
def test_a_guard_upstream_wrote_with_a_constant_is_quiet_until_a_commit_drops_it(tmp_path,
                                                                                  form):
    check, top = NAMED[form]
    said = _held_until_dropped(tmp_path, _module(_fn(b"a2", args=b"x, act")),
                               _module(_fn(b"a2", GELU, args=b"x, act")),
                               _module(_fn(b"a2", check, REWRITTEN, args=b"x, act"), top),
                               _module(_fn(b"a2", head=REWRITTEN, args=b"x, act"), top),
                               ("rework a2", "a2: every act does the work"))
    assert "`if act == 'gelu':`" in said["detail"], said


@pytest.mark.parametrize("other", list(NOT_HOLDING))
def test_a_guard_dropped_beside_a_name_not_holding_its_value_is_said(tmp_path, other):
    check, top, args = (NOT_HOLDING[other] + (b"x, act",))[:3]
    stack = _landed(tmp_path, _module(_fn(b"a2", args=b"x, act")),
                    _module(_fn(b"a2", GELU, args=b"x, act")))
    took = stack.commit({"pkg/a.py": _module(_fn(b"a2", check, REWRITTEN, args=args), top)},
                        "rework a2")
    said = _said_by(stack, took)
    assert "`if act == 'gelu':`" in said["detail"], said


def test_a_guard_naming_a_constant_kept_as_it_is_quiet_until_a_commit_drops_it(tmp_path):
    top = b'GELU = "gelu"\n'
    guard = b"    if act == GELU:\n        return 0\n"
    said = _held_until_dropped(tmp_path, _module(_fn(b"a2", args=b"x, act"), top),
                               _module(_fn(b"a2", guard, args=b"x, act"), top),
                               _module(_fn(b"a2", guard, REWRITTEN, args=b"x, act"), top),
                               _module(_fn(b"a2", head=REWRITTEN, args=b"x, act"), top),
                               ("rework a2", "a2: every act does the work"))
    assert "`if act == GELU:`" in said["detail"], said
