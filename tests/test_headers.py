"""Patches patchforge makes again keep git's extended headers: a new file's mode, a mode change,
a rename (with or without edits), a copy, a deletion, and `index` lines with the mode the file has.

The judge is the standard tools: every patch patchforge regenerates (rebase, clean and through a
conflict resolved by --continue; refresh after edit; bring-back after --skip) is applied by
`git apply --index`, by GNU `patch -p1` and (exported as mbox) by `git am` on a clone of the real
upstream, and the tree they give, file modes included, must be the tree `git rebase` gives for the
original patches committed at the old base (for a copy: what `git apply` of the original copy
gives at the new base, since a commit records no copy for `git rebase` to follow).
"""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from helpers.git import git
from helpers.project import Stack, add_patch_file
from helpers.upstream import Upstream

pytestmark = pytest.mark.skipif(subprocess.run(["patch", "--version"], capture_output=True)
                                .returncode != 0, reason="GNU patch is needed")


def lines(prefix: str, n: int = 30, changed: dict[int, str] | None = None) -> bytes:
    changed = changed or {}
    return "".join(changed.get(i, f"{prefix}{i}") + "\n" for i in range(1, n + 1)).encode()


V1 = {"a.txt": lines("a"), "b.txt": lines("b"), "c.txt": lines("c"), "d.txt": lines("d"),
      "run.sh": b"#!/bin/sh\n" + lines("echo r", 8), "tool.sh": lines("t"), "m.txt": lines("m")}
EXECUTABLE_V1 = {"tool.sh"}

# Each patch, made by git at v1: the change in a checkout (shell-free: paths and contents).
KINDS = ["exec", "modeonly", "editexec", "editm", "renameedit", "purerename", "copy", "delete",
         "symlink"]
NEW_SH = b"#!/bin/sh\necho new\n"


def _make_change(work: Path, kind: str) -> None:
    if kind == "exec":
        (work / "new.sh").write_bytes(NEW_SH)
        os.chmod(work / "new.sh", 0o755)
    elif kind == "modeonly":
        os.chmod(work / "run.sh", 0o755)
    elif kind == "editexec":
        (work / "tool.sh").write_bytes(lines("t", changed={5: "t5 fixed"}))
    elif kind == "editm":
        (work / "m.txt").write_bytes(lines("m", changed={5: "m5 fixed"}))
    elif kind == "renameedit":
        git(work, "mv", "b.txt", "b2.txt")
        (work / "b2.txt").write_bytes(lines("b", changed={10: "b10 fixed"}))
    elif kind == "purerename":
        git(work, "mv", "c.txt", "c2.txt")
    elif kind == "copy":
        (work / "d2.txt").write_bytes(lines("d", changed={10: "d10 copied"}))
    elif kind == "delete":
        git(work, "rm", "-q", "a.txt")
    elif kind == "symlink":
        os.symlink("d.txt", work / "link")


HEADER_OF = {  # what each kind's patch must say, before and after any regeneration
    "exec": [b"new file mode 100755"],
    "modeonly": [b"old mode 100644\nnew mode 100755\n"],
    "editexec": [b" 100755\n"],
    "editm": [b"index "],
    "renameedit": [b"rename from b.txt\nrename to b2.txt\n"],
    "purerename": [b"rename from c.txt\nrename to c2.txt\n"],
    "copy": [b"copy from d.txt\ncopy to d2.txt\n"],
    "delete": [b"deleted file mode 100644"],
    "symlink": [b"new file mode 120000"],
}


