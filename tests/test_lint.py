"""`patchforge lint` through the CLI, one real project per finding (a real git upstream, the test
forge on 127.0.0.1 for pull requests), `--json` validated against lint.schema.json, and the real
example stack of this repository."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from patchforge.formats.schemas import validation_errors
from helpers.cli import run_cli
from helpers.env import REPO_ROOT
from helpers.project import add_patch_file
from helpers.snapshot import snapshot
from helpers.template import build_template

AUTHOR = b"Author: A U Thor <author@example.com>\n"
FIELDS = b"Description: a fix\n" + AUTHOR + b"Upstream-Status: Pending\n"
# As git writes it with patchforge's options (3 lines of context), minus the index line: canonical
# up to a cosmetic difference, so that each test sees only the finding it is about.
MODIFY_A = (b"diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n"
            b"@@ -1,5 +1,5 @@\n line1\n-line2\n+LINE2\n line3\n line4\n line5\n")
MODIFY_MOD = (b"diff --git a/pkg/mod.py b/pkg/mod.py\n--- a/pkg/mod.py\n+++ b/pkg/mod.py\n"
              b"@@ -1,3 +1,3 @@\n x = 1\n-y = 2\n+y = 20\n z = 3\n")


def patch(fields: bytes, diff: bytes = MODIFY_A) -> bytes:
    return fields + b"\n---\n" + diff


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    return build_template(tmp_path_factory)


def lint_json(root: Path, *extra: str):
    before = snapshot(root)
    r = run_cli(root, "lint", "--json", *extra)
    assert snapshot(root) == before  # lint never writes
    document = json.loads(r.out)
    assert validation_errors(document, "lint") == []
    assert document["ok"] == (r.rc == 0)
    assert r.rc in (0, 1), r.text
    return r.rc, document


def findings(document, check: str | None = None, patch_name: str | None = None):
    return [f for f in document["findings"]
            if (check is None or f["check"] == check)
            and (patch_name is None or f["patch"] == f"up/{patch_name}")]


def errors(document):
    return [f for f in document["findings"] if f["severity"] == "error"]


def test_clean_series_passes(env, tmp_path, monkeypatch):
    root = env.fresh(tmp_path, monkeypatch)
    r = run_cli(root, "import", "overlay", str(_write(tmp_path / "o", b"line1\nLINE2\nline3\n"
                                                      b"line4\nline5\nline6\nline7\nline8\n")),
                "--upstream", "up", "--path", "a.txt", "--name", "good")
    assert r.rc == 0, r.text
    rc, doc = lint_json(root, "--no-forge")
    assert rc == 0 and errors(doc) == [], doc
    assert not findings(doc, "byte-stable")  # made by patchforge: canonical


def test_an_upstream_with_fixes_and_no_install_root_is_warned(env, tmp_path, monkeypatch):
    """An upstream added without --install-root: `overlays` writes a compose.yaml with
    `volumes: []` and a Dockerfile copying nothing, warning only as it writes; the stack's CI
    (`overlays --check`, `lint`, even `--warnings-fail`) was green while no deployment had the
    fix. lint warns, naming the table and the key; with the key set it says nothing."""
    root = env.fresh(tmp_path, monkeypatch)
    r = run_cli(root, "import", "overlay", str(_write(tmp_path / "o", b"line1\nLINE2\nline3\n"
                                                      b"line4\nline5\nline6\nline7\nline8\n")),
                "--upstream", "up", "--path", "a.txt", "--name", "good")
    assert r.rc == 0, r.text
    _, doc = lint_json(root, "--no-forge")
    assert not findings(doc, "overlays")  # no overlays/: nothing is deployed through it
    assert run_cli(root, "overlays").rc == 0
    rc, doc = lint_json(root, "--no-forge", "--warnings-fail")
    [found] = [f for f in doc["findings"] if f["check"] == "overlays"]
    assert rc == 1 and found["patch"] == "up" and found["severity"] == "warning", doc
    assert "no install-root is configured" in found["message"]
    assert "install-root = \"DIR\"" in found["message"] and "upstreams.up]" in found["message"]
    config = next(p for p in (root / "patchforge.toml", root / "pyproject.toml") if p.exists())
    text = config.read_text()
    marker = next(line for line in text.splitlines() if line.endswith("upstreams.up]"))
    config.write_text(text.replace(marker, marker + '\ninstall-root = "/opt/site"'))
    assert run_cli(root, "overlays").rc == 0
    _, doc = lint_json(root, "--no-forge")
    assert not findings(doc, "overlays"), doc


@pytest.mark.parametrize("pyproject", [False, True])
def test_the_install_root_advice_names_a_dotted_upstreams_table_as_toml_reads_it(
        tmp_path, monkeypatch, pyproject):
    """An upstream named `vllm.rocm`: its table is `[upstreams."vllm.rocm"]`, and the warning
    named `[upstreams.vllm.rocm]`, a table `rocm` inside a table `vllm` (the key added there
    made the configuration invalid, the upstream still without an install root). The table
    the warning names, read by tomllib, is the upstream's; it is the header the file has,
    and the key added under it is the upstream's install root for patchforge's loader."""
    import re
    import tomllib

    from helpers.project import add_git_upstream, make_project
    from helpers.upstream import Upstream
    from patchforge.formats.config import load_config

    monkeypatch.setenv("PATCHFORGE_CACHE", str(tmp_path / "cache"))
    upstream = Upstream(tmp_path / "up", {"a.txt": b"".join(b"line%d\n" % i
                                                            for i in range(1, 9))})
    root = make_project(tmp_path / "project", pyproject=pyproject)
    add_git_upstream(root, "vllm.rocm", upstream.path, "main", install_root=None)
    r = run_cli(root, "import", "overlay", str(_write(tmp_path / "o", b"line1\nLINE2\nline3\n"
                                                      b"line4\nline5\nline6\nline7\nline8\n")),
                "--upstream", "vllm.rocm", "--path", "a.txt", "--name", "good")
    assert r.rc == 0, r.text
    assert run_cli(root, "overlays").rc == 0
    _, doc = lint_json(root, "--no-forge")
    [found] = [f for f in doc["findings"] if f["check"] == "overlays"]
    config = root / ("pyproject.toml" if pyproject else "patchforge.toml")
    named = re.search(r"to the \[(.+?)\] table of (\S+)", found["message"])
    assert named and named.group(2) == config.name, found["message"]
    table = named.group(1)
    read = tomllib.loads(f'[{table}]\ninstall-root = "/opt/site"\n')
    if pyproject:
        read = read["tool"]["patchforge"]
    assert read == {"upstreams": {"vllm.rocm": {"install-root": "/opt/site"}}}, read
    text = config.read_text()
    assert f"[{table}]\n" in text, text
    config.write_text(text.replace(f"[{table}]\n", f'[{table}]\ninstall-root = "/opt/site"\n'))
    assert load_config(config).upstreams["vllm.rocm"].install_root == "/opt/site"
    assert run_cli(root, "overlays").rc == 0
    _, doc = lint_json(root, "--no-forge")
    assert not findings(doc, "overlays"), doc


def test_a_stack_without_the_text_attributes_is_warned(env, tmp_path, monkeypatch):
    """A stack made before init wrote the `-text` attributes: core.autocrlf would change its
    patches' line ends. lint names the lines missing (a warning) and is quiet once they are in."""
    root = env.fresh(tmp_path, monkeypatch)
    attributes = root / ".gitattributes"
    written = attributes.read_bytes() if attributes.exists() else b""
    attributes.write_bytes(b"".join(line + b"\n" for line in written.split(b"\n")
                                    if line and not line.endswith(b" -text")))
    rc, doc = lint_json(root, "--no-forge")
    assert not findings(doc, "attributes")  # no patches yet: nothing to keep
    add_patch_file(root, "up", "fix.patch", patch(FIELDS))
    rc, doc = lint_json(root, "--no-forge")
    [warning] = [f for f in doc["findings"] if f["check"] == "attributes"]
    assert warning["patch"] == ".gitattributes" and warning["severity"] == "warning"
    assert "`/series/**/*.patch -text`" in warning["message"]
    assert "`/upstream.lock -text`" in warning["message"]
    attributes.write_bytes(attributes.read_bytes() + b"/series/**/*.patch -text\n"
                           b"/series/**/series -text\n/upstream.lock -text\n/overlays/** -text\n")
    rc, doc = lint_json(root, "--no-forge")
    assert not [f for f in doc["findings"] if f["check"] == "attributes"]


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


