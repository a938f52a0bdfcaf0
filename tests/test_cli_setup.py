"""The real CLI on real upstreams built here: `init`, `upstream add|pin|list`, `fetch`, the lock's
errors and bytes, and `--help` of every command.

The helpers at the top (`pf`, `build_git_upstream`, `build_wheel`, `git_project`) are shared by the
other CLI test files (test_cli_series, test_cli_exchange, test_overlays).
"""
from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import REPO_ROOT, git
from patchforge.cli import LAZY_COMMANDS, main

# --------------------------------------------------------------------------------------------
# Helpers shared by the CLI test files


@dataclass
class Run:
    code: int
    out: bytes
    err: str

    @property
    def text(self) -> str:
        return self.out.decode("utf-8", "replace")


def pf(*args: str, root: Path | None = None, cwd: Path | None = None) -> Run:
    """Run `patchforge [--root ROOT] ARGS` in-process through patchforge.cli.main (the one place
    that maps errors to exit codes), capturing stdout (bytes) and stderr."""
    argv = (["--root", str(root)] if root is not None else []) + [str(a) for a in args]
    runner = CliRunner()
    previous = Path.cwd()
    if cwd is not None:
        os.chdir(cwd)
    try:
        with runner.isolation() as (out, err, _):
            code = 0
            try:
                main(argv)
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            return Run(code, out.getvalue(), err.getvalue().decode("utf-8", "replace"))
    finally:
        os.chdir(previous)


def ok(*args: str, root: Path | None = None, cwd: Path | None = None) -> Run:
    run = pf(*args, root=root, cwd=cwd)
    assert run.code == 0, f"patchforge {' '.join(map(str, args))} -> {run.code}\n{run.err}\n{run.text}"
    return run


UPSTREAM_FILES = {
    "a.py": b"".join(b"line%d\n" % i for i in range(1, 21)),
    "pkg/b.py": b"x = 1\ny = 2\nz = 3\n",
    "pkg/crlf.txt": b"one\r\ntwo\r\nthree\r\n",
    "pkg/nofinal.txt": b"alpha\nbeta\ngamma",
}


def build_git_upstream(where: Path, files: dict[str, bytes] | None = None) -> tuple[Path, str]:
    """A real git repository with `files` committed on main: (path, commit id)."""
    where.mkdir(parents=True)
    git(where, "init", "-q", "-b", "main")
    for rel, data in (files or UPSTREAM_FILES).items():
        path = where / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    git(where, "add", "-A")
    git(where, "commit", "-q", "-m", "upstream: initial")
    return where, git(where, "rev-parse", "HEAD").strip()


