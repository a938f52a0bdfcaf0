"""`verify --image`: the example stack's overlays checked inside real OCI images served by the test
registry on 127.0.0.1 (bearer-token auth, as real registries do).

The images are built here from the real vllm 0.32.0 and amd-aiter wheel files (the shared store)
under the install root: several layers (gzip and zstd), one whiteout, an older copy of an overlaid
file in a lower layer that the upper one replaces, and a bottom layer nothing needs (never read).
Variants change one overlaid file, delete one with a whiteout, or hide one with an opaque
directory.
"""
from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import shutil
import tarfile
import tracemalloc

import pytest
import zstandard

from helpers.cli import run_cli
from helpers.deploy import example_stack
from helpers.env import SHARED_CACHE
from patchforge.formats.schemas import validation_errors
from patchforge.net.http import HttpClient
from patchforge.net.registry import RegistryClient
from patchforge.ops.deploy import verify_image
from patchforge.project import Project

REPO = "vllm/vllm-openai-rocm"
ROOT = "usr/local/lib/python3.12/dist-packages"
TAR_GZ = "application/vnd.oci.image.layer.v1.tar+gzip"
TAR_ZSTD = "application/vnd.oci.image.layer.v1.tar+zstd"


def _tar(files: dict[str, bytes | None], *, dirs: tuple[str, ...] = (),
         links: dict[str, str] | None = None) -> bytes:
    """A layer tar: `None` content is a directory, `links` symlinks (name -> target); names as
    a builder writes them."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as archive:
        for name in dirs:
            info = tarfile.TarInfo(name)
            info.type, info.mode = tarfile.DIRTYPE, 0o755
            archive.addfile(info)
        for name, target in (links or {}).items():
            info = tarfile.TarInfo(name)
            info.type, info.linkname, info.mode = tarfile.SYMTYPE, target, 0o777
            archive.addfile(info)
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(data or b""), 0o644, 1700000000
            archive.addfile(info, io.BytesIO(data or b""))
    return out.getvalue()


def _layer(tar: bytes, kind: str) -> tuple[bytes, str, str]:
    diff_id = "sha256:" + hashlib.sha256(tar).hexdigest()
    if kind == "zstd":
        return zstandard.ZstdCompressor(level=3).compress(tar), TAR_ZSTD, diff_id
    return gzip.compress(tar, compresslevel=1, mtime=0), TAR_GZ, diff_id


def _parents(paths) -> tuple[str, ...]:
    out = set()
    for path in paths:
        parts = path.split("/")[:-1]
        out.update("/".join(parts[:i]) + "/" for i in range(1, len(parts) + 1))
    return tuple(sorted(out))


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    """A copy of the example stack with its overlays generated, and the pre-images it records."""
    from patchforge.store.gitstore import UpstreamStore
    root = example_stack(tmp_path_factory.mktemp("stack"))
    manifest = json.loads((root / "overlays" / "manifest.json").read_bytes())
    store = UpstreamStore.open(SHARED_CACHE)
    try:
        bases = {}
        neighbours = {}
        for entry in manifest["overlays"]:
            target = entry["target"].lstrip("/")
            bases[target] = store.read_blobs(entry["base_commit"], [entry["path"]])[entry["path"]]
            assert hashlib.sha256(bases[target]).hexdigest() == entry["base_sha256"]
        # Real neighbours of the overlaid files: the rest of vllm/v1/attention/ops/.
        vllm = manifest["upstreams"]["vllm"]["commit"]
        names = store.list_paths(vllm, "vllm/v1/attention/ops/")
        assert len(names) > 5
        for path, data in store.read_blobs(vllm, names).items():
            if data is not None:
                neighbours[f"{ROOT}/{path}"] = data
    finally:
        store.close()
    return root, bases, neighbours


@pytest.fixture
def images(stack, registry_server):
    """Push the good image and its variants; every request needs a bearer token."""
    root, bases, neighbours = stack
    registry_server.auth_required = True
    rocm = f"{ROOT}/vllm/platforms/rocm.py"
    sparse = f"{ROOT}/vllm/v1/attention/ops/rocm_aiter_mla_sparse.py"
    assert rocm in bases and sparse in bases
    # Bottom: something large that no overlay needs (an OS layer): never read.
    os_layer = _layer(_tar({"usr/lib/libhuge.so": os.urandom(1 << 20)}, dirs=("usr/", "usr/lib/")),
                      "gzip")
    # An older build of the package: a stale rocm.py and a file a later layer deletes.
    stale = {**neighbours, rocm: bases[rocm].replace(b"import", b"import  ", 1),
             f"{ROOT}/vllm/stale_build_marker.py": b"# removed later\n"}
    old = _layer(_tar(stale, dirs=_parents(stale)), "gzip")
    # The install: every pre-image as the wheel has it, zstd-compressed, plus a large data file
    # (so that holding the layer in memory would show).
    install = {**bases, f"{ROOT}/vllm/data/blob.bin": os.urandom(24 << 20)}
    new = _layer(_tar(install, dirs=_parents(install)), "zstd")
    cleanup = _layer(_tar({f"{ROOT}/vllm/.wh.stale_build_marker.py": b""}), "gzip")
    good = registry_server.push_image(REPO, "good", {}, layers=(os_layer, old, new, cleanup))
    changed = _layer(_tar({rocm: bases[rocm] + b"# a newer nightly\n"}), "gzip")
    moved = registry_server.push_image(REPO, "moved", {},
                                       layers=(os_layer, old, new, cleanup, changed))
    removed = _layer(_tar({sparse.rsplit("/", 1)[0] + "/.wh." + sparse.rsplit("/", 1)[1]: b""}),
                     "gzip")
    deleted = registry_server.push_image(REPO, "deleted", {}, layers=(os_layer, old, new, removed))
    opaque = _layer(_tar({sparse.rsplit("/", 1)[0] + "/.wh..wh..opq": b""}), "gzip")
    hidden = registry_server.push_image(REPO, "hidden", {}, layers=(os_layer, old, new, opaque))
    return {"root": root, "host": registry_server.host, "good": good, "moved": moved,
            "good_layers": (os_layer, old, new, cleanup),
            "deleted": deleted, "hidden": hidden, "os_layer": os_layer, "old": old,
            "rocm": "/" + rocm, "sparse": "/" + sparse, "server": registry_server}


def _registry(tmp_path):
    return RegistryClient(HttpClient(tmp_path / "cache", sleep=lambda s: None))


def _by_target(result):
    return {f.target: f for f in result.files}


def test_good_image_every_pre_image_matches_streamed_top_down(images, tmp_path):
    project = Project.discover(images["root"])
    ref = f"{images['host']}/{REPO}:good"
    result = verify_image(project, ref, registry=_registry(tmp_path))
    tracemalloc.start()  # a second run, its imports done: what reading the layers costs
    try:
        again = verify_image(project, ref, registry=_registry(tmp_path))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert again == result
    assert result.ok, [(f.target, f.state, f.detail) for f in result.files]
    assert result.digest == images["good"]["digest"] and not result.pinned
    manifest = json.loads((images["root"] / "overlays" / "manifest.json").read_bytes())
    assert {f.target for f in result.files} == {e["target"] for e in manifest["overlays"]}
    # The zstd install layer (24 MB) was streamed, not held: peak memory stays far below it.
    assert peak < 4 << 20, peak
    # Top down, stopping once every file is decided: the old build and the OS layer are never
    # fetched (the stale rocm.py below is correctly shadowed without being read).
    assert (result.layers_total, result.layers_read) == (4, 2)
    fetched = {p.rsplit("/", 1)[1] for p in images["server"].paths("GET") if "/blobs/" in p}
    for skipped in (images["os_layer"], images["old"]):
        assert "sha256:" + hashlib.sha256(skipped[0]).hexdigest() not in fetched
    # Bearer flow: the realm was asked for this repository's pull scope.
    token_requests = images["server"].token_server.requests
    assert token_requests and f"scope=repository%3A{REPO.replace('/', '%2F')}%3Apull" in \
        token_requests[0].path


def test_moved_image_reports_the_changed_file_and_exits_1(images):
    root = images["root"]
    result = run_cli(root, "verify", "--image", f"{images['host']}/{REPO}:moved", "--json")
    assert result.rc == 1, result.err
    doc = json.loads(result.out)
    assert validation_errors(doc, "verify-image") == []
    states = {r["target"]: r["state"] for r in doc["results"]}
    assert states.pop(images["rocm"]) == "mismatch"
    assert set(states.values()) == {"ok"}
    assert doc["digest"] == images["moved"]["digest"] and doc["ok"] is False
    result = run_cli(root, "verify", "--image", f"{images['host']}/{REPO}:moved",
                     "--profile", "gfx950")
    assert result.rc == 1 and "mismatch" in result.out and "rocm.py" in result.out
    # What next, as verify --installed says it: deploy the pinned image, or move the series.
    resolved = f"{images['host']}/{REPO}@{images['moved']['digest']}"
    assert "hint: mounted on this image, an overlay would undo the image's changes" in result.err
    assert f"`patchforge rebase --to vllm={resolved}`" in result.err, result.err
    result = run_cli(root, "verify", "--image", f"{images['host']}/{REPO}:deleted")
    assert result.rc == 1 and "hint: the image has no file where an overlay is mounted" \
        in result.err, result.err


def test_an_image_that_already_holds_the_overlays_is_ok_not_a_mismatch(images, tmp_path):
    """An image built with the overlays baked in (the Dockerfile `overlays` writes): every
    file was "not the pre-image this overlay was made for", exit 1, with a hint to rebase.
    A file that is the overlay itself is ok, and says so; one that is neither still is not."""
    root = images["root"]
    manifest = json.loads((root / "overlays" / "manifest.json").read_bytes())
    entries = [e for e in manifest["overlays"] if e.get("profile") == "gfx942"]
    baked = {e["target"].lstrip("/"): (root / "overlays" / e["file"]).read_bytes()
             for e in entries}
    layer = _layer(_tar(baked), "gzip")
    pushed = images["server"].push_image(REPO, "baked", {}, layers=(
        images["os_layer"], images["old"], *images["good_layers"][2:], layer))
    ref = f"{images['host']}/{REPO}:baked"
    result = verify_image(Project.discover(root), ref, profile="gfx942",
                          registry=_registry(tmp_path))
    assert result.ok and result.digest == pushed["digest"], \
        [(f.target, f.state, f.detail) for f in result.files]
    assert {f.detail for f in result.files} == {"already holds this overlay (baked in)"}
    run = run_cli(root, "verify", "--image", ref, "--profile", "gfx950")
    assert run.rc == 1 and "mismatch" in run.out, run.out  # gfx950's overlays are not these
    # Said as what it is, gfx942's overlay (it said "not the pre-image", and to rebase).
    assert "the image's file is the gfx942 overlay of this series (baked in), not the " \
        "pre-image this gfx950 overlay is made for: `--profile gfx942` checks that deployment" \
        in " ".join(run.out.split()), run.out
    assert f"hint: the image holds gfx942's overlays: `patchforge verify --image " \
        f"{images['host']}/{REPO}@{pushed['digest']} --profile gfx942`" in run.err, run.err
    assert "rebase" not in run.err, run.err


@pytest.mark.parametrize("tag, detail", [("deleted", "whiteout"), ("hidden", "opaque")])
def test_whiteout_and_opaque_directory_hide_the_pre_image(images, tmp_path, tag, detail):
    project = Project.discover(images["root"])
    result = verify_image(project, f"{images['host']}/{REPO}:{tag}", profile="gfx942",
                          registry=_registry(tmp_path))
    files = _by_target(result)
    assert files[images["sparse"]].state == "missing" and detail in files[images["sparse"]].detail
    assert all(f.state == "ok" for t, f in files.items() if t != images["sparse"])


def test_a_directory_whited_out_and_made_again_in_one_layer_holds_nothing_from_below(
        images):
    """A layer that whites out a directory (`.wh.ops`) and makes it again (`ops/`, with files
    of its own), in the order the OCI image spec asks builders for: the whiteout deletes what
    the layers below hold, so the container's ops/ holds only this layer's files. The reader
    took the directory entry for an undoing of the whiteout and read the lower layer's file,
    the pre-image, as there: verify --image said ok, exit 0, for an image without the file."""
    sparse = images["sparse"].lstrip("/")
    ops = sparse.rsplit("/", 1)[0]
    parent, name = ops.rsplit("/", 1)
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as archive:
        whiteout = tarfile.TarInfo(f"{parent}/.wh.{name}")
        archive.addfile(whiteout, io.BytesIO(b""))
        again = tarfile.TarInfo(ops + "/")
        again.type, again.mode = tarfile.DIRTYPE, 0o755
        archive.addfile(again)
        kept = tarfile.TarInfo(f"{ops}/__init__.py")
        archive.addfile(kept, io.BytesIO(b""))
    remade = _layer(out.getvalue(), "gzip")
    images["server"].push_image(REPO, "remade", {}, layers=(*images["good_layers"], remade))
    run = run_cli(images["root"], "verify", "--image", f"{images['host']}/{REPO}:remade",
                  "--profile", "gfx942", "--json")
    assert run.rc == 1, (run.out, run.err)
    rows = {r["target"]: r for r in json.loads(run.out)["results"]}
    assert rows[images["sparse"]]["state"] == "missing", rows[images["sparse"]]
    assert "made again there, without what the layers below held" in \
        rows[images["sparse"]]["detail"], rows[images["sparse"]]
    outside = {t: r["state"] for t, r in rows.items() if not t.startswith("/" + ops + "/")}
    assert outside and set(outside.values()) == {"ok"}, outside


def test_a_hard_link_names_its_target_as_the_layer_had_it_at_the_link(images, stack):
    """A layer holding `copy` (another content), the overlaid file as a hard link to `copy`,
    then `copy` again (the pre-image): tar, and a container runtime, give the link the content
    `copy` had at the link, not the pre-image written after it. The reader took the last
    entry of `copy` and said ok, exit 0, for an image whose file is not the pre-image."""
    _, bases, _ = stack
    rocm = images["rocm"].lstrip("/")
    copy = rocm.rsplit("/", 1)[0] + "/.rocm.py.copy"
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as archive:
        for name, data in ((copy, b"# not the pre-image\n"), (rocm, None), (copy, bases[rocm])):
            info = tarfile.TarInfo(name)
            if data is None:
                info.type, info.linkname = tarfile.LNKTYPE, copy
                archive.addfile(info)
            else:
                info.size, info.mode = len(data), 0o644
                archive.addfile(info, io.BytesIO(data))
    linked = _layer(out.getvalue(), "gzip")
    images["server"].push_image(REPO, "linked", {}, layers=(*images["good_layers"], linked))
    run = run_cli(images["root"], "verify", "--image", f"{images['host']}/{REPO}:linked",
                  "--profile", "gfx942", "--json")
    assert run.rc == 1, (run.out, run.err)
    rows = {r["target"]: r for r in json.loads(run.out)["results"]}
    assert rows[images["rocm"]]["state"] == "mismatch", rows[images["rocm"]]
    assert {r["state"] for t, r in rows.items() if t != images["rocm"]} == {"ok"}, rows


def test_a_tag_that_moved_off_the_pin_is_read_as_it_names_now_and_fails(images, tmp_path):
    """`verify --image REPO:nightly`, the tag upstream.lock pins, read the pinned digest and
    answered "ok" for an image the tag no longer named: a deployment pulling the tag ran the
    moved image, whose files are not the overlays' pre-images, while the check exited 0. The
    tag is read as it names now; moved off the pin it fails (exit 1) and says both digests,
    even where every file would pass. `--image` without REF reads the pin, as before."""
    root = images["root"]
    lock = json.loads((root / "upstream.lock").read_bytes())
    ref = f"{images['host']}/{REPO}:nightly"
    good, moved = images["good"]["digest"], images["moved"]["digest"]
    lock["image"] = {"reference": ref, "tag": "nightly", "digest": good}
    saved = (root / "upstream.lock").read_bytes()
    (root / "upstream.lock").write_text(json.dumps(lock, indent=2, sort_keys=True) + "\n")
    try:
        images["server"].tags[(REPO, "nightly")] = good
        still = verify_image(Project.discover(root), ref, registry=_registry(tmp_path))
        assert still.ok and still.digest == good and still.tag_moved is None
        assert any("names the image upstream.lock pins" in n for n in still.notes)
        images["server"].tags[(REPO, "nightly")] = moved  # the tag moved on
        result = verify_image(Project.discover(root), ref, registry=_registry(tmp_path))
        assert not result.pinned and not result.ok
        assert result.digest == moved and result.tag_moved == good
        assert any(f.state != "ok" for f in result.files)
        run = run_cli(root, "verify", "--image", ref, "--profile", "gfx942")
        assert run.rc == 1 and f"now names {moved}, not the {good}" in run.err, run.text
        # The hint names the image to deploy by the pinned digest, never by the tag that moved.
        assert f"the one upstream.lock pins, {images['host']}/{REPO}@{good})" in run.err, run.text
        as_json = run_cli(root, "verify", "--image", ref, "--profile", "gfx942", "--json")
        doc = json.loads(as_json.out)
        assert as_json.rc == 1 and not doc["ok"] and doc["digest"] == moved
        assert validation_errors(doc, "verify-image") == []
        # A moved tag whose image still holds every pre-image fails too: the lock pins another.
        images["server"].tags[(REPO, "nightly")] = images["good"]["digest"]
        lock["image"]["digest"] = moved
        (root / "upstream.lock").write_text(json.dumps(lock, indent=2, sort_keys=True) + "\n")
        files_ok = run_cli(root, "verify", "--image", ref, "--profile", "gfx942")
        assert files_ok.rc == 1 and "deploy the pinned image" in files_ok.err, files_ok.text
        lock["image"]["digest"] = good
        (root / "upstream.lock").write_text(json.dumps(lock, indent=2, sort_keys=True) + "\n")
        # `--image` without REF: the pinned image.
        images["server"].tags[(REPO, "nightly")] = moved
        pinned = run_cli(root, "verify", "--image", "--profile", "gfx942", "--json")
        assert pinned.rc == 0, pinned.err
        doc = json.loads(pinned.out)
        assert doc["pinned"] and doc["digest"] == good
        assert doc["resolved"] == f"{images['host']}/{REPO}@{good}"
        unpinned = verify_image(Project.discover(root), f"{images['host']}/{REPO}:moved",
                                registry=_registry(tmp_path))
        assert not unpinned.pinned and not unpinned.ok
    finally:
        (root / "upstream.lock").write_bytes(saved)


def _landed_fix(root, path: str, pinned: bytes) -> bytes:
    """A fix kept under series/vllm/upstreamed/ (dropped as landed): its change made the last
    line of `path` what the pinned upstream has. Returns the file as it was before the fix."""
    import difflib

    last = pinned.splitlines(True)[-1]
    before = pinned[:-len(last)] + b"# before the fix\n"
    diff = b"".join(difflib.diff_bytes(difflib.unified_diff, before.splitlines(True),
                                       pinned.splitlines(True), b"a/" + path.encode(),
                                       b"b/" + path.encode()))
    kept = root / "series/vllm/upstreamed"
    kept.mkdir(parents=True)
    (kept / "landed-fix.patch").write_bytes(
        b"Description: the fix that landed\nUpstream-Status: Accepted\n"
        b"Applied-Upstream: https://github.com/vllm-project/vllm/pull/1\n\n---\n"
        + f"diff --git a/{path} b/{path}\n".encode() + diff)
    return before


def test_a_fix_dropped_as_landed_is_checked_in_an_image_the_lock_does_not_pin(
        stack, images, tmp_path, shared_cache, monkeypatch):
    """A fix dropped as landed upstream has no overlay: the image must hold it itself. Against
    an image upstream.lock does not pin, verify --image never looked at its file, so an image
    with the file as it was before the fix passed, exit 0. Its file is now checked to be the
    upstream's at the pin (a row, `landed`), or another version with the fix's change in it;
    an image without it fails (exit 1) with a hint, as one whose file cannot tell;
    the fixes are said one by one; the pinned image is read for them as any other; and where the
    store cannot give the pinned file, the run says what it did not check."""
    import shutil

    _, bases, neighbours = stack
    root = tmp_path / "stack"
    shutil.copytree(images["root"], root)
    target = next(t for t in sorted(neighbours) if t not in bases and neighbours[t].endswith(b"\n"))
    path = target.removeprefix(ROOT + "/")
    before = _landed_fix(root, path, neighbours[target])
    server = images["server"]
    stale = server.push_image(REPO, "stale", {}, layers=(*images["good_layers"], _layer(
        _tar({target: before}), "gzip")))
    failed = run_cli(root, "verify", "--image", f"{images['host']}/{REPO}:stale")
    assert failed.rc == 1, failed.text
    assert f"/{target}" in failed.out and "with the code vllm/upstreamed/landed-fix.patch " \
        "changed as it was before: the image lacks the fix" in failed.out, failed.out
    assert "0 of 1 fixes dropped as landed upstream are in it; not: " \
        "vllm/upstreamed/landed-fix.patch" in failed.out, failed.out
    assert "the image does not hold the upstream's files where fixes dropped as landed " \
        "changed them" in failed.err and f"--to vllm={images['host']}/{REPO}@" \
        f"{stale['digest']}" in failed.err, failed.err
    # The landed file's layer read again for its bytes is no link followed; and with no image
    # pinned, the hint names what the overlays were made for, not "the one upstream.lock pins".
    assert "to follow links" not in failed.out and \
        "1 read again for the files of fixes dropped as landed" in failed.out, failed.out
    assert "(the one upstream.lock pins" not in failed.err and "upstream.lock pins no image; " \
        "`patchforge rebase --to NAME=REPO:TAG` pins one" in failed.err, failed.err
    good = run_cli(root, "verify", "--image", f"{images['host']}/{REPO}:good", "--json")
    assert good.rc == 0, good.text
    doc = json.loads(good.out)
    assert validation_errors(doc, "verify-image") == []
    row = next(r for r in doc["results"] if r["target"] == "/" + target)
    assert row["state"] == "ok" and row["landed"] == ["vllm/upstreamed/landed-fix.patch"]
    fixes = {(f["where"], f["name"]): f["state"] for f in doc["fixes"]}
    assert fixes.pop(("upstreamed", "landed-fix.patch")) == "ok"
    assert fixes and set(fixes.values()) == {"ok"} and {w for w, _ in fixes} == {"series"}
    text = run_cli(root, "verify", "--image", f"{images['host']}/{REPO}:good")
    assert "1 of 1 fixes dropped as landed upstream are in it" in text.out, text.out
    # Another version of the file: its bytes say whether the fix's change is in it.
    newer = neighbours[target].replace(b"\n", b"\n# a newer nightly's line\n", 1)
    rewritten = neighbours[target][:-len(neighbours[target].splitlines(True)[-1])] + \
        b"# the fixed line, rewritten upstream since\n"
    for tag, data, rc, said in (
            ("newer", newer, 0, "another version than the upstream's at the pin"),
            ("rewritten", rewritten, 1, "whether the image holds the fix cannot be told")):
        server.push_image(REPO, tag, {}, layers=(*images["good_layers"], _layer(
            _tar({target: data}), "gzip")))
        run = run_cli(root, "verify", "--image", f"{images['host']}/{REPO}:{tag}")
        assert run.rc == rc and said in run.out, run.text
    # The image upstream.lock pins is read for them as any other: being the pin says nothing
    # of its files (it vouched "in it by the pin" for an image whose file lacked the fix).
    lock = json.loads((root / "upstream.lock").read_bytes())
    for tag, digest, ok in (("good", images["good"]["digest"], True),
                            ("stale", stale["digest"], False)):
        lock["image"] = {"reference": f"{images['host']}/{REPO}:{tag}", "tag": tag,
                         "digest": digest}
        (root / "upstream.lock").write_text(json.dumps(lock, indent=2, sort_keys=True) + "\n")
        pinned = verify_image(Project.discover(root), registry=_registry(tmp_path))
        rows = [f for f in pinned.files if f.landed]
        assert pinned.ok is ok and [f.state for f in rows] == ["ok" if ok else "mismatch"]
        assert not any("by the pin" in note for note in pinned.notes), pinned.notes
    del lock["image"]
    (root / "upstream.lock").write_text(json.dumps(lock, indent=2, sort_keys=True) + "\n")
    # A store without the pinned files (a deployment host): said, never a silent pass.
    monkeypatch.setenv("PATCHFORGE_CACHE", str(tmp_path / "empty-cache"))
    unread = run_cli(root, "verify", "--image", f"{images['host']}/{REPO}:stale", "--json")
    doc = json.loads(unread.out or "{}")
    assert unread.rc == 0 and validation_errors(doc, "verify-image") == [], unread.text
    assert any(n.startswith("NOT CHECKED: whether this image holds the fixes dropped as "
                            "landed upstream (vllm/upstreamed/landed-fix.patch)")
               for n in doc["notes"]), doc["notes"]
    assert {f["state"] for f in doc["fixes"] if f["where"] == "upstreamed"} == {"unchecked"}


def test_the_pin_is_read_as_a_rebase_writing_out_leaves_it(images, tmp_path):
    """`verify --image` read the manifest and the image pin without the project's read lock:
    beside a rebase writing out its result it could read the old pin with the new manifest.
    It waits for the write-out (saying so), reads the pin it left, and reads the image's
    layers after letting the lock go. Here the test is the write-out: it holds the lock
    exclusively while it moves the pin from the moved image to the good one."""
    import fcntl
    import subprocess
    import sys

    root = images["root"]
    ref = f"{images['host']}/{REPO}:nightly"
    images["server"].tags[(REPO, "nightly")] = images["good"]["digest"]
    saved = (root / "upstream.lock").read_bytes()
    lock = json.loads(saved)

    def pin(digest: str) -> None:
        lock["image"] = {"reference": ref, "tag": "nightly", "digest": digest}
        (root / "upstream.lock").write_text(json.dumps(lock, indent=2, sort_keys=True) + "\n")

    pin(images["moved"]["digest"])
    writing = os.open(root, os.O_RDONLY)
    try:
        fcntl.flock(writing, fcntl.LOCK_EX)
        reader = subprocess.Popen([sys.executable, "-m", "patchforge", "--root", str(root),
                                   "verify", "--image", "--profile", "gfx942", "--json"],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            first = reader.stderr.readline().decode()
            pin(images["good"]["digest"])
        finally:
            os.close(writing)
        out, err = reader.communicate(timeout=300)
        assert "waiting for a command changing this project" in first, first + err.decode()
        assert reader.returncode == 0, err.decode()
        doc = json.loads(out)
        assert doc["pinned"] and doc["digest"] == images["good"]["digest"], doc
    finally:
        (root / "upstream.lock").write_bytes(saved)


def test_corrupt_layer_is_an_error_not_a_verdict(images, tmp_path):
    server = images["server"]
    new_digest = json.loads(server.manifests[images["good"]["manifest"]][1])["layers"][2]["digest"]
    server.blobs[new_digest] = server.blobs[new_digest][:-1] + b"\0"
    result = run_cli(images["root"], "verify", "--image", f"{images['host']}/{REPO}:good")
    assert result.rc == 2 and new_digest in result.err, result.err


def test_layers_redirected_to_a_storage_host_get_no_token(images, tmp_path):
    """Registries send blob downloads to a storage host: the bearer token stays behind."""
    from helpers.servers import StorageServer
    storage = StorageServer()
    try:
        images["server"].blob_storage = storage
        result = verify_image(Project.discover(images["root"]),
                              f"{images['host']}/{REPO}:good", registry=_registry(tmp_path))
        # The config blob and the two layers read.
        assert result.ok and len(storage.requests) == result.layers_read + 1 == 3
        assert all(r.header("authorization") is None for r in storage.requests)
        assert any((r.header("authorization") or "").startswith("Bearer ")
                   for r in images["server"].requests if "/blobs/" in r.path)
    finally:
        storage.close()


VENV = "opt/venv/lib/python3.12/site-packages"  # where a venv image really installs the package


def _symlinked_layers(bases, layout):
    """The pre-images installed under VENV, and the install root reached through symlinks as
    `layout` lays them out: (files layer(s), link layer(s)) bottom first."""
    moved = {f"{VENV}/{t[len(ROOT) + 1:]}": data for t, data in bases.items()}
    sparse = f"{VENV}/vllm/v1/attention/ops/rocm_aiter_mla_sparse.py"
    files = _tar(moved, dirs=_parents(moved))
    parent = ROOT.rsplit("/", 1)[0]  # usr/local/lib/python3.12
    if layout == "relative":  # the link in the same layer as the files it leads to
        return [_tar(moved, dirs=_parents(moved),
                     links={ROOT: "../../../../" + VENV})]
    if layout == "absolute":  # the link below, the files written through it above (merged /usr)
        return [_tar({}, dirs=_parents([ROOT]), links={ROOT: "/" + VENV}), files]
    if layout == "chain":  # python3.12 -> /opt/py, /opt/py/dist-packages -> the venv
        return [files, _tar({}, dirs=("opt/", "usr/", "usr/local/", "usr/local/lib/"),
                            links={parent: "/opt/py",
                                   "opt/py/dist-packages": "../venv/lib/python3.12/"
                                                           "site-packages"})]
    if layout == "escaping":  # more ".." than the path is deep: the kernel stops at the root
        return [files, _tar({}, links={ROOT: "../" * 12 + VENV})]
    if layout == "loop":
        return [files, _tar({}, links={ROOT: "/opt/a", "opt/a": "../" + ROOT})]
    if layout == "replaced":  # a later layer made a real (empty) directory where the link was
        return [files, _tar({}, links={ROOT: "/" + VENV}), _tar({}, dirs=(ROOT + "/",))]
    if layout == "whiteout":  # a later layer deletes one file where the link leads
        return [files, _tar({}, links={ROOT: "/" + VENV}),
                _tar({sparse.rsplit("/", 1)[0] + "/.wh." + sparse.rsplit("/", 1)[1]: b""})]
    assert layout == "file-link"  # the install root a real directory, one file a symlink
    rocm = f"{ROOT}/vllm/platforms/rocm.py"
    others = {t: d for t, d in bases.items() if t != rocm}
    return [_tar({**others, "opt/real/rocm.py": bases[rocm]},
                 dirs=_parents([*others, "opt/real/rocm.py"]),
                 links={rocm: "../../../../../../../opt/real/rocm.py"})]


@pytest.mark.parametrize("layout, expect", [
    ("relative", "ok"), ("absolute", "ok"), ("chain", "ok"), ("escaping", "ok"),
    ("loop", "too many levels of symbolic links"),
    ("replaced", "replaced by a directory in layer"),
    ("whiteout", "deleted by a whiteout"), ("file-link", "ok")])
def test_a_path_through_a_symlink_in_the_image_is_read_where_the_container_reads_it(
        stack, registry_server, tmp_path, layout, expect):
    """The install root reached through symlinks (a venv linked into place, merged /usr): a
    container opens the file the links lead to, so that is the file judged. It was "missing ...
    (a symlink in layer ...)", exit 1, while verify --installed of the same tree said ok."""
    root, bases, _ = stack
    layers = tuple(_layer(t, "gzip") for t in _symlinked_layers(bases, layout))
    registry_server.push_image(REPO, layout, {}, layers=layers)
    ref = f"{registry_server.host}/{REPO}:{layout}"
    result = verify_image(Project.discover(root), ref, profile="gfx942",
                          registry=_registry(tmp_path))
    states = {f.target: (f.state, f.detail) for f in result.files}
    assert states, result
    sparse = f"/{ROOT}/vllm/v1/attention/ops/rocm_aiter_mla_sparse.py"
    if expect == "ok":
        assert result.ok, states
        rocm = states[f"/{ROOT}/vllm/platforms/rocm.py"][1]
        assert rocm.startswith("pre-image matches (read at /") and " -> " in rocm, rocm
    elif layout == "whiteout":
        state, detail = states.pop(sparse)
        assert state == "missing" and expect in detail, detail
        assert {s for s, _ in states.values()} == {"ok"}, states
    else:
        assert {s for s, _ in states.values()} == {"missing"}, states
        assert all(expect in d for _, d in states.values()), states
    run = run_cli(root, "verify", "--image", ref, "--profile", "gfx942")
    assert run.rc == (0 if expect == "ok" else 1), (run.out, run.err)
    if layout == "loop":  # said, not hung on: the links named as the kernel would follow them
        assert f"/{ROOT} -> /opt/a" in run.out and "/opt/a -> ../usr" in run.out, run.out


