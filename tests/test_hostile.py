"""Hostile and malformed patches through the real command line: refused before anything is written.

Every case here is a patch that once broke GNU patch, git apply or dpkg-source (paths escaping the
tree, `.git` in its many spellings, symlinks, ed scripts, absurd counts, ghost hunks, binary
patches, names with newline or NUL). Each is put into a real project's series (the upstream is a
real git repository built here) and run through `overlays`, `status`, `edit`, `import quilt` and
`import mbox`; each must end with exit 2, a message naming the file and line, and the project
tree (and everything around it) byte-identical to before.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.cli import CliResult, run_cli
from helpers.project import add_patch_file
from helpers.snapshot import snapshot
from helpers.template import (HEADER, MODIFY_A, TEMPLATE_FILES, Template, build_template,
                              overlay_file)

def mbox_of(diff: bytes, subject: str = "a fix") -> bytes:
    return (b"From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\n"
            b"From: A U Thor <author@example.com>\nDate: Thu, 1 Jan 2026 00:00:00 +0000\n"
            b"Subject: [PATCH] " + subject.encode() + b"\n\nWhy.\n---\n" + diff)



@pytest.fixture(scope="module")
def env(tmp_path_factory) -> Template:
    return build_template(tmp_path_factory, links={"linkdir": "@OUTSIDE@", "alink": "a.txt"})


# ---------------------------------------------------------------------------------------------
# The hostile diffs

def _new_file(path: bytes) -> bytes:
    return (b"diff --git a/" + path + b" b/" + path + b"\nnew file mode 100644\n--- /dev/null\n"
            b"+++ b/" + path + b"\n@@ -0,0 +1 @@\n+pwned\n")


def _quoted_new_file(a: bytes, b: bytes) -> bytes:
    return (b"diff --git " + a + b" " + b + b"\nnew file mode 100644\n--- /dev/null\n+++ " + b +
            b"\n@@ -0,0 +1 @@\n+pwned\n")


HOSTILE: dict[str, bytes] = {
    "dotdot": _new_file(b"../evil.txt"),
    "dotdot-deep": _new_file(b"pkg/../../evil.txt"),
    "dotdot-plain-headers": b"--- a/../evil.txt\n+++ b/../evil.txt\n@@ -0,0 +1 @@\n+pwned\n",
    "absolute-git": (b"diff --git /etc/passwd /etc/passwd\n--- /etc/passwd\n+++ /etc/passwd\n"
                     b"@@ -1 +1 @@\n-root\n+pwned\n"),
    "absolute-plain": b"--- /dev/null\n+++ /tmp/evil.txt\n@@ -0,0 +1 @@\n+pwned\n",
    "absolute-after-strip": _new_file(b"/etc/cron.d/evil"),
    "windows-drive": _new_file(b"C:/Windows/evil.txt"),
    "windows-backslash": _new_file(b"..\\..\\evil.txt"),
    "unc": _new_file(b"\\\\server\\share\\evil.txt"),
    "c-quoted-dotdot": _quoted_new_file(b'"a/\\056\\056/evil.txt"', b'"b/\\056\\056/evil.txt"'),
    "c-quoted-newline": _quoted_new_file(b'"a/x\\ny"', b'"b/x\\ny"'),
    "c-quoted-nul": _quoted_new_file(b'"a/x\\000y"', b'"b/x\\000y"'),
    "raw-cr-in-name": _new_file(b"x\ry"),
    "rename-out": (b"diff --git a/a.txt b/../evil.txt\nsimilarity index 100%\n"
                   b"rename from a.txt\nrename to ../evil.txt\n"),
    "rename-from-out": (b"diff --git a/../etc/passwd b/stolen\nsimilarity index 100%\n"
                        b"rename from ../etc/passwd\nrename to stolen\n"),
    "copy-into-git": (b"diff --git a/a.txt b/.git/config\nsimilarity index 100%\n"
                      b"copy from a.txt\ncopy to .git/config\n"),
    "git-dir": _new_file(b".git/hooks/post-checkout"),
    "git-dir-nested": _new_file(b"pkg/.git/config"),
    "git-dir-upper": _new_file(b".GIT/config"),
    "git-dir-ntfs-dot": _new_file(b".git./config"),
    "git-dir-ntfs-space": _new_file(b".git /config"),
    "git-dir-8dot3": _new_file(b"GIT~1/config"),
    "git-dir-hfs": _new_file(".g\u200cit/config".encode()),
    "symlink-mode": (b"diff --git a/evil b/evil\nnew file mode 120000\n--- /dev/null\n"
                     b"+++ b/evil\n@@ -0,0 +1 @@\n+/etc/passwd\n\\ No newline at end of file\n"),
    "symlink-mode-change": (b"diff --git a/a.txt b/a.txt\nold mode 100644\nnew mode 120000\n"),
    "gitlink": (b"diff --git a/sub b/sub\nnew file mode 160000\nindex 0000000..1234567\n"
                b"--- /dev/null\n+++ b/sub\n@@ -0,0 +1 @@\n+Subproject commit " + b"1" * 40 + b"\n"),
    "ed-script": b"1a\nrm -rf /\n.\nw\nq\n",
    "ed-script-after-header": b"--- a/a.txt\n+++ b/a.txt\n2d\n",
    "normal-diff": b"2c2\n< line2\n---\n> LINE2\n",
    "context-diff": (b"*** a/a.txt\n--- b/a.txt\n***************\n*** 1,3 ****\n  line1\n"
                     b"! line2\n  line3\n--- 1,3 ----\n  line1\n! LINE2\n  line3\n"),
    "option-name": _new_file(b"-rf"),
    "absurd-count": (b"diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n"
                     b"@@ -1,2147483648 +1,2147483648 @@\n line1\n"),
    "absurd-start": (b"diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n"
                     b"@@ -99999999999,1 +99999999999,1 @@\n-line2\n+LINE2\n"),
    "count-beyond-input": (b"diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n"
                           b"@@ -1,3000000 +1,3000000 @@\n line1\n-line2\n+LINE2\n"),
    "ghost-hunk-swallows-header": (
        b"diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n@@ -1,3 +1,6 @@\n"
        b" line1\n-line2\n+LINE2\n line3\n"
        b"diff --git a/pkg/mod.py b/pkg/mod.py\n--- a/pkg/mod.py\n+++ b/pkg/mod.py\n"
        b"@@ -1 +1 @@\n-x = 1\n+x = 2\n"),
    "ghost-hunk-minus-header": (
        b"diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n@@ -1,5 +1,3 @@\n"
        b" line1\n-line2\n+LINE2\n line3\n"
        b"--- a/pkg/mod.py\n+++ b/pkg/mod.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n"),
    "hunk-without-header": b"@@ -1,3 +1,3 @@\n line1\n-line2\n+LINE2\n line3\n",
    "body-longer-than-counts": (b"diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n"
                                b"@@ -1,2 +1,2 @@\n line1\n-line2\n+LINE2\n line3\n"),
    "body-shorter-than-counts": (b"diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n"
                                 b"@@ -1,4 +1,4 @@\n line1\n-line2\n+LINE2\n line3\n"),
    "malformed-hunk-header": (b"diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n"
                              b"@@ -a,3 +b,3 @@\n line1\n"),
    "hunks-out-of-order": (b"diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n"
                           b"@@ -6,3 +6,3 @@\n line6\n-line7\n+LINE7\n line8\n"
                           b"@@ -1,3 +1,3 @@\n line1\n-line2\n+LINE2\n line3\n"),
    "hunks-overlapping": (b"diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n"
                          b"@@ -1,3 +1,3 @@\n line1\n-line2\n+LINE2\n line3\n"
                          b"@@ -2,3 +2,3 @@\n line2\n-line3\n+LINE3\n line4\n"),
    "binary-literal": (b"diff --git a/blob.bin b/blob.bin\nnew file mode 100644\n"
                       b"index 0000000..e69de29\nGIT binary patch\nliteral 5\n"
                       b"McmZQzU|?fl000310RR91\n\nliteral 0\nHcmV?d00001\n\n"),
    "binary-differ": (b"diff --git a/blob.bin b/blob.bin\nnew file mode 100644\n"
                      b"Binary files /dev/null and b/blob.bin differ\n"),
    "binary-without-git-header": b"Binary files a/x.bin and b/x.bin differ\n",
    "create-removes-lines": (b"diff --git a/new.txt b/new.txt\nnew file mode 100644\n"
                             b"--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1 @@\n-gone\n+pwned\n"),
}

# Refused by the parser as malformed (InputError) rather than as unsafe: same exit code, same rule.


def _patch(diff: bytes) -> bytes:
    return HEADER + diff


def _assert_refused(r: CliResult, file_hint: str, *, line: bool = True) -> None:
    assert r.rc == 2, f"exit {r.rc}\n{r.text}"
    assert "Traceback" not in r.text
    assert file_hint in r.err, r.err
    if line:
        assert re.search(re.escape(file_hint) + r"[^\n]*:\d+: ", r.err), r.err


def _refuse_everywhere(env: Template, tmp_path: Path, monkeypatch, diff: bytes, *,
                       line: bool = True) -> None:
    root = env.fresh(tmp_path, monkeypatch)
    add_patch_file(root, "up", "hostile.patch", _patch(diff))
    around = tmp_path  # the project, its siblings and the upstream's symlink target
    before, outside_before = snapshot(around), snapshot(env.outside)
    for args in (("overlays",), ("status",), ("edit", "hostile")):
        r = run_cli(root, *args)
        _assert_refused(r, "hostile.patch", line=line)
        assert snapshot(around) == before, args
    assert snapshot(env.outside) == outside_before


# A binary change without its data, or with abbreviated blob ids, is refused where it is read,
# with its line, like any other malformed diff (carried binary patches: tests/test_binary.py).
BINARY: set[str] = set()
# Known gaps, each a strict xfail so that the fix turns it into a failure to remove the mark.
GAPS: dict[str, str] = {}


@pytest.mark.parametrize("case", [pytest.param(c, marks=pytest.mark.xfail(strict=True,
                                                                          reason=GAPS[c]))
                                  if c in GAPS else c for c in sorted(HOSTILE)])
def test_hostile_patch_in_series_is_refused_by_every_command(env, tmp_path, monkeypatch, case):
    _refuse_everywhere(env, tmp_path, monkeypatch, HOSTILE[case], line=case not in BINARY)


# Diffs that GNU patch, quilt, git apply and patchforge's own commands each read another way:
# refused where they are read, so that no two commands disagree on what a fix deploys. A plain
# `---`/`+++` pair of two names is one file changed in place for GNU patch and git apply; the
# overlays shipped the fix under the `+++` name and the `---` file unfixed, while status said
# "applies". Sections meeting an earlier section's file were applied in turn by the overlays
# and judged each against the base by status and rebase ("conflict", "obsolete", "applies").
_A_TWICE = (b"--- a/a.txt\n+++ b/a.txt\n@@ -1,3 +1,3 @@\n line1\n-LINE2\n+LINE22\n line3\n")
AMBIGUOUS: dict[str, bytes] = {
    "plain-two-names": (b"--- a/a.txt\n+++ b/a.txt.new\n@@ -1,3 +1,3 @@\n line1\n-line2\n"
                        b"+LINE2\n line3\n"),
    "plain-two-upstream-files": (b"--- a/a.txt\n+++ b/pkg/mod.py\n@@ -1,3 +1,3 @@\n line1\n"
                                 b"-line2\n+LINE2\n line3\n"),
    "git-two-names-no-rename": (b"diff --git a/a.txt b/a.txt.new\n--- a/a.txt\n+++ b/a.txt.new\n"
                                b"@@ -1,3 +1,3 @@\n line1\n-line2\n+LINE2\n line3\n"),
    "one-file-two-sections": MODIFY_A + _A_TWICE,
    "created-then-changed": (b"--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1,2 @@\n+one\n+two\n"
                             b"--- a/new.txt\n+++ b/new.txt\n@@ -1,2 +1,2 @@\n one\n-two\n+TWO\n"),
    "changed-after-rename": (b"diff --git a/a.txt b/b.txt\nsimilarity index 100%\n"
                             b"rename from a.txt\nrename to b.txt\n" + MODIFY_A),
}


@pytest.mark.parametrize("case", sorted(AMBIGUOUS))
def test_a_diff_tools_read_differently_is_refused_by_every_command(env, tmp_path, monkeypatch,
                                                                    case):
    _refuse_everywhere(env, tmp_path, monkeypatch, AMBIGUOUS[case])
    quilt = tmp_path / "quilt"
    quilt.mkdir()
    (quilt / "hostile.patch").write_bytes(_patch(AMBIGUOUS[case]))
    (quilt / "series").write_bytes(b"hostile.patch\n")
    root = tmp_path / "project"
    before = snapshot(tmp_path)
    _assert_refused(run_cli(root, "import", "quilt", str(quilt), "--upstream", "up"),
                    "hostile.patch")
    assert snapshot(tmp_path) == before


def test_a_file_copied_and_changed_in_two_sections_is_one_change(env, tmp_path, monkeypatch):
    """`git diff -C` writes a copy and a change of its source as two sections of one file:
    both read the file before the patch, as git apply reads them, and the fix deploys."""
    root = env.fresh(tmp_path, monkeypatch)
    add_patch_file(root, "up", "copy.patch", _patch(
        b"diff --git a/a.txt b/c.txt\nsimilarity index 100%\ncopy from a.txt\ncopy to c.txt\n"
        + MODIFY_A))
    r = run_cli(root, "overlays")
    assert r.rc == 0, r.text
    assert overlay_file(root, "a.txt").read_bytes().startswith(b"line1\nLINE2\n")
    assert overlay_file(root, "c.txt").read_bytes() == TEMPLATE_FILES["a.txt"]


def test_binary_refusal_names_the_line(env, tmp_path, monkeypatch):
    _refuse_everywhere(env, tmp_path, monkeypatch, HOSTILE["binary-literal"])


def test_binary_refusal_is_clear(env, tmp_path, monkeypatch):
    root = env.fresh(tmp_path, monkeypatch)
    path = add_patch_file(root, "up", "bin.patch", b"")
    for case, why in (("binary-literal", "abbreviated blob ids"),
                      ("binary-differ", "without its data")):
        path.write_bytes(_patch(HOSTILE[case]))
        r = run_cli(root, "overlays")
        assert r.rc == 2 and "bin.patch" in r.err and "blob.bin" in r.err and why in r.err


# `import quilt` and `import mbox` only copy or render patches, they do not apply them: binary
# patches get in and are refused later, by the first command that applies them.
IMPORT_GAPS: dict[str, str] = dict(GAPS)


def _import_cases(gaps=IMPORT_GAPS):
    return [pytest.param(c, marks=pytest.mark.xfail(strict=True, reason=gaps[c]))
            if c in gaps else c for c in sorted(HOSTILE)]


@pytest.mark.parametrize("case", _import_cases())
def test_hostile_patch_in_quilt_import_is_refused(env, tmp_path, monkeypatch, case):
    root = env.fresh(tmp_path, monkeypatch)
    quilt = tmp_path / "quilt"
    quilt.mkdir()
    (quilt / "hostile.patch").write_bytes(_patch(HOSTILE[case]))
    (quilt / "good.patch").write_bytes(_patch(MODIFY_A))
    (quilt / "series").write_bytes(b"good.patch\nhostile.patch\n")
    before = snapshot(tmp_path)
    r = run_cli(root, "import", "quilt", str(quilt), "--upstream", "up")
    # The good patch before it is not imported either: the import is all or nothing.
    _assert_refused(r, "hostile.patch")
    assert snapshot(tmp_path) == before


# git mailinfo finds no patch in a message whose body is only "Binary files ... differ", and the
# import refuses a message without a patch, so that case is refused on this route.
MBOX_GAPS = {c: r for c, r in IMPORT_GAPS.items() if c != "binary-without-git-header"}


@pytest.mark.parametrize("case", _import_cases(MBOX_GAPS))
def test_hostile_patch_in_mbox_import_is_refused(env, tmp_path, monkeypatch, case):
    root = env.fresh(tmp_path, monkeypatch)
    mbox = tmp_path / "in.mbox"
    mbox.write_bytes(mbox_of(MODIFY_A, "good one") + b"\n" + mbox_of(HOSTILE[case], "evil one"))
    before = snapshot(tmp_path)
    r = run_cli(root, "import", "mbox", str(mbox), "--upstream", "up")
    assert snapshot(tmp_path) == before, r.text
    assert r.rc == 2, r.text
    assert "Traceback" not in r.text


@pytest.mark.parametrize("args", [("overlay", "/dev/zero", "--upstream", "up", "--path",
                                   "a.txt", "--name", "zero"), ("mbox", "/dev/zero")])
def test_an_import_of_input_that_never_ends_is_refused_in_bounded_memory(env, tmp_path,
                                                                          monkeypatch, args):
    """`import overlay /dev/zero` (or a model's weights named by mistake) and `import mbox
    /dev/zero` were read whole: the machine's memory exhausted, or, under a limit, an internal
    error (MemoryError, exit 70). Refused now, exit 2, naming the file, nothing written."""
    import resource

    root = env.fresh(tmp_path, monkeypatch)
    before = snapshot(tmp_path)

    def limited():
        resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))

    proc = subprocess.run([sys.executable, "-m", "patchforge", "--root", str(root), "import",
                           *args], capture_output=True, timeout=300, preexec_fn=limited)
    err = proc.stderr.decode("utf-8", "replace")
    assert proc.returncode == 2, (proc.returncode, err)
    assert "/dev/zero: larger than 256 MiB" in err, err
    assert snapshot(tmp_path) == before


def test_mbox_refusal_names_the_mbox(env, tmp_path, monkeypatch):
    root = env.fresh(tmp_path, monkeypatch)
    mbox = tmp_path / "in.mbox"
    mbox.write_bytes(mbox_of(HOSTILE["dotdot"]))
    r = run_cli(root, "import", "mbox", str(mbox), "--upstream", "up")
    _assert_refused(r, "in.mbox")


@pytest.mark.parametrize("path", ["../evil.txt", "/etc/passwd", ".git/config", "C:/x", "a\\..\\b",
                                  "pkg/../../x", "-rf", ".GIT./config", "x\ny"])
def test_import_overlay_refuses_unsafe_target_path(env, tmp_path, monkeypatch, path):
    root = env.fresh(tmp_path, monkeypatch)
    overlay = tmp_path / "overlay.py"
    overlay.write_bytes(b"x = 42\n")
    before = snapshot(tmp_path)
    r = run_cli(root, "import", "overlay", str(overlay), "--upstream", "up", "--path", path,
                "--name", "ov")
    assert r.rc == 2, r.text
    assert "unsafe path" in r.err and "overlay.py" in r.err
    assert snapshot(tmp_path) == before


# ---------------------------------------------------------------------------------------------
# Names that look like shell or options: plain data, never run

@pytest.mark.parametrize("name", [b"pkg/$(touch PWNED)", b"pkg/;touch PWNED;", b"pkg/-rf",
                                  b"pkg/`touch PWNED`", b"pkg/--output=PWNED"])
def test_shell_and_option_like_names_are_only_data(env, tmp_path, monkeypatch, name):
    root = env.fresh(tmp_path, monkeypatch)
    add_patch_file(root, "up", "odd.patch", _patch(_new_file(name)))
    monkeypatch.chdir(tmp_path)
    r = run_cli(root, "overlays")
    assert r.rc == 0, r.text
    assert overlay_file(root, name.decode()).read_bytes() == b"pwned\n"
    r = run_cli(root, "edit", "odd")
    assert r.rc == 0, r.text
    # Nothing was executed: no file named PWNED appeared anywhere (cwd, project, upstream's dir).
    hits = [p for p in tmp_path.rglob("PWNED*")] + [p for p in env.outside.rglob("*")]
    assert hits == []


# ---------------------------------------------------------------------------------------------
# Symlinks in the upstream

def test_patch_writing_through_upstream_symlinked_dir_never_writes_outside(env, tmp_path,
                                                                          monkeypatch):
    # linkdir -> OUTSIDE in the upstream; the patch creates linkdir/x. Whatever the command does,
    # nothing may appear in OUTSIDE (the edit worktree holds the real symlink).
    root = env.fresh(tmp_path, monkeypatch)
    add_patch_file(root, "up", "through.patch", _patch(_new_file(b"linkdir/x")))
    for args in (("overlays",), ("status",), ("edit", "through")):
        run_cli(root, *args)
        assert list(env.outside.iterdir()) == [], args


def test_patch_writing_through_upstream_symlinked_dir_is_refused(env, tmp_path, monkeypatch):
    root = env.fresh(tmp_path, monkeypatch)
    add_patch_file(root, "up", "through.patch", _patch(_new_file(b"linkdir/x")))
    before = snapshot(tmp_path)
    for args in (("overlays",), ("edit", "through")):
        r = run_cli(root, *args)
        assert r.rc == 2 and "symlink" in r.err, (args, r.text)
        assert snapshot(tmp_path) == before


def test_patch_editing_an_upstream_symlink_is_refused(env, tmp_path, monkeypatch):
    root = env.fresh(tmp_path, monkeypatch)
    add_patch_file(root, "up", "link.patch", _patch(
        b"diff --git a/alink b/alink\n--- a/alink\n+++ b/alink\n@@ -1 +1 @@\n-a.txt\n"
        b"\\ No newline at end of file\n+/etc/passwd\n\\ No newline at end of file\n"))
    before = snapshot(tmp_path)
    r = run_cli(root, "overlays")
    assert r.rc == 2 and "symlink" in r.err, r.text
    assert snapshot(tmp_path) == before


def test_refresh_refuses_a_symlink_made_in_the_worktree(env, tmp_path, monkeypatch):
    root = env.fresh(tmp_path, monkeypatch)
    add_patch_file(root, "up", "fix.patch", _patch(MODIFY_A))
    assert run_cli(root, "edit", "fix").rc == 0
    work = root / ".patchforge" / "work" / "up"
    (work / "pkg").mkdir(exist_ok=True)
    os.symlink("/etc/passwd", work / "pkg" / "evil")
    patch_before = (root / "series" / "up" / "fix.patch").read_bytes()
    # Not part of the patch: refused as a stray file; made part of it: refused as a symlink.
    r = run_cli(root, "refresh")
    assert r.rc == 2 and "pkg/evil" in r.err and "not part of the patch" in r.err, r.text
    assert run_cli(root, "add", "pkg/evil").rc == 0
    r = run_cli(root, "refresh")
    assert r.rc == 2 and "symlink" in r.err, r.text
    assert "pkg/evil" in r.err
    assert (root / "series" / "up" / "fix.patch").read_bytes() == patch_before


def test_an_upstream_symlink_leading_out_is_never_opened_for_an_edit(tmp_path_factory, tmp_path,
                                                                     monkeypatch):
    """`new --file L`, `edit NAME --file L` and `add L` of a file the upstream has as a symlink
    to a path outside its files: the worktree held the link as it is, the edit made there (an
    editor writes through a link) changed the file it leads to on this machine, and `refresh`
    said "unchanged (0 file(s))", exit 0: the fix in no patch. Each is refused, exit 2, naming
    the link and where it leads, before anything is written; a link inside the upstream's files
    (its edit names the file it makes) is taken as before."""
    env = build_template(tmp_path_factory, links={"pkg/abs.py": "@OUTSIDE@/host.py",
                                                  "pkg/up.py": "../../elsewhere.py",
                                                  "pkg/rel.py": "mod.py"})
    root = env.fresh(tmp_path, monkeypatch)
    before = snapshot(tmp_path)
    for link in ("pkg/abs.py", "pkg/up.py"):
        r = run_cli(root, "new", "fix", "--file", link, "-m", "fix")
        assert r.rc == 2 and f"{link} is a symlink in the upstream to " in r.err, r.text
        assert snapshot(tmp_path) == before
    assert run_cli(root, "new", "fix", "--no-edit", "-m", "fix").rc == 0
    patches = snapshot(root / "series")
    r = run_cli(root, "edit", "fix", "--file", "pkg/abs.py")
    assert r.rc == 2 and "pkg/abs.py is a symlink" in r.err, r.text
    assert not (root / ".patchforge" / "work" / "up").exists()
    assert run_cli(root, "edit", "fix").rc == 0
    r = run_cli(root, "add", "pkg/abs.py")
    assert r.rc == 2 and "pkg/abs.py is a symlink" in r.err, r.text
    assert not (root / ".patchforge" / "work" / "up" / "pkg" / "abs.py").is_symlink()
    assert run_cli(root, "add", "pkg/rel.py").rc == 0
    assert (root / ".patchforge" / "work" / "up" / "pkg" / "rel.py").is_symlink()
    assert snapshot(root / "series") == patches
    assert list(env.outside.iterdir()) == []


# ---------------------------------------------------------------------------------------------
# Zero-context hunks: they apply by line number alone, so only with an explicit option

ZERO_CONTEXT = (b"diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n"
                b"@@ -5 +5 @@\n-line5\n+LINE5\n")


def test_zero_context_hunk_is_flagged_by_the_parser():
    from patchforge.apply.diffparse import parse_diff

    (fp,) = parse_diff(ZERO_CONTEXT)
    assert fp.has_zero_context


def test_zero_context_hunk_is_refused_by_overlays(env, tmp_path, monkeypatch):
    root = env.fresh(tmp_path, monkeypatch)
    add_patch_file(root, "up", "u0.patch", _patch(ZERO_CONTEXT))
    before = snapshot(tmp_path)
    r = run_cli(root, "overlays")
    _assert_refused(r, "u0.patch")
    assert snapshot(tmp_path) == before


# ---------------------------------------------------------------------------------------------
# Huge inputs: bounded time and memory, refused without reading the claims


def _child_maxrss_mb(cmd_result_env) -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024


def test_fifty_megabyte_patch_with_a_lying_hunk_is_refused_in_bounded_memory(env, tmp_path,
                                                                           monkeypatch):
    # 50 MB of body lines under a hunk whose counts cover only the first few: the parser must stop
    # at the first line past the counts (not collect all of them), and the process stays small.
    root = env.fresh(tmp_path, monkeypatch)
    body = b"+" + b"y" * 99 + b"\n"
    diff = (b"diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n@@ -1,3 +1,4 @@\n"
            b" line1\n-line2\n+LINE2\n+extra\n line3\n" + body * (50 * 1024 * 1024 // len(body)))
    add_patch_file(root, "up", "huge.patch", _patch(diff))
    before = snapshot(tmp_path)
    # A child process, so its peak memory is measured on its own.
    proc = subprocess.run(
        [sys.executable, "-c",
         "import resource, sys\n"
         "from patchforge.cli import main\n"
         "try:\n    main(sys.argv[1:])\n"
         "except SystemExit as e:\n"
         "    print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)\n"
         "    raise\n",
         "--root", str(root), "overlays"], capture_output=True, env=dict(os.environ))
    err = proc.stderr.decode()
    assert proc.returncode == 2, err
    assert re.search(r"huge\.patch:\d+: hunk body is longer", err), err
    peak_mb = int(err.strip().splitlines()[-1]) / 1024
    # The file is read once and split into lines; 12x its size is far above what that needs and
    # far below what expanding the claims or copying per line would take.
    assert peak_mb < 600, f"peak RSS {peak_mb:.0f} MB for a 50 MB patch"
    assert snapshot(tmp_path) == before


def test_hunk_claiming_two_to_the_31_lines_fails_before_reading_on(env, tmp_path, monkeypatch):
    root = env.fresh(tmp_path, monkeypatch)
    diff = (b"diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n@@ -1,2147483647 +1,2147483647 @@\n"
            + b" line1\n" * 200000)
    add_patch_file(root, "up", "claims.patch", _patch(diff))
    before = snapshot(tmp_path)
    r = run_cli(root, "overlays")
    _assert_refused(r, "claims.patch")
    assert "promises" in r.err or "absurd" in r.err
    assert snapshot(tmp_path) == before


def test_hostile_series_entry_names_are_refused(env, tmp_path, monkeypatch):
    # The series file itself is input too: an entry naming a file outside series/<upstream>/.
    root = env.fresh(tmp_path, monkeypatch)
    (tmp_path / "outside.patch").write_bytes(_patch(MODIFY_A))
    (root / "series" / "up").mkdir(parents=True, exist_ok=True)
    (root / "series" / "up" / "series").write_bytes(b"../../../outside.patch\n")
    before = snapshot(tmp_path)
    for args in (("overlays",), ("status",)):
        r = run_cli(root, *args)
        assert r.rc == 2, (args, r.text)
        assert "series" in r.err
    assert snapshot(tmp_path) == before
