"""The lock model: the exact upstream revisions the series is based on (the resolution)."""
from __future__ import annotations

from patchforge.model.record import field, record, replace

LOCK_VERSION = 1


@record(frozen=True)
class UpstreamPin:
    """One upstream's exact revision. `source` depends on the kind:
    git: {"url"}; wheel: {"package", "version", "filename", "sha256"}; dir: {"path"}."""

    kind: str
    commit: str  # 40 hex: the store commit the patches are based on
    tree: str  # 40 hex: its tree
    label: str  # human label: tag, version, nightly name
    source: dict = field(default_factory=dict)
    version: str | None = None  # the upstream's version where known (Drop-When uses it)
    # The image the revision was resolved through (`--to repo:tag`), recorded as the lock's image
    # pin when this pin is written; not part of the upstream's own entry.
    image: "ImagePin | None" = field(default=None, compare=False)


@record(frozen=True)
class ImagePin:
    reference: str
    tag: str | None = None
    digest: str | None = None


def image_unpinned_text(reference: str, *, written: bool = True,
                        overlays_made: bool = True) -> str:
    """What a move off the pinned image's revision did to the image pin (Lock.with_pin), as
    `rebase`, `upstream pin` and `bump` say it. `overlays_made`: the move wrote the overlays
    again (a rebase); `upstream pin` does not, so they still name the image until
    `patchforge overlays` makes them again."""
    drops = "no longer pins" if written else "will no longer pin"
    overlays = "so the overlays name no pinned image" if overlays_made else \
        "and the overlays still name it until `patchforge overlays` makes them again (then " \
        "they name no pinned image)"
    return (f"upstream.lock {drops} the image {reference}: it holds the revision it was "
            f"pinned with, not the new one (nor a fix dropped as landed since), {overlays}; "
            "pin the new revision's image with `patchforge rebase --to NAME=REPO:TAG`, or "
            "deploy onto an image of it you name")


@record(frozen=True)
class Lock:
    upstreams: dict[str, UpstreamPin] = field(default_factory=dict)
    image: ImagePin | None = None
    version: int = LOCK_VERSION

    def pin(self, name: str) -> UpstreamPin:
        from patchforge.errors import UsageError
        try:
            return self.upstreams[name]
        except KeyError:
            raise UsageError(f"upstream {name!r} is not pinned in upstream.lock",
                             hint="restore upstream.lock from the stack's history, or pin it: "
                                  f"`patchforge upstream pin {name} --at SPEC`") from None

    def with_pin(self, name: str, pin: UpstreamPin) -> "Lock":
        """The lock with `name` pinned; an image the pin was resolved through becomes the
        lock's image pin. A move of a pinned upstream to another revision not through an image
        (a commit, a release) drops the image pin: the image holds the revision it was pinned
        with, not the new one, and a fix the move drops as landed would be in neither an
        overlay nor the image (`dropped_image` tells the caller to say so)."""
        previous = self.upstreams.get(name)
        if pin.image is not None:
            image = pin.image
        elif previous is not None and previous.commit != pin.commit:
            image = None
        else:
            image = self.image
        return replace(self, upstreams={**self.upstreams, name: replace(pin, image=None)},
                       image=image)

    def dropped_image(self, before: "Lock") -> ImagePin | None:
        """The image pin `before` had that this lock (made from it by `with_pin`) no longer
        has; None when it kept it or had none."""
        return before.image if before.image is not None and self.image is None else None
