"""The `rebase` and `status` command lines `cli.direct` reads without click: read exactly as
click reads them (or left to click), written exactly as click writes them, and a status run so
says what the click command says."""
from __future__ import annotations

import io

import click
import pytest

from patchforge.cli.app import cli
from patchforge.cli.cmd_rebase import rebase
from patchforge.cli.cmd_status import status
from patchforge.cli.direct import read_direct
from patchforge.cli.output import write_line

SHAPES = [
    ["--root", "{dir}", "rebase", "--to", "up=1.1"],
    ["--root={dir}", "--offline", "--no-color", "rebase", "--to=up=1.1", "--json"],
    ["rebase", "--to", "a=1", "--to", "b=2", "more", "--dry-run"],
    ["rebase", "x", "--to", "y", "z"],
    ["rebase", "lone"],
    ["rebase"],
    ["rebase", "--continue"],
    ["rebase", "--skip", "--json", "--skip"],
    ["--offline", "--offline", "rebase", "--abort"],
    ["rebase", ""],
    ["--root", "", "rebase", "--skip"],
    ["--root", "{dir}/not-there", "rebase", "--to", "1.0"],
    ["--root", "{file}", "rebase", "--skip"],
    ["--root", "{dir}", "--root", "{dir}", "rebase", "--skip"],
    ["rebase", "--to"],
    ["rebase", "--to", "--json"],
    ["rebase", "--to=-x"],
    ["rebase", "-"],
    ["rebase", "--tox", "1"],
    ["rebase", "--", "x"],
    ["rebase", "--help"],
    ["-v", "rebase", "--skip"],
    ["--root", "{dir}", "rebase", "--root", "{dir}", "--skip"],
    ["--offline"],
    ["--version"],
    ["status", "--against", "1.0"],
    ["--root", "{dir}", "status", "--against", "up=1.0", "--json"],
    ["--root={dir}", "--no-color", "status", "--against=a=1", "--against", "b=2", "--strict"],
    ["status"],
    ["status", "--json", "--json", "more", "--against", "x", "last"],
    ["status", "lone"],
    ["status", "--against"],
    ["status", "--against", "--json"],
    ["status", "--against=-x"],
    ["status", "--to", "1.0"],
    ["status", "--html", "{dir}/report.html"],
    ["status", "--format", "github"],
    ["status", "--format=text"],
    ["status", "--help"],
    ["-q", "status"],
    ["status", "--", "x"],
    ["rebase", "--against", "1.0"],
    ["rebase", "--continue", "--allow-undo"],
    ["status", "rebase", "--skip"],
    ["rebase", "status"],
]

# The parameters of each command read here, as its click command names them.
_COMMANDS = {"rebase": (rebase, ("dry_run", "cont", "skip", "abort", "allow_undo", "as_json")),
             "status": (status, ("strict", "as_json"))}


def _click_reads(argv: list[str]) -> dict | None:
    """What click makes of a `rebase` or `status` command line: the global options and the
    command's parameters, read by click's own parsing (None when click refuses it, or reads
    an option `direct` leaves to click with a value other than its default)."""
    import click

    at = min([argv.index(name) for name in _COMMANDS if name in argv], default=len(argv))
    if at == len(argv):
        return None
    name = argv[at]
    command, flags = _COMMANDS[name]
    try:
        group = cli.make_context("patchforge", argv[:at] + [name])
        context = command.make_context(name, argv[at + 1:], parent=group)
    except (click.exceptions.ClickException, click.exceptions.Exit):
        return None
    g, c = group.params, context.params
    if name == "status" and (c["html_out"] is not None or c["output_format"] != "text"):
        return None
    return {"command": name, "root": g["root"], "offline": g["offline"],
            "no_color": g["no_color"], "verbosity": g["verbose"] - g["quiet"],
            "specs": list(c["specs"]), "more_specs": list(c["more_specs"]),
            "flags": {k: c[k] for k in flags}}


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: " ".join(s) or "-")
def test_a_command_line_read_without_click_is_what_click_reads(tmp_path, shape):
    """Every command line `read_direct` takes, click takes and reads the same (options,
    SPECs in order, flags); those it leaves to click include every one click refuses."""
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    argv = [word.format(dir=tmp_path, file=a_file) for word in shape]
    direct = read_direct(argv)
    clicked = _click_reads(argv)
    if direct is None:
        return
    assert clicked is not None, f"{argv}: click refuses what was read without it"
    assert {"command": direct.command, "root": direct.root, "offline": direct.offline,
            "no_color": direct.no_color, "verbosity": 0, "specs": direct.specs,
            "more_specs": direct.more_specs, "flags": direct.flags} == clicked


