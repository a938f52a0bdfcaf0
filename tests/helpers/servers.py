"""Real HTTP servers on 127.0.0.1 for the tests: a small GitHub-like forge, a small OCI registry,
and git's own smart HTTP (`GitHttpServer`: `git http-backend` serving a real repository).

Each runs `http.server` in a thread on an ephemeral port, records every request it receives
(method, path, headers, body) and misbehaves on demand through `server.misbehave(...)`: a status
with headers (429 + Retry-After, 403 rate limits, 5xx), slow answers, bad JSON, truncated bodies,
redirects elsewhere, corrupted bodies. The fixtures `forge_server`, `registry_server` and
`other_server` are registered for every test by conftest.
"""
from __future__ import annotations

import hashlib
import json
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

OCI_INDEX = "application/vnd.oci.image.index.v1+json"
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
DOCKER_LIST = "application/vnd.docker.distribution.manifest.list.v2+json"
DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
OCI_CONFIG = "application/vnd.oci.image.config.v1+json"


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def header(self, name: str) -> str | None:
        return self.headers.get(name.lower())


@dataclass
class Misbehaviour:
    """One planned misbehaviour: applies to the next `times` requests whose path starts with `path`."""

    kind: str  # "status", "slow", "bad_json", "truncate", "redirect", "corrupt", "drop"
    path: str = "/"
    times: int = 1
    status: int = 500
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    delay: float = 0.0
    location: str = ""


@dataclass
class Answer:
    status: int
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)


