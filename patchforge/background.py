"""Running a git-bound step on a second thread while this one goes on (`Background`)."""
from __future__ import annotations


class Background:
    """A function run by a second thread; result() waits for it and returns its value or
    raises its exception. Used for work that is mostly a git process (the GIL is free then)."""

    def __init__(self, function, *args) -> None:
        import threading

        self._value = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(function, args), daemon=True)
        self._thread.start()

    def _run(self, function, args) -> None:
        try:
            self._value = function(*args)
        except BaseException as exc:  # handed to the caller of result()
            self._error = exc

    def wait(self) -> None:
        self._thread.join()

    def result(self):
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._value