def test_the_usual_rebase_and_status_command_lines_are_read_without_click(tmp_path):
    """The command lines a user and the benchmarks type are the ones read without click."""
    for argv in (["--root", str(tmp_path), "rebase", "--to", "vllm=0.33.0"],
                 ["rebase", "--to", "0.33.0", "--json"], ["rebase", "--skip"],
                 ["rebase", "--continue"], ["rebase", "--continue", "--allow-undo"],
                 ["--offline", "rebase", "--abort"],
                 ["rebase", "--to", "1.0", "--dry-run"], ["status"], ["status", "--json"],
                 ["--root", str(tmp_path), "status", "--against", "main", "--json"],
                 ["status", "--against", "vllm=0.33.0", "--strict"]):
        assert read_direct(argv) is not None, argv


def test_shell_completion_is_left_to_click(monkeypatch):
    monkeypatch.setenv("_PATCHFORGE_COMPLETE", "bash_complete")
    assert read_direct(["rebase", "--to", "1.0"]) is None
    assert read_direct(["status", "--against", "1.0"]) is None


class _Terminal(io.TextIOWrapper):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize("terminal", [False, True], ids=["pipe", "terminal"])
def test_a_line_written_without_click_is_what_click_echo_writes(terminal):
    """output.write_line against click.echo, on texts with styles, escapes that are not
    styles, control characters, non-ASCII and undecodable bytes, to a pipe and a terminal."""
    import click

    texts = ["", "plain", "\x1b[31mred\x1b[0m and \x1b[1;32mbold green\x1b[m",
             "\x1b[?25l cursor \x1b]0;title\x07 \x1b[2J\x1b[K", "tab\there\rcr\x00nul\x7f",
             "é ü ✓ \U0001f600", "undecodable \udcff\udc80", "multi\nline\n", "\x1b[", "\x1b[12"]
    kind = _Terminal if terminal else io.TextIOWrapper
    for text in texts:
        ours = kind(io.BytesIO(), encoding="utf-8", errors="surrogateescape",
                    write_through=True)
        theirs = kind(io.BytesIO(), encoding="utf-8", errors="surrogateescape",
                      write_through=True)
        write_line(ours, text)
        click.echo(text, file=theirs)
        assert ours.buffer.getvalue() == theirs.buffer.getvalue(), repr(text)


def test_the_options_read_without_click_are_the_click_commands_options():
    """`read_direct` knows the group's and the rebase and status commands' options as click
    declares them (status's `--html` and `--format` it leaves to click). An option added to
    any of them (or one click reads from the environment, or a default changed) fails here
    until `cli/direct.py` learns it; until then such a command line must go to click."""
    declared = {(p.name, tuple(p.opts), bool(getattr(p, "is_flag", False)), p.envvar,
                 p.multiple, _default(p)) for p in (*cli.params, *rebase.params)}
    assert {(p.name, tuple(p.opts), bool(getattr(p, "is_flag", False)), p.envvar,
             p.multiple, _default(p)) for p in status.params} == {
        ("specs", ("--against",), False, None, True, None),
        ("strict", ("--strict",), True, None, False, False),
        ("as_json", ("--json",), True, None, False, False),
        ("html_out", ("--html",), False, None, False, None),
        ("more_specs", ("more_specs",), False, None, False, None),
        ("output_format", ("--format",), False, None, False, "text"),
    }
    assert declared == {
        ("root", ("--root",), False, None, False, None),
        ("offline", ("--offline",), True, None, False, False),
        ("verbose", ("-v", "--verbose"), False, None, False, 0),
        ("quiet", ("-q", "--quiet"), False, None, False, 0),
        ("no_color", ("--no-color",), True, None, False, False),
        ("version", ("--version",), True, None, False, False),
        ("specs", ("--to",), False, None, True, None),
        ("dry_run", ("--dry-run",), True, None, False, False),
        ("cont", ("--continue",), True, None, False, False),
        ("skip", ("--skip",), True, None, False, False),
        ("abort", ("--abort",), True, None, False, False),
        ("allow_undo", ("--allow-undo",), True, None, False, False),
        ("as_json", ("--json",), True, None, False, False),
        ("more_specs", ("more_specs",), False, None, False, None),
    }
    assert cli.context_settings.get("auto_envvar_prefix") is None


