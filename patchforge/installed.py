"""Reading an installed tree as its own system reads it: `verify --installed DIR`.

DIR is either an image's root file system (`docker export` unpacked, or `/` inside the
container), where each file is at its target (install-root + path), or an upstream's install
root (its site-packages), where it is at its path. Which, is decided per upstream
(`InstalledTree.at_targets`).

A symlink in the tree is followed as the system the tree belongs to follows it: an absolute one
from that system's root, not from this host's (a root file system's link to `/etc/...` reads the
tree's /etc, never the host's); `..` at that root stays there. The root of an install root is
the directory above it when DIR ends with the upstream's install root (`/srv/rootfs/opt/site`
for `/opt/site`; `/opt/site` itself on the host whose tree it is); otherwise it is not known,
and a symlink leading out of DIR is said as such, never read on the host.
"""
from __future__ import annotations

import errno
import hashlib
import os
import posixpath
from pathlib import Path
from typing import Any

from patchforge.layers import MAX_HOPS, FoundFile
from patchforge.model.record import record


@record(frozen=True)
class Found:
    """What the tree holds at one place: `kind` as layers.FoundFile's ("file", "absent",
    "directory", "other"), the file's bytes, and how symlinks led there (`through`)."""

    kind: str
    content: bytes | None = None
    through: tuple[str, ...] = ()
    detail: str = ""  # why a place could not be read ("other")

    def exists(self) -> bool:
        return self.kind != "absent"

    def read_through(self) -> str:
        """How symlinks led there, said after a row's detail ("" when none did)."""
        if self.detail:
            return f"; {self.detail}"
        return "; read through " + ", ".join(self.through) if self.through else ""

    def sha256(self) -> str | None:
        return hashlib.sha256(self.content).hexdigest() if self.content is not None else None

    def as_found_file(self, key: str, shown: str) -> FoundFile:
        """As layers.FoundFile (what verify --image's judges take)."""
        detail = self.detail or (f"{shown} through " + ", ".join(self.through)
                                 if self.through else "")
        return FoundFile(path=key, kind=self.kind, sha256=self.sha256(), detail=detail,
                         resolved=shown if self.through else None)


def install_root_of(entry: dict[str, Any]) -> str | None:
    """The install root an entry's target puts its path under (target = root + path)."""
    target, path = entry.get("target"), entry.get("path")
    if not target or not path:
        return None
    target = posixpath.normpath(target)
    if not target.endswith("/" + path.strip("/")):
        return None
    return target[:-len(path.strip("/")) - 1] or "/"


class InstalledTree:
    """DIR of `verify --installed`, read as its own system reads it (see the module)."""

    def __init__(self, installed: Path | str, entries: list[dict[str, Any]]) -> None:
        """`entries`: the manifest's overlays (dicts with upstream, path, target and
        base_sha256), which decide where DIR holds each upstream's files."""
        self.dir = Path(installed)
        self._found: dict[str, Found] = {}  # target -> what DIR holds there (each read once)
        self._roots: dict[str, str | None] = {}
        self.at_targets: set[str] = set()
        self.extend(entries)

    def extend(self, entries: list[dict[str, Any]]) -> None:
        """Take in the upstreams of `entries` not decided yet (those of the fixes dropped as
        landed that no overlay has); an upstream decided stays where it was found."""
        new = [e for e in entries if e.get("target") and e["upstream"] not in self._roots]
        for entry in new:
            self._roots.setdefault(entry["upstream"], install_root_of(entry))
        self.at_targets |= self._at_targets(new)

    def _at_targets(self, entries: list[dict[str, Any]]) -> set[str]:
        """The upstreams whose files are looked for at their targets (DIR is a root file
        system), rather than at their paths (DIR is the install root). Decided by whether any
        of the upstream's pre-images is there; an upstream without a pre-image to tell (each
        of its overlays creates its file) by whether its install root is a directory there."""
        found: set[str] = set()
        for entry in entries:
            if entry.get("target") and entry.get("base_sha256") is not None and \
                    self.read_in_root(entry["target"]).kind == "file":
                found.add(entry["upstream"])
        for upstream in dict.fromkeys(e["upstream"] for e in entries):
            root = self._roots.get(upstream)
            if upstream not in found and root and root != "/" and \
                    not any(e["upstream"] == upstream and e.get("base_sha256") is not None
                            for e in entries) and \
                    self.read_in_root(root).kind == "directory":
                found.add(upstream)
        return found

    def place(self, entry: dict[str, Any]) -> str:
        """Where DIR holds an entry's file, relative to DIR."""
        if entry.get("target") and entry["upstream"] in self.at_targets:
            return entry["target"].lstrip("/")
        return entry["path"]

    def shown(self, entry: dict[str, Any]) -> str:
        return os.path.join(str(self.dir), self.place(entry))

    def read(self, entry: dict[str, Any]) -> Found:
        """What the system of the tree reads at the entry's file."""
        if entry.get("target") and entry["upstream"] in self.at_targets:
            return self.read_in_root(entry["target"])
        root = self._roots.get(entry["upstream"])
        outer = _root_above(self.dir, root) if root else None
        if root and outer is not None:
            return _read(outer, posixpath.join(root, entry["path"]), confined=False)
        if os.path.islink(self.dir) and not os.path.exists(self.dir):
            # DIR itself a symlink this host cannot follow (an install root that is an
            # absolute link inside an unpacked image), its tree's root not known: "missing"
            # would say the files are not there.
            return Found("other", detail=f"{self.dir} is a symlink to {os.readlink(self.dir)}, "
                                         "which leads nowhere on this host: what it reads where "
                                         "it is installed is not known here (give the root file "
                                         "system, or the install root at its own path)")
        # (DIR `/`, inside the container: nothing leads out of it.)
        return _read(self.dir, entry["path"], confined=os.path.abspath(self.dir) != "/")

    def read_in_root(self, target: str) -> Found:
        """What DIR, as a root file system, holds at the absolute path `target`."""
        if target not in self._found:
            self._found[target] = _read(self.dir, target, confined=False)
        return self._found[target]


