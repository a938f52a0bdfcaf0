"""Deployment checks: are the overlays in `overlays/manifest.json` made for this image?

`verify_image` resolves an image reference through the registry (the digest pinned in
upstream.lock when the reference is the pinned image), reads the image's layers from the top
down (`patchforge.layers`: streamed, no container runtime) and compares, for every overlay, the
file the image holds at the overlay's target with the pre-image the overlay was made for. It
needs only the committed manifest, so it runs on a deployment host with `overlays/` alone.

The fixes dropped from the series as landed upstream (kept under `series/<upstream>/upstreamed/`)
have no overlay: the image itself must hold them. Every image is checked for them, the one
upstream.lock pins too (the series was judged on the upstream's revision, which for a wheel is
the wheel its version label names, not the image's own files): each file they changed that no
overlay covers must be, in the image, the upstream's file at the locked revision, where they
were judged landed, or another version of it with their change in it (read in the same pass
over the layers as the overlaid files; where the store cannot give the locked files, the
result says what was not checked).
"""
from __future__ import annotations

from pathlib import PurePosixPath
from typing import Any, TYPE_CHECKING

from patchforge.errors import ConfigError, InputError, PatchforgeError, UsageError
from patchforge.landings import LandedFixes
from patchforge.model.record import field, record, replace
from patchforge.names import KEPT_LANDINGS
from patchforge.overlay import (other_profiles_overlay, overlaid_lacks, overlay_entries,
                                profiles_overlays, read_manifest)

if TYPE_CHECKING:
    from patchforge.project import Project


@record(frozen=True)
class ImageFileCheck:
    """One overlaid file against the image. `state`: "ok", "mismatch" or "missing"."""

    target: str  # the path in the image (install-root + path)
    upstream: str
    path: str  # relative to the upstream root
    profiles: tuple[str, ...]  # the profiles whose overlays cover this target
    state: str
    expected_sha256: str | None  # the recorded pre-image (None: the overlay creates the file)
    found_sha256: str | None
    layer: str | None  # the layer that holds (or deleted) what the image has there
    detail: str
    # The other profile whose overlay of the file the image holds (baked for that one).
    overlay_of: str | None = None
    # The row of a file no overlay covers, that these fixes dropped as landed upstream changed
    # ("vllm/upstreamed/x.patch"): the image must hold the upstream's own file with them.
    landed: tuple[str, ...] = ()
    # Of `landed`, the fixes the locked revision itself lacks (upstream reverted them there):
    # the upstream's own file is no proof of them (LandedFixes.gone).
    taken_out: tuple[str, ...] = ()
    # The image is not the pinned one, but its labels name the revision its upstream is
    # pinned at (`names_the_pin`): another file there is a re-spin's, or a build's own change,
    # and a move of the series to this image would make the same overlays again.
    same_revision: bool = False


@record(frozen=True)
class ImageCheck:
    """The result of `verify_image`; `ok` when every overlaid file matches its pre-image."""

    reference: str  # what was asked for
    resolved: str  # repository@digest actually read
    digest: str
    manifest_digest: str
    pinned: bool  # the digest came from upstream.lock, not from asking the registry for a tag
    files: tuple[ImageFileCheck, ...]
    layers_total: int
    layers_read: int
    bytes_read: int
    profile: str | None = None
    notes: tuple[str, ...] = field(default=())
    layers_reread: int = 0  # fetches of a layer read before (following a symlink or hard link)
    # fetches of a layer read before for the bytes of a landed fix's file (another version)
    layers_reread_landed: int = 0
    # The digest upstream.lock pins for the tag asked for, when the tag names another image now.
    tag_moved: str | None = None
    # Each fix of the profile's series and each dropped as landed upstream, against this
    # image: {"upstream", "name", "where" ("series" or "upstreamed"), "state", "targets"};
    # state "ok" (in the series: every file it overlays holds its pre-image; upstreamed: the
    # image holds it), "failed" (a file of it did not), "unchecked" (upstreamed, and the image
    # was not read for it).
    fixes: tuple[dict[str, Any], ...] = field(default=())

    @property
    def ok(self) -> bool:
        return self.tag_moved is None and all(f.state == "ok" for f in self.files)

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok, "reference": self.reference, "resolved": self.resolved,
            "digest": self.digest, "manifest_digest": self.manifest_digest,
            "pinned": self.pinned, "profile": self.profile,
            "layers": {"total": self.layers_total, "read": self.layers_read,
                       "bytes_read": self.bytes_read},
            "notes": list(self.notes),
            "results": [{"target": f.target, "upstream": f.upstream, "path": f.path,
                         "profiles": list(f.profiles), "state": f.state,
                         "expected_sha256": f.expected_sha256, "found_sha256": f.found_sha256,
                         "layer": f.layer, "detail": f.detail, "landed": list(f.landed)}
                        for f in self.files],
            "fixes": [dict(fix, targets=list(fix["targets"])) for fix in self.fixes],
        }


