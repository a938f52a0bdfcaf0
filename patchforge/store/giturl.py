"""Git URLs from the configuration, the lock and the command line: what they are, whether they
are safe to hand to git, and the identity of the source they name.

One function decides whether a URL is a local path or a remote (`is_local_git_url`, git's own
rule), one refuses what git would read as an option or a command (`check_git_url`), and one gives
the normalized identity the store keys a source by (`source_identity`), so that two projects on
one machine whose upstreams share a name but not a source never see each other's refs.
"""
from __future__ import annotations

import re
from pathlib import Path

# The transports git may use for anything patchforge starts (GIT_ALLOW_PROTOCOL): never `ext::`
# (runs a command), `fd::` or another remote helper.
ALLOWED_PROTOCOLS = "file:git:http:https:ssh"
_SCHEMES = {"file", "git", "http", "https", "ssh", "git+ssh", "ssh+git"}
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
# `<transport>::<address>`: git hands the address to the program git-remote-<transport>.
_HELPER = re.compile(r"^[A-Za-z0-9][A-Za-z0-9+.-]*::")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def is_local_git_url(url: str) -> bool:
    """Whether git reads `url` as a path on this machine: `file://...`, or no `scheme://` and no
    colon before the first slash (git's rule: `host:repo.git` and `user@host:repo` are ssh,
    `./host:repo` is a path)."""
    match = _SCHEME.match(url)
    if match:
        return match.group(1).lower() == "file"
    colon, slash = url.find(":"), url.find("/")
    return colon < 0 or (0 <= slash < colon)


def local_path(url: str) -> Path | None:
    """The path a local URL names (`file://` taken off), None for a remote one."""
    if not is_local_git_url(url):
        return None
    match = _SCHEME.match(url)
    return Path(url[match.end():] if match else url)


def is_plain_path(url: str) -> bool:
    """A local path written as a path (not `file://`): the one kind that may be relative."""
    return _SCHEME.match(url) is None and is_local_git_url(url)


def check_git_url(url: object, what: str = "git URL") -> str:
    """`url` when git can only read it as a repository address; ValueError otherwise.

    Refused: an empty value, control characters (a newline would end a config value or a line of
    git's protocol), a leading `-` (an option: `--upload-pack=...`), remote helpers
    (`ext::sh -c ...`, `fd::`), schemes other than file/git/http/https/ssh, and a host that
    begins with `-` (an ssh option)."""
    if not isinstance(url, str) or not url.strip():
        raise ValueError(f"{what} must be a non-empty string")
    if _CONTROL.search(url):
        raise ValueError(f"{what} {url!r} contains control characters")
    if url.startswith("-"):
        raise ValueError(f"{what} {url!r} begins with '-' (git would read it as an option)")
    match = _SCHEME.match(url)
    if match is None and _HELPER.match(url):
        raise ValueError(f"{what} {url!r} names a git remote helper ('transport::'), which "
                         "can run commands")
    if match is not None:
        if match.group(1).lower() not in _SCHEMES:
            raise ValueError(f"{what} {url!r}: scheme {match.group(1)!r} is not one of "
                             f"{', '.join(sorted(_SCHEMES))}")
        host = url[match.end():].split("/", 1)[0].rpartition("@")[2]
        if host.startswith("-"):
            raise ValueError(f"{what} {url!r}: a host cannot begin with '-'")
    elif not is_local_git_url(url):
        host = url.split(":", 1)[0].rpartition("@")[2]
        if not host or host.startswith("-"):
            raise ValueError(f"{what} {url!r}: not a valid host:path address")
    return url


def source_identity(url: str) -> str:
    """The normalized source a URL names: a local repository by its resolved path, a remote by
    host and path (scheme, user, password, a trailing `/` or `.git` and the host's case do not
    change the source)."""
    match = _SCHEME.match(url)
    if is_local_git_url(url):
        path = url[match.end():] if match else url
        return "file:" + str(Path(path).resolve())
    if match:
        rest = url[match.end():]
        host, _, path = rest.partition("/")
        host = host.rpartition("@")[2]
    else:
        host, _, path = url.partition(":")
        host = host.rpartition("@")[2]
    path = path.strip("/")
    if path.endswith(".git"):
        path = path[:-len(".git")]
    return f"{host.lower()}/{path}"


def shallow_local_repository(url: str) -> Path | None:
    """The repository `url` names when it is on this machine and shallow (a `git clone
    --depth` checkout: its history is cut, a `shallow` file in its git directory lists where);
    None otherwise. Read from the files, no git process: a work tree's `.git` directory, a
    `.git` file's `gitdir:` (a linked work tree, whose `commondir` holds the shallow file) or a
    bare repository."""
    found = _local_git_dir(url)
    if found is None:
        return None
    top, git_dir = found
    try:
        shallow = (git_dir / "shallow").stat().st_size > 0
    except (OSError, ValueError):
        return None  # not a repository git reads as shallow: its own fetch says what it is
    return top if shallow else None


def partial_local_repository(url: str) -> Path | None:
    """The repository `url` names when it is on this machine and a partial clone (`git clone
    --filter=blob:none`: a `.promisor` pack marks objects it may lack and fetch later); None
    otherwise. Its upload-pack never fetches a missing object for another repository (git's
    lazy fetch is off there), so what it lacks cannot be had through it. Read from the files."""
    found = _local_git_dir(url)
    if found is None:
        return None
    top, git_dir = found
    try:
        partial = any(p.suffix == ".promisor" for p in (git_dir / "objects" / "pack").iterdir())
    except (OSError, ValueError):
        return None
    return top if partial else None


def _local_git_dir(url: str) -> tuple[Path, Path] | None:
    """(the path `url` names, its git directory holding the objects) for a repository on this
    machine: a work tree's `.git` directory, a `.git` file's `gitdir:` (a linked work tree,
    whose `commondir` holds the objects and the shallow file) or a bare repository."""
    if not is_local_git_url(url):
        return None
    match = _SCHEME.match(url)
    top = Path(url[match.end():] if match else url)
    git_dir = top / ".git"
    try:
        if git_dir.is_file():
            link = git_dir.read_text("utf-8", "surrogateescape").strip()
            git_dir = top / link.removeprefix("gitdir:").strip()
        elif not git_dir.is_dir():
            git_dir = top
        common = git_dir / "commondir"
        if common.is_file():
            git_dir = git_dir / common.read_text("utf-8", "surrogateescape").strip()
    except (OSError, ValueError):
        return None
    return top, git_dir


def store_namespace(upstream: str, url: str) -> str:
    """The name a git upstream's refs and remote have in the shared store: the upstream's name
    (readable) with a digest of its source identity (two `vllm`s from different sources are two
    namespaces)."""
    import hashlib  # here: every git process's set-up imports this module, few need a digest

    digest = hashlib.sha256(source_identity(url).encode("utf-8", "surrogateescape")).hexdigest()
    return f"{upstream}.{digest[:12]}"


def redact(url: str) -> str:
    """A URL without any user:password part (a token pasted into a remote URL stays secret)."""
    if "@" not in url:  # nothing to take out; the pattern compiles only for a URL with one
        return url
    return re.sub(r"^([a-z][a-z0-9+.-]*://)[^/@]*@", r"\1", url, flags=re.I)
