"""The real CLI on real upstreams built here: `init`, `upstream add|pin|list`, `fetch`, the lock's
errors and bytes, and `--help` of every command.
"""
from __future__ import annotations

import hashlib
import importlib.util
import json
import re
import os
import shlex
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

from helpers.cli import ok, run_cli
from helpers.env import REPO_ROOT
from helpers.git import git, git_bytes
from helpers.project import UPSTREAM_FILES, git_project, lock_doc
from helpers.schemas import schema_errors
from helpers.snapshot import tree_bytes
from helpers.upstream import Upstream, build_wheel
from patchforge.cli import LAZY_COMMANDS

# --------------------------------------------------------------------------------------------
# --help


def test_top_level_help_imports_no_heavy_library():
    code = ("import sys\nfrom patchforge.cli import main\n"
            "try:\n    main(['--help'])\nexcept SystemExit as e:\n    rc = e.code\n"
            "heavy = [m for m in ('requests', 'jsonschema', 'git', 'unidiff') if m in sys.modules]\n"
            "print('HEAVY', heavy, rc)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=REPO_ROOT, check=True).stdout
    assert "HEAVY [] 0" in out
    assert "Commands:" in out and "overlays" in out


@pytest.mark.parametrize("words", [(), ("upstream",), ("import",)], ids=lambda w: " ".join(w) or "-")
def test_a_command_group_named_alone_prints_its_help_and_exits_0(tmp_path, words):
    """`patchforge` (or `patchforge import`) on its own, as a newcomer first types it, outside
    any project: the usage on stdout, nothing on stderr, exit 0 (as quilt and stg do), whatever
    click version is installed."""
    run = subprocess.run([sys.executable, "-m", "patchforge", *words], capture_output=True,
                         text=True, cwd=tmp_path,
                         env=dict(os.environ, PYTHONPATH=str(REPO_ROOT)))
    assert (run.returncode, run.stderr) == (0, "")
    assert run.stdout.startswith("Usage: patchforge " + " ".join(words))
    assert "Commands:" in run.stdout


@pytest.mark.parametrize("words", [(), ("rebase",), ("import", "overlay")],
                         ids=lambda w: " ".join(w) or "-")
def test_help_names_a_command_as_git_help_does(tmp_path, words):
    """`patchforge help [COMMAND]`, as a git or StGit user types it: the same text as
    `patchforge [COMMAND] --help`, exit 0; an unknown command is bad usage (exit 2)."""
    def run(*args):
        return subprocess.run([sys.executable, "-m", "patchforge", *args], capture_output=True,
                              text=True, cwd=tmp_path,
                              env=dict(os.environ, PYTHONPATH=str(REPO_ROOT)))

    asked, expected = run("help", *words), run(*words, "--help")
    assert (asked.returncode, asked.stderr, asked.stdout) == (0, "", expected.stdout)
    wrong = run("help", *words, "nope")
    assert wrong.returncode == 2 and "no command" in wrong.stderr and "nope" in wrong.stderr


SUBCOMMANDS = [(name,) for name in LAZY_COMMANDS] + [
    ("upstream", "add"), ("upstream", "pin"), ("upstream", "list"),
    ("import", "overlay"), ("import", "git"), ("import", "quilt"), ("import", "mbox")]


@pytest.mark.parametrize("words", SUBCOMMANDS, ids=lambda w: " ".join(w))
def test_every_subcommand_help(words):
    module = LAZY_COMMANDS[words[0]][0]
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is not written yet (owned by another issue)")
    run = run_cli(None, *words, "--help")
    assert run.rc == 0, run.err
    assert run.text.startswith("Usage: patchforge " + " ".join(words))


def _command(words: tuple[str, ...]):
    import click

    module, attribute, _ = LAZY_COMMANDS[words[0]]
    command = getattr(importlib.import_module(module), attribute)
    return command.commands[words[1]] if isinstance(command, click.Group) else command


REFERENCE_ROWS = [line.split(" | ")[0] for line in
                  (REPO_ROOT / "docs" / "reference.md").read_text().splitlines()
                  if line.startswith("| `")]


@pytest.mark.parametrize("words", [w for w in SUBCOMMANDS if w[0] not in ("upstream", "import")]
                         + [w for w in SUBCOMMANDS if len(w) == 2], ids=lambda w: " ".join(w))
def test_every_option_has_help_and_is_in_the_reference(words):
    """`--help` explains every option, and docs/reference.md's table of commands names it in the
    command's row."""
    import click

    name = " ".join(words)
    rows = " ".join(row for row in REFERENCE_ROWS if row.startswith(f"| `{name}")
                    and not row[len(name) + 3:len(name) + 4].isalnum())
    assert rows, f"docs/reference.md has no row for `{name}`"
    for param in _command(words).params:
        if isinstance(param, click.Option) and param.name != "help":
            assert param.help, f"patchforge {name} {param.opts[0]} has no help text"
            assert any(opt in rows for opt in param.opts), \
                f"docs/reference.md's row for `{name}` does not name {param.opts[0]}"


# --------------------------------------------------------------------------------------------
# init


def _stack_in_git(tmp_path: Path, files: dict[str, bytes]) -> Path:
    """A stack made by `init` in a git repository of its own (tmp_path/stack), its upstream
    `lib` a real git repository holding `files`, pinned at main (install root /opt/lib)."""
    upstream = tmp_path / "lib"
    upstream.mkdir()
    git(upstream, "init", "-q", "-b", "main")
    for rel, data in files.items():
        (upstream / rel).parent.mkdir(parents=True, exist_ok=True)
        (upstream / rel).write_bytes(data)
    git(upstream, "add", ".")
    git(upstream, "-c", "user.name=u", "-c", "user.email=u@example.com", "commit", "-qm", "one")
    root = tmp_path / "stack"
    ok(None, "init", str(root))
    git(root, "init", "-q")
    ok(root, "upstream", "add", "lib", "--git", str(upstream), "--at", "main",
       "--install-root", "/opt/lib")
    return root


def test_a_stack_started_by_init_commits_the_hashes_not_the_overlay_files(tmp_path):
    """The tutorial and docs/deployment.md call the overlay files and Dockerfiles build
    outputs, but the .gitignore `init` wrote ignored only .patchforge/: `git add -A` after
    `overlays` committed every overlay file. Asked of real git: the files are ignored, the
    hashes, manifest and compose fragments a review reads are not."""
    root = _stack_in_git(tmp_path, {"pkg/m.py": b"a = 1\nb = 2\n"})
    ok(root, "new", "fix", "--file", "pkg/m.py", "-m", "b is 3")
    (root / ".patchforge/work/lib/pkg/m.py").write_bytes(b"a = 1\nb = 3\n")
    ok(root, "refresh")
    ok(root, "overlays")
    assert (root / "overlays/lib/pkg/m.py").read_bytes() == b"a = 1\nb = 3\n"
    git(root, "add", "-A")
    staged = set(git(root, "diff", "--cached", "--name-only").split())
    assert {"overlays/SHA256SUMS", "overlays/manifest.json", "overlays/compose.yaml",
            "series/lib/fix.patch", "upstream.lock"} <= staged, staged
    assert not any(p.startswith("overlays/lib/") or p.endswith("Dockerfile") for p in staged), \
        staged


def _ignored(root: Path, paths: list[str]) -> set[str]:
    """The paths real git ignores in `root` (`git check-ignore`, exit 1 when none is)."""
    proc = subprocess.run(["git", "check-ignore", "--no-index", "--", *paths], cwd=root,
                          capture_output=True, text=True)
    assert proc.returncode in (0, 1), proc.stderr
    return set(proc.stdout.split())


def test_overlays_of_upstream_files_named_like_the_committed_outputs_stay_build_outputs(
        tmp_path):
    """The .gitignore `init` wrote re-included every file under overlays/ named SHA256SUMS,
    manifest.json or compose*.yaml, so the overlay of an upstream's `docker/compose.yaml` or
    `x/manifest.json` was committed by `git add -A` while every other overlay file is a build
    output. Asked of real git: those overlays are ignored, the files `overlays` writes as
    committed outputs are not, and a profile's compose fragment, once profiles are
    configured, gets its own line from `overlays` (which also brings the lines of an earlier
    init up to date, saying so; lint warns until then)."""
    root = _stack_in_git(tmp_path, {"docker/compose.yaml": b"services: {}\n",
                                    "x/manifest.json": b"{}\n", "SHA256SUMS": b"",
                                    "pkg/m.py": b"a = 1\n"})
    files = ["docker/compose.yaml", "x/manifest.json", "SHA256SUMS", "pkg/m.py"]
    ok(root, "new", "fix", *(arg for rel in files for arg in ("--file", rel)), "-m", "all")
    for rel in files:
        work = root / ".patchforge/work/lib" / rel
        work.write_bytes(work.read_bytes() + b"# changed\n")
    ok(root, "refresh")
    ok(root, "overlays")
    overlays = [f"overlays/lib/{rel}" for rel in files]
    assert all((root / rel).is_file() for rel in overlays)
    committed = ["overlays/SHA256SUMS", "overlays/manifest.json", "overlays/compose.yaml"]
    assert _ignored(root, overlays + committed) == set(overlays)
    git(root, "add", "-A")
    staged = set(git(root, "diff", "--cached", "--name-only").split())
    assert set(committed) <= staged and not staged & set(overlays), staged

    # Profiles configured later: overlays/<profile>/compose.yaml is written, and committed.
    config = root / "patchforge.toml"
    config.write_text(config.read_text().replace("[profiles]\n", '[profiles]\ngfx942 = "MI300X"\n'))
    run = ok(root, "overlays")
    assert "`!/overlays/gfx942/compose.yaml`" in run.err, run.err
    profiled = [f"overlays/gfx942/lib/{rel}" for rel in files]
    assert all((root / rel).is_file() for rel in profiled)
    assert _ignored(root, profiled + ["overlays/gfx942/compose.yaml"]) == set(profiled)

    # A .gitignore an earlier init wrote: lint names the lines, `overlays` puts them right and
    # keeps the user's own.
    gitignore = root / ".gitignore"
    old = ["/.patchforge/", "/.overlays.new/", "/.overlays.old/", "/overlays/**", "!/overlays/",
           "!/overlays/**/", "!/overlays/SHA256SUMS", "!/overlays/**/SHA256SUMS",
           "!/overlays/manifest.json", "!/overlays/**/manifest.json", "!/overlays/compose*.yaml",
           "!/overlays/**/compose*.yaml", "!/overlays/README.md", "!/overlays/.gitignore"]
    gitignore.write_text("*.log\n" + "".join(f"{line}\n" for line in old))
    assert _ignored(root, overlays) == {"overlays/lib/pkg/m.py"}  # what git did before
    lint = run_cli(root, "lint", "--no-forge", "--json")
    [warning] = [f for f in json.loads(lint.out)["findings"] if f["check"] == "ignore"]
    assert warning["patch"] == ".gitignore" and warning["severity"] == "warning", warning
    assert "`!/overlays/**/manifest.json`" in warning["message"], warning
    assert schema_errors(json.loads(lint.out), "lint") == []
    run = ok(root, "overlays")
    assert "took out `!/overlays/**/SHA256SUMS`" in run.err, run.err
    lines = gitignore.read_text().splitlines()
    assert lines[0] == "*.log" and not set(lines) & {"!/overlays/**/manifest.json",
                                                     "!/overlays/compose*.yaml"}, lines
    assert _ignored(root, profiled + overlays + ["overlays/gfx942/compose.yaml"]) == \
        set(profiled + overlays)
    lint = run_cli(root, "lint", "--no-forge", "--json")
    assert not [f for f in json.loads(lint.out)["findings"] if f["check"] == "ignore"]
    again = ok(root, "overlays")
    assert ".gitignore" not in again.err


def test_init_appends_to_pyproject_byte_for_byte(tmp_path):
    original = ('[project]\r\nname = "x"  # kept\r\n\r\n[tool.black]\r\nline-length = 99\r\n'
                '# ünïcode comment, no final newline').encode()
    (tmp_path / "pyproject.toml").write_bytes(original)
    run = ok(None, "init", cwd=tmp_path)
    assert "pyproject.toml" in run.text
    data = (tmp_path / "pyproject.toml").read_bytes()
    assert data.startswith(original) and len(data) > len(original)
    doc = tomllib.loads(data.decode())
    assert doc["tool"]["black"] == {"line-length": 99}
    assert "patchforge" in doc["tool"] and doc["tool"]["patchforge"].get("profiles", {}) == {}
    assert (tmp_path / "series").is_dir()
    assert (tmp_path / "upstream.lock").read_bytes() == b'{\n  "upstreams": {},\n  "version": 1\n}\n'
    assert "/.patchforge/" in (tmp_path / ".gitignore").read_text().splitlines()
    assert not (tmp_path / "patchforge.toml").exists()
    # A second init refuses and changes nothing.
    before = tree_bytes(tmp_path)
    again = run_cli(None, "init", cwd=tmp_path)
    assert again.rc == 2 and "already has a patchforge configuration" in again.err
    assert tree_bytes(tmp_path) == before


def test_init_and_upstream_add_write_a_crlf_pyproject_in_crlf(tmp_path):
    """A pyproject.toml made on Windows (CRLF lines): `init` appended its table in LF lines, and
    `upstream add` its upstream's, one file in two line-end styles (tomllib read it; an editor
    or `git diff` under core.autocrlf showed every appended line as changed). Both write the
    file's own line ends now, the file's bytes before them kept; an LF file stays LF."""
    from helpers.git import commit_files

    upstream = tmp_path / "up"
    upstream.mkdir()
    git(upstream, "init", "-q", "-b", "main")
    commit_files(upstream, {"a.py": b"a = 1\n"}, "v1", tag="v1")
    for eol in (b"\r\n", b"\n"):
        root = tmp_path / ("crlf" if eol == b"\r\n" else "lf")
        root.mkdir()
        original = b'[project]' + eol + b'name = "x"' + eol
        (root / "pyproject.toml").write_bytes(original)
        ok(None, "init", cwd=root)
        ok(root, "upstream", "add", "vllm", "--git", str(upstream), "--at", "v1")
        data = (root / "pyproject.toml").read_bytes()
        assert data.startswith(original), data
        lines = data.split(b"\n")[:-1]
        assert len(lines) > 5 and data.endswith(b"\n"), data
        assert all(line.endswith(b"\r") == (eol == b"\r\n") for line in lines), data
        assert b"[tool.patchforge.upstreams.vllm]" + eol in data, data
        assert tomllib.loads(data.decode())["tool"]["patchforge"]["upstreams"]["vllm"][
            "kind"] == "git"
        ok(root, "status")


def test_init_in_a_subdirectory_of_a_project_is_refused_unless_named(tmp_path):
    """`init` run from a project's series/ started a second project there, which every command
    run from there then took for the project. It is refused, with nothing written, naming the
    project; `init .` (a directory named on purpose) still starts one."""
    ok(None, "init", cwd=tmp_path)
    inside = tmp_path / "series"
    before = tree_bytes(tmp_path)
    run = run_cli(None, "init", cwd=inside)
    assert run.rc == 2 and f"is inside the patchforge project at {tmp_path.resolve()}" in run.err
    assert "`patchforge init .`" in run.err
    assert tree_bytes(tmp_path) == before
    ok(None, "init", ".", cwd=inside)
    assert (inside / "patchforge.toml").is_file()


def test_init_standalone_leaves_pyproject_alone(tmp_path):
    (tmp_path / "pyproject.toml").write_bytes(b'[project]\nname = "x"\n')
    ok(None, "init", "--standalone", cwd=tmp_path)
    assert (tmp_path / "pyproject.toml").read_bytes() == b'[project]\nname = "x"\n'
    doc = tomllib.loads((tmp_path / "patchforge.toml").read_text())
    assert "forge" in doc and "tool" not in doc
    # The standalone file is the configuration from now on, wherever we stand below the root.
    (tmp_path / "sub").mkdir()
    assert ok(None, "upstream", "list", "--json", cwd=tmp_path / "sub").text.strip() == \
        json.dumps({"schema_version": 1, "upstreams": []}, indent=2)


def test_init_without_pyproject_writes_patchforge_toml(tmp_path):
    ok(None, "init", str(tmp_path / "new"))
    assert (tmp_path / "new" / "patchforge.toml").is_file()
    assert not (tmp_path / "new" / "pyproject.toml").exists()
    # ... as `init --help` says (it read as if only --standalone wrote patchforge.toml).
    assert "without one, patchforge.toml is written anyway" in \
        " ".join(ok(None, "init", "--help").text.split())


def test_init_refuses_a_bad_pyproject_naming_the_line(tmp_path):
    bad = b'[project]\nname = "x"\nversion = = 1\n'
    (tmp_path / "pyproject.toml").write_bytes(bad)
    run = run_cli(None, "init", cwd=tmp_path)
    assert run.rc == 2
    assert "pyproject.toml:3:" in run.err and "not valid TOML" in run.err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pyproject.toml"]
    assert (tmp_path / "pyproject.toml").read_bytes() == bad


def test_init_refuses_a_pyproject_that_cannot_take_the_table(tmp_path):
    original = b'tool = {black = {line-length = 99}}\n[project]\nname = "x"\n'
    (tmp_path / "pyproject.toml").write_bytes(original)
    run = run_cli(None, "init", cwd=tmp_path)
    assert run.rc == 2 and "pyproject.toml" in run.err
    assert (tmp_path / "pyproject.toml").read_bytes() == original
    assert not (tmp_path / "upstream.lock").exists()


# --------------------------------------------------------------------------------------------
# upstream add / list / pin, for the three kinds


def test_upstream_add_git_pins_the_commit_and_appends_the_table(tmp_path):
    vllm = Upstream(tmp_path / "vllm-src", UPSTREAM_FILES)
    upstream, commit = vllm.path, vllm.base
    root = tmp_path / "stack"
    root.mkdir()
    ok(None, "init", "--standalone", cwd=root)
    before = (root / "patchforge.toml").read_bytes()
    # A relative path from somewhere else than the root: kept relative to the root.
    (tmp_path / "elsewhere").mkdir()
    run = ok(None, "--root", str(root), "upstream", "add", "vllm", "--git", "../vllm-src", "--at",
             "main", "--install-root", "/opt/site", cwd=tmp_path / "elsewhere")
    assert commit in run.text
    config = (root / "patchforge.toml").read_bytes()
    assert config.startswith(before)
    table = tomllib.loads(config.decode())["upstreams"]["vllm"]
    assert table == {"kind": "git", "url": "../vllm-src", "install-root": "/opt/site"}
    pin = lock_doc(root)["upstreams"]["vllm"]
    assert pin["commit"] == commit
    assert pin["tree"] == git(upstream, "rev-parse", "HEAD^{tree}").strip()
    assert pin["kind"] == "git" and pin["label"] == "main"
    listed = json.loads(ok(root, "upstream", "list", "--json").out)
    assert listed == {"schema_version": 1, "upstreams": [{
        "upstream": "vllm", "kind": "git", "label": "main", "commit": commit,
        "install_root": "/opt/site"}]}
    # Adding the same name again is refused without touching anything.
    snapshot = tree_bytes(root)
    again = run_cli(root, "upstream", "add", "vllm", "--git", str(upstream), "--at", "main")
    assert again.rc == 2 and "already configured" in again.err
    assert tree_bytes(root) == snapshot
    # So is a name that differs only in case: series/VLLM is series/vllm on macOS or Windows.
    twin = run_cli(root, "upstream", "add", "VLLM", "--git", str(upstream), "--at", "main")
    assert twin.rc == 2 and "only in case" in twin.err, twin.err
    assert tree_bytes(root) == snapshot
    # And a profile's name: written, no command would load the configuration again.
    config = root / "patchforge.toml"
    config.write_text(re.sub(r"(?m)^\[profiles\]$", '[profiles]\ngfx942 = "MI300X"',
                             config.read_text(), count=1))
    assert "gfx942" in config.read_text()
    snapshot = tree_bytes(root)
    profile = run_cli(root, "upstream", "add", "gfx942", "--git", str(upstream), "--at", "main")
    assert profile.rc == 2 and "is the name of a profile" in profile.err, profile.err
    assert tree_bytes(root) == snapshot and ok(root, "upstream", "list").rc == 0


def test_upstream_add_refuses_a_bad_value_naming_its_option(tmp_path):
    """A bad --install-root was found only after the upstream was pinned, and the error named
    a line of the configuration that was never written (`patchforge.toml:19`); one with a
    newline broke the TOML text and said "add the table by hand". Each is refused naming the
    option and the value, with nothing written."""
    upstream = Upstream(tmp_path / "src", UPSTREAM_FILES)
    root = tmp_path / "stack"
    root.mkdir()
    ok(None, "init", "--standalone", cwd=root)
    before = tree_bytes(root)
    for value in ("opt/site", "/opt/site:ro", "/opt/si\nte"):
        run = run_cli(root, "upstream", "add", "up", "--git", str(upstream.path), "--at", "main",
                      "--install-root", value)
        assert run.rc == 2 and f"--install-root {value!r}: not a valid install-root" in run.err, \
            run.err
        assert "patchforge.toml:" not in run.err
        assert tree_bytes(root) == before


def test_upstream_add_refuses_a_follow_that_is_no_ref_name_or_one_the_upstream_lacks(tmp_path):
    """`upstream add --follow relase` (a typo) and `--follow 'main --upload-pack=x'` (no ref
    name at all) were written into the configuration, exit 0, `lint` quiet; only `pr` and
    `bump` refused them later, naming the line. A follow git takes for no branch or tag name
    is refused before anything is asked of the remote, and one the upstream has no branch or
    tag of in the words the later refusal uses (`URL has no branch or tag 'relase' (its
    branches: main, release/0.9)`): exit 2, nothing written. A branch or a tag it has is
    written as before, and the name is never an option to git."""
    upstream = Upstream(tmp_path / "src", UPSTREAM_FILES)
    git(upstream.path, "branch", "release/0.9")
    git(upstream.path, "tag", "v1.0")
    root = tmp_path / "stack"
    root.mkdir()
    ok(None, "init", "--standalone", cwd=root)
    before = tree_bytes(root)
    for follow in ("main --upload-pack=x", "--upload-pack=touch x", "rel..ease", "main.lock",
                   "a/.b", "ma~in", "-main"):
        run = run_cli(root, "upstream", "add", "up", "--git", str(upstream.path), "--at",
                      "main", "--follow", follow)
        assert run.rc == 2, (follow, run.text)
        assert f"--follow {follow!r}: not a branch or tag name git takes" in run.err, run.err
        assert "nothing was written" in run.err
        assert tree_bytes(root) == before
    assert not (tmp_path / "x").exists() and not (root / "x").exists()
    run = run_cli(root, "upstream", "add", "up", "--git", str(upstream.path), "--at", "main",
                  "--follow", "relase")
    assert run.rc == 2, run.text
    assert f"--follow 'relase': {upstream.path} has no branch or tag 'relase' (its branches: " \
           "main, release/0.9" in run.err, run.err
    assert "nothing was written" in run.err
    # (Only the project's lock file, taken to ask the remote, is new.)
    assert tree_bytes(root, skip=(".patchforge",)) == before
    for n, follow in enumerate(("release/0.9", "v1.0")):
        ok(root, "upstream", "add", f"up{n}", "--git", str(upstream.path), "--at", "main",
           "--follow", follow)
        table = tomllib.loads((root / "patchforge.toml").read_text())["upstreams"][f"up{n}"]
        assert table["follow"] == follow
    # The option's help called it "the branch or tag pattern to follow": patterns are refused.
    said = " ".join(ok(None, "upstream", "add", "--help").out.split())
    assert "pattern to follow" not in said and "one name (not a pattern)" in said, said


def test_a_refused_follow_s_hint_names_the_branch_the_way_it_is_taken(tmp_path):
    """The refusal of a --follow said to name the branch "as `git branch -r` shows it": in a
    clone that is `origin/release/0.9`, which the upstream has no branch of, refused again.
    Both refusals say to name it without a remote's name and give the `git ls-remote` that
    lists the upstream's own names; that command, run as the hint gives it, lists the name
    that `upstream add` then takes."""
    upstream = Upstream(tmp_path / "src", UPSTREAM_FILES)
    git(upstream.path, "branch", "release/0.9")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(upstream.path), str(clone))
    shown = git_bytes(clone, "branch", "-r").decode().split()
    assert "origin/release/0.9" in shown, shown
    root = tmp_path / "stack"
    root.mkdir()
    ok(None, "init", "--standalone", cwd=root)
    for follow in ("origin/release/0.9", "release 0.9"):
        run = run_cli(root, "upstream", "add", "up", "--git", str(upstream.path), "--at",
                      "main", "--follow", follow)
        assert run.rc == 2, (follow, run.text)
        hint = " ".join(run.err.split("hint:", 1)[1].split())
        assert "git branch -r" not in hint and "not `origin/main`" in hint, hint
        listing = re.search(r"`(git ls-remote [^`]*)`", hint)
        assert listing, hint
        heads = subprocess.run(shlex.split(listing.group(1)), capture_output=True, check=True,
                               text=True).stdout.split()
        assert "refs/heads/release/0.9" in heads, heads
    named = next(ref for ref in heads if ref.startswith("refs/heads/release"))
    ok(root, "upstream", "add", "up", "--git", str(upstream.path), "--at", "main",
       "--follow", named.removeprefix("refs/heads/"))
    table = tomllib.loads((root / "patchforge.toml").read_text())["upstreams"]["up"]
    assert table["follow"] == "release/0.9"


