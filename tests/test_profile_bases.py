"""A patch's base is the upstream plus the earlier patches of every one of its profiles' series:
two fixes for different profiles that set the same line each to its own value are each made,
judged, edited and rebased on the upstream's line, never on the other profile's fix.

Each test runs the real commands on a real git upstream, as a user of a MI300X (gfx942) and
MI355X (gfx950) stack meets them."""
from __future__ import annotations

from helpers.project import OneUpstreamStack

TUNE = b"".join([b"# tuning of the attention kernels\n",
                 b"import os\n", b"\n",
                 b"WARPS = 4\n",
                 b"STAGES = 2\n",
                 b"BLOCK = 16\n",
                 b"SPLIT = 1\n",
                 b"UNROLL = 2\n", b"\n",
                 b"def block():\n", b"    return BLOCK\n"])
PROFILES = {"gfx942": "MI300X", "gfx950": "MI355X"}


def two_fix_stack(tmp_path) -> OneUpstreamStack:
    """fix-942 (gfx942) sets BLOCK to 64, fix-950 (gfx950) to 128, both made against the
    upstream's file; overlays written."""
    stack = OneUpstreamStack(tmp_path, {"tune.py": TUNE}, profiles=PROFILES)
    stack.add_fix("fix-942", "tune.py", TUNE, TUNE.replace(b"BLOCK = 16", b"BLOCK = 64"),
                  fields="Profiles: gfx942\n")
    stack.add_fix("fix-950", "tune.py", TUNE, TUNE.replace(b"BLOCK = 16", b"BLOCK = 128"),
                  fields="Profiles: gfx950\n")
    stack.cli("overlays")
    return stack


def overlay(stack, profile: str) -> bytes:
    return (stack.root / "overlays" / profile / "up" / "tune.py").read_bytes()


def patch_applies_alone(stack, tmp_path, name: str, profile_file: bytes) -> None:
    """GNU patch of the fix, alone, onto the upstream's file at the lock gives `profile_file`:
    the fix is made on the upstream, not on the other profile's fix."""
    scratch = tmp_path / f"patch-{name}"
    scratch.mkdir()
    import subprocess as sp
    base = sp.run(["git", "-C", str(stack.up), "show", f"{stack.base}:tune.py"],
                  check=True, capture_output=True).stdout
    (scratch / "tune.py").write_bytes(base)
    diff = stack.patch("up", name).split(b"\n---\n", 1)[1]
    sp.run(["patch", "-p1", "--no-backup-if-mismatch", "-F0"], cwd=scratch, input=diff,
           check=True, capture_output=True)
    assert (scratch / "tune.py").read_bytes() == profile_file


def edit_to(stack, name: str, held: bytes, new: bytes, *args: str) -> tuple[str, str]:
    """`edit NAME` (or `new NAME ARGS`), which must open with `held` in tune.py; `new`
    written there, then `refresh`: its output."""
    stack.cli(*(("new", name, *args) if args else ("edit", name)))
    work = stack.root / ".patchforge" / "work" / "up" / "tune.py"
    assert work.read_bytes() == held
    work.write_bytes(new)
    _, out, err = stack.cli("refresh")
    return out, err


def test_each_profiles_fix_is_judged_on_its_own_base_at_the_pin(tmp_path):
    stack = two_fix_stack(tmp_path)
    document = stack.json("status")
    states = {p["name"]: p["state"] for p in document["patches"]}
    assert states == {"fix-942.patch": "applies", "fix-950.patch": "applies"}, document
    # lint regenerates each diff on its own base: byte-stable, nothing said.
    findings = stack.json("lint")["findings"]
    assert [f for f in findings if f["check"] != "ledger"] == [], findings


def test_a_rebase_moves_fixes_of_different_profiles_to_one_line_each_on_its_own(tmp_path):
    """Upstream changes a nearby line: both fixes move cleanly, each on the upstream's file;
    each profile's overlay holds its own value."""
    stack = two_fix_stack(tmp_path)
    stack.commit({"tune.py": TUNE.replace(b"WARPS = 4", b"WARPS = 8")}, "v2", tag="v2")
    summary = stack.rebase_json("--to", "up=v2")
    assert [(p["name"], p["action"]) for p in summary["patches"]] == [
        ("fix-942.patch", "merged"), ("fix-950.patch", "merged")], summary
    new = TUNE.replace(b"WARPS = 4", b"WARPS = 8")
    assert overlay(stack, "gfx942") == new.replace(b"BLOCK = 16", b"BLOCK = 64")
    assert overlay(stack, "gfx950") == new.replace(b"BLOCK = 16", b"BLOCK = 128")
    stack.cli("overlays", "--check")
    patch_applies_alone(stack, tmp_path, "fix-942",
                        new.replace(b"BLOCK = 16", b"BLOCK = 64"))
    patch_applies_alone(stack, tmp_path, "fix-950",
                        new.replace(b"BLOCK = 16", b"BLOCK = 128"))


