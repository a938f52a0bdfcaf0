"""What users of git, quilt and gh expect: completion of the project's own names (in a real
bash), `show` with its diff through a pager on a terminal (a pseudo-terminal), and a
"did you mean" for a mistyped patch name."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.cli import run_cli, run_on_pty
from helpers.patches import forwarded_patch
from helpers.project import git_project

NAMES = ["rocm-fix-alpha", "rocm-fix-beta", "moe-mask"]


@pytest.fixture
def stack(tmp_path) -> Path:
    root, _ = git_project(tmp_path, profiles={"gfx942": "MI300X", "gfx950": "MI355X"})
    series = root / "series" / "up"
    series.mkdir(parents=True, exist_ok=True)
    for i, name in enumerate(NAMES):
        (series / f"{name}.patch").write_bytes(forwarded_patch(i + 1, 4 + 5 * i))
    (series / "series").write_text("".join(f"{n}.patch\n" for n in NAMES))
    return root


def bash_complete(cwd: Path, words: list[str], tmp_path: Path) -> list[str]:
    """Source `patchforge completion bash` in a real bash and run its completion function on
    WORDS (the last one being completed), as pressing Tab does."""
    if shutil.which("bash") is None:
        pytest.skip("needs bash")
    bindir = tmp_path / "bin"
    if not bindir.exists():
        bindir.mkdir()
        exe = bindir / "patchforge"
        exe.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m patchforge "$@"\n')
        exe.chmod(0o755)
    quoted = " ".join(f"'{w}'" for w in words)
    script = ('source <(patchforge completion bash) || exit 9\n'
              f'COMP_WORDS=({quoted}); COMP_CWORD={len(words) - 1}\n'
              'complete -p patchforge >/dev/null || exit 8\n'
              '_patchforge_completion patchforge\n'
              'printf "%s\\n" "${COMPREPLY[@]}"\n')
    env = dict(os.environ, PATH=f"{bindir}:{os.environ['PATH']}")
    proc = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=60,
                          cwd=cwd, env=env)
    assert proc.returncode == 0, proc.stderr
    return [line for line in proc.stdout.splitlines() if line]


def test_bash_completes_patch_upstream_and_profile_names(stack, tmp_path):
    assert bash_complete(stack, ["patchforge", "show", "rocm"], tmp_path) == [
        "rocm-fix-alpha", "rocm-fix-beta"]
    assert bash_complete(stack, ["patchforge", "edit", "up/m"], tmp_path) == ["up/moe-mask"]
    assert bash_complete(stack, ["patchforge", "fetch", ""], tmp_path) == ["up"]
    assert bash_complete(stack, ["patchforge", "overlays", "--profile", "gfx9"], tmp_path) == [
        "gfx942", "gfx950"]
    assert bash_complete(stack, ["patchforge", "status", "--against", "u"], tmp_path) == ["up="]
    # --root names the project from anywhere.
    assert bash_complete(tmp_path, ["patchforge", "--root", str(stack), "pr", "moe"],
                         tmp_path) == ["moe-mask"]
    # Outside a project: nothing, and no error in the prompt.
    assert bash_complete(tmp_path, ["patchforge", "show", "r"], tmp_path) == []


def test_mistyped_patch_name_gets_a_suggestion(stack):
    run = run_cli(stack, "show", "rocm-fix-alpah")
    assert run.rc == 2
    assert "no patch named 'rocm-fix-alpah'" in run.err
    assert "hint: did you mean up/rocm-fix-alpha or up/rocm-fix-beta?" in run.err
    assert "hint: did you mean up/moe-mask?" in run_cli(stack, "edit", "moe-mak").err
    far = run_cli(stack, "show", "zzz")
    assert far.rc == 2 and "`patchforge list` shows the series" in far.err


def test_a_mistyped_upstream_gets_a_suggestion(stack):
    """`--against upp=main`: the hint said a ref holding `=` is given after its upstream's
    name (`UPSTREAM=upp=main`), the wrong problem. A name close to a configured upstream gets
    the SPEC as meant; one close to none keeps that hint. `show foo/NAME` said "no patch
    named NAME", never that `foo` is no upstream."""
    run = run_cli(stack, "status", "--against", "upp=main")
    assert run.rc == 2 and "unknown upstream 'upp' in 'upp=main' (known: up)" in run.err
    assert "hint: did you mean up=main?" in run.err, run.err
    far = run_cli(stack, "status", "--against", "zzz=main")
    assert far.rc == 2 and "(UPSTREAM=zzz=main)" in far.err, far.err
    shown = run_cli(stack, "show", "foo/moe-mask")
    assert shown.rc == 2 and "'foo' is no configured upstream (known: up)" in shown.err
    assert "hint: did you mean up/moe-mask?" in shown.err, shown.err