def test_a_fix_dropped_as_landed_is_checked_in_an_installed_tree(stack, tmp_path, shared_cache,
                                                                 monkeypatch):
    """`verify --installed DIR` (the tutorial's check of an image's files before mounting)
    looked only at the overlays' pre-images: a tree whose file of a fix dropped as landed was
    the one before the fix passed, exit 0, and the container ran without the fix, which no
    overlay carries. That file is judged now as `--image` judges it, in a root file system and
    in an install root alike; a store without the pinned files says what it did not check."""
    import shutil

    _, bases, neighbours = stack
    root = tmp_path / "stack"
    shutil.copytree(stack[0], root)
    target = next(t for t in sorted(neighbours) if t not in bases and neighbours[t].endswith(b"\n"))
    path = target.removeprefix(ROOT + "/")
    before = _landed_fix(root, path, neighbours[target])
    newer = neighbours[target].replace(b"\n", b"\n# a newer nightly's line\n", 1)

    def tree(name: str, landed_file: bytes, *, at_targets: bool):
        base = tmp_path / name
        for target_path, data in [*bases.items(), (target, landed_file)]:
            where = base / (target_path if at_targets else target_path.removeprefix(ROOT + "/"))
            where.parent.mkdir(parents=True, exist_ok=True)
            where.write_bytes(data)
        return base

    for at_targets in (True, False):
        kind = "rootfs" if at_targets else "site"
        stale = tree(f"{kind}-stale", before, at_targets=at_targets)
        failed = run_cli(root, "verify", "--installed", str(stale))
        assert failed.rc == 1, failed.text
        assert "with the code vllm/upstreamed/landed-fix.patch changed as it was before: " \
            f"{stale} lacks the fix" in failed.out, failed.out
        for name, data in (("pinned", neighbours[target]), ("newer", newer)):
            good = run_cli(root, "verify", "--installed",
                           str(tree(f"{kind}-{name}", data, at_targets=at_targets)), "--json")
            doc = json.loads(good.out)
            assert good.rc == 0 and validation_errors(doc, "verify") == [], good.text
            rows = [r for r in doc["results"] if r["path"].endswith(path)]
            assert [r["state"] for r in rows] == ["ok"] and "landed-fix.patch" in \
                rows[0]["detail"], rows
    # The file a symlink leading out of the install root: its row said "SITE has SITE/x is a
    # symlink to ...: what it reads ... is not known here (...) here, not the upstream's at
    # the pin ...", two sentences pasted into one; now what is there, then what was expected.
    linked = tree("site-linked", neighbours[target], at_targets=False)
    elsewhere = tmp_path / "elsewhere.py"
    elsewhere.write_bytes(neighbours[target])
    (linked / path).unlink()
    (linked / path).symlink_to(elsewhere)
    failed = run_cli(root, "verify", "--installed", str(linked), "--json")
    rows = [r for r in json.loads(failed.out)["results"] if r["path"].endswith(path)]
    assert failed.rc == 1 and [r["state"] for r in rows] == ["mismatch"], failed.text
    assert rows[0]["detail"].startswith(f"{linked / path} is a symlink to {elsewhere}, outside "
                                        f"{linked}: "), rows
    assert "; not the upstream's at the pin (" in rows[0]["detail"], rows
    assert f"{linked} has " not in rows[0]["detail"], rows
    # A store without the pinned files (a deployment host): said, never a silent pass.
    monkeypatch.setenv("PATCHFORGE_CACHE", str(tmp_path / "empty-cache"))
    unread = run_cli(root, "verify", "--installed", str(tmp_path / "rootfs-stale"), "--json")
    doc = json.loads(unread.out or "{}")
    assert unread.rc == 0 and validation_errors(doc, "verify") == [], unread.text
    assert any(n.startswith(f"NOT CHECKED: whether {tmp_path / 'rootfs-stale'} holds the fixes "
                            "dropped as landed upstream (vllm/upstreamed/landed-fix.patch)")
               for n in doc["notes"]), doc


