"""Running git: every git process patchforge starts goes through `run_git` (runs it to the end)
or `start_git` (a long-lived process fed through a pipe), with one environment and one fixed
configuration (isolated from the user's and the system's configuration, fixed locale and
identity, no pager or colour, only safe transports); `end_process` ends a long-lived one.
"""
from __future__ import annotations

import os
import re
import subprocess
import time
from pathlib import Path
from typing import IO

from patchforge import logs, tempfiles
from patchforge.errors import StoreDamaged, StoreError
from patchforge.store.giturl import ALLOWED_PROTOCOLS

# Fixed identity and date for everything patchforge itself creates: the same input gives the
# same object ids on every machine.
IMPORT_IDENT = ("patchforge", "patchforge@localhost", "0 +0000")


# Kept from the caller's environment: what a fetch needs to reach a remote (ssh, askpass, TLS,
# proxies) and git's tracing. Every other GIT_* variable could redirect or change what git does
# (GIT_DIR, GIT_INDEX_FILE, GIT_DIFF_OPTS, GIT_CONFIG_COUNT, GIT_TEMPLATE_DIR...), so it goes.
_KEPT_GIT_VARS = re.compile(
    r"GIT_(SSH|SSH_COMMAND|SSH_VARIANT|ASKPASS|TERMINAL_PROMPT|SSL_\w+|HTTP_\w+|PROXY_\w+|"
    r"CURL_VERBOSE|TRACE\w*|EXEC_PATH)$")


# Passed on every command line: where a config file cannot reach (XDG attributes file) or where
# a default could change between git releases.
BASE_CONFIG = (
    "-c", "core.attributesFile=/dev/null",
    "-c", "core.quotePath=true",
    "-c", "core.hooksPath=/dev/null",
    "-c", "color.ui=false",
    "-c", "diff.noprefix=false",
    "-c", "diff.mnemonicPrefix=false",
    "-c", "diff.renames=true",
    "-c", "gc.auto=0",
    "-c", "maintenance.auto=false",
    "-c", "advice.detachedHead=false",
)


# `--offline` (set once per command by the command line): every git process is then allowed no
# transport at all, so neither a fetch nor a partial clone's on-demand fetch of a missing blob
# can reach a remote (git refuses before it connects; from git 2.45 GIT_NO_LAZY_FETCH also
# stops the on-demand fetch itself). What the store lacks then fails, and says so.
_offline = False


def set_offline(offline: bool) -> None:
    global _offline
    _offline = offline


def is_offline() -> bool:
    return _offline


def redirecting_git_vars() -> list[str]:
    """The caller's GIT_* variables that could redirect or change what git does (GIT_DIR set
    by a hook, GIT_INDEX_FILE...): all but those a fetch needs and git's tracing."""
    return [k for k in os.environ if k.startswith("GIT_") and not _KEPT_GIT_VARS.match(k)]


