"""A file a fix makes inside a directory upstream moved stops, as `git rebase` stops.

The fix changes lib/ops/x.py (`from .helper import helper`) and adds lib/ops/helper.py;
upstream moves lib/ops to lib/kernels. The change to x.py follows the file's rename; the new
file, left at lib/ops/helper.py, sat in a directory the target no longer has, and x.py's import
failed in the image, every check green ("clean", exit 0). `git rebase` (merge-ort, with git's
default merge.directoryRenames=conflict) stops: "CONFLICT (file location): lib/ops/helper.py
added in ... inside a directory that was renamed in HEAD, suggesting it should perhaps be moved
to lib/kernels/helper.py". So do `status --against`, `rebase --to` (and its dry run), `pr
--onto` and `bring-back`, the one judge; a stop's worktree holds the file where git suggests.
The mirrors: a directory upstream did not empty, or emptied into two directories alike (no
majority: git's "directory rename split", a stop with nothing suggested)."""
from __future__ import annotations

import json
import os
from pathlib import Path

from helpers.cli import run_subprocess
from helpers.project import add_git_upstream, make_project
from helpers.upstream import Upstream, dep3_patch
from patchforge.store.diff import make_file_diff

X, HELPER = "lib/ops/x.py", "lib/ops/helper.py"
HELPER_TEXT = b"def helper():\n    return 1\n"


def _module(name: str) -> bytes:
    return "".join(f"def {name}_{i}(v):\n    return v + {i}\n\n" for i in range(40)).encode()


FILES = {f"lib/ops/{name}.py": _module(name) for name in "xyzw"}


def _said(proc) -> str:
    return proc.stdout.decode(errors="replace") + proc.stderr.decode(errors="replace")


def _setup(tmp_path: Path, moved: dict[str, str], *, more: bool = False,
           made: str = HELPER, also: dict[str, bytes] | None = None) -> tuple[Path, str]:
    """The project with addnew.patch (and, with `more`, more.patch changing the new file)
    pinned at the upstream's first commit; the target: the files of `moved` renamed. `made`:
    the path of the file addnew.patch makes; `also`: files the target writes besides."""
    upstream = Upstream(tmp_path / "upstream", {**FILES, "lib/ops/__init__.py": b""})
    root = make_project(tmp_path / "project")
    add_git_upstream(root, "up", upstream.path, upstream.base, install_root=None)
    directory = root / "series" / "up"
    directory.mkdir(parents=True, exist_ok=True)
    fixed = b"from .helper import helper\n" + FILES[X].replace(b"return v + 3\n",
                                                              b"return v + helper()\n")
    diff = make_file_diff(X, X, FILES[X], fixed) + make_file_diff(None, made, None,
                                                                  HELPER_TEXT)
    base = f"Base: {upstream.base}\n"
    (directory / "addnew.patch").write_bytes(dep3_patch(diff, extra=base))
    listed = "addnew.patch\n"
    if more:
        (directory / "more.patch").write_bytes(dep3_patch(make_file_diff(
            HELPER, HELPER, HELPER_TEXT, HELPER_TEXT.replace(b"1", b"2")), extra=base))
        listed += "more.patch\n"
    (directory / "series").write_text(listed)
    target = upstream.commit(also or {}, "move", renames=moved)
    return root, target


def _everything_to(new_dir: str) -> dict[str, str]:
    return {path: path.replace("lib/ops/", f"{new_dir}/")
            for path in [*FILES, "lib/ops/__init__.py"]}


def _status(root: Path, target: str) -> tuple[int, dict]:
    proc = run_subprocess(root, "status", "--against", f"up={target}", "--json")
    assert proc.returncode in (0, 1), _said(proc)
    return proc.returncode, {p["name"]: p for p in json.loads(proc.stdout)["patches"]}


def _diff_paths(patch: Path) -> list[str]:
    return [line.split(" b/")[-1] for line in patch.read_text().splitlines()
            if line.startswith("diff --git ")]


