"""`overlays`, `overlays --check` and `verify` through the real CLI on a real git upstream:
byte-identical regeneration, sha256sum -c, the manifest schema, compose mounts, profiles,
artifacts, failures that leave overlays/ alone, drift, and installed pre-images."""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from helpers.cli import ok, run_cli, run_subprocess
from helpers.git import commit_files
from helpers.deploy import A_DIFF, B_DIFF, NEW_DIFF
from helpers.project import (UPSTREAM_FILES, add_git_upstream, add_patch_file, git_project,
                             make_project, patch_bytes)
from helpers.schemas import schema_errors
from helpers.snapshot import snapshot, tree_bytes
from helpers.upstream import Upstream

INSTALL_ROOT = "/usr/local/lib/python3.12/dist-packages"


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def write_patch(root: Path, name: str, diff: bytes, *, profiles: str | None = None) -> None:
    base = json.loads((root / "upstream.lock").read_text())["upstreams"]["up"]["commit"]
    header = (f"Description: {name}\nAuthor: T <t@example.com>\nUpstream-Status: Pending\n"
              f"Upstream: up\nBase: {base}\n" + (f"Profiles: {profiles}\n" if profiles else "")
              + "Last-Update: 2024-01-01\n\n---\n").encode()
    (root / "series/up").mkdir(parents=True, exist_ok=True)
    (root / "series/up" / f"{name}.patch").write_bytes(header + diff)
    series = root / "series/up/series"
    series.write_bytes((series.read_bytes() if series.exists() else b"") + f"{name}.patch\n".encode())


@pytest.fixture
def stack(tmp_path):
    """Two profiles; a gfx942-only patch on a.py, an all-profile patch on pkg/b.py, one that
    creates a file, and a pinned artifact."""
    root, _ = git_project(tmp_path, profiles={"gfx942": "MI300X", "gfx950": "MI355X"},
                          install_root=INSTALL_ROOT)
    text = (root / "pyproject.toml").read_text()
    (root / "pyproject.toml").write_text(
        text.replace("[tool.patchforge]\n", '[tool.patchforge]\nartifacts = ["entrypoint.sh"]\n'))
    (root / "entrypoint.sh").write_bytes(b"#!/bin/sh\nexec vllm serve\n")
    write_patch(root, "fnuz", A_DIFF, profiles="gfx942")
    write_patch(root, "all-b", B_DIFF)
    write_patch(root, "create", NEW_DIFF)
    return root


def test_a_profile_the_configuration_does_not_declare_is_refused_with_its_line(stack):
    """`Profiles: gfx924` (a typo) would leave the fix out of every profile's overlays: overlays
    refuses it, naming the patch file and the line; lint reports it; `new --profiles` and
    `import overlay --profiles` refuse such a name before writing anything."""
    root = stack
    ok(root, "overlays")
    before = tree_bytes(root / "overlays")
    patch = root / "series/up/fnuz.patch"
    patch.write_bytes(patch.read_bytes().replace(b"Profiles: gfx942\n", b"Profiles: gfx924\n"))
    for args in (["overlays"], ["overlays", "--check"]):
        run = run_cli(root, *args)
        assert run.rc == 2, run.text
        assert f"{patch}:6: Profiles names 'gfx924', which is not a configured profile " \
               "(configured: gfx942, gfx950)" in run.err
    assert tree_bytes(root / "overlays") == before
    run = run_cli(root, "lint", "--no-forge")
    assert run.rc == 1 and "Profiles names 'gfx924'" in run.out
    # status, into a pipe or a log: the whole reason, never cut mid-word; beside a profile
    # that is configured, the fix is in that one's overlays, not in none.
    run = run_cli(root, "status")
    assert run.rc == 1 and "the fix is in no profile's overlays (`overlays` refuses it)" \
        in run.out, run.out
    patch.write_bytes(patch.read_bytes().replace(b"Profiles: gfx924\n",
                                                 b"Profiles: gfx950, gfx924\n"))
    run = run_cli(root, "status")
    assert run.rc == 1 and "the fix is only in gfx950's overlays (`overlays` refuses it)" \
        in run.out, run.out
    run = run_cli(root, "new", "typo", "--profiles", "gfx942,gfx95O", "--no-edit")
    assert run.rc == 2 and "unknown profile 'gfx95O'" in run.err
    assert not (root / "series/up/typo.patch").exists()


