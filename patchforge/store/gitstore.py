"""The one git object store in the cache that holds all upstream content (`<cache>/store.git`).

It owns: the cache location, every git process patchforge starts (isolated configuration, fixed
locale, no pager or colour), reading blobs by revision through one persistent `git cat-file
--batch`, deterministic imports of wheels and directories (`git fast-import`), blob-less partial
fetches of git upstreams, commits made without a checkout, 3-way merges (`git merge-tree
--write-tree`), rename detection, ancestry, patch-ids, range-diffs and unified diffs made by git.

Refs it writes, all under `refs/patchforge/`:
  imports/<upstream>/<label>         a wheel or directory import (a root commit)
  remotes/<upstream>/heads|tags/<n>  remote-tracking refs of a git upstream
  remotes/<upstream>/commits/<sha>   a commit fetched by id, kept reachable
"""
from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Iterable, Iterator

from patchforge.errors import StoreError
from patchforge.store.giturl import ALLOWED_PROTOCOLS, check_git_url, is_local_git_url

if TYPE_CHECKING:
    import zipfile

# --------------------------------------------------------------------------------------------
# Cache location

def cache_dir() -> Path:
    """`$PATCHFORGE_CACHE`, else `$XDG_CACHE_HOME/patchforge`, else `~/.cache/patchforge`."""
    explicit = os.environ.get("PATCHFORGE_CACHE")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "patchforge"


def wheels_dir() -> Path:
    """`$PATCHFORGE_WHEELS`, else `<cache>/wheels`: shared by the tool, the tests, the benchmarks."""
    explicit = os.environ.get("PATCHFORGE_WHEELS")
    return Path(explicit) if explicit else cache_dir() / "wheels"


# --------------------------------------------------------------------------------------------
# Running git

# Fixed identity and date for everything patchforge itself creates: the same input gives the
# same object ids on every machine.
IMPORT_IDENT = ("patchforge", "patchforge@localhost", "0 +0000")
NULL_OID = "0" * 40
_HEX40 = re.compile(r"[0-9a-f]{40}")
_HEXABBREV = re.compile(r"[0-9a-fA-F]{4,40}")
_UPSTREAM_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")

# Kept from the caller's environment: what a fetch needs to reach a remote (ssh, askpass, TLS,
# proxies) and git's tracing. Every other GIT_* variable could redirect or change what git does
# (GIT_DIR, GIT_INDEX_FILE, GIT_DIFF_OPTS, GIT_CONFIG_COUNT, GIT_TEMPLATE_DIR...), so it goes.
_KEPT_GIT_VARS = re.compile(
    r"GIT_(SSH|SSH_COMMAND|SSH_VARIANT|ASKPASS|TERMINAL_PROMPT|SSL_\w+|HTTP_\w+|PROXY_\w+|"
    r"CURL_VERBOSE|TRACE\w*|EXEC_PATH)$")

