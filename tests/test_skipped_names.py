"""The name of a fix a rebase set aside in skipped/ stays its own: `rename` and `new` refuse it,
and `delete NAME` never guesses between a patch of the series and a skipped fix of the same
name (a project made so by hand or by an older version). Otherwise `status`'s advice for the
skipped fix, `patchforge delete NAME`, took the live fix out of the series and the overlays.

Real git upstreams, the commands one after another as a user runs them."""
from __future__ import annotations

from pathlib import Path

import pytest

from helpers.snapshot import snapshot
from helpers.upstream import BASE_LINES, Upstream, with_lines
from test_modify_delete import Project as Base


class APyProject(Base):
    """A standalone project on an upstream of one file, a.py (30 small functions), at v1."""

    def __init__(self, tmp_path: Path) -> None:
        self.up = Upstream(tmp_path / "up", {"a.py": with_lines({})}, tag="v1")
        self.root = tmp_path / "project"
        self.cli("init", "--standalone", str(self.root))
        self.cli("upstream", "add", "up", "--git", str(self.up.path), "--at", "v1",
                 "--install-root", "/opt/site")


class Project(APyProject):
    """p1, p2, p3 on a.py (or the `names` given); v2 changes p2's line, a rebase onto it sets
    p2 aside (skipped/)."""

    def __init__(self, tmp_path: Path, names: tuple[str, str, str] = ("p1", "p2", "p3")) -> None:
        super().__init__(tmp_path)
        self.names = names
        text = with_lines({})
        for line, name in zip((5, 10, 20), names):
            self.cli("new", name, "--file", "a.py")
            text = text.replace(b"return %d\n" % line, b"return %d00\n" % line)
            (self.work / "a.py").write_bytes(text)
            self.cli("refresh")
        self.up.commit({"a.py": with_lines({10: BASE_LINES[10].replace(b"10\n", b"10  # v2\n")})},
                       "v2", tag="v2")
        self.cli("rebase", "--to", "v2", expect=3)
        self.cli("rebase", "--skip", expect=1)
        assert self.series() == [f"{names[0]}.patch", f"{names[2]}.patch"]
        assert self.skipped.is_file()

    @property
    def skipped(self) -> Path:
        return self.root / "series" / "up" / "skipped" / f"{self.names[1]}.patch"

    def snapshot(self) -> dict[str, tuple]:
        """Every project file, patchforge's local state left out."""
        return snapshot(self.root, skip_state=True, dirs=False)

    def overlay(self) -> bytes:
        self.cli("overlays", expect=None)
        return (self.root / "overlays" / "up" / "a.py").read_bytes()


@pytest.fixture
def project(tmp_path):
    return Project(tmp_path)


def test_rename_to_the_name_of_a_skipped_fix_is_refused(project):
    before = project.snapshot()
    rc, out, err = project.cli("rename", "p3", "p2", expect=2)
    assert "p2.patch is the name of a fix a rebase set aside (series/up/skipped/p2.patch)" in err
    assert "`patchforge bring-back p2`" in err and "`patchforge delete p2`" in err
    assert "another name" in err
    assert project.snapshot() == before
    project.cli("rename", "p3", "p3b")
    assert project.series() == ["p1.patch", "p3b.patch"]


def test_new_with_the_name_of_a_skipped_fix_is_refused(project):
    before = project.snapshot()
    rc, out, err = project.cli("new", "p2", "--file", "a.py", expect=2)
    assert "p2.patch is the name of a fix a rebase set aside (series/up/skipped/p2.patch)" in err
    assert project.snapshot() == before


def test_delete_of_a_name_both_listed_and_skipped_refuses_and_says_how_to_choose(project):
    # The state an older version let `rename p3 p2` make: the live fix named as the skipped one.
    series_dir = project.root / "series" / "up"
    (series_dir / "p3.patch").rename(series_dir / "p2.patch")
    (series_dir / "series").write_text("p1.patch\np2.patch\n")
    assert b"return 2000" in project.overlay()

    rc, out, err = project.cli("status", expect=1)  # the skipped fix needs attention
    assert "up/p2.patch in the series has the same name" in out + err
    assert "`patchforge rename p2 NEW`" in out + err

    before = project.snapshot()
    rc, out, err = project.cli("delete", "p2", expect=2)
    assert "'p2' names two fixes: up/p2.patch in the series and series/up/skipped/p2.patch" \
        in err and "nothing was deleted" in err
    assert "`patchforge rename p2 NEW`" in err
    assert project.snapshot() == before
    project.cli("delete", "up/p2", expect=2)
    assert project.snapshot() == before

    # The way the refusal gives: the live one renamed, then the skipped one dropped.
    project.cli("rename", "p2", "p3")
    project.cli("delete", "p2")
    assert project.series() == ["p1.patch", "p3.patch"]
    assert not project.skipped.exists()
    assert (series_dir / "deleted" / "p2.patch").is_file()
    assert b"return 2000" in project.overlay()


def test_an_import_naming_a_patch_as_a_skipped_fix_is_refused(project, tmp_path):
    overlay = tmp_path / "a.py"
    overlay.write_bytes(project.overlay().replace(b"return 1\n", b"return 1000\n"))
    before = project.snapshot()
    rc, out, err = project.cli("import", "overlay", str(overlay), "--path", "a.py",
                               "--name", "p2", expect=2)
    assert "p2.patch is the name of a fix a rebase set aside (series/up/skipped/p2.patch)" in err
    assert project.snapshot() == before


def test_lints_windows_rename_advice_names_what_rename_takes(tmp_path):
    """A series holding names a Windows checkout cannot write (`x:y.patch`, `:lead.patch`, as a
    colleague's merge brings them): lint suggests a `rename` for each, and each suggested
    command, run as it is written, renames. The name `x:y` made safe is `x-y`, the name of a
    fix a rebase set aside, which `rename` refuses; `:lead` made safe was `-lead`, which
    `rename` refuses as a name (and the command line took for an option)."""
    import json
    import shlex

    from helpers.cli import run_cli
    from helpers.project import add_patch_file, patch_bytes

    project = Project(tmp_path, ("p1", "x-y", "p3"))
    base = json.loads((project.root / "upstream.lock").read_bytes())["upstreams"]["up"]["commit"]
    for name, line in (("x:y.patch", 25), (":lead.patch", 28)):
        diff = (f"diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n"
                f"@@ -{line * 3 + 1},2 +{line * 3 + 1},2 @@\n def f{line}():\n"
                f"-    return {line}\n+    return {line}00\n").encode()
        add_patch_file(project.root, "up", name, patch_bytes("up", base, f"fix {line}", diff))
    _, out, _ = project.cli("lint", "--json", "--no-forge", expect=None)
    advised = [f["message"].split("`")[1] for f in json.loads(out)["findings"]
               if "cannot be checked out on Windows" in f["message"]]
    assert len(advised) == 2, out
    for command in advised:
        argv = shlex.split(command)
        assert argv[:2] == ["patchforge", "rename"], command
        result = run_cli(project.root, *argv[1:])
        assert result.rc == 0, (command, result.text)
    assert (project.root / "series" / "up" / "skipped" / "x-y.patch").is_file()
    _, out, _ = project.cli("lint", "--json", "--no-forge", expect=None)
    assert "Windows" not in out, out