def image_reference(project: Project, ref: str | None) -> tuple[str, bool]:
    """What to read: REF as given (a tag is read as it names an image now:
    `pinned_digest_of_tag` tells whether it moved off the pin), or without REF the lock's
    image pin by its digest, else the configured image.

    Returns (reference, pinned): pinned when the digest came from upstream.lock.
    """
    from patchforge.pins import check_image_pin

    pin = project.lock.image
    check_image_pin(project)
    if ref is None:
        if pin is not None and pin.digest:
            return _with_digest(pin.reference, pin.digest), True
        if pin is not None:
            # Pinned offline by its tag alone: the image the tag names now is the one to read.
            return pin.reference, False
        if project.config.image:
            return project.config.image, False
        # With several upstreams a bare SPEC is refused: the hint names the form that works.
        names = project.upstream_names()
        spec = "REPO:TAG" if len(names) == 1 else "UPSTREAM=REPO:TAG"
        raise UsageError("no image to verify against: name one with --image REF",
                         hint=f"or pin one: `patchforge rebase --to {spec}` records it in "
                              "upstream.lock")
    return ref, False


def pinned_digest_of_tag(project: Project, ref: str | None) -> str | None:
    """The digest upstream.lock pins for the tag REF names, when REF is the pinned image by
    its tag; else None. Such a REF is read as the tag names it now (what a deployment that
    pulls the tag runs): read as the pin, it answered "ok" for an image the tag no longer
    named."""
    from patchforge.net.registry import parse_image_ref

    pin = project.lock.image
    if ref is None or pin is None or not pin.digest:
        return None
    wanted, pinned = parse_image_ref(ref), parse_image_ref(pin.reference)
    if wanted.digest is None and (pinned.registry, pinned.repository, pinned.tag or None) == \
            (wanted.registry, wanted.repository, wanted.tag):
        return pin.digest
    return None


def _with_digest(reference: str, digest: str) -> str:
    from patchforge.net.registry import parse_image_ref

    image = parse_image_ref(reference)
    return f"{image.registry}/{image.repository}@{digest}"


def default_registry(project: Project):
    from patchforge.net.http import HttpClient
    from patchforge.net.registry import RegistryClient
    from patchforge.store.gitstore import cache_dir

    return RegistryClient.from_env(HttpClient(cache_dir(), offline=project.offline))


def verify_image(project: Project, ref: str | None = None, *, profile: str | None = None,
                 registry=None, on_layer=None, reading=None) -> ImageCheck:
    """Check every overlay's pre-image inside the image REF names (see the module docstring).

    `registry` is a net.registry.RegistryClient (default: from the environment);
    `on_layer(digest)` is called before each layer is read (the CLI's progress); `reading`, a
    context manager held while the project's files (the manifest, the image pin) are read and
    let go before the registry is asked (the CLI's read lock).
    """
    import contextlib

    with reading if reading is not None else contextlib.nullcontext():
        by_target, profiles, overlaid, kept = _pre_images(project, profile)
        reference, pinned = image_reference(project, ref)
        tag_pin = pinned_digest_of_tag(project, ref)
        landed = LandedFixes.of(project, profile, by_target)
    return _verify_in_image(project, ref, reference, pinned, by_target, profiles,
                            profile=profile, registry=registry, on_layer=on_layer,
                            overlaid=overlaid, tag_pin=tag_pin, landed=landed, kept=kept)