def test_upstream_add_needs_exactly_one_kind(tmp_path):
    ok(None, "init", "--standalone", cwd=tmp_path)
    for args in ([], ["--git", "x", "--wheel", "y"]):
        run = run_cli(tmp_path, "upstream", "add", "u", *args, "--at", "1.0")
        assert run.rc == 2 and "exactly one of" in run.err


def test_lock_is_deterministic_and_schema_valid(tmp_path):
    root, _ = git_project(tmp_path)
    data = (root / "upstream.lock").read_bytes()
    doc = json.loads(data)
    assert data == (json.dumps(doc, sort_keys=True, indent=2, ensure_ascii=False) + "\n").encode()
    assert schema_errors(doc, "lock") == []
    # Re-pinning at the same revision rewrites the very same bytes.
    ok(root, "upstream", "pin", "up", "--at", "main")
    assert (root / "upstream.lock").read_bytes() == data


def test_upstream_add_wheel_from_a_cached_wheel(tmp_path, monkeypatch):
    wheels = tmp_path / "wheels"
    wheel = build_wheel(wheels, "tinypkg", "1.2.0", {"tinypkg/__init__.py": b"VALUE = 1\n",
                                                      "tinypkg/mod.py": b"def f():\n    return 1\n"})
    monkeypatch.setenv("PATCHFORGE_WHEELS", str(wheels))
    ok(None, "init", "--standalone", cwd=tmp_path)
    ok(tmp_path, "upstream", "add", "tiny", "--wheel", "tinypkg", "--at", "1.2.0", "--install-root",
       "/usr/lib/python3/dist-packages")
    pin = lock_doc(tmp_path)["upstreams"]["tiny"]
    assert pin["kind"] == "wheel" and pin["label"] == "1.2.0" and pin["version"] == "1.2.0"
    assert pin["source"] == {"package": "tinypkg", "version": "1.2.0", "filename": wheel.name,
                             "sha256": hashlib.sha256(wheel.read_bytes()).hexdigest()}
    assert schema_errors(lock_doc(tmp_path), "lock") == []
    # The import is deterministic: a fresh cache gives the same commit, and `fetch` says so.
    cache = Path(os.environ["PATCHFORGE_CACHE"])
    shutil.rmtree(cache)
    run = ok(tmp_path, "fetch", "--json")
    assert json.loads(run.out) == {"schema_version": 1, "fetched": [
        {"upstream": "tiny", "commit": pin["commit"], "result": "imported"}]}
    assert json.loads(ok(tmp_path, "fetch", "--json").out)["fetched"][0]["result"] == "present"
    # A wheel that is not what the lock pinned is refused, naming the digests.
    shutil.rmtree(cache)
    build_wheel(wheels, "tinypkg", "1.2.0", {"tinypkg/__init__.py": b"VALUE = 2\n"})
    run = run_cli(tmp_path, "fetch")
    assert run.rc == 2 and "does not match the pinned sha256" in run.err


