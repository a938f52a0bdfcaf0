"""A patch in another profile's series: a fix is made on its base (the upstream plus the earlier
patches in every one of its profiles' series), and each profile's series holds it as git's
3-way merge carries that change there, through what the profile's own earlier fixes changed.
overlays, lint, status, refresh and rebase ask that one question, so they agree: what a
rebase accepts, overlays produce and lint accepts; what does not go into a profile's series is
said, naming the patch, the profile and the patch it meets there.

Each test runs the real commands on a real git upstream, as a user of a MI300X (gfx942) and
MI355X (gfx950) stack meets them."""
from __future__ import annotations

from helpers.project import OneUpstreamStack
from test_profile_bases import TUNE, all_after_942_stack

PROFILES = {"gfx942": "MI300X", "gfx950": "MI355X"}

# Three identical blocks of code: a fix's context is at three places of the file.
BLOCK = [b"    a = load()\n", b"    if a:\n", b"        use(a)\n", b"    b = a + 1\n",
         b"    CHECK = False\n", b"    c = b * 2\n", b"    log(c)\n", b"    return c\n",
         *[b"    pass\n"] * 11, b"\n"]
THREE = BLOCK * 3
TOP = [b"# top\n"]
END = [b"# end\n"]
HEADER = [b"# header %d\n" % i for i in range(20)]


def fixed(lines: list[bytes], block: int, line: bytes = b"    CHECK = True\n") -> list[bytes]:
    """`lines` with the CHECK line of block `block` (1-based) set to `line`."""
    out = list(lines)
    at = [k for k, text in enumerate(out) if text.strip().startswith(b"CHECK")][block - 1]
    out[at] = line
    return out


def checked_blocks(data: bytes) -> list[int]:
    checks = [text for text in data.splitlines() if text.strip().startswith(b"CHECK")]
    return [k + 1 for k, text in enumerate(checks) if b"True" in text]


def overlay(stack, profile: str, path: str = "pkg/m.py") -> bytes:
    return (stack.root / "overlays" / profile / "up" / path).read_bytes()


def lint_problems(stack) -> list[dict]:
    rc, out, _ = stack.cli("lint", "--json", expect=None)
    import json
    return [f for f in json.loads(out)["findings"] if f["check"] != "ledger"]


def test_a_fix_for_every_profile_goes_into_its_own_block_of_a_profile_series_shifted_above(
        tmp_path):
    """fix-942 (gfx942) inserts 20 lines above three identical blocks; fix-all (every profile),
    made on its base (the upstream), sets CHECK in block 2. gfx942's overlay had it in block 1
    (the nearest to the hunk's line there), every command green but lint. Now block 2 in
    both overlays, status and lint say nothing, and a rebase onto an upstream that appends a
    line keeps it there."""
    stack = OneUpstreamStack(tmp_path, {"pkg/m.py": b"".join(TOP + THREE)}, profiles=PROFILES)
    stack.add_fix("fix-942", "pkg/m.py", b"".join(TOP + THREE),
                  b"".join(TOP + HEADER + THREE), fields="Profiles: gfx942\n")
    stack.add_fix("fix-all", "pkg/m.py", b"".join(TOP + THREE), b"".join(TOP + fixed(THREE, 2)))
    stack.cli("overlays")
    assert overlay(stack, "gfx942") == b"".join(TOP + HEADER + fixed(THREE, 2))
    assert checked_blocks(overlay(stack, "gfx950")) == [2]
    states = {p["name"]: p["state"] for p in stack.json("status")["patches"]}
    assert states == {"fix-942.patch": "applies", "fix-all.patch": "applies"}, states
    assert lint_problems(stack) == []
    stack.commit({"pkg/m.py": b"".join(TOP + THREE + [b"# appended\n"])}, "v2", tag="v2")
    stack.rebase_json("--to", "up=v2")
    assert overlay(stack, "gfx942") == b"".join(TOP + HEADER + fixed(THREE, 2)
                                                + [b"# appended\n"])
    stack.cli("overlays", "--check")
    assert lint_problems(stack) == []


