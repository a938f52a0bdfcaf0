"""Compiler options a fix adds to an argument list (`"-DFOO", "-DBAR",`) where upstream added some
of them itself: an option whose text says it takes no value (`"-DFOO"`, `"-fPIC"`, `"-O3"`,
`"--offload-arch=gfx942"`) is the same flag made twice wherever it stands, whatever the fix adds
beside it; an item after an option documented to take the next argument as its value
(`"-include", "csrc/extra.cu",`) is that option's value, not the source standing alone.
Real git upstreams, real commands."""
from __future__ import annotations

import pytest

from helpers.project import OneUpstreamStack

FLAGS = [b'"cc",', b'"-O2",', b'"-Wall",', b'"-g",', b'"-shared",', b'"-o",', b'"out.so",']


def listing(lines: list[bytes], other: list[bytes] = (b'"x",',)) -> bytes:
    """A module whose ARGS list holds `lines` as they are, one a line, and an OTHER list."""
    return (b"ARGS = [\n" + b"".join(b"    " + line + b"\n" for line in lines) + b"]\n"
            b"OTHER = [\n" + b"".join(b"    " + line + b"\n" for line in other) + b"]\n\n\n"
            b"def argv():\n    return ARGS + OTHER\n")


def stack_with(tmp_path, base: bytes, fix: bytes, upstream: bytes) -> OneUpstreamStack:
    stack = OneUpstreamStack(tmp_path, {"pkg/build.py": base, "pkg/b.py": b"b = 1\n"})
    stack.add_fix("fa", "pkg/build.py", base, fix)
    stack.commit({"pkg/build.py": upstream}, "Build with more flags", tag="v2")
    return stack


def made(stack: OneUpstreamStack) -> bytes:
    stack.cli("overlays")
    return (stack.root / "overlays/up/pkg/build.py").read_bytes()


def items(data: bytes, item: bytes) -> int:
    """How often the quoted `item` stands in the ARGS list of `data`."""
    args = data.split(b"]\nOTHER")[0]
    return args.count(b'"' + item + b'"')


@pytest.mark.parametrize("mine, theirs, where", [
    ([b'"-DFOO", "-DBAR",'], [b'"-DFOO",'], "head"),
    ([b'"-DFOO", "-DBAR",'], [b'"-DFOO",'], "middle"),
    ([b'"-DBAR", "-DFOO",'], [b'"-DFOO", "-DBAZ",'], "head"),
    ([b'"-DFOO", "-DBAR",'], [b'"-Wextra", "-DFOO",'], "middle"),
    ([b'"--offload-arch=gfx942", "-DBAR",'], [b'"--offload-arch=gfx942",'], "head"),
    ([b'"-fPIC", "-DBAR",'], [b'"-fPIC",'], "middle")],
    ids=["beside-another-flag", "upstreams-in-the-middle", "both-beside-others",
         "upstreams-beside-another", "a-value-written-in", "a-flag-of-no-value"])
def test_a_flag_upstream_added_beside_the_fixs_other_flag_stops(tmp_path, mine, theirs, where):
    # The fix adds `"-DFOO", "-DBAR",`, upstream `"-DFOO",` alone: an option counted as made
    # twice only where every item the fix adds was, so the rebase merged both in, exit 0, and
    # the list held -DFOO twice. A flag whose text takes no value is there twice whatever the
    # fix adds beside it; the first way on takes it alone out of the fix's line, keeping
    # -DBAR.
    at = 0 if where == "head" else 3
    stack = stack_with(tmp_path, listing(FLAGS), listing(FLAGS + mine),
                       listing(FLAGS[:at] + theirs + FLAGS[at:]))
    flag = [item for item in mine[0].split(b'"')[1::2]
            if item in theirs[0].split(b'"')[1::2]][0]
    status = stack.json("status", "--against", "v2", expect=1)
    assert [p["state"] for p in status["patches"]] == ["conflict"], status["patches"]
    _, _, err = stack.cli("rebase", "--to", "v2", expect=3)
    assert "upstream has these lines already, its own way" in err, err
    assert f'"{flag.decode()}" stands beside other items in yours than in upstream\'s' in err, err
    assert "own way; " in err and ": take only that item out of your line(s)" in err, err
    work = stack.root / ".patchforge/work/up/pkg/build.py"
    data = work.read_bytes()
    line = b"    " + mine[0] + b"\n"
    assert line in data, data.decode()
    kept = b", ".join(b'"' + item + b'"' for item in mine[0].split(b'"')[1::2] if item != flag)
    work.write_bytes(data.replace(line, b"    " + kept + b",\n"))
    stack.cli("rebase", "--continue")
    assert stack.series("up") == ["fa.patch"]
    result = made(stack)
    assert items(result, flag) == 1 and items(result, b"-DBAR") == 1, result.decode()


