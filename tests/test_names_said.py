"""Names in what the commands say, as a user can take them back: a path with a space in a
hint quoted as a shell reads it, a name that is not UTF-8 written as git writes it, never
with the surrogate escapes Python reads such an argument with."""
from __future__ import annotations

import os
import shlex
import subprocess
import sys

from helpers.project import OneUpstreamStack, git_project


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
