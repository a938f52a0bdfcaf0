"""Naming a target: SPEC parsing (`vllm=SPEC aiter=SPEC`), classification and resolution.

A SPEC is a commit-ish (sha, tag, branch), a nightly image tag `nightly-<40 hex>`, a PEP 440
version (with a `+g<hex>` local part naming the commit, or plain for a wheel upstream), or an
image reference `repo:tag` / `repo@sha256:...` resolved through the registry to its labels.

This module does not import the store: `resolve_target` takes a `StoreResolver` (what the store
can do with a commit-ish or a wheel version) and a registry client from its caller, so it can be
tested alone. Every attempt is recorded; a failure lists them all, each with its reason.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from enum import Enum
from typing import Any, Protocol, TypeVar

from patchforge.errors import (PatchforgeError, RemoteUnreachable, ResolutionError, SourceUnusable,
                               StoreDamaged, UsageError)
from patchforge.model.record import field, record
from patchforge.patterns import on_first_use

_NIGHTLY_RE = re.compile(r"^nightly-([0-9a-f]{40})$")
_SHA_RE = re.compile(r"^[0-9a-f]{7,40}$")
_LOCAL_COMMIT_RE = on_first_use(r"^g([0-9a-f]{7,40})$")
# A release of digits and dots (`0.33.0`, `v1.2`), the usual SPEC, which PEP 440 accepts as it
# is: classified without packaging, whose import (its version pattern compiled) a rebase paid
# for this one answer.
_RELEASE_RE = re.compile(r"v?[0-9]+(?:\.[0-9]+)*")
# What `NAME=` before a SPEC may be: an upstream name (`--to vllm=0.33.0`); bump reads it too.
UPSTREAM_NAME_RE = on_first_use(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
# What git refuses in a ref name (git-check-ref-format), plus a leading "-", which would make
# the SPEC an option of the git command it is passed to.
_BAD_REF_RE = on_first_use(r"(^-)|(\.\.)|([\x00-\x20\x7f~^:?*\[\\])|(@\{)|(/\.)|(^\.)|(\.lock$)|(/$)")
# git's ancestry suffixes after a commit-ish: `abc123^`, `v1.0~3`, `main^2~1`.
_ANCESTRY_RE = re.compile(r"(?:[~^][0-9]*)+$")
# A version an image label names goes into upstream.lock, which refuses a control character
# (a newline would forge a line of status's output, an escape sequence drive the terminal):
# such a label names no version, rather than a lock no command could read again.
_VERSION_LABEL_RE = on_first_use(r"^[^\s\x00-\x1f\x7f-\x9f]+$")

DEFAULT_VERSION_LABELS = ("org.opencontainers.image.version",)


class SpecKind(str, Enum):
    """What a SPEC names (lowercase member names: `kind.name` is what JSON output shows)."""

    commit = "commit"  # a full or abbreviated sha
    nightly = "nightly"  # nightly-<40 hex>: an image tag that names its commit
    version = "version"  # PEP 440; with a +g<hex> local part it also names a commit
    image = "image"  # repo:tag, host:port/repo:tag, repo@sha256:<64 hex>
    ref = "ref"  # a branch or tag name


class StoreResolver(Protocol):
    """What the caller's store can do; both raise a PatchforgeError when they cannot."""

    def resolve_commitish(self, upstream: str, spec: str) -> str:
        """A commit-ish (sha prefix, tag, branch) -> 40-hex commit, fetching it if need be."""

    def import_version(self, upstream: str, version: str) -> tuple[str, str]:
        """A wheel version -> (commit, tree) of its deterministic import."""

    # Optional: known_tag(upstream, name) -> the commit of a tag already in the store, or
    # None, without contacting anything (which spelling of a version to try first);
    # ancestor(upstream, commit, "^~2") -> the commit git's ancestry suffixes name from `commit`.


class ImageResolver(Protocol):
    def resolve_image(self, ref: str) -> Any: ...


