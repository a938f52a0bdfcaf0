"""A conflict's markers showed the file as it is and the patch's side, nothing of what the patch
was made on: that an earlier fix (or the new upstream) changed the patch's context since could
not be seen, and keeping the patch's side undid it. The markers now show it (`||||||| ...`,
git's diff3 style). Real git upstream, real commands."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from helpers.cli import run_cli
from helpers.upstream import Upstream

# Functions of three lines: a fix to a function's first line has the next fix's line (its
# body's first line) as context right beside it, so that no fuzz gets past a change to it.
LINES = [f"def f{i}(x):\n    y = x + {i}\n    return y\n\n".encode() for i in range(20)]


def text(changes: dict[str, bytes] | None = None) -> bytes:
    """The upstream file with whole lines replaced: {old line: new line}."""
    data = b"".join(LINES)
    for old, new in (changes or {}).items():
        assert old.encode() in data, old
        data = data.replace(old.encode() + b"\n", new + b"\n", 1)
    return data


A_V1 = b"    y = x + 4 if x else 0"
A_V2 = b"    y = x + 4 if x is not None else 0"
B_LINE = b"def f4(x):  # fix-b"


class Project:
    def __init__(self, tmp_path: Path) -> None:
        self.up = Upstream(tmp_path / "up", {"pkg/mod.py": text()})
        self.root = tmp_path / "project"
        self.root.mkdir()
        self.cli("init", "--standalone", str(self.root))
        self.cli("upstream", "add", "up", "--git", str(self.up.path), "--at", self.up.base,
                 "--install-root", "/opt/site")

    def cli(self, *args: str, expect: int | None = 0) -> tuple[int, str, str]:
        result = run_cli(self.root, *args)
        if expect is not None:
            assert result.rc == expect, \
                f"patchforge {' '.join(args)} -> {result.rc}\n{result.out}\n{result.err}"
        return result.rc, result.out, result.err

    @property
    def work(self) -> Path:
        return self.root / ".patchforge" / "work" / "up"

    def fix(self, name: str, data: bytes) -> None:
        self.cli("new", name, "--file", "pkg/mod.py")
        (self.work / "pkg/mod.py").write_bytes(data)
        self.cli("refresh")

    def patch(self, name: str, where: str = "") -> bytes:
        sub = f"{where}/" if where else ""
        return (self.root / "series" / "up" / f"{sub}{name}.patch").read_bytes()

    def series(self) -> list[str]:
        return (self.root / "series" / "up" / "series").read_text().split()


@pytest.fixture
def project(tmp_path):
    return Project(tmp_path)


def take(marked: bytes, side: str) -> bytes:
    """Every conflict block of `marked` resolved by keeping one side: "upper" (<<<<<<<, what
    is there now) or "patch" (=======..>>>>>>>, the patch's)."""
    block = re.compile(rb"<<<<<<< [^\n]*\n(.*?)(?:\|\|\|\|\|\|\| [^\n]*\n.*?)?=======\n(.*?)"
                       rb">>>>>>> [^\n]*\n", re.S)
    return block.sub(lambda m: m.group(1 if side == "upper" else 2), marked)


def fix_a_improved(project: Project) -> None:
    """fix-a (f4's body line) and fix-b (f4's first line, fix-a's line its context); then
    fix-a improved: fix-b no longer applies on the series before it."""
    project.fix("fix-a", text({"    y = x + 4": A_V1}))
    project.fix("fix-b", text({"    y = x + 4": A_V1, "def f4(x):": B_LINE}))
    project.cli("edit", "fix-a")
    (project.work / "pkg/mod.py").write_bytes(text({"    y = x + 4": A_V2}))
    _, _, err = project.cli("refresh", expect=1)
    assert "fix-b.patch no longer applies" in err


def test_a_marked_edit_shows_what_the_patch_was_made_on(project):
    """The block `edit` writes for a hunk that did not apply held the series' lines and the
    patch's, nothing else: nothing showed that fix-a's line changed under fix-b. It holds the
    hunk's pre-image too, between `|||||||` and `=======`, as `git merge-file --diff3` writes."""
    fix_a_improved(project)
    _, _, err = project.cli("edit", "fix-b", expect=2)
    assert "||||||| " in err, err  # the message says what the section is
    marked = (project.work / "pkg/mod.py").read_bytes()
    upper, base, patch = re.search(
        rb"<<<<<<< series before fix-b.patch\n(.*?)"
        rb"\|\|\|\|\|\|\| what fix-b.patch hunk #1 was made on\n(.*?)=======\n(.*?)"
        rb">>>>>>> fix-b.patch hunk #1\n", marked, re.S).groups()
    assert A_V2 + b"\n" in upper and A_V1 + b"\n" in base and A_V1 + b"\n" in patch
    assert B_LINE not in base and B_LINE + b"\n" in patch


def test_a_lone_base_or_separator_marker_left_is_still_refused(project):
    """The outer markers taken out, the `|||||||` section's line (or `=======`) left between
    the sides: refused as a marker left, as before the section was written."""
    fix_a_improved(project)
    project.cli("edit", "fix-b", expect=2)
    marked = (project.work / "pkg/mod.py").read_bytes()
    outer = re.compile(rb"^(<<<<<<<|>>>>>>>) [^\n]*\n", re.M)
    (project.work / "pkg/mod.py").write_bytes(outer.sub(b"", marked))
    _, _, err = project.cli("refresh", expect=2)
    assert "conflict markers left in pkg/mod.py" in err, err
    base_only = re.sub(rb"^=======\n", b"", outer.sub(b"", marked), flags=re.M)
    (project.work / "pkg/mod.py").write_bytes(base_only)
    _, _, err = project.cli("refresh", expect=2)
    assert "conflict markers left in pkg/mod.py" in err, err


def upstream_changed_under_fix_b(project: Project) -> str:
    """fix-b on f4's first line; upstream then changes f4's body line (fix-b's context): the
    rebase stops on fix-b."""
    project.fix("fix-b", text({"def f4(x):": B_LINE}))
    target = project.up.commit({"pkg/mod.py": text({"    y = x + 4": b"    y = x + 4  # up"})})
    _, _, err = project.cli("rebase", "--to", f"up={target}", expect=3)
    assert "fix-b.patch" in err
    return target


def test_a_rebase_stop_shows_what_the_patch_was_made_on(project):
    """A stop's block held upstream's lines and the patch's: that upstream changed the line
    the patch had as context could only be guessed. The base's lines are there too."""
    upstream_changed_under_fix_b(project)
    marked = (project.work / "pkg/mod.py").read_bytes()
    upper, base, patch = re.search(rb"<<<<<<< upstream\n(.*?)\|\|\|\|\|\|\| base\n(.*?)"
                                   rb"=======\n(.*?)>>>>>>> patch\n", marked, re.S).groups()
    assert b"    y = x + 4  # up\n" in upper and b"    y = x + 4\n" in base, marked.decode()
    assert B_LINE + b"\n" in patch and b"    y = x + 4\n" in patch
