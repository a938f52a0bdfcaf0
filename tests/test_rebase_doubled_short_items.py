"""A short quoted item the fix adds to a list, set or dict literal (`"gfx1201",`) that upstream added
to the same literal at another place (the list's head, or in order): shorter than any run the
doubling check reads, it was never read, and `status` said the fix applies at an offset, the
rebase moved it, exit 0, the literal holding the item twice. Now the copy stops as upstream's
own way. The same item upstream added to another list is that list's: the fix moves, both kept.
Real git upstreams, real commands."""
from __future__ import annotations

import pytest

from helpers.project import OneUpstreamStack

ARCHS = [b"gfx90a", b"gfx940", b"gfx942", b"gfx950", b"gfx1100", b"gfx1200"]


def module(archs: list[bytes], other: list[bytes] = (b"x",)) -> bytes:
    return (b"SUPPORTED = [\n" + b"".join(b'    "' + a + b'",\n' for a in archs) + b"]\n"
            b"OTHER = [\n" + b"".join(b'    "' + a + b'",\n' for a in other) + b"]\n\n\n"
            b"def ok(a):\n    return a in SUPPORTED\n")


def stack_with(tmp_path, base: bytes, fix: bytes, upstream: bytes) -> OneUpstreamStack:
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": base, "pkg/b.py": b"b = 1\n"})
    stack.add_fix("fa", "pkg/a.py", base, fix)
    stack.commit({"pkg/a.py": upstream}, "Support gfx1201", tag="v2")
    return stack


def test_an_item_upstream_added_to_the_same_list_elsewhere_stops(tmp_path):
    # The fix appends gfx1201; upstream put it among the others, four lines up.
    stack = stack_with(tmp_path, module(ARCHS), module(ARCHS + [b"gfx1201"]),
                       module(ARCHS[:3] + [b"gfx1201"] + ARCHS[3:]))
    status = stack.json("status", "--against", "v2", expect=1)
    assert [p["state"] for p in status["patches"]] == ["conflict"], status["patches"]
    _, _, err = stack.cli("rebase", "--to", "v2", expect=3)
    assert "upstream has these lines already, its own way" in err, err
    assert "pkg/a.py line 9 (upstream's at line 5)" in err, err


def test_an_item_upstream_added_to_another_list_moves(tmp_path):
    # Mirror: upstream added gfx1201 to OTHER, not to SUPPORTED: two lists, both wanted.
    stack = stack_with(tmp_path, module(ARCHS), module(ARCHS + [b"gfx1201"]),
                       module(ARCHS, [b"x", b"gfx1201"]))
    summary = stack.rebase_json("--to", "v2")
    assert [p["action"] for p in summary["patches"]] in (["clean"], ["offset"]), summary
    stack.cli("overlays")
    assert (stack.root / "overlays/up/pkg/a.py").read_bytes().count(b'"gfx1201",') == 2


def test_an_item_upstream_added_in_other_quotes_stops(tmp_path):
    # The fix appends "gfx1201"; upstream put 'gfx1201' among the others: the same value,
    # other quotes (it merged in twice, exit 0).
    base = module(ARCHS)
    upstream = base.replace(b'    "gfx950",\n', b"    'gfx1201',\n    \"gfx950\",\n")
    stack = stack_with(tmp_path, base, module(ARCHS + [b"gfx1201"]), upstream)
    _, _, err = stack.cli("rebase", "--to", "v2", expect=3)
    assert "upstream has these lines already, its own way" in err, err
    assert "pkg/a.py line 9 (upstream's at line 5)" in err, err


def test_a_flag_item_upstream_added_with_another_value_moves(tmp_path):
    # The fix appends `"-D", "A=1",` to an argv list; upstream put `"-D", "B=2",` at its
    # head: "-D" is there twice, two defines, both wanted (it stopped, its first advice,
    # delete your copy of "-D", losing the define A=1).
    flags = [b"cc", b"-O2", b"-Wall", b"-Wextra", b"-g", b"-fPIC", b"-shared"]
    base = module(flags)
    stack = stack_with(tmp_path, base, module(flags + [b"-D", b"A=1"]),
                       module([b"-D", b"B=2"] + flags))
    summary = stack.rebase_json("--to", "v2")
    assert [p["action"] for p in summary["patches"]] in (["clean"], ["offset"]), summary
    stack.cli("overlays")
    made = (stack.root / "overlays/up/pkg/a.py").read_bytes()
    assert b'"A=1",' in made and b'"B=2",' in made, made
    assert made.count(b'"-D",') == 2, made


