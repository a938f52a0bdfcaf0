"""A kept landing whose import line upstream's formatter later wrote in another form of the same
binding: `import pkg.utils.arch as arch` made `from pkg.utils import arch` (AITER's ruff pass
over a landed fix). The hunk's neighbours met again without the fix's line, so the fix was
said "taken out upstream (needs attention)", taken back in part at the import's hunk, and the
bring-back it advised put the import in a second time. The same name bound to the same module
in any form (`import a.b.c as c`, `from a.b import c`, `from a.b import (c, d)`, a wrapped list
sorted elsewhere) is the fix's import: nothing said. An import taken out, one binding the name
to another module (`from pkg.other import arch`), or `import pkg.utils.arch` (which binds
`pkg`) is still said, and so is a revert of the landing: one that puts back an import the fix
repeated or moved (the binding no more often than before the fix), and one that keeps the
fix's import (as written or as upstream's formatter rewrote it), then an edit of the old code.
Real git history, through the CLI."""
from __future__ import annotations

import pytest

from helpers.project import OneUpstreamStack

AS_ALIAS = b"import pkg.utils.arch as arch\n"
FROM = b"from pkg.utils import arch\n"
HEAD = b'"""Kernels."""\nimport torch\n\nfrom pkg.kernels import (\n    _next_pow2,\n' \
    b"    _gather,\n)\n"
BODY = b"\n\ndef gather(x):\n" + b"".join(b"    step%d = x + %d\n" % (i, i) for i in range(12)) + \
    b"    stages = 3\n    return _gather(step11, num_stages=stages)\n"
GUARD = b"    if arch.get_arch() == 'gfx942':\n        stages = 1\n"


def _file(imports: bytes = b"", guard: bool = False, top: bytes = b"") -> bytes:
    body = BODY.replace(b"    stages = 3\n", b"    stages = 3\n" + GUARD) if guard else BODY
    return HEAD.replace(b"import torch\n", b"import torch\n" + top) + imports + body


def _landed(tmp_path, fix_form: bytes) -> OneUpstreamStack:
    """The fix (an import, a guard using it) lands at v2 as written; the rebase drops it and
    keeps it under upstreamed/."""
    stack = OneUpstreamStack(tmp_path, {"pkg/k.py": _file()})
    stack.add_fix("kfix", "pkg/k.py", _file(), _file(fix_form, guard=True))
    stack.commit({"pkg/k.py": _file(fix_form, guard=True)}, "k: fewer stages on gfx942 (#7)",
                 tag="v2")
    stack.dropped_as_landed("up=v2")
    assert (stack.root / "series/up/upstreamed/kfix.patch").is_file()
    return stack


@pytest.mark.parametrize("fix_form, imports, top", [
    (AS_ALIAS, FROM, b""),
    (FROM, AS_ALIAS, b""),
    (AS_ALIAS, b"from pkg.utils import (arch, device)\n", b""),
    (AS_ALIAS, b"", b"from pkg.utils import (\n    arch,\n    device,\n)\n"),
    (FROM, b"", b"from pkg.utils import arch, device  # sorted\n"),
], ids=["from", "import-as", "parenthesized", "wrapped-list-elsewhere", "one-line-list"])
def test_an_import_upstream_wrote_in_another_form_of_the_same_binding_is_quiet(
        tmp_path, fix_form, imports, top):
    stack = _landed(tmp_path, fix_form)
    stack.commit({"pkg/k.py": _file(imports, guard=True, top=top)},
                 "[CI] pin ruff and make its configuration explicit (#9)", tag="v3")
    status = stack.json("status", "--against", "v3")
    assert status["gone_upstream"] == [] and status["reverted"] == [], status
    stack.cli("rebase", "--to", "v3")
    stack.cli("status")
    stack.cli("overlays")
    assert not (stack.root / "overlays/up/pkg/k.py").exists()


@pytest.mark.parametrize("imports", [
    b"",
    b"from pkg.other import arch\n",
    b"import pkg.utils.arch\n",
], ids=["taken-out", "another-module", "binds-the-package"])
def test_an_import_taken_out_or_bound_otherwise_is_still_said(tmp_path, imports):
    stack = _landed(tmp_path, AS_ALIAS)
    stack.commit({"pkg/k.py": _file(imports, guard=True)}, "k: imports (#9)", tag="v3")
    (said,) = stack.json("status", "--against", "v3", expect=1)["gone_upstream"]
    assert "taken back in part: pkg/k.py hunk 1, the rest of its change still upstream" in \
        said["detail"], said
    assert "imports upstream has in another form" not in said["detail"], said


