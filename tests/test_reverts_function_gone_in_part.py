"""A kept landing that adds entries to a list in a function, the function then deleted by
upstream while it wrote some of those entries again elsewhere (a set of targets in another
file) and left the others out: each entry still as often in the files upstream changed read as
code written again in another form, so the fix was "superseded", nothing said, exit 0, while
the entries left out were in no overlay and not upstream (the AITER landing 2c62a2e881 added
RDNA targets to `get_fwd_configs`; `[Triton] Sync Flash Attention Package` deleted it, kept
gfx1150 and gfx1151 in a set of utils.py and dropped gfx1103, gfx1152, gfx1153). Where some of
a hunk's lines went with the function and others are elsewhere, it is said taken out, naming
the commit and the lines that went; every line elsewhere (the whole list written again as a
set), quiet as before. Real git history, through the CLI."""
from __future__ import annotations

import pytest

from helpers.project import OneUpstreamStack

OLD = [b"gfx1100", b"gfx1101"]
NEW = [b"gfx1103", b"gfx1150", b"gfx1151", b"gfx1152"]


def _configs(entries: list[bytes]) -> bytes:
    return b"def get_configs(arch):\n    if arch in (\n" + \
        b"".join(b'        "%s",\n' % e for e in entries) + \
        b"    ):\n        return 32\n    return 64\n"


def _module(entries: list[bytes] | None) -> bytes:
    return b'"""m."""\n\n\ndef first(x):\n    return x + 1\n\n\n' + \
        (_configs(entries) + b"\n\n" if entries is not None else b"") + \
        b"def last(x):\n    return x * 2\n"


def _utils(entries: list[bytes]) -> bytes:
    return b'"""u."""\n\nRDNA = frozenset(\n    {\n' + \
        b"".join(b'        "%s",\n' % e for e in entries) + b"    }\n)\n"


@pytest.mark.parametrize("kept", ["some", "all"])
def test_a_function_deleted_while_some_of_the_fixs_lines_went_elsewhere(tmp_path, kept):
    base, fixed = _module(OLD), _module(OLD + NEW)
    stack = OneUpstreamStack(tmp_path, {"pkg/fwd.py": base, "pkg/utils.py": b'"""u."""\n'})
    stack.add_fix("fix", "pkg/fwd.py", base, fixed)
    stack.commit({"pkg/fwd.py": fixed}, "Add gfx11X targets (#5)", tag="v2")
    stack.dropped_as_landed("up=v2")
    entries = OLD + (NEW if kept == "all" else [b"gfx1150", b"gfx1151"])
    took = stack.commit({"pkg/fwd.py": _module(None), "pkg/utils.py": _utils(entries)},
                        "Sync the package")
    head = stack.upstream.head()
    if kept == "all":
        doc = stack.json("status", "--against", f"up={head}")
        assert doc["gone_upstream"] == [] and doc["reverted"] == [], doc
        stack.cli("rebase", "--to", f"up={head}")
        stack.cli("status")
        return
    doc = stack.json("status", "--against", f"up={head}", expect=1)
    (said,) = doc["reverted"] + doc["gone_upstream"]
    assert (said["name"], said["kind"], said["by"]) == ("fix.patch", "removed", took), said
    assert "took get_configs out of pkg/fwd.py" in said["detail"], said
    assert '`"gfx1103",`' in said["detail"] and '`"gfx1152",`' in said["detail"], said
    assert '`"gfx1150",`' in said["detail"], said  # (named as the part found elsewhere)
    stack.cli("rebase", "--to", f"up={head}", expect=1)
    _, out, _ = stack.cli("status", expect=1)
    assert took[:12] in out and "up/fix.patch" in out, out