def test_a_fix_upstream_reverted_at_the_pin_is_not_vouched_for_by_the_pins_file(
        tmp_path, registry_server):
    """A fix kept under upstreamed/ that upstream reverted at the pin: the pinned revision's
    file lacks it and nothing overlays it. `verify --installed` and `verify --image` said of
    that very file "ok ..., landed there" and exited 0, while `status` said the fix was
    reverted. Now each fails (exit 1) naming the revert and `bring-back`; a file that holds
    the fix's change is still ok."""
    from helpers.git import git
    from helpers.project import OneUpstreamStack

    base = b"".join(b"line %d of the module\n" % i for i in range(1, 31))
    fixed = base.replace(b"line 5 of the module\n", b"five = compute_it_properly()\n")
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": base, "pkg/b.py": b"b = 1\n"})
    stack.add_fix("fa", "pkg/a.py", base, fixed)
    landing = stack.commit({"pkg/a.py": fixed}, "Compute it properly (#11)", tag="v2")
    stack.cli("rebase", "--to", "v2")
    assert (stack.root / "series/up/upstreamed/fa.patch").is_file()
    git(stack.up, "revert", "--no-edit", landing)
    git(stack.up, "tag", "v3")
    _, out, _ = stack.cli("rebase", "--to", "v3", expect=1)
    assert "reverted upstream (needs attention)" in out, out
    stack.cli("overlays", expect=1)  # (its Dockerfile fails its build: said)
    for name, a_py, rc in (("pinned", base, 1), ("holding-the-fix", fixed, 0)):
        site = tmp_path / name
        (site / "pkg").mkdir(parents=True)
        (site / "pkg/a.py").write_bytes(a_py)
        (site / "pkg/b.py").write_bytes(b"b = 1\n")
        _, out, _ = stack.cli("verify", "--installed", str(site), expect=rc)
        files = {"opt/site/pkg/a.py": a_py, "opt/site/pkg/b.py": b"b = 1\n"}
        registry_server.push_image("team/up", name, {}, layers=(
            _layer(_tar(files, dirs=_parents(files)), "gzip"),))
        _, image_out, err = stack.cli("verify", "--image",
                                      f"{registry_server.host}/team/up:{name}", expect=rc)
        for said in (out, image_out):
            if rc:
                assert "landed there" not in said and "which lacks the fix" in said and \
                    "`patchforge bring-back up/fa.patch`" in said, said
            else:
                assert "with the change of up/upstreamed/fa.patch in it" in said, said
        if rc:
            assert "0 of 1 fixes dropped as landed upstream are in it" in image_out, image_out
            assert "upstream took out at the locked revision fixes dropped as landed " \
                "(up/fa.patch)" in err and "rebase --to" not in err, err


