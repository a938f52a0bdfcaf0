"""RegistryClient against the test OCI registry (and its token realm) on 127.0.0.1."""
from __future__ import annotations

import base64
import json

import pytest

from patchforge.errors import NetworkError, UsageError
from patchforge.net.http import HttpClient
from patchforge.net.registry import (DOCKER_HUB, MANIFEST_ACCEPT, ImageRef, RegistryClient,
                                     RegistryCredentials, parse_challenge, parse_image_ref)
from helpers.servers import Answer

NIGHTLY = "nightly-eed1f3d0c6043bd494424a22443ee198dd56f657"
LABELS = {"org.opencontainers.image.revision": "eed1f3d0c6043bd494424a22443ee198dd56f657",
          "vllm.version": "0.26.1rc1.dev229+geed1f3d0c"}
REPO = "vllm/vllm-openai-rocm"


@pytest.fixture
def client(tmp_path):
    def build(**kw) -> RegistryClient:
        http = HttpClient(tmp_path / "cache", offline=kw.pop("offline", False),
                          sleep=lambda s: None, rng=lambda: 0.0)
        return RegistryClient(http, **kw)
    return build


def test_tag_through_oci_index_to_amd64_labels(client, registry_server):
    pushed = registry_server.push_image(REPO, NIGHTLY, LABELS)
    ref = f"{registry_server.host}/{REPO}:{NIGHTLY}"
    info = client().resolve_image(ref)
    assert info.reference == ref and info.repository == REPO and info.tag == NIGHTLY
    assert info.digest == pushed["digest"] and info.manifest_digest == pushed["manifest"]
    assert info.config_digest == pushed["config"] and info.labels == LABELS
    assert info.created == "2026-09-12T05:27:48Z" and info.registry == registry_server.host
    first = registry_server.requests[0]
    assert first.method == "HEAD" and first.path == f"/v2/{REPO}/manifests/{NIGHTLY}"
    assert first.header("accept") == MANIFEST_ACCEPT
    for media_type in ("oci.image.index", "oci.image.manifest", "manifest.list.v2",
                       "distribution.manifest.v2"):
        assert media_type in first.header("accept")


@pytest.mark.parametrize("index", [True, False])
def test_docker_media_types(client, registry_server, index):
    pushed = registry_server.push_image(REPO, "t", LABELS, docker=True, index=index)
    info = client().resolve_image(f"{registry_server.host}/{REPO}:t")
    assert info.labels == LABELS and info.digest == pushed["digest"]
    assert info.manifest_digest == pushed["manifest"]


def test_by_digest(client, registry_server):
    pushed = registry_server.push_image(REPO, "t", LABELS)
    info = client().resolve_image(f"{registry_server.host}/{REPO}@{pushed['digest']}")
    assert info.tag is None and info.digest == pushed["digest"]
    assert registry_server.requests[0].path == f"/v2/{REPO}/manifests/{pushed['digest']}"


def test_unknown_tag_says_what_the_registry_answered(client, registry_server):
    with pytest.raises(NetworkError, match=rf"registry {registry_server.host} answered 404 Not Found "
                                           r"for HEAD /v2/vllm/vllm-openai-rocm"
                                           r"/manifests/nope"):
        client().resolve_image(f"{registry_server.host}/{REPO}:nope")


def test_wrong_digest_header(client, registry_server):
    registry_server.push_image(REPO, "t", LABELS)
    registry_server.wrong_digest_header = True
    with pytest.raises(NetworkError, match="wrong digest"):
        client().resolve_image(f"{registry_server.host}/{REPO}:t")


@pytest.mark.parametrize("where", ["manifests/sha256", "blobs/"])
def test_corrupted_body_is_a_wrong_digest(client, registry_server, where):
    registry_server.push_image(REPO, "t", LABELS)
    registry_server.misbehave("corrupt", path=f"/v2/{REPO}/{where}", times=1)
    with pytest.raises(NetworkError, match="wrong digest .*the body is sha256:"):
        client().resolve_image(f"{registry_server.host}/{REPO}:t")


def test_pinned_digest_that_the_registry_does_not_confirm(client, registry_server):
    pushed = registry_server.push_image(REPO, "t", LABELS)
    other = registry_server.push_image(REPO, "u", {"x": "y"})
    registry_server.manifests[pushed["digest"]] = registry_server.manifests[other["digest"]]
    with pytest.raises(NetworkError, match="wrong digest"):
        client().resolve_image(f"{registry_server.host}/{REPO}@{pushed['digest']}")


