"""`import overlay|git|quilt|mbox` and `export --quilt|--mbox` through the real CLI, checked with
the real tools on the other side (git am, quilt push, git apply)."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.cli import ok, run_cli
from helpers.env import need_tool
from helpers.git import git, git_bytes
from helpers.project import (UPSTREAM_FILES, add_git_upstream, add_patch_file, git_project,
                             make_project, patch_bytes)
from helpers.snapshot import snapshot, tree_bytes


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.setenv("PATCHFORGE_DATE", "2024-05-01")
    root, _ = git_project(tmp_path)
    return root


def fork_with_commits(tmp_path: Path) -> Path:
    """A clone of the upstream with two fixes committed on branch `fixes`."""
    fork = tmp_path / "fork"
    git(tmp_path, "clone", "-q", str(tmp_path / "up-upstream"), str(fork))
    git(fork, "checkout", "-q", "-b", "fixes")
    (fork / "a.py").write_bytes(UPSTREAM_FILES["a.py"].replace(b"line3\n", b"LINE3\n"))
    git(fork, "commit", "-qam", "Fix line three\n\nLine three was lower case.\nSigned-off-by: Dev <dev@example.com>")
    (fork / "pkg" / "crlf.txt").write_bytes(b"one\r\nTWO\r\nthree\r\n")
    (fork / "pkg" / "added.py").write_bytes(b"new = 1\n")
    git(fork, "add", "-A")
    env = dict(os.environ, GIT_AUTHOR_NAME="Other Person", GIT_AUTHOR_EMAIL="other@example.com",
               GIT_AUTHOR_DATE="2023-02-03T04:05:06+0000")
    subprocess.run(["git", "commit", "-q", "-m", "Second fix: CRLF file and a new module"],
                   cwd=fork, env=env, check=True)
    return fork


def their_commit(tmp_path: Path, path: str, data: bytes, message: str,
                 branch: str | None = None) -> tuple[Path, str]:
    """A colleague's clone of the upstream (`fork`) with one commit writing `data` to `path`,
    on `branch` when given: (the clone, the commit's hash)."""
    fork = tmp_path / "fork"
    git(tmp_path, "clone", "-q", str(tmp_path / "up-upstream"), str(fork))
    if branch is not None:
        git(fork, "checkout", "-q", "-b", branch)
    (fork / path).write_bytes(data)
    git(fork, "commit", "-qam", message)
    return fork, git(fork, "rev-parse", "HEAD").strip()


def upstream_checkout(tmp_path: Path, name: str) -> Path:
    checkout = tmp_path / name
    git(tmp_path, "clone", "-q", str(tmp_path / "up-upstream"), str(checkout))
    return checkout


def overlay_tree(root: Path, under: str = "up/") -> dict[str, bytes]:
    ok(root, "overlays")
    return {rel[len(under):]: data for rel, data in tree_bytes(root / "overlays").items()
            if rel.startswith(under)}


def test_import_overlay_regenerates_the_overlay_byte_exact(project, tmp_path):
    root = project
    config = root / "pyproject.toml"  # one profile declared: the fix is for it only
    config.write_text(config.read_text().replace("[tool.patchforge.profiles]\n",
                                                 '[tool.patchforge.profiles]\ngfx942 = "MI300X"\n'))
    overlay = tmp_path / "a.py.overlay"
    overlay.write_bytes(UPSTREAM_FILES["a.py"].replace(b"line7\n", b"line7 fixed\r\n")
                        .replace(b"line20\n", b"line20"))
    run = ok(root, "import", "overlay", str(overlay), "--upstream", "up", "--path", "a.py",
             "--name", "fix-a", "--profiles", "gfx942")
    assert "imported up/fix-a.patch" in run.text
    patch = (root / "series/up/fix-a.patch").read_bytes()
    assert b"Profiles: gfx942\n" in patch and b"Origin: vendor, overlay a.py.overlay\n" in patch
    assert overlay_tree(root, "gfx942/up/") == {"a.py": overlay.read_bytes()}
    # A second overlay of a file the series already touches is a diff against the series' result.
    second = tmp_path / "second.py"
    second.write_bytes(overlay.read_bytes().replace(b"line1\n", b"LINE1\n"))
    ok(root, "import", "overlay", str(second), "--upstream", "up", "--path", "a.py", "--name", "fix-a2")
    assert overlay_tree(root, "gfx942/up/") == {"a.py": second.read_bytes()}
    assert b"-line1\n+LINE1\n" in (root / "series/up/fix-a2.patch").read_bytes()


def test_import_overlay_whose_line_ends_were_converted_says_so(project, tmp_path):
    """A hand-kept overlay whose line ends a Windows checkout or an editor made CRLF (the
    tutorial's step 1, `import overlay patches/*.py`): a one-line fix was imported as a patch
    rewriting every line, exit 0, nothing said, and it then conflicted with any upstream
    change to the file. It is imported as it is (bytes are the user's), and a note says
    why the patch is the whole file and how to import the change alone; run as the note
    says, the patch is the one line. One CRLF line of a change is no such thing."""
    root = project
    overlay = tmp_path / "a.py.overlay"
    fixed = UPSTREAM_FILES["a.py"].replace(b"line7\n", b"line7 fixed\n")
    overlay.write_bytes(fixed.replace(b"\n", b"\r\n"))
    run = ok(root, "import", "overlay", str(overlay), "--upstream", "up", "--path", "a.py",
             "--name", "fix-a")
    assert f"note: {overlay} ends its lines with CRLF where a.py at " in run.err, run.err
    (command,) = [c for c in re.findall(r"`([^`]*)`", run.err) if c.startswith("sed ")]
    assert b"+line7 fixed\r\n" in (root / "series/up/fix-a.patch").read_bytes()
    ok(root, "delete", "fix-a")
    subprocess.run(command, shell=True, check=True)
    assert overlay.read_bytes() == fixed
    again = ok(root, "import", "overlay", str(overlay), "--upstream", "up", "--path", "a.py",
               "--name", "fix-a")
    assert "line ends" not in again.err and "ends its lines" not in again.err, again.err
    assert ok(root, "list").text.count("+1/-1") == 1
    # A change that is one CRLF line, and a CRLF file kept CRLF, are said nothing of.
    crlf = tmp_path / "crlf.overlay"
    crlf.write_bytes(UPSTREAM_FILES["pkg/crlf.txt"].replace(b"two\r\n", b"TWO\r\n"))
    run = ok(root, "import", "overlay", str(crlf), "--upstream", "up", "--path",
             "pkg/crlf.txt", "--name", "fix-crlf")
    assert "ends its lines" not in run.err, run.err


def test_import_overlay_made_from_the_upstream_file_never_undoes_the_series(project, tmp_path):
    """An overlay made from the upstream's file, of a file a patch of the series already
    changes: its diff from the series' file undid that patch's change, so the overlays and every
    deployment went without the first fix while `status` said both patches apply. It is now
    merged onto the series' file (the first fix kept, said so), and one that changes the same
    lines as the patch is refused with nothing written."""
    root = project
    first = tmp_path / "first.py"
    first.write_bytes(UPSTREAM_FILES["a.py"].replace(b"line3\n", b"line3 first fix\n"))
    ok(root, "import", "overlay", str(first), "--upstream", "up", "--path", "a.py",
       "--name", "first")
    second = tmp_path / "second.py"  # made from the upstream's a.py, as a colleague would
    second.write_bytes(UPSTREAM_FILES["a.py"].replace(b"line20\n", b"line20 second fix\n"))
    run = ok(root, "import", "overlay", str(second), "--upstream", "up", "--path", "a.py",
             "--name", "second")
    assert "lacked the changes that first.patch make to a.py" in run.err
    patch = (root / "series/up/second.patch").read_bytes()
    assert b"+line20 second fix\n" in patch and b"first fix" not in patch
    both = UPSTREAM_FILES["a.py"].replace(b"line3\n", b"line3 first fix\n") \
        .replace(b"line20\n", b"line20 second fix\n")
    assert overlay_tree(root) == {"a.py": both}
    clash = tmp_path / "clash.py"
    clash.write_bytes(UPSTREAM_FILES["a.py"].replace(b"line3\n", b"line3 another fix\n"))
    before = tree_bytes(root / "series")
    run = run_cli(root, "import", "overlay", str(clash), "--upstream", "up", "--path", "a.py",
                  "--name", "clash")
    assert run.rc == 2 and "would undo them" in run.err and "first.patch, second.patch" in run.err
    assert tree_bytes(root / "series") == before


def _upstream_moved_on(tmp_path: Path, root: Path) -> tuple[bytes, bytes, str, str]:
    """The upstream changes line5 of a.py (v2) and the project is pinned there; returns a.py at
    v1 and at v2, and both commits."""
    up = tmp_path / "up-upstream"
    v1 = git(up, "rev-parse", "HEAD").strip()
    git(up, "tag", "v1")
    old = UPSTREAM_FILES["a.py"]
    pinned = old.replace(b"line5\n", b"line5 upstream fixed this\n")
    (up / "a.py").write_bytes(pinned)
    git(up, "commit", "-qam", "line five fixed upstream")
    git(up, "tag", "v2")
    v2 = git(up, "rev-parse", "HEAD").strip()
    ok(root, "upstream", "pin", "up", "--at", "v2")
    return old, pinned, v1, v2


def test_import_overlay_made_on_an_older_upstream_never_takes_its_change_back(project,
                                                                              tmp_path):
    """An overlay made on v1's a.py with a fix in it, imported into a project pinned at v2: its
    diff from v2's file also took back upstream's change of line5 between the two, without a
    word. The import says so, naming the line and the version it looks made on, nothing
    written; `--made-on v1` carries its own change onto v2's file; `--made-on` the pin
    imports it as it is (taking the line back is the fix)."""
    root = project
    old, pinned, v1, v2 = _upstream_moved_on(tmp_path, root)
    overlay = tmp_path / "a.py"
    overlay.write_bytes(old.replace(b"line12\n", b"line12 our fix\n"))
    before = tree_bytes(root / "series")
    run = run_cli(root, "import", "overlay", str(overlay), "--path", "a.py", "--name", "fix")
    assert run.rc == 2, run.text
    assert f"{overlay} looks made on another a.py than v2's: the file as it was before up " \
        f"commit {v2[:12]} (line five fixed upstream) differs less from it" in run.err, run.err
    assert "the patch would take back the upstream's changes made since (the pinned file's line 5: " \
        "'line5 upstream fixed this')" in run.err, run.err
    assert f"`--made-on {v1}` carries its change onto v2's file" in run.err, run.err
    assert f"`--made-on {v2}`" in run.err, run.err
    assert tree_bytes(root / "series") == before
    run = ok(root, "import", "overlay", str(overlay), "--path", "a.py", "--name", "fix",
             "--made-on", "v1")
    assert "was made on a.py as v1 has it: its change is carried onto v2's file" in run.err
    patch = (root / "series/up/fix.patch").read_bytes()
    assert b"+line12 our fix\n" in patch and b"line5" not in patch, patch.decode()
    assert overlay_tree(root) == {"a.py": pinned.replace(b"line12\n", b"line12 our fix\n")}
    # Made on the pin, by the user's word: imported as it is, line5 taken back.
    ok(root, "delete", "fix")
    ok(root, "import", "overlay", str(overlay), "--path", "a.py", "--name", "revert",
       "--made-on", v2)
    assert b"-line5 upstream fixed this\n+line5\n" in (root / "series/up/revert.patch").read_bytes()


def test_import_overlay_made_on_an_older_upstream_whose_change_meets_upstreams_is_refused(
        project, tmp_path):
    """`--made-on` where the overlay's own change is on the lines upstream changed since: no
    one file to carry it onto; refused, naming the pinned side, nothing written. An overlay
    made on the pinned file itself (a hand edit) is imported without a word about versions."""
    root = project
    old, pinned, v1, v2 = _upstream_moved_on(tmp_path, root)
    overlay = tmp_path / "a.py"
    overlay.write_bytes(old.replace(b"line5\n", b"line5 our own fix\n"))
    before = tree_bytes(root / "series")
    run = run_cli(root, "import", "overlay", str(overlay), "--path", "a.py", "--name", "fix",
                  "--made-on", "v1")
    assert run.rc == 2 and "meets the upstream's change between v1 and v2 (v2's: " \
        "line5 upstream fixed this)" in run.err, run.err
    assert tree_bytes(root / "series") == before
    edited = tmp_path / "edited.py"
    edited.write_bytes(pinned.replace(b"line12\n", b"line12 our fix\n"))
    run = ok(root, "import", "overlay", str(edited), "--path", "a.py", "--name", "fix")
    assert "made on" not in run.err, run.err


def test_import_overlay_made_on_the_release_the_stack_moved_from_is_refused(project, tmp_path):
    """The stack was pinned at release v1 and rebased onto v2, many commits later (line15 of
    a.py changed in 22 of them, a try of line8 reverted in the last); an overlay made on v1's
    a.py with a fix in it (taken from an image still running v1) is imported. Of the file's
    last 20 versions none was nearer the overlay than v2's, and its patch took back v2's
    changes of line5 and line15 without a word. The store holds v1 (the stack's earlier pin):
    the import is refused naming v1 and `--made-on v1`, nothing written, and `--made-on v1`
    imports the fix alone. An overlay made on v2 imports as it is, with no word of versions."""
    root = project
    up = tmp_path / "up-upstream"
    git(up, "tag", "v1")
    ok(root, "upstream", "pin", "up", "--at", "v1")
    old = (up / "a.py").read_bytes()

    def commit(data: bytes, message: str) -> bytes:
        (up / "a.py").write_bytes(data)
        git(up, "commit", "-qam", message)
        return data

    now = commit(old.replace(b"line5\n", b"line5 upstream fixed this\n"), "fix line five")
    now = commit(now.replace(b"line8\n", b"line8 tried\n"), "try line eight")
    for take in range(1, 23):
        now = commit(re.sub(rb"line18[^\n]*\n", b"line18 take %d\n" % take, now),
                     f"line eighteen, take {take}")
    pinned = commit(now.replace(b"line8 tried\n", b"line8\n"), "Revert try line eight")
    git(up, "tag", "v2")
    ok(root, "rebase", "--to", "up=v2")
    overlay = tmp_path / "a.py"
    overlay.write_bytes(old.replace(b"line12\n", b"line12 our fix\n"))
    before = tree_bytes(root / "series")
    run = run_cli(root, "import", "overlay", str(overlay), "--path", "a.py", "--name", "fix")
    assert run.rc == 2, run.text
    assert f"{overlay} looks made on another a.py than v2's: the file as up v1 has it differs " \
        "less from it" in run.err, run.err
    assert "'line5 upstream fixed this'" in run.err and "'line18 take 22'" in run.err, run.err
    assert "`--made-on v1` carries its change onto v2's file" in run.err, run.err
    assert tree_bytes(root / "series") == before
    ok(root, "import", "overlay", str(overlay), "--path", "a.py", "--name", "fix",
       "--made-on", "v1")
    patch = (root / "series/up/fix.patch").read_bytes()
    assert b"+line12 our fix\n" in patch and b"line5" not in patch and b"line18" not in patch, \
        patch.decode()
    assert overlay_tree(root) == {"a.py": pinned.replace(b"line12\n", b"line12 our fix\n")}
    # Made on v2 (the pinned file with a fix of its own): imported as it is.
    honest = tmp_path / "honest.py"
    honest.write_bytes(pinned.replace(b"line2\n", b"line2 our other fix\n"))
    run = ok(root, "import", "overlay", str(honest), "--path", "a.py", "--name", "other")
    assert "made on" not in run.err, run.err


def test_import_overlay_that_also_changed_lines_upstream_changed_is_imported_with_a_note(
        project, tmp_path):
    """An overlay that takes back one of the upstream's changes and changes the lines of
    another (a fix there, or made after it): which version it was made on cannot be told, so
    it is imported, with a note naming the line taken back and the way to import it made on
    the earlier version."""
    root = project
    up = tmp_path / "up-upstream"
    old = UPSTREAM_FILES["a.py"]
    (up / "a.py").write_bytes(old.replace(b"line5\n", b"line5 upstream\n")
                              .replace(b"line12\n", b"line12 upstream\n"))
    git(up, "commit", "-qam", "two upstream changes")
    parent = git(up, "rev-parse", "HEAD^").strip()
    ok(root, "upstream", "pin", "up", "--at", "main")
    overlay = tmp_path / "a.py"
    overlay.write_bytes(old.replace(b"line5\n", b"line5 upstream and ours\n"))
    run = ok(root, "import", "overlay", str(overlay), "--path", "a.py", "--name", "fix")
    assert "may be made on the file as it was before up commit" in run.err and \
        "(two upstream changes): imported against main, its patch would take back the " \
        "upstream's changes made since at the pinned file's line 12: 'line12 upstream'" in run.err \
        and f"--made-on {parent}" in run.err, run.err


def test_import_overlay_never_makes_a_file_of_a_directory(project, tmp_path):
    """`import overlay --path pkg --create`, pkg a directory of the upstream (or `a.py/x`, under
    a file): the patch written created a file there, which every overlay then refused. Refused
    by name, exit 2, nothing written (without --create it said pkg did not exist)."""
    root = project
    overlay = tmp_path / "new.py"
    overlay.write_bytes(b"new = 1\n")
    before = tree_bytes(root / "series")
    for path, create, message in (("pkg", [], "pkg is a directory in the upstream"),
                                  ("pkg", ["--create"], "pkg is a directory in the upstream"),
                                  ("a.py/x", ["--create"], "a.py is a file in the upstream")):
        run = run_cli(root, "import", "overlay", str(overlay), "--upstream", "up", "--path",
                      path, "--name", "n", *create)
        assert run.rc == 2 and message in run.err, (path, create, run.err)
    assert tree_bytes(root / "series") == before


def test_import_overlay_refusals_write_nothing(project, tmp_path):
    root = project
    same = tmp_path / "same.py"
    same.write_bytes(UPSTREAM_FILES["pkg/b.py"])
    before = tree_bytes(root / "series")
    for args, message in (
            (["--path", "pkg/b.py", "--name", "n"], "nothing to import"),
            (["--path", "../b.py", "--name", "n"], ".."),
            (["--path", "/etc/passwd", "--name", "n"], "absolute"),
            (["--path", "pkg/b.py", "--name", "n", "--upstream", "nope"], "unknown upstream")):
        upstream = [] if "--upstream" in args else ["--upstream", "up"]
        run = run_cli(root, "import", "overlay", str(same), *upstream, *args)
        assert run.rc == 2 and message in run.err, (args, run.err)
    assert tree_bytes(root / "series") == before


def test_import_of_an_overlay_the_series_already_makes_names_its_patch(project, tmp_path):
    """The overlay a deployment mounts, imported again, is what the series already gives: the
    refusal names the patch that makes the change, not a landing upstream."""
    root = project
    overlay = tmp_path / "a.py.overlay"
    overlay.write_bytes(UPSTREAM_FILES["a.py"].replace(b"line3\n", b"line3 fixed\n"))
    ok(root, "import", "overlay", str(overlay), "--upstream", "up", "--path", "a.py",
       "--name", "fix-a")
    before = tree_bytes(root / "series")
    run = run_cli(root, "import", "overlay", str(overlay), "--upstream", "up", "--path", "a.py",
                  "--name", "again")
    assert run.rc == 2 and "with the series applied: nothing to import" in run.err
    assert "(the change is in the series already: fix-a.patch)" in run.err
    assert "landed upstream" not in run.err
    assert tree_bytes(root / "series") == before


def test_import_git_range_one_patch_per_commit(project, tmp_path):
    root = project
    fork = fork_with_commits(tmp_path)
    # With one upstream, --upstream may be left out (as the tutorial's `import git RANGE
    # --repo DIR`, and as `import quilt` and `import mbox` take it): it was required.
    run = ok(root, "import", "git", "main..fixes", "--repo", str(fork))
    assert run.text.splitlines() == ["imported up/fix-line-three.patch",
                                     "imported up/second-fix-crlf-file-and-a-new-module.patch"]
    assert (root / "series/up/series").read_bytes() == \
        b"fix-line-three.patch\nsecond-fix-crlf-file-and-a-new-module.patch\n"
    first = json.loads(ok(root, "show", "fix-line-three", "--json").out)
    header = {f["name"]: f["value"] for f in first["header"]}
    assert header["Description"] == "Fix line three"
    assert header["Author"] == "Test Author <author@example.com>"
    sha = git(fork, "rev-parse", "fixes~1").strip()
    assert header["Origin"] == f"vendor, commit {sha}"
    assert "Line three was lower case." in first["description"]
    second = {f["name"]: f["value"] for f in
              json.loads(ok(root, "show", "second-fix-crlf-file-and-a-new-module", "--json").out)["header"]}
    assert second["Author"] == "Other Person <other@example.com>"
    assert second["Last-Update"] == "2023-02-03"
    # Together they give the fork's files.
    assert overlay_tree(root) == {p: (fork / p).read_bytes()
                                  for p in ("a.py", "pkg/crlf.txt", "pkg/added.py")}
    again = run_cli(root, "import", "git", "main..fixes", "--repo", str(fork), "--upstream", "up")
    assert again.rc == 2 and "already exists" in again.err
    bad = run_cli(root, "import", "git", "nope..fixes", "--repo", str(fork), "--upstream", "up")
    assert bad.rc == 2


@pytest.mark.parametrize("kind", ["git", "mbox", "quilt"])
def test_an_import_of_a_fix_of_lines_the_series_changed_is_refused_naming_the_hunk(
        project, tmp_path, kind):
    """The series fixes line3 (a `git diff` on the pin); a colleague's branch, made on the pin
    too, fixes the same line otherwise. Each import took it ("imported", exit 0, not a word)
    and `overlays` then failed (exit 2, hunk #1 of a.py does not apply). Now refused, exit 2,
    nothing written, naming where it came from (the commit, the message, the quilt file at
    its hunk's line), the hunk and the series' patch of that file; the overlays still build.
    A commit of other lines imports as before."""
    root = project
    upstream = tmp_path / "up-upstream"
    mine = tmp_path / "mine"
    git(tmp_path, "clone", "-q", str(upstream), str(mine))
    (mine / "a.py").write_bytes(UPSTREAM_FILES["a.py"].replace(b"line3\n", b"line3 mine\n"))
    diff = git_bytes(mine, "diff")
    add_patch_file(root, "up", "mine.patch", b"Description: mine\nAuthor: M <m@e>\n"
                   b"Upstream-Status: Pending\nUpstream: up\n\n" + diff)
    ok(root, "overlays")
    fork, sha = their_commit(tmp_path, "a.py", UPSTREAM_FILES["a.py"].replace(
        b"line3\n", b"line3 theirs\n"), "Their line three", branch="theirs")
    mails = tmp_path / "mails"
    git(fork, "format-patch", "-q", "-1", "-o", str(mails))
    mail = next(mails.iterdir())
    quilt_dir = tmp_path / "quilt"
    quilt_dir.mkdir()
    (quilt_dir / "theirs.patch").write_bytes(mail.read_bytes())
    (quilt_dir / "series").write_text("theirs.patch\n")
    hunk_line = mail.read_bytes().split(b"\n").index(b"@@ -1,6 +1,6 @@") + 1
    before = tree_bytes(root / "series")
    args = {"git": ("git", "main..theirs", "--repo", str(fork)), "mbox": ("mbox", str(mail)),
            "quilt": ("quilt", str(quilt_dir))}[kind]
    run = run_cli(root, "import", *args)
    assert run.rc == 2, run.text
    where = {"git": f"{fork}: commit {sha}: ", "mbox": f"{mail} (message 1): ",
             "quilt": f"{quilt_dir / 'theirs.patch'}:{hunk_line}: "}[kind]
    name = "theirs.patch" if kind == "quilt" else "their-line-three.patch"
    assert f"patchforge: error: {where}patch {name}: hunk #1 of a.py does not apply on the " \
        "series (mine.patch changes a.py before it); nothing was imported" in run.err, run.err
    assert "leave it out of the import" in run.err
    assert tree_bytes(root / "series") == before
    ok(root, "overlays")
    (fork / "pkg/b.py").write_bytes(UPSTREAM_FILES["pkg/b.py"].replace(b"y = 2", b"y = 3"))
    git(fork, "commit", "-qam", "Their y")
    ok(root, "import", "git", "theirs~1..theirs", "--repo", str(fork))
    ok(root, "overlays")


def test_an_import_of_a_fix_of_a_file_the_series_deletes_says_it_is_deleted(project, tmp_path):
    """The series deletes pkg/b.py; a colleague's commit, made on the pin, fixes a line of it.
    The refusal said "hunk #1 of pkg/b.py does not apply on the series (drop-b.patch changes
    pkg/b.py before it)", with a hint about the same fix of the same lines: neither is what
    happened. Now it says the file is deleted by drop-b.patch (exit 2, nothing written)."""
    root = project
    upstream = tmp_path / "up-upstream"
    mine = tmp_path / "mine"
    git(tmp_path, "clone", "-q", str(upstream), str(mine))
    git(mine, "rm", "-q", "pkg/b.py")
    add_patch_file(root, "up", "drop-b.patch", b"Description: drop b\nAuthor: M <m@e>\n"
                   b"Upstream-Status: Pending\nUpstream: up\n\n"
                   + git_bytes(mine, "diff", "--cached"))
    fork, sha = their_commit(tmp_path, "pkg/b.py", UPSTREAM_FILES["pkg/b.py"].replace(
        b"y = 2", b"y = 3"), "Their y")
    before = tree_bytes(root / "series")
    run = run_cli(root, "import", "git", "HEAD^!", "--repo", str(fork))
    assert run.rc == 2, run.text
    assert f"patchforge: error: {fork}: commit {sha}: patch their-y.patch: pkg/b.py is " \
        "deleted by drop-b.patch, earlier in the series; nothing was imported" in run.err, run.err
    assert "does not apply" not in run.err and "those lines" not in run.err
    assert tree_bytes(root / "series") == before


def test_an_import_of_a_fix_for_every_profile_of_lines_a_profiles_fix_changed_is_refused(
        tmp_path, monkeypatch):
    """The series fixes line3 for gfx942 only; a colleague's commit fixes the same line for
    every profile. It applies on its own base (the upstream's file), but not in gfx942's
    series: imported ("imported", exit 0), `overlays` then refused the series. Now refused
    (exit 2, nothing written), naming the commit, the profile and the patch it meets."""
    monkeypatch.setenv("PATCHFORGE_DATE", "2024-05-01")
    root, _ = git_project(tmp_path, profiles={"gfx942": "MI300X", "gfx950": "MI355X"})
    upstream = tmp_path / "up-upstream"
    mine = tmp_path / "mine"
    git(tmp_path, "clone", "-q", str(upstream), str(mine))
    (mine / "a.py").write_bytes(UPSTREAM_FILES["a.py"].replace(b"line3\n", b"line3 mine\n"))
    add_patch_file(root, "up", "mine.patch", b"Description: mine\nAuthor: M <m@e>\n"
                   b"Upstream-Status: Pending\nUpstream: up\nProfiles: gfx942\n\n"
                   + git_bytes(mine, "diff"))
    ok(root, "overlays")
    fork, sha = their_commit(tmp_path, "a.py", UPSTREAM_FILES["a.py"].replace(
        b"line3\n", b"line3 theirs\n"), "Their line three", branch="theirs")
    before = tree_bytes(root / "series")
    run = run_cli(root, "import", "git", "main..theirs", "--repo", str(fork))
    assert run.rc == 2, run.text
    assert f"patchforge: error: {fork}: commit {sha}: patch their-line-three.patch does not " \
        "apply in the series of gfx942: it changes lines of a.py that mine.patch (gfx942) " \
        "changed before it there; nothing was imported" in run.err, run.err
    assert tree_bytes(root / "series") == before
    ok(root, "overlays")


def test_import_git_refuses_a_range_git_would_take_for_an_option(project, tmp_path):
    """A RANGE beginning with `-` went to `git rev-list` as an option: `--output=FILE` ended in
    an internal error (GitPython refused it), `--all` imported every branch of the repository.
    It is refused, exit 2, with nothing written."""
    root = project
    fork = fork_with_commits(tmp_path)
    before = tree_bytes(root / "series")
    for bad in (f"--output={tmp_path / 'written'}", "--all", "-n1"):
        run = run_cli(root, "import", "git", "--repo", str(fork), "--upstream", "up", "--", bad)
        assert run.rc == 2 and "begins with '-'" in run.err, (bad, run.rc, run.err)
    assert not (tmp_path / "written").exists()
    assert tree_bytes(root / "series") == before


def test_import_git_of_a_range_git_cannot_read_says_what_git_said_and_what_to_name(project,
                                                                                  tmp_path):
    """A range that names no commits there (a tag of another repository) was refused with
    GitPython's wrapping of git's words (`stderr: 'fatal: ...\n'`, quotes and line end
    included) and nothing on what to give instead."""
    root = project
    fork = fork_with_commits(tmp_path)
    run = run_cli(root, "import", "git", "v1..v2", "--repo", str(fork), "--upstream", "up")
    assert run.rc == 2, run.text
    assert f"cannot read 'v1..v2' in {fork}: fatal: bad revision 'v1..v2'\n" in run.err, run.err
    assert "stderr:" not in run.err and "hint: name commits of that repository" in run.err


def test_import_git_reads_the_named_repository_when_a_hook_sets_git_dir(project, tmp_path,
                                                                       monkeypatch):
    """Run from a git hook, GIT_DIR and GIT_WORK_TREE name the hook's own repository (and a
    pre-receive hook's GIT_OBJECT_DIRECTORY its quarantine); `--repo` must still be the
    repository read. GitPython copes with GIT_DIR alone, not with the object directory."""
    root = project
    fork = fork_with_commits(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    git(tmp_path, "init", "-q", str(elsewhere))
    monkeypatch.setenv("GIT_DIR", str(elsewhere / ".git"))
    monkeypatch.setenv("GIT_WORK_TREE", str(elsewhere))
    monkeypatch.setenv("GIT_OBJECT_DIRECTORY", str(elsewhere / ".git" / "objects"))
    run = ok(root, "import", "git", "main..fixes", "--repo", str(fork), "--upstream", "up")
    assert run.text.splitlines() == ["imported up/fix-line-three.patch",
                                     "imported up/second-fix-crlf-file-and-a-new-module.patch"]
    assert os.environ["GIT_DIR"] == str(elsewhere / ".git")  # given back to the process


def test_import_git_quotes_diff_like_lines_of_a_real_commit_message(project, tmp_path):
    """vLLM's pull-request template leaves Markdown `---` rules (and people paste diffs) in
    commit messages: the commit is imported, those lines quoted, and the patch file still goes
    through git apply and patch as it is."""
    root = project
    fork = upstream_checkout(tmp_path, "fork")
    git(fork, "checkout", "-q", "-b", "fixes")
    (fork / "a.py").write_bytes(UPSTREAM_FILES["a.py"].replace(b"line3\n", b"LINE3\n"))
    message = ("Fix line three (#123)\n\n## Purpose\nline three\n\n---\n\n"
               "<details>\n--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n2d\n</details>\n")
    git(fork, "commit", "-qam", message)
    ok(root, "import", "git", "main..fixes", "--repo", str(fork), "--upstream", "up")
    data = (root / "series/up/fix-line-three-123.patch").read_bytes()
    head, _, _ = data.partition(b"diff --git ")
    for line in (b"---", b"--- a/a.py", b"+++ b/a.py", b"@@ -1 +1 @@", b"2d"):
        assert b"\n> " + line + b"\n" in head
    assert b"## Purpose\nline three\n" in head
    checkout = upstream_checkout(tmp_path, "check")
    (checkout / "fix.patch").write_bytes(data)
    git(checkout, "apply", "--check", "fix.patch")
    subprocess.run(["patch", "-p1", "--dry-run", "-i", "fix.patch"], cwd=checkout, check=True,
                   capture_output=True)
    assert overlay_tree(root) == {"a.py": (fork / "a.py").read_bytes()}


def test_import_mbox_from_git_format_patch(project, tmp_path):
    root = project
    fork = fork_with_commits(tmp_path)
    mbox = tmp_path / "fixes.mbox"
    mbox.write_bytes(subprocess.run(["git", "format-patch", "--stdout", "main..fixes"], cwd=fork,
                                    check=True, capture_output=True).stdout)
    run = ok(root, "import", "mbox", str(mbox))
    assert len(run.text.splitlines()) == 2
    names = (root / "series/up/series").read_text().split()
    assert names == ["fix-line-three.patch", "second-fix-crlf-file-and-a-new-module.patch"]
    second = {f["name"]: f["value"] for f in
              json.loads(ok(root, "show", names[1], "--json").out)["header"]}
    assert second["Author"] == "Other Person <other@example.com>"
    assert second["Last-Update"] == "2023-02-03"
    # One `---` before the diff (mailinfo's own, with git's diffstat, is not kept twice).
    assert b"\n---\ndiff --git " in (root / "series/up" / names[1]).read_bytes()
    assert overlay_tree(root) == {p: (fork / p).read_bytes()
                                  for p in ("a.py", "pkg/crlf.txt", "pkg/added.py")}


def test_an_mbox_made_with_no_prefix_is_said_so(project, tmp_path):
    """`git format-patch --no-prefix` writes `diff --git pkg/crlf.txt pkg/crlf.txt`; read with
    git's `a/` and `b/`, the path is `crlf.txt`, and `import mbox` refused it as "not among the
    upstream's files at the pin ... (renamed or removed since?)", a cause the user could look
    for in vain. The hint now names `--no-prefix`, and the mail made again without it is taken."""
    root = project
    fork = fork_with_commits(tmp_path)
    mbox = tmp_path / "fixes.mbox"
    mbox.write_bytes(subprocess.run(["git", "format-patch", "--no-prefix", "--stdout",
                                     "fixes~1..fixes"], cwd=fork, check=True,
                                    capture_output=True).stdout)
    before = tree_bytes(root / "series")
    run = run_cli(root, "import", "mbox", str(mbox))
    assert run.rc == 2 and "nothing was imported" in run.err, run.text
    assert "its paths have no `a/` and `b/` before them (`git format-patch --no-prefix`" in \
        run.err and "renamed or removed since" not in run.err, run.err
    assert tree_bytes(root / "series") == before
    mbox.write_bytes(subprocess.run(["git", "format-patch", "--stdout", "fixes~1..fixes"],
                                    cwd=fork, check=True, capture_output=True).stdout)
    ok(root, "import", "mbox", str(mbox))


def test_export_quilt_is_taken_by_quilt_push_and_imports_back(project, tmp_path):
    root = project
    fork = fork_with_commits(tmp_path)
    ok(root, "import", "git", "main..fixes", "--repo", str(fork), "--upstream", "up")
    exported = tmp_path / "quilt-patches"
    ok(root, "export", "--quilt", str(exported))
    assert (exported / "series").read_bytes() == (root / "series/up/series").read_bytes()
    checkout = upstream_checkout(tmp_path, "quilt-checkout")
    env = dict(os.environ, QUILT_PATCHES=str(exported), QUILTRC="/dev/null")
    proc = subprocess.run(["quilt", "push", "-a"], cwd=checkout, env=env, capture_output=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for rel in ("a.py", "pkg/crlf.txt", "pkg/added.py"):
        assert (checkout / rel).read_bytes() == (fork / rel).read_bytes()
    # And a quilt directory comes back in byte for byte.
    other, _ = git_project(tmp_path / "second")
    ok(other, "import", "quilt", str(exported))
    for name in (root / "series/up/series").read_text().split():
        assert (other / "series/up" / name).read_bytes() == (root / "series/up" / name).read_bytes()


def test_import_quilt_takes_patches_quilt_keeps_in_subdirectories(project, tmp_path):
    """quilt allows `quilt new sub/fix.patch` (patches/sub/fix.patch, `sub/fix.patch` in the
    series file), as Debian's debian/patches often does; `import quilt` refused the whole
    series ("a patch of the series is a file directly in its series directory"). Each such
    patch is imported under its file's own name, in the series' order; two of one name in two
    subdirectories, and a path out of the directory, are refused naming the series line,
    nothing written."""
    root = project
    checkout = upstream_checkout(tmp_path, "quilt-checkout")
    env = dict(os.environ, QUILT_PATCHES="patches", QUILTRC="/dev/null")

    def quilt(*args: str) -> None:
        proc = subprocess.run(["quilt", *args], cwd=checkout, env=env, capture_output=True)
        assert proc.returncode == 0, proc.stdout + proc.stderr

    for name, old, new in (("sub/fix-three.patch", b"line3\n", b"LINE3\n"),
                           ("features/deeper/fix-nine.patch", b"line9\n", b"LINE9\n")):
        quilt("new", name)
        quilt("add", "a.py")
        (checkout / "a.py").write_bytes((checkout / "a.py").read_bytes().replace(old, new))
        quilt("refresh")
    patches = checkout / "patches"
    assert (patches / "series").read_text() == "sub/fix-three.patch\nfeatures/deeper/fix-nine.patch\n"
    ok(root, "import", "quilt", str(patches))
    assert (root / "series/up/series").read_text().split() == ["fix-three.patch", "fix-nine.patch"]
    assert overlay_tree(root) == {"a.py": (checkout / "a.py").read_bytes()}
    # Two patches of one name, and an entry reaching out of the directory: refused.
    other, _ = git_project(tmp_path / "second")
    before = tree_bytes(other / "series")
    (patches / "other").mkdir()
    (patches / "other/fix-three.patch").write_bytes((patches / "sub/fix-three.patch").read_bytes())
    (patches / "series").write_text("sub/fix-three.patch\nother/fix-three.patch\n")
    run = run_cli(other, "import", "quilt", str(patches))
    assert run.rc == 2 and f"{patches / 'series'}:2:" in run.err and \
        "would be imported as fix-three.patch, the name of an earlier patch" in run.err, run.err
    (patches / "series").write_text("sub/../../a.py\n")
    run = run_cli(other, "import", "quilt", str(patches))
    assert run.rc == 2 and f"{patches / 'series'}:1:" in run.err and "'..'" in run.err, run.err
    assert tree_bytes(other / "series") == before


def test_export_quilt_into_the_project_itself_says_what_is_in_the_way(project, tmp_path):
    """`export --quilt .` from the project's root: DIR/series is the project's own series/
    directory, and the answer was "series: cannot read it to replace it (Is a directory)". It
    says that export writes DIR/series as quilt's series file, and that this is the project's
    own series/; nothing is written."""
    root = project
    fork = fork_with_commits(tmp_path)
    ok(root, "import", "git", "main..fixes", "--repo", str(fork), "--upstream", "up")
    before = snapshot(root)
    run = run_cli(root, "export", "--quilt", str(root))
    assert run.rc == 2, run.text
    assert "is a directory (the project's own series/)" in run.err \
        and "writes DIR/series, quilt's series file" in run.err, run.err
    assert snapshot(root) == before


def test_export_quilt_into_another_upstreams_own_series_is_refused_as_the_projects(
        project, tmp_path):
    """`export --quilt series/up --upstream up2`, a slip naming the project's own series
    directory of the other upstream: it was refused as "series/up/series:1: lists
    fix-line-three.patch, a patch of no series here ... (a directory of another quilt
    stack?)", with the hint to move series/up/series away, the up series' own file. It is
    refused as every directory of the project is, and nothing is written."""
    root = project
    fork = fork_with_commits(tmp_path)
    ok(root, "upstream", "add", "up2", "--git", str(tmp_path / "up-upstream"), "--at", "main",
       "--install-root", "/opt/up2")
    ok(root, "import", "git", "main..fixes", "--repo", str(fork), "--upstream", "up")
    ok(root, "new", "fix-b", "--upstream", "up2", "--file", "pkg/b.py")
    b_py = root / ".patchforge/work/up2/pkg/b.py"
    b_py.write_bytes(b_py.read_bytes().replace(b"y = 2\n", b"y = 3\n"))
    ok(root, "refresh")
    before = snapshot(root)
    run = run_cli(root, "export", "--quilt", str(root / "series/up"), "--upstream", "up2")
    assert run.rc == 2, run.text
    assert "series/up: the project's own series is never written by this command" in run.err, \
        run.err
    assert "another quilt stack" not in run.err and "away" not in run.err, run.err
    assert snapshot(root) == before


def test_export_quilt_names_with_a_space_in_sections_of_headers_only(project, tmp_path):
    """git writes `diff --git a/my file.py b/my file.py` unquoted; a section of headers only (a
    mode change, a pure rename, an empty file created or deleted) has no `---`/`+++` lines,
    and GNU patch cut such a name at its space: `quilt push` refused the exported series
    ("Cannot rename file without two valid file names", "can't find file to patch"), as it did
    the `---` lines patchforge wrote without git's tab after such a name. The export quotes
    those names, quilt gives the upstream's tree (modes too), and `import quilt` gives each
    patch back byte for byte."""
    root = project
    upstream = tmp_path / "up-upstream"
    (upstream / "pkg/mode me.sh").write_bytes(b"echo 1\n")
    (upstream / "pkg/old name.py").write_bytes(b"kept = 1\n")
    (upstream / "pkg/empty gone.py").write_bytes(b"")
    git(upstream, "add", "-A")
    git(upstream, "commit", "-qm", "files with spaces")
    ok(root, "upstream", "pin", "up", "--at", "main")
    base = git(upstream, "rev-parse", "HEAD").strip()
    fork = upstream_checkout(tmp_path, "fork")
    os.chmod(fork / "pkg/mode me.sh", 0o755)
    git(fork, "mv", "pkg/old name.py", "pkg/new name.py")
    git(fork, "rm", "-q", "pkg/empty gone.py")
    (fork / "pkg/empty new.py").write_bytes(b"")
    git(fork, "add", "-A")
    git(fork, "commit", "-qm", "headers only")
    ok(root, "import", "git", f"{base}..HEAD", "--repo", str(fork), "--upstream", "up")
    exported = tmp_path / "quilt-patches"
    ok(root, "export", "--quilt", str(exported))
    checkout = upstream_checkout(tmp_path, "quilt-checkout")
    git(checkout, "checkout", "-q", base)
    env = dict(os.environ, QUILT_PATCHES=str(exported), QUILTRC="/dev/null")
    proc = subprocess.run(["quilt", "push", "-a"], cwd=checkout, env=env, capture_output=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert tree_bytes(checkout, skip=(".git", ".pc")) == tree_bytes(fork, skip=(".git",))
    assert os.stat(checkout / "pkg/mode me.sh").st_mode & 0o111
    other = make_project(tmp_path / "second")
    add_git_upstream(other, "up", upstream, base)
    ok(other, "import", "quilt", str(exported))
    for name in (root / "series/up/series").read_text().split():
        assert (other / "series/up" / name).read_bytes() == (root / "series/up" / name).read_bytes()


def _base(root: Path) -> str:
    return json.loads((root / "upstream.lock").read_text())["upstreams"]["up"]["commit"]


def test_import_quilt_adds_missing_fields_and_refuses_missing_files(project, tmp_path):
    root = project
    quilt_dir = tmp_path / "patches"
    quilt_dir.mkdir()
    (quilt_dir / "series").write_bytes(b"# plain quilt\nplain.diff\n")
    (quilt_dir / "plain.diff").write_bytes(
        b"Fix b\n\nIndex: up/pkg/b.py\n===\n--- up.orig/pkg/b.py\n+++ up/pkg/b.py\n"
        b"@@ -1,3 +1,3 @@\n x = 1\n-y = 2\n+y = 20\n z = 3\n")
    ok(root, "import", "quilt", str(quilt_dir))
    data = (root / "series/up/plain.patch").read_bytes()
    assert b"Upstream: up\n" in data and f"Base: {_base(root)}\n".encode() in data
    assert overlay_tree(root) == {"pkg/b.py": b"x = 1\ny = 20\nz = 3\n"}
    (quilt_dir / "series").write_bytes(b"# one is gone\nmissing.patch\n")
    run = run_cli(root, "import", "quilt", str(quilt_dir))
    assert run.rc == 2 and f"{quilt_dir / 'series'}:2: missing.patch is listed but missing" \
        in run.err


def test_import_mbox_refuses_a_file_that_is_not_an_mbox_by_its_name(project, tmp_path):
    mbox = tmp_path / "notes.txt"
    mbox.write_bytes(b"From nobody\nnot a mailbox\n")
    run = run_cli(project, "import", "mbox", str(mbox))
    assert run.rc == 2 and f"{mbox}: not an mbox git can split" in run.err, run.err
    assert "patchforge-mbox-" not in run.err  # no scratch directory in the message


def test_import_mbox_reads_an_mbox_given_through_a_pipe(project, tmp_path):
    """`import mbox <(git format-patch --stdout ...)`: the shell gives a /dev/fd/N path of a pipe,
    which was read for its first line and then handed to `git mailsplit`, in whose process it
    names nothing: "not an mbox git can split: cannot stat /dev/fd/63", exit 2. Each fix's
    Origin then named the pipe (`Origin: vendor, 63`, its descriptor's number): it names the
    commit format-patch made the message of, as `import git` does."""
    root = project
    fork = fork_with_commits(tmp_path)
    proc = subprocess.run(
        ["bash", "-c", 'exec "$0" -m patchforge --root "$1" import mbox --upstream up '
                       '<(git -C "$2" format-patch --stdout main..fixes)',
         sys.executable, str(root), str(fork)], capture_output=True)
    assert proc.returncode == 0, proc.stderr.decode()
    listed = (root / "series" / "up" / "series").read_bytes().splitlines()
    assert len(listed) == 2, listed
    commits = git(fork, "rev-list", "--reverse", "main..fixes").split()
    for name, commit in zip(listed, commits):
        header = (root / "series" / "up" / name.decode()).read_bytes().split(b"\n---\n")[0]
        assert f"\nOrigin: vendor, commit {commit}\n".encode() in header, header


def test_import_mbox_refuses_a_date_that_is_no_date_naming_the_message(project, tmp_path):
    """`Date: yesterday` in a message was an internal error (ValueError, exit 70). It is
    refused as `git am` refuses it, naming the mbox and the message, with nothing written."""
    fork = fork_with_commits(tmp_path)
    mbox = tmp_path / "fixes.mbox"
    data = subprocess.run(["git", "format-patch", "--stdout", "main..fixes"], cwd=fork,
                          check=True, capture_output=True).stdout
    first, rest = data.split(b"\nDate: ", 1)
    second_message = rest.split(b"\n", 1)[1]
    mbox.write_bytes(first + b"\nDate: yesterday\n" + second_message)
    before = snapshot(project)
    run = run_cli(project, "import", "mbox", str(mbox))
    assert run.rc == 2, run.text
    assert f"{mbox} (message 1): its Date header 'yesterday' is no date" in run.err, run.err
    assert snapshot(project) == before


def test_export_mbox_is_taken_by_git_am(project, tmp_path):
    root = project
    fork = fork_with_commits(tmp_path)
    ok(root, "import", "git", "main..fixes", "--repo", str(fork), "--upstream", "up")
    mbox = tmp_path / "out.mbox"
    assert "wrote 2 messages" in ok(root, "export", "--mbox", str(mbox)).text
    first = mbox.read_bytes()
    ok(root, "export", "--mbox", str(mbox))
    assert mbox.read_bytes() == first  # deterministic
    checkout = upstream_checkout(tmp_path, "am-checkout")
    proc = subprocess.run(["git", "am", "-q", "--keep-cr", str(mbox)], cwd=checkout,
                          capture_output=True)
    assert proc.returncode == 0, proc.stderr
    for rel in ("a.py", "pkg/crlf.txt", "pkg/added.py"):
        assert (checkout / rel).read_bytes() == (fork / rel).read_bytes()
    log = git(checkout, "log", "--format=%an <%ae>|%s", "-2").splitlines()
    assert log == ["Other Person <other@example.com>|Second fix: CRLF file and a new module",
                   "Test Author <author@example.com>|Fix line three"]
    assert run_cli(root, "export").rc == 2


def test_export_mbox_into_a_named_pipe_reaches_git_am_reading_it(project, tmp_path):
    """`export --mbox PIPE` with `git am` reading the pipe (or `--mbox /dev/stdout`): the
    messages are written through it. Renamed over, the pipe became a regular file: git am got
    nothing while the command said "wrote 2 messages"; `status --html` did the same."""
    root = project
    fork = fork_with_commits(tmp_path)
    ok(root, "import", "git", "main..fixes", "--repo", str(fork), "--upstream", "up")
    checkout = upstream_checkout(tmp_path, "am-checkout")
    pipe = tmp_path / "mail.pipe"
    os.mkfifo(pipe)
    # As `export --mbox >(git am)` gives it: git am reads the pipe on its standard input.
    reader = subprocess.Popen(["sh", "-c", 'exec git am -q --keep-cr < "$1"', "sh", str(pipe)],
                              cwd=checkout, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert "wrote 2 messages" in ok(root, "export", "--mbox", str(pipe)).text
        _, err = reader.communicate(timeout=30)
    finally:
        reader.kill()
    assert reader.returncode == 0, err
    assert pipe.is_fifo()
    assert (checkout / "pkg/added.py").read_bytes() == (fork / "pkg/added.py").read_bytes()
    html = tmp_path / "report.pipe"
    os.mkfifo(html)
    cat = subprocess.Popen(["cat", str(html)], stdout=subprocess.PIPE)
    try:
        run_cli(root, "status", "--html", str(html))
        report, _ = cat.communicate(timeout=30)
    finally:
        cat.kill()
    assert html.is_fifo() and b"<html" in report.lower()


def test_export_mbox_to_standard_output_as_a_shell_gives_it_is_the_whole_mbox(project,
                                                                              tmp_path):
    """`export --mbox /dev/stdout > fixes.mbox` (standard output a file): the file was opened
    anew and written from its start, and the command's "wrote 2 messages" line, printed
    after, overwrote the mbox's first line (as root where /dev is writable, the /dev/stdout
    link itself was renamed over, and the file got that line alone); `--mbox -` wrote a file
    named `-`; a link to a file elsewhere was replaced by a file. Each is now written through:
    standard output gets the mbox alone, byte for byte the one `--mbox FILE` writes, and `git
    am` of it makes the commits."""
    root = project
    fork = fork_with_commits(tmp_path)
    ok(root, "import", "git", "main..fixes", "--repo", str(fork), "--upstream", "up")
    ok(root, "export", "--mbox", str(tmp_path / "plain.mbox"))
    plain = (tmp_path / "plain.mbox").read_bytes()
    (tmp_path / "stdout").symlink_to("/proc/self/fd/1")  # what /dev/stdout is in a container
    for name, destination in (("dash", "-"), ("link", str(tmp_path / "stdout"))):
        out = tmp_path / f"{name}.mbox"
        with open(out, "wb") as stdout:
            # Deprecations made errors: click 8.5 deprecated the stream `-` was written to.
            proc = subprocess.run([sys.executable, "-W", "error::DeprecationWarning", "-m",
                                   "patchforge", "--root", str(root),
                                   "export", "--mbox", destination], cwd=root, stdout=stdout,
                                  stderr=subprocess.PIPE)
        assert proc.returncode == 0, proc.stderr.decode()
        assert out.read_bytes() == plain, name
        assert b"wrote 2 messages to standard output" in proc.stderr
    assert (tmp_path / "stdout").is_symlink() and not (root / "-").exists()
    checkout = upstream_checkout(tmp_path, "am-checkout")
    git(checkout, "am", "-q", "--keep-cr", str(tmp_path / "link.mbox"))
    assert (checkout / "pkg/added.py").read_bytes() == (fork / "pkg/added.py").read_bytes()
    # A link the user made to a file elsewhere stays a link; the file it leads to is written.
    (tmp_path / "mail").mkdir()
    (tmp_path / "fixes.mbox").symlink_to(tmp_path / "mail" / "fixes.mbox")
    (tmp_path / "mail" / "fixes.mbox").write_bytes(b"old\n")
    ok(root, "export", "--mbox", str(tmp_path / "fixes.mbox"))
    assert (tmp_path / "fixes.mbox").is_symlink()
    assert (tmp_path / "mail" / "fixes.mbox").read_bytes() == plain


def test_status_html_dash_is_refused_and_dev_stdout_gives_the_report_then_the_table(
        project, tmp_path):
    """`status --html -` wrote a file named `-` and said nothing of it: standard output carries
    status's own answer, so it is refused (exit 2, nothing written); `--html /dev/stdout`,
    standard output a file, gets the whole report, then the table."""
    root = project
    run = run_cli(root, "status", "--html", "-", cwd=root)
    assert run.rc == 2 and "--html -" in run.err, run.err
    assert not (root / "-").exists()
    out = tmp_path / "report.out"
    # /dev/stdout as a container has it (a link to /proc/self/fd/1), one of the test's own:
    # code that renamed over it would take the machine's.
    (tmp_path / "stdout").symlink_to("/proc/self/fd/1")
    with open(out, "wb") as stdout:
        proc = subprocess.run([sys.executable, "-m", "patchforge", "--root", str(root),
                               "status", "--html", str(tmp_path / "stdout")], cwd=root,
                              stdout=stdout,
                              stderr=subprocess.PIPE)
    assert proc.returncode == 0, proc.stderr.decode()
    report, _, table = out.read_bytes().partition(b"</html>\n")
    assert report.startswith(b"<!DOCTYPE html>") and b"no patches yet" in table, table


def test_export_mbox_of_a_crlf_fix_says_git_am_needs_keep_cr(project, tmp_path):
    """A fix that changes a file with CRLF lines, exported with `export --mbox`: the command
    said only "wrote 2 messages", and the `git am` the user typed next failed ("patch does not
    apply": it drops each line's CR). It now names the fix and the command that applies the
    mbox, which does; a series without CRLF lines gets no such note."""
    root = project
    fork = fork_with_commits(tmp_path)
    ok(root, "import", "git", "main..fixes", "--repo", str(fork), "--upstream", "up")
    mbox = tmp_path / "out.mbox"
    run = ok(root, "export", "--mbox", str(mbox))
    crlf = "second-fix-crlf-file-and-a-new-module.patch"
    assert f"note: {crlf} changes lines ending in CRLF: apply the mbox with " \
           f"`git am --keep-cr {mbox}`" in run.err, run.err
    assert "fix-line-three" not in run.err
    plain = upstream_checkout(tmp_path, "plain-am")
    assert subprocess.run(["git", "am", "-q", str(mbox)], cwd=plain,
                          capture_output=True).returncode != 0
    checkout = upstream_checkout(tmp_path, "keep-cr-am")
    proc = subprocess.run(["git", "am", "-q", "--keep-cr", str(mbox)], cwd=checkout,
                          capture_output=True)
    assert proc.returncode == 0, proc.stderr
    assert (checkout / "pkg/crlf.txt").read_bytes() == b"one\r\nTWO\r\nthree\r\n"
    ok(root, "delete", crlf.removesuffix(".patch"))
    assert "note:" not in ok(root, "export", "--mbox", str(mbox)).err


def test_a_patch_new_made_without_a_change_is_said_by_lint_and_export(project, tmp_path):
    """`new fix-d --no-edit` (started, nothing in it yet), then the series handed on with
    `export --quilt` and `--mbox`: lint said nothing, the exports exit 0 without a word, and
    the colleague's `quilt push -a` stopped on it ("Only garbage was found in the patch
    input"), `git am` too ("No valid patches in input"). lint warns now (`empty`, exit 0: an
    empty patch is a state `new` leaves on purpose), and each export names it and what stops
    on it; once the change is refreshed into it, nothing is said."""
    root = project
    ok(root, "new", "fix-d", "--no-edit", "-m", "started, nothing yet")
    run = ok(root, "lint", "--no-forge", "--json")
    found = [f for f in json.loads(run.out)["findings"] if f["check"] == "empty"]
    assert found == [{"patch": "up/fix-d.patch", "check": "empty", "severity": "warning",
                      "message": found[0]["message"]}], run.out
    assert "`patchforge edit fix-d`" in found[0]["message"]
    exported, mbox = tmp_path / "q", tmp_path / "out.mbox"
    run = ok(root, "export", "--quilt", str(exported), "--mbox", str(mbox))
    assert "warning: fix-d.patch has no change yet (no diff): `quilt push` stops on it" \
        in run.err, run.err
    assert "warning: fix-d.patch has no change yet (no diff): `git am` stops on its message" \
        in run.err, run.err
    # What the warnings say of the real tools.
    checkout = upstream_checkout(tmp_path, "quilt-checkout")
    env = dict(os.environ, QUILT_PATCHES=str(exported), QUILTRC="/dev/null")
    proc = subprocess.run(["quilt", "push", "-a"], cwd=checkout, env=env, capture_output=True)
    assert proc.returncode != 0 and b"Only garbage" in proc.stdout + proc.stderr
    checkout = upstream_checkout(tmp_path, "am-checkout")
    proc = subprocess.run(["git", "am", "-q", str(mbox)], cwd=checkout, capture_output=True)
    assert proc.returncode != 0 and b"No valid patches" in proc.stderr
    ok(root, "edit", "fix-d", "--file", "a.py")
    work = root / ".patchforge" / "work" / "up" / "a.py"
    work.write_bytes(work.read_bytes().replace(b"line5\n", b"LINE5\n"))
    ok(root, "refresh")
    assert "empty" not in ok(root, "lint", "--no-forge").out
    assert "warning" not in ok(root, "export", "--quilt", str(exported), "--mbox",
                               str(mbox)).err


def test_export_mbox_of_several_upstreams_says_which_and_git_am_takes_each(project, tmp_path):
    """With fixes for two upstreams (the example stack's vllm and aiter), `export --mbox`
    wrote them all into one mailbox: `git am` in one upstream's tree stopped at the first
    patch of the other, and `import mbox --upstream U` would put the other's fixes into U's
    series. It is refused, exit 2, naming the upstreams and the way out, nothing written (nor
    the quilt directory asked for beside it); `--upstream U` exports U's series alone, for
    `git am` and for quilt."""
    from helpers.project import add_patch_file, lock_doc, patch_bytes
    from helpers.upstream import Upstream

    root = project
    fork = fork_with_commits(tmp_path)
    ok(root, "import", "git", "main..fixes", "--repo", str(fork), "--upstream", "up")
    other = Upstream(tmp_path / "other-upstream", {"tool/run.py": b"print(1)\nprint(2)\n"})
    add_git_upstream(root, "other", other.path, "main", install_root="/opt/other")
    base = lock_doc(root)["upstreams"]["other"]["commit"]
    add_patch_file(root, "other", "run.patch", patch_bytes(
        "other", base, "fix run", other.diff({"tool/run.py": b"print(1)\nprint(3)\n"}, base)))
    mbox, quilt = tmp_path / "all.mbox", tmp_path / "quilt"
    for args in (["--mbox", str(mbox)], ["--quilt", str(quilt), "--mbox", str(mbox)]):
        refused = run_cli(root, "export", *args)
        assert refused.rc == 2, refused.text
        assert "2 upstreams (up, other)" in refused.err and "--upstream other" in refused.err
        assert not mbox.exists() and not quilt.exists()
    ok(root, "export", "--upstream", "other", "--mbox", str(mbox), "--quilt", str(quilt))
    assert mbox.read_bytes().count(b"\nX-Patchforge-Patch: ") == 1
    assert (quilt / "series").read_text() == "run.patch\n"
    checkout = tmp_path / "other-checkout"
    git(tmp_path, "clone", "-q", str(other.path), str(checkout))
    proc = subprocess.run(["git", "am", "-q", str(mbox)], cwd=checkout, capture_output=True)
    assert proc.returncode == 0, proc.stderr
    assert (checkout / "tool/run.py").read_bytes() == b"print(1)\nprint(3)\n"
    ok(root, "export", "--upstream", "up", "--mbox", str(mbox))
    assert mbox.read_bytes().count(b"\nX-Patchforge-Patch: ") == 2
    unknown = run_cli(root, "export", "--upstream", "nope", "--mbox", str(mbox))
    assert unknown.rc == 2 and "unknown upstream 'nope'" in unknown.err, unknown.text


@pytest.mark.parametrize("upstreams", [0, 2])
def test_import_without_upstream_says_what_is_configured(tmp_path, upstreams):
    """`import quilt DIR` (or mbox, git, overlay, or `new`) without --upstream, in a project
    with no upstream or with several: the message says which, and how to go on (it said
    "several upstreams" for none; `import git` and `import overlay` said only that the option
    is missing, even where there is one upstream to take)."""
    root = tmp_path / "project"
    root.mkdir()
    ok(None, "init", cwd=root)
    for index in range(upstreams):
        source = tmp_path / f"site{index}"
        (source / "pkg").mkdir(parents=True)
        (source / "pkg" / "a.py").write_bytes(b"a = 1\n")
        ok(root, "upstream", "add", f"site{index}", "--dir", str(source), "--at", "v1")
    quilt = tmp_path / "patches"
    quilt.mkdir()
    (quilt / "series").write_bytes(b"")
    overlay = tmp_path / "a.py"
    overlay.write_bytes(b"a = 2\n")
    for args in (("import", "quilt", str(quilt)), ("new", "fix"),
                 ("import", "git", "HEAD~1..HEAD", "--repo", str(tmp_path)),
                 ("import", "overlay", str(overlay), "--path", "pkg/a.py", "--name", "fix")):
        run = run_cli(root, *args)
        assert run.rc == 2
        if upstreams:
            assert "several upstreams are configured (site0, site1)" in run.err, run.err
        else:
            assert "no upstream is configured" in run.err and "upstream add" in run.err, run.err


def _diff_of(upstream: Path, rel: str, new: bytes) -> bytes:
    """`git diff` of one file of the test upstream changed to `new`."""
    (upstream / rel).write_bytes(new)
    diff = subprocess.run(["git", "diff", "--", rel], cwd=upstream, check=True,
                          capture_output=True).stdout
    git(upstream, "checkout", "--", rel)
    return diff


def test_export_mbox_then_import_mbox_keeps_every_field_byte_for_byte(project, tmp_path):
    """A series through `export --mbox` and `import mbox` comes back as the same patch files:
    every DEP-3 field (multi-line Description, Bug, Forwarded, Keeps, an unknown field, CRLF
    and trailing blanks), the free text (a `From ` line in it included), the diffstat and the
    names; a patch without a header gets what `import quilt` gives it. And `git am` still takes
    the mbox: each patch a commit with its author and subject."""
    from helpers.project import add_patch_file

    root = project
    upstream = tmp_path / "up-upstream"
    base = _base(root)
    one = (b"Description: Fix line three\n the long part  \n .\n second paragraph\n"
           b"Author: Dev <dev@example.com>\nOrigin: vendor, https://example.com/a\n"
           b"Bug: https://bugs.example.com/1\r\nForwarded: https://github.com/o/r/pull/3\n"
           b"Upstream-Status: Submitted [https://github.com/o/r/pull/3]\nUpstream: up\n"
           b"Base: " + base.encode() + b"\nKeeps: a.py: LINE3\nX-Team-Ticket: T-9  \n"
           b"Last-Update: 2024-02-03\n\nFree text, \xe9t\xe9.\nFrom the start of a line.\n"
           b">From a quoted line.\n-- >8 --\n---\n a.py | 2 +-\n 1 file changed\n\n"
           + _diff_of(upstream, "a.py", UPSTREAM_FILES["a.py"].replace(b"line3\n", b"LINE3\n")))
    two = (b"From 1111111111111111111111111111111111111111 Mon Sep 17 00:00:00 2001\n"
           b"From: Other Person <other@example.com>\nDate: Fri, 2 Feb 2024 10:00:00 +0100\n"
           b"Subject: [PATCH] Second fix\nUpstream: up\nBase: " + base.encode() + b"\n"
           b"Upstream-Status: Pending\n\nWhy, in a line.\n---\n"
           + _diff_of(upstream, "pkg/b.py", b"x = 1\ny = 20\nz = 3\n"))
    three = (b"A patch with no header at all.\n---\n"
             + _diff_of(upstream, "pkg/crlf.txt", b"one\r\nTWO\r\nthree\r\n"))
    for name, data in (("fix-three.patch", one), ("second.patch", two), ("bare.patch", three)):
        add_patch_file(root, "up", name, data)
    mbox, quilt_dir = tmp_path / "out.mbox", tmp_path / "quilt"
    ok(root, "export", "--mbox", str(mbox))
    ok(root, "export", "--quilt", str(quilt_dir))

    via_mbox, mbox_base = git_project(tmp_path / "via-mbox")
    assert ok(via_mbox, "import", "mbox", str(mbox)).text.split() == [
        "imported", "up/fix-three.patch", "imported", "up/second.patch", "imported",
        "up/bare.patch"]
    via_quilt, quilt_base = git_project(tmp_path / "via-quilt")
    ok(via_quilt, "import", "quilt", str(quilt_dir))
    assert (via_mbox / "series/up/series").read_bytes() == (root / "series/up/series").read_bytes()
    for name, data in (("fix-three.patch", one), ("second.patch", two)):
        assert (via_mbox / "series/up" / name).read_bytes() == data, name
    assert (via_mbox / "series/up/bare.patch").read_bytes() == \
        (via_quilt / "series/up/bare.patch").read_bytes().replace(quilt_base.encode(),
                                                                  mbox_base.encode())
    assert overlay_tree(via_mbox) == overlay_tree(root)

    # Into a project whose upstream has another name: the Upstream field follows the series,
    # every other byte is the fix's (from an mbox as from a quilt directory).
    other, _ = git_project(tmp_path / "other", name="other")
    ok(other, "import", "mbox", str(mbox))
    assert (other / "series/other/fix-three.patch").read_bytes() == \
        one.replace(b"Upstream: up\n", b"Upstream: other\n")
    other_quilt, _ = git_project(tmp_path / "other-quilt", name="other")
    ok(other_quilt, "import", "quilt", str(quilt_dir))
    assert (other_quilt / "series/other/fix-three.patch").read_bytes() == \
        one.replace(b"Upstream: up\n", b"Upstream: other\n")

    # git am takes the same mbox: three commits, authors and subjects from the mail headers.
    checkout = upstream_checkout(tmp_path, "am-checkout")
    proc = subprocess.run(["git", "am", "-q", "--keep-cr", "--patch-format=mboxrd", str(mbox)],
                          cwd=checkout, capture_output=True)
    assert proc.returncode == 0, proc.stderr
    assert git(checkout, "log", "--format=%an|%s", "-3").splitlines() == [
        "Unknown|patchforge patch", "Other Person|Second fix",
        "Dev|Fix line three"]
    assert {p: (checkout / p).read_bytes() for p in ("a.py", "pkg/b.py", "pkg/crlf.txt")} == \
        overlay_tree(root)

    # And those commits, brought in with `import git`, give the fields back as fields (git am
    # trims trailing blanks, makes the text UTF-8 and takes a `From:`/`Subject:` first line
    # for the commit itself).
    via_git, _ = git_project(tmp_path / "via-git")
    ok(via_git, "import", "git", "HEAD~3..HEAD", "--repo", str(checkout), "--upstream", "up")
    names = (via_git / "series/up/series").read_text().split()
    assert names == ["fix-line-three.patch", "second-fix.patch", "patchforge-patch.patch"]
    first = (via_git / "series/up/fix-line-three.patch").read_bytes()
    assert first.partition(b"\n---\n")[0] == one.partition(b"\n---\n")[0].replace(
        b"  \n", b"\n").replace(b"\r\n", b"\n").replace(b"\xe9", "\xe9".encode()), first
    second = (via_git / "series/up/second-fix.patch").read_bytes()
    origin = f"Origin: vendor, commit {git(checkout, 'rev-parse', 'HEAD~1').strip()}\n"
    assert second.partition(b"\n---\n")[0] == two.partition(b"\n---\n")[0].replace(
        b"Pending\n\n", b"Pending\n" + origin.encode() + b"\n")

    # So do those commits as `git format-patch` gives them, through `import mbox`: their
    # fields were taken for free text under a new header, so a `Profiles:` or `Keeps:` field
    # limited or checked nothing any more.
    formatted = tmp_path / "formatted.mbox"
    formatted.write_bytes(subprocess.run(["git", "format-patch", "--stdout", "HEAD~3..HEAD"],
                                         cwd=checkout, check=True, capture_output=True).stdout)
    via_format, _ = git_project(tmp_path / "via-format-patch")
    ok(via_format, "import", "mbox", str(formatted))
    # (The second's message begins with its patch file's own `From <sha>` line, which
    # format-patch does not quote: every mbox reader, `git am` too, starts a message there.)
    assert (via_format / "series/up/fix-line-three.patch").read_bytes().partition(
        b"\n---\n")[0] == first.partition(b"\n---\n")[0]


def test_imports_never_give_two_fixes_one_name(project, tmp_path):
    """Two commits with one subject (a common "Fix typo") are two fixes: `import mbox` names the
    second `<subject>-2`; quilt's `fix.patch` and `fix.diff` (both `fix.patch` here) are refused
    naming the series line. Before, each wrote the second over the first, listed the name twice
    (every later command refused the series) and exited 0: the first fix was gone."""
    root = project
    fork = upstream_checkout(tmp_path, "fork")
    for old, new in ((b"line3\n", b"LINE3\n"), (b"line9\n", b"LINE9\n")):
        (fork / "a.py").write_bytes((fork / "a.py").read_bytes().replace(old, new))
        git(fork, "commit", "-qam", "Fix typo")
    mbox = tmp_path / "fixes.mbox"
    mbox.write_bytes(subprocess.run(["git", "format-patch", "--stdout", "-2"], cwd=fork,
                                    check=True, capture_output=True).stdout)
    ok(root, "import", "mbox", str(mbox))
    assert (root / "series/up/series").read_text().split() == ["fix-typo.patch", "fix-typo-2.patch"]
    assert overlay_tree(root) == {"a.py": (fork / "a.py").read_bytes()}

    quilt_dir = tmp_path / "patches"
    quilt_dir.mkdir()
    (quilt_dir / "series").write_bytes(b"fix.patch\nfix.diff\n")
    for name, (old, new) in (("fix.patch", (b"x = 1", b"x = 10")), ("fix.diff", (b"z = 3", b"z = 30"))):
        (quilt_dir / name).write_bytes(
            b"--- a/pkg/b.py\n+++ b/pkg/b.py\n@@ -1,3 +1,3 @@\n"
            + b"".join((b" " if line != old else b"-") + line + b"\n" + (b"+" + new + b"\n" if line == old else b"")
                       for line in (b"x = 1", b"y = 2", b"z = 3")))
    before = tree_bytes(root / "series")
    run = run_cli(root, "import", "quilt", str(quilt_dir))
    assert run.rc == 2 and f"{quilt_dir / 'series'}:2: would be imported as fix.patch" in run.err, run.err
    assert tree_bytes(root / "series") == before


def test_an_import_killed_at_any_write_is_finished_by_running_it_again(project, tmp_path):
    """`import mbox` of three fixes (two with one subject) killed at each of its writes in
    turn: running it again finishes it, giving exactly what an uncut import gives. Before, a
    patch file written but not yet listed made the rerun fail ("already exists in the
    series", which it was not), and one listed stopped it too: the rest of the mbox never came
    in, and the import could not be finished."""
    import shutil

    from helpers.cli import run_subprocess

    fork = upstream_checkout(tmp_path, "fork")
    for number, subject in ((3, "Fix typo"), (9, "Fix typo"), (15, "Fix the end")):
        (fork / "a.py").write_bytes((fork / "a.py").read_bytes().replace(
            b"line%d\n" % number, b"LINE%d\n" % number))
        git(fork, "commit", "-qam", subject)
    mbox = tmp_path / "fixes.mbox"
    mbox.write_bytes(subprocess.run(["git", "format-patch", "--stdout", "-3"], cwd=fork,
                                    check=True, capture_output=True).stdout)
    pristine = tmp_path / "pristine"
    shutil.copytree(project, pristine, symlinks=True)
    ok(project, "import", "mbox", str(mbox))
    done = tree_bytes(project / "series")
    for nth in range(1, 20):
        shutil.rmtree(project)
        shutil.copytree(pristine, project, symlinks=True)
        killed = run_subprocess(project, "import", "mbox", str(mbox),
                                env={"PATCHFORGE_FAULT": f"rename:{nth}"})
        if killed.returncode == 0:
            break
        assert killed.returncode == 137
        ok(project, "import", "mbox", str(mbox))
        # (but the hidden temporary file the killed write left, which nothing reads)
        assert {rel: data for rel, data in tree_bytes(project / "series").items()
                if not rel.endswith(".tmp")} == done, nth
    else:
        raise AssertionError("the import never ran to its end")
    assert nth > 3


def test_import_git_refuses_a_range_with_a_merge_commit(project, tmp_path):
    """A merge in RANGE (a branch that merged another, with a conflict resolved in the merge)
    was skipped without a word: the resolution's changes were in no patch, and the series
    imported did not give the branch's files. Now the range is refused naming the merge,
    nothing written."""
    root = project
    fork = upstream_checkout(tmp_path, "fork")
    git(fork, "checkout", "-q", "-b", "fixes")
    (fork / "a.py").write_bytes(UPSTREAM_FILES["a.py"].replace(b"line3\n", b"LINE3\n"))
    git(fork, "commit", "-qam", "Fix line three")
    git(fork, "checkout", "-q", "-b", "side", "main")
    (fork / "pkg" / "b.py").write_bytes(b"x = 1\ny = 20\nz = 3\n")
    git(fork, "commit", "-qam", "Side fix")
    git(fork, "checkout", "-q", "fixes")
    git(fork, "merge", "-q", "--no-commit", "--no-ff", "side")
    (fork / "pkg" / "b.py").write_bytes(b"x = 1\ny = 21\nz = 3\n")  # changed in the merge
    git(fork, "commit", "-qam", "Merge side")
    merge = git(fork, "rev-parse", "HEAD").strip()
    before = tree_bytes(root / "series")
    run = run_cli(root, "import", "git", "main..fixes", "--repo", str(fork), "--upstream", "up")
    assert run.rc == 2 and f"merge commit {merge[:12]}" in run.err, run.err
    assert tree_bytes(root / "series") == before


def test_import_mbox_of_an_mbox_saved_with_crlf_lines(project, tmp_path):
    """format-patch output saved by a mail client (or an editor on Windows) with CRLF line
    ends: before, every diff line kept the transport's CR, so each imported fix was a conflict
    against its own upstream. Now the CRs of a converted mbox are dropped as `git am` drops
    them, and a file's own CRLF lines (pkg/crlf.txt) come through as they were."""
    root = project
    fork = fork_with_commits(tmp_path)
    mbox = tmp_path / "saved.mbox"
    mbox.write_bytes(subprocess.run(["git", "format-patch", "--stdout", "main..fixes"], cwd=fork,
                                    check=True, capture_output=True).stdout.replace(b"\n", b"\r\n"))
    ok(root, "import", "mbox", str(mbox))
    assert overlay_tree(root) == {p: (fork / p).read_bytes()
                                  for p in ("a.py", "pkg/crlf.txt", "pkg/added.py")}


@pytest.mark.parametrize("encoded", [False, True])
def test_export_mbox_then_import_mbox_keeps_a_non_ascii_patch_name(project, tmp_path, encoded):
    """A fix named `fix-é` went out through export --mbox and came back as `fix-��`: the mail
    header parser read the name's UTF-8 bytes as U+FFFD, and the import wrote the fix under that
    other name, exit 0. Now the name comes back as it was, also when a mail system encoded the
    header (RFC 2047)."""
    root = project
    overlay = tmp_path / "b.py"
    overlay.write_bytes(b"x = 1\ny = 2000\nz = 3\n")
    ok(root, "import", "overlay", str(overlay), "--upstream", "up", "--path", "pkg/b.py",
       "--name", "fix-é")
    original = (root / "series/up/fix-é.patch").read_bytes()
    mbox = tmp_path / "out.mbox"
    ok(root, "export", "--mbox", str(mbox))
    if encoded:
        data = mbox.read_bytes()
        assert "X-Patchforge-Patch: fix-é.patch\n".encode() in data
        mbox.write_bytes(data.replace("X-Patchforge-Patch: fix-é.patch\n".encode(),
                                      b"X-Patchforge-Patch: =?utf-8?q?fix-=C3=A9=2Epatch?=\n"))
    ok(root, "delete", "fix-é")
    ok(root, "import", "mbox", str(mbox))
    assert (root / "series/up/series").read_bytes() == "fix-é.patch\n".encode()
    assert (root / "series/up/fix-é.patch").read_bytes() == original


def test_export_never_writes_over_the_project_and_refuses_a_missing_directory(project, tmp_path):
    """`export --mbox series/up/NAME.patch` replaced the fix with a mailbox (its header fields
    gone: exit 0), `--mbox upstream.lock` the lock, `--quilt series/up` rewrote the series file
    without its comments, `--mbox` into a directory that does not exist made it, and `status
    --html` wrote its page over the fix. Each is refused (exit 2) with the project as it was; a patch that does
    not parse fails `--quilt` before any file of it is written."""
    root = project
    fork = fork_with_commits(tmp_path)
    ok(root, "import", "git", "main..fixes", "--repo", str(fork), "--upstream", "up")
    series = root / "series" / "up" / "series"
    series.write_bytes(b"# carried fixes\n" + series.read_bytes())
    first = sorted((root / "series" / "up").glob("*.patch"))[0]
    before = tree_bytes(root)
    for args in (["--mbox", str(first)], ["--mbox", str(root / "upstream.lock")],
                 ["--mbox", "series/up/new.mbox"], ["--quilt", "series/up"],
                 ["--quilt", str(root)], ["--quilt", str(root / ".patchforge" / "q")],
                 ["--quilt", str(tmp_path / "q"), "--mbox", str(tmp_path / "nowhere" / "x.mbox")]):
        run = run_cli(root, "export", *args, cwd=root)
        assert run.rc == 2, (args, run.text)
        assert "Traceback" not in run.text
        assert tree_bytes(root) == before, args
    assert "nowhere" in run.err and "does not exist" in run.err, run.err
    assert not (tmp_path / "nowhere").exists() and not (tmp_path / "q").exists()
    # `status --html` the same (it wrote its page over the fix).
    for out in (first, root / "upstream.lock", root / "overlays" / "report.html"):
        run = run_cli(root, "status", "--html", str(out))
        assert run.rc == 2 and "never written" in run.err, (out, run.text)
        assert tree_bytes(root) == before, out
    # A patch that does not parse: nothing of the quilt directory is written.
    first.write_bytes(first.read_bytes().replace(b"@@ -1,", b"@@ -x,", 1))
    run = run_cli(root, "export", "--quilt", str(tmp_path / "q2"))
    assert run.rc == 2 and str(first.name) in run.err, run.text
    assert not (tmp_path / "q2").exists()


def test_export_and_status_html_never_write_into_the_stacks_git(project, tmp_path):
    """`export --mbox .git/HEAD` replaced the repository's HEAD with a mailbox (`git status`:
    "not a git repository"), exit 0; `status --html .git/config` its configuration. The
    project's own files were refused, the repository holding them was not. Now `.git` (of
    the project's root, or of a repository the project sits in) is refused as they are."""
    root = project
    git(root, "init", "-q")
    head = (root / ".git" / "HEAD").read_bytes()
    before = tree_bytes(root)
    for command in (["export", "--mbox", ".git/HEAD"], ["export", "--mbox", ".git/new.mbox"],
                    ["export", "--quilt", ".git/q"], ["status", "--html", ".git/config"]):
        run = run_cli(root, *command, cwd=root)
        assert run.rc == 2 and "never written" in run.err and ".git" in run.err, \
            (command, run.text)
        assert tree_bytes(root) == before, command
    assert (root / ".git" / "HEAD").read_bytes() == head
    assert not (root / ".git" / "q").exists()
    git(root, "status", "--short")  # the repository still reads
    # A project in a subdirectory of the repository: that repository's .git is refused too.
    outer = tmp_path / "outer"
    outer.mkdir()
    git(outer, "init", "-q")
    inner = outer / "stack"
    root.rename(inner)
    subprocess.run(["rm", "-rf", str(inner / ".git")], check=True)
    run = run_cli(inner, "export", "--mbox", str(outer / ".git" / "HEAD"), cwd=inner)
    assert run.rc == 2 and "never written" in run.err, run.text
    assert b"ref:" in (outer / ".git" / "HEAD").read_bytes()


def test_an_import_overlay_killed_is_finished_on_a_later_day(project, tmp_path, monkeypatch):
    """An `import overlay` killed after writing its patch file, before listing it, run again the
    next day: the patch it would write carries another Last-Update, and the rerun was refused
    ("a patch file named fix-a.patch is already there"). The rerun now lists the file the first
    run wrote, as it was; a file there that differs in more than its date is still refused."""
    from helpers.cli import run_subprocess

    overlay = tmp_path / "a.py.overlay"
    overlay.write_bytes(UPSTREAM_FILES["a.py"].replace(b"line7\n", b"line7 fixed\n"))
    args = ("import", "overlay", str(overlay), "--upstream", "up", "--path", "a.py",
            "--name", "fix-a")
    killed = run_subprocess(project, *args, env={"PATCHFORGE_FAULT": "rename:2"})
    assert killed.returncode == 137
    written = (project / "series/up/fix-a.patch").read_bytes()
    assert b"Last-Update: 2024-05-01\n" in written
    series = project / "series/up/series"
    assert not series.exists() or b"fix-a" not in series.read_bytes()
    monkeypatch.setenv("PATCHFORGE_DATE", "2024-05-02")
    other = tmp_path / "other.overlay"
    other.write_bytes(overlay.read_bytes().replace(b"line9\n", b"line9 too\n"))
    run = run_cli(project, "import", "overlay", str(other), *args[3:])
    assert run.rc == 2 and "already there" in run.err, run.text
    ok(project, *args)
    assert (project / "series/up/fix-a.patch").read_bytes() == written
    assert (project / "series/up/series").read_bytes().count(b"fix-a.patch\n") == 1


def _imported_beside_a_quilt_directory(root: Path, tmp_path: Path) -> tuple[list[str], Path]:
    """The fork's fixes imported into `root`'s series: (their names, an empty directory to
    export into)."""
    fork = fork_with_commits(tmp_path)
    ok(root, "import", "git", "main..fixes", "--repo", str(fork), "--upstream", "up")
    exported = tmp_path / "quilt-patches"
    exported.mkdir()
    return (root / "series/up/series").read_text().split(), exported


def test_export_quilt_never_unlists_another_stacks_patches(project, tmp_path):
    """`export --quilt DIR` over a directory of another quilt stack replaced its series file,
    leaving that stack's patch there and unlisted without a word. Refused, naming the line,
    with nothing written; an earlier export of this series (a patch since renamed or deleted)
    is still replaced, and quilt takes the result."""
    root = project
    names, exported = _imported_beside_a_quilt_directory(root, tmp_path)
    (exported / "theirs.patch").write_bytes(b"--- a/x\n+++ b/x\n@@ -0,0 +1 @@\n+x\n")
    (exported / "series").write_bytes(b"# their stack\ntheirs.patch -p1\n")
    refused = run_cli(root, "export", "--quilt", str(exported))
    assert refused.rc == 2
    assert f"{exported / 'series'}:2: lists theirs.patch" in refused.err
    assert sorted(p.name for p in exported.iterdir()) == ["series", "theirs.patch"]
    assert (exported / "series").read_bytes() == b"# their stack\ntheirs.patch -p1\n"
    # This series' own earlier export: a patch renamed since, another deleted since.
    (exported / "series").unlink()
    (exported / "theirs.patch").unlink()
    ok(root, "export", "--quilt", str(exported))
    ok(root, "rename", names[0], "renamed")
    ok(root, "delete", names[1])
    ok(root, "export", "--quilt", str(exported))
    assert (exported / "series").read_text().split() == \
        (root / "series/up/series").read_text().split()
    checkout = upstream_checkout(tmp_path, "quilt-checkout")
    env = dict(os.environ, QUILT_PATCHES=str(exported), QUILTRC="/dev/null")
    proc = subprocess.run(["quilt", "push", "-a"], cwd=checkout, env=env, capture_output=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_export_quilt_never_overwrites_a_same_named_patch_no_export_wrote(project, tmp_path):
    """A file in DIR named like a patch of the series that no export wrote (another stack's
    fix.patch, one written by hand) was replaced without a word when DIR held no export
    record, and refused as "changed since patchforge exported it" when the record did not name
    it. Refused now, naming the file and `--force`, nothing written; a file that is the
    series' own patch (an export by a version that kept no record) is replaced as before, and
    `--force` replaces the other."""
    root = project
    names, exported = _imported_beside_a_quilt_directory(root, tmp_path)
    theirs = b"--- a/x\n+++ b/x\n@@ -0,0 +1 @@\n+theirs\n"
    (exported / names[0]).write_bytes(theirs)
    # An old export's file (no record then): the series' own patch.
    (exported / names[1]).write_bytes((root / "series/up" / names[1]).read_bytes())
    before = tree_bytes(exported)
    refused = run_cli(root, "export", "--quilt", str(exported))
    assert refused.rc == 2, refused.text
    assert f"{exported / names[0]}: a patch file no export of this project wrote " \
           f"({exported} holds no export record)" in refused.err, refused.err
    assert "nothing was written" in refused.err and "--force" in refused.err, refused.err
    assert tree_bytes(exported) == before
    # With a record that does not name it (a fix added since the last export, whose name a
    # file written by hand in DIR has): refused alike, naming the record.
    (exported / names[0]).unlink()
    ok(root, "export", "--quilt", str(exported))
    ok(root, "rename", names[0], "added")
    (exported / "added.patch").write_bytes(theirs)
    before = tree_bytes(exported)
    refused = run_cli(root, "export", "--quilt", str(exported))
    assert refused.rc == 2, refused.text
    assert f"{exported / 'added.patch'}: a patch file no export of this project wrote " \
           f"({exported / '.patchforge-export'} does not name it)" in refused.err, refused.err
    assert tree_bytes(exported) == before
    run = run_cli(root, "export", "--quilt", str(exported), "--force")
    assert run.rc == 0, run.text
    assert (exported / "added.patch").read_bytes() != theirs
    assert (exported / "series").read_text().split() == \
        (root / "series/up/series").read_text().split()


def test_export_mbox_refuses_force_which_only_quilt_takes(project, tmp_path):
    """`export --mbox FILE --force` was taken and did nothing (--force is --quilt's: a patch
    file of the same name in DIR that no export wrote). A usage error now, exit 2, nothing
    written."""
    mbox = tmp_path / "fixes.mbox"
    refused = run_cli(project, "export", "--mbox", str(mbox), "--force")
    assert refused.rc == 2, refused.text
    assert "--force goes with --quilt DIR" in refused.err, refused.err
    assert not mbox.exists()
    assert run_cli(project, "export", "--mbox", str(mbox)).rc == 0 and mbox.exists()


@pytest.mark.parametrize("value", ["7 Dec 2026", "2026-13-40"])
def test_export_mbox_refuses_a_last_update_that_is_no_date(project, tmp_path, value):
    """`Last-Update: 7 Dec 2026` (or a day no month has) was mailed as `Date: Thu, 01 Jan
    1970`, and `git am` made the commit on that day, exit 0. Refused now, as `pr` refuses it,
    naming the patch file and the field's line, nothing written: neither the mbox nor the
    quilt directory of the same command. A patch without the field is mailed as before."""
    root = project
    base = git(root, "-C", str(tmp_path / "up-upstream"), "rev-parse", "HEAD").strip()
    diff = (b"diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -1,3 +1,3 @@\n line1\n"
            b"-line2\n+LINE2\n line3\n")
    data = patch_bytes("up", base, "fix", diff, f"Last-Update: {value}\n")
    add_patch_file(root, "up", "fix.patch", data)
    line = 1 + data[:data.index(b"Last-Update:")].count(b"\n")
    mbox, quilt = tmp_path / "out.mbox", tmp_path / "quilt"
    run = run_cli(root, "export", "--mbox", str(mbox), "--quilt", str(quilt))
    assert run.rc == 2, run.text
    assert f"series/up/fix.patch:{line}: Last-Update: {value!r} is not a date" in run.err, \
        run.err
    assert not mbox.exists() and not quilt.exists()

    (root / "series/up/fix.patch").write_bytes(data.replace(f"Last-Update: {value}\n".encode(),
                                                            b""))
    ok(root, "export", "--mbox", str(mbox))
    assert b"\nDate: Thu, 01 Jan 1970 00:00:00 +0000\n" in mbox.read_bytes()


def test_export_mbox_and_pr_read_last_update_as_one_day(project, tmp_path):
    """`Last-Update` is DEP-3's YYYY-MM-DD, read one way: `export --mbox` took any form
    `fromisoformat` reads and mailed `2026-05-01T10:00:00+02:00` as 10:00 +0000 (the offset
    dropped: `git am` recorded 12:00 local as 10:00 UTC, two hours off), where `pr` refused the
    same field. Both refuse a moment now, naming the patch file and line, nothing written;
    a day is midnight UTC in the mail, the commit `git am` makes of it and `pr`'s commit."""
    root = project
    base = git(root, "-C", str(tmp_path / "up-upstream"), "rev-parse", "HEAD").strip()
    diff = (b"diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -1,3 +1,3 @@\n line1\n"
            b"-line2\n+LINE2\n line3\n")
    for value in ("2026-05-01T10:00:00+02:00", "2026-05-01 10:00", "20260501"):
        data = patch_bytes("up", base, "fix", diff, f"Last-Update: {value}\n")
        add_patch_file(root, "up", "fix.patch", data) if value.startswith("2026-05-01T") \
            else (root / "series/up/fix.patch").write_bytes(data)
        line = 1 + data[:data.index(b"Last-Update:")].count(b"\n")
        mbox, quilt = tmp_path / "out.mbox", tmp_path / "quilt"
        for args in (("export", "--mbox", str(mbox), "--quilt", str(quilt)),
                     ("pr", "fix", "--out", str(tmp_path / "pr"))):
            run = run_cli(root, *args)
            assert run.rc == 2, (args, run.text)
            assert f"series/up/fix.patch:{line}: Last-Update: {value!r} is not a date as " \
                "DEP-3 writes it (YYYY-MM-DD)" in run.err, (args, run.err)
            assert not mbox.exists() and not quilt.exists() and not (tmp_path / "pr").exists()
    (root / "series/up/fix.patch").write_bytes(
        patch_bytes("up", base, "fix", diff, "Last-Update: 2026-05-01\n"))
    mbox = tmp_path / "day.mbox"
    ok(root, "export", "--mbox", str(mbox))
    assert b"\nDate: Fri, 01 May 2026 00:00:00 +0000\n" in mbox.read_bytes()
    checkout = upstream_checkout(tmp_path, "am-checkout")
    git(checkout, "am", "-q", str(mbox))
    recorded = git(checkout, "log", "-1", "--format=%ad", "--date=iso-strict").strip()
    assert recorded == "2026-05-01T00:00:00+00:00", recorded
    ok(root, "pr", "fix", "--out", str(tmp_path / "pr"))
    (drafted,) = (tmp_path / "pr").rglob("0001-*.patch")
    assert b"\nDate: Fri, 1 May 2026 00:00:00 +0000\n" in drafted.read_bytes(), \
        drafted.read_text()


def test_export_quilt_again_after_a_patch_was_refreshed_and_renamed(project, tmp_path):
    """A patch refreshed and renamed since the last `export --quilt DIR` matched neither by name
    nor by bytes, so the ordinary re-export was refused as if DIR were another stack's. The
    export's record (DIR/.patchforge-export) knows it; a patch changed in DIR since the export
    wrote it (a `quilt refresh` there) is still never overwritten nor unlisted: refused, naming
    the file, nothing written."""
    root = project
    fork = fork_with_commits(tmp_path)
    ok(root, "import", "git", "main..fixes", "--repo", str(fork), "--upstream", "up")
    first, second = (root / "series/up/series").read_text().split()
    exported = tmp_path / "quilt-patches"
    ok(root, "export", "--quilt", str(exported))
    ok(root, "edit", first)
    work = root / ".patchforge/work/up/a.py"
    work.write_bytes(work.read_bytes().replace(b"line5\n", b"LINE5\n"))
    ok(root, "refresh")
    ok(root, "rename", first, "renamed")
    run = ok(root, "export", "--quilt", str(exported))
    assert "wrote 3 files" in run.out
    assert (exported / "series").read_bytes() == (root / "series/up/series").read_bytes()
    assert (exported / "renamed.patch").read_bytes() == \
        (root / "series/up/renamed.patch").read_bytes()
    checkout = upstream_checkout(tmp_path, "quilt-checkout")
    env = dict(os.environ, QUILT_PATCHES=str(exported), QUILTRC="/dev/null")
    proc = subprocess.run(["quilt", "push", "-a"], cwd=checkout, env=env, capture_output=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert b"LINE5" in (checkout / "a.py").read_bytes()
    # A change made in DIR since the export: replacing the file would lose it.
    quilt_made = (exported / second).read_bytes() + b"\n"
    (exported / second).write_bytes(quilt_made)
    before = tree_bytes(exported)
    refused = run_cli(root, "export", "--quilt", str(exported))
    assert refused.rc == 2 and f"{exported / second}: changed since patchforge exported it" \
        in refused.err, refused.err
    assert tree_bytes(exported) == before
    # Or leaving it unlisted, once its patch is deleted from the project.
    ok(root, "delete", second)
    refused = run_cli(root, "export", "--quilt", str(exported))
    assert refused.rc == 2 and f"{exported / 'series'}:2: lists {second}" in refused.err, \
        refused.err
    assert tree_bytes(exported) == before
    (exported / second).unlink()
    ok(root, "export", "--quilt", str(exported))
    assert (exported / "series").read_text().split() == ["renamed.patch"]
    # Every fix deleted: the export says so (an empty series), instead of writing nothing and
    # leaving the earlier series there with exit 0.
    ok(root, "delete", "renamed")
    ok(root, "export", "--quilt", str(exported))
    assert (exported / "series").read_bytes() == b""


def test_export_quilt_never_reads_a_record_that_is_no_export_record(project, tmp_path):
    """DIR/.patchforge-export that is not what an export wrote (a link to /dev/zero, which
    reading would never end; a file of other JSON): refused, naming it, nothing written."""
    root = project
    fork = fork_with_commits(tmp_path)
    ok(root, "import", "git", "main..fixes", "--repo", str(fork), "--upstream", "up")
    exported = tmp_path / "quilt-patches"
    exported.mkdir()
    record = exported / ".patchforge-export"
    for make in (lambda: record.symlink_to("/dev/zero"),
                 lambda: record.write_bytes(b'{"version": 1, "patches": {"a": "b"}}\n')):
        record.unlink(missing_ok=True)
        make()
        refused = run_cli(root, "export", "--quilt", str(exported))
        assert refused.rc == 2 and f"{record}: not the record" in refused.err, refused.err
        assert [p.name for p in exported.iterdir()] == [".patchforge-export"]
    record.unlink()
    ok(root, "export", "--quilt", str(exported))


def test_export_quilt_reads_no_fifo_or_link_of_a_patch_name_in_dir(project, tmp_path):
    """`export --quilt DIR` into a directory with no export record read DIR/NAME.patch of each
    name it writes: a named pipe there blocked the export for ever (holding the project's
    lock), a link to /dev/zero read until memory ran out. Each is refused, naming it, exit 2,
    nothing written; a link to a file (read through, then renamed over) is refused too."""
    root = project
    fork = fork_with_commits(tmp_path)
    ok(root, "import", "git", "main..fixes", "--repo", str(fork), "--upstream", "up")
    name = (root / "series" / "up" / "series").read_text().split()[0]
    exported = tmp_path / "quilt-patches"
    exported.mkdir()
    patch = exported / name
    elsewhere = tmp_path / "elsewhere.patch"
    elsewhere.write_bytes((root / "series" / "up" / name).read_bytes())
    for make, said in ((lambda: os.mkfifo(patch), "is not a regular file"),
                       (lambda: patch.symlink_to("/dev/zero"), "is a symlink"),
                       (lambda: patch.symlink_to(elsewhere), "is a symlink"),
                       (lambda: patch.mkdir(), "is a directory")):
        make()
        proc = subprocess.run([sys.executable, "-m", "patchforge", "--root", str(root),
                               "export", "--quilt", str(exported)],
                              capture_output=True, timeout=120)
        err = proc.stderr.decode()
        assert proc.returncode == 2 and f"{patch} {said}" in err, err
        assert [p.name for p in exported.iterdir()] == [name]
        patch.rmdir() if patch.is_dir() and not patch.is_symlink() else patch.unlink()
    assert elsewhere.read_bytes() == (root / "series" / "up" / name).read_bytes()
    ok(root, "export", "--quilt", str(exported))
    assert (exported / name).is_file() and not (exported / name).is_symlink()


@pytest.mark.parametrize("how", ["quilt", "mbox", "git"])
def test_an_import_that_creates_a_file_the_upstream_has_is_refused(project, tmp_path, how):
    """A fix made on a fork where pkg/b.py did not exist yet creates it; the pin has its own
    pkg/b.py. `git apply` and `quilt push` refuse such a patch, and so did `overlays`, but the
    import took it and listed it, exit 0, and only `status` and `lint` said so afterwards. It is
    refused now, naming the patch and the path, with nothing written; a creation of a new path
    beside it in the same import is not written either."""
    root = project
    fork = upstream_checkout(tmp_path, "fork")
    git(fork, "rm", "-q", "pkg/b.py")
    git(fork, "commit", "-qm", "Before b existed")
    (fork / "pkg" / "b.py").write_bytes(b"b = 'ours'\n")
    git(fork, "add", "pkg/b.py")
    git(fork, "commit", "-qm", "Add our b")
    (fork / "pkg" / "c.py").write_bytes(b"c = 1\n")
    git(fork, "add", "pkg/c.py")
    git(fork, "commit", "-qm", "Add c")
    mail = subprocess.run(["git", "format-patch", "--stdout", "HEAD~2"], cwd=fork, check=True,
                          capture_output=True).stdout
    # The ordinary tools refuse the creating patch on the upstream as pinned.
    checkout = upstream_checkout(tmp_path, "checkout")
    first = mail.split(b"\nFrom ", 1)[0] + b"\n"
    refused = subprocess.run(["git", "apply", "--check", "-"], cwd=checkout, input=first,
                             capture_output=True)
    assert refused.returncode != 0 and b"pkg/b.py: already exists" in refused.stderr
    if how == "quilt":
        quilt_dir = tmp_path / "patches"
        quilt_dir.mkdir()
        (quilt_dir / "series").write_bytes(b"add-c.patch\nadd-our-b.patch\n")
        (quilt_dir / "add-c.patch").write_bytes(git_bytes(fork, "diff", "HEAD~1", "HEAD"))
        (quilt_dir / "add-our-b.patch").write_bytes(
            b"Description: Add our b\n\n" + git_bytes(fork, "diff", "HEAD~2", "HEAD~1"))
        args, where = ["quilt", str(quilt_dir)], f"{quilt_dir / 'add-our-b.patch'}:3:"
    elif how == "mbox":
        mbox = tmp_path / "fixes.mbox"
        mbox.write_bytes(mail)
        args, where = ["mbox", str(mbox)], f"{mbox} (message 1):"
    else:
        sha = git(fork, "rev-parse", "HEAD~1").strip()
        args, where = ["git", "HEAD~2..HEAD", "--repo", str(fork), "--upstream", "up"], \
            f"{fork}: commit {sha}:"
    before = snapshot(root)
    run = run_cli(root, "import", *args)
    assert run.rc == 2, run.text
    assert where in run.err and "add-our-b.patch: creates pkg/b.py, which the upstream " \
        "already has" in run.err and "nothing was imported" in run.err, run.err
    assert snapshot(root) == before


def test_a_profile_no_one_declared_is_refused_at_import_and_named_by_status(tmp_path):
    """A quilt patch listing `Profiles: gfx94` (gfx942 mistyped) in a stack that declares
    gfx942 and gfx950 is in no profile: every overlay goes without the fix. The import took it
    (exit 0) and status said "all patches apply", exit 0; only `overlays` refused. The import is
    refused now, naming the patch file's Profiles line, and status names the patch (exit 1)
    when such a file comes in otherwise (a teammate's commit)."""
    from helpers.project import add_patch_file

    root, _ = git_project(tmp_path, profiles={"gfx942": "MI300X", "gfx950": "MI355X"})
    quilt_dir = tmp_path / "patches"
    quilt_dir.mkdir()
    patch = (b"Description: Fix b\nProfiles: gfx94\n---\n--- a/pkg/b.py\n+++ b/pkg/b.py\n"
             b"@@ -1,3 +1,3 @@\n x = 1\n-y = 2\n+y = 20\n z = 3\n")
    (quilt_dir / "fix-b.patch").write_bytes(patch)
    (quilt_dir / "series").write_bytes(b"fix-b.patch\n")
    before = snapshot(root)
    run = run_cli(root, "import", "quilt", str(quilt_dir))
    assert run.rc == 2 and f"{quilt_dir / 'fix-b.patch'}:2: patch fix-b.patch: Profiles names " \
        "'gfx94', which is not a configured profile" in run.err, run.text
    assert snapshot(root) == before
    add_patch_file(root, "up", "fix-b.patch", patch)
    status = run_cli(root, "status")
    assert status.rc == 1 and "Profiles names 'gfx94', not a configured profile" in status.out, \
        status.text
    assert json.loads(run_cli(root, "status", "--json").out)["patches"][0]["needs_attention"]
    assert run_cli(root, "overlays").rc == 2


def test_an_import_meeting_a_name_in_use_says_how_to_free_it(project, tmp_path):
    """An import whose patch takes the name of another fix of the series was refused with
    "a patch named X already exists" and nothing more; it says nothing was imported and how
    the name is freed. Renaming the fix in the way lets the same import through."""
    root = project
    ok(root, "new", "fix-line-three", "--no-edit", "-m", "another fix of the same name")
    fork = fork_with_commits(tmp_path)
    before = tree_bytes(root / "series")
    run = run_cli(root, "import", "git", "main..fixes", "--repo", str(fork), "--upstream", "up")
    assert run.rc == 2 and "a patch named fix-line-three.patch already exists" in run.err
    assert "hint: nothing was imported: `patchforge rename` or `patchforge delete` frees the " \
        "name" in run.err
    assert tree_bytes(root / "series") == before
    ok(root, "rename", "fix-line-three", "older-fix")
    ok(root, "import", "git", "main..fixes", "--repo", str(fork), "--upstream", "up")


def test_import_mbox_takes_an_in_body_from_as_the_author_not_as_a_header(project, tmp_path):
    """`git format-patch --from=SENDER` of another's commit puts `From: AUTHOR` first in the
    body, for git am: it names the author (as mailinfo reads it), it is no patch header."""
    root = project
    fork = fork_with_commits(tmp_path)
    mbox = tmp_path / "sent.mbox"
    mbox.write_bytes(subprocess.run(
        ["git", "-c", "user.name=Sender", "-c", "user.email=sender@example.com", "format-patch",
         "--stdout", "--from=Sender <sender@example.com>", "-1", "fixes"],
        cwd=fork, check=True, capture_output=True).stdout)
    assert b"\n\nFrom: Other Person <other@example.com>\n" in mbox.read_bytes()
    ok(root, "import", "mbox", str(mbox))
    patch = (root / "series/up/second-fix-crlf-file-and-a-new-module.patch").read_bytes()
    assert patch.startswith(b"Description: Second fix: CRLF file and a new module\n"
                            b"Author: Other Person <other@example.com>\n"), patch[:200]


def test_import_mbox_keeps_a_message_that_begins_with_an_in_body_date_as_free_text(project,
                                                                                   tmp_path):
    """An in-body `Date:` (send-email, format-patch of a mail-made commit) is the mail's own:
    what follows it is the message's text, patch fields in it included, not a patch header."""
    root = project
    fork = fork_with_commits(tmp_path)
    git(fork, "commit", "-q", "--amend", "-m",
        "Second fix\n\nDate: Fri, 2 Feb 2024 10:00:00 +0100\nUpstream-Status: Backport\n\n"
        "Why, in a line.")
    mbox = tmp_path / "sent.mbox"
    mbox.write_bytes(subprocess.run(["git", "format-patch", "--stdout", "-1", "fixes"], cwd=fork,
                                    check=True, capture_output=True).stdout)
    assert b"\n\nDate: Fri, 2 Feb 2024 10:00:00 +0100\nUpstream-Status: Backport\n" in \
        mbox.read_bytes()
    ok(root, "import", "mbox", str(mbox))
    patch = (root / "series/up/second-fix.patch").read_bytes()
    assert patch.startswith(b"Description: Second fix\nAuthor: Other Person <other@example.com>\n"
                            b"Origin: vendor, sent.mbox\nUpstream-Status: Pending\nUpstream: up\n"
                            ), patch[:300]
    assert b"\nLast-Update: 2024-02-02\n\nUpstream-Status: Backport\n\nWhy, in a line.\n---\n" \
        in patch, patch[:400]


def test_import_overlay_made_on_an_earlier_import_of_a_directory_upstream(tmp_path):
    """A directory (or wheel) upstream has no history in the store, but the versions imported
    there are known: an overlay made on v1's file, the project pinned at v2, is refused naming
    v1, and `--made-on v1` carries its change onto v2's file, the directory imported as v1
    being the one used (the directory itself now holds v2)."""
    site = tmp_path / "site"
    site.mkdir()
    old = UPSTREAM_FILES["a.py"]
    pinned = old.replace(b"line5\n", b"line5 upstream fixed this\n")
    (site / "a.py").write_bytes(old)
    root = make_project(tmp_path / "project", pyproject=True)
    ok(root, "upstream", "add", "up", "--dir", str(site), "--at", "v1", "--install-root", "/opt")
    (site / "a.py").write_bytes(pinned)
    ok(root, "upstream", "pin", "up", "--at", "v2")
    overlay = tmp_path / "a.py"
    overlay.write_bytes(old.replace(b"line12\n", b"line12 our fix\n"))
    run = run_cli(root, "import", "overlay", str(overlay), "--path", "a.py", "--name", "fix")
    assert run.rc == 2 and "looks made on another a.py than v2's: the file as v1 has it " \
        "differs less from it" in run.err and "would carry the upstream's differences " \
        "between it and v2 (the pinned file's line 5: 'line5 upstream fixed this')" in run.err \
        and "`--made-on v1`" in run.err, run.err
    ok(root, "import", "overlay", str(overlay), "--path", "a.py", "--name", "fix",
       "--made-on", "v1")
    assert overlay_tree(root) == {"a.py": pinned.replace(b"line12\n", b"line12 our fix\n")}
    run = run_cli(root, "import", "overlay", str(overlay), "--path", "a.py", "--name", "again",
                  "--made-on", "v0")
    assert run.rc == 2 and "up has no import labelled v0 (imported: v1, v2)" in run.err, run.err


def _two_projects_one_label(tmp_path: Path) -> tuple[Path, Path, bytes, Path, str]:
    """Two projects on one cache, each with a directory upstream `up` imported as 0.9 with
    other files: A's 0.9 file is UPSTREAM_FILES' a.py; A then pinned 1.0 (`moved`: line5
    changed), and B's 0.9 already has that change. (A, B, moved, an overlay made on A's 0.9
    file with one fix, the commit A's lock held for 0.9)."""
    old = UPSTREAM_FILES["a.py"]
    moved = old.replace(b"line5\n", b"line5 changed in 1.0\n")
    site_a, site_b = tmp_path / "site-a", tmp_path / "site-b"
    site_a.mkdir()
    site_b.mkdir()
    (site_a / "a.py").write_bytes(old)
    a = make_project(tmp_path / "a", pyproject=True)
    ok(a, "upstream", "add", "up", "--dir", str(site_a), "--at", "0.9", "--install-root", "/opt")
    a_09 = json.loads((a / "upstream.lock").read_bytes())["upstreams"]["up"]["commit"]
    (site_a / "a.py").write_bytes(moved)
    ok(a, "upstream", "pin", "up", "--at", "1.0")
    (site_b / "a.py").write_bytes(moved)
    b = make_project(tmp_path / "b", pyproject=True)
    ok(b, "upstream", "add", "up", "--dir", str(site_b), "--at", "0.9", "--install-root", "/opt")
    overlay = tmp_path / "a.py"
    overlay.write_bytes(old.replace(b"line12\n", b"line12 our fix\n"))
    return a, b, moved, overlay, a_09


def test_import_overlay_made_on_a_label_another_project_imported_takes_this_projects(tmp_path):
    """Two projects sharing the cache, each with a directory upstream `up` imported as 0.9
    with other files: `--made-on 0.9` in A took B's import (the last under that name and
    label) as the overlay's base, and the patch took back A's 1.0 change (exit 0). Without
    `--made-on`, A's 0.9 was not among the versions compared (B's was), and the overlay went
    in against 1.0 the same way. Now A's own 0.9 answers both, and B is not told of A's."""
    a, b, moved, overlay, _ = _two_projects_one_label(tmp_path)
    run = run_cli(a, "import", "overlay", str(overlay), "--path", "a.py", "--name", "fix")
    assert run.rc == 2 and "the file as 0.9 has it differs less from it" in run.err \
        and "`--made-on 0.9`" in run.err, run.err
    assert not (a / "series/up/fix.patch").exists()
    ok(a, "import", "overlay", str(overlay), "--path", "a.py", "--name", "fix",
       "--made-on", "0.9")
    assert overlay_tree(a) == {"a.py": moved.replace(b"line12\n", b"line12 our fix\n")}
    assert b"-line5 changed in 1.0\n" not in (a / "series/up/fix.patch").read_bytes()
    b_overlay = tmp_path / "b-a.py"
    b_overlay.write_bytes(moved.replace(b"line3\n", b"line3 b's fix\n"))
    run = run_cli(b, "import", "overlay", str(b_overlay), "--path", "a.py", "--name", "fix",
                  "--made-on", "1.0")
    assert run.rc == 2 and "this project has no import of up labelled 1.0 (imported: 0.9)" \
        in run.err, run.err
    ok(b, "import", "overlay", str(b_overlay), "--path", "a.py", "--name", "fix")
    assert overlay_tree(b) == {"a.py": moved.replace(b"line3\n", b"line3 b's fix\n")}


def test_import_overlay_made_on_a_label_only_an_earlier_patchforge_recorded(tmp_path):
    """A cache written by an earlier patchforge labels imports by upstream name alone (the
    last import under that name and label, here B's): such a label is never taken as this
    project's version. `--made-on` it is refused naming the way on, nothing written, and the
    commit upstream.lock held for that label works."""
    a, b, moved, overlay, a_09 = _two_projects_one_label(tmp_path)
    store = Path(os.environ["PATCHFORGE_CACHE"]) / "store.git"
    labels = git(store, "for-each-ref", "--format=%(refname)", "refs/patchforge/labels/")
    for ref in labels.split():  # as an earlier patchforge left the cache
        git(store, "update-ref", "-d", ref)
    before = snapshot(a)
    run = run_cli(a, "import", "overlay", str(overlay), "--path", "a.py", "--name", "fix",
                  "--made-on", "0.9")
    assert run.rc == 2 and "this project has no import of up labelled 0.9" in run.err \
        and "which project made it cannot be told" in run.err \
        and "`--made-on COMMIT`" in run.err and "git log -p -- upstream.lock" in run.err, run.err
    assert snapshot(a) == before
    ok(a, "import", "overlay", str(overlay), "--path", "a.py", "--name", "fix",
       "--made-on", a_09)
    assert overlay_tree(a) == {"a.py": moved.replace(b"line12\n", b"line12 our fix\n")}


def test_an_earlier_label_of_a_directory_never_names_its_new_files(tmp_path):
    """A directory upstream imported as 0.9, then pinned at 1.0 after it changed: `status
    --against up=0.9` imported the directory as it is now under 0.9 and answered about 1.0's
    files under that name, and `import overlay --made-on 0.9` then took them as the overlay's
    base (its patch took back 1.0's change, exit 0). Refused, naming both commits and the way
    on; 0.9 still names the first import."""
    a, _, moved, overlay, a_09 = _two_projects_one_label(tmp_path)
    run = run_cli(a, "status", "--against", "up=0.9")
    assert run.rc == 2 and f"0.9 is the label this project imported {tmp_path / 'site-a'} " \
        f"under before ({a_09[:12]})" in run.err and "`up=NEW-LABEL`" in run.err, run.err
    ok(a, "import", "overlay", str(overlay), "--path", "a.py", "--name", "fix",
       "--made-on", "0.9")
    assert overlay_tree(a) == {"a.py": moved.replace(b"line12\n", b"line12 our fix\n")}


def test_import_overlay_made_on_a_wheel_version_another_project_imported_other_files(
        tmp_path, monkeypatch):
    """Two projects on one cache with a wheel upstream `w` of version 0.9, each from its own
    wheel file (two builds of one release): `--made-on 0.9` in A took B's import, the last
    under that name and version, and the patch took back A's 1.0 change. Now A's own."""
    from helpers.upstream import build_wheel

    old = UPSTREAM_FILES["a.py"]
    moved = old.replace(b"line5\n", b"line5 changed in 1.0\n")
    wheels_a, wheels_b = tmp_path / "wheels-a", tmp_path / "wheels-b"
    build_wheel(wheels_a, "tinypkg", "0.9", {"tinypkg/a.py": old})
    build_wheel(wheels_a, "tinypkg", "1.0", {"tinypkg/a.py": moved})
    build_wheel(wheels_b, "tinypkg", "0.9", {"tinypkg/a.py": moved})
    a, b = tmp_path / "a", tmp_path / "b"
    monkeypatch.setenv("PATCHFORGE_WHEELS", str(wheels_a))
    ok(None, "init", "--standalone", str(a))
    ok(a, "upstream", "add", "w", "--wheel", "tinypkg", "--at", "0.9", "--install-root", "/opt")
    ok(a, "upstream", "pin", "w", "--at", "1.0")
    monkeypatch.setenv("PATCHFORGE_WHEELS", str(wheels_b))
    ok(None, "init", "--standalone", str(b))
    ok(b, "upstream", "add", "w", "--wheel", "tinypkg", "--at", "0.9", "--install-root", "/opt")
    monkeypatch.setenv("PATCHFORGE_WHEELS", str(wheels_a))
    overlay = tmp_path / "a.py"
    overlay.write_bytes(old.replace(b"line12\n", b"line12 our fix\n"))
    ok(a, "import", "overlay", str(overlay), "--upstream", "w", "--path", "tinypkg/a.py",
       "--name", "fix", "--made-on", "0.9")
    assert overlay_tree(a, "w/")["tinypkg/a.py"] == \
        moved.replace(b"line12\n", b"line12 our fix\n")
    assert b"-line5 changed in 1.0\n" not in (a / "series/w/fix.patch").read_bytes()


def test_import_overlay_made_on_a_wheel_version_only_another_project_imported_is_refused(
        tmp_path, monkeypatch):
    """A new project pinned at 1.0 imports a hand-kept overlay made on 0.9 (the tutorial's
    first step). Another project of the cache imported 0.9 from the same wheel file, but only
    this project's own imports were compared: the overlay went in against 1.0, exit 0, its
    patch taking back 1.0's change. Refused now, naming 0.9 and `--made-on 0.9`, nothing
    written; `--made-on 0.9` carries the fix alone. An import of another build of 0.9 (a file
    this machine's wheel cache does not hold) is still not taken for this project's."""
    from helpers.upstream import build_wheel

    old = UPSTREAM_FILES["a.py"]
    moved = old.replace(b"line5\n", b"line5 changed in 1.0\n")
    wheels, other_build = tmp_path / "wheels", tmp_path / "wheels-other"
    build_wheel(wheels, "tinypkg", "0.9", {"tinypkg/a.py": old})
    build_wheel(wheels, "tinypkg", "1.0", {"tinypkg/a.py": moved})
    build_wheel(other_build, "tinypkg", "0.9", {"tinypkg/a.py": old + b"line13\n"})
    build_wheel(other_build, "tinypkg", "1.0", {"tinypkg/a.py": moved})
    a, b = tmp_path / "a", tmp_path / "b"
    monkeypatch.setenv("PATCHFORGE_WHEELS", str(wheels))
    ok(None, "init", "--standalone", str(b))
    ok(b, "upstream", "add", "w", "--wheel", "tinypkg", "--at", "0.9", "--install-root", "/opt")
    ok(None, "init", "--standalone", str(a))
    ok(a, "upstream", "add", "w", "--wheel", "tinypkg", "--at", "1.0", "--install-root", "/opt")
    overlay = tmp_path / "a.py"
    overlay.write_bytes(old.replace(b"line12\n", b"line12 our fix\n"))
    before = snapshot(a)
    run = run_cli(a, "import", "overlay", str(overlay), "--upstream", "w", "--path",
                  "tinypkg/a.py", "--name", "fix")
    assert run.rc == 2 and "the file as 0.9 has it differs less from it" in run.err \
        and "`--made-on 0.9`" in run.err, run.text
    assert snapshot(a) == before
    ok(a, "import", "overlay", str(overlay), "--upstream", "w", "--path", "tinypkg/a.py",
       "--name", "fix", "--made-on", "0.9")
    assert b"-line5 changed in 1.0\n" not in (a / "series/w/fix.patch").read_bytes()
    assert overlay_tree(a, "w/")["tinypkg/a.py"] == \
        moved.replace(b"line12\n", b"line12 our fix\n")
    # Another machine's wheel cache, whose 0.9 is another build: b's import is not its 0.9.
    monkeypatch.setenv("PATCHFORGE_WHEELS", str(other_build))
    c = tmp_path / "c"
    ok(None, "init", "--standalone", str(c))
    ok(c, "upstream", "add", "w", "--wheel", "tinypkg", "--at", "1.0", "--install-root", "/opt")
    ok(c, "import", "overlay", str(overlay), "--upstream", "w", "--path", "tinypkg/a.py",
       "--name", "fix")



def test_import_overlay_of_a_wheel_backporting_a_later_releases_fix_is_imported(
        tmp_path, monkeypatch):
    """Project A pinned at 1.0 backports a fix upstream made in 1.1: its overlay is 1.0's file
    with 1.1's change. Another project of the cache pinned 1.1, and the overlay was refused as
    "made on" 1.1; its hint `--made-on 1.1` then said the overlay was identical to the file at
    1.0, "the fix may have landed upstream", though 1.0 lacks it: a fix dropped. Only releases
    older than the pin are versions an overlay was made on, as for a git upstream: imported.
    `--made-on 1.1` says the overlay is 1.1's file, with no word of the pin holding it."""
    from helpers.upstream import build_wheel

    old = b"".join(b"line%d\n" % i for i in range(1, 21))
    fixed = old.replace(b"line12\n", b"line12 fixed upstream\n")
    wheels = tmp_path / "wheels"
    build_wheel(wheels, "tinypkg", "1.0", {"tinypkg/a.py": old})
    build_wheel(wheels, "tinypkg", "1.1", {"tinypkg/a.py": fixed})
    monkeypatch.setenv("PATCHFORGE_WHEELS", str(wheels))
    a, b = tmp_path / "a", tmp_path / "b"
    ok(None, "init", "--standalone", str(b))
    ok(b, "upstream", "add", "w", "--wheel", "tinypkg", "--at", "1.1", "--install-root", "/opt")
    ok(None, "init", "--standalone", str(a))
    ok(a, "upstream", "add", "w", "--wheel", "tinypkg", "--at", "1.0", "--install-root", "/opt")
    overlay = tmp_path / "a.py"
    overlay.write_bytes(fixed)
    before = snapshot(a)
    run = run_cli(a, "import", "overlay", str(overlay), "--upstream", "w", "--path",
                  "tinypkg/a.py", "--name", "backport", "--made-on", "1.1")
    assert run.rc == 2 and f"{overlay} is identical to tinypkg/a.py as w has it at 1.1: made " \
        "on 1.1, it holds no change to carry onto 1.0's file" in run.err \
        and "import it without `--made-on`" in run.err and "landed" not in run.err, run.text
    assert snapshot(a) == before
    ok(a, "import", "overlay", str(overlay), "--upstream", "w", "--path", "tinypkg/a.py",
       "--name", "backport")
    assert b"-line12\n+line12 fixed upstream\n" in (a / "series/w/backport.patch").read_bytes()
    assert overlay_tree(a, "w/")["tinypkg/a.py"] == fixed
    # This project's own later import (a target judged) is no version it was made on either.
    assert run_cli(a, "status", "--against", "w=1.1").rc == 1  # upstreamed: it is in 1.1
    ok(a, "delete", "backport")
    ok(a, "import", "overlay", str(overlay), "--upstream", "w", "--path", "tinypkg/a.py",
       "--name", "backport")


def _overlay_import(root: Path, overlay: Path, name: str, *more: str):
    return run_cli(root, "import", "overlay", str(overlay), "--upstream", "up", "--path", "a.py",
                   "--name", name, *more)


def test_import_overlay_for_every_profile_after_a_profile_fix_is_made_on_its_own_base(
        tmp_path, monkeypatch):
    """A fix for every profile imported as an overlay after a gfx942-only fix of the same file
    had its diff made on the file with the gfx942 fix (context `line8 gfx942`): it applied to
    every profile with fuzz only, and lint failed at once. It is made on what every profile's
    series shares, as `new` and `refresh` make it; an overlay made from gfx942's overlay has
    gfx942's fix left to gfx942; one whose change meets that fix's lines is refused."""
    monkeypatch.setenv("PATCHFORGE_DATE", "2024-05-01")
    root, _ = git_project(tmp_path, profiles={"gfx942": "MI300X", "gfx950": "MI355X"})
    upstream_file = UPSTREAM_FILES["a.py"]
    fix_942 = tmp_path / "fix-942.py"
    fix_942.write_bytes(upstream_file.replace(b"line8\n", b"line8 gfx942\n"))
    assert _overlay_import(root, fix_942, "fix-942", "--profiles", "gfx942").rc == 0
    fix_all = tmp_path / "fix-all.py"  # made from the upstream's file
    fix_all.write_bytes(upstream_file.replace(b"line10\n", b"line10 all\n"))
    run = _overlay_import(root, fix_all, "fix-all")
    assert run.rc == 0, run.text
    patch = (root / "series/up/fix-all.patch").read_bytes()
    assert b"gfx942" not in patch and b" line8\n" in patch and b"+line10 all\n" in patch
    lint = run_cli(root, "lint")
    assert lint.rc == 0 and "fuzz" not in lint.out, lint.text
    both = upstream_file.replace(b"line8\n", b"line8 gfx942\n") \
        .replace(b"line10\n", b"line10 all\n")
    assert overlay_tree(root, "gfx942/up/") == {"a.py": both}
    assert overlay_tree(root, "gfx950/up/") == {"a.py": fix_all.read_bytes()}

    # Made from gfx942's overlay: gfx942's fix stays gfx942's.
    from_942 = tmp_path / "from-942.py"
    from_942.write_bytes(both.replace(b"line12\n", b"line12 all\n"))
    run = _overlay_import(root, from_942, "fix-all-2")
    assert run.rc == 0, run.text
    assert "holds the changes that fix-942.patch makes to a.py for gfx942" in run.err, run.err
    patch = (root / "series/up/fix-all-2.patch").read_bytes()
    assert b"gfx942" not in patch and b"+line12 all\n" in patch
    assert overlay_tree(root, "gfx950/up/") == {
        "a.py": fix_all.read_bytes().replace(b"line12\n", b"line12 all\n")}
    assert run_cli(root, "lint").rc == 0

    # gfx942's file as it is: nothing of its own for every profile.
    same = tmp_path / "same.py"
    same.write_bytes(overlay_tree(root, "gfx942/up/")["a.py"])
    before = snapshot(root)
    run = _overlay_import(root, same, "fix-none")
    assert run.rc == 2 and "is a.py as gfx942's series leaves it" in run.err, run.text
    assert "--profiles gfx942" in run.err
    # A change of the lines gfx942's fix changes would not go into gfx942's series.
    meets = tmp_path / "meets.py"
    meets.write_bytes(overlay_tree(root, "gfx950/up/")["a.py"]
                      .replace(b"line8\n", b"line8 every\n"))
    run = _overlay_import(root, meets, "fix-meets")
    assert run.rc == 2 and "meets lines that fix-942.patch changes for gfx942, so it would " \
        "not go into gfx942's series; nothing was written" in run.err, run.text
    assert snapshot(root) == before


def test_import_overlay_of_the_upstreams_own_file_says_it_would_undo_the_fix(project,
                                                                            tmp_path):
    """The upstream's file as pinned, imported as an overlay where a fix of the series changes
    it, was refused as "identical to a.py ... with the series applied (the change is in the
    series already)": false, it lacks the fix. Said as it is: the upstream's file, whose patch
    would undo the fix, which the series keeps; nothing written."""
    root = project
    fix = tmp_path / "fix.py"
    fix.write_bytes(UPSTREAM_FILES["a.py"].replace(b"line4\n", b""))
    ok(root, "import", "overlay", str(fix), "--upstream", "up", "--path", "a.py",
       "--name", "fix-a")
    pristine = tmp_path / "pristine.py"
    pristine.write_bytes(UPSTREAM_FILES["a.py"])
    before = snapshot(root)
    run = _overlay_import(root, pristine, "back")
    assert run.rc == 2, run.text
    assert f"{pristine} is a.py as up has it at main, without the changes that fix-a.patch " \
        "makes to it: imported as a patch, it would undo that fix; nothing was written" \
        in run.err, run.err
    assert "with the series applied" not in run.err and "already" not in run.err
    assert "`patchforge delete fix-a.patch`" in run.err
    assert snapshot(root) == before


def test_import_mbox_leaves_format_patchs_signature_out_of_the_patch(project, tmp_path):
    """`git format-patch` ends each message with its signature (`-- ` and git's version), which
    `git am` drops. `import mbox` kept it after the last hunk, in the patch file: lint called
    the new patch not byte-stable (an error) at once, and the file changed with the git version
    that wrote the mbox. It is left out; the fix and its overlay are as before."""
    root = project
    fork = fork_with_commits(tmp_path)
    mbox = tmp_path / "fixes.mbox"
    mbox.write_bytes(subprocess.run(
        ["git", "format-patch", "--stdout", "--signature", "9.99.9", "main..fixes"], cwd=fork,
        check=True, capture_output=True).stdout)
    ok(root, "import", "mbox", str(mbox))
    for name in (root / "series/up/series").read_text().split():
        data = (root / "series/up" / name).read_bytes()
        assert b"9.99.9" not in data and not data.endswith(b"\n\n"), data
    lint = run_cli(root, "lint", "--no-forge")
    assert lint.rc == 0 and "lint: no findings" in lint.out, lint.text
    assert overlay_tree(root) == {p: (fork / p).read_bytes()
                                  for p in ("a.py", "pkg/crlf.txt", "pkg/added.py")}


def test_import_mbox_writes_format_patchs_short_index_lines_in_full(project, tmp_path):
    """`git format-patch` writes abbreviated blob ids (`index 3f2a1b4..9c0d7e2 100644`);
    imported as they were, every new patch drew lint's byte-stability warning at once ("only
    index lines differ", `edit` + `refresh` to fix it). Now their ids are written in full, as
    `refresh` writes them, where the file each diff was made on is the one the series gives
    (a second fix of a.py, made on the first): lint is clean and the fixes are as before. A
    diff made on another version of the file keeps its index line as it was."""
    root = project
    fork = fork_with_commits(tmp_path)
    (fork / "a.py").write_bytes((fork / "a.py").read_bytes().replace(b"line9\n", b"LINE9\n"))
    git(fork, "commit", "-qam", "Fix line nine")
    mbox = tmp_path / "fixes.mbox"
    mbox.write_bytes(subprocess.run(["git", "format-patch", "--stdout", "main..fixes"], cwd=fork,
                                    check=True, capture_output=True).stdout)
    assert re.search(rb"^index [0-9a-f]{7}\.\.[0-9a-f]{7} 100644$", mbox.read_bytes(), re.M)
    ok(root, "import", "mbox", str(mbox))
    names = (root / "series/up/series").read_text().split()
    assert len(names) == 3
    for name in names:
        data = (root / "series/up" / name).read_bytes()
        indexes = re.findall(rb"^index \S+", data, re.M)
        assert indexes and all(re.fullmatch(rb"index [0-9a-f]{40}\.\.[0-9a-f]{40}", i)
                               for i in indexes), (name, indexes)
    lint = run_cli(root, "lint", "--no-forge")
    assert lint.rc == 0 and "only index lines differ" not in lint.text, lint.text
    assert "warning" not in lint.text, lint.text
    assert overlay_tree(root) == {p: (fork / p).read_bytes()
                                  for p in ("a.py", "pkg/crlf.txt", "pkg/added.py")}

    # Made on another a.py than the one the series gives it (the first fix out, the line-nine
    # fix in): its index line names other blobs, kept as it was.
    other = tmp_path / "other.mbox"
    other.write_bytes(mbox.read_bytes().split(b"\nFrom ")[0].replace(
        b"Subject: [PATCH 1/3] Fix line three", b"Subject: [PATCH] Fix line three again"))
    git(fork, "checkout", "-q", "main")
    ok(root, "delete", names[0].removesuffix(".patch"))
    ok(root, "import", "mbox", str(other))
    again = (root / "series/up/fix-line-three-again.patch").read_bytes()
    assert re.search(rb"^index [0-9a-f]{7}\.\.[0-9a-f]{7} 100644$", again, re.M), again


@pytest.mark.parametrize("name, said", [
    ("x:y", "':' cannot be in a file name on Windows"),
    ("gpu*fix", "'*' cannot be in a file name on Windows"),
    ("x?y", "'?' cannot be in a file name on Windows"),
    ("a<b", "'<' cannot be in a file name on Windows"),
    ("a>b", "'>' cannot be in a file name on Windows"),
    ("a|b", "'|' cannot be in a file name on Windows"),
    ("con", "'con' is a device name Windows reserves"),
    ("NUL.fix", "'NUL' is a device name Windows reserves"),
    ("com1", "'com1' is a device name Windows reserves"),
    ("LPT9", "'LPT9' is a device name Windows reserves"),
])
def test_a_patch_name_windows_cannot_check_out_is_refused(project, name, said):
    """`new x:y`, `rename fix con`: taken, exit 0, though git for Windows cannot check out
    series/up/x:y.patch (it stops the clone of the whole stack), while `FIX-A` beside `fix-a`
    was refused for the checkouts of macOS and Windows. Refused by new and rename, exit 2,
    saying why, nothing written."""
    root = project
    ok(root, "new", "--no-edit", "fix")
    before = tree_bytes(root / "series")
    for command in (("new", "--no-edit", "--", name), ("rename", "fix", name)):
        run = run_cli(root, *command)
        assert run.rc == 2, (command, run.text)
        assert f"patch name {name!r}" in run.err, run.err
        assert "cannot be checked out on Windows" in run.err and said in run.err, run.err
        assert tree_bytes(root / "series") == before
    assert run_cli(root, "new", "--no-edit", "console").rc == 0  # a device name only whole


def test_an_imported_subject_that_is_a_windows_device_name_is_named_so_it_can_be(project,
                                                                                 tmp_path):
    """A commit whose subject is `CON` (or `nul`): its patch was named con.patch, which no
    Windows checkout of the stack can write. The import is taken under `con_`."""
    root = project
    fork = tmp_path / "fork"
    git(tmp_path, "clone", "-q", str(tmp_path / "up-upstream"), str(fork))
    git(fork, "checkout", "-q", "-b", "fixes")
    (fork / "a.py").write_bytes(UPSTREAM_FILES["a.py"].replace(b"line3\n", b"LINE3\n"))
    git(fork, "commit", "-qam", "CON")
    run = ok(root, "import", "git", "main..fixes", "--repo", str(fork))
    assert run.text.splitlines() == ["imported up/con_.patch"], run.text
    assert (root / "series/up/series").read_bytes() == b"con_.patch\n"


def _debian_patch(description: bytes, forwarded: bytes, line: int, comment: bytes) -> bytes:
    """A patch as Debian writes one: DEP-3 fields straight into `---`, then a diff changing
    UPSTREAM_FILES' a.py at `line`."""
    return (b"Description: " + description + b"\nAuthor: Deb Dev <d@example.org>\n"
            b"Forwarded: " + forwarded + b"\nLast-Update: 2024-05-01\n---\n"
            b"--- a/a.py\n+++ b/a.py\n@@ -%d,3 +%d,3 @@\n line%d\n-line%d\n+line%d # %s\n"
            b" line%d\n" % (line - 1, line - 1, line - 1, line, line, comment, line + 1))


def debian_series_pushed_by_quilt(tmp_path: Path, patches: dict[str, bytes]) -> Path:
    """A Debian source package's `debian/patches` holding `patches` in that order, which real
    quilt pushes onto the upstream's checkout (so it is a series quilt takes): its debian/."""
    debian = tmp_path / "deb" / "debian"
    (debian / "patches").mkdir(parents=True)
    for name, data in patches.items():
        (debian / "patches" / name).write_bytes(data)
    (debian / "patches" / "series").write_bytes(b"".join(n.encode() + b"\n" for n in patches))
    checkout = upstream_checkout(tmp_path, "deb-checkout")
    env = dict(os.environ, QUILT_PATCHES=str(debian / "patches"), QUILTRC="/dev/null")
    proc = subprocess.run(["quilt", "push", "-a"], cwd=checkout, env=env, capture_output=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return debian


def as_debian_wrote_it(root: Path, data: bytes) -> bytes:
    """An imported patch file without the two fields the series adds to it (`Upstream:` and
    `Base:`): Debian's file byte for byte, where the import kept it so."""
    base = _base(root)
    return b"".join(line for line in data.splitlines(keepends=True)
                    if line not in (b"Upstream: up\n", f"Base: {base}\n".encode()))


def test_import_quilt_of_debian_patches_keeps_forwarded_as_where_they_stand(project, tmp_path):
    """A Debian (DEP-3) patch says where it stands upstream by Forwarded: the import adds no
    `Upstream-Status: Pending` beside it (that said pending for a fix Debian marked not-needed
    and for one already sent as a pull request), and list, PATCHES.md and lint read Forwarded."""
    root = project
    originals = {
        "01-not-needed.patch": _debian_patch(b"Local path only", b"not-needed", 2, b"local"),
        "02-sent.patch": _debian_patch(b"Fix the offset", b"https://github.com/o/r/pull/5",
                                       6, b"fixed"),
        "03-not-sent.patch": _debian_patch(b"Not sent yet", b"no", 10, b"mine"),
    }
    ok(root, "import", "quilt", str(debian_series_pushed_by_quilt(tmp_path, originals)))
    for name, original in originals.items():
        data = (root / "series/up" / name).read_bytes()
        assert as_debian_wrote_it(root, data) == original, data
        assert b"Upstream-Status" not in data, data

    listed = {p["name"]: p["status"] for p in json.loads(ok(root, "list", "--json").out)["patches"]}
    assert listed == {"01-not-needed.patch": "Inappropriate [not needed]",
                      "02-sent.patch": "Submitted [https://github.com/o/r/pull/5]",
                      "03-not-sent.patch": "Pending"}
    table = ok(root, "list").out
    assert re.search(r"up/01-not-needed\.patch\s+all\s+Inappropriate\s", table), table
    assert re.search(r"up/02-sent\.patch\s+all\s+Submitted\s", table), table
    assert re.search(r"up/03-not-sent\.patch\s+all\s+Pending\s", table), table

    ok(root, "ledger")
    ledger = (root / "series/PATCHES.md").read_text()
    rows = {line.split("|")[2].strip(): line.split("|")[7].strip()
            for line in ledger.splitlines() if line.startswith("| ") and ".patch](" in line}
    assert rows == {"[01-not-needed.patch](up/01-not-needed.patch)": "Inappropriate (not needed)",
                    "[02-sent.patch](up/02-sent.patch)":
                        "Submitted [PR #5](https://github.com/o/r/pull/5)",
                    "[03-not-sent.patch](up/03-not-sent.patch)": "Pending"}, ledger

    page = tmp_path / "report.html"
    ok(root, "fetch")
    run = run_cli(root, "--offline", "status", "--html", str(page))  # the PR is not asked
    assert page.exists(), run.err
    cells = re.findall(r"<td>(Inappropriate[^<]*|Submitted[^<]*|Pending)</td>", page.read_text())
    assert cells == ["Inappropriate [not needed]", "Submitted [https://github.com/o/r/pull/5]",
                     "Pending"], cells

    run = run_cli(root, "lint", "--no-forge", "--json")
    doc = json.loads(run.out)
    said = [f for f in doc["findings"] if f["check"] == "header"
            and re.search("Upstream-Status|Forwarded", f["message"])]
    assert said == [], doc


def test_lint_warns_of_pending_beside_a_forwarded_that_says_otherwise(project, tmp_path):
    """`Upstream-Status: Pending` beside `Forwarded: not-needed` or a URL (what an import wrote
    before) contradicts it: a warning naming the file and the line, as `Forwarded: no` beside
    Submitted is named."""
    root = project
    for name, forwarded in (("sent.patch", b"https://github.com/o/r/pull/5"),
                            ("local.patch", b"not-needed")):
        data = _debian_patch(b"x", forwarded, 2, b"x")
        data = data.replace(b"Last-Update", b"Upstream-Status: Pending\nLast-Update")
        add_patch_file(root, "up", name, data)
    run = run_cli(root, "lint", "--no-forge", "--json")
    doc = json.loads(run.out)
    said = {f["patch"]: f for f in doc["findings"] if "contradicts Forwarded" in f["message"]}
    assert set(said) == {"up/sent.patch", "up/local.patch"}, doc
    for finding in said.values():
        assert finding["severity"] == "warning"
        assert finding["message"].startswith("line 4: Upstream-Status: Pending contradicts "
                                             "Forwarded: "), finding
        assert "(line 3)" in finding["message"], finding
    text = run_cli(root, "lint", "--no-forge")
    assert "up/sent.patch" in text.out + text.err and "line 4: Upstream-Status: Pending" \
        in text.out + text.err


def _gbp_pq_patch(line: int, comment: bytes, second_header: bytes) -> bytes:
    """A patch as `gbp pq export` writes one into debian/patches: git format-patch's From,
    Date and Subject, the description, then DEP-3's pseudo-headers in a paragraph of their
    own (`second_header`), the diffstat and a diff changing UPSTREAM_FILES' a.py at `line`."""
    return (b"From: Jane Dev <jane@example.org>\nDate: Mon, 2 Nov 2026 10:00:00 +0100\n"
            b"Subject: Fix a.py line %d\n\nThe line was wrong: it says %s now.\n\n"
            % (line, comment) + second_header
            + b"---\n a.py | 2 +-\n 1 file changed, 1 insertion(+), 1 deletion(-)\n\n"
            b"diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -%d,3 +%d,3 @@\n line%d\n"
            b"-line%d\n+line%d # %s\n line%d\n"
            % (line - 1, line - 1, line - 1, line, line, comment, line + 1))


def test_import_quilt_reads_deps_pseudo_headers_after_the_description(project, tmp_path):
    """DEP-3's second set of fields, the pseudo-headers a paragraph after the description
    holds (as `gbp pq export` writes `Forwarded: not-needed` and `Bug-Debian:` there), say
    where the fix stands: `import quilt` adds no `Upstream-Status: Pending` that contradicts
    them (it did, and list, PATCHES.md and status said Pending), keeps the file as written,
    and lint finds nothing to say of it. A paragraph of prose that begins like a field is
    still prose."""
    root = project
    originals = {
        "0001-not-needed.patch": _gbp_pq_patch(
            2, b"local", b"Bug-Debian: https://bugs.debian.org/1234567\n"
                         b"Forwarded: not-needed\nGbp-Pq: Name 0001-not-needed.patch\n"),
        "0002-sent.patch": _gbp_pq_patch(
            6, b"fixed", b"Forwarded: https://github.com/o/r/pull/5\n"
                         b"Last-Update: 2026-11-02\n"),
        "0003-prose.patch": _gbp_pq_patch(
            10, b"mine", b"Forwarded: not-needed, said the maintainer once,\nbut that was "
                         b"before the port.\n"),
    }
    ok(root, "import", "quilt", str(debian_series_pushed_by_quilt(tmp_path, originals)))
    for name in ("0001-not-needed.patch", "0002-sent.patch"):
        data = (root / "series/up" / name).read_bytes()
        assert b"Upstream-Status" not in data, data
        assert as_debian_wrote_it(root, data) == originals[name], data
    assert b"\nUpstream-Status: Pending\n" in (root / "series/up/0003-prose.patch").read_bytes()

    listed = {p["name"]: p["status"] for p in json.loads(ok(root, "list", "--json").out)["patches"]}
    assert listed == {"0001-not-needed.patch": "Inappropriate [not needed]",
                      "0002-sent.patch": "Submitted [https://github.com/o/r/pull/5]",
                      "0003-prose.patch": "Pending"}
    ok(root, "ledger")
    ledger = (root / "series/PATCHES.md").read_text()
    assert re.search(r"\[0001-not-needed\.patch\].*\| Inappropriate \(not needed\) \|", ledger), \
        ledger
    assert "Submitted [PR #5](https://github.com/o/r/pull/5)" in ledger, ledger

    doc = json.loads(run_cli(root, "lint", "--no-forge", "--json").out)
    said = [f for f in doc["findings"] if f["check"] == "header"]
    assert said == [], doc

    # A file an import wrote before, `Upstream-Status: Pending` in its header: lint names
    # both lines, the pseudo-header's where it is.
    stale = originals["0001-not-needed.patch"].replace(
        b"Subject:", b"Upstream-Status: Pending\nSubject:")
    add_patch_file(root, "up", "stale.patch", stale)
    doc = json.loads(run_cli(root, "lint", "--no-forge", "--json").out)
    found = [f["message"] for f in doc["findings"] if f["patch"] == "up/stale.patch"
             and "contradicts Forwarded" in f["message"]]
    assert found == ["line 3: Upstream-Status: Pending contradicts Forwarded: not-needed "
                     "(line 9), which says it needs no forwarding: remove the Upstream-Status "
                     "line (Forwarded says where the fix stands) or make it agree"], doc


def renamed_onto_a_name_an_export_left(root: Path, tmp_path: Path) -> tuple[str, str, Path]:
    """Two fixes imported and exported with `export --quilt DIR`, the first deleted, the series
    exported again (DIR keeps its file, unlisted), the second renamed to the first's name:
    (the first's name, the second's old name, DIR)."""
    fork = fork_with_commits(tmp_path)
    ok(root, "import", "git", "main..fixes", "--repo", str(fork), "--upstream", "up")
    first, second = (root / "series/up/series").read_text().split()
    exported = tmp_path / "quilt-patches"
    ok(root, "export", "--quilt", str(exported))
    ok(root, "delete", first.removesuffix(".patch"))
    ok(root, "export", "--quilt", str(exported))
    assert (exported / first).is_file()  # an export never removes a file from DIR
    ok(root, "rename", second.removesuffix(".patch"), first.removesuffix(".patch"))
    return first, second, exported


@pytest.mark.parametrize("quilt", ["unchanged", "changed"])
def test_import_quilt_update_after_a_fix_was_renamed_onto_a_name_an_earlier_export_left(
        project, tmp_path, quilt):
    """fix1 and fix2 exported, fix1 deleted, the series exported again (DIR keeps fix1.patch,
    unlisted, still recorded as written), fix2 renamed to fix1. `import quilt --update` took
    the renamed fix for the old fix1 that quilt deleted: refused ("quilt delete?"), and with
    `--delete`, as the hint said, the series was left empty, the live fix moved to deleted/;
    with fix2 changed in quilt and renamed alike there, as the refusal says, it was refused as
    changed in quilt and in the series, which it never was: quilt's change could not come
    back. The file the later export no longer listed is not the renamed fix's."""
    root = project
    first, second, exported = renamed_onto_a_name_an_export_left(root, tmp_path)
    fix = (root / "series/up" / first).read_bytes()
    if quilt == "unchanged":
        run = run_cli(root, "import", "quilt", str(exported), "--update")
        # (said as what it is: the export wrote it under the name quilt still lists)
        assert run.rc == 0 and f"note: up/{first} is {second} as `export --quilt` wrote it, " \
            "renamed in the series since; kept in its place" in run.err, run.text
        assert "joined the series" not in run.err, run.text
        ok(root, "import", "quilt", str(exported), "--update", "--delete")
        assert (root / "series/up/series").read_text().split() == [first]
        assert (root / "series/up" / first).read_bytes() == fix
        return
    (exported / second).write_bytes((exported / second).read_bytes().replace(
        b"+new = 1\n", b"+new = 2\n"))
    run = run_cli(root, "import", "quilt", str(exported), "--update")
    assert run.rc == 2 and f"{second} is {first} now" in run.err, run.text
    (exported / second).rename(exported / first)  # as the refusal says
    (exported / "series").write_text(f"{first}\n")
    run = run_cli(root, "import", "quilt", str(exported), "--update")
    assert run.rc == 0, run.text
    assert (root / "series/up/series").read_text().split() == [first]
    assert b"+new = 2" in (root / "series/up" / first).read_bytes()


def test_export_quilt_after_a_fix_was_deleted_and_another_renamed_onto_its_name(project,
                                                                              tmp_path):
    """fix1 exported, deleted, the series exported again (DIR keeps fix1.patch, unlisted), then
    another fix renamed to fix1 and exported: refused as "changed since patchforge exported
    it", a quilt change that never was. The file an earlier export wrote and this one no
    longer lists stays recorded as this project's while it is as written."""
    root = project
    first, _, exported = renamed_onto_a_name_an_export_left(root, tmp_path)
    ok(root, "export", "--quilt", str(exported))
    assert (exported / first).read_bytes() == (root / "series/up" / first).read_bytes()
    # Still never over a change made in DIR since.
    (exported / first).write_bytes((exported / first).read_bytes() + b"\n")
    refused = run_cli(root, "export", "--quilt", str(exported))
    assert refused.rc == 2 and "changed since patchforge exported it" in refused.err


def test_an_export_record_nested_too_deep_is_named_never_an_internal_error(project, tmp_path):
    """The `.patchforge-export` record a quilt export leaves in DIR (which may come from
    anywhere: a checkout, an archive) nested a hundred thousand deep ended the next
    `export --quilt DIR` in "internal error: RecursionError", exit 70. It refuses the record,
    exit 2, naming it, and writes nothing."""
    root = project
    fork = fork_with_commits(tmp_path)
    ok(root, "import", "git", "main..fixes", "--repo", str(fork), "--upstream", "up")
    exported = tmp_path / "quilt-patches"
    ok(root, "export", "--quilt", str(exported))
    record = exported / ".patchforge-export"
    record.write_text("[" * 100000 + "]" * 100000)
    before = snapshot(root)
    run = run_cli(root, "export", "--quilt", str(exported))
    assert run.rc == 2, run.text
    assert f"{record}: not the record `patchforge export --quilt` writes" in run.err, run.err
    assert snapshot(root) == before and record.read_bytes() == b"[" * 100000 + b"]" * 100000


def test_a_subjects_own_bracketed_tags_survive_import_mbox_and_export(project, tmp_path):
    """A commit `[ROCm][Bugfix] Fix line three` (vLLM's title convention), imported from
    `git format-patch` output, became the fix `Fix line three`: mailinfo took every bracketed
    group off the Subject, as plain `git am` does, while `import git` of the same commit kept
    them. `list` and `export --mbox` took them off a fix's Description too, so `git am
    --keep-non-patch` of the export could not give them back. Only `[PATCH ...]` goes now."""
    subject = "[ROCm][Bugfix] Fix line three"
    fork, _ = their_commit(tmp_path, "a.py", UPSTREAM_FILES["a.py"].replace(b"line3\n", b"L3\n"),
                           subject, branch="fixes")
    mbox = tmp_path / "fixes.mbox"
    mbox.write_bytes(subprocess.run(["git", "format-patch", "--stdout", "-v2", "main..fixes"],
                                    cwd=fork, check=True, capture_output=True).stdout)
    assert f"Subject: [PATCH v2] {subject}\n".encode() in mbox.read_bytes()
    ok(project, "import", "mbox", str(mbox))
    other = make_project(tmp_path / "other", pyproject=True)
    add_git_upstream(other, "up", tmp_path / "up-upstream", "main")
    ok(other, "import", "git", "main..fixes", "--repo", str(fork), "--upstream", "up")
    for root in (project, other):
        [name] = (root / "series/up/series").read_text().split()
        assert name == "rocm-bugfix-fix-line-three.patch"
        assert f"Description: {subject}\n".encode() in (root / "series/up" / name).read_bytes()
        assert json.loads(ok(root, "list", "--json").out)["patches"][0]["subject"] == subject
    out = tmp_path / "out.mbox"
    ok(project, "export", "--mbox", str(out))
    assert f"Subject: [PATCH] {subject}\n".encode() in out.read_bytes()
    checkout = upstream_checkout(tmp_path, "am-checkout")
    proc = subprocess.run(["git", "am", "-q", "--keep-non-patch", str(out)], cwd=checkout,
                          capture_output=True)
    assert proc.returncode == 0, proc.stderr
    assert git(checkout, "log", "-1", "--format=%s").strip() == subject


def test_import_overlay_given_the_files_place_in_the_image_names_the_path_meant(project,
                                                                                tmp_path):
    """A hand-kept overlay's mount list names where the file goes in the image; given as
    `--path` (install-root and path), it was refused as an "unsafe path ... absolute path" that
    "a patch may only touch files inside its upstream", with no word of the path meant. It
    names the install-root and the path inside the upstream, nothing written, and that path,
    given as the hint says, imports the overlay."""
    overlay = tmp_path / "a.py.overlay"
    overlay.write_bytes(UPSTREAM_FILES["a.py"].replace(b"line7\n", b"line7 fixed\n"))
    before = snapshot(project)
    refused = run_cli(project, "import", "overlay", str(overlay), "--upstream", "up", "--path",
                      "/usr/lib/python3/site-packages/a.py", "--name", "fix-a")
    assert refused.rc == 2, refused.text
    assert ("is where the file is in the image (up's install-root "
            "/usr/lib/python3/site-packages and its path): --path is the path inside the "
            "upstream, 'a.py'") in refused.err, refused.err
    assert snapshot(project) == before
    (hinted,) = re.findall(r"hint: --path (\S+)", refused.err)
    ok(project, "import", "overlay", str(overlay), "--upstream", "up", "--path", hinted,
       "--name", "fix-a")
    assert overlay_tree(project) == {"a.py": overlay.read_bytes()}


def test_export_quilt_reads_no_link_fifo_or_directory_of_a_name_it_no_longer_writes(
        project, tmp_path):
    """A patch an earlier `export --quilt DIR` wrote and this one no longer writes (its fix
    renamed since) stays recorded as this project's while DIR's file holds what was written.
    That file was read to know it: a FIFO there blocked the export for ever (holding the
    project's lock), a link out of DIR was read through. Neither is read now: the export ends,
    exit 0, leaves the FIFO, the link or a directory of that name as it is, and no longer
    records the name as its own; the file outside DIR is not read. DIR/series itself a FIFO, or
    listing a link: refused, naming it, nothing written."""
    root = project
    fork = fork_with_commits(tmp_path)
    ok(root, "import", "git", "main..fixes", "--repo", str(fork), "--upstream", "up")
    first, second = (root / "series/up/series").read_text().split()
    pristine = tmp_path / "pristine"
    ok(root, "export", "--quilt", str(pristine))
    ok(root, "rename", first, "renamed")
    ok(root, "export", "--quilt", str(pristine))
    recorded = json.loads((pristine / ".patchforge-export").read_bytes())["patches"]
    assert first in recorded and (pristine / first).is_file()
    outside = tmp_path / "outside.patch"
    outside.write_bytes((pristine / first).read_bytes())
    for kind, make in (("FIFO", os.mkfifo), ("link", lambda path: path.symlink_to(outside)),
                       ("directory", os.mkdir)):
        exported = tmp_path / f"with-a-{kind}"
        subprocess.run(["cp", "-a", str(pristine), str(exported)], check=True)
        (exported / first).unlink()
        make(exported / first)
        proc = subprocess.run([sys.executable, "-m", "patchforge", "--root", str(root),
                               "export", "--quilt", str(exported)],
                              capture_output=True, timeout=120)
        assert proc.returncode == 0, (kind, proc.stderr.decode())
        record = json.loads((exported / ".patchforge-export").read_bytes())["patches"]
        assert first not in record and {"renamed.patch", second} <= set(record), (kind, record)
        assert (exported / "series").read_text().split() == ["renamed.patch", second]
        left = exported / first
        assert left.is_symlink() if kind == "link" else \
            os.path.lexists(left) and not left.is_file(), kind
    # DIR/series itself a FIFO (read to know what it lists), or listing a link out of DIR:
    # refused, exit 2, naming it, nothing written; the file outside is never read.
    for kind in ("FIFO", "listed link"):
        exported = tmp_path / f"with-a-{kind.replace(' ', '-')}"
        subprocess.run(["cp", "-a", str(pristine), str(exported)], check=True)
        if kind == "FIFO":
            (exported / "series").unlink()
            os.mkfifo(exported / "series")
            said = f"{exported / 'series'} is not a regular file, where the export writes " \
                "quilt's series file; nothing was written"
        else:
            (exported / "series").write_text(f"{first}\nrenamed.patch\n{second}\n")
            (exported / first).unlink()
            (exported / first).symlink_to(outside)
            said = f"{exported / 'series'}:1: lists {first}, a symlink in {exported}"
        before = tree_bytes(exported) if kind != "FIFO" else None
        proc = subprocess.run([sys.executable, "-m", "patchforge", "--root", str(root),
                               "export", "--quilt", str(exported)],
                              capture_output=True, timeout=120)
        assert proc.returncode == 2 and said in proc.stderr.decode(), \
            (kind, proc.stderr.decode())
        if before is not None:
            assert tree_bytes(exported) == before, kind
        assert (exported / "series").is_fifo() if kind == "FIFO" else \
            (exported / first).is_symlink(), kind


def test_import_quilt_reads_no_link_or_fifo_of_the_quilt_directory(project, tmp_path):
    """`import quilt DIR` read DIR/series and each patch it lists as they came: a FIFO for the
    series blocked the import for ever (holding the project's lock), and a patch that is a
    link (or in a subdirectory that is one) was read through, whatever it named outside DIR.
    Each is refused now, exit 2,
    naming it (and the series line), nothing imported; the file outside is never read.
    `import quilt --update` refuses a link alike."""
    root = project
    outside = tmp_path / "outside.diff"
    outside.write_bytes(
        b"Fix b\n\nIndex: up/pkg/b.py\n===\n--- up.orig/pkg/b.py\n+++ up/pkg/b.py\n"
        b"@@ -1,3 +1,3 @@\n x = 1\n-y = 2\n+y = 20\n z = 3\n")
    before = snapshot(root)
    for kind in ("FIFO series", "FIFO patch", "linked patch", "linked series",
                 "linked subdirectory"):
        quilt_dir = tmp_path / kind.replace(" ", "-")
        quilt_dir.mkdir()
        if kind == "FIFO series":
            os.mkfifo(quilt_dir / "series")
            said = f"{quilt_dir / 'series'} is not a regular file"
        elif kind == "linked series":
            (tmp_path / "elsewhere-series").write_bytes(b"plain.diff\n")
            (quilt_dir / "series").symlink_to(tmp_path / "elsewhere-series")
            (quilt_dir / "plain.diff").write_bytes(outside.read_bytes())
            said = f"{quilt_dir / 'series'} is a symlink"
        elif kind == "linked subdirectory":  # quilt keeps patches in subdirectories too
            (quilt_dir / "series").write_bytes(b"sub/outside.diff\n")
            (quilt_dir / "sub").symlink_to(tmp_path)
            said = f"{quilt_dir / 'series'}:1: sub/outside.diff is a symlink ({quilt_dir / 'sub'})"
        else:
            (quilt_dir / "series").write_bytes(b"# plain quilt\nplain.diff\n")
            if kind == "FIFO patch":
                os.mkfifo(quilt_dir / "plain.diff")
                said = f"{quilt_dir / 'series'}:2: plain.diff is not a regular file"
            else:
                (quilt_dir / "plain.diff").symlink_to(outside)
                said = f"{quilt_dir / 'series'}:2: plain.diff is a symlink"
        proc = subprocess.run([sys.executable, "-m", "patchforge", "--root", str(root),
                               "import", "quilt", str(quilt_dir)],
                              capture_output=True, timeout=120)
        err = proc.stderr.decode()
        assert proc.returncode == 2 and said in err, (kind, err)
        assert snapshot(root) == before, kind
    # The way back from quilt: a patch of the exported directory made a link.
    exported = tmp_path / "exported"
    fork = fork_with_commits(tmp_path)
    ok(root, "import", "git", "main..fixes", "--repo", str(fork), "--upstream", "up")
    first = (root / "series/up/series").read_text().split()[0]
    ok(root, "export", "--quilt", str(exported))
    before = snapshot(root)
    (tmp_path / "kept.patch").write_bytes((exported / first).read_bytes())
    (exported / first).unlink()
    (exported / first).symlink_to(tmp_path / "kept.patch")
    refused = run_cli(root, "import", "quilt", str(exported), "--update")
    assert refused.rc == 2 and f"{exported / 'series'}:1: {first} is a symlink" in refused.err, \
        refused.err
    assert snapshot(root) == before


def _stg_exported(tmp_path: Path, message: str, author: tuple[str, str]) -> Path:
    """A fix made with StGit on a clone of the upstream and written out by `stg export` (its
    template: the subject, a blank line, `From: Name <email>`, a blank line, the rest of the
    message, then `---`, the diffstat and the diff): the export's directory."""
    if shutil.which("stg") is None:
        pytest.skip("StGit is not installed (apt-get install -y stgit)")
    work = tmp_path / "stg-work"
    git(tmp_path, "clone", "-q", str(tmp_path / "up-upstream"), str(work))
    env = dict(os.environ, GIT_AUTHOR_NAME=author[0], GIT_AUTHOR_EMAIL=author[1],
               GIT_COMMITTER_NAME=author[0], GIT_COMMITTER_EMAIL=author[1])
    stg = lambda *args: subprocess.run(["stg", *args], cwd=work, env=env, check=True,  # noqa: E731
                                       capture_output=True)
    stg("init")
    stg("new", "y-twenty", "-m", message)
    (work / "pkg/b.py").write_bytes(b"x = 1\ny = 20\nz = 3\n")
    stg("refresh")
    exported = tmp_path / "stg-export"
    stg("export", "-d", str(exported))
    return exported


def test_import_quilt_of_a_stgit_export_takes_its_subject_and_author(project, tmp_path):
    """`stg export` writes the patch's subject as the header's first line and its author as a
    `From:` paragraph under it. `import quilt` kept both as free text: the fix had no
    Description and no Author (`list` showed no subject, lint two errors), and `export --mbox`
    gave `git am` a commit `Unknown <unknown@localhost>`, `patchforge patch`, dated 1970, exit
    0. The subject is the fix's Description and the person its Author; the rest is its
    words."""
    root = project
    exported = _stg_exported(tmp_path, "pkg: y is twenty\n\nCallers expect twenty.\n",
                             ("Stack Gitter", "sg@example.com"))
    assert (exported / "y-twenty").read_bytes().startswith(
        b"pkg: y is twenty\n\nFrom: Stack Gitter <sg@example.com>\n\nCallers expect twenty.\n")
    ok(root, "import", "quilt", str(exported))
    patch = (root / "series/up/y-twenty.patch").read_bytes()
    header, _, diff = patch.partition(b"\n---\n")
    assert header.startswith(b"Description: pkg: y is twenty\n"
                             b"Author: Stack Gitter <sg@example.com>\n"), patch
    assert header.endswith(b"\n\nCallers expect twenty.") and b"From:" not in header, patch
    listed = json.loads(ok(root, "list", "--json").out)["patches"]
    assert [p["subject"] for p in listed] == ["pkg: y is twenty"], listed
    doc = json.loads(run_cli(root, "lint", "--no-forge", "--json").out)
    assert [f for f in doc["findings"] if f["check"] == "header"] == [], doc

    mbox = tmp_path / "fixes.mbox"
    ok(root, "export", "--mbox", str(mbox))
    clone = upstream_checkout(tmp_path, "am-clone")
    git(clone, "am", "-q", str(mbox))
    assert git(clone, "log", "-1", "--format=%an <%ae>|%s") == \
        "Stack Gitter <sg@example.com>|pkg: y is twenty\n"
    assert (clone / "pkg/b.py").read_bytes() == b"x = 1\ny = 20\nz = 3\n"


def test_import_quilt_keeps_words_that_are_no_stgit_header_as_they_are(project, tmp_path):
    """The mirror: words that only resemble StGit's header (a paragraph of several lines, a
    `From:` line inside prose, a `From:` naming no address) stay the patch's free text, byte for
    byte, as quilt has them."""
    root = project
    quilt_dir = tmp_path / "patches"
    quilt_dir.mkdir()
    diff = (b"--- a/pkg/b.py\n+++ b/pkg/b.py\n@@ -1,3 +1,3 @@\n x = 1\n-y = 2\n+y = 20\n"
            b" z = 3\n")
    heads = {
        "two-lines.patch": b"y is twenty\nbecause callers said so\n\n"
                           b"From: Stack Gitter <sg@example.com>\n\n",
        "prose.patch": b"y is twenty\n\nFrom: the report of 2024, callers expect it.\n"
                       b"So it is.\n\n",
        "no-address.patch": b"y is twenty\n\nFrom: Stack Gitter\n\n",
    }
    for name, head in heads.items():
        sub = quilt_dir / name.removesuffix(".patch")
        sub.mkdir()
        (sub / "series").write_bytes(name.encode() + b"\n")
        (sub / name).write_bytes(head + diff)
    for name, head in heads.items():
        ok(root, "import", "quilt", str(quilt_dir / name.removesuffix(".patch")))
        data = (root / "series/up" / name).read_bytes()
        assert head + diff in data or data.endswith(b"\n" + head + diff), data
        assert b"Description:" not in data and b"Author:" not in data, data
        ok(root, "delete", name.removesuffix(".patch"))


def test_import_quilt_update_of_a_patch_stgit_wrote_takes_its_author(project, tmp_path):
    """A patch `stg export` wrote, put into a directory `export --quilt` made (listed in its
    series): `import quilt --update` gave it the importer's identity as Author (here none:
    `Unknown <unknown@localhost>`) while the file named its author, and its words kept the
    subject a second time. It joins with StGit's subject and author."""
    root = project
    exported = tmp_path / "quilt-patches"
    ok(root, "export", "--quilt", str(exported))
    made = _stg_exported(tmp_path, "pkg: y is twenty\n\nCallers expect twenty.\n",
                         ("Stack Gitter", "sg@example.com"))
    (exported / "y-twenty.patch").write_bytes((made / "y-twenty").read_bytes())
    (exported / "series").write_bytes((exported / "series").read_bytes() + b"y-twenty.patch\n")
    ok(root, "import", "quilt", str(exported), "--update")
    header = (root / "series/up/y-twenty.patch").read_bytes().partition(b"\n---\n")[0]
    assert header.startswith(b"Description: pkg: y is twenty\n"
                             b"Author: Stack Gitter <sg@example.com>\n"), header
    assert header.endswith(b"\n\nCallers expect twenty.") and b"From:" not in header, header


def test_a_stgit_export_quilt_refreshed_comes_back_with_its_subject_once(project, tmp_path):
    """`stg export` -> `import quilt DIR` -> quilt works in DIR (push, a change, refresh; the
    file keeps StGit's header) -> `import quilt DIR --update`: quilt's header, words with no
    field, was read as words alone, its first line the Description and all of it the
    description, so the fix said its subject twice (`Description: pkg: y is twenty`, then
    `pkg: y is twenty` and `From: Stack Gitter ...` atop its words), and `export --mbox`
    and `pr` carried both. Read as `import quilt` reads StGit's header: the subject once,
    the author the Author, the rest the words; run again, nothing to take back. A subject
    changed in StGit (`stg edit`, exported again) is the fix's Description."""
    need_tool("quilt")
    root = project
    exported = _stg_exported(tmp_path, "pkg: y is twenty\n\nCallers expect twenty.\n",
                             ("Stack Gitter", "sg@example.com"))
    ok(root, "import", "quilt", str(exported))
    imported = (root / "series/up/y-twenty.patch").read_bytes().partition(b"\n---\n")[0]
    checkout = upstream_checkout(tmp_path, "quilt-checkout")
    env = dict(os.environ, QUILT_PATCHES=str(exported), QUILTRC="/dev/null")
    subprocess.run(["quilt", "push", "-a"], cwd=checkout, env=env, check=True,
                   capture_output=True)
    (checkout / "pkg/b.py").write_bytes(b"x = 1\ny = 20\nz = 30\n")
    subprocess.run(["quilt", "refresh"], cwd=checkout, env=env, check=True,
                   capture_output=True)
    assert (exported / "y-twenty").read_bytes().startswith(b"pkg: y is twenty\n\nFrom: ")

    ok(root, "import", "quilt", str(exported), "--update")
    patch = (root / "series/up/y-twenty.patch").read_bytes()
    header, _, diff = patch.partition(b"\n---\n")
    assert header.count(b"y is twenty") == 1 and b"From:" not in header, patch
    assert header.startswith(b"Description: pkg: y is twenty\n"
                             b"Author: Stack Gitter <sg@example.com>\n"), patch
    assert header.endswith(b"\n\nCallers expect twenty."), patch
    assert b"+z = 30" in diff
    # The header as the first import wrote it, but the day it was changed.
    assert re.sub(rb"Last-Update: [^\n]*\n", b"", header) == imported, (header, imported)
    assert "nothing to take back" in ok(root, "import", "quilt", str(exported), "--update").out

    (exported / "y-twenty").write_bytes((exported / "y-twenty").read_bytes().replace(
        b"pkg: y is twenty\n", b"pkg: y is twenty, as callers expect\n", 1))
    ok(root, "import", "quilt", str(exported), "--update")
    header = (root / "series/up/y-twenty.patch").read_bytes().partition(b"\n---\n")[0]
    assert header.startswith(b"Description: pkg: y is twenty, as callers expect\n"
                             b"Author: Stack Gitter <sg@example.com>\n"), header
    assert header.count(b"y is twenty") == 1 and b"From:" not in header, header


def test_a_fix_taken_through_stgit_comes_back_with_its_header(project, tmp_path):
    """`export --quilt DIR`, then StGit on DIR: `stg import -s DIR/series` makes the header's
    first line (`Description: ...`) the commit's subject and an `Author:` line its author;
    a change, `stg refresh`, `stg export -d DIR` writes `Description: ...`, `From: ...`, then
    the other fields as words. `import quilt DIR --update` kept the Description alone: the
    other fields and `From:` went into the fix's words, a second `Upstream` and `Base` were
    added above them, and both Authors were gone, exit 0 ("updated"). The header comes back
    as the series has it, with StGit's change; run again, nothing to take back."""
    if shutil.which("stg") is None:
        pytest.skip("StGit is not installed (apt-get install -y stgit)")
    root = project
    base = git(root, "-C", str(tmp_path / "up-upstream"), "rev-parse", "HEAD").strip()
    header = (b"Description: pkg: y is twenty\n"
              b"Author: Ada Lovelace <ada@example.com>\n"
              b"Author: Grace Hopper <grace@example.com>\n"
              b"Upstream-Status: Pending\n"
              b"Upstream: up\n"
              b"Base: " + base.encode() + b"\n"
              b"\n"
              b"Callers expect twenty.\n")
    add_patch_file(root, "up", "y-twenty.patch", header + b"---\n" + (
        b"diff --git a/pkg/b.py b/pkg/b.py\n--- a/pkg/b.py\n+++ b/pkg/b.py\n"
        b"@@ -1,3 +1,3 @@\n x = 1\n-y = 2\n+y = 20\n z = 3\n"))
    ok(root, "edit", "y-twenty")
    ok(root, "refresh")
    exported = tmp_path / "quilt-patches"
    ok(root, "export", "--quilt", str(exported))
    work = upstream_checkout(tmp_path, "stg-work")
    env = dict(os.environ, GIT_AUTHOR_NAME="Stack Gitter", GIT_AUTHOR_EMAIL="sg@example.com",
               GIT_COMMITTER_NAME="Stack Gitter", GIT_COMMITTER_EMAIL="sg@example.com")

    def stg(*args):
        subprocess.run(["stg", *args], cwd=work, env=env, check=True, capture_output=True)
    stg("init")
    stg("import", "-s", str(exported / "series"))
    (work / "pkg/b.py").write_bytes(b"x = 1\ny = 20\nz = 30\n")
    stg("refresh")
    stg("export", "-d", str(exported))
    written = (exported / "y-twenty.patch").read_bytes()
    assert written.startswith(b"Description: pkg: y is twenty\n\nFrom: Grace Hopper "
                              b"<grace@example.com>\n\nUpstream-Status: Pending\n"), written

    run = ok(root, "import", "quilt", str(exported), "--update")
    assert "updated up/y-twenty.patch" in run.out, run.text
    patch = (root / "series/up/y-twenty.patch").read_bytes()
    took = patch.partition(b"\n---\n")[0]
    assert re.sub(rb"Last-Update: [^\n]*\n", b"", took) == header.rstrip(b"\n"), patch
    assert b"+z = 30" in patch and b"From:" not in took
    assert "nothing to take back" in ok(root, "import", "quilt", str(exported), "--update").out
    doc = json.loads(run_cli(root, "lint", "--no-forge", "--json").out)
    assert [f for f in doc["findings"] if f["check"] == "header"] == [], doc


@pytest.mark.parametrize("author,expected", [
    (b"Author: Ada Lovelace <ada@example.com>, Grace Hopper <grace@example.com>\n", None),
    (b"Author: Ada Lovelace <ada@example.com>\n Grace Hopper <grace@example.com>\n", None),
    (b"Author: Lovelace, Ada <ada@example.com>\n Grace Hopper <grace@example.com>\n",
     "Lovelace, Ada <ada@example.com>"),
    (b"Author: Ada Lovelace <ada@example.com>\nAuthor: Grace Hopper <grace@example.com>\n", None),
    (b"Author: Ada Lovelace <ada@example.com>\n", None),
    (b"Author: Lovelace, Ada <ada@example.com>\n", "Lovelace, Ada <ada@example.com>"),
])
def test_export_mbox_of_a_fix_with_two_authors_gives_git_am_the_first(project, tmp_path,
                                                                      author, expected):
    """A fix by two people in one Author field (comma-separated, or folded one per line, as
    `pr` reads it: the first the author, the other a co-author) was mailed as `From: Ada
    Lovelace <ada@example.com>, Grace Hopper <...>`, and `git am` made the commit by
    `ada@example.com <ada@example.com>`: the author's name lost, exit 0. The mail's From is the
    first person, as `pr`'s commit has it; the body keeps the field as written, so `import mbox`
    gives it back byte for byte."""
    root = project
    base = _base(root)
    data = (b"Description: Fix line three\n" + author + b"Upstream-Status: Pending\n"
            b"Upstream: up\nBase: " + base.encode() + b"\nLast-Update: 2024-02-03\n\n"
            b"Words.\n---\n" + _diff_of(tmp_path / "up-upstream", "a.py",
                                        UPSTREAM_FILES["a.py"].replace(b"line3\n", b"LINE3\n")))
    add_patch_file(root, "up", "fix.patch", data)
    mbox = tmp_path / "out.mbox"
    ok(root, "export", "--mbox", str(mbox))
    checkout = upstream_checkout(tmp_path, "am-checkout")
    git(checkout, "am", "-q", str(mbox))
    assert git(checkout, "log", "-1", "--format=%an <%ae>|%s") == \
        (expected or "Ada Lovelace <ada@example.com>") + "|Fix line three\n"
    assert author in git(checkout, "log", "-1", "--format=%B").encode()

    (root / "series/up/fix.patch").unlink()
    (root / "series/up/series").write_bytes(b"")
    ok(root, "import", "mbox", str(mbox))
    assert (root / "series/up/fix.patch").read_bytes() == data
