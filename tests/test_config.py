"""Reading [tool.patchforge] / patchforge.toml: the model, and errors with file and line."""
from __future__ import annotations

import json
import subprocess
import tomllib

import pytest

from helpers.cli import run_cli
from helpers.project import make_project
from helpers.snapshot import snapshot
from patchforge.errors import ConfigError
from patchforge.formats.config import (find_config_table, load_config, starting_config_text,
                                       upstream_table_text)
from patchforge.model.config import UpstreamConfig

GOOD = b"""[project]
name = "x"

[tool.patchforge]
artifacts = ["entry.sh"]
compose-service = "api"

[tool.patchforge.upstreams.vllm]
kind = "wheel"
package = "vllm"
install-root = "/usr/local/lib/python3.12/dist-packages"
forge-repo = "vllm-project/vllm"
signoff = true

[tool.patchforge.upstreams.aiter]
kind = "git"
url = "https://github.com/ROCm/aiter"
follow = "main"

[tool.patchforge.profiles]
gfx942 = "MI300X"
"""


def test_reads_the_model(tmp_path):
    path = tmp_path / "pyproject.toml"
    path.write_bytes(GOOD)
    config = load_config(path)
    assert list(config.upstreams) == ["vllm", "aiter"]
    assert config.upstreams["vllm"] == UpstreamConfig(
        name="vllm", kind="wheel", package="vllm",
        install_root="/usr/local/lib/python3.12/dist-packages", forge_repo="vllm-project/vllm",
        signoff=True)
    assert config.upstreams["aiter"].url == "https://github.com/ROCm/aiter"
    assert config.profiles == {"gfx942": "MI300X"} and config.artifacts == ("entry.sh",)
    assert config.compose_service == "api"


def test_pyproject_without_table_is_not_a_config(tmp_path):
    path = tmp_path / "pyproject.toml"
    path.write_bytes(b'[project]\nname = "x"\n')
    assert find_config_table(path) is None


@pytest.mark.parametrize("old, new, key, line_text", [
    (b'kind = "git"', b'kind = "svn"', "tool.patchforge.upstreams.aiter.kind",
     'kind = "svn"'),
    (b'url = "https://github.com/ROCm/aiter"\n', b"", "tool.patchforge.upstreams.aiter.url",
     "[tool.patchforge.upstreams.aiter]"),
    (b'gfx942 = "MI300X"', b"gfx942 = 3", "tool.patchforge.profiles.gfx942", "gfx942 = 3"),
    (b'artifacts = ["entry.sh"]', b"artifacts = [1]", "tool.patchforge.artifacts[0]",
     "artifacts = [1]"),
    (b'install-root = "/usr', b'install-root = ["/usr"]\n#', "install-root", "install-root ="),
])
def test_errors_name_key_and_line(tmp_path, old, new, key, line_text):
    path = tmp_path / "pyproject.toml"
    data = GOOD.replace(old, new, 1)
    path.write_bytes(data)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert key in str(info.value) and info.value.path == str(path)
    assert line_text in data.decode().splitlines()[info.value.line - 1]


def test_toml_syntax_error_has_the_line(tmp_path):
    path = tmp_path / "patchforge.toml"
    path.write_bytes(b"[upstreams.x]\nkind = \n")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert info.value.line == 2 and "not valid TOML" in str(info.value)


def test_generated_text_parses_and_round_trips(tmp_path):
    for prefix in ("", "tool.patchforge."):
        upstream = UpstreamConfig(name="v", kind="dir", path='we"ird\\path',
                                  install_root="/opt")
        text = starting_config_text(prefix) + "\n" + upstream_table_text(prefix, upstream)
        doc = tomllib.loads(text)
        table = doc["tool"]["patchforge"] if prefix else doc
        assert table["upstreams"]["v"] == {"kind": "dir", "path": 'we"ird\\path',
                                           "install-root": "/opt"}
        assert table["profiles"] == {}