@pytest.mark.parametrize("fields,expected,severity", [
    (b"Description: x\n" + AUTHOR, "no Upstream-Status", "error"),
    (b"Description: x\n" + AUTHOR + b"Upstream-Status: Maybe\n", "is not one of", "error"),
    (AUTHOR + b"Upstream-Status: Pending\n", "no Description", "error"),
    (b"Description: x\nUpstream-Status: Pending\n", "neither Origin nor Author", "error"),
    (FIELDS + b"Upstream: other\n", "but it is in the up series", "error"),
    (b"Description: x\n" + AUTHOR + b"Upstream-Status: Submitted\n", "without the pull request",
     "warning"),
    (b"Description: x\n" + AUTHOR + b"Upstream-Status: Inappropriate\n", "without the reason",
     "warning"),
    (FIELDS + b"Base: " + b"0" * 40 + b"\n", "is not the locked revision", "warning"),
    # A second value of a one-value field: a reviewer may read it, patchforge reads the first.
    (FIELDS + b"Upstream-Status: Submitted [https://x/pull/1]\n",
     "Upstream-Status is written 2 times", "error"),
])
def test_header_findings(env, tmp_path, monkeypatch, fields, expected, severity):
    root = env.fresh(tmp_path, monkeypatch)
    add_patch_file(root, "up", "fix.patch", patch(fields))
    rc, doc = lint_json(root, "--no-forge")
    found = [f for f in findings(doc, "header", "fix.patch") if expected in f["message"]]
    assert found and found[0]["severity"] == severity, doc
    assert rc == (1 if severity == "error" else 0)


@pytest.mark.parametrize("field,line", [
    (b"Author: Ada Lovelace\n", 2),
    (b"Author: Ada Lovelace <ada@example.com>, Grace Hopper\n", 2),
    (AUTHOR + b"Co-authored-by: Grace Hopper\n", 3),
])
def test_a_person_named_without_an_email_address_is_said_with_its_line(env, tmp_path,
                                                                       monkeypatch, field, line):
    """`Author: Ada Lovelace` passed lint, while `pr` refuses it (its commit needs an address)
    and `git am` stops on the mail `export --mbox` writes of it (`empty ident name`): CI's lint
    was green on a fix that could go nowhere. Lint says it, naming the line. The mirror: a
    person with an address, or several (`A <a@x>, B <b@x>`), is no finding, nor is a name with
    a comma in it as git writes it (`Lovelace, Ada <ada@example.com>`, which `import git` of
    such a commit writes), which `pr` read as two people, the first with no address."""
    root = env.fresh(tmp_path, monkeypatch)
    add_patch_file(root, "up", "fix.patch",
                   patch(b"Description: x\n" + field + b"Upstream-Status: Pending\n"))
    rc, doc = lint_json(root, "--no-forge")
    name = field.split(b"\n")[-2].split(b":")[0].decode()
    found = [f["message"] for f in findings(doc, "header", "fix.patch") if "email" in f["message"]]
    assert len(found) == 1 and found[0].startswith(f"line {line}: {name}: "), doc
    assert f"`{name}: Full Name <user@example.com>`" in found[0] and rc == 1, doc

    for fine in (b"Author: Ada Lovelace <ada@example.com>, Grace Hopper <grace@example.com>\n"
                 b"Co-authored-by: Alan Turing <alan@example.com>\n",
                 b"Author: Lovelace, Ada <ada@example.com>\n",
                 b"Author: Ada Lovelace <ada@example.com>\n Lovelace, Byron <byron@example.com>\n"):
        (root / "series/up/fix.patch").write_bytes(
            patch(b"Description: x\n" + fine + b"Upstream-Status: Pending\n"))
        rc, doc = lint_json(root, "--no-forge")
        assert [f for f in findings(doc, "header", "fix.patch") if "email" in f["message"]] == [], \
            doc


