"""The last mile, with the real tools: the compose override file through Docker Compose v2
(`docker compose config`, the way the fragment's own header says to use it, and from a
deployment host that received only compose.yaml and overlays/), the generated Dockerfile through
a Dockerfile parser and its check steps through the shell, and `overlays` on a fresh clone."""
from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

from dockerfile_parse import DockerfileParser

import pytest

from helpers.cli import ok, run_cli
from helpers.deploy import (DEPLOY_ROOT, check_mounts, compose_binary, compose_config,
                            deploy_stack, example_stack, read_sums)
from helpers.dockerfile import copy_steps
from helpers.git import git
from helpers.env import REPO_ROOT
from helpers.project import UPSTREAM_FILES, add_patch_file, git_project, patch_bytes

INSTALL_ROOT = DEPLOY_ROOT
IMAGE = "registry.example.com/rocm/vllm:nightly"


def _lock_pins_an_image(root: Path, digest: str = "sha256:" + "ab" * 32) -> str:
    """upstream.lock pins the nightly image IMAGE by `digest`, as `rebase --to REPO:TAG` pins
    one; returns the digest."""
    lock_path = root / "upstream.lock"
    lock = json.loads(lock_path.read_text())
    lock["image"] = {"reference": IMAGE, "tag": "nightly", "digest": digest}
    lock_path.write_text(json.dumps(lock, indent=2, sort_keys=True) + "\n")
    return digest


@pytest.fixture
def stack(tmp_path):
    return deploy_stack(tmp_path)


@pytest.fixture(scope="module")
def example(tmp_path_factory):
    return example_stack(tmp_path_factory.mktemp("example"))


USER_COMPOSE = """services:
  inference:
    image: vllm/vllm-openai-rocm@sha256:e68d18b2ba50298661bfc49baf01158fbf036645c2362cccf3e8a7a79fe6c69a
    entrypoint: ["/vllm-entrypoint.sh"]
    volumes:
      - ./vllm-entrypoint.sh:/vllm-entrypoint.sh:ro
"""


def header_command(fragment: Path) -> list[str]:
    """The `docker compose ...` command the fragment's header recommends, as words."""
    for line in fragment.read_text().splitlines():
        match = re.match(r"#\s+docker compose (.*) up -d$", line)
        if match:
            return shlex.split(match.group(1))
    raise AssertionError(f"{fragment} recommends no docker compose command")


def test_example_stack_fragments_through_docker_compose(example, tmp_path):
    """The example stack (overlays regenerated from the real wheels): each profile's override,
    as its header says and through COMPOSE_FILE, on a deployment host that received
    compose.yaml and overlays/ only."""
    root = example
    for name in ("SHA256SUMS", "manifest.json", "gfx942/compose.yaml", "gfx950/compose.yaml"):
        assert (root / "overlays" / name).read_bytes() == \
            (REPO_ROOT / "overlays" / name).read_bytes(), f"committed {name} is stale"
    host = tmp_path / "host"
    host.mkdir()
    (host / "compose.yaml").write_text(USER_COMPOSE)
    shutil.copy2(root / "vllm-entrypoint.sh", host / "vllm-entrypoint.sh")
    overlays = host / "overlays"
    shutil.copytree(root / "overlays", overlays)
    sums = subprocess.run(["sha256sum", "-c", "--strict", "SHA256SUMS"], cwd=overlays,
                          capture_output=True, text=True)
    assert sums.returncode == 0, sums.stdout + sums.stderr
    roots = {"vllm": "/usr/local/lib/python3.12/dist-packages",
             "aiter": "/usr/local/lib/python3.12/dist-packages"}
    for profile in ("gfx942", "gfx950"):
        fragment = overlays / profile / "compose.yaml"
        words = header_command(fragment)
        assert words == ["-f", "compose.yaml", "-f", f"overlays/{profile}/compose.yaml"]
        model = json.loads(compose_config(host, *words[1::2]).stdout)
        mounted = check_mounts(model, "inference", overlays, profile, roots,
                               keep={"/vllm-entrypoint.sh"})
        assert len(mounted) == (6 if profile == "gfx942" else 5)
        via_env = json.loads(compose_config(host, env={
            "COMPOSE_FILE": f"compose.yaml:overlays/{profile}/compose.yaml"}).stdout)
        assert via_env["services"]["inference"]["volumes"] == \
            model["services"]["inference"]["volumes"]


def test_include_is_not_the_way_and_the_header_does_not_say_it(stack, tmp_path):
    """compose refuses to let an included file add to a service the including file defines;
    the override file is the documented way, and it works from the stack's root."""
    root = stack
    ok(root, "overlays")
    (root / "compose.yaml").write_text("services:\n  inference:\n    image: busybox\n")
    fragment = root / "overlays/gfx942/compose.yaml"
    assert "include:" not in fragment.read_text()
    (root / "with-include.yaml").write_text(
        "include:\n  - overlays/gfx942/compose.yaml\nservices:\n  inference:\n    image: busybox\n")
    refused = compose_config(root, "with-include.yaml", check=False)
    assert refused.returncode != 0 and "conflicts with imported resource" in refused.stderr
    model = json.loads(compose_config(root, *header_command(fragment)[1::2]).stdout)
    check_mounts(model, "inference", root / "overlays", "gfx942", {"up": INSTALL_ROOT})


