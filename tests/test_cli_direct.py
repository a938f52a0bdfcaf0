"""The `rebase` command lines `cli.direct` reads without click: read exactly as click reads
them (or left to click), and written exactly as click writes them."""
from __future__ import annotations

import io

import pytest

from patchforge.cli import cli
from patchforge.cli.cmd_rebase import rebase
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
    ["status", "--against", "1.0"],
    ["--version"],
]


def _click_reads(argv: list[str]) -> dict | None:
    """What click makes of a `rebase` command line: the global options and the rebase
    command's parameters, read by click's own parsing (None when click refuses it)."""
    import click

    at = argv.index("rebase") if "rebase" in argv else len(argv)
    try:
        group = cli.make_context("patchforge", argv[:at] + ["rebase"])
        if at == len(argv):
            return None
        command = rebase.make_context("rebase", argv[at + 1:], parent=group)
    except (click.exceptions.ClickException, click.exceptions.Exit):
        return None
    g, c = group.params, command.params
    return {"root": g["root"], "offline": g["offline"], "no_color": g["no_color"],
            "verbosity": g["verbose"] - g["quiet"], "specs": list(c["specs"]),
            "more_specs": list(c["more_specs"]),
            "flags": {k: c[k] for k in ("dry_run", "cont", "skip", "abort", "as_json")}}


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
    assert {"root": direct.root, "offline": direct.offline, "no_color": direct.no_color,
            "verbosity": 0, "specs": direct.specs, "more_specs": direct.more_specs,
            "flags": direct.flags} == clicked


def test_the_usual_rebase_command_lines_are_read_without_click(tmp_path):
    """The command lines a user and the benchmarks type are the ones read without click."""
    for argv in (["--root", str(tmp_path), "rebase", "--to", "vllm=0.33.0"],
                 ["rebase", "--to", "0.33.0", "--json"], ["rebase", "--skip"],
                 ["rebase", "--continue"], ["--offline", "rebase", "--abort"],
                 ["rebase", "--to", "1.0", "--dry-run"]):
        assert read_direct(argv) is not None, argv


def test_shell_completion_is_left_to_click(monkeypatch):
    monkeypatch.setenv("_PATCHFORGE_COMPLETE", "bash_complete")
    assert read_direct(["rebase", "--to", "1.0"]) is None


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
    """`read_direct` knows the group's and the rebase command's options as click declares
    them. An option added to either (or one click reads from the environment, or a default
    changed) fails here until `cli/direct.py` learns it; until then such a command line must
    go to click."""
    declared = {(p.name, tuple(p.opts), bool(getattr(p, "is_flag", False)), p.envvar,
                 p.multiple, _default(p)) for p in (*cli.params, *rebase.params)}
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
        ("as_json", ("--json",), True, None, False, False),
        ("more_specs", ("more_specs",), False, None, False, None),
    }
    assert cli.context_settings.get("auto_envvar_prefix") is None


def _default(param):
    """A parameter's declared default; None for none (click marks that with a sentinel)."""
    return param.default if isinstance(param.default, (bool, int, str, tuple)) else None
