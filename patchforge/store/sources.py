"""The upstream kinds and how their content gets into the store.

- `wheel`: a Python distribution fetched with the ordinary `pip download` (as configured on this
  machine: no package index host is named here), cached in `wheels_dir()`, checked against a
  pinned SHA-256, imported as a deterministic commit.
- `dir`: a local directory (e.g. an installed site-packages), imported the same way.
- `git`: any git URL or local path, fetched blob-less into the store (blobs on demand):
  store/gitsource.py, apart, so a command on a git upstream loads none of the above.
"""
from __future__ import annotations

import hashlib
import os
import re
import shlex
import stat
import subprocess
import sys
import threading
import time
from functools import cache
from pathlib import Path

from patchforge import tempfiles
from patchforge.errors import StoreError
from patchforge.fsutil import parse_json
from patchforge.model.record import record
from patchforge.store.gitstore import TransferProgress, UpstreamStore, cache_dir, wheels_dir


@record(frozen=True)
class WheelFile:
    path: Path
    filename: str
    sha256: str

    @property
    def version(self) -> str:
        """The wheel's version as its file name says it, in PEP 440's normalized form: the one
        spelling of it a pin records (`01.1` and `1.1` are one file, one import)."""
        from patchforge import names

        return names.parse_wheel_name(self.filename).version


def normalize_dist_name(name: str) -> str:
    """The form of a distribution name in wheel file names (PEP 427/503), lower-cased."""
    return re.sub(r"[-_.]+", "_", name).lower()


def same_version(one: str, other: str) -> bool:
    """Whether two spellings name one version, as PEP 440 (and pip's `==`) compares them:
    `1.0`, `1.0.0`, `v1.0` and `01.0` are one; what is no version, by its spelling."""
    from packaging.version import InvalidVersion, Version

    try:
        return Version(one) == Version(other)
    except InvalidVersion:
        return one.strip().lower() == other.strip().lower()


def file_sha256(path: Path) -> str:
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def wheel_sha256(path: Path) -> str:
    """sha256 of a cached wheel, remembered by (size, mtime) the way git's index remembers file
    hashes: a vllm wheel is 330 MB, and hashing it on every status/rebase costs a second. A file
    whose size or mtime changed is hashed again."""
    import json

    from patchforge.fsutil import atomic_write

    stat = path.stat()
    key = str(path.resolve())
    memo_path = cache_dir() / "wheel-digests.json"
    try:
        memo = parse_json(memo_path.read_bytes())
    except (OSError, ValueError):
        memo = {}
    if not isinstance(memo, dict):  # damaged (a bad merge of a shared cache): written anew
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
    """Cached wheel files of `package`==`version`, sorted by name. A file whose name is no
    wheel's (`tinypkg-1.0-x1-py3-none-any.whl`: a build tag starts with a digit) is none:
    pip would not take it either, and a pin records the version its name says."""
    from patchforge import names

    directory = Path(directory) if directory is not None else wheels_dir()
    if not directory.is_dir():
        return []
    found = []
    for path in directory.glob("*.whl"):
        try:
            wheel = names.parse_wheel_name(path.name)
        except ValueError:
            continue
        if names.same_distribution(wheel.name, package) and same_version(wheel.version, version):
            found.append(path)
    return sorted(found)


def fetch_wheel(package: str, version: str, *, pin_sha256: str | None = None,
                filename: str | None = None, offline: bool = False,
                directory: Path | None = None,
                progress: TransferProgress | None = None) -> WheelFile:
    """The wheel of `package`==`version`: from the cache, else through `pip download`.

    Nothing is ever built or run: the name and version must be what PEP 508/440 allow (never a
    URL, an option or a requirement line), pip is asked for binary wheels only, and what arrives
    is checked before it enters the cache. With `pin_sha256` the file must have that digest;
    with `filename` too (a lock records both) only that very file is accepted, and it is
    downloaded for the tags its name carries, so a lock made on one machine fetches the same
    file on any other. Offline, a wheel that is not cached is an error, never a download.
    `progress` hears of the download.
    """
    package, version = _checked_wheel_request(package, version, filename)
    directory = Path(directory) if directory is not None else wheels_dir()
    pin = pin_sha256.lower() if pin_sha256 else None
    if pin is not None and not re.fullmatch(r"[0-9a-f]{64}", pin):
        raise StoreError(f"{package} {version}: the pinned sha256 {pin_sha256!r} is not 64 hex")
    if filename is not None:
        candidates = [directory / filename] if os.path.lexists(directory / filename) else []
    else:
        candidates = cached_wheels(package, version, directory)
    for path in candidates:
        _check_cached_entry(path, package, version)
    downloaded = False
    if not candidates:
        if offline:
            wanted = filename or "no cached wheel"
            raise StoreError(f"{package} {version}: {wanted} {'is not ' if filename else ''}in "
                             f"{directory} and --offline forbids downloading it")
        candidates = [_pip_download(package, version, directory, filename=filename, sha256=pin,
                                    progress=progress)]
        downloaded = True
    digests = [(path, wheel_sha256(path)) for path in candidates]
    if pin is not None:
        for path, digest in digests:
            if digest == pin:
                return WheelFile(path, path.name, digest)
        got = ", ".join(f"{p} has sha256 {d}" for p, d in digests)
        mismatch = f"{package} {version}: the cached wheel does not match the pinned sha256 " \
                   f"{pin}: {got}"
        if filename is not None and not offline and not downloaded:
            # The cache holds the lock's file name with other bytes (a copy cut short, a cache
            # restored from elsewhere): the lock is the authority, so the pinned file is
            # downloaded (pip checks its digest) and replaces the cached one.
            try:
                path = _pip_download(package, version, directory, filename=filename,
                                     sha256=pin, progress=progress)
            except StoreError as exc:
                raise StoreError(f"{mismatch}; downloading the pinned file instead failed: "
                                 f"{exc.message}", hint=exc.hint) from None
            return WheelFile(path, path.name, wheel_sha256(path))
        raise StoreError(mismatch,
                         hint="remove the cached file; `patchforge fetch` without --offline "
                              "downloads the pinned one" if offline else
                         "the upstream.lock pin or the cached file is wrong")
    # Several platform builds of one version may be cached; the first by name is the one used,
    # so the choice does not depend on the directory's listing order.
    path, digest = digests[0]
    if not downloaded and not _came_from_index(path, digest, package, version):
        path, digest = _checked_against_index(package, version, path, digest, offline=offline,
                                              progress=progress)
    return WheelFile(path, path.name, digest)