class Scenario:
    """A real git upstream at v1 with the series of every kind, made by git, in a project."""

    def __init__(self, tmp_path: Path, kinds=KINDS) -> None:
        self.tmp = tmp_path
        upstream = Upstream(tmp_path / "up", V1, message="v1 files")
        self.up = upstream.path
        for rel in EXECUTABLE_V1:
            os.chmod(self.up / rel, 0o755)
        self.v1 = upstream.commit({}, "v1: executable tool", tag="v1")
        self.stack = Stack(tmp_path / "project")
        self.stack.add_upstream("up", upstream, at="v1")
        assert self.stack.lock()["upstreams"]["up"]["commit"] == self.v1
        self.kinds = list(kinds)
        self.diffs = {kind: self._git_diff(kind) for kind in self.kinds}
        for kind in self.kinds:
            for expected in HEADER_OF[kind]:
                assert expected in self.diffs[kind], (kind, self.diffs[kind])
            add_patch_file(self.stack.root, "up", f"{kind}.patch", self._patch(kind))

    def _git_diff(self, kind: str) -> bytes:
        work = self.tmp / f"make-{kind}"
        git(self.tmp, "clone", "-q", str(self.up), str(work))
        git(work, "checkout", "-q", self.v1)
        _make_change(work, kind)
        git(work, "add", "-A")
        return subprocess.run(["git", "diff", "--cached", "-M", "-C", "--find-copies-harder",
                               "--full-index"], cwd=work, check=True,
                              capture_output=True).stdout

    def _patch(self, kind: str) -> bytes:
        return (f"Description: {kind}\nAuthor: Test Author <author@example.com>\n"
                f"Upstream-Status: Pending\nUpstream: up\nBase: {self.v1}\n\n"
                f"The {kind} fix.\n---\n").encode() + self.diffs[kind]

    def commit(self, files: dict[str, bytes | None], message: str, tag: str,
               chmod: dict[str, int] | None = None) -> str:
        for rel, data in files.items():
            if data is None:
                git(self.up, "rm", "-q", rel)
            else:
                (self.up / rel).write_bytes(data)
        for rel, mode in (chmod or {}).items():
            os.chmod(self.up / rel, mode)
        git(self.up, "add", "-A")
        git(self.up, "commit", "-q", "-m", message)
        git(self.up, "tag", tag)
        return git(self.up, "rev-parse", "HEAD").strip()

    def series_patches(self) -> list[tuple[str, bytes]]:
        root = self.stack.root / "series" / "up"
        return [(n, (root / n).read_bytes()) for n in self.stack.series("up")]

    # ---- the standard tools' trees

    def clone_at(self, rev: str, name: str) -> Path:
        work = self.tmp / name
        git(self.tmp, "clone", "-q", str(self.up), str(work))
        git(work, "checkout", "-q", rev)
        return work

    def git_rebase_tree(self, onto: str, name: str, kinds=None,
                        resolutions: dict[str, bytes | None] | None = None) -> dict:
        """The original patches committed at v1 with `git apply --index`, then `git rebase
        ONTO`; at a conflict, the paths of `resolutions` get those contents (None: removed)."""
        work = self.clone_at(self.v1, name)
        kinds = kinds or self.kinds
        for kind in kinds:
            subprocess.run(["git", "apply", "--index", "-"], cwd=work, input=self._patch(kind),
                           check=True, capture_output=True)
            git(work, "commit", "-q", "-m", kind)
        proc = subprocess.run(["git", "rebase", "-q", onto], cwd=work, capture_output=True)
        while proc.returncode != 0:
            assert resolutions is not None, proc.stderr.decode()
            unmerged = {line.split("\t", 1)[1] for line in
                        git(work, "ls-files", "-u").splitlines()}
            assert unmerged, proc.stdout.decode() + proc.stderr.decode()
            for rel in unmerged:
                data = resolutions[rel]
                if data is None:
                    git(work, "rm", "-q", "--", rel)
                else:
                    (work / rel).write_bytes(data)
                    git(work, "add", "--", rel)
            proc = subprocess.run(["git", "rebase", "--continue"], cwd=work, capture_output=True,
                                  env={**os.environ, "GIT_EDITOR": "true"})
        tree = working_tree(work)
        if "copy" in kinds and not (resolutions and "d2.txt" in resolutions):
            # A commit records no copy: git rebase carries d2.txt as the file it was. The copy
            # patch itself says "copy d.txt as it is, then change it": what `git apply` of the
            # original gives at the new base.
            check = self.clone_at(onto, name + "-copy")
            subprocess.run(["git", "apply", "--index", "-"], cwd=check, input=self._patch("copy"),
                           check=True, capture_output=True)
            tree["d2.txt"] = working_tree(check)["d2.txt"]
        return tree

    def assert_series_gives(self, expected: dict, rev: str, name: str) -> None:
        """The series as it stands, applied at `rev` by git apply --index, by patch -p1 and
        (exported as mbox) by git am: each gives `expected`, modes included."""
        patches = self.series_patches()
        work = self.clone_at(rev, name + "-apply")
        for patch_name, data in patches:
            proc = subprocess.run(["git", "apply", "--index", "-"], cwd=work, input=data,
                                  capture_output=True)
            assert proc.returncode == 0, (patch_name, proc.stderr.decode(), data.decode())
        assert working_tree(work) == expected, ("git apply", patch_name)
        assert index_tree(work) == {p: m for p, (m, _) in expected.items()}
        work = self.clone_at(rev, name + "-patch")
        for patch_name, data in patches:
            proc = subprocess.run(["patch", "-p1", "--batch", "--quiet", "--no-backup-if-mismatch"],
                                  cwd=work, input=data, capture_output=True)
            assert proc.returncode == 0, (patch_name, proc.stdout.decode(), data.decode())
        assert working_tree(work) == expected, "patch -p1"
        mbox = self.tmp / f"{name}.mbox"
        self.stack.cli("export", "--mbox", str(mbox))
        work = self.clone_at(rev, name + "-am")
        git(work, "checkout", "-q", "-b", "am")
        proc = subprocess.run(["git", "am", "-q", str(mbox)], cwd=work, capture_output=True)
        assert proc.returncode == 0, proc.stderr.decode()
        assert working_tree(work) == expected, "git am"
        assert index_tree(work) == {p: m for p, (m, _) in expected.items()}


