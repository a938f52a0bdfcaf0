"""The `patchforge` program: the console script and `python -m patchforge` both start here."""
import gc

from patchforge import COLLECT_AFTER


def console_main() -> None:
    """The command line loaded, then run (cli.console_main). A Ctrl-C while it loads (the
    command line's own modules: tens of milliseconds, several times that on a busy machine)
    came before any handler of patchforge's was in place: it printed a KeyboardInterrupt
    traceback and the process died by the signal, where the same press a moment later says
    "interrupted", exit 130. It is said that way here too. This module is kept small and
    loads nothing of its own before its `try`: what runs before it (the interpreter's start,
    its site module and .pth files) is the interpreter's, which no program can handle."""
    gc.set_threshold(COLLECT_AFTER, 10, 10)  # before the imports: cli.fewer_collections says why
    try:
        from patchforge.cli import console_main as run
    except KeyboardInterrupt as exc:
        from patchforge.cli import _interrupted  # loads what the Ctrl-C cut short

        _interrupted(exc)
    run()


if __name__ == "__main__":
    console_main()