NAMES = ["vllm", "aiter", "a", "A.b_c-9", "x" * 100, "x" * 101, "vllm.rocm", "a..b", ".x", "-x",
         "_x", "", "a b", "é", "SHA256SUMS", "sha256sums", "Sha256Sums", "manifest.json",
         "Manifest.JSON", "manifestxjson", "compose.yaml", "Dockerfile", "dockerfile",
         "README.md", "readme.MD", "artifacts", "ARTIFACTS", "artifacts2", "PATCHES.md",
         "history.jsonl", "History.Jsonl", "x.", "x.lock", "lock", "x.lockx", "x.LOCK",
         "SHA256SUMS.d", "compose.yml", "vllm\n", "x.\n", "upstreamed", "Upstreamed",
         "upstreamed2"]


def test_a_profile_named_like_an_upstream_is_refused_naming_its_line(tmp_path):
    """overlays/<profile>/<upstream>/<path>: a profile `up` beside an upstream `up` made
    `overlays/up/up/pkg/m.py` readable either way, and the refusal of a hand-edited overlay
    handed out an `import overlay` with the wrong path and no profile. Refused at load."""
    path = tmp_path / "patchforge.toml"
    path.write_text('[upstreams.up]\nkind = "dir"\npath = "/src"\n\n'
                    '[profiles]\ngfx950 = "b"\nup = "named like the upstream"\n')
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert err.value.line == 7 and "named like the upstream up" in str(err.value)


@pytest.mark.parametrize("description", ["two\\nlines", "bell\\u0007", "esc\\u001b[31m"])
def test_a_profile_description_with_a_control_character_is_refused_naming_its_line(
        tmp_path, description):
    """A profile's description went into the completion scripts' item lines as it was: a
    newline in it made zsh offer a second, made-up profile (and an escape sequence reached
    the terminal). A control character but a tab is refused at load, naming the line."""
    path = tmp_path / "patchforge.toml"
    path.write_text('[upstreams.up]\nkind = "dir"\npath = "/src"\n\n'
                    f'[profiles]\ngfx942 = "MI300X"\ngfx950 = "{description}"\n')
    run = run_cli(tmp_path, "list")
    assert run.rc == 2, run.text
    assert "patchforge.toml:7" in run.err and "control character" in run.err, run.err
    path.write_text(path.read_text().replace(f'"{description}"', '"MI355X\\tgfx950"'))
    with_tab = load_config(path)
    assert with_tab.profiles["gfx950"] == "MI355X\tgfx950"


@pytest.mark.parametrize("section", ["upstreams", "profiles"])
def test_the_schema_and_the_code_refuse_the_same_upstream_and_profile_names(tmp_path, section):
    """config.schema.json is what an editor checks the table against: every upstream or
    profile name the code refuses (names.check_directory_name: a file patchforge writes in any
    case, a `.`/`.lock` end, the character rules) the schema refuses, and no other; the
    command refuses it naming the key's line."""
    from patchforge.formats.schemas import first_violation
    from patchforge.names import check_directory_name

    for name in NAMES:
        table = {section: {name: {"kind": "dir", "path": "/src"} if section == "upstreams"
                           else "a profile"}}
        try:
            check_directory_name(name, section.rstrip("s"))
            code_refuses = False
        except ValueError:
            code_refuses = True
        schema_refuses = first_violation(table, "config") is not None
        assert schema_refuses == code_refuses, name
    for name in ("sha256sums", "x.lock", "Manifest.JSON"):
        path = tmp_path / "patchforge.toml"
        entry = '\nkind = "dir"\npath = "/src"\n' if section == "upstreams" else '\n'
        body = (f'[{section}."{name}"]{entry}' if section == "upstreams"
                else f'[profiles]\nok = "x"\n"{name}" = "y"\n')
        path.write_text("# the stack\n" + body)
        with pytest.raises(ConfigError) as err:
            load_config(path)
        line = 2 if section == "upstreams" else 4
        assert err.value.line == line and name in str(err.value), str(err.value)
        assert "patchforge writes" in str(err.value) or ".lock" in str(err.value)