def _config_hash(root: Path, profile: str) -> str:
    """compose's configuration hash of the service, as `up -d` compares it with the running
    container's to decide whether to recreate it."""
    args = [compose_binary(), "-f", "compose.yaml", "-f", f"overlays/{profile}/compose.yaml",
            "config", "--hash", "inference"]
    run_env = {k: v for k, v in os.environ.items() if not k.startswith("COMPOSE_")}
    proc = subprocess.run(args, cwd=root, env=run_env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.split()[-1]


def test_the_deployment_pages_compose_files_work_with_the_fragments(example, tmp_path):
    """Every `compose.yaml` docs/deployment.md shows, beside the example stack's overlays and
    each profile's fragment, through the real compose: it loads, the fragment's mounts are
    judged as always, and a mount of an artifact is of its pinned copy under overlays/."""
    page = (REPO_ROOT / "docs" / "deployment.md").read_text()
    blocks = [b for b in re.findall(r"```yaml\n(.*?)```", page, re.S)
              if b.startswith("services:")]
    assert len(blocks) >= 2
    for number, block in enumerate(blocks):
        host = tmp_path / f"host{number}"
        host.mkdir()
        shutil.copytree(example / "overlays", host / "overlays")
        sums = read_sums(host / "overlays")
        (host / "compose.yaml").write_text(block)
        for profile in ("gfx942", "gfx950"):
            model = json.loads(compose_config(host, "compose.yaml",
                                              f"overlays/{profile}/compose.yaml").stdout)
            user = {v["target"] for v in model["services"]["inference"].get("volumes", [])
                    if "/overlays/artifacts/" in v["source"]}
            entrypoint = model["services"]["inference"].get("entrypoint") or [None]
            for volume in model["services"]["inference"].get("volumes", []):
                if volume["target"] in user:
                    assert Path(volume["source"]).resolve() in sums, volume
                if volume["target"] == entrypoint[0]:
                    # A bind mount keeps the host file's mode: the container execs it.
                    assert os.access(volume["source"], os.X_OK), volume
            check_mounts(model, "inference", host / "overlays", profile,
                         {"vllm": INSTALL_ROOT, "aiter": INSTALL_ROOT}, keep=user)


def test_an_executable_artifact_is_copied_executable_and_verify_says_when_it_is_not(stack):
    """docs/deployment.md mounts the entrypoint from its pinned copy under overlays/artifacts/:
    the copy was written 0644 whatever the artifact's mode, so the container could not exec
    it. The copy keeps the executable bit (the manifest says `executable`), and `verify` and
    `overlays --check` name a copy that lost it; a plain artifact stays not executable."""
    root = stack
    (root / "entrypoint.sh").chmod(0o755)
    config = root / "pyproject.toml"
    config.write_text(config.read_text().replace(
        'artifacts = ["entrypoint.sh"]', 'artifacts = ["entrypoint.sh", "tuning.csv"]'))
    (root / "tuning.csv").write_bytes(b"m,n,k\n1,2,3\n")
    ok(root, "overlays")
    copy = root / "overlays/artifacts/entrypoint.sh"
    assert os.access(copy, os.X_OK)
    assert not os.access(root / "overlays/artifacts/tuning.csv", os.X_OK)
    manifest = json.loads((root / "overlays/manifest.json").read_bytes())
    assert {a["path"]: a.get("executable") for a in manifest["artifacts"]} == \
        {"entrypoint.sh": True, "tuning.csv": None}
    assert "executable" not in [a for a in manifest["artifacts"] if a["path"] == "tuning.csv"][0]
    assert ok(root, "verify").rc == 0
    copy.chmod(0o644)
    failed = run_cli(root, "verify")
    assert failed.rc == 1 and "artifacts/entrypoint.sh" in failed.out and \
        "not executable, as the artifact is" in failed.out, failed.text
    drift = run_cli(root, "overlays", "--check")
    assert drift.rc == 1 and "the copy should be executable, as the artifact is" in drift.text
    ok(root, "overlays")
    assert os.access(copy, os.X_OK) and ok(root, "verify").rc == 0


def test_the_deployment_pages_docker_build_gives_what_the_dockerfile_needs(example):
    """Every `docker build` docs/deployment.md shows, against the example stack's Dockerfiles:
    its -f file and context exist, and since this repository's lock pins no image (the
    Dockerfile starts `FROM ${BASE_IMAGE}`), at least one of them names that image by digest,
    as the page says it must be (the page's only command gave none: run here, `FROM` named
    no image)."""
    page = (REPO_ROOT / "docs" / "deployment.md").read_text()
    commands = [shlex.split(line.replace("\\\n", " "))
                for block in re.findall(r"```sh\n(.*?)```", page, re.S)
                for line in re.split(r"(?<!\\)\n", block) if line.startswith("docker build ")]
    assert commands
    given = set()
    for words in commands:
        dockerfile = example / words[words.index("-f") + 1]
        assert dockerfile.is_file() and (example / words[-1]).is_dir(), words
        args = [words[k + 1] for k, w in enumerate(words) if w == "--build-arg"]
        given.update(arg.partition("=")[0] for arg in args
                     if re.fullmatch(r"[^=]+=[^@\s]+@sha256:[0-9a-f]{64}", arg))
        structure = _dockerfile(dockerfile)
        assert structure[0]["instruction"] == "ARG" and \
            structure[1]["value"] == "${BASE_IMAGE}", structure[:2]
    assert "BASE_IMAGE" in given, commands


def test_a_changed_fix_changes_the_services_compose_hash(stack):
    """A bind-mounted file is the inode the container started with, and overlays/ is swapped
    in as a new tree: when the fragment stayed byte-identical after a fix changed, compose's
    configuration hash did too, and `docker compose up -d` left the container running the old
    overlay. The fragment's label follows the mounted content: a changed fix (or one profile's
    change only) changes that profile's hash, and a rewrite of the same overlays changes
    nothing (no needless restart)."""
    root = stack
    (root / "compose.yaml").write_text("services:\n  inference:\n    image: busybox\n")
    ok(root, "overlays")
    before = {p: _config_hash(root, p) for p in ("gfx942", "gfx950")}
    ok(root, "overlays")
    assert {p: _config_hash(root, p) for p in ("gfx942", "gfx950")} == before
    patch = root / "series/up/fnuz.patch"  # gfx942 only
    patch.write_bytes(patch.read_bytes().replace(b"+LINE3 gfx942", b"+LINE3 gfx942 v2"))
    ok(root, "overlays")
    assert b"v2" in (root / "overlays/gfx942/up/a.py").read_bytes()
    after = {p: _config_hash(root, p) for p in ("gfx942", "gfx950")}
    assert after["gfx942"] != before["gfx942"] and after["gfx950"] == before["gfx950"]
    model = json.loads(compose_config(root, "compose.yaml", "overlays/gfx942/compose.yaml").stdout)
    check_mounts(model, "inference", root / "overlays", "gfx942", {"up": INSTALL_ROOT})


def test_a_changed_artifact_changes_the_services_compose_hash(stack):
    """compose.yaml mounts an artifact's copy from overlays/artifacts/ (the page's entrypoint),
    and `overlays` swaps in a new tree: the fragment's label covered the overlays only, so
    after the artifact changed compose's hash of the service stayed the same and `up -d`
    left the container on the old file. The label covers the artifacts' copies too (each
    profile's: compose.yaml mounts them whatever the profile); a change of the executable
    bit alone counts, a rewrite of the same bytes changes nothing; `verify` agrees with the
    fragment."""
    root = stack
    (root / "compose.yaml").write_text(
        "services:\n  inference:\n    image: busybox\n    entrypoint: [\"/entrypoint.sh\"]\n"
        "    volumes:\n      - ./overlays/artifacts/entrypoint.sh:/entrypoint.sh:ro\n")
    ok(root, "overlays")
    before = {p: _config_hash(root, p) for p in ("gfx942", "gfx950")}
    ok(root, "overlays")
    assert {p: _config_hash(root, p) for p in ("gfx942", "gfx950")} == before
    (root / "entrypoint.sh").write_bytes(b"#!/bin/sh\nexec vllm serve --threads 8\n")
    ok(root, "overlays")
    assert b"--threads 8" in (root / "overlays/artifacts/entrypoint.sh").read_bytes()
    edited = {p: _config_hash(root, p) for p in ("gfx942", "gfx950")}
    assert all(edited[p] != before[p] for p in before), (before, edited)
    (root / "entrypoint.sh").chmod(0o755)
    ok(root, "overlays")
    assert all(_config_hash(root, p) != edited[p] for p in edited)
    assert ok(root, "verify").rc == 0


def test_verify_fails_a_fragment_that_no_longer_mounts_an_overlay(stack):
    """Neither SHA256SUMS nor the manifest lists the compose fragment: one that a bad merge, a
    stale copy or a hand edit left without a mount passed `verify` ("ok" for every file) while
    the container ran without that fix. The fragment is checked against the mounts the
    manifest makes, per profile (`--profile` checks only its own)."""
    root = stack
    ok(root, "overlays")
    clean = run_cli(root, "verify", "--json")
    assert clean.rc == 0, clean.text
    rows = {r["path"]: r["state"] for r in json.loads(clean.out)["results"]}
    assert rows["gfx942/compose.yaml"] == rows["gfx950/compose.yaml"] == "ok"
    fragment = root / "overlays/gfx942/compose.yaml"
    text = fragment.read_text()
    start = text.index("      - type: bind")
    end = text.index("      - type: bind", start + 1)
    fragment.write_text(text[:start] + text[end:])  # one mount fewer, still valid compose
    (root / "compose.yaml").write_text("services:\n  inference:\n    image: busybox\n")
    model = json.loads(compose_config(root, "compose.yaml", "overlays/gfx942/compose.yaml").stdout)
    assert len(model["services"]["inference"]["volumes"]) == len(
        [o for o in json.loads((root / "overlays/manifest.json").read_bytes())["overlays"]
         if o["profile"] == "gfx942"]) - 1
    failed = run_cli(root, "verify")
    assert failed.rc == 1 and "gfx942/compose.yaml" in failed.out, failed.text
    assert "does not mount what manifest.json pins" in failed.out
    assert run_cli(root, "verify", "--profile", "gfx950").rc == 0
    assert run_cli(root, "verify", "--profile", "gfx942").rc == 1
    # Every mount there, the label gone (a fragment an earlier patchforge wrote): said as such.
    ok(root, "overlays")
    fragment.write_text("".join(line for line in fragment.read_text().splitlines(True)
                                if "labels:" not in line and "patchforge.overlays:" not in line))
    unlabelled = run_cli(root, "verify", "--profile", "gfx942")
    assert unlabelled.rc == 1 and "lacks the patchforge.overlays label" in unlabelled.out
    assert "does not mount" not in unlabelled.out, unlabelled.out
    fragment.unlink()
    gone = run_cli(root, "verify", "--profile", "gfx942")
    assert gone.rc == 1 and "missing" in gone.out, gone.text
    ok(root, "overlays")
    assert run_cli(root, "verify").rc == 0


def test_the_fragment_deploys_the_pinned_image_and_outlives_the_last_fix(stack):
    """The overlays are whole files made for the image upstream.lock pins. The fragment named
    no image: after a move of the pin that dropped a fix as landed, compose still ran the
    image the user's compose.yaml named (the old one), without that fix, every check green.
    The fragment now sets the service's image to the pin by digest, so a move of the pin moves
    the deployment (and recreates it). And when the last fix of a profile lands, its fragment
    stays (no mounts): the deployment's `-f overlays/<profile>/compose.yaml` kept working."""
    root = stack
    old = "sha256:" + "ab" * 32
    new = "sha256:" + "cd" * 32
    _lock_pins_an_image(root, old)
    said = ok(root, "overlays").err
    assert "note: overlays/gfx942/compose.yaml now sets the inference service's image" in said
    assert "compose-image = false" in said and "note:" not in ok(root, "overlays").err
    (root / "compose.yaml").write_text(
        f"services:\n  inference:\n    image: registry.example.com/rocm/vllm@{old}\n")
    files = ("compose.yaml", "overlays/gfx942/compose.yaml")
    model = json.loads(compose_config(root, *files).stdout)
    assert model["services"]["inference"]["image"] == f"registry.example.com/rocm/vllm@{old}"
    before = _config_hash(root, "gfx942")
    _lock_pins_an_image(root, new)  # the stack moved to the next nightly; compose.yaml still names the old one
    ok(root, "overlays")
    model = json.loads(compose_config(root, *files).stdout)
    assert model["services"]["inference"]["image"] == f"registry.example.com/rocm/vllm@{new}"
    assert _config_hash(root, "gfx942") != before
    check_mounts(model, "inference", root / "overlays", "gfx942", {"up": INSTALL_ROOT})
    assert run_cli(root, "verify").rc == 0
    # A deployment of an image of its own says so: the fragment leaves the image alone.
    config = root / "pyproject.toml"
    config.write_text(config.read_text().replace("[tool.patchforge]\n",
                                                 "[tool.patchforge]\ncompose-image = false\n"))
    ok(root, "overlays")
    model = json.loads(compose_config(root, *files).stdout)
    assert model["services"]["inference"]["image"] == f"registry.example.com/rocm/vllm@{old}"
    assert run_cli(root, "verify").rc == 0
    config.write_text(config.read_text().replace("compose-image = false", "compose-image = 1"))
    bad = run_cli(root, "overlays")
    assert bad.rc == 2 and "compose-image" in bad.err and "pyproject.toml" in bad.err, bad.err
    config.write_text(config.read_text().replace("compose-image = 1\n", ""))
    for name in ("fnuz", "all-b", "create"):  # every fix landed: the series is empty
        ok(root, "delete", name)
    ok(root, "overlays")
    for profile in ("gfx942", "gfx950"):
        model = json.loads(compose_config(root, "compose.yaml",
                                          f"overlays/{profile}/compose.yaml").stdout)
        assert model["services"]["inference"]["image"].endswith(new)
        assert not model["services"]["inference"].get("volumes")
    assert run_cli(root, "verify").rc == 0


def _dockerfile(path: Path) -> list[dict]:
    parser = DockerfileParser(path=str(path.parent), fileobj=None)
    parser.content = path.read_text()
    return [item for item in parser.structure if item["instruction"] != "COMMENT"]


@pytest.mark.parametrize("sha256sum", ["coreutils", "busybox"])
def test_dockerfile_bakes_the_overlays_into_the_pinned_image(stack, tmp_path, sha256sum):
    """The Dockerfile's check steps, run by sh with GNU's sha256sum and with BusyBox's (an
    Alpine or busybox base image): BusyBox's refused the `--strict --quiet` they were written
    with ("unrecognized option"), and the build stopped on an image holding the very files."""
    root = stack
    env = None
    if sha256sum == "busybox":
        busybox = shutil.which("busybox")
        if busybox is None:
            pytest.skip("busybox is not installed (apt-get install busybox)")
        tools = tmp_path / "busybox-bin"
        tools.mkdir()
        (tools / "sha256sum").symlink_to(busybox)
        env = {**os.environ, "PATH": f"{tools}{os.pathsep}{os.environ['PATH']}"}
    digest = _lock_pins_an_image(root)
    ok(root, "overlays")
    overlays = root / "overlays"
    manifest = json.loads((overlays / "manifest.json").read_bytes())
    assert manifest["image"] == {"reference": IMAGE, "digest": digest}
    sums = read_sums(overlays)
    for profile in ("gfx942", "gfx950"):
        structure = _dockerfile(overlays / profile / "Dockerfile")
        instructions = [item["instruction"] for item in structure]
        assert instructions[0] == "FROM" and "ARG" not in instructions
        assert structure[0]["value"] == f"registry.example.com/rocm/vllm@{digest}"
        entries = {o["target"]: o for o in manifest["overlays"] if o["profile"] == profile}
        copied = {}
        for item in structure:
            if item["instruction"] != "COPY":
                continue
            flags, _, spec = item["value"].partition(" ")
            assert flags == "--chmod=0644"
            source, target = json.loads(spec)
            assert (overlays / source).is_file() and sums[(overlays / source).resolve()] == \
                entries[target]["sha256"]
            copied[target] = source
        assert {t: entries[t]["file"] for t in copied} == copied and set(copied) == set(entries)
        runs = [item["value"] for item in structure if item["instruction"] == "RUN"]
        assert len(runs) == 2 and instructions.index("RUN") < instructions.index("COPY")
        _run_checks(runs, tmp_path / profile, overlays, entries, env)
        assert "sha256sum $c SHA256SUMS" in runs[1] and "c='-c --strict --quiet'" in runs[1]


def _run_checks(runs: list[str], fake_root: Path, overlays: Path, entries: dict,
                env: dict | None = None) -> None:
    """Run the Dockerfile's two check steps with /bin/sh, on a directory standing in for the
    image (its absolute paths moved under `fake_root`): they pass on the right files and fail
    on a wrong one."""
    def in_fake(command: str) -> str:
        command = command.replace("/run/patchforge-overlays", str(overlays))
        return command.replace(f" {INSTALL_ROOT}", f" {fake_root}{INSTALL_ROOT}") \
                      .replace(f"'{INSTALL_ROOT}", f"'{fake_root}{INSTALL_ROOT}") \
                      .replace(f"  {INSTALL_ROOT}", f"  {fake_root}{INSTALL_ROOT}")

    pre, post = (in_fake(run.removeprefix("--mount=type=bind,target=/run/patchforge-overlays "))
                 for run in runs)
    for target, entry in entries.items():
        path = fake_root / target.lstrip("/")
        path.parent.mkdir(parents=True, exist_ok=True)
        if entry["base_sha256"] is not None:
            path.write_bytes(UPSTREAM_FILES[entry["path"]])
    assert subprocess.run(["sh", "-c", pre], env=env).returncode == 0
    moved = fake_root / INSTALL_ROOT.lstrip("/") / "pkg/b.py"
    moved.write_bytes(b"a newer b.py\n")
    assert subprocess.run(["sh", "-c", pre], capture_output=True, env=env).returncode != 0
    for target, entry in entries.items():  # what the COPY steps do
        shutil.copyfile(overlays / entry["file"], fake_root / target.lstrip("/"))
    assert subprocess.run(["sh", "-c", post], env=env).returncode == 0
    moved.write_bytes(b"tampered\n")
    assert subprocess.run(["sh", "-c", post], capture_output=True, env=env).returncode != 0


def test_overlays_on_a_fresh_clone_fetches_first(stack, tmp_path, monkeypatch):
    root = stack
    monkeypatch.setenv("PATCHFORGE_CACHE", str(tmp_path / "fresh-cache"))
    offline = run_cli(root, "--offline", "overlays")
    assert offline.rc == 2
    assert "not in the cache" in offline.err and "patchforge fetch up" in offline.err
    assert not (root / "overlays").exists()
    run = ok(root, "overlays")
    assert "fetched up main into the cache" in run.err
    assert "wrote 5 overlay files" in run.text



def _overlays_of_named_files(tmp_path: Path, names: list[str], also: list[str] = ()) -> Path:
    """A project whose upstream has the files `names` (and `also`), each `x = 1`, and a patch
    per name making it `x = 2`, with its overlays written: the project's root."""
    files = dict(UPSTREAM_FILES, **{name: b"x = 1\n" for name in [*names, *also]})
    root, base = git_project(tmp_path, files, install_root=INSTALL_ROOT)
    for number, name in enumerate(names):
        diff = (f"diff --git a/{name} b/{name}\n--- a/{name}\n+++ b/{name}\n"
                "@@ -1 +1 @@\n-x = 1\n+x = 2\n").encode()
        add_patch_file(root, "up", f"p{number}.patch", patch_bytes("up", base, f"p{number}", diff))
    ok(root, "overlays")
    return root


def test_compose_mounts_names_compose_would_otherwise_rewrite(tmp_path):
    """Upstream files whose names hold `$` (compose interpolates `$VAR`, `${VAR}`), a character
    beyond U+FFFF, a quote, a space, a line separator: compose mounts each from its overlay file
    at its own path. Before, `a$b.py` was mounted from and to `a.py` (with a warning that `b` is
    not set), `c${HOME}.py` at `c/root.py`, and the emoji made compose refuse the whole file."""
    names = ["pkg/a$b.py", "pkg/c${HOME}.py", "pkg/d$$.py", "pkg/smile\U0001F600.py",
             'pkg/q"uote.py', "pkg/sp ace.py", "pkg/l\u2028s.py", "pkg/\u00fcber.py"]
    root = _overlays_of_named_files(tmp_path, names)
    (root / "compose.yaml").write_text("services:\n  inference:\n    image: busybox\n")
    proc = compose_config(root, "compose.yaml", "overlays/compose.yaml", env={"b": "", "HOME": "/root"})
    assert "variable is not set" not in proc.stderr
    # `config` prints a compose file again, so it writes each literal `$` of the model as `$$`.
    model = json.loads(proc.stdout.replace("$$", "$"))
    mounted = check_mounts(model, "inference", root / "overlays", None,
                           {"up": INSTALL_ROOT})
    assert mounted == {f"{INSTALL_ROOT}/{name}" for name in names}


def test_dockerfile_copies_names_buildkit_would_otherwise_rewrite(tmp_path):
    """BuildKit runs every COPY word, the JSON form's too, through its shell lexer (`$b`
    expands, quotes are removed) and takes a source with `*`, `?` or `[` as a wildcard that may
    match nothing, silently. Read back by those rules (`helpers.dockerfile`), each COPY copies
    exactly its overlay file to its own path. Before, `a$b.py` was copied from and to `a.py`,
    `q'uote.py` was a lexer error, and `g[1].py` copied nothing."""
    names = ["pkg/a$b.py", "pkg/c${HOME}.py", "pkg/d$$.py", "pkg/q'uote.py", 'pkg/q"uote2.py',
             "pkg/sp ace.py", "pkg/g[1].py", "pkg/st*r.py", "pkg/wh?t.py", "pkg/x[y/z[1]*.py",
             "pkg/<<EOF.py", "pkg/\u00fcber.py"]
    # Files a wrong reading would pick instead: `a$b.py` read as `a.py`, `g[1].py` as `g1.py`.
    root = _overlays_of_named_files(tmp_path, names,
                                    also=["pkg/a.py", "pkg/g1.py", "pkg/x[y/z1.py"])
    overlays = root / "overlays"
    manifest = json.loads((overlays / "manifest.json").read_bytes())
    expected = {o["file"]: o["target"] for o in manifest["overlays"]}
    assert len(expected) == len(names)
    env = {"HOME": "/root", "PATH": "/usr/bin:/bin", "b": "-b-"}
    copied = {}
    for flags, sources, dest in copy_steps(overlays / "Dockerfile", overlays, env):
        assert flags == {"chmod": "0644"}
        assert len(sources) == 1, (sources, dest)
        copied[sources[0]] = dest
    assert copied == expected


def test_an_image_pin_never_adds_a_step_to_the_dockerfile(stack):
    """upstream.lock arrives by pull request like a patch. Its image digest was written into the
    Dockerfile's FROM line as it was: `sha256:...\\nRUN ...` added a step that every build of the
    Dockerfile ran. The lock is refused, naming the file and line, and nothing is written."""
    root = stack
    _lock_pins_an_image(root, "sha256:" + "ab" * 32 + "\nRUN touch /tmp/pwned")
    text = (root / "upstream.lock").read_text()
    run = run_cli(root, "overlays")
    line = next(n for n, ln in enumerate(text.splitlines(), 1) if '"digest"' in ln)
    assert run.rc == 2 and f"upstream.lock:{line}: image.digest" in run.err, run.err
    assert not (root / "overlays").exists()


@pytest.mark.parametrize("service", ["123", "1.0", "true", "No", "null", "0x1F", "1e3", "007",
                                     "web-1"])
def test_every_service_name_the_configuration_takes_is_the_fragments_service(tmp_path, service):
    """`compose-service = "123"` (or `1.0`, `true`, ...: names the configuration accepts) was
    written as a bare YAML key: compose read it as a number or boolean, said "non-string key"
    and dropped the service with every mount, exit 0, and `verify` said ok. The key is quoted
    where YAML would read it as anything but that name; compose mounts every overlay into it."""
    root = _overlays_of_named_files(tmp_path, ["pkg/a.py"])
    config = root / "pyproject.toml"
    config.write_text(config.read_text().replace(
        "[tool.patchforge]\n", f'[tool.patchforge]\ncompose-service = "{service}"\n', 1))
    ok(root, "overlays")
    (root / "compose.yaml").write_text(f'services:\n  "{service}":\n    image: busybox\n')
    proc = compose_config(root, "compose.yaml", "overlays/compose.yaml")
    assert "non-string key" not in proc.stderr, proc.stderr
    model = json.loads(proc.stdout)
    assert check_mounts(model, service, root / "overlays", None, {"up": INSTALL_ROOT}) == \
        {f"{INSTALL_ROOT}/pkg/a.py"}
    ok(root, "verify")


def test_a_stack_compose_file_without_the_service_is_said_not_passed(stack):
    """A stack whose compose.yaml names its service `vllm` with compose-service left at
    `inference`: once the fragment sets the pinned image, compose takes the fragment's service
    as one of its own and starts it beside `vllm`, which runs without a single overlay, while
    `overlays`, `verify` and `docker compose config` all passed. Both commands say it now,
    naming the file and the services it has; with the service named, every mount goes to it."""
    root = stack
    digest = _lock_pins_an_image(root)
    (root / "compose.yaml").write_text(
        f"# the stack's deployment\nservices:\n  vllm:  # the server\n"
        f"    image: registry.example.com/rocm/vllm@{digest}\n  'db':\n    image: busybox\n"
        "volumes:\n  inference:\n")
    said = ok(root, "overlays").err
    assert f"warning: {root / 'compose.yaml'} defines no service 'inference' (compose-service), " \
        "only 'vllm', 'db'" in said and 'compose-service = "NAME"' in said, said
    assert 'compose-service = "vllm"' not in said  # which one runs the upstream is not guessed
    files = ("compose.yaml", "overlays/gfx942/compose.yaml")
    model = json.loads(compose_config(root, *files).stdout)
    assert set(model["services"]) == {"inference", "vllm", "db"}  # the harm, as compose has it
    assert not model["services"]["vllm"].get("volumes")
    failed = run_cli(root, "verify", "--json")
    rows = {r["path"]: r for r in json.loads(failed.out)["results"]}
    assert failed.rc == 1 and rows[str(root / "compose.yaml")]["state"] == "mismatch", failed.text
    config = root / "pyproject.toml"
    config.write_text(config.read_text().replace("[tool.patchforge]\n",
                                                 '[tool.patchforge]\ncompose-service = "vllm"\n'))
    assert "defines no service" not in ok(root, "overlays").err
    model = json.loads(compose_config(root, *files).stdout)
    assert set(model["services"]) == {"vllm", "db"}
    check_mounts(model, "vllm", root / "overlays", "gfx942", {"up": INSTALL_ROOT})
    assert run_cli(root, "verify").rc == 0
    # Services said in a way not read here (flow style, other files included) are not guessed.
    for text in ("services: {web: {image: busybox}}\n",
                 "include: [other.yaml]\nservices:\n  web:\n    image: busybox\n"):
        (root / "compose.yaml").write_text(text)
        assert run_cli(root, "verify").rc == 0, text
    # A stack deployed otherwise (the Dockerfile), its compose file for other services: with
    # `compose-image = false` the fragment sets no image, and the file is not judged.
    (root / "compose.yaml").write_text("services:\n  db:\n    image: busybox\n")
    assert run_cli(root, "verify").rc == 1
    config.write_text(config.read_text().replace('compose-service = "vllm"\n',
                                                 "compose-image = false\n"))
    assert "defines no service" not in ok(root, "overlays").err
    assert run_cli(root, "verify").rc == 0


def test_the_dockerfile_checks_the_files_of_fixes_dropped_as_landed(tmp_path):
    """No overlay carries a fix dropped as landed upstream: the base image must hold it. The
    Dockerfile's first step checked only the overlays' pre-images, so a base whose file of a
    landed fix was the one before the fix (a re-spun nightly) built green and ran without it,
    while `verify --installed` of the same files failed. The step now also checks each such
    file against the upstream's at the pin, run here with the shell on a tree standing in for
    the image; the rebase writes the Dockerfile `overlays` makes (`--check` agrees), and a
    series whose every fix landed still checks them."""
    from helpers.project import OneUpstreamStack

    base_a = b"".join(b"a line %d\n" % i for i in range(1, 21))
    base_b = b"".join(b"b line %d\n" % i for i in range(1, 21))
    fixed_a = base_a.replace(b"a line 5\n", b"a line 5, fixed\n")
    fixed_b = base_b.replace(b"b line 5\n", b"b line 5, fixed\n")
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": base_a, "pkg/b.py": base_b})
    stack.add_fix("fa", "pkg/a.py", base_a, fixed_a)
    stack.add_fix("fb", "pkg/b.py", base_b, fixed_b)
    stack.cli("overlays")
    stack.commit({"pkg/a.py": fixed_a}, "Fix a", tag="v2")
    stack.cli("rebase", "--to", "v2")
    assert stack.series("up") == ["fb.patch"]
    stack.cli("overlays", "--check")

    def first_check(fake_root: Path) -> str:
        runs = [item["value"] for item in _dockerfile(stack.root / "overlays/Dockerfile")
                if item["instruction"] == "RUN"]
        return runs[0].replace("  /opt/site/", f"  {fake_root}/opt/site/")

    def image(name: str, a_py: bytes) -> Path:
        fake_root = tmp_path / name
        (fake_root / "opt/site/pkg").mkdir(parents=True)
        (fake_root / "opt/site/pkg/a.py").write_bytes(a_py)
        (fake_root / "opt/site/pkg/b.py").write_bytes(base_b)
        return fake_root

    for name, a_py, rc in (("pinned", fixed_a, 0), ("respun", base_a, 1)):
        fake_root = image(name, a_py)
        check = subprocess.run(["sh", "-c", first_check(fake_root)], capture_output=True)
        assert (check.returncode != 0) == bool(rc), (name, check)
        stack.cli("verify", "--installed", str(fake_root), expect=rc)
    # Every fix landed: nothing to copy, the check still there.
    stack.commit({"pkg/b.py": fixed_b}, "Fix b", tag="v3")
    stack.cli("rebase", "--to", "v3")
    stack.cli("overlays", "--check")
    structure = _dockerfile(stack.root / "overlays/Dockerfile")
    assert "COPY" not in [item["instruction"] for item in structure]
    respun = tmp_path / "all-landed"
    (respun / "opt/site/pkg").mkdir(parents=True)
    (respun / "opt/site/pkg/a.py").write_bytes(fixed_a)
    (respun / "opt/site/pkg/b.py").write_bytes(base_b)
    check = subprocess.run(["sh", "-c", first_check(respun)], capture_output=True)
    assert check.returncode != 0 and b"pkg/b.py: FAILED" in check.stdout, check
    (respun / "opt/site/pkg/b.py").write_bytes(fixed_b)
    assert subprocess.run(["sh", "-c", first_check(respun)]).returncode == 0


def test_the_dockerfile_fails_for_a_landed_fix_reverted_at_the_pin(tmp_path):
    """A fix dropped as landed, then reverted upstream, and the pin moved onto the revert: the
    upstream's file at the pin lacks the fix, and nothing overlays it. `verify --installed`
    of a tree holding that file fails, naming `bring-back`; the Dockerfile's first step passed
    the same file (it checked it against the pin's sha256), so the image built green without
    the fix. The step now fails the build with the same hint, run here with the shell on a
    tree standing in for the image, and `overlays` warns so."""
    from helpers.project import OneUpstreamStack

    base_a = b"".join(b"a line %d\n" % i for i in range(1, 21))
    base_b = b"".join(b"b line %d\n" % i for i in range(1, 21))
    fixed_a = base_a.replace(b"a line 5\n", b"a line 5, fixed\n")
    fixed_b = base_b.replace(b"b line 5\n", b"b line 5, fixed\n")
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": base_a, "pkg/b.py": base_b})
    stack.add_fix("fa", "pkg/a.py", base_a, fixed_a)
    stack.add_fix("fb", "pkg/b.py", base_b, fixed_b)
    rc, out, err = stack.landed_then_reverted("pkg/a.py", base_a, fixed_a, ["fb.patch"])
    assert "reverted upstream" in out + err, (rc, out, err)
    # The rebase wrote what `overlays` makes, and `--check`, what a CI runs, says it all the
    # same: it exited 0 (`"ok": true`) on overlays in step that lack the fix.
    _, out, err = stack.cli("overlays", "--check", expect=1)
    assert "overlays are up to date" in out and "Dockerfile fails its build" in err and \
        "bring-back up/fa.patch" in err, (out, err)
    check = stack.json("overlays", "--check", expect=1)
    assert check["ok"] is False and check["drift"] == [], check
    _, out, _ = stack.cli("overlays", "--check", "--format", "github", expect=1)
    assert "::error title=patchforge overlays --check::overlays/Dockerfile fails its build: " \
        "/opt/site/pkg/a.py is the upstream's file at the pin" in out, out
    _, _, err = stack.cli("overlays", expect=1)  # needs attention, as `status` says
    assert "Dockerfile fails its build" in err and "bring-back up/fa.patch" in err, err
    assert stack.json("overlays", expect=1)["ok"] is False
    runs = [item["value"] for item in _dockerfile(stack.root / "overlays/Dockerfile")
            if item["instruction"] == "RUN"]
    fake_root = tmp_path / "image"
    (fake_root / "opt/site/pkg").mkdir(parents=True)
    (fake_root / "opt/site/pkg/a.py").write_bytes(base_a)  # the pin's file: no fix
    (fake_root / "opt/site/pkg/b.py").write_bytes(base_b)
    check = subprocess.run(["sh", "-c", runs[0].replace("  /opt/site/", f"  {fake_root}/opt/site/")],
                           capture_output=True)
    stack.cli("verify", "--installed", str(fake_root), expect=1)
    assert check.returncode != 0, check
    assert b"/opt/site/pkg/a.py" in check.stderr and \
        b"`patchforge bring-back up/fa.patch`" in check.stderr, check.stderr


def test_a_landed_fix_reverted_at_the_pin_fails_where_its_overlay_lacks_it(tmp_path):
    """The same revert, in a file another fix of the series overlays: the overlay is the pin's
    file with that other fix, without the reverted one, and `overlays`, the Dockerfile's first
    step and `verify --installed` of a tree holding the overlay all passed it. They now fail it,
    naming `bring-back`; once another patch makes the fix's change again, the overlay holds it
    and they pass."""
    from helpers.project import OneUpstreamStack

    base_a = b"".join(b"a line %d\n" % i for i in range(1, 31))
    fixed_a = base_a.replace(b"a line 5\n", b"a line 5, fixed\n")
    both = fixed_a.replace(b"a line 25\n", b"a line 25, fixed c\n")
    only_c = base_a.replace(b"a line 25\n", b"a line 25, fixed c\n")
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": base_a})
    stack.add_fix("fa", "pkg/a.py", base_a, fixed_a)
    stack.add_fix("fc", "pkg/a.py", fixed_a, both)
    rc, out, err = stack.landed_then_reverted("pkg/a.py", base_a, fixed_a, ["fc.patch"])
    assert "reverted upstream" in out + err, (rc, out, err)
    overlay = stack.root / "overlays/up/pkg/a.py"
    assert overlay.read_bytes() == only_c  # the pin's file with fc, without fa

    def judged(expect_ok: bool) -> None:
        _, _, err = stack.cli("overlays", expect=0 if expect_ok else 1)
        assert ("Dockerfile fails its build" in err) != expect_ok, err
        runs = [item["value"] for item in _dockerfile(stack.root / "overlays/Dockerfile")
                if item["instruction"] == "RUN"]
        fake_root = tmp_path / "image"
        shutil.rmtree(fake_root, ignore_errors=True)
        (fake_root / "opt/site/pkg").mkdir(parents=True)
        (fake_root / "opt/site/pkg/a.py").write_bytes(base_a)  # the pin's file: the pre-image
        check = subprocess.run(
            ["sh", "-c", runs[0].replace("  /opt/site/", f"  {fake_root}/opt/site/")],
            capture_output=True)
        (fake_root / "opt/site/pkg/a.py").write_bytes(overlay.read_bytes())  # baked in
        rc, out, _ = stack.cli("verify", "--installed", str(fake_root), expect=None)
        if expect_ok:
            assert check.returncode == 0, check
            assert rc == 0, out
        else:
            assert "bring-back up/fa.patch" in err, err
            assert check.returncode != 0, check
            assert b"/opt/site/pkg/a.py" in check.stderr and \
                b"`patchforge bring-back up/fa.patch`" in check.stderr, check.stderr
            assert rc == 1 and "bring-back up/fa.patch" in out, out

    judged(expect_ok=False)
    # The fix made again by another patch of the series: the overlay holds its change.
    stack.add_fix("fd", "pkg/a.py", only_c, both)
    judged(expect_ok=True)
    assert overlay.read_bytes() == both


def _two_landings_reverted_at_the_pin(tmp_path, *, with_a: bool = True):
    """fa (a.py) and fx (c.py, which fc of the series also changes) dropped as landed at v2,
    both reverted at v3, the pin moved there (without fa: fx alone, its file overlaid)."""
    from helpers.project import OneUpstreamStack

    base_a = b"".join(b"a line %d\n" % i for i in range(1, 21))
    base_c = b"".join(b"c line %d\n" % i for i in range(1, 31))
    fixed_a = base_a.replace(b"a line 5\n", b"a line 5, fixed\n")
    fixed_c = base_c.replace(b"c line 5\n", b"c line 5, fixed x\n")
    both_c = fixed_c.replace(b"c line 25\n", b"c line 25, fixed c\n")
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": base_a, "pkg/c.py": base_c})
    if with_a:
        stack.add_fix("fa", "pkg/a.py", base_a, fixed_a)
    stack.add_fix("fx", "pkg/c.py", base_c, fixed_c)
    stack.add_fix("fc", "pkg/c.py", fixed_c, both_c)
    stack.cli("overlays")
    landed = stack.commit({"pkg/a.py": fixed_a if with_a else base_a, "pkg/c.py": fixed_c},
                          "Fix a and c", tag="v2")
    stack.cli("rebase", "--to", "v2")
    assert stack.series("up") == ["fc.patch"]
    stack.cli("verify")  # landed at the pin: nothing to say
    stack.commit({"pkg/a.py": base_a, "pkg/c.py": base_c},
                 f'Revert "Fix a and c"\n\nThis reverts commit {landed}.', tag="v3")
    rc, out, err = stack.cli("rebase", "--to", "v3", expect=None)
    assert "reverted upstream" in out + err, (rc, out, err)
    return stack


def test_plain_verify_fails_a_landed_fix_upstream_reverted_at_the_pin(tmp_path, monkeypatch):
    """Two fixes dropped as landed, both reverted upstream, the pin moved onto the reverts: fa
    changed a file no overlay covers (the image's own file is the pin's, without it), fx one
    that fc of the series overlays (the overlay is the pin's file with fc, without fx). The
    Dockerfile and `verify --installed` failed them, but plain `verify`, what CI runs, passed
    (every overlay matches SHA256SUMS), exit 0. It now fails both files, naming `bring-back`,
    exit 1 (`--json` too); with the pin not in the cache it says NOT CHECKED; once both are
    back in the series and the overlays regenerated, it passes."""
    stack = _two_landings_reverted_at_the_pin(tmp_path)
    # What is committed is what the series makes, and lacks both fixes: said, exit 1.
    _, out, _ = stack.cli("overlays", "--check", expect=1)
    assert "overlays are up to date" in out, out

    _, out, _ = stack.cli("verify", expect=1)
    rows = {line.split()[1]: line for line in out.splitlines()[1:] if line.startswith("mismatch")}
    assert sorted(rows) == ["/opt/site/pkg/a.py", "up/pkg/c.py"], out
    assert "`patchforge bring-back up/fa.patch`" in rows["/opt/site/pkg/a.py"], out
    assert "`patchforge bring-back up/fx.patch`" in rows["up/pkg/c.py"], out
    assert "2 ok, 2 failed" in out, out  # the overlay of c.py and compose.yaml match
    doc = stack.json("verify", expect=1)
    assert doc["ok"] is False and \
        {r["path"] for r in doc["results"] if r["state"] == "mismatch"} == set(rows), doc

    # A cache without the pinned revision (a fresh CI runner): said, not guessed.
    with monkeypatch.context() as env:
        env.setenv("PATCHFORGE_CACHE", str(tmp_path / "empty-cache"))
        _, out, err = stack.cli("verify")
    assert "NOT CHECKED" in err and "`patchforge fetch up`" in err, err
    # A cache that cannot be opened (a file in its place): the same, never an error of verify.
    (tmp_path / "not-a-cache").write_bytes(b"")
    with monkeypatch.context() as env:
        env.setenv("PATCHFORGE_CACHE", str(tmp_path / "not-a-cache"))
        _, out, err = stack.cli("verify")
    assert "NOT CHECKED" in err and "cannot be read" in err and "mismatch" not in out, err

    stack.cli("bring-back", "up/fa.patch")
    stack.cli("bring-back", "up/fx.patch")
    stack.cli("overlays")
    _, out, err = stack.cli("verify")
    assert "mismatch" not in out and "NOT CHECKED" not in err, out + err


def test_plain_verify_says_not_checked_of_a_pin_the_lock_records_from_another_repository(
        tmp_path):
    """fa dropped as landed at v2, the pin; a lock merged from a branch that pinned a fork's
    commit (the configuration merged back to the upstream's): `verify` judged the fixes kept
    under upstreamed/ at that commit, read from the cache, and said nothing of it, exit 0.
    It says NOT CHECKED, naming `fetch`, which refuses the fork's commit; a lock that records
    a mirror holding the pin's commit, which the cache knows as the upstream's, is judged."""
    from helpers.project import OneUpstreamStack

    base = b"".join(b"a line %d\n" % i for i in range(1, 21))
    fixed = base.replace(b"a line 5\n", b"a line 5, fixed\n")
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": base})
    stack.add_fix("fa", "pkg/a.py", base, fixed)
    stack.cli("overlays")
    stack.commit({"pkg/a.py": fixed}, "Fix a", tag="v2")
    stack.landed_and_dropped("up=v2", "pkg/a.py")
    config = stack.root / "patchforge.toml"
    mine = config.read_text()
    fork, mirror = tmp_path / "fork", tmp_path / "mirror.git"
    git(tmp_path, "clone", "-q", str(stack.up), str(fork))
    git(tmp_path, "clone", "-q", "--bare", str(stack.up), str(mirror))
    (fork / "pkg/b.py").write_bytes(b"fork only\n")
    git(fork, "add", "-A")
    git(fork, "commit", "-qm", "fork: its own file")
    for other, at in ((fork, "main"), (mirror, "v2")):
        config.write_text(mine.replace(f'url = "{stack.up}"', f'url = "{other}"'))
        stack.cli("upstream", "pin", "up", "--at", at, "--force")
        config.write_text(mine)
        _, out, err = stack.cli("verify")
        said = f"NOT CHECKED: whether up {at} still holds the fixes dropped as landed upstream"
        if other == fork:
            assert said in err and "another repository" in err and "`patchforge fetch up`" \
                in err, err
            _, _, err = stack.cli("fetch", expect=2)
            assert "is not a commit of the configured repository" in err, err
        else:
            assert "NOT CHECKED" not in err and "mismatch" not in out, out + err


def _partial_cache(stack, tmp_path, monkeypatch) -> None:
    """The store is a partial clone (its files come on first read): a fresh cache that has the
    locked commit and the series' files but not those of the fixes kept as landed, as one
    `fetch` made before they were kept (a CI cache restored from an earlier run) left it."""
    git(stack.up, "config", "uploadpack.allowfilter", "true")
    config = stack.root / "patchforge.toml"
    config.write_text(config.read_text().replace(f'url = "{stack.up}"', f'url = "file://{stack.up}"'))
    monkeypatch.setenv("PATCHFORGE_CACHE", str(tmp_path / "fresh-cache"))
    kept = stack.root / "series/up/upstreamed"
    kept.rename(tmp_path / "kept-aside")
    stack.cli("fetch")
    (tmp_path / "kept-aside").rename(kept)


def test_plain_verify_offline_says_which_landed_fixes_a_partial_cache_could_not_read(
        tmp_path, monkeypatch):
    """The store is a partial clone: its files come on first read. A fresh cache that has the
    locked commit but not the files of the fixes kept as landed, with --offline: their
    judgement failed, and plain `verify` said nothing of them, exit 0, as if they were in. It
    now says NOT CHECKED for each, and that without --offline the cache brings them; without
    --offline it fails the reverted ones."""
    stack = _two_landings_reverted_at_the_pin(tmp_path)
    _partial_cache(stack, tmp_path, monkeypatch)
    _, out, err = stack.cli("--offline", "verify")
    assert "mismatch" not in out, out
    for fix in ("up/upstreamed/fa.patch", "up/upstreamed/fx.patch"):
        assert f"NOT CHECKED: whether up v3 still holds {fix}: its files at the locked revision " \
            "could not be read" in err, err
    assert "without --offline the cache brings them" in err, err
    _, out, _ = stack.cli("verify", expect=1)
    assert "bring-back up/fa.patch" in out and "bring-back up/fx.patch" in out, out


def test_verify_installed_offline_says_which_landed_fixes_a_partial_cache_could_not_read(
        tmp_path, monkeypatch):
    """The same partial cache, a fix kept as landed whose every file an overlay covers (fx, in
    c.py, which fc overlays), reverted at the pin: `verify --installed --offline` of a tree
    holding the overlay, which lacks fx, could not judge fx and said nothing, exit 0. It now
    says NOT CHECKED for fx; without --offline it fails the overlay, naming `bring-back`."""
    stack = _two_landings_reverted_at_the_pin(tmp_path, with_a=False)
    stack.cli("overlays", expect=1)  # (the overlay lacks fx: said)
    tree = tmp_path / "image"
    (tree / "opt/site/pkg").mkdir(parents=True)
    (tree / "opt/site/pkg/c.py").write_bytes((stack.root / "overlays/up/pkg/c.py").read_bytes())
    _partial_cache(stack, tmp_path, monkeypatch)
    _, out, err = stack.cli("--offline", "verify", "--installed", str(tree))
    assert "mismatch" not in out, out
    assert "NOT CHECKED: up/upstreamed/fx.patch: whether up v3 still holds it could not be " \
        "read" in err and "without --offline the cache brings its files" in err, err
    _, out, _ = stack.cli("verify", "--installed", str(tree), expect=1)
    assert "bring-back up/fx.patch" in out, out


def test_offline_overlays_on_a_cache_without_a_landed_fixs_files_writes_nothing(
        tmp_path, monkeypatch):
    """A fix kept as landed (fx, in c.py, which fc overlays), reverted at the pin; a partial
    cache without the files its judgement reads. `--offline overlays` could not judge it and
    wrote a Dockerfile without the step that fails its build, exit 0 (`--check` agreed): the
    image claimed a fix it does not hold. It now fails (exit 2) naming the fix and `patchforge
    fetch`, writing nothing; `fetch` brings those files, and offline `overlays` then writes
    what it writes online."""
    from helpers.snapshot import snapshot

    stack = _two_landings_reverted_at_the_pin(tmp_path, with_a=False)
    stack.cli("overlays", expect=1)
    online = (stack.root / "overlays/Dockerfile").read_bytes()
    assert b"# FAILS: " in online and b"bring-back up/fx.patch" in online
    _partial_cache(stack, tmp_path, monkeypatch)
    (stack.root / "overlays/Dockerfile").unlink()  # (a fresh clone: a build output)
    before = snapshot(stack.root)
    for args in (["overlays"], ["overlays", "--check"], ["overlays", "--json"]):
        rc, out, err = stack.cli("--offline", *args, expect=2)
        assert "overlays/Dockerfile cannot be made: up/upstreamed/fx.patch" in err and \
            "`patchforge fetch`" in err, (args, out, err)
        assert snapshot(stack.root) == before, args
    stack.cli("fetch")
    _, _, err = stack.cli("--offline", "overlays", expect=1)
    assert "bring-back up/fx.patch" in err, err
    assert (stack.root / "overlays/Dockerfile").read_bytes() == online


def test_a_stack_compose_file_is_read_in_every_document_as_compose_merges_them(stack):
    """compose merges the YAML documents of one file: `docker compose config` has the services
    of each. Only the first document's `services:` was read, so a stack whose service was in
    the second was said to define no such service, `verify` failed it, and the hint said to
    set compose-service to the first document's service (the fixes would have gone into the
    proxy). Every document is read now; a double-quoted key's escapes are undone as YAML does
    (`"vl\\u006cm"` was read as `vlu006cm`); compose's `!reset` (what is left is not on the
    file's lines) is not guessed at; and of several services, none is named as the one to
    set. Each file is checked against compose-go's own reading of it."""
    root = stack
    _lock_pins_an_image(root)
    files = ("compose.yaml", "overlays/gfx942/compose.yaml")

    def read(text: str):
        (root / "compose.yaml").write_text(text)
        said = ok(root, "overlays").err
        run = run_cli(root, "verify", "--json")
        alone = json.loads(compose_config(root, "compose.yaml").stdout).get("services") or {}
        return said, run, set(alone), json.loads(compose_config(root, *files).stdout)

    for text in ("---\nservices:\n  proxy:\n    image: nginx\n"
                 "---\nservices:\n  inference:\n    image: rocm/vllm\n",
                 "services:\n  proxy:\n    image: nginx\n...\n--- # the server\n"
                 "volumes:\n  cache:\nservices:\n  inference:\n    image: rocm/vllm\n",
                 'services:\n  "\\u0069nfer\\x65nce":\n    image: rocm/vllm\n'):
        said, run, services, model = read(text)
        assert "inference" in services, (text, services)
        check_mounts(model, "inference", root / "overlays", "gfx942", {"up": DEPLOY_ROOT})
        assert "defines no service" not in said and run.rc == 0, (text, said, run.text)
    # The service in neither document: said, both documents' services named, none guessed.
    said, run, services, model = read("---\nservices:\n  proxy:\n    image: nginx\n"
                                      "---\nservices:\n  vllm:\n    image: rocm/vllm\n")
    assert services == {"proxy", "vllm"} and not model["services"]["vllm"].get("volumes")
    assert "defines no service 'inference' (compose-service), only 'proxy', 'vllm'" in said \
        and 'compose-service = "proxy"' not in said, said
    assert run.rc == 1
    said, run, services, model = read('services:\n  "vl\\u006cm":\n    image: rocm/vllm\n')
    assert services == {"vllm"}
    assert "only 'vllm'" in said and 'compose-service = "vllm"' in said and run.rc == 1, said
    # `!reset`: compose has none of the services written under it; not judged.
    said, run, services, model = read("volumes:\n  cache:\nservices: !reset\n"
                                      "  vllm:\n    image: rocm/vllm\n")
    assert services == set() and "inference" in model["services"]
    assert "defines no service" not in said and run.rc == 0, (said, run.text)


# A user's compose file as editors and compose files in the wild write it: compose-go's reading
# of its services decides whether the service the fragments mount into is there.
_COMPOSE_FILES_WRITTEN_OTHERWISE = {
    "a byte order mark": "\ufeffservices:\n  {svc}:\n    image: busybox\n",
    "a byte order mark and CRLF": "\ufeffservices:\r\n  {svc}:\r\n    image: busybox\r\n",
    "a quoted key": "\"services\":\n  '{svc}':\n    image: busybox\n",
    "an anchor on services": "services: &all  # every service\n  {svc}:\n    image: busybox\n",
    "a tag on services": "---\nservices: !!map\n  {svc}:\n    image: busybox\n",
    "an anchor on the key": "services:\n  &main {svc}:\n    image: busybox\n",
    "an anchor and a merge key in a service": (
        "x-common: &common\n  image: busybox\nservices:\n  {svc}: &svc\n    <<: *common\n"
        "  sidecar:\n    <<: *svc\n"),
    # A value over several lines: a line inside it is no key, whatever it holds.
    "a quoted value over lines": (
        "services:\n  {svc}:\n    image: busybox\n    environment:\n      NOTE: \"one\n"
        "  inference: two\n   three\"\n    command: 'a ''b''\n  inference: c'\n"),
    "a flow sequence over lines": (
        "services:\n  {svc}:\n    image: busybox\n    entrypoint: [\"sh\", \"-c\",\n"
        "  \"inference: x\"]  # the command\n"),
}
# The services brought in by a merge key or an alias: the file's own services are not all
# on its lines, so nothing is said of them.
_COMPOSE_FILES_NOT_GUESSED = {
    "a merge key of services": ("x-services: &more\n  {svc}:\n    image: busybox\nservices:\n"
                                "  <<: *more\n  db:\n    image: busybox\n"),
    "merge keys of a list": ("x-a: &a\n  {svc}:\n    image: busybox\nx-b: &b\n  db:\n"
                             "    image: busybox\nservices:\n  <<: [*a, *b]\n"),
    "an alias as a key": "x-name: &name {svc}\nservices:\n  *name :\n    image: busybox\n",
}


@pytest.mark.parametrize("how", sorted(_COMPOSE_FILES_WRITTEN_OTHERWISE)
                         + sorted(_COMPOSE_FILES_NOT_GUESSED))
def test_the_stack_compose_files_services_are_read_as_compose_reads_them(stack, how):
    """Whether the stack's compose file defines the service the fragments mount into was read
    from its lines: a byte order mark, a quoted `"services":`, an anchor or a tag on it hid
    every service (a stack whose service is `vllm` passed, and compose ran it without a
    single overlay), and `<<: *more` or `&main inference:` were taken for services named
    `<<` and `&main inference` (`verify` failed a stack compose runs with its overlays). Each
    file is read as compose-go reads it: the service named where compose has it, `verify`
    passing; another name said; services merged in from elsewhere not guessed at."""
    root = stack
    _lock_pins_an_image(root)
    text = {**_COMPOSE_FILES_WRITTEN_OTHERWISE, **_COMPOSE_FILES_NOT_GUESSED}[how]
    files = ("compose.yaml", "overlays/gfx942/compose.yaml")
    for service in ("inference", "vllm"):
        (root / "compose.yaml").write_bytes(text.format(svc=service).encode())
        said = ok(root, "overlays").err
        run = run_cli(root, "verify", "--json")
        services = set(json.loads(compose_config(root, "compose.yaml").stdout)["services"])
        assert service in services, services
        model = json.loads(compose_config(root, *files).stdout)
        if service == "inference":  # compose mounts the overlays into the stack's service
            check_mounts(model, "inference", root / "overlays", "gfx942", {"up": DEPLOY_ROOT})
            assert "defines no service" not in said and run.rc == 0, (said, run.text)
        elif how in _COMPOSE_FILES_WRITTEN_OTHERWISE:
            assert "inference" in model["services"] and not model["services"]["vllm"].get(
                "volumes")  # the harm: vllm runs without the overlays
            assert f"{root / 'compose.yaml'} defines no service 'inference' (compose-service)" \
                in said and "only 'vllm'" in said, said
            rows = {r["path"]: r for r in json.loads(run.out)["results"]}
            assert run.rc == 1 and rows[str(root / "compose.yaml")]["state"] == "mismatch"
        else:
            assert "defines no service" not in said and run.rc == 0, (said, run.text)


@pytest.mark.parametrize("what", ["link", "linked-directory", "directory", "fifo"])
def test_verify_and_check_name_an_overlay_path_that_is_not_the_file_itself(stack, tmp_path, what):
    """What stands at an overlay's path is what the mount gives the container. A symlink out of
    overlays/ (or a directory of it linked elsewhere) to a same-content file passed `verify` as
    `ok`: on the host that mounts it, it names whatever is there. A directory stopped `verify`
    with "Is a directory" and the crash hint; a FIFO hung `verify` and `overlays --check` for
    ever. Each is a row of its own (`mismatch`, a `changed` drift), exit 1, the other files
    still checked."""
    from helpers.cli import run_subprocess

    root = stack
    ok(root, "overlays")
    sums = (root / "overlays/SHA256SUMS").read_text().splitlines()
    rel = next(rel for rel in (line.split("  ", 1)[1] for line in sums)
               if not rel.endswith(".yaml") and not rel.startswith("artifacts/"))
    path = root / "overlays" / rel
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    if what == "link":
        shutil.copy(path, elsewhere / path.name)
        path.unlink()
        path.symlink_to(elsewhere / path.name)
        expected = f"a symlink to {elsewhere / path.name}"
    elif what == "linked-directory":
        shutil.copytree(path.parent, elsewhere / "dir")
        shutil.rmtree(path.parent)
        path.parent.symlink_to(elsewhere / "dir")
        expected = "a symlink ("
    elif what == "directory":
        path.unlink()
        path.mkdir()
        expected = "a directory, not the overlay file"
    else:
        path.unlink()
        os.mkfifo(path)
        expected = "not a regular file, not the overlay file"
    verified = run_subprocess(root, "verify", timeout=120)
    out = verified.stdout.decode()
    assert verified.returncode == 1, (verified.returncode, out, verified.stderr)
    row = next(line for line in out.splitlines() if rel in line)
    assert row.startswith("mismatch") and expected in row, out
    assert re.search(r"\n[1-9][0-9]* ok, [1-9][0-9]* failed", out), "the other files are checked"
    checked = run_subprocess(root, "overlays", "--check", timeout=120)
    assert checked.returncode == 1 and expected in checked.stdout.decode() + \
        checked.stderr.decode(), checked


def test_the_compose_service_setting_is_said_where_a_standalone_configuration_takes_it(
        tmp_path):
    """A stack configured in patchforge.toml whose compose.yaml names its service `vllm`: the
    warning said to set `compose-service = "vllm"` "under [tool.patchforge]", a table that
    file does not have (its keys are at its top level), and a `[tool.patchforge]` table added
    to it is not read as the setting. It now names the file the setting goes in, and set
    there, the overlays mount into `vllm`."""
    from helpers.project import OneUpstreamStack

    base = b"".join(b"a line %d\n" % i for i in range(1, 11))
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": base})
    stack.add_fix("fa", "pkg/a.py", base, base.replace(b"a line 5\n", b"a line 5, fa\n"))
    root = stack.root
    digest = _lock_pins_an_image(root)
    (root / "compose.yaml").write_text(f"services:\n  vllm:\n    image: registry.example.com/"
                                       f"rocm/vllm@{digest}\n")
    said = ok(root, "overlays").err
    assert 'set `compose-service = "vllm"` in patchforge.toml' in said, said
    assert "[tool.patchforge]" not in said, said
    config = root / "patchforge.toml"
    config.write_text('compose-service = "vllm"\n' + config.read_text())
    assert "defines no service" not in ok(root, "overlays").err
    model = json.loads(compose_config(root, "compose.yaml", "overlays/compose.yaml").stdout)
    assert set(model["services"]) == {"vllm"}
    assert run_cli(root, "verify").rc == 0


def test_the_env_way_is_checked_as_the_deployment_page_says(example, tmp_path):
    """docs/deployment.md offers `COMPOSE_FILE=...` in `.env` "so that a plain `docker compose
    up -d` picks it up". Run from a subdirectory of the stack, compose found compose.yaml above
    it but not the `.env`, and the service ran with no fix, nothing said. The page says where
    to run it and gives the check; run as written, the check finds the fragment's label from
    the stack's root and nothing from a subdirectory."""
    page = (REPO_ROOT / "docs" / "deployment.md").read_text()
    (line,) = [b.strip() for b in re.findall(r"```sh\n(.*?)```", page, re.S)
               if "COMPOSE_FILE=" in b and ">> .env" in b]
    checks = [b.strip() for b in re.findall(r"```sh\n(.*?)```", page, re.S)
              if b.strip().startswith("docker compose config") and "patchforge.overlays" in b]
    assert checks, "the page gives no check of what compose takes"
    host = tmp_path / "host"
    host.mkdir()
    shutil.copytree(example / "overlays", host / "overlays")
    (host / "series").mkdir()
    (host / "compose.yaml").write_text("services:\n  inference:\n    image: busybox\n")
    subprocess.run(["sh", "-c", line], cwd=host, check=True)
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "docker").write_text(f'#!/bin/sh\n[ "$1" = compose ] && shift\n'
                                   f'exec "{compose_binary()}" "$@"\n')
    (bindir / "docker").chmod(0o755)
    env = dict(os.environ, PATH=f"{bindir}:{os.environ['PATH']}")
    env.pop("COMPOSE_FILE", None)
    found = {where: subprocess.run(["sh", "-c", checks[0]], cwd=host / where, env=env,
                                   capture_output=True, text=True, timeout=120)
             for where in (".", "series")}
    assert found["."].returncode == 0 and "patchforge.overlays" in found["."].stdout, found["."]
    assert found["series"].returncode != 0 and not found["series"].stdout, found["series"]


