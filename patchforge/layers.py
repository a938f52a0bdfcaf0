"""Finding files in an image's layer stack, streamed: what a container would see at given paths.

A layer is a tar (plain, gzip of one member or several, or zstd) of changes to the layers below it:
a later layer's entry replaces an earlier one, `.wh.<name>` deletes `<name>` below, `.wh..wh..opq`
in a directory hides everything the layers below put there, and a file where a directory was hides
that directory. A symlink on the way (a symlinked directory, or one at the path itself) is followed
inside the image, as the container's kernel follows it (see `find_in_layers`). `find_in_layers`
reads the layers from the top down and stops as soon as every path it was asked about is decided,
so the base layers of a large image (the OS, the ROCm libraries) are usually never downloaded. Each
layer is read as a stream, a member's content only hashed on its way past: no layer is ever held in
memory or written to disk. Nothing in a layer is executed or extracted.

zstd: Python 3.14 has `compression.zstd`; before it, the `zstandard` package (imported only here,
and only when a zstd layer is met).
"""
from __future__ import annotations

import hashlib
import posixpath
import tarfile
import zlib
from collections.abc import Callable, Collection, Iterable, Sequence
from typing import Any, BinaryIO, cast

from patchforge.errors import NetworkError
from patchforge.model.record import field, record

OPAQUE = ".wh..wh..opq"
WHITEOUT = ".wh."
_GZIP_MAGIC = b"\x1f\x8b"
_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
_CHUNK = 1 << 20


@record(frozen=True)
class FoundFile:
    """What an image holds at one path. `kind`: "file", "absent", "symlink", "directory", "other".

    `layer` is the digest of the layer that decided it (None: no layer mentions the path);
    `detail` says how an absent path came to be absent.
    """

    path: str
    kind: str
    sha256: str | None = None
    size: int | None = None
    mode: int | None = None
    link: str | None = None
    layer: str | None = None
    detail: str = ""
    resolved: str | None = None  # where symlinks led the container, when not at `path`


@record
class ReadStats:
    layers_total: int = 0
    layers_read: int = 0  # distinct layers fetched
    rereads: int = 0  # fetches of a layer already read (a hard link's target, a symlinked path)
    bytes_read: int = 0  # compressed bytes received from the registry, every fetch counted
    seen: set[str] = field(default_factory=set, repr=False)  # digests of the layers fetched


def normalize(path: str) -> str:
    """An image path as tar members name it: no leading "/" or "./", no "." components."""
    return posixpath.normpath("/" + path).lstrip("/")


def _ancestors(path: str) -> list[str]:
    """`path`'s directories, the one nearest the root first (as the kernel walks a path)."""
    parts = path.split("/")[:-1]
    return ["/".join(parts[:i]) for i in range(1, len(parts) + 1)]


MAX_HOPS = 40  # symlinks followed for one path before giving up, as Linux's ELOOP


@record
class _LayerFindings:
    entries: dict[str, FoundFile]  # wanted path -> what this layer puts there (last entry wins)
    deleted: dict[str, str]  # wanted path or ancestor -> "whiteout" / "not a directory" detail
    opaque: dict[str, str]  # ancestor this layer makes opaque -> how (the detail said)
    links: dict[str, str]  # wanted path -> hard-link target not hashed on this pass
    symlinks: dict[str, str]  # ancestor -> the target of the symlink this layer puts there
    dirs: set[str]  # ancestors this layer puts a directory at
    contents: dict[str, bytes] = field(default_factory=dict)  # kept regular files' bytes
    # wanted path -> the place (member number) of the hard link this layer puts there, and
    # every entry of a wanted name with its place: a hard link names its target as the layer
    # had it at the link, not as a later entry of the same name rewrites it.
    link_at: dict[str, int] = field(default_factory=dict)
    versions: dict[str, list[tuple[int, FoundFile]]] = field(default_factory=dict)


@record(frozen=True)
class _Redirect:
    """A wanted path goes through a symlink: the container reads `path` instead."""

    link: str  # the symlink's own path
    target: str  # what it points to, as the layer has it
    path: str  # the wanted path with the link followed (normalized, clamped to the root)