@pytest.mark.parametrize("section", ["upstreams", "profiles"])
def test_names_that_differ_only_in_case_are_refused(tmp_path, section):
    """`vllm` and `VLLM` are one directory on macOS or Windows (series/vllm, overlays/a):
    two upstreams' patches, or two profiles' overlay files, would land in one. The second is
    refused naming its line (JSON Schema cannot state this rule; its description says it)."""
    path = tmp_path / "patchforge.toml"
    if section == "upstreams":
        path.write_text('[upstreams.vllm]\nkind = "dir"\npath = "/a"\n\n'
                        '[upstreams.VLLM]\nkind = "dir"\npath = "/b"\n')
    else:
        path.write_text('[profiles]\ngfx942 = "MI300X"\nGFX942 = "the same"\n')
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert err.value.line == (5 if section == "upstreams" else 3), str(err.value)
    assert "only in case" in str(err.value)


@pytest.mark.parametrize("key, value", [
    ("upstreams.up.install-root", "/opt/site\\n"), ("compose-service", "inference\\n"),
    ("upstreams.up.url", "../up\\n"), ("forge.api-url", "https://api.github.com\\n"),
    ("image", "repo/x:1\\n")])
def test_a_value_ending_in_a_newline_is_refused(tmp_path, key, value):
    """A pattern's `$` let a final newline through (Python's `$` matches before one; JSON
    Schema's does not): `install-root = "/opt/site\\n"` (a multi-line TOML string) wrote a
    mount target `/opt/site\\n/a.py` into compose.yaml and the Dockerfile, and
    `compose-service = "inference\\n"` a broken service key, with every command at exit 0."""
    table, _, field = key.rpartition(".")
    lines = ['[upstreams.up]', 'kind = "git"', 'url = "../up"', 'install-root = "/opt/site"',
             '[forge]', 'api-url = "https://api.github.com"']
    text = "\n".join(lines) + "\n"
    if table:
        text = text.replace(f'{field} = "', f'{field} = "{value}"  # ', 1) \
            if f"{field} = " in text else text
    else:
        text = f'{field} = "{value}"\n' + text
    path = tmp_path / "patchforge.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert field in str(err.value), str(err.value)


def test_a_byte_order_mark_is_named(tmp_path):
    """An editor on Windows saves pyproject.toml with a byte-order mark, which TOML refuses:
    the error said only "Invalid statement (at line 1, column 1)" about a character no
    editor shows. It says the mark is there, and how to save the file."""
    path = tmp_path / "pyproject.toml"
    path.write_bytes(b"\xef\xbb\xbf" + GOOD)
    with pytest.raises(ConfigError) as err:
        find_config_table(path)
    assert err.value.line == 1 and "byte-order mark" in str(err.value)
    assert "without a byte-order mark" in err.value.hint


@pytest.mark.parametrize("root", ["/opt/x/../up", "//opt/up", "/opt/./up", "/opt/up/..",
                                  "/opt/up ", "/opt/ up/x"])
def test_an_install_root_that_is_no_plain_path_is_refused(tmp_path, root):
    """Two upstreams' overlay files that go to one path in the image are refused, but the
    paths were compared as written: a second upstream at `install-root = "/opt/x/../up"` or
    `"//opt/up"` beside one at `/opt/up` passed, and compose.yaml mounted two files at
    /opt/up/m1.py, one fix never deployed, `overlays` and `lint` at exit 0. Such a root is
    refused naming its own line (not the first upstream's), and `upstream add` refuses it
    before anything is fetched or written. So is a part beginning or ending with a space
    (`"/opt/up "`, pasted with the path): the mounts went to `/opt/up /m1.py`, a directory
    compose makes in the container, the image's file unfixed and every command at exit 0."""
    path = tmp_path / "patchforge.toml"
    path.write_text('[upstreams.up]\nkind = "dir"\npath = "/a"\ninstall-root = "/opt/up"\n\n'
                    f'[upstreams.other]\nkind = "dir"\npath = "/b"\ninstall-root = "{root}"\n')
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert err.value.line == 9 and "upstreams.other.install-root" in str(err.value), str(err.value)
    assert repr(root) in str(err.value)

    project = make_project(tmp_path / "project")
    before = snapshot(project)
    run = run_cli(project, "upstream", "add", "z", "--dir", str(tmp_path), "--at", "1",
                  "--install-root", root)
    assert run.rc == 2 and "--install-root" in run.err and repr(root) in run.err, run.text
    assert snapshot(project) == before