def working_tree(work: Path) -> dict[str, tuple[str, bytes]]:
    """path -> (git mode, content) of every file in a checkout (the file system's word)."""
    out = {}
    for directory, dirs, names in os.walk(work):
        dirs[:] = [d for d in dirs if d != ".git"]
        for name in names:
            path = Path(directory, name)
            rel = path.relative_to(work).as_posix()
            if path.is_symlink():
                out[rel] = ("120000", os.fsencode(os.readlink(path)))
            else:
                mode = "100755" if os.stat(path).st_mode & 0o100 else "100644"
                out[rel] = (mode, path.read_bytes())
    return out


def headers_of(diff: bytes) -> list[bytes]:
    """The extended header lines of each file of a diff (`diff --git` up to `---` or the next
    file), in order."""
    out, inside = [], False
    for line in diff.splitlines(keepends=True):
        if line.startswith(b"diff --git "):
            inside = True
        elif line.startswith((b"--- ", b"@@ ")):
            inside = False
        if inside:
            out.append(line)
    return out


def index_tree(work: Path) -> dict[str, str]:
    """path -> mode as git's index has it (`git ls-files -s`)."""
    out = {}
    for line in git(work, "ls-files", "-s").splitlines():
        info, rel = line.split("\t", 1)
        out[rel] = info.split()[0]
    return out


def assert_headers(scenario: Scenario, kinds=None) -> None:
    for kind in kinds or scenario.kinds:
        data = scenario.stack.patch("up", kind)
        for expected in HEADER_OF[kind]:
            assert expected in data, (kind, data.decode())


# v2: upstream changes every file a patch touches, away from the patches' lines (so each diff
# is made again), makes m.txt executable, and adds a file.
def commit_v2(s: Scenario, tag: str = "v2") -> str:
    return s.commit({"b.txt": lines("b", changed={28: "b28 up"}),
                     "c.txt": lines("c", changed={28: "c28 up"}),
                     "d.txt": lines("d", changed={28: "d28 up"}),
                     "run.sh": b"#!/bin/sh\n" + lines("echo r", 9),
                     "tool.sh": lines("t", changed={28: "t28 up"}),
                     "m.txt": lines("m", changed={28: "m28 up"}),
                     f"{tag}.txt": b"new upstream file\n"},
                    f"upstream {tag}", tag, chmod={"m.txt": 0o755, "tool.sh": 0o755})


