"""The one git object store in the cache that holds all upstream content (`<cache>/store.git`).

It owns: the cache location, reading blobs by revision (through store/catfile.py), blob-less
partial fetches of git upstreams (and what a remote's refs name, asked without a fetch), commits
made without a checkout, rename detection, ancestry, patch-ids and logs, and the refs below.
The rest of the git layer, by concern: store/git.py (the environment of every git process), store/diff.py (diffs and 3-way file merges made by git),
store/imports.py (wheel and directory imports), store/rangediff.py (range-diffs).

Refs it writes, all under `refs/patchforge/`:
  labels/<namespace>/<label>         a wheel or directory import (a root commit) as one project
                                     labelled it; <namespace> is `sources.import_namespace`:
                                     the upstream's name with a digest of the project and source
  imports/<upstream>/<label>         the last import of that name and label by any project of
                                     the cache (and the only one an earlier patchforge wrote):
                                     never taken as a project's version, only reused as a wheel
                                     whose recorded sha256 is checked
  remotes/<upstream>/heads|tags/<n>  remote-tracking refs of a git upstream
  remotes/<upstream>/commits/<sha>   a commit fetched by id, kept reachable
  remotes/<upstream>/HEAD            the upstream's HEAD (a SPEC of `HEAD`); other/<ref> a full ref name
  kept/<sha>                         every import's commit, kept reachable when its label moves
"""
from __future__ import annotations

import contextlib
import errno
import mmap
import os
import re
import struct
import subprocess
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from patchforge import tempfiles
from patchforge.errors import (CacheLockLeft, CacheUnwritable, PatchforgeError, RefNotFound,
                               RemoteUnreachable, SourceUnusable, StoreDamaged, StoreError,
                               UsageError, gave_up_as)
from patchforge.fsutil import fault_point, holder_named, read_holder, write_holder
from patchforge.store.catfile import CatFile, parse_tree
from patchforge.store import commitdiffs
from patchforge.store.diff import DIFF_OPTIONS, check_path, decode_path
from patchforge.store.git import (IMPORT_IDENT, StartedGit, check_label, check_upstream_name,
                                  damage_error, is_offline, run_git)
from patchforge.store.giturl import (check_git_url, is_local_git_url, local_path,
                                     partial_local_repository, redact, shallow_local_repository)
from patchforge.store.kept import answer_name, answer_of, answer_parts, keep as keep_file
from patchforge.store.kept import bound as bound_kept
from patchforge.store.objects import (EMPTY_BLOB, EMPTY_TREE, TREE_MODE, commit_bytes, edit_tree,
                                      object_id, tree_bytes, write_loose)
from patchforge.store.mergeort import exact_renames, guessed_by_directory, unique_names
from patchforge.store.rangediff import RangeDiffImport
from patchforge.store.storeconfig import (LOCAL_UPLOAD_PACK, check_store_config, remotes_gone,
                                          store_remotes, without_remotes)

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from patchforge.store.imports import ImportResult


# --------------------------------------------------------------------------------------------
# Cache location

def cache_dir() -> Path:
    """`$PATCHFORGE_CACHE`, else `$XDG_CACHE_HOME/patchforge`, else `~/.cache/patchforge`.

    A relative PATCHFORGE_CACHE is refused: taken from the current directory, it made a second
    cache (a fetch, a store) inside whatever directory a command ran from, the project's own
    included. A relative XDG_CACHE_HOME is ignored, as the XDG base directory specification
    says."""
    explicit = _absolute_setting("PATCHFORGE_CACHE")
    if explicit:
        return explicit
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg and os.path.isabs(xdg):
        return Path(xdg) / "patchforge"
    home = Path.home()
    if not home.is_absolute():
        # As a relative PATCHFORGE_CACHE: a store made inside each directory a command runs in.
        raise UsageError(f"HOME={os.environ.get('HOME')} is a relative path, and the cache "
                         "(~/.cache/patchforge) would be made inside each directory a command "
                         "runs in", hint="set HOME, or PATCHFORGE_CACHE, to an absolute path")
    return home / ".cache" / "patchforge"


def wheels_dir() -> Path:
    """`$PATCHFORGE_WHEELS`, else `<cache>/wheels`: shared by the tool, the tests, the benchmarks."""
    return _absolute_setting("PATCHFORGE_WHEELS") or cache_dir() / "wheels"


def _absolute_setting(variable: str) -> Path | None:
    value = os.environ.get(variable)
    if not value:
        return None
    if any(c in value for c in "\r\n"):
        # A CR from a CRLF env file made a second cache named `<dir>\r` and filled it, exit 0.
        raise UsageError(f"{variable}={value!r} holds a line break: it would name another "
                         "directory than the one meant", hint="set it without the line end "
                         "(an env file saved with CRLF line ends?)")
    if not value.strip():
        # Blank (`PATCHFORGE_CACHE= ` in an env file): not "a relative path" with the hint
        # `$PWD/ `; an empty value is unset, this one is said as what it is.
        raise UsageError(f"{variable}={value!r} is only white space: it names no directory",
                         hint=f"unset it (or set it empty) for the default, or give an "
                              f"absolute path ({variable}=\"/path/to/dir\")")
    if value != value.strip() and os.path.isabs(value.strip()):
        # ` /abs` (a space after `=` in an env file) was called a relative path, with the
        # hint `$PWD/ /abs`.
        raise UsageError(f"{variable}={value!r} begins or ends with white space: it would name "
                         "another directory than the one meant",
                         hint=f"set it without the spaces ({variable}=\"{value.strip()}\")")
    if not os.path.isabs(value):
        example = f"$HOME/{value[2:]}" if value.startswith("~/") else f"$PWD/{value}"
        raise UsageError(f"{variable}={value} is a relative path: it would name another "
                         "directory from each directory a command runs in"
                         + (" (a ~ in a variable is not expanded: only a shell does that)"
                            if value.startswith("~") else ""),
                         hint=f"give an absolute path (e.g. {variable}=\"{example}\")")
    return Path(value)


def refuse_cache_in_project(root: Path) -> None:
    """The cache (and the wheel cache) is never in the project's own files: its root,
    series/, overlays/ or .patchforge/ (a UsageError naming the variable that put it there and
    the project). Made there, the store was taken for the project's: under overlays/,
    `overlays --check` and `lint` called it drift for ever (`overlays` never removes it); under
    series/ or the root, `git add -A` committed the whole store with the fixes. A directory
    of its own elsewhere in the project (a CI cache's `.cache/`) is the user's to ignore."""
    # A setting that gives no directory at all (relative, no home) is refused by the commands
    # that use the cache, with their own message; a command that never opens it (`list`) runs.
    settings: list = [(cache_dir, _cache_variable)]
    if os.environ.get("PATCHFORGE_WHEELS"):
        settings.append((wheels_dir, lambda: "PATCHFORGE_WHEELS"))
    places: list[tuple[Path, str]] = []
    for directory_of, variable_of in settings:
        try:
            places.append((directory_of(), variable_of()))
        except (PatchforgeError, RuntimeError, KeyError):
            continue
    root = Path(os.path.realpath(root))
    for place, variable in places:
        resolved = Path(os.path.realpath(place))
        for owned in (root, root / "series", root / "overlays", root / ".patchforge"):
            if resolved == owned or (owned != root and owned in resolved.parents):
                where = "root" if owned == root else f"{owned.name}/"
                raise UsageError(
                    f"{variable} puts the cache ({place}) in the project {root} (its {where}): "
                    "it would be taken for the project's own files (`overlays --check` calls "
                    "it drift, `git add -A` commits it with the series)",
                    hint=f"point {variable} at a directory outside the project's series/, "
                         "overlays/ and .patchforge/ (the default is ~/.cache/patchforge)")
        if root in resolved.parents:
            _refuse_tracked_cache(root, resolved, place, variable)


def _refuse_tracked_cache(root: Path, resolved: Path, place: Path, variable: str) -> None:
    """A cache inside the project whose files the project's git tracks is refused: those are
    a commit's files (a pull request's, in a CI checkout), not the cache of this machine, and
    the cache is trusted as the machine's (a configuration it marks as validated is not
    validated again, its wheels and forge answers are used as fetched). Asked of git only for
    a cache inside the project, the rare case (a CI cache under the workspace)."""
    proc = run_git("--literal-pathspecs", "ls-files", "-z", "--", str(resolved.relative_to(root)),
                   cwd=root, ok=None)
    tracked = [name for name in proc.stdout.split(b"\0") if name] if proc.returncode == 0 else []
    if tracked:
        more = f" and {len(tracked) - 1} more" if len(tracked) > 1 else ""
        raise UsageError(
            f"{variable} puts the cache ({place}) among files the project's git tracks "
            f"({decode_path(tracked[0])}{more}): "
            "they are a commit's files (a pull request's, in a CI checkout), not this "
            "machine's cache, and nothing of them is used",
            hint=f"point {variable} outside the checkout (the default is "
                 "~/.cache/patchforge), and remove those files from the repository")


def _cache_variable() -> str:
    """The environment variable cache_dir() took the cache from."""
    if os.environ.get("PATCHFORGE_CACHE"):
        return "PATCHFORGE_CACHE"
    xdg = os.environ.get("XDG_CACHE_HOME")
    return "XDG_CACHE_HOME" if xdg and os.path.isabs(xdg) else "HOME"


_HEX40 = re.compile(r"[0-9a-f]{40}")
_GITLINK_MODE = "160000"  # a submodule: no blob of the store
_HEXABBREV = re.compile(r"[0-9a-fA-F]{4,40}")


# --------------------------------------------------------------------------------------------
# The store


# Above this many bytes of file contents the read cache starts over (a vLLM-sized overlay
# build reads a few hundred files; this bounds a pathological one).
_BLOB_CACHE_BYTES = 256 << 20


def _commit_records(out: bytes) -> list[tuple[str, list[str], bytes]]:
    """(commit, parents, message) of each record of a `git log --format=%x00%H %P%n%B`."""
    found = []
    for record in out.split(b"\0")[1:]:
        head, _, message = record.partition(b"\n")
        ids = head.decode().split()
        if ids:
            found.append((ids[0], ids[1:], message))
    return found


class TransferProgress(Protocol):
    """What UpstreamStore.progress is told about long work (the command line's display is one)."""

    def step(self, text: str) -> None:
        """A phase starts (`text` says which: downloading X, importing Y)."""

    def advance(self, done: int, total: int | None) -> None:
        """Bytes done in the current phase (of `total`, None when not known in advance).
        May be called from worker threads."""

    def done(self) -> None:
        """The work is over (a display clears its line)."""

    def waiting(self, text: str) -> None:
        """The command waits for another process (`text` says for whom and why)."""


def _lists_a_child_of(walk: bytes, commit: str) -> bool:
    """Whether a `git log --format=commit %H %P` walk lists a commit with `commit` among its
    parents. A commit's header is the only line starting with "commit " (the message is
    indented, a path line starts with ":"); its id comes first, its parents after it. Found by
    C-level searches for the id (a regular expression anchored at line starts would be tried
    at every byte of a walk of megabytes)."""
    needle = b" " + commit.encode()
    at = walk.find(needle)
    while at >= 0:
        end = at + len(needle)
        start = walk.rfind(b"\n", 0, at) + 1
        if walk.startswith(b"commit ", start) and at > start + len(b"commit") and \
                walk[end:end + 1] in (b"", b" ", b"\n"):
            return True
        at = walk.find(needle, end)
    return False


class HistoryDiffs:
    """start_commit_patches' answer: git's text read back from the cache (`answer`: bytes),
    or a started git (`answer`: its StartedGit) whose output `finish`, if given, turns into
    the answer once it has ended well (keeping what it holds). result() and close() as
    StartedGit's."""

    def __init__(self, answer: bytes | StartedGit,
                 finish: Callable[[bytes], bytes] | None = None) -> None:
        self._answer = answer
        self._finish = finish

    def result(self) -> bytes:
        if isinstance(self._answer, bytes):
            return self._answer
        out = self._answer.result()
        self._answer = out = self._finish(out) if self._finish is not None else out
        return out

    def close(self) -> None:
        if not isinstance(self._answer, bytes):
            self._answer.close()


# What git says when it cannot write into the store: a read-only mount, a directory it may not
# write ("Unable to create temporary file ...", "could not lock config file ...", "unable to
# create '...lock'", "insufficient permission for adding an object"); compiled when a failure
# is read (store.git._DAMAGE says why).
_UNWRITABLE = r"Read-only file system|Permission denied|insufficient permission"

# What git says when a lock file of its own is where it would take the lock (lockfile.c).
_LOCK_LEFT = (r"Unable to create '(?P<lock>[^'\n]+\.lock)': File exists"
              r"|could not lock config file (?P<config>[^\n]+): File exists")

# What git's fetch says when the remote was reached and does not have what was asked: a commit
# id it never had or no longer advertises, a ref gone between ls-remote and the fetch. Read
# here, where git's words are, so that callers tell "the source lacks it" from a network or
# login failure by RefNotFound's type, not by its text.
_REMOTE_LACKS = (r"not our ref|unadvertised object|couldn't find remote ref"
                 r"|no such remote ref")
UNWRITABLE_ERRNOS = (errno.EROFS, errno.EACCES, errno.EPERM)
# What git (curl, ssh) says when a remote could not be connected to or gave no answer: the
# network or the remote, not the URL's repository or a name, so the command exits 75
# (errors.EXIT_TEMPFAIL) and may be run again later. A refused login or a missing repository
# is an answer, and stays 2.
_NO_ANSWER = (r"Failed to connect to|Couldn't connect to server|Could not resolve host"
              r"|Connection refused|Connection timed out|Operation timed out|Operation too slow"
              r"|Network is unreachable|No route to host|Connection reset by peer"
              r"|The requested URL returned error: 50[234]")


def remote_gave_no_answer(message: str) -> bool:
    """Whether git's `message` says a remote could not be reached or gave no answer (_NO_ANSWER):
    a push or fetch a command runs itself is then retried later (exit 75), as the store's are."""
    return re.search(_NO_ANSWER, message) is not None


def unwritable_cache(cache: Path, detail: str) -> CacheUnwritable:
    """The error of a write the cache refused, naming the cache and what to do: a read-only
    cache made `new` and `edit` say "nothing was left half-written; run the command again",
    which failed the same way however often it was run."""
    return CacheUnwritable(f"the cache {cache} cannot be written ({detail}), and this "
                           "command must write to it",
                           hint=f"nothing in the project is wrong: make {cache} writable, or "
                                "point PATCHFORGE_CACHE at a directory patchforge may write (a "
                                "new cache fills itself from the upstreams' sources), then run "
                                "the command again")


def _unwritable_line(message: str) -> str:
    """The line of git's message that says what could not be written."""
    line = next((ln for ln in message.splitlines() if re.search(_UNWRITABLE, ln)), message)
    return re.sub(r"^.*?(?:error|fatal): ", "", line.strip())


def _lost(rev: str, path: str, oid: str) -> StoreError:
    """The store's trees list `path` at `rev`, but git does not give its object: read as
    absent, a file became "gone upstream" (status called every fix obsolete when the cache was
    emptied while it ran)."""
    return StoreError(f"{path} at {rev[:12]}: the store lists it, but does not have its "
                      f"content ({oid[:12]})",
                      hint="run `patchforge fetch` (with the network) and the command again; "
                           "a cache removed while a command ran leaves it so")


# Where _only_owner_fetches sends git's own fetches from another upstream's remote: a local
# path that is no repository, so the fetch fails at once without the network, after it has
# read the ids git writes to it. (A transport git may not use failed before reading them: git,
# still writing, died of the closed pipe, and the diff with it.)
_NO_REPOSITORY = "/dev/null/patchforge-not-this-upstream"

# store.git/info/attributes, above every .gitattributes of a tree the store holds (git reads
# it first, and before the user's core.attributesFile): the store's files are the pinned
# bytes, as the series' patches are made on them. `export --quilt` of a wheel or directory
# upstream prints `git --git-dir CACHE/store.git archive COMMIT | tar -x` to lay its files
# out at the pin, and git archive reads the archived tree's .gitattributes: an upstream's
# `export-ignore` left a patched file out (quilt push: "No file to patch"), `export-subst`
# and `ident` wrote the commit into `$Format:%H$` and `$Id$`, `text eol=crlf` (or the
# user's core.autocrlf) rewrote line ends; a full tree a check runs in, written by
# checkout-index, took the same conversions. Unset here, none of them applies.
STORE_ATTRIBUTES = (b"* -export-subst -export-ignore -text -eol -ident -filter "
                    b"-working-tree-encoding\n")


def _keep_attributes(git_dir: Path) -> None:
    """Write STORE_ATTRIBUTES to `git_dir`/info/attributes unless it holds them already (a
    store made before they were written), whole: a temporary file renamed into place. A cache
    that cannot be written is left as it is (every read it serves is of objects, which
    attributes do not change)."""
    path = git_dir / "info" / "attributes"
    try:
        if path.read_bytes() == STORE_ATTRIBUTES:
            return
    except OSError:
        pass
    try:
        path.parent.mkdir(exist_ok=True)
        temp = path.parent / f".attributes.{os.getpid()}.tmp"
        temp.write_bytes(STORE_ATTRIBUTES)
        os.replace(temp, path)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(path.parent / f".attributes.{os.getpid()}.tmp")


