"""Reading the user's configuration: `[tool.patchforge]` in pyproject.toml, or patchforge.toml.

The configuration is the intent and belongs to the user: patchforge reads it with tomllib and only
ever appends to it (`init`, `upstream add`), never reformats what is there. A configuration of
tables and plain strings, as those two write it, is read by `plain_toml` (the document tomllib
gives, without tomllib's import); any other text, and every error, is tomllib's. tomllib and
the configuration model are imported when a configuration is read: a command that needs none
(a rebase's `--skip` or `--continue`, which go on from the journal) does not pay for them.
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING

from patchforge.errors import ConfigError, PatchforgeError, StoreError
from patchforge.patterns import on_first_use
from patchforge.store.giturl import check_git_url

if TYPE_CHECKING:
    from patchforge.model.config import Config, UpstreamConfig

PYPROJECT = "pyproject.toml"
STANDALONE = "patchforge.toml"


def _line_of(text: str, needle: str) -> int | None:
    for number, line in enumerate(text.splitlines(), 1):
        if needle in line:
            return number
    return None


def toml_error_line(exc: Exception) -> int | None:
    """The line of a tomllib error: `lineno` from Python 3.14, else "(at line N, column M)"."""
    line = getattr(exc, "lineno", None)
    if line is None:
        match = re.search(r"\(at line (\d+), column \d+\)", str(exc))
        line = int(match.group(1)) if match else None
    if line is None and isinstance(exc, UnicodeDecodeError):
        line = exc.object[:exc.start].count(b"\n") + 1
    return line


def find_config_table(path: Path) -> tuple[dict, str] | None:
    """The patchforge table of `path` and its dotted prefix, or None if the file has none."""
    data = path.read_bytes()
    try:
        doc = plain_toml(data.decode("utf-8"))
    except UnicodeDecodeError:
        doc = None  # said by tomllib's path below, as for any text it refuses
    if doc is None:
        doc = _tomllib_loads(path, data)
    if path.name == STANDALONE:
        return doc, ""
    # `tool = 5` or `[[tool]]` (an array of tables) is valid TOML that holds no patchforge table.
    tool = doc.get("tool")
    table = tool.get("patchforge") if isinstance(tool, dict) else None
    if table is None:
        return None
    return table, "tool.patchforge."


def _tomllib_loads(path: Path, data: bytes) -> dict:
    """The document tomllib reads from `data` (the file `path`'s bytes); ConfigError naming the
    file and line where it refuses them."""
    import tomllib

    try:
        return tomllib.loads(data.decode("utf-8"))
    except RecursionError:
        # `x = [[[[...` a few thousand deep (10 KB) exhausts the parser's recursion.
        raise ConfigError("not valid TOML: nested deeper than patchforge reads",
                          path=str(path)) from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        from patchforge.apply.diffparse import conflict_marker_line
        marker = conflict_marker_line(data)
        if marker is not None:
            raise ConfigError("a merge conflict marker: a merge of this file was left "
                              "unresolved", path=str(path), line=marker,
                              hint="resolve it: keep what both sides meant, and remove the "
                                   "marker lines") from None
        # A byte-order mark (an editor on Windows) is invisible in the file: say it is there.
        bom = data.startswith(b"\xef\xbb\xbf")
        raise ConfigError(f"not valid TOML: {exc}" + (
            "; the file begins with a byte-order mark (U+FEFF), which TOML does not allow"
            if bom else ""), path=str(path), line=toml_error_line(exc),
            hint="save it as UTF-8 without a byte-order mark" if bom else None) from None
    except ValueError:
        # (After TOMLDecodeError, a ValueError too.) A number longer than Python reads.
        from patchforge.fsutil import LONG_NUMBER, long_number_line
        raise ConfigError(f"not valid TOML: {LONG_NUMBER}", path=str(path),
                          line=long_number_line(data.decode("utf-8"))) from None


# A configuration as `init` and `upstream add` write it is a few tables of strings: read by
# plain_toml, line by line, it needs no tomllib, whose import (its parser's tables and patterns,
# and the `datetime` and `string` modules it loads, which nothing else a rebase or a status runs
# loads) was about 5% of a clean 30-patch rebase's instructions, at every command that reads a
# configuration. Anything outside the few forms below is left to tomllib, errors included.
# TOML's control characters (all of U+0000-U+001F but tab and line feed, and U+007F) are
# refused by tomllib in comments and strings alike; a carriage return too (CRLF lines are left
# to tomllib).
_PLAIN_REFUSED = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
_PLAIN_HEADER = re.compile(r"[ \t]*\[([A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*)\][ \t]*(?:#.*)?")
# `key = value`: a bare key; a basic string without escapes, a literal string, true or false.
_PLAIN_PAIR = re.compile(r"""[ \t]*([A-Za-z0-9_-]+)[ \t]*=[ \t]*"""
                         r"""(?:"([^"\\]*)"|'([^']*)'|(true|false))[ \t]*(?:#.*)?""")