def test_items_added_beside_one_upstream_added_elsewhere_stop(tmp_path):
    # The fix appends gfx1150 and gfx1201; upstream put gfx1201 alone among the others: the
    # doubled-item check fired only where every item the fix adds was there twice, so the
    # list held gfx1201 twice, exit 0. An item standing alone (no option, no option's value)
    # is there twice whatever the fix adds beside it.
    stack = stack_with(tmp_path, module(ARCHS), module(ARCHS + [b"gfx1150", b"gfx1201"]),
                       module(ARCHS[:3] + [b"gfx1201"] + ARCHS[3:]))
    status = stack.json("status", "--against", "v2", expect=1)
    assert [p["state"] for p in status["patches"]] == ["conflict"], status["patches"]
    _, _, err = stack.cli("rebase", "--to", "v2", expect=3)
    assert "upstream has these lines already, its own way" in err, err
    assert "pkg/a.py line 10 (upstream's at line 5)" in err, err


FLAGS = [b"cc", b"-O2", b"-Wall", b"-Wextra", b"-g", b"-fPIC", b"-shared"]


def test_options_or_their_values_added_again_beside_other_items_move(tmp_path):
    # Mirrors: `"-Xcompiler", "-ffast-math",` beside upstream's `"-Xcompiler", "-O3",` (an
    # option whose value is an option), `"-I", "inc",` beside upstream's `"-isystem", "inc",`
    # (a value after another option), a template's empty line `"",` beside upstream's (no
    # name: a list of lines holds it many times): each the fix's own, both kept.
    template = [b"#include <x.h>", b"int main() {", b"return 0;", b"}"]
    for k, (items, mine, theirs, twice) in enumerate([
            (FLAGS, [b"-Xcompiler", b"-ffast-math"], [b"-Xcompiler", b"-O3"], b'"-Xcompiler",'),
            (FLAGS, [b"-I", b"inc"], [b"-isystem", b"inc"], b'"inc",'),
            (template, [b"", b"int y = 0;"], [b""], b'    "",')]):
        stack = stack_with(tmp_path / str(k), module(items), module(items + mine),
                           module(theirs + items))
        summary = stack.rebase_json("--to", "v2")
        assert [p["action"] for p in summary["patches"]] in (["clean"], ["offset"]), summary
        stack.cli("overlays")
        made = (stack.root / "overlays/up/pkg/a.py").read_bytes()
        assert made.count(twice) == 2, made


def test_an_item_upstream_added_after_another_new_item_stops(tmp_path):
    # The fix extends an arch table with `"gfx1150", "gfx1201",`, upstream with `"gfx1250",
    # "gfx1201",` at another place: above each copy a new item of its own side. Read as the
    # values of two keys (a flat list of pairs), it moved, exit 0, and the table held
    # `"gfx1201"` twice. Which of the two it is, nothing in the list tells: it stops, loud.
    for k, (mine, theirs) in enumerate([([b"gfx1150", b"gfx1201"], [b"gfx1250", b"gfx1201"]),
                                        ([b"gfx1151", b"gfx1201"], [b"gfx1152", b"gfx1201"])]):
        stack = stack_with(tmp_path / str(k), module(ARCHS), module(ARCHS + mine),
                           module(ARCHS[:4] + theirs + ARCHS[4:]))
        _, _, err = stack.cli("rebase", "--to", "v2", expect=3)
        assert "upstream has these lines already, its own way" in err, err


def test_an_item_upstream_added_after_a_base_item_stops_beside_a_new_one(tmp_path):
    # Mirror: above the fix's copy the fix's own new item, above upstream's a base item
    # (`"gfx950",`): upstream's own copy of the fix's item, the list would hold it twice.
    stack = stack_with(tmp_path, module(ARCHS), module(ARCHS + [b"gfx1150", b"gfx1201"]),
                       module(ARCHS[:4] + [b"gfx1201"] + ARCHS[4:]))
    _, _, err = stack.cli("rebase", "--to", "v2", expect=3)
    assert "upstream has these lines already, its own way" in err, err