def test_upstream_add_wheel_rejects_a_non_version(tmp_path, monkeypatch):
    monkeypatch.setenv("PATCHFORGE_WHEELS", str(tmp_path / "wheels"))
    ok(None, "init", "--standalone", cwd=tmp_path)
    run = run_cli(tmp_path, "--offline", "upstream", "add", "w", "--wheel", "tinypkg", "--at", "main")
    assert run.rc == 2 and "a wheel upstream takes a version of tinypkg" in run.err
    run = run_cli(tmp_path, "--offline", "upstream", "add", "w", "--wheel", "tinypkg", "--at", "9.9")
    assert run.rc == 2 and "--offline forbids downloading" in run.err
    assert lock_doc(tmp_path)["upstreams"] == {}


def test_upstream_add_dir_and_fetch_refuses_a_modified_dir(tmp_path):
    site = tmp_path / "site"
    (site / "pkg").mkdir(parents=True)
    (site / "pkg" / "m.py").write_bytes(b"a = 1\n")
    (site / "tool.sh").write_bytes(b"#!/bin/sh\n")
    (site / "tool.sh").chmod(0o755)
    root = tmp_path / "stack"
    root.mkdir()
    ok(None, "init", "--standalone", cwd=root)
    ok(None, "upstream", "add", "site", "--dir", "../site", "--at", "image-2024-06", cwd=root)
    assert tomllib.loads((root / "patchforge.toml").read_text())["upstreams"]["site"]["path"] == "../site"
    pin = lock_doc(root)["upstreams"]["site"]
    assert pin["kind"] == "dir" and pin["label"] == "image-2024-06"
    assert pin["source"] == {"path": "../site"}
    shutil.rmtree(os.environ["PATCHFORGE_CACHE"])
    run = ok(root, "fetch")
    assert f"site image-2024-06: imported into the cache ({pin['commit'][:12]})" in run.text
    # The directory changes under the pin: fetch refuses clearly.
    shutil.rmtree(os.environ["PATCHFORGE_CACHE"])
    (site / "pkg" / "m.py").write_bytes(b"a = 2\n")
    run = run_cli(root, "fetch")
    assert run.rc == 2
    assert f"upstream site: the locked revision is {pin['commit'][:12]}" in run.err
    assert "source changed under the pin" in run.err
    assert lock_doc(root)["upstreams"]["site"] == pin