def test_a_base_written_short_or_in_capitals_is_said_so(env, tmp_path, monkeypatch):
    """The locked commit as Base, abbreviated or in capitals: lint said "Base 9739b0b0604a is
    not the locked revision 9739b0b0604a", two equal ids. It says what is wrong now."""
    root = env.fresh(tmp_path, monkeypatch)
    commit = json.loads((root / "upstream.lock").read_text())["upstreams"]["up"]["commit"]
    path = add_patch_file(root, "up", "fix.patch", patch(FIELDS))
    for base in (commit[:12], commit.upper()):
        path.write_bytes(patch(FIELDS + b"Base: " + base.encode() + b"\n"))
        rc, doc = lint_json(root, "--no-forge")
        found = [f["message"] for f in findings(doc, "header", "fix.patch") if "Base" in
                 f["message"]]
        assert found == [f"Base {base} is the locked revision written short or in capitals: "
                         f"write its full id, in lower case ({commit})"], doc
        assert rc == 0, doc


def test_a_deciding_field_written_twice_is_a_parse_error(env, tmp_path, monkeypatch):
    """A second Upstream (Base, Profiles, Drop-When) is refused when the patch is read, by
    every command: lint reports it as the patch's parse error, naming its line."""
    root = env.fresh(tmp_path, monkeypatch)
    add_patch_file(root, "up", "fix.patch", patch(FIELDS + b"Upstream: up\nUpstream: other\n"))
    rc, doc = lint_json(root, "--no-forge")
    found = [f for f in findings(doc, "parse", "fix.patch")
             if "'Upstream:' is written twice" in f["message"]]
    assert found and found[0]["severity"] == "error" and rc == 1, doc


@pytest.mark.parametrize("twin", ["FIX.patch", "fi\u0302x.patch"])
def test_two_patch_files_one_file_system_holds_as_one_are_an_error(env, tmp_path, monkeypatch,
                                                                   twin):
    """A merge that brought FIX.patch beside fix.patch (or `f\u00eex` beside `fi` + a
    combining accent + `x`) into the series: new, rename and the imports refuse such a name,
    but a pull request asks none of them, and a checkout on macOS or Windows keeps one of the
    two fixes. lint says so (exit 1), naming both."""
    root = env.fresh(tmp_path, monkeypatch)
    first = "f\u00eex.patch" if "\u0302" in twin else "fix.patch"
    add_patch_file(root, "up", first, patch(FIELDS))
    add_patch_file(root, "up", twin, patch(FIELDS, MODIFY_MOD))
    rc, doc = lint_json(root, "--no-forge")
    found = [f for f in doc["findings"] if f["check"] == "series" and "one file on macOS" in
             f["message"]]
    assert rc == 1 and len(found) == 1 and first in found[0]["message"] and \
        twin in found[0]["message"], doc


def test_a_series_holding_a_name_windows_cannot_check_out_is_warned_with_the_rename(
        env, tmp_path, monkeypatch):
    """A series made before such names were refused (or a merge) holds `x:y.patch` and
    `aux.patch`: git for Windows stops the clone of the whole stack on them, and lint said
    nothing. The series is read as before (status, lint's other checks); lint warns (exit 0),
    naming each patch, why, and the `rename` that fixes it, which then works."""
    root = env.fresh(tmp_path, monkeypatch)
    add_patch_file(root, "up", "x:y.patch", patch(FIELDS))
    add_patch_file(root, "up", "aux.patch", patch(FIELDS, MODIFY_MOD))
    add_patch_file(root, "up", "aux_.patch", patch(
        FIELDS, MODIFY_MOD.replace(b"-y = 2\n+y = 20", b"-y = 20\n+y = 21")))
    rc, doc = lint_json(root, "--no-forge")
    assert rc == 0 and errors(doc) == [], doc
    colon, device = findings(doc, "series", "x:y.patch"), findings(doc, "series", "aux.patch")
    assert [f["severity"] for f in colon + device] == ["warning", "warning"], doc
    assert colon[0]["message"] == (
        "x:y.patch cannot be checked out on Windows: ':' cannot be in a file name on Windows "
        "(git for Windows stops the clone of the whole stack); `patchforge rename x:y x-y` "
        "gives it a name every checkout can write"), colon
    # aux_ is taken: the name said is free.
    assert "'aux' is a device name Windows reserves (with any extension)" in \
        device[0]["message"] and "`patchforge rename aux aux_-2`" in device[0]["message"], device
    assert findings(doc, "series", "aux_.patch") == []
    assert run_cli(root, "status").rc in (0, 1)  # read as before
    for command in ("rename x:y x-y", "rename aux aux_-2"):
        result = run_cli(root, *command.split())
        assert result.rc == 0, result.text
    rc, doc = lint_json(root, "--no-forge")
    assert not [f for f in doc["findings"] if "Windows" in f["message"]], doc


def test_a_series_holding_a_name_no_branch_can_carry_is_warned_with_the_rename(
        env, tmp_path, monkeypatch):
    """A series made before such names were refused holds `pin-torch-in-uv.lock.patch` (an
    import named it from a commit "Pin torch in uv.lock"): its pull request's branch,
    patchforge/pin-torch-in-uv.lock, is no git branch, and `pr --push` refuses it, while lint
    said nothing. lint warns (exit 0), naming the patch, why, and the `rename` that fixes it,
    which then works."""
    root = env.fresh(tmp_path, monkeypatch)
    add_patch_file(root, "up", "pin-torch-in-uv.lock.patch", patch(FIELDS))
    rc, doc = lint_json(root, "--no-forge")
    assert rc == 0 and errors(doc) == [], doc
    (found,) = findings(doc, "series", "pin-torch-in-uv.lock.patch")
    assert found["severity"] == "warning" and found["message"] == (
        "pin-torch-in-uv.lock.patch cannot name its pull request's branch "
        "(patchforge/pin-torch-in-uv.lock): git refuses a branch name ending in '.lock', and "
        "`pr --push` refuses it; `patchforge rename pin-torch-in-uv.lock pin-torch-in-uv-lock` "
        "gives it a name a branch can carry"), found
    result = run_cli(root, "rename", "pin-torch-in-uv.lock", "pin-torch-in-uv-lock")
    assert result.rc == 0, result.text
    rc, doc = lint_json(root, "--no-forge")
    assert not [f for f in doc["findings"] if "branch" in f["message"]], doc