def test_an_item_with_a_comment_upstream_added_elsewhere_stops(tmp_path):
    # `"gfx1201",  # RDNA4`, upstream's or the fix's, is the item `"gfx1201",`: the comment
    # hid it from the item check, and the list held it twice, exit 0.
    base = module(ARCHS)
    for k, (mine, theirs) in enumerate([(b'"gfx1201",', b'"gfx1201",  # RDNA4'),
                                        (b'"gfx1201",  # RDNA4', b'"gfx1201",')]):
        fix = base.replace(b"]\nOTHER", b"    " + mine + b"\n]\nOTHER")
        upstream = base.replace(b'    "gfx950",\n', b'    "gfx950",\n    ' + theirs + b"\n")
        stack = stack_with(tmp_path / str(k), base, fix, upstream)
        _, _, err = stack.cli("rebase", "--to", "v2", expect=3)
        assert "upstream has these lines already, its own way" in err, err
        assert "pkg/a.py line 9 (upstream's at line 6)" in err, err


def listing(lines: list[bytes]) -> bytes:
    """A module whose SUPPORTED list holds `lines` as they are, one a line (several items on
    one, or other code)."""
    return (b"SUPPORTED = [\n" + b"".join(b"    " + line + b"\n" for line in lines) + b"]\n"
            b"OTHER = [\n    \"x\",\n]\n\n\ndef ok(a):\n    return a in SUPPORTED\n")


TABLE = [b'"gfx90a",', b'"gfx940",', b'"gfx942",', b'"gfx950",', b'"gfx1100",']


@pytest.mark.parametrize("mine, theirs", [
    ([b'"gfx1201",'], [b'"gfx1201", "gfx1200",']),
    ([b'"gfx1201", "gfx1200",'], [b'"gfx1201",']),
    ([b'"gfx1200", "gfx1201",'], [b"'gfx1151', 'gfx1201',  # RDNA"]),
    ([b'"gfx1150", "gfx1201",'], [b'"gfx1250", "gfx1201",']),
    ([b'"gfx1150", "gfx1201",'], [b'"gfx1250",', b'"gfx1201",']),
    ([b'"gfx1150",', b'"gfx1201",'], [b'"gfx1250", "gfx1201",'])],
    ids=["upstreams-beside-another", "yours-beside-another", "both-beside-others",
         "table-extended-both-ways", "table-both-ways-yours-on-one-line",
         "table-both-ways-upstreams-on-one-line"])
def test_an_item_upstream_added_on_a_line_holding_another_stops(tmp_path, mine, theirs):
    # The fix appends gfx1201 to the table; upstream put it after gfx950, on a line holding
    # another item, or on a line of its own where the fix's line holds another: only an item
    # on a line of its own was compared, so the rebase merged both in, exit 0, and the table
    # held gfx1201 twice. An item counts wherever it stands on a line of quoted items.
    stack = stack_with(tmp_path, listing(TABLE), listing(TABLE + mine),
                       listing(TABLE[:4] + theirs + TABLE[4:]))
    status = stack.json("status", "--against", "v2", expect=1)
    assert [p["state"] for p in status["patches"]] == ["conflict"], status["patches"]
    _, _, err = stack.cli("rebase", "--to", "v2", expect=3)
    assert "upstream has these lines already, its own way" in err, err
    assert f"pkg/a.py line {len(TABLE) + len(theirs) + len(mine) + 1} " \
        f"(upstream's at line {4 + len(theirs) + 1})" in err, err


@pytest.mark.parametrize("theirs", [
    [b'"gfx1201a", "gfx1151",'], [b'"gfx1201:xnack+", "gfx1151",'], [b'"gfx120", "gfx1151",'],
    [b'gfx1201, "gfx1151",'], [b'arch("gfx1201", "rdna4"),'],
    [b"arch(", b'    "gfx1201", "rdna4",', b"),"], [b"arch(", b'    "gfx1201",', b"),"]],
    ids=["another-name", "a-longer-name", "a-substring", "unquoted", "in-a-call",
         "in-a-wrapped-call", "alone-in-a-wrapped-call"])