@record(frozen=True)
class ResolvedTarget:
    """One SPEC resolved for one upstream. `commit` (and `tree` for imports) is what patches are
    based on; `commit_hint` is the upstream's own history commit the SPEC names, where known."""

    upstream: str
    spec: str
    kind: SpecKind
    commit_hint: str | None
    version: str | None
    label: str
    image: Any | None  # net.registry.ImageInfo
    attempts: list[str] = field(default_factory=list)
    commit: str | None = None
    tree: str | None = None


def _unknown_upstream(name: str, arg: str, upstream_names) -> UsageError:
    """The refusal of `NAME=SPEC` naming no configured upstream: a name close to one (`vlm`)
    is a typo, said with the SPEC as meant; else the SPEC may be a ref holding `=`."""
    import difflib

    known = ", ".join(sorted(upstream_names)) or "none configured"
    close = difflib.get_close_matches(name, sorted(upstream_names), n=1, cutoff=0.6)
    rest = arg.strip().partition("=")[2].strip()
    hint = (f"did you mean {close[0]}={rest}?" if close else
            "a ref whose name holds `=` is given after its upstream's name "
            f"(UPSTREAM={arg.strip()})")
    return UsageError(f"unknown upstream {name!r} in {arg!r} (known: {known})", hint=hint)


def own_spec(spec: str, name: str, upstream_names, *, refusal: str, again: str) -> str:
    """A SPEC given for the one upstream `name` (`upstream pin|add --at`, `bump --to`), read
    as parse_target_specs reads `rebase --to`'s: surrounding whitespace is no part of it, and
    `NAME=SPEC` is upstream NAME's SPEC: `name`'s own is taken, another configured upstream's
    is refused (`refusal` says what the command does, `again` is the command meant, both
    formatted with `name`, `spec` (as given), `other` and `rest`), and an unknown name is
    refused naming the configured ones (`name` among them), as `rebase --to` refuses it."""
    spec = spec.strip()
    prefix, sep, rest = spec.partition("=")
    if sep and UPSTREAM_NAME_RE.match(prefix):
        rest = rest.strip()
        if prefix == name:
            if not rest:
                raise UsageError(f"empty SPEC for upstream {name!r}")
            return rest
        if prefix in upstream_names:
            fields = {"name": name, "spec": spec, "other": prefix, "rest": rest}
            raise UsageError(refusal.format(**fields), hint=again.format(**fields))
        raise _unknown_upstream(prefix, spec, {*upstream_names, name})
    if not spec:
        raise UsageError("empty SPEC")
    return spec


