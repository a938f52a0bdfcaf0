"""The OCI distribution API: an image reference -> its digest -> the image configuration's labels,
and a repository's tags (`list_tags`, paginated).

`RegistryClient.resolve_image("host/repo:tag")` HEADs the manifest with the Accept list of every
manifest kind we understand, checks `Docker-Content-Digest` and the sha256 of every body it GETs
(a mismatch is an error, never a warning), follows an index / manifest list to the linux/amd64
manifest, and reads `config.Labels` from the config blob and the layer list from the manifest.
`RegistryClient.open_blob` streams one blob (a layer) and checks its size and digest at its end. Bearer-token challenges are answered by
fetching a token from the realm that asked; configured credentials go only to that realm, and
only over https (or to a loopback host, for tests and local registries).
"""
from __future__ import annotations

import base64
import hashlib
import os
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlencode, urlsplit

from patchforge.errors import NetworkError, UsageError
from patchforge.model.record import field, record
from patchforge.net.http import HttpClient, Response, host_of, may_carry_secret

OCI_INDEX = "application/vnd.oci.image.index.v1+json"
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
DOCKER_LIST = "application/vnd.docker.distribution.manifest.list.v2+json"
DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
MANIFEST_ACCEPT = ", ".join((OCI_INDEX, OCI_MANIFEST, DOCKER_LIST, DOCKER_MANIFEST))
INDEX_TYPES = frozenset({OCI_INDEX, DOCKER_LIST})

DOCKER_HUB = "registry-1.docker.io"
_DOCKER_HUB_ALIASES = frozenset({"docker.io", "index.docker.io", DOCKER_HUB})
_LOOPBACK = frozenset({"localhost", "127.0.0.1", "::1", "[::1]"})
# Token realms that serve a registry from another host.
_KNOWN_REALMS = {"registry-1.docker.io": frozenset({"auth.docker.io"})}

DIGEST_RE = re.compile(r"^sha256:[0-9a-f]{64}\Z")
# The distribution spec's grammar: path components of lowercase alphanumerics and separators.
_REPO_COMPONENT_RE = re.compile(r"^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*\Z")
_TAG_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}\Z")
# A registry host as a reference names it: DNS labels or an IPv4 address, or an IPv6 address in
# brackets, with an optional port. It is written into the generated Dockerfile's FROM line,
# which BuildKit runs through its shell lexer: `evil$x.example.com` would name another host.
_REGISTRY_RE = re.compile(r"^(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)*"
                          r"|\[[0-9a-f:.]+\])(?::[0-9]{1,5})?\Z")
_CHALLENGE_PARAM_RE = re.compile(r'(\w+)\s*=\s*(?:"([^"]*)"|([^\s,]+))')


@record(frozen=True)
class ImageRef:
    """A parsed image reference: `registry` is host[:port]; `tag` and/or `digest` name the image."""

    registry: str
    repository: str
    tag: str | None
    digest: str | None

    @property
    def manifest_ref(self) -> str:
        """What to ask the registry for: the digest when pinned (immutable), else the tag."""
        return self.digest or self.tag or "latest"

    def __str__(self) -> str:
        text = f"{self.registry}/{self.repository}"
        if self.tag:
            text += f":{self.tag}"
        if self.digest:
            text += f"@{self.digest}"
        return text


@record(frozen=True)
class LayerRef:
    """One layer of an image, as its manifest lists it (bottom layer first)."""

    digest: str
    media_type: str
    size: int | None


@record(frozen=True)
class ImageInfo:
    """A resolved image: `digest` is what the reference points at (index or manifest), the one to pin."""

    reference: str
    repository: str
    tag: str | None
    digest: str
    config_digest: str
    labels: dict[str, str]
    created: str | None
    registry: str = ""
    manifest_digest: str = ""  # the linux/amd64 manifest (== digest for a single-platform image)
    layers: tuple[LayerRef, ...] = ()  # bottom first, as the manifest lists them


@record(frozen=True)
class RegistryCredentials:
    """A user name and secret sent as HTTP Basic to a token realm; the secret is never shown."""

    username: str
    secret: str = field(repr=False)