def test_the_guard_taken_out_beside_the_import_rewritten_brings_back_the_guard_alone(tmp_path):
    """Upstream rewrites the import, then takes the guard out (other work): said taken back in
    part at the guard's hunk, the import's named as upstream's in another form; the bring-back
    keeps the import's hunk under upstreamed/ as landed, and the overlay binds `arch` once."""
    stack = _landed(tmp_path, AS_ALIAS)
    stack.commit({"pkg/k.py": _file(FROM, guard=True)}, "[CI] ruff (#9)", tag="v3")
    taker = stack.commit({"pkg/k.py": _file(FROM)}, "k: one stage count (#10)", tag="v4")
    (said,) = stack.json("status", "--against", "v4", expect=1)["gone_upstream"]
    assert said["by"] == taker, said
    assert "taken back in part: pkg/k.py hunk 2, the rest of its change still upstream " \
        "(pkg/k.py hunk 1: its imports upstream has in another form" in said["detail"], said
    stack.cli("rebase", "--to", "v4", expect=1)
    stack.cli("bring-back", "up/kfix.patch")
    assert stack.series("up") == ["kfix.patch"]
    assert (stack.root / "series/up/upstreamed/kfix.patch").is_file()
    stack.cli("overlays")
    overlay = (stack.root / "overlays/up/pkg/k.py").read_bytes()
    assert overlay == _file(FROM, guard=True), overlay.decode()
    for command in (("check",), ("status",)):
        stack.cli(*command)


PANDAS_BELOW = b"\n\nimport pandas as pd\n\nTABLE = pd.DataFrame()\n"


def _reverted_then_edited(tmp_path, fixed_tail: bytes) -> tuple[OneUpstreamStack, str]:
    """The fix puts `import pandas as pd` at the top (its file's tail then `fixed_tail`) and
    uses the table on one line; it lands at v2 and is kept under upstreamed/, upstream reverts
    the landing at v3 and edits the fix's line at v4. Returns the stack and the revert."""
    line = b"    stages = 3\n"
    base = _file() + PANDAS_BELOW
    fixed = _file(b"import pandas as pd\n").replace(line, b"    stages = len(TABLE)\n") + \
        fixed_tail
    stack = OneUpstreamStack(tmp_path, {"pkg/k.py": base})
    stack.add_fix("kfix", "pkg/k.py", base, fixed)
    landing = stack.commit({"pkg/k.py": fixed}, "k: stages by the table (#7)", tag="v2")
    stack.dropped_as_landed("up=v2")
    revert = stack.commit({"pkg/k.py": base}, 'Revert "k: stages by the table (#7)"\n\n'
                          f"This reverts commit {landing}.", tag="v3")
    stack.commit({"pkg/k.py": base.replace(line, b"    stages = 4\n")}, "k: four stages",
                 tag="v4")
    return stack, revert


def test_a_reverted_landing_whose_import_the_file_had_further_down_is_said(tmp_path):
    """The fix repeats at the top an import the file had further down (`import pandas as pd`
    after its functions, AITER's op_tests at c5b4f43525); upstream reverts the landing, then
    edits the fix's line. The binding is still in the file, but as often as before the fix,
    not as the fix left it: the import's hunk is taken back with the rest, the revert named at
    the revert and after the edit (read as there, the revert's files held the fix "in part"
    and the edit after it made the fix "superseded", exit 0)."""
    stack, revert = _reverted_then_edited(tmp_path, PANDAS_BELOW)
    for target in ("v3", "v4"):
        (said,) = stack.json("status", "--against", target, expect=1)["reverted"]
        assert said["by"] == revert, said
        assert "imports upstream has in another form" not in said["detail"], said


def test_a_reverted_landing_that_moved_an_import_to_the_top_is_said(tmp_path):
    """The fix moves `import pandas as pd` from below its functions to the top (AITER's
    c5b4f43525 in op_tests); upstream reverts it, then edits the fix's line: the import is
    back further down, the binding there as often as the fix left it, but the fix's change
    of it is undone; the revert is named, never read as the import still there."""
    stack, revert = _reverted_then_edited(tmp_path, b"\n\nTABLE = pd.DataFrame()\n")
    for target in ("v3", "v4"):
        (said,) = stack.json("status", "--against", target, expect=1)["reverted"]
        assert said["by"] == revert, said
        assert "imports upstream has in another form" not in said["detail"], said


