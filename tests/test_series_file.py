"""quilt series files: byte-exact round trip, edits that keep comments, errors with lines."""
from __future__ import annotations

import pytest

from patchforge.errors import InputError
from patchforge.formats.series import parse_series

RAW = b"# header comment\r\none.patch\r\n\r\ntwo.patch -p1 # why\r\nthree.patch"


def test_round_trip_and_names():
    series = parse_series(RAW, "s")
    assert series.to_bytes() == RAW
    assert series.names == ["one.patch", "two.patch", "three.patch"]


def test_edits_keep_comments_and_line_endings():
    series = parse_series(RAW, "s")
    assert series.inserted("new.patch", after="one.patch").to_bytes() == \
        b"# header comment\r\none.patch\r\nnew.patch\r\n\r\ntwo.patch -p1 # why\r\nthree.patch\r\n"
    assert series.inserted("new.patch", first=True).names[0] == "new.patch"
    assert series.inserted("new.patch", first=True).to_bytes().startswith(b"# header comment\r\nnew.patch\r\n")
    assert series.removed("two.patch").to_bytes() == \
        b"# header comment\r\none.patch\r\n\r\nthree.patch"
    assert series.renamed("two.patch", "2.patch").to_bytes() == \
        RAW.replace(b"two.patch -p1", b"2.patch -p1")
    # The entries kept in their order, one left out: every other line as it was.
    assert series.replaced_names(["one.patch", "three.patch"]).to_bytes() == \
        b"# header comment\r\none.patch\r\n\r\nthree.patch"
    assert series.replaced_names(["two.patch"]).to_bytes() == \
        b"# header comment\r\n\r\ntwo.patch -p1 # why\r\n"
    reordered = series.replaced_names(["three.patch", "one.patch"])
    assert reordered.names == ["three.patch", "one.patch"]
    assert reordered.to_bytes().startswith(b"# header comment\r\n")


def test_empty_series():
    series = parse_series(b"", "s")
    assert series.names == [] and series.inserted("a.patch").to_bytes() == b"a.patch\n"


@pytest.mark.parametrize("data, line, message", [
    (b"a.patch\nb.patch\na.patch\n", 3, "listed twice (first on line 1)"),
    # One file by two spellings: applied twice, the second a conflict with the first.
    (b"a\nb.patch\na.patch\n", 3, "'a.patch' is listed twice (first on line 1 as 'a')"),
    (b"# c\na.patch -p0\n", 2, "-p1"),
    (b"a.patch -R\n", 1, "listed with -R: quilt applies it reversed"),
    (b"a.patch -p 0\n", 1, "listed with -p0: patchforge patches are -p1"),
    # Said why (quilt allows a patch in a subdirectory; "bad patch name" alone did not say).
    (b"\n\nsub/a.patch\n", 3, "bad patch name 'sub/a.patch': a patch of the series is a file "
     "directly in its series directory, never in a subdirectory"),
    (b"-a.patch\n", 1, "bad patch name '-a.patch': a name cannot begin with '-'"),
    (b"..\n", 1, "bad patch name '..': a name cannot be '.' or '..'"),
    # A NUL byte (a corrupted file, a bad merge tool) was an internal error, exit 70.
    (b"a.patch\n\x00\n", 2, "control character"),
    (b"a.patch\nb\x00c.patch\n", 2, "control character"),
    (b"a\x1b[31m.patch\n", 1, "control character"),
])
def test_errors_name_the_line(data, line, message):
    with pytest.raises(InputError) as info:
        parse_series(data, "series/up/series")
    assert info.value.path == "series/up/series" and info.value.line == line
    assert message in str(info.value)


def test_a_listed_patch_without_its_file_is_named_by_its_series_line(tmp_path):
    from helpers.project import OneUpstreamStack

    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": b"a = 1\n"})
    stack.add_patch("up", "fix", {"pkg/a.py": b"a = 2\n"})
    series = stack.root / "series" / "up" / "series"
    series.write_bytes(b"# the fixes\nfix.patch\ngone.patch\n")
    _, _, err = stack.cli("list", expect=2)
    assert f"{series}:3: patch gone.patch is listed in the series but the file is missing" in err
    # lint names the line too (it said only "listed in the series but missing").
    _, out, _ = stack.cli("lint", "--no-forge", expect=1)
    assert "series/up/series:3: listed in the series but the file is missing" in out, out


