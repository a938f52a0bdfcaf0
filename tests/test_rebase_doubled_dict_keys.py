"""A key the fix gives a dict literal (`"gfx1201": 32,`) that upstream gave the same dict at
another place: too short for the nearby check and no list item, the rebase merged both in, exit
0, and the dict held the key twice, the later line's value winning (with another value, one
side's lost silently). Now it stops, saying the key, both lines and both values. The same key
in another dict, a call's keyword arguments or another JSON object, or another key in the same
dict, moves as before. Real git upstreams, real commands."""
from __future__ import annotations

import json

import pytest

from test_rebase_doubled import moves, said_doubled, stack_with_file

WAVES = [b'"gfx90a": 64,', b'"gfx942": 64,', b'"gfx950": 64,', b'"gfx1100": 32,']


def waves(entries: list[bytes], other: list[bytes] = (b'"x": 1,',)) -> bytes:
    """A module with two dicts: WAVES (`entries`) and OTHER (`other`)."""
    return (b'"""Waves."""\n\nWAVES = {\n' + b"".join(b"    " + e + b"\n" for e in entries)
            + b"}\nOTHER = {\n" + b"".join(b"    " + e + b"\n" for e in other) + b"}\n\n\n"
            b"def wave(arch):\n    return WAVES[arch]\n")


def overlay(stack) -> bytes:
    stack.cli("overlays")
    return (stack.root / "overlays/up/pkg/a.py").read_bytes()


def test_a_key_upstream_gave_the_dict_with_the_same_value_stops_and_delete_your_copy_is_first(
        tmp_path):
    # The fix appends gfx1201: 32; upstream put the same entry after gfx942. It merged in
    # twice, exit 0. It stops, saying the same value; deleting the fix's line loses nothing.
    stack = stack_with_file(tmp_path, "pkg/a.py", waves(WAVES),
                            waves(WAVES + [b'"gfx1201": 32,']),
                            waves(WAVES[:2] + [b'"gfx1201": 32,'] + WAVES[2:]))
    err = said_doubled(stack, "pkg/a.py line 9 (upstream's at line 6)")
    assert "its own way; \"gfx1201\" is a key upstream gave this dict already, with the same " \
        "value (upstream's line 6: 32; yours, line 9: 32): delete your copy of these lines" \
        in err, err
    work = stack.root / ".patchforge/work/up/pkg/a.py"
    assert work.read_bytes().count(b'"gfx1201": 32,') == 2  # both, for the user to see
    work.write_bytes(work.read_bytes().replace(b'    "gfx1100": 32,\n    "gfx1201": 32,\n',
                                               b'    "gfx1100": 32,\n'))
    _, out, _ = stack.cli("rebase", "--continue", expect=None)
    assert "resolved to no change" in out, out
    assert stack.series("up") == [] and (stack.root / "series/up/skipped/fa.patch").is_file()


def test_a_key_upstream_gave_the_dict_with_another_value_stops_saying_both_values(tmp_path):
    # Upstream gives gfx1201 64, the fix 32 further down: merged, the fix's later line won
    # and upstream's value was lost, exit 0. It stops naming both values and which one wins
    # as it stands; the way that keeps the fix's value takes upstream's line out.
    stack = stack_with_file(tmp_path, "pkg/a.py", waves(WAVES),
                            waves(WAVES + [b'"gfx1201": 32,']),
                            waves(WAVES[:2] + [b'"gfx1201": 64,'] + WAVES[2:]))
    err = said_doubled(stack, "pkg/a.py line 9 (upstream's at line 6)")
    assert "\"gfx1201\" is a key upstream gave this dict already, with another value " \
        "(upstream's line 6: 64; yours, line 9: 32; as it stands the later, yours, wins): " \
        "the dict keeps one value per key: take your entry out in the worktree to take " \
        "upstream's value, or upstream's entry to keep yours" in err, err
    work = stack.root / ".patchforge/work/up/pkg/a.py"
    work.write_bytes(work.read_bytes().replace(b'    "gfx1201": 64,\n', b""))
    stack.cli("rebase", "--continue")
    assert stack.series("up") == ["fa.patch"]
    made = overlay(stack)
    assert made.count(b'"gfx1201"') == 1 and b'"gfx1201": 32,' in made, made.decode()


