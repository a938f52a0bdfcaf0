"""A stop's resolution goes into every series that holds the patch, not only its own: real git
upstreams, real commands, as a user of a MI300X (gfx942) and MI355X (gfx950) stack meets them.

`rebase --continue` and `bring-back --continue` checked the resolution on the stop's base,
the patch's own profiles' chain. A fix for one profile only is not in that base: a
resolution making a directory where gfx950's fix makes a file, or changing the lines gfx950's
fix changed, was taken. With overlays/ written the write-out then failed with a parse error
naming a line of the old patch file (no profile, no way on); without, the series was written
"resolved" and status, lint and `git apply` refused it from then on; a bring-back was written
and only `overlays` found it. --continue now refuses such a resolution (exit 2), naming the
profile, the other fix and the path, nothing written and the stop kept: the user edits again
and continues, or skips, or aborts."""
from __future__ import annotations

from helpers.project import OneUpstreamStack
from test_profile_bases import PROFILES, TUNE

V2 = TUNE.replace(b"BLOCK = 16", b"BLOCK = 24")  # upstream changes the fix's line
RESOLVED = TUNE.replace(b"BLOCK = 16", b"BLOCK = 32")
OTHER = b"a = 1\n"


def stack_with(tmp_path, fixes: list[str], *, overlays: bool = True) -> OneUpstreamStack:
    """fix-all (every profile) sets BLOCK to 32; fix-950-file (gfx950) makes the file pkg/sub,
    fix-950-lines (gfx950) sets UNROLL to 8; in the order given, overlays written (or not).
    Upstream v2 sets BLOCK to 24: fix-all stops."""
    stack = OneUpstreamStack(tmp_path, {"tune.py": TUNE, "pkg/a.py": OTHER}, profiles=PROFILES)
    for fix in fixes:
        if fix == "fix-all":
            stack.add_fix("fix-all", "tune.py", TUNE, RESOLVED)
        elif fix == "fix-950-file":
            stack.add_fix("fix-950", "pkg/sub", None, b"sub = 1\n", fields="Profiles: gfx950\n")
        else:
            stack.add_fix("fix-950", "tune.py", TUNE, TUNE.replace(b"UNROLL = 2", b"UNROLL = 8"),
                          fields="Profiles: gfx950\n")
    if overlays:
        stack.cli("overlays")
    stack.commit({"tune.py": V2}, "v2", tag="v2")
    return stack


def work(stack) -> object:
    return stack.root / ".patchforge" / "work" / "up"


def resolve_with_directory(stack) -> None:
    """The conflict resolved, and a new file pkg/sub/x.py made part of the fix."""
    (work(stack) / "tune.py").write_bytes(RESOLVED)
    stack.cli("add", "pkg/sub/x.py")
    (work(stack) / "pkg/sub/x.py").write_bytes(b"x = 1\n")


def refused(stack, command: str, said: str) -> str:
    """`command --continue` refused (exit 2) saying `said`, nothing written, still stopped."""
    before = stack.snapshot()
    _, _, err = stack.cli(command, "--continue", expect=2)
    assert said in " ".join(err.split()), err
    assert "nothing was written, the stop is as it was" in err, err
    assert stack.snapshot() == before
    _, out, err2 = stack.cli("status", expect=1)
    assert ("a rebase is stopped at fix-all.patch" if command == "rebase" else
            "bringing back fix-all.patch is stopped") in out + err2, out + err2
    return err


def test_rebase_continue_refuses_a_directory_where_another_profiles_earlier_fix_makes_a_file(
        tmp_path):
    """fix-950 (gfx950) makes pkg/sub; fix-all's resolution adds pkg/sub/x.py. The own check
    (the upstream's tree) passes; gfx950's series cannot hold both. Refused naming gfx950,
    fix-950 and the path, twice alike; taken out, --continue goes through and the overlays
    are right."""
    stack = stack_with(tmp_path, ["fix-950-file", "fix-all"])
    stack.cli("rebase", "--to", "up=v2", expect=3)
    resolve_with_directory(stack)
    said = ("would not go into every series that holds fix-all.patch on v2: in the series of "
            "gfx950, fix-all.patch creates pkg/sub/x.py, but pkg/sub is a file fix-950.patch "
            "creates")
    err = refused(stack, "rebase", said)
    assert "take pkg/sub/x.py out of the resolution" in " ".join(err.split()), err
    assert "`patchforge rebase --skip`" in err, err
    refused(stack, "rebase", said)
    (work(stack) / "pkg/sub/x.py").unlink()  # edited again: the new file taken out
    stack.cli("rebase", "--continue")
    assert stack.series("up") == ["fix-950.patch", "fix-all.patch"]
    assert b"pkg/sub/x.py" not in stack.patch("up", "fix-all")
    stack.cli("overlays", "--check")
    assert (stack.root / "overlays/gfx950/up/tune.py").read_bytes() == RESOLVED
    assert (stack.root / "overlays/gfx950/up/pkg/sub").read_bytes() == b"sub = 1\n"
    stack.cli("status")