class TestServer:
    """A threaded HTTP server whose answers come from `self.route(method, path, query, req)`."""

    __test__ = False  # not a pytest test class

    def __init__(self) -> None:
        self.requests: list[Recorded] = []
        self.misbehaviours: list[Misbehaviour] = []
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def _handle(self) -> None:
                server._dispatch(self)

            do_GET = do_HEAD = do_POST = do_PATCH = do_PUT = do_DELETE = _handle

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.host = f"127.0.0.1:{self.port}"
        self.url = f"http://{self.host}"
        self._thread = threading.Thread(target=self.httpd.serve_forever,
                                        kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def misbehave(self, kind: str, **kw: Any) -> Misbehaviour:
        item = Misbehaviour(kind, **kw)
        with self._lock:
            self.misbehaviours.append(item)
        return item

    def paths(self, method: str | None = None) -> list[str]:
        return [r.path for r in self.requests if method is None or r.method == method]

    def route(self, method: str, path: str, query: dict[str, list[str]], req: Recorded) -> Answer:
        return Answer(404, b'{"message": "Not Found"}')

    # -- plumbing -------------------------------------------------------------------------------
    def _take_misbehaviour(self, path: str) -> Misbehaviour | None:
        with self._lock:
            for item in self.misbehaviours:
                if item.times > 0 and path.startswith(item.path):
                    item.times -= 1
                    return item
        return None

    def _dispatch(self, h: BaseHTTPRequestHandler) -> None:
        length = int(h.headers.get("Content-Length") or 0)
        body = h.rfile.read(length) if length else b""
        rec = Recorded(h.command, h.path, {k.lower(): v for k, v in h.headers.items()}, body)
        with self._lock:
            self.requests.append(rec)
        split = urlsplit(h.path)
        bad = self._take_misbehaviour(split.path)
        if bad and bad.kind == "slow":
            time.sleep(bad.delay)
            bad = None
        if bad and bad.kind == "drop":
            h.close_connection = True
            h.connection.close()
            return
        if bad and bad.kind == "status":
            answer = Answer(bad.status, bad.body, dict(bad.headers))
        elif bad and bad.kind == "redirect":
            answer = Answer(302, b"", {"Location": bad.location})
        elif bad and bad.kind == "bad_json":
            answer = Answer(200, b'{"number": 1, "state": ', {"Content-Type": "application/json"})
        else:
            answer = self.route(h.command, split.path, parse_qs(split.query), rec)
        declared = len(answer.body)
        body = answer.body
        if bad and bad.kind == "truncate":
            body = body[: len(body) // 2]
        if bad and bad.kind == "corrupt":
            body = body.replace(b"}", b" }", 1)  # same JSON meaning, different bytes and digest
            declared = len(body)
        h.send_response(answer.status)
        for name, value in answer.headers.items():
            h.send_header(name, value)
        h.send_header("Content-Length", str(declared))
        if bad and bad.kind == "truncate":
            h.send_header("Connection", "close")
        h.end_headers()
        if h.command != "HEAD":
            h.wfile.write(body)
        if bad and bad.kind == "truncate":
            h.close_connection = True


def _json(status: int, doc: Any, headers: dict[str, str] | None = None) -> Answer:
    return Answer(status, json.dumps(doc).encode(), {"Content-Type": "application/json",
                                                     **(headers or {})})


class ForgeServer(TestServer):
    """A small GitHub REST API: pulls (get, list with pagination, create, update), compare, ETags.

    `require_token` makes every request need `Authorization: Bearer <token>`; `page_size` is the
    default page length of listings.
    """

    def __init__(self) -> None:
        super().__init__()
        self.pulls: dict[tuple[str, int], dict[str, Any]] = {}
        self.comparisons: dict[tuple[str, str, str], tuple[str, int, int]] = {}
        self.require_token: str | None = None
        self.page_size = 2
        # GitHub answers a `head` filter whose owner it does not know with every pull request
        # of the repository, as if there were no filter.
        self.ignore_head_filter = False
        self.html_url_template = "https://github.com/{repo}/pull/{number}"

    def add_pull(self, repo: str, number: int, *, state: str = "open", merged: bool = False,
                 merge_commit_sha: str | None = None, head_ref: str = "fix",
                 head_sha: str = "a" * 40, base_ref: str = "main", title: str = "A fix",
                 draft: bool = False, head_label: str | None = None) -> dict[str, Any]:
        pull = {
            "number": number,
            "url": f"{self.url}/repos/{repo}/pulls/{number}",
            "html_url": self.html_url_template.format(repo=repo, number=number),
            "state": state, "merged": merged, "merge_commit_sha": merge_commit_sha,
            "title": title, "draft": draft,
            "head": {"ref": head_ref, "sha": head_sha,
                     "label": head_label or f"{repo.split('/')[0]}:{head_ref}"},
            "base": {"ref": base_ref, "sha": "b" * 40},
        }
        self.pulls[(repo, number)] = pull
        return pull

    def route(self, method: str, path: str, query: dict[str, list[str]], req: Recorded) -> Answer:
        if self.require_token and req.header("authorization") != f"Bearer {self.require_token}":
            return _json(401, {"message": "Requires authentication"})
        # Served at the root, as api.github.com is, and under /api/v3, as GitHub Enterprise is.
        parts = path.strip("/").removeprefix("api/v3/").split("/")
        if len(parts) >= 4 and parts[0] == "repos":
            repo = f"{parts[1]}/{parts[2]}"
            rest = parts[3:]
            if rest == ["pulls"] and method == "GET":
                return self._list_pulls(repo, query, req)
            if rest == ["pulls"] and method == "POST":
                return self._create_pull(repo, req)
            if len(rest) == 2 and rest[0] == "pulls" and rest[1].isdigit():
                pull = self.pulls.get((repo, int(rest[1])))
                if pull is None:
                    return _json(404, {"message": "Not Found"})
                if method == "PATCH":
                    changes = json.loads(req.body)
                    for key in ("title", "body", "state"):
                        if key in changes:
                            pull[key] = changes[key]
                    if "base" in changes:
                        pull["base"]["ref"] = changes["base"]
                return self._with_etag(pull, req)
            if len(rest) == 2 and rest[0] == "compare" and "..." in rest[1]:
                base, _, head = rest[1].partition("...")
                found = self.comparisons.get((repo, base, head))
                if found is None:
                    return _json(404, {"message": "Not Found"})
                status, ahead, behind = found
                return self._with_etag({"status": status, "ahead_by": ahead, "behind_by": behind,
                                        "total_commits": ahead, "commits": [], "files": []}, req)
        return _json(404, {"message": "Not Found"})

    def _with_etag(self, doc: Any, req: Recorded) -> Answer:
        body = json.dumps(doc).encode()
        etag = '"' + hashlib.sha1(body).hexdigest() + '"'
        if req.header("if-none-match") == etag:
            return Answer(304, b"", {"ETag": etag})
        return Answer(200, body, {"Content-Type": "application/json", "ETag": etag})

    def _list_pulls(self, repo: str, query: dict[str, list[str]], req: Recorded) -> Answer:
        state = query.get("state", ["open"])[0]
        head = None if self.ignore_head_filter else query.get("head", [None])[0]
        pulls = [p for (r, _), p in sorted(self.pulls.items()) if r == repo
                 and (state == "all" or p["state"] == state)
                 and (head is None or p["head"]["label"] == head)]
        per_page = int(query.get("per_page", [self.page_size])[0])
        page = int(query.get("page", ["1"])[0])
        chunk = pulls[(page - 1) * per_page: page * per_page]
        headers = {}
        if page * per_page < len(pulls):
            extra = "".join(f"&{k}={v[0]}" for k, v in sorted(query.items())
                            if k not in ("page", "per_page"))
            headers["Link"] = (f'<{self.url}/repos/{repo}/pulls?page={page + 1}&per_page={per_page}'
                               f'{extra}>; rel="next", <{self.url}/repos/{repo}/pulls?page=1>; '
                               f'rel="first"')
        answer = self._with_etag(chunk, req)
        answer.headers.update(headers)
        return answer

    def _create_pull(self, repo: str, req: Recorded) -> Answer:
        doc = json.loads(req.body)
        owner = doc["head"].split(":")[0] if ":" in doc["head"] else repo.split("/")[0]
        branch = doc["head"].split(":")[-1]
        label = f"{owner}:{branch}"
        for (r, _), pull in self.pulls.items():
            if r == repo and pull["head"]["label"] == label and pull["state"] == "open":
                return _json(422, {"message": "Validation Failed", "errors": [
                    {"message": f"A pull request already exists for {label}."}]})
        number = max([n for (r, n) in self.pulls if r == repo] or [0]) + 1
        pull = self.add_pull(repo, number, head_ref=branch, base_ref=doc["base"],
                             title=doc["title"], draft=bool(doc.get("draft")), head_label=label)
        pull["body"] = doc.get("body")
        return _json(201, pull)


def sha256_digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


class TokenServer(TestServer):
    """The bearer-token realm of the registry, on its own port (its own "host")."""

    def __init__(self) -> None:
        super().__init__()
        self.credentials: str | None = None  # e.g. "Basic dXNlcjpwdw==" that the realm demands
        self.issued: list[str] = []

    def route(self, method: str, path: str, query: dict[str, list[str]], req: Recorded) -> Answer:
        if path != "/token":
            return _json(404, {"errors": [{"code": "NOT_FOUND"}]})
        if self.credentials and req.header("authorization") != self.credentials:
            return _json(401, {"errors": [{"code": "UNAUTHORIZED", "message": "bad credentials"}]})
        token = f"tok-{len(self.issued) + 1}"
        self.issued.append(token)
        return _json(200, {"token": token, "expires_in": 300})


class StorageServer(TestServer):
    """Where a registry redirects blob downloads (another host): serves what it was handed."""

    def __init__(self) -> None:
        super().__init__()
        self.blobs: dict[str, bytes] = {}

    def route(self, method: str, path: str, query: dict[str, list[str]], req: Recorded) -> Answer:
        data = self.blobs.get(path.rsplit("/", 1)[-1])
        if data is None or "X-Signature" not in query:
            return Answer(403, b"<Error>AccessDenied</Error>")
        return Answer(200, data, {"Content-Type": "application/octet-stream"})


class RegistryServer(TestServer):
    """A small OCI distribution registry: /v2/<name>/manifests/<ref>, /v2/<name>/blobs/<digest>
    and /v2/<name>/tags/list (paginated as the distribution spec says: `n`, `last`, and a
    relative `Link: <...>; rel="next"` on every page but the last, unless `tags_link` is off).

    `push_image(...)` builds config blob -> manifest -> (optional) index and tags it. With
    `auth_required` every /v2/ request needs a bearer token from `token_server` (another port).
    With `blob_storage` (a StorageServer), blob GETs are redirected there, as registries send
    layers to a storage host or CDN with a signed URL.
    """

    def __init__(self) -> None:
        super().__init__()
        self.blobs: dict[str, bytes] = {}
        self.manifests: dict[str, tuple[str, bytes]] = {}  # digest -> (media type, bytes)
        self.tags: dict[tuple[str, str], str] = {}
        self.token_server = TokenServer()
        self.auth_required = False
        self.realm_url: str | None = None  # the realm the challenge names (default: token_server)
        self.wrong_digest_header = False
        self.tags_page_size = 3  # the server's own cap on `n`
        self.tags_link = True
        self.extra_tags: dict[str, list[str]] = {}  # tags listed without a manifest behind them
        self.blob_storage: StorageServer | None = None

    def close(self) -> None:
        super().close()
        self.token_server.close()

    def _put_manifest(self, media_type: str, doc: dict[str, Any]) -> str:
        data = json.dumps(doc, indent=3).encode()
        digest = sha256_digest(data)
        self.manifests[digest] = (media_type, data)
        return digest

    def push_image(self, repo: str, tag: str, labels: dict[str, str] | None, *, index: bool = True,
                   docker: bool = False, created: str = "2026-09-12T05:27:48Z",
                   platforms: tuple[tuple[str, str], ...] = (("linux", "arm64"), ("linux", "amd64")),
                   layers: tuple[tuple[bytes, str, str], ...] = (),
                   ) -> dict[str, str]:
        """Store an image; returns {"digest": top-level, "manifest": amd64 manifest, "config": ...}.

        `layers` (bottom first): (blob, media type, diff id: sha256 of the uncompressed tar) of
        the linux/amd64 image; its config lists the diff ids as `rootfs.diff_ids`."""
        for blob, _, _ in layers:
            self.blobs[sha256_digest(blob)] = blob
        out: dict[str, str] = {}
        entries = []
        for os_name, arch in (platforms if index else (("linux", "amd64"),)):
            own_layers = layers if arch == "amd64" else ()
            config = {"architecture": arch, "os": os_name, "created": created,
                      "config": {"Labels": labels if arch == "amd64" else {"arch": arch}},
                      "rootfs": {"type": "layers", "diff_ids": [d for _, _, d in own_layers]}}
            config_bytes = json.dumps(config).encode()
            config_digest = sha256_digest(config_bytes)
            self.blobs[config_digest] = config_bytes
            manifest_type = DOCKER_MANIFEST if docker else OCI_MANIFEST
            digest = self._put_manifest(manifest_type, {
                "schemaVersion": 2, "mediaType": manifest_type,
                "config": {"mediaType": OCI_CONFIG, "digest": config_digest,
                           "size": len(config_bytes)},
                "layers": [{"mediaType": t, "digest": sha256_digest(b), "size": len(b)}
                           for b, t, _ in own_layers]})
            entries.append({"mediaType": manifest_type, "digest": digest,
                            "size": len(self.manifests[digest][1]),
                            "platform": {"os": os_name, "architecture": arch}})
            if arch == "amd64":
                out["manifest"], out["config"] = digest, config_digest
        if index:
            index_type = DOCKER_LIST if docker else OCI_INDEX
            out["digest"] = self._put_manifest(index_type, {
                "schemaVersion": 2, "mediaType": index_type, "manifests": entries})
        else:
            out["digest"] = out["manifest"]
        self.tags[(repo, tag)] = out["digest"]
        return out

    def _challenge(self, repo: str) -> Answer:
        realm = self.realm_url or f"{self.token_server.url}/token"
        return _json(401, {"errors": [{"code": "UNAUTHORIZED"}]}, {
            "WWW-Authenticate": f'Bearer realm="{realm}",service="test-registry",'
                                f'scope="repository:{repo}:pull"'})

    def route(self, method: str, path: str, query: dict[str, list[str]], req: Recorded) -> Answer:
        if not path.startswith("/v2/"):
            return _json(404, {"errors": [{"code": "NOT_FOUND"}]})
        rest = path[len("/v2/"):]
        if rest.endswith("/tags/list"):
            return self._tags_list(rest[:-len("/tags/list")], query, req)
        for kind in ("/manifests/", "/blobs/"):
            if kind in rest:
                repo, _, ref = rest.rpartition(kind)
                break
        else:
            return _json(200, {})
        if self.auth_required:
            auth = req.header("authorization") or ""
            if not (auth.startswith("Bearer ") and auth[7:] in self.token_server.issued):
                return self._challenge(repo)
        if kind == "/blobs/":
            data = self.blobs.get(ref)
            if data is None:
                return _json(404, {"errors": [{"code": "BLOB_UNKNOWN"}]})
            if self.blob_storage is not None and method == "GET":
                self.blob_storage.blobs[ref] = data
                return Answer(307, b"", {"Location": f"{self.blob_storage.url}/blobs/{ref}"
                                                     "?X-Signature=signed-url"})
            return Answer(200, data, {"Content-Type": "application/octet-stream",
                                      "Docker-Content-Digest": ref})
        digest = ref if ref.startswith("sha256:") else self.tags.get((repo, ref))
        if digest is None or digest not in self.manifests:
            return _json(404, {"errors": [{"code": "MANIFEST_UNKNOWN",
                                           "message": "manifest unknown"}]})
        media_type, data = self.manifests[digest]
        header_digest = sha256_digest(b"x") if self.wrong_digest_header else digest
        return Answer(200, data, {"Content-Type": media_type, "Docker-Content-Digest": header_digest,
                                  "ETag": f'"{digest}"'})

    def _tags_list(self, repo: str, query: dict[str, list[str]], req: Recorded) -> Answer:
        if self.auth_required:
            auth = req.header("authorization") or ""
            if not (auth.startswith("Bearer ") and auth[7:] in self.token_server.issued):
                return self._challenge(repo)
        names = sorted({t for (r, t) in self.tags if r == repo} | set(self.extra_tags.get(repo, [])))
        if not names:
            return _json(404, {"errors": [{"code": "NAME_UNKNOWN", "message": "repository unknown"}]})
        last = query.get("last", [None])[0]
        if last is not None:
            names = [n for n in names if n > last]  # lexical order, as the spec says
        size = min(int(query.get("n", [self.tags_page_size])[0]), self.tags_page_size)
        page, more = names[:size], len(names) > size
        headers = {}
        if more and self.tags_link:
            headers["Link"] = f'</v2/{repo}/tags/list?n={size}&last={page[-1]}>; rel="next"'
        return _json(200, {"name": repo, "tags": page}, headers)


class GitHttpServer(TestServer):
    """A git repository served over smart HTTP by `git http-backend` (git's own CGI), so that a
    partial clone, its filters and its on-demand blob fetches work as against any forge. Every
    request is recorded: a test proves that a command reached the remote, or that it did not.
    The URL of the repository is `url` + "/repo.git"."""

    def __init__(self, repo: Path) -> None:
        import subprocess
        self.repo = Path(repo)
        for key in ("uploadpack.allowFilter", "uploadpack.allowAnySHA1InWant"):
            subprocess.run(["git", "-C", str(self.repo), "config", key, "true"], check=True)
        super().__init__()
        self.repo_url = f"{self.url}/repo.git"

    def route(self, method: str, path: str, query: dict[str, list[str]], req: Recorded) -> Answer:
        import os
        import subprocess
        from urllib.parse import urlencode
        if not path.startswith("/repo.git"):
            return Answer(404)
        env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
        env.update({
            "GIT_PROJECT_ROOT": str(self.repo.parent), "GIT_HTTP_EXPORT_ALL": "1",
            "PATH_INFO": "/" + self.repo.name + path[len("/repo.git"):],
            "REQUEST_METHOD": method, "QUERY_STRING": urlencode(query, doseq=True),
            "CONTENT_TYPE": req.header("content-type") or "",
            "CONTENT_LENGTH": str(len(req.body)),
            "GIT_PROTOCOL": req.header("git-protocol") or "",
            "HTTP_CONTENT_ENCODING": req.header("content-encoding") or "",
            "REMOTE_ADDR": "127.0.0.1"})
        out = subprocess.run(["git", "http-backend"], input=req.body, env=env,
                             capture_output=True).stdout
        head, _, body = out.partition(b"\r\n\r\n")
        status, headers = 200, {}
        for line in head.decode("latin-1").split("\r\n"):
            name, _, value = line.partition(": ")
            if name.lower() == "status":
                status = int(value.split()[0])
            elif name:
                headers[name] = value
        return Answer(status, body, headers)


@pytest.fixture
def forge_server():
    server = ForgeServer()
    yield server
    server.close()


@pytest.fixture
def registry_server():
    server = RegistryServer()
    yield server
    server.close()


@pytest.fixture
def other_server():
    """A plain server on another port: where a redirect sends a client that must not bring its token."""
    server = TestServer()
    yield server
    server.close()
