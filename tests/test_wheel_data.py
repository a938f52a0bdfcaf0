"""A wheel's NAME-VER.data/ directory, on real wheels fetched by the real pip: files under
.data/purelib and .data/platlib are the upstream's files where pip installs them (the install
root), so a fix of one is made, mounted (checked through `docker compose config`) and verified
at that path; files pip installs outside the install root (.data/scripts, headers, data) are
refused as places for a fix; an import of the earlier layout is refused with the way on."""
from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from helpers.cli import ok, run_cli
from helpers.deploy import check_mounts, compose_config
from helpers.project import add_patch_file, lock_doc, patch_bytes

ROOT = "/usr/lib/python3/site-packages"
DIST = "wheeldata_demo-1.0"
EXTRA = b"".join(b"extra%d\n" % i for i in range(1, 21))
NATIVE = b"".join(b"native%d\n" % i for i in range(1, 11))


def build_data_wheel(directory: Path, extra_files: dict[str, bytes] | None = None) -> Path:
    """A real wheel of wheeldata-demo 1.0 with a RECORD and a .data directory (purelib, platlib,
    scripts), as setuptools makes one for `py_modules` in data_files or a script."""
    files = {
        "wheeldata_demo/__init__.py": b"VALUE = 1\n",
        f"{DIST}.data/purelib/demo_extra.py": EXTRA,
        f"{DIST}.data/platlib/demo_native/mod.py": NATIVE,
        f"{DIST}.data/scripts/demo-tool": b"#!python\nprint('tool')\n",
        f"{DIST}.dist-info/METADATA": b"Metadata-Version: 2.1\nName: wheeldata-demo\n"
                                      b"Version: 1.0\n",
        f"{DIST}.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\n"
                                   b"Root-Is-Purelib: true\nTag: py3-none-any\n",
        **(extra_files or {}),
    }
    record = []
    for name, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{name},sha256={digest},{len(data)}")
    record.append(f"{DIST}.dist-info/RECORD,,")
    files[f"{DIST}.dist-info/RECORD"] = ("\n".join(record) + "\n").encode()
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{DIST}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(zipfile.ZipInfo(name, date_time=(2024, 1, 1, 0, 0, 0)), data)
    return path


@pytest.fixture
def index(tmp_path, monkeypatch):
    """A find-links directory holding the wheel, which pip downloads from (no index, a cache of
    the test's own)."""
    index = tmp_path / "index"
    build_data_wheel(index)
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(index))
    monkeypatch.setenv("PIP_DISABLE_PIP_VERSION_CHECK", "1")
    monkeypatch.setenv("PATCHFORGE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("PATCHFORGE_WHEELS", str(tmp_path / "wheels"))
    return index


def _project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    ok(None, "init", "--standalone", cwd=root)
    ok(root, "upstream", "add", "demo", "--wheel", "wheeldata-demo", "--at", "1.0",
       "--install-root", ROOT)
    return root


def _pip_install(target: Path) -> None:
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--target", str(target),
                    "wheeldata-demo==1.0"], check=True, capture_output=True)