def test_an_install_root_with_a_trailing_slash_names_its_directory(tmp_path):
    path = tmp_path / "patchforge.toml"
    path.write_text('[upstreams.up]\nkind = "dir"\npath = "/a"\ninstall-root = "/opt/up/"\n')
    assert load_config(path).upstreams["up"].install_root == "/opt/up/"


# A configuration with one value its schema's pattern refuses at a time: (the line as written,
# the line that replaces it, the dotted key, what the message must say the value must be).
_PATTERN_BASE = ('compose-service = "inference"\nartifacts = ["entry.sh"]\nimage = "rocm/vllm"\n\n'
                 '[forge]\napi-url = "https://api.github.com"\nweb-host = "github.com"\n'
                 'repo = "acme/stack"\n\n'
                 '[upstreams.up]\nkind = "git"\nurl = "https://example.com/up.git"\n'
                 'follow = "main"\ninstall-root = "/opt/up"\nforge-repo = "acme/up"\n'
                 'image-label = "up.commit"\ngit-url = "https://example.com/up.git"\n\n'
                 '[upstreams.wh]\nkind = "wheel"\npackage = "vllm"\n\n'
                 '[upstreams.src]\nkind = "dir"\npath = "/src"\n')


@pytest.mark.parametrize("old, new, key, must", [
    ('install-root = "/opt/up"', 'install-root = "opt/up"', "upstreams.up.install-root",
     "'opt/up' is not a valid install-root: it must be an absolute path (beginning with '/'"),
    ('install-root = "/opt/up"', 'install-root = "/opt/up:ro"', "upstreams.up.install-root",
     "with no ':' (compose would read what follows as the mount's options)"),
    ('forge-repo = "acme/up"', 'forge-repo = "acme"', "upstreams.up.forge-repo",
     "'acme' is not a valid forge-repo: it must be OWNER/NAME, the upstream's repository"),
    # `..` is a step in the API's path: /repos/o/../pulls/1 was sent as /repos/pulls/1.
    ('forge-repo = "acme/up"', 'forge-repo = "acme/.."', "upstreams.up.forge-repo",
     "neither side '.' or '..'"),
    ('forge-repo = "acme/up"', 'forge-repo = "../up"', "upstreams.up.forge-repo",
     "neither side '.' or '..'"),
    ('package = "vllm"', 'package = "-vllm"', "upstreams.wh.package",
     "it must be a distribution name (PEP 508)"),
    ('url = "https://example.com/up.git"\nfollow', 'url = ""\nfollow', "upstreams.up.url",
     "'' is not a valid url: it is empty; it must be one line of text (not empty, no control "
     "character)"),
    ('follow = "main"', 'follow = "ma\\tin"', "upstreams.up.follow",
     "it holds a control character (U+0009); it must be one line of text"),
    ('image-label = "up.commit"', 'image-label = ""', "upstreams.up.image-label",
     "it must be one line of text"),
    ('git-url = "https://example.com/up.git"', 'git-url = "a\\nb"', "upstreams.up.git-url",
     "it must be one line of text"),
    ('path = "/src"', 'path = ""', "upstreams.src.path", "it must be one line of text"),
    ('api-url = "https://api.github.com"', 'api-url = "https://me@api.github.com"',
     "forge.api-url", "it must be an http:// or https:// URL"),
    ('web-host = "github.com"', 'web-host = "https://github.com"', "forge.web-host",
     "it must be a host name, with its port if need be"),
    ('repo = "acme/stack"', 'repo = "acme"', "forge.repo", "it must be OWNER/NAME ("),
    ('repo = "acme/stack"', 'repo = "acme/.."', "forge.repo", "NAME neither '.' nor '..'"),
    ('compose-service = "inference"', 'compose-service = "in..ference"', "compose-service",
     "it must be letters, digits, '.', '_' and '-', beginning with a letter or digit, at most "
     "100 characters, with no '..'"),
    ('artifacts = ["entry.sh"]', 'artifacts = ["entry.sh", ""]', "artifacts[1]",
     "'' is not a valid artifacts entry: it is empty; it must be one line of text"),
    ('image = "rocm/vllm"', 'image = ""', "image", "it must be one line of text"),
])
def test_a_value_its_pattern_refuses_is_said_with_what_it_must_be(tmp_path, old, new, key,
                                                                   must):
    """`install-root = "opt/vllm"` was refused as "'opt/vllm' is not a valid install-root",
    which said nothing of why (an absolute path is wanted), nor did any other value a pattern
    of the configuration's schema refuses. Each says what the schema says it must be, with the
    file, line and key as before; nothing is written."""
    assert old in _PATTERN_BASE
    text = _PATTERN_BASE.replace(old, new, 1)
    (tmp_path / "patchforge.toml").write_text(text)
    (tmp_path / "entry.sh").write_text("true\n")
    before = snapshot(tmp_path)
    offending = new.split("\n")[0]
    line = text.splitlines().index(offending) + 1
    for command in (["status"], ["list"]):
        run = run_cli(tmp_path, *command)
        assert run.rc == 2, run.text
        assert f"patchforge.toml:{line}: {key}: " in run.err and must in run.err, run.err
    assert snapshot(tmp_path) == before


