"""patchforge.tempfiles does what the standard library's tempfile and shutil do for it: the same
modes, name shapes and places, the same removals and refusals, the same program found on
PATH. Each case is put to both, on the real file system."""
from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from helpers.env import REPO_ROOT
from patchforge import tempfiles


def _mode(path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_temporary_files_and_directories_are_made_as_tempfile_makes_them(tmp_path):
    fd, path = tempfiles.make_temp(tmp_path, "tmp_obj_")
    theirs_fd, theirs = tempfile.mkstemp(prefix="tmp_obj_", dir=tmp_path)
    try:
        for made in (path, theirs):
            assert os.path.isabs(made) and Path(made).parent == tmp_path
            assert re.fullmatch(r"tmp_obj_[a-z0-9_]{8}", Path(made).name)
        assert _mode(path) == _mode(theirs) == 0o600
        os.write(fd, b"written")
        assert Path(path).read_bytes() == b"written"
        assert os.get_inheritable(fd) is os.get_inheritable(theirs_fd) is False
    finally:
        os.close(fd)
        os.close(theirs_fd)
    made = tempfiles.make_temp_dir("patchforge-merge-", tmp_path)
    theirs = tempfile.mkdtemp(prefix="patchforge-merge-", dir=tmp_path)
    for directory in (made, theirs):
        assert os.path.isabs(directory) and Path(directory).parent == tmp_path
        assert re.fullmatch(r"patchforge-merge-[a-z0-9_]{8}", Path(directory).name)
    assert _mode(made) == _mode(theirs) == 0o700
    names = {tempfiles.make_temp(tmp_path, "x")[1] for _ in range(50)}
    assert len(names) == 50


@pytest.mark.parametrize("without_tmpfile", [False, True])
def test_a_temporary_file_has_no_name_and_leaves_nothing(tmp_path, monkeypatch, without_tmpfile):
    if without_tmpfile:  # a system without O_TMPFILE: a named file removed at once
        monkeypatch.delattr(os, "O_TMPFILE", raising=False)
    with tempfiles.temporary_file(tmp_path) as f:
        assert list(tmp_path.iterdir()) == []
        f.write(b"git's output")
        f.seek(0)
        assert f.read() == b"git's output"
        assert f.mode == "rb+"  # tempfile.TemporaryFile's "w+b"
        assert stat.S_IMODE(os.fstat(f.fileno()).st_mode) == 0o600
        assert os.fstat(f.fileno()).st_dev == os.stat(tmp_path).st_dev
    assert list(tmp_path.iterdir()) == []


def _tree(root: Path, outside: Path) -> None:
    (root / "a" / "b").mkdir(parents=True)
    (root / "a" / "b" / "f").write_bytes(b"1")
    (root / "a" / "g").write_bytes(b"2")
    (root / "h").write_bytes(b"3")
    (root / "link-to-dir").symlink_to(outside)
    (root / "a" / "link-to-file").symlink_to(outside / "kept")
    (root / "dangling").symlink_to(root / "nowhere")


def _outcome(remove, path: Path, **kw):
    try:
        remove(path, **kw)
        return None
    except OSError as exc:
        return type(exc), str(exc) if not exc.filename else None


@pytest.mark.parametrize("ignore", [False, True])
def test_a_tree_is_removed_as_shutil_rmtree_removes_it(tmp_path, ignore):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "kept").write_bytes(b"not ours")
    for name, remove in (("ours", tempfiles.remove_tree), ("theirs", shutil.rmtree)):
        root = tmp_path / name
        root.mkdir()
        _tree(root / "tree", outside)
        # A tree whose one directory cannot be read: an error for both, or what can go goes.
        _tree(root / "locked", outside)
        (root / "locked" / "a").chmod(0)
        (root / "link").symlink_to(root / "tree")
        outcomes = [_outcome(remove, root / "tree", ignore_errors=ignore),
                    _outcome(remove, root / "link", ignore_errors=ignore),
                    _outcome(remove, root / "missing", ignore_errors=ignore),
                    _outcome(remove, root / "tree" / "h" if not ignore else root / "x",
                             ignore_errors=ignore)]
        if os.geteuid() != 0:
            outcomes.append(_outcome(remove, root / "locked", ignore_errors=ignore))
        (root / "locked" / "a").chmod(0o755)
        left = sorted(str(p.relative_to(root)) for p in root.rglob("*"))
        if name == "ours":
            ours = (outcomes, left)
        else:
            assert (outcomes, left) == ours
    assert sorted(p.name for p in outside.iterdir()) == ["kept"]
    assert (outside / "kept").read_bytes() == b"not ours"


def test_a_program_is_found_on_path_as_shutil_which_finds_it(tmp_path):
    dirs = [tmp_path / n for n in ("empty", "plain", "exe", "exe2")]
    for d in dirs:
        d.mkdir()
    (tmp_path / "plain" / "tool").write_bytes(b"not executable")
    (tmp_path / "empty" / "tool").mkdir()  # a directory by the name: not a program
    for d in dirs[2:]:
        (d / "tool").write_bytes(b"#!/bin/sh\n")
        (d / "tool").chmod(0o755)
    path = os.pathsep.join(map(str, dirs))
    cases = [("tool", path), ("tool", os.pathsep.join(map(str, dirs[:2]))), ("tool", ""),
             ("none", path), (str(dirs[2] / "tool"), ""), (str(dirs[1] / "tool"), path),
             ("tool", f"{dirs[3]}{os.pathsep}{dirs[3]}{os.pathsep}{dirs[2]}")]
    for name, where in cases:
        assert tempfiles.which(name, path=where) == shutil.which(name, path=where), (name, where)


def _in_a_process(code: str, tmpdir: str | None) -> str:
    env = {k: v for k, v in os.environ.items() if k not in ("TMPDIR", "TEMP", "TMP")}
    if tmpdir is not None:
        env["TMPDIR"] = tmpdir
    env["PYTHONPATH"] = str(REPO_ROOT)
    return subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True,
                          env=env, check=True).stdout


@pytest.mark.parametrize("kind", ["set", "missing", "unset"])
def test_the_temporary_directory_is_the_one_tempfile_finds(tmp_path, kind):
    """Found without loading tempfile (a process with no site hooks), as tempfile finds it:
    $TMPDIR when a file can be made there, else the next candidate."""
    tmpdir = {"set": str(tmp_path), "missing": str(tmp_path / "gone"), "unset": None}[kind]
    ours = _in_a_process("import sys\nfrom patchforge import tempfiles\n"
                         "print(tempfiles.temp_root(), 'tempfile' in sys.modules)", tmpdir)
    theirs = _in_a_process("import tempfile\nprint(tempfile.gettempdir())", tmpdir)
    assert ours.split() == [theirs.strip(), "False"]
    assert list(tmp_path.iterdir()) == []  # its trial file is removed


def test_a_program_that_set_tempfile_tempdir_is_obeyed(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    assert tempfiles.temp_root() == str(tmp_path)
    directory = tempfiles.TemporaryDirectory("patchforge-index-")
    with directory as name:
        assert Path(name).parent == tmp_path
        (Path(name) / "index").write_bytes(b"x")
    assert not Path(name).exists()