def parse_target_specs(args: tuple[str, ...], upstream_names: list[str]) -> dict[str, str]:
    """`("vllm=SPEC", "aiter=SPEC")` or one bare `("SPEC",)` for a single upstream -> {name: SPEC}."""
    specs: dict[str, str] = {}
    bare: list[str] = []
    for arg in args:
        name, sep, value = arg.partition("=")
        # `'vllm = 0.33.0'` (spaces around `=`, as in a TOML line) names vllm as well: read
        # as a bare SPEC, it was told to be named `vllm=vllm = 0.33.0`.
        name = name.strip()
        if sep and not name and upstream_names:
            # `=0.33.0`: the upstream's name left out; the message named `vllm==0.33.0`,
            # itself refused. With one upstream too: read as a bare SPEC `=main`, it was
            # said as `cannot resolve up==main`.
            raise UsageError(f"{arg.strip()!r} names no upstream before its `=`: " +
                             " or ".join(f"{n}={value.strip() or 'SPEC'}"
                                         for n in sorted(upstream_names)),
                             hint="an upstream not named stays at its pin")
        if sep and UPSTREAM_NAME_RE.match(name):
            if name not in upstream_names:
                raise _unknown_upstream(name, arg, upstream_names)
            if not value.strip():
                raise UsageError(f"empty SPEC for upstream {name!r}")
            if value.startswith("="):
                # pip's `vllm==0.33.0`: the SPEC would be `=0.33.0`, which names nothing.
                raise UsageError(f"{arg.strip()!r}: an upstream is named with one `=`, not "
                                 f"pip's `==`: {name}={value.lstrip('= ') or 'SPEC'}")
            if name in specs:
                raise UsageError(f"upstream {name!r} is named twice")
            specs[name] = value.strip()
        else:
            bare.append(arg.strip())
    if bare:
        at = next((i for i, arg in enumerate(args) if arg.strip() in upstream_names), None)
        if at is not None and at + 1 < len(args) and "=" not in args[at + 1]:
            # `--to vllm 0.33.0`: the upstream and its SPEC as two words, which read as two
            # bare SPECs (and `vllm=vllm` was the form suggested for the first).
            name, spec = args[at].strip(), args[at + 1].strip()
            raise UsageError(f"{name!r} is an upstream's name and {spec!r} a SPEC of its own: "
                             f"an upstream is named with `=`, in one word: {name}={spec}",
                             hint=f"`{name}={spec}`")
        if len(upstream_names) == 1 and (len(bare) > 1 or specs):
            given = ", ".join(repr(arg) for arg in args)
            raise UsageError(f"{len(args)} SPECs for the one upstream {upstream_names[0]!r}: "
                             f"{given}", hint="give one SPEC")
        if len(bare) > 1 or specs or len(upstream_names) != 1:
            # Each SPEC names its upstream; one not named stays at its pin, so "name each"
            # (every upstream) said more than is needed.
            spec = bare[0] or "SPEC"
            named, colon, rest = spec.partition(":")
            if colon and rest and named in upstream_names:
                # `vllm:0.33.0`: the upstream named with a colon (as an image is tagged), not
                # with `=`; suggesting `aiter=vllm:0.33.0` too read as if that were meant.
                raise UsageError(f"a bare SPEC ({bare[0]!r}) is only allowed with exactly one "
                                 f"upstream; an upstream is named with `=`: {named}={rest}",
                                 hint=f"`{named}={rest}` (or `{named}={spec}` if {spec} is an "
                                      "image's name and tag)")
            if spec in upstream_names:
                # `--against vllm`: the upstream named, its SPEC left out; `aiter=vllm or
                # vllm=vllm` was the form suggested.
                raise UsageError(f"{spec!r} is an upstream's name, with no SPEC: name the "
                                 f"revision to judge or move it against with `=`: {spec}=SPEC",
                                 hint=f"`{spec}=SPEC`, SPEC a version, tag, commit, "
                                      "`nightly-<sha>` or image (an upstream not named stays "
                                      "at its pin)")
            names = " or ".join(f"{n}={spec}" for n in sorted(upstream_names)) or \
                f"NAME={spec}"
            raise UsageError(f"a bare SPEC ({bare[0]!r}) is only allowed with exactly one "
                             f"upstream; name its upstream: {names} (an upstream not named "
                             "stays at its pin)")
        if not bare[0]:
            raise UsageError("empty SPEC")
        specs[upstream_names[0]] = bare[0]
    return specs


def split_ancestry(spec: str) -> tuple[str, str]:
    """`abc123^` -> ("abc123", "^"); `v1.0~2` -> ("v1.0", "~2"); no suffix -> (spec, "")."""
    match = _ANCESTRY_RE.search(spec)
    if match is None or match.start() == 0:
        return spec, ""
    return spec[:match.start()], match.group(0)


