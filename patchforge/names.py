"""What a name or value from the configuration, the lock or the command line may be.

Every name that later becomes a path, a series-file line, a YAML key, a command argument or a
requirement handed to pip is checked here, once, with one rule per kind of name, so a reader finds
in one place what each may hold. The checks raise `ValueError` with a short reason; callers turn it
into an error that names their file and line (or option).

packaging is imported here for distribution names, versions and wheel file names.
"""
from __future__ import annotations

import re

from patchforge.model.record import record
from patchforge.patterns import on_first_use

# Upstream and profile names become directories (`series/<upstream>/`, `overlays/<profile>/`),
# refs (`refs/patchforge/...`) and YAML keys: letters, digits, `.`, `_`, `-`, starting with a
# letter or digit (so never `.`, `..`, `-x` or empty).
_SIMPLE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
# Patch names: one line of a quilt series file each, and a file name under series/<upstream>/.
# quilt reads `#` as a comment and whitespace as the end of the name (or an option after it);
# `/` and `\` would make a directory; quotes and `$` break the shell lines users copy.
# Characters that change how a name reads without being seen (zero-width, bidirectional
# overrides and isolates: `fix\u202etxt.patch` shows as another name in a terminal or a review).
# Sets, not character classes: `re` compiles a class past U+00FF with more than two runs into
# a map of 65,536 characters, about 0.5 ms each at the start of every command that loads this
# module (docs/performance.md, "Character sets past U+00FF as sets").
INVISIBLE = frozenset(map(chr, [*range(0x200B, 0x2010), *range(0x202A, 0x202F),
                                *range(0x2060, 0x206A), 0xFEFF]))
_PATCH_NAME_BAD = on_first_use(r"[\s#/\\'\"`$\x00-\x1f\x7f\x85]")
_PATCH_NAME_BAD_WIDE = INVISIBLE | {"\u2028", "\u2029"}


def check_simple_name(value: object, what: str) -> str:
    """An upstream or profile name: `[A-Za-z0-9][A-Za-z0-9._-]*`, at most 100 characters."""
    if not isinstance(value, str) or not _SIMPLE_NAME.fullmatch(value) or ".." in value:
        raise ValueError(f"{what} {value!r} is not a valid name (letters, digits, '.', '_', '-'; "
                         "starting with a letter or digit)")
    return value


# The files patchforge writes beside the directories named after upstreams and profiles
# (overlays/SHA256SUMS beside overlays/<upstream>/, overlays/<profile>/compose.yaml beside
# overlays/<profile>/<upstream>/, series/PATCHES.md beside series/<upstream>/): a name spelled
# like one would be a directory where the file goes. Compared without case, as a checkout on a
# case-insensitive file system (macOS, Windows) would meet them.
RESERVED_DIRECTORY_NAMES = {name.lower(): where for name, where in (
    ("SHA256SUMS", "overlays/SHA256SUMS"), ("manifest.json", "overlays/manifest.json"),
    ("compose.yaml", "overlays/compose.yaml"), ("Dockerfile", "overlays/Dockerfile"),
    ("README.md", "overlays/README.md"), ("artifacts", "overlays/artifacts/"),
    ("PATCHES.md", "series/PATCHES.md"), ("history.jsonl", "series/history.jsonl"))}


# The directory of a series that keeps its landed fixes: `delete upstreamed/NAME` (and
# `UPSTREAM/upstreamed/NAME`) names one of them, so no new upstream may have this name (an
# upstream `upstreamed`'s patch NAME is also `upstreamed/NAME`, as `list` prints it). One that
# has it already is read (refusing the project would stop every command on data patchforge
# once wrote): lint says to rename it, and `delete upstreamed/NAME` is refused as ambiguous.
KEPT_LANDINGS = "upstreamed"


def kept_landings_name_said(value: str) -> str:
    """Why no upstream should be named KEPT_LANDINGS (for `upstream add` and lint)."""
    return (f"upstream {value!r} is named like the directory where each series keeps the "
            f"fixes that landed (series/UPSTREAM/{KEPT_LANDINGS}/): `delete "
            f"{KEPT_LANDINGS}/NAME` names such a fix, and would not tell it from this "
            "upstream's patch NAME")


def check_directory_name(value: object, what: str) -> str:
    """An upstream or profile name (check_simple_name) that can also be a directory beside the
    files patchforge writes, and a component of a git ref (an upstream's imports and fetches
    are kept under refs/patchforge/.../<name>/): not one of RESERVED_DIRECTORY_NAMES, not
    ending in `.` or `.lock`."""
    check_simple_name(value, what)
    assert isinstance(value, str)
    where = RESERVED_DIRECTORY_NAMES.get(value.lower())
    if where is not None:
        raise ValueError(f"{what} {value!r} is named like {where}, a file patchforge writes "
                         "beside the directory of that name; choose another name")
    if value.endswith((".", ".lock")):
        raise ValueError(f"{what} {value!r} cannot end in '.' or '.lock' (git refuses such a "
                         "name in the refs patchforge keeps for it); choose another name")
    return value