def verify_landed_at_pin(project: Project, manifest: dict[str, Any], *,
                         profile: str | None = None
                         ) -> tuple[list[tuple[str, str, str]], list[str]]:
    """Plain `verify`'s rows for the fixes dropped as landed upstream (under upstreamed/) that
    the locked revision lacks (reverts.gone_upstream, as `status` judges them: upstream
    reverted one at the pin): no deployment of these overlays holds such a fix. Each file it
    changed that no overlay of a profile covers is the upstream's own file at the pin, which
    lacks it (a `mismatch` row naming the file in the image); each overlay of such a file is
    the pin's file with the other fixes, a `mismatch` unless its content holds the fix's
    change (another patch of the series makes it again). `manifest` is verify_overlays'.

    Returns (rows, notes) as verify_installed_landed does; nothing is read from the store
    (nor is it opened) when nothing is kept under upstreamed/, and an upstream whose locked
    revision the store lacks is a `NOT CHECKED` note naming `patchforge fetch`.
    """
    from patchforge.formats.patchfile import parse_patch_file
    from patchforge.overlay import fragment_profiles, sha256
    from patchforge.pins import of_configured_repository, open_store
    from patchforge.reverts import change_state, gone_upstream, kept_fixes

    kept = {upstream: dict(found) for upstream in project.upstream_names()
            if (found := kept_fixes(project, upstream))}
    if not kept:
        return [], []
    from patchforge.landings import unparsed_not_checked

    # One that does not parse is judged by nothing below (gone_upstream passes over it).
    unparsed = unparsed_not_checked(project)
    notes: list[str] = list(unparsed)
    gone = []
    pins = {upstream: project.lock.pin(upstream) for upstream in kept}
    try:
        with open_store(project) as store:
            for upstream, pin in pins.items():
                if not store.has_object(pin.commit):
                    notes.append(f"NOT CHECKED: whether {upstream} {pin.label} still holds the "
                                 f"fixes dropped as landed upstream (series/{upstream}/"
                                 f"{KEPT_LANDINGS}/): the locked revision is not in the cache; "
                                 f"`patchforge fetch {upstream}` brings it")
                    continue
                if not of_configured_repository(project, store, upstream, pin):
                    notes.append(f"NOT CHECKED: whether {upstream} {pin.label} still holds the "
                                 f"fixes dropped as landed upstream (series/{upstream}/"
                                 f"{KEPT_LANDINGS}/): upstream.lock records the pin from "
                                 "another repository than the configured one, and the cache "
                                 "does not know its commit as one of the configured one's; "
                                 f"`patchforge fetch {upstream}` checks it")
                    continue
                unread: list[tuple[str, str]] = []
                gone += gone_upstream(project, store, upstream, pin.commit, unread=unread)
                notes += [f"NOT CHECKED: whether {upstream} {pin.label} still holds "
                          f"{upstream}/{KEPT_LANDINGS}/{name}: its files at the locked "
                          f"revision could not be read ({' '.join(why.split())})"
                          + ("; without --offline the cache brings them" if project.offline
                             else "")
                          for name, why in unread]
    except PatchforgeError as exc:
        # (A cache that cannot be opened here, a deployment host's: the overlays' own rows
        # stand, and what was not checked is said.)
        return [], unparsed + [
            f"NOT CHECKED: whether the upstreams at the pin still hold the fixes dropped as "
            f"landed upstream ({', '.join(sorted(kept))}): the cache cannot be read ({exc})"]
    if not gone:
        return [], notes
    entries = manifest["overlays"]
    scope = [profile] if profile is not None else \
        fragment_profiles(project, {e.get("profile") for e in entries})
    overlay_of = {(e.get("profile"), e["upstream"], e["path"]): e for e in entries}
    rows: list[tuple[str, str, str]] = []
    uncovered: dict[tuple[str, str, str], list[str | None]] = {}
    for landing in gone:
        patch = parse_patch_file(kept[landing.upstream][landing.name], landing.path)
        install_root = project.config.upstream(landing.upstream).install_root
        for fp in patch.file_patches:
            for each in scope:
                if each is not None and patch.profiles and each not in patch.profiles:
                    continue
                entry = overlay_of.get((each, landing.upstream, fp.path))
                target = entry.get("target") if entry else None
                if entry is None:
                    target = (str(PurePosixPath(install_root) / fp.path) if install_root
                              else f"{landing.upstream}/{fp.path}")
                    uncovered.setdefault((target, landing.upstream, landing.name),
                                         []).append(each)
                    continue
                try:
                    content = (project.overlays_dir / entry["file"]).read_bytes()
                except OSError:
                    continue  # (that overlay's own row fails)
                if sha256(content) != entry["sha256"]:
                    continue
                state = change_state(fp, content)
                if state != "present":
                    rows.append((entry["file"], "mismatch",
                                 overlaid_lacks(target or f"{landing.upstream}/{fp.path}",
                                                landing, state)))
    said = {(g.upstream, g.name): g for g in gone}
    for (target, upstream, name), profiles in uncovered.items():
        shown = [p for p in profiles if p is not None]
        label = target + (f" [{', '.join(shown)}]" if shown and len(shown) < len(scope) else "")
        rows.append((label, "mismatch",
                     f"no overlay covers it, and the upstream's file at the pin "
                     f"{said[upstream, name].lacks}: "
                     + " ".join(said[upstream, name].message().split())))
    return rows, notes