@pytest.mark.parametrize("after", [False, True], ids=["at-the-revert", "then-changed"])
@pytest.mark.parametrize("kept", [FROM, AS_ALIAS], ids=["rewritten", "as-the-fix-wrote-it"])
def test_a_revert_that_keeps_the_import_is_said(tmp_path, kept, after):
    """A revert of the landing takes the guard out and keeps the fix's import, as upstream's
    formatter rewrote it or as the fix wrote it (other code may use it), then upstream edits
    the guard's neighbours. The import is upstream's, but the fix is reverted: named at the
    revert, the import's hunk named as still there, and after the edit "reverted, then
    changed" (the revert's files held the fix "in part", no revert, and the import between
    its neighbours read as the fix landed again: "superseded", exit 0)."""
    stack = OneUpstreamStack(tmp_path, {"pkg/k.py": _file()})
    stack.add_fix("kfix", "pkg/k.py", _file(), _file(AS_ALIAS, guard=True))
    landing = stack.commit({"pkg/k.py": _file(AS_ALIAS, guard=True)},
                           "k: fewer stages on gfx942 (#7)", tag="v2")
    stack.dropped_as_landed("up=v2")
    if kept == FROM:
        stack.commit({"pkg/k.py": _file(kept, guard=True)}, "[CI] ruff (#9)", tag="v3")
    revert = stack.commit({"pkg/k.py": _file(kept)},
                          'Revert "k: fewer stages on gfx942 (#7)"\n\n'
                          f"This reverts commit {landing}.", tag="v4")
    (said,) = stack.json("status", "--against", "v4", expect=1)["reverted"]
    assert said["by"] == revert, said
    assert "taken back in part: pkg/k.py hunk 2, the rest of its change still upstream" in \
        said["detail"], said
    if after:
        edited = _file(kept).replace(b"    stages = 3\n    return _gather(step11,",
                                     b"    stages = 4\n    return _gather(step11 * 2,")
        stack.commit({"pkg/k.py": edited}, "k: four stages", tag="v5")
        (said,) = stack.json("status", "--against", "v5", expect=1)["reverted"]
        assert said["by"] == revert, said
        assert "reverted, then changed" in said["detail"], said


RELATIVE = b"from .utils import arch\n"


def _landed_at(tmp_path, path: str, fix_form: bytes) -> OneUpstreamStack:
    """_landed, the fix's file at `path` (its package the folders of the path)."""
    stack = OneUpstreamStack(tmp_path, {path: _file()})
    stack.add_fix("kfix", path, _file(), _file(fix_form, guard=True))
    stack.commit({path: _file(fix_form, guard=True)}, "k: fewer stages on gfx942 (#7)",
                 tag="v2")
    stack.dropped_as_landed("up=v2")
    assert (stack.root / "series/up/upstreamed/kfix.patch").is_file()
    return stack


@pytest.mark.parametrize("path, fix_form, imports", [
    ("pkg/k.py", RELATIVE, FROM),
    ("pkg/k.py", FROM, RELATIVE),
    ("pkg/k.py", RELATIVE, AS_ALIAS),
    ("pkg/k.py", b"from . import utils\n", b"from pkg import utils\n"),
    ("pkg/ops/k.py", b"from ..utils import arch\n", FROM),
    ("pkg/ops/__init__.py", RELATIVE, b"from pkg.ops.utils import arch\n"),
    ("src/pkg/k.py", RELATIVE, FROM),
], ids=["made-absolute", "made-relative", "made-import-as", "from-the-package", "two-levels-up",
        "package-init", "src-layout"])
def test_a_relative_import_upstream_made_absolute_to_the_same_module_is_quiet(
        tmp_path, path, fix_form, imports):
    """A formatter's absolute-imports rule (ruff's TID252) writes the fix's `from .utils import
    arch` as `from pkg.utils import arch`: the same module from the file's own package, no
    take-back (it was said "taken out upstream (needs attention)", taken back in part at the
    import's hunk, and the advised bring-back put the import in a second time)."""
    stack = _landed_at(tmp_path, path, fix_form)
    stack.commit({path: _file(imports, guard=True)}, "[CI] ruff: absolute imports (#9)",
                 tag="v3")
    status = stack.json("status", "--against", "v3")
    assert status["gone_upstream"] == [] and status["reverted"] == [], status
    stack.cli("rebase", "--to", "v3")
    stack.cli("status")
    stack.cli("overlays")
    assert not (stack.root / "overlays/up" / path).exists()


@pytest.mark.parametrize("path, imports", [
    ("pkg/k.py", b"from other.utils import arch\n"),
    ("pkg/k.py", b"from pkg.ops.utils import arch\n"),
    ("pkg/ops/k.py", b"from ops.utils import arch\n"),
    ("pkg/ops/k.py", FROM),
    ("k.py", FROM),
], ids=["another-package", "a-deeper-module", "a-top-level-package-of-the-same-name",
        "the-parent-package", "no-package"])