def find_in_layers(layers: Sequence[Any], open_layer: Callable[[Any], Any],
                   paths: Iterable[str], *, stats: ReadStats | None = None
                   ) -> dict[str, FoundFile]:
    """What the image built from `layers` (bottom first) holds at each of `paths`.

    `open_layer(layer)` returns a readable stream of the layer blob with `.layer.digest`,
    `.layer.media_type`, `.drain()`, `.bytes_read` and `.close()` (a registry BlobReader).

    Symlinks are followed as the container's kernel follows them, a directory symlink on the way
    and a symlink at the path itself alike: relative ones from the link's directory, absolute
    ones from the image's root, ".." never above the root, at most MAX_HOPS of them. A path
    whose symlink is only met in a lower layer is looked up again from the top under the path it
    leads to (a layer above may hold it there), so only a path that goes through a symlink costs
    a second read of the layers above that symlink; every other path is decided in one pass.
    """
    stats = stats if stats is not None else ReadStats()
    stats.layers_total = len(layers)
    at = {p: p for p in (normalize(p) for p in paths)}  # asked path -> where the container reads
    followed: dict[str, list[str]] = {p: [] for p in at}  # asked path -> "/link -> target"s
    visited = {p: {p} for p in at}  # asked path -> the paths the links led it through
    found: dict[str, FoundFile] = {}
    pending = set(at)
    while pending:
        looked = _search(layers, open_layer, {at[p] for p in pending}, stats)
        still = set()
        for asked in sorted(pending):
            hit = looked[at[asked]]
            if isinstance(hit, FoundFile) and not (hit.kind == "symlink" and hit.link):
                found[asked] = _seen_through(asked, hit, followed[asked])
                continue
            if isinstance(hit, FoundFile):  # a symlink at the path itself: open() follows it
                assert hit.link is not None
                hit = _Redirect(hit.path, hit.link, _follow(hit.path, hit.link, ""))
            followed[asked].append(f"/{hit.link} -> {hit.target}")
            # Back at a path already read through (a loop), or a chain longer than the kernel
            # follows: the container's open() fails with ELOOP, so nothing is read there.
            if hit.path in visited[asked] or len(followed[asked]) > MAX_HOPS:
                links = ", ".join(dict.fromkeys(followed[asked]))
                why = "a loop" if hit.path in visited[asked] else f"more than {MAX_HOPS} links"
                found[asked] = FoundFile(asked, "absent", detail=f"too many levels of "
                                         f"symbolic links ({why}: {links})")
                continue
            visited[asked].add(hit.path)
            at[asked] = hit.path
            still.add(asked)
        pending = still
    return found


def _follow(link: str, target: str, rest: str) -> str:
    """Where `rest` under the symlink `link` -> `target` is: absolute targets from the image's
    root, relative ones from the link's directory; ".." at the root stays there (as the kernel
    does, so a link cannot lead out of the image). ".." is taken by name, which differs from
    the kernel only where the component before it is itself a symlink."""
    base = "" if target.startswith("/") else posixpath.dirname(link)
    return normalize(posixpath.join(base, target, rest))


def _seen_through(asked: str, hit: FoundFile, followed: list[str]) -> FoundFile:
    """`hit`, found where the symlinks `followed` led, as what the container reads at `asked`."""
    if not followed:
        return hit
    through = "through " + ", ".join(followed)
    if hit.kind == "absent" or hit.kind == "other":
        detail = f"{through}: /{hit.path}" + (f": {hit.detail}" if hit.detail else "")
    else:
        detail = f"/{hit.path}, {through}"
    return FoundFile(asked, hit.kind, hit.sha256, hit.size, hit.mode, hit.link, hit.layer,
                     detail, resolved=hit.path)