def verify_installed_landed(project: Project, tree, manifest: dict[str, Any], *,
                            profile: str | None = None
                            ) -> tuple[list[tuple[str, str, str]], list[str]]:
    """`verify --installed DIR`'s rows for the fixes dropped as landed upstream: each file they
    changed that no overlay covers, judged in DIR as `verify --image` judges it in an image
    (no overlay carries these fixes, so the installed file itself must hold them). `tree`
    (installed.InstalledTree) and `manifest` are verify_overlays': DIR read as it reads it,
    an upstream without overlays where its install root is (a root file system) or at its
    paths (the install root).

    Returns (rows, notes): rows as verify_overlays gives them, with the fixes named in the
    detail; notes say what could not be checked (`NOT CHECKED: ...`).
    """
    from patchforge.layers import normalize

    installed = tree.dir
    entries = overlay_entries(manifest, profile, str(project.overlays_dir / "manifest.json"))
    by_target = {normalize(e["target"]): e for e in entries if e.get("target")}
    landed = LandedFixes.of(project, profile, by_target)
    notes = [f"NOT CHECKED: {why}" for why in landed.unread]
    if not landed.files and not landed.covered_changes:
        return [], notes
    try:
        expected = landed.expected(project)
    except PatchforgeError as exc:
        names = ", ".join(fix for _, _, fix in landed.fixes)
        notes.insert(0, f"NOT CHECKED: whether {installed} holds the fixes dropped as landed "
                        f"upstream ({names}): their files at the locked revision could not be "
                        f"read ({exc}); `patchforge fetch` brings them")
        return [], notes
    notes = [f"NOT CHECKED: {why}" for why in landed.unread]  # (with those `expected` added)
    # A fix upstream reverted at the pin, in a file an overlay covers: the overlay must hold it.
    rows = [(target, "mismatch", overlaid_lacks(target, gone, state)) for target, gone, state
            in landed.overlaid_lacking(_overlay_content(project, by_target))]
    if not landed.files:
        return rows, notes
    tree.extend(list(landed.files.values()))
    for key, entry in sorted(landed.files.items()):
        there = tree.read(entry)
        shown = tree.shown(entry)
        found = there.as_found_file(key, shown)
        if there.kind not in ("file", "absent"):
            # What the tree has there, said whole (a symlink leading out of it, a directory):
            # the row's detail is that sentence, then what was expected.
            found = replace(found, detail=there.detail or f"{shown} is "
                            + ("a directory" if there.kind == "directory"
                               else "not a regular file") + there.read_through())
        check = _judge_landed(key, entry, expected[key], found,
                              project.lock.pin(entry["upstream"]).commit, there.content,
                              holder=str(installed), gone=landed.gone, said_whole=True)
        rows.append((shown, check.state, check.detail))
    return rows, notes


def _overlay_content(project: Project, by_target: dict[str, dict[str, Any]]):
    """content_of for LandedFixes.overlaid_lacking: the bytes of the overlay file of a target
    key (the manifest's entry), None where it is not the one the manifest records (that
    overlay's own row fails)."""
    from patchforge.overlay import sha256

    def content_of(key: str) -> bytes | None:
        entry = by_target.get(key)
        if entry is None or not entry.get("file"):
            return None
        try:
            data = (project.overlays_dir / entry["file"]).read_bytes()
        except OSError:
            return None
        return data if sha256(data) == entry.get("sha256") else None

    return content_of


