"""A fix that adds an item to a list or dict (an architecture to a table, a name to
`__all__`) where upstream added the same item itself a few lines away. Where one copy is the
last item, before the closing bracket, and the other is not, one has a comma after it and the
other none, as every formatter writes them; before, near text read the two as different code,
`status --against` said `offset`, the rebase moved the fix, exit 0, and the overlay held the
key twice (AITER's `aiter/utility/dtypes.py` gained `"gfx1151"` between v0.1.18 and v0.1.20,
in its sorted place). Now it is the doubling stop, as for any run of added lines; an item
added alone, with no copy near, still moves. Real git upstreams, real commands."""
from __future__ import annotations

import pytest

from helpers.project import OneUpstreamStack

ARCHS = [b"gfx942", b"gfx950", b"gfx1100", b"gfx1101", b"gfx1102", b"gfx1200", b"gfx1201",
         b"gfx1250"]


def entry(arch: bytes) -> bytes:
    return b'    "%s": {"fp8": torch.float8_e4m3fn},\n' % arch


def table(archs: list[bytes]) -> bytes:
    return (b"import torch\n\ndefaultDtypes = {\n" + b"".join(entry(a) for a in archs) +
            b"}\n\n\ndef get_dtype_fp8(arch):\n    return defaultDtypes[arch]['fp8']\n")


BASE = table(ARCHS)


def inserted(after: bytes, arch: bytes, archs: list[bytes] = ARCHS) -> bytes:
    at = archs.index(after) + 1
    return table(archs[:at] + [arch] + archs[at:])


def stack_with(tmp_path, fix: bytes, upstream: bytes) -> OneUpstreamStack:
    stack = OneUpstreamStack(tmp_path, {"pkg/dtypes.py": BASE, "pkg/b.py": b"b = 1\n"})
    stack.add_fix("fa", "pkg/dtypes.py", BASE, fix)
    stack.commit({"pkg/dtypes.py": upstream + b"# one more line\n"}, "Add gfx1151", tag="v2")
    return stack


@pytest.mark.parametrize("fix_after, theirs_after", [
    (b"gfx1250", b"gfx1102"),  # the fix's item last (no comma read), upstream's in the middle
    (b"gfx1102", b"gfx1250"),  # the fix's in the middle, upstream's last
], ids=["fix-last", "upstream-last"])
def test_an_item_upstream_added_a_few_lines_away_stops_as_doubled(tmp_path, fix_after,
                                                                  theirs_after):
    stack = stack_with(tmp_path, inserted(fix_after, b"gfx1151"),
                       inserted(theirs_after, b"gfx1151"))
    status = stack.json("status", "--against", "v2", expect=1)
    assert [p["state"] for p in status["patches"]] == ["conflict"], status["patches"]
    _, _, err = stack.cli("rebase", "--to", "v2", expect=3)
    assert "pkg/dtypes.py line" in err, err
    assert "upstream has these lines already, its own way" in err, err
    # The worktree holds both copies; taking the fix's out and going on leaves no fix.
    work = stack.root / ".patchforge/work/up/pkg/dtypes.py"
    assert work.read_bytes().count(b'"gfx1151"') == 2
    stack.cli("rebase", "--abort")
    assert stack.series("up") == ["fa.patch"]


def test_an_item_upstream_did_not_add_moves_as_before(tmp_path):
    # Upstream added another architecture in the middle; the fix's, last, is carried over.
    stack = stack_with(tmp_path, inserted(b"gfx1250", b"gfx1151"),
                       inserted(b"gfx1102", b"gfx1103"))
    status = stack.json("status", "--against", "v2", expect=0)
    assert [p["rebase"] for p in status["patches"]] == ["move"], status["patches"]
    summary = stack.rebase_json("--to", "v2")
    assert [p["action"] for p in summary["patches"]] == ["offset"], summary["patches"]
    stack.cli("overlays")
    overlay = (stack.root / "overlays/up/pkg/dtypes.py").read_bytes()
    assert overlay.count(b'"gfx1151"') == 1 and overlay.count(b'"gfx1103"') == 1


@pytest.mark.parametrize("where", ["last", "mid"])
def test_the_same_keyword_upstream_passed_to_another_call_moves(tmp_path, where):
    # The fix passes `stream=` to launch_a; upstream passes the same keyword to launch_b, two
    # lines lower (as its last argument, or in the middle, before `block=`). Two calls, two
    # arguments, both wanted: it stopped "upstream has these lines already", and the advice
    # (delete your copy) took launch_a's stream away.
    base = (b"import torch\n\n\ndef run(x, y):\n    a = launch_a(\n        x,\n        y,\n"
            b"    )\n    b = launch_b(\n        y,\n        x,\n        block=128,\n    )\n"
            b"    return a + b\n\n\ndef other(z):\n    return z\n")
    keyword = b"        stream=torch.cuda.current_stream(),\n"
    mine = base.replace(b"launch_a(\n        x,\n        y,\n",
                        b"launch_a(\n        x,\n        y,\n" + keyword)
    theirs = (base.replace(b"        x,\n        block=128,\n",
                           b"        x,\n" + keyword + b"        block=128,\n")
              if where == "mid" else
              base.replace(b"        block=128,\n    )\n",
                           b"        block=128,\n" + keyword + b"    )\n"))
    for text in (mine, theirs):
        compile(text, "a.py", "exec")
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": base, "pkg/b.py": b"b = 1\n"})
    stack.add_fix("fa", "pkg/a.py", base, mine)
    stack.commit({"pkg/a.py": theirs}, "Pass the stream to launch_b", tag="v2")
    status = stack.json("status", "--against", "v2", expect=None)
    assert [p["rebase"] for p in status["patches"]] == ["move"], status["patches"]
    stack.cli("rebase", "--to", "v2")
    stack.cli("overlays")
    overlay = (stack.root / "overlays/up/pkg/a.py").read_bytes()
    compile(overlay, "a.py", "exec")
    assert overlay.count(keyword) == 2 and b"        y,\n" + keyword + b"    )\n    b = " in overlay


def test_the_same_keyword_upstream_passes_to_the_call_unpacked_stops(tmp_path):
    # Upstream makes the fix its own way: the keyword in a dict built just above, unpacked
    # into the same call (`**opts`). Two brackets, yet one call: merged, launch_a would get
    # `stream` twice ("got multiple values for keyword argument"), exit 0.
    base = (b"import torch\n\n\ndef run(x, y):\n    a = launch_a(\n        x,\n        y,\n"
            b"        block=128,\n        warps=4,\n    )\n    return a\n\n\ndef other(z):\n"
            b"    return z\n")
    keyword = b"        stream=torch.cuda.current_stream(),\n"
    mine = base.replace(b"        y,\n", b"        y,\n" + keyword)
    theirs = (base.replace(b"    a = launch_a(\n",
                           b"    opts = dict(\n" + keyword + b"    )\n    a = launch_a(\n")
              .replace(b"        warps=4,\n", b"        warps=4,\n        **opts,\n"))
    for text in (mine, theirs):
        compile(text, "a.py", "exec")
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": base, "pkg/b.py": b"b = 1\n"})
    stack.add_fix("fa", "pkg/a.py", base, mine)
    stack.commit({"pkg/a.py": theirs}, "Pass the stream to launch_a", tag="v2")
    code, out, err = stack.cli("rebase", "--to", "v2", expect=None)
    assert code == 3 and "upstream has these lines already" in out + err, out + err
