"""SPEC parsing, classification and resolution, with an in-memory store and the test registry."""
from __future__ import annotations

import re

import pytest

from patchforge.errors import ResolutionError, StoreDamaged, StoreError, UsageError
from patchforge.model.config import UpstreamConfig
from patchforge.net.http import HttpClient
from patchforge.net.registry import RegistryClient
from patchforge.targets import (SpecKind, classify_spec, commit_from_version, image_repository_of,
                                label_keys_for, parse_target_specs, resolve_target,
                                version_from_spec)

SHA = "eed1f3d0c6043bd494424a22443ee198dd56f657"
NIGHTLY = f"nightly-{SHA}"
VLLM_GIT = UpstreamConfig(name="vllm", kind="git", url="https://github.com/vllm-project/vllm")
VLLM_WHEEL = UpstreamConfig(name="vllm", kind="wheel", package="vllm")
AITER = UpstreamConfig(name="aiter", kind="git", image_label="aiter.commit")


class FakeStore:
    """A StoreResolver over a dict of names -> commits, and wheel versions -> (commit, tree)."""

    def __init__(self, refs: dict[str, str] | None = None,
                 wheels: dict[str, tuple[str, str]] | None = None) -> None:
        self.refs = refs or {}
        self.wheels = wheels or {}
        self.asked: list[str] = []

    def resolve_commitish(self, upstream: str, spec: str) -> str:
        self.asked.append(spec)
        for name, commit in self.refs.items():
            if name == spec or (len(spec) >= 7 and commit.startswith(spec)):
                return commit
        raise StoreError(f"unknown revision {spec} in {upstream}")

    def import_version(self, upstream: str, version: str) -> tuple[str, str]:
        if version not in self.wheels:
            raise StoreError(f"pip download {upstream}=={version} found nothing")
        return self.wheels[version]


@pytest.fixture
def registry(tmp_path):
    return RegistryClient(HttpClient(tmp_path / "cache", sleep=lambda s: None))


# -- parse_target_specs -------------------------------------------------------------------------
def test_named_specs():
    assert parse_target_specs(("vllm=0.33.0", "aiter=main"), ["vllm", "aiter"]) == \
        {"vllm": "0.33.0", "aiter": "main"}


def test_bare_spec_with_one_upstream():
    assert parse_target_specs((NIGHTLY,), ["vllm"]) == {"vllm": NIGHTLY}


@pytest.mark.parametrize("args,names,message", [
    ((NIGHTLY,), ["vllm", "aiter"], "only allowed with exactly one upstream; name its "
                                    f"upstream: aiter={NIGHTLY} or vllm={NIGHTLY} "
                                    r"\(an upstream not named stays at its pin\)"),
    (("vllm=a", "main"), ["vllm"], "2 SPECs for the one upstream 'vllm': 'vllm=a', 'main'"),
    (("a", "b"), ["vllm"], "2 SPECs for the one upstream 'vllm'"),
    (("vllm=a", "main"), ["vllm", "aiter"], "bare SPEC"),
    (("torch=2.5",), ["vllm"], "unknown upstream 'torch'"),
    (("vllm=",), ["vllm"], "empty SPEC"),
    (("vllm=a", "vllm=b"), ["vllm"], "named twice"),
])
def test_bad_spec_arguments(args, names, message):
    with pytest.raises(UsageError, match=message):
        parse_target_specs(args, names)


def test_an_upstream_named_with_a_colon_is_told_to_use_equals():
    """`rebase --to vllm:0.33.0` with two upstreams suggested `aiter=vllm:0.33.0 or
    vllm=vllm:0.33.0`; the colon was meant as `=`, and the message says so."""
    with pytest.raises(UsageError, match="an upstream is named with `=`: vllm=0.33.0") as caught:
        parse_target_specs(("vllm:0.33.0",), ["vllm", "aiter"])
    assert "aiter=" not in str(caught.value) + (caught.value.hint or "")