def test_a_rebase_dropping_fixes_out_of_name_order_writes_the_dockerfile_overlays_makes(
        tmp_path):
    """A rebase that drops several fixes as landed, of an upstream with no install-root (as
    `upstream add --git` pins one), wrote the Dockerfile's `# NOT CHECKED:` line of each in
    the series' order, where `overlays` lists the fixes under upstreamed/ by name: when the two
    orders differ (`zz-first` before `aa-second` in the series), `overlays --check` right
    after the rebase said `changed  Dockerfile`, and `overlays` rewrote it. The write-out now
    lists them as `overlays` does."""
    from helpers.project import OneUpstreamStack
    from helpers.template import check_but_for_the_install_root

    files = {f"pkg/{n}.py": b"".join(b"%s line %d\n" % (n.encode(), i) for i in range(1, 21))
             for n in ("a", "b", "c")}
    fixed = {path: text.replace(b" line 5\n", b" line 5, fixed\n") for path, text in files.items()}
    stack = OneUpstreamStack(tmp_path, files)
    config = stack.root / "patchforge.toml"
    config.write_text("".join(line for line in config.read_text().splitlines(True)
                              if not line.startswith("install-root")))
    for name, path in (("zz-first", "pkg/a.py"), ("aa-second", "pkg/b.py"),
                       ("mm-stays", "pkg/c.py")):
        stack.add_fix(name, path, files[path], fixed[path])
    stack.cli("overlays")
    stack.commit({"pkg/a.py": fixed["pkg/a.py"], "pkg/b.py": fixed["pkg/b.py"]}, "Fix a, b",
                 tag="v2")
    stack.cli("rebase", "--to", "v2")
    assert stack.series("up") == ["mm-stays.patch"]
    before = (stack.root / "overlays/Dockerfile").read_bytes()
    assert b"NOT CHECKED: up/upstreamed/zz-first.patch" in before, before.decode()
    assert b"NOT CHECKED: up/upstreamed/aa-second.patch" in before, before.decode()
    check_but_for_the_install_root(stack.root)
    stack.cli("overlays")
    assert (stack.root / "overlays/Dockerfile").read_bytes() == before