def test_a_global_option_after_the_command_is_said_to_go_before_it(stack):
    """`patchforge status -q`, as git users write it: click's "No such option '-q'" alone,
    exit 2. The hint gives the command line with the option before the command, in the
    --json error document too; an option of no kind gets no such hint."""
    import json

    run = run_cli(stack, "status", "-q")
    assert run.rc == 2 and "No such option '-q'" in run.err, run.err
    assert f"hint: -q is an option of patchforge itself, given before the command: " \
        f"`patchforge -q --root {stack} status`" in run.err, run.err
    as_json = run_cli(stack, "status", "--json", "--offline")
    assert as_json.rc == 2 and "patchforge --offline --root" in \
        json.loads(as_json.out)["error"]["hint"], as_json.text
    other = run_cli(stack, "status", "--bogus")
    assert other.rc == 2 and "hint:" not in other.err, other.err


def test_mistyped_command_gets_a_suggestion(stack):
    """As git answers `git rebse`: the closest command names, at the top level and in a group;
    a name close to none gets none. Exit 2, as for any bad usage."""
    for args, suggestion in ((["rebse"], "Did you mean 'rebase'?"),
                             (["upstream", "ad"], "Did you mean 'add'?"),
                             (["import", "quit"], "Did you mean 'quilt'?")):
        run = run_cli(stack, *args)
        assert run.rc == 2 and f"No such command {args[-1]!r}. {suggestion}" in run.err, run.err
    run = run_cli(stack, "xyzzy")
    assert run.rc == 2 and "No such command 'xyzzy'." in run.err and "Did you mean" not in run.err


def test_show_pages_its_diff_on_a_terminal_only(stack, tmp_path):
    paged = tmp_path / "paged"
    env = dict(os.environ, PAGER=f"cat > {paged}", TERM="xterm")
    env.pop("NO_COLOR", None)
    _, shown = run_on_pty([sys.executable, "-m", "patchforge", "show", "moe-mask"], stack, env)
    text = paged.read_bytes()
    assert text.startswith(b"up/moe-mask.patch  (series/up/moe-mask.patch")
    assert b"diff --git a/a.py b/a.py" in text
    assert b"\x1b[31m-line14\x1b[m" in text and b"\x1b[32m+line14 # fixed\x1b[m" in text
    assert b"diff --git" not in shown  # it went to the pager, not around it
    # Piped: no pager, no colour, the same lines.
    piped = run_cli(stack, "show", "moe-mask")
    assert piped.rc == 0
    assert b"-line14\n+line14 # fixed\n" in piped.stdout and b"\x1b[" not in piped.stdout
    assert run_cli(stack, "show", "moe-mask", "--stat").stdout.count(b"diff --git") == 0


def test_a_pager_that_cannot_be_run_does_not_swallow_the_patch(stack):
    """PAGER naming a command that is not there: the shell said "not found", the patch was not
    shown, and `show` exited 0. It is shown without a pager, with a warning naming it."""
    env = dict(os.environ, PAGER="no-such-pager-here", TERM="xterm")
    env.pop("PATCHFORGE_PAGER", None)
    code, shown = run_on_pty([sys.executable, "-m", "patchforge", "show", "moe-mask"], stack, env)
    assert code == 0
    assert b"diff --git a/a.py b/a.py" in shown
    assert b"the pager 'no-such-pager-here' could not be run (from PAGER)" in shown