def test_origin_without_author_is_enough(env, tmp_path, monkeypatch):
    root = env.fresh(tmp_path, monkeypatch)
    add_patch_file(root, "up", "fix.patch", patch(b"Description: x\nOrigin: vendor\nUpstream-Status: "
                                       b"Backport [abc123]\n"))
    rc, doc = lint_json(root, "--no-forge")
    assert [f for f in findings(doc, "header", "fix.patch") if "Base" not in f["message"]] == [], doc
    assert rc == 0


def test_unlisted_and_missing_patches(env, tmp_path, monkeypatch):
    root = env.fresh(tmp_path, monkeypatch)
    add_patch_file(root, "up", "fix.patch", patch(FIELDS))
    (root / "series/up/stray.patch").write_bytes(patch(FIELDS, MODIFY_MOD))
    with open(root / "series/up/series", "ab") as series:
        series.write(b"ghost.patch\n")
    rc, doc = lint_json(root, "--no-forge")
    assert rc == 1
    assert "not listed" in findings(doc, "series", "stray.patch")[0]["message"]
    assert "missing" in findings(doc, "series", "ghost.patch")[0]["message"]
    assert findings(doc, "parse") == []  # the missing file is reported once, as a series finding


def test_duplicate_entry_and_duplicate_change(env, tmp_path, monkeypatch):
    root = env.fresh(tmp_path, monkeypatch)
    add_patch_file(root, "up", "fix.patch", patch(FIELDS))
    add_patch_file(root, "up", "again.patch", patch(b"Description: the same\n" + AUTHOR +
                                         b"Upstream-Status: Pending\n"))
    rc, doc = lint_json(root, "--no-forge")
    assert rc == 1
    assert "same diff as up/fix.patch" in findings(doc, "series", "again.patch")[0]["message"]
    with open(root / "series/up/series", "ab") as series:
        series.write(b"fix.patch\n")
    rc, doc = lint_json(root, "--no-forge")
    assert rc == 1 and any("listed twice" in f["message"] for f in findings(doc, "series")), doc


def _git_diff(env, tmp_path, *options: str) -> bytes:
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(env.upstream), str(clone)], check=True)
    (clone / "a.txt").write_bytes((clone / "a.txt").read_bytes().replace(b"line5", b"LINE5"))
    return subprocess.run(["git", "diff", *options], cwd=clone, capture_output=True,
                          check=True).stdout


def test_byte_stability_abbreviated_index_is_a_warning(env, tmp_path, monkeypatch):
    root = env.fresh(tmp_path, monkeypatch)
    add_patch_file(root, "up", "fix.patch", patch(FIELDS, _git_diff(env, tmp_path, "--abbrev=12")))
    rc, doc = lint_json(root, "--no-forge")
    (found,) = findings(doc, "byte-stable", "fix.patch")
    assert found["severity"] == "warning" and "only index lines differ" in found["message"]
    assert rc == 0


def test_byte_stability_other_diff_options_are_an_error(env, tmp_path, monkeypatch):
    root = env.fresh(tmp_path, monkeypatch)
    add_patch_file(root, "up", "fix.patch", patch(FIELDS, _git_diff(env, tmp_path, "-U1")))
    rc, doc = lint_json(root, "--no-forge")
    (found,) = findings(doc, "byte-stable", "fix.patch")
    assert found["severity"] == "error" and "diff: line" in found["message"]
    assert rc == 1


def test_git_diff_of_a_name_with_a_space_is_byte_stable(env, tmp_path, monkeypatch):
    """git ends a `---`/`+++` name that holds a space with a tab (GNU patch reads a name up to
    a tab). patchforge's own diffs left it out: lint called git's own `git diff --full-index`
    not byte-stable (an error), and `refresh` rewrote it into lines that `patch` and
    `quilt push` cut at the space. The file is created, so the test needs no upstream file."""
    root = env.fresh(tmp_path, monkeypatch)
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(env.upstream), str(clone)], check=True)
    (clone / "new file.txt").write_bytes(b"created\n")
    subprocess.run(["git", "add", "-A"], cwd=clone, check=True)
    diff = subprocess.run(["git", "diff", "--cached", "--full-index"], cwd=clone,
                          capture_output=True, check=True).stdout
    assert b"+++ b/new file.txt\t\n" in diff
    add_patch_file(root, "up", "fix.patch", patch(FIELDS, diff))
    rc, doc = lint_json(root, "--no-forge")
    assert findings(doc, "byte-stable", "fix.patch") == [] and rc == 0, doc


def _with_profiles(root: Path) -> None:
    config = root / "patchforge.toml"
    text = config.read_bytes()
    assert b"[profiles]\n" in text
    config.write_bytes(text.replace(b"[profiles]\n", b'[profiles]\ngfx942 = "MI300X"\n'
                                                     b'gfx950 = "MI355X"\n', 1))


def test_fuzz_and_failure_per_profile(env, tmp_path, monkeypatch):
    root = env.fresh(tmp_path, monkeypatch)
    _with_profiles(root)
    # On gfx950 an earlier patch changes line1. The next one, for every profile, is made on
    # the upstream (its base) and goes into gfx950's series by a 3-way merge, as overlays put
    # it there: no fuzz anywhere. A fix for gfx950 alone made without first's change (its
    # base holds it) applies only with fuzz, on gfx950.
    add_patch_file(root, "up", "first.patch", patch(FIELDS + b"Profiles: gfx950\n", (
        b"diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n"
        b"@@ -1,4 +1,4 @@\n-line1\n+LINE1\n line2\n line3\n line4\n")))
    add_patch_file(root, "up", "second.patch", patch(b"Description: y\n" + AUTHOR +
                                          b"Upstream-Status: Pending\n", (
        b"diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n"
        b"@@ -1,6 +1,6 @@\n line1\n line2\n-line3\n+LINE3\n line4\n line5\n line6\n")))
    add_patch_file(root, "up", "third.patch", patch(b"Description: t\n" + AUTHOR +
                                         b"Upstream-Status: Pending\nProfiles: gfx950\n", (
        b"diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n"
        b"@@ -1,5 +1,5 @@\n line1\n line2\n LINE3\n-line4\n+LINE4\n line5\n")))
    add_patch_file(root, "up", "broken.patch", patch(b"Description: z\n" + AUTHOR +
                                          b"Upstream-Status: Pending\n", (
        b"diff --git a/pkg/mod.py b/pkg/mod.py\n--- a/pkg/mod.py\n+++ b/pkg/mod.py\n"
        b"@@ -1,3 +1,3 @@\n x = 1\n-y = 99\n+y = 20\n z = 3\n")))
    rc, doc = lint_json(root, "--no-forge")
    assert rc == 1
    assert findings(doc, "fuzz", "second.patch") == [] and \
        findings(doc, "apply", "second.patch") == [], doc
    fuzz = findings(doc, "fuzz", "third.patch")
    assert len(fuzz) == 1 and "(profile gfx950)" in fuzz[0]["message"], doc
    assert "a.txt hunk #1 (fuzz " in fuzz[0]["message"]
    # A patch for every profile that does not apply on its base: said once, for all of them.
    broken = findings(doc, "apply", "broken.patch")
    assert len(broken) == 1 and "(every profile)" in broken[0]["message"], doc
    assert "pkg/mod.py hunk #1" in broken[0]["message"]