def test_a_flag_upstream_added_beside_the_fixs_flag_on_lines_of_their_own_stops(tmp_path):
    # The same, each flag on a line of its own: deleting the fix's `"-DFOO",` line loses
    # nothing, and that way comes first.
    stack = stack_with(tmp_path, listing(FLAGS), listing(FLAGS + [b'"-DFOO",', b'"-DBAR",']),
                       listing([b'"-DFOO",'] + FLAGS))
    _, _, err = stack.cli("rebase", "--to", "v2", expect=3)
    assert "pkg/build.py line 10 (upstream's at line 2): upstream has these lines already, " \
        "its own way: delete your copy of these lines" in err, err
    work = stack.root / ".patchforge/work/up/pkg/build.py"
    work.write_bytes(work.read_bytes().replace(b'    "-DFOO",\n    "-DBAR",\n',
                                               b'    "-DBAR",\n'))
    stack.cli("rebase", "--continue")
    result = made(stack)
    assert items(result, b"-DFOO") == 1 and items(result, b"-DBAR") == 1, result.decode()


@pytest.mark.parametrize("base, mine, theirs, other", [
    (FLAGS, [b'"-DFOO", "-DBAR",'], [b'"-DBAZ",'] + FLAGS, None),
    (FLAGS, [b'"-DFOO", "-DBAR",'], FLAGS, [b'"x",', b'"-DFOO",']),
    (FLAGS, [b'"-DFOO", "-DBAR",'], [b'extra("-DFOO", "-DQ"),'] + FLAGS, None),
    ([b'"-DFOO",'] + FLAGS, [b'"-DFOO", "-DBAR",'], FLAGS, None),
    (FLAGS, [b'"-Xcompiler", "-DFOO", "-DBAR",'], [b'"-DFOO",'] + FLAGS, None),
    (FLAGS, [b'"-D", "FOO", "-DBAR",'], [b'"-D", "BAZ",'] + FLAGS, None)],
    ids=["other-flags", "in-another-list", "in-a-call", "upstream-removed-it",
         "yours-an-options-value", "a-define-with-another-value"])
def test_a_flag_only_looking_alike_or_not_there_twice_moves(tmp_path, base, mine, theirs, other):
    # Mirrors, each moving, every item kept: upstream added other flags; the same flag to
    # another list, or as a call's argument; upstream removed the base's -DFOO, which the fix
    # adds again beside -DBAR (once in the result); the fix's -DFOO is the value of its
    # `-Xcompiler` (passed on to the host compiler); a `-D` of another value.
    stack = stack_with(tmp_path, listing(base), listing(base + mine),
                       listing(theirs, other if other is not None else [b'"x",']))
    status = stack.json("status", "--against", "v2", expect=None)
    assert [p["rebase"] for p in status["patches"]] == ["move"], status["patches"]
    stack.rebase_json("--to", "v2")
    result = made(stack)
    assert all(line in result for line in mine + theirs), result.decode()
    assert items(result, b"-DBAR") == 1, result.decode()


@pytest.mark.parametrize("theirs", [
    [b'"-include", "csrc/extra.cu",'], [b'"-include",', b'"csrc/extra.cu",'],
    [b'"-Xcompiler", "-fPIC",'], [b'"-o", "csrc/extra.cu",']],
    ids=["include-on-one-line", "include-over-two", "host-flag", "an-output"])