def test_the_base_of_the_pattern_cases_is_a_good_configuration(tmp_path):
    (tmp_path / "patchforge.toml").write_text(_PATTERN_BASE)
    load_config(tmp_path / "patchforge.toml")


def test_upstream_add_says_what_a_refused_value_must_be(tmp_path):
    """The values `upstream add` writes are checked against the same schema: its refusal of
    `--install-root opt/x` says what the value must be too."""
    assert run_cli(None, "init", "--standalone", str(tmp_path)).rc == 0
    before = snapshot(tmp_path)
    run = run_cli(tmp_path, "upstream", "add", "up", "--git", "https://example.com/up.git",
                  "--at", "main", "--install-root", "opt/x")
    assert run.rc == 2, run.text
    assert "--install-root 'opt/x': not a valid install-root: it must be an absolute path " \
        "(beginning with '/'" in run.err, run.err
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("name", ["config", "lock", "manifest"])
def test_every_pattern_of_a_projects_files_says_what_it_expects(name):
    """Every scalar pattern of the schemas a project's files are read and written with: the
    schema where a refusal is reported (the one holding `pattern`, or `not` over a pattern)
    says in words what the value must be (`x-expected`), which the message gives."""
    from patchforge.formats.schemas import EXPECTED, load_schema

    missing: list[str] = []

    def walk(node, where: str, negated: bool = False) -> None:
        if isinstance(node, dict):
            holds = "pattern" in node and not negated or \
                isinstance(node.get("not"), dict) and "pattern" in node["not"]
            if holds and not node.get(EXPECTED):
                missing.append(where)
            for key, value in node.items():
                walk(value, f"{where}/{key}", negated=key == "not")
        elif isinstance(node, list):
            for index, value in enumerate(node):
                walk(value, f"{where}/{index}")

    walk(load_schema(name), "#")
    assert missing == []