def test_overlays_content_profiles_and_sums(stack):
    root = stack
    run = ok(root, "overlays")
    assert "wrote 5 overlay files" in run.text
    files = tree_bytes(root / "overlays")
    a_fixed = UPSTREAM_FILES["a.py"].replace(b"line3\n", b"LINE3 gfx942\n")
    b_fixed = b"x = 1\ny = 22\nz = 3\n"
    assert files["gfx942/up/a.py"] == a_fixed
    assert files["gfx942/up/pkg/b.py"] == files["gfx950/up/pkg/b.py"] == b_fixed
    assert files["gfx950/up/pkg/new.py"] == b"created = True\n"
    # No patch of gfx950 touches a.py: no overlay of it there.
    assert "gfx950/up/a.py" not in files
    assert sorted(files) == ["SHA256SUMS", "artifacts/entrypoint.sh", "gfx942/Dockerfile",
                             "gfx942/compose.yaml", "gfx942/up/a.py", "gfx942/up/pkg/b.py",
                             "gfx942/up/pkg/new.py", "gfx950/Dockerfile", "gfx950/compose.yaml",
                             "gfx950/up/pkg/b.py", "gfx950/up/pkg/new.py", "manifest.json"]
    # sha256sum -c --strict, the real one, in overlays/.
    proc = subprocess.run(["sha256sum", "-c", "--strict", "SHA256SUMS"], cwd=root / "overlays",
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "artifacts/entrypoint.sh: OK" in proc.stdout
    assert files["artifacts/entrypoint.sh"] == (root / "entrypoint.sh").read_bytes()
    # What ships verifies on its own: overlays/ copied alone to a deployment host.
    host = root.parent / "deployment-host"
    shutil.copytree(root / "overlays", host / "overlays")
    alone = subprocess.run(["sha256sum", "-c", "--strict", "SHA256SUMS"], cwd=host / "overlays",
                           capture_output=True, text=True)
    assert alone.returncode == 0 and alone.stdout == proc.stdout, alone.stdout + alone.stderr
    sums = files["SHA256SUMS"].decode().splitlines()
    assert [line.split("  ", 1)[1] for line in sums] == sorted(line.split("  ", 1)[1] for line in sums)


def test_manifest_and_compose_fragment(stack):
    root = stack
    ok(root, "overlays")
    manifest = json.loads((root / "overlays/manifest.json").read_bytes())
    assert schema_errors(manifest, "manifest") == []
    lock = json.loads((root / "upstream.lock").read_text())["upstreams"]["up"]
    assert manifest["upstreams"] == {"up": {"commit": lock["commit"], "label": "main",
                                            "source": lock["source"]}}
    by_file = {o["file"]: o for o in manifest["overlays"]}
    a = by_file["gfx942/up/a.py"]
    assert a["base_sha256"] == sha(UPSTREAM_FILES["a.py"])
    assert a["sha256"] == sha((root / "overlays/gfx942/up/a.py").read_bytes())
    assert a["target"] == f"{INSTALL_ROOT}/a.py" and a["base_commit"] == lock["commit"]
    assert a["patches"] == [{"name": "fnuz.patch",
                             "sha256": sha((root / "series/up/fnuz.patch").read_bytes())}]
    assert by_file["gfx950/up/pkg/new.py"]["base_sha256"] is None
    assert manifest["artifacts"] == [{"path": "entrypoint.sh", "file": "artifacts/entrypoint.sh",
                                      "sha256": sha((root / "entrypoint.sh").read_bytes())}]
    for profile in ("gfx942", "gfx950"):
        compose = yaml.safe_load((root / f"overlays/{profile}/compose.yaml").read_text())
        volumes = compose["services"]["inference"]["volumes"]
        expected = {o["target"] for o in manifest["overlays"] if o["profile"] == profile}
        assert {v["target"] for v in volumes} == expected
        for volume in volumes:
            assert volume["type"] == "bind" and volume["read_only"] is True
            # Relative to the compose project directory (compose.yaml beside overlays/).
            assert volume["source"].startswith(f"./overlays/{profile}/up/")
            assert (root / volume["source"]).is_file()


def test_overlays_are_byte_identical_across_runs_and_checkouts(stack, tmp_path, monkeypatch):
    root = stack
    ok(root, "overlays")
    first = tree_bytes(root / "overlays")
    ok(root, "overlays")
    assert tree_bytes(root / "overlays") == first
    # Another checkout at another path, with another cache (store rebuilt from the upstream).
    other = tmp_path / "elsewhere" / "checkout"
    shutil.copytree(root, other, ignore=shutil.ignore_patterns(".patchforge", "overlays"))
    monkeypatch.setenv("PATCHFORGE_CACHE", str(tmp_path / "other-cache"))
    ok(other, "fetch")
    ok(other, "overlays")
    assert tree_bytes(other / "overlays") == first
    json_run = json.loads(ok(other, "overlays", "--json").out)
    assert schema_errors(json_run, "overlays") == [] and json_run["overlays"] == 5


def test_a_failing_patch_names_patch_and_hunk_and_leaves_overlays(stack):
    root = stack
    ok(root, "overlays")
    before = tree_bytes(root / "overlays")
    write_patch(root, "broken", b"diff --git a/pkg/b.py b/pkg/b.py\n--- a/pkg/b.py\n+++ b/pkg/b.py\n"
                b"@@ -1,3 +1,3 @@\n x = 1\n-y = 999\n+y = 3\n z = 3\n")
    run = run_cli(root, "overlays")
    assert run.rc == 2
    assert "broken.patch" in run.err and "hunk #1" in run.err and "pkg/b.py" in run.err
    assert tree_bytes(root / "overlays") == before
    assert not list(root.glob(".overlays*"))


def test_a_patch_that_deletes_a_file_is_named_by_the_refusal(stack):
    """An overlay cannot delete a file; the refusal said only "the series deletes
    pkg/nofinal.txt", leaving the user to hunt through the series for the patch. It names it."""
    root = stack
    write_patch(root, "drop-nofinal", b"diff --git a/pkg/nofinal.txt b/pkg/nofinal.txt\n"
                b"deleted file mode 100644\n--- a/pkg/nofinal.txt\n+++ /dev/null\n"
                b"@@ -1,3 +0,0 @@\n-alpha\n-beta\n-gamma\n\\ No newline at end of file\n")
    run = run_cli(root, "overlays")
    assert run.rc == 2
    assert "the series deletes pkg/nofinal.txt (drop-nofinal.patch)" in run.err, run.err


def test_check_reports_drift_and_passes_when_clean(stack):
    root = stack
    run = run_cli(root, "overlays", "--check")
    assert run.rc == 1 and "missing" in run.text  # nothing generated yet
    ok(root, "overlays")
    assert "up to date" in ok(root, "overlays", "--check").text
    clean = tree_bytes(root / "overlays")
    # Overlay files are build outputs (git-ignored): without them, the hashes decide.
    # And the message says so: "overlays are up to date (5 files)" on a fresh clone, with
    # none of them there, read as "the deployed files are fine" while verify found them
    # missing.
    (root / "overlays/gfx942/up/a.py").unlink()
    run = ok(root, "overlays", "--check")
    assert "1 of the 5 overlay files are not on disk (the 4 there match)" in run.out, run.out
    for profile in ("gfx942", "gfx950"):
        shutil.rmtree(root / "overlays" / profile / "up")
    run = ok(root, "overlays", "--check", "--format", "github")
    assert "overlays are up to date" not in run.out
    assert ("overlays/ as committed is up to date: SHA256SUMS and manifest.json match what the "
            "series generates (5 files); none of the overlay files is on disk, so only their "
            "hashes were checked") in run.out, run.out
    ok(root, "overlays")
    assert tree_bytes(root / "overlays") == clean
    assert "overlays are up to date (5 files)" in ok(root, "overlays", "--check").out
    # So are the Dockerfiles that bake them: absent is fine, present must be what is generated.
    for profile in ("gfx942", "gfx950"):
        (root / "overlays" / profile / "Dockerfile").unlink()
    assert ok(root, "overlays", "--check").rc == 0
    ok(root, "overlays")
    assert tree_bytes(root / "overlays") == clean
    dockerfile = root / "overlays/gfx942/Dockerfile"
    dockerfile.write_bytes(dockerfile.read_bytes().replace(b"sha256sum $c", b"true ||", 1))
    run = run_cli(root, "overlays", "--check")
    assert run.rc == 1 and "changed  gfx942/Dockerfile" in run.text
    ok(root, "overlays")
    # Tampered SHA256SUMS.
    sums = root / "overlays/SHA256SUMS"
    sums.write_bytes(sums.read_bytes().replace(b"  gfx942/up/a.py", b"  gfx942/up/a.py").replace(
        sums.read_bytes()[:8], b"00000000", 1))
    run = run_cli(root, "overlays", "--check")
    assert run.rc == 1 and "changed  SHA256SUMS" in run.text and "line 1" in run.text
    # A tampered overlay file.
    ok(root, "overlays")
    (root / "overlays/gfx950/up/pkg/b.py").write_bytes(b"tampered\n")
    run = run_cli(root, "overlays", "--check", "--json")
    assert run.rc == 1
    doc = json.loads(run.out)
    assert schema_errors(doc, "overlays") == []
    assert doc["drift"] == [{"path": "gfx950/up/pkg/b.py", "kind": "changed",
                             "detail": "overlay file differs from the regenerated one"}]
    # A patch changed since the overlays were made: the manifest drifts. (The tampered file
    # goes first: `overlays` never overwrites a file changed by hand.)
    (root / "overlays/gfx950/up/pkg/b.py").unlink()
    ok(root, "overlays")
    patch = root / "series/up/all-b.patch"
    patch.write_bytes(patch.read_bytes().replace(b"y = 22", b"y = 23"))
    run = run_cli(root, "overlays", "--check")
    assert run.rc == 1 and "manifest.json" in run.text and "gfx942/up/pkg/b.py" in run.text


def test_verify_fails_on_overlays_made_on_another_pin_than_the_lock(tmp_path):
    """overlays/ written at the pin, then the pin moved without `overlays` (`upstream pin
    --force`, the patches as they were): the overlay of a.py is the old revision's whole file
    with the fix, which mounted on the new one takes back upstream's own change of line 20.
    check, overlays --check and lint said so, while `verify` said every file `ok`, exit 0.
    Now verify exits 1, naming the upstream, both revisions and `patchforge overlays`; after
    `overlays` it passes again."""
    root, _ = git_project(tmp_path, install_root=INSTALL_ROOT)
    write_patch(root, "fix", A_DIFF)
    ok(root, "overlays")
    ok(root, "verify")
    changed = UPSTREAM_FILES["a.py"].replace(b"line20\n", b"line20 changed upstream\n")
    moved = commit_files(tmp_path / "up-upstream", {"a.py": changed}, "upstream: line 20")
    ok(root, "upstream", "pin", "up", "--at", moved, "--force")
    assert b"line20 changed upstream" not in (root / "overlays/up/a.py").read_bytes()
    run = run_cli(root, "verify", "--json")
    assert run.rc == 1, run.text
    doc = json.loads(run.out)
    assert schema_errors(doc, "verify") == []
    (row,) = [r for r in doc["results"] if r["state"] != "ok"]
    assert row["path"] == "manifest.json" and row["state"] == "mismatch", row
    assert f"({moved[:12]})" in row["detail"] and row["detail"].startswith("up's overlays"), row
    assert "`patchforge overlays` makes them again" in row["detail"], row
    ok(root, "overlays")
    ok(root, "verify")


def test_verify_and_check_fail_on_overlays_made_from_another_series(stack):
    """overlays/ written, then the series changed without `overlays`: a fix refreshed (a
    teammate's, pulled), a fix deleted, a new fix. The overlays on disk are whole and as
    SHA256SUMS pins them, and `verify` and `check` exited 0 while the deployment had the old
    version of the fix, the deleted one, and not the new one (only `overlays --check` said so).
    Now each exits 1: verify names the patch file and what overlays/ hold of it, check says
    overlays/ is not what the series makes. A profile's own verify looks at its fixes only."""
    root = stack
    ok(root, "overlays")
    for command in (("verify",), ("check",)):
        ok(root, *command)
    patch = root / "series/up/all-b.patch"
    patch.write_bytes(patch.read_bytes().replace(b"y = 22", b"y = 23"))
    run = run_cli(root, "verify")
    assert run.rc == 1, run.text
    assert "mismatch  ../series/up/all-b.patch  overlays/ hold another version of this fix" \
        in run.out, run.out
    run = run_cli(root, "check", "--json")
    assert run.rc == 1, run.text
    doc = json.loads(run.out)
    assert schema_errors(doc, "check") == [] and doc["ok"] is False
    assert any(note.startswith("overlays/ is not what the series makes") for note in doc["notes"])
    ok(root, "overlays")
    for command in (("verify",), ("check",)):
        ok(root, *command)
    fnuz = root / "series/up/fnuz.patch"  # gfx942's own fix
    fnuz.write_bytes(fnuz.read_bytes().replace(b"+LINE3 gfx942", b"+LINE3 gfx942 again"))
    ok(root, "verify", "--profile", "gfx950")
    assert run_cli(root, "verify", "--profile", "gfx942").rc == 1
    ok(root, "overlays")
    ok(root, "delete", "all-b")
    run = run_cli(root, "verify", "--json")
    assert run.rc == 1, run.text
    doc = json.loads(run.out)
    assert schema_errors(doc, "verify") == []
    assert [(r["path"], r["state"]) for r in doc["results"] if r["state"] != "ok"] == \
        [("../series/up/all-b.patch", "mismatch")], doc
    assert "no longer in the series" in run.out
    assert run_cli(root, "check").rc == 1
    ok(root, "overlays")
    write_patch(root, "late", b"diff --git a/pkg/nofinal.txt b/pkg/nofinal.txt\n"
                b"--- a/pkg/nofinal.txt\n+++ b/pkg/nofinal.txt\n@@ -1,3 +1,3 @@\n"
                b" alpha\n-beta\n+BETA\n gamma\n\\ No newline at end of file\n")
    run = run_cli(root, "verify")
    assert run.rc == 1 and "missing  ../series/up/late.patch  a fix of the series in no overlay" \
        in run.out, run.text
    assert run_cli(root, "check").rc == 1
    ok(root, "overlays")
    for command in (("verify",), ("check",)):
        ok(root, *command)


def test_artifacts_are_pinned(stack):
    root = stack
    ok(root, "overlays")
    (root / "entrypoint.sh").write_bytes(b"#!/bin/sh\nexec something-else\n")
    run = run_cli(root, "overlays", "--check")
    assert run.rc == 1 and "SHA256SUMS" in run.text
    verify = run_cli(root, "verify")
    assert verify.rc == 1 and "entrypoint.sh" in verify.text and "changed since" in verify.text
    (root / "entrypoint.sh").unlink()
    run = run_cli(root, "overlays")
    assert run.rc == 2 and "entrypoint.sh does not exist" in run.err
    # A directory there was said not to exist either (it does: the user looks and sees it).
    (root / "entrypoint.sh").mkdir()
    run = run_cli(root, "overlays")
    assert run.rc == 2 and "entrypoint.sh is a directory: an artifact is a file" in run.err, \
        run.err


def test_verify_never_reads_a_file_sha256sums_or_the_manifest_names_outside_overlays(stack,
                                                                                     tmp_path):
    """SHA256SUMS and manifest.json arrive by pull request too, and `verify` read every file
    they name: `../entrypoint.sh` (outside overlays/) was read and hashed, a device named so
    was read without end, and an artifact's `path` of `/etc/hostname` was read from this
    host; the rows said something else (SHA256SUMS and the manifest disagreeing, exit 1), or,
    with both agreeing, `ok`. `verify` now refuses each name that leaves overlays/ (or the
    project), exit 2, naming SHA256SUMS and its line or manifest.json and the entry."""
    root = stack
    ok(root, "overlays")
    sums, manifest_path = root / "overlays/SHA256SUMS", root / "overlays/manifest.json"
    sums_before, manifest_before = sums.read_bytes(), manifest_path.read_bytes()
    sums.write_bytes(sums_before.replace(b"  artifacts/entrypoint.sh\n", b"  ../entrypoint.sh\n"))
    line = sums.read_bytes().split(b"\n").index(
        next(l for l in sums.read_bytes().split(b"\n") if l.endswith(b"../entrypoint.sh"))) + 1
    run = run_cli(root, "verify")
    assert run.rc == 2, run.text
    assert f"SHA256SUMS:{line}: " in run.err and "'../entrypoint.sh'" in run.err and \
        "not a file under overlays/" in run.err, run.err
    sums.write_bytes(sums_before)
    manifest_path.write_bytes(manifest_before.replace(b'"artifacts/entrypoint.sh"',
                                                      b'"../entrypoint.sh"'))
    run = run_cli(root, "verify")
    assert run.rc == 2 and "manifest.json" in run.err and "artifacts[0].file" in run.err, run.text
    manifest_path.write_bytes(manifest_before.replace(b'"path": "entrypoint.sh"',
                                                      b'"path": "/etc/hostname"'))
    run = run_cli(root, "verify")
    assert run.rc == 2 and "artifacts[0].path" in run.err and "the project" in run.err, run.text
    manifest_path.write_bytes(manifest_before)
    ok(root, "verify")


@pytest.mark.parametrize("key, value", [
    ("file", "up/a.py\n::error title=forged::a line of the manifest's making"),
    ("upstream", "up\x1b]0;title\x07"),
    ("target", "/srv/a.py\u2028::error::x"),
])
def test_verify_refuses_a_manifest_string_holding_a_control_character(stack, tmp_path, key,
                                                                      value):
    """A pull request's overlays/manifest.json whose `file` is `up/a.py`, a newline and
    `::error title=forged::...`: verify printed it as it is, and the CI log got a line of the
    manifest's making, at the start of a line, which GitHub Actions runs as a workflow
    command; an escape sequence drove the terminal. Now the manifest is refused, exit 2,
    naming it and the entry; a name in SHA256SUMS (escaped as sha256sum writes a newline) is
    refused naming its line."""
    root = stack
    ok(root, "overlays")
    manifest = root / "overlays/manifest.json"
    good = manifest.read_bytes()
    doc = json.loads(good)
    doc["overlays"][0][key] = value
    manifest.write_text(json.dumps(doc, indent=2))
    site = tmp_path / "site-packages"
    site.mkdir()
    for args in (["verify"], ["verify", "--installed", str(site)], ["verify", "--json"]):
        run = run_cli(root, *args)
        assert run.rc == 2, run.text
        assert f"{manifest}: overlays[0].{key} is " in run.err, run.err
        assert "holds a control character" in run.err
        assert not [line for line in run.text.splitlines() if line.startswith("::")]
    manifest.write_bytes(good)
    sums = root / "overlays/SHA256SUMS"
    right = sums.read_bytes()
    sums.write_bytes(right + b"\\" + b"0" * 64 + b"  up/a.py\\n::error title=forged::x\n")
    run = run_cli(root, "verify")
    line = len(right.splitlines()) + 1
    assert run.rc == 2 and f"{sums}:{line}: " in run.err and "control character" in run.err, \
        run.err
    assert not [line for line in run.text.splitlines() if line.startswith("::")]


def test_an_artifact_never_brings_in_a_file_from_outside_the_stack(stack, tmp_path):
    """The configuration arrives by pull request: `artifacts = ["key"]` with `key` a symlink to
    a file outside the project copied that file into overlays/ (and so into every deployment
    and CI upload), `.git/config` (a remote URL may hold a token) was copied too, and an
    artifact under overlays/ pinned patchforge's own output. Each is refused with the
    configuration's file and line, overlays/ untouched; a link inside the project is a file."""
    root = stack
    ok(root, "overlays")
    secret = tmp_path / "secret"
    secret.write_bytes(b"a private key\n")
    (root / "key").symlink_to(secret)
    (root / "inside").symlink_to("entrypoint.sh")
    (root / ".git").mkdir(exist_ok=True)
    (root / ".git" / "config").write_bytes(b"[remote]\n")
    config = root / "pyproject.toml"
    text = config.read_text()
    before = tree_bytes(root / "overlays")
    for artifact, message in (("key", "outside the project"), (".git/config", "not a file"),
                              ("overlays/SHA256SUMS", "not a file")):
        config.write_text(text.replace('artifacts = ["entrypoint.sh"]',
                                       f'artifacts = ["entrypoint.sh", "{artifact}"]'))
        run = run_cli(root, "overlays")
        assert run.rc == 2 and message in run.err, run.text
        line = next(n for n, l in enumerate(config.read_text().splitlines(), 1) if artifact in l)
        assert f"pyproject.toml:{line}: " in run.err, run.err
        assert tree_bytes(root / "overlays") == before
    config.write_text(text.replace('artifacts = ["entrypoint.sh"]', 'artifacts = ["inside"]'))
    ok(root, "overlays")
    assert (root / "overlays/artifacts/inside").read_bytes() == (root / "entrypoint.sh").read_bytes()


def test_an_artifact_linked_to_gits_or_patchforges_own_files_or_a_fifo_is_refused(stack):
    """A pull request commits `tables/tuning.csv` as a link to `../.git/config`, where
    actions/checkout keeps the job's token (`http.https://github.com/.extraheader`), and lists
    it in `artifacts`: the link stays inside the project, so `overlays` copied git's config to
    overlays/artifacts/, pinned it in SHA256SUMS, and the Dockerfile put it into the image; a
    link into .patchforge/ or overlays/ likewise. A FIFO listed there (a directory is refused
    already) hung `overlays` for ever. Each is refused naming the configuration's line,
    overlays/ untouched."""
    root = stack
    ok(root, "overlays")
    (root / ".git").mkdir(exist_ok=True)
    (root / ".git" / "config").write_bytes(
        b'[http "https://github.com/"]\n\textraheader = AUTHORIZATION: basic c2VjcmV0\n')
    (root / ".patchforge").mkdir(exist_ok=True)
    (root / ".patchforge" / "notes").write_bytes(b"local state\n")
    (root / "tables").mkdir()
    (root / "tables" / "tuning.csv").symlink_to("../.git/config")
    (root / "tables" / "state.csv").symlink_to("../.patchforge/notes")
    (root / "tables" / "sums.csv").symlink_to("../overlays/SHA256SUMS")
    os.mkfifo(root / "tables" / "pipe.csv")
    config = root / "pyproject.toml"
    text = config.read_text()
    before = tree_bytes(root / "overlays")
    for artifact, message in (("tables/tuning.csv", "a symlink to .git/config"),
                              ("tables/state.csv", "a symlink to .patchforge/notes"),
                              ("tables/sums.csv", "a symlink to overlays/SHA256SUMS"),
                              ("tables/pipe.csv", "not a regular file")):
        config.write_text(text.replace('artifacts = ["entrypoint.sh"]',
                                       f'artifacts = ["entrypoint.sh", "{artifact}"]'))
        line = next(n for n, l in enumerate(config.read_text().splitlines(), 1) if artifact in l)
        for command in ("overlays", "overlays --check"):
            run = run_subprocess(root, *command.split(), timeout=120)
            err = run.stderr.decode()
            assert run.returncode == 2 and message in err, (artifact, command, err)
            assert f"pyproject.toml:{line}: " in err, err
            assert tree_bytes(root / "overlays") == before
            assert b"c2VjcmV0" not in b"".join(tree_bytes(root / "overlays").values())
    config.write_text(text)
    ok(root, "overlays")


def test_an_artifact_path_not_written_plainly_or_listed_twice_is_refused_naming_its_line(
        stack):
    """`artifacts = ["./entrypoint.sh"]` (or `d//f`, a name with a trailing `/`, one listed
    twice) was taken: manifest.json named the copy artifacts/./entrypoint.sh while SHA256SUMS
    named artifacts/entrypoint.sh, and `verify` failed (exit 1) on what `overlays` had just
    written, naming no line of the configuration. Refused now, with its file and line."""
    root = stack
    ok(root, "overlays")
    config = root / "pyproject.toml"
    text = config.read_text()
    before = tree_bytes(root / "overlays")
    for listed, message in (('"./entrypoint.sh"', "not written as one plain path"),
                            ('"sub//entrypoint.sh"', "not written as one plain path"),
                            ('"entrypoint.sh/"', "not written as one plain path"),
                            ('"entrypoint.sh", "entrypoint.sh"', "listed twice")):
        config.write_text(text.replace('artifacts = ["entrypoint.sh"]', f"artifacts = [{listed}]"))
        run = run_cli(root, "overlays")
        assert run.rc == 2 and message in run.err, (listed, run.text)
        line = next(n for n, l in enumerate(config.read_text().splitlines(), 1)
                    if l.startswith("artifacts"))
        assert f"pyproject.toml:{line}: " in run.err, run.err
        assert tree_bytes(root / "overlays") == before
    config.write_text(text)
    ok(root, "overlays")
    assert run_cli(root, "verify").rc == 0


def test_a_symlink_in_place_of_overlays_is_refused_and_nothing_written_through_it(stack,
                                                                                   tmp_path):
    """overlays/ committed as a symlink (to a directory elsewhere): `overlays` replaced the link,
    then failed on the link it had set aside ("Cannot call rmtree on a symbolic link", exit 2)
    at that run and every later one, and a rebase failed the same way in its write-out. Both
    refuse it now, naming the link, before anything is written (no rebase journal)."""
    root = stack
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "keep").write_bytes(b"not patchforge's\n")
    (root / "overlays").symlink_to(elsewhere)
    before = tree_bytes(root)
    commit = json.loads((root / "upstream.lock").read_bytes())["upstreams"]["up"]["commit"]
    for args in (["overlays"], ["overlays", "--check"], ["rebase", "--to", f"up={commit}"]):
        run = run_cli(root, *args)
        assert run.rc == 2 and "overlays is a symlink" in run.err, (args, run.text)
        assert not (root / ".patchforge" / "rebase").exists()
        assert tree_bytes(root) == before and tree_bytes(elsewhere) == {"keep": b"not patchforge's\n"}
    (root / "overlays").unlink()
    ok(root, "overlays")
    assert (root / "overlays" / "SHA256SUMS").is_file()


def test_verify_and_installed_pre_images(stack, tmp_path):
    root = stack
    ok(root, "overlays")
    run = ok(root, "verify", "--json")
    doc = json.loads(run.out)
    assert doc["ok"] is True and schema_errors(doc, "verify") == []
    (root / "overlays/gfx942/up/a.py").write_bytes(b"tampered\n")
    run = run_cli(root, "verify")
    assert run.rc == 1 and "gfx942/up/a.py" in run.text and "mismatch" in run.text
    (root / "overlays/gfx942/up/a.py").unlink()  # `overlays` never overwrites a hand edit
    ok(root, "overlays")
    # An image's site-packages with the right pre-images.
    site = tmp_path / "site-packages"
    for rel in ("a.py", "pkg/b.py"):
        (site / rel).parent.mkdir(parents=True, exist_ok=True)
        (site / rel).write_bytes(UPSTREAM_FILES[rel])
    run = ok(root, "verify", "--installed", str(site), "--json")
    assert json.loads(run.out)["ok"] is True
    # One wrong pre-image: named, exit 1.
    (site / "pkg/b.py").write_bytes(b"x = 1\ny = 2\nz = 4\n")
    run = run_cli(root, "verify", "--installed", str(site))
    assert run.rc == 1
    assert "pkg/b.py" in run.text and "not the pre-image" in run.text
    assert "a.py" not in run.text.replace("pkg/b.py", "")
    # A file the overlay creates must not exist in the image yet.
    (site / "pkg/b.py").write_bytes(UPSTREAM_FILES["pkg/b.py"])
    (site / "pkg/new.py").write_bytes(b"")
    run = run_cli(root, "verify", "--installed", str(site))
    assert run.rc == 1 and "pkg/new.py" in run.text