def test_clean_rebase_keeps_modes_renames_copies_and_deletions(tmp_path):
    s = Scenario(tmp_path)
    commit_v2(s)
    document = s.stack.rebase_json("--to", "v2")
    assert {r["name"]: r["action"] for r in document["patches"]} == \
        {f"{k}.patch": "clean" for k in KINDS}, document
    assert_headers(s)
    # The index line of a file upstream made executable says so.
    assert b" 100755\n" in s.stack.patch("up", "editm")
    s.assert_series_gives(s.git_rebase_tree("v2", "rebase-v2"), "v2", "v2")
    # Each regenerated header is the one git itself writes for that change (`git diff -M -C`
    # of the patch applied at v2): mode lines, similarity index, rename/copy, index.
    for kind in ("renameedit", "purerename", "copy", "modeonly", "editm", "exec", "delete"):
        data = s.stack.patch("up", kind)
        work = s.clone_at("v2", f"by-git-{kind}")
        subprocess.run(["git", "apply", "--index", "-"], cwd=work, input=data, check=True)
        by_git = subprocess.run(["git", "diff", "--cached", "-M", "-C", "--find-copies-harder",
                                 "--full-index"], cwd=work, check=True,
                                capture_output=True).stdout
        assert headers_of(data) == headers_of(by_git), kind


def test_rebase_through_clean_3_way_merges_keeps_headers(tmp_path):
    # Upstream changes a line inside each fix's context (two lines from the fix): the hunk no
    # longer applies as it is, git's 3-way merge takes both changes, and the patch written from
    # the merge keeps its headers.
    s = Scenario(tmp_path)
    near = {"b.txt": lines("b", changed={8: "b8 up"}), "d.txt": lines("d", changed={8: "d8 up"}),
            "tool.sh": lines("t", changed={3: "t3 up"}), "m.txt": lines("m", changed={3: "m3 up"})}
    s.commit(near, "upstream v2: next to the fixes", "v2", chmod={"m.txt": 0o755})
    document = s.stack.rebase_json("--to", "v2")
    actions = {r["name"]: r["action"] for r in document["patches"]}
    assert {actions[f"{k}.patch"] for k in ("renameedit", "copy", "editexec", "editm")} == \
        {"merged"}, actions
    assert_headers(s)
    expected = s.git_rebase_tree("v2", "merge-v2", kinds=[k for k in KINDS if k != "copy"])
    # The copy is of d.txt as it is at v2, changed as the patch changes it.
    expected["d2.txt"] = ("100644", lines("d", changed={8: "d8 up", 10: "d10 copied"}))
    s.assert_series_gives(expected, "v2", "merge-v2")


CONFLICTS_V3 = {  # upstream changes the very lines the patches change
    "a.txt": lines("a", changed={5: "a5 up"}),
    "b.txt": lines("b", changed={10: "b10 up", 28: "b28 up"}),
    "d.txt": lines("d", changed={10: "d10 up", 28: "d28 up"}),
    "tool.sh": lines("t", changed={5: "t5 up", 28: "t28 up"}),
    "m.txt": lines("m", changed={5: "m5 up", 28: "m28 up"}),
}
RESOLVED = {"b2.txt": lines("b", changed={10: "b10 up and fixed", 28: "b28 up"}),
            "a.txt": None,
            "d2.txt": lines("d", changed={10: "d10 copied"}),
            "tool.sh": lines("t", changed={5: "t5 up and fixed", 28: "t28 up"}),
            "m.txt": lines("m", changed={5: "m5 up and fixed", 28: "m28 up"})}


