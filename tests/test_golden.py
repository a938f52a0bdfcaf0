"""Golden files for the outputs people read: the status table, the rebase summary with its
range-diff, and the generated ledger (series/PATCHES.md), on one fixed scenario.

The scenario is deterministic (fixed commit dates, fixed patch dates), so every byte is
compared, commit ids included. After an intended change of an output, regenerate with
`PATCHFORGE_UPDATE_GOLDEN=1 python3 -m pytest tests/test_golden.py` and review the diff.
"""
from __future__ import annotations

import pytest

from helpers.golden import check_golden
from helpers.project import Stack
from helpers.upstream import BASE, Upstream, with_lines


@pytest.fixture
def scenario(tmp_path, monkeypatch):
    """A stack of four patches on a real upstream, and the upstream's next commit: one patch
    landed there, one meets moved code (offset), one a changed context (3-way merge), one is
    untouched."""
    for key in ("GIT_AUTHOR_DATE", "GIT_COMMITTER_DATE"):
        monkeypatch.setenv(key, "2026-01-02T03:04:05+00:00")
    monkeypatch.setenv("PATCHFORGE_DATE", "2026-01-02")
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1767323045")
    upstream = Upstream(tmp_path / "up", {"pkg/mod.py": BASE, "pkg/other.py": b"x = 1\n"})
    stack = Stack(tmp_path / "project")
    stack.add_upstream("up", upstream)
    stack.add_patch("up", "untouched", {"pkg/other.py": b"x = 1\ny = 2\n"},
                    description="Add y next to x")
    stack.add_patch("up", "moved", {"pkg/mod.py": with_lines({25: b"def f25():\n    return -25\n\n"})},
                    description="f25 returns a negative")
    stack.add_patch("up", "merged", {"pkg/mod.py": with_lines({10: b"def f10():\n    return -10\n\n"})},
                    description="f10 returns a negative")
    landed = {3: b"def f3():\n    return 'three'\n\n"}
    stack.add_patch("up", "landed", {"pkg/mod.py": with_lines(landed)},
                    description="f3 returns its name")
    theirs = with_lines({**landed, 11: b"def f11():\n    return 11  # upstream\n\n"})
    new = upstream.commit({"pkg/mod.py": b"# header\n# two lines\n" + theirs}, "upstream: v2")
    return stack, new, str(tmp_path)


def test_status_table(scenario):
    stack, new, tmp = scenario
    _, out, _ = stack.cli("status", "--against", f"up={new}", expect=None)
    check_golden("status.txt", out.replace(tmp, "<tmp>"))


def test_rebase_summary_range_diff_and_ledger(scenario):
    stack, new, tmp = scenario
    _, out, _ = stack.cli("rebase", "--to", f"up={new}")
    check_golden("rebase.txt", out.replace(tmp, "<tmp>"))
    ledger = (stack.root / "series" / "PATCHES.md").read_text()
    check_golden("PATCHES.md", ledger.replace(tmp, "<tmp>"))
