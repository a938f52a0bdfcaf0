"""The `rebase` and `status` command lines read without click: `patchforge [--root DIR]
[--offline] [--no-color]` then `rebase` with `--to SPEC`, SPECs, `--dry-run`, `--continue`,
`--skip`, `--abort`, `--allow-undo`, `--json`, or `status` with `--against SPEC`, SPECs,
`--strict`, `--json`.
Importing click (and the standard library modules it loads: inspect, uuid, datetime, ...)
costs about 13 ms of CPU, a tenth of a clean 30-patch rebase, 2% of a status on the AITER
series; these command lines run `rebasing.run_rebase` and `statusing.run_status` as the click
commands do, with the same options, output and exit codes. Any other command line (another
word, `--help`, `-v`, `--root` twice, a value that looks like an option, `status --html` or
`--format`, shell completion) is left to click, which parses it and reports its mistakes as
before."""
from __future__ import annotations

import errno
import os
import stat
import sys
from pathlib import Path

from patchforge.errors import EXIT_BAD_INPUT
from patchforge.model.record import field, record

_GLOBAL_FLAGS = {"--offline": "offline", "--no-color": "no_color"}
# Per command read here: its flags (option -> the click command's parameter) and its option
# taking a SPEC (given any number of times).
_COMMANDS = {
    "rebase": ({"--dry-run": "dry_run", "--continue": "cont", "--skip": "skip",
                "--abort": "abort", "--allow-undo": "allow_undo", "--json": "as_json"}, "--to"),
    "status": ({"--strict": "strict", "--json": "as_json"}, "--against"),
}


@record
class DirectLine:
    """A `rebase` or `status` command line as click would read it: the global options, then
    the command's (`cmd_rebase.rebase`'s or `cmd_status.status`'s parameters)."""
    command: str
    root: Path | None = None
    offline: bool = False
    no_color: bool = False
    specs: list[str] = field(default_factory=list)  # --to / --against SPEC, in order
    more_specs: list[str] = field(default_factory=list)  # SPECs after the options
    flags: dict[str, bool] = field(default_factory=dict)


def read_direct(argv: list[str]) -> DirectLine | None:
    """`argv` read when it is one of the command lines above; None for any other (click reads
    it)."""
    if os.environ.get("_PATCHFORGE_COMPLETE"):  # click's shell completion asks
        return None
    line = DirectLine("")
    words = list(argv)
    while words and words[0] not in _COMMANDS:
        word = words.pop(0)
        if word in _GLOBAL_FLAGS:
            setattr(line, _GLOBAL_FLAGS[word], True)
            continue
        value = _option_value("--root", word, words)
        if value is None or line.root is not None or not _takes_directory(value):
            return None
        line.root = Path(value)
    if not words:
        return None
    line.command = words.pop(0)
    flags, spec_option = _COMMANDS[line.command]
    line.flags = dict.fromkeys(flags.values(), False)
    while words:
        word = words.pop(0)
        if word in flags:
            line.flags[flags[word]] = True
            continue
        value = _option_value(spec_option, word, words)
        if value is not None and not value.startswith("-"):
            line.specs.append(value)
        elif word.startswith("-"):
            return None  # another option, or a SPEC that looks like one: click's to read
        else:
            line.more_specs.append(word)
    return line


def _option_value(option: str, word: str, words: list[str]) -> str | None:
    """The value `word` gives `option`: `--to SPEC` (the next word, taken from `words`) or
    `--to=SPEC`; None when `word` is not that option, or the line ends after it."""
    if word == option:
        return words.pop(0) if words else None
    if word.startswith(option + "="):
        return word[len(option) + 1:]
    return None


def _takes_directory(value: str) -> bool:
    """Whether click's `Path(file_okay=False)` takes `value` for `--root` as it is: a path
    that is not there, or a directory that can be read (click refuses the others and says
    why)."""
    try:
        mode = os.stat(value).st_mode
    except OSError:
        return True
    return stat.S_ISDIR(mode) and os.access(value, os.R_OK)


def run_direct(line: DirectLine) -> None:
    """Run the command of `line` as click's main runs the click command (`standalone_mode=False`,
    which `cli.main` uses), its errors turned as click turns them: Ctrl-C (or SIGTERM) after
    an empty line on stderr, an end of input the same and then an abort (exit 2, as
    `cli.main` reports click's Abort), a closed output pipe exit 1."""
    from patchforge.cli import configure
    from patchforge.cli.output import echo

    try:
        app = configure(root=line.root, offline=line.offline, verbose=0, quiet=0,
                        no_color=line.no_color)
        if line.command == "status":
            from patchforge.cli.statusing import run_status

            run_status(app, specs=tuple(line.specs), more_specs=tuple(line.more_specs),
                       strict=line.flags["strict"], as_json=line.flags["as_json"])
        else:
            from patchforge.cli.rebasing import run_rebase

            run_rebase(app, specs=tuple(line.specs), more_specs=tuple(line.more_specs),
                       **line.flags)
    except EOFError:
        echo(err=True)
        echo("patchforge: aborted", err=True)
        sys.exit(EXIT_BAD_INPUT)
    except OSError as exc:
        if exc.errno == errno.EPIPE:
            sys.exit(1)
        raise