# Beside each wheel patchforge downloads, a record of where it came from: `<wheel>.origin.json`.
ORIGIN_SUFFIX = ".origin.json"


def pip_index_setting() -> str:
    """Where pip is told to find wheels, without any user:password part: the environment
    (`PIP_INDEX_URL`, `PIP_EXTRA_INDEX_URL`, `PIP_FIND_LINKS`), then what pip's configuration
    files say of it (`_pip_config_index`). Only compared with the setting a record was written
    under: an index named in pip.conf alone, changed there, is another index too."""
    from patchforge.store.giturl import redact

    variables = _pip_variables(os.environ)
    said = [redact(part) for key in ("index-url", "extra-index-url", "find-links")
            for part in _absolute_pip_value(key, variables.get(key, "")).split()]
    return " ".join(said + _pip_config_index())


# pip settings that hold paths (a find-links or index directory, a certificate, a constraint
# file), which pip reads from its working directory when they are relative. The pip patchforge
# runs works in a scratch directory of the wheel cache: each such path, in the environment or a
# configuration file, is given to it absolute, from patchforge's working directory, which is
# also how the wheel's origin record names it. A leading `~` is pip's to expand; a URL is none.
_PIP_PATH_LISTS = ("extra-index-url", "find-links", "constraint")
_PIP_PATH_SETTINGS = ("index-url", "cert", "client-cert", "cache-dir", "log") + _PIP_PATH_LISTS


def _pip_variable(key: str) -> str:
    """`find-links` -> `PIP_FIND_LINKS`."""
    return "PIP_" + key.upper().replace("-", "_")


def _pip_key(name: str) -> str:
    """A setting's name as pip reads it from a configuration file or after `PIP_` in the
    environment (pip's configuration._normalize_name): `PIP_find_links`, `Find_Links` and
    `--find-links` are all `find-links`."""
    name = name.lower().replace("_", "-")
    return name[2:] if name.startswith("--") else name


def _pip_variables(environment) -> dict[str, str]:
    """The settings the PIP_* variables of `environment` give pip, by _pip_key (a later
    variable naming the same setting over an earlier, as pip reads them)."""
    return {_pip_key(key[4:]): value for key, value in environment.items()
            if key.startswith("PIP_")}


def _absolute_pip_value(key: str, value: str) -> str:
    """A pip setting's value with each relative path in it made absolute (_PIP_PATH_SETTINGS)."""
    if key not in _PIP_PATH_SETTINGS:
        return value
    parts = value.split() if key in _PIP_PATH_LISTS else [value]
    absolute = [os.path.abspath(part) if part.strip() and not os.path.isabs(part)
                and not part.startswith("~")
                and not re.match(r"[A-Za-z][A-Za-z0-9+.-]*:", part) else part
                for part in parts]
    return " ".join(absolute) if absolute != parts else value


# What a pip configuration file says of where pip finds wheels, in the sections `pip download`
# reads (`[global]`, then its own `[download]`).
_PIP_INDEX_KEYS = ("index-url", "extra-index-url", "find-links", "no-index")


def _pip_config_files() -> list[Path]:
    """The configuration files pip reads, in pip's order (a later file's setting over an
    earlier's): the system's ($XDG_CONFIG_DIRS/pip/pip.conf, /etc/pip.conf), the user's
    (~/.pip/pip.conf, $XDG_CONFIG_HOME/pip/pip.conf) unless $PIP_CONFIG_FILE names a file that
    exists, the environment's (sys.prefix), then $PIP_CONFIG_FILE; none at all when that is
    os.devnull. Exactly pip's list (pip's Configuration.iter_config_files): its settings are
    handed to pip (_pip_environment), so a file pip skips must not be read. PIP_ISOLATED_MODE
    does not make pip skip the user's files (only `--isolated` on its command line does, which
    patchforge never passes). The environment's file is this interpreter's: a `pip` on PATH
    from another environment (pip_command, where this one has no pip) reads its own prefix's
    pip.conf, which is not read here."""
    named = os.environ.get("PIP_CONFIG_FILE")
    if named == os.devnull:
        return []
    home = Path(os.path.expanduser("~"))
    files = [Path(directory) / "pip" / "pip.conf"
             for directory in _system_config_dirs(os.environ.get("XDG_CONFIG_DIRS", ""))] \
        + [Path("/etc/pip.conf")]
    if not (named and os.path.exists(named)):
        user = os.environ.get("XDG_CONFIG_HOME", "")
        files += [home / ".pip" / "pip.conf",
                  Path(user if user.strip() else home / ".config") / "pip" / "pip.conf"]
    files.append(Path(sys.prefix) / "pip.conf")
    if named:
        files.append(Path(named))
    # A file listed twice (PIP_CONFIG_FILE=/etc/pip.conf) is read twice by pip, the later
    # reading winning: kept in its last place.
    return list(dict.fromkeys(files[::-1]))[::-1]