def test_a_series_file_read_again_is_parsed_once_and_never_served_stale(tmp_path):
    """A command reads a series file more than once (a rebase when it starts and for its
    write-out's plan): the same bytes share one parse, a file rewritten in between is read
    as it is now, a bad one refused as before."""
    from helpers.project import OneUpstreamStack

    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": b"a = 1\n"})
    stack.add_patch("up", "fix", {"pkg/a.py": b"a = 2\n"})
    project = stack.project()
    first = project.read_series("up")
    assert project.read_series("up") is first and project.patch_names("up") == ["fix.patch"]
    series = stack.root / "series" / "up" / "series"
    series.write_bytes(b"# the fixes\nfix.patch\nother\n")
    assert project.patch_names("up") == ["fix.patch", "other.patch"]
    series.write_bytes(b"fix.patch\nfix\n")
    with pytest.raises(InputError, match="listed twice"):
        project.read_series("up")


def _quilt_push_all(stack, tmp_path, name: str) -> bytes:
    """`quilt push -a` of series/up/ (QUILT_PATCHES at it) in a checkout of the pin: a.py."""
    import os
    import shutil
    import subprocess

    tree = tmp_path / name
    shutil.copytree(stack.up, tree, ignore=shutil.ignore_patterns(".git"))
    proc = subprocess.run(["quilt", "push", "-a"], cwd=tree, capture_output=True,
                          env={**os.environ, "QUILT_PATCHES": str(stack.root / "series/up"),
                               "QUILT_PC": str(tmp_path / f"{name}-pc"),
                               "QUILTRC": "/dev/null"})
    assert proc.returncode == 0, proc
    return (tree / "a.py").read_bytes()


@pytest.mark.skipif(__import__("shutil").which("quilt") is None, reason="needs quilt")
def test_a_line_without_patch_beside_a_file_of_that_very_name_is_read_as_quilt_reads_it(
        tmp_path):
    """A line `fix` names `fix.patch` here, and the file `fix` for quilt (which applies each
    line's file as written). With both files beside the series, `quilt push -a` applied `fix`
    and `overlays`, `status`, `export --quilt` the other, exit 0: two releases of one series.
    With `fix` alone, every command said `fix.patch` was missing beside the file quilt applies.
    Each is refused, exit 2, naming the line and both files, nothing written; kept as one
    `fix.patch` and its line, patchforge's overlay is quilt's a.py."""
    from helpers.project import OneUpstreamStack
    from helpers.snapshot import tree_bytes

    lines = b"".join(b"line%d\n" % n for n in range(1, 21))
    stack = OneUpstreamStack(tmp_path, {"a.py": lines})
    stack.add_patch("up", "first", {"a.py": lines.replace(b"line2\n", b"LINE2\n")})
    ours = stack.add_patch("up", "fix", {"a.py": lines.replace(b"line9\n", b"LINE9\n")})
    quilts = ours.replace(b"line9", b"line15").replace(b"LINE9", b"LINE15").replace(
        b"@@ -6,7 +6,7 @@", b"@@ -12,7 +12,7 @@").replace(b"line6\n line7\n line8\n",
                                                      b"line12\n line13\n line14\n").replace(
        b"line10\n line11\n line12\n", b"line16\n line17\n line18\n")
    directory = stack.root / "series" / "up"
    (directory / "fix").write_bytes(quilts)
    (directory / "series").write_bytes(b"first.patch\n# quilt's spelling\nfix\n")
    quilt_a = _quilt_push_all(stack, tmp_path, "both")
    assert b"LINE15\n" in quilt_a and b"LINE9\n" not in quilt_a, quilt_a
    series = directory / "series"
    for present in ("both", "bare only"):
        if present == "bare only":
            (directory / "fix.patch").unlink()
        before = tree_bytes(stack.root, skip=(".patchforge",))
        for args in (("overlays",), ("overlays", "--check"), ("status",), ("list",),
                     ("export", "--quilt", str(tmp_path / f"out-{present}"))):
            _, _, err = stack.cli(*args, expect=2)
            assert f"{series}:3: the line 'fix' names the file series/up/fix, which quilt " \
                   "applies as written" in err, (present, args, err)
            assert ("series/up/fix.patch is there too" if present == "both" else
                    "series/up/fix.patch, which is not there") in err, err
            assert "is listed in the series but the file is missing" not in err, err
        assert tree_bytes(stack.root, skip=(".patchforge",)) == before
        assert not (tmp_path / f"out-{present}").exists()
    # The way on: the fix quilt applies kept as fix.patch, listed as such.
    (directory / "fix").rename(directory / "fix.patch")
    series.write_bytes(b"first.patch\n# quilt's spelling\nfix.patch\n")
    stack.cli("overlays")
    assert (stack.root / "overlays" / "up" / "a.py").read_bytes() == quilt_a
