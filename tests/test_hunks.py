"""Tests for patchforge.apply.hunks: exact, offset, fuzz and failed hunks checked against GNU patch,
byte-exact content (CRLF, no final newline, non-UTF-8, empty files), creation and deletion, and a
property test over random files diffed by git itself."""
from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from patchforge.apply.diffparse import parse_diff
from patchforge.apply.hunks import apply_file_patch

BASE = b"".join(b"line %02d\n" % k for k in range(1, 31))


def git_diff(old: bytes | None, new: bytes | None, *, context: int = 3) -> bytes:
    """`git diff --no-index` between two byte strings, as a diff of path f (p1 names a/f b/f)."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "a").mkdir()
        (root / "b").mkdir()
        if old is not None:
            (root / "a" / "f").write_bytes(old)
        if new is not None:
            (root / "b" / "f").write_bytes(new)
        left = "a/f" if old is not None else "/dev/null"
        right = "b/f" if new is not None else "/dev/null"
        out = subprocess.run(["git", "diff", "--no-index", "--no-color", "--text",
                              f"-U{context}", "--no-prefix", left, right], cwd=root,
                             capture_output=True)
        assert out.returncode in (0, 1), out.stderr
        return out.stdout


def edit(data: bytes, old: bytes, new: bytes) -> bytes:
    assert data.count(old) == 1
    return data.replace(old, new)


def gnu_patch(target: bytes, diff: bytes, tmp_path: Path) -> tuple[bytes, str]:
    """Apply with GNU patch -p1 (fuzz 2) and return the result and its report."""
    if shutil.which("patch") is None:
        pytest.skip("GNU patch is not installed (apt-get install patch)")
    work = tmp_path / "gnu"
    work.mkdir(exist_ok=True)
    (work / "f").write_bytes(target)
    out = subprocess.run(["patch", "-p1", "-F2", "--no-backup-if-mismatch", "-r", "-"],
                         cwd=work, input=diff, capture_output=True)
    return (work / "f").read_bytes(), out.stdout.decode()


def test_exact():
    new = edit(BASE, b"line 10\n", b"line ten\n")
    (fp,) = parse_diff(git_diff(BASE, new))
    res = apply_file_patch(BASE, fp)
    assert res.ok and res.worst == "exact" and res.content == new
    assert res.hunks[0].at_line == 7 and res.hunks[0].offset == 0


def test_offset_matches_gnu_patch(tmp_path):
    new = edit(BASE, b"line 20\n", b"line twenty\n")
    diff = git_diff(BASE, new)
    (fp,) = parse_diff(diff)
    moved = b"extra 1\nextra 2\nextra 3\n" + BASE
    res = apply_file_patch(moved, fp)
    assert res.ok and res.worst == "offset"
    assert (res.hunks[0].status, res.hunks[0].offset, res.hunks[0].fuzz) == ("offset", 3, 0)
    gnu, report = gnu_patch(moved, diff, tmp_path)
    assert res.content == gnu == b"extra 1\nextra 2\nextra 3\n" + new
    assert "offset 3 lines" in report


def test_negative_offset():
    new = edit(BASE, b"line 20\n", b"line twenty\n")
    (fp,) = parse_diff(git_diff(BASE, new))
    shorter = edit(BASE, b"line 02\nline 03\n", b"")
    res = apply_file_patch(shorter, fp)
    assert (res.hunks[0].status, res.hunks[0].offset) == ("offset", -2)
    assert res.content == edit(new, b"line 02\nline 03\n", b"")


def test_later_hunks_follow_the_first_offset():
    new = edit(edit(BASE, b"line 05\n", b"five\n"), b"line 25\n", b"twenty-five\n")
    (fp,) = parse_diff(git_diff(BASE, new))
    assert len(fp.hunks) == 2
    moved = b"x\nx\n" + BASE
    res = apply_file_patch(moved, fp)
    assert [h.offset for h in res.hunks] == [2, 2]
    assert res.content == b"x\nx\n" + new


def test_fuzz_matches_gnu_patch(tmp_path):
    new = edit(BASE, b"line 15\n", b"line fifteen\n")
    diff = git_diff(BASE, new)
    (fp,) = parse_diff(diff)
    # The first context line changed upstream: only reduced context finds the hunk.
    drifted = edit(BASE, b"line 12\n", b"line twelve\n")
    res = apply_file_patch(drifted, fp)
    assert res.ok and res.worst == "fuzz"
    assert (res.hunks[0].status, res.hunks[0].fuzz, res.hunks[0].offset) == ("fuzz", 1, 0)
    gnu, report = gnu_patch(drifted, diff, tmp_path)
    assert res.content == gnu == edit(new, b"line 12\n", b"line twelve\n")
    assert "fuzz 1" in report
    # With fuzz forbidden the same hunk fails.
    strict = apply_file_patch(drifted, fp, max_fuzz=0)
    assert not strict.ok and strict.content == drifted


def test_failed_hunk_leaves_the_others_intact(tmp_path):
    new = edit(edit(BASE, b"line 05\n", b"five\n"), b"line 25\n", b"twenty-five\n")
    diff = git_diff(BASE, new)
    (fp,) = parse_diff(diff)
    conflicting = edit(BASE, b"line 05\n", b"upstream changed five\n")
    res = apply_file_patch(conflicting, fp)
    assert not res.ok and res.worst == "failed"
    assert [h.status for h in res.hunks] == ["failed", "exact"]
    assert res.hunks[0].at_line is None
    expected = edit(conflicting, b"line 25\n", b"twenty-five\n")
    gnu, report = gnu_patch(conflicting, diff, tmp_path)
    assert res.content == gnu == expected
    assert "FAILED" in report


def test_nearest_offset_wins_forward_first(tmp_path):
    base = b"0\n1\nx\nx\nx\nx\na\nb\nc\nd\ne\nf\ng\ny\ny\n"
    new = edit(base, b"d\n", b"D\n")
    diff = git_diff(base, new, context=1)
    (fp,) = parse_diff(diff)
    # "c d e" was at line 9; now it is both 2 lines before and 2 lines after. Like GNU patch,
    # look forward first at equal distance.
    target = b"0\n1\nx\nx\nx\nx\nc\nd\ne\nx\nc\nd\ne\ny\n"
    res = apply_file_patch(target, fp)
    assert res.ok and res.hunks[0].offset == 2
    gnu, _ = gnu_patch(target, diff, tmp_path)
    assert res.content == gnu
    # Nearest wins over forward: 1 before beats 4 after.
    target2 = b"0\n1\nx\nx\nx\nx\nx\nc\nd\ne\nx\nx\nc\nd\ne\n"
    res2 = apply_file_patch(target2, fp)
    assert res2.hunks[0].offset == -1


def test_crlf_is_compared_byte_for_byte():
    base = BASE.replace(b"\n", b"\r\n")
    new = edit(base, b"line 10\r\n", b"line ten\r\n")
    (fp,) = parse_diff(git_diff(base, new))
    assert apply_file_patch(base, fp).content == new
    # An LF-only file is not the same file: the hunk must not apply.
    assert not apply_file_patch(BASE, fp).ok


@pytest.mark.parametrize("old, new", [
    (b"a\nb", b"a\nb\n"),
    (b"a\nb\n", b"a\nb"),
    (b"a\nb", b"a\nc"),
    (b"", b"x\n"),
    (b"x\n", b""),
    (b"", b"no newline"),
    (b"caf\xe9\r\n\xff\n", b"caf\xe9\r\n\xfe\n"),
    (b"p\x0cq\nr\xe2\x80\xa8s\nt\x85u\n", b"p\x0cq\nR\xe2\x80\xa8s\nt\x85u\n"),
])
def test_content_survives(old, new):
    (fp,) = parse_diff(git_diff(old, new))
    res = apply_file_patch(old, fp)
    assert res.ok and res.content == new
    back = apply_file_patch(new, fp, reverse=True)
    assert back.ok and back.content == old


def test_creation_and_deletion():
    (create,) = parse_diff(git_diff(None, b"new\r\nfile"))
    assert create.is_new
    made = apply_file_patch(None, create)
    assert made.ok and made.content == b"new\r\nfile" and made.old_path is None
    exists = apply_file_patch(b"already here\n", create)
    assert not exists.ok and "exists" in exists.error
    (delete,) = parse_diff(git_diff(b"old\nfile\n", None))
    gone = apply_file_patch(b"old\nfile\n", delete)
    assert gone.ok and gone.content is None
    assert not apply_file_patch(b"old\nfile\nand more\n", delete).ok
    assert not apply_file_patch(None, delete).ok
    # Reverse: un-deleting gives the file back; un-creating needs the created content.
    assert apply_file_patch(None, delete, reverse=True).content == b"old\nfile\n"
    assert apply_file_patch(b"new\r\nfile", create, reverse=True).content is None


def test_missing_file_fails():
    (fp,) = parse_diff(git_diff(BASE, edit(BASE, b"line 01\n", b"one\n")))
    res = apply_file_patch(None, fp)
    assert not res.ok and "does not exist" in res.error and res.content is None


def test_reverse_detects_an_applied_patch():
    new = edit(BASE, b"line 10\n", b"line ten\n")
    (fp,) = parse_diff(git_diff(BASE, new))
    assert apply_file_patch(new, fp, reverse=True).ok
    assert not apply_file_patch(new, fp).ok
    assert not apply_file_patch(BASE, fp, reverse=True).ok


def test_zero_context_hunk_applies_by_line_number():
    new = edit(BASE, b"line 10\n", b"line 10\ninserted\n")
    (fp,) = parse_diff(git_diff(BASE, new, context=0))
    assert fp.has_zero_context
    assert apply_file_patch(BASE, fp).content == new


# ---------------------------------------------------------------------------------------------
# Property: for random byte files, git's own diff parses and applies forward and backward.

PIECES = [b"a", b"b", b"x", b"\r", b"\xff", b"\xe9", b"\x0c", "\u2028".encode(), b"\x85", b" ",
          b"-- ", b"+", b"@@", b"\\"]
line_st = st.lists(st.sampled_from(PIECES), max_size=4).map(b"".join)
lines_st = st.lists(line_st, max_size=25)


@st.composite
def file_pair(draw):
    def build(lines: list[bytes], final: bool) -> bytes:
        data = b"".join(line + b"\n" for line in lines)
        if not final and data:
            data = data[:-1]
        return data
    old_lines = draw(lines_st)
    new_lines = list(old_lines)
    for _ in range(draw(st.integers(0, 5))):
        op = draw(st.sampled_from(["ins", "del", "chg"]))
        k = draw(st.integers(0, len(new_lines)))
        if op == "ins":
            new_lines.insert(k, draw(line_st))
        elif new_lines and k < len(new_lines):
            if op == "del":
                del new_lines[k]
            else:
                new_lines[k] = draw(line_st)
    old = build(old_lines, draw(st.booleans()))
    new = build(new_lines, draw(st.booleans()))
    return old, new, draw(st.integers(0, 4))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(file_pair())
def test_random_files_round_trip(pair):
    old, new, context = pair
    diff = git_diff(old, new, context=context)
    files = parse_diff(diff)
    if old == new:
        assert files == ()
        return
    (fp,) = files
    assert fp.raw == diff
    res = apply_file_patch(old, fp, max_fuzz=0)
    assert res.ok and res.worst == "exact" and res.content == new
    back = apply_file_patch(new, fp, max_fuzz=0, reverse=True)
    assert back.ok and back.content == old


def test_gnu_patch_report_format_is_what_we_compare_against(tmp_path):
    # Guards the two GNU patch comparisons above: if the report wording changes, say so here.
    new = edit(BASE, b"line 20\n", b"line twenty\n")
    _, report = gnu_patch(b"pad\n" + BASE, git_diff(BASE, new), tmp_path)
    assert re.search(r"Hunk #1 succeeded at \d+ \(offset 1 line\)", report)


def test_hunk_at_file_start_stays_anchored_like_gnu_patch(tmp_path):
    base = b"a\nb\nc\nd\ne\nf\ng\nh\n"
    new = b"header\n" + base
    diff = git_diff(base, new)
    (fp,) = parse_diff(diff)
    assert fp.hunks[0].leading_context == 0 and fp.hunks[0].trailing_context == 3
    # The same lines now sit one line lower: a hunk written for the top of the file must not
    # slide down onto them.
    target = b"license\n" + base
    res = apply_file_patch(target, fp)
    assert not res.ok and res.content == target
    gnu, report = gnu_patch(target, diff, tmp_path)
    assert gnu == target and "FAILED" in report
    # At the end of a file, likewise.
    tail_new = base + b"footer\n"
    (tail,) = parse_diff(git_diff(base, tail_new))
    assert not apply_file_patch(base + b"more\n", tail).ok
    assert apply_file_patch(base, tail).content == tail_new


def test_remembered_applications_answer_as_apply_file_patch_does():
    """A walk's remembered applications give what apply_file_patch gives for every fuzz limit:
    one made without fuzz is the answer for any limit, one that needed fuzz (or failed) only
    for its own."""
    from patchforge.apply.hunks import PatchApplications

    new = edit(BASE, b"line 15\n", b"line fifteen\n")
    (fp,) = parse_diff(git_diff(BASE, new))
    drifted = edit(BASE, b"line 12\n", b"line twelve\n")
    moved = b"top\n" + BASE
    applications = PatchApplications()
    for content in (BASE, moved, drifted, drifted, moved, BASE):
        for fuzz in (0, 2, 1, 0):
            assert applications(content, fp, max_fuzz=fuzz) == \
                apply_file_patch(content, fp, max_fuzz=fuzz)
    exact = applications(BASE, fp, max_fuzz=0)
    assert applications(BASE, fp, max_fuzz=2) is exact  # made once


def test_remembered_applications_are_kept_per_content_object_never_hashed():
    """A walk remembers an application per content object, not per content value: contents
    are whole files (a 300-patch rebase hands about 20 MB of them to its applications), and a
    key holding the content hashed each one in full once. An equal content that is another
    object is applied afresh, to the same answer."""
    from patchforge.apply.hunks import PatchApplications

    class Unhashable(bytes):
        def __hash__(self):
            raise AssertionError("a content was hashed")

    new = edit(BASE, b"line 15\n", b"line fifteen\n")
    (fp,) = parse_diff(git_diff(BASE, new))
    content = Unhashable(BASE)
    applications = PatchApplications()
    first = applications(content, fp)
    assert first.content == new
    assert applications(content, fp, max_fuzz=0) is first  # remembered for that object
    again = applications(Unhashable(BASE), fp)
    assert again is not first and again == first
    assert applications(None, fp) == apply_file_patch(None, fp)


def _found_by_scanning(lines: list[bytes], want: list[bytes], expected: int, lo: int):
    """Where the hunk search must find `want` in `lines`, by comparing at every offset from
    `lo` on: the match nearest to `expected` (ties: the later one), `expected` itself for an
    empty hunk, None without a match."""
    hi = len(lines) - len(want)
    at = min(max(expected, lo), hi)
    if not want and hi >= lo:
        return at
    matches = [p for p in range(lo, hi + 1) if lines[p:p + len(want)] == want]
    return min(matches, key=lambda p: (abs(p - at), -p), default=None)


def test_hunk_search_finds_the_nearest_match_a_scan_finds():
    """The search looks a hunk's lines up in the file's line index (first and last place of
    each line) instead of comparing at every position: on random files of few distinct lines
    (many repeats, lines missing), it gives the position a scan of every offset gives."""
    import random

    from patchforge.apply.hunks import _locate, lines_of

    rng = random.Random(7)
    words = [b"a\n", b"b\n", b"c\n", b"d\n", b"e\n", b"}\n"]
    for _ in range(3000):
        lines = lines_of(b"".join(rng.choice(words) for _ in range(rng.randrange(0, 40))))
        want = [rng.choice(words + [b"z\n"]) for _ in range(rng.randrange(0, 4))]
        expected, lo = rng.randrange(-3, 45), rng.randrange(0, 10)
        wanted = _found_by_scanning(lines, want, expected, lo)
        assert _locate(lines, want, expected, lo) == wanted, (lines, want, expected, lo)


def test_hunk_search_by_scanned_lines_and_by_the_index_agree_with_a_scan():
    """A content searched a few times is searched by the places of one line of the hunk
    (scanned for and kept per line), one searched for many lines by the index of every line:
    on random files of few distinct lines of different lengths (repeats, lines missing), both
    give, search after search on the same content, the position a scan of every offset gives,
    before and after the content changes from scanning to the index."""
    import random

    from patchforge.apply.hunks import Lines, _locate

    rng = random.Random(11)
    words = [b"a\n", b"bb\n", b"ccc\n", b"d\n", b"eeee\n", b"}\n", b"\n", b"ff\n", b"g\n",
             b"hhh\n", b"ii\n", b"jjjjj\n", b"x"]
    switched = 0
    for _ in range(400):
        content = [rng.choice(words[:-1]) for _ in range(rng.randrange(0, 40))]
        if rng.random() < 0.2:
            content.append(b"x")  # a last line without its line end
        scanned, indexed = Lines(content), Lines(content)
        indexed.where()
        for _ in range(2 * Lines.SCANS_BEFORE_INDEX + 4):
            want = [rng.choice(words + [b"zzzzzz\n"]) for _ in range(rng.randrange(0, 5))]
            expected, lo = rng.randrange(-3, 45), rng.randrange(0, 10)
            wanted = _found_by_scanning(content, want, expected, lo)
            assert _locate(scanned, want, expected, lo) == wanted, (content, want, expected, lo)
            assert _locate(indexed, want, expected, lo) == wanted, (content, want, expected, lo)
        switched += scanned.indexed()
    assert 20 < switched < 380  # both ways, and the change between them, were met


def test_a_hunk_searched_in_reverse_is_found_where_its_reverse_hunk_is():
    """apply_hunks with ReversedHunk(h) (landed detection's reverse search, made of h's own
    views) gives what it gives with the rendered reverse hunk, at every fuzz level."""
    import random

    from patchforge.apply.diffparse import reverse_hunk
    from patchforge.apply.hunks import ReversedHunk, apply_hunks, lines_of

    rng = random.Random(11)
    words = [b"alpha\n", b"beta\n", b"gamma\n", b"delta\n", b"eps\n"]
    for _ in range(150):
        old = b"".join(rng.choice(words) for _ in range(rng.randrange(1, 25)))
        new = b"".join(rng.choice(words) if rng.random() < 0.2 else line
                       for line in lines_of(old)) + (b"tail" if rng.random() < 0.2 else b"")
        if new == old:
            continue
        (fp,) = parse_diff(git_diff(old, new, context=rng.randrange(0, 4)))
        for content in (old, new, new[len(new) // 3:], b"beta\n" + new):
            for fuzz in (0, 1, 2):
                for h in fp.hunks:
                    assert apply_hunks(lines_of(content), (ReversedHunk(h),), max_fuzz=fuzz) == \
                        apply_hunks(lines_of(content), (reverse_hunk(h, render=False),),
                                    max_fuzz=fuzz)


def _unified(old: bytes, new: bytes, context: int) -> bytes:
    """A diff of path f made by difflib (files ending in a line end), as the parser reads it."""
    import difflib

    body = b"".join(difflib.diff_bytes(difflib.unified_diff, old.splitlines(True),
                                       new.splitlines(True), b"a/f", b"b/f", n=context))
    return b"diff --git a/f b/f\n" + body


def test_hunks_placed_on_the_bytes_are_where_the_line_search_places_them():
    """A file patch is applied on the file's bytes, without splitting it into lines, when the
    bytes decide (`placed_on_bytes`: each pre-image, at each fuzz level, found in the bytes).
    On random files of a few repeated lines (each pre-image in several places), with lines
    added and removed before, between and after the hunks, CRLF, a last line without its line
    end, hunks in the wrong order and reversed (landed detection's reverse search), at every
    fuzz limit, it gives the content and the outcomes the line search gives (exact, offset,
    fuzz, anchored to an end of the file, failed), or leaves the file to the line search (a
    hunk without context placed by its line number). Both ways are met. The placements it
    reports (`edits`, from which a range-diff's pack makes the content's delta) make the
    content from the file's bytes."""
    import random

    from patchforge.apply.hunks import ReversedHunk, apply_hunks, lines_of, placed_on_bytes

    rng = random.Random(19)
    words = [b"a\n", b"bb\n", b"{\n", b"}\n", b"\n", b"x = 1\n", b"return x\n", b"a\r\n",
             b"def f():\n", b"  pass\n"]
    placed = left = 0
    met: set[str] = set()  # the outcomes compared
    for _ in range(600):
        old = b"".join(rng.choice(words) for _ in range(rng.randrange(1, 60)))
        new = b"".join(line if rng.random() > 0.15 else rng.choice(words + [b"new\n", b""])
                       for line in old.splitlines(True))
        if new == old:
            continue
        hunks = parse_diff(_unified(old, new, rng.choice((0, 1, 3))))[0].hunks
        # The file the patch meets: lines added or removed anywhere, the end cut away.
        target = []
        for line in old.splitlines(True):
            if rng.random() < 0.08:
                continue
            target.append(line)
            if rng.random() < 0.08:
                target.append(rng.choice(words))
        if rng.random() < 0.2 and target:
            target[-1] = target[-1].rstrip(b"\n")
        meets = b"".join(target)
        for order in (hunks, tuple(reversed(hunks)), tuple(ReversedHunk(h) for h in hunks)):
            for max_fuzz, build in ((2, True), (0, True), (0, False), (1, False)):
                by_lines, outcomes = apply_hunks(lines_of(meets), order, max_fuzz=max_fuzz,
                                                 build=build)
                edits: list = []
                found = placed_on_bytes(meets, order, max_fuzz=max_fuzz, build=build,
                                        edits=edits)
                if found is None:
                    assert not edits
                    left += 1
                    continue
                placed += 1
                met.update(o.status for o in outcomes)
                assert found == (b"".join(by_lines) if build else None, outcomes), \
                    (meets, order, max_fuzz)
                if build:
                    assert _made_by(meets, edits) == found[0]
                    assert len(edits) == sum(o.status != "failed" for o in outcomes)
                else:
                    assert not edits
    # A pre-image whose last line has no line end is found only at the end of the file
    # (with fuzz, its shorter cut elsewhere).
    content = b"a\nb\nc\nd\ne"
    (fp,) = parse_diff(git_diff(content, b"a\nb\nC\nd\ne", context=2))
    (top,) = parse_diff(git_diff(b"a\nb", b"A\nb", context=1))  # anchored at the start
    for hunks, meets in [(fp.hunks, content), (fp.hunks, content + b"e"),
                         (fp.hunks, b"x\n" + content + b"e"), (top.hunks, b"a\nb"),
                         (top.hunks, b"a\nbc\n"), (top.hunks, b"a\nb\n")]:
        for max_fuzz in (0, 1, 2):
            by_lines, outcomes = apply_hunks(lines_of(meets), hunks, max_fuzz=max_fuzz)
            assert placed_on_bytes(meets, hunks, max_fuzz=max_fuzz) == \
                (b"".join(by_lines), outcomes), (meets, max_fuzz)
    assert placed > 3000 and left > 200, (placed, left)
    assert met == {"exact", "offset", "fuzz", "failed"}


def _made_by(old: bytes, edits) -> bytes:
    """`old` with FileApplication.edits made: each (start, end, post) replaces old[start:end]."""
    pieces, at = [], 0
    for start, end, post in edits:
        assert at <= start <= end <= len(old)
        pieces += (old[at:start], post)
        at = end
    return b"".join(pieces) + old[at:]


def test_an_application_on_the_bytes_says_how_it_made_its_content():
    """apply_file_patch's `edits` (where each hunk's pre-image was and what replaced it) make
    its content from the old one when its hunks were placed on the bytes, are None when it was
    made otherwise (a new file, the line search), and a walk's remembered applications hand
    them back for that content object alone (PatchApplications.made_from)."""
    from patchforge.apply.hunks import PatchApplications, apply_file_patch

    old = b"".join(b"line %d\n" % i for i in range(200))
    new = old.replace(b"line 5\n", b"five\n").replace(b"line 150\n", b"") + b"end"
    (fp,) = parse_diff(git_diff(old, new, context=3))
    result = apply_file_patch(old, fp)
    assert result.content == new and result.edits is not None
    assert _made_by(old, result.edits) == new
    shifted = b"extra\n" * 7 + old  # offset
    assert _made_by(shifted, apply_file_patch(shifted, fp).edits) == b"extra\n" * 7 + new
    (created,) = parse_diff(git_diff(b"", b"a\nb\n", context=3))
    assert apply_file_patch(None, created).edits is None
    applications = PatchApplications()
    made = applications(old, fp)
    assert applications.made_from(made.content) == (old, made.edits)
    assert applications.made_from(bytes(bytearray(made.content))) is None  # another object
    assert applications.made_from(old) is None


def test_a_creation_onto_a_file_that_is_there_fails_without_reading_its_hunks():
    """A file patch that creates a file, applied to a file that exists, fails whole ("already
    exists", every hunk failed), as it always did, without going through the lines of its
    hunks (landed detection asks it of every file a patch creates that the target has); in
    reverse it is the deletion of that file, and applies to the content it created."""
    from patchforge.apply.hunks import apply_file_patch

    content = b"".join(b"line %d\n" % i for i in range(300))
    (created,) = parse_diff(git_diff(None, content))
    assert created.is_new
    result = apply_file_patch(b"something else\n", created)
    assert result.error == "f already exists" and result.content is None
    assert [(h.index, h.status) for h in result.hunks] == [(0, "failed")]
    assert "_old_lines" not in created.hunks[0].__dict__
    assert "_new_lines" not in created.hunks[0].__dict__
    undone = apply_file_patch(content, created, reverse=True)
    assert undone.ok and undone.content is None and undone.new_path is None
    assert apply_file_patch(None, created).content == content


def test_a_hunk_whose_fuzz_2_lines_are_nowhere_is_searched_for_twice(monkeypatch):
    """A hunk not found without fuzz is first looked for as its deepest fuzz level's lines
    (those fuzz 2 leaves, inside every other level's): where the file does not have them, no
    level can find the hunk, and the file is not searched for it at fuzz 1 and 2 (landed
    detection applies every hunk of a merge patch to files upstream rewrote: most fail, and
    each level's search is a scan of the file). A hunk whose fuzz-2 lines are there is
    searched at every level as before. The outcomes are GNU patch's either way."""
    import patchforge.apply.hunks as hunks

    searched: list[bytes] = []
    real = hunks._found_whole

    def found_whole(old, pre, *args):
        searched.append(pre)
        return real(old, pre, *args)

    monkeypatch.setattr(hunks, "_found_whole", found_whole)
    (fp,) = parse_diff(git_diff(BASE, edit(BASE, b"line 15\n", b"line fifteen\n")))
    # Upstream rewrote lines 14-16 (the fuzz-2 lines): found at no fuzz level.
    rewritten = edit(BASE, b"line 14\nline 15\nline 16\n", b"line 14a\nline 15a\nline 16a\n")
    result = apply_file_patch(rewritten, fp)
    assert [(h.status, h.fuzz) for h in result.hunks] == [("failed", 0)]
    assert searched == [b"".join(b"line %02d\n" % k for k in range(12, 19))]
    assert (result.hunks, result.content) == _with_every_level_searched(rewritten, fp)
    # Upstream changed lines 12 and 18 (outside them): found at fuzz 1, each level searched.
    searched.clear()
    edited = edit(edit(BASE, b"line 12\n", b"line twelve\n"), b"line 18\n", b"line 18!\n")
    result = apply_file_patch(edited, fp)
    assert [(h.status, h.fuzz, h.at_line) for h in result.hunks] == [("fuzz", 1, 13)]
    assert len(searched) == 2
    assert (result.hunks, result.content) == _with_every_level_searched(edited, fp)


def _with_every_level_searched(content: bytes, fp):
    """The line search's outcomes and content (`apply_hunks`, which searches a hunk at every
    fuzz level)."""
    from patchforge.apply.hunks import apply_hunks, lines_of

    lines, outcomes = apply_hunks(lines_of(content), fp.hunks)
    return outcomes, b"".join(lines)


def test_a_content_searched_often_is_searched_by_its_lines():
    """The first searches of a content are made on its bytes, the later ones by its lines
    (split once, with their index): status searches some contents dozens of times."""
    from patchforge.apply.hunks import _BYTE_SEARCHES, place_in_place

    new = edit(BASE, b"line 15\n", b"line fifteen\n")
    (fp,) = parse_diff(git_diff(BASE, new))
    content = b"top\n" + BASE
    expected = apply_file_patch(b"top\n" + BASE, fp)  # an equal content, another object
    answers = [place_in_place(content, fp.hunks) for _ in range(_BYTE_SEARCHES + 2)]
    assert answers[:_BYTE_SEARCHES] == [(expected.content, expected.hunks)] * _BYTE_SEARCHES
    assert answers[_BYTE_SEARCHES:] == [None, None]
    assert apply_file_patch(content, fp) == expected  # by its lines now
    assert place_in_place(bytes(bytearray(content)), fp.hunks) is not None  # another object


def _applies_as_git_apply_applies_it(tmp_path, current: bytes, diff: bytes, *,
                                     max_fuzz: int) -> list:
    """apply_file_patch of the one-file `diff` on `current`, forward and in reverse, each
    asserted to succeed exactly where `git apply --check` (`-R`) succeeds on the same file;
    the two applications, for the caller's own checks."""
    (fp,) = parse_diff(diff)
    (tmp_path / "f").write_bytes(current)
    (tmp_path / "p.diff").write_bytes(diff)
    applications = []
    for reverse in (False, True):
        ours = apply_file_patch(current, fp, max_fuzz=max_fuzz, reverse=reverse)
        git = subprocess.run(["git", "apply", "--check", *(["-R"] if reverse else []),
                              "p.diff"], cwd=tmp_path, capture_output=True)
        assert ours.ok == (git.returncode == 0), (reverse, git.stderr)
        applications.append(ours)
    return applications


@pytest.mark.parametrize("current", [b"", b"other\n", b"new\n", b"new\nother\n"])
@pytest.mark.parametrize("before,after", [(b"", b"new\n"), (b"new\n", b"")])
def test_a_patch_filling_or_emptying_a_file_applies_where_git_apply_applies_it(
        tmp_path, current, before, after):
    """`@@ -0,0 +1 @@` of a file that was empty, `@@ -1 +0,0 @@` of one left empty (the
    `index` line says so): git apply takes them, forward and in reverse, only where the file
    is all the hunk expects; so does apply_file_patch (it put the lines at the top of any
    file, or took them out of a longer one). A `diff -U0` insertion at the top of a file reads
    the same but for that line, and is still placed by its line number (the round trip
    above)."""
    diff = git_diff(before, after)
    assert re.search(rb"\nindex [0-9a-f]+\.\.", diff)
    _applies_as_git_apply_applies_it(tmp_path, current, diff, max_fuzz=0)


@pytest.mark.parametrize("current", [b"a\n", b"b\n", b"x\na\ny\n", b"a\nmore\n", b"top\na\n",
                                     b"x\nb\ny\n"])
@pytest.mark.parametrize("with_index", [True, False])
def test_a_hunk_without_context_replacing_a_whole_file_is_anchored_at_both_ends(
        tmp_path, current, with_index):
    """`@@ -1 +1 @@` without context, the whole of a one-line file replaced (`diff -U0`, or
    `git diff -U0` with its `index` line): git apply (without --unidiff-zero) takes it only
    where the file is all of the hunk's old lines (forward; its new lines in reverse). So does
    apply_file_patch: it placed the line wherever it found it (`x\\na\\ny\\n` became
    `x\\nb\\ny\\n`), as `git apply --unidiff-zero` and GNU patch do."""
    diff = git_diff(b"a\n", b"b\n", context=0)
    assert re.search(rb"\nindex [0-9a-f]+\.\.", diff)
    if not with_index:
        diff = re.sub(rb"index [^\n]*\n", b"", diff)
    for ours in _applies_as_git_apply_applies_it(tmp_path, current, diff, max_fuzz=2):
        if not ours.ok:
            assert "whole file" in ours.error


def test_a_hunk_without_context_at_line_one_of_a_longer_file_is_placed_by_its_line(tmp_path):
    """`git diff -U0` of a change to line 1 of a longer file reads like a whole-file
    replacement but for its `index` line, whose pre-image is not the hunk's old lines: it is
    placed by its line number, where `git apply --unidiff-zero` and GNU patch place it."""
    new = edit(BASE, b"line 01\n", b"LINE 01\n")
    diff = git_diff(BASE, new, context=0)
    (fp,) = parse_diff(diff)
    (tmp_path / "p.diff").write_bytes(diff)
    for current in (BASE, b"top\n" + BASE):
        (tmp_path / "f").write_bytes(current)
        ours = apply_file_patch(current, fp)
        git = subprocess.run(["git", "apply", "--unidiff-zero", "p.diff"], cwd=tmp_path,
                             capture_output=True)
        assert git.returncode == 0, git.stderr
        assert ours.content == (tmp_path / "f").read_bytes()


def _lines(*names: str) -> bytes:
    return b"".join(f"{name}\n".encode() for name in names)


TEN = [str(k) for k in range(1, 11)]

# (made on, what the patch makes of it, the file it is applied to): hunks whose fuzz cuts
# context from their top, near the file's first line or the lines an earlier hunk patched.
# GNU patch places a hunk as a whole (the cut lines too) from the file's first line and below
# the previous hunk's last changed line; the placement there was patchforge's alone.
CUT_TOPS = {
    # A hunk at line 1 (two lines of context above its change, three below) on a file that
    # lost its first line: fuzz 2 finds `a c f` at line 1, the cut `a` would be above it.
    "line 1, shorter context above": (
        _lines("a", "a", "c", "f", "b", "", "f", "y"),
        _lines("a", "a", "a", "f", "b", "", "f", "y"),
        _lines("a", "c", "f", "b", "", "f", "y")),
    # A hunk with all its context at line 2, on a file that lost its first three lines
    # (then its first two): its cut pre-image is at the top, the cut lines above the file.
    "full context, lines cut above the file": (
        _lines(*TEN), _lines(*TEN).replace(b"5\n", b"five\n"), _lines(*TEN[3:])),
    "full context, one line short": (
        _lines(*TEN), _lines(*TEN).replace(b"5\n", b"five\n"), _lines(*TEN[2:])),
    # The same with the lines above changed, not removed: the cut lines fit, fuzz 2 applies.
    "full context, lines above changed": (
        _lines(*TEN), _lines(*TEN).replace(b"5\n", b"five\n"),
        _lines("1", "X", "Y", *TEN[3:])),
    # A hunk at the file's end (context above only): fuzz cuts from its top, and the cut
    # lines must still be in the file above it.
    "end of file, lines cut above the file": (
        _lines("a", "b", "c", "d", "e"), _lines("a", "b", "c", "d", "E"), _lines("d", "e")),
    "end of file, one line short": (
        _lines("a", "b", "c", "d", "e"), _lines("a", "b", "c", "d", "E"),
        _lines("X", "d", "e")),
    "end of file, room for the cut lines": (
        _lines("a", "b", "c", "d", "e"), _lines("a", "b", "c", "d", "E"),
        _lines("X", "Y", "d", "e")),
    # The first hunk (shorter context above, at line 1) is found with fuzz further down;
    # the second's cut top would then be over the line the first deleted.
    "second hunk over the first's change": (
        _lines("e", "c", "a", "c", "f", "", "", "", "a", "b", "e", "d", "a", "e", "d", "c",
               "a", "c", "d", "f", "f", "b", "c", "d"),
        _lines("e", "a", "c", "f", "", "", "", "a", "b", "e", "d", "a", "e", "d", "c",
               "a", "c", "f", "f", "b", "c", "d"),
        _lines("c", "a", "c", "f", "", "", "", "a", "b", "e", "d", "a", "e", "d", "e", "c",
               "a", "c", "d", "f", "f", "b", "c", "d")),
    # That first hunk alone: shorter context above no longer binds at fuzz 2, GNU patch
    # places it further down, and so does patchforge.
    "line 1 hunk found further down": (
        _lines("e", "c", "a", "c", "f", "", "", "", "a", "b"),
        _lines("e", "a", "c", "f", "", "", "", "a", "b"),
        _lines("c", "a", "c", "f", "", "", "", "a", "b", "e", "c", "a")),
}


@pytest.mark.parametrize("shape", CUT_TOPS)
def test_a_hunk_whose_fuzz_cuts_its_top_is_placed_where_gnu_patch_places_it(shape, tmp_path):
    """A hunk at a file's first line applied with fuzz where GNU patch (so quilt) and git
    apply refuse it: `overlays` wrote a placement no standard tool makes. Fuzz cuts context
    from the hunk's top; GNU patch still places those lines, from the file's first line on
    and below what an earlier hunk patched. Both searches (on the bytes and on the lines)
    answer as `patch --dry-run` does, and where it applies, with its content."""
    from patchforge.apply.hunks import Lines, apply_hunks, placed_on_bytes

    if shutil.which("patch") is None:
        pytest.skip("GNU patch is not installed (apt-get install patch)")
    made_on, made, target = CUT_TOPS[shape]
    diff = git_diff(made_on, made)
    work = tmp_path / "gnu"
    work.mkdir()
    (work / "f").write_bytes(target)
    dry = subprocess.run(["patch", "-p1", "-F2", "--dry-run", "-f"], cwd=work, input=diff,
                         capture_output=True)
    gnu = None
    if dry.returncode == 0:
        subprocess.run(["patch", "-p1", "-F2", "-f", "-s", "--no-backup-if-mismatch"],
                       cwd=work, input=diff, check=True)
        gnu = (work / "f").read_bytes()
    (fp,) = parse_diff(diff)
    application = apply_file_patch(target, fp)
    assert (application.content if application.ok else None) == gnu, dry.stdout
    lines, outcomes = apply_hunks(Lines(target.splitlines(keepends=True)), fp.hunks)
    assert (b"".join(lines) if all(o.status != "failed" for o in outcomes) else None) == gnu
    placed = placed_on_bytes(target, fp.hunks)
    assert placed is not None
    content, outcomes = placed
    assert (content if all(o.status != "failed" for o in outcomes) else None) == gnu
    assert [o.status for o in outcomes] == [o.status for o in application.hunks]