def test_an_item_only_looking_alike_on_a_line_beside_another_moves(tmp_path, theirs):
    # Mirrors: upstream's line holds another name (`"gfx1201a"`, `"gfx1201:xnack+"`, part
    # of it, `"gfx120"`), the name unquoted in code, or the string as a call's argument (the
    # call's, not the table's, also alone on its line: it stopped, its first advice, delete
    # your copy, losing the table its gfx1201): the fix's is the table's only one, both kept.
    mine = [b'"gfx1201",']
    stack = stack_with(tmp_path, listing(TABLE), listing(TABLE + mine),
                       listing(TABLE[:4] + theirs + TABLE[4:]))
    status = stack.json("status", "--against", "v2", expect=None)
    assert [p["rebase"] for p in status["patches"]] == ["move"], status["patches"]
    stack.rebase_json("--to", "v2")
    stack.cli("overlays")
    made = (stack.root / "overlays/up/pkg/a.py").read_bytes()
    assert made.count(b'    "gfx1201",\n]') == 1 and all(line in made for line in theirs), \
        made.decode()


def test_a_flag_pair_on_one_line_beside_upstreams_moves(tmp_path):
    # Mirror: `"-D", "A=1",` on one line where upstream put `"-D", "B=2",` at the head: "-D"
    # is there twice, two defines, both wanted.
    flags = [b'"cc",', b'"-O2",', b'"-Wall",', b'"-g",', b'"-fPIC",', b'"-shared",']
    stack = stack_with(tmp_path, listing(flags), listing(flags + [b'"-D", "A=1",']),
                       listing([b'"-D", "B=2",'] + flags))
    summary = stack.rebase_json("--to", "v2")
    assert [p["action"] for p in summary["patches"]] in (["clean"], ["offset"]), summary
    stack.cli("overlays")
    made = (stack.root / "overlays/up/pkg/a.py").read_bytes()
    assert b'"-D", "A=1",' in made and b'"-D", "B=2",' in made, made.decode()


FLAG_LINES = [b'"cc",', b'"-O2", "-g",', b'"-Wall",', b'"-fPIC",', b'"-shared",']


@pytest.mark.parametrize("items, mine, theirs", [
    (FLAG_LINES, b'"-O2", "-g", "-DFOO",', b'"-DFOO",'),
    (TABLE[:2] + [b'"gfx942", "gfx950",', b'"gfx1100",'], b'"gfx942", "gfx950", "gfx1201",',
     b'"gfx1201",')], ids=["an-option", "a-name"])
def test_an_item_the_fix_adds_to_a_line_of_the_base_upstream_added_stops(
        tmp_path, items, mine, theirs):
    # The fix adds its item to a line the list had (`"-O2", "-g",` made `"-O2", "-g",
    # "-DFOO",`), upstream the same item on a line of its own at the list's head: the items the
    # line kept are no items the fix adds, and `"-DFOO"` is every item it adds, there twice.
    at = items.index(mine.rsplit(b" ", 1)[0])
    stack = stack_with(tmp_path, listing(items),
                       listing(items[:at] + [mine] + items[at + 1:]), listing([theirs] + items))
    _, _, err = stack.cli("rebase", "--to", "v2", expect=3)
    assert "upstream has these lines already, its own way" in err, err
    assert f"pkg/a.py line {at + 3} (upstream's at line 2)" in err, err


def test_an_option_pair_the_fix_adds_to_a_line_of_the_base_moves(tmp_path):
    # Mirror: `"-D", "A=1"` added to the base's line `"-O2", "-g",`, upstream's `"-D", "B=2",`
    # at the head: "-D" twice, two defines, both kept.
    mine = b'"-O2", "-g", "-D", "A=1",'
    stack = stack_with(tmp_path, listing(FLAG_LINES),
                       listing(FLAG_LINES[:1] + [mine] + FLAG_LINES[2:]),
                       listing([b'"-D", "B=2",'] + FLAG_LINES))
    stack.rebase_json("--to", "v2")
    stack.cli("overlays")
    made = (stack.root / "overlays/up/pkg/a.py").read_bytes()
    assert mine in made and b'"-D", "B=2",' in made, made.decode()


PAIRS = [b"CC", b"clang", b"CXX", b"clang++"]