# OWNER/NAME of a repository on the forge, as the API's paths take it (`/repos/OWNER/NAME/...`).
_FORGE_REPO = on_first_use(r"[A-Za-z0-9][\w.-]*/[\w.-]+")


def is_forge_repo(value: object) -> bool:
    """Whether `value` is OWNER/NAME of a forge repository: one `/`, letters, digits, `_`, `.`
    and `-` (the owner starting with a letter or digit), and neither side `.` or `..`, which
    no forge allows and a URL's path reads as a step: `/repos/o/../pulls/1` is sent as
    `/repos/pulls/1`, another endpoint, with the token."""
    return isinstance(value, str) and _FORGE_REPO.fullmatch(value) is not None \
        and value.split("/")[1] not in (".", "..")


def check_patch_name(value: object) -> str:
    """A patch name a series file and a directory can hold: no whitespace, `#`, `/`, quotes or
    control characters; not starting with `.` or `-`."""
    if not isinstance(value, str) or not value or _PATCH_NAME_BAD.search(value) \
            or not _PATCH_NAME_BAD_WIDE.isdisjoint(value) or value.startswith((".", "-")) \
            or len(value.encode("utf-8", "surrogateescape")) > 200 or not _is_utf8(value):
        raise ValueError(f"patch name {value!r} cannot be written to a series file (UTF-8, no "
                         "whitespace, '#', '/', '\\', quotes, '$', control characters or "
                         "invisible ones (zero-width, bidirectional); not starting with '.' or "
                         "'-'; at most 200 bytes)")
    return value


def _is_utf8(value: str) -> bool:
    """Whether `value` is text, not bytes read with surrogateescape that are not UTF-8 (a
    Latin-1 file name): manifest.json and PATCHES.md hold patch names as UTF-8."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def shell_quoted_bytes(path: str) -> str | None:
    """A path that is not UTF-8 (read with surrogateescape) in the $'...' quotes bash, zsh and
    ksh read back byte for byte (`$'pkg/f\\377b.py'`), each byte but printable ASCII as three
    octal digits; None for a UTF-8 path. git's quoting (`"pkg/f\\377b.py"`) a shell reads as
    the four characters `\\377`: pasted, it names no file; printed as it is, the byte shows as
    a replacement character."""
    if _is_utf8(path):
        return None
    return "$'" + "".join("\\" + chr(byte) if byte in b"'\\" else chr(byte)
                          if 0x20 <= byte < 0x7f else f"\\{byte:03o}"
                          for byte in path.encode("utf-8", "surrogateescape")) + "'"


# What a Windows checkout cannot write as a file name (git for Windows stops the clone of the
# stack with "invalid path"): these characters, and the device names (CON, NUL, COM1, ...),
# which Windows reserves with any extension (`nul.patch` is the device too). `"` and `\` are
# refused for every name already (_PATCH_NAME_BAD).
_WINDOWS_BAD = on_first_use(r"[:*?<>|]")
WINDOWS_DEVICE = on_first_use(r"(?i)(?:con|prn|aux|nul|com[1-9]|lpt[1-9])(?=\.|$)")


def windows_name_problem(name: str) -> str | None:
    """Why a Windows checkout cannot hold a file of this name, or None."""
    bad = _WINDOWS_BAD.search(name)
    if bad:
        return f"{bad.group()!r} cannot be in a file name on Windows"
    device = WINDOWS_DEVICE.match(name)
    if device:
        return f"{device.group()!r} is a device name Windows reserves (with any extension)"
    return None


def windows_safe_name(name: str) -> str:
    """`name` made one a Windows checkout can write: each character it refuses becomes `-`,
    and a device name gets a `_` after it (`con` -> `con_`, `nul.x` -> `nul_.x`), as an import
    names a commit whose subject is one."""
    name = _WINDOWS_BAD.sub("-", name)
    device = WINDOWS_DEVICE.match(name)
    return f"{device.group()}_{name[device.end():]}" if device else name


def check_new_patch_name(value: object) -> str:
    """A name for a patch being made (new, rename, import): check_patch_name, a file name
    every checkout of the stack can write, and one its pull request's branch can carry
    (`pr` pushes patchforge/<name>). A series already holding such a name stays readable
    (check_patch_name); `lint` warns about a name Windows cannot write, and `pr --push`
    refuses one no branch can carry, naming `rename`."""
    check_patch_name(value)
    assert isinstance(value, str)
    problem = windows_name_problem(value)
    if problem is not None:
        raise ValueError(f"patch name {value!r} cannot be checked out on Windows: {problem} "
                         "(git for Windows stops the clone of the stack); choose another name")
    stem = value.removesuffix(".patch")
    problem = branch_name_problem(stem)
    if problem is not None:
        raise ValueError(f"patch name {value!r} cannot name its pull request's branch "
                         f"({PR_BRANCH_PREFIX}{stem}): {problem}; choose another name, such as "
                         f"{branch_safe_name(stem)!r}")
    return value


# `pr` pushes a fix's pull request as branch patchforge/<name> (pr.draft.BRANCH_PREFIX).
PR_BRANCH_PREFIX = "patchforge/"
# What git refuses in a ref name (git check-ref-format) that a patch name may otherwise hold:
# `..`, `@{`, `~`, `^`, `:`, `?`, `*`, `[`, `\`, a space or a control character.
_BRANCH_BAD = on_first_use(r"\.\.|@\{|[~^:?*\[\\\x00-\x20\x7f]")


def branch_name_problem(stem: str) -> str | None:
    """Why branch patchforge/<stem> is no git branch name (git check-ref-format), or None. A
    commit subject ending in a lock file's name (`Pin torch in uv.lock`) made such a name."""
    bad = _BRANCH_BAD.search(stem)
    if bad:
        return f"git refuses {bad.group()!r} in a branch name"
    if stem.endswith(".lock"):
        return "git refuses a branch name ending in '.lock'"
    if stem.endswith("."):
        return "git refuses a branch name ending in '.'"
    return None