def test_a_new_file_in_a_directory_upstream_moved_stops_naming_where_git_suggests(tmp_path):
    """Before: status `applies` (exit 0), the rebase "clean" (exit 0), the patch creating
    lib/ops/helper.py beside a lib/kernels/x.py that imports it; now a stop naming
    lib/kernels/helper.py, whose worktree holds it there, and `--continue` makes it there; the
    way said to make it at the old path works too."""
    root, target = _setup(tmp_path, _everything_to("lib/kernels"))
    code, found = _status(root, target)
    patch = found["addnew.patch"]
    assert code == 1 and patch["state"] == "conflict" and patch["rebase"] == "stop", patch
    assert any("CONFLICT (file location): lib/ops/helper.py" in line
               and "lib/ops -> lib/kernels" in line and "moved to lib/kernels/helper.py" in line
               for line in patch["evidence"]), patch
    dry = run_subprocess(root, "rebase", "--to", f"up={target}", "--dry-run")
    assert "CONFLICT (file location)" in _said(dry), _said(dry)
    rebase = run_subprocess(root, "rebase", "--to", f"up={target}")
    said = _said(rebase)
    assert rebase.returncode == 3, said
    assert "CONFLICT (file location)" in said and "lib/kernels/helper.py" in said, said
    work = root / ".patchforge" / "work" / "up"
    assert (work / "lib/kernels/helper.py").read_bytes() == HELPER_TEXT
    assert not (work / HELPER).exists()
    done = run_subprocess(root, "rebase", "--continue")
    assert done.returncode == 0, _said(done)
    assert _diff_paths(root / "series" / "up" / "addnew.patch") == [
        "lib/kernels/helper.py", "lib/kernels/x.py"]
    # The way the stop names to make it at the old path instead.
    run_subprocess(root, "edit", "addnew", expect=0)
    (work / "lib/ops").mkdir(parents=True)
    (work / "lib/kernels/helper.py").rename(work / HELPER)
    run_subprocess(root, "add", HELPER, expect=0)
    run_subprocess(root, "refresh", expect=0)
    assert _diff_paths(root / "series" / "up" / "addnew.patch") == ["lib/kernels/x.py", HELPER]


def test_pr_onto_and_bring_back_stop_alike(tmp_path):
    """Before: `pr --onto` made a commit with lib/ops/helper.py, `bring-back` moved the fix
    back clean; now both stop on the file's location (the one judge)."""
    root, target = _setup(tmp_path, _everything_to("lib/kernels"))
    proc = run_subprocess(root, "pr", "addnew", "--onto", target, "--json")
    draft = json.loads(proc.stdout)
    assert proc.returncode != 0 and draft["state"] == "conflict" and draft["commit"] is None, \
        _said(proc)
    assert "CONFLICT (file location)" in draft["detail"], draft
    assert run_subprocess(root, "rebase", "--to", f"up={target}").returncode == 3
    run_subprocess(root, "rebase", "--skip", expect=1)  # a fix set aside: exit 1
    back = run_subprocess(root, "bring-back", "addnew")
    assert back.returncode == 3, _said(back)
    assert "CONFLICT (file location)" in _said(back), _said(back)
    assert (root / ".patchforge/work/up/lib/kernels/helper.py").read_bytes() == HELPER_TEXT
    run_subprocess(root, "bring-back", "--continue", expect=0)
    assert _diff_paths(root / "series" / "up" / "addnew.patch") == [
        "lib/kernels/helper.py", "lib/kernels/x.py"]


def test_a_later_fix_of_the_new_file_follows_it_where_the_stop_put_it(tmp_path):
    """more.patch changes lib/ops/helper.py, which addnew.patch makes: once the stop made it
    at lib/kernels/helper.py, more.patch follows it there (as `git rebase` follows it, a
    rename from the old commit to the new one), never stopped as a file that is nowhere."""
    root, target = _setup(tmp_path, _everything_to("lib/kernels"), more=True)
    assert run_subprocess(root, "rebase", "--to", f"up={target}").returncode == 3
    done = run_subprocess(root, "rebase", "--continue")
    assert done.returncode == 0, _said(done)
    assert _diff_paths(root / "series" / "up" / "more.patch") == ["lib/kernels/helper.py"]
    code, found = _status(root, target)
    assert code == 0 and found["more.patch"]["state"] == "applies", found


def test_a_directory_upstream_did_not_empty_is_no_move(tmp_path):
    """The mirror: lib/ops keeps a file (__init__.py): no directory was renamed, and the new
    file stays where the fix makes it, clean, as `git rebase` leaves it."""
    moved = {path: path.replace("lib/ops/", "lib/kernels/") for path in FILES}
    root, target = _setup(tmp_path, moved)
    code, found = _status(root, target)
    assert code == 0 and found["addnew.patch"]["state"] == "applies", found
    run_subprocess(root, "rebase", "--to", f"up={target}", expect=0)
    assert _diff_paths(root / "series" / "up" / "addnew.patch") == ["lib/kernels/x.py", HELPER]


