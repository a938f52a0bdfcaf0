"""Every command that takes --json prints one document that its shipped JSON Schema describes,
with a schema_version; lists are lists."""
from __future__ import annotations

import json

import click

from patchforge.cli import LAZY_COMMANDS
from patchforge.cli.app import cli
from patchforge.formats.schemas import SCHEMA_NAMES, load_schema, validation_errors
from helpers.cli import ok, run_cli
from helpers.patches import forwarded_patch
from helpers.project import git_project
from helpers.upstream import Upstream

# command words -> the schema its --json document follows
DOCUMENTS = {
    ("list",): "list", ("show",): "show", ("status",): "status", ("lint",): "lint",
    ("overlays",): "overlays", ("verify",): "verify", ("fetch",): "fetch",
    ("upstream", "list"): "upstreams", ("upstream", "add"): "pin", ("upstream", "pin"): "pin",
    ("check",): "check", ("ledger",): "ledger", ("refresh",): "refresh", ("rebase",): "rebase",
    ("pr",): "pr", ("bump",): "bump",
}


def _commands_with_json():
    ctx = click.Context(cli)
    for name in LAZY_COMMANDS:
        command = cli.get_command(ctx, name)
        subs = [((name, sub), command.get_command(ctx, sub))
                for sub in command.list_commands(ctx)] if isinstance(command, click.Group) \
            else [((name,), command)]
        for words, cmd in subs:
            if any(p.name == "as_json" for p in cmd.params):
                yield words


def test_every_json_command_has_a_schema():
    found = set(_commands_with_json())
    assert found == set(DOCUMENTS), found ^ set(DOCUMENTS)
    for schema in set(DOCUMENTS.values()):
        assert schema in SCHEMA_NAMES
        assert "schema_version" in json.dumps(load_schema(schema)), schema


def _reference_section(title: str) -> str:
    from helpers.env import REPO_ROOT

    text = (REPO_ROOT / "docs" / "reference.md").read_text()
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start:end if end != -1 else len(text)]


def _words_listed(paragraph: str) -> set[tuple[str, ...]]:
    """The command words of each `backticked` item of a list (`upstream add`, `import git`),
    an option after them left out (`rebase --continue` is `rebase`)."""
    import re

    found = set()
    paragraph = re.sub(r"\([^()]*\)", "", paragraph)  # an aside: `rebase (with `--to` ...)`
    for item in re.findall(r"`([^`]+)`", paragraph):
        words = tuple(w for w in item.split() if not w.startswith("-"))
        if words:
            found.add(words)
    return found


def test_the_reference_lists_every_command_that_takes_json():
    """Nothing said which commands take `--json`: a script writer learned it by trying. The
    reference lists them (each with its schema in the table below the list) and names the
    others; the lists are the command line's own, whatever is added to it later."""
    section = _reference_section("JSON documents and schemas")
    taking = section.split("The commands that take `--json`:", 1)[1].split("\n\n", 1)[0]
    takes, others = taking.split("The others", 1)
    others = others.split(":", 1)[1].split(";", 1)[0]  # the list, not the way round it
    assert _words_listed(takes) == set(DOCUMENTS), _words_listed(takes) ^ set(DOCUMENTS)
    ctx = click.Context(cli)
    every = set()
    for name in LAZY_COMMANDS:
        command = cli.get_command(ctx, name)
        every |= {(name, sub) for sub in command.list_commands(ctx)} \
            if isinstance(command, click.Group) else {(name,)}
    assert _words_listed(others) == every - set(DOCUMENTS), \
        _words_listed(others) ^ (every - set(DOCUMENTS))
    # Each one's schema row names it, and each one's synopsis in the commands table shows
    # the flag.
    table = section.split("| schema | describes |", 1)[1].split("\n\n", 1)[0]
    rows = {line.split("|")[1].strip().strip("`"): line.split("|", 2)[2]
            for line in table.splitlines() if line.startswith("| `")}
    synopses = _reference_section("Commands").split("| command | does |", 1)[1]
    for words, schema in DOCUMENTS.items():
        assert f"`{' '.join(words)} " in rows[f"{schema}.schema.json"], (words, schema)
        row = [line for line in synopses.splitlines()
               if line.startswith(f"| `{' '.join(words)} ")]
        assert row and "[--json]" in row[0].split(" | ")[0], (words, row)


