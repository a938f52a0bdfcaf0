"""Regressions found in use, each with the scenario that showed it."""
from __future__ import annotations

from helpers.cli import run_subprocess
from helpers.git import git
from helpers.upstream import build_wheel


def test_status_on_a_fresh_cache_fetches_blobs_of_a_git_upstream(tmp_path, make_git_repo,
                                                                 monkeypatch):
    """A blob-less fetch followed by reads in the same process: the reader started before the
    promisor remote existed must not report the upstream's files as absent ("obsolete")."""
    upstream, _ = make_git_repo({"calc.py": b"a = 1\nb = 2\nc = 3\n"})
    project = tmp_path / "proj"
    assert run_subprocess(project, "init", str(project)).returncode == 0
    added = run_subprocess(project, "upstream", "add", "up", "--git", str(upstream), "--at", "main")
    assert added.returncode == 0, added.stderr
    overlay = tmp_path / "calc.py"
    overlay.write_bytes(b"a = 1\nb = 22\nc = 3\n")
    imported = run_subprocess(project, "import", "overlay", str(overlay), "--upstream", "up", "--path",
                   "calc.py", "--name", "fix")
    assert imported.returncode == 0, imported.stderr
    monkeypatch.setenv("PATCHFORGE_CACHE", str(tmp_path / "fresh-cache"))
    status = run_subprocess(project, "status")
    assert status.returncode == 0, status.stdout + status.stderr
    assert b"applies" in status.stdout and b"obsolete" not in status.stdout


def _project_and_nightly_image(tmp_path, make_git_repo, registry_server, labels: dict):
    """A project with one fix on a git upstream's first commit, and a nightly image in the
    registry whose labels name the second (and `labels`): (project, second, image ref, pushed)."""
    upstream, first = make_git_repo({"calc.py": b"a = 1\nb = 2\nc = 3\n"})
    (upstream / "other.py").write_bytes(b"x = 1\n")
    git(upstream, "add", "-A")
    git(upstream, "commit", "-q", "-m", "second")
    second = git(upstream, "rev-parse", "HEAD").strip()
    pushed = registry_server.push_image("vllm/vllm-openai-rocm", "nightly-test",
                                        {"org.opencontainers.image.revision": second, **labels})
    project = tmp_path / "proj"
    assert run_subprocess(project, "init", str(project)).returncode == 0
    assert run_subprocess(project, "upstream", "add", "up", "--git", str(upstream), "--at",
                          first).returncode == 0
    overlay = tmp_path / "calc.py"
    overlay.write_bytes(b"a = 1\nb = 22\nc = 3\n")
    assert run_subprocess(project, "import", "overlay", str(overlay), "--upstream", "up",
                          "--path", "calc.py", "--name", "fix").returncode == 0
    return project, second, f"{registry_server.host}/vllm/vllm-openai-rocm:nightly-test", pushed


def test_rebase_to_an_image_pins_the_image_digest_in_the_lock(tmp_path, make_git_repo,
                                                               registry_server):
    """`rebase --to registry/repo:tag`: the image's labels name the upstream commit, and the lock
    records the image by digest (seed 000: a nightly pinned by tag and digest)."""
    import json

    project, second, ref, pushed = _project_and_nightly_image(tmp_path, make_git_repo,
                                                             registry_server, {})
    moved = run_subprocess(project, "rebase", "--to", f"up={ref}")
    assert moved.returncode == 0, moved.stdout + moved.stderr
    lock = json.loads((project / "upstream.lock").read_text())
    assert lock["upstreams"]["up"]["commit"] == second
    assert lock["image"] == {"reference": ref, "tag": "nightly-test", "digest": pushed["digest"]}


def test_upstream_pin_of_an_image_of_the_pinned_commit_records_the_image(
        tmp_path, make_git_repo, registry_server):
    """`upstream pin up --at REPO:TAG` naming an image of the commit already pinned, in a
    project with a fix: refused as "moving it is a rebase", where nothing moves. Pinned now,
    the lock recording the image by digest, the fix as it was; an image of another commit is
    still refused, saying which commit it names, nothing written."""
    import json

    project, second, ref, pushed = _project_and_nightly_image(tmp_path, make_git_repo,
                                                             registry_server, {})
    lock_path = project / "upstream.lock"
    before = lock_path.read_bytes()
    refused = run_subprocess(project, "upstream", "pin", "up", "--at", ref)
    assert refused.returncode == 2, refused.stdout + refused.stderr
    said = b" ".join(refused.stderr.split())
    assert f"{ref} is {second[:12]}: moving it there is a rebase".encode() in said, said
    assert lock_path.read_bytes() == before
    moved = run_subprocess(project, "rebase", "--to", f"up={second}")
    assert moved.returncode == 0, moved.stdout + moved.stderr
    assert "image" not in json.loads(lock_path.read_text())
    patch = (project / "series" / "up" / "fix.patch").read_bytes()
    pinned = run_subprocess(project, "upstream", "pin", "up", "--at", ref)
    assert pinned.returncode == 0, pinned.stdout + pinned.stderr
    lock = json.loads(lock_path.read_text())
    assert lock["upstreams"]["up"]["commit"] == second
    assert lock["image"] == {"reference": ref, "tag": "nightly-test", "digest": pushed["digest"]}
    assert (project / "series" / "up" / "fix.patch").read_bytes() == patch
    status = run_subprocess(project, "status")
    assert status.returncode == 0, status.stdout + status.stderr


