"""Tests for patchforge.apply.diffparse: real diffs made by git, format-patch and quilt round-trip
byte for byte and parse into the right files; every refused class of hostile input names the file
and the line."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from helpers.git import git
from hypothesis import given, settings
from hypothesis import strategies as st

from patchforge.apply.diffparse import (
    FilePatch, c_quote, c_unquote, format_file_patch, parse_diff, parse_diff_full,
    reverse_file_patch, validate_path,
)
from patchforge.apply.hunks import apply_file_patch
from patchforge.apply.stats import diffstat
from patchforge.errors import InputError, UnsafePathError

LATIN1_NAME = os.fsdecode(b"n\xe9e.txt")  # not UTF-8: survives as a surrogate escape

BASE = {
    "crlf.txt": b"one\r\ntwo\r\nthree\r\n",
    "nonl_old.txt": b"a\nb",
    "nonl_new.txt": b"a\nb\n",
    "nonl_both.txt": b"x\ny",
    "latin.txt": b"caf\xe9\n\xff\xfe\nend\n",
    LATIN1_NAME: b"old\n",
    "caf\u00e9.txt": b"unicode name\n",
    "odd.txt": b"page1\x0cpage2\nline\xe2\x80\xa8sep\nnel\x85here\nkeep\n",
    "grow.txt": b"",
    "shrink.txt": b"y\n",
    "deleted.txt": b"bye\nbye\n",
    "old_name.py": b"".join(b"line %d\n" % k for k in range(12)),
    "script.sh": b"#!/bin/sh\necho hi\n",
    "dashes.txt": b"a\n- \nb\n",
}
NEW = {
    "crlf.txt": b"one\r\n2\r\nthree\r\n",
    "nonl_old.txt": b"a\nb\nc\n",
    "nonl_new.txt": b"a\nB",
    "nonl_both.txt": b"x\nz",
    "latin.txt": b"caf\xe9\n\xfe\xff\nend\n",
    LATIN1_NAME: b"new\n",
    "caf\u00e9.txt": b"unicode name changed\n",
    "odd.txt": b"page1\x0cpage2\nline\xe2\x80\xa8SEP\nnel\x85here\nkeep\n",
    "grow.txt": b"x\n",
    "shrink.txt": b"",
    "created.txt": b"hello\r\nworld",
    "new_empty.txt": b"",
    "new_name.py": b"".join(b"line %d\n" % k if k != 5 else b"LINE 5\n" for k in range(12)),
    "script.sh": b"#!/bin/sh\necho hi\n",
    "dashes.txt": b"a\nb\n",
}


@pytest.fixture
def git_diff(make_git_repo) -> tuple[bytes, Path]:
    """A diff made by git itself covering every kind of change we must carry."""
    repo, _ = make_git_repo(BASE)
    for name in BASE:
        if name not in NEW:
            (repo / name).unlink()
    for name, data in NEW.items():
        (repo / name).write_bytes(data)
    os.chmod(repo / "script.sh", 0o755)
    git(repo, "add", "-A")
    out = subprocess.run(["git", "-c", "core.quotepath=true", "diff", "--cached", "-M",
                          "--full-index"], cwd=repo, capture_output=True, check=True).stdout
    return out, repo


def by_path(files: tuple[FilePatch, ...]) -> dict[str, FilePatch]:
    return {fp.path: fp for fp in files}


def test_git_diff_round_trips_byte_exact(git_diff):
    data, _ = git_diff
    parsed = parse_diff_full(data, source="x.patch")
    assert parsed.to_bytes() == data
    assert b"".join(fp.raw for fp in parsed.files) == data
    assert parsed.trailing == b""


def test_git_diff_files_and_flags(git_diff):
    data, _ = git_diff
    files = by_path(parse_diff(data))
    assert set(files) == {n for n in set(BASE) | set(NEW) if BASE.get(n) != NEW.get(n)
                          or n == "script.sh"} - {"old_name.py"}
    assert files["created.txt"].is_new and files["created.txt"].old_path is None
    assert files["new_empty.txt"].is_new and files["new_empty.txt"].hunks == ()
    assert files["deleted.txt"].is_delete and files["deleted.txt"].path == "deleted.txt"
    ren = files["new_name.py"]
    assert ren.is_rename and ren.old_path == "old_name.py" and ren.similarity is not None
    assert len(ren.hunks) == 1
    mode = files["script.sh"]
    assert (mode.old_mode, mode.new_mode, mode.hunks) == ("100644", "100755", ())
    assert files["nonl_old.txt"].hunks[0].old_no_newline
    assert not files["nonl_old.txt"].hunks[0].new_no_newline
    assert files["nonl_new.txt"].hunks[0].new_no_newline
    both = files["nonl_both.txt"].hunks[0]
    assert both.old_no_newline and both.new_no_newline
    assert LATIN1_NAME in files and "caf\u00e9.txt" in files
    # Removing the line "- " makes the hunk line "-- ": the counts say it is a removed line.
    assert b"-- \n" in files["dashes.txt"].hunks[0].lines
    # CR, form feed, U+2028 and NEL stay inside lines.
    assert b"-two\r\n" in files["crlf.txt"].hunks[0].lines
    assert b"-line\xe2\x80\xa8sep\n" in files["odd.txt"].hunks[0].lines
    assert b" page1\x0cpage2\n" in files["odd.txt"].hunks[0].lines


def test_git_diff_applies_to_every_file(git_diff):
    data, _ = git_diff
    for fp in parse_diff(data):
        old = BASE.get(fp.old_path) if fp.old_path is not None else None
        result = apply_file_patch(old, fp)
        assert result.ok, fp.path
        assert result.worst == "exact"
        assert result.content == (NEW.get(fp.new_path) if fp.new_path is not None else None)
        back = apply_file_patch(result.content, fp, reverse=True)
        assert back.ok and back.content == old, fp.path


def test_reversed_patch_is_a_valid_diff_that_git_applies(git_diff, tmp_path):
    data, repo = git_diff
    files = parse_diff(data)
    rev = b"".join(format_file_patch(reverse_file_patch(fp)) for fp in files)
    assert len(parse_diff(rev)) == len(files)
    # The index holds the new state; git must accept the reversed diff against it.
    subprocess.run(["git", "apply", "--check", "--cached"], cwd=repo, input=rev, check=True,
                   capture_output=True)


def test_deleting_an_empty_file(make_git_repo):
    repo, _ = make_git_repo({"empty.txt": b"", "k.txt": b"k\n"})
    (repo / "empty.txt").unlink()
    git(repo, "add", "-A")
    out = subprocess.run(["git", "diff", "--cached"], cwd=repo, capture_output=True,
                         check=True).stdout
    (fp,) = parse_diff(out)
    assert fp.is_delete and fp.hunks == () and fp.old_mode == "100644"
    assert apply_file_patch(b"", fp).content is None
    assert not apply_file_patch(b"not empty\n", fp).ok
    assert apply_file_patch(None, fp, reverse=True).content == b""


def test_format_patch_keeps_signature_as_trailing(make_git_repo):
    repo, _ = make_git_repo({"a.txt": b"1\n2\n3\n"})
    (repo / "a.txt").write_bytes(b"1\n- \n3\n")
    git(repo, "commit", "-qam", "change")
    out = subprocess.run(["git", "format-patch", "-1", "--stdout"], cwd=repo,
                         capture_output=True, check=True).stdout
    start = out.index(b"diff --git")
    parsed = parse_diff_full(out[start:])
    assert parsed.to_bytes() == out[start:]
    assert parsed.trailing.startswith(b"-- \n")
    assert parsed.files[0].hunks[0].lines == (b" 1\n", b"-2\n", b"+- \n", b" 3\n")


def test_quilt_refresh_output(tmp_path, monkeypatch):
    if shutil.which("quilt") is None:
        pytest.skip("quilt is not installed (apt-get install quilt)")
    work = tmp_path / "proj"
    (work / "src").mkdir(parents=True)
    (work / "src" / "x.c").write_bytes(b"int a;\nint b;\n")
    (work / "src" / "gone.c").write_bytes(b"bye\n")
    monkeypatch.setenv("QUILT_PATCHES", "patches")
    monkeypatch.setenv("QUILTRC", "/dev/null")

    def quilt(*args: str) -> None:
        subprocess.run(["quilt", *args], cwd=work, check=True, capture_output=True)
    quilt("new", "fix.patch")
    quilt("add", "src/x.c", "src/new.c", "src/gone.c")
    (work / "src" / "x.c").write_bytes(b"int a;\nint c;\n")
    (work / "src" / "new.c").write_bytes(b"int n;\n")
    (work / "src" / "gone.c").unlink()
    quilt("refresh", "--no-timestamps")
    data = (work / "patches" / "fix.patch").read_bytes()
    parsed = parse_diff_full(data)
    assert parsed.to_bytes() == data
    files = by_path(parsed.files)
    assert set(files) == {"src/x.c", "src/new.c", "src/gone.c"}
    assert files["src/new.c"].is_new and files["src/gone.c"].is_delete


def test_plain_diff_with_timestamps_and_index_lines():
    data = (b"Index: pkg/mod.py\n"
            b"===================================================================\n"
            b"--- pkg.orig/mod.py\t2024-01-01 00:00:00.000000000 +0000\n"
            b"+++ pkg/mod.py\t2024-01-02 00:00:00.000000000 +0000\n"
            b"@@ -1 +1 @@\n-a\n+b\n")
    (fp,) = parse_diff(data)
    assert (fp.old_path, fp.new_path, fp.line_no) == ("mod.py", "mod.py", 3)
    assert fp.raw == data


def test_c_quoting_round_trip():
    for name in (b"a/\xc3\xa9", b'a/"q"', b"a/tab\there", b"a/back\\slash", b"a/\xff"):
        assert c_unquote(c_quote(name)) == name
    assert c_unquote(b'"a/\\303\\251"') == "a/\u00e9".encode()


def test_zero_context_hunks_are_flagged():
    data = b"--- a/f\n+++ b/f\n@@ -5 +5 @@\n-x\n+y\n"
    (fp,) = parse_diff(data)
    assert fp.hunks[0].zero_context and fp.has_zero_context
    (top,) = parse_diff(b"--- a/f\n+++ b/f\n@@ -1 +1 @@\n-x\n+y\n")
    assert not top.has_zero_context


def test_binary_patches_are_read_and_applied_by_blob_id(make_git_repo):
    repo, _ = make_git_repo({"blob.bin": b"\0\1\2"})
    (repo / "blob.bin").write_bytes(b"\0\1\3")
    (repo / "t.txt").write_bytes(b"t\n")
    git(repo, "add", "-A")
    out = subprocess.run(["git", "diff", "--cached", "--binary"], cwd=repo, capture_output=True,
                         check=True).stdout
    files = by_path(parse_diff(out))
    assert files["blob.bin"].is_binary and not files["t.txt"].is_binary
    assert apply_file_patch(b"\0\1\2", files["blob.bin"]).content == b"\0\1\3"
    refused = apply_file_patch(b"\0\1\4", files["blob.bin"])
    assert not refused.ok and "blob" in refused.error
    # Without its data a binary change cannot be carried: refused at its line.
    out = subprocess.run(["git", "diff", "--cached"], cwd=repo, capture_output=True,
                         check=True).stdout
    with pytest.raises(InputError, match="without its data") as info:
        parse_diff(out, source="d.patch")
    assert info.value.line == out.split(b"\n").index(b"Binary files a/blob.bin and b/blob.bin "
                                                      b"differ") + 1


def test_empty_input_is_an_empty_diff():
    assert parse_diff(b"") == ()
    assert parse_diff(b"\n\n") == ()


# ---------------------------------------------------------------------------------------------
# Hostile inputs: one test per refused class; each must name the source and the line.

def refused(data: bytes, line: int, *, error=InputError, match: str | None = None,
            first_line: int = 1) -> InputError:
    with pytest.raises(error, match=match) as info:
        parse_diff(data, source="evil.patch", first_line=first_line)
    assert info.value.path == "evil.patch"
    assert info.value.line == line, str(info.value)
    return info.value


def one(path: bytes, *, other: bytes = b"ok") -> bytes:
    return (b"diff --git a/ok b/ok\n--- a/ok\n+++ b/ok\n@@ -1 +1 @@\n-a\n+b\n"
            + b"--- a/" + other + b"\n+++ b/" + path + b"\n@@ -1 +1 @@\n-a\n+b\n")


@pytest.mark.parametrize("name, why", [
    (b"../etc/passwd", "'\\.\\.'"),
    (b"x/../../y", "'\\.\\.'"),
    (b".git/config", ".git"),
    (b"sub/.GIT/hooks/post-checkout", ".git"),
    (b".git./config", ".git"),
    (b".git /config", ".git"),
    (b"GIT~1/config", ".git"),
    (b".g\xe2\x80\x8cit/config", ".git"),
    (b"dir\\file", "backslash"),
    (b"C:/Windows/x", "drive"),
    (b"-rf", "'-'"),
    (b"a//b", "empty"),
])
def test_unsafe_paths_refused(name, why):
    refused(one(name), 8, error=UnsafePathError, match=why)


def test_absolute_path_refused():
    refused(b"--- a/x\n+++ /etc/passwd\n@@ -1 +1 @@\n-a\n+b\n", 2, error=UnsafePathError,
            match="cannot strip|absolute")
    refused(b"--- a/x\n+++ b//etc/passwd\n@@ -1 +1 @@\n-a\n+b\n", 2, error=UnsafePathError,
            match="absolute")


def test_unc_path_refused():
    refused(b"--- a/x\n+++ b/\\\\server\\share\\f\n@@ -1 +1 @@\n-a\n+b\n", 2,
            error=UnsafePathError, match="backslash")


def test_nul_and_newline_in_quoted_names_refused():
    refused(b'diff --git "a/x\\000y" "b/x\\000y"\n', 1, error=UnsafePathError, match="NUL")
    refused(b'diff --git a/x b/x\nrename from x\nrename to "y\\nz"\n', 3,
            error=UnsafePathError, match="newline")


def test_rename_into_git_dir_refused():
    refused(b"diff --git a/x b/x\nsimilarity index 100%\nrename from x\nrename to .git/hooks/pre\n",
            4, error=UnsafePathError)


def link(path: bytes, target: bytes, *, header: bytes = b"new file mode 120000\n") -> bytes:
    return (b"diff --git a/" + path + b" b/" + path + b"\n" + header + b"--- /dev/null\n+++ b/"
            + path + b"\n@@ -0,0 +1 @@\n+" + target + b"\n\\ No newline at end of file\n")


def test_symlink_mode_refused():
    refused(link(b"l", b"/etc"), 2, error=UnsafePathError, match="symlink")


@pytest.mark.parametrize("path,target", [
    (b"l", b"/etc/passwd"), (b"l", b".."), (b"d/l", b"../../x"), (b"l", b"../up/x"),
    (b"l", b".git/config"), (b"d/l", b"../.GIT/hooks"), (b"l", b"."), (b"l", b"C:/x"),
    (b"l", b"a\\..\\..\\x")])
def test_symlink_leaving_the_upstream_refused(path, target):
    refused(link(path, target), 2, error=UnsafePathError, match="symlink")


def test_symlink_inside_the_upstream_is_a_link():
    fp, = parse_diff(link(b"pkg/l", b"../other/x.py"), source="ok.patch")
    assert (fp.new_path, fp.new_mode) == ("pkg/l", "120000")
    # Retargeted: git writes only an index line with the mode.
    fp, = parse_diff(b"diff --git a/l b/l\nindex 1234567..89abcde 120000\n--- a/l\n+++ b/l\n"
                     b"@@ -1 +1 @@\n-a.txt\n\\ No newline at end of file\n+b.txt\n"
                     b"\\ No newline at end of file\n", source="ok.patch")
    assert (fp.old_mode, fp.new_mode) == ("120000", "120000")
    refused(b"diff --git a/l b/l\nindex 1234567..89abcde 120000\n--- a/l\n+++ b/l\n"
            b"@@ -1 +1 @@\n-a.txt\n\\ No newline at end of file\n+/etc\n"
            b"\\ No newline at end of file\n", 2, error=UnsafePathError, match="symlink")


def test_file_turning_into_a_symlink_refused():
    refused(b"diff --git a/a b/a\nold mode 100644\nnew mode 120000\n", 3,
            error=UnsafePathError, match="symlink")


def test_ed_script_refused():
    refused(b"3a\nhello\n.\nw\nq\n", 1, match="ed script")


def test_normal_diff_refused():
    refused(b"2c2\n< a\n---\n> b\n", 1, match="normal diff")


def test_context_diff_refused():
    refused(b"*** a/x\n--- b/x\n***************\n*** 1 ****\n! a\n--- 1 ----\n! b\n", 1,
            match="context diff")


def test_prose_is_not_a_diff():
    refused(b"just some text\n", 1, match="not a unified diff")


def test_ghost_hunk_swallowing_next_header_refused():
    data = (b"--- a/x\n+++ b/x\n@@ -1,3 +1,3 @@\n-a\n+b\n"
            b"--- a/y\n+++ b/y\n@@ -1 +1 @@\n-c\n+d\n")
    refused(data, 3, match="next file header")


def test_hunk_body_shorter_than_counts_refused():
    data = b"diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1,3 +1,3 @@\n-a\n+b\ndiff --git a/y b/y\n"
    refused(data, 7, match="shorter")


def test_hunk_body_longer_than_counts_refused():
    data = b"--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n+sneaky\n"
    refused(data, 6, match="longer")


def test_absurd_counts_refused():
    refused(b"--- a/x\n+++ b/x\n@@ -1,999999999 +1 @@\n-a\n+b\n", 3, match="promises")
    refused(b"--- a/x\n+++ b/x\n@@ -1,99999999999999 +1 @@\n-a\n", 3, match="absurd")


def test_hunks_out_of_order_refused():
    data = (b"--- a/x\n+++ b/x\n@@ -10,2 +10,2 @@\n a\n-b\n+c\n"
            b"@@ -5,2 +5,2 @@\n a\n-b\n+c\n")
    refused(data, 7, match="out of order")


def test_overlapping_hunks_refused():
    data = (b"--- a/x\n+++ b/x\n@@ -1,3 +1,3 @@\n a\n-b\n+c\n d\n"
            b"@@ -3,2 +3,2 @@\n d\n-e\n+f\n")
    refused(data, 8, match=r"x: hunk 2 \(line 8\) starts at old line 3, inside hunk 1 "
                           r"\(line 3\), which ends at 3: the two hunks overlap on old line 3$")


def test_an_insertion_inside_the_hunk_before_is_said_as_an_insertion():
    """A hunk that only adds lines (`-5,0`, a `diff -U0` insertion after old line 5) inside
    the one before: said as an insertion after that line, not as the empty range 6-5."""
    data = (b"--- a/x\n+++ b/x\n@@ -3,5 +3,5 @@\n a\n b\n-c\n+C\n d\n e\n"
            b"@@ -5,0 +6,1 @@\n+new\n")
    refused(data, 10, match=r"x: hunk 2 \(line 10\) inserts after old line 5, inside hunk 1 "
                            r"\(line 3\), which has old lines 3-7: the two hunks overlap$")


def test_hunk_without_header_refused():
    refused(b"@@ -1 +1 @@\n-a\n+b\n", 1, match="without a file header")


def test_truncated_hunk_refused():
    refused(b"--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n a\n-b\n+c", 6, match="middle")


def test_error_lines_count_from_first_line():
    refused(b"\n--- a/x\n+++ b/../x\n@@ -1 +1 @@\n-a\n+b\n", 43, error=UnsafePathError,
            first_line=41)


def test_mode_only_and_rename_only_sections_are_fine():
    data = (b"diff --git a/s.sh b/s.sh\nold mode 100644\nnew mode 100755\n"
            b"diff --git a/p q b/p q\nsimilarity index 100%\nrename from p q\nrename to r s\n")
    a, b = parse_diff(data)
    assert (a.path, a.new_mode, a.hunks) == ("s.sh", "100755", ())
    assert (b.old_path, b.new_path, b.is_rename) == ("p q", "r s", True)


def test_diffstat_agrees_with_parser_and_git(git_diff):
    data, repo = git_diff
    files = parse_diff(data)
    expected = [(fp.path,
                 sum(1 for h in fp.hunks for x in h.lines if x[:1] == b"+"),
                 sum(1 for h in fp.hunks for x in h.lines if x[:1] == b"-")) for fp in files]
    assert diffstat(data) == expected
    short = git(repo, "diff", "--cached", "-M", "--shortstat")
    added = sum(a for _, a, _ in expected)
    removed = sum(r for _, _, r in expected)
    assert f"{added} insertions(+)" in short and f"{removed} deletions(-)" in short


def test_validate_path_for_user_given_paths():
    assert validate_path("vllm/x.py", source="--path") == "vllm/x.py"
    with pytest.raises(UnsafePathError) as info:
        validate_path("../x.py", source="--path")
    assert info.value.path == "--path" and info.value.line is None


DIFF_PIECES = [b"diff --git a/f b/f\n", b"--- a/f\n", b"+++ b/f\n", b"--- /dev/null\n",
               b"+++ /dev/null\n", b"@@ -1 +1 @@\n", b"@@ -1,2 +1,2 @@ ctx\n", b"@@ -0,0 +1 @@\n",
               b"@@ -1 +0,0 @@\n", b" a\n", b"-a\n", b"+b\n", b"\n", b"\\ No newline at end of file\n",
               b"new file mode 100644\n", b"deleted file mode 100644\n", b"rename from f\n",
               b"rename to g\n", b"similarity index 90%\n", b"index 1..2 100644\n", b"-- \n",
               b"2.39.5\n", b"Index: f\n", b"====\n", b"GIT binary patch\n", b"literal 0\n",
               b"Binary files a/f and b/f differ\n", b'diff --git "a/\\303" "b/\\303"\n',
               b"junk\r\n", b"+no newline"]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(DIFF_PIECES), max_size=14))
def test_any_input_is_parsed_exactly_or_refused_cleanly(pieces):
    data = b"".join(pieces)
    try:
        parsed = parse_diff_full(data, source="fuzz")
    except InputError as exc:
        assert exc.path == "fuzz" and exc.line is not None and 1 <= exc.line <= data.count(b"\n") + 1
        return
    assert parsed.to_bytes() == data
    for fp in parsed.files:
        if not fp.is_binary:
            old = b"".join(x for h in fp.hunks for x in h.old_lines()) if not fp.is_new else None
            apply_file_patch(old, fp)  # must not raise


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="ab/ ", max_size=16), st.text(alphabet="ab/ ", max_size=16))
def test_a_diff_git_line_splits_where_both_names_are_the_same_file(a, b):
    """The names of an unquoted `diff --git` line: the first space where both sides name the
    same file (git's rule for names holding spaces), else the only space, else neither;
    whatever the spaces, as a split tried at every space of the line gives them."""
    from patchforge.apply.diffparse import _Parser

    rest = f"a/{a} b/{b}".encode()
    spaces = [k for k in range(len(rest)) if rest[k] == 0x20]
    wanted = next(((rest[:k], rest[k + 1:]) for k in spaces
                   if b"/" in rest[:k] and b"/" in rest[k + 1:]
                   and rest[:k].split(b"/", 1)[1] == rest[k + 1:].split(b"/", 1)[1]),
                  (rest[:spaces[0]], rest[spaces[0] + 1:]) if len(spaces) == 1 else (None, None))
    assert _Parser(b"", "p", 1).split_git_names(rest, 0) == wanted


PLAIN_LINES = [b" a\n", b"-a\n", b"+b\n", b"\n", b"-- x\n", b"---\n", b"+--- x\n"]
BODY_LINES = PLAIN_LINES + [b"--- a/f\n", b"+++ b/f\n", b"\\ No newline at end of file\n",
                            b"@@ -1 +1 @@\n", b"junk\n", b" no newline", b"+no newline",
                            b"-no newline"]


@settings(max_examples=800, deadline=None)
@given(st.lists(st.sampled_from(PLAIN_LINES), max_size=30),
       st.lists(st.sampled_from(BODY_LINES), max_size=6), st.integers(0, 12), st.integers(0, 12),
       st.integers(0, 3), st.one_of(st.none(), st.integers(0, 36)))
def test_a_hunks_plain_lines_are_found_from_their_first_bytes_as_line_by_line(plain, rest, old,
                                                                             new, at, cut):
    """Where a hunk body's plain lines end, and what the counts expect after them, told from
    the lines' first bytes and the counts' sum (`_plain_lines`) as the loop over each line
    tells it (`_plain_run`), for any lines and counts (`cut`: the counts of the first lines, as
    a hunk's header has them), from any line on."""
    from patchforge.apply.diffparse import _Parser, _plain_lines, _plain_run

    lines = plain + rest
    if cut is not None:
        kinds = [line[:1] if line != b"\n" else b" " for line in lines[:cut]]
        old = sum(kind in (b" ", b"-") for kind in kinds) or old
        new = sum(kind in (b" ", b"+") for kind in kinds) or new
    parser = _Parser(b"@@ -1 +1 @@\n" * at + b"".join(lines), "p", 1)
    start = min(at, len(parser.lines))
    assert _plain_lines(parser.lines, parser.data, parser.offsets, start, old, new) == \
        _plain_run(parser.lines, start, old, new)


SECTIONS = {
    "change": b"diff --git a/{a} b/{a}\n--- a/{a}\n+++ b/{a}\n@@ -1 +1 @@\n-a\n+b\n",
    "delete": b"diff --git a/{a} b/{a}\ndeleted file mode 100644\n--- a/{a}\n+++ /dev/null\n"
              b"@@ -1 +0,0 @@\n-a\n",
    "create": b"diff --git a/{b} b/{b}\nnew file mode 100644\n--- /dev/null\n+++ b/{b}\n"
              b"@@ -0,0 +1 @@\n+b\n",
    "rename": b"diff --git a/{a} b/{b}\nsimilarity index 100%\nrename from {a}\nrename to {b}\n",
    "copy": b"diff --git a/{a} b/{b}\nsimilarity index 100%\ncopy from {a}\ncopy to {b}\n",
}


@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(sorted(SECTIONS)), st.sampled_from("fgh"),
                          st.sampled_from("fgh")), max_size=8))