class UpstreamStore:
    """The bare repository `<cache>/store.git`.

    A second thread of the same command may read from it while the first goes on (the history
    a status judges against, a range-diff while the rebase writes): what they share in memory,
    the caches of contents and trees and the cat-file reader, is only touched under `_lock`
    (reads, prefetches, the reader's restart after a fetch). Git processes run outside it, side
    by side. Writes (fetches, imports, commits) are made by the command's own thread.
    """

    # zlib level for imported packs: level 1 costs about a third more time than 0 (stored) but
    # halves the disk used by a vLLM wheel (787 MB -> 343 MB); deltas are off (see import_wheel).
    PACK_COMPRESSION = 1

    def __init__(self, git_dir: Path) -> None:
        self.git_dir = Path(git_dir)
        self._cat = CatFile(self.git_dir, known_absent=self._known_absent)
        self._lock = threading.RLock()  # the caches below and their reads through self._cat
        self._ancestry: dict[tuple[str, str], bool] = {}
        self._renames: dict[tuple[str, str, tuple[str, ...]], dict[str, str]] = {}
        # (old, new, the files asked) -> src -> dst
        self._rename_splits: dict[tuple[str, str, tuple[str, ...]], dict[str, list[str]]] = {}
        # (old, new, the files asked) -> src -> the other added files as near it as its dst
        self._present: set[str] = set()  # blob ids known to be in the store (not promised)
        self._held: set[str] = set()  # ids _known_absent found in the store
        # (the configuration file's inode, size, mtime) -> whether it names a promisor remote
        self._promisor_config: tuple[tuple[int, ...], bool] | None = None
        # pack index file name -> (its fan-out table, its sorted object ids) (_held_by_packs)
        self._pack_ids: dict[str, tuple[tuple[int, ...], mmap.mmap]] = {}
        # Presence checks started ahead (start_presence_check): (the blob ids asked, the
        # `git rev-list` answering), each taken by the first _missing() it covers.
        self._checks: list[tuple[frozenset[str], StartedGit]] = []
        # Parsed trees (tree id -> {name: (mode, id)}) and, for full commit/tree ids only
        # (a ref can move), which tree a directory is: a series keeps asking about the same
        # few directories, and each question is otherwise a cat-file round trip plus a parse.
        self._tree_cache: dict[str, dict[bytes, tuple[str, str]]] = {}
        self._dir_trees: dict[tuple[str, str], str | None] = {}
        self._partial = False
        # The history's diffs kept per commit (start_commit_patches), opened when first asked.
        self._commit_diffs: commitdiffs.KeptCommitDiffs | None = None
        # Revisions (sorted commit ids) -> the upstreams (store namespaces) whose fetched
        # refs reach them (_owning_remotes): reachability from refs only ever grows.
        self._owners: dict[tuple[str, ...], set[str]] = {}
        # The promisor remotes and their URLs, read once for _only_owner_fetches (a remote
        # added later is then not shut out: as before, never less).
        self._remotes: tuple[list[str], dict[str, list[str]]] | None = None
        self._blobs: dict[str, dict[str, bytes | None]] = {}  # commit -> path -> content
        self._blob_ids: dict[str, bytes] = {}  # blob id -> content, for the same reads
        self._blob_bytes = 0
        # Who hears about long work (a wheel's download and import): None, or a
        # TransferProgress. The command line sets it; the store never prints.
        self.progress: TransferProgress | None = None
        self._write_lock = threading.RLock()  # see writing()
        self._writers = 0  # depth of the holding thread's hold on the store's write lock
        # remote_tag's answers, (url, tag) -> commit or None: a remote asked once per command.
        self._remote_tags: dict[tuple[str, str], str | None] = {}

    @contextlib.contextmanager
    def writing(self, wait: bool = True):
        """Hold the store's write lock: a kernel lock (`flock`) on `store.git/patchforge.lock`,
        waited for. The cache is shared by every project of the user, and two of them fetching
        one upstream at once had git refuse the second ref update ('cannot lock ref ...: is at
        X but expected Y') or the second configuration write; holding this around the
        remote's configuration, fetches, imports, ref updates and repacks makes them take
        turns. The kernel releases it however its holder exits. Re-entrant within a thread; the threads
        of one process take turns on `_write_lock`. Yields whether it holds the lock: always,
        unless `wait` is False and another process holds it (then it does not wait)."""
        with self._write_lock:
            if self._writers:
                self._writers += 1
                try:
                    yield True
                finally:
                    self._writers -= 1
                return
            import fcntl

            try:
                fd = os.open(self.git_dir / "patchforge.lock",
                             os.O_CREAT | os.O_RDWR | os.O_CLOEXEC, 0o644)
            except OSError:
                fd = None  # a read-only cache: nothing of ours will be written to it anyway
            try:
                if fd is not None and not wait:
                    try:
                        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    except BlockingIOError:
                        os.close(fd)
                        fd = None
                        yield False
                        return
                    except OSError:
                        os.close(fd)
                        fd = None
                    else:
                        write_holder(fd)
                elif fd is not None:
                    try:
                        self._lock_waiting(fd)
                    except OSError:
                        # A file system without locks (some network mounts): the writes go
                        # on unordered, as they did before there was a lock.
                        os.close(fd)
                        fd = None
                self._writers = 1
                try:
                    yield True
                finally:
                    self._writers = 0
                    if fd is not None:
                        try:
                            os.ftruncate(fd, 0)
                        except OSError:
                            pass
                        fcntl.flock(fd, fcntl.LOCK_UN)
            finally:
                if fd is not None:
                    os.close(fd)

    def _lock_waiting(self, fd: int) -> None:
        """Take the write lock on `fd`, saying first (through `progress`) that the command
        waits, and for which process, when another holds it: an import of a wheel takes
        minutes, and the command sat silent all that time. The holder's PID is in the file
        (written here once the lock is taken), as the project lock keeps it."""
        import fcntl

        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = read_holder(fd)
            if self.progress is not None:
                self.progress.waiting(
                    "waiting for another patchforge process"
                    + (f" ({holder_named(holder)})" if holder else "")
                    + f" writing to the shared cache {self.git_dir.parent} (a fetch or a "
                      "wheel's import) to finish")
            fcntl.flock(fd, fcntl.LOCK_EX)
        write_holder(fd)

    # ---- opening

    @classmethod
    def open(cls, cache: Path | None = None) -> "UpstreamStore":
        """Open `<cache>/store.git`, creating it (bare) on first use."""
        git_dir = Path(cache if cache is not None else cache_dir()) / "store.git"
        if not (git_dir / "HEAD").is_file():
            try:
                git_dir.parent.mkdir(parents=True, exist_ok=True)
                # A temp name then a rename: two processes creating the store at once both
                # succeed.
                tmp = Path(tempfiles.make_temp_dir(".store.git.", git_dir.parent))
            except OSError as exc:
                # A cache that names a file, or a place that cannot be written: said with the
                # setting that names it (an OS error alone said "run the command again").
                where = "PATCHFORGE_CACHE" if cache is None and os.environ.get(
                    "PATCHFORGE_CACHE") else "the cache directory"
                raise UsageError(f"{where} {git_dir.parent}: cannot make the store there "
                                 f"({exc.strerror or exc})",
                                 hint="point PATCHFORGE_CACHE at a directory patchforge may "
                                      "write") from None
            try:
                run_git("init", "-q", "--bare", "--template=", str(tmp))
                settings = [
                    # repositoryformatversion 1 lets promisor (partial clone) remotes work.
                    ("core.repositoryformatversion", "1"),
                    ("core.logAllRefUpdates", "false"),
                    ("gc.auto", "0"),
                    ("fetch.writeCommitGraph", "false"),
                    ("uploadpack.allowFilter", "true"),
                ]
                for key, value in settings:
                    run_git("config", key, value, git_dir=tmp)
                os.replace(tmp, git_dir)
            except StoreError as exc:
                tempfiles.remove_tree(tmp, ignore_errors=True)
                raise StoreError(f"cannot create the store at {git_dir}: {exc.message}") from exc
            except OSError as exc:
                # Somebody else created it first.
                tempfiles.remove_tree(tmp, ignore_errors=True)
                if not (git_dir / "HEAD").is_file():
                    if git_dir.exists() or git_dir.is_symlink():
                        # Something not a store in the store's place (a file, a directory
                        # not git's): said with it named ("Not a directory: .store.git.x"
                        # and "run the command again" pointed nowhere). Nothing is removed.
                        raise StoreDamaged(
                            f"{git_dir} is not a git repository patchforge can use as its "
                            f"store ({exc.strerror or exc})",
                            hint="move it out of the way (patchforge makes a new store there "
                                 "and fetches again), or point PATCHFORGE_CACHE elsewhere"
                        ) from None
                    raise
        check_store_config(git_dir)
        _keep_attributes(git_dir)
        store = cls(git_dir)
        store.prune_gone_remotes()
        return store

    def prune_gone_remotes(self) -> list[str]:
        """Take out of the store's configuration the remotes whose local path no longer exists
        (storeconfig.remotes_gone: a deleted project's or test's upstream), and return their
        names. A cache shared by many projects (a CI runner's, a developer's over months, a
        test suite's) collected one promisor remote per upstream, and git's own fetch of an
        object the store lacks asks every promisor remote in turn, one `git fetch` each.
        Their refs stay, and every object with them: a project whose upstream was deleted
        still reads its pin from the cache. Done under the store's write lock, re-read there,
        only when the lock is free (a read never waits for another process's import for
        this) and the cache can be written; the file is replaced as git replaces it (under
        `config.lock`), so a git process reads it whole, before or after. A remote whose path
        comes back is configured again by the next command of its project (keep_remote)."""
        if not remotes_gone(self.git_dir) or not self.writable():
            return []
        with self.writing(wait=False) as held:
            if not held:
                return []
            gone = remotes_gone(self.git_dir)
            if gone and not self._remove_remotes(set(gone)):
                gone = []
        self._remotes = None
        return gone

    def _remove_remotes(self, names: set[str]) -> bool:
        """Remove the `[remote "NAME"]` sections of `names` from the store's configuration, in
        one write under git's own lock file; False when git holds that lock (another time)."""
        path = self.git_dir / "config"
        lock = self.git_dir / "config.lock"
        fd: int | None
        try:
            fd = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
        except OSError:
            return False
        try:
            try:
                text = path.read_bytes().decode("utf-8")
                mode = path.stat().st_mode & 0o777
            except (OSError, UnicodeDecodeError):
                text = None
            kept = without_remotes(text, names) if text is not None else None
            if kept is None:
                os.close(fd)
                fd = None
                os.unlink(lock)
                for name in sorted(names):  # (a file git wrote otherwise: git removes them)
                    self._run("config", "--remove-section", f"remote.{name}", ok=None)
                return True
            os.write(fd, kept.encode("utf-8"))
            os.fchmod(fd, mode)
            os.fsync(fd)
            os.close(fd)
            fd = None
            os.replace(lock, path)
            return True
        except BaseException:
            if fd is not None:
                os.close(fd)
            with contextlib.suppress(OSError):
                os.unlink(lock)
            raise

    def keep_remote(self, namespace: str, url: str) -> None:
        """The remote of a git upstream a command reads from, configured again when the store
        lacks it (prune_gone_remotes took it out while its local path was gone, and the path
        is back): its missing files are fetched from it by name. Nothing when it is there, its
        path is still gone, the cache cannot be written, or the store never fetched from it
        (no ref of it: a new cache, or a project not fetched yet), where the fetch of its pin
        configures it: a remote written ahead of that made git fetch the pin on demand the
        first time the command asked whether the store held it, and `fetch` said "already in
        the cache" of a pin it had just fetched."""
        if self._remotes is None:
            self._remotes = store_remotes(self.git_dir)
        if namespace in self._remotes[1]:
            return
        path = local_path(url)
        if (path is not None and not os.path.lexists(path)) or not self.writable():
            return
        try:
            if not self._out("for-each-ref", "--count=1", "--format=%(refname)",
                             f"refs/patchforge/remotes/{namespace}/").strip():
                return
            with self.writing():
                self._configure_remote(namespace, url)
        except CacheLockLeft:
            return  # (as below: a fetch that needs the remote says the file left)
        except StoreDamaged:
            raise
        except StoreError:
            return  # (its files the store holds are read as they are; a fetch says more)
        self._remotes = None
        self._cat.restart()  # (it read the configuration at its start)

    def start_reading(self) -> None:
        """Start the persistent `git cat-file` now instead of at the first read."""
        self._cat.start()

    def close(self) -> None:
        checks, self._checks = self._checks, []
        for _, check in checks:
            check.close()
        maps, self._pack_ids = self._pack_ids, {}
        for _, mapped in maps.values():
            mapped.close()  # (before a repack removes the indexes they map)
        # The upkeep (a listing of the temporary directory and of the packs) runs while
        # cat-file, its input closed, exits.
        self._cat.close(meanwhile=self.maintain)
        if self._commit_diffs is not None:
            self._commit_diffs.bound()

    # Above this many packs the store is repacked (every fetch and import adds one; git itself
    # would gc, but the store runs with gc.auto=0 so that no command pauses at random). Every
    # git process opens each pack's index, so its start-up grows with the number of packs.
    MAX_PACKS = 64

    # Scratch files a killed process leaves are removed once they are this old (seconds): a
    # running fetch keeps writing its tmp_pack_*, a running range-diff lasts seconds.
    STALE_SCRATCH_AGE = 3600

    def remove_stale_scratch(self, now: float | None = None) -> list[Path]:
        """Remove what kills left behind: git's `tmp_pack_*`/`tmp_idx_*` in the store,
        half-created stores beside it and `patchforge-rangediff-*` directories in the temporary
        directory. Returns what it removed."""
        now = time.time() if now is None else now
        places = [(self.git_dir / "objects" / "pack", ("tmp_pack_", "tmp_idx_", "tmp_rev_")),
                  (self.git_dir.parent, (".store.git.",)),
                  (Path(tempfiles.temp_root()), ("patchforge-rangediff-",))]
        removed = []
        for directory, prefixes in places:
            try:
                entries = list(os.scandir(directory))
            except OSError:
                continue
            for entry in entries:
                if not entry.name.startswith(prefixes):
                    continue
                try:
                    if now - entry.stat(follow_symlinks=False).st_mtime < self.STALE_SCRATCH_AGE:
                        continue
                    if entry.is_dir(follow_symlinks=False):
                        tempfiles.remove_tree(entry.path)
                    else:
                        os.unlink(entry.path)
                    removed.append(Path(entry.path))
                except OSError:
                    pass  # another user's, or gone meanwhile
        return removed

    def maintain(self) -> bool:
        """Repack into one pack (plus one for promised objects) when there are too many packs.
        No delta search (`--window=0`): a wheel's binaries would cost minutes for little gain,
        and deltas git already has are kept. True when it repacked. Stale scratch files of
        killed processes go first."""
        self.remove_stale_scratch()
        try:
            packs = sum(1 for name in os.listdir(self.git_dir / "objects" / "pack")
                        if name.endswith(".pack"))
        except OSError:  # none yet; or objects/ a file (damage git names at its first read)
            return False
        if packs <= self.MAX_PACKS:
            return False
        with self.writing():
            self._run("-c", "repack.writeBitmaps=false", "repack", "-a", "-d", "-q",
                      "--window=0", what="repacking the store")
        return True

    def __enter__(self) -> "UpstreamStore":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ---- running git in the store

    def _run(self, *args: str, input: bytes | None = None, ok: tuple[int, ...] | None = (0,),
             env: dict[str, str] | None = None, what: str | None = None,
             network: bool = False, spool: bool = False) -> subprocess.CompletedProcess:
        """git in the store; `network` for a command that reaches a remote: it reads the user's
        git configuration (store.git.run_git's user_config). Offline, such a command is
        refused before git starts (each caller that can do without says so first)."""
        if network and is_offline():
            raise StoreError(f"offline: {what or 'git ' + args[0]} needs the network",
                             hint="run the command without --offline")
        try:
            return run_git(*args, git_dir=self.git_dir, input=input, env=env, ok=ok, what=what,
                           user_config=network, spool=spool)
        except StoreDamaged:
            raise
        except StoreError as exc:
            if re.search(_UNWRITABLE, exc.message) and not self.writable():
                raise unwritable_cache(self.git_dir.parent, _unwritable_line(exc.message)) \
                    from None
            left = self._lock_left(exc.message)
            if left is not None:
                raise left from None
            if network and re.search(_NO_ANSWER, exc.message):
                exc.gave_up = True  # the remote did not answer: exit 75, run it again later
            raise

    def _lock_left(self, message: str) -> CacheLockLeft | None:
        """CacheLockLeft when git could not write because one of its lock files is in the
        store. The store's refs and configuration are written under its write lock
        (writing()), so such a file is a killed git process's (an out-of-memory kill, a CI
        job's hard timeout, as it wrote a ref or the configuration), and it refuses that
        write for good: said as an
        attempt at a name, a fetch of a pin ended in "has no branch or tag" and "check the
        name", of a tag the upstream has."""
        match = re.search(_LOCK_LEFT, message)
        if match is None:
            return None
        lock = match.group("lock") or match.group("config") + ".lock"
        inside = os.path.abspath(lock).startswith(os.path.abspath(self.git_dir) + os.sep)
        if not inside:
            return None
        return CacheLockLeft(
            f"the cache's git store {self.git_dir} holds a lock file a git process left: "
            f"{lock} (git cannot write {os.path.basename(lock)[:-len('.lock')]} while it "
            f"is there)",
            hint=f"nothing in the project is wrong and no pin needs to change: a git process "
                 f"killed while it wrote to the cache leaves it; if no git or patchforge "
                 f"command is running on this cache, remove {lock} and run the command again")

    def writable(self) -> bool:
        """Whether this process may add objects and refs to the store (a read-only cache
        still serves every read)."""
        return all(os.access(self.git_dir / sub, os.W_OK) for sub in ("objects", "refs", "."))

    def require_writable(self) -> None:
        """CacheUnwritable, naming the cache, unless the store can be written: asked before a
        command writes anything of the project that its later writes to the store complete."""
        if not self.writable():
            raise unwritable_cache(self.git_dir.parent, f"{self.git_dir} is not writable")

    def _out(self, *args: str, **kw) -> str:
        return self._run(*args, **kw).stdout.decode("utf-8", "surrogateescape")

    # ---- reading

    def resolve(self, rev: str) -> str:
        """The 40-hex commit id of `rev` (any commit-ish); StoreError if unknown."""
        got = self._cat.query([f"{rev}^{{commit}}"])[0]
        if got is None:
            raise StoreError(f"unknown revision {rev!r} in the upstream store",
                             hint="fetch or import the upstream first")
        return got[0]

    def tree_id(self, rev: str) -> str:
        got = self._cat.query([f"{rev}^{{tree}}"])[0]
        if got is None:
            raise StoreError(f"unknown revision {rev!r} in the upstream store")
        return got[0]

    def read_blob(self, rev: str, path: str) -> bytes | None:
        """The content of `path` at `rev`, None when the path is absent (or not a file)."""
        return self.read_blobs(rev, [path])[path]

    def read_blobs(self, rev: str, paths: list[str], *,
                   fetch_together: bool = True) -> dict[str, bytes | None]:
        """Several files of one revision through one round of requests. In a partial store,
        the missing ones are first fetched together (a check that costs a git process);
        `fetch_together=False` leaves a missing one to git's own fetch on demand, for a caller
        whose files a run has brought in already (a resumed rebase's)."""
        rev = self._pin(rev)
        for path in paths:
            check_path(path)
        # Files read already are answered without the lock: a thread reading ahead holds it
        # while git inflates its next round, and the walk would wait for that round to take
        # what the cache has. (Each lookup is one dictionary access, atomic; the cache only
        # ever gains entries or is replaced whole, never changed in place.)
        cache = self._blobs.get(rev)
        if cache is not None:
            try:
                return {p: cache[p] for p in paths}
            except KeyError:
                pass
        with self._lock:
            return self._read_blobs(rev, paths, fetch_together)

    def _read_blobs(self, rev: str, paths: list[str],
                    fetch_together: bool) -> dict[str, bytes | None]:
        # Files of a full commit id (`rev` is pinned to one) never change: a series reads the
        # same few files again and again (each patch, the judge, the range-diff), so they are
        # kept for the process.
        cache = self._blobs.setdefault(rev, {})
        asked = [p for p in dict.fromkeys(paths) if p not in cache]
        if asked:
            # By blob id, each content once: a rebase reads every file of the series at the
            # base and at the target, and the files upstream did not change between the two
            # (often most of them) are the same blobs. The trees say which blob a path is.
            if fetch_together:
                self._prefetch(rev, asked)
            entries = self._entries(rev, {p: self._split(p) for p in asked}, False)
            wanted = sorted({e[1] for e in entries.values()
                             if e is not None and e[1] not in self._blob_ids})
            # Those asked ahead (read_ahead) are taken as git gives them; the others asked now,
            # with any that git called missing when asked ahead (a partial store has fetched
            # it since, above).
            ahead = [oid for oid in wanted if self._cat.asked(oid)]
            early = [(oid, self._cat.answer(oid)) for oid in ahead]
            asked_ahead = set(ahead)
            now = [oid for oid in wanted if oid not in asked_ahead]
            now += [oid for oid, answer in early if answer is None]
            answers = [*early, *zip(now, self._cat.query(now) if now else [])]
            for oid, answer in answers:
                if answer is not None and answer[1] == "blob":
                    self._blob_ids[oid] = answer[2]
                    self._blob_bytes += len(answer[2])
            lost = sorted({entry[1] for entry in entries.values()
                           if entry is not None and entry[1] not in self._blob_ids})
            if lost:
                self._bring_lost(lost, {entry[1]: (rev, path) for path, entry in entries.items()
                                        if entry is not None})
            for path, entry in entries.items():
                if entry is not None and entry[1] not in self._blob_ids:
                    raise _lost(rev, path, entry[1])
                cache[path] = self._blob_ids.get(entry[1]) if entry is not None else None
        if asked and self._blob_bytes > _BLOB_CACHE_BYTES:
            found = {p: cache[p] for p in paths}
            self._blobs.clear()
            self._blob_ids.clear()
            self._blob_bytes = 0
            return found
        return {p: cache[p] for p in paths}

    def _bring_lost(self, oids: list[str], where: dict[str, tuple[str, str]]) -> None:
        """Blobs the trees list that cat-file did not give, asked once more before they are
        called lost. Two commands on a new cache at once: this process's cat-file can start
        before another process has made the store partial, and then neither knows the
        promisor remote nor fetches a missing blob on demand, so `overlays` beside another
        project's `fetch` failed with "the store lists it, but does not have its content".
        A partial store online fetches them here, and a new cat-file (which reads the
        configuration and the packs afresh) is asked."""
        if self._is_partial() and not is_offline():
            self._fetch_missing(set(oids), where)
        self._cat.restart()
        for oid, answer in zip(oids, self._cat.query(oids)):
            if answer is not None and answer[1] == "blob":
                self._blob_ids[oid] = answer[2]
                self._blob_bytes += len(answer[2])

    def read_ahead(self, files: list[tuple[str, str]]) -> None:
        """Ask git now for the contents of `files` ((rev, path), in the order the caller will
        read them with read_blobs): git reads them (inflating the store's deltas) while the
        caller works, instead of while it waits for a round of requests. The files must be in
        the store (prefetch() brings a partial store's missing ones first); a path absent at
        its revision is left out."""
        pinned = {rev: self._pin(rev) for rev in dict.fromkeys(rev for rev, _ in files)}
        by_rev: dict[str, list[str]] = {}
        for rev, path in files:
            by_rev.setdefault(pinned[rev], []).append(path)
        with self._lock:
            found = {rev: self._entries(rev, {p: self._split(p) for p in paths}, False)
                     for rev, paths in by_rev.items()}
            oids = [found[pinned[rev]][path] for rev, path in files]
            self._cat.ahead(list(dict.fromkeys(
                entry[1] for entry in oids if entry is not None and entry[1] not in self._blob_ids)))

    def blob_id(self, rev: str, path: str) -> str | None:
        found = self.entry(rev, path)
        return found[1] if found is not None else None

    def entry(self, rev: str, path: str) -> tuple[str, str] | None:
        """(mode, blob id) of a file at `rev`, None when absent or a directory."""
        return self.entries(rev, [path])[path]

    def entries(self, rev: str, paths: list[str], *, directories: bool = False,
                links: bool = False) -> dict[str, tuple[str, str] | None]:
        """entry() of several paths, their directories asked of cat-file in one round. With
        `directories`, a directory is an entry too (mode 040000) instead of None; with
        `links`, a submodule (mode 160000, its commit's id)."""
        split = {path: self._split(path) for path in paths}
        if _HEX40.fullmatch(rev):
            # Directories read already are answered without the lock, as read_blobs answers
            # files (the thread reading ahead holds it while git answers): a directory's tree
            # is kept before its id is, and neither is ever dropped.
            try:
                trees = {parent: self._dir_trees[(rev, parent)] for parent, _ in split.values()}
            except KeyError:
                pass
            else:
                return self._entries_in(trees, split, directories, links)
        with self._lock:
            return self._entries(rev, split, directories, links)

    def read_trees_ahead(self, revs: list[str], paths) -> None:
        """Ask git now for the trees entries() will read for `paths` (and every directory on
        their way) at each of `revs` (full commit ids): git reads them while the caller works
        (a rebase parses the rest of its series), and the lookups take the answers instead of
        waiting for a round of requests. Only a read ahead: a path refused by check_path is
        left to the lookup that refuses it."""
        directories: set[str] = set()
        for path in paths:
            try:
                parent, _ = self._split(path)
            except StoreError:
                continue
            parts = parent.split("/") if parent else []
            directories.update("/".join(parts[:depth]) for depth in range(len(parts) + 1))
        names = [self._tree_name(rev, directory) for rev in revs if _HEX40.fullmatch(rev)
                 for directory in sorted(directories) if (rev, directory) not in self._dir_trees]
        if names:
            self._cat.ahead(names)

    @staticmethod
    def _tree_name(rev: str, directory: str) -> str:
        """cat-file's name for the tree of `directory` ("" the root) at `rev`."""
        return f"{rev}^{{tree}}:{directory}" if directory else f"{rev}^{{tree}}"

    @staticmethod
    def _split(path: str) -> tuple[str, bytes]:
        """(directory, name) of a checked path, as _entries takes it."""
        raw_parent, _, name = check_path(path).rpartition(b"/")
        return decode_path(raw_parent), name

    def _entries(self, rev: str, split: dict[str, tuple[str, bytes]],
                 directories: bool, links: bool = False) -> dict[str, tuple[str, str] | None]:
        return self._entries_in(self._trees_of(rev, sorted({parent for parent, _ in
                                                            split.values()})),
                                split, directories, links)

    def _entries_in(self, trees: dict[str, str | None], split: dict[str, tuple[str, bytes]],
                    directories: bool,
                    links: bool = False) -> dict[str, tuple[str, str] | None]:
        """_entries' answer from the trees of the paths' directories (directory -> tree id)."""
        found: dict[str, tuple[str, str] | None] = {}
        for path, (parent, name) in split.items():
            tree = trees[parent]
            hit = self._tree_cache[tree].get(name) if tree is not None else None
            if directories and hit is not None and hit[0] == "40000":
                found[path] = ("040000", hit[1])
                continue
            found[path] = None if hit is None or hit[0] == "40000" or \
                (hit[0] == "160000" and not links) else (hit[0].rjust(6, "0"), hit[1])
        return found

    def _trees_of(self, rev: str, directories: list[str]) -> dict[str, str | None]:
        """directory -> tree id at `rev` (None when it is not a directory there)."""
        cacheable = bool(_HEX40.fullmatch(rev))
        result = {d: self._dir_trees[(rev, d)] for d in directories
                  if cacheable and (rev, d) in self._dir_trees}
        asked = [d for d in directories if d not in result]
        if asked:
            # Those read ahead (read_trees_ahead) are taken as git gives them, the rest asked
            # in one round. A directory git called missing when asked ahead is missing, unless
            # the commit itself was (its root read as missing, or not known then): it may have
            # come into the store since (a fetch), and its files would read as absent.
            names = [self._tree_name(rev, d) for d in asked]
            early = {name: self._cat.answer(name) for name in names if self._cat.asked(name)}
            root = self._tree_name(rev, "")
            if not (early.get(root) or (cacheable and self._dir_trees.get((rev, "")))):
                early = {name: answer for name, answer in early.items() if answer is not None}
            now = iter(self._cat.query([name for name in names if name not in early])
                       if len(early) < len(names) else [])
            got = [early[name] if name in early else next(now) for name in names]
            for directory, answer in zip(asked, got):
                tree = answer[0] if answer is not None and answer[1] == "tree" else None
                if answer is not None and tree is not None and tree not in self._tree_cache:
                    self._tree_cache[tree] = parse_tree(answer[2])
                result[directory] = tree
            if None in result.values() and not (result.get("") or
                                                (cacheable and self._dir_trees.get((rev, "")))):
                self._require_revision(rev)
            if cacheable:
                # Only once the commit is known to be here: a directory read as missing while
                # the commit was not would stay missing after a fetch brings it.
                for directory in asked:
                    self._dir_trees[(rev, directory)] = result[directory]
            for directory in asked:
                if result[directory] is None and directory:
                    # Absent only if its parent's tree, read before, does not list it as a
                    # directory: one it lists whose tree git cannot give has left the store.
                    parent, name = self._split(directory)
                    listed = self._tree_cache.get(self._dir_trees.get((rev, parent)) or "", {})
                    hit = listed.get(name)
                    if hit is not None and hit[0] == "40000":
                        raise _lost(rev, directory, hit[1])
        return result

    def _require_revision(self, rev: str) -> None:
        """StoreError when `rev` itself is not in the store: its paths are then unknown, not
        absent (a pin before `patchforge fetch` read as an empty tree made every file of it
        "not in the upstream")."""
        got = self._cat.query([f"{rev}^{{tree}}"])[0]
        if got is None or got[1] != "tree":
            raise StoreError(f"unknown revision {rev!r} in the upstream store",
                             hint="fetch or import the upstream first (`patchforge fetch`)")
        if _HEX40.fullmatch(rev):
            self._dir_trees[(rev, "")] = got[0]
            if got[0] not in self._tree_cache:
                self._tree_cache[got[0]] = parse_tree(got[2])

    def blobs_by_id(self, oids: list[str]) -> dict[str, bytes]:
        """The contents of blobs by id (full ids), those read before taken from what the store
        keeps, the others asked of cat-file in one round; an id that is no blob is left out."""
        with self._lock:
            found = {oid: self._blob_ids[oid] for oid in oids if oid in self._blob_ids}
            asked = [oid for oid in dict.fromkeys(oids) if oid not in found]
            for oid, answer in zip(asked, self._cat.query(asked) if asked else []):
                if answer is not None and answer[1] == "blob":
                    found[oid] = answer[2]
        return found

    def read_blob_id(self, oid: str) -> bytes:
        got = self._cat.query([oid])[0]
        if got is None or got[1] != "blob":
            raise StoreError(f"blob {oid} is not in the upstream store")
        return got[2]

    def trees_of(self, commits: list[str]) -> dict[str, str | None]:
        """Each commit's tree id, None for one the store does not have, asked of cat-file in
        one round."""
        asked = [c for c in dict.fromkeys(commits) if _HEXABBREV.fullmatch(c)]
        answers = self._cat.query([f"{c}^{{tree}}" for c in asked]) if asked else []
        trees: dict[str, str | None] = dict.fromkeys(commits)
        trees.update((c, got[0] if got is not None else None) for c, got in zip(asked, answers))
        return trees

    def parents_of(self, commits: list[str]) -> dict[str, str | None]:
        """Each commit's first parent (`resolve(commit + "^1")`), None for a root commit or
        one the store does not have, asked of cat-file in one round."""
        asked = list(dict.fromkeys(commits))
        answers = self._cat.query([f"{c}^1^{{commit}}" for c in asked]) if asked else []
        return {c: got[0] if got is not None else None for c, got in zip(asked, answers)}

    def has_object(self, oid: str) -> bool:
        """Whether the store holds `oid` (a commit, a tag or a tree: the callers' ids), told
        without a fetch: a partial store's git fetched an id it lacks on demand from every
        upstream's remote in turn (_known_absent)."""
        if not _HEXABBREV.fullmatch(oid):
            return False
        if len(oid) == 40 and self._known_absent({oid.lower()}):
            return False
        return self._cat.query([oid])[0] is not None

    def _known_absent(self, oids: set[str]) -> set[str]:
        """Those of `oids` (full ids) that the store does not hold, told from its pack indexes
        and loose objects (_held_by_packs), without a git process; nothing when that is not
        known (a multi-pack index, alternates) or when the store is complete (git fetches
        nothing then). Asked about an id a partial store lacks (a kept fix's base, a pull
        request's merge commit, a wheel import not made yet), git's own fetch on demand tries
        every promisor remote of the store in turn, one `git fetch` each: with the remotes of
        a few hundred projects in one cache, a `status` took minutes. Only a blob can be
        missing from the store and yet promised (the fetches are blob-less): the callers ask
        about commits and what they reach. A store not partial yet is screened too when it
        has a promisor remote (a new cache whose first fetch configured its upstream and
        failed, or is still to come): git fetches on demand from a remote so configured
        whatever the store holds, and a fetch that asked first whether the store held its pin
        found it (git had fetched it on demand) and said "already in the cache"."""
        unknown = oids - self._held
        if not unknown or not (self._is_partial() or self._has_promisor_remote()):
            return set()
        held = self._held_by_packs(unknown)
        if held is not None and held != unknown:
            # Looked for again, the packs listed anew: `git gc` writes the pack that holds a
            # loose object before it deletes that object, so an id found in neither place by
            # the first look (its pack listed before it was written, its loose file read after
            # it was deleted) is in the second look's packs. An id in neither look was not in
            # the store when the first one listed the packs.
            again = self._held_by_packs(unknown - held)
            held = None if again is None else held | again
        if held is None:
            return set()
        self._held.update(held)  # (objects never leave the store: each id looked for once)
        return unknown - held

    def _has_promisor_remote(self) -> bool:
        """Whether the store's configuration names a promisor remote (git fetches an object it
        lacks on demand then), read from the file again only when it changed (a store that
        is complete without one, a wheel's, is asked this at each read)."""
        path = self.git_dir / "config"
        try:
            st = path.stat()
            key: tuple[int, ...] = (st.st_ino, st.st_size, st.st_mtime_ns)
        except OSError:
            key = ()
        if self._promisor_config is None or self._promisor_config[0] != key:
            self._promisor_config = (key, bool(store_remotes(self.git_dir)[0]))
        return self._promisor_config[1]

    def list_paths(self, rev: str, prefix: str | None = None) -> list[str]:
        """Every file path at `rev` (under directory `prefix` if given), in git's order."""
        args = ["ls-tree", "-r", "-z", "--name-only", "--full-tree", self._pin(rev)]
        if prefix:
            args += ["--", prefix.rstrip("/")]
        out = self._run(*args, what="listing files").stdout
        return [decode_path(p) for p in out.split(b"\0") if p]

    def check_readable(self, commit: str) -> None:
        """Whether git can read every object of `commit`'s tree (its trees, and the files a
        store of all files holds: git's own walk, `rev-list --objects --no-walk`, which finds
        each object without inflating it): StoreDamaged naming the damaged file, or the
        missing object, when it cannot. Finding the commit object alone (has_object) said
        nothing of the pack its files are in: `fetch` said "already in the cache" of a pin
        in a damaged pack, which every other command then refused. A partial store lacks
        files by design: there only what git calls damaged is."""
        proc = self._run("rev-list", "--objects", "--no-walk", "--missing=print", commit,
                         ok=None, what="reading the pinned tree", spool=True)
        err = proc.stderr.decode("utf-8", "replace").strip()
        damaged = damage_error(err, self.git_dir)
        if damaged is not None:
            raise damaged
        if proc.returncode != 0:
            raise StoreError(f"reading the pinned tree failed: {err or proc.returncode}")
        missing = [line[1:].decode() for line in proc.stdout.split(b"\n")
                   if line.startswith(b"?")]
        if missing and not self._is_partial():
            raise StoreDamaged(
                f"the cache's git store {self.git_dir} is damaged: object {missing[0]} of "
                f"revision {commit[:12]} is missing" + (f" (and {len(missing) - 1} more)"
                                                        if len(missing) > 1 else ""),
                hint=f"nothing in the project is wrong and no pin needs to change: move "
                     f"{self.git_dir} aside (or remove it), and the next command fetches and "
                     f"imports the pinned revisions again")

    def check_a_file_readable(self, rev: str) -> None:
        """Read one file of `rev` (the first of its root tree, or of the first directory down
        that has one): a partial store brings it as every later read would, so a source no
        file can be had from (a blob-less mirror: _refuse_partial_source) is said now, with
        one small fetch, rather than by the first `new` or `edit`."""
        tree = self.tree_id(rev)
        prefix = ""
        for _ in range(8):
            entries = sorted(self._read_tree(tree).items())
            for name, (mode, _) in entries:
                if mode.startswith("100"):
                    try:
                        check_path(prefix + decode_path(name))
                    except PatchforgeError:
                        continue  # a name no patch could touch: another file says as much
                    self.read_blobs(rev, [prefix + decode_path(name)])
                    return
            below = next(((name, oid) for name, (mode, oid) in entries if mode == TREE_MODE),
                         None)
            if below is None:
                return
            prefix += decode_path(below[0]) + "/"
            tree = below[1]

    def _pin(self, rev: str) -> str:
        # Full ids go straight to cat-file; anything else is resolved once, so a request list
        # never mixes two readings of a moving ref.
        return rev if _HEX40.fullmatch(rev) else self.tree_id(rev)

    # ---- partial clones: fetch missing blobs in one go

    def _promisor_remotes(self) -> list[str]:
        out = self._run("config", "--get-regexp", r"^remote\..*\.promisor$", ok=(0, 1)).stdout
        names = []
        for line in out.decode("utf-8", "replace").splitlines():
            key, _, value = line.partition(" ")
            if value.strip().lower() in ("true", "1", "yes", "on"):
                names.append(key[len("remote."):-len(".promisor")])
        return names

    def prefetch(self, wanted: list[tuple[str, list[str]]]) -> None:
        """Make sure the files of several revisions, [(rev, paths)], are in the store, with one
        check (and at most one fetch) for all of them; then read_blobs() of them asks nothing
        more of git than the contents."""
        with self._lock:
            if self._is_partial():
                where = {found[1]: (rev, path) for rev, paths in wanted
                         for path, found in self.entries(self._pin(rev), paths).items()
                         if found is not None and found[1] not in self._present}
                self._fetch_missing(set(where), where)

    def start_presence_check(self, wanted: list[tuple[str, list[str]]]) -> None:
        """prefetch()'s check of a partial store for the missing files of several revisions,
        [(rev, paths)], begun now in a git process that runs while the caller goes on: the
        prefetch() of those files takes its answer instead of starting the check then and
        waiting for it. Nothing is fetched here (prefetch does that)."""
        with self._lock:
            if not self._is_partial():
                return
            oids = {found[1] for rev, paths in wanted
                    for found in self.entries(self._pin(rev), paths).values()
                    if found is not None and found[1] not in self._present}
            # Those the pack indexes name are there (_fetch_missing would not ask git of them):
            # a store holding every file starts no process.
            held = self._held_by_packs(oids) if oids else None
            if held:
                self._present.update(held)
                oids.difference_update(held)
            if oids:
                asked = sorted(oids)
                self._checks.append((frozenset(asked), self._start_missing(asked)))

    def _prefetch(self, rev: str, paths: list[str]) -> None:
        """Bring the missing blobs of a partial store's `paths` at `rev` with one fetch instead
        of one per blob, from the upstream the revision is of (_owning_remotes). A single file
        too: left to git's own fetch on demand, it was asked of every upstream's remote in
        turn (and offline, git refuses that fetch and cat-file would report the file's blob
        as missing, as if the file were not there)."""
        if self._is_partial():
            self.prefetch([(rev, paths)])

    def _fetch_missing(self, wanted: set[str],
                       where: dict[str, tuple[str, str]] | None = None) -> None:
        # What the pack indexes name is there (most often all of it: the files and history
        # a command reads again), told without _missing's `git rev-list`: 2-3 ms of CPU a
        # process, waited for by the asking thread, 8 in a warm `status --against main` of
        # the AITER series (7 of them history questions on the main thread).
        held = self._held_by_packs(wanted) if wanted else None
        if held:
            self._present.update(held)
            wanted = wanted.difference(held)
        if not wanted:
            return
        missing = self._missing(sorted(wanted))
        if missing and is_offline():
            named = sorted(f"{where[m][1]} at {where[m][0][:12]}" if where and m in where else m
                           for m in missing)
            more = f" and {len(named) - 3} more" if len(named) > 3 else ""
            raise StoreError(f"offline: the store does not hold {', '.join(named[:3])}{more} "
                             "(a partial clone brings files when they are first read)",
                             hint="run the command once without --offline, or `patchforge "
                                  "fetch` (it brings the files the series touches)")
        asked = []
        failed: list[tuple[str, bytes]] = []  # (remote, what git said) of each fetch that failed
        for remote in self._owning_remotes(missing, where) if missing else ():
            if not missing:
                break
            asked.append(remote)
            proc = self._run("-c", "fetch.negotiationAlgorithm=noop", "fetch", remote,
                             "--no-tags", "--no-write-fetch-head", "--recurse-submodules=no",
                             "--filter=blob:none", "--stdin",
                             input="".join(m + "\n" for m in missing).encode(),
                             ok=(0, 1, 128), network=True)
            if proc.returncode != 0:
                failed.append((remote, proc.stderr))
            missing = self._missing(missing)
        if missing:
            self._refuse_partial_source(asked, missing, where)
            if failed and len(failed) == len(asked):
                raise self._not_sent(failed[0], missing, where)
        # Objects never leave the store: remember the present ones, so that reading the same
        # files again (every patch of a series on one file) costs no `rev-list` process.
        self._present.update(wanted.difference(missing))

    def _refuse_partial_source(self, remotes: list[str], missing: list[str],
                               where: dict[str, tuple[str, str]] | None) -> None:
        """SourceUnusable when a remote asked for `missing` is a partial clone on this machine
        (a blob-less mirror): its upload-pack never fetches what it lacks for another
        repository, so no file it lacks can ever be read through it, and git's own fetch on
        demand (a reader's) only failed again with its raw words ("lazy fetching disabled",
        "could not fetch ... from promisor remote"). Said with the upstream, the file, the
        revision and the ways on; nothing to say (None) of a remote that is no such clone."""
        if self._remotes is None:
            self._remotes = store_remotes(self.git_dir)
        urls = self._remotes[1]
        for remote in remotes:
            for url in urls.get(remote, []):
                mirror = partial_local_repository(url)
                if mirror is None:
                    continue
                import shlex

                first = missing[0]
                what = (f"{where[first][1]} at {where[first][0][:12]}" if where and first in where
                        else f"object {first[:12]}")
                more = f" (and {len(missing) - 1} more files)" if len(missing) > 1 else ""
                origin, origin_url = self._origin_of(mirror)
                mirror_said = shlex.quote(str(mirror))
                raise SourceUnusable(
                    f"upstream {remote.rpartition('.')[0] or remote}: its repository {mirror} is "
                    f"a partial clone (`git clone --filter`) that lacks {what}{more}; git never "
                    "fetches a missing file through a partial clone for another repository, so "
                    "no file it lacks can be read from it",
                    hint="make the upstream's url the repository it was cloned from" + (f" ({redact(origin_url)})" if origin_url else "")
                         + f", or make {mirror_said} a full clone (`git -C {mirror_said} config "
                           f"--unset-all remote.{origin}.partialclonefilter && git -C "
                           f"{mirror_said} fetch --refetch {origin}`)")

    def _not_sent(self, failure: tuple[str, bytes], missing: list[str],
                  where: dict[str, tuple[str, str]] | None) -> StoreError:
        """The error for files of the store's remote `failure[0]` that its fetch (which failed,
        git saying `failure[1]`) did not bring: the upstream, its URL, the file and revision,
        and git's last line, instead of git's own fetch on demand failing next in a reader
        ("git cat-file stopped: fatal: expected 'packfile' ... could not fetch ... from
        promisor remote"). A remote that gave no answer is said so (exit 75); otherwise a
        blob-less partial clone served as the upstream (over http, ssh or git://, where it
        cannot be seen as one from here) is the usual cause, and the hint names it."""
        remote, said = failure
        if self._remotes is None:
            self._remotes = store_remotes(self.git_dir)
        url = redact((self._remotes[1].get(remote) or [remote])[0])
        name = remote.rpartition(".")[0] or remote
        first = missing[0]
        what = (f"{where[first][1]} at {where[first][0][:12]}" if where and first in where
                else f"object {first[:12]}")
        more = f" (and {len(missing) - 1} more files)" if len(missing) > 1 else ""
        lines = [re.sub(r"^(?:error|fatal|warning): ", "", line) for line in
                 said.decode("utf-8", "replace").strip().splitlines() if line.strip()]
        line = next((x for x in lines if "could not fetch" not in x), lines[0] if lines else
                    "no answer")
        if re.search(_NO_ANSWER, said.decode("utf-8", "replace")):
            error = StoreError(f"upstream {name}: {url} could not be reached to fetch {what}"
                               f"{more}, which the cache does not hold yet (git: {line})",
                               hint="check the network and the URL, and run the command again")
            error.gave_up = True
            return error
        return SourceUnusable(
            f"upstream {name}: {url} did not send {what}{more}, which the cache does not hold "
            f"yet (git: {line})",
            hint="a partial clone (`git clone --filter`) cannot send a file it lacks, whichever "
                 "way it is served: make the upstream's url the repository it was cloned "
                 "from, or make that clone whole (`git fetch --refetch`, its "
                 "`partialclonefilter` unset); otherwise check that the URL serves the "
                 "upstream's repository")

    @staticmethod
    def _origin_of(mirror: Path) -> tuple[str, str | None]:
        """(the name, the URL) of the promisor remote a partial clone fetches its missing
        objects from: `extensions.partialClone`, or (as `git clone --filter` writes it) the
        remote marked `promisor`; ("origin", None) when neither says."""
        got = run_git("-C", str(mirror), "config", "--get-regexp",
                      r"^(extensions\.partialclone|remote\..*\.(promisor|url))$", ok=None)
        found: dict[str, str] = {}
        for line in got.stdout.decode("utf-8", "replace").splitlines():
            key, _, value = line.partition(" ")
            found.setdefault(key.lower(), value.strip())
        name = found.get("extensions.partialclone") or next(
            (key[len("remote."):-len(".promisor")] for key, value in found.items()
             if key.endswith(".promisor") and value.lower() in ("true", "1", "yes", "on")),
            "origin")
        return name, found.get(f"remote.{name}.url")

    def _owning_remotes(self, missing: list[str],
                        where: dict[str, tuple[str, str]] | None) -> list[str]:
        """The promisor remotes a fetch of `missing` asks, in the store's order: those of the
        upstreams whose fetched refs reach the revisions the blobs were read at (`where`).
        Every upstream of the cache is a promisor remote of the one store, and git asks each
        in turn until one has the blobs: a file of an internal upstream was asked first of
        another upstream's server (its ids sent there), and a server that did not answer
        (GitHub from a network reaching only the internal mirror) held the command for the
        low-speed timeout, two minutes. All of them only when the owner cannot be told (a
        blob read by tree, or at a commit no upstream's ref reaches)."""
        remotes = self._answering(self._promisor_remotes())
        if len(remotes) < 2 or not where or any(m not in where for m in missing):
            return remotes
        owners = self._owners_of(sorted({where[m][0] for m in missing}))
        mine = [remote for remote in remotes if remote in owners]
        return mine or remotes

    def _answering(self, remotes: list[str]) -> list[str]:
        """`remotes` but those whose every URL is a local path that no longer exists (not
        pruned yet: the lock was busy, or the cache is read-only): none of them can answer."""
        urls = store_remotes(self.git_dir)[1]

        def gone(url: str) -> bool:
            path = local_path(url)
            return path is not None and not os.path.lexists(path)

        return [r for r in remotes if not urls.get(r) or not all(map(gone, urls[r]))]

    def _owners_of(self, revs: list[str]) -> set[str]:
        """The remotes whose fetched refs reach any of `revs` (the upstreams they are of)."""
        key = tuple(revs)
        owners = self._owners.get(key)
        if owners is None:
            # One walk for all of them (the contains memo is shared), against the remotes'
            # refs only: run only before a fetch or a git process that may fetch.
            got = self._run("for-each-ref", *(f"--contains={r}" for r in revs),
                            "--format=%(refname)", "--", "refs/patchforge/remotes/",
                            ok=(0, 1, 128, 129))
            found = {line.split("/")[3] for line in
                     got.stdout.decode("utf-8", "replace").splitlines()
                     if line.count("/") >= 4} if got.returncode == 0 else set()
            owners = self._owners[key] = found
        return owners

    def _only_owner_fetches(self, revs: list[str]) -> dict[str, str]:
        """The environment of a git process that reads files of `revs` and may find one the
        partial store lacks (a diff of its own: `-M`'s rename detection, `log -p`, a
        format-patch): git then fetches it by itself from each promisor remote in turn, every
        upstream's, and a file of an internal upstream went to another upstream's server
        first (its ids sent there), which, not answering, held the command for git's
        low-speed timeout. For that process the other upstreams' remotes are made unusable:
        their URLs rewritten (`url.<base>.insteadOf`) to a path that is no repository
        (_NO_REPOSITORY), so git gives up on each at once and asks the owner's. The
        owner's own URL is rewritten to itself: another remote's URL that is the start of it
        (`/srv/z` beside `/srv/z-mirror`) must not take it too. {} when the store is complete,
        has one remote, or the owner cannot be told (then every remote, as git does)."""
        if not self._is_partial():
            return {}
        if self._remotes is None:
            self._remotes = store_remotes(self.git_dir)
        remotes, urls = self._remotes
        if len(remotes) < 2:
            return {}
        owners = self._owners_of(revs) & set(remotes)
        if not owners or owners == set(remotes):
            return {}
        rules = [(url, url) for remote in sorted(owners) for url in urls.get(remote, [])]
        rules += [(_NO_REPOSITORY, url) for remote in remotes if remote not in owners
                  for url in urls.get(remote, [])]
        env = {"GIT_CONFIG_COUNT": str(len(rules))}
        for k, (base, prefix) in enumerate(rules):
            env[f"GIT_CONFIG_KEY_{k}"] = f"url.{base}.insteadOf"
            env[f"GIT_CONFIG_VALUE_{k}"] = prefix
        return env

    def _is_partial(self) -> bool:
        """Whether the store holds a promisor pack (a partial clone). Only a yes is remembered:
        a fetch later in this process can make the store partial, never the reverse."""
        if not self._partial:
            pack = self.git_dir / "objects" / "pack"
            self._partial = pack.is_dir() and any(p.suffix == ".promisor" for p in pack.iterdir())
        return self._partial

    def _missing(self, oids: list[str]) -> list[str]:
        """Those of `oids` not in the store, asked without triggering a lazy fetch.

        rev-list with --missing never fetches; --ignore-missing drops absent tips silently, so
        what it prints is what is present. A check started ahead that asked about all of
        `oids` answers instead (objects never leave the store: what it found is still there).
        """
        for k, (asked, started) in enumerate(self._checks):
            if asked.issuperset(oids):
                del self._checks[k]
                out = started.result().decode("ascii", "replace")
                break
        else:
            out = self._out("rev-list", "--objects", "--no-walk", "--missing=print",
                            "--ignore-missing", "--stdin",
                            input="".join(o + "\n" for o in oids).encode())
        present = {line[:40] for line in out.splitlines() if not line.startswith("?")}
        return [o for o in oids if o not in present]

    def _start_missing(self, oids: list[str]) -> StartedGit:
        """_missing()'s `git rev-list`, started (its answer read by _missing)."""
        return StartedGit("rev-list", "--objects", "--no-walk", "--missing=print",
                          "--ignore-missing", "--stdin", git_dir=self.git_dir,
                          input="".join(o + "\n" for o in oids).encode(),
                          what="git rev-list (which files the store holds)")

    # ---- imports

    def import_wheel(self, wheel: Path, upstream: str, label: str, *,
                     sha256: str | None = None, namespace: str | None = None) -> ImportResult:
        """Import every file of a wheel as a deterministic root commit (store/imports.py),
        labelled `label` under `namespace` (a project's, `sources.import_namespace`) too."""
        from patchforge.store.imports import import_wheel  # zipfile, threads: imports only

        # Under the write lock from the blobs' pack to the kept ref: a repack by another
        # project meanwhile would drop the blobs and the commit no ref reaches yet.
        with self.writing():
            return import_wheel(self, wheel, upstream, label, sha256=sha256,
                                namespace=namespace)

    def import_directory(self, path: Path, upstream: str, label: str, *,
                         namespace: str | None = None) -> ImportResult:
        """Import a directory tree as a deterministic root commit (store/imports.py)."""
        from patchforge.store.imports import import_directory

        with self.writing():  # as import_wheel
            return import_directory(self, path, upstream, label, namespace=namespace)

    def import_ref(self, namespace: str, label: str) -> str | None:
        """The commit a project imported under `label` (`namespace`: the project's, from
        `sources.import_namespace`), None if it imported none."""
        check_upstream_name(namespace)
        check_label(label)
        got = self._cat.query([f"refs/patchforge/labels/{namespace}/{label}^{{commit}}"])[0]
        return got[0] if got else None

    def label_import(self, namespace: str, label: str, commit: str) -> None:
        """Name `commit` (an import) `label` under a project's `namespace`."""
        check_upstream_name(namespace)
        check_label(label)
        with self.writing():
            try:
                self._run("update-ref", f"refs/patchforge/labels/{namespace}/{label}", commit,
                          what=f"labelling the import of {namespace} {label}")
            except StoreError:
                self.check_label_fits(namespace, label, namespace.rpartition(".")[0])
                raise

    def check_label_fits(self, namespace: str, label: str, upstream: str) -> None:
        """StoreError naming the clash when the project (`namespace`) has a label of upstream
        `upstream` that `label` cannot stand beside: labels are ref paths, and git keeps no
        `2026` beside a `2026/12` (nor the reverse). Nothing when none clashes."""
        base = f"refs/patchforge/labels/{namespace}/"
        parts = label.split("/")
        above = [base + "/".join(parts[:n]) for n in range(1, len(parts))]
        below = self._out("for-each-ref", "--count=1", "--format=%(refname)",
                          base + label + "/").strip()
        found = [ref for ref, got in zip(above, self._cat.query(above)) if got is not None]
        clash = (found[0] if found else below)[len(base):] if found or below else None
        if clash is None:
            return
        raise StoreError(
            f"upstream {upstream}: label {label!r} clashes with its label {clash!r} in this "
            "project: labels are kept as git ref paths, where no name stands beside another "
            "that starts with it and a '/' ('2026' beside '2026/12')",
            hint=f"give this version another label, neither a start of {clash!r} nor starting "
                 f"with it and a '/' (a '-' for a '/')")

    def share_import(self, upstream: str, label: str, commit: str) -> None:
        """Point the shared refs/patchforge/imports/<upstream>/<label> (the last import under
        that name and label by any project: a hint for reuse, never a project's version) at
        `commit`, where git can: another project's label may fill the path (its `2026/12`
        where this one has `2026`), and it is never a reason to refuse this project's label."""
        check_upstream_name(upstream)
        check_label(label)
        with self.writing():
            try:
                self._run("update-ref", f"refs/patchforge/imports/{upstream}/{label}", commit,
                          what=f"sharing the import of {upstream} {label}")
            except CacheLockLeft:
                return  # (a hint for reuse: the import stands without it)
            except StoreDamaged:
                raise
            except StoreError as exc:
                if "cannot lock ref" not in exc.message:
                    raise

    def shared_import_ref(self, upstream: str, label: str) -> str | None:
        """The last import of upstream name `upstream` under `label` by any project of the cache
        (or by an earlier patchforge): which project made it is not known. None if none."""
        check_upstream_name(upstream)
        check_label(label)
        got = self._cat.query([f"refs/patchforge/imports/{upstream}/{label}^{{commit}}"])[0]
        return got[0] if got else None

    def shared_imports(self, upstream: str) -> list[tuple[str, str]]:
        """(label, commit) of the last import under each label of upstream name `upstream` by
        any project of the cache (shared_import_ref's, every label), by label."""
        check_upstream_name(upstream)
        prefix = f"refs/patchforge/imports/{upstream}/"
        return self._refs_under(prefix)

    def _refs_under(self, prefix: str) -> list[tuple[str, str]]:
        """(name below `prefix`, commit) of every ref under `prefix`, by name."""
        out = self._out("for-each-ref", "--format=%(refname) %(objectname)", prefix)
        found = []
        for line in out.splitlines():
            ref, _, commit = line.rpartition(" ")
            if ref.startswith(prefix) and commit:
                found.append((ref[len(prefix):], commit))
        return sorted(found)

    def imports_of(self, namespace: str) -> list[tuple[str, str]]:
        """(label, commit) of every wheel or directory import a project made of an upstream
        (`namespace`: `sources.import_namespace`; the versions pinned, judged or rebased onto
        there), by label."""
        check_upstream_name(namespace)
        prefix = f"refs/patchforge/labels/{namespace}/"
        return self._refs_under(prefix)

    def tags_at(self, upstream: str, commit: str) -> list[str]:
        """The tags of source `upstream` (a store namespace) that name `commit`, as last
        fetched, by name."""
        check_upstream_name(upstream)
        prefix = f"refs/patchforge/remotes/{upstream}/tags/"
        out = self._out("for-each-ref", f"--points-at={commit}", "--format=%(refname)", prefix)
        return sorted(ref[len(prefix):] for ref in out.splitlines() if ref.startswith(prefix))

    def commit_message(self, rev: str) -> bytes:
        got = self._cat.query([f"{rev}^{{commit}}"])[0]
        if got is None:
            raise StoreError(f"unknown revision {rev!r} in the upstream store")
        return got[2].partition(b"\n\n")[2]

    # ---- git upstreams

    def fetch_git(self, upstream: str, url: str, refs: list[str], *,
                  if_there: list[str] | tuple[str, ...] = ()) -> None:
        """Blob-less partial fetch of the named refs/commits into refs/patchforge/remotes/<u>/.

        A name is a branch, a tag, a full ref (`refs/...`) or a full 40-hex commit id. Blobs come
        later, on demand, from the remote configured as a promisor. Network commands keep the
        caller's ssh/askpass/proxy variables and their git configuration (git_network_env).
        `if_there`: full refs fetched in the same fetch when the remote has them, and passed
        over when it has not (one `ls-remote` asks); given with a commit id, the tags the
        remote has of that commit come too.
        """
        check_upstream_name(upstream)
        with self.writing():
            self._fetch_git(upstream, url, refs, list(if_there))

    def _fetch_git(self, upstream: str, url: str, refs: list[str],
                   if_there: list[str] | None = None) -> None:
        shallow = shallow_local_repository(url)
        if shallow is not None:
            import shlex

            # Its history ends at the cut: git's filtered fetch asks the source (a promisor)
            # for the missing parents, and each such fetch starts another, without end (a
            # process storm a kill of patchforge does not stop). Refused before git is asked.
            raise SourceUnusable(
                f"{redact(url)} is a shallow clone (`git clone --depth`): its "
                "history is cut, and patchforge needs the upstream's history",
                hint=f"fetch its whole history (`git -C {shlex.quote(str(shallow))} fetch "
                "--unshallow`) or give the repository it was cloned from")
        self._configure_remote(upstream, url)
        want_ids = [r for r in refs if _HEX40.fullmatch(r)]
        names = [r for r in refs if not _HEX40.fullmatch(r)]
        refspecs = []
        if_there = [ref for ref in if_there or [] if ref.startswith("refs/")]
        if names or if_there:
            patterns = list(if_there)
            if want_ids:
                # The tags of the commits asked for by id come too (their names are listed
                # in the same answer): a pin's release label is checked against what the
                # commit is (its own release tag) in a fresh cache as in one that fetched it.
                patterns.append("refs/tags/*")
            for name in names:
                if name.startswith("refs/") or name == "HEAD":
                    patterns.append(name)
                else:
                    patterns += [f"refs/heads/{name}", f"refs/tags/{name}"]
            try:
                out = self._out("ls-remote", "--", upstream, *patterns,
                                what=f"listing refs of {url}", network=True)
            except StoreDamaged:
                raise
            except StoreError as exc:
                # Nothing is known of the names: not "check the name" (targets.py).
                raise gave_up_as(RemoteUnreachable(exc.message, hint=exc.hint or (
                    f"{redact(url)} could not be reached (the network, the URL or a "
                    "login)")), exc) from None
            listed = [tuple(line.split("\t", 1)) for line in out.splitlines() if "\t" in line]
            advertised = {ref for _, ref in listed}
            at_wanted = [ref.removesuffix("^{}") for oid, ref in listed
                         if oid in want_ids and ref.startswith("refs/tags/")] if if_there else []
            refspecs += [f"+{ref}:{self._tracking_ref(upstream, ref)}"
                         for ref in dict.fromkeys(if_there + at_wanted) if ref in advertised]
            for name in names:
                candidates = [name] if name.startswith("refs/") or name == "HEAD" else \
                    [f"refs/heads/{name}", f"refs/tags/{name}"]
                hits = [c for c in candidates if c in advertised]
                if not hits and name == "HEAD":
                    raise RefNotFound(f"{upstream}: {url} has no HEAD (no default branch "
                                      "checked out there)", hint="name a branch, tag or commit")
                if not hits:
                    # (Not the store's remote name, which means nothing to the reader.) Its
                    # branches say what to name instead: a repository made by `git init`
                    # may have `master` where `main` was expected.
                    raise RefNotFound(f"{redact(url)} has no branch or tag {name!r}"
                                      f"{self._branches_said(upstream, url, name)}")
                for hit in hits:
                    refspecs.append(f"+{hit}:{self._tracking_ref(upstream, hit)}")
        for oid in want_ids:
            refspecs.append(f"+{oid}:refs/patchforge/remotes/{upstream}/commits/{oid}")
        if not refspecs:
            return
        try:
            self._run("-c", "protocol.version=2", "fetch", "--quiet", "--no-tags",
                      "--no-write-fetch-head", "--recurse-submodules=no", "--filter=blob:none",
                      "--", upstream, *refspecs, what=f"fetching {upstream} from {url}",
                      network=True)
        except StoreDamaged:
            raise
        except StoreError as exc:
            if re.search(_REMOTE_LACKS, exc.message):
                raise RefNotFound(exc.message, hint=exc.hint) from None
            raise
        # The running `cat-file --batch` read the configuration at start-up: it does not know
        # a promisor remote added since, and would report that remote's blobs as absent
        # instead of fetching them on demand. Start a fresh one.
        self._cat.restart()

    def remote_heads(self, upstream: str, url: str, *, tags: bool = False) -> list[str]:
        """The full branch refs (and with `tags`, tag refs) a git upstream advertises (one
        ls-remote)."""
        check_upstream_name(upstream)
        with self.writing():
            self._configure_remote(upstream, url)
        out = self._out("ls-remote", "--heads", *(["--tags"] if tags else []), "--", upstream,
                        what=f"listing refs of {url}", network=True)
        return sorted(line.split("\t", 1)[1] for line in out.splitlines()
                      if "\t" in line and not line.endswith("^{}"))

    def remote_tag(self, url: str, tag: str, *, what: str) -> str | None:
        """The commit the remote at `url` names by tag `tag` now (an annotated tag peeled),
        None when it has no such tag: one `git ls-remote --tags` and nothing fetched.

        `--tags` makes protocol v2 send the prefix `refs/tags/`, so the server lists its tags
        alone (AITER: 180 of them beside 900 branches); git sends no narrower prefix for a
        pattern, which it matches against the end of a name, so the one tag is picked out
        here. Asked once per store object (one command): another resolution of the same tag
        gets the first answer. The URL is used as given (no remote configured, no write lock):
        a read-only cache is checked too."""
        key = (url, tag)
        if key in self._remote_tags:
            return self._remote_tags[key]
        try:
            check_git_url(url)
        except ValueError as exc:
            raise StoreError(str(exc)) from None
        if is_local_git_url(url) and "://" not in url:
            url = str(Path(url).resolve())
        ref = f"refs/tags/{tag}"
        try:
            out = self._out("-c", "protocol.version=2", "ls-remote", "--tags", "--", url, ref,
                            f"{ref}^{{}}", what=what, network=True)
        except StoreDamaged:
            raise
        except StoreError as exc:
            # ls-remote lists what the remote has; failing, it said nothing of the tag.
            raise gave_up_as(RemoteUnreachable(exc.message, hint=exc.hint), exc) from None
        named: dict[str, str] = {}
        for line in out.splitlines():
            oid, _, name = line.partition("\t")
            named[name] = oid
        # The peeled line (`^{}`) is the commit of an annotated tag; a pattern also matches
        # the end of a longer name (`refs/tags/x/refs/tags/v1`): only the very name counts.
        found = named.get(f"{ref}^{{}}", named.get(ref))
        self._remote_tags[key] = found
        return found

    def _branches_said(self, upstream: str, url: str, name: str | None = None) -> str:
        """" (its branches: main, release; tags like it: v1.2.0)" for an error naming a ref
        the remote lacks: its branches, and the tags nearest `name` (all of them when there
        are few), since a mistyped tag is the usual case and a real upstream has thousands."""
        import difflib

        out = self._out("ls-remote", "--heads", "--tags", "--", upstream,
                        what=f"listing branches and tags of {redact(url)}", network=True)
        refs = [line.split("\t", 1)[1] for line in out.splitlines() if "\t" in line]
        heads = sorted(r.removeprefix("refs/heads/") for r in refs if r.startswith("refs/heads/"))
        tags = sorted({r.removeprefix("refs/tags/").removesuffix("^{}") for r in refs
                       if r.startswith("refs/tags/")})
        said = "it has no branch" if not heads else "its branches: " + ", ".join(heads[:10]) + (
            f", ... ({len(heads)} in all)" if len(heads) > 10 else "")
        if tags:
            near = tags if len(tags) <= 10 else \
                difflib.get_close_matches(name or "", tags, n=5, cutoff=0.6)
            said += (f"; its tags: {', '.join(near)}" if len(tags) <= 10 else
                     f"; tags like it: {', '.join(near)}" if near else
                     f"; {len(tags)} tags, none like it")
        # `origin/main`, as `git branch -r` shows it in a clone, is the clone's name for the
        # upstream's `main`: say the name the upstream has (a user of git types it so). Only
        # maybe: `myfork/main` is a fork's branch, which may hold other commits.
        remote, _, rest = (name or "").partition("/")
        if remote and rest in heads:
            said += (f"; if {name!r} is a clone's name for the upstream's branch {rest!r}, "
                     f"name it {rest!r}")
        return f" ({said})"

    @staticmethod
    def _tracking_ref(upstream: str, ref: str) -> str:
        if ref == "HEAD":  # the remote's HEAD: what a clone of it checks out
            return f"refs/patchforge/remotes/{upstream}/HEAD"
        if ref.startswith("refs/heads/"):
            return f"refs/patchforge/remotes/{upstream}/heads/{ref[len('refs/heads/'):]}"
        if ref.startswith("refs/tags/"):
            return f"refs/patchforge/remotes/{upstream}/tags/{ref[len('refs/tags/'):]}"
        return f"refs/patchforge/remotes/{upstream}/other/{ref[len('refs/'):]}"

    def _configure_remote(self, upstream: str, url: str) -> None:
        try:
            check_git_url(url)
        except ValueError as exc:
            raise StoreError(f"{upstream}: {exc}") from None
        local = is_local_git_url(url)
        if local and "://" not in url:
            url = str(Path(url).resolve())
        settings = [("url", url),
                    ("fetch", f"+refs/heads/*:refs/patchforge/remotes/{upstream}/heads/*")]
        if local:
            # A local upstream's own config decides what its upload-pack allows; these make the
            # filtered fetch (and fetching blobs by id later) work without warnings.
            settings.append(("uploadpack", LOCAL_UPLOAD_PACK))
        # The filter, then `promisor`, last: another process's lazy fetch (git's own, for any
        # object a reader finds missing: a pin check's cat-file) tries every promisor remote,
        # and git counts a remote with either setting as one. A promisor without its filter
        # made that fetch write the filter into store.git/config itself, outside the write
        # lock, and it or this configuration failed with "could not lock config file".
        settings += [("partialclonefilter", "blob:none"), ("promisor", "true")]
        current = self._run("config", "--get-regexp", rf"^remote\.{re.escape(upstream)}\.",
                            ok=(0, 1)).stdout.decode("utf-8", "replace")
        have = dict(line.split(" ", 1) for line in current.splitlines() if " " in line)
        for key, value in settings:
            full = f"remote.{upstream}.{key}"
            if have.get(full) != value:
                fault_point("config")
                self._run("config", "--", full, value)
        if not local and have.get(f"remote.{upstream}.uploadpack"):
            self._run("config", "--unset", f"remote.{upstream}.uploadpack", ok=(0, 5))

    def read_ref(self, ref: str) -> str | None:
        """The commit a ref points at (peeled), None when the store has no such ref."""
        if "\n" in ref or not ref.startswith("refs/"):
            return None
        found = self._cat.query([f"{ref}^{{commit}}"])[0]
        return found[0] if found is not None else None

    def peeled_type(self, ref: str) -> str | None:
        """The type of what `ref` names, its tags peeled (`commit`, `tree`, `blob`), None when
        the store has no such ref: a tag made of a tree (`git tag t v1^{tree}`) is a ref that
        read_ref, which asks for a commit, does not see."""
        if "\n" in ref or not ref.startswith("refs/"):
            return None
        found = self._cat.query([f"{ref}^{{}}"])[0]
        return found[1] if found is not None else None

    def forget_tag(self, upstream: str, tag: str, commit: str) -> None:
        """Take tag `tag` of source `upstream` (a store namespace) out of the store, the remote
        having deleted it for a branch of its name: kept, resolve_in would answer the old tag
        offline where the remote answers the branch. Its commit keeps a ref of its own id
        (refs/patchforge/kept/), as an import's does: a lock may still pin it, and a repack
        drops what no ref reaches."""
        check_upstream_name(upstream)
        ref = f"refs/patchforge/remotes/{upstream}/tags/{tag}"
        with self.writing():
            self._run("update-ref", "--stdin", input=(
                f"update refs/patchforge/kept/{commit} {commit}\ndelete {ref}\n").encode(),
                what=f"forgetting tag {tag} of {upstream}")

    def resolve_in(self, upstream: str, spec: str) -> str:
        """A branch, tag, import label or (abbreviated) commit id of one upstream -> commit.
        A name that is both a tag and a branch is the tag, as git's rule has it (refs/tags
        before refs/heads): `gitsource.fetch_git_upstream` checks a stored tag against the
        remote first, so the first use (which fetched both) and every later one agree."""
        check_upstream_name(upstream)
        base = f"refs/patchforge/remotes/{upstream}"
        candidates = [f"{base}/tags/{spec}", f"{base}/heads/{spec}",
                      f"refs/patchforge/imports/{upstream}/{spec}"]
        if _HEX40.fullmatch(spec):
            candidates.append(f"{base}/commits/{spec}")
        if spec.startswith("refs/") or spec == "HEAD":
            # A full ref name (`refs/heads/main`) or HEAD is the remote's, as fetch_git tracks
            # it under this upstream: never a ref of the store itself or of another upstream.
            candidates = [self._tracking_ref(upstream, spec)]
        if "\n" not in spec:
            for found in self._cat.query([f"{c}^{{commit}}" for c in candidates]):
                if found is not None:
                    return found[0]
        if _HEXABBREV.fullmatch(spec):
            got = self._cat.query([f"{spec}^{{commit}}"])[0]
            if got is not None:
                contained = self._out("for-each-ref", "--count=1", "--format=%(refname)",
                                      "--contains", got[0], f"{base}/",
                                      f"refs/patchforge/imports/{upstream}/")
                if contained.strip():
                    if got[0] == spec:
                        # Remembered: the next check of this pin is one ref lookup, not a walk.
                        with self.writing():
                            self._run("update-ref", f"{base}/commits/{spec}", spec)
                    return got[0]
        if "\n" not in spec:
            # A ref of this name whose file holds garbage is the store's damage, not a
            # revision the upstream lacks (whose advice, re-pin, would move a correct pin).
            listed = self._run("for-each-ref", "--format=", *candidates, ok=(0, 1))
            damaged = damage_error(listed.stderr.decode("utf-8", "replace"), self.git_dir)
            if damaged is not None:
                raise damaged
        raise RefNotFound(f"{upstream}: {spec!r} is not a known branch, tag, label or commit",
                          hint="fetch the upstream first")

    # ---- commits without a checkout

    def commit_files(self, base: str, changes: dict[str, bytes | None], *, message: str,
                     author: tuple[str, str, str] | None = None,
                     parents: list[str] | None = None,
                     modes: dict[str, str] | None = None,
                     made: list[tuple[bytes, bytes]] | None = None) -> str:
        """A commit of `base`'s tree with `changes` applied (None deletes), no checkout.

        `author` is (name, email, date) with date in git's raw form ("<epoch> <tz>") or any date
        git reads; it is also the committer. Without it the fixed patchforge identity at epoch 0
        is used. `parents` default to [base]. A file keeps its mode unless `modes` says otherwise.
        `made` gets every object of the commit that `base` does not have, as (kind, data): the
        commit is a worktree's base, kept beside the worktree (`keep_made`) so that it outlives
        the cache.
        """
        def write(kind: bytes, data: bytes) -> str:
            if made is not None:
                made.append((kind, data))
            return self._write_object(kind, data)

        base_commit = self.resolve(base)
        parents = [self.resolve(p) for p in (parents if parents is not None else [base_commit])]
        entries = self.entries(base_commit, [p for p in changes
                                             if changes[p] is not None and p not in (modes or {})])
        edits: dict[bytes, tuple[str, str] | None] = {}
        for path, data in changes.items():
            raw = check_path(path)
            if data is None:
                edits[raw] = None
                continue
            mode = (modes or {}).get(path) or (entries[path] or ("100644",))[0]
            edits[raw] = (mode, write(b"blob", data))
        tree = edit_tree(self.tree_id(base_commit), edits, self._read_tree, write)
        commit = self.commit_tree(tree, parents, message, author=author)
        if made is not None:
            found = self._cat.query([commit])[0]
            if found is None:
                raise StoreError(f"commit {commit} was made but cannot be read back")
            made.append((b"commit", found[2]))
        return commit

    def keep_made(self, made: list[tuple[bytes, bytes]], path: Path, *,
                  append: bool = False) -> None:
        """Write the objects `commit_files(made=...)` collected to `path` (beside the worktree
        whose base they make), so that `restore_made` can put them back into another store:
        the cache emptied, or another PATCHFORGE_CACHE, while an edit or a stop is open."""
        old = path.read_bytes() if append and path.is_file() else b""
        data = old + b"".join(b"%s %d\n" % (kind, len(body)) + body for kind, body in made)
        # Replaced whole, as the worktree's own objects are written (not synced: the worktree
        # beside it is not either, and a torn file restores nothing anyone asks for).
        tmp = path.with_name(path.name + ".tmp")
        try:
            tmp.write_bytes(data)
            os.replace(tmp, path)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise

    def restore_made(self, path: Path) -> None:
        """Put the objects `keep_made` kept in `path` back into this store where it lacks them.
        They are loose objects (made here, on no ref, never packed), so one that is there is
        found by its file, and the store's remote is never asked for one (it has none of them).
        An object's id is git's hash of its bytes: a damaged file gives objects no one asks
        for. A file that cannot be read restores nothing."""
        try:
            data = path.read_bytes()
        except OSError:
            return
        at = 0
        while at < len(data):
            end = data.find(b"\n", at)
            kind, _, size = data[at:end].partition(b" ") if end >= 0 else (b"", b"", b"")
            if not size.isdigit() or kind not in (b"blob", b"tree", b"commit"):
                return
            write_loose(self.git_dir, kind, data[end + 1:end + 1 + int(size)])
            at = end + 1 + int(size)

    def commit_tree(self, tree: str, parents: list[str], message: str, *,
                    author: tuple[str, str, str] | None = None) -> str:
        name, email, date = author or IMPORT_IDENT
        raw = commit_bytes(tree, parents, (name, email, date), message)
        if raw is not None:
            return self._write_object(b"commit", raw)
        if re.fullmatch(r"\d+ [+-]\d{4}", date):
            # git's raw form; the '@' makes git read it as seconds even when small (epoch 0).
            date = "@" + date
        ident = {"GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": email, "GIT_AUTHOR_DATE": date,
                 "GIT_COMMITTER_NAME": name, "GIT_COMMITTER_EMAIL": email,
                 "GIT_COMMITTER_DATE": date}
        args = ["commit-tree", tree]
        for parent in parents:
            args += ["-p", parent]
        return self._out(*args, input=message.encode("utf-8"), env=ident).strip()

    def _write_object(self, kind: bytes, data: bytes) -> str:
        """One object into the store, as a loose object (store/objects.py), without git."""
        try:
            oid = write_loose(self.git_dir, kind, data)
        except OSError as exc:
            if exc.errno not in UNWRITABLE_ERRNOS:
                raise
            raise unwritable_cache(self.git_dir.parent, f"{exc.strerror}: {exc.filename}") \
                from None
        self._present.add(oid)  # reading it back asks no presence check of git
        return oid

    def _read_tree(self, tree: str) -> dict[bytes, tuple[str, str]]:
        """The parsed tree `tree` (a full id), read once per process."""
        if tree not in self._tree_cache:
            got = self._cat.query([tree])[0]
            if got is None or got[1] != "tree":
                raise StoreError(f"tree {tree} is not in the upstream store")
            self._tree_cache[tree] = parse_tree(got[2])
        return self._tree_cache[tree]

    # ---- merges

    def changed_paths(self, old: str, new: str, paths: list[str] | None = None) -> list[str]:
        args = ["diff-tree", "-r", "-z", "--no-renames", "--name-only", old, new]
        if paths is not None:
            if not paths:
                return []
            args += ["--", *paths]
        out = self._run(*args, what="comparing revisions").stdout
        return [decode_path(p) for p in out.split(b"\0") if p]

    def renames(self, old: str, new: str, paths: list[str]) -> dict[str, str]:
        """For those of `paths` that `new` renamed: path in old -> path in new."""
        gone = self._gone(old, new, paths)
        if not gone:
            return {}
        found = self._rename_map(old, new, gone)
        return {p: found[p] for p in gone if p in found}

    def rename_splits(self, old: str, new: str, paths: list[str]) -> dict[str, list[str]]:
        """For those of `paths` that `new` renamed (renames(), asked with the same `paths`)
        where other files `new` adds are as near as the one it names: path in old -> those
        other files. Upstream split the file into copies alike (ops/x.py made ops/gfx942/x.py
        and ops/gfx950/x.py, each with one token changed alike): git's pairing gives it to
        one, as `git rebase` does, and a fix following it there never reaches the others. A
        tie of merge-ort's directory guess (mergeort.guessed_by_directory) names the files
        either guess would pair, where they differ."""
        gone = self._gone(old, new, paths)
        if not gone:
            return {}
        self._rename_map(old, new, gone)
        splits = self._rename_splits[(old, new, tuple(gone))]
        return {p: splits[p] for p in gone if p in splits}

    def _gone(self, old: str, new: str, paths: list[str]) -> list[str]:
        """Those of `paths` that `old` has and `new` lacks, sorted: only they can have been
        renamed (read from the trees the store already parses, no git process)."""
        before, after = self.entries(old, paths), self.entries(new, paths)
        return sorted({p for p in paths if before[p] is not None and after[p] is None})

    def _rename_map(self, old: str, new: str, gone: list[str]) -> dict[str, str]:
        """Where git's rename detection (-M) pairs the files `gone` (in `old`, not in `new`)
        in `new`, as `git rebase` (merge-ort) asks it: only the files asked are sources, each
        weighed against every file `new` adds, exhaustively. The whole tree's pairing would
        be under git's rename limit (diff.renameLimit, 1000: over 1000 x 1000 deleted x added
        files git pairs only identical files) and would let another deleted file, of no
        interest here, take a moved file's new place. One diff-tree per question (and one
        per file merge-ort's directory guess weighs, and one for the splits where any file
        is paired: _pairing_of), kept for the command (a series asks once for all of its
        files, its judge once per file outside them), and in the cache for the next one, as
        _answer_of_two_commits keeps its answers: this one is a function of the two commit
        ids and the files asked, which its name digests too. The splits (rename_splits) are
        kept beside it."""
        key = (old, new, tuple(gone))
        if key not in self._renames or not (_HEX40.fullmatch(old) and _HEX40.fullmatch(new)):
            # --no-rename-empty: merge-ort never pairs an empty file (every empty file is
            # identical to every other: an empty `__init__.py` upstream removed is not the new
            # one of another package), where diff-tree's default would.
            args = ("diff-tree", "-r", "-z", "-M", "-l0", "--no-rename-empty", "--name-status",
                    "--diff-filter=R")
            name = None
            if _HEX40.fullmatch(old) and _HEX40.fullmatch(new):
                # ("exact sources": the other deleted files an added file is identical to
                # are weighed too; "namesakes": those of a gone file's base name stand in;
                # "directory guesses", "splits": _pairing_of.)
                name = answer_name("renames", (*args, "exact sources", "namesakes",
                                               "directory guesses", "splits by nearness",
                                               f"{_SPLIT_ROUNDS} rounds", old, new),
                                   ["\0".join(gone).encode("utf-8", "surrogateescape")])
                out = answer_of(self.kept_text(name))
            if name is None or out is None:
                out = self._pairing_of(old, new, gone, args)
                if name is not None:
                    self.keep_text(name, answer_parts([out]))
            fields = out.split(b"\0")
            found: dict[str, str] = {}
            splits: dict[str, list[str]] = {}
            i = 0
            while i < len(fields) and fields[i]:
                if fields[i][:1] in (b"R", b"S") and i + 2 < len(fields):
                    source, there = decode_path(fields[i + 1]), decode_path(fields[i + 2])
                    if fields[i].startswith(b"R"):
                        found[source] = there
                    else:
                        splits.setdefault(source, []).append(there)
                    i += 3
                else:
                    i += 2
            self._renames[key] = found
            self._rename_splits[key] = {source: others for source, others in splits.items()
                                        if source in found}
        return self._renames[key]

    def _pairing_of(self, old: str, new: str, gone: list[str], args: tuple[str, ...]) -> bytes:
        """git's rename pairing (`args`) of `old`'s tree without the files `new` deleted other
        than `gone` and those identical to a file `new` adds, against `new`: the deleted
        files git weighs are then `gone` and the exact renames. merge-ort pairs exact renames
        among all deleted files first, then only the relevant ones inexactly: a file upstream
        moved unchanged keeps its new name, which a gone series file near it must not take.
        Upstream's other deleted files of a `gone` file's base name stay as stand-ins (a
        symbolic link each, which git never pairs but by an identical one): merge-ort pairs a
        relevant file by its base name first only where no other deleted file has that name,
        and weighs it against every added file otherwise; left out, they made the name
        unique, and git's diff paired the file by name where `git rebase` follows it to a
        nearer file of another name.

        Before that, merge-ort's base-name pass by the directory guess, which git's diff does
        not take (mergeort.guessed_by_directory): a file it pairs so (one git diff-tree of the
        two files alone weighs it) is no source of the pairing, nor its new file a
        destination, and is said as a rename of its own (`R<score>`). After it, the splits:
        the pairing asked again without the files it paired the `gone` files with, and a
        `gone` file paired as near again (and nearest that file of all the deleted files,
        _nearest_of) is said split (`S<score>`, the other file), asked again without those
        too until no other is as near; as is one whose directory guess ties between files
        (each of them). A file paired by its name (the directory guess, or a name unique among
        the deleted and the added files, mergeort.unique_names) is no split: git's pass takes
        the file of its name before weighing any other, by rule, whatever else is as near
        (ops/x.py moved to lib/kernels/x.py beside a near copy added as ops/x_ref.py). The
        trees made for it go to a temporary object directory beside the store's: the store
        keeps none of them."""
        keep = {check_path(path) for path in gone}
        made: dict[str, bytes] = {}  # the trees made: id -> raw tree
        stand_in_blobs: set[bytes] = set()

        def write(kind: bytes, data: bytes) -> str:
            oid = object_id(kind, data)
            made[oid] = data
            return oid

        with self._lock:
            old_tree, new_tree = self.tree_id(old), self.tree_id(new)
            deleted: dict[bytes, str] = {}
            added: dict[bytes, str] = {}
            self._deleted_and_added(old_tree, new_tree, b"", deleted, added)
            blobs = set(added.values())
            exact_sources = {path for path, oid in deleted.items() if oid in blobs}
            exact = exact_renames(deleted, added)
            guessed = guessed_by_directory(
                sorted(keep), deleted, added, exact,
                lambda directory: not self._has_directory(new_tree, directory))
            by_name = unique_names(sorted(keep), deleted, added, exact)
            weighed = {(path, into): (
                edit_tree(EMPTY_TREE, {path: ("100644", deleted[path])}, self._read_tree, write),
                edit_tree(EMPTY_TREE, {into: ("100644", added[into])}, self._read_tree, write))
                for path, (found, _) in guessed.items() for into in found}

            def narrowed_of(asked: set[bytes]) -> str:
                stand_ins = _namesake_stand_ins(asked, deleted, blobs)
                stand_in_blobs.update(blob for _mode, blob in stand_ins.values())
                return self._without_deletions(old_tree, new_tree, asked | set(stand_ins), b"",
                                               made, stand_ins) or EMPTY_TREE

        objects = tempfiles.make_temp_dir("patchforge-renames-")
        try:
            (Path(objects) / "objects").mkdir()
            # (An alternate of the store's, read only: a file git fetches into a partial store
            # to weigh it goes to the store, and stays.)
            env = dict(self._only_owner_fetches([new, old]))
            env["GIT_ALTERNATE_OBJECT_DIRECTORIES"] = str(Path(objects) / "objects")

            written: set[str] = set()

            def pairing(old_side: str, new_side: str, *options: str) -> bytes:
                for oid, data in made.items():
                    if oid not in written:
                        written.add(write_loose(Path(objects), b"tree", data))
                for blob in stand_in_blobs:
                    if object_id(b"blob", blob) not in written:
                        written.add(write_loose(Path(objects), b"blob", blob))
                return self._run(*args, *options, old_side, new_side, what="finding renames",
                                 env=env).stdout

            records: list[bytes] = []
            paired: dict[bytes, tuple[bytes, bytes]] = {}  # gone file -> (score, its file)
            splits: dict[bytes, set[bytes]] = {}
            for path, (found, tied) in guessed.items():
                near = []
                for into in found:
                    said = _pairs(pairing(*weighed[(path, into)], f"-M{_BASENAME_SCORE}%"))
                    if (path, into) in said:
                        near.append((into, said[(path, into)]))
                taken = {there for _, there in paired.values()}
                if tied:
                    splits[path] = {into for into, _ in near}
                elif near and near[0][0] not in taken:
                    paired[path] = (near[0][1], near[0][0])
            for path, (score, into) in paired.items():
                records.append(b"R%s\0%s\0%s\0" % (score, path, into))
            by_rule = set(paired)  # paired by the name, no nearness weighed against others
            with self._lock:
                asked = (keep - set(paired)) | exact_sources
                rest = edit_tree(new_tree, {into: None for _, into in paired.values()},
                                 self._read_tree, write) if paired else new_tree
                narrowed = narrowed_of(asked)
            out = pairing(narrowed, rest)
            for (path, into), score in _pairs(out).items():
                if path in keep:
                    paired[path] = (score, into)
                    if by_name.get(path) == into and int(score) >= _BASENAME_SCORE:
                        by_rule.add(path)
            # (each round without the copies found: a file split in three or more has them all
            # named, up to as many rounds)
            left_out = {into for _, into in paired.values()}
            if paired:
                with self._lock:
                    narrowed = narrowed_of(keep | exact_sources)
            for _ in range(_SPLIT_ROUNDS if paired else 0):
                with self._lock:
                    unpaired = edit_tree(new_tree, dict.fromkeys(left_out), self._read_tree, write)
                copies = set()
                for (path, into), score in _pairs(pairing(narrowed, unpaired)).items():
                    if path in paired and path not in by_rule and paired[path][0] == score \
                            and path == self._nearest_of(old_tree, deleted, added, into,
                                                         pairing, write):
                        splits.setdefault(path, set()).add(into)
                        copies.add(into)
                if not copies:
                    break
                left_out |= copies
            for path, others in sorted(splits.items()):
                if path in paired:
                    for into in sorted(others - {paired[path][1]}):
                        records.append(b"S%s\0%s\0%s\0" % (paired[path][0], path, into))
            return out + b"".join(records)
        finally:
            tempfiles.remove_tree(objects, ignore_errors=True)

    def _nearest_of(self, old_tree: str, deleted: dict[bytes, str], added: dict[bytes, str],
                    path: bytes, pairing: Callable[..., bytes],
                    write: Callable[[bytes, bytes], str]) -> bytes | None:
        """The deleted file git's pairing gives the added file `path`, weighing `path` alone
        against every one of `deleted` (None: none). A file as near a gone series file, by
        git's score in whole percents, as the one the series file is renamed to is a copy
        of it only where it is the file nearest that copy: ops/gfx942/x.py and
        ops/gfx950/x.py, a token apart, moved to kernels/ with the same line edited, leave
        kernels/gfx950/x.py as near ops/gfx942/x.py in whole percents as
        kernels/gfx942/x.py is, but it is ops/gfx950/x.py's new place (nearer it, as git
        weighs it)."""
        with self._lock:
            alone = edit_tree(old_tree, {**dict.fromkeys(deleted), path: ("100644", added[path])},
                              self._read_tree, write)
        return next((source for source, _ in _pairs(pairing(old_tree, alone))), None)

    def _has_directory(self, tree: str, directory: bytes) -> bool:
        """Whether the tree `tree` has a directory at the raw path `directory`."""
        for name in directory.split(b"/"):
            entry = self._read_tree(tree).get(name)
            if entry is None or entry[0] != TREE_MODE:
                return False
            tree = entry[1]
        return True

    def _deleted_and_added(self, old: str | None, new: str | None, prefix: bytes,
                           deleted: dict[bytes, str], added: dict[bytes, str]) -> None:
        """The files (not submodules) the tree `old` has and `new` lacks into `deleted` (raw
        path -> blob id), those `new` has and `old` lacks into `added` (alike); None: no such
        directory on that side. Only the directories that differ are read (the
        store's parsed trees, no git process)."""
        if old == new:
            return
        before = self._read_tree(old) if old is not None else {}
        after = self._read_tree(new) if new is not None else {}
        for name, (mode, oid) in before.items():
            there = after.get(name)
            if mode == TREE_MODE:
                inner = there[1] if there is not None and there[0] == TREE_MODE else None
                self._deleted_and_added(oid, inner, prefix + name + b"/", deleted, added)
            elif mode != _GITLINK_MODE and (there is None or there[0] == TREE_MODE):
                deleted[prefix + name] = oid
        for name, (mode, oid) in after.items():
            there = before.get(name)
            if mode == TREE_MODE:
                if there is None or there[0] != TREE_MODE:
                    self._deleted_and_added(None, oid, prefix + name + b"/", deleted, added)
            elif mode != _GITLINK_MODE and (there is None or there[0] == TREE_MODE):
                added[prefix + name] = oid

    def _without_deletions(self, old: str, new: str | None, keep: set[bytes], prefix: bytes,
                           made: dict[str, bytes],
                           stand_ins: dict[bytes, tuple[str, bytes]] | None = None) -> str | None:
        """The tree `old` (at `prefix`) without the files the tree `new` (None: no such
        directory there) lacks, but for those in `keep` (raw paths), each of `stand_ins` there
        as its (mode, contents) instead; None when nothing is left. Only the directories that
        differ are read; each tree written is put in `made` (id -> raw tree)."""
        if old == new:
            return old
        before = self._read_tree(old)
        after = self._read_tree(new) if new is not None else {}
        entries: dict[bytes, tuple[str, str]] = {}
        for name, (mode, oid) in before.items():
            path = prefix + name
            there = after.get(name)
            if mode == TREE_MODE:
                inner = there[1] if there is not None and there[0] == TREE_MODE else None
                if inner is None and not any(k.startswith(path + b"/") for k in keep):
                    continue  # a directory gone whole, none of its files asked
                kept = self._without_deletions(oid, inner, keep, path + b"/", made, stand_ins)
                if kept is not None:
                    entries[name] = (mode, kept)
            elif stand_ins and path in stand_ins and (there is None or there[0] == TREE_MODE):
                entries[name] = (stand_ins[path][0], object_id(b"blob", stand_ins[path][1]))
            elif (there is not None and there[0] != TREE_MODE) or path in keep:
                entries[name] = (mode, oid)
        if entries == before:
            return old
        if not entries:
            return None
        data = tree_bytes(entries)
        oid = object_id(b"tree", data)
        made[oid] = data
        return oid

    def commits_touching(self, old: str, new: str, paths: list[str]) -> list[str]:
        """Commits after `old` up to `new` that change `paths`, oldest first; [] without history."""
        if not paths:
            return []
        # --topo-order: by ancestry, never by commit date (a skewed clock must not put a
        # revert before what it reverts).
        out = self._out("rev-list", "--reverse", "--topo-order", "--ancestry-path",
                        f"{old}..{new}", "--", *paths)
        return out.split()

    def path_log(self, old: str, new: str, paths: list[str]) -> list[tuple[str, list[str], bytes]]:
        """(commit, parents, message) of every commit after `old` up to `new` that changes
        `paths`, newest first by ancestry, merges and side branches included: without
        --full-history git's default simplification drops a side branch whose merge left the
        paths as its first parent had them, and a change made there (a revert merged in
        later) would never be seen. Reads no file content."""
        if not paths:
            return []
        out = self._run("log", "--full-history", "--topo-order", "--format=%x00%H %P%n%B",
                        f"{old}..{new}", "--", *paths, what="reading upstream history").stdout
        return _commit_records(out)

    def commits_since(self, old: str, new: str) -> list[tuple[str, list[str], bytes]]:
        """(commit, parents, message) of every commit after `old` up to `new`, side branches
        included, in git's order: path_log's answer for every path at once, read from the
        commits alone (no tree compared), for a caller that asks which of them change which
        files only of the few it wants (files_changed)."""
        out = self._run("log", "--format=%x00%H %P%n%B", f"{old}..{new}",
                        what="reading upstream history").stdout
        return _commit_records(out)

    def common_ancestor(self, commits: list[str]) -> str | None:
        """A commit that is an ancestor of each of `commits` (git's best common ancestor of
        them all), None when they share no history."""
        out = self._run("merge-base", "--octopus", *commits, ok=(0, 1),
                        what="reading upstream history").stdout.split()
        return out[0].decode() if out and _HEX40.fullmatch(out[0].decode()) else None

    def files_changed(self, commits: list[str]) -> dict[str, set[str]]:
        """The files each of `commits` (commits with one parent) changes against its parent,
        no rename detection: one git process however many commits."""
        if not commits:
            return {}
        out = self._run("diff-tree", "--stdin", "-r", "-z", "--raw", "--no-renames",
                        input="".join(f"{c}\n" for c in commits).encode(),
                        what="reading upstream history").stdout
        found: dict[str, set[str]] = {c: set() for c in commits}
        fields = out.split(b"\0")
        current = None
        k = 0
        while k < len(fields):
            field = fields[k]
            if field.startswith(b":") and k + 1 < len(fields):
                # (`:modes ids status`, then the one path: no renames asked for.)
                if current is not None:
                    found[current].add(decode_path(fields[k + 1]))
                k += 2
                continue
            text = field.decode("ascii", "replace").strip()
            if text:
                current = text
                found.setdefault(text, set())
            k += 1
        return found

    def earlier_versions(self, rev: str, path: str, limit: int) -> list[tuple[str, str, str]]:
        """The last `limit` commits up to `rev` that change `path` (first parents: the line of
        versions a release followed), newest first, each as (commit, its first parent, its
        subject): the file at the parent is the version that commit changed. [] without
        history (an imported wheel or directory is a root commit). Reads no file content."""
        out = self._run("log", "--first-parent", f"-n{limit}", "--format=%H%x00%P%x00%s",
                        rev, "--", path, what="reading upstream history").stdout
        found = []
        for line in out.decode("utf-8", "replace").splitlines():
            commit, parents, subject = (line.split("\0") + ["", ""])[:3]
            if parents.split():
                found.append((commit, parents.split()[0], subject))
        return found

    def versions_held(self, namespace: str, rev: str) -> list[tuple[str, str]]:
        """The revisions of git upstream `namespace` (store_namespace) the store holds by name,
        before `rev` in its history (ancestors of it, `rev` itself left out): the tags,
        branches and commits fetched for pins, targets judged and rebases, each as (commit,
        its tag's name, else the commit id), tags first, newest first by commit date. A
        release the project was pinned at is among them however far back it lies: an earlier
        release's file is found beyond any window of recent commits. One git process."""
        check_upstream_name(namespace)
        base = f"refs/patchforge/remotes/{namespace}/"
        out = self._out("for-each-ref", f"--merged={rev}", "--sort=-committerdate",
                        "--format=%(objectname) %(*objectname) %(refname)", base,
                        what="listing the upstream's revisions in the store")
        found: dict[str, tuple[int, int, str]] = {}  # commit -> (kind's rank, order, name)
        for order, line in enumerate(out.splitlines()):
            obj, peeled, ref = line.split(" ", 2)  # (a tag's peeled commit, else "")
            commit = peeled or obj
            if commit == rev or not _HEX40.fullmatch(commit):
                continue
            kind, _, name = ref[len(base):].partition("/")
            # A branch moves on: what the store holds is the commit it named when fetched.
            rank, said = (0, name) if kind == "tags" else (1, commit)
            if commit not in found or rank < found[commit][0]:
                found[commit] = (rank, order, said)
        return [(commit, said) for commit, (_, _, said) in
                sorted(found.items(), key=lambda item: item[1][:2])]

    def added_files(self, commit: str) -> list[str]:
        """The files `commit` adds against its first parent (no rename detection), sorted."""
        out = self._run("diff-tree", "-r", "-z", "--no-renames", "--name-only",
                        "--diff-filter=A", "--no-commit-id", f"{commit}^", commit,
                        what="reading upstream history").stdout
        return sorted(decode_path(name) for name in out.split(b"\0") if name)

    def only_parent(self, commit: str) -> tuple[str, bytes] | None:
        """(its one parent, its message) of `commit` (a full id), read from the commit object
        by cat-file, no git process; None for a merge, a root commit, one the store lacks, or
        in a shallow store (where git's walks take a commit at the shallow edge for a root,
        whatever parent its object names; or with grafts, which git's walks follow). The
        parent is its ancestor: is_ancestor answers so without asking git."""
        if not _HEX40.fullmatch(commit) or (self.git_dir / "shallow").exists() or \
                (self.git_dir / "info" / "grafts").exists():
            return None
        got = self._cat.query([f"{commit}^{{commit}}"])[0]
        if got is None or got[1] != "commit":
            return None
        header, _, message = got[2].partition(b"\n\n")
        # (A header's continued line, a signature's, starts with a space.)
        parents = [line[len(b"parent "):].decode() for line in header.split(b"\n")
                   if line.startswith(b"parent ")]
        if len(parents) != 1 or not _HEX40.fullmatch(parents[0]):
            return None
        with self._lock:
            self._ancestry[(parents[0], commit)] = True
        return parents[0], message

    def is_ancestor(self, a: str, b: str) -> bool:
        # Ancestry of two commit ids never changes: ask git once per pair (status asks the same
        # base/target question for every landed patch).
        key = (a, b)
        if key not in self._ancestry:
            self._ancestry[key] = self._run("merge-base", "--is-ancestor", a, b,
                                            ok=(0, 1)).returncode == 0
        return self._ancestry[key]

    def newest_first(self, commits: list[str], tip: str, *, after: str | None = None) -> list[str]:
        """The `commits` that are ancestors of `tip` (and not of `after`), newest first by
        ancestry (`git rev-list --topo-order`: a commit before every one of its ancestors),
        not by date or name; one git process however many commits are asked about."""
        wanted = set(commits)
        if not wanted:
            return []
        args = ["rev-list", "--topo-order", tip]
        if after is not None:
            args += ["--not", after]
        return [c for c in self._out(*args, what="ordering commits").split() if c in wanted]

    def log_patches(self, old: str, new: str, paths: list[str]) -> bytes:
        """`git log -p` (fixed options) of the commits after `old` up to `new` touching
        `paths`, limited to them, newest first by ancestry: what the history evidence (and
        which commits touch which file) is read from where `range_changes` cannot stand in."""
        # The message, indented four spaces (no line of it can pass for a `commit` or
        # `diff --git` line), says which commits a revert reverts.
        return self._run("log", "-p", *DIFF_OPTIONS, "--format=commit %H%n%w(0,4,4)%B",
                         "--ancestry-path", "--topo-order",
                         f"{old}..{new}", "--", *paths, what="reading upstream history",
                         spool=True, env=self._only_owner_fetches([new])).stdout

    def range_changes(self, old: str, new: str) -> bytes:
        """`git log --raw -m` of the commits after `old` up to `new` (`log_patches`' walk and
        order, no path limit, no diffs): each commit with its parents and its message (indented
        four spaces), then the paths it changes against its parent; a merge once per parent.
        Listing every changed path costs git far less than matching a long pathspec against
        every commit's trees."""
        out = self._answer_of_two_commits(
            "range", old, new, ("log", "--raw", "-m", "--no-renames", "--no-abbrev",
                                "--format=commit %H %P%n%w(0,4,4)%B", "--ancestry-path",
                                "--topo-order", f"{old}..{new}"),
            what="reading upstream history", spool=True)
        if old != new and _HEX40.fullmatch(old) and _HEX40.fullmatch(new):
            # The walk also answers is_ancestor(old, new), which would otherwise be a
            # `merge-base --is-ancestor` of its own (0.1-0.17 s before a 2.5k-commit walk): it
            # lists only commits that descend from `old` (--ancestry-path), so `old` is an
            # ancestor of `new` exactly when a commit it lists has `old` as a parent (the
            # child of `old` on the way to `new` is listed; a commit git lists is reachable
            # from `new`).
            with self._lock:
                self._ancestry.setdefault((old, new), _lists_a_child_of(out, old))
        return out

    def _answer_of_two_commits(self, kind: str, old: str, new: str, args: tuple[str, ...], *,
                               what: str, spool: bool = False,
                               reads: list[str] | None = None) -> bytes:
        """git's output for `args`, a question about the commits `old` and `new` alone (the
        range's walk, the rename pairing): kept in the cache (keep_text) once asked, and read
        back by the next command asking it, with no git process. Two commit ids name the same
        commits, trees and contents for ever, so the answer can only change with the question
        (`args`) or with git itself: the kept file's name is a digest of both (the executable's
        path, size and time), and of the two ids. A kept file cut short or damaged (its length
        and CRC-32 are checked) is asked of git again. Names that are not two full commit ids
        (a ref moves) are always asked of git."""
        name = None
        if _HEX40.fullmatch(old) and _HEX40.fullmatch(new):
            name = answer_name(kind, args)
            kept = answer_of(self.kept_text(name))
            if kept is not None:
                return kept
        # (`reads`: the revisions whose files git reads, fetching any missing by itself.)
        out = self._run(*args, what=what, spool=spool,
                        env=self._only_owner_fetches(reads) if reads else None).stdout
        if name is not None:
            self.keep_text(name, answer_parts([out]))
        return out

    def commit_patches(self, commits: list[str], paths: list[str]) -> bytes:
        """What `log_patches` gives of these (non-merge) commits, limited to `paths`: each
        commit's id on a line, then its diff against its parent, in one `git diff-tree`."""
        return self.start_commit_patches(commits, paths).result()

    def start_commit_patches(self, commits: list[str], paths: list[str]) -> HistoryDiffs:
        """commit_patches() started: its result() is the same text, read when needed. A
        commit's diff of a file never changes: git's sections are kept per commit in the cache
        (store.commitdiffs: a nightly's history is mostly the last one's), and a later command
        asks git only for the commits whose files asked are not kept yet (none: no git). The
        diffs of every file of the commits (no `paths`) are kept whole, named by a digest of
        the commits and git, as _answer_of_two_commits keeps its answers."""
        # DIFF_OPTIONS (git's defaults, named): a commit's diff of a file is then the diff
        # store.diff.changed_blocks makes of its two contents (landed detection takes one
        # for the other).
        args = ("diff-tree", "--stdin", "-p", *DIFF_OPTIONS, "--", *paths)
        input = "".join(f"{c}\n" for c in commits).encode()
        if not all(_HEX40.fullmatch(commit) for commit in commits):
            return HistoryDiffs(self._start_history_diffs(args, commits))
        if paths and len(set(commits)) == len(commits) and commitdiffs.answerable(paths):
            return self._start_per_commit(commits, paths)
        name = answer_name("diffs", args, (input,))
        kept = answer_of(self.kept_text(name))
        if kept is not None:
            return HistoryDiffs(kept)

        def keep(out: bytes) -> bytes:
            self.keep_text(name, answer_parts([out]))
            return out
        return HistoryDiffs(self._start_history_diffs(args, commits), keep)

    def _start_history_diffs(self, args: tuple[str, ...], commits: list[str]) -> StartedGit:
        """`git diff-tree --stdin` (`args`) of `commits`, started."""
        return StartedGit(*args, git_dir=self.git_dir,
                          input="".join(f"{c}\n" for c in commits).encode(),
                          what="reading upstream history",
                          env=self._only_owner_fetches(commits[:1]))

    def _start_per_commit(self, commits: list[str], paths: list[str]) -> HistoryDiffs:
        """start_commit_patches of full commit ids (each once) and `paths`, from the records
        kept per commit: git asked only for the commits with a file not kept, and only for
        those files; its sections kept, added to each commit's record. Where git's text
        cannot be cut into records (commitdiffs.split: a path that is a directory in some
        commit, say), the question is asked of git whole, as before, and nothing is kept."""
        head = ("diff-tree", "--stdin", "-p", *DIFF_OPTIONS, "--")
        with self._lock:  # (one per store: the threads of a command share its records)
            if self._commit_diffs is None:
                self._commit_diffs = commitdiffs.KeptCommitDiffs(self.git_dir.parent, head)
            kept = self._commit_diffs
        records = {commit: kept.record(commit) for commit in commits}
        asked = [commit for commit in commits if not records[commit].keys() >= set(paths)]
        if not asked:
            text = commitdiffs.rebuilt(commits, paths, records)
            assert text is not None
            return HistoryDiffs(text)
        missing = commitdiffs.git_order({path for commit in asked for path in paths
                                         if path not in records[commit]})

        def finish(out: bytes) -> bytes:
            found = commitdiffs.split(out, asked, missing)
            if found is None:
                return out if asked == commits and missing == commitdiffs.git_order(paths) \
                    else self._start_history_diffs((*head, *paths), commits).result()
            for commit in asked:
                records[commit] = kept.add(commit, found[commit])
            text = commitdiffs.rebuilt(commits, paths, records)
            assert text is not None
            return text
        return HistoryDiffs(self._start_history_diffs((*head, *missing), asked), finish)

    def new_contents(self, commit: str) -> dict[str, bytes]:
        """Each file `commit` (not a merge) adds or changes, with its content after it (no
        submodule), read without a diff: `git diff-tree --raw` names them and their blobs
        (new_blobs), cat-file reads those (a partial store's missing ones fetched first, at
        once)."""
        blob_of = self.new_blobs(commit)
        blobs = self.history_blobs({oid: (commit, path) for path, oid in blob_of.items()})
        return {path: blobs[oid] for path, oid in blob_of.items() if oid in blobs}

    def new_blobs(self, commit: str) -> dict[str, str]:
        """Each file `commit` (not a merge) adds or changes -> its blob id after it (no
        submodule), from `git diff-tree --raw`: no content is read."""
        out = self._run("diff-tree", "-r", "-z", "--no-commit-id", "--no-renames",
                        "--no-abbrev", "--diff-filter=d", commit,
                        what="reading upstream history").stdout
        fields = out.split(b"\0")
        blob_of: dict[str, str] = {}
        for meta, name in zip(fields[0::2], fields[1::2]):
            _, new_mode, _, new_oid, _ = meta.split()  # `:100644 100644 <old> <new> M`
            if new_mode != b"160000":
                blob_of[decode_path(name)] = new_oid.decode()
        return blob_of

    # Texts a command made from the store's contents and kept for the next one (judge's
    # loose code of a release's files), beside the store: `<cache>/kept/NAME`.
    KEPT_DIR = "kept"
    _KEPT_NAME = re.compile(r"[0-9a-z][0-9a-z.-]*")
    # How many texts `kept/` holds: the most recently used (made or read), the others removed
    # when a new one is written. A stack following nightlies asks about a new release each
    # night (18.7 MB each for vllm), and nothing else ever removed them. Eight hold the old and
    # new release of two upstreams in two projects sharing the cache; a text removed is only
    # made again by the next command that asks for it.
    KEPT_AT_MOST = 8
    # git's answers kept by _answer_of_two_commits (`git-*`: a history's walk, a rename
    # pairing, 1 KB to a few MB each, a few per pin and target) are bounded apart, so that
    # they never push a release's text out: the KEPT_ANSWERS_AT_MOST last used.
    KEPT_ANSWERS_AT_MOST = 64
    _KEPT_ANSWER_PREFIX = "git-"

    def kept_text(self, name: str) -> bytes | mmap.mmap | None:
        """The bytes keep_text(name) wrote last, None when there are none (or they cannot be
        read). Whole, but not checked: a crash may leave an empty or short file (keep_text does
        not wait for the disk), so the caller's format must tell a whole text from a part.

        Mapped, not read (a release's text is 18.7 MB: read, it took 4,600 fresh pages and
        a copy, 10 ms of a command's CPU): the file's pages are the page cache's. keep_text
        never writes into a kept file, only renames a new one over it, and _bound_kept only
        removes its name, so the mapped bytes stay what they were while the command runs.
        A text read is marked used now (its modification time), which keeps it among the
        KEPT_AT_MOST that keep_text leaves."""
        assert self._KEPT_NAME.fullmatch(name), name
        try:
            with open(self.git_dir.parent / self.KEPT_DIR / name, "rb") as f:
                with contextlib.suppress(OSError):  # a read-only cache: read, not marked
                    os.utime(f.fileno())
                if os.fstat(f.fileno()).st_size == 0:
                    return b""
                return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        except (OSError, ValueError):
            return None

    def keep_text(self, name: str, parts: list[bytes], *, synced: bool = False) -> None:
        """Keep the bytes of `parts`, one after the other, as `name` for kept_text (written
        with writev, never joined: a release's text is 18.7 MB): to a temporary file renamed
        over the old one, so a reader finds one text or the other; not synced (a text lost to
        a crash is made again) unless `synced` (store.kept.keep's). A cache that cannot be
        written keeps nothing, and says nothing: what is kept only spares the next command
        work."""
        assert self._KEPT_NAME.fullmatch(name), name
        directory = self.git_dir.parent / self.KEPT_DIR
        if keep_file(directory, name, parts, synced=synced):
            self._bound_kept(directory, name)

    def _bound_kept(self, directory: Path, written: str) -> None:
        """Remove the texts beyond the KEPT_AT_MOST most recently used (by modification time:
        made, or read by kept_text), and git's answers beyond the KEPT_ANSWERS_AT_MOST (counted
        apart), never `written`, and killed writes' temporary files (store.kept.bound)."""
        def group_of(name: str) -> int | None:
            if not self._KEPT_NAME.fullmatch(name):
                return None
            return 1 if name.startswith(self._KEPT_ANSWER_PREFIX) else 0

        bound_kept(directory, group_of, [(self.KEPT_AT_MOST, None),
                                         (self.KEPT_ANSWERS_AT_MOST, None)], written)

    def fetch_history_blobs(self, where: dict[str, tuple[str, str]]) -> None:
        """Bring these blobs of the history (`where` as history_blobs') into a partial store
        that lacks some, in one `git fetch`, before a `git diff-tree` of the history reads
        them. Left to that diff, git fetches a diff's missing blobs itself one commit at a
        time: 66 fetches (264 git processes, 9.4 s of wall) for the history's diffs in a first
        `status --against` 382 commits ahead, against 1 s once fetched at once. And each of
        those fetches is a pack of one commit's versions, every one whole, where versions
        fetched together come as deltas of each other (136 of the 173 blobs of the largest
        such diff; 2.3 -> 0.7 MB in the store), which every later diff of them inflates far
        less of (777 -> 546 million instructions of that `git diff-tree`). Offline nothing
        is done (git's own reads say what is missing)."""
        with self._lock:
            if is_offline() or not self._is_partial():
                return
            wanted = set(where).difference(self._present)
            if wanted:
                self._fetch_missing(wanted, where)

    def holds_blobs(self, oids: Iterable[str]) -> bool:
        """Whether the store holds every one of these blobs: True for a store that is not
        partial, or offline (nothing could be fetched); else told by its pack indexes
        (_held_by_packs), without a git process, False where they cannot tell."""
        with self._lock:
            if is_offline() or not self._is_partial():
                return True
            wanted = set(oids).difference(self._present)
            held = self._held_by_packs(wanted) if wanted else set()
            if held is None:
                return False
            self._present.update(held)
            return held == wanted

    def _held_by_packs(self, oids: set[str]) -> set[str] | None:
        """Those of `oids` (full ids) that the store's packs hold, read from their indexes
        (version 2: a fan-out table of 256 counts, then the sorted ids) or else held as loose
        objects, without a git process; None where that may not be the whole answer (a
        multi-pack index, alternates, an index of another version or not readable). An id
        named here is in the store; one not named may still be (a pack written meanwhile):
        only whether a fetch is asked for depends on it, and that fetch asks git first."""
        objects = self.git_dir / "objects"
        pack_dir = objects / "pack"
        try:
            names = set(os.listdir(pack_dir))
            if "multi-pack-index" in names or (objects / "info" / "alternates").exists():
                return None
            tables = []
            for name in names:
                if not name.endswith(".idx") or name[:-4] + ".pack" not in names:
                    continue
                table = self._pack_ids.get(name)
                if table is None:
                    # Mapped, not read: only the pages of the ids looked for are touched.
                    with open(pack_dir / name, "rb") as f:
                        try:
                            data = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
                        except ValueError:  # an empty file (damage: git names it)
                            return None
                    if data[:8] != b"\xfftOc\x00\x00\x00\x02" or len(data) < 1032:
                        return None
                    table = self._pack_ids[name] = (struct.unpack_from(">256I", data, 8), data)
                tables.append(table)
        except OSError:
            return None
        if any(len(oid) != 40 for oid in oids):
            return None  # (SHA-1 ids only: the indexes read here hold 20-byte ids)
        held = set()
        left = {oid: bytes.fromhex(oid) for oid in oids}
        # The largest pack first: after a repack it holds nearly everything, and each id
        # found there is not looked for in the others.
        for fanout, data in sorted(tables, key=lambda table: -table[0][255]):
            for oid, key in list(left.items()):
                first = key[0]
                # The ids starting with that byte, 20 bytes each after the 1,032 of the header.
                low = 1032 + 20 * (fanout[first - 1] if first else 0)
                high = 1032 + 20 * fanout[first]
                at = data.find(key, low, high)
                while at >= 0 and (at - 1032) % 20:  # (a match across two ids)
                    at = data.find(key, at + 1, high)
                if at >= 0:
                    held.add(oid)
                    del left[oid]
        held.update(oid for oid in left if os.path.exists(objects / oid[:2] / oid[2:]))
        return held

    def history_blobs(self, where: dict[str, tuple[str, str]]) -> dict[str, bytes]:
        """The contents of blobs of the history by id (`where`: id -> (a commit, the path it
        has there), named when a partial store cannot bring one offline), a partial store's
        missing ones fetched first, at once; read in one cat-file round."""
        with self._lock:
            if self._is_partial():
                self._fetch_missing(set(where), where)
        oids = list(where)
        if len(oids) >= self.DELTA_ORDER_AT_LEAST:
            oids = self._bases_last(oids)
        return self.blobs_by_id(oids)

    # The fewest blobs history_blobs reads in _bases_last's order (its `git cat-file
    # --batch-check` costs more than it saves on a few).
    DELTA_ORDER_AT_LEAST = 256

    def _bases_last(self, oids: list[str]) -> list[str]:
        """`oids` ordered so that a blob the store's packs keep as a delta of another of them
        comes before that other (deepest first, as `git cat-file --batch-check`'s
        `%(deltabase)` chains them). git keeps each base it inflates on the way to a delta in
        its delta base cache, but not the object asked for: a base asked for before its delta
        is inflated twice, and a release's blobs chain through each other (a 300-patch rebase
        read 1,246 blobs of a release whose packs hold 987 of them as bases of others:
        917 -> 586 million instructions of cat-file). Only the order changes: the same
        contents are read. Every blob is in the store (a partial store fetched the missing
        ones first), so the check fetches nothing."""
        out = self._run("cat-file", "--batch-check=%(objectname) %(deltabase)",
                        input="".join(o + "\n" for o in oids).encode(),
                        what="git cat-file (how the store keeps the files)").stdout
        base: dict[bytes, bytes] = {}
        for line in out.split(b"\n"):
            fields = line.split(b" ")
            if len(fields) == 2:
                base[fields[0]] = fields[1]
        asked = {o.encode() for o in oids}
        depth: dict[bytes, int] = {}
        for start in asked:
            chain: list[bytes] = []
            oid: bytes | None = start
            while oid in asked and oid not in depth and len(chain) <= len(asked):
                chain.append(oid)
                oid = base.get(oid)
            below = depth.get(oid, -1) if oid is not None else -1
            for one in reversed(chain):
                below += 1
                depth[one] = below
        return sorted(oids, key=lambda o: -depth.get(o.encode(), 0))

    def commits_file_patches(self, commits: list[str], paths: list[str]) -> bytes:
        """commit_patches(commits, paths) with `paths` taken as they are (as
        commit_file_patches takes them), in one `git diff-tree`."""
        return self._run("--literal-pathspecs", "diff-tree", "--stdin", "-p", "--no-color",
                         "--no-ext-diff", "--no-textconv", "--no-renames", "--full-index", "--",
                         *paths, input="".join(f"{c}\n" for c in commits).encode(),
                         what="reading upstream history",
                         env=self._only_owner_fetches(commits[:1])).stdout

    def commit_file_patches(self, commit: str, paths: list[str]) -> bytes:
        """commit_patches([commit], paths) with `paths` taken as they are (a name starting with
        `:` or holding `*` is no pathspec magic or pattern): any file's name can be asked."""
        return self._run("--literal-pathspecs", "diff-tree", "-p", "--no-color",
                         "--no-ext-diff", "--no-textconv", "--no-renames", "--full-index",
                         commit, "--", *paths, what="reading upstream history",
                         env=self._only_owner_fetches([commit])).stdout

    def share_history(self, a: str, b: str) -> bool:
        """Whether commits `a` and `b` have a common ancestor (`git merge-base`): an import of
        a wheel or a directory has none with the upstream's history."""
        return self._run("merge-base", a, b, ok=(0, 1)).returncode == 0

    def ahead_behind(self, a: str, b: str) -> tuple[int, int]:
        """(commits in `a` not in `b`, commits in `b` not in `a`), like `git status` of a vs b."""
        left, right = self._out("rev-list", "--left-right", "--count", f"{a}...{b}").split()
        return int(left), int(right)

    def patch_id(self, diff: bytes) -> str | None:
        """`git patch-id --stable` of a diff; None when it holds no change."""
        out = self._out("patch-id", "--stable", input=diff).split()
        return out[0] if out else None

    def patch_ids(self, stream: bytes) -> list[tuple[str, str]]:
        """`git patch-id --stable` over a stream of "commit <id>" sections: [(patch-id, id)]."""
        out = self._run("patch-id", "--stable", input=stream, what="git patch-id").stdout
        pairs = []
        for line in out.decode("ascii", "replace").splitlines():
            fields = line.split()
            if len(fields) == 2:
                pairs.append((fields[0], fields[1]))
        return pairs

    def format_patch(self, commit: str) -> bytes:
        """`git format-patch` of one commit, with options fixed so that the bytes never depend
        on the git version or the machine (no version signature, full index lines)."""
        # Binary files as `GIT binary patch` (git am needs their data), deflated at the level
        # store/diff.py uses.
        return self._run("-c", "core.compression=9", "format-patch", "-1", commit, "--stdout",
                         "--no-signature", "--binary", "--full-index", "--no-numbered",
                         "--subject-prefix=PATCH",
                         "--no-thread", "--encode-email-headers", "--stat=80", "--no-color",
                         what="git format-patch", env=self._only_owner_fetches([commit])).stdout

    def remote_head_branch(self, url: str, *, what: str) -> str | None:
        """The branch a remote's HEAD points to (`git ls-remote --symref URL HEAD`), if any."""
        try:
            check_git_url(url)
        except ValueError as exc:
            raise StoreError(str(exc)) from None
        try:
            out = self._run("ls-remote", "--symref", "--", url, "HEAD", what=what,
                            network=True).stdout
        except StoreError:
            return None
        for line in out.decode("utf-8", "replace").splitlines():
            match = re.match(r"^ref: refs/heads/(\S+)\tHEAD$", line)
            if match:
                return match[1]
        return None

    def range_diff_import(self) -> "RangeDiffImport":
        """A scratch `git fast-import` for a range-diff of two commit chains (see the class)."""
        return RangeDiffImport(self)

    # ---- writing trees to disk

    def materialize(self, rev: str, dest: Path, paths: list[str] | None = None) -> None:
        """Write the files of `rev` (or just `paths`) under `dest`; no HEAD, no checkout state."""
        dest = Path(dest)
        dest.mkdir(parents=True, exist_ok=True)
        tree = self.tree_id(rev)
        if paths is not None:
            for path in paths:
                check_path(path)
            self._prefetch(tree, paths)
        with tempfiles.TemporaryDirectory("patchforge-index-") as tmp:
            env = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
            self._run("read-tree", tree, env=env)
            work = ["--work-tree", str(dest)]
            if paths is None:
                self._run(*work, "checkout-index", "-a", "-f", env=env, what="writing files")
            elif paths:
                self._run(*work, "checkout-index", "-f", "-z", "--stdin", env=env,
                          input=b"".join(os.fsencode(p) + b"\0" for p in paths),
                          what="writing files")


