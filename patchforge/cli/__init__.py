"""The command line: click commands, loaded lazily so that `--help` starts fast.

This package is the one place that prints, and `main` is the one place that maps errors to exit
codes: PatchforgeError subclasses carry their own code (1, 2, 3; 75 for one that comes of a service
giving no answer, errors.exit_code_of); anything else is a bug (70), with
a short report and the traceback only under -v. The click group is `app.cli`; the `rebase`
command lines that `direct` reads run without loading click at all.
"""
from __future__ import annotations

import os
import shlex
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from patchforge import COLLECT_AFTER
from patchforge.errors import (EXIT_BAD_INPUT, EXIT_INTERNAL, EXIT_INTERRUPTED, EXIT_TERMINATED,
                               PatchforgeError, UsageError, exit_code_of)

if TYPE_CHECKING:
    from patchforge.project import Project

# command name -> (module, attribute). Modules are imported only when their command runs (or when
# its own --help is asked for), so `patchforge --help` loads no command's dependencies.
LAZY_COMMANDS: dict[str, tuple[str, str, str]] = {
    "init": ("patchforge.cli.cmd_setup", "init", "Write a starting configuration and an empty series."),
    "upstream": ("patchforge.cli.cmd_setup", "upstream", "Add and inspect upstreams."),
    "fetch": ("patchforge.cli.cmd_setup", "fetch", "Bring the locked revisions into the store."),
    "list": ("patchforge.cli.cmd_series", "list_", "The series, in order."),
    "show": ("patchforge.cli.cmd_series", "show", "A patch with its header and stats."),
    "new": ("patchforge.cli.cmd_series", "new", "Start a new, empty patch."),
    "edit": ("patchforge.cli.cmd_series", "edit", "Open a worktree with the series applied through NAME."),
    "add": ("patchforge.cli.cmd_series", "add", "Bring upstream files into the open worktree."),
    "rm": ("patchforge.cli.cmd_series", "rm", "At a modify/delete stop, the file ends deleted (as `git rm` resolves it)."),
    "refresh": ("patchforge.cli.cmd_series", "refresh", "Write the worktree's change back into the patch."),
    "delete": ("patchforge.cli.cmd_series", "delete", "Remove a patch from the series (kept aside)."),
    "rename": ("patchforge.cli.cmd_series", "rename", "Rename a patch."),
    "move": ("patchforge.cli.cmd_series", "move", "Move a patch within its series."),
    "bring-back": ("patchforge.cli.cmd_series", "bring_back", "Put a skipped fix back onto the current base."),
    "import": ("patchforge.cli.cmd_exchange", "import_", "Bring existing fixes in (overlay, git, quilt, mbox)."),
    "export": ("patchforge.cli.cmd_exchange", "export", "Hand the series to quilt or git am."),
    "overlays": ("patchforge.cli.cmd_overlays", "overlays", "Regenerate overlays, SHA256SUMS, manifest and mounts."),
    "verify": ("patchforge.cli.cmd_overlays", "verify", "Check the manifest (and installed pre-images)."),
    "status": ("patchforge.cli.cmd_status", "status", "Per patch: applies, or landed upstream, and where."),
    "rebase": ("patchforge.cli.cmd_rebase", "rebase", "Move the series to a new upstream revision."),
    "pr": ("patchforge.cli.cmd_pr", "pr", "Draft the upstream pull request for one fix."),
    "bump": ("patchforge.cli.cmd_bump", "bump", "Move the stack to the newest nightly, checked, with a report."),
    "lint": ("patchforge.cli.cmd_lint", "lint", "Headers, series consistency, byte-stability, fuzz."),
    "check": ("patchforge.cli.cmd_check", "check", "Keeps: invariants and the configured checks."),
    "ledger": ("patchforge.cli.cmd_check", "ledger", "Regenerate series/PATCHES.md, the series ledger."),
    "completion": ("patchforge.cli.cmd_misc", "completion", "Print a shell completion script."),
    "help": ("patchforge.cli.cmd_misc", "help_", "The help of a command (patchforge help rebase)."),
}