def _search(layers: Sequence[Any], open_layer: Callable[[Any], Any], paths: set[str],
            stats: ReadStats) -> dict[str, FoundFile | _Redirect]:
    """One top-down pass: what the topmost layer that decides each path puts there, or the
    symlink on its way that sends the container elsewhere."""
    undecided = set(paths)
    found: dict[str, FoundFile | _Redirect] = {}
    dirs_above: dict[str, str] = {}  # ancestor -> the (upper) layer that made it a directory
    for layer in reversed(layers):
        if not undecided:
            break
        findings = _read_layer(layer, open_layer, undecided, stats)
        if findings.links:
            # A hard link names an earlier member of the same layer whose content was not
            # kept on the first pass: read the layer once more for those targets.
            again = _read_layer(layer, open_layer, set(findings.links.values()), stats)
            for path, target in findings.links.items():
                # The target as the layer had it where the link stands (tar, and a container
                # runtime, link to the file then; a later entry of its name replaces only
                # the target, never what the link holds).
                at = findings.link_at.get(path)
                earlier = [entry for place, entry in again.versions.get(target, ())
                           if at is None or place < at]
                hit = earlier[-1] if earlier else None
                if hit is not None and hit.kind == "file":
                    findings.entries[path] = FoundFile(path, "file", hit.sha256, hit.size,
                                                       hit.mode, layer=layer.digest,
                                                       detail=f"hard link to /{target}")
                else:
                    findings.entries[path] = FoundFile(path, "other", layer=layer.digest,
                                                       detail=f"hard link to /{target}, "
                                                              "which the layer does not hold")
        for path in sorted(undecided):
            decided = _decide(path, findings, layer.digest, dirs_above)
            if decided is not None:
                found[path] = decided
        undecided -= set(found)
        for directory in findings.dirs:
            dirs_above.setdefault(directory, layer.digest)
    for path in undecided:
        found[path] = FoundFile(path, "absent", detail="no layer holds it")
    return found


def _decide(path: str, findings: _LayerFindings, digest: str, dirs_above: dict[str, str]
            ) -> FoundFile | _Redirect | None:
    if path in findings.entries:
        return findings.entries[path]
    if path in findings.deleted:
        return FoundFile(path, "absent", layer=digest, detail=findings.deleted[path])
    ancestors = _ancestors(path)
    for ancestor in ancestors:  # what this layer itself puts on the way, nearest the root first
        if ancestor in findings.deleted:
            return FoundFile(path, "absent", layer=digest,
                             detail=f"/{ancestor}: {findings.deleted[ancestor]}")
        if ancestor in findings.symlinks:
            target = findings.symlinks[ancestor]
            if ancestor in dirs_above:
                # A later layer made a directory where this symlink was: it replaced the link
                # (and the link had replaced whatever the layers below held there).
                return FoundFile(path, "absent", layer=digest,
                                 detail=f"/{ancestor}: a symlink in layer {digest[:19]}, "
                                        f"replaced by a directory in layer "
                                        f"{dirs_above[ancestor][:19]}")
            return _Redirect(ancestor, target,
                             _follow(ancestor, target, path[len(ancestor) + 1:]))
    for ancestor in ancestors:
        if ancestor in findings.opaque:
            return FoundFile(path, "absent", layer=digest,
                             detail=f"/{ancestor} {findings.opaque[ancestor]}")
    return None


def read_contents(layer: Any, open_layer: Callable[[Any], Any], paths: Iterable[str], *,
                  stats: ReadStats | None = None) -> dict[str, bytes]:
    """The bytes of each of `paths` (normalized) that `layer` holds as a regular file (the
    last entry of its name), read again for a question the digest cannot answer (is a fix's
    change in this other version of its file?). Only those files' bytes are held, never the
    layer's."""
    wanted = {normalize(p) for p in paths}
    findings = _read_layer(layer, open_layer, wanted, stats if stats is not None else ReadStats(),
                           keep=wanted)
    return {path: findings.contents[path] for path in wanted if path in findings.contents
            and findings.entries.get(path, FoundFile(path, "absent")).kind == "file"}


