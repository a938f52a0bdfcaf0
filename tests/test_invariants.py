"""`Keeps:` invariants: parsing (errors name the patch file and line), matching (bytes, regular
expressions), a clean-merging rebase that loses a fix stopping with exit 3, and invariants
checked per profile on the overlays (`check_overlay_invariants`, `patchforge check`).

Projects here pin a real git upstream built by the test and are driven through the real CLI.
"""
from __future__ import annotations

import subprocess

import pytest

from helpers.project import OneUpstreamStack
from patchforge.errors import InputError, UnsafePathError
from patchforge.formats.patchfile import parse_patch_file
from patchforge.invariants import (MAX_PATTERN, Invariant, check_overlay_invariants,
                                   check_patch_invariants, parse_invariants)


# --- parsing and matching -------------------------------------------------------------------

def header_patch(keeps: str) -> bytes:
    return (b"Description: a fix\nUpstream-Status: Pending\n" + keeps.encode()
            + b"\n---\ndiff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-x\n+y\n")


def test_keeps_lines_text_regex_and_continuations():
    patch = parse_patch_file(header_patch(
        "Keeps: pkg/a.py: FP8_MAX=224.0\n"
        "Keeps: pkg/a.py: re:^def fnuz\\(\\):$\n"
        " pkg/b.py: float8e4b8\n"), "series/up/x.patch")
    assert parse_invariants(patch) == [
        Invariant("pkg/a.py", "FP8_MAX=224.0", False),
        Invariant("pkg/a.py", r"^def fnuz\(\):$", True),
        Invariant("pkg/b.py", "float8e4b8", False)]


@pytest.mark.parametrize("keeps, line, message", [
    ("Keeps: pkg/a.py: re:(unclosed", 4, "bad regular expression"),
    ("Keeps: pkg/a.py: re:" + "a" * (MAX_PATTERN + 1), 4, "longer than"),
    ("Keeps: no separator here", 4, "expected '<path>: <text>'"),
    ("Keeps: pkg/a.py: ok\n pkg/b.py:", 5, "expected '<path>: <text>'"),
])
def test_bad_keeps_lines_name_file_and_line(keeps, line, message):
    data = (b"Description: a fix\nUpstream-Status: Pending\nOrigin: vendor\n" + keeps.encode()
            + b"\n---\ndiff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-x\n+y\n")
    patch = parse_patch_file(data, "series/up/x.patch")
    with pytest.raises(InputError) as info:
        parse_invariants(patch)
    assert info.value.path == "series/up/x.patch"
    assert info.value.line == line
    assert message in info.value.message


@pytest.mark.parametrize("path", ["../etc/passwd", "/etc/passwd", ".git/config", "a/../../b"])
def test_keeps_paths_outside_the_upstream_are_refused(path):
    patch = parse_patch_file(header_patch(f"Keeps: {path}: root"), "x.patch")
    with pytest.raises(UnsafePathError):
        parse_invariants(patch)


def test_matching_is_on_bytes_and_multiline_regex():
    content = b"def fnuz():\r\n    scale = 224.0\r\n\xff\xfe not utf-8\n"
    assert Invariant("a", "scale = 224.0", False).holds(content)
    assert Invariant("a", r"^def fnuz\(\):\r?\n    scale = 224\.0", True).holds(content)
    assert not Invariant("a", "scale = 448.0", False).holds(content)
    assert not Invariant("a", "anything", False).holds(None)  # the file is gone
    patch = parse_patch_file(header_patch("Keeps: a.py: 224.0\n b.py: gone"), "x.patch")
    files = {"a.py": content}
    assert check_patch_invariants(patch, files.get) == [
        "Keeps invariant broken: b.py: gone is not in the result"]


# --- a rebase that merges cleanly but loses the fix -----------------------------------------

BODY = (b"    x = x.float()\n"
        b"    x = x.flatten()\n"
        b"    y = x\n"
        b"    scale = 448.0\n"
        b"    out = y * scale\n"
        b"    out = out.clamp(-scale, scale)\n"
        b"    return out\n")
