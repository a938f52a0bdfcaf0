"""Tests for patchforge.formats.patchfile: byte-exact round trips over real samples (a Debian DEP-3
patch, git format-patch output, quilt patches, CRLF headers), field editing in place, canonical
rendering, and refusal of anything before the diff that a patch tool could take for a diff."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from helpers.git import git
from hypothesis import given, settings
from hypothesis import strategies as st

from patchforge.apply.hunks import apply_file_patch
from patchforge.errors import InputError
from patchforge.formats.patchfile import PatchFile, parse_patch_file, render_patch_file

DATA = Path(__file__).parent / "data" / "patches"
SIMPLE_DIFF = (b"diff --git a/f.txt b/f.txt\n--- a/f.txt\n+++ b/f.txt\n"
               b"@@ -1,2 +1,2 @@\n keep\n-old\n+new\n")


def test_dep3_sample_round_trips_and_reads():
    data = (DATA / "debian-dep3.patch").read_bytes()
    pf = parse_patch_file(data, "debian-dep3.patch")
    assert pf.to_bytes() == data
    assert pf.preamble == b"" and pf.gap == b"\n" and pf.separator == b"---\n"
    assert pf.description.startswith(b"The overlay used to ship")
    assert pf.subject == "use the FNUZ FP8 dtype on MI300X"
    desc = pf.get("Subject")
    assert desc is not None and desc.split("\n")[4] == "" and desc.endswith("keep the OCP dtype.")
    assert pf.get("author") == pf.get("From") == "Jane Doe <jane@example.com>"
    assert pf.get("Upstream-Status") == "Submitted [https://github.com/vllm-project/vllm/pull/51240]"
    assert pf.get("X-Measured") == "decode 168.6 tok/s single stream"
    assert pf.get("Nope") is None and pf.get_all("Nope") == []
    assert [f.name for f in pf.fields][:3] == ["Description", "Author", "Origin"]
    assert pf.paths == ("vllm/model_executor/layers/fp8_utils.py",)
    (fp,) = pf.file_patches
    # Line numbers are those of the patch file, not of the diff alone.
    lines = data.split(b"\n")
    assert lines[fp.line_no - 1].startswith(b"diff --git ")
    assert lines[fp.hunks[0].line_no - 1].startswith(b"@@ ")
    res = apply_file_patch((DATA / "fp8_utils.py.orig").read_bytes(), fp)
    assert res.ok and res.content == (DATA / "fp8_utils.py.patched").read_bytes()


def test_field_raw_is_exact_with_continuations():
    data = (DATA / "debian-dep3.patch").read_bytes()
    pf = parse_patch_file(data, "p")
    assert pf.fields[0].raw.count(b"\n") == 6 and pf.fields[0].raw.endswith(b"OCP dtype.\n")
    assert b"".join(f.raw for f in pf.fields) + pf.gap + pf.description + pf.separator \
        + pf.diff == data


@pytest.fixture
def format_patch(make_git_repo) -> bytes:
    repo, _ = make_git_repo({"f.txt": b"keep\nold\n", "bin.txt": b"caf\xe9\r\n"})
    (repo / "f.txt").write_bytes(b"keep\nnew\n")
    (repo / "bin.txt").write_bytes(b"caf\xe9\r\n\xff")
    git(repo, "commit", "-qam", "Fix d\u00e9codage of the thing\n\nLonger body.\n\n"
        "Signed-off-by: Test Author <author@example.com>")
    (repo / "f.txt").write_bytes(b"keep\nnewer\n")
    git(repo, "commit", "-qam", "second")
    return subprocess.run(["git", "format-patch", "-2", "--stdout", "--numbered"], cwd=repo,
                          capture_output=True, check=True).stdout


def test_git_format_patch_round_trips(format_patch):
    first = format_patch[:format_patch.index(b"\nFrom ", 10) + 1]
    pf = parse_patch_file(first, "0001.patch")
    assert pf.to_bytes() == first
    assert pf.preamble.startswith(b"From ") and pf.preamble.endswith(b"2001\n")
    assert pf.get("Author") == "Test Author <author@example.com>"
    assert pf.subject == "Fix d\u00e9codage of the thing"
    assert pf.separator.startswith(b"---\n") and b"2 files changed" in pf.separator
    assert pf.description.startswith(b"Longer body.")
    assert pf.diff.endswith(b"-- \n2.39.5\n\n") or pf.diff.rstrip().split(b"\n")[-2] == b"-- "
    assert set(pf.paths) == {"f.txt", "bin.txt"}


def test_quilt_patch_without_header_round_trips(tmp_path, monkeypatch):
    data = (b"Index: proj/src/x.c\n" + b"=" * 67 + b"\n--- proj.orig/src/x.c\n+++ proj/src/x.c\n"
            b"@@ -1 +1 @@\n-a\n+b\n")
    pf = parse_patch_file(data, "q.patch")
    assert pf.to_bytes() == data
    assert (pf.fields, pf.description, pf.separator, pf.diff) == ((), b"", b"", data)
    with_header = b"Fix the x.\n\nSome prose: see http://example.com/x\n\n" + data
    pf = parse_patch_file(with_header, "q.patch")
    assert pf.to_bytes() == with_header and pf.fields == ()
    assert pf.description.startswith(b"Fix the x.")
    assert pf.paths == ("src/x.c",)


def test_crlf_header_kept_when_editing():
    data = (b"Description: a\r\nAuthor: b\r\n\r\nText\r\n---\r\n" + SIMPLE_DIFF)
    pf = parse_patch_file(data, "crlf.patch")
    assert pf.to_bytes() == data
    assert pf.get("Description") == "a"
    edited = pf.with_field("Author", "c <c@x>").with_field("Bug", "https://x/1")
    assert edited.to_bytes() == (b"Description: a\r\nAuthor: c <c@x>\r\nBug: https://x/1\r\n\r\n"
                                 b"Text\r\n---\r\n" + SIMPLE_DIFF)


def test_with_field_in_place_alias_and_multiline():
    data = b"Subject: one\nX-Custom:  spaced  \nFrom: a\n\n---\n" + SIMPLE_DIFF
    pf = parse_patch_file(data, "p")
    assert pf.get("x-custom") == "spaced"
    out = pf.with_field("Description", "short\nlong line\n\nafter blank")
    assert out.to_bytes().startswith(b"Subject: short\n long line\n .\n after blank\n"
                                      b"X-Custom:  spaced  \nFrom: a\n\n")
    assert out.get("Description") == "short\nlong line\n\nafter blank"
    assert parse_patch_file(out.to_bytes(), "p").get("Subject") == out.get("Subject")
    dropped = pf.without_field("author")
    assert dropped.to_bytes() == b"Subject: one\nX-Custom:  spaced  \n\n---\n" + SIMPLE_DIFF


def test_with_field_adds_a_header_to_a_bare_diff():
    pf = parse_patch_file(SIMPLE_DIFF, "p").with_field("Upstream-Status", "Pending")
    assert pf.to_bytes() == b"Upstream-Status: Pending\n\n" + SIMPLE_DIFF
    assert parse_patch_file(pf.to_bytes(), "p").get("Upstream-Status") == "Pending"


def test_with_description_and_with_diff():
    pf = parse_patch_file(b"Description: x\n\n---\n" + SIMPLE_DIFF, "p")
    out = pf.with_description(b"Why we need this.")
    assert out.to_bytes() == b"Description: x\n\nWhy we need this.\n---\n" + SIMPLE_DIFF
    with pytest.raises(InputError):
        pf.with_description(b"look:\n@@ -1 +1 @@\n")
    with pytest.raises(InputError):
        pf.with_description(b"---\n")
    other = SIMPLE_DIFF.replace(b"new", b"newer")
    assert pf.with_diff(other).diff == other
    assert pf.with_diff(other).file_patches[0].hunks[0].lines[-1] == b"+newer\n"
    with pytest.raises(InputError) as info:
        pf.with_diff(b"--- a/x\n+++ b/../x\n@@ -1 +1 @@\n-a\n+b\n")
    assert info.value.line == 5


def test_paths_are_each_patch_files_own():
    """A patch's paths are made once (the judge asks for them at every read): a patch made
    from another (a new field, a new diff) has its own, never the one it came from."""
    pf = parse_patch_file(b"Description: x\n\n---\n" + SIMPLE_DIFF, "p")
    assert pf.paths == tuple(fp.path for fp in pf.file_patches)
    renamed = SIMPLE_DIFF.replace(b"f.txt", b"y")
    moved = pf.with_diff(renamed)
    assert moved.paths == ("y",) != pf.paths
    assert pf.with_field("Base", "abc").paths == pf.paths
    assert moved.with_field("Base", "abc").paths == ("y",)


@pytest.mark.parametrize("subject, expected", [
    ("[PATCH] Fix it", "Fix it"),
    ("[PATCH v2 3/7] Fix it", "Fix it"),
    ("[RFC][PATCH 1/2] Fix it", "Fix it"),
    ("Fix [it]", "Fix [it]"),
])
def test_subject_strips_patch_prefix(subject, expected):
    pf = parse_patch_file(f"Subject: {subject}\n\n".encode() + b"---\n" + SIMPLE_DIFF, "p")
    assert pf.subject == expected


def test_render_canonical_order_and_round_trip():
    fields = [("X-Extra", "kept last"), ("Upstream-Status", "Pending"), ("Author", "A <a@x>"),
              ("Drop-When", "vllm>=0.34"), ("Description", "Fix\nmore words"),
              ("Base", "0" * 40), ("Upstream", "vllm"), ("Reviewed-by", "R <r@x>")]
    data = render_patch_file(fields, b"Free text.", SIMPLE_DIFF)
    assert data == (b"Description: Fix\n more words\nAuthor: A <a@x>\nUpstream-Status: Pending\n"
                    b"Upstream: vllm\nBase: " + b"0" * 40 + b"\nDrop-When: vllm>=0.34\n"
                    b"Reviewed-by: R <r@x>\nX-Extra: kept last\n\nFree text.\n---\n" + SIMPLE_DIFF)
    pf = parse_patch_file(data, "p")
    assert pf.to_bytes() == data
    assert [(f.name, f.value) for f in pf.fields] == [
        ("Description", "Fix\nmore words"), ("Author", "A <a@x>"), ("Upstream-Status", "Pending"),
        ("Upstream", "vllm"), ("Base", "0" * 40), ("Drop-When", "vllm>=0.34"),
        ("Reviewed-by", "R <r@x>"), ("X-Extra", "kept last")]


def test_render_empty_patch_is_valid():
    data = render_patch_file([("Description", "placeholder")], b"", b"")
    assert data == b"Description: placeholder\n\n---\n"
    pf = parse_patch_file(data, "new.patch")
    assert pf.to_bytes() == data and pf.file_patches == () and pf.paths == ()


@pytest.mark.parametrize("description", [
    b"diff --git a/x b/x\n", b"--- a/x\n", b"+++ b/x\n", b"Index: x\n", b"@@ -1 +1 @@\n",
    b"   --- indented\n", b"text\n---\nmore\n", b"3a\n", b"*** a/x\n", b"Prereq: 1.0\n",
])
def test_render_refuses_description_that_looks_like_a_diff(description):
    with pytest.raises(InputError):
        render_patch_file([("Description", "x")], description, SIMPLE_DIFF)


@pytest.mark.parametrize("fields", [
    [("Description", "x\ndiff --git a/y b/y")], [("Index", "x")], [("Bad Name", "x")],
    [("Description", "nul\0")],
])
def test_render_refuses_bad_fields(fields):
    with pytest.raises(InputError):
        render_patch_file(fields, b"", SIMPLE_DIFF)


def test_parse_refuses_hunk_in_description():
    data = b"Description: x\n\nSee this:\n  @@ -1 +1 @@\n---\n" + SIMPLE_DIFF
    with pytest.raises(InputError) as info:
        parse_patch_file(data, "sneaky.patch")
    assert (info.value.path, info.value.line) == ("sneaky.patch", 4)


def test_parse_refuses_ed_script():
    with pytest.raises(InputError) as info:
        parse_patch_file(b"Description: x\n\n1d\nw\n", "ed.patch")
    assert (info.value.path, info.value.line) == ("ed.patch", 3)


def test_parse_reports_diff_errors_at_file_lines():
    data = b"Description: x\nAuthor: y\n\nbody\n---\n" + SIMPLE_DIFF.replace(b"+new", b"+new\n+more")
    with pytest.raises(InputError) as info:
        parse_patch_file(data, "bad.patch")
    assert (info.value.path, info.value.line) == ("bad.patch", 13)


def test_header_only_patch_is_allowed():
    for data in (b"", b"Description: empty\n", b"Description: x\n\nwords\n"):
        pf = parse_patch_file(data, "p")
        assert pf.to_bytes() == data and pf.diff == b""


# ---------------------------------------------------------------------------------------------
# Property: whatever we accept, we give back byte for byte.

PIECES = [b"Description: d\n", b"Subject: [PATCH] s\n", b"Author: a\n", b" cont\n", b" .\n",
          b"\tcont\n", b"X-Y:\n", b"From 0123abc Mon Sep 17 00:00:00 2001\n", b"\n", b"\r\n",
          b"free text\n", b"---\n", b" f.txt | 2 +-\n", b"caf\xe9\n", b"Bad:no-space\n",
          b"Description: crlf\r\n", b"tail no newline", b"\x0c\n", b"-- \n2.39.5\n"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=12), st.booleans(),
       st.lists(st.sampled_from(PIECES), max_size=3))
def test_any_accepted_input_round_trips(head, with_diff, tail):
    data = b"".join(head)
    if with_diff:
        if data and not data.endswith(b"\n"):
            data += b"\n"
        data += SIMPLE_DIFF + b"".join(tail)
    try:
        pf = parse_patch_file(data, "fuzz.patch")
    except InputError:
        return
    assert pf.to_bytes() == data
    assert isinstance(pf, PatchFile)
    if with_diff:
        assert pf.paths == ("f.txt",)
        assert pf.with_field("Last-Update", "2026-01-01").file_patches[0].path == "f.txt"


DIFF_LINES = [b"diff --git a/f b/f\n", b"Index: f\n", b"--- a/f\n", b"+++ b/f\n", b"--- \n",
              b"+++\n", b"@@ -1 +1 @@\n", b"text\n", b"--- a/f\r\n", b"\n", b"x\r", b"no end"]


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(DIFF_LINES + PIECES), max_size=10))
def test_the_diff_is_cut_off_where_its_first_line_is(pieces):
    """parse_patch_file takes the diff from where diff_start finds it without splitting the
    diff into lines (_split_at_diff): the same lines before it, the same bytes from it on."""
    from patchforge.apply.diffparse import split_lines
    from patchforge.formats.patchfile import _split_at_diff, diff_start

    data = b"".join(pieces)
    lines = split_lines(data)
    start = diff_start(lines)
    head, diff = _split_at_diff(data)
    assert head == (lines if start is None else lines[:start])
    assert diff == (b"" if start is None else b"".join(lines[start:]))


text_st = st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=20)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["Description", "Author", "Bug", "X-Note"]),
                          st.lists(text_st, min_size=1, max_size=3).map("\n".join)),
                max_size=5))
def test_rendered_values_read_back(fields):
    fields = [(n, "\n".join(line.strip() for line in v.split("\n")) or "v") for n, v in fields]
    try:
        data = render_patch_file(fields, b"", SIMPLE_DIFF)
    except InputError:
        return
    pf = parse_patch_file(data, "p")
    assert pf.to_bytes() == data
    got = sorted((f.name, f.value) for f in pf.fields)
    # " ." is how DEP-3 writes an empty continuation line: a lone "." reads back as empty.
    want = sorted((n, "\n".join("" if ln == "." and k else ln
                                for k, ln in enumerate(v.split("\n"))))
                  for n, v in fields)
    assert got == want


def test_header_cut_short_does_not_strand_the_profiles_field():
    """A first line that lost its colon turns the whole header into description; Profiles
    there would be ignored and a one-profile fix deployed everywhere. Refused, naming the line."""
    good = (b"Description: fix the thing\nAuthor: A <a@example.com>\nProfiles: gfx942\n\n"
            b"Why.\n---\n")
    assert parse_patch_file(good, "p.patch").fields[2].name == "Profiles"
    broken = good.replace(b"Description:", b"Description", 1)
    with pytest.raises(InputError) as info:
        parse_patch_file(broken, "p.patch")
    assert info.value.path == "p.patch" and info.value.line == 3
    assert "Profiles:" in str(info.value)
    # The same words in a description paragraph of their own are prose, not a header.
    prose = b"Description: fix\n\nProfiles: this fix touches no profile list.\n---\n"
    assert parse_patch_file(prose, "p.patch").description.startswith(b"Profiles:")


@pytest.mark.parametrize("line, meant", [
    (b"Profile: gfx942", "Profiles"), (b"profile: gfx942", "Profiles"),
    (b"Profiles : gfx942", "Profiles"), (b"Profiles= gfx942", "Profiles"),
    (b"Drop_When: vllm>=0.34", "Drop-When"), (b"DropWhen: vllm>=0.34", "Drop-When"),
    (b"Keep: a.py: text", "Keeps"), (b"Upstreams: up", "Upstream")])
def test_a_deciding_field_spelled_nearly_right_is_refused(line, meant):
    """`Profile: gfx942` was kept as an unknown field and `Profiles : gfx942` ended the header
    as description: either way the fix reached every profile, and no command or lint said a
    word (a misspelled Drop-When was never evaluated, a Keep never checked). Refused by
    every command that reads the patch, naming the line and the field meant."""
    data = (b"Description: fix the thing\nAuthor: A <a@example.com>\n" + line
            + b"\n\nWhy.\n---\n")
    with pytest.raises(InputError) as info:
        parse_patch_file(data, "p.patch")
    assert info.value.path == "p.patch" and info.value.line == 3, str(info.value)
    assert meant in str(info.value) + (info.value.hint or "")
    # Spelled right, and in a description paragraph of its own, it is what it always was.
    right = data.replace(line, line.replace(line.split(b":")[0].split(b"=")[0],
                                            meant.encode()).replace(b" :", b":")
                         .replace(b"=", b":"))
    assert parse_patch_file(right, "p.patch").get(meant) is not None, right
    prose = b"Description: fix\n\n" + line + b"\n---\n"
    assert parse_patch_file(prose, "p.patch").description.startswith(line)


@pytest.mark.parametrize("lines, line, says", [
    (b"Profiles:\n", 3, "lists no profile"),
    (b"Profiles: , \n", 3, "lists no profile"),
    (b"Profiles: gfx942\nProfiles: gfx950\n", 4, "'Profiles:' is written twice (first at line 3)"),
    (b"Drop-When: vllm>=0.34\nDrop-When: merged\n", 4, "'Drop-When:' is written twice"),
    (b"Base: " + b"1" * 40 + b"\nbase: " + b"2" * 40 + b"\n", 4, "'Base:' is written twice"),
    (b"Upstream: a\nUpstream: b\n", 4, "'Upstream:' is written twice")])
def test_an_empty_profiles_field_or_a_deciding_field_written_twice_is_refused(lines, line,
                                                                             says):
    """An empty `Profiles:` was read as no field, a fix for every profile: a list whose names
    an editor or a merge lost deployed a one-profile fix everywhere, without a word. A second
    `Profiles:` was read by `pr` (both lines) and not by overlays (the first only). Refused by
    every command that reads the patch, naming the line."""
    data = b"Description: fix the thing\nAuthor: A <a@example.com>\n" + lines + b"\nWhy.\n---\n"
    with pytest.raises(InputError) as info:
        parse_patch_file(data, "p.patch")
    assert info.value.path == "p.patch" and info.value.line == line, str(info.value)
    assert says in str(info.value)


def test_a_folded_profiles_field_and_several_keeps_lines_are_read_as_before():
    data = (b"Description: fix\nProfiles:\n gfx942, gfx950\nKeeps: a.py: one\nKeeps: a.py: two\n"
            b"\nWhy.\n---\n")
    patch = parse_patch_file(data, "p.patch")
    assert patch.profiles == ("gfx942", "gfx950") and len(patch.get_all("Keeps")) == 2


@pytest.mark.parametrize("head", [
    b"",
    b"Description: fix\n",
    b"From 1234567 Mon Sep 17 00:00:00 2001\nSubject: [PATCH] fix\n the thing\n .\n more\n",
    b"Description: fix\nAuthor: A <a@example.com>\n\nWhy, in two\nlines.\n---\n",
    b"Description: fix\n\nWhy.\n---\n a.py | 2 +-\n 1 file changed\n\n"])
def test_a_diffs_lines_are_counted_from_where_it_starts_in_the_file(head):
    """The diff's line numbers (each section's and hunk's, and a refusal's) are the patch
    file's, whatever the header, description and separator above it hold: counted once from
    the parts the header was cut into."""
    diff = b"diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-x\n+y\n"
    pf = parse_patch_file(head + diff, "p.patch")
    first = head.count(b"\n") + 1
    assert pf.diff_first_line == first
    (fp,) = pf.file_patches
    assert (fp.line_no, fp.hunks[0].line_no) == (first, first + 3)
    with pytest.raises(InputError) as info:
        parse_patch_file(head + diff + b"@@ -9 +9 @@\n-x\n", "p.patch")
    assert (info.value.path, info.value.line) == ("p.patch", first + 6), str(info.value)