def _root_above(installed: Path, install_root: str) -> Path | None:
    """The root of the system whose `install_root` DIR is, when DIR's path ends with it."""
    parts = [p for p in install_root.split("/") if p]
    here = Path(os.path.abspath(installed))
    if not parts or list(here.parts[-len(parts):]) != parts:
        return None
    return Path(*here.parts[:-len(parts)])


def _read(root: Path, path: str, *, confined: bool) -> Found:
    """`path` under `root`, symlinks followed inside `root` as its kernel would (absolute
    ones from `root`, `..` at `root` staying there, as in a chroot). `confined`: `root` is DIR
    whose own root is not known: a symlink leading out of it is not followed."""
    pending = [p for p in path.split("/") if p not in ("", ".")]
    done: list[str] = []
    through: list[str] = []
    hops = 0
    while pending:
        name = pending.pop(0)
        if name == "..":
            if done:
                done.pop()
            elif confined:
                return Found("other", through=tuple(through),
                             detail=f"a path leading out of {root} ({' -> '.join(through) or path})"
                                    f": what it reads where {root} is installed is not known here")
            continue
        here = root.joinpath(*done, name)
        try:
            link = os.readlink(here)
        except (FileNotFoundError, NotADirectoryError):
            return Found("absent", through=tuple(through))
        except OSError as exc:
            if exc.errno == errno.EINVAL:  # not a symlink
                done.append(name)
                continue
            return Found("other", through=tuple(through), detail=f"{here}: {exc.strerror}")
        hops += 1
        through.append(f"/{'/'.join(done + [name])} -> {link}")
        if hops > MAX_HOPS:
            # The kernel's open() fails there (ELOOP): nothing is read, as in an image.
            links = list(dict.fromkeys(through))
            why = "a loop" if len(links) < len(through) else f"more than {MAX_HOPS} links"
            return Found("absent", through=tuple(links),
                         detail=f"too many levels of symbolic links ({why}: "
                                f"{', '.join(links)})")
        if link.startswith("/"):
            if confined:
                return Found("other", through=tuple(through),
                             detail=f"{here} is a symlink to {link}, outside {root}: what it "
                                    f"reads where {root} is installed is not known here (give "
                                    "the root file system, or the install root at its own path)")
            done = []
        pending = [p for p in link.split("/") if p not in ("", ".")] + pending
    final = root.joinpath(*done)
    try:
        if final.is_dir():
            return Found("directory", through=tuple(through))
        if not final.is_file():
            return Found("other" if os.path.lexists(final) else "absent", through=tuple(through))
        return Found("file", content=final.read_bytes(), through=tuple(through))
    except OSError as exc:
        return Found("other", through=tuple(through), detail=f"{final}: {exc.strerror}")