def test_bearer_challenge_fetches_a_token_from_the_realm(client, registry_server):
    registry_server.push_image(REPO, "t", LABELS)
    registry_server.auth_required = True
    info = client().resolve_image(f"{registry_server.host}/{REPO}:t")
    assert info.labels == LABELS
    realm = registry_server.token_server.requests
    assert len(realm) == 1 and realm[0].path.startswith("/token?")
    assert "service=test-registry" in realm[0].path and "scope=repository%3Avllm%2F" in realm[0].path
    assert realm[0].header("authorization") is None  # anonymous: no credentials configured
    assert registry_server.requests[-1].header("authorization") == "Bearer tok-1"


@pytest.mark.parametrize("token", ["s3cret-realm-token\n", "s3cret realm token", "s3cret\u00e9token"])
def test_a_realm_token_a_header_cannot_carry_is_refused_without_showing_it(client, registry_server,
                                                                           token):
    """A token realm answering a token with a newline, a space or a non-ASCII letter: before,
    the request failed with requests' InvalidHeader, whose message (printed by the command)
    quoted the header, token and all. Now the answer is refused and the token not shown."""
    import json

    registry_server.push_image(REPO, "t", LABELS)
    registry_server.auth_required = True
    registry_server.token_server.route = lambda *a: Answer(
        200, json.dumps({"token": token}).encode(), {"Content-Type": "application/json"})
    with pytest.raises(NetworkError) as err:
        client().resolve_image(f"{registry_server.host}/{REPO}:t")
    assert "s3cret" not in str(err.value) and "a header cannot carry" in str(err.value)


def test_credentials_go_only_to_the_realm(client, registry_server):
    registry_server.push_image(REPO, "t", LABELS)
    registry_server.auth_required = True
    basic = "Basic " + base64.b64encode(b"alice:pat-secret").decode()
    registry_server.token_server.credentials = basic
    creds = {registry_server.host: RegistryCredentials("alice", "pat-secret")}
    client(credentials=creds).resolve_image(f"{registry_server.host}/{REPO}:t")
    assert registry_server.token_server.requests[0].header("authorization") == basic
    assert all("Basic" not in (r.header("authorization") or "") for r in registry_server.requests)
    assert "pat-secret" not in repr(creds) and "pat-secret" not in repr(client(credentials=creds))


def test_credentials_of_another_registry_are_not_sent(client, registry_server):
    registry_server.push_image(REPO, "t", LABELS)
    registry_server.auth_required = True
    registry_server.token_server.credentials = "Basic xyz"
    creds = {"ghcr.io": RegistryCredentials("alice", "pat-secret")}
    with pytest.raises(NetworkError, match=r"token realm 127\.0\.0\.1:\d+ answered 401"):
        client(credentials=creds).resolve_image(f"{registry_server.host}/{REPO}:t")
    assert registry_server.token_server.requests[0].header("authorization") is None


def test_from_env_binds_the_token_to_a_registry(tmp_path):
    http = HttpClient(tmp_path)
    env = {"PATCHFORGE_REGISTRY_TOKEN": "s", "PATCHFORGE_REGISTRY_HOST": "GHCR.io"}
    assert RegistryClient.from_env(http, env).credentials == {
        "ghcr.io": RegistryCredentials("patchforge", "s")}
    assert RegistryClient.from_env(http, {}).credentials == {}


def test_blob_redirect_to_another_host_drops_the_bearer_token(client, registry_server,
                                                              other_server):
    pushed = registry_server.push_image(REPO, "t", LABELS)
    registry_server.auth_required = True
    blob = registry_server.blobs[pushed["config"]]
    other_server.route = lambda *args: Answer(200, blob)
    registry_server.misbehave("redirect", path=f"/v2/{REPO}/blobs/",
                              location=f"{other_server.url}/cdn/blob")
    # The redirect comes after the token check in a real registry; here the misbehaviour
    # answers first, so the blob request carries the token obtained for the manifests.
    info = client().resolve_image(f"{registry_server.host}/{REPO}:t")
    assert info.labels == LABELS
    blob_requests = [r for r in registry_server.requests if "/blobs/" in r.path]
    assert blob_requests[0].header("authorization", ) == "Bearer tok-1"
    assert other_server.requests[0].header("authorization") is None


def test_offline_after_a_resolve_uses_the_cache(client, registry_server):
    pushed = registry_server.push_image(REPO, "t", LABELS)
    ref = f"{registry_server.host}/{REPO}:t"
    client().resolve_image(ref)
    seen = len(registry_server.requests)
    info = client(offline=True).resolve_image(ref)
    assert info.digest == pushed["digest"] and len(registry_server.requests) == seen
    with pytest.raises(NetworkError, match="offline and no cached answer for HEAD"):
        client(offline=True).resolve_image(f"{registry_server.host}/{REPO}:other")