# -- classify_spec ------------------------------------------------------------------------------
@pytest.mark.parametrize("spec,kind", [
    (SHA, SpecKind.commit),
    ("124154a88", SpecKind.commit),
    (NIGHTLY, SpecKind.nightly),
    ("0.26.1rc1.dev229+g124154a88.rocm723", SpecKind.version),
    ("0.33.0", SpecKind.version),
    ("v0.9.0", SpecKind.version),
    ("main", SpecKind.ref),
    ("releases/v0.9.1", SpecKind.ref),
    ("nightly-abc", SpecKind.ref),
    ("vllm/vllm-openai-rocm:" + NIGHTLY, SpecKind.image),
    ("127.0.0.1:5000/vllm/vllm-openai-rocm:t", SpecKind.image),
    ("vllm/vllm-openai-rocm@sha256:" + "9" * 64, SpecKind.image),
    (SHA + "^", SpecKind.commit),
    ("124154a88~2", SpecKind.commit),
    ("main^2~1", SpecKind.ref),
    ("v0.9.0^", SpecKind.version),
    ("fix@2", SpecKind.ref),
    ("docker.io/library/ubuntu:22.04", SpecKind.image),
])
def test_classify(spec, kind):
    assert classify_spec(spec) is kind
    assert kind.name == kind.value


@pytest.mark.parametrize("spec", ["0", "0.33.0", "v0.33.0", "01.002", "1.2.3.4.5", "1234567",
                                  "12345678901", "1.", ".1", "1..2", "v", "v.1", "V1.2", "1.2a1",
                                  "1.2.post1", "1!2.0", "1.2+g124154a88", "1.2-3", "\u0661.\u0662",
                                  " 1.2 ", "1.2\n", "0.26.1rc1.dev229+g124154a88.rocm723"])
def test_a_release_is_a_version_as_packaging_says(spec):
    """A SPEC of digits and dots is taken for a version without loading packaging: the kind and
    the commit of its local part are those packaging's parse gives, for near misses too."""
    from packaging.version import InvalidVersion, Version

    def by_packaging():
        stem = spec.strip()
        if re.fullmatch(r"[0-9a-f]{7,40}", stem):
            return SpecKind.commit, None
        if stem[:1].isdigit() or (stem[:1] == "v" and stem[1:2].isdigit()):
            try:
                local = Version(stem).local or ""
            except InvalidVersion:
                return None, None
            found = [part[1:] for part in local.split(".") if re.fullmatch(r"g[0-9a-f]{7,40}", part)]
            return SpecKind.version, (found[0] if found else None)
        return None, None

    kind, commit = by_packaging()
    try:
        got = classify_spec(spec)
    except UsageError:
        got = None
    assert (got is SpecKind.version) == (kind is SpecKind.version)
    if kind is SpecKind.commit:
        assert got is SpecKind.commit
    if kind is SpecKind.version:
        assert commit_from_version(spec.strip()) == commit


@pytest.mark.parametrize("spec", ["", "--upload-pack=x", "a..b", "bad name", "UPPER:tag",
                                  "repo@sha256:12", "^", "~1", "a^b", NIGHTLY + "^",
                                  "0.26.1+g124154a88^"])
def test_classify_refuses(spec):
    with pytest.raises(UsageError):
        classify_spec(spec)


def test_version_helpers():
    assert commit_from_version("0.26.1rc1.dev229+g124154a88.rocm723") == "124154a88"
    assert commit_from_version("0.33.0+rocm723") is None
    assert commit_from_version("main") is None
    assert version_from_spec("v0.9.0") == "0.9.0" and version_from_spec("main") is None
    assert image_repository_of("vllm/vllm-openai-rocm:t") == \
        "registry-1.docker.io/vllm/vllm-openai-rocm"
    assert label_keys_for("aiter", "aiter.commit") == ["aiter.commit"]
    assert label_keys_for("vllm", None) == ["vllm.commit", "org.opencontainers.image.revision"]


# -- resolve_target -----------------------------------------------------------------------------
def test_commit_and_ref_on_a_git_upstream():
    store = FakeStore({"main": SHA})
    target = resolve_target("eed1f3d", VLLM_GIT, store_resolver=store)
    assert (target.kind, target.commit, target.commit_hint) == (SpecKind.commit, SHA, SHA)
    target = resolve_target("main", VLLM_GIT, store_resolver=store)
    assert (target.kind, target.commit, target.label) == (SpecKind.ref, SHA, "main")


def test_version_with_g_local_part_on_a_git_upstream():
    store = FakeStore({"x": "124154a88" + "0" * 31})
    target = resolve_target("0.26.1rc1.dev229+g124154a88.rocm723", VLLM_GIT, store_resolver=store)
    assert target.commit_hint == "124154a88" and target.commit.startswith("124154a88")
    assert target.version == "0.26.1rc1.dev229+g124154a88.rocm723"
    assert store.asked == ["124154a88"]


def test_release_version_on_a_git_upstream_tries_its_tags():
    store = FakeStore({"v0.33.0": SHA})
    target = resolve_target("0.33.0", VLLM_GIT, store_resolver=store)
    assert target.commit == SHA and store.asked == ["0.33.0", "v0.33.0"]
    assert target.attempts[0].startswith("tag 0.33.0: unknown revision")