@pytest.mark.parametrize("form", ["path", "file-url", "linked-work-tree"])
def test_upstream_add_refuses_a_shallow_clone_before_git_fetches_from_it(tmp_path, form):
    """A CI checkout is often shallow (`git clone --depth 1`, a tag fetched `--depth 1`).
    `upstream add --git` of one never ended: git's filtered fetch asked the clone for the
    parents past its cut, each such fetch started another (thousands of upload-pack processes
    within a minute, living on after patchforge was killed). It is refused before git is
    asked: exit 2, naming the clone and `fetch --unshallow`, nothing written."""
    import signal

    upstream = Upstream(tmp_path / "up", UPSTREAM_FILES)
    git(upstream.path, "tag", "v1")
    upstream.commit({"a.py": b"later\n"}, "later")
    shallow = tmp_path / "shallow"
    git(tmp_path, "clone", "-q", "--depth", "1", f"file://{upstream.path}", str(shallow))
    git(shallow, "fetch", "-q", "--depth", "1", "origin", "tag", "v1")
    source = {"path": str(shallow), "file-url": f"file://{shallow}"}.get(form)
    if form == "linked-work-tree":
        git(shallow, "worktree", "add", "-q", "--detach", str(tmp_path / "linked"), "v1")
        source = str(tmp_path / "linked")
    root = tmp_path / "stack"
    root.mkdir()
    ok(None, "init", "--standalone", cwd=root)

    def project_files():  # (.patchforge/lock, the command's lock, is local state)
        return {k: v for k, v in tree_bytes(root).items() if not k.startswith(".patchforge/")}

    before = project_files()
    # Its own session: should git's chain of fetches start again, the test ends it whole.
    proc = subprocess.Popen(
        [sys.executable, "-m", "patchforge", "--root", str(root), "upstream", "add", "up",
         "--git", source, "--at", "v1"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        start_new_session=True, env={**os.environ, "PATCHFORGE_CACHE": str(tmp_path / "cache")})
    try:
        out, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        pytest.fail("upstream add of a shallow clone did not end")
    text = err.decode()
    assert proc.returncode == 2, text
    assert f"patchforge: error: {source} is a shallow clone (`git clone --depth`)" in text, text
    assert "fetch --unshallow" in text and "check the name" not in text, text
    assert project_files() == before


def test_fetch_git_after_the_cache_is_gone(tmp_path):
    root, commit = git_project(tmp_path)
    shutil.rmtree(os.environ["PATCHFORGE_CACHE"])
    run = ok(root, "fetch")
    assert run.text.strip() == f"up main: fetched into the cache ({commit[:12]})"
    assert ok(root, "fetch").text.strip() == f"up main: already in the cache ({commit[:12]})"
    # The files are readable again (edit materializes them from the store).
    ok(root, "new", "fix", "--file", "a.py")
    assert (root / ".patchforge/work/up/a.py").read_bytes() == UPSTREAM_FILES["a.py"]
    # An upstream the configuration does not name was "not pinned: pin it with `upstream pin
    # nope`", a command that refuses it; a SPEC (`up=v2`) got the same answer.
    unknown = run_cli(root, "fetch", "nope")
    assert unknown.rc == 2 and "unknown upstream 'nope' (known: up)" in unknown.err, unknown.err
    spec = run_cli(root, "fetch", "up=v2")
    assert spec.rc == 2 and "fetch takes upstream names, not SPECs" in spec.err, spec.err
    assert "`patchforge rebase --to up=v2`" in spec.err


def test_a_relative_cache_is_refused_and_a_relative_xdg_cache_ignored(tmp_path, monkeypatch):
    """PATCHFORGE_CACHE=relc was taken from the current directory: run from the project, each
    command made (and fetched into) a store inside it, one more per directory it ran from.
    Refused now, before anything is read or written; a relative XDG_CACHE_HOME is ignored, as
    the XDG base directory specification says (~/.cache is used)."""
    root, _ = git_project(tmp_path)
    shutil.rmtree(os.environ["PATCHFORGE_CACHE"])
    before = tree_bytes(root)
    monkeypatch.setenv("PATCHFORGE_CACHE", "relc")
    run = run_cli(root, "fetch", cwd=root)
    assert run.rc == 2 and "PATCHFORGE_CACHE=relc is a relative path" in run.err, run.text
    assert tree_bytes(root) == before and not (root / "relc").exists()
    monkeypatch.delenv("PATCHFORGE_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", "relc")
    ok(root, "fetch", cwd=root)
    assert not (root / "relc").exists()
    assert (Path(os.environ["HOME"]) / ".cache" / "patchforge" / "store.git").is_dir()
    # A relative HOME (the default cache is ~/.cache/patchforge) is refused the same way.
    monkeypatch.setenv("HOME", "relhome")
    run = run_cli(root, "fetch", cwd=root)
    assert run.rc == 2 and "HOME=relhome is a relative path" in run.err, run.text
    assert tree_bytes(root) == before and not (root / "relhome").exists()


def test_a_cache_setting_with_a_line_end_or_a_tilde_is_refused_saying_why(tmp_path,
                                                                          monkeypatch):
    """PATCHFORGE_CACHE="$dir\r" (a CRLF env file) made a second cache named `<dir>\r` and
    filled it, exit 0; `~/pfc` (no shell to expand it) was refused with the hint
    `"$PWD/~/pfc"`. The first is refused naming the line break, the second hints $HOME."""
    root, _ = git_project(tmp_path)
    cache = os.environ["PATCHFORGE_CACHE"]
    before = tree_bytes(root)
    monkeypatch.setenv("PATCHFORGE_CACHE", cache + "\r")
    run = run_cli(root, "status", cwd=root)
    assert run.rc == 2 and "holds a line break" in run.err, run.text
    assert not os.path.exists(cache + "\r") and tree_bytes(root) == before
    monkeypatch.setenv("PATCHFORGE_CACHE", "~/pfc")
    run = run_cli(root, "status", cwd=root)
    assert run.rc == 2 and 'PATCHFORGE_CACHE=\"$HOME/pfc\"' in run.err, run.text
    assert "$PWD/~" not in run.err, run.text
    # ` /abs` (a space after `=` in an env file) was called a relative path, hinting
    # `$PWD/ /abs`: the white space is named, and the setting without it given.
    monkeypatch.setenv("PATCHFORGE_CACHE", " " + cache)
    run = run_cli(root, "status", cwd=root)
    assert run.rc == 2 and "begins or ends with white space" in run.err, run.text
    assert f'PATCHFORGE_CACHE="{cache}"' in run.err and "$PWD" not in run.err, run.text
    # Blanks only (`PATCHFORGE_CACHE= `): "a relative path", hint `PATCHFORGE_CACHE="$PWD/ "`.
    for blank in (" ", "\t"):
        monkeypatch.setenv("PATCHFORGE_CACHE", blank)
        run = run_cli(root, "status", cwd=root)
        assert run.rc == 2 and "is only white space" in run.err, run.text
        assert "relative path" not in run.err and "$PWD" not in run.err, run.text
    assert tree_bytes(root) == before


def test_a_cache_in_the_projects_own_files_is_refused(tmp_path, monkeypatch):
    """PATCHFORGE_CACHE=$PWD/overlays (or series/up, the project's root, .patchforge/; or
    PATCHFORGE_WHEELS, or XDG_CACHE_HOME there) was taken without a word: under overlays/,
    `overlays` passed and `overlays --check` then failed for ever on `store.git/...` ("extra:
    no longer generated"), which the advised `overlays` never fixed; under series/up every
    check was green while `git add -A` committed the whole store with the fixes. Refused now,
    exit 2, naming the variable and the project, before anything is read or written; a
    directory of its own elsewhere in the project (a CI cache's .cache/) is taken."""
    root, _ = git_project(tmp_path)
    ok(root, "new", "fix", "--file", "pkg/b.py")
    work = root / ".patchforge" / "work" / "up" / "pkg" / "b.py"
    work.write_bytes(work.read_bytes() + b"# fixed\n")
    ok(root, "refresh")
    ok(root, "overlays")
    before = tree_bytes(root)
    for variable, value, where in (
            ("PATCHFORGE_CACHE", root / "overlays", "overlays/"),
            ("PATCHFORGE_CACHE", root / "series" / "up", "series/"),
            ("PATCHFORGE_CACHE", root, "root"),
            ("PATCHFORGE_CACHE", root / ".patchforge" / "cache", ".patchforge/"),
            ("PATCHFORGE_WHEELS", root / "series", "series/"),
            ("XDG_CACHE_HOME", root / "overlays", "overlays/")):
        with monkeypatch.context() as there:
            there.setenv(variable, str(value))
            if variable == "XDG_CACHE_HOME":
                there.delenv("PATCHFORGE_CACHE")
            for command in (["overlays"], ["overlays", "--check"], ["status"], ["fetch"],
                            ["lint", "--no-forge"]):
                run = run_cli(root, *command)
                assert run.rc == 2, (variable, value, command, run.text)
                assert f"{variable} puts the cache" in run.err, (variable, command, run.err)
                assert f"in the project {root} (its {where})" in run.err, (variable, run.err)
            assert tree_bytes(root) == before, (variable, value)
    monkeypatch.setenv("PATCHFORGE_CACHE", str(root / ".cache" / "patchforge"))
    ok(root, "overlays", "--check")


def test_a_cache_that_names_a_file_is_named_in_the_error(tmp_path, monkeypatch):
    """PATCHFORGE_CACHE naming a file (or a path under one): the command failed with the bare
    "File exists: ..." and "run the command again", which fails the same way. The error names
    the setting and what is wrong, exit 2, and nothing is written."""
    root, _ = git_project(tmp_path)
    afile = tmp_path / "a-file"
    afile.write_bytes(b"not a directory\n")
    before = tree_bytes(root)
    for cache, why in ((afile, "File exists"), (afile / "sub", "Not a directory")):
        monkeypatch.setenv("PATCHFORGE_CACHE", str(cache))
        run = run_cli(root, "status")
        assert run.rc == 2, run.text
        assert f"PATCHFORGE_CACHE {cache}: cannot make the store there ({why})" in run.err, \
            run.err
        assert "run the command again" not in run.err
    assert tree_bytes(root) == before and afile.read_bytes() == b"not a directory\n"


@pytest.mark.parametrize("kind", ["file", "directory"])
def test_a_store_place_holding_something_else_is_named_in_the_error(tmp_path, monkeypatch, kind):
    """The cache's `store.git` a file (or a directory that is no repository): the command said
    "Not a directory: .../.store.git.x3f" (a temporary name) or "Directory not empty" and "run
    the command again". The error names store.git and the way on; nothing of it is removed."""
    root, _ = git_project(tmp_path)
    cache = tmp_path / "cache"
    cache.mkdir()
    place = cache / "store.git"
    if kind == "file":
        place.write_bytes(b"mine\n")
    else:
        place.mkdir()
        (place / "notes.txt").write_bytes(b"mine\n")
    monkeypatch.setenv("PATCHFORGE_CACHE", str(cache))
    run = run_cli(root, "status")
    assert run.rc == 2, run.text
    assert f"{place} is not a git repository patchforge can use as its store" in run.err, run.err
    assert "run the command again" not in run.err and "move it out of the way" in run.err
    assert (place.read_bytes() if kind == "file" else (place / "notes.txt").read_bytes()) \
        == b"mine\n"
    assert [p.name for p in cache.iterdir()] == ["store.git"]


def test_fetch_refuses_a_rewritten_git_upstream(tmp_path):
    root, commit = git_project(tmp_path)
    upstream = tmp_path / "up-upstream"
    git(upstream, "commit", "-q", "--amend", "-m", "rewritten")
    git(upstream, "reflog", "expire", "--expire=now", "--all")
    git(upstream, "gc", "-q", "--prune=now")
    shutil.rmtree(os.environ["PATCHFORGE_CACHE"])
    run = run_cli(root, "fetch")
    assert run.rc == 2 and "up" in run.err


def test_upstream_pin_moves_the_lock_unless_patches_depend_on_it(tmp_path):
    root, first = git_project(tmp_path)
    upstream = tmp_path / "up-upstream"
    (upstream / "a.py").write_bytes(b"changed\n")
    git(upstream, "commit", "-qam", "second")
    second = git(upstream, "rev-parse", "HEAD").strip()
    ok(root, "upstream", "pin", "up", "--at", "main")
    assert lock_doc(root)["upstreams"]["up"]["commit"] == second
    ok(root, "upstream", "pin", "up", "--at", first[:10])
    assert lock_doc(root)["upstreams"]["up"]["commit"] == first
    ok(root, "new", "fix", "--no-edit")
    before = (root / "upstream.lock").read_bytes()
    run = run_cli(root, "upstream", "pin", "up", "--at", "main")
    assert run.rc == 2 and "moving it there is a rebase" in run.err
    assert (root / "upstream.lock").read_bytes() == before
    ok(root, "upstream", "pin", "up", "--at", "main", "--force")
    assert lock_doc(root)["upstreams"]["up"]["commit"] == second
    bad = run_cli(root, "upstream", "pin", "up", "--at", "no-such-branch")
    assert bad.rc == 2 and "no-such-branch" in bad.err
    unknown = run_cli(root, "upstream", "pin", "other", "--at", "main")
    assert unknown.rc == 2 and "unknown upstream 'other'" in unknown.err


# --------------------------------------------------------------------------------------------
# The lock's errors name the file, the line and the value


def _two_upstream_lock(root: Path) -> dict:
    doc = lock_doc(root)
    doc["upstreams"]["zz"] = dict(doc["upstreams"]["up"])
    return doc


@pytest.mark.parametrize("mutate, expected", [
    (lambda d: d["upstreams"]["zz"].update(commit="abc123"), "upstreams.zz.commit: not 40 hex"),
    (lambda d: d["upstreams"]["zz"].update(tree="X" * 40), "upstreams.zz.tree: not 40 hex"),
    (lambda d: d["upstreams"]["zz"].update(kind="svn"), "upstreams.zz.kind: must be git, wheel or dir"),
    (lambda d: d["upstreams"]["zz"].pop("label"), "upstreams.zz.label: missing"),
    (lambda d: d.update(version=2), "version: 2 is too new for this patchforge"),
    (lambda d: d.update(version=0), "version: 0 is too old"),
    (lambda d: d.update(version="1"), "version: must be int"),
])
def test_lock_errors_point_at_the_bad_value(tmp_path, mutate, expected):
    root, _ = git_project(tmp_path)
    doc = _two_upstream_lock(root)
    mutate(doc)
    text = json.dumps(doc, sort_keys=True, indent=2) + "\n"
    (root / "upstream.lock").write_text(text)
    run = run_cli(root, "upstream", "list")
    assert run.rc == 2
    assert expected in run.err
    key = expected.split(":")[0].split(".")[-1]
    if expected.endswith("missing"):  # a missing key: the line of the object that lacks it
        key = expected.split(":")[0].split(".")[-2]
    # The line named is the bad key's line inside the right upstream's entry.
    line = int(run.err.split("upstream.lock:")[1].split(":")[0])
    lines = text.splitlines()
    assert f'"{key}"' in lines[line - 1]
    if expected.startswith("upstreams.zz"):
        assert line >= next(i for i, l in enumerate(lines, 1) if '"zz"' in l)


def test_lock_that_is_not_json_names_the_line(tmp_path):
    root, _ = git_project(tmp_path)
    (root / "upstream.lock").write_text('{\n  "version": 1,\n  "upstreams": {,}\n}\n')
    run = run_cli(root, "upstream", "list")
    assert run.rc == 2 and "upstream.lock:3:" in run.err and "not valid JSON" in run.err


def test_bad_configuration_names_file_and_line(tmp_path):
    root, _ = git_project(tmp_path)
    text = (root / "pyproject.toml").read_text()
    (root / "pyproject.toml").write_text(text.replace('kind = "git"', 'kind = "svn"'))
    run = run_cli(root, "list")
    assert run.rc == 2
    assert "pyproject.toml:" in run.err and "tool.patchforge.upstreams.up.kind" in run.err
    line = int(run.err.split("pyproject.toml:")[1].split(":")[0])
    assert 'kind = "svn"' in (root / "pyproject.toml").read_text().splitlines()[line - 1]


def test_init_writes_gitattributes_that_git_merges_history_by_union(tmp_path):
    """Two branches that each appended a line to series/history.jsonl merge without a conflict
    (keeping both lines), through the .gitattributes `init` writes; generated files are marked."""
    ok(None, "init", cwd=tmp_path)
    git(tmp_path, "init", "-q")
    history = tmp_path / "series" / "history.jsonl"
    history.write_bytes(b'{"event": "start"}\n')
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-q", "-m", "start")
    git(tmp_path, "checkout", "-q", "-b", "other")
    history.write_bytes(b'{"event": "start"}\n{"event": "other"}\n')
    git(tmp_path, "commit", "-q", "-am", "other")
    git(tmp_path, "checkout", "-q", "main")
    history.write_bytes(b'{"event": "start"}\n{"event": "mine"}\n')
    git(tmp_path, "commit", "-q", "-am", "mine")
    git(tmp_path, "merge", "-q", "--no-edit", "other")
    assert history.read_bytes().splitlines() == [b'{"event": "start"}', b'{"event": "mine"}',
                                                 b'{"event": "other"}']
    attrs = git(tmp_path, "check-attr", "linguist-generated", "--", "series/PATCHES.md",
                "overlays/SHA256SUMS", "overlays/gfx942/manifest.json", "series/a/x.patch")
    assert attrs.splitlines() == [
        "series/PATCHES.md: linguist-generated: set",
        "overlays/SHA256SUMS: linguist-generated: set",
        "overlays/gfx942/manifest.json: linguist-generated: set",
        "series/a/x.patch: linguist-generated: unspecified"]
    # Running init's line-adding again (a second project in the same place) adds nothing twice.
    from patchforge.ops.setup import GITATTRIBUTES_LINES, _add_missing_lines
    assert _add_missing_lines(tmp_path / ".gitattributes", GITATTRIBUTES_LINES) is False


def test_spellings_of_one_wheel_version_pin_one_file_as_one_import(tmp_path, monkeypatch):
    """`--at 01.1` was recorded as typed and imported the 1.1 wheel as another commit than
    `--at 1.1` (the import's label is in its commit): one file, two pins, which status and
    rebase took for two versions. `--at 1.2` was refused for the 1.2.0 wheel, which PEP 440
    and pip's `==` take as equal. Now every spelling pins the wheel's own normalized version,
    one commit; and a lock an earlier patchforge wrote with `01.1` still reads, in a new cache
    too (its import made again under the lock's spelling, the same commit)."""
    wheels = tmp_path / "wheels"
    build_wheel(wheels, "tinypkg", "1.1", {"tinypkg/__init__.py": b"VALUE = 1\n"})
    build_wheel(wheels, "tinypkg", "1.2.0", {"tinypkg/__init__.py": b"VALUE = 2\n"})
    # A file named like a wheel of 1.1 that no wheel's name can be (a build tag starts with
    # a digit), first by name: not a cached wheel of 1.1, never taken for one.
    shutil.copy(wheels / "tinypkg-1.1-py3-none-any.whl", wheels / "tinypkg-1.1-a1-py3-none-any.whl")
    monkeypatch.setenv("PATCHFORGE_WHEELS", str(wheels))
    root = tmp_path / "stack"
    ok(None, "init", "--standalone", str(root))

    def pinned() -> tuple[str, str, str, str]:
        pin = json.loads((root / "upstream.lock").read_bytes())["upstreams"]["tiny"]
        return pin["commit"], pin["label"], pin["version"], pin["source"]["version"]

    ok(root, "upstream", "add", "tiny", "--wheel", "tinypkg", "--at", "01.1",
       "--install-root", "/opt/tiny")
    first = pinned()
    assert first[1:] == ("1.1", "1.1", "1.1"), first
    for spelling in ("1.1", "v1.1", "1.1.0"):
        ok(root, "upstream", "pin", "tiny", "--at", spelling, "--force")
        assert pinned() == first, spelling
    # A target of another spelling is the pinned commit, not another import of the file.
    run = ok(root, "--offline", "status", "--against", "tiny=01.1.0")
    assert f"tiny: target 1.1 {first[0][:12]}\n" in run.out, run.out
    for spelling in ("1.2", "v1.2", "1.2.0"):
        run = ok(root, "--offline", "upstream", "pin", "tiny", "--at", spelling, "--force")
        assert pinned()[1:] == ("1.2.0", "1.2.0", "1.2.0"), (spelling, run.err)
    second = pinned()
    run = run_cli(root, "--offline", "status", "--against", "tiny=1.3")
    assert run.rc == 2 and "named in full" not in run.err and "did you mean" not in run.err

    ok(root, "upstream", "pin", "tiny", "--at", "1.1", "--force")
    old_commit, lock = _lock_written_for_01_1(tmp_path, root)
    said = "".join(ok(root, "--offline", *args).text for args in (
        ("fetch",), ("status",), ("overlays",), ("upstream", "list")))
    assert "01.1" in said and old_commit[:12] in said, said
    assert (root / "upstream.lock").read_text() == lock
    # Moving on from it records the one spelling again.
    ok(root, "--offline", "upstream", "pin", "tiny", "--at", "1.2", "--force")
    assert pinned() == second


def _lock_written_for_01_1(tmp_path: Path, root: Path) -> tuple[str, str]:
    """Turn `root`'s upstream.lock, pinning wheel upstream `tiny` at 1.1, into the one an
    earlier patchforge wrote for `--at 01.1` (byte for byte, as compared when this was written):
    the spelling in label, version and source.version, and the commit of an import labelled so
    (its message names the label); then remove the store. (that commit, the lock's text)"""
    pinned = json.loads((root / "upstream.lock").read_bytes())["upstreams"]["tiny"]["commit"]
    commit = git_bytes(root, "--git-dir", str(Path(os.environ["PATCHFORGE_CACHE"]) /
                                              "store.git"), "cat-file", "commit", pinned)
    assert b"\npatchforge import of tiny 1.1\n" in commit
    scratch = tmp_path / "scratch"
    git(tmp_path, "init", "-q", str(scratch))
    old_commit = git(scratch, "hash-object", "-t", "commit", "--stdin", input=commit.replace(
        b"\npatchforge import of tiny 1.1\n", b"\npatchforge import of tiny 01.1\n")).strip()
    lock = (root / "upstream.lock").read_text()
    lock = lock.replace(pinned, old_commit).replace('"1.1"', '"01.1"')
    (root / "upstream.lock").write_text(lock)
    shutil.rmtree(Path(os.environ["PATCHFORGE_CACHE"]) / "store.git")
    return old_commit, lock


@pytest.mark.parametrize("spelling", ["01.1", "1.1"])
def test_a_target_of_an_earlier_locks_pinned_version_is_the_pin(tmp_path, monkeypatch,
                                                                 spelling):
    """A lock an earlier patchforge wrote for `--at 01.1` pins the import labelled 01.1. A
    target of that version, spelled so or normalized, was imported under `1.1`: another commit
    of the same file, which `status --against` showed as a new revision ("target 1.1 ...
    (series based on ...)") and `rebase --to` moved the lock to. It is the pin itself."""
    wheels = tmp_path / "wheels"
    build_wheel(wheels, "tinypkg", "1.1", {"tinypkg/__init__.py": b"VALUE = 1\n"})
    monkeypatch.setenv("PATCHFORGE_WHEELS", str(wheels))
    root = tmp_path / "stack"
    ok(None, "init", "--standalone", str(root))
    ok(root, "upstream", "add", "tiny", "--wheel", "tinypkg", "--at", "1.1",
       "--install-root", "/opt/tiny")
    old_commit, lock = _lock_written_for_01_1(tmp_path, root)
    ok(root, "--offline", "fetch")
    (tmp_path / "overlay.py").write_bytes(b"VALUE = 2\n")
    ok(root, "--offline", "import", "overlay", str(tmp_path / "overlay.py"),
       "--path", "tinypkg/__init__.py", "--name", "fix")
    run = ok(root, "--offline", "status", "--against", f"tiny={spelling}")
    assert f"tiny: target 01.1 {old_commit[:12]}\n" in run.out, run.out
    assert "series based on" not in run.out, run.out
    run = ok(root, "--offline", "rebase", "--to", f"tiny={spelling}")
    assert f"01.1 ({old_commit[:12]}) -> 01.1 ({old_commit[:12]})" in run.text, run.text
    assert (root / "upstream.lock").read_text() == lock


def _pip_told_of(monkeypatch, tmp_path: Path, index: Path) -> None:
    """pip finds wheels in the find-links directory `index` alone; the wheel cache is empty."""
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(index))
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    for key in ("PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("PATCHFORGE_WHEELS", str(tmp_path / "wheels"))


def test_a_release_beside_its_local_build_is_pinned_and_fetched(tmp_path, monkeypatch):
    """An index with toypkg 2.0 and a local build of it, 2.0+rocm.1 (as PyPI beside a ROCm
    index serves torch or vllm): pip's `==2.0` takes local builds too and prefers them, so
    `upstream add --at 2.0` was refused ("gave toypkg-2.0+rocm.1-..., not a wheel of toypkg
    2.0"), and a lock pinning the 2.0 file, made before the local build was published, failed
    `fetch` in a new cache on pip's hash check ("someone may have tampered with them"). The
    lock's very file is asked for, and `--at 2.0` takes 2.0's; a local build alone is named."""
    index = tmp_path / "index"
    release = build_wheel(index, "toypkg", "2.0", {"toypkg/m.py": b"A = 1\n"}, origin=False)
    _pip_told_of(monkeypatch, tmp_path, index)
    early = tmp_path / "early"
    ok(None, "init", "--standalone", str(early))
    ok(early, "upstream", "add", "toy", "--wheel", "toypkg", "--at", "2.0",
       "--install-root", "/opt/site")
    build_wheel(index, "toypkg", "2.0+rocm.1", {"toypkg/m.py": b"A = 2\n"}, origin=False)
    digest = hashlib.sha256(release.read_bytes()).hexdigest()
    root = tmp_path / "stack"
    ok(None, "init", "--standalone", str(root))
    ok(root, "upstream", "add", "toy", "--wheel", "toypkg", "--at", "2.0",
       "--install-root", "/opt/site")
    source = lock_doc(root)["upstreams"]["toy"]["source"]
    assert (source["filename"], source["sha256"]) == (release.name, digest), source
    # The early lock, fetched where nothing is cached: pip is asked for that file.
    code, err = _fetch_in_a_new_cache(early, index, terminal=False)
    assert code == 0, err
    # The local build named in full is pinned; alone on the index, `--at 2.0` names it.
    ok(root, "upstream", "pin", "toy", "--at", "2.0+rocm.1", "--force")
    assert lock_doc(root)["upstreams"]["toy"]["label"] == "2.0+rocm.1"
    release.unlink()
    shutil.rmtree(tmp_path / "wheels")
    run = run_cli(root, "upstream", "pin", "toy", "--at", "2.0", "--force")
    assert run.rc == 2, run.text
    said = " ".join(run.err.split())
    assert "toypkg 2.0+rocm.1, a local build of 2.0, and no file of 2.0 itself that pip " \
           "could take" in said and "(2.0+rocm.1)" in said, run.err
    # pip's own words of the second run are kept: any failure of it (an index answering an
    # error, a network drop) was said as "the index has no file of 2.0".
    assert "pip download toypkg===2.0 failed: " in said, run.err
    assert "No matching distribution found for toypkg===2.0" in said, run.err


def test_a_locked_wheel_is_fetched_beside_a_later_rebuild_with_a_build_tag(tmp_path,
                                                                              monkeypatch):
    """A lock pins toypkg-2.0-py3-none-any.whl; the index (a find-links directory: no sha256 in
    its links) later gains a rebuild of 2.0 with a build tag, toypkg-2.0-1-py3-none-any.whl,
    which pip prefers for `===2.0`: `fetch` in a new cache failed on pip's hash check ("someone
    may have tampered with them"). The locked file itself is downloaded, by its own link."""
    index = tmp_path / "index"
    release = build_wheel(index, "toypkg", "2.0", {"toypkg/m.py": b"A = 1\n"}, origin=False)
    _pip_told_of(monkeypatch, tmp_path, index)
    root = tmp_path / "stack"
    ok(None, "init", "--standalone", str(root))
    ok(root, "upstream", "add", "toy", "--wheel", "toypkg", "--at", "2.0",
       "--install-root", "/opt/site")
    with zipfile.ZipFile(release) as old, \
            zipfile.ZipFile(index / "toypkg-2.0-1-py3-none-any.whl", "w") as rebuild:
        for info in old.infolist():
            rebuild.writestr(info, b"A = 9\n" if info.filename == "toypkg/m.py"
                             else old.read(info.filename))
    code, err = _fetch_in_a_new_cache(root, index, terminal=False)
    assert code == 0, err
    fetched = root / "cold-cache" / "wheels" / release.name
    assert fetched.read_bytes() == release.read_bytes()
    assert not (root / "cold-cache" / "wheels" / "toypkg-2.0-1-py3-none-any.whl").exists()


def test_a_wheel_version_with_an_epoch_is_pinned(tmp_path, monkeypatch):
    """A version with an epoch (`1!2.0`, PEP 440), whose wheel pip downloads and installs,
    was refused: "pip download toypkg==1!2.0 gave toypkg-1!2.0-py3-none-any.whl, not a wheel
    of toypkg 1!2.0" (a wheel's name was not to hold `!`). It is pinned, judged against
    another epoch version, and fetched again in a new cache."""
    index = tmp_path / "index"
    middle = b"".join(b"x%d = 0\n" % n for n in range(8))
    build_wheel(index, "toypkg", "1!2.0", {"toypkg/m.py": b"A = 1\n" + middle + b"B = 2\n"},
                origin=False)
    build_wheel(index, "toypkg", "1!3.0", {"toypkg/m.py": b"A = 1\n" + middle + b"B = 3\n"},
                origin=False)
    _pip_told_of(monkeypatch, tmp_path, index)
    root = tmp_path / "stack"
    ok(None, "init", "--standalone", str(root))
    ok(root, "upstream", "add", "toy", "--wheel", "toypkg", "--at", "1!2.0",
       "--install-root", "/opt/site")
    pin = lock_doc(root)["upstreams"]["toy"]
    assert (pin["label"], pin["source"]["filename"]) == \
        ("1!2.0", "toypkg-1!2.0-py3-none-any.whl"), pin
    (tmp_path / "m.py").write_bytes(b"A = 5\n" + middle + b"B = 2\n")
    ok(root, "import", "overlay", str(tmp_path / "m.py"), "--path", "toypkg/m.py",
       "--name", "fix")
    run = ok(root, "status", "--against", "toy=1!3.0")
    assert "toy: target 1!3.0 " in run.out and "toy/fix.patch  applies" in run.out, run.out
    code, err = _fetch_in_a_new_cache(root, index, terminal=False)
    assert code == 0, err


def _fetch_in_a_new_cache(root: Path, index: Path, *args: str, terminal: bool) -> tuple[int, str]:
    """`patchforge ARGS fetch` as a child process with a cold cache of its own (the wheel
    downloaded again by pip from the find-links directory `index`): (exit code, what it wrote on
    stderr). With `terminal`, stderr is a pseudo-terminal."""
    import pty

    cache = root / "cold-cache"
    shutil.rmtree(cache, ignore_errors=True)
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "PIP_NO_INDEX": "1",
           "PIP_FIND_LINKS": str(index), "PATCHFORGE_CACHE": str(cache),
           "PATCHFORGE_WHEELS": str(cache / "wheels")}
    command = [sys.executable, "-m", "patchforge", "--root", str(root), *args, "fetch"]
    if not terminal:
        proc = subprocess.run(command, env=env, capture_output=True)
        return proc.returncode, proc.stderr.decode("utf-8", "replace")
    leader, follower = pty.openpty()
    proc = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=follower)
    os.close(follower)
    seen = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        seen += chunk
    os.close(leader)
    return proc.wait(), seen.decode("utf-8", "replace")