def test_import_and_export_typed_the_others_way_are_answered_with_the_line_that_runs(tmp_path):
    """`export --quilt DIR` takes the form as an option, `import quilt DIR` as a command: the
    way back typed the export's way is answered with the command that runs, and that line,
    run as written, does the way back (here: nothing changed in quilt, nothing to take)."""
    from helpers.project import git_project

    root, _ = git_project(tmp_path)
    series = root / "series" / "up"
    series.mkdir(parents=True, exist_ok=True)
    (series / "fix.patch").write_bytes(forwarded_patch(1, 4))
    (series / "series").write_text("fix.patch\n")
    quilt_dir = tmp_path / "q dir"
    assert run_cli(root, "export", "--quilt", str(quilt_dir)).rc == 0
    for typed in (["--quilt", str(quilt_dir), "--update"], [f"--quilt={quilt_dir}", "--update"]):
        run = run_cli(root, "import", *typed)
        assert run.rc == 2, run.text
        said = run.err.split("`patchforge import`: `", 1)[1].rsplit("`", 1)[0]
        assert said == f"patchforge import quilt '{quilt_dir}' --update", run.err
        assert "No such option '--quilt'" in run.err
    import shlex

    followed = run_cli(root, *shlex.split(said)[1:])
    assert followed.rc == 0 and "nothing" in followed.text, followed.text
    # The group's own options and a real unknown option are answered as before.
    assert run_cli(root, "import", "--help").rc == 0
    plain = run_cli(root, "import", "--bogus")
    assert plain.rc == 2 and "No such option '--bogus'." in plain.err
    assert run_cli(root, "--version").rc == 0
    # And the other way round: the export typed as the import spells its form.
    run = run_cli(root, "export", "quilt", str(quilt_dir))
    assert run.rc == 2 and "Got unexpected extra argument 'quilt'" in run.err, run.text
    said = run.err.split("`patchforge export`: `", 1)[1].rsplit("`", 1)[0]
    assert said == f"patchforge export --quilt '{quilt_dir}'", run.err
    followed = run_cli(root, *shlex.split(said)[1:])
    assert followed.rc == 0 and f"to {quilt_dir}" in followed.out, followed.text


def test_a_file_or_directory_given_as_an_empty_word_is_refused(stack, tmp_path):
    """A path option given "" (`--html "$REPORT"` with the variable unset, as a CI step writes
    it) was read as the current directory: `status --html ""` wrote no report and said nothing,
    exit 0, `export --mbox ""` said "Device or resource busy" with the hint to run it again, and
    `init ""` made a project in the current directory, which `init` without a DIRECTORY refuses
    inside another project. Each is refused now, exit 2, naming the option, nothing written."""
    from helpers.snapshot import snapshot

    before = snapshot(stack)
    for args, option in ((["status", "--html", ""], "--html"),
                         (["export", "--mbox", ""], "--mbox"),
                         (["export", "--quilt", ""], "--quilt"),
                         (["pr", "moe-mask", "--out", ""], "--out"),
                         (["verify", "--installed", ""], "--installed"),
                         (["init", ""], "[DIRECTORY]")):
        run = run_cli(stack, *args, cwd=stack)  # "" read as "." stays in the stack
        assert run.rc == 2, (args, run.text)
        assert f"Invalid value for '{option}': an empty" in run.err, (args, run.err)
        assert "(an unset shell variable?)" in run.err, (args, run.err)
        assert snapshot(stack) == before, args
    # A name that is there is taken as before.
    report = tmp_path / "report.html"
    assert run_cli(stack, "status", "--html", str(report)).rc in (0, 1)
    assert report.read_bytes().startswith(b"<!DOCTYPE html>"), report.read_bytes()[:40]