def parse_image_ref(text: str, *, need_tag: bool = True) -> ImageRef:
    """`registry/repo:tag`, `repo@sha256:...`, `name:tag` (Docker Hub, `library/` for one name).

    With `need_tag=False` a bare repository (`host/repo`, for its tags list) is accepted too."""
    original = text
    text = text.strip()
    name, _, digest = text.partition("@")
    if digest and not DIGEST_RE.match(digest):
        raise UsageError(f"bad image digest in {original!r}: expected sha256:<64 hex>")
    tag = None
    slash = name.rfind("/")
    colon = name.rfind(":")
    if colon > slash:
        name, tag = name[:colon], name[colon + 1:]
        if not _TAG_RE.match(tag):
            raise UsageError(f"bad image tag {tag!r} in {original!r}")
    first, sep, rest = name.partition("/")
    if sep and ("." in first or ":" in first or first == "localhost"):
        registry, repository = first.lower(), rest
        if not _REGISTRY_RE.match(registry):
            raise UsageError(f"bad image registry {first!r} in {original!r}",
                             hint="expected [REGISTRY/]REPOSITORY[:TAG][@sha256:DIGEST]")
    else:
        registry, repository = DOCKER_HUB, name
    if registry in _DOCKER_HUB_ALIASES:
        registry = DOCKER_HUB
        if "/" not in repository:
            repository = f"library/{repository}"
    if not repository or not all(_REPO_COMPONENT_RE.match(c) for c in repository.split("/")):
        raise UsageError(f"bad image repository {repository!r} in {original!r}",
                         hint="expected [REGISTRY/]REPOSITORY[:TAG][@sha256:DIGEST]")
    if tag is None and not digest and need_tag:
        raise UsageError(f"image reference {original!r} names no tag or digest",
                         hint="add :TAG or @sha256:DIGEST (patchforge does not assume :latest)")
    return ImageRef(registry, repository, tag, digest or None)


def parse_challenge(header: str) -> tuple[str, dict[str, str]]:
    """`Bearer realm="https://auth/token",service="s",scope="repository:r:pull"` -> (scheme, params)."""
    scheme, _, rest = header.strip().partition(" ")
    params = {m.group(1).lower(): m.group(2) if m.group(2) is not None else m.group(3)
              for m in _CHALLENGE_PARAM_RE.finditer(rest)}
    return scheme.lower(), params


