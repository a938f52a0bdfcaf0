"""The `rebase` command lines read without click: `patchforge [--root DIR] [--offline]
[--no-color] rebase` with `--to SPEC`, SPECs, `--dry-run`, `--continue`, `--skip`, `--abort`,
`--json`. Importing click (and the standard library modules it loads: inspect, uuid,
datetime, ...) costs about 13 ms of CPU, a tenth of a clean 30-patch rebase; these command
lines run `rebasing.run_rebase` as the click command does, with the same options, output and
exit codes. Any other command line (another word, `--help`, `-v`, `--root` twice, a value
that looks like an option, shell completion) is left to click, which parses it and reports
its mistakes as before."""
from __future__ import annotations

import errno
import os
import stat
import sys
from pathlib import Path

from patchforge.errors import EXIT_BAD_INPUT
from patchforge.model.record import field, record

_GLOBAL_FLAGS = {"--offline": "offline", "--no-color": "no_color"}
_REBASE_FLAGS = {"--dry-run": "dry_run", "--continue": "cont", "--skip": "skip",
                 "--abort": "abort", "--json": "as_json"}


@record
class RebaseLine:
    """A `rebase` command line as click would read it: the global options, then the rebase
    command's (`cmd_rebase.rebase`'s parameters)."""
    root: Path | None = None
    offline: bool = False
    no_color: bool = False
    specs: list[str] = field(default_factory=list)  # --to SPEC, in order
    more_specs: list[str] = field(default_factory=list)  # SPECs after the options
    flags: dict[str, bool] = field(default_factory=lambda: dict.fromkeys(
        _REBASE_FLAGS.values(), False))


def read_direct(argv: list[str]) -> RebaseLine | None:
    """`argv` read when it is one of the command lines above; None for any other (click reads
    it)."""
    if os.environ.get("_PATCHFORGE_COMPLETE"):  # click's shell completion asks
        return None
    line = RebaseLine()
    words = list(argv)
    while words and words[0] != "rebase":
        word = words.pop(0)
        if word in _GLOBAL_FLAGS:
            setattr(line, _GLOBAL_FLAGS[word], True)
            continue
        if word == "--root" and words:
            value = words.pop(0)
        elif word.startswith("--root="):
            value = word[len("--root="):]
        else:
            return None
        if line.root is not None or not _takes_directory(value):
            return None
        line.root = Path(value)
    if not words:
        return None
    words.pop(0)  # "rebase"
    while words:
        word = words.pop(0)
        if word in _REBASE_FLAGS:
            line.flags[_REBASE_FLAGS[word]] = True
        elif word == "--to" and words and not words[0].startswith("-"):
            line.specs.append(words.pop(0))
        elif word.startswith("--to=") and not word[len("--to="):].startswith("-"):
            line.specs.append(word[len("--to="):])
        elif word.startswith("-"):
            return None
        else:
            line.more_specs.append(word)
    return line


def _takes_directory(value: str) -> bool:
    """Whether click's `Path(file_okay=False)` takes `value` for `--root` as it is: a path
    that is not there, or a directory that can be read (click refuses the others and says
    why)."""
    try:
        mode = os.stat(value).st_mode
    except OSError:
        return True
    return stat.S_ISDIR(mode) and os.access(value, os.R_OK)


def run_direct(line: RebaseLine) -> None:
    """Run the command of `line` as click's main runs the click command (`standalone_mode=False`,
    which `cli.main` uses), its errors turned as click turns them: Ctrl-C (or SIGTERM) after
    an empty line on stderr, an end of input the same and then an abort (exit 2, as
    `cli.main` reports click's Abort), a closed output pipe exit 1."""
    from patchforge.cli import configure
    from patchforge.cli.output import echo

    try:
        from patchforge.cli.rebasing import run_rebase

        app = configure(root=line.root, offline=line.offline, verbose=0, quiet=0,
                        no_color=line.no_color)
        run_rebase(app, specs=tuple(line.specs), more_specs=tuple(line.more_specs),
                   **line.flags)
    except KeyboardInterrupt:
        echo(err=True)
        raise
    except EOFError:
        echo(err=True)
        echo("patchforge: aborted", err=True)
        sys.exit(EXIT_BAD_INPUT)
    except OSError as exc:
        if exc.errno == errno.EPIPE:
            sys.exit(1)
        raise