def _system_config_dirs(value: str, *, ask_pip: bool = True) -> list[str]:
    """The directories $XDG_CONFIG_DIRS (`value`) names as the pip that runs reads them, each
    holding a system pip.conf (DIR/pip/pip.conf), in order: /etc/xdg when it is unset or blank;
    else each part between separators but an empty one, /etc/xdg when none is left. An empty
    part (`:/etc/xdg`, what `export XDG_CONFIG_DIRS=$XDG_CONFIG_DIRS:/x` gives when it was
    unset) is no directory: the XDG Base Directory specification has relative paths there
    ignored, and a pip run there would read `pip/pip.conf` of the directory patchforge runs in,
    a stack's checkout a pull request can add that file to, naming the index the lock's wheel
    comes from. pip, handed the parts left, reads none there either. A part starting with
    `~` is read as pip reads it, which differs between versions: pip 23 (platformdirs 3)
    expands it to the home directory, pip 24.2 (platformdirs 4.2) takes it as a directory
    named `~`, from where it runs; the pip that runs is asked (_pip_expands_home), unless
    `ask_pip` is False (finding that pip: then expanded, as pip did before). A part left relative is relative to where patchforge runs, as for pip run
    there (_pip_environment hands pip the full path)."""
    parts = [part for part in value.split(os.pathsep) if part]
    if not "".join(parts).strip():
        return ["/etc/xdg"]
    if any(part.startswith("~") for part in parts) and \
            (not ask_pip or _pip_expands_home(tuple(_pip_command_or_none() or ()))):
        parts = [os.path.expanduser(part) for part in parts]
    return parts


def _pip_command_or_none() -> list[str] | None:
    try:
        return pip_command()
    except StoreError:  # no pip: said by the download that needs one
        return None


_HOME_PROBE = "~/.patchforge-probe"


@cache
def _pip_expands_home(command: tuple[str, ...]) -> bool:
    """Whether the pip `command` runs expands a `~` in $XDG_CONFIG_DIRS: asked of it (`pip
    config debug` lists the files it would read, the system's first; run from `/` with no
    configuration file of the user's, which it would read too). A pip that cannot say (one
    without `config debug`) is taken to expand it, as every pip before 24 did."""
    if not command:
        return True
    environment = {**os.environ, "XDG_CONFIG_DIRS": _HOME_PROBE, "PIP_CONFIG_FILE": os.devnull,
                   "PYTHONSAFEPATH": "1", "PIP_REQUIRE_VIRTUALENV": "0"}
    try:
        proc = subprocess.run([*command, "config", "debug"], capture_output=True, cwd="/",
                              stdin=subprocess.DEVNULL, env=environment, timeout=120)
    except (OSError, subprocess.SubprocessError):
        return True
    listed = re.search(r"^global:\n\s+(.*), exists: ", proc.stdout.decode("utf-8", "replace"),
                       re.M)
    probe = os.path.join(_HOME_PROBE, "pip", "pip.conf")
    return not (proc.returncode == 0 and listed is not None and listed.group(1) == probe)


def _pip_config_index() -> list[str]:
    """`FILE:[SECTION]KEY=VALUE` for each of _PIP_INDEX_KEYS pip's configuration files set
    (values without user:password). A file that is no regular file is left to pip; one that
    does not parse is said by its digest, so that any change to it is a change."""
    import configparser

    from patchforge.store.giturl import redact

    said: list[str] = []
    for path in _pip_config_files():
        try:
            info = path.stat()
            if not stat.S_ISREG(info.st_mode) or info.st_size > 1 << 20:
                continue
            data = path.read_bytes()
        except OSError:
            continue
        parser = configparser.RawConfigParser(strict=False, interpolation=None)
        try:
            parser.read_string(data.decode("utf-8"), source=str(path))
        except (UnicodeDecodeError, configparser.Error):
            said.append(f"{path}:sha256={hashlib.sha256(data).hexdigest()}")
            continue
        for section in ("global", "download"):
            if not parser.has_section(section):
                continue
            for key, value in parser.items(section):
                if _pip_key(key) in _PIP_INDEX_KEYS:
                    value = _absolute_pip_value(_pip_key(key), value or "")
                    said += [f"{path}:[{section}]{key}={redact(part)}"
                             for part in value.split()]
    return said


def _pip_config_paths() -> dict[str, str]:
    """The path settings (_PIP_PATH_SETTINGS) pip's configuration files give `pip download`
    that hold a relative path, as pip takes them: a later file's over an earlier's, `[download]`
    over `[global]`. {key: value}."""
    import configparser

    found: dict[tuple[str, str], str] = {}
    for path in _pip_config_files():
        try:
            if not path.is_file():
                continue
            parser = configparser.RawConfigParser(strict=False, interpolation=None)
            parser.read_string(path.read_bytes().decode("utf-8"), source=str(path))
        except (OSError, UnicodeDecodeError, configparser.Error):
            continue  # pip says what is wrong with it
        for section in ("global", "download"):
            if parser.has_section(section):
                for key, value in parser.items(section):
                    key = _pip_key(key)
                    if key in _PIP_PATH_SETTINGS:
                        found[(section, key)] = value or ""
    taken = {key: value for (section, key), value in found.items() if section == "global"}
    taken.update({key: value for (section, key), value in found.items() if section == "download"})
    return {key: value for key, value in taken.items() if _absolute_pip_value(key, value) != value}


def record_wheel_origin(path: Path, sha256: str | None = None) -> None:
    """Write `path`'s origin record: the file's sha256 and the index setting it was downloaded
    with. A first pin takes a cached wheel only with a record matching both (`fetch_wheel`)."""
    import json

    from patchforge.fsutil import atomic_write

    digest = sha256 or file_sha256(path)
    data = json.dumps({"sha256": digest, "index": pip_index_setting()}, sort_keys=True)
    atomic_write(Path(str(path) + ORIGIN_SUFFIX), (data + "\n").encode(), sync_directory=False)