V1 = (b"import math\n\n\ndef fnuz_writer(x):\n    \"\"\"Write the FNUZ cache.\"\"\"\n" + BODY
      + b"\n\ndef tail():\n    return None\n")
# v2: upstream adds an OCP writer with the very same body above the FNUZ one, and touches the
# FNUZ writer's body: the fix's hunk now matches exactly, at its old line numbers, in the wrong
# function. `git apply` and the rebase's fast path both take it.
V2 = (b"import math\n\n\ndef ocp_writer(x):\n    \"\"\"Write the OCP cache.\"\"\"\n" + BODY
      + b"\n\ndef fnuz_writer(x):\n    \"\"\"Write the FNUZ cache.\"\"\"\n"
      + BODY.replace(b"    y = x\n", b"    y = x.contiguous()\n")
      + b"\n\ndef tail():\n    return None\n")
FIXED = V1.replace(b"scale = 448.0", b"scale = 224.0")
KEEPS = "Keeps: pkg/ops.py: re:def fnuz_writer\\(x\\):\\n(?:    .*\\n)*?    scale = 224\\.0\n"


def test_clean_merging_rebase_that_loses_the_fix_stops_with_exit_3(tmp_path):
    stack = OneUpstreamStack(tmp_path, {"pkg/ops.py": V1})
    stack.add_fix("fnuz-scale", "pkg/ops.py", V1, FIXED, fields=KEEPS)
    stack.cli("lint", "--no-forge")  # the invariant holds on the locked base
    stack.commit({"pkg/ops.py": V2}, "v2: OCP writer", tag="v2")
    # The fix still "applies" to v2, exactly: nothing but the invariant can tell.
    assert subprocess.run(["git", "apply", "--check", "-"], cwd=stack.up, capture_output=True,
                          input=(stack.root / "series/up/fnuz-scale.patch").read_bytes()
                          ).returncode == 0
    before = stack.snapshot()
    code, out, err = stack.cli("rebase", "--to", "v2", expect=3)
    assert "up/fnuz-scale.patch" in err  # the patch
    assert "pkg/ops.py: re:def fnuz_writer" in err  # the file and the invariant
    assert "Keeps invariant broken" in err
    assert stack.snapshot() == before  # stopped like a conflict: nothing written
    stack.cli("rebase", "--abort")
    assert stack.snapshot() == before


def test_a_stop_on_a_keeps_line_prints_json_its_schema_takes(tmp_path):
    """`rebase --json` at a stop on a Keeps: line gave the stop the journal's `keeps_free`
    digest, a key the `stopped` object of rebase.schema.json does not allow: a CI job
    validating the output failed on the one stop it most needs to read."""
    from patchforge.formats.schemas import validation_errors
    stack = OneUpstreamStack(tmp_path, {"pkg/ops.py": V1})
    stack.add_fix("fnuz-scale", "pkg/ops.py", V1, FIXED, fields=KEEPS)
    stack.commit({"pkg/ops.py": V2}, "v2: OCP writer", tag="v2")
    document = stack.json("rebase", "--to", "v2", expect=3)
    assert document["stopped"]["kind"] == "invariant", document
    assert validation_errors(document, "rebase") == []


def test_the_same_rebase_without_the_invariant_stops_on_the_function(tmp_path):
    """The control for the test above: without `Keeps:` the rebase does not put the fix into
    ocp_writer either (before: exit 0, the fix in ocp_writer, fnuz_writer keeping the wrong
    scale, the invariant not holding): the definition line above the change names ocp_writer,
    and fnuz_writer is still in the file with the code the fix is made on. It stops."""
    stack = OneUpstreamStack(tmp_path, {"pkg/ops.py": V1})
    stack.add_fix("fnuz-scale", "pkg/ops.py", V1, FIXED)
    stack.commit({"pkg/ops.py": V2}, "v2: OCP writer", tag="v2")
    before = stack.snapshot()
    _, _, err = stack.cli("rebase", "--to", "v2", expect=3)
    assert "the fix changes fnuz_writer, and would change ocp_writer" in err, err
    stack.cli("rebase", "--abort")
    assert stack.snapshot() == before