def classify_spec(spec: str) -> SpecKind:
    """Say what `spec` names; refuses what can be none of them (e.g. a leading "-").

    A commit-ish with git's ancestry suffixes (`<sha>^`, `v1.0~2`) is what its name before the
    suffix is: a commit, a ref or a release version (its tag)."""
    spec = spec.strip()
    if not spec:
        raise UsageError("empty SPEC")
    stem, suffix = split_ancestry(spec)
    if suffix:
        kind = classify_spec(stem)
        if kind in (SpecKind.commit, SpecKind.ref, SpecKind.version) and \
                (kind is not SpecKind.version or commit_from_version(stem) is None):
            return kind
        raise UsageError(f"not a valid SPEC: {spec!r} ({suffix} follows a commit, tag or "
                         "branch only)",
                         hint="name a commit, tag, branch, version, nightly-<sha> or image")
    if _NIGHTLY_RE.match(spec):
        return SpecKind.nightly
    if _SHA_RE.match(spec):
        return SpecKind.commit
    if ":" in spec:
        # A git ref name cannot hold ":", so this is an image reference or nothing (a digest,
        # `@sha256:...`, has one too; a branch may hold "@": `fix@2`).
        from patchforge.net.registry import DOCKER_HUB, parse_image_ref  # light: no requests
        ref = parse_image_ref(spec)
        if ref.registry == DOCKER_HUB and "/" not in spec.partition("@")[0]:
            # One name and a tag (`main:foo`) would be Docker Hub's official `library/` image,
            # which no one but Docker publishes, so never an upstream's build: most likely a
            # typo of a ref. Said now, instead of asking the registry (and retrying) first.
            raise UsageError(f"not a valid SPEC: {spec!r} is no branch, tag or commit (they "
                             f"cannot hold ':'), and as an image reference it would be Docker "
                             f"Hub's official image {ref.repository}, which is no upstream's "
                             "build",
                             hint="name an image with its repository (OWNER/REPO:TAG or "
                                  "REGISTRY/REPO:TAG), or check the branch, tag or commit")
        return SpecKind.image
    if _RELEASE_RE.fullmatch(spec):
        return SpecKind.version
    if spec[0].isdigit() or (spec[0] == "v" and spec[1:2].isdigit()):
        from packaging.version import Version

        try:
            Version(spec)
            return SpecKind.version
        except ValueError:  # InvalidVersion, or a number longer than int() takes
            pass
    if _BAD_REF_RE.search(spec):
        raise UsageError(f"not a valid SPEC: {spec!r}",
                         hint="name a commit, tag, branch, version, nightly-<sha> or image")
    return SpecKind.ref


def commit_from_version(spec: str) -> str | None:
    """`0.26.1rc1.dev229+g124154a88.rocm723` -> `124154a88` (the `+g<hex>` local part)."""
    if _RELEASE_RE.fullmatch(spec):
        return None  # a release has no local part
    from packaging.version import Version

    try:
        local = Version(spec).local
    except ValueError:  # InvalidVersion, or a number longer than int() takes
        return None
    for part in (local or "").split("."):
        match = _LOCAL_COMMIT_RE.match(part)
        if match:
            return match.group(1)
    return None


def version_from_spec(spec: str) -> str | None:
    """The version a SPEC names (a leading "v" dropped), or None when it names no version: an
    ancestor of a release (`v2~1`) is not that release (its version was recorded as `2~1`)."""
    spec = spec.strip()
    try:
        if classify_spec(spec) is not SpecKind.version or split_ancestry(spec)[1]:
            return None
    except UsageError:
        return None
    return spec[1:] if spec.startswith("v") else spec


def _field(config: Any, name: str) -> Any:
    if isinstance(config, dict):
        return config.get(name)
    return getattr(config, name, None)


def label_keys_for(upstream: str, configured: str | None,
                   extra: Sequence[str] = ()) -> list[str]:
    """Image-config labels naming `upstream`'s commit, in the order they are trusted.

    A configured `image-label` is the only one used: an image carrying several upstreams
    (vLLM with AITER inside) has one `org.opencontainers.image.revision`, for one of them.
    """
    if configured:
        return [configured]
    return list(dict.fromkeys([*extra, f"{upstream}.commit", "org.opencontainers.image.revision"]))


_T = TypeVar("_T")