def test_a_stop_on_one_profiles_fix_opens_on_its_own_base_and_its_resolution_holds(tmp_path):
    """Upstream changes the tuning line itself: the rebase stops on each fix in turn; the
    worktree of fix-950 holds upstream's line (not fix-942's), the resolution is fix-950's
    alone, and after --continue both profiles' overlays hold their own value."""
    stack = two_fix_stack(tmp_path)
    new = TUNE.replace(b"BLOCK = 16", b"BLOCK = 32")
    stack.commit({"tune.py": new}, "v2", tag="v2")
    stack.cli("rebase", "--to", "up=v2", expect=3)
    work = stack.root / ".patchforge" / "work" / "up" / "tune.py"
    assert b"<<<<<<<" in work.read_bytes()
    work.write_bytes(new.replace(b"BLOCK = 32", b"BLOCK = 64"))
    code, out, err = stack.cli("rebase", "--continue", expect=3)
    assert "fix-950" in out + err
    held = work.read_bytes()
    assert b"BLOCK = 64" not in held, held  # fix-942 is not in gfx950's series
    assert b"<<<<<<<" in held and b"BLOCK = 32" in held
    work.write_bytes(new.replace(b"BLOCK = 32", b"BLOCK = 128"))
    stack.rebase_json("--continue")
    assert overlay(stack, "gfx942") == new.replace(b"BLOCK = 32", b"BLOCK = 64")
    assert overlay(stack, "gfx950") == new.replace(b"BLOCK = 32", b"BLOCK = 128")
    stack.cli("overlays", "--check")
    patch_applies_alone(stack, tmp_path, "fix-950", new.replace(b"BLOCK = 32", b"BLOCK = 128"))
    states = {p["name"]: p["state"] for p in stack.json("status")["patches"]}
    assert states == {"fix-942.patch": "applies", "fix-950.patch": "applies"}


def test_edit_of_one_profiles_fix_opens_without_the_other_profiles_fix(tmp_path):
    stack = two_fix_stack(tmp_path)
    edit_to(stack, "fix-950", TUNE.replace(b"BLOCK = 16", b"BLOCK = 128"),
            TUNE.replace(b"BLOCK = 16", b"BLOCK = 256"))
    stack.cli("overlays")
    assert overlay(stack, "gfx942") == TUNE.replace(b"BLOCK = 16", b"BLOCK = 64")
    assert overlay(stack, "gfx950") == TUNE.replace(b"BLOCK = 16", b"BLOCK = 256")
    patch_applies_alone(stack, tmp_path, "fix-950",
                        TUNE.replace(b"BLOCK = 16", b"BLOCK = 256"))


def test_a_new_fix_for_one_profile_opens_on_that_profiles_series(tmp_path):
    stack = two_fix_stack(tmp_path)
    gfx950 = TUNE.replace(b"BLOCK = 16", b"BLOCK = 128")
    edit_to(stack, "fix-950-split", gfx950, gfx950.replace(b"SPLIT = 1", b"SPLIT = 2"),
            "--profiles", "gfx950", "--file", "tune.py")
    stack.cli("overlays")
    assert overlay(stack, "gfx942") == TUNE.replace(b"BLOCK = 16", b"BLOCK = 64")
    assert overlay(stack, "gfx950") == gfx950.replace(b"SPLIT = 1", b"SPLIT = 2")
    states = {p["name"]: p["state"] for p in stack.json("status")["patches"]}
    assert set(states.values()) == {"applies"}, states


def all_after_942_stack(tmp_path) -> OneUpstreamStack:
    """fix-942 (gfx942) sets BLOCK to 64; fix-all (every profile), after it, changes block()'s
    return line; both made against the upstream's file; overlays written."""
    stack = OneUpstreamStack(tmp_path, {"tune.py": TUNE}, profiles=PROFILES)
    stack.add_fix("fix-942", "tune.py", TUNE, TUNE.replace(b"BLOCK = 16", b"BLOCK = 64"),
                  fields="Profiles: gfx942\n")
    stack.add_fix("fix-all", "tune.py", TUNE,
                  TUNE.replace(b"    return BLOCK\n", b"    return max(BLOCK, 16)\n"))
    stack.cli("overlays")
    return stack


