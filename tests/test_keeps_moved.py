"""A `Keeps:` line on a file the upstream moved follows the move, as the patch's diff does: the
rebase writes the new path into the moved patch, and `status --against` judges it the same way.
It stopped on the line ("a.py: ... is not in the result") with nothing a resolution could do.

Real git upstreams (the move is a git rename), the commands as a user runs them."""
from __future__ import annotations

import json
from pathlib import Path

from helpers.upstream import BASE_LINES, with_lines
from test_skipped_names import APyProject

KEEPS = "Keeps: a.py: return 100"


class Project(APyProject):
    """fix.patch changes a.py's `return 10` to `return 100` and keeps that line."""

    def __init__(self, tmp_path: Path) -> None:
        super().__init__(tmp_path)
        self.cli("new", "fix", "--file", "a.py")
        (self.work / "a.py").write_bytes(with_lines({10: b"def f10():\n    return 100\n\n"}))
        self.cli("refresh")
        path = self.root / "series" / "up" / "fix.patch"
        path.write_bytes(path.read_bytes().replace(
            b"Upstream-Status: Pending\n", f"Upstream-Status: Pending\n{KEEPS}\n".encode()))
        self.cli("check")


def test_a_rebase_carries_a_keeps_line_over_the_upstream_move_of_its_file(tmp_path):
    project = Project(tmp_path)
    project.up.commit({"a.py": None, "pkg/a.py": with_lines({})}, "v2: into pkg/", tag="v2")

    rc, out, err = project.cli("status", "--against", "v2", "--json")
    doc = json.loads(out)
    entry = doc["patches"][0]
    assert entry["state"] == "applies" and not entry["needs_attention"], entry
    assert "Keeps line follows a.py -> pkg/a.py" in entry["evidence"]

    rc, out, err = project.cli("rebase", "--to", "v2")
    patch = project.patch("fix")
    assert b"Keeps: pkg/a.py: return 100\n" in patch and b"a.py: return 100\n" not in \
        patch.replace(b"pkg/a.py: return 100\n", b"")
    assert b"+++ b/pkg/a.py" in patch
    rc, out, err = project.cli("check")
    assert "all hold" in out
    project.cli("lint")


def test_a_resolved_stop_on_a_moved_file_carries_its_keeps_line_too(tmp_path):
    project = Project(tmp_path)
    # Moved and changed beside the fix's line: the merge stops; the user resolves it.
    moved = with_lines({9: BASE_LINES[9].replace(b"9\n", b"9  # v2\n"),
                        10: b"def f10():\n    return 10  # v2\n\n"})
    project.up.commit({"a.py": None, "pkg/a.py": moved}, "v2: into pkg/", tag="v2")
    rc, out, err = project.cli("rebase", "--to", "v2", expect=3)
    assert "pkg/a.py" in out + err
    (project.work / "pkg" / "a.py").write_bytes(
        moved.replace(b"return 10  # v2\n", b"return 100\n"))
    project.cli("rebase", "--continue")
    patch = project.patch("fix")
    assert b"Keeps: pkg/a.py: return 100\n" in patch
    rc, out, err = project.cli("check")
    assert "all hold" in out