def test_rebase_through_conflicts_resolved_by_continue_keeps_headers(tmp_path):
    s = Scenario(tmp_path)
    commit_v2(s)
    s.commit(CONFLICTS_V3, "upstream v3: the same lines", "v3")
    work = s.stack.root / ".patchforge" / "work" / "up"
    rc, out, err = s.stack.cli("rebase", "--to", "v3", expect=3)
    stops = 0
    while rc == 3:
        stops += 1
        assert stops <= len(KINDS), err
        for rel, data in RESOLVED.items():
            target = work / rel
            if data is None:
                if target.exists():
                    target.unlink()
            elif target.exists():
                mode = os.stat(target).st_mode
                target.write_bytes(data)
                assert os.stat(target).st_mode == mode
        rc, out, err = s.stack.cli("rebase", "--continue", expect=None)
    assert rc == 0, out + err
    assert stops == 5, out + err
    assert_headers(s)
    s.assert_series_gives(s.git_rebase_tree("v3", "rebase-v3", resolutions=RESOLVED), "v3", "v3")


def test_edit_and_refresh_keep_headers_and_take_a_mode_change(tmp_path):
    s = Scenario(tmp_path)
    work = s.stack.root / ".patchforge" / "work" / "up"
    before = {k: s.stack.patch("up", k) for k in KINDS}
    for kind in KINDS:
        s.stack.cli("edit", kind)
        s.stack.cli("refresh")
        assert s.stack.patch("up", kind) == before[kind], kind  # nothing changed: same bytes
    # A change in each file a patch makes: the patch is made again, its headers stay.
    edits = {"exec": ("new.sh", NEW_SH + b"echo more\n"),
             "renameedit": ("b2.txt", lines("b", changed={10: "b10 fixed", 20: "b20 too"})),
             "copy": ("d2.txt", lines("d", changed={10: "d10 copied", 20: "d20 too"})),
             "editexec": ("tool.sh", lines("t", changed={5: "t5 fixed", 20: "t20 too"}))}
    for kind, (rel, data) in edits.items():
        s.stack.cli("edit", kind)
        (work / rel).write_bytes(data)
        s.stack.cli("refresh")
        assert s.stack.patch("up", kind) != before[kind], kind
    assert_headers(s)
    # chmod +x in the worktree: the refreshed patch carries the mode change, and the rename.
    s.stack.cli("edit", "renameedit")
    os.chmod(work / "b2.txt", 0o755)
    s.stack.cli("refresh")
    data = s.stack.patch("up", "renameedit")
    assert b"old mode 100644\nnew mode 100755\n" in data and b"rename from b.txt\n" in data
    # A link pointed elsewhere in the worktree: still a link, to the new target.
    s.stack.cli("edit", "symlink")
    os.unlink(work / "link")
    os.symlink("tool.sh", work / "link")
    s.stack.cli("refresh")
    assert b"new file mode 120000\n" in s.stack.patch("up", "symlink")
    expected = working_tree(s.clone_at("v1", "expected"))
    expected.pop("a.txt"), expected.pop("b.txt"), expected.pop("c.txt")
    expected.update({"new.sh": ("100755", edits["exec"][1]),
                     "b2.txt": ("100755", edits["renameedit"][1]),
                     "link": ("120000", b"tool.sh"),
                     "c2.txt": ("100644", lines("c")), "d2.txt": ("100644", edits["copy"][1]),
                     "tool.sh": ("100755", edits["editexec"][1]),
                     "m.txt": ("100644", lines("m", changed={5: "m5 fixed"})),
                     "run.sh": ("100755", V1["run.sh"])})
    s.assert_series_gives(expected, "v1", "refreshed")