def _three_files_stack(tmp_path, *, install_root: bool):
    """A OneUpstreamStack of pkg/a.py, pkg/b.py, pkg/c.py (20 lines each), with or without
    its install-root; and each file with its line 5 fixed."""
    from helpers.project import OneUpstreamStack

    files = {f"pkg/{n}.py": b"".join(b"%s line %d\n" % (n.encode(), i) for i in range(1, 21))
             for n in ("a", "b", "c")}
    fixed = {path: text.replace(b" line 5\n", b" line 5, fixed\n") for path, text in files.items()}
    stack = OneUpstreamStack(tmp_path, files)
    if not install_root:
        config = stack.root / "patchforge.toml"
        config.write_text("".join(line for line in config.read_text().splitlines(True)
                                  if not line.startswith("install-root")))
    return stack, files, fixed


def test_a_rebase_keeping_a_fix_under_a_taken_name_writes_the_dockerfile_overlays_makes(
        tmp_path):
    """A fix dropped as landed whose name an earlier kept fix holds under upstreamed/ is
    written there as `x.2.patch`; the Dockerfile the rebase wrote named it `x.patch` (twice),
    so `overlays --check` right after the rebase said `changed  Dockerfile`. The write-out now
    names it as the file it writes."""
    from helpers.template import check_but_for_the_install_root

    stack, files, fixed = _three_files_stack(tmp_path, install_root=False)
    stack.add_fix("x", "pkg/a.py", files["pkg/a.py"], fixed["pkg/a.py"])
    stack.add_fix("stays", "pkg/c.py", files["pkg/c.py"], fixed["pkg/c.py"])
    stack.cli("overlays")
    stack.commit({"pkg/a.py": fixed["pkg/a.py"]}, "Fix a", tag="v2")
    stack.cli("rebase", "--to", "v2")
    shutil.rmtree(tmp_path / "diff-x")  # add_fix's scratch repository of the first x
    stack.add_fix("x", "pkg/b.py", files["pkg/b.py"], fixed["pkg/b.py"])
    stack.commit({"pkg/b.py": fixed["pkg/b.py"]}, "Fix b", tag="v3")
    stack.cli("rebase", "--to", "v3")
    assert stack.series("up") == ["stays.patch"]
    assert sorted(p.name for p in (stack.root / "series/up/upstreamed").iterdir()) == \
        ["x.2.patch", "x.patch"]
    before = (stack.root / "overlays/Dockerfile").read_bytes()
    assert b"NOT CHECKED: up/upstreamed/x.2.patch" in before, before.decode()
    check_but_for_the_install_root(stack.root)
    stack.cli("overlays")
    assert (stack.root / "overlays/Dockerfile").read_bytes() == before