class _Resolution:
    """The attempts made for one SPEC, in order, each with its outcome."""

    def __init__(self, upstream: str, store: StoreResolver) -> None:
        self.upstream = upstream
        self.store = store
        self.attempts: list[str] = []
        self.hints: list[str] = []  # the advice of the errors met on the way, in order
        self.unreachable = False  # a remote could not be asked (errors.RemoteUnreachable)
        self.gave_up = False  # a service gave no answer after the retries (exit 75)
        self.label_key: str | None = None  # the image label `label` last took a value from

    def _asked(self, attempt: str, ask: Callable[..., _T], *args: Any) -> _T | None:
        """What `ask(self.upstream, *args)` answers; None when it cannot, its error said as
        `attempt`. A damaged or unwritable cache says nothing of the SPEC (said as an attempt,
        it ended in "check the name"), nor does a source nothing can be fetched from: their
        errors are raised."""
        try:
            return ask(self.upstream, *args)
        except (StoreDamaged, SourceUnusable):
            raise
        except PatchforgeError as exc:
            self.attempts.append(f"{attempt}: {exc.message}")
            if isinstance(exc, RemoteUnreachable) or exc.gave_up:
                # The remote, not the name, failed: its advice (--offline, run again later) is
                # the way on, and "check the name" would send the user after a name that is
                # right.
                self.unreachable = True
                self.gave_up = self.gave_up or exc.gave_up
                if exc.hint:
                    self.hints.append(exc.hint)
            return None

    def commitish(self, what: str, value: str) -> str | None:
        commit = self._asked(f"{what} {value}", self.store.resolve_commitish, value)
        if commit is not None:
            self.attempts.append(f"{what} {value}: found commit {commit}")
        return commit

    def ancestor(self, commit: str, ancestry: str) -> str | None:
        """`commit` followed by git's `^`/`~` suffixes, walked in the store's history."""
        walk = getattr(self.store, "ancestor", None)
        if walk is None:
            self.attempts.append(f"{commit}{ancestry}: no history to walk")
            return None
        found = self._asked(f"{commit}{ancestry}", walk, commit, ancestry)
        if found is not None:
            self.attempts.append(f"{commit}{ancestry}: found commit {found}")
        return found

    def known_tag(self, value: str) -> bool:
        """Whether the store already has tag `value` (from an earlier fetch), asked of nobody
        else: which of a version's spellings to try first."""
        known = getattr(self.store, "known_tag", None)
        return known is not None and known(self.upstream, value) is not None

    def wheel(self, version: str) -> tuple[str, str] | None:
        imported = self._asked(f"version {version}", self.store.import_version, version)
        if imported is not None:
            self.attempts.append(f"version {version}: imported as commit {imported[0]}")
        return imported

    def image(self, registry: ImageResolver | None, ref: str, what: str) -> Any | None:
        if registry is None:
            self.attempts.append(f"{what} {ref}: no registry client (offline, or none configured)")
            return None
        try:
            info = registry.resolve_image(ref)
        except PatchforgeError as exc:
            self.attempts.append(f"{what} {ref}: {exc.message}")
            if exc.hint:
                self.hints.append(exc.hint)
            if exc.gave_up:  # the registry, not the name: no "check the name", exit 75
                self.unreachable = self.gave_up = True
            return None
        self.attempts.append(f"{what} {ref}: digest {info.digest}")
        return info

    def label(self, info: Any, keys: Sequence[str], pattern: re.Pattern[str],
              what: str = "a commit") -> str | None:
        """The first of `keys` whose value is `what`; `self.label_key` says which it was."""
        for key in keys:
            value = (info.labels or {}).get(key)
            if value is None:
                continue
            value = value.strip()
            if what == "a commit":
                # Hex is hex in either case: an upper-case commit label still names a commit,
                # and read as none it would leave the nightly's image unchecked.
                value = value.lower()
            if pattern.match(value):
                self.label_key = key
                return value
            self.attempts.append(f"label {key}={value!r}: not {what}")
        return None


