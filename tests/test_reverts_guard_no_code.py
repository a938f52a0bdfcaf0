"""A kept guard (`if (!x) return 0;`; `if x is None:` + `return 0`) whose copy upstream left
only as text that is no code: inside a C block comment over lines (`/*` + the guard + `*/`),
under `#if 0`, inside a Python string over lines (a docstring, `src = \"\"\"` ...), the guard
itself so wrapped in place or dropped beside such a copy. The lines inside were read as code:
the copy kept the guard, quiet (exit 0), the guard in no overlay and not upstream. They are
no code now, and the guard is said taken out ("removed", exit 1). A copy past such a text (the
comment or the string closed above it, or a comment closed on the copy's line before it)
keeps it: quiet until a commit drops it. Real git history, through the CLI."""
from __future__ import annotations

import pytest

from test_reverts_guard_forms import _c_fn, _c_module
from test_reverts_guard_rewritten import HEAD, _fn, _held_until_dropped, _landed, _module, _said_by

C_GUARD = b"  if (!x) return 0;\n"
C_HEAD = b"  int a = 3;\n  int b = a - x[0];\n"
GUARD = b"    if x is None:\n        return 0\n"
REWORKED = HEAD.replace(b"2", b"3")
# The guard's copy as text that is no code, upstream's head rewritten below it.
NO_CODE = {
    "C: in a block comment over lines": b"  /*\n" + C_GUARD + b"  */\n",
    "C: in a block comment opened on a line of text": b"  /* the old check:\n" + C_GUARD +
                                                      b"  */\n",
    "in a docstring": b'    """Reworked.\n\n' + GUARD + b'    """\n',
    "in a string assigned": b'    src = """\n' + GUARD + b'    """\n',
    "in a string opened with single quotes": b"    src = f'''\n" + GUARD + b"    '''\n",
}
# The guard wrapped in place, nothing else changed.
WRAPPED = {
    "C: in a block comment": (b"  /*\n", b"  */\n"),
    "C: under an if 0": (b"#if 0\n", b"#endif\n"),
    "C: under an ifdef": (b"#ifdef CHECKS\n", b"#endif\n"),
    "in a string": (b'    """\n', b'    """\n'),
}
# A copy past such a text: code.
PAST_NO_CODE = {
    "C: past a block comment over lines": b"  /*\n  old:\n  if (!y) return 0;\n  */\n" + C_GUARD,
    "C: past a block comment closed on its line": b"  /* checked first */ if (!x) return 0;\n",
    "past a docstring": b'    """Reworked.\n\n    if y is None:\n        return 0\n    """\n' +
                        GUARD,
}


def _stack(tmp_path, shape: str):
    if shape.startswith("C: "):
        return _landed(tmp_path, _c_module(_c_fn()), _c_module(_c_fn(C_GUARD)), "csrc/k.cu")
    return _landed(tmp_path, _module(_fn(b"a2")), _module(_fn(b"a2", GUARD)))


@pytest.mark.parametrize("shape", list(NO_CODE))
def test_a_guard_dropped_beside_its_copy_in_text_that_is_no_code_is_said(tmp_path, shape):
    stack = _stack(tmp_path, shape)
    if shape.startswith("C: "):
        took = stack.commit({"csrc/k.cu": _c_module(_c_fn(head=NO_CODE[shape] + C_HEAD))},
                            "rework k2")
    else:
        took = stack.commit({"pkg/a.py": _module(_fn(b"a2", NO_CODE[shape], REWORKED))},
                            "rework a2")
    _said_by(stack, took)


@pytest.mark.parametrize("shape", list(WRAPPED))
def test_a_guard_wrapped_in_place_as_text_that_is_no_code_is_said(tmp_path, shape):
    stack = _stack(tmp_path, shape)
    opened, closed = WRAPPED[shape]
    if shape.startswith("C: "):
        took = stack.commit({"csrc/k.cu": _c_module(_c_fn(opened + C_GUARD + closed))},
                            "disable the null check")
    else:
        took = stack.commit({"pkg/a.py": _module(_fn(b"a2", opened + GUARD + closed))},
                            "disable the check")
    _said_by(stack, took)


@pytest.mark.parametrize("shape", list(PAST_NO_CODE))
def test_a_guard_kept_by_its_copy_past_text_that_is_no_code_is_quiet_until_dropped(tmp_path,
                                                                                   shape):
    kept = PAST_NO_CODE[shape]
    if shape.startswith("C: "):
        dropped = kept.replace(b"if (!x) return 0;", b"log(0);")
        _held_until_dropped(tmp_path, _c_module(_c_fn()), _c_module(_c_fn(C_GUARD)),
                            _c_module(_c_fn(head=kept + C_HEAD)),
                            _c_module(_c_fn(head=dropped + C_HEAD)),
                            ("rework k2", "k2: never null"), "csrc/k.cu")
        return
    _held_until_dropped(tmp_path, _module(_fn(b"a2")), _module(_fn(b"a2", GUARD)),
                        _module(_fn(b"a2", kept, REWORKED)),
                        _module(_fn(b"a2", kept.replace(GUARD, b""), REWORKED)),
                        ("rework a2", "a2: x is never None"))