# --- per profile ------------------------------------------------------------------------------

OPS = b"def fp8_max():\n    return 448.0\n\n\ndef dtype():\n    return 'e4m3fn'\n"


def profile_stack(tmp_path) -> OneUpstreamStack:
    """shared-fix (all profiles, Keeps 224.0); gfx942-only dtype fix (Keeps e4m3fnuz);
    a gfx950-only later patch that puts 448.0 back (undoing the shared fix on gfx950 only)."""
    stack = OneUpstreamStack(tmp_path, {"pkg/ops.py": OPS, "pkg/other.py": b"KEEP = 1\n"},
                         profiles={"gfx942": "MI300X", "gfx950": "MI355X"})
    fixed = OPS.replace(b"448.0", b"224.0")
    stack.add_fix("shared-fix", "pkg/ops.py", OPS, fixed,
                    fields="Keeps: pkg/ops.py: return 224.0\n"
                           "Keeps: pkg/other.py: KEEP = 1\n")
    stack.add_fix("gfx942-dtype", "pkg/ops.py", fixed, fixed.replace(b"e4m3fn'", b"e4m3fnuz'"),
                    fields="Profiles: gfx942\nKeeps: pkg/ops.py: re:^    return 'e4m3fnuz'$\n")
    stack.add_fix("gfx950-ocp-max", "pkg/ops.py", fixed, fixed.replace(b"224.0", b"448.0"),
                    fields="Profiles: gfx950\n")
    return stack


def test_invariants_are_checked_on_each_profiles_result(tmp_path):
    stack = profile_stack(tmp_path)
    from patchforge.overlay import build_overlays
    from patchforge.pins import open_store

    project = stack.project()
    with open_store(project) as store:
        overlays = build_overlays(project, store)
        violations = check_overlay_invariants(project, overlays, store=store)
    # The gfx942-only Keeps line is not checked on gfx950 (where its patch is not applied); the
    # shared fix is broken on gfx950 only, by the later gfx950 patch.
    assert [(v.profile, v.patch, v.path, v.invariant, v.reason) for v in violations] == [
        ("gfx950", "shared-fix.patch", "pkg/ops.py", "pkg/ops.py: return 224.0", "missing")]
    assert "up/shared-fix.patch" in violations[0].message and "gfx950" in violations[0].message

    document = stack.json("check", expect=1)
    assert document["ok"] is False and document["ran"] is False and document["checks"] == []
    assert [(v["profile"], v["patch"], v["path"]) for v in document["invariants"]] == [
        ("gfx950", "shared-fix.patch", "pkg/ops.py")]
    assert stack.json("check", "--profile", "gfx942")["invariants"] == []
    code, out, _ = stack.cli("check", "--profile", "gfx950", expect=1)
    assert "up/shared-fix.patch: Keeps invariant broken: pkg/ops.py: return 224.0" in out


def test_an_invariant_on_a_file_no_patch_touches_reads_the_upstream(tmp_path):
    stack = profile_stack(tmp_path)
    # pkg/other.py is untouched: "KEEP = 1" is read from the locked upstream and holds. Once
    # the shared fix guards a file that is not there, it is reported as absent, per profile.
    path = stack.root / "series/up/shared-fix.patch"
    path.write_bytes(path.read_bytes().replace(b"Keeps: pkg/other.py: KEEP = 1",
                                               b"Keeps: pkg/gone.py: KEEP = 1"))
    document = stack.json("check", expect=1)
    assert sorted((v["profile"], v["path"], v["reason"]) for v in document["invariants"]) == [
        ("gfx942", "pkg/gone.py", "absent"), ("gfx950", "pkg/gone.py", "absent"),
        ("gfx950", "pkg/ops.py", "missing")]


def test_check_passes_when_every_invariant_holds(tmp_path):
    stack = profile_stack(tmp_path)
    series = stack.root / "series/up/series"
    series.write_text("shared-fix.patch\ngfx942-dtype.patch\n")
    (stack.root / "series/up/gfx950-ocp-max.patch").unlink()
    code, out, _ = stack.cli("check")
    assert "Keeps invariants: all hold" in out