class AppContext:
    """What the global options say; commands get the project from here. (A plain class: a
    dataclass would import `inspect` and `ast` into every start-up, `--help` included.)"""

    __slots__ = ("root", "offline", "verbosity", "color", "_project")

    def __init__(self, root: Path | None = None, offline: bool = False, verbosity: int = 0,
                 color: bool = False) -> None:
        self.root = root
        self.offline = offline
        self.verbosity = verbosity
        self.color = color
        self._project: Project | None = None

    def project(self) -> Project:
        global _PROJECT
        if self._project is None:
            from patchforge.cli.output import TransferDisplay
            from patchforge.project import Project
            from patchforge.store.gitstore import refuse_cache_in_project
            project = Project.discover(self.root, offline=self.offline)
            # Before anything is read or written there (the configuration's validation mark
            # is the cache's first file).
            refuse_cache_in_project(project.root)
            self._project = _PROJECT = project
            self._project.progress = TransferDisplay(self.verbosity)
        return self._project

    def reading(self):
        """Held while a command reads the project's files (a context manager): a rebase writing
        out its result, which replaces several files one after the other, is waited for
        (said once on stderr), so the command reads the project as it was before or after,
        never a mixture (`fsutil.WriteOutLock`)."""
        from patchforge.fsutil import WriteOutLock

        def waiting() -> None:
            from patchforge.cli.output import say_apart
            say_apart("patchforge: waiting for a command changing this project ("
                      + (lock.writer or "a rebase writing out its result, new, delete, ...")
                      + ") to end")

        lock = WriteOutLock(self.project().root, exclusive=False, wait=READ_WAIT,
                            on_wait=waiting)
        return lock


# How long a command reading the project waits for a rebase's write-out (which takes well under
# a second, more on a slow disk) before it refuses, naming it.
READ_WAIT = 120.0

# The project of the command running in this process, for the report of an interruption.
_PROJECT = None


def configure(*, root: Path | None, offline: bool, verbose: int, quiet: int,
              no_color: bool) -> AppContext:
    """What the global options say, for the command about to run (the group's callback, and
    `direct`): colour only on a terminal and never with NO_COLOR, `--offline` for this command,
    logging only when asked for (or loaded already, e.g. by an earlier main() in the same
    process): importing it costs every start-up, `--help` included, several milliseconds."""
    if os.environ.get("SOURCE_DATE_EPOCH"):
        # Refused before the command does anything: a rebase's write-out or a submitted pull
        # request's record would otherwise fail half done.
        from patchforge.ledger import source_date_epoch
        source_date_epoch()
    color = (not no_color and not os.environ.get("NO_COLOR")
             and sys.stdout.isatty() and os.environ.get("TERM") != "dumb")
    if offline:
        from patchforge.store.git import set_offline
        set_offline(True)
    if verbose or quiet or "logging" in sys.modules:
        from patchforge.cli.output import configure_logging
        configure_logging(verbose - quiet)
    if verbose - quiet < 0:
        # -q: errors only. The warnings and notes commands say with click.echo are not log
        # records, so the level above does not reach them: stderr drops them itself.
        from patchforge.cli.output import QuietStderr
        if not isinstance(sys.stderr, QuietStderr):
            sys.stderr = QuietStderr(sys.stderr)
    from patchforge import fsutil
    fsutil.say_unlockable = _say_unlockable
    fsutil.say_waiting_for_readers = _say_waiting_for_readers
    return AppContext(root=root, offline=offline, verbosity=verbose - quiet, color=color)