def _pre_images(project: Project, profile: str | None):
    """The manifest's pre-image of each path in the image (normalized), the profiles that
    mount an overlay there, every profile's overlay there (sha256 -> profile: an image
    baked with another profile's overlays holds one of them, no other upstream version), and
    the paths each fix of the series overlays ((upstream, patch name) -> paths)."""
    from patchforge.layers import normalize

    manifest_source = str(project.overlays_dir / "manifest.json")
    manifest = read_manifest(project.overlays_dir)
    entries = overlay_entries(manifest, profile, manifest_source)
    overlaid = profiles_overlays(manifest, lambda e: normalize(e["target"]) if e.get("target")
                                 else None)
    by_target: dict[str, dict[str, Any]] = {}
    profiles: dict[str, list[str]] = {}
    kept: dict[tuple[str, str], list[str]] = {}
    for entry in entries:
        if not entry.get("target"):
            raise ConfigError(f"upstream {entry['upstream']} has no install-root, so the "
                              "manifest does not say where its files live in the image",
                              path=str(project.config_path),
                              hint=f"set install-root in [tool.patchforge.upstreams."
                                   f"{entry['upstream']}] and run `patchforge overlays`")
        key = normalize(entry["target"])
        previous = by_target.get(key)
        if previous is not None and previous["base_sha256"] != entry["base_sha256"]:
            raise InputError(f"the manifest records two pre-images for {entry['target']}; "
                             "check one profile at a time with --profile", path=manifest_source)
        by_target[key] = entry
        if entry.get("profile"):
            profiles.setdefault(key, []).append(entry["profile"])
        for patch in entry.get("patches") or ():
            paths = kept.setdefault((entry["upstream"], patch["name"]), [])
            if key not in paths:
                paths.append(key)
    return by_target, profiles, overlaid, kept