def test_a_directory_split_alike_stops_with_no_place_suggested(tmp_path):
    """Two files to lib/a, two to lib/b (the empty __init__.py to lib/c): no majority, git's
    "directory rename split", a stop with no place suggested, the worktree holding the file
    where the fix makes it. Most of the files to one directory: that one is suggested."""
    moved = {"lib/ops/x.py": "lib/a/x.py", "lib/ops/y.py": "lib/a/y.py",
             "lib/ops/z.py": "lib/b/z.py", "lib/ops/w.py": "lib/b/w.py",
             "lib/ops/__init__.py": "lib/c/__init__.py"}
    root, target = _setup(tmp_path / "split", moved)
    code, found = _status(root, target)
    patch = found["addnew.patch"]
    assert code == 1 and patch["rebase"] == "stop", patch
    assert any("CONFLICT (directory rename split): lib/ops/helper.py" in line
               and "lib/a and lib/b" in line for line in patch["evidence"]), patch
    rebase = run_subprocess(root, "rebase", "--to", f"up={target}")
    assert rebase.returncode == 3, _said(rebase)
    assert (root / ".patchforge/work/up" / HELPER).read_bytes() == HELPER_TEXT

    moved["lib/ops/z.py"] = "lib/a/z.py"
    root, target = _setup(tmp_path / "most", moved)
    code, found = _status(root, target)
    assert code == 1 and any("moved to lib/a/helper.py" in line
                             for line in found["addnew.patch"]["evidence"]), found


def test_a_file_in_a_subdirectory_the_fix_makes_stops_too(tmp_path):
    """lib/ops/sub/new.py, no lib/ops/sub upstream: git leaves it under lib/ops without a word
    (it looks only at directories the fix adds files to directly); here it stops as a file
    made in lib/ops itself does, lib/kernels/sub/new.py suggested."""
    root, target = _setup(tmp_path, _everything_to("lib/kernels"), made="lib/ops/sub/new.py")
    code, found = _status(root, target)
    assert code == 1 and any("moved to lib/kernels/sub/new.py" in line
                             for line in found["addnew.patch"]["evidence"]), found


def test_a_rename_into_a_directory_upstream_moved_stops_and_stays_a_rename(tmp_path):
    """The fix renames lib/other/q.py to lib/ops/q.py (with a change): its destination is in
    the moved directory, a stop as `git rebase` stops ("renamed to"), and `--continue` writes
    the rename to lib/kernels/q.py, never a deletion and a new file."""
    q = "".join(f"q{i} = {i}\n" for i in range(21)).encode()
    upstream = Upstream(tmp_path / "upstream", {**FILES, "lib/other/q.py": q})
    root = make_project(tmp_path / "project")
    add_git_upstream(root, "up", upstream.path, upstream.base, install_root=None)
    directory = root / "series" / "up"
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "ren.patch").write_bytes(dep3_patch(make_file_diff(
        "lib/other/q.py", "lib/ops/q.py", q, q.replace(b"q3 = 3\n", b"q3 = 33\n"))))
    (directory / "series").write_text("ren.patch\n")
    target = upstream.commit({}, "move", renames={path: path.replace("lib/ops/", "lib/kernels/")
                                                  for path in FILES})
    code, found = _status(root, target)
    assert code == 1 and any(
        "CONFLICT (file location): lib/other/q.py renamed to lib/ops/q.py" in line
        and "moved to lib/kernels/q.py" in line for line in found["ren.patch"]["evidence"]), found
    assert run_subprocess(root, "rebase", "--to", f"up={target}").returncode == 3
    run_subprocess(root, "rebase", "--continue", expect=0)
    text = (directory / "ren.patch").read_text()
    assert "rename from lib/other/q.py\nrename to lib/kernels/q.py\n" in text, text
    assert "+q3 = 33" in text, text


def _only_adding(tmp_path: Path, files: dict[str, bytes], moved: dict[str, str],
                 deleted: list[str]) -> tuple[Path, str]:
    """A project whose one fix adds lib/ops/helper.py, over an upstream of `files`; the target:
    `moved` renamed and `deleted` removed."""
    upstream = Upstream(tmp_path / "upstream", files)
    root = make_project(tmp_path / "project")
    add_git_upstream(root, "up", upstream.path, upstream.base, install_root=None)
    directory = root / "series" / "up"
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "addnew.patch").write_bytes(dep3_patch(make_file_diff(None, HELPER, None,
                                                                       HELPER_TEXT)))
    (directory / "series").write_text("addnew.patch\n")
    return root, upstream.commit(dict.fromkeys(deleted), "move", renames=moved)