def test_retries_a_flaky_registry(client, registry_server):
    registry_server.push_image(REPO, "t", LABELS)
    registry_server.misbehave("status", status=503, times=2)
    assert client().resolve_image(f"{registry_server.host}/{REPO}:t").labels == LABELS


def test_an_index_entry_without_a_platform_is_passed_over(client, registry_server):
    """`platform` is optional in an OCI image index: builders list an SBOM or a signature
    manifest without one. Such an entry first made the whole nightly "not an image"
    (`verify --image` exit 2; `bump` skipped the nightly and could call the stack up to
    date); now it is passed over, as `docker pull` does, and the amd64 image is found. An
    entry that is no object, or a platform that is no object, is still refused."""
    from helpers.servers import OCI_INDEX, OCI_MANIFEST, sha256_digest

    pushed = registry_server.push_image(REPO, NIGHTLY, LABELS)
    index = json.loads(registry_server.manifests[pushed["digest"]][1])
    artifact = {"mediaType": OCI_MANIFEST, "digest": "sha256:" + "5" * 64, "size": 10,
                "artifactType": "application/spdx+json"}

    def tagged(entries) -> str:
        data = json.dumps({**index, "manifests": entries}).encode()
        registry_server.manifests[sha256_digest(data)] = (OCI_INDEX, data)
        registry_server.tags[(REPO, "signed")] = sha256_digest(data)
        return f"{registry_server.host}/{REPO}:signed"
    info = client().resolve_image(tagged([artifact, *index["manifests"]]))
    assert info.manifest_digest == pushed["manifest"] and info.labels == LABELS
    with pytest.raises(NetworkError, match="has a platform that is not an object"):
        client().resolve_image(tagged([{**artifact, "platform": "linux/amd64"},
                                       *index["manifests"]]))
    with pytest.raises(NetworkError, match="is not a manifest"):
        client().resolve_image(tagged(["sha256:" + "5" * 64, *index["manifests"]]))


def test_missing_platform_lists_what_there_is(client, registry_server):
    registry_server.push_image(REPO, "t", LABELS, platforms=(("linux", "arm64"),))
    with pytest.raises(NetworkError, match=r"no linux/amd64 image in the index \(it has linux/arm64\)"):
        client().resolve_image(f"{registry_server.host}/{REPO}:t")


@pytest.mark.parametrize("text,ref", [
    ("ubuntu:22.04", ImageRef(DOCKER_HUB, "library/ubuntu", "22.04", None)),
    ("vllm/vllm-openai-rocm:" + NIGHTLY, ImageRef(DOCKER_HUB, REPO, NIGHTLY, None)),
    ("docker.io/rocm/vllm:latest", ImageRef(DOCKER_HUB, "rocm/vllm", "latest", None)),
    ("127.0.0.1:5000/a/b:t", ImageRef("127.0.0.1:5000", "a/b", "t", None)),
    ("localhost/a:t", ImageRef("localhost", "a", "t", None)),
    ("ghcr.io/o/img@sha256:" + "a" * 64, ImageRef("ghcr.io", "o/img", None, "sha256:" + "a" * 64)),
    ("ghcr.io/o/img:t@sha256:" + "b" * 64, ImageRef("ghcr.io", "o/img", "t", "sha256:" + "b" * 64)),
    ("[::1]:5000/a:t", ImageRef("[::1]:5000", "a", "t", None)),
])
def test_parse_image_ref(text, ref):
    assert parse_image_ref(text) == ref


@pytest.mark.parametrize("text", ["UPPER/case:t", "repo@sha256:short", "repo", "a/b:bad tag",
                                  "host:5000/:t",
                                  # The host goes into a Dockerfile's FROM line, which BuildKit
                                  # expands: `$x` would name another registry.
                                  "evil$x.example.com/a/b:t", "re g.example.com/a:t",
                                  "host.example.com:port/a:t",
                                  # A line end inside the reference would break the FROM
                                  # line in two; Python's `$` matched before it.
                                  "reg.example.com/a:tag\n@sha256:" + "a" * 64,
                                  "reg.example.com/a/b\n:t", "reg.example.com:5000\n/a:t",
                                  # OCI tags are ASCII.
                                  "reg.example.com/a:t\u00e5g"])
def test_parse_image_ref_refuses(text):
    with pytest.raises(UsageError):
        parse_image_ref(text)


