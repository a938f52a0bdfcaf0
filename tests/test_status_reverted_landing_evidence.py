"""`status --against` names a commit that made a fix's change, upstream since reverted, with its
revert in the same line of evidence. The table shows a patch's first line of evidence only: it
named the landing alone ("history: commit X makes this change (the same change)"), the revert
in the next line, which only --json showed, and a reader took the fix for landed (AITER's
c00643942008, reverted by 62aa6fe9a374 before v0.1.18). A landing never undone, or one made
again after its revert, is named as before. Real git history, through the CLI."""
from __future__ import annotations

from helpers.project import OneUpstreamStack

OLD = b"    scale = torch.finfo(torch.float8_e4m3fn).max\n"
FIX = b"    scale = torch.finfo(torch.float8_e4m3fnuz).max if on_rocm() else 448.0\n"


def module(line: bytes) -> bytes:
    """Twenty small functions, f7 computing its scale by `line`."""
    f7 = b"def f7(x):\n    y = x + 7\n" + line + b"    y = y * scale\n    return y\n\n\n"
    return b"".join(f7 if i == 7 else b"def f%d(x):\n    y = x + %d\n    return y\n\n\n" % (i, i)
                    for i in range(20))


def _landed_and_reverted(tmp_path, again: bool = False) -> tuple[OneUpstreamStack, str, str]:
    """The fix lands (#12), upstream reverts it by message (and lands it again, `again`), then
    edits a line beside it: its diff no longer applies as it is, so the table shows why."""
    stack = OneUpstreamStack(tmp_path, {"k.py": module(OLD)})
    stack.add_fix("fix", "k.py", module(OLD), module(FIX))
    landing = stack.commit({"k.py": module(FIX)}, "fp8: e4m3fnuz max on ROCm (#12)")
    revert = stack.commit({"k.py": module(OLD)},
                          'Revert "fp8: e4m3fnuz max on ROCm (#12)"\n\n'
                          f"This reverts commit {landing}.")
    now = module(FIX) if again else module(OLD)
    if again:
        stack.commit({"k.py": now}, "fp8: e4m3fnuz max on ROCm, again (#14)")
    said = now.replace(b"    y = y * scale\n", b"    y = y * scale  # saturate\n")
    stack.commit({"k.py": said}, "f7: say why", tag="v2")
    return stack, landing, revert


def test_a_reverted_landing_is_named_with_its_revert_in_the_table_and_the_json(tmp_path):
    stack, landing, revert = _landed_and_reverted(tmp_path)
    said = f"history: commit {landing} makes this change (the same change), undone by " \
        f"{revert[:12]}"
    rc, out, _ = stack.cli("status", "--against", "up=v2", expect=None)
    (row,) = [line for line in out.splitlines() if line.startswith("up/fix.patch")]
    assert said in row, out
    ((patch,),) = [stack.json("status", "--against", "up=v2", expect=rc)["patches"]]
    assert patch["state"] != "upstreamed" and patch["rebase"] != "drop", patch
    assert patch["evidence"][:2] == [
        said, f"history: commit {revert} undoes this change (its message reverts {landing})"], \
        patch["evidence"]


def test_a_landing_made_again_after_its_revert_is_named_by_the_one_that_stands(tmp_path):
    stack, landing, revert = _landed_and_reverted(tmp_path, again=True)
    ((patch,),) = [stack.json("status", "--against", "up=v2", expect=None)["patches"]]
    assert (patch["state"], patch["rebase"]) == ("upstreamed", "drop"), patch
    again = patch["landed_in"]
    assert again not in (landing, revert), patch
    history = [line for line in patch["evidence"] if line.startswith("history: ")]
    assert history == [
        f"history: commit {landing} makes this change (the same change), undone by "
        f"{revert[:12]}",
        f"history: commit {revert} undoes this change (its message reverts {landing})",
        f"history: commit {again} makes this change (the same change)"], patch["evidence"]
