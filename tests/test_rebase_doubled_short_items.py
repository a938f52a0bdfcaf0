"""A short quoted item the fix adds to a list, set or dict literal (`"gfx1201",`) that upstream added
to the same literal at another place (the list's head, or in order): shorter than any run the
doubling check reads, it was never read, and `status` said the fix applies at an offset, the
rebase moved it, exit 0, the literal holding the item twice. Now the copy stops as upstream's
own way. The same item upstream added to another list is that list's: the fix moves, both kept.
Real git upstreams, real commands."""
from __future__ import annotations

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