def sha256_of(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


class RegistryClient:
    """An OCI distribution client on top of an HttpClient (which has no token of its own here).

    `credentials` maps a registry host (or "*" for any) to the credentials its token realm wants.
    """

    def __init__(self, http: HttpClient, *,
                 credentials: Mapping[str, RegistryCredentials] | None = None,
                 platform: tuple[str, str] = ("linux", "amd64"),
                 insecure_registries: tuple[str, ...] = (),
                 docker_logins: Any = None,
                 trusted_realms: tuple[str, ...] = (),
                 unbound_secret: bool = False) -> None:
        self.http = http
        self.unbound_secret = unbound_secret  # PATCHFORGE_REGISTRY_TOKEN without its _HOST
        # Token realm hosts (besides the registry's own) that may receive credentials.
        self.trusted_realms = frozenset(h.strip().lower() for h in trusted_realms if h.strip())
        self.credentials = dict(credentials or {})
        self.docker_logins = docker_logins  # `docker login`'s, asked when a realm wants some
        self.platform = platform
        self.insecure_registries = frozenset(h.lower() for h in insecure_registries)
        self._tokens: dict[tuple[str, str], str] = {}  # (registry, repository) -> bearer token

    @classmethod
    def from_env(cls, http: HttpClient, env: Mapping[str, str] | None = None,
                 **kw: Any) -> "RegistryClient":
        """Credentials from PATCHFORGE_REGISTRY_TOKEN (+ _USER), bound to PATCHFORGE_REGISTRY_HOST
        (without it, to no registry);
        for any other registry, what `docker login` stored (net.credentials.DockerCredentials).
        PATCHFORGE_REGISTRY_REALMS names other token realm hosts trusted with them."""
        from patchforge.net.credentials import DockerCredentials

        env = os.environ if env is None else env
        kw.setdefault("docker_logins", DockerCredentials(dict(env)))
        # A trailing newline from `$(cat tokenfile)` or a CRLF secrets file was sent as part of
        # the secret: the login refused, and the hint said to set the variable that was set.
        # Stripped, as the forge token is (HttpClient).
        secret = (env.get("PATCHFORGE_REGISTRY_TOKEN") or "").strip() or None
        creds = {}
        host = (env.get("PATCHFORGE_REGISTRY_HOST") or "").strip().lower()
        if secret and host:
            creds[host] = RegistryCredentials(
                (env.get("PATCHFORGE_REGISTRY_USER") or "").strip() or "patchforge", secret)
        # Without a host the token is bound to no registry: an image reference comes from the
        # configuration (which a pull request can change), and any registry it named was sent
        # the token through a token realm on its own host.
        kw.setdefault("unbound_secret", bool(secret) and not host)
        realms = tuple((env.get("PATCHFORGE_REGISTRY_REALMS") or "").split(","))
        kw.setdefault("trusted_realms", realms)
        return cls(http, credentials=creds, **kw)

    def __repr__(self) -> str:
        return f"RegistryClient(registries with credentials={sorted(self.credentials)})"

    def resolve_image(self, ref: str) -> ImageInfo:
        """Tag or digest -> digest -> (linux/amd64 manifest) -> config blob labels."""
        image = parse_image_ref(ref)
        head = self._call(image, "HEAD", "manifests", image.manifest_ref, accept=MANIFEST_ACCEPT)
        digest = head.header("docker-content-digest")
        if digest is not None and not DIGEST_RE.match(digest):
            digest = None  # some registries send other algorithms; we check the body ourselves
        if image.digest and digest and digest != image.digest:
            raise NetworkError(f"registry {image.registry} answered the wrong digest for {ref}: "
                               f"{digest}, expected {image.digest}")
        # By tag, the GET is revalidated by ETag and its body checked against the HEAD's digest
        # (so a registry that lies in Docker-Content-Digest is caught); by a pinned digest the
        # answer is immutable and served from the cache once we have it.
        top, top_type, top_digest = self._manifest(image, image.manifest_ref,
                                                   image.digest or digest,
                                                   immutable=image.digest is not None)
        manifest, manifest_digest = top, top_digest
        if top_type in INDEX_TYPES:
            child = self._pick_platform(image, top, ref)
            manifest, child_type, manifest_digest = self._manifest(image, child, child,
                                                                   immutable=True)
            if child_type in INDEX_TYPES:
                raise _not_an_image(f"{ref}: nested image index at {child} is not supported")
        config_desc = manifest.get("config") if isinstance(manifest, dict) else None
        config_digest = config_desc.get("digest") if isinstance(config_desc, dict) else None
        if not isinstance(config_digest, str) or not DIGEST_RE.match(config_digest):
            raise _not_an_image(f"{ref}: manifest {manifest_digest} names no sha256 config blob")
        blob = self._call(image, "GET", "blobs", config_digest, accept="*/*", immutable=True,
                          digest=config_digest)
        self._check_digest(image, blob, config_digest)
        try:
            config = blob.json()
        except NetworkError as exc:
            raise _not_an_image(exc.message) from None  # as pushed: its digest matched
        inner = config.get("config") if isinstance(config, dict) else None
        labels = (inner.get("Labels") if isinstance(inner, dict) else None) or {}  # may be null
        if not isinstance(labels, dict):
            raise _not_an_image(f"{ref}: the image configuration {config_digest} has Labels that "
                               f"are not a map of names to values ({type(labels).__name__})")
        created = config.get("created") if isinstance(config, dict) else None
        return ImageInfo(reference=ref.strip(), repository=image.repository, tag=image.tag,
                         digest=top_digest, config_digest=config_digest,
                         # A label whose value is not text names nothing (never its repr).
                         labels={str(k): v for k, v in labels.items() if isinstance(v, str)},
                         created=created if isinstance(created, str) else None,
                         registry=image.registry, manifest_digest=manifest_digest,
                         layers=_layers_of(manifest, ref))

    # -- blobs ----------------------------------------------------------------------------------
    def open_blob(self, ref: str, layer: LayerRef) -> "BlobReader":
        """Stream one blob of the image REF names (its repository is what the registry needs).

        The reader checks the blob's size and sha256 when its end is read: bytes the registry
        sent wrongly never pass silently. Close it (or use `with`) when done.
        """
        image = parse_image_ref(ref)
        path = f"/v2/{image.repository}/blobs/{layer.digest}"
        url = self._base_url(image.registry) + path
        key = (image.registry, image.repository)
        resp = self.http.open_stream(url, accept="*/*", headers=self._auth(key))
        if resp.status == 401:
            challenge = resp.header("www-authenticate")
            resp.close()
            if challenge:
                self._answer_challenge(image, challenge)
            resp = self.http.open_stream(url, accept="*/*", headers=self._auth(key))
        if not resp.ok:
            detail = resp.error_detail()
            resp.close()
            raise NetworkError(f"registry {image.registry} answered {detail} for GET {path}")
        return BlobReader(resp, layer, f"{image.registry}{path}")

    def list_tags(self, repository: str, *, page_size: int = 1000,
                  max_pages: int = 1000) -> list[str]:
        """Every tag of `repository` (`[host/]repo`; a tag or digest in it is ignored), in the
        registry's order, through `GET /v2/<name>/tags/list?n=<page_size>`, following the
        `Link: <...>; rel="next"` header of each page (the distribution spec's pagination;
        `last=<tag>` continues after a tag). A registry that sends a page without a Link is
        asked again after its last tag; a page that brings nothing new ends the listing."""
        image = parse_image_ref(repository, need_tag=False)
        tags: list[str] = []
        seen: set[str] = set()
        ref: str | None = f"list?n={int(page_size)}"
        pages = 0
        while ref is not None:
            pages += 1
            if pages > max_pages:
                raise NetworkError(f"registry {image.registry}: the tags list of "
                                   f"{image.repository} did not end after {max_pages} pages")
            resp = self._call(image, "GET", "tags", ref, accept="application/json")
            doc = resp.json()
            if not isinstance(doc, dict) or "tags" not in doc:
                # A proxy's or mirror's answer (`[]`, `{}`, `{"errors": ...}` with a 200) is
                # no tags list: read as one without tags, bump said "up to date", exit 0.
                raise NetworkError(f"registry {image.registry}: the answer for the tags list of "
                                   f"{image.repository} is not a tags list (no \"tags\")")
            page = doc["tags"]
            if page is None:
                page = []  # the spec allows null for a repository without tags
            if not isinstance(page, list) or not all(isinstance(t, str) for t in page):
                raise NetworkError(f"registry {image.registry}: the tags list of "
                                   f"{image.repository} is not a list of names")
            new = [t for t in page if t not in seen]
            seen.update(new)
            tags.extend(new)
            ref = self._next_tags_ref(image, resp, page, page_size) if new else None
        return tags

    @staticmethod
    def _next_tags_ref(image: ImageRef, resp: Response, page: list[str],
                       page_size: int) -> str | None:
        """The `list?...` of the next page: from the Link header (relative or absolute, on this
        registry's tags list only), else after the last tag of a page that had any."""
        link = resp.links().get("next")
        if link:
            try:
                parts = urlsplit(link)
            except ValueError:  # (an unclosed `[`)
                raise NetworkError(f"registry {image.registry}: the tags list of "
                                   f"{image.repository} links to no URL ({link[:200]!r})"
                                   ) from None
            expected = f"/v2/{image.repository}/tags/list"
            if parts.path != expected or (parts.netloc and parts.netloc != image.registry):
                raise NetworkError(f"registry {image.registry}: the tags list of "
                                   f"{image.repository} links elsewhere ({link!r})")
            return "list" + (f"?{parts.query}" if parts.query else "")
        if page:
            # No Link: asked again after the last tag, whether or not the page was full. A
            # registry may cap a page below `n` (at 100, say) and send no Link; ended there,
            # the listing missed the newest nightlies and bump said "up to date". A page that
            # brings nothing new ends it (list_tags).
            return f"list?{urlencode({'n': page_size, 'last': page[-1]})}"
        return None

    # -- manifests ------------------------------------------------------------------------------
    def _manifest(self, image: ImageRef, ref: str, expected: str | None, *,
                  immutable: bool) -> tuple[Any, str, str]:
        resp = self._call(image, "GET", "manifests", ref, accept=MANIFEST_ACCEPT,
                          immutable=immutable, digest=expected)
        digest = self._check_digest(image, resp, expected)
        # Bytes checked against a digest (the one asked for, or the registry's header) are
        # what was pushed: one that does not parse is an answer about the image. Unchecked,
        # they may be a proxy's or a broken registry's: a fault of the registry, not the image.
        header = resp.header("docker-content-digest") or ""
        unreadable = _not_an_image if expected or DIGEST_RE.match(header) else NetworkError
        try:
            doc = resp.json()
        except NetworkError as exc:
            raise unreadable(exc.message) from None
        if not isinstance(doc, dict):
            raise unreadable(f"GET {resp.url}: the manifest is not a JSON object")
        media_type = doc.get("mediaType") or (resp.header("content-type") or "").split(";")[0]
        if media_type not in (OCI_INDEX, OCI_MANIFEST, DOCKER_LIST, DOCKER_MANIFEST) \
                and "manifests" in doc:
            media_type = OCI_INDEX  # an OCI index may omit mediaType
        return doc, media_type, digest

    def _check_digest(self, image: ImageRef, resp: Response, expected: str | None) -> str:
        actual = sha256_of(resp.body)
        header = resp.header("docker-content-digest")
        for claimed in (expected, header if header and DIGEST_RE.match(header) else None):
            if claimed and claimed != actual:
                raise NetworkError(f"registry {image.registry} sent the wrong digest for "
                                   f"{urlsplit(resp.url).path}: the body is {actual}, "
                                   f"expected {claimed}")
        return actual

    def _pick_platform(self, image: ImageRef, index: dict[str, Any], ref: str) -> str:
        want_os, want_arch = self.platform
        seen = []
        entries = index.get("manifests") or []
        if not isinstance(entries, list):
            raise _not_an_image(f"{ref}: the image index's manifests are not a list "
                               f"({type(entries).__name__})")
        for entry in entries:
            # Each entry an object, or the index names no image (a string or number here was
            # an internal error that ended `bump` on one nightly). `platform` is optional in
            # an OCI index: an entry without one (an SBOM, a signature, an attestation) is
            # no image to run, and passed over as `docker pull` does; refusing it made the
            # whole nightly "not an image" and `bump` skip it.
            if not isinstance(entry, dict):
                raise _not_an_image(f"{ref}: an entry of the image index is not a manifest "
                                   f"({str(entry)[:60]!r})")
            plat = entry.get("platform")
            if plat is None:
                continue
            if not isinstance(plat, dict):
                raise _not_an_image(f"{ref}: an entry of the image index has a platform that "
                                   f"is not an object ({str(entry)[:60]!r})")
            seen.append(f"{plat.get('os')}/{plat.get('architecture')}")
            if plat.get("os") == want_os and plat.get("architecture") == want_arch:
                digest = entry.get("digest")
                if isinstance(digest, str) and DIGEST_RE.match(digest):
                    return digest
        raise _not_an_image(f"{ref}: no {want_os}/{want_arch} image in the index "
                           f"(it has {', '.join(seen) or 'nothing'})")

    # -- requests and auth ----------------------------------------------------------------------
    def _base_url(self, registry: str) -> str:
        host = registry.rsplit(":", 1)[0] if not registry.startswith("[") else registry
        plain = host in _LOOPBACK or registry in self.insecure_registries
        return f"{'http' if plain else 'https'}://{registry}"

    def _call(self, image: ImageRef, method: str, kind: str, ref: str, *, accept: str,
              immutable: bool = False, digest: str | None = None) -> Response:
        """One registry request, answering a bearer challenge once. With `digest`, an answer
        from the HTTP cache whose body is not that digest (the cache file damaged on disk) is
        dropped from the cache and asked again: a registry never lied there, and the cached
        copy would have failed every later run the same way."""
        path = f"/v2/{image.repository}/{kind}/{ref}"
        url = self._base_url(image.registry) + path
        key = (image.registry, image.repository)
        resp = self.http.request(method, url, accept=accept, headers=self._auth(key),
                                 immutable=immutable)
        if digest and resp.from_cache and method == "GET" and sha256_of(resp.body) != digest:
            self.http.forget(method, url, accept)
            resp = self.http.request(method, url, accept=accept, headers=self._auth(key),
                                     immutable=immutable)
        if resp.status == 401 and not resp.from_cache:
            challenge = resp.header("www-authenticate")
            if challenge:
                self._answer_challenge(image, challenge)
                resp = self.http.request(method, url, accept=accept, headers=self._auth(key),
                                         immutable=immutable)
        if not resp.ok:
            message = (f"registry {image.registry} answered {resp.error_detail()} "
                       f"for {method} {path}")
            # A manifest the registry does not have is an answer about the image; any other
            # failure (a refusal, a server error) is about the registry, and so is a 404 from
            # another host a redirect led to (a blob store, a mirror): taken for the image's,
            # the newest nightly was skipped and an older one planned, exit 0.
            own = host_of(resp.url or url) == host_of(url)
            error = _not_an_image(message) if resp.status == 404 and kind == "manifests" \
                and own else NetworkError(message)
            error.status = resp.status
            raise error
        return resp

    def _auth(self, key: tuple[str, str]) -> dict[str, str]:
        token = self._tokens.get(key)
        return {"Authorization": f"Bearer {token}"} if token else {}

    def _realm_trusted(self, registry: str, realm_host: str) -> bool:
        registry_host = (urlsplit("//" + registry).hostname or registry).lower()
        return realm_host == registry_host or realm_host in _KNOWN_REALMS.get(registry, ()) \
            or realm_host in self.trusted_realms

    def _credentials_for(self, registry: str) -> RegistryCredentials | None:
        found = self.credentials.get(registry) or self.credentials.get("*")
        if found is None and self.docker_logins is not None:
            login = self.docker_logins.lookup(registry)
            if login is not None:
                found = RegistryCredentials(*login)
        return found

    def _answer_challenge(self, image: ImageRef, header: str) -> None:
        scheme, params = parse_challenge(header)
        if scheme != "bearer" or not params.get("realm"):
            raise NetworkError(f"registry {image.registry} asks for {scheme or 'unknown'} "
                               f"authentication, which patchforge does not speak")
        realm = params["realm"]
        try:
            realm_parts = urlsplit(realm)
            realm_parts.port  # (checked when asked for: a port past 65535)
        except ValueError:  # (an unclosed `[`: `http://[::1`)
            realm_parts = None
        if realm_parts is None or realm_parts.scheme not in ("http", "https"):
            raise NetworkError(f"registry {image.registry} names a bad token realm "
                               f"{realm[:200]!r}")
        query = {k: params[k] for k in ("service", "scope") if params.get(k)}
        token_url = realm + ("&" if "?" in realm else "?") + urlencode(query)
        headers = {}
        creds = self._credentials_for(image.registry)
        realm_host = (realm_parts.hostname or "").lower()
        # Credentials only to a realm on the registry's own host, a realm known to serve it
        # (Docker Hub's auth.docker.io) or one the user named, and never in clear text over the
        # network (a loopback realm is a local test or proxy): a registry cannot send them to
        # whatever host it likes.
        trusted = self._realm_trusted(image.registry, realm_host)
        withheld = bool(creds) and not trusted
        if creds and trusted and may_carry_secret(realm):
            pair = f"{creds.username}:{creds.secret}".encode()
            headers["Authorization"] = "Basic " + base64.b64encode(pair).decode()
        # use_cache=False: a token must never land in the on-disk cache.
        resp = self.http.request("GET", token_url, headers=headers, accept="application/json",
                                 use_cache=False)
        if not resp.ok:
            raise NetworkError(f"token realm {host_of(realm)} answered {resp.error_detail()} "
                               f"for {image.repository}",
                               hint=(f"the credentials were not sent: {realm_host} is not "
                                     f"{image.registry}'s own host; if you trust it, add it to "
                                     "PATCHFORGE_REGISTRY_REALMS") if withheld else
                               (f"PATCHFORGE_REGISTRY_TOKEN was not sent: it goes only to the "
                                f"registry PATCHFORGE_REGISTRY_HOST names (set it to "
                                f"{image.registry} if the token is that registry's)")
                               if self.unbound_secret and creds is None else
                               "`docker login` to the registry, or set "
                               "PATCHFORGE_REGISTRY_TOKEN (and _USER, _HOST), for a private "
                               "image")
        doc = resp.json()
        token = doc.get("token") or doc.get("access_token") if isinstance(doc, dict) else None
        if not isinstance(token, str) or not token:
            raise NetworkError(f"token realm {host_of(realm)} answered without a token")
        if not all(33 <= ord(c) < 127 for c in token):
            # requests would refuse the header with an error that quotes it, token and all.
            raise NetworkError(f"token realm {host_of(realm)} answered a token with characters "
                               "a header cannot carry (not shown)")
        self._tokens[(image.registry, image.repository)] = token



def _not_an_image(message: str) -> NetworkError:
    """The error for a registry answer that says the image itself is not there or not one
    patchforge can read (`NetworkError.about_image`)."""
    error = NetworkError(message)
    error.about_image = True
    return error


def _layers_of(manifest: Any, ref: str) -> tuple[LayerRef, ...]:
    layers = manifest.get("layers") if isinstance(manifest, dict) else None
    if layers is not None and not isinstance(layers, list):
        raise _not_an_image(f"{ref}: the manifest's layers are not a list "
                           f"({type(layers).__name__})")
    out = []
    for number, entry in enumerate(layers or []):
        digest = entry.get("digest") if isinstance(entry, dict) else None
        if not isinstance(digest, str) or not DIGEST_RE.match(digest):
            raise _not_an_image(f"{ref}: layer {number} of the manifest names no sha256 digest")
        size = entry.get("size")
        out.append(LayerRef(digest, str(entry.get("mediaType") or ""),
                            size if isinstance(size, int) and size >= 0 else None))
    return tuple(out)


class BlobReader:
    """A blob's bytes as they arrive, hashed on the way; its end checks size and digest."""

    def __init__(self, resp: Any, layer: LayerRef, where: str) -> None:
        self._resp = resp
        self.layer = layer
        self.where = where
        self._hash = hashlib.sha256()
        self.bytes_read = 0
        self._done = False

    def read(self, size: int = -1) -> bytes:
        if self._done:
            return b""
        chunk = self._resp.read(size if size and size > 0 else 1 << 20)
        if not chunk:
            self._finish()
            return b""
        self._hash.update(chunk)
        self.bytes_read += len(chunk)
        if self.layer.size is not None and self.bytes_read > self.layer.size:
            raise NetworkError(f"{self.where}: the blob is larger than the manifest says "
                               f"({self.layer.size} bytes)")
        return chunk

    def drain(self) -> None:
        """Read to the end (what a reader of the content did not need), so the digest is checked."""
        while self.read(1 << 20):
            pass

    def _finish(self) -> None:
        self._done = True
        if self.layer.size is not None and self.bytes_read != self.layer.size:
            raise NetworkError(f"{self.where}: got {self.bytes_read} bytes, the manifest says "
                               f"{self.layer.size}")
        actual = "sha256:" + self._hash.hexdigest()
        if actual != self.layer.digest:
            raise NetworkError(f"{self.where}: the blob's content is {actual}, not the digest "
                               "it was asked by")

    def close(self) -> None:
        self._resp.close()

    def __enter__(self) -> "BlobReader":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
