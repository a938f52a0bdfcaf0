"""Where upstream moved the series' files is one question for the whole series, whoever asks.

Series: p1 changes pkg/a.py, p2 pkg/d.txt, p3 pkg/b.py (a near copy of a.py). Upstream moves
a.py to pkg/c.py with a change and deletes b.py. Asked for the whole series, c.py is a.py's
(the nearer of the two) and b.py is gone: p3 obsolete. Asked for b.py alone, b.py is paired
with c.py and p3 carried there beside p1. `status --against`, `rebase --to` (also after a stop
and `--skip`) and `pr --onto` ask the whole series' question, so p3 is judged one way."""
from __future__ import annotations

import json
from pathlib import Path

from helpers.cli import run_subprocess
from helpers.project import add_git_upstream, make_project
from helpers.upstream import Upstream, dep3_patch
from patchforge.store.diff import make_file_diff


def _impl(changed: int | None = None) -> bytes:
    return "".join(f"def f{i}(x):\n    return x + {i * 10 if i == changed else i}\n\n"
                   for i in range(1, 21)).encode()


def _fixed(text: bytes, line: int, mark: str) -> bytes:
    return text.replace(f"return x + {line}\n".encode(), f"return x + {line}  # {mark}\n".encode())


D = b"one\ntwo\nthree\n"


def _setup(tmp_path: Path) -> tuple[Path, str]:
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
        (directory / f"{name}.patch").write_bytes(dep3_patch(make_file_diff(path, path, old,
                                                                            new)))
    (directory / "series").write_text("p1.patch\np2.patch\np3.patch\n")
    target = upstream.commit({"pkg/a.py": None, "pkg/c.py": _impl(20), "pkg/b.py": None,
                              "pkg/d.txt": D.replace(b"two", b"deux")}, "a -> c; drop b; d")
    return root, target


def _said(proc) -> str:
    return proc.stdout.decode(errors="replace") + proc.stderr.decode(errors="replace")


def _p3_status(root: Path, target: str) -> dict:
    proc = run_subprocess(root, "status", "--against", f"up={target}", "--json")
    assert proc.returncode in (0, 1), _said(proc)
    return {p["name"]: p for p in json.loads(proc.stdout)["patches"]}["p3.patch"]


def test_a_rebase_resumed_after_a_stop_judges_a_patch_as_status_does(tmp_path):
    """Before: status said p3 obsolete (b.py deleted, not renamed), and after p2's stop and
    `rebase --skip` the resumed rebase asked for b.py alone: "clean; follows pkg/b.py ->
    pkg/c.py", p3's fix written into c.py beside p1's. Now the resumed part stops on p3
    modify/delete, as a rebase with no stop before it does."""
    root, target = _setup(tmp_path)
    found = _p3_status(root, target)
    assert found["state"] == "obsolete", found
    rebase = run_subprocess(root, "rebase", "--to", f"up={target}")
    assert rebase.returncode == 3 and "p2.patch" in _said(rebase), _said(rebase)
    skip = run_subprocess(root, "rebase", "--skip")
    said = _said(skip)
    assert skip.returncode == 3, said
    assert "p3.patch: CONFLICT (modify/delete): pkg/b.py" in said, said
    assert "pkg/c.py" not in said, said


def test_pr_onto_a_target_judges_a_patch_as_status_does(tmp_path):
    """Before: `pr p3 --onto TARGET` asked for b.py alone and carried p3 into pkg/c.py (p1's
    file moved), where status says p3 obsolete; now it does not carry it there."""
    root, target = _setup(tmp_path)
    assert _p3_status(root, target)["state"] == "obsolete"
    proc = run_subprocess(root, "pr", "p3", "--onto", target, "--json")
    said = _said(proc)
    assert "pkg/c.py" not in said, said