def test_upstream_pin_prints_the_document_upstream_add_prints(tmp_path):
    """`upstream add --json` printed the pin it wrote; `upstream pin`, which writes the same,
    took no `--json` (exit 2, "No such option") though pin.schema.json named it."""
    root, _ = git_project(tmp_path)
    upstream = Upstream(tmp_path / "second", {"x.py": b"x = 1\n"})
    first = upstream.base
    added = run_cli(root, "upstream", "add", "second", "--git", str(upstream.path), "--at",
                    first, "--json")
    assert added.rc == 0, added.err
    later = upstream.commit({"x.py": b"x = 2\n"}, "two")
    run = run_cli(root, "upstream", "pin", "second", "--at", later, "--json")
    assert run.rc == 0, run.err
    document = json.loads(run.out)
    assert validation_errors(document, "pin") == [], document
    assert document["upstream"] == "second" and document["commit"] == later, document
    assert set(document) == set(json.loads(added.out)), document
    assert json.loads((root / "upstream.lock").read_text())["upstreams"]["second"][
        "commit"] == later


def test_a_check_that_exits_1_for_a_stop_says_so_in_its_document(tmp_path):
    """In a stopped rebase `lint --json` and `overlays --check --json` exit 1, as their text
    does, and a script reading the document got no reason: lint's said `ok: false` with no
    finding, overlays' said `ok: true`; under --json the stop's note is not on stderr either.
    Each document says `ok: false` and carries the stop in `notes`, as `check --json` and
    `status --json` do."""
    from test_ledger import B, make_stack

    stack = make_stack(tmp_path)
    stack.cli("overlays")
    stack.commit({"pkg/b.py": B.replace(b"    return 7\n", b"    return 70\n")}, "v2",
                 tag="v2")
    stack.cli("rebase", "--to", "v2", expect=3)
    for args, schema in ((("lint", "--no-forge"), "lint"), (("overlays", "--check"), "overlays"),
                         (("check",), "check")):
        _, out, err = stack.cli(*args, "--json", expect=1)
        document = json.loads(out)
        assert validation_errors(document, schema) == [], document
        assert document["ok"] is False, (args, document)
        assert any(note.startswith("up: a rebase is stopped at b-sign.patch")
                   for note in document.get("notes", [])), (args, document)
        assert err == "", err
    stack.cli("rebase", "--abort")
    for args in (("lint", "--no-forge"), ("overlays", "--check")):
        document = json.loads(stack.cli(*args, "--json")[1])
        assert document["ok"] is True and "notes" not in document, (args, document)


def test_read_only_documents_carry_what_is_open(tmp_path):
    """A read-only command says a stopped rebase or an open edit on stderr, and under --json
    does not (stdout is one document, and a terminal mixes the two): `list`, `show`,
    `upstream list`, `ledger --check` and `verify` with --json said nothing of either, so a
    script read the series being rebased as the one in force; `fetch` said it nowhere. Each document carries them in
    `notes`, as `status --json` and `check --json` do; none when nothing is open."""
    from test_ledger import B, make_stack

    stack = make_stack(tmp_path)
    stack.cli("overlays")
    stack.cli("ledger")
    runs = {"list": ("list",), "show": ("show", "a-sign"), "upstreams": ("upstream", "list"),
            "ledger": ("ledger", "--check"), "verify": ("verify",), "fetch": ("fetch",)}
    for schema, args in runs.items():
        document = json.loads(stack.cli(*args, "--json")[1])
        assert "notes" not in document, (args, document)
    stack.cli("edit", "a-sign")
    for schema, args in runs.items():
        document = json.loads(stack.cli(*args, "--json")[1])
        assert validation_errors(document, schema) == [], (args, document)
        assert any("a-sign.patch is being edited" in note for note in document["notes"]), \
            (args, document)
    stack.cli("edit", "--close")
    stack.commit({"pkg/b.py": B.replace(b"    return 7\n", b"    return 70\n")}, "v2",
                 tag="v2")
    stack.cli("rebase", "--to", "v2", expect=3)
    for schema, args in runs.items():
        rc, out, err = stack.cli(*args, "--json", expect=None)
        document = json.loads(out)
        assert validation_errors(document, schema) == [], (args, document)
        assert any(note.startswith("up: a rebase is stopped at b-sign.patch")
                   for note in document["notes"]), (args, document)
        assert err == "", (args, err)
        # Without --json, each says it on stderr (`fetch` said nothing of it).
        assert "note: up: a rebase is stopped at b-sign.patch" in stack.cli(*args, expect=None)[2]