def test_rebase_continue_refuses_a_directory_where_a_later_fix_makes_a_file_without_overlays(
        tmp_path):
    """fix-950 (gfx950), after fix-all, makes pkg/sub; no overlays written. The series was
    written "resolved", fix-950 "clean", and status then called fix-950 a conflict. Refused
    now; --abort gives everything back as it was."""
    stack = stack_with(tmp_path, ["fix-all", "fix-950-file"], overlays=False)
    before = stack.snapshot()
    stack.cli("rebase", "--to", "up=v2", expect=3)
    resolve_with_directory(stack)
    refused(stack, "rebase", "in the series of gfx950, fix-950.patch creates pkg/sub, but "
                             "fix-all.patch creates pkg/sub/x.py under it")
    _, out, err = stack.cli("rebase", "--abort")
    assert "pkg/sub/x.py" in out + err  # the hand resolution is kept aside, not lost
    assert stack.snapshot() == before
    stack.cli("status")


def test_rebase_continue_refuses_lines_another_profiles_fix_changed_then_takes_the_fix(
        tmp_path):
    """fix-950 (gfx950) sets UNROLL; fix-all's resolution changes UNROLL too. Refused naming
    gfx950 and fix-950 before anything is staged; the resolution edited to leave UNROLL
    alone goes through, each overlay right."""
    stack = stack_with(tmp_path, ["fix-950-lines", "fix-all"])
    stack.cli("rebase", "--to", "up=v2", expect=3)
    (work(stack) / "tune.py").write_bytes(RESOLVED.replace(b"UNROLL = 2", b"UNROLL = 4"))
    err = refused(stack, "rebase", "in the series of gfx950, fix-all.patch changes lines of "
                                   "tune.py that fix-950.patch (gfx950) changed before it")
    assert "make the resolution leave those lines alone" in err, err
    (work(stack) / "tune.py").write_bytes(RESOLVED)
    stack.cli("rebase", "--continue")
    stack.cli("overlays", "--check")
    assert (stack.root / "overlays/gfx942/up/tune.py").read_bytes() == RESOLVED
    assert (stack.root / "overlays/gfx950/up/tune.py").read_bytes() == \
        RESOLVED.replace(b"UNROLL = 2", b"UNROLL = 8")


def test_bring_back_continue_checks_the_resolution_in_every_profiles_series(tmp_path):
    """fix-all is skipped at the stop, fix-950 (gfx950) moves; `bring-back fix-all` stops on
    v2's line. A resolution changing fix-950's line, then one adding a directory where fix-950
    makes a file, were written to the series, and only `overlays` failed. Each is refused now,
    the fix still in skipped/; the resolution that fits is brought back."""
    stack = stack_with(tmp_path, ["fix-all", "fix-950-lines"])
    stack.cli("rebase", "--to", "up=v2", expect=3)
    stack.cli("rebase", "--skip", expect=1)
    skipped = stack.patch("up", "fix-all", "skipped")
    stack.cli("bring-back", "fix-all", expect=3)
    (work(stack) / "tune.py").write_bytes(V2.replace(b"BLOCK = 24", b"BLOCK = 32")
                                          .replace(b"UNROLL = 2", b"UNROLL = 4"))
    refused(stack, "bring-back", "in the series of gfx950, fix-all.patch changes lines of "
                                 "tune.py that fix-950.patch (gfx950) changed before it")
    assert stack.patch("up", "fix-all", "skipped") == skipped
    assert stack.series("up") == ["fix-950.patch"]
    (work(stack) / "tune.py").write_bytes(RESOLVED)
    stack.cli("bring-back", "--continue")
    assert stack.series("up") == ["fix-950.patch", "fix-all.patch"]
    stack.cli("overlays")
    assert (stack.root / "overlays/gfx950/up/tune.py").read_bytes() == \
        RESOLVED.replace(b"UNROLL = 2", b"UNROLL = 8")
    stack.cli("status")