def test_a_fix_upstream_reverted_at_the_pin_fails_where_its_overlay_lacks_it(
        tmp_path, registry_server):
    """The same revert, in a file another fix of the series overlays: the overlay is the pin's
    file with that other fix only. `verify --image` of an image holding the pin's file (the
    overlay's pre-image) said every file and fix ok and exited 0; it now fails the file and the
    fix, naming `bring-back`. Once another patch makes the fix's change again, the overlay holds
    it, and the same image passes."""
    from helpers.project import OneUpstreamStack

    base = b"".join(b"a line %d\n" % i for i in range(1, 31))
    fixed = base.replace(b"a line 5\n", b"a line 5, fixed\n")
    both = fixed.replace(b"a line 25\n", b"a line 25, fixed c\n")
    only_c = base.replace(b"a line 25\n", b"a line 25, fixed c\n")
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": base})
    stack.add_fix("fa", "pkg/a.py", base, fixed)
    stack.add_fix("fc", "pkg/a.py", fixed, both)
    _, out, _ = stack.landed_then_reverted("pkg/a.py", base, fixed, ["fc.patch"])
    assert "reverted upstream (needs attention)" in out, out
    files = {"opt/site/pkg/a.py": base}
    registry_server.push_image("team/up", "pinned", {}, layers=(
        _layer(_tar(files, dirs=_parents(files)), "gzip"),))
    ref = f"{registry_server.host}/team/up:pinned"
    _, out, err = stack.cli("verify", "--image", ref, expect=1)
    assert "which lacks the fix" in out and "`patchforge bring-back up/fa.patch`" in out, out
    assert "0 of 1 fixes dropped as landed upstream are in it" in out, out
    assert "(up/fa.patch)" in err, err
    stack.add_fix("fd", "pkg/a.py", only_c, both)
    stack.cli("overlays")
    assert (stack.root / "overlays/up/pkg/a.py").read_bytes() == both
    _, out, _ = stack.cli("verify", "--image", ref, expect=0)
    assert "bring-back" not in out, out


