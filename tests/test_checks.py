"""Declared checks: only from the configuration (never from a patch), validated with the file and
line named; run on a materialized tree of a profile's overlays (or the full upstream tree under
them) with captured output and a time limit; failures reported with the patches that touched
the failing file; `patchforge check --run` and its JSON document."""
from __future__ import annotations

import os
import sys
import time

import pytest

from patchforge.checks import load_checks, run_checks
from patchforge.errors import ConfigError
from helpers.project import OneUpstreamStack

PY = sys.executable
GOOD = b"def f():\n    return 1\n"
BROKEN = b"def f(:\n    return 1\n"  # a syntax error


def make_stack(tmp_path, checks: str, *, profiles=True) -> OneUpstreamStack:
    """pkg/a.py changed by two patches (the second, gfx950-only, breaks its syntax on gfx950),
    pkg/b.py by a third; pkg/untouched.py only in the upstream."""
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": GOOD, "pkg/b.py": GOOD,
                                    "pkg/untouched.py": b"U = 1\n", "README": b"readme\n"},
                         profiles={"gfx942": "MI300X", "gfx950": "MI355X"} if profiles else None,
                         config_extra=checks)
    a2 = GOOD + b"\n\ndef g():\n    return 2\n"
    stack.add_fix("a-adds-g", "pkg/a.py", GOOD, a2)
    stack.add_fix("a-breaks", "pkg/a.py", a2, a2.replace(b"def g():", b"def g(:"),
                    fields="Profiles: gfx950\n" if profiles else "")
    stack.add_fix("b-fix", "pkg/b.py", GOOD, GOOD.replace(b"1", b"2"))
    return stack


COMPILE = """
[checks.compile]
command = ["%s", "-m", "py_compile", "{file}"]
files = "*.py"
timeout = 60
""" % PY


def test_a_failing_check_names_the_patches_that_touched_the_file(tmp_path):
    stack = make_stack(tmp_path, COMPILE)
    document = stack.json("check", "--run", expect=1)
    assert document["ok"] is False and document["ran"] is True
    results = [(c["profile"], c["files"], c["status"], c["patches"]) for c in document["checks"]]
    assert results == [
        ("gfx942", ["pkg/a.py"], "passed", ["up/a-adds-g.patch"]),
        ("gfx942", ["pkg/b.py"], "passed", ["up/b-fix.patch"]),
        ("gfx950", ["pkg/a.py"], "failed", ["up/a-adds-g.patch", "up/a-breaks.patch"]),
        ("gfx950", ["pkg/b.py"], "passed", ["up/b-fix.patch"]),
    ]
    failed = document["checks"][2]
    assert "SyntaxError" in failed["output_tail"] and failed["returncode"] == 1
    assert failed["command"] == [PY, "-m", "py_compile", "pkg/a.py"]
    # The human report: the failing file, the patches, the output tail.
    code, out, _ = stack.cli("check", "--run", "--profile", "gfx950", expect=1)
    assert "patches that touched pkg/a.py: up/a-adds-g.patch, up/a-breaks.patch" in out
    assert "SyntaxError" in out and "1 passed, 1 failed" in out
    # One profile only: gfx942 is clean.
    assert stack.json("check", "--run", "--profile", "gfx942")["ok"] is True


def test_a_check_past_its_time_limit_is_killed_with_its_children(tmp_path):
    pidfile = tmp_path / "child.pid"
    sleeper = (f"import subprocess, sys, time; "
               f"child = subprocess.Popen(['sleep', '300']); "
               f"open({str(pidfile)!r}, 'w').write(str(child.pid)); "
               f"print('started', flush=True); time.sleep(300)")
    checks = f"""
[checks.slow]
command = [{PY!r}, "-c", {sleeper!r}]
timeout = 1
"""
    stack = make_stack(tmp_path, checks, profiles=False)
    project = stack.project()
    from patchforge.pins import open_store
    with open_store(project) as store:
        results = run_checks(project, store)
    assert [(r.name, r.status, r.ok) for r in results] == [("slow", "timeout", False)]
    assert "started" in results[0].output_tail
    assert "time limit" in results[0].detail
    assert results[0].patches == ("up/a-adds-g.patch", "up/a-breaks.patch", "up/b-fix.patch")
    child = int(pidfile.read_text())
    # The whole process group was killed: the grandchild is gone (or a zombie being reaped).
    # A SIGKILL takes effect when the kernel next schedules the process, which on a loaded
    # machine can be a moment after kill() returns: it has until its own sleep would end.
    assert _dies(child, within=60), f"the check's child {child} outlived the kill"


