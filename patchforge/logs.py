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
    # Not loaded, or being loaded by another thread right now (a library imported by one of
    # the forge lookup's workers): its module is in sys.modules before its body has run, and
    # nothing can have configured a handler yet either way.
    if logging is not None and not getattr(getattr(logging, "__spec__", None),
                                           "_initializing", False):
        logging.getLogger(name).log(level, message, *args)