def test_the_pinned_image_whose_file_is_not_the_upstreams_is_not_sent_to_itself(
        tmp_path, registry_server):
    """An image whose label names the pinned revision but whose file is another (a re-spin, a
    build carrying a change of its own), pinned by `rebase --to`: `verify --image` said its
    file was one "the upstream moved under", and its hint said to deploy the image upstream.lock
    pins, or to `rebase --to` this one: the very image and move just made. It now says the
    pinned image changed the upstream's file, and names the ways out that are left."""
    from helpers.project import OneUpstreamStack

    base = b"".join(b"a line %d\n" % i for i in range(1, 21))
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": base, "pkg/b.py": b"b = 1\n"})
    stack.add_fix("fa", "pkg/a.py", base, base.replace(b"a line 5\n", b"a line 5, fixed\n"))
    files = {"opt/site/pkg/a.py": base + b"# the image's own change\n",
             "opt/site/pkg/b.py": b"b = 1\n"}
    registry_server.push_image("team/up", "respin", {"org.opencontainers.image.revision":
                                                     stack.base}, layers=(
        _layer(_tar(files, dirs=_parents(files)), "gzip"),))
    ref = f"{registry_server.host}/team/up:respin"
    stack.cli("rebase", "--to", f"up={ref}")
    stack.cli("overlays")
    digest = stack.lock()["image"]["digest"]
    for args in ((), (ref,)):
        _, out, err = stack.cli("verify", "--image", *args, expect=1)
        assert "the pinned image is not the upstream's file at the pinned revision" in out and \
            "the upstream moved under the overlay" not in out, out
        assert "the image upstream.lock pins does not hold the upstream's files at the " \
            "revision the overlays were made from" in err, err
        assert "rebase --to" not in err and f"pins, {registry_server.host}/team/up@{digest})" \
            not in err, err
    # Another image, not the pin, is still sent to the pin or to a move onto it.
    registry_server.push_image("team/up", "other", {}, layers=(
        _layer(_tar(files, dirs=_parents(files)), "gzip"),
        _layer(_tar({"opt/site/pkg/b.py": b"b = 2\n"}), "gzip")))
    _, out, err = stack.cli("verify", "--image", f"{registry_server.host}/team/up:other",
                            expect=1)
    assert f"deploy the image the overlays were made for (the one upstream.lock pins, " \
        f"{registry_server.host}/team/up@{digest})" in err and "rebase --to up=" in err, err