def test_wheel_upstream_moves_to_the_version_an_image_names(tmp_path, monkeypatch,
                                                             registry_server):
    """A wheel upstream and an image reference: the image's `<name>.version` label names the
    release, whose wheel is imported; the lock pins both the wheel and the image digest."""
    import json
    wheels = tmp_path / "wheels"
    build_wheel(wheels, "tinypkg", "1.0", {"tinypkg/calc.py": b"a = 1\nb = 2\nc = 3\n"})
    build_wheel(wheels, "tinypkg", "1.1", {"tinypkg/calc.py": b"# 1.1\na = 1\nb = 2\nc = 3\n"})
    monkeypatch.setenv("PATCHFORGE_WHEELS", str(wheels))
    pushed = registry_server.push_image("org/tiny", "release", {"tiny.version": "1.1"})
    project = tmp_path / "proj"
    assert run_subprocess(project, "init", str(project)).returncode == 0
    added = run_subprocess(project, "upstream", "add", "tiny", "--wheel", "tinypkg", "--at", "1.0")
    assert added.returncode == 0, added.stderr
    overlay = tmp_path / "calc.py"
    overlay.write_bytes(b"a = 1\nb = 22\nc = 3\n")
    assert run_subprocess(project, "import", "overlay", str(overlay), "--upstream", "tiny", "--path",
               "tinypkg/calc.py", "--name", "fix").returncode == 0
    ref = f"{registry_server.host}/org/tiny:release"
    moved = run_subprocess(project, "rebase", "--to", ref)
    assert moved.returncode == 0, moved.stdout + moved.stderr
    lock = json.loads((project / "upstream.lock").read_text())
    assert lock["upstreams"]["tiny"]["version"] == "1.1"
    assert lock["upstreams"]["tiny"]["source"]["filename"] == "tinypkg-1.1-py3-none-any.whl"
    assert lock["image"]["digest"] == pushed["digest"]
    assert b"b = 22" in (project / "series" / "tiny" / "fix.patch").read_bytes()


def test_a_record_sent_while_another_thread_imports_logging_is_dropped(monkeypatch):
    """A worker thread (a forge lookup's) importing a library that imports `logging` puts the
    module in sys.modules before its body has run; a record sent meanwhile from another thread
    failed with "partially initialized module 'logging' has no attribute 'getLogger'" (an
    internal error, exit 70, of `status --against` with forwarded pull requests). Nothing can
    have configured a handler before `logging` is loaded: the record is dropped."""
    import sys
    import types

    from patchforge import logs

    half = types.ModuleType("logging")
    half.__spec__ = types.SimpleNamespace(_initializing=True)
    monkeypatch.setitem(sys.modules, "logging", half)
    logs.debug("patchforge.test", "a record during the import: %s", "dropped")
    logs.info("patchforge.test", "and another")