# Texts of the forms plain_toml reads (it must give tomllib's document) and texts just outside
# them (it must leave them to tomllib: None).
PLAIN_READ = [
    "",
    "\n\n",
    starting_config_text(""),
    starting_config_text("tool.patchforge.") + upstream_table_text(
        "tool.patchforge.", UpstreamConfig(name="vllm", kind="git", url="https://x/y.git",
                                           follow="main", install_root="/usr/lib/py")),
    "a = 'x'\n[t]\nb = \"y\" # c\n\t c2\t=\t'it # is'\t#\n",
    "[a.b]\nx = true\n[a]\ny = false\n[a.c]\n",
    "[ok]\nk = \"tab\there, quote' here, \u00e9\u2028 \u0085 end\"\n# \u00a0 comment \u0080\n",
    "[a]\nx = \"1\"#no space before the comment\n[b]\nx = '2'",
    "k-1_B = ''\n9 = \"\"\n",
]
PLAIN_LEFT = [
    "a = 1\n",                      # an integer
    "a = [\"x\"]\n",                # an array
    "a = {b = \"x\"}\n",            # an inline table
    "a.b = \"x\"\n",                # a dotted key
    "\"a\" = \"x\"\n",              # a quoted key
    "a = \"x\\ty\"\n",              # an escape
    "a = \"\"\"x\"\"\"\n",          # a multi-line string
    "a = '''x'''\n",
    "a = \"x\"\r\n",                # CRLF
    "[ a ]\n",                      # whitespace in a header
    "[[a]]\n",                      # an array of tables
    "a = \"x\"\na = \"y\"\n",       # a key twice
    "[a]\n[a]\n",                   # a table twice
    "a = \"x\"\n[a]\n",             # a table where a value is
    "[a]\nb = \"x\"\n[a.b]\n",
    "[a.b]\n[a]\nb = \"x\"\n",
    "a = \"x\" y\n",                # junk after a value
    "a = truex\n",
    "a = \"x\u0001\"\n",            # control characters
    "# \u007f\n",
    "\ufeffa = \"x\"\n",            # a byte-order mark
    "a = \"x\n",
    "a\u00a0= \"x\"\n",             # no-break space is no TOML whitespace
    "\u00e9 = \"x\"\n",             # a key that is not bare
]


@pytest.mark.parametrize("text", PLAIN_READ)
def test_a_plain_configuration_is_read_as_tomllib_reads_it(text):
    from patchforge.formats.config import plain_toml

    assert plain_toml(text) == tomllib.loads(text)


@pytest.mark.parametrize("text", PLAIN_LEFT)
def test_a_configuration_of_other_forms_is_left_to_tomllib(text):
    from patchforge.formats.config import plain_toml

    assert plain_toml(text) is None


def test_plain_toml_agrees_with_tomllib_on_random_texts():
    """Texts made of the lines plain_toml reads and of lines near them (a key or table twice, a
    header where a value is, escapes, other values, stray characters): whatever it reads is
    what tomllib reads, and it leaves to tomllib every text tomllib refuses."""
    import random

    from patchforge.formats.config import plain_toml

    rng = random.Random(19)
    keys = ["a", "b", "a-b", "x_1", "9", "\u00e9", "\"a\"", "a.b"]
    values = ["\"\"", "\"v\"", "'v'", "\"a # b\"", "'it''s'", "\"x\\n\"", "\"q\"\"", "true",
              "false", "True", "1", "[]", "\"\t\"", "\"\u2028\"", "'\u0080'", "\"\x7f\""]
    tails = ["", " ", "\t", "# c", " # c \"x\"", " x", "#\x01"]

    def line() -> str:
        kind = rng.random()
        if kind < 0.3:
            path = ".".join(rng.choice(keys[:5]) for _ in range(rng.randint(1, 3)))
            return rng.choice(["", " ", "\t"]) + rng.choice(["[%s]", "[%s]", "[ %s]", "[[%s]]"]) \
                % path + rng.choice(tails)
        if kind < 0.85:
            return rng.choice(["", " "]) + rng.choice(keys) + rng.choice([" = ", "=", "\t=\t"]) \
                + rng.choice(values) + rng.choice(tails)
        return rng.choice(["", "   ", "# a comment", "garbage", "\r", "= \"x\""])

    read = 0
    for _ in range(3000):
        text = "\n".join(line() for _ in range(rng.randint(0, 8)))
        mine = plain_toml(text)
        try:
            theirs = tomllib.loads(text)
        except tomllib.TOMLDecodeError:
            assert mine is None, text
            continue
        if mine is not None:
            read += 1
            assert mine == theirs, text
    assert read > 300  # the texts reach plain_toml's forms, not only its refusals