def build_wheel(directory: Path, dist: str, version: str, files: dict[str, bytes]) -> Path:
    """A tiny real wheel (a zip with a dist-info), with fixed timestamps."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{dist}-{version}-py3-none-any.whl"
    info = f"{dist}-{version}.dist-info"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        members = dict(files)
        members[f"{info}/METADATA"] = f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n".encode()
        members[f"{info}/WHEEL"] = b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        members[f"{info}/RECORD"] = b""
        for rel, data in members.items():
            archive.writestr(zipfile.ZipInfo(rel, date_time=(2024, 1, 1, 0, 0, 0)), data)
    return path


def git_project(tmp_path: Path, files: dict[str, bytes] | None = None, *, name: str = "up",
                profiles: dict[str, str] | None = None,
                install_root: str = "/usr/lib/python3/site-packages") -> tuple[Path, str]:
    """A project (pyproject.toml) with one git upstream pinned at main: (root, commit)."""
    upstream, commit = build_git_upstream(tmp_path / f"{name}-upstream", files)
    root = tmp_path / "project"
    root.mkdir()
    (root / "pyproject.toml").write_bytes(b'[project]\nname = "stack"\n')
    ok("init", root=None, cwd=root)
    if profiles:
        text = (root / "pyproject.toml").read_text()
        lines = "".join(f'{k} = "{v}"\n' for k, v in profiles.items())
        text = text.replace("[tool.patchforge.profiles]\n", "[tool.patchforge.profiles]\n" + lines)
        (root / "pyproject.toml").write_text(text)
    ok("upstream", "add", name, "--git", str(upstream), "--at", "main",
       "--install-root", install_root, root=root)
    return root, commit


def lock_doc(root: Path) -> dict:
    return json.loads((root / "upstream.lock").read_bytes())


def tree_bytes(directory: Path) -> dict[str, bytes]:
    """Every file under `directory` (relative path -> bytes), to compare whole trees."""
    return {p.relative_to(directory).as_posix(): p.read_bytes()
            for p in sorted(directory.rglob("*")) if p.is_file()}


def schema_errors(instance, name: str) -> list[str]:
    import jsonschema

    schema = json.loads((REPO_ROOT / "patchforge/formats/schemas" / f"{name}.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return [e.message for e in jsonschema.Draft202012Validator(schema).iter_errors(instance)]


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


SUBCOMMANDS = [(name,) for name in LAZY_COMMANDS] + [
    ("upstream", "add"), ("upstream", "pin"), ("upstream", "list"),
    ("import", "overlay"), ("import", "git"), ("import", "quilt"), ("import", "mbox")]


@pytest.mark.parametrize("words", SUBCOMMANDS, ids=lambda w: " ".join(w))
def test_every_subcommand_help(words):
    module = LAZY_COMMANDS[words[0]][0]
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is not written yet (owned by another issue)")
    run = pf(*words, "--help")
    assert run.code == 0, run.err
    assert run.text.startswith("Usage: patchforge " + " ".join(words))


# --------------------------------------------------------------------------------------------
# init


def test_init_appends_to_pyproject_byte_for_byte(tmp_path):
    original = ('[project]\r\nname = "x"  # kept\r\n\r\n[tool.black]\r\nline-length = 99\r\n'
                '# ünïcode comment, no final newline').encode()
    (tmp_path / "pyproject.toml").write_bytes(original)
    run = ok("init", cwd=tmp_path)
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
    again = pf("init", cwd=tmp_path)
    assert again.code == 2 and "already has a patchforge configuration" in again.err
    assert tree_bytes(tmp_path) == before


def test_init_standalone_leaves_pyproject_alone(tmp_path):
    (tmp_path / "pyproject.toml").write_bytes(b'[project]\nname = "x"\n')
    ok("init", "--standalone", cwd=tmp_path)
    assert (tmp_path / "pyproject.toml").read_bytes() == b'[project]\nname = "x"\n'
    doc = tomllib.loads((tmp_path / "patchforge.toml").read_text())
    assert "forge" in doc and "tool" not in doc
    # The standalone file is the configuration from now on, wherever we stand below the root.
    (tmp_path / "sub").mkdir()
    assert ok("upstream", "list", "--json", cwd=tmp_path / "sub").text.strip() == \
        json.dumps({"upstreams": []}, indent=2)


def test_init_without_pyproject_writes_patchforge_toml(tmp_path):
    ok("init", str(tmp_path / "new"))
    assert (tmp_path / "new" / "patchforge.toml").is_file()
    assert not (tmp_path / "new" / "pyproject.toml").exists()


def test_init_refuses_a_bad_pyproject_naming_the_line(tmp_path):
    bad = b'[project]\nname = "x"\nversion = = 1\n'
    (tmp_path / "pyproject.toml").write_bytes(bad)
    run = pf("init", cwd=tmp_path)
    assert run.code == 2
    assert "pyproject.toml:3:" in run.err and "not valid TOML" in run.err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pyproject.toml"]
    assert (tmp_path / "pyproject.toml").read_bytes() == bad


def test_init_refuses_a_pyproject_that_cannot_take_the_table(tmp_path):
    original = b'tool = {black = {line-length = 99}}\n[project]\nname = "x"\n'
    (tmp_path / "pyproject.toml").write_bytes(original)
    run = pf("init", cwd=tmp_path)
    assert run.code == 2 and "pyproject.toml" in run.err
    assert (tmp_path / "pyproject.toml").read_bytes() == original
    assert not (tmp_path / "upstream.lock").exists()


# --------------------------------------------------------------------------------------------
# upstream add / list / pin, for the three kinds


def test_upstream_add_git_pins_the_commit_and_appends_the_table(tmp_path):
    upstream, commit = build_git_upstream(tmp_path / "vllm-src")
    root = tmp_path / "stack"
    root.mkdir()
    ok("init", "--standalone", cwd=root)
    before = (root / "patchforge.toml").read_bytes()
    # A relative path from somewhere else than the root: kept relative to the root.
    (tmp_path / "elsewhere").mkdir()
    run = ok("--root", str(root), "upstream", "add", "vllm", "--git", "../vllm-src", "--at",
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
    listed = json.loads(ok("upstream", "list", "--json", root=root).out)
    assert listed == {"upstreams": [{"upstream": "vllm", "kind": "git", "label": "main",
                                     "commit": commit, "install_root": "/opt/site"}]}
    # Adding the same name again is refused without touching anything.
    snapshot = tree_bytes(root)
    again = pf("upstream", "add", "vllm", "--git", str(upstream), "--at", "main", root=root)
    assert again.code == 2 and "already configured" in again.err
    assert tree_bytes(root) == snapshot


def test_upstream_add_needs_exactly_one_kind(tmp_path):
    ok("init", "--standalone", cwd=tmp_path)
    for args in ([], ["--git", "x", "--wheel", "y"]):
        run = pf("upstream", "add", "u", *args, "--at", "1.0", root=tmp_path)
        assert run.code == 2 and "exactly one of" in run.err


def test_lock_is_deterministic_and_schema_valid(tmp_path):
    root, _ = git_project(tmp_path)
    data = (root / "upstream.lock").read_bytes()
    doc = json.loads(data)
    assert data == (json.dumps(doc, sort_keys=True, indent=2, ensure_ascii=False) + "\n").encode()
    assert schema_errors(doc, "lock") == []
    # Re-pinning at the same revision rewrites the very same bytes.
    ok("upstream", "pin", "up", "--at", "main", root=root)
    assert (root / "upstream.lock").read_bytes() == data


def test_upstream_add_wheel_from_a_cached_wheel(tmp_path, monkeypatch):
    wheels = tmp_path / "wheels"
    wheel = build_wheel(wheels, "tinypkg", "1.2.0", {"tinypkg/__init__.py": b"VALUE = 1\n",
                                                      "tinypkg/mod.py": b"def f():\n    return 1\n"})
    monkeypatch.setenv("PATCHFORGE_WHEELS", str(wheels))
    ok("init", "--standalone", cwd=tmp_path)
    ok("upstream", "add", "tiny", "--wheel", "tinypkg", "--at", "1.2.0", "--install-root",
       "/usr/lib/python3/dist-packages", root=tmp_path)
    pin = lock_doc(tmp_path)["upstreams"]["tiny"]
    assert pin["kind"] == "wheel" and pin["label"] == "1.2.0" and pin["version"] == "1.2.0"
    assert pin["source"] == {"package": "tinypkg", "version": "1.2.0", "filename": wheel.name,
                             "sha256": hashlib.sha256(wheel.read_bytes()).hexdigest()}
    assert schema_errors(lock_doc(tmp_path), "lock") == []
    # The import is deterministic: a fresh cache gives the same commit, and `fetch` says so.
    cache = Path(os.environ["PATCHFORGE_CACHE"])
    shutil.rmtree(cache)
    run = ok("fetch", "--json", root=tmp_path)
    assert json.loads(run.out) == {"fetched": [{"upstream": "tiny", "commit": pin["commit"],
                                                "result": "imported"}]}
    assert json.loads(ok("fetch", "--json", root=tmp_path).out)["fetched"][0]["result"] == "present"
    # A wheel that is not what the lock pinned is refused, naming the digests.
    shutil.rmtree(cache)
    build_wheel(wheels, "tinypkg", "1.2.0", {"tinypkg/__init__.py": b"VALUE = 2\n"})
    run = pf("fetch", root=tmp_path)
    assert run.code == 2 and "does not match the pinned sha256" in run.err


def test_upstream_add_wheel_rejects_a_non_version(tmp_path, monkeypatch):
    monkeypatch.setenv("PATCHFORGE_WHEELS", str(tmp_path / "wheels"))
    ok("init", "--standalone", cwd=tmp_path)
    run = pf("--offline", "upstream", "add", "w", "--wheel", "tinypkg", "--at", "main",
             root=tmp_path)
    assert run.code == 2 and "name a version" in run.err
    run = pf("--offline", "upstream", "add", "w", "--wheel", "tinypkg", "--at", "9.9",
             root=tmp_path)
    assert run.code == 2 and "--offline forbids downloading" in run.err
    assert lock_doc(tmp_path)["upstreams"] == {}


def test_upstream_add_dir_and_fetch_refuses_a_modified_dir(tmp_path):
    site = tmp_path / "site"
    (site / "pkg").mkdir(parents=True)
    (site / "pkg" / "m.py").write_bytes(b"a = 1\n")
    (site / "tool.sh").write_bytes(b"#!/bin/sh\n")
    (site / "tool.sh").chmod(0o755)
    root = tmp_path / "stack"
    root.mkdir()
    ok("init", "--standalone", cwd=root)
    ok("upstream", "add", "site", "--dir", "../site", "--at", "image-2024-06", cwd=root)
    assert tomllib.loads((root / "patchforge.toml").read_text())["upstreams"]["site"]["path"] == "../site"
    pin = lock_doc(root)["upstreams"]["site"]
    assert pin["kind"] == "dir" and pin["label"] == "image-2024-06"
    assert pin["source"] == {"path": "../site"}
    shutil.rmtree(os.environ["PATCHFORGE_CACHE"])
    run = ok("fetch", root=root)
    assert f"site: {pin['commit'][:12]} imported" in run.text
    # The directory changes under the pin: fetch refuses clearly.
    shutil.rmtree(os.environ["PATCHFORGE_CACHE"])
    (site / "pkg" / "m.py").write_bytes(b"a = 2\n")
    run = pf("fetch", root=root)
    assert run.code == 2
    assert f"upstream site: the locked revision is {pin['commit'][:12]}" in run.err
    assert "source changed under the pin" in run.err
    assert lock_doc(root)["upstreams"]["site"] == pin


def test_fetch_git_after_the_cache_is_gone(tmp_path):
    root, commit = git_project(tmp_path)
    shutil.rmtree(os.environ["PATCHFORGE_CACHE"])
    run = ok("fetch", root=root)
    assert run.text.strip() == f"up: {commit[:12]} fetched"
    assert ok("fetch", root=root).text.strip() == f"up: {commit[:12]} present"
    # The files are readable again (edit materializes them from the store).
    ok("new", "fix", root=root)
    assert (root / ".patchforge/work/up/a.py").read_bytes() == UPSTREAM_FILES["a.py"]
    unknown = pf("fetch", "nope", root=root)
    assert unknown.code == 2 and "'nope' is not pinned" in unknown.err


def test_fetch_refuses_a_rewritten_git_upstream(tmp_path):
    root, commit = git_project(tmp_path)
    upstream = tmp_path / "up-upstream"
    git(upstream, "commit", "-q", "--amend", "-m", "rewritten")
    git(upstream, "reflog", "expire", "--expire=now", "--all")
    git(upstream, "gc", "-q", "--prune=now")
    shutil.rmtree(os.environ["PATCHFORGE_CACHE"])
    run = pf("fetch", root=root)
    assert run.code == 2 and "up" in run.err


def test_upstream_pin_moves_the_lock_unless_patches_depend_on_it(tmp_path):
    root, first = git_project(tmp_path)
    upstream = tmp_path / "up-upstream"
    (upstream / "a.py").write_bytes(b"changed\n")
    git(upstream, "commit", "-qam", "second")
    second = git(upstream, "rev-parse", "HEAD").strip()
    ok("upstream", "pin", "up", "--at", "main", root=root)
    assert lock_doc(root)["upstreams"]["up"]["commit"] == second
    ok("upstream", "pin", "up", "--at", first[:10], root=root)
    assert lock_doc(root)["upstreams"]["up"]["commit"] == first
    ok("new", "fix", "--no-edit", root=root)
    before = (root / "upstream.lock").read_bytes()
    run = pf("upstream", "pin", "up", "--at", "main", root=root)
    assert run.code == 2 and "moving it is a rebase" in run.err
    assert (root / "upstream.lock").read_bytes() == before
    ok("upstream", "pin", "up", "--at", "main", "--force", root=root)
    assert lock_doc(root)["upstreams"]["up"]["commit"] == second
    bad = pf("upstream", "pin", "up", "--at", "no-such-branch", root=root)
    assert bad.code == 2 and "no-such-branch" in bad.err
    unknown = pf("upstream", "pin", "other", "--at", "main", root=root)
    assert unknown.code == 2 and "unknown upstream 'other'" in unknown.err


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
    run = pf("upstream", "list", root=root)
    assert run.code == 2
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
    run = pf("upstream", "list", root=root)
    assert run.code == 2 and "upstream.lock:3:" in run.err and "not valid JSON" in run.err


def test_bad_configuration_names_file_and_line(tmp_path):
    root, _ = git_project(tmp_path)
    text = (root / "pyproject.toml").read_text()
    (root / "pyproject.toml").write_text(text.replace('kind = "git"', 'kind = "svn"'))
    run = pf("list", root=root)
    assert run.code == 2
    assert "pyproject.toml:" in run.err and "tool.patchforge.upstreams.up.kind" in run.err
    line = int(run.err.split("pyproject.toml:")[1].split(":")[0])
    assert "[tool.patchforge.upstreams.up]" in (root / "pyproject.toml").read_text().splitlines()[line - 1]