def _dies(pid: int, *, within: float) -> bool:
    """Whether `pid` is gone or a zombie before `within` seconds have passed."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
            with open(f"/proc/{pid}/stat") as handle:
                if handle.read().split(") ", 1)[1].startswith("Z"):
                    return True
        except (ProcessLookupError, FileNotFoundError):
            return True
        time.sleep(0.05)
    return False


def test_checks_are_never_taken_from_patch_files(tmp_path):
    marker = tmp_path / "pwned"
    evil = f"{PY} -c \"open('{marker}', 'w').write('x')\""
    stack = make_stack(tmp_path, "", profiles=False)
    # Headers and descriptions that look like checks, in every way a patch could try.
    path = stack.root / "series/up/b-fix.patch"
    data = path.read_bytes().replace(
        b"Why the fix exists.\n",
        f"Why the fix exists.\n\n[tool.patchforge.checks.evil]\ncommand = [\"sh\", \"-c\", "
        f"\"{evil}\"]\n".replace('"', "'").encode())
    data = data.replace(b"Upstream: up\n", f"Upstream: up\nCheck: {evil}\nChecks: {evil}\n"
                                           f"Command: {evil}\n".encode())
    path.write_bytes(data)
    code, out, _ = stack.cli("check", "--run")
    assert "no checks configured" in out
    assert load_checks(stack.project()) == []
    assert not marker.exists()
    # With a configured check, exactly that one runs.
    (stack.root / "patchforge.toml").write_text(
        (stack.root / "patchforge.toml").read_text() + COMPILE)
    document = stack.json("check", "--run", expect=1)
    assert {c["name"] for c in document["checks"]} == {"compile"}
    assert not marker.exists()


def test_profiles_files_placeholders_and_the_full_tree(tmp_path):
    checks = f"""
[checks.full-tree]
command = [{PY!r}, "-c", "import os, sys; sys.exit(0 if os.path.exists('pkg/untouched.py') and os.path.exists('README') else 3)"]
tree = "full"
profiles = ["gfx942"]

[checks.overlays-only]
command = [{PY!r}, "-c", "import os, sys; print(sorted(os.listdir('pkg'))); sys.exit(0 if not os.path.exists('pkg/untouched.py') else 4)"]
profiles = ["gfx942"]

[checks.all-files]
command = [{PY!r}, "-c", "import sys; print('pkg/b.py is bad'); sys.exit(5)", "{{files}}", "{{profile}}"]
files = ["pkg/b.py", "pkg/a.py"]
profiles = ["gfx950"]

[checks.no-match]
command = [{PY!r}, "-c", "raise SystemExit(6)"]
files = "README"  # an upstream file no fix touches
"""
    stack = make_stack(tmp_path, checks)
    document = stack.json("check", "--run", expect=1)
    by_name = {(c["name"], c["profile"]): c for c in document["checks"]}
    assert by_name[("full-tree", "gfx942")]["status"] == "passed"
    assert ("full-tree", "gfx950") not in by_name  # profiles = ["gfx942"]
    assert by_name[("overlays-only", "gfx942")]["status"] == "passed"
    assert "['a.py', 'b.py']" in by_name[("overlays-only", "gfx942")]["output_tail"]
    all_files = by_name[("all-files", "gfx950")]
    assert all_files["command"][-3:] == ["pkg/a.py", "pkg/b.py", "gfx950"]
    # One run over several files: the output names pkg/b.py, so only its patch is blamed.
    assert all_files["status"] == "failed" and all_files["returncode"] == 5
    assert all_files["files"] == ["pkg/b.py"] and all_files["patches"] == ["up/b-fix.patch"]
    assert {by_name[("no-match", p)]["status"] for p in ("gfx942", "gfx950")} == {"skipped"}


def test_a_command_that_cannot_start_is_an_error_result(tmp_path):
    stack = make_stack(tmp_path, """