def _came_from_index(path: Path, digest: str, package: str, version: str) -> bool:
    """Whether the cache records that `path`, with these very bytes, was downloaded from the
    index pip is now told to use."""
    record_path = Path(str(path) + ORIGIN_SUFFIX)
    # Looked at before it is read, as the wheel is: a FIFO there hung the command, a
    # directory failed its rewrite naming a temporary file and "run the command again".
    _check_cached_entry(record_path, package, version, expected="the wheel's origin record")
    try:
        record = parse_json(record_path.read_bytes())
    except (OSError, ValueError):
        return False
    return isinstance(record, dict) and record.get("sha256") == digest and \
        record.get("index") == pip_index_setting()


def _checked_against_index(package: str, version: str, path: Path, digest: str, *,
                           offline: bool, progress: TransferProgress | None) -> tuple[Path, str]:
    """A cached wheel about to be pinned for the first time, which the cache does not record as
    the index's (a local build, a file from another index, one copied in by hand): pip is asked
    for the index's file of that name. A cached file with other bytes is replaced by it, said
    in a warning; offline, or when pip cannot answer, the cached file is pinned with a warning
    saying it was never checked against an index."""
    import logging

    log = logging.getLogger("patchforge.store")
    if offline:
        log.warning("warning: %s %s: pinning %s from the wheel cache, which does not record it "
                    "as the package index's file (sha256 %s); --offline asks no index: run "
                    "without --offline to check it", package, version, path, digest)
        return path, digest
    try:
        fresh = _pip_download(package, version, path.parent, filename=path.name,
                              progress=progress)
    except StoreError as exc:
        reason = exc.message.splitlines()[-1] if exc.message else "pip failed"
        log.warning("warning: %s %s: pinning %s from the wheel cache, which does not record it "
                    "as the package index's file (sha256 %s), and pip did not download the index's "
                    "file to check it against (%s)", package, version, path, digest, reason)
        return path, digest
    fresh_digest = wheel_sha256(fresh)
    if fresh_digest != digest:
        log.warning("warning: %s %s: the cached %s (sha256 %s) is not the file the package index "
                    "serves (sha256 %s): replaced by the index's, which is pinned", package,
                    version, path, digest, fresh_digest)
    return fresh, fresh_digest