def test_a_fix_of_a_data_purelib_module_is_mounted_where_pip_installs_it(tmp_path, index):
    root = _project(tmp_path)
    site = tmp_path / "site"
    _pip_install(site)
    assert (site / "demo_extra.py").read_bytes() == EXTRA  # where pip puts it
    assert (site / "demo_native" / "mod.py").read_bytes() == NATIVE
    # The file is named as the user sees it installed.
    ok(root, "new", "f0", "-m", "fix extra", "--file", "demo_extra.py",
       "--file", "demo_native/mod.py")
    work = root / ".patchforge" / "work" / "demo"
    (work / "demo_extra.py").write_bytes(EXTRA.replace(b"extra5\n", b"extra5 FIXED\n"))
    (work / "demo_native" / "mod.py").write_bytes(NATIVE + b"native fixed\n")
    ok(root, "refresh")
    patch = (root / "series" / "demo" / "f0.patch").read_text()
    assert "+++ b/demo_extra.py" in patch and ".data/" not in patch
    ok(root, "overlays")
    manifest = json.loads((root / "overlays" / "manifest.json").read_bytes())
    assert sorted(o["target"] for o in manifest["overlays"]) == [
        f"{ROOT}/demo_extra.py", f"{ROOT}/demo_native/mod.py"]
    # Docker Compose reads the fragment: the fix is mounted over the file pip installed.
    (root / "compose.yaml").write_text("services:\n  inference:\n    image: busybox\n")
    model = json.loads(compose_config(root, "compose.yaml", "overlays/compose.yaml").stdout)
    assert check_mounts(model, "inference", root / "overlays", None, {"demo": ROOT}) == {
        f"{ROOT}/demo_extra.py", f"{ROOT}/demo_native/mod.py"}
    for command in (["status"], ["lint"], ["overlays", "--check"], ["verify"]):
        ok(root, *command)
    # The recorded pre-images are the files pip installed, read at the mapped paths.
    ok(root, "verify", "--installed", str(site))
    # The import is deterministic: a fresh cache imports the wheel to the same commit.
    pin = lock_doc(root)["upstreams"]["demo"]["commit"]
    shutil.rmtree(os.environ["PATCHFORGE_CACHE"])
    shutil.rmtree(os.environ["PATCHFORGE_WHEELS"])
    assert json.loads(ok(root, "fetch", "--json").out)["fetched"] == [
        {"upstream": "demo", "commit": pin, "result": "imported"}]


def test_a_fix_where_pip_installs_outside_the_install_root_is_refused(tmp_path, index):
    root = _project(tmp_path)
    script = f"{DIST}.data/scripts/demo-tool"
    run = run_cli(root, "new", "f1", "-m", "fix the tool", "--file", script)
    assert run.rc == 2, run.err
    assert script in run.err and "bin/" in run.err and "install root" in run.err
    assert not (root / "series" / "demo" / "f1.patch").exists()
    # A patch brought in by hand (a colleague's commit) is refused by overlays, naming it.
    commit = lock_doc(root)["upstreams"]["demo"]["commit"]
    diff = (f"--- a/{script}\n+++ b/{script}\n@@ -1,2 +1,2 @@\n #!python\n"
            "-print('tool')\n+print('TOOL')\n").encode()
    add_patch_file(root, "demo", "tool.patch", patch_bytes("demo", commit, "fix the tool", diff))
    for command in (["overlays"], ["overlays", "--check"]):
        run = run_cli(root, *command)
        assert run.rc == 2, (command, run.err)
        assert script in run.err and "tool.patch" in run.err and "bin/" in run.err
    assert not (root / "overlays" / "demo").exists()


def test_a_wheel_installing_two_files_at_one_path_is_refused_naming_both(tmp_path, index):
    build_data_wheel(index, {"demo_extra.py": b"top level\n"})
    root = tmp_path / "proj"
    root.mkdir()
    ok(None, "init", "--standalone", cwd=root)
    lock = (root / "upstream.lock").read_bytes()
    run = run_cli(root, "upstream", "add", "demo", "--wheel", "wheeldata-demo", "--at", "1.0",
                  "--install-root", ROOT)
    assert run.rc == 2, run.err
    assert f"{DIST}.data/purelib/demo_extra.py" in run.err and "demo_extra.py and" in run.err
    assert (root / "upstream.lock").read_bytes() == lock


def test_an_import_of_the_archive_layout_is_refused_with_the_way_on(tmp_path, index,
                                                                   monkeypatch):
    from patchforge.store import imports

    # The project as an earlier patchforge pinned it: .data/purelib kept at its archive path.
    with monkeypatch.context() as earlier:
        earlier.setattr(imports, "installed_path", lambda raw, data_dirs: raw)
        root = _project(tmp_path)
    old = lock_doc(root)["upstreams"]["demo"]["commit"]
    for command in (["status"], ["lint"], ["new", "f0", "--file", "x.py"]):
        run = run_cli(root, *command)
        assert run.rc == 2, (command, run.err)
        assert f"{DIST}.data/purelib/ at its archive path" in run.err, run.err
        assert "upstream pin demo --at 1.0 --force" in run.err
    assert not (root / "series" / "demo" / "f0.patch").exists()
    # A cache without the old import (a fresh clone): re-importing gives the new layout's
    # commit, and the lock is refused saying why, not as a changed wheel.
    shutil.rmtree(os.environ["PATCHFORGE_CACHE"])
    run = run_cli(root, "fetch")
    assert run.rc == 2 and "earlier patchforge" in run.err and "--force" in run.err, run.err
    # The way on: re-pinned, the file is where pip installs it.
    ok(root, "upstream", "pin", "demo", "--at", "1.0", "--force")
    assert lock_doc(root)["upstreams"]["demo"]["commit"] != old
    ok(root, "new", "f0", "-m", "fix extra", "--file", "demo_extra.py")
    ok(root, "status")


