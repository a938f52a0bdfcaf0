"""A file upstream split into copies alike stops, naming them all: the fix reaches every copy or
is seen to reach one.

ops/x.py made ops/gfx942/x.py and ops/gfx950/x.py, each with one token of one line changed
alike (git scores both the same): git's rename pairing gives the file to one copy, and `git
rebase` carries a fix of ops/x.py into that one, exit 0, the other arch's copy never getting
it. So did patchforge: `applies`, the rebase `clean`, exit 0. Now `status --against`, the
dry run, `rebase --to`, `pr --onto` and `bring-back` stop alike ("CONFLICT (rename split)");
the stop's worktree holds the change in the copy git's pairing names, and `patchforge add` of
the other copy, the change made there too, then `--continue` carries it into both. The
mirrors: a copy nearer than the other, another deleted file's new place as near, or a file
paired by its name beside a copy as near, is a rename as before, clean."""
from __future__ import annotations

import json

from helpers.project import OneUpstreamStack
from test_status_exact_renames import FUNCTIONS

FIXED = FUNCTIONS.replace(b"value * 30 + 17", b"value * 30 + 18")
GFX942, GFX950 = "ops/gfx942/x.py", "ops/gfx950/x.py"


def _split(tmp_path, gfx942: bytes, gfx950: bytes) -> OneUpstreamStack:
    """A fix of ops/x.py (fn_30 changed), upstream's v2 splitting it into the two copies."""
    stack = OneUpstreamStack(tmp_path, {"ops/x.py": FUNCTIONS, "keep.py": b"k = 1\n"})
    stack.add_fix("fix", "ops/x.py", FUNCTIONS, FIXED)
    stack.upstream.commit({"ops/x.py": None, GFX942: gfx942, GFX950: gfx950}, "split x",
                          tag="v2")
    return stack


def _alike(tmp_path) -> OneUpstreamStack:
    return _split(tmp_path, FUNCTIONS.replace(b"value * 5 + 17", b"value * 5 + 42"),
                  FUNCTIONS.replace(b"value * 5 + 17", b"value * 5 + 43"))


def _said_split(text: str) -> bool:
    return "CONFLICT (rename split): ops/x.py was split upstream in v2 into " in text and \
        GFX942 in text and GFX950 in text


def test_a_file_split_into_copies_alike_stops_naming_both(tmp_path):
    stack = _alike(tmp_path)
    code, out, _ = stack.cli("status", "--against", "up=v2", "--json", expect=1)
    [found] = json.loads(out)["patches"]
    assert found["rebase"] == "stop" and _said_split(found["evidence"][0]), found
    code, out, err = stack.cli("rebase", "--to", "up=v2", "--dry-run", expect=1)
    assert _said_split(out + err), out + err
    code, out, err = stack.cli("pr", "fix", "--onto", "v2", "--json", expect=None)
    assert code != 0 and json.loads(out)["state"] == "conflict", out + err
    assert _said_split(json.loads(out)["detail"]), out


def test_the_stops_resolution_carries_the_fix_into_both_copies(tmp_path):
    stack = _alike(tmp_path)
    code, out, err = stack.cli("rebase", "--to", "up=v2", expect=3)
    assert _said_split(out + err) and f"`patchforge add {GFX950}`" in out + err, out + err
    work = stack.root / ".patchforge/work/up"
    held = next(path for path in (GFX942, GFX950) if (work / path).exists())
    other = GFX950 if held == GFX942 else GFX942
    assert b"value * 30 + 18" in (work / held).read_bytes()
    stack.cli("add", other)
    (work / other).write_bytes((work / other).read_bytes().replace(b"value * 30 + 17",
                                                                   b"value * 30 + 18"))
    stack.cli("rebase", "--continue")
    text = (stack.root / "series" / "up" / "fix.patch").read_text()
    assert f"+++ b/{GFX942}" in text and f"+++ b/{GFX950}" in text, text
    code, out, _ = stack.cli("status", "--against", "up=v2", "--json")
    assert json.loads(out)["patches"][0]["state"] == "applies", out


