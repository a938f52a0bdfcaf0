"""The store's own git configuration (`store.git/config`), checked before any git process reads it.

Every git command run in the store reads that file, and several git settings name a program git
then runs: a remote's `uploadpack` (run by every fetch, including git's own fetch of a missing
blob in a partial clone), `core.sshCommand`, `credential.helper`, `diff.external`, `gpg.program`,
an `include.path` that brings any of these from elsewhere... The cache is not always the user's
own: a shared cache, a copied one, or one inside a checked-out repository (a CI cache restored
into the workspace). So the store is used only when its configuration holds nothing but what
patchforge writes there itself: `git init`'s core settings, the few store settings of
UpstreamStore.open, and per upstream namespace the remote _configure_remote writes, with these
very values (the upload-pack command above all). Anything else is refused, named with its line,
before git reads the file.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

from patchforge.errors import StoreDamaged
from patchforge.store.git import run_git
from patchforge.store.giturl import check_git_url, local_path

# What a local upstream's remote runs as its upload-pack (gitstore._configure_remote writes it).
LOCAL_UPLOAD_PACK = ("git -c uploadpack.allowFilter=true "
                     "-c uploadpack.allowAnySHA1InWant=true upload-pack")

# Settings outside a remote, whatever their value (none of them names a program): `git init`'s
# (on some systems ignorecase, precomposeunicode, symlinks too), the store's own, and the
# extensions a newer git may record (the object format, the ref storage).
_PLAIN_KEYS = frozenset({
    "core.repositoryformatversion", "core.filemode", "core.bare", "core.logallrefupdates",
    "core.ignorecase", "core.precomposeunicode", "core.symlinks",
    "gc.auto", "fetch.writecommitgraph", "uploadpack.allowfilter",
    "extensions.objectformat", "extensions.refstorage",
})

# A namespace of the store: an upstream's name, `.` and a digest (or the name alone).
_NAMESPACE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")

# The lines `git config` writes: a section header, or a tab, a key, " = " and a value that
# needs no quoting. Any other form (quotes, escapes, comments, a continuation) is read by git.
_SECTION_LINE = re.compile(r'\[([A-Za-z0-9.-]+)(?: "([^"\\]*)")?\]')
_ENTRY_LINE = re.compile(r"\t([A-Za-z][A-Za-z0-9-]*) = ([^\s\"\\;#](?:[^\"\\;#]*[^\s\"\\;#])?)")


def check_store_config(git_dir: Path) -> None:
    """StoreDamaged, naming the setting (and its line when known), unless the store at
    `git_dir` has only the configuration patchforge writes; nothing is run to find out (the
    file is read here, or by `git config --file`, which runs nothing)."""
    path = git_dir / "config"
    # A `commondir` file makes git read another directory's configuration (and refs).
    if os.path.lexists(git_dir / "commondir"):
        raise _refused(str(path), f"{git_dir / 'commondir'} exists: git would read another "
                             "repository's configuration instead of the store's")
    try:
        text = path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        return  # a store being made: git says what is wrong, if anything
    except (OSError, UnicodeDecodeError):
        text = None
    entries = _parse(text) if text is not None else None
    if entries is None:
        entries = _ask_git(git_dir, path)
    for key, value, line in entries:
        problem = _problem(key, value)
        if problem:
            where = f"{path}:{line}" if line else str(path)
            raise _refused(where, f"`{key} = {value}` {problem}")


def store_remotes(git_dir: Path) -> tuple[list[str], dict[str, list[str]]]:
    """The store's promisor remotes, in the file's order (the order git asks them in), and
    each remote's URLs: read from the file, with no git process (git is asked only of a file
    not in the form `git config` writes)."""
    entries = _entries(git_dir)
    promisors: list[str] = []
    urls: dict[str, list[str]] = {}
    for key, value, _ in entries:
        name, _, field = key.removeprefix("remote.").rpartition(".")
        if not key.startswith("remote.") or not name:
            continue
        if field == "promisor" and value.lower() in ("true", "1", "yes", "on"):
            promisors.append(name)
        elif field == "url":
            urls.setdefault(name, []).append(value)
    return promisors, urls


def _entries(git_dir: Path) -> list[tuple[str, str, int]]:
    """(key, value, line) of each setting of the store's configuration: read from the file,
    git asked only of a file not in the form `git config` writes; none for no file."""
    path = git_dir / "config"
    try:
        text = path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        return []
    except (OSError, UnicodeDecodeError):
        text = None
    entries = _parse(text) if text is not None else None
    return _ask_git(git_dir, path) if entries is None else entries


def remotes_gone(git_dir: Path) -> list[str]:
    """The store's remotes whose every URL is a path on this machine that no longer exists (a
    deleted project's or test's upstream): no fetch from them can answer, and git's own fetch
    of a missing object asked each of them in turn. Read from the file, no git process; the
    remote `extensions.partialClone` names (an older git's) is left alone."""
    urls: dict[str, list[str]] = {}
    kept = set()
    for key, value, _ in _entries(git_dir):
        name, _, field = key.removeprefix("remote.").rpartition(".")
        if key.startswith("remote.") and name and field == "url":
            urls.setdefault(name, []).append(value)
        elif key == "extensions.partialclone":
            kept.add(value)
    gone = []
    for name in urls.keys() - kept:
        paths = [local_path(url) for url in urls.get(name, [])]
        if paths and all(path is not None and not os.path.lexists(path) for path in paths):
            gone.append(name)
    return sorted(gone)


def without_remotes(text: str, names: set[str]) -> str | None:
    """The configuration `text` without the sections `[remote "NAME"]` of `names`; None when
    the text is not in the form `git config` writes (git is asked to remove them then)."""
    if _parse(text) is None:
        return None
    kept: list[str] = []
    dropping = False
    for line in text.split("\n"):
        header = _SECTION_LINE.fullmatch(line)
        if header:
            section, sub = header.groups()
            dropping = section.lower() == "remote" and sub in names
        if not dropping:
            kept.append(line)
    return "\n".join(kept)


def _parse(text: str) -> list[tuple[str, str, int]] | None:
    """(key, value, line) of each setting, when every line has the form `git config` writes;
    None otherwise (git reads it then)."""
    entries = []
    section = None
    for number, line in enumerate(text.split("\n"), 1):
        if not line:
            continue
        header = _SECTION_LINE.fullmatch(line)
        if header:
            name, sub = header.groups()
            if "." in name:
                return None  # the old `[section.sub]` form
            section = name.lower() + (f".{sub}" if sub is not None else "")
            continue
        entry = _ENTRY_LINE.fullmatch(line)
        if entry is None or section is None:
            return None
        entries.append((f"{section}.{entry.group(1).lower()}", entry.group(2), number))
    return entries


def _ask_git(git_dir: Path, path: Path) -> list[tuple[str, str, int]]:
    proc = run_git("config", "--file", str(path), "--no-includes", "--list", "-z",
                   cwd=git_dir, ok=None)
    if proc.returncode != 0:
        # Unreadable (a disk error, a killed write): the store's damage, said as any other.
        said = proc.stderr.decode("utf-8", "replace").strip().splitlines() or ["unreadable"]
        line = re.sub(r"^(?:error|fatal): ", "", said[0]).replace(" ./config", f" {path}")
        raise StoreDamaged(f"the cache's git store {git_dir} is damaged: {line}",
                           hint=f"nothing in the project is wrong and no pin needs to change: "
                                f"move {git_dir} aside (or remove it), and the next command "
                                f"fetches and imports the pinned revisions again")
    entries = []
    for item in proc.stdout.split(b"\0"):
        if item:
            key, _, value = item.decode("utf-8", "replace").partition("\n")
            # git prints the section and key in lower case, a subsection as written.
            entries.append((key, value, 0))
    return entries


def _problem(key: str, value: str) -> str | None:
    """Why `key = value` is not one of the store's settings; None when it is."""
    if key.lower() in _PLAIN_KEYS:
        return None
    if key.lower() == "extensions.partialclone":
        # What an older git's filtered fetch records: the name of a remote, checked as such.
        return None if _NAMESPACE.fullmatch(value) and ".." not in value else \
            "is not a remote patchforge writes there"
    section, _, rest = key.partition(".")
    if section.lower() != "remote" or "." not in rest:
        return "is not a setting patchforge writes there"
    name, _, field = rest.rpartition(".")
    field = field.lower()
    if not _NAMESPACE.fullmatch(name) or ".." in name:
        return "is not a remote patchforge writes there"
    if field == "url":
        try:
            check_git_url(value)
        except ValueError as exc:
            return f"is not an address patchforge writes there ({exc})"
        return None
    wanted = {
        "fetch": f"+refs/heads/*:refs/patchforge/remotes/{name}/heads/*",
        "uploadpack": LOCAL_UPLOAD_PACK,
        "partialclonefilter": "blob:none",
    }.get(field)
    if field == "promisor" and value.lower() in ("true", "false", "yes", "no", "on", "off",
                                                 "1", "0"):
        return None
    if wanted is not None and value == wanted:
        return None
    if field == "uploadpack":
        return "is not the upload-pack command patchforge writes there (git runs it)"
    return "is not a setting patchforge writes there"


def _refused(where: str, what: str) -> StoreDamaged:
    return StoreDamaged(
        f"{where}: {what}; patchforge uses its store only with the git configuration it "
        "writes there itself (a setting of it can make git run a command): nothing was run",
        hint="remove that setting, or the whole cache (patchforge fetches again), or point "
             "PATCHFORGE_CACHE at a cache of your own")
