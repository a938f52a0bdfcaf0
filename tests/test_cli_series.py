"""The quilt-like loop through the real CLI on a real git upstream: new, edit, refresh, delete,
rename, move, list and show; a kill during refresh; malformed series and patch files."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.cli import ok, run_cli
from helpers.env import REPO_ROOT
from helpers.git import git
from helpers.snapshot import snapshot
from helpers.project import UPSTREAM_FILES, add_patch_file, git_project
from helpers.schemas import schema_errors
from helpers.snapshot import tree_bytes


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.setenv("PATCHFORGE_DATE", "2024-05-01")
    root, commit = git_project(tmp_path)
    return root


def work(root: Path) -> Path:
    return root / ".patchforge" / "work" / "up"


def series(root: Path) -> bytes:
    return (root / "series" / "up" / "series").read_bytes()


def patch_bytes(root: Path, name: str) -> bytes:
    return (root / "series" / "up" / f"{name}.patch").read_bytes()


def replace_in(path: Path, old: bytes, new: bytes) -> None:
    data = path.read_bytes()
    assert old in data
    path.write_bytes(data.replace(old, new, 1))


def make_patch(root: Path, name: str, edits: dict[str, tuple[bytes, bytes]], *, after=None,
               extra=()) -> bytes:
    """new NAME --file ..., edit the files in its worktree, refresh; returns the patch file."""
    ok(root, "new", name, *(["--after", after] if after else []), *extra,
       *[arg for rel in edits for arg in ("--file", rel)])
    for rel, (old, new) in edits.items():
        replace_in(work(root) / rel, old, new)
    run = ok(root, "refresh")
    assert "refreshed" in run.text
    return patch_bytes(root, name)


def apply_in_checkout(tmp_path: Path, root: Path, names: list[str]) -> Path:
    """Apply patches with the real `git apply` on a fresh clone of the upstream."""
    checkout = tmp_path / f"checkout-{len(list(tmp_path.glob('checkout-*')))}"
    git(tmp_path, "clone", "-q", str(tmp_path / "up-upstream"), str(checkout))
    for name in names:
        subprocess.run(["git", "apply", str(root / "series" / "up" / f"{name}.patch")],
                       cwd=checkout, check=True, capture_output=True)
    return checkout


def test_new_edit_refresh_makes_git_s_diff(project, tmp_path):
    root = project
    run = ok(root, "new", "fix-crlf", "-m", "Keep CRLF and no final newline",
             "--file", "pkg/crlf.txt")
    assert "created up/fix-crlf.patch" in run.text
    # The worktree holds what the patch is about, nothing else of the upstream.
    assert sorted(p.relative_to(work(root)).as_posix() for p in work(root).rglob("*")
                  if p.is_file() and ".git" not in p.parts) == ["pkg/crlf.txt"]
    assert series(root) == b"fix-crlf.patch\n"
    # More files join by `add`: by upstream path, or by their path in the worktree.
    ok(root, "add", "pkg/nofinal.txt", "pkg/b.py")
    ok(root, "add", str(work(root) / "a.py"))
    assert (work(root) / "a.py").read_bytes() == UPSTREAM_FILES["a.py"]
    replace_in(work(root) / "pkg/crlf.txt", b"two\r\n", b"TWO\r\n")
    replace_in(work(root) / "pkg/nofinal.txt", b"gamma", b"GAMMA")
    (work(root) / "pkg" / "new.py").write_bytes(b"created = True\n")
    (work(root) / "pkg" / "b.py").unlink()
    # A file nobody added is refused, never folded into the patch.
    stray = run_cli(root, "refresh")
    assert stray.rc == 2 and "pkg/new.py" in stray.err and "patchforge add" in stray.err
    ok(root, "add", "pkg/new.py")
    assert (work(root) / "pkg" / "new.py").read_bytes() == b"created = True\n"
    worktree_files = {rel: (work(root) / rel).read_bytes()
                      for rel in ("pkg/crlf.txt", "pkg/nofinal.txt", "pkg/new.py")}
    result = json.loads(ok(root, "refresh", "--json").out)
    assert result["changed"] and result["later_failing"] == []
    assert sorted(result["files"]) == ["pkg/b.py", "pkg/crlf.txt", "pkg/new.py", "pkg/nofinal.txt"]
    data = patch_bytes(root, "fix-crlf")
    assert b"\\ No newline at end of file" in data and b"+TWO\r\n" in data
    assert b"new file mode 100644" in data and b"deleted file mode 100644" in data
    # git itself applies it and gets the worktree's bytes.
    checkout = apply_in_checkout(tmp_path, root, ["fix-crlf"])
    for rel, content in worktree_files.items():
        assert (checkout / rel).read_bytes() == content
    assert not (checkout / "pkg/b.py").exists()
    # Refresh removed the worktree (everything in it is in the patch); editing again and
    # refreshing without changes keeps the very same bytes.
    assert not work(root).exists()
    ok(root, "edit", "fix-crlf")
    assert "unchanged" in ok(root, "refresh").text
    assert patch_bytes(root, "fix-crlf") == data


def test_a_file_added_to_an_edit_arrives_as_the_series_before_the_patch_leaves_it(project,
                                                                                  tmp_path):
    """An edit takes only its own files through the series before it; a file added later
    (`add`, `edit --file`) is taken through it then: earlier patches' changes are there, and
    the refreshed patch applies with git on top of them."""
    root = project
    make_patch(root, "first", {"a.py": (b"line2", b"line2 from first")})
    make_patch(root, "second", {"pkg/crlf.txt": (b"two\r\n", b"two, second\r\n")})
    make_patch(root, "third", {"pkg/nofinal.txt": (b"gamma", b"GAMMA")})
    # a.py went through `first` only; `third`'s worktree holds its own file and nothing else.
    ok(root, "edit", "third")
    assert sorted(p.relative_to(work(root)).as_posix() for p in work(root).rglob("*")
                  if p.is_file() and ".git" not in p.parts) == ["pkg/nofinal.txt"]
    ok(root, "add", "a.py")
    assert b"line2 from first" in (work(root) / "a.py").read_bytes()
    replace_in(work(root) / "a.py", b"line2 from first", b"line2 from first and third")
    ok(root, "refresh")
    data = patch_bytes(root, "third")
    assert b"-line2 from first\n+line2 from first and third\n" in data
    # `edit --file` does the same for the patch in the middle.
    ok(root, "edit", "second", "--file", "a.py")
    assert b"line2 from first" in (work(root) / "a.py").read_bytes()
    assert "unchanged" in ok(root, "refresh").text
    checkout = apply_in_checkout(tmp_path, root, ["first", "second", "third"])
    assert b"line2 from first and third" in (checkout / "a.py").read_bytes()


def test_a_path_the_upstream_lacks_is_refused_unless_create_says_it_is_new(project):
    """`new --file vllm/platform/rocm.py` (for `platforms`) only warned, exit 0: refresh wrote
    a patch creating an empty file, which overlays mounted into the image. A path the
    upstream lacks is refused, naming the nearest upstream paths, with nothing written;
    `--create` says it is a new file, which a plain line then names (no warning: it was asked)."""
    root = project
    before = snapshot(root)
    for args in (["new", "typo", "--file", "pkg/c.py"], ["new", "typo", "--file", "pkgs/b.py"]):
        run = run_cli(root, *args)
        assert run.rc == 2 and "does not exist in the upstream" in run.err, run.text
        assert "--create" in run.err
        assert snapshot(root) == before
    assert "(did you mean pkg/b.py?)" in run.err, run.err
    # --create asked for it: a plain line names it, no warning that the upstream lacks it
    # (it warned, as for a path `add` brings in unasked).
    run = ok(root, "new", "typo", "--file", "a.py", "--file", "nosuch.py", "--create")
    assert "new, empty file the patch creates, as --create asked: nosuch.py\n" in run.out
    assert "warning" not in run.err and "a.py" not in run.out.split("--create asked")[1]
    # `add` is the way to bring in a new file, as `quilt add`: a warning names it, and the
    # upstream's nearest paths.
    run = ok(root, "add", "pkg/nosuch2.py", "pkg/crlf.text")
    assert "warning: up has no file pkg/nosuch2.py: " in run.err, run.err
    assert "warning: up has no file pkg/crlf.text (did you mean pkg/crlf.txt?)" in run.err
    (work(root) / "pkg" / "crlf.text").unlink()
    assert "warning: up has no file pkg/nosuch2.py" in run.err
    (work(root) / "nosuch.py").write_bytes(b"meant = True\n")  # meant: no warning once written
    assert "nosuch.py" not in ok(root, "add", "nosuch.py").err
    (work(root) / "pkg" / "nosuch2.py").unlink()
    replace_in(work(root) / "a.py", b"line2", b"line2 changed")
    ok(root, "refresh")
    data = patch_bytes(root, "typo")
    assert b"b/nosuch.py\nnew file mode" in data and b"nosuch2" not in data
    # `edit --file` too, before its worktree is made; the patch's own new file is there.
    run = run_cli(root, "edit", "typo", "--file", "pkg/nosuch3.py")
    assert run.rc == 2 and "pkg/nosuch3.py does not exist" in run.err, run.text
    assert not work(root).exists()
    ok(root, "edit", "typo", "--file", "nosuch.py")


def test_a_file_only_a_later_patch_creates_is_not_there_for_a_new_patch_before_it(project):
    """`new mid --after first --file new.py`, with a patch after `first` creating new.py, took
    new.py for a file the new patch's base has: the patch was written and listed, then its
    worktree refused the path (exit 2, the patch left behind). The patches after the
    insertion point are not its base: refused before anything is written. After the creating
    patch, the file is there."""
    root = project
    ok(root, "new", "first", "--no-edit")
    ok(root, "new", "maker", "--file", "made.py", "--create")
    (work(root) / "made.py").write_bytes(b"made = 1\n")
    ok(root, "refresh")
    before = snapshot(root)
    run = run_cli(root, "new", "mid", "--after", "first", "--file", "made.py")
    assert run.rc == 2 and "made.py does not exist in the upstream" in run.err, run.text
    assert snapshot(root) == before
    ok(root, "new", "last", "--after", "maker", "--file", "made.py")
    assert (work(root) / "made.py").read_bytes() == b"made = 1\n"


def test_new_with_no_edit_refuses_the_files_of_a_worktree_it_does_not_open(project):
    """`new fix --no-edit --file nosuch.py` wrote and listed fix.patch, exit 0: the path was
    never checked (a typo went unnoticed) nor the file brought in anywhere. --file and
    --create go with the worktree: refused with --no-edit, exit 2, nothing written."""
    root = project
    before = snapshot(root)
    for extra in (["--file", "nosuch_typo.py"], ["--file", "a.py"], ["--create"]):
        run = run_cli(root, "new", "fix", "--no-edit", *extra)
        assert run.rc == 2 and "--no-edit does not open; nothing was written" in run.err, \
            run.text
        assert snapshot(root) == before
    ok(root, "new", "fix", "--no-edit")
    ok(root, "edit", "fix", "--file", "a.py")
    assert (work(root) / "a.py").exists()


def test_refresh_keeps_the_header_byte_for_byte_except_last_update(project, monkeypatch):
    root = project
    ok(root, "new", "hand", "--no-edit")
    base = json.loads((root / "upstream.lock").read_text())["upstreams"]["up"]["commit"]
    # CRLF header lines, odd spacing, a continuation line and unknown fields all survive.
    header = ("Subject: hand-written header\r\n"
              "From: Some One <one@example.com>\r\nX-Custom:   spaced value  \r\n"
              "Upstream-Status: Submitted [https://example.com/pull/1]\r\n"
              "Description: long\r\n continued line\r\n"
              f"Upstream: up\r\nBase: {base}\r\nLast-Update: 2020-01-01\r\nZ-Unknown: kept\r\n"
              "\r\nFree text description.\r\n\r\n").encode()
    diff = (b"---\n"
            b"diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -1,3 +1,3 @@\n"
            b" line1\n-line2\n+LINE2\n line3\n")
    (root / "series/up/hand.patch").write_bytes(header + diff)
    ok(root, "edit", "hand")
    assert (work(root) / "a.py").read_bytes().startswith(b"line1\nLINE2\n")
    # Nothing changed: the patch keeps its bytes, though git would write it with an index line
    # and three lines of context.
    assert "unchanged" in ok(root, "refresh").text
    assert patch_bytes(root, "hand") == header + diff
    ok(root, "edit", "hand")
    replace_in(work(root) / "a.py", b"line10\n", b"LINE10\n")
    monkeypatch.setenv("PATCHFORGE_DATE", "2024-06-30")
    ok(root, "refresh", "hand")
    data = patch_bytes(root, "hand")
    assert data.startswith(header.replace(b"2020-01-01", b"2024-06-30"))
    assert b"+LINE2\n" in data and b"+LINE10\n" in data and b"index " in data


def test_refresh_of_a_plain_diff_says_what_it_wrote_and_keeps_every_word(project, tmp_path):
    """A plain .diff (no header; words above it, and a note between its file sections, as
    people write them by hand) edited and refreshed: the refresh wrote a header without a word,
    and the note between the sections was gone (the diff made again has no place for it).
    The note now ends the description, and both are said; the words above stay as they were,
    and `git apply` takes the result."""
    root = project
    above = b"Fix a and b together.\nThe second line of the words above.\n\n"
    note = b"A note on pkg/b.py: y must stay 2 on the old kernels.\n"
    plain = (above + b"--- a/a.py\n+++ b/a.py\n@@ -1,3 +1,3 @@\n line1\n-line2\n+LINE2\n"
             b" line3\n" + note + b"\ndiff -ruN a/pkg/b.py b/pkg/b.py\n"
             b"--- a/pkg/b.py\n+++ b/pkg/b.py\n@@ -1,3 +1,3 @@\n-x = 1\n+x = 10\n y = 2\n z = 3\n")
    add_patch_file(root, "up", "plain.patch", plain)
    ok(root, "edit", "plain")
    replace_in(work(root) / "a.py", b"line3\n", b"LINE3\n")
    run = ok(root, "refresh")
    data = patch_bytes(root, "plain")
    assert data.startswith(b"Last-Update: 2024-05-01\n\n" + above + note.rstrip(b"\n")
                           + b"\n\n---\ndiff --git a/a.py b/a.py\n"), data
    assert b"diff -ruN" not in data  # the tool's own line, which git's diff writes anew
    assert "had no header: refresh wrote one (Last-Update) above its text, which is kept as " \
        "the description" in run.err, run.err
    assert "between the diff's file sections at line 11 of the old plain.patch ('A note on " \
        "pkg/b.py" in run.err, run.err
    checkout = apply_in_checkout(tmp_path, root, ["plain"])
    assert (checkout / "a.py").read_bytes().startswith(b"line1\nLINE2\nLINE3\n")
    assert (checkout / "pkg/b.py").read_bytes() == b"x = 10\ny = 2\nz = 3\n"
    # --json says the same; a patch with a header gets no such note.
    ok(root, "edit", "plain")
    replace_in(work(root) / "a.py", b"line5\n", b"LINE5\n")
    doc = json.loads(ok(root, "refresh", "--json").out)
    assert schema_errors(doc, "refresh") == []
    assert (doc["header_written"], doc["notes_moved"]) == ([], [])
    assert patch_bytes(root, "plain").count(note) == 1


def test_a_plain_diffs_words_that_begin_like_a_field_stay_whole(project, tmp_path):
    """A plain .diff whose words begin `Note: ...` (read as a field, there being no blank
    line under it) and go on: refresh wrote `Last-Update` under that line and a blank line,
    cutting the note in two, its first line now a header field, without a word. The words
    stay whole under the header written above them (and said), and so through a rebase that
    writes `Base`."""
    root = project
    words = b"Note: line2 must be upper case on gfx942.\nThe second line of the note.\n\n"
    add_patch_file(root, "up", "note.patch", words + b"--- a/a.py\n+++ b/a.py\n"
                   b"@@ -1,3 +1,3 @@\n line1\n-line2\n+LINE2\n line3\n")
    ok(root, "edit", "note")
    replace_in(work(root) / "a.py", b"line3\n", b"LINE3\n")
    run = ok(root, "refresh")
    assert patch_bytes(root, "note").startswith(b"Last-Update: 2024-05-01\n\n" + words
                                                + b"---\n"), patch_bytes(root, "note")
    assert "note.patch had no header: refresh wrote one (Last-Update)" in run.err, run.err
    # Another such plain diff, never refreshed: the rebase that moves it writes `Base` above
    # its words, not between their lines.
    other = b"Note: z is 30 here.\nSo says the second line.\n\n"
    add_patch_file(root, "up", "other.patch", other + b"--- a/pkg/b.py\n+++ b/pkg/b.py\n"
                   b"@@ -1,3 +1,3 @@\n x = 1\n y = 2\n-z = 3\n+z = 30\n")
    upstream = tmp_path / "up-upstream"
    (upstream / "pkg/b.py").write_bytes(b"w = 0\n" + (upstream / "pkg/b.py").read_bytes())
    git(upstream, "commit", "-qam", "a line above")
    ok(root, "rebase", "--to", "up=main")
    moved = patch_bytes(root, "other")
    assert moved.startswith(b"Base: ") and b"\n\n" + other in moved, moved
    assert b"z = 30" in moved and patch_bytes(root, "note").count(words) == 1


def test_edit_in_the_middle_keeps_later_patches_or_names_them(project):
    root = project
    make_patch(root, "one", {"a.py": (b"line2\n", b"LINE2\n")})
    make_patch(root, "two", {"a.py": (b"line10\n", b"LINE10\n")})
    make_patch(root, "three", {"a.py": (b"line16\n", b"LINE16\n")})
    assert series(root) == b"one.patch\ntwo.patch\nthree.patch\n"
    ok(root, "edit", "two")
    # The worktree has the series through two: one's and two's changes, not three's.
    text = (work(root) / "a.py").read_bytes()
    assert b"LINE2\n" in text and b"LINE10\n" in text and b"LINE16" not in text
    replace_in(work(root) / "a.py", b"line11\n", b"line11 # compatible\n")
    run = ok(root, "refresh")
    assert "refreshed" in run.text and "warning" not in run.err
    assert b"+line11 # compatible\n" in patch_bytes(root, "two")
    # Now a change that takes away three's context: refresh writes it and names three (exit 1).
    ok(root, "edit", "two")
    replace_in(work(root) / "a.py", b"line15\n", b"gone\n")
    old_three = patch_bytes(root, "three")
    run = run_cli(root, "refresh")
    assert run.rc == 1
    assert "three.patch no longer applies" in run.err
    assert b"+gone\n" in patch_bytes(root, "two")
    assert patch_bytes(root, "three") == old_three
    # The series and overlays tell the same story.
    result = run_cli(root, "overlays")
    assert result.rc == 2 and "three.patch" in result.err and "hunk #1" in result.err


def test_refresh_names_later_patches_through_renames_and_dropped_changes(project):
    """refresh takes only the edited patch's files through the series, and the files they are
    renamed to later: a later patch on the renamed file is named, and so is one that needed a
    change the edit took out of the patch; a patch on other files is not looked at."""
    root = project
    make_patch(root, "one", {"a.py": (b"line2\n", b"LINE2\n"), "pkg/b.py": (b"y = 2\n", b"y = 3\n")})
    ok(root, "new", "mover")
    ok(root, "edit", "--close")
    path = root / "series" / "up" / "mover.patch"
    path.write_bytes(path.read_bytes() + b"diff --git a/a.py b/moved.py\nsimilarity index 100%\n"
                     b"rename from a.py\nrename to moved.py\n")
    make_patch(root, "on-moved", {"moved.py": (b"LINE2\n", b"LINE2 # kept\n")})
    make_patch(root, "on-b", {"pkg/b.py": (b"y = 3\n", b"y = 4\n")})
    make_patch(root, "other", {"pkg/crlf.txt": (b"two\r\n", b"TWO\r\n")})
    ok(root, "edit", "one")
    replace_in(work(root) / "a.py", b"LINE2\n", b"LINE2 changed\n")
    replace_in(work(root) / "pkg/b.py", b"y = 3\n", b"y = 2\n")  # back as upstream has it
    run = run_cli(root, "refresh", "--json")
    assert run.rc == 1
    assert json.loads(run.out)["later_failing"] == ["on-moved.patch", "on-b.patch"]
    # The whole series applied says the same.
    run = run_cli(root, "overlays")
    assert run.rc == 2 and "on-moved.patch" in run.err


def _creating_patch(root: Path, name: str, path: str, data: bytes) -> None:
    """new NAME, then `patchforge add PATH` (a file the upstream does not have) filled with
    `data`, refreshed: a patch that creates PATH."""
    ok(root, "new", name)
    ok(root, "add", path)
    (work(root) / path).write_bytes(data)
    ok(root, "refresh")


def _delete(root):
    (work(root) / "a.py").unlink()


def _rename(root):
    git(work(root), "mv", "a.py", "moved.py")
    ok(root, "add", "moved.py")


def _create(path):
    def change(root):
        ok(root, "add", path)
        (work(root) / path).write_bytes(b"made by one\n")
    return change


def _undelete(root):
    # The file put back with a change of its own: put back as it was, the patch would be
    # empty, which refresh refuses.
    git(work(root), "checkout", "--", "a.py")
    path = work(root) / "a.py"
    path.write_bytes(path.read_bytes().replace(b"line2\n", b"LINE2\n"))


LATER_BROKEN_BY = {
    # the edit deletes, or renames away, the file a later patch modifies
    "deletes": (None, lambda root: make_patch(root, "two", {"a.py": (b"line10\n", b"LINE10\n")}),
                _delete),
    "renames": (None, lambda root: make_patch(root, "two", {"a.py": (b"line10\n", b"LINE10\n")}),
                _rename),
    # the edit creates the file a later patch creates
    "creates the same file": (None, lambda root: _creating_patch(root, "two", "new.py", b"two\n"),
                              _create("new.py")),
    # the edit creates a file where a later patch needs a directory, and the reverse
    "creates a file over a directory": (
        None, lambda root: _creating_patch(root, "two", "d/x.py", b"two\n"), _create("d")),
    "creates under a file": (None, lambda root: _creating_patch(root, "two", "d", b"two\n"),
                             _create("d/x.py")),
    # the edit no longer deletes the upstream file a later patch creates again
    "no longer deletes": ("delete", lambda root: _creating_patch(root, "two", "a.py", b"two\n"),
                          _undelete),
}


@pytest.mark.parametrize("case", LATER_BROKEN_BY)
def test_refresh_names_a_later_patch_broken_by_a_file_made_or_taken_away(project, case):
    """An edit can break a later patch that shares no file with it, or whose shared file is
    only created: `refresh` names it (exit 1), as the whole series applied (`overlays`, exit 2
    with the later patch's file and line) and `git apply` of the series say. Before, only a
    later patch whose hunks failed on a file the edit touched was named."""
    root = project
    first, make_two, change = LATER_BROKEN_BY[case]
    if first == "delete":
        ok(root, "new", "one", "--file", "a.py")
        (work(root) / "a.py").unlink()
        ok(root, "refresh")
    else:
        make_patch(root, "one", {"a.py": (b"line2\n", b"LINE2\n")})
    make_two(root)
    make_patch(root, "three", {"pkg/b.py": (b"y = 2\n", b"y = 5\n")})
    ok(root, "overlays")
    ok(root, "edit", "one")
    change(root)
    run = run_cli(root, "refresh", "--json")
    overlays = root / "overlays"
    if case in ("deletes", "renames"):
        # Where overlays are made, taking a.py away is refused at once (an overlay cannot
        # delete a file in the image); a project that makes none writes it and names two.
        assert run.rc == 2 and "a.py removed in" in run.err, run.err
        overlays.rename(root.parent / "overlays-aside")
        run = run_cli(root, "refresh", "--json")
    assert (run.rc, json.loads(run.out)["later_failing"]) == (1, ["two.patch"]), run.err
    before = tree_bytes(overlays) if overlays.exists() else None
    run = run_cli(root, "overlays")
    assert run.rc == 2 and "series/up/two.patch:" in run.err, run.err
    assert (tree_bytes(overlays) if overlays.exists() else None) == before
    # git apply of the series on the upstream refuses it too.
    checkout = root.parent / "checkout"
    git(root.parent, "clone", "-q", str(root.parent / "up-upstream"), str(checkout))
    git(checkout, "apply", "--index", "--allow-empty", str(root / "series/up/one.patch"))
    refused = subprocess.run(["git", "apply", "--index", str(root / "series/up/two.patch")],
                             cwd=checkout, capture_output=True, text=True)
    assert refused.returncode != 0


def test_a_series_that_deletes_then_creates_a_file_is_no_collision(project):
    """A patch that creates a file an earlier patch deleted (as `git apply` of the series takes
    it) is not refused as a collision with the upstream's file."""
    root = project
    ok(root, "new", "one", "--file", "a.py")
    (work(root) / "a.py").unlink()
    ok(root, "refresh")
    _creating_patch(root, "two", "a.py", b"two\n")
    ok(root, "overlays")
    assert (root / "overlays/up/a.py").read_bytes() == b"two\n"


def test_a_refresh_that_fails_on_a_later_patch_changes_nothing(project):
    """refresh asks which later patches the change breaks before it writes: a later patch file
    that cannot be read fails the refresh (exit 2, its file and line) with the patch, the
    series and the open edit as they were. Before, the patch was written and the worktree
    removed, then the command failed."""
    from helpers.snapshot import snapshot

    root = project
    make_patch(root, "one", {"a.py": (b"line2\n", b"LINE2\n")})
    make_patch(root, "two", {"a.py": (b"line10\n", b"LINE10\n")})
    ok(root, "edit", "one")
    replace_in(work(root) / "a.py", b"line3\n", b"LINE3\n")
    two = root / "series" / "up" / "two.patch"
    good = two.read_bytes()
    two.write_bytes(good.replace(b"@@ -7,7 ", b"@@ -7,99 "))
    before = snapshot(root, dirs=False)
    run = run_cli(root, "refresh")
    assert run.rc == 2 and "series/up/two.patch:13:" in run.err, run.err
    assert snapshot(root, dirs=False) == before
    two.write_bytes(good)
    ok(root, "refresh")
    assert b"+LINE3\n" in patch_bytes(root, "one")


def test_show_keeps_a_folded_field_under_its_value(project):
    """A Description folded over several lines (as DEP-3 writes it) is shown with its
    continuation lines under the value, not at the left margin among the description."""
    root = project
    make_patch(root, "one", {"a.py": (b"line2\n", b"LINE2\n")})
    path = root / "series" / "up" / "one.patch"
    replace_in(path, b"Description: one\n", b"Description: one\n More about one.\n")
    run = ok(root, "show", "one", "--stat")
    assert "  Description: one\n               More about one.\n" in run.out, run.out


def test_move_names_a_patch_whose_creation_the_new_order_breaks(project):
    """A patch that creates a file the upstream has, moved before the patch that deletes it,
    no longer applies (git apply of the series refuses it): `move` names it, and the deletion
    after it, exit 1. Before, a creation over an existing file was not looked at."""
    root = project
    ok(root, "new", "drop-a", "--file", "a.py")
    (work(root) / "a.py").unlink()
    ok(root, "refresh")
    _creating_patch(root, "new-a", "a.py", b"new\n")
    run = run_cli(root, "move", "new-a", "--first")
    assert run.rc == 1 and "new-a.patch" in run.err and "drop-a.patch" in run.err, run.err
    assert series(root) == b"new-a.patch\ndrop-a.patch\n"
    run = run_cli(root, "overlays")
    assert run.rc == 2 and "series/up/new-a.patch:" in run.err, run.err


def test_a_move_that_fails_on_a_patch_file_changes_nothing(project):
    """`move` reads the series it checks before it writes the new order: a patch file that
    cannot be read fails it (exit 2, its file and line) with the series as it was."""
    root = project
    make_patch(root, "one", {"a.py": (b"line2\n", b"LINE2\n")})
    make_patch(root, "two", {"a.py": (b"line10\n", b"LINE10\n")})
    replace_in(root / "series/up/two.patch", b"@@ -7,7 ", b"@@ -7,99 ")
    run = run_cli(root, "move", "two", "--first")
    assert run.rc == 2 and "series/up/two.patch:13:" in run.err, run.err
    assert series(root) == b"one.patch\ntwo.patch\n"


def test_edit_refuses_to_drop_unrefreshed_changes(project):
    root = project
    make_patch(root, "one", {"a.py": (b"line2\n", b"LINE2\n")})
    make_patch(root, "two", {"a.py": (b"line10\n", b"LINE10\n")})
    ok(root, "edit", "two")
    replace_in(work(root) / "a.py", b"line12\n", b"not refreshed\n")
    run = run_cli(root, "edit", "one")
    assert run.rc == 2 and "not refreshed" in run.err
    assert b"not refreshed" in (work(root) / "a.py").read_bytes()


def test_a_new_file_the_users_global_ignore_matches_is_named_not_dropped(project):
    """git reads ~/.config/git/ignore (its default core.excludesFile) whatever configuration it
    is given: a file made in the worktree under a `build/` the user ignores everywhere was
    invisible, and refresh closed the worktree over it, the file gone without a word."""
    root = project
    make_patch(root, "one", {"a.py": (b"line2\n", b"LINE2\n")})
    ignore = Path(os.environ["XDG_CONFIG_HOME"]) / "git" / "ignore"
    ignore.parent.mkdir(parents=True, exist_ok=True)
    ignore.write_bytes(b"build/\n*.local\n")
    ok(root, "edit", "one")
    (work(root) / "build").mkdir()
    (work(root) / "build" / "kernel.py").write_bytes(b"def kernel(): pass\n")
    run = run_cli(root, "refresh")
    assert run.rc == 2 and "not part of the patch: build/kernel.py" in run.err, run.text
    assert (work(root) / "build" / "kernel.py").read_bytes() == b"def kernel(): pass\n"
    # Editors' and Python's own leftovers stay out of the fix, as before.
    (work(root) / "build" / "kernel.py").unlink()
    _leftovers_stay_out_of_the_fix(root)


def test_a_new_file_a_gitignore_in_the_worktree_matches_is_named_not_dropped(project):
    """git reads every `.gitignore` in a worktree: one the patch itself carries there hid a new
    file under its rules (`build/`, `*.local`), and refresh closed the worktree over it, the
    file gone without a word. It is named now, as any file not part of the patch is, and
    `add` takes it (as `git add -f` would)."""
    root = project
    ok(root, "new", "one", "--file", "a.py")
    replace_in(work(root) / "a.py", b"line2\n", b"LINE2\n")
    (work(root) / ".gitignore").write_bytes(b"build/\n*.local\n")
    ok(root, "add", ".gitignore")
    assert "refreshed" in ok(root, "refresh").text
    assert b"+build/" in patch_bytes(root, "one")
    ok(root, "edit", "one")
    (work(root) / "build").mkdir()
    (work(root) / "build" / "kernel.py").write_bytes(b"def kernel(): pass\n")
    (work(root) / "notes.local").write_bytes(b"hours of work\n")
    run = run_cli(root, "refresh")
    assert run.rc == 2 and "not part of the patch: build/kernel.py, notes.local" in run.err, \
        run.text
    assert run_cli(root, "edit", "--close").rc == 2
    assert (work(root) / "build" / "kernel.py").read_bytes() == b"def kernel(): pass\n"
    # Named by `add`, the file joins the patch whatever the .gitignore says.
    (work(root) / "notes.local").unlink()
    ok(root, "add", "build/kernel.py")
    assert "refreshed" in ok(root, "refresh").text
    assert b"+++ b/build/kernel.py" in patch_bytes(root, "one")
    # A .gitignore made in the worktree that hides itself is named too.
    ok(root, "edit", "one")
    (work(root) / "gen").mkdir()
    (work(root) / "gen" / ".gitignore").write_bytes(b"*\n")
    run = run_cli(root, "refresh")
    assert run.rc == 2 and "not part of the patch: gen/.gitignore" in run.err, run.text
    # Python's and editors' leftovers stay out of the fix, as before.
    (work(root) / "gen" / ".gitignore").unlink()
    _leftovers_stay_out_of_the_fix(root)


def _leftovers_stay_out_of_the_fix(root):
    """Python's bytecode and an editor's backup made in the open edit: refresh finds the
    patch unchanged (they are never part of a fix)."""
    (work(root) / "__pycache__").mkdir()
    (work(root) / "__pycache__" / "a.cpython-311.pyc").write_bytes(b"\0")
    (work(root) / "a.py~").write_bytes(b"backup\n")
    assert "unchanged" in ok(root, "refresh").text


def test_delete_keeps_the_file_aside(project):
    root = project
    one = make_patch(root, "one", {"a.py": (b"line2\n", b"LINE2\n")})
    make_patch(root, "two", {"a.py": (b"line10\n", b"LINE10\n")})
    run = ok(root, "delete", "one")
    assert "deleted/one.patch" in run.text
    assert series(root) == b"two.patch\n"
    assert not (root / "series/up/one.patch").exists()
    assert (root / "series/up/deleted/one.patch").read_bytes() == one
    assert [p["name"] for p in json.loads(ok(root, "list", "--json").out)["patches"]] == \
        ["two.patch"]
    again = run_cli(root, "delete", "one")  # says where it is kept, not that it is missing
    assert again.rc == 2 and "up/one.patch is not in the series: `patchforge delete` set it " \
        "aside (series/up/deleted/one.patch)" in again.err, again.err


def test_rename_keeps_comments_and_bytes(project):
    root = project
    one = make_patch(root, "one", {"a.py": (b"line2\n", b"LINE2\n")})
    make_patch(root, "two", {"a.py": (b"line10\n", b"LINE10\n")})
    (root / "series/up/series").write_bytes(b"# our fixes\none.patch  # first\n\ntwo.patch\n")
    ok(root, "rename", "one", "first-fix")
    assert series(root) == b"# our fixes\nfirst-fix.patch  # first\n\ntwo.patch\n"
    assert patch_bytes(root, "first-fix") == one
    assert not (root / "series/up/one.patch").exists()
    clash = run_cli(root, "rename", "first-fix", "two")
    assert clash.rc == 2 and "already exists" in clash.err
    # The patch being edited (two) can be renamed and refreshed under its new name.
    ok(root, "edit", "two")
    ok(root, "rename", "two", "second")
    replace_in(work(root) / "a.py", b"line11\n", b"LINE11\n")
    assert "second.patch: refreshed" in ok(root, "refresh").text


def test_move_after_and_first_and_failing_orders(project):
    root = project
    make_patch(root, "one", {"a.py": (b"line2\n", b"LINE2\n")})
    make_patch(root, "two", {"a.py": (b"line10\n", b"LINE10\n")})
    make_patch(root, "three", {"pkg/b.py": (b"y = 2\n", b"y = 3\n")})
    ok(root, "move", "three", "--first")
    assert series(root) == b"three.patch\none.patch\ntwo.patch\n"
    ok(root, "move", "three", "--after", "one")
    assert series(root) == b"one.patch\nthree.patch\ntwo.patch\n"
    # four builds on one's change: before one it does not apply, and move says so (exit 1).
    make_patch(root, "four", {"a.py": (b"LINE2\n", b"LINE2 again\n")})
    run = run_cli(root, "move", "four", "--first")
    assert run.rc == 1 and "four.patch does not apply in the new order" in run.err
    assert series(root) == b"four.patch\none.patch\nthree.patch\ntwo.patch\n"
    for bad in (["--after", "nope"], ["--after", "four"], [], ["--first", "--after", "two"]):
        assert run_cli(root, "move", "four", *bad).rc == 2
    assert series(root) == b"four.patch\none.patch\nthree.patch\ntwo.patch\n"


def test_a_move_names_as_its_doing_only_the_patches_it_breaks(project):
    """four builds on one's change and was moved above it: it does not apply. Moving seven,
    whose change is elsewhere, said `four.patch does not apply in the new order`, as if the
    move had broken it (`delete` names only what it breaks). Now the move says four still does
    not apply, as before the move, and exits 1 all the same: the series it leaves is one
    `overlays` refuses, which a silent exit 0 would hide."""
    root = project
    make_patch(root, "one", {"a.py": (b"line2\n", b"LINE2\n")})
    make_patch(root, "four", {"a.py": (b"LINE2\n", b"LINE2 again\n")})
    assert run_cli(root, "move", "four", "--first").rc == 1  # four fails from here on
    make_patch(root, "seven", {"pkg/b.py": (b"y = 2\n", b"y = 3\n")})
    run = run_cli(root, "move", "seven", "--first")
    assert run.rc == 1, run.text
    assert "does not apply in the new order" not in run.err, run.err
    assert "warning: four.patch still does not apply, as before the move (`patchforge edit " \
        "four`" in run.err, run.err
    assert series(root) == b"seven.patch\nfour.patch\none.patch\n"
    # A move that breaks one and leaves the other broken says each as it is.
    ok(root, "move", "four", "--after", "one")
    make_patch(root, "nine", {"a.py": (b"LINE2 again\n", b"LINE2 thrice\n")})
    run = run_cli(root, "move", "nine", "--first")
    assert run.rc == 1 and "nine.patch does not apply in the new order" in run.err, run.err
    assert "still does not apply" not in run.err, run.err
    run = run_cli(root, "move", "four", "--first")
    assert run.rc == 1, run.text
    assert "four.patch does not apply in the new order" in run.err, run.err
    assert "nine.patch still does not apply, as before the move" in run.err, run.err
    run = run_cli(root, "move", "four", "--after", "one")
    assert run.rc == 1 and "nine.patch still does not apply" in run.err, run.text
    assert "four" not in run.err, run.err


def test_a_move_or_delete_leaving_a_patch_to_fuzz_says_so(project):
    """`move five --first`, above the patch whose line is five's context, said `moved five`,
    exit 0, and `delete one` said nothing of five either: five then applied only with fuzz,
    which `status` reports as needing attention, `lint` as an error and `overlays` warns of
    (GNU patch takes the hunk at a place its context no longer proves). Both now name it and
    exit 1, as for a patch that no longer applies."""
    root = project
    make_patch(root, "one", {"a.py": (b"line2\n", b"LINE2\n")})
    # five's change is two lines below one's: one's LINE2 is part of five's context.
    make_patch(root, "five", {"a.py": (b"line4\n", b"LINE4\n")})
    assert ok(root, "status").rc == 0
    run = run_cli(root, "move", "five", "--first")
    assert run.rc == 1, run.text
    assert "five.patch applies only with fuzz in the new order" in run.err, run.err
    assert series(root) == b"five.patch\none.patch\n"  # moved all the same
    assert run_cli(root, "status", "--strict").rc == 1  # what the warning said (status: a
    assert run_cli(root, "status").rc == 0  # warning, an error under --strict)
    ok(root, "move", "five", "--after", "one")  # back: exact again, nothing said
    run = run_cli(root, "delete", "one")
    assert run.rc == 1, run.text
    assert "five.patch applies only with fuzz without one" in run.err, run.err
    assert "`patchforge edit five`" in run.err
    assert series(root) == b"five.patch\n"  # deleted all the same
    assert run_cli(root, "status", "--strict").rc == 1


def test_a_move_names_no_patch_that_needed_fuzz_before_it(project):
    """five needs fuzz (moved above one, whose line is its context); moving seven, whose change
    is elsewhere, said `five.patch applies only with fuzz in the new order`, exit 1, as if the
    move had done it. A move names only the patches it leaves needing fuzz, as delete does."""
    root = project
    make_patch(root, "one", {"a.py": (b"line2\n", b"LINE2\n")})
    make_patch(root, "five", {"a.py": (b"line4\n", b"LINE4\n")})
    assert run_cli(root, "move", "five", "--first").rc == 1  # five needs fuzz from here on
    make_patch(root, "seven", {"a.py": (b"line9\n", b"LINE9\n")})
    run = run_cli(root, "move", "seven", "--after", "five")
    assert run.rc == 0, run.text
    assert "fuzz" not in run.err, run.err
    assert series(root) == b"five.patch\nseven.patch\none.patch\n"
    assert run_cli(root, "status").rc == 0  # five still needs fuzz: a warning,
    assert run_cli(root, "status", "--strict").rc == 1  # an error under --strict
    run = run_cli(root, "move", "one", "--first")  # five exact again: nothing to name
    assert run.rc == 0 and "fuzz" not in run.err, run.text


def test_each_change_of_the_series_says_the_overlays_lag_until_regenerated(project):
    """refresh, rename, move and delete change the series without regenerating overlays/
    (its manifest names each patch of a file, in order, with its bytes), and said nothing of
    it: the next commit failed CI's `overlays --check`. Each says so, in a project whose
    overlays are generated; here each change reaches the overlays, and `overlays --check`
    fails until `patchforge overlays` runs."""
    root = project
    make_patch(root, "one", {"a.py": (b"line2\n", b"LINE2\n")})
    make_patch(root, "two", {"a.py": (b"line10\n", b"LINE10\n")})
    ok(root, "overlays")
    note = "note: the series changed and overlays/ was not regenerated: `patchforge overlays`"
    changes = [("edit", "one"), None, ("rename", "one", "first"), ("move", "two", "--first"),
               ("delete", "first")]
    for args in changes:
        if args is None:  # the edit opened above: change the file, then refresh
            replace_in(work(root) / "a.py", b"line3\n", b"LINE3\n")
            args = ("refresh",)
        run = ok(root, *args)
        if args[0] == "edit":
            assert note not in run.err
            continue
        assert note in run.err, (args, run.err)
        assert run_cli(root, "overlays", "--check").rc == 1, args
        ok(root, "overlays")
        assert run_cli(root, "overlays", "--check").rc == 0
    # An unchanged refresh leaves the overlays as they are, and says nothing of them. (two's
    # index line still names the file with one's change, which left the series: the first
    # refresh writes it again on its base, then one more is unchanged.)
    ok(root, "edit", "two")
    ok(root, "refresh")
    ok(root, "overlays")
    ok(root, "edit", "two")
    assert note not in ok(root, "refresh").err


def test_a_project_without_generated_overlays_gets_no_note_of_them(project):
    root = project
    run = ok(root, "new", "one", "--file", "a.py")
    replace_in(work(root) / "a.py", b"line2\n", b"LINE2\n")
    assert "overlays" not in ok(root, "refresh").err + run.err


def test_list_and_show_json(project):
    root = project
    config = root / "pyproject.toml"  # one profile declared: the fix is for it only
    config.write_text(config.read_text().replace("[tool.patchforge.profiles]\n",
                                                 '[tool.patchforge.profiles]\ngfx942 = "MI300X"\n'))
    make_patch(root, "one", {"a.py": (b"line2\n", b"LINE2\nextra\n")},
               extra=["--profiles", "gfx942", "-m", "First fix"])
    listed = json.loads(ok(root, "list", "--json").out)
    assert listed == {"schema_version": 1, "patches": [{
        "upstream": "up", "name": "one.patch", "subject": "First fix", "status": "Pending",
        "profiles": ["gfx942"], "files": ["a.py"], "added": 2, "removed": 1}]}
    assert schema_errors(listed, "list") == []
    shown = json.loads(ok(root, "show", "one", "--json").out)
    assert shown["name"] == "one.patch" and shown["upstream"] == "up"
    assert shown["path"] == "series/up/one.patch"
    assert [f["name"] for f in shown["header"]][:3] == ["Description", "Author", "Upstream-Status"]
    assert shown["files"] == [{"path": "a.py", "added": 2, "removed": 1}]
    assert schema_errors(shown, "show") == []
    assert ok(root, "show", "up/one", "--raw").stdout == patch_bytes(root, "one")
    text = ok(root, "list").text
    assert "up/one.patch" in text and "gfx942" in text and "+2/-1" in text
    assert run_cli(root, "show", "nope").rc == 2


def test_a_kill_during_refresh_leaves_the_old_patch(project):
    root = project
    old = make_patch(root, "one", {"a.py": (b"line2\n", b"LINE2\n")})
    ok(root, "edit", "one")
    replace_in(work(root) / "a.py", b"line5\n", b"LINE5\n")
    env = dict(os.environ, PATCHFORGE_FAULT="rename:1")
    proc = subprocess.run([sys.executable, "-m", "patchforge", "--root", str(root), "refresh"],
                          env=env, capture_output=True, cwd=REPO_ROOT)
    assert proc.returncode == 137
    assert patch_bytes(root, "one") == old
    assert series(root) == b"one.patch\n"
    # The next refresh (after the dead process's lock is taken over) writes the change.
    ok(root, "refresh")
    assert b"+LINE5\n" in patch_bytes(root, "one")


def test_malformed_series_file_names_file_and_line(project):
    root = project
    make_patch(root, "one", {"a.py": (b"line2\n", b"LINE2\n")})
    for content, line, message in ((b"# c\none.patch\none.patch\n", 3, "listed twice"),
                                   (b"one.patch -p0\n", 1, "-p0"),
                                   (b"\n../evil.patch\n", 2, "bad patch name")):
        (root / "series/up/series").write_bytes(content)
        before = tree_bytes(root / "series")
        for command in (["list"], ["overlays"], ["new", "x", "--no-edit"]):
            run = run_cli(root, *command)
            assert run.rc == 2, (command, run.err)
            assert f"series/up/series:{line}:" in run.err and message in run.err
        assert tree_bytes(root / "series") == before
        assert not (root / "overlays").exists()


def test_malformed_patch_names_file_and_line(project):
    root = project
    make_patch(root, "one", {"a.py": (b"line2\n", b"LINE2\n")})
    good = patch_bytes(root, "one")
    bad = good.replace(b"@@ -1,5 +1,5 @@", b"@@ -1,5 +1,9 @@")
    assert bad != good
    (root / "series/up/one.patch").write_bytes(bad)
    line = bad[:bad.index(b"@@ -1,5")].count(b"\n") + 1
    for command in (["list"], ["show", "one"], ["overlays"]):
        run = run_cli(root, *command)
        assert run.rc == 2, (command, run.err)
        assert "series/up/one.patch:" in run.err
        named = int(run.err.split("one.patch:")[1].split(":")[0])
        assert line <= named <= line + 9
    assert not (root / "overlays").exists()
    evil = good.replace(b"a/a.py", b"a/../a.py").replace(b"b/a.py", b"b/../a.py")
    (root / "series/up/one.patch").write_bytes(evil)
    run = run_cli(root, "list")
    assert run.rc == 2 and "one.patch:" in run.err


@pytest.mark.parametrize("value", ["2024-13-45", "2024-01-01\nBcc: someone", "yesterday"])
def test_a_patchforge_date_that_is_not_a_date_is_refused_before_anything_is_written(
        project, monkeypatch, value):
    """PATCHFORGE_DATE goes into Last-Update as it is: before, `new` wrote `2024-13-45`, or a
    second header line from a value with a newline, into the patch file. Now it is refused,
    exit 2, naming the variable, and nothing is written."""
    monkeypatch.setenv("PATCHFORGE_DATE", value)
    before = tree_bytes(project / "series")
    run = run_cli(project, "new", "fix-date")
    assert run.rc == 2 and "PATCHFORGE_DATE=" in run.err and "is not a date" in run.err, run.err
    assert tree_bytes(project / "series") == before


def test_delete_says_which_later_patches_no_longer_apply(project):
    """Deleting a fix that a later one is built on (the later one changes a line it made)
    said "removed" with exit 0, and the next overlays failed on the later patch. Like `move`,
    delete now names each patch that applied before and no longer does (exit 1); the delete
    itself is done, the fix kept under deleted/. A patch that did not apply before is not
    blamed on the delete."""
    root = project
    make_patch(root, "base-fix", {"a.py": (b"line3\n", b"line3 fixed\n")})
    make_patch(root, "built-on-it", {"a.py": (b"line3 fixed\n", b"line3 fixed twice\n")})
    make_patch(root, "apart", {"pkg/b.py": (b"y = 2\n", b"y = 20\n")})
    run = run_cli(root, "delete", "base-fix")
    assert run.rc == 1, run.text
    assert "warning: built-on-it.patch no longer applies without base-fix" in run.err
    assert "apart" not in run.err
    assert series(root) == b"built-on-it.patch\napart.patch\n"
    assert (root / "series/up/deleted/base-fix.patch").exists()
    # Already broken before: the delete of another patch says nothing of it.
    run = run_cli(root, "delete", "apart")
    assert run.rc == 0 and "warning" not in run.err, run.text


def test_a_directory_of_the_upstream_is_never_taken_for_a_new_file(tmp_path):
    """`new NAME --file pkg` (or `add pkg`), pkg a directory of the upstream: an empty file
    `pkg` was tracked as new, `refresh` wrote a patch creating it, and every overlay then
    refused the series (`status` still said it applied). A path under a file (`a.py/x`)
    failed with "File exists". Both are refused, exit 2, with nothing written."""
    root, _ = git_project(tmp_path)
    before = tree_bytes(root / "series")
    for path, message in (("pkg", "pkg is a directory in the upstream, not a file"),
                          ("a.py/x", "a.py/x: a.py is a file in the upstream")):
        run = run_cli(root, "new", "fix", "--file", path)
        assert run.rc == 2 and message in run.err, (path, run.err)
    assert tree_bytes(root / "series") == before
    ok(root, "new", "fix", "--file", "pkg/b.py")
    run = run_cli(root, "add", "pkg")
    assert run.rc == 2 and "pkg is a directory in the upstream" in run.err, run.err
    ok(root, "refresh")
    assert b"diff --git" not in (root / "series/up/fix.patch").read_bytes()


def test_each_refusal_and_refresh_names_the_next_command(project):
    """A newcomer from quilt or `git rebase` is told what to run next: after `refresh` (which,
    unlike `quilt refresh`, ends the edit), when a rebase meets an edit with changes not
    refreshed, and on `rebase --continue` with no rebase stopped."""
    root = project
    ok(root, "new", "one", "--file", "a.py")
    replace_in(work(root) / "a.py", b"line2\n", b"LINE2\n")
    refreshed = ok(root, "refresh").text
    assert "`patchforge edit one` opens it again" in refreshed
    ok(root, "edit", "one")  # ... and it does
    replace_in(work(root) / "a.py", b"line3\n", b"LINE3\n")
    dry = ok(root, "rebase", "--to", "up=main", "--dry-run")  # says the real run is refused
    assert "note: up/one.patch is being edited and has changes not refreshed" in dry.err
    refused = run_cli(root, "rebase", "--to", "up=main")
    assert refused.rc == 2 and "`patchforge edit --close --discard`" in refused.err
    ok(root, "edit", "--close", "--discard")
    assert b"LINE3" not in patch_bytes(root, "one")
    assert "note:" not in ok(root, "rebase", "--to", "up=main", "--dry-run").err
    ok(root, "rebase", "--to", "up=main")
    nothing = run_cli(root, "rebase", "--continue")
    assert nothing.rc == 2 and "no rebase in progress" in nothing.err
    assert "`patchforge rebase --to UPSTREAM=SPEC`" in nothing.err


def test_a_hand_edited_hunk_with_stale_counts_names_its_at_at_line(project):
    """A line added to a patch's hunk by hand, its @@ counts left as they were: the error names
    the line where the body and counts part, and the hint the @@ line to correct."""
    root = project
    make_patch(root, "one", {"a.py": (b"line2\n", b"LINE2\n")})
    path = root / "series/up/one.patch"
    lines = path.read_bytes().split(b"\n")
    at = next(k for k, line in enumerate(lines) if line.startswith(b"@@ "))
    added = next(k for k, line in enumerate(lines) if line == b"+LINE2")
    lines.insert(added + 1, b"+# added by hand")
    path.write_bytes(b"\n".join(lines))
    run = run_cli(root, "status")
    assert run.rc == 2 and "hunk body does not match its @@ counts" in run.err
    assert "series/up/one.patch:" in run.err
    assert f"hint: the hunk's @@ line is line {at + 1}: after a hand edit" in run.err


def test_new_without_a_file_says_the_worktree_is_empty_and_how_files_come(project):
    """`new NAME` alone opens an empty worktree: its message said "edit files in DIR (`add`
    brings more)", and the newcomer's first edit met no file there. It says the worktree
    holds none yet and that `add PATH` brings the upstream's file in; `add` then does."""
    root = project
    run = ok(root, "new", "empty-start", "-m", "A fix begun without --file")
    assert f"{work(root)} holds no file yet" in run.text
    assert "`patchforge add PATH` brings in the upstream file" in run.text
    assert "brings more" not in run.text
    assert [p for p in work(root).rglob("*") if ".git" not in p.parts] == []
    ok(root, "add", "a.py")
    assert (work(root) / "a.py").read_bytes() == UPSTREAM_FILES["a.py"]
    # With --file the worktree holds it, and the message says so as before.
    ok(root, "edit", "--close")
    with_file = ok(root, "new", "with-file", "--file", "a.py")
    assert f"edit files in {work(root)}" in with_file.text and "no file yet" not in with_file.text


def test_status_against_a_new_target_names_the_rebase_that_moves_the_series(project, tmp_path):
    """`status --against` ended with "1 patch(es) need attention" and no word of what to do
    about it; the command that says what a move does, and the move, are named, with the
    SPECs as given. At the pin (nothing to move) no such hint is printed."""
    root = project
    ok(root, "new", "one", "--file", "a.py")
    replace_in(work(root) / "a.py", b"line2\n", b"LINE2\n")
    ok(root, "refresh")
    assert "rebase --to" not in ok(root, "status").err
    upstream = tmp_path / "up-upstream"
    replace_in(upstream / "a.py", b"line2\n", b"LINE2\n")  # the fix lands upstream
    git(upstream, "commit", "-qam", "land the fix")
    run = run_cli(root, "status", "--against", "up=main")
    assert run.rc == 1 and "upstreamed" in run.out, run.text
    assert "hint: `patchforge rebase --to up=main --dry-run` shows what a rebase" in run.err
    ok(root, "rebase", "--to", "up=main", "--dry-run")  # the command named runs as given


def test_delete_of_a_name_two_series_hold_asks_which_one(tmp_path):
    """`delete fix` with up/fix and two/fix listed answered "no patch named 'fix' in the series
    or under skipped/", as if the fix were gone; every other command says it is in several
    series and to name UPSTREAM/fix. delete says so too, and deletes nothing."""
    from helpers.project import Stack
    from helpers.upstream import Upstream

    stack = Stack(tmp_path / "stack")
    for name in ("up", "two"):
        stack.add_upstream(name, Upstream(tmp_path / f"{name}-src", {"a.py": b"a = 1\n"}))
        stack.add_patch(name, "fix", {"a.py": b"a = 2\n"})
    before = tree_bytes(stack.root / "series")
    run = run_cli(stack.root, "delete", "fix")
    assert run.rc == 2 and "is in several series (up, two); say UPSTREAM/fix" in run.err, run.err
    assert tree_bytes(stack.root / "series") == before
    ok(stack.root, "delete", "two/fix")
    assert stack.series("two") == [] and stack.series("up") == ["fix.patch"]


def test_move_after_a_patch_of_another_series_says_where_that_one_is(tmp_path):
    """`move fix --after other` where `other` is another upstream's patch said only that the
    series has no such patch, as if it were mistyped or gone."""
    from helpers.project import Stack
    from helpers.upstream import Upstream

    stack = Stack(tmp_path / "stack")
    for name, fixes in (("up", ("fix", "more")), ("two", ("other",))):
        stack.add_upstream(name, Upstream(tmp_path / f"{name}-src", {"a.py": b"a = 1\n",
                                                                      "b.py": b"b = 1\n"}))
        for fix, path in zip(fixes, ("a.py", "b.py")):
            stack.add_patch(name, fix, {path: b"changed = 1\n"})
    before = tree_bytes(stack.root / "series")
    for args in (("move", "fix", "--after", "other"),
                 ("new", "third", "--upstream", "up", "--after", "other", "--no-edit")):
        run = run_cli(stack.root, *args)
        assert run.rc == 2, run.text
        assert "no patch named other.patch in the up series (it is in the two series" in run.err
    assert tree_bytes(stack.root / "series") == before


def test_names_as_list_prints_them_are_taken_where_a_patch_is_named(tmp_path):
    """`list` prints UPSTREAM/NAME.patch, and every command that finds a patch takes it so;
    `rename OLD up/NEW`, `new up/NAME` and `--after up/X` (of new and move) refused it as a
    patch name that cannot hold '/'. They take it now, and refuse, nothing written, a prefix
    that is no configured upstream or another series than the patch's."""
    from helpers.project import Stack
    from helpers.upstream import Upstream

    stack = Stack(tmp_path / "stack")
    for name in ("up", "two"):
        stack.add_upstream(name, Upstream(tmp_path / f"{name}-src", {"a.py": b"a = 1\n"}))
    stack.add_patch("up", "fix", {"a.py": b"a = 2\n"})
    root = stack.root
    listed = ok(root, "list").out
    assert "up/fix.patch" in listed
    ok(root, "rename", "up/fix.patch", "up/renamed.patch")
    ok(root, "rename", "up/renamed", "up/fix")
    ok(root, "new", "up/second", "--no-edit")
    ok(root, "new", "third.patch", "--upstream", "up", "--after", "up/fix.patch", "--no-edit")
    ok(root, "move", "second", "--after", "up/fix")
    assert stack.series("up") == ["fix.patch", "second.patch", "third.patch"]
    before = tree_bytes(root)
    for args, says in [
            (["rename", "fix", "two/fix"], "a patch stays in its upstream's series"),
            (["rename", "fix", "nowhere/fix"], "'nowhere' is no configured upstream (up, two)"),
            (["new", "two/x", "--upstream", "up", "--no-edit"], "names the two series"),
            (["new", "nowhere/x", "--no-edit"], "'nowhere' is no configured upstream"),
            (["move", "third", "--after", "two/fix"], "names the two series"),
            (["new", "y", "--upstream", "up", "--after", "two/fix", "--no-edit"],
             "names the two series")]:
        run = run_cli(root, *args)
        assert run.rc == 2 and says in run.err, (args, run.err)
        assert tree_bytes(root) == before, args


def test_a_fix_whose_profiles_list_is_empty_is_never_taken_for_every_profile(tmp_path):
    """`new --profiles "$UNSET"` made a fix for every profile, and so did a `Profiles:` line
    whose names were lost: overlays put a one-profile fix into every profile's tree. Both are
    refused (exit 2), naming the option or the file and line; nothing is written."""
    root, _ = git_project(tmp_path, profiles={"gfx942": "MI300X", "gfx950": "MI355X"})
    make_patch(root, "fix", {"a.py": (b"line2\n", b"LINE2\n")}, extra=["--profiles", "gfx942"])
    before = tree_bytes(root)
    for value in ("", " , "):
        run = run_cli(root, "new", "other", "--profiles", value, "--no-edit")
        assert run.rc == 2 and "names no profile" in run.err, run.err
    assert tree_bytes(root) == before
    path = root / "series/up/fix.patch"
    replace_in(path, b"Profiles: gfx942\n", b"Profiles:\n")
    line = path.read_bytes().split(b"\n").index(b"Profiles:") + 1
    for command in (["overlays"], ["status"], ["list"]):
        run = run_cli(root, *command)
        assert run.rc == 2 and f"fix.patch:{line}: 'Profiles:' lists no profile" in run.err, \
            (command, run.text)
    assert not (root / "overlays").exists()
    run = run_cli(root, "lint", "--no-forge")  # a finding of its own
    assert run.rc == 1 and f"fix.patch:{line}: 'Profiles:' lists no profile" in run.out


def test_a_deleted_fix_is_told_its_way_back(tmp_path):
    """`delete` by mistake, then `bring-back NAME`: refused, "kept in series/up/deleted/",
    and the hint said bring-back takes skipped fixes only: a dead end, though a fix moved
    into skipped/ comes back as any skipped fix. The hint now says so, and following it
    word for word puts the fix back at the end of its series, its return recorded."""
    import re
    import shlex

    from helpers.project import Stack
    from helpers.upstream import Upstream

    stack = Stack(tmp_path / "stack")
    stack.add_upstream("up", Upstream(tmp_path / "up-src", {"a.py": b"a = 1\n", "b.py": b"b\n"}))
    stack.add_patch("up", "fix", {"a.py": b"a = 2\n"})
    stack.add_patch("up", "other", {"b.py": b"b2\n"})
    ok(stack.root, "ledger")
    patch = (stack.root / "series/up/fix.patch").read_bytes()
    ok(stack.root, "delete", "fix")
    run = run_cli(stack.root, "bring-back", "fix")
    assert run.rc == 2 and "up/fix.patch is kept in series/up/deleted/" in run.err, run.text
    hint = run.err.split("hint: ", 1)[1]
    commands = re.findall(r"`([^`]+)`", hint)
    assert commands[1] == "mkdir -p series/up/skipped && mv series/up/deleted/fix.patch " \
        "series/up/skipped/fix.patch" and commands[-1] == "patchforge bring-back up/fix", hint
    subprocess.run(["bash", "-c", commands[1]], cwd=stack.root, check=True)
    ok(stack.root, *shlex.split(commands[-1])[1:])
    assert (stack.root / "series/up/series").read_text() == "other.patch\nfix.patch\n"
    assert (stack.root / "series/up/fix.patch").read_bytes() == patch
    events = [json.loads(line)["event"] for line in
              (stack.root / "series/history.jsonl").read_text().splitlines()]
    assert events[-2:] == ["deleted", "brought-back"], events
    ok(stack.root, "ledger", "--check")


def test_a_fix_kept_aside_is_said_to_be_kept_not_missing(tmp_path):
    """`show`, `delete` and `bring-back` of a fix in upstreamed/ or deleted/ answered "no
    patch named ..." (or "no skipped fix named ..."), which reads as a fix lost; each now says
    where it is kept. `show two/fix` for up's fix names up/fix."""
    from helpers.project import Stack
    from helpers.upstream import Upstream

    stack = Stack(tmp_path / "stack")
    stack.add_upstream("up", Upstream(tmp_path / "up-src", {"a.py": b"a = 1\n", "b.py": b"b\n"}))
    stack.add_upstream("two", Upstream(tmp_path / "two-src", {"c.py": b"c = 1\n"}))
    stack.add_patch("up", "fix", {"a.py": b"a = 2\n"})
    stack.add_patch("up", "gone", {"b.py": b"b2\n"})
    ok(stack.root, "delete", "gone")
    landed = stack.root / "series" / "up" / "upstreamed"
    landed.mkdir()
    (landed / "old.patch").write_bytes((stack.root / "series" / "up" / "fix.patch").read_bytes())
    before = tree_bytes(stack.root / "series")
    for args, where in ((("show", "gone"), "up/gone.patch is not in the series: `patchforge "
                         "delete` set it aside (series/up/deleted/gone.patch)"),
                        (("delete", "old"), "up/old.patch is not in the series: it landed "
                         "upstream (series/up/upstreamed/old.patch)"),
                        (("bring-back", "gone"), "no skipped fix named 'gone': up/gone.patch is "
                         "kept in series/up/deleted/"),
                        (("bring-back", "fix"), "no skipped fix named 'fix': up/fix.patch is in "
                         "the series")):
        run = run_cli(stack.root, *args)
        assert run.rc == 2 and where in run.err, (args, run.text)
    run = run_cli(stack.root, "show", "two/fix")
    assert run.rc == 2 and "did you mean up/fix?" in run.err, run.text
    assert tree_bytes(stack.root / "series") == before
    # Deleted twice under one name: the later copy is fix.2.patch, and both are named.
    stack.add_patch("up", "gone", {"b.py": b"b3\n"})
    ok(stack.root, "delete", "gone")
    run = run_cli(stack.root, "show", "up/gone")
    assert run.rc == 2 and "gone.patch is not in the series; copies are kept aside: " \
        "series/up/deleted/gone.patch, series/up/deleted/gone.2.patch" in run.err, run.text
    # bring-back names them as show does (it named the directory, and no numbered copy).
    run = run_cli(stack.root, "bring-back", "gone")
    assert run.rc == 2 and "no skipped fix named 'gone': copies are kept aside: " \
        "series/up/deleted/gone.patch, series/up/deleted/gone.2.patch" in run.err, run.text
    # Only the numbered copy left (the first one removed by hand): it is still named.
    (stack.root / "series" / "up" / "deleted" / "gone.patch").unlink()
    run = run_cli(stack.root, "bring-back", "gone")
    assert run.rc == 2 and "no skipped fix named 'gone': up/gone.patch is kept in " \
        "series/up/deleted/ (as gone.2.patch)" in run.err, run.text


def test_bring_back_is_not_refused_over_another_upstream_not_pinned_yet(tmp_path):
    """Another upstream configured by hand (a `[upstreams.other]` table, `upstream pin` to
    come): `bring-back nosuch` answered "upstream 'other' is not pinned in upstream.lock", and
    the bring-back of up's skipped fix was refused the same way. The other upstream has no
    return to finish: the answer is of the name asked, and up's fix comes back."""
    from helpers.project import Stack
    from helpers.upstream import Upstream

    stack = Stack(tmp_path / "stack")
    stack.add_upstream("up", Upstream(tmp_path / "up-src", {"a.py": b"a = 1\n"}))
    stack.add_patch("up", "fa", {"a.py": b"a = 2\n"})
    up = stack.root / "series" / "up"
    (up / "skipped").mkdir()
    (up / "fa.patch").rename(up / "skipped" / "fa.patch")
    (up / "series").write_bytes(b"")
    other = Upstream(tmp_path / "other-src", {"c.py": b"c = 1\n"})
    with open(stack.root / "patchforge.toml", "a", encoding="utf-8") as config:
        config.write(f'\n[upstreams.other]\nkind = "git"\nurl = "{other.path}"\n'
                     'install-root = "/opt/other"\n')
    run = run_cli(stack.root, "bring-back", "nosuch")
    assert run.rc == 2 and "no skipped fix named 'nosuch'" in run.err, run.text
    assert "not pinned" not in run.err, run.text
    ok(stack.root, "bring-back", "fa")
    assert (up / "series").read_bytes() == b"fa.patch\n"
    assert not (up / "skipped" / "fa.patch").exists()


@pytest.mark.parametrize("verb,equivalent", [("push", "`patchforge edit NAME`"),
                                             ("series", "`patchforge list`"),
                                             ("float", "`patchforge move NAME --after X`")])
def test_a_quilt_or_stgit_verb_is_answered_with_its_equivalent(tmp_path, verb, equivalent):
    run = run_cli(tmp_path, verb)
    assert run.rc == 2 and f"No such command {verb!r}: " in run.err and equivalent in run.err
    assert "docs/coming-from.md" in run.err
    # Only at the top: `upstream remove` is not a patch's `delete`.
    run = run_cli(tmp_path, "upstream", "remove", "vllm")
    assert run.rc == 2 and "No such command 'remove'" in run.err and "delete" not in run.err



def test_every_quilt_and_stgit_verb_of_coming_from_is_answered(tmp_path):
    """docs/coming-from.md says quilt's and StGit's verbs typed out of habit are answered with
    what does their job, "as in the tables below"; `stg undo`, `stg reset` and `stg uncommit`
    are in its table and got "No such command" alone (`reset`: "Did you mean 'rebase'?").
    Each verb of the quilt and StGit tables that is no patchforge command is answered with
    the command its row gives."""
    import re

    import click

    from patchforge.cli.app import cli

    page = (REPO_ROOT / "docs/coming-from.md").read_text()
    commands = set(cli.list_commands(click.Context(cli)))
    verbs = {}
    for row in re.findall(r"^\| (.+?) \| (.+?) \|", page, re.M):
        for tool, verb in re.findall(r"`(quilt|stg) ([a-z][a-z-]*)", row[0]):
            if verb not in commands:
                verbs[verb] = row[1]
    assert {"push", "float", "undo", "uncommit"} <= set(verbs), verbs
    for verb, row in sorted(verbs.items()):
        run = run_cli(tmp_path, verb)
        assert run.rc == 2 and f"No such command {verb!r}: " in run.err, (verb, run.err)
        assert "docs/coming-from.md" in run.err, (verb, run.err)
        named = re.findall(r"`patchforge ([a-z-]+)", row)  # none: "edit the header directly"
        assert not named or any(f"`patchforge {word}" in run.err for word in named), \
            (verb, named, run.err)

def test_exporting_several_series_says_where_quilt_finds_each(tmp_path):
    """With two upstreams, `export --quilt DIR` writes DIR/up/ and DIR/two/, and
    `QUILT_PATCHES=DIR quilt push -a` finds no series file: the output says which to use, and
    quilt pushes the series it names."""
    import shutil

    from helpers.project import Stack
    from helpers.upstream import Upstream

    stack = Stack(tmp_path / "stack")
    stack.add_upstream("up", Upstream(tmp_path / "up-src", {"a.py": b"a = 1\n"}))
    stack.add_upstream("two", Upstream(tmp_path / "two-src", {"c.py": b"c = 1\n"}))
    stack.add_patch("up", "fix", {"a.py": b"a = 2\n"})
    stack.add_patch("two", "other", {"c.py": b"c = 2\n"})
    out = tmp_path / "q"
    # DIR given relative to where export runs; quilt reads QUILT_PATCHES from the tree it
    # patches, so the paths printed are absolute.
    exported = subprocess.run([sys.executable, "-m", "patchforge", "--root", str(stack.root),
                               "export", "--quilt", "q"], cwd=tmp_path, capture_output=True,
                              text=True, env={**os.environ, "PYTHONPATH": str(REPO_ROOT)})
    assert exported.returncode == 0, exported.stderr
    # One runnable line per upstream, each naming its own directory.
    for name in ("two", "up"):
        assert f"next: `QUILT_PATCHES={out / name} quilt push -a`" in exported.stdout, \
            exported.stdout
    if shutil.which("quilt"):
        checkout = tmp_path / "checkout"
        shutil.copytree(tmp_path / "up-src", checkout, ignore=shutil.ignore_patterns(".git"))
        pushed = subprocess.run(["quilt", "push", "-a", "-q"], cwd=checkout, capture_output=True,
                                env={**os.environ, "QUILT_PATCHES": str(out / "up")})
        assert pushed.returncode == 0, pushed.stderr
        assert (checkout / "a.py").read_bytes() == b"a = 2\n"


def test_add_refuses_a_name_no_patch_can_carry_and_refresh_names_the_worktree_file(tmp_path,
                                                                                   monkeypatch):
    """The upstream has `pkg/back\\slash.py` (git takes the name). `new --file` refused it,
    `add` took it: the change was made, and `refresh` refused it naming line 9 of an 8-line
    patch file (a line of the diff it never wrote). `add` runs the check `new --file` runs,
    before anything is written; a worktree that tracks such a file (`add` took one before it
    checked) is refused at refresh naming the worktree's file, and the hint's way works."""
    monkeypatch.setenv("PATCHFORGE_DATE", "2024-05-01")
    name = "pkg/back\\slash.py"
    root, _ = git_project(tmp_path, {**UPSTREAM_FILES, name: b"a\nb\n"})
    run = run_cli(root, "new", "fix", "--file", name)
    assert run.rc == 2 and "backslash in name" in run.err, run.text
    ok(root, "new", "fix", "--file", "a.py")
    before = snapshot(root)
    run = run_cli(root, "add", name)
    assert run.rc == 2, run.text
    assert "add: unsafe path 'pkg/back\\\\slash.py': backslash in name" in run.err, run.err
    assert "cannot be carried by a patch" in run.err, run.err
    assert snapshot(root) == before
    assert not (work(root) / name).exists()

    # A worktree that tracks it, as `add` left one before it checked names: the file joins
    # the worktree's base (its HEAD and the record of the patch's files).
    wt = work(root)
    oid = git(wt, "hash-object", "-w", "--stdin", input=b"a\nb\n").strip()
    index = wt / ".git" / "older-add-index"
    env = {**os.environ, "GIT_INDEX_FILE": str(index), "GIT_AUTHOR_NAME": "T",
           "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "T",
           "GIT_COMMITTER_EMAIL": "t@example.com"}
    for args in (["read-tree", "HEAD"],
                 ["update-index", "--add", "--cacheinfo", f"100644,{oid},{name}"]):
        subprocess.run(["git", *args], cwd=wt, env=env, check=True)
    tree = subprocess.run(["git", "write-tree"], cwd=wt, env=env, check=True,
                          capture_output=True, text=True).stdout.strip()
    index.unlink()
    commit = subprocess.run(["git", "commit-tree", tree, "-p", "HEAD", "-m", "base"], cwd=wt,
                            env=env, check=True, capture_output=True, text=True).stdout.strip()
    git(wt, "update-ref", "HEAD", commit)
    git(wt, "update-index", "--add", "--cacheinfo", f"100644,{oid},{name}")
    record_path = wt / ".git" / "patchforge.json"
    record = json.loads(record_path.read_text())
    record["base"], record["files"] = commit, sorted({*record["files"], name})
    record_path.write_text(json.dumps(record))
    (wt / "pkg").mkdir(exist_ok=True)
    (wt / name).write_bytes(b"a\nB\n")
    replace_in(wt / "a.py", b"line2\n", b"line2 fixed\n")
    kept = patch_bytes(root, "fix")
    run = run_cli(root, "refresh")
    assert run.rc == 2, run.text
    assert f"{wt / name}: unsafe path 'pkg/back\\\\slash.py': backslash in name" in run.err, \
        run.err
    assert "fix.patch:" not in run.err, run.err
    assert patch_bytes(root, "fix") == kept
    assert (wt / name).read_bytes() == b"a\nB\n"  # nothing of the user's is touched
    # The hint's way: put the file back as the upstream has it, and the refresh goes.
    git(wt, "checkout", "--", name)
    ok(root, "refresh")
    data = patch_bytes(root, "fix")
    assert b"+line2 fixed\n" in data and b"slash" not in data


def test_an_upstream_named_upstreamed_is_refused_so_delete_never_takes_the_wrong_fix(tmp_path):
    """`list` prints an upstream `upstreamed`'s patch fa as `upstreamed/fa.patch`, and
    `delete upstreamed/fa` is also how a fix kept under upstreamed/ is named: `delete` read it
    as the kept landing (refused it as no kept fix, or took out another upstream's kept fix).
    No new upstream may have the name: `upstream add` refuses it, nothing written. A project
    that has one already (made before, or by hand) is still read (refusing its configuration
    stopped every command): lint says to rename it, and `delete upstreamed/fa` is refused as
    naming two things, with the spelling of each."""
    root, _ = git_project(tmp_path)
    before = snapshot(root)
    upstream = tmp_path / "up-upstream"
    run = run_cli(root, "upstream", "add", "upstreamed", "--git", str(upstream), "--at", "main")
    assert run.rc == 2 and "'upstreamed'" in run.err and "delete upstreamed/NAME" in run.err, \
        run.err
    assert snapshot(root) == before
    config = root / "pyproject.toml"
    text = config.read_text()
    config.write_text(text.replace("[tool.patchforge.upstreams.up]",
                                   "[tool.patchforge.upstreams.upstreamed]"))
    lock = root / "upstream.lock"
    lock.write_text(lock.read_text().replace('"up"', '"upstreamed"'))
    ok(root, "list")
    run = run_cli(root, "lint", "--no-forge")
    assert "upstream 'upstreamed' is named like the directory" in run.out + run.err and \
        "rename it" in run.out + run.err, (run.out, run.err)
    run = run_cli(root, "delete", "upstreamed/fa")
    assert run.rc == 2 and "names upstream upstreamed's patch 'fa'" in run.err and \
        "`patchforge delete fa` for the patch" in run.err, run.err
    # A profile of that name is no upstream's: taken.
    config.write_text(text + '\n[tool.patchforge.profiles]\nupstreamed = "a profile"\n'
                      if "[tool.patchforge.profiles]" not in text else
                      text.replace("[tool.patchforge.profiles]",
                                   '[tool.patchforge.profiles]\nupstreamed = "a profile"'))
    ok(root, "list")


def test_commands_run_in_a_worktree_holding_a_patchforge_configuration_act_on_the_project(
        tmp_path, monkeypatch):
    """An upstream that uses patchforge itself keeps [tool.patchforge] in its pyproject.toml; a
    fix of that file puts it in the edit's worktree, where the tutorial works. From there,
    `status` took the worktree for the project ("all 0 patches apply", exit 0) and `refresh`
    said no patch was being edited (exit 2). A directory inside a project's .patchforge/
    belongs to that project."""
    monkeypatch.setenv("PATCHFORGE_DATE", "2024-05-01")
    files = {**UPSTREAM_FILES,
             "pyproject.toml": b'[project]\nname = "other"\n\n[tool.patchforge]\n'
                               b'upstreams = {}\n'}
    root, _ = git_project(tmp_path, files)
    ok(root, "new", "fx", "--file", "pyproject.toml")
    replace_in(work(root) / "pyproject.toml", b'name = "other"', b'name = "other-fixed"')
    status = run_cli(None, "status", "--json", cwd=work(root))
    assert [p["name"] for p in json.loads(status.out)["patches"]] == ["fx.patch"], status.text
    run = run_cli(None, "refresh", cwd=work(root))
    assert run.rc == 0 and "refreshed" in run.text, run.text
    assert b'+name = "other-fixed"' in patch_bytes(root, "fx")


def test_overlays_made_during_an_edit_with_changes_not_refreshed_say_so(project):
    """`edit fix`, a change in the worktree, then `overlays` to try it: "wrote 1 overlay
    file", exit 0, the overlay without the change and nothing said, easy to deploy and test
    as the fix edited. The overlays are made from the patch file (as `rebase --dry-run`
    reads it); the run now says the edit's changes are not in them, and how to have them."""
    root = project
    make_patch(root, "fix", {"a.py": (b"line2\n", b"LINE2\n")})
    ok(root, "edit", "fix")
    replace_in(work(root) / "a.py", b"line3\n", b"LINE3\n")
    run = ok(root, "overlays")
    assert "note: up/fix.patch is being edited and has changes not refreshed: the overlays " \
        "hold its patch file as it is, without them, until `patchforge refresh`, then " \
        "`patchforge overlays` again" in run.err, run.err
    assert b"LINE3" not in (root / "overlays/up/a.py").read_bytes()
    ok(root, "refresh")
    run = ok(root, "overlays")
    assert "being edited" not in run.err and b"LINE3" in (root / "overlays/up/a.py").read_bytes()


def test_new_without_a_git_identity_says_the_author_it_wrote(project, monkeypatch):
    """On a fresh machine (no user.name/user.email, none in the environment) `new` wrote
    `Author: Unknown <unknown@localhost>` in silence, and the line goes upstream with the fix
    (`pr`, `export`). It says so now, with the way to set one; with an identity, nothing."""
    r = run_cli(project, "new", "with-author", "--no-edit")
    assert r.rc == 0 and "Author" not in r.err, r.text
    for var in ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL"):
        monkeypatch.delenv(var, raising=False)
    r = run_cli(project, "new", "no-author", "--no-edit")
    assert r.rc == 0, r.text
    assert b"\nAuthor: Unknown <unknown@localhost>\n" in patch_bytes(project, "no-author")
    assert "note: the patch's Author is Unknown <unknown@localhost>: git has no " \
        "user.name/user.email here" in r.err and "git config --global user.email" in r.err, r.err
    # import overlay writes the same Author, and says so alike.
    overlay = project.parent / "a.overlay"
    overlay.write_bytes((project.parent / "up-upstream" / "a.py").read_bytes() + b"# more\n")
    r = run_cli(project, "import", "overlay", str(overlay), "--path", "a.py", "--name", "ov")
    assert r.rc == 0 and "note: the patch's Author is Unknown" in r.err, r.text


def test_an_upstream_named_like_another_with_json_added_is_refused(tmp_path):
    """Upstreams `up` and `up.json`: an edit of `up` keeps its state in
    .patchforge/work/up.json, where an edit of `up.json` opens its worktree. With an edit open
    in `up.json`, `new` in `up` said "the open edit's state cannot be read" and hinted `edit
    --close --discard`. `upstream add` refuses such a name either way, nothing written."""
    root, _ = git_project(tmp_path)
    before = snapshot(root)
    upstream = tmp_path / "up-upstream"
    run = run_cli(root, "upstream", "add", "up.json", "--git", str(upstream), "--at", "main")
    assert run.rc == 2 and "'up.json'" in run.err and ".patchforge/work/up.json" in run.err, \
        run.err
    assert snapshot(root) == before


def test_a_move_to_where_the_patch_is_says_nothing_moved(project):
    """`move NAME --after X` with NAME right after X already (or `--first` of the first)
    printed "moved NAME" and the note that overlays/ was not regenerated after a change of
    the series, while nothing was written. It says it is there already, exit 0, no note."""
    root = project
    make_patch(root, "one", {"a.py": (b"line2\n", b"LINE2\n")})
    make_patch(root, "two", {"a.py": (b"line10\n", b"LINE10\n")})
    ok(root, "overlays")
    before = snapshot(root)
    for args in (("two", "--after", "one"), ("one", "--first")):
        run = ok(root, "move", *args)
        assert "already: nothing to move" in run.text and "moved" not in run.text, run.text
        assert "not regenerated" not in run.text, run.text
        assert snapshot(root) == before
    run = ok(root, "move", "one", "--after", "two")
    assert "moved one" in run.text and "not regenerated" in run.text, run.text