def test_bring_back_continue_refuses_a_directory_where_another_profiles_fix_makes_a_file(
        tmp_path):
    stack = stack_with(tmp_path, ["fix-all", "fix-950-file"])
    stack.cli("rebase", "--to", "up=v2", expect=3)
    stack.cli("rebase", "--skip", expect=1)
    stack.cli("bring-back", "fix-all", expect=3)
    resolve_with_directory(stack)
    refused(stack, "bring-back", "in the series of gfx950, fix-all.patch creates pkg/sub/x.py, "
                                 "but pkg/sub is a file fix-950.patch creates")
    stack.cli("bring-back", "--abort")
    assert stack.series("up") == ["fix-950.patch"]
    assert b"pkg/sub/x.py" not in stack.patch("up", "fix-all", "skipped")


# --- refresh: the same question for `edit NAME` + `refresh` ------------------------------------
#
# refresh writes the change and warns (exit 1), as it does for a change whose lines do not go
# into a profile's series: the edit is the user's work, never thrown away, and the warning
# names the profile, the patch and the way on. A refusal would leave the change only in the
# worktree, while the patch it conflicts with may be the one to change.

def refreshed(stack, name: str) -> dict:
    """`edit NAME`, pkg/sub/x.py added to it, `refresh --json` (exit 1, schema-valid)."""
    from patchforge.formats.schemas import validation_errors

    stack.cli("edit", name)
    stack.cli("add", "pkg/sub/x.py")
    (work(stack) / "pkg/sub/x.py").write_bytes(b"x = 1\n")
    document = stack.json("refresh", expect=1)
    assert validation_errors(document, "refresh") == []
    return document


def test_a_refresh_making_a_directory_where_another_profiles_fix_makes_a_file_warns(tmp_path):
    """fix-all (every profile) edited on its own base, which never holds fix-950 (gfx950):
    adding pkg/sub/x.py under fix-950's file pkg/sub was refreshed with exit 0 and nothing
    said; overlays then failed. Now refresh writes it and warns, naming gfx950, fix-950 and
    the path; edited again without it, all is green."""
    stack = stack_with(tmp_path, ["fix-950-file", "fix-all"])
    document = refreshed(stack, "fix-all")
    assert [(p["name"], p["profiles"], p["path"], p["meets"]) for p in
            document["profile_failing"]] == [
        ("fix-all.patch", ["gfx950"], "pkg/sub/x.py", ["fix-950.patch (gfx950)"])], document
    assert document["later_failing"] == []
    assert b"pkg/sub/x.py" in stack.patch("up", "fix-all")  # written: nothing lost
    stack.cli("edit", "fix-all")
    (work(stack) / "pkg/sub/x.py").write_bytes(b"x = 2\n")
    _, _, err = stack.cli("refresh", expect=1)
    assert "warning: fix-all.patch does not go into the series of gfx950: it creates " \
        "pkg/sub/x.py, but pkg/sub is a file fix-950.patch creates, so the overlays of " \
        "gfx950 fail" in " ".join(err.split()), err
    assert "take the path out of it" in err, err
    stack.cli("edit", "fix-all")
    (work(stack) / "pkg/sub/x.py").unlink()
    stack.cli("refresh")
    stack.cli("overlays")
    stack.cli("status")


def test_a_refresh_of_a_profile_fix_that_breaks_a_later_fix_there_names_the_profile(tmp_path):
    """fix-950 (gfx950), edited to make pkg/sub/x.py, where a later fix-all (every profile)
    makes the file pkg/sub: only gfx950's series fails. refresh said "fix-all.patch no longer
    applies after this change", no profile named (in gfx942's series it does). Now the
    warning names gfx950 and fix-950."""
    stack = stack_with(tmp_path, ["fix-950-lines"])
    stack.add_fix("fix-all", "pkg/sub", None, b"sub = 1\n")
    document = refreshed(stack, "fix-950")
    assert [(p["name"], p["profiles"], p["path"], p["meets"]) for p in
            document["profile_failing"]] == [
        ("fix-all.patch", ["gfx950"], "pkg/sub", ["fix-950.patch (gfx950)"])], document
    assert document["later_failing"] == []
    _, _, err = stack.cli("overlays", expect=2)
    assert "fix-all.patch" in err, err