def _say_unlockable(root: Path, exc: OSError) -> None:
    """Said once per project directory, on stderr, when it cannot be locked (`fsutil`)."""
    from patchforge.cli.output import say_apart

    if root in _SAID_UNLOCKABLE:
        return
    _SAID_UNLOCKABLE.add(root)
    say_apart(f"patchforge: warning: the project directory {root} cannot be locked "
              f"({os.strerror(exc.errno) if exc.errno else exc}): commands reading it are "
              "not kept apart from a rebase writing out its result")


_SAID_UNLOCKABLE: set[Path] = set()


def _say_waiting_for_readers(root: Path) -> None:
    """Said when a command about to change the project waits for the commands reading it."""
    from patchforge.cli.output import say_apart

    say_apart("patchforge: waiting for commands reading this project to end before writing")


def target_specs(option: str, specs: tuple[str, ...],
                 more_specs: tuple[str, ...]) -> tuple[str, ...]:
    """The SPECs of `rebase --to` or `status --against` (`option`): the option's values, then
    the command's arguments (`--to vllm=X aiter=Y`: click gives the option one value, the rest
    arrive as arguments). Arguments without the option are refused."""
    if more_specs and not specs:
        raise UsageError(f"unexpected argument {more_specs[0]!r}: SPECs follow {option}")
    return (*specs, *more_specs)


class Terminated(KeyboardInterrupt):
    """SIGTERM (a CI job cancelled, `timeout`, a service stopped), raised where the command
    is, as Ctrl-C raises KeyboardInterrupt: the same cleanup runs (temporary files removed,
    worktrees and scratch directories ended) and the same report says what was left."""


def _on_sigterm(signum, frame) -> None:
    raise Terminated()


def _interrupted(exc: BaseException | None = None) -> None:
    """Ctrl-C (exit 130) or SIGTERM (exit 143): saying what the command left behind and how
    to go on from it."""
    from patchforge.cli.output import echo

    terminated = isinstance(exc, Terminated)
    try:
        terminal = sys.stderr.isatty()
    except (AttributeError, ValueError):
        terminal = False
    # On a terminal the key press left `^C` (or a progress line) on the current line: the
    # message starts on a line of its own. In a pipe or a CI log the line is empty already.
    echo(f"{chr(10) if terminal else ''}patchforge: "
         f"{'terminated' if terminated else 'interrupted'}", err=True)
    for line in _left_behind(cut_short=True):
        echo(f"hint: {line}", err=True)
    sys.exit(EXIT_TERMINATED if terminated else EXIT_INTERRUPTED)


def _left_behind(*, only_open: bool = False, cut_short: bool = False) -> list[str]:
    """What a command cut short (Ctrl-C, a failed write) left, and how to go on from it;
    `only_open`: only what is open (a rebase, an edit), not that nothing was; `cut_short`:
    stopped by Ctrl-C or SIGTERM, which has no cause to fix (a failed write has)."""
    global _PROJECT
    project, _PROJECT = _PROJECT, None
    if project is None:
        if only_open:
            return []
        again = "run the command again" if cut_short else "fix the cause and run the command again"
        return [f"nothing was left half-written (every write is atomic); {again}"]
    from patchforge.state import interrupted_report

    return interrupted_report(project, only_open=only_open)


def main(argv: list[str] | None = None) -> None:
    global _PROJECT
    _PROJECT = None
    verbose = any(a in ("-v", "--verbose", "-vv") for a in (argv or sys.argv[1:]))
    from patchforge.cli.output import (SafeTerminalStream, escape_what_cannot_be_encoded,
                                       forget_json, neutralize)

    forget_json()
    streams = sys.stdout, sys.stderr
    put_back = [escape_what_cannot_be_encoded(stream) for stream in streams]
    sys.stdout, sys.stderr = SafeTerminalStream(sys.stdout), SafeTerminalStream(sys.stderr)
    try:
        args = sys.argv[1:] if argv is None else argv
        # Help and the version need no directory: they answer in a deleted one too.
        cwd = None if _asks_for_help(args) else _current_directory()
        try:
            _main(argv, verbose, neutralize)
        finally:
            if cwd is not None:
                _say_if_worktree_gone(cwd)
    finally:
        sys.stdout, sys.stderr = streams
        for undo in put_back:
            undo()
        if "patchforge.store.git" in sys.modules:  # `--offline` lasts one command
            from patchforge.store.git import set_offline
            set_offline(False)