def test_a_rebase_keeping_a_fixs_landed_part_writes_the_dockerfile_overlays_makes(tmp_path):
    """A fix of two files one of whose changes landed moves on, its landed part kept as
    upstreamed/two.patch; the Dockerfile the rebase wrote left that part out (no check of
    its file), so `overlays --check` right after the rebase said `changed  Dockerfile`."""
    from helpers.upstream import diff_of

    stack, files, fixed = _three_files_stack(tmp_path, install_root=True)
    data = stack.add_fix("two", "pkg/a.py", files["pkg/a.py"], fixed["pkg/a.py"])
    (stack.root / "series/up/two.patch").write_bytes(
        data + diff_of(tmp_path / "diff-two-c", "pkg/c.py", files["pkg/c.py"],
                       fixed["pkg/c.py"]))
    stack.cli("overlays")
    stack.commit({"pkg/a.py": fixed["pkg/a.py"]}, "Fix a", tag="v2")
    stack.cli("rebase", "--to", "v2")
    assert stack.series("up") == ["two.patch"]
    assert (stack.root / "series/up/upstreamed/two.patch").is_file()
    before = (stack.root / "overlays/Dockerfile").read_bytes()
    assert b"/opt/site/pkg/a.py" in before, before.decode()
    rc, out, err = stack.cli("overlays", "--check", expect=None)
    assert rc == 0 and "up to date" in out, out + err
    stack.cli("overlays")
    assert (stack.root / "overlays/Dockerfile").read_bytes() == before