def test_a_key_the_fix_gives_above_upstreams_says_upstreams_wins_as_it_stands(tmp_path):
    # Mirror: the fix's entry at the dict's head, upstream's appended: upstream's value wins
    # as it stands (the fix's lost); taking the fix's line out takes upstream's.
    stack = stack_with_file(tmp_path, "pkg/a.py", waves(WAVES),
                            waves([b"'gfx1201': 32,"] + WAVES),
                            waves(WAVES + [b'"gfx1201": 64,']))
    err = said_doubled(stack, "pkg/a.py line 4 (upstream's at line 9)")
    assert "'gfx1201' is a key upstream gave this dict already, with another value " \
        "(upstream's line 9: 64; yours, line 4: 32; as it stands the later, upstream's, wins)" \
        in err, err
    work = stack.root / ".patchforge/work/up/pkg/a.py"
    work.write_bytes(work.read_bytes().replace(b"    'gfx1201': 32,\n", b""))
    _, out, _ = stack.cli("rebase", "--continue", expect=None)
    assert "resolved to no change" in out, out
    assert stack.series("up") == [] and (stack.root / "series/up/skipped/fa.patch").is_file()


@pytest.mark.parametrize("entry, theirs, said", [
    (b'"gfx90a": 64, "gfx1201": 32,', b'"gfx1201": 64,', '"gfx1201" is a key'),
    (b"dtypes.fp8: 2,", b"dtypes.fp8: 1,", "dtypes.fp8 is a key"),
    (b"GFX1201: 32,", b"GFX1201: 64,", "GFX1201 is a key"),
    (b"1201: (32, 2),", b"1201: (64, 2),", "1201 is a key"),
], ids=["second-on-its-line", "dotted-name", "bare-name", "number"])
def test_other_shapes_of_a_key_upstream_gave_the_dict_stop(tmp_path, entry, theirs, said):
    stack = stack_with_file(tmp_path, "pkg/a.py", waves(WAVES), waves(WAVES + [entry]),
                            waves(WAVES[:2] + [theirs] + WAVES[2:]))
    err = said_doubled(stack, "pkg/a.py line 9 (upstream's at line 6)")
    assert f"its own way; {said} upstream gave this dict already, with another value" in err, err


def test_a_key_after_a_value_dividing_by_floor_stops(tmp_path):
    # `//` divides in Python: the entry after `"gfx1100": n // 2,` opens a line of the dict.
    base = waves(WAVES[:3] + [b'"gfx1100": n // 2,']).replace(b"WAVES = {", b"n = 64\nWAVES = {")
    stack = stack_with_file(tmp_path, "pkg/a.py", base,
                            base.replace(b"n // 2,\n", b'n // 2,\n    "gfx1201": 32,\n'),
                            base.replace(b'    "gfx942": 64,\n',
                                         b'    "gfx942": 64,\n    "gfx1201": 64,\n'))
    err = said_doubled(stack, "pkg/a.py line 10 (upstream's at line 7)")
    assert "(upstream's line 7: 64; yours, line 10: 32; as it stands the later, yours, wins)" \
        in err, err


@pytest.mark.parametrize("fix, upstream", [
    # Another key in the same dict.
    (waves(WAVES + [b'"gfx1201": 32,']), waves(WAVES[:2] + [b'"gfx1200": 32,'] + WAVES[2:])),
    # The same key in another dict of the file.
    (waves(WAVES + [b'"gfx1201": 32,']), waves(WAVES, [b'"x": 1,', b'"gfx1201": 32,'])),
    # A call's keyword argument of that name.
    (waves(WAVES + [b'"gfx1201": 32,']),
     waves(WAVES).replace(b"\n\n\ndef", b"LIMITS = dict(\n    gfx1201=32,\n)\n\n\ndef")),
    # The fix changes a base key's value where upstream added another key: no new key.
    (waves(WAVES[:3] + [b'"gfx1100": 64,']), waves(WAVES[:1] + [b'"gfx1201": 32,'] + WAVES[1:])),
    # The key as a string in a list inside the dict's value, not a key of the dict.
    (waves(WAVES + [b'"gfx1201": 32,']),
     waves(WAVES[:2] + [b'"gfx1200": [', b'    "gfx1201",', b"],"] + WAVES[2:])),
    # Its mirror: the fix's keyword argument, upstream's key.
    (waves(WAVES).replace(b'    "x": 1,\n', b'    "x": 1,\n    "y": dict(\n        gfx1201=32,\n'
                          b'    ),\n'),
     waves(WAVES[:2] + [b'"gfx1201": 32,'] + WAVES[2:])),
], ids=["another-key", "another-dict", "keyword-argument", "value-changed", "inner-list",
        "fixs-keyword-argument"])
