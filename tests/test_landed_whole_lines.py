"""Post-image containment (the fix's added code found in the target, whitespace and line
wrapping ignored, next to its context) counts whole lines only, and never a fix that changes
only whitespace. Before, the whitespace-free search matched inside a line: a fix setting a
timeout to 30 was "upstreamed" where upstream set 300, a call the fix adds was found after the
`#` of upstream's comment that turned it off; and a re-indent (in Python, other code: the
statement moved into the `if`) was found in the unfixed file itself as soon as upstream edited
a line next to it. Each was dropped by the rebase, the deployed file without the fix. Real git
upstreams, real commands: `status --against`, `rebase --to`."""
from __future__ import annotations

import pytest

from helpers.project import OneUpstreamStack

RPC = (b"import os\n\n\ndef rpc_settings():\n"
       b"    retries = int(os.environ.get(\"RPC_RETRIES\", \"3\"))\n"
       b"    TIMEOUT_SECONDS_FOR_RPC = %s\n"
       b"    backoff = compute_backoff(retries)\n"
       b"    return TIMEOUT_SECONDS_FOR_RPC, backoff\n")

FORWARD = (b"def forward(self, query, key_cache):\n"
           b"    workspace = self.allocate_workspace(query)\n"
           b"    indptr = self.build_indptr(query)\n%s"
           b"    logits = self.paged_mqa_logits(query, key_cache, indptr)\n"
           b"    weights = self.select_topk(logits)\n"
           b"    return self.gather(weights, key_cache)\n")
SYNC = b"    torch.cuda.synchronize(device=query.device)\n"

ROWS = (b"def total_rows(batches):\n    count = 0\n    for batch in batches:\n"
        b"        if batch.is_padded:\n            count += batch.real_rows\n"
        b"%s    count -= batch.padding_rows_of_block\n"
        b"        count += batch.header_rows%s\n    return count\n")


def kept_not_dropped(stack: OneUpstreamStack) -> None:
    """status does not call the fix landed, and the rebase does not drop it."""
    status = stack.json("status", "--against", "up=v2", expect=None)
    ((patch,),) = [status["patches"]]
    assert patch["state"] != "upstreamed" and patch["rebase"] != "drop", patch
    plan = stack.json("rebase", "--to", "up=v2", "--dry-run", expect=None)
    ((moved,),) = [plan["patches"]]
    assert moved["action"] != "dropped" and plan["counts"]["dropped"] == 0, plan
    assert stack.series("up") == ["fix.patch"]


@pytest.mark.parametrize("theirs", [b"300", b"3000  # ms"])
def test_a_value_the_fix_sets_found_inside_upstreams_longer_one_is_no_landing(tmp_path, theirs):
    v1 = RPC % b"60"
    stack = OneUpstreamStack(tmp_path, {"k.py": v1})
    stack.add_fix("fix", "k.py", v1, RPC % b"30")
    stack.commit({"k.py": RPC % theirs}, "a longer RPC timeout", tag="v2")
    kept_not_dropped(stack)


def test_a_call_the_fix_adds_that_upstream_commented_out_is_no_landing(tmp_path):
    v1 = FORWARD % b""
    stack = OneUpstreamStack(tmp_path, {"k.py": v1})
    stack.add_fix("fix", "k.py", v1, FORWARD % SYNC)
    stack.commit({"k.py": FORWARD % (b"    # " + SYNC.lstrip()[:-1]
                                     + b"  # disabled: too slow on MI300\n")},
                 "the barrier off", tag="v2")
    kept_not_dropped(stack)


def test_a_re_indent_upstream_never_made_is_no_landing(tmp_path):
    v1 = ROWS % (b"    ", b"")
    stack = OneUpstreamStack(tmp_path, {"k.py": v1})
    stack.add_fix("fix", "k.py", v1, ROWS % (b"        ", b""))
    stack.commit({"k.py": ROWS % (b"    ", b" or 0")}, "header rows may be None", tag="v2")
    kept_not_dropped(stack)


def test_the_added_call_wrapped_by_upstream_over_several_lines_still_lands(tmp_path):
    """Whole lines, however wrapped: the landing upstream reformatted (and a line next to it
    edited, so that no reverse-apply finds it) is still found and dropped."""
    v1 = FORWARD % b""
    stack = OneUpstreamStack(tmp_path, {"k.py": v1})
    stack.add_fix("fix", "k.py", v1, FORWARD % SYNC)
    wrapped = FORWARD.replace(b"    weights = self.select_topk(logits)\n",
                              b"    weights = self.select_topk(logits, k=8)\n") % (
        b"    torch.cuda.synchronize(\n        device=query.device\n    )\n")
    stack.commit({"k.py": wrapped}, "wrap the barrier, k=8", tag="v2")
    status = stack.json("status", "--against", "up=v2", expect=None)
    ((patch,),) = [status["patches"]]
    assert patch["state"] == "upstreamed", patch
    assert any("post-image containment" in line for line in patch["evidence"]), patch