def test_bring_back_stops_on_the_split_alike(tmp_path):
    stack = _alike(tmp_path)
    stack.cli("rebase", "--to", "up=v2", expect=3)
    stack.cli("rebase", "--skip", expect=1)
    code, out, err = stack.cli("bring-back", "fix", expect=3)
    assert _said_split(out + err), out + err


def test_a_file_split_in_three_names_every_copy(tmp_path):
    """ops/x.py made three copies alike (gfx942, gfx950, gfx1250): the stop names all three,
    never two, so that the third is not left without the fix after the stop's way on."""
    stack = OneUpstreamStack(tmp_path, {"ops/x.py": FUNCTIONS, "keep.py": b"k = 1\n"})
    stack.add_fix("fix", "ops/x.py", FUNCTIONS, FIXED)
    third = "ops/gfx1250/x.py"
    stack.upstream.commit({"ops/x.py": None, **{
        path: FUNCTIONS.replace(b"value * 5 + 17", b"value * 5 + %d" % k)
        for path, k in ((GFX942, 42), (GFX950, 43), (third, 44))}}, "split x", tag="v2")
    code, out, _ = stack.cli("status", "--against", "up=v2", "--json", expect=1)
    [found] = json.loads(out)["patches"]
    assert _said_split(found["evidence"][0]) and third in found["evidence"][0], found


def test_a_file_split_into_identical_copies_stops_too(tmp_path):
    """Both copies the file as it was (exact renames, one taken): a stop, as for copies alike."""
    stack = _split(tmp_path, FUNCTIONS, FUNCTIONS)
    code, out, _ = stack.cli("status", "--against", "up=v2", "--json", expect=1)
    [found] = json.loads(out)["patches"]
    assert found["rebase"] == "stop" and _said_split(found["evidence"][0]), found


def test_a_copy_nearer_than_the_other_is_followed_clean(tmp_path):
    """The mirror: gfx942 with one token changed, gfx950 with three lines changed: a rename to
    gfx942, as `git rebase` follows it, clean."""
    far = FUNCTIONS
    for k in (3, 5, 7):
        far = far.replace(b"value * %d + 17" % k, b"value * %d + 99" % k)
    stack = _split(tmp_path, FUNCTIONS.replace(b"value * 5 + 17", b"value * 5 + 42"), far)
    code, out, _ = stack.cli("status", "--against", "up=v2", "--json")
    [found] = json.loads(out)["patches"]
    assert found["state"] == "applies" and \
        [f["target_path"] for f in found["files"]] == [GFX942], found
    stack.cli("rebase", "--to", "up=v2")
    text = (stack.root / "series" / "up" / "fix.patch").read_text()
    assert f"+++ b/{GFX942}" in text and GFX950 not in text, text


def test_a_near_copy_moved_beside_the_file_is_no_split(tmp_path):
    """The mirror: ops/gfx942/x.py and ops/gfx950/x.py, a token apart, both moved to kernels/
    with the same line edited; a fix of the gfx942 file. kernels/gfx950/x.py is as near the
    fixed file as kernels/gfx942/x.py in git's whole percents (99 each), but nearer
    ops/gfx950/x.py, whose new place it is: a rename to kernels/gfx942/x.py, as `git rebase`
    follows it, clean."""
    text = b"".join(b"def fn_%d(value):\n    return value * %d + 17\n\n" % (i, i)
                    for i in range(200))
    ours, theirs = (text.replace(b"value * 5 + 17", b"value * 5 + %d" % k) for k in (42, 43))

    def edited(copy: bytes) -> bytes:
        return copy.replace(b"value * 7 + 17", b"value * 7 + 70")

    stack = OneUpstreamStack(tmp_path, {GFX942: ours, GFX950: theirs})
    stack.add_fix("fix", GFX942, ours, ours.replace(b"value * 30 + 17", b"value * 30 + 18"))
    stack.upstream.commit({GFX942: None, GFX950: None, "kernels/gfx942/x.py": edited(ours),
                           "kernels/gfx950/x.py": edited(theirs)}, "move", tag="v2")
    code, out, _ = stack.cli("status", "--against", "up=v2", "--json")
    [found] = json.loads(out)["patches"]
    assert [f["target_path"] for f in found["files"]] == ["kernels/gfx942/x.py"], found
    stack.cli("rebase", "--to", "up=v2")
    text = (stack.root / "series" / "up" / "fix.patch").read_text()
    assert "+++ b/kernels/gfx942/x.py" in text and "gfx950" not in text, text