def test_a_file_pip_installs_outside_the_install_root_is_refused_at_every_entry_point(
        tmp_path, index):
    root = _project(tmp_path)
    script = f"{DIST}.data/scripts/demo-tool"
    work = root / ".patchforge" / "work" / "demo"

    def refused(*command: str) -> str:
        run = run_cli(root, *command)
        assert run.rc == 2, (command, run.err)
        assert script in run.err and "bin/" in run.err and "install root" in run.err, run.err
        return run.err

    # `add` into an open edit, and `edit --file`, refuse it as `new --file` does.
    ok(root, "new", "f0", "-m", "fix init", "--file", "wheeldata_demo/__init__.py")
    refused("add", script)
    assert not (work / script).exists()
    (work / "wheeldata_demo" / "__init__.py").write_bytes(b"VALUE = 2\n")
    ok(root, "refresh")
    refused("edit", "f0", "--file", script)
    assert not work.exists()
    # A fix carrying it, copied in by hand: status and lint say it, with the way on.
    commit = lock_doc(root)["upstreams"]["demo"]["commit"]
    diff = (f"diff --git a/{script} b/{script}\n--- a/{script}\n+++ b/{script}\n"
            "@@ -1,2 +1,2 @@\n #!python\n-print('tool')\n+print('TOOL')\n").encode()
    add_patch_file(root, "demo", "tool.patch", patch_bytes("demo", commit, "fix the tool", diff))
    status = run_cli(root, "status", "--json")
    assert status.rc == 1, status.err
    row = next(p for p in json.loads(status.out)["patches"] if p["name"] == "tool.patch")
    assert row["needs_attention"] and any(script in e and "bin/" in e and "patchforge edit tool"
                                          in e for e in row["evidence"]), row
    lint = run_cli(root, "lint", "--json")
    assert lint.rc == 1
    found = [f for f in json.loads(lint.out)["findings"] if f["check"] == "overlays"
             and script in f["message"]]
    assert found and found[0]["severity"] == "error", lint.out
    # `refresh` of its edit refuses to write it while it still changes the file; put back, the
    # fix's other change is written.
    ok(root, "edit", "tool", "--file", "wheeldata_demo/__init__.py")
    (work / "wheeldata_demo" / "__init__.py").write_bytes(b"VALUE = 3\n")
    before = (root / "series" / "demo" / "tool.patch").read_bytes()
    assert "checkout --" in refused("refresh")
    assert (root / "series" / "demo" / "tool.patch").read_bytes() == before
    subprocess.run(["git", "-C", str(work), "checkout", "--", script], check=True)
    ok(root, "refresh")
    assert script not in (root / "series" / "demo" / "tool.patch").read_text()
    ok(root, "lint")
    # The imports refuse it too, naming the file it came from, nothing written.
    quilt = tmp_path / "quilt"
    quilt.mkdir()
    (quilt / "tool2.patch").write_bytes(b"fix the tool again\n\n" + diff)
    (quilt / "series").write_bytes(b"tool2.patch\n")
    series = (root / "series" / "demo" / "series").read_bytes()
    err = refused("import", "quilt", str(quilt), "--upstream", "demo")
    assert f"{quilt / 'tool2.patch'}:3" in err, err
    overlay = tmp_path / "demo-tool"
    overlay.write_bytes(b"#!python\nprint('TOOL')\n")
    refused("import", "overlay", str(overlay), "--upstream", "demo", "--path", script,
            "--name", "tool3")
    assert (root / "series" / "demo" / "series").read_bytes() == series
    assert not (root / "series" / "demo" / "tool2.patch").exists()
    assert not (root / "series" / "demo" / "tool3.patch").exists()