def test_a_relative_import_made_absolute_to_another_module_is_still_said(
        tmp_path, path, imports):
    """`from .utils import arch` is `pkg.utils.arch` in `pkg/k.py` only: made absolute to
    another module of the same last name (`other.utils`, `ops.utils` where the file is in
    `pkg.ops`, `pkg.utils` where it is `pkg.ops.utils`), or in a file at the root (no package
    the relative name resolves from), it is taken out, said as before."""
    stack = _landed_at(tmp_path, path, RELATIVE)
    stack.commit({path: _file(imports, guard=True)}, "k: imports (#9)", tag="v3")
    (said,) = stack.json("status", "--against", "v3", expect=1)["gone_upstream"]
    assert f"taken back in part: {path} hunk 1, the rest of its change still upstream" in \
        said["detail"], said
    assert "imports upstream has in another form" not in said["detail"], said


def test_the_guard_taken_out_beside_the_relative_import_made_absolute_brings_back_the_guard_alone(
        tmp_path):
    """Upstream makes the fix's relative import absolute, then takes the guard out: said taken
    back in part at the guard's hunk alone; the bring-back keeps the import's hunk as landed,
    and the overlay binds `arch` once (upstream's absolute import, not the fix's beside it)."""
    stack = _landed_at(tmp_path, "pkg/k.py", RELATIVE)
    stack.commit({"pkg/k.py": _file(FROM, guard=True)}, "[CI] ruff: absolute imports (#9)",
                 tag="v3")
    taker = stack.commit({"pkg/k.py": _file(FROM)}, "k: one stage count (#10)", tag="v4")
    (said,) = stack.json("status", "--against", "v4", expect=1)["gone_upstream"]
    assert said["by"] == taker, said
    assert "taken back in part: pkg/k.py hunk 2, the rest of its change still upstream " \
        "(pkg/k.py hunk 1: its imports upstream has in another form" in said["detail"], said
    stack.cli("rebase", "--to", "v4", expect=1)
    stack.cli("bring-back", "up/kfix.patch")
    stack.cli("overlays")
    overlay = (stack.root / "overlays/up/pkg/k.py").read_bytes()
    assert overlay == _file(FROM, guard=True), overlay.decode()
    for command in (("check",), ("status",)):
        stack.cli(*command)


def _moved_into_sub(tmp_path, imports: bytes, whole_file: bool) -> tuple[OneUpstreamStack, str]:
    """The fix's `from pkg.utils import arch` and guard landed in pkg/k.py; upstream then
    moves the file to pkg/sub/k.py (`whole_file`: a rename git follows) or gather() whole into
    pkg/sub/g.py, pkg/k.py staying with another function, writing `imports` there (at a
    pkg/sub/utils.py with an arch of its own). (The status of that commit, the commit.)"""
    stack = _landed(tmp_path, FROM)
    moved = _file(imports, guard=True)
    files = {"pkg/sub/__init__.py": b"", "pkg/sub/utils.py": b"arch = None\n"}
    if whole_file:
        files.update({"pkg/k.py": None, "pkg/sub/k.py": moved})
    else:
        files.update({"pkg/k.py": HEAD + FROM + b"\n\ndef keep(x):\n    return x\n",
                      "pkg/sub/g.py": moved.replace(b"from pkg.kernels", b"from ..kernels")})
    took = stack.commit(files, "move into pkg.sub (#9)", tag="v3")
    return stack, took


@pytest.mark.parametrize("whole_file", [True, False], ids=["file-moved", "function-moved"])
def test_an_import_moved_with_its_file_and_made_relative_to_another_module_is_said(
        tmp_path, whole_file):
    """Upstream moves the fix's code into pkg/sub/ writing the fix's `from pkg.utils import
    arch` as `from .utils import arch`: there that is pkg.sub.utils's arch, another module, the
    fix's import taken back. It was resolved from the fix's own path (pkg.utils), read as the
    fix's import in another form: nothing said, exit 0."""
    stack, took = _moved_into_sub(tmp_path, RELATIVE, whole_file)
    (said,) = stack.json("status", "--against", "v3", expect=1)["gone_upstream"]
    assert said["by"] == took, said
    assert "taken back in part: pkg/k.py hunk 1, the rest of its change still upstream" in \
        said["detail"], said
    assert "imports upstream has in another form" not in said["detail"], said
    stack.cli("rebase", "--to", "v3", expect=1)


@pytest.mark.parametrize("whole_file", [True, False], ids=["file-moved", "function-moved"])
def test_an_import_moved_with_its_file_and_made_relative_to_the_same_module_is_quiet(
        tmp_path, whole_file):
    """Mirror: the moved code writes `from ..utils import arch`, from pkg/sub/ the fix's
    pkg.utils's arch: the fix's import in another form, nothing said."""
    stack, _ = _moved_into_sub(tmp_path, b"from ..utils import arch\n", whole_file)
    status = stack.json("status", "--against", "v3")
    assert status["gone_upstream"] == [] and status["reverted"] == [], status
    stack.cli("rebase", "--to", "v3")
    stack.cli("status")
