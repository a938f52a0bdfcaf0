"""Where upstream moved a series file, found as `git rebase` finds it, whatever the range.

git's rename detection over two whole trees gives up pairing files that are not identical
when the range deletes and adds more than its limit (diff.renameLimit, 1000 x 1000 by
default): a file moved with a change among them read "gone upstream (deleted, not renamed)"
and its patch obsolete. `git rebase` (merge-ort) pairs only the files the commits it replays
change, against every added file; `status --against` and `rebase --to` do the same, and no
configuration of the user's changes the answer."""
from __future__ import annotations

import json
from pathlib import Path

from helpers.cli import run_subprocess
from helpers.project import add_git_upstream, make_project
from helpers.upstream import ATTENTION, CLAMP, INDPTR, Upstream, dep3_patch
from patchforge.store.diff import make_file_diff

MAIN = "pkg/attn.py"
# Another base name: git pairs a file moved under its own base name even over the limit.
MOVED = "pkg/kernels/attention_impl.py"
FIX1_OLD, FIX1_NEW = INDPTR
FIX2_OLD, FIX2_NEW = CLAMP


def _project(tmp_path: Path, upstream: Upstream) -> Path:
    root = make_project(tmp_path / "project")
    add_git_upstream(tmp_path / "project", "up", upstream.path, upstream.base, install_root=None)
    directory = root / "series" / "up"
    directory.mkdir(parents=True, exist_ok=True)
    fixed = ATTENTION.replace(FIX1_OLD, FIX1_NEW).replace(FIX2_OLD, FIX2_NEW)
    (directory / "fix.patch").write_bytes(dep3_patch(make_file_diff(MAIN, MAIN, ATTENTION,
                                                                    fixed)))
    (directory / "series").write_text("fix.patch\n")
    return root


def _others(prefix: str, count: int) -> dict[str, bytes | None]:
    """`count` small files, each its own text, unlike any other and unlike the moved one."""
    return {f"{prefix}/f{i:04d}.txt": f"{prefix} {i}\n{i * 7919 % 10007}\n".encode()
            for i in range(count)}


def _moved_with_a_change() -> bytes:
    return ATTENTION.replace(b"import", b"import  ", 1) + b"\n# moved under kernels/\n"


def _the_fixs_state(root: Path, target: str, env: dict[str, str] | None = None) -> dict:
    proc = run_subprocess(root, "status", "--against", f"up={target}", "--json", env=env)
    assert proc.returncode in (0, 1), proc.stderr.decode(errors="replace")
    [found] = json.loads(proc.stdout)["patches"]
    return found


def test_a_file_moved_in_a_range_over_gits_rename_limit_is_followed(tmp_path):
    """1,001 files deleted and 1,001 added beside the series' file, moved under another name
    with a change: before, "gone upstream (deleted, not renamed)" and the fix obsolete
    (exit 1); now the move is followed and the fix applies there, as `git rebase` has it."""
    upstream = Upstream(tmp_path / "upstream", {MAIN: ATTENTION, **_others("old", 1001)})
    root = _project(tmp_path, upstream)
    target = upstream.commit({MAIN: None, MOVED: _moved_with_a_change(),
                              **{path: None for path in _others("old", 1001)},
                              **_others("new", 1001)}, "move the kernels")
    found = _the_fixs_state(root, target)
    assert found["state"] == "applies", found
    assert not any("deleted, not renamed" in line for line in found["evidence"]), found
    rebase = run_subprocess(root, "rebase", "--to", f"up={target}")
    assert rebase.returncode == 0, rebase.stderr.decode(errors="replace")
    overlay = run_subprocess(root, "status")
    assert overlay.returncode == 0, overlay.stderr.decode(errors="replace")
    patch = (root / "series" / "up" / "fix.patch").read_bytes()
    assert f"+++ b/{MOVED}".encode() in patch and FIX2_NEW in patch


def test_the_users_rename_settings_do_not_change_the_answer(tmp_path):
    """A user's git configuration asking for no rename detection (diff.renames=false) or a
    tiny limit (diff.renameLimit=1), in ~/.gitconfig, XDG's or GIT_CONFIG_GLOBAL, leaves the
    answer as it is without them: the move followed."""
    upstream = Upstream(tmp_path / "upstream", {MAIN: ATTENTION, **_others("old", 3)})
    root = _project(tmp_path, upstream)
    target = upstream.commit({MAIN: None, MOVED: _moved_with_a_change(),
                              **{path: None for path in _others("old", 3)},
                              **_others("new", 3)}, "move the kernels")
    settings = b"[diff]\n\trenames = false\n\trenameLimit = 1\n[merge]\n\trenameLimit = 1\n" \
               b"\trenames = false\n"
    home = tmp_path / "home"
    (home / ".config" / "git").mkdir(parents=True)
    for path in (home / ".gitconfig", home / ".config" / "git" / "config",
                 tmp_path / "global.gitconfig"):
        path.write_bytes(settings)
    # (Asked first: what a command keeps in the cache is read back by the next.)
    configured = _the_fixs_state(root, target, env={
        "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"),
        "GIT_CONFIG_GLOBAL": str(tmp_path / "global.gitconfig")})
    assert configured["state"] == "applies", configured
    assert configured == _the_fixs_state(root, target)