def _asks_for_help(args: list[str]) -> bool:
    """True for a command line that only asks for help or the version (`patchforge`,
    `--version`, `COMMAND --help`): it reads no project and no file."""
    options = args[:args.index("--")] if "--" in args else args
    return not args or "--help" in options or "-h" in options or \
        ("--version" in args and all(a.startswith("-") for a in args))


def _project_above(directory: str) -> str | None:
    """The project directory holding `directory` when it lies in one of its worktrees
    (`<project>/.patchforge/work/<upstream>/...`), else None."""
    parts = Path(directory).parts
    for i in range(len(parts) - 1):
        if parts[i] == ".patchforge" and parts[i + 1] == "work":
            return str(Path(*parts[:i])) if i else None
    return None


def _current_directory() -> str:
    """The directory the command runs in. One that no longer exists (the tutorial works in
    .patchforge/work/<upstream>, which refresh and rebase --continue remove) failed later
    with a bare "No such file or directory" and "nothing was left half-written": said here,
    with the project to go to (the shell's $PWD still names the directory)."""
    from patchforge.cli.output import echo

    try:
        return os.getcwd()
    except FileNotFoundError:
        shell = os.environ.get("PWD") or ""
        project = _project_above(shell) if shell else None
        echo("patchforge: error: the current directory"
             + (f" {shell}" if shell else "") + " no longer exists"
             + (" (a worktree patchforge removed when its edit or stop ended)"
                if project else ""), err=True)
        echo("hint: " + (f"`cd {project}` (the project), then run the command again"
                         if project else "cd to the project's directory, then run the "
                         "command again"), err=True)
        sys.exit(EXIT_BAD_INPUT)


def _say_if_worktree_gone(cwd: str) -> None:
    """A command run from inside a worktree that it removed (refresh, rebase --continue):
    the shell is left in a deleted directory, and the next command would fail there."""
    project = _project_above(cwd)
    if project is not None and not os.path.isdir(cwd):
        from patchforge.cli.output import echo

        echo(f"note: the current directory {cwd} was removed with its worktree: `cd "
             f"{project}` before the next command", err=True)


def _asks_for_json(args: list[str]) -> bool:
    """Whether the command line asks for `--json` (an error then ends it with a JSON
    document on stdout too)."""
    return "--json" in (args[:args.index("--")] if "--" in args else args)


