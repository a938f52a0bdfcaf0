"""Imports of a wheel or a directory into the store as deterministic root commits, through one
`git fast-import` each (paths as stored, exec bits and symlinks kept, fixed identity and date).
A wheel's blobs arrive as one pack made from its own compressed bytes (store/wheelpack.py), and
fast-import then only makes the trees and the commit.

A wheel's files are stored where pip installs them relative to site-packages (the install
root): `NAME-VER.data/purelib/` and `.data/platlib/` are spread onto the root, as the wheel
spec (PEP 427, "Spread") says; `.data/scripts|headers|data/`, which pip installs outside
site-packages, stay under their archive path, and overlays refuse fixes there
(`outside_install_root`). `NAME-VER.dist-info/RECORD` is kept as the wheel has it.
"""
from __future__ import annotations

import os
import stat
import subprocess
import threading
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING

from patchforge.errors import StoreError
from patchforge.model.record import record
from patchforge.store.diff import check_path, decode_path
from patchforge.store.git import IMPORT_IDENT, check_label, check_upstream_name, start_git
from patchforge.store.rangediff import quote_fastimport

if TYPE_CHECKING:
    from patchforge.store.gitstore import UpstreamStore


@record(frozen=True)
class ImportResult:
    commit: str
    tree: str


# Where fast-import writes an import's commit (under the store's write lock, one at a time)
# until it is kept and labelled; one left by a killed import is reset by the next.
IMPORT_SCRATCH_REF = "refs/patchforge/importing"
# The subdirectories of a wheel's NAME-VER.data/ that pip spreads onto site-packages itself.
_AT_INSTALL_ROOT = (b"purelib", b"platlib")
# Where pip puts the others (sysconfig's scheme keys), for the refusal of a fix under them.
_PIP_PUTS = {"scripts": "the environment's bin/ directory (Scripts\\ on Windows)",
             "headers": "the environment's include/ directory",
             "data": "the environment's prefix (sys.prefix), as data/ lays it out"}
# In an import's commit message when files were spread: an import without it that still holds
# NAME-VER.data/purelib or platlib is of the earlier layout (archive paths), see
# archive_layout_left. A wheel without such files imports as before, to the same commit.
LAYOUT_LINE = "layout: NAME-VER.data/purelib and platlib at the install root, as pip installs"


def data_directories(paths) -> set[bytes]:
    """The wheel's `NAME-VER.data` directories among top-level `paths` (bytes): those beside a
    `NAME-VER.dist-info` of the same stem, as pip finds them (another `X.data` directory is
    just a directory of the wheel's root)."""
    tops = {p.split(b"/", 1)[0] for p in paths}
    return {t for t in tops if t.endswith(b".data") and t[:-5] + b".dist-info" in tops}


def installed_path(raw: bytes, data_dirs: set[bytes]) -> bytes:
    """`raw` (a path in the wheel) where pip installs it relative to site-packages, for files
    under NAME-VER.data/purelib|platlib; any other path as it is."""
    parts = raw.split(b"/", 2)
    if len(parts) == 3 and parts[0] in data_dirs and parts[1] in _AT_INSTALL_ROOT:
        return parts[2]
    return raw


def outside_install_root(path: str, data_dirs: set[str]) -> str | None:
    """For a path of a wheel import under NAME-VER.data/<key>/ (scripts, headers, data: pip
    installs them outside site-packages), a sentence saying where pip puts it; else None."""
    parts = path.split("/", 2)
    if len(parts) < 3 or parts[0] not in data_dirs:
        return None
    where = _PIP_PUTS.get(parts[1], f"the directory of install scheme key {parts[1]!r}")
    return f"pip installs {path} as {parts[2]} in {where}, not under the install root"


def wheel_data_directories(store: UpstreamStore, commit: str) -> set[str]:
    """data_directories() of a wheel import's top level."""
    top = store._read_tree(store.tree_id(commit))
    names = [name for name, (mode, _) in top.items() if mode == "40000"]
    return {decode_path(d) for d in data_directories(names)}


def archive_layout_left(store: UpstreamStore, commit: str, tree: str | None = None) -> str | None:
    """The NAME-VER.data/purelib (or platlib) directory of a wheel import made by an earlier
    patchforge, which kept these files at their archive path (where nothing imports them), or
    None for an import in the installed layout. `tree`: the commit's, when known. A wheel
    without a .data directory (vLLM's, aiter's) costs one read of its top tree, which the
    command reads anyway (kept per process)."""
    top = store._read_tree(tree or store.tree_id(commit))
    names = [name for name, (mode, _) in top.items() if mode == "40000"]
    for data in sorted(data_directories(names)):
        inside = store._read_tree(top[data][1])
        for key in _AT_INSTALL_ROOT:
            if key in inside and LAYOUT_LINE.encode() not in store.commit_message(commit):
                return decode_path(data + b"/" + key)
    return None