def _installed_with_overlays(root: Path, tmp_path: Path, profile: str) -> tuple[Path, list]:
    """A site-packages holding the upstream's files with `profile`'s overlays over them (an
    image the generated Dockerfile baked for it), and that profile's manifest entries."""
    manifest = json.loads((root / "overlays/manifest.json").read_bytes())
    site = tmp_path / "site-packages"
    for rel in ("a.py", "pkg/b.py"):
        (site / rel).parent.mkdir(parents=True, exist_ok=True)
        (site / rel).write_bytes(UPSTREAM_FILES[rel])
    entries = [e for e in manifest["overlays"] if e["profile"] == profile]
    for entry in entries:
        (site / entry["path"]).write_bytes((root / "overlays" / entry["file"]).read_bytes())
    return site, entries


def test_verify_installed_on_files_that_already_hold_the_overlays(stack, tmp_path):
    """`verify --installed /` inside a container with the mounts, or a tree the generated
    Dockerfile baked: every overlaid file was "not the pre-image", exit 1, with a hint to
    rebase. A file that is its overlay is ok, and says so."""
    root = stack
    ok(root, "overlays")
    site, entries = _installed_with_overlays(root, tmp_path, "gfx942")
    run = ok(root, "verify", "--installed", str(site), "--profile", "gfx942")
    assert "already holds this overlay" in run.out and "rebase" not in run.err, run.text
    (site / entries[0]["path"]).write_bytes(b"neither\n")
    run = run_cli(root, "verify", "--installed", str(site), "--profile", "gfx942")
    assert run.rc == 1 and "not the pre-image" in run.text


def test_verify_installed_names_the_profile_whose_overlay_the_files_are(stack, tmp_path):
    """An image baked (or a container mounted) with gfx950's overlays, checked with `--profile
    gfx942`: its a.py was "not the pre-image this overlay was made for", with the hint to
    deploy another version or rebase, where it is this series' own gfx950 overlay. The row says
    whose overlay it is and the option that checks that deployment; the rebase hint is not
    given."""
    root = stack
    write_patch(root, "fnuz-950", A_DIFF.replace(b"LINE3 gfx942", b"LINE3 gfx950"),
                profiles="gfx950")
    ok(root, "overlays")
    site, _ = _installed_with_overlays(root, tmp_path, "gfx950")
    ok(root, "verify", "--installed", str(site), "--profile", "gfx950")
    run = run_cli(root, "verify", "--installed", str(site), "--profile", "gfx942")
    assert run.rc == 1, run.text
    assert f"{site}/a.py [gfx942]" in run.out and "is not the pre-image" not in run.text
    assert "installed file is the gfx950 overlay of this series (baked in, or mounted), not " \
        "the pre-image this gfx942 overlay is made for: `--profile gfx950` checks that " \
        "deployment" in " ".join(run.out.split()), run.out
    assert f"hint: {site} holds gfx950's overlays: `patchforge verify --installed {site} " \
        "--profile gfx950` checks that deployment" in run.err, run.err
    assert "rebase" not in run.err, run.err
    # Without --profile, every profile's rows: gfx950's hold their overlays, gfx942's say whose.
    run = run_cli(root, "verify", "--installed", str(site))
    assert run.rc == 1 and "the gfx950 overlay of this series" in " ".join(run.out.split())
    assert "rebase" not in run.err, run.err


def test_an_install_of_another_version_is_told_which_one_the_overlays_need(stack, tmp_path):
    """`verify --installed` on another version's files said only "installed file is not the
    pre-image this overlay was made for", and nothing of what to do. Each row names the
    upstream revision the overlay was made from, and a hint the two ways out."""
    root = stack
    ok(root, "overlays")
    manifest = json.loads((root / "overlays/manifest.json").read_bytes())
    want = {f"({e['upstream']} {manifest['upstreams'][e['upstream']]['label']})"
            for e in manifest["overlays"] if e["base_sha256"] is not None}
    site = tmp_path / "site-packages"
    for rel in ("a.py", "pkg/b.py"):
        (site / rel).parent.mkdir(parents=True, exist_ok=True)
        (site / rel).write_bytes(b"another version\n")
    run = run_cli(root, "verify", "--installed", str(site))
    assert run.rc == 1
    mismatched = [line for line in run.out.splitlines() if line.startswith("mismatch")]
    assert mismatched and all(any(w in line for w in want) for line in mismatched), run.out
    assert "deploy the upstream version each overlay names" in run.err
    assert "`patchforge rebase --to UPSTREAM=VERSION`" in run.err
    doc = json.loads(run_cli(root, "verify", "--installed", str(site), "--json").out)
    assert schema_errors(doc, "verify") == []


def test_verify_installed_says_what_a_directory_without_any_pre_image_should_be(stack,
                                                                              tmp_path):
    """`verify --installed DIR` with DIR holding none of the pre-images (an empty directory,
    or the package directory instead of site-packages) printed a "missing" row per file and
    nothing of why. A hint now says what DIR must be, and names the directory above a
    package directory; a DIR that does not exist is refused, exit 2."""
    root = stack
    ok(root, "overlays")
    run = run_cli(root, "verify", "--installed", str(tmp_path / "no-such-dir"))
    assert run.rc == 2 and "does not exist" in run.err, run.text
    empty = tmp_path / "empty"
    empty.mkdir()
    run = run_cli(root, "verify", "--installed", str(empty))
    assert run.rc == 1
    assert f"hint: {empty} holds none of the 2 pre-images: give the upstream's install root" \
        in run.err, run.err
    site = tmp_path / "site-packages"
    for rel in ("a.py", "pkg/b.py"):
        (site / rel).parent.mkdir(parents=True, exist_ok=True)
        (site / rel).write_bytes(UPSTREAM_FILES[rel])
    run = run_cli(root, "verify", "--installed", str(site / "pkg"))
    assert run.rc == 1
    assert f"hint: {site / 'pkg'} looks like the pkg/ directory itself" in run.err, run.err
    assert f"`--installed {site}`" in run.err
    run = ok(root, "verify", "--installed", str(site))
    assert "hint" not in run.err


def test_verify_installed_follows_a_symlink_of_the_tree_inside_the_tree(stack, tmp_path):
    """An image's root file system (`docker export` unpacked) holds absolute symlinks, which
    the container reads from its own /: `verify --installed` read them from this host's /, so a
    pre-image symlinked to /srv/... passed on the host's file while the image's was another
    version (and the other way round), and a site-packages reached through a symlinked
    directory was missing. Each is read inside DIR now; DIR given as the install root at its
    own path in the tree reads the same; a copy of an install root elsewhere, whose root is
    not known, says a symlink leading out of it rather than reading the host's file."""
    root = stack
    ok(root, "overlays")
    image = tmp_path / "rootfs"
    # The host's file at the symlink's target is the pre-image; the image's is not.
    host_b = tmp_path / "host" / "b.py"
    host_b.parent.mkdir(parents=True)
    host_b.write_bytes(UPSTREAM_FILES["pkg/b.py"])
    (image / str(host_b).lstrip("/")).parent.mkdir(parents=True)
    (image / str(host_b).lstrip("/")).write_bytes(b"x = 1\ny = 2\nz = 4\n")
    # /usr/local/lib -> /usr/lib: site-packages through an absolute directory symlink.
    site_in_image = INSTALL_ROOT.replace("/usr/local/lib/", "/usr/lib/").lstrip("/")
    (image / site_in_image / "pkg").mkdir(parents=True)
    (image / "usr/local").mkdir(parents=True)
    (image / "usr/local/lib").symlink_to("/usr/lib")
    (image / site_in_image / "a.py").write_bytes(UPSTREAM_FILES["a.py"])
    (image / site_in_image / "pkg/b.py").symlink_to(host_b)
    run = run_cli(root, "verify", "--installed", str(image), "--json")
    rows = {r["path"]: r for r in json.loads(run.out)["results"]}
    assert run.rc == 1, run.out
    for profile in ("gfx942", "gfx950"):
        b_row = rows[f"{image}{INSTALL_ROOT}/pkg/b.py [{profile}]"]
        assert (b_row["state"], b_row["detail"]) == (
            "mismatch",
            "installed file is not the pre-image this overlay was made for (up main); read "
            f"through /usr/local/lib -> /usr/lib, {INSTALL_ROOT.replace('/local/', '/')}"
            f"/pkg/b.py -> {host_b}"), b_row
    # An ok row read through links names them too: which file was judged.
    assert rows[f"{image}{INSTALL_ROOT}/a.py [gfx942]"]["detail"] == \
        "pre-image matches; read through /usr/local/lib -> /usr/lib", rows
    # The other way round: the image's file is the pre-image, the host's is not.
    (image / str(host_b).lstrip("/")).write_bytes(UPSTREAM_FILES["pkg/b.py"])
    host_b.write_bytes(b"x = 1\ny = 2\nz = 4\n")
    run = ok(root, "verify", "--installed", str(image), "--json")
    assert json.loads(run.out)["ok"] is True
    # The install root at its own path in the tree: its root is the tree's.
    (image / "usr/local/lib").unlink()
    (image / "usr/lib").rename(image / "usr/local/lib")
    site_in_image = INSTALL_ROOT.lstrip("/")
    run = ok(root, "verify", "--installed", str(image / INSTALL_ROOT.lstrip("/")), "--json")
    assert {r["detail"] for r in json.loads(run.out)["results"]
            if "/pkg/b.py [" in r["path"]} == {
                f"pre-image matches; read through {INSTALL_ROOT}/pkg/b.py -> {host_b}"}, run.out
    # A loop: the container's open() fails (ELOOP), as `verify --image` says of an image.
    (image / site_in_image / "pkg/b.py").unlink()
    (image / site_in_image / "pkg/b.py").symlink_to("c.py")
    (image / site_in_image / "pkg/c.py").symlink_to(f"{INSTALL_ROOT}/pkg/b.py")
    run = run_cli(root, "verify", "--installed", str(image), "--json")
    b_row = {r["path"]: r for r in json.loads(run.out)["results"]}[
        f"{image}{INSTALL_ROOT}/pkg/b.py [gfx942]"]
    assert run.rc == 1 and b_row["state"] == "missing", run.out
    assert b_row["detail"].endswith(
        f"; too many levels of symbolic links (a loop: {INSTALL_ROOT}/pkg/b.py -> c.py, "
        f"{INSTALL_ROOT}/pkg/c.py -> {INSTALL_ROOT}/pkg/b.py)"), b_row
    (image / site_in_image / "pkg/b.py").unlink()
    (image / site_in_image / "pkg/b.py").symlink_to(host_b)
    # A copy of the install root elsewhere: the link leads out of it, to a root not known.
    copy = tmp_path / "copied-site"
    shutil.copytree(image / site_in_image, copy, symlinks=True)
    run = run_cli(root, "verify", "--installed", str(copy), "--json")
    rows = {r["path"]: r for r in json.loads(run.out)["results"]}
    b_row = rows[f"{copy}/pkg/b.py [gfx942]"]
    assert run.rc == 1 and b_row["state"] == "mismatch", run.out
    assert f"{copy}/pkg/b.py is a symlink to {host_b}, outside {copy}: what it reads where " \
        f"{copy} is installed is not known here" in b_row["detail"], run.out
    assert rows[f"{copy}/a.py [gfx942]"]["state"] == "ok", run.out


def test_verify_installed_takes_an_install_root_that_is_a_symlink_inside_the_image(stack,
                                                                                  tmp_path):
    """An unpacked image whose install root is an absolute symlink (dist-packages ->
    /opt/venv/...), which this host does not have: `verify --installed ROOTFS/<install root>`
    was refused "Directory ... does not exist" (click followed the link on the host), exit 2,
    while the same DIR was read inside the tree on a host that had the link's target. It is
    read inside the tree now, as the reference says, and every row, ok ones too, names the
    link it was read through; a copy of such a link elsewhere, whose tree is not known, says
    so rather than "missing"; a DIR that is not there is still refused."""
    import uuid

    root = stack
    ok(root, "overlays")
    image = tmp_path / "rootfs"
    venv = f"/opt/venv-{uuid.uuid4().hex}/lib/python3.12/site-packages"  # not on this host
    assert not Path(venv).exists()
    site = image / venv.lstrip("/")
    (site / "pkg").mkdir(parents=True)
    (site / "a.py").write_bytes(UPSTREAM_FILES["a.py"])
    (site / "pkg/b.py").write_bytes(UPSTREAM_FILES["pkg/b.py"])
    installed = image / INSTALL_ROOT.lstrip("/")
    installed.parent.mkdir(parents=True)
    installed.symlink_to(venv)
    for given in (installed, image):
        run = run_cli(root, "verify", "--installed", str(given), "--json")
        assert run.rc == 0, run.text
        rows = json.loads(run.out)["results"]
        read = [r for r in rows if r["path"].startswith(str(given))]
        assert len(read) == 5 and all(
            r["state"] == "ok" and r["detail"] in (
                f"pre-image matches; read through {INSTALL_ROOT} -> {venv}",
                f"created by the overlay; read through {INSTALL_ROOT} -> {venv}")
            for r in read), rows
    shown = ok(root, "verify", "--installed", str(installed)).out
    assert any(f"{installed}/a.py [gfx942] " in line and line.endswith(
        f" pre-image matches; read through {INSTALL_ROOT} -> {venv}")
        for line in shown.splitlines()), shown
    # The link copied out of its tree: where it leads is not known here.
    elsewhere = tmp_path / "site-link"
    elsewhere.symlink_to(venv)
    run = run_cli(root, "verify", "--installed", str(elsewhere), "--json")
    assert run.rc == 1, run.text
    a_row = {r["path"]: r for r in json.loads(run.out)["results"]}[f"{elsewhere}/a.py [gfx942]"]
    assert a_row["state"] == "mismatch" and a_row["detail"].startswith(
        f"{elsewhere} is a symlink to {venv}, which leads nowhere on this host"), a_row
    for missing in (tmp_path / "nosuch", image / "usr/lib/nosuch"):
        run = run_cli(root, "verify", "--installed", str(missing))
        assert run.rc == 2 and f"--installed {missing} does not exist" in run.err, run.text
    (tmp_path / "file").write_bytes(b"")
    run = run_cli(root, "verify", "--installed", str(tmp_path / "file"))
    assert run.rc == 2 and "is a file" in run.err, run.text


def test_verify_installed_reads_a_landed_fixs_symlinked_file_inside_the_tree(tmp_path):
    """The file of a fix dropped as landed upstream (which no overlay carries, so the tree
    must hold it) symlinked to an absolute path in an image's root file system: `verify
    --installed` judged the host's file there, and passed a tree whose own file lacks the
    fix. The tree's file is judged, and the row says through which symlink it was read."""
    from helpers.project import OneUpstreamStack

    base_a = b"".join(b"a line %d\n" % i for i in range(1, 21))
    fixed_a = base_a.replace(b"a line 5\n", b"a line 5, fixed\n")
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": base_a, "pkg/b.py": b"b = 1\n"})
    stack.add_fix("fa", "pkg/a.py", base_a, fixed_a)
    stack.commit({"pkg/a.py": fixed_a}, "Fix a", tag="v2")
    stack.landed_and_dropped("v2", "pkg/a.py")
    host_a = tmp_path / "host" / "a.py"
    host_a.parent.mkdir()
    host_a.write_bytes(fixed_a)
    image = tmp_path / "rootfs"
    (image / "opt/site/pkg").mkdir(parents=True)
    (image / "opt/site/pkg/b.py").write_bytes(b"b = 1\n")
    (image / str(host_a).lstrip("/")).parent.mkdir(parents=True)
    (image / str(host_a).lstrip("/")).write_bytes(base_a)
    (image / "opt/site/pkg/a.py").symlink_to(host_a)
    rc, out, _ = stack.cli("verify", "--installed", str(image), expect=1)
    assert f"{image}/opt/site/pkg/a.py" in out and "lacks the fix" in out, out
    (image / str(host_a).lstrip("/")).write_bytes(fixed_a)
    host_a.write_bytes(base_a)
    rc, out, _ = stack.cli("verify", "--installed", str(image), "--json")
    (row,) = [r for r in json.loads(out)["results"] if r["path"].endswith("pkg/a.py")]
    assert row["state"] == "ok" and f"/opt/site/pkg/a.py -> {host_a}" in row["detail"], row