def test_renames_out_of_a_subdirectory_vote_for_the_directory_above(tmp_path):
    """lib/ops holds only impl/ (and a README upstream deletes): impl moved to
    lib/kernels/impl votes lib/ops -> lib/kernels too, as git counts it (it stopped nowhere:
    `applies`, exit 0). And three files of impl/ to lib/other/impl outvote x.py to
    lib/kernels: lib/other/helper.py is suggested, as git suggests it."""
    impl = {f"lib/ops/impl/{name}.py": _module(name) for name in "abc"}
    root, target = _only_adding(tmp_path / "only", {**impl, "lib/ops/README": b"ops\n"},
                                {path: path.replace("lib/ops/", "lib/kernels/") for path in impl},
                                ["lib/ops/README"])
    code, found = _status(root, target)
    assert code == 1 and any("moved to lib/kernels/helper.py" in line
                             for line in found["addnew.patch"]["evidence"]), found

    moved = {path: path.replace("lib/ops/", "lib/other/") for path in impl}
    moved[X] = "lib/kernels/x.py"
    root, target = _only_adding(tmp_path / "most", {**impl, X: FILES[X]}, moved, [])
    code, found = _status(root, target)
    assert code == 1 and any("moved to lib/other/helper.py" in line
                             for line in found["addnew.patch"]["evidence"]), found


def test_a_new_file_upstream_made_where_git_suggests_landed_there(tmp_path):
    """Upstream moved lib/ops and made lib/kernels/helper.py itself, the fix's bytes, and x.py's
    change too: the fix landed whole, dropped as landed (it was "taken", the file held at the
    dead path lib/ops/helper.py, and `--continue` kept a landed fix making a stray file)."""
    fixed = b"from .helper import helper\n" + FILES[X].replace(b"return v + 3\n",
                                                              b"return v + helper()\n")
    root, target = _setup(tmp_path, _everything_to("lib/kernels"),
                          also={"lib/kernels/helper.py": HELPER_TEXT, "lib/kernels/x.py": fixed})
    code, found = _status(root, target)
    assert found["addnew.patch"]["rebase"] == "drop", found
    run_subprocess(root, "rebase", "--to", f"up={target}", expect=0)
    assert (root / "series" / "up" / "upstreamed" / "addnew.patch").exists()


def test_a_later_fix_renaming_the_made_file_is_no_rename_rename(tmp_path):
    """more.patch renames lib/ops/helper.py, which addnew.patch makes: after the first stop put
    it in lib/kernels, the second stops on its destination's location alone, never told that
    upstream renamed a file upstream never had."""
    root, target = _setup(tmp_path, _everything_to("lib/kernels"))
    directory = root / "series" / "up"
    (directory / "more.patch").write_bytes(dep3_patch(make_file_diff(
        HELPER, "lib/ops/helpers.py", HELPER_TEXT, HELPER_TEXT.replace(b"1", b"2"))))
    (directory / "series").write_text("addnew.patch\nmore.patch\n")
    assert run_subprocess(root, "rebase", "--to", f"up={target}").returncode == 3
    second = run_subprocess(root, "rebase", "--continue")
    said = _said(second)
    assert second.returncode == 3 and "CONFLICT (file location)" in said, said
    assert "rename/rename" not in said, said
    run_subprocess(root, "rebase", "--continue", expect=0)
    text = (directory / "more.patch").read_text()
    assert "rename from lib/kernels/helper.py\nrename to lib/kernels/helpers.py\n" in text, text


def _executable_made_where_upstream_made_it(tmp_path: Path, ours: str = "100755",
                                            theirs: int = 0o644) -> tuple[Path, str]:
    """The fix makes lib/ops/run.sh executable (in mode `ours`); upstream moved lib/ops to
    lib/kernels and made lib/kernels/run.sh with the same bytes, not executable (`theirs`)."""
    upstream = Upstream(tmp_path / "upstream", FILES)
    root = make_project(tmp_path / "project")
    add_git_upstream(root, "up", upstream.path, upstream.base, install_root=None)
    directory = root / "series" / "up"
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "run.patch").write_bytes(dep3_patch(make_file_diff(
        None, "lib/ops/run.sh", None, SCRIPT, new_mode=ours),
        extra=f"Base: {upstream.base}\n"))
    (directory / "series").write_text("run.patch\n")
    made = upstream.path / "lib/kernels/run.sh"
    made.parent.mkdir(parents=True)
    made.write_bytes(SCRIPT)
    made.chmod(theirs)  # (the commit writes the bytes again, keeping the mode)
    target = upstream.commit({"lib/kernels/run.sh": SCRIPT}, "move",
                             renames={path: path.replace("lib/ops/", "lib/kernels/")
                                      for path in FILES})
    return root, target