def import_wheel(store: UpstreamStore, wheel: Path, upstream: str, label: str, *,
                 sha256: str | None = None, namespace: str | None = None) -> ImportResult:
    """Import every file of a wheel, where pip installs it (NAME-VER.data/purelib and platlib
    spread onto the root; see the module docstring), as a deterministic root commit.

    The commit is kept at refs/patchforge/imports/<upstream>/<label> (the last import under
    that name and label, by any project) and, with `namespace`, at
    refs/patchforge/labels/<namespace>/<label> (the project's). Same wheel, upstream, label (and
    sha256 note) give the same commit id in any store.
    """
    wheel = Path(wheel)
    try:
        archive = zipfile.ZipFile(wheel)
    except (OSError, zipfile.BadZipFile, UnicodeDecodeError) as exc:
        # (A member name flagged UTF-8 that is not: zipfile decodes the names as it opens.)
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
                check_path(decode_path(raw))
            except StoreError:
                raise StoreError(f"wheel {wheel.name}: refusing member {raw!r} "
                                 "(absolute, '..', '.git' or control characters)") from None
            members[raw] = info  # a later duplicate wins, as on extraction

        # Each file at its installed path; two files installed at one path (or a file where
        # another's directory goes) would leave one of them out of the tree unnoticed.
        data_dirs = data_directories(members)
        installed = {raw: installed_path(raw, data_dirs) for raw in members}
        at: dict[bytes, bytes] = {}
        for raw in sorted(members):
            path = installed[raw]
            if path in at:
                raise StoreError(f"wheel {wheel.name}: {decode_path(at[path])} and "
                                 f"{decode_path(raw)} are both installed at {decode_path(path)}; "
                                 "refusing an upstream that holds only one of them")
            at[path] = raw
        for path, raw in at.items():
            parent = path
            while b"/" in parent:
                parent = parent.rsplit(b"/", 1)[0]
                if parent in at:
                    raise StoreError(
                        f"wheel {wheel.name}: {decode_path(at[parent])} is installed at "
                        f"{decode_path(parent)}, where {decode_path(raw)} needs a directory "
                        f"({decode_path(path)}); refusing an upstream that holds only one of them")

        message = f"patchforge import of {upstream} {label}\n\nwheel: {wheel.name}\n"
        if sha256:
            message += f"sha256: {sha256}\n"
        if any(installed[raw] != raw for raw in members):
            message += LAYOUT_LINE + "\n"
        for raw in sorted(skipped):
            message += f"skipped: {decode_path(raw)}\n"
        names = sorted(members)
        # The blobs go in as one pack made from the wheel's own compressed bytes
        # (store/wheelpack.py); the tree and the commit are then the ones a stream of the
        # contents would give.
        from patchforge.store import wheelpack

        located = wheelpack.locate_members(wheel, [members[raw] for raw in names])
        progress = store.progress
        if progress is not None:
            size = sum(m.file_size for m in located)
            progress.step(f"importing {upstream} {label}: {len(located)} files, "
                          f"{size / 1e6:.0f} MB")
        wheelpack.hash_members(wheel, located,
                               progress=progress.advance if progress is not None else None)
        wheelpack.write_pack(store.git_dir, wheel, located)
        entries = []
        for raw, member in zip(names, located):
            info = members[raw]
            executable = info.create_system == 3 and (info.external_attr >> 16) & 0o111
            entries.append((installed[raw], "100755" if executable else "100644", member.oid))
        return _import_entries(store, entries, upstream, label, message, namespace)


def import_directory(store: UpstreamStore, path: Path, upstream: str, label: str, *,
                     namespace: str | None = None) -> ImportResult:
    """Import a directory tree as a deterministic root commit (like import_wheel).

    Regular files keep their exec bit; symlinks are recorded as symlinks (mode 120000, the
    target as content), never followed, so nothing outside the tree gets in. `.git` and
    `__pycache__` directories are skipped: one is not content, the other is derived and
    holds timestamps that would make imports differ.
    """
    root = Path(path)
    if not root.is_dir():
        raise StoreError(f"{root} is not a directory")
    found: list[tuple[bytes, str, bytes]] = []
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
    return _import_files(store, files(), upstream, label, message, namespace)

