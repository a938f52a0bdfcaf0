"""A fix whose context repeats (two identical functions) through the exchange paths: the
exported stack must put it where the overlays do (quilt, GNU patch, `git am`), the way back
must not move it into the twin, and a patch whose place is ambiguous is said before it is
deployed (`overlays`, `move`) or refused (`import git`, `import quilt`): a patch whose `index`
lines name another version of the file, or that has none (quilt's), cannot prove its place.

The file has a header line, then scale_a and scale_b with the same body; a gfx942 fix adds 20
lines under the header, and a fix for every profile changes `y = y + 7` in scale_b, whose
three lines of context are in scale_a too: its own line numbers (the upstream's) are then
nearer scale_a's copy in gfx942's series."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

from helpers.cli import ok, run_cli
from helpers.env import need_tool
from helpers.git import git
from helpers.project import git_project

BODY = b"".join(b"    y = %s\n" % s for s in (b"x * 2", b"y + 1", b"y - 3", b"y * 5", b"y + 7",
                                               b"y - 9", b"y * 11", b"y + 13")) + \
    b"    return y\n"
TWINS = b"# header\n\n\ndef scale_a(x):\n" + BODY + b"\n\ndef scale_b(x):\n" + BODY
NEW_LINES = b"".join(b"NEW_%d = %d\n" % (i, i) for i in range(1, 21))


def in_b(content: bytes) -> bytes:
    """`content` with scale_b's `y = y + 7` made `y = y + 70` (scale_a's left alone)."""
    at = content.index(b"def scale_b")
    return content[:at] + content[at:].replace(b"y = y + 7\n", b"y = y + 70\n", 1)


def fixed_in(content: bytes) -> str:
    """Which function of `content` has the fix: "a", "b", "both" or "none"."""
    a, b = content.split(b"def scale_b")
    found = [name for name, part in (("a", a), ("b", b)) if b"y + 70\n" in part]
    return "both" if len(found) == 2 else (found[0] if found else "none")


def twin_stack(tmp_path: Path, monkeypatch) -> tuple[Path, str]:
    """p942 (gfx942 only: 20 lines under the header), then pall (every profile: the fix in
    scale_b, made on the upstream as `new` + `refresh` make it)."""
    monkeypatch.setenv("PATCHFORGE_DATE", "2024-05-01")
    root, base = git_project(tmp_path, {"pkg/k.py": TWINS},
                             profiles={"gfx942": "MI300X", "gfx950": "MI355X"})
    work = root / ".patchforge/work/up/pkg/k.py"
    ok(root, "new", "p942", "--file", "pkg/k.py", "-m", "gfx942 lines", "--profiles", "gfx942")
    work.write_bytes(work.read_bytes().replace(b"# header\n", b"# header\n" + NEW_LINES))
    ok(root, "refresh")
    ok(root, "new", "pall", "--file", "pkg/k.py", "-m", "scale_b: +70")
    assert b"NEW_1" not in work.read_bytes()  # made on the upstream, pall's own base
    work.write_bytes(in_b(work.read_bytes()))
    ok(root, "refresh")
    ok(root, "overlays")
    assert fixed_in((root / "overlays/gfx942/up/pkg/k.py").read_bytes()) == "b"
    assert fixed_in((root / "overlays/gfx950/up/pkg/k.py").read_bytes()) == "b"
    return root, base


def checkout(tmp_path: Path, base: str, name: str) -> Path:
    tree = tmp_path / name
    git(tmp_path, "clone", "-q", str(tmp_path / "up-upstream"), str(tree))
    git(tree, "checkout", "-q", base)
    return tree


def quilt(tree: Path, patches: Path, *args: str) -> str:
    rc = tree.parent / "quiltrc"
    rc.write_text("")
    proc = subprocess.run(["quilt", *args], cwd=tree, capture_output=True,
                          env={**os.environ, "QUILT_PATCHES": str(patches),
                               "QUILTRC": str(rc), "EDITOR": "false"})
    assert proc.returncode == 0, (args, proc.stdout, proc.stderr)
    return proc.stdout.decode()


def test_export_quilt_of_a_profile_puts_a_fix_where_the_overlay_has_it(tmp_path, monkeypatch):
    """`export --quilt DIR --profile gfx942` wrote pall with its own base's line numbers, and
    `quilt push -a` (GNU patch, no fuzz) put its change 8 lines off, in scale_a, while
    gfx942's overlay has it in scale_b. It is now written with the line numbers gfx942's
    series has it at: quilt's tree is the overlay, byte for byte, and the export says so. A
    `quilt refresh` with no edit then takes nothing back, and the series keeps the fix in
    scale_b."""
    need_tool("quilt")
    root, base = twin_stack(tmp_path, monkeypatch)
    exported = tmp_path / "q"
    run = ok(root, "export", "--quilt", str(exported), "--profile", "gfx942")
    tree = checkout(tmp_path, base, "qt")
    pushed = quilt(tree, exported, "push", "-a")
    assert (tree / "pkg/k.py").read_bytes() == (root / "overlays/gfx942/up/pkg/k.py").read_bytes()
    assert "offset" not in pushed and "fuzz" not in pushed, pushed
    assert "up/pall.patch written with the line numbers gfx942's series has its change at" \
        in run.err, run.err
    pall = (root / "series/up/pall.patch").read_bytes()
    quilt(tree, exported, "refresh")
    ok(root, "import", "quilt", str(exported), "--update")
    assert (root / "series/up/pall.patch").read_bytes() == pall
    ok(root, "overlays")
    for profile in ("gfx942", "gfx950"):
        assert fixed_in((root / f"overlays/{profile}/up/pkg/k.py").read_bytes()) == "b"


def test_export_mbox_applied_by_git_am_is_the_overlay(tmp_path, monkeypatch):
    """`export --mbox` + `git am` on the upstream: git's apply put pall in scale_a as GNU
    patch did. Written as the one stack (gfx942's series: every patch of the mbox) has it,
    `git am` gives gfx942's overlay."""
    root, base = twin_stack(tmp_path, monkeypatch)
    mbox = tmp_path / "up.mbox"
    ok(root, "export", "--mbox", str(mbox))
    tree = checkout(tmp_path, base, "am")
    git(tree, "-c", "user.name=a", "-c", "user.email=a@b", "am", "-q", str(mbox))
    assert (tree / "pkg/k.py").read_bytes() == (root / "overlays/gfx942/up/pkg/k.py").read_bytes()


def test_update_refuses_a_fix_quilt_moved_into_the_twin(tmp_path, monkeypatch):
    """In quilt's tree the change of pall is moved by hand from scale_b to scale_a (as an
    older export's `quilt push` put it) and refreshed: the same lines added and taken out,
    elsewhere. Taken back, the fix moved into scale_a in every profile with every check
    green; now refused, naming the quilt file, nothing written."""
    need_tool("quilt")
    root, base = twin_stack(tmp_path, monkeypatch)
    exported = tmp_path / "q"
    ok(root, "export", "--quilt", str(exported), "--profile", "gfx942")
    tree = checkout(tmp_path, base, "qt")
    quilt(tree, exported, "push", "-a")
    k = tree / "pkg/k.py"
    a, b = k.read_bytes().split(b"def scale_b")
    k.write_bytes(a.replace(b"y = y + 7\n", b"y = y + 70\n", 1) + b"def scale_b"
                  + b.replace(b"y = y + 70\n", b"y = y + 7\n", 1))
    quilt(tree, exported, "refresh")
    pall = (root / "series/up/pall.patch").read_bytes()
    run = run_cli(root, "import", "quilt", str(exported), "--update")
    assert run.rc == 2, run.text
    assert f"{exported / 'pall.patch'}:" in run.err
    assert "quilt's patch makes the series' change to pkg/k.py in another place than the " \
        "series' patch has it" in run.err and "nothing was taken back" in run.err, run.err
    assert (root / "series/up/pall.patch").read_bytes() == pall


def moved_first(tmp_path: Path, monkeypatch) -> tuple[Path, subprocess.CompletedProcess]:
    """p1 takes 20 lines out above the twins; p2, made on it, fixes scale_b; `move p2
    --first` leaves p2 on a file it was not made on, its context in both twins."""
    monkeypatch.setenv("PATCHFORGE_DATE", "2024-05-01")
    old = b"".join(b"OLD_%d = %d\n" % (i, i) for i in range(1, 21))
    root, _ = git_project(tmp_path, {"pkg/k.py": TWINS.replace(b"# header\n",
                                                                b"# header\n" + old)})
    work = root / ".patchforge/work/up/pkg/k.py"
    ok(root, "new", "p1", "--file", "pkg/k.py", "-m", "no OLD lines")
    work.write_bytes(work.read_bytes().replace(old, b""))
    ok(root, "refresh")
    ok(root, "new", "p2", "--file", "pkg/k.py", "-m", "scale_b: +70")
    work.write_bytes(in_b(work.read_bytes()))
    ok(root, "refresh")
    return root, run_cli(root, "move", "p2", "--first")


def test_move_says_a_patch_whose_place_became_ambiguous(tmp_path, monkeypatch):
    """`move p2 --first` said "moved p2", exit 0; it now warns, as `refresh` does of a later
    patch, naming the patch and the lines of its context, exit 1."""
    root, run = moved_first(tmp_path, monkeypatch)
    assert run.rc == 1, run.text
    assert "warning: p2.patch: the place of its change is ambiguous in the new order: " \
        "pkg/k.py hunk #1: its context is at lines 26, 38" in run.err, run.err
    assert (root / "series/up/series").read_text() == "p2.patch\np1.patch\n"


def test_overlays_warn_of_a_fix_put_at_an_ambiguous_place(tmp_path, monkeypatch):
    """`overlays` of a series whose patch is ambiguous (status unsure, lint an error) wrote
    it into scale_a without a word; it now warns, naming the patch and the lines, as the
    reference says."""
    root, _ = moved_first(tmp_path, monkeypatch)
    run = ok(root, "overlays")
    assert "warning: up/p2.patch: the place of its change is ambiguous: pkg/k.py hunk #1: " \
        "its context is at lines 26, 38 (put at line 26, the nearest to its header's)" \
        in run.err, run.err


def test_import_git_of_a_branch_made_on_an_older_upstream_with_an_ambiguous_place(
        tmp_path, monkeypatch):
    """A fork branch made on v0 fixes scale_b; the pin (v1) added 20 lines above the twins.
    `import git v0..fix` stamped `Base:` with the pin, said nothing, and the overlay had the
    fix in scale_a. Refused now, naming the commit and the lines, nothing written."""
    monkeypatch.setenv("PATCHFORGE_DATE", "2024-05-01")
    root, _ = git_project(tmp_path, {"pkg/k.py": TWINS})
    upstream = tmp_path / "up-upstream"
    v0 = git(upstream, "rev-parse", "HEAD").strip()
    (upstream / "pkg/k.py").write_bytes(TWINS.replace(b"# header\n", b"# header\n" + NEW_LINES))
    git(upstream, "commit", "-qam", "more")
    ok(root, "upstream", "pin", "up", "--at", "main")
    fork = tmp_path / "fork"
    git(tmp_path, "clone", "-q", str(upstream), str(fork))
    git(fork, "checkout", "-q", "-b", "fix", v0)
    (fork / "pkg/k.py").write_bytes(in_b(TWINS))
    git(fork, "-c", "user.name=a", "-c", "user.email=a@b", "commit", "-qam", "scale_b: +70")
    run = run_cli(root, "import", "git", f"{v0}..fix", "--repo", str(fork), "--upstream", "up")
    assert run.rc == 2, run.text
    assert "scale_b-70.patch (from " in run.err and "the place of its change is ambiguous " \
        "on the pin: pkg/k.py hunk #1: its context is at lines 26, 38" in run.err, run.err
    assert not (root / "series/up/scale_b-70.patch").exists()
    assert "scale_b" not in ((root / "series/up/series").read_text()
                             if (root / "series/up/series").exists() else "")


def test_export_mbox_of_a_profile_applied_by_git_am_is_that_profile_overlay(tmp_path,
                                                                             monkeypatch):
    """`export --mbox FILE --profile P` was refused ("--profile goes with --quilt DIR"), so
    the mbox of a series with patches for some profiles only was always the first profile's
    stack: `git am` could not give gfx950's tree. Now it writes P's series (gfx950's leaves
    p942 out), each fix as P's series has it, and `git am` gives P's overlay; an unknown
    profile is refused as `--quilt` refuses it, nothing written."""
    root, base = twin_stack(tmp_path, monkeypatch)
    for profile in ("gfx950", "gfx942"):
        mbox = tmp_path / f"{profile}.mbox"
        ok(root, "export", "--mbox", str(mbox), "--profile", profile)
        assert (b"p942" in mbox.read_bytes()) == (profile == "gfx942")
        tree = checkout(tmp_path, base, f"am-{profile}")
        git(tree, "-c", "user.name=a", "-c", "user.email=a@b", "am", "-q", str(mbox))
        assert (tree / "pkg/k.py").read_bytes() == \
            (root / f"overlays/{profile}/up/pkg/k.py").read_bytes()
    wrong = run_cli(root, "export", "--mbox", str(tmp_path / "x.mbox"), "--profile", "gfx9")
    assert wrong.rc == 2 and "no profile named 'gfx9' (configured: gfx942, gfx950)" in wrong.err, \
        wrong.text
    assert not (tmp_path / "x.mbox").exists()


def quilt_patch_made_on_v0(tmp_path: Path, monkeypatch) -> tuple[Path, Path]:
    """A project pinned at v1 (20 lines added above the twins) and a quilt series made with
    the real quilt on v0's tree: fix-b (scale_b: +70), a quilt diff without `index` lines,
    whose line numbers are v0's and whose context is in both twins. (root, quilt patches)."""
    need_tool("quilt")
    monkeypatch.setenv("PATCHFORGE_DATE", "2024-05-01")
    root, v0 = git_project(tmp_path, {"pkg/k.py": TWINS})
    upstream = tmp_path / "up-upstream"
    (upstream / "pkg/k.py").write_bytes(TWINS.replace(b"# header\n", b"# header\n" + NEW_LINES))
    git(upstream, "commit", "-qam", "more")
    ok(root, "upstream", "pin", "up", "--at", "main")
    tree = checkout(tmp_path, v0, "old-tree")
    patches = tmp_path / "patches"
    patches.mkdir()
    quilt(tree, patches, "new", "fix-b.patch")
    quilt(tree, patches, "add", "pkg/k.py")
    (tree / "pkg/k.py").write_bytes(in_b(TWINS))
    quilt(tree, patches, "refresh")
    assert b"\nindex " not in (patches / "fix-b.patch").read_bytes()
    return root, patches


AMBIGUOUS_AT = "pkg/k.py hunk #1: its context is at lines 26, 38"
NO_INDEX = "its diff has no index lines naming the file it was made on"


def test_import_quilt_of_a_patch_without_index_lines_at_an_ambiguous_place_is_refused(
        tmp_path, monkeypatch):
    """A quilt patch names no blob ids, so which version of the file it was made on is
    unknown; an `import git` of the same fix made on v0 was refused (its index lines name
    v0's file), while `import quilt` took this one silently and the overlay had the fix in
    scale_a. Refused now as the other is, naming the patch, the file and both places, and
    why: nothing written."""
    root, patches = quilt_patch_made_on_v0(tmp_path, monkeypatch)
    series = (root / "series/up/series").read_bytes() \
        if (root / "series/up/series").exists() else None
    run = run_cli(root, "import", "quilt", str(patches), "--upstream", "up")
    assert run.rc == 2, run.text
    assert f"fix-b.patch (from {patches / 'fix-b.patch'}): the place of its change is " \
        f"ambiguous on the pin: {AMBIGUOUS_AT}, and {NO_INDEX}" in run.err, run.err
    assert not (root / "series/up/fix-b.patch").exists()
    assert ((root / "series/up/series").read_bytes()
            if (root / "series/up/series").exists() else None) == series


def test_a_listed_patch_without_index_lines_at_an_ambiguous_place_is_said(tmp_path,
                                                                          monkeypatch):
    """The same quilt patch put into the series by hand (as a colleague's commit would):
    `overlays` wrote the fix into scale_a without a word, `status` called it an offset and
    `lint` found only its diff not byte-stable. Now each says its place is ambiguous, as for
    a patch whose index lines name another file, and why."""
    from helpers.project import add_patch_file

    root, patches = quilt_patch_made_on_v0(tmp_path, monkeypatch)
    data = b"Description: scale_b +70\nAuthor: a <a@b>\nUpstream-Status: Pending\n" \
        b"Upstream: up\n\n" + (patches / "fix-b.patch").read_bytes()
    add_patch_file(root, "up", "fix-b.patch", data)
    built = ok(root, "overlays")
    assert f"warning: up/fix-b.patch: the place of its change is ambiguous: {AMBIGUOUS_AT} " \
        "(put at line 26, the nearest to its header's)" in built.err, built.err
    lint = run_cli(root, "lint")
    assert lint.rc == 1 and f"the place of its change is ambiguous: {AMBIGUOUS_AT}" in lint.out \
        and NO_INDEX in lint.out, lint.text
    status = run_cli(root, "status")
    assert status.rc == 1 and f"unsure  ambiguous place: {AMBIGUOUS_AT}" in status.out, \
        status.text


def test_a_rebase_never_carries_a_place_that_was_a_guess_on_the_old_pin(tmp_path,
                                                                          monkeypatch):
    """The listed quilt patch (its place on v1 nearness's guess, scale_a), then `rebase --to`
    a v2 that changes the header line: the line map carried the guessed place to v2 and the
    rebase moved the fix on in scale_a, "applies", exit 0. Now it stops, unsure, naming the
    places: a map carries a place, it cannot prove one the old series never had."""
    from helpers.project import add_patch_file

    root, patches = quilt_patch_made_on_v0(tmp_path, monkeypatch)
    data = b"Description: scale_b +70\nAuthor: a <a@b>\nUpstream-Status: Pending\n" \
        b"Upstream: up\n\n" + (patches / "fix-b.patch").read_bytes()
    add_patch_file(root, "up", "fix-b.patch", data)
    upstream = tmp_path / "up-upstream"
    k = upstream / "pkg/k.py"
    k.write_bytes(k.read_bytes().replace(b"# header\n", b"# header, v2\n"))
    git(upstream, "commit", "-qam", "v2")
    git(upstream, "tag", "v2")
    run = run_cli(root, "rebase", "--to", "v2")
    assert run.rc == 3, run.text
    assert f"up/fix-b.patch: the place of the fix is ambiguous: {AMBIGUOUS_AT} (put at line " \
        f"26); {NO_INDEX}" in run.err, run.err
    assert (root / "series/up/fix-b.patch").read_bytes() == data