_PLAIN_NOTHING = re.compile(r"[ \t]*(?:#.*)?")


def plain_toml(text: str) -> dict | None:
    """The document tomllib.loads(text) gives, for a text made only of blank lines, comments,
    table headers of bare keys (`[upstreams.vllm]`) and `bare-key = value` lines whose value is
    a basic string without escapes, a literal string, true or false; None for any other text
    (read by tomllib then). Within those forms a text tomllib refuses (a key or table given
    twice, a table inside a value) is None too: tomllib says why."""
    if _PLAIN_REFUSED.search(text):
        return None
    root: dict = {}
    declared: set[str] = set()  # the table headers met, as written
    table = root
    for line in text.split("\n"):
        pair = _PLAIN_PAIR.fullmatch(line)
        if pair is not None:
            key, basic, literal, boolean = pair.groups()
            if key in table:
                return None
            table[key] = basic if basic is not None else literal if literal is not None \
                else boolean == "true"
            continue
        header = _PLAIN_HEADER.fullmatch(line)
        if header is not None:
            if header.group(1) in declared:
                return None
            declared.add(header.group(1))
            table = root
            for key in header.group(1).split("."):
                # A table met on the way was declared, or made by a deeper header (TOML lets
                # `[a]` come after `[a.b]`, once); a value there is no table.
                table = table.setdefault(key, {})
                if not isinstance(table, dict):
                    return None
            continue
        if _PLAIN_NOTHING.fullmatch(line) is None:
            return None
    return root


def validate_config_table(table: dict, text: str, source: str, prefix: str) -> None:
    """The table against the published schema (formats/schemas/config.schema.json): types,
    names, unknown keys; ConfigError names the key and its line.

    jsonschema costs a third of a second to import, so a configuration that passed once is
    remembered by the digest of its text and the schema (a marker file in the cache): every
    later command on the same text skips the import."""
    import hashlib

    from patchforge.formats.schemas import VALIDATION_RULES, schema_bytes

    digest = hashlib.sha256(schema_bytes("config") + b"\0" + VALIDATION_RULES + b"\0"
                            + prefix.encode() + b"\0"
                            + text.encode("utf-8", "surrogateescape")).hexdigest()
    from patchforge.store.gitstore import cache_dir

    marker = cache_dir() / "validated-config" / digest
    if marker.exists():
        return
    from patchforge.formats.schemas import dotted, first_violation

    found = first_violation(table, "config")
    if found is not None:
        where, message = found.where, found.message
        if len(where) == 2 and where[0] in ("upstreams", "profiles"):
            message = directory_name_problem(where[1], where[0]) or message
        key = dotted(where) if where else ""
        raise ConfigError(f"{prefix}{key}: {message}" if key else message, path=source,
                          line=toml_key_line(text, prefix,
                                             [p for p in where if isinstance(p, str)]))
    try:
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.touch()
    except OSError:
        pass  # a read-only cache only costs the next command the validation again


