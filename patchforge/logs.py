"""The library's debug and progress records, sent to `logging` without importing it.

`logging` (with `traceback`, `string` and the regular expressions they compile) costs every
short command several milliseconds at start-up. Nothing can have configured a handler before
something imported `logging`, and the records sent here are below WARNING (the level its
last-resort handler starts at), so while it is not loaded they would go nowhere: they are
dropped without loading it. The command line loads and configures it for -v and -q; a program
using patchforge as a library configures it as usual.
"""
from __future__ import annotations

import sys

DEBUG, INFO = 10, 20  # logging.DEBUG, logging.INFO


def debug(name: str, message: str, *args: object) -> None:
    _log(DEBUG, name, message, args)


def info(name: str, message: str, *args: object) -> None:
    _log(INFO, name, message, args)


def _log(level: int, name: str, message: str, args: tuple) -> None:
    logging = sys.modules.get("logging")
    if logging is not None:
        logging.getLogger(name).log(level, message, *args)