# Passed on every command line: where a config file cannot reach (XDG attributes file) or where
# a default could change between git releases.
_BASE_CONFIG = (
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


def git_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of every git process: the caller's, minus what could change git's output."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("GIT_") or _KEPT_GIT_VARS.match(k)}
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
    if extra:
        env.update(extra)
    return env


_GIT_VERSION: tuple[int, int, int] | None = None


def git_version() -> tuple[int, int, int]:
    """The installed git's version, asked once per process."""
    global _GIT_VERSION
    if _GIT_VERSION is None:
        try:
            out = subprocess.run(["git", "--version"], capture_output=True, env=git_env(),
                                 check=True).stdout.decode("ascii", "replace")
        except (OSError, subprocess.CalledProcessError) as exc:
            raise StoreError(f"git is not usable: {exc}", hint="install git 2.38 or newer") from exc
        m = re.search(r"(\d+)\.(\d+)(?:\.(\d+))?", out)
        if not m:
            raise StoreError(f"cannot read the git version from {out.strip()!r}")
        _GIT_VERSION = (int(m.group(1)), int(m.group(2)), int(m.group(3) or 0))
    return _GIT_VERSION


def require_git(version: tuple[int, int], feature: str) -> None:
    have = git_version()
    if have[:2] < version:
        raise StoreError(
            f"{feature} needs git {version[0]}.{version[1]} or newer; this machine has "
            f"git {'.'.join(map(str, have))}", hint="install a newer git")


def _check_upstream_name(name: str) -> None:
    # The name becomes part of ref names and a remote name.
    if not _UPSTREAM_NAME.fullmatch(name) or ".." in name or name.endswith((".lock", ".")):
        raise StoreError(f"invalid upstream name {name!r} (letters, digits, '.', '_', '-')")


def _check_label(label: str) -> None:
    if (not label or label.startswith(("/", "-", ".")) or "//" in label or ".." in label
            or label.endswith(("/", ".lock", "."))
            or re.search(r"[\x00-\x20\x7f~^:?*\[\\]|@\{", label)):
        raise StoreError(f"invalid label {label!r}: it must be usable in a git ref name")


def _check_path(path: str) -> bytes:
    raw = os.fsencode(path)
    if not raw or b"\n" in raw or b"\0" in raw or raw.startswith(b"/"):
        raise StoreError(f"invalid path {path!r} in the store")
    parts = raw.split(b"/")
    if any(p in (b"", b".", b"..", b".git") for p in parts):
        raise StoreError(f"invalid path {path!r} in the store")
    return raw


def _decode_path(raw: bytes) -> str:
    return raw.decode("utf-8", "surrogateescape")


def _quote_fastimport(raw: bytes) -> bytes:
    # fast-import takes a path as is unless it starts with '"' or holds LF; quote C-style then.
    if not raw.startswith(b'"') and b"\n" not in raw:
        return raw
    return quote_c_path(raw, quote_high=False)


_C_ESCAPES = {7: b"\\a", 8: b"\\b", 9: b"\\t", 10: b"\\n", 11: b"\\v", 12: b"\\f", 13: b"\\r",
              34: b'\\"', 92: b"\\\\"}


def quote_c_path(raw: bytes, *, quote_high: bool = True) -> bytes:
    """git's C-style quoting of a path (as with core.quotePath=true), with the quotes."""
    out = bytearray(b'"')
    for byte in raw:
        if byte in _C_ESCAPES:
            out += _C_ESCAPES[byte]
        elif byte < 0x20 or byte == 0x7f or (quote_high and byte >= 0x80):
            out += b"\\%03o" % byte
        else:
            out.append(byte)
    out += b'"'
    return bytes(out)


def _diff_path(prefix: bytes, raw: bytes) -> bytes:
    # git quotes the whole "a/<path>" when the path needs quoting.
    full = prefix + raw
    if any(b < 0x20 or b >= 0x7f or b in (34, 92) for b in raw):
        return quote_c_path(full)
    return full


def diff_header(path: str) -> bytes:
    """The `diff --git a/<path> b/<path>` line git writes for an unrenamed path (no newline)."""
    raw = os.fsencode(path)
    return b"diff --git " + _diff_path(b"a/", raw) + b" " + _diff_path(b"b/", raw)


def _scratch_dir() -> str | None:
    # Short-lived temporary files (diff sides, blobs to hash) go to memory when the system has a
    # tmpfs: creating 600 files on a disk-backed /tmp cost ten times more than git's diff itself.
    shm = "/dev/shm"
    if os.path.isdir(shm) and os.access(shm, os.W_OK | os.X_OK):
        return shm
    return None


def blob_oid(data: bytes) -> str:
    """The git blob id (SHA-1) of `data`, computed without git."""
    import hashlib  # here, not at import: OpenSSL loads in ~5 ms, and few commands hash

    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


# --------------------------------------------------------------------------------------------
# Results


@dataclass(frozen=True)
class ImportResult:
    commit: str
    tree: str


@dataclass(frozen=True)
class MergeResult:
    clean: bool
    tree: str
    conflicts: tuple[str, ...]
    messages: str


@dataclass(frozen=True)
class FileChange:
    """One file of a diff: paths (None for creation/deletion), contents and modes."""
    old_path: str | None
    new_path: str | None
    old: bytes | None
    new: bytes | None
    old_mode: str = "100644"
    new_mode: str = "100644"


# --------------------------------------------------------------------------------------------
# Unified diffs made by git

# The fixed options of every content diff: no colour, no external diff or textconv, myers with
# the indent heuristic, three lines of context. The index line is written by us with FULL blob
# ids (see make_file_diff) so that it never depends on what a store happens to hold.
DIFF_OPTIONS = ("--no-color", "--no-ext-diff", "--no-textconv", "--diff-algorithm=myers",
                "--indent-heuristic", "-U3", "--no-renames", "--full-index")


def make_file_diff(old_path: str | None, new_path: str | None, old: bytes | None,
                   new: bytes | None, *, old_mode: str = "100644",
                   new_mode: str = "100644") -> bytes:
    """git's unified diff of one file's two contents, with a `diff --git a/<path> b/<path>` header.

    `old`/`old_path` None means a creation, `new`/`new_path` None a deletion; different paths a
    rename. The hunks are git's own (fixed options, see DIFF_OPTIONS); the header is written here:
    mode lines, `rename from/to` (no `similarity index` line: it is a heuristic score, not part
    of the change), and `index <old>..<new>[ <mode>]` with full 40-hex blob ids, so the preimage
    can be found in the store by id and the bytes never depend on abbreviation lengths.
    Returns b"" when nothing changes. Raises StoreError for binary (NUL-containing) content.
    """
    return make_diff([FileChange(old_path, new_path, old, new, old_mode, new_mode)])


def make_diff(changes: Iterable[FileChange | tuple]) -> bytes:
    """Several files' diffs (see make_file_diff) in one git process, sorted by path."""
    return make_diffs([changes])[0]


def make_diffs(groups: Iterable[Iterable[FileChange | tuple]]) -> list[bytes]:
    """make_diff for many patches at once, still one git process: a rebase re-emits every patch
    of a series, and a process each cost ~15 ms a patch."""
    sorted_groups = []
    for changes in groups:
        items = [c if isinstance(c, FileChange) else FileChange(*c) for c in changes]
        for c in items:
            _check_change(c)
        items.sort(key=lambda c: (os.fsencode(c.new_path or c.old_path),
                                  os.fsencode(c.old_path or "")))
        sorted_groups.append(items)
    flat = [c for items in sorted_groups for c in items]
    hunks = _git_hunks([(c.old, c.new) for c in flat]) if flat else []
    out, at = [], 0
    for items in sorted_groups:
        mine = hunks[at:at + len(items)]
        at += len(items)
        out.append(b"".join(_diff_header(c, bool(mine[i])) + mine[i]
                            for i, c in enumerate(items)
                            if c.old != c.new or c.old_path != c.new_path or _mode_changed(c)))
    return out


def _check_change(c: FileChange) -> None:
    if (c.old is None) != (c.old_path is None) or (c.new is None) != (c.new_path is None):
        raise StoreError("a diff side needs both a path and content, or neither")
    if c.old is None and c.new is None:
        raise StoreError("a diff needs at least one side")
    for side in (c.old, c.new):
        if side is not None and b"\0" in side:
            raise StoreError(f"{c.new_path or c.old_path}: binary content (NUL byte) "
                             "cannot be carried in a text patch")
    for mode in (c.old_mode, c.new_mode):
        if mode not in ("100644", "100755", "120000"):
            raise StoreError(f"unsupported file mode {mode}")


def merge_file(base: bytes, ours: bytes, theirs: bytes,
               labels: tuple[str, str, str] = ("upstream", "base", "patch")) -> tuple[bool, bytes]:
    """git merge-file on three versions of one file: (clean, the merge, with conflict markers
    where it is not clean). The one place patchforge runs git's file-level 3-way merge."""
    with tempfile.TemporaryDirectory(prefix="patchforge-merge-", dir=_scratch_dir()) as tmp:
        paths = []
        for name, data in (("ours", ours), ("base", base), ("theirs", theirs)):
            path = Path(tmp) / name
            path.write_bytes(data)
            paths.append(str(path))
        proc = subprocess.run(["git", "merge-file", "-p", "-L", labels[0], "-L", labels[1],
                               "-L", labels[2], *paths], capture_output=True, env=git_env())
    if proc.returncode < 0 or proc.returncode > 127:
        raise StoreError(f"git merge-file failed: {proc.stderr.decode(errors='replace')}")
    return proc.returncode == 0, proc.stdout


def _mode_changed(c: FileChange) -> bool:
    return c.old is not None and c.new is not None and c.old_mode != c.new_mode


def _diff_header(c: FileChange, has_hunks: bool) -> bytes:
    old_raw = _check_path(c.old_path) if c.old_path is not None else None
    new_raw = _check_path(c.new_path) if c.new_path is not None else None
    a = _diff_path(b"a/", old_raw if old_raw is not None else new_raw)
    b = _diff_path(b"b/", new_raw if new_raw is not None else old_raw)
    lines = [b"diff --git " + a + b" " + b]
    if c.old is None:
        lines.append(b"new file mode " + c.new_mode.encode())
    elif c.new is None:
        lines.append(b"deleted file mode " + c.old_mode.encode())
    else:
        if c.old_mode != c.new_mode:
            lines += [b"old mode " + c.old_mode.encode(), b"new mode " + c.new_mode.encode()]
        if old_raw != new_raw:
            lines += [b"rename from " + _unprefixed(old_raw),
                      b"rename to " + _unprefixed(new_raw)]
    if c.old != c.new:
        old_id = blob_oid(c.old) if c.old is not None else NULL_OID
        new_id = blob_oid(c.new) if c.new is not None else NULL_OID
        index = b"index " + old_id.encode() + b".." + new_id.encode()
        if c.old is not None and c.new is not None and c.old_mode == c.new_mode:
            index += b" " + c.old_mode.encode()
        lines.append(index)
    # As git: no ---/+++ lines without hunks (an empty file created or deleted).
    if has_hunks:
        lines.append(b"--- " + (a if c.old is not None else b"/dev/null"))
        lines.append(b"+++ " + (b if c.new is not None else b"/dev/null"))
    return b"".join(line + b"\n" for line in lines)


def _unprefixed(raw: bytes) -> bytes:
    if any(b < 0x20 or b >= 0x7f or b in (34, 92) for b in raw):
        return quote_c_path(raw)
    return raw


def _git_hunks(pairs: list[tuple[bytes | None, bytes | None]]) -> list[bytes]:
    """The hunk part (from the first `@@`) of git's diff of each (old, new) pair.

    One `git diff --no-index` over two temporary directories whose files are named by the pair's
    number, so a 300-file diff costs one process, not 300.
    """
    result = [b""] * len(pairs)
    todo = [i for i, (o, n) in enumerate(pairs) if o != n]
    if not todo:
        return result
    with tempfile.TemporaryDirectory(prefix="patchforge-diff-", dir=_scratch_dir()) as tmp:
        root = Path(tmp)
        for side in ("o", "n"):
            (root / side).mkdir()
        for i in todo:
            old, new = pairs[i]
            if old is not None:
                (root / "o" / str(i)).write_bytes(old)
            if new is not None:
                (root / "n" / str(i)).write_bytes(new)
        proc = subprocess.run(
            ["git", *_BASE_CONFIG, "diff", "--no-index", *DIFF_OPTIONS, "--", "o", "n"],
            cwd=root, capture_output=True, env=git_env())
        if proc.returncode not in (0, 1):
            raise StoreError("git diff failed: " + proc.stderr.decode("utf-8", "replace").strip())
    out = proc.stdout
    # No line of a hunk starts with "diff --git " (every hunk line starts with ' ', '+', '-' or
    # '\'), so splitting on it is exact.
    for chunk in re.split(rb"(?m)^(?=diff --git )", out):
        if not chunk:
            continue
        m = re.match(rb"diff --git (?:a/o|a/n)/(\d+) b/[on]/(\d+)\n", chunk)
        if not m:
            raise StoreError("unexpected git diff output: " + chunk[:80].decode("utf-8", "replace"))
        at = chunk.find(b"\n@@ ")
        if at < 0:
            if b"\nBinary files " in chunk:
                raise StoreError("binary content cannot be carried in a text patch")
            continue
        result[int(m.group(1))] = chunk[at + 1:]
    return result


# --------------------------------------------------------------------------------------------
# The persistent cat-file process


class _CatFile:
    """One `git cat-file --batch`: reads objects by id or `<rev>:<path>` without a process each.

    In a partial clone, a missing blob is fetched on demand by git itself (promisor remote).
    """

    def __init__(self, git_dir: Path) -> None:
        self._git_dir = git_dir
        self._proc: subprocess.Popen | None = None
        self._stderr: IO[bytes] | None = None
        self.lock = threading.Lock()

    def _start(self) -> subprocess.Popen:
        if self._proc is None or self._proc.poll() is not None:
            self._stderr = tempfile.TemporaryFile()
            self._proc = subprocess.Popen(
                ["git", *_BASE_CONFIG, "--git-dir", str(self._git_dir), "cat-file", "--batch"],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr,
                env=git_env())
        return self._proc

    def query(self, names: list[str]) -> list[tuple[str, str, bytes] | None]:
        """(oid, type, content) for each name, None when missing or ambiguous."""
        for name in names:
            if "\n" in name or not name:
                raise StoreError(f"invalid object name {name!r}")
        results: list[tuple[str, str, bytes] | None] = []
        with self.lock:
            proc = self._start()
            # Requests are written in chunks that fit the pipe, then every answer is read: git
            # flushes after each object, so neither side can block on a full pipe.
            start = 0
            while start < len(names):
                end, size = start, 0
                while end < len(names) and (end == start or size < 16384):
                    size += len(os.fsencode(names[end])) + 1
                    end += 1
                try:
                    proc.stdin.write(b"".join(os.fsencode(n) + b"\n" for n in names[start:end]))
                    proc.stdin.flush()
                    for _ in range(start, end):
                        results.append(self._read_one(proc))
                except (BrokenPipeError, OSError, ValueError) as exc:
                    self.close()
                    raise StoreError(f"git cat-file stopped: {self._error_text()}") from exc
                start = end
        return results

    def _read_one(self, proc: subprocess.Popen) -> tuple[str, str, bytes] | None:
        header = proc.stdout.readline()
        if not header:
            raise OSError("no answer")
        fields = header.rstrip(b"\n").split(b" ")
        if len(fields) == 3 and fields[2].isdigit():
            size = int(fields[2])
            data = proc.stdout.read(size + 1)
            if len(data) != size + 1:
                raise OSError("short read")
            return fields[0].decode(), fields[1].decode(), data[:size]
        # "<name> missing", "<name> ambiguous", or an extended message for symlinks: none of
        # them carry a body we must skip (we never ask with --follow-symlinks).
        return None

    def _error_text(self) -> str:
        if self._stderr is None:
            return "unknown error"
        self._stderr.seek(0)
        return self._stderr.read().decode("utf-8", "replace").strip()[-2000:] or "unknown error"

    def close(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None:
            _end_process(proc, grace=5)
            proc.stdout.close()
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None


def _end_process(proc: subprocess.Popen, *, grace: float) -> None:
    """Close a process's stdin, give it `grace` seconds to exit on its own, then kill it."""
    try:
        proc.stdin.close()
    except OSError:
        pass
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


# --------------------------------------------------------------------------------------------
# The store


# Above this many bytes of file contents the read cache starts over (a vLLM-sized overlay
# build reads a few hundred files; this bounds a pathological one).
_BLOB_CACHE_BYTES = 256 << 20


class UpstreamStore:
    """The bare repository `<cache>/store.git`. Not thread-safe beyond the cat-file reader."""

    # zlib level for imported packs: level 1 costs about a third more time than 0 (stored) but
    # halves the disk used by a vLLM wheel (787 MB -> 343 MB); deltas are off (see import_wheel).
    PACK_COMPRESSION = 1

    def __init__(self, git_dir: Path) -> None:
        self.git_dir = Path(git_dir)
        self._cat = _CatFile(self.git_dir)
        self._ancestry: dict[tuple[str, str], bool] = {}
        self._present: set[str] = set()  # blob ids known to be in the store (not promised)
        # Parsed trees (tree id -> {name: (mode, id)}) and, for full commit/tree ids only
        # (a ref can move), which tree a directory is: a series keeps asking about the same
        # few directories, and each question is otherwise a cat-file round trip plus a parse.
        self._tree_cache: dict[str, dict[bytes, tuple[str, str]]] = {}
        self._dir_trees: dict[tuple[str, str], str | None] = {}
        self._partial = False
        self._blobs: dict[str, dict[str, bytes | None]] = {}  # commit -> path -> content
        self._blob_bytes = 0

    # ---- opening

    @classmethod
    def open(cls, cache: Path | None = None) -> "UpstreamStore":
        """Open `<cache>/store.git`, creating it (bare) on first use."""
        git_dir = Path(cache if cache is not None else cache_dir()) / "store.git"
        if not (git_dir / "HEAD").is_file():
            git_dir.parent.mkdir(parents=True, exist_ok=True)
            # A temp name then a rename: two processes creating the store at once both succeed.
            tmp = Path(tempfile.mkdtemp(prefix=".store.git.", dir=git_dir.parent))
            try:
                subprocess.run(["git", "init", "-q", "--bare", "--template=", str(tmp)],
                               env=git_env(), capture_output=True, check=True)
                settings = [
                    # repositoryformatversion 1 lets promisor (partial clone) remotes work.
                    ("core.repositoryformatversion", "1"),
                    ("core.logAllRefUpdates", "false"),
                    ("gc.auto", "0"),
                    ("fetch.writeCommitGraph", "false"),
                    ("uploadpack.allowFilter", "true"),
                ]
                for key, value in settings:
                    subprocess.run(["git", "--git-dir", str(tmp), "config", key, value],
                                   env=git_env(), capture_output=True, check=True)
                os.replace(tmp, git_dir)
            except subprocess.CalledProcessError as exc:
                shutil.rmtree(tmp, ignore_errors=True)
                raise StoreError(f"cannot create the store at {git_dir}: "
                                 + exc.stderr.decode("utf-8", "replace").strip()) from exc
            except OSError:
                # Somebody else created it first.
                shutil.rmtree(tmp, ignore_errors=True)
                if not (git_dir / "HEAD").is_file():
                    raise
        return cls(git_dir)

    def close(self) -> None:
        self._cat.close()
        self.maintain()

    # Above this many packs the store is repacked (every fetch and import adds one; git itself
    # would gc, but the store runs with gc.auto=0 so that no command pauses at random). Every
    # git process opens each pack's index: at 500 packs a 5 ms git call took 150 ms.
    MAX_PACKS = 64

    def maintain(self) -> bool:
        """Repack into one pack (plus one for promised objects) when there are too many packs.
        No delta search (`--window=0`): a wheel's binaries would cost minutes for little gain,
        and deltas git already has are kept. True when it repacked."""
        try:
            packs = sum(1 for name in os.listdir(self.git_dir / "objects" / "pack")
                        if name.endswith(".pack"))
        except FileNotFoundError:
            return False
        if packs <= self.MAX_PACKS:
            return False
        self._run("-c", "repack.writeBitmaps=false", "repack", "-a", "-d", "-q", "--window=0",
                  what="repacking the store")
        return True

    def __enter__(self) -> "UpstreamStore":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ---- running git in the store

    def _run(self, *args: str, input: bytes | None = None, ok: tuple[int, ...] = (0,),
             env: dict[str, str] | None = None, what: str | None = None) -> subprocess.CompletedProcess:
        proc = subprocess.run(["git", *_BASE_CONFIG, "--git-dir", str(self.git_dir), *args],
                              input=input, capture_output=True, env=git_env(env))
        if proc.returncode not in ok:
            err = proc.stderr.decode("utf-8", "replace").strip()
            raise StoreError(f"{what or 'git ' + args[0]} failed: {err or 'exit ' + str(proc.returncode)}")
        return proc

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

    def read_blobs(self, rev: str, paths: list[str]) -> dict[str, bytes | None]:
        """Several files of one revision through one round of requests."""
        rev = self._pin(rev)
        for path in paths:
            _check_path(path)
        # Files of a full commit id never change: a series reads the same few files again and
        # again (each patch, the judge, the range-diff), so they are kept for the process.
        cache = self._blobs.setdefault(rev, {}) if _HEX40.fullmatch(rev) else {}
        asked = [p for p in dict.fromkeys(paths) if p not in cache]
        if asked:
            self._prefetch(rev, asked)
            got = self._cat.query([f"{rev}:{p}" for p in asked])
            for path, answer in zip(asked, got):
                content = answer[2] if answer is not None and answer[1] == "blob" else None
                cache[path] = content
                self._blob_bytes += len(content or b"")
            if self._blob_bytes > _BLOB_CACHE_BYTES:
                found = {p: cache[p] for p in paths}
                self._blobs.clear()
                self._blob_bytes = 0
                return found
        return {p: cache[p] for p in paths}

    def blob_id(self, rev: str, path: str) -> str | None:
        found = self.entry(rev, path)
        return found[1] if found is not None else None

    def entry(self, rev: str, path: str) -> tuple[str, str] | None:
        """(mode, blob id) of a file at `rev`, None when absent or a directory."""
        return self.entries(rev, [path])[path]

    def entries(self, rev: str, paths: list[str]) -> dict[str, tuple[str, str] | None]:
        """entry() of several paths, their directories asked of cat-file in one round."""
        split = {}
        for path in paths:
            parent, _, name = _check_path(path).rpartition(b"/")
            split[path] = (_decode_path(parent), name)
        trees = self._trees_of(rev, sorted({parent for parent, _ in split.values()}))
        found: dict[str, tuple[str, str] | None] = {}
        for path, (parent, name) in split.items():
            tree = trees[parent]
            hit = self._tree_cache[tree].get(name) if tree is not None else None
            found[path] = None if hit is None or hit[0] in ("40000", "160000") else \
                (hit[0].rjust(6, "0"), hit[1])
        return found

    def _trees_of(self, rev: str, directories: list[str]) -> dict[str, str | None]:
        """directory -> tree id at `rev` (None when it is not a directory there)."""
        cacheable = bool(_HEX40.fullmatch(rev))
        result = {d: self._dir_trees[(rev, d)] for d in directories
                  if cacheable and (rev, d) in self._dir_trees}
        asked = [d for d in directories if d not in result]
        if asked:
            got = self._cat.query([f"{rev}^{{tree}}:{d}" if d else f"{rev}^{{tree}}"
                                   for d in asked])
            for directory, answer in zip(asked, got):
                tree = answer[0] if answer is not None and answer[1] == "tree" else None
                if tree is not None and tree not in self._tree_cache:
                    self._tree_cache[tree] = _parse_tree(answer[2])
                result[directory] = tree
                if cacheable:
                    self._dir_trees[(rev, directory)] = tree
        return result

    def read_blob_id(self, oid: str) -> bytes:
        got = self._cat.query([oid])[0]
        if got is None or got[1] != "blob":
            raise StoreError(f"blob {oid} is not in the upstream store")
        return got[2]

    def has_object(self, oid: str) -> bool:
        """Whether `oid` exists (in a partial clone, a promisor may be asked for it)."""
        if not _HEXABBREV.fullmatch(oid):
            return False
        return self._cat.query([oid])[0] is not None

    def list_paths(self, rev: str, prefix: str | None = None) -> list[str]:
        """Every file path at `rev` (under directory `prefix` if given), in git's order."""
        args = ["ls-tree", "-r", "-z", "--name-only", "--full-tree", self._pin(rev)]
        if prefix:
            args += ["--", prefix.rstrip("/")]
        out = self._run(*args, what="listing files").stdout
        return [_decode_path(p) for p in out.split(b"\0") if p]

    def list_entries(self, rev: str, prefix: str | None = None) -> dict[str, tuple[str, str]]:
        """path -> (mode, blob id) for every file at `rev` (under `prefix`)."""
        args = ["ls-tree", "-r", "-z", "--full-tree", self._pin(rev)]
        if prefix:
            args += ["--", prefix.rstrip("/")]
        out = self._run(*args, what="listing files").stdout
        entries = {}
        for record in out.split(b"\0"):
            if record:
                meta, _, path = record.partition(b"\t")
                mode, _, oid = meta.split(b" ")
                entries[_decode_path(path)] = (mode.decode(), oid.decode())
        return entries

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
        if self._is_partial():
            self._fetch_missing({found[1] for rev, paths in wanted
                                 for found in self.entries(self._pin(rev), paths).values()
                                 if found is not None and found[1] not in self._present})

    def _prefetch(self, rev: str, paths: list[str]) -> None:
        """Bring the missing blobs of `paths` at `rev` with one fetch instead of one per blob."""
        if len(paths) >= 2:
            self.prefetch([(rev, paths)])

    def _fetch_missing(self, wanted: set[str]) -> None:
        if not wanted:
            return
        missing = self._missing(sorted(wanted))
        for remote in self._promisor_remotes() if missing else ():
            if not missing:
                break
            self._run("-c", "fetch.negotiationAlgorithm=noop", "fetch", remote, "--no-tags",
                      "--no-write-fetch-head", "--recurse-submodules=no", "--filter=blob:none",
                      "--stdin", input="".join(m + "\n" for m in missing).encode(), ok=(0, 1, 128))
            missing = self._missing(missing)
        # Objects never leave the store: remember the present ones, so that reading the same
        # files again (every patch of a series on one file) costs no `rev-list` process.
        self._present.update(wanted.difference(missing))

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
        what it prints is what is present.
        """
        out = self._out("rev-list", "--objects", "--no-walk", "--missing=print",
                        "--ignore-missing", "--stdin", input="".join(o + "\n" for o in oids).encode())
        present = {line[:40] for line in out.splitlines() if not line.startswith("?")}
        return [o for o in oids if o not in present]

    # ---- imports

    def import_wheel(self, wheel: Path, upstream: str, label: str, *,
                     sha256: str | None = None) -> ImportResult:
        """Import every file of a wheel (paths as in the zip) as a deterministic root commit.

        The commit is kept at refs/patchforge/imports/<upstream>/<label>. Same wheel, upstream,
        label (and sha256 note) give the same commit id in any store.
        """
        import zipfile  # only wheel imports read zips

        wheel = Path(wheel)
        try:
            archive = zipfile.ZipFile(wheel)
        except (OSError, zipfile.BadZipFile) as exc:
            raise StoreError(f"cannot read wheel {wheel}: {exc}") from exc
        with archive:
            members: dict[bytes, zipfile.ZipInfo] = {}
            skipped: list[bytes] = []
            for info in archive.infolist():
                if info.is_dir():
                    continue
                # Paths exactly as stored in the zip: zipfile decoded them with cp437 unless the
                # UTF-8 flag (bit 11) was set.
                raw = (info.filename.encode("utf-8") if info.flag_bits & 0x800
                       else info.filename.encode("cp437"))
                if b".git" in raw.split(b"/"):
                    # git metadata shipped by accident (e.g. a submodule's gitlink file, as in
                    # amd-aiter's wheels): not content, and a git tree cannot hold it. Skipped and
                    # named in the commit message, so the import stays deterministic and honest.
                    skipped.append(raw)
                    continue
                try:
                    _check_path(_decode_path(raw))
                except StoreError:
                    raise StoreError(f"wheel {wheel.name}: refusing member {raw!r} "
                                     "(absolute, '..', '.git' or control characters)") from None
                members[raw] = info  # a later duplicate wins, as on extraction

            def files() -> Iterator[tuple[bytes, str, int, Iterator[bytes]]]:
                for raw in sorted(members):
                    info = members[raw]
                    executable = info.create_system == 3 and (info.external_attr >> 16) & 0o111
                    yield raw, "100755" if executable else "100644", info.file_size, \
                        _zip_chunks(archive, info)

            message = f"patchforge import of {upstream} {label}\n\nwheel: {wheel.name}\n"
            if sha256:
                message += f"sha256: {sha256}\n"
            for raw in sorted(skipped):
                message += f"skipped: {_decode_path(raw)}\n"
            return self._import_files(files(), upstream, label, message)

    def import_directory(self, path: Path, upstream: str, label: str) -> ImportResult:
        """Import a directory tree as a deterministic root commit (like import_wheel).

        Regular files keep their exec bit; symlinks are recorded as symlinks (mode 120000, the
        target as content), never followed, so nothing outside the tree gets in. `.git` and
        `__pycache__` directories are skipped: one is not content, the other is derived and
        holds timestamps that would make imports differ.
        """
        root = Path(path)
        if not root.is_dir():
            raise StoreError(f"{root} is not a directory")
        found: list[tuple[bytes, str, str]] = []
        for dirpath, dirnames, filenames in os.walk(os.fsencode(root)):
            dirnames[:] = sorted(d for d in dirnames if d not in (b".git", b"__pycache__")
                                 and not os.path.islink(os.path.join(dirpath, d)))
            rel_dir = os.path.relpath(dirpath, os.fsencode(root))
            # Symlinks to directories are listed by os.walk among dirnames; take them as links.
            linked_dirs = [d for d in os.listdir(dirpath)
                           if os.path.islink(os.path.join(dirpath, d))
                           and os.path.isdir(os.path.join(dirpath, d))]
            for name in sorted(set(filenames) | set(linked_dirs)):
                full = os.path.join(dirpath, name)
                rel = name if rel_dir == b"." else rel_dir + b"/" + name
                if b"\n" in rel:
                    raise StoreError(f"{root}: refusing file name with a newline: {rel!r}")
                st = os.lstat(full)
                if stat.S_ISLNK(st.st_mode):
                    found.append((rel, "120000", full))
                elif stat.S_ISREG(st.st_mode):
                    found.append((rel, "100755" if st.st_mode & 0o111 else "100644", full))
        found.sort()

        def files() -> Iterator[tuple[bytes, str, int, Iterator[bytes]]]:
            for rel, mode, full in found:
                if mode == "120000":
                    target = os.readlink(full)
                    yield rel, mode, len(target), iter([target])
                else:
                    yield rel, mode, os.path.getsize(full), _file_chunks(full)

        message = f"patchforge import of {upstream} {label}\n\ndirectory: {root.name}\n"
        return self._import_files(files(), upstream, label, message)

    def _import_files(self, files: Iterator[tuple[bytes, str, int, Iterator[bytes]]],
                      upstream: str, label: str, message: str) -> ImportResult:
        _check_upstream_name(upstream)
        _check_label(label)
        ref = f"refs/patchforge/imports/{upstream}/{label}"
        name, email, date = IMPORT_IDENT
        msg = message.encode("utf-8")
        # --depth=0: fast-import would otherwise try a delta of each blob against the previous
        # one in the stream, which triples the time of a vLLM wheel for little space.
        # --big-file-threshold: large blobs are streamed instead of held in memory.
        proc = subprocess.Popen(
            ["git", *_BASE_CONFIG, "--git-dir", str(self.git_dir),
             "-c", f"pack.compression={self.PACK_COMPRESSION}",
             "-c", f"core.compression={self.PACK_COMPRESSION}",
             "fast-import", "--quiet", "--force", "--done", "--depth=0",
             "--big-file-threshold=1m"],
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            env=git_env())
        stderr_chunks: list[bytes] = []
        reader = threading.Thread(target=lambda: stderr_chunks.append(proc.stderr.read()),
                                  daemon=True)
        reader.start()
        try:
            w = proc.stdin
            # reset first: without it fast-import would take an existing ref as the parent.
            w.write(b"reset %s\ncommit %s\n" % (ref.encode(), ref.encode()))
            ident = f"{name} <{email}> {date}\n".encode()
            w.write(b"author " + ident + b"committer " + ident)
            w.write(b"data %d\n%s\n" % (len(msg), msg))
            for raw, mode, size, chunks in files:
                w.write(b"M %s inline %s\ndata %d\n" % (mode.encode(), _quote_fastimport(raw), size))
                written = 0
                for chunk in chunks:
                    written += len(chunk)
                    if written > size:
                        break
                    w.write(chunk)
                if written != size:
                    raise StoreError(f"{_decode_path(raw)}: size changed while importing "
                                     f"({size} expected, {written} read)")
                w.write(b"\n")
            w.write(b"done\n")
            w.close()
        except BrokenPipeError:
            pass
        except BaseException:
            # Without "done", fast-import ends with an error and writes no ref.
            proc.kill()
            proc.wait()
            raise
        finally:
            try:
                proc.stdin.close()
            except OSError:
                pass
        code = proc.wait()
        reader.join()
        if code != 0:
            err = b"".join(stderr_chunks).decode("utf-8", "replace").strip()
            raise StoreError(f"importing {upstream} {label} failed: {err[-2000:]}")
        commit, tree = self._out("rev-parse", ref, ref + "^{tree}").split()
        return ImportResult(commit, tree)

    def import_ref(self, upstream: str, label: str) -> str | None:
        """The commit of an earlier import, None if there was none."""
        _check_upstream_name(upstream)
        _check_label(label)
        got = self._cat.query([f"refs/patchforge/imports/{upstream}/{label}^{{commit}}"])[0]
        return got[0] if got else None

    def commit_message(self, rev: str) -> bytes:
        got = self._cat.query([f"{rev}^{{commit}}"])[0]
        if got is None:
            raise StoreError(f"unknown revision {rev!r} in the upstream store")
        return got[2].partition(b"\n\n")[2]

    # ---- git upstreams

    def fetch_git(self, upstream: str, url: str, refs: list[str]) -> None:
        """Blob-less partial fetch of the named refs/commits into refs/patchforge/remotes/<u>/.

        A name is a branch, a tag, a full ref (`refs/...`) or a full 40-hex commit id. Blobs come
        later, on demand, from the remote configured as a promisor. Network commands keep the
        caller's ssh/askpass/proxy variables (see git_env) but no global config.
        """
        _check_upstream_name(upstream)
        self._configure_remote(upstream, url)
        want_ids = [r for r in refs if _HEX40.fullmatch(r)]
        names = [r for r in refs if not _HEX40.fullmatch(r)]
        refspecs = []
        if names:
            patterns = []
            for name in names:
                if name.startswith("refs/"):
                    patterns.append(name)
                else:
                    patterns += [f"refs/heads/{name}", f"refs/tags/{name}"]
            out = self._out("ls-remote", "--", upstream, *patterns,
                            what=f"listing refs of {url}")
            advertised = {line.split("\t", 1)[1] for line in out.splitlines() if "\t" in line}
            for name in names:
                candidates = [name] if name.startswith("refs/") else \
                    [f"refs/heads/{name}", f"refs/tags/{name}"]
                hits = [c for c in candidates if c in advertised]
                if not hits:
                    raise StoreError(f"{upstream}: {url} has no branch or tag {name!r}")
                for hit in hits:
                    refspecs.append(f"+{hit}:{self._tracking_ref(upstream, hit)}")
        for oid in want_ids:
            refspecs.append(f"+{oid}:refs/patchforge/remotes/{upstream}/commits/{oid}")
        if not refspecs:
            return
        self._run("-c", "protocol.version=2", "fetch", "--quiet", "--no-tags",
                  "--no-write-fetch-head", "--recurse-submodules=no", "--filter=blob:none",
                  "--", upstream, *refspecs, what=f"fetching {upstream} from {url}")
        # The running `cat-file --batch` read the configuration at start-up: it does not know
        # a promisor remote added since, and would report that remote's blobs as absent
        # instead of fetching them on demand. Start a fresh one.
        self._cat.close()
        self._cat = _CatFile(self.git_dir)

    def remote_heads(self, upstream: str, url: str, *, tags: bool = False) -> list[str]:
        """The full branch refs (and with `tags`, tag refs) a git upstream advertises (one
        ls-remote)."""
        _check_upstream_name(upstream)
        self._configure_remote(upstream, url)
        out = self._out("ls-remote", "--heads", *(["--tags"] if tags else []), "--", upstream,
                        what=f"listing refs of {url}")
        return sorted(line.split("\t", 1)[1] for line in out.splitlines()
                      if "\t" in line and not line.endswith("^{}"))

    @staticmethod
    def _tracking_ref(upstream: str, ref: str) -> str:
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
        settings = [("url", url), ("promisor", "true"), ("partialclonefilter", "blob:none"),
                    ("fetch", f"+refs/heads/*:refs/patchforge/remotes/{upstream}/heads/*")]
        if local:
            # A local upstream's own config decides what its upload-pack allows; these make the
            # filtered fetch (and fetching blobs by id later) work without warnings.
            settings.append(("uploadpack", "git -c uploadpack.allowFilter=true "
                             "-c uploadpack.allowAnySHA1InWant=true upload-pack"))
        current = self._run("config", "--get-regexp", rf"^remote\.{re.escape(upstream)}\.",
                            ok=(0, 1)).stdout.decode("utf-8", "replace")
        have = dict(line.split(" ", 1) for line in current.splitlines() if " " in line)
        for key, value in settings:
            full = f"remote.{upstream}.{key}"
            if have.get(full) != value:
                self._run("config", "--", full, value)
        if not local and have.get(f"remote.{upstream}.uploadpack"):
            self._run("config", "--unset", f"remote.{upstream}.uploadpack", ok=(0, 5))

    def read_ref(self, ref: str) -> str | None:
        """The commit a ref points at (peeled), None when the store has no such ref."""
        if "\n" in ref or not ref.startswith("refs/"):
            return None
        found = self._cat.query([f"{ref}^{{commit}}"])[0]
        return found[0] if found is not None else None

    def resolve_in(self, upstream: str, spec: str) -> str:
        """A branch, tag, import label or (abbreviated) commit id of one upstream -> commit."""
        _check_upstream_name(upstream)
        base = f"refs/patchforge/remotes/{upstream}"
        candidates = [f"{base}/heads/{spec}", f"{base}/tags/{spec}",
                      f"refs/patchforge/imports/{upstream}/{spec}"]
        if _HEX40.fullmatch(spec):
            candidates.append(f"{base}/commits/{spec}")
        if spec.startswith("refs/"):
            candidates.insert(0, spec)
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
                        self._run("update-ref", f"{base}/commits/{spec}", spec)
                    return got[0]
        raise StoreError(f"{upstream}: {spec!r} is not a known branch, tag, label or commit",
                         hint="fetch the upstream first")

    # ---- commits without a checkout

    def commit_files(self, base: str, changes: dict[str, bytes | None], *, message: str,
                     author: tuple[str, str, str] | None = None,
                     parents: list[str] | None = None,
                     modes: dict[str, str] | None = None) -> str:
        """A commit of `base`'s tree with `changes` applied (None deletes), no checkout.

        `author` is (name, email, date) with date in git's raw form ("<epoch> <tz>") or any date
        git reads; it is also the committer. Without it the fixed patchforge identity at epoch 0
        is used. `parents` default to [base]. A file keeps its mode unless `modes` says otherwise.
        """
        base_commit = self.resolve(base)
        parents = [self.resolve(p) for p in (parents if parents is not None else [base_commit])]
        name, email, date = author or IMPORT_IDENT
        index_lines = []
        blobs = self._write_blobs([data for data in changes.values() if data is not None])
        for path in sorted(changes):
            raw = _check_path(path)
            data = changes[path]
            if data is None:
                index_lines.append(b"0 " + NULL_OID.encode() + b"\t" + raw)
                continue
            mode = (modes or {}).get(path)
            if mode is None:
                existing = self.entry(base_commit, path)
                mode = existing[0] if existing else "100644"
            index_lines.append(f"{mode} {blobs[blob_oid(data)]}\t".encode() + raw)
        with tempfile.TemporaryDirectory(prefix="patchforge-index-") as tmp:
            env = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
            self._run("read-tree", base_commit + "^{tree}", env=env)
            self._run("update-index", "-z", "--index-info",
                      input=b"".join(line + b"\0" for line in index_lines), env=env)
            tree = self._out("write-tree", env=env).strip()
        return self.commit_tree(tree, parents, message, author=(name, email, date))

    def commit_tree(self, tree: str, parents: list[str], message: str, *,
                    author: tuple[str, str, str] | None = None) -> str:
        name, email, date = author or IMPORT_IDENT
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

    def _write_blobs(self, contents: list[bytes]) -> dict[str, str]:
        """Write blobs with one `git hash-object -w --stdin-paths`; returns id -> id."""
        if not contents:
            return {}
        with tempfile.TemporaryDirectory(prefix="patchforge-blobs-", dir=_scratch_dir()) as tmp:
            paths = []
            for i, data in enumerate(contents):
                p = Path(tmp) / str(i)
                p.write_bytes(data)
                paths.append(str(p))
            out = self._out("hash-object", "-w", "--no-filters", "--stdin-paths",
                            input="".join(p + "\n" for p in paths).encode())
        ids = out.split()
        for data, oid in zip(contents, ids):
            if blob_oid(data) != oid:
                raise StoreError("git wrote a blob whose id differs from its content's")
        return {oid: oid for oid in ids}

    # ---- merges

    def merge(self, base: str, ours: str, theirs: str) -> MergeResult:
        """3-way merge of the trees of `ours` and `theirs` against `base`, rename-aware.

        git 2.39 has no `merge-tree --merge-base`, so ours' and theirs' trees are committed on top
        of `base` (synthetic commits, fixed identity): the merge base is `base` whatever their
        histories (wheel imports share none). Conflicted files in the result tree hold conflict
        markers.
        """
        require_git((2, 38), "merging without a checkout (merge-tree --write-tree)")
        base_tree, ours_tree, theirs_tree = (self.tree_id(r) for r in (base, ours, theirs))
        base_commit = self.commit_tree(base_tree, [], "patchforge merge base\n")
        ours_commit = self.commit_tree(ours_tree, [base_commit], "ours\n")
        theirs_commit = self.commit_tree(theirs_tree, [base_commit], "theirs\n")
        proc = self._run("merge-tree", "--write-tree", "-z", "--name-only", "--messages",
                         ours_commit, theirs_commit, ok=(0, 1), what="git merge-tree")
        out = proc.stdout
        tree, _, rest = out.partition(b"\0")
        conflicts: list[str] = []
        if proc.returncode == 1:
            names, _, info = rest.partition(b"\0\0")
            conflicts = [_decode_path(p) for p in names.split(b"\0") if p]
        else:
            info = rest[1:] if rest.startswith(b"\0") else rest
        return MergeResult(clean=proc.returncode == 0, tree=tree.decode(),
                           conflicts=tuple(dict.fromkeys(conflicts)),
                           messages=_merge_messages(info))

    # ---- comparing revisions

    def changed_paths(self, old: str, new: str, paths: list[str] | None = None) -> list[str]:
        args = ["diff-tree", "-r", "-z", "--no-renames", "--name-only", old, new]
        if paths is not None:
            if not paths:
                return []
            args += ["--", *paths]
        out = self._run(*args, what="comparing revisions").stdout
        return [_decode_path(p) for p in out.split(b"\0") if p]

    def renames(self, old: str, new: str, paths: list[str]) -> dict[str, str]:
        """For those of `paths` that `new` renamed: path in old -> path in new."""
        if not paths:
            return {}
        # Cheap first: only paths that are gone in `new` can have been renamed.
        gone = [p for p in self.changed_paths(old, new, paths)
                if self.entry(old, p) is not None and self.entry(new, p) is None]
        if not gone:
            return {}
        out = self._run("diff-tree", "-r", "-z", "-M", "--name-status", "--diff-filter=R",
                        old, new, what="finding renames").stdout
        fields = out.split(b"\0")
        found: dict[str, str] = {}
        wanted = set(gone)
        i = 0
        while i + 2 < len(fields) + 1 and i < len(fields) and fields[i]:
            if fields[i].startswith(b"R"):
                src, dst = _decode_path(fields[i + 1]), _decode_path(fields[i + 2])
                if src in wanted:
                    found[src] = dst
                i += 3
            else:
                i += 2
        return found

    def commits_touching(self, old: str, new: str, paths: list[str]) -> list[str]:
        """Commits after `old` up to `new` that change `paths`, oldest first; [] without history."""
        if not paths:
            return []
        out = self._out("rev-list", "--reverse", "--ancestry-path", f"{old}..{new}", "--", *paths)
        return out.split()

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

    def touching_log(self, old: str, new: str, paths: list[str]) -> list[tuple[str, list[str]]]:
        """[(commit, paths it changes among `paths`)] after `old` up to `new`, oldest first, in
        one git process: what `commits_touching` answers for many path sets at once."""
        if not paths:
            return []
        out = self._out("log", "--reverse", "--ancestry-path", "--no-renames", "--name-only",
                        "-z", "--format=%x01%H", f"{old}..{new}", "--", *paths)
        # Each commit: "\x01<sha>\0\n<path>\0<path>\0..."
        result = []
        for chunk in out.split("\x01")[1:]:
            commit, _, names = chunk.partition("\0")
            result.append((commit.strip(), [n for n in names.lstrip("\n").split("\0") if n]))
        return result

    def log_patches(self, old: str, new: str, paths: list[str]) -> bytes:
        """`git log -p` (fixed options) of the commits after `old` up to `new` touching
        `paths`, limited to them: the input patch-id evidence is computed from."""
        return self._run("log", "-p", "--no-color", "--no-ext-diff", "--no-textconv",
                         "--no-renames", "--full-index", "--format=commit %H", "--ancestry-path",
                         f"{old}..{new}", "--", *paths, what="reading upstream history").stdout

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
        return self._run("format-patch", "-1", commit, "--stdout", "--no-signature",
                         "--full-index", "--no-numbered", "--subject-prefix=PATCH",
                         "--no-thread", "--encode-email-headers", "--stat=80", "--no-color",
                         what="git format-patch").stdout

    def remote_head_branch(self, url: str, *, what: str) -> str | None:
        """The branch a remote's HEAD points to (`git ls-remote --symref URL HEAD`), if any."""
        try:
            check_git_url(url)
        except ValueError as exc:
            raise StoreError(str(exc)) from None
        try:
            out = self._run("ls-remote", "--symref", "--", url, "HEAD", what=what).stdout
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
                _check_path(path)
            self._prefetch(tree, paths)
        with tempfile.TemporaryDirectory(prefix="patchforge-index-") as tmp:
            env = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
            self._run("read-tree", tree, env=env)
            work = ["--work-tree", str(dest)]
            if paths is None:
                self._run(*work, "checkout-index", "-a", "-f", env=env, what="writing files")
            elif paths:
                self._run(*work, "checkout-index", "-f", "-z", "--stdin", env=env,
                          input=b"".join(os.fsencode(p) + b"\0" for p in paths),
                          what="writing files")


# --------------------------------------------------------------------------------------------
# Range-diff of two series, as commit chains written by one fast-import


class RangeDiffImport:
    """`git range-diff` of two commit chains, built by one `git fast-import` that is fed while
    the caller works: file contents (blob()) as they are made, then the two chains' commits
    (range_diff()). It runs in a scratch repository that borrows the store's objects
    (alternates) and is removed afterwards: a report must not leave a pack and refs in the
    store on every run (hundreds of packs slow every later git process).

    The process reads from a pipe as the caller writes, on the other core; the contents are
    stored, not compressed, and get no delta search: the pack lives for one command. close()
    (also done by range_diff()) ends the process and removes the repository; a caller that
    stops early must call it.
    """

    def __init__(self, store: "UpstreamStore") -> None:
        self._store = store
        self._tmp: Path | None = None
        self._mark = 0
        self._proc: subprocess.Popen | None = None
        try:
            self._tmp = Path(tempfile.mkdtemp(prefix="patchforge-rangediff-"))
            scratch = self._tmp / "scratch.git"
            subprocess.run(["git", "init", "-q", "--bare", "--template=", str(scratch)],
                           env=git_env(), capture_output=True, check=True)
            (scratch / "objects" / "info").mkdir(parents=True, exist_ok=True)
            (scratch / "objects" / "info" / "alternates").write_text(
                str((store.git_dir / "objects").resolve()) + "\n")
            self._git = ["git", *_BASE_CONFIG, "--git-dir", str(scratch)]
            self._stderr = open(self._tmp / "stderr", "w+b")
            self._proc = subprocess.Popen(
                [*self._git, "-c", "pack.compression=0", "fast-import", "--quiet", "--done",
                 "--depth=0", f"--export-marks={self._tmp / 'marks'}"],
                stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=self._stderr,
                env=git_env())
        except (OSError, subprocess.CalledProcessError) as exc:
            self.close()
            raise StoreError(f"cannot start git fast-import for the range-diff: {exc}") from exc
        except BaseException:
            self.close()
            raise

    def blob(self, data: bytes) -> int:
        """Send one file content; returns its mark, for range_diff()'s chains."""
        self._mark += 1
        self._write(b"blob\nmark :%d\ndata %d\n" % (self._mark, len(data)), data, b"\n")
        return self._mark

    def _write(self, *parts: bytes) -> None:
        try:
            for part in parts:
                self._proc.stdin.write(part)
        except (BrokenPipeError, OSError, ValueError, AttributeError) as exc:
            raise StoreError("git fast-import stopped: " + self._error_text()) from exc

    def range_diff(self, chains: list[tuple[str, list[str], list]]) -> bytes:
        """`git range-diff` of two chains, each (base commit, paths, steps): a root commit holding
        the base's versions of `paths`, then a commit per step (name, {path: content}), where a
        content is bytes, a blob() mark, or None for a deleted file. Closes the import."""
        try:
            ident = f"{IMPORT_IDENT[0]} <{IMPORT_IDENT[1]}> {IMPORT_IDENT[2]}\n".encode()
            ranges = []
            for index, (base, paths, steps) in enumerate(chains):
                base_files = {p: found[1] for p, found in self._store.entries(base, paths).items()
                              if found is not None}
                ref = f"refs/heads/chain-{index}".encode()
                self._write(b"reset " + ref + b"\n")
                commits = []
                for name, files in [("base", base_files), *steps]:
                    self._mark += 1
                    commits.append(self._mark)
                    msg = f"{name}\n".encode("utf-8", "surrogateescape")
                    lines = [b"commit %s\nmark :%d\ncommitter %s" % (ref, self._mark, ident),
                             b"data %d\n%s\n" % (len(msg), msg)]
                    for path in sorted(files):
                        raw = _quote_fastimport(path.encode("utf-8", "surrogateescape"))
                        content = files[path]
                        if content is None:
                            lines.append(b"D " + raw + b"\n")
                        elif isinstance(content, int):
                            lines.append(b"M 100644 :%d %s\n" % (content, raw))
                        elif isinstance(content, str):  # a blob id in the store
                            lines.append(b"M 100644 %s %s\n" % (content.encode(), raw))
                        else:
                            lines.append(b"M 100644 inline " + raw + b"\ndata %d\n"
                                         % len(content) + content + b"\n")
                    self._write(*lines)
                ranges.append((commits[0], commits[-1]))
            self._write(b"done\n")
            self._proc.stdin.close()
            if self._proc.wait() != 0:
                raise StoreError("git fast-import failed: " + self._error_text())
            ids = dict(line.split(" ", 1)
                       for line in (self._tmp / "marks").read_text().split("\n") if line)
            proc = subprocess.run([*self._git, "range-diff", "--no-color",
                                   *(f"{ids[f':{a}']}..{ids[f':{b}']}" for a, b in ranges)],
                                  capture_output=True, env=git_env())
            if proc.returncode != 0:
                raise StoreError("git range-diff failed: "
                                 + proc.stderr.decode("utf-8", "replace").strip()[-2000:])
            return proc.stdout
        finally:
            self.close()

    def _error_text(self) -> str:
        try:
            self._stderr.seek(0)
            return self._stderr.read().decode("utf-8", "replace").strip()[-2000:] or "no message"
        except (OSError, ValueError, AttributeError):
            return "no message"

    def close(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None:
            _end_process(proc, grace=0)  # done already, or given up: no range-diff is wanted
        stderr = getattr(self, "_stderr", None)
        if stderr is not None:
            stderr.close()
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)


# --------------------------------------------------------------------------------------------
# Helpers


def _parse_tree(data: bytes) -> dict[bytes, tuple[str, str]]:
    """name -> (mode, id) of a raw tree object."""
    entries = {}
    pos = 0
    while pos < len(data):
        space = data.index(b" ", pos)
        nul = data.index(b"\0", space)
        entries[data[space + 1:nul]] = (data[pos:space].decode(), data[nul + 1:nul + 21].hex())
        pos = nul + 21
    return entries


def _merge_messages(info: bytes) -> str:
    # -z messages: <count> NUL <path>... NUL <type> NUL <message> NUL, repeated.
    fields = info.split(b"\0")
    texts = []
    i = 0
    while i < len(fields) and fields[i].isdigit():
        count = int(fields[i])
        i += 1 + count
        if i + 1 < len(fields):
            texts.append(fields[i + 1].decode("utf-8", "surrogateescape").rstrip("\n"))
        i += 2
    return "".join(t + "\n" for t in texts)


def _zip_chunks(archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> Iterator[bytes]:
    import zipfile

    try:
        with archive.open(info) as handle:
            while chunk := handle.read(1 << 20):
                yield chunk
    except (zipfile.BadZipFile, OSError, EOFError) as exc:
        raise StoreError(f"corrupt wheel member {info.filename}: {exc}") from exc


def _file_chunks(path: bytes) -> Iterator[bytes]:
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            yield chunk