def directory_name_problem(name: object, section: str) -> str | None:
    """Why `name` cannot be an upstream (`section` "upstreams") or profile ("profiles") name,
    or None: names.check_directory_name, the rule config.schema.json's `directory-name` states
    too (tests/test_config.py feeds both the same names)."""
    from patchforge.names import check_directory_name

    try:
        check_directory_name(name, section.rstrip("s"))
    except ValueError as exc:
        return str(exc)
    return None


def case_twin_problem(name: str, section: str, names) -> str | None:
    """Why `name` cannot join `names` (the section's names, `name` among them or not), or
    None: a name that differs from an earlier one only in case is the same directory on a
    case-insensitive file system (macOS, Windows), where two upstreams' series (or two
    profiles' overlays) would be one. JSON Schema cannot state this rule."""
    for other in names:
        if other == name:
            return None  # only a later twin is refused, naming the first
        if other.lower() == name.lower():
            where = "series/" if section == "upstreams" else "overlays/"
            return (f"{section.rstrip('s')} {name!r} differs from {other!r} only in case: "
                    f"one directory ({where}{other}) on macOS or Windows; choose another name")
    return None


# A TOML key part: bare, or a basic ("...") or literal ('...') string.
_KEY_PART = on_first_use(r"""\s*([A-Za-z0-9_-]+|"(?:[^"\\\n]|\\.)*"|'[^'\n]*')\s*""")
_TABLE_HEADER = on_first_use(r"^\s*\[(?!\[)(.*?)\]\s*(?:#.*)?$")


def _dotted_key(text: str) -> list[str] | None:
    """The parts of a dotted TOML key (`tool.patchforge.upstreams."vllm"` -> ["tool",
    "patchforge", "upstreams", "vllm"]): quoted parts unquoted, whitespace around the dots
    allowed; None when `text` is no key."""
    parts: list[str] = []
    position = 0
    while True:
        found = _KEY_PART.match(text, position)
        if found is None:
            return None
        raw = found[1]
        if raw.startswith('"'):
            try:
                parts.append(json.loads(raw))
            except ValueError:
                parts.append(raw[1:-1])
        elif raw.startswith("'"):
            parts.append(raw[1:-1])
        else:
            parts.append(raw)
        position = found.end()
        if position == len(text):
            return parts
        if text[position] != ".":
            return None
        position += 1


def _table_header(line: str) -> list[str] | None:
    """The key of a `[table]` header line (not an `[[array]]`'s), None for any other line."""
    found = _TABLE_HEADER.match(line)
    return _dotted_key(found[1]) if found else None


def upstream_key_line(config_path: str | Path, upstream: str, key: str) -> int | None:
    """The line of `key` in `upstream`'s table of the configuration file (its header when the
    key is not written there), for an error found after the file was read (an install-root
    two upstreams share, a `follow` the remote does not have)."""
    try:
        text = Path(config_path).read_bytes().decode("utf-8", "replace")
    except OSError:
        return None
    prefix = table_prefix(config_path)
    return toml_key_line(text, prefix, ["upstreams", upstream, key])


# `follow` names one branch or tag: git's glob characters in it were taken literally (the
# remote "has no branch or tag 'v*'"), which read as if patterns were meant to work.
_FOLLOW_GLOB = on_first_use(r"[*?\[]")


def install_root_problem(value: str) -> str | None:
    """What is wrong with an install-root beyond the schema's pattern, or None. Two upstreams'
    overlay files meet when their paths in the image do, and that is decided on the paths as
    written: `/opt/x/../up` and `//opt/up` passed as other directories than `/opt/up`, so
    compose mounted two files at one path and one fix was never deployed. Such a path is not
    made plain here either: in the image `/opt/x` may be a symlink, so only the image knows
    where `..` leads."""
    parts = value.split("/")[1:]
    if parts and parts[-1] == "":
        parts = parts[:-1]  # one trailing slash names the same directory
    if "" in parts:
        return f"{value!r} has an empty part (//): write the directory as one plain path"
    if "." in parts or ".." in parts:
        return (f"{value!r} has a '.' or '..' part: write the directory it is in the image "
                "as one plain path")
    # `/opt/site ` (a space pasted with the path): the mounts went to `/opt/site /pkg/m.py`,
    # a directory compose makes in the container, and the image's file stayed unfixed while
    # `overlays` and `status` said all was well.
    spaced = next((part for part in parts if part != part.strip()), None)
    if spaced is not None:
        return (f"{value!r} has a part beginning or ending with a space ({spaced!r}): the "
                "mounts would go to another directory than the image's; write the path "
                "without it")
    return None