@pytest.mark.skipif(shutil.which("pip") is None and importlib.util.find_spec("pip") is None,
                    reason="no pip")
def test_fetch_shows_download_then_import_progress_on_a_terminal_only(tmp_path, monkeypatch):
    index = tmp_path / "index"
    build_wheel(index, "tinypkg", "1.2.0", {"tinypkg/__init__.py": b"VALUE = 1\n",
                                            "tinypkg/data.bin": os.urandom(300_000)})
    monkeypatch.setenv("PATCHFORGE_WHEELS", str(index))
    ok(None, "init", "--standalone", cwd=tmp_path)
    ok(tmp_path, "upstream", "add", "tiny", "--wheel", "tinypkg", "--at", "1.2.0")
    code, seen = _fetch_in_a_new_cache(tmp_path, index, terminal=True)
    assert code == 0, seen
    downloading = seen.index("downloading tinypkg 1.2.0 with pip")
    importing = seen.index("importing tiny 1.2.0: 5 files")
    assert downloading < importing and "100% (" in seen[importing:]
    assert seen.endswith("\r\x1b[K"), "the progress line is cleared at the end"
    # -q (errors only) on a terminal: no progress line either (it was drawn, as without -q).
    assert _fetch_in_a_new_cache(tmp_path, index, "-q", terminal=True) == (0, "")
    # Piped: nothing at all; with -v, one line per phase and no line rewritten in place.
    assert _fetch_in_a_new_cache(tmp_path, index, terminal=False) == (0, "")
    code, seen = _fetch_in_a_new_cache(tmp_path, index, "-v", terminal=False)
    assert code == 0 and "\r" not in seen
    lines = seen.splitlines()
    phases = ["patchforge: fetching tiny 1.2.0", "patchforge: downloading tinypkg 1.2.0 with pip",
              "patchforge: importing tiny 1.2.0: 5 files, 0 MB"]
    assert [line for line in lines if line in phases] == phases, lines
    assert all(line.startswith("patchforge: ") for line in lines), lines