def _main(argv: list[str] | None, verbose: bool, neutralize) -> None:
    from patchforge.cli.direct import read_direct, run_direct
    from patchforge.cli.output import echo, emit_json_error

    args = sys.argv[1:] if argv is None else argv
    wants_json = _asks_for_json(args)
    direct = read_direct(args)
    try:
        rc = None
        if direct is not None:  # a `rebase` command line read without click
            run_direct(direct)
        else:
            from patchforge.cli.app import cli

            asked = os.environ.get("_PATCHFORGE_COMPLETE", "")
            if asked.startswith(("fish", "zsh")):
                # fish or zsh asks for completions: answered in patchforge's own form, the
                # one its script reads (cmd_misc.fish_completion, zsh_completion).
                from patchforge.cli.cmd_misc import fish_completion, zsh_completion

                (fish_completion if asked.startswith("fish") else zsh_completion)()
            rc = cli.main(args=argv, prog_name="patchforge", standalone_mode=False)
    except PatchforgeError as exc:
        echo(f"patchforge: error: {neutralize(str(exc))}", err=True)
        if exc.hint:
            echo(f"hint: {neutralize(exc.hint)}", err=True)
        code = exit_code_of(exc)
        if wants_json:
            emit_json_error(exc.message, exit_code=code, hint=exc.hint,
                            path=None if exc.path is None else str(exc.path), line=exc.line)
        # An ordinary outcome (bad input, a conflict stop, a refusal): the message says it
        # all, under -v too; a traceback is for internal errors only (exit 70), which a
        # PatchforgeError can be too (a ledger the code cannot read back, say).
        if verbose and code == EXIT_INTERNAL:
            import traceback
            traceback.print_exc()
        sys.exit(code)
    except _click_exception("Abort") as exc:
        if isinstance(exc.__cause__, KeyboardInterrupt):  # click turns Ctrl-C into Abort
            _interrupted(exc.__cause__)
        echo("patchforge: aborted", err=True)
        sys.exit(EXIT_BAD_INPUT)
    except _click_exception("ClickException") as exc:
        exc.show()
        code = EXIT_BAD_INPUT if exc.exit_code == 2 else exc.exit_code
        hint = _global_option_hint(exc, args)
        if hint:
            echo(f"hint: {hint}", err=True)
        if wants_json:
            emit_json_error(exc.format_message(), exit_code=code, hint=hint)
        sys.exit(code)
    except _click_exception("Exit") as exc:
        sys.exit(exc.exit_code)
    except KeyboardInterrupt as exc:
        _interrupted(exc)
    except BrokenPipeError:
        sys.exit(0)
    except OSError as exc:  # the machine, not patchforge: a full disk, a read-only mount, EIO
        where = f": {exc.filename}" if exc.filename else ""
        cache = _refusing_cache(exc)
        if cache is not None:
            # The cache, not the project: said with what to do about it (alone, the OS's
            # message and "run the command again" failed the same way each time).
            from patchforge.store.gitstore import unwritable_cache

            refused = unwritable_cache(cache, f"{exc.strerror}{where}")
            echo(f"patchforge: error: {neutralize(str(refused))}", err=True)
            echo(f"hint: {neutralize(refused.hint or '')}", err=True)
            left = _left_behind(only_open=True)
            for line in left:
                echo(f"hint: {line}", err=True)
            if wants_json:
                emit_json_error(str(refused), exit_code=EXIT_BAD_INPUT,
                                hint=" ".join([refused.hint or "", *left]).strip() or None)
            sys.exit(EXIT_BAD_INPUT)
        echo(f"patchforge: error: {exc.strerror or exc}{where}", err=True)
        # What the command left, as for Ctrl-C: a rebase whose write-out failed half-way is
        # finished by --continue (or undone by --abort), never by running it again.
        left = _left_behind()
        for line in left:
            echo(f"hint: {line}", err=True)
        if wants_json:
            emit_json_error(f"{exc.strerror or exc}{where}", exit_code=EXIT_BAD_INPUT,
                            hint=" ".join(left) or None)
        sys.exit(EXIT_BAD_INPUT)
    except Exception as exc:  # a bug: short report, traceback only on request
        echo(f"patchforge: internal error: {type(exc).__name__}: {exc}", err=True)
        echo("This is a bug in patchforge. Run again with -v for the traceback.", err=True)
        if wants_json:
            emit_json_error(f"internal error: {type(exc).__name__}: {exc}",
                            exit_code=EXIT_INTERNAL,
                            hint="This is a bug in patchforge. Run again with -v for the "
                                 "traceback.")
        if verbose:
            import traceback
            traceback.print_exc()
        sys.exit(EXIT_INTERNAL)
    sys.exit(rc if isinstance(rc, int) else 0)


# The options of `patchforge` itself, which click takes before the command only.
_GLOBAL_OPTIONS = frozenset({"--root", "--offline", "-v", "--verbose", "-vv", "-q", "--quiet",
                             "-qq", "--no-color"})