def test_verify_installed_looks_for_a_created_file_where_it_is_mounted(tmp_path):
    """An upstream whose every overlay creates its file (a new module a fix adds) has no
    pre-image to tell that DIR is an image's root file system: `verify --installed ROOTFS`
    looked for the file at ROOTFS/<path>, said "created by the overlay" while the image held
    a file at the mount's target, which the mount would hide. Such an upstream is found at
    its targets where DIR holds its install root."""
    root, _ = git_project(tmp_path, install_root=INSTALL_ROOT)
    write_patch(root, "create", NEW_DIFF)
    ok(root, "overlays")
    image = tmp_path / "rootfs"
    site = image / INSTALL_ROOT.lstrip("/")
    (site / "pkg").mkdir(parents=True)
    (site / "pkg/b.py").write_bytes(UPSTREAM_FILES["pkg/b.py"])
    run = ok(root, "verify", "--installed", str(image), "--json")
    rows = {r["path"]: r for r in json.loads(run.out)["results"]}
    assert rows[f"{image}{INSTALL_ROOT}/pkg/new.py"]["detail"] == "created by the overlay", rows
    (site / "pkg/new.py").write_bytes(b"created = False\n")
    for installed in (image, site):
        run = run_cli(root, "verify", "--installed", str(installed), "--json")
        rows = {r["path"]: r for r in json.loads(run.out)["results"]}
        assert run.rc == 1, run.out
        assert rows[f"{site}/pkg/new.py"] == {
            "path": f"{site}/pkg/new.py", "state": "mismatch",
            "detail": "the overlay creates this file, but it exists"}, rows


def test_verify_installed_finds_upstreams_at_different_install_roots(tmp_path):
    """vllm in site-packages, another upstream under /opt: no one install root holds both, so
    DIR is the image's root filesystem (`docker export` unpacked, or `/` inside the
    container), where each file is at its target (install-root + path). verify --installed
    reported every file of such a DIR missing (it looked for DIR/<path> only); a DIR that
    is one upstream's install root still works, and the other upstream's files, which it
    cannot hold, are named with where they were looked for."""
    root, _ = git_project(tmp_path, install_root=INSTALL_ROOT)
    other = Upstream(tmp_path / "other-upstream", {"tool/run.py": b"print(1)\nprint(2)\n"})
    add_git_upstream(root, "other", other.path, "main", install_root="/opt/other")
    write_patch(root, "all-b", B_DIFF)
    other_diff = other.diff({"tool/run.py": b"print(1)\nprint(3)\n"}, other.base)
    base = json.loads((root / "upstream.lock").read_text())["upstreams"]["other"]["commit"]
    add_patch_file(root, "other", "run.patch", patch_bytes("other", base, "fix run", other_diff))
    ok(root, "overlays")
    image = tmp_path / "rootfs"
    for rel, data in ((f"{INSTALL_ROOT}/pkg/b.py", UPSTREAM_FILES["pkg/b.py"]),
                      ("/opt/other/tool/run.py", b"print(1)\nprint(2)\n")):
        (image / rel.lstrip("/")).parent.mkdir(parents=True, exist_ok=True)
        (image / rel.lstrip("/")).write_bytes(data)
    run = ok(root, "verify", "--installed", str(image), "--json")
    results = json.loads(run.out)["results"]
    assert {r["path"] for r in results if r["detail"] == "pre-image matches"} == {
        f"{image}{INSTALL_ROOT}/pkg/b.py", f"{image}/opt/other/tool/run.py"}, results
    # A wrong pre-image there is still a mismatch, named at its place in the image.
    (image / "opt/other/tool/run.py").write_bytes(b"print(0)\n")
    run = run_cli(root, "verify", "--installed", str(image))
    assert run.rc == 1 and f"{image}/opt/other/tool/run.py" in run.out and "mismatch" in run.out
    # One upstream's site-packages: its files are found; the other's are missing, and the
    # row says the file is looked for at its target too.
    site = image / INSTALL_ROOT.lstrip("/")
    run = run_cli(root, "verify", "--installed", str(site), "--json")
    assert run.rc == 1
    rows = {r["path"]: r for r in json.loads(run.out)["results"]}
    assert rows[f"{site}/pkg/b.py"]["state"] == "ok", run.out
    assert rows[f"{site}/tool/run.py"]["state"] == "missing", run.out
    assert f"{site}/opt/other/tool/run.py" in rows[f"{site}/tool/run.py"]["detail"], run.out


def test_verify_without_overlays_and_with_a_malformed_sums_file(stack):
    root = stack
    run = run_cli(root, "verify")
    assert run.rc == 2 and "SHA256SUMS" in run.err
    ok(root, "overlays")
    sums = root / "overlays/SHA256SUMS"
    sums.write_bytes(sums.read_bytes() + b"not a line\n")
    run = run_cli(root, "verify")
    assert run.rc == 2
    assert f"SHA256SUMS:{len(sums.read_bytes().splitlines())}:" in run.err


def test_verify_says_where_a_link_leads_in_no_line_of_its_making_and_reads_no_fifo(stack):
    """A symlink at an overlay's path is a `mismatch` naming where it leads: a target holding a
    newline printed a line of its own, `::error::...`, which a CI runner takes as a workflow
    command. It is quoted as git quotes a path now. And a FIFO in place of SHA256SUMS held
    `verify` and `overlays --check` for ever: `verify` refuses it (exit 2, naming it), the check
    says it differs."""
    root = stack
    ok(root, "overlays")
    overlay = root / "overlays/gfx942/up/a.py"
    overlay.unlink()
    overlay.symlink_to("/srv/x\n::error::forged")
    run = run_cli(root, "verify")
    assert run.rc == 1 and 'to "/srv/x\\n::error::forged"' in run.out, run.text
    assert "\n::error::forged" not in run.out, run.out
    overlay.unlink()
    ok(root, "overlays")
    sums = root / "overlays/SHA256SUMS"
    sums.unlink()
    os.mkfifo(sums)
    proc = run_subprocess(root, "verify", timeout=60)
    assert proc.returncode == 2 and b"SHA256SUMS" in proc.stderr and \
        b"not a regular file" in proc.stderr, proc
    proc = run_subprocess(root, "overlays", "--check", timeout=60)
    assert proc.returncode == 1 and b"SHA256SUMS: not a regular file" in proc.stdout, proc
    sums.unlink()
    ok(root, "overlays")
    ok(root, "verify")


def test_a_fifo_kept_in_overlays_is_refused_before_anything_is_written(stack):
    """overlays/README.md and overlays/.gitignore are the user's, kept across every
    regeneration. A FIFO made there held `overlays` for ever (it read the file to carry it
    over), and a rebase's write-out stopped half-way on it, its message Python's list of what
    shutil could not copy (`[('/.../overlays/.gitignore', ...)]`), a rebase journal left. Both
    are refused now before anything is written, exit 2, naming the FIFO."""
    root = stack
    ok(root, "overlays")
    fifo = root / "overlays/.gitignore"
    os.mkfifo(fifo)
    before = tree_bytes(root)
    label = json.loads((root / "upstream.lock").read_text())["upstreams"]["up"]["label"]
    for command in (["overlays"], ["rebase", "--to", f"up={label}"]):
        proc = run_subprocess(root, *command, timeout=60)
        err = proc.stderr.decode()
        assert proc.returncode == 2, (command, err)
        assert f"{fifo}: a FIFO, not a file" in err and "[(" not in err, (command, err)
        assert tree_bytes(root) == before, command
        assert not (root / ".patchforge/rebase").exists(), command
    fifo.unlink()
    fifo.write_bytes(b"/up/\n")
    ok(root, "overlays")
    assert fifo.read_bytes() == b"/up/\n"


def test_sha256sum_checks_the_overlays_of_a_stack_whose_every_fix_landed(tmp_path):
    """`(cd overlays && sha256sum -c --strict SHA256SUMS)`, the check README, deployment.md and
    ci.md give a deployment, failed (exit 1, "no properly formatted checksum lines found") on
    the SHA256SUMS of a stack with no overlay file: here one whose only fix landed upstream and
    was dropped by the rebase. SHA256SUMS then lists manifest.json, and the check passes, as
    `verify` and `overlays --check` do; a changed manifest fails both checks alike."""
    from helpers.project import OneUpstreamStack

    base = b"".join(b"a line %d\n" % i for i in range(1, 21))
    fixed = base.replace(b"a line 5\n", b"a line 5, fixed\n")
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": base})
    stack.add_fix("fa", "pkg/a.py", base, fixed)
    stack.cli("overlays")
    stack.commit({"pkg/a.py": fixed}, "Fix a", tag="v2")
    stack.cli("rebase", "--to", "v2")
    assert stack.series("up") == [] and (stack.root / "series/up/upstreamed/fa.patch").is_file()
    overlays = stack.root / "overlays"
    manifest = (overlays / "manifest.json").read_bytes()
    assert (overlays / "SHA256SUMS").read_bytes() == f"{sha(manifest)}  manifest.json\n".encode()

    def sha256sum() -> subprocess.CompletedProcess:
        return subprocess.run(["sha256sum", "-c", "--strict", "SHA256SUMS"], cwd=overlays,
                              capture_output=True)
    assert sha256sum().returncode == 0, sha256sum()
    stack.cli("verify")
    stack.cli("overlays", "--check")
    (overlays / "manifest.json").write_bytes(manifest.replace(b'"generator"', b'"generator" '))
    assert sha256sum().returncode == 1
    _, out, _ = stack.cli("verify", expect=1)
    assert "manifest.json  sha256 differs" in out, out
    stack.cli("overlays")
    assert sha256sum().returncode == 0, sha256sum()


def test_verify_of_a_clone_without_the_overlay_files_names_the_command_that_writes_them(stack):
    """A stack that keeps its overlay files out of git: a clone has SHA256SUMS and the
    manifest, not the files; verify says which command writes them."""
    root = stack
    ok(root, "overlays")
    (root / "overlays/gfx942/up/a.py").unlink()
    run = run_cli(root, "verify")
    assert run.rc == 1 and "gfx942/up/a.py" in run.out and "file not found" in run.out
    assert "hint: `patchforge overlays` writes the missing overlay files" in run.err
    ok(root, "overlays")
    assert "hint" not in ok(root, "verify").err


def test_no_profiles_means_no_profile_directories(tmp_path):
    root, _ = git_project(tmp_path)
    write_patch(root, "all-b", B_DIFF)
    ok(root, "overlays")
    assert sorted(tree_bytes(root / "overlays")) == ["Dockerfile", "SHA256SUMS", "compose.yaml",
                                                     "manifest.json", "up/pkg/b.py"]
    unknown = run_cli(root, "overlays", "--profile", "gfx942")
    assert unknown.rc == 2 and "unknown profile" in unknown.err


def test_a_link_in_the_checked_tree_prints_no_line_of_its_making(stack, tmp_path):
    """The tree `verify --installed` checks (an unpacked image: whoever built it chose its
    links) held a symlink whose target has a newline: its row printed the target as it is, and
    what follows the newline, `::error::forged`, stood on stdout as a line of its own, which a
    CI runner obeys as a workflow command (`verify --image` printed such a link of a layer
    alike). A cell of the table is one line: the newline is written `\\n`."""
    root = stack
    ok(root, "overlays")
    site = tmp_path / "site-packages"
    (site / "pkg").mkdir(parents=True)
    (site / "pkg/b.py").write_bytes(UPSTREAM_FILES["pkg/b.py"])
    (site / "a.py").symlink_to("/etc/x\n::error::forged")
    run = run_cli(root, "verify", "--installed", str(site))
    assert run.rc == 1 and "/etc/x\\n::error::forged" in run.out, run.text
    assert not [line for line in run.out.splitlines() if line.startswith("::")], run.out


def test_verify_one_profile_checks_only_what_that_deployment_mounts(stack, tmp_path):
    root = stack
    ok(root, "overlays")
    site = tmp_path / "site-packages"
    for rel in ("a.py", "pkg/b.py"):
        (site / rel).parent.mkdir(parents=True, exist_ok=True)
        (site / rel).write_bytes(UPSTREAM_FILES[rel])
    # a.py is overlaid for gfx942 only: an image with another a.py is fine for gfx950.
    (site / "a.py").write_bytes(b"a newer a.py\n")
    assert run_cli(root, "verify", "--installed", str(site)).rc == 1
    assert run_cli(root, "verify", "--installed", str(site), "--profile", "gfx942").rc == 1
    run = ok(root, "verify", "--installed", str(site), "--profile", "gfx950", "--json")
    doc = json.loads(run.out)
    assert doc["ok"] and {r["path"] for r in doc["results"]} == {
        "gfx950/up/pkg/b.py", "gfx950/up/pkg/new.py", "artifacts/entrypoint.sh",
        "gfx950/compose.yaml", f"{site}/pkg/b.py [gfx950]", f"{site}/pkg/new.py [gfx950]"}
    (root / "overlays/gfx942/up/a.py").write_bytes(b"tampered\n")
    assert run_cli(root, "verify", "--profile", "gfx942").rc == 1
    assert ok(root, "verify", "--profile", "gfx950")
    unknown = run_cli(root, "verify", "--profile", "gfx1100")
    assert unknown.rc == 2 and "unknown profile" in unknown.err


def test_verify_names_a_damaged_manifest_and_reads_sums_as_sha256sum_does(stack, tmp_path):
    """A manifest.json left with merge-conflict markers, or of another shape, is bad input
    naming the file (exit 2), for `verify` and `verify --installed`; before, both ended in an
    internal error (exit 70: JSONDecodeError, TypeError, AttributeError). SHA256SUMS is read as
    `sha256sum -c --strict` reads it: a digest in capitals is the same digest, and one that is not
    hexadecimal names its line."""
    root = stack
    ok(root, "overlays")
    manifest = root / "overlays/manifest.json"
    good = manifest.read_bytes()
    site = tmp_path / "site-packages"
    site.mkdir()
    for damaged in (b"<<<<<<< HEAD\n" + good + b"=======\n" + good + b">>>>>>> theirs\n",
                    b'{"artifacts": [{"path": 5}]}\n', b"[1]\n"):
        manifest.write_bytes(damaged)
        for args in (["verify"], ["verify", "--installed", str(site)]):
            run = run_cli(root, *args)
            assert run.rc == 2, run.text
            assert str(manifest) in run.err and "internal error" not in run.err
    manifest.write_bytes(good)
    sums = root / "overlays/SHA256SUMS"
    right = sums.read_bytes()
    sums.write_bytes(b"".join(line[:64].upper() + line[64:] + b"\n"
                              for line in right.splitlines()))
    assert subprocess.run(["sha256sum", "-c", "--strict", "--quiet", "SHA256SUMS"],
                          cwd=root / "overlays").returncode == 0
    assert ok(root, "verify").rc == 0
    lines = right.splitlines()
    lines[1] = "\u00e9".encode() * 32 + lines[1][64:]
    sums.write_bytes(b"\n".join(lines) + b"\n")
    run = run_cli(root, "verify")
    assert run.rc == 2 and f"{sums}:2:" in run.err and "internal error" not in run.err