def branch_safe_name(stem: str) -> str:
    """`stem` made a name a branch can carry: each character git refuses in a ref is `-`, a
    run of dots one dot, and a `.lock` or `.` at the end written `-lock` or dropped."""
    safe = re.sub(r"\.{2,}", ".", re.sub(r"@\{|[~^:?*\[\\\x00-\x20\x7f]", "-", stem))
    if safe.endswith(".lock"):
        safe = safe[:-len(".lock")] + "-lock"
    return safe.rstrip(".") or "patch"


def file_name_key(name: str) -> str:
    """What a file name comes to where one file holds every spelling of it: case folded and
    Unicode decomposed (NFD). macOS and Windows keep one file for `Fix.patch` and `fix.patch`,
    and macOS one for `café.patch` written as one character or as `e` and a combining accent,
    which look the same everywhere."""
    import unicodedata

    return unicodedata.normalize("NFD", unicodedata.normalize("NFD", name).casefold())


def check_distribution(name: object) -> str:
    """A distribution name as PEP 508 defines it (never a URL, an option or a requirement)."""
    from packaging.utils import InvalidName, canonicalize_name

    if not isinstance(name, str):
        raise ValueError(f"package name {name!r} is not a string")
    try:
        canonicalize_name(name, validate=True)
    except InvalidName:
        raise ValueError(f"{name!r} is not a valid Python distribution name") from None
    return name


def check_version(version: object) -> str:
    """A PEP 440 version, returned in its normalized form (`v1.0` -> `1.0`)."""
    from packaging.version import Version

    if not isinstance(version, str):
        raise ValueError(f"version {version!r} is not a string")
    try:
        return str(Version(version))
    except ValueError:  # InvalidVersion, or a number longer than int() takes
        raise ValueError(f"{version[:60]!r} is not a valid PEP 440 version") from None


@record(frozen=True)
class WheelName:
    """A wheel file name, parsed: the distribution, version and the tags it is built for."""

    filename: str
    name: str  # canonical distribution name
    version: str  # normalized
    tags: tuple[tuple[str, str, str], ...]  # (interpreter, abi, platform), sorted


def parse_wheel_name(filename: object) -> WheelName:
    """A wheel file name (`{dist}-{version}(-{build})?-{python}-{abi}-{platform}.whl`): never a
    path, nothing but the characters wheel names use."""
    from packaging.utils import InvalidWheelFilename, parse_wheel_filename

    if not isinstance(filename, str) or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._+!-]*\.whl",
                                                         filename):
        raise ValueError(f"{filename!r} is not a wheel file name")
    try:
        name, version, _build, tags = parse_wheel_filename(filename)
    except InvalidWheelFilename as exc:
        raise ValueError(f"{filename!r} is not a wheel file name ({exc})") from None
    except ValueError:  # a version number longer than int() takes
        raise ValueError(f"{filename[:60]!r}... is not a wheel file name (a number in its "
                         "version is too long)") from None
    return WheelName(filename, str(name), str(version),
                     tuple(sorted((t.interpreter, t.abi, t.platform) for t in tags)))


def same_distribution(a: str, b: str) -> bool:
    from packaging.utils import canonicalize_name

    return canonicalize_name(a) == canonicalize_name(b)


def label_is_commit(label: str, commit: str) -> bool:
    """Whether a revision's label is its own commit id, whole or abbreviated (a pin or target
    named by commit): said beside the commit's short id, it would say the commit twice."""
    lowered = label.lower()
    return len(lowered) >= 7 and commit.startswith(lowered) and \
        all(c in "0123456789abcdef" for c in lowered)
