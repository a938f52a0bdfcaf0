"""Where tokens come from: the tools people already log in with.

The forge token: `GH_TOKEN`, then `GITHUB_TOKEN` (the variables gh and GitHub Actions set), then
`gh auth token --hostname HOST` when the GitHub CLI is installed and logged in. Registry
credentials: `docker login`'s `~/.docker/config.json` (or `$DOCKER_CONFIG/config.json`): its
`auths` entries and its credential helpers (`credHelpers` per registry, `credsStore` for all),
asked through the helper protocol (`docker-credential-NAME get`, the server on stdin, JSON out).

Nothing here prints or logs a secret; a helper that fails or is missing means "no credentials",
said at debug level, since most images and pull requests are public.
"""
from __future__ import annotations

import base64
import logging
import os
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import urlsplit

from patchforge.fsutil import parse_json
from patchforge.model.record import field, record

log = logging.getLogger("patchforge.net")

FORGE_TOKEN_VARIABLES = ("GH_TOKEN", "GITHUB_TOKEN")
_HELPER_TIMEOUT = 10.0
# Docker Hub's key in config.json is the v1 index URL, whatever host the images come from.
_DOCKER_HUB_KEYS = ("https://index.docker.io/v1/", "index.docker.io", "docker.io",
                    "registry-1.docker.io")
_DOCKER_HUB_HOSTS = frozenset({"registry-1.docker.io", "docker.io", "index.docker.io"})


@record(frozen=True)
class Token:
    """A secret and where it came from (the source is safe to show, the value never is)."""

    value: str = field(repr=False)
    source: str


def forge_web_host(api_url: str) -> str:
    """The web host gh knows a forge by: api.github.com -> github.com, https://ghe/api/v3 -> ghe."""
    host = (urlsplit(api_url).hostname or "").lower()
    return "github.com" if host in ("api.github.com", "github.com") else host


def _api_host(url: str) -> str:
    """`host[:port]` of an API URL, lowercased."""
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    return f"{host}:{parts.port}" if parts.port else host


def env_token_hosts(env: Mapping[str, str]) -> frozenset[str]:
    """The API hosts a GH_TOKEN or GITHUB_TOKEN may go to: api.github.com, the API GitHub
    Actions names for the server a job runs on (`$GITHUB_API_URL`, GitHub Enterprise Server
    included), and the host gh is pointed at (`$GH_HOST`, as gh itself reads it)."""
    hosts = {"api.github.com"}
    if env.get("GITHUB_API_URL"):
        hosts.add(_api_host(env["GITHUB_API_URL"].strip()))
    gh_host = (env.get("GH_HOST") or "").strip().lower()
    if gh_host and gh_host != "github.com":
        hosts.add(gh_host)
    return frozenset(h for h in hosts if h)


def forge_token(api_url: str, env: Mapping[str, str] | None = None, *,
                offline: bool = False) -> Token | None:
    """The token for the forge at `api_url`: the environment first, then the GitHub CLI.

    An environment token goes only to an API the environment itself names (env_token_hosts):
    `forge.api-url` comes from the stack's configuration, which arrives by pull request, and a
    CI job checking such a pull request sent its GITHUB_TOKEN to whatever host it named."""
    environ: Mapping[str, str] = os.environ if env is None else env
    host = _api_host(api_url)
    for name in FORGE_TOKEN_VARIABLES:
        value = (environ.get(name) or "").strip()
        if not value:
            continue
        allowed = env_token_hosts(environ)
        if host in allowed:
            return Token(value, f"${name}")
        log.warning("warning: $%s is not sent to %s, the forge.api-url of the configuration: "
                    "a token from the environment goes only to %s (set GITHUB_API_URL or "
                    "GH_HOST to name your forge)", name, host, ", ".join(sorted(allowed)))
        break
    if offline:
        return None
    gh = shutil.which("gh", path=environ.get("PATH"))
    if gh is None:
        return None
    host = forge_web_host(api_url)
    try:
        proc = subprocess.run([gh, "auth", "token", "--hostname", host], capture_output=True,
                              timeout=_HELPER_TIMEOUT, stdin=subprocess.DEVNULL,
                              env={**environ, "GH_PROMPT_DISABLED": "1", "NO_COLOR": "1"})
    except (OSError, subprocess.TimeoutExpired) as exc:
        log.debug("gh auth token: %s", type(exc).__name__)
        return None
    value = proc.stdout.decode("utf-8", "replace").strip()
    if proc.returncode != 0 or not value:
        log.debug("gh auth token --hostname %s: exit %d (not logged in there)", host,
                  proc.returncode)
        return None
    return Token(value, f"`gh auth token --hostname {host}`")