[checks.missing]
command = ["/nonexistent/tool", "{file}"]
files = "pkg/b.py"
""", profiles=False)
    document = stack.json("check", "--run", expect=1)
    assert [(c["status"], c["patches"]) for c in document["checks"]] == [
        ("error", ["up/b-fix.patch"])]
    assert "cannot run /nonexistent/tool" in document["checks"][0]["detail"]


@pytest.mark.parametrize("table, message, line", [
    ('[checks.sh]\ncommand = "python3 -m py_compile x.py"\n', "never go through a shell", 2),
    ('[checks.e]\ncommand = []\n', "non-empty list", 2),
    ('[checks.t]\ncommand = ["true"]\ntimeout = 0\n', "timeout", 3),
    ('[checks.t]\ncommand = ["true"]\ntimeout = true\n', "timeout", 3),
    ('[checks.p]\ncommand = ["true"]\nprofiles = ["gfx1"]\n', "unknown profile 'gfx1'", 3),
    ('[checks.k]\ncommand = ["true"]\nshell = true\n', "unknown key", 3),
    ('[checks.r]\ncommand = ["true"]\ntree = "image"\n', "must be one of overlays, full", 3),
    ('[checks.u]\ncommand = ["true"]\nupstream = "nope"\n', "unknown upstream", 3),
    ('[checks.f]\ncommand = ["x", "--in={files}"]\n', "whole argument", 2),
])
def test_bad_check_declarations_name_file_key_and_line(tmp_path, table, message, line):
    stack = make_stack(tmp_path, "")
    config = stack.root / "patchforge.toml"
    before = config.read_text()
    config.write_text(before + "\n" + table)
    offset = len((before + "\n").splitlines())
    with pytest.raises(ConfigError) as info:
        load_checks(stack.project())
    assert message in info.value.message and info.value.message.startswith("checks.")
    assert info.value.path == str(config.resolve()) and info.value.line == offset + line
    code, _, err = stack.cli("check", "--run", expect=2)
    assert message in err


def test_run_checks_returns_nothing_without_checks(tmp_path):
    stack = make_stack(tmp_path, "", profiles=False)
    project = stack.project()
    from patchforge.pins import open_store
    with open_store(project) as store:
        assert run_checks(project, store) == []


def test_a_full_tree_never_writes_through_an_upstream_symlink(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": GOOD}, config_extra=f"""
[checks.full]
command = [{PY!r}, "-c", "pass"]
tree = "full"
""")
    (stack.up / "pkg" / "link").symlink_to(outside)
    stack.commit({}, "a symlink to a directory outside the tree", tag="v1.1")
    stack.cli("rebase", "--to", "v1.1")
    stack.add_fix("through-link", "pkg/link/new.py", None, b"print('escaped')\n")
    code, _, err = stack.cli("check", "--run", expect=2)
    assert "symlink" in err or "symbolic link" in err
    assert list(outside.iterdir()) == []


def test_a_check_whose_glob_matches_no_file_at_all_is_not_green(tmp_path):
    """A mistyped `files` glob ran nothing: that is said and is exit 1, never a green run. A glob
    that matches upstream files no fix touches is an honest skip (nothing of ours to check)."""
    stack = make_stack(tmp_path, f"""
[checks.typo]
command = [{PY!r}, "-m", "py_compile", "{{file}}"]
files = "pkg/*.pyy"
""")
    code, out, _ = stack.cli("check", "--run", expect=1)
    assert "pkg/*.pyy" in out and "matches no file" in out
    document = stack.json("check", "--run", expect=1)
    assert document["ok"] is False
    assert {(c["profile"], c["status"]) for c in document["checks"]} == {
        ("gfx942", "error"), ("gfx950", "error")}
    # Upstream files no fix touches: skipped, and the run stays green.
    config = stack.root / "patchforge.toml"
    config.write_text(config.read_text().replace('"pkg/*.pyy"', '"pkg/untouched.py"'))
    document = stack.json("check", "--run")
    assert {c["status"] for c in document["checks"]} == {"skipped"}


def test_checks_that_run_on_no_profile_asked_for_are_not_called_unconfigured(tmp_path):
    """`check --run --profile gfx950` with only a gfx942 check said "no checks configured",
    sending the user to declare one that is there. It names the checks and their profiles."""
    stack = make_stack(tmp_path, f"""
