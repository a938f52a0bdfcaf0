"""The logins people already have: `docker login` for registries, the user's git configuration
(credential helpers, insteadOf, proxies) for fetches of git upstreams. (The forge token from
GH_TOKEN and `gh auth token` is tested with `pr --open` in test_pr.py.)"""
from __future__ import annotations

import base64
import json
import os
from pathlib import Path

from helpers.cli import ok, run_cli
from helpers.project import UPSTREAM_FILES, git_project, lock_doc
from helpers.upstream import Upstream

BASIC = "Basic " + base64.b64encode(b"ada:s3cret-pw").decode()


def _private_image(registry_server, commit: str) -> str:  # noqa: F811
    registry_server.auth_required = True
    registry_server.token_server.credentials = BASIC
    registry_server.push_image("acme/up", "nightly", {"org.opencontainers.image.revision": commit})
    return f"{registry_server.host}/acme/up:nightly"


def test_docker_login_auths_open_a_private_registry(tmp_path, registry_server):  # noqa: F811
    root, commit = git_project(tmp_path)
    image = _private_image(registry_server, commit)
    denied = run_cli(root, "status", "--against", image)
    assert denied.rc == 2 and "401" in denied.err and "docker login" in denied.err
    docker = Path(os.environ["HOME"]) / ".docker"
    docker.mkdir()
    (docker / "config.json").write_text(json.dumps({"auths": {registry_server.host: {
        "auth": base64.b64encode(b"ada:s3cret-pw").decode()}}}))
    run = run_cli(root, "status", "--against", image, "--json")
    assert run.rc == 0, run.err
    assert json.loads(run.out)["targets"]["up"]["commit"] == commit
    assert "s3cret" not in run.text


def test_docker_credential_helper_is_asked(tmp_path, registry_server, monkeypatch):  # noqa: F811
    """`credsStore` names a helper: `docker-credential-NAME get`, the server URL on stdin."""
    root, commit = git_project(tmp_path)
    image = _private_image(registry_server, commit)
    bindir = tmp_path / "bin"
    bindir.mkdir()
    asked = tmp_path / "asked"
    helper = bindir / "docker-credential-vault"
    helper.write_text(f'#!/bin/sh\n[ "$1" = get ] || exit 3\ncat > {asked}\n'
                      'echo \'{"ServerURL": "x", "Username": "ada", "Secret": "s3cret-pw"}\'\n')
    helper.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}:{os.environ['PATH']}")
    config = tmp_path / "dockercfg"
    config.mkdir()
    (config / "config.json").write_text(json.dumps({"credsStore": "vault"}))
    monkeypatch.setenv("DOCKER_CONFIG", str(config))
    run = run_cli(root, "status", "--against", image, "--json")
    assert run.rc == 0, run.err
    assert asked.read_text() == registry_server.host
    assert json.loads(run.out)["targets"]["up"]["commit"] == commit


def test_git_upstream_fetch_reads_the_users_git_config(tmp_path):
    """A URL only the user's `url.<base>.insteadOf` can reach: fetched, and pinned."""
    real = Upstream(tmp_path / "real", UPSTREAM_FILES)
    upstream, commit = real.path, real.base
    root = tmp_path / "project"
    root.mkdir()
    ok(None, "init", cwd=root)
    url = "https://git.example.invalid/acme/up.git"
    refused = run_cli(root, "upstream", "add", "up", "--git", url, "--at", "main")
    # a host that resolves nowhere is a remote that cannot be reached: exit 75, run again later
    assert refused.rc == 75, refused.err
    assert url in refused.err
    (Path(os.environ["HOME"]) / ".gitconfig").write_text(
        f'[url "file://{upstream}"]\n\tinsteadOf = {url}\n')
    ok(root, "upstream", "add", "up", "--git", url, "--at", "main")
    assert lock_doc(root)["upstreams"]["up"]["commit"] == commit
    assert lock_doc(root)["upstreams"]["up"]["source"] == {"url": url}


def test_a_docker_config_nested_too_deep_is_not_read(tmp_path, registry_server):  # noqa: F811
    """~/.docker/config.json nested a hundred thousand deep: every registry lookup ended in an
    internal error (RecursionError). It is not read, as a file cut short is not: the registry
    answers without a login, and says so."""
    root, commit = git_project(tmp_path)
    image = _private_image(registry_server, commit)
    docker = Path(os.environ["HOME"]) / ".docker"
    docker.mkdir()
    (docker / "config.json").write_bytes(b"[" * 100000 + b"]" * 100000)
    run = run_cli(root, "status", "--against", image)
    assert run.rc == 2 and "401" in run.err and "docker login" in run.err, run.err