def test_release_version_with_its_tag_already_fetched_asks_that_tag_first():
    """The spelling the store already has is the one asked (the store checks a known tag with
    one ls-remote of it: a re-spun release moves its tag), not "0.33.0" first, which cost a
    failed fetch on every status and rebase when the tag is "v0.33.0"."""
    class KnowsTags(FakeStore):
        def known_tag(self, upstream: str, name: str) -> str | None:
            return {"v0.33.0": SHA}.get(name)

    store = KnowsTags({"v0.33.0": SHA})
    target = resolve_target("0.33.0", VLLM_GIT, store_resolver=store)
    assert target.commit == SHA and store.asked == ["v0.33.0"]
    assert target.attempts == [f"tag v0.33.0: found commit {SHA}"]
    # Not fetched yet: the remote is asked, as before.
    store = KnowsTags({"0.34.0": "b" * 40})
    assert resolve_target("0.34.0", VLLM_GIT, store_resolver=store).commit == "b" * 40
    assert store.asked == ["0.34.0"]


def test_wheel_version_is_imported():
    store = FakeStore(wheels={"0.33.0": ("c" * 40, "t" * 40)})
    target = resolve_target("0.33.0", VLLM_WHEEL, store_resolver=store)
    assert (target.commit, target.tree, target.version) == ("c" * 40, "t" * 40, "0.33.0")


def test_nightly_on_a_git_upstream_without_image():
    target = resolve_target(NIGHTLY, VLLM_GIT, store_resolver=FakeStore({"x": SHA}))
    assert target.commit == SHA and target.image is None and target.label == NIGHTLY


def test_nightly_with_its_image(registry, registry_server):
    pushed = registry_server.push_image("vllm/vllm-openai-rocm", NIGHTLY,
                                        {"org.opencontainers.image.revision": SHA})
    target = resolve_target(NIGHTLY, VLLM_GIT, store_resolver=FakeStore({"x": SHA}),
                            registry=registry,
                            image_repository=f"{registry_server.host}/vllm/vllm-openai-rocm")
    assert target.commit == SHA and target.commit_hint == SHA
    assert target.image.digest == pushed["digest"]


def test_nightly_whose_image_labels_disagree_is_not_pinned(registry, registry_server):
    registry_server.push_image("v/r", NIGHTLY, {"vllm.commit": "1" * 40})
    target = resolve_target(NIGHTLY, VLLM_GIT, store_resolver=FakeStore({"x": SHA}),
                            registry=registry, image_repository=f"{registry_server.host}/v/r")
    assert target.commit == SHA and target.image is None
    assert any("labels name commit 1111" in a for a in target.attempts)


def test_nightly_whose_image_labels_another_commit_in_upper_case_is_not_pinned(
        registry, registry_server):
    """A label writing its commit in upper-case hex was read as no commit, so the nightly's
    image was pinned unchecked; it names a commit in either case of hex."""
    other = "ABCDEF" + "1" * 34
    registry_server.push_image("v/r", NIGHTLY, {"vllm.commit": other})
    target = resolve_target(NIGHTLY, VLLM_GIT, store_resolver=FakeStore({"x": SHA}),
                            registry=registry, image_repository=f"{registry_server.host}/v/r")
    assert target.commit == SHA and target.image is None
    assert any(f"labels name commit {other.lower()}" in a for a in target.attempts)


def test_failure_lists_every_attempt(registry, registry_server):
    with pytest.raises(ResolutionError) as err:
        resolve_target(NIGHTLY, VLLM_GIT, store_resolver=FakeStore(), registry=registry,
                       image_repository=f"{registry_server.host}/vllm/vllm-openai-rocm")
    attempts = err.value.attempts
    assert len(attempts) == 2
    assert attempts[0].startswith(f"tag {registry_server.host}/vllm/vllm-openai-rocm:{NIGHTLY}: "
                                  f"registry {registry_server.host} answered 404")
    assert attempts[1] == f"commit {SHA}: unknown revision {SHA} in vllm"
    text = str(err.value)
    assert text.startswith(f"cannot resolve vllm={NIGHTLY} (nightly)")
    assert "\n  tried tag " in text and "\n  tried commit " in text


