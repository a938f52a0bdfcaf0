"""A fix landed upstream in two commits, kept whole under upstreamed/, the first commit then
reverted: `bring-back` puts the reverted hunk back into the series and keeps the other under
upstreamed/ as landed. The commit its `Applied-Upstream` names is the one that landed that
part, so that a later revert of it is said too."""
from __future__ import annotations

import re

from helpers.project import OneUpstreamStack

BASE = b"".join(b"line %d of the module under test\n" % i for i in range(1, 31))
GUARD = b"if value is None:\n    raise ValueError('a value is needed here')\n"
LIMIT = b"if limit < 0:\n    raise ValueError('a limit is never negative')\n"


def _line(n: int) -> bytes:
    return b"line %d of the module under test\n" % n


GUARDED = BASE.replace(_line(10), _line(10) + GUARD)
BOTH = GUARDED.replace(_line(28), _line(28) + LIMIT)
LIMITED = BASE.replace(_line(28), _line(28) + LIMIT)


def _brought_back(tmp_path) -> tuple[OneUpstreamStack, str, str]:
    """The fix landed as #11 (its first hunk) and #12 (its second), kept whole by one rebase
    across both, #11 reverted upstream and the fix brought back: (stack, #11, #12)."""
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": BASE, "pkg/b.py": b"b = 1\n"})
    stack.add_fix("fa", "pkg/a.py", BASE, BOTH)
    first = stack.commit({"pkg/a.py": GUARDED}, "Fix a part 1 (#11)", tag="v2a")
    second = stack.commit({"pkg/a.py": BOTH}, "Fix a part 2 (#12)", tag="v2")
    stack.cli("rebase", "--to", "v2")
    assert (stack.root / "series/up/upstreamed/fa.patch").is_file()
    stack.commit({"pkg/a.py": LIMITED},
                 f'Revert "Fix a part 1 (#11)"\n\nThis reverts commit {first}.', tag="v4")
    stack.cli("rebase", "--to", "v4", expect=1)
    return stack, first, second


def test_the_part_kept_names_the_commit_that_landed_it_and_its_revert_is_said(tmp_path):
    """It named #11, the commit of the hunk just reverted ("1 of its 2 hunks landed upstream
    in <#11>"); when upstream then reverted #12 too, status said nothing and exited 0: the
    limit guard was in no overlay and no longer upstream."""
    stack, first, second = _brought_back(tmp_path)
    _, out, _ = stack.cli("bring-back", "up/fa.patch")
    assert f"1 of its 2 hunks landed upstream in {second[:12]}" in out, out
    kept = stack.patch("up", "fa", "upstreamed").decode()
    assert f"Applied-Upstream: v4, commit:{second}" in kept and first not in kept, kept
    assert b"if limit < 0:" in stack.patch("up", "fa", "upstreamed")
    stack.cli("overlays")
    stack.cli("check")
    back = stack.commit({"pkg/a.py": BASE},
                        f'Revert "Fix a part 2 (#12)"\n\nThis reverts commit {second}.',
                        tag="v5")
    _, out, _ = stack.cli("status", "--against", "v5", expect=1)
    assert f"landed in {second[:12]} was reverted upstream in {back[:12]}" in out, out


def test_a_kept_part_naming_no_commit_is_still_said_when_taken_out(tmp_path):
    """A kept part whose record names no landing commit (the label alone, as a bring-back
    writes it when the commit cannot be told): its revert is still said, from the files."""
    stack, _, second = _brought_back(tmp_path)
    stack.cli("bring-back", "up/fa.patch")
    path = stack.root / "series/up/upstreamed/fa.patch"
    path.write_bytes(re.sub(rb"(Applied-Upstream: v4), commit:[0-9a-f]+", rb"\1",
                            path.read_bytes()))
    assert b"commit:" not in path.read_bytes()
    stack.cli("check")
    stack.commit({"pkg/a.py": BASE},
                 f'Revert "Fix a part 2 (#12)"\n\nThis reverts commit {second}.', tag="v5")
    _, out, err = stack.cli("status", "--against", "v5", expect=1)
    assert "up/fa.patch" in out and "reverted upstream" in out, out + err