def api_url_problem(value: str) -> str | None:
    """What is wrong with a forge.api-url beyond the schema's pattern, or None: a URL no HTTP
    client takes (an unclosed `[` of an IPv6 address, a port past 65535: an internal error of
    every command asking the forge), or one whose query or fragment the API's paths would be
    appended after (`https://H/api?x=1#y` + `/repos/...` asks for `/api?x=1`)."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(value)
        parts.port  # (checked when asked for)
    except ValueError as exc:
        return f"{value!r} is not a URL an HTTP client can ask ({exc})"
    if not parts.hostname:
        return f"{value!r} names no host"
    if "?" in value or "#" in value:
        return (f"{value!r} has a query or a fragment: the API's paths are added at its end, "
                "so it must end with its path")
    return None


def toml_key_line(text: str, prefix: str, where: list[str]) -> int | None:
    """The line where the key at `where` (a path inside the patchforge table, `prefix` its
    dotted name and a `.`, or "" for a patchforge.toml) is written: under the longest table
    header that names a prefix of the path, the first `key =` line (or the header itself when
    the path ends there). Headers are read as TOML keys: `[upstreams."vllm"]`,
    `[upstreams.'vllm']` and `[ upstreams . vllm ]` are all the table `upstreams.vllm`."""
    lines = text.splitlines()
    headers = [_table_header(line) for line in lines]
    above = _dotted_key(prefix.rstrip(".")) if prefix else []

    def header_line(parts: list[str]) -> int | None:
        wanted = [*(above or []), *parts]
        if not wanted:
            return None
        return next((number for number, key in enumerate(headers) if key == wanted), None)

    start, rest, header = 0, list(where), None
    for size in range(len(where), -1, -1):
        found = header_line(where[:size])
        if found is not None:
            if size == len(where):
                return found + 1
            start, rest, header = found + 1, where[size:], found + 1
            break
    if not rest:
        return None
    key = re.escape(rest[0])
    for number in range(start, len(lines)):
        if number > start and re.match(r"^\s*\[", lines[number]):
            break
        if re.match(rf"^\s*(\"{key}\"|'{key}'|{key})\s*[=.]", lines[number]):
            return number + 1
    # A missing key: the line of the table it belongs in.
    return header if header is not None else _line_of(text, rest[0])


def load_config(path: Path) -> Config:
    from patchforge.model.config import UPSTREAM_KINDS, Config, ForgeConfig, UpstreamConfig

    found = find_config_table(path)
    if found is None:
        raise ConfigError("no [tool.patchforge] table", path=str(path))
    table, prefix = found
    text = path.read_text("utf-8")
    validate_config_table(table, text, str(path), prefix)

    def fail(key: str, message: str, needle: str | None = None):
        raise ConfigError(f"{prefix}{key}: {message}", path=str(path),
                          line=_line_of(text, needle or key.split(".")[-1]))

    def expect(value, kind, key):
        if not isinstance(value, kind):
            fail(key, f"must be a {kind.__name__ if isinstance(kind, type) else 'value'}")
        return value

    def check_name(section: str, name: str) -> None:
        problem = directory_name_problem(name, section)
        if problem is None:
            problem = case_twin_problem(name, section, table.get(section, {}))
        if problem is not None:
            raise ConfigError(f"{prefix}{section}.{toml_key(name)}: {problem}", path=str(path),
                              line=toml_key_line(text, prefix, [section, name]))

    upstreams: dict[str, UpstreamConfig] = {}
    for name, spec in expect(table.get("upstreams", {}), dict, "upstreams").items():
        check_name("upstreams", name)
        key = f"upstreams.{name}"
        expect(spec, dict, key)
        kind = spec.get("kind")
        if kind not in UPSTREAM_KINDS:
            fail(f"{key}.kind", f"must be one of {', '.join(UPSTREAM_KINDS)} (got {kind!r})",
                 needle=f"[{prefix}{key}]")
        required = {"git": "url", "wheel": "package", "dir": "path"}[kind]
        if not isinstance(spec.get(required), str):
            fail(f"{key}.{required}", f"required for kind {kind!r}", needle=f"[{prefix}{key}]")
        for opt in ("install-root", "follow", "forge-repo", "image-label", "git-url"):
            if opt in spec and not isinstance(spec[opt], str):
                fail(f"{key}.{opt}", "must be a string")
        if isinstance(spec.get("install-root"), str):
            problem = install_root_problem(spec["install-root"])
            if problem:
                raise ConfigError(f"{prefix}{key}.install-root: {problem}", path=str(path),
                                  line=toml_key_line(text, prefix,
                                                     ["upstreams", name, "install-root"]))
        for opt in ("url", "git-url"):
            if isinstance(spec.get(opt), str):
                # Refused where it is written, before git is given it: a remote helper
                # (`ext::sh -c ...`) runs a command, an option-like URL is an option.
                try:
                    check_git_url(spec[opt], "the URL")
                except ValueError as error:
                    raise ConfigError(f"{prefix}{key}.{opt}: {error}", path=str(path),
                                      line=toml_key_line(text, prefix, ["upstreams", name, opt]),
                                      hint="give the repository's https://, ssh:// or git@host: "
                                           "address, or a local path") from None
        if isinstance(spec.get("follow"), str) and _FOLLOW_GLOB.search(spec["follow"]):
            raise ConfigError(f"{prefix}{key}.follow: {spec['follow']!r} is a pattern: follow "
                              f"names one branch or tag (patterns are not followed)",
                              path=str(path),
                              line=toml_key_line(text, prefix, ["upstreams", name, "follow"]),
                              hint="name the branch (e.g. main) or the tag to follow; a new "
                                   "release is reached with `rebase --to TAG`")
        upstreams[name] = UpstreamConfig(
            name=name, kind=kind, url=spec.get("url"), follow=spec.get("follow"),
            package=spec.get("package"), path=spec.get("path"),
            install_root=spec.get("install-root"), forge_repo=spec.get("forge-repo"),
            signoff=bool(spec.get("signoff", False)), image_label=spec.get("image-label"),
            git_url=spec.get("git-url"))

    profiles = expect(table.get("profiles", {}), dict, "profiles")
    for pname, desc in profiles.items():
        check_name("profiles", pname)
        if not isinstance(desc, str):
            fail(f"profiles.{pname}", "must be a string describing the profile")
        if pname in upstreams:
            # overlays/<profile>/<upstream>/<path>: `up/up/pkg/m.py` read either way, and the
            # hand-edit refusal's `import overlay` named the wrong path and no profile.
            raise ConfigError(f"{prefix}profiles.{toml_key(pname)}: a profile cannot be named "
                              f"like the upstream {pname}: overlays/{pname}/... would be read "
                              "as either", path=str(path),
                              line=toml_key_line(text, prefix, ["profiles", pname]),
                              hint="rename the profile (e.g. after its GPU target)")
    artifacts = expect(table.get("artifacts", []), list, "artifacts")
    for index, item in enumerate(artifacts):
        if not isinstance(item, str):
            fail(f"artifacts[{index}]", "must be a path string", needle="artifacts")
    forge = expect(table.get("forge", {}), dict, "forge")
    checks = expect(table.get("checks", {}), dict, "checks")
    forge_repo = forge.get("repo")
    from patchforge.names import is_forge_repo

    if forge_repo is not None and not is_forge_repo(forge_repo):
        fail("forge.repo", "must be OWNER/NAME, the stack repository on the forge (NAME "
             "neither '.' nor '..')", needle="repo")
    if isinstance(forge.get("api-url"), str):
        problem = api_url_problem(forge["api-url"])
        if problem:
            raise ConfigError(f"{prefix}forge.api-url: {problem}", path=str(path),
                              line=toml_key_line(text, prefix, ["forge", "api-url"]))
    image = table.get("image")
    if image is not None and not isinstance(image, str):
        fail("image", "must be an image reference string")
    return Config(source=str(path), upstreams=upstreams, profiles=dict(profiles),
                  artifacts=tuple(artifacts),
                  forge=ForgeConfig(api_url=forge.get("api-url", ForgeConfig.api_url),
                                    repo=forge_repo, web_host=forge.get("web-host")),
                  checks=checks, image=image,
                  compose_service=str(table.get("compose-service", "inference")),
                  compose_image=table.get("compose-image", True) is not False)


def _toml_str(value: str) -> str:
    """A TOML basic string: `\\`, `"` and control characters escaped (a raw newline in a
    value would end the string and break the file)."""
    escaped = value.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + re.sub(r"[\x00-\x1f\x7f]", lambda m: f"\\u{ord(m.group()):04x}", escaped) + '"'


def table_prefix(config_path) -> str:
    """The prefix of patchforge's tables in the configuration file at `config_path`:
    `tool.patchforge.` in a pyproject.toml, none in patchforge.toml."""
    return "" if Path(config_path).name == STANDALONE else "tool.patchforge."


def toml_key(name: str) -> str:
    """`name` as a TOML key: bare when it can be, quoted otherwise (a `.` in a bare key would
    make `[upstreams.vllm.rocm]` a table `rocm` inside a table `vllm`)."""
    return name if re.fullmatch(r"[A-Za-z0-9_-]+", name) else _toml_str(name)


def upstream_table_text(prefix: str, upstream: UpstreamConfig) -> str:
    """The TOML text for one upstream, appended by `upstream add`."""
    lines = [f"[{prefix}upstreams.{toml_key(upstream.name)}]",
             f"kind = {_toml_str(upstream.kind)}"]
    for key, value in (("url", upstream.url), ("follow", upstream.follow),
                       ("package", upstream.package), ("path", upstream.path),
                       ("install-root", upstream.install_root)):
        if value is not None:
            lines.append(f"{key} = {_toml_str(value)}")
    return "\n".join(lines) + "\n"


def starting_config_text(prefix: str) -> str:
    """What `init` writes: a commented starting configuration that reads as an empty one.

    No profile is declared: with none, overlays are not split by profile (a declared profile
    would put every overlay under overlays/<profile>/)."""
    return (
        f"[{prefix.rstrip('.')}]\n" if prefix else ""
    ) + (
        "# Upstreams are added with `patchforge upstream add NAME (--git URL | --wheel PACKAGE |\n"
        "# --dir PATH) --at SPEC [--install-root PATH]`.\n"
        "\n"
        f"[{prefix}profiles]\n"
        "# name = \"description\"; a patch lists the profiles it is for (no list: all), e.g.\n"
        "# gfx942 = \"MI300X: CDNA3, FNUZ FP8\"\n"
        "\n"
        f"[{prefix}forge]\n"
        "api-url = \"https://api.github.com\"\n"
    )


def follow_not_found(config_path: str | Path, upstream: str, follow: str,
                     error: StoreError) -> PatchforgeError:
    """`error` (the upstream has no ref `follow`: RefNotFound) said as the configuration's:
    the value came from `upstreams.<upstream>.follow`, which nothing on the command line
    names. Any other failure (the network, a damaged store, --offline without the ref) is
    returned as it is: the configuration is not what failed."""
    from patchforge.errors import RefNotFound

    if not isinstance(error, RefNotFound):
        return error
    prefix = table_prefix(config_path)
    return ConfigError(f"{prefix}upstreams.{toml_key(upstream)}.follow: {follow!r}: "
                       f"{error.message}", path=str(config_path),
                       line=upstream_key_line(config_path, upstream, "follow"),
                       hint="set `follow` to a branch or tag the upstream has, or remove it "
                            "to follow the remote's default branch")