class DamagedStore(FakeStore):
    """A store whose cache broke under the command at one of its asks."""

    def __init__(self, broken: str, **kw) -> None:
        super().__init__(**kw)
        self.broken = broken

    def _damaged(self, asked: str) -> None:
        if asked == self.broken:
            raise StoreDamaged(f"the cache's git store was removed while {asked} ran")

    def resolve_commitish(self, upstream: str, spec: str) -> str:
        self._damaged("resolve_commitish")
        return super().resolve_commitish(upstream, spec)

    def ancestor(self, upstream: str, commit: str, ancestry: str) -> str:
        self._damaged("ancestor")
        return "2" * 40

    def import_version(self, upstream: str, version: str) -> tuple[str, str]:
        self._damaged("import_version")
        return super().import_version(upstream, version)


@pytest.mark.parametrize("broken, spec, upstream", [
    ("resolve_commitish", "v0.33.0", VLLM_GIT),
    ("ancestor", "v0.33.0~1", VLLM_GIT),
    ("import_version", "0.33.0", VLLM_WHEEL),
])
def test_a_damaged_store_is_raised_not_taken_for_a_spec_that_names_nothing(broken, spec, upstream):
    """A broken cache says nothing of the SPEC: its error is raised as it is, never listed as
    one attempt of a "cannot resolve" that sends people after the name."""
    store = DamagedStore(broken, refs={"v0.33.0": "1" * 40},
                         wheels={"0.33.0": ("1" * 40, "3" * 40)})
    with pytest.raises(StoreDamaged, match=f"while {broken} ran"):
        resolve_target(spec, upstream, store_resolver=store)
    # The same store, whole: each ask is answered.
    target = resolve_target(spec, upstream, store_resolver=DamagedStore(
        "nothing", refs=store.refs, wheels=store.wheels))
    assert target.commit == ("2" * 40 if broken == "ancestor" else "1" * 40), target


def test_image_reference_resolves_through_labels(registry, registry_server):
    registry_server.push_image("vllm/vllm-openai-rocm", "v0.33", {
        "org.opencontainers.image.revision": SHA, "vllm.version": "0.33.0",
        "aiter.commit": "a" * 40})
    ref = f"{registry_server.host}/vllm/vllm-openai-rocm:v0.33"
    store = FakeStore({"x": SHA, "y": "a" * 40}, wheels={"0.33.0": ("c" * 40, "t" * 40)})
    git = resolve_target(ref, VLLM_GIT, store_resolver=store, registry=registry)
    assert (git.kind, git.commit, git.version, git.label) == (SpecKind.image, SHA, "0.33.0", "v0.33")
    wheel = resolve_target(ref, VLLM_WHEEL, store_resolver=store, registry=registry)
    assert (wheel.commit, wheel.commit_hint) == ("c" * 40, SHA)
    aiter = resolve_target(ref, AITER, store_resolver=store, registry=registry)
    assert aiter.commit == "a" * 40


def test_image_without_a_commit_label(registry, registry_server):
    registry_server.push_image("v/r", "t", {"maintainer": "x", "vllm.commit": "not-hex"})
    with pytest.raises(ResolutionError) as err:
        resolve_target(f"{registry_server.host}/v/r:t", VLLM_GIT, store_resolver=FakeStore(),
                       registry=registry)
    assert any("label vllm.commit='not-hex': not a commit" in a for a in err.value.attempts)
    assert any("none of the labels vllm.commit, org.opencontainers.image.revision" in a
               for a in err.value.attempts)


def test_image_without_registry_client():
    with pytest.raises(ResolutionError, match="no registry client"):
        resolve_target("v/r:t", VLLM_GIT, store_resolver=FakeStore(), registry=None)


def test_wheel_nightly_without_a_version_label(registry, registry_server):
    registry_server.push_image("v/r", NIGHTLY, {"vllm.commit": SHA})
    with pytest.raises(ResolutionError) as err:
        resolve_target(NIGHTLY, VLLM_WHEEL, store_resolver=FakeStore(), registry=registry,
                       image_repository=f"{registry_server.host}/v/r")
    assert "upstream vllm is a wheel and this names no version" in str(err.value)


def test_upstream_config_may_be_a_mapping():
    target = resolve_target("main", {"name": "aiter", "kind": "git"},
                            store_resolver=FakeStore({"main": SHA}))
    assert target.upstream == "aiter" and target.commit == SHA


