"""The characters refused in patch names and lock labels, checked without character classes
past U+00FF (each costs `re` about half a millisecond to compile at every command's start):
the same characters refused as by the classes they replace, every code point tried."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from patchforge.errors import InputError
from patchforge.formats.lockfile import lock_from_json
from patchforge.formats.series import parse_series
from patchforge.names import INVISIBLE, check_patch_name

ROOT = Path(__file__).resolve().parent.parent

# The classes as they were written before: the rule each check must keep, character for character.
_INVISIBLE_CLASS = re.compile("[\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]")
_PATCH_NAME_CLASS = re.compile(r"[\s#/\\'\"`$\x00-\x1f\x7f\x85\u2028\u2029"
                               r"\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]")
_LOCK_CONTROL_CLASS = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")

_EVERY = [chr(c) for c in range(0x110000)]


def test_invisible_characters_are_the_classes_characters():
    assert {c for c in _EVERY if _INVISIBLE_CLASS.search(c)} == INVISIBLE


def test_a_patch_name_is_refused_for_the_characters_the_class_refused():
    def refused(check, name: str) -> bool:
        try:
            check(name)
        except ValueError:  # a lone surrogate too (UnicodeEncodeError), as before
            return True
        return False

    def check_with_the_class(value: str) -> None:  # check_patch_name as it was written
        if not value or _PATCH_NAME_CLASS.search(value) or value.startswith((".", "-")) \
                or len(value.encode("utf-8", "surrogateescape")) > 200:
            raise ValueError(value)
        value.encode("utf-8")  # and a name that is not UTF-8 (a byte read with surrogateescape)

    differ = [c for c in _EVERY if refused(check_patch_name, f"fix{c}x.patch")
              != refused(check_with_the_class, f"fix{c}x.patch")]
    assert differ == []


def test_a_series_line_is_refused_for_an_invisible_character():
    for c in sorted(INVISIBLE) + ["\u200a", "\u2070", "\ufefe", "\u00e9"]:
        line = f"fix{c}.patch\n".encode()
        if _INVISIBLE_CLASS.search(c):
            with pytest.raises(InputError, match="not seen"):
                parse_series(line, source="series/up/series").names
        else:
            assert parse_series(line, source="series/up/series").names == [f"fix{c}.patch"]


def _lock(label: str) -> bytes:
    return json.dumps({"version": 1, "upstreams": {"up": {
        "kind": "git", "commit": "a" * 40, "tree": "b" * 40, "label": label,
        "source": {"url": "https://example.com/up.git"}}}}).encode()


def test_a_lock_label_is_refused_for_the_characters_the_class_refused():
    candidates = [chr(c) for c in range(0x300)] + ["\u2027", "\u2028", "\u2029", "\u202a",
                                                   "\u200b", "\ufeff"]
    for c in candidates:
        label = f"v1{c}"
        if _LOCK_CONTROL_CLASS.search(c) or _INVISIBLE_CLASS.search(c):
            with pytest.raises(InputError, match="control character or an invisible one"):
                lock_from_json(_lock(label))
        else:
            assert lock_from_json(_lock(label)).upstreams["up"].label == label


def test_loading_the_name_and_lock_modules_compiles_no_class_past_latin_1():
    # A fresh interpreter: the patterns are compiled when the modules load.
    code = """
import re, re._compiler as compiler
wide = []
original = compiler.compile
def compile(pattern, flags=0):
    text = pattern if isinstance(pattern, str) else ""
    if any(ord(c) > 0xFF for c in text):
        wide.append(text)
    return original(pattern, flags)
compiler.compile = compile
import patchforge.names, patchforge.formats.lockfile, patchforge.formats.series
print(repr(wide))
"""
    out = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True,
                         cwd=ROOT, env={"PYTHONPATH": str(ROOT)}, check=True).stdout
    assert out.strip() == "[]"


@pytest.mark.parametrize("command", [["delete"], ["show"], ["edit"], ["rename", "@", "g1"],
                                     ["move", "@", "--first"], ["bring-back"]],
                         ids=["delete", "show", "edit", "rename", "move", "bring-back"])
def test_a_name_with_an_empty_path_part_is_refused_not_a_crash(tmp_path, command):
    """`up//f1` (a typo) reached a file-name pattern as `/f1` and crashed every command that
    finds a patch (exit 70, NotImplementedError); it is refused as no patch name, exit 2, the
    series untouched."""
    from helpers.project import OneUpstreamStack

    stack = OneUpstreamStack(tmp_path, {"k.py": b"a = 1\n"})
    stack.add_fix("f1", "k.py", b"a = 1\n", b"a = 2\n")
    args = [part if part != "@" else "up//f1" for part in command]
    if "up//f1" not in args:
        args.append("up//f1")
    rc, out, err = stack.cli(*args, expect=None)
    assert rc == 2 and "internal error" not in err and "f1" in err, (rc, out, err)
    assert stack.series("up") == ["f1.patch"]