def git_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of every git process: the caller's, minus what could change git's output."""
    dropped = set(redirecting_git_vars())
    env = {k: v for k, v in os.environ.items() if k not in dropped}
    env.update({
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": "/dev/null",
        "GIT_NO_REPLACE_OBJECTS": "1",
        # Only these transports, whatever a URL from a config, lock or remote names: never
        # `ext::` (runs a command), `fd::` or another remote helper.
        "GIT_ALLOW_PROTOCOL": ALLOWED_PROTOCOLS,
        "GIT_TERMINAL_PROMPT": env.get("GIT_TERMINAL_PROMPT", "0"),
        "GIT_PAGER": "cat",
        "PAGER": "cat",
        "LC_ALL": "C",
        "LANG": "C",
        "TZ": "UTC",
        "GIT_AUTHOR_NAME": IMPORT_IDENT[0], "GIT_AUTHOR_EMAIL": IMPORT_IDENT[1],
        "GIT_AUTHOR_DATE": "@0 +0000",
        "GIT_COMMITTER_NAME": IMPORT_IDENT[0], "GIT_COMMITTER_EMAIL": IMPORT_IDENT[1],
        "GIT_COMMITTER_DATE": "@0 +0000",
    })
    # An http(s) remote that stops sending (a stalled server, a proxy holding the
    # connection) is given up after two minutes without a byte, as the HTTP client gives up
    # on any answer; git would wait for it forever. The caller's own values are kept.
    env.setdefault("GIT_HTTP_LOW_SPEED_LIMIT", "1")
    env.setdefault("GIT_HTTP_LOW_SPEED_TIME", "120")
    if _offline:
        env["GIT_ALLOW_PROTOCOL"] = "none"  # no transport has that name
        env["GIT_NO_LAZY_FETCH"] = "1"
    if extra:
        env.update(extra)
    return env


# PATH -> the git executable found in it (see git_executable).
_EXECUTABLES: dict[str | None, str] = {}


def git_executable() -> str:
    """The git that PATH names, looked up once per PATH (a test may change it) instead of by
    every process start: started by name, each git process has the child try `git` in each
    directory of PATH before the one that has it, while the starting thread waits (vfork),
    about 0.5 ms a process on a PATH of ten directories, and status starts about a hundred.
    The same program either way; without a git on PATH the name is kept (the start then
    fails as it did)."""
    path = os.environ.get("PATH")
    found = _EXECUTABLES.get(path)
    if found is None:
        found = tempfiles.which("git", path=path) or "git"
        if not os.path.isabs(found):  # a relative PATH entry: found from the process's cwd
            found = "git"
        _EXECUTABLES[path] = found
    return found


def git_command(*args: str, git_dir: Path | None = None) -> list[str]:
    """The command line of a git process: the fixed configuration, `--git-dir` if given, `args`."""
    return [git_executable(), *BASE_CONFIG, *(("--git-dir", str(git_dir)) if git_dir is not None else ()),
            *args]


_IDENTITY = ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_AUTHOR_DATE",
             "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "GIT_COMMITTER_DATE")


def _environment(extra: dict[str, str] | None, user_config: bool) -> dict[str, str]:
    env = git_env(extra)
    if user_config:
        # The user's own configuration is read (credential helpers, `url.*.insteadOf`, ssh
        # settings, their identity): everything else stays isolated. A commit made for the
        # user (a bump's) is theirs, dated now in their zone: the store's fixed identity
        # and date are for its own objects only.
        for key in ("GIT_CONFIG_GLOBAL", "GIT_CONFIG_NOSYSTEM", "TZ", *_IDENTITY):
            if key in os.environ:
                env[key] = os.environ[key]
            else:
                env.pop(key, None)
    return env


# What git says when a file of a repository is damaged (a truncated pack or index, a flipped
# byte, an emptied loose object), with the file it names where it names one. This pattern and
# the others read only from a failure's message are compiled when one is read (re's own
# cache), not at every start-up: 0.5 ms of a clean rebase's start-up.
_DAMAGE = (
    r"(?:packfile|index file|file) (?P<pack>\S+) (?:does not match index|is too small"
    r"|is far too short to be a packfile|is not a GIT packfile|claims to have)"
    r"|\(stored in (?P<stored>\S+)\) is corrupt"
    r"|object file (?P<loose>\S+) is empty"
    r"|non-monotonic index (?P<index>\S+)"
    r"|inflate: data stream error|bad packed object CRC|unable to unpack \S+ header"
    r"|corrupt packed object"
    # A ref file holding garbage (a disk error, a `git gc` killed half-way): git ignores it
    # when listing and cannot update it. Without these the pinned commit's own record in the
    # store read as "not a commit of its source: re-pin it".
    r"|ignoring broken ref (?P<ref>\S+)"
    r"|unable to resolve reference '(?P<broken>[^']+)': reference broken"
    # The store's own config unreadable (the user's own is said by git as it is).
    r"|bad config line \d+ in file (?P<config>\S+/store\.git/config)\b"
    # Its packed refs holding a line git does not write (a `git gc` killed half-way).
    r"|unexpected line in (?P<packed>\S+/store\.git/packed-refs)\b")


def damage_error(stderr: str, git_dir: Path | str | None) -> StoreDamaged | None:
    """A StoreDamaged naming the damaged file (and the store to move aside) when git's
    message says a file of the repository is damaged; None for any other failure. Without
    this a damaged pack read as a revision missing from its source: `the lock names a
    revision its source does not have: re-pin it`, advice that changes a correct lock."""
    matches = list(re.finditer(_DAMAGE, stderr))
    if not matches:
        return _store_gone(stderr, git_dir)
    # The line that names the file, when one does (an inflate error's next line names it).
    match = next((m for m in matches if any(m.groupdict().values())), matches[0])
    named = next((v for v in match.groupdict().values() if v), None)
    if named and "/objects/" in named:
        store = named.split("/objects/")[0]
    elif match.group("config") or match.group("packed"):
        store = os.path.dirname(match.group("config") or match.group("packed"))
    else:
        # A ref is named relative to its repository.
        store = str(git_dir) if git_dir is not None else "the store"
    line = next((ln.strip() for ln in stderr.splitlines() if match.group(0) in ln), match.group(0))
    line = re.sub(r"^(?:error|fatal|warning): ", "", line)
    return StoreDamaged(f"the cache's git store {store} is damaged: {line}",
                        hint=f"nothing in the project is wrong and no pin needs to change: move "
                             f"{store} aside (or remove it), and the next command fetches and "
                             f"imports the pinned revisions again")


_GONE = (r"not a git repository: '(?P<dir>[^']+)'|not in a git directory"
         r"|requires a git repository")


def _store_gone(stderr: str, git_dir: Path | str | None) -> StoreDamaged | None:
    """The cache's store (`store.git`, or the one being made) removed while a command ran:
    git says it is no repository. Said as such, never as a revision its source lacks (whose
    advice, re-pin, changes a correct lock)."""
    match = re.search(_GONE, stderr)
    where = (match.group("dir") or (str(git_dir) if git_dir is not None else None)) \
        if match else None
    if where is None or "store.git" not in os.path.basename(where.rstrip("/")):
        return None
    if os.path.lexists(os.path.join(where, "objects")):
        # There, but git does not take it for a repository: its HEAD holds garbage, its refs/
        # is gone, its objects/ is a file. Every later command would fail the same way.
        if "not a git repository" not in stderr:
            return None
        return StoreDamaged(f"the cache's git store {where} is damaged: git does not read it as "
                            "a repository (its HEAD, objects/ or refs/ is not what git writes)",
                            hint=f"nothing in the project is wrong and no pin needs to change: "
                                 f"move {where} aside (or remove it), and the next command "
                                 f"fetches and imports the pinned revisions again")
    return StoreDamaged(f"the cache's git store {where} was removed while the command ran",
                        hint="nothing in the project is wrong and no pin needs to change: run "
                             "the command again (the store is made again and the pinned "
                             "revisions fetched)")


def run_git(*args: str, git_dir: Path | None = None, cwd: Path | str | None = None,
            input: bytes | None = None, env: dict[str, str] | None = None,
            user_config: bool = False, ok: tuple[int, ...] | None = (0,),
            what: str | None = None, spool: bool = False) -> subprocess.CompletedProcess:
    """Run git to the end and return the finished process (stdout and stderr as bytes).

    An exit code outside `ok` raises StoreError naming `what` (default `git <command>`) with
    git's message; `ok=None` leaves the exit code to the caller. `env` adds variables;
    `user_config` lets git read the user's own configuration: for every command that reaches a
    remote (fetch, ls-remote, push: credential helpers, `url.*.insteadOf`, proxies) and for the
    user's identity. Each command is logged at debug level (-vv) with its time.

    `spool`: git's output goes to a temporary file, read once git has ended, instead of a
    pipe read 32 KB at a time. For a long output read on a second thread: each read of a pipe
    needs the interpreter's lock back, which a busy first thread gives up only every few
    milliseconds, and git waits on the full pipe meanwhile. The file goes to the system's
    temporary directory, not to scratch_dir's tmpfs: a history's output can be far larger than
    a container's /dev/shm (64 MB by default), and is written and read once."""
    started = time.monotonic()
    command = git_command(*args, git_dir=git_dir)
    if spool:
        with tempfiles.temporary_file() as out:
            proc = subprocess.run(command, cwd=cwd, input=input, stdout=out,
                                  stderr=subprocess.PIPE, env=_environment(env, user_config))
            out.seek(0)
            proc.stdout = out.read()
    else:
        proc = subprocess.run(command, cwd=cwd, input=input, capture_output=True,
                              env=_environment(env, user_config))
    logs.debug("patchforge.git", "git %s: exit %d in %.0f ms", " ".join(args)[:160], proc.returncode,
              (time.monotonic() - started) * 1000)
    if ok is not None and proc.returncode not in ok:
        err = proc.stderr.decode("utf-8", "replace").strip()
        damaged = damage_error(err, git_dir)
        if damaged is not None:
            raise damaged
        raise StoreError(f"{what or 'git ' + args[0]} failed: "
                         f"{err or 'exit ' + str(proc.returncode)}")
    return proc