def test_resolve_git_spec_against_a_real_store(make_git_repo):
    """ops.resolve's entry point: a release version of a git upstream found as its v-tag."""
    from types import SimpleNamespace

    pytest.importorskip("patchforge.store.sources")  # the store's fetching, built in parallel
    from helpers.git import git
    from patchforge.store.gitstore import UpstreamStore
    from patchforge.targets import resolve_git_spec

    repo, commit = make_git_repo({"a.py": b"x = 1\n"})
    git(repo, "tag", "v0.1.0")
    upstream = UpstreamConfig(name="up", kind="git", url=str(repo))
    project = SimpleNamespace(offline=False, config=SimpleNamespace(image=None))
    store = UpstreamStore.open()
    try:
        assert resolve_git_spec(project, store, upstream, "0.1.0") == commit
        assert resolve_git_spec(project, store, upstream, commit[:9]) == commit
        with pytest.raises(ResolutionError, match="cannot resolve up=nope"):
            resolve_git_spec(project, store, upstream, "nope")
    finally:
        store.close()


def test_commitish_with_ancestry_suffixes_walks_the_store_history(make_git_repo):
    """`<sha>^`, `<tag>~1` and `<branch>^` name the parent, as in git."""
    from types import SimpleNamespace

    from helpers.git import git
    from patchforge.store.gitstore import UpstreamStore
    from patchforge.targets import resolve_git_spec, resolve_git_target

    repo, first = make_git_repo({"a.py": b"x = 1\n"})
    (repo / "a.py").write_bytes(b"x = 2\n")
    git(repo, "commit", "-qam", "two")
    (repo / "a.py").write_bytes(b"x = 3\n")
    git(repo, "commit", "-qam", "three")
    git(repo, "tag", "v0.2.0")
    second = git(repo, "rev-parse", "HEAD^").strip()
    head = git(repo, "rev-parse", "HEAD").strip()
    upstream = UpstreamConfig(name="up", kind="git", url=str(repo))
    project = SimpleNamespace(offline=False, config=SimpleNamespace(image=None))
    store = UpstreamStore.open()
    try:
        assert resolve_git_spec(project, store, upstream, head + "^") == second
        assert resolve_git_spec(project, store, upstream, head[:10] + "~2") == first
        assert resolve_git_spec(project, store, upstream, "v0.2.0^^") == first
        target = resolve_git_target(project, store, upstream, "0.2.0~1")
        assert target.commit == second and target.version is None
        assert target.label == "0.2.0~1"
        with pytest.raises(ResolutionError, match=r"cannot resolve up=.*~5"):
            resolve_git_spec(project, store, upstream, head + "~5")
    finally:
        store.close()


def test_head_and_full_ref_names_of_a_git_upstream(tmp_path):
    """`--at HEAD`, `--against HEAD~1`, `--to refs/heads/main`: what a git user types. HEAD was
    refused ("has no branch or tag 'HEAD'") and `refs/heads/main` was fetched but never found.
    HEAD is the upstream's own (what a clone of it checks out, fetched again on every use like a
    branch), never the store's or another upstream's; an upstream with no HEAD says so."""
    import json as _json

    from helpers.cli import ok, run_cli
    from helpers.project import OneUpstreamStack

    stack = OneUpstreamStack(tmp_path, {"a.py": b"x = 1\n"})
    first = stack.base
    second = stack.commit({"a.py": b"x = 2\n"}, "two")
    ok(stack.root, "upstream", "pin", "up", "--at", "HEAD")
    assert stack.lock()["upstreams"]["up"]["commit"] == second
    ok(stack.root, "upstream", "pin", "up", "--at", "refs/tags/v1")
    assert stack.lock()["upstreams"]["up"]["commit"] == first
    third = stack.commit({"a.py": b"x = 3\n"}, "three")
    for spec, commit in (("HEAD", third), ("HEAD~1", second), ("refs/heads/main", third),
                         ("refs/heads/main^^", first)):
        status = _json.loads(ok(stack.root, "status", "--against", spec, "--json").out)
        assert status["targets"]["up"]["commit"] == commit, spec
    # Offline, HEAD is the one fetched last.
    status = _json.loads(ok(stack.root, "--offline", "status", "--against", "HEAD", "--json").out)
    assert status["targets"]["up"]["commit"] == third
    # A repository whose HEAD names a branch it does not have.
    from helpers.git import git
    git(stack.up, "symbolic-ref", "HEAD", "refs/heads/gone")
    refused = run_cli(stack.root, "status", "--against", "HEAD")
    assert refused.rc == 2 and "has no HEAD" in refused.err, refused.err