SCRIPT = b"#!/bin/sh\necho hi\n"
SAME_BYTES = "lib/kernels/run.sh is in {target} too, the same bytes in mode 100644: what is " \
    "left of the fix there is its mode, 100755"


def test_an_executable_made_where_upstream_made_it_not_executable_is_no_landing(tmp_path):
    """No landing (it was dropped as landed, the exec bit lost, exit 0): a stop, as `git
    rebase` stops (add/add at lib/kernels/run.sh, the modes differing), saying that only the
    mode is left of the fix; status, the dry run and `pr --onto` say it alike."""
    root, target = _executable_made_where_upstream_made_it(tmp_path)
    code, found = _status(root, target)
    assert code == 1 and found["run.patch"]["rebase"] == "stop", found
    assert any(SAME_BYTES.format(target=target) in line
               for line in found["run.patch"]["evidence"]), found
    dry = run_subprocess(root, "rebase", "--to", f"up={target}", "--dry-run")
    assert dry.returncode == 1 and SAME_BYTES.format(target=target) in _said(dry), _said(dry)
    draft = run_subprocess(root, "pr", "run", "--onto", target, "--json")
    assert draft.returncode != 0 and json.loads(draft.stdout)["state"] == "conflict", \
        _said(draft)


def test_an_executable_made_where_upstream_made_it_not_executable_keeps_the_mode_there(
        tmp_path):
    """The stop's worktree holds upstream's lib/kernels/run.sh in the fix's mode, and
    `--continue` as it is keeps the mode change alone there (it held lib/ops/run.sh, the
    stop said the new path taken, and `--continue` made an executable copy in the directory
    the target no longer has); `bring-back` after `--skip` holds it alike."""
    root, target = _executable_made_where_upstream_made_it(tmp_path)
    stop = run_subprocess(root, "rebase", "--to", f"up={target}")
    assert stop.returncode == 3 and SAME_BYTES.format(target=target) in _said(stop), _said(stop)
    work = root / ".patchforge/work/up"
    assert not (work / "lib/ops").exists()
    assert os.access(work / "lib/kernels/run.sh", os.X_OK)
    assert (work / "lib/kernels/run.sh").read_bytes() == SCRIPT
    run_subprocess(root, "rebase", "--continue", expect=0)
    text = (root / "series" / "up" / "run.patch").read_text()
    assert "diff --git a/lib/kernels/run.sh b/lib/kernels/run.sh\nold mode 100644\n" \
        "new mode 100755\n" in text and "lib/ops" not in text, text
    code, found = _status(root, target)
    assert code == 0 and found["run.patch"]["state"] == "applies", found

    root, target = _executable_made_where_upstream_made_it(tmp_path / "brought back")
    assert run_subprocess(root, "rebase", "--to", f"up={target}").returncode == 3
    run_subprocess(root, "rebase", "--skip", expect=1)
    back = run_subprocess(root, "bring-back", "run")
    assert back.returncode == 3 and SAME_BYTES.format(target=target) in _said(back), \
        _said(back)
    assert os.access(root / ".patchforge/work/up/lib/kernels/run.sh", os.X_OK)


def test_a_plain_file_made_where_upstream_made_it_executable_landed_there(tmp_path):
    """The converse: the fix makes lib/ops/run.sh plain (100644, no mode a new file is given
    by choice), upstream made lib/kernels/run.sh with the same bytes, executable: landed, as at
    the fix's own path (it was a stop whose `--continue` as it is made upstream's script not
    executable)."""
    root, target = _executable_made_where_upstream_made_it(tmp_path, "100644", 0o755)
    code, found = _status(root, target)
    assert found["run.patch"]["rebase"] == "drop", found
    run_subprocess(root, "rebase", "--to", f"up={target}", expect=0)
    assert (root / "series" / "up" / "upstreamed" / "run.patch").exists()


def test_a_later_fix_of_a_made_file_that_landed_where_git_suggests_follows_it(tmp_path):
    """addnew.patch's helper.py landed at lib/kernels/helper.py (upstream made it, the same
    bytes); more.patch's change to it follows it there (it stopped, "not in the base either",
    with advice that dropped the change)."""
    root, target = _setup(tmp_path, _everything_to("lib/kernels"), more=True,
                          also={"lib/kernels/helper.py": HELPER_TEXT})
    code, found = _status(root, target)
    assert found["more.patch"]["state"] == "applies", found