def _read_layer(layer: Any, open_layer: Callable[[Any], Any], wanted: set[str],
                stats: ReadStats, *, keep: Collection[str] = ()) -> _LayerFindings:
    ancestors = {a for p in wanted for a in _ancestors(p)}
    findings = _LayerFindings({}, {}, {}, {}, {}, set())
    whited: set[str] = set()  # the ancestors this layer whites out
    hashed: dict[str, FoundFile] = {}  # regular files of this layer among `wanted`
    with open_layer(layer) as blob:
        if layer.digest in stats.seen:
            stats.rereads += 1
        else:
            stats.seen.add(layer.digest)
            stats.layers_read += 1
        try:
            with _open_tar(blob) as archive:
                for place, member in enumerate(_members(archive)):
                    name = normalize(member.name)
                    directory, _, base = name.rpartition("/")
                    if base == OPAQUE:
                        if directory in ancestors:
                            findings.opaque[directory] = \
                                "is made opaque (its earlier content hidden)"
                        continue
                    if base.startswith(WHITEOUT):
                        target = posixpath.join(directory, base[len(WHITEOUT):])
                        if target in ancestors:
                            whited.add(target)
                        # A whiteout deletes what the layers below hold there, never what
                        # this layer itself puts there (OCI image spec, "Whiteouts"): a
                        # directory of its own then holds nothing from below, and a symlink
                        # of its own stays one.
                        if target in findings.dirs:
                            findings.opaque[target] = _remade(layer.digest)
                        elif (target in wanted or target in ancestors) and \
                                target not in findings.symlinks:
                            findings.deleted[target] = f"deleted by a whiteout in layer " \
                                                       f"{layer.digest[:19]}"
                        continue
                    if name in wanted:
                        entry = _entry(archive, member, name, layer.digest, hashed,
                                       findings.contents if name in keep else None)
                        if not member.isreg():  # (the last entry of the name is the one)
                            findings.contents.pop(name, None)
                        findings.entries[name] = entry
                        findings.versions.setdefault(name, []).append((place, entry))
                        findings.deleted.pop(name, None)
                        if member.islnk() and entry.kind == "other" and entry.link:
                            findings.links[name] = entry.link
                            findings.link_at[name] = place
                        else:
                            findings.links.pop(name, None)
                            findings.link_at.pop(name, None)
                    elif name in ancestors:
                        # The last entry for a name in a layer is the one that stays.
                        findings.deleted.pop(name, None)
                        findings.symlinks.pop(name, None)
                        findings.dirs.discard(name)
                        if member.isdir():
                            findings.dirs.add(name)
                            if name in whited:
                                # Whited out, then made again (the order the spec asks
                                # builders for): a new directory, empty of the layers below.
                                findings.opaque[name] = _remade(layer.digest)
                        elif member.issym():
                            findings.symlinks[name] = member.linkname
                        else:
                            findings.deleted[name] = f"not a directory in layer " \
                                                     f"{layer.digest[:19]}"
        except Exception as exc:  # the tar or its decompressor (zlib, zstd) met bad bytes
            if isinstance(exc, NetworkError):
                raise
            # Corrupt bytes from the registry are the likelier cause: the digest says so.
            blob.drain()
            raise NetworkError(f"layer {layer.digest}: not a readable "
                               f"{layer.media_type or 'tar'} ({type(exc).__name__}: {exc})"
                               ) from None
        blob.drain()  # the digest is checked at the blob's end: read what the tar left
        stats.bytes_read += blob.bytes_read
    return findings


def _members(archive: tarfile.TarFile) -> Iterable[tarfile.TarInfo]:
    """The members of a tar read as a stream, each forgotten once the next is read: tarfile
    keeps every header it read (`TarFile.members`), so memory grew with the number of entries
    whatever their sizes (a 2 MB layer of 300,000 empty files cost 136 MB)."""
    while (member := archive.next()) is not None:
        archive.members.clear()  # type: ignore[attr-defined]  # (not in typeshed)
        yield member


def _remade(digest: str) -> str:
    return (f"is deleted by a whiteout in layer {digest[:19]} and made again there, without "
            "what the layers below held")


def _entry(archive: tarfile.TarFile, member: tarfile.TarInfo, name: str, digest: str,
           hashed: dict[str, FoundFile], contents: dict[str, bytes] | None = None) -> FoundFile:
    """What `member` puts at `name`; a regular file's bytes go into `contents` when given."""
    mode = member.mode
    if member.isreg():
        handle = archive.extractfile(member)
        assert handle is not None
        sha = hashlib.sha256()
        kept = []
        while chunk := handle.read(_CHUNK):
            sha.update(chunk)
            if contents is not None:
                kept.append(chunk)
        if contents is not None:
            contents[name] = b"".join(kept)
        entry = FoundFile(name, "file", sha.hexdigest(), member.size, mode, layer=digest)
        hashed[name] = entry
        return entry
    if member.islnk():
        target = normalize(member.linkname)
        hit = hashed.get(target)
        if hit is not None:
            return FoundFile(name, "file", hit.sha256, hit.size, mode, layer=digest,
                             detail=f"hard link to /{target}")
        return FoundFile(name, "other", mode=mode, link=target, layer=digest)
    if member.issym():
        return FoundFile(name, "symlink", mode=mode, link=member.linkname, layer=digest,
                         detail=f"a symlink to {member.linkname}")
    if member.isdir():
        return FoundFile(name, "directory", mode=mode, layer=digest, detail="a directory")
    return FoundFile(name, "other", mode=mode, layer=digest, detail="not a regular file")