@pytest.mark.parametrize("base, fix, theirs, said", [
    (module(PAIRS), module(PAIRS + [b"HIPCC", b"hipcc"]), module([b"HIPCXX", b"hipcc"] + PAIRS),
     '"hipcc" stands beside other items in yours than in upstream\'s (upstream\'s lines 2-3: '
     '"HIPCXX", "hipcc"; yours, lines 8-9: "HIPCC", "hipcc")'),
    (listing([b'"CC", "clang",', b'"CXX", "clang++",']),
     listing([b'"CC", "clang",', b'"CXX", "clang++",', b'"HIPCC", "hipcc",']),
     listing([b'"HIPCXX", "hipcc",', b'"CC", "clang",', b'"CXX", "clang++",']),
     '"hipcc" stands beside other items in yours than in upstream\'s (upstream\'s line 2: '
     '"HIPCXX", "hipcc"; yours, line 5: "HIPCC", "hipcc")')],
    ids=["a-pair-a-line", "pairs-on-a-line"])
def test_a_value_of_a_list_of_pairs_stops_saying_both_lines_and_keep_yours_for_pairs(
        tmp_path, base, fix, theirs, said):
    # A flat list of pairs of names: the fix adds `"HIPCC", "hipcc",`, upstream `"HIPCXX",
    # "hipcc",` at its head. "hipcc" is there twice, each its key's value; nothing in the list
    # tells it from a name made twice beside two new names, and it stops. Its first advice
    # was delete your copy, losing the fix's pair its value (on one line, its key too); now
    # the stop says both copies' lines, and that keep yours is the way for a list of pairs:
    # followed, both pairs stay.
    stack = stack_with(tmp_path, base, fix, theirs)
    _, _, err = stack.cli("rebase", "--to", "v2", expect=3)
    assert "upstream has these lines already, its own way; " + said + ": " in err, err
    assert "keep yours (--continue with the worktree as it is: the item stays twice, each " \
        "beside its own items) where the list holds pairs, each value its key's" in err, err
    stack.cli("rebase", "--continue")
    assert stack.series("up") == ["fa.patch"]
    stack.cli("overlays")
    made = b" ".join((stack.root / "overlays/up/pkg/a.py").read_bytes().split())
    assert made.count(b'"HIPCC", "hipcc",') == 1 and made.count(b'"HIPCXX", "hipcc",') == 1, made


NUMBERED = [b"fp16", b"64", b"bf16", b"256"]


@pytest.mark.parametrize("base, fix, theirs", [
    (module(NUMBERED), module(NUMBERED + [b"fp8", b"128"]), module([b"fp32", b"128"] + NUMBERED)),
    (module(NUMBERED), module(NUMBERED + [b"fp8", b"128"]),
     module([b"fp16", b"128"] + NUMBERED[2:])),
    (listing([b'"fp16", "64",', b'"bf16", "256",']),
     listing([b'"fp16", "64",', b'"bf16", "256",', b'"fp8", "128",']),
     listing([b'"fp32", "128",', b'"fp16", "64",', b'"bf16", "256",'])),
    (listing([b'"fp16", "64",', b'"bf16", "256",']),
     listing([b'"fp16", "64",', b'"bf16", "256",', b'"fp8", "128",']),
     listing([b'"fp16", "128",', b'"bf16", "256",']))],
    ids=["a-pair-a-line", "upstream-gave-a-base-key-the-value", "pairs-on-a-line",
         "pairs-on-a-line-a-base-keys-value"])
def test_a_number_of_a_list_of_pairs_after_another_key_moves(tmp_path, base, fix, theirs):
    # A flat list of pairs, each a key and its number (`"fp16", "64",`): the fix adds `"fp8",
    # "128",`, upstream `"fp32", "128",`, or gives the base's fp16 the value 128. It stopped
    # as made twice, its first advice losing the fix's pair its value (where upstream gave a
    # base key the value, delete your copy first). Every second item a number, none of the
    # others: each "128" is its key's, both wanted; the rebase moves the fix, both kept.
    stack = stack_with(tmp_path, base, fix, theirs)
    status = stack.json("status", "--against", "v2", expect=None)
    assert [p["rebase"] for p in status["patches"]] == ["move"], status["patches"]
    stack.rebase_json("--to", "v2")
    stack.cli("overlays")
    made = b" ".join((stack.root / "overlays/up/pkg/a.py").read_bytes().split())
    theirs_pair = b'"fp32", "128",' if b"fp32" in theirs else b'"fp16", "128",'
    assert made.count(b'"fp8", "128",') == 1 and made.count(theirs_pair) == 1, made