def test_the_same_key_elsewhere_or_another_key_moves(tmp_path, fix, upstream):
    stack = stack_with_file(tmp_path, "pkg/a.py", waves(WAVES), fix, upstream)
    moves(stack)


def test_a_key_of_a_dict_inside_the_dict_moves_beside_upstreams_outer_key(tmp_path):
    # The fix gives gfx1201 to the dict inside gfx1100's value, upstream to WAVES itself:
    # two dicts, both wanted.
    inner = WAVES[:3] + [b'"gfx1100": {', b'    "tile": 32,', b"},"]
    stack = stack_with_file(tmp_path, "pkg/a.py", waves(inner),
                            waves(inner[:-1] + [b'    "gfx1201": 32,', b"},"]),
                            waves(inner[:1] + [b'"gfx1201": 64,'] + inner[1:]))
    moves(stack)


def config(modules: dict) -> bytes:
    return json.dumps(modules, indent=4).encode() + b"\n"


MODULES = {f"module_{name}": {"srcs": [f"csrc/{name}.cu"], "flags_extra_cc": [],
                              "extra_ldflags": "None", "blob_gen_cmd": "''"}
           for name in ("core", "activation", "attention", "cache", "gemm")}


def with_key(modules: dict, module: str, key: str, value, after: str | None = None) -> dict:
    """`modules` with `key` given to `module`'s object (after `after`, else last)."""
    changed = {}
    for name, entries in modules.items():
        if name != module:
            changed[name] = entries
            continue
        changed[name] = {}
        for k, v in entries.items():
            changed[name][k] = v
            if k == after:
                changed[name][key] = value
        changed[name].setdefault(key, value)
    return changed


def test_a_key_upstream_gave_the_same_json_object_stops(tmp_path):
    # optCompilerConfig.json-like: the fix gives module_attention "verbose": "True" at its
    # end, upstream "verbose": "False" after its srcs. json.load keeps the later: the fix's.
    stack = stack_with_file(
        tmp_path, "aiter/jit/optCompilerConfig.json", config(MODULES),
        config(with_key(MODULES, "module_attention", "verbose", "True")),
        config(with_key(MODULES, "module_attention", "verbose", "False", after="srcs")))
    err = said_doubled(stack, "aiter/jit/optCompilerConfig.json line 26 (upstream's at line 22)")
    assert "\"verbose\" is a key upstream gave this dict already, with another value " \
        "(upstream's line 22: \"False\"; yours, line 26: \"True\"; as it stands the later, " \
        "yours, wins)" in err, err


def test_a_key_upstream_gave_another_json_object_moves(tmp_path):
    # Mirror: upstream gave "verbose" to module_cache, the fix to module_attention: two
    # objects, both wanted (every object of the file holds "srcs" too).
    stack = stack_with_file(
        tmp_path, "aiter/jit/optCompilerConfig.json", config(MODULES),
        config(with_key(MODULES, "module_attention", "verbose", "True")),
        config(with_key(MODULES, "module_cache", "verbose", "False", after="srcs")))
    moves(stack)


def test_a_module_upstream_gave_the_top_level_json_object_stops(tmp_path):
    # A whole object the fix adds (`"module_topk": {` ... `}`) where upstream added one of
    # that name with other sources, higher up: the top-level object held the name twice.
    topk = {"srcs": ["csrc/topk.cu"], "flags_extra_cc": [], "extra_ldflags": "None",
            "blob_gen_cmd": "''"}
    upstream = dict(list(MODULES.items())[:2] + [("module_topk", {**topk, "srcs": [
        "csrc/topk_v2.cu", "csrc/topk_pybind.cu"]})] + list(MODULES.items())[2:])
    stack = stack_with_file(tmp_path, "aiter/jit/optCompilerConfig.json", config(MODULES),
                            config({**MODULES, "module_topk": topk}), config(upstream))
    err = said_doubled(stack, "aiter/jit/optCompilerConfig.json line 51 (upstream's at line 18)")
    assert "\"module_topk\" is a key upstream gave this dict already, with another value " \
        "(upstream's lines 18-26: { \"srcs\": [ \"csrc/topk_v2.cu\", " in err, err