def test_a_tag_of_a_tree_or_a_blob_is_said_as_what_it_names(tmp_path):
    """An upstream tag made of a tree or a blob (`git tag t v1^{tree}`, an annotated one too):
    `status --against t` said "'t' is not a known commit, branch or tag" of the upstream, whose
    tags list it. It names what the tag is, exit 2, as it does for the upstream pin."""
    from helpers.cli import run_cli
    from helpers.git import git
    from helpers.project import OneUpstreamStack

    stack = OneUpstreamStack(tmp_path, {"a.py": b"x = 1\n"})
    git(stack.up, "tag", "treetag", "v1^{tree}")
    git(stack.up, "tag", "-a", "-m", "a tree", "annotated", "v1^{tree}")
    git(stack.up, "tag", "blobtag", "v1:a.py")
    for spec, kind in (("treetag", "tree"), ("annotated", "tree"), ("blobtag", "blob")):
        for args in (("status", "--against", f"up={spec}"), ("upstream", "pin", "up", "--at",
                                                              spec, "--force")):
            run = run_cli(stack.root, *args)
            assert run.rc == 2, (args, run.text)
            assert f"tag {spec!r} of " in run.err and f"names a {kind}, not a commit" in run.err, \
                (args, run.err)
            assert "not a known" not in run.err, run.err


@pytest.mark.parametrize("spec", ["main:foo", "v1.2:rc1", "main@sha256:" + "9" * 64])
def test_a_ref_typo_with_a_colon_is_refused_before_any_registry_is_asked(tmp_path, spec):
    """`main:foo` was taken for Docker Hub's official image `library/main` and asked for (five
    times, with backoff, when the registry could not be reached) before failing. No upstream is
    built as an official `library/` image: the SPEC is refused at once, saying what it was
    taken for, exit 2, for any upstream kind."""
    from helpers.cli import run_cli
    from helpers.project import OneUpstreamStack

    with pytest.raises(UsageError, match="official image library/"):
        classify_spec(spec)
    stack = OneUpstreamStack(tmp_path, {"a.py": b"x = 1\n"})
    before = stack.snapshot()
    for args in (("status", "--against", spec), ("rebase", "--to", spec),
                 ("upstream", "pin", "up", "--at", spec)):
        refused = run_cli(stack.root, *args)
        assert refused.rc == 2, refused.err
        assert f"not a valid SPEC: {spec!r} is no branch, tag or commit" in refused.err
        assert "tried image" not in refused.err
    assert stack.snapshot() == before


def test_a_spec_with_stray_whitespace_means_the_same_to_every_command(tmp_path):
    """`rebase --to "v2<TAB>"` (a value pasted from a table) strips the whitespace; `upstream
    pin --at` and `upstream add --at` refused the same value. Every command reads a SPEC alike,
    and one that is only whitespace is refused as empty by each, with nothing written."""
    from helpers.cli import ok, run_cli
    from helpers.project import OneUpstreamStack, add_git_upstream

    stack = OneUpstreamStack(tmp_path, {"a.py": b"x = 1\n"})
    second = stack.commit({"a.py": b"x = 2\n"}, "two", tag="v2")
    ok(stack.root, "upstream", "pin", "up", "--at", "v2\t")
    pin = stack.lock()["upstreams"]["up"]
    assert pin["commit"] == second and pin["label"] == "v2"
    ok(stack.root, "upstream", "pin", "up", "--at", " v1 \n")
    assert stack.lock()["upstreams"]["up"]["label"] == "v1"
    # `upstream add` too, and the pin's label carries no whitespace.
    add_git_upstream(stack.root, "other", stack.up, " v2\t")
    assert stack.lock()["upstreams"]["other"]["label"] == "v2"
    before = stack.snapshot()
    for args in (("upstream", "pin", "up", "--at", " \t"),
                 ("upstream", "add", "third", "--git", str(stack.up), "--at", " ")):
        refused = run_cli(stack.root, *args)
        assert refused.rc == 2 and "empty SPEC" in refused.err, refused.err
    assert stack.snapshot() == before


def test_at_takes_the_upstream_prefix_rebase_to_takes(tmp_path):
    """`upstream pin up --at up=v2`, the form `rebase --to` takes, was resolved as a ref named
    `up=v2` ("cannot resolve up=up=v2"). It is up's SPEC, for `upstream add` too; another
    configured upstream's name there is refused naming it, with nothing written."""
    from helpers.cli import ok, run_cli
    from helpers.project import OneUpstreamStack, add_git_upstream

    stack = OneUpstreamStack(tmp_path, {"a.py": b"x = 1\n"})
    second = stack.commit({"a.py": b"x = 2\n"}, "two", tag="v2")
    ok(stack.root, "upstream", "pin", "up", "--at", "up=v2")
    assert stack.lock()["upstreams"]["up"]["commit"] == second
    add_git_upstream(stack.root, "other", stack.up, "other=v1")
    assert stack.lock()["upstreams"]["other"]["label"] == "v1"
    before = stack.snapshot()
    refused = run_cli(stack.root, "upstream", "pin", "up", "--at", "other=v1")
    assert refused.rc == 2, refused.err
    assert "pins up, and --at 'other=v1' names other" in refused.err
    assert "`patchforge upstream pin other --at v1`" in refused.err
    assert stack.snapshot() == before