def resolve_target(spec: str, upstream_config: Any, *, store_resolver: StoreResolver,
                   registry: ImageResolver | None = None, label_keys: Sequence[str] = (),
                   image_repository: str | None = None) -> ResolvedTarget:
    """Resolve one SPEC for one upstream (an UpstreamConfig: `name`, `kind`, `image_label`).

    `image_repository` (e.g. `vllm/vllm-openai-rocm`) is where `nightly-<sha>` tags live; when
    given, the nightly's image is resolved too (its digest pinned, its labels cross-checked).
    """
    spec = spec.strip()
    name = str(_field(upstream_config, "name"))
    up_kind = _field(upstream_config, "kind") or "git"
    kind = classify_spec(spec)
    full_spec, (spec, ancestry) = spec, split_ancestry(spec)
    if ancestry and up_kind == "wheel":
        raise ResolutionError(f"cannot resolve {name}={full_spec}: a wheel upstream's imports "
                              f"have no parents for {ancestry!r} to walk", [])
    keys = label_keys_for(name, _field(upstream_config, "image_label"), label_keys)
    version_keys = [f"{name}.version", *DEFAULT_VERSION_LABELS]
    res = _Resolution(name, store_resolver)
    commit: str | None = None
    tree: str | None = None
    hint: str | None = None
    version: str | None = None
    image = None
    label = spec

    if kind is SpecKind.nightly:
        nightly = _NIGHTLY_RE.match(spec)
        assert nightly is not None, "a nightly SPEC is one that matches"
        hint = nightly.group(1)
        if image_repository:
            image = res.image(registry, f"{image_repository}:{spec}", "tag")
            if image is not None:
                said = res.label(image, keys, _SHA_RE)
                if said and not hint.startswith(said) and not said.startswith(hint):
                    res.attempts.append(f"tag {spec}: its image labels name commit {said}, "
                                        f"not {hint}; not pinning that image")
                    image = None
                else:
                    version = res.label(image, version_keys, _VERSION_LABEL_RE, "a version")
    elif kind is SpecKind.image:
        image = res.image(registry, spec, "image")
        if image is not None:
            hint = res.label(image, keys, _SHA_RE)
            version = res.label(image, version_keys, _VERSION_LABEL_RE, "a version")
            if hint is None:
                res.attempts.append(f"image {spec}: none of the labels {', '.join(keys)} "
                                    f"names a commit")
            label = image.tag or image.digest
    elif kind is SpecKind.version:
        version = spec[1:] if spec.startswith("v") else spec
        hint = commit_from_version(spec)
    elif kind is SpecKind.commit:
        hint = spec

    if up_kind == "wheel" and kind in (SpecKind.version, SpecKind.nightly, SpecKind.image):
        if version:
            imported = res.wheel(version)
            if imported:
                commit, tree = imported
            elif kind is not SpecKind.version and res.label_key != f"{name}.version" \
                    and not res.unreachable:
                # The image's own version (vLLM's, in a vLLM image with AITER inside) was
                # taken for want of a label naming this upstream's: said as that, not as a
                # version of this upstream that "check the name" would send one after.
                res.hints.append(f"{version} is the image's {res.label_key} label, taken as "
                                 f"{name}'s version since the image has no {name}.version "
                                 "label: in an image carrying several upstreams it is the "
                                 "version of the one the image is built for; name "
                                 f"{name}'s own version (`{name}=VERSION`), or label the "
                                 f"image {name}.version")
        else:
            res.attempts.append(f"{kind.name} {spec}: upstream {name} is a wheel and this names "
                                f"no version (labels tried: {', '.join(version_keys)})")
    elif kind is SpecKind.version and hint is None:
        # A release version of a git upstream: its tag, with or without the customary "v". A
        # tag fetched before is asked first (asking the remote about "0.33.0" first, when the
        # tag is "v0.33.0", cost a failed fetch on every status and rebase); the store checks
        # it against the remote itself (a re-spun release moves its tag).
        assert version is not None, "set from the SPEC above"
        candidates = list(dict.fromkeys([spec, f"v{version}", version]))
        known = [c for c in candidates if res.known_tag(c)]
        for candidate in dict.fromkeys(known + candidates):
            commit = res.commitish("tag", candidate)
            if commit or res.unreachable:
                # A remote that could not be asked is down, not without the tag: asking it
                # of the next spelling waited out git's low-speed timeout (two minutes) again.
                break
    elif hint is not None:
        commit = res.commitish("commit", hint)
    elif kind is SpecKind.ref:
        commit = res.commitish("ref", spec)

    if commit is not None and ancestry:
        commit = res.ancestor(commit, ancestry)
        version, label = None, full_spec  # an ancestor of a release is not that release
    if commit is None:
        offline = bool(getattr(getattr(registry, "http", None), "offline", False)
                       or getattr(getattr(store_resolver, "project", None), "offline", False))
        unresolved = ResolutionError(f"cannot resolve {name}={full_spec} ({kind.name})",
                                     res.attempts,
                                     hint=_resolution_hint(spec, kind, up_kind, offline,
                                                           res.hints,
                                                           unreachable=res.unreachable))
        unresolved.gave_up = res.gave_up
        raise unresolved
    if kind is SpecKind.commit:
        hint = commit
    return ResolvedTarget(upstream=name, spec=full_spec, kind=kind, commit_hint=hint,
                          version=version, label=label, image=image, attempts=res.attempts,
                          commit=commit, tree=tree)


