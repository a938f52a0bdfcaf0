"""A conflict resolved with the patch's side kept the lines the patch was made on: inside the
patch, that undid what an earlier fix (or the new upstream) changed there since. It was written
without a word, and status and lint said all was fine. The markers now show what the patch was
made on (`||||||| ...`, git's diff3 style), and `refresh` of a marked edit, `rebase
--continue` and `bring-back --continue` refuse such a resolution, naming the file, the line and
whose change it undoes, unless `--allow-undo` asks for it. Real git upstream, real commands."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from helpers.project import Stack
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


class Project(Stack):
    """A project pinned to a real git upstream of pkg/mod.py (`up`), with the quilt-like steps
    the tests take."""

    def __init__(self, tmp_path: Path) -> None:
        super().__init__(tmp_path / "project")
        self.up = Upstream(tmp_path / "up", {"pkg/mod.py": text()})
        self.add_upstream("up", self.up)

    @property
    def work(self) -> Path:
        return self.root / ".patchforge" / "work" / "up"

    def fix(self, name: str, data: bytes) -> None:
        self.cli("new", name, "--file", "pkg/mod.py")
        (self.work / "pkg/mod.py").write_bytes(data)
        self.cli("refresh")



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


def test_refresh_refuses_a_resolution_that_undoes_an_earlier_fix(project):
    """The newcomer's walk: the block resolved by keeping the patch's side (fix-b's line with
    fix-a's old line as its context). refresh wrote it, exit 0, and fix-b took fix-a's
    improvement back out of every overlay while status and lint said all was fine. Refused
    now, exit 2, naming the file, the line and fix-a; nothing written, the worktree kept.
    Resolved with fix-a's line as it is now, it is written."""
    fix_a_improved(project)
    before = project.patch("up", "fix-b")
    project.cli("edit", "fix-b", expect=2)
    marked = (project.work / "pkg/mod.py").read_bytes()
    (project.work / "pkg/mod.py").write_bytes(take(marked, "patch"))
    _, _, err = project.cli("refresh", expect=2)
    assert "pkg/mod.py line 18" in err and "fix-a.patch" in err, err
    assert "if x else 0" in err and "if x is not None else 0" in err, err
    assert "refresh --allow-undo" in err and "nothing was written" in err, err
    assert project.patch("up", "fix-b") == before
    assert (project.work / "pkg/mod.py").read_bytes() == take(marked, "patch")
    # The upper side kept, fix-b's own change made in it: written, fix-a's line untouched.
    (project.work / "pkg/mod.py").write_bytes(
        take(marked, "upper").replace(b"def f4(x):\n", B_LINE + b"\n"))
    project.cli("refresh")
    fix_b = project.patch("up", "fix-b")
    assert b"+" + B_LINE in fix_b and b" " + A_V2 in fix_b, fix_b.decode()
    assert b"-" + A_V2 not in fix_b
    assert project.cli("status")[0] == 0
    project.cli("overlays")
    assert (project.root / "overlays/up/pkg/mod.py").read_bytes() == \
        text({"    y = x + 4": A_V2, "def f4(x):": B_LINE})


def test_refresh_allow_undo_writes_it_and_says_so(project):
    """An undo meant (fix-b puts fix-a's old line back on purpose): `refresh --allow-undo`
    writes it, exit 0, and says what it undoes."""
    fix_a_improved(project)
    project.cli("edit", "fix-b", expect=2)
    marked = (project.work / "pkg/mod.py").read_bytes()
    (project.work / "pkg/mod.py").write_bytes(take(marked, "patch"))
    _, _, err = project.cli("refresh", "--allow-undo")
    assert "undoes, as asked (--allow-undo): pkg/mod.py line 18" in err, err
    fix_b = project.patch("up", "fix-b")
    assert b"-" + A_V2 in fix_b and b"+" + A_V1 in fix_b, fix_b.decode()


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


def test_rebase_continue_refuses_a_resolution_that_undoes_the_new_upstream(project):
    """A stop resolved by keeping the patch's side put the old upstream's line back over the
    new one's: --continue wrote it, exit 0. Refused now (exit 2, still stopped), naming the
    line and the upstream; the markers show the base; `--allow-undo` takes it on purpose."""
    target = upstream_changed_under_fix_b(project)
    marked = (project.work / "pkg/mod.py").read_bytes()
    assert b"||||||| base\n" in marked and b"    y = x + 4\n=======\n" in marked, marked.decode()
    (project.work / "pkg/mod.py").write_bytes(take(marked, "patch"))
    _, _, err = project.cli("rebase", "--continue", expect=2)
    assert "pkg/mod.py line 18" in err and f"the upstream ({target})" in err, err
    assert "rebase --continue --allow-undo" in err and "--skip" in err, err
    # The markers are gone with the resolution: the hint said "in each such block keep the
    # upper side (<<<<<<<)". It says what to edit now, and where the newer lines are seen.
    assert "<<<<<<<" not in err and "upper side" not in err, err
    assert f"`git -C {project.work} diff` shows it against the files before the patch" in err
    # Every `-` line of that diff is not to be kept: the patch's own change is one too.
    assert "`-` lines at the lines named are the ones to give back" in err, err
    assert "any other `-` line is the patch's own change, to leave as it is" in err, err
    diff = subprocess.run(["git", "-C", str(project.work), "diff"], capture_output=True,
                          check=True).stdout
    assert b"\n-    y = x + 4  # up\n" in diff, diff.decode()
    assert b"Base: " + project.up.base.encode() in project.patch("up", "fix-b")  # not written
    _, _, err = project.cli("status", expect=1)
    assert "stopped at fix-b.patch" in err
    _, out, _ = project.cli("rebase", "--continue", "--allow-undo")
    assert "undoes, as asked (--allow-undo): pkg/mod.py line 18" in out, out
    fix_b = project.patch("up", "fix-b")
    assert b"-    y = x + 4  # up\n" in fix_b and f"Base: {target}".encode() in fix_b


def test_rebase_continue_takes_a_resolution_that_keeps_the_new_upstream(project):
    """The same stop resolved with upstream's line and fix-b's own change: taken, exit 0."""
    target = upstream_changed_under_fix_b(project)
    marked = (project.work / "pkg/mod.py").read_bytes()
    (project.work / "pkg/mod.py").write_bytes(
        take(marked, "upper").replace(b"def f4(x):\n", B_LINE + b"\n"))
    project.cli("rebase", "--continue")
    fix_b = project.patch("up", "fix-b")
    assert b" " + b"    y = x + 4  # up\n" in fix_b and f"Base: {target}".encode() in fix_b


def test_a_conflict_on_the_patchs_own_line_resolved_with_its_change_is_taken(project):
    """Upstream and the patch changed the same line: the patch's side there is its own change,
    not the line it was made on, and keeping it undoes nothing of the resolution's making."""
    project.fix("fix-a", text({"    y = x + 4": A_V1}))
    target = project.up.commit({"pkg/mod.py": text({"    y = x + 4": b"    y = x + 44"})})
    project.cli("rebase", "--to", f"up={target}", expect=3)
    marked = (project.work / "pkg/mod.py").read_bytes()
    (project.work / "pkg/mod.py").write_bytes(take(marked, "patch"))
    project.cli("rebase", "--continue")
    assert b"-    y = x + 44\n+" + A_V1 in project.patch("up", "fix-a")


def test_bring_back_continue_refuses_a_resolution_that_undoes_the_upstream(project):
    """A fix skipped at a stop, brought back: the stop's markers show the base, and keeping
    the fix's side (the old upstream line) is refused by --continue, naming it; resolved on
    the upstream's line, the fix is back."""
    upstream_changed_under_fix_b(project)
    project.cli("rebase", "--skip", expect=1)
    assert project.series("up") == []
    project.cli("bring-back", "fix-b", expect=3)
    marked = (project.work / "pkg/mod.py").read_bytes()
    assert b"||||||| base\n" in marked, marked.decode()
    (project.work / "pkg/mod.py").write_bytes(take(marked, "patch"))
    _, _, err = project.cli("bring-back", "--continue", expect=2)
    assert "pkg/mod.py line 18" in err and "the upstream" in err, err
    assert "bring-back --continue --allow-undo" in err, err
    assert project.series("up") == [] and project.patch("up", "fix-b", "skipped")
    (project.work / "pkg/mod.py").write_bytes(
        take(marked, "upper").replace(b"def f4(x):\n", B_LINE + b"\n"))
    project.cli("bring-back", "--continue")
    assert project.series("up") == ["fix-b.patch"]
    assert b" " + b"    y = x + 4  # up\n" in project.patch("up", "fix-b")


def test_rebase_continue_names_the_earlier_patch_as_the_rebase_resolved_it(project):
    """fix-a resolved at one stop of the rebase (onto upstream's change of its line), then
    fix-b stops on it: keeping fix-b's side would put fix-a's line back as it was before the
    rebase, over the resolution just made. Refused, naming fix-a (as this run moved it)."""
    project.fix("fix-a", text({"    y = x + 4": A_V1}))
    project.fix("fix-b", text({"    y = x + 4": A_V1, "def f4(x):": B_LINE}))
    target = project.up.commit({"pkg/mod.py": text({"    y = x + 4": b"    y = x + 4.0"})})
    _, _, err = project.cli("rebase", "--to", f"up={target}", expect=3)
    assert "fix-a.patch" in err
    resolved_a = b"    y = x + 4.0 if x else 0.0"
    (project.work / "pkg/mod.py").write_bytes(text({"    y = x + 4": resolved_a}))
    _, _, err = project.cli("rebase", "--continue", expect=3)
    assert "fix-b.patch" in err, err
    marked = (project.work / "pkg/mod.py").read_bytes()
    (project.work / "pkg/mod.py").write_bytes(take(marked, "patch"))
    _, _, err = project.cli("rebase", "--continue", expect=2)
    assert "pkg/mod.py line 18" in err and "where fix-a.patch has" in err, err
    assert "y = x + 4.0 if x else 0.0" in err, err
    (project.work / "pkg/mod.py").write_bytes(
        take(marked, "upper").replace(b"def f4(x):\n", B_LINE + b"\n"))
    project.cli("rebase", "--continue")
    project.cli("overlays")
    assert (project.root / "overlays/up/pkg/mod.py").read_bytes() == \
        text({"    y = x + 4": resolved_a, "def f4(x):": B_LINE})


def test_rebase_continue_refuses_a_resolution_that_puts_back_a_line_upstream_took_out(project):
    """Upstream took out the line beside the patch's change; the stop resolved by keeping the
    patch's side put it back: --continue wrote it, and the overlay held a line the new
    upstream has not. The alignment saw `def f4` replaced by two lines, not the line put
    back. Refused now, naming the line and the upstream; resolved without it, taken."""
    project.fix("fix-a", text({"def f4(x):": B_LINE}))
    target = project.up.commit({"pkg/mod.py": text().replace(b"    y = x + 4\n", b"", 1)})
    project.cli("rebase", "--to", f"up={target}", expect=3)
    marked = (project.work / "pkg/mod.py").read_bytes()
    (project.work / "pkg/mod.py").write_bytes(take(marked, "patch"))
    _, _, err = project.cli("rebase", "--continue", expect=2)
    assert "pkg/mod.py line 18: puts back `y = x + 4`, which the upstream" in err, err
    (project.work / "pkg/mod.py").write_bytes(
        take(marked, "upper").replace(b"def f4(x):\n", B_LINE + b"\n"))
    project.cli("rebase", "--continue")
    assert project.cli("status")[0] == 0
    project.cli("overlays")
    assert b"    y = x + 4\n" not in (project.root / "overlays/up/pkg/mod.py").read_bytes()


def test_a_marked_block_ends_where_the_hunks_region_ends_after_an_earlier_patch_shortened_it(
        project):
    """fix-a, improved, took out a line inside fix-b's hunk: fix-b's block was as long as the
    hunk's pre-image, so it took in the line after the region (`def f5`), and keeping the
    patch's side was refused as taking out a line "the upstream put there", while the real
    undo (fix-a's line taken out, put back) went unnamed. The block ends where the region
    does; the refusal names fix-a."""
    project.fix("fix-a", text({"def f6(x):": b"def f6(x):  # fix-a"}))
    project.fix("fix-b", text({"def f6(x):": b"def f6(x):  # fix-a", "def f4(x):": B_LINE}))
    project.cli("edit", "fix-a")
    (project.work / "pkg/mod.py").write_bytes(
        text({"def f6(x):": b"def f6(x):  # fix-a"}).replace(b"    y = x + 4\n", b"", 1))
    _, _, err = project.cli("refresh", expect=1)
    assert "fix-b.patch no longer applies" in err, err
    project.cli("edit", "fix-b", expect=2)
    marked = (project.work / "pkg/mod.py").read_bytes()
    assert re.search(rb">>>>>>> [^\n]*\ndef f5\(x\):\n", marked), marked.decode()
    (project.work / "pkg/mod.py").write_bytes(take(marked, "patch"))
    _, _, err = project.cli("refresh", expect=2)
    assert "puts back `y = x + 4`, which fix-a.patch took out" in err, err
    assert "def f5" not in err, err
