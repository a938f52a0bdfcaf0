"""The upstream kinds and how their content gets into the store.

- `wheel`: a Python distribution fetched with the ordinary `pip download` (as configured on this
  machine: no package index host is named here), cached in `wheels_dir()`, checked against a
  pinned SHA-256, imported as a deterministic commit.
- `dir`: a local directory (e.g. an installed site-packages), imported the same way.
- `git`: any git URL or local path, fetched blob-less into the store (blobs on demand).
"""
from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from patchforge.errors import StoreError
from patchforge.store.gitstore import UpstreamStore, wheels_dir


@dataclass(frozen=True)
class WheelFile:
    path: Path
    filename: str
    sha256: str


def normalize_dist_name(name: str) -> str:
    """The form of a distribution name in wheel file names (PEP 427/503), lower-cased."""
    return re.sub(r"[-_.]+", "_", name).lower()


def _normalize_version(version: str) -> str:
    # Enough for matching cached files: pip writes the normalized version, users type it with
    # an optional leading "v" or in another case. Anything subtler goes through pip again.
    return version.strip().lower().lstrip("v").replace("-", "_")


def file_sha256(path: Path) -> str:
    with open(path, "rb") as handle:
        import hashlib  # here: loading OpenSSL costs ~5 ms, and only wheel pins are hashed

        return hashlib.file_digest(handle, "sha256").hexdigest()


def wheel_sha256(path: Path) -> str:
    """sha256 of a cached wheel, remembered by (size, mtime) the way git's index remembers file
    hashes: a vllm wheel is 330 MB, and hashing it on every status/rebase costs a second. A file
    whose size or mtime changed is hashed again."""
    import json

    from patchforge.fsutil import atomic_write
    from patchforge.store.gitstore import cache_dir

    stat = path.stat()
    key = str(path.resolve())
    memo_path = cache_dir() / "wheel-digests.json"
    try:
        memo = json.loads(memo_path.read_text())
    except (OSError, ValueError):
        memo = {}
    known = memo.get(key)
    if isinstance(known, dict) and known.get("size") == stat.st_size and \
            known.get("mtime_ns") == stat.st_mtime_ns and isinstance(known.get("sha256"), str):
        return known["sha256"]
    digest = file_sha256(path)
    memo[key] = {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "sha256": digest}
    try:
        atomic_write(memo_path, (json.dumps(memo, indent=1, sort_keys=True) + "\n").encode())
    except OSError:
        pass  # a read-only cache only costs the next run a hash
    return digest


def cached_wheels(package: str, version: str, directory: Path | None = None) -> list[Path]:
    """Cached wheel files of `package`==`version`, sorted by name."""
    directory = Path(directory) if directory is not None else wheels_dir()
    if not directory.is_dir():
        return []
    want_name, want_version = normalize_dist_name(package), _normalize_version(version)
    found = []
    for path in directory.glob("*.whl"):
        parts = path.name[:-len(".whl")].split("-")
        # {dist}-{version}(-{build})?-{python}-{abi}-{platform}.whl
        if len(parts) not in (5, 6):
            continue
        if normalize_dist_name(parts[0]) == want_name and \
                _normalize_version(parts[1]) == want_version:
            found.append(path)
    return sorted(found)


def fetch_wheel(package: str, version: str, *, pin_sha256: str | None = None,
                offline: bool = False, directory: Path | None = None) -> WheelFile:
    """The wheel of `package`==`version`: from the cache, else through `pip download`.

    With `pin_sha256` the file must have that digest (StoreError otherwise). Offline, a wheel
    that is not cached is an error, never a download.
    """
    directory = Path(directory) if directory is not None else wheels_dir()
    pin = pin_sha256.lower() if pin_sha256 else None
    candidates = cached_wheels(package, version, directory)
    if not candidates:
        if offline:
            raise StoreError(f"{package} {version}: no cached wheel in {directory} and "
                             "--offline forbids downloading it")
        _pip_download(package, version, directory)
        candidates = cached_wheels(package, version, directory)
        if not candidates:
            raise StoreError(f"{package} {version}: pip reported success but no matching wheel "
                             f"is in {directory}")
    digests = [(path, wheel_sha256(path)) for path in candidates]
    if pin is not None:
        for path, digest in digests:
            if digest == pin:
                return WheelFile(path, path.name, digest)
        got = ", ".join(f"{p.name} sha256 {d}" for p, d in digests)
        raise StoreError(f"{package} {version}: wheel does not match the pinned sha256 {pin} "
                         f"({got})", hint="the upstream.lock pin or the cached file is wrong")
    # Several platform builds of one version may be cached; the first by name is the one used,
    # so the choice does not depend on the directory's listing order.
    path, digest = digests[0]
    return WheelFile(path, path.name, digest)