@pytest.mark.parametrize("mine, theirs", [
    ([b"fp8", b"128"], [b"fp8", b"256"]), ([b"fp8", b"128"], [b"fp8", b"128"]),
    ([b"bf8", b"fp8"], [b"fp4", b"fp8"])],
    ids=["a-key-with-another-number", "the-same-pair", "names-with-no-number"])
def test_a_key_or_a_name_made_twice_in_a_list_of_pairs_stops(tmp_path, mine, theirs):
    # Mirrors: a key made twice (another number or the same pair), or a list without numbers
    # (a table of names extended on both sides): made twice, it stops, loud.
    base = NUMBERED if mine[1].isdigit() else [b"fp16", b"bf16", b"fp32", b"fp64"]
    stack = stack_with(tmp_path, module(base), module(base + mine), module(theirs + base))
    _, _, err = stack.cli("rebase", "--to", "v2", expect=3)
    assert "upstream has these lines already, its own way" in err, err


def test_a_name_made_twice_beside_another_new_name_is_taken_out_of_the_line_alone(tmp_path):
    # The arch table extended on both sides, on one line each (`"gfx1150", "gfx1201",`,
    # upstream's `"gfx1250", "gfx1201",`): it merged in twice, exit 0. It stops, saying both
    # lines; the second way, gfx1201 alone taken out of the fix's line, keeps its gfx1150.
    stack = stack_with(tmp_path, listing(TABLE), listing(TABLE + [b'"gfx1150", "gfx1201",']),
                       listing(TABLE[:4] + [b'"gfx1250", "gfx1201",'] + TABLE[4:]))
    _, _, err = stack.cli("rebase", "--to", "v2", expect=3)
    assert "(upstream's line 6: \"gfx1250\", \"gfx1201\"; yours, line 8: \"gfx1150\", " \
        "\"gfx1201\"): take only that item out of your line(s)" in err, err
    work = stack.root / ".patchforge/work/up/pkg/a.py"
    work.write_bytes(work.read_bytes().replace(b'"gfx1150", "gfx1201",', b'"gfx1150",'))
    stack.cli("rebase", "--continue")
    assert stack.series("up") == ["fa.patch"]
    assert b'+    "gfx1150",\n' in stack.patch("up", "fa"), stack.patch("up", "fa").decode()
    stack.cli("overlays")
    made = (stack.root / "overlays/up/pkg/a.py").read_bytes()
    assert made.count(b'"gfx1201"') == 1 and made.count(b'"gfx1150"') == 1, made.decode()


def test_a_name_alone_on_the_fixs_line_keeps_delete_your_copy_first(tmp_path):
    # Mirror: the fix's line holds gfx1201 alone, upstream's `"gfx1201", "gfx1200",`:
    # deleting the fix's line loses nothing, and that way comes first; followed, the fix is
    # left with no change and set aside (upstream's table holds gfx1201 once).
    stack = stack_with(tmp_path, listing(TABLE), listing(TABLE + [b'"gfx1201",']),
                       listing(TABLE[:4] + [b'"gfx1201", "gfx1200",'] + TABLE[4:]))
    _, _, err = stack.cli("rebase", "--to", "v2", expect=3)
    assert "pkg/a.py line 8 (upstream's at line 6): upstream has these lines already, its " \
        "own way: delete your copy of these lines" in err, err
    work = stack.root / ".patchforge/work/up/pkg/a.py"
    work.write_bytes(work.read_bytes().replace(b'    "gfx1201",\n', b""))
    _, out, _ = stack.cli("rebase", "--continue", expect=None)
    assert "resolved to no change" in out, out
    assert stack.series("up") == [] and (stack.root / "series/up/skipped/fa.patch").is_file()


@pytest.mark.parametrize("items, line", [
    (FLAGS, b'"-D", "A=1",'), ([a.strip(b'",') for a in TABLE], b'"gfx1201", "gfx1151",')],
    ids=["a-define", "two-names"])
