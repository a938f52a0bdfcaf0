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
        # Set when the function has returned. Waited on instead of the thread's join: a join
        # interrupted by Ctrl-C marks the thread as ended though it runs on (CPython 3.11),
        # and a second join returns at once.
        self._over = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(function, args), daemon=True)
        self._thread.start()

    def _run(self, function: Callable[..., Any], args: tuple[Any, ...]) -> None:
        try:
            self._value = function(*args)
        except BaseException as exc:  # handed to the caller of result()
            self._error = exc
        finally:
            self._over.set()

    def __enter__(self) -> Background:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.wait()

    def wait(self) -> None:
        try:
            self._over.wait()
        except KeyboardInterrupt:
            # Ctrl-C while waiting (the wait itself is interruptible): the thread goes on, and
            # leaving now would let the interpreter's exit freeze it mid-step, its git process
            # left running and its temporary files (in /dev/shm) left behind. Its git got the
            # signal too (same process group) and ends; wait for the thread, then go on with
            # the interrupt. A second Ctrl-C does not wait.
            self._over.wait()
            raise

    def done(self) -> bool:
        """Whether the function has returned (result() then does not wait)."""
        return self._over.is_set()

    def result(self) -> Any:
        self.wait()
        if self._error is not None:
            raise self._error
        return self._value