def test_skipped_fixes_brought_back_keep_headers(tmp_path):
    s = Scenario(tmp_path)
    commit_v2(s)
    # v3 stops every patch: the lines they change, their files gone or already there.
    s.commit({**CONFLICTS_V3, "c.txt": None, "run.sh": None, "new.sh": b"#!/bin/sh\nother\n",
              "link": b"a file, not a link\n"}, "upstream v3", "v3")
    rc, out, err = s.stack.cli("rebase", "--to", "v3", expect=None)
    skips = 0
    while rc == 3:
        skips += 1
        assert skips <= len(KINDS), out + err
        rc, out, err = s.stack.cli("rebase", "--skip", expect=None)
    assert rc == 1, out + err  # finished, the fixes set aside in none of the overlays
    assert skips == len(KINDS) and s.stack.series("up") == []
    # v4 undoes v3: each fix applies again, on files that differ from v1 (a new diff is made).
    v2 = {rel: s.up.joinpath(rel) for rel in V1}
    git(s.up, "checkout", "-q", "v2", "--", ".")
    for rel in ("new.sh", "link"):
        git(s.up, "rm", "-q", "--cached", rel)
        (s.up / rel).unlink()
    assert v2
    s.commit({"v4.txt": b"v4\n"}, "upstream v4: v3 undone", "v4")
    s.stack.cli("rebase", "--to", "v4", expect=1)
    for kind in KINDS:
        s.stack.cli("bring-back", kind)
    assert s.stack.series("up") == [f"{k}.patch" for k in KINDS]
    assert_headers(s)
    s.assert_series_gives(s.git_rebase_tree("v4", "rebase-v4"), "v4", "v4")


def test_overlays_get_the_mode_the_series_gives(tmp_path):
    # Overlays cannot delete a file in the image, so no deletion or rename here.
    s = Scenario(tmp_path, kinds=["exec", "modeonly", "editexec", "editm", "copy"])
    s.stack.cli("overlays")
    expected = s.git_rebase_tree("v1", "at-v1")
    overlays = s.stack.root / "overlays" / "up"
    made = working_tree(overlays)
    assert made == {rel: expected[rel] for rel in made}
    assert made["new.sh"][0] == "100755" and made["run.sh"][0] == "100755"
    assert made["tool.sh"][0] == "100755" and made["d2.txt"][0] == "100644"
    s.stack.cli("overlays", "--check")
    os.chmod(overlays / "new.sh", 0o644)
    rc, out, _ = s.stack.cli("overlays", "--check", expect=1)
    assert "new.sh" in out and "executable" in out


def test_a_path_through_a_link_the_series_makes_is_refused(tmp_path):
    # A link inside the upstream is fine; a later patch writing through it (into the place the
    # link names, wherever that is) is refused before anything is written, as for an upstream
    # link.
    s = Scenario(tmp_path, kinds=["symlink"])
    s.stack.cli("status")
    through = (b"diff --git a/link/evil b/link/evil\nnew file mode 100644\nindex "
               + b"0" * 40 + b"..ce013625030ba8dba906f756967f9e9ca394464a\n--- /dev/null\n"
               b"+++ b/link/evil\n@@ -0,0 +1 @@\n+hello\n")
    add_patch_file(s.stack.root, "up", "through.patch",
                   s._patch("symlink").split(b"---\n", 1)[0] + b"---\n" + through)
    before = working_tree(s.stack.root)
    for command in (["overlays"], ["rebase", "--to", "v1"]):
        rc, out, err = s.stack.cli(*command, expect=2)
        assert "goes through the symlink link the series makes" in err, (command, err)
        assert working_tree(s.stack.root) == before, command


def test_overlays_refuse_to_make_a_link(tmp_path):
    # An overlay is mounted or copied as a file: a link would be followed, not made.
    s = Scenario(tmp_path, kinds=["symlink"])
    rc, out, err = s.stack.cli("overlays", expect=2)
    assert "makes link a symlink" in err and not (s.stack.root / "overlays" / "up").exists()