def test_require_overlay_invariants_refuses_with_every_violation(tmp_path):
    from patchforge.errors import EXIT_ATTENTION
    from patchforge.invariants import InvariantsBroken, require_overlay_invariants
    from patchforge.pins import open_store
    from patchforge.overlay import build_overlays

    stack = profile_stack(tmp_path)
    project = stack.project()
    with open_store(project) as store:
        overlays = build_overlays(project, store)
        with pytest.raises(InvariantsBroken) as info:
            require_overlay_invariants(project, overlays, store=store)
    assert info.value.exit_code == EXIT_ATTENTION
    assert [v.patch for v in info.value.violations] == ["shared-fix.patch"]
    assert "up/shared-fix.patch: Keeps invariant broken: pkg/ops.py: return 224.0" in str(info.value)


def test_a_keeps_pattern_that_backtracks_without_end_is_an_error_not_a_hang(tmp_path,
                                                                             monkeypatch):
    """`Keeps: pkg/ops.py: re:^(a|aa)*$` with a line of 64 letters the patch adds: the search
    backtracks exponentially (hours), and lint, overlays and a rebase held CI until its time
    limit. Each search now has a time budget (here 0.3 s): exit 2 naming the patch file and
    the Keeps line, and a rebase says it stays in progress (`--abort` goes back)."""
    import patchforge.invariants

    monkeypatch.setattr(patchforge.invariants, "REGEX_SECONDS", 0.3)
    stack = OneUpstreamStack(tmp_path, {"pkg/ops.py": V1, "pkg/other.py": b"x = 1\n"})
    stack.add_fix("letters", "pkg/ops.py", V1, V1 + b"#" + b"a" * 64 + b"!\n",
                  fields="Keeps: pkg/ops.py: re:^#(a|aa)*$\n")
    stack.commit({"pkg/other.py": b"x = 2\n"}, "v2: elsewhere", tag="v2")
    before = stack.snapshot()
    # The time limit is a SIGALRM timer, which works on the main thread only: every command
    # that judges Keeps (status and check too) must do it there, or the search runs unbounded.
    for args in (("lint", "--no-forge"), ("overlays",), ("status", "--against", "v2"),
                 ("check",), ("rebase", "--to", "v2")):
        code, out, err = stack.cli(*args, expect=2)
        assert "series/up/letters.patch:" in err and "found no answer in 0.3 s" in err, err
    assert "rebase --abort" in err
    stack.cli("rebase", "--abort")
    assert stack.snapshot() == before


@pytest.mark.parametrize("profiles", [False, True])
def test_the_fixes_after_one_stopped_by_its_keeps_line_are_judged_on_its_result(tmp_path,
                                                                                profiles):
    """fix-a applies to v2 exactly, but v2 breaks its Keeps: line (in another file); fix-c is
    made on fix-a's lines. The stop leaves fix-a's result in the worktree, yet status and the
    dry run judged fix-c on v2 without fix-a: "fuzz" and "3-way merged cleanly" for a patch
    that applies exactly where the rebase will meet it (and a patch editing fix-a's own line
    was called a conflict). fix-c is now judged on fix-a's result: applies, exactly. With
    profiles (a fix for one of them between the two), each profile's series meets it too."""
    a = b"def f():\n    return 1\n\ndef g():\n    return 2\n"
    b = b"x = 1\ny = 2\nz = 3\n"
    stack = OneUpstreamStack(tmp_path, {"a.py": a, "b.py": b, "c.py": b"w = 1\n"},
                             **({"profiles": {"p1": "first", "p2": "second"}} if profiles
                                else {}))
    with_a = a.replace(b"return 1", b"return 11")
    stack.add_fix("fix-a", "a.py", a, with_a, fields="Keeps: b.py: z = 3\n")
    names = ["fix-a.patch"]
    if profiles:
        stack.add_fix("fix-p", "c.py", b"w = 1\n", b"w = 10\n", fields="Profiles: p1\n")
        names.append("fix-p.patch")
    stack.add_fix("fix-c", "a.py", with_a, with_a.replace(b"return 11", b"return 111"))
    (stack.root / "series/up/series").write_text("".join(f"{n}\n" for n in [*names,
                                                                            "fix-c.patch"]))
    stack.commit({"b.py": b.replace(b"z = 3", b"z = 4")}, "v2: z", tag="v2")
    doc = stack.json("status", "--against", "v2", expect=1)
    states = {p["name"]: (p["state"], p["evidence"]) for p in doc["patches"]}
    assert "Keeps invariant broken" in " ".join(states["fix-a.patch"][1])
    assert states["fix-c.patch"] == ("applies", []), states
    plan = stack.rebase_json("--to", "v2", "--dry-run", expect=1)
    (fix_c,) = [p for p in plan["patches"] if p["name"] == "fix-c.patch"]
    assert (fix_c["action"], fix_c["detail"]) == ("clean", "applied exactly"), fix_c