def _global_option_hint(exc: Exception, args: list[str]) -> str | None:
    """For a global option given after the command (`patchforge status -q`, as git users
    write it), the command line with it before the command; else None."""
    option = getattr(exc, "option_name", None)
    ctx = getattr(exc, "ctx", None)
    if type(exc).__name__ != "NoSuchOption" or option not in _GLOBAL_OPTIONS or ctx is None:
        return None
    command = ctx.info_name or "COMMAND"
    # (`--root DIR` takes its value along: said in the general form.)
    moved = [option, *(a for a in args if a != option)] \
        if option in args and option != "--root" else None
    line = "patchforge " + " ".join(shlex.quote(a) for a in moved) if moved else \
        f"patchforge {option} {command} ..."
    return f"{option} is an option of patchforge itself, given before the command: `{line}`"


def _refusing_cache(exc: OSError) -> Path | None:
    """The cache directory when `exc` is a write it refused (read-only, not ours), else None."""
    from patchforge.store.gitstore import UNWRITABLE_ERRNOS

    if exc.errno not in UNWRITABLE_ERRNOS or not exc.filename:
        return None
    try:
        from patchforge.store.gitstore import cache_dir, wheels_dir

        refused = Path(os.fsdecode(exc.filename)).absolute()
        for place in (cache_dir(), wheels_dir()):
            if refused == place or place in refused.parents:
                return place
    except Exception:  # noqa: BLE001 - a bad setting is not what this error is about
        return None
    return None


class _NotRaised(Exception):
    """Stands for a click exception while click is not loaded: nothing raises it."""


def _click_exception(name: str) -> Any:
    """click's exception `name` (`click.exceptions`) for an `except` clause; while click is
    not loaded (a command `direct` ran) none of them can have been raised, and `_main`'s
    clauses must not load it to find that out."""
    click = sys.modules.get("click")
    return getattr(click.exceptions, name) if click is not None else _NotRaised


def fewer_collections() -> None:
    """Let the cycle collector wait for 200,000 new objects instead of 700: a command's start-up
    (its imports, its classes) makes tens of thousands of objects that live as long as the
    process, and collecting after every 700 of them cost a short command 5 ms (20 ms at the end
    of a rebase). What a command makes after that lives as long as it does too (a status's
    patches, verdicts and document: 50,000-60,000 objects on a 93-patch series), and one
    collection of them, at 50,000, cost 16-20 ms and found nothing of theirs to free. Cyclic
    garbage is still collected; a command is short-lived. console_main() calls this (the
    program's start, `__main__.console_main`, sets the same threshold before its imports too,
    so that they benefit); main() leaves the collector of a program that calls it alone."""
    import gc

    gc.set_threshold(COLLECT_AFTER, 10, 10)


def console_main() -> None:
    """The `patchforge` command: main(), then an exit without the interpreter's teardown.

    When main() is done, every file is written and closed, every git process waited for and
    every thread joined; tearing down the objects of a long series is a measurable part of a
    short command (docs/performance.md). main() itself exits normally, for callers in the same process.
    """
    try:
        try:
            fewer_collections()
            # The C module `signal` wraps: `signal` itself makes three enum classes as it loads,
            # which `--help` (nothing else of it needing `signal`) paid for this one call.
            import _signal

            # Without a handler, SIGTERM ended the process where it stood: no word of what was
            # left, and the temporary file of a write in progress stayed in the project.
            _signal.signal(_signal.SIGTERM, _on_sigterm)
            main()
        except KeyboardInterrupt as exc:
            # Ctrl-C in main's first imports, before its own handler is in place: a traceback
            # and a death by signal, where the same press a moment later says "interrupted".
            _interrupted(exc)
    except SystemExit as exc:
        code = exc.code
        if code is not None and not isinstance(code, int):
            print(code, file=sys.stderr)
            code = 1
        if threading.active_count() > 1:  # not expected; let the interpreter wait for them
            raise
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except (BrokenPipeError, ValueError):  # a reader gone (`| head`), a closed stream
            pass
        except OSError:  # the output could not be written (a full disk): not a success
            code = code or 1
        os._exit(code or 0)