def test_a_fix_for_every_profile_in_repeated_code_after_a_profile_fix_is_no_lint_error(
        tmp_path):
    """fix-942 (gfx942) changes the file's first line; fix-all (every profile) sets CHECK in
    block 2. lint called fix-all's place ambiguous in gfx942's series (its line numbers made
    on another file, which its base never is), advice that edit and refresh could never
    follow. Nothing is said now; the overlays are right."""
    stack = OneUpstreamStack(tmp_path, {"pkg/m.py": b"".join(TOP + THREE)}, profiles=PROFILES)
    stack.add_fix("fix-942", "pkg/m.py", b"".join(TOP + THREE),
                  b"".join([b"# top (942)\n"] + THREE), fields="Profiles: gfx942\n")
    stack.add_fix("fix-all", "pkg/m.py", b"".join(TOP + THREE), b"".join(TOP + fixed(THREE, 2)))
    assert lint_problems(stack) == []
    stack.cli("overlays")
    assert overlay(stack, "gfx942") == b"".join([b"# top (942)\n"] + fixed(THREE, 2))


def new_fix_below_check(stack, opens_on: bytes) -> list[bytes]:
    """`new fix-942b --profiles gfx942`, which must open pkg/m.py as `opens_on`; the line below
    block 2's CHECK changed there, `refresh`: the file's lines as the fix leaves them."""
    stack.cli("new", "fix-942b", "--file", "pkg/m.py", "--profiles", "gfx942", "-m", "b")
    work = stack.root / ".patchforge" / "work" / "up" / "pkg" / "m.py"
    assert work.read_bytes() == opens_on
    lines = opens_on.splitlines(keepends=True)
    at = [k for k, text in enumerate(lines) if b"CHECK" in text][1]
    lines[at + 1] = b"    c = b * 3\n"
    work.write_bytes(b"".join(lines))
    stack.cli("refresh")
    return lines


def test_status_at_the_pin_takes_a_profile_fix_after_a_fix_for_every_profile_in_repeated_code(
        tmp_path):
    """fix-942 (gfx942) changes the top line; fix-all (every profile) sets CHECK in block 2;
    fix-942b (gfx942), made on both, changes the line below that CHECK. status at the pin
    called fix-942b a conflict (exit 1) that edit and lint could not find. Now every patch
    applies, and the overlays hold each fix once."""
    upstream = b"".join(TOP + THREE + END)
    stack = OneUpstreamStack(tmp_path, {"pkg/m.py": upstream}, profiles=PROFILES)
    stack.add_fix("fix-942", "pkg/m.py", upstream, b"".join([b"# top (942)\n"] + THREE + END),
                  fields="Profiles: gfx942\n")
    stack.add_fix("fix-all", "pkg/m.py", upstream, b"".join(TOP + fixed(THREE, 2) + END))
    lines = new_fix_below_check(stack, b"".join([b"# top (942)\n"] + fixed(THREE, 2) + END))
    stack.cli("overlays")
    assert overlay(stack, "gfx942") == b"".join(lines)
    document = stack.json("status")
    assert {p["name"]: p["state"] for p in document["patches"]} == {
        "fix-942.patch": "applies", "fix-all.patch": "applies", "fix-942b.patch": "applies"}
    assert lint_problems(stack) == []


def assert_said_everywhere(stack) -> None:
    """fix-all no longer goes into gfx942's series: status, overlays and lint say so, each
    naming fix-all, gfx942 and fix-942."""
    code, out, err = stack.cli("status", expect=1)
    row = next(line for line in out.splitlines() if "fix-all" in line)
    assert "conflict" in row and "series of gfx942" in row and "fix-942.patch" in row, out
    for args in (("overlays", "--check"), ("overlays",)):
        code, out, err = stack.cli(*args, expect=2)
        assert "fix-all.patch" in err and "series of gfx942" in err and "fix-942" in err, err
    problems = lint_problems(stack)
    assert [(f["patch"], f["check"]) for f in problems] == [("up/fix-all.patch", "apply")]
    assert "series of gfx942" in problems[0]["message"] and \
        "fix-942.patch" in problems[0]["message"]


