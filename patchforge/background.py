"""Running a git-bound step on a second thread while this one goes on (`Background`).

A Background belongs to the block that starts it: `with Background(step, ...) as work:` joins
the thread when the block is left, by an error too, so no thread outlives the command step that
needed it. What the step shares with the starting thread is the command's store, which is made
for that (`UpstreamStore`: its caches and its cat-file reader are used under its lock)."""
from __future__ import annotations

import threading
from collections.abc import Callable
from types import TracebackType
from typing import Any


class Background:
    """A function run by a second thread; result() waits for it and returns its value or
    raises its exception. Used for work that is mostly a git process (the GIL is free then)."""

    def __init__(self, function: Callable[..., Any], *args: Any) -> None:
        self._value: Any = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(function, args), daemon=True)
        self._thread.start()

    def _run(self, function: Callable[..., Any], args: tuple[Any, ...]) -> None:
        try:
            self._value = function(*args)
        except BaseException as exc:  # handed to the caller of result()
            self._error = exc

    def __enter__(self) -> Background:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.wait()

    def wait(self) -> None:
        self._thread.join()

    def done(self) -> bool:
        """Whether the function has returned (result() then does not wait)."""
        return not self._thread.is_alive()

    def result(self) -> Any:
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._value