@pytest.mark.parametrize("way", ["continue", "skip"])
def test_a_rebase_stopped_by_a_keeps_line_goes_on_from_the_series_before_the_fix(tmp_path, way):
    """fix-a applies to v2 but v2 breaks its Keeps: line; fix-b follows it on the same file.
    The stop's worktree base held fix-a's result already (the walk had gone past it, as status
    does), so `--continue` re-made fix-a as the resolution alone, its own change gone from
    its patch and from every overlay after, and `--skip` re-made fix-b on a base that still
    had the skipped fix (its context fix-a's lines: fuzz, not byte-stable). The real rebase
    stops on the series before the fix: --continue keeps fix-a's change and the resolution,
    --skip makes fix-b on v2 alone, exactly."""
    a = b"def f():\n    return 1\n\ndef g():\n    return 2\n"
    b = b"x = 1\ny = 2\nz = 3\n"
    stack = OneUpstreamStack(tmp_path, {"a.py": a, "b.py": b})
    with_a = a.replace(b"return 1", b"return 11")
    stack.add_fix("fix-a", "a.py", a, with_a, fields="Keeps: b.py: z = 3\n")
    stack.add_fix("fix-b", "a.py", with_a, with_a.replace(b"return 2", b"return 22"))
    (stack.root / "series/up/series").write_text("fix-a.patch\nfix-b.patch\n")
    stack.commit({"b.py": b.replace(b"z = 3", b"z = 4")}, "v2: z", tag="v2")
    stack.cli("rebase", "--to", "v2", expect=3)
    work = stack.root / ".patchforge/work/up"
    if way == "continue":
        stack.cli("add", "b.py")
        (work / "b.py").write_bytes(b)  # the resolution: z = 3 again
        stack.cli("rebase", "--continue")
        fix_a = stack.patch("up", "fix-a")
        assert b"+    return 11\n" in fix_a and b"+z = 3\n" in fix_a, fix_a.decode()
    else:
        stack.cli("rebase", "--skip", expect=1)
        fix_b = stack.patch("up", "fix-b")
        assert b" def f():\n     return 1\n" in fix_b, fix_b.decode()  # made on v2 alone
        doc = stack.json("lint", "--no-forge", expect=1)  # the skipped fix is an error
        assert [f["check"] for f in doc["findings"]] == ["skipped"], doc