def test_a_refresh_of_a_fix_for_every_profile_that_breaks_a_profile_series_says_so(tmp_path):
    """`edit fix-all` opens on its base, without fix-942; changing SPLIT too (the line next to
    fix-942's) made gfx942's series fail: refresh exit 0, status green, overlays exit 2
    without naming the profile. Now refresh writes the fix and warns (exit 1), naming fix-all,
    gfx942 and fix-942, and status, overlays and lint say it too."""
    stack = all_after_942_stack(tmp_path)
    stack.cli("edit", "fix-all")
    work = stack.root / ".patchforge" / "work" / "up" / "tune.py"
    work.write_bytes(work.read_bytes().replace(b"SPLIT = 1", b"SPLIT = 2"))
    code, out, err = stack.cli("refresh", expect=1)
    assert "warning: fix-all.patch does not apply in the series of gfx942" in err and \
        "fix-942.patch (gfx942)" in err, err
    assert b"SPLIT = 2" in stack.patch("up", "fix-all")  # written all the same: nothing lost
    assert_said_everywhere(stack)


def test_a_refresh_of_a_profile_fix_that_breaks_a_later_fix_for_every_profile_there_says_so(
        tmp_path):
    """`edit fix-942` also changes the line above fix-all's: fix-all is checked on its own base
    (which never holds fix-942) and refresh said nothing. Now its --json names fix-all in
    gfx942's series."""
    stack = all_after_942_stack(tmp_path)
    stack.cli("edit", "fix-942")
    work = stack.root / ".patchforge" / "work" / "up" / "tune.py"
    work.write_bytes(work.read_bytes().replace(b"def block():\n", b"def block():  # tuned\n"))
    document = stack.json("refresh", expect=1)
    assert document["later_failing"] == []
    assert [(p["name"], p["profiles"], p["path"], p["meets"])
            for p in document["profile_failing"]] == [
        ("fix-all.patch", ["gfx942"], "tune.py", ["fix-942.patch (gfx942)"])], document
    assert_said_everywhere(stack)


def test_what_a_rebase_carries_into_a_profile_series_lint_and_overlays_take(tmp_path):
    """fix-942 (gfx942) changes v10, fix-all (every profile) v17. Upstream deletes v12..v15:
    the rebase carries fix-all into gfx942's series by a clean 3-way merge, but its diff,
    made on its base, has upstream's v10 as context: overlays warned of fuzz and lint called
    it an error no edit could clear. Now both take what the rebase carried."""
    lines = [b"v%02d = %d\n" % (i, i) for i in range(1, 31)]

    def changed(source, i, new):
        out = list(source)
        out[i - 1] = new
        return b"".join(out)

    stack = OneUpstreamStack(tmp_path, {"tune.py": b"".join(lines)}, profiles=PROFILES)
    stack.add_fix("fix-942", "tune.py", b"".join(lines), changed(lines, 10, b"v10 = 942\n"),
                  fields="Profiles: gfx942\n")
    stack.add_fix("fix-all", "tune.py", b"".join(lines), changed(lines, 17, b"v17 = 1700\n"))
    assert lint_problems(stack) == []
    v2 = lines[:11] + lines[15:]
    stack.commit({"tune.py": b"".join(v2)}, "v2", tag="v2")
    stack.rebase_json("--to", "up=v2")
    code, out, err = stack.cli("overlays")
    assert "fuzz" not in err, err
    gfx942 = changed(v2, 10, b"v10 = 942\n").replace(b"v17 = 17\n", b"v17 = 1700\n")
    assert overlay(stack, "gfx942", "tune.py") == gfx942
    assert lint_problems(stack) == []
    stack.cli("status")