@pytest.mark.skipif(shutil.which("pip") is None and importlib.util.find_spec("pip") is None,
                    reason="no pip")
def test_a_pinned_universal_wheel_is_fetched_again_on_a_machine_without_it(tmp_path, monkeypatch):
    """The usual name of a pure-Python wheel is `NAME-1.0-py2.py3-none-any.whl`. Pinned with
    Requires-Python >=3.8, a fetch with a cold cache (CI, a colleague's machine) asked pip for
    Python "2", the file's first interpreter tag, and pip refused every file: the lock worked
    only where the wheel was already cached. pip is asked for this Python's version."""
    import zipfile

    index = tmp_path / "index"
    index.mkdir()
    name = "tinypkg-1.0-py2.py3-none-any.whl"
    members = {"tinypkg/__init__.py": b"VALUE = 1\n",
               "tinypkg-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: tinypkg\n"
                                                 b"Version: 1.0\nRequires-Python: >=3.8\n",
               "tinypkg-1.0.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\n"
                                             b"Root-Is-Purelib: true\nTag: py2-none-any\n"
                                             b"Tag: py3-none-any\n",
               "tinypkg-1.0.dist-info/RECORD": b""}
    with zipfile.ZipFile(index / name, "w") as archive:
        for rel, data in members.items():
            archive.writestr(zipfile.ZipInfo(rel, date_time=(2024, 1, 1, 0, 0, 0)), data)
    monkeypatch.setenv("PATCHFORGE_WHEELS", str(index))
    ok(None, "init", "--standalone", cwd=tmp_path)
    ok(tmp_path, "upstream", "add", "tiny", "--wheel", "tinypkg", "--at", "1.0")
    assert lock_doc(tmp_path)["upstreams"]["tiny"]["source"]["filename"] == name
    code, seen = _fetch_in_a_new_cache(tmp_path, index, terminal=False)
    assert code == 0, seen
    assert (tmp_path / "cold-cache" / "wheels" / name).is_file()