@pytest.mark.parametrize("how", ["skipped", "landed then rebased back"])
def test_check_is_not_green_while_a_guarded_fix_is_in_no_overlay(tmp_path, how):
    """fix-b's Keeps: line guards its change. Set aside by `rebase --skip` (the upstream changed
    its line), or kept as landed under upstreamed/ and then in no overlay once the rebase is
    undone by `rebase --to` the old pin: `status`, `lint`, `overlays --check` and `verify` exit 1,
    while `check` said "Keeps invariants: all hold", exit 0 (`--json`: `"ok": true`, no word of
    the fix): a CI job running `check` went green on overlays without the fix it guards."""
    b = b"x = 1\ny = 2\nz = 3\n"
    fixed = b.replace(b"y = 2", b"y = 22")
    stack = OneUpstreamStack(tmp_path, {"b.py": b, "a.py": b"a = 1\n"})
    stack.add_fix("fix-b", "b.py", b, fixed, fields="Keeps: b.py: y = 22\n")
    (stack.root / "series/up/series").write_text("fix-b.patch\n")
    stack.cli("overlays")
    stack.cli("check")
    if how == "skipped":
        stack.commit({"b.py": b.replace(b"y = 2", b"y = 3")}, "v2: y", tag="v2")
        stack.cli("rebase", "--to", "v2", expect=3)
        stack.cli("rebase", "--skip", expect=1)
        assert (stack.root / "series/up/skipped/fix-b.patch").exists()
    else:
        stack.commit({"b.py": fixed}, "v2: the fix lands", tag="v2")
        stack.cli("rebase", "--to", "v2")
        assert (stack.root / "series/up/upstreamed/fix-b.patch").exists()
        stack.cli("rebase", "--to", "v1", expect=1)  # says the fix is in no overlay
        stack.cli("overlays", expect=1)
    assert b"y = 22" not in (stack.root / "overlays/up/b.py").read_bytes() \
        if (stack.root / "overlays/up/b.py").exists() else True
    stack.cli("status", expect=1)
    stack.cli("overlays", "--check", expect=1)
    _, out, err = stack.cli("check", expect=1)
    assert "needs attention" in out, out + err
    document = stack.json("check", expect=1)
    from patchforge.formats.schemas import validation_errors
    assert validation_errors(document, "check") == []
    assert document["ok"] is False and any("fix-b" in note for note in document["notes"]), \
        document


def test_a_stop_on_a_keeps_line_takes_that_line_changed_for_an_upstream_rename(tmp_path):
    """Upstream rightly renames the function a fix's Keeps: line names; the fix merges
    cleanly and the rebase stops on the line. `--continue` was refused, and so was the one
    right change, the Keeps line edited in the patch file ("changed while the rebase was
    stopped"): the way on was --skip (the fix out of the series) or --abort. The stopped
    patch's Keeps lines are now the one change of its file a stop takes; any other change
    is refused as before, and a line that still does not hold is refused on its own."""
    old = (b"def b20():\n    a = 1\n    b = 2\n    c = 3\n    d = 4\n    return 7\n\n\n"
           b"def tail():\n    return None\n")
    stack = OneUpstreamStack(tmp_path, {"pkg/b.py": old})
    stack.add_fix("fix-b", "pkg/b.py", old, old.replace(b"return 7", b"return 77"),
                  fields="Keeps: pkg/b.py: def b20():\n")
    stack.commit({"pkg/b.py": old.replace(b"def b20():", b"def b20_renamed():")}, "v2",
                 tag="v2")
    _, _, err = stack.cli("rebase", "--to", "v2", expect=3)
    assert "change that line in series/up/fix-b.patch" in err, err
    patch = stack.root / "series/up/fix-b.patch"
    stopped = patch.read_bytes()
    # Another change of the file is refused, as before.
    patch.write_bytes(stopped.replace(b"Upstream-Status: Pending", b"Upstream-Status: Sent"))
    _, _, err = stack.cli("rebase", "--continue", expect=2)
    assert "changed while the rebase was stopped" in err, err
    # A Keeps line that still does not hold: refused, naming it.
    patch.write_bytes(stopped.replace(b"Keeps: pkg/b.py: def b20():",
                                      b"Keeps: pkg/b.py: def b21():"))
    _, _, err = stack.cli("rebase", "--continue", expect=2)
    assert "def b21(): is not in the result" in err, err
    patch.write_bytes(stopped.replace(b"Keeps: pkg/b.py: def b20():",
                                      b"Keeps: pkg/b.py: def b20_renamed():"))
    stack.cli("rebase", "--continue")
    data = patch.read_bytes()
    assert b"Keeps: pkg/b.py: def b20_renamed():" in data and b"+    return 77" in data, data