def test_overlays_for_one_profile_when_the_series_changed_another(stack):
    """`overlays --profile gfx942` keeps the other profiles' overlay files, but SHA256SUMS and
    manifest.json cover every profile. After a change to a fix of both profiles it exited 0 and
    listed gfx950/up/pkg/b.py with the new hash beside the stale file: `sha256sum -c` and
    `verify` failed, and gfx950's compose file mounted the stale file. Now it is refused, naming
    the file, with overlays/ as it was; a change to gfx942's own fix regenerates as asked."""
    root = stack
    ok(root, "overlays")
    before = tree_bytes(root / "overlays")
    both = root / "series/up/all-b.patch"
    both.write_bytes(both.read_bytes().replace(b"+y = 22\n", b"+y = 33\n"))
    run = run_cli(root, "overlays", "--profile", "gfx942")
    assert run.rc == 2 and "overlays/gfx950/up/pkg/b.py" in run.err, run.text
    assert tree_bytes(root / "overlays") == before
    ok(root, "overlays")
    own = root / "series/up/fnuz.patch"
    own.write_bytes(own.read_bytes().replace(b"+LINE3 gfx942\n", b"+LINE3 gfx942 again\n"))
    gfx950 = tree_bytes(root / "overlays/gfx950")
    run = ok(root, "overlays", "--profile", "gfx942")
    assert (root / "overlays/gfx942/up/a.py").read_bytes().count(b"LINE3 gfx942 again") == 1
    # The run says what it regenerated: gfx942's files; gfx950's are kept as they were (it
    # said "wrote 5 overlay files (gfx942: 3, gfx950: 2)", as if every profile's).
    assert run.out.splitlines()[-1] == (
        "wrote 3 overlay files (gfx942: 3; gfx950's 2 kept as they were), SHA256SUMS, "
        "manifest.json and compose mounts under overlays/"), run.text
    assert tree_bytes(root / "overlays/gfx950") == gfx950
    assert subprocess.run(["sha256sum", "-c", "--strict", "--quiet", "SHA256SUMS"],
                          cwd=root / "overlays").returncode == 0
    ok(root, "verify")


def test_verify_reports_a_manifest_that_disagrees_with_sha256sums(stack):
    """manifest.json pins each overlay file for verify --image, the Dockerfile and its reader;
    one that pins another hash than SHA256SUMS (two files a merge resolved differently), or
    lacks a file SHA256SUMS lists, passed `verify` as ok. It is a mismatch naming the file
    (exit 1), within the profile asked for."""
    root = stack
    ok(root, "overlays")
    manifest = root / "overlays/manifest.json"
    good = json.loads(manifest.read_bytes())
    doc = json.loads(manifest.read_bytes())
    (entry,) = [e for e in doc["overlays"] if e["file"] == "gfx942/up/a.py"]
    entry["sha256"] = "0" * 64
    manifest.write_text(json.dumps(doc, indent=2) + "\n")
    assert subprocess.run(["sha256sum", "-c", "--strict", "--quiet", "SHA256SUMS"],
                          cwd=root / "overlays").returncode == 0
    run = run_cli(root, "verify")
    assert run.rc == 1, run.text
    assert "gfx942/up/a.py" in run.out and "manifest.json pins another sha256" in run.out
    assert ok(root, "verify", "--profile", "gfx950").rc == 0
    doc = dict(good, overlays=[e for e in good["overlays"] if e["file"] != "gfx950/up/pkg/b.py"])
    manifest.write_text(json.dumps(doc, indent=2) + "\n")
    run = run_cli(root, "verify", "--profile", "gfx950")
    assert run.rc == 1 and "SHA256SUMS lists it, manifest.json does not" in run.out, run.text
    manifest.write_text(json.dumps(good, indent=2) + "\n")
    assert ok(root, "verify").rc == 0


def test_an_upstream_without_install_root_is_said_to_be_in_no_mount(tmp_path):
    """Without `install-root` nothing says where an upstream's files go in the image, so the
    compose file mounts none of its overlay files and the Dockerfile copies none: overlays
    writes and pins them all the same, and says that a deployment would run without them."""
    root, _ = git_project(tmp_path, install_root=None)
    write_patch(root, "all-b", B_DIFF)
    run = ok(root, "overlays")
    assert "warning: up: no install-root is configured, so compose.yaml does not mount its " \
           "overlay files and the Dockerfile does not copy them (set " \
           "upstreams.up.install-root)" in run.err
    assert (root / "overlays/up/pkg/b.py").is_file()
    compose = yaml.safe_load((root / "overlays/compose.yaml").read_bytes())
    (service,) = compose["services"].values()
    assert service["volumes"] == []
    # With an install root the warning is gone and the file is mounted.
    config = root / "pyproject.toml"
    config.write_text(config.read_text().replace(
        "[tool.patchforge.upstreams.up]\n",
        f'[tool.patchforge.upstreams.up]\ninstall-root = "{INSTALL_ROOT}"\n'))
    run = ok(root, "overlays")
    assert "install-root" not in run.err
    compose = yaml.safe_load((root / "overlays/compose.yaml").read_bytes())
    (service,) = compose["services"].values()
    assert [v["target"] for v in service["volumes"]] == [f"{INSTALL_ROOT}/pkg/b.py"]


def test_overlays_check_fails_overlays_in_step_that_no_deployment_mounts(tmp_path):
    """Without `install-root` the compose file mounts none of the upstream's overlay files and
    the Dockerfile copies none: `verify` failed that (exit 1) and `lint` flagged it, but
    `overlays --check`, the gate a stack's CI runs, exited 0 (`"ok": true`) on overlays in step
    that no deployment has. It now exits 1, as for a fix the pin lacks, saying why once (text,
    `--json`, a GitHub error annotation); with the setting and the overlays made again, 0."""
    root, _ = git_project(tmp_path, install_root=None)
    write_patch(root, "all-b", B_DIFF)
    said = "up: no install-root is configured, so compose.yaml does not mount its overlay " \
        "files and the Dockerfile does not copy them (set upstreams.up.install-root)"
    assert ok(root, "overlays").err.count(said) == 1
    run = run_cli(root, "overlays", "--check")
    assert run.rc == 1 and "overlays are up to date" in run.out, run.text
    assert run.err.count(said) == 1, run.err
    run = run_cli(root, "overlays", "--check", "--json")
    doc = json.loads(run.out)
    assert run.rc == 1 and doc["ok"] is False and doc["drift"] == [], run.text
    assert schema_errors(doc, "overlays") == []
    run = run_cli(root, "overlays", "--check", "--format", "github")
    assert run.rc == 1 and f"::error title=patchforge overlays --check::{said}" in run.out, \
        run.text
    config = root / "pyproject.toml"
    config.write_text(config.read_text().replace(
        "[tool.patchforge.upstreams.up]\n",
        f'[tool.patchforge.upstreams.up]\ninstall-root = "{INSTALL_ROOT}"\n'))
    assert run_cli(root, "overlays", "--check").rc == 1  # (the fragment mounts nothing yet)
    ok(root, "overlays")
    run = ok(root, "overlays", "--check")
    assert "install-root" not in run.err, run.err


def test_verify_fails_the_compose_file_of_an_upstream_without_install_root(tmp_path):
    """Without `install-root` the compose file mounts none of the upstream's overlay files and
    the Dockerfile copies none; `overlays` warned, but `verify`, what a CI runs, passed (exit 0,
    every row ok) while a deployment through them ran without the fixes. Now the compose
    file's row fails, naming the upstream and the setting, until the overlays are made with
    one."""
    root, _ = git_project(tmp_path, install_root=None)
    write_patch(root, "all-b", B_DIFF)
    ok(root, "overlays")
    run = run_cli(root, "verify")
    assert run.rc == 1, run.text
    assert "mismatch  compose.yaml  mounts none of up's 1 overlay file, and the Dockerfile " \
           "copies none, so no deployment through them has its fixes: no install-root is " \
           "configured for it: add `install-root = \"DIR\"` (where the image installs it, " \
           "e.g. its site-packages) to the [tool.patchforge.upstreams.up] table of " \
           "pyproject.toml and run `patchforge overlays`" in run.out, run.out
    assert "1 failed" in run.out
    doc = json.loads(run_cli(root, "verify", "--json").out)
    assert doc["ok"] is False and schema_errors(doc, "verify") == []
    assert [(r["path"], r["state"]) for r in doc["results"] if r["state"] != "ok"] == \
        [("compose.yaml", "mismatch")]
    # The setting given but the overlays not made again: still mounted nowhere.
    config = root / "pyproject.toml"
    config.write_text(config.read_text().replace(
        "[tool.patchforge.upstreams.up]\n",
        f'[tool.patchforge.upstreams.up]\ninstall-root = "{INSTALL_ROOT}"\n'))
    run = run_cli(root, "verify")
    assert run.rc == 1 and "made without an install-root for it, which the configuration " \
        "now gives: run `patchforge overlays`" in run.out, run.out
    ok(root, "overlays")
    assert "0 failed" in ok(root, "verify").out


@pytest.mark.parametrize("name", ["Dockerfile", "SHA256SUMS", "compose.yaml", "PATCHES.md"])
def test_an_upstream_or_profile_named_like_a_file_patchforge_writes_is_refused(tmp_path, name):
    """overlays/<upstream>/ and series/<upstream>/ beside the files patchforge writes there:
    `upstream add Dockerfile` was taken (config and lock written, exit 0) and only `overlays`
    failed later. It is refused now with nothing written; a profile of such a name written
    into the configuration by hand (in any case: a checkout on macOS folds it) is refused by
    every command, naming the configuration's file and line."""
    upstream = Upstream(tmp_path / "up", {"pkg/b.py": b"x = 1\n"})
    root = make_project(tmp_path / "project", pyproject=True)
    before = snapshot(root)
    run = run_cli(root, "upstream", "add", name, "--git", str(upstream.path), "--at", "main")
    assert run.rc == 2 and f"upstream {name!r} is named like" in run.err, run.text
    assert snapshot(root) == before
    add_git_upstream(root, "up", upstream.path, "main")
    config = root / "pyproject.toml"
    text = config.read_text().replace("[tool.patchforge.profiles]\n",
                                      f'[tool.patchforge.profiles]\n"{name.lower()}" = "x"\n')
    config.write_text(text)
    line = text.splitlines().index(f'"{name.lower()}" = "x"') + 1
    for command in (["overlays"], ["status"], ["list"]):
        run = run_cli(root, *command)
        assert run.rc == 2 and f"{config}:{line}: " in run.err \
            and f"profile {name.lower()!r} is named like" in run.err, (command, run.text)
    assert not (root / "overlays").exists()


def test_the_names_overlays_writes_beside_a_profile_or_upstream_are_all_reserved():
    """Every file overlays/ holds beside the directories named after profiles and upstreams
    is a name the configuration refuses for them."""
    from patchforge import overlay
    from patchforge.names import RESERVED_DIRECTORY_NAMES

    own = {*overlay.GENERATED_NAMES, *overlay.BUILD_OUTPUT_NAMES, *overlay.KEEP_NAMES,
           "compose.yaml", overlay.ARTIFACTS_DIR}
    assert {n.lower() for n in own if not n.startswith(".")} <= set(RESERVED_DIRECTORY_NAMES)


def test_an_overlay_file_added_by_hand_is_never_thrown_away(stack):
    """A hotfix dropped into the tree a stack deploys from, as overlays kept by hand were: an
    overlay-shaped file (`<profile>/<upstream>/<path>`) of a file no patch touches. `overlays`
    and a rebase's write-out swapped in a new tree without it, exit 0, the hotfix gone; only an
    edited file was refused. Now both refuse, naming the file and the `import overlay` that
    makes it a patch, and write nothing; imported, it is regenerated like any overlay. A byte-
    code cache under overlays/ is nobody's fix: it goes with the swap."""
    root = stack
    ok(root, "overlays")
    hotfix = root / "overlays/gfx942/up/pkg/nofinal.txt"
    hotfix.write_bytes(b"alpha\nBETA\ngamma")
    before = tree_bytes(root / "overlays")
    run = run_cli(root, "overlays")
    assert run.rc == 2 and "overlays/gfx942/up/pkg/nofinal.txt was put there by hand" in run.err
    assert ("patchforge import overlay overlays/gfx942/up/pkg/nofinal.txt --upstream up --path "
            "pkg/nofinal.txt --name NAME --profiles gfx942" in run.err), run.text
    assert tree_bytes(root / "overlays") == before
    check = run_cli(root, "overlays", "--check")
    assert check.rc == 1 and "import overlay overlays/gfx942/up/pkg/nofinal.txt" in check.err
    lock = (root / "upstream.lock").read_bytes()
    rebase = run_cli(root, "rebase", "--to", "up=main")
    assert rebase.rc == 2 and "put there by hand" in rebase.err, rebase.text
    assert tree_bytes(root / "overlays") == before and (root / "upstream.lock").read_bytes() == lock
    ok(root, "import", "overlay", str(hotfix), "--upstream", "up", "--path", "pkg/nofinal.txt",
       "--name", "hotfix", "--profiles", "gfx942")
    cache = root / "overlays/gfx942/up/pkg/__pycache__/b.cpython-311.pyc"
    cache.parent.mkdir()
    cache.write_bytes(b"\x00")
    ok(root, "overlays")
    assert hotfix.read_bytes() == b"alpha\nBETA\ngamma" and not cache.exists()
    assert "gfx942/up/pkg/nofinal.txt" in (root / "overlays/SHA256SUMS").read_text()
    # A hotfix at a path a fix of the series is about to write (a teammate's fix of that file
    # pulled in): known by its path alone, it was overwritten without a word.
    other = root / "overlays/gfx950/up/pkg/crlf.txt"
    other.write_bytes(b"hand fix\r\n")
    add_patch_file(root, "up", "crlf.patch", patch_bytes(
        "up", json.loads((root / "upstream.lock").read_text())["upstreams"]["up"]["commit"],
        "crlf", b"diff --git a/pkg/crlf.txt b/pkg/crlf.txt\n"
        b"--- a/pkg/crlf.txt\n+++ b/pkg/crlf.txt\n@@ -1,3 +1,3 @@\n one\r\n-two\r\n"
        b"+TWO\r\n three\r\n"))
    refused = run_cli(root, "overlays")
    assert refused.rc == 2 and "overlays/gfx950/up/pkg/crlf.txt was put there by hand" in \
        refused.err, refused.text
    assert other.read_bytes() == b"hand fix\r\n"


def test_a_file_put_into_overlays_by_hand_is_never_deleted_but_patchforges_own_are(stack):
    """A tuning table copied to overlays/artifacts/ (mounted by the stack's own compose file), an
    overlays/.dockerignore, notes in a profile's directory: `overlays` swapped in a new tree
    without them, exit 0, not a word, and `overlays --check` called them "no longer
    generated". Now it refuses, naming the file and the ways on, nothing written (a rebase
    too); what patchforge itself wrote earlier (the copy of an artifact no longer declared, a
    profile removed from the configuration) still goes, also when its record of its last
    write is gone (a fresh clone: the committed SHA256SUMS and manifest.json name them)."""
    root = stack
    ok(root, "overlays")
    placed = {"overlays/.dockerignore": b"*.md\n",
              "overlays/artifacts/extra.json": b'{"tuning": 1}\n',
              "overlays/gfx942/notes.txt": b"why\n"}
    for rel, data in placed.items():
        (root / rel).write_bytes(data)
    before = tree_bytes(root / "overlays")
    run = run_cli(root, "overlays")
    assert run.rc == 2, run.text
    assert "overlays/.dockerignore and 2 more were not written by patchforge" in run.err, run.err
    assert "nothing was written" in run.err and "declare it under `artifacts`" in run.err
    assert "keep it outside overlays/ (`mv overlays/.dockerignore FILE`)" in run.err
    assert tree_bytes(root / "overlays") == before
    check = run_cli(root, "overlays", "--check")
    assert check.rc == 1 and "no longer generated" not in check.out, check.text
    for rel in placed:
        assert f"extra    {rel.removeprefix('overlays/')}: not written by patchforge" in \
            check.out, check.out
    lock = (root / "upstream.lock").read_bytes()
    rebase = run_cli(root, "rebase", "--to", "up=main")
    assert rebase.rc == 2 and "not written by patchforge" in rebase.err, rebase.text
    assert tree_bytes(root / "overlays") == before and (root / "upstream.lock").read_bytes() == lock
    # Declared as an artifact (its copy is what overlays/artifacts/ holds): written, and no
    # longer refused; the other two kept outside overlays/.
    (root / "extra.json").write_bytes(b'{"tuning": 1}\n')
    for rel in ("overlays/.dockerignore", "overlays/gfx942/notes.txt"):
        (root / rel).unlink()
    config = root / "pyproject.toml"
    declared = config.read_text()
    config.write_text(declared.replace('artifacts = ["entrypoint.sh"]',
                                       'artifacts = ["entrypoint.sh", "extra.json"]'))
    ok(root, "overlays")
    assert "artifacts/extra.json" in (root / "overlays/SHA256SUMS").read_text()
    # patchforge's own, no longer generated: an artifact undeclared and a profile removed,
    # with the record of the last write gone.
    (root / ".patchforge/overlays-written.sha256").unlink()
    config.write_text(declared.replace('gfx950 = "MI355X"\n', ""))
    assert (root / "overlays/gfx950/compose.yaml").exists()
    check = run_cli(root, "overlays", "--check")
    assert "extra    artifacts/extra.json: no longer generated" in check.out, check.text
    ok(root, "overlays")
    assert not (root / "overlays/artifacts/extra.json").exists()
    assert not (root / "overlays/gfx950").exists()