def test_an_image_verified_while_a_fix_is_set_aside_is_not_green(images, tmp_path):
    """A stack whose rebase set a fix aside (`rebase --skip`: its patch under skipped/, in no
    overlay), cloned in CI: plain `verify` names the fix and exits 1, but `verify --image` read
    every overlay's pre-image in the image as `ok` and exited 0, so a deployment gated on it
    went out without the fix. The fix is a `missing` row of its own, exit 1 (`--json`: "ok"
    false, a note naming it; `--format github`: an error annotation), and the image is green
    again once the fix is brought back or deleted."""
    root = tmp_path / "stack"
    shutil.copytree(images["root"], root, symlinks=True)
    aside = root / "series/vllm/skipped/rocm-disable-rccl-ras-thread-old.patch"
    aside.parent.mkdir()
    aside.write_bytes((root / "series/vllm/rocm-disable-rccl-ras-thread.patch").read_bytes())
    ref = f"{images['host']}/{REPO}:good"
    shown = run_cli(root, "verify", "--image", ref)
    assert shown.rc == 1, shown.text
    row = next(line for line in shown.out.splitlines() if "skipped/" in line)
    assert row.startswith("missing") and \
        "bring-back rocm-disable-rccl-ras-thread-old" in row, shown.out
    document = run_cli(root, "verify", "--image", ref, "--json")
    assert document.rc == 1
    doc = json.loads(document.out)
    assert validation_errors(doc, "verify-image") == []
    assert doc["ok"] is False and all(r["state"] == "ok" for r in doc["results"])
    assert any("skipped/rocm-disable-rccl-ras-thread-old.patch" in note
               for note in doc["notes"]), doc["notes"]
    aside.unlink()  # the user's decision (what `delete` does): green again
    assert run_cli(root, "verify", "--image", ref).rc == 0