def test_a_stack_repository_keeps_its_patch_bytes_through_git_autocrlf(tmp_path):
    """A stack committed on a machine with core.autocrlf=true (Git for Windows' default) and
    cloned on one: git converted the patch files' line ends both ways, so a fix of a CRLF file
    lost its CRs in the commit (the fix silently changed), and in the clone every patch line
    ended in CRLF (every fix a conflict). The .gitattributes `init` writes now keep the patch
    files, the lock and the generated files byte for byte (`-text`)."""
    from helpers.upstream import Upstream

    up = Upstream(tmp_path / "up", {"crlf.txt": b"one\r\ntwo\r\nthree\r\n",
                                    "lf.py": b"a = 1\nb = 2\nc = 3\n"})
    root = tmp_path / "stack"
    root.mkdir()
    ok(None, "init", "--standalone", cwd=root)
    ok(root, "upstream", "add", "up", "--git", str(up.path), "--at", up.base)
    ok(root, "new", "fix", "--file", "crlf.txt", "--file", "lf.py")
    work = root / ".patchforge" / "work" / "up"
    (work / "crlf.txt").write_bytes(b"one\r\nTWO\r\nthree\r\n")
    (work / "lf.py").write_bytes(b"a = 1\nb = 20\nc = 3\n")
    ok(root, "refresh")
    patch = (root / "series/up/fix.patch").read_bytes()
    assert b"+TWO\r\n" in patch
    git(root, "init", "-q")
    git(root, "-c", "core.autocrlf=true", "add", "-A")
    git(root, "-c", "core.autocrlf=true", "commit", "-q", "-m", "stack")
    assert git_bytes(root, "show", "HEAD:series/up/fix.patch") == patch
    clone = tmp_path / "clone"
    git(tmp_path, "-c", "core.autocrlf=true", "clone", "-q", str(root), str(clone))
    assert (clone / "series/up/fix.patch").read_bytes() == patch
    status = json.loads(ok(clone, "status", "--json").out)
    assert [p["state"] for p in status["patches"]] == ["applies"]
    ok(clone, "overlays")
    assert (clone / "overlays/up/crlf.txt").read_bytes() == b"one\r\nTWO\r\nthree\r\n"