def start_git(*args: str, git_dir: Path | None = None, stdout: int | IO[bytes] = subprocess.PIPE,
              stderr: int | IO[bytes] = subprocess.PIPE,
              stdin: int | IO[bytes] = subprocess.PIPE,
              replace_objects: bool = False) -> subprocess.Popen:
    """Start a long-lived git process fed through its stdin (cat-file, fast-import; end it
    with `end_process`), or one whose answer is read later (`stdin=subprocess.DEVNULL`).
    `replace_objects`: git reads the repository's refs/replace/ (every other git process is
    kept from them): only for a scratch repository whose replacements patchforge made."""
    env = git_env()
    if replace_objects:
        del env["GIT_NO_REPLACE_OBJECTS"]  # git takes the variable's presence as "no"
    return subprocess.Popen(git_command(*args, git_dir=git_dir), stdin=stdin,
                            stdout=stdout, stderr=stderr, env=env)


class StartedGit:
    """A git process started now and read later (`result`): its input and output are temporary
    files, so git never waits on a pipe while the caller does other work, and no thread reads
    it. `close` (also done by `result`) ends it if it still runs. For a git step whose answer
    is needed a little later: it runs on another core meanwhile. Its input (object ids, one a
    line: tens of kilobytes on a long series) and its messages are files of scratch_dir's memory file system: each file made and
    freed on the disk's cost about 0.1 ms (a journalled inode), and far more while other
    programs sync; its output, which can be large, stays in the temporary directory."""

    def __init__(self, *args: str, git_dir: Path | None = None, cwd: Path | str | None = None,
                 input: bytes = b"", what: str | None = None, ok: tuple[int, ...] = (0,),
                 env: dict[str, str] | None = None) -> None:
        self._what = what or f"git {args[0]}"
        self._git_dir = git_dir
        self._ok = ok
        self._args = args
        self._out = tempfiles.temporary_file()
        self._err = tempfiles.temporary_file(dir=scratch_dir())
        self._proc: subprocess.Popen | None = None
        self._started = time.monotonic()
        try:
            with tempfiles.temporary_file(dir=scratch_dir()) as stdin:
                stdin.write(input)
                stdin.seek(0)
                self._proc = subprocess.Popen(git_command(*args, git_dir=git_dir), cwd=cwd,
                                              stdin=stdin, stdout=self._out, stderr=self._err,
                                              env=git_env(env))
        except BaseException:
            self.close()
            raise

    def result(self) -> bytes:
        """git's output once it has ended; a StoreError (naming `what`) for an exit code
        outside `ok`."""
        try:
            assert self._proc is not None, "started"
            code = self._proc.wait()
            logs.debug("patchforge.git", "git %s: exit %d in %.0f ms (started early)",
                       " ".join(self._args)[:160], code,
                       (time.monotonic() - self._started) * 1000)
            if code not in self._ok:
                self._err.seek(0)
                err = self._err.read().decode("utf-8", "replace").strip()
                damaged = damage_error(err, self._git_dir)
                if damaged is not None:
                    raise damaged
                raise StoreError(f"{self._what} failed: {err or 'exit ' + str(code)}")
            self._out.seek(0)
            return self._out.read()
        finally:
            self.close()

    def close(self) -> None:
        if self._proc is not None and self._proc.returncode is None:
            self._proc.kill()
            self._proc.wait()
        self._out.close()
        self._err.close()