def test_documents_validate_against_their_schemas(tmp_path):
    root, commit = git_project(tmp_path, profiles={"gfx942": "MI300X", "gfx950": "MI355X"})
    series = root / "series" / "up"
    series.mkdir(parents=True, exist_ok=True)
    patch = forwarded_patch(1, 4).replace(b"Description:", b"Profiles: gfx942, gfx950\n"
                                                            b"Author: A <a@example.com>\n"
                                                            b"Description:")
    (series / "fix.patch").write_bytes(patch)
    (series / "series").write_text("fix.patch\n")
    ok(root, "overlays")
    runs = {
        "list": ["list"], "show": ["show", "fix"], "status": ["--offline", "status"],
        "lint": ["lint", "--no-forge"], "overlays": ["overlays", "--check"],
        "verify": ["verify"], "fetch": ["fetch"], "upstreams": ["upstream", "list"],
        "check": ["check"], "pr": ["pr", "fix"],
        "ledger": ["ledger"], "rebase": ["rebase", "--to", "main", "--dry-run"],
    }
    for schema, args in runs.items():
        run = run_cli(root, *args, "--json")
        assert run.rc in (0, 1), (args, run.err)
        document = json.loads(run.out)
        assert document["schema_version"] == 1, args
        assert validation_errors(document, schema) == [], (args, document)
        if schema == "list":
            assert document["patches"][0]["profiles"] == ["gfx942", "gfx950"]
    upstream2 = Upstream(tmp_path / "second", {"x.py": b"x = 1\n"}).path
    run = run_cli(root, "upstream", "add", "second", "--git", str(upstream2), "--at", "main", "--json")
    assert validation_errors(json.loads(run.out), "pin") == []
    ok(root, "edit", "fix")
    run = run_cli(root, "refresh", "--json")
    assert validation_errors(json.loads(run.out), "refresh") == []


def test_documents_are_utf_8_json_whatever_bytes_a_patch_holds(tmp_path):
    """A patch whose header holds a byte that is not UTF-8 (a Latin-1 `é`): `show --json` and
    `list --json` printed that raw byte inside a JSON string, so the document was not UTF-8 and
    json.loads (and jq) refused it. Now such a byte is written as its \\\\udcXX escape: the
    document is UTF-8, and the value encodes back (surrogateescape) to the patch's own bytes."""
    root, base = git_project(tmp_path)
    diff = (b"diff --git a/pkg/b.py b/pkg/b.py\n--- a/pkg/b.py\n+++ b/pkg/b.py\n"
            b"@@ -1,3 +1,3 @@\n x = 1\n-y = 2\n+y = 20\n z = 3\n")
    (root / "series/up").mkdir(parents=True, exist_ok=True)
    (root / "series/up/fix.patch").write_bytes(
        b"Description: Corrig\xe9\nAuthor: Ren\xe9 <r@example.com>\nUpstream-Status: Pending\n"
        b"Upstream: up\nBase: " + base.encode() + b"\n\n---\n" + diff)
    (root / "series/up/series").write_bytes(b"fix.patch\n")
    for command in (("show", "fix"), ("list",)):
        run = run_cli(root, *command, "--json")
        assert run.rc == 0, run.err
        document = json.loads(run.stdout.decode("utf-8"))
        text = json.dumps(document, ensure_ascii=False)
        assert "Corrig\udce9".encode("utf-8", "surrogateescape") == b"Corrig\xe9"
        assert "Corrig\udce9" in text, command