def test_upstream_add_of_a_name_with_a_dot_writes_a_table_toml_reads_back(tmp_path):
    """Names may hold `.` (`vllm.rocm`): `upstream add` wrote `[upstreams.vllm.rocm]`, which
    TOML reads as a table `rocm` inside a table `vllm`, and refused its own text ("upstreams.vllm.kind:
    missing"). The key is quoted now. A name git cannot keep a ref for (`up.lock`, `up.`) is
    refused by name, nothing written, instead of failing in the store with a derived name."""
    upstream = Upstream(tmp_path / "up", {"a.py": b"a = 1\n"})
    root, _ = git_project(tmp_path / "p")
    ok(root, "upstream", "add", "vllm.rocm", "--git", str(upstream.path), "--at", "main")
    listed = json.loads(ok(root, "upstream", "list", "--json").out)
    assert "vllm.rocm" in [u["upstream"] for u in listed["upstreams"]]
    config = tomllib.loads((root / "pyproject.toml").read_text())
    assert config["tool"]["patchforge"]["upstreams"]["vllm.rocm"]["kind"] == "git"
    before = tree_bytes(root)
    for name in ("up.lock", "up."):
        run = run_cli(root, "upstream", "add", name, "--git", str(upstream.path), "--at", "main")
        assert run.rc == 2 and f"upstream {name!r} cannot end in '.' or '.lock'" in run.err, \
            run.text
    assert tree_bytes(root) == before


def test_a_pyproject_table_beside_patchforge_toml_is_never_ignored_silently(tmp_path):
    """A stack configured by patchforge.toml, and someone adds `[tool.patchforge.profiles]` to
    the pyproject.toml beside it (where the reference also says configuration goes): only
    patchforge.toml was read, and the profiles, upstreams or checks written in pyproject.toml
    did nothing, without a word. Every command now names the table's line and says which file
    is read."""
    root, _ = git_project(tmp_path / "p")  # [tool.patchforge] in pyproject.toml
    config = root / "pyproject.toml"
    text = config.read_text()
    start = text.index("[tool.patchforge]")
    (root / "patchforge.toml").write_text(text[start:].replace("tool.patchforge.", "")
                                          .replace("[tool.patchforge]\n", ""))
    config.write_text(text[:start])
    ok(root, "upstream", "list")
    config.write_text(text[:start] + '[tool.patchforge.profiles]\ngfx942 = "MI300X"\n')
    line = config.read_text().splitlines().index("[tool.patchforge.profiles]") + 1
    for args in (["list"], ["status"], ["--root", str(root), "upstream", "list"]):
        run = run_cli(None, *args, cwd=root)
        assert run.rc == 2 and f"pyproject.toml:{line}: " in run.err \
            and "only patchforge.toml is read" in run.err, (args, run.text)


def test_a_branch_the_upstream_lacks_is_answered_with_the_branches_it_has(tmp_path):
    """`upstream add lib --git DIR --at main` on a repository `git init` made with `master`:
    the error read "lib.<hash>: DIR has no branch or tag 'main'" (the store's own name for the
    remote) and "check the name". It names the branches the repository has; nothing is
    written."""
    upstream = tmp_path / "lib"
    upstream.mkdir()
    git(upstream, "init", "-q", "-b", "master")
    (upstream / "m.py").write_bytes(b"a = 1\n")
    git(upstream, "add", "m.py")
    git(upstream, "-c", "user.name=u", "-c", "user.email=u@example.com", "commit", "-qm", "one")
    git(upstream, "branch", "release-1")
    root = tmp_path / "stack"
    ok(None, "init", str(root))
    config = {name: (root / name).read_bytes() for name in ("patchforge.toml", "upstream.lock")}
    run = run_cli(root, "upstream", "add", "lib", "--git", str(upstream), "--at", "main")
    assert run.rc == 2, run.text
    assert f"{upstream} has no branch or tag 'main' (its branches: master, release-1)" in run.err
    assert "lib." not in run.err.replace(f"{upstream}", "")
    assert {name: (root / name).read_bytes() for name in config} == config
    # A mistyped tag: the tags are said too (only the branches were), all of a few, and of
    # many those like the name.
    for tag in ("v1.0", "v1.1"):
        git(upstream, "tag", tag)
    run = run_cli(root, "upstream", "add", "lib", "--git", str(upstream), "--at", "v1.2")
    assert run.rc == 2 and "(its branches: master, release-1; its tags: v1.0, v1.1)" in run.err, \
        run.err
    for n in range(12):
        git(upstream, "tag", f"nightly-2026{n:04d}")
    run = run_cli(root, "upstream", "add", "lib", "--git", str(upstream), "--at", "v1.2")
    assert run.rc == 2 and "tags like it: v1.1, v1.0)" in run.err, run.err
    ok(root, "upstream", "add", "lib", "--git", str(upstream), "--at", "master")


def test_the_first_status_of_a_new_project_says_there_are_no_patches_yet(tmp_path, monkeypatch):
    """`init`, `upstream add`, then `status`: the first thing a newcomer sees read "all 0
    patches apply and are still needed". It says there are no patches yet, and how to make or
    bring the first; exit 0. The job summary of `--format github` says the same."""
    upstream = Upstream(tmp_path / "up", UPSTREAM_FILES)
    root = tmp_path / "stack"
    ok(None, "init", str(root))
    ok(root, "upstream", "add", "up", "--git", str(upstream.path), "--at", "main",
       "--install-root", "/opt/site")
    run = run_cli(root, "status")
    assert run.rc == 0, run.text
    assert run.out.splitlines()[-1] == "no patches yet", run.text
    assert "0 patches" not in run.text
    assert "hint: `patchforge new NAME --file PATH` starts a fix" in run.err, run.text
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    run = run_cli(root, "status", "--format", "github")
    assert run.rc == 0, run.text
    assert ": no patches yet" in summary.read_text(), summary.read_text()