def test_zero_context_hunks_and_binary_changes_without_data(env, tmp_path, monkeypatch):
    root = env.fresh(tmp_path, monkeypatch)
    add_patch_file(root, "up", "u0.patch", patch(FIELDS, b"diff --git a/a.txt b/a.txt\n--- a/a.txt\n"
                                              b"+++ b/a.txt\n@@ -5 +5 @@\n-line5\n+LINE5\n"))
    add_patch_file(root, "up", "bin.patch", patch(b"Description: b\n" + AUTHOR + b"Upstream-Status: Pending\n",
                                       b"diff --git a/x.bin b/x.bin\nnew file mode 100644\n"
                                       b"Binary files /dev/null and b/x.bin differ\n"))
    rc, doc = lint_json(root, "--no-forge")
    assert rc == 1
    assert "line 9 of the patch file" in findings(doc, "zero-context", "u0.patch")[0]["message"]
    # A binary change without its data cannot be carried: the file is not a valid patch.
    assert "x.bin: a binary change without its data" in \
        findings(doc, "parse", "bin.patch")[0]["message"]


def test_keeps_invariant_broken_by_a_later_patch(env, tmp_path, monkeypatch):
    root = env.fresh(tmp_path, monkeypatch)
    add_patch_file(root, "up", "fix.patch", patch(FIELDS + b"Keeps: a.txt: LINE2\n"))
    add_patch_file(root, "up", "undo.patch", patch(b"Description: undo\n" + AUTHOR +
                                        b"Upstream-Status: Pending\n", (
        b"diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n"
        b"@@ -1,5 +1,5 @@\n line1\n-LINE2\n+line2\n line3\n line4\n line5\n")))
    rc, doc = lint_json(root, "--no-forge")
    assert rc == 1
    assert findings(doc, "keeps", "fix.patch"), doc


def _with_forge(root: Path, url: str) -> None:
    config = root / "patchforge.toml"
    config.write_bytes(config.read_bytes().replace(b'api-url = "https://api.github.com"',
                                                   f'api-url = "{url}"'.encode()))


def test_submitted_fix_whose_pull_request_closed_unmerged(env, tmp_path, monkeypatch,
                                                          forge_server):
    root = env.fresh(tmp_path, monkeypatch)
    _with_forge(root, forge_server.url)
    url = b"https://github.com/o/r/pull/5"
    add_patch_file(root, "up", "fix.patch", patch(b"Description: x\n" + AUTHOR + b"Forwarded: " + url +
                                       b"\nUpstream-Status: Submitted [" + url + b"]\n"))
    forge_server.add_pull("o/r", 5, state="closed", merged=False)
    rc, doc = lint_json(root)
    assert rc == 1
    (found,) = findings(doc, "forwarded", "fix.patch")
    assert found["severity"] == "error" and "closed without being merged" in found["message"]
    # With --no-forge the forge is not asked at all.
    asked = len(forge_server.requests)
    rc, doc = lint_json(root, "--no-forge")
    assert rc == 0 and len(forge_server.requests) == asked


def test_forge_failure_is_a_warning_not_a_pass(env, tmp_path, monkeypatch,
                                               forge_server):
    root = env.fresh(tmp_path, monkeypatch)
    _with_forge(root, forge_server.url)
    add_patch_file(root, "up", "fix.patch", patch(b"Description: x\n" + AUTHOR + b"Upstream-Status: "
                                       b"Submitted [https://github.com/o/r/pull/404]\n"))
    rc, doc = lint_json(root)
    (found,) = findings(doc, "forwarded", "fix.patch")
    assert found["severity"] == "warning" and "cannot check" in found["message"]


def test_drop_when_already_true(env, tmp_path, monkeypatch, forge_server):
    root = env.fresh(tmp_path, monkeypatch)
    _with_forge(root, forge_server.url)
    pinned = json.loads((root / "upstream.lock").read_text())["upstreams"]["up"]["commit"]
    forge_server.add_pull("o/r", 7, state="closed", merged=True, merge_commit_sha=pinned)
    add_patch_file(root, "up", "fix.patch", patch(FIELDS + b"Drop-When: merged https://github.com/o/r/pull/7\n"))
    rc, doc = lint_json(root)
    assert rc == 1
    assert "is true" in findings(doc, "drop-when", "fix.patch")[0]["message"], doc


def test_drop_when_that_is_not_a_requirement_is_a_finding(env, tmp_path, monkeypatch):
    """A malformed Drop-When is never true, so it would never say to drop the fix: lint says so
    instead of ignoring it."""
    root = env.fresh(tmp_path, monkeypatch)
    add_patch_file(root, "up", "fix.patch", patch(FIELDS + b"Drop-When: up>=>1.0\n"))
    rc, doc = lint_json(root, "--no-forge")
    assert rc == 1
    (found,) = findings(doc, "drop-when", "fix.patch")
    assert found["message"].startswith("Drop-When 'up>=>1.0' is not a requirement: ")
    assert "\n" not in found["message"]


def test_drop_when_on_another_name_is_a_finding(env, tmp_path, monkeypatch):
    """`Drop-When: upp>=1.0` (a typo of the upstream's name) is a valid requirement on another
    package: never evaluated, so the fix would stay after the release that makes it unneeded,
    and lint said nothing. It is an error naming the names that are evaluated."""
    root = env.fresh(tmp_path, monkeypatch)
    add_patch_file(root, "up", "fix.patch", patch(FIELDS + b"Drop-When: upp>=1.0\n"))
    rc, doc = lint_json(root, "--no-forge")
    assert rc == 1
    (found,) = findings(doc, "drop-when", "fix.patch")
    assert found["severity"] == "error"
    assert found["message"].startswith("Drop-When 'upp>=1.0': upp is not this upstream (up)")