def test_a_source_upstream_added_as_an_options_value_moves(tmp_path, theirs):
    # The fix appends a source (`"csrc/extra.cu",`) or a flag (`"-fPIC",`); upstream added
    # the same string as the value of an option documented to take the next argument
    # (`"-include"`, `"-Xcompiler"`, `"-o"`): another item. It stopped as made twice, and
    # its first advice, delete your copy, lost the fix its source.
    mine = [b'"-fPIC",'] if b'"-fPIC"' in theirs[-1] else [b'"csrc/extra.cu",']
    stack = stack_with(tmp_path, listing(FLAGS), listing(FLAGS + mine),
                       listing(theirs + FLAGS))
    status = stack.json("status", "--against", "v2", expect=None)
    assert [p["rebase"] for p in status["patches"]] == ["move"], status["patches"]
    stack.rebase_json("--to", "v2")
    result = made(stack)
    assert all(line in result for line in theirs + mine), result.decode()
    assert result.count(mine[0]) == 2, result.decode()


@pytest.mark.parametrize("mine, theirs", [
    ([b'"csrc/extra.cu",'], [b'"-fPIC", "csrc/extra.cu",']),
    ([b'"csrc/extra.cu",'], [b'"-fPIC",', b'"csrc/extra.cu",']),
    ([b'"-include", "csrc/extra.cu",'], [b'"-include", "csrc/extra.cu",']),
    ([b'"-fPIC", "csrc/extra.cu",'], [b'"csrc/extra.cu",']),
    ([b'"csrc/extra.cu", "csrc/other.cu",'], [b'"csrc/extra.cu",'])],
    ids=["after-a-flag-of-no-value", "after-such-a-flag-over-two", "the-same-pair",
         "yours-after-a-flag-of-no-value", "beside-another-source"])
def test_a_source_made_twice_after_a_flag_of_no_value_stops(tmp_path, mine, theirs):
    # Mirrors: after a flag that takes no value (`"-fPIC"`), or with the same option before
    # each copy, the source is the same item made twice: it stops, loud.
    stack = stack_with(tmp_path, listing(FLAGS), listing(FLAGS + mine), listing(theirs + FLAGS))
    status = stack.json("status", "--against", "v2", expect=1)
    assert [p["state"] for p in status["patches"]] == ["conflict"], status["patches"]
    _, _, err = stack.cli("rebase", "--to", "v2", expect=3)
    assert "upstream has these lines already, its own way" in err, err
    assert "may take it as its value" not in err, err


@pytest.mark.parametrize("theirs", [
    [b'"--embed", "csrc/extra.cu",'], [b'"--embed",', b'"csrc/extra.cu",']],
    ids=["on-one-line", "over-two"])
def test_a_source_upstream_added_after_an_option_of_no_known_kind_stops_keeping_yours_first(
        tmp_path, theirs):
    # Upstream added the fix's source after an option nothing tells the kind of (`"--embed"`):
    # its value, or a flag of none and the source made twice. It stops, as it did, but its
    # first advice, delete your copy, lost the fix its source where the option takes a value:
    # now it says upstream's copy follows that option, and keep yours comes first.
    stack = stack_with(tmp_path, listing(FLAGS), listing(FLAGS + [b'"csrc/extra.cu",']),
                       listing(theirs + FLAGS))
    _, _, err = stack.cli("rebase", "--to", "v2", expect=3)
    assert f"pkg/build.py line {len(FLAGS) + len(theirs) + 2} (upstream's at line " \
        f"{len(theirs) + 1}): upstream has these lines already, its own way; " \
        '"csrc/extra.cu" follows an option upstream added with it, which may take it as its ' \
        'value ("--embed", line 2): keep yours' in err, err
    stack.cli("rebase", "--continue")
    assert stack.series("up") == ["fa.patch"]
    result = made(stack)
    assert all(line in result for line in theirs), result.decode()
    assert items(result, b"csrc/extra.cu") == 2, result.decode()


@pytest.mark.parametrize("mine", [
    [b'"--embed", "csrc/extra.cu",'], [b'"--embed",', b'"csrc/extra.cu",']],
    ids=["the-same-pair", "the-same-pair-over-two"])
