"""patchforge.layers on layer stacks built here with tarfile: what a container would see at a path
(hard links, symlinks, a file replacing a directory, duplicates within one layer, plain tar), and
that a layer whose bytes do not match its digest is an error, never a verdict."""
from __future__ import annotations

import gzip
import hashlib
import io
import tarfile
from dataclasses import dataclass

import pytest

from patchforge.errors import NetworkError
from patchforge.layers import ReadStats, find_in_layers

TARGET = "opt/site/pkg/mod.py"


@dataclass(frozen=True)
class Layer:
    digest: str
    media_type: str
    data: bytes


class Blob:
    """A layer blob read from memory, with the registry reader's interface (digest at the end)."""

    def __init__(self, layer: Layer) -> None:
        self.layer, self.stream, self.bytes_read = layer, io.BytesIO(layer.data), 0
        self.sha = hashlib.sha256()

    def read(self, size: int = -1) -> bytes:
        chunk = self.stream.read(size if size and size > 0 else 1 << 20)
        self.sha.update(chunk)
        self.bytes_read += len(chunk)
        return chunk

    def drain(self) -> None:
        while self.read(1 << 16):
            pass
        if "sha256:" + self.sha.hexdigest() != self.layer.digest:
            raise NetworkError(f"{self.layer.digest}: digest mismatch")

    def close(self) -> None:
        pass

    def __enter__(self) -> "Blob":
        return self

    def __exit__(self, *exc) -> None:
        pass


def layer(entries, *, compress: bool = True) -> Layer:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as archive:
        for name, kind, payload in entries:
            info = tarfile.TarInfo(name)
            if kind == "file":
                info.size = len(payload)
                archive.addfile(info, io.BytesIO(payload))
                continue
            info.type = {"dir": tarfile.DIRTYPE, "symlink": tarfile.SYMTYPE,
                         "hardlink": tarfile.LNKTYPE}[kind]
            info.linkname = payload or ""
            archive.addfile(info)
    data = gzip.compress(out.getvalue(), mtime=0) if compress else out.getvalue()
    media = "application/vnd.oci.image.layer.v1.tar" + ("+gzip" if compress else "")
    return Layer("sha256:" + hashlib.sha256(data).hexdigest(), media, data)


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_hard_link_to_a_file_read_earlier_in_the_layer_and_to_one_not_kept():
    # The link's target comes first (as tar writes them); it is not a path we asked about, so
    # the layer is read a second time for it.
    base = layer([("opt/site/pkg/other.py", "file", b"shared\n"),
                  (TARGET, "hardlink", "opt/site/pkg/other.py")])
    stats = ReadStats()
    found = find_in_layers([base], Blob, [f"/{TARGET}"], stats=stats)[TARGET]
    assert found.kind == "file" and found.sha256 == sha(b"shared\n")
    assert "hard link" in found.detail and (stats.layers_read, stats.rereads) == (1, 1)


def test_symlink_at_the_path_and_a_symlinked_directory_above_it():
    # A symlink at the path is followed, as open() follows it: to nothing here...
    found = find_in_layers([layer([(TARGET, "symlink", "../elsewhere.py")])], Blob, [TARGET])
    assert found[TARGET].kind == "absent" and found[TARGET].resolved == "opt/site/elsewhere.py"
    assert "through /opt/site/pkg/mod.py -> ../elsewhere.py" in found[TARGET].detail
    # ...and to its file, with the link's own layer above the file's.
    lower = layer([("opt/site/elsewhere.py", "file", b"real\n")])
    found = find_in_layers([lower, layer([(TARGET, "symlink", "../elsewhere.py")])], Blob,
                           [TARGET])
    assert found[TARGET].kind == "file" and found[TARGET].sha256 == sha(b"real\n")
    # A symlinked directory above hides what the layers below had at the path itself: the
    # container reads /srv/pkg/mod.py, which no layer holds.
    lower = layer([(TARGET, "file", b"old\n")])
    upper = layer([("opt/site/pkg", "symlink", "/srv/pkg")])
    found = find_in_layers([lower, upper], Blob, [TARGET])[TARGET]
    assert found.kind == "absent" and found.resolved == "srv/pkg/mod.py"
    assert "through /opt/site/pkg -> /srv/pkg: /srv/pkg/mod.py: no layer holds it" \
        == found.detail


def test_a_symlink_chain_that_never_repeats_stops_after_the_kernels_40_hops():
    # opt/x -> x/y: every hop is a new path (opt/x/y/..., opt/x/y/y/...), never a repeat, as a
    # loop would be; the kernel gives ELOOP after 40 links, and so does the lookup.
    stats = ReadStats()
    found = find_in_layers([layer([("opt/x", "symlink", "x/y")])], Blob, ["opt/x/f.py"],
                           stats=stats)["opt/x/f.py"]
    assert (found.kind, found.detail) == ("absent", "too many levels of symbolic links (more "
                                                    "than 40 links: /opt/x -> x/y)")
    assert stats.layers_read == 1 and stats.rereads == 40  # the layer read once per hop


def test_later_entry_in_one_layer_wins_and_plain_tar_is_read():
    only = layer([(TARGET, "file", b"first\n"), (TARGET, "file", b"second\n")], compress=False)
    assert find_in_layers([only], Blob, [TARGET])[TARGET].sha256 == sha(b"second\n")


def test_directory_at_the_path_and_a_path_no_layer_holds():
    found = find_in_layers([layer([(TARGET, "dir", None)])], Blob, [TARGET, "opt/none.py"])
    assert found[TARGET].kind == "directory"
    assert found["opt/none.py"].kind == "absent" and found["opt/none.py"].layer is None


def test_a_layer_with_wrong_bytes_is_an_error():
    good = layer([(TARGET, "file", b"content\n")])
    bad = Layer(good.digest, good.media_type, good.data[:-8] + b"\0" * 8)
    with pytest.raises(NetworkError, match="sha256:"):
        find_in_layers([bad], Blob, [TARGET])