def test_an_image_version_label_taken_for_another_upstreams_is_said_so(tmp_path, monkeypatch,
                                                                       registry_server):
    """Two wheel upstreams and an image built for the first (its own version in
    `org.opencontainers.image.version`, no label for the second's): `status --against
    small=IMAGE` took the first's version for the second's and said only that pip found no
    such version, "check the name". The hint now says which label the version came from,
    and the two ways on."""
    wheels = tmp_path / "wheels"
    build_wheel(wheels, "bigpkg", "2.0", {"bigpkg/a.py": b"a = 1\n"})
    build_wheel(wheels, "smallpkg", "0.1", {"smallpkg/b.py": b"b = 1\n"})
    monkeypatch.setenv("PATCHFORGE_WHEELS", str(wheels))
    monkeypatch.setenv("PIP_NO_INDEX", "1")  # smallpkg 2.0 is nowhere: no index to wait on
    registry_server.push_image("org/big", "nightly", {"org.opencontainers.image.version": "2.0"})
    project = tmp_path / "proj"
    run_subprocess(project, "init", str(project), expect=0)
    run_subprocess(project, "upstream", "add", "big", "--wheel", "bigpkg", "--at", "2.0", expect=0)
    run_subprocess(project, "upstream", "add", "small", "--wheel", "smallpkg", "--at", "0.1",
                   expect=0)
    said = run_subprocess(project, "status", "--against",
                          f"small={registry_server.host}/org/big:nightly", expect=2)
    err = said.stderr.decode()
    assert "2.0 is the image's org.opencontainers.image.version label, taken as small's " \
        "version since the image has no small.version label" in err, err
    assert "`small=VERSION`" in err and "label the image small.version" in err, err
    ok = run_subprocess(project, "status", "--against",
                        f"big={registry_server.host}/org/big:nightly", expect=0)
    assert b"big: target 2.0" in ok.stdout, ok.stdout


def test_an_image_label_the_lock_cannot_hold_never_reaches_it(tmp_path, make_git_repo,
                                                              registry_server):
    """An image whose version label holds an escape sequence (a registry is input like a
    pull request): the rebase to it pinned that version, then could not read the lock it had
    just written (a control character), and stopped half way through its write-out, every
    later command refusing the lock. The label now names no version, the attempt is said with
    the value escaped, and the rebase completes with a lock the next command reads."""
    import json

    project, second, ref, _ = _project_and_nightly_image(
        tmp_path, make_git_repo, registry_server,
        {"org.opencontainers.image.version": "1.0\x1b]0;pwned\x07"})
    moved = run_subprocess(project, "rebase", "--to", f"up={ref}")
    assert moved.returncode == 0, moved.stdout + moved.stderr
    assert b"\x1b" not in moved.stdout + moved.stderr
    lock = json.loads((project / "upstream.lock").read_text())
    assert lock["upstreams"]["up"]["commit"] == second and "version" not in lock["upstreams"]["up"]
    assert not (project / ".patchforge" / "rebase" / "journal.json").exists()
    status = run_subprocess(project, "status")
    assert status.returncode == 0, status.stdout + status.stderr


def test_commands_on_a_cache_without_the_pin_never_take_its_files_for_absent(tmp_path,
                                                                             monkeypatch):
    """A clone of the stack on a machine whose cache lacks the pinned revision (no `patchforge
    fetch` yet, or a cache emptied): the store read the missing commit as a tree without files.
    `import overlay` of a fix to calc.py said "calc.py does not exist" (and with `--create`
    would have made a patch creating a file the upstream has), `move` moved and warned that
    every patch "does not apply in the new order" (exit 1). Now the pin is brought in first,
    as `overlays` and `status` do; offline, where it cannot be, the command says so (exit 2)
    instead of answering."""
    from helpers.cli import run_cli
    from helpers.project import OneUpstreamStack

    calc = b"".join(b"v%d = %d\n" % (i, i) for i in range(12))
    stack = OneUpstreamStack(tmp_path, {"calc.py": calc, "other.py": b"x = 1\n"})
    stack.add_fix("one", "calc.py", calc, calc.replace(b"v1 = 1\n", b"v1 = 10\n"))
    stack.add_fix("two", "other.py", b"x = 1\n", b"x = 10\n")
    overlay = tmp_path / "calc.py"
    overlay.write_bytes(calc.replace(b"v1 = 1\n", b"v1 = 10\n").replace(b"v11 = 11\n", b"v11 = 0\n"))

    monkeypatch.setenv("PATCHFORGE_CACHE", str(tmp_path / "offline-cache"))
    offline = run_cli(stack.root, "--offline", "move", "two", "--first")
    assert offline.rc == 2 and "patchforge fetch" in offline.err, offline.text
    assert stack.series("up") == ["one.patch", "two.patch"]

    monkeypatch.setenv("PATCHFORGE_CACHE", str(tmp_path / "fresh-cache"))
    moved = run_cli(stack.root, "move", "two", "--first")
    assert moved.rc == 0 and "does not apply" not in moved.err, moved.text
    assert stack.series("up") == ["two.patch", "one.patch"]

    monkeypatch.setenv("PATCHFORGE_CACHE", str(tmp_path / "another-fresh-cache"))
    imported = run_cli(stack.root, "import", "overlay", str(overlay), "--upstream", "up",
                       "--path", "calc.py", "--name", "three")
    assert imported.rc == 0, imported.text
    patch = stack.patch("up", "three")
    assert b"new file" not in patch and b"-v11 = 11\n+v11 = 0\n" in patch
