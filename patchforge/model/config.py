"""The configuration model: what the user wrote in `[tool.patchforge]` (the intent)."""
from __future__ import annotations

from patchforge.model.record import field, record

UPSTREAM_KINDS = ("git", "wheel", "dir")


@record(frozen=True)
class UpstreamConfig:
    """One upstream: where its content comes from and where its files live in the image."""

    name: str
    kind: str  # "git" | "wheel" | "dir"
    url: str | None = None  # git: any URL or local path
    follow: str | None = None  # git: the one branch or tag to follow (e.g. "main")
    package: str | None = None  # wheel: the distribution name
    path: str | None = None  # dir: a local directory
    install_root: str | None = None  # where the upstream's files live in the target image
    forge_repo: str | None = None  # "owner/name" on the forge, for PRs and Forwarded lookups
    signoff: bool = False  # the upstream wants a DCO Signed-off-by trailer on PR commits
    image_label: str | None = None  # image-config label naming this upstream's commit
    git_url: str | None = None  # wheel/dir upstreams: the git repository PRs go to


@record(frozen=True)
class ForgeConfig:
    api_url: str = "https://api.github.com"
    repo: str | None = None  # "owner/name" of the stack repository itself (bump --open-pr)
    # The web host whose pull requests the API answers for, when the API's address does not
    # say (a proxy in front of github.com or a GitHub Enterprise): net.forge.web_hosts.
    web_host: str | None = None


@record(frozen=True)
class Config:
    """The whole `[tool.patchforge]` table. `source` is the file it was read from."""

    source: str
    upstreams: dict[str, UpstreamConfig] = field(default_factory=dict)
    profiles: dict[str, str] = field(default_factory=dict)
    artifacts: tuple[str, ...] = ()
    forge: ForgeConfig = ForgeConfig()
    checks: dict[str, dict] = field(default_factory=dict)
    image: str | None = None  # the deployed image reference, if the stack pins one
    compose_service: str = "inference"  # the compose service the overlay mounts belong to
    # Whether the compose fragment sets the service's image to the pinned one (the image the
    # overlays are made for); false for a deployment running an image of its own.
    compose_image: bool = True

    def upstream(self, name: str) -> UpstreamConfig:
        from patchforge.errors import UsageError
        try:
            return self.upstreams[name]
        except KeyError:
            known = ", ".join(sorted(self.upstreams)) or "none configured"
            raise UsageError(f"unknown upstream {name!r} (known: {known})") from None