def _verify_in_image(project: Project, ref: str | None, reference: str, pinned: bool,
                     by_target: dict[str, dict[str, Any]], profiles: dict[str, list[str]], *,
                     profile: str | None, registry, on_layer,
                     overlaid: dict[str, dict[str, str]],
                     tag_pin: str | None = None,
                     landed: LandedFixes | None = None,
                     kept: dict[tuple[str, str], list[str]] | None = None) -> ImageCheck:
    from patchforge.layers import ReadStats, find_in_layers, read_contents

    landed = landed if landed is not None else LandedFixes()
    registry = registry if registry is not None else default_registry(project)
    info = registry.resolve_image(reference)
    if not info.layers:
        raise UsageError(f"{reference}: the image has no layers to read")
    notes = []
    expected: dict[str, str | None] = {}
    unchecked = ""
    # The pinned image too: being the pin says nothing of its files (a wheel upstream is judged
    # on the wheel its label names; a ROCm build or a re-spun nightly of it may lack the fix).
    if landed.files or landed.covered_changes:
        try:
            expected = landed.expected(project)
        except PatchforgeError as exc:
            unchecked = str(exc)

    def open_layer(layer):
        if on_layer is not None:
            on_layer(layer.digest)
        return registry.open_blob(reference, layer)

    stats = ReadStats()
    found = find_in_layers(info.layers, open_layer, [*by_target, *expected], stats=stats)
    made_on_pin = is_the_pinned_image(project, info.digest, info.manifest_digest)
    same_revision = {} if made_on_pin else names_the_pin(project, info.labels)
    checks = [_judge(key, entry, found[key], tuple(profiles.get(key, ())),
                     overlaid.get(key, {}), made_on_pin=made_on_pin,
                     same_revision=same_revision.get(entry["upstream"]))
              for key, entry in sorted(by_target.items())]
    layers = {layer.digest: layer for layer in info.layers}
    # Another version of a landed fix's file: whether the fix's change is in it is in its
    # bytes, read again from its layer, each layer once for all its files.
    reread: dict[str, tuple[str, str]] = {}  # key -> (its layer, its path there)
    for key in sorted(expected):
        hit = found[key]
        if hit.kind == "file" and hit.sha256 != expected[key] and hit.layer is not None \
                and hit.layer in layers:
            reread[key] = (hit.layer, hit.resolved or key)
    contents: dict[tuple[str, str], bytes] = {}
    links_followed = stats.rereads
    for digest in dict.fromkeys(layer for layer, _ in reread.values()):
        paths = [path for layer, path in reread.values() if layer == digest]
        got = read_contents(layers[digest], open_layer, paths, stats=stats)
        contents.update(((digest, path), data) for path, data in got.items())
    for key in sorted(expected):
        hit = found[key]
        content = contents.get(reread[key]) if key in reread else None
        checks.append(_judge_landed(key, landed.files[key], expected[key], hit,
                                    project.lock.pin(landed.files[key]["upstream"]).commit,
                                    content, gone=landed.gone))
    # A fix upstream reverted at the pin, in a file an overlay covers: the overlay must hold it.
    for target, gone, state in landed.overlaid_lacking(_overlay_content(project, by_target)):
        key, fix = target.lstrip("/"), f"{gone.upstream}/{gone.name}"
        entry = by_target[key]
        checks.append(ImageFileCheck(
            target=target, upstream=entry["upstream"], path=entry["path"],
            profiles=tuple(profiles.get(key, ())), state="mismatch",
            expected_sha256=entry["base_sha256"], found_sha256=found[key].sha256,
            layer=found[key].layer, detail=overlaid_lacks(target, gone, state),
            landed=(f"{gone.upstream}/{KEPT_LANDINGS}/{gone.name}",), taken_out=(fix,)))
    fixes = _fixes(kept or {}, checks, landed, read=bool(expected))
    names = ", ".join(fix for _, _, fix in landed.fixes)
    if unchecked:
        notes.append(f"NOT CHECKED: whether this image holds the fixes dropped as landed "
                     f"upstream ({names}): their files at the locked revision could not be read "
                     f"({unchecked}); `patchforge fetch` brings them, or verify the image "
                     "upstream.lock pins")
    notes += [f"NOT CHECKED: {why}" for why in landed.unread]
    if ref is not None and pinned:
        notes.append(f"{ref} is pinned in upstream.lock: read {info.registry}/"
                     f"{info.repository}@{info.digest}")
    tag_moved = tag_pin if tag_pin not in (None, info.digest, info.manifest_digest) else None
    if tag_moved:
        notes.append(f"{ref} now names {info.digest}, not the {tag_moved} upstream.lock pins: "
                     "the overlays were made for the pinned image, and a deployment that pulls "
                     "the tag runs this one")
    elif tag_pin:
        notes.append(f"{ref} names the image upstream.lock pins ({info.digest})")
    return ImageCheck(reference=ref or reference,
                      resolved=f"{info.registry}/{info.repository}@{info.digest}",
                      digest=info.digest, manifest_digest=info.manifest_digest, pinned=pinned,
                      files=tuple(checks), layers_total=stats.layers_total,
                      layers_read=stats.layers_read, bytes_read=stats.bytes_read,
                      layers_reread=links_followed,
                      layers_reread_landed=stats.rereads - links_followed,
                      profile=profile, notes=tuple(notes), tag_moved=tag_moved,
                      fixes=tuple(fixes))