def test_a_remote_tracking_name_is_said_as_the_upstreams_branch(tmp_path):
    """`rebase --to up=origin/main`, as `git branch -r` shows the branch in a clone of the
    upstream, was refused as an unknown name with the hint "check the name" alone, though the
    branch listed beside it is `main`. The refusal now gives the upstream's `main` as the name
    to use if `origin/main` is a clone's name for it; only as a maybe, for any remote: said of
    `myfork/main` as a certainty, it was wrong (a fork's branch, other commits). Nothing is
    written, and a name whose part after the `/` is no branch there gets no such clause."""
    from helpers.cli import run_cli
    from helpers.git import git
    from helpers.project import OneUpstreamStack

    stack = OneUpstreamStack(tmp_path, {"a.py": b"x = 1\n"})
    stack.commit({"a.py": b"x = 2\n"}, "two")
    branch = git(stack.up, "rev-parse", "--abbrev-ref", "HEAD").strip()
    before = stack.snapshot()
    for args in (("rebase", "--to", f"up=origin/{branch}"),
                 ("status", "--against", f"up=origin/{branch}"),
                 ("status", "--against", f"up=myfork/{branch}")):
        remote = args[-1].removeprefix("up=").partition("/")[0]
        refused = run_cli(stack.root, *args)
        assert refused.rc == 2, refused.text
        assert f"if '{remote}/{branch}' is a clone's name for the upstream's branch " \
            f"'{branch}', name it '{branch}'" in refused.err, (args, refused.err)
        assert "a clone's name for its branch" not in refused.err, refused.err
    refused = run_cli(stack.root, "status", "--against", "up=origin/nope")
    assert refused.rc == 2 and "a clone's name" not in refused.err, refused.err
    assert stack.snapshot() == before


def test_at_refuses_an_unknown_upstream_name_as_rebase_to_does(tmp_path):
    """`upstream pin up --at typo=v2` was resolved as a ref named `typo=v2`, while `rebase --to
    typo=v2` and `bump --to typo=v2` refuse the unknown upstream: one reading of NAME=SPEC
    for all of them, naming the configured upstreams (for `upstream add`, the one being added
    too); a ref holding `=` is still given, after its upstream's name."""
    from helpers.cli import run_cli
    from helpers.project import OneUpstreamStack

    stack = OneUpstreamStack(tmp_path, {"a.py": b"x = 1\n"})
    stack.commit({"a.py": b"x = 2\n"}, "two", tag="v2")
    before = stack.snapshot()
    for args, known in ((("upstream", "pin", "up", "--at", "typo=v2"), "up"),
                        (("rebase", "--to", "typo=v2"), "up"),
                        (("upstream", "add", "third", "--git", str(stack.up), "--at", "typo=v2"),
                         "third, up")):
        refused = run_cli(stack.root, *args)
        assert refused.rc == 2, refused.text
        assert f"unknown upstream 'typo' in 'typo=v2' (known: {known})" in refused.err, \
            (args, refused.err)
    assert stack.snapshot() == before


def test_an_upstream_and_its_spec_given_as_two_words_are_told_as_one(tmp_path):
    """`rebase --to up v2` (and `status --against up v2`), the upstream and its SPEC as two
    words: with two upstreams it was refused suggesting `up=up or up2=up`, the upstream's own
    name taken for a SPEC; with one, "2 SPECs for the one upstream". It now says to write
    `up=v2`, and that, run as said, is the move that was meant."""
    import shlex

    from helpers.cli import ok, run_cli
    from helpers.project import OneUpstreamStack

    stack = OneUpstreamStack(tmp_path, {"a.py": b"x = 1\n"})
    second = stack.commit({"a.py": b"x = 2\n"}, "two", tag="v2")
    for args in (("rebase", "--to", "up", "v2", "--dry-run"), ("status", "--against", "up", "v2")):
        refused = run_cli(stack.root, *args)
        assert refused.rc == 2 and "an upstream is named with `=`, in one word: up=v2" \
            in refused.err, refused.text
        assert "up=up" not in refused.err and "2 SPECs" not in refused.err, refused.err
        (hinted,) = re.findall(r"hint: `([^`]*)`", refused.err)
        fixed = [word for word in args if word not in ("up", "v2")]
        fixed.insert(fixed.index("--to" if "--to" in fixed else "--against") + 1,
                     *shlex.split(hinted))
        ok(stack.root, *fixed)
    ok(stack.root, "rebase", "--to", "up=v2")
    assert stack.lock()["upstreams"]["up"]["commit"] == second