def test_a_rebase_keeping_a_fix_under_a_reverted_ones_name_writes_no_false_failing_step(
        tmp_path):
    """Upstream reverts a kept fix `x` (pkg/a.py) while another fix named `x` (pkg/b.py)
    lands: the new one is kept as upstreamed/x.2.patch. The Dockerfile the rebase wrote read
    both under the reverted one's name, a `# FAILS` step for pkg/b.py, which is fixed at the
    pin, and `overlays --check` said `changed  Dockerfile`."""
    stack, files, fixed = _three_files_stack(tmp_path, install_root=True)
    stack.add_fix("x", "pkg/a.py", files["pkg/a.py"], fixed["pkg/a.py"])
    stack.add_fix("stays", "pkg/c.py", files["pkg/c.py"], fixed["pkg/c.py"])
    stack.cli("overlays")
    landed = stack.commit({"pkg/a.py": fixed["pkg/a.py"]}, "Fix a", tag="v2")
    stack.cli("rebase", "--to", "v2")
    shutil.rmtree(tmp_path / "diff-x")  # add_fix's scratch repository of the first x
    stack.add_fix("x", "pkg/b.py", files["pkg/b.py"], fixed["pkg/b.py"])
    stack.commit({"pkg/a.py": files["pkg/a.py"]},
                 f'Revert "Fix a"\n\nThis reverts commit {landed}.')
    stack.commit({"pkg/b.py": fixed["pkg/b.py"]}, "Fix b", tag="v3")
    rc, out, err = stack.cli("rebase", "--to", "v3", expect=None)
    assert rc == 1 and "reverted upstream" in out + err, out + err
    assert sorted(p.name for p in (stack.root / "series/up/upstreamed").iterdir()) == \
        ["x.2.patch", "x.patch"]
    before = (stack.root / "overlays/Dockerfile").read_bytes()
    assert b"FAILS: /opt/site/pkg/a.py" in before, before.decode()
    assert b"FAILS: /opt/site/pkg/b.py" not in before, before.decode()
    rc, out, err = stack.cli("overlays", "--check", expect=None)
    assert rc == 1 and "up to date" in out, out + err
    stack.cli("overlays", expect=1)  # the pin lacks the reverted fix of pkg/a.py: said so
    assert (stack.root / "overlays/Dockerfile").read_bytes() == before