@pytest.mark.parametrize("text", [
    b"tool = 5  # patchforge's? no\n",
    b"[[tool]]\npatchforge = 1\n",
    b'[project]\nname = "s"\nx = ' + b"[" * 5000 + b"]" * 5000 + b"\n",
], ids=["tool-a-number", "tool-an-array", "nested-deep"])
def test_another_projects_pyproject_above_is_no_configuration_however_written(tmp_path, text):
    """A pyproject.toml above the working directory (a stack checked out inside another
    project) whose `tool` is not a table, or that holds a value nested a few thousand deep:
    every command ended in an internal error (AttributeError, RecursionError). It holds no
    patchforge table: "no patchforge configuration", exit 2."""
    (tmp_path / "pyproject.toml").write_bytes(text)
    (tmp_path / "sub").mkdir()
    run = run_cli(None, "list", cwd=tmp_path / "sub")
    assert run.rc == 2, run.err
    assert "no patchforge configuration in" in run.err and "internal error" not in run.err


def test_a_configuration_nested_too_deep_is_refused_naming_its_file(tmp_path):
    """patchforge.toml (or a pyproject.toml naming the table) with a value nested a few
    thousand deep: an internal error (RecursionError). Now the file is named, exit 2."""
    make_project(tmp_path)
    config = tmp_path / "patchforge.toml"
    config.write_bytes(b"deep = " + b"[" * 5000 + b"]" * 5000 + b"\n" + config.read_bytes())
    run = run_cli(None, "list", cwd=tmp_path)
    assert run.rc == 2, run.err
    assert f"{config}: not valid TOML: nested deeper than patchforge reads" in run.err


def test_a_configuration_that_is_a_link_to_a_file_of_another_name_is_read_by_its_own_name(
        tmp_path):
    """patchforge.toml a symbolic link to a file of another name (`../shared.toml`, kept beside
    several projects). Found from the current directory it was read as patchforge.toml; named
    by --root it was taken by the target's name, read as a pyproject.toml and said to have "no
    [tool.patchforge] table". Now both read it as patchforge.toml.

    `upstream add` appended to the file the link names: a second project linking the same file
    was then configured with an upstream its own lock does not pin (each project has its own
    upstream.lock). It is refused now, naming the link and the two ways on, nothing written;
    the first way (a copy of its own) then adds the upstream to this project alone."""
    from helpers.upstream import Upstream

    shared = tmp_path / "shared.toml"
    roots = [tmp_path / "project", tmp_path / "other"]
    for root in roots:
        assert run_cli(None, "init", "--standalone", str(root)).rc == 0
        (root / "patchforge.toml").rename(shared)
        (root / "patchforge.toml").symlink_to("../shared.toml")
    root = roots[0]
    for where, cwd in ((root, None), (None, root)):
        run = run_cli(where, "status", cwd=cwd)
        assert run.rc == 0, run.text
        assert "table" not in run.err, run.err
    upstream = Upstream(tmp_path / "up-upstream", {"a.py": b"a\n"}, message="initial")
    before = shared.read_bytes(), (root / "upstream.lock").read_bytes()
    add = ("upstream", "add", "up", "--git", str(upstream.path), "--at", "main",
           "--install-root", "/opt/up")
    run = run_cli(root, *add)
    assert run.rc == 2, run.text
    assert f"patchforge.toml is a link to {shared}" in run.err, run.err
    assert "nothing was written" in run.err, run.err
    assert f"cp --remove-destination {shared} {root / 'patchforge.toml'}" in run.err, run.err
    assert f"add its [upstreams.up] table to {shared}" in run.err, run.err
    assert "`patchforge upstream pin up --at main`" in run.err, run.err
    assert (root / "patchforge.toml").is_symlink()
    assert (shared.read_bytes(), (root / "upstream.lock").read_bytes()) == before
    for each in roots:
        assert run_cli(each, "status").rc == 0
    # The way on the hint names: a copy of its own, then the same command.
    subprocess.run(["cp", "--remove-destination", str(shared), str(root / "patchforge.toml")],
                   check=True)
    run = run_cli(root, *add)
    assert run.rc == 0, run.text
    assert tomllib.loads((root / "patchforge.toml").read_text())["upstreams"]["up"][
        "install-root"] == "/opt/up"
    assert shared.read_bytes() == before[0]
    assert (roots[1] / "patchforge.toml").is_symlink()
    for each in roots:
        assert run_cli(each, "status").rc == 0