def test_drop_when_that_cannot_be_evaluated_is_a_warning(env, tmp_path, monkeypatch):
    """`Drop-When: up>=1.0` on an upstream whose pin has no version (a git commit, a branch) or
    one that is not PEP 440 is never true, so the fix would stay after the release that makes
    it unneeded: lint said nothing. A warning says it cannot be evaluated."""
    root = env.fresh(tmp_path, monkeypatch)
    add_patch_file(root, "up", "fix.patch", patch(FIELDS + b"Drop-When: up>=1.0\n"))
    lock = json.loads((root / "upstream.lock").read_text())
    lock["upstreams"]["up"].pop("version", None)  # a pin of a branch has none
    (root / "upstream.lock").write_text(json.dumps(lock, indent=2, sort_keys=True) + "\n")
    _, doc = lint_json(root, "--no-forge")
    (found,) = findings(doc, "drop-when", "fix.patch")
    assert found["severity"] == "warning"
    assert found["message"].startswith("Drop-When 'up>=1.0' cannot be evaluated for ")
    assert found["message"].endswith("the target's version is unknown"), found
    # A version the pin's label does not name (`nightly` on a pin of the branch `main`) is
    # two revisions in one lock: refused before any fix is judged, naming the lock's line.
    lock["upstreams"]["up"]["version"] = "nightly"
    (root / "upstream.lock").write_text(json.dumps(lock, indent=2, sort_keys=True) + "\n")
    r = run_cli(root, "lint", "--no-forge")
    assert r.rc == 2 and "upstream.lock:" in r.err and "'nightly' is not the version" in r.err, \
        r.text
    # A release before the one that makes the fix unneeded: nothing to say.
    lock["upstreams"]["up"].update(label="v0.5", version="0.5")
    (root / "upstream.lock").write_text(json.dumps(lock, indent=2, sort_keys=True) + "\n")
    _, doc = lint_json(root, "--no-forge")
    assert findings(doc, "drop-when", "fix.patch") == []


def test_text_output_lists_findings_and_exits_1(env, tmp_path, monkeypatch):
    root = env.fresh(tmp_path, monkeypatch)
    add_patch_file(root, "up", "fix.patch", patch(b"Description: x\n" + AUTHOR))
    r = run_cli(root, "lint", "--no-forge")
    assert r.rc == 1
    assert "up/fix.patch" in r.out and "no Upstream-Status" in r.out and "1 error," in r.out


def test_warnings_fail(env, tmp_path, monkeypatch):
    root = env.fresh(tmp_path, monkeypatch)
    add_patch_file(root, "up", "fix.patch", patch(b"Description: x\n" + AUTHOR +
                                       b"Upstream-Status: Submitted\n"))
    assert run_cli(root, "lint", "--no-forge").rc == 0
    assert run_cli(root, "lint", "--no-forge", "--warnings-fail").rc == 1


def test_real_example_stack(shared_cache):
    # The stack in this repository: no errors (warnings: abbreviated index lines, the ledger).
    rc, doc = lint_json(REPO_ROOT, "--no-forge")
    assert errors(doc) == [], doc
    assert rc == 0


DEBIAN = (b"Description: Fix the int32 row offset\n Longer text.\nAuthor: A U Thor <a@example.com>\n"
          b"Origin: upstream, commit:" + b"ab12" * 10 + b"\n"
          b"Bug: https://github.com/o/r/issues/3\n"
          b"Forwarded: not-needed\n"
          b"Applied-Upstream: 1.4.0, commit:" + b"cd34" * 10 + b"\n"
          b"Last-Update: 2024-02-29\n")


def test_pure_dep3_patch_without_upstream_status_passes(env, tmp_path, monkeypatch):
    """A Debian patch says where it stands upstream with DEP-3's own fields."""
    root = env.fresh(tmp_path, monkeypatch)
    add_patch_file(root, "up", "fix.patch", patch(DEBIAN))
    rc, doc = lint_json(root, "--no-forge")
    assert [f for f in findings(doc, "header", "fix.patch") if "Base" not in f["message"]] == [], doc
    assert rc == 0
    for number, fields in enumerate((
            b"Description: x\n" + AUTHOR + b"Forwarded: https://lists.example.org/m/1\n",
            b"Description: x\nOrigin: https://salsa.debian.org/p/-/commit/1\nForwarded: no\n")):
        root = env.fresh(tmp_path / str(number), monkeypatch)
        add_patch_file(root, "up", "fix.patch", patch(fields))
        rc, doc = lint_json(root, "--no-forge")
        assert rc == 0 and errors(doc) == [], doc


@pytest.mark.parametrize("field,expected,severity", [
    (b"Origin: upstream, commit:xyz\n", "`commit:` must be followed by a commit id", "error"),
    (b"Origin: " + b"ab12" * 10 + b"\n", "as `commit:", "warning"),
    (b"Origin: upstrem, https://x.org/c/1\n", "Origin category 'upstrem'", "warning"),
    (b"Forwarded: maybe later\n", "is not no, not-needed, yes or a URL", "warning"),
    (b"Applied-Upstream: commit:nothex\n", "`commit:` must be followed", "error"),
    (b"Applied-Upstream: soon\n", "is not a version, a URL or commit:ID", "warning"),
    (b"Bug: #12\n", "is not a URL", "warning"),
    (b"Last-Update: 2024-02-30\n", "is not a date", "warning"),
    (b"Forwarded: no\nUpstream-Status: Submitted [https://github.com/o/r/pull/1]\n",
     "contradicts Upstream-Status", "error"),
])
def test_dep3_field_forms(env, tmp_path, monkeypatch, field, expected, severity):
    root = env.fresh(tmp_path, monkeypatch)
    add_patch_file(root, "up", "fix.patch", patch(b"Description: x\n" + AUTHOR + field))
    rc, doc = lint_json(root, "--no-forge")
    found = [f for f in findings(doc, "header", "fix.patch") if expected in f["message"]]
    assert found and found[0]["severity"] == severity, doc