def test_overlays_name_the_profile_whose_series_fails(tmp_path):
    """A series with profiles whose every patch is for every profile: a patch that does not
    apply stops overlays naming the profile too."""
    stack = OneUpstreamStack(tmp_path, {"tune.py": TUNE}, profiles=PROFILES)
    stack.add_fix("fix-a", "tune.py", TUNE, TUNE.replace(b"BLOCK = 16", b"BLOCK = 64"))
    stack.add_fix("fix-b", "tune.py", TUNE, TUNE.replace(b"BLOCK = 16", b"BLOCK = 32"))
    code, out, err = stack.cli("overlays", expect=2)
    assert "fix-b.patch" in err and "(profile gfx942)" in err, err


def test_a_profile_fix_made_after_a_fix_for_every_profile_in_repeated_code_sits_on_its_series(
        tmp_path):
    """fix-942 (gfx942) inserts 20 lines above three identical blocks; fix-all (every profile)
    sets CHECK in block 2. `new fix-942b --profiles gfx942` opened on a file with fix-all's
    change in block 1 (gfx942's series searched for its context), so a fix made there
    landed in the wrong block. Now it opens on gfx942's series as its overlay holds it; the fix
    made there (the line below fix-all's) moves with a rebase by a 3-way merge on that same
    file, and overlays and lint agree."""
    upstream = b"".join(TOP + THREE + END)
    stack = OneUpstreamStack(tmp_path, {"pkg/m.py": upstream}, profiles=PROFILES)
    stack.add_fix("fix-942", "pkg/m.py", upstream, b"".join(TOP + HEADER + THREE + END),
                  fields="Profiles: gfx942\n")
    stack.add_fix("fix-all", "pkg/m.py", upstream, b"".join(TOP + fixed(THREE, 2) + END))
    lines = new_fix_below_check(stack, b"".join(TOP + HEADER + fixed(THREE, 2) + END))
    stack.cli("overlays")
    assert overlay(stack, "gfx942") == b"".join(lines)
    # Upstream changes a line inside fix-942b's context only (block 2's first `pass`).
    v2 = TOP + THREE + END
    first_pass = [k for k, text in enumerate(v2) if text == b"    return c\n"][1] + 1
    v2[first_pass] = b"    pass  # v2\n"
    stack.commit({"pkg/m.py": b"".join(v2)}, "v2", tag="v2")
    document = stack.rebase_json("--to", "up=v2")
    assert {p["name"]: p["action"] for p in document["patches"]}["fix-942b.patch"] == "merged"
    expected = list(lines)
    expected[first_pass + len(HEADER)] = b"    pass  # v2\n"
    assert overlay(stack, "gfx942") == b"".join(expected)
    stack.cli("overlays", "--check")
    assert lint_problems(stack) == []


def test_a_fix_renaming_a_file_a_profile_fix_changed_goes_into_that_profiles_series(tmp_path):
    """fix-b (gfx942) changes line 10 of pkg/b.py; rename-b, for every profile, renames pkg/b.py
    to pkg/b2.py and changes line 28, far from it. `git apply` takes the two on gfx942's
    series (b2.py then has both changes), while status called rename-b a conflict ("does not
    apply in the series of gfx942: it changes lines of pkg/b.py that fix-b.patch (gfx942)
    changed") and lint an error: each path was judged alone, and the file renamed away, which
    gfx942's series holds changed, "did not go in". A rename is one change of two paths now:
    gfx942's file is merged onto the new path."""
    import subprocess

    base = b"".join(b"bline %d\n" % i for i in range(1, 31))
    stack = OneUpstreamStack(tmp_path, {"pkg/b.py": base}, profiles=PROFILES)
    stack.add_fix("fix-b", "pkg/b.py", base, base.replace(b"bline 10\n", b"bline 10 fixed\n"),
                  fields="Profiles: gfx942\n")
    data = stack.add_patch("up", "rename-b", {
        "pkg/b.py": None, "pkg/b2.py": base.replace(b"bline 28\n", b"bline 28 renamed\n")})
    assert b"rename from pkg/b.py\nrename to pkg/b2.py\n" in data
    # What git apply does with gfx942's series: both changes, in the renamed file.
    work = tmp_path / "gfx942"
    subprocess.run(["git", "clone", "-q", str(stack.up), str(work)], check=True)
    subprocess.run(["git", "apply", str(stack.root / "series/up/fix-b.patch"),
                    str(stack.root / "series/up/rename-b.patch")], cwd=work, check=True)
    assert (work / "pkg/b2.py").read_bytes() == base.replace(
        b"bline 10\n", b"bline 10 fixed\n").replace(b"bline 28\n", b"bline 28 renamed\n")
    states = {p["name"]: (p["state"], p.get("reason")) for p in stack.json("status")["patches"]}
    assert {n: s for n, (s, _) in states.items()} == \
        {"fix-b.patch": "applies", "rename-b.patch": "applies"}, states
    assert [f for f in lint_problems(stack) if f["severity"] == "error"] == []