def test_an_image_verified_while_a_fix_is_not_in_the_series_is_refused(images, tmp_path):
    """A series edited by hand that lost a fix's line (its patch file still in series/vllm/):
    every pre-image in the image matched and `verify --image` exited 0, so a deployment gated
    on it went out without the fix, where plain `verify` refused. It refuses as plain `verify`
    does, exit 2, naming the file, before the registry is asked; listed again, green."""
    root = tmp_path / "stack"
    shutil.copytree(images["root"], root, symlinks=True)
    series = root / "series/vllm/series"
    listed = series.read_bytes()
    assert b"rocm-disable-rccl-ras-thread.patch\n" in listed
    series.write_bytes(listed.replace(b"rocm-disable-rccl-ras-thread.patch\n", b""))
    ref = f"{images['host']}/{REPO}:good"
    asked = len(images["server"].requests)
    for extra in ((), ("--json",)):
        shown = run_cli(root, "verify", "--image", ref, *extra)
        assert shown.rc == 2, shown.text
        assert "series/vllm/rocm-disable-rccl-ras-thread.patch: not listed in " \
            "series/vllm/series" in shown.err, shown.err
        assert shown.err == run_cli(root, "verify").err
    assert len(images["server"].requests) == asked
    series.write_bytes(listed)
    assert run_cli(root, "verify", "--image", ref).rc == 0