def _random_value(rng, depth: int):
    """A JSON-able value of every kind json.dumps treats apart: strings with quotes, escapes,
    control characters, non-ASCII and lone surrogates, ints and their subclasses (bool,
    IntEnum), floats with NaN and infinities, None, empty and nested lists, tuples, dicts."""
    import enum

    class Level(enum.IntEnum):
        LOW = 1

    kinds = ["str", "int", "float", "none", "bool", "enum"] + (["list", "tuple", "dict"] * 2
                                                               if depth < 4 else [])
    kind = rng.choice(kinds)
    if kind == "str":
        return "".join(rng.choice(['a', '"', '\\', '\n', '\t', '\x01', '\x7f', 'é', '\u2028',
                                   '\udce9', '😀', ' ', '/']) for _ in range(rng.randrange(6)))
    if kind == "int":
        return rng.choice([0, -1, 7, 2 ** 70, -(2 ** 64)])
    if kind == "float":
        return rng.choice([0.0, -0.0, 1.5, 1e300, 1e-7, float("nan"), float("inf"),
                           float("-inf"), 0.1 + 0.2])
    if kind == "none":
        return None
    if kind == "bool":
        return rng.choice([True, False])
    if kind == "enum":
        return Level.LOW
    items = [_random_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    if kind == "list":
        return items
    if kind == "tuple":
        return tuple(items)
    return {"".join(rng.choice('ab"é\u2028') for _ in range(rng.randrange(4))): item
            for item in items}


def test_json_text_is_what_json_dumps_writes():
    """emit_json's encoder (cli.output.json_text) writes each document character for character
    as json.dumps(indent=2, sort_keys=True, ensure_ascii=False) does, on random documents of
    every kind of value; a document it does not handle (a key that is not a string, a value
    json cannot write) goes to json.dumps whole, with its answer or its error."""
    import random

    import pytest

    from patchforge.cli.output import json_text

    rng = random.Random(19)
    for _ in range(3000):
        document = _random_value(rng, 0)
        assert json_text(document) == json.dumps(document, indent=2, sort_keys=True,
                                                 ensure_ascii=False), repr(document)
    mixed = {"a": [1, {2: "int key", 1: None}], "b": ()}
    assert json_text(mixed) == json.dumps(mixed, indent=2, sort_keys=True, ensure_ascii=False)
    with pytest.raises(TypeError):
        json_text({"path": object()})


def test_an_error_with_json_is_one_json_document_too(tmp_path):
    """A script reads stdout of `COMMAND --json`: an error before the command's document
    (bad input, a refusal, bad usage) printed nothing there, and `json.load` failed with
    "Expecting value". It is one document, error.schema.json's, saying what stderr says."""
    root, _ = git_project(tmp_path)
    series = root / "series" / "up"
    series.mkdir(parents=True, exist_ok=True)
    (series / "fix.patch").write_bytes(forwarded_patch(1, 4))
    (series / "series").write_text("fix.patch\n")
    ok(root, "overlays")

    def error_of(*args: str) -> dict:
        run = run_cli(root, *args)
        assert run.rc == 2, (args, run.err)
        document = json.loads(run.out)
        assert validation_errors(document, "error") == [], (args, document)
        error = document["error"]
        assert error["exit_code"] == 2 and error["message"] in run.err, (args, run.err)
        if error["hint"]:
            assert error["hint"] in run.err
        return error

    # A rebase and a status read without click, the others through it.
    assert "nope" in error_of("status", "--json", "--against", "nope")["message"]
    assert "starts a rebase" in error_of("rebase", "--continue", "--json")["hint"]
    error_of("list", "--json", "--no-such-option")
    (series / "fix.patch").write_bytes(b"garbage\n")
    for command in ("status", "list"):  # (lint makes it a finding, exit 1)
        error = error_of(command, "--json")
        assert "series/up/fix.patch" in error.get("file", "") + error["message"], error
    # An error naming its file and line gives them as fields.
    config = root / "pyproject.toml"
    config.write_text(config.read_text().replace("[tool.patchforge]\n",
                                                 "[tool.patchforge]\ncolour = 1\n", 1))
    error = error_of("list", "--json")
    assert error["file"].endswith("pyproject.toml") and isinstance(error["line"], int), error
    # Without --json stdout stays empty, as before.
    assert run_cli(root, "list").stdout == b""