def scratch_dir() -> str | None:
    # Short-lived temporary files (diff sides, blobs to hash) go to memory when the system has a
    # tmpfs: creating 600 files on a disk-backed /tmp cost ten times more than git's diff itself.
    shm = "/dev/shm"
    if os.path.isdir(shm) and os.access(shm, os.W_OK | os.X_OK):
        return shm
    return None


def end_process(proc: subprocess.Popen, *, grace: float) -> None:
    """Close a process's stdin, give it `grace` seconds to exit on its own, then kill it."""
    try:
        if proc.stdin is not None:
            proc.stdin.close()
    except OSError:
        pass
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


UPSTREAM_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def check_upstream_name(name: str) -> None:
    # The name becomes part of ref names and a remote name.
    if not UPSTREAM_NAME.fullmatch(name) or ".." in name or name.endswith((".lock", ".")):
        raise StoreError(f"invalid upstream name {name!r} (letters, digits, '.', '_', '-')")


def is_ref_name(name: str) -> bool:
    """Whether git takes `name` for a branch or tag name: git's own check of `refs/heads/NAME`
    (`git check-ref-format`: no space, `..`, `~^:?*[\\`, control character, part beginning
    with `.` or ending in `.lock`, ...) and, as `git branch` has it, no leading `-`. The name
    is never an option to git: it is asked about as the tail of a full ref name."""
    if not name or name.startswith("-") or "\0" in name:
        return False
    return run_git("check-ref-format", f"refs/heads/{name}", ok=None).returncode == 0


def check_label(label: str) -> None:
    # git's rules for a ref name hold for each `/` part of it (git check-ref-format): a label
    # `a/.b` or `a/b.lock/c` passed the checks of the whole, and git fast-import then refused
    # the ref, leaving a crash report in the shared store.
    if (not label or label.startswith(("/", "-")) or "//" in label or ".." in label
            or label.endswith(("/", "."))
            or any(part.startswith(".") or part.endswith(".lock") for part in label.split("/"))
            or re.search(r"[\x00-\x20\x7f~^:?*\[\\]|@\{", label)):
        raise StoreError(f"invalid label {label!r}: it must be usable in a git ref name")