def test_the_same_option_and_source_added_both_ways_keeps_delete_your_copy_first(tmp_path,
                                                                                   mine):
    # Mirror: the fix's copy follows the same option: the pair is made twice, and deleting
    # the fix's lines loses nothing.
    stack = stack_with(tmp_path, listing(FLAGS), listing(FLAGS + mine),
                       listing([b'"--embed", "csrc/extra.cu",'] + FLAGS))
    _, _, err = stack.cli("rebase", "--to", "v2", expect=3)
    assert "upstream has these lines already, its own way: delete your copy" in err, err


WERROR = [b'"cc",', b'"-O2",', b'"-Wall",', b'"-Werror",']


@pytest.mark.parametrize("mine, theirs", [
    (WERROR + [b'"-fPIC",'], [b'"-fPIC",'] + WERROR),
    ([b'"-fPIC",'] + WERROR, WERROR + [b'"-fPIC",']),
    (WERROR + [b'"csrc/extra.cu",'], [b'"csrc/extra.cu",'] + WERROR)],
    ids=["yours-after-it", "upstreams-after-it", "a-source-after-it"])
def test_an_item_made_twice_after_gccs_werror_stops(tmp_path, mine, theirs):
    # gcc's and clang's `-Werror` takes no value (nvcc's takes a kind of warning): an item
    # after it was read as its value, another item than upstream's copy, and merged in twice,
    # exit 0.
    stack = stack_with(tmp_path, listing(WERROR), listing(mine), listing(theirs))
    status = stack.json("status", "--against", "v2", expect=1)
    assert [p["state"] for p in status["patches"]] == ["conflict"], status["patches"]
    _, _, err = stack.cli("rebase", "--to", "v2", expect=3)
    assert "upstream has these lines already, its own way" in err, err


def test_nvccs_werror_takes_its_kind_as_its_value(tmp_path):
    # Mirror: before one of nvcc's kinds `-Werror` is an option with its value: the fix's
    # `"-Werror", "reorder",` beside upstream's `"-Werror", "all-warnings",` adds another
    # pair, not a flag made twice; both kept.
    nvcc = [b'"nvcc",', b'"-O3",', b'"-o",', b'"out.so",']
    mine, theirs = [b'"-Werror", "reorder",'], [b'"-Werror", "all-warnings",']
    stack = stack_with(tmp_path, listing(nvcc), listing(nvcc + mine), listing(theirs + nvcc))
    status = stack.json("status", "--against", "v2", expect=None)
    assert [p["rebase"] for p in status["patches"]] == ["move"], status["patches"]
    stack.rebase_json("--to", "v2")
    result = made(stack)
    assert all(line in result for line in mine + theirs), result.decode()


@pytest.mark.parametrize("option", [b"-maxrregcount", b"-fmad", b"-std"])
def test_an_nvcc_option_written_as_a_flag_keeps_its_value(tmp_path, option):
    # nvcc's `-maxrregcount` (`-fmad`, `-std`) takes the next argument, though written as
    # gcc's flags of none are (`-m...`, `-f...`): the fix's `"-maxrregcount", "64",` beside
    # upstream's `"-maxrregcount", "128",` stopped with the first advice to take the option
    # alone out of the fix's line, which leaves "64" for nvcc to read as an input file. An
    # option with another value moves, as `"-D", "FOO"` beside `"-D", "BAZ"` does, both kept.
    nvcc = [b'"nvcc",', b'"-O3",', b'"-lineinfo",', b'"-o",', b'"out.so",']
    mine = [b'"' + option + b'", "64",']
    theirs = [b'"' + option + b'", "128",']
    stack = stack_with(tmp_path, listing(nvcc), listing(nvcc + mine), listing(theirs + nvcc))
    status = stack.json("status", "--against", "v2", expect=None)
    assert [p["rebase"] for p in status["patches"]] == ["move"], status["patches"]
    stack.rebase_json("--to", "v2")
    result = made(stack)
    assert all(line in result for line in mine + theirs), result.decode()