def test_an_upstreams_name_without_its_spec_is_told_so(tmp_path):
    """`status --against up` (and `rebase --to up`) in a stack of two upstreams, the SPEC left
    out: it was read as the SPEC 'up' and the hint offered `other=up or up=up`. It says now
    that `up` is an upstream's name and how a SPEC is given to it, with nothing written."""
    from helpers.cli import run_cli
    from helpers.project import OneUpstreamStack, add_git_upstream

    stack = OneUpstreamStack(tmp_path, {"a.py": b"x = 1\n"})
    stack.commit({"a.py": b"x = 2\n"}, "two", tag="v2")
    add_git_upstream(stack.root, "other", stack.up, "v2")
    before = stack.snapshot()
    for args in (("status", "--against", "up"), ("rebase", "--to", "up", "--dry-run"),
                 ("rebase", "--to", "up")):
        refused = run_cli(stack.root, *args)
        assert refused.rc == 2, refused.text
        assert "'up' is an upstream's name, with no SPEC" in refused.err, refused.err
        assert "`up=SPEC`" in refused.err and "up=up" not in refused.err, refused.err
    assert stack.snapshot() == before


def test_a_spec_missing_its_upstreams_name_is_told_a_form_that_works(tmp_path):
    """In a stack of two upstreams, `status --against =v2` was told "name its upstream:
    other==v2 or up==v2", and `up==v2` (pip's spelling) was refused in turn as no SPEC;
    `'up = v2'` was told `other=up = v2 or up=up = v2`. Each is now told a form that works,
    nothing written, and `'up = v2'` names up as `up=v2` does."""
    from helpers.cli import ok, run_cli
    from helpers.project import OneUpstreamStack, add_git_upstream

    stack = OneUpstreamStack(tmp_path, {"a.py": b"x = 1\n"})
    stack.commit({"a.py": b"x = 2\n"}, "two", tag="v2")
    add_git_upstream(stack.root, "other", stack.up, "v2")
    before = stack.snapshot()
    for spec, said in (("=v2", "'=v2' names no upstream before its `=`: other=v2 or up=v2"),
                       ("up==v2", "'up==v2': an upstream is named with one `=`, not pip's "
                                  "`==`: up=v2")):
        for args in (("status", "--against", spec), ("rebase", "--to", spec, "--dry-run")):
            refused = run_cli(stack.root, *args)
            assert refused.rc == 2 and said in refused.err, refused.text
            assert "==v2 or" not in refused.err, refused.err
    assert stack.snapshot() == before
    assert "up: target v2" in ok(stack.root, "status", "--against", "up=v2").out
    assert "up: target v2" in ok(stack.root, "status", "--against", "up = v2").out


def test_a_spec_missing_its_upstreams_name_in_a_stack_of_one_upstream_is_told_the_form(tmp_path):
    """With one upstream, `status --against =main` was read as the bare SPEC `=main` and said
    `cannot resolve up==main (ref)`, naming a form that is itself refused (pip's `==`). It is
    told the form that works, as in a stack of several: `'=main' names no upstream before its
    `=`: up=main`, exit 2, nothing written."""
    from helpers.cli import ok, run_cli
    from helpers.project import OneUpstreamStack

    stack = OneUpstreamStack(tmp_path, {"a.py": b"x = 1\n"})
    stack.commit({"a.py": b"x = 2\n"}, "two", tag="v2")
    before = stack.snapshot()
    for spec, said in (("=v2", "'=v2' names no upstream before its `=`: up=v2"),
                       ("=", "'=' names no upstream before its `=`: up=SPEC")):
        for args in (("status", "--against", spec), ("rebase", "--to", spec, "--dry-run")):
            refused = run_cli(stack.root, *args)
            assert refused.rc == 2 and said in refused.err, refused.text
            assert "up==" not in refused.err and "cannot resolve" not in refused.err, \
                refused.err
    assert stack.snapshot() == before
    assert "up: target v2" in ok(stack.root, "status", "--against", "v2").out