_SYMLINK_MODE = "120000"
_SPLIT_ROUNDS = 8  # the copies of a split file named at most, past the one it is paired with
# How near the base-name pass asks a file of the same name to be: git's default 50%, plus half
# the rest (diffcore-rename.c, min_basename_score).
_BASENAME_SCORE = 75


def _pairs(out: bytes) -> dict[tuple[bytes, bytes], bytes]:
    """git diff-tree's renames (`-z --name-status --diff-filter=R`, `out`): (raw source, raw
    destination) -> the score as git says it (`098`)."""
    fields = out.split(b"\0")
    found = {}
    for i in range(0, len(fields) - 2, 3):
        if not fields[i].startswith(b"R"):
            break
        found[(fields[i + 1], fields[i + 2])] = fields[i][1:]
    return found


def _namesake_stand_ins(keep: set[bytes], deleted: dict[bytes, str],
                        added: set[str]) -> dict[bytes, tuple[str, bytes]]:
    """For the rename pairing (UpstreamStore._pairing_of): the deleted files (raw path ->
    blob id in `deleted`) not in `keep` whose base name a file of `keep` has, each as a
    stand-in (mode, contents): a symbolic link, which git's inexact pairing scores 0 against
    anything (`estimate_similarity` weighs regular files only), to a target no added blob
    (`added`) has, so no exact rename either. git's base-name pass counts it as merge-ort
    counts the deleted file: the name is no longer unique. An empty file is none: merge-ort
    weighs no empty file at all (--no-rename-empty)."""
    names = {path.rsplit(b"/", 1)[-1] for path in keep}
    found = {}
    for path, oid in deleted.items():
        if path in keep or path.rsplit(b"/", 1)[-1] not in names or oid == EMPTY_BLOB:
            continue
        data = b"patchforge: a deleted file of this base name, never paired: " + path
        while object_id(b"blob", data) in added:  # (not to be met; never an exact rename)
            data += b"."
        found[path] = (_SYMLINK_MODE, data)
    return found