def image_repository_of(reference: str) -> str:
    """`vllm/vllm-openai-rocm:nightly-...` -> `registry-1.docker.io/vllm/vllm-openai-rocm`."""
    from patchforge.net.registry import parse_image_ref
    ref = parse_image_ref(reference)
    return f"{ref.registry}/{ref.repository}"


class _WheelResolver:
    """The StoreResolver of a wheel upstream: a version (e.g. from an image's labels) becomes the
    deterministic import of that wheel; the wheel file is kept for the pin's source."""

    def __init__(self, project: Any, store: Any, upstream: Any,
                 pinned: dict | None = None) -> None:
        self.project, self.store, self.upstream = project, store, upstream
        self.pinned = pinned  # upstream.lock's pin's source: its file keeps the pin's label
        self.wheel: Any = None
        self.version: str | None = None

    def resolve_commitish(self, upstream: str, spec: str) -> str:
        raise ResolutionError(f"upstream {upstream} is a wheel: it has no commits to name")

    def import_version(self, upstream: str, version: str) -> tuple[str, str]:
        from patchforge.store import sources
        root = getattr(self.project, "root", None)
        commit, tree, self.wheel = sources.import_wheel_upstream(
            self.store, self.upstream.name, self.upstream.package, version,
            offline=bool(getattr(self.project, "offline", False)),
            namespace=None if root is None else
            sources.wheel_namespace(root, self.upstream.name, self.upstream.package),
            pinned=self.pinned)
        self.version = sources.wheel_label(self.wheel, self.pinned)  # the one a pin records
        return commit, tree


def _resolution_hint(spec: str, kind: SpecKind, upstream_kind: str, offline: bool,
                     met: list[str], *, unreachable: bool = False) -> str:
    """What to try next: the advice of the errors met (a login, a remote that could not be
    reached: then not "check the name"), the network only when --offline kept it out. (A
    wheel version needs no other spelling: `0.33` takes the 0.33.0 wheel, as pip's `==`.)"""
    parts = list(dict.fromkeys(met))
    if kind is SpecKind.commit and upstream_kind not in ("wheel", "dir"):
        # A tag or branch named by hex digits alone (a date tag, `20261205`) is read as a
        # commit id, and was said to be no tag of an upstream that has it.
        parts.append(f"{spec} is read as a commit id (7 to 40 hex digits): a tag or branch "
                     f"of that name is named in full, `refs/tags/{spec}` or `refs/heads/{spec}`")
    if offline:
        parts.append("run without --offline to fetch it")
    elif not unreachable:
        parts.append("check the name")
    return "; ".join(parts)