def test_another_image_of_the_pinned_revision_is_not_sent_to_a_move_onto_itself(
        tmp_path, registry_server):
    """An image whose label names the revision the series is pinned at, whose file is another
    (a re-spin, a build with a change of its own), and which is not the image upstream.lock
    pins: `verify --image` said the upstream "moved under the overlay" and hinted `rebase --to`
    this image; followed, the move changed nothing but the pinned image (same revision, the
    same overlays), and `verify --image` failed again. It now says the image's labels name the
    pinned revision and the image changed the file, and hints the ways that help; an image of
    another revision is hinted the move as before."""
    import re

    from helpers.project import OneUpstreamStack

    base = b"".join(b"a line %d\n" % i for i in range(1, 21))
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": base, "pkg/b.py": b"b = 1\n"})
    stack.add_fix("fa", "pkg/a.py", base, base.replace(b"a line 5\n", b"a line 5, fixed\n"))
    stack.cli("overlays")
    respun = {"opt/site/pkg/a.py": base + b"# the image's own change\n",
              "opt/site/pkg/b.py": b"b = 1\n"}
    registry_server.push_image("team/up", "respin", {"org.opencontainers.image.revision":
                                                     stack.base}, layers=(
        _layer(_tar(respun, dirs=_parents(respun)), "gzip"),))
    ref = f"{registry_server.host}/team/up:respin"
    _, out, err = stack.cli("verify", "--image", ref, expect=1)
    assert f"the image's labels name the pinned revision, up {stack.base[:12]}" in out and \
        "the upstream moved under the overlay" not in out, out
    assert "a move of the series to it would make the same overlays" in err, err
    # No move onto this image is hinted (followed, it made the same overlays, and the check
    # failed again).
    assert re.findall(r"`patchforge rebase --to up=[^`]*`", err) == [], err
    # An image of another revision (no label naming the pin) is sent to the move as before.
    registry_server.push_image("team/up", "other", {"org.opencontainers.image.revision":
                                                    "0123456789abcdef0123456789abcdef01234567"},
                               layers=(_layer(_tar(respun, dirs=_parents(respun)), "gzip"),))
    _, out, err = stack.cli("verify", "--image", f"{registry_server.host}/team/up:other",
                            expect=1)
    assert "the upstream moved under the overlay" in out and "rebase --to up=" in err, (out, err)


def test_a_layer_gzipped_in_several_members_is_read_to_its_last_file(images):
    """A gzip layer may be several gzip members one after the other (eStargz compresses each
    file on its own; `cat a.gz b.gz` is one gzip stream to gunzip and to a container runtime).
    Only the first member was read: a file in a later one was unseen, the layer below decided
    it, and an image whose overlaid file the top layer changed passed as ok."""
    rocm = images["rocm"].lstrip("/")
    tar = _tar({"etc/first-member": b"x\n", rocm: b"# not the pre-image\n"})
    first = tar.index(b"x\n") // 512 * 512 + 512  # the end of the first file's data block
    members = gzip.compress(tar[:first], mtime=0) + gzip.compress(tar[first:], mtime=0)
    diff_id = "sha256:" + hashlib.sha256(tar).hexdigest()
    assert gzip.decompress(members) == tar
    _top_layer_changes_the_rocm_file_alone(images, "members", (members, TAR_GZ, diff_id))


def _top_layer_changes_the_rocm_file_alone(images, tag: str, layer) -> None:
    """Pushed as `tag` over the good layers, `layer` makes `verify --image` find the ROCm
    overlay's file changed (exit 1) and every other file as the overlays were made for."""
    images["server"].push_image(REPO, tag, {}, layers=(*images["good_layers"], layer))
    result = run_cli(images["root"], "verify", "--image", f"{images['host']}/{REPO}:{tag}",
                     "--json")
    assert result.rc == 1, result.out + result.err
    states = {r["target"]: r["state"] for r in json.loads(result.out)["results"]}
    assert states.pop(images["rocm"]) == "mismatch"
    assert set(states.values()) == {"ok"}


def test_a_layer_of_many_entries_is_read_in_memory_that_does_not_grow_with_them(images,
                                                                              tmp_path):
    """Every member header of a layer read was kept (tarfile's own list): memory grew with the
    number of entries whatever their sizes: a registry's small layer of empty files (2 MB of
    gzip for 300,000 of them) cost 136 MB, and a large one all the memory there is."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as archive:
        for number in range(60_000):
            archive.addfile(tarfile.TarInfo(f"usr/share/doc/p{number // 100}/f{number:08d}"))
    tar = out.getvalue()
    many = (gzip.compress(tar, compresslevel=1, mtime=0), TAR_GZ,
            "sha256:" + hashlib.sha256(tar).hexdigest())
    images["server"].push_image(REPO, "many", {}, layers=(*images["good_layers"], many))
    project = Project.discover(images["root"])
    ref = f"{images['host']}/{REPO}:many"
    verify_image(project, ref, registry=_registry(tmp_path))  # (imports done, caches warm)
    tracemalloc.start()
    try:
        result = verify_image(project, ref, registry=_registry(tmp_path))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert result.ok, [(f.target, f.state, f.detail) for f in result.files]
    assert peak < 8 << 20, peak  # (60,000 headers kept: 27 MB)


def test_a_layer_is_decompressed_as_its_bytes_say_whatever_its_media_type(images):
    """A container runtime picks a layer's decompressor by its first bytes: a plain tar pushed
    as `tar+gzip` runs. It was refused ("not a readable ...tar+gzip", exit 2), the image
    never judged."""
    rocm = images["rocm"].lstrip("/")
    tar = _tar({rocm: b"# not the pre-image\n"})
    _top_layer_changes_the_rocm_file_alone(
        images, "plain", (tar, TAR_GZ, "sha256:" + hashlib.sha256(tar).hexdigest()))