def _hooks():
    import yaml

    return {hook["id"]: hook for hook in yaml.safe_load((REPO_ROOT / ".pre-commit-hooks.yaml")
                                                        .read_text())}


def _run_hook(hook: dict, root: Path) -> subprocess.CompletedProcess:
    """A hook's entry as pre-commit runs it (pass_filenames: false): the words of `entry`, with
    the package's `patchforge` on PATH; here `python -m patchforge` stands for that script."""
    import os
    import shlex
    import sys

    words = shlex.split(hook["entry"])
    assert words[0] == "patchforge" and hook["pass_filenames"] is False
    return subprocess.run([sys.executable, "-m", "patchforge", *words[1:]], cwd=root,
                          capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, PYTHONPATH=str(REPO_ROOT)))


def test_pre_commit_hooks_are_offline_and_catch_stale_overlays(env, tmp_path, monkeypatch):
    root = env.fresh(tmp_path, monkeypatch)
    # (Deployable: without an install-root `overlays --check` fails, as `verify` does.)
    config = root / "patchforge.toml"
    config.write_text(config.read_text().replace(
        "[upstreams.up]\n", '[upstreams.up]\ninstall-root = "/opt/site"\n'))
    add_patch_file(root, "up", "fix.patch", patch(FIELDS))
    assert run_cli(root, "overlays").rc == 0
    hooks = _hooks()
    assert set(hooks) == {"patchforge-lint", "patchforge-overlays-check"}
    for hook in hooks.values():
        assert "--offline" in hook["entry"].split()
        # Every commit: a `files` pattern of what they read missed the declared artifacts.
        assert hook["always_run"] is True and "files" not in hook
        assert _run_hook(hook, root).returncode == 0
    # A patch changed without regenerating: both hooks fail, lint naming the overlay metadata.
    (root / "series" / "up" / "fix.patch").write_bytes(
        patch(FIELDS, MODIFY_A.replace(b"+LINE2\n", b"+LINE-TWO\n")))
    lint = _run_hook(hooks["patchforge-lint"], root)
    assert lint.returncode == 1, lint.stdout + lint.stderr
    assert "overlays/SHA256SUMS" in lint.stdout and "run `patchforge overlays`" in lint.stdout
    # One finding for the overlays, naming the files that differ (`overlays --check` says how
    # each differs): one per file repeated "run `patchforge overlays`" for each.
    rc, doc = lint_json(root, "--no-forge")
    stale = [f for f in doc["findings"] if f["check"] == "overlays" and f["severity"] == "error"]
    assert rc == 1 and len(stale) == 1, doc["findings"]
    assert stale[0]["patch"] == "overlays/" and "overlays/up/a.txt" in stale[0]["message"] \
        and "overlays/manifest.json" in stale[0]["message"], stale
    assert _run_hook(hooks["patchforge-overlays-check"], root).returncode == 1
    # A cold cache (a fresh clone on another machine): a clear message at once, no download.
    monkeypatch.setenv("PATCHFORGE_CACHE", str(tmp_path / "cold-cache"))
    cold = _run_hook(hooks["patchforge-lint"], root)
    assert cold.returncode == 2
    assert "run `patchforge fetch` once" in cold.stderr, cold.stderr


def test_a_creation_git_apply_refuses_is_an_error(env, tmp_path, monkeypatch):
    """A patch creating `pkg` where the upstream has a directory (imported from a quilt stack,
    say) applied in memory: lint found no error and status said it applies, while `git apply`
    of the series and `overlays` refused it. Lint names it as an apply error."""
    root = env.fresh(tmp_path, monkeypatch)
    add_patch_file(root, "up", "makes-pkg.patch", patch(FIELDS, (
        b"diff --git a/pkg b/pkg\nnew file mode 100644\n--- /dev/null\n+++ b/pkg\n"
        b"@@ -0,0 +1 @@\n+hi\n")))
    rc, doc = lint_json(root, "--no-forge")
    assert rc == 1
    found = findings(doc, "apply", "makes-pkg.patch")
    assert found and "creates pkg, which is a directory in the upstream" in found[0]["message"]
    assert found[0]["severity"] == "error"


def test_a_patch_file_saved_with_crlf_line_ends_is_named(env, tmp_path, monkeypatch):
    """An editor that saves with CRLF line ends makes every hunk fail on the LF upstream file;
    lint says so, with the file's line and the way back, and the converted-back file is clean."""
    root = env.fresh(tmp_path, monkeypatch)
    r = run_cli(root, "import", "overlay", str(_write(tmp_path / "o", b"line1\nLINE2\nline3\n"
                                                      b"line4\nline5\nline6\nline7\nline8\n")),
                "--upstream", "up", "--path", "a.txt", "--name", "good")
    assert r.rc == 0, r.text
    path = root / "series/up/good.patch"
    original = path.read_bytes()
    path.write_bytes(original.replace(b"\n", b"\r\n"))
    rc, doc = lint_json(root, "--no-forge")
    assert rc == 1
    [converted] = findings(doc, "line-ends", "good.patch")
    diff_line = original.split(b"\n").index(next(line for line in original.split(b"\n")
                                                 if line.startswith(b"diff --git "))) + 1
    assert f"line {diff_line} of the patch file ends in CRLF" in converted["message"]
    assert "sed -i 's/\\r$//' FILE" in converted["message"]
    # status at the pin, which shows a conflict with no evidence, sends the reader to lint.
    at_pin = run_cli(root, "status")
    assert at_pin.rc == 1 and "conflict" in at_pin.out
    assert "hint: `patchforge lint` says why a patch does not apply at its pin" in at_pin.err
    subprocess.run(["sed", "-i", r"s/\r$//", str(path)], check=True)
    assert path.read_bytes() == original
    rc, doc = lint_json(root, "--no-forge")
    assert rc == 0 and not findings(doc, "line-ends"), doc
    assert "hint" not in run_cli(root, "status").err