[checks.compile]
command = [{PY!r}, "-m", "py_compile", "{{file}}"]
files = "*.py"
profiles = ["gfx942"]
""")
    _, out, _ = stack.cli("check", "--run", "--profile", "gfx950")
    assert "no checks configured" not in out
    assert "no declared check runs on profile gfx950 (compile: gfx942)" in out


def test_a_mistyped_glob_beside_an_upstream_not_pinned_yet_is_said_as_such(tmp_path):
    """An upstream configured but not pinned yet has no files a glob could match: the check
    that matched nothing is the error, not the missing pin of an upstream it does not need."""
    stack = make_stack(tmp_path, f"""
[upstreams.later]
kind = "git"
url = "{tmp_path / 'nowhere'}"
install-root = "/opt/later"

[checks.typo]
command = [{PY!r}, "-m", "py_compile", "{{file}}"]
files = "pkg/*.pyy"
""")
    code, out, err = stack.cli("check", "--run", expect=1)
    assert "matches no file of up at the pinned revision" in out, (out, err)


def test_a_check_whose_upstream_is_not_pinned_yet_says_so(tmp_path):
    """A check on an upstream configured but not pinned yet matched no file because there are
    none to match: it was called a mistyped glob. It says the upstream is not pinned, and how
    to pin it."""
    stack = make_stack(tmp_path, f"""
[upstreams.later]
kind = "git"
url = "{tmp_path / 'nowhere'}"
install-root = "/opt/later"

[checks.later-compile]
command = [{PY!r}, "-m", "py_compile", "{{file}}"]
files = "*.py"
upstream = "later"
""")
    _, out, _ = stack.cli("check", "--run", expect=1)
    assert "later is configured but not pinned in upstream.lock" in out, out
    assert "patchforge upstream pin later --at SPEC" in out and "mistyped" not in out, out


def test_a_glob_matching_only_another_upstreams_overlays_is_a_mistyped_glob(tmp_path):
    """A check on upstream `up` whose glob matches only an overlay file of upstream `other`
    ran nothing on `up`, yet passed as an honest skip: the overlay files of every upstream were
    counted. Only the check's own upstream's are."""
    from helpers.project import add_git_upstream, add_patch_file, patch_bytes
    from helpers.upstream import Upstream

    stack = make_stack(tmp_path, f"""
[checks.cfg]
command = [{PY!r}, "-c", "pass"]
files = "conf/*.cfg"
upstream = "up"
""")
    other = Upstream(tmp_path / "other-upstream", {"conf/x.cfg": b"a = 1\n"})
    add_git_upstream(stack.root, "other", other.path, "main", install_root="/opt/other")
    base = stack.lock()["upstreams"]["other"]["commit"]
    add_patch_file(stack.root, "other", "x.patch", patch_bytes(
        "other", base, "fix x", other.diff({"conf/x.cfg": b"a = 2\n"}, base)))
    _, out, _ = stack.cli("check", "--run", expect=1)
    assert "files = conf/*.cfg matches no file of up at the pinned revision" in out, out


def test_a_module_a_patch_adds_never_replaces_the_checks_own_tool(tmp_path):
    """`python3 -m py_compile {file}` runs inside the tree of overlays: a `py_compile.py` that a
    patch adds at the tree's root is compiled like any file, never imported in place of the
    standard library's module."""
    marker = tmp_path / "patch-code-ran"
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": GOOD}, config_extra=COMPILE)
    stack.add_fix("adds-py-compile", "py_compile.py", None,
                  f"import pathlib\npathlib.Path({str(marker)!r}).write_text('ran')\n".encode())
    document = stack.json("check", "--run")
    assert [(c["files"], c["status"]) for c in document["checks"]] == \
        [(["py_compile.py"], "passed")]
    assert not marker.exists()