def docker_config_path(env: Mapping[str, str] | None = None) -> Path:
    environ: Mapping[str, str] = os.environ if env is None else env
    base = environ.get("DOCKER_CONFIG")
    return Path(base) / "config.json" if base else Path(environ.get("HOME", "~")).expanduser() \
        / ".docker" / "config.json"


class DockerCredentials:
    """Registry credentials as `docker login` left them, looked up per registry when asked."""

    def __init__(self, env: dict[str, str] | None = None) -> None:
        self.env = dict(os.environ if env is None else env)
        self.path = docker_config_path(self.env)
        self._config: dict | None = None
        self._answers: dict[str, tuple[str, str] | None] = {}

    def _load(self) -> dict:
        if self._config is None:
            try:
                doc = parse_json(self.path.read_bytes())
            except FileNotFoundError:
                doc = {}
            except (OSError, ValueError) as exc:
                log.warning("%s: not readable as JSON (%s); registry logins in it are not used",
                            self.path, exc)
                doc = {}
            self._config = doc if isinstance(doc, dict) else {}
        return self._config

    def lookup(self, registry: str) -> tuple[str, str] | None:
        """(username, secret) for `registry` (host[:port]), or None."""
        registry = registry.lower()
        if registry not in self._answers:
            self._answers[registry] = self._lookup(registry)
        return self._answers[registry]

    def _keys(self, registry: str) -> tuple[str, ...]:
        if registry in _DOCKER_HUB_HOSTS:
            return _DOCKER_HUB_KEYS
        return (registry, f"https://{registry}", f"https://{registry}/", f"http://{registry}")

    def _lookup(self, registry: str) -> tuple[str, str] | None:
        config = self._load()
        keys = self._keys(registry)
        found = config.get("credHelpers")
        helpers: dict = found if isinstance(found, dict) else {}
        for key in keys:
            if isinstance(helpers.get(key), str):
                return self._ask_helper(helpers[key], keys[0])
        found = config.get("auths")
        auths: dict = found if isinstance(found, dict) else {}
        for key in keys:
            entry = auths.get(key)
            if isinstance(entry, dict) and isinstance(entry.get("auth"), str) and entry["auth"]:
                try:
                    user, _, secret = base64.b64decode(entry["auth"]).decode().partition(":")
                except (ValueError, UnicodeDecodeError):
                    log.warning("%s: the auth entry for %s is not base64 user:secret",
                                self.path, key)
                    return None
                return (user, secret) if secret else None
        if isinstance(config.get("credsStore"), str):
            return self._ask_helper(config["credsStore"], keys[0])
        return None

    def _ask_helper(self, name: str, server: str) -> tuple[str, str] | None:
        if not name.replace("-", "").replace("_", "").isalnum():
            log.warning("%s: credential helper name %r is not a plain name; not run",
                        self.path, name)
            return None
        program = shutil.which(f"docker-credential-{name}", path=self.env.get("PATH"))
        if program is None:
            log.debug("docker-credential-%s is not installed", name)
            return None
        try:
            proc = subprocess.run([program, "get"], input=server.encode(), capture_output=True,
                                  timeout=_HELPER_TIMEOUT, env=self.env)
        except (OSError, subprocess.TimeoutExpired) as exc:
            log.debug("docker-credential-%s get: %s", name, type(exc).__name__)
            return None
        if proc.returncode != 0:
            log.debug("docker-credential-%s has nothing for %s", name, server)
            return None
        try:
            doc = parse_json(proc.stdout)
            user, secret = str(doc["Username"]), str(doc["Secret"])
        except (ValueError, KeyError, TypeError):
            log.warning("docker-credential-%s gave an answer that is not its JSON", name)
            return None
        return (user, secret) if secret else None