def test_every_command_applying_the_series_names_a_patch_saved_with_crlf(env, tmp_path,
                                                                          monkeypatch):
    """`overlays`, `overlays --check` and `check` (what CI runs) said only "patch good.patch:
    hunk #1 of a.txt does not apply" of a patch an editor saved with CRLF line ends, where
    lint names the file's line and the way back. They say lint's words now, with the line."""
    root = env.fresh(tmp_path, monkeypatch)
    r = run_cli(root, "import", "overlay", str(_write(tmp_path / "o", b"line1\nLINE2\nline3\n"
                                                      b"line4\nline5\nline6\nline7\nline8\n")),
                "--upstream", "up", "--path", "a.txt", "--name", "good")
    assert r.rc == 0, r.text
    assert run_cli(root, "overlays").rc in (0, 1)  # (1: a warning, no install-root)
    path = root / "series/up/good.patch"
    original = path.read_bytes()
    path.write_bytes(original.replace(b"\n", b"\r\n"))
    rc, doc = lint_json(root, "--no-forge")
    [converted] = findings(doc, "line-ends", "good.patch")
    for args in (("overlays", "--check"), ("check",), ("overlays",)):
        run = run_cli(root, *args)
        assert run.rc == 2, (args, run.text)
        line = converted["message"].split(" ")[1]
        assert f"{path}:{line}: patch good.patch: hunk #1 of a.txt does not apply: " \
               f"{converted['message'].split('; convert')[0]}" in run.err, (args, run.text)
        assert "hint: convert its line ends back (`sed -i 's/\\r$//' " in run.err, run.err
    path.write_bytes(original)
    assert "overlays are up to date" in run_cli(root, "overlays", "--check").out


def test_profiles_in_a_stack_that_declares_none_is_said_never_silently_ignored(tmp_path):
    """`Profiles: gfx942` in a stack without [profiles] limited nothing, silently: the fix is in
    the one layout every deployment mounts, gfx950 machines too. `lint` warns, naming the
    patch; `new --profiles` there is refused until the profiles are declared."""
    from helpers.project import OneUpstreamStack

    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": b"x = 1\n"})
    stack.add_fix("only-942", "pkg/a.py", b"x = 1\n", b"x = 2\n", fields="Profiles: gfx942\n")
    document = stack.json("lint", "--json")
    said = [f for f in document["findings"] if f["patch"] == "up/only-942.patch"
            and "declares no profiles" in f["message"]]
    assert [f["severity"] for f in said] == ["warning"], document["findings"]
    before = stack.snapshot()
    _, _, err = stack.cli("new", "more", "--profiles", "gfx942", expect=2)
    assert "declares no profiles" in err, err
    assert stack.snapshot() == before


@pytest.mark.parametrize("fields,shown", [
    # A right-to-left override in a header: the review reads "fix exe.png".
    ("Description: fix \u202egnp.exe\n".encode() + AUTHOR + b"Upstream-Status: Pending\n",
     "Description holds an invisible character (\\u202e)"),
    (FIELDS.replace(b"a fix", "a\u200bfix".encode()), "Description holds an invisible character"
                                                       " (\\u200b)"),
    # In the free text below the header, with its line.
    (FIELDS + "\nThe reason,\nkept \u2067here\u2069.\n".encode(),
     "the description holds an invisible character (\\u2067) at line 6 of series/up/fix.patch"),
])
def test_an_invisible_character_in_the_header_or_description_is_an_error(
        env, tmp_path, monkeypatch, fields, shown):
    root = env.fresh(tmp_path, monkeypatch)
    add_patch_file(root, "up", "fix.patch", patch(fields))
    rc, doc = lint_json(root, "--no-forge")
    found = [f for f in findings(doc, "header", "fix.patch") if shown in f["message"]]
    assert found and found[0]["severity"] == "error", doc["findings"]
    assert rc == 1
    # What a terminal shows names the character, never holds it.
    text = run_cli(root, "lint", "--no-forge").text
    assert shown.split(" (")[0] in text and "\u202e" not in text and "\u2067" not in text


def test_an_added_line_holding_a_bidirectional_override_is_warned(env, tmp_path, monkeypatch):
    root = env.fresh(tmp_path, monkeypatch)
    # "Trojan Source": the added line shows as a comment ending before `return`, and is read
    # with the return inside the comment.
    diff = ("diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n"
            "@@ -1,5 +1,5 @@\n line1\n-line2\n+/* \u202e } \u2066if (admin)\u2069 \u2066 */\n"
            " line3\n line4\n line5\n").encode()
    add_patch_file(root, "up", "fix.patch", patch(FIELDS, diff))
    rc, doc = lint_json(root, "--no-forge")
    found = findings(doc, "bidirectional", "fix.patch")
    assert len(found) == 1 and found[0]["severity"] == "warning", doc["findings"]
    assert "a.txt: the line added at line 12 of the patch file" in found[0]["message"]
    assert rc == 0
    # The same line written with an escape is the code a reviewer sees: nothing to say.
    add_patch_file(root, "up", "fix.patch", patch(FIELDS, MODIFY_A.replace(
        b"+LINE2", b"+s = '\\u202e'")))
    rc, doc = lint_json(root, "--no-forge")
    assert not findings(doc, "bidirectional"), doc["findings"]


def test_a_follow_written_by_hand_that_is_no_ref_name_is_an_error_naming_the_line(
        env, tmp_path, monkeypatch):
    """`follow = "rel ease"` written in the configuration by hand (`upstream add --follow`
    refuses it): lint was quiet (exit 0), and only `pr` or `bump` refused it, the day one ran.
    lint names the file, the line and the key, exit 1, asking git alone (offline)."""
    root = env.fresh(tmp_path, monkeypatch)
    config = next(p for p in (root / "patchforge.toml", root / "pyproject.toml") if p.exists())
    text = config.read_text()
    marker = next(line for line in text.splitlines() if line.endswith("upstreams.up]"))
    config.write_text(text.replace(marker, marker + '\nfollow = "rel ease"'))
    line = config.read_text().splitlines().index('follow = "rel ease"') + 1
    rc, doc = lint_json(root, "--no-forge")
    [found] = findings(doc, "config")
    assert rc == 1 and found["severity"] == "error" and found["patch"] == config.name, doc
    assert found["message"].startswith(f"{config.name}:{line}: ")
    assert "upstreams.up.follow: 'rel ease' is not a branch or tag name" in found["message"]
    config.write_text(text.replace(marker, marker + '\nfollow = "release/1.2"'))
    _, doc = lint_json(root, "--no-forge")
    assert not findings(doc, "config"), doc