def test_a_resolution_that_breaks_another_profiles_series_is_refused_naming_it(tmp_path):
    """fix-all (every profile) comes after fix-942 (gfx942). Upstream changes fix-all's line:
    the rebase stops on it, in a worktree without fix-942 (not in every profile's series).
    A resolution that also changes fix-942's line would leave gfx942's overlay failing:
    --continue refuses it, naming the patch, the profile and fix-942, and stays stopped; the
    resolution of fix-all's own line goes through, and each overlay holds its fixes."""
    stack = all_after_942_stack(tmp_path)
    new = TUNE.replace(b"    return BLOCK\n", b"    return BLOCK  # tuned\n")
    stack.commit({"tune.py": new}, "v2", tag="v2")
    code, out, err = stack.cli("rebase", "--to", "up=v2", expect=3)
    assert "fix-all" in out + err
    work = stack.root / ".patchforge" / "work" / "up" / "tune.py"
    held = work.read_bytes()
    assert b"BLOCK = 16" in held and b"BLOCK = 64" not in held, held
    resolved = new.replace(b"    return BLOCK  # tuned\n", b"    return max(BLOCK, 16)  # tuned\n")
    work.write_bytes(resolved.replace(b"BLOCK = 16", b"BLOCK = 32"))
    code, out, err = stack.cli("rebase", "--continue", expect=2)
    said = out + err
    assert "fix-all" in said and "gfx942" in said and "fix-942" in said, said
    work.write_bytes(resolved)
    stack.rebase_json("--continue")
    assert overlay(stack, "gfx942") == resolved.replace(b"BLOCK = 16", b"BLOCK = 64")
    assert overlay(stack, "gfx950") == resolved
    stack.cli("overlays", "--check")
    patch_applies_alone(stack, tmp_path, "fix-all", resolved)


def test_a_refresh_of_one_profiles_fix_does_not_call_the_other_profiles_fix_broken(tmp_path):
    stack = two_fix_stack(tmp_path)
    out, err = edit_to(stack, "fix-942", TUNE.replace(b"BLOCK = 16", b"BLOCK = 64"),
                       TUNE.replace(b"BLOCK = 16", b"BLOCK = 96"))
    assert "fix-950" not in out + err, out + err
    stack.cli("overlays")
    assert overlay(stack, "gfx942") == TUNE.replace(b"BLOCK = 16", b"BLOCK = 96")
    assert overlay(stack, "gfx950") == TUNE.replace(b"BLOCK = 16", b"BLOCK = 128")


def test_bring_back_of_one_profiles_fix_stops_on_its_own_base(tmp_path):
    """fix-950 skipped at a stop, brought back: its worktree holds upstream's line with the
    fix's, never fix-942's; the resolution is fix-950's alone."""
    stack = two_fix_stack(tmp_path)
    new = TUNE.replace(b"BLOCK = 16", b"BLOCK = 32")
    stack.commit({"tune.py": new}, "v2", tag="v2")
    stack.cli("rebase", "--to", "up=v2", expect=3)
    work = stack.root / ".patchforge" / "work" / "up" / "tune.py"
    work.write_bytes(new.replace(b"BLOCK = 32", b"BLOCK = 64"))
    stack.cli("rebase", "--continue", expect=3)
    stack.cli("rebase", "--skip", expect=1)
    assert stack.series("up") == ["fix-942.patch"]
    stack.cli("bring-back", "fix-950", expect=3)
    held = work.read_bytes()
    assert b"BLOCK = 64" not in held and b"BLOCK = 32" in held, held
    work.write_bytes(new.replace(b"BLOCK = 32", b"BLOCK = 128"))
    stack.cli("bring-back", "--continue")
    stack.cli("overlays")
    assert overlay(stack, "gfx942") == new.replace(b"BLOCK = 32", b"BLOCK = 64")
    assert overlay(stack, "gfx950") == new.replace(b"BLOCK = 32", b"BLOCK = 128")
    patch_applies_alone(stack, tmp_path, "fix-950", new.replace(b"BLOCK = 32", b"BLOCK = 128"))


def test_a_fix_for_every_profile_that_meets_a_profiles_fix_there_stops_naming_the_profile(
        tmp_path):
    """fix-942's resolution changes the line fix-all (every profile) changes after it: fix-all
    moves on its own base, but gfx942's series would fail with it. The rebase stops on fix-all
    naming gfx942 and fix-942, never writing that series; --abort puts everything back."""
    stack = all_after_942_stack(tmp_path)
    before = stack.snapshot()
    new = TUNE.replace(b"BLOCK = 16", b"BLOCK = 32")
    stack.commit({"tune.py": new}, "v2", tag="v2")
    dry = stack.rebase_json("--to", "up=v2", "--dry-run", expect=1)
    assert [(p["name"], p["action"]) for p in dry["patches"]] == [
        ("fix-942.patch", "conflict"), ("fix-all.patch", "clean")], dry
    stack.cli("rebase", "--to", "up=v2", expect=3)
    work = stack.root / ".patchforge" / "work" / "up" / "tune.py"
    work.write_bytes(new.replace(b"BLOCK = 32", b"BLOCK = 64")
                     .replace(b"    return BLOCK\n", b"    return BLOCK + 1\n"))
    code, out, err = stack.cli("rebase", "--continue", expect=3)
    said = out + err
    assert "fix-all" in said and "series of gfx942" in said and "fix-942" in said, said
    # Its worktree is fix-all's own base (no fix-942) with fix-all moved onto it.
    assert work.read_bytes() == new.replace(b"    return BLOCK\n", b"    return max(BLOCK, 16)\n")
    stack.cli("rebase", "--abort")
    assert stack.snapshot() == before
