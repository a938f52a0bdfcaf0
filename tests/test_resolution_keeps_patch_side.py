"""`rebase --continue` of a stop where the fix and the new upstream changed the same lines,
resolved by keeping the fix's side of the block whole: taken (keeping the patch's side is often
what is meant), with a note naming the file and the lines where the resolution undoes
upstream's change, so that the user looks. A real git upstream, the CLI as a user runs it."""
from __future__ import annotations

import re

from helpers.project import OneUpstreamStack

HEAD = b"import torch\nfrom typing import Optional\n\n\ndef reshape_and_cache(\n    key,\n"
TAIL = b"    asm_layout: bool = False,\n) -> None: ...\n"
OLD = (b"    k_scale: Optional[torch.Tensor] = None,\n"
       b"    v_scale: Optional[torch.Tensor] = None,\n")
BASE = HEAD + OLD + TAIL
# The fix documents the scales; upstream rewrites Optional[...] as `X | None` and drops the
# import.
FIXED = HEAD + OLD.replace(b" = None,\n", b" = None,  # per-tensor, fp32\n") + TAIL
UPSTREAM_LINES = OLD.replace(b"Optional[torch.Tensor]", b"torch.Tensor | None")
UPSTREAM = HEAD.replace(b"from typing import Optional\n", b"") + UPSTREAM_LINES + TAIL


def _stopped(tmp_path) -> tuple[OneUpstreamStack, object]:
    stack = OneUpstreamStack(tmp_path, {"aiter/ops/cache.py": BASE})
    stack.add_fix("cache-scale-doc", "aiter/ops/cache.py", BASE, FIXED)
    stack.commit({"aiter/ops/cache.py": UPSTREAM}, "Use X | None (#3)", tag="v2")
    stack.cli("rebase", "--to", "up=v2", expect=3)
    work = stack.root / ".patchforge" / "work" / "up" / "aiter" / "ops" / "cache.py"
    assert b"<<<<<<< upstream" in work.read_bytes()
    return stack, work


def _resolved(marked: bytes, side: str) -> bytes:
    """The conflict block replaced by one of its sides: "upstream", "base" or "patch"."""
    block = re.compile(rb"<<<<<<< upstream\n(.*?)\|\|\|\|\|\|\| base\n(.*?)=======\n(.*?)"
                       rb">>>>>>> patch\n", re.S)
    index = {"upstream": 1, "base": 2, "patch": 3}[side]
    return block.sub(lambda m: m.group(index), marked)


def test_the_patch_side_kept_whole_over_upstreams_change_is_said(tmp_path):
    """Before: --continue took it without a word, and the series put `Optional[...]` back
    where upstream has `X | None`, in a file that no longer imports Optional."""
    stack, work = _stopped(tmp_path)
    work.write_bytes(_resolved(work.read_bytes(), "patch"))
    _, out, err = stack.cli("rebase", "--continue")
    first = HEAD.count(b"\n") - 1 + 1  # the block's first line in the resolved file
    assert ("note: up/cache-scale-doc.patch: aiter/ops/cache.py lines "
            f"{first}-{first + 1} are the patch's side kept whole, where the upstream (v2) "
            "changed the same lines (to `k_scale: torch.Tensor | None = None,` / "
            "`v_scale: torch.Tensor | None = None,`): the resolution undoes that change there; "
            "look that it is meant") in err, err
    assert b"Optional[torch.Tensor] = None,  # per-tensor" in stack.patch("up", "cache-scale-doc")


def test_a_resolution_that_keeps_upstreams_lines_is_not_said(tmp_path):
    """Upstream's lines kept, with the fix's comments made on them: no note."""
    stack, work = _stopped(tmp_path)
    resolved = _resolved(work.read_bytes(), "upstream").replace(UPSTREAM_LINES, UPSTREAM_LINES.replace(
        b" = None,\n", b" = None,  # per-tensor, fp32\n"))
    work.write_bytes(resolved)
    _, out, err = stack.cli("rebase", "--continue")
    assert "note:" not in err and "look that it is meant" not in out, out + err
    assert b"torch.Tensor | None = None,  # per-tensor" in stack.patch("up", "cache-scale-doc")