def test_a_file_moved_by_its_name_beside_a_near_copy_is_no_split(tmp_path):
    """The mirror: ops/ moved to lib/kernels/ (its other files unchanged), ops/x.py there with
    two tokens edited, and upstream adds ops/x_ref.py, a near copy of the old x.py, as near in
    git's whole percents. x.py is a name unique among the deleted and the added files: git's
    base-name pass takes lib/kernels/x.py by the name before weighing any other, and `git
    rebase` moves the fix there, clean; so does patchforge (it stopped, a split)."""
    others = {f"ops/{n}.py": b"".join(b"def %s_%d():\n    return %d\n\n" % (n.encode(), i, i)
                                      for i in range(30)) for n in "dfg"}
    stack = OneUpstreamStack(tmp_path, {"ops/x.py": FUNCTIONS, **others})
    stack.add_fix("fix", "ops/x.py", FUNCTIONS, FIXED)
    moved = FUNCTIONS.replace(b"value * 5 + 17", b"value * 5 + 42").replace(
        b"value * 7 + 17", b"value * 7 + 42")
    copy = FUNCTIONS.replace(b"value * 9 + 17", b"value * 9 + 42").replace(
        b"value * 11 + 17", b"value * 11 + 42")
    stack.upstream.commit({"ops/x.py": None, "lib/kernels/x.py": moved, "ops/x_ref.py": copy},
                          "move ops", {p: "lib/kernels/" + p[4:] for p in others}, tag="v2")
    code, out, _ = stack.cli("status", "--against", "up=v2", "--json")
    [found] = json.loads(out)["patches"]
    assert [f["target_path"] for f in found["files"]] == ["lib/kernels/x.py"], found
    stack.cli("rebase", "--to", "up=v2")
    text = (stack.root / "series" / "up" / "fix.patch").read_text()
    assert "+++ b/lib/kernels/x.py" in text and "x_ref" not in text, text


def test_a_tie_of_the_directory_guess_stops_as_a_split(tmp_path):
    """ops/ removed, two of its files moved unchanged to kernels/, two to other/: merge-ort's
    guess of where ops/ went is a tie, which git settles by its hash map's order, and
    kernels/x.py and other/x.py are both near enough for its base-name pass: a stop naming
    both, never one taken as git's."""
    others = {f"ops/{n}.py": b"".join(b"def %s_%d():\n    return %d\n\n" % (n.encode(), i, i)
                                      for i in range(30)) for n in "abcd"}
    stack = OneUpstreamStack(tmp_path, {"ops/x.py": FUNCTIONS, **others})
    stack.add_fix("fix", "ops/x.py", FUNCTIONS, FIXED)
    far = b"".join(line[:-1] + b"  # far\n" if i % 9 == 1 else line
                   for i, line in enumerate(FUNCTIONS.splitlines(keepends=True)))
    stack.upstream.commit(
        {"ops/x.py": None, "kernels/x.py": FUNCTIONS.replace(b"value * 5 + 17", b"value * 5 + 4"),
         "other/x.py": far}, "v2",
        {"ops/a.py": "kernels/a.py", "ops/b.py": "kernels/b.py", "ops/c.py": "other/c.py",
         "ops/d.py": "other/d.py"}, tag="v2")
    code, out, _ = stack.cli("status", "--against", "up=v2", "--json", expect=1)
    [found] = json.loads(out)["patches"]
    said = found["evidence"][0]
    assert said.startswith("CONFLICT (rename split): ops/x.py was split upstream in v2 into ") \
        and "kernels/x.py" in said and "other/x.py" in said, found
