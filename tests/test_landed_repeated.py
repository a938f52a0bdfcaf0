"""A fix in code that is in a file more than once, landed upstream exactly and then reverted:
landed, reverted and still there are judged at the fix's own place (where upstream's line map
puts the place the fix had), never at another copy of the code that a context search finds.
Real git upstreams, real commands: `status --against`, `rebase --to`, `overlays`, `bring-back`.

The file holds two or three identical blocks; the fix sets CHECK in block 2."""
from __future__ import annotations

import pytest

from helpers.git import git
from helpers.project import OneUpstreamStack
from helpers.upstream import diff_of

BLOCK = [b"    a = load()\n", b"    if a:\n", b"        use(a)\n", b"    b = a + 1\n",
         b"    CHECK = False\n", b"    c = b * 2\n", b"    log(c)\n", b"    return c\n",
         *[b"    pass\n"] * 11, b"\n"]
TOP, END = [b"# top\n"], [b"# end\n"]


def fixed(lines: list[bytes], *blocks: int) -> list[bytes]:
    """`lines` with CHECK = True in the given (1-based) CHECK lines."""
    out = list(lines)
    at = [k for k, line in enumerate(out) if line.strip().startswith(b"CHECK")]
    for block in blocks:
        out[at[block - 1]] = b"    CHECK = True\n"
    return out


def checked_blocks(data: bytes) -> list[int]:
    """Which CHECK lines (1-based, in order) say True."""
    checks = [line for line in data.splitlines() if line.strip().startswith(b"CHECK")]
    return [k + 1 for k, line in enumerate(checks) if b"True" in line]


def file_of(lines: list[bytes]) -> bytes:
    return b"".join(TOP + lines + END)


PROFILES = {"gfx942": "rocm/gfx942:1", "gfx950": "rocm/gfx950:1"}


def stack_with_fix(tmp_path, blocks: int, profile: str | None) -> OneUpstreamStack:
    code = BLOCK * blocks
    stack = OneUpstreamStack(tmp_path, {"pkg/m.py": file_of(code), "pkg/o.py": b"o = 1\n"},
                             profiles=PROFILES)
    stack.add_fix("fix", "pkg/m.py", file_of(code), file_of(fixed(code, 2)),
                  fields=f"Profiles: {profile}\n" if profile else "")
    return stack


def overlay_blocks(stack: OneUpstreamStack, upstream_file: bytes) -> dict[str, list[int]]:
    """Per profile, the CHECK lines set in what it deploys of pkg/m.py (its overlay, else
    upstream's file)."""
    stack.cli("overlays")
    found = {}
    for profile in PROFILES:
        overlay = stack.root / "overlays" / profile / "up" / "pkg" / "m.py"
        found[profile] = checked_blocks(overlay.read_bytes() if overlay.exists()
                                        else upstream_file)
    return found


@pytest.mark.parametrize("profile", [None, "gfx950"])
@pytest.mark.parametrize("blocks", [2, 3])
def test_an_exact_landing_in_repeated_code_is_dropped_as_landed(tmp_path, blocks, profile):
    """Upstream makes exactly the fix's change in block 2. Before, with two blocks the rebase
    said "clean, applied exactly; landed detection unsure", exit 0, and the fix went into block
    1 too (the pre-image is there, 20 lines away): every overlay set CHECK in blocks 1 and 2,
    status and lint green after; with three blocks it stopped "the place of the fix is
    ambiguous" with the fix applied again in block 3, which `--continue` shipped. The 3-way
    merge at the fix's own place changes nothing: landed, dropped to upstreamed/, and every
    profile deploys upstream's file (block 2 alone)."""
    stack = stack_with_fix(tmp_path, blocks, profile)
    landed = file_of(fixed(BLOCK * blocks, 2))
    stack.commit({"pkg/m.py": landed}, "Set CHECK in block 2 (#11)", tag="v2")
    status = stack.json("status", "--against", "up=v2", expect=1)
    ((state, rebase),) = [(p["state"], p["rebase"]) for p in status["patches"]]
    assert (state, rebase) == ("upstreamed", "drop"), status["patches"]
    summary = stack.rebase_json("--to", "up=v2")
    assert summary["stopped"] is None
    assert [p["action"] for p in summary["patches"]] == ["dropped"], summary["patches"]
    assert stack.series("up") == []
    assert b"Applied-Upstream: v2" in stack.patch("up", "fix", "upstreamed")
    assert overlay_blocks(stack, landed) == {"gfx942": [2], "gfx950": [2]}
    assert stack.cli("status")[0] == 0
    assert stack.json("lint")["errors"] == 0