def test_an_overlay_file_edited_by_hand_is_never_thrown_away(stack, tmp_path):
    """A stack that kept overlays by hand edits the files under overlays/. `overlays` (and a
    rebase's write-out) replaced such a file with the regenerated one, exit 0, the change gone
    without a word. Now both refuse, naming the file and the `import overlay` that makes the
    change a patch, and write nothing. Files written before a `git pull` brought newer
    SHA256SUMS are no hand edits: patchforge's record of its own last write tells them apart."""
    root = stack
    ok(root, "overlays")
    # A teammate's regeneration arrives by `git pull`: newer sums and patch, the old files.
    theirs = tmp_path / "theirs"
    shutil.copytree(root, theirs, ignore=shutil.ignore_patterns(".patchforge"))
    patch = theirs / "series/up/all-b.patch"
    patch.write_bytes(patch.read_bytes().replace(b"+y = 22\n", b"+y = 33\n"))
    ok(theirs, "overlays")
    for rel in ("series/up/all-b.patch", "overlays/SHA256SUMS", "overlays/manifest.json"):
        (root / rel).write_bytes((theirs / rel).read_bytes())
    ok(root, "overlays")
    assert b"y = 33" in (root / "overlays/gfx950/up/pkg/b.py").read_bytes()
    # A fix made in the overlay file itself.
    overlay = root / "overlays/gfx942/up/a.py"
    edited = overlay.read_bytes() + b"hand fix\n"
    overlay.write_bytes(edited)
    before = tree_bytes(root / "overlays")
    run = run_cli(root, "overlays")
    assert run.rc == 2 and "overlays/gfx942/up/a.py changed since patchforge wrote it" in run.err
    assert ("patchforge import overlay overlays/gfx942/up/a.py --upstream up --path a.py"
            in run.err), run.text
    assert tree_bytes(root / "overlays") == before
    # `overlays --check` (CI) gives that way on too: "run `patchforge overlays`" led to the
    # refusal above.
    run = run_cli(root, "overlays", "--check")
    assert run.rc == 1 and "run `patchforge overlays`" not in run.err, run.text
    assert ("patchforge import overlay overlays/gfx942/up/a.py --upstream up --path a.py"
            in run.err), run.text
    # So does a rebase, before it begins: the series and the lock stay as they were.
    upstream = tmp_path / "up-upstream"
    (upstream / "pkg/crlf.txt").write_bytes(b"one\r\ntwo\r\nthree\r\nfour\r\n")
    subprocess.run(["git", "commit", "-qam", "upstream: more"], cwd=upstream, check=True)
    lock = (root / "upstream.lock").read_bytes()
    run = run_cli(root, "rebase", "--to", "up=main")
    assert run.rc == 2 and "overlays/gfx942/up/a.py changed since" in run.err, run.text
    assert tree_bytes(root / "overlays") == before
    assert (root / "upstream.lock").read_bytes() == lock
    # The way out the message gives: the change becomes a patch of the profile's series.
    ok(root, "import", "overlay", str(overlay), "--upstream", "up", "--path", "a.py",
       "--name", "hand-fix", "--profiles", "gfx942")
    ok(root, "overlays")
    assert overlay.read_bytes() == edited
    ok(root, "rebase", "--to", "up=main")
    assert overlay.read_bytes() == edited
    # A SHA256SUMS (from a pull request, say) naming files outside overlays/ makes none of them
    # an overlay changed by hand.
    sums = root / "overlays/SHA256SUMS"
    sums.write_bytes(sums.read_bytes() + f"{'0' * 64}  ../pyproject.toml\n".encode()
                     + f"{'0' * 64}  {root / 'upstream.lock'}\n".encode())
    assert ok(root, "overlays").rc == 0


def _hinted_commands(err: str) -> list[str]:
    """The commands in backticks of a message's hint line, in order."""
    import re

    hint = next(line for line in err.splitlines() if line.startswith("hint: "))
    return re.findall(r"`([^`]*)`", hint)


def _import_hinted(err: str) -> str:
    """The one `import overlay` command among those of a message's hint."""
    (command,) = [c for c in _hinted_commands(err) if c.startswith("patchforge import overlay")]
    return command


def _run_hinted(root: Path, command: str, **words: str):
    """One command of a hint, run as a user would from the project root, the hint's
    placeholders (FILE, NAME) filled in."""
    import shlex

    argv = [words.get(word, word) for word in shlex.split(command)]
    if argv[0] == "patchforge":
        return ok(root, *argv[1:], cwd=root)
    subprocess.run(argv, cwd=root, check=True)
    return None


def _upstream_commit(tmp_path: Path, files: dict[str, bytes], message: str) -> None:
    upstream = tmp_path / "up-upstream"
    for rel, data in files.items():
        (upstream / rel).write_bytes(data)
    subprocess.run(["git", "commit", "-qam", message], cwd=upstream, check=True)


def _changed_lines(patch: bytes) -> list[bytes]:
    diff = patch[patch.index(b"@@"):]
    return [line for line in diff.splitlines() if line[:1] in (b"+", b"-")]


def test_a_rebase_refuses_a_hand_edited_overlay_before_any_work(stack, tmp_path):
    """A rebase found an overlay file edited by hand only at its write-out: after a conflict
    stop was resolved, `--continue` was refused and its hint (`import overlay`) too, since the
    series was being rebased; the hand change or the resolution had to go. `rebase --to` now
    refuses before any work, and the `import overlay` it names, run as printed, works then and
    makes the hand change a patch of the overlay's profile; the rebase then goes on with it."""
    root = stack
    ok(root, "overlays")
    overlay = root / "overlays/gfx942/up/a.py"
    edited = overlay.read_bytes() + b"# hotfix\n"
    overlay.write_bytes(edited)
    # fnuz's line3 changes upstream: a rebase stops on it.
    _upstream_commit(tmp_path, {"a.py": UPSTREAM_FILES["a.py"].replace(b"line3\n", b"line3 new\n")},
                     "upstream: line3")
    project = snapshot(root)
    run = run_cli(root, "rebase", "--to", "up=main")
    assert run.rc == 2 and "overlays/gfx942/up/a.py changed since patchforge wrote it" in run.err, \
        run.text
    assert snapshot(root) == project
    assert "no rebase in progress" in run_cli(root, "rebase", "--continue").err
    command = _import_hinted(run.err)
    assert command == ("patchforge import overlay overlays/gfx942/up/a.py --upstream up "
                       "--path a.py --name NAME --profiles gfx942"), run.err
    _run_hinted(root, command, NAME="hotfix")
    assert _changed_lines((root / "series/up/hotfix.patch").read_bytes()) == [b"+# hotfix"]
    ok(root, "overlays")
    assert overlay.read_bytes() == edited
    assert run_cli(root, "rebase", "--to", "up=main").rc == 3  # fnuz's conflict: a stop



def _stopped_with_overlays(root, tmp_path):
    """Overlays written, then a rebase stopped on a.py (upstream changed line3 and line15):
    the gfx942 overlay file and upstream's new a.py."""
    ok(root, "overlays")
    overlay = root / "overlays/gfx942/up/a.py"
    moved = UPSTREAM_FILES["a.py"].replace(b"line3\n", b"line3 new\n") \
        .replace(b"line15\n", b"line15 upstream\n")
    _upstream_commit(tmp_path, {"a.py": moved}, "upstream: line3, line15")
    run = run_cli(root, "rebase", "--to", "up=main")
    assert run.rc == 3, run.text
    return overlay, moved

def test_an_overlay_edited_while_a_rebase_is_stopped_keeps_the_change_and_the_resolution(
        stack, tmp_path):
    """An overlay file edited while a rebase is stopped (or running) is still found at the
    write-out, which never replaces it: `--continue` is refused, the rebase stays stopped, and
    the hint is a way on that works then. Followed as printed (the file moved aside, the rebase
    continued, the file imported), the rebased overlay holds the stop's resolution, the
    upstream's new line and the hand change, and the new patch holds the hand change alone,
    though the file was made from the overlay before the rebase."""
    root = stack
    overlay, moved = _stopped_with_overlays(root, tmp_path)
    resolution = moved.replace(b"line3 new\n", b"LINE3 gfx942 new\n")
    (root / ".patchforge/work/up/a.py").write_bytes(resolution)
    edited = overlay.read_bytes() + b"# hotfix\n"
    overlay.write_bytes(edited)
    project = snapshot(root, skip_state=True)
    run = run_cli(root, "rebase", "--continue")
    assert run.rc == 2 and "overlays/gfx942/up/a.py changed since patchforge wrote it" in run.err, \
        run.text
    assert snapshot(root, skip_state=True) == project
    assert "import overlay" not in run.err.split("hint: ")[0]
    commands = _hinted_commands(run.err)
    assert commands == ["mv overlays/gfx942/up/a.py FILE", "patchforge rebase --continue",
                        "patchforge import overlay FILE --upstream up --path a.py --name NAME "
                        "--profiles gfx942"], run.err
    aside = tmp_path / "a.py.mine"
    for command in commands:
        run = _run_hinted(root, command, FILE=str(aside), NAME="hotfix")
    assert aside.read_bytes() == edited
    # Said with the lines the rebase changed, kept as rebased, and the way for a file that
    # was made after the rebase instead.
    assert "its change is taken onto the rebased file, where lines 3, 15 as the rebase " \
        "changed them stay so" in run.err and \
        "`rm .patchforge/overlays-before-rebase/gfx942/up/a.py`" in run.err, run.err
    assert _changed_lines((root / "series/up/hotfix.patch").read_bytes()) == [b"+# hotfix"]
    ok(root, "overlays")
    assert overlay.read_bytes() == resolution + b"# hotfix\n"
    assert run_cli(root, "status").rc == 0


def test_the_hint_for_an_overlay_edited_by_hand_imports_exactly_the_hand_change(stack):
    """The `import overlay` that `overlays` hints for a hand-edited overlay was refused ("lacks
    the changes that fnuz.patch make") when the hand change sat next to a line of the series:
    a 3-way merge from the upstream's file called it a conflict. Run as printed, it now makes a
    patch of the overlay's profile holding the hand change alone."""
    root = stack
    ok(root, "overlays")
    overlay = root / "overlays/gfx942/up/a.py"
    edited = overlay.read_bytes().replace(b"LINE3 gfx942\n", b"LINE3 gfx942\n# hotfix\n")
    overlay.write_bytes(edited)
    run = run_cli(root, "overlays")
    assert run.rc == 2, run.text
    command = _import_hinted(run.err)
    assert command == ("patchforge import overlay overlays/gfx942/up/a.py --upstream up "
                       "--path a.py --name NAME --profiles gfx942"), run.err
    _run_hinted(root, command, NAME="hotfix")
    patch = (root / "series/up/hotfix.patch").read_bytes()
    assert b"Profiles: gfx942\n" in patch and _changed_lines(patch) == [b"+# hotfix"]
    ok(root, "overlays")
    assert overlay.read_bytes() == edited
    assert not (root / "overlays/gfx950/up/a.py").exists()


DROP_DIFF = (b"diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -9,5 +9,2 @@\n"
             b" line9\n-line10\n-line11\n-line12\n line13\n")


def test_a_hand_change_never_puts_back_what_the_series_removes_unseen(stack):
    """A hand-edited overlay that brings back, edited, lines a fix of the series removes was
    imported as the hand change: the fix was undone without a word. It is refused, naming the
    fix and the lines, nothing written; one that takes out a line the series put there is
    refused the same way. Lines added where the series removed others, resembling none of
    them, are imported, and said. A hand change of the one line a fix puts there is refused
    naming that line and the `edit` that changes the fix."""
    root = stack
    ok(root, "overlays")
    overlay = root / "overlays/gfx942/up/a.py"
    generated = overlay.read_bytes()
    series = tree_bytes(root / "series")
    overlay.write_bytes(generated.replace(b"LINE3 gfx942\n", b"LINE3 gfx942, adjusted\n"))
    command = _import_hinted(run_cli(root, "overlays").err)
    run = run_cli(root, *command.replace("NAME", "hotfix").split()[1:], cwd=root)
    assert run.rc == 2 and "nothing was written" in run.err, run.text
    assert "fnuz.patch" in run.err and "line 3: LINE3 gfx942" in run.err, run.err
    assert "`patchforge edit fnuz`" in run.err and "import overlay" not in run.err, run.err
    assert tree_bytes(root / "series") == series
    overlay.write_bytes(generated)
    write_patch(root, "drop", DROP_DIFF, profiles="gfx942")
    ok(root, "overlays")
    generated = overlay.read_bytes()
    assert b"line11" not in generated and b"LINE3 gfx942\n" in generated
    series = tree_bytes(root / "series")
    for edited, named in (
            (generated.replace(b"line9\n", b"line9\nline11 = compute(x, strict=True)\n"),
             ["drop.patch", "line11", "line11 = compute(x, strict=True)"]),
            (generated.replace(b"LINE3 gfx942\n", b"LINE3 gfx942, adjusted\n"),
             ["fnuz.patch", "line 3: LINE3 gfx942"])):
        overlay.write_bytes(edited)
        command = _import_hinted(run_cli(root, "overlays").err)
        run = run_cli(root, *command.replace("NAME", "hotfix").split()[1:], cwd=root)
        assert run.rc == 2 and "nothing was written" in run.err, run.text
        for text in named:
            assert text in run.err, (text, run.err)
        assert tree_bytes(root / "series") == series
    overlay.write_bytes(generated.replace(b"line9\n", b"line9\nimport os\n"))
    run = ok(root, *command.replace("NAME", "beside").split()[1:], cwd=root)
    assert "drop.patch" in run.err and "line11" in run.err and "import os" in run.err
    assert _changed_lines((root / "series/up/beside.patch").read_bytes()) == [b"+import os"]