def _import_files(store: UpstreamStore, files: Iterator[tuple[bytes, str, int, Iterator[bytes]]],
                  upstream: str, label: str, message: str,
                  namespace: str | None) -> ImportResult:
    """A root commit of `files` (path, mode, size, content chunks), streamed to fast-import."""
    def write_files(w: IO[bytes]) -> None:
        for raw, mode, size, chunks in files:
            w.write(b"M %s inline %s\ndata %d\n" % (mode.encode(), quote_fastimport(raw), size))
            written = 0
            for chunk in chunks:
                written += len(chunk)
                if written > size:
                    break
                w.write(chunk)
            if written != size:
                raise StoreError(f"{decode_path(raw)}: size changed while importing "
                                 f"({size} expected, {written} read)")
            w.write(b"\n")

    return _fast_import(store, write_files, upstream, label, message, namespace)


def _import_entries(store: UpstreamStore, entries: list[tuple[bytes, str, str]], upstream: str,
                    label: str, message: str, namespace: str | None) -> ImportResult:
    """A root commit of `entries` (path, mode, blob id), the blobs already in the store."""
    def write_entries(w: IO[bytes]) -> None:
        w.write(b"".join(b"M %s %s %s\n" % (mode.encode(), oid.encode(), quote_fastimport(raw))
                         for raw, mode, oid in entries))

    return _fast_import(store, write_entries, upstream, label, message, namespace)


def _fast_import(store: UpstreamStore, write_files: Callable[[IO[bytes]], None], upstream: str,
                 label: str, message: str, namespace: str | None) -> ImportResult:
    """The deterministic root commit at refs/patchforge/imports/<upstream>/<label> whose files
    `write_files` writes as fast-import `M` commands, labelled under `namespace` too."""
    check_upstream_name(upstream)
    check_label(label)
    if namespace is not None:
        check_upstream_name(namespace)
    # fast-import writes its commit to a ref of its own, never the label's: labels are ref
    # paths, and the shared `imports/<upstream>/2026` cannot be made while another project's
    # `imports/<upstream>/2026/12` exists (git's "cannot lock ref"). The shared ref is only a
    # hint for reuse, set afterwards where it can be (store.share_import).
    ref = IMPORT_SCRATCH_REF
    name, email, date = IMPORT_IDENT
    msg = message.encode("utf-8")
    # --depth=0: fast-import would otherwise try a delta of each blob against the previous
    # one in the stream, which triples the time of a vLLM wheel for little space.
    # --big-file-threshold: large blobs are streamed instead of held in memory.
    proc = start_git("-c", f"pack.compression={store.PACK_COMPRESSION}",
                     "-c", f"core.compression={store.PACK_COMPRESSION}",
                     "fast-import", "--quiet", "--force", "--done", "--depth=0",
                     "--big-file-threshold=1m", git_dir=store.git_dir, stdout=subprocess.DEVNULL)
    w, stderr = proc.stdin, proc.stderr
    assert w is not None and stderr is not None  # started with stdin and stderr piped
    stderr_chunks: list[bytes] = []
    reader = threading.Thread(target=lambda: stderr_chunks.append(stderr.read()), daemon=True)
    reader.start()
    try:
        # reset first: without it fast-import would take an existing ref as the parent.
        w.write(b"reset %s\ncommit %s\n" % (ref.encode(), ref.encode()))
        ident = f"{name} <{email}> {date}\n".encode()
        w.write(b"author " + ident + b"committer " + ident)
        w.write(b"data %d\n%s\n" % (len(msg), msg))
        write_files(w)
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
            w.close()
        except OSError:
            pass
    code = proc.wait()
    reader.join()
    if code != 0:
        err = b"".join(stderr_chunks).decode("utf-8", "replace").strip()
        raise StoreError(f"importing {upstream} {label} failed: {err[-2000:]}")
    commit, tree = store._out("rev-parse", ref, ref + "^{tree}").split()
    # The label's ref moves when another import takes the label (another project sharing the
    # cache, with a directory upstream of the same name and other files); a lock may still
    # pin this commit, and a repack drops what no ref reaches. A directory cannot be fetched
    # again as it was, so every import's commit keeps a ref named by its own id.
    # The project's own label (refs/patchforge/labels/): the shared ref above answers for
    # whichever project imported last, never for this one.
    updates = f"update refs/patchforge/kept/{commit} {commit}\n"
    if namespace is not None:
        updates += f"update refs/patchforge/labels/{namespace}/{label} {commit}\n"
    updates += f"delete {ref}\n"
    try:
        store._run("update-ref", "--stdin", input=updates.encode(),
                   what=f"keeping the import of {upstream} {label}")
    except StoreError:
        # Nothing of the refused import stays named; the project's own label clashing with
        # another of its labels (`2026` with `2026/12`) is said as such, anything else as git
        # said it.
        store._run("update-ref", "-d", ref, ok=(0, 1))
        if namespace is not None:
            store.check_label_fits(namespace, label, upstream)
        raise
    store.share_import(upstream, label, commit)
    return ImportResult(commit, tree)


def _file_chunks(path: bytes) -> Iterator[bytes]:
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            yield chunk
