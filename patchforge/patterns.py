"""Regular expressions compiled at their first use (`on_first_use`), for module-level patterns
that only some inputs need.

A module-level `re.compile` runs in every command that imports its module: a clean rebase of a
Python series compiled the C-family function patterns, the revert messages' patterns and the
lock's image patterns without ever using them (49 patterns, about 25 million instructions,
3% of a 30-patch rebase's with git's). A pattern made here compiles when one of its methods is
first asked for; it then holds the compiled pattern's own bound methods, so each later call
costs what a compiled pattern's does. Use it only through its methods and attributes
(`X.search(...)`, `X.pattern`): it is not an `re.Pattern`, so `re.sub(X, ...)` refuses it.
"""
from __future__ import annotations

import re
from typing import Any, AnyStr, cast

_METHODS = ("search", "match", "fullmatch", "finditer", "findall", "sub", "subn", "split")


class _OnFirstUse:
    def __init__(self, pattern: str | bytes, flags: int) -> None:
        self._source: tuple[Any, int] = (pattern, flags)

    def __getattr__(self, name: str) -> Any:
        # Called only for a name the instance lacks: the first method asked for, or an
        # attribute (`pattern`, `groups`) of the compiled pattern. Two threads asking at once
        # both compile and store the same methods.
        if name.startswith("__") or name == "_source":
            # An instance made without __init__ (copy.copy, pickle) has no _source: asking
            # for it here again recursed without end.
            raise AttributeError(name)
        compiled = re.compile(*self._source)
        for method in _METHODS:
            setattr(self, method, getattr(compiled, method))
        return getattr(compiled, name)


def on_first_use(pattern: AnyStr, flags: int = 0) -> re.Pattern[AnyStr]:
    """`re.compile(pattern, flags)`, made when the pattern is first used."""
    return cast("re.Pattern[AnyStr]", _OnFirstUse(pattern, flags))