def test_upstream_add_writes_through_a_link_to_a_file_inside_the_project(tmp_path):
    """patchforge.toml a link to conf/patchforge.toml inside the same project, which no other
    project reads: `upstream add` refused it as a file "every project linking it reads" and
    said to replace the link by a copy. It appends the upstream to the file the link names,
    atomically, and the link stays one; a link through the project to a file outside it is
    still refused."""
    from helpers.upstream import Upstream

    root = tmp_path / "project"
    assert run_cli(None, "init", "--standalone", str(root)).rc == 0
    (root / "conf").mkdir()
    (root / "patchforge.toml").rename(root / "conf" / "patchforge.toml")
    (root / "patchforge.toml").symlink_to("conf/patchforge.toml")
    upstream = Upstream(tmp_path / "up-upstream", {"a.py": b"a\n"}, message="initial")
    run = run_cli(root, "upstream", "add", "up", "--git", str(upstream.path), "--at", "main",
                  "--install-root", "/opt/up")
    assert run.rc == 0, run.text
    assert (root / "patchforge.toml").is_symlink()
    assert tomllib.loads((root / "conf" / "patchforge.toml").read_text())["upstreams"]["up"][
        "install-root"] == "/opt/up"
    assert "up" in json.loads((root / "upstream.lock").read_text())["upstreams"]
    assert run_cli(root, "status").rc == 0
    # conf/ itself a link out of the project: the file is another directory's, refused.
    outside = tmp_path / "elsewhere"
    (root / "conf").rename(outside)
    (root / "conf").symlink_to(outside)
    before = (outside / "patchforge.toml").read_bytes()
    run = run_cli(root, "upstream", "add", "two", "--git", str(upstream.path), "--at", "main",
                  "--install-root", "/opt/two")
    assert run.rc == 2 and "every project linking it" in run.err, run.text
    assert (outside / "patchforge.toml").read_bytes() == before


def test_root_naming_no_project_says_the_way_on_it_has(tmp_path):
    """`--root` naming a subdirectory of a project (`--root series`, `--root .` run from
    inside it) was answered "no patchforge configuration in series", with the hint to run
    `patchforge init` there first: a second project inside the first. A --root inside a
    project names that project; one that does not exist says so; one that is no project and
    inside none is told of `init`, as before. Exit 2 each, nothing written."""
    root = make_project(tmp_path / "stack")
    (root / "series" / "up").mkdir(parents=True, exist_ok=True)
    before = snapshot(root)
    for command in (["list"], ["status"]):
        inside = run_cli(root / "series", *command)
        assert inside.rc == 2 and f"no patchforge configuration in {root / 'series'}" \
            in inside.err, inside.err
        assert f"hint: {root / 'series'} is inside the project {root}: `--root {root}`" \
            in inside.err, inside.err
        assert "patchforge init" not in inside.err, inside.err
        missing = run_cli(root / "serie", *command)
        assert missing.rc == 2 and f"hint: {root / 'serie'} does not exist" in missing.err, \
            missing.err
        assert "patchforge init" not in missing.err, missing.err
    assert snapshot(root) == before
    alone = tmp_path / "elsewhere"
    alone.mkdir()
    away = run_cli(alone, "list")
    assert away.rc == 2 and "hint: run `patchforge init` there first" in away.err, away.err
