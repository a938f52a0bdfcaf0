"""The error family of patchforge and the exit codes they map to.

The core never prints or exits: it raises one of these, and `patchforge.cli` turns it into a
message and an exit code in exactly one place.
"""
from __future__ import annotations

EXIT_OK = 0
EXIT_ATTENTION = 1  # a check found something: status needs action, verify mismatch, drift, lint
EXIT_BAD_INPUT = 2  # bad usage or bad input; the message names the file and line
EXIT_CONFLICT = 3  # a rebase stopped on a conflict and can be resumed
EXIT_INTERNAL = 70  # a bug
# A service or remote that did not answer after the retries (sysexits' EX_TEMPFAIL): nothing
# of the project or the command line is wrong, and the same command may succeed later. Kept
# apart from 2 so that a CI job can retry this and fail on that.
EXIT_TEMPFAIL = 75
EXIT_INTERRUPTED = 130  # Ctrl-C (128 + SIGINT), as shells report it
EXIT_TERMINATED = 143  # SIGTERM (128 + SIGTERM), as shells report a process it ended


class PatchforgeError(Exception):
    """Base class. `exit_code` says how the CLI ends; `hint` is one line of advice."""

    exit_code = EXIT_INTERNAL
    # A service gave no usable answer after the retries (a 5xx, a rate limit, no connection, a
    # broken read), and this error comes of it: asking again later may succeed, so it says
    # nothing about what was asked, and the command exits 75 whatever its class (exit_code_of).
    gave_up = False

    def __init__(self, message: str, *, hint: str | None = None,
                 path: str | None = None, line: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.path = path
        self.line = line

    def __str__(self) -> str:
        where = ""
        if self.path is not None:
            where = f"{self.path}:{self.line}: " if self.line is not None else f"{self.path}: "
        return where + self.message


def gave_up_as(error: PatchforgeError, cause: BaseException) -> PatchforgeError:
    """`error`, said of `cause` (a caller's words for a failure below it), keeping whether a
    service gave no answer (`gave_up`, exit 75): the caller's words change, not the cause."""
    error.gave_up = getattr(cause, "gave_up", False)
    return error


def exit_code_of(error: PatchforgeError) -> int:
    """The exit code the command ends with for `error`: 75 for one that comes of a service
    giving no answer (`gave_up`), whatever it was said as, else its class's."""
    return EXIT_TEMPFAIL if error.gave_up else error.exit_code


class PartlyWritten(PatchforgeError):
    """A command cut short (Ctrl-C, a failed write) that could not put back what it had
    written: the message names what is left as it wrote it, the hint how to finish it."""

    exit_code = EXIT_BAD_INPUT


class UsageError(PatchforgeError):
    """The command was called wrongly (unknown patch, bad option combination)."""

    exit_code = EXIT_BAD_INPUT


class AmbiguousNameError(UsageError):
    """A patch name that several series hold: the caller must say UPSTREAM/NAME. Never taken
    for "no such patch" (a command that looks elsewhere next would answer that it is gone)."""


class KeptAsideError(UsageError):
    """A patch name that is not in the series but kept in its upstreamed/ or deleted/: the
    answer says where, never "no such patch" (which reads as a fix lost)."""


class InputError(PatchforgeError):
    """A file given to us is malformed or hostile; `path` and `line` say where."""

    exit_code = EXIT_BAD_INPUT


class UnsafePathError(InputError):
    """A patch tried to touch a path outside its upstream (.., absolute, .git, symlink...)."""


class ConfigError(InputError):
    """The configuration or the lock file is wrong; `path` names the file, message the key."""


class StoreError(PatchforgeError):
    """The upstream store cannot give what was asked (unknown revision, fetch failed)."""

    exit_code = EXIT_BAD_INPUT


class RefNotFound(StoreError):
    """The upstream has no branch, tag or commit of the name asked for: its remote does not
    advertise it, or (after a fetch) the store holds no such revision of that source. The
    name is what is wrong, so a caller may say it as the place the name came from (a
    configuration's `follow`, a lock's pin). Raised only where the store looks the name up:
    callers tell it from every other store failure (the network, damage) by this type."""


class RemoteUnreachable(StoreError):
    """A git remote could not be asked (the network, the URL, a login): nothing is known of the
    name asked for, so the error never advises checking it; its hint says what could not be
    reached and what answers without it (`--offline`)."""


class SourceUnusable(StoreError):
    """A git source nothing can be fetched from, whatever is asked of it (a shallow clone): the
    source, not the name, is what to change, so it is said as it is, never as one attempt at a
    name that ends in "check the name"."""


class StoreDamaged(StoreError):
    """A file of the cache's git store is damaged (a disk or copy error): git named it. Nothing
    of the project is wrong, and no pin should change because of it."""


class CacheLockLeft(StoreDamaged):
    """A lock file of git's (`<ref>.lock`, `config.lock`) in the cache's store, left by a git
    process killed while it wrote there, refuses every later write of that file. Like damage,
    nothing of the project is wrong: the message names the file and the way on (remove it
    when no process uses the cache), never a name to check or a pin to change."""


class CacheUnwritable(StoreDamaged):
    """The cache cannot be written (a read-only mount, a directory of another user) where a
    command must add to it. Like damage, nothing of the project is wrong: the message names
    the cache, and the way out is a writable one, never a change of the project or its pins."""


class NetworkError(PatchforgeError):
    """An HTTP service failed after retries, or `--offline` has no cached answer. Exit 75
    when it gave up waiting for an answer (`gave_up`), else 2: an answer that says something
    is wrong (a refusal, a bad body, `--offline` without a cached answer) is not made right by
    running the command again."""

    exit_code = EXIT_BAD_INPUT
    unreachable = False  # no connection could be made at all: callers stop asking that host
    # The registry's definite answer about one image (no such manifest, or what it serves is
    # not an image for this platform), not its own state (no answer, a refusal, a corrupted
    # body): `bump` passes over such a nightly and stops on anything else.
    about_image = False
    status: int | None = None  # the HTTP status of the answer it is about, when there was one


class ResolutionError(PatchforgeError):
    """A target SPEC could not be resolved; `attempts` lists what was tried and why it failed."""

    exit_code = EXIT_BAD_INPUT

    def __init__(self, message: str, attempts: list[str] | None = None, **kw) -> None:
        super().__init__(message, **kw)
        self.attempts = list(attempts or [])

    def __str__(self) -> str:
        text = super().__str__()
        if self.attempts:
            text += "".join(f"\n  tried {a}" for a in self.attempts)
        return text


class ApplyError(PatchforgeError):
    """A patch does not apply where it must (overlays, edit); names the patch and hunk."""

    exit_code = EXIT_BAD_INPUT


class LockedError(PatchforgeError):
    """Another patchforge process holds the repository lock."""

    exit_code = EXIT_BAD_INPUT


class ConflictStop(PatchforgeError):
    """A rebase stopped on a conflict; the journal allows --continue/--skip/--abort."""

    exit_code = EXIT_CONFLICT


class InProgressError(UsageError):
    """An operation (rebase) is in progress and must be continued or aborted first."""