def test_a_hand_edit_of_a_fixs_own_line_is_hinted_to_patchforge_edit_and_the_hints_end(
        tmp_path):
    """An overlay file under overlays/ edited by hand where the one-line fix put its line
    (`y = 22` made `y = 23`). `overlays` refused, naming `import overlay`; that import was
    refused as "lacks the changes that all-b.patch make" with the hint to make the change
    on the series' file that `patchforge overlays` writes, which refused again: every hint
    led back to the other. The import now says the edit changes the fix's own line and
    names `patchforge edit all-b` (as `overlays` does too); followed as written, the fix
    holds the change and `overlays` writes the file as edited."""
    import re

    root, _ = git_project(tmp_path)
    write_patch(root, "all-b", B_DIFF)
    ok(root, "overlays")
    overlay = root / "overlays/up/pkg/b.py"
    edited = overlay.read_bytes().replace(b"y = 22\n", b"y = 23\n")
    overlay.write_bytes(edited)
    series = tree_bytes(root / "series")
    run = run_cli(root, "overlays")
    assert run.rc == 2 and "overlays/up/pkg/b.py changed since patchforge wrote it" in run.err
    commands = _hinted_commands(run.err)
    assert commands == ["patchforge import overlay overlays/up/pkg/b.py --upstream up --path "
                        "pkg/b.py --name NAME", "patchforge edit all-b", "patchforge refresh",
                        "patchforge overlays"], run.err
    # The first way, as printed: refused, and its hint is the second way, not `overlays`.
    imported = run_cli(root, *commands[0].replace("NAME", "hotfix").split()[1:], cwd=root)
    assert imported.rc == 2 and "nothing was written" in imported.err, imported.text
    assert "takes out or changes lines that all-b.patch put in pkg/b.py (line 2: y = 22)" \
        in imported.err, imported.err
    assert tree_bytes(root / "series") == series
    assert _hinted_commands(imported.err) == ["patchforge edit all-b", "patchforge refresh",
                                              "patchforge overlays"], imported.err
    # Followed as written: `edit`, the change made where it says, `refresh`, `overlays`.
    opened = _run_hinted(root, "patchforge edit all-b")
    work = Path(re.match(r"(\S+): the files of all-b", opened.out).group(1))
    (work / "pkg/b.py").write_bytes((work / "pkg/b.py").read_bytes().replace(b"y = 22\n",
                                                                            b"y = 23\n"))
    _run_hinted(root, "patchforge refresh")
    _run_hinted(root, "patchforge overlays")
    assert overlay.read_bytes() == edited
    assert _changed_lines((root / "series/up/all-b.patch").read_bytes()) == [b"-y = 2",
                                                                            b"+y = 23"]
    assert ok(root, "overlays", "--check").rc == 0
    assert ok(root, "verify").rc == 0


def test_a_hand_change_of_one_profiles_overlay_is_imported_against_that_profiles_file(stack):
    """The overlay of gfx942 lacks a gfx950-only fix of the same file. Its hand change was
    taken as the difference from the file with every profile's fixes applied, so the gfx942
    patch undid the gfx950 fix's line in its context and no longer applied; it is now the
    difference from gfx942's own file: gfx942 gets the hand change, gfx950 keeps its fix
    without it."""
    root = stack
    write_patch(root, "z950", b"diff --git a/pkg/b.py b/pkg/b.py\n--- a/pkg/b.py\n"
                b"+++ b/pkg/b.py\n@@ -1,3 +1,3 @@\n x = 1\n y = 22\n-z = 3\n+z = 33\n",
                profiles="gfx950")
    ok(root, "overlays")
    overlay = root / "overlays/gfx942/up/pkg/b.py"
    assert overlay.read_bytes() == b"x = 1\ny = 22\nz = 3\n"
    overlay.write_bytes(b"x = 1\ny = 22\nz = 3\nw = 4\n")
    command = _import_hinted(run_cli(root, "overlays").err)
    assert command.endswith(" --profiles gfx942"), command
    _run_hinted(root, command, NAME="w942")
    assert _changed_lines((root / "series/up/w942.patch").read_bytes()) == [b"+w = 4"]
    ok(root, "overlays")
    assert overlay.read_bytes() == b"x = 1\ny = 22\nz = 3\nw = 4\n"
    assert (root / "overlays/gfx950/up/pkg/b.py").read_bytes() == b"x = 1\ny = 22\nz = 33\n"