def _check_cached_entry(path: Path, package: str, version: str, *,
                        expected: str = "a wheel file") -> None:
    """Refuse what lies in the wheel cache under a wheel's name but is no file to read: a FIFO
    (reading it waits for a writer for ever), a directory, a device, a symbolic link to nothing.
    Looked at with stat, never opened; an OS error alone ("Is a directory") said to run the
    command again, which failed the same way."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        if not path.is_symlink():
            return  # removed meanwhile: the cache lacks it, as the caller then finds
        what = f"a symbolic link to {os.readlink(path)}, which does not exist"
    except OSError as exc:
        what = f"not to be looked at ({exc.strerror or exc})"
    else:
        if stat.S_ISREG(mode):
            return
        kind = ("a directory" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode)
                else "a socket" if stat.S_ISSOCK(mode) else "a device" if
                stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "no regular file")
        what = (f"a symbolic link to {os.readlink(path)}, {kind}" if path.is_symlink()
                else kind) + f", not {expected}"
    where = "PATCHFORGE_WHEELS" if os.environ.get("PATCHFORGE_WHEELS") else "the wheel cache"
    why = ("a cached wheel is a file (or a symbolic link to one); without one, patchforge "
           "downloads the wheel there itself" if expected == "a wheel file" else
           "patchforge writes the record again when it next checks the wheel against the "
           "package index")
    raise StoreError(f"{package} {version}: {path} in {where} is {what}",
                     hint=f"remove it (`rm -r {shlex.quote(str(path))}`): {why}")


def _checked_wheel_request(package: str, version: str,
                           filename: str | None) -> tuple[str, str]:
    """(package, normalized version) once both are plain names pip cannot read as anything else
    (a URL, `name @ file://...`, `-r...`); a recorded file name must be a wheel of them."""
    from patchforge import names

    try:
        names.check_distribution(package)
        version = names.check_version(version)
        if filename is not None:
            wheel = names.parse_wheel_name(filename)
            if not names.same_distribution(wheel.name, package) or \
                    not same_version(wheel.version, version):
                raise ValueError(f"the wheel file {filename!r} is not {package} {version}")
    except ValueError as exc:
        raise StoreError(f"refusing to fetch a wheel: {exc}",
                         hint="a wheel upstream names a distribution and a version, nothing else"
                         ) from None
    return package, version


def pip_command() -> list[str]:
    """How to run pip: this interpreter's own (`python -m pip`) when it has one, else a `pip` on
    PATH, else `python3 -m pip` (an environment made by uv has no pip of its own)."""
    import importlib.util  # here: a command that downloads no wheel (a rebase) need not load it

    if importlib.util.find_spec("pip") is not None:
        return [sys.executable, "-m", "pip"]
    for name in ("pip3", "pip"):
        found = tempfiles.which(name)
        if found:
            return [found]
    python3 = tempfiles.which("python3")
    # From `/`, with the current directory kept off sys.path: `-m pip` started in a stack's
    # repository would otherwise import a `pip/` committed there.
    if python3 and subprocess.run([python3, "-m", "pip", "--version"], capture_output=True,
                                  cwd="/", env=_pip_environment(os.environ, ask_pip=False)
                                  ).returncode == 0:
        return [python3, "-m", "pip"]
    raise StoreError("cannot download wheels: no pip in this Python environment "
                     f"({sys.executable}), none on PATH, and no `python3 -m pip`",
                     hint="install pip (e.g. `uv pip install pip` or `python -m ensurepip`), or "
                          "put the wheel file in the wheel cache")


def _tag_options(filename: str) -> list[str]:
    """pip download options selecting the tags a recorded wheel file name carries (instead of
    this machine's): interpreter, abi and platform, as `pip download --platform ...` reads them."""
    from patchforge import names

    tags = names.parse_wheel_name(filename).tags
    # The tag this Python's major version matches, where the file carries several: pip checks
    # the release's Requires-Python against the version it is given, and a universal wheel's
    # first tag (`py2` of `py2.py3`) fails a `>=3.8` one on every machine.
    interpreter = next((interpreter for interpreter, _, _ in tags
                        if re.fullmatch(rf"(py|cp){sys.version_info.major}\d*", interpreter)),
                       tags[0][0])
    match = re.fullmatch(r"(py|cp|pp|ip|jy)(\d+)", interpreter)
    if match is None:
        raise StoreError(f"{filename}: interpreter tag {interpreter!r} is not one pip download "
                         "can select")
    options = ["--implementation", match.group(1),
               "--python-version", _python_version_for(match.group(1), match.group(2), tags)]
    for abi in sorted({abi for _, abi, _ in tags}):
        options += ["--abi", abi]
    for platform in sorted({platform for _, _, platform in tags}):
        options += ["--platform", platform]
    return options


def _python_version_for(implementation: str, digits: str, tags) -> str:
    """The `--python-version` for a wheel's interpreter tag. pip also checks the release's
    Requires-Python against it, so a tag that stands for a range (`py3`, or `cp38` with the
    stable ABI `abi3`: that CPython and every later one) is given this interpreter's version
    when it is in the range: vllm's `cp38-abi3` wheels require Python >= 3.11 and would not be
    found for "3.8"."""
    here = f"{sys.version_info.major}{sys.version_info.minor}"
    if implementation == "py" and digits == str(sys.version_info.major):
        return here
    if all(abi == "abi3" for _, abi, _ in tags) and digits[:1] == here[:1] and \
            int(digits[1:] or 0) <= sys.version_info.minor:
        return here
    return digits


def _pip_environment(environment, *, ask_pip: bool = True) -> dict[str, str]:
    """pip's environment: the user's (index, proxy, certificates), with `-m pip` never importing
    from the current directory (PYTHONSAFEPATH) and require-virtualenv off. That guard is for
    installs; a download into our cache installs nothing, and with PIP_REQUIRE_VIRTUALENV set (a
    common safeguard) every fetch outside a virtual environment failed. A relative
    $PIP_CONFIG_FILE is made absolute: pip runs from a scratch directory, and would not find
    the file that the wheel's origin record read (_pip_config_files), relative to ours. So is
    every relative path a pip setting holds (_PIP_PATH_SETTINGS: $PIP_FIND_LINKS, $PIP_CERT,
    and those of the configuration files, given to pip as the variable that overrides them)."""
    pip_env = {**environment, "PYTHONSAFEPATH": "1", "PIP_REQUIRE_VIRTUALENV": "0"}
    # A path setting in another spelling pip reads (`PIP_find_links`) under its own name, as
    # pip takes it, so that it is made absolute as the origin record names it.
    variables = _pip_variables(pip_env)
    for key in _PIP_PATH_SETTINGS:
        spellings = [name for name in pip_env if name.startswith("PIP_") and
                     _pip_key(name[4:]) == key and name != _pip_variable(key)]
        for name in spellings:
            del pip_env[name]
        if spellings:
            pip_env[_pip_variable(key)] = variables[key]
    named = pip_env.get("PIP_CONFIG_FILE")
    if named and named != os.devnull:
        pip_env["PIP_CONFIG_FILE"] = os.path.abspath(named)
    # So are the directories pip finds the user's and the system's pip.conf under
    # (_pip_config_files reads them from here), when relative.
    # ($XDG_CONFIG_DIRS as the pip that runs reads it, `~` and an empty part too:
    # _system_config_dirs. Not asked of pip while finding pip: `ask_pip` False.)
    for variable in ("HOME", "XDG_CONFIG_HOME", "XDG_CONFIG_DIRS"):
        value = pip_env.get(variable)
        if value and value.strip():
            if variable == "XDG_CONFIG_DIRS":
                pip_env[variable] = os.pathsep.join(
                    os.path.abspath(part) for part in _system_config_dirs(value, ask_pip=ask_pip))
                continue
            pip_env[variable] = os.path.abspath(value) if not os.path.isabs(value) else value
    for key, value in _pip_config_paths().items():
        pip_env.setdefault(_pip_variable(key), value)  # the environment's own wins, as in pip
    for key in _PIP_PATH_SETTINGS:
        if pip_env.get(_pip_variable(key)):
            pip_env[_pip_variable(key)] = _absolute_pip_value(key, pip_env[_pip_variable(key)])
    return pip_env


def _pip_download(package: str, version: str, directory: Path, *, filename: str | None = None,
                  sha256: str | None = None, progress: TransferProgress | None = None) -> Path:
    """Download one wheel with pip as configured on this machine, into a scratch directory
    beside the cache; the file enters the cache only when it is a wheel of `package`==`version`
    (and, when recorded, the very `filename` with the `sha256`)."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
        _remove_stale_downloads(directory)
        scratch = Path(tempfiles.make_temp_dir(".download-", directory))
    except OSError as exc:
        # A wheel cache that names a file, or a directory that cannot be written: said with
        # the setting (an OS error alone, "File exists: ...", said to run the command again).
        where = "PATCHFORGE_WHEELS" if os.environ.get("PATCHFORGE_WHEELS") else "the wheel cache"
        raise StoreError(f"{where} {directory}: cannot download a wheel there "
                         f"({exc.strerror or exc})",
                         hint="point PATCHFORGE_WHEELS at a directory patchforge may write"
                         ) from None
    from patchforge import names

    try:
        if filename is not None:
            # The very file a lock names: its version as the file spells it, matched exactly
            # (`===`). pip's `==2.0` also takes a local build (`2.0+rocm.1`, PEP 440) and
            # prefers it, which an index beside 2.0 then made pip's hash check refuse.
            try:
                proc = _run_pip_download(
                    package, f"==={names.parse_wheel_name(filename).version}", version,
                    scratch, filename=filename, sha256=sha256, progress=progress)
                failed = None
            except StoreError as exc:
                failed = exc
            if failed is not None and "hash" not in str(failed).lower():
                raise failed  # no index, no network: asked once
            if failed is not None or not (scratch / "out" / filename).is_file():
                # `===` cannot tell builds of one version apart: pip prefers a rebuild with a
                # build tag (`toypkg-2.0-1-py3-none-any.whl`) published after the lock, which
                # fails the hash check. The locked file is then asked for by its own link.
                link = _index_link_of(package, filename, scratch)
                if link is None:
                    if failed is not None:
                        raise failed
                else:
                    tempfiles.remove_tree(scratch / "out", ignore_errors=True)
                    proc = _run_pip_download(package, f" @ {link}", version, scratch,
                                             filename=filename, sha256=sha256,
                                             progress=progress)
        else:
            proc = _run_pip_download(package, f"=={version}", version, scratch,
                                     progress=progress)
        arrived = sorted((scratch / "out").iterdir()) if (scratch / "out").is_dir() else []
        local = _local_build_of(arrived, version)
        if filename is None and local is not None:
            # `==2.0` took a local build of 2.0 (`2.0+rocm.1`), which pip prefers: the release
            # itself is asked for by its own spelling, when the index has it.
            tempfiles.remove_tree(scratch / "out", ignore_errors=True)
            try:
                proc = _run_pip_download(package, f"==={names.check_version(version)}",
                                         version, scratch, progress=progress)
            except StoreError as exc:
                # pip's own last lines kept (_run_pip_download's): an index answering 500, a
                # network drop, a 2.0 for another platform alone are not "no file of 2.0".
                answer = exc.message.partition(" failed: ")[2] or exc.message
                raise StoreError(
                    f"pip download {package}=={version} gives {package} {local}, a local build "
                    f"of {version}, and no file of {version} itself that pip could take; "
                    f"pip download {package}==={version} failed: {answer}",
                    hint=f"if the index has no file of {version}, name that build in full "
                         f"({local}) to pin it") from None
            arrived = sorted((scratch / "out").iterdir()) if (scratch / "out").is_dir() else []
        wanted = [p for p in arrived if p.name == filename] if filename else \
            [p for p in arrived if p.name.endswith(".whl")]
        if len(arrived) != 1 or len(wanted) != 1:
            got = ", ".join(p.name for p in arrived) or "nothing"
            raise StoreError(f"pip download {package}=={version} gave {got}, not "
                             f"{filename or 'one wheel'}")
        path = wanted[0]
        try:
            _checked_wheel_request(package, version, path.name)
        except StoreError:
            raise StoreError(f"pip download {package}=={version} gave {path.name}, "
                             f"not a wheel of {package} {version}") from None
        _say_yanked(package, version, proc.stderr)
        digest = file_sha256(path)
        if sha256 is not None and digest != sha256:
            raise StoreError(f"{package} {version}: the downloaded {path.name} has sha256 "
                             f"{digest}, the pin is {sha256}",
                             hint="the index serves another file under that name")
        target = directory / path.name
        os.replace(path, target)
        record_wheel_origin(target, digest)
        return target
    finally:
        tempfiles.remove_tree(scratch, ignore_errors=True)


def _run_pip_download(package: str, specifier: str, version: str, scratch: Path, *,
                      filename: str | None = None, sha256: str | None = None,
                      progress: TransferProgress | None = None) -> subprocess.CompletedProcess:
    """Run `pip download` of `package` `specifier` (binary wheels only, no dependencies) into
    `scratch`/out; pip's failure is a StoreError naming `version` as asked."""
    requirement = f"{package}{specifier}"
    if sha256 is not None:
        # pip's hash-checking mode: pip itself refuses any file with another digest.
        requirement += f" --hash=sha256:{sha256}"
    requirements = scratch / "requirements.txt"
    requirements.write_text(requirement + "\n")
    command = pip_command() + [
        "download", "--no-deps", "--only-binary", ":all:", "--disable-pip-version-check",
        "--no-input", "--progress-bar", "off", "-q", "-d", str(scratch / "out")]
    if filename is not None:
        command += _tag_options(filename)
    command += ["-r", str(requirements)]
    if progress is not None:
        progress.step(f"downloading {package} {version} with pip")
    try:
        with _DownloadWatch(scratch / "tmp", progress) as watched:
            # Run from our own scratch directory, never the project's: what a stack's
            # repository holds is never imported by the pip we start.
            proc = subprocess.run(command, capture_output=True, stdin=subprocess.DEVNULL,
                                  cwd=scratch, env=_pip_environment(watched or os.environ))
    except OSError as exc:
        raise StoreError(f"cannot run pip: {exc}") from exc
    if proc.returncode != 0:
        err = [_shorter_version_list(line) for line in
               proc.stderr.decode("utf-8", "replace").strip().splitlines()]
        message = f"pip download {package}=={version} failed: " + \
            ("\n".join(err[-8:]) or f"exit {proc.returncode}")
        if any(re.search(_PIP_NO_ANSWER, line) for line in err):
            # pip says "no matching distribution" of an index it could not connect to, as
            # of one that lacks the version: the index gave no answer, so nothing is known
            # of the version and the command may succeed later (exit 75).
            error = StoreError(message, hint="pip could not reach its package index: nothing "
                                             "in the project or command line is wrong; run "
                                             "the command again later")
            error.gave_up = True
            raise error
        raise StoreError(message,
                         hint="check the package name, version and pip's index configuration")
    return proc


# What pip (urllib3) logs when its index could not be connected to or gave no answer; with
# its retries on (pip's default), each failed try is a "Retrying ..." warning naming it.
_PIP_NO_ANSWER = (r"Failed to establish a new connection|Connection refused|Read timed out"
                  r"|Connection reset by peer|Temporary failure in name resolution"
                  r"|Name or service not known|Network is unreachable|No route to host"
                  r"|too many 50[234] error responses")


def pip_error_lines(error: StoreError) -> str:
    """pip's own ERROR lines of `error` (a failed `pip download`), joined; its last line when
    it printed none. Its WARNING lines (an extra index that is a missing directory) come
    first and say nothing of why the download failed."""
    said = error.message.partition(" failed: ")[2] or error.message
    lines = [line for line in said.splitlines() if line.startswith("ERROR:")]
    return "; ".join(lines or said.splitlines()[-1:])


def _index_link_of(package: str, filename: str, scratch: Path) -> str | None:
    """Where the index pip is configured with serves the wheel `filename`: the link pip's own
    finder lists for `package` (`pip index versions`, its "Found link" lines), without
    user:password (pip adds the index's own) or fragment; None when pip lists no such file."""
    from urllib.parse import unquote, urlsplit, urlunsplit

    command = pip_command() + [
        "index", "versions", package, "--pre", "--only-binary", ":all:",
        "--disable-pip-version-check", "--no-input", "-vv", *_tag_options(filename)]
    try:
        proc = subprocess.run(command, capture_output=True, stdin=subprocess.DEVNULL,
                              cwd=scratch, env=_pip_environment(os.environ))
    except OSError:
        return None
    for line in proc.stdout.decode("utf-8", "replace").splitlines():
        # `Found link URL, version: V`, or `Found link URL (from PAGE), version: V`
        found = re.match(r"\s*Found link (\S+?),?\s", line)
        if found is None:
            continue
        url = urlsplit(found.group(1))
        if url.scheme in ("http", "https", "file") and \
                unquote(url.path.rsplit("/", 1)[-1]) == filename:
            return urlunsplit((url.scheme, url.netloc.rpartition("@")[2], url.path, url.query,
                               ""))
    return None


def _local_build_of(arrived: list[Path], version: str) -> str | None:
    """The version of the one wheel in `arrived` when it is a local build (`2.0+rocm.1`) of
    `version` asked without a local part (`2.0`), which pip's `==` takes too; else None."""
    from packaging.version import InvalidVersion, Version

    from patchforge import names

    wheels = [path for path in arrived if path.name.endswith(".whl")]
    if len(wheels) != 1 or len(arrived) != 1:
        return None
    try:
        got = Version(names.parse_wheel_name(wheels[0].name).version)
        asked = Version(version)
    except (ValueError, InvalidVersion):
        return None
    if asked.local is None and got.local is not None and got.public == asked.public:
        return str(got)
    return None


def _say_yanked(package: str, version: str, stderr: bytes) -> None:
    """A `warning:` when pip's download was of a release its index marks yanked (PEP 592:
    withdrawn by its publishers, often with a reason such as a broken build). pip takes an
    exact `==` of a yanked release and says so only on its standard error, which a download
    that succeeds does not show: the release was pinned, exit 0, without a word."""
    text = stderr.decode("utf-8", "replace")
    if "yanked version" not in text:
        return
    reason = re.search(r"^Reason for being yanked: (.*)$", text, re.M)
    import logging  # only on this rare path, as for a tag that moved (see below)

    said = " ".join(reason.group(1).split())[:200] if reason else ""
    logging.getLogger("patchforge.store").warning(
        "warning: %s %s is yanked on the package index (its publishers withdrew it%s): "
        "pinned all the same, as pip downloads an exact version; choose another unless you "
        "mean this one", package, version,
        f": {said}" if said else "")


def _remove_stale_downloads(directory: Path, max_age: float = 24 * 3600) -> None:
    """Scratch directories of downloads a kill interrupted (a running download is younger)."""
    for path in directory.glob(".download-*"):
        try:
            if time.time() - path.stat().st_mtime > max_age:
                tempfiles.remove_tree(path, ignore_errors=True)
        except OSError:
            pass


class _DownloadWatch:
    """Bytes pip has downloaded so far, told to `progress` a few times a second.

    pip writes a download into a temporary directory before moving it to `-d`: pip runs with
    TMPDIR at `scratch` (a directory of ours), whose files' sizes are the bytes received.
    Without `progress` nothing is watched and pip's environment is left as it is.
    """

    def __init__(self, scratch: Path, progress: TransferProgress | None) -> None:
        self.scratch = scratch
        self.stopped = threading.Event()
        self.thread = None if progress is None else \
            threading.Thread(target=self._watch, args=(progress,), daemon=True)

    def __enter__(self) -> dict[str, str] | None:
        if self.thread is None:
            return None
        self.scratch.mkdir(parents=True, exist_ok=True)
        self.thread.start()
        return {**os.environ, "TMPDIR": str(self.scratch)}

    def _watch(self, progress: TransferProgress) -> None:
        while not self.stopped.wait(0.2):
            size = 0
            for root, _, names in os.walk(self.scratch):
                for name in names:
                    try:
                        size += os.lstat(os.path.join(root, name)).st_size
                    except OSError:
                        pass  # pip moved or removed it meanwhile
            progress.advance(size, None)

    def __exit__(self, *exc) -> None:
        if self.thread is not None:
            self.stopped.set()
            self.thread.join()


def import_namespace(project_root: Path, upstream: str, kind: str, source: str) -> str:
    """The namespace under which a project's imports of a wheel or directory upstream are
    labelled in the shared store (refs/patchforge/labels/<namespace>/<label>): the upstream's
    name (readable) with a digest of the project's directory, the kind and `source` (a
    directory upstream's absolute path, a wheel's package). Two projects sharing the cache, each
    with an upstream `up` imported under the same label with other files (two venvs'
    site-packages, or two builds of one wheel version), never answer for each other, as
    `giturl.store_namespace` keeps git sources apart."""
    identity = "\0".join((str(Path(project_root).resolve()), kind, source))
    digest = hashlib.sha256(identity.encode("utf-8", "surrogateescape")).hexdigest()
    return f"{upstream}.{digest[:12]}"


def wheel_namespace(project_root: Path, upstream: str, package: str) -> str:
    """import_namespace of a wheel upstream of `package`."""
    return import_namespace(project_root, upstream, "wheel", normalize_dist_name(package))


def dir_namespace(project_root: Path, upstream: str, path: Path) -> str:
    """import_namespace of a directory upstream at `path` (relative to the project): the path
    as configured, made absolute, a symlink in it not followed (re-pointed to the next venv,
    it is still the upstream whose earlier versions the labels name)."""
    return import_namespace(project_root, upstream, "dir",
                            os.path.abspath(Path(project_root) / path))


def wheel_label(wheel: WheelFile, pinned: dict | None) -> str:
    """The label `wheel` is imported and pinned under: its own normalized version
    (WheelFile.version), so that two spellings of one version are one import, one commit; but
    the file upstream.lock pins (`pinned`: that pin's source, same sha256) keeps the pin's
    label, which a lock written by an earlier patchforge spelled otherwise (`01.1`): a target
    of that file is the pin itself, not another import of it."""
    if pinned is not None and pinned.get("sha256") == wheel.sha256 and \
            isinstance(pinned.get("version"), str):
        return pinned["version"]
    return wheel.version


def import_wheel_upstream(store: UpstreamStore, name: str, package: str, version: str,
                          pin_sha256: str | None = None, *, filename: str | None = None,
                          offline: bool = False, namespace: str | None = None,
                          label: str | None = None,
                          pinned: dict | None = None) -> tuple[str, str, WheelFile]:
    """Fetch (or reuse) a wheel of `version` (any spelling PEP 440 takes as equal) and import
    it as upstream `name` (under the project's `namespace` too: `wheel_namespace`), labelled
    `label`: by default `wheel_label` (the wheel's own normalized version, or the label of the
    lock's pin `pinned` of the same file). A lock's pin passes the label it recorded: a lock
    written with another spelling (`01.1`) names the import made under it.

    An earlier import of the same file (same sha256 in its commit message: the commit is made
    from the wheel and its label alone, so any project's is the same) is reused, so a second
    run costs a hash of the wheel, not an import.
    """
    wheel = fetch_wheel(package, version, pin_sha256=pin_sha256, filename=filename,
                        offline=offline, progress=store.progress)
    version = wheel_label(wheel, pinned) if label is None else label
    candidates = [store.import_ref(namespace, version)] if namespace is not None else []
    for previous in candidates + [store.shared_import_ref(name, version)]:
        if previous is None or \
                f"\nsha256: {wheel.sha256}\n".encode() not in store.commit_message(previous):
            continue
        from patchforge.store.imports import archive_layout_left

        # An import by an earlier patchforge that kept NAME-VER.data/purelib at its archive
        # path is made again (the label's ref moves; a lock pinning the old one is refused
        # with the way on, pins.refuse_archive_layout).
        if archive_layout_left(store, previous) is None:
            if namespace is not None and candidates[0] != previous:
                store.label_import(namespace, version, previous)
            return previous, store.tree_id(previous), wheel
    result = store.import_wheel(wheel.path, name, version, sha256=wheel.sha256,
                                namespace=namespace)
    return result.commit, result.tree, wheel


def shared_wheel_imports(store: UpstreamStore, name: str, package: str) -> list[tuple[str, str]]:
    """(label, commit) of the imports of `package`'s wheels as upstream `name` that any project
    of the cache made (the store's shared import refs) and whose very file, by the sha256 the
    import's commit records, is in this machine's wheel cache: the commit a wheel import makes
    depends on that file and its label alone, so each is the one this project's own import of
    that version (`--made-on LABEL`, `status --against`) gives, and a version this project
    never touched is still one of the upstream's. An import whose file the cache lacks, or
    holds as another build under that name, is left out: which file it was cannot be told."""
    from patchforge import names

    found = []
    for label, commit in store.shared_imports(name):
        message = store.commit_message(commit)
        file = re.search(rb"^wheel: (\S+)$", message, re.M)
        digest = re.search(rb"^sha256: ([0-9a-f]{64})$", message, re.M)
        if file is None or digest is None:
            continue
        filename = file.group(1).decode("ascii", "replace")
        try:
            wheel = names.parse_wheel_name(filename)
        except ValueError:
            continue
        path = wheels_dir() / filename
        if not names.same_distribution(wheel.name, package) or not path.is_file():
            continue
        try:
            if wheel_sha256(path) == digest.group(1).decode():
                found.append((label, commit))
        except OSError:
            continue
    return found


def import_dir_upstream(store: UpstreamStore, name: str, path: Path,
                        label: str, *, namespace: str | None = None) -> tuple[str, str]:
    """Import a local directory as upstream `name` labelled `label` (under the project's
    `namespace` too: `dir_namespace`): (commit, tree)."""
    result = store.import_directory(Path(path), name, label, namespace=namespace)
    return result.commit, result.tree


def _shorter_version_list(line: str) -> str:
    """pip's "(from versions: ...)" lists every version the index has (about a hundred for
    vllm): the newest few say what a mistyped version should have been."""
    match = re.search(r"\(from versions: ([^)]*)\)", line)
    if match is None:
        return line
    versions = [v.strip() for v in match.group(1).split(",") if v.strip()]
    if len(versions) <= 8:
        return line
    shown = f"(from versions: {len(versions)} in all, the newest {', '.join(versions[-6:])})"
    return line[:match.start()] + shown + line[match.end():]
