"""`bring-back` asks where upstream moved the series' files for the whole series, as status does.

Series: p1 changes pkg/a.py, p2 pkg/d.txt, p3 pkg/b.py (a near copy of a.py). Upstream moves
a.py to pkg/c.py with a change, deletes b.py and changes d.txt under p2. `status --against`
asks for the whole series: c.py is a.py's (the nearer of the two), b.py is gone, p3 obsolete.
The rebase stops on p2 and, skipped, on p3 (modify/delete); both skipped, they wait in
skipped/. `bring-back p3` asked for b.py alone: paired with c.py, p3 was "clean; follows
pkg/b.py -> pkg/c.py" and written into c.py beside p1. The rebase now records the series' gone
files with the fix it sets aside (its history event), and bring-back asks with them."""
from __future__ import annotations

import json
from pathlib import Path

from helpers.cli import run_subprocess
from helpers.project import add_git_upstream, make_project
from helpers.upstream import Upstream, dep3_patch
from patchforge.formats.schemas import validation_errors
from patchforge.store.diff import make_file_diff
from test_renames_series_wide import D, _fixed, _impl, _p3_status, _said


def _setup(tmp_path: Path) -> tuple[Path, str]:
    """test_renames_series_wide's series, each patch with the `Base` the series' patches have
    (a fix set aside keeps the one it was made on)."""
    upstream = Upstream(tmp_path / "upstream", {"pkg/a.py": _impl(), "pkg/b.py": _impl(9),
                                                "pkg/d.txt": D})
    root = make_project(tmp_path / "project")
    add_git_upstream(tmp_path / "project", "up", upstream.path, upstream.base, install_root=None)
    directory = root / "series" / "up"
    directory.mkdir(parents=True, exist_ok=True)
    for name, path, old, new in (
            ("p1", "pkg/a.py", _impl(), _fixed(_impl(), 3, "p1")),
            ("p2", "pkg/d.txt", D, D.replace(b"two", b"TWO")),
            ("p3", "pkg/b.py", _impl(9), _fixed(_impl(9), 15, "p3"))):
        (directory / f"{name}.patch").write_bytes(dep3_patch(
            make_file_diff(path, path, old, new), extra=f"Upstream: up\nBase: {upstream.base}\n"))
    (directory / "series").write_text("p1.patch\np2.patch\np3.patch\n")
    target = upstream.commit({"pkg/a.py": None, "pkg/c.py": _impl(20), "pkg/b.py": None,
                              "pkg/d.txt": D.replace(b"two", b"deux")}, "a -> c; drop b; d")
    return root, target


def _set_aside(root: Path, target: str) -> None:
    rebase = run_subprocess(root, "rebase", "--to", f"up={target}")
    assert rebase.returncode == 3 and "p2.patch" in _said(rebase), _said(rebase)
    skip = run_subprocess(root, "rebase", "--skip")
    assert skip.returncode == 3 and "p3.patch: CONFLICT (modify/delete): pkg/b.py" in \
        _said(skip), _said(skip)
    done = run_subprocess(root, "rebase", "--skip")
    assert done.returncode in (0, 1), _said(done)
    assert (root / "series/up/skipped/p3.patch").is_file()


def _history(root: Path) -> list[dict]:
    return [json.loads(line) for line in (root / "series/history.jsonl").read_text().splitlines()
            if line.strip()]


def test_bring_back_judges_a_fix_where_two_series_files_near_one_new_file_as_status_does(
        tmp_path):
    root, target = _setup(tmp_path)
    assert _p3_status(root, target)["state"] == "obsolete"
    _set_aside(root, target)
    back = run_subprocess(root, "bring-back", "p3")
    said = _said(back)
    # As the rebase stopped on it: b.py deleted upstream, never carried into a.py's new file.
    assert "pkg/c.py" not in said, said
    assert back.returncode == 3, said
    assert "modify/delete" in said and "pkg/b.py" in said, said
    assert not (root / "series/up/p3.patch").exists()
    skipped = [e for e in _history(root) if e.get("event") == "skipped"
               and e.get("patch") == "p3.patch"]
    assert skipped and skipped[-1]["series_gone"] == ["pkg/a.py", "pkg/b.py"], skipped
    # (what `rebase --json` printed, kept for `status --html`)
    summary = json.loads((root / ".patchforge/last-rebase.json").read_text())
    assert validation_errors({**summary, "schema_version": 1}, "rebase") == []
    assert {p["name"]: p.get("series_gone") for p in summary["patches"]}["p3.patch"] == \
        ["pkg/a.py", "pkg/b.py"], summary
    abort = run_subprocess(root, "bring-back", "--abort")
    assert abort.returncode == 0, _said(abort)
    assert (root / "series/up/skipped/p3.patch").is_file()


def test_a_fix_set_aside_before_the_record_is_still_brought_back(tmp_path):
    """A history written before the rebase recorded the series' gone files (no `series_gone`
    on the event): bring-back asks for the fix's own files, as it did, and reads the history
    without a word."""
    root, target = _setup(tmp_path)
    _set_aside(root, target)
    path = root / "series/history.jsonl"
    events = _history(root)
    for event in events:
        event.pop("series_gone", None)
    path.write_text("".join(json.dumps(e, sort_keys=True) + "\n" for e in events))
    back = run_subprocess(root, "bring-back", "p3")
    said = _said(back)
    assert back.returncode in (0, 3) and "Traceback" not in said, said