def test_an_artifact_named_with_a_backslash_is_listed_as_sha256sum_writes_it(stack):
    """`tuning\\MI300X.csv` is a file name like any other on Linux. overlays refused it ("must
    be a path inside the project", then "cannot list it in SHA256SUMS"); its line is now written
    as GNU sha256sum writes it (a backslash begins the line, the name's `\\` doubled), so the
    real `sha256sum -c --strict` checks it with every other file and nothing else, and `verify`
    and `overlays --check` read it back."""
    root = stack
    text = (root / "pyproject.toml").read_text()
    (root / "pyproject.toml").write_text(text.replace(
        'artifacts = ["entrypoint.sh"]', 'artifacts = ["entrypoint.sh", \'tuning\\MI300X.csv\']'))
    (root / "tuning\\MI300X.csv").write_bytes(b"m,n,k\n1,2,3\n")
    ok(root, "overlays")
    overlays = root / "overlays"
    proc = subprocess.run(["sha256sum", "-c", "--strict", "SHA256SUMS"], cwd=overlays,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    checked = sorted(line.rsplit(": ", 1)[0] for line in proc.stdout.splitlines())
    on_disk = sorted(p.relative_to(overlays).as_posix() for p in overlays.rglob("*")
                     if p.is_file() and p.name not in ("SHA256SUMS", "manifest.json",
                                                        "compose.yaml", "Dockerfile"))
    assert checked == on_disk and "artifacts/tuning\\MI300X.csv" in checked
    ok(root, "verify")
    ok(root, "overlays", "--check")
    (overlays / "artifacts/tuning\\MI300X.csv").write_bytes(b"tampered\n")
    run = run_cli(root, "verify")
    assert run.rc == 1 and "artifacts/tuning\\MI300X.csv" in run.text


def test_overlays_of_a_stack_without_profiles_are_counted_plainly(tmp_path):
    """A stack with no profiles was told "wrote 1 overlay files ((all): 1)": an internal
    placeholder for "no profile" and a wrong plural. One overlay is "1 overlay file"."""
    root, _ = git_project(tmp_path)
    ok(root, "new", "fix", "--file", "a.py")
    work = root / ".patchforge/work/up/a.py"
    work.write_bytes(work.read_bytes().replace(b"line2", b"line2 fixed"))
    ok(root, "refresh")
    run = ok(root, "overlays")
    assert run.out.startswith("wrote 1 overlay file, SHA256SUMS, manifest.json"), run.out
    assert "(all)" not in run.out


def _two_upstreams_fixing_b_at_one_root(tmp_path):
    """A project whose two upstreams, installed at one root, each carry a fix to pkg/b.py."""
    root, _ = git_project(tmp_path, install_root=INSTALL_ROOT)
    other = Upstream(tmp_path / "other-upstream", {"pkg/b.py": UPSTREAM_FILES["pkg/b.py"]})
    add_git_upstream(root, "other", other.path, "main", install_root=INSTALL_ROOT)
    write_patch(root, "all-b", B_DIFF)
    other_diff = other.diff({"pkg/b.py": UPSTREAM_FILES["pkg/b.py"] + b"w = 4\n"}, other.base)
    base = json.loads((root / "upstream.lock").read_text())["upstreams"]["other"]["commit"]
    add_patch_file(root, "other", "also-b.patch", patch_bytes("other", base, "fix b too",
                                                              other_diff))
    return root


def test_two_upstreams_whose_overlays_go_to_one_path_in_the_image_are_refused(tmp_path):
    """Two upstreams installed at one root, each with a fix to the same path: compose mounted
    both files at one target and the Dockerfile copied one over the other, so one upstream's
    fix was never deployed, while overlays, verify and lint were green. `overlays` refuses,
    naming both files, their patches and the target, with nothing written; `lint` says so."""
    root = _two_upstreams_fixing_b_at_one_root(tmp_path)
    before = snapshot(root)
    run = run_cli(root, "overlays")
    assert run.rc == 2, run.text
    assert f"{INSTALL_ROOT}/pkg/b.py" in run.err and "up/all-b.patch" in run.err \
        and "other/also-b.patch" in run.err, run.err
    assert "pyproject.toml" in run.err, run.err  # the configuration's install-root, named
    assert snapshot(root) == before
    lint = run_cli(root, "lint", "--json")
    assert lint.rc == 1
    found = [f for f in json.loads(lint.out)["findings"] if f["check"] == "overlays"]
    assert found and f"{INSTALL_ROOT}/pkg/b.py" in found[0]["message"], lint.out
    assert found[0]["patch"] == "other/also-b.patch", found  # a label a CI annotation resolves
    # Each upstream at its own root: both are deployed.
    config = root / "pyproject.toml"
    text = config.read_text()
    at = text.index("[tool.patchforge.upstreams.other]")
    config.write_text(text[:at] + text[at:].replace(f'"{INSTALL_ROOT}"', '"/opt/other"', 1))
    ok(root, "overlays")
    assert run_cli(root, "lint", "--json").rc == 0


@pytest.mark.parametrize("header", ['[tool.patchforge.upstreams."other"]',
                                    "[tool.patchforge.upstreams.'other']",
                                    "[ tool.patchforge.upstreams . other ]  # the second one"])
def test_the_install_root_line_is_found_under_a_quoted_table_header(tmp_path, header):
    """The refusal of two upstreams sharing an overlay target names the configuration's
    install-root line. A table header written with a quoted key (`[...upstreams."other"]`, as
    TOML allows and some editors write) was not found: the message named no line, or another
    table's. The header is read as a TOML key."""
    root = _two_upstreams_fixing_b_at_one_root(tmp_path)
    config = root / "pyproject.toml"
    text = config.read_text().replace("[tool.patchforge.upstreams.other]", header)
    config.write_text(text)
    lines = text.splitlines()
    tables = {name: lines.index(f"[tool.patchforge.upstreams.{name}]") if name == "up"
              else lines.index(header) for name in ("up", "other")}
    install_roots = {name: next(n + 1 for n in range(at, len(lines))
                                if lines[n].startswith("install-root"))
                     for name, at in tables.items()}
    run = run_cli(root, "overlays")
    assert run.rc == 2, run.text
    named = [name for name in ("up", "other") if f"pyproject.toml:{install_roots[name]}"
             in run.err]
    assert named, (install_roots, run.err)


def test_a_line_added_beside_a_changed_line_of_the_series(stack):
    """Beside a line the series put in place of another (fnuz's LINE3 for line3), a line of
    its own imports as it is, without a word; one like the line replaced is imported and said,
    naming both; the replaced line itself put back is refused, naming it."""
    root = stack
    ok(root, "overlays")
    overlay = root / "overlays/gfx942/up/a.py"
    generated = overlay.read_bytes()
    overlay.write_bytes(generated.replace(b"LINE3 gfx942\n", b"line3\nLINE3 gfx942\n"))
    command = _import_hinted(run_cli(root, "overlays").err)
    run = run_cli(root, *command.replace("NAME", "back").split()[1:], cwd=root)
    assert run.rc == 2 and "brings back lines that fnuz.patch remove from a.py (line3)" \
        in run.err, run.text
    overlay.write_bytes(generated.replace(b"LINE3 gfx942\n", b"# own\nLINE3 gfx942\n"))
    run = ok(root, *command.replace("NAME", "own").split()[1:], cwd=root)
    assert "note: overlays/gfx942/up/a.py" not in run.err, run.err
    ok(root, "overlays")
    generated = overlay.read_bytes()
    overlay.write_bytes(generated.replace(b"LINE3 gfx942\n", b"line3 kept\nLINE3 gfx942\n"))
    run = ok(root, *command.replace("NAME", "alike").split()[1:], cwd=root)
    assert "adds line3 kept where fnuz.patch, own.patch remove line3 from a.py" in run.err, \
        run.err
    assert _changed_lines((root / "series/up/alike.patch").read_bytes()) == [b"+line3 kept"]


def test_an_overlay_imported_for_profiles_whose_files_differ_is_refused(stack):
    """`--profiles gfx942,gfx950` for a.py, which fnuz changes in gfx942 alone: the patch was
    made against the file with every fix, so gfx950's series (without fnuz's line) could not
    take it and `overlays` failed after the import. No one file is both profiles' overlay:
    refused, nothing written; imported for one profile, it works."""
    root = stack
    made = root.parent / "a.py.mine"
    made.write_bytes(UPSTREAM_FILES["a.py"].replace(b"line3\n", b"LINE3 gfx942\n")
                     .replace(b"line18\n", b"line18 fixed\n"))
    series = tree_bytes(root / "series")
    run = run_cli(root, "import", "overlay", str(made), "--upstream", "up", "--path", "a.py",
                  "--name", "both", "--profiles", "gfx942,gfx950")
    assert run.rc == 2 and "the series leaves a.py differently in profiles gfx942 and gfx950" \
        in run.err and "--profiles gfx942" in run.err, run.text
    assert tree_bytes(root / "series") == series
    ok(root, "import", "overlay", str(made), "--upstream", "up", "--path", "a.py",
       "--name", "both", "--profiles", "gfx942")
    ok(root, "overlays")
    assert (root / "overlays/gfx942/up/a.py").read_bytes() == made.read_bytes()


def test_a_moved_aside_overlay_whose_change_meets_the_rebases_is_refused(stack, tmp_path):
    """A file moved aside during a rebase, whose hand change is on the lines the stop's
    resolution changed: taking it onto the rebased file would drop one of the two, so the
    import is refused, naming the file it was made from, nothing written."""
    root = stack
    overlay, moved = _stopped_with_overlays(root, tmp_path)
    (root / ".patchforge/work/up/a.py").write_bytes(
        moved.replace(b"line3 new\n", b"LINE3 gfx942 new\n"))
    aside = tmp_path / "a.py.mine"
    aside.write_bytes(overlay.read_bytes().replace(b"LINE3 gfx942\n", b"LINE3 gfx942 hot\n"))
    overlay.unlink()
    ok(root, "rebase", "--continue")
    series = tree_bytes(root / "series")
    run = run_cli(root, "import", "overlay", str(aside), "--upstream", "up", "--path", "a.py",
                  "--name", "hot", "--profiles", "gfx942")
    assert run.rc == 2 and "was made from overlays/gfx942/up/a.py as it was before the last " \
        "rebase, and changes lines the rebase changed there" in run.err, run.text
    assert tree_bytes(root / "series") == series


def _rebased_with_a_moved_overlay_left(root, tmp_path):
    """Overlays written; a rebase (upstream changed line3, line15 and line16) stopped on a.py
    and resolved, the gfx942 overlay moved aside then let go (never imported), so the
    write-out kept the overlay before the rebase. Returns the overlay file."""
    ok(root, "overlays")
    overlay = root / "overlays/gfx942/up/a.py"
    upstream = UPSTREAM_FILES["a.py"].replace(b"line3\n", b"line3 new\n") \
        .replace(b"line15\nline16\n", b"line15 upstream\nline16 upstream\n")
    _upstream_commit(tmp_path, {"a.py": upstream}, "upstream: line3, line15, line16")
    assert run_cli(root, "rebase", "--to", "up=main").rc == 3
    (root / ".patchforge/work/up/a.py").write_bytes(
        upstream.replace(b"line3 new\n", b"LINE3 gfx942 new\n"))
    overlay.unlink()
    ok(root, "rebase", "--continue")
    return overlay


def test_a_kept_overlay_is_used_only_for_a_file_made_from_it(stack, tmp_path):
    """The overlay a rebase's write-out kept for a file moved aside stays under
    .patchforge/overlays-before-rebase/ while that file is not imported. A hand change made
    later, in the rebased overlay, that puts back lines the rebase changed (line15, line16 as
    they were) looked nearer to the kept file: its change was taken from it, and the lines put
    back were dropped with only a note. A file that matches the kept overlay at some lines the
    rebase changed and the rebased one at others is refused, naming both, nothing written; as
    the hint says, with the kept file removed the whole hand change is imported."""
    root = stack
    overlay = _rebased_with_a_moved_overlay_left(root, tmp_path)
    kept = root / ".patchforge/overlays-before-rebase/gfx942/up/a.py"
    assert kept.exists()
    rebased = overlay.read_bytes()
    edited = rebased.replace(b"line15 upstream\nline16 upstream\n", b"line15\nline16\n") \
        + b"# hotfix\n"
    aside = tmp_path / "a.py.mine"  # made from the rebased overlay, kept aside
    aside.write_bytes(edited)
    args = ["import", "overlay", str(aside), "--upstream", "up", "--path", "a.py", "--name",
            "hotfix", "--profiles", "gfx942"]
    series = tree_bytes(root / "series")
    run = run_cli(root, *args)
    assert run.rc == 2 and "nothing was written" in run.err, run.text
    assert f"{aside} may be made from overlays/gfx942/up/a.py as it was before the last rebase " \
        "(kept as .patchforge/overlays-before-rebase/gfx942/up/a.py) or from the rebased " \
        "overlays/gfx942/up/a.py" in run.err, run.err
    assert tree_bytes(root / "series") == series
    first = _hinted_commands(run.err)[0]
    assert first == "rm .patchforge/overlays-before-rebase/gfx942/up/a.py", run.err
    _run_hinted(root, first)  # made after the rebase, from the rebased overlay
    ok(root, *args)
    assert _changed_lines((root / "series/up/hotfix.patch").read_bytes()) == [
        b"-line15 upstream", b"-line16 upstream", b"+line15", b"+line16", b"+# hotfix"]
    ok(root, "overlays")
    assert overlay.read_bytes() == edited


def test_the_overlay_itself_edited_after_a_rebase_imports_its_whole_change(stack, tmp_path):
    """overlays/<file> as the rebase wrote it, edited afterwards to put back lines the rebase
    changed: imported as the overlays hint says, its whole change is the patch, though a file
    moved aside during the rebase left the overlay before it under
    .patchforge/overlays-before-rebase/ (the lines put back were dropped, with a note)."""
    root = stack
    overlay = _rebased_with_a_moved_overlay_left(root, tmp_path)
    edited = overlay.read_bytes().replace(b"line15 upstream\nline16 upstream\n",
                                          b"line15\nline16\n") + b"# hotfix\n"
    overlay.write_bytes(edited)
    command = _import_hinted(run_cli(root, "overlays").err)
    run = _run_hinted(root, command, NAME="hotfix")
    assert "before the last rebase" not in run.err, run.err
    assert _changed_lines((root / "series/up/hotfix.patch").read_bytes()) == [
        b"-line15 upstream", b"-line16 upstream", b"+line15", b"+line16", b"+# hotfix"]
    ok(root, "overlays")
    assert overlay.read_bytes() == edited


def test_overlays_fetching_its_pins_from_a_slow_server_holds_the_project_for_no_one(tmp_path):
    """`overlays` on a cache without the pinned revision (a fresh clone's first run) fetched
    it holding the project's lock: a rebase, new, edit or refresh beside it waited for the
    network (and gave up after their waits). It fetches first, then takes the lock to build
    and write. The upstream is served over HTTP by a server that holds the fetch's first
    request until the test has locked the project itself."""
    import fcntl
    import os
    import queue
    import sys
    import threading

    from helpers.git import git
    from helpers.servers import GitHttpServer

    class HeldGitServer(GitHttpServer):
        def __init__(self, repo: Path) -> None:
            super().__init__(repo)
            self.arrived: queue.Queue = queue.Queue()
            self.go = threading.Event()

        def route(self, method, path, query, req):
            self.arrived.put(path)
            self.go.wait(timeout=120)
            return super().route(method, path, query, req)

    upstream = Upstream(tmp_path / "up-upstream", UPSTREAM_FILES, message="upstream: initial")
    server = HeldGitServer(upstream.path)
    try:
        root = make_project(tmp_path / "project", pyproject=True)
        server.go.set()
        add_git_upstream(root, "up", server.repo_url, "main")
        (upstream.path / "a.py").write_bytes(UPSTREAM_FILES["a.py"].replace(b"line3\n",
                                                                            b"LINE3\n"))
        diff = git(upstream.path, "diff", "--", "a.py").encode()
        git(upstream.path, "checkout", "--", "a.py")
        add_patch_file(root, "up", "a.patch", patch_bytes("up", upstream.base, "a.patch", diff))
        shutil.rmtree(os.environ["PATCHFORGE_CACHE"])  # a fresh clone's first run
        server.go.clear()
        while not server.arrived.empty():
            server.arrived.get()
        proc = subprocess.Popen([sys.executable, "-m", "patchforge", "--root", str(root),
                                 "overlays"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            server.arrived.get(timeout=120)  # the fetch has begun, and waits on the server
            lock = os.open(root / ".patchforge" / "lock", os.O_CREAT | os.O_RDWR, 0o644)
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)  # BlockingIOError: held
                fcntl.flock(lock, fcntl.LOCK_UN)
            finally:
                os.close(lock)
            directory = os.open(root, os.O_RDONLY)
            try:
                fcntl.flock(directory, fcntl.LOCK_EX | fcntl.LOCK_NB)
            finally:
                os.close(directory)
        finally:
            server.go.set()
            out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err.decode()
        assert (root / "overlays/up/a.py").read_bytes() == \
            UPSTREAM_FILES["a.py"].replace(b"line3\n", b"LINE3\n")
    finally:
        server.go.set()
        server.close()


def test_an_executable_overlay_that_lost_its_mode_fails_verify(tmp_path):
    """A fix creating an executable script: the overlay is written 0755, and a bind mount
    gives the container the host file's mode. Copied without it (an archive, a `chmod -x`),
    `verify` passed (it checked the bytes alone) while `overlays --check` said the file should
    be executable. The manifest says which overlays are executable, and verify checks it."""
    root, _ = git_project(tmp_path, install_root=INSTALL_ROOT)
    write_patch(root, "script", b"diff --git a/run.sh b/run.sh\nnew file mode 100755\n"
                b"--- /dev/null\n+++ b/run.sh\n@@ -0,0 +1,2 @@\n+#!/bin/sh\n+exec serve\n")
    write_patch(root, "all-b", B_DIFF)
    ok(root, "overlays")
    manifest = json.loads((root / "overlays/manifest.json").read_bytes())
    assert {e["path"]: e.get("executable") for e in manifest["overlays"]} == \
        {"run.sh": True, "pkg/b.py": None}
    assert schema_errors(manifest, "manifest") == []
    script = root / "overlays/up/run.sh"
    assert ok(root, "verify").rc == 0
    script.chmod(0o644)
    run = run_cli(root, "verify")
    assert run.rc == 1 and "up/run.sh" in run.out and "not executable" in run.out, run.text
    assert run_cli(root, "overlays", "--check").rc == 1
    script.chmod(0o755)
    assert ok(root, "verify").rc == 0


def test_a_fix_whose_diff_was_lost_is_named_before_its_overlay_goes(tmp_path):
    """A merge of the stack resolved keeping fix.patch's header and losing its diff: the
    drift said only "run `patchforge overlays` and commit", and doing so took the fix out of
    every overlay with every check green after. The fix is named, by `overlays --check`,
    `lint` and the `overlays` that regenerates."""
    from helpers.patches import forwarded_patch

    root, _ = git_project(tmp_path)
    series = root / "series" / "up"
    series.mkdir(parents=True, exist_ok=True)
    (series / "fix.patch").write_bytes(forwarded_patch(1, 4))
    (series / "other.patch").write_bytes(forwarded_patch(2, 14))
    (series / "series").write_text("fix.patch\nother.patch\n")
    ok(root, "overlays")
    entry = next(e for e in json.loads((root / "overlays/manifest.json").read_bytes())["overlays"]
                 if any(p["name"] == "fix.patch" for p in e["patches"]))
    said = f"fix.patch no longer changes up/{entry['path']}"
    whole = (series / "fix.patch").read_bytes()
    (series / "fix.patch").write_bytes(whole[:whole.index(b"\ndiff --git ") + 1])
    check = run_cli(root, "overlays", "--check")
    assert check.rc == 1 and said in check.err, check.err
    lint = run_cli(root, "lint", "--no-forge")
    assert lint.rc == 1 and said in lint.stdout.decode(), lint.stdout
    assert "other.patch no longer" not in check.err + lint.stdout.decode()
    write = run_cli(root, "overlays")
    assert write.rc == 0 and said in write.err, write.err
    # A fix deleted on purpose is no loss: nothing is said of it.
    ok(root, "delete", "other")
    assert "other.patch no longer" not in run_cli(root, "overlays").err


def test_a_hand_edit_of_a_fixs_own_line_while_a_rebase_is_stopped_is_hinted_to_edit(stack,
                                                                                    tmp_path):
    """The overlay of a one-line fix edited where the fix put its line while a rebase is
    stopped: the write-out's way on, followed as printed (moved aside, `--continue`, `import
    overlay FILE`), ended in "lacks the changes that all-b.patch make" and the hint to make
    the change on the file `patchforge overlays` writes, as if the file had been made from
    the upstream's. It was made from the overlay before the rebase: the import names the fix's
    line and `patchforge edit all-b`, which, followed, gives the file as it was edited."""
    import re

    root = stack
    overlay, moved = _stopped_with_overlays(root, tmp_path)
    (root / ".patchforge/work/up/a.py").write_bytes(moved.replace(b"line3 new\n",
                                                                  b"LINE3 gfx942 new\n"))
    other = root / "overlays/gfx942/up/pkg/b.py"
    edited = other.read_bytes().replace(b"y = 22\n", b"y = 23\n")
    other.write_bytes(edited)
    run = run_cli(root, "rebase", "--continue")
    assert run.rc == 2 and "overlays/gfx942/up/pkg/b.py changed since" in run.err, run.text
    aside = tmp_path / "b.py.mine"
    commands = _hinted_commands(run.err)
    for command in commands[:2]:
        _run_hinted(root, command, FILE=str(aside))
    series = tree_bytes(root / "series")
    imported = run_cli(root, *commands[2].replace("FILE", str(aside))
                       .replace("NAME", "hotfix").split()[1:], cwd=root)
    assert imported.rc == 2 and "nothing was written" in imported.err, imported.text
    assert "lines that all-b.patch put in pkg/b.py (line 2: y = 22)" in imported.err, \
        imported.err
    assert _hinted_commands(imported.err) == ["patchforge edit all-b", "patchforge refresh",
                                              "patchforge overlays"], imported.err
    assert tree_bytes(root / "series") == series
    opened = _run_hinted(root, "patchforge edit all-b")
    work = Path(re.match(r"(\S+): the files of all-b", opened.out).group(1))
    (work / "pkg/b.py").write_bytes((work / "pkg/b.py").read_bytes().replace(b"y = 22\n",
                                                                            b"y = 23\n"))
    _run_hinted(root, "patchforge refresh")
    _run_hinted(root, "patchforge overlays")
    assert other.read_bytes() == edited


def test_a_symlink_put_into_overlays_by_hand_is_never_deleted(stack):
    """A link to a tuning table and a link to a directory of the project, put into overlays/
    by hand (patchforge writes no link there: a series that makes one is refused): `overlays`
    swapped in a new tree without them, exit 0, not a word. Now it refuses, as for a file put
    there by hand, nothing written; `overlays --check` names them."""
    root = stack
    ok(root, "overlays")
    (root / "tuning.json").write_bytes(b'{"tuning": 1}\n')
    (root / "extra").mkdir()
    (root / "overlays/tuning.json").symlink_to("../tuning.json")
    (root / "overlays/extra").symlink_to("../extra")
    run = run_cli(root, "overlays")
    assert run.rc == 2 and "overlays/extra and 1 more were not written by patchforge" in \
        run.err, run.text
    assert (root / "overlays/tuning.json").is_symlink() and (root / "overlays/extra").is_symlink()
    check = run_cli(root, "overlays", "--check")
    assert check.rc == 1, check.text
    for rel in ("extra", "tuning.json"):
        assert f"extra    {rel}: not written by patchforge" in check.out, check.out
    (root / "overlays/tuning.json").unlink()
    (root / "overlays/extra").unlink()
    ok(root, "overlays")


def test_the_import_a_hand_changed_overlay_is_hinted_to_runs_pasted_into_a_shell(tmp_path):
    """An overlay file whose name holds a space and a `$` (`pkg/sp ace $HOME.py`), edited by
    hand, and a file put under overlays/ by hand that the upstream does not have. `overlays`
    named `patchforge import overlay overlays/up/pkg/sp ace $HOME.py ... --path pkg/sp ace
    $HOME.py`: pasted into a shell, the words split at the space and `$HOME` expanded, and the
    import was refused; and for the new file the import was refused until `--create` was added,
    which the hint did not say. The hint's words are now shell-quoted, and name `--create`."""
    import shlex

    name = "pkg/sp ace $HOME.py"
    root, _ = git_project(tmp_path, {name: b"one\ntwo\n", "pkg/a.py": b"a\n"})
    ok(root, "new", "fix", "-m", "A fix")
    ok(root, "add", name)
    work = root / ".patchforge/work/up" / name
    work.write_bytes(b"one\nTWO\n")
    ok(root, "refresh")
    ok(root, "overlays")
    overlay = root / "overlays/up" / name
    overlay.write_bytes(b"one\nTWO\nthree\n")
    run = run_cli(root, "overlays")
    assert run.rc == 2 and "changed since patchforge wrote it" in run.err, run.text
    command = _import_hinted(run.err)
    # Run by a shell, as pasted: its words are the file and the path, whole.
    words = subprocess.run(["bash", "-c", 'printf "%s\\n" ' + command], capture_output=True,
                           text=True, check=True).stdout.splitlines()
    assert words == shlex.split(command), command
    assert f"overlays/up/{name}" in words and name in words, command
    _run_hinted(root, command, NAME="hotfix")
    assert b"+three" in (root / "series/up/hotfix.patch").read_bytes()
    ok(root, "overlays")
    assert overlay.read_bytes() == b"one\nTWO\nthree\n"
    # A file the upstream does not have, put there by hand: the hint says `--create`.
    added = root / "overlays/up/pkg/new one.py"
    added.write_bytes(b"new\n")
    run = run_cli(root, "overlays")
    assert run.rc == 2 and "was put there by hand" in run.err, run.text
    hinted = _hinted_commands(run.err)
    assert "--create" in hinted, run.err
    _run_hinted(root, _import_hinted(run.err) + " --create", NAME="added")
    ok(root, "overlays")
    assert added.read_bytes() == b"new\n"


@pytest.mark.parametrize("damage", ["twice", "series_bom", "patch_bom", "missing"])
def test_verify_refuses_a_series_that_status_and_overlays_refuse(stack, tmp_path, damage):
    """A series every other command refuses (exit 2, the series or patch file and its line)
    passed `verify --installed` as "N ok, 0 failed": verify compared the installed files with
    the manifest and never read the series. It reads it as `overlays` does now."""
    root = stack
    ok(root, "overlays")
    site = tmp_path / "site-packages"
    for rel in ("a.py", "pkg/b.py"):
        (site / rel).parent.mkdir(parents=True, exist_ok=True)
        (site / rel).write_bytes(UPSTREAM_FILES[rel])
    ok(root, "verify", "--installed", str(site))
    series = root / "series/up/series"
    where = f"{series}:"
    if damage == "twice":
        series.write_bytes(series.read_bytes() + b"fnuz.patch\n")
        where = f"{series}:4:"
    elif damage == "series_bom":
        series.write_bytes(b"\xef\xbb\xbf" + series.read_bytes())
        where = f"{series}:1:"
    elif damage == "patch_bom":
        patch = root / "series/up/all-b.patch"
        patch.write_bytes(b"\xef\xbb\xbf" + patch.read_bytes())
        where = f"{patch}:1:"
    else:
        series.write_bytes(series.read_bytes() + b"gone.patch\n")
        where = f"{series}:4:"
    status = run_cli(root, "status")
    assert status.rc == 2 and where in status.err, status.text
    for args in (("verify", "--installed", str(site)), ("verify",)):
        run = run_cli(root, *args)
        assert run.rc == 2, (args, run.text)
        assert where in run.err and "ok, 0 failed" not in run.out, (args, run.text)
