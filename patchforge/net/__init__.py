"""patchforge.net: the HTTP services patchforge talks to.

`http` (the client: retries, rate limits, ETag cache, offline, token hygiene; the one module that
imports requests, lazily), `forge` (pull requests and compare, GitHub REST first) and `registry`
(OCI distribution: image reference -> digest -> labels). Nothing is imported here, so that
importing one of them never pays for the others; `make_forge` here is the forge client a
command's configuration names, whose modules are loaded when it is first used.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from patchforge.net.forge import GitHubForge
    from patchforge.project import Project


def make_forge(project: Project):
    """The forge client from the configuration (token from GITHUB_TOKEN, cache in the store dir).

    Built on first use: most series name no pull request, and the HTTP stack is slow to load
    (`net.forge` with `net.http`, about 25 ms)."""
    return _LazyForge(project)


class _LazyForge:
    def __init__(self, project: Project) -> None:
        self._project = project
        self._forge: GitHubForge | None = None

    def __getattr__(self, name):
        if self._forge is None:
            from patchforge.net.forge import GitHubForge
            from patchforge.store.gitstore import cache_dir

            forge = self._project.config.forge
            self._forge = GitHubForge.from_config(forge.api_url, cache_dir(),
                                                  offline=self._project.offline,
                                                  web_host=forge.web_host)
        return getattr(self._forge, name)