def test_a_line_of_upstreams_very_items_keeps_delete_your_copy_first(tmp_path, items, line):
    # Mirror: the fix's line holds just the items of upstream's line (`"-D", "A=1",` both):
    # deleting it loses nothing, and that way comes first (it said keep yours first).
    base = listing([b'"' + item + b'",' for item in items])
    stack = stack_with(tmp_path, base, base.replace(b"]\nOTHER", b"    " + line + b"\n]\nOTHER"),
                       base.replace(b"SUPPORTED = [\n", b"SUPPORTED = [\n    " + line + b"\n"))
    _, _, err = stack.cli("rebase", "--to", "v2", expect=3)
    assert "upstream has these lines already, its own way: delete your copy of these lines" \
        in err, err
    work = stack.root / ".patchforge/work/up/pkg/a.py"
    work.write_bytes(work.read_bytes().replace(b"    " + line + b"\n]\nOTHER", b"]\nOTHER"))
    _, out, _ = stack.cli("rebase", "--continue", expect=None)
    assert "resolved to no change" in out, out
    assert stack.series("up") == [] and (stack.root / "series/up/skipped/fa.patch").is_file()


def test_a_name_made_twice_on_lines_of_its_own_beside_new_names_is_taken_out_first(tmp_path):
    # The arch table extended on both sides, each name on a line of its own (`"gfx1150",`
    # `"gfx1201",`, upstream's `"gfx1250",` `"gfx1201",`): its first way on was keep yours,
    # which left gfx1201 twice. Now the first is take gfx1201 alone out of the fix's lines:
    # followed, the table holds it once and keeps the fix's gfx1150.
    stack = stack_with(tmp_path, listing(TABLE), listing(TABLE + [b'"gfx1150",', b'"gfx1201",']),
                       listing(TABLE[:4] + [b'"gfx1250",', b'"gfx1201",'] + TABLE[4:]))
    _, _, err = stack.cli("rebase", "--to", "v2", expect=3)
    assert "(upstream's lines 6-7: \"gfx1250\", \"gfx1201\"; yours, lines 9-10: \"gfx1150\", " \
        "\"gfx1201\"): take only that item out of your line(s)" in err, err
    work = stack.root / ".patchforge/work/up/pkg/a.py"
    data = work.read_bytes()
    assert data.endswith(b'    "gfx1150",\n    "gfx1201",\n]\nOTHER = [\n    "x",\n]\n\n\n'
                         b"def ok(a):\n    return a in SUPPORTED\n"), data.decode()
    work.write_bytes(data.replace(b'    "gfx1150",\n    "gfx1201",\n]', b'    "gfx1150",\n]'))
    stack.cli("rebase", "--continue")
    assert stack.series("up") == ["fa.patch"]
    stack.cli("overlays")
    made = (stack.root / "overlays/up/pkg/a.py").read_bytes()
    assert made.count(b'"gfx1201"') == 1 and made.count(b'"gfx1150"') == 1, made.decode()


@pytest.mark.parametrize("base, fix, theirs, said", [
    (module(PAIRS), module(PAIRS + [b"HIPCC", b"hipcc"]),
     module([b"CC", b"hipcc", b"CXX", b"clang++"]),
     '"hipcc" upstream wrote in place of the base\'s "clang" (upstream\'s lines 2-3: "CC", '
     '"hipcc"; yours, lines 6-7: "HIPCC", "hipcc")'),
    (listing([b'"CC", "clang",', b'"CXX", "clang++",']),
     listing([b'"CC", "clang",', b'"CXX", "clang++",', b'"HIPCC", "hipcc",']),
     listing([b'"CC", "hipcc",', b'"CXX", "clang++",']),
     '"hipcc" upstream wrote in place of the base\'s "clang" (upstream\'s line 2: "CC", '
     '"hipcc"; yours, line 4: "HIPCC", "hipcc")')],
    ids=["a-pair-a-line", "pairs-on-a-line"])