def _pip_download(package: str, version: str, directory: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:",
               "--disable-pip-version-check", "--no-input", "--progress-bar", "off", "-q",
               "-d", str(directory), f"{package}=={version}"]
    try:
        proc = subprocess.run(command, capture_output=True)
    except OSError as exc:
        raise StoreError(f"cannot run pip: {exc}") from exc
    if proc.returncode != 0:
        err = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        raise StoreError(f"pip download {package}=={version} failed: "
                         + ("\n".join(err[-8:]) or f"exit {proc.returncode}"),
                         hint="check the package name, version and pip's index configuration")


def import_wheel_upstream(store: UpstreamStore, name: str, package: str, version: str,
                          pin_sha256: str | None = None, *,
                          offline: bool = False) -> tuple[str, str, WheelFile]:
    """Fetch (or reuse) a wheel and import it as upstream `name` labelled `version`.

    An earlier import of the same file (same sha256 in its commit message) is reused, so a
    second run costs a hash of the wheel, not an import.
    """
    wheel = fetch_wheel(package, version, pin_sha256=pin_sha256, offline=offline)
    previous = store.import_ref(name, version)
    if previous is not None and \
            f"\nsha256: {wheel.sha256}\n".encode() in store.commit_message(previous):
        return previous, store.tree_id(previous), wheel
    result = store.import_wheel(wheel.path, name, version, sha256=wheel.sha256)
    return result.commit, result.tree, wheel


def import_dir_upstream(store: UpstreamStore, name: str, path: Path,
                        label: str) -> tuple[str, str]:
    """Import a local directory as upstream `name` labelled `label`: (commit, tree)."""
    result = store.import_directory(Path(path), name, label)
    return result.commit, result.tree


def fetch_git_upstream(store: UpstreamStore, name: str, url: str, spec: str, *,
                       offline: bool = False) -> str:
    """The commit of `spec` (branch, tag, commit id) of a git upstream, fetching when needed.

    A full or abbreviated commit id already in the store is used without contacting the
    remote; branches and tags are always refreshed unless offline.
    """
    is_id = re.fullmatch(r"[0-9a-fA-F]{7,40}", spec) is not None
    if not is_id and not offline:
        # A tag already fetched is used as it is: tags name releases and nightlies and do not
        # move (git fetch does not clobber a known tag either), so asking the remote again on
        # every status/rebase only costs a fetch. Branches move: they are always refreshed.
        tag = store.read_ref(f"refs/patchforge/remotes/{name}/tags/{spec}")
        if tag is not None:
            return tag
    if is_id or offline:
        try:
            return store.resolve_in(name, spec)
        except StoreError:
            if offline:
                raise StoreError(f"{name}: {spec!r} is not in the store and --offline forbids "
                                 f"fetching it from {url}") from None
    if is_id and len(spec) < 40:
        # A remote cannot be asked for an abbreviated id: bring its branches and look again.
        _fetch_all_heads(store, name, url)
    else:
        store.fetch_git(name, url, [spec.lower() if is_id else spec])
    return store.resolve_in(name, spec)


def _fetch_all_heads(store: UpstreamStore, name: str, url: str) -> None:
    heads = store.remote_heads(name, url)
    if heads:
        store.fetch_git(name, url, heads)