def _judge_landed(key: str, entry: dict[str, Any], expected: str | None, found,
                  commit: str, content: bytes | None = None, *,
                  holder: str = "the image", gone: dict[str, Any] | None = None,
                  said_whole: bool = False) -> ImageFileCheck:
    """A file no overlay covers that fixes dropped as landed changed: the image (`holder`:
    or an installed tree) must hold the upstream's file at the locked revision `commit` (where
    they were judged landed), or lack it where the upstream does, or, another version of it
    (`content`), hold their change as the rule for a landing kept under upstreamed/ tells it
    (reverts.change_state). `gone` (LandedFixes.gone): the fixes the locked revision itself
    lacks (reverted upstream); the upstream's file there is no proof of them. `said_whole`:
    the detail of what is there when it is no file is a sentence of its own (an installed
    tree's), not what the holder "has" (an image's: "a symlink to ...")."""
    from patchforge.reverts import change_state

    fixes = ", ".join(entry["landed"])
    at = f"the upstream's at the pin ({commit[:12]})"
    taken_out = [(gone or {})[fix] for fix in entry["landed"] if fix in (gone or {})]

    def check(state: str, detail: str) -> ImageFileCheck:
        if found.resolved is not None and found.kind == "file":
            detail += f" (read at {found.detail})"
        return ImageFileCheck(target=entry["target"], upstream=entry["upstream"],
                              path=entry["path"], profiles=(), state=state,
                              expected_sha256=expected, found_sha256=found.sha256,
                              layer=found.layer, detail=detail,
                              landed=tuple(entry["landed"]),
                              taken_out=tuple(f"{g.upstream}/{g.name}" for g in taken_out))

    if taken_out and (found.kind == "file" and found.sha256 == expected
                      or found.kind == "absent" and expected is None):
        # The pin's own file: status says upstream took the fix out there (a revert).
        lacks = f"may lack the fix (not judged): so may {holder}" if all(
            g.kind == "base-unserved" for g in taken_out) else \
            f"lacks the fix: {holder} lacks it"
        return check("mismatch", f"{at}, which {lacks}, and nothing overlays it; "
                     + "; ".join(g.message() for g in taken_out))
    if found.kind == "file" and found.sha256 == expected:
        return check("ok", f"{at}, with {fixes}, landed there")
    if found.kind == "absent":
        if expected is None:
            return check("ok", f"absent, as upstream has it at the pin ({fixes} landed there)")
        return check("missing", f"not in {holder}; {fixes} landed upstream in this file"
                     + (f" ({found.detail})" if found.detail else ""))
    if expected is None:
        return check("mismatch", f"upstream has no such file at the pin ({commit[:12]}), "
                                 f"where {fixes} landed: {holder} is of another upstream")
    if found.kind != "file":
        if said_whole and found.detail:
            return check("mismatch", f"{found.detail}; not {at}, where {fixes} landed")
        return check("mismatch", f"{holder} has {found.detail or found.kind} here, not "
                                 f"{at}, where {fixes} landed")
    states = {change_state(fp, content) for fp in entry["changes"]} if content is not None \
        else set()
    if states == {"present"}:
        return check("ok", f"another version than {at}, with the change of {fixes} in it")
    if "gone" in states:
        return check("mismatch", f"another version than {at}, with the code {fixes} changed "
                                 f"as it was before: {holder} lacks the fix, and nothing "
                                 "overlays it")
    return check("mismatch", f"not {at}, where {fixes} landed: whether {holder} holds "
                             "the fix cannot be told from this file, and nothing overlays it")


def _fixes(kept: dict[tuple[str, str], list[str]], checks: list[ImageFileCheck],
           landed: LandedFixes, *, read: bool) -> list[dict[str, Any]]:
    """Each fix against the image, from its files' rows (see ImageCheck.fixes)."""
    state_of: dict[str, str] = {}
    for c in checks:  # a file's first row: its overlay's, or a landed fix's
        state_of.setdefault(c.target.lstrip("/"), c.state)
    # The fixes upstream reverted at the pin that a file lacks (an overlay's: its later row).
    lacking = {fix for c in checks if c.state != "ok" for fix in c.taken_out}
    fixes = [{"upstream": upstream, "name": name, "where": "series",
              "targets": ["/" + k for k in keys],
              "state": "ok" if all(state_of.get(k) == "ok" for k in keys) else "failed"}
             for (upstream, name), keys in sorted(kept.items())]
    for upstream, name, fix in landed.fixes:
        keys = [k for k, e in landed.files.items() if fix in e["landed"]]
        covered = [t.lstrip("/") for t in landed.covered.get(fix, [])]
        if not read and keys:
            state = "unchecked"
        else:
            state = "ok" if all(state_of.get(k) == "ok" for k in keys + covered) \
                and f"{upstream}/{name}" not in lacking else "failed"
        fixes.append({"upstream": upstream, "name": name, "where": "upstreamed", "state": state,
                      "targets": ["/" + k for k in keys + covered]})
    return fixes


def is_the_pinned_image(project: Project, *digests: str | None) -> bool:
    """Whether an image read by one of `digests` (its own, its manifest's) is the one
    upstream.lock pins by digest: the image the overlays were made for, whatever REF named it."""
    pin = project.lock.image
    return pin is not None and bool(pin.digest) and pin.digest in digests