C_BASE = (b"static const int waves[] = {\n    [GFX90A] = 64,\n    [GFX942] = 64,\n"
          b"    [GFX950] = 64,\n};\nstatic const int tiles[] = {\n    [GFX90A] = 16,\n};\n\n"
          b"int wave(int arch) {\n    return waves[arch];\n}\n")


def test_a_designator_upstream_gave_the_same_initialiser_stops(tmp_path):
    # C's `[GFX1201] = 32,` where upstream gave the same index 64 in the same initialiser:
    # the later wins (a warning at most), exit 0.
    stack = stack_with_file(tmp_path, "csrc/waves.c", C_BASE,
                            C_BASE.replace(b"64,\n};\nstatic", b"64,\n    [GFX1201] = 32,\n};\n"
                                           b"static"),
                            C_BASE.replace(b"    [GFX942]", b"    [GFX1201] = 64,\n    [GFX942]"))
    err = said_doubled(stack, "csrc/waves.c line 6 (upstream's at line 3)")
    assert "[GFX1201] is a key upstream gave this dict already, with another value " \
        "(upstream's line 3: 64; yours, line 6: 32; as it stands the later, yours, wins)" \
        in err, err


def test_a_designator_upstream_gave_another_initialiser_moves(tmp_path):
    stack = stack_with_file(tmp_path, "csrc/waves.c", C_BASE,
                            C_BASE.replace(b"64,\n};\nstatic", b"64,\n    [GFX1201] = 32,\n};\n"
                                           b"static"),
                            C_BASE.replace(b"16,\n};", b"16,\n    [GFX1201] = 32,\n};"))
    moves(stack)


def test_a_statement_wrapped_before_a_subscript_in_a_block_moves(tmp_path):
    # `out[a]` / `[rowid] = v;` in a block: a statement going on, no designator. The fix's
    # and upstream's store to other rows, both wanted.
    base = (b"void f(int *out, int rowid) {\n    if (rowid > 0)\n    {\n"
            b"        out[0]\n           [rowid] = 1;\n    }\n}\n")
    stack = stack_with_file(tmp_path, "csrc/f.c", base,
                            base.replace(b"= 1;\n", b"= 1;\n        out[2]\n           [rowid] = 3;\n"),
                            base.replace(b"    {\n", b"    {\n        out[1]\n           [rowid] = 2;\n"))
    moves(stack)


@pytest.mark.parametrize("upstreams,said,follow", [
    # The same value: deleting the fix's line lost gfx1250 (the first way said so).
    (b'"gfx1201": 32,', "with the same value (upstream's line 6: 32; yours, line 9: 32), "
     "beside other entries on your line (\"gfx1250\"): take only that entry out of your line",
     b'"gfx1201": 32,'),
    # Another value: the way taking the fix's entry out (upstream's value) keeps gfx1250 too.
    (b'"gfx1201": 16,', "with another value (upstream's line 6: 16; yours, line 9: 32; as it "
     "stands the later, yours, wins), beside other entries on your line (\"gfx1250\"): the "
     "dict keeps one value per key: take your entry out", b'"gfx1201": 16,'),
])
def test_a_key_upstream_gave_the_dict_beside_another_entry_on_the_fixs_line_keeps_that_entry(
        tmp_path, upstreams, said, follow):
    # The fix's line holds `"gfx1250": 64, "gfx1201": 32,`; upstream gave gfx1201 alone. The
    # stop says gfx1250 stands beside it, and following the first way keeps gfx1250.
    stack = stack_with_file(tmp_path, "pkg/a.py", waves(WAVES),
                            waves(WAVES + [b'"gfx1250": 64, "gfx1201": 32,']),
                            waves(WAVES[:2] + [upstreams] + WAVES[2:]))
    err = said_doubled(stack, "pkg/a.py line 9 (upstream's at line 6)")
    assert "\"gfx1201\" is a key upstream gave this dict already, " + said in err, err
    assert "delete your copy of these lines" not in err, err
    work = stack.root / ".patchforge/work/up/pkg/a.py"
    work.write_bytes(work.read_bytes().replace(b'"gfx1250": 64, "gfx1201": 32,',
                                               b'"gfx1250": 64,'))
    stack.cli("rebase", "--continue")
    made = overlay(stack)
    assert b'"gfx1250": 64,' in made and made.count(b'"gfx1201"') == 1, made.decode()
    assert follow in made, made.decode()