def test_a_section_is_checked_against_the_earlier_ones_kept_as_the_diff_is_read(sections):
    """A section that writes a file an earlier one writes, or changes a file an earlier one
    deleted or renamed away, is refused at its first line, as a check against every earlier
    section says; the parser keeps those sections by path as it reads (`written`, `gone`)
    rather than making both maps again from all the earlier sections for each one."""
    from patchforge.apply.diffparse import _Parser

    texts = [SECTIONS[kind].replace(b"{a}", a.encode()).replace(b"{b}", b.encode())
             for kind, a, b in sections if kind not in ("rename", "copy") or a != b]
    files = [parse_diff_full(text).files[0] for text in texts]
    refused_at = None
    line = 1
    for k, fp in enumerate(files):
        earlier = files[:k]
        if (fp.new_path is not None and fp.new_path in {f.new_path for f in earlier}) or \
                (fp.old_path is not None and fp.old_path in
                 {f.old_path for f in earlier if f.old_path != f.new_path and not f.is_copy}):
            refused_at = line
            break
        line += texts[k].count(b"\n")
    parser = _Parser(b"".join(texts), "p", 1)
    if refused_at is not None:
        with pytest.raises(InputError) as info:
            parser.parse()
        assert info.value.line == refused_at and ("changed again" in str(info.value)
                                                  or "is changed after" in str(info.value))
        return
    parsed = parser.parse()
    assert {path: f.line_no for path, f in parser.written.items()} == \
        {f.new_path: f.line_no for f in parsed.files if f.new_path is not None}
    assert {path: f.line_no for path, f in parser.gone.items()} == \
        {f.old_path: f.line_no for f in parsed.files if f.old_path is not None
         and f.old_path != f.new_path and not f.is_copy}
