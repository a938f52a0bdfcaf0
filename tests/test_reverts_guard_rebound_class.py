"""A kept `raise` guard (`if x is None:` + `raise ValueError('x')`) upstream dropped beside a copy
inside a `try:` whose `except` names another builtin class (`except KeyError:`), in a module
that binds the raised class's name to its own (`from pkg.errors import ValueError`, or a star
import that may): a builtin exception's name was read as the builtin wherever it appeared, the
copy as leaving (no `except` catching it), quiet (exit 0), while the module's ValueError may be
a KeyError and the work run on None. The class reads as not known there, caught: "removed",
exit 1 (tests/test_known_wrong.py holds the import's shape). The same copy in a module binding
other names (`from pkg.errors import ShapeError`, `ValueError as VE`) stays quiet until a
commit drops it. Real git history, through the CLI."""
from __future__ import annotations

import pytest

from test_reverts_guard_rewritten import HEAD, _fn, _held_until_dropped, _landed, _module

RAISE = b"    if x is None:\n        raise ValueError('x')\n"
COPY = b"    try:\n        if x is None:\n            raise ValueError('x')\n" \
    b"    except KeyError:\n        x = DEFAULT\n"
REWORK = HEAD.replace(b"2", b"3")


def _said(stack) -> list:
    doc = stack.json("status", "--against", f"up={stack.upstream.head()}", expect=None)
    return doc["reverted"] + doc["gone_upstream"]


@pytest.mark.parametrize("binding", [b"from pkg.errors import *\n",
                                     b"from pkg.errors import (\n    KeyError,\n)\n",
                                     b"ValueError = errors.ShapeError\n"],
                         ids=["a star import", "the handler's class imported", "assigned"])
def test_a_raise_copy_whose_classes_the_module_may_rebind_is_said(tmp_path, binding):
    stack = _landed(tmp_path, _module(_fn(b"a2")), _module(_fn(b"a2", RAISE)))
    stack.commit({"pkg/a.py": binding + _module(_fn(b"a2", COPY, REWORK))}, "rework a2")
    assert _said(stack), "the module's classes may be one: the work runs on None"


@pytest.mark.parametrize("binding", [b"from pkg.errors import ShapeError\n",
                                     b"from pkg.errors import ValueError as ShapeValueError\n"],
                         ids=["another class", "the class under another name"])
def test_a_raise_copy_beside_other_imports_is_quiet_until_a_commit_drops_it(tmp_path, binding):
    _held_until_dropped(tmp_path, _module(_fn(b"a2")), _module(_fn(b"a2", RAISE)),
                        binding + _module(_fn(b"a2", COPY, REWORK)),
                        binding + _module(_fn(b"a2", head=REWORK)),
                        ("rework a2", "a2: x is never None"))