def _judge(key: str, entry: dict[str, Any], found, profiles: tuple[str, ...],
           overlaid: dict[str, str], *, made_on_pin: bool = False,
           same_revision: str | None = None) -> ImageFileCheck:
    """`found` (what the image has at `key`) against `entry`; `overlaid`: every profile's
    overlay of the file (sha256 -> profile); `made_on_pin`: the image is the one upstream.lock
    pins, so a file other than the pre-image is the image's own change, not a newer upstream;
    `same_revision`: how another image's labels name the revision the upstream is pinned at
    (names_the_pin), the same for its files."""
    expected = entry["base_sha256"]

    def check(state: str, detail: str, overlay_of: str | None = None) -> ImageFileCheck:
        if found.resolved is not None and found.kind == "file":
            # Symlinks led the container to another path: say which file was judged.
            detail += f" (read at {found.detail})"
        return ImageFileCheck(target="/" + key, upstream=entry["upstream"], path=entry["path"],
                              profiles=profiles, state=state, expected_sha256=expected,
                              found_sha256=found.sha256, layer=found.layer, detail=detail,
                              overlay_of=overlay_of,
                              same_revision=same_revision is not None and state != "ok")

    if found.kind == "file" and entry.get("sha256") and found.sha256 == entry["sha256"]:
        return check("ok", "already holds this overlay (baked in)")
    holds = overlaid.get(found.sha256 or "") if found.kind == "file" else None
    if holds is not None and holds != entry.get("profile"):
        # Baked for another profile: "not the pre-image" sent the user to rebase.
        return check("mismatch", other_profiles_overlay(holds, entry, what="the image's file",
                                                        how="baked in"), holds)
    if expected is None:
        if found.kind == "absent":
            return check("ok", "absent, as expected: the overlay creates this file")
        return check("mismatch", "the overlay creates this file, but the image has it")
    if found.kind == "absent":
        return check("missing", "not in the image" + (f" ({found.detail})" if found.detail
                                                       else ""))
    if found.kind != "file":
        return check("mismatch", f"the image has {found.detail or found.kind} here, not a file")
    if found.sha256 != expected and made_on_pin:
        # (Its label names the pinned revision; its file is another: a re-spin, or a build
        # carrying a change of its own.)
        return check("mismatch", "the image's file is not the pre-image this overlay was made "
                                 "for (the pinned image is not the upstream's file at the "
                                 "pinned revision: the image changed it)")
    if found.sha256 != expected and same_revision is not None:
        return check("mismatch", "the image's file is not the pre-image this overlay was made "
                                 f"for (the image's labels name the pinned revision, "
                                 f"{same_revision}, and its file is another there: the image "
                                 "changed it)")
    if found.sha256 != expected:
        return check("mismatch", "the image's file is not the pre-image this overlay was made "
                                 "for (the upstream moved under the overlay)")
    return check("ok", "pre-image matches")


def names_the_pin(project: Project, labels: dict[str, str] | None) -> dict[str, str]:
    """The upstreams whose pinned revision an image's labels name, each with how they name
    it (`up 1b0171feeec5`): a git upstream's commit (by the labels `rebase --to` reads it
    from), a wheel's version. Such an image holding another file than the pin's is a re-spin,
    or a build with changes of its own: moving the series to it would make the same overlays
    again."""
    from patchforge.targets import DEFAULT_VERSION_LABELS, label_keys_for

    labels = labels or {}
    out: dict[str, str] = {}
    for name in project.upstream_names():
        pin = project.lock.upstreams.get(name)
        if pin is None:
            continue
        if pin.kind == "git":
            config = project.config.upstream(name)
            for key in label_keys_for(name, config.image_label):
                value = (labels.get(key) or "").strip().lower()
                if len(value) >= 7 and all(c in "0123456789abcdef" for c in value) \
                        and pin.commit.startswith(value):
                    out[name] = f"{name} {pin.commit[:12]}"
                    break
        elif pin.kind == "wheel" and pin.version:
            for key in (f"{name}.version", *DEFAULT_VERSION_LABELS):
                if (labels.get(key) or "").strip() == pin.version:
                    out[name] = f"{name} {pin.version}"
                    break
    return out
