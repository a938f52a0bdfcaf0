"""`bring-back --continue` of a stop where the fix and the upstream changed the same lines,
resolved by keeping the fix's side of the block whole: taken, with the note `rebase
--continue` prints naming the file and the lines where the resolution undoes upstream's
change. A real git upstream, the CLI as a user runs it."""
from __future__ import annotations

import re

from test_resolution_keeps_patch_side import HEAD, _stopped


def _bring_back_stopped(tmp_path):
    stack, work = _stopped(tmp_path)
    stack.cli("rebase", "--skip", expect=1)
    stack.cli("bring-back", "cache-scale-doc", expect=3)
    assert b"<<<<<<< series" in work.read_bytes(), work.read_bytes()
    return stack, work


def _side(marked: bytes, side: str) -> bytes:
    """The bring-back's conflict block replaced by one of its sides: "series" or "fix"."""
    block = re.compile(rb"<<<<<<< series\n(.*?)(?:\|{7} base\n.*?)?=======\n(.*?)"
                       rb">>>>>>> skipped [^\n]*\n", re.S)
    return block.sub(lambda m: m.group(1 if side == "series" else 2), marked)


def test_bring_back_continue_says_the_patch_side_kept_over_upstreams_change(tmp_path):
    """Before: `bring-back --continue` took it without a word (`rebase --continue` said it)."""
    stack, work = _bring_back_stopped(tmp_path)
    work.write_bytes(_side(work.read_bytes(), "fix"))
    _, out, err = stack.cli("bring-back", "--continue")
    first = HEAD.count(b"\n") - 1 + 1
    assert ("note: up/cache-scale-doc.patch: aiter/ops/cache.py lines "
            f"{first}-{first + 1} are the patch's side kept whole, where the upstream (v2) "
            "changed the same lines (to `k_scale: torch.Tensor | None = None,` / "
            "`v_scale: torch.Tensor | None = None,`): the resolution undoes that change there; "
            "look that it is meant") in err, err
    assert b"Optional[torch.Tensor] = None,  # per-tensor" in stack.patch("up", "cache-scale-doc")


def test_bring_back_continue_keeping_upstreams_lines_says_nothing_of_it(tmp_path):
    stack, work = _bring_back_stopped(tmp_path)
    work.write_bytes(_side(work.read_bytes(), "series").replace(
        b"torch.Tensor | None = None,\n", b"torch.Tensor | None = None,  # per-tensor, fp32\n"))
    _, out, err = stack.cli("bring-back", "--continue")
    assert "patch's side kept whole" not in err, err