class _Peek:
    """A stream whose first bytes can be looked at before a decompressor reads them."""

    def __init__(self, raw: BinaryIO) -> None:
        self.raw = raw
        self.head = b""
        while len(self.head) < 4:
            chunk = raw.read(4 - len(self.head))
            if not chunk:
                break
            self.head += chunk
        self._pending = self.head

    def read(self, size: int = -1) -> bytes:
        if self._pending:
            out, self._pending = self._pending, b""
            if size is not None and 0 <= size < len(out):
                out, self._pending = out[:size], out[size:]
            return out
        return self.raw.read(size)


def _open_tar(blob: Any) -> tarfile.TarFile:
    # The decompressor is chosen by the layer's first bytes, never its media type, as a
    # container runtime chooses it: a plain tar pushed as `tar+gzip` runs, and was refused
    # here as "not a readable" layer. (Bytes that are no tar at all fail the tar, and a blob
    # the registry damaged fails its digest.)
    peek = _Peek(blob)
    stream = cast(BinaryIO, peek)  # read as a stream ("r|"): read() is all tarfile calls
    if peek.head.startswith(_ZSTD_MAGIC) or _is_zstd_skippable(peek.head):
        return tarfile.open(fileobj=_zstd_reader(stream), mode="r|")
    if peek.head.startswith(_GZIP_MAGIC):
        # Not tarfile's "r|gz": a layer may be several gzip members one after the other
        # (eStargz compresses each file on its own), which gunzip and a container runtime
        # read as one stream; tarfile's stream mode stopped at the first member's end, and
        # every file after it was unseen (the layer below then decided it).
        return tarfile.open(fileobj=cast(BinaryIO, _GzipMembers(stream)), mode="r|")
    return tarfile.open(fileobj=stream, mode="r|")


def _is_zstd_skippable(head: bytes) -> bool:
    """A zstd skippable frame (magic 0x184D2A50-5F, little-endian) leads the stream: zstd still
    (zstd:chunked layers carry metadata in such frames), as a container runtime reads it."""
    return len(head) == 4 and 0x50 <= head[0] <= 0x5F and head[1:] == b"\x2a\x4d\x18"


class _GzipMembers:
    """The gzip members of a stream inflated one after another, as one stream (as gunzip reads
    them; zero bytes between or after them are padding). zlib checks each member's CRC and
    length; a stream that ends inside a member is an error. (gzip.GzipFile does the same at
    1.4x the CPU of this layer reading: its own CRC pass and buffering.)"""

    def __init__(self, raw: Any) -> None:
        self._raw = raw
        self._inflate = zlib.decompressobj(wbits=31)
        self._input = b""
        self._between = False  # a member ended: another one, padding, or the end follows

    def read(self, size: int = -1) -> bytes:
        # At least 256 KiB a call (tarfile takes a longer answer): fewer, larger inflates.
        limit = max(size, 1 << 18)
        while True:
            if not self._input:
                self._input = self._raw.read(1 << 16)
                if not self._input:
                    if self._between:
                        return b""
                    raise EOFError("the gzip stream ends inside a member")
            if self._between:
                self._input = self._input.lstrip(b"\0")
                if not self._input:
                    continue
                self._inflate = zlib.decompressobj(wbits=31)
                self._between = False
            out = self._inflate.decompress(self._input, limit)
            if self._inflate.eof:
                self._input, self._between = self._inflate.unused_data, True
            else:
                self._input = self._inflate.unconsumed_tail
            if out:
                return out


def _zstd_reader(stream: Any) -> Any:
    try:
        from compression import zstd  # Python 3.14+
        return zstd.ZstdFile(stream, mode="rb")
    except ImportError:
        pass
    try:
        import zstandard
    except ImportError:
        raise NetworkError("a layer is zstd-compressed and this Python has no zstd support",
                           hint="pip install zstandard (or use Python 3.14+)") from None
    return zstandard.ZstdDecompressor().stream_reader(stream, read_across_frames=True)