def _default(param):
    """What click hands the command for a parameter left out; None for none. Asked of click
    rather than read off `param.default`: from click 8.5 on a flag declared without a default
    says so with a sentinel there and is handed False."""
    value = param.get_default(click.Context(click.Command("probe")), call=True)
    return value if isinstance(value, (bool, int, str, tuple)) else None


def test_a_status_read_without_click_says_what_the_click_command_says(tmp_path):
    """`status` from a command line `direct` reads writes the bytes, the stderr and the exit
    code of the click command (made to read it by `--format text`, its default), as text and
    as JSON, at the pin and against a later commit where one patch conflicts, one landed and
    one still applies; and such a process does not import click."""
    import os
    import subprocess
    import sys

    from helpers.cli import run_cli, run_subprocess
    from helpers.env import REPO_ROOT
    from helpers.project import Stack
    from helpers.upstream import BASE, Upstream, with_lines

    upstream = Upstream(tmp_path / "up", {"pkg/mod.py": BASE, "pkg/other.py": b"x = 1\n"})
    stack = Stack(tmp_path / "project")
    stack.add_upstream("up", upstream)
    stack.add_patch("up", "applies", {"pkg/mod.py": with_lines({3: b"def f3():\n    3\n\n"})})
    stack.add_patch("up", "landed", {"pkg/other.py": b"x = 2\n"})
    stack.add_patch("up", "conflicts", {"pkg/mod.py": with_lines({20: b"def f20():\n    -20\n\n"})})
    (stack.root / "series" / "up" / "series").write_text(
        "applies.patch\nlanded.patch\nconflicts.patch\n")
    later = upstream.commit({"pkg/other.py": b"x = 2\n",
                             "pkg/mod.py": with_lines({20: b"def f20():\n    20.5\n\n"})},
                            "land one, change another")
    for args in ([], ["--json"], ["--against", later], ["--against", later, "--json"],
                 ["--against", later, "--strict"]):
        assert read_direct(["status", *args]) is not None
        # The direct reading in a process of its own (this one has click loaded, and
        # output.echo would go through click.echo), click's in this one.
        direct = run_subprocess(stack.root, "status", *args,
                                env={"PYTHONPATH": str(REPO_ROOT)})
        clicked = run_cli(stack.root, "status", *args, "--format", "text")
        assert (direct.returncode, direct.stdout, direct.stderr.decode()) == (
            clicked.rc, clicked.stdout, clicked.err), args
        assert direct.returncode == (1 if "--against" in args else 0), direct.stderr
    assert b"conflict" in direct.stdout and b"upstreamed" in direct.stdout
    code = ("import sys\nfrom patchforge.cli import main\n"
            "try:\n    main(sys.argv[1:])\nexcept SystemExit as e:\n    rc = e.code\n"
            "print('LOADED', [m for m in ('click', 'patchforge.cli.cmd_status') "
            "if m in sys.modules], rc)\n")
    run = subprocess.run([sys.executable, "-c", code, "--root", str(stack.root), "status",
                          "--against", later, "--json"], capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=str(REPO_ROOT)))
    assert "LOADED [] 1" in run.stdout, run.stdout + run.stderr


@pytest.mark.parametrize("by_click", [False, True], ids=["direct", "click"])
def test_specs_without_their_option_are_refused_naming_it(tmp_path, by_click):
    """A SPEC given without `--to` (`--against`) is refused, before the project is read, in
    the words of the option it follows (read without click, and by click under -q)."""
    from helpers.cli import run_cli

    quiet = ("-q",) if by_click else ()
    for command, option in (("rebase", "--to"), ("status", "--against")):
        run = run_cli(tmp_path, *quiet, command, "vllm=0.33.0", "aiter=main")
        assert run.rc == 2, run.text
        assert f"unexpected argument 'vllm=0.33.0': SPECs follow {option}" in run.err, run.err
        # (The path taken is the one the test names.)
        assert (read_direct(["--root", str(tmp_path), *quiet, command, "vllm=0.33.0"]) is
                None) == by_click