def test_a_value_upstream_gave_a_base_key_stops_with_keep_yours_first(
        tmp_path, base, fix, theirs, said):
    # A flat list of pairs of names: the fix appends `"HIPCC", "hipcc",`, upstream gives the
    # base's CC the value hipcc (`"CC", "clang",` made `"CC", "hipcc",`). Nothing in the list
    # tells it from a base name renamed to the fix's, and it stops; its first way on was delete
    # your copy (a pair a line) or take the item out of your line (on one line), each losing
    # the fix's pair its value. Now the stop says upstream's copy took the base's "clang"'s
    # place, and its first way is keep yours: followed, the overlay holds each pair once.
    stack = stack_with(tmp_path, base, fix, theirs)
    _, _, err = stack.cli("rebase", "--to", "v2", expect=3)
    assert "upstream has these lines already, its own way; " + said + ": keep yours " \
        "(--continue with the worktree as it is: the item stays twice, each beside its own " \
        "items) where the list holds pairs" in err, err
    stack.cli("rebase", "--continue")
    assert stack.series("up") == ["fa.patch"]
    stack.cli("overlays")
    made = b" ".join((stack.root / "overlays/up/pkg/a.py").read_bytes().split())
    for pair in (b'"CC", "hipcc",', b'"CXX", "clang++",', b'"HIPCC", "hipcc",'):
        assert made.count(pair) == 1, (pair, made)
    assert b'"clang"' not in made, made


def test_a_base_name_renamed_to_the_fixs_beside_a_new_name_stops_saying_both_ways(tmp_path):
    # Mirror: the arch table, the fix appends `"gfx1150",` `"gfx1201",`, upstream renames the
    # base's gfx942 to gfx1201. The same shape as a pair's value upstream gave a base key: it
    # still stops (a 3-way merge left gfx1201 twice), keep yours first, and its way for a list
    # of names, the item alone taken out of the fix's lines, keeps gfx1150 and gfx1201 once.
    stack = stack_with(tmp_path, module(ARCHS), module(ARCHS + [b"gfx1150", b"gfx1201"]),
                       module(ARCHS[:2] + [b"gfx1201"] + ARCHS[3:]))
    status = stack.json("status", "--against", "v2", expect=1)
    assert [p["state"] for p in status["patches"]] == ["conflict"], status["patches"]
    _, _, err = stack.cli("rebase", "--to", "v2", expect=3)
    assert '"gfx1201" upstream wrote in place of the base\'s "gfx942"' in err, err
    assert "take only that item out of your line(s) in the worktree, keeping the items beside " \
        "it, and `patchforge rebase --continue` only where the list holds names" in err, err
    work = stack.root / ".patchforge/work/up/pkg/a.py"
    work.write_bytes(work.read_bytes().replace(b'    "gfx1150",\n    "gfx1201",\n]',
                                               b'    "gfx1150",\n]'))
    stack.cli("rebase", "--continue")
    stack.cli("overlays")
    made = (stack.root / "overlays/up/pkg/a.py").read_bytes()
    assert made.count(b'"gfx1201"') == 1 and made.count(b'"gfx1150"') == 1, made.decode()


@pytest.mark.parametrize("theirs", [
    ARCHS[:4] + [b"gfx1201"] + ARCHS[4:], [b"gfx942"] + ARCHS[:2] + [b"gfx1201"] + ARCHS[3:]],
    ids=["added-after-a-base-item", "in-the-place-of-a-base-item-moved-to-the-head"])
def test_a_name_upstream_added_without_taking_a_base_item_out_keeps_delete_your_copy_first(
        tmp_path, theirs):
    # Mirror: upstream added gfx1201 after a base item, taking none out (or only moving one):
    # no base item's place taken, the fix's copy beside its own gfx1150 on lines of their own;
    # delete your copy, which loses nothing of a table of names, still comes first.
    stack = stack_with(tmp_path, module(ARCHS), module(ARCHS + [b"gfx1150", b"gfx1201"]),
                       module(theirs))
    _, _, err = stack.cli("rebase", "--to", "v2", expect=3)
    assert "upstream wrote in place of" not in err, err
    assert "upstream has these lines already, its own way: delete your copy" in err, err


def test_a_name_alone_upstream_renamed_a_base_name_to_keeps_delete_your_copy_first(tmp_path):
    # Mirror: the fix appends gfx1201 alone, upstream renames the base's gfx942 to it: no new
    # item of the fix's beside its copy, so deleting it loses nothing, and that comes first.
    stack = stack_with(tmp_path, module(ARCHS), module(ARCHS + [b"gfx1201"]),
                       module(ARCHS[:2] + [b"gfx1201"] + ARCHS[3:]))
    _, _, err = stack.cli("rebase", "--to", "v2", expect=3)
    assert "upstream wrote in place of" not in err, err
    assert "upstream has these lines already, its own way: delete your copy" in err, err