def test_a_skipped_fix_landed_in_repeated_code_is_kept_as_landed_by_bring_back(tmp_path):
    """A fix skipped at a conflict (its other file changed upstream) and then landed exactly
    upstream, in a file of three identical blocks: `bring-back` stopped "does not move onto
    the pin cleanly: the place of the fix is ambiguous" with the fix applied again in block 3.
    It is landed: kept under upstreamed/, nothing stopped, the series empty."""
    code = BLOCK * 3
    stack = OneUpstreamStack(tmp_path, {"pkg/m.py": file_of(code), "pkg/o.py": b"o = 1\n"})
    fix = stack.add_fix("fix", "pkg/m.py", file_of(code), file_of(fixed(code, 2)))
    # The fix also sets o = 2 in pkg/o.py: one patch of two files, made with git diff.
    both = fix + diff_of(tmp_path / "diff-o", "pkg/o.py", b"o = 1\n", b"o = 2\n")
    (stack.root / "series" / "up" / "fix.patch").write_bytes(both)
    stack.commit({"pkg/o.py": b"o = 3\n"}, "o is 3", tag="v2")
    stack.cli("rebase", "--to", "up=v2", expect=3)
    stack.cli("rebase", "--skip", expect=1)
    assert (stack.root / "series" / "up" / "skipped" / "fix.patch").is_file()
    landed = file_of(fixed(code, 2))
    stack.commit({"pkg/m.py": landed, "pkg/o.py": b"o = 2\n"}, "Set CHECK in block 2 (#11)",
                 tag="v3")
    stack.cli("rebase", "--to", "up=v3", expect=1)
    _, out, err = stack.cli("bring-back", "fix")
    assert "has landed upstream meanwhile" in out, out + err
    assert (stack.root / "series" / "up" / "upstreamed" / "fix.patch").is_file()
    assert stack.series("up") == []
    assert not (stack.root / ".patchforge" / "work" / "up" / "pkg" / "m.py").exists()


def test_a_fix_whose_copy_upstream_changed_is_not_put_into_the_other_copy(tmp_path):
    """Upstream changes the line next to the fix's in block 2 (of two identical blocks): the
    fix's pre-image is then only in block 1. Before, the rebase "applied with offset" the fix
    20 lines up, into block 1, exit 0. Now the place the fix had does not map there: status
    says `unsure` and the rebase stops naming the lines, as for any place the map cannot
    decide, the fix's change in the worktree to be put where it belongs."""
    stack = stack_with_fix(tmp_path, 2, None)
    code = BLOCK * 2
    code[len(BLOCK) + 3] = b"    b = a + 2\n"  # block 2's line above CHECK
    stack.commit({"pkg/m.py": file_of(code)}, "b is a + 2 in block 2", tag="v2")
    status = stack.json("status", "--against", "up=v2", expect=1)
    assert [(p["state"], p["rebase"]) for p in status["patches"]] == [("unsure", "stop")]
    _, _, err = stack.cli("rebase", "--to", "up=v2", expect=3)
    assert "the place of the fix is ambiguous: pkg/m.py hunk #1: its context was at lines " \
        "3, 23 of the file before upstream's change, and is only at line 3 now" in err, err


def test_a_revert_of_a_fix_in_repeated_code_is_said_and_brought_back(tmp_path):
    """Block 1 has CHECK = True already; the fix (gfx950) sets it in block 2, lands exactly
    (dropped to upstreamed/), and upstream `git revert`s the landing. Before, the revert was
    never said: block 1's line made the fix's change count as still upstream (a search for it
    found the other block), the rebase said "nothing to do", status and lint exit 0, and
    `bring-back` refused ("upstream has its change at the pin"), while gfx950 deployed no fix.
    Now the fix's own place (block 2) decides: said as reverted, and bring-back puts it back
    into block 2."""
    code = fixed(BLOCK * 2, 1)
    stack = OneUpstreamStack(tmp_path, {"pkg/m.py": file_of(code)}, profiles=PROFILES)
    stack.add_fix("fix", "pkg/m.py", file_of(code), file_of(fixed(code, 2)),
                  fields="Profiles: gfx950\n")
    landing = stack.commit({"pkg/m.py": file_of(fixed(code, 2))}, "Set CHECK in block 2 (#11)",
                           tag="v2")
    stack.cli("rebase", "--to", "up=v2")
    assert (stack.root / "series" / "up" / "upstreamed" / "fix.patch").is_file()
    assert stack.cli("status")[0] == 0  # landed, both blocks set: nothing to say
    git(stack.up, "revert", "--no-edit", landing)
    git(stack.up, "tag", "v3")
    revert = git(stack.up, "rev-parse", "HEAD").strip()
    _, out, _ = stack.cli("rebase", "--to", "up=v3", expect=1)
    assert f"was reverted upstream in {revert[:12]}" in out, out
    _, out, _ = stack.cli("status", expect=1)
    assert "reverted upstream (needs attention): fix up/fix.patch" in out, out
    assert stack.json("lint", expect=1)["errors"] == 1
    stack.cli("bring-back", "up/fix.patch")
    assert stack.series("up") == ["fix.patch"]
    assert overlay_blocks(stack, file_of(code)) == {"gfx942": [1], "gfx950": [1, 2]}
    assert stack.cli("status")[0] == 0
