"""A fix undone in quilt's tree and refreshed there (`quilt refresh` writes its header alone,
"Nothing in patch"): `import quilt DIR --update` refuses it, and its hint is the way to drop the
fix. Before, the hint said to take the patch's line out of DIR/series by hand: followed so while
quilt has the patch applied (as `quilt pop NAME` + edit + `quilt refresh` + `quilt push -a`
leave it), quilt's tree no longer matched its series ("The series file no longer matches the
applied patches. Please run 'quilt pop -a'."). Now the hint names quilt's own commands, run
here as written, and quilt's tree stays whole. Real git upstream, real quilt."""
from __future__ import annotations

import os
import re
import subprocess

from helpers.env import need_tool
from helpers.git import git
from helpers.project import OneUpstreamStack

BASE = b"".join(b"value_%d = %d\n" % (k, k) for k in range(1, 21))


def quilt(checkout, env, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["quilt", *args], cwd=checkout, env=env, capture_output=True)


def test_the_hint_for_a_patch_quilt_emptied_keeps_quilts_tree_whole(tmp_path, monkeypatch):
    need_tool("quilt")
    stack = OneUpstreamStack(tmp_path / "stack", {"pkg/a.py": BASE})
    stack.add_fix("fa", "pkg/a.py", BASE, BASE.replace(b"value_3 = 3\n", b"value_3 = 30\n"))
    with_fa = BASE.replace(b"value_3 = 3\n", b"value_3 = 30\n")
    stack.add_fix("fb", "pkg/a.py", with_fa, with_fa.replace(b"value_15 = 15\n",
                                                             b"value_15 = 150\n"))
    exported = tmp_path / "q"
    stack.cli("export", "--quilt", str(exported))
    checkout = tmp_path / "checkout"
    git(tmp_path, "clone", "-q", str(stack.up), str(checkout))
    git(checkout, "checkout", "-q", "v1")
    rc = tmp_path / "quiltrc"
    rc.write_text("")
    env = dict(os.environ, QUILT_PATCHES=str(exported), QUILTRC=str(rc), EDITOR="false")

    # fa undone in quilt: popped to, put back as at the pin, refreshed, the rest pushed again.
    assert quilt(checkout, env, "push", "-a").returncode == 0
    assert quilt(checkout, env, "pop", "fa.patch").returncode == 0
    (checkout / "pkg/a.py").write_bytes(BASE)
    assert b"Nothing in patch" in quilt(checkout, env, "refresh").stdout
    assert quilt(checkout, env, "push", "-a").returncode == 0

    _, _, err = stack.cli("import", "quilt", str(exported), "--update", expect=2)
    assert "fa.patch: quilt's patch holds no change" in err, err
    hint = err[err.index("hint:"):]
    # The quilt commands the hint names, in its order, before the parenthesis' alternative.
    steps = re.findall(r"`(quilt [^`]*)`", hint.split("(")[0])
    assert steps == ["quilt pop fa.patch", "quilt delete fa.patch", "quilt push -a"], hint
    for step in steps:
        done = quilt(checkout, env, *step.split()[1:])
        assert done.returncode == 0, (step, done.stdout, done.stderr)
    assert "--delete" in hint
    stack.cli("import", "quilt", str(exported), "--update", "--delete")
    assert stack.series("up") == ["fb.patch"]
    assert (stack.root / "series/up/deleted/fa.patch").exists()

    # quilt's tree is whole: its series and its applied patches agree, fb alone applied.
    applied = quilt(checkout, env, "applied")
    assert applied.returncode == 0, applied
    assert b"no longer matches" not in applied.stdout + applied.stderr, applied
    assert applied.stdout.decode().split() == [str(exported / "fb.patch")] or \
        applied.stdout.decode().split() == ["fb.patch"], applied.stdout
    assert (checkout / "pkg/a.py").read_bytes() == BASE.replace(b"value_15 = 15\n",
                                                                b"value_15 = 150\n")