def test_a_key_upstream_gave_the_dict_on_a_line_of_its_own_still_says_delete_your_copy(
        tmp_path):
    # Mirror: the fix's gfx1250 on a line of its own, gfx1201 on the next: deleting the
    # fix's gfx1201 line loses nothing, and that stays the first way.
    stack = stack_with_file(tmp_path, "pkg/a.py", waves(WAVES),
                            waves(WAVES + [b'"gfx1250": 64,', b'"gfx1201": 32,']),
                            waves(WAVES[:2] + [b'"gfx1201": 32,'] + WAVES[2:]))
    err = said_doubled(stack, "pkg/a.py line 10 (upstream's at line 6)")
    assert "with the same value (upstream's line 6: 32; yours, line 10: 32): delete your " \
        "copy of these lines" in err, err


JSON_BASE = (b'{\n  "module_a": {\n    "srcs": ["a.cu"],\n    "flags": "x"\n  },\n'
             b'  "module_b": {\n    "srcs": ["b.cu"]\n  }\n}\n')


@pytest.mark.parametrize("value,said", [
    (b"true", "with the same value (upstream's line 3: true; yours, line 6: true), the last "
     "entry of its JSON object, after a comma: take upstream's entry out in the worktree"),
    (b"false", "with another value (upstream's line 3: false; yours, line 6: true; as it "
     "stands the later, yours, wins), the last entry of its JSON object, after a comma: the "
     "dict keeps one value per key: take upstream's entry out in the worktree to keep yours, "
     "or your entry together with the comma the line before it ends with"),
])
def test_a_json_objects_last_entry_upstream_gave_it_says_take_upstreams_out_and_stays_json(
        tmp_path, value, said):
    # The fix appends "verbose": true to module_a (a comma added to "flags"), upstream put
    # "verbose" at its head. Deleting the fix's line, the first way, left `"flags": "x",`
    # before the `}`: invalid JSON, and --continue took it, exit 0. The first way now takes
    # upstream's entry out; following it, the overlay is JSON with the fix's value.
    path = "aiter/jit/cfg.json"
    stack = stack_with_file(
        tmp_path, path, JSON_BASE,
        JSON_BASE.replace(b'    "flags": "x"\n', b'    "flags": "x",\n    "verbose": true\n'),
        JSON_BASE.replace(b'    "srcs": ["a.cu"],\n',
                          b'    "verbose": ' + value + b',\n    "srcs": ["a.cu"],\n'))
    err = said_doubled(stack, f"{path} line 6 (upstream's at line 3)")
    assert "\"verbose\" is a key upstream gave this dict already, " + said in err, err
    work = stack.root / ".patchforge/work/up" / path
    work.write_bytes(work.read_bytes().replace(b'    "verbose": ' + value + b',\n', b""))
    stack.cli("rebase", "--continue")
    stack.cli("overlays")
    made = json.loads((stack.root / "overlays/up" / path).read_bytes())
    assert made["module_a"] == {"srcs": ["a.cu"], "flags": "x", "verbose": True}, made


def test_a_json_entry_the_fix_gives_before_the_last_still_says_delete_your_copy(tmp_path):
    # Mirror: the fix's "verbose" before "flags" (a comma of its own): deleting its line
    # leaves JSON, and that stays the first way; following it, the overlay parses.
    path = "aiter/jit/cfg.json"
    stack = stack_with_file(
        tmp_path, path, JSON_BASE,
        JSON_BASE.replace(b'    "flags": "x"\n', b'    "verbose": true,\n    "flags": "x",\n'
                          b'    "debug": 1\n'),
        JSON_BASE.replace(b'    "srcs": ["a.cu"],\n', b'    "verbose": true,\n    "srcs": ["a.cu"],\n'))
    err = said_doubled(stack, f"{path} line 5 (upstream's at line 3)")
    assert "with the same value (upstream's line 3: true; yours, line 5: true): delete your " \
        "copy of these lines" in err, err
    work = stack.root / ".patchforge/work/up" / path
    lines = work.read_bytes().split(b"\n")
    del lines[4]
    work.write_bytes(b"\n".join(lines))
    stack.cli("rebase", "--continue")
    stack.cli("overlays")
    made = json.loads((stack.root / "overlays/up" / path).read_bytes())
    assert made["module_a"] == {"verbose": True, "srcs": ["a.cu"], "flags": "x", "debug": 1}, made