class _ProjectStoreResolver:
    """The StoreResolver of a real project: the store, fetching what it does not have yet.

    The one place in this module that reaches the store, lazily, for `pins`; the
    resolution logic above never imports it.
    """

    def __init__(self, project: Any, store: Any, upstream: Any) -> None:
        self.project, self.store, self.upstream = project, store, upstream

    def resolve_commitish(self, upstream: str, spec: str) -> str:
        from patchforge.store.gitsource import fetch_git_upstream
        # fetch_git_upstream uses the store for commit ids, refreshes branches and tags, and
        # honours --offline itself.
        return fetch_git_upstream(self.store, upstream, self.upstream.url, spec,
                                  offline=bool(getattr(self.project, "offline", False)))

    def import_version(self, upstream: str, version: str) -> tuple[str, str]:
        raise ResolutionError(f"upstream {upstream} is not a wheel: no version to import")

    def known_tag(self, upstream: str, name: str) -> str | None:
        from patchforge.store.giturl import store_namespace
        namespace = store_namespace(upstream, self.upstream.url)
        return self.store.read_ref(f"refs/patchforge/remotes/{namespace}/tags/{name}")

    def ancestor(self, upstream: str, commit: str, ancestry: str) -> str:
        # A fetched commit comes with its history (blob-less, never shallow): parents are here.
        return self.store.resolve(commit + ancestry)


def resolve_git_spec(project: Any, store: Any, upstream: Any, spec: str) -> str:
    """The commit a SPEC names for a git upstream, fetched into `store` (used by pins)."""
    target = resolve_git_target(project, store, upstream, spec)
    assert target.commit is not None  # resolve_target raises otherwise
    return target.commit


def _registry_for(project: Any, spec: str) -> tuple[Any, str | None]:
    """The registry client and the configured image repository, when SPEC may need them."""
    if classify_spec(spec) not in (SpecKind.image, SpecKind.nightly):
        return None, None
    from patchforge.net.http import HttpClient
    from patchforge.net.registry import RegistryClient
    from patchforge.store.gitstore import cache_dir
    registry = RegistryClient.from_env(HttpClient(cache_dir(),
                                                  offline=getattr(project, "offline", False)))
    config_image = getattr(getattr(project, "config", None), "image", None)
    return registry, (image_repository_of(config_image) if config_image else None)


def resolve_git_target(project: Any, store: Any, upstream: Any, spec: str) -> ResolvedTarget:
    """resolve_git_spec with everything learnt on the way (the image, when SPEC named one)."""
    registry, image_repository = _registry_for(project, spec)
    target = resolve_target(spec, upstream, store_resolver=_ProjectStoreResolver(project, store,
                                                                                 upstream),
                            registry=registry, image_repository=image_repository)
    assert target.commit is not None  # resolve_target raises otherwise
    return target


def resolve_wheel_target(project: Any, store: Any, upstream: Any, spec: str, *,
                         pinned: dict | None = None) -> tuple[ResolvedTarget, Any, str]:
    """A wheel upstream's SPEC that is not a plain version (an image whose labels name the
    version): (target, the wheel file, the version). `pinned`: the source of upstream.lock's
    pin, whose file keeps the pin's label (sources.wheel_label)."""
    registry, image_repository = _registry_for(project, spec)
    resolver = _WheelResolver(project, store, upstream, pinned)
    target = resolve_target(spec, upstream, store_resolver=resolver, registry=registry,
                            image_repository=image_repository)
    if resolver.wheel is None or resolver.version is None:
        raise ResolutionError(f"cannot resolve {upstream.name}={spec}: no version of "
                              f"{upstream.package} found", attempts=target.attempts)
    return target, resolver.wheel, resolver.version
