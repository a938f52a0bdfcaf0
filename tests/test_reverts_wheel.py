"""A fix of a wheel upstream that landed in one version and that a later version took back,
judged where the store is new (a fresh clone of the stack, an empty cache): the import of
the version it landed in is not there until something brings it."""
from __future__ import annotations

import os
import shutil

from helpers.cli import ok, run_cli
from helpers.upstream import build_wheel, dep3_patch
from patchforge.store.diff import make_file_diff

CALC = "tinypkg/calc.py"
BASE = b"".join(b"line %d of calc\n" % i for i in range(1, 21))
FIXED = BASE.replace(b"line 5 of calc\n", b"five = compute_it_properly()\n")


def patch_file(path: str, old: bytes, new: bytes, description: str) -> bytes:
    return dep3_patch(make_file_diff(path, path, old, new), description=description)


def test_a_fresh_cache_without_the_version_a_kept_fix_landed_in_never_says_verify_is_green(
        tmp_path, monkeypatch):
    """tinypkg 1.1 lands the fix (the rebase onto it drops it into upstreamed/), 1.2 takes it
    back. In a new cache (the stack cloned elsewhere) that has the pinned 1.2 but not the
    import of 1.1, `verify` said all ok and `overlays` wrote the Dockerfile with no word of
    the fix: the revision it landed in not in the store read as "never known upstream". Now
    status and verify say they did not check it, online and offline, naming what brings 1.1; overlays
    refuses to write a Dockerfile without it; once 1.1 is read, verify fails the file."""
    wheels = tmp_path / "wheels"
    build_wheel(wheels, "tinypkg", "1.0", {CALC: BASE})
    build_wheel(wheels, "tinypkg", "1.1", {CALC: FIXED})
    build_wheel(wheels, "tinypkg", "1.2", {CALC: BASE + b"line 21 of calc\n"})
    monkeypatch.setenv("PATCHFORGE_WHEELS", str(wheels))
    root = tmp_path / "stack"
    ok(None, "init", "--standalone", str(root))
    ok(root, "upstream", "add", "tiny", "--wheel", "tinypkg", "--at", "1.0",
       "--install-root", "/opt/tiny")
    series = root / "series" / "tiny"
    series.mkdir(parents=True)
    (series / "fix.patch").write_bytes(patch_file(CALC, BASE, FIXED, "Compute it properly"))
    (series / "series").write_text("fix.patch\n")
    ok(root, "overlays")
    ok(root, "rebase", "--to", "1.1")
    assert (series / "upstreamed" / "fix.patch").is_file()
    assert run_cli(root, "rebase", "--to", "1.2").rc == 1  # (said: needs attention)
    result = run_cli(root, "verify")
    # 1.2 is no revision "before" 1.1: the two imports share no history, and it says so.
    assert result.rc == 1 and "is not in this revision" not in result.stdout.decode() and \
        "shares no history" in result.stdout.decode(), result
    # A new cache: the pinned 1.2 is brought by the first command that reads it.
    shutil.rmtree(os.environ["PATCHFORGE_CACHE"])
    result = run_cli(root, "status")
    assert "note: NOT CHECKED: whether tiny 1.2 still holds tiny/upstreamed/fix.patch" in \
        result.err and "`patchforge status --against 1.1` brings it" in result.err, result
    said = "whether tiny 1.2 still holds tiny/upstreamed/fix.patch"
    for args in (("verify",), ("--offline", "verify")):
        result = run_cli(root, *args)
        assert "NOT CHECKED: " + said in result.err, (args, result)
        assert "1.1 (" in result.err and "`patchforge status --against 1.1` brings it" in \
            result.err, (args, result)
    for args in (("overlays",), ("overlays", "--check")):
        result = run_cli(root, *args)
        assert result.rc == 2 and "tiny/upstreamed/fix.patch" in result.err, (args, result)
        assert "`patchforge status --against 1.1` brings it" in result.err, (args, result)
        # (`fetch` brings the pinned version only: the hint does not send one there.)
        assert "hint: run the `patchforge status --against` it names" in result.err, result
    ok(root, "status", "--against", "1.1")
    result = run_cli(root, "verify")
    assert result.rc == 1 and "fix tiny/fix.patch landed upstream is no longer upstream" in \
        result.stdout.decode() and "shares no history" in result.stdout.decode(), result