def test_a_digest_or_nightly_tag_from_an_answer_ends_at_its_last_character():
    """Digests and nightly tags read from a registry's answers (JSON strings may hold a line
    end) are checked to their end, as the OCI grammar reads them."""
    from patchforge.net.registry import DIGEST_RE
    from patchforge.ops.bump import NIGHTLY_TAG

    digest, tag = "sha256:" + "a" * 64, "nightly-" + "b" * 40
    assert DIGEST_RE.match(digest) and NIGHTLY_TAG.match(tag)
    assert not DIGEST_RE.match(digest + "\n")
    assert not NIGHTLY_TAG.match(tag + "\n")


def test_parse_challenge():
    scheme, params = parse_challenge(
        'Bearer realm="https://auth.docker.io/token",service="registry.docker.io",'
        'scope="repository:library/ubuntu:pull"')
    assert scheme == "bearer"
    assert params == {"realm": "https://auth.docker.io/token", "service": "registry.docker.io",
                      "scope": "repository:library/ubuntu:pull"}


@pytest.mark.parametrize("labels, message", [
    (["org.opencontainers.image.revision"], "has Labels that are not a map"),
    ({"org.opencontainers.image.revision": {"sha": "x"}, "vllm.version": 7}, "names a commit"),
])
def test_an_image_configuration_of_odd_labels_is_a_clear_refusal(tmp_path, registry_server,
                                                                 labels, message):
    """Labels that are a list made `status --against IMAGE` crash (exit 70, an internal
    error); a label whose value is an object was read as its Python repr. Now the first is
    refused naming the configuration blob, and a label that is not text names nothing."""
    from helpers.cli import run_cli
    from helpers.project import git_project

    root, _ = git_project(tmp_path)
    registry_server.push_image(REPO, "odd", labels)
    run = run_cli(root, "status", "--against", f"up={registry_server.host}/{REPO}:odd")
    assert run.rc == 2 and message in run.err, run.err
    assert "{'sha'" not in run.err


@pytest.mark.parametrize("body,message", [
    (b'{"schemaVersion": 2, "config": {"digest": "CONFIG"}, "layers": 5}',
     "the manifest's layers are not a list (int)"),
    (b"[" * 100_000 + b"]" * 100_000,
     "the answer is not valid JSON: nested deeper than patchforge reads"),
], ids=["layers-a-number", "json-nested-too-deep"])
def test_a_manifest_of_the_wrong_shape_is_a_clear_refusal(tmp_path, registry_server, body,
                                                          message):
    """A manifest whose layers are a number, or JSON nested a hundred thousand deep (200 KB):
    before, `status --against IMAGE` ended with an internal error (exit 70: a TypeError, a
    RecursionError). Now each is refused naming what was wrong."""
    from helpers.cli import run_cli
    from helpers.project import git_project
    from helpers.servers import OCI_MANIFEST, sha256_digest

    root, _ = git_project(tmp_path)
    pushed = registry_server.push_image(REPO, "odd", LABELS, index=False)
    data = body.replace(b"CONFIG", pushed["config"].encode())
    registry_server.manifests[sha256_digest(data)] = (OCI_MANIFEST, data)
    registry_server.tags[(REPO, "odd")] = sha256_digest(data)
    run = run_cli(root, "status", "--against", f"up={registry_server.host}/{REPO}:odd")
    assert run.rc == 2 and message in run.err, run.err


@pytest.mark.parametrize("damage", ["flipped", "truncated"])
def test_a_damaged_cache_entry_is_asked_again_not_blamed_on_the_registry(
        client, registry_server, tmp_path, damage):
    """A cached answer to a blob or manifest by digest is served without asking the registry
    (it cannot change). When the cache file is damaged on disk (a byte flipped, the file cut
    short), its body no longer has that digest: before, every later run failed with "registry
    ... sent the wrong digest", blaming the registry for the cache's damage, until someone
    found and removed the file. Now the entry is dropped and asked again."""
    pushed = registry_server.push_image(REPO, "t", LABELS)
    ref = f"{registry_server.host}/{REPO}:t"
    client().resolve_image(ref)
    entries = [p for p in (tmp_path / "cache" / "http").rglob("*") if p.is_file()]
    damaged = 0
    for path in entries:
        data = path.read_bytes()
        if b"architecture" in data or b'"layers"' in data:  # config blob, manifests
            path.write_bytes(data[:-3] + b"xyz" if damage == "flipped" else data[:-40])
            damaged += 1
    assert damaged >= 2
    info = client().resolve_image(ref)
    assert info.labels == LABELS and info.digest == pushed["digest"]
    asked = [p for p in registry_server.paths("GET") if pushed["config"] in p]
    assert len(asked) == 2, registry_server.paths("GET")
    # The entries are whole again: offline, they serve without a request.
    seen = len(registry_server.requests)
    assert client(offline=True).resolve_image(ref).labels == LABELS
    assert len(registry_server.requests) == seen
