"""A fix that removes a line (a leftover cast, a debugging barrier) while upstream moved that
line within the same function: the hunk's reverse-apply succeeds (the line is gone from its
place) and git's merge changes nothing (it takes the move for a removal and an addition), so
before, status said "upstreamed (high): reverse-apply" and the rebase dropped the fix, the
deployed function still running the line, when the line was short (`x = x.to(torch.float16)`),
moved further than 6 lines, given another argument, or when upstream also took a copy out of
another function. The fix's function in the target is the place now: the removed line (or the
call it makes) there as often as at the base is `unsure`, the rebase stops. A removal upstream
made itself still lands. Real git upstreams, real commands: `status --against`, `rebase --to`."""
from __future__ import annotations

import pytest

from helpers.project import OneUpstreamStack

CAST = b"    x = x.to(torch.float16)\n"
SYNC = b"    torch.cuda.synchronize(device=x.device)\n"


def function(i: int, line: bytes | None = None, at: int = 3, size: int = 16) -> bytes:
    """def f<i>(x) of `size` offset lines, with `line` put before offset line `at`."""
    lines = [f"    a{j} = x + {j} * {i}\n".encode() for j in range(size)]
    if line is not None:
        lines.insert(at, line)
    return f"def f{i}(x):\n".encode() + b"".join(lines) + b"    return x\n\n\n"


def module(**changed: bytes) -> bytes:
    """Five functions, each with the cast at its line 3, but those `changed` (`f2=...`)."""
    return b"".join(changed.get(f"f{i}", function(i, CAST)) for i in range(5))


def stops_unsure(stack: OneUpstreamStack) -> None:
    status = stack.json("status", "--against", "up=v2", expect=1)
    ((patch,),) = [status["patches"]]
    assert patch["state"] == "unsure" and patch["rebase"] == "stop", patch
    assert any("is still in its function" in line and "moved, not removed: unsure" in line
               for line in patch["evidence"]), patch
    rc, out, err = stack.cli("rebase", "--to", "up=v2", expect=3)
    assert "dropped" not in out and stack.series("up") == ["fix.patch"], out + err
    assert not (stack.root / "series" / "up" / "upstreamed" / "fix.patch").exists()


@pytest.mark.parametrize("line, moved_to", [(CAST, 7), (SYNC, 16)],
                         ids=["short line 4 lines down", "call 13 lines down (function end)"])
def test_a_removed_line_upstream_moved_within_the_function_is_no_landing(tmp_path, line,
                                                                          moved_to):
    """The fix removes f2's line; upstream moves it further down f2. Fails on main: the cast
    (21 characters without whitespace) was never looked for, and the call only within 6 lines
    of the hunk's place."""
    v1 = module(f2=function(2, line))
    stack = OneUpstreamStack(tmp_path, {"k.py": v1})
    stack.add_fix("fix", "k.py", v1, module(f2=function(2)))
    stack.commit({"k.py": module(f2=function(2, line, moved_to))}, "moved", tag="v2")
    stops_unsure(stack)


def test_a_removed_call_moved_and_given_another_argument_is_no_landing(tmp_path):
    """Upstream moves f2's sync 4 lines down and passes it `stream=None`: the same call still
    made in the fix's function. Fails on main (a moved line was matched verbatim only)."""
    v1 = module(f2=function(2, SYNC))
    stack = OneUpstreamStack(tmp_path, {"k.py": v1})
    stack.add_fix("fix", "k.py", v1, module(f2=function(2)))
    other = SYNC.replace(b")\n", b", stream=None)\n")
    stack.commit({"k.py": module(f2=function(2, other, 7))}, "syncs reworked", tag="v2")
    stops_unsure(stack)


def test_a_removed_line_moved_while_a_copy_left_another_function_is_no_landing(tmp_path):
    """f1 and f2 both sync; the fix removes f2's. Upstream moves f2's 4 lines down and removes
    f1's: the file has the line once less than the base, but f2 still runs it. Fails on main
    (the line was counted over the whole file)."""
    v1 = module(f1=function(1, SYNC), f2=function(2, SYNC))
    stack = OneUpstreamStack(tmp_path, {"k.py": v1})
    stack.add_fix("fix", "k.py", v1, module(f1=function(1, SYNC), f2=function(2)))
    stack.commit({"k.py": module(f1=function(1), f2=function(2, SYNC, 7))}, "syncs reworked",
                 tag="v2")
    stops_unsure(stack)


def test_the_removal_made_upstream_still_lands_whatever_other_functions_do(tmp_path):
    """Upstream removes f2's cast (the fix) and adds one to f4 and another offset to f2: the
    fix's function has the cast once less than at the base, so upstreamed, and the rebase
    drops the fix. A guard: passes on main too."""
    v1 = module()
    stack = OneUpstreamStack(tmp_path, {"k.py": v1})
    stack.add_fix("fix", "k.py", v1, module(f2=function(2)))
    stack.commit({"k.py": module(f2=function(2, size=17), f4=function(4, CAST + CAST))},
                 "no cast in f2, two in f4", tag="v2")
    status = stack.json("status", "--against", "up=v2", expect=1)
    ((patch,),) = [status["patches"]]
    assert patch["state"] == "upstreamed" and patch["rebase"] == "drop", patch
    rc, out, err = stack.cli("rebase", "--to", "up=v2")
    assert stack.series("up") == [], out + err