def test_an_imported_commit_renaming_a_file_a_profile_fix_changed_is_a_rename(tmp_path):
    """As above, the rename made as a commit (`git mv pkg/b.py pkg/b2.py`, line 28 changed)
    and brought in by `import git`: the patch deleted pkg/b.py and created pkg/b2.py whole,
    so gfx942's fix-b met it (status: conflict, lint: error) where `git apply` of the rename
    merges. The commit is imported as `git format-patch -M` writes it: a rename with git's
    similarity, that GNU patch and `git apply` read as one (b2.py with both changes, no
    b.py), and that goes into gfx942's series."""
    import subprocess

    from helpers.git import git

    base = b"".join(b"bline %d\n" % i for i in range(1, 31))
    stack = OneUpstreamStack(tmp_path, {"pkg/b.py": base}, profiles=PROFILES)
    stack.add_fix("fix-b", "pkg/b.py", base, base.replace(b"bline 10\n", b"bline 10 fixed\n"),
                  fields="Profiles: gfx942\n")
    fork = tmp_path / "fork"
    subprocess.run(["git", "clone", "-q", str(stack.up), str(fork)], check=True)
    git(fork, "mv", "pkg/b.py", "pkg/b2.py")
    (fork / "pkg/b2.py").write_bytes(base.replace(b"bline 28\n", b"bline 28 renamed\n"))
    git(fork, "commit", "-qam", "Move b to b2")
    stack.cli("import", "git", "HEAD~1..HEAD", "--repo", str(fork))
    data = (stack.root / "series/up/move-b-to-b2.patch").read_bytes()
    theirs = subprocess.run(["git", "format-patch", "-M", "--stdout", "HEAD~1"], cwd=fork,
                            check=True, capture_output=True).stdout
    said = theirs.split(b"\ndiff --git ", 1)[1].split(b"\nindex ", 1)[0]
    assert b"diff --git " + said in data, (said, data)
    assert b"similarity index 93%\nrename from pkg/b.py\nrename to pkg/b2.py\n" in data, data
    both = base.replace(b"bline 10\n", b"bline 10 fixed\n").replace(b"bline 28\n",
                                                                    b"bline 28 renamed\n")
    for tool in (["git", "apply"], ["patch", "-p1", "--batch", "-i"]):
        work = tmp_path / tool[0]
        subprocess.run(["git", "clone", "-q", str(stack.up), str(work)], check=True)
        for name in ("fix-b", "move-b-to-b2"):
            subprocess.run([*tool, str(stack.root / f"series/up/{name}.patch")], cwd=work,
                           check=True, capture_output=True)
        assert (work / "pkg/b2.py").read_bytes() == both, tool
        assert not (work / "pkg/b.py").exists(), tool
    states = {p["name"]: p["state"] for p in stack.json("status")["patches"]}
    assert states == {"fix-b.patch": "applies", "move-b-to-b2.patch": "applies"}, states
    assert [f for f in lint_problems(stack) if f["severity"] == "error"] == []
