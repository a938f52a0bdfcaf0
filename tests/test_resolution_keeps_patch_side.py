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


# The fix and upstream made the same change to a decorator (AITER's fused_allreduce_rmsnorm_quant
# fix, #3977, landed in v0.1.18), the fix with a comment of its own above it.
GUARD_HEAD = b"import torch\n\n\ndef quant_fake(x):\n    return x\n\n\n"
GUARD_TAIL = b"def quant_(x):\n    return x\n"
GUARD_OLD = b"@torch_compile_guard(gen_fake=rmsnorm_fake)\n"
GUARD_NEW = b"@torch_compile_guard(gen_fake=quant_fake)\n"
GUARD_NOTE = b"# local: keep the quant fake in step with the real op\n"


def test_a_patch_side_that_holds_upstreams_change_is_not_said(tmp_path):
    """Before: the note said the resolution undid upstream's change (`to @torch_compile_guard(
    gen_fake=quant_fake)`) while the resolved file holds exactly that line, the fix's comment
    above it: the fix had made upstream's change too. Nothing is undone: no note."""
    stack = OneUpstreamStack(tmp_path, {"aiter/dist/state.py": GUARD_HEAD + GUARD_OLD + GUARD_TAIL})
    stack.add_fix("guard", "aiter/dist/state.py", GUARD_HEAD + GUARD_OLD + GUARD_TAIL,
                  GUARD_HEAD + GUARD_NOTE + GUARD_NEW + GUARD_TAIL)
    stack.commit({"aiter/dist/state.py": GUARD_HEAD + GUARD_NEW + GUARD_TAIL}, "fix (#3977)",
                 tag="v2")
    stack.cli("rebase", "--to", "up=v2", expect=3)
    work = stack.root / ".patchforge" / "work" / "up" / "aiter" / "dist" / "state.py"
    assert b"<<<<<<< upstream" in work.read_bytes()
    work.write_bytes(_resolved(work.read_bytes(), "patch"))
    _, out, err = stack.cli("rebase", "--continue")
    assert "undoes that change" not in err + out, err
    assert work.exists() is False
    assert stack.series("up") == ["guard.patch"]
    patch = stack.patch("up", "guard")
    assert b"+" + GUARD_NOTE in patch and b"-" + GUARD_OLD not in patch


def test_a_patch_side_that_changes_upstreams_line_again_is_said(tmp_path):
    """The mirror: the fix's side has its comment above a line of its own (`other_fake`)
    where upstream made the line `quant_fake`: kept whole, it undoes upstream's change, and
    the note says so."""
    own = b"@torch_compile_guard(gen_fake=other_fake)\n"
    stack = OneUpstreamStack(tmp_path, {"aiter/dist/state.py": GUARD_HEAD + GUARD_OLD + GUARD_TAIL})
    stack.add_fix("guard", "aiter/dist/state.py", GUARD_HEAD + GUARD_OLD + GUARD_TAIL,
                  GUARD_HEAD + GUARD_NOTE + own + GUARD_TAIL)
    stack.commit({"aiter/dist/state.py": GUARD_HEAD + GUARD_NEW + GUARD_TAIL}, "fix (#3977)",
                 tag="v2")
    stack.cli("rebase", "--to", "up=v2", expect=3)
    work = stack.root / ".patchforge" / "work" / "up" / "aiter" / "dist" / "state.py"
    work.write_bytes(_resolved(work.read_bytes(), "patch"))
    _, out, err = stack.cli("rebase", "--continue")
    assert ("note: up/guard.patch: aiter/dist/state.py lines 8-9 are the patch's side kept "
            "whole, where the upstream (v2) changed the same lines (to "
            "`@torch_compile_guard(gen_fake=quant_fake)`): the resolution undoes that change "
            "there; look that it is meant") in err, err


def test_a_patch_side_that_made_upstreams_change_but_keeps_a_line_it_took_out_is_said(tmp_path):
    """The other mirror: upstream changed the guard and took `@functools.cache` out; the fix
    made the same change to the guard, its comment above, and kept `@functools.cache`. Kept
    whole, the patch's side puts back a line upstream took out: the note says so (a line next
    to the change read as untouched made it quiet, exit 0, the patch carrying
    `+@functools.cache` over upstream's removal)."""
    cache = b"@functools.cache\n"
    base = GUARD_HEAD + GUARD_OLD + cache + GUARD_TAIL
    stack = OneUpstreamStack(tmp_path, {"aiter/dist/state.py": base})
    stack.add_fix("guard", "aiter/dist/state.py", base,
                  GUARD_HEAD + GUARD_NOTE + GUARD_NEW + cache + GUARD_TAIL)
    stack.commit({"aiter/dist/state.py": GUARD_HEAD + GUARD_NEW + GUARD_TAIL},
                 "guard with quant_fake, drop the cache (#3977)", tag="v2")
    stack.cli("rebase", "--to", "up=v2", expect=3)
    work = stack.root / ".patchforge" / "work" / "up" / "aiter" / "dist" / "state.py"
    assert b"<<<<<<< upstream" in work.read_bytes()
    work.write_bytes(_resolved(work.read_bytes(), "patch"))
    _, out, err = stack.cli("rebase", "--continue")
    assert "is the patch's side kept whole" in err or "are the patch's side kept whole" in err, err
    assert "the resolution undoes that change there" in err, err