def test_a_file_moved_in_the_worktree_is_refreshed_as_a_rename(tmp_path):
    s = Scenario(tmp_path, kinds=["editm"])
    work = s.stack.root / ".patchforge" / "work" / "up"
    s.stack.cli("edit", "editm")
    s.stack.cli("add", "d.txt")
    git(work, "mv", "d.txt", "d3.txt")
    (work / "d3.txt").write_bytes(lines("d", changed={12: "d12 moved and fixed"}))
    s.stack.cli("add", "d3.txt")
    s.stack.cli("refresh")
    data = s.stack.patch("up", "editm")
    # What `git diff -M` writes for the same move: a rename with git's similarity score.
    check = s.clone_at("v1", "git-mv")
    git(check, "mv", "d.txt", "d3.txt")
    (check / "d3.txt").write_bytes(lines("d", changed={12: "d12 moved and fixed"}))
    git(check, "add", "-A")
    expected_header = subprocess.run(["git", "diff", "--cached", "-M", "--", "d.txt", "d3.txt"],
                                     cwd=check, check=True, capture_output=True).stdout
    assert b"rename from d.txt\nrename to d3.txt\n" in data
    assert expected_header.split(b"\n")[1] in data  # the same `similarity index NN%`
    expected = working_tree(s.clone_at("v1", "expected"))
    expected.pop("d.txt")
    expected["d3.txt"] = ("100644", lines("d", changed={12: "d12 moved and fixed"}))
    expected["m.txt"] = ("100644", lines("m", changed={5: "m5 fixed"}))
    s.assert_series_gives(expected, "v1", "moved")


def test_a_patch_that_deletes_and_creates_without_renaming_stays_so(tmp_path):
    # Made by a tool that writes no renames (quilt, `git diff --no-renames`): the deletion and
    # the creation of a near copy stay two sections through edit + refresh, also when the
    # refresh makes the diff again for a change to another of its files.
    s = Scenario(tmp_path, kinds=["editm"])
    work = s.clone_at("v1", "no-renames")
    git(work, "mv", "d.txt", "d4.txt")
    (work / "a.txt").write_bytes(lines("a", changed={3: "a3 fixed"}))
    git(work, "add", "-A")
    diff = subprocess.run(["git", "diff", "--cached", "--no-renames", "--full-index"], cwd=work,
                          check=True, capture_output=True).stdout
    assert b"deleted file mode" in diff and b"rename" not in diff
    add_patch_file(s.stack.root, "up", "apart.patch",
                   f"Description: apart\nBase: {s.v1}\n---\n".encode() + diff)
    before = s.stack.patch("up", "apart")
    s.stack.cli("edit", "apart")
    s.stack.cli("refresh")
    assert s.stack.patch("up", "apart") == before
    s.stack.cli("edit", "apart")
    tree = s.stack.root / ".patchforge" / "work" / "up"
    (tree / "a.txt").write_bytes(lines("a", changed={3: "a3 fixed", 20: "a20 too"}))
    s.stack.cli("refresh")
    after = s.stack.patch("up", "apart")
    assert after != before and b"+a20 too\n" in after
    assert b"rename" not in after and b"deleted file mode 100644" in after
    assert b"new file mode 100644" in after


def test_lint_checks_renames_and_copies_are_byte_stable(tmp_path):
    s = Scenario(tmp_path)
    rc, out, err = s.stack.cli("lint", "--no-forge", "--json", expect=None)
    stable = [f for f in json.loads(out)["findings"] if f["check"] == "byte-stable"]
    assert stable == [], stable  # git made them: canonical, renames and copies included
    # A rename whose diff was made with other options (-U1) is found like any other patch.
    data = s.stack.patch("up", "renameedit")
    work = s.clone_at("v1", "u1")
    _make_change(work, "renameedit")
    git(work, "add", "-A")
    other = subprocess.run(["git", "diff", "--cached", "-M", "-U1", "--full-index"], cwd=work,
                           check=True, capture_output=True).stdout
    assert b"rename from b.txt" in other
    head = data[:data.index(b"diff --git")]
    (s.stack.root / "series" / "up" / "renameedit.patch").write_bytes(head + other)
    rc, out, err = s.stack.cli("lint", "--no-forge", "--json", expect=None)
    (found,) = [f for f in json.loads(out)["findings"] if f["check"] == "byte-stable"]
    assert "renameedit" in found["patch"] and found["severity"] == "error", found
