"""Names in what the commands say, as a user can take them back: a path in a hint quoted
as a shell reads it back (a space, a name that is not UTF-8), a name that is not UTF-8 in a
message written as git writes it, never with the surrogate escapes Python reads such an
argument with."""
from __future__ import annotations

import os
import shlex
import subprocess
import sys

import pytest

from helpers.project import OneUpstreamStack, add_patch_file, git_project


def test_a_name_that_is_not_utf8_is_said_as_git_quotes_it(tmp_path):
    """`bring-back $'f\\xffb'` (and `edit`, `delete`) said "no skipped fix named
    'f\\udcffb'", Python's surrogate escape of the byte. The name is said as git says such a
    name: "f\\377b"."""
    root, _ = git_project(tmp_path)
    for command in ("bring-back", "edit", "delete"):
        proc = subprocess.run([sys.executable, "-m", "patchforge", "--root", str(root),
                               command, b"f\xffb"], capture_output=True,
                              env=dict(os.environ, LC_ALL="C.UTF-8"))
        assert proc.returncode == 2, (command, proc.stderr)
        assert b'named "f\\377b"' in proc.stderr, (command, proc.stderr)
        assert b"udcff" not in proc.stderr, (command, proc.stderr)


def test_a_rebase_stop_hint_quotes_a_path_with_a_space(tmp_path):
    """A rebase stopped on `pkg/a b.py` in a project under `my stacks/` said "edit pkg/a b.py
    in .../my stacks/project/.patchforge/work/up": neither could be pasted into a shell.
    Both are quoted as shlex.quote quotes them."""
    old = b"".join(b"line%d\n" % i for i in range(1, 11))
    stack = OneUpstreamStack(tmp_path / "my stacks", {"pkg/a b.py": old})
    stack.add_fix("fa", "pkg/a b.py", old, old.replace(b"line5\n", b"line5 ours\n"))
    stack.commit({"pkg/a b.py": old.replace(b"line5\n", b"line5 theirs\n")}, "Change 5",
                 tag="v2")
    _, _, err = stack.cli("rebase", "--to", "v2", expect=3)
    work = stack.root / ".patchforge/work/up"
    assert f"hint: edit 'pkg/a b.py' in {shlex.quote(str(work))} (`patchforge add PATH`" \
        in err, err
    assert "'" in shlex.quote(str(work))


@pytest.mark.parametrize("raw", [b"pkg/f\xffb.py", b"pkg/it's a f\xffb.py"])
def test_a_rebase_stop_hint_says_a_name_that_is_not_utf8_as_a_shell_reads_it_back(tmp_path,
                                                                                   raw):
    """A rebase stopped on `pkg/f\\xffb.py` hinted "edit "pkg/f\\377b.py" in ...", git's
    quoting, which a shell reads back as the four characters `\\377`, not the byte: pasted
    into bash (`cat "pkg/f\\377b.py"`), no such file. It is said as bash, zsh and ksh read it
    back ($'pkg/f\\377b.py'), and the hint's words, given to bash, name the worktree's file
    (a quote and spaces in the name too)."""
    name = os.fsdecode(raw)
    old = b"".join(b"line%d\n" % i for i in range(1, 11))
    stack = OneUpstreamStack(tmp_path / "my stacks", {name: old})
    stack.add_fix("fa", name, old, old.replace(b"line5\n", b"line5 ours\n"))
    stack.commit({name: old.replace(b"line5\n", b"line5 theirs\n")}, "Change 5", tag="v2")
    _, _, err = stack.cli("rebase", "--to", "v2", expect=3)
    work = stack.root / ".patchforge/work/up"
    if raw == b"pkg/f\xffb.py":
        assert f"hint: edit $'pkg/f\\377b.py' in {shlex.quote(str(work))} (" in err, err
        # The error line above the hint says the name the same way, never with the
        # replacement character the byte printed as it is shows as.
        assert "up/fa.patch: conflict in $'pkg/f\\377b.py'" in err, err
        assert "\ufffd" not in err, err
    said = err.split("hint: edit ", 1)[1].split(" (`patchforge add", 1)[0]
    path, directory = said.split(" in ", 1)
    # Pasted into bash as the hint says them: the file the stop left to edit.
    proc = subprocess.run(["bash", "-c", f"cd {directory} && cat {path}"],
                          capture_output=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == (work / name).read_bytes()
    assert b"<<<<<<<" in proc.stdout


def _deleting_diff(tmp_path, raw: bytes, content: bytes) -> bytes:
    """git's diff deleting the file `raw` (its name's bytes) of `content`."""
    repo = tmp_path / "deleting"
    repo.mkdir()
    (repo / "pkg").mkdir()
    path = os.fsencode(repo) + b"/" + raw
    with open(path, "wb") as handle:
        handle.write(content)
    for args in (["init", "-q"], ["add", "-A"],
                 ["-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", "f"]):
        subprocess.run(["git", *args], cwd=repo, check=True)
    os.remove(path)
    return subprocess.run(["git", "diff"], cwd=repo, check=True, capture_output=True).stdout


@pytest.mark.parametrize("kind", ["modify/delete", "add/add"])
def test_a_modify_delete_or_add_add_stop_says_a_name_that_is_not_utf8_as_its_hint(tmp_path,
                                                                                  kind):
    """A rebase stopped on `pkg/f\\xffb.py` deleted by the fix and changed upstream (or made by
    both) said "CONFLICT (modify/delete): pkg/f\\ufffdb.py ...", a replacement character for
    the byte, where a conflict in the file says $'pkg/f\\377b.py'. Said the same way."""
    raw = b"pkg/f\xffb.py"
    name = os.fsdecode(raw)
    old = b"".join(b"line%d\n" % i for i in range(1, 11))
    if kind == "modify/delete":
        stack = OneUpstreamStack(tmp_path / "stack", {name: old, "a.py": b"a\n"})
        data = (f"Description: drop it\nAuthor: T <t@example.com>\nUpstream-Status: Pending\n"
                f"Upstream: up\nBase: {stack.base}\n\n---\n").encode() + \
            _deleting_diff(tmp_path, raw, old)
        add_patch_file(stack.root, "up", "fd.patch", data)
        stack.commit({name: old.replace(b"line5\n", b"line5 theirs\n")}, "Change 5", tag="v2")
    else:
        stack = OneUpstreamStack(tmp_path / "stack", {"a.py": b"a\n"})
        stack.add_fix("fd", name, None, old)
        stack.commit({name: old.replace(b"line5\n", b"line5 theirs\n")}, "Add it", tag="v2")
    _, _, err = stack.cli("rebase", "--to", "v2", expect=3)
    assert f"CONFLICT ({kind}): $'pkg/f\\377b.py' " in err, err
    assert "\ufffd" not in err, err
    if kind == "modify/delete":
        # The way that keeps the deletion, pasted into bash as the stop says it.
        rm = err.split("to keep the deletion, `", 1)[1].split("`", 1)[0]
        assert rm == "patchforge rm $'pkg/f\\377b.py'", err
        proc = subprocess.run(["bash", "-c", f"cd {shlex.quote(str(stack.root))} && "
                               f"{shlex.quote(sys.executable)} -m {rm}"], capture_output=True)
        assert proc.returncode == 0, proc.stderr
        stack.cli("rebase", "--continue")
        assert b"+++ /dev/null" in stack.patch("up", "fd")
